use super::*;

fn changes(before: &str, after: &str) -> Vec<ShapeChange> {
    compare(&shape_of(before, false), &shape_of(after, false))
}

fn whats(before: &str, after: &str) -> Vec<String> {
    changes(before, after).into_iter().map(|c| c.what).collect()
}

#[test]
fn a_word_fix_keeps_the_shape() {
    for (b, a) in [
        ("## Payment routng\n", "## Payment routing\n"),
        ("- one\n- tow\n- three\n", "- one\n- two\n- three\n"),
        ("Some *emphasised* txt.\n", "Some *emphasised* text.\n"),
        (
            "| a | b |\n|---|---|\n| 1 | 2 |\n",
            "| a | b |\n|---|---|\n| 1 | 3 |\n",
        ),
        ("> quoted txt\n", "> quoted text\n"),
        (
            "<details>\n<summary>More</summary>\n\nBody txt.\n\n</details>\n",
            "<details>\n<summary>More</summary>\n\nBody text.\n\n</details>\n",
        ),
    ] {
        assert_eq!(whats(b, a), Vec::<String>::new(), "{b:?} → {a:?}");
    }
}

#[test]
fn a_heading_turned_into_a_paragraph_is_named() {
    let c = changes(
        "## Payment routing\n\nText.\n",
        "Payment routing\n\nText.\n",
    );
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0].area, Area::Heading);
    assert!(c[0].area.is_block());
    assert_eq!(
        c[0].what,
        "heading (level 2) turned into a paragraph: 'Payment routing'"
    );
    assert!(!c[0].leaves_open);
    let up = changes("## Scope\n", "### Scope\n");
    assert_eq!(up[0].what, "heading level 2 → 3: 'Scope'");
    let made = changes("Scope\n\nText.\n", "# Scope\n\nText.\n");
    assert_eq!(
        made[0].what,
        "paragraph turned into a heading (level 1): 'Scope'"
    );
}

#[test]
fn a_list_marker_removed_is_named() {
    let c = whats("- one\n- two\n- three\n", "- one\ntwo\n- three\n");
    assert_eq!(
        c,
        ["list item removed, its text joined the text around it: 'two'"]
    );
    let loose = whats("Intro.\n\n- only item\n", "Intro.\n\nonly item\n");
    assert_eq!(loose, ["list item turned into a paragraph: 'only item'"]);
}

#[test]
fn a_delimiter_row_under_a_sentence_makes_a_table() {
    let c = changes(
        "The rules apply | to everyone.\n",
        "The rules apply | to everyone.\n|---|---|\n",
    );
    assert!(!c.is_empty());
    assert_eq!(c[0].area, Area::Table, "{c:?}");
    assert!(c[0].what.contains("table"), "{c:?}");
    // A delimiter row under a line without a pipe stays text for this
    // parser, but other renderers make a table of it: it is named too.
    let loose = changes("A sentence.\n", "A sentence.\n|---|\n");
    assert_eq!(loose.len(), 1, "{loose:?}");
    assert_eq!(loose[0].area, Area::Table);
    // A row removed from a table is named too.
    let rows = whats(
        "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n",
        "| a | b |\n|---|---|\n| 1 | 2 |\n",
    );
    assert_eq!(rows, ["table row removed: '3 4'"]);
}

