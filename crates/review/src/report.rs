//! The review report, `REVIEW_<stem>.md` (`md_review_report_assemble`).
//!
//! Sections: run metadata (date, tool and kernel versions, document
//! hashes); counts; a change table per document section; the full
//! chronological ledger table; the Stage 2 deterministic findings grouped
//! by section; and, when given, the rejections of the last run.
//!
//! Sections and findings refer to lines of the *original* document (Stage
//! 1 and 2 run on it); each ledger entry is mapped back to original lines
//! through the entries before it to find its section.

use std::fmt::Write as _;

use crate::artifacts::SectionLookup;
use crate::linemap::{EarlierEdits, Region};
use crate::query::count;
use koas_review_schema::apply::ApplyLogRecord;
use koas_review_schema::change_id::{ChangeId, EntryId};
use koas_review_schema::edit_op::Action;
use koas_review_schema::findings::Finding;
use koas_review_schema::ledger::LedgerEntry;
use koas_review_schema::review::ReportMeta;
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
    /// Stage 2 findings on the original document.
    pub findings: &'a [Finding],
    /// Apply log of the last run (rejections are listed).
    pub apply_log: &'a [ApplyLogRecord],
}

/// `REVIEW_<stem>.md` for a document named `doc_name`.
pub fn report_file_name(doc_name: &str) -> String {
    let stem = std::path::Path::new(doc_name)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| doc_name.to_owned());
    format!("REVIEW_{stem}.md")
}

fn cell(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace(['\n', '\r'], " ")
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
            if let Some(edit) = crate::linemap::edit_of(entry) {
                earlier.push_back(entry.id, edit);
            }
            line
        })
        .collect()
}

/// The innermost section containing `line`.
pub fn section_of(sections: &[SectionEntry], line: usize) -> Option<&SectionEntry> {
    sections
        .iter()
        .filter(|s| s.line_start as usize <= line && line <= s.line_end as usize)
        .max_by_key(|s| s.line_start)
}

/// Groups items by section, in order of first appearance.
struct Grouped<'a, T> {
    groups: Vec<(Option<&'a SectionEntry>, Vec<T>)>,
    index: std::collections::HashMap<Option<&'a str>, usize>,
}

impl<'a, T> Grouped<'a, T> {
    fn new() -> Self {
        Grouped {
            groups: Vec::new(),
            index: std::collections::HashMap::new(),
        }
    }

    fn push(&mut self, section: Option<&'a SectionEntry>, item: T) {
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
    fn sorted(mut self) -> Vec<(Option<&'a SectionEntry>, Vec<T>)> {
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
            EntryId::Revert(_) if crate::query::is_dismissal(entry) => {
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
    let meta = input.meta;
    let entries = input.entries;
    let mut out = String::new();
    let _ = writeln!(out, "# Review report — {}\n", meta.doc_name);
    if let Some(notice) = &meta.notice {
        let _ = writeln!(out, "> [!NOTE]\n> {}\n", cell(notice));
    }
    let _ = writeln!(out, "## Run metadata\n");
    let _ = writeln!(out, "| Field | Value |\n|---|---|");
    let _ = writeln!(out, "| Generated | {} |", cell(&meta.generated_at));
    let _ = writeln!(out, "| Tool | {} |", cell(&meta.tool));
    for (name, version) in &meta.kernels {
        let _ = writeln!(out, "| Kernel `{}` | {} |", cell(name), cell(version));
    }
    let _ = writeln!(out, "| Document | `{}` |", cell(&meta.doc_name));
    let _ = writeln!(out, "| Original hash | `{}` |", meta.original_hash);
    let _ = writeln!(out, "| Current hash | `{}` |", meta.current_hash);
    let _ = writeln!(out, "| Ledger entries | {} |\n", entries.len());

    let counts = count(entries);
    let _ = writeln!(out, "## Counts\n");
    let _ = writeln!(
        out,
        "| Changes | Attention | Deletions | Silent | Flags | Reverts | Active |"
    );
    let _ = writeln!(out, "|---:|---:|---:|---:|---:|---:|---:|");
    let _ = writeln!(
        out,
        "| {} | {} | {} | {} | {} | {} | {} |\n",
        counts.total_changes,
        counts.attention,
        counts.deletions,
        counts.silent,
        counts.flags,
        counts.reverts,
        counts.active_changes
    );

    let _ = writeln!(out, "## Changes by section\n");
    let lookup = SectionLookup::new(input.sections);
    let status = statuses(entries);
    let lines = original_lines(entries);
    let mut grouped = Grouped::new();
    for (index, entry) in entries.iter().enumerate() {
        if entry.is_revert {
            continue;
        }
        let section = lines[index].and_then(|l| lookup.get(l));
        grouped.push(section, index);
    }
    let by_section = grouped.sorted();
    if by_section.is_empty() {
        let _ = writeln!(out, "No changes.\n");
    }
    for (section, list) in &by_section {
        match section {
            Some(s) => {
                let _ = writeln!(
                    out,
                    "### {} {} (lines {}–{})\n",
                    s.id,
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
                cell(&e.severity),
                cell(&e.summary),
                status[index]
            );
        }
        out.push('\n');
    }

    let _ = writeln!(out, "## Ledger (chronological)\n");
    if entries.is_empty() {
        let _ = writeln!(out, "The ledger is empty.\n");
    } else {
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
                cell(&e.severity),
                if e.silent { "yes" } else { "no" },
                lines_cell(e),
                cell(&e.summary),
                status[index]
            );
        }
        out.push('\n');
    }

    let _ = writeln!(out, "## Deterministic findings (Stage 2)\n");
    if input.findings.is_empty() {
        let _ = writeln!(out, "No findings.\n");
    } else {
        let mut grouped = Grouped::new();
        for finding in input.findings {
            grouped.push(lookup.get(finding.line as usize), finding);
        }
        for (section, mut list) in grouped.sorted() {
            list.sort_by_key(|f| (f.line, f.line_end));
            match section {
                Some(s) => {
                    let _ = writeln!(out, "### {} {}\n", s.id, cell(&s.title));
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
                let lines = if f.line_end > f.line {
                    format!("{}–{}", f.line, f.line_end)
                } else {
                    f.line.to_string()
                };
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} |",
                    lines,
                    cell(f.kind.as_str()),
                    cell(f.severity.review_severity()),
                    cell(&f.message)
                );
            }
            out.push('\n');
        }
    }

    let rejected: Vec<&ApplyLogRecord> = input
        .apply_log
        .iter()
        .filter(|r| r.reject.is_some())
        .collect();
    if !rejected.is_empty() {
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
    out
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
    fn findings_show_the_review_severity_vocabulary() {
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
            apply_log: &[],
        });
        assert!(
            text.contains("| ai_leftover | critical | leftover |"),
            "{text}"
        );
        assert!(
            text.contains("| terminology_drift | minor | drift |"),
            "{text}"
        );
    }

    #[test]
    fn cells_escape_pipes_and_newlines() {
        assert_eq!(cell("a|b\nc"), "a\\|b c");
    }
}
