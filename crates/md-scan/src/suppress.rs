//! Inline suppression comments:
//!
//! * `<!-- koas-disable-next-line KIND ... -->` silences findings whose
//!   first line is the next non-blank line;
//! * `<!-- koas-disable KIND ... -->` … `<!-- koas-enable KIND ... -->`
//!   silences findings whose first line is in between (to the end of the
//!   document when never re-enabled).
//!
//! Without a kind, a comment applies to every kind. Kinds may be separated
//! by spaces or commas. A Vale style rule is named like a kind
//! (`koas-disable Google.Passive`); `style` names every rule. Comments
//! inside code, math or front matter are text, not directives.

use crate::document::Document;
use koas_review_schema::findings::{Finding, FindingKind};
use koas_review_schema::stage1::BlockKind;
use regex::Regex;
use std::sync::LazyLock;

static DIRECTIVE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"<!--\s*koas-(disable-next-line|disable|enable)\b([^>]*?)\s*-->").ok()
});

/// Which kinds a directive names (bare or `kernel/kind`): `None` for all.
type Kinds = Option<Vec<String>>;

#[derive(Debug, Clone, PartialEq)]
enum Directive {
    NextLine(u32, Kinds),
    Disable(u32, Kinds),
    Enable(u32, Kinds),
}

/// The suppression directives of one document, and any unknown kind they
/// name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Suppressions {
    directives: Vec<Directive>,
    /// `(line, word)` for each kind name that is not a built-in kind: a
    /// typo, or a kind another kernel declares (the caller knows which).
    pub unknown_kinds: Vec<(u32, String)>,
}

fn covers(kinds: &Kinds, kernel: &str, kind: &str) -> bool {
    match kinds {
        None => true,
        Some(k) => k.iter().any(|n| crate::kinds::names(n, kernel, kind)),
    }
}

impl Suppressions {
    /// Reads the directives of a document.
    pub fn parse(doc: &Document<'_>) -> Suppressions {
        let mut out = Suppressions::default();
        let n = doc.line_count();
        for line in 1..=n {
            let text = doc.line(line);
            if !text.contains("koas-") {
                continue;
            }
            // Compiled only for a document that has a directive.
            let Some(re) = DIRECTIVE.as_ref() else {
                return out;
            };
            if matches!(
                doc.block_kind(line),
                Some(
                    BlockKind::CodeFence
                        | BlockKind::IndentedCode
                        | BlockKind::MathBlock
                        | BlockKind::YamlFrontMatter
                        | BlockKind::TomlFrontMatter
                )
            ) {
                continue;
            }
            for caps in re.captures_iter(text) {
                let words: Vec<&str> = caps
                    .get(2)
                    .map_or("", |m| m.as_str())
                    .split(|c: char| c.is_whitespace() || c == ',')
                    .filter(|w| !w.is_empty())
                    .collect();
                let mut kinds = Vec::new();
                for w in &words {
                    if crate::kinds::builtin_named(w).is_none() && !crate::kinds::is_rule_name(w) {
                        out.unknown_kinds.push((line, w.to_string()));
                    }
                    kinds.push(w.to_string());
                }
                let kinds = if words.is_empty() { None } else { Some(kinds) };
                match caps.get(1).map(|m| m.as_str()) {
                    Some("disable-next-line") => {
                        let target = (line + 1..=n)
                            .find(|&l| !doc.index.is_blank(l))
                            .unwrap_or(n + 1);
                        out.directives.push(Directive::NextLine(target, kinds));
                    }
                    Some("disable") => out.directives.push(Directive::Disable(line, kinds)),
                    Some("enable") => out.directives.push(Directive::Enable(line, kinds)),
                    _ => {}
                }
            }
        }
        out
    }

    /// The directives of a document given as text (its Stage 1 computed
    /// here); `None` when the text cannot be read as a document.
    pub fn of_text(text: &str) -> Option<Suppressions> {
        if !text.contains("koas-") {
            return Some(Suppressions::default());
        }
        let stage1 = crate::stage1::Stage1Artifacts::compute(text);
        let doc = Document::new(stage1.view(text)).ok()?;
        Some(Suppressions::parse(&doc))
    }

    /// `true` when a finding of `kind` whose first line is `line` is
    /// silenced.
    pub fn is_suppressed(&self, kind: FindingKind, line: u32) -> bool {
        self.is_suppressed_as(crate::kinds::builtin_kernel(kind), kind.as_str(), line)
    }

    /// `true` when a finding of `kind` from `kernel` whose first line is
    /// `line` is silenced (by its bare or its `kernel/kind` name).
    pub fn is_suppressed_as(&self, kernel: &str, kind: &str, line: u32) -> bool {
        let covers = |kinds: &Kinds| covers(kinds, kernel, kind);
        let mut disabled = false;
        for d in &self.directives {
            match d {
                Directive::NextLine(target, kinds) if *target == line && covers(kinds) => {
                    return true;
                }
                Directive::Disable(at, kinds) if *at < line && covers(kinds) => disabled = true,
                Directive::Enable(at, kinds) if *at < line && covers(kinds) => disabled = false,
                _ => {}
            }
        }
        disabled
    }

