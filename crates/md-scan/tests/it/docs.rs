//! The `koas.toml` examples of docs/check.md parse and compile, so the
//! documentation cannot drift from the config keys.

use koas_md_scan::config::ProjectConfig;
use koas_md_scan::Checker;
use std::path::Path;

#[test]
fn every_toml_example_in_the_check_docs_is_a_valid_project_config() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/check.md");
    let text = std::fs::read_to_string(&path).expect("docs/check.md is readable");
    let blocks: Vec<&str> = text
        .split("```toml\n")
        .skip(1)
        .filter_map(|rest| rest.split("```").next())
        .collect();
    assert!(blocks.len() >= 2, "docs/check.md shows koas.toml examples");
    for block in blocks {
        let config = ProjectConfig::from_toml_str(block, &path)
            .unwrap_or_else(|e| panic!("{e}\n--- in ---\n{block}"));
        Checker::new(&config).unwrap_or_else(|e| panic!("{e}\n--- in ---\n{block}"));
    }
}

#[test]
fn every_kind_has_the_anchor_its_documentation_link_names() {
    use koas_review_schema::findings::FindingKind;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/check.md");
    let text = std::fs::read_to_string(&path).expect("docs/check.md is readable");
    for kind in FindingKind::ALL {
        let url = kind.doc_url("https://example.test/koas/");
        let fragment = url.rsplit('#').next().unwrap_or_default();
        assert_eq!(
            url,
            format!(
                "https://example.test/koas/blob/main/docs/check.md#{}",
                kind.as_str()
            )
        );
        assert_eq!(
            text.matches(&format!("<a id=\"{fragment}\"></a>")).count(),
            1,
            "docs/check.md has one row anchored {fragment}"
        );
    }
}
