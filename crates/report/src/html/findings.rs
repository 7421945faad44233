//! The findings tables: on the current document, from other kernels,
//! resolved; reverts and rejected ops.

use super::*;

/// One finding's row; its kernel's name only with `details`.
pub(super) fn finding_row(out: &mut String, f: &Finding, details: bool, extra: &str) {
    let severity = f.severity.as_str();
    let _ = writeln!(
        out,
        "<tr data-kind=\"{}\" data-severity=\"{severity}\"><td>{}</td><td>{}</td><td><span class=\"tag sev-{severity}\">{severity}</span></td><td>{}</td>{}{extra}</tr>",
        f.kind.as_str(),
        lines_label(f.line, f.line_end),
        // A style rule by its name (`Google.Passive`); the filter by kind.
        escape(f.kind_name()),
        escape(&f.message),
        if details {
            format!("<td><code>{}</code></td>", escape(&f.kernel))
        } else {
            String::new()
        },
    );
}

/// A section's ID before its title, only with `details`: `S1.2` is the
/// engine's name for it, the title the writer's.
pub(super) fn section_id(s: &SectionEntry, details: bool) -> String {
    if details {
        format!("<span class=\"muted\">{}</span> ", escape(&s.id))
    } else {
        String::new()
    }
}

/// A section's group opened: `<div class="group">` and its heading (the
/// title, its ID only with `details`, its lines with `lines`).
pub(super) fn group_heading(
    out: &mut String,
    section: Option<&SectionEntry>,
    details: bool,
    lines: bool,
) {
    let _ = writeln!(out, "<div class=\"group\">");
    let Some(s) = section else {
        let _ = writeln!(out, "<h3>(outside any section)</h3>");
        return;
    };
    let span = if lines {
        format!(
            " <span class=\"muted\">(lines {}–{})</span>",
            s.line_start, s.line_end
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "<h3>{}{}{span}</h3>",
        section_id(s, details),
        escape(&s.title)
    );
}

/// The `Kernel` header cell, only with `details`.
pub(super) fn kernel_th(details: bool) -> &'static str {
    if details {
        "<th>Kernel</th>"
    } else {
        ""
    }
}

pub(super) fn write_findings(out: &mut String, input: &HtmlInput<'_>, lookup: &SectionLookup<'_>) {
    let findings = input.report.findings;
    let limit = input.limits.max_findings;
    let _ = writeln!(
        out,
        "<section id=\"findings\"><h2>Findings on the current document</h2>"
    );
    if findings.is_empty() {
        let _ = writeln!(out, "<p>No findings.</p></section>");
        return;
    }
    if findings.len() > limit {
        let _ = writeln!(
            out,
            "<p class=\"cut\">{} findings: the first {limit} by line are shown; <code>{}</code> lists them all.</p>",
            findings.len(),
            escape(&format!("koas check {}", shell_quote(input.doc_arg)))
        );
    }
    let mut sorted: Vec<&Finding> = findings.iter().collect();
    sorted.sort_by_key(|f| (f.line, f.line_end));
    sorted.truncate(limit);
    let mut grouped = crate::markdown::Grouped::new();
    for f in sorted {
        grouped.push(lookup.get(f.line as usize), f);
    }
    for (section, list) in grouped.sorted() {
        group_heading(out, section, input.details, false);
        let _ = writeln!(
            out,
            "<table><tr><th>Lines</th><th>Kind</th><th>Severity</th><th>Message</th>{}</tr>",
            kernel_th(input.details)
        );
        for f in list {
            finding_row(out, f, input.details, "");
        }
        let _ = writeln!(out, "</table></div>");
    }
    let _ = writeln!(out, "</section>");
}

