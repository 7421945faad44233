//! The one finding type every Stage 2 check reports, its kinds and its
//! severities.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How serious a finding is: the findings contract's severity, shared by
/// every kernel. `Info < Warning < Error`.
///
/// `koas check --fail-on SEVERITY` fails when a finding is at or above the
/// given level. The review's severities (of edit ops and ledger entries)
/// are the same levels under other names, and every filter and config
/// accepts both spellings:
///
/// | finding (`koas check`) | review (ledger, report, `koas grep`) |
/// |---|---|
/// | `info` | `minor` |
/// | `warning` | `attention` (and `deletion`, a removal) |
/// | `error` | `critical` |
pub use koas_kernel_api::findings::Severity;

/// The review's name of a [`Severity`].
pub trait ReviewSeverity {
    /// The edit-op severity (`minor`, `attention`, `critical`) used when a
    /// finding becomes a review note.
    fn review_severity(self) -> &'static str;
}

impl ReviewSeverity for Severity {
    fn review_severity(self) -> &'static str {
        match self {
            Severity::Info => "minor",
            Severity::Warning => "attention",
            Severity::Error => "critical",
        }
    }
}

/// What a finding is about. The JSON names are the `kind` values of the
/// findings output and of the planted-defect corpus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// Text an AI assistant left behind ("As an AI", "I hope this helps").
    AiLeftover,
    /// A paragraph that repeats an earlier one.
    DuplicateParagraph,
    /// "see Section 4.2", "§5.3", "voir 2.4" naming a section that does not exist.
    BrokenReference,
    /// A count in the prose that the next table contradicts.
    NumericContradiction,
    /// A table whose header, delimiter row and rows have different cell counts.
    TableStructure,
    /// A percentage column that does not add up to about 100 %.
    TablePercentage,
    /// French and English forms of one term mixed in one section.
    TerminologyDrift,
    /// A `[x](#anchor)` link to an anchor no heading has (in the document,
    /// or in the Markdown file a relative link points to).
    BrokenLinkAnchor,
    /// A relative link to a file or folder that does not exist next to
    /// the document (`[x](missing.md)`, `![plan](img/plan.png)`).
    BrokenLink,
    /// A heading more than one level below the previous heading.
    HeadingLevelSkip,
    /// A figure, table or equation number skipped (or out of order).
    NumberingGap,
    /// A figure, table or equation number used twice.
    NumberingDuplicate,
    /// A reference to a figure, table or equation that does not exist.
    MissingTarget,
    /// A heading marker (`##`) with no text.
    EmptyHeading,
    /// A line that reads as a heading but lost its `#` marks and joined
    /// the paragraph above it.
    GluedHeading,
    /// An image whose alt text names another figure number than the
    /// caption under it.
    CaptionMismatch,
    /// A word that neither the dictionary of its paragraph's language nor
    /// the document's or the project's vocabulary knows ("explians").
    Misspelling,
    /// The same word twice in a row ("the the", "le le").
    RepeatedWord,
    /// An article that does not fit the next word: "a" before a vowel
    /// sound, "an" before a consonant sound, a French article or
    /// preposition not elided before a vowel ("le arbre", "de une").
    Article,
    /// Words that must agree and do not ("these thing", "he have").
    Agreement,
    /// A word commonly confused with another that the sentence needs
    /// ("its" for "it's", "then" for "than").
    Confusion,
    /// French typography: the no-break space before `;` `:` `!` `?` and
    /// inside « ».
    Typography,
    /// A rule of the project's Vale styles (`Google.Passive`): the
    /// finding's [`Finding::rule`] names it, as Vale does.
    Style,
}

/// The web address of koas's repository, where its documentation is read:
/// `KOAS_REPOSITORY_URL` when the build sets it (a release builds from
/// the repository it is published from), else the workspace's
/// `repository`. Every link to the documentation starts here.
pub const REPOSITORY_URL: &str = match option_env!("KOAS_REPOSITORY_URL") {
    Some(url) => url,
    None => env!("CARGO_PKG_REPOSITORY"),
};

