//! The review report, `REVIEW_<stem>.md` (`md_review_report_assemble`).
//!
//! Sections: run metadata (date, tool and kernel versions, document
//! hashes); counts; a change table per document section; the full
//! chronological ledger table; the Stage 2 deterministic findings of the
//! current document grouped by section; the findings of the original that
//! the current document no longer has, each with the change that resolved
//! it; and, when given, the rejections of the last run.
//!
//! Sections and findings refer to lines of the *current* document (Stage
//! 1 and 2 run on it); each ledger entry is followed forward through the
//! entries after it to find its section now.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use koas_edit::artifacts::SectionLookup;
use koas_edit::linemap::{EarlierEdits, Region};
use koas_edit::query::{count, severity_word};
use koas_edit::text::escape_markdown_inline;
use koas_review_schema::apply::{ApplyLogRecord, OpStatus};
use koas_review_schema::change_id::{ChangeId, EntryId};
use koas_review_schema::edit_op::Action;
use koas_review_schema::findings::Finding;
use koas_review_schema::ledger::LedgerEntry;
use koas_review_schema::review::{ReportMeta, ReviewModelRun};
use koas_review_schema::stage1::SectionEntry;

/// Everything the report shows.
#[derive(Debug, Clone, Copy)]
pub struct ReportInput<'a> {
    /// Run metadata shown at the top: date, versions, document hashes.
    pub meta: &'a ReportMeta,
    /// Ledger entries, in order.
    pub entries: &'a [LedgerEntry],
    /// Sections of the original document.
    pub sections: &'a [SectionEntry],
    /// Stage 2 findings on the current document.
    pub findings: &'a [Finding],
    /// Stage 2 findings on the original document (empty when it was not
    /// changed): those the current document no longer has are listed as
    /// resolved.
    pub earlier_findings: &'a [Finding],
    /// Apply log of the last run (rejections are listed).
    pub apply_log: &'a [ApplyLogRecord],
    /// What the model did in the last run, when one ran.
    pub model: Option<&'a ReviewModelRun>,
}

/// The name under which a deletion's CAUTION note is counted with the
/// guards.
pub const DELETION_CAUTION: &str = "DELETION_CAUTION";

/// Every guard firing of a run, by name: the content guards
/// (`TOKEN_GUARD`, `LANGUAGE_GUARD`, `STRUCTURE_GUARD`, `MEANING_GUARD`,
/// `REWRITE_GUARD`, `KIND_GUARD`) and the blank-line
/// guard from each op's fixes, applied or rejected alike, and
/// [`DELETION_CAUTION`] for every deletion that was applied or flagged
/// (it always carries a CAUTION note).
pub fn guard_counts(log: &[ApplyLogRecord]) -> BTreeMap<&'static str, usize> {
    let mut counts = BTreeMap::new();
    for record in log {
        for fix in &record.fixes {
            if fix.name().ends_with("_GUARD") {
                *counts.entry(fix.name()).or_default() += 1;
            }
        }
        let kept = matches!(record.status, OpStatus::Applied | OpStatus::Flagged);
        if kept && record.action == Some(Action::Delete) {
            *counts.entry(DELETION_CAUTION).or_default() += 1;
        }
    }
    counts
}

/// What a guard's firing did to the op, for the report.
pub fn guard_effect(name: &str) -> &'static str {
    match name {
        "TOKEN_GUARD" => "a number, URL, link target, code span, quotation or identifier changed: the change needs attention with a WARNING note (refused under --strict)",
        "LANGUAGE_GUARD" => "the new text is in another language than the document: the change became a flag",
        "REWRITE_GUARD" => "a typo or grammar fix that rewrites the text: now a style change needing attention",
        "STRUCTURE_GUARD" => "the Markdown structure changed (a heading, a list item, a table, HTML, emphasis…): the change needs attention with a note naming it; a model's change of the block structure is refused unless its kind declares it (refused under --strict)",
        "MEANING_GUARD" => "a negation, modal, quantifier, comparison or direction word changed: the change needs attention with a note naming it (refused under --strict)",
        "KIND_GUARD" => "a change that does more than its kind says (a typo that swaps a word): its kind was corrected",
        "BLANK_LINE_GUARD" => "a blank target line: the change was moved to its text, or became a flag",
        DELETION_CAUTION => "a deletion: it needs attention and carries a Caution note",
        _ => "a content guard: the change needs attention",
    }
}

