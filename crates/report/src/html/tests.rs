use super::*;
use koas_edit::clock::SteppingClock;
use koas_edit::session::MemorySession;
use koas_review_schema::apply::ApplyOptions;
use koas_review_schema::ledger::Actor;
use koas_review_schema::review::ReportMeta;
use koas_review_schema::stage1::ProtectedSpans;
use serde_json::json;

const HOSTILE_SCRIPT: &str = "</script><script>alert(1)</script>";
const HOSTILE_IMG: &str = "<img src=x onerror=alert(2)>";

fn meta() -> ReportMeta {
    ReportMeta {
        generated_at: "2026-01-01T00:00:00Z".into(),
        tool: "koas 0.0.0".into(),
        kernels: vec![("md_structure".into(), "1.0.0".into())],
        doc_name: "doc.md".into(),
        original_hash: "sha256:00".into(),
        current_hash: "sha256:11".into(),
        notice: None,
    }
}

fn actor() -> Actor {
    Actor {
        tool: "t".into(),
        operator: "o".into(),
    }
}

/// A session with a typo fix, a hostile replacement, a deletion, a flag,
/// and the typo fix reverted.
fn session() -> MemorySession {
    let doc = format!(
        "# Title\n\nThe bandwith is high.\n\nPlain line.\n\nDrop me.\n\n## Two\n\nLook {HOSTILE_IMG} here.\n"
    );
    let mut s = MemorySession::new("doc.md", &doc);
    let clock = SteppingClock::new("2026-01-01T00:00:00Z");
    let ops = [
        json!({"action": "replace", "kind": "typo", "target": {"line_start": 3},
               "before_text": "bandwith", "after_text": "bandwidth"}),
        json!({"action": "replace", "kind": "style", "severity": "attention",
               "target": {"line_start": 5}, "after_text": format!("Plain {HOSTILE_SCRIPT} line."),
               "rationale": format!("because {HOSTILE_IMG}"),
               "review_note": {"alert": "WARNING", "text": format!("note {HOSTILE_SCRIPT}")}}),
        json!({"action": "delete", "kind": "duplicate", "target": {"line_start": 7}}),
        json!({"action": "flag_only", "kind": "consistency", "severity": "critical",
               "target": {"line_start": 11}, "rationale": "odd tag"}),
    ];
    let mut options = ApplyOptions::default();
    options.normalize.content_guards = false;
    s.apply(
        &ops,
        &ProtectedSpans::default(),
        &options,
        &actor(),
        &clock,
        "r1",
    )
    .unwrap();
    s.revert(&[ChangeId::first()], "not a typo", &actor(), &clock, "r2")
        .unwrap();
    s
}

fn with_patch_text(s: &MemorySession) -> Vec<LedgerEntry> {
    s.entries
        .iter()
        .map(|e| {
            let mut e = e.clone();
            if e.patch_text.is_none() && !e.patch_forward.is_empty() {
                e.patch_text = Some(koas_review_schema::ledger::PatchText {
                    forward: s.patches[&e.patch_forward].clone(),
                    inverse: s.patches[&e.patch_inverse].clone(),
                });
            }
            e
        })
        .collect()
}

fn render(entries: &[LedgerEntry], text: &str, findings: &[Finding], limits: HtmlLimits) -> String {
    render_with(entries, text, findings, limits, false)
}

fn render_with(
    entries: &[LedgerEntry],
    text: &str,
    findings: &[Finding],
    limits: HtmlLimits,
    details: bool,
) -> String {
    let meta = meta();
    let sections = vec![
        SectionEntry::from_lines("S1", "Title", 1, 8),
        SectionEntry::from_lines("S1.1", "Two", 9, 12),
    ];
    let not_revertible = BTreeMap::new();
    render_html(HtmlInput {
        report: ReportInput {
            meta: &meta,
            entries,
            sections: &sections,
            findings,
            earlier_findings: &[],
            apply_log: &[],
            model: None,
        },
        current_text: text,
        not_revertible: &not_revertible,
        doc_arg: "my doc.md",
        workspace_arg: None,
        limits,
        kernel_findings: &[],
        details,
    })
}

