//! A compiled Vale pattern: the `regex` crate's when it reads the pattern
//! (most do: a search in linear time, with Go's ASCII word boundary, as
//! Vale's), else fancy-regex's (look-arounds, back-references). Both
//! answer through the same few methods, in fancy-regex's shape (a search
//! may give up: `Err`), so the rules do not know which one they hold.

use std::borrow::Cow;

/// Why a search gave up (fancy-regex's backtracking limit).
pub(crate) type SearchError = fancy_regex::Error;

/// A compiled pattern.
#[derive(Debug, Clone)]
pub(crate) enum Regex {
    /// Read by the `regex` crate.
    Plain(regex::Regex),
    /// Needs look-arounds or back-references; with, when it has no
    /// back-reference, the pattern without its look-arounds, which matches
    /// wherever it does: a text the latter does not match is not searched.
    Fancy(fancy_regex::Regex, Option<regex::Regex>),
    /// An alternation of many groups, a few needing look-arounds: those
    /// in a pattern of their own, the others in one the `regex` crate
    /// reads, their matches merged as the one pattern would find them.
    Split(Box<Split>),
}

/// The parts of a [`Regex::Split`].
#[derive(Debug, Clone)]
pub(crate) struct Split {
    /// Each part and, for each of its groups, the alternative it is.
    parts: Vec<(Regex, Vec<usize>)>,
    /// How many alternatives (groups) the whole pattern has.
    alternatives: usize,
    /// The whole pattern, for what only it can do (a replacement).
    whole: String,
}

/// `pattern` with its look-arounds taken out and its atomic groups made
/// plain: a pattern that matches wherever it matches. `None` when it has
/// a back-reference (nothing to take out) or does not read.
fn without_look_arounds(pattern: &str) -> Option<String> {
    let bytes = pattern.as_bytes();
    if bytes
        .windows(2)
        .any(|w| w[0] == b'\\' && (b'1'..=b'9').contains(&w[1]) || w == b"\\k")
    {
        return None;
    }
    let mut out = String::with_capacity(pattern.len());
    let mut i = 0;
    let mut in_class = false;
    while i < bytes.len() {
        let rest = &pattern[i..];
        if bytes[i] == b'\\' {
            let c = rest[1..].chars().next()?;
            out.push('\\');
            out.push(c);
            i += 1 + c.len_utf8();
            continue;
        }
        if in_class {
            if bytes[i] == b']' {
                in_class = false;
            }
        } else if bytes[i] == b'[' {
            in_class = true;
            // `[]` or `[^]` opens with a literal `]`.
            let skip = if rest.starts_with("[^]") {
                3
            } else if rest.starts_with("[]") {
                2
            } else {
                1
            };
            out.push_str(&rest[..skip]);
            i += skip;
            continue;
        } else if ["(?=", "(?!", "(?<=", "(?<!"]
            .iter()
            .any(|m| rest.starts_with(m))
        {
            i += group_len(rest)?;
            continue;
        } else if rest.starts_with("(?>") {
            out.push_str("(?:");
            i += 3;
            continue;
        }
        let c = rest.chars().next()?;
        out.push(c);
        i += c.len_utf8();
    }
    Some(out)
}

/// The length of the group `text` opens, its closing `)` included.
fn group_len(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let (mut depth, mut i, mut in_class) = (0usize, 0usize, false);
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'[' if !in_class => in_class = true,
            b']' if in_class => in_class = false,
            b'(' if !in_class => depth += 1,
            b')' if !in_class => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Whether a pattern uses what only the backtracking engine has.
fn needs_backtracking(pattern: &str) -> bool {
    ["(?=", "(?!", "(?<=", "(?<!", "(?>", "\\k<"]
        .iter()
        .any(|m| pattern.contains(m))
        || pattern
            .as_bytes()
            .windows(2)
            .any(|w| w[0] == b'\\' && (b'1'..=b'9').contains(&w[1]))
}

/// One match: its place in the text searched.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Found<'t> {
    text: &'t str,
    start: usize,
    end: usize,
}

impl<'t> Found<'t> {
    /// Its first byte.
    pub(crate) fn start(&self) -> usize {
        self.start
    }

    /// Just past its last byte.
    pub(crate) fn end(&self) -> usize {
        self.end
    }

    /// What it matched.
    pub(crate) fn as_str(&self) -> &'t str {
        self.text.get(self.start..self.end).unwrap_or("")
    }
}

/// One match with its groups.
#[derive(Debug, Clone)]
pub(crate) struct Groups<'t> {
    groups: Vec<Option<Found<'t>>>,
}

