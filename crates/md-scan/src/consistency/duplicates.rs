//! Duplicated paragraphs: a paragraph whose text, whitespace normalised,
//! repeats an earlier paragraph's. Reported at the repeat.
//!
//! Not compared: list items (changelogs and checklists repeat items on
//! purpose), paragraphs under `duplicate_min_chars`, and paragraphs made
//! mostly of code spans (API references repeat `Returns: {...}`).
//!
//! Not reported, because the repetition is deliberate: a text that occurs
//! `duplicate_boilerplate_repeats` times or more (release notes repeat
//! "Note: this release has been yanked." under every version), and a short
//! paragraph (under `duplicate_short_chars`) repeated under another heading.
//! Nor, under another heading: a one-sentence normative statement
//! restated per component ("The SDK MUST …" under each SDK), a note
//! repeated on purpose (a block quote, or a paragraph opening with "Note",
//! "Status", "Remarque" …). And anywhere: a lead-in ending with `:` whose
//! lists, tables or code differ (an erratum layout repeats "… est
//! remplacée par :" before each new text).
//! A repeat inside one section, next to its twin, or within a block of
//! paragraphs repeated together, is a copy-paste slip: a warning. A longer
//! paragraph repeated alone in another section is often deliberate (a
//! specification restates a requirement a thousand lines later; revision
//! notes list one change under two criteria): it is reported as info.

use super::KERNEL;
use crate::config::ScanConfig;
use crate::document::Document;
use crate::gate::{Gated, Needles};
use crate::markdown::MarkdownFacts;
use koas_review_schema::findings::{Finding, FindingKind};
use std::collections::HashMap;
use std::sync::LazyLock;

/// A normative keyword (RFC 2119 words, French "doit").
static NORMATIVE: LazyLock<Gated> = LazyLock::new(|| {
    Gated::new(
        r"(?i)\b(?:must|shall|should|required|recommended|may not|doit|doivent|devra|devront|obligatoire)\b",
        Needles::new(&[
            "must",
            "shall",
            "should",
            "required",
            "recommended",
            "may not",
            "doi",
            "devr",
            "obligatoire",
        ]),
    )
});

/// A note label opening a paragraph.
static NOTE: LazyLock<Gated> = LazyLock::new(|| {
    Gated::new(
        r"(?i)^[\s>*_]*(?:\[!\w+\]|note|nota|nb|n\.b\.|status|statut|warning|caution|important|attention|remarque|avertissement|tip|info)\b",
        Needles::new(&[
            "[!",
            "not",
            "nb",
            "n.b.",
            "stat",
            "warning",
            "caution",
            "important",
            "attention",
            "remarque",
            "avertissement",
            "tip",
            "info",
        ]),
    )
});

/// `true` for one sentence: no sentence end before its last character.
fn one_sentence(text: &str) -> bool {
    let t = text.trim_end_matches(['.', '!', '?', ' ']);
    !t.contains(". ") && !t.contains("! ") && !t.contains("? ")
}

/// The raw lines of the block after `line_end` (from the next non-blank
/// line to the next blank line), trimmed.
fn next_block<'a>(doc: &Document<'a>, line_end: u32) -> Vec<&'a str> {
    let n = doc.line_count();
    let mut l = line_end + 1;
    while l <= n && doc.index.is_blank(l) {
        l += 1;
    }
    let mut block = Vec::new();
    while l <= n && !doc.index.is_blank(l) && block.len() < 200 {
        block.push(doc.line(l).trim());
        l += 1;
    }
    block
}

/// The raw lines of the block before `line_start` (from the previous
/// non-blank line back to the blank line before it), trimmed.
fn previous_block<'a>(doc: &Document<'a>, line_start: u32) -> Vec<&'a str> {
    let mut l = line_start.saturating_sub(1);
    while l >= 1 && doc.index.is_blank(l) {
        l -= 1;
    }
    let mut block = Vec::new();
    while l >= 1 && !doc.index.is_blank(l) && block.len() < 200 {
        block.push(doc.line(l).trim());
        l -= 1;
    }
    block
}

/// The label a paragraph opens with, as a field of a repeated entry does
/// ("Blocking layer recommendation: …"): up to five words before a colon.
fn field_label(text: &str) -> Option<&str> {
    let (label, _) = text.split_once(':')?;
    let words = label.split_whitespace().count();
    ((1..=5).contains(&words) && !label.contains(['.', '(', '`'])).then_some(label.trim())
}

/// Collapses every run of whitespace to one space and trims.
pub fn normalize_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// One compared paragraph.
struct Candidate {
    key: String,
    line_start: u32,
    line_end: u32,
}

