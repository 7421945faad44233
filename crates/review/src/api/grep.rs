//! Ledger entries by kind, severity, state or a pattern.

use super::session::{ApiError, Session};
use anyhow::Context as _;
use koas_edit::query::{dismissed_ids, grep, GrepFilter, REVIEW_SEVERITIES};
use koas_review_schema::change_id::ChangeId;
use koas_review_schema::findings::Severity;
use koas_review_schema::ledger::LedgerEntry;
use koas_review_workspace::ledger::TornTail;
use serde_json::{json, Value};
use std::collections::BTreeSet;

/// Which entries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GrepRequest {
    /// A regular expression matched against the ID, the summary and the
    /// rationale.
    pub pattern: Option<String>,
    /// Only this kind.
    pub kind: Option<String>,
    /// Only this severity: a ledger word (`minor`, `attention`,
    /// `deletion`, `critical`) or a level (`info`, `warning`, `error`).
    pub severity: Option<String>,
    /// Only silent (true) or non-silent (false) entries.
    pub silent: Option<bool>,
    /// Only reverts (true) or only non-reverts (false).
    pub reverts: Option<bool>,
}

/// The entries found.
#[derive(Debug)]
pub struct Found {
    /// The matching entries, in ledger order.
    pub entries: Vec<LedgerEntry>,
    /// How many entries the ledger holds.
    pub in_ledger: usize,
    /// Flags that were dismissed.
    pub dismissed: BTreeSet<ChangeId>,
    /// A torn last line of the ledger, if any (`koas status
    /// --repair-ledger` moves it aside).
    pub torn_tail: Option<TornTail>,
}

impl Found {
    /// The answer's JSON form (`koas grep --json`, the MCP tool).
    pub fn to_json(&self, workspace: &std::path::Path) -> Value {
        json!({
            "status": "completed",
            "summary": format!("{} of {} entries match", self.entries.len(), self.in_ledger),
            "workspace": workspace,
            "total": self.entries.len(),
            "entries": self.entries,
            "dismissed": self.dismissed,
            "torn_tail": self.torn_tail,
        })
    }
}

impl Session<'_> {
    /// The ledger entries `request` selects; none is an answer, not an
    /// error.
    pub fn grep(&self, request: &GrepRequest) -> Result<Found, ApiError> {
        let target = self.target();
        target.require_workspace()?;
        if let Some(severity) = &request.severity {
            let known = REVIEW_SEVERITIES
                .iter()
                .any(|r| r.eq_ignore_ascii_case(severity.trim()))
                || Severity::parse_any(severity).is_some();
            if !known {
                return Err(anyhow::anyhow!(
                    "unknown severity {severity:?}: expected minor, attention, deletion or critical (or info, warning, error)"
                )
                .into());
            }
        }
        let pattern = request.pattern.as_deref();
        let filter = GrepFilter::new(
            pattern,
            request.kind.as_deref(),
            request.severity.as_deref(),
            request.silent,
            request.reverts,
        )
        .with_context(|| format!("invalid PATTERN {:?}", pattern.unwrap_or("")))?;
        let ledger = target
            .workspace
            .ledger()
            .with_context(|| format!("review workspace {}", target.root().display()))?;
        Ok(Found {
            entries: grep(ledger.entries(), &filter)
                .into_iter()
                .cloned()
                .collect(),
            in_ledger: ledger.entries().len(),
            dismissed: dismissed_ids(ledger.entries()),
            torn_tail: ledger.torn_tail().cloned(),
        })
    }
}
