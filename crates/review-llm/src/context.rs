//! What the model reviewing one chunk is shown, within a token budget.
//!
//! A chunk alone lacks the rest of the document: which terms it defines,
//! what the neighbouring sections say. The context adds, in this order of
//! priority, with these shares of the budget:
//!
//! | priority | part | share |
//! |---|---|---|
//! | 1 | the chunk | 40 % (always, whole) |
//! | 2 | the instructions | 8 % (always, whole) |
//! | 3 | the document abstract (level 0) | 14 % |
//! | 4 | the chunk's top-level section summary (level 1) | 10 % |
//! | 5 | the findings of the deterministic checks in the chunk | 6 % |
//! | 6 | the chunk's subsection summary (level 2) | 5 % |
//! | 7 | the two nearest sibling sections' summaries (level 1) | 10 % |
//! | 8 | the glossary | 5 % |
//!
//! A part larger than its share is cut (whole items or sentences) or, when
//! too little would remain, dropped; a part that does not fit in what is
//! left of the budget is dropped. So a 4K-token model sees the chunk, the
//! instructions and a few summaries, and a 128K model everything. The
//! *tier* decides which parts are wanted at all, from the skeleton (tier
//! 0: chunk and instructions) to the full context (tier 3).

use koas_review_schema::findings::Finding;
use koas_review_schema::findings::ReviewSeverity;
use koas_review_schema::pyramid::{
    GlossaryTerm, Pyramid, PyramidNode, PyramidStatus, ABSTRACT_NODE_ID,
};
use serde::Serialize;

use crate::estimate_tokens;

/// How much context a prompt carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// The chunk and the instructions only: large chunks, or a model that
    /// degenerates with more.
    Skeleton = 0,
    /// And the chunk's section summary: the default for local models.
    Section = 1,
    /// And the document abstract and the findings in the chunk.
    Abstract = 2,
    /// Everything: subsection, siblings, glossary (large-context models).
    Full = 3,
}

impl Tier {
    /// The tier of a number 0–3 (larger numbers are `Full`).
    pub fn from_number(n: u8) -> Tier {
        match n {
            0 => Tier::Skeleton,
            1 => Tier::Section,
            2 => Tier::Abstract,
            _ => Tier::Full,
        }
    }

    /// 0–3.
    pub fn number(self) -> u8 {
        self as u8
    }

    /// The next tier up, at most `Full`.
    pub fn up(self) -> Tier {
        Tier::from_number(self.number() + 1)
    }
}

/// The tier for a chunk of `chunk_tokens` in a prompt of `budget` tokens:
/// the skeleton when the chunk already takes most of the budget, the full
/// context for a large-context model, else `default`.
pub fn compute_tier(chunk_tokens: u32, budget: u32, default: Tier) -> Tier {
    if u64::from(chunk_tokens) * 10 > u64::from(budget) * 6 {
        Tier::Skeleton
    } else if budget >= 32_000 {
        Tier::Full
    } else {
        default
    }
}

/// A part of the context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PartKind {
    /// The chunk under review.
    Chunk,
    /// What the model must do.
    Instructions,
    /// The document abstract.
    Abstract,
    /// The chunk's top-level section summary.
    Section,
    /// Findings of the deterministic checks in the chunk.
    Findings,
    /// The chunk's subsection summary.
    Subsection,
    /// The nearest sibling sections' summaries.
    Siblings,
    /// Terms the document defines.
    Glossary,
}

impl PartKind {
    /// The share of the budget the part may take, in percent.
    pub fn share_percent(self) -> u32 {
        match self {
            PartKind::Chunk => 40,
            PartKind::Instructions => 8,
            PartKind::Abstract => 14,
            PartKind::Section => 10,
            PartKind::Findings => 6,
            PartKind::Subsection => 5,
            PartKind::Siblings => 10,
            PartKind::Glossary => 5,
        }
    }

    /// The lowest tier that wants the part.
    pub fn tier(self) -> Tier {
        match self {
            PartKind::Chunk | PartKind::Instructions => Tier::Skeleton,
            PartKind::Section => Tier::Section,
            PartKind::Abstract | PartKind::Findings => Tier::Abstract,
            PartKind::Subsection | PartKind::Siblings | PartKind::Glossary => Tier::Full,
        }
    }
}

