//! The review report as one self-contained HTML page
//! (`koas report DOC --html`).
//!
//! The page shows what the Markdown report shows — the summary, the
//! findings of the current document by section, the resolved findings,
//! the rejections of the last run — and every change of the ledger with
//! its ID, kind, severity, status, guard notes, a side-by-side diff
//! (before / after) and the command that reverts it.
//!
//! Self-contained and safe by construction:
//! - no external resource: the CSS and the script are inline and the page
//!   forbids everything else with a Content-Security-Policy that allows
//!   only those two, by hash, so a tag slipped into the page by document
//!   text could neither run nor load anything;
//! - every piece of document text, summary, rationale, note and finding
//!   is HTML-escaped ([`escape`]); no data is embedded inside the script
//!   (the filters read `data-` attributes), so there is no JSON to escape;
//! - without JavaScript everything is shown, diffs included; the script
//!   only adds the filters (by kind, severity and status, also read from
//!   the URL fragment, e.g. `#kind=typo&severity=info`) and click-to-copy
//!   on the commands.
//!
//! Size: every change is listed, but only the first
//! [`HtmlLimits::max_diffs`] changes (in page order) get a diff; each side
//! of a diff is cut at [`HtmlLimits::max_diff_rows`] rows and each line at
//! [`HtmlLimits::max_line_chars`] characters, and the findings tables at
//! [`HtmlLimits::max_findings`] rows. The page says when anything was cut
//! and which command shows the rest.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

use sha2::{Digest, Sha256};

use crate::markdown::{current_lines, guard_counts, guard_effect, resolved_findings, ReportInput};
use koas_edit::artifacts::SectionLookup;
use koas_edit::patch::{parse_patch, HunkLine};
use koas_edit::query::{count, severity_word};
use koas_review_schema::apply::{ApplyLogRecord, Fix, OpStatus};
use koas_review_schema::change_id::{ChangeId, EntryId};
use koas_review_schema::edit_op::Action;
use koas_review_schema::findings::{Finding, KernelFindings};
use koas_review_schema::ledger::LedgerEntry;
use koas_review_schema::stage1::SectionEntry;

/// How much of a large review the page shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HtmlLimits {
    /// Changes that get a side-by-side diff, in page order; the others are
    /// listed with their ID, status, summary and commands.
    pub max_diffs: usize,
    /// Rows of one diff (context, removed and added lines paired).
    pub max_diff_rows: usize,
    /// Characters of one shown line.
    pub max_line_chars: usize,
    /// Rows of the findings tables (current and resolved, each).
    pub max_findings: usize,
}

impl Default for HtmlLimits {
    fn default() -> Self {
        HtmlLimits {
            max_diffs: 1000,
            max_diff_rows: 40,
            max_line_chars: 2000,
            max_findings: 5000,
        }
    }
}

/// Everything the page shows.
#[derive(Debug, Clone, Copy)]
pub struct HtmlInput<'a> {
    /// What the Markdown report shows; the entries must carry their patch
    /// text (`patch_text`) for their diffs to be shown.
    pub report: ReportInput<'a>,
    /// The current document (a flag shows the lines it flags).
    pub current_text: &'a str,
    /// Changes that can no longer be reverted on their own, with the edit
    /// made outside koas that touched their lines.
    pub not_revertible: &'a BTreeMap<ChangeId, EntryId>,
    /// The document as the commands shown name it (the path the report
    /// was asked for).
    pub doc_arg: &'a str,
    /// The workspace, when it was given explicitly (`-w DIR`).
    pub workspace_arg: Option<&'a str>,
    /// How much of a large review is shown.
    pub limits: HtmlLimits,
    /// Findings of the pipeline's other kernels (third-party checks), by
    /// kernel, on the current document.
    pub kernel_findings: &'a [KernelFindings],
    /// Also show the engine's internals a writer does not need: guard and
    /// normalization names, section IDs, the kernel behind each finding,
    /// the kernels' versions and the ledger's own severity words.
    pub details: bool,
}

/// Escapes text for HTML element content and quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    push_escaped(&mut out, text);
    out
}

fn push_escaped(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // A NUL is not allowed in HTML text.
            '\0' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
}

