//! Small kernels for integration tests (a snapshot shows `Panicker`'s line).

use koas_kernel_api::prelude::*;
use serde_json::json;
use std::time::{Duration, Instant};

/// Sleeps `ms` milliseconds in small steps, stopping early on cancellation.
fn sleep_checking(ctx: &Context, ms: u64) -> Result<(), KernelError> {
    let end = Instant::now() + Duration::from_millis(ms);
    while Instant::now() < end {
        ctx.check_cancelled()?;
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

/// `doc` → `doc_len` (`out/doc_len.json`): the plainest kernel.
struct SourceLen;
impl Kernel for SourceLen {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new("source_len", "1.0.0")
            .stage("T1")
            .description("Length and word count of the source document")
            .input("doc")
            .output_file("doc_len", "out/doc_len.json")
    }
    fn run(&self, _ctx: &Context, _c: &KernelConfig, inputs: &Inputs) -> KernelResult {
        let text = inputs.source_text("doc")?;
        let words = text.split_whitespace().count();
        Ok(KernelOutput::new()
            .artifact("doc_len", json!({"len": text.len(), "words": words}))
            .summary(format!("{} bytes, {words} words", text.len())))
    }
}

/// `doc_len` → `is_long` (len > threshold): changing the threshold only
/// sometimes changes the output, which is what early cutoff needs.
struct Threshold;
impl Kernel for Threshold {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new("threshold", "1.0.0")
            .stage("T2")
            .input("doc_len")
            .output("is_long")
            .default_config(json!({"threshold": 10}))
    }
    fn run(&self, _ctx: &Context, c: &KernelConfig, inputs: &Inputs) -> KernelResult {
        let threshold = c.get("threshold").and_then(|v| v.as_u64()).unwrap_or(10);
        let len = inputs.require("doc_len")?["len"].as_u64().unwrap_or(0);
        Ok(KernelOutput::new()
            .artifact("is_long", len > threshold)
            .summary(format!("len {len} vs threshold {threshold}")))
    }
}

/// `is_long` → `long_report`, written to `reports/long.txt`.
struct ReportLong;
impl Kernel for ReportLong {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new("report_long", "1.0.0")
            .stage("T3")
            .input("is_long")
            .output_file("long_report", "reports/long.txt")
    }
    fn run(&self, _ctx: &Context, _c: &KernelConfig, inputs: &Inputs) -> KernelResult {
        let long = inputs.require("is_long")?.as_bool().unwrap_or(false);
        let text = if long { "the document is long\n" } else { "the document is short\n" };
        Ok(KernelOutput::new().artifact("long_report", text).summary(text.trim()))
    }
}

/// Two independent sleepers, to show parallel execution.
struct Sleepy(&'static str, &'static str);
impl Kernel for Sleepy {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new(self.0, "1.0.0")
            .stage("T2")
            .input("doc_len")
            .output(self.1)
            .default_config(json!({"sleep_ms": 300}))
    }
    fn run(&self, ctx: &Context, c: &KernelConfig, _inputs: &Inputs) -> KernelResult {
        let ms = c.get("sleep_ms").and_then(|v| v.as_u64()).unwrap_or(300);
        ctx.info(&format!("sleeping {ms} ms"));
        sleep_checking(ctx, ms)?;
        Ok(KernelOutput::new().artifact(self.1, ms).summary(format!("slept {ms} ms")))
    }
}

/// Panics on every run, to test that a panic fails only this kernel.
struct Panicker;
impl Kernel for Panicker {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new("panicker", "1.0.0").stage("T2").input("doc_len").output("boom")
    }
    fn run(&self, _ctx: &Context, _c: &KernelConfig, _inputs: &Inputs) -> KernelResult {
        panic!("deliberate test panic");
    }
}