/// One part of an assembled context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContextPart {
    /// Which part.
    pub kind: PartKind,
    /// Its text (cut to its share when needed).
    pub text: String,
    /// Its estimated tokens.
    pub tokens: u32,
    /// `true` when it was cut to fit.
    pub cut: bool,
}

/// A part left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Dropped {
    /// Which part.
    pub kind: PartKind,
    /// `tier` (not wanted at this tier), `budget` (did not fit) or
    /// `missing` (nothing to show: no pyramid, no finding).
    pub reason: &'static str,
}

/// The context of one chunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AssembledContext {
    /// The tier it was assembled for.
    pub tier: Tier,
    /// The parts kept, in priority order.
    pub parts: Vec<ContextPart>,
    /// The parts left out.
    pub dropped: Vec<Dropped>,
    /// Estimated tokens of all kept parts.
    pub tokens: u32,
}

impl AssembledContext {
    /// The text of a kept part.
    pub fn text(&self, kind: PartKind) -> Option<&str> {
        self.parts
            .iter()
            .find(|p| p.kind == kind)
            .map(|p| p.text.as_str())
    }
}

/// What to assemble a context from.
#[derive(Debug, Clone, Copy)]
pub struct ContextInput<'a> {
    /// The chunk's text.
    pub chunk: &'a str,
    /// The chunk's section ID (`S2.3.1`; `S0` before the first heading).
    pub section_id: &'a str,
    /// The instructions.
    pub instructions: &'a str,
    /// The pyramid (a skipped one gives no summaries).
    pub pyramid: Option<&'a Pyramid>,
    /// Findings in the chunk's lines.
    pub findings: &'a [Finding],
    /// The glossary terms.
    pub glossary: &'a [GlossaryTerm],
    /// The prompt's token budget (context window minus the answer).
    pub budget: u32,
    /// Which parts are wanted.
    pub tier: Tier,
}

/// `node_id` is `section_id` or one of its ancestors (`S2` and `S2.3`
/// for `S2.3.1`).
fn contains(node_id: &str, section_id: &str) -> bool {
    section_id == node_id
        || section_id
            .strip_prefix(node_id)
            .is_some_and(|rest| rest.starts_with('.'))
}

/// The node of `level` that holds the chunk's section. Levels are the
/// pyramid's, not heading depths: under a single title heading the `##`
/// sections are level 1.
fn container<'p>(pyramid: &'p Pyramid, section_id: &str, level: u8) -> Option<&'p PyramidNode> {
    pyramid
        .nodes
        .iter()
        .find(|n| n.level == level && contains(&n.node_id, section_id))
}

fn built(pyramid: Option<&Pyramid>) -> Option<&Pyramid> {
    pyramid.filter(|p| p.status == PyramidStatus::Built)
}

fn summary_of(node: Option<&PyramidNode>) -> Option<String> {
    node.filter(|n| !n.summary.trim().is_empty())
        .map(|n| n.summary.clone())
}

/// The summaries of the two level-1 sections nearest to the chunk's.
fn siblings(pyramid: Option<&Pyramid>, section_id: &str) -> Vec<String> {
    let Some(pyramid) = built(pyramid) else {
        return Vec::new();
    };
    let Some(own) = container(pyramid, section_id, 1) else {
        return Vec::new();
    };
    let mut top: Vec<&PyramidNode> = pyramid.nodes.iter().filter(|n| n.level == 1).collect();
    top.sort_by_key(|n| n.line_start);
    let Some(at) = top.iter().position(|n| n.node_id == own.node_id) else {
        return Vec::new();
    };
    let mut near: Vec<(usize, &PyramidNode)> = top
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != at)
        .map(|(i, n)| (i.abs_diff(at), *n))
        .collect();
    near.sort_by_key(|(distance, n)| (*distance, n.line_start));
    let mut chosen: Vec<_> = near.into_iter().take(2).map(|(_, n)| n).collect();
    chosen.sort_by_key(|n| n.line_start);
    chosen
        .into_iter()
        .filter(|n| !n.summary.trim().is_empty())
        .map(|n| {
            let title = if n.heading.is_empty() {
                n.node_id.as_str()
            } else {
                n.heading.as_str()
            };
            format!("{title}: {}", n.summary)
        })
        .collect()
}

