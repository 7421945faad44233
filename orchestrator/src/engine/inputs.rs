//! The inputs of kernels: source files, artifacts the host provides,
//! cache keys, and the requests sent to kernels.

use super::{Artifact, CanonicalJson, Engine, Provided, RunError};
use crate::cache::{cache_key, KeyParts};
use crate::dag::Producer;
use koas_kernel_api::SourceFile;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

/// The id of an artifact the host provides in memory: its name and
/// canonical JSON, so equal values get equal ids whatever their key order.
fn provided_hash(name: &str, canonical: &[u8]) -> String {
    let mut h = blake3::Hasher::new();
    h.update(b"koas-provided-v1\0");
    h.update(name.as_bytes());
    h.update(b"\0");
    h.update(canonical);
    h.finalize().to_hex().to_string()
}

/// Why an `[inputs]` file was not read, saying how to raise the limit
/// when that is the reason.
fn input_refusal(e: &crate::guarded_read::GuardedReadError) -> String {
    match e {
        crate::guarded_read::GuardedReadError::TooLarge { .. } => format!(
            "{e} on input files; raise it with --max-input-size SIZE or {}=SIZE (e.g. 1G)",
            crate::guarded_read::MAX_INPUT_SIZE_ENV
        ),
        crate::guarded_read::GuardedReadError::NotRegular { .. } => format!(
            "{e}: koas reads [inputs] from regular files only (a FIFO would block the run, a device would never end)"
        ),
        crate::guarded_read::GuardedReadError::Io(_) => e.to_string(),
    }
}

/// A kernel's request as it is sent: the same JSON as
/// [`koas_kernel_api::protocol::RunRequest`], but holding the engine's
/// shared input values instead of copies (a record of 100,000 entries
/// copied for each kernel that reads it cost seconds and gigabytes).
#[derive(serde::Serialize)]
pub(super) struct Request {
    config: Value,
    inputs: BTreeMap<String, Shared>,
}

/// A request ready to be written to a worker: its length is known, its
/// bytes are produced while they are written.
pub(super) struct Streamed<'r> {
    request: &'r Request,
    len: u64,
}

impl crate::worker::Body for Streamed<'_> {
    fn byte_len(&self) -> u64 {
        self.len
    }
    fn write_to(&self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        serde_json::to_writer(w, self.request).map_err(std::io::Error::other)
    }
}

impl Request {
    /// The request as a frame body for a worker (measured once, written
    /// as it is encoded).
    pub(super) fn streamed(&self) -> serde_json::Result<Streamed<'_>> {
        Ok(Streamed {
            request: self,
            len: self.encoded_len()? as u64,
        })
    }

    /// The request's JSON in a buffer of exactly its size: measured first,
    /// so a large request (a record of 100,000 entries is tens of MB) is not
    /// grown by doubling, which held up to three times its size at once.
    pub(super) fn encode(&self) -> serde_json::Result<Vec<u8>> {
        let mut bytes = Vec::with_capacity(self.encoded_len()?);
        serde_json::to_writer(&mut bytes, self)?;
        Ok(bytes)
    }

    /// The length of the request's JSON, serialized into nothing.
    fn encoded_len(&self) -> serde_json::Result<usize> {
        let mut sink = std::io::sink();
        let mut counted = crate::worker::Counted::new(&mut sink);
        serde_json::to_writer(&mut counted, self)?;
        Ok(counted.n as usize)
    }
}

/// A shared value, serialized as the value (canonical text as it is).
#[derive(Clone)]
pub(super) enum Shared {
    Tree(Arc<Value>),
    Canonical(Arc<CanonicalJson>),
}

impl serde::Serialize for Shared {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Shared::Tree(v) => v.serialize(s),
            Shared::Canonical(text) => text.raw().serialize(s),
        }
    }
}

fn source_hash(path: &Path, bytes: &[u8]) -> String {
    let mut h = blake3::Hasher::new();
    h.update(b"koas-source-v1\0");
    h.update(path.to_string_lossy().as_bytes());
    h.update(b"\0");
    h.update(bytes);
    h.finalize().to_hex().to_string()
}

/// A source artifact from the bytes of the file at `path`: one function
/// whether the engine read them or the host gave them, so both key and
/// describe the source alike.
fn source_artifact(path: &Path, bytes: &[u8]) -> Result<Artifact, String> {
    let file = SourceFile::from_bytes(&path.display().to_string(), bytes);
    let value = serde_json::to_value(file).map_err(|e| format!("cannot describe the file: {e}"))?;
    Ok(Artifact {
        hash: source_hash(path, bytes),
        loaded: Some(Shared::Tree(Arc::new(value))),
    })
}

