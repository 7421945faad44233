//! `koas check DOC...`: Stage 1 and the Stage 2 checks, in-process, with
//! no LLM, no plugin and no workspace — a linter for editors and CI.
//!
//! A DOC may be a file, a folder (its `*.md` and `*.markdown` files,
//! recursively, hidden folders skipped) or `-` for standard input (named
//! by `--stdin-filename` in reports and for the `koas.toml` search).
//!
//! Exit codes: 0 when no finding reaches `--fail-on`, 1 when one does, 2
//! when a document cannot be read (not found, not UTF-8, binary) or a
//! `koas.toml` is invalid.

use crate::api::check::{pipeline, read_document};
use anyhow::Context as _;
use clap::{Args, ValueEnum};
use koas_md_scan::config::find_project_config;
use koas_md_scan::format::{
    render_github, render_human, render_json, render_sarif, summary_line, FileFindings,
};
use koas_md_scan::{Checker, ScanOutput};
use koas_orchestrator::embed::{ExitStatus, HostOptions};
use koas_orchestrator::out;
use koas_review_schema::findings::{Finding, Severity};
use rayon::prelude::*;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Exit code when a finding reaches `--fail-on` (the code `koas run` uses
/// for a failed kernel: "the work found a problem").
const FINDINGS_FAIL: ExitStatus = ExitStatus::Failure;

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CheckFormat {
    /// `file:line: kind: message`, one finding a line (like a compiler).
    Human,
    /// A JSON array of findings, each with its `file`.
    Json,
    /// SARIF 2.1.0, for code-scanning upload.
    Sarif,
    /// GitHub Actions workflow annotations (`::warning file=…`).
    Github,
}

/// The lowest severity that fails the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    /// Any finding fails (review word: minor).
    #[value(alias = "minor")]
    Info,
    /// Warnings and errors fail (review word: attention).
    #[value(alias = "attention")]
    Warning,
    /// Only errors fail (review word: critical).
    #[value(alias = "critical")]
    Error,
    /// Never fail because of findings.
    Never,
}

impl FailOn {
    fn threshold(self) -> Option<Severity> {
        match self {
            FailOn::Info => Some(Severity::Info),
            FailOn::Warning => Some(Severity::Warning),
            FailOn::Error => Some(Severity::Error),
            FailOn::Never => None,
        }
    }
}

#[derive(Debug, Args)]
#[command(after_help = "\
Severities: a finding is info, warning or error, here, in the editor and in
the review reports. Ledger entries (koas grep, koas show) keep the review's
own words for the same levels; every filter and koas.toml accepts both:
  koas check   ledger (grep, show)
  info         minor
  warning      attention, deletion (a removal)
  error        critical

Examples:
  koas check spec.md docs/
  koas check spec.md --format sarif > koas.sarif
  koas check spec.md --fail-on error        # or --fail-on critical
  koas check spec.md --fix --dry-run
  koas check docs/ --changed-since origin/main   # a pull request's lines

Exit codes:
  0    no finding at or above --fail-on
  1    a finding at or above --fail-on
  2    a document cannot be read, a koas.toml is invalid, a kernel of
       --pipeline or of koas.toml's [kernels] run failed or wrote a findings
       artifact that does not parse, or a usage error

With --pipeline FILE, every kernel of FILE that produces a findings artifact
(docs/artifacts.md) adds its findings, named by kernel:
  doc.md:3:9: warning spelling [spell_check]: `teh`: did you mean `the`?")]
