//! The files around a document, as `koas check` and `koas lsp` show them
//! to the link check across files ([`koas_md_scan::links::LinkTargets`]).
//!
//! A link is looked at only inside the document's project root: the
//! nearest folder above it holding `.git` or `koas.toml` (else the current
//! folder when the document is in it, else the document's own folder). A
//! document is hostile input: its links must not make koas tell which
//! files exist elsewhere on the machine, or quote another file's headings.
//! Names are compared with the folder's listing, case and all, so a link
//! that only works on a case-insensitive disk (macOS, Windows) is broken
//! as it is on GitHub and Linux. A missing file that a `.gitignore` (or
//! `.ignore`) between the root and it ignores is one a build makes (a
//! generated reference page, a rendered diagram): it cannot be told
//! missing, so it is not reported.

use koas_md_scan::links::{LinkTarget, LinkTargets, TargetAnchors};
use std::collections::HashMap;
use std::fs::FileType;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// A folder's entries: name → what it is.
type Listing = Arc<HashMap<String, Entry>>;

/// A folder's page IDs, each with its file's name.
type PageIds = Arc<Vec<(String, String)>>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    Folder,
    File,
    /// A symbolic link (resolved when looked up).
    Link,
    Other,
}

impl From<FileType> for Entry {
    fn from(t: FileType) -> Self {
        if t.is_symlink() {
            Entry::Link
        } else if t.is_dir() {
            Entry::Folder
        } else if t.is_file() {
            Entry::File
        } else {
            Entry::Other
        }
    }
}

/// How much of a file is read for its front matter's page ID.
const FRONT_MATTER_BYTES: u64 = 4096;
/// How many files of one folder are read for their page IDs.
const MAX_PAGES_READ: usize = 2000;

/// The `id:` and relative `slug:` of the YAML front matter that opens the
/// file at `path` (read up to [`FRONT_MATTER_BYTES`]).
fn front_matter_ids(path: &Path) -> Vec<String> {
    use std::io::Read as _;
    let mut head = Vec::new();
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        // A file swapped for a FIFO since the listing must not block the
        // open, nor a link lead elsewhere.
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW);
    }
    let Ok(file) = options.open(path) else {
        return Vec::new();
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return Vec::new();
    }
    if file
        .take(FRONT_MATTER_BYTES)
        .read_to_end(&mut head)
        .is_err()
    {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&head);
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return Vec::new();
    }
    let mut ids = Vec::new();
    for line in lines {
        if line.trim_end() == "---" {
            break;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim().trim_matches(['"', '\'']);
        if (key == "id" || key == "slug") && !value.is_empty() && !value.starts_with('/') {
            ids.push(value.trim_end_matches('/').to_string());
        }
    }
    ids
}

/// What has been read of the disk during one run: folder listings, the
/// anchors of linked Markdown files and the roots of folders, each read
/// once for all the documents that need it (from any thread).
pub struct Disk {
    /// The largest Markdown file read for its anchors.
    limit: u64,
    listings: Mutex<HashMap<PathBuf, Option<Listing>>>,
    anchors: Mutex<HashMap<PathBuf, Option<Arc<TargetAnchors>>>>,
    roots: Mutex<HashMap<PathBuf, PathBuf>>,
    /// Each folder's page IDs (see [`LinkTargets::page_ids`]).
    page_ids: Mutex<HashMap<PathBuf, PageIds>>,
    /// Each folder's ignore files, compiled (`None`: it has none).
    ignores: Mutex<HashMap<PathBuf, Option<Arc<ignore::gitignore::Gitignore>>>>,
}

impl Disk {
    /// Nothing read yet; Markdown files over `limit` bytes are not read.
    pub fn new(limit: u64) -> Self {
        Disk {
            limit,
            listings: Mutex::default(),
            anchors: Mutex::default(),
            roots: Mutex::default(),
            page_ids: Mutex::default(),
            ignores: Mutex::default(),
        }
    }

    /// The page IDs the Markdown files of `dir` declare in their front
    /// matter (`id:`, or a relative `slug:`), with each file's name: only
    /// the first [`FRONT_MATTER_BYTES`] of at most [`MAX_PAGES_READ`] files
    /// are read.
    fn page_ids_of(&self, dir: &Path) -> PageIds {
        if let Some(found) = self
            .page_ids
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(dir)
        {
            return found.clone();
        }
        let mut ids = Vec::new();
        if let Some(listing) = self.listing(dir) {
            let mut names: Vec<&String> = listing
                .iter()
                .filter(|(name, entry)| {
                    **entry == Entry::File && {
                        let lower = name.to_ascii_lowercase();
                        lower.ends_with(".md") || lower.ends_with(".mdx")
                    }
                })
                .map(|(name, _)| name)
                .collect();
            names.sort();
            for name in names.into_iter().take(MAX_PAGES_READ) {
                for id in front_matter_ids(&dir.join(name)) {
                    ids.push((id, name.clone()));
                }
            }
        }
        let ids = Arc::new(ids);
        self.page_ids
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(dir.to_path_buf(), ids.clone());
        ids
    }

