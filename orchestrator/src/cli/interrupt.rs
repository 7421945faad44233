//! Ctrl-C: the first press asks running work to stop (finished work is
//! kept); a second one exits at once with code 130.

use super::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// The process's Ctrl-C flag. The handler is installed by the first call;
/// `what` says, on the first press, what koas does next (e.g. "letting
/// running kernels stop").
pub fn flag(what: &'static str) -> Arc<AtomicBool> {
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        let handler_flag = flag.clone();
        let _ = ctrlc::set_handler(move || {
            if handler_flag.swap(true, Ordering::SeqCst) {
                eprintln!("koas: interrupted again; exiting now");
                std::process::exit(i32::from(ExitStatus::Interrupted.code()));
            }
            eprintln!("koas: interrupt received; {what} (press Ctrl-C again to exit now)");
        });
        flag
    })
    .clone()
}

/// True once Ctrl-C was pressed (false when no handler was installed).
pub fn interrupted() -> bool {
    FLAG.get().is_some_and(|f| f.load(Ordering::SeqCst))
}