impl FindingKind {
    /// Every kind, in a stable order.
    pub const ALL: [FindingKind; 23] = [
        FindingKind::AiLeftover,
        FindingKind::DuplicateParagraph,
        FindingKind::BrokenReference,
        FindingKind::NumericContradiction,
        FindingKind::TableStructure,
        FindingKind::TablePercentage,
        FindingKind::TerminologyDrift,
        FindingKind::BrokenLinkAnchor,
        FindingKind::BrokenLink,
        FindingKind::HeadingLevelSkip,
        FindingKind::NumberingGap,
        FindingKind::NumberingDuplicate,
        FindingKind::MissingTarget,
        FindingKind::EmptyHeading,
        FindingKind::GluedHeading,
        FindingKind::CaptionMismatch,
        FindingKind::Misspelling,
        FindingKind::RepeatedWord,
        FindingKind::Article,
        FindingKind::Agreement,
        FindingKind::Confusion,
        FindingKind::Typography,
        FindingKind::Style,
    ];

    /// The kinds of the language checks (spelling, grammar, typography,
    /// and the project's Vale styles, which read the same prose).
    pub const LANGUAGE: [FindingKind; 7] = [
        FindingKind::Misspelling,
        FindingKind::RepeatedWord,
        FindingKind::Article,
        FindingKind::Agreement,
        FindingKind::Confusion,
        FindingKind::Typography,
        FindingKind::Style,
    ];

    /// Where this kind is explained: its row of `docs/check.md` (anchored
    /// by its name) in the repository at `base` ([`REPOSITORY_URL`], or
    /// an editor's own setting).
    pub fn doc_url(self, base: &str) -> String {
        format!(
            "{}/blob/main/docs/check.md#{}",
            base.trim_end_matches('/'),
            self.as_str()
        )
    }

