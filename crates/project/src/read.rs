//! Reading a project's own files (`koas.toml`, its words files, a
//! `.vale.ini` and its styles) as a document's repository may have left
//! them: a FIFO is refused without waiting for a writer, a file that is
//! not regular or grows past its limit is refused without being read
//! whole.

use std::io::Read;
use std::path::Path;

/// The bytes of the regular file at `path` (links followed), at most
/// `limit` of them; `Err` says why not, in a few words
/// (`not a regular file, not read`, `over 1048576 bytes, not read`, or
/// the system's error).
pub(crate) fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, String> {
    let not_regular = "not a regular file, not read".to_owned();
    let too_large = || format!("over {limit} bytes, not read");
    // A look first: a socket's open fails with a word that says nothing.
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err(not_regular);
    }
    if meta.len() > limit {
        return Err(too_large());
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        // Should the path have become a FIFO since the look, its open
        // returns at once instead of waiting for a writer; the check of
        // the opened file below refuses it.
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(|e| e.to_string())?;
    if !file.metadata().map_err(|e| e.to_string())?.is_file() {
        return Err(not_regular);
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_a_fifo_and_a_large_file_are_refused_unread() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(
            read_regular(dir.path(), 10),
            Err("not a regular file, not read".to_owned())
        );
        let big = dir.path().join("big");
        std::fs::write(&big, "0123456789A").expect("write");
        assert_eq!(
            read_regular(&big, 10),
            Err("over 10 bytes, not read".to_owned())
        );
        assert_eq!(read_regular(&big, 11).map(|b| b.len()), Ok(11));
        #[cfg(unix)]
        {
            let fifo = dir.path().join("fifo");
            let made = std::process::Command::new("mkfifo").arg(&fifo).status();
            if made.is_ok_and(|s| s.success()) {
                assert_eq!(
                    read_regular(&fifo, 10),
                    Err("not a regular file, not read".to_owned())
                );
            }
        }
    }
}
