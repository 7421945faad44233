//! "Changes by section": each change in full (why, once; its diff; its
//! commands) or on one row.

use super::*;

/// A note's text without its `REVIEWER: RVW-NNNN — ` lead: the card
/// already names the change.
pub(super) fn note_body<'t>(text: &'t str, id: &str) -> &'t str {
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
pub(super) fn gist(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    words
        .join(" ")
        .trim_end_matches(['.', '!', ' '])
        .to_lowercase()
}

/// True when `text` adds nothing to what was already said.
pub(super) fn said(already: &[String], text: &str) -> bool {
    let g = gist(text);
    g.is_empty() || already.iter().any(|a| a.contains(&g))
}

/// Why a change was made and why it needs a look, each explanation once:
/// its review note as a callout (the annotated document shows the same
/// note), its rationale when the note does not already say it, what the
/// guards saw when neither does, and its summary when nothing else
/// explains it. With `details`, the guards and normalizations by name.
pub(super) fn explanation(entry: &LedgerEntry, reasons: &[(&str, &str)], details: bool) -> String {
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
            crate::markdown::DELETION_CAUTION,
            escape(guard_effect(crate::markdown::DELETION_CAUTION))
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
pub(super) fn undo_html(st: Status, revert_cmd: &str) -> String {
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

/// What the last run's content guards saw, by change.
pub(super) fn guard_reasons(apply_log: &[ApplyLogRecord]) -> HashMap<ChangeId, Vec<(&str, &str)>> {
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

/// What the changes' part of the page needs.
pub(super) struct ChangePage<'p> {
    pub(super) entries: &'p [LedgerEntry],
    pub(super) status: &'p [Option<Status>],
    /// Where each change is now (1-based line), if anywhere.
    pub(super) current: &'p [Option<usize>],
    /// The current document's lines, with terminators.
    pub(super) doc_lines: Vec<&'p str>,
    pub(super) reasons: HashMap<ChangeId, Vec<(&'p str, &'p str)>>,
    pub(super) limits: HtmlLimits,
    /// DOC as a shell word.
    pub(super) doc: String,
    /// ` -w WORKSPACE` when one was given.
    pub(super) tail: String,
    /// Show the internals too (see [`HtmlInput::details`]).
    pub(super) details: bool,
}

/// "Changes by section": the first `max_diffs` changes in full, the
/// others one row each.
pub(super) fn write_changes(
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
        group_heading(out, *section, page.details, true);
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
pub(super) fn write_change(out: &mut String, page: &ChangePage<'_>, index: usize, st: Status) {
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
pub(super) fn write_change_lines(
    out: &mut String,
    page: &ChangePage<'_>,
    index: usize,
    show_cmd: &str,
) {
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
pub(super) fn write_compact(
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
