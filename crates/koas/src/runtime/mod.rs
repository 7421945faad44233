//! The runtime's generic commands (`run`, `kernels`, `graph`, `cache`,
//! `replay`, `llm`): the `koas` binary's front end over the runtime.
//!
//! Each command is a clap `Args` (or `Subcommand`) type and an `execute`
//! function. They use the runtime as a library, like every other host:
//! the global flags are `koas_orchestrator::embed::HostOptions`, the exit
//! status `koas_orchestrator::embed::ExitStatus`.

pub mod cache;
pub mod graph;
pub mod kernels;
pub mod kernels_install;
pub mod llm;
pub mod replay;
pub mod run;
