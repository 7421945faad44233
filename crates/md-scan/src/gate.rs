//! Regexes behind a literal gate, compiled on first use.
//!
//! A case-insensitive regex with Unicode word boundaries costs 0.1–1.5 ms
//! to compile and is slow to run on every line, while `koas check` on a
//! whole small document should cost a few milliseconds. Most of these
//! regexes can only match a line that holds one of a few words: a gate
//! lists them (every match of the regex contains at least one), a line
//! without any is skipped without running the regex, and a document with
//! no such line never compiles it. The findings are the same: the gate
//! only rules out lines the regex could not match.
//!
//! Needles are compared ASCII-case-insensitively; their other characters
//! must match exactly, so a needle holds no non-ASCII letter that has a
//! case. A case-insensitive regex also matches `ſ` for `s` and the Kelvin
//! sign for `k`: a line holding either always passes the gate.

use aho_corasick::{AhoCorasick, AhoCorasickKind};
use regex::Regex;
use std::sync::{Arc, OnceLock};

/// `true` when `hay` holds a character a case-insensitive regex matches
/// for an ASCII letter (`ſ` for `s`, the Kelvin sign for `k`).
fn has_ascii_fold(hay: &str) -> bool {
    // `ſ` is C5 BF in UTF-8, the Kelvin sign E2 84 AA: look for their
    // first bytes only (most lines have neither).
    let bytes = hay.as_bytes();
    memchr::memchr2_iter(0xC5, 0xE2, bytes).any(|i| {
        let rest = &bytes[i..];
        rest.starts_with(&[0xC5, 0xBF]) || rest.starts_with(&[0xE2, 0x84, 0xAA])
    })
}

/// One automaton over `needles`, ASCII letters without case (`None` if it
/// cannot be built, which a few short needles never cause: no gate then).
fn automaton<I, P>(needles: I) -> Option<AhoCorasick>
where
    I: IntoIterator<Item = P>,
    P: AsRef<[u8]>,
{
    AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .kind(Some(AhoCorasickKind::DFA))
        .build(needles)
        .ok()
}

/// The lines of `text` in which `searcher` finds a needle, each once, in
/// order: one pass over the text.
fn lines_holding<'t>(searcher: &AhoCorasick, text: &'t str) -> Vec<&'t str> {
    let mut lines = Vec::new();
    let mut next = 0;
    for m in searcher.find_iter(text) {
        if m.start() < next {
            continue;
        }
        let start = text[..m.start()].rfind('\n').map_or(0, |i| i + 1);
        let end = text[m.start()..]
            .find('\n')
            .map_or(text.len(), |i| m.start() + i);
        lines.push(&text[start..end]);
        next = end;
    }
    lines
}

/// The gate itself: which needles, and whether a text may match.
#[derive(Debug, Clone, Default)]
pub struct Needles {
    needles: Vec<String>,
    /// All of them in one automaton, ASCII letters without case, built on
    /// first use: one pass over a line whatever their number. Clones
    /// share it (two patterns gated by the same words build it once).
    searcher: Arc<OnceLock<Option<AhoCorasick>>>,
    /// The text must also hold an ASCII digit.
    digit: bool,
}

impl Needles {
    /// Needles from a list (none: every text passes).
    pub fn new<S: AsRef<str>>(needles: &[S]) -> Needles {
        Needles::from_list(
            needles
                .iter()
                .map(|n| n.as_ref().to_owned())
                .filter(|n| !n.is_empty())
                .collect(),
        )
    }

    fn from_list(needles: Vec<String>) -> Needles {
        Needles {
            needles,
            searcher: Arc::default(),
            digit: false,
        }
    }

    /// The same needles, and the text must also hold an ASCII digit (for a
    /// regex whose matches are kept only when their number parses as one).
    pub fn and_ascii_digit(mut self) -> Needles {
        self.digit = true;
        self
    }

    /// `false` only when no match of the gated regex can be in `hay`.
    pub fn may_match(&self, hay: &str) -> bool {
        if self.digit && !hay.bytes().any(|b| b.is_ascii_digit()) {
            return false;
        }
        if self.needles.is_empty() {
            return true;
        }
        let searcher = self.searcher.get_or_init(|| automaton(&self.needles));
        searcher.as_ref().map_or(true, |s| s.is_match(hay)) || has_ascii_fold(hay)
    }