/// `## Model (last run)` and `## Guards (last run)`: the guards are shown
/// whenever a model ran or one fired.
fn write_last_run(out: &mut String, model: Option<&ReviewModelRun>, log: &[ApplyLogRecord]) {
    if let Some(m) = model {
        let _ = writeln!(out, "## Model (last run that asked it)\n");
        let _ = writeln!(out, "| Field | Value |\n|---|---|");
        let _ = writeln!(out, "| Backend | {} |", cell(&m.backend));
        for (role, name) in &m.models {
            let _ = writeln!(out, "| Model {} | {} |", code_cell(role), code_cell(name));
        }
        let _ = writeln!(out, "| Requests | {} |", m.requests_phrase());
        let _ = writeln!(out, "| Tokens | {} |", m.tokens);
        if let Some(p) = &m.pyramid {
            let _ = writeln!(out, "| Pyramid | {} |", cell(p));
        }
        if let Some(p) = &m.edit_plan {
            let _ = writeln!(out, "| Edit plan | {} |", cell(p));
        }
        if let Some(reason) = &m.stopped {
            let _ = writeln!(
                out,
                "| Stopped early | {}: {} chunk(s) not reviewed; the next run asks them, not the others |",
                stop_cell(reason),
                m.chunks_not_reviewed
            );
        }
        out.push('\n');
    }
    let guards = guard_counts(log);
    if model.is_none() && guards.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Guards (last run)\n");
    if guards.is_empty() {
        let _ = writeln!(out, "No guard fired.\n");
        return;
    }
    let _ = writeln!(out, "| Guard | Firings | Effect |\n|---|---:|---|");
    for (name, n) in &guards {
        let _ = writeln!(out, "| {name} | {n} | {} |", guard_effect(name));
    }
    out.push('\n');
}

/// `REVIEW_<stem>.md` for a document named `doc_name`.
pub fn report_file_name(doc_name: &str) -> String {
    let stem = std::path::Path::new(doc_name)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| doc_name.to_owned());
    format!("REVIEW_{stem}.md")
}

/// Text for a table cell or a heading: escaped (see
/// [`escape_markdown_inline`]: whatever an op, the ledger or a model wrote
/// is shown, not rendered), on one line.
fn cell(text: &str) -> String {
    escape_markdown_inline(text).replace(['\n', '\r'], " ")
}

/// A finding's kind as the table shows it: a style rule's name (from a
/// project's files: escaped), else the kind's.
fn kind_cell(f: &Finding) -> String {
    match &f.rule {
        Some(rule) => cell(rule),
        None => f.kind.as_str().to_owned(),
    }
}

/// Why the model run stopped: the engine's code (`SESSION_BUDGET_EXHAUSTED`)
/// as it is; anything else, which may carry a server's words, escaped.
fn stop_cell(reason: &str) -> String {
    let code = !reason.is_empty()
        && reason
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    if code {
        reason.to_owned()
    } else {
        cell(reason)
    }
}

