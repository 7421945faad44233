//! The `koas` command. Each subcommand lives in its own file under `cli/`;
//! `exit` maps every error to the documented exit codes.

mod cli;
mod exit;

fn main() {
    let code = cli::main();
    std::process::exit(code);
}