    /// The longest run of ASCII letters and digits of each term: every
    /// match of a pattern built from the terms' words (kept literally,
    /// matched case-insensitively) contains one. A term with no such run
    /// gives no gate at all.
    pub fn from_words<'a>(terms: impl IntoIterator<Item = &'a str>) -> Needles {
        let mut out = Vec::new();
        for term in terms {
            let run = term
                .split(|c: char| !c.is_ascii_alphanumeric())
                .max_by_key(|r| r.len())
                .unwrap_or("");
            if run.is_empty() {
                return Needles::default();
            }
            out.push(run.to_ascii_lowercase());
        }
        out.sort();
        out.dedup();
        Needles::from_list(out)
    }
}

/// A regex compiled on first use behind its [`Needles`].
#[derive(Debug)]
pub struct Gated {
    pub(crate) pattern: String,
    needles: Needles,
    regex: OnceLock<Option<Regex>>,
}

impl Gated {
    /// `pattern` (valid: checked by the tests of each user, or by
    /// [`Gated::checked`]) behind `needles`.
    pub fn new(pattern: impl Into<String>, needles: Needles) -> Gated {
        Gated {
            pattern: pattern.into(),
            needles,
            regex: OnceLock::new(),
        }
    }

    /// Like [`Gated::new`], the pattern's syntax checked now without
    /// compiling it (a configured pattern's error must name it at once);
    /// the error is the parser's message.
    pub fn checked(pattern: impl Into<String>, needles: Needles) -> Result<Gated, String> {
        let pattern = pattern.into();
        regex_syntax::Parser::new()
            .parse(&pattern)
            .map_err(|e| e.to_string())?;
        Ok(Gated::new(pattern, needles))
    }

    /// The compiled regex, when `hay` may match.
    pub fn for_text(&self, hay: &str) -> Option<&Regex> {
        if !self.needles.may_match(hay) {
            return None;
        }
        self.regex
            .get_or_init(|| Regex::new(&self.pattern).ok())
            .as_ref()
    }

    /// Compiles the regex now if `text` (a whole document) may need it,
    /// so that it is ready when the first line that does is read; `true`
    /// when it may (what depends on its matches may be warmed too).
    pub fn warm(&self, text: &str) -> bool {
        self.for_text(text).is_some()
    }

