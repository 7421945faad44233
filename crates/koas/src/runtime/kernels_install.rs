//! `koas kernels install PATH`: a built plugin checked the way a run
//! loads it (in a worker process, every kernel described), then copied
//! into the user's kernel folder, so that no one copies a library by hand
//! or learns where koas looks.

use anyhow::Context as _;
use koas_orchestrator::discovery::{
    discover_isolated, is_kernel_library_name, user_data_kernels, SearchOrigin, SearchPath,
    LIBRARY_STEM_PREFIX,
};
use koas_orchestrator::embed::{ExitStatus, HostOptions};
use koas_orchestrator::outln;
use std::path::{Path, PathBuf};

/// The arguments of `koas kernels install`.
#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// The plugin library, or its crate's folder.
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
    /// Where cargo put the crate's builds (when PATH is a folder).
    #[arg(long, value_name = "DIR")]
    pub target_dir: Option<PathBuf>,
    /// Install into this folder instead of the user's kernel folder.
    #[arg(long, value_name = "DIR")]
    pub into: Option<PathBuf>,
}

/// Runs `koas kernels install`.
pub fn execute(global: &HostOptions, args: InstallArgs) -> anyhow::Result<ExitStatus> {
    let library = match library_of(&args) {
        Ok(library) => library,
        Err(e) => {
            eprintln!("error: {e:#}");
            return Ok(ExitStatus::Error);
        }
    };
    // Loaded and described as a run would: in a worker process unless
    // the host runs kernels in-process.
    let found = discover_isolated(
        &[SearchPath {
            path: library.clone(),
            origin: SearchOrigin::Flag,
        }],
        &global.isolation(None),
        None,
    );
    if let Some(problem) = found.problems.first() {
        eprintln!("error: {problem}; nothing was installed");
        return Ok(ExitStatus::Error);
    }
    if found.kernels.is_empty() {
        eprintln!(
            "error: {}: no kernel: the library exports none; nothing was installed",
            library.display()
        );
        return Ok(ExitStatus::Error);
    }
    let folder = match &args.into {
        Some(folder) => folder.clone(),
        None => user_data_kernels()
            .context("no user kernel folder: set XDG_DATA_HOME or HOME, or give --into DIR")?,
    };
    let Some(name) = library.file_name() else {
        anyhow::bail!("{}: not a file", library.display());
    };
    std::fs::create_dir_all(&folder)
        .with_context(|| format!("cannot create the kernel folder {}", folder.display()))?;
    let target = folder.join(name);
    let replaced = target.exists();
    copy_atomically(&library, &target)
        .with_context(|| format!("cannot copy {} to {}", library.display(), target.display()))?;
    let kernels: Vec<String> = found
        .kernels
        .values()
        .map(|k| format!("{} {}", k.spec.name, k.spec.version))
        .collect();
    if !global.quiet {
        outln!(
            "{} {} ({}) from {}",
            if replaced { "replaced" } else { "installed" },
            target.display(),
            kernels.join(", "),
            library.display()
        )?;
        outln!("`koas kernels` lists them")?;
    }
    Ok(ExitStatus::Success)
}

/// The library PATH names: PATH itself, or the newest build of the crate
/// whose folder PATH is.
fn library_of(args: &InstallArgs) -> anyhow::Result<PathBuf> {
    let path = &args.path;
    let meta = std::fs::metadata(path).with_context(|| format!("{}", path.display()))?;
    if meta.is_file() {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if !is_kernel_library_name(name) {
            anyhow::bail!(
                "{}: not a kernel library: its file name must be {}{LIBRARY_STEM_PREFIX}<name>{}, as the crate's [lib] name `{LIBRARY_STEM_PREFIX}<name>` with crate-type cdylib makes it",
                path.display(),
                std::env::consts::DLL_PREFIX,
                std::env::consts::DLL_SUFFIX
            );
        }
        return Ok(path.clone());
    }
    let manifest = path.join("Cargo.toml");
    let lib_name = crate_lib_name(&manifest)?;
    let target_dir = match (&args.target_dir, std::env::var_os("CARGO_TARGET_DIR")) {
        (Some(dir), _) => dir.clone(),
        (None, Some(dir)) if !dir.is_empty() => PathBuf::from(dir),
        _ => cargo_target_dir(&manifest)?,
    };
    let file = format!(
        "{}{lib_name}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    let candidates: Vec<PathBuf> = ["release", "debug"]
        .iter()
        .map(|profile| target_dir.join(profile).join(&file))
        .filter(|p| p.is_file())
        .collect();
    // The newest build is the one just made.
    candidates
        .into_iter()
        .max_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
        .with_context(|| {
            format!(
                "no build of {} in {}/release or {}/debug: build it first (cargo build --release), or give --target-dir DIR if cargo put it elsewhere",
                file,
                target_dir.display(),
                target_dir.display()
            )
        })
}

/// The `[lib] name` of the crate at `manifest` (else its package name with
/// `-` as `_`), which must start with [`LIBRARY_STEM_PREFIX`].
fn crate_lib_name(manifest: &Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(manifest)
        .with_context(|| format!("{}: not a crate folder", manifest.display()))?;
    let value: toml::Value =
        toml::from_str(&text).with_context(|| format!("{}", manifest.display()))?;
    let name = value
        .get("lib")
        .and_then(|l| l.get("name"))
        .and_then(toml::Value::as_str)
        .map(str::to_owned)
        .or_else(|| {
            value
                .get("package")
                .and_then(|p| p.get("name"))
                .and_then(toml::Value::as_str)
                .map(|n| n.replace('-', "_"))
        })
        .with_context(|| format!("{}: no [package] name", manifest.display()))?;
    if !name.starts_with(LIBRARY_STEM_PREFIX) {
        anyhow::bail!(
            "{}: the library is named `{name}`; koas loads libraries named `{LIBRARY_STEM_PREFIX}<name>` (set [lib] name = \"{LIBRARY_STEM_PREFIX}…\")",
            manifest.display()
        );
    }
    Ok(name)
}

/// The target folder cargo uses for the crate at `manifest` (a
/// workspace's, when it is a member of one).
fn cargo_target_dir(manifest: &Path) -> anyhow::Result<PathBuf> {
    let out = std::process::Command::new(std::env::var_os("CARGO").unwrap_or("cargo".into()))
        .args(["metadata", "--no-deps", "--format-version", "1", "--offline"])
        .arg("--manifest-path")
        .arg(manifest)
        .stderr(std::process::Stdio::null())
        .output()
        .context("cannot run `cargo metadata` to find the build folder: give --target-dir DIR, or the library's path")?;
    if !out.status.success() {
        anyhow::bail!(
            "`cargo metadata` failed for {}: give --target-dir DIR, or the library's path",
            manifest.display()
        );
    }
    let value: serde_json::Value =
        serde_json::from_slice(&out.stdout).context("`cargo metadata` printed no JSON")?;
    value["target_directory"]
        .as_str()
        .map(PathBuf::from)
        .context("`cargo metadata` named no target_directory")
}

/// Copies `from` to `to` through a temporary file of `to`'s folder: a
/// koas starting meanwhile finds the old library or the new one, never half
/// of one.
fn copy_atomically(from: &Path, to: &Path) -> std::io::Result<()> {
    let folder = to.parent().unwrap_or(Path::new("."));
    let name = to
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Not named like a library, so discovery skips it while it is written.
    let tmp = folder.join(format!(".{name}.installing"));
    std::fs::copy(from, &tmp)?;
    std::fs::rename(&tmp, to).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}
