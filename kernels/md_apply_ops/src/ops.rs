//! Where ops come from: an ops file (`ops`, from `--ops`) and, later, the
//! LLM planner's `edit_plan`. Both are optional; ops from the file come
//! first. Each op stays raw JSON so that a bad op is rejected on its own.

use koas_edit::edit_op::parse_ops_file;
use koas_kernel_api::{Inputs, KernelError};
use koas_review_schema::apply::OpOrigin;
use koas_review_schema::findings::FindingsArtifact;
use koas_review_schema::names;
use serde_json::Value;

/// The ops and a description of where they came from.
pub struct GatheredOps {
    /// The ops, in order.
    pub ops: Vec<Value>,
    /// Who proposed each op: the ops file is a person's, the edit plan a
    /// model's.
    pub origins: Vec<OpOrigin>,
    /// `ops.json: 12 ops`, … (for the summary).
    pub sources: Vec<String>,
}

/// Reads one ops artifact: a source file holding JSON, a JSON string, an
/// array of ops, or an object with an `ops` array.
fn read(value: &Value, artifact: &str) -> Result<(Vec<Value>, String), KernelError> {
    let (text, label) = match value {
        Value::String(text) => (text.clone(), artifact.to_owned()),
        Value::Object(map) if map.contains_key("sha256") && map.contains_key("path") => {
            let path = map.get("path").and_then(Value::as_str).unwrap_or(artifact);
            match map.get("text").and_then(Value::as_str) {
                Some(text) => (text.to_owned(), path.to_owned()),
                None => {
                    return Err(KernelError::invalid_input(format!(
                        "ops file {path}: not valid UTF-8 text"
                    )))
                }
            }
        }
        other => (other.to_string(), artifact.to_owned()),
    };
    let ops = parse_ops_file(&text)
        .map_err(|e| KernelError::invalid_input(format!("ops file {label}: {e}")))?;
    Ok((ops, label))
}

/// The certain fixes of the Stage 2 findings (`koas check --fix`), as
/// one op per edited line: a replace of the line, or its deletion. A
/// language fix is recorded under the change kind a writer knows
/// (`typo`, `grammar`, `spacing`), the others under their finding kind.
/// Fixes are whole-line edits: two on one line ("Teh gateway explians")
/// would overlap and the second be rejected, so replacements of the same
/// line that change separate parts of it become one op.
fn check_fix_ops(inputs: &Inputs) -> Result<Vec<Value>, KernelError> {
    let mut ops: Vec<Value> = Vec::new();
    // Per line: the op replacing it and the parts of the line it changes.
    let mut by_line: std::collections::HashMap<u32, (usize, Vec<Region>)> =
        std::collections::HashMap::new();
    for artifact in [
        names::ISSUES,
        names::NUMBERING_FINDINGS,
        names::LANGUAGE_FINDINGS,
    ] {
        let Some(findings) = inputs.parse_optional::<FindingsArtifact>(artifact)? else {
            continue;
        };
        for finding in findings.findings {
            let Some(fix) = &finding.fix else { continue };
            for edit in &fix.edits {
                let line = edit.line;
                let rationale = format!("{} ({})", fix.description, finding.message);
                if let (Some(after), Some((at, regions))) = (&edit.after, by_line.get_mut(&line)) {
                    let op = &mut ops[*at];
                    let region = Region::of(&edit.before, after);
                    if op["before_text"].as_str() == Some(edit.before.as_str())
                        && regions.iter().all(|r| r.apart(&region))
                    {
                        regions.push(region);
                        op["after_text"] = Value::from(Region::apply(&edit.before, regions));
                        let joined = format!(
                            "{}; {rationale}",
                            op["rationale"].as_str().unwrap_or_default()
                        );
                        op["rationale"] = Value::from(joined);
                        continue;
                    }
                }
                let mut op = serde_json::json!({
                    "target": {"line_start": line, "line_end": line},
                    "before_text": edit.before,
                    "kind": finding.kind.change_kind(),
                    "severity": "minor",
                    "rationale": rationale,
                });
                match &edit.after {
                    Some(after) => {
                        op["action"] = Value::from("replace");
                        op["after_text"] = Value::from(after.as_str());
                        by_line
                            .entry(line)
                            .or_insert_with(|| (ops.len(), vec![Region::of(&edit.before, after)]));
                    }
                    None => op["action"] = Value::from("delete"),
                }
                ops.push(op);
            }
        }
    }
    Ok(ops)
}

/// The lines an op names (`target.line_start`..`line_end`, or `line`),
/// when it names them.
fn target_lines(op: &Value) -> Option<(u64, u64)> {
    let target = op.get("target");
    let start = target
        .and_then(|t| t.get("line_start"))
        .or_else(|| op.get("line"))
        .and_then(Value::as_u64)?;
    let end = target
        .and_then(|t| t.get("line_end"))
        .and_then(Value::as_u64)
        .unwrap_or(start);
    Some((start, end.max(start)))
}

/// The part of a line a replacement changes: bytes `start..end` of the
/// line become `with`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Region {
    start: usize,
    end: usize,
    with: String,
}

