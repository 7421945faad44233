//! Terminology drift: a section using both the French and the English form
//! of one term ("code mort" and "dead code", "refonte" and "refactoring").
//! Each section's own content is checked (its heading down to its first
//! sub-heading), and the lines before the first heading as one more
//! section. Plurals (`s`/`x`) count as the same form.

use super::KERNEL;
use crate::config::ScanConfig;
use crate::document::Document;
use crate::evidence::around;
use crate::gate::{alternatives_in, GatedAlternatives, Needles, Warm};
use crate::quotes::{is_quoted, quoted_ranges};
use crate::words::{at_word_boundaries, in_identifier, mask_markup};
use crate::ScanError;
use koas_review_schema::findings::{Finding, FindingKind};

/// One term pair, compiled into one regex with a group per form.
pub struct Terminology {
    pairs: Vec<(String, String)>,
    regex: Option<GatedAlternatives>,
    /// For each capture group (from 1), the form it matches: `2 * pair`
    /// for the French form, `2 * pair + 1` for the English one.
    group_form: Vec<usize>,
}

/// The regex of one form: any whitespace between words, both apostrophes,
/// an optional plural. Word boundaries are checked on each match
/// ([`crate::words`]), not in the regex.
fn form_pattern(term: &str) -> String {
    let words: Vec<String> = term
        .split_whitespace()
        .map(|w| regex::escape(w).replace(['\'', '’'], "['’]"))
        .collect();
    format!(r"{}(?:s|x)?", words.join(r"\s+"))
}

#[derive(Default, Clone, Copy)]
struct Usage {
    count: usize,
    first: Option<(u32, usize, usize)>,
    last_line: u32,
}

impl Usage {
    fn add(&mut self, line: u32, start: usize, end: usize) {
        self.count += 1;
        self.first.get_or_insert((line, start, end));
        self.last_line = line;
    }
}

impl Terminology {
    /// Compiles the configured pairs.
    pub fn new(config: &ScanConfig) -> Result<Self, ScanError> {
        let pairs: Vec<(String, String)> = config
            .effective_term_pairs()
            .filter(|(fr, en)| !fr.trim().is_empty() && !en.trim().is_empty())
            .cloned()
            .collect();
        if pairs.is_empty() {
            return Ok(Terminology {
                pairs,
                regex: None,
                group_form: Vec::new(),
            });
        }
        // Longest forms first: the regex takes the first alternative that
        // matches, and a short form must not hide a longer one it starts.
        let mut forms: Vec<(usize, &String)> = pairs
            .iter()
            .flat_map(|(fr, en)| [fr, en])
            .enumerate()
            .collect();
        forms.sort_by_key(|(_, t)| std::cmp::Reverse(t.len()));
        let group_form: Vec<usize> = forms.iter().map(|(i, _)| *i).collect();
        // Every match of a form holds its longest ASCII word: a line is
        // searched only with the forms whose words it has. Every form is
        // escaped: the pattern is valid whatever the terms.
        let alternatives: Vec<(String, Needles)> = forms
            .iter()
            .map(|(_, t)| {
                (
                    format!("({})", form_pattern(t)),
                    Needles::from_words([t.as_str()]),
                )
            })
            .collect();
        let regex = GatedAlternatives::from_parts("(?i)", alternatives, "");
        Ok(Terminology {
            pairs,
            regex: Some(regex),
            group_form,
        })
    }

