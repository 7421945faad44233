//! Links between files, through the real binary: `koas check` on a folder
//! and on one file (against its neighbours on disk), a renamed heading in
//! another file found and fixed, a query and an encoded space resolved,
//! nothing looked at outside the project, and the editor's diagnostics
//! equal to the command's.

use crate::lsp::{diag_keys, uri_of, Client};
use crate::review_common::{assert_code, Scratch};
use serde_json::{json, Value};

const GUIDE: &str =
    "# Guide\n\n## Installing koas\n\n## 3. Retry policy\n\n<a id=\"legacy\"></a>\n";

const PAGE: &str = "# Page\n\n\
See [install](guide.md#installing-koas) and [retries](guide.md#7-retry-policy).\n\n\
Read [setup](setup_guide.md), [changes](changelog.md) and [nothing](nowhere/x.md).\n\n\
![plan](img/plan.png) ![gone](img/gone.png)\n\n\
[notes](my%20notes.md#part-one), [same](<my notes.md>), [source](guide.md?plain=1#L3), \
[site](https://example.com/missing.md), [root](/docs/missing.md), [up](../../outside.md).\n";

/// A project (`koas.toml` marks its root) with `docs/` holding the page
/// and the files it links to.
fn project() -> Scratch {
    let s = Scratch::new();
    s.write("koas.toml", "");
    s.write("docs/guide.md", GUIDE);
    s.write("docs/page.md", PAGE);
    s.write("docs/setup-guide.md", "# Setup\n");
    s.write("docs/CHANGELOG.md", "# Changes\n");
    s.write("docs/my notes.md", "# Notes\n\n## Part one\n");
    s.write("docs/img/plan.png", "png");
    s
}

