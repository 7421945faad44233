//! Which finding kinds exist: the built-in checks' own, and those the other
//! kernels of a run declare (`KernelSpec::finding_kind`). A user names a
//! kind in `koas.toml` (`[check] disable`, `[check.severity]`) and in
//! suppression comments either bare (`heading_too_long`) or, when two
//! kernels declare it, with its kernel (`heading_length/heading_too_long`).

use crate::CheckSection;
use crate::{CONSISTENCY_KERNEL, LANGUAGE_KERNEL, NUMBERING_KERNEL};
use koas_review_schema::findings::{FindingKind, Severity};
use std::collections::BTreeMap;

/// The built-in kinds `md_numbering_control` reports; `md_language_check`
/// reports the language kinds ([`FindingKind::LANGUAGE`]),
/// `md_consistency_scan` every other built-in kind.
pub const NUMBERING_KINDS: [FindingKind; 6] = [
    FindingKind::HeadingLevelSkip,
    FindingKind::EmptyHeading,
    FindingKind::NumberingGap,
    FindingKind::NumberingDuplicate,
    FindingKind::MissingTarget,
    FindingKind::CaptionMismatch,
];

/// The built-in kernel that reports `kind`.
pub fn builtin_kernel(kind: FindingKind) -> &'static str {
    if NUMBERING_KINDS.contains(&kind) {
        NUMBERING_KERNEL
    } else if kind.is_language() {
        LANGUAGE_KERNEL
    } else {
        CONSISTENCY_KERNEL
    }
}

/// The built-in kinds `kernel` reports (none for another kernel).
pub fn builtin_kinds(kernel: &str) -> Vec<FindingKind> {
    FindingKind::ALL
        .into_iter()
        .filter(|k| builtin_kernel(*k) == kernel)
        .collect()
}

/// `spec` with the built-in kinds `kernel` reports declared, each with its
/// description (the findings contract of the kernel API).
pub fn declare_builtin(
    spec: koas_kernel_api::KernelSpec,
    kernel: &str,
) -> koas_kernel_api::KernelSpec {
    builtin_kinds(kernel).into_iter().fold(spec, |spec, k| {
        spec.finding_kind(k.as_str(), k.description())
    })
}

/// The built-in kind `name` means, bare (`ai_leftover`) or with its
/// kernel (`md_consistency_scan/ai_leftover`).
pub fn builtin_named(name: &str) -> Option<FindingKind> {
    let (kernel, kind) = split(name);
    let kind = kind.parse::<FindingKind>().ok()?;
    match kernel {
        None => Some(kind),
        Some(k) if k == builtin_kernel(kind) => Some(kind),
        Some(_) => None,
    }
}

/// `("kernel", "kind")` of `kernel/kind`, `(None, name)` of a bare name.
fn split(name: &str) -> (Option<&str>, &str) {
    match name.split_once('/') {
        Some((kernel, kind)) => (Some(kernel), kind),
        None => (None, name),
    }
}

/// `true` when `name` is a Vale style rule's name, `Style.Rule`
/// (`Google.Passive`, `write-good.Weasel`): a style's findings are of the
/// kind `style` and carry their rule's name, which a project file and a
/// suppression comment may name like a kind.
pub fn is_rule_name(name: &str) -> bool {
    let plain = |part: &str| {
        part.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    match name.split_once('.') {
        Some((style, rule)) => plain(style) && plain(rule),
        None => false,
    }
}

/// `true` when `name` (bare or `kernel/kind`) names `kind` of `kernel`.
pub fn names(name: &str, kernel: &str, kind: &str) -> bool {
    match split(name) {
        (None, k) => k == kind,
        (Some(n), k) => n == kernel && k == kind,
    }
}

/// One declared kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindEntry {
    /// The kernel that declares it.
    pub kernel: String,
    /// Its name.
    pub kind: String,
    /// What it means, for people.
    pub description: String,
}

/// Every kind a run knows: the built-in ones and those its other kernels
/// declare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindCatalog {
    entries: Vec<KindEntry>,
}

impl Default for KindCatalog {
    fn default() -> Self {
        Self::builtin()
    }
}

impl KindCatalog {
    /// The built-in kinds only.
    pub fn builtin() -> Self {
        KindCatalog {
            entries: FindingKind::ALL
                .into_iter()
                .map(|k| KindEntry {
                    kernel: builtin_kernel(k).to_owned(),
                    kind: k.as_str().to_owned(),
                    description: k.description().to_owned(),
                })
                .collect(),
        }
    }

