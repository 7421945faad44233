//! The system calls, relative to a folder's handle.
use super::{Access, EntryKind};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// A held folder.
pub(super) type Handle = File;

const DIR: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::CLOEXEC)
    .union(OFlags::NOFOLLOW);

fn file_flags(a: Access) -> OFlags {
    // NONBLOCK: opening a FIFO must not wait for its other end (a
    // FIFO is refused once open); it changes nothing for a file.
    let mut f = OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NONBLOCK;
    f |= if (a.write || a.append) && a.read {
        OFlags::RDWR
    } else if a.write || a.append {
        OFlags::WRONLY
    } else {
        OFlags::RDONLY
    };
    if a.append {
        f |= OFlags::APPEND;
    }
    if a.create {
        f |= OFlags::CREATE;
    }
    if a.create_new {
        f |= OFlags::CREATE | OFlags::EXCL;
    }
    if a.truncate {
        f |= OFlags::TRUNC;
    }
    f
}

const NEW_FILE: Mode = Mode::from_raw_mode(0o666);

/// Opens the folder `path` as given (links in it followed).
pub(super) fn open_dir(path: &Path) -> io::Result<Handle> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    Ok(File::from(rustix::fs::open(path, flags, Mode::empty())?))
}

pub(super) fn clone(dir: &Handle) -> io::Result<Handle> {
    dir.try_clone()
}

pub(super) fn sync(dir: &Handle) -> io::Result<()> {
    dir.sync_all()
}

pub(super) fn open_dir_at(dir: &Handle, name: &OsStr) -> io::Result<Handle> {
    Ok(File::from(rustix::fs::openat(
        dir.as_fd(),
        name,
        DIR,
        Mode::empty(),
    )?))
}

pub(super) fn open_file_at(dir: &Handle, name: &OsStr, access: Access) -> io::Result<File> {
    Ok(File::from(rustix::fs::openat(
        dir.as_fd(),
        name,
        file_flags(access),
        NEW_FILE,
    )?))
}

/// `openat2` state: 0 not tried, 1 works, 2 missing.
#[cfg(any(target_os = "linux", target_os = "android"))]
static OPENAT2: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Opens `parts` below `dir` in one `openat2` call; `None` where the
/// kernel lacks it, or refused for a reason the walk should decide.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn beneath(dir: &Handle, parts: &[&OsStr], flags: OFlags, mode: Mode) -> Option<io::Result<File>> {
    use rustix::fs::ResolveFlags;
    use std::sync::atomic::Ordering;
    if OPENAT2.load(Ordering::Relaxed) == 2 {
        return None;
    }
    let path: std::path::PathBuf = parts.iter().collect();
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    match rustix::fs::openat2(dir.as_fd(), &path, flags, mode, resolve) {
        Ok(fd) => {
            OPENAT2.store(1, Ordering::Relaxed);
            Some(Ok(File::from(fd)))
        }
        Err(rustix::io::Errno::NOSYS) => {
            OPENAT2.store(2, Ordering::Relaxed);
            None
        }
        // A concurrent rename (EAGAIN) or a filter that forbids the
        // call (EPERM): the walk decides.
        Err(rustix::io::Errno::AGAIN) | Err(rustix::io::Errno::PERM) => None,
        Err(e) => Some(Err(e.into())),
    }
}

/// Whether `openat2` was used (1), found missing (2) or not tried (0).
#[cfg(all(test, any(target_os = "linux", target_os = "android")))]
pub(super) fn openat2_state() -> u8 {
    OPENAT2.load(std::sync::atomic::Ordering::Relaxed)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn beneath(
    _dir: &Handle,
    _parts: &[&OsStr],
    _flags: OFlags,
    _mode: Mode,
) -> Option<io::Result<File>> {
    None
}

pub(super) fn dir_beneath(dir: &Handle, parts: &[&OsStr]) -> Option<io::Result<Handle>> {
    beneath(dir, parts, DIR, Mode::empty())
}

pub(super) fn file_beneath(
    dir: &Handle,
    parts: &[&OsStr],
    access: Access,
) -> Option<io::Result<File>> {
    // openat2 takes a mode only with O_CREAT (EINVAL otherwise).
    let mode = if access.create || access.create_new {
        NEW_FILE
    } else {
        Mode::empty()
    };
    beneath(dir, parts, file_flags(access), mode)
}

pub(super) fn mkdir_at(dir: &Handle, name: &OsStr) -> io::Result<()> {
    Ok(rustix::fs::mkdirat(
        dir.as_fd(),
        name,
        Mode::from_raw_mode(0o777),
    )?)
}

pub(super) fn unlink_at(dir: &Handle, name: &OsStr) -> io::Result<()> {
    Ok(rustix::fs::unlinkat(dir.as_fd(), name, AtFlags::empty())?)
}

pub(super) fn rename_at(
    from_dir: &Handle,
    from: &OsStr,
    to_dir: &Handle,
    to: &OsStr,
) -> io::Result<()> {
    Ok(rustix::fs::renameat(
        from_dir.as_fd(),
        from,
        to_dir.as_fd(),
        to,
    )?)
}

fn kind_of(file_type: FileType, len: u64) -> EntryKind {
    match file_type {
        FileType::RegularFile => EntryKind::File(len),
        FileType::Directory => EntryKind::Dir,
        FileType::Symlink => EntryKind::Link,
        _ => EntryKind::Other,
    }
}

pub(super) fn entry_at(dir: &Handle, name: &OsStr) -> io::Result<EntryKind> {
    let stat = rustix::fs::statat(dir.as_fd(), name, AtFlags::SYMLINK_NOFOLLOW)?;
    Ok(kind_of(
        FileType::from_raw_mode(stat.st_mode),
        u64::try_from(stat.st_size).unwrap_or(0),
    ))
}

pub(super) fn list(dir: &Handle) -> io::Result<Vec<(OsString, EntryKind)>> {
    let mut out = Vec::new();
    let mut read = rustix::fs::Dir::read_from(dir.as_fd())?;
    while let Some(entry) = read.read() {
        let entry = entry?;
        let name = OsStr::from_bytes(entry.file_name().to_bytes());
        if name == "." || name == ".." {
            continue;
        }
        // A file's length, or a type the folder does not say, is
        // asked of the entry itself (not followed).
        let kind = match entry.file_type() {
            FileType::Directory => EntryKind::Dir,
            FileType::Symlink => EntryKind::Link,
            _ => entry_at(dir, name)?,
        };
        out.push((name.to_owned(), kind));
    }
    Ok(out)
}
