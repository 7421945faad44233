//! Issue 51: vale_styles. A project's Vale styles run inside koas through
//! the real binary: a `.vale.ini` with a team's own style (an existence
//! rule, a substitution with one replacement, sentence-case headings, a
//! vocabulary), its findings in `koas check` (text, JSON, SARIF with each
//! rule's link), `[check]` and comments naming rules like kinds, in
//! `koas lsp` (coded by the rule, linked to its page), and in
//! `koas review --no-llm`, where the one-option substitution is a certain
//! fix recorded in the ledger and reverted like any change.

use crate::lsp::{uri_of, Client};
use crate::review_common::{assert_code, code, edit_model, llm_flags, stderr, Scratch};
use serde_json::{json, Value};

const INI: &str = "StylesPath = styles
MinAlertLevel = suggestion
Vocab = Docs

[*.md]
BasedOnStyles = Vale, Team
";

const SIMPLY: &str = "extends: existence
message: \"Don't use '%s': it talks down to the reader.\"
level: warning
link: https://docs.example.com/style#simply
ignorecase: true
tokens:
  - simply
  - obviously
";

const UTILIZE: &str = "extends: substitution
message: \"Use '%s' instead of '%s'.\"
level: error
link: https://docs.example.com/style#utilize
ignorecase: true
action:
  name: replace
swap:
  utilize: use
  leverage: use|rely on
";

const HEADINGS: &str = "extends: capitalization
message: \"'%s' should use sentence-style capitalization.\"
level: suggestion
scope: heading
match: $sentence
";

/// Each rule once or more: a heading in title case, "simply", a
/// certain swap ("utilize"), a swap with two options ("leverage"), the
/// rule's words inside code and a link target (never read), a term of
/// the vocabulary written in another case and a rejected one.
const GUIDE: &str = "# Installing The Tool

You simply utilize the installer, then leverage the cache.

Run `utilize --now` in a shell; see [the page](https://x.org/utilize).

## Next steps

Obviously, Javascript users are on a whitelist.
";

fn project() -> Scratch {
    let s = Scratch::new();
    s.write(".vale.ini", INI);
    s.write("styles/Team/Simply.yml", SIMPLY);
    s.write("styles/Team/Utilize.yml", UTILIZE);
    s.write("styles/Team/Headings.yml", HEADINGS);
    s.write(
        "styles/config/vocabularies/Docs/accept.txt",
        "JavaScript\nkoas\n",
    );
    s.write("styles/config/vocabularies/Docs/reject.txt", "whitelist\n");
    s.write("guide.md", GUIDE);
    s
}

fn out(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn vale_style_findings_in_koas_check_text_json_and_sarif() {
    let s = project();
    let o = s.koas(&["check", "guide.md"]);
    assert_code(&o, 1, "an error-level rule fails the check");
    assert_eq!(
        out(&o),
        "guide.md:1:3: info Team.Headings: 'Installing The Tool' should use sentence-style capitalization.
guide.md:3:5: warning Team.Simply: Don't use 'simply': it talks down to the reader.
guide.md:3:12: error Team.Utilize: Use 'use' instead of 'utilize'.
guide.md:3:40: error Team.Utilize: Use 'use' or 'rely on' instead of 'leverage'.
guide.md:9:1: warning Team.Simply: Don't use 'Obviously': it talks down to the reader.
guide.md:9:12: error Vale.Terms: Use 'JavaScript' instead of 'Javascript'.
guide.md:9:38: error Vale.Avoid: Avoid using 'whitelist'.
"
    );
    assert!(
        stderr(&o).ends_with("7 findings (4 errors, 2 warnings, 1 info) in 1 file\n"),
        "{}",
        stderr(&o)
    );
    // What of the styles does not run is told once, before the findings.
    let err = stderr(&o);
    let notes: Vec<&str> = err.lines().filter(|l| l.starts_with("note: ")).collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].ends_with(
            ".vale.ini: Vale.Spelling does not run: koas's own spelling check does (kind `misspelling`)"
        ),
        "{notes:?}"
    );
    // --no-config: the built-in checks and defaults, no style.
    let o = s.koas(&["check", "guide.md", "--no-config"]);
    assert!(
        !out(&o).contains("Team.") && !out(&o).contains("Vale."),
        "{}",
        out(&o)
    );

    let o = s.koas(&["check", "guide.md", "--format", "json"]);
    let items: Vec<Value> = serde_json::from_slice(&o.stdout).expect("json");
    let utilize = &items[2];
    assert_eq!(utilize["kind"], "style");
    assert_eq!(utilize["rule"], "Team.Utilize");
    assert_eq!(utilize["link"], "https://docs.example.com/style#utilize");
    assert_eq!(utilize["suggestions"], json!(["use"]));
    assert_eq!(
        utilize["fix"]["edits"][0]["after"],
        "You simply use the installer, then leverage the cache."
    );
    assert!(items[3].get("fix").is_none(), "two options: no certain fix");

    let o = s.koas(&["check", "guide.md", "--format", "sarif"]);
    let log: Value = serde_json::from_slice(&o.stdout).expect("sarif");
    let run = &log["runs"][0];
    let rules = run["tool"]["driver"]["rules"].as_array().expect("rules");
    let simply = rules
        .iter()
        .find(|r| r["id"] == "Team.Simply")
        .unwrap_or_else(|| panic!("no rule Team.Simply: {rules:#?}"));
    assert_eq!(simply["helpUri"], "https://docs.example.com/style#simply");
    for result in run["results"].as_array().expect("results") {
        let index = result["ruleIndex"].as_u64().expect("index") as usize;
        assert_eq!(rules[index]["id"], result["ruleId"], "{result:#}");
    }
}