    /// Takes out of `findings` those a `koas-disable…` comment silences
    /// and gives them back; both keep their order.
    pub fn take_suppressed(&self, findings: &mut Vec<Finding>) -> Vec<Finding> {
        if self.directives.is_empty() {
            return Vec::new();
        }
        let (silenced, kept): (Vec<Finding>, Vec<Finding>) =
            std::mem::take(findings).into_iter().partition(|f| {
                self.is_suppressed(f.kind, f.line)
                    || f.rule.as_deref().is_some_and(|rule| {
                        self.is_suppressed_as(crate::kinds::builtin_kernel(f.kind), rule, f.line)
                    })
            });
        *findings = kept;
        silenced
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::test_support::stage1;

    fn parse(text: &str) -> Suppressions {
        let s1 = stage1(text);
        let doc = Document::new(s1.view(text)).expect("doc");
        Suppressions::parse(&doc)
    }

    #[test]
    fn take_suppressed_splits_the_findings_keeping_their_order() {
        let s = parse("# T\n\n<!-- koas-disable-next-line ai_leftover -->\nCertainly!\n\nAgain\n");
        let f = |kind, line| Finding::new(kind, "k", line, line, "m", "e");
        let mut findings = vec![
            f(FindingKind::DuplicateParagraph, 4),
            f(FindingKind::AiLeftover, 4),
            f(FindingKind::AiLeftover, 6),
        ];
        let silenced = s.take_suppressed(&mut findings);
        assert_eq!(silenced, vec![f(FindingKind::AiLeftover, 4)]);
        assert_eq!(
            findings,
            vec![
                f(FindingKind::DuplicateParagraph, 4),
                f(FindingKind::AiLeftover, 6)
            ]
        );
        assert!(parse("# T\n").take_suppressed(&mut findings).is_empty());
        assert_eq!(findings.len(), 2);
    }

    #[test]
    fn next_line_skips_blank_lines_and_respects_kinds() {
        let s =
            parse("# T\n\n<!-- koas-disable-next-line ai_leftover -->\n\nCertainly!\n\nAgain\n");
        assert!(s.is_suppressed(FindingKind::AiLeftover, 5));
        assert!(!s.is_suppressed(FindingKind::DuplicateParagraph, 5));
        assert!(!s.is_suppressed(FindingKind::AiLeftover, 7));
    }

    #[test]
    fn ranges_open_and_close_per_kind() {
        let text = "# T\n<!-- koas-disable -->\na\n<!-- koas-enable ai_leftover -->\nb\n<!-- koas-enable -->\nc\n<!-- koas-disable broken_reference, missing_target -->\nd\n";
        let s = parse(text);
        assert!(s.is_suppressed(FindingKind::AiLeftover, 3));
        assert!(s.is_suppressed(FindingKind::TableStructure, 3));
        assert!(!s.is_suppressed(FindingKind::AiLeftover, 5));
        assert!(s.is_suppressed(FindingKind::TableStructure, 5));
        assert!(!s.is_suppressed(FindingKind::TableStructure, 7));
        assert!(s.is_suppressed(FindingKind::MissingTarget, 9));
        assert!(s.is_suppressed(FindingKind::BrokenReference, 9));
        assert!(!s.is_suppressed(FindingKind::AiLeftover, 9));
    }

    #[test]
    fn a_qualified_name_silences_only_that_kernels_kind() {
        let s =
            parse("# T\n\n<!-- koas-disable team/long md_consistency_scan/ai_leftover -->\nx\n");
        assert!(s.is_suppressed_as("team", "long", 4));
        assert!(!s.is_suppressed_as("other", "long", 4));
        assert!(s.is_suppressed(FindingKind::AiLeftover, 4));
        assert_eq!(s.unknown_kinds, [(3, "team/long".to_string())]);
    }

    #[test]
    fn directives_in_code_are_text_and_unknown_kinds_are_listed() {
        let s = parse("# T\n\n```\n<!-- koas-disable -->\n```\n\nx\n\n<!-- koas-disable-next-line ai_leftovers -->\ny\n");
        assert!(!s.is_suppressed(FindingKind::AiLeftover, 7));
        assert_eq!(s.unknown_kinds, [(9, "ai_leftovers".to_string())]);
        assert!(
            s.is_suppressed_as("team", "ai_leftovers", 10),
            "another kernel's kind"
        );
        assert!(
            !s.is_suppressed(FindingKind::AiLeftover, 10),
            "an unknown kind silences nothing"
        );
    }
}
