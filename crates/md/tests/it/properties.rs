//! Property tests of the chunk plan over random Markdown documents built
//! from headings, paragraphs, fences, tables, lists, quotes, math, HTML and
//! link definitions (LF or CRLF, with or without BOM and front matter):
//!
//! * chunks cover every line, each line owned by exactly one chunk, and a
//!   line is repeated only as configured overlap (same section, within the
//!   overlap budget);
//! * no chunk boundary (nor overlap start) falls inside a protected span;
//! * no chunk crosses a heading;
//! * editing one section leaves the chunk IDs of every other section
//!   unchanged.

use koas_md::stage1::{self, Stage1};
use koas_review_schema::stage1::{ChunkConfig, ChunkPlan, LineNo};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Block {
    Heading {
        level: usize,
        setext: bool,
        title: Vec<String>,
    },
    Para(Vec<Vec<String>>),
    Fence {
        tilde: bool,
        len: usize,
        info: String,
        body: Vec<String>,
        closed: bool,
    },
    Table {
        cols: usize,
        rows: usize,
    },
    List {
        nested: usize,
        items: usize,
    },
    Quote(Vec<Vec<String>>),
    Math(Vec<String>),
    Html(Vec<String>),
    LinkDef(String),
}

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => "[a-zé]{1,9}",
        1 => Just("`code`".to_string()),
        1 => Just("$x^2$".to_string()),
        1 => Just("https://example.org/p".to_string()),
        1 => Just("#".to_string()),
        1 => Just("|".to_string()),
        1 => Just("*em*".to_string()),
    ]
}

fn line() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(word(), 1..14)
}

fn block() -> impl Strategy<Value = Block> {
    prop_oneof![
        3 => (1usize..=6, any::<bool>(), prop::collection::vec("[a-z]{1,7}", 1..4))
            .prop_map(|(level, setext, title)| Block::Heading { level, setext, title }),
        5 => prop::collection::vec(line(), 1..6).prop_map(Block::Para),
        2 => (any::<bool>(), 3usize..6, "[a-z]{0,5}", prop::collection::vec(
                prop_oneof![Just("# not a heading".to_string()), Just(String::new()), "[a-z ]{0,20}"], 0..6),
                prop::bool::weighted(0.9))
            .prop_map(|(tilde, len, info, body, closed)| Block::Fence { tilde, len, info, body, closed }),
        1 => (1usize..5, 1usize..12).prop_map(|(cols, rows)| Block::Table { cols, rows }),
        1 => (1usize..6, 1usize..6).prop_map(|(nested, items)| Block::List { nested, items }),
        1 => prop::collection::vec(line(), 1..4).prop_map(Block::Quote),
        1 => prop::collection::vec("[a-z+=^ ]{1,12}", 1..4).prop_map(Block::Math),
        1 => prop::collection::vec(prop_oneof![Just("# in html".to_string()), "[a-z ]{1,12}"], 0..4).prop_map(Block::Html),
        1 => "[a-z]{1,6}".prop_map(Block::LinkDef),
    ]
}

fn render(b: &Block) -> Vec<String> {
    match b {
        Block::Heading {
            level,
            setext,
            title,
        } => {
            let t = title.join(" ");
            if *setext && *level <= 2 {
                vec![
                    t,
                    if *level == 1 {
                        "====".into()
                    } else {
                        "----".into()
                    },
                ]
            } else {
                vec![format!("{} {t}", "#".repeat(*level))]
            }
        }
        Block::Para(lines) => lines.iter().map(|l| l.join(" ")).collect(),
        Block::Fence {
            tilde,
            len,
            info,
            body,
            closed,
        } => {
            let fence = if *tilde { "~" } else { "`" }.repeat(*len);
            let mut out = vec![format!("{fence}{info}")];
            out.extend(body.iter().cloned());
            if *closed {
                out.push(fence);
            }
            out
        }
        Block::Table { cols, rows } => {
            let row = |c: &str| format!("|{}", format!(" {c} |").repeat(*cols));
            let mut out = vec![row("h"), row("---")];
            out.extend((0..*rows).map(|i| row(&i.to_string())));
            out
        }
        Block::List { nested, items } => (0..*items)
            .map(|i| format!("{}- item {i}", "  ".repeat(i % nested)))
            .collect(),
        Block::Quote(lines) => lines.iter().map(|l| format!("> {}", l.join(" "))).collect(),
        Block::Math(lines) => {
            let mut out = vec!["$$".to_string()];
            out.extend(lines.iter().cloned());
            out.push("$$".into());
            out
        }
        Block::Html(lines) => {
            let mut out = vec!["<div>".to_string()];
            out.extend(lines.iter().cloned());
            out.push("</div>".into());
            out
        }
        Block::LinkDef(label) => vec![format!("[{label}]: https://example.org/{label}")],
    }
}

