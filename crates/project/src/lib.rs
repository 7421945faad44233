//! # koas-project — a project's `koas.toml`
//!
//! What a project says about how its documents are checked and reviewed:
//! the `koas.toml` found upward from a document ([`find_project_config`],
//! [`ProjectConfig`]), with its `[check]` (fail-on, severities, kinds
//! turned off), `[kernels]` (the project's own kernels), `[language]` and
//! `[vale]` (the `.vale.ini` whose styles run), and each built-in check's settings, which are also that kernel's default
//! config ([`ScanConfig`], [`NumberingConfig`], [`FingerprintConfig`]);
//! and the finding kinds a file or a suppression comment may name
//! ([`kinds`]). It reads one file and checks nothing else: the checks are
//! `koas-md-scan`'s.

#![deny(missing_docs)]

pub mod kinds;
mod language;
mod numbering;
mod project;
mod read;
mod scan;
mod vale;

pub use koas_review_schema::fingerprint::FingerprintConfig;
pub use language::{LanguageSection, DEFAULT_WORDS_FILE, MAX_WORDS_FILE_BYTES};
pub use numbering::NumberingConfig;
pub use project::{
    find_project_config, CheckSection, FindingsPolicy, KernelsSection, ProjectConfig,
    PROJECT_CONFIG_FILE,
};
pub use scan::{ScanConfig, DEFAULT_AI_LEFTOVER_PATTERNS};
pub use vale::{
    find_vale_config, read_sources, ValeSection, MAX_VALE_FILE_BYTES, MAX_VALE_RULES,
    VALE_CONFIG_FILES,
};

/// The built-in checks' kernels, whose findings and settings a project
/// file names.
pub const CONSISTENCY_KERNEL: &str = "md_consistency_scan";
/// The numbering checks' kernel.
pub const NUMBERING_KERNEL: &str = "md_numbering_control";
/// The language checks' kernel.
pub const LANGUAGE_KERNEL: &str = "md_language_check";
/// The fingerprinting kernel.
pub const FINGERPRINT_KERNEL: &str = "md_fingerprint_chunk";

/// Why a project file, or a setting in it, is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProjectError {
    /// A configured value is out of range or malformed.
    #[error("config `{key}`: {reason}")]
    InvalidConfig {
        /// The config key, e.g. `claim_min`.
        key: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A project config file (`koas.toml`) could not be read or parsed.
    #[error("project config {path}: {reason}")]
    ProjectConfig {
        /// Path of the `koas.toml` that failed.
        path: String,
        /// The I/O or TOML error, with its line when TOML gives one.
        reason: String,
    },
}

/// How a kernel reports a refused setting: an invalid config.
impl From<ProjectError> for koas_kernel_api::KernelError {
    fn from(e: ProjectError) -> Self {
        koas_kernel_api::KernelError::invalid_config(e.to_string())
    }
}
