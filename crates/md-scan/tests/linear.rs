//! Issue 45: every detector stays (near) linear on adversarial documents.
//! Each test builds a document of `n` units for one detector (thousands of
//! headings, broken links, table rows, list items, footnotes, captions…),
//! grows `n` until the check takes at least [`MIN_SMALL`], then times the
//! check at `n` and `4n` (best of 3) and asserts the ratio stays under
//! [`MAX_RATIO`]: 4× the work, a log factor and a wide margin for a shared
//! machine; a quadratic detector gives about 16.
//!
//! The timings are printed (`cargo test -p koas-md-scan --test linear --
//! --nocapture`).

use koas_md_scan::config::ProjectConfig;
use koas_md_scan::Checker;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The smaller run must take this long, so that noise is small beside it.
const MIN_SMALL: Duration = Duration::from_millis(60);
/// `time(4n) / time(n)` above this fails: linear is 4, n log n a bit
/// more, quadratic 16.
const MAX_RATIO: f64 = 10.0;

/// The timed runs take turns: tests run in parallel, and two timings on
/// a 2-core machine at once would measure each other.
static TURN: Mutex<()> = Mutex::new(());

fn best_of_3(checker: &Checker, text: &str) -> Duration {
    (0..3)
        .map(|_| {
            let started = Instant::now();
            let out = checker.check(text).expect("check");
            let took = started.elapsed();
            std::hint::black_box(out);
            took
        })
        .min()
        .unwrap_or_default()
}

/// Asserts that checking `make(4n)` costs less than [`MAX_RATIO`] times
/// checking `make(n)`, `n` grown from `start` until the small run takes
/// [`MIN_SMALL`].
fn assert_linear(name: &str, start: usize, make: impl Fn(usize) -> String) {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let checker = Checker::new(&ProjectConfig::default()).expect("default config");
    // Warm the regexes once so the first timing does not pay for them.
    let _ = checker.check(&make(start));
    let mut n = start;
    let (small_text, small) = loop {
        let text = make(n);
        let took = best_of_3(&checker, &text);
        if took >= MIN_SMALL || n >= start * 256 {
            break (text, took);
        }
        n *= 2;
    };
    let big_text = make(4 * n);
    let big = best_of_3(&checker, &big_text);
    let ratio = big.as_secs_f64() / small.as_secs_f64().max(1e-6);
    eprintln!(
        "linear {name}: n={n} ({} KiB) {small:?}, 4n ({} KiB) {big:?}, ratio {ratio:.2}",
        small_text.len() / 1024,
        big_text.len() / 1024
    );
    assert!(
        ratio < MAX_RATIO,
        "{name}: time(4n)/time(n) = {ratio:.2} (n={n}: {small:?}, 4n: {big:?}): grows faster than n log n"
    );
}

const WORDS: [&str; 12] = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    "kilo", "lima",
];

fn words(i: usize, k: usize) -> String {
    (0..k)
        .map(|j| WORDS[(i / 12usize.pow(j as u32) + j) % 12])
        .collect::<Vec<_>>()
        .join(" ")
}

/// The finding of issue 45: thousands of headings and as many broken
/// links whose fragments are all about as long as the anchors.
#[test]
fn broken_anchor_suggestions_are_linear() {
    assert_linear("broken anchors", 200, |n| {
        let mut s = String::from("# Document\n\n");
        for i in 0..n {
            let w = words(i, 3);
            let _ = write!(
                s,
                "## Section {w} {i}\n\nSee [it](#part-{}-{i}x) and [near](#section-{}-{i}s).\n\n",
                w.replace(' ', "-"),
                w.replace(' ', "-")
            );
        }
        s
    });
}

/// Broken links next to many HTML comments (a site macro in a comment may
/// make an anchor: each broken link looks through the comments).
#[test]
fn broken_anchors_among_comments_are_linear() {
    assert_linear("broken anchors and comments", 200, |n| {
        let mut s = String::from("# Document\n\n");
        for i in 0..n {
            let _ = write!(
                s,
                "<!-- md:option type:{} {i} -->\n\nSee [x](#missing-{i}-{}).\n\n",
                words(i, 2),
                words(i + 7, 2).replace(' ', "-")
            );
        }
        s
    });
}

