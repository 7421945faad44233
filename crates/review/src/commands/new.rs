//! `koas new kernel NAME`: a ready crate for a third-party kernel — a
//! findings check on Stage 1's `section_index`, its tests on Markdown
//! fixtures and through a koas worker, a pipeline, a README.
//!
//! The templates are files of `crates/review/templates/kernel/`, compiled
//! in; the generated crate depends on `koas-kernel-api` and (for its tests)
//! `koas-kernel-test` by path, in the koas source tree this binary was
//! built from or the one `--kernel-api` names.

use anyhow::Context as _;
use clap::{Args, Subcommand};
use koas_orchestrator::embed::{ExitStatus, HostOptions};
use koas_orchestrator::outln;
use koas_review_schema::names;
use std::path::{Path, PathBuf};

/// `koas new …`: what to create.
#[derive(Debug, Subcommand)]
pub enum NewCommand {
    /// A kernel crate: a findings check you build, test and install.
    Kernel(NewKernelArgs),
}

/// The arguments of `koas new kernel`.
#[derive(Debug, Args)]
#[command(after_help = "\
Writes a cargo crate (its own workspace) holding a kernel named NAME that
returns a findings output, NAME_findings: as generated, it reports headings
longer than `max` characters, a check on section_index to replace with
yours (--reads adds the artifact yours reads, parsed and ready). Also: tests on Markdown fixtures (koas-kernel-test)
and through a koas worker process, pipeline.toml, README.md (build, test,
install, enable in koas.toml), .gitignore and koas's Cargo.lock (the
dependency versions koas is tested with).

Exit codes:
  0  the crate was written
  2  a wrong NAME or ARTIFACT, a folder that is not empty, no koas source
     tree (pass --kernel-api), or a write that failed

Examples:
  koas new kernel heading_length
  koas new kernel table_style --reads protected_spans --dir ~/src/table-style
  koas new kernel my_check --kernel-api ~/src/koas/kernel-api")]
pub struct NewKernelArgs {
    /// The kernel's name: a lowercase letter, then lowercase letters,
    /// digits and `_` (the crate is koas-kernel-NAME, its library
    /// koas_kernel_NAME).
    #[arg(value_name = "NAME")]
    pub name: String,

    /// An artifact the kernel reads besides section_index: one of the
    /// Stage 1 and Stage 2 artifacts the test fixtures provide. Repeat it
    /// for several (`--reads doc --reads protected_spans`: the example
    /// then reads each line's text and skips code, tables and the like).
    #[arg(long, value_name = "ARTIFACT")]
    pub reads: Vec<String>,

    /// The folder to write the crate in; it must not exist or be empty
    /// [default: ./NAME].
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,

    /// The koas-kernel-api crate to depend on (its folder, or a koas
    /// checkout holding kernel-api/ and crates/kernel-test/) [default: the
    /// koas source tree this koas was built from].
    #[arg(long, value_name = "PATH")]
    pub kernel_api: Option<PathBuf>,
}

/// The artifacts `--reads` accepts: those `koas_kernel_test::Document`
/// computes for a document, so the generated tests can give them.
pub const READABLE: &[&str] = names::STAGE_1_AND_2;

/// The longest kernel name accepted, in bytes.
const MAX_NAME_LEN: usize = 64;

/// The files of a generated crate: path in the crate, template.
const TEMPLATES: &[(&str, &str)] = &[
    (
        "Cargo.toml",
        include_str!("../../templates/kernel/Cargo.toml.tmpl"),
    ),
    (
        "src/lib.rs",
        include_str!("../../templates/kernel/lib.rs.tmpl"),
    ),
    (
        "tests/{{name}}.rs",
        include_str!("../../templates/kernel/test.rs.tmpl"),
    ),
    (
        "pipeline.toml",
        include_str!("../../templates/kernel/pipeline.toml.tmpl"),
    ),
    (
        "README.md",
        include_str!("../../templates/kernel/README.md.tmpl"),
    ),
    (
        ".gitignore",
        include_str!("../../templates/kernel/gitignore.tmpl"),
    ),
];