pub struct CheckArgs {
    /// Markdown files, folders (searched recursively for *.md and
    /// *.markdown), or - for standard input.
    #[arg(required = true, value_name = "DOC")]
    pub docs: Vec<PathBuf>,
    /// The name standard input is reported under (and the path the
    /// koas.toml search starts from).
    #[arg(long, value_name = "PATH", default_value = "<stdin>")]
    pub stdin_filename: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    pub format: CheckFormat,
    /// Exit with 1 when a finding is at or above this severity [default:
    /// koas.toml's check.fail_on, else warning].
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub fail_on: Option<FailOn>,
    /// Use this project config instead of the koas.toml found upward from
    /// each document.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Read no koas.toml and no .vale.ini at all (built-in defaults).
    #[arg(long, conflicts_with = "config")]
    pub no_config: bool,
    /// Refuse a document larger than this (e.g. 300M, 1G) [default:
    /// KOAS_MAX_DOC_SIZE, else 256M].
    #[arg(long, value_name = "SIZE")]
    pub max_doc_size: Option<String>,
    /// Apply the fixes that are certain (a broken anchor with one close
    /// match, heading-level skips, an extra empty table cell, empty
    /// headings), then report what remains.
    #[arg(long)]
    pub fix: bool,
    /// With --fix: print the fixes as a unified diff and change no file.
    #[arg(long, requires = "fix")]
    pub dry_run: bool,
    /// Also run this pipeline file on each document (as its `doc` input,
    /// in the pipeline's workspace) and report the findings of every
    /// kernel that produces a findings artifact (see docs/artifacts.md),
    /// named by kernel. A failed kernel is an error (exit 2).
    #[arg(long, value_name = "FILE", conflicts_with = "fix")]
    pub pipeline: Option<PathBuf>,
    /// Report only the findings on lines added or changed since this git
    /// revision (a branch, tag or commit: origin/main, HEAD~1): the lines
    /// a pull request or a commit touched. The files are compared as they
    /// are on disk; a file the revision does not have is all new, a
    /// renamed one is compared with its old name.
    #[arg(long, value_name = "REV", conflicts_with = "fix")]
    pub changed_since: Option<String>,
}

/// A checked document: the name it is reported under, its findings and
/// the severity that fails the run for it.
struct Checked {
    path: String,
    findings: Vec<Finding>,
    /// The findings its suppression comments silence (SARIF lists them).
    suppressed: Vec<Finding>,
    fail_on: Option<Severity>,
    /// Findings of the `--pipeline` or `[kernels] run` kernels.
    kernels: Vec<koas_review_schema::findings::KernelFindings>,
    /// The SARIF rules of those kernels' kinds.
    rules: Vec<serde_json::Value>,
}

/// A checked document with `--fix`: the fixes applied and the findings
/// that remain in the fixed text.
struct Fixed {
    output: ScanOutput,
    /// The unified diff of the fixes (empty when none applied).
    diff: String,
    /// How many fixes applied.
    applied: usize,
}

/// Checks `text`; with `--fix`, applies the certain fixes round after
/// round until none is left, writes the file back (unless `--dry-run`),
/// and reports the findings of the fixed text: those that remain.
fn check_and_fix(
    args: &CheckArgs,
    checker: &Checker,
    disk: &crate::links::Disk,
    job: &Job,
    text: &str,
) -> anyhow::Result<Fixed> {
    // A file on disk has its links to other files checked too; standard
    // input, named or not, is checked alone.
    let around = (job.source != Path::new("-"))
        .then(|| disk.around(&job.source))
        .flatten();
    let name = job.source.file_name().and_then(|n| n.to_str());
    let check = |text: &str| match &around {
        Some(around) => checker.check_linked(text, name, around),
        None => checker.check(text),
    };
    let output = check(text).with_context(|| format!("checking {}", job.path))?;
    if !args.fix {
        return Ok(Fixed {
            output,
            diff: String::new(),
            applied: 0,
        });
    }
    // Round after round until no certain fix is left: a fix that another
    // took the line of is applied on the fixed text.
    let mut last: Option<ScanOutput> = None;
    let stable =
        koas_md_scan::fix::fix_until_stable(text, output.findings.clone(), |fixed: &str| {
            let out = check(fixed)?;
            let found = out.findings.clone();
            last = Some(out);
            Ok::<_, koas_md_scan::ScanError>(found)
        })
        .with_context(|| format!("checking the fixed {}", job.path))?;
    let (Some(remaining), true) = (last, stable.applied > 0) else {
        return Ok(Fixed {
            output,
            diff: String::new(),
            applied: 0,
        });
    };
    if !args.dry_run {
        if job.source == Path::new("-") {
            anyhow::bail!(
                "{}: --fix cannot write standard input back (use --fix --dry-run for a diff)",
                job.path
            );
        }
        write_atomically(&job.source, &stable.outcome.text)
            .with_context(|| format!("cannot write the fixed {}", job.path))?;
    }
    Ok(Fixed {
        output: remaining,
        diff: stable.outcome.diff(&job.path),
        applied: stable.applied,
    })
}