    /// Compiles ahead the regex of the forms `text` may hold.
    pub(crate) fn warm<'a>(&'a self, text: &'a str, jobs: &mut Vec<Warm<'a>>) {
        if let Some(re) = &self.regex {
            jobs.push(Box::new(move || re.warm(text)));
        }
    }

    /// Reports every (section, pair) where both forms are used.
    pub fn detect(&self, doc: &Document<'_>, out: &mut Vec<Finding>) {
        let Some(re) = &self.regex else { return };
        let mut ranges: Vec<(u32, u32)> = Vec::new();
        let sections = &doc.stage1.sections.sections;
        let first_heading = sections
            .first()
            .map_or(doc.line_count() + 1, |s| s.line_start);
        if first_heading > 1 {
            ranges.push((1, first_heading - 1));
        }
        ranges.extend(sections.iter().map(|s| (s.line_start, s.body_line_end)));
        // The lines that may hold a form, with the forms each may hold;
        // one regex is compiled for them all.
        let lines: Vec<Vec<(u32, &str, u64)>> = ranges
            .iter()
            .map(|&(start, end)| {
                (start..=end.min(doc.line_count()))
                    .filter_map(|line| {
                        let prose = doc.prose(line)?;
                        let mask = re.mask_for(prose);
                        (mask != 0).then_some((line, prose, mask))
                    })
                    .collect()
            })
            .collect();
        let Some((re, mask)) = re.regex_for(lines.iter().flatten().fold(0, |m, l| m | l.2)) else {
            return;
        };
        // Group k of the regex is the k-th form it was built from.
        let in_regex = alternatives_in(mask, self.group_form.len());
        for range in lines {
            let mut usage = vec![Usage::default(); self.pairs.len() * 2];
            for (line, prose, _) in range {
                if !re.is_match(prose) {
                    continue;
                }
                // Only words of sentences count: not link targets, paths,
                // file names, HTML attributes or template tags.
                let prose = mask_markup(prose);
                let prose = prose.as_ref();
                let mut quoted: Option<Vec<(usize, usize)>> = None;
                for caps in re.captures_iter(prose) {
                    let Some(whole) = caps.get(0) else { continue };
                    if !at_word_boundaries(prose, whole.start(), whole.end())
                        || in_identifier(prose, whole.start(), whole.end())
                    {
                        continue;
                    }
                    let q = quoted.get_or_insert_with(|| quoted_ranges(prose));
                    if is_quoted(q, whole.start(), whole.end()) {
                        continue;
                    }
                    if let Some((i, m)) = caps.iter().enumerate().skip(1).find_map(|(i, m)| {
                        m.map(|m| {
                            let alternative = in_regex.get(i - 1).copied();
                            (alternative.and_then(|a| self.group_form.get(a).copied()), m)
                        })
                    }) {
                        if let Some(u) = i.and_then(|i| usage.get_mut(i)) {
                            u.add(line, m.start(), m.end());
                        }
                    }
                }
            }
            for (p, (fr, en)) in self.pairs.iter().enumerate() {
                let (f, e) = (usage[2 * p], usage[2 * p + 1]);
                let (Some(ff), Some(ef)) = (f.first, e.first) else {
                    continue;
                };
                let (second_line, s, en_) = if ff.0 <= ef.0 { ef } else { ff };
                let line = ff.0.min(ef.0);
                out.push(Finding::new(
                    FindingKind::TerminologyDrift,
                    KERNEL,
                    line,
                    f.last_line.max(e.last_line),
                    format!(
                        "This section uses both “{fr}” ({}×) and “{en}” ({}×) for the same thing; pick one term",
                        f.count, e.count
                    ),
                    &around(doc.line(second_line), s, en_),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::test_support::stage1;

    fn scan(text: &str) -> Vec<Finding> {
        let s1 = stage1(text);
        let doc = Document::new(s1.view(text)).expect("doc");
        let mut out = Vec::new();
        Terminology::new(&ScanConfig::default())
            .expect("compiles")
            .detect(&doc, &mut out);
        out
    }

    #[test]
    fn mixing_forms_in_one_section_is_reported() {
        let found = scan("# A\n\nLe code mort représente une part notable.\nLe dead code du portail est limité.\n\n# B\n\nrefactoring only.\n");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].line, found[0].line_end), (3, 4));
        assert!(found[0].message.contains("1×"));
    }

    #[test]
    fn forms_in_different_sections_plurals_and_code() {
        assert!(scan("# A\n\nLa refonte.\n\n# B\n\nThe refactoring.\n").is_empty());
        assert_eq!(scan("# A\n\nLes refontes et les refactorings.\n").len(), 1);
        assert!(scan("# A\n\nLa refonte du `refactoring` module.\n").is_empty());
        assert!(scan("# A\n\nrefontes\n\n```\nrefactoring\n```\n").is_empty());
        assert!(
            scan("# A\n\nPairs such as \"refonte\" vs \"refactoring\" are tracked.\n").is_empty()
        );
    }

    /// Regression: words of link targets, image paths and template tags
    /// were counted as uses of a term.
    #[test]
    fn only_words_of_sentences_count() {
        for line in [
            "Publiez un jeu de données via [la page](/fr/admin/dataset/new/).",
            "Un jeu de données ![écran](admin-harvest-dataset-modal.png) à remplir.",
            "Un jeu de données, voir {% link _api/dataset.md %} et https://x.fr/datasets/1.",
            "Un jeu de données <a href=\"/datasets/\" title=\"x\">ici</a>.",
            "Un jeu de données (`dataset` dans l'API).",
        ] {
            assert!(scan(&format!("# A\n\n{line}\n")).is_empty(), "{line}");
        }
        assert_eq!(scan("# A\n\nUn jeu de données, ou dataset.\n").len(), 1);
    }

    #[test]
    fn form_patterns_are_whole_words() {
        let re = regex::Regex::new(&format!("(?i){}", form_pattern("dead code"))).expect("valid");
        let whole = |t: &str| {
            re.find_iter(t)
                .any(|m| at_word_boundaries(t, m.start(), m.end()))
        };
        assert!(whole("the Dead  code here"));
        assert!(!whole("deadcode"));
        assert!(!whole("dead codec"));
        assert!(!whole("undead code"));
    }

    #[test]
    fn a_form_inside_a_longer_form_is_not_hidden() {
        let config = ScanConfig {
            term_pairs: vec![
                ("base".into(), "database".into()),
                ("base de données".into(), "db".into()),
            ],
            ..ScanConfig::default()
        };
        let s1 = stage1("# A\n\nLa base de données et la db.\n");
        let text = "# A\n\nLa base de données et la db.\n";
        let doc = Document::new(s1.view(text)).expect("doc");
        let mut out = Vec::new();
        Terminology::new(&config)
            .expect("compiles")
            .detect(&doc, &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(out[0].message.contains("base de données"));
        let re =
            regex::Regex::new(&format!("(?i){}", form_pattern("journal d'audit"))).expect("valid");
        assert!(re.is_match("le journal d’audit"));
    }
}
