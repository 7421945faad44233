//! Targeted refinement (`koas refine`): the judges' verdicts, the
//! arbiter's plan, the router's decisions, the fixes proposed as edit ops,
//! their verification, the events of a run and its summary.
//!
//! A document's *sections* play the part a lesson's sections play in the
//! targeted-refinement design: each heading's own body (up to the next
//! heading of any level) is one section, named by its Stage 1 section ID
//! (`S2.1`; `S0` for text before the first heading).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// A criterion the judges score, 0–1. The order of [`Criterion::ALL`] is
/// the priority hierarchy conflicts are resolved by (first wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Criterion {
    /// Factual and internal consistency: numbers, names and claims agree
    /// with each other and with the rest of the document.
    Consistency,
    /// Structure: order, headings, lists, what goes where.
    Structure,
    /// Clarity and readability.
    Clarity,
    /// Completeness: nothing the section promises is missing.
    Completeness,
    /// Terminology: one term per concept, used as defined.
    Terminology,
    /// Tone and register suited to a technical document.
    Tone,
}

impl Criterion {
    /// Every criterion, highest priority first.
    pub const ALL: [Criterion; 6] = [
        Criterion::Consistency,
        Criterion::Structure,
        Criterion::Clarity,
        Criterion::Completeness,
        Criterion::Terminology,
        Criterion::Tone,
    ];

    /// The name in JSON and prompts (`consistency`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Criterion::Consistency => "consistency",
            Criterion::Structure => "structure",
            Criterion::Clarity => "clarity",
            Criterion::Completeness => "completeness",
            Criterion::Terminology => "terminology",
            Criterion::Tone => "tone",
        }
    }

    /// 0 for the highest priority.
    pub fn priority(self) -> usize {
        Criterion::ALL.iter().position(|c| *c == self).unwrap_or(0)
    }

    /// Reads a criterion name as a model may write it (case, `-`, the
    /// lesson-era names such as `factual_accuracy`).
    pub fn parse(text: &str) -> Option<Criterion> {
        let t = text.trim().to_ascii_lowercase().replace(['-', ' '], "_");
        Some(match t.as_str() {
            "consistency"
            | "factual_accuracy"
            | "factual"
            | "accuracy"
            | "internal_consistency"
            | "factual_consistency" => Criterion::Consistency,
            "structure" | "pedagogical_structure" | "organization" => Criterion::Structure,
            "clarity" | "clarity_readability" | "readability" => Criterion::Clarity,
            "completeness" => Criterion::Completeness,
            "terminology" | "terms" => Criterion::Terminology,
            "tone" | "register" | "tone_register" | "style" | "engagement_examples" => {
                Criterion::Tone
            }
            _ => return None,
        })
    }
}

impl fmt::Display for Criterion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How bad an issue is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IssueSeverity {
    /// Wrong or contradictory content; kept even when the judges disagree.
    Critical,
    /// A real problem a reader would notice.
    Major,
    /// A small improvement.
    Minor,
}

impl IssueSeverity {
    /// `critical`, `major` or `minor`.
    pub fn as_str(self) -> &'static str {
        match self {
            IssueSeverity::Critical => "critical",
            IssueSeverity::Major => "major",
            IssueSeverity::Minor => "minor",
        }
    }

    /// Reads a severity as a model may write it.
    pub fn parse(text: &str) -> Option<IssueSeverity> {
        match text.trim().to_ascii_lowercase().as_str() {
            "critical" | "blocker" | "high" => Some(IssueSeverity::Critical),
            "major" | "medium" | "moderate" => Some(IssueSeverity::Major),
            "minor" | "low" | "trivial" => Some(IssueSeverity::Minor),
            _ => None,
        }
    }
}

/// The kind of fix a section needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum FixAction {
    /// The patcher edits spans of the section.
    SurgicalEdit,
    /// The section-expander rewrites the section's prose.
    RegenerateSection,
    /// The whole document would have to be rewritten: not koas's job, the
    /// run ends with this verdict.
    FullRegenerate,
}

