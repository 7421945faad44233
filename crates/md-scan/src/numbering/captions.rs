//! Figure, table and equation captions and the references to them.
//!
//! A caption is a line that starts (after block-quote markers, emphasis or
//! an image's `![`) with a caption word and a number followed by a
//! separator or the end of the line: `Figure 3: Flux`, `Table 2 – Nodes`,
//! `Tableau 1 : Vulnérabilités`, `**Fig. 4.** …`, `Équation 2`. Numbers may
//! be hierarchical (`Figure 3.2`, `Table 4-1`): each prefix then has its
//! own sequence. A reference is a caption word and a number anywhere else
//! in the prose ("Figure 2 shows", "dans le tableau 2").

use super::KERNEL;
use crate::config::NumberingConfig;
use crate::document::Document;
use crate::evidence::around;
use crate::gate::{Gated, Needles, Warm};
use crate::words::CharClass;
use crate::ScanError;
use koas_review_schema::findings::{Finding, FindingKind};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::LazyLock;

/// What a caption numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CaptionKind {
    /// A figure.
    Figure = 0,
    /// A table.
    Table = 1,
    /// An equation.
    Equation = 2,
}

impl CaptionKind {
    /// The lowercase English name, used in messages whatever the caption's
    /// language.
    pub fn name(self) -> &'static str {
        match self {
            CaptionKind::Figure => "figure",
            CaptionKind::Table => "table",
            CaptionKind::Equation => "equation",
        }
    }
}

/// A number as `(chapter prefix, number)`: `3.2` → `(Some(3), 2)`.
pub type Number = (Option<u32>, u32);

fn format_number((prefix, n): Number) -> String {
    match prefix {
        Some(p) => format!("{p}.{n}"),
        None => n.to_string(),
    }
}

fn parse_number(s: &str) -> Option<Number> {
    match s.split_once(['.', '-']) {
        Some((p, n)) => Some((Some(p.parse().ok()?), n.parse().ok()?)),
        None => Some((None, s.parse().ok()?)),
    }
}

/// A caption line: a figure, table or equation label at the start of a
/// line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caption {
    /// What it numbers.
    pub kind: CaptionKind,
    /// Its number, with the chapter prefix when it has one.
    pub number: Number,
    /// Its line (1-based).
    pub line: u32,
    /// The label as written, e.g. `Tableau 1`.
    pub label: String,
    /// The caption word as written, e.g. `Tableau`.
    pub word: String,
    /// Byte range of the label in the line.
    pub span: (usize, usize),
    /// `true` for an image's alt text (`![Figure 3](runtime.png)`).
    pub from_alt: bool,
}

/// A reference to a figure, table or equation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetRef {
    /// What it refers to.
    pub kind: CaptionKind,
    /// The number referred to.
    pub number: Number,
    /// The line of the reference (1-based).
    pub line: u32,
    /// The reference as written, e.g. `tableau 2`.
    pub text: String,
    /// Byte range in the line.
    pub span: (usize, usize),
}

/// The compiled caption and reference patterns.
pub struct CaptionScan {
    caption: Gated,
    reference: Gated,
    words: HashMap<String, CaptionKind>,
}

/// `[\p{L}\p{N}_]` as ranges, read from the regex engine's own Unicode
/// tables (parsed, not compiled into a regex).
static WORD_CHARS: LazyLock<Option<CharClass>> =
    LazyLock::new(|| CharClass::parse(r"[\p{L}\p{N}_]"));

/// `true` when the character before `at` in `text` is a letter, a digit
/// (any script) or `_`.
fn preceded_by_word_char(text: &str, at: usize) -> bool {
    let Some(c) = text[..at].chars().next_back() else {
        return false;
    };
    match WORD_CHARS.as_ref() {
        Some(class) => class.contains(c),
        // The tables could not be read (they always can): std's view.
        None => c.is_alphanumeric() || c == '_',
    }
}

