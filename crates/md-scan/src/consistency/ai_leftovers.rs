//! AI leftovers: sentences an assistant wrote to the person who asked for
//! the text, not to its reader ("Certainly! Here is the revised
//! introduction", "I hope this helps", "As an AI language model, I…").
//!
//! A phrase alone proves nothing: "here is the" and "in conclusion" are
//! ordinary technical prose ("A safe value here is the routing table",
//! "Here is a full example:"). So the sentence is judged. It is a leftover
//! when it
//!
//! * refers to its writer as an AI ("As an AI language model, I…");
//! * apologises in the first person ("I apologize for the confusion");
//! * offers further help ("Let me know if you need anything else", "I hope
//!   this helps", "n'hésitez pas à me demander");
//! * mentions the request ("Here is the revised version", "as you asked",
//!   "voici la version reformulée");
//! * or opens its paragraph with a chat reply ("Certainly!", "Great
//!   question!", "Sure, here's"; "Absolutely!" only when the line goes on
//!   to hand something over, "here is…"/"voici…").
//!
//! The configured `ai_leftover_patterns` (the ten of the spec by default)
//! are reported on their own only when `ai_leftover_phrase_matches` is
//! set, as `info`. `extra_ai_leftover_patterns` are a project's own known
//! leftovers and are always reported.

use super::KERNEL;
use crate::config::ScanConfig;
use crate::document::Document;
use crate::evidence::around;
use crate::gate::{Gated, GatedAlternatives, Needles, SharedGate, Warm};
use crate::quotes::{is_quoted, quoted_ranges};
use crate::ScanError;
use koas_review_schema::findings::{Finding, FindingKind, Severity};
use rayon::prelude::*;
use regex::Regex;
use std::sync::LazyLock;

/// Why a sentence speaks to the asker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reason {
    SelfReference,
    Apology,
    Offer,
    Request,
    ChatReply,
    ProjectPhrase,
}

impl Reason {
    fn text(self) -> &'static str {
        match self {
            Reason::SelfReference => "the writer calls itself an AI",
            Reason::Apology => "an apology to the asker",
            Reason::Offer => "an offer of further help",
            Reason::Request => "it mentions the request",
            Reason::ChatReply => "a chat reply opening the paragraph",
            Reason::ProjectPhrase => "a phrase the project lists as a leftover",
        }
    }
}

