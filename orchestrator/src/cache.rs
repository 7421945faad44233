//! The content-addressed store of a workspace (`.koas/cache`).
//!
//! * `objects/<xx>/<blake3>`: artifact values, as canonical JSON bytes,
//!   named by their blake3 hash. A blob of [`COMPRESS_FROM`] bytes or more
//!   is stored as a zstd frame: artifacts are JSON, which compresses about
//!   tenfold, and the cache holds two versions of every Stage 1 artifact of
//!   a document, so uncompressed it was the largest part of a workspace.
//!   Canonical JSON never starts with zstd's magic number, so both forms
//!   are read back, and caches written before compression stay valid.
//! * `actions/<xx>/<key>.json`: for one cache key (see [`cache_key`]), the
//!   hashes of the outputs it produced plus the summary and warnings.
//! * `plugins.json`: blake3 hashes of plugin libraries, remembered by path,
//!   size and modification time so a cached run does not re-read them.
//!
//! Every file is written atomically, so a crash leaves either an entry or
//! nothing.

#[cfg(test)]
use crate::fsio::atomic_write;
use crate::workspace::WorkspaceError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Blobs of at least this many bytes are stored compressed; below it the
/// zstd frame would save next to nothing and cost a little time.
pub const COMPRESS_FROM: usize = 1024;

/// zstd's default level: about tenfold on artifact JSON at hundreds of MB/s,
/// so a cached run does not notice it.
const ZSTD_LEVEL: i32 = 3;

/// The first bytes of every zstd frame (RFC 8878).
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// What one kernel run produced, stored under its cache key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionRecord {
    /// Name of the kernel that produced the outputs.
    pub kernel: String,
    /// Its version at that time (informative: the version is already part of
    /// the key).
    pub version: String,
    /// Output artifact name → blake3 hash of its canonical JSON.
    pub outputs: BTreeMap<String, String>,
    /// The summary the kernel returned, shown again on a cache hit.
    pub summary: String,
    /// The warnings the kernel returned, reported again on a cache hit.
    pub warnings: Vec<String>,
}

/// Everything that can change a kernel's outputs, and so goes into its
/// cache key: anything left out here would let a stale result be reused.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct KeyParts<'a> {
    /// Kernel name; two kernels never share an entry.
    pub kernel: &'a str,
    /// Kernel version: bumping it invalidates every entry of the kernel.
    pub version: &'a str,
    /// blake3 of the plugin library file.
    pub plugin_hash: &'a str,
    /// The kernel's config after the pipeline's overrides.
    pub config: &'a Value,
    /// Input artifact → hash; `None` for an absent optional input.
    pub inputs: &'a BTreeMap<String, Option<String>>,
    /// For LLM kernels: model identity and sampling parameters.
    pub llm: Option<&'a Value>,
}

