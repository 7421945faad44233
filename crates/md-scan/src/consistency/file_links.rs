//! Links to other files: a relative link or image whose file or folder
//! does not exist (`broken_link`), and a link to a Markdown file's anchor
//! that file does not have (`broken_link_anchor`), each with the certain
//! fix when exactly one name or anchor is close.
//!
//! Only runs when the host tells what is on disk ([`LinkTargets`]). A
//! destination is tried as written first, then the way site generators
//! resolve it (MkDocs, Docusaurus, Hugo, mdBook, Jekyll): a name without
//! extension as its `.md` page or its folder's index page, an `.html` page
//! as the Markdown it is built from, and (for a link that does not name a
//! `.md` file) relative to the page's own URL folder (`guide.md` served
//! at `guide/`), where pretty URLs put it.

use super::close_anchors::CloseAnchors;
use super::link_anchors::{hides_links, ExtraAnchors, Resolution, TargetAnchors};
use super::links::{extension, is_markdown, normalize, relative_link, LinkTarget, LinkTargets};
use super::KERNEL;
use crate::budget::Budget;
use crate::document::Document;
use crate::markdown::{FileLink, MarkdownFacts};
use koas_md::line_index::ColumnCursor;
use koas_review_schema::findings::{Finding, FindingKind, Fix, FixEdit, Severity};
use std::collections::HashMap;
use std::sync::Arc;

/// Where a link's path leads.
enum Located {
    /// Nothing can be told.
    Unknown,
    /// A folder (a fragment on it is not checked).
    Folder,
    /// The file at this normalized path.
    File(String),
    /// Nothing.
    Missing,
}

/// The names a page-like path (no extension, or a trailing `/`) is served
/// from.
const PAGE_FORMS: [&str; 7] = [
    ".md",
    ".markdown",
    ".mdx",
    "/index.md",
    "/README.md",
    "/_index.md",
    "/index.mdx",
];

/// Looks `path` up as written, then as a site generator would.
fn locate(targets: &dyn LinkTargets, path: &str) -> Located {
    match targets.lookup(path) {
        LinkTarget::Unknown => return Located::Unknown,
        LinkTarget::Folder => return Located::Folder,
        LinkTarget::File => return Located::File(path.to_string()),
        LinkTarget::Missing => {}
    }
    let file =
        |candidate: String| (targets.lookup(&candidate) == LinkTarget::File).then_some(candidate);
    let forms: Vec<String> = match extension(path).as_deref() {
        None => PAGE_FORMS.iter().map(|f| format!("{path}{f}")).collect(),
        Some("html" | "htm") => {
            let stem = path.rsplit_once('.').map_or(path, |(s, _)| s);
            let mut forms: Vec<String> = [".md", ".markdown", ".mdx"]
                .iter()
                .map(|e| format!("{stem}{e}"))
                .collect();
            // `guide/index.html` is built from `guide.md` too, and by
            // mdBook from `guide/README.md`.
            if let Some(folder) = stem.strip_suffix("/index") {
                forms.push(format!("{folder}.md"));
                forms.push(format!("{folder}/README.md"));
            }
            forms
        }
        Some(_) => Vec::new(),
    };
    if let Some(found) = forms.into_iter().find_map(file) {
        return Located::File(found);
    }
    // A page named by the `id` its front matter declares.
    if extension(path).is_none() {
        let (folder, name) = path.rsplit_once('/').unwrap_or(("", path));
        if let Some((_, file)) = targets
            .page_ids(folder)
            .into_iter()
            .find(|(id, _)| id == name)
        {
            return Located::File(if folder.is_empty() {
                file
            } else {
                format!("{folder}/{file}")
            });
        }
    }
    Located::Missing
}

/// The page's own URL folder, where pretty URLs serve it (`a/guide.md` →
/// `a/guide`; an index page is served at its folder already).
fn page_folder(document: &str) -> Option<String> {
    let (stem, ext) = document.rsplit_once('.')?;
    if !matches!(ext.to_ascii_lowercase().as_str(), "md" | "markdown" | "mdx") {
        return None;
    }
    let name = stem.rsplit('/').next().unwrap_or(stem);
    if matches!(
        name.to_ascii_lowercase().as_str(),
        "index" | "readme" | "_index"
    ) {
        return None;
    }
    Some(name.to_string())
}

