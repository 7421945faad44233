//! Issue 46: language_lsp. The language findings in the editor, through
//! the real `koas lsp`: each on its word (columns in UTF-16 units), coded
//! by its kind; one quick fix per suggestion, the certain one preferred;
//! "add to the project's words" (`koas.addWord`) writing the project's
//! words file safely, after which the word is no longer reported.

use crate::lsp::{uri_of, Client};
use crate::review_common::Scratch;
use serde_json::{json, Value};

/// A misspelled sentence, then one with the right words (the paragraph is
/// plainly English), then a term no dictionary has, after characters
/// that are two UTF-16 units each.
const DOC: &str = "# Notes

Teh client explians the adresses. The server explains the addresses it keeps.

Our 😀 zorblets keep the cache.
";

fn open(s: &Scratch, c: &mut Client, name: &str) -> (String, Vec<Value>) {
    let uri = uri_of(s, name);
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "markdown", "version": 1, "text": DOC}}),
    );
    let diags = c.diagnostics(&uri, 1);
    (uri, diags)
}

/// `(line, start, end, code)` of the language diagnostics, sorted.
fn spans(diags: &[Value]) -> Vec<(u64, u64, u64, String)> {
    let mut out: Vec<_> = diags
        .iter()
        .filter(|d| {
            d["code"]
                .as_str()
                .is_some_and(|c| c == "misspelling" || c == "article" || c == "repeated_word")
        })
        .map(|d| {
            let r = &d["range"];
            (
                r["start"]["line"].as_u64().unwrap_or(99),
                r["start"]["character"].as_u64().unwrap_or(99),
                r["end"]["character"].as_u64().unwrap_or(99),
                d["code"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    out.sort();
    out
}

fn find_word(diags: &[Value], line: u64, start: u64) -> &Value {
    diags
        .iter()
        .find(|d| d["range"]["start"]["line"] == line && d["range"]["start"]["character"] == start)
        .unwrap_or_else(|| panic!("no diagnostic at {line}:{start}: {diags:#?}"))
}

fn actions_at(c: &mut Client, uri: &str, diag: &Value) -> Vec<Value> {
    let answer = c.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri}, "range": diag["range"], "context": {"diagnostics": [diag]}}),
    );
    answer["result"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| panic!("{answer}"))
}

#[test]
fn misspelling_is_shown_on_its_word_with_a_fix_per_suggestion() {
    let s = Scratch::new();
    s.write("guide.md", DOC);
    let mut c = Client::start(&s, &[]);
    c.initialize(s.dir.path());
    let (uri, diags) = open(&s, &mut c, "guide.md");
    // Each word, not its line: "Teh", "explians", "adresses", and
    // "zorblets" after "Our 😀 " (7 UTF-16 units, 6 characters, 9 bytes).
    assert_eq!(
        spans(&diags),
        vec![
            (2, 0, 3, "misspelling".to_owned()),
            (2, 11, 19, "misspelling".to_owned()),
            (2, 24, 32, "misspelling".to_owned()),
            (4, 7, 15, "misspelling".to_owned()),
        ],
        "{diags:#?}"
    );
    assert!(diags
        .iter()
        .filter(|d| d["code"] == "misspelling")
        .all(|d| d["source"] == "koas"));

    let explians = find_word(&diags, 2, 11).clone();
    let actions = actions_at(&mut c, &uri, &explians);
    let titles: Vec<&str> = actions.iter().filter_map(|a| a["title"].as_str()).collect();
    // The first suggestion first, on the word alone, preferred (certain).
    let first = &actions[0];
    assert_eq!(
        first["title"], "koas: “explians” → “explains”",
        "{titles:?}"
    );
    assert_eq!(first["isPreferred"], true, "{titles:?}");
    assert_eq!(
        first["edit"]["changes"][&uri],
        json!([{"range": explians["range"], "newText": "explains"}])
    );
    assert_eq!(
        actions.iter().filter(|a| a["isPreferred"] == true).count(),
        1,
        "one preferred fix: {titles:?}"
    );
    let add = actions
        .iter()
        .find(|a| a["command"]["command"] == "koas.addWord")
        .unwrap_or_else(|| panic!("no add-word action: {titles:?}"));
    assert_eq!(
        add["title"],
        "koas: add “explians” to the project's words (koas-words.txt)"
    );
    assert_eq!(add["command"]["arguments"], json!([uri, "explians"]));
    assert!(
        titles.contains(&"koas: disable misspelling on the next line"),
        "{titles:?}"
    );
    assert_eq!(c.shutdown(), Some(0));
}

