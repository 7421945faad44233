//! The run record: one entry per selected kernel, whether it ran, came
//! from the cache, failed, was cancelled or was skipped.

use super::inputs::Shared;
use super::{Artifact, Attempt, Completion, Engine, Failure, TargetOutput};
use crate::progress::Shown;
use crate::run_record::{CacheUse, KernelRecord, KernelStatus, RunRecord, RUN_RECORD_FILE};
use crate::workspace::WorkspaceError;
use std::collections::BTreeMap;
use std::path::Path;

/// Writes `run.json` into `workspace`.
pub(super) fn write_run_record(workspace: &Path, record: &RunRecord) -> Result<(), WorkspaceError> {
    let path = workspace.join(RUN_RECORD_FILE);
    let bytes = serde_json::to_vec_pretty(record).map_err(|e| WorkspaceError::Io {
        path: path.clone(),
        source: std::io::Error::other(e),
    })?;
    crate::workspace::write_below(workspace, &path, &bytes)
}

impl Engine<'_> {
    pub(super) fn base_record(
        &self,
        name: &str,
        inputs: &BTreeMap<String, Option<String>>,
    ) -> KernelRecord {
        let k = self.kernel(name);
        KernelRecord {
            name: name.to_string(),
            version: k.spec.version.clone(),
            stage: k.spec.stage.clone(),
            status: KernelStatus::Skipped,
            cache: CacheUse::None,
            started_at: None,
            finished_at: None,
            start_ms: None,
            end_ms: None,
            input_hashes: inputs.clone(),
            output_hashes: BTreeMap::new(),
            cache_key: None,
            next_cache_key: None,
            plugin: k.library.clone(),
            plugin_hash: self.cache.plugin_hash(&k.library).ok(),
            summary: String::new(),
            warnings: Vec::new(),
            error: None,
            skipped_reason: None,
            files_written: Vec::new(),
            log: Vec::new(),
            worker: None,
            incomplete: None,
        }
    }

    /// Records a finished kernel; `true` when it succeeded.
    pub(super) fn finish(&mut self, c: Completion) -> bool {
        let Completion {
            kernel: name,
            key,
            inputs,
            attempt,
            result,
            ..
        } = c;
        let produced = match result {
            Ok(produced) => produced,
            Err(failure) => {
                self.fail(&name, &inputs, Some(key), attempt, failure);
                return false;
            }
        };
        let mut record = self.base_record(&name, &inputs);
        record.status = KernelStatus::Ok;
        record.cache = if self.opts.use_cache {
            CacheUse::Miss
        } else {
            CacheUse::Disabled
        };
        record.started_at = Some(attempt.started_at);
        record.finished_at = Some(attempt.finished_at);
        record.start_ms = Some(attempt.start_ms);
        record.end_ms = Some(attempt.end_ms);
        record.cache_key = Some(key);
        record.summary = produced.summary;
        record.warnings = produced.warnings;
        record.incomplete = produced.incomplete;
        record.files_written = attempt.files;
        record.log = attempt.logs;
        for (artifact, (hash, value)) in produced.outputs {
            record.output_hashes.insert(artifact.clone(), hash.clone());
            self.artifacts.insert(
                artifact,
                Artifact {
                    hash,
                    loaded: Some(Shared::Canonical(value)),
                },
            );
        }
        self.reporter.kernel_finished(
            &name,
            Shown::Ran,
            attempt.end_ms - attempt.start_ms,
            &record.summary,
        );
        self.remember_outputs(&name, &record.output_hashes);
        if record.incomplete.is_none() && self.opts.use_cache {
            if let Some(key) = &record.cache_key {
                record.next_cache_key =
                    self.anticipate_next_run(&name, &inputs, key, &record.output_hashes);
            }
        }
        self.records.push(record);
        self.done.insert(name);
        true
    }

    /// Records a kernel that failed or was cancelled, and skips everything
    /// downstream of it.
    pub(super) fn fail(
        &mut self,
        name: &str,
        inputs: &BTreeMap<String, Option<String>>,
        key: Option<String>,
        attempt: Attempt,
        failure: Failure,
    ) {
        let cancelled = failure.is_cancellation();
        let mut record = self.base_record(name, inputs);
        record.status = if cancelled {
            KernelStatus::Cancelled
        } else {
            KernelStatus::Failed
        };
        record.cache = if self.opts.use_cache {
            CacheUse::Miss
        } else {
            CacheUse::Disabled
        };
        record.start_ms = Some(attempt.start_ms);
        record.end_ms = Some(attempt.end_ms);
        record.started_at = Some(attempt.started_at);
        record.finished_at = Some(attempt.finished_at);
        record.cache_key = key;
        record.error = Some(failure.message().to_owned());
        record.worker = failure.worker_exit();
        record.log = attempt.logs;
        record.files_written = attempt.files;
        self.reporter.kernel_finished(
            name,
            if cancelled {
                Shown::Cancelled
            } else {
                Shown::Failed
            },
            attempt.end_ms - attempt.start_ms,
            failure.message(),
        );
        self.records.push(record);
        self.dead.insert(name.to_string());
        let reason = if cancelled {
            format!("upstream kernel `{name}` was cancelled")
        } else {
            format!("upstream kernel `{name}` failed")
        };
        let mut stack = self.prepared.dag.dependents(name);
        while let Some(d) = stack.pop() {
            if self.dead.contains(&d) || self.done.contains(&d) {
                continue;
            }
            self.skip(&d, reason.clone());
            stack.extend(self.prepared.dag.dependents(&d));
        }
    }

    pub(super) fn skip(&mut self, name: &str, reason: String) {
        if !self.prepared.kernels.contains_key(name) || self.dead.contains(name) {
            return;
        }
        let mut record = self.base_record(name, &BTreeMap::new());
        record.status = KernelStatus::Skipped;
        record.skipped_reason = Some(reason.clone());
        self.reporter
            .kernel_finished(name, Shown::Skipped, 0.0, &reason);
        self.records.push(record);
        self.dead.insert(name.to_string());
    }

    pub(super) fn target_output(&mut self, name: &str) -> TargetOutput {
        let k = self.kernel(name).clone();
        let record = self.records.iter().find(|r| r.name == name).cloned();
        let mut outputs = BTreeMap::new();
        if record.as_ref().map(|r| r.status) == Some(KernelStatus::Ok) {
            for o in &k.spec.outputs {
                if let Ok(Some(v)) = self.value_of(&o.artifact) {
                    outputs.insert(o.artifact.clone(), (*v).clone());
                }
            }
        }
        TargetOutput {
            kernel: name.to_string(),
            version: k.spec.version.clone(),
            status: record
                .as_ref()
                .map(|r| r.status)
                .unwrap_or(KernelStatus::Skipped),
            cache: record.as_ref().map(|r| r.cache).unwrap_or(CacheUse::None),
            summary: record
                .as_ref()
                .map(|r| r.summary.clone())
                .unwrap_or_default(),
            warnings: record
                .as_ref()
                .map(|r| r.warnings.clone())
                .unwrap_or_default(),
            error: record
                .as_ref()
                .and_then(|r| r.error.clone().or_else(|| r.skipped_reason.clone())),
            outputs,
        }
    }
}
