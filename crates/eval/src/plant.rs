//! Planting defects in a clean document, deterministically.
//!
//! Each defect changes one prose line (never a heading, a table, code,
//! math, front matter or HTML: the lines a model may edit) and no two
//! defects share a line or touch neighbouring lines, so a fix can be told
//! from a change next to it. The same document, language and seed always
//! give the same planted copy.

use koas_md_scan::stage1::Stage1Artifacts;
use koas_md_scan::Document;
use serde::{Deserialize, Serialize};

/// What was planted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DefectKind {
    /// Two neighbouring letters of a word swapped ("recieve").
    Misspelling,
    /// A word written twice ("the the").
    DoubledWord,
    /// A verb that no longer agrees with its subject ("the logs is").
    Agreement,
    /// A number in the prose changed ("three" tables, "4" nodes).
    WrongNumber,
    /// A link's `#fragment` that no longer names a heading.
    BrokenAnchor,
}

impl DefectKind {
    /// Every kind, in the order they are tried.
    pub const ALL: [DefectKind; 5] = [
        DefectKind::Misspelling,
        DefectKind::DoubledWord,
        DefectKind::Agreement,
        DefectKind::WrongNumber,
        DefectKind::BrokenAnchor,
    ];

    /// The kind's name in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            DefectKind::Misspelling => "misspelling",
            DefectKind::DoubledWord => "doubled_word",
            DefectKind::Agreement => "agreement",
            DefectKind::WrongNumber => "wrong_number",
            DefectKind::BrokenAnchor => "broken_anchor",
        }
    }
}

/// The language of a document: which agreement errors can be planted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lang {
    /// English.
    En,
    /// French.
    Fr,
}

/// One planted defect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlantedDefect {
    /// `D01`, `D02`… in line order.
    pub id: String,
    /// What was planted.
    pub kind: DefectKind,
    /// The line (1-based; the planted copy has the same lines as the
    /// original).
    pub line: usize,
    /// The line as the original has it.
    pub truth: String,
    /// The line as the planted copy has it.
    pub planted: String,
}

/// A planted copy of a clean document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlantedDoc {
    /// The document's name.
    pub name: String,
    /// The clean original.
    pub truth: String,
    /// The copy with its defects.
    pub text: String,
    /// Its defects, by line.
    pub defects: Vec<PlantedDefect>,
}

/// A small deterministic generator (SplitMix64): the planted set must
/// depend only on the seed, whatever the platform or a crate's version.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

/// The 1-based lines a defect may be planted on: prose a model may edit,
/// long enough to hold one.
fn eligible_lines(text: &str) -> Vec<usize> {
    let stage1 = Stage1Artifacts::compute(text);
    let Ok(doc) = Document::new(stage1.view(text)) else {
        return Vec::new();
    };
    (1..=doc.line_count())
        .filter(|&l| !doc.is_heading(l))
        .filter(|&l| {
            doc.prose(l).is_some_and(|p| {
                let t = p.trim_start();
                // Not a table row, a quote marker alone or an HTML line.
                !t.starts_with('|') && !t.starts_with('<') && t.split_whitespace().count() >= 6
            })
        })
        .map(|l| l as usize)
        .collect()
}

/// Words of `line` (byte ranges) made of letters only, at least `min`
/// characters, outside inline code (masked as spaces in `prose`).
fn words(prose: &str, min: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in prose
        .char_indices()
        .chain(std::iter::once((prose.len(), ' ')))
    {
        if c.is_alphabetic() {
            start.get_or_insert(i);
        } else if let Some(s) = start.take() {
            // A word glued to a digit, an apostrophe or a dot is left.
            let before = prose[..s].chars().next_back();
            // Part of a longer token: "revert-of-revert", "v1.2", "l'audit".
            let joins =
                |x: char| x.is_alphanumeric() || matches!(x, '\'' | '’' | '_' | '-' | '/' | '.');
            let glued = before.is_some_and(joins) || joins(c);
            if !glued && prose[s..i].chars().count() >= min {
                out.push((s, i));
            }
        }
    }
    out
}

/// Agreement swaps: (subject's verb as written, as planted), both ways.
fn agreement_pairs(lang: Lang) -> &'static [(&'static str, &'static str)] {
    match lang {
        Lang::En => &[
            (" is ", " are "),
            (" are ", " is "),
            (" has ", " have "),
            (" have ", " has "),
            (" was ", " were "),
            (" were ", " was "),
        ],
        Lang::Fr => &[
            (" est ", " sont "),
            (" sont ", " est "),
            (" a été ", " ont été "),
            (" ont été ", " a été "),
            (" doit ", " doivent "),
            (" doivent ", " doit "),
        ],
    }
}

const NUMBER_WORDS: &[(&str, &str)] = &[
    ("two", "three"),
    ("three", "four"),
    ("four", "five"),
    ("five", "six"),
    ("deux", "trois"),
    ("trois", "quatre"),
    ("quatre", "cinq"),
    ("cinq", "six"),
];