/// A link whose target file exists and whose fragment its anchors lack.
struct AnchorMiss<'f> {
    link: &'f FileLink,
    /// The file's normalized path.
    path: String,
    written: &'f str,
    fragment: &'f str,
}

/// Reports `facts`' relative links whose target does not exist, and their
/// fragments a Markdown target lacks. `name` is the document's file name
/// (for the page's URL folder).
pub fn detect(
    doc: &Document<'_>,
    facts: &MarkdownFacts,
    name: Option<&str>,
    targets: &dyn LinkTargets,
    extra: &ExtraAnchors,
    budget: &Budget<'_>,
    out: &mut Vec<Finding>,
) {
    let Some((missing, misses)) = classify(doc, facts, name, targets, budget) else {
        return;
    };
    let mut cursor = ColumnCursor::new();
    if !report_missing(&mut cursor, doc, targets, budget, &missing, out) || misses.is_empty() {
        return;
    }
    report_anchor_misses(&mut cursor, doc, targets, extra, budget, &misses, out);
}

/// A link to no file: the link, its path as written, its normalized path.
type MissingFile<'f> = (&'f FileLink, &'f str, String);

/// `facts`' checked links whose target file is missing, and those whose
/// target is a Markdown file with a fragment to look for. `None` when the
/// budget ran out.
fn classify<'f>(
    doc: &Document<'_>,
    facts: &'f MarkdownFacts,
    name: Option<&str>,
    targets: &dyn LinkTargets,
    budget: &Budget<'_>,
) -> Option<(Vec<MissingFile<'f>>, Vec<AnchorMiss<'f>>)> {
    let page = name.and_then(page_folder);
    let mut misses: Vec<AnchorMiss<'f>> = Vec::new();
    let mut missing: Vec<MissingFile<'f>> = Vec::new();
    for link in &facts.file_links {
        if budget.expired() {
            return None;
        }
        if (link.line..=link.line_end).any(|l| hides_links(doc.block_kind(l))) {
            continue;
        }
        let Some(rel) = relative_link(&link.destination) else {
            continue;
        };
        let path = normalize(&rel.path);
        if path.is_empty() {
            continue;
        }
        let mut located = locate(targets, &path);
        // A link to a page or an asset (not to a `.md` file) may be
        // written relative to the page's URL, as pretty URLs serve it.
        if let (Located::Missing, Some(page)) = (&located, &page) {
            if !is_markdown(&path) {
                let served = normalize(&format!("{page}/{}", rel.path));
                if let found @ (Located::File(_) | Located::Folder) = locate(targets, &served) {
                    located = found;
                }
            }
        }
        match located {
            Located::Unknown | Located::Folder => {}
            Located::File(file) => {
                // `#:~:text=…` is a browser's text fragment, no anchor.
                let Some(fragment) = rel
                    .fragment
                    .filter(|f| !f.is_empty() && !f.starts_with(":~:"))
                else {
                    continue;
                };
                // `?plain=1#L10` is a line of the source, not an anchor.
                if rel.query.is_some() || !is_markdown(&file) {
                    continue;
                }
                misses.push(AnchorMiss {
                    link,
                    path: file,
                    written: rel.written,
                    fragment,
                });
            }
            Located::Missing => missing.push((link, rel.written, path)),
        }
    }
    Some((missing, misses))
}