/// The summaries a prompt may carry while the pyramid is still being
/// built: the nodes made so far, and those still to come. A prompt is
/// rendered only once every summary its tier reads is made, so that it
/// never depends on which answers happened to arrive first.
#[derive(Debug, Clone, Copy)]
pub struct Summaries<'a> {
    /// The pyramid as far as it is made (`None`: there is none).
    pub pyramid: Option<&'a Pyramid>,
    /// The nodes not made yet: (node ID, level).
    pub pending: &'a [(String, u8)],
}

impl<'a> Summaries<'a> {
    /// A finished pyramid (or none): every prompt is ready.
    pub fn finished(pyramid: Option<&'a Pyramid>) -> Summaries<'a> {
        Summaries {
            pyramid,
            pending: &[],
        }
    }

    /// Whether every summary a chunk of `section_id` reads at `tier` is
    /// made: its level-1 section's from tier 1; from tier 2, the abstract,
    /// which is made last, so the whole pyramid.
    pub fn ready(&self, section_id: &str, tier: Tier) -> bool {
        match tier {
            Tier::Skeleton => true,
            Tier::Section => !self
                .pending
                .iter()
                .any(|(id, level)| *level == 1 && contains(id, section_id)),
            Tier::Abstract | Tier::Full => self.pending.is_empty(),
        }
    }
}

/// Assembles the context of one chunk.
pub fn assemble(input: &ContextInput<'_>) -> AssembledContext {
    let mut parts = Vec::new();
    let mut dropped = Vec::new();
    for (kind, text) in [
        (PartKind::Chunk, input.chunk),
        (PartKind::Instructions, input.instructions),
    ] {
        parts.push(ContextPart {
            kind,
            text: text.to_owned(),
            tokens: estimate_tokens(text),
            cut: false,
        });
    }
    let mut used: u32 = parts.iter().map(|p| p.tokens).sum();
    let candidates = candidates(input);
    // The language checks' findings are hints a small model needs most
    // (a misspelling and the words it may be, to choose from): in every
    // tier, not only from the abstract's on.
    let hints_first = input.findings.iter().any(|f| f.kind.is_language());
    for (kind, items) in candidates {
        let wanted = if kind == PartKind::Findings && hints_first {
            Tier::Skeleton
        } else {
            kind.tier()
        };
        if wanted > input.tier {
            dropped.push(Dropped {
                kind,
                reason: "tier",
            });
            continue;
        }
        if items.is_empty() {
            dropped.push(Dropped {
                kind,
                reason: "missing",
            });
            continue;
        }
        let share = u32::try_from(u64::from(input.budget) * u64::from(kind.share_percent()) / 100)
            .unwrap_or(u32::MAX);
        let allowed = share.min(input.budget.saturating_sub(used));
        match fit(&items, allowed, kind) {
            Some((text, cut)) => {
                let tokens = estimate_tokens(&text);
                used += tokens;
                parts.push(ContextPart {
                    kind,
                    text,
                    tokens,
                    cut,
                });
            }
            None => dropped.push(Dropped {
                kind,
                reason: "budget",
            }),
        }
    }
    AssembledContext {
        tier: input.tier,
        parts,
        dropped,
        tokens: used,
    }
}

/// The optional parts, in the order they are fitted, each with its items
/// (none when the input lacks it).
fn candidates(input: &ContextInput<'_>) -> Vec<(PartKind, Vec<String>)> {
    vec![
        (
            PartKind::Abstract,
            summary_of(built(input.pyramid).and_then(|p| p.node(ABSTRACT_NODE_ID)))
                .into_iter()
                .collect(),
        ),
        (
            PartKind::Section,
            summary_of(built(input.pyramid).and_then(|p| container(p, input.section_id, 1)))
                .into_iter()
                .collect(),
        ),
        (
            PartKind::Findings,
            input.findings.iter().map(finding_line).collect(),
        ),
        (
            PartKind::Subsection,
            summary_of(built(input.pyramid).and_then(|p| container(p, input.section_id, 2)))
                .into_iter()
                .collect(),
        ),
        (
            PartKind::Siblings,
            siblings(input.pyramid, input.section_id),
        ),
        (
            PartKind::Glossary,
            input
                .glossary
                .iter()
                .map(|t| format!("- {}: {}", t.term, t.definition))
                .collect(),
        ),
    ]
}

/// The least a cut summary keeps; below that it is dropped.
const MIN_CUT_TOKENS: u32 = 24;

/// `items` joined (lists one per line, summaries by blank lines) within
/// `allowed` tokens: whole items while they fit; a single summary cut at
/// a sentence. `None` when nothing useful fits.
fn fit(items: &[String], allowed: u32, kind: PartKind) -> Option<(String, bool)> {
    let separator = match kind {
        PartKind::Findings | PartKind::Glossary => "\n",
        _ => "\n\n",
    };
    let whole = items.join(separator);
    if estimate_tokens(&whole) <= allowed {
        return Some((whole, false));
    }
    let mut kept = String::new();
    for item in items {
        let candidate = if kept.is_empty() {
            item.clone()
        } else {
            format!("{kept}{separator}{item}")
        };
        if estimate_tokens(&candidate) > allowed {
            break;
        }
        kept = candidate;
    }
    if !kept.is_empty() {
        return Some((kept, true));
    }
    if allowed < MIN_CUT_TOKENS {
        return None;
    }
    // One item larger than the share: its first sentences.
    let cut = crate::pyramid::first_sentences(&items[0], allowed);
    (!cut.is_empty() && estimate_tokens(&cut) <= allowed).then_some((cut, true))
}

/// The most suggestions a finding's line lists.
const MAX_SUGGESTIONS: usize = 5;

/// One finding as the prompt lists it. A finding's suggestions are shown
/// when its message does not already name them, so that a small model
/// only has to choose one.
fn finding_line(f: &Finding) -> String {
    let mut line = format!(
        "- line {}: {} ({}): {}",
        f.line,
        // A style rule by its own name (`Team.Utilize`), as the team knows it.
        f.kind_name(),
        f.severity.review_severity(),
        f.message
    );
    let shown: Vec<&str> = f
        .suggestions
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .take(MAX_SUGGESTIONS)
        .collect();
    if shown.iter().any(|s| !f.message.contains(&format!("“{s}”"))) {
        line.push_str(&format!(" (suggestions: {})", shown.join(", ")));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use koas_review_schema::findings::FindingKind;
    use koas_review_schema::pyramid::PyramidStats;

    fn node(id: &str, level: u8, line: u32, summary: &str) -> PyramidNode {
        PyramidNode {
            node_id: id.into(),
            level,
            heading: format!("Heading {id}"),
            anchor: String::new(),
            content_hash: String::new(),
            input_hash: String::new(),
            summary: summary.into(),
            children: vec![],
            token_count: estimate_tokens(summary),
            line_start: line,
            line_end: line,
            fallback: false,
            unanswered: false,
            parts: vec![],
        }
    }

    fn pyramid() -> Pyramid {
        let long = |w: &str| format!("{w} sentence of a summary. ").repeat(30);
        Pyramid {
            doc_hash: "sha256:00".into(),
            status: PyramidStatus::Built,
            skipped_reason: None,
            language: "en".into(),
            levels: 4,
            model: "m".into(),
            nodes: vec![
                node("DOC", 0, 1, &long("Abstract")),
                node("S1", 1, 1, "Section one sets the scope."),
                node("S2", 1, 10, "Section two defines retention."),
                node("S2.1", 2, 12, "Subsection two-one lists the logs."),
                node("S3", 1, 20, "Section three covers access."),
                node("S4", 1, 30, "Section four covers audits."),
            ],
            stats: PyramidStats::default(),
        }
    }

    fn input<'a>(
        p: &'a Pyramid,
        findings: &'a [Finding],
        glossary: &'a [GlossaryTerm],
        budget: u32,
        tier: Tier,
    ) -> ContextInput<'a> {
        ContextInput {
            chunk: "The logs are kept twelve months in the archive.",
            section_id: "S2.1",
            instructions: "Propose edit ops.",
            pyramid: Some(p),
            findings,
            glossary,
            budget,
            tier,
        }
    }

