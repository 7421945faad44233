//! The response cache: one JSON file per answered request under
//! `<workspace>/.koas/llm-cache/<key[0..2]>/<key>.json`, keyed by input
//! hash + exact model id + parameters. Written atomically.

use crate::error::LlmError;
use crate::keys::Params;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// A cached answer: one file, enough to answer the request again without
/// a call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CachedAnswer {
    /// The cache key (checked on read).
    pub key: String,
    /// The request's input hash (`sha256:` of system + user prompt).
    pub input_hash: String,
    /// The exact model id that was asked.
    pub model: String,
    /// The sampling parameters of the request.
    pub params: Params,
    /// The answer text, as received.
    pub text: String,
    /// Prompt tokens of the original call.
    pub prompt_tokens: u64,
    /// Completion tokens of the original call.
    pub completion_tokens: u64,
    /// Whether those counts were estimated.
    pub tokens_estimated: bool,
    /// Whether generation ended at a stop marker.
    pub stopped_at_marker: bool,
}

/// A response cache rooted at a folder.
#[derive(Debug, Clone)]
pub struct ResponseCache {
    dir: PathBuf,
}

impl ResponseCache {
    /// A cache in `dir` (created on first write).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        ResponseCache { dir: dir.into() }
    }

    /// The cache folder (it may not exist yet).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, key: &str) -> PathBuf {
        let shard: String = key.chars().take(2).collect();
        self.dir.join(shard).join(format!("{key}.json"))
    }

    /// The answer stored under `key`. A missing, unreadable or mismatching
    /// file is a miss (it will be overwritten by the next answer).
    pub fn get(&self, key: &str) -> Option<CachedAnswer> {
        let bytes = std::fs::read(self.path(key)).ok()?;
        let answer: CachedAnswer = serde_json::from_slice(&bytes).ok()?;
        (answer.key == key).then_some(answer)
    }

    /// Stores an answer: temp file, fsync, rename.
    pub fn put(&self, answer: &CachedAnswer) -> Result<(), LlmError> {
        let path = self.path(&answer.key);
        let dir = path
            .parent()
            .ok_or_else(|| LlmError::Io("cache path has no folder".to_string()))?;
        std::fs::create_dir_all(dir)
            .map_err(|e| LlmError::Io(format!("{}: {e}", dir.display())))?;
        let bytes = serde_json::to_vec_pretty(answer)
            .map_err(|e| LlmError::Io(format!("serialising a cache entry: {e}")))?;
        let tmp = dir.join(format!(
            ".{}.{}.{}.tmp",
            answer.key,
            std::process::id(),
            fastrand::u64(..)
        ));
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(&bytes)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &path)
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            LlmError::Io(format!("{}: {e}", path.display()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(key: &str) -> CachedAnswer {
        CachedAnswer {
            key: key.into(),
            input_hash: "sha256:x".into(),
            model: "m".into(),
            params: Params {
                temperature: 0.0,
                max_tokens: 5,
                stop_markers: vec![],
                complete_after: vec![],
                prose_until: None,
            },
            text: "hello".into(),
            prompt_tokens: 1,
            completion_tokens: 2,
            tokens_estimated: false,
            stopped_at_marker: false,
        }
    }

    #[test]
    fn round_trip_and_corruption_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ResponseCache::new(dir.path().join("c"));
        assert!(cache.get("abcd").is_none());
        cache.put(&answer("abcd")).unwrap();
        assert_eq!(cache.get("abcd").unwrap().text, "hello");
        std::fs::write(cache.path("abcd"), b"{broken").unwrap();
        assert!(cache.get("abcd").is_none());
        // A file stored under the wrong name is not trusted.
        std::fs::write(
            cache.path("abzz"),
            serde_json::to_vec(&answer("abcd")).unwrap(),
        )
        .unwrap();
        assert!(cache.get("abzz").is_none());
    }
}
