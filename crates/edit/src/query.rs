//! Reading the ledger for people: counts, `grep` filters, `show` details.

use std::fmt::Write as _;

use regex::Regex;
use serde::{Deserialize, Serialize};

use koas_review_schema::change_id::{ChangeId, EntryId};
use koas_review_schema::edit_op::Action;
use koas_review_schema::findings::Severity;
use koas_review_schema::ledger::LedgerEntry;

/// Tallies over a ledger, for the report's counts and `koas status`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Changes that modified the document (flags and reverts excluded).
    pub total_changes: usize,
    /// Of those, changes that need attention.
    pub attention: usize,
    /// Of those, deletions.
    pub deletions: usize,
    /// Of those, silent changes.
    pub silent: usize,
    /// Flags (flag_only entries).
    pub flags: usize,
    /// Revert entries (`REVERT-RVW-NNNN`) of changes.
    pub reverts: usize,
    /// Flags dismissed (`koas dismiss`).
    #[serde(default)]
    pub dismissed: usize,
    /// Changes not reverted.
    pub active_changes: usize,
    /// Changes and flags: what the report lists and its filter counts.
    #[serde(default)]
    pub entries: usize,
    /// Changes and flags that need attention and are still open (a change
    /// not reverted, a flag not dismissed): the alert notes the annotated
    /// document holds.
    #[serde(default)]
    pub need_attention: usize,
}

impl Counts {
    /// The one sentence every view says of these counts: "8 changes and
    /// flags (7 changes, 1 flag); 6 need attention; 1 reverted".
    pub fn sentence(&self) -> String {
        let plural =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let changes = plural(self.total_changes, "change", "changes");
        let flags = plural(self.flags, "flag", "flags");
        let mut out = match (self.total_changes, self.flags) {
            (_, 0) => changes,
            (0, _) => flags,
            _ => format!("{} changes and flags ({changes}, {flags})", self.entries),
        };
        out.push_str(&format!(
            "; {} need{} attention",
            self.need_attention,
            if self.need_attention == 1 { "s" } else { "" }
        ));
        if self.reverts > 0 {
            out.push_str(&format!("; {} reverted", self.reverts));
        }
        if self.dismissed > 0 {
            out.push_str(&format!("; {} dismissed", self.dismissed));
        }
        out
    }
}

/// True for the entry that dismisses a flag: the `REVERT-RVW-NNNN` entry
/// of a `flag_only` change (written by `koas dismiss`).
pub fn is_dismissal(entry: &LedgerEntry) -> bool {
    entry.is_revert && entry.action == Action::FlagOnly
}

/// The changes a ledger's `REVERT-` entries undo (reverted changes and
/// dismissed flags alike).
pub fn undone_ids(entries: &[LedgerEntry]) -> std::collections::HashSet<ChangeId> {
    entries
        .iter()
        .filter_map(|e| match e.id {
            EntryId::Revert(id) => Some(id),
            EntryId::Change(_) => None,
        })
        .collect()
}

/// The flags a ledger dismisses.
pub fn dismissed_ids(entries: &[LedgerEntry]) -> std::collections::BTreeSet<ChangeId> {
    entries
        .iter()
        .filter(|e| is_dismissal(e))
        .filter_map(|e| match e.id {
            EntryId::Revert(id) => Some(id),
            EntryId::Change(_) => None,
        })
        .collect()
}

/// Counts the entries of a ledger.
pub fn count(entries: &[LedgerEntry]) -> Counts {
    let mut counts = Counts::default();
    let reverted = undone_ids(entries);
    for entry in entries {
        match entry.id {
            EntryId::Revert(_) if is_dismissal(entry) => counts.dismissed += 1,
            EntryId::Revert(_) => counts.reverts += 1,
            EntryId::Change(id) => {
                counts.entries += 1;
                let open = !reverted.contains(&id);
                counts.need_attention += usize::from(entry.needs_attention && open);
                if entry.action == Action::FlagOnly {
                    counts.flags += 1;
                    continue;
                }
                counts.total_changes += 1;
                counts.attention += usize::from(entry.needs_attention);
                counts.deletions += usize::from(entry.action == Action::Delete);
                counts.silent += usize::from(entry.silent);
                if !reverted.contains(&id) {
                    counts.active_changes += 1;
                }
            }
        }
    }
    counts
}

/// The filters of `koas grep`; a `None` filter lets every entry through.
#[derive(Debug, Clone, Default)]
pub struct GrepFilter {
    /// Regex matched against the ID, the summary and the rationale.
    pub pattern: Option<Regex>,
    /// Only entries of this kind (compared ignoring ASCII case).
    pub kind: Option<String>,
    /// Only entries of this severity (compared ignoring ASCII case).
    pub severity: Option<String>,
    /// Silent (true) or not (false).
    pub silent: Option<bool>,
    /// Reverts only (true) or non-reverts only (false).
    pub reverts: Option<bool>,
}