impl FixAction {
    /// The name in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            FixAction::SurgicalEdit => "SURGICAL_EDIT",
            FixAction::RegenerateSection => "REGENERATE_SECTION",
            FixAction::FullRegenerate => "FULL_REGENERATE",
        }
    }

    /// Reads an action as a model may write it.
    pub fn parse(text: &str) -> Option<FixAction> {
        match text
            .trim()
            .to_ascii_uppercase()
            .replace(['-', ' '], "_")
            .as_str()
        {
            "SURGICAL_EDIT" | "SURGICAL" | "PATCH" | "EDIT" => Some(FixAction::SurgicalEdit),
            "REGENERATE_SECTION" | "REGENERATE" | "REWRITE" | "EXPAND" => {
                Some(FixAction::RegenerateSection)
            }
            "FULL_REGENERATE" | "FULL" => Some(FixAction::FullRegenerate),
            _ => None,
        }
    }
}

/// How much context an issue needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IssueScope {
    /// A paragraph (between the quotes).
    Paragraph,
    /// The whole section.
    #[default]
    Section,
    /// The document.
    Global,
}

/// One problem a judge reported, aimed at a section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetedIssue {
    /// `J1-3`: judge number and issue number in that judge's answer.
    pub id: String,
    /// The judge that raised it.
    pub judge: String,
    /// The section it is in.
    pub section_id: String,
    /// What it is about.
    pub criterion: Criterion,
    /// How bad.
    pub severity: IssueSeverity,
    /// The fix the judge recommends.
    pub fix_action: FixAction,
    /// Text at the start of the problem, as it appears in the section.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_quote: Option<String>,
    /// Text at the end of the problem.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_quote: Option<String>,
    /// How much context the fix needs.
    #[serde(default)]
    pub scope: IssueScope,
    /// What is wrong.
    #[serde(default)]
    pub description: String,
    /// What the fixer should do.
    #[serde(default)]
    pub fix_instructions: String,
}

/// Model tokens a step spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TokenUse {
    /// Requests sent to the model (cached answers included).
    pub calls: u64,
    /// Requests answered from the host's cache (no token spent).
    pub cached_calls: u64,
    /// Prompt tokens of the requests the model answered.
    pub prompt_tokens: u64,
    /// Completion tokens of the requests the model answered.
    pub completion_tokens: u64,
}

impl TokenUse {
    /// Prompt plus completion tokens.
    pub fn total(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }

    /// Adds `other` to this count.
    pub fn add(&mut self, other: &TokenUse) {
        self.calls += other.calls;
        self.cached_calls += other.cached_calls;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
    }
}

/// One judge's scores of one section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SectionScores {
    /// The section.
    pub section_id: String,
    /// Criterion → score 0–1 (a criterion the judge left out is absent).
    pub scores: BTreeMap<Criterion, f64>,
}

/// One judge's verdict on the document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeVerdict {
    /// The judge's name (its model role).
    pub judge: String,
    /// Sections it scored.
    pub sections: Vec<SectionScores>,
    /// Issues it raised.
    pub issues: Vec<TargetedIssue>,
    /// Sections whose answer could not be read, with why.
    #[serde(default)]
    pub unreadable: Vec<(String, String)>,
    /// Tokens spent.
    #[serde(default)]
    pub tokens: TokenUse,
}

/// `refine_verdicts` (`refine_judge`): every judge's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct RefineVerdicts {
    /// `sha256:` of the document judged.
    pub doc_hash: String,
    /// The verdicts, one per configured judge.
    pub verdicts: Vec<JudgeVerdict>,
    /// Why no judge was asked (no model, `skip`), if so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// Tokens of all judges.
    #[serde(default)]
    pub tokens: TokenUse,
}

/// How far the judges agree (Krippendorff's alpha).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgreementLevel {
    /// α ≥ 0.80 (or a single judge): every issue is kept.
    High,
    /// 0.67 ≤ α < 0.80: issues raised by at least two judges are kept.
    Moderate,
    /// α < 0.67: only critical issues are kept, and the plan is flagged
    /// for a person.
    Low,
}

/// An issue the arbiter left out, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FilteredIssue {
    /// The issue.
    pub issue: TargetedIssue,
    /// Why it was left out.
    pub reason: String,
}

/// A conflict between two issues of one section, resolved by the
/// priority hierarchy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConflictResolution {
    /// The section.
    pub section_id: String,
    /// The issue that wins (higher priority criterion).
    pub kept: String,
    /// The issue whose criterion becomes a constraint.
    pub constrained: String,
    /// The instruction the fixer gets.
    pub resolution: String,
}

