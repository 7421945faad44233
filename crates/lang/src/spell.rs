//! One document's check: each paragraph's language, the document's own
//! vocabulary, then spelling, grammar and typography paragraph by
//! paragraph.

use crate::certain::{distance, match_case, one_edit, slip_kind, slip_like};
use crate::english::English;
use crate::french::{rules, French};
use crate::grammar::{repeated_words, Hit};
use crate::tokens::{fold, words, Token};
use crate::{detect, Checker, Issue, IssueKind, Lang, LangError, Paragraph, Report};
use std::collections::HashMap;

use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::Mutex;
use std::time::Duration;

mod verdict;
use verdict::word_verdict;

/// Each paragraph's language: its own when its words tell it, else its
/// neighbours' (a heading takes the paragraph after it, other text the
/// one before it), else the document's; `None` for a language the
/// configuration does not check.
fn languages(
    paragraphs: &[Paragraph<'_>],
    guessed: &[Option<Lang>],
    allowed: &[Lang],
) -> Vec<Option<Lang>> {
    let mut weight: HashMap<Lang, usize> = HashMap::new();
    for (p, g) in paragraphs.iter().zip(guessed) {
        if let Some(l) = g {
            *weight.entry(*l).or_default() += p.text.len();
        }
    }
    let dominant = weight
        .into_iter()
        .max_by_key(|(l, w)| (*w, *l == Lang::En))
        .map(|(l, _)| l)
        .or_else(|| (allowed.len() == 1).then(|| allowed[0]));
    let n = guessed.len();
    // The nearest guess before and after each paragraph, in two passes:
    // searching from each paragraph was quadratic in a document whose
    // paragraphs are too short to guess (a long run of headings).
    let mut before: Vec<Option<Lang>> = Vec::with_capacity(n);
    let mut last = None;
    for g in guessed {
        before.push(last);
        last = g.or(last);
    }
    let mut after: Vec<Option<Lang>> = vec![None; n];
    let mut next = None;
    for (i, g) in guessed.iter().enumerate().rev() {
        after[i] = next;
        next = g.or(next);
    }
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let lang = guessed[i].or_else(|| {
            if paragraphs[i].heading {
                after[i].or(before[i])
            } else {
                before[i].or(after[i])
            }
            .or(dominant)
        });
        out.push(lang.filter(|l| allowed.contains(l)));
    }
    out
}

/// The dictionaries a document needs, loaded on first use and read from
/// every thread of the check.
struct Dicts<'c> {
    checker: &'c Checker,
    /// Whether the document has French paragraphs: only then may an
    /// English paragraph's word be found in the French dictionary (a
    /// quoted expression), whatever order the words are judged in.
    french_text: bool,
    /// The dictionaries this check loaded, with the time each took.
    loaded: Mutex<Vec<(Lang, Duration)>>,
}

impl<'c> Dicts<'c> {
    fn note(&self, lang: Lang, took: Option<Duration>) {
        if let Some(t) = took {
            // A poisoned lock only means another thread panicked; the
            // list is still whole.
            let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
            loaded.push((lang, t));
        }
    }

    fn english(&self) -> Result<&'c English, LangError> {
        let (e, took) = self.checker.english();
        self.note(Lang::En, took);
        e
    }

    fn french(&self) -> Result<&'c French, LangError> {
        let (f, took) = self.checker.french();
        self.note(Lang::Fr, took);
        f
    }

    /// `true` when `lang` accepts `word` as written: the dictionary knows
    /// it, or (English) it is a regular derivation of a known word.
    fn accepts(&self, lang: Lang, word: &str) -> Result<bool, LangError> {
        Ok(match lang {
            Lang::En => self.english()?.accepts(word),
            Lang::Fr => self.french()?.accepts(word),
        })
    }

    /// The words one edit from `lower` that `lang`'s dictionary knows,
    /// in the order of the alphabet.
    fn near(&self, lang: Lang, lower: &str) -> Result<Vec<String>, LangError> {
        Ok(match lang {
            Lang::En => self.english()?.near(lower),
            Lang::Fr => {
                let french = self.french()?;
                one_edit(lower)
                    .into_iter()
                    .filter(|c| french.knows(c))
                    .collect()
            }
        })
    }

    /// `true` when `lang`'s dictionary knows `word`.
    fn knows(&self, lang: Lang, word: &str) -> Result<bool, LangError> {
        Ok(match lang {
            Lang::En => self.english()?.knows(word),
            Lang::Fr => self.french()?.knows(word),
        })
    }
}

/// What the document tells about its words.
struct DocumentWords {
    /// How often each folded form appears.
    counts: FxHashMap<String, u32>,
    /// Folded forms written capitalised inside a sentence somewhere:
    /// names.
    names: FxHashSet<String>,
    /// The glossary's terms, folded.
    terms: FxHashSet<String>,
}

