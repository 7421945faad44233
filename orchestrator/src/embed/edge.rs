//! What a command line needs at its edge: printing an error chain, a
//! closed stdout, `out!`/`outln!`, shared by every host's commands.

use crate::embed::error_chain;

/// Prints an error chain the way users read it: the error, then each
/// cause that its message does not already contain.
pub fn print_error(err: &anyhow::Error) {
    eprintln!("error: {}", error_chain(err, "\n  caused by: "));
}

/// True when `err` comes from writing to a closed stdout (`koas … | head`):
/// the reader has all it wanted, so the command ends normally.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// `println!` that returns the write error instead of panicking, so that a
/// closed stdout ends the command cleanly (see [`is_broken_pipe`]).
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        writeln!(::std::io::stdout().lock(), $($arg)*)
    }};
}

/// `print!` that returns the write error instead of panicking.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let mut stdout = ::std::io::stdout().lock();
        write!(stdout, $($arg)*).and_then(|()| stdout.flush())
    }};
}