#[test]
fn vale_rules_are_named_like_kinds_in_koas_toml_and_in_comments() {
    let s = project();
    s.write(
        "koas.toml",
        "[check]\ndisable = [\"Team.Headings\"]\n[check.severity]\n\"Team.Utilize\" = \"info\"\n",
    );
    s.write(
        "guide.md",
        &GUIDE.replace(
            "Obviously,",
            "<!-- vale Team.Simply = NO -->\n<!-- koas-disable-next-line Vale.Terms -->\nObviously,",
        ),
    );
    let o = s.koas(&["check", "guide.md"]);
    let text = out(&o);
    assert!(!text.contains("Team.Headings"), "{text}");
    // Vale's own comment turns the rule off from there on only.
    assert!(
        text.contains("guide.md:3:5: warning Team.Simply:"),
        "{text}"
    );
    assert!(!text.contains("'Obviously'"), "{text}");
    assert!(text.contains("guide.md:3:12: info Team.Utilize:"), "{text}");
    assert!(!text.contains("Vale.Terms"), "{text}");
    assert!(text.contains("Vale.Avoid"), "{text}");
    assert!(
        stderr(&o).is_empty() || !stderr(&o).contains("unknown kind"),
        "{}",
        stderr(&o)
    );

    // A rule no style holds is a typo, named with the file.
    s.write("koas.toml", "[check]\ndisable = [\"Team.Simpyl\"]\n");
    let o = s.koas(&["check", "guide.md"]);
    assert_code(&o, 2, "an unknown rule");
    let err = stderr(&o);
    assert!(err.contains("koas.toml"), "{err}");
    assert!(err.contains("\"Team.Simpyl\""), "{err}");

    // Turned off in koas.toml: no style runs.
    s.write("koas.toml", "[vale]\nenabled = false\n");
    let o = s.koas(&["check", "guide.md"]);
    assert!(!out(&o).contains("Team."), "{}", out(&o));
}

#[test]
fn a_broken_rule_is_an_error_naming_its_file() {
    let s = project();
    s.write("styles/Team/Broken.yml", "extends: existence\ntokens: [\n");
    let o = s.koas(&["check", "guide.md"]);
    assert_code(&o, 2, "a rule that does not read");
    let err = stderr(&o);
    assert!(err.contains("Broken.yml"), "{err}");
}

