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

use crate::linemap::{map_back_clamped, Region};
use crate::query::count;
use koas_review_schema::apply::ApplyLogRecord;
use koas_review_schema::change_id::EntryId;
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
    let change = entries.get(index)?.change?;
    let region = Region {
        start: change.at.saturating_sub(1),
        len: change.removed,
    };
    let earlier: Vec<_> = entries[..index]
        .iter()
        .filter_map(crate::linemap::edit_of)
        .collect();
    let back = map_back_clamped(region, &earlier);
    Some(if back.len == 0 {
        back.start.max(1)
    } else {
        back.start + 1
    })
}

/// The innermost section containing `line`.
pub fn section_of(sections: &[SectionEntry], line: usize) -> Option<&SectionEntry> {
    sections
        .iter()
        .filter(|s| s.line_start as usize <= line && line <= s.line_end as usize)
        .max_by_key(|s| s.line_start)
}

fn status_of(entries: &[LedgerEntry], entry: &LedgerEntry) -> String {
    match entry.id {
        EntryId::Revert(_) => format!("reverts {}", entry.reverted_id),
        EntryId::Change(id) => match entries.iter().find(|e| e.id == EntryId::Revert(id)) {
            Some(by) => format!("reverted ({})", by.id),
            None if entry.action == Action::FlagOnly => "flag".to_owned(),
            None => "active".to_owned(),
        },
    }
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
    let mut by_section: Vec<(Option<&SectionEntry>, Vec<usize>)> = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        if entry.is_revert {
            continue;
        }
        let section = original_line(entries, index).and_then(|l| section_of(input.sections, l));
        match by_section
            .iter_mut()
            .find(|(s, _)| s.map(|s| &s.id) == section.map(|s| &s.id))
        {
            Some((_, list)) => list.push(index),
            None => by_section.push((section, vec![index])),
        }
    }
    by_section.sort_by_key(|(s, _)| s.map_or(0, |s| s.line_start));
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
                status_of(entries, e)
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
                status_of(entries, e)
            );
        }
        out.push('\n');
    }

    let _ = writeln!(out, "## Deterministic findings (Stage 2)\n");
    if input.findings.is_empty() {
        let _ = writeln!(out, "No findings.\n");
    } else {
        let mut groups: Vec<(Option<&SectionEntry>, Vec<&Finding>)> = Vec::new();
        for finding in input.findings {
            let section = section_of(input.sections, finding.line as usize);
            match groups
                .iter_mut()
                .find(|(s, _)| s.map(|s| &s.id) == section.map(|s| &s.id))
            {
                Some((_, list)) => list.push(finding),
                None => groups.push((section, vec![finding])),
            }
        }
        groups.sort_by_key(|(s, _)| s.map_or(0, |s| s.line_start));
        for (section, mut list) in groups {
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
        let _ = writeln!(out, "| Op | ID | Class | Reason |\n|---:|---|---|---|");
        for r in rejected {
            let class = r.reject.map(|c| c.as_str()).unwrap_or("");
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                r.op_index,
                r.id,
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
