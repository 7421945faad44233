//! French rules of this crate: elision ("le arbre" → "l’arbre") and
//! typography (the no-break space before `;` `:` `!` `?` and inside « »).

use crate::grammar::Hit;
use crate::tokens::{Token, BLANK};
use crate::IssueKind;

/// Words elided before a vowel, with their elided form.
const ELIDING: &[(&str, &str)] = &[
    ("le", "l"),
    ("la", "l"),
    ("de", "d"),
    ("je", "j"),
    ("me", "m"),
    ("te", "t"),
    ("se", "s"),
    ("ne", "n"),
    ("que", "qu"),
    ("jusque", "jusqu"),
    ("lorsque", "lorsqu"),
    ("puisque", "puisqu"),
];

/// The length in bytes of the longest word of [`ELIDING`] ("si" and "ce"
/// are shorter).
const ELIDING_LONGEST: usize = 7;

/// Words starting with a vowel before which nothing is elided.
const NO_ELISION: &[&str] = &[
    "onze",
    "onzième",
    "oui",
    "ouistiti",
    "ouate",
    "uhlan",
    "ululement",
    "ululer",
    // Conjunctions and prepositions: "la ou les", "le et la".
    "ou",
    "où",
    "et",
    "à",
    "au",
    "aux",
    "en",
    "y",
    "ainsi",
    "après",
    "avec",
    "entre",
];

/// Words with a mute h (elided before: "l’heure"). An h word not listed
/// here is taken as aspirated ("le hash", "le header"), which is also
/// what English loanwords are.
const MUTE_H: &[&str] = &[
    "habilitation",
    "habilitations",
    "habillage",
    "habitant",
    "habitants",
    "habitation",
    "habitude",
    "habitudes",
    "hameçonnage",
    "harmonie",
    "harmonisation",
    "hébergement",
    "hébergements",
    "hébergeur",
    "hébergeurs",
    "héritage",
    "héritages",
    "héritier",
    "herbe",
    "heure",
    "heures",
    "histoire",
    "historique",
    "historiques",
    "hiver",
    "homme",
    "hommes",
    "homologation",
    "homologue",
    "honneur",
    "hôpital",
    "horaire",
    "horaires",
    "horizon",
    "hôte",
    "hôtes",
    "hôtel",
    "huile",
    "humain",
    "humains",
    "humanité",
    "humeur",
    "humour",
    "hygiène",
    "hypothèse",
    "hypothèses",
    "hydrogène",
    "hébergé",
    "hébergée",
    "hébergés",
    "hébergées",
    "héberger",
    "héberge",
];

fn starts_with_vowel(word: &str) -> bool {
    let lower = word.to_lowercase();
    if NO_ELISION.contains(&lower.as_str()) {
        return false;
    }
    match lower.chars().next() {
        Some(
            'a' | 'e' | 'i' | 'o' | 'u' | 'é' | 'è' | 'ê' | 'à' | 'â' | 'î' | 'ï' | 'ô' | 'û' | 'œ',
        ) => true,
        Some('h') => MUTE_H.contains(&lower.as_str()),
        _ => false,
    }
}