impl<'t> Groups<'t> {
    /// Group `i` (0: the whole match), when it took part.
    pub(crate) fn get(&self, i: usize) -> Option<Found<'t>> {
        self.groups.get(i).copied().flatten()
    }

    /// How many groups the pattern has, the whole match included.
    pub(crate) fn len(&self) -> usize {
        self.groups.len()
    }
}

/// Go's `\b` (an ASCII word boundary) where the `regex` crate reads it:
/// outside a character class, an unescaped `\b` or `\B` becomes
/// `(?-u:\b)` or `(?-u:\B)`.
fn ascii_boundaries(pattern: &str) -> Cow<'_, str> {
    if !pattern.contains("\\b") && !pattern.contains("\\B") {
        return Cow::Borrowed(pattern);
    }
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(b @ ('b' | 'B')) if !in_class => {
                    out.push_str("(?-u:\\");
                    out.push(b);
                    out.push(')');
                }
                Some(other) => {
                    out.push('\\');
                    out.push(other);
                }
                None => out.push('\\'),
            },
            '[' if !in_class => {
                in_class = true;
                out.push('[');
                // A `]` first (after an optional `^`) is a member.
                if chars.peek() == Some(&'^') {
                    out.push('^');
                    chars.next();
                }
                if chars.peek() == Some(&']') {
                    out.push(']');
                    chars.next();
                }
            }
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            other => out.push(other),
        }
    }
    Cow::Owned(out)
}

impl Regex {
    /// Compiles `head(a1)|(a2)|…tail`, one group per alternative (each
    /// already in this dialect, its own groups non-capturing): when a few
    /// of many alternatives need the backtracking engine, as a
    /// [`Regex::Split`], so that the rest keep the fast one.
    pub(crate) fn alternation(
        head: &str,
        alternatives: &[String],
        tail: &str,
    ) -> Result<Regex, fancy_regex::Error> {
        let group = |alts: &[&String]| {
            let body: Vec<String> = alts.iter().map(|a| format!("({a})")).collect();
            format!("{head}{}{tail}", body.join("|"))
        };
        let all: Vec<&String> = alternatives.iter().collect();
        let whole = group(&all);
        let (slow, fast): (Vec<usize>, Vec<usize>) =
            (0..alternatives.len()).partition(|&i| needs_backtracking(&alternatives[i]));
        if slow.is_empty() || fast.len() < 4 {
            return Regex::new(&whole);
        }
        let mut parts = Vec::new();
        for indices in [fast, slow] {
            let alts: Vec<&String> = indices.iter().map(|&i| &alternatives[i]).collect();
            parts.push((Regex::new(&group(&alts))?, indices));
        }
        Ok(Regex::Split(Box::new(Split {
            parts,
            alternatives: alternatives.len(),
            whole,
        })))
    }

    /// Compiles a pattern already in this dialect (see
    /// `pattern::from_go`).
    pub(crate) fn new(pattern: &str) -> Result<Regex, fancy_regex::Error> {
        match regex::Regex::new(&ascii_boundaries(pattern)) {
            Ok(plain) => Ok(Regex::Plain(plain)),
            Err(_) => {
                let fancy = fancy_regex::Regex::new(pattern)?;
                let prefilter = without_look_arounds(pattern)
                    .and_then(|p| regex::Regex::new(&ascii_boundaries(&p)).ok());
                Ok(Regex::Fancy(fancy, prefilter))
            }
        }
    }

    /// Whether it matches somewhere in `text`.
    pub(crate) fn is_match(&self, text: &str) -> Result<bool, SearchError> {
        match self {
            Regex::Plain(re) => Ok(re.is_match(text)),
            Regex::Fancy(_, Some(pre)) if !pre.is_match(text) => Ok(false),
            Regex::Fancy(re, _) => re.is_match(text),
            Regex::Split(split) => Ok(!split.merged(text).is_empty()),
        }
    }