/// Why a kernel name is refused, if it is.
pub fn check_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let first = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    if !first || !chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
        return Err(format!(
            "kernel name {name:?}: expected a lowercase letter, then lowercase letters, digits and `_` (like heading_length)"
        ));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(format!(
            "kernel name {name:?}: at most {MAX_NAME_LEN} characters"
        ));
    }
    Ok(())
}

/// Why `--reads` is refused, if it is.
pub fn check_reads(artifact: &str) -> Result<(), String> {
    if READABLE.contains(&artifact) {
        return Ok(());
    }
    let hint = koas_kernel_api::suggest::closest(artifact, READABLE.iter().copied())
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default();
    Err(format!(
        "--reads {artifact}: not an artifact the test fixtures give{hint}; one of: {}",
        READABLE.join(", ")
    ))
}

/// Where the generated crate's path dependencies are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sources {
    /// The `koas-kernel-api` crate folder.
    pub kernel_api: PathBuf,
    /// The `koas-kernel-test` crate folder.
    pub kernel_test: PathBuf,
    /// The source tree's `Cargo.lock`, when there is one.
    pub lock: Option<PathBuf>,
}

/// The koas source tree this binary was built from (`crates/review`'s
/// grandparent).
fn built_from() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The dependencies' folders: in the checkout `given` names (its root or
/// its `kernel-api/`), else in the tree this binary was built from.
pub fn locate_sources(given: Option<&Path>) -> anyhow::Result<Sources> {
    let root = match given {
        Some(path) => {
            if path.join("kernel-api/Cargo.toml").is_file() {
                path.to_path_buf()
            } else if path.join("Cargo.toml").is_file() {
                path.join("..")
            } else {
                anyhow::bail!(
                    "--kernel-api {}: no koas-kernel-api crate there (expected its folder, holding Cargo.toml, or a koas checkout holding kernel-api/)",
                    path.display()
                );
            }
        }
        None => {
            let root = built_from();
            if !root.join("kernel-api/Cargo.toml").is_file() {
                anyhow::bail!(
                    "the koas source tree this koas was built from ({}) is not there; pass --kernel-api PATH, the kernel-api folder of a koas checkout",
                    root.display()
                );
            }
            root
        }
    };
    let root = root
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", root.display()))?;
    let kernel_api = root.join("kernel-api");
    let kernel_test = root.join("crates/kernel-test");
    if !kernel_api.join("Cargo.toml").is_file() {
        anyhow::bail!(
            "{}: no koas-kernel-api crate there; pass --kernel-api PATH, the kernel-api folder of a koas checkout",
            kernel_api.display()
        );
    }
    if !kernel_test.join("Cargo.toml").is_file() {
        anyhow::bail!(
            "{}: no koas-kernel-test crate beside koas-kernel-api (the tests need it); pass --kernel-api PATH, the kernel-api folder of a koas checkout that has crates/kernel-test",
            kernel_test.display()
        );
    }
    let lock = Some(root.join("Cargo.lock")).filter(|p| p.is_file());
    Ok(Sources {
        kernel_api,
        kernel_test,
        lock,
    })
}

/// A kernel name as a Rust type name: `heading_length` →
/// `HeadingLengthKernel` (the suffix keeps it clear of the names the
/// kernel-api prelude brings in).
fn type_name(name: &str) -> String {
    let mut out: String = name
        .split('_')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect();
    out.push_str("Kernel");
    out
}

/// A path as a TOML string (quoted and escaped).
fn toml_string(path: &Path) -> String {
    toml::Value::String(path.display().to_string()).to_string()
}

/// The artifacts a kernel reads, `section_index` first, each once.
fn read_artifacts(reads: &[String]) -> Vec<&str> {
    let mut out = vec![names::SECTION_INDEX];
    for r in reads {
        if !out.contains(&r.as_str()) {
            out.push(r);
        }
    }
    out
}

