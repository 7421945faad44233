//! AI leftovers: phrases an assistant wrote to the person who asked, not to
//! the reader ("Certainly! Here is…", "I hope this helps").

use super::KERNEL;
use crate::config::ScanConfig;
use crate::document::Document;
use crate::evidence::around;
use crate::finding::{Finding, FindingKind};
use crate::quotes::{is_quoted, quoted_ranges};
use crate::ScanError;
use regex::Regex;

/// The compiled leftover patterns.
pub struct AiLeftovers {
    patterns: Vec<Regex>,
}

impl AiLeftovers {
    /// Compiles the configured patterns.
    pub fn new(config: &ScanConfig) -> Result<Self, ScanError> {
        let patterns = config
            .effective_ai_patterns()
            .map(|(key, p)| {
                Regex::new(p).map_err(|e| ScanError::InvalidPattern {
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
            let mut hits: Vec<(usize, usize)> = self
                .patterns
                .iter()
                .filter_map(|re| {
                    re.find_iter(prose)
                        .find(|m| !is_quoted(&quoted, m.start(), m.end()))
                })
                .filter(|m| !m.is_empty())
                .map(|m| (m.start(), m.end()))
                .collect();
            if hits.is_empty() {
                continue;
            }
            hits.sort_unstable();
            let phrases: Vec<String> = hits
                .iter()
                .map(|&(s, e)| format!("“{}”", prose[s..e].trim()))
                .collect();
            let (first, last) = (
                hits[0].0,
                hits.iter().map(|h| h.1).max().unwrap_or(hits[0].1),
            );
            let message = format!(
                "Text left by an AI assistant ({}): it speaks to whoever asked for the text, not to the reader; remove or rewrite it",
                phrases.join(", ")
            );
            out.push(Finding::new(
                FindingKind::AiLeftover,
                KERNEL,
                line,
                line,
                message,
                &around(doc.line(line), first, last),
            ));
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
