//! The project's words: where a document's words file is, reading it into
//! the checker's settings when the project has no `koas.toml`, and the
//! editor's "add to the project's words" (`koas.addWord`).
//!
//! The words file is the first `[language] words` entry of the nearest
//! `koas.toml` (relative to it), else `koas-words.txt` beside that
//! `koas.toml`, else `koas-words.txt` in the client's workspace folder
//! holding the document. It is written through a held folder
//! ([`Beneath`]): a link on the way is refused, never followed out of the
//! project, and a path leaving the folder (`..`, absolute) is refused.

use koas_md_scan::config::{
    find_project_config, LanguageSection, ProjectConfig, DEFAULT_WORDS_FILE, MAX_WORDS_FILE_BYTES,
};
use koas_orchestrator::fsio::{Access, Beneath, EntryKind};
use koas_orchestrator::guarded_read::read_regular_file;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The command that adds a word: arguments `[uri, word]`.
pub const ADD_WORD: &str = "koas.addWord";

/// The longest word the editor may add, in characters.
pub const MAX_WORD_CHARS: usize = 64;

/// The largest `koas.toml` read to find the words file (as
/// `ProjectConfig::load` reads it).
const MAX_KOAS_TOML_BYTES: u64 = 1 << 20;

/// `word` when it is one word: letters, apostrophes and hyphens, at least
/// one letter, at most [`MAX_WORD_CHARS`] characters. The word comes from
/// the client, so anything else (a line break, `#`, a pattern) is refused
/// rather than written into the words file.
pub fn valid_word(word: &str) -> Result<&str, String> {
    let count = word.chars().count();
    if count == 0 {
        return Err("the word is empty".into());
    }
    if count > MAX_WORD_CHARS {
        return Err(format!(
            "the word is {count} characters long, over {MAX_WORD_CHARS}"
        ));
    }
    if let Some(c) = word
        .chars()
        .find(|c| !(c.is_alphabetic() || matches!(c, '\'' | '’' | '-')))
    {
        return Err(format!(
            "“{}” is not one word: {c:?} is neither a letter, an apostrophe nor a hyphen",
            word.escape_debug()
        ));
    }
    if !word.chars().any(char::is_alphabetic) {
        return Err(format!("“{word}” has no letter"));
    }
    Ok(word)
}

/// The workspace folder holding `doc`: the deepest of `roots` it is in.
pub fn root_of<'a>(doc: &Path, roots: &'a [PathBuf]) -> Option<&'a PathBuf> {
    roots
        .iter()
        .filter(|r| doc.starts_with(r))
        .max_by_key(|r| r.components().count())
}

/// Where the project's words are written: the file `rel` below the
/// folder `base`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WordsFile {
    /// The folder of `koas.toml`, or the workspace folder.
    pub base: PathBuf,
    /// The file, relative to `base`.
    pub rel: PathBuf,
}

impl WordsFile {
    /// The file's path (for messages and for watching it).
    pub fn path(&self) -> PathBuf {
        self.base.join(&self.rel)
    }
}

/// The folder of `config` (a `koas.toml`) and its `[language]` table as
/// written (`ProjectConfig::load` reads the words files and forgets them).
fn language_of(config: &Path) -> Result<(PathBuf, LanguageSection), String> {
    let bytes = read_regular_file(config, MAX_KOAS_TOML_BYTES)
        .map_err(|e| format!("{}: {e}", config.display()))?;
    let text =
        String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8 text", config.display()))?;
    let parsed = ProjectConfig::from_toml_str(&text, config).map_err(|e| e.to_string())?;
    let base = config.parent().unwrap_or(Path::new(".")).to_path_buf();
    Ok((base, parsed.language))
}

/// The words file of the project `config` (a `koas.toml`): its first
/// `[language] words` entry, else [`DEFAULT_WORDS_FILE`] beside it.
pub fn of_config(config: &Path) -> Result<WordsFile, String> {
    let (base, language) = language_of(config)?;
    let rel = language
        .words
        .first()
        .cloned()
        .unwrap_or_else(|| PathBuf::from(DEFAULT_WORDS_FILE));
    Ok(WordsFile { base, rel })
}