    /// The ignore files of `dir` (`.gitignore`, `.ignore`), compiled.
    fn ignore_of(&self, dir: &Path) -> Option<Arc<ignore::gitignore::Gitignore>> {
        let mut cache = self.ignores.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = cache.get(dir) {
            return found.clone();
        }
        let mut builder = ignore::gitignore::GitignoreBuilder::new(dir);
        let mut any = false;
        for name in [".gitignore", ".ignore"] {
            let file = dir.join(name);
            // Only a regular file of this folder (a link could lead out).
            if std::fs::symlink_metadata(&file).is_ok_and(|m| m.is_file()) {
                any |= builder.add(&file).is_none();
            }
        }
        let compiled = any.then(|| builder.build().ok()).flatten().map(Arc::new);
        cache.insert(dir.to_path_buf(), compiled.clone());
        compiled
    }

    /// `true` when an ignore file between `root` and `path` ignores it
    /// (the deepest one that names it decides, as Git does).
    fn ignored(&self, root: &Path, path: &Path) -> bool {
        let Ok(below) = path.strip_prefix(root) else {
            return false;
        };
        let mut dirs = vec![root.to_path_buf()];
        let mut dir = root.to_path_buf();
        let parts: Vec<_> = below.iter().collect();
        for part in parts.iter().take(parts.len().saturating_sub(1)) {
            dir.push(part);
            dirs.push(dir.clone());
        }
        for dir in dirs.iter().rev() {
            let Some(rules) = self.ignore_of(dir) else {
                continue;
            };
            let verdict = rules.matched_path_or_any_parents(path, false);
            if verdict.is_ignore() {
                return true;
            }
            if verdict.is_whitelist() {
                return false;
            }
        }
        false
    }

    /// The view from the document at `path` (`None` when its folder cannot
    /// be resolved: then no link of it is checked across files).
    pub fn around(&self, path: &Path) -> Option<Around<'_>> {
        let folder = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let folder = std::fs::canonicalize(folder).ok()?;
        let root = self.root_of(&folder);
        Some(Around {
            disk: self,
            folder,
            root,
        })
    }

    /// [`Disk::around`] for a document served under `root` (an editor's
    /// workspace folder): its links stay inside `root` whatever holds
    /// `.git`.
    pub fn around_in(&self, path: &Path, root: &Path) -> Option<Around<'_>> {
        let folder = std::fs::canonicalize(path.parent()?).ok()?;
        let root = std::fs::canonicalize(root).ok()?;
        folder.starts_with(&root).then_some(Around {
            disk: self,
            folder,
            root,
        })
    }

    fn root_of(&self, folder: &Path) -> PathBuf {
        let mut roots = self.roots.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(root) = roots.get(folder) {
            return root.clone();
        }
        let marked = folder
            .ancestors()
            .find(|dir| dir.join(".git").exists() || dir.join("koas.toml").is_file());
        let root = match marked {
            Some(dir) => dir.to_path_buf(),
            None => match std::env::current_dir().and_then(std::fs::canonicalize) {
                Ok(cwd) if folder.starts_with(&cwd) => cwd,
                _ => folder.to_path_buf(),
            },
        };
        roots.insert(folder.to_path_buf(), root.clone());
        root
    }

    fn listing(&self, dir: &Path) -> Option<Listing> {
        if let Some(found) = self
            .listings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(dir)
        {
            return found.clone();
        }
        let read = std::fs::read_dir(dir).ok().map(|entries| {
            Arc::new(
                entries
                    .filter_map(Result::ok)
                    .filter_map(|e| {
                        let name = e.file_name().into_string().ok()?;
                        Some((name, e.file_type().map_or(Entry::Other, Entry::from)))
                    })
                    .collect::<HashMap<_, _>>(),
            )
        });
        self.listings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(dir.to_path_buf(), read.clone());
        read
    }
}

/// The files around one document: paths relative to its folder, inside
/// its root.
pub struct Around<'d> {
    disk: &'d Disk,
    /// The document's folder, canonical.
    folder: PathBuf,
    /// The project root, canonical; nothing outside it is looked at.
    root: PathBuf,
}