/// A language server on the project, the guide opened in it: the client,
/// the guide's URI and its first diagnostics.
fn open_guide(s: &Scratch) -> (Client, String, Vec<Value>) {
    let mut c = Client::start(s, &[]);
    c.initialize(s.dir.path());
    let uri = uri_of(s, "guide.md");
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "markdown", "version": 1, "text": GUIDE}}),
    );
    let diags = c.diagnostics(&uri, 1);
    (c, uri, diags)
}

#[test]
fn vale_findings_in_the_editor_carry_their_rule_and_its_page() {
    let s = project();
    let (mut c, uri, diags) = open_guide(&s);
    let utilize = diags
        .iter()
        .find(|d| d["code"] == "Team.Utilize" && d["range"]["start"]["character"] == 11)
        .unwrap_or_else(|| panic!("no Team.Utilize on `utilize`: {diags:#?}"))
        .clone();
    assert_eq!(
        utilize["codeDescription"]["href"],
        "https://docs.example.com/style#utilize"
    );
    assert_eq!(utilize["range"]["end"]["character"], 18);
    let answer = c.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri}, "range": utilize["range"], "context": {"diagnostics": [utilize]}}),
    );
    let actions = answer["result"].as_array().cloned().unwrap_or_default();
    let preferred: Vec<&Value> = actions
        .iter()
        .filter(|a| a["isPreferred"] == true)
        .collect();
    assert_eq!(preferred.len(), 1, "{actions:#?}");
    assert_eq!(
        preferred[0]["edit"]["changes"][&uri],
        json!([{"range": utilize["range"], "newText": "use"}])
    );
    assert!(
        actions
            .iter()
            .any(|a| a["title"] == "koas: disable Team.Utilize on the next line"),
        "{actions:#?}"
    );
    assert_eq!(c.shutdown(), Some(0));
}

#[test]
fn vale_certain_substitution_is_in_the_ledger_and_reverts() {
    let s = project();
    let (o, v) = s.koas_json(&["review", "guide.md", "--no-llm", "--in-place"]);
    assert_code(&o, 0, "review --no-llm");
    let ledger =
        std::fs::read_to_string(s.workspace().join("review/ledger.jsonl")).expect("ledger");
    let entries: Vec<Value> = ledger
        .lines()
        .map(|l| serde_json::from_str(l).expect("a ledger line"))
        .collect();
    let styles: Vec<&Value> = entries.iter().filter(|e| e["kind"] == "style").collect();
    assert_eq!(
        styles.len(),
        2,
        "utilize and Javascript: {entries:#?}\n{v:#}"
    );
    assert!(
        styles[0]["rationale"]
            .as_str()
            .is_some_and(|r| r.starts_with("Team.Utilize: 'utilize' → 'use'")),
        "{:#}",
        styles[0]
    );
    let fixed = String::from_utf8(s.read("guide.md")).expect("utf-8");
    assert!(
        fixed.contains("You simply use the installer, then leverage"),
        "{fixed}"
    );
    assert!(fixed.contains("JavaScript users"), "{fixed}");
    // Code and link targets are never touched.
    assert!(
        fixed.contains("`utilize --now`") && fixed.contains("x.org/utilize"),
        "{fixed}"
    );
    // The report names each finding by its rule.
    let report =
        std::fs::read_to_string(s.workspace().join("review/REVIEW_guide.md")).expect("report");
    assert!(report.contains("| Team.Simply |"), "{report}");
    let id = styles[0]["id"].as_str().expect("id").to_owned();
    let o = s.koas(&["-q", "revert", "guide.md", &id, "--in-place"]);
    assert_code(&o, 0, "revert");
    let reverted = String::from_utf8(s.read("guide.md")).expect("utf-8");
    assert!(
        reverted.contains("You simply utilize the installer"),
        "{reverted}"
    );
    assert!(
        reverted.contains("JavaScript users"),
        "the other change stays: {reverted}"
    );
    assert_eq!(code(&o), 0);
}

