//! The patcher (surgical edits) and the section-expander (a section's
//! prose rewritten): their prompts, and their answers turned into edit
//! ops.
//!
//! The model sees the section's prose with each protected block (code,
//! table, math, HTML) replaced by a placeholder `[[KEEP n]]` it must keep
//! in place. The answer is cut at the placeholders; each piece replaces
//! the prose run it stands for, paragraph by paragraph when the number of
//! paragraphs is unchanged. A protected block is therefore never part of
//! an op; an answer that loses, repeats or reorders a placeholder gives
//! no op at all.

use koas_review_schema::refine::{
    FixAction, FixProposal, RefineOps, RefineRouting, SectionTask, TokenUse,
};
use serde::Serialize;
use serde_json::{json, Value};

use crate::sections::{beginning, ending, placeholder, DocSection, Part, Run};
use crate::{count, Ask, RefineModel};

/// What the fixers need.
pub struct FixInput<'a> {
    /// The document.
    pub text: &'a str,
    /// Its sections.
    pub sections: &'a [DocSection],
    /// The routed tasks and batches.
    pub routing: &'a RefineRouting,
    /// The `refine_patch` template (name, text).
    pub patch_template: (&'a str, &'a str),
    /// The `refine_expand` template (name, text).
    pub expand_template: (&'a str, &'a str),
    /// The document's language, for the prompt.
    pub language: &'a str,
    /// Longest answer.
    pub max_tokens: u32,
}

#[derive(Serialize)]
struct IssueValues {
    id: String,
    severity: &'static str,
    criterion: &'static str,
    description: String,
    instructions: String,
    start_quote: String,
    end_quote: String,
}

#[derive(Serialize)]
struct FixValues<'a> {
    language: &'a str,
    document_title: &'a str,
    section_id: &'a str,
    section_title: &'a str,
    section_text: String,
    prev_end: String,
    next_start: String,
    issues: Vec<IssueValues>,
    constraints: &'a [String],
    placeholders: Vec<String>,
    min_words: usize,
    max_words: usize,
    /// The tasks come from a plan a person decided on.
    decided: bool,
}

/// Renders the prompt of `task`.
pub fn fix_prompt(
    input: &FixInput<'_>,
    task: &SectionTask,
    section: &DocSection,
) -> Result<String, koas_review_llm::prompt::RenderError> {
    let at = section.index;
    let working = section.working_text();
    let words = working.split_whitespace().count();
    let values = FixValues {
        language: input.language,
        document_title: crate::judge::document_title(input.sections),
        section_id: &section.id,
        section_title: &section.title,
        section_text: working,
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
        issues: task
            .issues
            .iter()
            .map(|i| IssueValues {
                id: i.id.clone(),
                severity: i.severity.as_str(),
                criterion: i.criterion.as_str(),
                description: i.description.clone(),
                instructions: crate::arbiter::instruction_of(i),
                start_quote: i.start_quote.clone().unwrap_or_default(),
                end_quote: i.end_quote.clone().unwrap_or_default(),
            })
            .collect(),
        constraints: &task.constraints,
        placeholders: (1..=section.kept_count()).map(placeholder).collect(),
        min_words: words * 7 / 10,
        max_words: (words * 3 / 2).max(words + 40),
        decided: input.routing.decided,
    };
    let (name, text) = match task.action {
        FixAction::RegenerateSection => input.expand_template,
        _ => input.patch_template,
    };
    koas_review_llm::prompt::render(name, text, &values)
}

/// The answer without a fence around it, a leading chat line, or a first
/// line repeating the heading.
fn clean_answer(answer: &str, title: &str) -> String {
    let mut text = answer.trim().to_owned();
    if text.starts_with("```") {
        let inner: Vec<&str> = text.lines().skip(1).collect();
        let mut inner = inner.join("\n");
        if let Some(end) = inner.rfind("```") {
            inner.truncate(end);
        }
        text = inner.trim().to_owned();
    }
    let mut lines: Vec<&str> = text.lines().collect();
    while let Some(first) = lines.first() {
        let t = first.trim();
        let bare = t.trim_start_matches('#').trim();
        let chat = t.ends_with(':')
            && ["here", "voici", "sure", "corrected", "revised"]
                .iter()
                .any(|w| t.to_lowercase().starts_with(w));
        if t.is_empty() || chat || (!title.is_empty() && bare == title.trim()) {
            lines.remove(0);
        } else {
            break;
        }
    }
    lines.join("\n").trim().to_owned()
}