/// Endings of inflected forms, English and French, longest first.
const INFLECTIONS: &[&str] = &[
    "ements", "ement", "ing", "ers", "ons", "ent", "ées", "ies", "ied", "ed", "er", "es", "ez",
    "és", "ée", "ai", "ais", "ait", "ant", "s", "é", "e",
];

/// The stems of `folded`: itself and what is left without each ending
/// (four letters at least).
fn stems_of(folded: &str) -> impl Iterator<Item = &str> {
    std::iter::once(folded).chain(INFLECTIONS.iter().filter_map(move |end| {
        folded
            .strip_suffix(end)
            .filter(|stem| stem.chars().count() >= 4)
    }))
}

impl DocumentWords {
    fn of(paragraphs: &[Paragraph<'_>], tokens: &[Vec<Token<'_>>], terms: &[String]) -> Self {
        // Counted as written first: a document repeats its words, and
        // folding each distinct one once is what costs.
        let mut written: FxHashMap<&str, u32> = FxHashMap::default();
        let mut named: FxHashSet<&str> = FxHashSet::default();
        for (p, toks) in paragraphs.iter().zip(tokens) {
            for t in toks {
                if t.capitalised() && !t.sentence_start && !p.heading {
                    named.insert(t.text);
                }
                *written.entry(t.text).or_default() += 1;
            }
        }
        let mut counts: FxHashMap<String, u32> = FxHashMap::default();
        for (text, n) in written {
            let folded = fold(text);
            // The parts of "ipfs-car" count as words of the document.
            if folded.contains('-') {
                for part in folded.split('-').filter(|p| !p.is_empty()) {
                    *counts.entry(part.to_owned()).or_default() += n;
                }
            }
            *counts.entry(folded).or_default() += n;
        }
        let names: FxHashSet<String> = named.into_iter().map(fold).collect();
        let terms = terms
            .iter()
            .flat_map(|t| t.split_whitespace())
            .map(fold)
            .collect();
        DocumentWords {
            counts,
            names,
            terms,
        }
    }

    fn count(&self, folded: &str) -> u32 {
        self.counts.get(folded).copied().unwrap_or(0)
    }

    /// How many distinct forms of the document have `stem` among their
    /// [`stems_of`]: "Recetter" and "recettons" are two forms of
    /// "recett". Asked of the few words no dictionary knows, so worked
    /// out then rather than for every word of the document.
    fn forms_of_stem(&self, stem: &str) -> u32 {
        let mut n = u32::from(self.counts.contains_key(stem));
        if stem.chars().count() >= 4 {
            let mut form = String::with_capacity(stem.len() + 8);
            for end in INFLECTIONS {
                form.clear();
                form.push_str(stem);
                form.push_str(end);
                n += u32::from(self.counts.contains_key(form.as_str()));
            }
        }
        n
    }
}

/// A misspelling's verdict, the same for every occurrence of the word.
#[derive(Clone)]
struct Verdict {
    suggestions: Vec<String>,
    certain: bool,
    likely: bool,
    message: String,
}

/// A word as written, in a paragraph of a language, where a capital would
/// or would not make it a name: every such occurrence gets the same
/// verdict.
type WordKey<'t> = (Lang, &'t str, bool);

/// A distinct word, with the paragraph and the token where it first
/// appears.
type First<'t> = (WordKey<'t>, usize, usize);

/// How much of a text [`prefetch`] reads to tell its language.
const PREFETCH_SAMPLE: usize = 16 * 1024;

/// Loads the French dictionary when the first part of `text` is French
/// and French is checked (see [`Checker::prefetch`]).
pub(crate) fn prefetch(checker: &Checker, text: &str) {
    let c = checker.config();
    if !(c.spelling || c.grammar) || !c.languages.contains(&Lang::Fr) {
        return;
    }
    let mut end = text.len().min(PREFETCH_SAMPLE);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    if detect::guess(&text[..end]) == Some(Lang::Fr) {
        let _ = checker.french();
    }
}

