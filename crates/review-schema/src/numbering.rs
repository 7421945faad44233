//! The `renumber_ops` artifact of `md_numbering_control`: proposed
//! renumbering of figure, table and equation captions.

use serde::{Deserialize, Serialize};

/// One caption to renumber.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenumberOp {
    /// `figure`, `table` or `equation`.
    pub target: String,
    /// 1-based line of the caption.
    pub line: u32,
    /// The label as written, e.g. `Figure 3`.
    pub from: String,
    /// The label it should have, e.g. `Figure 2`.
    pub to: String,
    /// Lines referring to the old number (to update together).
    pub references: Vec<u32>,
}