    /// Whether the regex has been compiled (for tests).
    #[cfg(test)]
    pub fn compiled(&self) -> bool {
        self.regex.get().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn one(needle: &str) -> Needles {
        Needles::new(&[needle])
    }

    #[test]
    fn needles_are_found_without_ascii_case() {
        assert!(one("helps").may_match("I Hope this HELPS"));
        assert!(one("j’esp").may_match("j’espère"));
        assert!(!one("helps").may_match("help"));
        assert!(!one("a").may_match(""));
        assert!(Needles::default().may_match("abc"));
        assert!(one("AB").may_match("xxab"));
        // Non-ASCII letters are compared exactly.
        assert!(!one("é").may_match("É"));
    }

    #[test]
    fn a_gate_never_compiles_for_a_text_without_its_words() {
        let g = Gated::new(r"(?i)\bsorry\b", Needles::new(&["sorry"]));
        assert!(g.for_text("nothing here").is_none());
        assert!(!g.compiled());
        assert!(g
            .for_text("I am SORRY")
            .is_some_and(|r| r.is_match("I am SORRY")));
        // The characters a case-insensitive regex folds onto ASCII letters.
        let g = Gated::new(r"(?i)\bsorry\b", Needles::new(&["sorry"]));
        assert!(g.for_text("ſorry").is_some_and(|r| r.is_match("ſorry")));
    }

    #[test]
    fn a_digit_can_be_required_too() {
        let n = one("table").and_ascii_digit();
        assert!(n.may_match("see Table 3"));
        assert!(!n.may_match("see the table"));
        assert!(!n.may_match("Table ٣"));
        assert!(Needles::default().and_ascii_digit().may_match("4"));
    }

    #[test]
    fn words_give_their_longest_ascii_runs() {
        let n = Needles::from_words(["Équation", "Fig.", "journal d'audit"]);
        assert_eq!(n.needles, vec!["fig", "journal", "quation"]);
        // A term of no ASCII letter: no gate.
        assert!(Needles::from_words(["Équation", "é"]).needles.is_empty());
    }

    proptest! {
        #[test]
        fn agrees_with_lowercased_search(hay in "[a-dA-D ’é]{0,12}", needle in "[a-dA-D]{1,3}") {
            let expected = hay.to_ascii_lowercase().contains(&needle.to_ascii_lowercase());
            prop_assert_eq!(one(&needle).may_match(&hay), expected);
        }
    }
}

/// One piece of work that compiles, ahead of time, regexes a document
/// will need (see [`crate::analysis::Checker::check`]): compiling changes
/// no result, only when the time is spent.
pub type Warm<'a> = Box<dyn Fn() + Send + Sync + 'a>;

/// An alternation split into its alternatives, each behind its own
/// needles. On a text, only the alternatives whose needles it holds can
/// match; a regex of those, in their order (so leftmost-first picks the
/// same match as the whole alternation would), is compiled and kept, and
/// grows when a later text needs more. A big case-insensitive alternation
/// costs milliseconds to compile; the two or three alternatives a real
/// document needs cost a fraction of that.
#[derive(Debug)]
pub struct GatedAlternatives {
    prefix: String,
    suffix: String,
    alternatives: Vec<(String, Needles)>,
    /// Every alternative's needles in one automaton (pattern `i` is
    /// `needle_masks[i].0`), so a line is scanned once whatever their
    /// number; each needle lets through the alternatives in its mask.
    needle_masks: Vec<(String, u64)>,
    /// The alternatives without needles: always kept.
    always: u64,
    searcher: OnceLock<Option<AhoCorasick>>,
    /// The regex compiled so far and its alternatives: each new one holds
    /// every alternative of the one it replaces.
    compiled: std::sync::Mutex<Option<(u64, Option<Arc<Regex>>)>>,
}

impl GatedAlternatives {
    /// `prefix (?:a1|a2|…) suffix`, each `ai` with the needles every match
    /// of it contains (at most 64 alternatives).
    pub fn new(prefix: &str, alternatives: &[(&str, &[&str])], suffix: &str) -> Self {
        GatedAlternatives::from_parts(
            prefix,
            alternatives
                .iter()
                .map(|(a, n)| ((*a).to_owned(), Needles::new(n)))
                .collect(),
            suffix,
        )
    }

    /// Like [`GatedAlternatives::new`], from built alternatives and needles
    /// (an alternative with no needles is always kept). Past 64
    /// alternatives there is no gate: they are all always kept.
    pub fn from_parts(prefix: &str, alternatives: Vec<(String, Needles)>, suffix: &str) -> Self {
        let mut needle_masks: Vec<(String, u64)> = Vec::new();
        let mut always = 0;
        let gated = if alternatives.len() <= 64 {
            alternatives.as_slice()
        } else {
            &[]
        };
        for (i, (_, needles)) in gated.iter().enumerate() {
            if needles.needles.is_empty() || needles.digit {
                // (No alternative asks for a digit; if one did, it is kept.)
                always |= 1 << i;
                continue;
            }
            for n in &needles.needles {
                match needle_masks.iter_mut().find(|(m, _)| m == n) {
                    Some((_, mask)) => *mask |= 1 << i,
                    None => needle_masks.push((n.clone(), 1 << i)),
                }
            }
        }
        GatedAlternatives {
            prefix: prefix.to_owned(),
            suffix: suffix.to_owned(),
            alternatives,
            needle_masks,
            always,
            searcher: OnceLock::new(),
            compiled: std::sync::Mutex::new(None),
        }
    }

    /// The pattern of the alternatives in `mask` (`u64::MAX`: the whole
    /// alternation, however many).
    fn pattern(&self, mask: u64) -> String {
        let chosen: Vec<&str> = alternatives_in(mask, self.alternatives.len())
            .into_iter()
            .filter_map(|i| self.alternatives.get(i).map(|(a, _)| a.as_str()))
            .collect();
        format!("{}(?:{}){}", self.prefix, chosen.join("|"), self.suffix)
    }

    /// The whole alternation's pattern.
    #[cfg(test)]
    pub fn whole_pattern(&self) -> String {
        self.pattern(u64::MAX)
    }

