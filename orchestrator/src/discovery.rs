//! Finding kernel plugins on disk.
//!
//! Folders are searched in the order given; inside a folder only files named
//! like koas kernel libraries (`libkoas_kernel_*.so` on Linux,
//! `libkoas_kernel_*.dylib` on macOS, `koas_kernel_*.dll` on Windows) are
//! loaded. Every problem — a library that will not load, has no entry
//! symbol, was built for another ABI version, fails to describe a kernel or
//! exports a kernel name already taken — is recorded and the library or
//! kernel skipped; discovery itself never fails.
//!
//! With process isolation (the default) libraries are loaded and described
//! in a worker process ([`discover_in_workers`]), so a library whose
//! initialiser or `spec()` crashes or hangs is one more problem reported,
//! not a dead `koas`; the worker is then reused to run kernels.

/// Where kernels are searched, in order: the one text `koas --help` and
/// the README give (a test holds them together), following
/// [`executable_search_paths`] and the host's search path.
#[macro_export]
macro_rules! discovery_order {
    () => {
        "Kernel discovery order:
  1. --kernel-path flags   2. KOAS_KERNEL_PATH   3. the pipeline's kernel_paths
  4. the koas executable's kernels/ subfolder, then its own folder
  5. <exe dir>/../lib/koas/kernels (an installed koas)
  6. $XDG_DATA_HOME/koas/kernels (default ~/.local/share/koas/kernels)
Only files named like libkoas_kernel_*.so (.dylib, or koas_kernel_*.dll) are loaded."
    };
}

use crate::described::LibraryKernels;
use crate::limits::Isolation;
use crate::loader::{load_plugin, LoadError};
use crate::worker::pool::{DescribeProblem, WorkerPool};
use koas_kernel_api::abi::{
    abi_mismatch_text, PluginError, PluginHandle, ABI_VERSION, API_VERSION,
};
use koas_kernel_api::KernelSpec;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Prefix every kernel library's file name starts with (after the
/// platform's library prefix).
pub const LIBRARY_STEM_PREFIX: &str = "koas_kernel_";

/// Where a search folder came from, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchOrigin {
    /// A `--kernel-path` flag.
    Flag,
    /// The `KOAS_KERNEL_PATH` environment variable.
    Env,
    /// The pipeline file's `kernel_paths`.
    Pipeline,
    /// The folder of the `koas` executable or its `kernels/` subfolder.
    Executable,
    /// `<exe dir>/../lib/koas/kernels`: where `scripts/install.sh PREFIX`
    /// puts the kernels of `PREFIX/bin/koas`.
    Install,
    /// The user's data folder, `$XDG_DATA_HOME/koas/kernels` (by default
    /// `~/.local/share/koas/kernels`).
    UserData,
}

impl SearchOrigin {
    /// How `koas kernels` and error messages name the origin.
    pub fn describe(self) -> &'static str {
        match self {
            SearchOrigin::Flag => "--kernel-path",
            SearchOrigin::Env => "KOAS_KERNEL_PATH",
            SearchOrigin::Pipeline => "the pipeline's kernel_paths",
            SearchOrigin::Executable => "next to the koas executable",
            SearchOrigin::Install => "the install prefix's lib/koas/kernels",
            SearchOrigin::UserData => "the user's data folder",
        }
    }
}

/// What to do when no kernel was found at all, for messages.
pub const INSTALL_HINT: &str = "Install koas with its kernels: `scripts/install.sh PREFIX` (from a koas checkout) lays out PREFIX/bin/koas and PREFIX/lib/koas/kernels/; or copy libkoas_kernel_* libraries to ~/.local/share/koas/kernels, or pass --kernel-path DIR (or set KOAS_KERNEL_PATH) to a folder holding them.";

/// A folder (or a single library file) to search.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SearchPath {
    /// A folder searched for kernel libraries, or one library file.
    pub path: PathBuf,
    /// Where it came from, shown by `koas kernels`.
    pub origin: SearchOrigin,
}

/// A kernel found in a loaded library.
#[derive(Debug, Clone)]
pub struct LoadedKernel {
    /// The spec the kernel's describe call returned, already validated.
    pub spec: KernelSpec,
    /// The library file it lives in.
    pub library: PathBuf,
    /// Its index inside the library.
    pub index: u32,
    /// The ABI version the library declares.
    pub abi_version: u32,
    /// The `koas-kernel-api` version the library was built with, when it
    /// says it (its version symbol, else its describe answers): `None` for
    /// plugins older than that, or not written with `koas-kernel-api`.
    pub api_version: Option<String>,
    /// The library's entry table (ABI version already checked), when the
    /// library was loaded into this process (in-process discovery); `None`
    /// when a worker described it, and the engine loads it on first
    /// in-process use.
    pub handle: Option<PluginHandle>,
}