    /// Its first match in `text`.
    pub(crate) fn find<'t>(&self, text: &'t str) -> Result<Option<Found<'t>>, SearchError> {
        let found = |start, end| Found { text, start, end };
        match self {
            Regex::Plain(re) => Ok(re.find(text).map(|m| found(m.start(), m.end()))),
            Regex::Fancy(_, Some(pre)) if !pre.is_match(text) => Ok(None),
            Regex::Fancy(re, _) => Ok(re.find(text)?.map(|m| found(m.start(), m.end()))),
            Regex::Split(split) => Ok(split.merged(text).first().and_then(|g| g.get(0))),
        }
    }

    /// Its matches in `text`, in order; a search that gives up ends with
    /// an `Err`.
    pub(crate) fn find_iter<'r, 't>(
        &'r self,
        text: &'t str,
    ) -> Box<dyn Iterator<Item = Result<Found<'t>, SearchError>> + 'r>
    where
        't: 'r,
    {
        let found = move |start, end| Found { text, start, end };
        match self {
            Regex::Plain(re) => Box::new(
                re.find_iter(text)
                    .map(move |m| Ok(found(m.start(), m.end()))),
            ),
            Regex::Fancy(_, Some(pre)) if !pre.is_match(text) => Box::new(std::iter::empty()),
            Regex::Fancy(re, _) => Box::new(
                re.find_iter(text)
                    .map(move |m| m.map(|m| found(m.start(), m.end()))),
            ),
            Regex::Split(split) => Box::new(
                split
                    .merged(text)
                    .into_iter()
                    .filter_map(|g| g.get(0))
                    .map(Ok),
            ),
        }
    }

    /// Its matches in `text` with their groups, in order; a search that
    /// gives up ends with an `Err`.
    pub(crate) fn captures_iter<'r, 't>(
        &'r self,
        text: &'t str,
    ) -> Box<dyn Iterator<Item = Result<Groups<'t>, SearchError>> + 'r>
    where
        't: 'r,
    {
        let found = move |start, end| Found { text, start, end };
        match self {
            Regex::Plain(re) => Box::new(re.captures_iter(text).map(move |c| {
                Ok(Groups {
                    groups: c
                        .iter()
                        .map(|g| g.map(|m| found(m.start(), m.end())))
                        .collect(),
                })
            })),
            Regex::Fancy(_, Some(pre)) if !pre.is_match(text) => Box::new(std::iter::empty()),
            Regex::Fancy(re, _) => Box::new(re.captures_iter(text).map(move |c| {
                c.map(|c| Groups {
                    groups: c
                        .iter()
                        .map(|g| g.map(|m| found(m.start(), m.end())))
                        .collect(),
                })
            })),
            Regex::Split(split) => Box::new(split.merged(text).into_iter().map(Ok)),
        }
    }

    /// `text` with its first `limit` matches (0: all) replaced by
    /// `replacement` (`${1}` names a group).
    pub(crate) fn try_replacen<'t>(
        &self,
        text: &'t str,
        limit: usize,
        replacement: &str,
    ) -> Result<Cow<'t, str>, SearchError> {
        match self {
            Regex::Plain(re) => Ok(re.replacen(text, limit, replacement)),
            Regex::Fancy(re, _) => re.try_replacen(text, limit, replacement),
            // Not asked of an alternation by any rule: the whole pattern
            // answers, slowly but rightly.
            Regex::Split(split) => Ok(Cow::Owned(
                fancy_regex::Regex::new(&split.whole)?
                    .try_replacen(text, limit, replacement)?
                    .into_owned(),
            )),
        }
    }
}