/// The (word, number) of each reference of `prose`: the matches of `re`
/// whose word follows no letter, digit or `_`, found as a pattern that
/// required that boundary would find them (a rejected word is searched
/// again from its next character; an accepted one from its end).
fn references_in<'t>(
    re: &regex::Regex,
    prose: &'t str,
) -> Vec<(regex::Match<'t>, regex::Match<'t>)> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(c) = re.captures_at(prose, at) {
        let (Some(w), Some(n)) = (c.name("word"), c.name("num")) else {
            break;
        };
        if preceded_by_word_char(prose, w.start()) {
            at = w.start() + prose[w.start()..].chars().next().map_or(1, char::len_utf8);
            continue;
        }
        at = n.end().max(w.start() + 1);
        out.push((w, n));
    }
    out
}

fn word_alternation(words: &[(String, CaptionKind)], plurals: bool) -> String {
    let mut sorted: Vec<&String> = words.iter().map(|(w, _)| w).collect();
    sorted.sort_by_key(|w| std::cmp::Reverse(w.chars().count()));
    sorted
        .iter()
        .map(|w| {
            let escaped = regex::escape(w);
            if plurals && !w.ends_with('.') {
                format!("{escaped}(?:s|x)?")
            } else {
                escaped
            }
        })
        .collect::<Vec<_>>()
        .join("|")
}

impl CaptionScan {
    /// Compiles the patterns for the configured words.
    pub fn new(config: &NumberingConfig) -> Result<Self, ScanError> {
        let mut words: Vec<(String, CaptionKind)> = Vec::new();
        for (list, kind) in [
            (&config.figure_words, CaptionKind::Figure),
            (&config.table_words, CaptionKind::Table),
            (&config.equation_words, CaptionKind::Equation),
        ] {
            words.extend(
                list.iter()
                    .map(|w| w.trim())
                    .filter(|w| !w.is_empty())
                    .map(|w| (w.to_string(), kind)),
            );
        }
        if words.is_empty() {
            return Err(ScanError::InvalidConfig {
                key: "figure_words".into(),
                reason: "at least one caption word is needed".into(),
            });
        }
        // Every match holds a caption word, and is kept only when its number
        // parses, in ASCII digits: lines without both are skipped and the
        // patterns are compiled only if a line has both.
        let needles = Needles::from_words(words.iter().map(|(w, _)| w.as_str())).and_ascii_digit();
        // The words are escaped: the patterns are valid whatever they are.
        let compile = |_key: &str, pattern: String| -> Result<Gated, ScanError> {
            Ok(Gated::new(pattern, needles.clone()))
        };
        let caption = compile(
            "figure_words",
            format!(
                r"(?i)^[\s>]*(?:!\[)?(?:\*\*|__|\*|_)?\s*(?P<word>{})\s*(?P<num>\d{{1,3}}(?:[.-]\d{{1,3}})?)\s*(?:\*\*|__|\*|_)?\s*(?:[:.–—\]-]|$)",
                word_alternation(&words, false)
            ),
        )?;
        let reference = compile(
            "figure_words",
            // The word must not follow a letter, a digit or `_`: checked on
            // each match (`preceded_by_word_char`), not by a class in the
            // pattern, which would cost ten times more to compile and run.
            format!(
                r"(?i)(?P<word>{})\s*(?:n°\s*)?\(?(?P<num>\d{{1,3}}(?:\.\d{{1,3}})?)\b",
                word_alternation(&words, true)
            ),
        )?;
        let words = words
            .into_iter()
            .map(|(w, k)| (w.to_lowercase(), k))
            .collect();
        Ok(CaptionScan {
            caption,
            reference,
            words,
        })
    }