/// "section_index, doc and protected_spans".
fn read_list(reads: &[String]) -> String {
    match read_artifacts(reads).as_slice() {
        [only] => (*only).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
        [] => String::new(),
    }
}

/// The struct of `protected_spans` the example reads.
const PROTECTED_TYPES: &str = "

/// The fields of `protected_spans` this kernel reads: the blocks a check
/// of prose leaves alone (code, math, tables, HTML, front matter).
#[derive(Debug, Deserialize)]
struct Protected {
    blocks: Vec<Block>,
}

#[derive(Debug, Deserialize)]
struct Block {
    line_start: u32,
    line_end: u32,
}

impl Protected {
    /// `true` when `line` (1-based) is inside a protected block.
    fn protects(&self, line: u32) -> bool {
        self.blocks
            .iter()
            .any(|b| (b.line_start..=b.line_end).contains(&line))
    }
}";

/// What `--reads` adds to the kernel: its `.input(…)` lines, the code
/// that reads each artifact (the document's text as lines, the protected
/// spans parsed, any other as JSON), the README's words and the types.
fn reads_code(reads: &[String]) -> (String, String, String, String) {
    let extra: Vec<&str> = read_artifacts(reads).into_iter().skip(1).collect();
    if extra.is_empty() {
        return (String::new(), String::new(), String::new(), String::new());
    }
    let input: String = extra
        .iter()
        .map(|r| format!("\n            .input(\"{r}\")"))
        .collect();
    let readme = format!(
        " and {}, the artifact{} the kernel was made to read",
        extra
            .iter()
            .map(|r| format!("`{r}`"))
            .collect::<Vec<_>>()
            .join(", "),
        if extra.len() == 1 { "" } else { "s" }
    );
    let mut code = String::new();
    let mut types = String::new();
    let mut text_lines: Option<String> = None;
    let mut spans = false;
    for r in &extra {
        if *r == names::DOC || *r == names::DOC_RAW {
            let lines = format!("{r}_lines");
            code.push_str(&format!(
                "\n        // `{r}`: the document's exact text. Line N's text (1-based, as\n        // findings count) is `{lines}[N - 1]`.\n        let {r}_text = inputs.source_text(\"{r}\")?;\n        let {lines}: Vec<&str> = {r}_text.lines().collect();\n        ctx.debug(&format!(\"`{r}`: {{}} lines\", {lines}.len()));"
            ));
            text_lines.get_or_insert(lines);
        } else if *r == names::PROTECTED_SPANS {
            code.push_str(&format!(
                "\n        // `{r}`: what a check of prose leaves alone.\n        let protected: Protected = inputs.parse(\"{r}\")?;\n        ctx.debug(&format!(\"`{r}`: {{}} blocks\", protected.blocks.len()));"
            ));
            types.push_str(PROTECTED_TYPES);
            spans = true;
        } else {
            let var = r.to_owned();
            code.push_str(&format!(
                "\n        // `{r}`, which this kernel was made to read: its JSON shape is\n        // in koas's docs/artifacts.md. Declare a struct of the fields you\n        // need, as `SectionIndex` above, and parse that instead of a Value.\n        let {var}: serde_json::Value = inputs.parse(\"{r}\")?;\n        ctx.debug(&format!(\"`{r}`: {{}} bytes of JSON\", {var}.to_string().len()));"
            ));
        }
    }
    if let (Some(lines), true) = (text_lines, spans) {
        code.push_str(&format!(
            "\n        // The text a check of prose reads: each line outside the\n        // protected blocks, with its number.\n        let prose: Vec<(u32, &str)> = (1u32..)\n            .zip({lines}.iter().copied())\n            .filter(|(line, _)| !protected.protects(*line))\n            .collect();\n        ctx.debug(&format!(\"{{}} lines of prose\", prose.len()));"
        ));
    }
    (input, code, readme, types)
}

