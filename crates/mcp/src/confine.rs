//! Confinement of the server to its root, enforced by the kernel.
//!
//! Checking a path and opening it later is a race: a symbolic link
//! swapped in between (a `.review` folder replaced by a link, a document
//! replaced by a link to a file elsewhere) sends the open outside the
//! root. So before it serves anything, and before it starts a single
//! thread, the server restricts itself with Landlock (Linux 5.13 and
//! later): the root, opened once and held by the kernel for the life of
//! the process, is the only folder where files may be read, written,
//! created, renamed or removed. The kernel checks every later open —
//! every thread's, every worker process's, at any depth, symbolic links
//! included — against that held handle, so no open can leave the root
//! whatever the client or anything else in the root does meanwhile.
//!
//! The process also needs a few things it chose itself, never a client:
//! reading and executing the kernel plugins and the `koas` executable,
//! reading the prompt templates, the system libraries, name resolution
//! and certificate files, the describe cache, the `koas.toml` of the
//! root's parent folders, and `/dev/null`. Those are allowed read-only
//! (`/dev/null` also written), by the fixed paths below.
//!
//! Where the kernel has no Landlock (another system, an older kernel, a
//! kernel built without it) the server still checks every path before it
//! uses it, says at start that it is not confined, and refuses to start
//! under `--require-confinement`.

use std::path::{Path, PathBuf};

/// What the kernel enforces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Confinement {
    /// Every restriction asked for is enforced.
    Full,
    /// The kernel enforces an older subset (reads and writes are confined;
    /// a right added by a later kernel, such as truncation, may not be).
    Partial,
    /// Not confined, and why.
    None(String),
}

impl Confinement {
    /// The line the server prints at start.
    pub fn describe(&self) -> String {
        match self {
            Confinement::Full => {
                "confined to the root by the kernel (Landlock): no file outside it can be read or written".to_owned()
            }
            Confinement::Partial => {
                "confined to the root by the kernel (Landlock, an older version: reads and writes outside the root are refused, some newer rights are not restricted)".to_owned()
            }
            Confinement::None(why) => format!(
                "NOT confined ({why}): paths are checked before use, but a symbolic link swapped during a call is not stopped"
            ),
        }
    }

    /// True when reads and writes outside the root are refused.
    pub fn is_enforced(&self) -> bool {
        !matches!(self, Confinement::None(_))
    }
}

/// The folders and files outside the root the server reads (never
/// writes): fixed by the server's own configuration and the system.
pub fn read_only_paths(kernel_dirs: &[PathBuf], root: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = kernel_dirs.to_vec();
    if let Ok(exe) = std::env::current_exe() {
        if let Some(dir) = exe.parent() {
            // The executable (workers are started from it), and beside it
            // the installed prompts or a repository's `prompts/`.
            out.push(exe.clone());
            out.push(dir.join("../share/koas/prompts"));
            out.push(dir.join("../../prompts"));
        }
    }
    if let Some(dir) = std::env::var_os("KOAS_PROMPTS").filter(|v| !v.is_empty()) {
        out.push(PathBuf::from(dir));
    }
    if let Some(dir) = koas_orchestrator::embed::cache_dir() {
        out.push(dir);
    }
    // A project file above the root still configures documents inside it.
    for dir in root.ancestors().skip(1) {
        out.push(dir.join("koas.toml"));
    }
    for fixed in [
        // The dynamic linker and the libraries of a worker process.
        "/usr",
        "/lib",
        "/lib32",
        "/lib64",
        "/bin",
        "/sbin",
        "/etc/ld.so.cache",
        "/etc/ld.so.conf",
        "/etc/ld.so.conf.d",
        // Local time in ledger stamps.
        "/etc/localtime",
        "/etc/timezone",
        // Name resolution of a model endpoint such as `localhost`.
        "/etc/hosts",
        "/etc/host.conf",
        "/etc/resolv.conf",
        "/etc/nsswitch.conf",
        "/etc/gai.conf",
        // Certificates of an HTTPS endpoint (certificates only, not keys).
        "/etc/ssl/certs",
        "/etc/pki/tls/certs",
        "/etc/ca-certificates",
        // The lock file names the host that holds it.
        "/proc/sys/kernel/hostname",
    ] {
        out.push(PathBuf::from(fixed));
    }
    out
}

/// Confines this process (the calling thread and every thread and process
/// it starts afterwards) to `root`, with `read_only` readable. Call it
/// before any other thread exists: a thread started earlier keeps its
/// rights.
#[cfg(target_os = "linux")]
pub fn confine(root: &Path, read_only: &[PathBuf]) -> Confinement {
    use landlock::{
        path_beneath_rules, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr,
        RulesetStatus, ABI,
    };
    let abi = ABI::V6;
    let all = AccessFs::from_all(abi);
    let read = AccessFs::from_read(abi);
    let attempt = || -> Result<RulesetStatus, landlock::RulesetError> {
        let status = Ruleset::default()
            .handle_access(all)?
            .create()?
            .add_rules(path_beneath_rules([root], all))?
            .add_rules(path_beneath_rules(read_only, read))?
            .add_rules(path_beneath_rules(
                ["/dev/null", "/dev/zero", "/dev/urandom", "/dev/random"],
                read | AccessFs::WriteFile,
            ))?
            .restrict_self()?;
        Ok(status.ruleset)
    };
    match attempt() {
        Ok(RulesetStatus::FullyEnforced) => Confinement::Full,
        Ok(RulesetStatus::PartiallyEnforced) => Confinement::Partial,
        Ok(RulesetStatus::NotEnforced) => {
            Confinement::None("this Linux kernel does not offer Landlock".to_owned())
        }
        Err(e) => Confinement::None(format!("Landlock refused the rules: {e}")),
    }
}

/// Confinement needs Landlock, which only Linux has.
#[cfg(not(target_os = "linux"))]
pub fn confine(_root: &Path, _read_only: &[PathBuf]) -> Confinement {
    Confinement::None("Landlock is a Linux feature".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_read_only_list_holds_the_kernels_and_no_part_of_the_root() {
        let root = Path::new("/srv/docs/root");
        let paths = read_only_paths(&[PathBuf::from("/opt/kernels")], root);
        assert!(paths.contains(&PathBuf::from("/opt/kernels")));
        assert!(paths.contains(&PathBuf::from("/srv/docs/koas.toml")));
        assert!(paths.contains(&PathBuf::from("/koas.toml")));
        // Nothing a client names, and no folder that holds the root:
        // allowing one would allow the root's neighbours.
        for p in &paths {
            assert!(
                !root.starts_with(p) || p.ends_with("koas.toml"),
                "{} holds the root",
                p.display()
            );
        }
        assert!(!paths.contains(&PathBuf::from("/etc")));
        assert!(!paths.contains(&PathBuf::from("/proc")));
    }

    #[test]
    fn the_start_line_says_whether_the_server_is_confined() {
        assert!(Confinement::Full.describe().contains("no file outside it"));
        let none = Confinement::None("no Landlock".into());
        assert!(!none.is_enforced());
        assert!(none.describe().starts_with("NOT confined (no Landlock)"));
    }
}