/// The built-in signals, English and French, each a case-insensitive
/// regex. Word edges are spelled out only where a word could continue.
/// Each alternative has the words every match of it contains, so a line
/// is searched only with the alternatives it may hold (see
/// `crate::gate::GatedAlternatives`).
static SIGNALS: LazyLock<Vec<(Reason, GatedAlternatives)>> = LazyLock::new(|| {
    vec![
        (
            Reason::SelfReference,
            GatedAlternatives::new(
                r"(?i)",
                &[
                    (
                        r"\bas an? (?:ai|artificial intelligence)(?: (?:language )?model| assistant| chatbot)?,? (?:i|i'm|i am)\b",
                        &[" a ai", " an ai", "artificial intelligence"],
                    ),
                    (r"\bas an? (?:large )?language model\b", &["language model"]),
                    (
                        r"\bi(?:'m|’m| am) (?:just |only )?an? (?:ai|artificial intelligence|(?:large )?language model)\b",
                        &[
                            " a ai",
                            " an ai",
                            "artificial intelligence",
                            "language model",
                        ],
                    ),
                    (
                        r"\bmy (?:knowledge cutoff|training data)\b",
                        &["knowledge cutoff", "training data"],
                    ),
                    (
                        r"\ben tant qu[e'’] ?(?:ia|intelligence artificielle|modèle de langage|assistant)\b",
                        &["en tant qu"],
                    ),
                    (
                        r"\bje suis une? (?:ia|intelligence artificielle|modèle de langage)\b",
                        &["je suis un"],
                    ),
                ],
                r"",
            ),
        ),
        (
            Reason::Apology,
            GatedAlternatives::new(
                r"(?i)\b",
                &[
                    (r"i apologi[sz]e", &["apologi"]),
                    (r"i(?:'m|’m| am) sorry", &["sorry"]),
                    (r"my apologies", &["apologies"]),
                    (r"apologies for (?:the|any) confusion", &["apologies for"]),
                    (r"sorry for (?:the|any) confusion", &["sorry for"]),
                    (r"je m['’]excuse", &["excuse"]),
                    (r"je suis désolée?", &["je suis d"]),
                    (r"toutes mes excuses", &["toutes mes excuses"]),
                ],
                r"\b",
            ),
        ),
        (
            Reason::Offer,
            GatedAlternatives::new(
                r"(?i)\b",
                &[
                    (
                        r"i hope (?:this|that|it) helps",
                        &["hope this helps", "hope that helps", "hope it helps"],
                    ),
                    (
                        r"hope (?:this|that) helps",
                        &["hope this helps", "hope that helps"],
                    ),
                    (
                        r"let me know if (?:you(?:'d|’d| would)? (?:like|want|need|have any)|there(?:'s|’s| is) anything|anything|i can)",
                        &["let me know if"],
                    ),
                    (r"feel free to ask", &["feel free to ask"]),
                    (
                        r"(?:don't|don’t|do not) hesitate to (?:ask|reach out)",
                        &["hesitate to"],
                    ),
                    (
                        r"if you have any (?:other |more |further )?questions",
                        &["if you have any"],
                    ),
                    (
                        r"i(?:'d|’d| would) be (?:happy|glad) to (?:help|assist|provide|expand|explain)",
                        &["be happy to", "be glad to"],
                    ),
                    (r"would you like me to", &["would you like me to"]),
                    (
                        r"n['’]hésitez pas à (?:me )?(?:demander|poser|solliciter)",
                        &["sitez pas"],
                    ),
                    (
                        r"j['’]espère que (?:cela|ceci|ça) (?:vous )?(?:aide|sera utile)",
                        &["j'esp", "j’esp"],
                    ),
                    (r"si vous avez d['’]autres questions", &["si vous avez d"]),
                    (r"voulez-vous que je", &["voulez-vous que je"]),
                    (r"souhaitez-vous que je", &["souhaitez-vous que je"]),
                ],
                r"",
            ),
        ),
        (
            Reason::Request,
            GatedAlternatives::new(
                r"(?i)\b",
                &[
                    (
                        r"here(?: is|'s|’s) (?:the|a|an|your) (?:revised|rewritten|updated|corrected|improved|edited|polished|translated|reformulated|shortened|condensed|expanded|requested)\b",
                        &["here is", "here's", "here’s"],
                    ),
                    (
                        r"(?:as|like) you (?:asked|requested)\b",
                        &["you asked", "you requested"],
                    ),
                    (r"you asked (?:for|me)\b", &["you asked"]),
                    (
                        r"voici (?:la|le|les|une|un|votre|vos) [^.!?]*?(?:révisée?s?|reformulée?s?|corrigée?s?|améliorée?s?|réécrite?s?|demandée?s?)\b",
                        &["voici"],
                    ),
                    (r"comme vous l['’]avez demandé\b", &["avez demand"]),
                ],
                r"",
            ),
        ),
    ]
});

/// The words of every signal in one automaton: one scan of a line tells
/// each signal the alternatives it may need.
static SIGNAL_GATE: LazyLock<SharedGate> =
    LazyLock::new(|| SharedGate::new(SIGNALS.iter().map(|(_, alternatives)| alternatives)));

/// A chat reply at the start of a paragraph; group `strong` marks the
/// replies that are leftovers by themselves.
static CHAT_REPLY: LazyLock<Gated> = LazyLock::new(|| {
    Gated::new(
        r"(?i)^(?:(?P<strong>certainly\s*!|(?:great|good|excellent) question\s*!|sure\s*[,!]\s*here(?:'s|’s| is)\b|excellente question\s*!|bonne question\s*!|certainement\s*!)|(?:absolutely|of course|sure|bien sûr|absolument|avec plaisir)\s*!)",
        Needles::new(&[
            "certain",
            "question",
            "sure",
            "absolu",
            "of course",
            "bien s",
            "avec plaisir",
        ]),
    )
});