/// Checks one document (see [`Checker::check`]). The paragraphs' words and
/// the verdicts on distinct words are worked out on every core; the
/// result is the same as one thread in paragraph order would give.
pub(crate) fn check_document(
    checker: &Checker,
    paragraphs: &[Paragraph<'_>],
    terms: &[String],
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<Report, LangError> {
    let config = checker.config();
    let (guessed, tokens): (Vec<Option<Lang>>, Vec<Vec<Token<'_>>>) = paragraphs
        .par_iter()
        .map(|p| (detect::guess(p.text), words(p.text)))
        .unzip();
    let langs = languages(paragraphs, &guessed, &config.languages);
    if stop() {
        return Err(LangError::Stopped);
    }
    let dicts = Dicts {
        checker,
        french_text: langs.contains(&Some(Lang::Fr)),
        loaded: Mutex::new(Vec::new()),
    };
    let wants_french = dicts.french_text && (config.spelling || config.grammar);
    // The French dictionary takes tens of milliseconds to load, and the
    // document's word table and the index of its distinct words are each
    // a pass over every word: the three at once.
    let ((french, doc), (firsts, verdict_of)) = rayon::join(
        || {
            rayon::join(
                || {
                    if wants_french {
                        dicts.french().map(|_| ())
                    } else {
                        Ok(())
                    }
                },
                || DocumentWords::of(paragraphs, &tokens, terms),
            )
        },
        || {
            if config.spelling {
                distinct_words(paragraphs, &tokens, &langs)
            } else {
                (Vec::new(), vec![Vec::new(); paragraphs.len()])
            }
        },
    );
    french?;
    let apostrophe = apostrophe_of(paragraphs, &langs);
    let verdicts = judge_all(checker, &dicts, &doc, paragraphs, &tokens, &firsts, stop)?;

    let per_paragraph: Vec<Vec<Issue>> = paragraphs
        .par_iter()
        .enumerate()
        .map(|(i, p)| -> Result<Vec<Issue>, LangError> {
            let Some(lang) = langs[i] else {
                return Ok(Vec::new());
            };
            if stop() {
                return Err(LangError::Stopped);
            }
            let mut out = Vec::new();
            for (t, id) in tokens[i].iter().zip(&verdict_of[i]) {
                if let Some(Some(v)) = verdicts.get(*id as usize) {
                    let hit = Hit {
                        start: t.start,
                        end: t.end,
                        kind: IssueKind::Misspelling,
                        message: v.message.clone(),
                        suggestions: v.suggestions.clone(),
                        certain: v.certain,
                    };
                    out.push(issue(i, lang, hit, v.likely));
                }
            }
            let hits = rule_hits(&dicts, p, &tokens[i], lang, apostrophe)?;
            out.extend(hits.into_iter().map(|h| issue(i, lang, h, true)));
            Ok(out)
        })
        .collect::<Result<_, _>>()?;
    let mut issues: Vec<Issue> = per_paragraph.into_iter().flatten().collect();
    issues.retain(|i| i.end > i.start || !i.suggestions.is_empty());
    issues.sort_by_key(|i| (i.paragraph, i.start, i.end));
    // Two rules on the same words (Harper's article rule and a doubled
    // word): the first one found stays.
    issues.dedup_by(|b, a| a.paragraph == b.paragraph && a.start == b.start && a.end == b.end);
    let loaded = dicts.loaded.into_inner().unwrap_or_else(|e| e.into_inner());
    Ok(Report {
        issues,
        languages: langs,
        loaded,
    })
}

/// The grammar and typography rules' hits in paragraph `p` (its `tokens`)
/// of language `lang`, as the configuration turns them on.
fn rule_hits(
    dicts: &Dicts<'_>,
    p: &Paragraph<'_>,
    tokens: &[Token<'_>],
    lang: Lang,
    apostrophe: char,
) -> Result<Vec<Hit>, LangError> {
    let config = dicts.checker.config();
    let mut hits: Vec<Hit> = Vec::new();
    if config.grammar {
        // A title may name a thing twice on purpose ("Dollar dollar").
        if !p.heading {
            hits.extend(repeated_words(p.text, tokens, lang));
        }
        match lang {
            Lang::En => {
                let english = dicts.english()?;
                hits.extend(english.articles(p.text, tokens));
                hits.extend(english.harper_rules(p.text));
            }
            Lang::Fr => {
                let french = dicts.french()?;
                let english = dicts.english()?;
                // "le endpoint" elides too: a borrowed English word.
                hits.extend(rules::elision(p.text, tokens, apostrophe, &|w| {
                    french.knows(w) || english.knows(w)
                }));
            }
        }
    }
    if config.typography && lang == Lang::Fr {
        hits.extend(rules::typography(p.text, config.typography_strict));
    }
    Ok(hits)
}

/// Each distinct word of the paragraphs that have a language once, with
/// where it first appears; and for each token of each paragraph, the
/// index of its word. A document writes its words many times over: each
/// is judged once, at its first occurrence.
fn distinct_words<'t>(
    paragraphs: &[Paragraph<'_>],
    tokens: &[Vec<Token<'t>>],
    langs: &[Option<Lang>],
) -> (Vec<First<'t>>, Vec<Vec<u32>>) {
    let mut index: FxHashMap<WordKey<'t>, u32> = FxHashMap::default();
    let mut firsts: Vec<First<'t>> = Vec::new();
    let mut verdict_of: Vec<Vec<u32>> = Vec::with_capacity(paragraphs.len());
    for (i, p) in paragraphs.iter().enumerate() {
        let Some(lang) = langs[i] else {
            verdict_of.push(Vec::new());
            continue;
        };
        let ids = tokens[i]
            .iter()
            .enumerate()
            .map(|(k, t)| {
                let key = (
                    lang,
                    t.text,
                    t.capitalised() && !t.sentence_start && !p.heading,
                );
                *index.entry(key).or_insert_with(|| {
                    firsts.push((key, i, k));
                    (firsts.len() - 1) as u32
                })
            })
            .collect();
        verdict_of.push(ids);
    }
    (firsts, verdict_of)
}

/// The verdict on each distinct word of `firsts` (by index), judged at
/// its first occurrence. The forms of one word as written (a name or
/// not) share a judgement, in the order they first appear, as one thread
/// reading the document would; different words are judged on any core.
fn judge_all(
    checker: &Checker,
    dicts: &Dicts<'_>,
    doc: &DocumentWords,
    paragraphs: &[Paragraph<'_>],
    tokens: &[Vec<Token<'_>>],
    firsts: &[First<'_>],
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<Vec<Option<Verdict>>, LangError> {
    let mut forms: FxHashMap<(Lang, &str), Vec<usize>> = FxHashMap::default();
    for (id, ((lang, text, _), _, _)) in firsts.iter().enumerate() {
        forms.entry((*lang, text)).or_default().push(id);
    }
    let forms: Vec<Vec<usize>> = forms.into_values().collect();
    let judged: Vec<Vec<(usize, Option<Verdict>)>> = forms
        .par_iter()
        .map(|ids| {
            if stop() {
                return Err(LangError::Stopped);
            }
            let mut shared = None;
            ids.iter()
                .map(|&id| {
                    let ((lang, _, _), i, k) = firsts[id];
                    let p = &paragraphs[i];
                    let v = word_verdict(checker, dicts, doc, &mut shared, lang, p, &tokens[i][k])?;
                    Ok((id, v))
                })
                .collect()
        })
        .collect::<Result<_, _>>()?;
    let mut verdicts: Vec<Option<Verdict>> = (0..firsts.len()).map(|_| None).collect();
    for (id, v) in judged.into_iter().flatten() {
        verdicts[id] = v;
    }
    Ok(verdicts)
}

fn issue(paragraph: usize, lang: Lang, hit: Hit, likely: bool) -> Issue {
    Issue {
        paragraph,
        start: hit.start,
        end: hit.end,
        kind: hit.kind,
        lang,
        message: hit.message,
        suggestions: hit.suggestions,
        certain: hit.certain,
        likely,
    }
}

/// The apostrophe the document's French text writes most (’ when none).
fn apostrophe_of(paragraphs: &[Paragraph<'_>], langs: &[Option<Lang>]) -> char {
    let (mut curly, mut straight) = (0usize, 0usize);
    for (p, l) in paragraphs.iter().zip(langs) {
        if *l == Some(Lang::Fr) {
            curly += p.text.matches('’').count();
            straight += p.text.matches('\'').count();
        }
    }
    if straight > curly {
        '\''
    } else {
        '’'
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The nearest guess found by searching from each paragraph: the
    /// quadratic way `languages` was written before.
    fn searched(paragraphs: &[Paragraph<'_>], guessed: &[Option<Lang>]) -> Vec<Option<Lang>> {
        (0..guessed.len())
            .map(|i| {
                let before = || guessed[..i].iter().rev().find_map(|g| *g);
                let after = || guessed[i + 1..].iter().find_map(|g| *g);
                guessed[i].or_else(|| {
                    if paragraphs[i].heading {
                        after().or_else(before)
                    } else {
                        before().or_else(after)
                    }
                })
            })
            .collect()
    }

    proptest! {
        #[test]
        fn each_paragraph_takes_the_nearest_guess_as_a_search_would(
            cells in proptest::collection::vec((0u8..3, any::<bool>()), 0..60),
        ) {
            let guessed: Vec<Option<Lang>> = cells
                .iter()
                .map(|(g, _)| match g { 0 => None, 1 => Some(Lang::En), _ => Some(Lang::Fr) })
                .collect();
            let paragraphs: Vec<Paragraph<'_>> = cells
                .iter()
                .map(|(_, heading)| Paragraph { text: "", heading: *heading })
                .collect();
            // Both languages allowed; when some paragraph has a guess, a
            // neighbour's always comes before the dominant language.
            let both = [Lang::En, Lang::Fr];
            prop_assert_eq!(languages(&paragraphs, &guessed, &both), searched(&paragraphs, &guessed));
        }
    }
}
