//! One word's verdict: known, a typical slip, or unknown with its suggestions.

use super::*;

/// The verdict on word `t` of paragraph `p`: `None` when it is no
/// misspelling.
pub(super) fn word_verdict(
    checker: &Checker,
    dicts: &Dicts<'_>,
    doc: &DocumentWords,
    shared: &mut Option<Option<Verdict>>,
    lang: Lang,
    p: &Paragraph<'_>,
    t: &Token<'_>,
) -> Result<Option<Verdict>, LangError> {
    // One letter is no word to misspell: "a", "I", the "s" after a
    // code span ("`Foo`s").
    if t.text.chars().count() < 2 {
        return Ok(None);
    }
    let words = &checker.words;
    let folded = fold(t.text);
    // "fmt's" is the document's "fmt".
    let folded = folded
        .strip_suffix("'s")
        .map(str::to_owned)
        .unwrap_or(folded);
    if words.rejects(t.text) {
        return Ok(Some(Verdict {
            suggestions: Vec::new(),
            certain: false,
            likely: true,
            message: format!("“{}” is on the project's list of words to avoid", t.text),
        }));
    }
    if words.accepts(t.text) || doc.terms.contains(&folded) {
        return Ok(None);
    }
    let min = checker.config().document_words;
    if min > 0 && doc.count(&folded) >= min {
        return Ok(None);
    }
    // A word the dictionary knows is no misspelling whatever the rules
    // below say (they only ever excuse a word): most words end here.
    if dicts.knows(lang, t.text)? {
        return Ok(None);
    }
    // A word one typical slip from a dictionary word ("thiss", "writen",
    // "teh") is judged as a slip: none of the rules below, which accept
    // inflections, derivations and compounds, may let it through.
    let base = match lang {
        Lang::Fr => dicts.french()?.split_elision(t.text).1.to_lowercase(),
        Lang::En => folded.clone(),
    };
    // (A compound is judged part by part below.)
    if !t.text.contains('-') && typical_slip(dicts, lang, &base)? {
        if let Some(v) = shared {
            return Ok(v.clone());
        }
        let verdict = judge(dicts, doc, lang, p, t)?;
        *shared = Some(verdict.clone());
        return Ok(verdict);
    }
    if inflection_vouched(doc, &folded, min) {
        return Ok(None);
    }

    // A capital inside a sentence makes a name; a word written so
    // anywhere in the document is one everywhere.
    if (t.capitalised() && !t.sentence_start && !p.heading) || doc.names.contains(&folded) {
        return Ok(None);
    }
    if let Some(v) = shared {
        return Ok(v.clone());
    }
    // A compound is judged by its parts: one the document or the project
    // vouches for is no misspelling, and a short unknown part is an
    // abbreviation ("cgo-related", "UB-checking").
    if t.text.contains('-') && compound_vouched(checker, dicts, doc, lang, t.text)? {
        return Ok(None);
    }
    let verdict = judge(dicts, doc, lang, p, t)?;
    *shared = Some(verdict.clone());
    Ok(verdict)
}

/// Whether `folded` is an inflection of the document's own word
/// ("kustomizations" in a document about kustomization), or the document
/// writes its singular and plural at least `min` times in all.
fn inflection_vouched(doc: &DocumentWords, folded: &str, min: u32) -> bool {
    let vouched = |stem: &str| {
        stem.chars().count() >= 4
            && (doc.terms.contains(stem) || (min > 0 && doc.count(stem) >= min))
    };
    for suffix in ["s", "es", "ed", "ing", "er", "ers", "'s"] {
        if folded.strip_suffix(suffix).is_some_and(&vouched) {
            return true;
        }
    }
    // Singular and plural both written, once each ("annotathon",
    // "annotathons"): the document uses the word.
    let plural = format!("{folded}s");
    let family = doc.count(folded)
        + doc.count(&plural)
        + folded.strip_suffix('s').map_or(0, |stem| doc.count(stem));
    min > 0 && family >= min
}

