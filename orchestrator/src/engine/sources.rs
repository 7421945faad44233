//! A workspace made from other source files: refused before any kernel
//! runs.
//!
//! A write-once output (an immutable snapshot of a source) pins a
//! workspace to the sources it was made from. Running the pipeline there
//! on another file (`--input doc=OTHER.md`), or on the same file changed,
//! would fail the snapshotting kernel halfway through the run, which reads
//! as a kernel failure. The run record of the workspace's last run says
//! which files it read and their digests, so the conflict is found, and
//! reported as the usage error it is, before anything runs.

use super::{Artifact, Engine};
use crate::run_record::{KernelStatus, RecordedSource, RunPlan, RunRecord, RUN_RECORD_FILE};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// A source of this run that differs from the one the workspace was made
/// from, where a write-once output of it already exists.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.message())]
pub struct SourceConflict {
    /// The artifact name of the `[inputs]` entry (`doc`).
    pub input: String,
    /// The file the workspace was made from, as its last run recorded it.
    pub recorded: PathBuf,
    /// The file this run names.
    pub current: PathBuf,
    /// The workspace folder.
    pub workspace: PathBuf,
    /// The write-once file already there, relative to the workspace.
    pub file: String,
    /// The kernel that writes it.
    pub kernel: String,
}

impl SourceConflict {
    fn message(&self) -> String {
        let what = if same_file(&self.recorded, &self.current) {
            format!(
                "input `{}`: {} changed since the workspace {} was made from it",
                self.input,
                self.current.display(),
                self.workspace.display()
            )
        } else {
            format!(
                "input `{}`: the workspace {} holds the run of another document, {}, not {}",
                self.input,
                self.workspace.display(),
                self.recorded.display(),
                self.current.display()
            )
        };
        format!(
            "{what}; its {} (written once by kernel `{}`) may not be replaced. Nothing was run. Give this run another workspace (--workspace DIR), or delete {} to start it over",
            self.file,
            self.kernel,
            self.workspace.display()
        )
    }
}

/// `true` when both paths name the same file (or are spelled the same
/// when either cannot be resolved).
fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The `sha256:` digest of a loaded source artifact (a
/// [`koas_kernel_api::SourceFile`]).
fn digest(artifact: &Artifact) -> Option<String> {
    let Some(super::inputs::Shared::Tree(value)) = &artifact.loaded else {
        return None;
    };
    value.get("sha256")?.as_str().map(str::to_string)
}

impl Engine<'_> {
    /// The plan of the workspace's last run, if it recorded one.
    fn previous_plan(&self) -> Option<RunPlan> {
        std::fs::read(self.workspace.join(RUN_RECORD_FILE))
            .ok()
            .and_then(|b| serde_json::from_slice::<RunRecord>(&b).ok())
            .and_then(|r| r.plan)
    }

    /// The source files of this run, as read.
    fn current_sources(&self) -> BTreeMap<String, RecordedSource> {
        self.prepared
            .pipeline
            .inputs
            .iter()
            .filter_map(|(name, path)| {
                Some((
                    name.clone(),
                    RecordedSource {
                        path: path.clone(),
                        sha256: digest(self.artifacts.get(name)?)?,
                    },
                ))
            })
            .collect()
    }

    /// The selected kernels that read `input` (themselves or through the
    /// kernels they depend on) and write a write-once file, with those
    /// files.
    fn write_once_writers(
        &self,
        selected: &BTreeSet<String>,
        input: &str,
    ) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for name in &self.prepared.dag.order {
            if !selected.contains(name) || !self.reads(name, input) {
                continue;
            }
            for o in &self.kernel(name).spec.outputs {
                if let Some(file) = o.file.as_ref().filter(|_| o.write_once) {
                    if !self.opts.host_written.contains(&o.artifact) {
                        out.push((name.clone(), file.clone()));
                    }
                }
            }
        }
        out
    }

    /// Refuses the run when a source differs from the one the workspace's
    /// write-once files were made from and a selected kernel would write
    /// one of those files again.
    pub(super) fn check_sources(
        &self,
        selected: &BTreeSet<String>,
    ) -> Result<(), Box<SourceConflict>> {
        let Some(plan) = self.previous_plan() else {
            return Ok(());
        };
        let current = self.current_sources();
        for (input, recorded) in &plan.write_once_sources {
            let Some(now) = current.get(input) else {
                continue;
            };
            if now.sha256 == recorded.sha256 {
                continue;
            }
            for (kernel, file) in self.write_once_writers(selected, input) {
                if self.workspace.join(&file).exists() {
                    return Err(Box::new(SourceConflict {
                        input: input.clone(),
                        recorded: recorded.path.clone(),
                        current: now.path.clone(),
                        workspace: self.workspace.clone(),
                        file,
                        kernel,
                    }));
                }
            }
        }
        Ok(())
    }

    /// What the run record says the workspace's write-once files were made
    /// from: this run's source where every selected kernel writing such a
    /// file from it succeeded, else what the last run recorded.
    pub(super) fn write_once_sources(
        &self,
        selected: &BTreeSet<String>,
    ) -> BTreeMap<String, RecordedSource> {
        let mut out = self
            .previous_plan()
            .map(|p| p.write_once_sources)
            .unwrap_or_default();
        for (input, source) in self.current_sources() {
            let writers = self.write_once_writers(selected, &input);
            let wrote = !writers.is_empty()
                && writers.iter().all(|(k, _)| {
                    self.records
                        .iter()
                        .any(|r| &r.name == k && r.status == KernelStatus::Ok)
                });
            if wrote {
                out.insert(input, source);
            }
        }
        out
    }

    /// `true` when kernel `name` reads `input`, itself or through the
    /// kernels it depends on.
    fn reads(&self, name: &str, input: &str) -> bool {
        // `ancestors` includes the kernel itself.
        self.prepared.dag.ancestors(name).iter().any(|k| {
            self.prepared
                .kernels
                .get(k)
                .is_some_and(|k| k.spec.inputs.iter().any(|i| i.artifact == input))
        })
    }
}