impl Engine<'_> {
    /// Registers the artifacts the host provides, and stores their values
    /// in the cache so `koas replay` can provide them again.
    pub(super) fn load_provided(&mut self) -> Result<BTreeMap<String, String>, RunError> {
        let mut stored = BTreeMap::new();
        for (name, value) in &self.opts.provided {
            let other = match self.prepared.dag.producers.get(name) {
                Some(Producer::Kernel(k)) => Some(format!("an output of kernel `{k}`")),
                Some(Producer::Source) => Some("an [inputs] entry of the pipeline".to_string()),
                None => None,
            };
            if let Some(other) = other {
                return Err(RunError::ProvidedConflict {
                    name: name.clone(),
                    other,
                });
            }
            // Canonical once: the blob stored and the id both need it.
            let artifact = match value {
                Provided::Value(value) => {
                    let canonical = koas_kernel_api::hash::canonical_bytes(value);
                    stored.insert(name.clone(), self.cache.put_blob(&canonical)?);
                    Artifact {
                        hash: provided_hash(name, &canonical),
                        loaded: Some(Shared::Tree(Arc::clone(value))),
                    }
                }
                Provided::Canonical(text) => {
                    stored.insert(name.clone(), self.cache.put_blob(text.bytes())?);
                    Artifact {
                        hash: provided_hash(name, text.bytes()),
                        loaded: Some(Shared::Canonical(Arc::clone(text))),
                    }
                }
            };
            self.artifacts.insert(name.clone(), artifact);
        }
        Ok(stored)
    }

    /// Reads every source file a selected kernel needs (those whose
    /// contents the host gave are not read again).
    pub(super) fn load_sources(&mut self, selected: &BTreeSet<String>) -> Result<(), RunError> {
        if let Some(name) = self
            .opts
            .source_contents
            .keys()
            .find(|name| !self.prepared.pipeline.inputs.contains_key(*name))
        {
            return Err(RunError::UnknownSource(name.clone()));
        }
        let mut needed = BTreeSet::new();
        for name in selected {
            for input in &self.kernel(name).spec.inputs {
                if self.prepared.dag.producers.get(&input.artifact) == Some(&Producer::Source) {
                    needed.insert(input.artifact.clone());
                }
            }
        }
        for name in needed {
            let Some(path) = self.prepared.pipeline.inputs.get(&name) else {
                continue;
            };
            let read;
            let bytes: &[u8] = match self.opts.source_contents.get(&name) {
                Some(given) => given,
                None => {
                    // Guarded: a FIFO named here would block the run
                    // (and its lock) forever, a device fill memory.
                    read = crate::guarded_read::read_regular_file(path, self.opts.max_source_bytes)
                        .map_err(|e| RunError::Input {
                            name: name.clone(),
                            path: path.clone(),
                            message: input_refusal(&e),
                        })?;
                    &read
                }
            };
            let artifact = source_artifact(path, bytes).map_err(|message| RunError::Input {
                name: name.clone(),
                path: path.clone(),
                message,
            })?;
            self.artifacts.insert(name, artifact);
        }
        Ok(())
    }

    /// Input hashes and cache key of a ready kernel.
    pub(super) fn key_for(&self, name: &str) -> (BTreeMap<String, Option<String>>, String) {
        let k = self.kernel(name);
        let mut inputs: BTreeMap<String, Option<String>> = k
            .spec
            .inputs
            .iter()
            .map(|i| {
                (
                    i.artifact.clone(),
                    self.artifacts.get(&i.artifact).map(|a| a.hash.clone()),
                )
            })
            .collect();
        inputs.extend(self.reserved_key_parts(name));
        let key = self.key_with(name, &inputs);
        (inputs, key)
    }

    /// The cache key of `name` with these input hashes.
    pub(super) fn key_with(&self, name: &str, inputs: &BTreeMap<String, Option<String>>) -> String {
        let k = self.kernel(name);
        let plugin_hash = self
            .cache
            .plugin_hash(&k.library)
            .unwrap_or_else(|_| format!("unreadable:{}", k.library.display()));
        cache_key(&KeyParts {
            kernel: &k.spec.name,
            version: &k.spec.version,
            plugin_hash: &plugin_hash,
            config: &self.prepared.configs[name],
            inputs,
            llm: if k.spec.uses_llm {
                self.opts.llm_identity.as_ref()
            } else {
                None
            },
        })
    }

    /// The artifact as a tree (for a run's target output): parsed from its
    /// canonical text when that is what is loaded.
    pub(super) fn value_of(&mut self, artifact: &str) -> Result<Option<Arc<Value>>, String> {
        Ok(match self.shared_of(artifact)? {
            None => None,
            Some(Shared::Tree(v)) => Some(v),
            Some(Shared::Canonical(text)) => Some(Arc::new(
                serde_json::from_slice(text.bytes())
                    .map_err(|e| format!("cannot read artifact `{artifact}`: {e}"))?,
            )),
        })
    }

    /// The artifact as it is loaded, or its canonical text read from the
    /// cache (and kept for the kernels after this one).
    fn shared_of(&mut self, artifact: &str) -> Result<Option<Shared>, String> {
        let Some(a) = self.artifacts.get(artifact) else {
            return Ok(None);
        };
        if let Some(loaded) = &a.loaded {
            return Ok(Some(loaded.clone()));
        }
        let bytes = self
            .cache
            .get_bytes(&a.hash)
            .map_err(|e| format!("cannot read input `{artifact}` from the cache: {e}"))?;
        // The cache holds the canonical bytes the host wrote.
        let text =
            Shared::Canonical(Arc::new(CanonicalJson::stored(bytes).map_err(|e| {
                format!("cannot read input `{artifact}` from the cache: {e}")
            })?));
        if let Some(a) = self.artifacts.get_mut(artifact) {
            a.loaded = Some(text.clone());
        }
        Ok(Some(text))
    }

    /// The request of kernel `name`: its config and its inputs, each as
    /// loaded (canonical text or a tree), and the host's reserved inputs.
    pub(super) fn request_for(&mut self, name: &str) -> Result<Request, String> {
        let inputs: Vec<String> = self
            .kernel(name)
            .spec
            .inputs
            .iter()
            .map(|i| i.artifact.clone())
            .collect();
        let mut values = BTreeMap::new();
        for artifact in inputs {
            if let Some(shared) = self.shared_of(&artifact)? {
                values.insert(artifact, shared);
            }
        }
        values.extend(self.reserved_values(name));
        Ok(Request {
            config: self.prepared.configs[name].clone(),
            inputs: values,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_encoded_request_is_the_plain_json_in_a_buffer_of_its_exact_size() {
        let records = json!((0..500)
            .map(|i| json!({"id": format!("ID-{i:04}"), "note": "é ✓ \"quoted\"\n"}))
            .collect::<Vec<_>>());
        let request = Request {
            config: json!({"strict": true}),
            inputs: [("records".to_string(), Shared::Tree(Arc::new(records)))].into(),
        };
        let bytes = request.encode().expect("encode");
        assert_eq!(bytes, serde_json::to_vec(&request).expect("to_vec"));
        assert_eq!(bytes.capacity(), bytes.len());
    }

    #[test]
    fn canonical_text_is_the_canonical_form_of_the_same_value_and_travels_unchanged() {
        #[derive(serde::Serialize)]
        struct Entry {
            zeta: u32,
            alpha: String,
            patch_text: Option<String>,
        }
        let entries: Vec<Entry> = (0..50)
            .map(|i| Entry {
                zeta: i,
                alpha: format!("note {i} é \"q\"\n"),
                patch_text: Some("long".into()),
            })
            .collect();
        let tree: Value = serde_json::to_value(&entries).expect("tree");
        let text = CanonicalJson::array(&entries, |_| {}).expect("array");
        assert_eq!(text.bytes(), koas_kernel_api::hash::canonical_bytes(&tree));
        let of = CanonicalJson::of(&entries).expect("of");
        assert_eq!(of.bytes(), text.bytes());
        // `edit` changes each item before it is written.
        let trimmed = CanonicalJson::array(&entries, |e| {
            if let Some(e) = e.as_object_mut() {
                e.remove("patch_text");
            }
        })
        .expect("trimmed");
        let back: Value = serde_json::from_slice(trimmed.bytes()).expect("parse");
        assert!(back[7].get("patch_text").is_none() && back[7]["zeta"] == 7);
        // A kernel receives the same value from either form.
        let request = |input: Shared| Request {
            config: Value::Null,
            inputs: [("records".to_string(), input)].into(),
        };
        let from_tree: Value = serde_json::from_slice(
            &request(Shared::Tree(Arc::new(tree.clone())))
                .encode()
                .expect("tree"),
        )
        .expect("parse");
        let from_text: Value = serde_json::from_slice(
            &request(Shared::Canonical(Arc::new(text)))
                .encode()
                .expect("text"),
        )
        .expect("parse");
        assert_eq!(from_tree, from_text);
        assert_eq!(from_text["inputs"]["records"], tree);
    }
}