impl GrepFilter {
    /// Builds a filter; fails on an invalid regex.
    pub fn new(
        pattern: Option<&str>,
        kind: Option<&str>,
        severity: Option<&str>,
        silent: Option<bool>,
        reverts: Option<bool>,
    ) -> Result<Self, regex::Error> {
        Ok(GrepFilter {
            pattern: pattern.map(Regex::new).transpose()?,
            kind: kind.map(str::to_owned),
            severity: severity.map(str::to_owned),
            silent,
            reverts,
        })
    }

    /// True when `entry` passes every filter.
    pub fn matches(&self, entry: &LedgerEntry) -> bool {
        let pattern_ok = self.pattern.as_ref().map_or(true, |re| {
            re.is_match(&entry.id.to_string())
                || re.is_match(&entry.summary)
                || re.is_match(&entry.rationale)
        });
        pattern_ok
            && self
                .kind
                .as_ref()
                .map_or(true, |k| k.eq_ignore_ascii_case(&entry.kind))
            && self
                .severity
                .as_ref()
                .map_or(true, |s| severity_matches(s, &entry.severity))
            && self.silent.map_or(true, |s| s == entry.silent)
            && self.reverts.map_or(true, |r| r == entry.is_revert)
    }
}

/// The review severities (ledger, report, `koas grep`), lowest first.
pub const REVIEW_SEVERITIES: [&str; 4] = ["minor", "attention", "deletion", "critical"];

/// The word a reader sees for a ledger severity: the word `koas check`
/// and the editor use for the same level (`critical` → `error`,
/// `attention` and `deletion` → `warning`, `minor` → `info`), so a report
/// and the editor name one level alike. The ledger keeps its own words
/// (and `koas grep -s` takes both); a word of neither set is shown as
/// written.
pub fn severity_word(review: &str) -> &str {
    match Severity::parse_any(review) {
        Some(level) => level.as_str(),
        None => review,
    }
}

/// True when a ledger entry of severity `entry` passes the severity
/// filter `wanted`. A review word (`minor`, `attention`, `deletion`,
/// `critical`) matches itself; a finding word (`info`, `warning`,
/// `error`, as `koas check` prints them) matches the review severities
/// of its level (`warning`: `attention` and `deletion`). Case is ignored.
pub fn severity_matches(wanted: &str, entry: &str) -> bool {
    let wanted = wanted.trim();
    if REVIEW_SEVERITIES
        .iter()
        .any(|r| r.eq_ignore_ascii_case(wanted))
        || Severity::parse_any(wanted).is_none()
    {
        return wanted.eq_ignore_ascii_case(entry);
    }
    Severity::parse_any(wanted) == Severity::parse_any(entry)
}

/// Entries passing `filter`, in ledger order.
pub fn grep<'a>(entries: &'a [LedgerEntry], filter: &GrepFilter) -> Vec<&'a LedgerEntry> {
    entries.iter().filter(|e| filter.matches(e)).collect()
}

/// One line per entry, for `grep` output.
pub fn render_line(entry: &LedgerEntry) -> String {
    let flags = match (entry.is_revert, entry.silent, entry.needs_attention) {
        (true, _, _) => "revert",
        (_, true, _) => "silent",
        (_, _, true) => "attention",
        _ => "-",
    };
    format!(
        "{}  {}  {:<9} {:<14} {:<9} {:<9} {}",
        entry.id, entry.timestamp, entry.action, entry.kind, entry.severity, flags, entry.summary
    )
}

