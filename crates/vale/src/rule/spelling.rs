//! `spelling`: read, not run. The host spells with its own speller and
//! takes the rule's options from [`SpellingOptions`].

use super::keys::Keys;
use super::pattern::compile;
use super::RuleError;

/// The filters Vale adds to a `spelling` rule's unless it says `custom:
/// true`: words it does not spell-check (`camelCase`-like words, words
/// ending in capitals, words with anything but letters, `_` and `'`).
pub const SPELLING_DEFAULT_FILTERS: [&str; 3] =
    [r"[A-Z]{1}[a-z]+[A-Z]+\w+", r"[A-Z]+$", r"[^a-zA-Z_']"];

/// A `spelling` rule's options, as written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpellingOptions {
    /// `dicpath`: the folder of the Hunspell dictionaries (absolute, or
    /// relative to `StylesPath` or to the working folder).
    pub dicpath: Option<String>,
    /// `dictionaries`: the dictionaries' names (`en_US`), in order.
    pub dictionaries: Vec<String>,
    /// `aff`: one dictionary's `.aff` file, with `dic`.
    pub aff: Option<String>,
    /// `dic`: one dictionary's `.dic` file, with `aff`.
    pub dic: Option<String>,
    /// `ignore`: word-list files of words to accept (absolute, or relative
    /// to `StylesPath` or its `config/ignore` folder).
    pub ignore: Vec<String>,
    /// `filters`: patterns of words not to check (each compiles).
    pub filters: Vec<String>,
    /// `custom`: only the rule's own filters, not
    /// [`SPELLING_DEFAULT_FILTERS`] too.
    pub custom: bool,
    /// `append`: the dictionaries add to Vale's default one rather than
    /// replace it.
    pub append: bool,
    /// `exceptions`: words to accept.
    pub exceptions: Vec<String>,
    /// `threshold`, as written (Vale reads it and does not use it).
    pub threshold: Option<usize>,
}

impl SpellingOptions {
    /// Reads a `spelling` rule's options.
    pub(crate) fn read(keys: &mut Keys) -> Result<SpellingOptions, RuleError> {
        let filters = keys.list("filters")?;
        for filter in &filters {
            compile(keys.rule(), "filters", filter)?;
        }
        Ok(SpellingOptions {
            dicpath: keys.text("dicpath")?,
            dictionaries: keys.list("dictionaries")?,
            aff: keys.text("aff")?,
            dic: keys.text("dic")?,
            ignore: keys.list("ignore")?,
            filters,
            custom: keys.flag("custom", false)?,
            append: keys.flag("append", false)?,
            exceptions: keys.list("exceptions")?,
            threshold: keys.count("threshold")?,
        })
    }

    /// The filters that apply: the rule's, then Vale's defaults unless
    /// `custom`.
    pub fn all_filters(&self) -> Vec<String> {
        let mut all = self.filters.clone();
        if !self.custom {
            all.extend(SPELLING_DEFAULT_FILTERS.iter().map(|f| (*f).to_owned()));
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load_rule;

    #[test]
    fn a_spelling_rule_gives_its_options_and_no_alert() {
        let loaded = load_rule(
            "House.Spelling",
            "extends: spelling\nmessage: \"Did you really mean '%s'?\"\nlevel: error\ndicpath: dicts\ndictionaries: [en_US, en_medical]\nignore: [ignore/words.txt]\nfilters: ['[pP]y.*\\b']\ncustom: true\n",
        )
        .expect("loads");
        assert!(loaded.unsupported.is_empty(), "{:?}", loaded.unsupported);
        let rule = loaded.rule;
        let options = rule.spelling().expect("a spelling rule");
        assert_eq!(options.dicpath.as_deref(), Some("dicts"));
        assert_eq!(options.dictionaries, ["en_US", "en_medical"]);
        assert_eq!(options.ignore, ["ignore/words.txt"]);
        assert_eq!(options.all_filters(), [r"[pP]y.*\b"]);
        assert!(rule.check("Teh wrold").is_empty());
        let plain = load_rule("House.S", "extends: spelling\nmessage: x\n").expect("loads");
        let plain = plain.rule.spelling().expect("options").all_filters();
        assert_eq!(plain.len(), SPELLING_DEFAULT_FILTERS.len());
        let err = load_rule("House.S", "extends: spelling\nmessage: x\nfilters: ['(']\n")
            .expect_err("bad filter");
        assert!(err.to_string().starts_with("House.S: `filters`"), "{err}");
    }
}
