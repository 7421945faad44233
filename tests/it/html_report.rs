//! `koas report DOC --html`: one self-contained page, checked through the
//! real binary (what it contains, that hostile document text is inert,
//! that nothing refers to the network) and in a real headless Chromium
//! when the machine has one (no console message, the filters' script ran,
//! a screenshot).

use crate::review_common::{assert_code, normalize, stderr, stdout, Scratch};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A document whose text tries to break out of the page.
const DOC: &str = "# Retention policy

## Scope

The bandwith of the archive is low.

This line mentions </script><script>alert(1)</script> by mistake.

As an AI language model, I cannot help with that.

Look at <img src=x onerror=alert(2)> here.

## Periods

Logs are kept for seven years.

The same paragraph repeated here for testing purposes of the detector.

The same paragraph repeated here for testing purposes of the detector.
";

/// Ops whose new text and rationale are hostile too.
const OPS: &str = r#"[
 {"action": "replace", "kind": "typo", "target": {"line_start": 5}, "before_text": "bandwith", "after_text": "bandwidth"},
 {"action": "replace", "kind": "style", "severity": "attention", "target": {"line_start": 7},
  "after_text": "This line quotes </script><script>alert(3)</script> now.",
  "rationale": "Model says: <img src=x onerror=alert(4)> is fine"},
 {"action": "delete", "kind": "ai_leftover", "target": {"line_start": 9}, "rationale": "Assistant leftover."},
 {"action": "flag_only", "kind": "consistency", "severity": "critical", "target": {"line_start": 15},
  "rationale": "Seven years here, 7 years elsewhere."},
 {"action": "delete", "kind": "duplicate", "severity": "deletion", "target": {"line_start": 19}}
]"#;

/// `doc.md` reviewed with [`OPS`], then RVW-0001 reverted.
fn reviewed() -> Scratch {
    let s = Scratch::new();
    s.write("doc.md", DOC);
    s.write("ops.json", OPS);
    let out = s.koas(&["-q", "review", "doc.md", "--ops", "ops.json"]);
    assert_code(&out, 0, "review");
    let out = s.koas(&["-q", "revert", "doc.md", "RVW-0001"]);
    assert_code(&out, 0, "revert");
    s
}

/// The `<article>` of change `id` in `page`.
fn article<'p>(page: &'p str, id: &str) -> &'p str {
    let start = page
        .find(&format!("<article class=\"change\" id=\"{id}\""))
        .unwrap_or_else(|| panic!("{id} has no article"));
    let len = page[start..].find("</article>").expect("article closed");
    &page[start..start + len]
}

fn render(out: &std::process::Output, s: &Scratch) -> String {
    normalize(
        &format!(
            "exit code: {:?}\n----- stdout -----\n{}----- stderr -----\n{}",
            out.status.code(),
            stdout(out),
            stderr(out)
        ),
        s.dir.path(),
    )
}

/// Asserts that no `src`, `href`, `action`, CSS `url(...)` or `@import`
/// reaches outside the page.
fn assert_no_network_reference(page: &str) {
    let attr = regex::Regex::new(
        r#"(?i)\b(src|href|action|srcset|poster|data)\s*=\s*["']?\s*(https?:|//)"#,
    )
    .expect("regex");
    assert!(
        attr.find(page).is_none(),
        "a network reference: {:?}",
        attr.find(page).map(|m| m.as_str())
    );
    let css = regex::Regex::new(r"(?i)url\s*\(|@import").expect("regex");
    assert!(css.find(page).is_none(), "a CSS resource reference");
    assert!(!page.contains("http://") && !page.contains("https://"));
}

/// The hostile strings appear escaped, never as markup.
fn assert_hostile_text_is_inert(page: &str) {
    for raw in [
        "<script>alert(1)</script>",
        "<script>alert(3)</script>",
        "<img src=x onerror=alert(2)>",
        "<img src=x onerror=alert(4)>",
    ] {
        assert!(!page.contains(raw), "raw {raw:?} in the page");
    }
    for escaped in [
        "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;",
        "&lt;/script&gt;&lt;script&gt;alert(3)&lt;/script&gt;",
        "&lt;img src=x onerror=alert(2)&gt;",
        "Model says: &lt;img src=x onerror=alert(4)&gt; is fine",
    ] {
        assert!(page.contains(escaped), "{escaped:?} missing");
    }
    assert_eq!(page.matches("<script").count(), 1, "only the page's script");
}

