//! The project file `koas.toml`, as every review command reads it: the
//! nearest one upward from the document, parsed the way `koas check`
//! parses it (an unknown table or key is an error naming the file), and
//! applied to the reviewer pipeline — `[scan]`, `[numbering]` and
//! `[fingerprint]` become the Stage 2 kernels' config, `[check] disable`
//! and `[check.severity]` decide which findings they report and how,
//! `[limits]` the kernels' limits, `[llm]` the model (read by
//! [`crate::passes::review_llm`]).

use anyhow::Context as _;
use koas_md_scan::config::{find_project_config, ProjectConfig};
use koas_md_scan::{CONSISTENCY_KERNEL, FINGERPRINT_KERNEL, NUMBERING_KERNEL};
use koas_orchestrator::limits::Limits;
use koas_orchestrator::pipeline::Pipeline;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A document's project file, checked.
#[derive(Debug, Clone, Default)]
pub struct ProjectFile {
    /// The `koas.toml` in force, when there is one.
    pub path: Option<PathBuf>,
    /// Its content (the defaults without a file).
    pub config: ProjectConfig,
    /// Its `[limits]` table, parsed.
    limits: Option<Limits>,
}

impl ProjectFile {
    /// The nearest `koas.toml` upward from `document`, read and checked
    /// whole (also the tables this command does not use: a misspelt key
    /// is an error for every command, not only for the one that reads
    /// it).
    pub fn for_document(document: &Path) -> anyhow::Result<ProjectFile> {
        match find_project_config(document) {
            Some(path) => ProjectFile::load(&path),
            None => Ok(ProjectFile::default()),
        }
    }

    /// Reads and checks the project file `path` (`koas check --config`).
    pub fn load(path: &Path) -> anyhow::Result<ProjectFile> {
        let path = path.to_path_buf();
        let config = ProjectConfig::load(&path)?;
        koas_md_scan::Checker::new(&config)
            .with_context(|| format!("project config {}", path.display()))?;
        if let Some(llm) = &config.llm {
            let table = serde_json::to_value(llm)?;
            serde_json::from_value::<koas_llm::LlmConfig>(table)
                .map_err(|e| anyhow::anyhow!("project config {}: [llm]: {e}", path.display()))?;
        }
        let limits = match &config.limits {
            Some(table) => Some(
                Limits::from_value(&serde_json::to_value(table)?)
                    .map_err(|e| anyhow::anyhow!("project config {}: {e}", path.display()))?,
            ),
            None => None,
        };
        Ok(ProjectFile {
            path: Some(path),
            config,
            limits,
        })
    }

    /// Applies the project file to a reviewer pipeline: the Stage 2
    /// kernels get the `[scan]`, `[numbering]`, `[fingerprint]` settings
    /// and the `[check]` policy (a `[config.KERNEL]` key of a `--pipeline`
    /// file stays over them), and `[limits]` applies when the pipeline has
    /// none of its own. Without a `koas.toml` nothing changes.
    pub fn apply(&self, pipeline: &mut Pipeline) -> anyhow::Result<()> {
        if self.path.is_none() {
            return Ok(());
        }
        let policy = self.config.check.policy().as_kernel_keys();
        let with_policy = |settings: Value| {
            let mut settings = settings;
            if let Some(map) = settings.as_object_mut() {
                map.extend(policy.clone());
            }
            settings
        };
        let tables = [
            (
                CONSISTENCY_KERNEL,
                with_policy(serde_json::to_value(&self.config.scan)?),
            ),
            (
                NUMBERING_KERNEL,
                with_policy(serde_json::to_value(&self.config.numbering)?),
            ),
            (
                FINGERPRINT_KERNEL,
                serde_json::to_value(&self.config.fingerprint)?,
            ),
        ];
        for (kernel, settings) in tables {
            // The project's settings are defaults under the pipeline's own.
            match settings {
                Value::Object(map) => pipeline.config_defaults(kernel, map),
                other if pipeline.has(kernel) => {
                    pipeline.config.insert(kernel.to_owned(), other);
                }
                _ => {}
            }
        }
        if let Some(limits) = &self.limits {
            if pipeline.limits == Limits::default() {
                pipeline.limits = limits.clone();
            }
        }
        Ok(())
    }
}
