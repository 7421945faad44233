//! # koas-edit — the Stage 3 edit-op engine
//!
//! The deterministic core of koas' reviewer: it takes edit ops (from an
//! ops file, a person or an LLM planner), normalizes and validates them,
//! applies them to a Markdown document byte for byte, and records every
//! change with an ID, a forward and an inverse unified diff, and an entry
//! in an append-only ledger, so any change can be undone later. The data
//! it reads and writes (edit ops, ledger entries, outcomes) are the types
//! of `koas-review-schema`; this crate holds the algorithms.
//!
//! The kernels `md_apply_ops`, `md_inline_notes_inject`, `md_revert` and
//! the review API's operations are thin glue over this crate; the report
//! is rendered by `koas-report` from what it records.
//!
//! ## Layers
//!
//! Pure, no I/O (usable inside a kernel):
//! - [`edit_op`]: building a typed op from untrusted JSON, with defaults.
//! - [`normalize`]: HASH_RECOMPUTE, NOTE_INJECT, NOTE_ID_FIX, blank-line guard.
//! - [`validate`]: the invariants an op must hold, each failure a rejection
//!   class.
//! - [`effect`]: what an op does, from its text: the words it changes,
//!   polarity words ([`lexicon`]), the Markdown structure around it,
//!   invisible characters.
//! - [`guards`]: what happens to an op for what it does (a corrected
//!   kind, attention and a note, a refusal).
//! - [`plan`]: the exact line change an op makes.
//! - [`apply`]: batches, line shifting, overlap refusal, patches.
//! - [`patch`]: unified diffs: generation, parsing, strict application.
//! - [`linemap`]: following lines through later edits.
//! - [`revert`]: single and bulk revert with conflict detection.
//! - [`known`]: what the ledger already holds, by effect, so that a
//!   review run again records nothing twice.
//! - [`record`]: ledger entries and patch paths for applied ops and reverts.
//! - [`session`]: the whole review/revert cycle in memory (for kernels).
//! - [`notes`]: GitHub alert blocks for changes that need attention.
//! - [`query`]: `grep` filters and `show` rendering over the ledger.
//! - [`protected`]: what an op may not touch, and following protected
//!   regions through edits.
//! - [`structure`]: the protected structure outside the edited lines,
//!   which a batch must leave unchanged.
//! - [`artifacts`]: reading Stage 1 artifacts for the document at hand,
//!   op scopes, and the document and ledger a view shows.
//!
//! Nothing here touches the disk: the on-disk workspace (ledger file,
//! patches, lock, crash-safe runs) is the `koas-review-workspace` crate,
//! so the plugins that link this crate link no file locking.
//!
//! ## A batch in five lines
//!
//! ```
//! use std::collections::BTreeSet;
//! use koas_edit::apply::{apply_batch, BatchInput};
//! use koas_review_schema::apply::{ApplyOptions, OpOrigin};
//! use koas_review_schema::change_id::ChangeId;
//! use koas_review_schema::stage1::ProtectedSpans;
//!
//! let doc = "# Title\n\nThe bandwith is high.\n";
//! let ops = vec![serde_json::json!({
//!     "action": "replace", "kind": "typo",
//!     "target": {"line_start": 3, "line_end": 3},
//!     "before_text": "bandwith", "after_text": "bandwidth"
//! })];
//! let outcome = apply_batch(BatchInput {
//!     doc_name: "spec.md",
//!     text: doc,
//!     ops: &ops,
//!     protected: &ProtectedSpans::default(),
//!     ledger_ids: &BTreeSet::new(),
//!     first_id: ChangeId::first(),
//!     options: &ApplyOptions::default(),
//!     origins: &[OpOrigin::Person],
//!     known: Default::default(),
//! });
//! assert_eq!(outcome.final_text, "# Title\n\nThe bandwidth is high.\n");
//! assert_eq!(outcome.applied[0].op.id.to_string(), "RVW-0001");
//! assert!(outcome.applied[0].patches.as_ref().unwrap().forward.starts_with("--- a/spec.md\n+++ b/spec.md\n"));
//! ```

#![deny(missing_docs)]

pub mod apply;
pub mod artifacts;
pub mod clock;
pub mod edit_op;
pub mod effect;
pub mod guards;
pub mod known;
pub mod lang;
pub mod lexicon;
pub mod linemap;
pub mod normalize;
pub mod notes;
pub mod patch;
pub mod plan;
pub mod protected;
pub mod query;
pub mod record;
pub mod revert;
pub mod session;
pub mod structure;
pub mod text;
pub mod validate;

/// The crate version, for reports and ledger actors.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