/// Every words file and Vale style file the checker of `config` reads
/// (to notice their changes); none when `config` cannot be read (the
/// checker fails then).
pub fn files_of_config(config: &Path) -> Vec<PathBuf> {
    let Ok(bytes) = read_regular_file(config, MAX_KOAS_TOML_BYTES) else {
        return Vec::new();
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return Vec::new();
    };
    let Ok(parsed) = ProjectConfig::from_toml_str(&text, config) else {
        return Vec::new();
    };
    let base = config.parent().unwrap_or(Path::new("."));
    parsed
        .language
        .words_files(base)
        .into_iter()
        .map(|(path, _)| path)
        .chain(parsed.vale.files(base))
        .collect()
}

/// The words file of the document `doc`: of its `koas.toml`, else of its
/// workspace folder `root`; `None` with neither.
pub fn of_document(doc: &Path, root: Option<&Path>) -> Result<Option<WordsFile>, String> {
    match find_project_config(doc) {
        Some(config) => of_config(&config).map(Some),
        None => Ok(root.map(|base| WordsFile {
            base: base.to_path_buf(),
            rel: PathBuf::from(DEFAULT_WORDS_FILE),
        })),
    }
}

/// The settings of a document without `koas.toml`: the defaults, with the
/// words of `koas-words.txt` in its workspace folder `root` (the file the
/// editor's "add to the project's words" writes there).
pub fn config_without_toml(root: Option<&Path>) -> Result<ProjectConfig, String> {
    let mut config = ProjectConfig::default();
    if let Some(root) = root {
        config.language.read_words(root)?;
    }
    Ok(config)
}

