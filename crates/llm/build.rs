//! Builds the list of prompt templates compiled into the binary from the
//! repository's `prompts/` folder: every `<name>.tera` file there, so the
//! runtime names no template of any host.

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let dir = manifest.join("../../prompts");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut names: Vec<(String, PathBuf)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter_map(|path| {
            let name = path
                .file_name()?
                .to_str()?
                .strip_suffix(".tera")?
                .to_owned();
            Some((name, path))
        })
        .collect();
    // Sorted, so the list (and an error message naming it) is the same on
    // every file system.
    names.sort();
    let mut code = String::from(
        "/// The templates built into this binary.\nconst BUILT_IN: &[(&str, &str)] = &[\n",
    );
    for (name, path) in names {
        let path = path.canonicalize().unwrap_or(path);
        writeln!(
            code,
            "    ({name:?}, include_str!({:?})),",
            path.display().to_string()
        )
        .expect("writing to a String");
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo"))
        .join("built_in_prompts.rs");
    std::fs::write(&out, code).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
}