    #[test]
    fn a_large_budget_at_full_tier_takes_everything_in_priority_order() {
        let p = pyramid();
        let f = [Finding::new(
            FindingKind::AiLeftover,
            "k",
            12,
            12,
            "leftover",
            "e",
        )];
        let g = [GlossaryTerm {
            term: "SLO".into(),
            definition: "Service Level Objective".into(),
            section_id: "S1".into(),
            line: 3,
        }];
        let c = assemble(&input(&p, &f, &g, 128_000, Tier::Full));
        let kinds: Vec<PartKind> = c.parts.iter().map(|p| p.kind).collect();
        assert_eq!(
            kinds,
            [
                PartKind::Chunk,
                PartKind::Instructions,
                PartKind::Abstract,
                PartKind::Section,
                PartKind::Findings,
                PartKind::Subsection,
                PartKind::Siblings,
                PartKind::Glossary
            ]
        );
        assert_eq!(
            c.text(PartKind::Section),
            Some("Section two defines retention.")
        );
        assert_eq!(
            c.text(PartKind::Subsection),
            Some("Subsection two-one lists the logs.")
        );
        let siblings = c.text(PartKind::Siblings).expect("siblings");
        assert!(
            siblings.contains("Section one") && siblings.contains("Section three"),
            "{siblings}"
        );
        assert!(
            !siblings.contains("Section four"),
            "only the two nearest: {siblings}"
        );
        assert!(c.parts.iter().all(|p| !p.cut));
        assert!(c.tokens <= 128_000);
    }

