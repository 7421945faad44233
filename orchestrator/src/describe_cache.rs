//! What plugin libraries said when described, remembered across runs, so
//! that a run whose kernels are all cache hits starts no worker process
//! (loading and describing every library in a worker cost ~80 ms of a
//! fully cached run).
//!
//! One JSON file, `$KOAS_CACHE_DIR/describe.json` (else
//! `$XDG_CACHE_HOME/koas/`, else `~/.cache/koas/`), keyed by the library's
//! canonical path and identity: size, modification time and, on Unix, the
//! device, inode and change time — a replaced or rebuilt library (even one
//! copied with its old modification time) is described again. Entries also
//! carry the ABI version, the koas version and the entry format, and the
//! `koas-kernel-api` version the library names. Only successful describes
//! are remembered: a library that fails is loaded again, so its problem is
//! reported every time. Everything here is best effort: an unreadable or
//! unwritable cache means describing as before.

use crate::described::LibraryKernels;
use koas_kernel_api::KernelSpec;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The file's name in the cache folder.
const FILE: &str = "describe.json";

/// The version of what an entry holds: entries of another (older ones
/// lack the libraries' kernel-api version) are described again.
const FORMAT: u32 = 2;

/// What a library was when described.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Identity {
    len: u64,
    modified_ns: u128,
    #[serde(default)]
    changed_ns: i128,
    #[serde(default)]
    dev: u64,
    #[serde(default)]
    ino: u64,
    abi: u32,
    koas: String,
    #[serde(default)]
    format: u32,
}

impl Identity {
    fn of(path: &Path) -> Option<Identity> {
        let meta = std::fs::metadata(path).ok()?;
        let modified_ns = meta
            .modified()
            .ok()?
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?
            .as_nanos();
        #[cfg(unix)]
        let (changed_ns, dev, ino) = {
            use std::os::unix::fs::MetadataExt;
            (
                i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
                meta.dev(),
                meta.ino(),
            )
        };
        #[cfg(not(unix))]
        let (changed_ns, dev, ino) = (0, 0, 0);
        Some(Identity {
            len: meta.len(),
            modified_ns,
            changed_ns,
            dev,
            ino,
            abi: koas_kernel_api::abi::ABI_VERSION,
            koas: env!("CARGO_PKG_VERSION").to_owned(),
            format: FORMAT,
        })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    identity: Identity,
    kernels: Vec<KernelSpec>,
    /// The `koas-kernel-api` version the library was built with, when it
    /// says it.
    #[serde(default)]
    api_version: Option<String>,
}

/// The remembered describes, read once per process.
#[derive(Debug, Default)]
pub struct DescribeCache {
    file: Option<PathBuf>,
    entries: BTreeMap<PathBuf, Entry>,
    dirty: bool,
}

/// The cache folder: `$KOAS_CACHE_DIR`, `$XDG_CACHE_HOME/koas` or
/// `~/.cache/koas` (absolute paths only, as XDG says); `None` without one.
pub fn cache_dir() -> Option<PathBuf> {
    let from_env = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    if let Some(dir) = from_env("KOAS_CACHE_DIR") {
        return Some(dir);
    }
    let base = from_env("XDG_CACHE_HOME").or_else(|| {
        from_env("HOME")
            .or_else(|| from_env("USERPROFILE"))
            .map(|home| home.join(".cache"))
    })?;
    Some(base.join("koas"))
}

impl DescribeCache {
    /// The cache in the user's cache folder (empty when there is none).
    pub fn open() -> DescribeCache {
        Self::open_in(cache_dir())
    }

    /// The cache in `dir` (`None`: an empty cache that saves nothing).
    pub fn open_in(dir: Option<PathBuf>) -> DescribeCache {
        let file = dir.map(|d| d.join(FILE));
        let entries = file
            .as_ref()
            .and_then(|f| std::fs::read(f).ok())
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        DescribeCache {
            file,
            entries,
            dirty: false,
        }
    }

    /// What `library` described last time, if it is still the same file.
    pub fn get(&self, library: &Path) -> Option<LibraryKernels> {
        let entry = self.entries.get(library)?;
        (Identity::of(library)? == entry.identity).then(|| LibraryKernels {
            kernels: entry.kernels.iter().cloned().map(Ok).collect(),
            api_version: entry.api_version.clone(),
        })
    }

    /// Remembers a successful describe of `library` (every kernel of it
    /// described; a partial failure is not remembered).
    pub fn put(&mut self, library: &Path, described: &LibraryKernels) {
        let Some(identity) = Identity::of(library) else {
            return;
        };
        let Some(kernels) = described
            .kernels
            .iter()
            .cloned()
            .collect::<Result<Vec<_>, _>>()
            .ok()
        else {
            return;
        };
        self.entries.insert(
            library.to_path_buf(),
            Entry {
                identity,
                kernels,
                api_version: described.api_version.clone(),
            },
        );
        self.dirty = true;
    }

    /// Writes the file if something changed (entries of libraries that no
    /// longer exist are dropped).
    pub fn save(&mut self) {
        let Some(file) = &self.file else {
            return;
        };
        if !self.dirty {
            return;
        }
        self.entries.retain(|path, _| path.is_file());
        if let Ok(bytes) = serde_json::to_vec(&self.entries) {
            if let Some(dir) = file.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let _ = crate::fsio::atomic_write(file, &bytes);
        }
        self.dirty = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_library_is_described_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lib = dir.path().join("libkoas_kernel_x.so");
        std::fs::write(&lib, b"version 1").expect("lib");
        let spec = KernelSpec::new("x", "1.0.0").output("o");
        let mut cache = DescribeCache::open_in(Some(dir.path().join("cache")));
        let described = LibraryKernels {
            kernels: vec![Ok(spec.clone())],
            api_version: Some("0.1.0".into()),
        };
        cache.put(&lib, &described);
        cache.save();
        let again = DescribeCache::open_in(Some(dir.path().join("cache")));
        assert_eq!(again.get(&lib), Some(described));
        // Replaced by another build (another inode, size and times).
        let tmp = dir.path().join("new.so");
        std::fs::write(&tmp, b"version 2, longer").expect("new");
        std::fs::rename(&tmp, &lib).expect("replace");
        assert_eq!(again.get(&lib), None);
        // A failed describe is not remembered.
        let mut cache = DescribeCache::open_in(Some(dir.path().join("cache")));
        cache.put(
            &lib,
            &LibraryKernels {
                kernels: vec![Ok(spec), Err("boom".into())],
                api_version: None,
            },
        );
        assert_eq!(cache.get(&lib), None);
    }
}