    /// The snake_case name used in JSON, config files and suppression
    /// comments.
    pub fn as_str(self) -> &'static str {
        match self {
            FindingKind::AiLeftover => "ai_leftover",
            FindingKind::DuplicateParagraph => "duplicate_paragraph",
            FindingKind::BrokenReference => "broken_reference",
            FindingKind::NumericContradiction => "numeric_contradiction",
            FindingKind::TableStructure => "table_structure",
            FindingKind::TablePercentage => "table_percentage",
            FindingKind::TerminologyDrift => "terminology_drift",
            FindingKind::BrokenLinkAnchor => "broken_link_anchor",
            FindingKind::BrokenLink => "broken_link",
            FindingKind::HeadingLevelSkip => "heading_level_skip",
            FindingKind::NumberingGap => "numbering_gap",
            FindingKind::NumberingDuplicate => "numbering_duplicate",
            FindingKind::MissingTarget => "missing_target",
            FindingKind::EmptyHeading => "empty_heading",
            FindingKind::GluedHeading => "glued_heading",
            FindingKind::CaptionMismatch => "caption_mismatch",
            FindingKind::Misspelling => "misspelling",
            FindingKind::RepeatedWord => "repeated_word",
            FindingKind::Article => "article",
            FindingKind::Agreement => "agreement",
            FindingKind::Confusion => "confusion",
            FindingKind::Typography => "typography",
            FindingKind::Style => "style",
        }
    }

    /// The severity a finding of this kind gets unless the project config
    /// overrides it.
    pub fn default_severity(self) -> Severity {
        match self {
            // Grammar rules beyond the certain ones and French typography
            // are hints: `--fail-on warning` in CI stays quiet about them.
            FindingKind::TerminologyDrift
            | FindingKind::Agreement
            | FindingKind::Confusion
            | FindingKind::Typography => Severity::Info,
            // A style rule's finding takes its rule's level instead.
            FindingKind::Misspelling
            | FindingKind::RepeatedWord
            | FindingKind::Article
            | FindingKind::Style => Severity::Warning,
            FindingKind::AiLeftover
            | FindingKind::DuplicateParagraph
            | FindingKind::NumericContradiction
            | FindingKind::TablePercentage
            | FindingKind::HeadingLevelSkip
            | FindingKind::NumberingGap
            | FindingKind::EmptyHeading
            | FindingKind::GluedHeading => Severity::Warning,
            FindingKind::CaptionMismatch
            | FindingKind::BrokenReference
            | FindingKind::TableStructure
            | FindingKind::BrokenLinkAnchor
            | FindingKind::BrokenLink
            | FindingKind::NumberingDuplicate
            | FindingKind::MissingTarget => Severity::Error,
        }
    }

    /// A one-line description for people (used as the SARIF rule text).
    pub fn description(self) -> &'static str {
        match self {
            FindingKind::AiLeftover => "Text left behind by an AI assistant",
            FindingKind::DuplicateParagraph => "Paragraph repeated word for word",
            FindingKind::BrokenReference => "Cross-reference to a section that does not exist",
            FindingKind::NumericContradiction => {
                "Count in the text contradicted by the table, list or enumeration it announces"
            }
            FindingKind::TableStructure => "Table rows with different numbers of cells",
            FindingKind::TablePercentage => "Percentage column that does not add up to 100 %",
            FindingKind::TerminologyDrift => {
                "French and English forms of a term mixed in a section"
            }
            FindingKind::BrokenLinkAnchor => "Link to an anchor that no heading defines",
            FindingKind::BrokenLink => "Relative link to a file or folder that does not exist",
            FindingKind::HeadingLevelSkip => "Heading level skipped",
            FindingKind::NumberingGap => "Figure, table, equation or heading number skipped",
            FindingKind::NumberingDuplicate => {
                "Figure, table, equation or heading number used twice"
            }
            FindingKind::MissingTarget => {
                "Reference to a figure, table, equation or numbered heading that does not exist"
            }
            FindingKind::EmptyHeading => "Heading without text",
            FindingKind::GluedHeading => "Heading that lost its # marks and joined a paragraph",
            FindingKind::CaptionMismatch => "Image alt text and caption give different numbers",
            FindingKind::Misspelling => "Word the dictionary and the project's words do not know",
            FindingKind::RepeatedWord => "Same word twice in a row",
            FindingKind::Article => {
                "Article that does not fit the next word (a/an, French elision)"
            }
            FindingKind::Agreement => "Words that do not agree in number or person",
            FindingKind::Confusion => "Word commonly confused with the one the sentence needs",
            FindingKind::Typography => {
                "French typography: no-break space before ; : ! ? and inside « »"
            }
            FindingKind::Style => "A rule of the project's Vale styles",
        }
    }

    /// The kind a certain fix of this finding is recorded under as a
    /// review change (the edit ops' `kind`): `typo` for a misspelled or
    /// repeated word, `grammar` for the other language rules, `spacing`
    /// for typography, the finding kind's own name otherwise.
    pub fn change_kind(self) -> &'static str {
        match self {
            FindingKind::Misspelling | FindingKind::RepeatedWord => "typo",
            FindingKind::Article | FindingKind::Agreement | FindingKind::Confusion => "grammar",
            FindingKind::Typography => "spacing",
            other => other.as_str(),
        }
    }

    /// `true` for the kinds of the language checks.
    pub fn is_language(self) -> bool {
        Self::LANGUAGE.contains(&self)
    }
}

impl fmt::Display for FindingKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for FindingKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FindingKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s.trim())
            .ok_or_else(|| {
                let names: Vec<&str> = FindingKind::ALL.iter().map(|k| k.as_str()).collect();
                format!(
                    "unknown finding kind {s:?} (known kinds: {})",
                    names.join(", ")
                )
            })
    }
}

