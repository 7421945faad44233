//! Errors of the Markdown library.

use thiserror::Error;

/// Why a document cannot be analysed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MdError {
    /// The bytes are not UTF-8.
    #[error(
        "{path}: not valid UTF-8 (first bad byte at offset {offset}); convert the file to UTF-8"
    )]
    NotUtf8 {
        /// The file's path, as the caller gave it (for the message).
        path: String,
        /// Offset of the first byte that is not UTF-8.
        offset: u64,
    },
    /// The file holds a NUL byte: it is binary, not Markdown.
    #[error("{path}: binary content, not a text document (NUL byte at offset {offset})")]
    Binary {
        /// The file's path, as the caller gave it (for the message).
        path: String,
        /// Offset of the first NUL byte.
        offset: u64,
    },
}
