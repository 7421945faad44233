//! The `[language]` table of `koas.toml`: the settings of
//! `md_language_check` (spelling, grammar, French typography).
//!
//! ```toml
//! [language]
//! languages = ["en", "fr"]      # the languages a paragraph may be checked in
//! dialect = "british"           # English dialect of the grammar rules
//! typography = false            # French: missing space before ; : ! ? and inside « »
//! typography_strict = true      # French: also a plain space where a no-break one belongs
//! accept = ["kubelet", "[Kk]ubectl"]   # never misspellings (words or patterns)
//! reject = ["utilize"]          # always reported
//! words = ["styles/accept.txt"] # word files (one entry a line), relative to koas.toml
//! ```
//!
//! Without `words`, the file `koas-words.txt` beside `koas.toml` is read
//! when it exists (the editor's "add to the project's words" writes it).

use koas_lang::{Dialect, Lang, LanguageConfig};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The words file read by default, beside `koas.toml`.
pub const DEFAULT_WORDS_FILE: &str = "koas-words.txt";

/// The largest words file read (4 MiB: a project's words are a few KiB).
pub const MAX_WORDS_FILE_BYTES: u64 = 4 << 20;

/// The `[language]` table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LanguageSection {
    /// The languages a paragraph may be checked in.
    pub languages: Vec<Lang>,
    /// The English dialect.
    pub dialect: Dialect,
    /// Report misspellings.
    pub spelling: bool,
    /// Report doubled words, articles and the other grammar rules.
    pub grammar: bool,
    /// Report French typography: a missing space before `;` `:` `!` `?`
    /// or inside « ».
    pub typography: bool,
    /// Also report a plain space where French typography wants a
    /// no-break one (off: most French typed on a keyboard has plain ones).
    pub typography_strict: bool,
    /// How often a word the dictionary lacks must appear in the document
    /// to count as its own vocabulary (0: never).
    pub document_words: u32,
    /// Also run Harper's agreement and confusion rules on English (about
    /// a second to load per process).
    pub harper_rules: bool,
    /// Words (or whole-word patterns) that are never misspellings, with
    /// the entries of the words files once read.
    pub accept: Vec<String>,
    /// Words (or patterns) always reported.
    pub reject: Vec<String>,
    /// Words files, relative to `koas.toml`.
    pub words: Vec<PathBuf>,
    /// The project's Vale configuration, read by the host from the
    /// `.vale.ini` that `[vale]` chooses (a `koas.toml` never sets it
    /// here): the language kernel runs its styles on the same prose.
    pub styles: Option<koas_vale::ValeSources>,
}

impl Default for LanguageSection {
    fn default() -> Self {
        let d = LanguageConfig::default();
        LanguageSection {
            languages: d.languages,
            dialect: d.dialect,
            spelling: d.spelling,
            grammar: d.grammar,
            typography: d.typography,
            typography_strict: d.typography_strict,
            document_words: d.document_words,
            harper_rules: d.harper_rules,
            accept: Vec::new(),
            reject: Vec::new(),
            words: Vec::new(),
            styles: None,
        }
    }
}

impl LanguageSection {
    /// The library's options.
    pub fn options(&self) -> LanguageConfig {
        LanguageConfig {
            languages: self.languages.clone(),
            dialect: self.dialect,
            spelling: self.spelling,
            grammar: self.grammar,
            typography: self.typography,
            typography_strict: self.typography_strict,
            document_words: self.document_words,
            harper_rules: self.harper_rules,
        }
    }

    /// The words files this section reads, resolved against `base` (the
    /// folder of `koas.toml`): `words`, or the default file when it exists.
    pub fn words_files(&self, base: &Path) -> Vec<(PathBuf, bool)> {
        if self.words.is_empty() {
            let default = base.join(DEFAULT_WORDS_FILE);
            vec![(default, false)]
        } else {
            self.words.iter().map(|w| (base.join(w), true)).collect()
        }
    }

    /// Reads the words files into `accept` (each entry once) and empties
    /// `words`: what a kernel's config carries. A configured file that is
    /// missing, not a regular file or too large is an error naming it;
    /// the default file may be absent.
    pub fn read_words(&mut self, base: &Path) -> Result<(), String> {
        for (path, required) in self.words_files(base) {
            let absent = matches!(std::fs::metadata(&path),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound);
            if !required && absent {
                continue;
            }
            let bytes = crate::read::read_regular(&path, MAX_WORDS_FILE_BYTES)
                .map_err(|e| format!("[language] words: {}: {e}", path.display()))?;
            let text = String::from_utf8(bytes)
                .map_err(|_| format!("[language] words: {}: not UTF-8 text", path.display()))?;
            for entry in koas_lang::parse_words_file(&text) {
                if !self.accept.contains(&entry) {
                    self.accept.push(entry);
                }
            }
        }
        self.words.clear();
        Ok(())
    }
}