/// `text` as a code span in a table cell, shown literally: a code span
/// renders no HTML nor Markdown, so only its end matters. The fence is
/// one backtick longer than the longest run inside (a backtick in a
/// document or model name cannot close it), padded with a space when the
/// text starts or ends with one; `|` is escaped because GFM splits the
/// row into cells before it reads code spans.
fn code_cell(text: &str) -> String {
    let text = text.replace(['\n', '\r'], " ").replace('|', "\\|");
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// The original line an entry's change starts at.
pub fn original_line(entries: &[LedgerEntry], index: usize) -> Option<usize> {
    if index >= entries.len() {
        return None;
    }
    original_lines(&entries[..=index])[index]
}

/// [`original_line`] of every entry, in one pass: each entry is followed
/// back only through the net edits before it (a change and its later
/// revert cancel out), so a long history of reverted cycles costs nothing
/// per entry.
pub fn original_lines(entries: &[LedgerEntry]) -> Vec<Option<usize>> {
    let mut earlier = EarlierEdits::default();
    entries
        .iter()
        .map(|entry| {
            let line = entry.change.map(|change| {
                let region = Region {
                    start: change.at.saturating_sub(1),
                    len: change.removed,
                };
                let back = earlier.map_back_clamped(region);
                if back.len == 0 {
                    back.start.max(1)
                } else {
                    back.start + 1
                }
            });
            if let Some(edit) = koas_edit::linemap::edit_of(entry) {
                earlier.push_back(entry.id, edit);
            }
            line
        })
        .collect()
}

/// The line of the *current* document where each entry's change is now
/// (its inserted lines, followed through the net edits after it; a
/// change later reverted or overwritten is placed where its lines were).
pub fn current_lines(entries: &[LedgerEntry]) -> Vec<Option<usize>> {
    let mut later = koas_edit::linemap::LaterEdits::default();
    let mut out = vec![None; entries.len()];
    for (index, entry) in entries.iter().enumerate().rev() {
        out[index] = entry.change.map(|change| {
            let region = Region {
                start: change.at.saturating_sub(1),
                len: change.added,
            };
            let now = later.map_clamped(region);
            // A deletion is a point between lines: the line before it.
            if now.len == 0 {
                now.start.max(1)
            } else {
                now.start + 1
            }
        });
        if let Some(edit) = koas_edit::linemap::edit_of(entry) {
            later.push_front(entry.id, edit);
        }
    }
    out
}

/// A finding of the original document that the current document no
/// longer has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved<'a> {
    /// The finding, in the original's lines.
    pub finding: &'a Finding,
    /// The first change that edited its lines, if one did (a finding can
    /// also go away because of a change elsewhere, e.g. the other copy of
    /// a duplicate).
    pub by: Option<EntryId>,
}

/// The findings of `earlier` (on the original) that `current` (on the
/// current document) no longer has, with the change that edited their
/// lines. A finding is still there when the current document has one of
/// the same kind and evidence, or of the same kind where its lines now
/// are.
pub fn resolved_findings<'a>(
    entries: &[LedgerEntry],
    earlier: &'a [Finding],
    current: &[Finding],
) -> Vec<Resolved<'a>> {
    use koas_edit::linemap::{cancel_reverted_pairs, map_through, MapMode};
    if earlier.is_empty() {
        return Vec::new();
    }
    let chain: Vec<(EntryId, koas_edit::linemap::LineEdit)> = entries
        .iter()
        .filter_map(|e| koas_edit::linemap::edit_of(e).map(|edit| (e.id, edit)))
        .collect();
    let net = cancel_reverted_pairs(&chain);
    let mut out = Vec::new();
    for finding in earlier {
        let first = (finding.line as usize).max(1);
        let last = (finding.line_end as usize).max(first);
        let mut region = Region {
            start: first - 1,
            len: last - first + 1,
        };
        let mut by = None;
        for (id, edit) in &net {
            match map_through(region, *edit, MapMode::Strict) {
                Ok(next) => region = next,
                Err(()) => {
                    by.get_or_insert(*id);
                    region = map_through(region, *edit, MapMode::Clamp).unwrap_or(region);
                }
            }
        }
        let now = region.start + 1;
        let still = current.iter().any(|f| {
            f.kind == finding.kind
                && (f.evidence == finding.evidence
                    || (f.line as usize <= now + region.len.saturating_sub(1)
                        && now <= f.line_end.max(f.line) as usize))
        });
        if !still {
            out.push(Resolved { finding, by });
        }
    }
    out
}

