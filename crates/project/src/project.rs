//! The project config file `koas.toml`, searched upward from a document.
//!
//! ```toml
//! [check]
//! disable = ["terminology_drift"]        # kinds never reported
//! fail_on = "error"                      # default for --fail-on
//! [check.severity]
//! duplicate_paragraph = "info"           # per-kind severity
//!
//! [scan]                                 # md_consistency_scan settings
//! extra_ai_leftover_patterns = ['(?i)\bvoici (?:le|la|les)\b']
//! extra_term_pairs = [["jeu de tests", "test suite"]]
//! percent_min = 99.0
//!
//! [numbering]                            # md_numbering_control settings
//! [fingerprint]                          # md_fingerprint_chunk thresholds
//! [language]                             # md_language_check: languages, words
//! [vale]                                 # the .vale.ini whose styles run
//! [llm]                                  # the model (checked by the LLM service)
//! [limits]                               # kernel limits of the review commands
//! ```
//!
//! `koas check` and the review commands read the same file the same way:
//! an unknown table, or an unknown key inside one of the four tables above,
//! is an error naming the file, so that a typo does not silently change
//! nothing. `[llm]` and `[limits]` are kept as raw tables here; the runtime
//! checks them.

use crate::ProjectError as ScanError;
use crate::{FingerprintConfig, LanguageSection, NumberingConfig, ScanConfig};
use koas_review_schema::findings::{Finding, FindingKind, Severity};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The largest `koas.toml` read (1 MiB: a project file is a few KiB).
pub const MAX_PROJECT_CONFIG_BYTES: u64 = 1 << 20;

/// The name of the project config file.
pub const PROJECT_CONFIG_FILE: &str = "koas.toml";

/// Everything `koas.toml` can set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProjectConfig {
    /// What to report and how.
    pub check: CheckSection,
    /// The `[scan]` table: settings of `md_consistency_scan`.
    pub scan: ScanConfig,
    /// The `[numbering]` table: settings of `md_numbering_control`.
    pub numbering: NumberingConfig,
    /// The `[fingerprint]` table: trigger thresholds of
    /// `md_fingerprint_chunk`.
    pub fingerprint: FingerprintConfig,
    /// The `[language]` table: settings of `md_language_check`.
    pub language: LanguageSection,
    /// The `[llm]` table, checked by the runtime's LLM service.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm: Option<toml::Table>,
    /// The `[limits]` table (kernel timeout, memory, output size of the
    /// review commands), checked by the runtime.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits: Option<toml::Table>,
    /// The `[kernels]` table: other kernels every command runs after the
    /// built-in checks.
    pub kernels: KernelsSection,
    /// The `[vale]` table: which `.vale.ini`'s styles run.
    pub vale: crate::vale::ValeSection,
}

/// The `[kernels]` table: kernels of other teams that `koas check`,
/// `review`, `report` and `mcp` run after the built-in Stage 1 and 2, so
/// that their findings appear without a flag.
///
/// ```toml
/// [kernels]
/// run = ["heading_length"]
/// paths = ["../team-kernels"]     # extra search folders, relative to koas.toml
/// [kernels.config.heading_length]
/// max = 60
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KernelsSection {
    /// The kernels to run, by name (found like any kernel: `koas kernels`
    /// lists them).
    pub run: Vec<String>,
    /// Extra folders to search for them, relative to the `koas.toml`.
    pub paths: Vec<PathBuf>,
    /// Their config, by kernel (merged over each kernel's defaults and
    /// checked against them like a pipeline's `[config.KERNEL]`).
    pub config: BTreeMap<String, toml::Table>,
}

/// The `[check]` table: what `koas check` reports and when it fails.
///
/// Kinds are named bare (`ai_leftover`) or with the kernel that declares
/// them (`md_consistency_scan/ai_leftover`): a built-in kind, or a kind
/// declared by a kernel of `[kernels] run` (checked once that kernel is
/// found, see [`crate::kinds::KindCatalog`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CheckSection {
    /// Finding kinds never reported, wherever they occur.
    pub disable: Vec<String>,
    /// The `--fail-on` level used when the command line does not give one.
    pub fail_on: Option<Severity>,
    /// Severity per kind, replacing the kind's default.
    pub severity: BTreeMap<String, Severity>,
}