/// The findings of the pipeline's other kernels, one table, named by
/// kernel. Their kinds are the kernels' own words: escaped like any text.
pub(super) fn write_kernel_findings(out: &mut String, input: &HtmlInput<'_>) {
    let found = input.kernel_findings;
    if found.is_empty() {
        return;
    }
    let total: usize = found.iter().map(|k| k.findings.len()).sum();
    let limit = input.limits.max_findings;
    let _ = writeln!(
        out,
        "<section id=\"kernel-findings\"><h2>Findings from other kernels</h2><p>{total} finding(s) reported by {} kernel(s) of the pipeline, on the current document.</p>",
        found.len()
    );
    if total > limit {
        let _ = writeln!(
            out,
            "<p class=\"cut\">The first {limit} are shown; the Markdown report lists them all.</p>"
        );
    }
    if total > 0 {
        let _ = writeln!(
            out,
            "<div class=\"group\"><table><tr><th>Kernel</th><th>Lines</th><th>Severity</th><th>Kind</th><th>Finding</th></tr>"
        );
        for (k, f) in found
            .iter()
            .flat_map(|k| k.findings.iter().map(move |f| (k, f)))
            .take(limit)
        {
            let severity = f.severity.as_str();
            let _ = writeln!(
                out,
                "<tr data-kind=\"{}\" data-severity=\"{severity}\"><td><code>{}</code></td><td>{}</td><td><span class=\"tag sev-{severity}\">{severity}</span></td><td>{}</td><td>{}</td></tr>",
                escape(&f.kind),
                escape(&k.kernel),
                lines_label(f.line, f.line_end.unwrap_or(f.line)),
                escape(&f.kind),
                escape(&f.message),
            );
        }
        let _ = writeln!(out, "</table></div>");
    }
    let _ = writeln!(out, "</section>");
}

pub(super) fn write_resolved(
    out: &mut String,
    input: &HtmlInput<'_>,
    resolved: &[crate::markdown::Resolved<'_>],
) {
    if resolved.is_empty() {
        return;
    }
    let entries = input.report.entries;
    let external: BTreeSet<EntryId> = entries
        .iter()
        .filter(|e| e.kind == "external")
        .map(|e| e.id)
        .collect();
    let _ = writeln!(
        out,
        "<section id=\"resolved\"><h2>Resolved findings</h2><p>Findings of the original document that the current document no longer has (lines of the original).</p>"
    );
    if resolved.len() > input.limits.max_findings {
        let _ = writeln!(
            out,
            "<p class=\"cut\">{} resolved findings: the first {} are shown; the Markdown report lists them all.</p>",
            resolved.len(),
            input.limits.max_findings
        );
    }
    let _ = writeln!(
        out,
        "<div class=\"group\"><table><tr><th>Original lines</th><th>Kind</th><th>Severity</th><th>Message</th>{}<th>Resolved by</th></tr>",
        kernel_th(input.details)
    );
    for r in resolved.iter().take(input.limits.max_findings) {
        let by = match r.by {
            Some(id) if external.contains(&id) => {
                format!("<a href=\"#{id}\">{id}</a> (edited outside koas)")
            }
            Some(id) => format!("<a href=\"#{id}\">{id}</a>"),
            None => "a change elsewhere (none edited its lines)".to_owned(),
        };
        finding_row(out, r.finding, input.details, &format!("<td>{by}</td>"));
    }
    let _ = writeln!(out, "</table></div></section>");
}

pub(super) fn write_reverts(out: &mut String, entries: &[LedgerEntry]) {
    let undo: Vec<&LedgerEntry> = entries.iter().filter(|e| e.is_revert).collect();
    if undo.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<section id=\"reverts\"><h2>Reverts and dismissals</h2><table><tr><th>ID</th><th>Time</th><th>Undoes</th><th>Reason</th></tr>"
    );
    for e in undo {
        let what = if is_dismissal(e) {
            "dismisses"
        } else {
            "reverts"
        };
        let _ = writeln!(
            out,
            "<tr><td class=\"id\">{}</td><td>{}</td><td>{what} <a href=\"#{}\">{}</a></td><td>{}</td></tr>",
            e.id,
            escape(&e.timestamp),
            escape(&e.reverted_id),
            escape(&e.reverted_id),
            escape(&e.rationale)
        );
    }
    let _ = writeln!(out, "</table></section>");
}

pub(super) fn write_rejected(out: &mut String, input: &HtmlInput<'_>) {
    let rejected: Vec<_> = input
        .report
        .apply_log
        .iter()
        .filter(|r| r.reject.is_some())
        .collect();
    if rejected.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<section id=\"rejected\"><h2>Rejected ops (last run)</h2><p>Ops of the last run that were not applied, by their position in the ops input.</p><table><tr><th>Op</th><th>Class</th><th>Reason</th></tr>"
    );
    for r in rejected {
        let _ = writeln!(
            out,
            "<tr><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
            r.op_index,
            r.reject.map(|c| c.as_str()).unwrap_or(""),
            escape(r.reason.as_deref().unwrap_or(""))
        );
    }
    let _ = writeln!(out, "</table></section>");
}