/// `false` when `text` cannot start with a [`CHAT_REPLY`]: it starts with
/// none of the replies' first words (ASCII letters without case; a text
/// holding `ſ` or the Kelvin sign is always tried, as a case-insensitive
/// regex folds them onto `s` and `k`).
fn opens_like_a_reply(text: &str) -> bool {
    const FIRST_WORDS: [&str; 11] = [
        "certain",
        "great",
        "good",
        "excellent",
        "sure",
        "bonne",
        "absolu",
        "of course",
        "bien s",
        "avec plaisir",
        "excellente",
    ];
    FIRST_WORDS.iter().any(|w| {
        text.as_bytes()
            .get(..w.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(w.as_bytes()))
    }) || text.contains(['\u{17F}', '\u{212A}'])
}

/// Words that show a chat reply hands something over.
static HANDS_OVER: LazyLock<Gated> = LazyLock::new(|| {
    Gated::new(
        r"(?i)\b(?:here(?: is|'s|’s| are)|below is|voici|voilà)\b",
        Needles::new(&["here", "below is", "voici", "voil"]),
    )
});

/// Where the text of a line starts after block-quote, list and emphasis
/// markers.
fn content_start(line: &str) -> usize {
    let bytes = line.as_bytes();
    let mut i = 0;
    loop {
        while i < bytes.len() && (bytes[i] == b' ' || bytes[i] == b'\t') {
            i += 1;
        }
        match bytes.get(i) {
            Some(b'>') => i += 1,
            Some(b'-' | b'+') if bytes.get(i + 1) == Some(&b' ') => i += 2,
            Some(b'*') if bytes.get(i + 1) == Some(&b' ') => i += 2,
            Some(b'*' | b'_') => i += 1,
            Some(c) if c.is_ascii_digit() => {
                let mut j = i;
                while j < bytes.len() && bytes[j].is_ascii_digit() {
                    j += 1;
                }
                if matches!(bytes.get(j), Some(b'.' | b')')) && bytes.get(j + 1) == Some(&b' ') {
                    i = j + 2;
                } else {
                    return i;
                }
            }
            _ => return i,
        }
    }
}

/// Compiles ahead the signal regexes `text` may need (one per signal,
/// whatever the lines that need it).
///
/// The alternatives come from the lines that hold a signal word, found in
/// one pass over the text (a pass per signal over a large document costs
/// more than the compiles it prepares). A line holding `ſ` or the Kelvin
/// sign and no ASCII signal word is not among them: the line that needs
/// it compiles a larger regex later.
pub(crate) fn warm<'a>(text: &'a str, jobs: &mut Vec<Warm<'a>>) {
    // A later document of the run finds the regexes of the earlier ones.
    if SIGNALS.iter().any(|(_, a)| a.compiled_any()) {
        return;
    }
    jobs.push(Box::new(move || {
        let Some(lines) = SIGNAL_GATE.lines_with_match(text) else {
            SIGNALS
                .par_iter()
                .for_each(|(_, alternatives)| alternatives.warm(text));
            return;
        };
        let mut needed = vec![0u64; SIGNALS.len()];
        for line in lines {
            for (n, m) in needed.iter_mut().zip(SIGNAL_GATE.masks(line)) {
                *n |= m;
            }
        }
        SIGNALS
            .par_iter()
            .zip(needed)
            .for_each(|((_, alternatives), mask)| {
                alternatives.regex_for(mask);
            });
    }));
}

/// The compiled configured patterns.
pub struct AiLeftovers {
    /// `ai_leftover_patterns`: reported alone only as `info`, on request,
    /// so compiled only then.
    phrases: Vec<Gated>,
    /// `extra_ai_leftover_patterns`: always reported.
    project: Vec<Regex>,
    phrase_matches: bool,
}

fn compile(key: &str, patterns: &[String]) -> Result<Vec<Regex>, ScanError> {
    patterns
        .iter()
        .map(|p| {
            Regex::new(p).map_err(|e| ScanError::InvalidPattern {
                key: key.to_string(),
                pattern: p.to_string(),
                reason: e.to_string(),
            })
        })
        .collect()
}