    /// Compiles ahead the caption and reference patterns `text` may need.
    pub fn warm<'a>(&'a self, text: &'a str, jobs: &mut Vec<Warm<'a>>) {
        jobs.push(Box::new(move || {
            if self.reference.warm(text) {
                LazyLock::force(&WORD_CHARS);
            }
        }));
        jobs.push(Box::new(move || {
            self.caption.warm(text);
        }));
    }

    fn kind_of(&self, word: &str) -> Option<CaptionKind> {
        let w = word.to_lowercase();
        self.words.get(&w).copied().or_else(|| {
            let singular = w.strip_suffix('s').or_else(|| w.strip_suffix('x'))?;
            self.words.get(singular).copied()
        })
    }

    /// The captions and references of the document, in order.
    pub fn collect(&self, doc: &Document<'_>) -> (Vec<Caption>, Vec<TargetRef>) {
        let mut captions = Vec::new();
        let mut refs = Vec::new();
        for line in 1..=doc.line_count() {
            if doc.is_heading(line) {
                continue;
            }
            let Some(prose) = doc.prose(line) else {
                continue;
            };
            let mut caption_word_start = None;
            let Some(caption_re) = self.caption.for_text(prose) else {
                continue;
            };
            if let Some(c) = caption_re.captures(prose) {
                if let (Some(w), Some(n)) = (c.name("word"), c.name("num")) {
                    if let (Some(kind), Some(number)) =
                        (self.kind_of(w.as_str()), parse_number(n.as_str()))
                    {
                        caption_word_start = Some(w.start());
                        captions.push(Caption {
                            kind,
                            number,
                            line,
                            label: prose[w.start()..n.end()].to_string(),
                            word: w.as_str().to_string(),
                            span: (w.start(), n.end()),
                            from_alt: prose[..w.start()].contains("!["),
                        });
                    }
                }
            }
            let Some(reference_re) = self.reference.for_text(prose) else {
                continue;
            };
            for (w, n) in references_in(reference_re, prose) {
                if Some(w.start()) == caption_word_start {
                    continue;
                }
                let (Some(kind), Some(number)) =
                    (self.kind_of(w.as_str()), parse_number(n.as_str()))
                else {
                    continue;
                };
                refs.push(TargetRef {
                    kind,
                    number,
                    line,
                    text: prose[w.start()..n.end()].to_string(),
                    span: (w.start(), n.end()),
                });
            }
        }
        (captions, refs)
    }
}

/// Pairs each image whose alt text is a caption with the visible caption
/// next to it (the nearest non-blank line above or below, at most two
/// lines away): they name one figure, so only the visible caption enters
/// the sequence. When their numbers differ the alt text is wrong (a copied
/// image line), which is reported.
pub fn merge_alt_captions(
    doc: &Document<'_>,
    captions: Vec<Caption>,
    out: &mut Vec<Finding>,
) -> Vec<Caption> {
    let visible: HashMap<u32, &Caption> = captions
        .iter()
        .filter(|c| !c.from_alt)
        .map(|c| (c.line, c))
        .collect();
    let neighbour = |line: u32, step: i64| -> Option<&Caption> {
        let mut l = i64::from(line);
        for _ in 0..2 {
            l += step;
            let l32 = u32::try_from(l)
                .ok()
                .filter(|&x| x >= 1 && x <= doc.line_count())?;
            if !doc.index.is_blank(l32) {
                return visible.get(&l32).copied();
            }
        }
        None
    };
    let mut dropped: HashSet<u32> = HashSet::new();
    for c in captions.iter().filter(|c| c.from_alt) {
        let Some(v) = neighbour(c.line, 1)
            .or_else(|| neighbour(c.line, -1))
            .filter(|v| v.kind == c.kind)
        else {
            continue;
        };
        dropped.insert(c.line);
        if v.number != c.number {
            out.push(
                Finding::new(
                    FindingKind::CaptionMismatch,
                    KERNEL,
                    c.line,
                    c.line,
                    format!(
                        "The image's alt text says {}, but its caption (line {}) says {}: screen readers and pages without the caption show the wrong number",
                        c.label, v.line, v.label
                    ),
                    &around(doc.line(c.line), c.span.0, c.span.1),
                )
                .at_column(doc.column(c.line, c.span.0)),
            );
        }
    }
    captions
        .into_iter()
        .filter(|c| !(c.from_alt && dropped.contains(&c.line)))
        .collect()
}

