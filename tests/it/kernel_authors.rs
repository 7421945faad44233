//! What a team writing kernels outside the repository meets: config errors
//! naming the flag or variable that set the value, "did you mean" for
//! input names, plugins ignored because of their file name, and `koas
//! replay` finding the plugins of the run it replays.

use crate::common::{koas, run, stderr, Project};
use koas_test_support::{test_plugin, test_plugin_folder};

const DOC: &str = "# Title\n\nSome words here.\n";

#[test]
fn a_refused_config_value_names_the_flag_or_variable_that_set_it() {
    let p = Project::new(DOC, &["source_len", "threshold"], "");
    let out = p.run(&["--set", "threshold.treshold=3"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--set threshold.treshold=3: [config.threshold] `treshold`: unknown key"),
        "{err}"
    );
    assert!(
        !err.contains("pipeline.toml"),
        "the file did not set it: {err}"
    );

    let mut c = koas();
    c.arg("run")
        .arg(p.pipeline())
        .arg("--kernel-path")
        .arg(test_plugin("testkit"))
        .env("KOAS_CONFIG__THRESHOLD__THRESHOLD", "high")
        .current_dir(p.dir.path());
    let out = run(&mut c);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "environment variable KOAS_CONFIG__THRESHOLD__THRESHOLD: [config.threshold] `threshold`: expected a number"
        ),
        "{err}"
    );

    // A table for a kernel the pipeline does not run, from a flag.
    let out = p.run(&["--set", "treshold.threshold=3"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--set treshold.threshold=3: [config.treshold] configures a kernel that is not in `kernels`"),
        "{err}"
    );
}

#[test]
fn a_misspelt_input_name_gets_a_suggestion() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("doc.md"), DOC).expect("doc");
    std::fs::write(
        dir.path().join("p.toml"),
        "name = \"t\"\nkernels = [\"source_len\"]\nworkspace = \"ws\"\n",
    )
    .expect("pipeline");
    let out = run(koas()
        .args(["run", "p.toml", "--input", "dco=doc.md", "--kernel-path"])
        .arg(test_plugin("testkit"))
        .current_dir(dir.path()));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "[inputs] entry `dco` is read by no kernel of the pipeline (did you mean `doc`?)"
        ),
        "{err}"
    );
    assert!(
        err.contains("artifact `doc` is required by `source_len`")
            && err.contains("(did you mean `dco`?)"),
        "{err}"
    );
}