/// Reports every paragraph that repeats an earlier one.
pub fn detect(
    doc: &Document<'_>,
    facts: &MarkdownFacts,
    config: &ScanConfig,
    out: &mut Vec<Finding>,
) {
    let candidates = candidates_of(doc, facts, config);
    let mut occurrences: HashMap<&str, usize> = HashMap::new();
    for c in &candidates {
        *occurrences.entry(c.key.as_str()).or_insert(0) += 1;
    }
    let mut labels: HashMap<&str, usize> = HashMap::new();
    for c in &candidates {
        if let Some(label) = field_label(&c.key) {
            *labels.entry(label).or_insert(0) += 1;
        }
    }
    let section_of = |line: u32| doc.section_at(line).map(|s| s.id.as_str());
    let title_of = |line: u32| doc.section_at(line).map(|s| s.title.trim().to_lowercase());
    let mut first_seen: HashMap<&str, u32> = HashMap::new();
    let mut first_end: HashMap<&str, u32> = HashMap::new();
    let mut first_index: HashMap<&str, usize> = HashMap::new();
    let key_at = |i: usize| candidates.get(i).map(|c| c.key.as_str());
    for (j, c) in candidates.iter().enumerate() {
        let Some(&first) = first_seen.get(c.key.as_str()) else {
            first_seen.insert(&c.key, c.line_start);
            first_end.insert(&c.key, c.line_end);
            first_index.insert(&c.key, j);
            continue;
        };
        let i = first_index.get(c.key.as_str()).copied().unwrap_or(j);
        let repeats = occurrences.get(c.key.as_str()).copied().unwrap_or(0);
        let boilerplate = config.duplicate_boilerplate_repeats > 0
            && repeats >= config.duplicate_boilerplate_repeats;
        let short_elsewhere = c.key.chars().count() < config.duplicate_short_chars
            && section_of(first) != section_of(c.line_start);
        let elsewhere = section_of(first) != section_of(c.line_start);
        let normative = elsewhere
            && one_sentence(&c.key)
            && NORMATIVE
                .for_text(&c.key)
                .is_some_and(|re| re.is_match(&c.key));
        let note = elsewhere
            && (doc.line(c.line_start).trim_start().starts_with('>')
                || NOTE
                    .for_text(doc.line(c.line_start))
                    .is_some_and(|re| re.is_match(doc.line(c.line_start))));
        let lead_in = c.key.trim_end().ends_with(':')
            && first_end
                .get(c.key.as_str())
                .is_some_and(|&end| next_block(doc, end) != next_block(doc, c.line_end));
        if boilerplate || short_elsewhere || normative || note || lead_in {
            continue;
        }
        // What a slip looks like: the twin is close, or its neighbours
        // were copied with it.
        let adjacent = j - i <= 2;
        let in_block = (i > 0 && j - 1 != i && key_at(j - 1) == key_at(i - 1))
            || (i + 1 != j && key_at(j + 1).is_some() && key_at(j + 1) == key_at(i + 1));
        // Parallel structure, written so on purpose: sections of the same
        // name under different parents (a specification's "Common Fixed
        // Fields" for two objects), a field every entry has ("Blocking
        // layer recommendation: …" in three rules or more), or a short
        // closing sentence after different steps ("Il démarrera alors le
        // serveur…" after the VS Code steps and after the PyCharm ones).
        let parallel = (elsewhere && title_of(first) == title_of(c.line_start))
            || field_label(&c.key).is_some_and(|l| labels.get(l).copied().unwrap_or(0) >= 3)
            || (c.key.chars().count() < config.duplicate_short_chars
                && !previous_block(doc, first).is_empty()
                && (first..c.line_start)
                    .rev()
                    .find(|&l| !doc.index.is_blank(l))
                    .is_some_and(|l| Some(&l) != first_end.get(c.key.as_str()))
                && previous_block(doc, first) != previous_block(doc, c.line_start));
        let slip = !parallel && (!elsewhere || adjacent || in_block);
        let mut finding = Finding::new(
            FindingKind::DuplicateParagraph,
            KERNEL,
            c.line_start,
            c.line_end,
            repeat_message(first, slip, parallel),
            &c.key,
        );
        if !slip {
            finding.severity = koas_review_schema::findings::Severity::Info;
        }
        out.push(finding);
    }
}

/// The paragraphs compared: long enough, not in a list, not mostly code,
/// not in a protected block.
fn candidates_of(doc: &Document<'_>, facts: &MarkdownFacts, config: &ScanConfig) -> Vec<Candidate> {
    facts
        .paragraphs
        .iter()
        .filter(|p| {
            let mostly_code = p.code_chars * 2 > p.text.chars().count();
            !p.in_list
                && !mostly_code
                && !(p.line_start..=p.line_end).any(|l| doc.block_kind(l).is_some())
        })
        .map(|p| Candidate {
            key: normalize_whitespace(&p.text),
            line_start: p.line_start,
            line_end: p.line_end,
        })
        .filter(|c| c.key.chars().count() >= config.duplicate_min_chars)
        .collect()
}

