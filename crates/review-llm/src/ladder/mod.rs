//! The 6-level extraction ladder: parsers tried from the strictest to the
//! most forgiving, because small local models rarely follow the requested
//! format exactly and a usable answer should not be thrown away.
//!
//! | level | method | accepts |
//! |---|---|---|
//! | 1 | `json_strict` | a JSON array of ops, or an object holding one under `ops`/`edit_ops`/`edits`/`changes`/`operations`; markdown fences stripped first; an object inside prose is found with the canonicalizer's exactly-one rule |
//! | 2 | `json_relaxed` | the same plus trailing commas, single quotes, `//`, `#` and `/* */` comments, unquoted keys, `True`/`False`/`None`, raw newlines in strings, a single op object, and exactly one bracketed region inside prose |
//! | 3 | `yaml` | a YAML sequence of op mappings, a mapping holding one, or a single op mapping |
//! | 4 | `tagged_payload` | the content between `BEGIN_EDIT_OPS`/`END_EDIT_OPS` (or `<EDIT_OPS>`…`</EDIT_OPS>`), parsed by levels 1–3 |
//! | 5 | `plaintext_regex` | `[RVW] action=replace / lines=N-M / before="…" / after="…"` blocks and `replace:`/`delete:`/`flag:`/`insert:` lines naming a line range |
//! | 6 | `freeform_salvage` | a short "no changes needed" answer (EN/FR), or markers and empty lists only → no ops; any other prose → one `flag_only` op carrying it (without the markers) as rationale |
//!
//! Levels 1–4 read each list item with [`RawEditOp::from_value`]: an op
//! whose field has the wrong type (a number as `after_text`, a list as
//! `line_start`) is never converted; it is listed in
//! [`LadderOutcome::rejected_items`] with its reason.
//!
//! The first level that succeeds determines [`LadderOutcome::method`].
//! When the payload is tagged, levels 2 (prose search) and 3 defer to
//! level 4 so that the method reported is the one the model actually used.
//!
//! The ladder is the reviewer's: the edit-op format is its own. What is
//! not about edit ops — text normalization, the exactly-one-object
//! canonicalizer, code fences, relaxed JSON, bounded YAML, bracket
//! scanning — is `koas-extract`'s, and the levels call it.

mod op;
mod plaintext;
mod relaxed;
mod salvage;
mod strict;
mod tagged;
mod value_ops;
mod yaml;

use koas_extract::normalize_text;
use serde::{Deserialize, Serialize};

pub use op::{EditAction, OpReadError, RawEditOp};
pub use value_ops::OPS_KEYS;

/// Which ladder level produced the ops (or why none did).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExtractionMethod {
    /// Level 1: strict JSON.
    JsonStrict,
    /// Level 2: JSON with the usual model mistakes tolerated.
    JsonRelaxed,
    /// Level 3: YAML instead of JSON.
    Yaml,
    /// Level 4: ops between `BEGIN_EDIT_OPS`/`END_EDIT_OPS` (or
    /// `<EDIT_OPS>`) tags.
    TaggedPayload,
    /// Level 5: `[RVW] action=…` blocks and `replace:`-style lines.
    PlaintextRegex,
    /// Level 6: "no changes needed", or the prose kept as one `flag_only` op.
    FreeformSalvage,
    /// The response was empty (only whitespace); no level was tried.
    EmptyResponse,
    /// All six levels failed (e.g. output with no letters at all).
    Failed,
}

impl ExtractionMethod {
    /// The name used in logs and `status.jsonl` (`json_strict`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ExtractionMethod::JsonStrict => "json_strict",
            ExtractionMethod::JsonRelaxed => "json_relaxed",
            ExtractionMethod::Yaml => "yaml",
            ExtractionMethod::TaggedPayload => "tagged_payload",
            ExtractionMethod::PlaintextRegex => "plaintext_regex",
            ExtractionMethod::FreeformSalvage => "freeform_salvage",
            ExtractionMethod::EmptyResponse => "empty_response",
            ExtractionMethod::Failed => "failed",
        }
    }

    /// The ladder level (1–6), or `None` for `empty_response`/`failed`.
    pub fn level(self) -> Option<u8> {
        match self {
            ExtractionMethod::JsonStrict => Some(1),
            ExtractionMethod::JsonRelaxed => Some(2),
            ExtractionMethod::Yaml => Some(3),
            ExtractionMethod::TaggedPayload => Some(4),
            ExtractionMethod::PlaintextRegex => Some(5),
            ExtractionMethod::FreeformSalvage => Some(6),
            ExtractionMethod::EmptyResponse | ExtractionMethod::Failed => None,
        }
    }

    /// `true` when a level succeeded (possibly with zero ops).
    pub fn succeeded(self) -> bool {
        self.level().is_some()
    }
}

