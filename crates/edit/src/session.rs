//! An in-memory review session: a document, its ledger entries and its
//! patch files, kept in memory. It runs the same steps as the on-disk
//! workspace of `koas-review-workspace` without touching the disk, which
//! suits kernels (pure by design) and tests.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::apply::{apply_batch, BatchInput};

use crate::clock::Clock;
use crate::record::{entry_for_applied, entry_for_revert, patch_paths, RunContext};
use crate::revert::{plan_reverts, RevertError, RevertRequest};
use koas_review_schema::apply::{ApplyOptions, BatchOutcome, OpOrigin};
use koas_review_schema::change_id::{ChangeId, IdAllocator, IdError};
use koas_review_schema::ledger::{Actor, LedgerEntry};
use koas_review_schema::revert::RevertPlan;
use koas_review_schema::stage1::ProtectedSpans;

/// A document with its ledger and patches, in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemorySession {
    /// Document file name, used in patch headers and ledger entries.
    pub doc_name: String,
    /// The current document: the original after every entry.
    pub text: String,
    /// Ledger entries, in order.
    pub entries: Vec<LedgerEntry>,
    /// Patch files by workspace-relative path.
    pub patches: BTreeMap<String, String>,
    /// Highest change ID ever allocated (applied or rejected).
    pub last_allocated: Option<ChangeId>,
    /// Who proposes the ops given to [`MemorySession::apply`] (a person
    /// unless set).
    pub origin: OpOrigin,
}

impl MemorySession {
    /// A session on `text` with an empty ledger.
    pub fn new(doc_name: &str, text: &str) -> Self {
        MemorySession {
            doc_name: doc_name.to_owned(),
            text: text.to_owned(),
            entries: Vec::new(),
            patches: BTreeMap::new(),
            last_allocated: None,
            origin: OpOrigin::Person,
        }
    }

    /// The first ID the next batch gets.
    pub fn next_id(&self) -> Result<ChangeId, IdError> {
        let seen = self
            .entries
            .iter()
            .filter_map(LedgerEntry::change_id)
            .chain(self.last_allocated);
        Ok(IdAllocator::after(seen)?.peek())
    }

    /// Applies a batch of ops planned on the current text, records the
    /// applied ones, and returns the outcome.
    pub fn apply(
        &mut self,
        ops: &[Value],
        protected: &ProtectedSpans,
        options: &ApplyOptions,
        actor: &Actor,
        clock: &dyn Clock,
        run_id: &str,
    ) -> Result<BatchOutcome, IdError> {
        let ledger_ids: BTreeSet<ChangeId> = self
            .entries
            .iter()
            .filter_map(LedgerEntry::change_id)
            .collect();
        let first_id = self.next_id()?;
        let origins = vec![self.origin; ops.len()];
        let outcome = apply_batch(BatchInput {
            doc_name: &self.doc_name,
            text: &self.text,
            ops,
            protected,
            ledger_ids: &ledger_ids,
            first_id,
            options,
            origins: &origins,
            known: Default::default(),
        });
        let run = RunContext {
            doc_name: &self.doc_name,
            actor,
            run_id,
            clock,
        };
        for applied in &outcome.applied {
            let entry = entry_for_applied(applied, run);
            if let Some(pair) = &applied.patches {
                self.patches
                    .insert(entry.patch_forward.clone(), pair.forward.clone());
                self.patches
                    .insert(entry.patch_inverse.clone(), pair.inverse.clone());
            }
            self.entries.push(entry);
        }
        if !ops.is_empty() {
            self.last_allocated =
                ChangeId::new(outcome.next_id.seq().saturating_sub(1)).or(self.last_allocated);
        }
        self.text = outcome.final_text.clone();
        Ok(outcome)
    }

    /// Plans the reverts of `ids` without changing anything.
    pub fn plan_revert(&self, ids: &[ChangeId]) -> Result<RevertPlan, RevertError> {
        let read = |path: &str| {
            self.patches
                .get(path)
                .cloned()
                .ok_or_else(|| "no such patch file".to_owned())
        };
        plan_reverts(RevertRequest {
            doc_name: &self.doc_name,
            current_text: &self.text,
            entries: &self.entries,
            ids,
            read_patch: &read,
        })
    }

    /// Reverts `ids` (all or nothing) and records the revert entries.
    pub fn revert(
        &mut self,
        ids: &[ChangeId],
        rationale: &str,
        actor: &Actor,
        clock: &dyn Clock,
        run_id: &str,
    ) -> Result<RevertPlan, RevertError> {
        let plan = self.plan_revert(ids)?;
        let run = RunContext {
            doc_name: &self.doc_name,
            actor,
            run_id,
            clock,
        };
        for revert in &plan.reverts {
            let entry = entry_for_revert(revert, rationale, run);
            let (forward, inverse) = patch_paths(entry.id);
            self.patches.insert(forward, revert.patches.forward.clone());
            self.patches.insert(inverse, revert.patches.inverse.clone());
            self.entries.push(entry);
        }
        self.text = plan.final_text.clone();
        Ok(plan)
    }
}