/// Headings with the same title (anchors `x`, `x-1`, `x-2`, …), level
/// skips and numbered headings with gaps and duplicates.
#[test]
fn headings_levels_and_numbers_are_linear() {
    assert_linear("headings", 200, |n| {
        let mut s = String::from("# Document\n\n");
        for i in 0..n {
            let _ = write!(
                s,
                "## Overview\n\n#### {}.{} Details\n\n## {}. Results\n\nSee section {}.{}.\n\n",
                i / 3,
                i % 7,
                i - i % 2,
                i + 3,
                i
            );
        }
        s
    });
}

/// One long table with numbers, percentages and ragged rows, then prose
/// claims about it.
#[test]
fn table_rows_are_linear() {
    assert_linear("table rows", 200, |n| {
        let mut s = String::from(
            "# Tables\n\nThe table lists 12 items totalling 500 units.\n\n| Item | Share | Count | Note |\n|---|---|---|---|\n",
        );
        for i in 0..n {
            let extra = if i % 5 == 0 { " | extra |" } else { " |" };
            let _ = writeln!(
                s,
                "| {} {i} | {}% | {} | [see](#row-{i}){extra}",
                words(i, 2),
                i % 40,
                i * 3
            );
        }
        s.push_str("\nIn total 73% of the 12 items.\n");
        s
    });
}

/// Many tables, each with a claim before it.
#[test]
fn many_small_tables_are_linear() {
    assert_linear("many tables", 100, |n| {
        let mut s = String::from("# Tables\n\n");
        for i in 0..n {
            let _ = write!(
                s,
                "Table {i}: the {} services handle 40% of 3 regions.\n\n| Service | Share |\n|---|---|\n| {} | 30% |\n| {} | 50% |\n\n",
                i % 9 + 2,
                words(i, 1),
                words(i + 1, 1)
            );
        }
        s
    });
}

/// Lists announced with a count they do not have, and deeply nested lists.
#[test]
fn list_items_are_linear() {
    assert_linear("list items", 100, |n| {
        let mut s = String::from("# Lists\n\n");
        for i in 0..n {
            let _ = write!(s, "The {} steps are:\n\n", i % 6 + 2);
            for d in 0..8 {
                let _ = writeln!(
                    s,
                    "{}- step {d} of {} with 12 units",
                    "  ".repeat(d),
                    words(i, 2)
                );
            }
            s.push('\n');
        }
        s
    });
}

/// Deeply nested block quotes and lists.
#[test]
fn deep_nesting_is_linear() {
    assert_linear("deep nesting", 20, |n| {
        let mut s = String::from("# Nesting\n\n");
        for i in 0..n {
            for d in 1..=24 {
                let _ = writeln!(s, "{} - item {i} {d} [x](#no-{i}-{d})", ">".repeat(d));
            }
            s.push('\n');
        }
        s
    });
}

/// Footnote references and definitions.
#[test]
fn footnotes_are_linear() {
    assert_linear("footnotes", 200, |n| {
        let mut s = String::from("# Notes\n\n");
        for i in 0..n {
            let _ = write!(
                s,
                "A claim about {}[^n{i}] and 45% more[^m{i}].\n\n[^n{i}]: Source {i}, page 12.\n\n",
                words(i, 2)
            );
        }
        s
    });
}

/// Figure, table and equation captions with gaps and duplicates, and
/// references to numbers that do not exist.
#[test]
fn captions_and_references_are_linear() {
    assert_linear("captions", 100, |n| {
        let mut s = String::from("# Figures\n\n");
        for i in 0..n {
            let k = i + i / 3;
            let _ = write!(
                s,
                "![plot](p{i}.png)\n\nFigure {k}: {} plot.\n\nTable {i}: {} values.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nSee Figure {} and Table {}, Equation ({i}), figure {}.\n\n",
                words(i, 2),
                words(i + 3, 2),
                k + 1,
                i + 2,
                3 * n + i
            );
        }
        s
    });
}

