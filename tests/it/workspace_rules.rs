//! The shape of the workspace, checked (see `docs/architecture.md`):
//! crates named after their folders, `kernels/` holding only plugins, and
//! the dependency rules that keep the runtime generic and the plugins free
//! of the runtime.

use koas_test_support::repo_root;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A workspace member as its manifest declares it.
#[derive(Debug)]
struct Member {
    folder: PathBuf,
    name: String,
    lib_name: Option<String>,
    crate_types: Vec<String>,
    /// Normal dependencies on workspace crates.
    deps: BTreeSet<String>,
    /// Dev-dependencies on workspace crates.
    dev_deps: BTreeSet<String>,
}

fn manifest(path: &Path) -> toml::Table {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.parse()
        .unwrap_or_else(|e| panic!("{} is not TOML: {e}", path.display()))
}

fn koas_deps(table: Option<&toml::Value>) -> BTreeSet<String> {
    table
        .and_then(toml::Value::as_table)
        .map(|t| {
            t.keys()
                .filter(|k| k.starts_with("koas"))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

fn members() -> Vec<Member> {
    let root = repo_root();
    let workspace = manifest(&root.join("Cargo.toml"));
    let patterns: Vec<String> = workspace["workspace"]["members"]
        .as_array()
        .expect("workspace.members")
        .iter()
        .filter_map(|m| m.as_str().map(str::to_owned))
        .collect();
    let mut folders = Vec::new();
    for pattern in patterns {
        match pattern.strip_suffix("/*") {
            Some(parent) => {
                let mut found: Vec<PathBuf> = std::fs::read_dir(root.join(parent))
                    .expect("member folder")
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| p.join("Cargo.toml").is_file())
                    .collect();
                found.sort();
                folders.extend(found);
            }
            None => folders.push(root.join(pattern)),
        }
    }
    folders
        .into_iter()
        .map(|folder| {
            let m = manifest(&folder.join("Cargo.toml"));
            let lib = m.get("lib").and_then(toml::Value::as_table);
            Member {
                name: m["package"]["name"].as_str().expect("name").to_owned(),
                lib_name: lib
                    .and_then(|l| l.get("name"))
                    .and_then(toml::Value::as_str)
                    .map(str::to_owned),
                crate_types: lib
                    .and_then(|l| l.get("crate-type"))
                    .and_then(toml::Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|t| t.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default(),
                deps: koas_deps(m.get("dependencies")),
                dev_deps: koas_deps(m.get("dev-dependencies")),
                folder,
            }
        })
        .collect()
}

fn folder_name(m: &Member) -> String {
    m.folder
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn in_kernels(m: &Member) -> bool {
    m.folder
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|p| p == "kernels")
}

#[test]
fn crates_are_named_after_their_folders() {
    let mut wrong = Vec::new();
    for m in members() {
        let folder = folder_name(&m);
        let expected = if in_kernels(&m) {
            format!("koas-kernel-{}", folder.replace('_', "-"))
        } else if folder == "koas" {
            "koas".to_owned()
        } else {
            format!("koas-{folder}")
        };
        if m.name != expected {
            wrong.push(format!(
                "{} is `{}`, expected `{expected}`",
                m.folder.display(),
                m.name
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_member_of_the_workspace_is_in_the_architecture_document() {
    // A crate or plugin the map leaves out is a part of the house a
    // newcomer cannot find: crates by package name, plugins by kernel name.
    let doc = std::fs::read_to_string(repo_root().join("docs/architecture.md"))
        .expect("docs/architecture.md");
    let missing: Vec<String> = members()
        .iter()
        .filter(|m| m.name != "koas-tests")
        .map(|m| {
            if in_kernels(m) {
                format!("`{}`", folder_name(m))
            } else {
                m.name.clone()
            }
        })
        .filter(|name| !doc.contains(name.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/architecture.md does not mention: {missing:?}"
    );
}

#[test]
fn kernels_holds_only_plugins() {
    let mut wrong = Vec::new();
    for m in members().iter().filter(|m| in_kernels(m)) {
        let expected_lib = format!("koas_kernel_{}", folder_name(m));
        if !m.crate_types.iter().any(|t| t == "cdylib") {
            wrong.push(format!("{} is not a cdylib plugin", m.folder.display()));
        }
        if m.lib_name.as_deref() != Some(expected_lib.as_str()) {
            wrong.push(format!(
                "{}: library `{:?}`, discovery loads `lib{expected_lib}.so`",
                m.folder.display(),
                m.lib_name
            ));
        }
        for dep in &m.deps {
            if !matches!(
                dep.as_str(),
                "koas-kernel-api"
                    | "koas-review-schema"
                    | "koas-md"
                    | "koas-md-scan"
                    | "koas-edit"
                    | "koas-report"
                    | "koas-review-llm"
                    | "koas-refine"
            ) {
                wrong.push(format!(
                    "plugin {} links `{dep}`: plugins are glue over the reviewer libraries",
                    m.name
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Every crate `name` depends on, directly or not (normal dependencies).
fn closure(graph: &BTreeMap<String, BTreeSet<String>>, name: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![name.to_owned()];
    while let Some(n) = stack.pop() {
        for d in graph.get(&n).into_iter().flatten() {
            if seen.insert(d.clone()) {
                stack.push(d.clone());
            }
        }
    }
    seen
}

#[test]
fn the_runtime_knows_nothing_of_the_reviewer() {
    let members = members();
    let graph: BTreeMap<String, BTreeSet<String>> = members
        .iter()
        .map(|m| (m.name.clone(), m.deps.clone()))
        .collect();
    let reviewer = |d: &String| {
        d.starts_with("koas-md")
            || d.starts_with("koas-review")
            || d == "koas-edit"
            || d == "koas-report"
            || d == "koas-project"
    };
    let runtime = closure(&graph, "koas-orchestrator");
    assert_eq!(
        runtime,
        ["koas-extract", "koas-kernel-api", "koas-llm"]
            .map(str::to_owned)
            .into_iter()
            .collect(),
        "the runtime's dependencies"
    );
    let orchestrator = members
        .iter()
        .find(|m| m.name == "koas-orchestrator")
        .expect("runtime member");
    assert!(
        !orchestrator.dev_deps.iter().any(reviewer),
        "the runtime's tests use reviewer crates: {:?}",
        orchestrator.dev_deps
    );
    // Reviewer libraries, which plugins link, never pull in the runtime.
    for lib in [
        "koas-review-schema",
        "koas-md",
        "koas-md-scan",
        "koas-project",
        "koas-edit",
        "koas-report",
    ] {
        let deps = closure(&graph, lib);
        assert!(
            !deps.contains("koas-orchestrator") && !deps.contains("koas-llm"),
            "{lib} depends on {deps:?}"
        );
    }
    assert!(
        closure(&graph, "koas-kernel-api").is_empty(),
        "the kernel API must not depend on other koas crates"
    );
    // Only the binary names the reviewer's command family, and the MCP
    // and language servers that serve it to agents and editors (the
    // binary dispatches to them).
    let users: BTreeSet<&str> = members
        .iter()
        .filter(|m| m.deps.contains("koas-review"))
        .map(|m| m.name.as_str())
        .collect();
    assert_eq!(users, BTreeSet::from(["koas", "koas-lsp", "koas-mcp"]));
    let mcp = members
        .iter()
        .find(|m| m.name == "koas-mcp")
        .expect("the MCP server member");
    assert!(
        !mcp.deps.iter().any(|d| d.starts_with("koas-kernel")),
        "the MCP server loads no plugin itself: {:?}",
        mcp.deps
    );
    let lsp = members
        .iter()
        .find(|m| m.name == "koas-lsp")
        .expect("the language server member");
    assert!(
        !lsp.deps.iter().any(|d| d.starts_with("koas-kernel")),
        "the language server loads no plugin itself: {:?}",
        lsp.deps
    );
}

/// Words of the reviewer's domain, lowercase. The runtime's sources must
/// not use them, in code, comments, rustdoc, tests or fixtures alike.
const REVIEWER_WORDS: &[&str] = &[
    "edit op", "edit-op", "edit_op", "editop", "ledger", "chunk", "review", "markdown",
];

/// Names that contain such a word but say nothing of the reviewer:
/// OpenAI's wire name for one streamed event, and `chunk_timeout`, the
/// specification's `[llm]` key for the per-call timeout (an alias of
/// `timeout_secs` that configurations written from it rely on).
const FOREIGN_NAMES: &[&str] = &["chat.completion.chunk", "chunk_timeout"];

/// The reviewer words in `text`, with their line numbers.
///
/// A hit is a word not preceded by an ASCII letter: "preview" and
/// "overview" are other words, while `md_chunk`, `BEGIN_EDIT_OPS`,
/// "reviews" and "chunked" are caught (an underscore, a digit or
/// punctuation before the word, and any ending after it, still make it
/// the word).
fn reviewer_words(text: &str) -> Vec<(usize, &'static str)> {
    let mut hits = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let mut lower = line.to_lowercase();
        for name in FOREIGN_NAMES {
            lower = lower.replace(name, "");
        }
        for word in REVIEWER_WORDS {
            for (at, _) in lower.match_indices(word) {
                let before = lower[..at].chars().next_back();
                if !before.is_some_and(|c| c.is_ascii_alphabetic()) {
                    hits.push((n + 1, *word));
                }
            }
        }
    }
    hits
}

/// The `*.rs`, `*.toml` and `*.md` files under `dir`, build output aside.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                sources(&path, out);
            }
        } else if ["rs", "toml", "md"]
            .iter()
            .any(|ext| path.extension().is_some_and(|e| e == *ext))
        {
            out.push(path);
        }
    }
}

#[test]
fn the_runtime_s_sources_use_no_reviewer_word() {
    assert!(reviewer_words("a preview, an overview").is_empty());
    assert_eq!(
        reviewer_words("x\nBEGIN_EDIT_OPS md_chunk Reviews"),
        [(2, "edit_op"), (2, "chunk"), (2, "review")]
    );
    // This crate's own folder, not `repo_root()`: a build directory shared
    // by several checkouts may hand that one another checkout's path.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let root = root.canonicalize().unwrap_or(root);
    let mut files = Vec::new();
    for dir in ["orchestrator", "kernel-api", "crates/llm", "crates/extract"] {
        sources(&root.join(dir), &mut files);
    }
    assert!(files.len() > 50, "{} files", files.len());
    let mut found = Vec::new();
    for file in files {
        let relative = file.strip_prefix(&root).unwrap_or(&file);
        // The file's own name counts too (a `review_sample.md` fixture).
        let name = relative.to_string_lossy();
        for (_, word) in reviewer_words(&name) {
            found.push(format!("{name}: {word} (in its name)"));
        }
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{name}: {e}"));
        for (line, word) in reviewer_words(&text) {
            found.push(format!("{name}:{line}: {word}"));
        }
    }
    assert!(
        found.is_empty(),
        "the runtime knows nothing of the reviewer; reword these generically:\n{}",
        found.join("\n")
    );
}

/// The Rust files under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The places in a runtime source `text` that hold a command: a command
/// line's `execute`, or a clap command type (shared flags, `Args`, are the
/// runtime's to give its hosts).
fn runtime_commands(text: &str) -> Vec<String> {
    let command = regex::Regex::new(
        r"fn execute\(|derive\([^)]*\b(Subcommand|Parser)\b|koas_orchestrator::cli\b",
    )
    .expect("regex");
    command
        .find_iter(text)
        .map(|m| m.as_str().to_owned())
        .collect()
}

#[test]
fn the_runtime_holds_no_command_line() {
    // The runtime's own commands are the binary's front end over it, as
    // the reviewer's commands are the review API's: the runtime is a
    // library every host (the binary too) uses through `embed`.
    let root = repo_root();
    let mut files = Vec::new();
    for dir in [
        "orchestrator/src",
        "kernel-api/src",
        "crates/llm/src",
        "crates/extract/src",
    ] {
        rust_files(&root.join(dir), &mut files);
    }
    let mut offenders = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read");
        for found in runtime_commands(&text) {
            offenders.push(format!("{}: {found}", f.display()));
        }
    }
    assert!(
        offenders.is_empty(),
        "commands in the runtime: {offenders:#?}"
    );
    // A planted command is found; a shared flags type is not one.
    assert_eq!(
        runtime_commands(
            "#[derive(Debug, Subcommand)]\npub enum CacheCommand {}\npub fn execute(global: &HostOptions) {}\n#[derive(Debug, Clone, Args)]\npub struct LlmFlags {}"
        ),
        ["derive(Debug, Subcommand", "fn execute("]
    );
}

/// A crate's modules, each named by its path (`worker::pool`), with the
/// modules it names through `crate::` paths. A module naming one of its
/// ancestors (`worker::pool` using `crate::worker::X`) is Rust's way of
/// reaching what the parent declares, not an arrow between rooms: left out.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let module_of = |f: &Path| -> String {
        let rel = f.strip_prefix(src).unwrap_or(f).with_extension("");
        let mut parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts
            .last()
            .is_some_and(|p| p == "mod" || p == "lib" || p == "main")
        {
            parts.pop();
        }
        parts.join("::")
    };
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(f)).collect();
    // Imports (`use crate::a::b::X;`, `use crate::{a::X, b};`), as the
    // crate's structure is read: a doc link or a path in a body is no
    // arrow between modules.
    let import = regex::Regex::new(r"(?m)^\s*(?:pub(?:\([a-z]+\))?\s+)?use\s+crate::([^;]*);")
        .expect("regex");
    let path = regex::Regex::new(r"[a-z_][a-z0-9_]*(?:::[a-z_][a-z0-9_]*)*").expect("regex");
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let from = module_of(f);
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        let mut to = BTreeSet::new();
        // A test module's imports are the tests', not the module's.
        let text = text.split("#[cfg(test)]").next().unwrap_or_default();
        let imported: Vec<String> = import
            .captures_iter(text)
            .flat_map(|cap| {
                let body = cap[1].to_owned();
                // `{a::X, b::{c, d}}`: each path's leading segments; the
                // prefix before a brace applies to what is inside it.
                let (prefix, rest) = match body.find('{') {
                    Some(at) => (
                        body[..at].trim_end_matches("::").to_owned(),
                        body[at..].to_owned(),
                    ),
                    None => (String::new(), body.clone()),
                };
                path.find_iter(&rest)
                    .map(|m| {
                        if prefix.is_empty() {
                            m.as_str().to_owned()
                        } else {
                            format!("{prefix}::{}", m.as_str())
                        }
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        for found in &imported {
            let segments: Vec<&str> = found.split("::").collect();
            // The longest prefix that is a module of the crate.
            let target = (1..=segments.len())
                .rev()
                .map(|n| segments[..n].join("::"))
                .find(|m| modules.contains(m));
            if let Some(target) = target {
                let ancestor = from == target || from.starts_with(&format!("{target}::"));
                if !ancestor {
                    to.insert(target);
                }
            }
        }
        graph.entry(from).or_default().extend(to);
    }
    graph
}

/// The circles of a graph: each as the modules on it, smallest first,
/// found once.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> BTreeSet<Vec<String>> {
    let mut found = BTreeSet::new();
    for start in graph.keys() {
        // Paths from `start`; a path that comes back to it is a circle.
        let mut stack = vec![vec![start.clone()]];
        while let Some(path) = stack.pop() {
            let last = path.last().expect("a path has a module");
            for next in graph.get(last).into_iter().flatten() {
                if next == start {
                    let mut circle = path.clone();
                    // The same circle from each of its modules: keep it
                    // starting at its least name.
                    let at = circle
                        .iter()
                        .enumerate()
                        .min_by_key(|(_, m)| m.as_str())
                        .map_or(0, |(i, _)| i);
                    circle.rotate_left(at);
                    found.insert(circle);
                } else if !path.contains(next) && next > start {
                    // Only modules after `start`: each circle is walked
                    // from its least module, so the search stays small.
                    let mut longer = path.clone();
                    longer.push(next.clone());
                    stack.push(longer);
                }
            }
        }
    }
    found
}

#[test]
fn the_runtime_s_modules_import_one_another_without_a_circle() {
    // A circle makes three modules one room: none can be read, tested or
    // moved alone (the last one: a library's description defined by
    // discovery, produced by the worker pool, stored by the describe
    // cache; it now has its own module).
    for krate in [
        "orchestrator/src",
        "kernel-api/src",
        "crates/llm/src",
        "crates/extract/src",
    ] {
        let graph = module_graph(&repo_root().join(krate));
        assert!(graph.len() > 3, "{krate}: modules read");
        let found = circles(&graph);
        assert!(
            found.is_empty(),
            "{krate}: circles among modules: {found:?}"
        );
    }
}

#[test]
fn the_circle_check_finds_a_planted_circle() {
    // The describe cache's old circle, planted in a copy of the runtime's
    // module layout.
    let dir = tempfile::tempdir().expect("tmp");
    let src = dir.path();
    std::fs::create_dir_all(src.join("worker")).expect("mkdir");
    for (file, text) in [
        (
            "lib.rs",
            "pub mod describe_cache; pub mod discovery; pub mod worker;",
        ),
        ("describe_cache.rs", "use crate::discovery::LibraryKernels;"),
        (
            "discovery.rs",
            "use crate::describe_cache::DescribeCache;\nuse crate::worker::pool::WorkerPool;",
        ),
        ("worker/mod.rs", "pub mod pool;"),
        (
            "worker/pool.rs",
            "use crate::discovery::LibraryKernels;\nuse crate::worker::Shared;",
        ),
    ] {
        std::fs::write(src.join(file), text).expect("write");
    }
    let found = circles(&module_graph(src));
    let expected: BTreeSet<Vec<String>> = [
        vec!["describe_cache", "discovery"],
        vec!["discovery", "worker::pool"],
    ]
    .into_iter()
    .map(|c| c.into_iter().map(str::to_owned).collect())
    .collect();
    assert_eq!(found, expected);
}

/// The crate diagram of a Mermaid block: each node's crate name (its
/// label's first word: `koas-md`, or `kernels/*` for the plugins), and the
/// arrows (`a --> b & c`, `a --> b --> c`) between nodes.
struct Diagram {
    crate_of: BTreeMap<String, String>,
    arrows: BTreeSet<(String, String)>,
}

fn diagram(mermaid: &str) -> Diagram {
    let node = regex::Regex::new(r#"(\w+)\["([^"<]+?)(?:<br/>|")"#).expect("regex");
    let crate_of = node
        .captures_iter(mermaid)
        .map(|c| (c[1].to_owned(), c[2].trim().to_owned()))
        .collect();
    let mut arrows = BTreeSet::new();
    for line in mermaid.lines().filter(|l| l.contains("-->")) {
        let parts: Vec<&str> = line.split("-->").map(str::trim).collect();
        for pair in parts.windows(2) {
            for from in pair[0].split('&').map(str::trim) {
                for to in pair[1].split('&').map(str::trim) {
                    arrows.insert((from.to_owned(), to.to_owned()));
                }
            }
        }
    }
    Diagram { crate_of, arrows }
}

/// What a diagram says wrong of `deps` (crate → its normal dependencies
/// on workspace crates): an arrow that is no dependency, and a dependency
/// that no arrow or path of arrows shows (the diagram leaves out an arrow
/// a path already draws, as `lsp → reviewer → workspace`).
fn diagram_errors(d: &Diagram, deps: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let nodes_of = |krate: &str| -> Option<String> {
        d.crate_of.iter().find_map(|(node, label)| {
            let plugin = label == "kernels/*"
                && krate.starts_with("koas-kernel-")
                && !["koas-kernel-api", "koas-kernel-test"].contains(&krate);
            (label == krate || plugin).then(|| node.clone())
        })
    };
    let mut real: BTreeSet<(String, String)> = BTreeSet::new();
    for (krate, list) in deps {
        let Some(from) = nodes_of(krate) else {
            continue;
        };
        for dep in list {
            if let Some(to) = nodes_of(dep).filter(|to| *to != from) {
                real.insert((from.clone(), to));
            }
        }
    }
    let mut errors: Vec<String> = d
        .arrows
        .difference(&real)
        .map(|(a, b)| format!("the arrow {a} --> {b} is no dependency"))
        .collect();
    let mut graph: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (a, b) in &d.arrows {
        graph.entry(a.as_str()).or_default().insert(b.as_str());
    }
    for (a, b) in &real {
        let mut seen = BTreeSet::new();
        let mut stack = vec![a.as_str()];
        while let Some(n) = stack.pop() {
            for next in graph.get(n).into_iter().flatten() {
                if seen.insert(*next) {
                    stack.push(next);
                }
            }
        }
        if !seen.contains(b.as_str()) {
            errors.push(format!(
                "{a} depends on {b}, and no arrow or path of arrows shows it"
            ));
        }
    }
    errors
}

fn architecture_mermaid() -> String {
    let doc = std::fs::read_to_string(repo_root().join("docs/architecture.md")).expect("doc");
    let start = doc.find("```mermaid").expect("the crate diagram");
    let rest = &doc[start + 10..];
    rest[..rest.find("```").expect("its end")].to_owned()
}

#[test]
fn the_architecture_diagram_draws_the_crates_dependencies() {
    let deps: BTreeMap<String, BTreeSet<String>> =
        members().into_iter().map(|m| (m.name, m.deps)).collect();
    let d = diagram(&architecture_mermaid());
    let errors = diagram_errors(&d, &deps);
    assert!(errors.is_empty(), "docs/architecture.md: {errors:#?}");
    // Every crate of the product is in it (the tests' crates aside).
    for krate in deps
        .keys()
        .filter(|k| !["koas-tests", "koas-test-support"].contains(&k.as_str()))
    {
        let drawn = d.crate_of.values().any(|l| l == krate)
            || (krate.starts_with("koas-kernel-") && d.crate_of.values().any(|l| l == "kernels/*"));
        assert!(drawn, "{krate} is not in the crate diagram");
    }
}

#[test]
fn the_diagram_check_finds_a_false_arrow_and_a_missing_one() {
    let deps: BTreeMap<String, BTreeSet<String>> = [
        ("koas-edit", vec!["koas-md", "koas-review-schema"]),
        ("koas-md", vec!["koas-review-schema"]),
        ("koas-review-schema", vec![]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.into_iter().map(str::to_owned).collect()))
    .collect();
    let planted = r#"
    edit["koas-edit<br/><small>x</small>"]
    md["koas-md"]
    schema["koas-review-schema"]
    edit --> schema
    schema --> md
"#;
    let errors = diagram_errors(&diagram(planted), &deps);
    assert_eq!(
        errors,
        [
            "the arrow schema --> md is no dependency",
            "md depends on schema, and no arrow or path of arrows shows it",
        ],
        "edit → md is drawn through schema → md, itself false"
    );
}

/// The runtime's modules a front end (`koas mcp`, `koas lsp`) may name:
/// `embed`, the API hosts use, and the confined file access it needs to
/// stay inside a root.
const FRONT_END_RUNTIME: [&str; 3] = ["embed", "fsio", "guarded_read"];

/// The places in `text` that name a runtime module other than those.
fn runtime_reaches(text: &str) -> Vec<String> {
    let path = regex::Regex::new(r"koas_orchestrator::([a-z_]+)").expect("regex");
    path.captures_iter(text)
        .map(|c| c[1].to_owned())
        .filter(|m| !FRONT_END_RUNTIME.contains(&m.as_str()))
        .collect()
}

/// The places in `text` that name the command line's modules, the
/// reviewer commands' argument types or their answers (`Reply`), which a
/// front end of the review API must not use (its own `McpArgs` are its
/// command line's).
fn command_line_reaches(text: &str) -> Vec<String> {
    let names = regex::Regex::new(
        r"koas_review::commands|\b(Review|Workspace|Refine|Check|Revert|Report|Grep|Show|Status|Dismiss|Set)Args\b|\bReply\b",
    )
        .expect("regex");
    names
        .find_iter(text)
        .map(|m| m.as_str().to_owned())
        .collect()
}

#[test]
fn front_ends_reach_the_runtime_through_embed() {
    let root = repo_root();
    let mut offenders = Vec::new();
    for front_end in ["crates/mcp", "crates/lsp"] {
        let mut files = Vec::new();
        rust_files(&root.join(front_end), &mut files);
        for f in files {
            let text = std::fs::read_to_string(&f).expect("read");
            for m in runtime_reaches(&text) {
                offenders.push(format!("{}: koas_orchestrator::{m}", f.display()));
            }
        }
    }
    assert!(offenders.is_empty(), "{offenders:#?}");
    // The review is driven through its API, not through the command
    // line's arguments and answers.
    for front_end in ["crates/mcp", "crates/lsp"] {
        let mut files = Vec::new();
        rust_files(&root.join(front_end), &mut files);
        for f in files {
            let text = std::fs::read_to_string(&f).expect("read");
            for name in command_line_reaches(&text) {
                offenders.push(format!("{}: {name}; use koas_review::api", f.display()));
            }
        }
    }
    assert!(offenders.is_empty(), "{offenders:#?}");
    // A planted use of the command line's types is found.
    assert_eq!(
        command_line_reaches(
            "use koas_review::commands::review;\nlet a = ReviewArgs::new(WorkspaceArgs::for_doc(p));\nlet r: Reply = x;\nlet reply = 1;"
        ),
        ["koas_review::commands", "ReviewArgs", "WorkspaceArgs", "Reply"]
    );
    // A planted reach into the runtime's insides is found.
    assert_eq!(
        runtime_reaches("use koas_orchestrator::describe_cache::cache_dir;\nuse koas_orchestrator::embed::Progress;"),
        ["describe_cache"]
    );
}

/// `koas check DOC | head -1`: the reader closes the pipe after one line;
/// koas must not panic or print an error, and keeps its exit code.
#[cfg(unix)]
#[test]
fn regression_check_into_a_closed_pipe_ends_quietly() {
    let dir = tempfile::tempdir().expect("tmp");
    let doc = dir.path().join("leftovers.md");
    let mut text = String::new();
    for i in 0..4000 {
        text.push_str(&format!(
            "As an AI language model, I hope this helps with item {i}.\n\n"
        ));
    }
    std::fs::write(&doc, text).expect("write");
    let script = format!(
        "'{}' check '{}' | head -1 > /dev/null; echo \"${{PIPESTATUS[0]}}\"",
        koas_test_support::koas_bin().display(),
        doc.display()
    );
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(script)
        .env("NO_COLOR", "1")
        .output()
        .expect("bash runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.contains("error"), "{stderr}");
    assert!(!stderr.contains("Broken pipe"), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "1",
        "the findings' exit code is kept"
    );
}