#[test]
fn misspelling_added_to_the_project_words_is_no_longer_reported() {
    let s = Scratch::new();
    s.write("guide.md", DOC);
    let mut c = Client::start(&s, &[]);
    c.initialize(s.dir.path());
    let (uri, diags) = open(&s, &mut c, "guide.md");
    let zorblets = find_word(&diags, 4, 7).clone();
    let actions = actions_at(&mut c, &uri, &zorblets);
    let add = actions
        .iter()
        .find(|a| a["command"]["command"] == "koas.addWord")
        .cloned()
        .unwrap_or_else(|| panic!("no add-word action: {actions:#?}"));
    // No koas.toml: the workspace folder's koas-words.txt, created.
    let answer = c.request("workspace/executeCommand", add["command"].clone());
    let file = s.path("koas-words.txt");
    assert_eq!(
        answer["result"],
        json!({"added": true, "file": file.display().to_string()}),
        "{answer}"
    );
    assert_eq!(
        std::fs::read_to_string(&file).expect("the words file"),
        "zorblets\n"
    );
    let said = format!("koas: added “zorblets” to {}", file.display());
    c.wait_for(|m| m["method"] == "window/logMessage" && m["params"]["message"] == said);
    // The document is checked again: the term is gone, the rest stays.
    let again = c.diagnostics(&uri, 1);
    assert_eq!(
        spans(&again),
        vec![
            (2, 0, 3, "misspelling".to_owned()),
            (2, 11, 19, "misspelling".to_owned()),
            (2, 24, 32, "misspelling".to_owned()),
        ],
        "{again:#?}"
    );
    // Twice: listed already, not written again.
    let answer = c.request("workspace/executeCommand", add["command"].clone());
    assert_eq!(answer["result"]["added"], false, "{answer}");
    // A hostile "word" is refused, nothing written.
    for bad in ["a\nb", "x # y", "../../etc", ""] {
        let answer = c.request(
            "workspace/executeCommand",
            json!({"command": "koas.addWord", "arguments": [uri, bad]}),
        );
        assert_eq!(answer["error"]["code"], -32602, "{bad:?}: {answer}");
    }
    assert_eq!(
        std::fs::read_to_string(&file).expect("the words file"),
        "zorblets\n"
    );
    assert_eq!(c.shutdown(), Some(0));
}

#[test]
fn misspelling_added_goes_to_the_first_words_file_of_koas_toml() {
    let s = Scratch::new();
    s.write("docs/guide.md", DOC);
    s.write(
        "docs/koas.toml",
        "[language]\nwords = [\"styles/terms.txt\"]\n",
    );
    s.write("docs/styles/terms.txt", "# our terms\nkubelet");
    let mut c = Client::start(&s, &[]);
    c.initialize(s.dir.path());
    let (uri, diags) = open(&s, &mut c, "docs/guide.md");
    let explians = find_word(&diags, 2, 11).clone();
    let actions = actions_at(&mut c, &uri, &explians);
    let add = actions
        .iter()
        .find(|a| a["command"]["command"] == "koas.addWord")
        .cloned()
        .unwrap_or_else(|| panic!("no add-word action: {actions:#?}"));
    assert_eq!(
        add["title"],
        "koas: add “explians” to the project's words (styles/terms.txt)"
    );
    let answer = c.request("workspace/executeCommand", add["command"].clone());
    assert_eq!(answer["result"]["added"], true, "{answer}");
    assert_eq!(
        std::fs::read_to_string(s.path("docs/styles/terms.txt")).expect("read"),
        "# our terms\nkubelet\nexplians\n"
    );
    assert!(!s.path("koas-words.txt").exists());
    assert!(!s.path("docs/koas-words.txt").exists());
    let again = c.diagnostics(&uri, 1);
    assert!(
        !spans(&again).contains(&(2, 11, 19, "misspelling".to_owned())),
        "{again:#?}"
    );
    assert_eq!(c.shutdown(), Some(0));
}

#[cfg(unix)]
#[test]
fn misspelling_added_through_a_linked_words_file_is_refused() {
    let s = Scratch::new();
    let outside = tempfile::tempdir().expect("tempdir");
    let victim = outside.path().join("victim.txt");
    std::fs::write(&victim, "untouched\n").expect("write");
    s.write("guide.md", DOC);
    std::os::unix::fs::symlink(&victim, s.path("koas-words.txt")).expect("link");
    let mut c = Client::start(&s, &[]);
    c.initialize(s.dir.path());
    let (uri, _) = open(&s, &mut c, "guide.md");
    let answer = c.request(
        "workspace/executeCommand",
        json!({"command": "koas.addWord", "arguments": [uri, "zorblets"]}),
    );
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("“zorblets” not added") && message.contains("symbolic link"),
        "{answer}"
    );
    assert_eq!(
        std::fs::read_to_string(&victim).expect("read"),
        "untouched\n"
    );
    assert_eq!(c.shutdown(), Some(0));
}
