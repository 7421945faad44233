//! Ledger entries: one per applied change, flag or revert. The ledger
//! file itself (append-only, fsynced, torn-tail repair) belongs to the
//! on-disk review workspace.

use serde::{Deserialize, Serialize};

use crate::change_id::{ChangeId, EntryId};
use crate::edit_op::{Action, ReviewNote};

/// Who made a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Actor {
    /// Tool name and version, e.g. `koas 0.1.0`.
    pub tool: String,
    /// Who ran it (operator or pipeline name).
    pub operator: String,
}

/// Where in the document's structure a change is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scope {
    /// Anchor slug of the section holding the change (the op's, or filled
    /// in from the section index by `md_apply_ops`; empty when unknown).
    #[serde(default)]
    pub anchor: String,
    /// Section ID plus block number, e.g. `S2.3.p5` (empty when unknown).
    #[serde(default)]
    pub node_path: String,
    /// The chunk the op was planned in (koas extension; empty when the op
    /// named none).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub chunk_id: String,
}

/// Where a change sits in the document state it was applied to
/// (koas extension). For a flag, the flagged lines (`removed == added`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeLines {
    /// 1-based first changed line; for a pure insertion, the line the new
    /// lines are inserted before.
    pub at: usize,
    /// Number of lines removed (for a flag: the number of flagged lines).
    pub removed: usize,
    /// Number of lines inserted (for a flag, equal to `removed`).
    pub added: usize,
}

/// The text of an entry's patches, kept in the ledger itself (koas
/// extension): the ledger alone can rebuild the patch files and replay
/// the document's history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PatchText {
    /// Forward unified diff.
    pub forward: String,
    /// Inverse unified diff.
    pub inverse: String,
}

/// One line of `review/ledger.jsonl`. The fields marked "koas extension"
/// go beyond the base ledger format; each defaults when absent, so ledgers
/// written before it was added still read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerEntry {
    /// `RVW-NNNN` or `REVERT-RVW-NNNN`.
    pub id: EntryId,
    /// The document's file name, without its directory.
    pub doc: String,
    /// `sha256:` of the document before.
    pub doc_hash_before: String,
    /// `sha256:` of the document after.
    pub doc_hash_after: String,
    /// RFC 3339 with microseconds.
    pub timestamp: String,
    /// The tool and the person (or pipeline) that recorded the entry.
    pub actor: Actor,
    /// The section, node and chunk the op named; a revert copies its
    /// change's scope.
    pub scope: Scope,
    /// Change kind from the op, e.g. `typo` or `terminology` (`style` when
    /// the op gave none); decides the silent tier.
    pub kind: String,
    /// A key of the severity → alert map (by default `minor`, `attention`,
    /// `deletion`, `critical`); chooses the alert type of the inline note.
    pub severity: String,
    /// True when the change gets no inline note: its kind is in the silent
    /// allowlist and it does not need attention.
    pub silent: bool,
    /// One-line summary for `koas grep`, `koas show` and the report: the
    /// op's own, else derived from the change; `revert RVW-NNNN: …` for a
    /// revert.
    pub summary: String,
    /// Why the change was made, as the op gave it; for a revert, the reason
    /// given to `koas revert` (may be empty).
    pub rationale: String,
    /// Workspace-relative path of the forward patch (`""` for a flag).
    pub patch_forward: String,
    /// Workspace-relative path of the inverse patch (`""` for a flag).
    pub patch_inverse: String,
    /// The review note, if any.
    pub review_note: Option<ReviewNote>,
    /// True for revert entries.
    pub is_revert: bool,
    /// The reverted change's ID (`""` unless a revert).
    pub reverted_id: String,
    /// What the op did (koas extension; a revert repeats its change's
    /// action).
    #[serde(default)]
    pub action: Action,
    /// True when a person should look at the change, which then carries a
    /// review note (koas extension; always false for a revert).
    #[serde(default)]
    pub needs_attention: bool,
    /// Where the change sits in the state it was applied to (koas
    /// extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<ChangeLines>,
    /// `sha256:` of the removed lines; for a flag, of the flagged lines,
    /// which tell the same flag on the same text in a later run (koas
    /// extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region_hash_before: Option<String>,
    /// `sha256:` of the inserted lines; for a flag, of the flagged lines
    /// (koas extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region_hash_after: Option<String>,
    /// The `id` the op arrived with (koas extension, never trusted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_id: Option<String>,
    /// Names of the normalization fixes that ran on the op, e.g.
    /// `HASH_RECOMPUTE` (koas extension).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fixes: Vec<String>,
    /// The run that wrote the entry (koas extension).
    #[serde(default)]
    pub run_id: String,
    /// The patches' text (koas extension; absent for flags).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_text: Option<PatchText>,
}

impl LedgerEntry {
    /// A complete entry with placeholder values (a silent one-line typo
    /// fix of `spec.md`): the one fixture tests of the ledger, its files
    /// and its readers start from.
    pub fn example(id: EntryId) -> LedgerEntry {
        LedgerEntry {
            id,
            doc: "spec.md".into(),
            doc_hash_before: "sha256:aa".into(),
            doc_hash_after: "sha256:bb".into(),
            timestamp: "2026-02-06T14:23:01.234567+00:00".into(),
            actor: Actor {
                tool: "koas".into(),
                operator: "tester".into(),
            },
            scope: Scope::default(),
            kind: "typo".into(),
            severity: "minor".into(),
            silent: true,
            summary: "s".into(),
            rationale: "r".into(),
            patch_forward: format!("review/patches/{id}.patch"),
            patch_inverse: format!("review/patches/{id}.inverse.patch"),
            review_note: None,
            is_revert: false,
            reverted_id: String::new(),
            action: Action::Replace,
            needs_attention: false,
            change: Some(ChangeLines {
                at: 3,
                removed: 1,
                added: 1,
            }),
            region_hash_before: None,
            region_hash_after: None,
            source_id: None,
            fixes: vec![],
            run_id: "run".into(),
            patch_text: None,
        }
    }

    /// The change ID, for a change entry.
    pub fn change_id(&self) -> Option<ChangeId> {
        match self.id {
            EntryId::Change(id) => Some(id),
            EntryId::Revert(_) => None,
        }
    }
}

/// The fields every ledger line has, whatever its kind: what a reader of
/// `review/ledger.jsonl` may rely on.
pub const LEDGER_FIELDS: &[&str] = &[
    "id",
    "doc",
    "doc_hash_before",
    "doc_hash_after",
    "timestamp",
    "actor",
    "scope",
    "kind",
    "severity",
    "silent",
    "summary",
    "rationale",
    "patch_forward",
    "patch_inverse",
    "review_note",
    "is_revert",
    "reverted_id",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str) -> LedgerEntry {
        LedgerEntry::example(EntryId::parse(id).unwrap())
    }

    #[test]
    fn entry_has_every_field_of_the_ledger_format() {
        let v = serde_json::to_value(entry("RVW-0034")).unwrap();
        for field in LEDGER_FIELDS {
            assert!(v.get(field).is_some(), "missing {field}");
        }
        assert_eq!(v["actor"]["tool"], "koas");
        assert_eq!(v["scope"]["anchor"], "");
    }
}
