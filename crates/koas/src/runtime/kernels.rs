//! `koas kernels`: what koas can load, and what it had to skip.

use clap::Args;
use koas_kernel_api::terminal::escape_controls;
use koas_orchestrator::discovery::Discovery;
use koas_orchestrator::embed::ExitStatus;
use koas_orchestrator::embed::HostOptions;
use koas_orchestrator::outln;
use std::path::PathBuf;

/// The arguments of `koas kernels`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct KernelsArgs {
    /// `install`: check a built plugin and copy it where koas finds it.
    #[command(subcommand)]
    pub action: Option<KernelsAction>,

    /// Also search the `kernel_paths` of this pipeline file.
    #[arg(long, value_name = "PIPELINE")]
    pub pipeline: Option<PathBuf>,

    /// Print JSON for scripts.
    #[arg(long)]
    pub json: bool,

    /// Exit 0 even when a plugin was skipped (a wrong ABI, a failing
    /// describe, a duplicate name); without it such a problem exits 1, so
    /// that a script installing kernels sees it.
    #[arg(long)]
    pub allow_skipped: bool,
}

/// What `koas kernels` can do besides listing.
#[derive(Debug, clap::Subcommand)]
pub enum KernelsAction {
    /// Check a built kernel plugin (loaded and described once, as a run
    /// would) and copy it into the user's kernel folder
    /// ($XDG_DATA_HOME/koas/kernels, by default ~/.local/share/koas/kernels),
    /// where every koas command finds it.
    #[command(after_help = "\
PATH is the plugin library (libkoas_kernel_NAME.so, .dylib on macOS), or the
folder of its crate: then the library is the newest of the crate's release
and debug builds, in --target-dir, else CARGO_TARGET_DIR, else the target
folder `cargo metadata` names (a workspace's).

Examples:
  koas kernels install target/release/libkoas_kernel_todo.so
  koas kernels install kernels/todo --target-dir /tmp/build

Exit codes:
  0    installed
  2    not a plugin this koas can load (its ABI version, a failing describe,
       no kernel), no built library found, or the copy failed")]
    Install(super::kernels_install::InstallArgs),
}

/// Runs `koas kernels`.
pub fn execute(global: &HostOptions, args: KernelsArgs) -> anyhow::Result<ExitStatus> {
    if let Some(KernelsAction::Install(install)) = args.action {
        return super::kernels_install::execute(global, install);
    }
    let pipeline = match &args.pipeline {
        Some(file) => Some(koas_orchestrator::pipeline::load(
            file,
            &Default::default(),
        )?),
        None => None,
    };
    let d = global.discover(pipeline.as_ref());
    // Loaded, but the user should know: a plugin of a newer kernel-api may
    // count on what this koas does not have.
    let newer = d.newer_api();
    if args.json {
        print_json(&d, &newer)?;
        print_notes(&newer);
        return Ok(if d.kernels.is_empty() || skipped(&d, &args) {
            ExitStatus::Failure
        } else {
            ExitStatus::Success
        });
    }
    let rows = rows_of(&d);
    print_table(&rows)?;
    if !d.problems.is_empty() {
        eprintln!("\n{} plugin problem(s):", d.problems.len());
        for p in &d.problems {
            // A problem quotes what the plugin said.
            eprintln!("  - {}", escape_controls(&p.to_string()));
        }
    }
    if !d.ignored.is_empty() {
        eprintln!(
            "\n{} file(s) not loaded because of their name:",
            d.ignored.len()
        );
        for i in &d.ignored {
            eprintln!("  - {}", escape_controls(&i.to_string()));
        }
    }
    print_notes(&newer);
    if rows.is_empty() {
        // A koas without kernels can do nothing: say where it looked and
        // how to fix it, and let scripts see it in the exit code.
        eprintln!("{}", not_found_message(&d));
        return Ok(ExitStatus::Failure);
    }
    if skipped(&d, &args) {
        return Ok(ExitStatus::Failure);
    }
    Ok(ExitStatus::Success)
}

/// `koas kernels --json`: the kernels, the problems, the notes.
fn print_json(
    d: &Discovery,
    newer: &[koas_orchestrator::discovery::NewerApi],
) -> anyhow::Result<()> {
    let kernels: Vec<serde_json::Value> = d
        .kernels
        .values()
        .map(|k| {
            serde_json::json!({
                "name": k.spec.name,
                "version": k.spec.version,
                "stage": k.spec.stage,
                "description": k.spec.description,
                "inputs": k.spec.inputs,
                "outputs": k.spec.outputs,
                "deterministic": k.spec.deterministic,
                "uses_llm": k.spec.uses_llm,
                "default_config": k.spec.default_config,
                "finding_kinds": k.spec.finding_kinds,
                "library": k.library,
                "abi_version": k.abi_version,
                "api_version": k.api_version,
            })
        })
        .collect();
    let problems: Vec<serde_json::Value> = d
        .problems
        .iter()
        .map(|p| {
            let mut v = serde_json::to_value(p).unwrap_or_default();
            if let Some(o) = v.as_object_mut() {
                o.insert("message".into(), p.to_string().into());
            }
            v
        })
        .collect();
    let notes: Vec<serde_json::Value> = newer
        .iter()
        .map(|n| {
            serde_json::json!({
                "note": "newer_kernel_api",
                "path": n.path,
                "api_version": n.api_version,
                "message": n.to_string(),
            })
        })
        .collect();
    outln!(
        "{}",
        serde_json::to_string_pretty(&serde_json::json!({
            "kernels": kernels,
            "problems": problems,
            "notes": notes,
            "searched": d.searched,
            "ignored": d.ignored,
            "api_version": koas_kernel_api::abi::API_VERSION,
            "abi_version": koas_kernel_api::abi::ABI_VERSION,
        }))?
    )?;
    Ok(())
}

/// One row per kernel: name, version, stage, inputs, outputs, library,
/// ABI, kernel-api.
fn rows_of(d: &Discovery) -> Vec<[String; 8]> {
    d.kernels
        .values()
        .map(|k| {
            let inputs = k
                .spec
                .inputs
                .iter()
                .map(|i| {
                    if i.required {
                        i.artifact.clone()
                    } else {
                        format!("{}?", i.artifact)
                    }
                })
                .collect::<Vec<_>>()
                .join(",");
            let outputs = k
                .spec
                .outputs
                .iter()
                .map(|o| o.artifact.clone())
                .collect::<Vec<_>>()
                .join(",");
            [
                k.spec.name.clone(),
                k.spec.version.clone(),
                k.spec.stage.clone(),
                if inputs.is_empty() {
                    "-".into()
                } else {
                    inputs
                },
                if outputs.is_empty() {
                    "-".into()
                } else {
                    outputs
                },
                k.library
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                k.abi_version.to_string(),
                k.api_version.clone().unwrap_or_else(|| "-".into()),
            ]
            // Every cell but the ABI is the plugin's words (or its file's
            // name): shown, never obeyed by the terminal.
            .map(|cell| escape_controls(&cell).into_owned())
        })
        .collect()
}

/// The kernels' table, its columns as wide as their widest cell.
fn print_table(rows: &[[String; 8]]) -> anyhow::Result<()> {
    let header = [
        "NAME",
        "VERSION",
        "STAGE",
        "INPUTS",
        "OUTPUTS",
        "LIBRARY",
        "ABI",
        "KERNEL-API",
    ];
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r.iter()) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    outln!("{}", line(&header.map(String::from)))?;
    for r in rows {
        outln!("{}", line(r))?;
    }
    if rows.is_empty() {
        outln!("(no kernels found)")?;
    }
    Ok(())
}

