//! A folder held open by a handle, whose files are opened relative to that
//! handle without following any symbolic link.
//!
//! A host keeps state in folders a person (or a plugin, or a document's
//! author) can also write to. A link planted there — a file linked to one
//! elsewhere, a sub-folder linked to another folder — would have the host
//! write through it. [`Beneath`] holds the folder itself (renaming or
//! replacing its path afterwards changes nothing) and resolves every
//! relative path below it with `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS)` where the kernel has it, or one component at a
//! time with `O_NOFOLLOW` otherwise. A link met on the way is an error that
//! names it ([`FsError::is_refused_link`]): it is never written through
//! and never silently replaced.

use super::{FsError, TEMP_COUNTER};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::Ordering;

/// The `action` of the error for a refused link.
pub(super) const LINK_REFUSED: &str = "refused the symbolic link";

/// How relative paths are resolved below the held folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolver {
    /// `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` where the
    /// kernel has it, one component at a time otherwise.
    Auto,
    /// One component at a time with `O_NOFOLLOW`, as on a kernel without
    /// `openat2` (what tests use to exercise that path).
    Components,
}

/// What [`Beneath::entry`] found at a path (the entry itself, a link not
/// followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file of this many bytes.
    File(u64),
    /// A folder.
    Dir,
    /// A symbolic link.
    Link,
    /// A FIFO, a device, a socket.
    Other,
}

/// How [`Beneath::open_file`] opens a file (read-only by default).
#[derive(Debug, Clone, Copy, Default)]
pub struct Access {
    /// With `write` or `append`, open for reading too.
    pub read: bool,
    /// Open for writing.
    pub write: bool,
    /// Every write goes to the end.
    pub append: bool,
    /// Create the file when missing.
    pub create: bool,
    /// Create the file; fail when it exists.
    pub create_new: bool,
    /// Empty the file when opened.
    pub truncate: bool,
}

/// A folder held open by handle; every path given to its methods is
/// relative to it, `/`-separated, without `..`, and is resolved without
/// following links.
#[derive(Debug)]
pub struct Beneath {
    dir: imp::Handle,
    path: PathBuf,
    resolver: Resolver,
}

/// The error for a refused link at `path`.
fn link_error(path: &Path) -> FsError {
    FsError::new(
        LINK_REFUSED,
        path,
        io::Error::other(
            "koas follows no link in the folders it keeps its state in, and wrote nothing through this one; remove the link (or put the real file or folder in its place) and retry",
        ),
    )
}

/// The parts of `rel`: plain names only (`.` dropped); `..`, a root or a
/// prefix is refused.
fn parts_of<'a>(rel: &'a Path, root: &Path) -> Result<Vec<&'a OsStr>, FsError> {
    let mut out = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            _ => {
                return Err(FsError::new(
                    "refuse",
                    &root.join(rel),
                    io::Error::other(format!(
                        "the path leaves the folder {} it must stay in",
                        root.display()
                    )),
                ))
            }
        }
    }
    Ok(out)
}

impl Beneath {
    /// Holds the folder `dir` (links in `dir` itself are followed: the
    /// caller named it).
    pub fn open(dir: &Path) -> Result<Beneath, FsError> {
        let handle = imp::open_dir(dir).map_err(|e| FsError::new("open directory", dir, e))?;
        Ok(Beneath {
            dir: handle,
            path: dir.to_owned(),
            resolver: Resolver::Auto,
        })
    }

    /// Holds the folder `base/rel`: `base` is opened as given, `rel` below
    /// it without following links (a link in `rel` is refused by name).
    /// With `create`, missing folders of `rel` are created (durably).
    pub fn open_below(base: &Path, rel: &Path, create: bool) -> Result<Beneath, FsError> {
        let base = Beneath::open(base)?;
        if create {
            base.create_dir_all(rel)
        } else {
            base.dir(rel)
        }
    }

    /// The same folder, resolved with `resolver`.
    pub fn with_resolver(mut self, resolver: Resolver) -> Beneath {
        self.resolver = resolver;
        self
    }

