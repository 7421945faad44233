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
    /// Why the judge's previous answer on this section was refused
    /// (empty on the first request): the retry says it, so it is a new
    /// question and not the cached answer again.
    retry_reason: &'a str,
}

/// The document's title: its first section's heading.
pub fn document_title(sections: &[DocSection]) -> &str {
    sections
        .iter()
        .find(|s| !s.title.is_empty())
        .map_or("", |s| s.title.as_str())
}

/// Renders the prompt of `judge` (0-based `n`) for `section`; `retry`:
/// why its previous answer was refused.
pub fn judge_prompt(
    input: &JudgeInput<'_>,
    n: usize,
    section: &DocSection,
    retry: Option<&str>,
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
        retry_reason: retry.unwrap_or(""),
    };
    koas_review_llm::prompt::render(input.template.0, input.template.1, &values)
}

/// A score as the prompt asks for it: a number from 0 to 1 (also as a
/// string), or a percentage written with its `%`. Anything else is refused
/// with the reason: a bare 42 or 2 has no scale a guess could be trusted
/// with (42 → 0.42 and 2 → 0.2 turned nonsense into middling scores).
fn score_of(v: &Value) -> Result<f64, String> {
    let (x, percent) = match v {
        Value::Number(n) => (n.as_f64().ok_or("not a finite number")?, false),
        Value::String(s) => {
            let s = s.trim();
            let (digits, percent) = match s.strip_suffix('%') {
                Some(d) => (d.trim(), true),
                None => (s, false),
            };
            let x: f64 = digits
                .parse()
                .map_err(|_| format!("{s:?} is not a number"))?;
            (x, percent)
        }
        other => return Err(format!("{other} is not a number")),
    };
    let x = if percent { x / 100.0 } else { x };
    if x.is_finite() && (0.0..=1.0).contains(&x) {
        Ok(x)
    } else {
        Err(format!("{v} is outside 0–1"))
    }
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
            if let Some(c) = Criterion::parse(k) {
                let s = score_of(val)
                    .map_err(|why| format!("the score of {} is invalid: {why}", c.as_str()))?;
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

/// Asks every judge about every section and reads the answers; an answer
/// that cannot be used (no JSON, a score outside 0–1) is asked once more,
/// saying why, as soon as it is read, and stays a named failure of that
/// judge on that section when the second answer cannot be used either.
/// The answers are read in the order of the asks whatever the order they
/// arrived in, so the verdicts do not depend on it.
pub fn judge_document(
    model: &dyn RefineModel,
    input: &JudgeInput<'_>,
) -> Result<RefineVerdicts, koas_review_llm::prompt::RenderError> {
    let (asks, keys) = asks_of(input)?;
    let mut verdicts = empty_verdicts(input);
    let mut total = TokenUse::default();
    let mut read = |verdicts: &mut Vec<JudgeVerdict>,
                    n: usize,
                    section_id: &str,
                    answer: Result<crate::Reply, String>| {
        read_answer(&mut verdicts[n], &mut total, n, section_id, answer)
    };
    // Every ask goes out at once (the host keeps its servers' slots busy
    // and queues the rest); an unusable answer is asked again at once.
    let asked = asks.len();
    let mut first: Vec<Option<Result<crate::Reply, String>>> = vec![None; asked];
    let mut second: Vec<Option<Result<crate::Reply, String>>> = vec![None; asked];
    let mut rendered: Option<koas_review_llm::prompt::RenderError> = None;
    let mut done = 0;
    model.complete_each(asks, &mut |i, answer| {
        if first[i].is_some() {
            second[i] = Some(answer);
            return None;
        }
        done += 1;
        model.progress(done, asked);
        let (n, section) = keys[i];
        let why = match &answer {
            Ok(reply) => {
                parse_judge_answer(&input.judges[n], n + 1, &section.id, &reply.text).err()
            }
            Err(_) => None,
        };
        first[i] = Some(answer);
        let why = why?;
        match judge_prompt(input, n, section, Some(&why)) {
            Ok(prompt) => Some(Ask {
                role: input.judges[n].clone(),
                prompt,
                max_tokens: input.max_tokens,
            }),
            Err(e) => {
                rendered.get_or_insert(e);
                None
            }
        }
    });
    if let Some(e) = rendered {
        return Err(e);
    }
    // Read as a batch then its retries would have been: first answers in
    // the asks' order, then the second answers.
    let mut retries = Vec::new();
    for (i, answer) in first.into_iter().enumerate() {
        let (n, section) = keys[i];
        let answer = answer.unwrap_or_else(|| Err("the model service gave no answer".to_owned()));
        if let Some(why) = read(&mut verdicts, n, &section.id, answer) {
            retries.push((i, why));
        }
    }
    for (i, first) in retries {
        let (n, section) = keys[i];
        let answer = second[i]
            .take()
            .unwrap_or_else(|| Err("the model service gave no answer".to_owned()));
        if let Some(why) = read(&mut verdicts, n, &section.id, answer) {
            verdicts[n].unreadable.push((
                section.id.clone(),
                format!("asked twice: {first}; then: {why}"),
            ));
        }
    }
    Ok(RefineVerdicts {
        doc_hash: koas_kernel_api::hash::sha256(input.text),
        verdicts,
        skipped: None,
        tokens: total,
    })
}

/// Each ask's judge (its index) and section.
type AskKeys<'i> = Vec<(usize, &'i DocSection)>;

/// Every judge's ask about every section, with its (judge, section).
fn asks_of<'i>(
    input: &JudgeInput<'i>,
) -> Result<(Vec<Ask>, AskKeys<'i>), koas_review_llm::prompt::RenderError> {
    let mut asks = Vec::new();
    let mut keys = Vec::new();
    for (n, judge) in input.judges.iter().enumerate() {
        for section in input.sections {
            asks.push(Ask {
                role: judge.clone(),
                prompt: judge_prompt(input, n, section, None)?,
                max_tokens: input.max_tokens,
            });
            keys.push((n, section));
        }
    }
    Ok((asks, keys))
}