/// Plants one defect of `kind` in `line` (its raw text and prose view),
/// or `None` when the line offers no place for it.
fn plant_one(
    kind: DefectKind,
    lang: Lang,
    raw: &str,
    prose: &str,
    rng: &mut Rng,
) -> Option<String> {
    match kind {
        DefectKind::Misspelling => {
            let candidates: Vec<(usize, usize)> = words(prose, 6)
                .into_iter()
                .filter(|&(s, e)| raw[s..e].chars().all(|c| c.is_ascii_lowercase()))
                .collect();
            let (s, e) = *candidates.get(rng.below(candidates.len()))?;
            let word: Vec<char> = raw[s..e].chars().collect();
            // Swap two inner letters that differ.
            let spots: Vec<usize> = (1..word.len() - 2)
                .filter(|&i| word[i] != word[i + 1])
                .collect();
            let i = *spots.get(rng.below(spots.len()))?;
            let mut swapped = word.clone();
            swapped.swap(i, i + 1);
            let new: String = swapped.into_iter().collect();
            Some(format!("{}{new}{}", &raw[..s], &raw[e..]))
        }
        DefectKind::DoubledWord => {
            let candidates = words(prose, 3);
            let (s, e) = *candidates.get(rng.below(candidates.len()))?;
            Some(format!("{} {}{}", &raw[..e], &raw[s..e], &raw[e..]))
        }
        DefectKind::Agreement => {
            let pairs: Vec<&(&str, &str)> = agreement_pairs(lang)
                .iter()
                .filter(|(from, _)| prose.contains(from))
                .collect();
            let (from, to) = **pairs.get(rng.below(pairs.len()))?;
            let at = prose.find(from)?;
            Some(format!("{}{to}{}", &raw[..at], &raw[at + from.len()..]))
        }
        DefectKind::WrongNumber => {
            // A small count in digits, or a number word.
            for (s, e) in words(prose, 3) {
                let w = raw[s..e].to_lowercase();
                if let Some((_, to)) = NUMBER_WORDS.iter().find(|(from, _)| *from == w) {
                    let to = if raw[s..e].starts_with(char::is_uppercase) {
                        let mut c = to.chars();
                        c.next()
                            .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
                            .unwrap_or_default()
                    } else {
                        (*to).to_string()
                    };
                    return Some(format!("{}{to}{}", &raw[..s], &raw[e..]));
                }
            }
            let bytes = prose.as_bytes();
            let mut i = 0;
            while i < bytes.len() {
                if bytes[i].is_ascii_digit() {
                    let start = i;
                    while i < bytes.len() && bytes[i].is_ascii_digit() {
                        i += 1;
                    }
                    let lone = (start == 0 || bytes[start - 1] == b' ')
                        && (i == bytes.len() || bytes[i] == b' ');
                    // A count ("3 tables"), not a label ("Stage 1", "tier
                    // 0"): a plural word follows.
                    let plural_after = prose[i..].split_whitespace().next().is_some_and(|w| {
                        w.len() > 3 && w.ends_with('s') && w.chars().all(char::is_alphabetic)
                    });
                    let n: u32 = prose[start..i].parse().unwrap_or(0);
                    if lone && i - start <= 3 && plural_after && n >= 2 {
                        return Some(format!("{}{}{}", &raw[..start], n + 1, &raw[i..]));
                    }
                }
                i += 1;
            }
            None
        }
        DefectKind::BrokenAnchor => {
            let at = prose.find("](#")? + 3;
            let end = at + prose[at..].find(')')?;
            let fragment = &raw[at..end];
            if fragment.chars().count() < 4 || !fragment.is_ascii() {
                return None;
            }
            // Drop one inner letter.
            let i = 1 + rng.below(fragment.len() - 2);
            Some(format!(
                "{}{}{}{}",
                &raw[..at],
                &fragment[..i],
                &fragment[i + 1..],
                &raw[end..]
            ))
        }
    }
}

/// Plants up to `max` defects in `truth`, each kind in turn, on lines
/// chosen by `seed`.
pub fn plant(name: &str, truth: &str, lang: Lang, seed: u64, max: usize) -> PlantedDoc {
    let mut rng = Rng::new(seed ^ fnv(name));
    let mut lines: Vec<String> = truth.split('\n').map(str::to_string).collect();
    let stage1 = Stage1Artifacts::compute(truth);
    let prose: Vec<Option<String>> = match Document::new(stage1.view(truth)) {
        Ok(doc) => (0..=lines.len())
            .map(|l| doc.prose(l.max(1) as u32).map(str::to_string))
            .collect(),
        Err(_) => vec![None; lines.len() + 1],
    };
    let mut free = eligible_lines(truth);
    let mut defects: Vec<PlantedDefect> = Vec::new();
    // Kinds in turn, from one the seed picks (a small budget still sees
    // every kind across seeds).
    let mut kinds = DefectKind::ALL
        .iter()
        .cycle()
        .skip(rng.below(DefectKind::ALL.len()));
    let mut misses = 0;
    while defects.len() < max && !free.is_empty() && misses < DefectKind::ALL.len() * 8 {
        let kind = *kinds.next().unwrap_or(&DefectKind::Misspelling);
        // Lines that can take this kind, in a seeded order.
        let mut tries = free.clone();
        let mut planted = None;
        while !tries.is_empty() {
            let line = tries.swap_remove(rng.below(tries.len()));
            let (Some(raw), Some(Some(view))) = (lines.get(line - 1), prose.get(line)) else {
                continue;
            };
            if view.len() != raw.len() {
                continue;
            }
            if let Some(new) = plant_one(kind, lang, raw, view, &mut rng) {
                if new != *raw {
                    planted = Some((line, new));
                    break;
                }
            }
        }
        let Some((line, new)) = planted else {
            misses += 1;
            continue;
        };
        let truth_line = std::mem::replace(&mut lines[line - 1], new.clone());
        defects.push(PlantedDefect {
            id: String::new(),
            kind,
            line,
            truth: truth_line,
            planted: new,
        });
        // No other defect on this line or its neighbours.
        free.retain(|&l| l + 1 < line || l > line + 1);
    }
    defects.sort_by_key(|d| d.line);
    for (i, d) in defects.iter_mut().enumerate() {
        d.id = format!("D{:02}", i + 1);
    }
    PlantedDoc {
        name: name.to_string(),
        truth: truth.to_string(),
        text: lines.join("\n"),
        defects,
    }
}

/// FNV-1a of a name: one seed gives each document its own choices.
fn fnv(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}