/// Section references (English and French) to sections that do not exist.
#[test]
fn section_references_are_linear() {
    assert_linear("section references", 100, |n| {
        let mut s = String::from("# Report\n\n");
        for i in 0..n {
            let _ = write!(
                s,
                "## {i}. {}\n\nAs explained in Section {}.{}, see also section {} and voir la section {}.\n\n",
                words(i, 2),
                i + 1,
                i % 4,
                n + i,
                2 * n + i
            );
        }
        s
    });
}

/// Terminology drift: many spellings of many terms.
#[test]
fn terminology_is_linear() {
    assert_linear("terminology", 100, |n| {
        let mut s = String::from("# Terms\n\n");
        let forms = [
            "e-mail",
            "email",
            "E-Mail",
            "data base",
            "database",
            "data-base",
            "set up",
            "setup",
            "set-up",
            "front end",
            "front-end",
            "frontend",
        ];
        for i in 0..n {
            let _ = write!(
                s,
                "The {} of {} uses the {} and the {} {i}.\n\n",
                forms[i % 12],
                words(i, 2),
                forms[(i * 5 + 1) % 12],
                forms[(i * 7 + 2) % 12]
            );
        }
        s
    });
}

/// Repeated and nearly repeated paragraphs.
#[test]
fn duplicate_paragraphs_are_linear() {
    assert_linear("duplicates", 100, |n| {
        let mut s = String::from("# Repeats\n\n");
        for i in 0..n {
            let _ = write!(
                s,
                "The {} service restarts every node of the cluster when the {} check fails {}.\n\n",
                words(i % 50, 2),
                words(i % 7, 1),
                if i % 3 == 0 { "twice" } else { "again" }
            );
        }
        s
    });
}

/// AI leftovers, placeholders and glued headings.
#[test]
fn ai_leftovers_and_glued_headings_are_linear() {
    assert_linear("ai leftovers", 100, |n| {
        let mut s = String::from("# Draft\n\n");
        for i in 0..n {
            let _ = write!(
                s,
                "Certainly! Here is the section about {} [insert figure {i}]. As an AI language model I cannot verify it. ## Next part {i}\n\nTODO: {}\n\n",
                words(i, 2),
                words(i + 1, 3)
            );
        }
        s
    });
}

/// Numbers and percentages in prose: claims that sum or contradict.
#[test]
fn numeric_claims_in_prose_are_linear() {
    assert_linear("numeric claims", 100, |n| {
        let mut s = String::from("# Figures\n\n");
        for i in 0..n {
            let _ = write!(
                s,
                "## Part {i}\n\nOf the {} users, {}% chose {} and {}% chose {}; 3 of 4 regions grew by {}%.\n\n",
                100 + i,
                i % 60,
                words(i, 1),
                (i * 7) % 60,
                words(i + 1, 1),
                i % 13
            );
        }
        s
    });
}

/// A few very long lines full of links, numbers and inline code.
#[test]
fn long_lines_are_linear() {
    assert_linear("long lines", 200, |n| {
        let mut s = String::from("# Long\n\n## Target\n\n");
        for line in 0..4 {
            for i in 0..n {
                let _ = write!(
                    s,
                    "word {} `code {i}` [l](#target-{i}) 12% of {} [t](#targ) ",
                    words(i, 1),
                    i * line
                );
            }
            s.push_str("\n\n");
        }
        s
    });
}

/// A long table where one row in six is short (each short row used to
/// read the whole table again to judge whether it stands out).
#[test]
fn short_table_rows_are_linear() {
    assert_linear("short table rows", 4000, |n| {
        let mut s = String::from("# Table\n\n| a | b | c | d |\n|---|---|---|---|\n");
        for i in 0..n {
            s.push_str(if i % 6 == 5 {
                "| x | 1 |\n"
            } else {
                "| x | 1 | 2 | 3 |\n"
            });
        }
        s
    });
}