/// The innermost section containing `line`.
pub fn section_of(sections: &[SectionEntry], line: usize) -> Option<&SectionEntry> {
    sections
        .iter()
        .filter(|s| s.line_start as usize <= line && line <= s.line_end as usize)
        .max_by_key(|s| s.line_start)
}

/// The changes (ledger indices, reverts aside) by the section they are in
/// now (`current`: each entry's line now), sections in document order:
/// the Markdown report's and the HTML page's "Changes by section".
pub(crate) fn changes_by_section<'s>(
    entries: &[LedgerEntry],
    current: &[Option<usize>],
    lookup: &SectionLookup<'s>,
) -> Vec<(Option<&'s SectionEntry>, Vec<usize>)> {
    let mut grouped = Grouped::new();
    for (index, entry) in entries.iter().enumerate() {
        if !entry.is_revert {
            grouped.push(current[index].and_then(|l| lookup.get(l)), index);
        }
    }
    grouped.sorted()
}

/// Groups items by section, in order of first appearance.
pub(crate) struct Grouped<'a, T> {
    groups: Vec<(Option<&'a SectionEntry>, Vec<T>)>,
    index: std::collections::HashMap<Option<&'a str>, usize>,
}

impl<'a, T> Grouped<'a, T> {
    pub(crate) fn new() -> Self {
        Grouped {
            groups: Vec::new(),
            index: std::collections::HashMap::new(),
        }
    }

    pub(crate) fn push(&mut self, section: Option<&'a SectionEntry>, item: T) {
        let key = section.map(|s| s.id.as_str());
        match self.index.get(&key) {
            Some(&i) => self.groups[i].1.push(item),
            None => {
                self.index.insert(key, self.groups.len());
                self.groups.push((section, vec![item]));
            }
        }
    }

    /// The groups, by section start (entries outside any section first).
    pub(crate) fn sorted(mut self) -> Vec<(Option<&'a SectionEntry>, Vec<T>)> {
        self.groups
            .sort_by_key(|(s, _)| s.map_or(0, |s| s.line_start));
        self.groups
    }
}

/// Status cells of the entries: reverted changes name their revert.
fn statuses(entries: &[LedgerEntry]) -> Vec<String> {
    let reverts: std::collections::HashMap<ChangeId, EntryId> = entries
        .iter()
        .filter_map(|e| match e.id {
            EntryId::Revert(id) => Some((id, e.id)),
            EntryId::Change(_) => None,
        })
        .collect();
    entries
        .iter()
        .map(|entry| match entry.id {
            EntryId::Revert(_) if koas_edit::query::is_dismissal(entry) => {
                format!("dismisses {}", entry.reverted_id)
            }
            EntryId::Revert(_) => format!("reverts {}", entry.reverted_id),
            EntryId::Change(id) => match reverts.get(&id) {
                Some(by) if entry.action == Action::FlagOnly => format!("dismissed ({by})"),
                Some(by) => format!("reverted ({by})"),
                None if entry.action == Action::FlagOnly => "flag".to_owned(),
                None => "active".to_owned(),
            },
        })
        .collect()
}

fn lines_cell(entry: &LedgerEntry) -> String {
    match entry.change {
        Some(c) if c.removed == 0 => format!("+{} @{}", c.added, c.at),
        Some(c) if c.removed == 1 => format!("{}", c.at),
        Some(c) => format!("{}–{}", c.at, c.at + c.removed - 1),
        None => String::new(),
    }
}

/// Renders the report.
pub fn render_report(input: ReportInput<'_>) -> String {
    let entries = input.entries;
    let mut out = String::new();
    write_metadata(&mut out, input.meta, entries.len());
    write_counts(&mut out, entries);
    write_last_run(&mut out, input.model, input.apply_log);
    let lookup = SectionLookup::new(input.sections);
    let status = statuses(entries);
    write_changes_by_section(&mut out, entries, &lookup, &status);
    write_ledger(&mut out, entries, &status);
    write_findings(&mut out, input.findings, &lookup);
    let resolved = resolved_findings(entries, input.earlier_findings, input.findings);
    write_resolved(&mut out, entries, &resolved);
    write_rejected(&mut out, input.apply_log);
    out
}

