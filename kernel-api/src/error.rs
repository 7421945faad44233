//! The error a kernel returns.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What kind of failure a [`KernelError`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The kernel could not compute its outputs.
    Failed,
    /// An input artifact is missing or does not have the expected shape.
    InvalidInput,
    /// The config does not have the expected shape.
    InvalidConfig,
    /// The kernel stopped because the host asked it to.
    Cancelled,
    /// The kernel panicked; the message is the panic's.
    Panic,
    /// A host service (file write, LLM) refused or failed.
    Host,
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ErrorKind::Failed => "failed",
            ErrorKind::InvalidInput => "invalid input",
            ErrorKind::InvalidConfig => "invalid config",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Panic => "panicked",
            ErrorKind::Host => "host service error",
        })
    }
}

/// A kernel failure: a kind and a message a person can act on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelError {
    /// The kind of failure, shown before the message.
    pub kind: ErrorKind,
    /// What went wrong, naming the file, line or artifact involved.
    pub message: String,
}

impl KernelError {
    /// A failure that fits no other kind ([`ErrorKind::Failed`]).
    pub fn failed(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Failed, message)
    }

    /// A missing or malformed input artifact.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidInput, message)
    }

    /// A config value of the wrong shape or out of range.
    pub fn invalid_config(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidConfig, message)
    }

    /// The error to return after seeing
    /// [`Context::is_cancelled`](crate::Context::is_cancelled) (what
    /// `check_cancelled` returns): the kernel stopped early on the host's
    /// request.
    pub fn cancelled() -> Self {
        Self::new(ErrorKind::Cancelled, "cancelled by the host")
    }

    /// An error of any kind.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        KernelError {
            kind,
            message: message.into(),
        }
    }
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

impl std::error::Error for KernelError {}

impl From<serde_json::Error> for KernelError {
    fn from(e: serde_json::Error) -> Self {
        KernelError::failed(format!("JSON error: {e}"))
    }
}