impl CheckSection {
    /// The part of the section that decides which built-in findings are
    /// reported and how (what the Stage 2 kernels of a review apply too).
    pub fn policy(&self) -> FindingsPolicy {
        let builtin = |n: &String| crate::kinds::builtin_named(n);
        FindingsPolicy {
            disable: self.disable.iter().filter_map(builtin).collect(),
            // A qualified name wins over a bare one: it is applied last.
            severity: self
                .severity
                .iter()
                .filter(|(n, _)| !n.contains('/'))
                .chain(self.severity.iter().filter(|(n, _)| n.contains('/')))
                .filter_map(|(n, s)| builtin(n).map(|k| (k, *s)))
                .collect(),
            other_kinds: Vec::new(),
            disable_rules: self
                .disable
                .iter()
                .filter(|n| crate::kinds::is_rule_name(n))
                .cloned()
                .collect(),
            rule_severity: self
                .severity
                .iter()
                .filter(|(n, _)| crate::kinds::is_rule_name(n))
                .map(|(n, s)| (n.clone(), *s))
                .collect(),
        }
    }

    /// The names that are not built-in kinds (kinds of other kernels, or
    /// typos until such a kernel declares them).
    pub fn other_names(&self) -> Vec<&str> {
        self.disable
            .iter()
            .chain(self.severity.keys())
            .filter(|n| crate::kinds::builtin_named(n).is_none() && !crate::kinds::is_rule_name(n))
            .map(String::as_str)
            .collect()
    }

    /// Checks that every name is a well-formed kind name, bare or
    /// `kernel/kind`; and, when no other kernel is run (`others` false),
    /// that it is a built-in kind.
    fn check_names(&self, others: bool) -> Result<(), String> {
        let builtin = crate::kinds::KindCatalog::builtin();
        for (table, name) in self
            .disable
            .iter()
            .map(|n| ("[check] disable", n))
            .chain(self.severity.keys().map(|n| ("[check.severity]", n)))
        {
            // A style rule (`Google.Passive`) is checked once the styles
            // are read (`ProjectConfig::read_vale`).
            if crate::kinds::is_rule_name(name) {
                continue;
            }
            let (kernel, kind) = match name.split_once('/') {
                Some((k, kind)) => (Some(k), kind),
                None => (None, name.as_str()),
            };
            koas_kernel_api::findings::check_kind_name(kind)
                .map_err(|e| format!("{table}: {e}"))?;
            if kernel.is_some_and(|k| {
                k.is_empty()
                    || !k
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            }) {
                return Err(format!("{table}: {name:?} is not `kind` or `kernel/kind`"));
            }
            if !others {
                builtin
                    .check_name(name)
                    .map_err(|e| format!("{table}: {e}"))?;
            }
        }
        Ok(())
    }
}

/// Which findings are reported and at what severity: `[check] disable`
/// and `[check.severity]` of `koas.toml`. `koas check` applies it to its
/// findings; in a review the Stage 2 kernels get it as their `disable` and
/// `severity` config keys and apply it before any other kernel sees their
/// findings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FindingsPolicy {
    /// Finding kinds never reported.
    pub disable: Vec<FindingKind>,
    /// Severity per kind, replacing the kind's default.
    pub severity: BTreeMap<FindingKind, Severity>,
    /// The kinds other kernels of the run declare (bare and
    /// `kernel/kind`): a suppression comment naming one is not a typo.
    pub other_kinds: Vec<String>,
    /// Style rules never reported (`Google.Passive`).
    pub disable_rules: Vec<String>,
    /// Severity per style rule, over the `style` kind's and the rule's
    /// own level.
    pub rule_severity: BTreeMap<String, Severity>,
}

/// The config keys a Stage 2 kernel takes besides its own settings.
const POLICY_KEYS: [&str; 5] = [
    "disable",
    "severity",
    "other_kinds",
    "disable_rules",
    "rule_severity",
];

impl FindingsPolicy {
    /// Drops the disabled kinds and rules and sets the configured
    /// severities (a rule's over its kind's).
    pub fn apply(&self, findings: &mut Vec<Finding>) {
        findings.retain(|f| {
            !self.disable.contains(&f.kind)
                && !f
                    .rule
                    .as_ref()
                    .is_some_and(|r| self.disable_rules.contains(r))
        });
        for f in findings.iter_mut() {
            let of_rule = f.rule.as_ref().and_then(|r| self.rule_severity.get(r));
            if let Some(s) = of_rule.or_else(|| self.severity.get(&f.kind)) {
                f.severity = *s;
            }
        }
    }