/// One line of a [`Fix`]: the line as it is and what it becomes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixEdit {
    /// The line (1-based) in the document the finding was made on.
    pub line: u32,
    /// Its text as the finding saw it (no line ending); a fix whose
    /// `before` no longer matches is not applied.
    pub before: String,
    /// Its new text (no line ending), or `None` to remove the line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

/// A correction that certainly resolves a finding (`koas check --fix`):
/// whole-line edits, in line order, on distinct lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fix {
    /// What the fix does, in a few words ("link to #retry-policy").
    pub description: String,
    /// The lines it changes or removes.
    pub edits: Vec<FixEdit>,
}

fn first_column() -> u32 {
    1
}

/// One problem found in a document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// What the problem is.
    pub kind: FindingKind,
    /// First line of the problem (1-based).
    pub line: u32,
    /// Column of `line` where the problem starts (1-based, counted in
    /// characters); 1 when the whole line is meant.
    #[serde(default = "first_column")]
    pub column: u32,
    /// Last line of the problem (inclusive; equal to `line` for one line).
    pub line_end: u32,
    /// How serious it is.
    pub severity: Severity,
    /// What is wrong, in plain words a person can act on without knowing
    /// the check.
    pub message: String,
    /// The text that shows the problem (trimmed, at most a line or so).
    pub evidence: String,
    /// The kernel that reports it (`md_consistency_scan` or
    /// `md_numbering_control`).
    pub kernel: String,
    /// The section holding `line`, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section_id: Option<String>,
    /// The anchor of that section.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor: Option<String>,
    /// The chunk owning `line`, when a chunk plan was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_id: Option<String>,
    /// The correction, when one is certain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<Fix>,
    /// The rule of a [`FindingKind::Style`] finding, as Vale names it
    /// (`Google.Passive`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The page that explains the rule, when its style gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// The column just past the problem on `line` (1-based, in
    /// characters), when the problem is a span of that line (a word).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column_end: Option<u32>,
    /// Replacements for the span `column..column_end`, best first (a
    /// misspelling's candidate words); empty when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suggestions: Vec<String>,
}

/// The longest evidence kept, in characters.
pub const MAX_EVIDENCE_CHARS: usize = 160;

impl Finding {
    /// A finding with the kind's default severity and no location context.
    pub fn new(
        kind: FindingKind,
        kernel: &str,
        line: u32,
        line_end: u32,
        message: impl Into<String>,
        evidence: &str,
    ) -> Self {
        Finding {
            kind,
            line,
            column: 1,
            line_end: line_end.max(line),
            severity: kind.default_severity(),
            message: message.into(),
            evidence: clip_evidence(evidence),
            kernel: kernel.to_string(),
            section_id: None,
            anchor: None,
            chunk_id: None,
            fix: None,
            rule: None,
            link: None,
            column_end: None,
            suggestions: Vec::new(),
        }
    }

    /// The same finding about the style rule `rule` (`Style.Rule`), with
    /// the page that explains it.
    pub fn of_rule(mut self, rule: impl Into<String>, link: Option<String>) -> Self {
        self.rule = Some(rule.into());
        self.link = link;
        self
    }

    /// The name people see and configure: a style rule's own
    /// (`Google.Passive`), else the kind's (`ai_leftover`).
    pub fn kind_name(&self) -> &str {
        self.rule.as_deref().unwrap_or(self.kind.as_str())
    }

    /// The same finding about the span `column..column_end` of its line
    /// (1-based character columns, `column_end` just past the span).
    pub fn at_span(mut self, column: u32, column_end: u32) -> Self {
        self.column = column.max(1);
        self.column_end = Some(column_end.max(self.column));
        self
    }

    /// The same finding with replacements for its span, best first.
    pub fn with_suggestions(mut self, suggestions: Vec<String>) -> Self {
        self.suggestions = suggestions;
        self
    }