/// Articles, pronouns and conjunctions written whole before a vowel:
/// "le arbre", "de une", "que il", "si il". `apostrophe` is the one the
/// document writes.
/// `known` tells a French word: before a misspelled one ("la onnée")
/// nothing is said, the misspelling is the problem.
pub fn elision(
    text: &str,
    tokens: &[Token<'_>],
    apostrophe: char,
    known: &dyn Fn(&str) -> bool,
) -> Vec<Hit> {
    let mut out = Vec::new();
    for pair in tokens.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        // Only the short words above elide ("puisque" is the longest):
        // most pairs end here, before anything is lowered.
        if a.text.len() > ELIDING_LONGEST {
            continue;
        }
        let gap = &text[a.end..b.start];
        if gap.is_empty() || !gap.chars().all(|c| c == ' ') {
            continue;
        }
        // A capitalised next word is a name or a title: left alone.
        if b.capitalised() || b.text.contains(['-', '\'', '’']) {
            continue;
        }
        let lower = a.text.to_lowercase();
        // "la une" is a newspaper's front page.
        if lower == "la" && b.text == "une" {
            continue;
        }
        let elided = if lower == "si" && matches!(b.text, "il" | "ils") {
            Some("s")
        } else if lower == "ce" && matches!(b.text, "est" | "était" | "étaient") {
            Some("c")
        } else if starts_with_vowel(b.text) {
            ELIDING
                .iter()
                .find(|(whole, _)| *whole == lower)
                .map(|(_, short)| *short)
        } else {
            None
        };
        let Some(short) = elided else { continue };
        if !known(b.text) {
            continue;
        }
        // Keep the capital of a sentence's first word.
        let short = if a.capitalised() {
            let mut c = short.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        } else {
            short.to_owned()
        };
        let fixed = format!("{short}{apostrophe}{}", b.text);
        out.push(Hit {
            start: a.start,
            end: b.end,
            kind: IssueKind::Article,
            message: format!(
                "“{}” is elided before “{}”: write “{fixed}”",
                a.text, b.text
            ),
            suggestions: vec![fixed],
            certain: true,
        });
    }
    out
}

/// The no-break space French typography wants before `c`: a narrow one
/// before `;` `!` `?`, a normal one before `:` and inside « ».
fn wanted_space(c: char) -> char {
    match c {
        ':' | '«' | '»' => '\u{a0}',
        _ => '\u{202f}',
    }
}

fn is_nbsp(c: char) -> bool {
    c == '\u{a0}' || c == '\u{202f}'
}