/// Something that went wrong while loading plugins.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "problem", rename_all = "snake_case")]
pub enum DiscoveryProblem {
    /// The dynamic loader refused the file.
    LoadFailed {
        /// The library file that failed to load.
        path: PathBuf,
        /// The loader's message.
        message: String,
    },
    /// The library has no entry symbol.
    MissingSymbol {
        /// The library file without the entry symbol.
        path: PathBuf,
    },
    /// The library was built for another ABI version.
    AbiMismatch {
        /// The library file built for another ABI.
        path: PathBuf,
        /// The version this koas implements.
        expected: u32,
        /// The version the library declares.
        found: u32,
        /// The `koas-kernel-api` version the library was built with, when
        /// it exports the symbol naming it.
        api_version: Option<String>,
    },
    /// Describing a kernel failed, or its spec is invalid.
    DescribeFailed {
        /// The library file holding the kernel.
        path: PathBuf,
        /// The kernel's index in the library.
        index: u32,
        /// The kernel's error message, or the spec check's complaint.
        message: String,
    },
    /// A second library exports a kernel name already loaded.
    DuplicateKernel {
        /// The kernel name exported twice.
        name: String,
        /// The library whose kernel is used.
        kept: PathBuf,
        /// The library whose kernel is skipped.
        skipped: PathBuf,
    },
}

impl std::fmt::Display for DiscoveryProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DiscoveryProblem::LoadFailed { path, message } => {
                write!(f, "{}: skipped: {message}", path.display())
            }
            DiscoveryProblem::MissingSymbol { path } => write!(
                f,
                "{}: skipped: {}",
                path.display(),
                LoadError::MissingSymbol
            ),
            DiscoveryProblem::AbiMismatch {
                path,
                expected,
                found,
                api_version,
            } => write!(
                f,
                "{}: skipped: {}; rebuild the plugin against koas-kernel-api {API_VERSION}",
                path.display(),
                abi_mismatch_text(*found, api_version.as_deref(), *expected)
            ),
            DiscoveryProblem::DescribeFailed {
                path,
                index,
                message,
            } => write!(
                f,
                "{}: kernel #{index} skipped: describe failed: {message}",
                path.display()
            ),
            DiscoveryProblem::DuplicateKernel {
                name,
                kept,
                skipped,
            } => write!(
                f,
                "{}: kernel `{name}` skipped: the name is already provided by {}",
                skipped.display(),
                kept.display()
            ),
        }
    }
}

/// Everything discovery found, usable or not (`koas kernels` prints it
/// all).
#[derive(Debug, Default)]
pub struct Discovery {
    /// Usable kernels by name; on a duplicate name, the first library
    /// searched wins.
    pub kernels: BTreeMap<String, LoadedKernel>,
    /// Every problem, in the order met.
    pub problems: Vec<DiscoveryProblem>,
    /// The folders searched, in order.
    pub searched: Vec<SearchPath>,
    /// The libraries loaded, in order.
    pub libraries: Vec<PathBuf>,
    /// Shared libraries in a search folder that were not loaded because of
    /// their file name (see [`ignored_files`]).
    pub ignored: Vec<IgnoredFile>,
}

/// A library built with a newer `koas-kernel-api` than this koas's, of
/// the same ABI version: its kernels load (what that kernel-api added is
/// unknown to this koas), and `koas kernels` says so.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NewerApi {
    /// The library.
    pub path: PathBuf,
    /// The `koas-kernel-api` version it was built with.
    pub api_version: String,
}

impl std::fmt::Display for NewerApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: built with koas-kernel-api {}, newer than this koas's {API_VERSION} (the same ABI {ABI_VERSION}): it loads, but what that kernel-api added is unknown to this koas",
            self.path.display(),
            self.api_version
        )
    }
}

/// `true` when the version `a` is newer than `b`, both
/// `MAJOR.MINOR.PATCH` (a pre-release suffix is ignored; a version that
/// does not parse is never newer).
pub fn newer_version(a: &str, b: &str) -> bool {
    fn parse(v: &str) -> Option<(u64, u64, u64)> {
        let core = v.split(['-', '+']).next()?;
        let mut parts = core.split('.').map(|p| p.parse::<u64>().ok());
        let version = (parts.next()??, parts.next()??, parts.next()??);
        parts.next().is_none().then_some(version)
    }
    matches!((parse(a), parse(b)), (Some(a), Some(b)) if a > b)
}

