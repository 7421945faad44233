//! AI leftovers: phrases an assistant wrote to the person who asked, not to
//! the reader ("Certainly! Here is…", "I hope this helps").

use super::KERNEL;
use crate::config::ScanConfig;
use crate::document::Document;
use crate::evidence::around;
use crate::quotes::{is_quoted, quoted_ranges};
use crate::ScanError;
use koas_review_schema::findings::{Finding, FindingKind, Severity};
use regex::Regex;

/// The compiled leftover patterns.
pub struct AiLeftovers {
    /// Each pattern, and whether it is in `ai_leftover_info_patterns`.
    patterns: Vec<(Regex, bool)>,
}

impl AiLeftovers {
    /// Compiles the configured patterns.
    pub fn new(config: &ScanConfig) -> Result<Self, ScanError> {
        let patterns = config
            .effective_ai_patterns()
            .map(|(key, p)| {
                let weak = config.ai_leftover_info_patterns.iter().any(|w| w == p);
                Regex::new(p)
                    .map(|re| (re, weak))
                    .map_err(|e| ScanError::InvalidPattern {
                        key: key.to_string(),
                        pattern: p.to_string(),
                        reason: e.to_string(),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(AiLeftovers { patterns })
    }

    /// One finding per line holding one or more leftovers.
    pub fn detect(&self, doc: &Document<'_>, out: &mut Vec<Finding>) {
        for line in 1..=doc.line_count() {
            let Some(prose) = doc.prose(line) else {
                continue;
            };
            let quoted = quoted_ranges(prose);
            let mut hits: Vec<(usize, usize, bool)> = self
                .patterns
                .iter()
                .filter_map(|(re, weak)| {
                    re.find_iter(prose)
                        .find(|m| !is_quoted(&quoted, m.start(), m.end()))
                        .map(|m| (m, *weak))
                })
                .filter(|(m, _)| !m.is_empty())
                .map(|(m, weak)| (m.start(), m.end(), weak))
                .collect();
            if hits.is_empty() {
                continue;
            }
            hits.sort_unstable();
            let phrases: Vec<String> = hits
                .iter()
                .map(|&(s, e, _)| format!("“{}”", prose[s..e].trim()))
                .collect();
            let (first, last) = (
                hits[0].0,
                hits.iter().map(|h| h.1).max().unwrap_or(hits[0].1),
            );
            let message = format!(
                "Text left by an AI assistant ({}): it speaks to whoever asked for the text, not to the reader; remove or rewrite it",
                phrases.join(", ")
            );
            let mut finding = Finding::new(
                FindingKind::AiLeftover,
                KERNEL,
                line,
                line,
                message,
                &around(doc.line(line), first, last),
            );
            if hits.iter().all(|h| h.2) {
                finding.severity = Severity::Info;
            }
            out.push(finding);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::test_support::stage1;

    fn scan(text: &str, config: &ScanConfig) -> Vec<Finding> {
        let s1 = stage1(text);
        let doc = Document::new(s1.view(text)).expect("doc");
        let mut out = Vec::new();
        AiLeftovers::new(config)
            .expect("compiles")
            .detect(&doc, &mut out);
        out
    }

    #[test]
    fn finds_each_default_pattern_once_per_line() {
        let text = "# T\n\nCertainly! Here is the text.\n\nAs an AI model I cannot.\n\n\
                    I hope this helps! Let me know if you need more.\n\nSure, here’s a summary.\n";
        let found = scan(text, &ScanConfig::default());
        let lines: Vec<u32> = found.iter().map(|f| f.line).collect();
        assert_eq!(lines, [3, 5, 7, 9]);
        assert!(
            found[2].message.contains("I hope this helps")
                && found[2].message.contains("Let me know if")
        );
    }

    #[test]
    fn ignores_code_and_inline_code_and_honours_config() {
        let text = "# T\n\n```\nAs an AI\n```\n\nThe string `Certainly!` is matched.\n\nVoici le texte demandé.\n";
        assert!(scan(text, &ScanConfig::default()).is_empty());
        let config = ScanConfig {
            extra_ai_leftover_patterns: vec![r"(?i)\bvoici le texte\b".into()],
            ..ScanConfig::default()
        };
        let found = scan(text, &config);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].line, 9);
    }

    #[test]
    fn phrases_common_in_prose_are_only_info() {
        let text = "# T\n\nHere is an example of the result:\n\nCertainly! Here is the text.\n";
        let found = scan(text, &ScanConfig::default());
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].severity, Severity::Info);
        assert_eq!(found[1].severity, Severity::Warning);
    }

    #[test]
    fn quoted_phrases_are_mentions() {
        let text = "# T\n\nThe patterns (\"As an AI\", “Certainly!”) are configurable.\n\n\"Quoted\" but I hope this helps.\n";
        let found = scan(text, &ScanConfig::default());
        assert_eq!(found.iter().map(|f| f.line).collect::<Vec<_>>(), [5]);
    }

    #[test]
    fn a_bad_pattern_is_an_error_naming_it() {
        let config = ScanConfig {
            ai_leftover_patterns: vec!["(unclosed".into()],
            ..ScanConfig::default()
        };
        let err = AiLeftovers::new(&config).err().expect("refused");
        assert!(err.to_string().contains("(unclosed"), "{err}");
    }
}
