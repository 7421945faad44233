//! Ctrl-C: the first press asks running work to stop (finished work is
//! kept); a second one exits at once with code 130, removing the
//! workspace locks this process holds.
//!
//! The handler is installed when the process starts ([`install`]): a
//! Ctrl-C that arrived before a command installed it would end the
//! process by the signal, skipping the lock's release. Until a command
//! asks for the flag ([`flag`]), which means it checks it and stops
//! cleanly, the first Ctrl-C exits at once with 130.

use super::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Set once a command watches the flag.
static WATCHED: AtomicBool = AtomicBool::new(false);

/// What koas does after a first Ctrl-C, shown to the user.
static WHAT: Mutex<&'static str> = Mutex::new("stopping after the current step");

/// Installs the Ctrl-C handler (once; later calls do nothing) and returns
/// the process's flag.
pub fn install() -> Arc<AtomicBool> {
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        let handler_flag = flag.clone();
        let _ = ctrlc::set_handler(move || {
            if !WATCHED.load(Ordering::SeqCst) {
                eprintln!("koas: interrupted");
                crate::lock::release_all_on_exit();
                std::process::exit(i32::from(ExitStatus::Interrupted.code()));
            }
            if handler_flag.swap(true, Ordering::SeqCst) {
                eprintln!("koas: interrupted again; exiting now");
                crate::lock::release_all_on_exit();
                std::process::exit(i32::from(ExitStatus::Interrupted.code()));
            }
            let what = WHAT.try_lock().map_or("stopping", |w| *w);
            eprintln!("koas: interrupt received; {what} (press Ctrl-C again to exit now)");
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

/// True once Ctrl-C was pressed (false when no handler was installed).
pub fn interrupted() -> bool {
    FLAG.get().is_some_and(|f| f.load(Ordering::SeqCst))
}