/// Replaces `path`'s content with `text` through a temporary file in the
/// same folder, so an interrupted write leaves the old document whole.
fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.koas-fix.tmp"));
    std::fs::write(&tmp, text)?;
    if let Ok(meta) = std::fs::metadata(path) {
        std::fs::set_permissions(&tmp, meta.permissions())?;
    }
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// One document to check.
struct Job {
    /// Where to read it (`-` for standard input).
    source: PathBuf,
    /// The name it is reported under.
    path: String,
    /// Index of its project config in [`Configs::list`].
    config: usize,
}

/// The project configs in use, each loaded and compiled once; index 0
/// holds the built-in defaults.
struct Configs {
    list: Vec<(crate::project::ProjectFile, Checker)>,
    by_path: HashMap<PathBuf, usize>,
}

impl Configs {
    fn new() -> anyhow::Result<Self> {
        let default = crate::project::ProjectFile::default();
        let checker = Checker::new(&default.config)?;
        Ok(Configs {
            list: vec![(default, checker)],
            by_path: HashMap::new(),
        })
    }

    /// The index of the config that applies to `doc`.
    fn index_for(&mut self, args: &CheckArgs, doc: &Path) -> anyhow::Result<usize> {
        let path = if args.no_config {
            None
        } else if let Some(explicit) = &args.config {
            Some(explicit.clone())
        } else {
            find_project_config(doc)
        };
        let (path, near) = match path {
            Some(path) => (path, false),
            // Without koas.toml, a `.vale.ini` above the document still
            // brings its styles (not with --no-config: the defaults only).
            None if args.no_config => return Ok(0),
            None => match doc
                .parent()
                .and_then(koas_md_scan::config::find_vale_config)
            {
                Some(ini) => (ini, true),
                None => return Ok(0),
            },
        };
        if let Some(&i) = self.by_path.get(&path) {
            return Ok(i);
        }
        let (project, checker) = if near {
            crate::project::ProjectFile::near_checked(doc)?
        } else {
            crate::project::ProjectFile::load_checked(&path)?
        };
        self.list.push((project, checker));
        let i = self.list.len() - 1;
        self.by_path.insert(path, i);
        Ok(i)
    }
}

