//! Adversarial documents: none may panic, all must finish, and the figures
//! must still be right. Large inputs are generated here, not committed.

use koas_kernel_api::hash::sha256;
use koas_md::stage1::{self, Stage1};
use koas_md::{inventory, MdError};
use koas_review_schema::stage1::{BlockKind, ChunkConfig, InlineKind, LineEndingStyle};

const SPEC: &str = include_str!("../../../../examples/spec-example.md");

fn run(text: &str) -> Stage1 {
    stage1::run("adversarial.md", text, ChunkConfig::default()).expect("stage 1")
}

fn covers_every_line(s: &Stage1) {
    let mut next = 1;
    for c in &s.chunks.chunks {
        assert_eq!(c.line_start, next);
        next = c.line_end + 1;
    }
    assert_eq!(next, s.stats.lines + 1);
}

#[test]
fn empty_file() {
    let s = run("");
    assert_eq!(s.stats.lines, 0);
    assert_eq!(s.stats.bytes, 0);
    assert_eq!(s.structure.tree.heading_count, 0);
    assert!(s.structure.tree.preamble.is_none());
    assert!(s.spans.blocks.is_empty() && s.spans.inlines.is_empty());
    assert!(s.chunks.chunks.is_empty());
    assert_eq!(s.doc_hash, sha256(b""));
}

#[test]
fn only_front_matter() {
    for text in [
        "---\ntitle: x\nlist: [a, b]\n---\n",
        "---\ntitle: x\n---",
        "+++\na = 1\n+++\n",
    ] {
        let s = run(text);
        assert_eq!(s.structure.tree.heading_count, 0, "{text:?}");
        let fm = s.stats.front_matter.as_ref().expect("front matter");
        assert_eq!(fm.line_end, s.stats.lines);
        assert_eq!(s.spans.blocks.len(), 1);
        assert!(matches!(
            s.spans.blocks[0].kind,
            BlockKind::YamlFrontMatter | BlockKind::TomlFrontMatter
        ));
        assert_eq!(s.chunks.chunks.len(), 1);
        assert_eq!(s.chunks.chunks[0].section_id, "S0");
        covers_every_line(&s);
    }
}

#[test]
fn unclosed_fences_run_to_the_end() {
    let text =
        "# Start\n\ntext\n\n````python\ndef f():\n    pass\n\n# Not a heading\n\n```\nstill code\n";
    let s = run(text);
    assert_eq!(s.structure.tree.heading_count, 1);
    assert_eq!(s.spans.blocks.len(), 1);
    let b = &s.spans.blocks[0];
    assert_eq!(
        (b.kind, b.line_start, b.line_end),
        (BlockKind::CodeFence, 5, 12)
    );
    assert_eq!(b.info.as_deref(), Some("python"));
    covers_every_line(&s);
}

#[test]
fn a_table_of_ten_thousand_rows() {
    let mut text = String::from("# Data\n\n| id | name | value |\n|---:|------|-------|\n");
    for i in 0..10_000 {
        text.push_str(&format!("| {i} | row {i} | `v{i}` |\n"));
    }
    text.push_str("\nAfter the table.\n");
    let s = run(&text);
    assert_eq!(s.stats.lines, 10_006);
    assert_eq!(s.stats.tables, 1);
    let t = &s.spans.blocks[0];
    assert_eq!(
        (t.kind, t.line_start, t.line_end),
        (BlockKind::Table, 3, 10_004)
    );
    // Inline code inside the table is covered by the table span.
    assert!(s.spans.inlines.is_empty());
    // The table cannot be split: one oversized chunk holds it whole.
    let holder = s
        .chunks
        .chunks
        .iter()
        .find(|c| c.line_start <= 3 && c.line_end >= 10_004)
        .expect("one chunk holds the table");
    assert!(holder.oversized);
    covers_every_line(&s);
}

/// About 50 MB: the example specification repeated. The whole of Stage 1
/// must finish (it takes a few seconds in a debug build; the benchmark
/// measures the release build).
#[test]
fn a_fifty_megabyte_document() {
    let reps = 50 * 1024 * 1024 / SPEC.len() + 1;
    let text = SPEC.repeat(reps);
    assert!(text.len() >= 50 * 1024 * 1024);
    let s = run(&text);
    assert_eq!(s.stats.lines as usize, 238 * reps);
    // Only the first copy's front matter is front matter; later `---`
    // lines are thematic breaks or setext underlines.
    assert!(s.stats.front_matter.is_some());
    // Each copy: 22 headings, plus "title: … Specification" and "owners: …"
    // lines that become setext H2s over the next copy's `---` lines… only
    // for copies 2 and later, and only the `owners` line (directly above
    // `---`): one extra heading per later copy.
    assert_eq!(
        s.structure.tree.heading_count as usize,
        22 * reps + (reps - 1)
    );
    covers_every_line(&s);
}

