//! What the editor asks about a document: code actions (fixes, fix all,
//! a word added, a change reverted), hovers and code lenses.

use super::check::{cached_checker, check_text};
use super::{overlaps, ReviewedDoc, Server};
use crate::convert::{diagnostic, disable_edit, fix_edits, span_text, suggestion_title};
use crate::review::{self, Placement};
use crate::transport::codes;
use crate::words::{self, WordsFile};
use koas_md_scan::fix::fix_until_stable;
use koas_md_scan::Budget;
use koas_review_schema::findings::{Finding, FindingKind};
use lsp_types::{
    CodeAction, CodeActionKind, CodeActionParams, CodeLens, CodeLensParams, Command, Hover,
    HoverContents, HoverParams, MarkupContent, MarkupKind, Position, Range, TextEdit,
    WorkspaceEdit,
};
use serde_json::{json, Value};
use std::io::Write;
use std::path::PathBuf;

impl<W: Write> Server<W> {
    /// The findings of a document as it is now (checked again when the
    /// stored ones are of an older revision).
    pub(super) fn current_findings(&mut self, uri: &str) -> Option<Vec<Finding>> {
        let root = self.root_for(self.docs.get(uri).and_then(|d| d.path.as_deref()));
        let doc = self.docs.get_mut(uri)?;
        if let Some((revision, findings)) = &doc.findings {
            if *revision == doc.revision {
                return Some(findings.clone());
            }
        }
        // On the main loop: bounded by the same budget as the pool's checks.
        let limits = Budget::unlimited().with_limit(self.settings.check_budget);
        let checker = cached_checker(&self.checkers, doc.path.as_deref(), root.as_deref()).ok()?;
        let findings = check_text(
            &checker,
            doc.text.as_str(),
            doc.path.as_deref(),
            root.as_deref(),
            &limits,
        )
        .ok()?
        .findings;
        doc.findings = Some((doc.revision, findings.clone()));
        Some(findings)
    }

    /// The text of `uri` with every certain fix applied, round after round
    /// until none is left (each round's check within the check budget), and
    /// how many applied; `None` when none applies. `findings` are those of
    /// its current text.
    pub(super) fn fixed_text(&self, uri: &str, findings: Vec<Finding>) -> Option<(String, usize)> {
        let root = self.root_for(self.docs.get(uri).and_then(|d| d.path.as_deref()));
        let doc = self.docs.get(uri)?;
        let checker = cached_checker(&self.checkers, doc.path.as_deref(), root.as_deref()).ok()?;
        let budget = self.settings.check_budget;
        let stable = fix_until_stable(doc.text.as_str(), findings, |text: &str| {
            let limits = Budget::unlimited().with_limit(budget);
            check_text(
                &checker,
                text,
                doc.path.as_deref(),
                root.as_deref(),
                &limits,
            )
            .map(|out| out.findings)
        })
        .ok()?;
        (stable.applied > 0).then_some((stable.outcome.text, stable.applied))
    }

    pub(super) fn code_actions(&mut self, p: &CodeActionParams) -> Value {
        let uri_text = p.text_document.uri.as_str().to_string();
        let Some(findings) = self.current_findings(&uri_text) else {
            return json!([]);
        };
        let only = p.context.only.clone();
        let wanted = |kind: &CodeActionKind| {
            only.as_ref().map_or(true, |o| {
                o.iter().any(|k| kind.as_str().starts_with(k.as_str()))
            })
        };
        let fix_all = CodeActionKind::new("source.fixAll.koas");
        let fixed = if findings.iter().any(|f| f.fix.is_some())
            && (wanted(&fix_all) || wanted(&CodeActionKind::QUICKFIX))
        {
            self.fixed_text(&uri_text, findings.clone())
        } else {
            None
        };
        let Some(doc) = self.docs.get(&uri_text) else {
            return json!([]);
        };
        let uri = p.text_document.uri.clone();
        let edit = |edits: Vec<TextEdit>| WorkspaceEdit {
            changes: Some(std::collections::HashMap::from([(uri.clone(), edits)])),
            ..WorkspaceEdit::default()
        };
        let mut actions: Vec<CodeAction> = Vec::new();
        // Where "add to the project's words" writes; looked up once, at
        // the first misspelling (it reads the document's `koas.toml`).
        let mut words_file: Option<Option<WordsFile>> = None;
        for f in &findings {
            let range = crate::convert::finding_range(&doc.text, f);
            if !overlaps(range, p.range) {
                continue;
            }
            let diagnostic = diagnostic(&doc.text, &uri, f, &self.settings.docs_base);
            let word = span_text(&doc.text, f).filter(|_| f.kind.is_language());
            if wanted(&CodeActionKind::QUICKFIX) {
                if let Some(word) = word.as_ref().filter(|_| !f.suggestions.is_empty()) {
                    // One quick fix per suggestion, on the word alone; the
                    // certain one (the finding's fix is the first) preferred.
                    for (i, suggestion) in f.suggestions.iter().enumerate() {
                        actions.push(CodeAction {
                            title: suggestion_title(word, suggestion),
                            kind: Some(CodeActionKind::QUICKFIX),
                            diagnostics: Some(vec![diagnostic.clone()]),
                            edit: Some(edit(vec![TextEdit::new(range, suggestion.clone())])),
                            is_preferred: (i == 0 && f.fix.is_some()).then_some(true),
                            ..CodeAction::default()
                        });
                    }
                } else if let (Some(fix), Some(edits)) = (&f.fix, fix_edits(&doc.text, f)) {
                    actions.push(CodeAction {
                        title: format!("koas: {}", fix.description),
                        kind: Some(CodeActionKind::QUICKFIX),
                        diagnostics: Some(vec![diagnostic.clone()]),
                        edit: Some(edit(edits)),
                        is_preferred: Some(true),
                        ..CodeAction::default()
                    });
                }
                if let Some(word) = word
                    .as_deref()
                    .filter(|w| f.kind == FindingKind::Misspelling && words::valid_word(w).is_ok())
                {
                    let target = words_file.get_or_insert_with(|| {
                        let path = doc.path.as_deref()?;
                        let root = words::root_of(path, &self.roots);
                        words::of_document(path, root.map(PathBuf::as_path))
                            .ok()
                            .flatten()
                    });
                    if let Some(target) = target {
                        actions.push(add_word_action(target, word, &uri, &diagnostic));
                    }
                }
                actions.push(CodeAction {
                    title: format!("koas: disable {} on the next line", f.kind_name()),
                    kind: Some(CodeActionKind::QUICKFIX),
                    diagnostics: Some(vec![diagnostic]),
                    edit: Some(edit(vec![disable_edit(&doc.text, f)])),
                    ..CodeAction::default()
                });
            }
        }
        if let Some((text, applied)) = fixed {
            actions.push(CodeAction {
                title: format!(
                    "koas: fix all in file ({applied} certain fix{})",
                    if applied == 1 { "" } else { "es" }
                ),
                kind: Some(fix_all),
                edit: Some(edit(vec![TextEdit::new(doc.text.full_range(), text)])),
                ..CodeAction::default()
            });
        }
        serde_json::to_value(actions).unwrap_or_else(|_| json!([]))
    }