    /// The same finding starting at `column` (1-based, in characters).
    pub fn at_column(mut self, column: u32) -> Self {
        self.column = column.max(1);
        self
    }

    /// The same finding with a certain correction.
    pub fn with_fix(mut self, fix: Fix) -> Self {
        self.fix = Some(fix);
        self
    }

    /// The order findings are listed in: as they come in the text (by
    /// line, then column), then the one that ends first, then by kind and
    /// message.
    pub fn sort_key(&self) -> (u32, u32, u32, FindingKind, &str) {
        (
            self.line,
            self.column,
            self.line_end,
            self.kind,
            self.message.as_str(),
        )
    }
}

/// Trims `text` and cuts it to [`MAX_EVIDENCE_CHARS`] characters, ending
/// with `…` when cut.
pub fn clip_evidence(text: &str) -> String {
    let t = text.trim();
    if t.chars().count() <= MAX_EVIDENCE_CHARS {
        return t.to_string();
    }
    let mut cut: String = t.chars().take(MAX_EVIDENCE_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// Sorts findings into their listing order and drops exact repeats.
pub fn sort_findings(findings: &mut Vec<Finding>) {
    findings.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    findings.dedup();
}

/// The JSON shape of the `issues` and `numbering_findings` artifacts.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FindingsArtifact {
    /// `sha256:` of the document.
    pub doc_hash: String,
    /// The kernel that produced it.
    pub kernel: String,
    /// Number of findings.
    pub finding_count: usize,
    /// Number of findings per kind.
    pub by_kind: std::collections::BTreeMap<String, usize>,
    /// The findings, sorted by line.
    pub findings: Vec<Finding>,
}

impl FindingsArtifact {
    /// Wraps sorted findings.
    pub fn new(doc_hash: &str, kernel: &str, findings: Vec<Finding>) -> Self {
        let mut by_kind = std::collections::BTreeMap::new();
        for f in &findings {
            *by_kind.entry(f.kind.as_str().to_string()).or_insert(0) += 1;
        }
        FindingsArtifact {
            doc_hash: doc_hash.to_string(),
            kernel: kernel.to_string(),
            finding_count: findings.len(),
            by_kind,
            findings,
        }
    }

    /// A one-line summary: `3 findings: 2 ai_leftover, 1 table_structure`.
    pub fn summary(&self) -> String {
        if self.findings.is_empty() {
            return "no findings".to_string();
        }
        let parts: Vec<String> = self
            .by_kind
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect();
        let noun = if self.finding_count == 1 {
            "finding"
        } else {
            "findings"
        };
        format!("{} {noun}: {}", self.finding_count, parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn severities_are_ordered_and_parse() {
        assert!(Severity::Info < Severity::Warning && Severity::Warning < Severity::Error);
        assert_eq!("WARNING".parse::<Severity>(), Ok(Severity::Warning));
        assert!("fatal".parse::<Severity>().is_err());
        assert_eq!(Severity::Error.review_severity(), "critical");
    }

    #[test]
    fn kinds_round_trip_through_json_and_text() {
        for kind in FindingKind::ALL {
            let json = serde_json::to_string(&kind).expect("serializes");
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
            assert_eq!(kind.as_str().parse::<FindingKind>(), Ok(kind));
        }
        let err = "ai_leftovers".parse::<FindingKind>().expect_err("unknown");
        assert!(err.contains("ai_leftover"), "{err}");
    }

    #[test]
    fn evidence_is_trimmed_and_clipped() {
        assert_eq!(clip_evidence("  x  "), "x");
        let long = "é".repeat(400);
        let clipped = clip_evidence(&long);
        assert_eq!(clipped.chars().count(), MAX_EVIDENCE_CHARS);
        assert!(clipped.ends_with('…'));
    }

    #[test]
    fn finding_json_has_the_documented_fields() {
        let f = Finding::new(
            FindingKind::AiLeftover,
            "md_consistency_scan",
            3,
            1,
            "m",
            "e",
        );
        let v = serde_json::to_value(&f).expect("serializes");
        for key in [
            "kind", "line", "line_end", "severity", "message", "evidence", "kernel",
        ] {
            assert!(v.get(key).is_some(), "missing {key}");
        }
        assert_eq!(v["line_end"], 3, "line_end is never before line");
        assert!(v.get("chunk_id").is_none());
    }
}

/// A finding as any kernel may report it: the findings contract of the
/// kernel API, with a free `kind` (a third-party kernel has its own kinds).
/// A kernel declares the output that carries them
/// (`KernelSpec::findings_output`); `koas check` and the review report show
/// them, named by kernel.
pub use koas_kernel_api::findings::KernelFinding;

/// The findings one kernel of a pipeline reported in one output artifact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelFindings {
    /// The kernel that produced them.
    pub kernel: String,
    /// The output artifact they were read from.
    pub artifact: String,
    /// The findings, sorted by line.
    pub findings: Vec<KernelFinding>,
}

/// Reads a kernel's output as a findings artifact: `None` when it does not
/// have the shape (an object with a `findings` array and a `kernel`
/// string — every other artifact), `Some(Err)` naming the first finding
/// that does not parse, else its findings sorted by line. The built-in
/// `issues` and `numbering_findings` artifacts have this shape too.
pub fn read_findings_artifact(
    value: &serde_json::Value,
) -> Option<Result<Vec<KernelFinding>, String>> {
    let object = value.as_object()?;
    object.get("findings")?.as_array()?;
    object.get("kernel")?.as_str()?;
    let mut out = match koas_kernel_api::findings::check_shape(value) {
        Ok(artifact) => artifact.findings,
        Err(e) => return Some(Err(e)),
    };
    out.sort_by(|a, b| {
        (a.line, a.column, &a.kind, &a.message).cmp(&(b.line, b.column, &b.kind, &b.message))
    });
    Some(Ok(out))
}

#[cfg(test)]
mod kernel_findings_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_findings_artifact_is_recognised_by_its_shape() {
        let v = json!({"kernel": "spell", "findings": [
            {"kind": "spelling", "line": 4, "severity": "attention", "message": "`teh`: did you mean `the`?"},
            {"kind": "spelling", "line": 2, "column": 7, "severity": "info", "message": "x", "evidence": "teh"}
        ]});
        let found = read_findings_artifact(&v)
            .expect("recognised")
            .expect("valid");
        assert_eq!(found.len(), 2);
        assert_eq!((found[0].line, found[0].column), (2, 7));
        assert_eq!(found[1].severity, Severity::Warning);
        assert_eq!(found[1].column, 1);
        // The built-in artifact has the shape too.
        let builtin = FindingsArtifact::new("sha256:x", "md_consistency_scan", Vec::new());
        let v = serde_json::to_value(&builtin).expect("json");
        assert_eq!(read_findings_artifact(&v), Some(Ok(Vec::new())));
        // Anything else is not a findings artifact.
        for other in [
            json!(3),
            json!({"findings": 2, "kernel": "k"}),
            json!({"findings": []}),
            json!("text"),
        ] {
            assert_eq!(read_findings_artifact(&other), None, "{other}");
        }
    }

    #[test]
    fn a_broken_finding_is_named() {
        let v = json!({"kernel": "k", "findings": [{"kind": "a", "line": 1, "severity": "fatal", "message": "m"}]});
        let err = read_findings_artifact(&v)
            .expect("recognised")
            .expect_err("invalid");
        assert!(
            err.starts_with("findings[0].severity:") && err.contains("fatal"),
            "{err}"
        );
        let v = json!({"kernel": "k", "findings": [{"kind": "a", "line": 0, "severity": "info", "message": "m"}]});
        assert!(read_findings_artifact(&v).expect("recognised").is_err());
    }
}
