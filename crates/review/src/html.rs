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

use crate::artifacts::SectionLookup;
use crate::patch::{parse_patch, HunkLine};
use crate::query::{count, severity_word};
use crate::report::{current_lines, guard_counts, guard_effect, resolved_findings, ReportInput};
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

use crate::query::is_dismissal;

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

/// The page's script: filters and click-to-copy. It holds no data.
const SCRIPT: &str = r##"(function () {
  "use strict";
  var form = document.getElementById("filters");
  if (!form) { return; }
  var selects = {
    kind: document.getElementById("f-kind"),
    severity: document.getElementById("f-severity"),
    status: document.getElementById("f-status")
  };
  var items = document.querySelectorAll("[data-kind]");
  var groups = document.querySelectorAll(".group");
  var counter = document.getElementById("f-count");
  function matches(el, name) {
    var wanted = selects[name].value;
    if (!wanted) { return true; }
    var value = el.getAttribute("data-" + name);
    // Findings have no status: the status filter is for changes.
    return value === null ? name === "status" : value === wanted;
  }
  function apply() {
    // The total is the summary's count of changes and flags.
    var shown = 0, total = Number(counter.getAttribute("data-total"));
    for (var i = 0; i < items.length; i++) {
      var el = items[i];
      var ok = matches(el, "kind") && matches(el, "severity") && matches(el, "status");
      el.hidden = !ok;
      if (el.hasAttribute("data-status") && ok) { shown++; }
    }
    for (var g = 0; g < groups.length; g++) {
      groups[g].hidden = groups[g].querySelector("[data-kind]:not([hidden])") === null;
    }
    counter.textContent = shown + " of " + total + " changes and flags shown";
    var parts = [];
    for (var name in selects) {
      if (selects[name].value) { parts.push(name + "=" + encodeURIComponent(selects[name].value)); }
    }
    try {
      history.replaceState(null, "", parts.length ? "#" + parts.join("&") : location.pathname + location.search);
    } catch (e) {
      // Some browsers refuse to rewrite a file: URL; the filters still work.
    }
  }
  function fromFragment() {
    var pairs = location.hash.replace(/^#/, "").split("&");
    for (var i = 0; i < pairs.length; i++) {
      var kv = pairs[i].split("=");
      var select = selects[kv[0]];
      if (!select || kv.length !== 2) { continue; }
      var value;
      try { value = decodeURIComponent(kv[1]); } catch (e) { continue; }
      for (var o = 0; o < select.options.length; o++) {
        if (select.options[o].value === value) { select.value = value; }
      }
    }
  }
  form.hidden = false;
  form.addEventListener("change", apply);
  form.addEventListener("reset", function () { setTimeout(apply, 0); });
  fromFragment();
  apply();
  document.addEventListener("click", function (event) {
    var target = event.target;
    if (!target || !target.classList || !target.classList.contains("cmd")) { return; }
    var text = target.textContent;
    function done() {
      target.classList.add("copied");
      setTimeout(function () { target.classList.remove("copied"); }, 1200);
    }
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(done, function () {});
    } else {
      var range = document.createRange();
      range.selectNodeContents(target);
      var selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      try { if (document.execCommand("copy")) { done(); } } catch (e) { /* selected: copy by hand */ }
    }
  });
  document.documentElement.setAttribute("data-filters", "ready");
})();
"##;

const STYLE: &str = r#"
:root { --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --bg2: #f6f8fa;
  --del: #ffebe9; --del-hl: #ffc1bc; --add: #dafbe1; --add-hl: #a6f0b5; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg);
  margin: 0 auto; padding: 1.2em 2em 4em; max-width: 1500px; }
