//! Ending generation as soon as the answer is complete: at a stop
//! marker, once a whole JSON value follows a "complete after" marker, or
//! when the output starts repeating itself (a small model that wrote its
//! answer and then loops on it until the token cap).
//!
//! A prose answer (a paragraph the request asked for, with
//! [`LlmRequest::prose_until`]) has no closing bracket to wait for, so
//! it gets two more rules, for it alone: once the text holds the
//! request's number of characters, the first sentence end (`.`, `!`,
//! `?`, `…`, with its closing quotes or brackets, then whitespace; or a
//! paragraph break) ends it ([`StopReason::Enough`]); and a sentence of
//! at least 20 non-blank characters written a second time ends it before
//! the repeat ([`StopReason::Repetition`]). A dot after an abbreviation
//! (`e.g.`, `Dr.`), an initial (`M. Dupont`), in a number (`3.5`), or
//! before a word that goes on in lowercase ends no sentence. Other
//! requests never get these rules: a JSON answer's fields legitimately
//! repeat a sentence. A request with both a "complete after" marker and
//! `prose_until` expects JSON but may get prose instead: the first prose
//! rule (enough characters, then a sentence end) ends such an answer
//! while it is prose (a sentence written again does not: the text keeps
//! the loop for the kernel to judge), and stops applying as soon as a
//! JSON value begins (a line that opens an array or object: `[` or `{`,
//! then a quote, a bracket, a brace or the line's end; or the first
//! bracket after the marker). A bracketed link at a line's start is prose.
//!
//! [`LlmRequest::prose_until`]: koas_kernel_api::LlmRequest::prose_until

use std::collections::HashSet;

/// Why generation was cut by the watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// A stop marker appeared; the text keeps it.
    Marker,
    /// A whole JSON value followed a "complete after" marker; the text
    /// ends with it.
    Complete,
    /// The same lines came back again and again, or (prose answers) a
    /// sentence came back; the text keeps them once.
    Repetition,
    /// A prose answer held enough characters and a sentence ended; the
    /// text ends with that sentence.
    Enough,
}

impl StopReason {
    /// The name the exchange log records.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Marker => "marker",
            StopReason::Complete => "complete",
            StopReason::Repetition => "repetition",
            StopReason::Enough => "enough",
        }
    }
}

/// A run of lines repeated this many times in a row is degenerate output.
const REPEATS: usize = 3;
/// The longest repeated run looked for, in lines.
const MAX_PERIOD: usize = 8;
/// A repeated run shorter than this (non-blank characters) is not cut
/// after [`REPEATS`]: `}`, `],` or a blank line legitimately come back.
const MIN_RUN_CHARS: usize = 12;
/// A shorter run is cut once its repeats hold this many non-blank
/// characters: a small model can loop on `[` and a blank line to its
/// cap (a thousand tokens, a minute on a CPU server), which no answer
/// writes on purpose 64 times in a row.
const MIN_SHORT_REPEAT_CHARS: usize = 64;

/// A run of lines that comes back with only its numbers changed, this
/// many times in a row, is a loop that counts (`1 | …`, `2 | …`); ten
/// numbered steps are not.
const COUNTED_REPEATS: usize = 16;
/// The fewest repeats of a short counted run (`[1]`, `[2]`, …).
const COUNTED_SHORT_REPEATS: usize = COUNTED_REPEATS;

/// `line` with each run of digits replaced by one `#`.
fn digits_as_hash(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_number = false;
    for c in line.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push('#');
            }
            in_number = true;
        } else {
            out.push(c);
            in_number = false;
        }
    }
    out
}

/// Non-blank characters of `lines`.
fn non_blank(lines: &[&str]) -> usize {
    lines
        .iter()
        .map(|l| l.chars().filter(|c| !c.is_whitespace()).count())
        .sum()
}