impl Around<'_> {
    /// `path` joined to the document's folder, `..` taken lexically; `None`
    /// when it leaves the root.
    fn inside(&self, path: &str) -> Option<PathBuf> {
        let mut full = self.folder.clone();
        for part in Path::new(path).components() {
            match part {
                Component::Normal(p) => full.push(p),
                Component::ParentDir => {
                    full.pop();
                }
                Component::CurDir => {}
                Component::RootDir | Component::Prefix(_) => return None,
            }
        }
        full.starts_with(&self.root).then_some(full)
    }
}

impl Around<'_> {
    /// `folder` resolved, links and all, when it stays inside the root: a
    /// folder whose names or files may be read (a link leading out is not).
    fn real_folder(&self, folder: &str) -> Option<PathBuf> {
        let real = std::fs::canonicalize(self.inside(folder)?).ok()?;
        real.starts_with(&self.root).then_some(real)
    }
}

impl LinkTargets for Around<'_> {
    fn lookup(&self, path: &str) -> LinkTarget {
        let Some(full) = self.inside(path) else {
            return LinkTarget::Unknown;
        };
        let Ok(below) = full.strip_prefix(&self.root) else {
            return LinkTarget::Unknown;
        };
        // Each name is looked for in its folder's listing, from the root
        // down: exact names, and a missing folder said as such.
        let names: Vec<&std::ffi::OsStr> = below.iter().collect();
        let mut dir = self.root.clone();
        for (i, name) in names.iter().enumerate() {
            let last = i + 1 == names.len();
            let Some(listing) = self.disk.listing(&dir) else {
                return LinkTarget::Unknown;
            };
            let Some(entry) = name.to_str().and_then(|n| listing.get(n)) else {
                // An ignored file is made by a build; an empty folder is a
                // submodule not checked out, or filled by a build.
                if listing.is_empty() || self.disk.ignored(&self.root, &full) {
                    return LinkTarget::Unknown;
                }
                return LinkTarget::Missing;
            };
            dir.push(name);
            let entry = match entry {
                // A link is what it points to, if it points inside.
                Entry::Link => match std::fs::canonicalize(&dir) {
                    Ok(to) if to.starts_with(&self.root) => match std::fs::metadata(&to) {
                        Ok(m) if m.is_dir() => Entry::Folder,
                        Ok(m) if m.is_file() => Entry::File,
                        Ok(_) => Entry::Other,
                        Err(_) => return LinkTarget::Unknown,
                    },
                    Ok(_) => return LinkTarget::Unknown,
                    // A dangling link is a file that is not there.
                    Err(_) => return LinkTarget::Missing,
                },
                other => *other,
            };
            match (entry, last) {
                (Entry::Folder, true) => return LinkTarget::Folder,
                (Entry::Folder, false) => {}
                (_, true) => return LinkTarget::File,
                // A file where a folder is named: nothing below it.
                (_, false) => return LinkTarget::Missing,
            }
        }
        LinkTarget::Folder
    }

    fn names(&self, folder: &str) -> Option<Vec<String>> {
        let real = self.real_folder(folder)?;
        let mut names: Vec<String> = self.disk.listing(&real)?.keys().cloned().collect();
        names.sort();
        Some(names)
    }

    fn page_ids(&self, folder: &str) -> Vec<(String, String)> {
        match self.real_folder(folder) {
            Some(real) => self.disk.page_ids_of(&real).as_ref().clone(),
            None => Vec::new(),
        }
    }

    fn anchors(&self, path: &str) -> Option<Arc<TargetAnchors>> {
        let full = self.inside(path)?;
        // Links resolved, and the file still inside the root. (Between
        // this and the open, a folder could be swapped for a link that
        // leads out; what would leak is a "did you mean" anchor.)
        let real = std::fs::canonicalize(&full).ok()?;
        if !real.starts_with(&self.root)
            || !koas_md_scan::links::is_markdown(&real.to_string_lossy())
        {
            return None;
        }
        let mut cache = self
            .disk
            .anchors
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = cache.get(&real) {
            return found.clone();
        }
        // Read while the lock is held: two documents linking to one file
        // read it once.
        let anchors = koas_orchestrator::guarded_read::read_regular_file(&real, self.disk.limit)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .and_then(|text| koas_md_scan::links::anchors_of(&text).ok())
            .map(Arc::new);
        cache.insert(real, anchors.clone());
        anchors
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join("docs/img")).expect("mkdir");
        std::fs::write(root.join("koas.toml"), "").expect("write");
        std::fs::write(root.join("docs/guide.md"), "# Guide\n\n## Install\n").expect("write");
        std::fs::write(root.join("docs/img/Plan.png"), "png").expect("write");
        std::fs::write(root.join("README.md"), "# Top\n").expect("write");
        std::fs::write(dir.path().join("secret.md"), "# Secret heading\n").expect("write");
        dir
    }

    #[test]
    fn names_are_looked_up_exactly_inside_the_root() {
        let dir = tree();
        let disk = Disk::new(1 << 20);
        let around = disk
            .around(&dir.path().join("repo/docs/page.md"))
            .expect("folder");
        assert_eq!(around.lookup("guide.md"), LinkTarget::File);
        assert_eq!(around.lookup("img"), LinkTarget::Folder);
        assert_eq!(around.lookup("../README.md"), LinkTarget::File);
        assert_eq!(around.lookup("img/plan.png"), LinkTarget::Missing);
        assert_eq!(around.names("img"), Some(vec!["Plan.png".to_string()]));
        assert_eq!(around.lookup("nope/x.md"), LinkTarget::Missing);
        assert_eq!(around.names("nope"), None);
        assert_eq!(around.lookup("guide.md/x.md"), LinkTarget::Missing);
        assert_eq!(around.names("../.."), None);
        // Above the root: not looked at, not read.
        assert_eq!(around.lookup("../../secret.md"), LinkTarget::Unknown);
        assert!(around.anchors("../../secret.md").is_none());
        assert!(around.anchors("guide.md").is_some());
        assert!(around.anchors("img/Plan.png").is_none());
    }

    #[test]
    fn a_missing_file_a_gitignore_names_or_in_an_empty_folder_is_not_told_missing() {
        let dir = tree();
        let root = dir.path().join("repo");
        std::fs::write(
            root.join(".gitignore"),
            "/docs/reference/\n*.svg\n!keep.svg\n",
        )
        .expect("write");
        std::fs::write(root.join("docs/.gitignore"), "/settings.md\n").expect("write");
        let disk = Disk::new(1 << 20);
        let around = disk.around(&root.join("docs/page.md")).expect("folder");
        std::fs::create_dir_all(root.join("vendor/ui")).expect("mkdir");
        for built in [
            "reference/cli.md",
            "img/diagram.svg",
            "settings.md",
            "../vendor/ui/src/index.tsx",
        ] {
            assert_eq!(around.lookup(built), LinkTarget::Unknown, "{built}");
        }
        for missing in ["keep.svg", "other.md", "img/settings.md"] {
            assert!(around.lookup(missing) == LinkTarget::Missing, "{missing}");
        }
    }

    #[test]
    fn pages_are_found_by_the_id_their_front_matter_declares() {
        let dir = tree();
        let docs = dir.path().join("repo/docs");
        std::fs::write(
            docs.join("Configuration.md"),
            "---\nid: configuration\ntitle: Configuring\n---\n# Configuring\n",
        )
        .expect("write");
        std::fs::write(docs.join("Other.md"), "---\nslug: /absolute\n---\n").expect("write");
        let disk = Disk::new(1 << 20);
        let around = disk.around(&docs.join("page.md")).expect("folder");
        assert_eq!(
            around.page_ids(""),
            vec![("configuration".to_string(), "Configuration.md".to_string())]
        );
        assert!(around.page_ids("../..").is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn a_folder_linked_from_outside_gives_neither_names_nor_page_ids() {
        let dir = tree();
        std::fs::create_dir_all(dir.path().join("elsewhere")).expect("mkdir");
        std::fs::write(
            dir.path().join("elsewhere/Secret.md"),
            "---\nid: secret\n---\n",
        )
        .expect("write");
        let docs = dir.path().join("repo/docs");
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), docs.join("out"))
            .expect("symlink");
        let disk = Disk::new(1 << 20);
        let around = disk.around(&docs.join("page.md")).expect("folder");
        assert_eq!(around.names("out"), None);
        assert!(around.page_ids("out").is_empty());
        // A FIFO among the pages is not waited for.
        let fifo = docs.join("Pipe.md");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            assert!(front_matter_ids(&fifo).is_empty());
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_that_leads_out_is_neither_followed_nor_read() {
        let dir = tree();
        let docs = dir.path().join("repo/docs");
        std::os::unix::fs::symlink(dir.path().join("secret.md"), docs.join("out.md"))
            .expect("symlink");
        std::os::unix::fs::symlink(docs.join("guide.md"), docs.join("in.md")).expect("symlink");
        std::os::unix::fs::symlink(docs.join("gone.md"), docs.join("dangling.md"))
            .expect("symlink");
        let disk = Disk::new(1 << 20);
        let around = disk.around(&docs.join("page.md")).expect("folder");
        assert_eq!(around.lookup("out.md"), LinkTarget::Unknown);
        assert!(around.anchors("out.md").is_none());
        assert_eq!(around.lookup("in.md"), LinkTarget::File);
        assert!(around.anchors("in.md").is_some());
        assert_eq!(around.lookup("dangling.md"), LinkTarget::Missing);
    }
}
