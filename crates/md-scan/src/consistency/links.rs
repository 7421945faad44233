//! Links between files: what a host that sees the file system tells the
//! link check about a document's relative links (`[guide](setup.md)`,
//! `![plan](img/plan.png)`), and how a destination is read into a path.
//!
//! The check itself ([`crate::Checker::check_linked`]) reads no file: the
//! host answers [`LinkTargets::lookup`] (is there a file or folder there?)
//! and [`LinkTargets::anchors`] (the anchors of a Markdown file, from
//! [`anchors_of`]). Nothing goes on the network: a
//! destination with a scheme (`https:`, `mailto:`), a protocol-relative or
//! root-relative one (`//host/x`, `/docs/x`: where a site puts its root is
//! the site's), and one holding template syntax (`{{ … }}`) are not
//! checked.

pub use super::TargetAnchors;
use std::sync::Arc;

/// What is at a path a link names, as the host sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkTarget {
    /// Nothing can be told (outside what the host may read, or it could
    /// not be read): no finding.
    Unknown,
    /// Nothing by that name.
    Missing,
    /// A folder.
    Folder,
    /// A file.
    File,
}

/// The host's view of the files around a document.
///
/// Paths are relative to the document's folder, `/`-separated,
/// percent-decoded and normalized ([`normalize`]: no `.` component, `..`
/// only at the start); the host resolves them and decides what may be
/// looked at (a server keeps to its root). A name must match exactly, case
/// included: that is how the published site and GitHub resolve it.
pub trait LinkTargets: Sync {
    /// What is at `path`.
    fn lookup(&self, path: &str) -> LinkTarget;
    /// The file and folder names of the folder `folder` (`""`: the
    /// document's), for "did you mean"; `None` when it is not a folder
    /// that may be read. Asked once per folder, whatever the number of
    /// links into it.
    fn names(&self, folder: &str) -> Option<Vec<String>>;
    /// The anchors of the Markdown file at `path`, or `None` when it
    /// cannot be read as one (not a regular file, too large, not UTF-8,
    /// outside what may be read).
    fn anchors(&self, path: &str) -> Option<Arc<TargetAnchors>>;
    /// The page names the Markdown files of the folder `folder` declare in
    /// their front matter (`id: configuration` in `Configuration.md`), each
    /// with the file's name: Docusaurus serves a page under its `id` (or
    /// relative `slug`), and links name it so. None by default.
    fn page_ids(&self, folder: &str) -> Vec<(String, String)> {
        let _ = folder;
        Vec::new()
    }
}

/// The anchors of a Markdown file, for the links of other documents that
/// point to it ([`LinkTargets::anchors`]): its headings' anchors, explicit
/// and HTML IDs, and those a site generator makes. The project's
/// `extra_anchors` are the linking document's, applied when a link is
/// checked.
pub fn anchors_of(text: &str) -> Result<TargetAnchors, crate::ScanError> {
    use crate::document::Document;
    let mut facts = crate::markdown::FactsReader::default();
    let stage1 = crate::stage1::Stage1Artifacts::compute_observed(
        text,
        koas_review_schema::stage1::ChunkConfig::default(),
        |index, event, range| facts.read(index, event, range),
    );
    let doc = Document::new(stage1.view(text))?;
    let facts = crate::markdown::collect_with(&doc, facts.finish());
    Ok(TargetAnchors::of(&doc, &facts))
}

/// A relative destination split into its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelativeLink<'a> {
    /// The path as written (before `?` and `#`), still percent-encoded.
    pub written: &'a str,
    /// The path percent-decoded (`my%20file.md` → `my file.md`).
    pub path: String,
    /// The query, without `?` (`plain=1`), if any.
    pub query: Option<&'a str>,
    /// The fragment, without `#`, if any.
    pub fragment: Option<&'a str>,
}

