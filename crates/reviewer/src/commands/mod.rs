//! One module per command: its clap arguments and its `execute`.

pub mod check;
mod check_pipeline;
pub mod dismiss;
pub mod grep;
pub mod refine;
pub mod report;
pub mod revert;
pub mod review;
pub mod show;
pub mod status;
