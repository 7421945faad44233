//! Why a fixture could not be built.

/// Why a [`crate::Document`]'s artifacts could not be built: where the
/// kernels themselves would fail on that document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FixtureError {
    /// Stage 1 refuses the document (`md_inventory`'s error).
    #[error("{0}")]
    Document(String),
    /// A Stage 2 computation failed.
    #[error("{kernel}: {message}")]
    Stage2 {
        /// The kernel whose computation failed.
        kernel: String,
        /// Its error.
        message: String,
    },
    /// An artifact could not be made JSON.
    #[error("artifact `{artifact}` cannot be encoded: {message}")]
    Encode {
        /// The artifact's name.
        artifact: String,
        /// serde's error.
        message: String,
    },
}