    /// A Stage 2 kernel's default config: its own `settings` (a JSON
    /// object) with the policy keys added, empty.
    pub fn default_kernel_config(settings: serde_json::Value) -> serde_json::Value {
        let mut value = settings;
        if let Some(map) = value.as_object_mut() {
            map.insert("disable".into(), serde_json::json!([]));
            map.insert("severity".into(), serde_json::json!({}));
            map.insert("other_kinds".into(), serde_json::json!([]));
            map.insert("disable_rules".into(), serde_json::json!([]));
            map.insert("rule_severity".into(), serde_json::json!({}));
        }
        value
    }

    /// Splits a Stage 2 kernel's resolved config into its own settings
    /// and the policy.
    pub fn split_kernel_config(
        config: &serde_json::Value,
    ) -> Result<(serde_json::Value, FindingsPolicy), ScanError> {
        let mut settings = config.clone();
        let mut policy = serde_json::Map::new();
        if let Some(map) = settings.as_object_mut() {
            for key in POLICY_KEYS {
                if let Some(v) = map.remove(key) {
                    policy.insert(key.to_owned(), v);
                }
            }
        }
        let policy = serde_json::from_value(serde_json::Value::Object(policy)).map_err(|e| {
            ScanError::InvalidConfig {
                key: "disable/severity".into(),
                reason: e.to_string(),
            }
        })?;
        Ok((settings, policy))
    }

    /// The policy as config keys (`disable`, `severity`) to set on a
    /// Stage 2 kernel.
    pub fn as_kernel_keys(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut map = serde_json::Map::new();
        map.insert("disable".into(), serde_json::json!(self.disable));
        map.insert("severity".into(), serde_json::json!(self.severity));
        map.insert("other_kinds".into(), serde_json::json!(self.other_kinds));
        map.insert(
            "disable_rules".into(),
            serde_json::json!(self.disable_rules),
        );
        map.insert(
            "rule_severity".into(),
            serde_json::json!(self.rule_severity),
        );
        map
    }
}

impl ProjectConfig {
    /// Parses the text of a `koas.toml`; `path` names it in errors.
    pub fn from_toml_str(text: &str, path: &Path) -> Result<ProjectConfig, ScanError> {
        let error = |reason: String| ScanError::ProjectConfig {
            path: path.display().to_string(),
            reason,
        };
        let config: ProjectConfig =
            toml::from_str(text).map_err(|e| error(e.to_string().trim().to_string()))?;
        if config.language.styles.is_some() {
            return Err(error(
                "[language] styles is read from the .vale.ini; name that file in [vale] config"
                    .to_owned(),
            ));
        }
        config
            .check
            .check_names(!config.kernels.run.is_empty())
            .map_err(error)?;
        if let Some(kernel) = config
            .kernels
            .config
            .keys()
            .find(|k| !config.kernels.run.contains(k))
        {
            return Err(error(format!(
                "[kernels.config.{kernel}] configures a kernel that `[kernels] run` does not name"
            )));
        }
        Ok(config)
    }

    /// Reads and parses a `koas.toml`: a regular file of at most
    /// [`MAX_PROJECT_CONFIG_BYTES`]. A document's repository may hold a
    /// `koas.toml` that is a FIFO (opening it would block) or a huge file;
    /// both are refused before they are opened or read in full.
    pub fn load(path: &Path) -> Result<ProjectConfig, ScanError> {
        let refused = |reason: String| ScanError::ProjectConfig {
            path: path.display().to_string(),
            reason,
        };
        let bytes = crate::read::read_regular(path, MAX_PROJECT_CONFIG_BYTES).map_err(refused)?;
        let text = String::from_utf8(bytes).map_err(|_| refused("not UTF-8 text".to_owned()))?;
        let mut config = Self::from_toml_str(&text, path)?;
        let base = path.parent().unwrap_or(Path::new("."));
        config.language.read_words(base).map_err(refused)?;
        config.read_vale(base).map_err(refused)?;
        Ok(config)
    }

