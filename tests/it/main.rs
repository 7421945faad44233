//! End-to-end tests of koas: the real `koas` binary, built by
//! `koas_test_support::koas_bin` with the reviewer plugins next to it, and
//! the test plugins of `crates/test-support/plugins`. One module per
//! former test file; `common` and `review_common` are their helpers.
//!
//! ```text
//! cargo build --workspace && cargo test -p koas-tests
//! ```

mod common;
mod review_common;

mod careless_model;
mod check_agrees;
mod check_cli;
mod check_golden;
mod cli_conventions;
mod cli_snapshots;
mod closed_pipes;
mod edit_plan;
mod edit_plan_baseline;
mod edit_plan_runs;
mod endpoints;
mod folders_and_inputs;
mod html_report;
mod install;
mod isolation;
mod kernel_authors;
mod kernel_scaffold;
mod kernel_test_support;
mod language_check;
mod language_lsp;
mod language_review;
mod linear_checks;
mod links_across_files;
mod links_in_workspaces;
mod llm_eval;
mod llm_host;
mod llm_reuse;
mod llm_stage;
mod lsp;
mod lsp_hostile;
mod mcp;
mod project_kernels;
mod prompt_reuse;
mod pyramid;
mod refine;
mod remote_text;
mod review_api;
mod review_cli;
mod review_crash;
mod review_engine;
mod review_follows;
mod review_hardening;
mod review_replay;
mod review_snapshots;
mod runtime;
mod stage1_pipeline;
mod stage2_pipeline;
mod third_party_findings;
mod vale_fixtures;
mod vale_styles;
mod workspace_rules;
mod workspace_size;
mod workspace_sources;