/// The `koas grep` table: a header, then one line per entry in aligned
/// columns (ID, time, action, kind, severity, tier, summary); `status`
/// gives an entry's state when it is not simply recorded (e.g.
/// `dismissed`), shown in the tier column.
pub fn render_table(
    entries: &[&LedgerEntry],
    status: impl Fn(&LedgerEntry) -> Option<String>,
) -> String {
    let header = [
        "ID", "TIME", "ACTION", "KIND", "SEVERITY", "TIER", "SUMMARY",
    ]
    .map(String::from);
    let rows: Vec<[String; 7]> = entries
        .iter()
        .map(|entry| {
            let tier = match (entry.is_revert, entry.silent, entry.needs_attention) {
                (true, _, _) => "revert",
                (_, true, _) => "silent",
                (_, _, true) => "attention",
                _ => "-",
            };
            let tier = match status(entry) {
                Some(state) => format!("{tier},{state}"),
                None => tier.to_owned(),
            };
            [
                entry.id.to_string(),
                entry.timestamp.clone(),
                entry.action.to_string(),
                entry.kind.clone(),
                entry.severity.clone(),
                tier,
                entry.summary.clone(),
            ]
        })
        .collect();
    let mut widths = header.clone().map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let line = row
            .iter()
            .zip(widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect::<Vec<_>>()
            .join("  ");
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

/// The details `show` prints: ID, timestamp, kind, severity, silent flag,
/// rationale, scope, hashes, and the forward patch when given.
pub fn render_details(
    entry: &LedgerEntry,
    reverted_by: Option<&LedgerEntry>,
    patch: Option<&str>,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "ID:          {}", entry.id);
    let _ = writeln!(out, "Timestamp:   {}", entry.timestamp);
    let _ = writeln!(out, "Document:    {}", entry.doc);
    let _ = writeln!(out, "Action:      {}", entry.action);
    let _ = writeln!(out, "Kind:        {}", entry.kind);
    let _ = writeln!(out, "Severity:    {}", entry.severity);
    let _ = writeln!(out, "Silent:      {}", entry.silent);
    let _ = writeln!(out, "Attention:   {}", entry.needs_attention);
    if let Some(change) = entry.change {
        let _ = writeln!(
            out,
            "Lines:       at line {} ({} removed, {} added)",
            change.at, change.removed, change.added
        );
    }
    if !entry.scope.anchor.is_empty() || !entry.scope.node_path.is_empty() {
        let _ = writeln!(
            out,
            "Scope:       {} {}",
            entry.scope.anchor, entry.scope.node_path
        );
    }
    let _ = writeln!(out, "Summary:     {}", entry.summary);
    if !entry.rationale.is_empty() {
        let _ = writeln!(out, "Rationale:   {}", entry.rationale);
    }
    if let Some(note) = &entry.review_note {
        let _ = writeln!(out, "Note:        [!{}] {}", note.alert, note.text);
    }
    let _ = writeln!(out, "Hash before: {}", entry.doc_hash_before);
    let _ = writeln!(out, "Hash after:  {}", entry.doc_hash_after);
    if !entry.patch_forward.is_empty() {
        let _ = writeln!(
            out,
            "Patches:     {} / {}",
            entry.patch_forward, entry.patch_inverse
        );
    }
    if entry.is_revert {
        let _ = writeln!(out, "Reverts:     {}", entry.reverted_id);
    }
    if let Some(by) = reverted_by {
        let _ = writeln!(out, "Reverted by: {} at {}", by.id, by.timestamp);
    }
    if let Some(source) = &entry.source_id {
        let _ = writeln!(
            out,
            "Source ID:   {source} (as given in the ops input; not trusted)"
        );
    }
    if !entry.fixes.is_empty() {
        let _ = writeln!(out, "Fixes:       {}", entry.fixes.join(", "));
    }
    if let Some(patch) = patch {
        let _ = writeln!(out);
        out.push_str(patch);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SteppingClock;
    use crate::session::MemorySession;
    use koas_review_schema::apply::ApplyOptions;
    use koas_review_schema::change_id::ChangeId;
    use koas_review_schema::ledger::Actor;
    use koas_review_schema::stage1::ProtectedSpans;
    use serde_json::json;

    #[test]
    fn reverted_changes_name_what_the_reverted_change_did() {
        let s = session();
        let from_entries = crate::known::ledger_effects(&s.entries, |_| None).reverted;
        assert_eq!(from_entries.len(), 1, "{from_entries:?}");
        assert_eq!(from_entries[0].id, ChangeId::first());
        assert_eq!(from_entries[0].old, vec!["alpha\n".to_owned()]);
        assert_eq!(from_entries[0].new, vec!["Alpha\n".to_owned()]);
        // An older ledger without the patch text: the patch file is read.
        let mut entries = s.entries.clone();
        for e in &mut entries {
            e.patch_text = None;
        }
        let from_files =
            crate::known::ledger_effects(&entries, |p| s.patches.get(p).cloned()).reverted;
        assert_eq!(from_files, from_entries);
        assert!(crate::known::ledger_effects(&entries, |_| None)
            .reverted
            .is_empty());
    }

    fn session() -> MemorySession {
        let mut s = MemorySession::new("d.md", "alpha\n\nbeta bandwith\n\ngamma\n\ndelta\n");
        let actor = Actor {
            tool: "t".into(),
            operator: "o".into(),
        };
        let clock = SteppingClock::new("2026-01-01T00:00:00Z");
        let ops = [
            json!({"action": "replace", "kind": "typo", "target": {"line_start": 1}, "after_text": "Alpha"}),
            json!({"action": "replace", "kind": "terminology", "severity": "attention",
                   "target": {"line_start": 3}, "before_text": "bandwith", "after_text": "throughput",
                   "rationale": "bandwidth means something else"}),
            json!({"action": "delete", "target": {"line_start": 5}}),
            json!({"action": "flag_only", "target": {"line_start": 7}, "rationale": "unclear"}),
        ];
        s.apply(
            &ops,
            &ProtectedSpans::default(),
            &{
                // Synthetic edits a content guard would flag; the counts
                // are what is tested here.
                let mut o = ApplyOptions::default();
                o.normalize.content_guards = false;
                o
            },
            &actor,
            &clock,
            "r",
        )
        .unwrap();
        s.revert(&[ChangeId::first()], "", &actor, &clock, "r2")
            .unwrap();
        s
    }

    #[test]
    fn counts_tally_each_category() {
        let counts = count(&session().entries);
        assert_eq!(
            counts,
            Counts {
                total_changes: 3,
                attention: 2,
                deletions: 1,
                silent: 1,
                flags: 1,
                reverts: 1,
                dismissed: 0,
                active_changes: 2,
                entries: 4,
                need_attention: 3,
            }
        );
        assert_eq!(
            counts.sentence(),
            "4 changes and flags (3 changes, 1 flag); 3 need attention; 1 reverted"
        );
        let one = Counts {
            total_changes: 1,
            entries: 1,
            need_attention: 1,
            ..Counts::default()
        };
        assert_eq!(one.sentence(), "1 change; 1 needs attention");
    }

    #[test]
    fn grep_filters_combine() {
        let s = session();
        let ids = |f: GrepFilter| -> Vec<String> {
            grep(&s.entries, &f)
                .iter()
                .map(|e| e.id.to_string())
                .collect()
        };
        assert_eq!(
            ids(GrepFilter::new(None, None, Some("attention"), None, None).unwrap()),
            vec!["RVW-0002"]
        );
        assert_eq!(
            ids(GrepFilter::new(None, Some("typo"), None, None, Some(false)).unwrap()),
            vec!["RVW-0001"]
        );
        assert_eq!(
            ids(GrepFilter::new(None, None, None, None, Some(true)).unwrap()),
            vec!["REVERT-RVW-0001"]
        );
        assert_eq!(
            ids(GrepFilter::new(Some("bandwi"), None, None, None, None).unwrap()),
            vec!["RVW-0002"]
        );
        assert_eq!(
            ids(GrepFilter::new(None, None, None, Some(true), Some(false)).unwrap()),
            vec!["RVW-0001"]
        );
        assert!(GrepFilter::new(Some("("), None, None, None, None).is_err());
        // The finding vocabulary of `koas check` filters too.
        assert_eq!(
            ids(GrepFilter::new(None, None, Some("WARNING"), None, None).unwrap()),
            vec!["RVW-0002", "RVW-0003"]
        );
        assert_eq!(
            ids(GrepFilter::new(None, None, Some("info"), None, Some(false)).unwrap()),
            vec!["RVW-0001", "RVW-0004"]
        );
    }

    #[test]
    fn severity_words_of_both_vocabularies_match_their_level() {
        assert_eq!(severity_word("critical"), "error");
        assert_eq!(severity_word("Attention"), "warning");
        assert_eq!(severity_word("deletion"), "warning");
        assert_eq!(severity_word("minor"), "info");
        assert_eq!(severity_word("blocker"), "blocker");
        assert!(severity_matches("critical", "critical"));
        assert!(severity_matches("error", "critical"));
        assert!(severity_matches("warning", "deletion"));
        assert!(!severity_matches("attention", "deletion"));
        assert!(!severity_matches("info", "attention"));
        assert!(severity_matches("custom", "CUSTOM"));
    }

    #[test]
    fn the_grep_table_has_a_header_and_aligned_columns() {
        let s = session();
        let entries: Vec<&LedgerEntry> = s.entries.iter().collect();
        let text = render_table(&entries, |e| {
            (e.action == Action::FlagOnly).then(|| "dismissed".to_owned())
        });
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("ID "), "{text}");
        let column = |l: &str| l.find("2026-").expect("time column");
        assert_eq!(lines[0].find("TIME"), Some(column(lines[1])));
        assert!(
            lines.iter().skip(1).all(|l| column(l) == column(lines[1])),
            "{text}"
        );
        assert!(text.contains("attention,dismissed"), "{text}");
    }

    #[test]
    fn show_lists_the_fields_and_the_patch() {
        let s = session();
        let entry = &s.entries[0];
        let text = render_details(entry, s.entries.last(), Some("--- a/d.md\n"));
        for needle in [
            "ID:          RVW-0001",
            "Kind:        typo",
            "Silent:      true",
            "Hash before: sha256:",
            "Reverted by: REVERT-RVW-0001",
            "--- a/d.md",
        ] {
            assert!(text.contains(needle), "missing {needle} in\n{text}");
        }
        assert!(render_line(entry).starts_with("RVW-0001  2026-01-01T00:00:00.000000+00:00"));
    }
}