#[derive(Debug, Clone)]
struct Doc {
    blocks: Vec<Block>,
    crlf: bool,
    bom: bool,
    front_matter: bool,
}

fn doc() -> impl Strategy<Value = Doc> {
    (
        prop::collection::vec(block(), 0..40),
        any::<bool>(),
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(blocks, crlf, bom, front_matter)| Doc {
            blocks,
            crlf,
            bom,
            front_matter,
        })
}

fn text_of(d: &Doc) -> String {
    let mut lines: Vec<String> = Vec::new();
    if d.front_matter {
        lines.extend(["---".to_string(), "title: t".to_string(), "---".to_string()]);
    }
    for b in &d.blocks {
        lines.extend(render(b));
        lines.push(String::new());
    }
    let nl = if d.crlf { "\r\n" } else { "\n" };
    let mut text = if d.bom {
        "\u{feff}".to_string()
    } else {
        String::new()
    };
    text.push_str(&lines.join(nl));
    text
}

fn config(max: u32, overlap: u32, min: u32) -> ChunkConfig {
    ChunkConfig {
        max_chunk_tokens: max,
        overlap_tokens: overlap,
        min_chunk_tokens: min,
    }
}

fn stage1(text: &str, cfg: ChunkConfig) -> Stage1 {
    stage1::run("prop.md", text, cfg).expect("stage 1 never fails on text")
}