/// The cache key: blake3 of the canonical JSON of [`KeyParts`].
pub fn cache_key(parts: &KeyParts<'_>) -> String {
    let value = serde_json::to_value(parts).unwrap_or(Value::Null);
    let mut bytes = b"koas-cache-key-v1\n".to_vec();
    bytes.extend(koas_kernel_api::hash::canonical_bytes(&value));
    blake3::hash(&bytes).to_hex().to_string()
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct PluginHashEntry {
    len: u64,
    modified_ns: u128,
    hash: String,
}

/// A workspace's cache, `<workspace>/.koas/cache`; see the module docs
/// for its layout.
#[derive(Debug)]
pub struct Cache {
    /// The workspace the cache is in: every write goes through its held
    /// folder ([`crate::workspace::hold`]), no link followed.
    workspace: PathBuf,
    root: PathBuf,
    plugin_hashes: Mutex<BTreeMap<String, PluginHashEntry>>,
    plugin_hashes_dirty: Mutex<bool>,
}

/// A cache failure: the same errors as other workspace I/O.
pub type CacheError = WorkspaceError;

impl Cache {
    /// The cache of `workspace` (nothing is created until written).
    pub fn open(workspace: &Path) -> Cache {
        let root = workspace.join(crate::workspace::PRIVATE_DIR).join("cache");
        let plugin_hashes = std::fs::read(root.join("plugins.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        Cache {
            workspace: workspace.to_owned(),
            root,
            plugin_hashes: Mutex::new(plugin_hashes),
            plugin_hashes_dirty: Mutex::new(false),
        }
    }

    /// Writes a file of the cache atomically, below the held workspace.
    fn write(&self, path: &Path, bytes: &[u8]) -> Result<(), CacheError> {
        crate::workspace::write_below(&self.workspace, path, bytes)
    }

    /// The cache folder, `<workspace>/.koas/cache` (it may not exist yet).
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub(crate) fn blob_path(&self, hash: &str) -> PathBuf {
        let (a, _) = hash.split_at(hash.len().min(2));
        self.root.join("objects").join(a).join(hash)
    }

    fn action_path(&self, key: &str) -> PathBuf {
        let (a, _) = key.split_at(key.len().min(2));
        self.root
            .join("actions")
            .join(a)
            .join(format!("{key}.json"))
    }

    /// `true` when a blob with that hash is stored.
    pub fn has_blob(&self, hash: &str) -> bool {
        self.blob_path(hash).is_file()
    }

    /// Stores canonical bytes under their hash (once) and returns the hash.
    /// The hash is always that of the canonical bytes, whatever form they
    /// are stored in.
    pub fn put_blob(&self, bytes: &[u8]) -> Result<String, CacheError> {
        let hash = blake3::hash(bytes).to_hex().to_string();
        let path = self.blob_path(&hash);
        if !path.is_file() {
            if bytes.len() >= COMPRESS_FROM {
                let packed = zstd::bulk::compress(bytes, ZSTD_LEVEL).map_err(|source| {
                    WorkspaceError::Io {
                        path: path.clone(),
                        source,
                    }
                })?;
                self.write(&path, &packed)?;
            } else {
                self.write(&path, bytes)?;
            }
        }
        Ok(hash)
    }

    /// The canonical bytes of a stored blob (decompressed when stored
    /// compressed).
    pub fn get_bytes(&self, hash: &str) -> Result<Vec<u8>, CacheError> {
        let path = self.blob_path(hash);
        let invalid = |path: &PathBuf, e: std::io::Error| WorkspaceError::Io {
            path: path.clone(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
        };
        let bytes = std::fs::read(&path).map_err(|source| WorkspaceError::Io {
            path: path.clone(),
            source,
        })?;
        if !bytes.starts_with(&ZSTD_MAGIC) {
            return Ok(bytes);
        }
        // Frames written by `put_blob` carry their size: decompress into a
        // buffer of exactly that size rather than growing one. A frame
        // without it was not written here.
        let size = match zstd::zstd_safe::get_frame_content_size(&bytes) {
            Ok(Some(size)) => usize::try_from(size).ok(),
            _ => None,
        }
        .ok_or_else(|| {
            invalid(
                &path,
                std::io::Error::other("a zstd frame without a usable content size"),
            )
        })?;
        zstd::bulk::decompress(&bytes, size).map_err(|e| invalid(&path, e))
    }

    /// Reads and parses a stored artifact value.
    pub fn get_value(&self, hash: &str) -> Result<Value, CacheError> {
        let bytes = self.get_bytes(hash)?;
        serde_json::from_slice(&bytes).map_err(|e| WorkspaceError::Io {
            path: self.blob_path(hash),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
        })
    }

    /// The record stored under `key`, if it exists and every output blob it
    /// names is still present.
    pub fn get_action(&self, key: &str) -> Option<ActionRecord> {
        let bytes = std::fs::read(self.action_path(key)).ok()?;
        let record: ActionRecord = serde_json::from_slice(&bytes).ok()?;
        record
            .outputs
            .values()
            .all(|h| self.has_blob(h))
            .then_some(record)
    }

    /// Stores a record under `key`.
    pub fn put_action(&self, key: &str, record: &ActionRecord) -> Result<(), CacheError> {
        let path = self.action_path(key);
        let bytes = serde_json::to_vec_pretty(record).map_err(|e| WorkspaceError::Io {
            path: path.clone(),
            source: std::io::Error::other(e),
        })?;
        self.write(&path, &bytes)
    }

    /// Forgets the record stored under `key`, so that the next run runs
    /// its kernel again; a missing record is not an error.
    pub fn remove_action(&self, key: &str) -> Result<(), CacheError> {
        let path = self.action_path(key);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(WorkspaceError::Io { path, source }),
        }
    }

    /// The blake3 hash of a plugin library, remembered by path, size and
    /// modification time.
    pub fn plugin_hash(&self, path: &Path) -> Result<String, CacheError> {
        let io = |source| WorkspaceError::Io {
            path: path.to_path_buf(),
            source,
        };
        let meta = std::fs::metadata(path).map_err(io)?;
        let modified_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let key = path.to_string_lossy().into_owned();
        if let Ok(map) = self.plugin_hashes.lock() {
            if let Some(e) = map.get(&key) {
                if e.len == meta.len() && e.modified_ns == modified_ns && modified_ns != 0 {
                    return Ok(e.hash.clone());
                }
            }
        }
        let bytes = std::fs::read(path).map_err(io)?;
        let hash = blake3::hash(&bytes).to_hex().to_string();
        if let Ok(mut map) = self.plugin_hashes.lock() {
            map.insert(
                key,
                PluginHashEntry {
                    len: meta.len(),
                    modified_ns,
                    hash: hash.clone(),
                },
            );
            if let Ok(mut d) = self.plugin_hashes_dirty.lock() {
                *d = true;
            }
        }
        Ok(hash)
    }

    /// Saves newly computed plugin hashes.
    pub fn flush(&self) -> Result<(), CacheError> {
        let dirty = self.plugin_hashes_dirty.lock().map(|d| *d).unwrap_or(false);
        if !dirty {
            return Ok(());
        }
        let path = self.root.join("plugins.json");
        let bytes = match self.plugin_hashes.lock() {
            Ok(map) => serde_json::to_vec_pretty(&*map).map_err(|e| WorkspaceError::Io {
                path: path.clone(),
                source: std::io::Error::other(e),
            })?,
            Err(_) => return Ok(()),
        };
        self.write(&path, &bytes)
    }

    /// Garbage-collects the cache: deletes every action record whose key is
    /// not in `keep_actions`, then every blob that no kept action names and
    /// that is not in `keep_blobs`. Actions go first, so an interruption at
    /// any point leaves no kept action without its blobs; and a blob that
    /// is gone is only ever a cache miss (see [`Cache::get_action`]).
    pub fn collect(
        &self,
        keep_actions: &BTreeSet<String>,
        keep_blobs: &BTreeSet<String>,
    ) -> Result<Collected, CacheError> {
        let mut done = Collected::default();
        let mut blobs = keep_blobs.clone();
        for path in files_below(&self.root.join("actions"))? {
            let key = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            if keep_actions.contains(&key) {
                if let Some(record) = std::fs::read(&path)
                    .ok()
                    .and_then(|b| serde_json::from_slice::<ActionRecord>(&b).ok())
                {
                    blobs.extend(record.outputs.into_values());
                }
                continue;
            }
            done.bytes += remove(&path)?;
            done.actions += 1;
        }
        for path in files_below(&self.root.join("objects"))? {
            let name = path
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            // Temporary files of an interrupted write are garbage too.
            if blobs.contains(&name) {
                continue;
            }
            done.bytes += remove(&path)?;
            done.blobs += 1;
        }
        Ok(done)
    }

    /// Deletes the whole cache. Returns `false` when there was none.
    pub fn clear(&self) -> Result<bool, CacheError> {
        if !self.root.exists() {
            return Ok(false);
        }
        std::fs::remove_dir_all(&self.root).map_err(|source| WorkspaceError::Io {
            path: self.root.clone(),
            source,
        })?;
        Ok(true)
    }
}

/// What [`Cache::collect`] deleted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Collected {
    /// Action records deleted.
    pub actions: usize,
    /// Blobs deleted.
    pub blobs: usize,
    /// Bytes freed.
    pub bytes: u64,
}

/// Every file below `dir` (two levels: the cache's fan-out folders);
/// nothing when it does not exist.
fn files_below(dir: &Path) -> Result<Vec<PathBuf>, CacheError> {
    let io = |path: &Path, source| WorkspaceError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut out = Vec::new();
    let top = match std::fs::read_dir(dir) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(io(dir, e)),
    };
    for entry in top.flatten() {
        let sub = entry.path();
        if !sub.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&sub).map_err(|e| io(&sub, e))?.flatten() {
            if file.path().is_file() {
                out.push(file.path());
            }
        }
    }
    Ok(out)
}