impl Discovery {
    /// The libraries of usable kernels built with a newer
    /// `koas-kernel-api` than this koas's, each once.
    pub fn newer_api(&self) -> Vec<NewerApi> {
        let mut out: Vec<NewerApi> = Vec::new();
        for k in self.kernels.values() {
            let Some(v) = &k.api_version else { continue };
            if newer_version(v, API_VERSION) && !out.iter().any(|n| n.path == k.library) {
                out.push(NewerApi {
                    path: k.library.clone(),
                    api_version: v.clone(),
                });
            }
        }
        out
    }
}

/// A shared library in a search folder that discovery did not load
/// because its file name is not a kernel library's: a plugin renamed, or a
/// copy such as `libkoas_kernel_x.so.debug`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct IgnoredFile {
    /// The file.
    pub path: PathBuf,
}

impl std::fmt::Display for IgnoredFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: ignored: a kernel library's file name is {}{LIBRARY_STEM_PREFIX}<name>{}; rename it to load it",
            self.path.display(),
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        )
    }
}

/// The shared libraries of a search folder that discovery skips because of
/// their name: files whose name ends in the platform's library suffix, or
/// holds it followed by more (`.so.1`, `.so.debug`, `.so-old`), but that
/// are not named like a kernel library.
pub fn ignored_files(search: &SearchPath) -> Vec<IgnoredFile> {
    let suffix = std::env::consts::DLL_SUFFIX;
    let Ok(entries) = std::fs::read_dir(&search.path) else {
        return Vec::new();
    };
    let mut files: Vec<IgnoredFile> = entries
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name().to_str().is_some_and(|n| {
                !is_kernel_library_name(n)
                    && n.to_ascii_lowercase()
                        .match_indices(&suffix.to_ascii_lowercase())
                        .any(|(i, _)| i > 0)
            })
        })
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .map(|path| IgnoredFile { path })
        .collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files
}

/// `true` when a file name looks like a koas kernel library on this
/// platform.
pub fn is_kernel_library_name(file_name: &str) -> bool {
    let prefix = format!("{}{LIBRARY_STEM_PREFIX}", std::env::consts::DLL_PREFIX);
    file_name.starts_with(&prefix)
        && file_name.ends_with(std::env::consts::DLL_SUFFIX)
        && file_name.len() > prefix.len() + std::env::consts::DLL_SUFFIX.len()
}

/// The default search folders, in order: the executable's `kernels/`
/// subfolder and its folder (a build tree), `<exe dir>/../lib/koas/kernels`
/// (an installed koas), then the user's data folder
/// ([`user_data_kernels`]).
pub fn executable_search_paths() -> Vec<SearchPath> {
    let mut out = Vec::new();
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
    {
        out.push(SearchPath {
            path: dir.join("kernels"),
            origin: SearchOrigin::Executable,
        });
        out.push(SearchPath {
            path: dir.clone(),
            origin: SearchOrigin::Executable,
        });
        if let Some(prefix) = dir.parent() {
            out.push(SearchPath {
                path: prefix.join("lib").join("koas").join("kernels"),
                origin: SearchOrigin::Install,
            });
        }
    }
    if let Some(path) = user_data_kernels() {
        out.push(SearchPath {
            path,
            origin: SearchOrigin::UserData,
        });
    }
    out
}

/// `$XDG_DATA_HOME/koas/kernels`, or `~/.local/share/koas/kernels` when
/// `XDG_DATA_HOME` is unset, empty or relative (as the XDG base directory
/// specification says); `None` without a home folder.
pub fn user_data_kernels() -> Option<PathBuf> {
    let from_env = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    let data = from_env("XDG_DATA_HOME").or_else(|| {
        from_env("HOME")
            .or_else(|| from_env("USERPROFILE"))
            .map(|home| home.join(".local").join("share"))
    })?;
    Some(data.join("koas").join("kernels"))
}

/// Splits a `KOAS_KERNEL_PATH`-style value (platform path separator).
pub fn split_path_list(value: &str) -> Vec<PathBuf> {
    std::env::split_paths(value)
        .filter(|p| !p.as_os_str().is_empty())
        .collect()
}