pub fn execute(global: &HostOptions, args: CheckArgs) -> anyhow::Result<ExitStatus> {
    if args.changed_since.is_some() && args.docs.iter().any(|d| d == Path::new("-")) {
        anyhow::bail!(
            "--changed-since compares files on disk with a git revision: not standard input"
        );
    }
    let (docs, folder_errors) = crate::input::expand_documents(&args.docs);
    for e in &folder_errors {
        eprintln!("error: {e}");
    }
    let limit = crate::input::max_doc_bytes(args.max_doc_size.as_deref())?;
    let mut tally = Tally {
        unreadable: folder_errors.len(),
        changed: args
            .changed_since
            .as_deref()
            .map(|rev| crate::changed::ChangedSince::new(rev, limit)),
        diffs: String::new(),
        fixes: 0,
        fixed_files: 0,
    };
    let mut configs = Configs::new()?;
    // Folder listings and linked files' anchors, read once for the run.
    let disk = crate::links::Disk::new(limit);
    let jobs: Vec<Job> = docs
        .iter()
        .map(|doc| {
            let named = if doc == Path::new("-") {
                args.stdin_filename.clone()
            } else {
                doc.clone()
            };
            Ok(Job {
                source: doc.clone(),
                path: named.display().to_string(),
                config: configs.index_for(&args, &named)?,
            })
        })
        .collect::<anyhow::Result<_>>()?;
    if !global.quiet {
        // Once a run, not once a document.
        for (_, checker) in &configs.list {
            for note in checker.style_notes() {
                eprintln!("note: {note}");
            }
        }
    }
    // Documents are independent: check them in parallel, report in order.
    // Standard input's text is kept for the project's other kernels.
    let outcomes: Vec<Result<(Fixed, Option<String>), anyhow::Error>> = jobs
        .par_iter()
        .map(|job| {
            let text = read_document(&job.source, &job.path, limit)?;
            let fixed = check_and_fix(&args, &configs.list[job.config].1, &disk, job, &text)?;
            Ok((fixed, (job.source == Path::new("-")).then_some(text)))
        })
        .collect();
    let mut checked: Vec<Checked> = Vec::new();
    for (job, outcome) in jobs.iter().zip(outcomes) {
        let project = &configs.list[job.config].0;
        if let Some(c) = gather(global, &args, project, job, outcome, limit, &mut tally)? {
            checked.push(c);
        }
    }
    report(global, &args, &checked, tally)
}

/// What the run counts across documents.
struct Tally {
    /// Documents (or other kernels' runs) that failed: exit 2.
    unreadable: usize,
    /// `--changed-since`: the lines each file changed.
    changed: Option<crate::changed::ChangedSince>,
    /// `--fix --dry-run`: the patches.
    diffs: String,
    /// Fixes applied, and the files they changed.
    fixes: usize,
    fixed_files: usize,
}

/// One document's outcome, with its project's other kernels' findings
/// and `--changed-since` applied; `None` when it could not be checked
/// (told on stderr, counted).
fn gather(
    global: &HostOptions,
    args: &CheckArgs,
    project: &crate::project::ProjectFile,
    job: &Job,
    outcome: anyhow::Result<(Fixed, Option<String>)>,
    limit: u64,
    tally: &mut Tally,
) -> anyhow::Result<Option<Checked>> {
    let mut stdin = None;
    let output = match outcome {
        Ok((fixed, text)) => {
            stdin = text;
            tally.diffs.push_str(&fixed.diff);
            tally.fixes += fixed.applied;
            tally.fixed_files += usize::from(fixed.applied > 0);
            Ok(fixed.output)
        }
        Err(e) => Err(e),
    };
    let output = match output {
        Ok(o) => o,
        Err(e) if e.downcast_ref::<koas_md_scan::ScanError>().is_some() => return Err(e),
        Err(e) => {
            eprintln!("error: {e:#}");
            tally.unreadable += 1;
            return Ok(None);
        }
    };
    let fail_on = match args.fail_on {
        Some(f) => f.threshold(),
        None => Some(project.config.check.fail_on.unwrap_or(Severity::Warning)),
    };
    let others = match &args.pipeline {
        Some(file) => Some(pipeline::findings_for(global, file, &job.source, project)),
        None if !project.config.kernels.run.is_empty() => Some(pipeline::project_findings(
            global,
            if stdin.is_some() {
                Path::new(&job.path)
            } else {
                &job.source
            },
            stdin.as_deref(),
            project,
        )),
        None => None,
    };
    let mut output = output;
    let (mut kernels, rules) = match others {
        None => (Vec::new(), Vec::new()),
        Some(Ok(others)) => {
            for e in &others.errors {
                eprintln!("error: {}: {e}", job.path);
            }
            tally.unreadable += others.errors.len();
            // A comment naming one of their kinds is no typo.
            output.forget_kinds(&others.catalog.other_names());
            let rules = pipeline::sarif_rules(&others.catalog);
            (others.found, rules)
        }
        Some(Err(e)) => {
            eprintln!("error: {e:#}");
            tally.unreadable += 1;
            (Vec::new(), Vec::new())
        }
    };
    if !global.quiet {
        for w in &output.warnings {
            eprintln!("warning: {}: {w}", job.path);
        }
    }
    if let Some(changes) = tally.changed.as_mut() {
        // The file as it is now (after any change of this run).
        let text = read_document(&job.source, &job.path, limit)?;
        let lines = changes.lines(&job.source, &text)?;
        let touched = |from: u32, to: u32| {
            (from.max(1)..=to.max(from)).any(|n| lines.get(n as usize - 1) == Some(&true))
        };
        output.findings.retain(|f| touched(f.line, f.line_end));
        output.suppressed.retain(|f| touched(f.line, f.line_end));
        for k in &mut kernels {
            k.findings
                .retain(|f| touched(f.line, f.line_end.unwrap_or(f.line)));
        }
    }
    Ok(Some(Checked {
        path: job.path.clone(),
        findings: output.findings,
        suppressed: output.suppressed,
        fail_on,
        kernels,
        rules,
    }))
}

