//! Measuring a reviewing model on documents whose defects are known.
//!
//! [`plant::plant`] copies a clean document and plants defects in its
//! prose (misspellings, doubled words, agreement errors, wrong numbers,
//! broken anchors) with a seeded generator, keeping the original as the
//! truth; [`score::score`] compares what a model made of the copy with
//! the truth: defects fixed, partly fixed or missed, and the changes made
//! where nothing was planted, by what the guards did with them.
//! [`report`] sums the scores per model and language, as a terminal table
//! or an HTML page in the review report's style.

pub mod plant;
pub mod score;
pub mod scoreboard;

use plant::Lang;

/// The evaluation documents shipped with koas (written for the project,
/// under its licence): technical prose in English and French with a
/// table, code, math, lists and a link, and no defect.
pub const BUNDLED: &[(&str, Lang, &str)] = &[
    (
        "log-pipeline.md",
        Lang::En,
        include_str!("../docs/en/log-pipeline.md"),
    ),
    (
        "supervision.md",
        Lang::Fr,
        include_str!("../docs/fr/supervision.md"),
    ),
];

#[cfg(test)]
mod tests {
    use super::plant::{plant, DefectKind, Lang};
    use super::score::{score, DefectStatus, Guarded, Proposal};
    use proptest::prelude::*;

    const EN: &str = "\
# Retention

The platform keeps operational logs for thirty days in the hot tier.
Two teams are allowed to delete them, as [the policy](#deletion-rules) says.

| Class | Days |
|---|---|
| access | 90 |

```sh
purge-logs --older-than 90d
```

## Deletion rules

Expired records are removed by a nightly job that runs at 3 am exactly.
The security team has the right to run the purge job manually when needed.
Every deletion is written to the audit trail with the name of its author.
The audit trail itself is kept for seven years and is never deleted early.
";

    #[test]
    fn plants_only_prose_one_line_each_and_never_neighbours() {
        let doc = plant("en.md", EN, Lang::En, 7, 5);
        assert!(doc.defects.len() >= 3, "{doc:#?}");
        let truth: Vec<&str> = EN.split('\n').collect();
        let planted: Vec<&str> = doc.text.split('\n').collect();
        assert_eq!(truth.len(), planted.len());
        for (i, (t, p)) in truth.iter().zip(&planted).enumerate() {
            let defect = doc.defects.iter().find(|d| d.line == i + 1);
            match defect {
                Some(d) => {
                    assert_ne!(t, p, "{d:?}");
                    assert_eq!(d.truth, *t);
                    assert_eq!(d.planted, *p);
                }
                None => assert_eq!(t, p, "line {} changed without a defect", i + 1),
            }
            // Never in the table, the code or a heading.
            if defect.is_some() {
                assert!(!t.starts_with('|') && !t.starts_with('#') && !t.starts_with("purge"));
            }
        }
        for pair in doc.defects.windows(2) {
            assert!(pair[1].line > pair[0].line + 1, "{pair:?}");
        }
        let kinds: std::collections::BTreeSet<DefectKind> =
            doc.defects.iter().map(|d| d.kind).collect();
        assert!(kinds.len() >= 3, "{kinds:?}");
    }

    #[test]
    fn scores_fixed_partial_missed_and_harm_by_guard() {
        let doc = plant("en.md", EN, Lang::En, 7, 5);
        // The truth itself: every defect fixed.
        let all = score(&doc, EN, &[]);
        assert_eq!(all.count(DefectStatus::Fixed), doc.defects.len());
        // The planted copy untouched: every defect missed.
        let none = score(&doc, &doc.text, &[]);
        assert_eq!(none.count(DefectStatus::Missed), doc.defects.len());
        // One defect changed to something else: partial.
        let first = &doc.defects[0];
        let mut lines: Vec<String> = doc.text.split('\n').map(str::to_string).collect();
        lines[first.line - 1] = format!("{} (edited)", first.truth);
        let partial = score(&doc, &lines.join("\n"), &[]);
        assert_eq!(partial.defects[&first.id].1, DefectStatus::Partial);
        // Proposals on lines with no defect are harm, by guard.
        let free = (1..=doc.text.split('\n').count())
            .find(|l| !doc.defects.iter().any(|d| d.line == *l))
            .expect("a clean line");
        let proposals = [
            Proposal {
                first: free,
                last: free,
                guarded: Guarded::Refused,
                change: true,
            },
            Proposal {
                first: free,
                last: free,
                guarded: Guarded::Flagged,
                change: true,
            },
            Proposal {
                first: free,
                last: free,
                guarded: Guarded::Flagged,
                change: false,
            },
            Proposal {
                first: first.line,
                last: first.line,
                guarded: Guarded::Silent,
                change: true,
            },
        ];
        let s = score(&doc, &doc.text, &proposals);
        assert_eq!(
            (s.harm(), s.silent_harm(), s.on_defects, s.notes),
            (2, 0, 1, 1)
        );
    }

    #[test]
    fn french_agreement_and_number_words() {
        let fr = "# Journal\n\nLes journaux sont conservés pendant trois mois dans le stockage chaud.\n\nLe service de sécurité est le seul à pouvoir lancer la purge manuellement.\n";
        let mut kinds = std::collections::BTreeSet::new();
        for seed in 0..40 {
            for d in plant("fr.md", fr, Lang::Fr, seed, 2).defects {
                kinds.insert(d.kind);
            }
        }
        assert!(kinds.contains(&DefectKind::Agreement), "{kinds:?}");
        assert!(kinds.contains(&DefectKind::WrongNumber), "{kinds:?}");
    }

    proptest! {
        /// The planted set depends only on the document and the seed.
        #[test]
        fn planting_is_deterministic(seed in any::<u64>()) {
            let a = plant("en.md", EN, Lang::En, seed, 5);
            let b = plant("en.md", EN, Lang::En, seed, 5);
            prop_assert_eq!(&a, &b);
            // And scoring the truth always fixes everything.
            let s = score(&a, EN, &[]);
            prop_assert_eq!(s.count(DefectStatus::Fixed), a.defects.len());
        }
    }
}