    /// Adds the kinds `kernel` declares (`(kind, description)`); the
    /// built-in kernels' own are already there.
    pub fn add_kernel<'a>(
        &mut self,
        kernel: &str,
        kinds: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) {
        for (kind, description) in kinds {
            let known = self
                .entries
                .iter()
                .any(|e| e.kernel == kernel && e.kind == kind);
            if !known {
                self.entries.push(KindEntry {
                    kernel: kernel.to_owned(),
                    kind: kind.to_owned(),
                    description: description.to_owned(),
                });
            }
        }
    }

    /// The kinds declared by kernels other than the built-in checks.
    pub fn others(&self) -> impl Iterator<Item = &KindEntry> {
        self.entries.iter().filter(|e| {
            ![CONSISTENCY_KERNEL, NUMBERING_KERNEL, LANGUAGE_KERNEL].contains(&e.kernel.as_str())
        })
    }

    /// The names a user may give the other kernels' kinds: bare, and
    /// `kernel/kind`.
    pub fn other_names(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .others()
            .flat_map(|e| [e.kind.clone(), format!("{}/{}", e.kernel, e.kind)])
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The description of `kind` of `kernel`, when declared.
    pub fn description(&self, kernel: &str, kind: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|e| e.kernel == kernel && e.kind == kind)
            .map(|e| e.description.as_str())
    }

    /// Checks a name a user gave: it must name exactly one declared kind.
    /// The error names the kinds that exist, or the qualified names of an
    /// ambiguous one.
    pub fn check_name(&self, name: &str) -> Result<(), String> {
        // A style rule is checked against the styles that are read.
        if is_rule_name(name) {
            return Ok(());
        }
        let matching: Vec<&KindEntry> = self
            .entries
            .iter()
            .filter(|e| names(name, &e.kernel, &e.kind))
            .collect();
        match matching.len() {
            1 => Ok(()),
            0 => {
                let mut known: Vec<&str> = self.entries.iter().map(|e| e.kind.as_str()).collect();
                known.sort_unstable();
                known.dedup();
                Err(format!(
                    "unknown finding kind {name:?} (known kinds: {}; a kind of another kernel is known when that kernel is in `[kernels] run` or the pipeline)",
                    known.join(", ")
                ))
            }
            _ => {
                let qualified: Vec<String> = matching
                    .iter()
                    .map(|e| format!("{}/{}", e.kernel, e.kind))
                    .collect();
                Err(format!(
                    "finding kind {name:?} is declared by {} kernels: name one of {}",
                    matching.len(),
                    qualified.join(", ")
                ))
            }
        }
    }

    /// Checks every kind `[check]` names.
    pub fn check_section(&self, section: &CheckSection) -> Result<(), String> {
        for name in &section.disable {
            self.check_name(name)
                .map_err(|e| format!("[check] disable: {e}"))?;
        }
        for name in section.severity.keys() {
            self.check_name(name)
                .map_err(|e| format!("[check.severity]: {e}"))?;
        }
        Ok(())
    }
}

/// `[check] disable` and `[check.severity]` as they apply to the findings
/// of kernels other than the built-in checks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KindPolicy {
    disable: Vec<String>,
    severity: BTreeMap<String, Severity>,
}

impl KindPolicy {
    /// The policy of a `[check]` table.
    pub fn of(section: &CheckSection) -> Self {
        KindPolicy {
            disable: section.disable.clone(),
            severity: section.severity.clone(),
        }
    }

    /// `true` when findings of `kind` from `kernel` are not reported.
    pub fn is_disabled(&self, kernel: &str, kind: &str) -> bool {
        self.disable.iter().any(|n| names(n, kernel, kind))
    }

    /// The configured severity of `kind` from `kernel`, when there is one
    /// (a qualified name wins over a bare one).
    pub fn severity(&self, kernel: &str, kind: &str) -> Option<Severity> {
        self.severity
            .get(&format!("{kernel}/{kind}"))
            .or_else(|| self.severity.get(kind))
            .copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> KindCatalog {
        let mut c = KindCatalog::builtin();
        c.add_kernel("team", [("heading_too_long", "Long heading")]);
        c.add_kernel(
            "other",
            [("heading_too_long", "Also"), ("ai_leftover", "x")],
        );
        c
    }

    #[test]
    fn every_builtin_kind_has_one_kernel() {
        let numbering = builtin_kinds(NUMBERING_KERNEL).len();
        let consistency = builtin_kinds(CONSISTENCY_KERNEL).len();
        let language = builtin_kinds(LANGUAGE_KERNEL).len();
        assert_eq!(numbering + consistency + language, FindingKind::ALL.len());
        assert_eq!(language, FindingKind::LANGUAGE.len());
        assert_eq!(numbering, NUMBERING_KINDS.len());
        assert_eq!(
            builtin_named("md_numbering_control/missing_target"),
            Some(FindingKind::MissingTarget)
        );
        assert_eq!(builtin_named("md_consistency_scan/missing_target"), None);
        assert_eq!(builtin_named("team/ai_leftover"), None);
    }

    #[test]
    fn names_resolve_bare_or_qualified_and_ambiguity_is_named() {
        let c = catalog();
        assert!(c.check_name("terminology_drift").is_ok());
        assert!(c.check_name("team/heading_too_long").is_ok());
        let e = c.check_name("heading_too_long").expect_err("ambiguous");
        assert!(
            e.contains("other/heading_too_long") && e.contains("team/heading_too_long"),
            "{e}"
        );
        let e = c.check_name("ai_leftover").expect_err("ambiguous too");
        assert!(e.contains("md_consistency_scan/ai_leftover"), "{e}");
        let e = c.check_name("heading_to_long").expect_err("unknown");
        assert!(
            e.contains("known kinds:") && e.contains("heading_too_long"),
            "{e}"
        );
        assert!(c.check_name("nobody/heading_too_long").is_err());
        assert_eq!(
            c.description("team", "heading_too_long"),
            Some("Long heading")
        );
        assert!(c
            .other_names()
            .contains(&"team/heading_too_long".to_owned()));
        assert!(!c.other_names().contains(&"terminology_drift".to_owned()));
    }

    #[test]
    fn the_policy_matches_bare_and_qualified_names() {
        let section = CheckSection {
            disable: vec!["team/heading_too_long".into()],
            fail_on: None,
            severity: [
                ("heading_too_long".to_owned(), Severity::Info),
                ("other/heading_too_long".to_owned(), Severity::Error),
            ]
            .into(),
        };
        let p = KindPolicy::of(&section);
        assert!(p.is_disabled("team", "heading_too_long"));
        assert!(!p.is_disabled("other", "heading_too_long"));
        assert_eq!(
            p.severity("other", "heading_too_long"),
            Some(Severity::Error)
        );
        assert_eq!(
            p.severity("third", "heading_too_long"),
            Some(Severity::Info)
        );
        assert_eq!(p.severity("third", "x"), None);
    }
}