/// The title, the engine's notice if any, and `## Run metadata`.
fn write_metadata(out: &mut String, meta: &ReportMeta, entry_count: usize) {
    let _ = writeln!(out, "# Review report — {}\n", cell(&meta.doc_name));
    if let Some(notice) = &meta.notice {
        // The engine's own text, with its code spans: not escaped.
        let notice = notice.replace(['\n', '\r'], " ");
        let _ = writeln!(out, "> [!NOTE]\n> {notice}\n");
    }
    let _ = writeln!(out, "## Run metadata\n");
    let _ = writeln!(out, "| Field | Value |\n|---|---|");
    let _ = writeln!(out, "| As of | {} |", cell(&meta.generated_at));
    let _ = writeln!(out, "| Tool | {} |", cell(&meta.tool));
    for (name, version) in &meta.kernels {
        let _ = writeln!(out, "| Kernel {} | {} |", code_cell(name), cell(version));
    }
    let _ = writeln!(out, "| Document | {} |", code_cell(&meta.doc_name));
    let _ = writeln!(out, "| Original hash | `{}` |", meta.original_hash);
    let _ = writeln!(out, "| Current hash | `{}` |", meta.current_hash);
    let _ = writeln!(out, "| Ledger entries | {} |\n", entry_count);
}

/// `## Counts`.
fn write_counts(out: &mut String, entries: &[LedgerEntry]) {
    let counts = count(entries);
    let _ = writeln!(out, "## Counts\n");
    // The sentence `koas review`, `koas status` and the HTML page say too.
    let _ = writeln!(out, "{}.\n", counts.sentence());
    let _ = writeln!(
        out,
        "| Changes and flags | Changes | Flags | Need attention | Deletions | Silent | Reverted | Dismissed | Active |"
    );
    let _ = writeln!(out, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let _ = writeln!(
        out,
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
        counts.entries,
        counts.total_changes,
        counts.flags,
        counts.need_attention,
        counts.deletions,
        counts.silent,
        counts.reverts,
        counts.dismissed,
        counts.active_changes
    );
}

/// `## Changes by section`: a table of the changes (reverts aside) per
/// section of the current document.
fn write_changes_by_section(
    out: &mut String,
    entries: &[LedgerEntry],
    lookup: &SectionLookup<'_>,
    status: &[String],
) {
    let _ = writeln!(out, "## Changes by section\n");
    let by_section = changes_by_section(entries, &current_lines(entries), lookup);
    if by_section.is_empty() {
        let _ = writeln!(out, "No changes.\n");
    }
    for (section, list) in &by_section {
        match section {
            Some(s) => {
                let _ = writeln!(
                    out,
                    "### {} (lines {}–{})\n",
                    cell(&s.title),
                    s.line_start,
                    s.line_end
                );
            }
            None => {
                let _ = writeln!(out, "### (outside any section)\n");
            }
        }
        let _ = writeln!(
            out,
            "| ID | Action | Kind | Severity | Summary | Status |\n|---|---|---|---|---|---|"
        );
        for &index in list {
            let e = &entries[index];
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                e.id,
                e.action,
                cell(&e.kind),
                cell(severity_word(&e.severity)),
                cell(&e.summary),
                status[index]
            );
        }
        out.push('\n');
    }
}

/// `## Ledger (chronological)`: every entry, in order.
fn write_ledger(out: &mut String, entries: &[LedgerEntry], status: &[String]) {
    let _ = writeln!(out, "## Ledger (chronological)\n");
    if entries.is_empty() {
        let _ = writeln!(out, "The ledger is empty.\n");
        return;
    }
    let _ = writeln!(
        out,
        "| # | ID | Time | Action | Kind | Severity | Silent | Applied at | Summary | Status |\n|---:|---|---|---|---|---|---|---|---|---|"
    );
    for (index, e) in entries.iter().enumerate() {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            index + 1,
            e.id,
            e.timestamp,
            e.action,
            cell(&e.kind),
            cell(severity_word(&e.severity)),
            if e.silent { "yes" } else { "no" },
            lines_cell(e),
            cell(&e.summary),
            status[index]
        );
    }
    out.push('\n');
}

