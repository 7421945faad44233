//! # md_revert — Stage 3 reviewer kernel
//!
//! Plans the revert of changes: single or bulk (`ids`), or every
//! change still active (`all`). Bulk reverts run latest change first; a
//! double revert, the revert of a revert, a flag, and a conflict (a later
//! change touched the same lines, or the document no longer holds what the
//! change wrote — checked by content hash) refuse the whole request.
//!
//! The kernel is pure: its `revert_outcome`
//! ([`koas_review_schema::revert::RevertOutcome`]) is a plan, or a refusal
//! with its reason. The host (`koas revert`) replays and checks the plan,
//! then writes a new `REVERT-RVW-NNNN` patch pair and ledger entry per
//! revert and the document. In a review workspace the host gives the
//! current document (`review_doc`) and the ledger (`ledger`); in a plain
//! `koas run` the kernel plans on `md_apply_ops`'s preview. The planning
//! itself is [`koas_edit::revert`]; this crate is the plugin glue.

use koas_edit::artifacts::ReviewView;
use koas_edit::revert::{parse_revert_targets, plan_reverts, revertible_ids, RevertRequest};
use koas_kernel_api::prelude::*;
use koas_review_schema::apply::ApplyOutcome;
use koas_review_schema::change_id::ChangeId;
use koas_review_schema::ledger::{Actor, LedgerEntry};
use koas_review_schema::names;
use koas_review_schema::revert::RevertOutcome;
use koas_review_schema::revert::RevertPlan;
use koas_review_schema::review::ReviewState;
use serde::Deserialize;

/// `[config.md_revert]`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct RevertConfig {
    /// Changes to revert (`RVW-NNNN`), any order.
    pub ids: Vec<String>,
    /// Revert every change that is still active.
    pub all: bool,
}

#[derive(Debug, Default, Clone, Copy)]
pub struct MdRevert;

fn preview_actor() -> Actor {
    Actor {
        tool: format!("koas md_revert {}", env!("CARGO_PKG_VERSION")),
        operator: "pipeline (preview)".to_owned(),
    }
}

fn refusal(
    doc_name: String,
    requested: Vec<ChangeId>,
    text: String,
    reason: String,
) -> RevertOutcome {
    RevertOutcome {
        doc_name,
        requested,
        plan: RevertPlan {
            reverts: Vec::new(),
            final_text: text,
        },
        refused: Some(reason),
    }
}

/// Plans the request on `text` and `entries`.
fn plan(
    config: &RevertConfig,
    doc_name: String,
    text: String,
    entries: &[LedgerEntry],
) -> RevertOutcome {
    if config.all && !config.ids.is_empty() {
        return refusal(
            doc_name,
            Vec::new(),
            text,
            "give either change IDs or `all`, not both".to_owned(),
        );
    }
    let requested = if config.all {
        revertible_ids(entries)
    } else {
        match parse_revert_targets(&config.ids) {
            Ok(ids) => ids,
            Err(e) => return refusal(doc_name, Vec::new(), text, e.to_string()),
        }
    };
    let read = |path: &str| -> Result<String, String> {
        Err(format!(
            "{path}: the ledger entry carries no copy of its patch, and a kernel reads no files"
        ))
    };
    match plan_reverts(RevertRequest {
        doc_name: &doc_name,
        current_text: &text,
        entries,
        ids: &requested,
        read_patch: &read,
    }) {
        Ok(plan) => RevertOutcome {
            doc_name,
            requested,
            plan,
            refused: None,
        },
        Err(e) => refusal(doc_name, requested, text, e.to_string()),
    }
}

impl Kernel for MdRevert {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new("md_revert", "0.1.0")
            .stage("S3")
            .description(
                "Plans single and bulk reverts (latest first) with conflict detection by content hash; the host records them",
            )
            .optional_input(names::LEDGER)
            .optional_input(names::REVIEW_DOC)
            .optional_input(names::REVIEW_STATE)
            .optional_input(names::APPLY_OUTCOME)
            .output_file(names::REVERT_OUTCOME, "stage3/revert_outcome.json")
            .output(names::REVERTED_DOC)
            .default_config(serde_json::json!({ "ids": [], "all": false }))
    }

    fn run(&self, _ctx: &Context, config: &KernelConfig, inputs: &Inputs) -> KernelResult {
        let config: RevertConfig = config.parse()?;
        let state: Option<ReviewState> = inputs.parse_optional(names::REVIEW_STATE)?;
        let outcome: Option<ApplyOutcome> = inputs.parse_optional(names::APPLY_OUTCOME)?;
        let view = ReviewView::resolve(
            inputs.parse_optional(names::REVIEW_DOC)?,
            inputs.parse_optional(names::LEDGER)?,
            outcome.as_ref(),
            "",
            &preview_actor(),
        )
        .map_err(KernelError::invalid_input)?;
        let doc_name = state
            .map(|s| s.doc_name)
            .or_else(|| outcome.map(|o| o.doc_name))
            .unwrap_or_else(|| "doc.md".to_owned());
        let result = plan(&config, doc_name, view.text, &view.entries);
        let summary = match &result.refused {
            Some(reason) => format!("refused: {reason}"),
            None if result.plan.reverts.is_empty() => "nothing to revert".to_owned(),
            None => {
                let reverts = &result.plan.reverts;
                let mut ids: Vec<String> = reverts
                    .iter()
                    .take(5)
                    .map(|r| r.reverted.to_string())
                    .collect();
                if reverts.len() > 5 {
                    ids.push("…".to_owned());
                }
                format!(
                    "{} reverts planned, latest first ({})",
                    reverts.len(),
                    ids.join(", ")
                )
            }
        };
        let mut out = KernelOutput::new()
            .artifact(names::REVERTED_DOC, &result.plan.final_text)
            .artifact(names::REVERT_OUTCOME, &result)
            .summary(summary);
        if let Some(reason) = &result.refused {
            out = out.warning(format!("revert refused: {reason}"));
        }
        Ok(out)
    }
}

koas_kernel_api::export_kernel!(MdRevert);