    /// The regex of the alternatives that may match `hay`, or `None` when
    /// none may (detectors ask [`GatedAlternatives::regex_for`] with the
    /// mask of a line or of a whole document).
    #[cfg(test)]
    pub fn for_text(&self, hay: &str) -> Option<Arc<Regex>> {
        self.regex_for(self.mask_for(hay)).map(|(re, _)| re)
    }

    /// Compiles now the regex of every alternative `text` (a whole
    /// document) may need: the lines then find it ready, and it is one
    /// regex, not one more each time a line needs a new alternative.
    ///
    /// The alternatives are those of the needles a plain search finds: on
    /// a whole document, an overlapping search (which [`mask_for`] needs
    /// on a line, where a needle inside another must count) reads every
    /// byte and costs more than the compile it prepares. A needle it
    /// misses only means a line compiles a larger regex later.
    ///
    /// [`mask_for`]: GatedAlternatives::mask_for
    pub fn warm(&self, text: &str) {
        // Once one is compiled (an earlier document of this run), the
        // lines grow it as they need: a pass over every later document
        // would cost more than it saves.
        if self.compiled_any() {
            return;
        }
        let all = self.all();
        if self.alternatives.len() > 64 || has_ascii_fold(text) {
            self.regex_for(all);
            return;
        }
        let Some(searcher) = self.searcher() else {
            self.regex_for(all);
            return;
        };
        let mut mask = self.always;
        for m in searcher.find_iter(text) {
            if let Some((_, bits)) = self.needle_masks.get(m.pattern().as_usize()) {
                mask |= bits;
            }
            if mask == all {
                break;
            }
        }
        self.regex_for(mask);
    }

    /// Whether a regex has been compiled (or failed to).
    pub fn compiled_any(&self) -> bool {
        self.compiled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_some()
    }

    /// Every alternative's needles in one automaton, built on first use
    /// (`None` if it cannot be: every alternative is then kept).
    fn searcher(&self) -> Option<&AhoCorasick> {
        self.searcher
            .get_or_init(|| automaton(self.needle_masks.iter().map(|(n, _)| n)))
            .as_ref()
    }

    /// Every alternative (all bits past 64 of them).
    fn all(&self) -> u64 {
        if self.alternatives.len() >= 64 {
            u64::MAX
        } else {
            (1u64 << self.alternatives.len()) - 1
        }
    }

    /// The regex for the alternatives in `mask` (one already compiled for
    /// more serves too), with the alternatives it holds, or `None` when
    /// `mask` is empty. A caller that knows every alternative a document
    /// needs ([`GatedAlternatives::mask_for`] of each line) compiles one
    /// regex, instead of one more each time a line needs an alternative
    /// the regex so far lacks (each costs about as much as the whole).
    pub fn regex_for(&self, mask: u64) -> Option<(Arc<Regex>, u64)> {
        if mask == 0 {
            return None;
        }
        // A poisoned lock only means another thread panicked while holding
        // it; the list is still a valid cache.
        let mut compiled = self
            .compiled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // A regex of more alternatives serves too (the others cannot match
        // this text). A new one takes every alternative needed so far, so
        // lines needing different ones do not each compile their own.
        if let Some((m, regex)) = compiled.as_ref().filter(|(m, _)| mask & !m == 0) {
            return regex.clone().map(|re| (re, *m));
        }
        let mask = compiled.as_ref().map_or(mask, |(m, _)| mask | m);
        let regex = Regex::new(&self.pattern(mask)).ok().map(Arc::new);
        *compiled = Some((mask, regex.clone()));
        regex.map(|re| (re, mask))
    }

