//! Ctrl-C: the first press asks running work to stop (finished work is
//! kept); a second one exits at once with code 130, removing the
//! workspace locks this process holds.
//!
//! The handler is installed when the process starts ([`install`]): a
//! Ctrl-C that arrived before a command installed it would end the
//! process by the signal, skipping the lock's release. Until a command
//! asks for the flag ([`flag`]), which means it checks it and stops
//! cleanly, the first Ctrl-C exits at once with 130.
//!
//! SIGTERM (and SIGHUP) come through the same handler. A command that
//! cannot promise to notice the flag soon (a kernel running in this
//! process, a read that blocks) gives a deadline ([`flag_within`]): that
//! long after the first signal, the process exits with 130 all the same,
//! removing its locks, so a supervisor's single SIGTERM always ends it.

use super::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Set once a command watches the flag.
static WATCHED: AtomicBool = AtomicBool::new(false);

/// What koas does after a first Ctrl-C, shown to the user.
static WHAT: Mutex<&'static str> = Mutex::new("stopping after the current step");

/// How long after a first signal the process exits even if the command
/// has not stopped by then (`None`: it waits for the command).
static DEADLINE: Mutex<Option<Duration>> = Mutex::new(None);

/// Exits with 130, removing the workspace locks this process holds.
fn exit_now() -> ! {
    crate::lock::release_all_on_exit();
    std::process::exit(i32::from(ExitStatus::Interrupted.code()))
}

/// Installs the Ctrl-C handler (once; later calls do nothing) and returns
/// the process's flag.
pub fn install() -> Arc<AtomicBool> {
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        let handler_flag = flag.clone();
        let _ = ctrlc::set_handler(move || {
            if !WATCHED.load(Ordering::SeqCst) {
                eprintln!("koas: interrupted");
                exit_now();
            }
            if handler_flag.swap(true, Ordering::SeqCst) {
                eprintln!("koas: interrupted again; exiting now");
                exit_now();
            }
            let what = WHAT.try_lock().map_or("stopping", |w| *w);
            let deadline = DEADLINE.try_lock().ok().and_then(|d| *d);
            match deadline {
                Some(deadline) => {
                    eprintln!(
                        "koas: interrupt received; {what} (exiting in {} s at the latest; press Ctrl-C again to exit now)",
                        deadline.as_secs()
                    );
                    // The handler runs on its own thread; the watchdog
                    // gets another so a second signal is still heard.
                    std::thread::spawn(move || {
                        std::thread::sleep(deadline);
                        eprintln!(
                            "koas: still running {} s after the interrupt; exiting now",
                            deadline.as_secs()
                        );
                        exit_now();
                    });
                }
                None => eprintln!(
                    "koas: interrupt received; {what} (press Ctrl-C again to exit now)"
                ),
            }
        });
        flag
    })
    .clone()
}

/// The process's Ctrl-C flag (installing the handler if [`install`] was
/// not called); `what` says, on the first press, what koas does next
/// (e.g. "letting running kernels stop").
pub fn flag(what: &'static str) -> Arc<AtomicBool> {
    if let Ok(mut w) = WHAT.lock() {
        *w = what;
    }
    let flag = install();
    WATCHED.store(true, Ordering::SeqCst);
    flag
}

/// [`flag`], with a deadline: `deadline` after the first signal the
/// process exits with 130 (removing its locks) whether or not the command
/// has stopped.
pub fn flag_within(what: &'static str, deadline: Duration) -> Arc<AtomicBool> {
    if let Ok(mut d) = DEADLINE.lock() {
        *d = Some(deadline);
    }
    flag(what)
}

/// True once Ctrl-C was pressed (false when no handler was installed).
pub fn interrupted() -> bool {
    FLAG.get().is_some_and(|f| f.load(Ordering::SeqCst))
}
