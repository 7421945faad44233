//! The judges: one request per judge and section, the section shown with
//! the document's outline, its neighbours' edges and the deterministic
//! findings in it; the answer read as scores 0–1 per criterion and
//! targeted issues.

use std::collections::BTreeMap;

use koas_review_schema::refine::{
    Criterion, FixAction, IssueScope, IssueSeverity, JudgeVerdict, RefineVerdicts, SectionScores,
    TargetedIssue, TokenUse,
};
use serde::Serialize;
use serde_json::Value;

use crate::sections::{beginning, doc_lines, ending, DocSection};
use crate::{count, json_object, Ask, RefineModel};

/// What the judges need besides the document.
pub struct JudgeInput<'a> {
    /// The document.
    pub text: &'a str,
    /// Its sections.
    pub sections: &'a [DocSection],
    /// The judges (model roles), 1–3.
    pub judges: &'a [String],
    /// Section ID → findings of the deterministic checks in it.
    pub findings: &'a BTreeMap<String, Vec<String>>,
    /// The `refine_judge` template's name and text.
    pub template: (&'a str, &'a str),
    /// The document's language, for the prompt.
    pub language: &'a str,
    /// Longest answer.
    pub max_tokens: u32,
}

#[derive(Serialize)]
struct JudgeValues<'a> {
    judge: &'a str,
    judge_number: usize,
    judge_count: usize,
    language: &'a str,
    document_title: &'a str,
    outline: Vec<String>,
    section_id: &'a str,
    section_title: &'a str,
    section_text: String,
    prev_end: String,
    next_start: String,
    findings: &'a [String],
    criteria: Vec<&'static str>,
}

/// The document's title: its first section's heading.
pub fn document_title(sections: &[DocSection]) -> &str {
    sections
        .iter()
        .find(|s| !s.title.is_empty())
        .map_or("", |s| s.title.as_str())
}

/// Renders the prompt of `judge` (0-based `n`) for `section`.
pub fn judge_prompt(
    input: &JudgeInput<'_>,
    n: usize,
    section: &DocSection,
) -> Result<String, koas_review_llm::prompt::RenderError> {
    let lines = doc_lines(input.text);
    let at = section.index;
    let values = JudgeValues {
        judge: &input.judges[n],
        judge_number: n + 1,
        judge_count: input.judges.len(),
        language: input.language,
        document_title: document_title(input.sections),
        outline: input
            .sections
            .iter()
            .map(|s| format!("{} {}", s.id, s.title))
            .collect(),
        section_id: &section.id,
        section_title: &section.title,
        section_text: section.body_text(&lines),
        prev_end: at
            .checked_sub(1)
            .and_then(|i| input.sections.get(i))
            .map(|s| ending(s, 3))
            .unwrap_or_default(),
        next_start: input
            .sections
            .get(at + 1)
            .map(|s| beginning(s, 3))
            .unwrap_or_default(),
        findings: input
            .findings
            .get(&section.id)
            .map_or(&[][..], Vec::as_slice),
        criteria: Criterion::ALL.iter().map(|c| c.as_str()).collect(),
    };
    koas_review_llm::prompt::render(input.template.0, input.template.1, &values)
}

/// A score as a model may write it: 0–1, or on a 10- or 100-point scale.
fn score_of(v: &Value) -> Option<f64> {
    let x = match v {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().trim_end_matches('%').parse().ok()?,
        _ => return None,
    };
    let x = if x <= 1.0 {
        x
    } else if x <= 10.0 {
        x / 10.0
    } else if x <= 100.0 {
        x / 100.0
    } else {
        return None;
    };
    (x >= 0.0).then_some(x)
}