/// Reports the links to missing files, each with the names close to it in
/// its folder. `false` when the budget ran out.
fn report_missing(
    cursor: &mut ColumnCursor,
    doc: &Document<'_>,
    targets: &dyn LinkTargets,
    budget: &Budget<'_>,
    missing: &[MissingFile<'_>],
    out: &mut Vec<Finding>,
) -> bool {
    // Each folder's names are asked once, and its "did you mean" index
    // built once, whatever the number of links into it.
    let mut folders: HashMap<&str, Option<Vec<String>>> = HashMap::new();
    for (_, _, path) in missing {
        let folder = path.rsplit_once('/').map_or("", |(f, _)| f);
        folders
            .entry(folder)
            .or_insert_with(|| targets.names(folder));
    }
    let keyed: HashMap<&str, Names> = folders
        .iter()
        .map(|(folder, names)| (*folder, Names::new(names.as_deref().unwrap_or(&[]))))
        .collect();
    let mut indexes: HashMap<&str, StemIndexes<'_>> = HashMap::new();
    for (link, written, path) in missing {
        if budget.expired() {
            return false;
        }
        let folder = path.rsplit_once('/').map_or("", |(f, _)| f);
        let (candidates, certain) = match keyed.get(folder) {
            Some(names) => names.close_to(
                path.rsplit('/').next().unwrap_or(path),
                indexes.entry(folder).or_default(),
            ),
            None => (Vec::new(), false),
        };
        out.push(missing_file(
            cursor,
            doc,
            link,
            written,
            &candidates,
            certain,
        ));
    }
    true
}

/// Reports the links whose fragment their Markdown target lacks, with the
/// anchor close to it if there is one.
fn report_anchor_misses(
    cursor: &mut ColumnCursor,
    doc: &Document<'_>,
    targets: &dyn LinkTargets,
    extra: &ExtraAnchors,
    budget: &Budget<'_>,
    misses: &[AnchorMiss<'_>],
    out: &mut Vec<Finding>,
) {
    // Each target's anchors are asked once, and its "did you mean" index
    // built once, whatever the number of links to it.
    let mut anchors: HashMap<String, Option<Arc<TargetAnchors>>> = HashMap::new();
    for miss in misses {
        anchors
            .entry(miss.path.clone())
            .or_insert_with(|| targets.anchors(&miss.path));
    }
    // Each target's fragments resolved together (its comments read once).
    let mut by_target: HashMap<&str, Vec<&str>> = HashMap::new();
    for miss in misses {
        by_target
            .entry(miss.path.as_str())
            .or_default()
            .push(miss.fragment);
    }
    let mut resolved: HashMap<&str, std::vec::IntoIter<Resolution>> = HashMap::new();
    for (path, fragments) in by_target {
        if let Some(Some(target)) = anchors.get(path) {
            resolved.insert(
                path,
                target.resolve_all(&fragments, extra, budget).into_iter(),
            );
        }
    }
    let mut close: HashMap<&str, CloseAnchors<'_>> = HashMap::new();
    for miss in misses {
        if budget.expired() {
            return;
        }
        let (Some(Some(target)), Some(resolutions)) = (
            anchors.get(&miss.path),
            resolved.get_mut(miss.path.as_str()),
        ) else {
            continue;
        };
        let Some(resolution) = resolutions.next() else {
            continue;
        };
        let shown = format!("{}#{}", miss.written, miss.fragment);
        let finding = match resolution {
            Resolution::Found => continue,
            Resolution::Made(made_by) => {
                let mut f = anchor_finding(
                    cursor,
                    doc,
                    miss.link,
                    format!(
                        "The link points to {shown}, an anchor no heading of {} has on GitHub; it may exist on the published site (made {made_by})",
                        miss.written
                    ),
                );
                f.severity = Severity::Info;
                f
            }
            Resolution::Missing => {
                let wanted = crate::consistency::percent_decode(miss.fragment).to_lowercase();
                let found = close
                    .entry(miss.path.as_str())
                    .or_insert_with(|| target.close_index())
                    .close_to(&wanted);
                let hint = found
                    .first()
                    .map(|a| format!("; did you mean #{a}?"))
                    .unwrap_or_default();
                let f = anchor_finding(
                    cursor,
                    doc,
                    miss.link,
                    format!(
                        "The link points to {shown}, but no heading of {} has that anchor{hint}",
                        miss.written
                    ),
                );
                match found.as_slice() {
                    [only] => with_destination_fix(
                        doc,
                        f,
                        miss.link,
                        &shown,
                        &format!("{}#{only}", miss.written),
                        format!("link to {}#{only}", miss.written),
                    ),
                    _ => f,
                }
            }
        };
        out.push(finding);
    }
}

fn anchor_finding(
    cursor: &mut ColumnCursor,
    doc: &Document<'_>,
    link: &FileLink,
    message: String,
) -> Finding {
    located(
        cursor,
        doc,
        link,
        Finding::new(
            FindingKind::BrokenLinkAnchor,
            KERNEL,
            link.line,
            link.line_end,
            message,
            &link.source,
        ),
    )
}

/// `finding` at the link's column (a link over several lines keeps column
/// 1). Columns are counted on from the previous link's: counting each
/// from its line's start made a line of many links quadratic.
fn located(
    cursor: &mut ColumnCursor,
    doc: &Document<'_>,
    link: &FileLink,
    finding: Finding,
) -> Finding {
    if link.line != link.line_end {
        return finding;
    }
    let column = cursor.locate(&doc.index, link.offset).1;
    // The link alone is what an editor underlines.
    let width = u32::try_from(link.source.chars().count()).unwrap_or(0);
    finding.at_span(column, column.saturating_add(width))
}

/// The finding for a link whose file or folder does not exist, with the
/// fix to the one close name of its folder when there is one: the same
/// name in another case (GitHub and Linux tell them apart), else one a
/// renamed file would have (other hyphens, a number, a plural, a typo).
fn missing_file(
    cursor: &mut ColumnCursor,
    doc: &Document<'_>,
    link: &FileLink,
    written: &str,
    candidates: &[&str],
    certain: bool,
) -> Finding {
    let what = if link.image { "image" } else { "link" };
    let hint = candidates
        .first()
        .map(|c| format!("; did you mean {}?", with_name(written, c)))
        .unwrap_or_default();
    let mut finding = located(
        cursor,
        doc,
        link,
        Finding::new(
            FindingKind::BrokenLink,
            KERNEL,
            link.line,
            link.line_end,
            format!(
                "The {what} points to {written}, but there is no such file or folder relative to this document{hint}"
            ),
            &link.source,
        ),
    );
    if let ([only], true) = (candidates, certain) {
        // A name that needs escaping in a link is left to the writer.
        if !only.contains([' ', '(', ')', '<', '>', '%', '#', '?']) {
            let fixed = with_name(written, only);
            finding = with_destination_fix(
                doc,
                finding,
                link,
                written,
                &fixed,
                format!("{what} to {fixed}"),
            );
        }
    }
    finding
}

/// `written` with its last component replaced by `name`.
fn with_name(written: &str, name: &str) -> String {
    match written.rsplit_once(['/', '\\']) {
        Some((folder, _)) => format!("{folder}/{name}"),
        None => name.to_string(),
    }
}

/// A folder's names, keyed for "did you mean": by name in lower case
/// (the same name in another case), and by extension then by stem (lower
/// case, `_` and spaces as hyphens, as anchors are compared) for
/// [`CloseAnchors`].
struct Names {
    by_lower: HashMap<String, Vec<String>>,
    by_extension: HashMap<String, HashMap<String, Vec<String>>>,
}

/// Each extension's index of a folder's stems, built at the first link
/// that needs it.
type StemIndexes<'k> = HashMap<String, CloseAnchors<'k>>;

fn stem_key(stem: &str) -> String {
    stem.to_lowercase().replace(['_', ' '], "-")
}

fn split_extension(name: &str) -> (&str, String) {
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => (stem, ext.to_ascii_lowercase()),
        _ => (name, String::new()),
    }
}

impl Names {
    fn new(names: &[String]) -> Self {
        let mut by_lower: HashMap<String, Vec<String>> = HashMap::new();
        let mut by_extension: HashMap<String, HashMap<String, Vec<String>>> = HashMap::new();
        for name in names {
            by_lower
                .entry(name.to_lowercase())
                .or_default()
                .push(name.clone());
            let (stem, ext) = split_extension(name);
            by_extension
                .entry(ext)
                .or_default()
                .entry(stem_key(stem))
                .or_default()
                .push(name.clone());
        }
        Names {
            by_lower,
            by_extension,
        }
    }

    /// The names close to `name` (two at most): the same name in another
    /// case, else the same extension with the same stem but for case, `_`
    /// or spaces, else with a stem [`CloseAnchors`] finds close.
    ///
    /// With them, whether one alone would be a certain fix: a name that
    /// merely ends with the other (`ragix_KOAS.md` for `KOAS.md`, `guide.md`
    /// for `setup_guide.md`) is another file as often as the same one
    /// renamed, so it is only a hint.
    fn close_to<'k>(&'k self, name: &str, indexes: &mut StemIndexes<'k>) -> (Vec<&'k str>, bool) {
        if let Some(same) = self.by_lower.get(&name.to_lowercase()) {
            return (same.iter().take(2).map(String::as_str).collect(), true);
        }
        let (stem, ext) = split_extension(name);
        let Some(stems) = self.by_extension.get(&ext) else {
            return (Vec::new(), false);
        };
        let wanted = stem_key(stem);
        if let Some(same) = stems.get(&wanted) {
            return (same.iter().take(2).map(String::as_str).collect(), true);
        }
        let index = indexes
            .entry(ext)
            .or_insert_with(|| CloseAnchors::new(stems.keys().map(String::as_str)));
        let keys = index.close_to(&wanted);
        let certain = keys
            .iter()
            .all(|k| !k.ends_with(wanted.as_str()) && !wanted.ends_with(*k));
        let mut found: Vec<&'k str> = keys
            .into_iter()
            .filter_map(|k| stems.get(k))
            .flatten()
            .map(String::as_str)
            .collect();
        found.truncate(2);
        (found, certain)
    }
}