/// The parts of `destination` when it is a path relative to the
/// document's folder; `None` for a URL with a scheme, `//host`, a
/// root-relative `/path`, a same-document `#fragment`, an empty path and
/// template syntax.
pub fn relative_link(destination: &str) -> Option<RelativeLink<'_>> {
    let d = destination.trim();
    if d.is_empty()
        || d.starts_with(['#', '/', '\\', '?', '~'])
        || has_scheme(d)
        || ["{{", "}}", "{%", "%}", "${", "<%", "%>"]
            .iter()
            .any(|t| d.contains(t))
    {
        return None;
    }
    let (before_fragment, fragment) = match d.split_once('#') {
        Some((p, f)) => (p, Some(f)),
        None => (d, None),
    };
    let (written, query) = match before_fragment.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (before_fragment, None),
    };
    if written.is_empty() {
        return None;
    }
    Some(RelativeLink {
        written,
        path: super::percent_decode(written),
        query,
        fragment,
    })
}

/// `true` when `d` starts with a URL scheme (`https:`, `mailto:`,
/// `data:`): letters, then letters, digits, `+`, `-` or `.`, then `:`.
fn has_scheme(d: &str) -> bool {
    let Some((scheme, _)) = d.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// `path` (relative, `/`-separated; `\` counts as `/`) with `.` components
/// and empty ones dropped and each `..` taking off the component before it
/// when there is one; `..` left at the start climb above the document's
/// folder. The trailing `/` of a folder is dropped.
pub fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    parts.join("/")
}

/// The extension of the last component of `path`, in lower case (`None`
/// when it has none: `setup`, `.github`).
pub fn extension(path: &str) -> Option<String> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let (stem, ext) = name.rsplit_once('.')?;
    (!stem.is_empty() && !ext.is_empty()).then(|| ext.to_ascii_lowercase())
}

/// `true` for the files whose anchors a fragment is checked against.
pub fn is_markdown(path: &str) -> bool {
    matches!(extension(path).as_deref(), Some("md" | "markdown"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_relative_paths_are_links_to_check() {
        for d in [
            "https://example.com/a.md",
            "mailto:x@y.z",
            "data:image/png;base64,AAA",
            "//cdn.example.com/x.js",
            "/docs/setup.md",
            "#top",
            "?plain=1",
            "{{ site.baseurl }}/x.md",
            "{% link a.md %}",
            "${base}/x.md",
            "",
            "   ",
        ] {
            assert_eq!(relative_link(d), None, "{d}");
        }
        let l = relative_link("../guide/my%20file.md?plain=1#L10").expect("relative");
        assert_eq!(l.written, "../guide/my%20file.md");
        assert_eq!(l.path, "../guide/my file.md");
        assert_eq!(l.query, Some("plain=1"));
        assert_eq!(l.fragment, Some("L10"));
        let l = relative_link("setup.md#install").expect("relative");
        assert_eq!(
            (l.path.as_str(), l.fragment, l.query),
            ("setup.md", Some("install"), None)
        );
        // A colon later in the path is no scheme.
        assert!(relative_link("notes/10:30.md").is_some());
        assert!(relative_link("a b/c:d.md").is_some());
    }

    #[test]
    fn paths_are_normalized_lexically() {
        assert_eq!(normalize("./a/./b/../c.md"), "a/c.md");
        assert_eq!(normalize("../../x/y/"), "../../x/y");
        assert_eq!(normalize("a/../../b.md"), "../b.md");
        assert_eq!(normalize("a\\b.md"), "a/b.md");
        assert_eq!(normalize("./"), "");
    }

    #[test]
    fn extensions_and_markdown_files() {
        assert_eq!(extension("a/b.MD").as_deref(), Some("md"));
        assert_eq!(extension("a/setup"), None);
        assert_eq!(extension(".github"), None);
        assert!(is_markdown("x/README.markdown"));
        assert!(!is_markdown("x/plan.png"));
    }
}