/// Whether compound `text` passes by its parts: every part the document
/// or the project vouches for, or a short unknown part (an abbreviation:
/// "cgo-related", "UB-checking").
fn compound_vouched(
    checker: &Checker,
    dicts: &Dicts<'_>,
    doc: &DocumentWords,
    lang: Lang,
    text: &str,
) -> Result<bool, LangError> {
    let words = &checker.words;
    let min = checker.config().document_words;
    let mut unknown = Vec::new();
    for part in text.split('-').filter(|p| !p.is_empty()) {
        let f = fold(part);
        let vouched = words.accepts(part)
            || (lang == Lang::Fr && French::is_prefix(part))
            || doc.terms.contains(&f)
            || (min > 0 && doc.count(&f) >= min)
            || dicts.accepts(lang, part)?;
        if !vouched {
            unknown.push(part);
        }
    }
    Ok(unknown.is_empty() || unknown.iter().any(|p| p.chars().count() <= 3))
}

/// `true` when `lower` is one typical slip (two neighbours swapped, a
/// doubled letter lost or added) from a word `lang`'s dictionary knows.
pub(super) fn typical_slip(dicts: &Dicts<'_>, lang: Lang, lower: &str) -> Result<bool, LangError> {
    let c: Vec<char> = lower.chars().collect();
    if c.len() < 3 {
        return Ok(false);
    }
    let mut tries: Vec<String> = Vec::new();
    for i in 0..c.len() {
        if i + 1 < c.len() && c[i] != c[i + 1] {
            let mut v = c.clone();
            v.swap(i, i + 1);
            tries.push(v.into_iter().collect());
        }
        if i + 1 < c.len() && c[i] == c[i + 1] {
            let mut v = c.clone();
            v.remove(i);
            tries.push(v.into_iter().collect());
        }
        if i > 0 && c[i].is_alphabetic() {
            let mut v = c.clone();
            v.insert(i, c[i]);
            tries.push(v.into_iter().collect());
        }
    }
    for w in tries {
        if dicts.knows(lang, &w)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The dictionary's judgement on a word the document does not vouch for.
pub(super) fn judge(
    dicts: &Dicts<'_>,
    doc: &DocumentWords,
    lang: Lang,
    p: &Paragraph<'_>,
    t: &Token<'_>,
) -> Result<Option<Verdict>, LangError> {
    if dicts.knows(lang, t.text)? {
        return Ok(None);
    }
    let (head, base) = match lang {
        Lang::Fr => dicts.french()?.split_elision(t.text),
        Lang::En => ("", t.text),
    };
    let lower = base.to_lowercase();
    let slip_shaped = !lower.contains('-') && typical_slip(dicts, lang, &lower)?;
    if !slip_shaped && dicts.accepts(lang, t.text)? {
        return Ok(None);
    }
    if borrowed(dicts, doc, lang, t.text, &lower, slip_shaped)? {
        return Ok(None);
    }
    let letters = lower.chars().count();
    let mut near: Vec<String> = Vec::new();
    if (2..=30).contains(&letters) {
        near = dicts.near(lang, &lower)?;
    }
    // Best first: the likelier slips (two letters swapped, a doubled
    // letter, any edit sparing the first letter), then the words the
    // document uses most, then in the order of the alphabet (stable).
    near.sort_by_cached_key(|w| {
        (
            slip_kind(&lower, w),
            std::cmp::Reverse(doc.count(w)),
            w.clone(),
        )
    });
    let slips: Vec<&String> = near.iter().filter(|w| slip_like(&lower, w)).collect();
    let used: Vec<&&String> = slips.iter().filter(|w| doc.count(w) > 0).collect();
    // The word the document uses must also be the most typical slip:
    // "writen" is "written" (a doubled letter lost) even in a document
    // that writes "writes" and not "written".
    let best_kind = slips.iter().map(|w| slip_kind(&lower, w)).min();
    let certain = doc.count(&fold(t.text)) <= 1
        && used.len() == 1
        && Some(slip_kind(&lower, used[0])) == best_kind
        && (letters >= 4
            || (letters == 3 && distance(&lower, used[0]) == 1 && lower.len() == used[0].len()));
    // Another form of the same stem in the document ("Recetter",
    // "recettons") is a word of its subject, conjugated or inflected,
    // unless the document uses a word one slip away ("configureed" in a
    // document that writes "configured").
    if used.is_empty()
        && !slip_shaped
        && stems_of(&fold(t.text)).any(|stem| doc.forms_of_stem(stem) >= 2)
    {
        return Ok(None);
    }
    // Two words written as one ("skillset", "cowpath") is how English
    // makes terms; unless the document points at a slip, it is one.
    if !certain && !slip_shaped && lang == Lang::En && dicts.english()?.is_compound(&lower) {
        return Ok(None);
    }
    let suggestions = suggestions(dicts, lang, &lower, &near, (head, base))?;
    // A short word the dictionary lacks is more often an abbreviation
    // than a slip, and a capitalised one opening a sentence more often a
    // name: likely only when the document itself points at the word meant.
    // A word of seven letters or more one slip away from a dictionary
    // word is likely that word mistyped; a shorter one is as often an
    // abbreviation or a name.
    // A capitalised word inside a heading is a title's word or a name:
    // a hint at most, never fixed.
    // So is a word in emphasis: a term being introduced, often coined
    // ("*annotathons*").
    let title_word = (p.heading && t.capitalised() && !t.sentence_start) || t.emphasised;
    let certain = certain && !title_word;
    let likely = if title_word {
        false
    } else if letters <= 6 || t.capitalised() {
        certain
    } else {
        certain || !slips.is_empty()
    };
    let message = message(t.text, lang, likely, &suggestions);
    Ok(Some(Verdict {
        suggestions,
        certain: certain && likely,
        likely,
        message,
    }))
}

/// Whether `text`, unknown in `lang`'s dictionary, is a word borrowed from
/// the other language of the document.
fn borrowed(
    dicts: &Dicts<'_>,
    doc: &DocumentWords,
    lang: Lang,
    text: &str,
    lower: &str,
    slip_shaped: bool,
) -> Result<bool, LangError> {
    // French technical prose borrows English terms ("le build", "un
    // webhook"); an English paragraph may quote a French expression, but
    // only when the document has French text is that dictionary read.
    match lang {
        Lang::Fr => {
            // Unless it is a short French word mistyped into an English
            // one ("snot" for "sont", "bin" for "bien") that the document
            // writes correctly elsewhere.
            if dicts.english()?.knows(text) && !slip_shaped {
                let short = lower.chars().count() <= 6;
                let mut french_twin = false;
                if short {
                    let french = dicts.french()?;
                    french_twin = one_edit(lower)
                        .iter()
                        .any(|w| doc.count(w) > 0 && french.knows(w));
                }
                if !french_twin {
                    return Ok(true);
                }
            }
        }
        Lang::En => {
            if dicts.french_text && dicts.french()?.knows(text) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// Up to five suggestions for `lower` (best first), written as the word
/// (`head` then `base`) is: its elided article and its case.
fn suggestions(
    dicts: &Dicts<'_>,
    lang: Lang,
    lower: &str,
    near: &[String],
    (head, base): (&str, &str),
) -> Result<Vec<String>, LangError> {
    let letters = lower.chars().count();
    let mut suggestions: Vec<String> = near.to_vec();
    if suggestions.is_empty() && letters >= 4 {
        // English words two edits away come from an automaton over the
        // word list. French has none: Hunspell's own suggestions take tens
        // of milliseconds a word and vary from run to run, so a French
        // word with nothing one edit away gets no suggestion.
        let mut more = match lang {
            Lang::En => dicts.english()?.candidates(lower, 2, 8),
            Lang::Fr => Vec::new(),
        };
        // Closest first, then in the order of the alphabet.
        more.sort_by(|a, b| {
            distance(lower, a)
                .cmp(&distance(lower, b))
                .then_with(|| a.cmp(b))
        });
        suggestions.extend(more);
    }
    suggestions.dedup();
    suggestions.truncate(5);
    let suggestions: Vec<String> = suggestions
        .into_iter()
        .map(|s| format!("{head}{}", match_case(&s, base)))
        .collect();
    Ok(suggestions)
}

/// The finding's message for unknown word `text`.
fn message(text: &str, lang: Lang, likely: bool, suggestions: &[String]) -> String {
    let name = lang.name();
    if likely {
        format!(
            "“{}” is not in the {name} dictionary: did you mean {}?",
            text,
            quote_list(suggestions)
        )
    } else if suggestions.is_empty() {
        format!(
            "“{}” is not in the {name} dictionary; if it is right, add it to the project's words",
            text
        )
    } else {
        format!(
        "“{}” is not in the {name} dictionary (close: {}); if it is right, add it to the project's words",
        text,
        quote_list(suggestions)
    )
    }
}

/// “a”, “b” or “c”.
pub(super) fn quote_list(words: &[String]) -> String {
    let quoted: Vec<String> = words.iter().take(3).map(|w| format!("“{w}”")).collect();
    match quoted.len() {
        0 => String::new(),
        1 => quoted[0].clone(),
        n => format!("{} or {}", quoted[..n - 1].join(", "), quoted[n - 1]),
    }
}
