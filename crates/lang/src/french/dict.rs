//! The French dictionary: Grammalecte's Hunspell files, bundled, read by
//! `spellbook` (the one module that names it).

/// The bundled affix file.
const AFF: &str = include_str!("../../dict/fr/fr.aff");
/// The bundled word list.
const DIC: &str = include_str!("../../dict/fr/fr.dic");

/// The loaded dictionary.
pub struct FrenchDict {
    dict: spellbook::Dictionary,
}

impl FrenchDict {
    /// Parses the bundled dictionary.
    pub fn load() -> Result<Self, String> {
        spellbook::Dictionary::new(AFF, DIC)
            .map(|dict| FrenchDict { dict })
            .map_err(|e| e.to_string())
    }

    /// `true` when the dictionary accepts `word` as written, with either
    /// apostrophe.
    pub fn check(&self, word: &str) -> bool {
        if self.dict.check(word) {
            return true;
        }
        let other = if word.contains('\'') {
            word.replace('\'', "’")
        } else if word.contains('’') {
            word.replace('’', "'")
        } else {
            return false;
        };
        self.dict.check(&other)
    }
}