fn text_of(v: &Value, keys: &[&str]) -> Option<String> {
    keys.iter()
        .find_map(|k| v.get(*k).and_then(Value::as_str))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// Reads one judge's answer on one section: its scores and issues, or
/// why it could not be read.
pub fn parse_judge_answer(
    judge: &str,
    judge_number: usize,
    section_id: &str,
    answer: &str,
) -> Result<(SectionScores, Vec<TargetedIssue>), String> {
    let v = json_object(answer).ok_or("no JSON object in the answer")?;
    let raw = v.get("scores").unwrap_or(&v);
    let mut scores = BTreeMap::new();
    if let Value::Object(map) = raw {
        for (k, val) in map {
            if let (Some(c), Some(s)) = (Criterion::parse(k), score_of(val)) {
                scores.insert(c, s);
            }
        }
    }
    if scores.is_empty() {
        return Err("no score of a known criterion in the answer".into());
    }
    let mut issues = Vec::new();
    for (i, item) in v
        .get("issues")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let Some(criterion) =
            text_of(item, &["criterion", "category"]).and_then(|c| Criterion::parse(&c))
        else {
            continue;
        };
        let severity = text_of(item, &["severity"])
            .and_then(|s| IssueSeverity::parse(&s))
            .unwrap_or(IssueSeverity::Minor);
        let fix_action = text_of(item, &["fix_action", "action", "fixAction"])
            .and_then(|s| FixAction::parse(&s))
            .unwrap_or(FixAction::SurgicalEdit);
        let scope = match text_of(item, &["scope"]).as_deref() {
            Some("paragraph") => IssueScope::Paragraph,
            Some("global") => IssueScope::Global,
            _ => IssueScope::Section,
        };
        let description = text_of(item, &["description", "problem"]).unwrap_or_default();
        let fix_instructions = text_of(
            item,
            &["fix_instructions", "fixInstructions", "instructions", "fix"],
        )
        .unwrap_or_default();
        if description.is_empty() && fix_instructions.is_empty() {
            continue;
        }
        issues.push(TargetedIssue {
            id: format!("J{judge_number}-{section_id}-{}", i + 1),
            judge: judge.to_owned(),
            section_id: section_id.to_owned(),
            criterion,
            severity,
            fix_action,
            start_quote: text_of(item, &["start_quote", "startQuote"]),
            end_quote: text_of(item, &["end_quote", "endQuote"]),
            scope,
            description,
            fix_instructions,
        });
    }
    Ok((
        SectionScores {
            section_id: section_id.to_owned(),
            scores,
        },
        issues,
    ))
}

/// Asks every judge about every section (one batch) and reads the
/// answers.
pub fn judge_document(
    model: &dyn RefineModel,
    input: &JudgeInput<'_>,
) -> Result<RefineVerdicts, koas_review_llm::prompt::RenderError> {
    let mut asks = Vec::new();
    let mut keys = Vec::new();
    for (n, judge) in input.judges.iter().enumerate() {
        for section in input.sections {
            asks.push(Ask {
                role: judge.clone(),
                prompt: judge_prompt(input, n, section)?,
                max_tokens: input.max_tokens,
            });
            keys.push((n, section.id.clone()));
        }
    }
    let answers = model.complete(&asks);
    let mut verdicts: Vec<JudgeVerdict> = input
        .judges
        .iter()
        .map(|j| JudgeVerdict {
            judge: j.clone(),
            sections: Vec::new(),
            issues: Vec::new(),
            unreadable: Vec::new(),
            tokens: TokenUse::default(),
        })
        .collect();
    let mut total = TokenUse::default();
    for ((n, section_id), answer) in keys.into_iter().zip(answers) {
        let v = &mut verdicts[n];
        count(&mut v.tokens, &answer);
        count(&mut total, &answer);
        match answer {
            Ok(reply) => match parse_judge_answer(&v.judge, n + 1, &section_id, &reply.text) {
                Ok((scores, issues)) => {
                    v.sections.push(scores);
                    v.issues.extend(issues);
                }
                Err(why) => v.unreadable.push((section_id, why)),
            },
            Err(e) => v.unreadable.push((section_id, e)),
        }
    }
    Ok(RefineVerdicts {
        doc_hash: koas_kernel_api::hash::sha256(input.text),
        verdicts,
        skipped: None,
        tokens: total,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_whatever_the_scale_and_names() {
        let answer = r#"Here you go: {"scores": {"factual_accuracy": 7, "clarity": "0.9", "tone": 85, "bogus": 1},
          "issues": [{"criterion": "consistency", "severity": "critical", "fix_action": "regenerate",
                      "start_quote": "ten years", "description": "contradicts S1", "fix_instructions": "Use seven years"},
                     {"criterion": "nonsense", "description": "x"},
                     {"criterion": "clarity"}]}"#;
        let (scores, issues) = parse_judge_answer("j", 1, "S2", answer).expect("read");
        assert_eq!(scores.scores.get(&Criterion::Consistency), Some(&0.7));
        assert_eq!(scores.scores.get(&Criterion::Clarity), Some(&0.9));
        assert_eq!(scores.scores.get(&Criterion::Tone), Some(&0.85));
        assert_eq!(issues.len(), 1);
        assert_eq!(issues[0].id, "J1-S2-1");
        assert_eq!(issues[0].fix_action, FixAction::RegenerateSection);
        assert_eq!(issues[0].start_quote.as_deref(), Some("ten years"));
        assert!(parse_judge_answer("j", 1, "S2", "I think it is fine.").is_err());
        assert!(parse_judge_answer("j", 1, "S2", r#"{"scores": {}}"#).is_err());
    }
}
