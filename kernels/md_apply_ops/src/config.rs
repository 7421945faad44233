//! The kernel's config: the review policy (silent tier, severity → alert)
//! and the apply options.

use std::collections::BTreeMap;

use koas_review_schema::apply::ApplyOptions;
use koas_review_schema::apply::NormalizeOptions;
use koas_review_schema::edit_op::{Alert, ReviewPolicy};
use serde::{Deserialize, Serialize};

/// `[config.md_apply_ops]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApplyConfig {
    /// Refuse every op that touches a protected region (`--strict`).
    pub strict: bool,
    /// Which normalization fixes run (all by default).
    pub normalize: NormalizeOptions,
    /// Kinds whose changes are silent unless they need attention.
    pub silent_allowlist: Vec<String>,
    /// Severity → GitHub alert type.
    pub severity_alert_map: BTreeMap<String, Alert>,
    /// Document name in patch headers and the ledger; empty: the
    /// workspace's name, else the input file's name.
    pub doc_name: String,
    /// Apply the certain fixes of the Stage 2 findings (`koas check
    /// --fix`'s) as ops, so each becomes a ledger entry with an ID and
    /// patches (`koas review` turns it on).
    #[serde(default)]
    pub check_fixes: bool,
}

impl Default for ApplyConfig {
    fn default() -> Self {
        let options = ApplyOptions::default();
        ApplyConfig {
            strict: options.strict,
            normalize: options.normalize,
            silent_allowlist: options.policy.silent_allowlist,
            severity_alert_map: options.policy.severity_alert_map,
            doc_name: String::new(),
            check_fixes: false,
        }
    }
}

impl ApplyConfig {
    /// The engine's options.
    pub fn options(&self) -> ApplyOptions {
        ApplyOptions {
            strict: self.strict,
            normalize: self.normalize,
            policy: ReviewPolicy {
                silent_allowlist: self.silent_allowlist.clone(),
                severity_alert_map: self.severity_alert_map.clone(),
            },
        }
    }

    /// The default config as the kernel declares it.
    pub fn default_json() -> serde_json::Value {
        serde_json::to_value(ApplyConfig::default()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_spec_policy() {
        let json = ApplyConfig::default_json();
        assert_eq!(json["severity_alert_map"]["deletion"], "CAUTION");
        assert_eq!(json["strict"], false);
        assert_eq!(json["normalize"]["blank_line_guard"], true);
        let back: ApplyConfig = serde_json::from_value(json).unwrap();
        assert_eq!(back.options(), ApplyOptions::default());
    }
}