h1 { font-size: 1.6em; margin: 0.2em 0 0.6em; }
h2 { font-size: 1.3em; border-bottom: 1px solid var(--line); padding-bottom: 0.2em; margin-top: 1.8em; }
h3 { font-size: 1.05em; margin: 1.4em 0 0.5em; }
table { border-collapse: collapse; }
th, td { border: 1px solid var(--line); padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: var(--bg2); }
td.num { text-align: right; }
code, pre, .diff td.text, .lines { font: 13px/1.4 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
.notice { border-left: 4px solid #0969da; background: #ddf4ff; padding: 0.5em 1em; }
.cut { border-left: 4px solid #9a6700; background: #fff8c5; padding: 0.5em 1em; }
.muted { color: var(--muted); }
#filters { position: sticky; top: 0; background: #fff; border-bottom: 1px solid var(--line);
  padding: 0.5em 0; z-index: 1; display: flex; gap: 1.2em; align-items: center; flex-wrap: wrap; }
#filters[hidden] { display: none; }
.change { border: 1px solid var(--line); border-radius: 6px; margin: 0.8em 0; padding: 0.5em 0.9em; }
.change > header { display: flex; gap: 0.6em; align-items: baseline; flex-wrap: wrap; }
.id { font-weight: 700; font-family: ui-monospace, Menlo, Consolas, monospace; }
.tag { border: 1px solid var(--line); border-radius: 1em; padding: 0 0.6em; font-size: 0.85em; background: var(--bg2); }
.st-applied { background: #dafbe1; } .st-flagged { background: #fff8c5; }
.st-reverted, .st-dismissed { background: #eaeef2; } .st-not-revertible { background: #ffebe9; }
.sev-error { background: #ffebe9; } .sev-warning { background: #fff8c5; } .attention { background: #fff8c5; }
.summary { margin: 0.3em 0; }
.notes { margin: 0.3em 0; padding-left: 1.2em; }
.why { margin: 0.3em 0; }
.callout { border-left: 4px solid #0969da; padding: 0.2em 0.9em; margin: 0.4em 0; }
.callout p { margin: 0.2em 0; }
.callout-title { font-weight: 600; }
.callout-note { border-color: #0969da; } .callout-note .callout-title { color: #0969da; }
.callout-tip { border-color: #1a7f37; } .callout-tip .callout-title { color: #1a7f37; }
.callout-important { border-color: #8250df; } .callout-important .callout-title { color: #8250df; }
.callout-warning { border-color: #9a6700; } .callout-warning .callout-title { color: #9a6700; }
.callout-caution { border-color: #d1242f; } .callout-caution .callout-title { color: #d1242f; }
.diff { width: 100%; table-layout: fixed; margin: 0.4em 0; }
.diff td { border: none; padding: 0 0.5em; }
.diff col.lnc { width: 3.5em; }
.diff td.ln { text-align: right; color: var(--muted); user-select: none; background: var(--bg2); }
.diff td.text { white-space: pre-wrap; overflow-wrap: anywhere; }
.diff th { font-weight: 600; }
.diff td.del { background: var(--del); } .diff td.add { background: var(--add); }
.diff td.del .hl { background: var(--del-hl); } .diff td.add .hl { background: var(--add-hl); }
.lines { white-space: pre-wrap; overflow-wrap: anywhere; background: #fff8c5; padding: 0.3em 0.5em; margin: 0.3em 0; }
.cmds { margin: 0.4em 0 0.2em; }
code.cmd { background: var(--bg2); border: 1px solid var(--line); border-radius: 4px; padding: 0.1em 0.4em;
  user-select: all; cursor: copy; }
code.cmd.copied { outline: 2px solid #1a7f37; }
.more td { text-align: center; color: var(--muted); font-style: italic; }
[hidden] { display: none !important; }
"#;

/// `sha256-<base64>` of a text, as a Content-Security-Policy source.
fn csp_hash(text: &str) -> String {
    format!("'sha256-{}'", base64(&Sha256::digest(text.as_bytes())))
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Cuts `text` at `max` characters.
fn clip(text: &str, max: usize) -> (&str, bool) {
    match text.char_indices().nth(max) {
        Some((at, _)) => (&text[..at], true),
        None => (text, false),
    }
}

/// A line without its terminator.
fn bare(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
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

/// One side-by-side row.
struct Row<'t> {
    old: Option<(usize, &'t str)>,
    new: Option<(usize, &'t str)>,
    changed: bool,
}

/// The rows of a unified diff, side by side: context on both sides,
/// removed lines paired with added lines in order.
fn diff_rows(patch: &crate::patch::Patch) -> Vec<Row<'_>> {
    let mut rows = Vec::new();
    for hunk in &patch.hunks {
        // A side with no line counts from the line before the hunk.
        let mut old_no = if hunk.old_count == 0 {
            hunk.old_start + 1
        } else {
            hunk.old_start
        };
        let mut new_no = if hunk.new_count == 0 {
            hunk.new_start + 1
        } else {
            hunk.new_start
        };
        let mut removed: Vec<(usize, &str)> = Vec::new();
        let mut added: Vec<(usize, &str)> = Vec::new();
        for line in &hunk.lines {
            match line {
                HunkLine::Remove(t) => {
                    removed.push((old_no, t.as_str()));
                    old_no += 1;
                }
                HunkLine::Add(t) => {
                    added.push((new_no, t.as_str()));
                    new_no += 1;
                }
                HunkLine::Context(t) => {
                    pair_into(&mut rows, &mut removed, &mut added);
                    rows.push(Row {
                        old: Some((old_no, t.as_str())),
                        new: Some((new_no, t.as_str())),
                        changed: false,
                    });
                    old_no += 1;
                    new_no += 1;
                }
            }
        }
        pair_into(&mut rows, &mut removed, &mut added);
    }
    rows
}

fn pair_into<'t>(
    rows: &mut Vec<Row<'t>>,
    removed: &mut Vec<(usize, &'t str)>,
    added: &mut Vec<(usize, &'t str)>,
) {
    let n = removed.len().max(added.len());
    for i in 0..n {
        rows.push(Row {
            old: removed.get(i).copied(),
            new: added.get(i).copied(),
            changed: true,
        });
    }
    removed.clear();
    added.clear();
}

/// The byte range of `a` and of `b` between their common prefix and
/// suffix, widened to whole words: what a paired line changed.
fn changed_span(a: &str, b: &str) -> ((usize, usize), (usize, usize)) {
    let mut prefix: usize = a
        .chars()
        .zip(b.chars())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x.len_utf8())
        .sum();
    let mut suffix: usize = a[prefix..]
        .chars()
        .rev()
        .zip(b[prefix..].chars().rev())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x.len_utf8())
        .sum();
    // The prefix and suffix are the same text in both lines, so widening
    // them in `a` widens them in `b`.
    while let Some(c) = a[..prefix]
        .chars()
        .next_back()
        .filter(|c| c.is_alphanumeric())
    {
        prefix -= c.len_utf8();
    }
    while let Some(c) = a[a.len() - suffix..]
        .chars()
        .next()
        .filter(|c| c.is_alphanumeric())
    {
        suffix -= c.len_utf8();
    }
    ((prefix, a.len() - suffix), (prefix, b.len() - suffix))
}

/// `a` and `b` as HTML text, each with the words it changed from the
/// other highlighted (`<span class="hl">`), as the report shows a changed
/// line: for other pages in the report's style.
pub fn highlighted_pair(a: &str, b: &str) -> (String, String) {
    let (in_a, in_b) = changed_span(a, b);
    let mut x = String::new();
    push_cell_text(&mut x, a, Some(in_a), usize::MAX);
    let mut y = String::new();
    push_cell_text(&mut y, b, Some(in_b), usize::MAX);
    (x, y)
}

/// Writes one diff cell's text, the changed span highlighted.
fn push_cell_text(out: &mut String, text: &str, span: Option<(usize, usize)>, max: usize) {
    let (shown, cut) = clip(text, max);
    match span {
        Some((from, to)) if from < to && to <= shown.len() && (from, to) != (0, shown.len()) => {
            push_escaped(out, &shown[..from]);
            out.push_str("<span class=\"hl\">");
            push_escaped(out, &shown[from..to]);
            out.push_str("</span>");
            push_escaped(out, &shown[to..]);
        }
        _ => push_escaped(out, shown),
    }
    if cut {
        out.push_str("<span class=\"muted\"> … (line cut)</span>");
    }
}

fn write_diff(out: &mut String, patch_text: &str, limits: &HtmlLimits, show_cmd: &str) -> bool {
    let Ok(patch) = parse_patch(patch_text) else {
        return false;
    };
    let rows = diff_rows(&patch);
    let _ = writeln!(
        out,
        "<table class=\"diff\"><colgroup><col class=\"lnc\"><col><col class=\"lnc\"><col></colgroup><tr><th colspan=\"2\">Before</th><th colspan=\"2\">After</th></tr>"
    );
    for row in rows.iter().take(limits.max_diff_rows) {
        out.push_str("<tr>");
        let spans = match (row.old, row.new) {
            (Some((_, a)), Some((_, b))) if row.changed => {
                let (x, y) = changed_span(bare(a), bare(b));
                (Some(x), Some(y))
            }
            _ => (None, None),
        };
        for (side, cell, span) in [("del", row.old, spans.0), ("add", row.new, spans.1)] {
            match cell {
                Some((no, text)) => {
                    let class = if row.changed { side } else { "ctx" };
                    let _ = write!(out, "<td class=\"ln\">{no}</td><td class=\"text {class}\">");
                    push_cell_text(out, bare(text), span, limits.max_line_chars);
                    out.push_str("</td>");
                }
                None => out.push_str("<td class=\"ln\"></td><td class=\"text\"></td>"),
            }
        }
        out.push_str("</tr>\n");
    }
    if rows.len() > limits.max_diff_rows {
        let _ = writeln!(
            out,
            "<tr class=\"more\"><td colspan=\"4\">… {} more row(s): <code class=\"cmd\">{}</code> prints the whole patch</td></tr>",
            rows.len() - limits.max_diff_rows,
            escape(show_cmd)
        );
    }
    let _ = writeln!(out, "</table>");
    true
}

/// A note's text without its `REVIEWER: RVW-NNNN — ` lead: the card
/// already names the change.
fn note_body<'t>(text: &'t str, id: &str) -> &'t str {
    let Some(rest) = text.trim_start().strip_prefix("REVIEWER:") else {
        return text.trim();
    };
    let rest = rest.trim_start();
    let rest = rest.strip_prefix(id).unwrap_or(rest).trim_start();
    rest.strip_prefix('—')
        .or_else(|| rest.strip_prefix("--"))
        .or_else(|| rest.strip_prefix('-'))
        .unwrap_or(rest)
        .trim()
}

/// Text reduced for "does this say the same?": lower case, single spaces,
/// no final full stop.
fn gist(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    words
        .join(" ")
        .trim_end_matches(['.', '!', ' '])
        .to_lowercase()
}

/// True when `text` adds nothing to what was already said.
fn said(already: &[String], text: &str) -> bool {
    let g = gist(text);
    g.is_empty() || already.iter().any(|a| a.contains(&g))
}

/// Why a change was made and why it needs a look, each explanation once:
/// its review note as a callout (the annotated document shows the same
/// note), its rationale when the note does not already say it, what the
/// guards saw when neither does, and its summary when nothing else
/// explains it. With `details`, the guards and normalizations by name.
fn explanation(entry: &LedgerEntry, reasons: &[(&str, &str)], details: bool) -> String {
    let mut out = String::new();
    let mut already: Vec<String> = Vec::new();
    let id = entry.id.to_string();
    if let Some(note) = &entry.review_note {
        let body = note_body(&note.text, &id);
        if !body.is_empty() {
            let alert = note.alert.as_str();
            let mut title = alert.to_lowercase();
            title[..1].make_ascii_uppercase();
            let _ = writeln!(
                out,
                "<div class=\"callout callout-{}\"><p class=\"callout-title\">{title}</p><p>{}</p></div>",
                alert.to_lowercase(),
                escape(body)
            );
            already.push(gist(body));
        }
    }
    if !said(&already, &entry.rationale) {
        let _ = writeln!(out, "<p class=\"why\">{}</p>", escape(&entry.rationale));
        already.push(gist(&entry.rationale));
    }
    let mut guards = Vec::new();
    for fix in entry.fixes.iter().filter(|f| f.ends_with("_GUARD")) {
        let why: Vec<&str> = reasons
            .iter()
            .filter(|(name, _)| name == fix)
            .map(|(_, why)| *why)
            .collect();
        if details {
            guards.push(format!(
                "<code>{}</code>: {}{}",
                escape(fix),
                escape(guard_effect(fix)),
                if why.is_empty() {
                    String::new()
                } else {
                    format!(" — {}", escape(&why.join("; ")))
                }
            ));
            continue;
        }
        let fresh: Vec<&str> = why.into_iter().filter(|w| !said(&already, w)).collect();
        if !fresh.is_empty() {
            guards.push(escape(&fresh.join("; ")));
            already.extend(fresh.iter().map(|w| gist(w)));
        } else if entry.review_note.is_none() {
            // Nothing on the card says why it was held: the guard's
            // effect, in words.
            guards.push(escape(guard_effect(fix)));
        }
    }
    if details && entry.action == Action::Delete && !entry.is_revert {
        guards.push(format!(
            "<code>{}</code>: {}",
            crate::report::DELETION_CAUTION,
            escape(guard_effect(crate::report::DELETION_CAUTION))
        ));
    }
    let others: Vec<&str> = entry
        .fixes
        .iter()
        .map(String::as_str)
        .filter(|f| !f.ends_with("_GUARD"))
        .collect();
    if details && !others.is_empty() {
        guards.push(format!(
            "<span class=\"muted\">normalization: {}</span>",
            escape(&others.join(", "))
        ));
    }
    if !guards.is_empty() {
        let _ = writeln!(out, "<ul class=\"notes\">");
        for g in guards {
            let _ = writeln!(out, "<li>{g}</li>");
        }
        let _ = writeln!(out, "</ul>");
    }
    if out.is_empty() || details {
        // Nothing else explains the change (or every detail was asked
        // for): its one-line summary.
        let _ = writeln!(out, "<p class=\"summary\">{}</p>", escape(&entry.summary));
    }
    out
}

/// What undoes a change: its revert command, or why there is none.
fn undo_html(st: Status, revert_cmd: &str) -> String {
    match st {
        Status::Applied => format!(
            "Revert: <code class=\"cmd\">{}</code>",
            escape(revert_cmd)
        ),
        Status::NotRevertible(by) => format!(
            "Not revertible on its own: its lines were edited outside koas afterwards (<a href=\"#{by}\">{by}</a>); its inverse patch no longer applies."
        ),
        Status::Reverted(by) => format!("Reverted by {by}."),
        Status::Dismissed(by) => format!("Dismissed by {by}."),
        Status::Flagged => format!(
            "A flag: it changed nothing. Once looked at, dismiss it: <code class=\"cmd\">{}</code>",
            escape(&revert_cmd.replacen("koas revert ", "koas dismiss ", 1))
        ),
    }
}

/// Renders the page.
pub fn render_html(input: HtmlInput<'_>) -> String {
    let report = input.report;
    let entries = report.entries;
    let lookup = SectionLookup::new(report.sections);
    let status = statuses(entries, input.not_revertible);
    let current = current_lines(entries);
    let resolved = resolved_findings(entries, report.earlier_findings, report.findings);
    let groups = crate::report::changes_by_section(entries, &current, &lookup);
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

/// What the last run's content guards saw, by change.
fn guard_reasons(apply_log: &[ApplyLogRecord]) -> HashMap<ChangeId, Vec<(&str, &str)>> {
    let mut reasons: HashMap<ChangeId, Vec<(&str, &str)>> = HashMap::new();
    for record in apply_log {
        let (Some(id), false) = (record.id, record.status == OpStatus::Rejected) else {
            continue;
        };
        for fix in &record.fixes {
            if let Fix::ContentGuard { reason, .. } = fix {
                reasons
                    .entry(id)
                    .or_default()
                    .push((fix.name(), reason.as_str()));
            }
        }
    }
    reasons
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

/// What the changes' part of the page needs.
struct ChangePage<'p> {
    entries: &'p [LedgerEntry],
    status: &'p [Option<Status>],
    /// Where each change is now (1-based line), if anywhere.
    current: &'p [Option<usize>],
    /// The current document's lines, with terminators.
    doc_lines: Vec<&'p str>,
    reasons: HashMap<ChangeId, Vec<(&'p str, &'p str)>>,
    limits: HtmlLimits,
    /// DOC as a shell word.
    doc: String,
    /// ` -w WORKSPACE` when one was given.
    tail: String,
    /// Show the internals too (see [`HtmlInput::details`]).
    details: bool,
}

/// "Changes by section": the first `max_diffs` changes in full, the
/// others one row each.
fn write_changes(
    out: &mut String,
    page: &ChangePage<'_>,
    groups: &[(Option<&SectionEntry>, Vec<usize>)],
    changes: usize,
) {
    let limits = &page.limits;
    let _ = writeln!(out, "<section id=\"changes\"><h2>Changes by section</h2>");
    if changes > limits.max_diffs {
        let _ = writeln!(
            out,
            "<p class=\"cut\">{changes} changes: the first {} (in page order) are shown in full with their diff; every change is listed, the others on one row each, and <code>{}</code> prints any change's details and patch.</p>",
            limits.max_diffs,
            escape(&format!("koas show {} RVW-NNNN --patch{}", page.doc, page.tail))
        );
    }
    if groups.is_empty() {
        let _ = writeln!(out, "<p>No changes.</p>");
    }
    // Changes shown in full (with their diff); the others get one row.
    let mut full = 0usize;
    for (section, list) in groups {
        let _ = writeln!(out, "<div class=\"group\">");
        match section {
            Some(s) => {
                let _ = writeln!(
                    out,
                    "<h3>{}{} <span class=\"muted\">(lines {}–{})</span></h3>",
                    section_id(s, page.details),
                    escape(&s.title),
                    s.line_start,
                    s.line_end
                );
            }
            None => {
                let _ = writeln!(out, "<h3>(outside any section)</h3>");
            }
        }
        let mut compact = Vec::new();
        for &index in list {
            let Some(st) = page.status[index] else {
                continue;
            };
            if full >= limits.max_diffs {
                compact.push((index, st));
                continue;
            }
            full += 1;
            write_change(out, page, index, st);
        }
        if !compact.is_empty() {
            write_compact(out, page.entries, &compact, &page.doc, &page.tail);
        }
        let _ = writeln!(out, "</div>");
    }
    let _ = writeln!(out, "</section>");
}

/// One change in full: its tags, summary, guard notes, diff and commands.
fn write_change(out: &mut String, page: &ChangePage<'_>, index: usize, st: Status) {
    let entry = &page.entries[index];
    let (doc, tail) = (&page.doc, &page.tail);
    let id = entry.id.to_string();
    let show_cmd = format!("koas show {doc} {id} --patch{tail}");
    let severity = escape(severity_word(&entry.severity));
    let _ = writeln!(
        out,
        "<article class=\"change\" id=\"{id}\" data-kind=\"{}\" data-severity=\"{severity}\" data-status=\"{}\">",
        escape(&entry.kind),
        st.key()
    );
    let _ = writeln!(
        out,
        "<header><span class=\"id\">{id}</span><span class=\"tag\">{}</span><span class=\"tag\">kind: {}</span><span class=\"tag sev-{severity}\">{severity}{}</span><span class=\"tag st-{}\">{}</span>{}{}</header>",
        entry.action,
        escape(&entry.kind),
        if page.details && *severity != *entry.severity {
            format!(" (ledger: {})", escape(&entry.severity))
        } else {
            String::new()
        },
        st.key(),
        escape(&st.label()),
        if entry.needs_attention { "<span class=\"tag attention\">needs attention</span>" } else { "" },
        match page.current[index] {
            Some(line) => format!("<span class=\"muted\">now at line {line}</span>"),
            None => String::new(),
        }
    );
    out.push_str(&explanation(
        entry,
        entry
            .change_id()
            .and_then(|c| page.reasons.get(&c))
            .map_or(&[], Vec::as_slice),
        page.details,
    ));
    write_change_lines(out, page, index, &show_cmd);
    let _ = write!(
        out,
        "<p class=\"cmds\">{}",
        undo_html(st, &format!("koas revert {doc} {id}{tail}"))
    );
    let _ = writeln!(
        out,
        " Details: <code class=\"cmd\">{}</code></p>\n</article>",
        escape(&show_cmd)
    );
}

/// A change's diff, or for a flag the lines it flags as they are now.
fn write_change_lines(out: &mut String, page: &ChangePage<'_>, index: usize, show_cmd: &str) {
    let entry = &page.entries[index];
    let limits = &page.limits;
    match (&entry.patch_text, entry.change) {
        (Some(patch), _) if entry.action != Action::FlagOnly => {
            if !write_diff(out, &patch.forward, limits, show_cmd) {
                let _ = writeln!(out, "<p class=\"muted\">The patch could not be read; <code class=\"cmd\">{}</code> prints it.</p>", escape(show_cmd));
            }
        }
        (_, Some(change)) if entry.action == Action::FlagOnly => {
            // A flag changes nothing: show the lines it flags,
            // where they are now.
            let first = page.current[index].unwrap_or(change.at).max(1);
            let last = first + change.removed.max(1) - 1;
            let shown: Vec<&str> = page
                .doc_lines
                .iter()
                .skip(first - 1)
                .take((last - first + 1).min(limits.max_diff_rows))
                .copied()
                .collect();
            if !shown.is_empty() {
                let _ = write!(
                    out,
                    "<p class=\"muted\">Flagged line(s) {}, current document:</p><div class=\"lines\">",
                    lines_label(first as u32, last as u32)
                );
                for line in shown {
                    let (text, cut) = clip(bare(line), limits.max_line_chars);
                    push_escaped(out, text);
                    if cut {
                        out.push_str(" …");
                    }
                    out.push('\n');
                }
                let _ = writeln!(out, "</div>");
            }
        }
        _ if entry.patch_forward.is_empty() => {}
        _ => {
            let _ = writeln!(out, "<p class=\"muted\">No patch text in the ledger; <code class=\"cmd\">{}</code> prints it.</p>", escape(show_cmd));
        }
    }
}

/// Changes past the diff limit: one row each, with their commands.
fn write_compact(
    out: &mut String,
    entries: &[LedgerEntry],
    rows: &[(usize, Status)],
    doc: &str,
    tail: &str,
) {
    let _ = writeln!(
        out,
        "<table class=\"compact\"><tr><th>ID</th><th>Action</th><th>Kind</th><th>Severity</th><th>Status</th><th>Summary</th><th>Undo</th></tr>"
    );
    for &(index, st) in rows {
        let e = &entries[index];
        let id = e.id.to_string();
        let _ = writeln!(
            out,
            "<tr id=\"{id}\" data-kind=\"{kind}\" data-severity=\"{sev}\" data-status=\"{}\"><td class=\"id\">{id}</td><td>{}</td><td>{kind}</td><td>{sev}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            st.key(),
            e.action,
            escape(&st.label()),
            escape(&e.summary),
            undo_html(st, &format!("koas revert {doc} {id}{tail}")),
            kind = escape(&e.kind),
            sev = escape(severity_word(&e.severity)),
        );
    }
    let _ = writeln!(out, "</table>");
}

/// One finding's row; its kernel's name only with `details`.
fn finding_row(out: &mut String, f: &Finding, details: bool, extra: &str) {
    let severity = f.severity.as_str();
    let _ = writeln!(
        out,
        "<tr data-kind=\"{}\" data-severity=\"{severity}\"><td>{}</td><td>{}</td><td><span class=\"tag sev-{severity}\">{severity}</span></td><td>{}</td>{}{extra}</tr>",
        f.kind.as_str(),
        lines_label(f.line, f.line_end),
        f.kind.as_str(),
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
fn section_id(s: &SectionEntry, details: bool) -> String {
    if details {
        format!("<span class=\"muted\">{}</span> ", escape(&s.id))
    } else {
        String::new()
    }
}

/// The `Kernel` header cell, only with `details`.
fn kernel_th(details: bool) -> &'static str {
    if details {
        "<th>Kernel</th>"
    } else {
        ""
    }
}

fn write_findings(out: &mut String, input: &HtmlInput<'_>, lookup: &SectionLookup<'_>) {
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
    let mut grouped = crate::report::Grouped::new();
    for f in sorted {
        grouped.push(lookup.get(f.line as usize), f);
    }
    for (section, list) in grouped.sorted() {
        let _ = writeln!(out, "<div class=\"group\">");
        match section {
            Some(s) => {
                let _ = writeln!(
                    out,
                    "<h3>{}{}</h3>",
                    section_id(s, input.details),
                    escape(&s.title)
                );
            }
            None => {
                let _ = writeln!(out, "<h3>(outside any section)</h3>");
            }
        }
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
fn write_kernel_findings(out: &mut String, input: &HtmlInput<'_>) {
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

fn write_resolved(
    out: &mut String,
    input: &HtmlInput<'_>,
    resolved: &[crate::report::Resolved<'_>],
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

fn write_reverts(out: &mut String, entries: &[LedgerEntry]) {
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

fn write_rejected(out: &mut String, input: &HtmlInput<'_>) {
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

#[cfg(test)]
mod tests;
