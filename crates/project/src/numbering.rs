//! `NumberingConfig`: the settings of `md_numbering_control`.

use serde::{Deserialize, Serialize};

/// Settings of the numbering checks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NumberingConfig {
    /// Report a heading more than one level below the previous one.
    pub check_heading_levels: bool,
    /// Level skips the project's documents make on purpose, as
    /// `"FROM-TO"` (`"3-6"`: a level-6 heading right under a level-3 one,
    /// as a template prescribes): never reported.
    pub accept_level_skips: Vec<String>,
    /// Report references to a missing figure, table or equation only for
    /// kinds the document captions at least once (a document that never
    /// numbers its tables is not asked to).
    pub missing_target_needs_captions: bool,
    /// Words that name a figure in captions and references.
    pub figure_words: Vec<String>,
    /// Words that name a table.
    pub table_words: Vec<String>,
    /// Words that name an equation.
    pub equation_words: Vec<String>,
}

impl Default for NumberingConfig {
    fn default() -> Self {
        let strings = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        NumberingConfig {
            check_heading_levels: true,
            accept_level_skips: Vec::new(),
            missing_target_needs_captions: true,
            figure_words: strings(&["Figure", "Fig."]),
            table_words: strings(&["Table", "Tableau"]),
            equation_words: strings(&["Equation", "Équation", "Eq.", "Éq."]),
        }
    }
}