    /// Reads the Vale configuration `[vale]` chooses for a project in
    /// `base` (the `koas.toml`'s folder, or a document's without one) into
    /// `language.styles`, and checks that every rule `[check]` names
    /// (`Style.Rule`) is one of its styles'.
    pub fn read_vale(&mut self, base: &Path) -> Result<(), String> {
        self.language.styles = self.vale.read(base)?;
        let rules: Vec<&String> = self
            .check
            .disable
            .iter()
            .chain(self.check.severity.keys())
            .filter(|n| crate::kinds::is_rule_name(n))
            .collect();
        for name in rules {
            let known = self
                .language
                .styles
                .as_ref()
                .is_some_and(|s| s.rules.contains_key(name.as_str()));
            if !known {
                let found = match &self.language.styles {
                    Some(s) => format!("the styles of {}", s.ini_path),
                    None => "no .vale.ini (none found, or [vale] enabled = false)".to_owned(),
                };
                return Err(format!(
                    "[check] names the style rule {name:?}, which {found} do not hold"
                ));
            }
        }
        Ok(())
    }

    /// `true` when findings of `kind` are reported.
    pub fn is_enabled(&self, kind: FindingKind) -> bool {
        !self.check.policy().disable.contains(&kind)
    }

    /// The severity findings of `kind` get.
    pub fn severity_of(&self, kind: FindingKind) -> Severity {
        self.check
            .policy()
            .severity
            .get(&kind)
            .copied()
            .unwrap_or(kind.default_severity())
    }
}

/// The nearest `koas.toml` in the folder of `document` or any folder above
/// it. A relative `document` is resolved against the current directory.
pub fn find_project_config(document: &Path) -> Option<PathBuf> {
    let absolute = if document.is_absolute() {
        document.to_path_buf()
    } else {
        std::env::current_dir().ok()?.join(document)
    };
    let mut dir = absolute.parent();
    while let Some(d) = dir {
        let candidate = d.join(PROJECT_CONFIG_FILE);
        if candidate.is_file() {
            return Some(candidate);
        }
        dir = d.parent();
    }
    None
}

#[cfg(test)]
mod tests {