/// Removes a file, returning its size; one already gone is not an error
/// (another process collected it).
fn remove(path: &Path) -> Result<u64, CacheError> {
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    match std::fs::remove_file(path) {
        Ok(()) => Ok(size),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(source) => Err(WorkspaceError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn collect_keeps_the_kept_actions_and_their_blobs_and_nothing_else() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = Cache::open(dir.path());
        let record = |h: &str| ActionRecord {
            kernel: "k".into(),
            version: "1.0.0".into(),
            outputs: [("out".to_string(), h.to_string())].into_iter().collect(),
            summary: String::new(),
            warnings: Vec::new(),
        };
        let kept = cache.put_blob(b"1").expect("blob");
        let dropped = cache.put_blob(b"2").expect("blob");
        let pinned = cache.put_blob(b"3").expect("blob");
        cache.put_action("a1", &record(&kept)).expect("action");
        cache.put_action("a2", &record(&dropped)).expect("action");
        let keep: BTreeSet<String> = ["a1".to_string()].into_iter().collect();
        let pins: BTreeSet<String> = [pinned.clone()].into_iter().collect();
        let done = cache.collect(&keep, &pins).expect("collect");
        assert_eq!((done.actions, done.blobs), (1, 1));
        assert!(cache.get_action("a1").is_some());
        assert!(cache.get_action("a2").is_none());
        assert!(cache.has_blob(&kept) && cache.has_blob(&pinned) && !cache.has_blob(&dropped));
        // Collected twice: nothing more to do.
        assert_eq!(
            cache.collect(&keep, &pins).expect("again"),
            Collected::default()
        );
        // A blob lost behind a kept action (an interrupted collection, a
        // user's rm) is a cache miss, not an error.
        std::fs::remove_file(cache.blob_path(&kept)).expect("rm");
        assert!(cache.get_action("a1").is_none());
    }

    #[test]
    fn large_blobs_are_stored_compressed_and_read_back_exactly() {
        let ws = tempfile::tempdir().expect("tmp");
        let cache = Cache::open(ws.path());
        let value = json!({"lines": (0..2000).map(|i| format!("line {i} of a long document")).collect::<Vec<_>>()});
        let bytes = koas_kernel_api::hash::canonical_bytes(&value);
        assert!(bytes.len() >= COMPRESS_FROM);
        let h = cache.put_blob(&bytes).expect("put");
        assert_eq!(
            h,
            blake3::hash(&bytes).to_hex().to_string(),
            "named by the canonical bytes"
        );
        let stored = std::fs::read(cache.blob_path(&h)).expect("stored");
        assert!(stored.starts_with(&ZSTD_MAGIC), "stored as a zstd frame");
        assert!(
            stored.len() * 4 < bytes.len(),
            "{} → {}",
            bytes.len(),
            stored.len()
        );
        assert_eq!(cache.get_bytes(&h).expect("bytes"), bytes);
        assert_eq!(cache.get_value(&h).expect("value"), value);

        // A blob written uncompressed by an earlier koas is still read.
        let old = koas_kernel_api::hash::canonical_bytes(&json!({"old": "x".repeat(4000)}));
        let old_hash = blake3::hash(&old).to_hex().to_string();
        atomic_write(&cache.blob_path(&old_hash), &old).expect("old blob");
        assert_eq!(cache.get_bytes(&old_hash).expect("old bytes"), old);

        // A damaged frame is an error naming the blob, never a wrong value.
        let mut torn = stored.clone();
        torn.truncate(stored.len() / 2);
        atomic_write(&cache.blob_path(&h), &torn).expect("tear");
        let err = cache.get_value(&h).expect_err("torn blob");
        assert!(err.to_string().contains(&h), "{err}");
    }

    #[test]
    fn blobs_and_actions_round_trip() {
        let ws = tempfile::tempdir().expect("tmp");
        let cache = Cache::open(ws.path());
        let bytes = koas_kernel_api::hash::canonical_bytes(&json!({"a": 1}));
        let h = cache.put_blob(&bytes).expect("put");
        assert!(cache.has_blob(&h));
        assert_eq!(cache.get_value(&h).expect("get"), json!({"a": 1}));
        let rec = ActionRecord {
            kernel: "k".into(),
            version: "1.0.0".into(),
            outputs: [("o".to_string(), h.clone())].into(),
            summary: "s".into(),
            warnings: vec![],
        };
        cache.put_action("key1", &rec).expect("put action");
        assert_eq!(cache.get_action("key1"), Some(rec));
        std::fs::remove_file(cache.blob_path(&h)).expect("rm");
        assert_eq!(
            cache.get_action("key1"),
            None,
            "a record whose blob is gone is a miss"
        );
        assert!(cache.clear().expect("clear"));
        assert!(!cache.clear().expect("clear twice"));
    }

    #[test]
    fn every_key_part_changes_the_key() {
        let cfg = json!({"n": 1});
        let inputs: BTreeMap<String, Option<String>> =
            [("a".to_string(), Some("h1".to_string()))].into();
        let base = KeyParts {
            kernel: "k",
            version: "1.0.0",
            plugin_hash: "p",
            config: &cfg,
            inputs: &inputs,
            llm: None,
        };
        let k0 = cache_key(&base);
        let cfg2 = json!({"n": 2});
        let inputs2: BTreeMap<String, Option<String>> =
            [("a".to_string(), Some("h2".to_string()))].into();
        let llm = json!({"model": "m"});
        for changed in [
            KeyParts {
                kernel: "k2",
                ..base
            },
            KeyParts {
                version: "1.0.1",
                ..base
            },
            KeyParts {
                plugin_hash: "q",
                ..base
            },
            KeyParts {
                config: &cfg2,
                ..base
            },
            KeyParts {
                inputs: &inputs2,
                ..base
            },
            KeyParts {
                llm: Some(&llm),
                ..base
            },
        ] {
            assert_ne!(cache_key(&changed), k0);
        }
        assert_eq!(cache_key(&KeyParts { ..base }), k0);
    }
}