#[test]
fn a_plugin_ignored_because_of_its_name_is_reported() {
    let folder = test_plugin_folder(&["testkit"]);
    let lib = test_plugin("testkit");
    let renamed = folder.path().join(format!(
        "koas_kernel_renamed{}",
        std::env::consts::DLL_SUFFIX
    ));
    let copy = folder.path().join(format!(
        "{}koas_kernel_copy{}.debug",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    std::fs::copy(&lib, &renamed).expect("copy");
    std::fs::copy(&lib, &copy).expect("copy");
    std::fs::write(folder.path().join("notes.txt"), "not a library").expect("txt");

    let out = run(koas()
        .arg("kernels")
        .arg("--kernel-path")
        .arg(folder.path()));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("2 file(s) not loaded because of their name"),
        "{err}"
    );
    for f in [&renamed, &copy] {
        assert!(err.contains(&format!("{}: ignored:", f.display())), "{err}");
    }
    assert!(!err.contains("notes.txt"), "{err}");
    let json = run(koas()
        .args(["kernels", "--json", "--kernel-path"])
        .arg(folder.path()));
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(v["ignored"].as_array().map(Vec::len), Some(2), "{v}");

    // A run says so only with -v.
    let p = Project::new(DOC, &["source_len"], "");
    let quiet = run(koas()
        .arg("run")
        .arg(p.pipeline())
        .arg("--kernel-path")
        .arg(folder.path())
        .current_dir(p.dir.path()));
    assert_eq!(quiet.status.code(), Some(0), "{}", stderr(&quiet));
    assert!(!stderr(&quiet).contains("ignored"), "{}", stderr(&quiet));
    let verbose = run(koas()
        .arg("-v")
        .arg("run")
        .arg(p.pipeline())
        .arg("--kernel-path")
        .arg(folder.path())
        .current_dir(p.dir.path()));
    let err = stderr(&verbose);
    assert!(
        err.contains(&format!("note: {}: ignored:", renamed.display())),
        "{err}"
    );
}

#[test]
fn replay_loads_the_plugins_of_the_run_from_their_folder() {
    let folder = test_plugin_folder(&["testkit"]);
    let p = Project::new(DOC, &["source_len", "threshold"], "");
    let first = run(koas()
        .arg("run")
        .arg(p.pipeline())
        .arg("--kernel-path")
        .arg(folder.path())
        .current_dir(p.dir.path()));
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let record = p.record();
    let plugin = &record["plan"]["plugins"]["source_len"];
    assert!(
        plugin
            .as_str()
            .is_some_and(|s| std::path::Path::new(s).is_absolute()),
        "{record}"
    );

    // No --kernel-path, no KOAS_KERNEL_PATH, another current folder.
    let other = tempfile::tempdir().expect("tempdir");
    let replay = run(koas().arg("replay").arg(p.ws()).current_dir(other.path()));
    let err = stderr(&replay);
    assert_eq!(replay.status.code(), Some(0), "{err}");
    assert!(err.contains("replay: PASS"), "{err}");

    // A flag still overrides: an empty folder first changes nothing, but a
    // folder with another build of the plugin would win.
    let empty = tempfile::tempdir().expect("tempdir");
    let flagged = run(koas()
        .arg("replay")
        .arg(p.ws())
        .arg("--kernel-path")
        .arg(empty.path()));
    assert_eq!(flagged.status.code(), Some(0), "{}", stderr(&flagged));
}

/// The C example of `docs/abi.md`, compiled with the system's C compiler
/// against `kernel-api/include/koas_kernel.h`, is a working kernel: the
/// language-neutral description of the ABI is enough to write one.
#[test]
fn the_c_kernel_example_builds_and_runs() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("repository root")
        .to_path_buf();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    if std::process::Command::new(&cc)
        .arg("--version")
        .output()
        .is_err()
    {
        println!("SKIPPED: no C compiler (`{cc}`) on this machine");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let lib = dir.path().join(format!(
        "{}koas_kernel_c_line_count{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    let built = std::process::Command::new(&cc)
        .args(["-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-I"])
        .arg(root.join("kernel-api/include"))
        .arg("-o")
        .arg(&lib)
        .arg(root.join("examples/c-kernel/line_count.c"))
        .output()
        .expect("the C compiler runs");
    assert!(
        built.status.success(),
        "the C example compiles: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    std::fs::write(dir.path().join("doc.md"), "# T\n\nline two\nthree\n").expect("doc");
    std::fs::write(
        dir.path().join("p.toml"),
        "name = \"c\"\nkernels = [\"c_line_count\"]\nworkspace = \"ws\"\n",
    )
    .expect("pipeline");
    // In a worker process (the default) and in the koas process.
    for extra in [None, Some("--in-process")] {
        let mut c = koas();
        c.args([
            "-v",
            "run",
            "p.toml",
            "--input",
            "doc=doc.md",
            "--kernel-path",
        ])
        .arg(dir.path())
        .current_dir(dir.path());
        if let Some(flag) = extra {
            c.args([flag, "--no-cache"]);
        }
        let out = run(&mut c);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert!(err.contains("c_line_count: info: counted 4 lines"), "{err}");
        let count = std::fs::read_to_string(dir.path().join("ws/out/line_count.json"))
            .expect("the declared output file");
        assert_eq!(count.trim(), "4");
    }
}

/// The descriptions of plugin libraries are remembered across runs (a
/// fully cached run then starts no worker), and a library replaced by
/// another build is described again, whatever its modification time.
#[test]
fn a_replaced_plugin_is_described_again_despite_the_describe_cache() {
    let folder = test_plugin_folder(&["testkit"]);
    let cache = tempfile::tempdir().expect("tempdir");
    let lib = test_plugin("testkit");
    let installed = folder.path().join(lib.file_name().expect("file name"));
    let list = || {
        let out = run(koas()
            .args(["kernels", "--json", "--kernel-path"])
            .arg(folder.path())
            .env("KOAS_CACHE_DIR", cache.path()));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        v["kernels"]
            .as_array()
            .expect("kernels")
            .iter()
            .filter_map(|k| k["name"].as_str().map(str::to_owned))
            .collect::<Vec<_>>()
    };
    let first = list();
    assert!(first.contains(&"source_len".to_string()), "{first:?}");
    assert!(cache.path().join("describe.json").is_file());
    assert_eq!(list(), first, "remembered");
    // Another build under the same name, its modification time set back
    // to the old one's: still described again.
    let old = std::fs::metadata(&installed)
        .expect("meta")
        .modified()
        .expect("mtime");
    let tmp = folder.path().join("incoming");
    std::fs::copy(test_plugin("findings"), &tmp).expect("copy");
    std::fs::File::options()
        .write(true)
        .open(&tmp)
        .and_then(|f| f.set_modified(old))
        .expect("set mtime");
    std::fs::rename(&tmp, &installed).expect("replace");
    let second = list();
    assert!(second.contains(&"spell_check".to_string()), "{second:?}");
    assert!(!second.contains(&"source_len".to_string()), "{second:?}");
}
