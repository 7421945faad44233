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
//! [llm]                                  # the model (checked by the LLM service)
//! [limits]                               # kernel limits of the review commands
//! ```
//!
//! `koas check` and the review commands read the same file the same way:
//! an unknown table, or an unknown key inside one of the four tables above,
//! is an error naming the file, so that a typo does not silently change
//! nothing. `[llm]` and `[limits]` are kept as raw tables here; the runtime
//! checks them.

use super::{FingerprintConfig, NumberingConfig, ScanConfig};
use crate::ScanError;
use koas_review_schema::findings::{Finding, FindingKind, Severity};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
    /// The `[llm]` table, checked by the runtime's LLM service.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm: Option<toml::Table>,
    /// The `[limits]` table (kernel timeout, memory, output size of the
    /// review commands), checked by the runtime.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits: Option<toml::Table>,
}

/// The `[check]` table: what `koas check` reports and when it fails.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CheckSection {
    /// Finding kinds never reported, wherever they occur.
    pub disable: Vec<FindingKind>,
    /// The `--fail-on` level used when the command line does not give one.
    pub fail_on: Option<Severity>,
    /// Severity per kind, replacing the kind's default.
    pub severity: BTreeMap<FindingKind, Severity>,
}

impl CheckSection {
    /// The part of the section that decides which findings are reported
    /// and how (what the Stage 2 kernels of a review apply too).
    pub fn policy(&self) -> FindingsPolicy {
        FindingsPolicy {
            disable: self.disable.clone(),
            severity: self.severity.clone(),
        }
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
}

/// The config keys a Stage 2 kernel takes besides its own settings.
const POLICY_KEYS: [&str; 2] = ["disable", "severity"];

impl FindingsPolicy {
    /// Drops the disabled kinds and sets the configured severities.
    pub fn apply(&self, findings: &mut Vec<Finding>) {
        findings.retain(|f| !self.disable.contains(&f.kind));
        for f in findings.iter_mut() {
            if let Some(s) = self.severity.get(&f.kind) {
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
        map
    }
}

impl ProjectConfig {
    /// Parses the text of a `koas.toml`; `path` names it in errors.
    pub fn from_toml_str(text: &str, path: &Path) -> Result<ProjectConfig, ScanError> {
        toml::from_str(text).map_err(|e| ScanError::ProjectConfig {
            path: path.display().to_string(),
            reason: e.to_string().trim().to_string(),
        })
    }

    /// Reads and parses a `koas.toml`.
    pub fn load(path: &Path) -> Result<ProjectConfig, ScanError> {
        let text = std::fs::read_to_string(path).map_err(|e| ScanError::ProjectConfig {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        Self::from_toml_str(&text, path)
    }

    /// `true` when findings of `kind` are reported.
    pub fn is_enabled(&self, kind: FindingKind) -> bool {
        !self.check.disable.contains(&kind)
    }

    /// The severity findings of `kind` get.
    pub fn severity_of(&self, kind: FindingKind) -> Severity {
        self.check
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
        ] {
            let e =
                ProjectConfig::from_toml_str(bad, Path::new("/p/koas.toml")).expect_err("refused");
            assert!(e.to_string().contains("/p/koas.toml"), "{e}");
        }
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