/// Of `n` lines (`line(k)` the k-th), a run of 1 to [`MAX_PERIOD`] lines
/// with which they end `repeats(run)` times in a row (`None`: a run not
/// to cut): the index of the line after the run's first occurrence.
fn repeated_tail<'t>(
    n: usize,
    line: impl Fn(usize) -> &'t str,
    repeats: impl Fn(&[&'t str]) -> Option<usize>,
) -> Option<usize> {
    for period in 1..=MAX_PERIOD {
        if period * REPEATS > n {
            break;
        }
        let last: Vec<&str> = (n - period..n).map(&line).collect();
        let Some(times) = repeats(&last) else {
            continue;
        };
        if period * times > n {
            continue;
        }
        // The k-th run from the end (0 = the last one) is the same.
        let same = |k: usize| (0..period).all(|j| line(n - (k + 1) * period + j) == last[j]);
        if (1..times).all(same) {
            return Some(n - times * period + period);
        }
    }
    None
}

/// Where a JSON value after a "complete after" marker stands.
#[derive(Debug, Default)]
struct JsonScan {
    /// Byte offset in the text where scanning resumes (`None`: no marker
    /// seen yet).
    at: Option<usize>,
    depth: usize,
    in_string: bool,
    escaped: bool,
}

/// Whether `line` starts a JSON array or object: a bracket at its start,
/// then nothing more on the line, or a quote, a bracket or a brace. A
/// bracketed link (`[12826](https://…)`) or a bracketed word is prose.
fn opens_json(line: &str) -> bool {
    let t = line.trim_start();
    let Some(rest) = t.strip_prefix(['[', '{']) else {
        return false;
    };
    let rest = rest.trim_start();
    rest.is_empty() || rest.starts_with(['"', '[', '{', ']', '}'])
}

/// The byte offset just after the earliest of `markers` found in
/// `text[from..]`.
fn end_of_first(text: &str, from: usize, markers: &[String]) -> Option<usize> {
    markers
        .iter()
        .filter(|m| !m.is_empty())
        .filter_map(|m| text[from..].find(m.as_str()).map(|at| from + at + m.len()))
        .min()
}

/// The prose rule's state: where the scan for sentence ends resumes,
/// where the current sentence began, and the sentences already written.
#[derive(Debug)]
struct ProseScan {
    /// Characters the text must hold before a sentence end ends it.
    enough: usize,
    /// Byte offset of the next character to examine.
    at: usize,
    /// Byte offset where the sentence being written began.
    sentence_start: usize,
    /// The sentences written so far (whitespace collapsed), long enough
    /// to count as a repeat when they come back.
    seen: HashSet<String>,
    /// Whether a sentence written again ends the answer.
    repeats: bool,
}

/// What the text says at a candidate sentence end.
enum Boundary {
    /// The text ends before it can tell: look again after the next piece.
    Undecided,
    /// No sentence ends here.
    No,
    /// A sentence ends at `end` (its closing quotes included); the next
    /// one begins at `next`.
    End { end: usize, next: usize },
}

/// A sentence that comes back with at least this many non-blank
/// characters is a repeat; shorter ones ("Yes.", "See above.") may
/// legitimately come back.
const MIN_REPEATED_SENTENCE_CHARS: usize = 20;

/// Characters that end a sentence.
fn is_terminator(c: char) -> bool {
    matches!(c, '.' | '!' | '?' | '…')
}

/// Characters that may close a sentence after its terminator: quotes,
/// French guillemets, brackets.
fn is_closer(c: char) -> bool {
    matches!(c, '"' | '\'' | '»' | '”' | '’' | '›' | ')' | ']')
}

/// Closers that may stand after a space (French `fini. »`); a plain
/// quote after a space opens the next sentence.
fn is_spaced_closer(c: char) -> bool {
    matches!(c, '»' | '”' | '›' | ')' | ']')
}

/// Characters that may open a word before its letters: quotes, brackets.
fn is_opener(c: char) -> bool {
    matches!(c, '"' | '\'' | '«' | '“' | '‘' | '‹' | '(' | '[')
}

/// Words that end with a dot without ending a sentence (compared in
/// lowercase, without the dot). Single letters (initials, "M.") and
/// words with an inner dot ("e.g", "U.S") are abbreviations too.
const ABBREVIATIONS: &[&str] = &[
    "al", "approx", "art", "cf", "ch", "chap", "co", "dr", "env", "etc", "ex", "fig", "inc", "jr",
    "ltd", "mlle", "mlles", "mm", "mme", "mmes", "mr", "mrs", "ms", "no", "nº", "p", "pp", "pr",
    "prof", "sr", "st", "ste", "vol", "vs",
];

/// Whether the dot ending at byte `dot` of `text` closes an abbreviation,
/// an initial or a list number rather than a sentence.
fn dot_is_not_an_end(text: &str, dot: usize) -> bool {
    let before = &text[..dot];
    let word_start = before
        .char_indices()
        .rev()
        .find(|&(_, c)| c.is_whitespace())
        .map_or(0, |(i, c)| i + c.len_utf8());
    let word = before[word_start..].trim_start_matches(is_opener);
    if word.is_empty() {
        return false;
    }
    // An initial: `M. Dupont`, `J. Smith`.
    let mut chars = word.chars();
    if chars.next().is_some_and(char::is_alphabetic) && chars.next().is_none() {
        return true;
    }
    if word.contains('.') {
        return true;
    }
    if ABBREVIATIONS.contains(&word.to_lowercase().as_str()) {
        return true;
    }
    // `1. ` at the start of a line numbers a list item.
    let line_before = before[..word_start].trim_end_matches([' ', '\t']);
    let at_line_start = line_before.is_empty() || line_before.ends_with('\n');
    word.chars().all(|c| c.is_ascii_digit()) && at_line_start
}

impl ProseScan {
    /// `repeats`: a sentence written again ends the answer too.
    fn new(enough: usize, repeats: bool) -> Self {
        ProseScan {
            enough,
            repeats,
            at: 0,
            sentence_start: 0,
            seen: HashSet::new(),
        }
    }

    /// The boundary at byte `i` of `text`, where a terminator or a line
    /// break stands.
    fn boundary(text: &str, i: usize) -> Boundary {
        let mut chars = text[i..].char_indices().map(|(k, c)| (i + k, c)).peekable();
        let Some((_, first)) = chars.next() else {
            return Boundary::Undecided;
        };
        if first == '\n' {
            // A paragraph break: a line break, blanks, another one.
            for (k, c) in chars {
                match c {
                    '\n' => {
                        let next = text[k..]
                            .char_indices()
                            .find(|&(_, c)| !c.is_whitespace())
                            .map_or(text.len(), |(n, _)| k + n);
                        return Boundary::End { end: i, next };
                    }
                    c if c.is_whitespace() => {}
                    _ => return Boundary::No,
                }
            }
            return Boundary::Undecided;
        }
        let mut end = i + first.len_utf8();
        // More terminators ("?!", "...") and the closers after them.
        while let Some(&(k, c)) = chars.peek() {
            if is_terminator(c) || is_closer(c) {
                end = k + c.len_utf8();
                chars.next();
            } else {
                break;
            }
        }
        loop {
            // A sentence ends at whitespace...
            match chars.peek() {
                None => return Boundary::Undecided,
                Some(&(_, c)) if !c.is_whitespace() => return Boundary::No,
                Some(_) => {}
            }
            while chars.peek().is_some_and(|&(_, c)| c.is_whitespace()) {
                chars.next();
            }
            let Some(&(next, c)) = chars.peek() else {
                return Boundary::Undecided;
            };
            // ...unless a closing quote follows it (French `fini. »`)...
            if is_spaced_closer(c) {
                end = next + c.len_utf8();
                chars.next();
                continue;
            }
            // ...or the next word goes on in lowercase ("e.g. the").
            if c.is_lowercase() {
                return Boundary::No;
            }
            if first == '.' && dot_is_not_an_end(text, i) {
                return Boundary::No;
            }
            return Boundary::End { end, next };
        }
    }

    /// Scans what was added since the last call; the end of the answer
    /// and why, once it is done (`Enough`) or writes a sentence again
    /// (`Repetition`).
    fn scan(&mut self, text: &str) -> Option<(usize, StopReason)> {
        while let Some(offset) = text[self.at..].find(|c: char| is_terminator(c) || c == '\n') {
            let i = self.at + offset;
            match Self::boundary(text, i) {
                Boundary::Undecided => {
                    self.at = i;
                    return None;
                }
                Boundary::No => {
                    self.at = i + text[i..].chars().next().map_or(1, char::len_utf8);
                }
                Boundary::End { end, next } => {
                    let sentence: String = text[self.sentence_start..end]
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" ");
                    let nonblank = sentence.chars().filter(|c| !c.is_whitespace()).count();
                    if self.repeats
                        && nonblank >= MIN_REPEATED_SENTENCE_CHARS
                        && !self.seen.insert(sentence)
                    {
                        let cut = text[..self.sentence_start].trim_end().len();
                        return Some((cut, StopReason::Repetition));
                    }
                    let cut = text[..end].trim_end().len();
                    let written = &text[..cut];
                    if !written.trim().is_empty() && written.chars().count() >= self.enough {
                        return Some((cut, StopReason::Enough));
                    }
                    self.sentence_start = next;
                    self.at = next.max(i + 1);
                }
            }
        }
        self.at = text.len();
        None
    }
}