/// Reports gaps, duplicates and out-of-order numbers in each sequence.
pub fn check_sequences(doc: &Document<'_>, captions: &[Caption], out: &mut Vec<Finding>) {
    let mut sequences: BTreeMap<(CaptionKind, Option<u32>), Vec<&Caption>> = BTreeMap::new();
    for c in captions {
        sequences.entry((c.kind, c.number.0)).or_default().push(c);
    }
    for ((kind, prefix), seq) in sequences {
        let mut seen: HashMap<u32, u32> = HashMap::new();
        let mut highest = 0u32;
        for c in seq {
            let n = c.number.1;
            let name = kind.name();
            if let Some(&first) = seen.get(&n) {
                out.push(Finding::new(
                    FindingKind::NumberingDuplicate,
                    KERNEL,
                    c.line,
                    c.line,
                    format!(
                        "{} is used a second time: the {name} caption at line {first} already has this number",
                        c.label
                    ),
                    &around(doc.line(c.line), c.span.0, c.span.1),
                ));
                continue;
            }
            seen.insert(n, c.line);
            let expected = highest + 1;
            if n > expected {
                let missing = if n == expected + 1 {
                    format!("{name} {} is missing", format_number((prefix, expected)))
                } else {
                    format!(
                        "{name}s {} to {} are missing",
                        format_number((prefix, expected)),
                        format_number((prefix, n - 1))
                    )
                };
                let after = if highest == 0 {
                    "the numbering starts here".to_string()
                } else {
                    format!("it follows {} {}", c.word, format_number((prefix, highest)))
                };
                out.push(Finding::new(
                    FindingKind::NumberingGap,
                    KERNEL,
                    c.line,
                    c.line,
                    format!("{}: {after}, so {missing}", c.label),
                    &around(doc.line(c.line), c.span.0, c.span.1),
                ));
            } else if n < highest {
                out.push(Finding::new(
                    FindingKind::NumberingGap,
                    KERNEL,
                    c.line,
                    c.line,
                    format!(
                        "{} comes after {} {}: {name}s are out of order",
                        c.label,
                        c.word,
                        format_number((prefix, highest))
                    ),
                    &around(doc.line(c.line), c.span.0, c.span.1),
                ));
            }
            highest = highest.max(n);
        }
    }
}

/// Reports references to numbers no caption carries, for kinds the
/// document captions at least once (unless `needs_captions` is false).
pub fn check_references(
    doc: &Document<'_>,
    captions: &[Caption],
    refs: &[TargetRef],
    needs_captions: bool,
    out: &mut Vec<Finding>,
) {
    let existing: HashSet<(CaptionKind, Number)> =
        captions.iter().map(|c| (c.kind, c.number)).collect();
    let captioned: HashSet<CaptionKind> = captions.iter().map(|c| c.kind).collect();
    let mut reported: HashSet<(u32, CaptionKind, Number)> = HashSet::new();
    for r in refs {
        if existing.contains(&(r.kind, r.number))
            || (needs_captions && !captioned.contains(&r.kind))
        {
            continue;
        }
        if !reported.insert((r.line, r.kind, r.number)) {
            continue;
        }
        let mut labels: Vec<&str> = captions
            .iter()
            .filter(|c| c.kind == r.kind)
            .map(|c| c.label.as_str())
            .collect();
        labels.dedup();
        let known = if labels.is_empty() {
            format!("the document captions no {}", r.kind.name())
        } else {
            format!("captions found: {}", labels.join(", "))
        };
        out.push(Finding::new(
            FindingKind::MissingTarget,
            KERNEL,
            r.line,
            r.line,
            format!(
                "“{}” refers to {} {}, which does not exist ({known})",
                r.text,
                r.kind.name(),
                format_number(r.number)
            ),
            &around(doc.line(r.line), r.span.0, r.span.1),
        ));
    }
}

