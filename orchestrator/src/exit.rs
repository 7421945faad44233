//! The one place that maps outcomes and errors to exit codes.
//!
//! | code | meaning |
//! |------|---------|
//! | 0    | success |
//! | 1    | a kernel failed (its dependents were skipped) |
//! | 2    | usage, pipeline, config or I/O error: nothing was run |
//! | 130  | interrupted (Ctrl-C); finished work is kept |

/// Success.
pub const OK: i32 = 0;
/// A kernel failed.
pub const KERNEL_FAILED: i32 = 1;
/// Usage, pipeline, config or I/O error.
pub const USAGE: i32 = 2;
/// Interrupted by the user.
pub const INTERRUPTED: i32 = 130;

/// Prints an error chain the way users read it and returns [`USAGE`].
pub fn report_error(err: &anyhow::Error) -> i32 {
    let mut text = format!("error: {err}");
    for cause in err.chain().skip(1) {
        let cause = cause.to_string();
        // Errors that embed their source in their own message would
        // otherwise be printed twice.
        if !text.contains(&cause) {
            text.push_str(&format!("\n  caused by: {cause}"));
        }
    }
    eprintln!("{text}");
    USAGE
}