    pub(super) fn review_changes(&self, uri: &str) -> Result<Option<ReviewedDoc>, (i64, String)> {
        let Some(doc) = self.docs.get(uri) else {
            return Ok(None);
        };
        let Some(path) = doc.path.clone() else {
            return Ok(None);
        };
        match review::changes(&path, doc.text.as_str()) {
            Ok(Some((placement, changes))) => Ok(Some((path, placement, changes))),
            Ok(None) => Ok(None),
            Err(e) => Err((codes::INTERNAL_ERROR, format!("{e:#}"))),
        }
    }

    pub(super) fn hover(&self, p: &HoverParams) -> Result<Value, (i64, String)> {
        let uri = p.text_document_position_params.text_document.uri.as_str();
        let line = p.text_document_position_params.position.line as usize;
        let Some((path, placement, changes)) = self.review_changes(uri)? else {
            return Ok(Value::Null);
        };
        let on_line: Vec<&review::PlacedChange> = changes
            .iter()
            .filter(|c| c.first <= line && line <= c.last)
            .collect();
        if on_line.is_empty() {
            return Ok(Value::Null);
        }
        let hover = Hover {
            contents: HoverContents::Markup(MarkupContent {
                kind: MarkupKind::Markdown,
                value: review::hover_markdown(&path, placement, &on_line),
            }),
            range: None,
        };
        Ok(serde_json::to_value(hover).unwrap_or(Value::Null))
    }

    pub(super) fn code_lenses(&self, p: &CodeLensParams) -> Result<Value, (i64, String)> {
        let uri = p.text_document.uri.as_str();
        let Some((_, placement, changes)) = self.review_changes(uri)? else {
            return Ok(json!([]));
        };
        if placement == Placement::Moved {
            return Ok(json!([]));
        }
        let lenses: Vec<CodeLens> = changes
            .iter()
            .filter(|c| !c.flag && placement == Placement::Current)
            .map(|c| CodeLens {
                range: Range::new(
                    Position::new(c.first as u32, 0),
                    Position::new(c.first as u32, 0),
                ),
                command: Some(Command {
                    title: format!("revert {} ({})", c.id, c.kind),
                    command: "koas.revert".into(),
                    arguments: Some(vec![json!(uri), json!(c.id)]),
                }),
                data: None,
            })
            .collect();
        Ok(serde_json::to_value(lenses).unwrap_or_else(|_| json!([])))
    }
}

/// The quick fix that adds `word` to the project's words file `target`
/// (through the `koas.addWord` command, which writes it).
fn add_word_action(
    target: &WordsFile,
    word: &str,
    uri: &lsp_types::Uri,
    diagnostic: &lsp_types::Diagnostic,
) -> CodeAction {
    let title = format!(
        "koas: add “{word}” to the project's words ({})",
        target.rel.display()
    );
    CodeAction {
        title: title.clone(),
        kind: Some(CodeActionKind::QUICKFIX),
        diagnostics: Some(vec![diagnostic.clone()]),
        command: Some(Command {
            title,
            command: words::ADD_WORD.into(),
            arguments: Some(vec![json!(uri.as_str()), json!(word)]),
        }),
        ..CodeAction::default()
    }
}
