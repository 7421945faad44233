//! Hostile kernels for the isolation tests (`tests/it/isolation.rs`): each
//! one misbehaves in one way that must cost only its own run, never the
//! `koas` process. The crashes, the `unsafe` null write and the endless
//! loop are deliberate; this plugin workspace is outside the main
//! workspace's lints.
//!
//! Every hostile kernel reads `doc` and writes `hostile_out`, so a test
//! pipeline holds one of them, `hostile_after` (which reads `hostile_out`
//! and must be skipped) and the testkit's independent `source_len` chain
//! (which must finish).

use koas_kernel_api::prelude::*;
use serde_json::{json, Value};
use std::hint::black_box;
use std::time::Duration;

#[derive(Clone, Copy)]
enum Behaviour {
    /// `std::process::abort()`: SIGABRT.
    Abort,
    /// `std::process::exit(0)` in the middle of a run.
    Exit0,
    /// A write through a null pointer: SIGSEGV.
    NullWrite,
    /// Unbounded recursion.
    StackOverflow,
    /// Never returns and never checks for cancellation.
    EndlessLoop,
    /// Allocates `mb` MiB (20 GiB by default) and touches one byte per MiB.
    HugeAllocation,
    /// Returns a string artifact of `mb` MiB.
    HugeOutput,
    /// Returns `warnings` warnings of `warning_chars` characters and logs
    /// `log_lines` lines of `log_chars` characters.
    Flood,
    /// Tries `write_file` and `append_file` on each of `paths`; returns
    /// what happened to each (`written` or the host's refusal).
    WriteFiles,
    /// Declares `.lock`, the workspace lock, as its output file.
    DeclaresLock,
    /// Declares `run.json` as a path it streams to.
    DeclaresRunRecord,
    /// Forks (Unix): the child keeps the worker's pipes open and sleeps
    /// `child_secs` (30 by default); the worker writes the child's pid to
    /// `pid_file` (if given) and aborts.
    ForkThenCrash,
    /// The same, but the worker calls `exit(0)` instead of aborting.
    ForkThenExit,
    /// The same, but the worker loops forever (until killed).
    ForkThenLoop,
    /// The same, but the kernel then returns a good answer: the child
    /// lives on in the worker's process group.
    ForkThenReturn,
    /// Leaves a thread behind that calls `exit(0)` `delay_ms` (300 by
    /// default) after the kernel has returned a good answer.
    LeftoverExit,
    /// Writes terminal escape sequences (a window title, a screen clear, a
    /// carriage return and a forged status line) in a warning log line,
    /// its summary and, with `fail` set, its error message.
    Escapes,
}

/// What [`Behaviour::Escapes`] writes: OSC 0 (window title), BEL, CSI 2J
/// (clear screen), CR, then a line that looks like koas's own.
pub const ESCAPES: &str = "\u{1b}]0;PWNED\u{7}\u{1b}[2J\rkoas: review OK";

struct Hostile {
    name: &'static str,
    behaviour: Behaviour,
}

fn config_u64(c: &KernelConfig, key: &str, default: u64) -> u64 {
    c.get(key).and_then(Value::as_u64).unwrap_or(default)
}

/// Recurses until the stack runs out; the array keeps each frame large and
/// the addition keeps the call from being a tail call.
#[allow(unconditional_recursion)]
fn recurse(depth: u64) -> u64 {
    let frame = black_box([depth; 256]);
    recurse(depth + 1) + frame[(depth % 256) as usize]
}

/// Forks and returns the child's pid to the parent; the child sleeps
/// `secs` with the worker's pipes open and ends without running any
/// destructor.
#[cfg(unix)]
fn fork_sleeper(secs: u64) -> Result<i32, String> {
    extern "C" {
        fn fork() -> i32;
        fn _exit(code: i32) -> !;
    }
    // Deliberate: the misbehaviour under test. The child only sleeps and
    // `_exit`s, both safe after a fork in a threaded process.
    match unsafe { fork() } {
        -1 => Err("fork failed".to_string()),
        0 => {
            std::thread::sleep(Duration::from_secs(secs));
            unsafe { _exit(0) }
        }
        child => Ok(child),
    }
}

#[cfg(not(unix))]
fn fork_sleeper(_secs: u64) -> Result<i32, String> {
    Err("forking needs Unix".to_string())
}