    /// A repository's `koas.toml` that is a FIFO or a huge file: refused
    /// without blocking and without reading it whole.
    #[cfg(unix)]
    #[test]
    fn a_fifo_or_oversized_koas_toml_is_refused_unread() {
        let dir = tempfile::tempdir().expect("tempdir");
        let big = dir.path().join("big.toml");
        let file = std::fs::File::create(&big).expect("create");
        file.set_len(MAX_PROJECT_CONFIG_BYTES + 1).expect("sparse");
        let err = ProjectConfig::load(&big).expect_err("too big").to_string();
        assert!(err.contains("over 1048576 bytes"), "{err}");
        let fifo = dir.path().join("koas.toml");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if !made.is_ok_and(|s| s.success()) {
            return; // no mkfifo here: the size case was tested
        }
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(
                ProjectConfig::load(&fifo)
                    .map(|_| ())
                    .map_err(|e| e.to_string()),
            );
        });
        let result = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("a FIFO koas.toml must not block");
        let err = result.expect_err("a FIFO is refused");
        assert!(err.contains("not a regular file"), "{err}");
    }
    use super::*;

    #[test]
    fn parses_every_section_and_keeps_defaults() {
        let text = r#"
            [check]
            disable = ["terminology_drift"]
            fail_on = "error"
            [check.severity]
            duplicate_paragraph = "info"
            [scan]
            extra_term_pairs = [["jeu de tests", "test suite"]]
            percent_min = 99
            [numbering]
            check_heading_levels = false
            [fingerprint]
            emoji_min = 8
            [llm]
            whatever = 1
            [limits]
            timeout = 60
        "#;
        let c = ProjectConfig::from_toml_str(text, Path::new("koas.toml")).expect("valid");
        assert!(!c.is_enabled(FindingKind::TerminologyDrift));
        assert!(c.is_enabled(FindingKind::AiLeftover));
        assert_eq!(c.check.fail_on, Some(Severity::Error));
        assert_eq!(
            c.severity_of(FindingKind::DuplicateParagraph),
            Severity::Info
        );
        assert_eq!(c.severity_of(FindingKind::BrokenReference), Severity::Error);
        assert_eq!(c.scan.percent_min, 99.0);
        assert_eq!(c.scan.percent_max, 105.0);
        assert_eq!(c.scan.extra_term_pairs.len(), 1);
        assert!(!c.numbering.check_heading_levels);
        assert_eq!(c.fingerprint.emoji_min, 8);
        assert!(c.llm.is_some() && c.limits.is_some());
    }

    #[test]
    fn the_policy_round_trips_through_a_kernel_config() {
        let policy = FindingsPolicy {
            disable: vec![FindingKind::TerminologyDrift],
            severity: [(FindingKind::AiLeftover, Severity::Error)].into(),
            other_kinds: vec!["team/long".into()],
            disable_rules: vec!["Google.Will".into()],
            rule_severity: [("Google.Latin".to_owned(), Severity::Error)].into(),
        };
        let mut config = FindingsPolicy::default_kernel_config(serde_json::json!({"a": 1}));
        if let Some(map) = config.as_object_mut() {
            map.extend(policy.as_kernel_keys());
        }
        let (settings, back) = FindingsPolicy::split_kernel_config(&config).expect("valid");
        assert_eq!(settings, serde_json::json!({"a": 1}));
        assert_eq!(back, policy);
    }

    #[test]
    fn typos_and_unknown_kinds_are_errors_naming_the_file() {
        for bad in [
            "[check]\ndisabel = []",
            "[check]\ndisable = [\"ai_leftovers\"]",
            "[scan]\npercent_mni = 1",
            "[check]\nfail_on = \"fatal\"",
            "[chek]\ndisable = []",
            "[check]\ndisable = [\"team/heading_too_long\"]",
            "[kernels]\nrun = [\"team\"]\n[check]\ndisable = [\"Team Kind\"]",
            "[kernels]\nrun = [\"team\"]\n[check.severity]\n\"a b/kind\" = \"info\"",
            "[kernels]\nrun = [\"team\"]\nfolders = []",
            "[kernels]\nrun = [\"team\"]\n[kernels.config.other]\nx = 1",
        ] {
            let e =
                ProjectConfig::from_toml_str(bad, Path::new("/p/koas.toml")).expect_err("refused");
            assert!(e.to_string().contains("/p/koas.toml"), "{e}");
        }
    }

    #[test]
    fn other_kernels_kinds_are_accepted_when_they_run() {
        let text = "[kernels]\nrun = [\"team\"]\npaths = [\"k\"]\n[kernels.config.team]\nmax = 3\n[check]\ndisable = [\"team/heading_too_long\", \"md_consistency_scan/ai_leftover\"]\n[check.severity]\nempty_title = \"error\"\nduplicate_paragraph = \"info\"\n\"md_consistency_scan/duplicate_paragraph\" = \"error\"\n";
        let c = ProjectConfig::from_toml_str(text, Path::new("koas.toml")).expect("valid");
        assert_eq!(c.kernels.run, ["team"]);
        assert_eq!(c.kernels.config["team"]["max"].as_integer(), Some(3));
        assert_eq!(
            c.check.other_names(),
            ["team/heading_too_long", "empty_title"]
        );
        assert!(!c.is_enabled(FindingKind::AiLeftover));
        // The qualified name wins over the bare one.
        assert_eq!(
            c.severity_of(FindingKind::DuplicateParagraph),
            Severity::Error
        );
    }

    #[test]
    fn finds_the_nearest_config_upward() {
        let root = std::env::temp_dir().join(format!("koas-md-scan-find-{}", std::process::id()));
        let deep = root.join("a/b");
        std::fs::create_dir_all(&deep).expect("mkdir");
        std::fs::write(root.join(PROJECT_CONFIG_FILE), "").expect("write");
        assert_eq!(
            find_project_config(&deep.join("doc.md")),
            Some(root.join(PROJECT_CONFIG_FILE))
        );
        std::fs::write(root.join("a").join(PROJECT_CONFIG_FILE), "").expect("write");
        assert_eq!(
            find_project_config(&deep.join("doc.md")),
            Some(root.join("a").join(PROJECT_CONFIG_FILE))
        );
        let _ = std::fs::remove_dir_all(&root);
    }
}