/// The text between the page's only `<script>` and `</script>`.
fn script_of(page: &str) -> &str {
    assert_eq!(page.matches("<script").count(), 1, "one script element");
    let start = page.find("<script>").unwrap() + "<script>".len();
    let end = page.find("</script>").unwrap();
    &page[start..end]
}

#[test]
fn escape_covers_markup_and_quotes() {
    assert_eq!(
        escape(r#"<a href="x" title='y'>&</a>"#),
        "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;"
    );
    assert_eq!(escape("a\0b"), "a\u{FFFD}b");
}

#[test]
fn shell_quote_leaves_plain_paths_and_quotes_the_rest() {
    assert_eq!(shell_quote("docs/spec.md"), "docs/spec.md");
    assert_eq!(shell_quote("my doc.md"), "'my doc.md'");
    assert_eq!(shell_quote("it's.md"), "'it'\\''s.md'");
    assert_eq!(shell_quote("-x.md"), "./-x.md");
    assert_eq!(shell_quote("$(rm).md"), "'$(rm).md'");
    assert_eq!(shell_quote(""), "''");
}

#[test]
fn base64_matches_the_standard_vectors() {
    for (raw, encoded) in [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ] {
        assert_eq!(base64(raw.as_bytes()), encoded, "{raw:?}");
    }
}

#[test]
fn the_page_lists_every_change_with_its_status_and_commands() {
    let s = session();
    let entries = with_patch_text(&s);
    let page = render(&entries, &s.text, &[], HtmlLimits::default());
    for id in ["RVW-0001", "RVW-0002", "RVW-0003", "RVW-0004"] {
        assert!(
            page.contains(&format!("<article class=\"change\" id=\"{id}\"")),
            "{id}"
        );
    }
    // Applied changes carry their revert command, the document quoted as
    // a shell reads it.
    assert!(page.contains("<code class=\"cmd\">koas revert &#39;my doc.md&#39; RVW-0002</code>"));
    assert!(page.contains("<code class=\"cmd\">koas revert &#39;my doc.md&#39; RVW-0003</code>"));
    // The reverted change and the flag have none.
    assert!(!page.contains("koas revert &#39;my doc.md&#39; RVW-0001<"));
    assert!(!page.contains("koas revert &#39;my doc.md&#39; RVW-0004<"));
    assert!(page.contains("data-status=\"reverted\""));
    assert!(page.contains("reverted (REVERT-RVW-0001)"));
    assert!(page.contains("data-status=\"flagged\""));
    assert!(page.contains("<section id=\"reverts\">"));
    // The notes as callouts, without the `REVIEWER: RVW-NNNN` lead the
    // card already shows: the deletion's CAUTION, the style change's.
    assert!(page.contains(
        "<div class=\"callout callout-warning\"><p class=\"callout-title\">Warning</p><p>note &lt;/script&gt;"
    ));
    assert!(page
        .contains("<div class=\"callout callout-caution\"><p class=\"callout-title\">Caution</p>"));
    assert!(!page.contains("REVIEWER:"), "{page}");
    assert!(!page.contains("[!WARNING]"), "{page}");
    // No engine names unless asked.
    assert!(!page.contains(crate::markdown::DELETION_CAUTION));
    assert!(!page.contains("normalization:"));
    // Filters list the kinds and severities of the changes, in the words
    // `koas check` and the editor use.
    for option in [
        "typo",
        "style",
        "duplicate",
        "consistency",
        "error",
        "warning",
    ] {
        assert!(
            page.contains(&format!("<option value=\"{option}\">")),
            "{option}"
        );
    }
}

#[test]
fn document_text_rationale_and_notes_are_escaped() {
    let s = session();
    let entries = with_patch_text(&s);
    let page = render(&entries, &s.text, &[], HtmlLimits::default());
    assert!(!page.contains(HOSTILE_SCRIPT), "raw script tag in the page");
    assert!(!page.contains("<img"), "raw img tag in the page");
    assert!(page.contains("&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(page.contains("&lt;img src=x onerror=alert(2)&gt;"));
    // The one script is the page's own, allowed by its hash alone.
    let script = script_of(&page);
    assert_eq!(script, SCRIPT);
    assert!(page.contains(&format!("script-src {};", csp_hash(SCRIPT))));
    assert!(page.contains("default-src 'none'"));
    assert!(!page.contains("unsafe-inline"));
}

#[test]
fn a_replacement_is_shown_side_by_side_with_the_change_highlighted() {
    let s = session();
    let entries = with_patch_text(&s);
    let page = render(&entries, &s.text, &[], HtmlLimits::default());
    let start = page.find("id=\"RVW-0001\"").unwrap();
    let article = &page[start..start + page[start..].find("</article>").unwrap()];
    assert!(
        article.contains(
            "<td class=\"ln\">3</td><td class=\"text del\">The <span class=\"hl\">bandwith</span> is high.</td><td class=\"ln\">3</td><td class=\"text add\">The <span class=\"hl\">bandwidth</span> is high.</td>"
        ),
        "{article}"
    );
    // Context on both sides.
    assert!(
        article.contains("<td class=\"text ctx\"># Title</td>"),
        "{article}"
    );
    // The deletion: a removed line facing an empty cell.
    let start = page.find("id=\"RVW-0003\"").unwrap();
    let article = &page[start..start + page[start..].find("</article>").unwrap()];
    assert!(
        article.contains(
            "<td class=\"text del\">Drop me.</td><td class=\"ln\"></td><td class=\"text\"></td>"
        ),
        "{article}"
    );
    // The flag shows the lines it flags.
    let start = page.find("id=\"RVW-0004\"").unwrap();
    let article = &page[start..start + page[start..].find("</article>").unwrap()];
    assert!(
        article.contains("<div class=\"lines\">Look &lt;img"),
        "{article}"
    );
}

#[test]
fn changes_are_grouped_by_their_section_now() {
    let s = session();
    let entries = with_patch_text(&s);
    let page = render(&entries, &s.text, &[], HtmlLimits::default());
    let s1 = page.find("<h3>Title").unwrap();
    let s11 = page.find("<h3>Two").unwrap();
    let flag = page.find("id=\"RVW-0004\"").unwrap();
    let typo = page.find("id=\"RVW-0001\"").unwrap();
    assert!(s1 < typo && typo < s11 && s11 < flag);
}

/// The page input of `doc.md` with no sections or findings of its own.
fn doc_md_input<'a>(
    meta: &'a ReportMeta,
    entries: &'a [LedgerEntry],
    text: &'a str,
    not_revertible: &'a BTreeMap<ChangeId, EntryId>,
    workspace_arg: Option<&'a str>,
    kernel_findings: &'a [koas_review_schema::findings::KernelFindings],
) -> HtmlInput<'a> {
    HtmlInput {
        report: ReportInput {
            meta,
            entries,
            sections: &[],
            findings: &[],
            earlier_findings: &[],
            apply_log: &[],
            model: None,
        },
        current_text: text,
        not_revertible,
        doc_arg: "doc.md",
        workspace_arg,
        limits: HtmlLimits::default(),
        kernel_findings,
        details: false,
    }
}

#[test]
fn not_revertible_changes_say_so_and_give_no_revert_command() {
    let s = session();
    let entries = with_patch_text(&s);
    let meta = meta();
    let by = EntryId::Change(ChangeId::new(9).unwrap());
    let not_revertible: BTreeMap<ChangeId, EntryId> =
        [(ChangeId::new(2).unwrap(), by)].into_iter().collect();
    let page = render_html(doc_md_input(
        &meta,
        &entries,
        &s.text,
        &not_revertible,
        Some("ws dir"),
        &[],
    ));
    assert!(page.contains("data-status=\"not-revertible\""));
    assert!(page.contains("not revertible (edited outside koas: RVW-0009)"));
    assert!(!page.contains("koas revert doc.md RVW-0002"));
    assert!(page.contains("koas revert doc.md RVW-0003 -w &#39;ws dir&#39;"));
}

#[test]
fn findings_are_listed_by_section_and_filterable() {
    use koas_review_schema::findings::{FindingKind, Severity};
    let s = session();
    let entries = with_patch_text(&s);
    let mut f = Finding::new(FindingKind::AiLeftover, "k", 10, 10, HOSTILE_SCRIPT, "e");
    f.severity = Severity::Error;
    let page = render(&entries, &s.text, &[f], HtmlLimits::default());
    assert!(page.contains("<tr data-kind=\"ai_leftover\" data-severity=\"error\"><td>10</td>"));
    // The kernel behind a finding is an engine detail.
    assert!(!page.contains("<th>Kernel</th>"));
    assert!(page.contains("<option value=\"ai_leftover\">"));
    assert!(!page.contains(HOSTILE_SCRIPT));
}

#[test]
fn findings_of_other_kernels_have_their_section_and_their_words_are_escaped() {
    use koas_review_schema::findings::{KernelFinding, KernelFindings, Severity};
    let s = session();
    let entries = with_patch_text(&s);
    let meta = meta();
    let not_revertible = BTreeMap::new();
    let found = [KernelFindings {
        kernel: "spell_check".into(),
        artifact: "spelling".into(),
        findings: vec![KernelFinding {
            kind: "odd\"kind<b>".into(),
            line: 3,
            column: 1,
            line_end: Some(4),
            severity: Severity::Warning,
            message: HOSTILE_SCRIPT.into(),
            evidence: String::new(),
            fix: None,
        }],
    }];
    let input = |kernel_findings| {
        doc_md_input(
            &meta,
            &entries,
            &s.text,
            &not_revertible,
            None,
            kernel_findings,
        )
    };
    let page = render_html(input(&found));
    assert!(page.contains("<section id=\"kernel-findings\"><h2>Findings from other kernels</h2><p>1 finding(s) reported by 1 kernel(s)"));
    assert!(page.contains("<a href=\"#kernel-findings\">"));
    assert!(page.contains("<td><code>spell_check</code></td><td>3–4</td>"));
    assert!(page.contains("data-kind=\"odd&quot;kind&lt;b&gt;\" data-severity=\"warning\""));
    assert!(!page.contains(HOSTILE_SCRIPT));
    assert!(!page.contains("odd\"kind"));
    // Without any, no section and no link.
    let page = render_html(input(&[]));
    assert!(!page.contains("kernel-findings"));
}

#[test]
fn without_changes_the_page_says_so() {
    let page = render(&[], "# T\n", &[], HtmlLimits::default());
    assert!(page.contains("<p>No changes.</p>"));
    assert!(page.contains("<p>No findings.</p>"));
    assert!(page.ends_with("</html>\n"));
}

#[test]
fn long_diffs_and_lines_are_cut_with_a_note() {
    let long_line = "x".repeat(50);
    let mut s = MemorySession::new("doc.md", &format!("{long_line}\n").repeat(30));
    let clock = SteppingClock::new("2026-01-01T00:00:00Z");
    let ops = [json!({"action": "replace", "kind": "style",
        "target": {"line_start": 1, "line_end": 30},
        "after_text": vec!["y"; 30].join("\n")})];
    s.apply(
        &ops,
        &ProtectedSpans::default(),
        &ApplyOptions::default(),
        &actor(),
        &clock,
        "r",
    )
    .unwrap();
    let entries = with_patch_text(&s);
    let limits = HtmlLimits {
        max_diff_rows: 10,
        max_line_chars: 20,
        ..HtmlLimits::default()
    };
    let page = render(&entries, &s.text, &[], limits);
    assert!(page.contains("… 20 more row(s): <code class=\"cmd\">koas show &#39;my doc.md&#39; RVW-0001 --patch</code>"));
    assert!(page.contains(&format!(
        "{}<span class=\"muted\"> … (line cut)</span>",
        "x".repeat(20)
    )));
    let diff = &page[page.find("<table class=\"diff\">").unwrap()..];
    let diff = &diff[..diff.find("</table>").unwrap()];
    assert!(!diff.contains(&"x".repeat(21)), "{diff}");
}

/// A ledger of 20,000 changes: every change is listed, diffs only for the
/// first `max_diffs`, and the page stays a few megabytes.
#[test]
fn a_twenty_thousand_change_ledger_gives_a_bounded_page() {
    let s = session();
    let entries = with_patch_text(&s);
    let template = entries[1].clone();
    let many: Vec<LedgerEntry> = (1..=20_000u32)
        .map(|seq| {
            let mut e = template.clone();
            e.id = EntryId::Change(ChangeId::new(seq).unwrap());
            e
        })
        .collect();
    let page = render(&many, &s.text, &[], HtmlLimits::default());
    assert_eq!(page.matches("<article class=\"change\"").count(), 1000);
    assert_eq!(page.matches("<table class=\"diff\">").count(), 1000);
    assert_eq!(page.matches("data-status=\"applied\"").count(), 20_000);
    assert!(page.contains(
        "20000 changes: the first 1000 (in page order) are shown in full with their diff"
    ));
    assert!(page.contains("<tr id=\"RVW-20000\""));
    assert!(page.contains("koas revert &#39;my doc.md&#39; RVW-20000</code>"));
    eprintln!("20,000 changes: {} bytes", page.len());
    assert!(page.len() < 20 * 1024 * 1024, "{} bytes", page.len());
}

#[test]
fn a_standalone_page_has_the_style_and_runs_no_script() {
    let page = super::standalone_page(HOSTILE_SCRIPT, HOSTILE_IMG, "<p>body</p>");
    assert!(page.contains("script-src 'none'"), "{page}");
    assert!(!page.contains("<script"), "{page}");
    assert!(!page.contains("<img"), "{page}");
    assert!(page.ends_with("<p>body</p></body>\n</html>\n"), "{page}");
    assert!(page.contains(&format!("<style>{}</style>", super::STYLE)));
}

#[test]
fn details_show_the_engine_names_a_writer_does_not_need() {
    use koas_review_schema::findings::FindingKind;
    let s = session();
    let entries = with_patch_text(&s);
    let f = Finding::new(FindingKind::AiLeftover, "k", 10, 10, "m", "e");
    let plain = render(
        &entries,
        &s.text,
        std::slice::from_ref(&f),
        HtmlLimits::default(),
    );
    let page = render_with(&entries, &s.text, &[f], HtmlLimits::default(), true);
    for internal in [
        crate::markdown::DELETION_CAUTION,
        "normalization: ",
        "<span class=\"muted\">S1.1</span> Two",
        "<th>Kernel</th>",
        "(ledger: attention)",
        "<th>Kernel <code>md_structure</code></th>",
    ] {
        assert!(page.contains(internal), "{internal} with --details");
        assert!(!plain.contains(internal), "{internal} without --details");
    }
}

#[test]
fn each_explanation_is_shown_once() {
    // A note that repeats the rationale, and a guard reason the note
    // already holds: one callout, no rationale line, no guard line.
    let mut entry = LedgerEntry::example(EntryId::Change(ChangeId::first()));
    entry.kind = "reference".into();
    entry.severity = "attention".into();
    entry.needs_attention = true;
    entry.summary = "reference: 'Section 7' → 'Section 3'".into();
    entry.rationale = "There is no Section 7.".into();
    entry.review_note = Some(koas_review_schema::edit_op::ReviewNote {
        alert: koas_review_schema::edit_op::Alert::Warning,
        text: "REVIEWER: RVW-0001 — There is no Section 7. (changes number '7' → '3')".into(),
    });
    entry.fixes = vec!["TOKEN_GUARD".into(), "HASH_RECOMPUTE".into()];
    let reasons = [("TOKEN_GUARD", "changes number '7' → '3'")];
    let html = explanation(&entry, &reasons, false);
    assert_eq!(html.matches("There is no Section 7").count(), 1, "{html}");
    assert_eq!(html.matches("changes number").count(), 1, "{html}");
    assert!(
        !html.contains("TOKEN_GUARD") && !html.contains("HASH_RECOMPUTE"),
        "{html}"
    );
    assert!(
        !html.contains("reference: "),
        "the summary repeats the diff: {html}"
    );
    // Without a note, the rationale and the guard's reason each once.
    let mut bare = entry.clone();
    bare.review_note = None;
    let html = explanation(&bare, &reasons, false);
    assert!(
        html.contains("<p class=\"why\">There is no Section 7.</p>"),
        "{html}"
    );
    assert!(
        html.contains("<li>changes number &#39;7&#39; → &#39;3&#39;</li>"),
        "{html}"
    );
    // With nothing else to say, the summary.
    bare.rationale.clear();
    bare.fixes.clear();
    let html = explanation(&bare, &[], false);
    assert!(html.contains("<p class=\"summary\">reference: "), "{html}");
}
