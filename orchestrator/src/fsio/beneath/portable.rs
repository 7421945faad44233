//! Without handle-relative system calls: a folder is its path, and each
//! name is checked not to be a link before it is used (a link swapped
//! in between is not caught).
use super::{Access, EntryKind};
use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

/// A folder, by its path.
#[derive(Debug, Clone)]
pub(super) struct Handle(PathBuf);

fn no_link(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(io::Error::other("it is a symbolic link")),
        _ => Ok(()),
    }
}

pub(super) fn open_dir(path: &Path) -> io::Result<Handle> {
    if fs::metadata(path)?.is_dir() {
        Ok(Handle(path.to_owned()))
    } else {
        Err(io::Error::other("it is not a folder"))
    }
}

pub(super) fn clone(dir: &Handle) -> io::Result<Handle> {
    Ok(dir.clone())
}

pub(super) fn sync(_dir: &Handle) -> io::Result<()> {
    Ok(())
}

pub(super) fn open_dir_at(dir: &Handle, name: &OsStr) -> io::Result<Handle> {
    let path = dir.0.join(name);
    no_link(&path)?;
    open_dir(&path)
}

pub(super) fn open_file_at(dir: &Handle, name: &OsStr, a: Access) -> io::Result<File> {
    let path = dir.0.join(name);
    no_link(&path)?;
    OpenOptions::new()
        .read(a.read || !(a.write || a.append))
        .write(a.write)
        .append(a.append)
        .create(a.create)
        .create_new(a.create_new)
        .truncate(a.truncate)
        .open(path)
}

pub(super) fn dir_beneath(_dir: &Handle, _parts: &[&OsStr]) -> Option<io::Result<Handle>> {
    None
}

pub(super) fn file_beneath(
    _dir: &Handle,
    _parts: &[&OsStr],
    _access: Access,
) -> Option<io::Result<File>> {
    None
}

pub(super) fn mkdir_at(dir: &Handle, name: &OsStr) -> io::Result<()> {
    fs::create_dir(dir.0.join(name))
}

pub(super) fn unlink_at(dir: &Handle, name: &OsStr) -> io::Result<()> {
    fs::remove_file(dir.0.join(name))
}

pub(super) fn rename_at(a: &Handle, from: &OsStr, b: &Handle, to: &OsStr) -> io::Result<()> {
    fs::rename(a.0.join(from), b.0.join(to))
}

pub(super) fn entry_at(dir: &Handle, name: &OsStr) -> io::Result<EntryKind> {
    let meta = fs::symlink_metadata(dir.0.join(name))?;
    Ok(if meta.file_type().is_symlink() {
        EntryKind::Link
    } else if meta.is_dir() {
        EntryKind::Dir
    } else if meta.is_file() {
        EntryKind::File(meta.len())
    } else {
        EntryKind::Other
    })
}

pub(super) fn list(dir: &Handle) -> io::Result<Vec<(OsString, EntryKind)>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(&dir.0)? {
        let name = entry?.file_name();
        let kind = entry_at(dir, &name)?;
        out.push((name, kind));
    }
    Ok(out)
}
