//! The server's root: every path a client names is resolved against it,
//! and anything that would lead outside it — `..`, an absolute path
//! elsewhere, a symbolic link pointing out — is refused before a file is
//! read or written.

use std::path::{Component, Path, PathBuf};

/// Why a path was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PathError {
    /// The path is empty.
    #[error("the path is empty")]
    Empty,
    /// The path leads outside the root.
    #[error("{given}: outside the server's root {root} (paths are resolved against it; `..` and symbolic links may not lead out)")]
    Escapes {
        /// The path as the client gave it.
        given: String,
        /// The root.
        root: String,
    },
    /// The file does not exist (or cannot be resolved).
    #[error("{given}: not found under the server's root {root}")]
    NotFound {
        /// The path as the client gave it.
        given: String,
        /// The root.
        root: String,
    },
}

/// The folder a server serves.
#[derive(Debug, Clone)]
pub struct Root {
    /// Canonical: symbolic links resolved, absolute.
    dir: PathBuf,
}

impl Root {
    /// `dir`, which must exist.
    pub fn new(dir: &Path) -> std::io::Result<Root> {
        Ok(Root {
            dir: std::fs::canonicalize(dir)?,
        })
    }

    /// The canonical root folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn escapes(&self, given: &str) -> PathError {
        PathError::Escapes {
            given: given.to_owned(),
            root: self.dir.display().to_string(),
        }
    }

    /// `given` (relative to the root, or absolute) as an existing file
    /// inside the root, symbolic links resolved.
    pub fn existing(&self, given: &str) -> Result<PathBuf, PathError> {
        if given.trim().is_empty() {
            return Err(PathError::Empty);
        }
        let joined = self.dir.join(given);
        // A `..` is refused even when it would come back in: an agent has
        // no reason to write one, and it hides where a path goes.
        if joined.components().any(|c| c == Component::ParentDir) {
            return Err(self.escapes(given));
        }
        let resolved = std::fs::canonicalize(&joined).map_err(|_| {
            if joined.starts_with(&self.dir) {
                PathError::NotFound {
                    given: given.to_owned(),
                    root: self.dir.display().to_string(),
                }
            } else {
                self.escapes(given)
            }
        })?;
        if !resolved.starts_with(&self.dir) {
            return Err(self.escapes(given));
        }
        Ok(resolved)
    }

    /// Checks that `path` (which may not exist yet) stays inside the root:
    /// its longest existing ancestor, links resolved, is inside, and what
    /// follows holds no `..`.
    pub fn contains(&self, path: &Path) -> Result<(), PathError> {
        let shown = path.display().to_string();
        let absolute = self.dir.join(path);
        if absolute.components().any(|c| c == Component::ParentDir) {
            return Err(self.escapes(&shown));
        }
        let mut existing = absolute.as_path();
        loop {
            // `symlink_metadata`: a dangling link exists too, and must be
            // resolved (and refused), not skipped.
            if existing.symlink_metadata().is_ok() {
                break;
            }
            match existing.parent() {
                Some(parent) => existing = parent,
                None => return Err(self.escapes(&shown)),
            }
        }
        let resolved = std::fs::canonicalize(existing).map_err(|_| self.escapes(&shown))?;
        if resolved.starts_with(&self.dir) {
            Ok(())
        } else {
            Err(self.escapes(&shown))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, Root) {
        let dir = tempfile::tempdir().expect("tempdir");
        let root_dir = dir.path().join("root");
        std::fs::create_dir_all(root_dir.join("docs")).expect("mkdir");
        std::fs::write(root_dir.join("docs/spec.md"), "# Spec\n").expect("write");
        std::fs::write(dir.path().join("secret.md"), "# Secret\n").expect("write");
        let root = Root::new(&root_dir).expect("root");
        (dir, root)
    }

    #[test]
    fn a_relative_path_inside_resolves() {
        let (_dir, root) = setup();
        let p = root.existing("docs/spec.md").expect("inside");
        assert!(p.starts_with(root.dir()) && p.ends_with("docs/spec.md"));
    }

    #[test]
    fn an_absolute_path_inside_resolves() {
        let (_dir, root) = setup();
        let abs = root.dir().join("docs/spec.md");
        assert!(root.existing(&abs.display().to_string()).is_ok());
    }

    #[test]
    fn dot_dot_is_refused_even_when_it_comes_back() {
        let (_dir, root) = setup();
        for given in [
            "../secret.md",
            "docs/../docs/spec.md",
            "docs/../../secret.md",
        ] {
            assert!(
                matches!(root.existing(given), Err(PathError::Escapes { .. })),
                "{given}"
            );
        }
    }

    #[test]
    fn an_absolute_path_outside_is_refused() {
        let (dir, root) = setup();
        let outside = dir.path().join("secret.md").display().to_string();
        assert!(matches!(
            root.existing(&outside),
            Err(PathError::Escapes { .. })
        ));
        assert!(matches!(
            root.existing("/nonexistent/x.md"),
            Err(PathError::Escapes { .. })
        ));
    }

    #[test]
    fn a_missing_file_inside_is_not_found() {
        let (_dir, root) = setup();
        assert!(matches!(
            root.existing("docs/none.md"),
            Err(PathError::NotFound { .. })
        ));
        assert_eq!(root.existing(" "), Err(PathError::Empty));
    }

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_out_is_refused() {
        let (dir, root) = setup();
        std::os::unix::fs::symlink(dir.path().join("secret.md"), root.dir().join("link.md"))
            .expect("symlink");
        std::os::unix::fs::symlink(dir.path(), root.dir().join("out")).expect("symlink");
        assert!(matches!(
            root.existing("link.md"),
            Err(PathError::Escapes { .. })
        ));
        assert!(root.contains(Path::new("out/.review/ws")).is_err());
        assert!(root.contains(Path::new("docs/.review/ws")).is_ok());
        // A dangling link that points out is refused too.
        std::os::unix::fs::symlink("/nonexistent-koas", root.dir().join("dangling"))
            .expect("symlink");
        assert!(root.contains(Path::new("dangling/x")).is_err());
    }
}