fn library_files(search: &SearchPath) -> Vec<PathBuf> {
    if search.path.is_file() {
        return vec![search.path.clone()];
    }
    let Ok(entries) = std::fs::read_dir(&search.path) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_str().is_some_and(is_kernel_library_name))
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// Loads every kernel library found in `search` into this process, in
/// order. The first library to export a kernel name wins.
pub fn discover(search: &[SearchPath]) -> Discovery {
    discover_with(search, |path| match load_plugin(path) {
        Ok(handle) => Ok((Some(handle), LibraryKernels::describe(&handle))),
        Err(e) => Err(problem_of(path, e)),
    })
}

/// Like [`discover`], but every library is loaded and described in a
/// worker process of `pool`, with `memory_mb` as its memory cap.
pub fn discover_in_workers(
    search: &[SearchPath],
    pool: &WorkerPool,
    memory_mb: Option<u64>,
) -> Discovery {
    let mut remembered = crate::describe_cache::DescribeCache::open();
    let found = discover_with(search, |path| {
        if let Some(kernels) = remembered.get(path) {
            return Ok((None, kernels));
        }
        describe_in_worker(pool, path, memory_mb).inspect(|(_, kernels)| {
            remembered.put(path, kernels);
        })
    });
    remembered.save();
    found
}

fn describe_in_worker(
    pool: &WorkerPool,
    path: &Path,
    memory_mb: Option<u64>,
) -> Result<Described, DiscoveryProblem> {
    match pool.describe(path, memory_mb) {
        Ok(kernels) => Ok((None, kernels)),
        Err(DescribeProblem::Load(e)) => Err(problem_of(path, e)),
        Err(DescribeProblem::Worker(end)) => Err(DiscoveryProblem::LoadFailed {
            path: path.to_path_buf(),
            message: format!(
                "loading and describing it stopped its worker process: {}",
                end.message(&crate::limits::KernelLimits {
                    memory_mb,
                    ..Default::default()
                })
            ),
        }),
    }
}

/// Discovery as `isolation` says: in worker processes, or in this one.
pub fn discover_isolated(
    search: &[SearchPath],
    isolation: &Isolation,
    memory_mb: Option<u64>,
) -> Discovery {
    match isolation {
        Isolation::Process { program } => {
            discover_in_workers(search, &WorkerPool::shared(program), memory_mb)
        }
        Isolation::InProcess => discover(search),
    }
}

/// A library's entry table (when loaded here) and what describe gave for
/// each of its kernels.
type Described = (Option<PluginHandle>, LibraryKernels);

fn discover_with(
    search: &[SearchPath],
    mut describe: impl FnMut(&Path) -> Result<Described, DiscoveryProblem>,
) -> Discovery {
    let mut found = Discovery {
        searched: search.to_vec(),
        ..Discovery::default()
    };
    let mut seen_files = BTreeSet::new();
    for sp in search {
        found.ignored.extend(ignored_files(sp));
        for file in library_files(sp) {
            let key = std::fs::canonicalize(&file).unwrap_or_else(|_| file.clone());
            if !seen_files.insert(key.clone()) {
                continue;
            }
            match describe(&key) {
                Ok((handle, specs)) => add_library(&mut found, &key, handle, specs),
                Err(problem) => found.problems.push(problem),
            }
        }
    }
    found
}

fn problem_of(path: &Path, e: LoadError) -> DiscoveryProblem {
    match e {
        LoadError::Open(message) => DiscoveryProblem::LoadFailed {
            path: path.to_path_buf(),
            message,
        },
        LoadError::MissingSymbol => DiscoveryProblem::MissingSymbol {
            path: path.to_path_buf(),
        },
        LoadError::Plugin(PluginError::AbiMismatch {
            found,
            expected,
            api_version,
        }) => DiscoveryProblem::AbiMismatch {
            path: path.to_path_buf(),
            expected,
            found,
            api_version,
        },
        LoadError::Plugin(other) => DiscoveryProblem::LoadFailed {
            path: path.to_path_buf(),
            message: other.to_string(),
        },
    }
}

