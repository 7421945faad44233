//! # koas-kernel-test — test support for koas kernel authors
//!
//! A kernel crate dev-depends on this one (as a kernel crate depends on
//! `koas-kernel-api` alone) to test two things:
//!
//! - **What it computes**, on the inputs a real run gives it:
//!   [`Document`] turns a Markdown string into the reviewer's Stage 1 and
//!   Stage 2 artifacts (`section_index`, `protected_spans`, `chunks`,
//!   `issues`…), computed by the same library calls as the kernels of
//!   `configs/reviewer.toml` with their default config, and feeds them to
//!   a [`TestHarness`](koas_kernel_api::testing::TestHarness):
//!
//!   ```
//!   use koas_kernel_test::Document;
//!   # use koas_kernel_api::prelude::*;
//!   # struct Count;
//!   # impl Kernel for Count {
//!   #     fn spec(&self) -> KernelSpec { KernelSpec::new("count", "0.1.0").input("section_index").output("n") }
//!   #     fn run(&self, _: &Context, _: &KernelConfig, i: &Inputs) -> KernelResult {
//!   #         let v: serde_json::Value = i.parse("section_index")?;
//!   #         Ok(KernelOutput::new().artifact("n", v["sections"].as_array().map_or(0, Vec::len)))
//!   #     }
//!   # }
//!   let doc = Document::markdown("# One\n\n## Two\n");
//!   let out = doc.harness().expect("fixtures").run(&Count).expect("runs");
//!   assert_eq!(out.value("n"), 2);
//!   ```
//!
//! - **The plugin you ship**: [`PluginHarness`], re-exported from
//!   `koas-plugin-test` (which knows no Markdown), finds the built library
//!   with koas's discovery and runs a kernel with koas's engine in a
//!   worker process of the `koas` executable ([`locate_koas`]:
//!   `$KOAS_BIN`, else `koas` on `PATH`), so the test sees what `koas run`
//!   would: the outputs, summary and warnings, or the error as `run.json`
//!   records it (a panic, a crashed worker, a missing output).

#![deny(missing_docs)]

mod error;
mod fixtures;

pub use error::FixtureError;
pub use fixtures::{Document, DEFAULT_PATH};
pub use koas_plugin_test::{
    built_plugin, locate_koas, Artifacts, PluginError, PluginHarness, PluginOutput, PluginRun,
    KOAS_BIN_ENV,
};