    /// The alternatives that may match `hay` (bit `i`: alternative `i`;
    /// all bits past 64 of them).
    pub fn mask_for(&self, hay: &str) -> u64 {
        if self.alternatives.len() > 64 {
            return u64::MAX;
        }
        let all = self.all();
        if has_ascii_fold(hay) {
            return all;
        }
        let Some(searcher) = self.searcher() else {
            return all;
        };
        let mut mask = self.always;
        // Most lines hold no needle: one quick search says so.
        if !searcher.is_match(hay) {
            return mask;
        }
        for m in searcher.find_overlapping_iter(hay) {
            if let Some((_, bits)) = self.needle_masks.get(m.pattern().as_usize()) {
                mask |= bits;
            }
            if mask == all {
                break;
            }
        }
        mask
    }
}

/// One automaton over the needles of several [`GatedAlternatives`]: one
/// scan of a line tells each member the alternatives it may need (what
/// its [`GatedAlternatives::mask_for`] tells), for one automaton and one
/// scan instead of one of each per member.
#[derive(Debug)]
pub struct SharedGate {
    /// Each distinct needle, with the members (by index) and the
    /// alternatives of each that it lets through.
    needles: Vec<(String, Vec<(usize, u64)>)>,
    /// Per member, the alternatives kept whatever the line.
    always: Vec<u64>,
    /// Per member, every alternative.
    all: Vec<u64>,
    searcher: OnceLock<Option<AhoCorasick>>,
}

impl SharedGate {
    /// The gate of `members`, in order.
    pub fn new<'a>(members: impl IntoIterator<Item = &'a GatedAlternatives>) -> SharedGate {
        let mut gate = SharedGate {
            needles: Vec::new(),
            always: Vec::new(),
            all: Vec::new(),
            searcher: OnceLock::new(),
        };
        for (k, member) in members.into_iter().enumerate() {
            if member.alternatives.len() > 64 {
                // No gate past 64 alternatives (as `mask_for`).
                gate.always.push(u64::MAX);
                gate.all.push(u64::MAX);
                continue;
            }
            gate.always.push(member.always);
            gate.all.push(member.all());
            for (needle, bits) in &member.needle_masks {
                match gate.needles.iter_mut().find(|(n, _)| n == needle) {
                    Some((_, targets)) => targets.push((k, *bits)),
                    None => gate.needles.push((needle.clone(), vec![(k, *bits)])),
                }
            }
        }
        gate
    }

    fn searcher(&self) -> Option<&AhoCorasick> {
        self.searcher
            .get_or_init(|| automaton(self.needles.iter().map(|(n, _)| n)))
            .as_ref()
    }

    /// For each member `k`, the alternatives that may match `hay`: what
    /// `members[k].mask_for(hay)` gives.
    pub fn masks(&self, hay: &str) -> Vec<u64> {
        if has_ascii_fold(hay) {
            return self.all.clone();
        }
        let Some(searcher) = self.searcher() else {
            return self.all.clone();
        };
        let mut masks = self.always.clone();
        // Most lines hold no needle: one quick search says so.
        if !searcher.is_match(hay) {
            return masks;
        }
        // Overlapping: a needle inside another counts too.
        for m in searcher.find_overlapping_iter(hay) {
            if let Some((_, targets)) = self.needles.get(m.pattern().as_usize()) {
                for &(k, bits) in targets {
                    if let Some(mask) = masks.get_mut(k) {
                        *mask |= bits;
                    }
                }
            }
        }
        masks
    }

    /// The lines of `text` (a whole document) that hold a needle, each
    /// once, in order; `None` when
    /// every line may match (a member keeps an alternative whatever the
    /// line, or there is no automaton).
    pub fn lines_with_match<'t>(&self, text: &'t str) -> Option<Vec<&'t str>> {
        if self.always.iter().any(|&a| a != 0) {
            return None;
        }
        Some(lines_holding(self.searcher()?, text))
    }
}

/// The indices of the alternatives in `mask` (of `count` in all), in
/// order: entry `k` is the alternative behind capture group `k + 1` when
/// each alternative is one group.
pub fn alternatives_in(mask: u64, count: usize) -> Vec<usize> {
    (0..count)
        .filter(|&i| i >= 64 || mask & (1 << i) != 0)
        .collect()
}

#[cfg(test)]
mod alternatives_tests {
    use super::*;
    use proptest::prelude::*;

    fn offer() -> GatedAlternatives {
        GatedAlternatives::new(
            r"(?i)\b",
            &[
                (r"i hope (?:this|that) helps", &["hope th"]),
                (r"hope (?:this|that) helps", &["hope th"]),
                (r"let me know", &["let me know"]),
                (r"know", &["know"]),
            ],
            r"\b",
        )
    }

    /// Every match of the split alternation, as the whole one gives them.
    fn same_matches(g: &GatedAlternatives, hay: &str) -> bool {
        let whole = Regex::new(&g.whole_pattern()).expect("valid");
        let expected: Vec<_> = whole.find_iter(hay).map(|m| m.range()).collect();
        let got: Vec<_> = g
            .for_text(hay)
            .map(|r| r.find_iter(hay).map(|m| m.range()).collect())
            .unwrap_or_default();
        expected == got
    }