    /// The folder's path as it was given (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `rel` shown below the folder's path (for messages).
    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.path.join(rel)
    }

    /// The sub-folder `rel`, held (it must exist).
    pub fn dir(&self, rel: impl AsRef<Path>) -> Result<Beneath, FsError> {
        let rel = rel.as_ref();
        let handle = self.open_dir_raw(rel)?;
        Ok(self.child(handle, rel))
    }

    fn child(&self, dir: imp::Handle, rel: &Path) -> Beneath {
        Beneath {
            dir,
            path: self.join(rel),
            resolver: self.resolver,
        }
    }

    /// The sub-folder `rel`, created with its missing parents (each new
    /// folder's parent fsynced), held.
    pub fn create_dir_all(&self, rel: impl AsRef<Path>) -> Result<Beneath, FsError> {
        let rel = rel.as_ref();
        let parts = parts_of(rel, &self.path)?;
        let mut current = imp::clone(&self.dir).map_err(|e| self.fail("open", rel, e))?;
        let mut shown = PathBuf::new();
        for part in parts {
            shown.push(part);
            current = match imp::open_dir_at(&current, part) {
                Ok(next) => next,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    match imp::mkdir_at(&current, part) {
                        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => {
                            return Err(self.fail("create directory", &shown, e))
                        }
                        _ => {}
                    }
                    imp::sync(&current).map_err(|e| self.fail("fsync directory", &shown, e))?;
                    imp::open_dir_at(&current, part)
                        .map_err(|e| self.fail("open directory", &shown, e))?
                }
                Err(e) => return Err(self.fail("open directory", &shown, e)),
            };
        }
        Ok(self.child(current, rel))
    }

    /// Opens the file `rel` as `access` says.
    pub fn open_file(&self, rel: impl AsRef<Path>, access: Access) -> Result<File, FsError> {
        let rel = rel.as_ref();
        let action = if access.write || access.append {
            "open for writing"
        } else {
            "open"
        };
        let file = self.open_file_raw(rel, access)?;
        // A FIFO or a device is no file of a host's folder: refused before
        // anything reads or writes it (the open itself cannot block on a
        // FIFO: opened for writing it fails, for reading it is refused
        // only after the open; no host keeps a FIFO in its folders).
        match file.metadata() {
            Ok(meta) if meta.is_file() => Ok(file),
            Ok(_) => Err(self.fail(action, rel, io::Error::other("it is not a regular file"))),
            Err(e) => Err(self.fail(action, rel, e)),
        }
    }

    /// The bytes of the file `rel`; `None` when it does not exist.
    pub fn read(&self, rel: impl AsRef<Path>) -> Result<Option<Vec<u8>>, FsError> {
        let rel = rel.as_ref();
        match self.open_file(rel, Access::default()) {
            Ok(mut file) => {
                let mut bytes = Vec::new();
                io::Read::read_to_end(&mut file, &mut bytes)
                    .map_err(|e| self.fail("read", rel, e))?;
                Ok(Some(bytes))
            }
            Err(e) if e.source.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// What is at `rel` (a link is reported, not followed); `None` when
    /// nothing is.
    pub fn entry(&self, rel: impl AsRef<Path>) -> Result<Option<EntryKind>, FsError> {
        let rel = rel.as_ref();
        let (parent, name) = match self.parent_of(rel, false) {
            Ok(found) => found,
            Err(e) if e.source.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let Some(name) = name else {
            return Ok(Some(EntryKind::Dir));
        };
        match imp::entry_at(&parent, &name) {
            Ok(kind) => Ok(Some(kind)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.fail("read the metadata of", rel, e)),
        }
    }

    /// The names in the sub-folder `rel` (`""` for the folder itself),
    /// with what each is; sorted.
    pub fn list(&self, rel: impl AsRef<Path>) -> Result<Vec<(OsString, EntryKind)>, FsError> {
        let rel = rel.as_ref();
        let dir = self.open_dir_raw(rel)?;
        let mut out = imp::list(&dir).map_err(|e| self.fail("list", rel, e))?;
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// Writes `bytes` to `rel` atomically (a temporary file in the same
    /// folder, renamed over it) and durably, creating missing folders.
    /// A link at `rel` is refused, not replaced.
    pub fn write_atomic(&self, rel: impl AsRef<Path>, bytes: &[u8]) -> Result<(), FsError> {
        let rel = rel.as_ref();
        let (parent, name) = self.parent_of(rel, true)?;
        self.write_in(&parent, rel, name.as_deref(), bytes, true)?;
        imp::sync(&parent).map_err(|e| self.fail("fsync directory", rel.parent().unwrap_or(rel), e))
    }

    /// Writes every `(rel, bytes)` atomically without fsyncing each file,
    /// then fsyncs each folder written once: for derived files that an
    /// fsynced record can rebuild.
    pub fn write_batch<P: AsRef<Path>>(&self, files: &[(P, Vec<u8>)]) -> Result<(), FsError> {
        let mut folders: Vec<(PathBuf, imp::Handle)> = Vec::new();
        for (rel, bytes) in files {
            let rel = rel.as_ref();
            let folder = rel.parent().map(Path::to_path_buf).unwrap_or_default();
            if !folders.iter().any(|(p, _)| *p == folder) {
                let dir = self.create_dir_all(&folder)?;
                folders.push((folder.clone(), dir.dir));
            }
            let Some((_, dir)) = folders.iter().find(|(p, _)| *p == folder) else {
                continue;
            };
            let name = rel.file_name().map(OsStr::to_owned);
            self.write_in(dir, rel, name.as_deref(), bytes, false)?;
        }
        for (folder, dir) in &folders {
            imp::sync(dir).map_err(|e| self.fail("fsync directory", folder, e))?;
        }
        Ok(())
    }

    /// Opens `rel` for appending, creating it (and fsyncing its folder)
    /// when new; missing folders are created.
    pub fn open_append(&self, rel: impl AsRef<Path>) -> Result<File, FsError> {
        let rel = rel.as_ref();
        let (parent, name) = self.parent_of(rel, true)?;
        let Some(name) = name else {
            return Err(self.fail("open for append", rel, io::Error::other("it is a folder")));
        };
        let access = Access {
            write: true,
            append: true,
            ..Access::default()
        };
        let file = match imp::open_file_at(&parent, &name, access) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let create = Access {
                    create: true,
                    ..access
                };
                let file = imp::open_file_at(&parent, &name, create)
                    .map_err(|e| self.fail("create", rel, e))?;
                file.sync_all().map_err(|e| self.fail("fsync", rel, e))?;
                imp::sync(&parent).map_err(|e| self.fail("fsync directory", rel, e))?;
                file
            }
            Err(e) => return Err(self.fail("open for append", rel, e)),
        };
        match file.metadata() {
            Ok(meta) if meta.is_file() => Ok(file),
            Ok(_) => Err(self.fail(
                "open for append",
                rel,
                io::Error::other("it is not a regular file"),
            )),
            Err(e) => Err(self.fail("open for append", rel, e)),
        }
    }

    /// Appends `bytes` to `rel` and fsyncs its data, creating missing
    /// folders and the file.
    pub fn append(&self, rel: impl AsRef<Path>, bytes: &[u8]) -> Result<(), FsError> {
        let rel = rel.as_ref();
        let mut file = self.open_append(rel)?;
        file.write_all(bytes)
            .map_err(|e| self.fail("append to", rel, e))?;
        file.sync_data().map_err(|e| self.fail("fsync", rel, e))
    }

    /// Removes the file (or link) `rel`; `false` when there was none.
    pub fn remove_file(&self, rel: impl AsRef<Path>) -> Result<bool, FsError> {
        let rel = rel.as_ref();
        let (parent, name) = match self.parent_of(rel, false) {
            Ok(found) => found,
            Err(e) if e.source.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e),
        };
        let Some(name) = name else {
            return Err(self.fail("remove", rel, io::Error::other("it is a folder")));
        };
        match imp::unlink_at(&parent, &name) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(self.fail("remove", rel, e)),
        }
    }

    /// Renames `from` to `to`, both below this folder (a link at either
    /// is refused).
    pub fn rename(&self, from: impl AsRef<Path>, to: impl AsRef<Path>) -> Result<(), FsError> {
        let (from, to) = (from.as_ref(), to.as_ref());
        let (from_dir, from_name) = self.parent_of(from, false)?;
        let (to_dir, to_name) = self.parent_of(to, true)?;
        let (Some(from_name), Some(to_name)) = (from_name, to_name) else {
            return Err(self.fail("rename", from, io::Error::other("a folder itself")));
        };
        for (dir, name, rel) in [(&from_dir, &from_name, from), (&to_dir, &to_name, to)] {
            if imp::entry_at(dir, name).is_ok_and(|k| k == EntryKind::Link) {
                return Err(link_error(&self.join(rel)));
            }
        }
        imp::rename_at(&from_dir, &from_name, &to_dir, &to_name)
            .map_err(|e| self.fail("rename into", to, e))?;
        imp::sync(&to_dir).map_err(|e| self.fail("fsync directory", to, e))
    }

    /// Takes the permission bits `mask` from the folder or regular file
    /// at `rel` (`""` for the held folder); a link is left alone, never
    /// followed, and a file this process cannot open is left as it is.
    #[cfg(unix)]
    pub fn remove_permissions(&self, rel: impl AsRef<Path>, mask: u32) -> Result<(), FsError> {
        use std::os::unix::fs::PermissionsExt;
        let rel = rel.as_ref();
        let opened = match self.entry(rel)? {
            Some(EntryKind::Dir) => self.open_dir_raw(rel),
            Some(EntryKind::File(_)) => self.open_file_raw(rel, Access::default()),
            _ => return Ok(()),
        };
        let file = match opened {
            Ok(file) => file,
            Err(e) if e.source.kind() == io::ErrorKind::PermissionDenied => return Ok(()),
            Err(e) => return Err(e),
        };
        let meta = file
            .metadata()
            .map_err(|e| self.fail("read the permissions of", rel, e))?;
        let current = meta.permissions().mode() & 0o7777;
        if current & mask != 0 {
            file.set_permissions(std::fs::Permissions::from_mode(current & !mask))
                .map_err(|e| self.fail("narrow the permissions of", rel, e))?;
        }
        Ok(())
    }

    /// Fsyncs the folder itself.
    pub fn sync(&self) -> Result<(), FsError> {
        imp::sync(&self.dir).map_err(|e| FsError::new("fsync directory", &self.path, e))
    }

    /// Writes a temporary file in `parent` and renames it to `name`.
    fn write_in(
        &self,
        parent: &imp::Handle,
        rel: &Path,
        name: Option<&OsStr>,
        bytes: &[u8],
        fsync_file: bool,
    ) -> Result<(), FsError> {
        let Some(name) = name else {
            return Err(self.fail("write", rel, io::Error::other("it is a folder")));
        };
        match imp::entry_at(parent, name) {
            Ok(EntryKind::Link) => return Err(link_error(&self.join(rel))),
            Ok(EntryKind::Dir) => {
                return Err(self.fail("write", rel, io::Error::other("it is a folder")))
            }
            _ => {}
        }
        let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let mut temp = OsString::from(".");
        temp.push(name);
        temp.push(format!(".tmp-{}-{n}", std::process::id()));
        let shown_temp = rel.with_file_name(&temp);
        let create = Access {
            write: true,
            create_new: true,
            ..Access::default()
        };
        let mut file = match imp::open_file_at(parent, &temp, create) {
            // Left by a killed process that had the same pid.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let _ = imp::unlink_at(parent, &temp);
                imp::open_file_at(parent, &temp, create)
            }
            other => other,
        }
        .map_err(|e| self.fail("create", &shown_temp, e))?;
        let result = (|| {
            file.write_all(bytes)
                .map_err(|e| self.fail("write", &shown_temp, e))?;
            if fsync_file {
                file.sync_all()
                    .map_err(|e| self.fail("fsync", &shown_temp, e))?;
            }
            // A link put at `name` since the check above is replaced by
            // the file, never written through.
            imp::rename_at(parent, &temp, parent, name)
                .map_err(|e| self.fail("rename into", rel, e))
        })();
        if result.is_err() {
            let _ = imp::unlink_at(parent, &temp);
        }
        result
    }

    /// The folder holding `rel` (created with `create`), and `rel`'s last
    /// name (`None` for the folder itself).
    fn parent_of(
        &self,
        rel: &Path,
        create: bool,
    ) -> Result<(imp::Handle, Option<OsString>), FsError> {
        let parts = parts_of(rel, &self.path)?;
        let Some((last, dirs)) = parts.split_last() else {
            let me = imp::clone(&self.dir).map_err(|e| self.fail("open", rel, e))?;
            return Ok((me, None));
        };
        let dirs: PathBuf = dirs.iter().collect();
        let parent = if create {
            self.create_dir_all(&dirs)?.dir
        } else {
            self.open_dir_raw(&dirs)?
        };
        Ok((parent, Some((*last).to_owned())))
    }

    /// Opens the folder `rel` below the held one, links refused.
    fn open_dir_raw(&self, rel: &Path) -> Result<imp::Handle, FsError> {
        let parts = parts_of(rel, &self.path)?;
        let Some((last, dirs)) = parts.split_last() else {
            return imp::clone(&self.dir).map_err(|e| self.fail("open directory", rel, e));
        };
        if self.resolver == Resolver::Auto {
            if let Some(opened) = imp::dir_beneath(&self.dir, &parts) {
                return opened.map_err(|e| self.fail("open directory", rel, e));
            }
        }
        self.walk(dirs)
            .and_then(|at| imp::open_dir_at(&at, last))
            .map_err(|e| self.fail("open directory", rel, e))
    }

    /// Opens the file `rel` below the held folder, links refused.
    fn open_file_raw(&self, rel: &Path, access: Access) -> Result<File, FsError> {
        let action = if access.write || access.append {
            "open for writing"
        } else {
            "open"
        };
        let parts = parts_of(rel, &self.path)?;
        let Some((last, dirs)) = parts.split_last() else {
            return Err(self.fail(action, rel, io::Error::other("it is a folder")));
        };
        if self.resolver == Resolver::Auto {
            if let Some(opened) = imp::file_beneath(&self.dir, &parts, access) {
                return opened.map_err(|e| self.fail(action, rel, e));
            }
        }
        self.walk(dirs)
            .and_then(|at| imp::open_file_at(&at, last, access))
            .map_err(|e| self.fail(action, rel, e))
    }

    /// The folder `dirs` below the held one, opened one name at a time,
    /// none followed if a link.
    fn walk(&self, dirs: &[&OsStr]) -> io::Result<imp::Handle> {
        let mut current = imp::clone(&self.dir)?;
        for part in dirs {
            current = imp::open_dir_at(&current, part)?;
        }
        Ok(current)
    }

    /// The error of `action` on `rel`: a link on the way is named as such.
    fn fail(&self, action: &'static str, rel: &Path, e: io::Error) -> FsError {
        if e.kind() != io::ErrorKind::NotFound {
            if let Some(link) = self.find_link(rel) {
                return link_error(&link);
            }
        }
        FsError::new(action, &self.join(rel), e)
    }

    /// The first link on the way to `rel`, if any.
    fn find_link(&self, rel: &Path) -> Option<PathBuf> {
        let parts = parts_of(rel, &self.path).ok()?;
        let mut current = imp::clone(&self.dir).ok()?;
        let mut shown = self.path.clone();
        for part in parts {
            shown.push(part);
            match imp::entry_at(&current, part).ok()? {
                EntryKind::Link => return Some(shown),
                EntryKind::Dir => current = imp::open_dir_at(&current, part).ok()?,
                _ => return None,
            }
        }
        None
    }
}

impl FsError {
    /// True when the error is a symbolic link [`Beneath`] refused to
    /// follow (its `path` is the link).
    pub fn is_refused_link(&self) -> bool {
        self.action == LINK_REFUSED
    }
}

#[cfg(unix)]
#[path = "beneath/unix.rs"]
mod imp;

#[cfg(not(unix))]
#[path = "beneath/portable.rs"]
mod imp;

#[cfg(all(test, unix))]
mod tests;