/// One argument as a POSIX shell reads it: bare when it holds only safe
/// characters, else single-quoted.
pub fn shell_quote(arg: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_-./+,:@%=".contains(c);
    let arg = if arg.starts_with('-') {
        // A document named like a flag must not be read as one.
        format!("./{arg}")
    } else {
        arg.to_owned()
    };
    if !arg.is_empty() && arg.chars().all(safe) {
        arg
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

/// What became of a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Applied,
    Flagged,
    Dismissed(EntryId),
    Reverted(EntryId),
    NotRevertible(EntryId),
}

impl Status {
    /// The value of the status filter.
    fn key(self) -> &'static str {
        match self {
            Status::Applied => "applied",
            Status::Flagged => "flagged",
            Status::Dismissed(_) => "dismissed",
            Status::Reverted(_) => "reverted",
            Status::NotRevertible(_) => "not-revertible",
        }
    }

    fn label(self) -> String {
        match self {
            Status::Applied => "applied".to_owned(),
            Status::Flagged => "flagged".to_owned(),
            Status::Dismissed(by) => format!("dismissed ({by})"),
            Status::Reverted(by) => format!("reverted ({by})"),
            Status::NotRevertible(by) => {
                format!("applied, not revertible (edited outside koas: {by})")
            }
        }
    }
}

use koas_edit::query::is_dismissal;

fn statuses(
    entries: &[LedgerEntry],
    not_revertible: &BTreeMap<ChangeId, EntryId>,
) -> Vec<Option<Status>> {
    let undone: HashMap<ChangeId, EntryId> = entries
        .iter()
        .filter_map(|e| match e.id {
            EntryId::Revert(id) => Some((id, e.id)),
            EntryId::Change(_) => None,
        })
        .collect();
    entries
        .iter()
        .map(|entry| {
            let id = entry.change_id()?;
            let flag = entry.action == Action::FlagOnly;
            Some(match (undone.get(&id), not_revertible.get(&id)) {
                (Some(by), _) if flag => Status::Dismissed(*by),
                (Some(by), _) => Status::Reverted(*by),
                (None, _) if flag => Status::Flagged,
                (None, Some(by)) => Status::NotRevertible(*by),
                (None, None) => Status::Applied,
            })
        })
        .collect()
}

fn lines_label(first: u32, last: u32) -> String {
    if last > first {
        format!("{first}–{last}")
    } else {
        first.to_string()
    }
}

/// A `<details>` block of run metadata, counts, guard firings: the
/// summary at the top of the page.
fn write_summary(out: &mut String, input: &HtmlInput<'_>, findings: usize, resolved: usize) {
    let report = &input.report;
    let meta = report.meta;
    let entries = report.entries;
    let counts = count(entries);
    let _ = writeln!(out, "<section id=\"summary\"><h2>Summary</h2>");
    // The sentence `koas review`, `koas status` and the Markdown report say.
    let _ = writeln!(
        out,
        "<p class=\"tally\">{}.</p>",
        escape(&counts.sentence())
    );
    let _ = writeln!(out, "<table class=\"counts\"><tr><th>Changes and flags</th><th>Changes</th><th>Flags</th><th>Need attention</th><th>Deletions</th><th>Silent</th><th>Reverted</th><th>Dismissed</th><th>Active</th><th>Findings now</th><th>Resolved findings</th></tr>");
    let _ = writeln!(
        out,
        "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{findings}</td><td class=\"num\">{resolved}</td></tr></table>",
        counts.entries,
        counts.total_changes,
        counts.flags,
        counts.need_attention,
        counts.deletions,
        counts.silent,
        counts.reverts,
        counts.dismissed,
        counts.active_changes,
    );
    if let Some(model) = report.model {
        let models: Vec<String> = model
            .models
            .iter()
            .map(|(role, name)| format!("{}: {}", escape(role), escape(name)))
            .collect();
        let _ = writeln!(
            out,
            "<p>Model (last run that asked it): {} — {}; {}; {} tokens.{}</p>",
            escape(&model.backend),
            models.join(", "),
            escape(&model.requests_phrase()),
            model.tokens,
            match &model.stopped {
                Some(reason) => format!(
                    " Stopped early ({}): {} chunk(s) not reviewed.",
                    escape(reason),
                    model.chunks_not_reviewed
                ),
                None => String::new(),
            }
        );
    }
    let guards = guard_counts(report.apply_log);
    if !guards.is_empty() {
        // What the checks on the model's changes did, in words; their
        // names are the engine's and shown only when asked.
        let _ = writeln!(
            out,
            "<h3>Checks on the changes (last run)</h3><table><tr>{}<th>Changes</th><th>What was seen, and what it did</th></tr>",
            if input.details { "<th>Guard</th>" } else { "" }
        );
        for (name, n) in &guards {
            let _ = writeln!(
                out,
                "<tr>{}<td class=\"num\">{n}</td><td>{}</td></tr>",
                if input.details {
                    format!("<td><code>{name}</code></td>")
                } else {
                    String::new()
                },
                escape(guard_effect(name))
            );
        }
        let _ = writeln!(out, "</table>");
    }
    let _ = writeln!(
        out,
        "<details><summary>Run metadata</summary><table>\
<tr><th>As of</th><td>{}</td></tr><tr><th>Tool</th><td>{}</td></tr>\
<tr><th>Document</th><td><code>{}</code></td></tr>\
<tr><th>Original hash</th><td><code>{}</code></td></tr>\
<tr><th>Current hash</th><td><code>{}</code></td></tr>\
<tr><th>Ledger entries</th><td>{}</td></tr>",
        escape(&meta.generated_at),
        escape(&meta.tool),
        escape(&meta.doc_name),
        escape(&meta.original_hash),
        escape(&meta.current_hash),
        entries.len()
    );
    // The kernels' versions identify the run for whoever reproduces it,
    // not for the writer.
    for (name, version) in meta.kernels.iter().filter(|_| input.details) {
        let _ = writeln!(
            out,
            "<tr><th>Kernel <code>{}</code></th><td>{}</td></tr>",
            escape(name),
            escape(version)
        );
    }
    let _ = writeln!(out, "</table></details></section>");
}