/// A finding's lines: `12`, or `12–14`.
fn finding_lines(f: &Finding) -> String {
    if f.line_end > f.line {
        format!("{}–{}", f.line, f.line_end)
    } else {
        f.line.to_string()
    }
}

/// `## Findings on the current document`: what the checks find in it
/// now, by section.
fn write_findings(out: &mut String, findings: &[Finding], lookup: &SectionLookup<'_>) {
    let _ = writeln!(out, "## Findings on the current document\n");
    if findings.is_empty() {
        let _ = writeln!(out, "No findings.\n");
        return;
    }
    let mut grouped = Grouped::new();
    for finding in findings {
        grouped.push(lookup.get(finding.line as usize), finding);
    }
    for (section, mut list) in grouped.sorted() {
        list.sort_by_key(|f| (f.line, f.line_end));
        match section {
            Some(s) => {
                let _ = writeln!(out, "### {}\n", cell(&s.title));
            }
            None => {
                let _ = writeln!(out, "### (outside any section)\n");
            }
        }
        let _ = writeln!(
            out,
            "| Lines | Kind | Severity | Message |\n|---|---|---|---|"
        );
        for f in list {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                finding_lines(f),
                kind_cell(f),
                f.severity.as_str(),
                cell(&f.message)
            );
        }
        out.push('\n');
    }
}

