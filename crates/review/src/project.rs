//! The project file `koas.toml`, as every review command reads it: the
//! nearest one upward from the document, parsed the way `koas check`
//! parses it (an unknown table or key is an error naming the file), and
//! applied to the reviewer pipeline — `[scan]`, `[numbering]`,
//! `[language]` and `[fingerprint]` become the Stage 2 kernels' config, `[check] disable`
//! and `[check.severity]` decide which findings they report and how,
//! `[limits]` the kernels' limits, `[llm]` the model (read by
//! [`crate::passes::review_llm`]).

use anyhow::Context as _;
use koas_md_scan::config::{find_project_config, ProjectConfig};
use koas_md_scan::kinds::{KindCatalog, KindPolicy};
use koas_md_scan::{CONSISTENCY_KERNEL, FINGERPRINT_KERNEL, LANGUAGE_KERNEL, NUMBERING_KERNEL};
use koas_orchestrator::discovery::Discovery;
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
            None => ProjectFile::near(document),
        }
    }

    /// The settings of a document without `koas.toml`: the defaults, and
    /// the Vale styles of the `.vale.ini` found upward from it.
    pub fn near(document: &Path) -> anyhow::Result<ProjectFile> {
        let project = Self::near_unchecked(document)?;
        if project.config.language.styles.is_some() {
            // A style that does not compile is an error now, not later.
            koas_md_scan::Checker::new(&project.config)?;
        }
        Ok(project)
    }

    /// [`ProjectFile::near`], with the checker compiled to check it (a
    /// project's styles take milliseconds to compile: once is enough).
    pub fn near_checked(document: &Path) -> anyhow::Result<(ProjectFile, koas_md_scan::Checker)> {
        let project = Self::near_unchecked(document)?;
        let checker = koas_md_scan::Checker::new(&project.config)?;
        Ok((project, checker))
    }

    /// The defaults, with the styles of the `.vale.ini` found upward from
    /// `document` read.
    fn near_unchecked(document: &Path) -> anyhow::Result<ProjectFile> {
        let mut project = ProjectFile::default();
        let folder = document
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        project
            .config
            .read_vale(folder)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(project)
    }

    /// Reads and checks the project file `path` (`koas check --config`).
    pub fn load(path: &Path) -> anyhow::Result<ProjectFile> {
        Self::load_checked(path).map(|(project, _)| project)
    }

    /// [`ProjectFile::load`], with the checker compiled to check it.
    pub fn load_checked(path: &Path) -> anyhow::Result<(ProjectFile, koas_md_scan::Checker)> {
        let path = path.to_path_buf();
        let config = ProjectConfig::load(&path)?;
        let checker = koas_md_scan::Checker::new(&config)
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
        Ok((
            ProjectFile {
                path: Some(path),
                config,
                limits,
            },
            checker,
        ))
    }

    /// Applies the project file to a reviewer pipeline: the Stage 2
    /// kernels get the `[scan]`, `[numbering]`, `[language]` (its words
    /// files already read into `accept`), `[fingerprint]` settings
    /// and the `[check]` policy (a `[config.KERNEL]` key of a `--pipeline`
    /// file stays over them), and `[limits]` applies when the pipeline has
    /// none of its own. Without a `koas.toml` nothing changes, unless a
    /// `.vale.ini` was found: the language kernel then gets its styles.
    pub fn apply(&self, pipeline: &mut Pipeline) -> anyhow::Result<()> {
        if self.path.is_none() && self.config.language.styles.is_none() {
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
                // ProjectConfig::load read the words files into `accept`
                // and emptied `words`: the plugin reads no project file.
                LANGUAGE_KERNEL,
                with_policy(serde_json::to_value(&self.config.language)?),
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
        self.add_kernels(pipeline)
    }

    /// Adds the kernels of `[kernels] run` to `pipeline` (after its own),
    /// their search folders and their config (under the pipeline's own).
    pub fn add_kernels(&self, pipeline: &mut Pipeline) -> anyhow::Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let section = &self.config.kernels;
        let base = path.parent().unwrap_or(Path::new("."));
        for folder in &section.paths {
            let folder = base.join(folder);
            if !pipeline.kernel_paths.contains(&folder) {
                pipeline.kernel_paths.push(folder);
            }
        }
        for kernel in &section.run {
            if !pipeline.has(kernel) {
                pipeline.kernels.push(kernel.clone());
            }
        }
        for (kernel, table) in &section.config {
            // A TOML table is always a JSON object.
            if let Value::Object(map) = serde_json::to_value(table)? {
                pipeline.config_defaults(kernel, map);
            }
        }
        Ok(())
    }

    /// The finding kinds the kernels of `pipeline` declare (found in
    /// `discovery`), with the built-in ones; the `[check]` names of the
    /// project file are checked against them.
    pub fn catalog(
        &self,
        pipeline: &Pipeline,
        discovery: &Discovery,
    ) -> anyhow::Result<KindCatalog> {
        let mut catalog = KindCatalog::builtin();
        for kernel in &pipeline.kernels {
            if let Some(loaded) = discovery.kernels.get(kernel) {
                catalog.add_kernel(
                    kernel,
                    loaded
                        .spec
                        .finding_kinds
                        .iter()
                        .map(|k| (k.kind.as_str(), k.description.as_str())),
                );
            }
        }
        if let Some(path) = &self.path {
            catalog
                .check_section(&self.config.check)
                .map_err(|e| anyhow::anyhow!("project config {}: {e}", path.display()))?;
        }
        Ok(catalog)
    }

    /// How `[check]` applies to the findings of kernels other than the
    /// built-in checks.
    pub fn kind_policy(&self) -> KindPolicy {
        KindPolicy::of(&self.config.check)
    }
}

/// Finds the kernels of `pipeline`, checks the project's kind names
/// against the kinds they declare, and tells the built-in checks which
/// kinds other kernels declare (a suppression comment naming one is then
/// no typo). Warns, like every command, about plugins it skipped.
pub fn discover(
    global: &koas_orchestrator::embed::HostOptions,
    pipeline: &mut Pipeline,
    project: &ProjectFile,
) -> anyhow::Result<(Discovery, KindCatalog)> {
    let discovery = koas_orchestrator::embed::discover_and_warn(global, pipeline);
    if let Some(path) = &project.path {
        for kernel in &project.config.kernels.run {
            if !discovery.kernels.contains_key(kernel) {
                let searched: Vec<String> = discovery
                    .searched
                    .iter()
                    .map(|p| p.path.display().to_string())
                    .collect();
                anyhow::bail!(
                    "project config {}: [kernels] run names `{kernel}`, which koas did not find (searched: {}). `koas kernels` lists what it finds and what it skipped",
                    path.display(),
                    searched.join(", ")
                );
            }
        }
    }
    let catalog = project.catalog(pipeline, &discovery)?;
    let others = catalog.other_names();
    if !others.is_empty() {
        for kernel in [CONSISTENCY_KERNEL, NUMBERING_KERNEL, LANGUAGE_KERNEL] {
            pipeline.set_config(kernel, "other_kinds", serde_json::json!(others));
        }
    }
    Ok((discovery, catalog))
}
