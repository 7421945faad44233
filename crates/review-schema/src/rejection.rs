//! The rejection taxonomy of `md_apply_ops`: every op that is not applied
//! gets exactly one class, so the apply log and acceptance statistics can
//! be grouped by cause.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Why an op was not applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum RejectClass {
    /// The op's hash or `before_text` does not match the document.
    #[serde(rename = "REJECT_HASH")]
    Hash,
    /// The review note is missing or malformed (deletion / attention policy).
    #[serde(rename = "REJECT_SCHEMA_NOTE")]
    SchemaNote,
    /// A change ID is malformed or the note does not name the op's ID.
    #[serde(rename = "REJECT_SCHEMA_ID")]
    SchemaId,
    /// The change ID collides with the ledger, or the ledger refused it.
    #[serde(rename = "REJECT_LEDGER")]
    Ledger,
    /// The op touches a protected region.
    #[serde(rename = "REJECT_PROTECTED")]
    Protected,
    /// Bad line numbers, or overlap with another op of the batch.
    #[serde(rename = "REJECT_RANGE")]
    Range,
    /// Anything else (unknown action, missing after_text, no-op...).
    #[serde(rename = "REJECT_OTHER")]
    Other,
    /// Under `--strict`, a content guard fired (a number, URL, code span,
    /// identifier or quotation changed; a polarity word; the structure).
    #[serde(rename = "REJECT_GUARD")]
    Guard,
    /// A model's op would change the document's Markdown structure (a
    /// heading, a list item, a table, an HTML element or a fence left
    /// open) without declaring that purpose.
    #[serde(rename = "REJECT_STRUCTURE")]
    Structure,
}

impl RejectClass {
    /// Every class, in taxonomy order.
    pub const ALL: [RejectClass; 9] = [
        RejectClass::Hash,
        RejectClass::SchemaNote,
        RejectClass::SchemaId,
        RejectClass::Ledger,
        RejectClass::Protected,
        RejectClass::Range,
        RejectClass::Other,
        RejectClass::Guard,
        RejectClass::Structure,
    ];

    /// The name in the apply log and in messages, e.g. `REJECT_HASH`.
    pub fn as_str(self) -> &'static str {
        match self {
            RejectClass::Hash => "REJECT_HASH",
            RejectClass::SchemaNote => "REJECT_SCHEMA_NOTE",
            RejectClass::SchemaId => "REJECT_SCHEMA_ID",
            RejectClass::Ledger => "REJECT_LEDGER",
            RejectClass::Protected => "REJECT_PROTECTED",
            RejectClass::Range => "REJECT_RANGE",
            RejectClass::Other => "REJECT_OTHER",
            RejectClass::Guard => "REJECT_GUARD",
            RejectClass::Structure => "REJECT_STRUCTURE",
        }
    }
}

impl fmt::Display for RejectClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A rejection: its class and a reason a person can act on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rejection {
    /// The cause, recorded as `reject` in the apply log.
    pub class: RejectClass,
    /// Full sentence, naming the op, its lines and what to do.
    pub reason: String,
}

impl Rejection {
    /// A rejection of `class` with `reason`.
    pub fn new(class: RejectClass, reason: impl Into<String>) -> Self {
        Rejection {
            class,
            reason: reason.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_with_taxonomy_names() {
        for class in RejectClass::ALL {
            let json = serde_json::to_string(&class).unwrap();
            assert_eq!(json, format!("\"{}\"", class.as_str()));
            assert_eq!(serde_json::from_str::<RejectClass>(&json).unwrap(), class);
        }
    }
}