#[test]
fn report_html_writes_one_self_contained_page() {
    let s = reviewed();
    // Quiet: the kernels' progress lines are not what this test is about.
    let out = s.koas(&["-q", "report", "doc.md", "--html"]);
    assert_code(&out, 0, "report --html");
    insta::assert_snapshot!("report_html_cli", render(&out, &s));
    let ws = s.workspace();
    let path = ws.join("review/REVIEW_doc.html");
    assert!(path.is_file(), "{} written", path.display());
    let printed = stdout(&out);
    let lines: Vec<&str> = printed.lines().map(str::trim).collect();
    assert!(
        lines
            .last()
            .is_some_and(|l| l.ends_with("review/REVIEW_doc.html")),
        "{lines:?}"
    );
    let page = std::fs::read_to_string(&path).expect("page");

    for id in ["RVW-0001", "RVW-0002", "RVW-0003", "RVW-0004", "RVW-0005"] {
        assert!(page.contains(&format!(" id=\"{id}\"")), "{id} listed");
    }
    for id in ["RVW-0002", "RVW-0003", "RVW-0005"] {
        assert!(
            page.contains(&format!(
                "<code class=\"cmd\">koas revert doc.md {id}</code>"
            )),
            "revert command of {id}"
        );
    }
    // The reverted change and the flag: their state instead of a command.
    assert!(page.contains("reverted (REVERT-RVW-0001)"));
    assert!(!page.contains("koas revert doc.md RVW-0001<"));
    assert!(page.contains("data-status=\"flagged\""));
    assert!(!page.contains("koas revert doc.md RVW-0004<"));
    // A flag is dismissed, not reverted.
    assert!(page.contains("koas dismiss doc.md RVW-0004<"), "{page}");
    // Side-by-side diffs with the changed words marked.
    assert!(page.contains(
        "<td class=\"text del\">The <span class=\"hl\">bandwith</span> of the archive is low.</td>"
    ));
    assert!(page.contains(
        "<td class=\"text add\">The <span class=\"hl\">bandwidth</span> of the archive is low.</td>"
    ));
    // Notes rendered as notes: the deletion's CAUTION as a callout, not
    // the annotated document's `[!CAUTION] REVIEWER: RVW-0003` markers.
    let deletion = article(&page, "RVW-0003");
    assert!(
        deletion.contains("<div class=\"callout callout-caution\"><p class=\"callout-title\">Caution</p><p>Assistant leftover.</p></div>"),
        "{deletion}"
    );
    assert!(!page.contains("REVIEWER:"), "no literal note marker");
    assert!(!page.contains("[!CAUTION]") && !page.contains("[!WARNING]"));
    // The model's rationale on the style change, once.
    let style = article(&page, "RVW-0002");
    assert_eq!(
        style
            .matches("Model says: &lt;img src=x onerror=alert(4)&gt; is fine")
            .count(),
        1,
        "{style}"
    );
    // No engine identifiers unless asked (`--details`).
    for internal in [
        "TOKEN_GUARD",
        "DELETION_CAUTION",
        "normalization:",
        "HASH_RECOMPUTE",
        "<th>Kernel</th>",
        "Kernel <code>md_",
    ] {
        assert!(
            !page.contains(internal),
            "{internal} shown without --details"
        );
    }
    // The findings the changes resolved, by change.
    assert!(page.contains("<section id=\"resolved\">"));
    assert!(page.contains("<a href=\"#RVW-0003\">RVW-0003</a>"));
    // Filters, hidden until the script shows them.
    for control in [
        "<form id=\"filters\" hidden>",
        "<select id=\"f-kind\">",
        "<select id=\"f-severity\">",
        "<select id=\"f-status\">",
        "<option value=\"typo\">",
        // The severity words of `koas check` and the editor.
        "<option value=\"error\">",
        "<option value=\"warning\">",
    ] {
        assert!(page.contains(control), "{control}");
    }
    assert_hostile_text_is_inert(&page);
    assert_no_network_reference(&page);
    assert!(page.contains("default-src 'none'"));

    // The Markdown report is the same as without --html.
    let markdown = std::fs::read_to_string(ws.join("review/REVIEW_doc.md")).expect("md");
    let out = s.koas(&["-q", "report", "doc.md"]);
    assert_code(&out, 0, "report");
    let again = std::fs::read_to_string(ws.join("review/REVIEW_doc.md")).expect("md");
    // Byte for byte: the report is as of its last ledger entry, not of
    // the command that wrote it.
    assert_eq!(markdown, again);
}