/// Each judge's verdict before any answer is read.
fn empty_verdicts(input: &JudgeInput<'_>) -> Vec<JudgeVerdict> {
    input
        .judges
        .iter()
        .map(|j| JudgeVerdict {
            judge: j.clone(),
            sections: Vec::new(),
            issues: Vec::new(),
            unreadable: Vec::new(),
            tokens: TokenUse::default(),
        })
        .collect()
}

/// Reads judge `n`'s answer about a section into its verdict `v`, and
/// counts its tokens in `v` and `total`. `Some` with why when the answer
/// cannot be used.
fn read_answer(
    v: &mut JudgeVerdict,
    total: &mut TokenUse,
    n: usize,
    section_id: &str,
    answer: Result<crate::Reply, String>,
) -> Option<String> {
    count(&mut v.tokens, &answer);
    count(total, &answer);
    match answer {
        Ok(reply) => match parse_judge_answer(&v.judge, n + 1, section_id, &reply.text) {
            Ok((scores, issues)) => {
                v.sections.push(scores);
                v.issues.extend(issues);
                None
            }
            Err(why) => Some(why),
        },
        // The model call itself failed: the model layer already
        // retried what was worth retrying.
        Err(e) => {
            v.unreadable.push((section_id.to_owned(), e));
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_whatever_the_names() {
        let answer = r#"Here you go: {"scores": {"factual_accuracy": 0.7, "clarity": "0.9", "tone": "85%", "bogus": 1},
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

    #[test]
    fn regression_a_score_outside_0_1_is_refused_not_rescaled() {
        for bad in ["42", "2", "-0.1", "1.5", "\"150%\"", "\"high\"", "null"] {
            let answer = format!(r#"{{"scores": {{"clarity": {bad}, "tone": 0.5}}}}"#);
            let err = parse_judge_answer("j", 1, "S2", &answer).expect_err(bad);
            assert!(err.contains("clarity"), "{bad}: {err}");
        }
        for (good, x) in [("0", 0.0), ("1", 1.0), ("0.25", 0.25), ("\"40%\"", 0.4)] {
            let answer = format!(r#"{{"scores": {{"clarity": {good}}}}}"#);
            let (scores, _) = parse_judge_answer("j", 1, "S2", &answer).expect(good);
            assert_eq!(scores.scores.get(&Criterion::Clarity), Some(&x), "{good}");
        }
    }

    /// Answers each prompt from a script by its number of previous asks.
    struct Scripted {
        answers: Vec<&'static str>,
        asked: std::sync::Mutex<Vec<String>>,
    }

    impl RefineModel for Scripted {
        fn complete(&self, asks: &[Ask]) -> Vec<Result<crate::Reply, String>> {
            let mut asked = self.asked.lock().expect("lock");
            asks.iter()
                .map(|a| {
                    asked.push(a.prompt.clone());
                    let text = self.answers[(asked.len() - 1).min(self.answers.len() - 1)];
                    Ok(crate::Reply {
                        text: text.to_owned(),
                        ..Default::default()
                    })
                })
                .collect()
        }
    }

    /// The project's judge prompt.
    fn judge_template() -> String {
        std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../prompts/refine_judge.tera"),
        )
        .expect("template")
    }

    fn judge_once(answers: Vec<&'static str>) -> (RefineVerdicts, Vec<String>) {
        let text = "# Title\n\nOne section of text.\n";
        let sections = crate::sections::sections_of(text);
        let template = judge_template();
        let judges = vec!["judge".to_owned()];
        let findings = BTreeMap::new();
        let input = JudgeInput {
            text,
            sections: &sections,
            judges: &judges,
            findings: &findings,
            template: ("refine_judge", &template),
            language: "en",
            max_tokens: 100,
        };
        let model = Scripted {
            answers,
            asked: std::sync::Mutex::new(Vec::new()),
        };
        let verdicts = judge_document(&model, &input).expect("judge");
        let asked = model.asked.into_inner().expect("lock");
        (verdicts, asked)
    }

    #[test]
    fn an_out_of_range_score_is_asked_again_saying_why() {
        let (v, asked) = judge_once(vec![
            r#"{"scores": {"clarity": 42}}"#,
            r#"{"scores": {"clarity": 0.4}}"#,
        ]);
        assert_eq!(asked.len(), 2, "asked once more");
        assert!(!asked[0].contains("could not be used"));
        assert!(
            asked[1].contains("the score of clarity is invalid: 42 is outside 0–1"),
            "{}",
            asked[1]
        );
        let judge = &v.verdicts[0];
        assert!(judge.unreadable.is_empty(), "{:?}", judge.unreadable);
        assert_eq!(
            judge.sections[0].scores.get(&Criterion::Clarity),
            Some(&0.4)
        );
        assert_eq!(judge.tokens.calls, 2);
    }

    #[test]
    fn an_answer_invalid_twice_is_a_named_failure_of_that_judge() {
        let (v, asked) = judge_once(vec![
            r#"{"scores": {"clarity": 2}}"#,
            r#"{"scores": {"tone": 7}}"#,
        ]);
        assert_eq!(asked.len(), 2, "asked twice, not more");
        let judge = &v.verdicts[0];
        assert!(judge.sections.is_empty());
        assert_eq!(judge.unreadable.len(), 1);
        let (section, why) = &judge.unreadable[0];
        assert_eq!(section, &v.verdicts[0].unreadable[0].0);
        assert!(why.starts_with("asked twice: the score of clarity is invalid: 2 is outside 0–1; then: the score of tone is invalid: 7"), "{why}");
    }

    /// Answers like a streaming host, last asked first: an answer is
    /// handed over while the asks after it are still out, and a follow-up
    /// is asked at once. The text comes from `answer(prompt, nth ask of
    /// that prompt)`.
    struct Streaming {
        answer: fn(&str, usize) -> String,
        /// `ask N` and `answer N` (N: the ask's index), in order.
        events: std::sync::Mutex<Vec<String>>,
    }

    impl RefineModel for Streaming {
        fn complete(&self, _asks: &[Ask]) -> Vec<Result<crate::Reply, String>> {
            unreachable!("a streaming host answers each ask")
        }

        fn complete_each(&self, asks: Vec<Ask>, on_answer: &mut crate::OnAnswer<'_>) {
            let mut out: Vec<(usize, Ask, usize)> = asks
                .into_iter()
                .enumerate()
                .map(|(i, a)| (i, a, 0))
                .collect();
            let log = |e: String| self.events.lock().expect("lock").push(e);
            for (i, _, _) in &out {
                log(format!("ask {i}"));
            }
            while let Some((i, ask, nth)) = out.pop() {
                log(format!("answer {i}"));
                let text = (self.answer)(&ask.prompt, nth);
                let reply = crate::Reply {
                    text,
                    ..Default::default()
                };
                if let Some(again) = on_answer(i, Ok(reply)) {
                    log(format!("ask {i}"));
                    out.push((i, again, nth + 1));
                }
            }
        }
    }

    #[test]
    fn a_judge_answer_is_asked_again_at_once_and_the_verdicts_ignore_the_order() {
        let text = "# Title\n\nOne.\n\n## Two\n\nTwo.\n\n## Three\n\nThree.\n";
        let sections = crate::sections::sections_of(text);
        assert_eq!(sections.len(), 3);
        let template = judge_template();
        let judges = vec!["a".to_owned(), "b".to_owned()];
        let findings = BTreeMap::new();
        let input = JudgeInput {
            text,
            sections: &sections,
            judges: &judges,
            findings: &findings,
            template: ("refine_judge", &template),
            language: "en",
            max_tokens: 100,
        };
        // Section "Two" gets prose first, then a verdict; the others a
        // verdict at once.
        fn answer(prompt: &str, nth: usize) -> String {
            // The section judged (the prompt shows the others as context).
            let judged = prompt.split("\nSECTION ").nth(1).unwrap_or("");
            if judged.contains("Two.") && nth == 0 {
                return "I think it reads well.".to_owned();
            }
            let score = if judged.contains("Three.") { 0.5 } else { 0.9 };
            format!(r#"{{"scores": {{"clarity": {score}, "tone": 0.8}}, "issues": []}}"#)
        }
        let streaming = Streaming {
            answer,
            events: std::sync::Mutex::new(Vec::new()),
        };
        let streamed = judge_document(&streaming, &input).expect("judged");
        let events = streaming.events.lock().expect("lock").clone();
        // Six asks out; judge b's "Two" (ask 4) is asked again right after
        // its answer, before the answers to asks 0–3 are in.
        assert_eq!(
            events[..7],
            ["ask 0", "ask 1", "ask 2", "ask 3", "ask 4", "ask 5", "answer 5"]
        );
        assert_eq!(events[7..10], ["answer 4", "ask 4", "answer 4"]);
        // Both judges asked twice about "Two": 8 asks, 8 answers.
        assert_eq!(events.len(), 16);
        // The same verdicts as a host that answers a batch, then its
        // retries.
        struct Batch;
        impl RefineModel for Batch {
            fn complete(&self, asks: &[Ask]) -> Vec<Result<crate::Reply, String>> {
                asks.iter()
                    .map(|a| {
                        let nth = usize::from(
                            a.prompt.contains("could not be used")
                                || a.prompt.contains("previous answer"),
                        );
                        Ok(crate::Reply {
                            text: answer(&a.prompt, nth),
                            ..Default::default()
                        })
                    })
                    .collect()
            }
        }
        let batched = judge_document(&Batch, &input).expect("judged");
        assert_eq!(streamed, batched);
        for v in &streamed.verdicts {
            assert_eq!(v.sections.len(), 3, "{v:?}");
            assert!(v.unreadable.is_empty(), "{v:?}");
            let ids: Vec<&str> = v.sections.iter().map(|s| s.section_id.as_str()).collect();
            assert_eq!(
                ids,
                [
                    sections[0].id.as_str(),
                    sections[2].id.as_str(),
                    sections[1].id.as_str()
                ]
            );
        }
    }
}