/// `finding` with the fix that rewrites the link's destination from `old`
/// (as written) to `new`, when the link is on one line and `old` is
/// found in it as its destination.
fn with_destination_fix(
    doc: &Document<'_>,
    finding: Finding,
    link: &FileLink,
    old: &str,
    new: &str,
    description: String,
) -> Finding {
    if link.line != link.line_end {
        return finding;
    }
    // The destination follows `(` or `<` and ends the path at `#`, `?`,
    // `)`, `>` or a space before a title.
    let Some(pos) = link.source.rmatch_indices(old).map(|(i, _)| i).find(|&i| {
        let before = link.source.get(..i).and_then(|s| s.chars().last());
        let after = link
            .source
            .get(i + old.len()..)
            .and_then(|s| s.chars().next());
        matches!(before, Some('(' | '<'))
            && matches!(after, Some('#' | '?' | ')' | '>' | ' ' | '\t'))
    }) else {
        return finding;
    };
    let line = doc.line(link.line);
    let start = doc.index.line_start(link.line);
    let Some(at) = link.offset.checked_sub(start) else {
        return finding;
    };
    if line.get(at..at + link.source.len()) != Some(link.source.as_str()) {
        return finding;
    }
    let mut after = line.to_string();
    after.replace_range(at + pos..at + pos + old.len(), new);
    finding.with_fix(Fix {
        description,
        edits: vec![FixEdit {
            line: link.line,
            before: line.to_string(),
            after: Some(after),
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::test_support::stage1;
    use crate::markdown;
    use std::collections::BTreeMap;

    /// Files on a pretend disk: path → Markdown text (`None` for a file
    /// that is not Markdown); folders are the paths' parents.
    struct Disk(BTreeMap<&'static str, Option<&'static str>>);

    impl Disk {
        fn folders(&self) -> Vec<String> {
            let mut folders = vec![String::new()];
            for path in self.0.keys() {
                let mut p = *path;
                while let Some((parent, _)) = p.rsplit_once('/') {
                    folders.push(parent.to_string());
                    p = parent;
                }
            }
            folders
        }
    }

    impl LinkTargets for Disk {
        fn lookup(&self, path: &str) -> LinkTarget {
            // The folder above holds nothing; the one above it may not be
            // looked at.
            if path.starts_with("../..") {
                return LinkTarget::Unknown;
            }
            if path.starts_with("..") {
                return LinkTarget::Missing;
            }
            if self.0.contains_key(path) {
                return LinkTarget::File;
            }
            let folders = self.folders();
            if folders.iter().any(|f| f == path) {
                return LinkTarget::Folder;
            }
            LinkTarget::Missing
        }

        fn names(&self, folder: &str) -> Option<Vec<String>> {
            let folders = self.folders();
            if !folders.iter().any(|f| f == folder) {
                return None;
            }
            let prefix = if folder.is_empty() {
                String::new()
            } else {
                format!("{folder}/")
            };
            let mut names: Vec<String> = self
                .0
                .keys()
                .map(|k| k.to_string())
                .chain(folders.iter().cloned())
                .filter_map(|p| {
                    let rest = p.strip_prefix(&prefix)?.to_string();
                    (!rest.is_empty()).then(|| rest.split('/').next().unwrap_or("").to_string())
                })
                .collect();
            names.sort();
            names.dedup();
            Some(names)
        }

        fn page_ids(&self, folder: &str) -> Vec<(String, String)> {
            // `CHANGELOG.md` declares `id: changes` in its front matter.
            if folder.is_empty() {
                vec![("changes".into(), "CHANGELOG.md".into())]
            } else {
                Vec::new()
            }
        }

        fn anchors(&self, path: &str) -> Option<Arc<TargetAnchors>> {
            let text = (*self.0.get(path)?)?;
            let s1 = stage1(text);
            let doc = Document::new(s1.view(text)).ok()?;
            let facts = markdown::collect(&doc);
            Some(Arc::new(TargetAnchors::of(&doc, &facts)))
        }
    }

    fn disk() -> Disk {
        Disk(BTreeMap::from([
            (
                "guide.md",
                Some("# Guide\n\n## Installing koas\n\n## 3. Retry policy\n\n<a id=\"legacy\"></a>\n"),
            ),
            ("img/plan.png", None),
            ("reference/cli.md", Some("# CLI\n\n## Options\n")),
            ("reference/index.md", Some("# Reference\n")),
            ("setup-guide.md", Some("# Setup\n")),
            ("CHANGELOG.md", Some("# Changes\n")),
            ("my file.md", Some("# Spaced\n\n## Part one\n")),
        ]))
    }

    fn scan_as(text: &str, name: &str) -> Vec<Finding> {
        let s1 = stage1(text);
        let doc = Document::new(s1.view(text)).expect("doc");
        let facts = markdown::collect(&doc);
        let extra = ExtraAnchors::new(&[]).expect("no patterns");
        let mut out = Vec::new();
        detect(
            &doc,
            &facts,
            Some(name),
            &disk(),
            &extra,
            &Budget::unlimited(),
            &mut out,
        );
        out
    }

    fn scan(text: &str) -> Vec<Finding> {
        scan_as(text, "page.md")
    }

    fn fixed_line(f: &Finding) -> Option<&str> {
        f.fix.as_ref()?.edits.first()?.after.as_deref()
    }

    #[test]
    fn links_to_what_exists_give_nothing() {
        let text = "# P\n\nSee [g](guide.md), [i](guide.md#installing-koas), [I](./guide.md#Installing-Koas), \
                    [l](guide.md#legacy), [r](reference/), [r2](reference), [c](reference/cli.md#options), \
                    ![plan](img/plan.png), [s](my%20file.md#part-one), [a](<my file.md>), \
                    [line](guide.md?plain=1#L3), [u](https://example.com/x.md), [root](/docs/nope.md), \
                    [page](setup-guide), [html](setup-guide.html), [up](../../elsewhere.md), [m](mailto:a@b.c).\n";
        let found = scan(text);
        assert!(found.is_empty(), "{found:#?}");
    }

    #[test]
    fn a_missing_file_is_an_error_with_the_one_close_name_as_fix() {
        let text = "# P\n\nRead [setup](setup_guide.md) first.\n";
        let found = scan(text);
        assert_eq!(found.len(), 1, "{found:#?}");
        let f = &found[0];
        assert_eq!(f.kind, FindingKind::BrokenLink);
        assert_eq!(f.severity, FindingKind::BrokenLink.default_severity());
        assert_eq!((f.line, f.column), (3, 6));
        assert!(f.message.contains("setup_guide.md"), "{}", f.message);
        assert!(
            f.message.contains("did you mean setup-guide.md?"),
            "{}",
            f.message
        );
        assert_eq!(fixed_line(f), Some("Read [setup](setup-guide.md) first."));
    }

    #[test]
    fn a_name_in_another_case_is_broken_on_github_and_fixed() {
        let found = scan("# P\n\n[changes](changelog.md) and ![p](img/Plan.png)\n");
        assert_eq!(found.len(), 2, "{found:#?}");
        assert_eq!(
            fixed_line(&found[0]),
            Some("[changes](CHANGELOG.md) and ![p](img/Plan.png)")
        );
        assert!(found[1]
            .message
            .starts_with("The image points to img/Plan.png"));
        assert_eq!(
            fixed_line(&found[1]),
            Some("[changes](changelog.md) and ![p](img/plan.png)")
        );
    }

    #[test]
    fn a_name_that_only_ends_like_the_missing_one_is_a_hint_not_a_fix() {
        let found = scan("# P\n\n[g](the-guide.md)\n");
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(
            found[0].message.ends_with("did you mean guide.md?"),
            "{}",
            found[0].message
        );
        assert!(found[0].fix.is_none(), "{found:#?}");
    }

    #[test]
    fn a_missing_folder_or_an_unrelated_name_has_no_fix() {
        let found = scan("# P\n\n[a](nowhere/x.md) [b](zebra.md)\n");
        assert_eq!(found.len(), 2, "{found:#?}");
        assert!(found.iter().all(|f| f.fix.is_none()), "{found:#?}");
        assert!(found.iter().all(|f| !f.message.contains("did you mean")));
    }

    #[test]
    fn a_renamed_heading_in_another_file_is_fixed() {
        let found = scan("# P\n\nSee [retries](guide.md#7-retry-policy \"title\").\n");
        assert_eq!(found.len(), 1, "{found:#?}");
        let f = &found[0];
        assert_eq!(f.kind, FindingKind::BrokenLinkAnchor);
        assert!(
            f.message.contains("guide.md#7-retry-policy, but no heading of guide.md has that anchor; did you mean #3-retry-policy?"),
            "{}",
            f.message
        );
        assert_eq!(
            fixed_line(f),
            Some("See [retries](guide.md#3-retry-policy \"title\").")
        );
    }

    #[test]
    fn anchors_are_checked_only_in_markdown_files_and_not_for_source_lines() {
        let found = scan(
            "# P\n\n[a](img/plan.png#frag) [b](guide.md?plain=1#L9) [c](reference/#nope) \
             [d](reference/cli.md#nope)\n",
        );
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].message.contains("reference/cli.md#nope"));
        assert!(found[0].fix.is_none());
    }

    #[test]
    fn a_page_is_found_by_the_id_its_front_matter_declares() {
        let found =
            scan("# P\n\n[c](changes) [a](changes#changes) [b](changes#nope) [x](changes.md)\n");
        let mut messages: Vec<&str> = found.iter().map(|f| f.message.as_str()).collect();
        messages.sort_unstable();
        assert_eq!(found.len(), 2, "{messages:#?}");
        assert!(messages[0]
            .starts_with("The link points to changes#nope, but no heading of changes has"));
        // A `.md` name is a file name, not a page ID.
        assert!(
            messages[1].starts_with("The link points to changes.md, but"),
            "{messages:#?}"
        );
    }

    #[test]
    fn links_in_code_are_not_links() {
        let found = scan("# P\n\n```md\n[x](missing.md)\n```\n\n`[y](missing.md)`\n");
        assert!(found.is_empty(), "{found:#?}");
    }

    #[test]
    fn pretty_urls_resolve_links_relative_to_the_page_folder() {
        // `topic.md` is served at `topic/`: `../guide` from there is
        // `guide`, and `../img/plan.png` is `img/plan.png`.
        let text = "# T\n\n[g](../guide) ![p](../img/plan.png) [x](../nope)\n";
        let found = scan_as(text, "topic.md");
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].message.contains("../nope"));
        // An index page is served at its own folder: no second try.
        assert_eq!(scan_as(text, "index.md").len(), 3);
        // A link to a .md file is resolved from the file, as generators
        // do: never from the page's URL folder.
        assert_eq!(scan_as("# T\n\n[g](../guide.md)\n", "topic.md").len(), 1);
    }

    #[test]
    fn reference_links_and_images_in_links_are_checked() {
        let text = "# P\n\n[![badge](img/nope.svg)](guide.md) and [ref][r]\n\n[r]: missing.md\n";
        let found = scan(text);
        let names: Vec<&str> = found.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(found.len(), 2, "{names:#?}");
        assert!(names[0].contains("img/nope.svg"));
        assert!(names[1].contains("missing.md"));
    }
}