#[test]
fn report_html_path_and_json() {
    let s = reviewed();
    let (out, value) = s.koas_json(&["report", "doc.md", "--html", "out/page.html"]);
    assert_code(&out, 0, "report --html PATH --json");
    let written = s.path("out/page.html");
    assert!(written.is_file());
    assert_eq!(
        Path::new(value["html"].as_str().expect("html in the JSON")),
        Path::new("out/page.html")
    );
    assert!(
        !s.workspace().join("review/REVIEW_doc.html").exists(),
        "only where asked"
    );
    let out = s.koas(&["report", "doc.md", "--print", "--html"]);
    assert_code(&out, 2, "--print and --html together");
    // A folder where the page should go: a clear error, nothing left over.
    std::fs::create_dir(s.path("taken")).expect("mkdir");
    let out = s.koas(&["-q", "report", "doc.md", "--html", "taken"]);
    assert_code(&out, 2, "--html to a folder");
    insta::assert_snapshot!("report_html_to_a_folder", render(&out, &s));
    assert_eq!(
        std::fs::read_dir(s.path("taken")).expect("taken").count(),
        0,
        "no temporary file left"
    );
}

#[test]
fn report_html_marks_changes_edited_by_hand_as_not_revertible() {
    let s = Scratch::new();
    s.write("doc.md", DOC);
    s.write("ops.json", OPS);
    let out = s.koas(&["-q", "review", "doc.md", "--ops", "ops.json", "--in-place"]);
    assert_code(&out, 0, "review --in-place");
    let text = String::from_utf8(s.read("doc.md")).expect("utf-8");
    s.write(
        "doc.md",
        &text.replace("bandwidth of the archive", "capacity of the store"),
    );
    let out = s.koas(&["-q", "review", "doc.md", "--rebase"]);
    assert_code(&out, 0, "review --rebase");
    let out = s.koas(&["-q", "report", "doc.md", "--html"]);
    assert_code(&out, 0, "report --html");
    let page = std::fs::read_to_string(s.workspace().join("review/REVIEW_doc.html")).expect("page");
    assert!(
        page.contains("data-status=\"not-revertible\""),
        "RVW-0001 not revertible"
    );
    assert!(page.contains("not revertible (edited outside koas: RVW-0006)"));
    assert!(!page.contains("koas revert doc.md RVW-0001<"));
    assert!(page.contains("kind: external"));
}

// ----- headless Chromium -----