/// Why one level did not accept the text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LevelFailure {
    /// The level that did not accept the text.
    pub method: ExtractionMethod,
    /// A short reason for people, e.g. which parse error stopped it.
    pub reason: String,
}

/// The result of running the ladder on one response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LadderOutcome {
    /// The level that succeeded, `empty_response` or `failed`.
    pub method: ExtractionMethod,
    /// The extracted proposals (may be empty on success: the model said
    /// there is nothing to change).
    pub ops: Vec<RawEditOp>,
    /// `true` when the model explicitly said no changes are needed.
    pub no_changes: bool,
    /// Items of a parsed list that were not ops at all (a bare string, an
    /// object naming no action). Rejected ops are not counted here: they
    /// are listed in [`LadderOutcome::rejected_items`].
    pub skipped_items: usize,
    /// Ops of a parsed list refused because a field had the wrong type
    /// (a number as `after_text`, a list as `line_start`…), each with its
    /// reason. Never coerced, never dropped silently: a list whose every
    /// item is rejected is still a success of its level, with no ops and
    /// these rejections.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rejected_items: Vec<RejectedItem>,
    /// Why each earlier level failed, in order.
    pub failures: Vec<LevelFailure>,
}

/// An op of the model's list that was refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RejectedItem {
    /// Its position in the list as the model wrote it, **1-based** (a
    /// single op object is item 1). With several tagged blocks, the
    /// position in its own block's list.
    pub index: usize,
    /// Its action as the model wrote it, when it wrote one as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// Its `before_text` (or a synonym), when it wrote one as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_text: Option<String>,
    /// Why, naming the field and what was found, e.g. `after_text must be
    /// a string, found the number 12345`.
    pub reason: String,
}

/// Ops found by one level.
pub(crate) struct Found {
    pub ops: Vec<RawEditOp>,
    pub skipped: usize,
    pub rejected: Vec<RejectedItem>,
    pub no_changes: bool,
}

impl Found {
    pub(crate) fn ops(ops: Vec<RawEditOp>, skipped: usize) -> Self {
        Found {
            ops,
            skipped,
            rejected: Vec::new(),
            no_changes: false,
        }
    }
}

/// One ladder level: accepts the normalized text or says why not.
type LevelFn<'a> = dyn Fn(&str) -> Result<Found, String> + 'a;

