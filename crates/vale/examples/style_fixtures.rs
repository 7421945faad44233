//! Runs a Vale style repository's fixtures the way its tests run Vale:
//! for each `fixtures/<Name>/` with a `.vale.ini` and a `test.md`, the
//! rules its `.vale.ini` turns on, on the blocks of `test.md` their
//! scopes take (headings, paragraphs, list items, blockquotes and table
//! cells as pulldown-cmark finds them; inline code is not taken out yet),
//! printed as Vale's line format `test.md:LINE:COLUMN:Style.Rule:message`
//! under a `== <Name>` header. The rules the crate does not run yet are
//! listed on stderr.
//!
//! `cargo run -p koas-vale --example style_fixtures -- PATH/TO/STYLE-REPO`

use koas_vale::{line_column, load_rule, Block, ScopeKind, Switch, ValeIni};
use pulldown_cmark::{Event, Parser, Tag};
use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let repo = std::env::args()
        .nth(1)
        .ok_or("give a style repository's folder")?;
    let repo = Path::new(&repo);
    let mut fixtures: Vec<_> = std::fs::read_dir(repo.join("fixtures"))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join(".vale.ini").is_file() && p.join("test.md").is_file())
        .collect();
    fixtures.sort();
    for fixture in fixtures {
        let ini = ValeIni::parse(&std::fs::read_to_string(fixture.join(".vale.ini"))?)?;
        let text = std::fs::read_to_string(fixture.join("test.md"))?;
        let mut rules: Vec<String> = Vec::new();
        for section in ini.sections.iter().filter(|s| s.glob.contains("md")) {
            for style in &section.based_on {
                if let Ok(dir) = std::fs::read_dir(repo.join(style)) {
                    for e in dir.filter_map(Result::ok) {
                        let name = e.file_name().to_string_lossy().into_owned();
                        if let Some(rule) = name.strip_suffix(".yml") {
                            rules.push(format!("{style}.{rule}"));
                        }
                    }
                }
            }
            for (rule, switch) in &section.switches {
                match switch {
                    Switch::Off => rules.retain(|r| r != rule),
                    _ => rules.push(rule.clone()),
                }
            }
        }
        rules.sort();
        rules.dedup();
        let mut lines = Vec::new();
        for name in &rules {
            let Some((style, rule)) = name.split_once('.') else {
                continue;
            };
            let Ok(yaml) = std::fs::read_to_string(repo.join(style).join(format!("{rule}.yml")))
            else {
                eprintln!("{name}: no rule file");
                continue;
            };
            match load_rule(name, &yaml) {
                Ok(loaded) => {
                    for note in &loaded.unsupported {
                        eprintln!("{note}");
                    }
                    for alert in loaded.rule.check_blocks(&text, &blocks_of(&text)) {
                        let (line, column) = line_column(&text, alert.span.start);
                        lines.push((
                            line,
                            column,
                            format!("test.md:{line}:{column}:{}:{}", alert.rule, alert.message),
                        ));
                    }
                }
                Err(e) => eprintln!("{e}"),
            }
        }
        lines.sort();
        let name = fixture
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        println!("== {name}");
        for (_, _, line) in lines {
            println!("{line}");
        }
    }
    Ok(())
}

/// The prose blocks of a Markdown text, their marks (`#`, `-`, `>`) left
/// out of their spans.
fn blocks_of(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut in_item = 0usize;
    let mut in_quote = 0usize;
    let mut header = false;
    for (event, range) in
        Parser::new_ext(text, pulldown_cmark::Options::ENABLE_TABLES).into_offset_iter()
    {
        let kind = match event {
            Event::Start(Tag::Heading { level, .. }) => Some(ScopeKind::Heading(level as u8)),
            Event::Start(Tag::Paragraph) if in_item == 0 => Some(if in_quote > 0 {
                ScopeKind::Blockquote
            } else {
                ScopeKind::Paragraph
            }),
            Event::Start(Tag::Item) => {
                in_item += 1;
                Some(ScopeKind::ListItem)
            }
            Event::End(pulldown_cmark::TagEnd::Item) => {
                in_item -= 1;
                None
            }
            Event::Start(Tag::BlockQuote(_)) => {
                in_quote += 1;
                None
            }
            Event::End(pulldown_cmark::TagEnd::BlockQuote(_)) => {
                in_quote -= 1;
                None
            }
            Event::Start(Tag::TableHead) => {
                header = true;
                None
            }
            Event::End(pulldown_cmark::TagEnd::TableHead) => {
                header = false;
                None
            }
            Event::Start(Tag::TableCell) => Some(ScopeKind::TableCell { header }),
            _ => None,
        };
        let Some(kind) = kind else { continue };
        // The block's own text: past its marks, to its line's end for an
        // item (its nested lists are items of their own).
        let slice = &text[range.clone()];
        let marks = slice.len()
            - slice
                .trim_start_matches(['#', '-', '*', '+', '>', ' '])
                .len();
        let mut end = range.end;
        if kind == ScopeKind::ListItem {
            end = text[range.start..]
                .find('\n')
                .map_or(range.end, |i| (range.start + i).min(range.end));
        }
        blocks.push(Block {
            kind,
            span: range.start + marks..end.max(range.start + marks),
        });
    }
    blocks
}