#[test]
fn a_single_one_megabyte_line() {
    let unit = "word `code` and $x$ see https://example.org/p ";
    let line = unit.repeat(1024 * 1024 / unit.len() + 1);
    let text = format!("# Long\n\n{line}\n");
    let s = run(&text);
    assert_eq!(s.stats.lines, 3);
    assert!(s.stats.max_line_bytes >= 1024 * 1024);
    let per_unit = 3; // code, math, bare URL
    let units = line.matches("word").count();
    assert_eq!(s.spans.inlines.len(), units * per_unit);
    let last = s.spans.inlines.last().expect("spans");
    assert_eq!(last.kind, InlineKind::BareUrl);
    // Columns are counted in chars on the long line.
    let expected_col = (units - 1) * unit.chars().count() + "word `code` and $x$ see ".len() + 1;
    assert_eq!(last.column as usize, expected_col);
    // One paragraph line cannot be split: an oversized chunk.
    assert!(s.chunks.chunks.iter().any(|c| c.oversized));
    covers_every_line(&s);
}

#[test]
fn lists_and_blockquotes_nested_a_hundred_deep() {
    let mut text = String::from("# Deep\n\n");
    for i in 0..100 {
        text.push_str(&format!("{}- level {i}\n", "  ".repeat(i)));
    }
    text.push('\n');
    for i in 1..=100 {
        text.push_str(&format!("{} quoted {i}\n", ">".repeat(i)));
    }
    text.push_str(&format!(
        "\n{}# heading inside quotes\n\n## After\n",
        "> ".repeat(100)
    ));
    let s = run(&text);
    // The heading inside 100 block quotes is not a section heading.
    assert_eq!(s.structure.tree.heading_count, 2);
    assert_eq!(s.structure.sections.sections[1].title, "After");
    covers_every_line(&s);
}

#[test]
fn headings_inside_code_and_html_are_not_headings() {
    let text = "\
# Real

```
# in backticks
```

~~~
## in tildes
~~~

    # in indented code

<div>
### in html
</div>

<!--
#### in a comment
-->

<pre>
# in pre

# still in pre
</pre>

## Also real
";
    let s = run(text);
    let titles: Vec<&str> = s
        .structure
        .sections
        .sections
        .iter()
        .map(|e| e.title.as_str())
        .collect();
    assert_eq!(titles, vec!["Real", "Also real"]);
    let kinds: Vec<BlockKind> = s.spans.blocks.iter().map(|b| b.kind).collect();
    assert_eq!(
        kinds,
        vec![
            BlockKind::CodeFence,
            BlockKind::CodeFence,
            BlockKind::IndentedCode,
            BlockKind::HtmlBlock,
            BlockKind::HtmlBlock,
            BlockKind::HtmlBlock
        ]
    );
}

#[test]
fn crlf_and_bom_are_kept_exactly() {
    let lf = "# Titre\n\nTexte `code` ici.\n\n```\nx\n```\n";
    let text = format!("\u{feff}{}", lf.replace('\n', "\r\n"));
    let s = run(&text);
    assert!(s.stats.has_bom);
    assert_eq!(s.stats.line_endings.style, LineEndingStyle::Crlf);
    assert_eq!(s.stats.lines, 7);
    assert_eq!(s.doc_hash, sha256(text.as_bytes()));
    // Same structure and spans as the LF version.
    let plain = run(lf);
    assert_eq!(
        s.structure.sections.sections.len(),
        plain.structure.sections.sections.len()
    );
    let lines = |x: &Stage1| -> Vec<(u32, u32)> {
        x.spans
            .blocks
            .iter()
            .map(|b| (b.line_start, b.line_end))
            .collect()
    };
    assert_eq!(lines(&s), lines(&plain));
    // Hashes are over the exact bytes, CRLF included, BOM excluded.
    assert_eq!(s.spans.blocks[0].content_hash, sha256(b"```\r\nx\r\n```"));
    let code = &s.spans.inlines[0];
    assert_eq!((code.line, code.column), (3, 7));
    assert_eq!(
        &text[code.byte_start as usize..code.byte_end as usize],
        "`code`"
    );
    // The chunks reproduce the document byte for byte.
    let mut rebuilt = String::from("\u{feff}");
    for c in &s.chunks.chunks {
        rebuilt.push_str(&text[c.byte_start as usize..c.byte_end as usize]);
    }
    assert_eq!(rebuilt, text);
}

#[test]
fn invalid_utf8_and_binary_are_clear_errors() {
    let mut bytes = b"# Title\n\nSome text ".to_vec();
    bytes.push(0xC3); // a lone lead byte
    bytes.extend_from_slice(b"( more\n");
    let err = inventory::decode("docs/broken.md", &bytes).expect_err("not UTF-8");
    assert_eq!(
        err,
        MdError::NotUtf8 {
            path: "docs/broken.md".into(),
            offset: 19
        }
    );
    let msg = err.to_string();
    assert!(
        msg.contains("docs/broken.md") && msg.contains("offset 19"),
        "{msg}"
    );

    let err = stage1::run("image.png", "PNG\r\n\u{1a}\n\0\0\0", ChunkConfig::default())
        .expect_err("binary");
    assert_eq!(
        err,
        MdError::Binary {
            path: "image.png".into(),
            offset: 7
        }
    );
}
