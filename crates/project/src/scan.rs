//! `ScanConfig`: the settings of `md_consistency_scan`.

use serde::{Deserialize, Serialize};

/// The ten default AI-leftover patterns: phrases a chat model leaves in a
/// text it wrote or edited ("As an AI", "I hope this helps", …).
pub const DEFAULT_AI_LEFTOVER_PATTERNS: [&str; 10] = [
    r"(?i)\bAs an AI\b",
    r"(?i)\bAs a language model\b",
    r"(?i)\bIn conclusion\b",
    r"(?i)\bSure,?\s+here['’]?s\b",
    r"(?i)\bI hope this helps\b",
    r"(?i)\bLet me know if\b",
    r"(?i)\bHere is (?:a|an|the)\b",
    r"(?i)\bCertainly!",
    r"(?i)\bAbsolutely!",
    r"(?i)\bGreat question",
];

/// Settings of the consistency scan. Every field has a default; a config
/// file or a pipeline sets only what it changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScanConfig {
    /// Regular expressions (Rust `regex` syntax) of phrases assistants
    /// leave behind. A match alone is not a finding: ordinary prose says
    /// "here is the" and "in conclusion" too. The line is reported when
    /// its sentence speaks to whoever asked for the text (see
    /// `ai_leftovers`); with `ai_leftover_phrase_matches` the other matches
    /// are reported as `info`. Replaces the defaults when set.
    pub ai_leftover_patterns: Vec<String>,
    /// Phrases a project knows to be leftovers in its own documents
    /// ("voici le texte"): every match is reported, without judging the
    /// sentence.
    pub extra_ai_leftover_patterns: Vec<String>,
    /// Also report, as `info`, a match of `ai_leftover_patterns` in a
    /// sentence that does not speak to the asker. Off by default: on real
    /// documents such matches were ordinary prose every time.
    pub ai_leftover_phrase_matches: bool,
    /// Paragraphs shorter than this (in characters, whitespace normalised)
    /// are never reported as duplicates.
    pub duplicate_min_chars: usize,
    /// A paragraph text occurring this many times or more is deliberate
    /// boilerplate and not reported (0: report every repeat).
    pub duplicate_boilerplate_repeats: usize,
    /// A repeated paragraph shorter than this (in characters) is reported
    /// only when both copies are in the same section.
    pub duplicate_short_chars: usize,
    /// A line containing one of these words names a deleted section; its
    /// cross-references are not checked (a reference to a section marked
    /// deleted, e.g. "§3 SUPPRIMÉ", is deliberate, not broken).
    pub deleted_markers: Vec<String>,
    /// Words naming another document: a reference right after one of them
    /// (within three words) is not checked ("RFC 9110 Section 5", "specs
    /// §14"). Lowercase.
    pub external_document_words: Vec<String>,
    /// Check section references only when at least one heading carries an
    /// explicit number (a document without numbered headings cannot be
    /// referenced by number).
    pub references_need_numbered_headings: bool,
    /// How many lines after a count the table it describes may start.
    pub claim_window_lines: u32,
    /// The smallest count checked against a table.
    pub claim_min: u32,
    /// The largest count checked against a table.
    pub claim_max: u32,
    /// A share column adding up to less than this (in %) is reported.
    pub percent_min: f64,
    /// A share column adding up to more than this (in %) is reported.
    pub percent_max: f64,
    /// Header words that mark a column of shares of a whole (lowercase;
    /// a header matches when one of its words starts with one of these).
    pub share_headers: Vec<String>,
    /// Header words that mark a column of independent rates (coverage,
    /// success rate…), which need not add up to 100 % (matched like
    /// `share_headers`).
    pub rate_headers: Vec<String>,
    /// Term pairs `[french, english]`; a section using both forms drifts.
    /// Replaces the defaults when set.
    pub term_pairs: Vec<(String, String)>,
    /// Term pairs added to `term_pairs` (keeps the defaults).
    pub extra_term_pairs: Vec<(String, String)>,
    /// Report terminology drift (`info`). A project that mixes the two
    /// forms on purpose turns it off here or with `check.disable`.
    pub terminology_drift: bool,
    /// Anchors that exist on the rendered page although no heading of the
    /// file has them: a site generator adds them, or another fragment of
    /// the same page holds them. `*` matches any run of characters
    /// (`"api-*"`); a leading `#` is ignored.
    pub extra_anchors: Vec<String>,
}