/// The work on one section (the arbiter's task, routed by the router).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SectionTask {
    /// The section.
    pub section_id: String,
    /// Its heading text.
    pub section_title: String,
    /// Its position among the document's sections (0-based), for batching.
    pub index: usize,
    /// The fix (set by the router; the arbiter proposes the judges' most
    /// severe recommendation).
    pub action: FixAction,
    /// The instructions the fixer gets, conflicts resolved.
    pub instructions: Vec<String>,
    /// Criteria that must not degrade.
    #[serde(default)]
    pub constraints: Vec<String>,
    /// The most severe of its issues.
    pub priority: IssueSeverity,
    /// The issues behind the task.
    pub issues: Vec<TargetedIssue>,
    /// The router flagged it: the section before it is regenerated, check
    /// that they still agree.
    #[serde(default)]
    pub consistency_check: bool,
}

/// `refine_plan` (`refine_arbiter`): the judges consolidated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct RefinePlan {
    /// `sha256:` of the document judged.
    pub doc_hash: String,
    /// The judges whose verdict was used, in matrix row order.
    pub judges: Vec<String>,
    /// The units the judges scored (`S2/clarity`), matrix column order.
    pub units: Vec<String>,
    /// Judge × unit scores (`None`: missing).
    pub matrix: Vec<Vec<Option<f64>>>,
    /// Krippendorff's alpha (interval) over the matrix; `None` when it is
    /// undefined (fewer than two judges, or no pairable value).
    pub alpha: Option<f64>,
    /// How the issues were filtered.
    pub agreement: Option<AgreementLevel>,
    /// True when the judges disagree too much: a person should look.
    #[serde(default)]
    pub flagged_for_review: bool,
    /// Criterion → mean score over judges and sections.
    pub criteria_scores: BTreeMap<Criterion, f64>,
    /// Section → criterion → mean score over judges.
    #[serde(default)]
    pub section_scores: BTreeMap<String, BTreeMap<Criterion, f64>>,
    /// The document's score: mean of `criteria_scores`.
    pub score: f64,
    /// True when a kept issue is critical.
    pub has_critical: bool,
    /// Issues kept.
    pub kept: Vec<TargetedIssue>,
    /// Issues left out, with why.
    pub filtered: Vec<FilteredIssue>,
    /// Conflicts resolved.
    pub conflicts: Vec<ConflictResolution>,
    /// One task per section with kept issues (locked sections left out).
    pub tasks: Vec<SectionTask>,
    /// Sections with kept issues that are locked (not edited again).
    #[serde(default)]
    pub skipped_locked: Vec<String>,
    /// Number of sections of the document.
    pub section_count: usize,
    /// Why there is nothing to plan (no verdict could be read), if so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_assessment: Option<String>,
}

/// `refine_routing` (`refine_router`): the fix of every task and the
/// order they run in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct RefineRouting {
    /// `sha256:` of the document judged.
    pub doc_hash: String,
    /// The tasks, routed.
    pub tasks: Vec<SectionTask>,
    /// Section IDs per batch: patches of non-adjacent sections together,
    /// then each regeneration alone.
    pub batches: Vec<Vec<String>>,
    /// Set when the document needs a full rewrite: the reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_regenerate: Option<String>,
    /// A plan a person decided on after an escalation (`--accept`,
    /// `--apply-plan`): the fixers are told so, which also makes their
    /// prompts differ from the earlier attempt's (a new answer, not the
    /// cached one).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub decided: bool,
    /// The document's structure score the decision used.
    pub structure_score: f64,
    /// Share of sections with a critical issue.
    pub critical_ratio: f64,
}

/// `refine_state` (host): what the refinement loop knows that the plan
/// depends on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct RefineState {
    /// The iteration (0-based).
    pub iteration: u32,
    /// Sections not to edit again (oscillation, quality lock).
    pub locked_sections: Vec<String>,
}

/// What the fixer did for one task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FixProposal {
    /// The section.
    pub section_id: String,
    /// Patch or regeneration.
    pub action: FixAction,
    /// Batch it ran in.
    pub batch: usize,
    /// Ops made from the answer.
    pub ops: usize,
    /// Why the answer gave no op (unreadable, placeholders lost, no
    /// change), if so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// Tokens spent.
    pub tokens: TokenUse,
}