/// The files of the crate for kernel `name` reading `reads`, with its
/// dependencies in `sources`: path in the crate and contents.
pub fn render(name: &str, reads: &[String], sources: &Sources) -> Vec<(String, String)> {
    let lib = format!("koas_kernel_{name}");
    let so = format!(
        "{}{lib}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    let (reads_input, reads_code, reads_readme, reads_types) = reads_code(reads);
    let ty = type_name(name);
    // As rustfmt writes it: on one line when it fits in 100 columns.
    let use_kernel = match format!("use {lib}::{{{ty}, FINDINGS, TOO_LONG}};") {
        line if line.len() <= 100 => line,
        _ => format!("use {lib}::{{\n    {ty}, FINDINGS, TOO_LONG,\n}};"),
    };
    let values = [
        ("{{kernel_api}}", toml_string(&sources.kernel_api)),
        ("{{kernel_test}}", toml_string(&sources.kernel_test)),
        (
            "{{crate}}",
            format!("koas-kernel-{}", name.replace('_', "-")),
        ),
        ("{{lib}}", lib),
        ("{{so}}", so),
        ("{{use_kernel}}", use_kernel),
        ("{{type}}", ty),
        ("{{output}}", format!("{name}_findings")),
        ("{{reads_input}}", reads_input),
        ("{{reads_code}}", reads_code),
        ("{{reads_readme}}", reads_readme),
        ("{{reads_types}}", reads_types),
        ("{{name}}", name.to_owned()),
    ];
    let fill = |template: &str| {
        values
            .iter()
            .fold(template.to_owned(), |text, (key, value)| {
                text.replace(key, value)
            })
    };
    TEMPLATES
        .iter()
        .map(|(path, template)| (fill(path), fill(template)))
        .collect()
}

/// What `koas new kernel` wrote.
#[derive(Debug)]
pub struct Created {
    /// The crate's folder.
    pub dir: PathBuf,
    /// The files written, relative to it, in order.
    pub files: Vec<String>,
    /// Where its dependencies are.
    pub sources: Sources,
}

/// Writes the crate; refuses a folder that exists and is not empty.
pub fn create(args: &NewKernelArgs) -> anyhow::Result<Created> {
    check_name(&args.name).map_err(anyhow::Error::msg)?;
    for artifact in &args.reads {
        check_reads(artifact).map_err(anyhow::Error::msg)?;
    }
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(&args.name));
    if dir.is_file() {
        anyhow::bail!("{} is a file; name a folder with --dir", dir.display());
    }
    let existed = dir.is_dir();
    if existed {
        let mut entries =
            std::fs::read_dir(&dir).with_context(|| format!("cannot read {}", dir.display()))?;
        if entries.next().is_some() {
            anyhow::bail!(
                "{} exists and is not empty; koas new kernel writes only into a new or empty folder (choose another with --dir)",
                dir.display()
            );
        }
    }
    let sources = locate_sources(args.kernel_api.as_deref())?;
    let mut files = render(&args.name, &args.reads, &sources);
    if let Some(lock) = &sources.lock {
        let text = std::fs::read_to_string(lock)
            .with_context(|| format!("cannot read {}", lock.display()))?;
        files.push(("Cargo.lock".to_owned(), text));
    }
    let written = write_all(&dir, &files);
    if written.is_err() && !existed {
        // Nothing half-written is left: the folder was ours.
        let _ = std::fs::remove_dir_all(&dir);
    }
    written?;
    Ok(Created {
        dir,
        files: files.into_iter().map(|(path, _)| path).collect(),
        sources,
    })
}