/// `## Resolved findings`, when the original had findings the current
/// document no longer has: each with the change that resolved it.
fn write_resolved(out: &mut String, entries: &[LedgerEntry], resolved: &[Resolved<'_>]) {
    if resolved.is_empty() {
        return;
    }
    let external: std::collections::HashSet<EntryId> = entries
        .iter()
        .filter(|e| e.kind == "external")
        .map(|e| e.id)
        .collect();
    let _ = writeln!(out, "## Resolved findings\n");
    let _ = writeln!(
        out,
        "Findings of the original document that the current document no longer has.\n"
    );
    let _ = writeln!(
        out,
        "| Original lines | Kind | Severity | Message | Resolved by |\n|---|---|---|---|---|"
    );
    for r in resolved {
        let f = r.finding;
        let by = match r.by {
            Some(id) if external.contains(&id) => format!("{id} (edited outside koas)"),
            Some(id) => id.to_string(),
            None => "a change elsewhere (none edited its lines)".to_owned(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            finding_lines(f),
            kind_cell(f),
            f.severity.as_str(),
            cell(&f.message),
            by
        );
    }
    out.push('\n');
}

/// `## Rejected ops (last run)`, when the last run refused any.
fn write_rejected(out: &mut String, apply_log: &[ApplyLogRecord]) {
    let rejected: Vec<&ApplyLogRecord> = apply_log.iter().filter(|r| r.reject.is_some()).collect();
    if rejected.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Rejected ops (last run)\n");
    // A rejected op has no change ID: it is named by its position in
    // the ops input.
    let _ = writeln!(out, "| Op | Class | Reason |\n|---:|---|---|");
    for r in rejected {
        let class = r.reject.map(|c| c.as_str()).unwrap_or("");
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            r.op_index,
            class,
            cell(r.reason.as_deref().unwrap_or(""))
        );
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_name_uses_the_stem() {
        assert_eq!(report_file_name("spec.md"), "REVIEW_spec.md");
        assert_eq!(report_file_name("docs/audit_fr.md"), "REVIEW_audit_fr.md");
    }

    #[test]
    fn innermost_section_wins() {
        let sections = vec![
            SectionEntry::from_lines("S1", "A", 1, 50),
            SectionEntry::from_lines("S1.1", "B", 10, 20),
        ];
        assert_eq!(section_of(&sections, 12).unwrap().id, "S1.1");
        assert_eq!(section_of(&sections, 30).unwrap().id, "S1");
        assert!(section_of(&sections, 60).is_none());
    }

    #[test]
    fn findings_and_changes_say_the_severity_as_check_and_the_editor_do() {
        use koas_review_schema::findings::{Finding, FindingKind, Severity};
        let meta = ReportMeta {
            generated_at: "t".into(),
            tool: "koas".into(),
            kernels: vec![],
            doc_name: "d.md".into(),
            original_hash: "sha256:00".into(),
            current_hash: "sha256:00".into(),
            notice: None,
        };
        let mut error = Finding::new(FindingKind::AiLeftover, "k", 4, 4, "leftover", "e");
        error.severity = Severity::Error;
        let mut info = Finding::new(FindingKind::TerminologyDrift, "k", 9, 9, "drift", "e");
        info.severity = Severity::Info;
        let text = render_report(ReportInput {
            meta: &meta,
            entries: &[],
            sections: &[SectionEntry::from_lines("S1", "Title", 1, 20)],
            findings: &[error, info],
            earlier_findings: &[],
            apply_log: &[],
            model: None,
        });
        assert!(
            text.contains("| ai_leftover | error | leftover |"),
            "{text}"
        );
        assert!(
            text.contains("| terminology_drift | info | drift |"),
            "{text}"
        );
        // The section's title, not the engine's ID for it.
        assert!(text.contains("### Title\n"), "{text}");
        assert!(!text.contains("S1 "), "{text}");
    }

    #[test]
    fn guard_counts_count_every_guard_and_kept_deletions() {
        use koas_review_schema::apply::{Fix, GuardOutcome};
        use koas_review_schema::rejection::RejectClass;
        let record =
            |action: Action, fixes: Vec<Fix>, reject: Option<RejectClass>| ApplyLogRecord {
                run_id: "r".into(),
                op_index: 1,
                id: reject.is_none().then(ChangeId::first),
                source_id: None,
                status: if reject.is_some() {
                    OpStatus::Rejected
                } else {
                    OpStatus::Applied
                },
                action: Some(action),
                lines: Some((1, 1)),
                fixes,
                defaults_filled: vec![],
                reject,
                reason: None,
                touches_protected: vec![],
                matches: None,
                known_as: None,
            };
        let guard = |name: &str| Fix::ContentGuard {
            guard: name.into(),
            reason: "r".into(),
        };
        let log = vec![
            record(
                Action::Replace,
                vec![
                    Fix::BlankLineGuard {
                        outcome: GuardOutcome::Downgraded,
                        from_lines: (2, 2),
                        to_lines: (2, 2),
                    },
                    Fix::HashRecompute {
                        from: None,
                        to: "sha256:0".into(),
                    },
                ],
                None,
            ),
            record(
                Action::Replace,
                vec![guard("TOKEN_GUARD")],
                Some(RejectClass::Guard),
            ),
            record(
                Action::Replace,
                vec![guard("TOKEN_GUARD"), guard("REWRITE_GUARD")],
                None,
            ),
            record(Action::Delete, vec![], None),
            // A refused deletion writes no CAUTION note.
            record(Action::Delete, vec![], Some(RejectClass::Hash)),
        ];
        let counts = guard_counts(&log);
        let expected: BTreeMap<&str, usize> = [
            ("BLANK_LINE_GUARD", 1),
            ("TOKEN_GUARD", 2),
            ("REWRITE_GUARD", 1),
            (DELETION_CAUTION, 1),
        ]
        .into_iter()
        .collect();
        assert_eq!(counts, expected);
    }

    #[test]
    fn cells_escape_pipes_and_newlines() {
        assert_eq!(cell("a|b\nc"), "a\\|b c");
    }

    #[test]
    fn stop_codes_are_kept_and_other_reasons_escaped() {
        assert_eq!(
            stop_cell("SESSION_BUDGET_EXHAUSTED"),
            "SESSION_BUDGET_EXHAUSTED"
        );
        assert_eq!(stop_cell("<b>down</b>"), "&lt;b&gt;down&lt;/b&gt;");
    }

    #[test]
    fn code_cells_cannot_be_closed_by_a_backtick() {
        assert_eq!(code_cell("doc.md"), "`doc.md`");
        assert_eq!(code_cell("a`b"), "``a`b``");
        assert_eq!(code_cell("`x``"), "``` `x`` ```");
        // Literal inside: no backslash doubled; only the cell separator.
        assert_eq!(code_cell(r"a\b|<i>"), r"`a\b\|<i>`");
    }

    #[test]
    fn hostile_op_text_is_escaped_in_every_table() {
        use koas_edit::clock::SteppingClock;
        use koas_edit::session::MemorySession;
        use koas_review_schema::apply::{ApplyOptions, OpStatus};
        use koas_review_schema::ledger::Actor;
        use koas_review_schema::rejection::RejectClass;
        use koas_review_schema::stage1::ProtectedSpans;

        let hostile = "<script>alert(1)</script> <img src=x onerror=alert(1)> ![x](http://tracker/p.png) [y](javascript:alert(1))";
        let mut session = MemorySession::new("d.md", "# T\n\nA line.\n");
        let out = session
            .apply(
                &[serde_json::json!({
                    "action": "flag_only", "kind": "<b>style</b>", "severity": "attention",
                    "target": {"line_start": 3}, "rationale": hostile, "summary": hostile,
                })],
                &ProtectedSpans::default(),
                &ApplyOptions::default(),
                &Actor {
                    tool: "t".into(),
                    operator: "o".into(),
                },
                &SteppingClock::new("2026-01-01T00:00:00Z"),
                "run",
            )
            .expect("applies");
        assert!(out.rejected.is_empty(), "{:?}", out.rejected);
        let meta = ReportMeta {
            generated_at: "t".into(),
            tool: "koas".into(),
            kernels: vec![],
            doc_name: "<img src=x onerror=alert(1)>.md".into(),
            original_hash: "sha256:00".into(),
            current_hash: "sha256:00".into(),
            notice: None,
        };
        let rejected = ApplyLogRecord {
            run_id: "r".into(),
            op_index: 2,
            id: None,
            source_id: None,
            status: OpStatus::Rejected,
            action: None,
            lines: None,
            fixes: vec![],
            defaults_filled: vec![],
            reject: Some(RejectClass::Other),
            reason: Some(format!("unknown action '{hostile}'")),
            touches_protected: vec![],
            matches: None,
            known_as: None,
        };
        let text = render_report(ReportInput {
            meta: &meta,
            entries: &session.entries,
            sections: &[SectionEntry::from_lines("S1", "<script>x</script>", 1, 3)],
            findings: &[],
            earlier_findings: &[],
            apply_log: &[rejected],
            model: None,
        });
        // Outside the code span of the document's name (literal there),
        // no raw form without a backslash before it.
        let outside: String = text
            .lines()
            .filter(|l| !l.starts_with("| Document |"))
            .collect::<Vec<_>>()
            .join("\n");
        for raw in ["<script", "<img", "<b>", "![", "](javascript:", "](http"] {
            let unescaped = outside
                .match_indices(raw)
                .any(|(at, _)| !outside[..at].ends_with('\\'));
            assert!(!unescaped, "{raw} in\n{text}");
        }
        let escaped = "&lt;script&gt;alert(1)&lt;/script&gt; &lt;img src=x onerror=alert(1)&gt; !\\[x\\](http://tracker/p.png) \\[y\\](javascript:alert(1))";
        // The summary in both tables and the rejection reason.
        assert_eq!(text.matches(escaped).count(), 3, "{text}");
        assert!(text.contains("| &lt;b&gt;style&lt;/b&gt; |"), "{text}");
        assert!(text.contains("# Review report — &lt;img src=x onerror=alert(1)&gt;.md\n"));
        // In a code span the name is literal already: left as written.
        assert!(text.contains("| Document | `<img src=x onerror=alert(1)>.md` |"));
    }
}
