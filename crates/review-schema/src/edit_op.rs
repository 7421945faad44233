//! Edit ops: the change a reviewer (a person, an ops file or a model)
//! proposes, after the engine has built and normalized it, and the review
//! policy that decides how visible a change is.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::change_id::ChangeId;

/// What an op does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Replace `before_text` at the target lines with `after_text`.
    #[default]
    Replace,
    /// Insert `after_text` after the target lines.
    Insert,
    /// Remove the target text.
    Delete,
    /// Change nothing; record the finding.
    FlagOnly,
}

impl Action {
    /// Parses an action name, tolerating case, `-` and the short `flag`.
    pub fn parse(text: &str) -> Option<Action> {
        match text.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "replace" => Some(Action::Replace),
            "insert" => Some(Action::Insert),
            "delete" => Some(Action::Delete),
            "flag_only" | "flag" => Some(Action::FlagOnly),
            _ => None,
        }
    }

    /// The name in JSON, e.g. `flag_only`.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Replace => "replace",
            Action::Insert => "insert",
            Action::Delete => "delete",
            Action::FlagOnly => "flag_only",
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A GitHub alert type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Alert {
    /// `[!NOTE]`
    Note,
    /// `[!TIP]`
    Tip,
    /// `[!IMPORTANT]`
    Important,
    /// `[!WARNING]`
    Warning,
    /// `[!CAUTION]`
    Caution,
}

impl Alert {
    /// Parses `WARNING`, `warning` or `[!WARNING]`.
    pub fn parse(text: &str) -> Option<Alert> {
        let t = text.trim().trim_start_matches("[!").trim_end_matches(']');
        match t.to_ascii_uppercase().as_str() {
            "NOTE" => Some(Alert::Note),
            "TIP" => Some(Alert::Tip),
            "IMPORTANT" => Some(Alert::Important),
            "WARNING" => Some(Alert::Warning),
            "CAUTION" => Some(Alert::Caution),
            _ => None,
        }
    }

    /// `NOTE`, `WARNING`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            Alert::Note => "NOTE",
            Alert::Tip => "TIP",
            Alert::Important => "IMPORTANT",
            Alert::Warning => "WARNING",
            Alert::Caution => "CAUTION",
        }
    }
}

impl fmt::Display for Alert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The note shown to a person for a change that needs attention.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewNote {
    /// The GitHub alert the note is rendered as in the annotated document.
    pub alert: Alert,
    /// Text, starting `REVIEWER: RVW-NNNN — `.
    pub text: String,
}

/// Where an op applies, in the document state it was planned on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Target {
    /// Chunk the op was planned in.
    #[serde(default)]
    pub chunk_id: String,
    /// Anchor slug of the target's section; informational, recorded in the
    /// ledger's scope (empty when unknown).
    #[serde(default)]
    pub anchor: String,
    /// Section ID plus block number, e.g. `S2.3.p5`; informational, like
    /// `anchor`.
    #[serde(default)]
    pub node_path: String,
    /// First target line, 1-based (0 only for an insert at the very top).
    pub line_start: usize,
    /// Last target line, 1-based inclusive.
    pub line_end: usize,
}

/// A typed, normalized edit op: what the engine validates and applies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EditOp {
    /// Engine-allocated change ID.
    pub id: ChangeId,
    /// The `id` the op arrived with, kept for traceability only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_id: Option<String>,
    /// What the op does.
    pub action: Action,
    /// The lines the op applies to, in the document state the batch was
    /// planned on.
    pub target: Target,
    /// `sha256:` of the target text: the contents of the target lines
    /// joined with `\n`, without a trailing newline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_hash: Option<String>,
    /// The text the op expects at the target (whole target, or a part of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_text: Option<String>,
    /// The new text (empty for delete and flag_only).
    #[serde(default)]
    pub after_text: String,
    /// True when a person should look at the change.
    pub needs_attention: bool,
    /// Change kind, e.g. `typo`, `terminology`.
    pub kind: String,
    /// `minor`, `attention`, `deletion` or `critical` (the keys of the
    /// severity → alert map).
    pub severity: String,
    /// True for silent-tier changes (no inline note).
    pub silent: bool,
    /// Note shown to a person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_note: Option<ReviewNote>,
    /// Why the change is made.
    #[serde(default)]
    pub rationale: String,
    /// One-line summary for the ledger; derived when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

/// The configurable review policy: visibility tiers and alert mapping.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewPolicy {
    /// Kinds whose changes are silent unless they need attention.
    pub silent_allowlist: Vec<String>,
    /// Severity → alert type for inline notes.
    pub severity_alert_map: BTreeMap<String, Alert>,
}

impl Default for ReviewPolicy {
    fn default() -> Self {
        ReviewPolicy {
            silent_allowlist: [
                "typo",
                "punctuation",
                "capitalization",
                "spacing",
                "grammar",
            ]
            .map(String::from)
            .to_vec(),
            severity_alert_map: [
                ("minor", Alert::Note),
                ("attention", Alert::Warning),
                ("deletion", Alert::Caution),
                ("critical", Alert::Important),
            ]
            .into_iter()
            .map(|(s, a)| (s.to_owned(), a))
            .collect(),
        }
    }
}

impl ReviewPolicy {
    /// True when `kind` belongs to the silent tier.
    pub fn is_silent_kind(&self, kind: &str) -> bool {
        self.silent_allowlist
            .iter()
            .any(|k| k.eq_ignore_ascii_case(kind))
    }

    /// The alert for a severity.
    pub fn alert_for(&self, severity: &str) -> Option<Alert> {
        self.severity_alert_map.get(severity).copied()
    }

    /// The known severities, comma-separated, for messages.
    pub fn severities(&self) -> String {
        self.severity_alert_map
            .keys()
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    }
}