/// Forks a sleeper and writes its pid to the config's `pid_file`.
fn fork_and_tell(c: &KernelConfig) -> Result<(), KernelError> {
    let child = fork_sleeper(config_u64(c, "child_secs", 30)).map_err(KernelError::failed)?;
    if let Some(file) = c
        .get("pid_file")
        .and_then(Value::as_str)
        .filter(|f| !f.is_empty())
    {
        std::fs::write(file, child.to_string()).map_err(|e| KernelError::failed(e.to_string()))?;
    }
    Ok(())
}

impl Kernel for Hostile {
    fn spec(&self) -> KernelSpec {
        let spec = KernelSpec::new(self.name, "1.0.0").stage("H").input("doc");
        match self.behaviour {
            Behaviour::HugeAllocation => spec
                .output("hostile_out")
                .default_config(json!({ "mb": 20480 })),
            Behaviour::HugeOutput => spec
                .output("hostile_out")
                .default_config(json!({ "mb": 1536 })),
            Behaviour::Flood => spec.output("hostile_out").default_config(json!({
                "warnings": 0, "warning_chars": 10, "log_lines": 0, "log_chars": 10
            })),
            Behaviour::WriteFiles => spec
                .output("hostile_out")
                .writes("streamed/")
                .default_config(json!({
                    "paths": [".lock", "run.json", "workspace.json", "review/ledger.jsonl"]
                })),
            Behaviour::DeclaresLock => spec.output_file("hostile_out", ".lock"),
            Behaviour::DeclaresRunRecord => spec.output("hostile_out").writes("run.json"),
            Behaviour::ForkThenCrash
            | Behaviour::ForkThenExit
            | Behaviour::ForkThenLoop
            | Behaviour::ForkThenReturn => spec
                .output("hostile_out")
                .default_config(json!({ "child_secs": 30, "pid_file": "" })),
            Behaviour::LeftoverExit => spec
                .output("hostile_out")
                .default_config(json!({ "delay_ms": 300 })),
            Behaviour::Escapes => spec
                .output("hostile_out")
                .default_config(json!({ "fail": false })),
            _ => spec.output("hostile_out"),
        }
    }

    fn run(&self, ctx: &Context, c: &KernelConfig, _inputs: &Inputs) -> KernelResult {
        ctx.info(&format!("{} starts misbehaving", self.name));
        let out = match self.behaviour {
            Behaviour::Abort => std::process::abort(),
            Behaviour::Exit0 => std::process::exit(0),
            Behaviour::NullWrite => {
                // Deliberate: the crash under test.
                unsafe { std::ptr::null_mut::<u64>().write_volatile(42) };
                json!(null)
            }
            Behaviour::StackOverflow => json!(recurse(0)),
            Behaviour::EndlessLoop => loop {
                std::thread::sleep(Duration::from_millis(10));
            },
            Behaviour::HugeAllocation => {
                let len = config_u64(c, "mb", 20480) as usize * 1024 * 1024;
                let mut v = vec![0u8; len];
                for i in (0..len).step_by(1024 * 1024) {
                    v[i] = 1;
                }
                json!(black_box(&v).len())
            }
            Behaviour::HugeOutput => {
                let len = config_u64(c, "mb", 1536) as usize * 1024 * 1024;
                Value::String("x".repeat(len))
            }
            Behaviour::Flood => {
                let line = "l".repeat(config_u64(c, "log_chars", 10) as usize);
                for _ in 0..config_u64(c, "log_lines", 0) {
                    ctx.warn(&line);
                }
                let warning = "w".repeat(config_u64(c, "warning_chars", 10) as usize);
                let mut out = KernelOutput::new().artifact("hostile_out", true);
                for _ in 0..config_u64(c, "warnings", 0) {
                    out = out.warning(warning.clone());
                }
                return Ok(out.summary("flooded"));
            }
            Behaviour::WriteFiles => {
                let mut results = serde_json::Map::new();
                for path in c
                    .get("paths")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let path = path.as_str().unwrap_or_default();
                    let written = ctx
                        .append_file(path, b"appended by a hostile kernel\n")
                        .and_then(|()| ctx.write_file(path, b"replaced by a hostile kernel\n"));
                    let result = match written {
                        Ok(()) => "written".to_string(),
                        Err(e) => format!("refused: {}", e.message),
                    };
                    results.insert(path.to_string(), Value::String(result));
                }
                Value::Object(results)
            }
            Behaviour::DeclaresLock | Behaviour::DeclaresRunRecord => json!("locked"),
            Behaviour::ForkThenCrash => {
                fork_and_tell(c)?;
                std::process::abort()
            }
            Behaviour::ForkThenExit => {
                fork_and_tell(c)?;
                std::process::exit(0)
            }
            Behaviour::ForkThenLoop => {
                fork_and_tell(c)?;
                loop {
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
            Behaviour::ForkThenReturn => {
                fork_and_tell(c)?;
                json!("forked")
            }
            Behaviour::Escapes => {
                ctx.warn(&format!("log {ESCAPES}"));
                if c.get("fail").and_then(Value::as_bool).unwrap_or(false) {
                    return Err(KernelError::failed(format!("error {ESCAPES}")));
                }
                return Ok(KernelOutput::new()
                    .artifact("hostile_out", true)
                    .summary(format!("summary {ESCAPES}")));
            }
            Behaviour::LeftoverExit => {
                let delay = Duration::from_millis(config_u64(c, "delay_ms", 300));
                std::thread::spawn(move || {
                    std::thread::sleep(delay);
                    std::process::exit(0)
                });
                json!("returned")
            }
        };
        Ok(KernelOutput::new()
            .artifact("hostile_out", out)
            .summary("survived"))
    }
}

/// Reads the hostile kernel's output: skipped whenever that one fails.
/// Sleeps `sleep_ms` (0 by default), then says which process ran it.
struct After;
impl Kernel for After {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new("hostile_after", "1.0.0")
            .stage("H")
            .input("hostile_out")
            .output("after_hostile")
            .default_config(json!({ "sleep_ms": 0 }))
    }
    fn run(&self, _ctx: &Context, c: &KernelConfig, _inputs: &Inputs) -> KernelResult {
        std::thread::sleep(Duration::from_millis(config_u64(c, "sleep_ms", 0)));
        Ok(KernelOutput::new().artifact("after_hostile", json!({ "pid": std::process::id() })))
    }
}

