//! `readability`: the mean of the document's grades by the `metrics`
//! named (Flesch-Kincaid, Gunning Fog, Coleman-Liau, SMOG, Automated
//! Readability) above `grade` is an alert on the document, its `%s` the
//! mean.

use super::keys::Keys;
use super::metric::document_hit;
use super::{Hit, RuleError};
use crate::prose::TextCounts;

/// A grade formula.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Grade {
    FleschKincaid,
    GunningFog,
    ColemanLiau,
    Smog,
    AutomatedReadability,
}

impl Grade {
    fn named(name: &str) -> Option<Grade> {
        Some(match name {
            "Flesch-Kincaid" => Grade::FleschKincaid,
            "Gunning Fog" => Grade::GunningFog,
            "Coleman-Liau" => Grade::ColemanLiau,
            "SMOG" => Grade::Smog,
            "Automated Readability" => Grade::AutomatedReadability,
            _ => return None,
        })
    }

    /// The grade of a text with `c`, by the published formulas.
    fn of(self, c: &TextCounts) -> f64 {
        let per_sentence = c.words / c.sentences;
        match self {
            Grade::FleschKincaid => 0.39 * per_sentence + 11.8 * (c.syllables / c.words) - 15.59,
            Grade::GunningFog => 0.4 * (per_sentence + 100.0 * (c.complex_words / c.words)),
            Grade::ColemanLiau => {
                0.0588 * (c.characters / c.words) * 100.0
                    - 0.296 * (c.sentences / c.words) * 100.0
                    - 15.8
            }
            Grade::Smog => 1.0430 * (c.polysyllabic_words * 30.0 / c.sentences).sqrt() + 3.1291,
            Grade::AutomatedReadability => {
                4.71 * (c.characters / c.words) + 0.5 * per_sentence - 21.43
            }
        }
    }
}

/// A compiled `readability` rule.
#[derive(Debug)]
pub(crate) struct Readability {
    grades: Vec<Grade>,
    /// The highest mean grade without an alert.
    most: f64,
}

impl Readability {
    /// Reads a `readability` rule.
    pub(crate) fn read(keys: &mut Keys) -> Result<Readability, RuleError> {
        let names = keys.list("metrics")?;
        if names.is_empty() {
            return Err(keys.error("metrics", "a readability rule needs metrics"));
        }
        let grades = names
            .iter()
            .map(|n| {
                Grade::named(n).ok_or_else(|| {
                    keys.error(
                        "metrics",
                        format!("`{n}` is none of Flesch-Kincaid, Gunning Fog, Coleman-Liau, SMOG, Automated Readability"),
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let most = keys
            .number("grade")?
            .ok_or_else(|| keys.error("grade", "a readability rule needs a grade"))?;
        Ok(Readability { grades, most })
    }

    /// The alert on a document with `counts`, if its mean grade is above
    /// the rule's (none on a document without words).
    pub(crate) fn run(&self, message: &str, counts: &TextCounts) -> Vec<Hit> {
        if counts.words == 0.0 || self.grades.is_empty() {
            return Vec::new();
        }
        let mean = self.grades.iter().map(|g| g.of(counts)).sum::<f64>() / self.grades.len() as f64;
        if mean > self.most {
            vec![document_hit(message, mean)]
        } else {
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grades_follow_the_published_formulas() {
        let c = TextCounts {
            words: 100.0,
            sentences: 5.0,
            syllables: 150.0,
            characters: 450.0,
            complex_words: 10.0,
            polysyllabic_words: 12.0,
            ..TextCounts::default()
        };
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(
            Grade::FleschKincaid.of(&c),
            0.39 * 20.0 + 11.8 * 1.5 - 15.59
        ));
        assert!(close(Grade::GunningFog.of(&c), 0.4 * (20.0 + 10.0)));
        assert!(close(
            Grade::ColemanLiau.of(&c),
            0.0588 * 450.0 - 0.296 * 5.0 - 15.8
        ));
        assert!(close(Grade::Smog.of(&c), 1.0430 * 72.0_f64.sqrt() + 3.1291));
        assert!(close(
            Grade::AutomatedReadability.of(&c),
            4.71 * 4.5 + 10.0 - 21.43
        ));
        let rule = Readability {
            grades: vec![Grade::FleschKincaid, Grade::GunningFog],
            most: 8.0,
        };
        let hits = rule.run("Grade %s.", &c);
        assert_eq!(hits.len(), 1);
        let mean = (Grade::FleschKincaid.of(&c) + Grade::GunningFog.of(&c)) / 2.0;
        assert_eq!(hits[0].message, format!("Grade {mean:.2}."));
        assert!(rule.run("x", &TextCounts::default()).is_empty());
    }
}
