//! Runs a Vale style repository's fixtures the way its tests run Vale:
//! for each `fixtures/<Name>/` with a `.vale.ini`, on its `test.md` (and
//! `test.rst`) the rules its `.vale.ini` turns on for that file, each on
//! the blocks its scope takes, as a host would: headings, paragraphs,
//! list items, blockquotes and table cells as pulldown-cmark finds them
//! (an rST file's paragraphs are its blank-line-parted lines), inline
//! code blanked out as Vale blanks it (`***`, so that offsets stay),
//! alerts below `MinAlertLevel` or switched off by a `<!-- vale … -->`
//! comment left out, the `Vocab` vocabularies' rules added — the rules
//! chosen by [`Styles`], as koas chooses them. Printed as
//! Vale's line format `test.md:LINE:COLUMN:Style.Rule:message` under a
//! `== <Name>` header; what the crate does not run is listed on stderr.
//!
//! `cargo run -p koas-vale --example style_fixtures -- PATH/TO/STYLE-REPO`

use koas_vale::{
    line_column, Block, CommentSwitches, ScopeKind, Styles, ValeIni, ValeSources, VocabText,
};
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
        .filter(|p| config_of(p).is_some())
        .collect();
    fixtures.sort();
    for fixture in fixtures {
        let Some(config) = config_of(&fixture) else {
            continue;
        };
        let ini = ValeIni::parse(&std::fs::read_to_string(&config)?)?;
        let styles = Styles::compile(&sources(&config, &ini))?;
        for note in &styles.notes {
            eprintln!("{note}");
        }
        let mut files: Vec<String> = std::fs::read_dir(&fixture)?
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|f| f.ends_with(".md") || f.ends_with(".rst"))
            .collect();
        files.sort();
        let mut lines = Vec::new();
        for file in files {
            let Ok(text) = std::fs::read_to_string(fixture.join(&file)) else {
                continue;
            };
            let (checked, blocks) = if file.ends_with(".md") {
                (
                    blank_code(&text, markdown_code(&text)),
                    markdown_blocks(&text),
                )
            } else {
                (blank_code(&text, rst_code(&text)), rst_blocks(&text))
            };
            let switches = CommentSwitches::parse(&text);
            for selected in styles.rules_for(&file) {
                let rule = selected.rule;
                // Vale's `raw` scope reads the file as written, code and all.
                let input = if rule.is_raw() { &text } else { &checked };
                for alert in rule.check_blocks(input, &blocks) {
                    // Vale resets the switches before its raw pass.
                    if !rule.is_raw() && switches.silences(&alert, &text) {
                        continue;
                    }
                    let (line, column) = line_column(&text, alert.span.start);
                    lines.push((
                        file.clone(),
                        line,
                        column,
                        format!("{file}:{line}:{column}:{}:{}", alert.rule, alert.message),
                    ));
                }
            }
        }
        lines.sort();
        let name = fixture
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        println!("== {name}");
        for (_, _, _, line) in lines {
            println!("{line}");
        }
    }
    Ok(())
}

/// The fixture's configuration and every rule and vocabulary of the
/// styles it names, as a host reads them for [`Styles::compile`].
fn sources(config: &Path, ini: &ValeIni) -> ValeSources {
    let folder = config.parent().unwrap_or(Path::new("."));
    let styles = folder.join(ini.styles_path.as_deref().unwrap_or("."));
    let mut sources = ValeSources {
        ini_path: config.display().to_string(),
        ini: std::fs::read_to_string(config).unwrap_or_default(),
        styles_path: styles.display().to_string(),
        ..ValeSources::default()
    };
    let named = ini.sections.iter().flat_map(|s| {
        s.based_on.iter().cloned().chain(
            s.switches
                .iter()
                .map(|(rule, _)| rule.split('.').next().unwrap_or(rule).to_owned()),
        )
    });
    for style in named {
        let Ok(dir) = std::fs::read_dir(styles.join(&style)) else {
            continue;
        };
        for e in dir.filter_map(Result::ok) {
            let file = e.file_name().to_string_lossy().into_owned();
            if let Some(rule) = file.strip_suffix(".yml") {
                if let Ok(yaml) = std::fs::read_to_string(e.path()) {
                    sources.rules.insert(format!("{style}.{rule}"), yaml);
                }
            }
        }
    }
    for name in &ini.vocab {
        let list = |file: &str| {
            std::fs::read_to_string(styles.join("config/vocabularies").join(name).join(file))
                .unwrap_or_default()
        };
        sources.vocab.insert(
            name.clone(),
            VocabText {
                accept: list("accept.txt"),
                reject: list("reject.txt"),
            },
        );
    }
    sources
}

/// A fixture's configuration: `.vale.ini`, or `_vale` or `.vale` (Vale's own
/// tests).
fn config_of(fixture: &Path) -> Option<std::path::PathBuf> {
    [".vale.ini", "_vale", ".vale"]
        .iter()
        .map(|name| fixture.join(name))
        .find(|p| p.is_file())
}

/// `text` with each code span's content made `*` and its delimiters
/// spaces, byte for byte, as Vale hides code from the rules.
fn blank_code(text: &str, spans: Vec<(std::ops::Range<usize>, usize)>) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for (range, ticks) in spans {
        for (i, byte) in bytes[range.clone()].iter_mut().enumerate() {
            let delimiter = i < ticks || i >= range.len().saturating_sub(ticks);
            *byte = if delimiter { b' ' } else { b'*' };
        }
    }
    // Only whole characters were replaced, by ASCII: still UTF-8.
    String::from_utf8(bytes).unwrap_or_else(|_| text.to_owned())
}

/// The code spans of a Markdown text, with the width of their backtick
/// fences.
fn markdown_code(text: &str) -> Vec<(std::ops::Range<usize>, usize)> {
    Parser::new_ext(text, pulldown_cmark::Options::ENABLE_TABLES)
        .into_offset_iter()
        .filter_map(|(event, range)| match event {
            Event::Code(_) => {
                let ticks = text[range.clone()]
                    .chars()
                    .take_while(|c| *c == '`')
                    .count();
                Some((range, ticks))
            }
            _ => None,
        })
        .collect()
}

/// The ``literal`` spans of an rST text.
fn rst_code(text: &str) -> Vec<(std::ops::Range<usize>, usize)> {
    let mut spans = Vec::new();
    let mut from = 0;
    while let Some(open) = text[from..].find("``") {
        let start = from + open;
        let Some(close) = text[start + 2..].find("``") else {
            break;
        };
        let end = start + 2 + close + 2;
        spans.push((start..end, 2));
        from = end;
    }
    spans
}

/// The paragraphs of an rST text: runs of lines between blank ones.
fn rst_blocks(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut start = None;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if line.trim().is_empty() {
            if let Some(s) = start.take() {
                blocks.push(Block {
                    kind: ScopeKind::Paragraph,
                    span: s..at,
                });
            }
        } else if start.is_none() {
            start = Some(at);
        }
        at += line.len();
    }
    if let Some(s) = start {
        blocks.push(Block {
            kind: ScopeKind::Paragraph,
            span: s..at,
        });
    }
    blocks
}

/// The prose blocks of a Markdown text, their marks (`#`, `-`, `>`) left
/// out of their spans.
fn markdown_blocks(text: &str) -> Vec<Block> {
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