/// Missing spaces before `;` `:` `!` `?` and inside « »; with `strict`,
/// also the breaking spaces there that should be no-break ones (most
/// French written on a keyboard types a plain space: reported only when
/// a project asks).
pub fn typography(text: &str, strict: bool) -> Vec<Hit> {
    let mut out = Vec::new();
    // Only the marks are looked at, and only their neighbours read.
    let marks = text.match_indices([';', ':', '!', '?', '«', '»']);
    for (i, mark) in marks {
        let Some(c) = mark.chars().next() else {
            continue;
        };
        let prev = text[..i].chars().next_back();
        let next = text[i + c.len_utf8()..].chars().next();
        match c {
            ';' | ':' | '!' | '?' => {
                let Some(p) = prev else { continue };
                // Only the first of "?!" or "!!"; a Markdown image
                // (`![`), a time or ratio (`10:30`), a smiley, an
                // emoji code (`:ok:`), a line's first character.
                if matches!(p, ';' | ':' | '!' | '?' | '\n' | BLANK)
                    || (c == '!' && next == Some('['))
                    || (c == ':'
                        && (p.is_ascii_digit() || next.is_some_and(|n| !n.is_whitespace())))
                    || next.is_some_and(|n| matches!(n, ')' | '(' | '/' | '-' | BLANK))
                    || is_nbsp(p)
                    || (c == ':' && in_colon_code(&text[..i]))
                {
                    continue;
                }
                let space = wanted_space(c);
                if p == ' ' {
                    if strict {
                        out.push(space_hit(i - 1, i, c, space, true));
                    }
                } else if p.is_alphanumeric() || matches!(p, '»' | ')' | '*' | '_' | '"' | '”') {
                    out.push(Hit {
                        start: i,
                        end: i + c.len_utf8(),
                        kind: IssueKind::Typography,
                        message: format!("French typography puts a no-break space before “{c}”"),
                        suggestions: vec![format!("{space}{c}")],
                        certain: false,
                    });
                }
            }
            '«' => {
                if let Some(n) = next {
                    if n == ' ' {
                        if strict {
                            let at = i + c.len_utf8();
                            out.push(space_hit(at, at + 1, c, wanted_space(c), false));
                        }
                    } else if n.is_alphanumeric() {
                        out.push(Hit {
                            start: i,
                            end: i + c.len_utf8(),
                            kind: IssueKind::Typography,
                            message: "French typography puts a no-break space after “«”".into(),
                            suggestions: vec![format!("«{}", wanted_space(c))],
                            certain: false,
                        });
                    }
                }
            }
            '»' => {
                if let Some(p) = prev {
                    if p == ' ' {
                        if strict {
                            out.push(space_hit(i - 1, i, c, wanted_space(c), true));
                        }
                    } else if p.is_alphanumeric() || matches!(p, '.' | '!' | '?') {
                        out.push(Hit {
                            start: i,
                            end: i + c.len_utf8(),
                            kind: IssueKind::Typography,
                            message: "French typography puts a no-break space before “»”".into(),
                            suggestions: vec![format!("{}»", wanted_space(c))],
                            certain: false,
                        });
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// `true` when the `:` that follows `before` closes a code such as
/// `:white_check_mark:` (its run of non-space characters starts with `:`).
fn in_colon_code(before: &str) -> bool {
    let run = before.rfind(char::is_whitespace).map_or(before, |at| {
        before[at..].trim_start_matches(char::is_whitespace)
    });
    run.starts_with(':')
}

/// A breaking space at `start..end` next to `mark` that should be `space`.
fn space_hit(start: usize, end: usize, mark: char, space: char, before: bool) -> Hit {
    let kind = if space == '\u{202f}' {
        "a narrow no-break space"
    } else {
        "a no-break space"
    };
    let side = if before { "before" } else { "after" };
    Hit {
        start,
        end,
        kind: IssueKind::Typography,
        message: format!(
            "The space {side} “{mark}” can break the line: French typography puts {kind} there"
        ),
        suggestions: vec![space.to_string()],
        certain: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::words;

    fn elide(text: &str) -> Vec<String> {
        elision(text, &words(text), '’', &|w| w != "onnée")
            .into_iter()
            .map(|h| format!("{}→{}", &text[h.start..h.end], h.suggestions[0]))
            .collect()
    }

    #[test]
    fn the_longest_eliding_word_is_known() {
        let longest = ELIDING.iter().map(|(w, _)| w.len()).max();
        assert_eq!(longest, Some(ELIDING_LONGEST));
    }

    #[test]
    fn vowels_and_mute_h_elide_the_article() {
        assert_eq!(
            elide("Le arbre de une forêt, que il voit si il peut. Ce est le heure."),
            [
                "Le arbre→L’arbre",
                "de une→d’une",
                "que il→qu’il",
                "si il→s’il",
                "Ce est→C’est",
                "le heure→l’heure"
            ]
        );
    }

    #[test]
    fn aspirated_h_names_and_exceptions_do_not() {
        assert!(
            elide("le hash, le header, le onze, de Orange, la une, la ou les, le `x` arbre")
                .is_empty()
        );
        assert!(elide("le arbre").len() == 1);
        assert!(
            elide("la onnée").is_empty(),
            "a misspelled word is not elided before"
        );
        assert!(elide(&format!("le{BLANK}arbre")).is_empty());
    }

    #[test]
    fn typography_wants_no_break_spaces() {
        let t = "Attention : vrai! « mot » et «mot» ; ok\u{a0}: ![img] 10:30 :ok: fin?";
        let hits = typography(t, true);
        let got: Vec<&str> = hits.iter().map(|h| &t[h.start..h.end]).collect();
        assert_eq!(got, [" ", "!", " ", " ", "«", "»", " ", "?"], "{hits:?}");
        let hits = typography(t, false);
        let got: Vec<&str> = hits.iter().map(|h| &t[h.start..h.end]).collect();
        assert_eq!(got, ["!", "«", "»", "?"], "{hits:?}");
    }
}