/// Reads the panicker's output, so it must be skipped when that fails.
struct AfterPanic;
impl Kernel for AfterPanic {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new("after_panic", "1.0.0").stage("T3").input("boom").output("after_boom")
    }
    fn run(&self, _ctx: &Context, _c: &KernelConfig, _inputs: &Inputs) -> KernelResult {
        Ok(KernelOutput::new().artifact("after_boom", true))
    }
}

/// Writes a file at the configured workspace path (it declares `notes/`);
/// fails if refused.
struct Writer;
impl Kernel for Writer {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new("writer", "1.0.0")
            .stage("T2")
            .input("doc_len")
            .output("written")
            .writes("notes/")
            .default_config(json!({"path": "notes/hello.txt"}))
    }
    fn run(&self, ctx: &Context, c: &KernelConfig, _inputs: &Inputs) -> KernelResult {
        let path = c.get("path").and_then(|v| v.as_str()).unwrap_or("notes/hello.txt").to_string();
        ctx.write_file(&path, b"hello\n")?;
        ctx.append_file(&path, b"again\n")?;
        Ok(KernelOutput::new().artifact("written", &path).summary(format!("wrote {path}")))
    }
}

/// Asks for an LLM completion (no backend is configured in tests).
struct AsksLlm;
impl Kernel for AsksLlm {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new("asks_llm", "1.0.0").stage("T2").input("doc_len").output("llm_answer").uses_llm()
    }
    fn run(&self, ctx: &Context, _c: &KernelConfig, _inputs: &Inputs) -> KernelResult {
        let answer = ctx.llm_complete(&LlmRequest::new("edit", "say hi"))?;
        Ok(KernelOutput::new().artifact("llm_answer", answer.text))
    }
}

/// Runs until cancelled (or `max_ms`).
struct UntilCancelled;
impl Kernel for UntilCancelled {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new("until_cancelled", "1.0.0")
            .stage("T2")
            .input("doc_len")
            .output_file("patience", "out/patience.json")
            .writes("out/started.flag")
            .default_config(json!({"max_ms": 20000}))
    }
    fn run(&self, ctx: &Context, c: &KernelConfig, _inputs: &Inputs) -> KernelResult {
        let ms = c.get("max_ms").and_then(|v| v.as_u64()).unwrap_or(20000);
        ctx.write_file("out/started.flag", b"started\n")?;
        sleep_checking(ctx, ms)?;
        Ok(KernelOutput::new().artifact("patience", ms))
    }
}

/// A generic node for graph-shape tests: reads `inputs`, writes `outputs`,
/// both given in its name-specific spec below.
struct Node {
    name: &'static str,
    ins: &'static [&'static str],
    outs: &'static [&'static str],
}
impl Kernel for Node {
    fn spec(&self) -> KernelSpec {
        let mut s = KernelSpec::new(self.name, "1.0.0").stage("T9");
        for i in self.ins {
            s = s.input(*i);
        }
        for o in self.outs {
            s = s.output(*o);
        }
        s
    }
    fn run(&self, _ctx: &Context, _c: &KernelConfig, _inputs: &Inputs) -> KernelResult {
        let mut out = KernelOutput::new();
        for o in self.outs {
            out = out.artifact(*o, self.name);
        }
        Ok(out)
    }
}

koas_kernel_api::export_kernel!(
    SourceLen,
    Threshold,
    ReportLong,
    Sleepy("sleepy_a", "a_done"),
    Sleepy("sleepy_b", "b_done"),
    Panicker,
    AfterPanic,
    Writer,
    AsksLlm,
    UntilCancelled,
    Node { name: "cycle_a", ins: &["cyc_y"], outs: &["cyc_x"] },
    Node { name: "cycle_b", ins: &["cyc_x"], outs: &["cyc_y"] },
    Node { name: "dup_one", ins: &[], outs: &["dup_art"] },
    Node { name: "dup_two", ins: &[], outs: &["dup_art"] },
    Node { name: "needs_ghost", ins: &["ghost_art"], outs: &["ghost_out"] },
);