#[test]
fn html_left_open_and_fences_left_open_are_breaking() {
    let c = changes(
        "A paragraph ends here.\n",
        "A paragraph ends here. <details>\n",
    );
    assert_eq!(c.len(), 1, "{c:?}");
    assert!(c[0].leaves_open);
    assert_eq!(c[0].area, Area::Html);
    assert!(c[0].what.contains("<details> left open"), "{}", c[0].what);
    let block = changes("Text.\n", "<details>\n\nText.\n");
    assert!(block.iter().any(|c| c.leaves_open), "{block:?}");
    let fence = changes("Last paragraph.\n", "Last paragraph.\n\n```\n");
    assert!(
        fence
            .iter()
            .any(|c| c.leaves_open && c.what.starts_with("code fence left open")),
        "{fence:?}"
    );
    // A comment opened on a line of its own hides the rest of the
    // document; one inside a paragraph is only text.
    // A bare fence written just above a fenced block turns its opening
    // line into content: found, though the fences still pair up.
    let moved = changes(
        "**Input:**\n```json\n{\"a\": 1}\n```\n",
        "**Input:**\n\n```\n```json\n{\"a\": 1}\n```\n",
    );
    assert!(
        moved
            .iter()
            .any(|c| c.area == Area::Code && c.what.starts_with("code block content changed")),
        "{moved:?}"
    );
    let comment = changes(
        "Visible.\n\nAlso visible.\n",
        "Visible.\n\n<!--\n\nAlso visible.\n",
    );
    assert!(comment.iter().any(|c| c.leaves_open), "{comment:?}");
    assert!(changes("Visible.\n", "Visible. <!--\n").is_empty());
    // A balanced tag is a change, but leaves nothing open.
    let balanced = changes("Some text.\n", "Some <b>text</b>.\n");
    assert_eq!(balanced.len(), 1);
    assert!(!balanced[0].leaves_open);
    assert_eq!(balanced[0].what, "HTML <b> added");
    // Void elements need no closing tag.
    assert!(!changes("a\n", "a<br>\n").iter().any(|c| c.leaves_open));
}

#[test]
fn inline_formatting_changes_are_not_block_changes() {
    let c = changes("Some text here.\n", "Some **text** here.\n");
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].what, "bold added (0 → 1)");
    assert!(!c[0].area.is_block());
    let split = changes(
        "One sentence. Another one.\n",
        "One sentence.\n\nAnother one.\n",
    );
    assert_eq!(split.len(), 1, "{split:?}");
    assert_eq!(split[0].area, Area::Paragraph);
    let img = changes("See it.\n", "See it. ![x](http://t.example/p.png)\n");
    assert!(img
        .iter()
        .any(|c| c.area == Area::Image && c.area.is_block()));
}

#[test]
fn a_task_box_ticked_or_a_rule_added_is_named() {
    let c = whats("- [ ] ship it\n", "- [x] ship it\n");
    assert_eq!(c.len(), 1, "{c:?}");
    assert!(c[0].contains("task list item"), "{c:?}");
    let rule = changes(
        "Para one.\n\nPara two.\n",
        "Para one.\n\n---\n\nPara two.\n",
    );
    assert_eq!(rule[0].area, Area::Rule);
    // A setext underline under a paragraph makes it a heading.
    let setext = changes("Title\n\nText.\n", "Title\n---\n\nText.\n");
    assert_eq!(setext[0].area, Area::Heading, "{setext:?}");
}

#[test]
fn front_matter_is_only_skipped_at_the_start_of_a_document() {
    let doc = "---\ntitle: x\n---\n# Head\n";
    let whole = shape_of(doc, true);
    assert_eq!(whole.blocks.len(), 1, "{whole:?}");
    let piece = shape_of(doc, false);
    assert!(piece.blocks.len() > 1, "{piece:?}");
}

#[test]
fn top_level_blocks_cover_each_block_once() {
    let doc = "---\nt: 1\n---\n# Title\n\nPara one\nstill one.\n\n- a\n- b\n\n  more b\n\n---\n\n| x | y |\n|---|---|\n| 1 | 2 |\n";
    let blocks = top_level_blocks(doc);
    // A loose list's range holds the blank line after it.
    assert_eq!(
        blocks,
        vec![0..3, 3..4, 5..7, 8..13, 13..14, 15..18],
        "{blocks:?}"
    );
}

#[test]
fn a_piece_cut_at_top_level_blocks_parses_as_in_the_document() {
    let doc = "# T\n\n> quote\n> more\n\n1. x\n2. y\n\n```rs\nfn f() {}\n```\n\nEnd.\n";
    let whole = shape_of(doc, true);
    let lines: Vec<&str> = doc.split_inclusive('\n').collect();
    let mut pieces = Vec::new();
    for r in top_level_blocks(doc) {
        pieces.extend(shape_of(&lines[r].concat(), false).blocks);
    }
    assert_eq!(pieces, whole.blocks);
}