/// Appends `word` on a line of its own to `file`, creating it (and its
/// folders) when missing. `Ok(false)` when the file already lists it. A
/// link on the way, a FIFO or a folder at its place, a path leaving
/// `base` and a file that would grow over [`MAX_WORDS_FILE_BYTES`] (the
/// checker would refuse to read it) are refused, nothing written.
pub fn add_word(file: &WordsFile, word: &str) -> Result<bool, String> {
    let word = valid_word(word)?;
    let shown = file.path();
    let fail = |e: koas_orchestrator::fsio::FsError| e.to_string();
    let folder = Beneath::open(&file.base).map_err(fail)?;
    let existing = match folder.entry(&file.rel).map_err(fail)? {
        None => String::new(),
        Some(EntryKind::File(len)) => {
            if len + word.len() as u64 + 2 > MAX_WORDS_FILE_BYTES {
                return Err(format!(
                    "{}: over {MAX_WORDS_FILE_BYTES} bytes with the word, not written",
                    shown.display()
                ));
            }
            let mut bytes = Vec::new();
            folder
                .open_file(&file.rel, Access::default())
                .map_err(fail)?
                .take(MAX_WORDS_FILE_BYTES + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| format!("{}: {e}", shown.display()))?;
            String::from_utf8(bytes)
                .map_err(|_| format!("{}: not UTF-8 text, not written", shown.display()))?
        }
        Some(EntryKind::Link) => {
            return Err(format!(
                "{} is a symbolic link: koas writes the project's words into no link; put the file itself there",
                shown.display()
            ))
        }
        Some(EntryKind::Dir | EntryKind::Other) => {
            return Err(format!(
                "{} is not a regular file, not written",
                shown.display()
            ))
        }
    };
    // As the checker reads the file: `#` starts a comment.
    if existing
        .lines()
        .any(|l| l.split_once('#').map_or(l, |(w, _)| w).trim() == word)
    {
        return Ok(false);
    }
    let mut line = String::new();
    if !existing.is_empty() && !existing.ends_with('\n') {
        line.push('\n');
    }
    line.push_str(word);
    line.push('\n');
    folder.append(&file.rel, line.as_bytes()).map_err(fail)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_word_only() {
        assert_eq!(valid_word("explians"), Ok("explians"));
        assert_eq!(valid_word("l’équipe"), Ok("l’équipe"));
        assert_eq!(valid_word("e-mail's"), Ok("e-mail's"));
        for bad in [
            "",
            "two words",
            "a\nb",
            "x#y",
            "[Kk]ube",
            "--",
            "a.b",
            "a/b",
        ] {
            assert!(valid_word(bad).is_err(), "{bad:?}");
        }
        assert!(valid_word(&"a".repeat(MAX_WORD_CHARS)).is_ok());
        assert!(valid_word(&"a".repeat(MAX_WORD_CHARS + 1)).is_err());
    }

    #[test]
    fn the_words_file_follows_koas_toml_then_the_workspace() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().to_path_buf();
        std::fs::create_dir_all(root.join("p/docs")).expect("mkdir");
        let doc = root.join("p/docs/a.md");
        // No koas.toml: the workspace folder's koas-words.txt.
        assert_eq!(
            of_document(&doc, Some(&root)),
            Ok(Some(WordsFile {
                base: root.clone(),
                rel: DEFAULT_WORDS_FILE.into()
            }))
        );
        assert_eq!(of_document(&doc, None), Ok(None));
        // A koas.toml: beside it, or its first words entry.
        std::fs::write(root.join("p/koas.toml"), "").expect("write");
        assert_eq!(
            of_document(&doc, Some(&root)).map(|f| f.map(|f| f.path())),
            Ok(Some(root.join("p").join(DEFAULT_WORDS_FILE)))
        );
        std::fs::write(
            root.join("p/koas.toml"),
            "[language]\nwords = [\"styles/a.txt\", \"b.txt\"]\n",
        )
        .expect("write");
        assert_eq!(
            of_document(&doc, Some(&root)).map(|f| f.map(|f| f.path())),
            Ok(Some(root.join("p/styles/a.txt")))
        );
        assert_eq!(
            root_of(&doc, &[root.clone(), root.join("p")]),
            Some(&root.join("p"))
        );
        assert_eq!(
            root_of(Path::new("/elsewhere/a.md"), std::slice::from_ref(&root)),
            None
        );
    }

    #[test]
    fn adding_appends_once_on_its_own_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = WordsFile {
            base: dir.path().to_path_buf(),
            rel: "styles/words.txt".into(),
        };
        assert_eq!(add_word(&file, "explians"), Ok(true));
        assert_eq!(add_word(&file, "explians"), Ok(false));
        std::fs::write(file.path(), "kubelet # the agent").expect("write");
        assert_eq!(add_word(&file, "kubelet"), Ok(false));
        assert_eq!(add_word(&file, "zorblet"), Ok(true));
        assert_eq!(
            std::fs::read_to_string(file.path()).expect("read"),
            "kubelet # the agent\nzorblet\n"
        );
        assert!(add_word(&file, "two words").is_err());
        // The checker reads what was written.
        let mut config = ProjectConfig::default();
        config.language.words = vec!["styles/words.txt".into()];
        config.language.read_words(dir.path()).expect("reads");
        assert!(config.language.accept.contains(&"zorblet".to_string()));
    }

    #[cfg(unix)]
    #[test]
    fn links_paths_out_and_large_files_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let outside = tempfile::tempdir().expect("tempdir");
        let target = outside.path().join("victim.txt");
        std::fs::write(&target, "x\n").expect("write");
        let base = dir.path().to_path_buf();
        std::os::unix::fs::symlink(&target, base.join(DEFAULT_WORDS_FILE)).expect("link");
        std::os::unix::fs::symlink(outside.path(), base.join("out")).expect("link");
        for rel in [DEFAULT_WORDS_FILE, "out/w.txt", "../w.txt", "/tmp/w.txt"] {
            let file = WordsFile {
                base: base.clone(),
                rel: rel.into(),
            };
            assert!(add_word(&file, "zorblet").is_err(), "{rel}");
        }
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "x\n");
        assert!(!outside.path().join("w.txt").exists());
        let big = WordsFile {
            base: base.clone(),
            rel: "big.txt".into(),
        };
        let f = std::fs::File::create(big.path()).expect("create");
        f.set_len(MAX_WORDS_FILE_BYTES).expect("grow");
        let err = add_word(&big, "zorblet").expect_err("too large");
        assert!(err.contains("over"), "{err}");
    }

    #[test]
    fn without_koas_toml_the_workspace_words_are_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join(DEFAULT_WORDS_FILE), "zorblet\n").expect("write");
        let config = config_without_toml(Some(dir.path())).expect("reads");
        assert_eq!(config.language.accept, vec!["zorblet".to_string()]);
        assert!(config_without_toml(None)
            .expect("defaults")
            .language
            .accept
            .is_empty());
    }
}