/// The findings in the asked format on stdout, the summary on stderr, and
/// the exit status they call for.
fn report(
    global: &HostOptions,
    args: &CheckArgs,
    checked: &[Checked],
    tally: Tally,
) -> anyhow::Result<ExitStatus> {
    let files: Vec<FileFindings<'_>> = checked
        .iter()
        .map(|c| FileFindings {
            path: &c.path,
            findings: &c.findings,
            suppressed: &c.suppressed,
        })
        .collect();
    let mut text = match args.format {
        // A dry run shows what --fix would change, as a patch.
        _ if args.dry_run => tally.diffs,
        CheckFormat::Human => render_human(&files),
        CheckFormat::Json => render_json(&files),
        CheckFormat::Sarif => render_sarif(&files, env!("CARGO_PKG_VERSION")),
        CheckFormat::Github => render_github(&files),
    };
    let other_kernels = checked
        .iter()
        .any(|c| !c.kernels.is_empty() || !c.rules.is_empty());
    if other_kernels {
        text = with_kernel_findings(args.format, text, checked);
    }
    // The text and GitHub formats quote documents, file names and other
    // kernels' messages to a terminal or a CI log: control characters are
    // shown escaped (JSON and SARIF escape them already; a dry run's patch
    // stays byte-exact so that it applies).
    if matches!(args.format, CheckFormat::Human | CheckFormat::Github) && !args.dry_run {
        if let std::borrow::Cow::Owned(escaped) =
            koas_kernel_api::terminal::escape_controls_keep_lines(&text)
        {
            text = escaped;
        }
    }
    // A reader that stops early (`koas check … | head`) still gets the
    // exit code the findings call for: scripts test it, not the output.
    let closed = match out!("{text}") {
        Ok(()) => false,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => true,
        Err(e) => return Err(e.into()),
    };
    if args.fix && !global.quiet {
        let verb = if args.dry_run {
            "would apply"
        } else {
            "applied"
        };
        eprintln!(
            "{verb} {} fix{} in {} file{}",
            tally.fixes,
            if tally.fixes == 1 { "" } else { "es" },
            tally.fixed_files,
            if tally.fixed_files == 1 { "" } else { "s" }
        );
    }
    if args.format == CheckFormat::Human && !args.dry_run && !global.quiet && !closed {
        let mut line = if args.pipeline.is_some() || other_kernels {
            pipeline_summary(checked)
        } else {
            summary_line(&files)
        };
        if let Some(changes) = &tally.changed {
            line.push_str(&format!(" on lines changed since {}", changes.rev()));
        }
        // The counts cover what was checked; say that something was not.
        if tally.unreadable > 0 {
            let s = if tally.unreadable == 1 { "" } else { "s" };
            line.push_str(&format!("; {} error{s} above", tally.unreadable));
        }
        eprintln!("{line}");
    }
    if tally.unreadable > 0 {
        return Ok(ExitStatus::Error);
    }
    let failed = checked.iter().any(|c| {
        c.fail_on
            .is_some_and(|t| c.findings.iter().any(|f| f.severity >= t))
            || pipeline::fails(&c.kernels, c.fail_on)
    });
    Ok(if failed {
        FINDINGS_FAIL
    } else {
        ExitStatus::Success
    })
}