impl Region {
    /// The smallest region turning `before` into `after` (their common
    /// start and end kept).
    fn of(before: &str, after: &str) -> Region {
        let start: usize = before
            .chars()
            .zip(after.chars())
            .take_while(|(a, b)| a == b)
            .map(|(a, _)| a.len_utf8())
            .sum();
        let tail: usize = before[start..]
            .chars()
            .rev()
            .zip(after[start..].chars().rev())
            .take_while(|(a, b)| a == b)
            .map(|(a, _)| a.len_utf8())
            .sum();
        Region {
            start,
            end: before.len() - tail,
            with: after[start..after.len() - tail].to_owned(),
        }
    }

    /// `true` when the two regions change separate parts of the line
    /// (touching ones are not: which goes first would be a guess).
    fn apart(&self, other: &Region) -> bool {
        self.end < other.start || other.end < self.start
    }

    /// `before` with every region (all apart) replaced.
    fn apply(before: &str, regions: &[Region]) -> String {
        let mut sorted: Vec<&Region> = regions.iter().collect();
        sorted.sort_by_key(|r| r.start);
        let mut out = String::with_capacity(before.len());
        let mut at = 0;
        for r in sorted {
            out.push_str(&before[at..r.start]);
            out.push_str(&r.with);
            at = r.end;
        }
        out.push_str(&before[at..]);
        out
    }
}