/// Says which libraries were built with a newer kernel-api (on stderr;
/// they are loaded, the exit status does not change).
fn print_notes(newer: &[koas_orchestrator::discovery::NewerApi]) {
    for n in newer {
        eprintln!("note: {n}");
    }
}

/// Whether a plugin was skipped and that fails the command: then the last
/// line says so (on stderr, under the listing or the JSON).
fn skipped(d: &koas_orchestrator::discovery::Discovery, args: &KernelsArgs) -> bool {
    if d.problems.is_empty() || args.allow_skipped {
        return false;
    }
    eprintln!(
        "koas kernels: {} plugin(s) skipped, exit 1 (--allow-skipped accepts them)",
        d.problems.len()
    );
    true
}

/// Where discovery looked (each folder with its origin, in search order)
/// and how to install kernels: what a user needs when none was found.
pub fn not_found_message(d: &koas_orchestrator::discovery::Discovery) -> String {
    let mut text = String::from("koas found no kernel. It looked in, in this order:\n");
    for s in &d.searched {
        let state = if s.path.is_dir() || s.path.is_file() {
            ""
        } else {
            " (does not exist)"
        };
        text.push_str(&format!(
            "  {}  [{}]{state}\n",
            s.path.display(),
            s.origin.describe()
        ));
    }
    text.push_str(koas_orchestrator::discovery::INSTALL_HINT);
    text
}
