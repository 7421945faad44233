//! # md_inventory — Stage 1 reviewer kernel
//!
//! Snapshots the input document as `stage1/doc.raw.md` (written once: a
//! workspace that already holds a different document is refused by the
//! host) and reports its SHA-256, size, lines, line endings, front matter,
//! code fences and tables (`file_stats`, `stage1/md_inventory.json`).
//!
//! Input that is not UTF-8 or that holds a NUL byte stops the run with an
//! error naming the file and the offset of the first bad byte; nothing is
//! written. The logic lives in [`koas_md`]; this crate is the plugin glue.

use koas_kernel_api::prelude::*;
use koas_md::scan::{scan, ScanOptions};
use koas_md::{inventory, summary, LineIndex};
use koas_review_schema::names;
use serde_json::Value;

#[derive(Debug, Default, Clone, Copy)]
pub struct MdInventory;

impl Kernel for MdInventory {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new("md_inventory", "0.1.0")
            .stage("S1")
            .description(
                "Snapshots the document (stage1/doc.raw.md) and reports its hash, size, lines, front matter, code fences and tables",
            )
            .input(names::DOC)
            .output_file_once(names::DOC_RAW, "stage1/doc.raw.md")
            .output_file(names::FILE_STATS, "stage1/md_inventory.json")
            .output(names::DOC_HASH)
    }

    fn run(&self, ctx: &Context, _config: &KernelConfig, inputs: &Inputs) -> KernelResult {
        let text = inputs.source_text(names::DOC)?;
        let path = inputs
            .get(names::DOC)
            .and_then(|v| v.get("path"))
            .and_then(Value::as_str)
            .unwrap_or("doc");
        inventory::check_text(path, text).map_err(|e| KernelError::invalid_input(e.to_string()))?;
        let index = LineIndex::new(text);
        let parsed = scan(&index, ScanOptions::default());
        let stats = inventory::file_stats(path, &index, &parsed, None);
        ctx.debug(&format!(
            "{path}: {} bytes, {} lines",
            stats.bytes, stats.lines
        ));
        let summary = summary::inventory(&stats);
        Ok(KernelOutput::new()
            .artifact(names::DOC_HASH, &stats.sha256)
            .artifact(names::FILE_STATS, &stats)
            .artifact(names::DOC_RAW, text)
            .summary(summary))
    }
}

koas_kernel_api::export_kernel!(MdInventory);