    #[test]
    fn a_findings_suggestions_are_listed_unless_its_message_names_them() {
        let named = Finding::new(
            FindingKind::Misspelling,
            "md_language_check",
            4,
            4,
            "“explians” is not in the English dictionary: did you mean “explains”?",
            "It explians.",
        )
        .with_suggestions(vec!["explains".into()]);
        assert_eq!(
            finding_line(&named),
            "- line 4: misspelling (attention): “explians” is not in the English dictionary: did you mean “explains”?"
        );
        let bare = Finding::new(
            FindingKind::Misspelling,
            "md_language_check",
            5,
            5,
            "“zorbs” is not in the English dictionary",
            "The zorbs.",
        )
        .with_suggestions(vec!["orbs".into(), "sorbs".into(), String::new()]);
        assert!(
            finding_line(&bare).ends_with("dictionary (suggestions: orbs, sorbs)"),
            "{}",
            finding_line(&bare)
        );
        let none = Finding::new(FindingKind::AiLeftover, "k", 1, 1, "leftover", "e");
        assert!(!finding_line(&none).contains("suggestions"));
    }

    /// A small model answering at the first tier got the language hints
    /// only on a retry: they are in every tier; other findings are not.
    #[test]
    fn language_hints_are_in_the_first_tier() {
        let p = pyramid();
        let hint = [Finding::new(
            FindingKind::Misspelling,
            "md_language_check",
            1,
            1,
            "“wroker” is not in the English dictionary: did you mean “worker” or “broker”?",
            "The wroker runs.",
        )];
        let c = assemble(&input(&p, &hint, &[], 4000, Tier::Skeleton));
        assert!(
            c.text(PartKind::Findings)
                .is_some_and(|t| t.contains("wroker")),
            "{c:?}"
        );
        let other = [Finding::new(
            FindingKind::AiLeftover,
            "k",
            1,
            1,
            "leftover",
            "e",
        )];
        let c = assemble(&input(&p, &other, &[], 4000, Tier::Skeleton));
        assert!(c.text(PartKind::Findings).is_none(), "{c:?}");
    }

    #[test]
    fn a_small_budget_drops_lower_priorities_and_cuts_to_shares() {
        let p = pyramid();
        // 14 % of 400 = 56 tokens: the long abstract is cut to its first
        // sentences.
        let c = assemble(&input(&p, &[], &[], 400, Tier::Full));
        let abstract_ = c
            .parts
            .iter()
            .find(|p| p.kind == PartKind::Abstract)
            .expect("abstract");
        assert!(abstract_.cut && abstract_.tokens <= 56, "{abstract_:?}");
        assert!(c
            .dropped
            .iter()
            .any(|d| d.kind == PartKind::Findings && d.reason == "missing"));
        // A 4K-class budget squeezed further: 120 tokens. The abstract's
        // share (16) is too small to cut usefully, the subsection's (6)
        // too small for its summary; the section summary fits its 12.
        let c = assemble(&input(&p, &[], &[], 120, Tier::Full));
        let dropped = |k: PartKind| {
            c.dropped
                .iter()
                .any(|d| d.kind == k && d.reason == "budget")
        };
        assert!(dropped(PartKind::Abstract), "{:?}", c.dropped);
        assert!(dropped(PartKind::Subsection), "{:?}", c.dropped);
        assert_eq!(
            c.text(PartKind::Section),
            Some("Section two defines retention.")
        );
        let siblings = c
            .parts
            .iter()
            .find(|p| p.kind == PartKind::Siblings)
            .expect("one sibling fits");
        assert!(
            siblings.cut && !siblings.text.contains("\n\n"),
            "{siblings:?}"
        );
        assert!(c.tokens <= 120, "{}", c.tokens);
    }

