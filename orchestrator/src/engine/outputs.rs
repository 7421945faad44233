//! What kernels return: checked against their spec, stored by content
//! hash, written to their declared files; and cache hits restored.

use super::{Artifact, CanonicalJson, Engine, Produced};
use crate::cache::{ActionRecord, Cache};
use crate::discovery::LoadedKernel;
use crate::progress::Shown;
use crate::run_record::{now_rfc3339, CacheUse, KernelStatus};
use crate::workspace::{materialize, WorkspaceError};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

/// Above this size (compact), a declared JSON file is written compact:
/// indentation made the large Stage 1 files of a big document about a
/// third larger, in every workspace; small files stay easy to read.
pub const PRETTY_JSON_LIMIT: usize = 64 * 1024;

/// The bytes written to an artifact's declared file, from the value's
/// canonical JSON: the raw text of a JSON string (unless the file ends in
/// `.json`), JSON otherwise — pretty up to [`PRETTY_JSON_LIMIT`], compact
/// (the canonical bytes) above. Only a small value is parsed, to be
/// written pretty: a large output never becomes a tree.
fn file_contents(file: &str, canonical: &[u8]) -> serde_json::Result<Vec<u8>> {
    if canonical.first() == Some(&b'"') && !file.ends_with(".json") {
        return serde_json::from_slice::<String>(canonical).map(String::into_bytes);
    }
    let mut bytes = if canonical.len() > PRETTY_JSON_LIMIT {
        let mut bytes = Vec::with_capacity(canonical.len() + 1);
        bytes.extend_from_slice(canonical);
        bytes
    } else {
        serde_json::to_vec_pretty(&serde_json::from_slice::<Value>(canonical)?)?
    };
    bytes.push(b'\n');
    Ok(bytes)
}

/// Checks a kernel's outputs against its spec, stores them and writes
/// their declared files (except the host-written ones). Runs on the worker
/// thread.
pub(super) fn store_outputs(
    kernel: &LoadedKernel,
    cache: &Cache,
    workspace: &Path,
    key: &str,
    out: koas_kernel_api::KernelOutput,
    host_written: &BTreeSet<String>,
) -> Result<Produced, String> {
    let spec = &kernel.spec;
    spec.check_returned(out.artifacts.keys())?;
    spec.check_findings(&out.artifacts)?;
    let mut artifacts = out.artifacts;
    let mut outputs = BTreeMap::new();
    for o in &spec.outputs {
        let json = artifacts
            .remove(&o.artifact)
            .ok_or_else(|| format!("did not return its declared output `{}`", o.artifact))?;
        // Whatever the plugin's formatting, the artifact is its value: its
        // canonical text, made without a tree (the same text when the
        // kernel-api wrote it).
        let canonical = CanonicalJson::canonicalize(json.text().as_bytes())
            .map_err(|e| format!("returned output `{}` that is not JSON: {e}", o.artifact))?;
        drop(json);
        let hash = cache
            .put_blob(canonical.bytes())
            .map_err(|e| e.to_string())?;
        if let Some(file) = o
            .file
            .as_ref()
            .filter(|_| !host_written.contains(&o.artifact))
        {
            let bytes = file_contents(file, canonical.bytes())
                .map_err(|e| format!("cannot write output `{}`: {e}", o.artifact))?;
            materialize(workspace, file, &bytes, o.write_once).map_err(|e| e.to_string())?;
        }
        outputs.insert(o.artifact.clone(), (hash, Arc::new(canonical)));
    }
    let record = ActionRecord {
        kernel: spec.name.clone(),
        version: spec.version.clone(),
        outputs: outputs
            .iter()
            .map(|(k, (h, _))| (k.clone(), h.clone()))
            .collect(),
        summary: out.summary.clone(),
        warnings: out.warnings.clone(),
    };
    // An incomplete output is kept (files, blobs, the previous output of an
    // incremental kernel) but not answered from the cache: the next run
    // must try again what failed this time.
    if out.incomplete.is_none() {
        cache.put_action(key, &record).map_err(|e| e.to_string())?;
    }
    Ok(Produced {
        outputs,
        summary: out.summary,
        warnings: out.warnings,
        incomplete: out.incomplete,
    })
}

