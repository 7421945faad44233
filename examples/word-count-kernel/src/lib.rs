//! `word_count`: an example koas kernel written by a "third party".
//!
//! It reads the `doc` source artifact and produces `word_count`: words,
//! lines and characters of the document, optionally ignoring fenced code
//! blocks. See `docs/writing-a-kernel.md` in the koas repository for the
//! walkthrough this crate illustrates.

use koas_kernel_api::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The kernel. Stateless: every run depends only on its config and inputs.
#[derive(Debug, Default)]
pub struct WordCount;

/// The kernel's config; its defaults are declared in [`WordCount::spec`].
#[derive(Debug, Deserialize)]
struct Config {
    /// Words shorter than this (in characters) are not counted.
    min_len: usize,
    /// Skip the content of ``` / ~~~ fenced code blocks.
    ignore_code_blocks: bool,
}

/// The `word_count` artifact, written to `example/word_count.json`.
#[derive(Debug, Serialize, PartialEq)]
pub struct Counts {
    /// Whitespace-separated words of at least `min_len` characters, outside
    /// skipped code blocks.
    pub words: usize,
    /// Lines of the document, code blocks included.
    pub lines: usize,
    /// Unicode characters of the document.
    pub characters: usize,
    /// Lines skipped because they are inside code blocks.
    pub code_lines_skipped: usize,
}

/// Counts `text` under `config`.
fn count(text: &str, config: &Config) -> Counts {
    let mut words = 0;
    let mut skipped = 0;
    let mut fence: Option<String> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let marker: String = trimmed
            .chars()
            .take_while(|c| *c == '`' || *c == '~')
            .collect();
        if config.ignore_code_blocks && marker.len() >= 3 {
            match &fence {
                None => {
                    fence = Some(marker);
                    skipped += 1;
                    continue;
                }
                Some(open) if marker.starts_with(open.as_str()) => {
                    fence = None;
                    skipped += 1;
                    continue;
                }
                Some(_) => {}
            }
        }
        if fence.is_some() {
            skipped += 1;
            continue;
        }
        words += line
            .split_whitespace()
            .filter(|w| w.chars().count() >= config.min_len)
            .count();
    }
    Counts {
        words,
        lines: text.lines().count(),
        characters: text.chars().count(),
        code_lines_skipped: skipped,
    }
}

impl Kernel for WordCount {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new("word_count", "0.1.0")
            .stage("example")
            .description("Counts words, lines and characters of the document")
            .input("doc")
            .output_file("word_count", "example/word_count.json")
            .default_config(json!({ "min_len": 1, "ignore_code_blocks": true }))
    }

    fn run(&self, ctx: &Context, config: &KernelConfig, inputs: &Inputs) -> KernelResult {
        let config: Config = config.parse()?;
        let text = inputs.source_text("doc")?;
        ctx.debug(&format!("counting {} bytes", text.len()));
        let counts = count(text, &config);
        let summary = format!(
            "{} words, {} lines ({} code lines skipped)",
            counts.words, counts.lines, counts.code_lines_skipped
        );
        Ok(KernelOutput::new()
            .artifact("word_count", &counts)
            .summary(summary))
    }
}

koas_kernel_api::export_kernel!(WordCount);

#[cfg(test)]
mod tests {
    use super::*;
    use koas_kernel_api::testing::TestHarness;

    #[test]
    fn counts_words_outside_code_blocks() {
        let doc = "# Title\n\nSome words here.\n\n```rust\nlet x = 1;\n```\n";
        let out = TestHarness::new()
            .source_text("doc", doc)
            .run(&WordCount)
            .expect("runs");
        assert_eq!(out.value("word_count")["words"], 5);
        assert_eq!(out.value("word_count")["code_lines_skipped"], 3);
        assert_eq!(out.value("word_count")["lines"], 7);
    }

    #[test]
    fn config_changes_the_count() {
        let out = TestHarness::new()
            .source_text("doc", "a bb ccc\n```\ncode here\n```\n")
            .config(json!({ "min_len": 2, "ignore_code_blocks": false }))
            .run(&WordCount)
            .expect("runs");
        // bb, ccc, ```, code, here, ```
        assert_eq!(out.value("word_count")["words"], 6);
    }

    #[test]
    fn unknown_config_keys_are_refused() {
        let err = TestHarness::new()
            .source_text("doc", "x")
            .config(json!({ "min_length": 2 }))
            .run(&WordCount)
            .expect_err("unknown key");
        assert!(err.message.contains("min_length"));
    }

    #[test]
    fn invalid_utf8_names_the_offset() {
        let err = TestHarness::new()
            .source_bytes("doc", "bad.md", b"ok\xff")
            .run(&WordCount)
            .expect_err("invalid");
        assert!(err.message.contains("bad.md") && err.message.contains("offset 2"));
    }
}
