//! Pieces several subcommands share: the global flags and discovery.

use koas::discovery::{
    discover, executable_search_paths, split_path_list, Discovery, SearchOrigin, SearchPath,
};
use std::path::PathBuf;

/// Flags that apply to every subcommand.
#[derive(Debug, Clone)]
pub struct Global {
    pub kernel_paths: Vec<PathBuf>,
    pub verbose: bool,
    pub quiet: bool,
}

/// The search path in the documented order: flags, `KOAS_KERNEL_PATH`,
/// the pipeline's `kernel_paths`, the executable's folder.
pub fn search_paths(global: &Global, pipeline_paths: &[PathBuf]) -> Vec<SearchPath> {
    let mut out: Vec<SearchPath> = global
        .kernel_paths
        .iter()
        .map(|p| SearchPath {
            path: p.clone(),
            origin: SearchOrigin::Flag,
        })
        .collect();
    if let Ok(v) = std::env::var("KOAS_KERNEL_PATH") {
        out.extend(split_path_list(&v).into_iter().map(|p| SearchPath {
            path: p,
            origin: SearchOrigin::Env,
        }));
    }
    out.extend(pipeline_paths.iter().map(|p| SearchPath {
        path: p.clone(),
        origin: SearchOrigin::Pipeline,
    }));
    out.extend(executable_search_paths());
    out
}

/// Discovers kernels and prints every problem to stderr.
pub fn discover_and_warn(global: &Global, pipeline_paths: &[PathBuf]) -> Discovery {
    let d = discover(&search_paths(global, pipeline_paths));
    if !global.quiet {
        for p in &d.problems {
            eprintln!("warning: {p}");
        }
    }
    d
}