/// Accumulates streamed text and reports the first reason to stop.
pub(crate) struct StopWatch<'a> {
    markers: &'a [String],
    complete_after: &'a [String],
    longest: usize,
    text: String,
    stopped: Option<StopReason>,
    json: JsonScan,
    /// Byte offsets where each complete line of `text` starts.
    line_starts: Vec<usize>,
    /// Each complete line with its runs of digits as `#`, for the loops
    /// that count (`[1]`, `[2]`, …).
    counted: Vec<String>,
    /// The prose rules, for a prose answer only.
    prose: Option<ProseScan>,
}

impl<'a> StopWatch<'a> {
    /// A watch for `markers`, `complete_after` markers and, with
    /// `prose_until`, the prose rules (see the module's documentation).
    pub(crate) fn new(
        markers: &'a [String],
        complete_after: &'a [String],
        prose_until: Option<u32>,
    ) -> Self {
        let longest = markers
            .iter()
            .chain(complete_after)
            .map(String::len)
            .max()
            .unwrap_or(0);
        StopWatch {
            markers,
            complete_after,
            longest,
            text: String::new(),
            stopped: None,
            json: JsonScan::default(),
            line_starts: vec![0],
            counted: Vec::new(),
            // An answer meant to be JSON keeps the sentences it repeats:
            // the kernel reading it tells a loop from a point.
            prose: prose_until
                .map(|chars| ProseScan::new(chars as usize, complete_after.is_empty())),
        }
    }