impl AiLeftovers {
    /// Compiles the configured patterns.
    pub fn new(config: &ScanConfig) -> Result<Self, ScanError> {
        let phrases = config
            .ai_leftover_patterns
            .iter()
            .map(|p| {
                // The built-in patterns are valid (a test compiles them):
                // only a project's own are parsed here.
                if crate::config::DEFAULT_AI_LEFTOVER_PATTERNS.contains(&p.as_str()) {
                    return Ok(Gated::new(p.as_str(), Needles::default()));
                }
                Gated::checked(p.as_str(), Needles::default()).map_err(|e| {
                    ScanError::InvalidPattern {
                        key: "ai_leftover_patterns".to_string(),
                        pattern: p.to_string(),
                        reason: e.to_string(),
                    }
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(AiLeftovers {
            phrases,
            project: compile(
                "extra_ai_leftover_patterns",
                &config.extra_ai_leftover_patterns,
            )?,
            phrase_matches: config.ai_leftover_phrase_matches,
        })
    }

    /// `true` when `line` starts a paragraph: the first line, or after a
    /// blank line, a heading or a protected block.
    fn opens_paragraph(doc: &Document<'_>, line: u32) -> bool {
        line == 1
            || doc.index.is_blank(line - 1)
            || doc.is_heading(line - 1)
            || doc.block_kind(line - 1).is_some()
    }

    /// The signals of one prose line: `(start, end, reason)`, unquoted.
    fn judge(&self, doc: &Document<'_>, line: u32, prose: &str) -> Vec<(usize, usize, Reason)> {
        // Quotes are found only for a line that has a candidate.
        let quoted = std::cell::OnceCell::new();
        let free =
            |s: usize, e: usize| !is_quoted(quoted.get_or_init(|| quoted_ranges(prose)), s, e);
        let mut hits = Vec::new();
        // One scan for the words of every signal: most lines have none.
        let masks = SIGNAL_GATE.masks(prose);
        for ((reason, alternatives), mask) in SIGNALS.iter().zip(masks) {
            let Some((re, _)) = alternatives.regex_for(mask) else {
                continue;
            };
            let found = re
                .find_iter(prose)
                .find(|m| free(m.start(), m.end()))
                .map(|m| (m.start(), m.end()));
            if let Some((start, end)) = found {
                hits.push((start, end, *reason));
            }
        }
        for re in &self.project {
            if let Some(m) = re
                .find_iter(prose)
                .find(|m| !m.is_empty() && free(m.start(), m.end()))
            {
                hits.push((m.start(), m.end(), Reason::ProjectPhrase));
            }
        }
        let start = content_start(prose);
        let opening = &prose[start..];
        if let Some(reply) = opens_like_a_reply(opening)
            .then(|| CHAT_REPLY.for_text(opening))
            .flatten()
        {
            if let Some(c) = reply.captures(&prose[start..]) {
                let whole = c.get(0).map_or(0..0, |m| m.range());
                let strong = c.name("strong").is_some();
                let rest = &prose[start + whole.end..];
                if Self::opens_paragraph(doc, line)
                    && (strong || HANDS_OVER.for_text(rest).is_some_and(|h| h.is_match(rest)))
                {
                    hits.push((start + whole.start, start + whole.end, Reason::ChatReply));
                }
            }
        }
        hits.sort_unstable_by_key(|h| (h.0, h.1));
        hits
    }

    /// One finding per line holding a leftover.
    pub fn detect(&self, doc: &Document<'_>, out: &mut Vec<Finding>) {
        for line in 1..=doc.line_count() {
            let Some(prose) = doc.prose(line) else {
                continue;
            };
            if prose.trim().is_empty() {
                continue;
            }
            let hits = self.judge(doc, line, prose);
            if let Some(&(first, _, _)) = hits.first() {
                let last = hits.iter().map(|h| h.1).max().unwrap_or(first);
                let mut reasons: Vec<&str> = hits.iter().map(|h| h.2.text()).collect();
                reasons.dedup();
                let phrases: Vec<String> = hits
                    .iter()
                    .map(|&(s, e, _)| format!("“{}”", prose[s..e].trim()))
                    .collect();
                out.push(
                    Finding::new(
                        FindingKind::AiLeftover,
                        KERNEL,
                        line,
                        line,
                        format!(
                            "Text left by an AI assistant ({}: {}): it speaks to whoever asked for the text, not to the reader; remove or rewrite it",
                            phrases.join(", "),
                            reasons.join(", ")
                        ),
                        &around(doc.line(line), first, last),
                    )
                    .at_column(doc.column(line, first)),
                );
                continue;
            }
            if !self.phrase_matches {
                continue;
            }
            let quoted = quoted_ranges(prose);
            let Some(m) = self.phrases.iter().find_map(|gated| {
                gated
                    .for_text(prose)?
                    .find_iter(prose)
                    .find(|m| !m.is_empty() && !is_quoted(&quoted, m.start(), m.end()))
            }) else {
                continue;
            };
            let mut finding = Finding::new(
                FindingKind::AiLeftover,
                KERNEL,
                line,
                line,
                format!(
                    "“{}” is a phrase assistants leave behind, but its sentence reads as ordinary prose; check it",
                    m.as_str().trim()
                ),
                &around(doc.line(line), m.start(), m.end()),
            )
            .at_column(doc.column(line, m.start()));
            finding.severity = Severity::Info;
            out.push(finding);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::test_support::stage1;

    fn scan(text: &str, config: &ScanConfig) -> Vec<Finding> {
        let s1 = stage1(text);
        let doc = Document::new(s1.view(text)).expect("doc");
        let mut out = Vec::new();
        AiLeftovers::new(config)
            .expect("compiles")
            .detect(&doc, &mut out);
        out
    }

    fn lines(text: &str) -> Vec<u32> {
        scan(text, &ScanConfig::default())
            .iter()
            .map(|f| f.line)
            .collect()
    }

    #[test]
    fn the_built_in_patterns_compile() {
        for p in crate::config::DEFAULT_AI_LEFTOVER_PATTERNS {
            assert!(Regex::new(p).is_ok(), "{p}");
        }
        for (_, alternatives) in SIGNALS.iter() {
            assert!(Regex::new(&alternatives.whole_pattern()).is_ok());
        }
        assert!(Regex::new(&CHAT_REPLY.pattern).is_ok());
        assert!(Regex::new(&HANDS_OVER.pattern).is_ok());
    }

    proptest::proptest! {
        /// The signals split into gated alternatives find exactly what each
        /// whole alternation finds.
        #[test]
        fn split_signals_match_like_the_whole(
            words in proptest::collection::vec(
                "(as|an|a|AI|i|I'm|am|language|model|sorry|my|apologies|for|the|confusion|je|suis|désolée|excuse|m’excuse|hope|this|helps|let|me|know|if|you|here|is|here’s|revised|asked|voici|la|version|reformulée|comme|vous|l'avez|demandé|,|!|\\.)",
                0..14,
            )
        ) {
            let hay = words.join(" ");
            for (_, alternatives) in SIGNALS.iter() {
                let whole = Regex::new(&alternatives.whole_pattern()).expect("valid");
                let expected: Vec<_> = whole.find_iter(&hay).map(|m| m.range()).collect();
                let got: Vec<_> = alternatives
                    .for_text(&hay)
                    .map(|r| r.find_iter(&hay).map(|m| m.range()).collect())
                    .unwrap_or_default();
                proptest::prop_assert_eq!(expected, got, "{}", hay);
            }
        }
    }

    #[test]
    fn replies_are_tried_only_on_their_first_words() {
        assert!(opens_like_a_reply("Certainly! Here"));
        assert!(opens_like_a_reply("BIEN SÛR !"));
        assert!(opens_like_a_reply("of course!"));
        assert!(!opens_like_a_reply("The figures, certainly!"));
        assert!(opens_like_a_reply("ſure!"));
    }

    #[test]
    fn sentences_that_speak_to_the_asker_are_reported() {
        let text =
            "# T\n\nCertainly! Here is the text.\n\nAs an AI model, I cannot check this.\n\n\
                    I hope this helps! Let me know if you need more.\n\nSure, here’s a summary.\n\n\
                    The figures were updated. I apologize for the confusion earlier.\n\n\
                    Here is the revised paragraph about retention.\n\n\
                    Absolutely! Voici la version reformulée.\n\n\
                    N'hésitez pas à me demander une autre version.\n";
        let found = scan(text, &ScanConfig::default());
        let at: Vec<u32> = found.iter().map(|f| f.line).collect();
        assert_eq!(at, [3, 5, 7, 9, 11, 13, 15, 17], "{found:#?}");
        assert!(found.iter().all(|f| f.severity == Severity::Warning));
        assert!(found[2].message.contains("offer of further help"));
        assert!(found[4].message.contains("apology"));
        assert_eq!(found[4].column, 27, "the column of the apology");
    }

    /// Regression: the phrase-anywhere matching of the first version
    /// reported ordinary technical prose.
    #[test]
    fn ordinary_prose_with_the_spec_phrases_is_not_reported() {
        for text in [
            "A safe value here is the default route of the host.",
            "The `0` here is a placeholder for the port.",
            "What is covered here is the process after the handshake.",
            "Here is a full example `config.json`:",
            "Here is an example of a manifest with two layers:",
            "In conclusion, the protocol needs no extra round trip.",
            "Yes, absolutely! The option is supported.",
            "Great question from the partner review: tokens expire.",
            "Contact us and let me know if the build breaks.",
            "Your request must carry a bearer token, as requested by the gateway.",
            "Votre demande est validée par la DINUM dans un délai de 5 jours.",
            "The AI model, as an AI researcher would call it, is small.",
        ] {
            let doc = format!("# T\n\n{text}\n");
            assert!(lines(&doc).is_empty(), "{text}");
        }
        assert!(lines("# T\n\nThe team answers.\nAbsolutely! It works.\n").is_empty());
    }

    #[test]
    fn chat_replies_count_only_at_the_start_of_a_paragraph() {
        assert_eq!(lines("# T\n\nCertainly! The API is stable.\n"), [3]);
        assert!(lines("# T\n\nThe answer is: certainly! The API is stable.\n").is_empty());
        assert!(lines("# T\n\nThe API changed.\nCertainly! It is stable.\n").is_empty());
        assert_eq!(lines("# T\n\n> Certainly! Here is the text.\n"), [3]);
    }

    #[test]
    fn phrase_matches_are_info_and_only_on_request() {
        let text = "# T\n\nHere is an example of the result:\n";
        assert!(scan(text, &ScanConfig::default()).is_empty());
        let config = ScanConfig {
            ai_leftover_phrase_matches: true,
            ..ScanConfig::default()
        };
        let found = scan(text, &config);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].severity, Severity::Info);
    }

    #[test]
    fn ignores_code_and_project_phrases_are_always_reported() {
        let text = "# T\n\n```\nAs an AI model, I cannot\n```\n\nThe string `I hope this helps` is matched.\n\nVoici le texte final.\n";
        assert!(scan(text, &ScanConfig::default()).is_empty());
        let config = ScanConfig {
            extra_ai_leftover_patterns: vec![r"(?i)\bvoici le texte\b".into()],
            ..ScanConfig::default()
        };
        let found = scan(text, &config);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].line, 9);
        assert!(found[0].message.contains("project lists"));
    }

    #[test]
    fn quoted_phrases_are_mentions() {
        let text = "# T\n\nThe patterns (\"As an AI model, I\", “I hope this helps”) are configurable.\n\n\"Quoted\" but I hope this helps.\n";
        assert_eq!(lines(text), [5]);
    }

    #[test]
    fn a_bad_pattern_is_an_error_naming_it() {
        let config = ScanConfig {
            ai_leftover_patterns: vec!["(unclosed".into()],
            ..ScanConfig::default()
        };
        let err = AiLeftovers::new(&config).err().expect("refused");
        assert!(err.to_string().contains("(unclosed"), "{err}");
    }
}