fn add_library(
    found: &mut Discovery,
    path: &Path,
    handle: Option<PluginHandle>,
    library: LibraryKernels,
) {
    found.libraries.push(path.to_path_buf());
    let api_version = library.api_version;
    for (index, described) in (0u32..).zip(library.kernels) {
        let spec = match described.and_then(|s| {
            s.validate()?;
            Ok(s)
        }) {
            Ok(s) => s,
            Err(message) => {
                found.problems.push(DiscoveryProblem::DescribeFailed {
                    path: path.to_path_buf(),
                    index,
                    message,
                });
                continue;
            }
        };
        if let Some(existing) = found.kernels.get(&spec.name) {
            found.problems.push(DiscoveryProblem::DuplicateKernel {
                name: spec.name.clone(),
                kept: existing.library.clone(),
                skipped: path.to_path_buf(),
            });
            continue;
        }
        found.kernels.insert(
            spec.name.clone(),
            LoadedKernel {
                spec,
                library: path.to_path_buf(),
                index,
                abi_version: ABI_VERSION,
                api_version: api_version.clone(),
                handle,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_names_are_filtered() {
        let p = std::env::consts::DLL_PREFIX;
        let s = std::env::consts::DLL_SUFFIX;
        assert!(is_kernel_library_name(&format!("{p}koas_kernel_md{s}")));
        assert!(!is_kernel_library_name(&format!("{p}koas_kernel_{s}")));
        assert!(!is_kernel_library_name(&format!("{p}other{s}")));
        assert!(!is_kernel_library_name(&format!("{p}koas_kernel_md.rlib")));
        assert!(!is_kernel_library_name("koas_kernel_md.txt"));
    }

    #[test]
    fn versions_compare_by_their_numbers() {
        assert!(newer_version("0.2.0", "0.1.9"));
        assert!(newer_version("1.0.0", "0.99.99"));
        assert!(newer_version("0.1.10", "0.1.9"));
        assert!(!newer_version("0.1.0", "0.1.0"));
        assert!(!newer_version("0.1.0-rc.1", "0.1.0"));
        assert!(!newer_version("0.0.9", "0.1.0"));
        assert!(!newer_version("banana", "0.1.0"));
        assert!(!newer_version("1.2", "0.1.0"));
    }

    #[test]
    fn an_abi_mismatch_names_both_abi_and_kernel_api_versions() {
        let problem = DiscoveryProblem::AbiMismatch {
            path: PathBuf::from("/k/libkoas_kernel_old.so"),
            expected: ABI_VERSION,
            found: 999,
            api_version: Some("7.0.0".into()),
        };
        assert_eq!(
            problem.to_string(),
            format!("/k/libkoas_kernel_old.so: skipped: built with koas-kernel-api 7.0.0 (ABI 999); this koas has koas-kernel-api {API_VERSION} (ABI {ABI_VERSION}); rebuild the plugin against koas-kernel-api {API_VERSION}")
        );
    }

    #[test]
    fn a_library_of_a_newer_kernel_api_is_loaded_and_noted_once() {
        let mut d = Discovery::default();
        let library = LibraryKernels {
            kernels: vec![
                Ok(KernelSpec::new("a", "1.0.0").output("x")),
                Ok(KernelSpec::new("b", "1.0.0").output("y")),
            ],
            api_version: Some("99.0.0".into()),
        };
        add_library(&mut d, Path::new("/k/libkoas_kernel_new.so"), None, library);
        let same = LibraryKernels {
            kernels: vec![Ok(KernelSpec::new("c", "1.0.0").output("z"))],
            api_version: Some(API_VERSION.into()),
        };
        add_library(&mut d, Path::new("/k/libkoas_kernel_same.so"), None, same);
        assert_eq!(d.kernels.len(), 3);
        assert!(d.problems.is_empty());
        assert_eq!(d.kernels["a"].api_version.as_deref(), Some("99.0.0"));
        let newer = d.newer_api();
        assert_eq!(newer.len(), 1, "{newer:?}");
        assert_eq!(newer[0].path, PathBuf::from("/k/libkoas_kernel_new.so"));
        assert!(newer[0]
            .to_string()
            .contains("built with koas-kernel-api 99.0.0, newer than this koas's"));
    }

    #[test]
    fn missing_folders_are_not_errors() {
        let d = discover(&[SearchPath {
            path: PathBuf::from("/definitely/not/here"),
            origin: SearchOrigin::Flag,
        }]);
        assert!(d.kernels.is_empty() && d.problems.is_empty());
    }

    #[test]
    fn a_file_that_is_not_a_library_is_reported() {
        let dir = tempfile::tempdir().expect("tempdir");
        let name = format!(
            "{}koas_kernel_fake{}",
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        );
        std::fs::write(dir.path().join(&name), b"not a library").expect("write");
        let d = discover(&[SearchPath {
            path: dir.path().to_path_buf(),
            origin: SearchOrigin::Flag,
        }]);
        assert_eq!(d.problems.len(), 1);
        assert!(matches!(d.problems[0], DiscoveryProblem::LoadFailed { .. }));
        assert!(d.problems[0].to_string().contains(&name));
    }
}