    /// Appends a piece; returns `true` once generation should stop (the
    /// text is then cut where the answer ends). Pieces pushed after that
    /// are ignored.
    pub(crate) fn push(&mut self, piece: &str) -> bool {
        if self.stopped.is_some() {
            return true;
        }
        let old_len = self.text.len();
        self.text.push_str(piece);
        // Only the tail that could contain a new marker is searched.
        let mut from = old_len.saturating_sub(self.longest);
        while !self.text.is_char_boundary(from) {
            from -= 1;
        }
        let marker_end = end_of_first(&self.text, from, self.markers);
        let complete_end = self.complete_json(from);
        let repeat_end = self.repetition(old_len);
        if !self.complete_after.is_empty() && self.prose.is_some() && self.json_begun(old_len) {
            // JSON after all: its strings may repeat and run long.
            self.prose = None;
        }
        let prose_end = match &mut self.prose {
            Some(prose) => prose.scan(&self.text),
            None => None,
        };
        let found = [
            marker_end.map(|e| (e, StopReason::Marker)),
            complete_end.map(|e| (e, StopReason::Complete)),
            repeat_end.map(|e| (e, StopReason::Repetition)),
            prose_end,
        ]
        .into_iter()
        .flatten()
        .min_by_key(|(end, _)| *end);
        if let Some((end, reason)) = found {
            self.text.truncate(end);
            self.stopped = Some(reason);
        }
        self.stopped.is_some()
    }

    /// Whether a JSON value has begun: the scan after a marker met its
    /// first bracket, or a line of the text (the new part of it) starts
    /// with `[` or `{`.
    fn json_begun(&self, old_len: usize) -> bool {
        if self.json.depth > 0 {
            return true;
        }
        // The line the new text continues, from its start (`old_len`, the
        // previous text's end, is a character boundary).
        let line_start = self.text[..old_len].rfind('\n').map_or(0, |i| i + 1);
        self.text[line_start..].split('\n').any(opens_json)
    }