/// A Chromium-family browser on `PATH` (or `KOAS_CHROMIUM`).
pub(crate) fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("KOAS_CHROMIUM") {
        return Some(PathBuf::from(path));
    }
    let dirs = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&dirs) {
        for name in ["chromium", "chromium-browser", "google-chrome", "chrome"] {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    None
}

/// What the browser saw of a page.
struct Loaded {
    /// Console lines (messages, uncaught errors, refused scripts).
    console: Vec<String>,
    /// The DOM after the page's script ran.
    dom: String,
}

/// Runs the browser with `args` then `url`, killed after two minutes;
/// returns its stdout and stderr.
pub(crate) fn browse(browser: &Path, profile: &Path, args: &[&str], url: &str) -> (String, String) {
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium starts");
    // Read both pipes on threads so a full pipe cannot stall the browser.
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut out, &mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish in 2 minutes on {url}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (out.join().expect("stdout"), err.join().expect("stderr"))
}

/// The console lines of a Chromium log: `...:INFO:CONSOLE:12] "message",
/// source: ...` (older builds write `CONSOLE(12)`).
fn console_lines(log: &str) -> Vec<String> {
    let console = regex::Regex::new(r":CONSOLE[:(]").expect("regex");
    log.lines()
        .filter(|l| console.is_match(l))
        .map(str::to_owned)
        .collect()
}

/// Loads `page` (with `fragment`) twice: once for a screenshot into
/// `screenshot`, once to dump the DOM; the console lines of both.
fn load(browser: &Path, page: &Path, fragment: &str, screenshot: Option<&Path>) -> Loaded {
    let profile = tempfile::tempdir().expect("profile");
    let url = format!("file://{}{fragment}", page.display());
    let mut console = Vec::new();
    if let Some(shot) = screenshot {
        let (_, log) = browse(
            browser,
            profile.path(),
            &[
                &format!("--screenshot={}", shot.display()),
                "--window-size=1280,2000",
                "--hide-scrollbars",
            ],
            &url,
        );
        console.extend(console_lines(&log));
    }
    let (dom, log) = browse(
        browser,
        profile.path(),
        &["--dump-dom", "--virtual-time-budget=2000"],
        &url,
    );
    console.extend(console_lines(&log));
    Loaded { console, dom }
}

/// The check below is only worth something if it sees errors: a page
/// with an uncaught error, and one whose inline script the page's own
/// Content-Security-Policy refuses, are both reported.
#[test]
fn the_browser_check_detects_a_script_error() {
    let Some(browser) = chromium() else {
        println!("SKIPPED: no chromium");
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let broken = dir.path().join("broken.html");
    std::fs::write(
        &broken,
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>t</title></head><body><p>x</p>\
         <script>undefinedFunction();</script></body></html>",
    )
    .expect("write");
    let loaded = load(&browser, &broken, "", None);
    assert!(
        loaded
            .console
            .iter()
            .any(|l| l.contains("Uncaught ReferenceError")),
        "the uncaught error was not seen: {:?}",
        loaded.console
    );
    let refused = dir.path().join("refused.html");
    std::fs::write(
        &refused,
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'\">\
         <title>t</title></head><body><script>document.title = 'ran';</script></body></html>",
    )
    .expect("write");
    let loaded = load(&browser, &refused, "", None);
    assert!(
        !loaded.console.is_empty(),
        "the refused script was not reported"
    );
    assert!(loaded.dom.contains("<title>t</title>"), "{}", loaded.dom);
}

#[test]
fn the_html_report_loads_in_chromium_without_console_messages() {
    let Some(browser) = chromium() else {
        println!("SKIPPED: no chromium");
        return;
    };
    let s = reviewed();
    let out = s.koas(&["-q", "report", "doc.md", "--html"]);
    assert_code(&out, 0, "report --html");
    let page = s.workspace().join("review/REVIEW_doc.html");
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("koas-html-report.png");
    let _ = std::fs::remove_file(&shot);
    let loaded = load(&browser, &page, "", Some(&shot));
    assert!(
        loaded.console.is_empty(),
        "console messages: {:#?}",
        loaded.console
    );
    // The script ran to its end: the filters are shown and counted.
    assert!(
        loaded.dom.contains("data-filters=\"ready\""),
        "the page's script did not finish"
    );
    assert!(!loaded.dom.contains("<form id=\"filters\" hidden"));
    assert!(
        loaded.dom.contains("5 of 5 changes and flags shown"),
        "counter"
    );
    // The hostile text stayed text: no element was made of it.
    assert_eq!(
        loaded.dom.matches("<script").count(),
        1,
        "only the page's script"
    );
    assert!(!loaded.dom.contains("<img"));
    assert!(loaded
        .dom
        .contains("&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;"));
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    assert!(
        png.len() > 10_000,
        "a screenshot with content: {} bytes",
        png.len()
    );
    println!("screenshot: {}", shot.display());

    // A filter from the URL fragment hides the other changes.
    let filtered = load(&browser, &page, "#kind=typo", None);
    assert!(filtered.console.is_empty(), "{:#?}", filtered.console);
    assert!(
        filtered.dom.contains("1 of 5 changes and flags shown"),
        "the kind filter"
    );
    let article = regex::Regex::new(r#"<article class="change" id="(RVW-\d+)"[^>]*>"#).expect("re");
    for tag in article.captures_iter(&filtered.dom) {
        let hidden = tag[0].contains(" hidden");
        assert_eq!(hidden, &tag[1] != "RVW-0001", "{}", &tag[0]);
    }
}

/// Regression (issue 49): one review's counts disagreed: the HTML summary
/// said 7 changes and 5 needing attention, its filter bar "8 of 8", the
/// command line "6 of them need attention". Every view now says one
/// sentence from one count, after the review and after a revert and a
/// dismissal alike.
#[test]
fn regression_the_cli_status_markdown_and_html_counts_agree() {
    let s = Scratch::new();
    s.write("doc.md", DOC);
    s.write("ops.json", OPS);
    let out = s.koas(&["review", "doc.md", "--ops", "ops.json"]);
    assert_code(&out, 0, "review");
    let cli = stdout(&out);
    let recorded = cli
        .lines()
        .find_map(|l| l.strip_prefix("  recorded:  "))
        .unwrap_or_else(|| panic!("no recorded line in:\n{cli}"));
    let sentence = recorded
        .split(" (alert notes")
        .next()
        .expect("the sentence")
        .to_owned();
    assert!(
        sentence.starts_with("5 changes and flags (4 changes, 1 flag); "),
        "{sentence}"
    );
    let agree = |s: &Scratch, sentence: &str| {
        let md = std::fs::read_to_string(s.workspace().join("review/REVIEW_doc.md"))
            .expect("the Markdown report");
        assert!(md.contains(&format!("\n{sentence}.\n")), "{sentence}\n{md}");
        let out = s.koas(&["-q", "report", "doc.md", "--html", "page.html"]);
        assert_code(&out, 0, "report --html");
        let page = std::fs::read_to_string(s.path("page.html")).expect("the page");
        assert!(
            page.contains(&format!("<p class=\"tally\">{sentence}.</p>")),
            "{sentence}"
        );
        assert!(
            page.contains("data-total=\"5\">5 of 5 changes and flags shown</span>"),
            "the filter bar counts what the summary counts"
        );
        let status = s.koas(&["status", "doc.md"]);
        assert!(
            stdout(&status).contains(&format!("{sentence}; edited document")),
            "{sentence}\n{}",
            stdout(&status)
        );
    };
    agree(&s, &sentence);
    // A change reverted and the flag dismissed: every view says so alike.
    assert_code(
        &s.koas(&["-q", "revert", "doc.md", "RVW-0002"]),
        0,
        "revert",
    );
    assert_code(
        &s.koas(&["-q", "dismiss", "doc.md", "RVW-0004"]),
        0,
        "dismiss",
    );
    assert_code(&s.koas(&["-q", "report", "doc.md"]), 0, "report");
    let status = s.koas(&["status", "doc.md"]);
    let text = stdout(&status);
    let after = text
        .lines()
        .find_map(|l| {
            let from = l.find("5 changes and flags")?;
            let to = l.find("; edited document")?;
            l.get(from..to).map(str::to_owned)
        })
        .unwrap_or_else(|| panic!("no summary in:\n{text}"));
    assert!(after.contains("; 1 reverted; 1 dismissed"), "{after}");
    agree(&s, &after);
}

#[test]
fn report_html_details_show_the_engine_names() {
    let s = reviewed();
    let out = s.koas(&["-q", "report", "doc.md", "--html", "plain.html"]);
    assert_code(&out, 0, "report --html");
    let plain = std::fs::read_to_string(s.path("plain.html")).expect("page");
    let out = s.koas(&[
        "-q",
        "report",
        "doc.md",
        "--html",
        "details.html",
        "--details",
    ]);
    assert_code(&out, 0, "report --html --details");
    let page = std::fs::read_to_string(s.path("details.html")).expect("page");
    for internal in [
        "<code>DELETION_CAUTION</code>",
        "<th>Guard</th>",
        "<th>Kernel</th>",
        "Kernel <code>md_structure</code>",
        "(ledger: critical)",
    ] {
        assert!(page.contains(internal), "{internal} with --details");
        assert!(!plain.contains(internal), "{internal} without --details");
    }
    // --details is about the page: without --html it is refused.
    let out = s.koas(&["report", "doc.md", "--details"]);
    assert_code(&out, 2, "--details without --html");
    assert!(stderr(&out).contains("--html"), "{}", stderr(&out));
}
