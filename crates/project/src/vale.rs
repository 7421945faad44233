//! The `[vale]` table of `koas.toml`, and the reading of a project's Vale
//! configuration: its `.vale.ini`, the rules of the styles it names under
//! its `StylesPath`, and its vocabularies.
//!
//! ```toml
//! [vale]
//! config = "docs/.vale.ini"   # relative to koas.toml; default: found upward
//! enabled = false             # run no Vale style, even with a .vale.ini
//! ```
//!
//! Without `config`, the nearest `.vale.ini` (or `_vale.ini`) upward from
//! the `koas.toml`'s folder is used, or from the document's without a
//! `koas.toml`, as Vale finds it.

use koas_vale::{ValeIni, ValeSources, VocabText};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The names Vale gives its configuration file, in the order it looks.
pub const VALE_CONFIG_FILES: [&str; 2] = [".vale.ini", "_vale.ini"];

/// The largest `.vale.ini`, rule or vocabulary file read (1 MiB each).
pub const MAX_VALE_FILE_BYTES: u64 = 1 << 20;

/// The most rules read from a project's styles: the largest public style
/// has about a hundred.
pub const MAX_VALE_RULES: usize = 5_000;

/// The `[vale]` table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ValeSection {
    /// The `.vale.ini` to use, relative to `koas.toml`; `None`: found
    /// upward.
    pub config: Option<PathBuf>,
    /// `false`: no Vale style runs, whatever `.vale.ini` is found.
    pub enabled: bool,
}

impl Default for ValeSection {
    fn default() -> Self {
        ValeSection {
            config: None,
            enabled: true,
        }
    }
}

/// The nearest Vale configuration file in `dir` or a folder above it.
pub fn find_vale_config(dir: &Path) -> Option<PathBuf> {
    let absolute = if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        std::env::current_dir().ok()?.join(dir)
    };
    absolute.ancestors().find_map(|d| {
        VALE_CONFIG_FILES
            .iter()
            .map(|name| d.join(name))
            .find(|p| p.is_file())
    })
}

impl ValeSection {
    /// The Vale configuration this table chooses for a project whose
    /// `koas.toml` is in `base` (or, without one, for a document in
    /// `base`), read; `None` when turned off or when none is found. A
    /// configured file that is missing, or any file that cannot be read,
    /// is an error naming it.
    pub fn read(&self, base: &Path) -> Result<Option<ValeSources>, String> {
        match self.ini(base) {
            Some(ini) => read_sources(&ini).map(Some),
            None => Ok(None),
        }
    }

    /// The `.vale.ini` this table chooses for a project in `base`: the
    /// configured one, else the nearest; `None` when turned off or none
    /// is found.
    fn ini(&self, base: &Path) -> Option<PathBuf> {
        if !self.enabled {
            return None;
        }
        match &self.config {
            Some(path) => Some(base.join(path)),
            None => find_vale_config(base),
        }
    }

    /// The files [`ValeSection::read`] reads for a project in `base`: the
    /// `.vale.ini`, each style's folder and rule files, the vocabularies
    /// (for an editor to notice their changes); none when turned off,
    /// absent or unreadable.
    pub fn files(&self, base: &Path) -> Vec<PathBuf> {
        let Some(ini) = self.ini(base) else {
            return Vec::new();
        };
        let mut files = vec![ini.clone()];
        if let Ok((_, read)) = read_listing(&ini) {
            files.extend(read);
        }
        files
    }
}

/// Reads the `.vale.ini` at `ini`, every rule (`*.yml`, `*.yaml`) of the
/// styles its sections name under its `StylesPath`, and its vocabularies
/// (`<StylesPath>/config/vocabularies/<Name>/{accept,reject}.txt`, or the
/// older `<StylesPath>/Vocab/<Name>/`).
pub fn read_sources(ini: &Path) -> Result<ValeSources, String> {
    read_listing(ini).map(|(sources, _)| sources)
}