    /// The end of the first whole JSON value (array or object) after a
    /// "complete after" marker, once it has been written.
    fn complete_json(&mut self, from: usize) -> Option<usize> {
        if self.complete_after.is_empty() {
            return None;
        }
        if self.json.at.is_none() {
            self.json.at = end_of_first(&self.text, from, self.complete_after);
        }
        let start = self.json.at?;
        let bytes = self.text.as_bytes();
        let mut i = start;
        let scan = &mut self.json;
        while i < bytes.len() {
            let b = bytes[i];
            i += 1;
            if scan.depth == 0 {
                // Before the value: anything (a fence, a few words) until
                // its first bracket.
                if b == b'[' || b == b'{' {
                    scan.depth = 1;
                }
                continue;
            }
            if scan.in_string {
                match (scan.escaped, b) {
                    (true, _) => scan.escaped = false,
                    (false, b'\\') => scan.escaped = true,
                    (false, b'"') => scan.in_string = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => scan.in_string = true,
                b'[' | b'{' => scan.depth += 1,
                b']' | b'}' => {
                    scan.depth -= 1;
                    if scan.depth == 0 {
                        scan.at = Some(i);
                        return Some(i);
                    }
                }
                _ => {}
            }
        }
        scan.at = Some(i);
        None
    }

    /// The end of the first occurrence of a run of lines that the text
    /// now repeats [`REPEATS`] times in a row, checked as lines complete.
    fn repetition(&mut self, old_len: usize) -> Option<usize> {
        let mut found = None;
        let mut search = old_len;
        while let Some(nl) = self.text[search..].find('\n') {
            let end = search + nl + 1;
            let line = &self.text[*self.line_starts.last().unwrap_or(&0)..end];
            self.counted.push(digits_as_hash(line));
            self.line_starts.push(end);
            search = end;
            if found.is_none() {
                found = self.repeated_run();
            }
        }
        found
    }

    /// Looks at the last complete lines for a run of 1 to [`MAX_PERIOD`]
    /// lines that occurs [`REPEATS`] times in a row at the end (a short
    /// run: until its repeats hold [`MIN_SHORT_REPEAT_CHARS`]); then for a
    /// loop that counts: a run that comes back with only its numbers
    /// changed, [`COUNTED_REPEATS`] times in a row (a short run: until its
    /// repeats hold [`MIN_SHORT_REPEAT_CHARS`] non-blank characters, and
    /// at least [`COUNTED_SHORT_REPEATS`] times). A counted run with a
    /// double quote is left alone: JSON objects that differ only by a
    /// number are answers. Returns where the run's first occurrence ends.
    fn repeated_run(&self) -> Option<usize> {
        let starts = &self.line_starts;
        // starts[k] .. starts[k+1] is line k; the last entry is the end.
        let exact = repeated_tail(
            starts.len() - 1,
            |k| &self.text[starts[k]..starts[k + 1]],
            |run| match non_blank(run) {
                0 => None,
                c if c < MIN_RUN_CHARS => Some(MIN_SHORT_REPEAT_CHARS.div_ceil(c)),
                _ => Some(REPEATS),
            },
        );
        // Inside a JSON value the lines are the answer's own.
        if exact.is_some() || self.json.depth > 0 {
            return exact.map(|k| starts[k]);
        }
        let counted = repeated_tail(
            self.counted.len(),
            |k| self.counted[k].as_str(),
            |run| {
                if run.iter().any(|l| l.contains('"')) || !run.iter().any(|l| l.contains('#')) {
                    return None;
                }
                match non_blank(run) {
                    0 => None,
                    c if c < MIN_RUN_CHARS => Some(
                        MIN_SHORT_REPEAT_CHARS
                            .div_ceil(c)
                            .max(COUNTED_SHORT_REPEATS),
                    ),
                    _ => Some(COUNTED_REPEATS),
                }
            },
        );
        counted.map(|k| starts[k])
    }

    /// The text so far, cut where the answer ended once it did.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// Whether generation was cut, and why.
    pub(crate) fn reason(&self) -> Option<StopReason> {
        self.stopped
    }

    /// Whether generation was cut.
    pub(crate) fn stopped(&self) -> bool {
        self.stopped.is_some()
    }

    pub(crate) fn into_text(self) -> String {
        self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_split_across_pieces_is_found_and_text_cut_after_it() {
        let markers = vec!["END_ANSWER".to_string()];
        let mut w = StopWatch::new(&markers, &[], None);
        assert!(!w.push("[] END_AN"));
        assert!(w.push("SWER trailing"));
        assert_eq!(w.text(), "[] END_ANSWER");
        assert!(w.push("more"));
        assert_eq!(w.into_text(), "[] END_ANSWER");
    }

    #[test]
    fn earliest_marker_wins_and_no_markers_never_stop() {
        let markers = vec!["B".to_string(), "A".to_string()];
        let mut w = StopWatch::new(&markers, &[], None);
        assert!(w.push("xxAyyB"));
        assert_eq!(w.text(), "xxA");
        let none: Vec<String> = vec![];
        let mut w = StopWatch::new(&none, &[], None);
        assert!(!w.push("anything"));
    }

    #[test]
    fn multibyte_text_is_cut_on_char_boundaries() {
        let markers = vec!["FIN".to_string()];
        let mut w = StopWatch::new(&markers, &[], None);
        assert!(!w.push("éééé"));
        assert!(w.push("é FIN é"));
        assert_eq!(w.text(), "ééééé FIN");
    }

    #[test]
    fn a_whole_json_value_after_its_marker_ends_the_answer() {
        let after = vec!["BEGIN_ANSWER".to_string()];
        let mut w = StopWatch::new(&[], &after, None);
        assert!(!w.push("Here: [not this] BEGIN_AN"));
        assert!(!w.push("SWER\n```json\n[{\"a\": \"x]}\\\"\", "));
        assert!(!w.push("\"b\": [1, {\"c\": 2}]}"));
        assert!(w.push("]\n```\nBEGIN_ANSWER\n[]\n"));
        assert_eq!(w.reason(), Some(StopReason::Complete));
        assert!(
            w.text()
                .ends_with("[{\"a\": \"x]}\\\"\", \"b\": [1, {\"c\": 2}]}]"),
            "{}",
            w.text()
        );
    }

    #[test]
    fn an_empty_list_is_a_complete_answer() {
        let after = vec!["BEGIN_ANSWER".to_string()];
        let markers = vec!["END_ANSWER".to_string()];
        let mut w = StopWatch::new(&markers, &after, None);
        let mut pushed = 0;
        for piece in "BEGIN_ANSWER\n[]\nBEGIN_ANSWER\n[]\n".split_inclusive('\n') {
            pushed += 1;
            if w.push(piece) {
                break;
            }
        }
        assert_eq!(pushed, 2);
        assert_eq!(w.text(), "BEGIN_ANSWER\n[]");
        assert_eq!(w.reason(), Some(StopReason::Complete));
    }

    #[test]
    fn lines_repeated_three_times_are_kept_once() {
        let mut w = StopWatch::new(&[], &[], None);
        let block = "The section is clear and complete.\nNo change is needed here.\n";
        assert!(!w.push("Summary of the document.\n"));
        assert!(!w.push(block));
        assert!(!w.push(block));
        assert!(w.push(block));
        assert_eq!(w.reason(), Some(StopReason::Repetition));
        assert_eq!(w.text(), format!("Summary of the document.\n{block}"));
    }

    #[test]
    fn regression_a_bracket_and_a_blank_line_looping_to_the_cap_are_cut() {
        // SmolLM2 answered a request with its opening marker then
        // "[\n\n" until its 982-token cap: 70 s of a CPU server.
        let mut w = StopWatch::new(&[], &[], None);
        assert!(!w.push("BEGIN_ANSWER\n\n"));
        let mut pushed = 0;
        while !w.push("[\n\n") {
            pushed += 1;
            assert!(pushed < 200, "never cut");
        }
        assert_eq!(pushed + 1, 64, "cut once the repeats hold 64 brackets");
        assert_eq!(w.reason(), Some(StopReason::Repetition));
        assert_eq!(w.text(), "BEGIN_ANSWER\n\n[\n");
        // A run of a single non-blank character a line, of any period.
        let mut w = StopWatch::new(&[], &[], None);
        let mut pushed = 0;
        while !w.push("[\n\n\n\n\n\n\n\n") {
            pushed += 1;
            assert!(pushed < 200, "never cut");
        }
        assert_eq!(pushed + 1, 64);
    }

    #[test]
    fn regression_loops_that_count_are_cut() {
        // SmolLM2 answered requests with "[1]\n[2]\n…" to its cap
        // (1,024 tokens), "1 |\n2 |\n…", and a sentence after each number.
        let cut_after = |line: &dyn Fn(usize) -> String| {
            let mut w = StopWatch::new(&[], &[], None);
            let mut n = 0;
            while !w.push(&line(n)) {
                n += 1;
                assert!(n < 500, "never cut");
            }
            assert_eq!(w.reason(), Some(StopReason::Repetition));
            (n + 1, w.into_text())
        };
        let (n, text) = cut_after(&|i| format!("[{}]\n", i + 1));
        assert_eq!((n, text.as_str()), (22, "[1]\n"));
        assert_eq!(cut_after(&|i| format!("{} |\n", i + 1)).0, 32);
        let (n, text) =
            cut_after(&|i| format!("{}\n\nThe document's language is English.\n", i + 1));
        assert_eq!(n, 16);
        assert_eq!(text, "1\n\nThe document's language is English.\n");
        // JSON objects that differ by a number, and numbered prose, are
        // not loops.
        let mut w = StopWatch::new(&[], &[], None);
        for i in 0..40 {
            assert!(!w.push(&format!(
                "{{\"action\": \"replace\", \"line\": {i}, \"before_text\": \"teh\"}},\n"
            )));
        }
        let mut w = StopWatch::new(&[], &[], None);
        for i in 0..15 {
            assert!(!w.push(&format!("Step {i} of the procedure is done.\n")));
        }
        // Inside a JSON value after the marker, numbers are the answer's.
        let begin = vec!["BEGIN".to_owned()];
        let mut w = StopWatch::new(&[], &begin, None);
        assert!(!w.push("BEGIN\n[\n"));
        for i in 0..40 {
            assert!(!w.push(&format!("{i},\n")));
        }
    }

    #[test]
    fn short_or_varied_lines_are_not_repetition() {
        let mut w = StopWatch::new(&[], &[], None);
        for _ in 0..10 {
            assert!(!w.push("  },\n"));
        }
        for i in 0..10 {
            assert!(!w.push(&format!("Step {i} of the procedure is done.\n")));
        }
        assert_eq!(w.reason(), None);
    }

    /// Pushes `pieces` into a prose watch of `chars`; the number of
    /// pieces pushed when it stopped (or all of them).
    fn prose(chars: u32, pieces: &[&str]) -> (Cut, usize) {
        let none: Vec<String> = Vec::new();
        let mut w = StopWatch::new(&none, &none, Some(chars));
        let mut pushed = 0;
        for piece in pieces {
            pushed += 1;
            if w.push(piece) {
                break;
            }
        }
        let reason = w.reason();
        (
            Cut {
                text: w.into_text(),
                reason,
            },
            pushed,
        )
    }

    /// What a prose watch kept, and why it stopped.
    struct Cut {
        text: String,
        reason: Option<StopReason>,
    }

    impl Cut {
        fn text(&self) -> &str {
            &self.text
        }

        fn reason(&self) -> Option<StopReason> {
            self.reason
        }
    }

    #[test]
    fn a_prose_answer_ends_at_the_first_sentence_end_after_enough_characters() {
        let pieces = [
            "The text describes how the server",
            " starts. It then lists the ports",
            ".",
            " ",
            "It closes",
            " with the logs. And more.",
        ];
        // "The text describes how the server starts." is 41 characters:
        // not enough; the second sentence ends once the next word shows.
        let (w, pushed) = prose(50, &pieces);
        assert_eq!(w.reason(), Some(StopReason::Enough));
        assert_eq!(pushed, 5, "the end is known when the next word starts");
        assert_eq!(
            w.text(),
            "The text describes how the server starts. It then lists the ports."
        );
        // Enough at once: the first sentence.
        let (w, _) = prose(10, &pieces);
        assert_eq!(w.text(), "The text describes how the server starts.");
        // An answer the model ended itself is not cut.
        let (w, _) = prose(10, &["One whole sentence, ", "and its end."]);
        assert_eq!(w.reason(), None);
        assert_eq!(w.text(), "One whole sentence, and its end.");
    }

    #[test]
    fn abbreviations_initials_and_numbers_end_no_sentence() {
        let text = "Ask M. Dupont, Dr. Smith and J. R. Doe (see e.g. Chapter 4 or \
                    fig. 3, approx. 3.5 MB, version 2.1.0 etc.) about the plan. Then go.";
        let (w, _) = prose(5, &[text]);
        assert_eq!(w.reason(), Some(StopReason::Enough));
        assert!(w.text().ends_with("about the plan."), "{}", w.text());
        // A lowercase word after the dot goes on with the sentence.
        let (w, _) = prose(5, &["It holds items, etc. and more. Then"]);
        assert_eq!(w.text(), "It holds items, etc. and more.");
        // A list number at a line's start is not a sentence end.
        let (w, _) = prose(5, &["Steps:\n1. Install it. 2. Run it.\nEnd"]);
        assert_eq!(w.text(), "Steps:\n1. Install it.");
    }

    #[test]
    fn closing_quotes_and_french_guillemets_stay_with_their_sentence() {
        let (w, _) = prose(5, &["Il a dit « c'est fini. » Puis il est parti. Ensuite"]);
        assert_eq!(w.text(), "Il a dit « c'est fini. »");
        // The sentence goes on after the quote: « … » dit-il.
        let (w, _) = prose(5, &["« C'est fini. » dit-il. Ensuite il part."]);
        assert_eq!(w.text(), "« C'est fini. » dit-il.");
        let (w, _) = prose(5, &["He said \"it is done.\" Then", " \"Next"]);
        assert_eq!(w.text(), "He said \"it is done.\"");
        let (w, _) = prose(5, &["Vraiment ?! Oui… Non"]);
        assert_eq!(w.text(), "Vraiment ?!");
        let (w, _) = prose(12, &["Vraiment ?! Oui… Non"]);
        assert_eq!(w.text(), "Vraiment ?! Oui…");
    }

    #[test]
    fn a_paragraph_break_ends_a_prose_answer_that_is_long_enough() {
        let (w, _) = prose(
            20,
            &[
                "A heading\n\n",
                "The first paragraph has no stop\n",
                "\nA second one",
            ],
        );
        assert_eq!(w.reason(), Some(StopReason::Enough));
        assert_eq!(w.text(), "A heading\n\nThe first paragraph has no stop");
        // A leading blank line is no answer, whatever the threshold.
        let (w, _) = prose(0, &["\n\nText. More"]);
        assert_eq!(w.text(), "\n\nText.");
    }

    #[test]
    fn a_sentence_written_again_ends_a_prose_answer_before_the_repeat() {
        let pieces = [
            "The section explains the setup. It lists ",
            "the ports. The section explains ",
            "the setup. The section explains the setup. ",
        ];
        let (w, _) = prose(10_000, &pieces);
        assert_eq!(w.reason(), Some(StopReason::Repetition));
        assert_eq!(
            w.text(),
            "The section explains the setup. It lists the ports."
        );
        // Short sentences may come back.
        let (w, _) = prose(10_000, &["Yes. No. Yes. No. Yes. Maybe"]);
        assert_eq!(w.reason(), None);
    }

    #[test]
    fn an_answer_that_should_be_json_is_cut_like_prose_while_it_is_prose() {
        let begin = vec!["BEGIN_ANSWER".to_owned()];
        let none: Vec<String> = Vec::new();
        let watch = |pieces: &[&str]| {
            let mut w = StopWatch::new(&none, &begin, Some(40));
            for p in pieces {
                if w.push(p) {
                    break;
                }
            }
            (w.reason(), w.into_text())
        };
        // Prose, with or without the marker: ended at a sentence end.
        let (reason, text) = watch(&[
            "BEGIN_ANSWER\n\nThe document provides a comprehensive overview. ",
            "It goes on and on. And on.",
        ]);
        assert_eq!(reason, Some(StopReason::Enough));
        assert_eq!(
            text,
            "BEGIN_ANSWER\n\nThe document provides a comprehensive overview."
        );
        let (reason, _) =
            watch(&["The text is fine, I think, and needs nothing at all. More words."]);
        assert_eq!(reason, Some(StopReason::Enough));
        // A loop is kept up to the first sentence end past the threshold,
        // for the kernel to see it loops.
        let (reason, text) = watch(&["Let me think about the section. Let me think about the section. Let me think about the section."]);
        assert_eq!(reason, Some(StopReason::Enough));
        assert_eq!(
            text,
            "Let me think about the section. Let me think about the section."
        );
        // JSON, after the marker or bare: long fields and repeated
        // sentences are the answer's own.
        let op = r#"{"rationale": "A sentence that is long enough. A sentence that is long enough. Done."}"#;
        let (reason, text) = watch(&["BEGIN_ANSWER\n[", op, "]\nafter"]);
        assert_eq!(reason, Some(StopReason::Complete));
        assert_eq!(text, format!("BEGIN_ANSWER\n[{op}]"));
        let (reason, _) = watch(&["Here are the ops:\n[", op, ", ", op]);
        assert_eq!(reason, None, "a bare array is JSON too");
        // Regression: a bracketed link at a line's start is prose (SmolLM2
        // wrote 1,014 tokens after one, to its cap).
        let (reason, text) = watch(&[
            "[12826](https://golang.org/issue/12826) suggests a different format. ",
            "It goes on. And on.",
        ]);
        assert_eq!(reason, Some(StopReason::Enough));
        assert!(text.ends_with("format."), "{text}");
        for json in ["[", "[{\"a\": 1}]", "{ \"a\": 1 }", "[]", "  [\"x\"]"] {
            assert!(opens_json(json), "{json}");
        }
        for prose in [
            "[12826](https://x)",
            "[see above]",
            "{name} is set",
            "- [x] done",
            "",
        ] {
            assert!(!opens_json(prose), "{prose}");
        }
    }

    #[test]
    fn without_the_prose_option_nothing_is_cut_at_sentences() {
        let mut w = StopWatch::new(&[], &[], None);
        for piece in [
            "The section explains the setup. It lists the ports. ",
            "The section explains the setup. The section explains the setup. ",
            "Another paragraph\n\nand more. ",
        ] {
            assert!(!w.push(piece));
        }
        assert_eq!(w.reason(), None);
    }
}