impl Split {
    /// The matches the whole pattern would give, with their groups
    /// numbered as in it: every part's matches, the leftmost first and,
    /// of two at one place, the earlier alternative's; none overlapping
    /// one kept before it. A part whose search gives up gives what it
    /// found before.
    fn merged<'t>(&self, text: &'t str) -> Vec<Groups<'t>> {
        let mut all: Vec<(usize, usize, Groups<'t>)> = Vec::new();
        for (part, indices) in &self.parts {
            for found in part.captures_iter(text) {
                let Ok(found) = found else { break };
                let Some(whole) = found.get(0) else { continue };
                let Some((j, group)) = (1..found.len()).find_map(|j| found.get(j).map(|g| (j, g)))
                else {
                    continue;
                };
                let Some(&alternative) = indices.get(j - 1) else {
                    continue;
                };
                let mut groups = vec![None; self.alternatives + 1];
                groups[0] = Some(whole);
                groups[alternative + 1] = Some(group);
                all.push((whole.start(), alternative, Groups { groups }));
            }
        }
        all.sort_by_key(|(start, alternative, _)| (*start, *alternative));
        let mut out = Vec::with_capacity(all.len());
        let mut end = 0;
        for (start, _, groups) in all {
            if start < end {
                continue;
            }
            end = groups.get(0).map_or(start, |g| g.end().max(start + 1));
            out.push(groups);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_patterns_take_the_linear_engine_with_gos_word_boundary() {
        let re = Regex::new(r"(?i)\b(?:caf)\b").expect("compiles");
        assert!(matches!(re, Regex::Plain(_)));
        // Go's \b is ASCII: "é" is no word character there.
        assert_eq!(
            re.find("un café").ok().flatten().map(|f| f.as_str()),
            Some("caf")
        );
        assert_eq!(ascii_boundaries(r"[\b]\b"), r"[\b](?-u:\b)");
        assert_eq!(ascii_boundaries(r"[]\b]x\B"), r"[]\b]x(?-u:\B)");
    }

    #[test]
    fn look_arounds_come_out_of_the_prefilter() {
        assert_eq!(
            without_look_arounds(r"(?:^|\s)I(?=\s)").as_deref(),
            Some(r"(?:^|\s)I")
        );
        assert_eq!(
            without_look_arounds(r"(?<!:[^ )]+?):\s[A-Z]").as_deref(),
            Some(r":\s[A-Z]")
        );
        assert_eq!(
            without_look_arounds(r"a(?!b(c)d)e[(?=]").as_deref(),
            Some(r"ae[(?=]")
        );
        assert_eq!(
            without_look_arounds(r"(?>ab)\(?=x\)").as_deref(),
            Some(r"(?:ab)\(?=x\)")
        );
        assert_eq!(without_look_arounds(r"(a)\1"), None);
        let re = Regex::new(r"(?i)\bit is(?!\.)").expect("compiles");
        assert!(matches!(re, Regex::Fancy(_, Some(_))));
        assert_eq!(re.find_iter("It is. it is so").count(), 1);
        assert_eq!(re.find_iter("nothing here").count(), 0);
    }

    #[test]
    fn an_alternation_split_finds_what_the_whole_pattern_finds() {
        let keys: Vec<String> = [
            "in order to",
            "utilize",
            "all of(?! a sudden)",
            "make use of",
            "prior to",
            "it is(?!\\.)",
        ]
        .iter()
        .map(|k| k.to_string())
        .collect();
        let split = Regex::alternation(r"(?i)\b(?:", &keys, r")\b").expect("compiles");
        assert!(matches!(split, Regex::Split(_)));
        let whole = fancy_regex::Regex::new(&format!(
            r"(?i)\b(?:{})\b",
            keys.iter()
                .map(|k| format!("({k})"))
                .collect::<Vec<_>>()
                .join("|")
        ))
        .expect("compiles");
        let text = "In order to utilize all of it, all of a sudden, it is. It is fine; make use of it prior to that.";
        let ours: Vec<(usize, usize, usize)> = split
            .captures_iter(text)
            .filter_map(Result::ok)
            .map(|g| {
                let k = (1..g.len()).find(|&i| g.get(i).is_some()).unwrap_or(0);
                let m = g.get(0).map_or((0, 0), |m| (m.start(), m.end()));
                (m.0, m.1, k)
            })
            .collect();
        let theirs: Vec<(usize, usize, usize)> = whole
            .captures_iter(text)
            .filter_map(Result::ok)
            .map(|c| {
                let k = (1..c.len()).find(|&i| c.get(i).is_some()).unwrap_or(0);
                let m = c.get(0).map_or((0, 0), |m| (m.start(), m.end()));
                (m.0, m.1, k)
            })
            .collect();
        assert_eq!(ours, theirs);
        assert_eq!(ours.len(), 6, "{ours:?}");
    }

    #[test]
    fn look_arounds_take_the_backtracking_engine_and_both_answer_alike() {
        let fancy = Regex::new(r"(?<=a)(b)(c)?").expect("compiles");
        assert!(matches!(fancy, Regex::Fancy(_, Some(_))));
        let plain = Regex::new(r"a(b)(c)?").expect("compiles");
        for re in [&fancy, &plain] {
            let groups: Vec<Groups<'_>> = re.captures_iter("xab").filter_map(Result::ok).collect();
            assert_eq!(groups.len(), 1);
            assert_eq!(groups[0].len(), 3);
            assert_eq!(groups[0].get(1).map(|g| g.as_str()), Some("b"));
            assert!(groups[0].get(2).is_none());
            assert_eq!(
                re.try_replacen("ab ab", 0, "[${1}]").ok().as_deref(),
                Some(if matches!(re, Regex::Fancy(..)) {
                    "a[b] a[b]"
                } else {
                    "[b] [b]"
                })
            );
            assert_eq!(re.find_iter("ab ab").count(), 2);
            assert_eq!(re.is_match("zzz").ok(), Some(false));
        }
    }
}
