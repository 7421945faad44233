//! `koas llm eval` through the real binary, with scripted models of known
//! behaviour: a perfect fixer (every planted defect fixed, nothing else
//! touched), a fixer with wrong line numbers, a careless model (changes
//! meaning where nothing was planted: every change counted as harm, none
//! silent) and a model that answers prose only.

use crate::review_common::{edit_model, llm_flags, stderr, Scratch};
use koas_eval::plant::{plant, PlantedDoc};
use koas_test_support::model::{ModelAnswer, ModelRequest, ScriptedModel};
use serde_json::{json, Value};

const SEED: u64 = 3;
const SAMPLES: usize = 4;

/// The planted copies `koas llm eval --seed 3 --samples 4` reviews.
fn planted() -> Vec<PlantedDoc> {
    koas_eval::BUNDLED
        .iter()
        .map(|(name, lang, text)| plant(name, text, *lang, SEED, SAMPLES))
        .collect()
}

/// The smallest fix a careful model writes: the words around what differs
/// between the planted line and the truth (the whole line may hold math
/// or code the prompt shows otherwise).
fn span(planted: &str, truth: &str) -> (String, String) {
    let (p, t): (Vec<char>, Vec<char>) = (planted.chars().collect(), truth.chars().collect());
    let mut start = p.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut tail = p
        .iter()
        .rev()
        .zip(t.iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    tail = tail.min(p.len() - start).min(t.len() - start);
    // Out to the word before and the word after.
    let mut spaces = 0;
    while start > 0 {
        if p[start - 1] == ' ' {
            spaces += 1;
            if spaces == 2 {
                break;
            }
        }
        start -= 1;
    }
    let mut spaces = 0;
    while tail > 0 {
        if p[p.len() - tail] == ' ' {
            spaces += 1;
            if spaces == 2 {
                break;
            }
        }
        tail -= 1;
    }
    let before: String = p[start..p.len() - tail].iter().collect();
    let after: String = t[start..t.len() - tail].iter().collect();
    (before.trim().to_owned(), after.trim().to_owned())
}

fn op(line: usize, before: &str, after: &str, kind: &str) -> Value {
    json!({"action": "replace", "line": line, "before_text": before, "after_text": after,
           "kind": kind, "severity": "minor", "rationale": "fix"})
}

/// The smallest fix of every planted defect: (planted words, true words).
fn fixes() -> Vec<(String, String)> {
    planted()
        .iter()
        .flat_map(|d| d.defects.iter().map(|x| span(&x.planted, &x.truth)))
        .collect()
}

/// A model that fixes every planted defect it is shown, giving `line` as
/// the line of each fix.
fn fixer(line: usize) -> ScriptedModel {
    let fixes = fixes();
    edit_model(move |chunk| {
        fixes
            .iter()
            .filter(|(planted, _)| chunk.contains(planted.as_str()))
            .map(|(planted, truth)| op(line, planted, truth, "typo"))
            .collect()
    })
}

/// `koas llm eval --seed 3 --samples 4 EXTRA…` against `m`; it must succeed.
fn run_eval(s: &Scratch, m: &ScriptedModel, extra: &[&str]) -> std::process::Output {
    let mut args: Vec<String> = ["llm", "eval", "--seed", "3", "--samples", "4"]
        .iter()
        .chain(extra)
        .map(|a| (*a).to_owned())
        .collect();
    args.extend(llm_flags(m, 2));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = s.koas(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    out
}

fn eval(s: &Scratch, m: &ScriptedModel) -> Value {
    let out = run_eval(s, m, &["--json"]);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("JSON: {e}\n{}", stderr(&out)))
}

fn total(v: &Value, key: &str) -> u64 {
    v["rows"]
        .as_array()
        .map_or(0, |rows| rows.iter().filter_map(|r| r[key].as_u64()).sum())
}

#[test]
fn a_perfect_fixer_fixes_everything_and_harms_nothing() {
    let docs = planted();
    let defects = fixes().len() as u64;
    assert!(defects >= 6, "{defects}");
    let m = fixer(1);
    let s = Scratch::new();
    let v = eval(&s, &m);
    assert_eq!(total(&v, "defects"), defects, "{v:#}");
    assert_eq!(total(&v, "fixed"), defects, "{v:#}");
    assert_eq!(total(&v, "harmful"), 0, "{v:#}");
    assert_eq!(total(&v, "silent_harm"), 0);
    // Both languages are scored, each with a recall of 1.
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 2, "{v:#}");
    assert!(rows.iter().all(|r| r["recall"] == 1.0), "{v:#}");
    // Format compliance: every chunk's answer was read by a rung of the
    // ladder, none degenerate.
    for r in rows {
        let read: u64 = r["ladder"]
            .as_object()
            .map_or(0, |m| m.values().filter_map(Value::as_u64).sum());
        assert!(
            r["chunks"].as_u64().is_some_and(|c| c > 0 && read == c),
            "{r:#}"
        );
        assert_eq!(r["degenerate"], 0, "{r:#}");
    }
    // Run again: the reviews are reused, no model call.
    let calls = m.calls();
    let again = eval(&s, &m);
    assert_eq!(m.calls(), calls, "a finished evaluation costs nothing");
    assert_eq!(total(&again, "fixed"), defects);
    assert_eq!(total(&again, "reused"), 2);

    // Two models side by side (the first one's reviews reused), as a
    // table and an HTML page.
    let out = run_eval(
        &s,
        &m,
        &[
            "--model",
            "scripted",
            "--model",
            "other",
            "--html",
            "out/eval.html",
        ],
    );
    assert!(m.calls() > calls, "the second model was asked");
    let table = String::from_utf8_lossy(&out.stdout);
    for model in ["scripted", "other"] {
        for lang in ["en", "fr"] {
            assert!(
                table.contains(&format!("{model} {lang}: fixed by kind: ")),
                "{table}"
            );
        }
    }
    assert!(
        table.contains("reviews of an earlier run were reused"),
        "{table}"
    );
    let err = stderr(&out);
    let page_path = s.path("out/eval.html");
    assert!(
        err.trim_end()
            .ends_with("koas llm eval: wrote out/eval.html"),
        "{err}"
    );
    let page = std::fs::read_to_string(&page_path).expect("the page was written");
    // Every planted defect is listed once, fixed by each model.
    assert_eq!(
        page.matches("<td class=\"st-applied\">fixed</td>").count() as u64,
        2 * defects,
        "{page}"
    );
    assert!(page.contains("<th>scripted</th><th>other</th>"), "{page}");
    for d in docs.iter().flat_map(|d| &d.defects) {
        assert!(
            page.contains(&format!(">{}</td>", d.kind.as_str())),
            "{page}"
        );
    }
    assert!(page.contains("script-src 'none'"));
    // The planted words are highlighted, as the review report shows a
    // change.
    assert!(page.contains("<td class=\"text del\">"), "{page}");
    assert!(page.contains("<span class=\"hl\">"), "{page}");
    // Regression (issue 49): eighteen columns made the page wider than a
    // 1,400-pixel window. In a real browser at that width, nothing scrolls
    // sideways (the measure is a script added to a copy of the page, its
    // policy of no script taken off).
    if let Some(browser) = crate::html_report::chromium() {
        let csp = regex::Regex::new(r#"<meta http-equiv="Content-Security-Policy"[^>]*>"#)
            .expect("regex");
        let measured = csp.replace(&page, "").replace(
            "</body>",
            "<script>var d = document.documentElement; document.body.setAttribute('data-fit', d.scrollWidth <= window.innerWidth ? 'yes' : 'no ' + d.scrollWidth + ' > ' + window.innerWidth);</script></body>",
        );
        let copy = s.path("out/measured.html");
        std::fs::write(&copy, measured).expect("write the copy");
        let profile = tempfile::tempdir().expect("profile");
        let (dom, _) = crate::html_report::browse(
            &browser,
            profile.path(),
            &[
                "--window-size=1400,900",
                "--dump-dom",
                "--virtual-time-budget=2000",
            ],
            &format!("file://{}", copy.display()),
        );
        assert!(dom.contains("data-fit=\"yes\""), "{}", {
            let at = dom.find("data-fit").unwrap_or(0);
            dom.get(at..at + 60).unwrap_or("no measure").to_owned()
        });
    } else {
        println!("SKIPPED: the 1,400-pixel check needs chromium");
    }
}

#[test]
fn wrong_line_numbers_careless_changes_and_prose_only() {
    let defects = fixes().len() as u64;
    // Right text, wrong line numbers: the ops still land.
    let lost = fixer(400);
    let v = eval(&Scratch::new(), &lost);
    assert!(total(&v, "fixed") >= defects - 1, "{v:#}");

    // Careless: meaning changed where nothing was planted, called typos.
    let careless = edit_model(|chunk| {
        let mut ops = Vec::new();
        for (before, after) in [
            (
                "Only two people may run the job by hand",
                "Anyone may run the job by hand",
            ),
            (
                "Seules deux personnes peuvent lancer la tâche à la main",
                "Tout le monde peut lancer la tâche à la main",
            ),
            (
                "keeps the records on its\nlocal disk for at most one hour",
                "keeps the records on its\nlocal disk for at most one day",
            ),
            ("pendant une heure au plus", "pendant une semaine au plus"),
        ] {
            if chunk.contains(before) {
                ops.push(op(1, before, after, "typo"));
            }
        }
        ops
    });
    let v = eval(&Scratch::new(), &careless);
    assert!(total(&v, "harmful") >= 2, "{v:#}");
    assert_eq!(
        total(&v, "silent_harm"),
        0,
        "the guards let harm through silently: {v:#}"
    );
    assert_eq!(total(&v, "fixed"), 0);

    // Prose only: nothing proposed, nothing fixed, no failure.
    let prose =
        ScriptedModel::start(|_: &ModelRequest| ModelAnswer::text("This section reads well."));
    let v = eval(&Scratch::new(), &prose);
    assert_eq!(total(&v, "fixed"), 0, "{v:#}");
    assert_eq!(total(&v, "missed"), defects, "{v:#}");
    // Its prose is kept as notes, which change nothing: not harm.
    assert_eq!(total(&v, "proposals"), 0, "{v:#}");
    assert_eq!(total(&v, "harmful"), 0, "{v:#}");
}