/// Gathers the ops of `ops`, the certain fixes of the findings (when
/// `check_fixes`), and `edit_plan`, in that order: a certain fix goes
/// before a model's proposal on the same line.
pub fn gather(inputs: &Inputs, check_fixes: bool) -> Result<GatheredOps, KernelError> {
    let mut ops = Vec::new();
    let mut origins = Vec::new();
    let mut sources = Vec::new();
    if let Some(value) = inputs.get(names::OPS).filter(|v| !v.is_null()) {
        let (found, label) = read(value, names::OPS)?;
        sources.push(format!("{label}: {} ops", found.len()));
        origins.extend(std::iter::repeat(OpOrigin::Person).take(found.len()));
        ops.extend(found);
    }
    if check_fixes {
        // A line an op of the file targets is that person's to change:
        // the checks' fix of it would overlap and be rejected.
        let taken: Vec<(u64, u64)> = ops.iter().filter_map(target_lines).collect();
        let found: Vec<Value> = check_fix_ops(inputs)?
            .into_iter()
            .filter(|op| {
                target_lines(op)
                    .map_or(true, |(a, b)| !taken.iter().any(|&(c, d)| a <= d && c <= b))
            })
            .collect();
        if !found.is_empty() {
            sources.push(format!("certain fixes of the checks: {} ops", found.len()));
            // Deterministic and certain: a tool's edit, held to a person's rules.
            origins.extend(std::iter::repeat(OpOrigin::Person).take(found.len()));
            ops.extend(found);
        }
    }
    if let Some(value) = inputs.get(names::EDIT_PLAN).filter(|v| !v.is_null()) {
        let (found, label) = read(value, names::EDIT_PLAN)?;
        sources.push(format!("{label}: {} ops", found.len()));
        origins.extend(std::iter::repeat(OpOrigin::Model).take(found.len()));
        ops.extend(found);
    }
    // Targeted refinement's fixes are a model's too.
    if let Some(value) = inputs.get(names::REFINE_OPS).filter(|v| !v.is_null()) {
        let (found, label) = read(value, names::REFINE_OPS)?;
        sources.push(format!("{label}: {} ops", found.len()));
        origins.extend(std::iter::repeat(OpOrigin::Model).take(found.len()));
        ops.extend(found);
    }
    Ok(GatheredOps {
        ops,
        origins,
        sources,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn gather_all(inputs: &Inputs) -> Result<GatheredOps, KernelError> {
        gather(inputs, true)
    }

    fn inputs(v: Value) -> Inputs {
        Inputs::from(
            serde_json::from_value::<std::collections::BTreeMap<String, serde_json::Value>>(v)
                .unwrap(),
        )
    }

    #[test]
    fn reads_files_strings_arrays_and_plans() {
        let file = json!({"path": "ops.json", "len": 2, "sha256": "sha256:00",
                          "text": "[{\"action\": \"flag_only\"}]"});
        let got = gather_all(&inputs(
            json!({"ops": file, "edit_plan": {"ops": [{}, {}]}}),
        ))
        .unwrap();
        assert_eq!(got.ops.len(), 3);
        assert_eq!(got.sources, vec!["ops.json: 1 ops", "edit_plan: 2 ops"]);
        assert_eq!(
            got.origins,
            vec![OpOrigin::Person, OpOrigin::Model, OpOrigin::Model]
        );
        let got = gather_all(&inputs(json!({"ops": "[]"}))).unwrap();
        assert!(got.ops.is_empty());
        assert!(gather_all(&inputs(json!({}))).unwrap().sources.is_empty());
    }

    #[test]
    fn a_bad_file_names_the_file() {
        let file = json!({"path": "my/ops.json", "len": 2, "sha256": "sha256:00", "text": "{oops"});
        let err = gather_all(&inputs(json!({"ops": file}))).err().unwrap();
        assert!(err.message.contains("my/ops.json"), "{}", err.message);
        let file =
            json!({"path": "bin.json", "len": 2, "sha256": "sha256:00", "invalid_utf8_at": 1});
        let err = gather_all(&inputs(json!({"ops": file}))).err().unwrap();
        assert!(err.message.contains("bin.json"), "{}", err.message);
        let err = gather_all(&inputs(json!({"ops": {"nothing": 1}})))
            .err()
            .unwrap();
        assert!(err.message.contains("JSON array"), "{}", err.message);
    }

    #[test]
    fn regions_are_the_changed_part_of_a_line() {
        let r = Region::of("a née b", "a nee b");
        assert_eq!((r.start, r.end, r.with.as_str()), (3, 5, "e"));
        let r = Region::of("the the x", "the x");
        assert_eq!(Region::apply("the the x", &[r]), "the x");
        let same = Region::of("abc", "abc");
        assert_eq!(same.start, same.end);
    }

    #[test]
    fn certain_language_fixes_are_recorded_as_typos() {
        use koas_review_schema::findings::{Finding, FindingKind, Fix, FixEdit};
        let finding = |kind: FindingKind, kernel: &str, line: u32, before: &str, after: &str| {
            Finding::new(kind, kernel, line, line, "slip", before).with_fix(Fix {
                description: "fix".into(),
                edits: vec![FixEdit {
                    line,
                    before: before.into(),
                    after: Some(after.into()),
                }],
            })
        };
        let language = FindingsArtifact::new(
            "sha256:00",
            "md_language_check",
            vec![
                finding(
                    FindingKind::Misspelling,
                    "md_language_check",
                    3,
                    "Teh cat",
                    "The cat",
                ),
                finding(
                    FindingKind::RepeatedWord,
                    "md_language_check",
                    4,
                    "a a",
                    "a",
                ),
                finding(
                    FindingKind::Article,
                    "md_language_check",
                    5,
                    "a apple",
                    "an apple",
                ),
                finding(
                    FindingKind::Typography,
                    "md_language_check",
                    6,
                    "oui!",
                    "oui !",
                ),
            ],
        );
        let numbering = FindingsArtifact::new(
            "sha256:00",
            "md_numbering_control",
            vec![finding(
                FindingKind::HeadingLevelSkip,
                "md_numbering_control",
                1,
                "#### A",
                "### A",
            )],
        );
        let all = inputs(json!({
            "language_findings": language,
            "numbering_findings": numbering,
        }));
        let got = gather_all(&all).unwrap();
        let kinds: Vec<&str> = got
            .ops
            .iter()
            .map(|o| o["kind"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            ["heading_level_skip", "typo", "typo", "grammar", "spacing"]
        );
        assert_eq!(got.ops[1]["after_text"], "The cat");
        assert_eq!(got.origins, vec![OpOrigin::Person; 5]);
        // Two fixes of one line, apart: one op making both changes.
        let two = FindingsArtifact::new(
            "sha256:00",
            "md_language_check",
            vec![
                finding(
                    FindingKind::Misspelling,
                    "md_language_check",
                    8,
                    "Teh gate explians it",
                    "The gate explians it",
                ),
                finding(
                    FindingKind::Misspelling,
                    "md_language_check",
                    8,
                    "Teh gate explians it",
                    "Teh gate explains it",
                ),
                // Overlapping the first: left as its own op (rejected).
                finding(
                    FindingKind::Misspelling,
                    "md_language_check",
                    8,
                    "Teh gate explians it",
                    "Tea gate explians it",
                ),
            ],
        );
        let got = gather_all(&inputs(json!({"language_findings": two}))).unwrap();
        assert_eq!(got.ops.len(), 2, "{:#?}", got.ops);
        assert_eq!(got.ops[0]["after_text"], "The gate explains it");
        assert_eq!(got.ops[0]["before_text"], "Teh gate explians it");
        assert!(
            got.ops[0]["rationale"].as_str().unwrap().contains("; "),
            "{}",
            got.ops[0]
        );
        assert_eq!(got.ops[1]["after_text"], "Tea gate explians it");
        // A line the ops file changes is left to it.
        let mine = json!([{"action": "replace", "target": {"line_start": 8},
                           "before_text": "Teh", "after_text": "Le"}]);
        let got = gather_all(&inputs(json!({"ops": mine, "language_findings": language}))).unwrap();
        assert_eq!(got.ops.len(), 5, "{:#?}", got.ops);
        let got = gather_all(&inputs(json!({"ops": [{"action": "replace", "line": 3, "before_text": "Teh", "after_text": "The"}], "language_findings": language})))
            .unwrap();
        assert_eq!(got.ops.len(), 4, "{:#?}", got.ops);
        assert!(got
            .ops
            .iter()
            .skip(1)
            .all(|o| o["target"]["line_start"] != 3));
        // Without the checks' fixes, nothing of theirs.
        assert!(gather(&all, false).unwrap().ops.is_empty());
    }
}
