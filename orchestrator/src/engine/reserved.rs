//! The inputs the host hands a kernel besides artifacts: its prompt
//! templates (read when it runs, so an edited template re-runs it), its
//! own last outputs when it is incremental, and the model identity when it
//! uses an LLM.
//!
//! The templates and the previous outputs join the kernel's cache key
//! under their reserved input names; the model identity already does
//! through [`crate::cache::KeyParts::llm`].

use super::inputs::Shared;
use super::{Artifact, Engine};
use crate::workspace::PRIVATE_DIR;
use koas_kernel_api::{LLM_INPUT, PREVIOUS_INPUT, PROMPTS_INPUT};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the runtime remembers a kernel's last successful outputs:
/// `<workspace>/.koas/previous/<kernel>.json`, naming cache blobs.
fn previous_path(workspace: &Path, kernel: &str) -> PathBuf {
    workspace
        .join(PRIVATE_DIR)
        .join("previous")
        .join(format!("{kernel}.json"))
}

/// The content of a `previous/<kernel>.json` file.
#[derive(Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
struct PreviousIndex {
    /// Output artifact → the cache blob holding its value.
    outputs: BTreeMap<String, String>,
}

/// The last successful outputs of incremental kernel `kernel` in
/// `workspace` (artifact → value), if it remembers any and its cache
/// still holds them.
pub fn read_previous(workspace: &Path, kernel: &str) -> Option<BTreeMap<String, Value>> {
    read_previous_with_hashes(workspace, kernel).map(|(_, values)| values)
}

/// Every cache blob the remembered previous outputs of `workspace`'s
/// incremental kernels name: a cache collection must keep them, or the
/// next run of those kernels starts from nothing.
pub fn previous_blobs(workspace: &Path) -> std::collections::BTreeSet<String> {
    let dir = workspace.join(PRIVATE_DIR).join("previous");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Default::default();
    };
    entries
        .flatten()
        .filter_map(|e| std::fs::read(e.path()).ok())
        .filter_map(|b| serde_json::from_slice::<PreviousIndex>(&b).ok())
        .flat_map(|i| i.outputs.into_values())
        .collect()
}

/// The remembered index of `kernel`'s previous outputs, and the cache
/// that holds them.
fn previous_index(workspace: &Path, kernel: &str) -> Option<(PreviousIndex, crate::cache::Cache)> {
    let bytes = std::fs::read(previous_path(workspace, kernel)).ok()?;
    let index = serde_json::from_slice(&bytes).ok()?;
    Some((index, crate::cache::Cache::open(workspace)))
}

/// Like [`read_previous`], with the cache blob of each value as the
/// index names it (no need to hash the values again).
fn read_previous_with_hashes(
    workspace: &Path,
    kernel: &str,
) -> Option<(BTreeMap<String, String>, BTreeMap<String, Value>)> {
    let (index, cache) = previous_index(workspace, kernel)?;
    let values = index
        .outputs
        .iter()
        .map(|(artifact, hash)| Some((artifact.clone(), cache.get_value(hash).ok()?)))
        .collect::<Option<BTreeMap<_, _>>>()?;
    Some((index.outputs, values))
}

/// Like [`read_previous_with_hashes`], the values as one canonical JSON
/// object made of the stored texts: a previous output (an edit plan, a
/// pyramid) is handed back to its kernel without becoming a tree.
fn read_previous_texts(
    workspace: &Path,
    kernel: &str,
) -> Option<(BTreeMap<String, String>, super::CanonicalJson)> {
    let (index, cache) = previous_index(workspace, kernel)?;
    let members = index
        .outputs
        .iter()
        .map(|(artifact, hash)| {
            let text = super::CanonicalJson::stored(cache.get_bytes(hash).ok()?).ok()?;
            Some((artifact.clone(), text))
        })
        .collect::<Option<Vec<_>>>()?;
    let object = super::CanonicalJson::object(members).ok()?;
    Some((index.outputs, object))
}

/// Values with the cache blob hash each would have.
fn with_hashes(values: BTreeMap<String, Value>) -> (BTreeMap<String, String>, Value) {
    let hashes = values
        .iter()
        .map(|(artifact, value)| {
            (
                artifact.clone(),
                blake3::hash(&koas_kernel_api::hash::canonical_bytes(value))
                    .to_hex()
                    .to_string(),
            )
        })
        .collect();
    (
        hashes,
        Value::Object(values.into_iter().collect::<Map<_, _>>()),
    )
}

fn id_of(kind: &str, value: &Value) -> String {
    let mut h = blake3::Hasher::new();
    h.update(b"koas-reserved-v1\0");
    h.update(kind.as_bytes());
    h.update(b"\0");
    h.update(&koas_kernel_api::hash::canonical_bytes(value));
    h.finalize().to_hex().to_string()
}