/// `refine_ops` (`refine_fix`): the fixes as edit ops (a model's: they
/// never change a protected region), for `md_apply_ops`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct RefineOps {
    /// `sha256:` of the document the ops address.
    pub doc_hash: String,
    /// Edit ops in the ops-file format (raw JSON, validated by the apply
    /// engine).
    pub ops: Vec<serde_json::Value>,
    /// One per task.
    pub proposals: Vec<FixProposal>,
    /// Tokens of every fix.
    pub tokens: TokenUse,
}

/// `refine_changes` (host): one committed change to verify.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RefineChange {
    /// The ledger ID (`RVW-0003`).
    pub change_id: String,
    /// The section it changed.
    pub section_id: String,
    /// Patch or regeneration.
    pub action: FixAction,
    /// The text it replaced.
    pub before_text: String,
    /// The text it wrote.
    pub after_text: String,
    /// The issues it was meant to fix.
    pub issues: Vec<TargetedIssue>,
}

/// The delta judge's answer on one issue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeltaAnswer {
    /// The issue.
    pub issue_id: String,
    /// YES: the issue was addressed.
    pub fixed: bool,
    /// The rest of the answer.
    pub explanation: String,
}

/// The verification of one change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangeVerification {
    /// The ledger ID.
    pub change_id: String,
    /// The section.
    pub section_id: String,
    /// Failures of the free checks (length, language, structure,
    /// readability); empty when they passed.
    pub heuristic_failures: Vec<String>,
    /// Readability remarks that do not fail the change.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The delta judge's answers (none when the free checks failed).
    pub delta: Vec<DeltaAnswer>,
    /// True when the change stays.
    pub passed: bool,
    /// Why it does not, if so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `refine_verification` (`refine_verify`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct RefineVerification {
    /// One per change.
    pub changes: Vec<ChangeVerification>,
    /// Tokens of the delta judge.
    pub tokens: TokenUse,
}

/// How a refinement run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefineStatus {
    /// The score met the target.
    Accepted,
    /// Full-auto: below the target but acceptable, no critical issue.
    AcceptedWarning,
    /// Full-auto: the best iteration is returned.
    BestEffort,
    /// Semi-auto: a person must decide (see the escalation report).
    Escalated,
    /// The document needs a full rewrite, which koas does not do.
    FullRegenerate,
    /// No judge gave a readable verdict: nothing could be assessed.
    NoAssessment,
    /// Semi-auto `--plan-only`: the plan is written, nothing applied.
    Planned,
}

impl RefineStatus {
    /// The name in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            RefineStatus::Accepted => "accepted",
            RefineStatus::AcceptedWarning => "accepted_warning",
            RefineStatus::BestEffort => "best_effort",
            RefineStatus::Escalated => "escalated",
            RefineStatus::FullRegenerate => "full_regenerate",
            RefineStatus::NoAssessment => "no_assessment",
            RefineStatus::Planned => "planned",
        }
    }
}

/// The quality of the returned document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QualityStatus {
    /// Score ≥ 0.85.
    Good,
    /// Score ≥ 0.75.
    Acceptable,
    /// Below.
    BelowStandard,
}

