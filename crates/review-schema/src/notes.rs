//! The `inline_notes` artifact of `md_inline_notes_inject`.

use serde::{Deserialize, Serialize};

use crate::change_id::ChangeId;
use crate::edit_op::Alert;
use crate::review::ViewSource;

/// A note placed in the annotated document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlacedNote {
    /// The change the note is about; the note text starts with it.
    pub id: ChangeId,
    /// The alert type used.
    pub alert: Alert,
    /// The block is inserted after this 1-based line of the edited
    /// document (0: at the top).
    pub after_line: usize,
    /// The note text, `REVIEWER: RVW-NNNN — …`.
    pub text: String,
}

/// The `inline_notes` artifact: where each note went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InlineNotes {
    /// Where the document and ledger came from.
    pub source: ViewSource,
    /// The notes, in document order.
    pub notes: Vec<PlacedNote>,
}
