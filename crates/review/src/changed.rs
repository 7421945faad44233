//! `--changed-since REV`: the lines of a file that are new or changed
//! since a git revision, so that a check reports only on them (a pull
//! request's lines, a commit's).
//!
//! The file as it is on disk is compared with the same file in `REV`
//! (under its old name when git sees it renamed since), line by line. A
//! file `REV` does not have, tracked or not, is new: all its lines count.
//! git is asked through its plumbing commands with `-z` output, so names
//! with spaces or any other character are read as they are.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Why the changed lines of a file are unknown.
#[derive(Debug, thiserror::Error)]
pub enum ChangedError {
    /// git could not be started.
    #[error("--changed-since needs git on the PATH: {0}")]
    NoGit(std::io::Error),
    /// The file is not inside a git working tree.
    #[error("{0}: not inside a git working tree (--changed-since compares with a git revision)")]
    NotInRepository(String),
    /// The revision does not name a commit of the file's repository.
    #[error("--changed-since {rev}: not a commit of the repository at {repo}")]
    UnknownRevision {
        /// The revision as given.
        rev: String,
        /// The repository's top folder.
        repo: String,
    },
    /// git failed otherwise.
    #[error("git {args}: {message}")]
    Git {
        /// The git arguments.
        args: String,
        /// What git said.
        message: String,
    },
}

/// The lines changed since one revision, for the files of any number of
/// repositories (each repository's renames are read once).
pub struct ChangedSince {
    rev: String,
    /// The largest old version read back from git (the documents' own
    /// bound): a larger one counts as a file with every line new.
    max_bytes: u64,
    /// Per repository top folder: each renamed file's old path, by its
    /// new path (both relative to the top, `/`-separated).
    renamed: HashMap<PathBuf, HashMap<String, String>>,
}

impl ChangedSince {
    /// Changes since `rev` (a commit, branch, tag or `HEAD~2`), reading
    /// no old version larger than `max_bytes`.
    pub fn new(rev: &str, max_bytes: u64) -> Self {
        ChangedSince {
            rev: rev.to_string(),
            max_bytes,
            renamed: HashMap::new(),
        }
    }

    /// The revision compared with.
    pub fn rev(&self) -> &str {
        &self.rev
    }

    /// Which lines of `file` (whose text is `text`) are new or changed
    /// since the revision: `changed[n - 1]` for line `n`.
    pub fn lines(&mut self, file: &Path, text: &str) -> Result<Vec<bool>, ChangedError> {
        let shown = file.display().to_string();
        let absolute = file
            .canonicalize()
            .map_err(|_| ChangedError::NotInRepository(shown.clone()))?;
        let folder = absolute
            .parent()
            .ok_or_else(|| ChangedError::NotInRepository(shown.clone()))?;
        let top = git(folder, &["rev-parse", "--show-toplevel"]).map_err(|e| match e {
            ChangedError::Git { .. } => ChangedError::NotInRepository(shown.clone()),
            other => other,
        })?;
        let top = PathBuf::from(top.trim_end_matches(['\n', '\r']));
        let top = top.canonicalize().unwrap_or(top);
        let relative = absolute
            .strip_prefix(&top)
            .map_err(|_| ChangedError::NotInRepository(shown.clone()))?
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        if !self.renamed.contains_key(&top) {
            let renamed = self.renames(&top)?;
            self.renamed.insert(top.clone(), renamed);
        }
        let old = self
            .renamed
            .get(&top)
            .and_then(|r| r.get(&relative))
            .unwrap_or(&relative);
        let all_new = vec![true; text.lines().count()];
        let object = format!("{}:{old}", self.rev);
        // A path the revision does not have: a new file, every line new.
        // So is an old version too large to read back.
        let Ok(size) = git(&top, &["cat-file", "-s", &object]) else {
            return Ok(all_new);
        };
        if size
            .trim()
            .parse::<u64>()
            .map_or(true, |n| n > self.max_bytes)
        {
            return Ok(all_new);
        }
        let before = git(&top, &["cat-file", "blob", &object])?;
        Ok(changed_lines(&before, text))
    }

    /// The renames git sees between the revision and the working tree.
    fn renames(&self, top: &Path) -> Result<HashMap<String, String>, ChangedError> {
        let commit = format!("{}^{{commit}}", self.rev);
        if git(top, &["rev-parse", "--verify", "--quiet", &commit]).is_err() {
            return Err(ChangedError::UnknownRevision {
                rev: self.rev.clone(),
                repo: top.display().to_string(),
            });
        }
        let listing = git(
            top,
            &[
                "diff",
                "--no-ext-diff",
                "--name-status",
                "-M",
                "-z",
                &self.rev,
                "--",
            ],
        )?;
        Ok(renames_of(&listing))
    }
}

/// `(new path, old path)` of each rename in `git diff --name-status -z`
/// output: `R<score>\0old\0new\0`, other entries `X\0path\0`.
fn renames_of(listing: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut fields = listing.split('\0');
    while let Some(status) = fields.next() {
        if status.is_empty() {
            continue;
        }
        if status.starts_with('R') || status.starts_with('C') {
            let (Some(old), Some(new)) = (fields.next(), fields.next()) else {
                break;
            };
            if status.starts_with('R') {
                out.insert(new.to_string(), old.to_string());
            }
        } else if fields.next().is_none() {
            break;
        }
    }
    out
}

/// Which lines of `after` are not lines of `before` kept in place by a
/// line diff: `changed[n - 1]` for line `n`.
fn changed_lines(before: &str, after: &str) -> Vec<bool> {
    let mut changed = vec![false; after.lines().count()];
    // Two large, very different versions could take the diff a long
    // time: past the deadline it gives a coarser diff, more lines marked
    // changed, never fewer.
    let diff = similar::TextDiff::configure()
        .timeout(std::time::Duration::from_secs(2))
        .diff_lines(before, after);
    for op in diff.ops() {
        let new = op.new_range();
        if !matches!(op.tag(), similar::DiffTag::Equal) {
            for line in new {
                if let Some(c) = changed.get_mut(line) {
                    *c = true;
                }
            }
        }
    }
    changed
}

/// The standard output of `git -C folder args…`, or why it failed.
fn git(folder: &Path, args: &[&str]) -> Result<String, ChangedError> {
    let out = Command::new("git")
        .arg("-C")
        .arg(folder)
        .args(args)
        // No pager, no prompt, no translation of what is parsed.
        .env("GIT_PAGER", "cat")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("LC_ALL", "C")
        .output()
        .map_err(ChangedError::NoGit)?;
    if !out.status.success() {
        return Err(ChangedError::Git {
            args: args.join(" "),
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    String::from_utf8(out.stdout).map_err(|_| ChangedError::Git {
        args: args.join(" "),
        message: "output is not UTF-8".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_lines_are_the_inserted_and_replaced_ones() {
        let before = "a\nb\nc\nd\n";
        let after = "a\nB\nc\nnew\nd\n";
        assert_eq!(
            changed_lines(before, after),
            [false, true, false, true, false]
        );
        // A deletion changes no line that is left.
        assert_eq!(changed_lines(before, "a\nd\n"), [false, false]);
        assert_eq!(changed_lines("", "x\ny"), [true, true]);
    }

    #[test]
    fn renames_are_read_from_nul_separated_entries() {
        let listing =
            "M\0docs/a.md\0R087\0old name.md\0docs/new name.md\0D\0gone.md\0C100\0x.md\0y.md\0";
        let r = renames_of(listing);
        assert_eq!(r.len(), 1);
        assert_eq!(
            r.get("docs/new name.md").map(String::as_str),
            Some("old name.md")
        );
    }
}
