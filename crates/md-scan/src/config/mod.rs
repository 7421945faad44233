//! Configuration of the Stage 2 checks: one struct per kernel (also the
//! kernel's default config) and the project file `koas.toml` that
//! `koas check` reads.

mod language;
mod numbering;
mod project;
mod scan;

pub use koas_review_schema::fingerprint::FingerprintConfig;
pub use language::{LanguageSection, DEFAULT_WORDS_FILE, MAX_WORDS_FILE_BYTES};
pub use numbering::NumberingConfig;
pub use project::{
    find_project_config, CheckSection, FindingsPolicy, KernelsSection, ProjectConfig,
    PROJECT_CONFIG_FILE,
};
pub use scan::{ScanConfig, DEFAULT_AI_LEFTOVER_PATTERNS};