#[cfg(test)]
mod references_tests {
    use super::*;
    use proptest::prelude::*;

    fn words() -> Vec<(String, CaptionKind)> {
        let c = NumberingConfig::default();
        c.figure_words
            .iter()
            .map(|w| (w.clone(), CaptionKind::Figure))
            .chain(
                c.table_words
                    .iter()
                    .map(|w| (w.clone(), CaptionKind::Table)),
            )
            .chain(
                c.equation_words
                    .iter()
                    .map(|w| (w.clone(), CaptionKind::Equation)),
            )
            .collect()
    }

    /// The reference pattern, with `before` ahead of the word.
    fn reference_pattern(before: &str) -> regex::Regex {
        regex::Regex::new(&format!(
            r"(?i){before}(?P<word>{})\s*(?:n°\s*)?\(?(?P<num>\d{{1,3}}(?:\.\d{{1,3}})?)\b",
            word_alternation(&words(), true)
        ))
        .expect("valid")
    }

    /// What the pattern with the boundary in it found.
    fn with_class(prose: &str) -> Vec<(usize, usize)> {
        reference_pattern(r"(?:^|[^\p{L}\p{N}_])")
            .captures_iter(prose)
            .filter_map(|c| Some((c.name("word")?.start(), c.name("num")?.end())))
            .collect()
    }

    fn without_class(prose: &str) -> Vec<(usize, usize)> {
        references_in(&reference_pattern(""), prose)
            .into_iter()
            .map(|(w, n)| (w.start(), n.end()))
            .collect()
    }

    #[test]
    fn the_boundary_is_checked_like_the_class_did() {
        for t in [
            "see Figure 3 and table 4.2",
            "xFigure 3, Figure 4",
            "_Table 1 (Table 2)",
            "éFigure 1 Figure 2",
            "Figure 1Figure 2",
            "Tableaux 3",
            "figure n° 5",
            "٣Figure 2",
        ] {
            assert_eq!(without_class(t), with_class(t), "{t}");
        }
    }