impl Engine<'_> {
    /// Uses a cache entry: restores missing declared files and records the
    /// outputs' hashes.
    pub(super) fn take_hit(
        &mut self,
        name: &str,
        inputs: &BTreeMap<String, Option<String>>,
        key: &str,
        hit: ActionRecord,
    ) -> Result<(), WorkspaceError> {
        let start = self.now_ms();
        for o in &self.kernel(name).spec.outputs {
            let (Some(file), Some(hash)) = (&o.file, hit.outputs.get(&o.artifact)) else {
                continue;
            };
            if self.opts.host_written.contains(&o.artifact) {
                continue;
            }
            let path = self.workspace.join(file);
            if !path.exists() {
                let canonical = self.cache.get_bytes(hash)?;
                let bytes = file_contents(file, &canonical).map_err(|e| WorkspaceError::Io {
                    path: self.cache.blob_path(hash),
                    source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
                })?;
                materialize(&self.workspace, file, &bytes, o.write_once)?;
            }
        }
        let mut record = self.base_record(name, inputs);
        record.status = KernelStatus::Ok;
        record.cache = CacheUse::Hit;
        let now = now_rfc3339();
        record.started_at = Some(now.clone());
        record.finished_at = Some(now);
        record.start_ms = Some(start);
        record.end_ms = Some(self.now_ms());
        record.output_hashes = hit.outputs.clone();
        record.cache_key = Some(key.to_string());
        record.summary = hit.summary.clone();
        record.warnings = hit.warnings.clone();
        for (artifact, hash) in hit.outputs {
            self.artifacts
                .insert(artifact, Artifact { hash, loaded: None });
        }
        self.remember_outputs(name, &record.output_hashes);
        self.reporter
            .kernel_finished(name, Shown::Cached, 0.0, &record.summary);
        self.records.push(record);
        self.done.insert(name.to_string());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The declared file of `value`.
    fn file_bytes(file: &str, value: &Value) -> Vec<u8> {
        file_contents(file, &koas_kernel_api::hash::canonical_bytes(value)).expect("file bytes")
    }

    #[test]
    fn a_large_json_file_is_its_canonical_bytes_and_a_small_one_is_pretty() {
        // A large output's file is its canonical bytes (compact, keys
        // sorted); a small one is pretty; a text is the text.
        let large = json!({
            "zeta": (0..5000).map(|i| json!({"b": i, "a": format!("é {i}")})).collect::<Vec<_>>(),
            "alpha": "x"
        });
        let mut canonical = koas_kernel_api::hash::canonical_bytes(&large);
        assert!(canonical.len() > PRETTY_JSON_LIMIT);
        canonical.push(b'\n');
        assert_eq!(file_bytes("stage1/x.json", &large), canonical);
        let small = json!({"b": 1, "a": 2});
        let pretty = file_bytes("stage1/x.json", &small);
        assert!(
            pretty.starts_with(b"{\n  \"a\": 2"),
            "{}",
            String::from_utf8_lossy(&pretty)
        );
        assert_eq!(file_bytes("stage3/doc.md", &json!("text\n")), b"text\n");
    }

    #[test]
    fn a_plugins_output_in_any_formatting_is_stored_as_its_canonical_text() {
        // A plugin that writes its JSON by hand (spaces, members out of
        // order) gets the hash, the blob and the file of the same value
        // written by the kernel-api.
        let ws = tempfile::tempdir().expect("tmp");
        let cache = Cache::open(ws.path());
        let kernel = LoadedKernel {
            spec: koas_kernel_api::KernelSpec::new("k", "1.0.0")
                .output_file("report", "stage1/report.json")
                .output_file("text", "stage1/text.md"),
            library: ws.path().join("libk.so"),
            index: 0,
            abi_version: koas_kernel_api::abi::ABI_VERSION,
            api_version: None,
            handle: None,
        };
        let wire = br#"{"status": "ok", "artifacts": {
            "report": { "z": [1, 2.50], "a": {"y": null, "x": "\u00e9"} },
            "text": "line\n"
        }, "summary": "s"}"#;
        let koas_kernel_api::protocol::RunResponse::Ok(out) =
            serde_json::from_slice(wire).expect("answer")
        else {
            panic!("not ok");
        };
        let produced = store_outputs(&kernel, &cache, ws.path(), "key", out, &BTreeSet::new())
            .expect("stored");
        let value = json!({"a": {"x": "é", "y": null}, "z": [1, 2.5]});
        let canonical = koas_kernel_api::hash::canonical_bytes(&value);
        let (hash, text) = &produced.outputs["report"];
        assert_eq!(text.bytes(), canonical);
        assert_eq!(cache.get_bytes(hash).expect("blob"), canonical);
        assert_eq!(
            std::fs::read(ws.path().join("stage1/report.json")).expect("file"),
            file_bytes("stage1/report.json", &value)
        );
        assert_eq!(
            std::fs::read(ws.path().join("stage1/text.md")).expect("file"),
            b"line\n"
        );
        let bad = br#"{"status": "ok", "artifacts": {"report": 1, "text": "x"}}"#;
        let koas_kernel_api::protocol::RunResponse::Ok(mut out) =
            serde_json::from_slice(bad).expect("answer")
        else {
            panic!("not ok");
        };
        out.artifacts.remove("text");
        let err = store_outputs(&kernel, &cache, ws.path(), "key2", out, &BTreeSet::new())
            .err()
            .expect("missing output");
        assert!(err.contains("`text`"), "{err}");
    }
}