/// [`read_sources`], with every file read besides the `.vale.ini`.
fn read_listing(ini: &Path) -> Result<(ValeSources, Vec<PathBuf>), String> {
    let mut read: Vec<PathBuf> = Vec::new();
    let ini_text = read_text(ini)?;
    let parsed = ValeIni::parse(&ini_text).map_err(|e| format!("{}: {e}", ini.display()))?;
    let folder = ini.parent().unwrap_or(Path::new("."));
    let styles_path = parsed.styles_path.clone().unwrap_or_else(|| ".".to_owned());
    let styles_dir = folder.join(&styles_path);
    let mut sources = ValeSources {
        ini_path: ini.display().to_string(),
        ini: ini_text,
        styles_path: styles_dir.display().to_string(),
        ..ValeSources::default()
    };
    for style in styles_named(&parsed) {
        if style == "Vale" || style == "config" {
            continue;
        }
        checked_name(&style, ini)?;
        let dir = styles_dir.join(&style);
        // A style that is not there is told when the rules are compiled.
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        // The folder too: a rule added to it changes its time.
        read.push(dir.clone());
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "yml" || e == "yaml"))
            .collect();
        files.sort();
        for file in files {
            let Some(rule) = file.file_stem().and_then(|s| s.to_str()) else {
                continue;
            };
            if sources.rules.len() >= MAX_VALE_RULES {
                return Err(format!(
                    "{}: over {MAX_VALE_RULES} rules under {}, not read",
                    ini.display(),
                    styles_dir.display()
                ));
            }
            sources
                .rules
                .insert(format!("{style}.{rule}"), read_text(&file)?);
            read.push(file);
        }
    }
    for name in &parsed.vocab {
        checked_name(name, ini)?;
        let dirs = [
            styles_dir.join("config/vocabularies").join(name),
            styles_dir.join("Vocab").join(name),
        ];
        let Some(dir) = dirs.iter().find(|d| d.is_dir()) else {
            return Err(format!(
                "{}: Vocab `{name}`: no folder {} (nor {})",
                ini.display(),
                dirs[0].display(),
                dirs[1].display()
            ));
        };
        let optional = |file: &str| -> Result<(String, Option<PathBuf>), String> {
            let path = dir.join(file);
            if path.exists() {
                read_text(&path).map(|text| (text, Some(path)))
            } else {
                Ok((String::new(), None))
            }
        };
        let (accept, accept_file) = optional("accept.txt")?;
        let (reject, reject_file) = optional("reject.txt")?;
        read.extend(accept_file.into_iter().chain(reject_file));
        sources
            .vocab
            .insert(name.clone(), VocabText { accept, reject });
    }
    Ok((sources, read))
}

/// The styles a `.vale.ini` names: in `BasedOnStyles` and as the first
/// part of a switch (`Google.Latin = YES` turns on one rule of a style no
/// section builds on).
fn styles_named(ini: &ValeIni) -> Vec<String> {
    let mut out: Vec<String> = ini
        .sections
        .iter()
        .flat_map(|s| {
            s.based_on.iter().cloned().chain(
                s.switches
                    .iter()
                    .map(|(name, _)| name.split('.').next().unwrap_or(name).to_owned()),
            )
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// A style or vocabulary name is one folder's name: never a path.
fn checked_name(name: &str, ini: &Path) -> Result<(), String> {
    let plain =
        !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0']);
    if plain {
        Ok(())
    } else {
        Err(format!(
            "{}: `{name}` is not a style or vocabulary name (one folder's name)",
            ini.display()
        ))
    }
}

/// A regular UTF-8 file of at most [`MAX_VALE_FILE_BYTES`]; a FIFO or a
/// huge file is refused before it is read.
fn read_text(path: &Path) -> Result<String, String> {
    let bytes = crate::read::read_regular(path, MAX_VALE_FILE_BYTES)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8 text", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("mkdir");
        }
        std::fs::write(path, text).expect("write");
    }

    #[test]
    fn reads_the_styles_a_project_names_and_its_vocabulary() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        write(
            &root.join(".vale.ini"),
            "StylesPath = styles\nVocab = Docs\n[*.md]\nBasedOnStyles = Vale, Team\nOther.One = YES\n",
        );
        write(&root.join("styles/Team/Will.yml"), "extends: existence\n");
        write(&root.join("styles/Team/notes.txt"), "not a rule");
        write(&root.join("styles/Other/One.yaml"), "extends: existence\n");
        write(&root.join("styles/Unused/Two.yml"), "extends: existence\n");
        write(
            &root.join("styles/config/vocabularies/Docs/accept.txt"),
            "JavaScript\n",
        );
        let found = find_vale_config(&root.join("a/b")).expect("found upward");
        assert_eq!(found, root.join(".vale.ini"));
        let sources = read_sources(&found).expect("reads");
        let names: Vec<&str> = sources.rules.keys().map(String::as_str).collect();
        assert_eq!(names, ["Other.One", "Team.Will"]);
        assert_eq!(sources.vocab["Docs"].accept, "JavaScript\n");
        assert_eq!(sources.vocab["Docs"].reject, "");
        // Turned off, or configured and missing.
        let off = ValeSection {
            config: None,
            enabled: false,
        };
        assert_eq!(off.read(root), Ok(None));
        let missing = ValeSection {
            config: Some("nope.ini".into()),
            enabled: true,
        };
        let err = missing.read(root).expect_err("missing");
        assert!(err.contains("nope.ini"), "{err}");
    }

    #[test]
    fn a_style_name_that_is_a_path_and_a_missing_vocabulary_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ini = dir.path().join(".vale.ini");
        write(&ini, "StylesPath = s\n[*]\nBasedOnStyles = ../../etc\n");
        let err = read_sources(&ini).expect_err("a path");
        assert!(err.contains("`../../etc` is not a style"), "{err}");
        write(
            &ini,
            "StylesPath = s\nVocab = Docs\n[*]\nBasedOnStyles = Vale\n",
        );
        let err = read_sources(&ini).expect_err("no vocabulary");
        assert!(err.contains("Vocab `Docs`"), "{err}");
    }
}