/// The filter form: hidden until the script shows it, so a page read
/// without JavaScript has no control that does nothing.
fn write_filters(
    out: &mut String,
    kinds: &BTreeSet<String>,
    severities: &BTreeSet<String>,
    statuses: &BTreeSet<&'static str>,
    total: usize,
) {
    let select =
        |out: &mut String, id: &str, label: &str, values: &mut dyn Iterator<Item = &str>| {
            let _ = write!(
                out,
                "<label>{label} <select id=\"{id}\"><option value=\"\">all</option>"
            );
            for value in values {
                let value = escape(value);
                let _ = write!(out, "<option value=\"{value}\">{value}</option>");
            }
            let _ = write!(out, "</select></label>");
        };
    let _ = write!(out, "<form id=\"filters\" hidden>");
    select(out, "f-kind", "Kind", &mut kinds.iter().map(String::as_str));
    select(
        out,
        "f-severity",
        "Severity",
        &mut severities.iter().map(String::as_str),
    );
    select(
        out,
        "f-status",
        "Change status",
        &mut statuses.iter().copied(),
    );
    let _ = writeln!(
        out,
        "<button type=\"reset\">Show all</button><span id=\"f-count\" class=\"muted\" data-total=\"{total}\">{total} of {total} changes and flags shown</span><span class=\"muted\">Click a command to copy it.</span></form>"
    );
}

/// Renders the page.
pub fn render_html(input: HtmlInput<'_>) -> String {
    let report = input.report;
    let entries = report.entries;
    let lookup = SectionLookup::new(report.sections);
    let status = statuses(entries, input.not_revertible);
    let current = current_lines(entries);
    let resolved = resolved_findings(entries, report.earlier_findings, report.findings);
    let groups = crate::markdown::changes_by_section(entries, &current, &lookup);
    let changes = groups.iter().map(|(_, list)| list.len()).sum::<usize>();
    let page = ChangePage {
        entries,
        status: &status,
        current: &current,
        doc_lines: input.current_text.split_inclusive('\n').collect(),
        reasons: guard_reasons(report.apply_log),
        limits: input.limits,
        doc: shell_quote(input.doc_arg),
        tail: match input.workspace_arg {
            Some(ws) => format!(" -w {}", shell_quote(ws)),
            None => String::new(),
        },
        details: input.details,
    };

    let mut out = String::with_capacity(64 * 1024 + changes * 1200);
    write_head(&mut out, &input);
    write_summary(&mut out, &input, report.findings.len(), resolved.len());
    write_nav(&mut out, &input, !resolved.is_empty());
    let (kinds, severities, status_keys) = filter_values(&input, &status);
    write_filters(
        &mut out,
        &kinds,
        &severities,
        &status_keys,
        count(entries).entries,
    );
    write_changes(&mut out, &page, &groups, changes);
    write_findings(&mut out, &input, &lookup);
    write_kernel_findings(&mut out, &input);
    write_resolved(&mut out, &input, &resolved);
    write_reverts(&mut out, entries);
    write_rejected(&mut out, &input);

    let _ = writeln!(
        out,
        "<noscript><p class=\"muted\">JavaScript is off: every change and finding is shown; the filters need it.</p></noscript>"
    );
    let _ = writeln!(out, "<script>{SCRIPT}</script>\n</body>\n</html>");
    out
}