/// Paragraphs of a run: (first line, last line, text).
fn paragraphs(run: &Run) -> Vec<(usize, usize, String)> {
    let mut out = Vec::new();
    let mut start = None;
    let mut buf: Vec<&str> = Vec::new();
    for (i, line) in run.text.lines().enumerate() {
        let n = run.line_start + i;
        if line.trim().is_empty() {
            if let Some(s) = start.take() {
                out.push((s, n - 1, buf.join("\n")));
                buf.clear();
            }
        } else {
            start.get_or_insert(n);
            buf.push(line);
        }
    }
    if let Some(s) = start {
        out.push((s, run.line_end, buf.join("\n")));
    }
    out
}

fn split_paragraphs(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut buf: Vec<&str> = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            if !buf.is_empty() {
                out.push(buf.join("\n"));
                buf.clear();
            }
        } else {
            buf.push(line);
        }
    }
    if !buf.is_empty() {
        out.push(buf.join("\n"));
    }
    out
}

/// Turns an answer into edit ops on `section`.
pub fn ops_from_answer(
    section: &DocSection,
    task: &SectionTask,
    answer: &str,
) -> Result<Vec<Value>, String> {
    let text = clean_answer(answer, &section.title);
    if text.is_empty() {
        return Err("empty answer".into());
    }
    let pieces = pieces_of(&text, section.kept_count())?;
    let runs = prose_runs(section);
    if runs.len() != pieces.len() {
        return Err("the answer does not match the section's layout".into());
    }
    let mut ops = Vec::new();
    let rationale = task
        .issues
        .iter()
        .map(|i| {
            format!(
                "{} ({} {}): {}",
                i.id,
                i.severity.as_str(),
                i.criterion,
                crate::arbiter::instruction_of(i)
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    let (kind, severity) = match task.action {
        FixAction::RegenerateSection => ("refine_regenerate", "attention"),
        _ => ("refine_patch", "minor"),
    };
    let mut push = |line_start: usize, line_end: usize, before: &str, after: &str| {
        ops.push(json!({
            "source_id": format!("refine:{}:{}", section.id, line_start),
            "action": "replace",
            "target": {"line_start": line_start, "line_end": line_end},
            "before_text": before,
            "after_text": after,
            "kind": kind,
            "severity": severity,
            "needs_attention": task.action == FixAction::RegenerateSection,
            "rationale": format!("koas refine {} of {}: {rationale}", task.action.as_str(), section.id),
        }));
    };
    for (run, piece) in runs.iter().zip(&pieces) {
        if run.text.is_empty() {
            if !piece.is_empty() {
                return Err("the answer adds text where the section has none".into());
            }
            continue;
        }
        if piece.is_empty() {
            return Err("the answer drops a whole part of the section".into());
        }
        if piece.trim() == run.text.trim() {
            continue;
        }
        let old = paragraphs(run);
        let new = split_paragraphs(piece);
        if old.len() == new.len() {
            for ((a, b, before), after) in old.iter().zip(&new) {
                if before != after {
                    push(*a, *b, before, after);
                }
            }
        } else {
            push(run.line_start, run.line_end, &run.text, piece);
        }
    }
    if ops.is_empty() {
        return Err("the answer changes nothing".into());
    }
    Ok(ops)
}

/// The answer cut at the placeholders, which must all be there, once, in
/// order: the text before each, and after the last.
fn pieces_of(text: &str, kept: usize) -> Result<Vec<String>, String> {
    let mut pieces = Vec::new();
    let mut rest = text;
    for n in 1..=kept {
        let mark = placeholder(n);
        let Some(at) = rest.find(&mark) else {
            return Err(format!("the answer lost the placeholder {mark}"));
        };
        pieces.push(rest[..at].trim().to_owned());
        rest = &rest[at + mark.len()..];
    }
    pieces.push(rest.trim().to_owned());
    if text.contains("[[KEEP") && pieces.iter().any(|p| p.contains("[[KEEP")) {
        return Err("the answer repeats or reorders the placeholders".into());
    }
    Ok(pieces)
}

/// The section's prose runs, one per gap between protected blocks.
fn prose_runs(section: &DocSection) -> Vec<&Run> {
    let mut runs: Vec<&Run> = Vec::new();
    let mut pending: Option<&Run> = None;
    for part in &section.parts {
        match part {
            Part::Prose(r) => pending = Some(r),
            Part::Kept(_) => {
                runs.push(pending.take().unwrap_or(&EMPTY));
            }
        }
    }
    runs.push(pending.unwrap_or(&EMPTY));
    runs
}

/// The section a refinement op names in its rationale (`koas refine
/// SURGICAL_EDIT of S2: …`, as [`ops_from_answer`] writes it): the ledger
/// keeps the rationale, so a change's section is read back from it.
pub fn section_of_rationale(rationale: &str) -> Option<String> {
    let rest = rationale.strip_prefix("koas refine ")?;
    let (_, after) = rest.split_once(" of ")?;
    let (id, _) = after.split_once(':')?;
    Some(id.trim().to_owned())
}

static EMPTY: Run = Run {
    line_start: 0,
    line_end: 0,
    text: String::new(),
};

/// Runs the routed tasks batch by batch and gathers their ops.
pub fn fix_tasks(
    model: &dyn RefineModel,
    input: &FixInput<'_>,
) -> Result<RefineOps, koas_review_llm::prompt::RenderError> {
    let mut out = RefineOps {
        doc_hash: koas_kernel_api::hash::sha256(input.text),
        ..RefineOps::default()
    };
    for (b, batch) in input.routing.batches.iter().enumerate() {
        let mut asks = Vec::new();
        let mut jobs = Vec::new();
        for id in batch {
            let (Some(task), Some(section)) = (
                input.routing.tasks.iter().find(|t| &t.section_id == id),
                input.sections.iter().find(|s| &s.id == id),
            ) else {
                continue;
            };
            let role = match task.action {
                FixAction::RegenerateSection => "expand",
                _ => "patch",
            };
            asks.push(Ask {
                role: role.to_owned(),
                prompt: fix_prompt(input, task, section)?,
                max_tokens: input.max_tokens,
            });
            jobs.push((task, section));
        }
        let answers = model.complete(&asks);
        for ((task, section), answer) in jobs.into_iter().zip(answers) {
            let mut tokens = TokenUse::default();
            count(&mut tokens, &answer);
            out.tokens.add(&tokens);
            let result = match &answer {
                Ok(reply) => ops_from_answer(section, task, &reply.text),
                Err(e) => Err(format!("the model failed: {e}")),
            };
            let (ops, refused) = match result {
                Ok(ops) => (ops, None),
                Err(why) => (Vec::new(), Some(why)),
            };
            out.proposals.push(FixProposal {
                section_id: section.id.clone(),
                action: task.action,
                batch: b,
                ops: ops.len(),
                refused,
                tokens,
            });
            out.ops.extend(ops);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sections::sections_of;
    use koas_review_schema::refine::IssueSeverity;

    const DOC: &str = "# Setup\n\nInstall the tool. It is fast.\n\nRun it daily.\n\n```sh\nkoas check doc.md\n```\n\nThe end.\n";

    fn task(action: FixAction) -> SectionTask {
        SectionTask {
            section_id: "S1".into(),
            section_title: "Setup".into(),
            index: 0,
            action,
            instructions: vec![],
            constraints: vec![],
            priority: IssueSeverity::Minor,
            issues: vec![],
            consistency_check: false,
        }
    }

    #[test]
    fn a_patch_becomes_one_op_per_changed_paragraph() {
        let s = &sections_of(DOC)[0];
        let answer = "```markdown\n# Setup\n\nInstall the tool. It is quick.\n\nRun it daily.\n\n[[KEEP 1]]\n\nThe end.\n```";
        let ops = ops_from_answer(s, &task(FixAction::SurgicalEdit), answer).expect("ops");
        assert_eq!(ops.len(), 1, "{ops:?}");
        assert_eq!(ops[0]["target"]["line_start"], 3);
        assert_eq!(ops[0]["before_text"], "Install the tool. It is fast.");
        assert_eq!(ops[0]["after_text"], "Install the tool. It is quick.");
    }

    #[test]
    fn garbage_gives_no_op() {
        let s = &sections_of(DOC)[0];
        let t = task(FixAction::RegenerateSection);
        assert!(ops_from_answer(s, &t, "").is_err());
        assert!(ops_from_answer(s, &t, "rm -rf / everything is gone").is_err());
        assert!(ops_from_answer(s, &t, "A [[KEEP 1]] B [[KEEP 1]] C").is_err());
        // The code block cannot be touched: it is not in any op.
        let ops = ops_from_answer(s, &t, "New intro.\n\n[[KEEP 1]]\n\nThe end.").expect("ops");
        assert!(ops.iter().all(|o| !o["before_text"]
            .as_str()
            .unwrap_or("")
            .contains("koas check")));
        assert_eq!(ops[0]["target"]["line_end"], 5);
        assert_eq!(ops[0]["needs_attention"], true);
    }
}
