//! Errors of the Stage 2 checks.

use thiserror::Error;

/// Something that stops a check before it reports findings.
#[derive(Debug, Error)]
pub enum ScanError {
    /// A configured regular expression does not compile.
    #[error("config `{key}`: pattern {pattern:?} is not a valid regular expression: {reason}")]
    InvalidPattern {
        /// The config key holding the pattern.
        key: String,
        /// The pattern as written.
        pattern: String,
        /// What the regex compiler said.
        reason: String,
    },
    /// A configured value is out of range or malformed.
    #[error("config `{key}`: {reason}")]
    InvalidConfig {
        /// The config key.
        key: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A project config file (`koas.toml`) could not be read or parsed.
    #[error("project config {path}: {reason}")]
    ProjectConfig {
        /// The file.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// A Stage 1 artifact does not match the document it describes.
    #[error("artifact `{artifact}` does not match the document: {reason}")]
    InconsistentInput {
        /// The artifact name.
        artifact: String,
        /// What does not match.
        reason: String,
    },
}