/// Runs the ladder on raw model output. Never panics; always returns an
/// outcome.
pub fn extract_edit_ops(raw: &str) -> LadderOutcome {
    let text = normalize_text(raw);
    if text.is_empty() {
        return LadderOutcome {
            method: ExtractionMethod::EmptyResponse,
            ops: Vec::new(),
            no_changes: false,
            skipped_items: 0,
            rejected_items: Vec::new(),
            failures: Vec::new(),
        };
    }
    let tagged = tagged::has_tags(&text);
    let levels: [(ExtractionMethod, &LevelFn); 6] = [
        (ExtractionMethod::JsonStrict, &strict::extract),
        (ExtractionMethod::JsonRelaxed, &|t| {
            relaxed::extract(t, !tagged)
        }),
        (ExtractionMethod::Yaml, &|t| {
            if tagged {
                Err("payload is tagged; deferring to tagged_payload".to_string())
            } else {
                yaml::extract(t)
            }
        }),
        (ExtractionMethod::TaggedPayload, &tagged::extract),
        (ExtractionMethod::PlaintextRegex, &plaintext::extract),
        (ExtractionMethod::FreeformSalvage, &salvage::extract),
    ];
    let mut failures = Vec::new();
    for (method, level) in levels {
        match level(&text) {
            Ok(found) => {
                return LadderOutcome {
                    method,
                    ops: found.ops,
                    no_changes: found.no_changes,
                    skipped_items: found.skipped,
                    rejected_items: found.rejected,
                    failures,
                }
            }
            Err(reason) => failures.push(LevelFailure { method, reason }),
        }
    }
    LadderOutcome {
        method: ExtractionMethod::Failed,
        ops: Vec::new(),
        no_changes: false,
        skipped_items: 0,
        rejected_items: Vec::new(),
        failures,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn method(raw: &str) -> ExtractionMethod {
        extract_edit_ops(raw).method
    }

    #[test]
    fn each_level_is_reached_by_its_format() {
        assert_eq!(
            method(r#"[{"action":"replace","lines":"1-1","before":"a","after":"b"}]"#),
            ExtractionMethod::JsonStrict
        );
        assert_eq!(
            method("```json\n{\"ops\": [{\"action\": \"delete\", \"line\": 4}]}\n```"),
            ExtractionMethod::JsonStrict
        );
        assert_eq!(
            method("[{'action': 'replace', 'lines': '2-3', 'after': 'x',},]"),
            ExtractionMethod::JsonRelaxed
        );
        assert_eq!(
            method("- action: replace\n  lines: 5-6\n  before: teh\n  after: the\n"),
            ExtractionMethod::Yaml
        );
        assert_eq!(
            method("My edits:\nBEGIN_EDIT_OPS\n[{\"action\":\"flag_only\",\"line\":2,\"rationale\":\"vague\"}]\nEND_EDIT_OPS\nThanks"),
            ExtractionMethod::TaggedPayload
        );
        assert_eq!(
            method("[RVW] action=replace / lines=3-4 / before=\"colour\" / after=\"color\""),
            ExtractionMethod::PlaintextRegex
        );
        assert_eq!(
            method("The second paragraph contradicts the introduction."),
            ExtractionMethod::FreeformSalvage
        );
    }

    #[test]
    fn empty_and_letterless_outputs() {
        assert_eq!(method("  \r\n "), ExtractionMethod::EmptyResponse);
        let out = extract_edit_ops("}}} ::: 123 {{{");
        assert_eq!(out.method, ExtractionMethod::Failed);
        assert_eq!(out.failures.len(), 6);
    }

    #[test]
    fn no_changes_is_success_with_no_ops() {
        for text in ["No changes needed.", "Aucune modification nécessaire."] {
            let out = extract_edit_ops(text);
            assert_eq!(out.method, ExtractionMethod::FreeformSalvage);
            assert!(out.no_changes, "{text}");
            assert!(out.ops.is_empty());
        }
    }

    #[test]
    fn empty_list_is_a_strict_success() {
        let out = extract_edit_ops("[]");
        assert_eq!(out.method, ExtractionMethod::JsonStrict);
        assert!(out.ops.is_empty());
    }

    #[test]
    fn wrongly_typed_ops_are_listed_with_their_reason() {
        let out = extract_edit_ops(
            r#"[{"action":"replace","line":3,"after_text":12345},{"action":"delete","line":5}]"#,
        );
        assert_eq!(out.method, ExtractionMethod::JsonStrict);
        assert_eq!(out.ops.len(), 1);
        assert_eq!(out.ops[0].action, EditAction::Delete);
        assert_eq!(out.skipped_items, 0);
        assert_eq!(
            out.rejected_items,
            [RejectedItem {
                index: 1,
                action: Some("replace".to_owned()),
                before_text: None,
                reason: "after_text must be a string, found the number 12345".to_owned(),
            }]
        );
        // Every op rejected: the level still succeeds (no salvage of the
        // JSON as prose), with no ops, and it is not "no changes".
        let out = extract_edit_ops(
            "BEGIN_EDIT_OPS\n[{\"action\":\"delete\",\"line_start\":[3]}]\nEND_EDIT_OPS",
        );
        assert_eq!(out.method, ExtractionMethod::TaggedPayload);
        assert!(out.ops.is_empty() && !out.no_changes);
        assert_eq!(
            out.rejected_items[0].reason,
            "line_start must be a line number, found the list [3]"
        );
        // YAML types its plain scalars: `after: 12345` is a number too.
        let out = extract_edit_ops("- action: replace\n  line: 2\n  after: 12345\n");
        assert_eq!(out.method, ExtractionMethod::Yaml);
        assert_eq!(out.rejected_items.len(), 1);
    }

    #[test]
    fn outcomes_without_rejections_read_and_write_as_before() {
        let old = r#"{"method":"json_strict","ops":[],"no_changes":false,"skipped_items":0,"failures":[]}"#;
        let outcome: LadderOutcome = serde_json::from_str(old).expect("an old outcome reads");
        assert!(outcome.rejected_items.is_empty());
        assert_eq!(serde_json::to_string(&outcome).expect("writes"), old);
    }

    #[test]
    fn failures_record_every_earlier_level() {
        let out = extract_edit_ops("[RVW] action=delete / lines=9");
        assert_eq!(out.method, ExtractionMethod::PlaintextRegex);
        assert_eq!(out.failures.len(), 4);
        assert_eq!(out.ops[0].action, EditAction::Delete);
    }
}