/// A few very wide tables of numbers with a percentage column (each row's
/// numbers are paired to tell a computed rate).
#[test]
fn wide_tables_are_linear() {
    assert_linear("wide tables", 50, |n| {
        let mut s = String::from("# Wide\n\n");
        let header: String = (0..n).map(|c| format!(" c{c} |")).collect();
        let delimiter = "---|".repeat(n);
        let _ = write!(s, "| Share |{header}\n|---|{delimiter}\n");
        for r in 0..6 {
            let cells: String = (0..n)
                .map(|c| format!(" {} |", (c * 7 + r) % 97 + 1))
                .collect();
            let _ = writeln!(s, "| {}% |{cells}", 10 + r);
        }
        s
    });
}

/// One line holding thousands of distinct broken links.
#[test]
fn one_line_of_many_links_is_linear() {
    assert_linear("one line of links", 200, |n| {
        let mut s = String::from("# Links\n\n## Target\n\n");
        for i in 0..n {
            let _ = write!(s, "[l{i}](#gone-{i}-{}) ", words(i, 2).replace(' ', "-"));
        }
        s.push('\n');
        s
    });
}

/// Files around the document for the links across files: `target.md` (a
/// big Markdown file, its anchors read once), the folder `many/` of many
/// names, and nothing else.
struct Around {
    names: Vec<String>,
}

impl koas_md_scan::links::LinkTargets for Around {
    fn lookup(&self, path: &str) -> koas_md_scan::links::LinkTarget {
        use koas_md_scan::links::LinkTarget;
        match path {
            "target.md" => LinkTarget::File,
            "many" => LinkTarget::Folder,
            _ => LinkTarget::Missing,
        }
    }

    fn names(&self, folder: &str) -> Option<Vec<String>> {
        (folder == "many").then(|| self.names.clone())
    }

    fn anchors(&self, path: &str) -> Option<std::sync::Arc<koas_md_scan::links::TargetAnchors>> {
        // Rebuilt per call on purpose: the check must ask once per file.
        (path == "target.md").then(|| {
            std::sync::Arc::new(
                koas_md_scan::links::anchors_of(&target_text(self.names.len())).expect("anchors"),
            )
        })
    }
}

/// A linked file of `n` headings and `n` macro comments.
fn target_text(n: usize) -> String {
    let mut s = String::from("# Target\n\n");
    for i in 0..n {
        let _ = write!(
            s,
            "## Part {} {i}\n\n<!-- md:option opt.{} -->\n\n",
            words(i, 3),
            words(i, 2).replace(' ', "_")
        );
    }
    s
}

/// Thousands of links to missing anchors of a big file and to missing
/// files of a big folder: each file's anchors, each folder's names and
/// each file's comments are read once, not once per link.
#[test]
fn links_across_files_are_linear() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let checker = Checker::new(&ProjectConfig::default()).expect("default config");
    let make = |n: usize| {
        let mut s = String::from("# Links\n\n");
        for i in 0..n {
            let _ = writeln!(
                s,
                "See [a](target.md#part-{}-{i}x), [b](target.md#opt.{}-{i}) and [c](many/{}-{i}.md).\n",
                words(i, 3).replace(' ', "-"),
                words(i + 3, 2).replace(' ', "_"),
                words(i, 2).replace(' ', "_")
            );
        }
        let around = Around {
            names: (0..n)
                .map(|i| format!("{}-{i}.md", words(i, 2).replace(' ', "-")))
                .collect(),
        };
        (s, around)
    };
    let time = |n: usize| {
        let (text, around) = make(n);
        (0..3)
            .map(|_| {
                let started = Instant::now();
                let out = checker
                    .check_linked(&text, Some("doc.md"), &around)
                    .expect("check");
                let took = started.elapsed();
                assert!(out.findings.len() >= 3 * n, "every link is broken");
                took
            })
            .min()
            .unwrap_or_default()
    };
    let mut n = 100;
    let small = loop {
        let took = time(n);
        if took >= MIN_SMALL || n >= 100 * 256 {
            break took;
        }
        n *= 2;
    };
    let big = time(4 * n);
    let ratio = big.as_secs_f64() / small.as_secs_f64().max(1e-6);
    eprintln!("links across files: n={n} {small:?}, 4n {big:?}, ratio {ratio:.1}");
    assert!(
        ratio < MAX_RATIO,
        "links across files: ratio {ratio:.1} at n={n}"
    );
}