/// `text` (the built-in findings in `format`) with the `--pipeline`
/// kernels' findings added the way that format lists findings.
fn with_kernel_findings(format: CheckFormat, text: String, checked: &[Checked]) -> String {
    use crate::api::check::pipeline as cp;
    match format {
        CheckFormat::Human => {
            let mut text = text;
            for c in checked {
                text.push_str(&cp::human(&c.path, &c.kernels));
            }
            text
        }
        CheckFormat::Github => {
            let mut text = text;
            for c in checked {
                text.push_str(&cp::github(&c.path, &c.kernels));
            }
            text
        }
        CheckFormat::Json => {
            let mut items: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap_or_default();
            for c in checked {
                items.extend(cp::json_items(&c.path, &c.kernels));
            }
            let mut text = serde_json::to_string_pretty(&items).unwrap_or_else(|_| "[]".into());
            text.push('\n');
            text
        }
        CheckFormat::Sarif => {
            let Ok(mut log) = serde_json::from_str::<serde_json::Value>(&text) else {
                return text;
            };
            if let Some(rules) = log
                .pointer_mut("/runs/0/tool/driver/rules")
                .and_then(serde_json::Value::as_array_mut)
            {
                let mut seen = std::collections::BTreeSet::new();
                for c in checked {
                    for rule in &c.rules {
                        if seen.insert(rule["id"].to_string()) {
                            rules.push(rule.clone());
                        }
                    }
                }
            }
            if let Some(results) = log
                .pointer_mut("/runs/0/results")
                .and_then(serde_json::Value::as_array_mut)
            {
                for c in checked {
                    results.extend(cp::sarif_results(
                        &koas_md_scan::format::path_to_uri(&c.path),
                        &c.kernels,
                    ));
                }
            }
            let mut text = serde_json::to_string_pretty(&log).unwrap_or(text);
            text.push('\n');
            text
        }
    }
}

/// The summary line with the `--pipeline` kernels' findings counted:
/// `2 findings (0 errors, 2 warnings, 0 info) in 1 file; 1 from spell_check`.
fn pipeline_summary(checked: &[Checked]) -> String {
    let mut by_severity = [0usize; 3];
    let mut by_kernel: std::collections::BTreeMap<&str, usize> = Default::default();
    let level = |s: Severity| match s {
        Severity::Error => 0,
        Severity::Warning => 1,
        Severity::Info => 2,
    };
    for c in checked {
        for f in &c.findings {
            by_severity[level(f.severity)] += 1;
        }
        for k in &c.kernels {
            *by_kernel.entry(k.kernel.as_str()).or_default() += k.findings.len();
            for f in &k.findings {
                by_severity[level(f.severity)] += 1;
            }
        }
    }
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let total: usize = by_severity.iter().sum();
    let mut line = format!(
        "{} ({}, {}, {} info) in {}",
        plural(total, "finding"),
        plural(by_severity[0], "error"),
        plural(by_severity[1], "warning"),
        by_severity[2],
        plural(checked.len(), "file")
    );
    let parts: Vec<String> = by_kernel
        .iter()
        .map(|(k, n)| format!("{n} from {k}"))
        .collect();
    if !parts.is_empty() {
        line.push_str(&format!("; {}", parts.join(", ")));
    }
    line
}