/// Checks the coverage, overlap, protected-span and heading invariants.
fn check_plan(s: &Stage1, cfg: ChunkConfig) -> Result<(), TestCaseError> {
    let plan: &ChunkPlan = &s.chunks;
    let n = s.stats.lines;
    let mut owners = vec![0u32; n as usize + 1];
    let mut seen = vec![0u32; n as usize + 1];
    let mut next = 1;
    for c in &plan.chunks {
        prop_assert_eq!(c.line_start, next, "chunks must be contiguous");
        prop_assert!(c.line_end >= c.line_start);
        next = c.line_end + 1;
        for l in c.line_start..=c.line_end {
            owners[l as usize] += 1;
            seen[l as usize] += 1;
        }
        if let Some(o) = c.overlap_line_start {
            prop_assert!(o < c.line_start);
            prop_assert!(c.overlap_token_estimate <= cfg.overlap_tokens);
            let prev = &plan.chunks[c.index as usize - 1];
            prop_assert_eq!(
                &prev.section_id,
                &c.section_id,
                "overlap stays in its section"
            );
            prop_assert!(o >= prev.line_start);
            for l in o..c.line_start {
                seen[l as usize] += 1;
            }
            for b in &s.spans.blocks {
                prop_assert!(
                    !(b.line_start < o && o <= b.line_end),
                    "overlap starts inside {:?}",
                    b
                );
            }
        }
        for b in &s.spans.blocks {
            prop_assert!(
                !(b.line_start < c.line_start && c.line_start <= b.line_end),
                "chunk {} starts inside {:?}",
                c.chunk_id,
                b
            );
        }
        prop_assert!(c
            .chunk_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
    }
    prop_assert_eq!(next, n + 1, "chunks must reach the last line");
    for l in 1..=n as usize {
        prop_assert_eq!(owners[l], 1, "line {} owned {} times", l, owners[l]);
        prop_assert!(seen[l] <= 2);
    }
    let starts: std::collections::HashSet<LineNo> =
        plan.chunks.iter().map(|c| c.line_start).collect();
    for sec in &s.structure.sections.sections {
        let inside_block = s
            .spans
            .blocks
            .iter()
            .any(|b| b.line_start < sec.line_start && sec.line_start <= b.line_end);
        prop_assert!(!inside_block, "heading {} inside a protected block", sec.id);
        let folded = sec.line_start > 1
            && starts.contains(&1)
            && (1..sec.line_start).all(|l| {
                let c = plan
                    .chunks
                    .iter()
                    .find(|c| c.line_start <= l && l <= c.line_end);
                c.is_some_and(|c| c.section_id == sec.id)
            });
        prop_assert!(
            starts.contains(&sec.line_start) || folded,
            "heading {} at line {} does not start a chunk",
            sec.id,
            sec.line_start
        );
        // The chunk holding the heading belongs to its section.
        let holder = plan
            .chunks
            .iter()
            .find(|c| c.line_start <= sec.line_start && sec.line_start <= c.line_end);
        prop_assert_eq!(holder.map(|c| c.section_id.as_str()), Some(sec.id.as_str()));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn chunk_invariants_hold_with_default_config(d in doc()) {
        let cfg = ChunkConfig::default();
        let text = text_of(&d);
        let s = stage1(&text, cfg);
        check_plan(&s, cfg)?;
    }

    #[test]
    fn chunk_invariants_hold_with_small_budgets(d in doc(), max in 1u32..60, overlap in 0u32..30, min in 0u32..20) {
        let cfg = config(max, overlap, min);
        let text = text_of(&d);
        let s = stage1(&text, cfg);
        check_plan(&s, cfg)?;
    }

    #[test]
    fn editing_one_section_keeps_the_other_chunk_ids(
        sections in prop::collection::vec(
            (prop::collection::vec("[a-z]{1,7}", 1..3), prop::collection::vec(block(), 0..6)), 2..8),
        pick in any::<prop::sample::Index>(),
        extra in "[a-z]{1,8}",
        max in 20u32..400,
    ) {
        // Each section: a unique H2, a paragraph to edit, then random blocks
        // without headings (so the edit cannot change the structure).
        let build = |edited: Option<usize>| {
            let mut blocks = Vec::new();
            for (i, (title, body)) in sections.iter().enumerate() {
                let mut t = title.clone();
                t.push(format!("n{i}"));
                blocks.push(Block::Heading { level: 2, setext: false, title: t });
                let mut para = vec![vec!["section".to_string(), format!("body{i}")]];
                if edited == Some(i) {
                    para[0].push(extra.clone());
                }
                blocks.push(Block::Para(para));
                blocks.extend(body.iter().filter(|b| !matches!(b, Block::Heading { .. } | Block::Fence { closed: false, .. })).cloned());
            }
            text_of(&Doc { blocks, crlf: false, bom: false, front_matter: false })
        };
        let target = pick.index(sections.len());
        let cfg = config(max, 10, 5);
        let before = stage1(&build(None), cfg);
        let after = stage1(&build(Some(target)), cfg);
        let ids = |s: &Stage1| -> Vec<(String, String)> {
            s.structure.sections.sections.iter().map(|e| (e.id.clone(), e.anchor.clone())).collect()
        };
        prop_assert_eq!(ids(&before), ids(&after), "section IDs and anchors must not move");
        // Identify the edited section by its unique title suffix: a random
        // block may itself be a heading (a lone `#` line is an empty H1).
        let suffix = format!(" n{target}");
        let edited_id = before
            .structure
            .sections
            .sections
            .iter()
            .find(|e| e.title.ends_with(&suffix))
            .map(|e| e.id.clone())
            .expect("the edited section exists");
        let others = |s: &Stage1| -> Vec<String> {
            s.chunks.chunks.iter().filter(|c| c.section_id != edited_id).map(|c| c.chunk_id.clone()).collect()
        };
        prop_assert_eq!(others(&before), others(&after));
        let edited = |s: &Stage1| -> Vec<String> {
            s.chunks.chunks.iter().filter(|c| c.section_id == edited_id).map(|c| c.chunk_id.clone()).collect()
        };
        prop_assert_ne!(edited(&before), edited(&after), "the edited section's first chunk changes");
    }
}