/// The values the filters offer: kinds, severities and statuses of the
/// changes and findings shown.
fn filter_values(
    input: &HtmlInput<'_>,
    status: &[Option<Status>],
) -> (BTreeSet<String>, BTreeSet<String>, BTreeSet<&'static str>) {
    let mut kinds: BTreeSet<String> = BTreeSet::new();
    let mut severities: BTreeSet<String> = BTreeSet::new();
    let mut status_keys: BTreeSet<&'static str> = BTreeSet::new();
    for (entry, st) in input.report.entries.iter().zip(status) {
        if let Some(st) = st {
            kinds.insert(entry.kind.clone());
            severities.insert(severity_word(&entry.severity).to_owned());
            status_keys.insert(st.key());
        }
    }
    for f in input.report.findings {
        kinds.insert(f.kind.as_str().to_owned());
        severities.insert(f.severity.as_str().to_owned());
    }
    (kinds, severities, status_keys)
}

/// The page's head, its title and the notice.
/// The page's head and its `<h1>`: only the page's own style (and
/// script, when it has one), by hash, can load or run, whatever the texts
/// it shows hold.
fn write_page_head(out: &mut String, title: &str, generator: &str, script: Option<&str>) {
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">"
    );
    let script_src = script.map_or_else(|| "'none'".to_owned(), csp_hash);
    let _ = writeln!(
        out,
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src {}; script-src {script_src}; img-src 'none'; base-uri 'none'; form-action 'none'\">",
        csp_hash(STYLE),
    );
    let _ = writeln!(
        out,
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta name=\"generator\" content=\"{}\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>",
        escape(generator),
        escape(title)
    );
    let _ = writeln!(out, "<h1>{}</h1>", escape(title));
}

/// A self-contained page in this report's style around `body` (HTML the
/// caller built, every outside text in it escaped with [`escape`]): the
/// same head, style and content security policy, and no script.
pub fn standalone_page(title: &str, generator: &str, body: &str) -> String {
    let mut out = String::with_capacity(body.len() + STYLE.len() + 1024);
    write_page_head(&mut out, title, generator, None);
    out.push_str(body);
    out.push_str("</body>\n</html>\n");
    out
}

fn write_head(out: &mut String, input: &HtmlInput<'_>) {
    let meta = &input.report.meta;
    let title = format!("Review report — {}", meta.doc_name);
    write_page_head(out, &title, &meta.tool, Some(SCRIPT));
    if let Some(notice) = &meta.notice {
        let _ = writeln!(out, "<p class=\"notice\">{}</p>", escape(notice));
    }
}

/// Links to the page's parts that have something.
fn write_nav(out: &mut String, input: &HtmlInput<'_>, has_resolved: bool) {
    let report = &input.report;
    let _ = writeln!(
        out,
        "<nav><p><a href=\"#changes\">Changes</a> · <a href=\"#findings\">Findings</a>{}{}{}{}</p></nav>",
        if input.kernel_findings.is_empty() { "" } else { " · <a href=\"#kernel-findings\">Findings from other kernels</a>" },
        if has_resolved { " · <a href=\"#resolved\">Resolved findings</a>" } else { "" },
        if report.entries.iter().any(|e| e.is_revert) { " · <a href=\"#reverts\">Reverts and dismissals</a>" } else { "" },
        if report.apply_log.iter().any(|r| r.reject.is_some()) { " · <a href=\"#rejected\">Rejected ops</a>" } else { "" },
    );
}

mod assets;
mod changes;
mod diff;
mod findings;

use assets::*;
use changes::*;
pub use diff::highlighted_pair;
use diff::*;
use findings::*;

#[cfg(test)]
mod tests;