/// One event of a refinement run, appended to `refine/events.jsonl` as it
/// happens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RefineEvent {
    /// The run starts.
    RefinementStart {
        /// `semi-auto` or `full-auto`.
        mode: String,
        /// Sections of the document.
        sections: Vec<String>,
        /// Sections the first plan sends to a fixer.
        #[serde(default)]
        target_sections: Vec<String>,
    },
    /// The arbiter consolidated the verdicts.
    ArbiterConsolidation {
        /// Iteration.
        iteration: u32,
        /// Krippendorff's alpha.
        alpha: Option<f64>,
        /// Score.
        score: f64,
        /// Issues kept.
        kept: usize,
        /// Issues left out.
        filtered: usize,
        /// Tasks.
        target_sections: Vec<String>,
    },
    /// A batch of fixes starts.
    BatchStarted {
        /// Iteration.
        iteration: u32,
        /// Batch index.
        batch_index: usize,
        /// Its sections.
        sections: Vec<String>,
    },
    /// A fixer is asked for one section's fix.
    TaskStarted {
        /// Iteration.
        iteration: u32,
        /// Batch index.
        batch_index: usize,
        /// Section.
        section_id: String,
        /// Patch or regeneration.
        task_type: FixAction,
    },
    /// Every fix of a batch is applied (or refused) and recorded.
    BatchComplete {
        /// Iteration.
        iteration: u32,
        /// Batch index.
        batch_index: usize,
        /// Ledger IDs of the changes the batch recorded.
        #[serde(default)]
        changes: Vec<String>,
    },
    /// A fix was applied and recorded.
    PatchApplied {
        /// Iteration.
        iteration: u32,
        /// Section.
        section_id: String,
        /// Ledger ID.
        change_id: String,
        /// Patch or regeneration.
        task_type: FixAction,
        /// `-3 +4 lines`.
        diff_summary: String,
        /// The text the change wrote.
        #[serde(default)]
        content: String,
    },
    /// A change was verified.
    VerificationResult {
        /// Iteration.
        iteration: u32,
        /// Section.
        section_id: String,
        /// Ledger ID.
        change_id: String,
        /// Kept or reverted.
        passed: bool,
        /// Why not.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A locked criterion regressed: the iteration's changes are reverted.
    QualityLockTriggered {
        /// Iteration whose changes are reverted.
        iteration: u32,
        /// Criterion, locked score, new score.
        regressions: Vec<(Criterion, f64, f64)>,
        /// The changes reverted.
        reverted: Vec<String>,
    },
    /// A section is not edited again.
    SectionLocked {
        /// Section.
        section_id: String,
        /// Why.
        reason: String,
    },
    /// An iteration ended.
    IterationComplete {
        /// Iteration.
        iteration: u32,
        /// The document's score at its start.
        score: f64,
        /// Tokens it spent.
        tokens: u64,
    },
    /// The score stopped improving.
    ConvergenceDetected {
        /// Iteration.
        iteration: u32,
    },
    /// Full-auto returns the best iteration.
    BestEffortSelected {
        /// The iteration.
        iteration: u32,
        /// Its score.
        score: f64,
        /// Later changes reverted.
        reverted: Vec<String>,
    },
    /// Semi-auto stops for a person.
    EscalationTriggered {
        /// Why.
        reason: String,
    },
    /// The run ended.
    RefinementComplete {
        /// Final score.
        final_score: f64,
        /// How.
        status: RefineStatus,
    },
}

/// One iteration of a run, for the summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IterationRecord {
    /// 0-based.
    pub iteration: u32,
    /// The document's score when the judges scored it.
    pub score: f64,
    /// Criterion scores.
    pub criteria_scores: BTreeMap<Criterion, f64>,
    /// Issues kept by the arbiter.
    pub issues: usize,
    /// Tokens of the judges.
    pub judge_tokens: TokenUse,
    /// Tokens of the patcher and the section-expander.
    pub fix_tokens: TokenUse,
    /// Tokens of the delta judge.
    pub verify_tokens: TokenUse,
    /// Changes recorded.
    pub applied: Vec<String>,
    /// Changes reverted (failed verification, quality lock).
    pub reverted: Vec<String>,
}

/// `refine/summary.json`: how a run went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RefineSummary {
    /// `semi-auto` or `full-auto`.
    pub mode: String,
    /// How it ended.
    pub status: RefineStatus,
    /// Why it stopped (target met, iterations, tokens, timeout,
    /// convergence…).
    pub stop_reason: String,
    /// Quality of the returned document.
    pub quality_status: QualityStatus,
    /// The iteration returned.
    pub best_iteration: u32,
    /// Its score.
    pub best_score: f64,
    /// Every iteration.
    pub iterations: Vec<IterationRecord>,
    /// Issues still open in the returned document.
    pub unresolved_issues: Vec<TargetedIssue>,
    /// What a person could do next.
    pub improvement_hints: Vec<String>,
    /// Sections locked.
    pub locked_sections: Vec<String>,
    /// Changes still active at the end.
    pub changes: Vec<String>,
    /// Tokens of the whole run.
    pub tokens: TokenUse,
    /// Tokens of the fixes and their verification (judges excluded).
    pub fix_side_tokens: u64,
    /// Estimated tokens of asking the model to rewrite the whole document
    /// once per iteration that fixed something, with the same issues.
    pub full_rewrite_tokens: u64,
}