    #[test]
    fn tiers_choose_the_parts() {
        let p = pyramid();
        let skeleton = assemble(&input(&p, &[], &[], 128_000, Tier::Skeleton));
        assert_eq!(skeleton.parts.len(), 2);
        let section = assemble(&input(&p, &[], &[], 128_000, Tier::Section));
        let kinds: Vec<PartKind> = section.parts.iter().map(|p| p.kind).collect();
        assert_eq!(
            kinds,
            [PartKind::Chunk, PartKind::Instructions, PartKind::Section]
        );
        assert!(section
            .dropped
            .iter()
            .any(|d| d.kind == PartKind::Abstract && d.reason == "tier"));
        // No pyramid: nothing but the skeleton, whatever the tier.
        let mut i = input(&p, &[], &[], 128_000, Tier::Full);
        i.pyramid = None;
        assert_eq!(assemble(&i).parts.len(), 2);
    }

    /// Under a single title heading the `##` sections are the pyramid's
    /// level 1: the context looked for a level-1 node named after the
    /// title (`S1`), found none, and showed no summary at all.
    #[test]
    fn regression_a_titled_document_s_chunks_get_their_section_summaries() {
        let mut p = pyramid();
        p.nodes = vec![
            node("DOC", 0, 1, "The audit of two controls."),
            node("S1.1", 1, 3, "Control one is access."),
            node("S1.1.1", 2, 5, "Access reviews are quarterly."),
            node("S1.2", 1, 20, "Control two is backups."),
        ];
        let mut i = input(&p, &[], &[], 128_000, Tier::Full);
        i.section_id = "S1.1.1.1";
        let c = assemble(&i);
        assert_eq!(c.text(PartKind::Section), Some("Control one is access."));
        assert_eq!(
            c.text(PartKind::Subsection),
            Some("Access reviews are quarterly.")
        );
        assert_eq!(
            c.text(PartKind::Siblings),
            Some("Heading S1.2: Control two is backups.")
        );
        // `S1.10` is not inside `S1.1`.
        i.section_id = "S1.10";
        assert_eq!(assemble(&i).text(PartKind::Section), None);
    }

    #[test]
    fn a_prompt_is_ready_once_the_summaries_its_tier_reads_are_made() {
        let p = pyramid();
        let pending = [("S3".to_owned(), 1u8), ("DOC".to_owned(), 0u8)];
        let s = Summaries {
            pyramid: Some(&p),
            pending: &pending,
        };
        assert!(s.ready("S3.2", Tier::Skeleton));
        assert!(s.ready("S2.1", Tier::Section), "S2 is made");
        assert!(!s.ready("S3.2", Tier::Section), "S3 is not");
        assert!(!s.ready("S2.1", Tier::Abstract), "the abstract is not");
        assert!(!s.ready("S2.1", Tier::Full));
        let done = Summaries::finished(Some(&p));
        assert!(done.ready("S3.2", Tier::Full));
    }

    #[test]
    fn the_tier_follows_chunk_size_and_budget() {
        assert_eq!(compute_tier(900, 1_000, Tier::Section), Tier::Skeleton);
        assert_eq!(compute_tier(300, 4_000, Tier::Section), Tier::Section);
        assert_eq!(compute_tier(300, 128_000, Tier::Section), Tier::Full);
        assert_eq!(Tier::Abstract.up(), Tier::Full);
        assert_eq!(Tier::Full.up(), Tier::Full);
    }
}