/// The message for a paragraph that repeats the one at line `first`.
fn repeat_message(first: u32, slip: bool, parallel: bool) -> String {
    if slip {
        format!(
            "This paragraph repeats the paragraph at line {first} word for word; keep one of them"
        )
    } else if parallel {
        format!(
            "This paragraph repeats the paragraph at line {first} word for word, in a parallel place (a section of the same name, a field every entry has, or the same closing sentence after different steps); if the repetition is deliberate leave it, else keep one of them"
        )
    } else {
        format!(
            "This paragraph repeats the paragraph at line {first}, in another section, word for word; if the restatement is deliberate leave it, else keep one of them"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::test_support::stage1;
    use crate::markdown;
    use proptest::prelude::*;

    fn scan(text: &str) -> Vec<Finding> {
        let s1 = stage1(text);
        let doc = Document::new(s1.view(text)).expect("doc");
        let facts = markdown::collect(&doc);
        let mut out = Vec::new();
        detect(&doc, &facts, &ScanConfig::default(), &mut out);
        out
    }

    #[test]
    fn reports_the_repeat_with_normalised_whitespace() {
        let text = "# T\n\nThe gateway buffers messages on local disk for one hour.\n\n\
                    The gateway  buffers messages\non local disk for one hour.\n\nShort one.\n\nShort one.\n";
        let found = scan(text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].line, found[0].line_end), (5, 6));
        assert!(found[0].message.contains("line 3"));
    }

    /// Regression (issue 31, false pattern 1): a paragraph restated alone
    /// in a distant section is info; next to its twin, in its section, or
    /// with its neighbours copied too, it stays a warning.
    #[test]
    fn a_distant_lone_restatement_is_info_and_a_copied_block_is_a_warning() {
        use koas_review_schema::findings::Severity;
        let req = "The operator keeps the audit records of every payment service for ten years and gives them to the regulator on request.";
        let filler = |from: usize, n: usize| {
            (from..from + n)
                .map(|k| format!("Filler paragraph number {k} about another subject entirely.\n\n"))
                .collect::<String>()
        };
        let text = format!(
            "# Spec\n\n## Retention\n\n{req}\n\n{}## Audits\n\n{}{req}\n\n{}",
            filler(0, 3),
            filler(10, 4),
            filler(20, 2)
        );
        let found = scan(&text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].severity, Severity::Info);
        assert!(
            found[0].message.contains("in another section"),
            "{}",
            found[0].message
        );
        // The same restatement in French.
        let exig = "L'opérateur conserve les journaux d'audit de chaque service de paiement pendant dix ans et les remet au régulateur sur demande.";
        let text = format!(
            "# Spéc\n\n## Conservation\n\n{exig}\n\n{}## Audits\n\n{}{exig}\n",
            filler(0, 3),
            filler(10, 4)
        );
        let found = scan(&text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].severity, Severity::Info);
        // Two paragraphs copied together: a slip.
        let second = "Each record carries the identity of the person who made the change, the time of the change and the reason given for it.";
        let text = format!(
            "# Spec\n\n## Retention\n\n{req}\n\n{second}\n\n{}## Audits\n\n{}{req}\n\n{second}\n",
            filler(0, 3),
            filler(10, 3)
        );
        let found = scan(&text);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            found.iter().all(|f| f.severity == Severity::Warning),
            "{found:?}"
        );
        // Right after its twin, across a heading: a slip.
        let text = format!("# Spec\n\n## Retention\n\n{req}\n\n## Audits\n\n{req}\n");
        let found = scan(&text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].severity, Severity::Warning);
    }

    /// Regression (issue 31, held-out documents): repetitions in parallel
    /// places were warnings: a section of the same name for two objects
    /// of a specification, a field every rule has, the same closing
    /// sentence after the steps for two editors.
    #[test]
    fn repeats_in_parallel_places_are_info() {
        use koas_review_schema::findings::Severity;
        let lead =
            "These fields may be used with either the content or the schema of the parameter.";
        let rule = "The example and examples fields are mutually exclusive; see the section on examples for the validation requirements.";
        let spec = format!(
            "# Spec\n\n## Parameter\n\n### Common Fixed Fields\n\n{lead}\n\n{rule}\n\n## Header\n\n### Common Fixed Fields\n\n{lead}\n\n{rule}\n"
        );
        // The short lead-in is not reported at all (short, under another
        // heading); the longer rule copied with it is info.
        let found = scan(&spec);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].severity, Severity::Info);
        let field = "Blocking layer recommendation: there is no good place to implement this rule as the name system only handles names.";
        let rules = format!(
            "# Rules\n\n## A\n\nBlocking layer recommendation: the block service.\n\n## B\n\n{field}\n\n## C\n\n{field}\n"
        );
        let found = scan(&rules);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].severity, Severity::Info);
        let close =
            "Il démarrera alors le serveur avec votre code, s'arrêtera à vos points d'arrêt, etc.";
        let steps = format!(
            "# Débogage\n\nSi vous utilisez VS Code :\n\n- Ouvrez le panneau.\n- Lancez.\n\n{close}\n\nSi vous utilisez PyCharm :\n\n- Ouvrez le menu.\n- Choisissez Debug.\n\n{close}\n"
        );
        let found = scan(&steps);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].severity, Severity::Info);
        // The same short sentence twice in a row is still a slip.
        let twice = format!("# T\n\nIntro text of the section.\n\n{close}\n\n{close}\n");
        let found = scan(&twice);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].severity, Severity::Warning);
    }

    #[test]
    fn boilerplate_and_short_repeats_under_other_headings_are_deliberate() {
        let note = "Note: This release has been yanked, see the advisory for details.";
        let text = format!("# 1.0\n\n{note}\n\n# 0.9\n\n{note}\n\n# 0.8\n\n{note}\n");
        assert!(scan(&text).is_empty(), "three or more occurrences");
        let short = "This is a patch release with some minor fixes.";
        let text = format!("# 1.0\n\n{short}\n\n# 0.9\n\n{short}\n");
        assert!(scan(&text).is_empty(), "short, under another heading");
        let text = format!("# 1.0\n\n{short}\n\n{short}\n");
        assert_eq!(scan(&text).len(), 1, "short, same section");
        let long = "The gateway buffers messages on local disk for up to one hour when the central store is unreachable, then replays them in order.";
        let text = format!("# A\n\n{long}\n\n# B\n\n{long}\n");
        assert_eq!(scan(&text).len(), 1, "long, anywhere");
    }

    /// Regression: deliberate repetition reported on real documents.
    #[test]
    fn deliberate_repetition_is_not_reported() {
        let rule = "When the exporter is shut down, the implementation MUST flush every pending batch before it returns to the caller.";
        let text = format!("# Go SDK\n\n{rule}\n\n# Java SDK\n\n{rule}\n");
        assert!(scan(&text).is_empty(), "normative statement per component");
        let lead =
            "Le deuxième alinéa de l’article 4 de la convention de service est remplacée par :";
        let text = format!(
            "# Erratum 1\n\n{lead}\n\n- premier texte\n\n# Erratum 2\n\n{lead}\n\n- second texte\n"
        );
        assert!(scan(&text).is_empty(), "lead-in of different lists");
        let text = format!("# E\n\n{lead}\n\n- même texte\n\n{lead}\n\n- même texte\n");
        assert_eq!(
            scan(&text).len(),
            1,
            "a lead-in repeated with its list is a slip"
        );
        let note = "> [!NOTE]\n> This representation is lossy: type information is lost and numbers may lose precision when they are converted back.";
        let text = format!("# A\n\n{note}\n\n# B\n\n{note}\n");
        assert!(scan(&text).is_empty(), "a note repeated on purpose");
        let status = "**Status**: Development. This part of the specification may change in incompatible ways before it is declared stable.";
        let text = format!("# A\n\n{status}\n\n# B\n\n{status}\n");
        assert!(scan(&text).is_empty(), "a status note repeated on purpose");
    }

    #[test]
    fn a_copied_description_under_another_heading_is_still_reported() {
        let slip = "This is the route the user is redirected to in the browser after signing in with the identity provider.";
        let text = format!("# Login\n\n{slip}\n\n# Logout\n\n{slip}\n");
        assert_eq!(scan(&text).len(), 1);
    }

    #[test]
    fn list_items_and_code_are_not_compared() {
        let text = "# T\n\n- Updated the dependencies of the service to their latest versions\n\n\
                    - Updated the dependencies of the service to their latest versions\n\n\
                    **Returns:** `{\"status\": \"ok\", \"workspace\": \"<path>\"}`\n\n\
                    **Returns:** `{\"status\": \"ok\", \"workspace\": \"<path>\"}`\n\n\
                    ```\nA long line of code repeated in two places of the file.\nA long line of code repeated in two places of the file.\n```\n";
        assert!(scan(text).is_empty());
    }

    proptest! {
        #[test]
        fn normalising_is_idempotent_and_ignores_spacing(words in prop::collection::vec("[a-zé]{1,6}", 1..10), gaps in prop::collection::vec("[ \t\n]{1,3}", 10)) {
            let spaced: String = words.iter().zip(gaps.iter().cycle()).map(|(w, g)| format!("{w}{g}")).collect();
            let n = normalize_whitespace(&spaced);
            prop_assert_eq!(&n, &words.join(" "));
            prop_assert_eq!(normalize_whitespace(&n), n.clone());
        }
    }
}