/// Says which process ran it: its pid and whether that process is a koas
/// worker. Two of them in one run show whether a worker is reused.
struct WhereAmI {
    name: &'static str,
    output: &'static str,
}
impl Kernel for WhereAmI {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new(self.name, "1.0.0")
            .stage("H")
            .input("doc")
            .output(self.output)
    }
    fn run(&self, _ctx: &Context, _c: &KernelConfig, _inputs: &Inputs) -> KernelResult {
        let in_worker = std::env::args().any(|a| a == "__koas-worker");
        Ok(KernelOutput::new().artifact(
            self.output,
            json!({ "pid": std::process::id(), "in_worker": in_worker }),
        ))
    }
}

koas_kernel_api::export_kernel!(
    Hostile {
        name: "hostile_abort",
        behaviour: Behaviour::Abort
    },
    Hostile {
        name: "hostile_escapes",
        behaviour: Behaviour::Escapes
    },
    Hostile {
        name: "hostile_exit0",
        behaviour: Behaviour::Exit0
    },
    Hostile {
        name: "hostile_null_write",
        behaviour: Behaviour::NullWrite
    },
    Hostile {
        name: "hostile_stack_overflow",
        behaviour: Behaviour::StackOverflow
    },
    Hostile {
        name: "hostile_endless_loop",
        behaviour: Behaviour::EndlessLoop
    },
    Hostile {
        name: "hostile_huge_allocation",
        behaviour: Behaviour::HugeAllocation
    },
    Hostile {
        name: "hostile_huge_output",
        behaviour: Behaviour::HugeOutput
    },
    Hostile {
        name: "hostile_flood",
        behaviour: Behaviour::Flood
    },
    Hostile {
        name: "hostile_write_files",
        behaviour: Behaviour::WriteFiles
    },
    Hostile {
        name: "hostile_declares_lock",
        behaviour: Behaviour::DeclaresLock
    },
    Hostile {
        name: "hostile_declares_run_record",
        behaviour: Behaviour::DeclaresRunRecord
    },
    Hostile {
        name: "hostile_fork_then_crash",
        behaviour: Behaviour::ForkThenCrash
    },
    Hostile {
        name: "hostile_fork_then_exit",
        behaviour: Behaviour::ForkThenExit
    },
    Hostile {
        name: "hostile_fork_then_loop",
        behaviour: Behaviour::ForkThenLoop
    },
    Hostile {
        name: "hostile_fork_then_return",
        behaviour: Behaviour::ForkThenReturn
    },
    Hostile {
        name: "hostile_leftover_exit",
        behaviour: Behaviour::LeftoverExit
    },
    After,
    WhereAmI {
        name: "where_a",
        output: "where_a_out"
    },
    WhereAmI {
        name: "where_b",
        output: "where_b_out"
    },
);