#[test]
fn vale_findings_without_a_certain_fix_reach_the_prompt_as_hints() {
    let s = project();
    let model = edit_model(|_| Vec::new());
    let mut args: Vec<String> = vec!["review".into(), "guide.md".into(), "--skip-pyramid".into()];
    args.extend(llm_flags(&model, 2));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (o, v) = s.koas_json(&args);
    assert_code(&o, 0, "review with a scripted model");
    let prompts: Vec<String> = model
        .requests()
        .into_iter()
        .map(|r| r.prompt)
        .filter(|p| p.contains("BEGIN_EDIT_OPS"))
        .collect();
    assert!(!prompts.is_empty(), "no edit request: {v:#}");
    // The certain swap was made before the model read the text.
    assert!(
        prompts.iter().all(|p| !p.contains("simply utilize")),
        "{prompts:#?}"
    );
    let first = prompts
        .iter()
        .find(|p| p.contains("Problems an automatic check found"))
        .unwrap_or_else(|| panic!("no hints: {prompts:#?}"));
    assert!(
        first.contains("Team.Utilize (critical): Use 'use' or 'rely on' instead of 'leverage'."),
        "{first}"
    );
    assert!(first.contains("Team.Simply (attention)"), "{first}");
}

#[test]
fn vale_vocabulary_terms_are_no_misspellings() {
    let s = project();
    let doc = "# Notes\n\nThe zorbleton keeps the cache warm for the night.\n";
    s.write("notes.md", doc);
    let o = s.koas(&["check", "notes.md", "--no-config", "--format", "json"]);
    let items: Vec<Value> = serde_json::from_slice(&o.stdout).expect("json");
    assert!(
        items.iter().any(|i| i["kind"] == "misspelling"),
        "without the styles the word is unknown: {items:#?}"
    );
    s.write(
        "styles/config/vocabularies/Docs/accept.txt",
        "JavaScript\nkoas\nzorbleton\n",
    );
    let o = s.koas(&["check", "notes.md", "--format", "json"]);
    let items: Vec<Value> = serde_json::from_slice(&o.stdout).expect("json");
    assert!(
        !items.iter().any(|i| i["kind"] == "misspelling"),
        "the vocabulary accepts it: {items:#?}"
    );
}

#[test]
fn vale_rule_edited_while_the_editor_runs_is_read_again() {
    let s = project();
    let (mut c, uri, first) = open_guide(&s);
    let rules = |diags: &[Value]| -> Vec<String> {
        let mut r: Vec<String> = diags
            .iter()
            .filter_map(|d| d["code"].as_str().map(str::to_owned))
            .filter(|c| c.starts_with("Team."))
            .collect();
        r.sort();
        r.dedup();
        r
    };
    let before = rules(&first);
    assert_eq!(before, ["Team.Headings", "Team.Simply", "Team.Utilize"]);
    // The team drops its word rule, turns "simply" into an error and
    // adds a rule.
    std::fs::remove_file(s.path("styles/Team/Utilize.yml")).expect("removed");
    s.write(
        "styles/Team/Cache.yml",
        "extends: existence\nmessage: \"Say 'store', not '%s'.\"\ntokens:\n  - cache\n",
    );
    s.write(
        "styles/Team/Simply.yml",
        &SIMPLY.replace("level: warning", "level: error"),
    );
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": GUIDE}]}),
    );
    let diags = c.diagnostics(&uri, 2);
    assert_eq!(
        rules(&diags),
        ["Team.Cache", "Team.Headings", "Team.Simply"]
    );
    let simply = diags
        .iter()
        .find(|d| d["code"] == "Team.Simply")
        .unwrap_or_else(|| panic!("{diags:#?}"));
    assert_eq!(simply["severity"], 1, "now an error: {simply:#}");
    assert_eq!(c.shutdown(), Some(0));
}