impl Default for ScanConfig {
    // Long because it is one struct literal: every setting's default, in
    // the order of the fields.
    fn default() -> Self {
        let strings = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        ScanConfig {
            ai_leftover_patterns: strings(&DEFAULT_AI_LEFTOVER_PATTERNS),
            extra_ai_leftover_patterns: Vec::new(),
            ai_leftover_phrase_matches: false,
            duplicate_min_chars: 40,
            duplicate_boilerplate_repeats: 3,
            duplicate_short_chars: 100,
            deleted_markers: strings(&["SUPPRIMÉ", "SUPPRIMÉE", "SUPPRIME"]),
            references_need_numbered_headings: true,
            external_document_words: strings(&[
                "rfc",
                "iso",
                "iec",
                "ieee",
                "spec",
                "specs",
                "specification",
                "standard",
                "norme",
                "gdpr",
                "rgpd",
                "directive",
                "regulation",
                "règlement",
                "loi",
                "law",
                "act",
                "cfr",
                "usc",
            ]),
            claim_window_lines: 5,
            claim_min: 2,
            claim_max: 10,
            percent_min: 95.0,
            percent_max: 105.0,
            share_headers: strings(&[
                "share",
                "part",
                "répartition",
                "repartition",
                "proportion",
                "distribution",
                "breakdown",
                "weight",
                "poids",
                "pourcentage",
                "percentage",
                "percent",
                "allocation",
                "split",
            ]),
            rate_headers: strings(&[
                "coverage",
                "couverture",
                "taux",
                "rate",
                "accuracy",
                "précision",
                "precision",
                "recall",
                "rappel",
                "success",
                "réussite",
                "progress",
                "avancement",
                "completion",
                "utilisation",
                "usage",
                "confidence",
                "confiance",
                "score",
                "probabilit",
                "growth",
                "croissance",
                "reduction",
                "réduction",
                "gain",
                "change",
                "variation",
                "delta",
                "error",
                "erreur",
                "improvement",
                "amélioration",
                "saving",
                "économie",
                "threshold",
                "seuil",
                "cpu",
                "memory",
                "mémoire",
                "load",
                "charge",
            ]),
            term_pairs: vec![
                ("code mort".into(), "dead code".into()),
                ("refonte".into(), "refactoring".into()),
                ("tableau de bord".into(), "dashboard".into()),
                ("jeu de données".into(), "dataset".into()),
                ("base de données".into(), "database".into()),
                ("journal d'audit".into(), "audit trail".into()),
                ("déploiement continu".into(), "continuous deployment".into()),
                (
                    "intégration continue".into(),
                    "continuous integration".into(),
                ),
                ("dette technique".into(), "technical debt".into()),
                ("mise en cache".into(), "caching".into()),
                ("courriel".into(), "e-mail".into()),
            ],
            extra_term_pairs: Vec::new(),
            terminology_drift: true,
            extra_anchors: Vec::new(),
        }
    }
}

impl ScanConfig {
    /// The term pairs in force: the configured list plus the extra ones.
    pub fn effective_term_pairs(&self) -> impl Iterator<Item = &(String, String)> {
        self.term_pairs.iter().chain(self.extra_term_pairs.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_hold_the_ten_spec_patterns_and_spec_term_pairs() {
        let c = ScanConfig::default();
        assert_eq!(c.ai_leftover_patterns.len(), 10);
        let pairs: Vec<_> = c.effective_term_pairs().collect();
        assert!(pairs.contains(&&("code mort".to_string(), "dead code".to_string())));
        assert!(pairs.contains(&&("refonte".to_string(), "refactoring".to_string())));
    }

    #[test]
    fn partial_config_keeps_other_defaults_and_refuses_unknown_keys() {
        let c: ScanConfig =
            serde_json::from_value(serde_json::json!({"claim_window_lines": 8})).expect("valid");
        assert_eq!(c.claim_window_lines, 8);
        assert_eq!(c.claim_max, 10);
        let bad = serde_json::from_value::<ScanConfig>(serde_json::json!({"claim_windw": 8}));
        assert!(bad.is_err());
    }

    #[test]
    fn term_pairs_are_arrays_of_two_strings_in_json() {
        let v = serde_json::to_value(ScanConfig::default()).expect("serializes");
        assert_eq!(
            v["term_pairs"][0],
            serde_json::json!(["code mort", "dead code"])
        );
    }
}