/// `(file, line, kind, message)` of `koas check --format json`.
fn findings(out: &std::process::Output) -> Vec<(String, u64, String, String)> {
    let items: Vec<Value> = serde_json::from_slice(&out.stdout).expect("json findings");
    items
        .iter()
        .filter(|f| {
            matches!(
                f["kind"].as_str(),
                Some("broken_link" | "broken_link_anchor")
            )
        })
        .map(|f| {
            (
                f["file"].as_str().unwrap_or("").to_owned(),
                f["line"].as_u64().unwrap_or(0),
                f["kind"].as_str().unwrap_or("").to_owned(),
                f["message"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

fn expected(file: &str) -> Vec<(String, u64, String, String)> {
    [
        (3, "broken_link_anchor", "The link points to guide.md#7-retry-policy, but no heading of guide.md has that anchor; did you mean #3-retry-policy?"),
        (5, "broken_link", "The link points to setup_guide.md, but there is no such file or folder relative to this document; did you mean setup-guide.md?"),
        (5, "broken_link", "The link points to changelog.md, but there is no such file or folder relative to this document; did you mean CHANGELOG.md?"),
        (5, "broken_link", "The link points to nowhere/x.md, but there is no such file or folder relative to this document"),
        (7, "broken_link", "The image points to img/gone.png, but there is no such file or folder relative to this document"),
    ]
    .into_iter()
    .map(|(line, kind, message)| (file.to_owned(), line, kind.to_owned(), message.to_owned()))
    .collect()
}

#[test]
fn a_folder_reports_missing_files_and_anchors_in_other_files() {
    let s = project();
    let out = s.koas(&["check", "docs", "--format", "json"]);
    assert_code(&out, 1, "broken links are errors");
    assert_eq!(findings(&out), expected("docs/page.md"));
    // The summary counts them, in the files checked.
    let human = s.koas(&["check", "docs"]);
    let err = String::from_utf8_lossy(&human.stderr);
    assert_eq!(
        err.trim_end(),
        "5 findings (5 errors, 0 warnings, 0 info) in 5 files",
        "{err}"
    );
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.contains("docs/page.md:5:6: error broken_link: The link points to setup_guide.md"),
        "{text}"
    );
}

#[test]
fn a_single_file_is_checked_against_its_neighbours_on_disk() {
    let s = project();
    let out = s.koas(&["check", "docs/page.md", "--format", "json"]);
    assert_code(&out, 1, "broken links are errors");
    assert_eq!(findings(&out), expected("docs/page.md"));
    // From inside the folder too: the names are relative to the document.
    let mut inside = s.command(&["check", "page.md", "--format", "json"]);
    let out = inside
        .current_dir(s.path("docs"))
        .output()
        .expect("koas runs");
    assert_eq!(findings(&out), expected("page.md"));
}

#[test]
fn the_certain_fixes_rename_the_link_and_the_rest_remains() {
    let s = project();
    let out = s.koas(&["check", "docs/page.md", "--fix"]);
    assert_code(&out, 1, "two broken links have no fix");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("applied 3 fixes in 1 file"), "{err}");
    let page = String::from_utf8(s.read("docs/page.md")).expect("utf-8");
    assert!(
        page.contains("[retries](guide.md#3-retry-policy)"),
        "{page}"
    );
    assert!(page.contains("[setup](setup-guide.md)"), "{page}");
    assert!(page.contains("[changes](CHANGELOG.md)"), "{page}");
    let out = s.koas(&["check", "docs/page.md", "--format", "json"]);
    let left: Vec<u64> = findings(&out).iter().map(|f| f.1).collect();
    assert_eq!(
        left,
        [5, 7],
        "the missing folder and the missing image remain"
    );
}

#[test]
fn a_heading_renamed_in_another_file_breaks_the_links_to_it() {
    let s = project();
    s.write(
        "docs/page.md",
        "# Page\n\nSee [install](guide.md#installing-koas).\n",
    );
    let out = s.koas(&["check", "docs", "--format", "json"]);
    assert_code(&out, 0, "every link resolves");
    assert!(findings(&out).is_empty());
    // The heading is renamed: the link in the other file breaks, and the
    // one close anchor is its fix.
    s.write(
        "docs/guide.md",
        &GUIDE.replace("## Installing koas", "## Installing koas 2"),
    );
    let out = s.koas(&["check", "docs", "--format", "json"]);
    assert_code(&out, 1, "a broken anchor is an error");
    let found = findings(&out);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        found[0].3,
        "The link points to guide.md#installing-koas, but no heading of guide.md has that anchor; did you mean #installing-koas-2?"
    );
    let diff = s.koas(&["check", "docs", "--fix", "--dry-run"]);
    let patch = String::from_utf8_lossy(&diff.stdout);
    assert!(
        patch.contains("+See [install](guide.md#installing-koas-2)."),
        "{patch}"
    );
}

#[test]
fn queries_encoded_spaces_urls_and_paths_outside_the_project_are_not_broken() {
    let s = project();
    s.write("outside.md", "# Outside the project\n");
    let out = s.koas(&["check", "docs/page.md", "--format", "json"]);
    let lines: Vec<u64> = findings(&out).iter().map(|f| f.1).collect();
    assert!(!lines.contains(&9), "line 9's links all resolve: {out:?}");
    // An anchor after an encoded space is checked in that file.
    s.write("docs/other.md", "# O\n\n[n](my%20notes.md#part-two)\n");
    let out = s.koas(&["check", "docs/other.md", "--format", "json"]);
    let found = findings(&out);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].3.starts_with("The link points to my%20notes.md#part-two, but no heading of my%20notes.md has that anchor"),
        "{found:?}"
    );
    // Standard input has no folder: its links to files are not checked.
    let mut stdin = s.command(&["check", "-", "--format", "json"]);
    let mut child = stdin
        .current_dir(s.path("docs"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("koas runs");
    {
        use std::io::Write as _;
        let mut input = child.stdin.take().expect("stdin");
        input.write_all(PAGE.as_bytes()).expect("write");
    }
    let out = child.wait_with_output().expect("koas ends");
    assert!(findings(&out).is_empty(), "{out:?}");
}

#[test]
fn a_generated_file_the_gitignore_names_is_not_reported() {
    let s = project();
    s.write(".gitignore", "/docs/reference/\n");
    s.write(
        "docs/api.md",
        "# API\n\nSee [the CLI](reference/cli.md) and [x](reference2/cli.md).\n",
    );
    let out = s.koas(&["check", "docs/api.md", "--format", "json"]);
    let found = findings(&out);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].3.contains("reference2/cli.md"), "{found:?}");
}

#[test]
fn the_editor_shows_the_links_to_other_files_as_the_command_does() {
    let s = project();
    let uri = uri_of(&s, "docs/page.md");
    let mut c = Client::start(&s, &["--debounce-ms", "50"]);
    c.initialize(s.dir.path());
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "markdown", "version": 1, "text": PAGE}}),
    );
    let diags = c.diagnostics(&uri, 1);
    let shown: Vec<(u64, String, String)> = diag_keys(&diags)
        .into_iter()
        .filter(|(_, kind, _)| matches!(kind.as_str(), "broken_link" | "broken_link_anchor"))
        .collect();
    let mut wanted: Vec<(u64, String, String)> = expected("docs/page.md")
        .into_iter()
        .map(|(_, line, kind, message)| (line, kind, message))
        .collect();
    wanted.sort();
    assert_eq!(shown, wanted);
    // The file the editor links to is created: the next check finds it.
    s.write("docs/img/gone.png", "png");
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2},
               "contentChanges": [{"range": {"start": {"line": 0, "character": 2}, "end": {"line": 0, "character": 6}}, "text": "Page 2"}]}),
    );
    let diags = c.diagnostics(&uri, 2);
    assert!(
        !diags.iter().any(|d| d["message"]
            .as_str()
            .is_some_and(|m| m.contains("img/gone.png"))),
        "{diags:#?}"
    );
    assert_eq!(c.shutdown(), Some(0));
}