    #[test]
    fn only_the_possible_alternatives_are_compiled() {
        let g = offer();
        assert!(g.for_text("nothing").is_none());
        let r = g.for_text("I HOPE THIS HELPS").expect("two alternatives");
        assert_eq!(
            r.as_str(),
            r"(?i)\b(?:i hope (?:this|that) helps|hope (?:this|that) helps)\b"
        );
        // A text needing another alternative gets one regex of all needed
        // so far, which then serves the first text too.
        let r = g.for_text("you know").expect("one alternative");
        assert_eq!(
            r.as_str(),
            r"(?i)\b(?:i hope (?:this|that) helps|hope (?:this|that) helps|know)\b"
        );
        let again = g.for_text("hope this helps").expect("served");
        assert_eq!(again.as_str(), r.as_str());
        assert!(same_matches(&g, "Let me know: I hope that helps, you know"));
    }

    #[test]
    fn warming_compiles_once_what_the_text_needs() {
        let g = offer();
        g.warm("nothing here\nat all");
        assert!(!g.compiled_any(), "no needle, nothing compiled");
        g.warm("first line\nyou know\nlet me know");
        let r = g.for_text("you know").expect("compiled");
        assert_eq!(
            r.as_str(),
            r"(?i)\b(?:let me know|know)\b",
            "the alternatives of the whole text"
        );
        // A later text does not scan again: its lines grow the regex.
        g.warm("I hope this helps");
        assert_eq!(g.for_text("know").expect("compiled").as_str(), r.as_str());
        assert!(same_matches(&g, "I hope this helps, you know"));
    }

    #[test]
    fn clones_share_one_automaton() {
        let a = Needles::new(&["figure"]).and_ascii_digit();
        let b = a.clone();
        assert!(a.searcher.get().is_none());
        assert!(b.may_match("Figure 1"));
        assert!(a.searcher.get().is_some(), "built once, for both");
        assert!(!a.may_match("Figure one"));
    }

    #[test]
    fn lines_with_a_needle_are_each_given_once() {
        let g = offer();
        let shared = SharedGate::new([&g]);
        assert_eq!(
            shared
                .lines_with_match("a\nI hope you know\nb\nKNOW")
                .expect("needles"),
            vec!["I hope you know", "KNOW"]
        );
        assert_eq!(
            shared.lines_with_match("").expect("needles"),
            Vec::<&str>::new()
        );
        let always = GatedAlternatives::new("", &[("x", &[])], "");
        assert_eq!(SharedGate::new([&g, &always]).lines_with_match("x"), None);
    }

    /// A second family that shares needles with [`offer`], and one
    /// alternative kept whatever the line.
    fn others() -> GatedAlternatives {
        GatedAlternatives::new(
            r"(?i)",
            &[
                (r"you know", &["know"]),
                (r"sorry", &["sorry"]),
                (r"x", &[]),
            ],
            r"",
        )
    }

    proptest! {
        /// One scan of the shared gate gives each member what its own
        /// `mask_for` gives.
        #[test]
        fn shared_masks_equal_each_members_own(hay in "(I |hope |this |that |helps|let me |know|sorry|ſorry|KNOW|,| ){0,12}") {
            let (a, b) = (offer(), others());
            let shared = SharedGate::new([&a, &b]);
            prop_assert_eq!(shared.masks(&hay), vec![a.mask_for(&hay), b.mask_for(&hay)]);
        }

        #[test]
        fn split_matches_equal_the_whole(hay in "(I |hope |this |that |helps|let me |know|,| ){0,12}") {
            prop_assert!(same_matches(&offer(), &hay));
        }

        /// Whatever a document warmed, each of its lines finds what the
        /// whole alternation finds.
        #[test]
        fn warmed_matches_equal_the_whole(
            doc in "(I |hope |this |that |helps|let me |know|,| |\n){0,30}",
            hay in "(I |hope |this |that |helps|let me |know|,| ){0,12}",
        ) {
            let g = offer();
            g.warm(&doc);
            for line in doc.lines() {
                prop_assert!(same_matches(&g, line));
            }
            prop_assert!(same_matches(&g, &hay));
        }
    }
}
