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
    /// A Stage 1 artifact does not match the document it describes.
    #[error("artifact `{artifact}` does not match the document: {reason}")]
    InconsistentInput {
        /// Name of the Stage 1 artifact that does not match.
        artifact: String,
        /// What does not match.
        reason: String,
    },
}

/// How a Stage 2 kernel reports a scan error: an inconsistent Stage 1
/// artifact is an invalid input, anything else an invalid config.
impl From<ScanError> for koas_kernel_api::KernelError {
    fn from(e: ScanError) -> Self {
        match e {
            ScanError::InconsistentInput { .. } => {
                koas_kernel_api::KernelError::invalid_input(e.to_string())
            }
            ScanError::InvalidPattern { .. }
            | ScanError::InvalidConfig { .. }
            | ScanError::ProjectConfig { .. } => {
                koas_kernel_api::KernelError::invalid_config(e.to_string())
            }
        }
    }
}

impl From<koas_project::ProjectError> for ScanError {
    /// A project file's refusal, as the checks report it.
    fn from(e: koas_project::ProjectError) -> Self {
        match e {
            koas_project::ProjectError::InvalidConfig { key, reason } => {
                ScanError::InvalidConfig { key, reason }
            }
            koas_project::ProjectError::ProjectConfig { path, reason } => {
                ScanError::ProjectConfig { path, reason }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use koas_kernel_api::{ErrorKind, KernelError};

    #[test]
    fn inconsistent_artifacts_are_input_errors_and_the_rest_config_errors() {
        let input: KernelError = ScanError::InconsistentInput {
            artifact: "chunks".into(),
            reason: "other document".into(),
        }
        .into();
        assert_eq!(input.kind, ErrorKind::InvalidInput);
        assert!(input.message.contains("`chunks`"));
        let config: KernelError = ScanError::InvalidConfig {
            key: "k".into(),
            reason: "bad".into(),
        }
        .into();
        assert_eq!(config.kind, ErrorKind::InvalidConfig);
    }
}
