//! Ending generation as soon as the answer is complete: at a stop
//! marker, once a whole JSON value follows a "complete after" marker, or
//! when the output starts repeating itself (a small model that wrote its
//! answer and then loops on it until the token cap).

/// Why generation was cut by the watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// A stop marker appeared; the text keeps it.
    Marker,
    /// A whole JSON value followed a "complete after" marker; the text
    /// ends with it.
    Complete,
    /// The same lines came back again and again; the text keeps them once.
    Repetition,
}

impl StopReason {
    /// The name the exchange log records.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Marker => "marker",
            StopReason::Complete => "complete",
            StopReason::Repetition => "repetition",
        }
    }
}

/// A run of lines repeated this many times in a row is degenerate output.
const REPEATS: usize = 3;
/// The longest repeated run looked for, in lines.
const MAX_PERIOD: usize = 8;
/// A repeated run shorter than this (non-blank characters) is not cut:
/// `}`, `],` or a blank line legitimately come back.
const MIN_RUN_CHARS: usize = 12;

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

/// The byte offset just after the earliest of `markers` found in
/// `text[from..]`.
fn end_of_first(text: &str, from: usize, markers: &[String]) -> Option<usize> {
    markers
        .iter()
        .filter(|m| !m.is_empty())
        .filter_map(|m| text[from..].find(m.as_str()).map(|at| from + at + m.len()))
        .min()
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
}

impl<'a> StopWatch<'a> {
    pub(crate) fn new(markers: &'a [String], complete_after: &'a [String]) -> Self {
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
        let found = [
            marker_end.map(|e| (e, StopReason::Marker)),
            complete_end.map(|e| (e, StopReason::Complete)),
            repeat_end.map(|e| (e, StopReason::Repetition)),
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
            self.line_starts.push(end);
            search = end;
            if found.is_none() {
                found = self.repeated_run();
            }
        }
        found
    }

    /// Looks at the last complete lines for a run of 1 to [`MAX_PERIOD`]
    /// lines that occurs [`REPEATS`] times in a row at the end.
    fn repeated_run(&self) -> Option<usize> {
        let starts = &self.line_starts;
        // starts[k] .. starts[k+1] is line k; the last entry is the end.
        let lines = starts.len() - 1;
        for period in 1..=MAX_PERIOD {
            if period * REPEATS > lines {
                break;
            }
            let run = |k: usize| {
                // The k-th run from the end (0 = the last one).
                let first = lines - (k + 1) * period;
                &self.text[starts[first]..starts[first + period]]
            };
            let last = run(0);
            if last.chars().filter(|c| !c.is_whitespace()).count() < MIN_RUN_CHARS {
                continue;
            }
            if (1..REPEATS).all(|k| run(k) == last) {
                let first = lines - REPEATS * period;
                return Some(starts[first + period]);
            }
        }
        None
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
        let mut w = StopWatch::new(&markers, &[]);
        assert!(!w.push("[] END_AN"));
        assert!(w.push("SWER trailing"));
        assert_eq!(w.text(), "[] END_ANSWER");
        assert!(w.push("more"));
        assert_eq!(w.into_text(), "[] END_ANSWER");
    }

    #[test]
    fn earliest_marker_wins_and_no_markers_never_stop() {
        let markers = vec!["B".to_string(), "A".to_string()];
        let mut w = StopWatch::new(&markers, &[]);
        assert!(w.push("xxAyyB"));
        assert_eq!(w.text(), "xxA");
        let none: Vec<String> = vec![];
        let mut w = StopWatch::new(&none, &[]);
        assert!(!w.push("anything"));
    }

    #[test]
    fn multibyte_text_is_cut_on_char_boundaries() {
        let markers = vec!["FIN".to_string()];
        let mut w = StopWatch::new(&markers, &[]);
        assert!(!w.push("éééé"));
        assert!(w.push("é FIN é"));
        assert_eq!(w.text(), "ééééé FIN");
    }

    #[test]
    fn a_whole_json_value_after_its_marker_ends_the_answer() {
        let after = vec!["BEGIN_ANSWER".to_string()];
        let mut w = StopWatch::new(&[], &after);
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
        let mut w = StopWatch::new(&markers, &after);
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
        let mut w = StopWatch::new(&[], &[]);
        let block = "The section is clear and complete.\nNo change is needed here.\n";
        assert!(!w.push("Summary of the document.\n"));
        assert!(!w.push(block));
        assert!(!w.push(block));
        assert!(w.push(block));
        assert_eq!(w.reason(), Some(StopReason::Repetition));
        assert_eq!(w.text(), format!("Summary of the document.\n{block}"));
    }

    #[test]
    fn short_or_varied_lines_are_not_repetition() {
        let mut w = StopWatch::new(&[], &[]);
        for _ in 0..10 {
            assert!(!w.push("  },\n"));
        }
        for i in 0..10 {
            assert!(!w.push(&format!("Step {i} of the procedure is done.\n")));
        }
        assert_eq!(w.reason(), None);
    }
}