impl Engine<'_> {
    /// Reads the templates and previous outputs `name` declares. A
    /// template that cannot be found is an error naming it and where the
    /// host looked; previous outputs that are gone (a cleared cache) are
    /// simply absent: the kernel starts afresh.
    pub(super) fn load_reserved(&mut self, name: &str) -> Result<(), String> {
        let spec = self.kernel(name).spec.clone();
        let mut reserved = BTreeMap::new();
        if !spec.prompts.is_empty() {
            let mut templates = Map::new();
            let mut text_hashes = Map::new();
            for prompt in &spec.prompts {
                let t = self
                    .opts
                    .prompts
                    .load(prompt)
                    .map_err(|e| format!("prompt template `{prompt}`: {e}"))?;
                let hash = koas_kernel_api::hash::sha256(t.text());
                text_hashes.insert(prompt.clone(), json!(hash));
                templates.insert(
                    prompt.clone(),
                    json!({
                        "name": t.name(),
                        "text": t.text(),
                        "hash": hash,
                        "source": t.source().describe(),
                    }),
                );
            }
            // Only the texts decide: the same templates read from another
            // folder give the same key.
            reserved.insert(
                PROMPTS_INPUT.to_string(),
                Artifact {
                    hash: id_of(PROMPTS_INPUT, &Value::Object(text_hashes)),
                    loaded: Some(Shared::Tree(Arc::new(Value::Object(templates)))),
                },
            );
        }
        if spec.incremental {
            if let Some((hashes, values)) = self.previous_outputs(name) {
                self.previous_handed
                    .insert(name.to_string(), hashes.clone());
                reserved.insert(
                    PREVIOUS_INPUT.to_string(),
                    Artifact {
                        hash: id_of(PREVIOUS_INPUT, &json!(hashes)),
                        loaded: Some(values),
                    },
                );
            }
        }
        if spec.uses_llm {
            if let Some(identity) = &self.opts.llm_identity {
                // Not in the key again: `KeyParts::llm` carries it.
                reserved.insert(
                    LLM_INPUT.to_string(),
                    Artifact {
                        hash: String::new(),
                        loaded: Some(Shared::Tree(Arc::new(identity.clone()))),
                    },
                );
            }
        }
        self.reserved.insert(name.to_string(), reserved);
        Ok(())
    }

    /// The hashes that join the cache key of `name` under reserved names.
    pub(super) fn reserved_key_parts(&self, name: &str) -> BTreeMap<String, Option<String>> {
        self.reserved
            .get(name)
            .into_iter()
            .flatten()
            .filter(|(input, _)| input.as_str() != LLM_INPUT)
            .map(|(input, a)| (input.clone(), Some(a.hash.clone())))
            .collect()
    }

    /// The values handed to `name` under reserved names.
    pub(super) fn reserved_values(&self, name: &str) -> BTreeMap<String, Shared> {
        self.reserved
            .get(name)
            .into_iter()
            .flatten()
            .filter_map(|(input, a)| a.loaded.as_ref().map(|v| (input.clone(), v.clone())))
            .collect()
    }

    fn previous_outputs(&self, name: &str) -> Option<(BTreeMap<String, String>, Shared)> {
        let given = match &self.opts.previous {
            Some(given) => given.get(name),
            None => match read_previous_texts(&self.workspace, name) {
                Some((hashes, texts)) => return Some((hashes, Shared::Canonical(Arc::new(texts)))),
                None => self.opts.previous_fallback.get(name),
            },
        };
        given
            .cloned()
            .map(with_hashes)
            .map(|(hashes, value)| (hashes, Shared::Tree(Arc::new(value))))
    }

    /// After an incremental kernel ran with `inputs` (key `key`): its next
    /// run on the same inputs is handed these outputs as its previous
    /// ones, and an incremental kernel given its own outputs back answers
    /// them again (it reuses every part whose input is unchanged). That
    /// run's key gets this run's entry now, so an unchanged re-run is
    /// answered from the cache at once instead of running the kernel
    /// once more to learn it. Returns that key (the run record keeps it,
    /// so a cache collection does too); best effort: a failure costs a
    /// re-run.
    pub(super) fn anticipate_next_run(
        &self,
        name: &str,
        inputs: &BTreeMap<String, Option<String>>,
        key: &str,
        outputs: &BTreeMap<String, String>,
    ) -> Option<String> {
        if !self.kernel(name).spec.incremental || outputs.is_empty() || self.opts.previous.is_some()
        {
            return None;
        }
        let next_previous = Some(id_of(PREVIOUS_INPUT, &json!(outputs)));
        if inputs.get(PREVIOUS_INPUT) == Some(&next_previous) {
            return None;
        }
        let mut next = inputs.clone();
        next.insert(PREVIOUS_INPUT.to_string(), next_previous);
        let next_key = self.key_with(name, &next);
        if self.cache.get_action(&next_key).is_some() {
            return Some(next_key);
        }
        // Only a complete run was stored under `key`.
        let record = self.cache.get_action(key)?;
        self.cache.put_action(&next_key, &record).ok()?;
        Some(next_key)
    }

    /// Remembers the outputs of a successful run of an incremental kernel
    /// for its next run. A failure to write costs the next run its reuse,
    /// not this run its result, so it is only reported.
    pub(super) fn remember_outputs(&self, name: &str, outputs: &BTreeMap<String, String>) {
        if !self.kernel(name).spec.incremental || outputs.is_empty() || self.opts.previous.is_some()
        {
            return;
        }
        let index = PreviousIndex {
            outputs: outputs.clone(),
        };
        let path = previous_path(&self.workspace, name);
        let unchanged = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<PreviousIndex>(&b).ok())
            .is_some_and(|old| old == index);
        if unchanged {
            return;
        }
        let written = serde_json::to_vec_pretty(&index)
            .map_err(|e| e.to_string())
            .and_then(|bytes| {
                crate::workspace::write_below(&self.workspace, &path, &bytes)
                    .map_err(|e| e.to_string())
            });
        if let Err(e) = written {
            self.reporter.note(&format!(
                "{name}: cannot remember its outputs for the next run ({e}); it will start afresh"
            ));
        }
    }
}