fn write_all(dir: &Path, files: &[(String, String)]) -> anyhow::Result<()> {
    for (path, text) in files {
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// What the command prints once the crate is written: where, what, and
/// what to do next.
pub fn report(args: &NewKernelArgs, created: &Created) -> String {
    let dir = created.dir.display();
    let name = &args.name;
    let mut text = format!("Created kernel `{name}` in {dir}:\n");
    let width = created.files.iter().map(String::len).max().unwrap_or(0);
    for file in &created.files {
        let what = match file.as_str() {
            "Cargo.toml" => {
                "the crate, on koas-kernel-api and (for tests) koas-kernel-test".to_owned()
            }
            "src/lib.rs" => format!(
                "the kernel: reads {}, returns {name}_findings (heading_too_long)",
                read_list(&args.reads)
            ),
            "pipeline.toml" => "runs it after the reviewer's Stage 1 and 2 kernels".to_owned(),
            "README.md" => "build, test, install, enable in koas.toml".to_owned(),
            ".gitignore" => "target/, .koas/ (the runs of pipeline.toml)".to_owned(),
            "Cargo.lock" => "the dependency versions koas is tested with".to_owned(),
            _ => "its tests: Markdown fixtures, and the plugin in a koas worker".to_owned(),
        };
        text.push_str(&format!("  {file:<width$}  {what}\n"));
    }
    // `koas kernels install .` finds the build wherever cargo put it (a
    // workspace's target folder, CARGO_TARGET_DIR): no path to guess.
    text.push_str(&format!(
        "koas-kernel-api: {}\n\
         Next:\n  cd {dir}\n  cargo test\n  cargo build --release\n  \
         koas kernels install .\n  \
         koas kernels\n\
         Then, in a project's koas.toml: [kernels] run = [\"{name}\"]",
        created.sources.kernel_api.display()
    ));
    text
}

/// Runs `koas new`.
pub fn execute(_global: &HostOptions, command: NewCommand) -> anyhow::Result<ExitStatus> {
    match command {
        NewCommand::Kernel(args) => {
            let created = create(&args)?;
            outln!("{}", report(&args, &created))?;
            Ok(ExitStatus::Success)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(name: &str, dir: &Path) -> NewKernelArgs {
        NewKernelArgs {
            name: name.to_owned(),
            reads: Vec::new(),
            dir: Some(dir.to_path_buf()),
            kernel_api: None,
        }
    }

    #[test]
    fn names_are_checked() {
        for good in ["heading_length", "a", "x2", "my_check_2"] {
            assert_eq!(check_name(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "Heading",
            "2x",
            "_x",
            "heading-length",
            "héading",
            "a b",
        ] {
            let err = check_name(bad).expect_err(bad);
            assert!(err.contains("lowercase letter"), "{err}");
        }
        assert!(check_name(&"a".repeat(65)).is_err());
        assert_eq!(type_name("heading_length"), "HeadingLengthKernel");
        assert_eq!(type_name("x2__y_"), "X2YKernel");
    }

    #[test]
    fn reads_names_a_fixture_artifact() {
        assert_eq!(check_reads("protected_spans"), Ok(()));
        let err = check_reads("protected_span").expect_err("typo");
        assert!(err.contains("did you mean `protected_spans`?"), "{err}");
        assert!(err.contains("one of: doc, doc_raw"), "{err}");
    }

    #[test]
    fn every_placeholder_is_filled() {
        let sources = locate_sources(None).expect("built from a checkout");
        for reads in READABLE {
            for (path, text) in render("heading_length", &[reads.to_string()], &sources) {
                assert!(!path.contains("{{"), "{path}");
                // Only the format strings of the generated code hold braces
                // in pairs; no template key is left.
                for (n, line) in text.lines().enumerate() {
                    assert!(
                        !line.contains("{{") || line.contains("format!"),
                        "{reads}: {path}:{}: {line}",
                        n + 1
                    );
                }
            }
        }
    }

    #[test]
    fn reads_declares_the_input_and_parses_it() {
        let sources = locate_sources(None).expect("built from a checkout");
        let files = render("table_style", &["protected_spans".to_owned()], &sources);
        let lib = &files
            .iter()
            .find(|(p, _)| p == "src/lib.rs")
            .expect("lib")
            .1;
        assert!(lib.contains(".input(\"section_index\")\n            .input(\"protected_spans\")"));
        assert!(lib.contains("inputs.parse(\"protected_spans\")?"));
        assert!(lib.contains("pub struct TableStyleKernel;"));
        let test = files
            .iter()
            .find(|(p, _)| p == "tests/table_style.rs")
            .expect("test");
        assert!(test
            .1
            .contains("use koas_kernel_table_style::{TableStyleKernel, FINDINGS, TOO_LONG};"));
        let toml = &files
            .iter()
            .find(|(p, _)| p == "Cargo.toml")
            .expect("toml")
            .1;
        assert!(toml.contains("name = \"koas-kernel-table-style\""));
        assert!(toml.contains("name = \"koas_kernel_table_style\""));
        let parsed: toml::Table = toml.parse().expect("Cargo.toml is TOML");
        assert_eq!(
            parsed["dependencies"]["koas-kernel-api"]["path"].as_str(),
            Some(sources.kernel_api.display().to_string().as_str())
        );
        let doc = render("raw_check", &["doc_raw".to_owned()], &sources);
        let lib = &doc.iter().find(|(p, _)| p == "src/lib.rs").expect("lib").1;
        assert!(lib.contains("inputs.source_text(\"doc_raw\")?"));
        // Several: each declared once, and the text read outside the
        // protected blocks.
        let both = render(
            "prose_check",
            &[
                "doc".to_owned(),
                "protected_spans".to_owned(),
                "doc".to_owned(),
            ],
            &sources,
        );
        let lib = &both.iter().find(|(p, _)| p == "src/lib.rs").expect("lib").1;
        assert_eq!(lib.matches(".input(\"doc\")").count(), 1, "{lib}");
        assert!(lib.contains(".input(\"protected_spans\")"), "{lib}");
        assert!(lib.contains("let doc_lines: Vec<&str>"), "{lib}");
        assert!(lib.contains("!protected.protects(*line)"), "{lib}");
        assert!(lib.contains("struct Protected {"), "{lib}");
    }

    #[test]
    fn a_folder_that_is_not_empty_is_refused_and_an_empty_one_is_used() {
        let tmp = tempfile::tempdir().expect("tmp");
        let full = tmp.path().join("full");
        std::fs::create_dir(&full).expect("dir");
        std::fs::write(full.join("notes.txt"), "mine").expect("file");
        let err = create(&args("heading_length", &full)).expect_err("not empty");
        assert!(err.to_string().contains("exists and is not empty"), "{err}");
        assert_eq!(
            std::fs::read_to_string(full.join("notes.txt")).expect("untouched"),
            "mine"
        );
        let empty = tmp.path().join("empty");
        std::fs::create_dir(&empty).expect("dir");
        let created = create(&args("heading_length", &empty)).expect("written");
        for file in &created.files {
            assert!(empty.join(file).is_file(), "{file}");
        }
        assert!(created
            .files
            .contains(&"tests/heading_length.rs".to_owned()));
        let err = create(&args("Bad", &tmp.path().join("bad"))).expect_err("bad name");
        assert!(err.to_string().contains("kernel name \"Bad\""), "{err}");
        assert!(!tmp.path().join("bad").exists());
        let err = create(&NewKernelArgs {
            kernel_api: Some(tmp.path().to_path_buf()),
            ..args("ok", &tmp.path().join("ok"))
        })
        .expect_err("no kernel-api there");
        assert!(err.to_string().contains("--kernel-api"), "{err}");
        assert!(!tmp.path().join("ok").exists());
    }

    #[test]
    fn readable_is_what_the_fixtures_give() {
        let given = koas_kernel_test::Document::markdown("# A\n")
            .artifacts()
            .expect("fixtures");
        let mut readable: Vec<&str> = READABLE.to_vec();
        readable.sort_unstable();
        assert_eq!(
            given.keys().map(String::as_str).collect::<Vec<_>>(),
            readable
        );
    }
}