    proptest! {
        #[test]
        fn the_same_references_are_found(
            parts in proptest::collection::vec("(Figure|Fig\\.|table|Tableaux|équation|ÉQ\\.|x|é|_|٣| |\\(|n°|1|23|4\\.5|,)", 0..12)
        ) {
            let t = parts.concat();
            prop_assert_eq!(without_class(&t), with_class(&t), "{}", t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::test_support::stage1;

    fn run(text: &str) -> (Vec<Caption>, Vec<TargetRef>, Vec<Finding>) {
        let s1 = stage1(text);
        let doc = Document::new(s1.view(text)).expect("doc");
        let scan = CaptionScan::new(&NumberingConfig::default()).expect("compiles");
        let (captions, refs) = scan.collect(&doc);
        let mut out = Vec::new();
        check_sequences(&doc, &captions, &mut out);
        check_references(&doc, &captions, &refs, true, &mut out);
        (captions, refs, out)
    }

    #[test]
    fn recognises_english_and_french_captions() {
        let text = "# T\n\nFigure 1: A.\n\nTable 2 – B.\n\nTableau 1 : C.\n\n**Fig. 4.** D\n\nÉquation 2\n\n![Figure 5: E](e.png)\n\nFigure 2 shows things.\n";
        let (captions, refs, _) = run(text);
        let got: Vec<(CaptionKind, u32, u32)> = captions
            .iter()
            .map(|c| (c.kind, c.number.1, c.line))
            .collect();
        assert_eq!(
            got,
            [
                (CaptionKind::Figure, 1, 3),
                (CaptionKind::Table, 2, 5),
                (CaptionKind::Table, 1, 7),
                (CaptionKind::Figure, 4, 9),
                (CaptionKind::Equation, 2, 11),
                (CaptionKind::Figure, 5, 13),
            ]
        );
        assert_eq!(refs.len(), 1);
        assert_eq!((refs[0].line, refs[0].number), (15, (None, 2)));
    }

    #[test]
    fn gaps_duplicates_and_order() {
        let text = "# T\n\nFigure 1: a\n\nFigure 3: b\n\nTable 1: c\n\nTable 2: d\n\nTable 2: e\n\nFigure 2: f\n";
        let (_, _, found) = run(text);
        let kinds: Vec<(FindingKind, u32)> = found.iter().map(|f| (f.kind, f.line)).collect();
        assert_eq!(
            kinds,
            [
                (FindingKind::NumberingGap, 5),
                (FindingKind::NumberingGap, 13),
                (FindingKind::NumberingDuplicate, 11),
            ]
        );
        assert!(
            found[0].message.contains("figure 2 is missing"),
            "{}",
            found[0].message
        );
        assert!(found[2].message.contains("line 9"));
    }

    #[test]
    fn hierarchical_numbers_have_one_sequence_per_prefix() {
        let (_, _, found) =
            run("# T\n\nFigure 1.1: a\n\nFigure 1.2: b\n\nFigure 2.1: c\n\nFigure 2.3: d\n");
        assert_eq!(found.len(), 1);
        assert!(
            found[0].message.contains("figure 2.2 is missing"),
            "{}",
            found[0].message
        );
    }

    #[test]
    fn missing_targets_only_for_captioned_kinds() {
        let text = "# T\n\nSee Figure 2, Figure 1 and Table 9; voir le tableau 2 et l'équation 3.\n\nFigure 1: a\n\nTableau 1 : b\n";
        let (_, _, found) = run(text);
        let msgs: Vec<&str> = found.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(found.len(), 3, "{msgs:?}");
        assert!(msgs[0].contains("figure 2"));
        assert!(msgs[1].contains("table 9"));
        assert!(msgs[2].contains("table 2"));
        assert!(found
            .iter()
            .all(|f| f.kind == FindingKind::MissingTarget && f.line == 3));
    }

    /// Regression: an image whose alt text is a caption with the wrong
    /// number was not seen, and `_Figure N_` lines are captions too.
    #[test]
    fn alt_text_captions_are_paired_with_the_visible_caption() {
        let text = "# T\n\n![Figure 1](a.png)\n\n_Figure 1_: Flow\n\n![Figure 2](b.png)\n*Figure 2: Store*\n\n![Figure 3](runtime.png)\n\n_Figure 3_\n\n![Figure 3](d.png)\n\n*Figure 4: Runtime*\n";
        let s1 = stage1(text);
        let doc = Document::new(s1.view(text)).expect("doc");
        let scan = CaptionScan::new(&NumberingConfig::default()).expect("compiles");
        let (captions, _) = scan.collect(&doc);
        assert_eq!(captions.iter().filter(|c| c.from_alt).count(), 4);
        let mut out = Vec::new();
        let kept = merge_alt_captions(&doc, captions, &mut out);
        assert_eq!(kept.len(), 4);
        assert!(kept.iter().all(|c| !c.from_alt));
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].kind, FindingKind::CaptionMismatch);
        assert_eq!((out[0].line, out[0].column), (14, 3));
        assert!(out[0].message.contains("Figure 4"), "{}", out[0].message);
        check_sequences(&doc, &kept, &mut out);
        assert_eq!(out.len(), 1, "the visible captions are in order");
    }

    #[test]
    fn an_alt_caption_alone_enters_the_sequence() {
        let (_, _, found) = run("# T\n\n![Figure 1](a.png)\n\n![Figure 3](b.png)\n");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].kind, FindingKind::NumberingGap);
    }

    #[test]
    fn code_and_headings_hold_no_captions() {
        let (captions, refs, _) =
            run("# Figure 1: title\n\n```\nFigure 2: code\n```\n\n`Table 3` inline\n");
        assert!(captions.is_empty() && refs.is_empty());
    }
}
