//! Stop markers: end generation as soon as a marker has been produced.

/// Accumulates streamed text and reports the first stop marker.
pub(crate) struct StopWatch<'a> {
    markers: &'a [String],
    longest: usize,
    text: String,
    stopped: bool,
}

impl<'a> StopWatch<'a> {
    pub(crate) fn new(markers: &'a [String]) -> Self {
        let longest = markers.iter().map(String::len).max().unwrap_or(0);
        StopWatch {
            markers,
            longest,
            text: String::new(),
            stopped: false,
        }
    }

    /// Appends a piece; returns `true` once a marker has appeared, after
    /// cutting the text just after the earliest marker. Pieces pushed
    /// after that are ignored.
    pub(crate) fn push(&mut self, piece: &str) -> bool {
        if self.stopped {
            return true;
        }
        let old_len = self.text.len();
        self.text.push_str(piece);
        if self.markers.is_empty() {
            return false;
        }
        // Only the tail that could contain a new marker is searched.
        let mut from = old_len.saturating_sub(self.longest);
        while !self.text.is_char_boundary(from) {
            from -= 1;
        }
        let found = self
            .markers
            .iter()
            .filter(|m| !m.is_empty())
            .filter_map(|m| {
                self.text[from..]
                    .find(m.as_str())
                    .map(|at| from + at + m.len())
            })
            .min();
        if let Some(end) = found {
            self.text.truncate(end);
            self.stopped = true;
        }
        self.stopped
    }

    /// The text so far, cut just after the marker once one appeared.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// Whether a marker was found.
    pub(crate) fn stopped(&self) -> bool {
        self.stopped
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
        let markers = vec!["END_EDIT_OPS".to_string()];
        let mut w = StopWatch::new(&markers);
        assert!(!w.push("[] END_ED"));
        assert!(w.push("IT_OPS trailing"));
        assert_eq!(w.text(), "[] END_EDIT_OPS");
        assert!(w.push("more"));
        assert_eq!(w.into_text(), "[] END_EDIT_OPS");
    }

    #[test]
    fn earliest_marker_wins_and_no_markers_never_stop() {
        let markers = vec!["B".to_string(), "A".to_string()];
        let mut w = StopWatch::new(&markers);
        assert!(w.push("xxAyyB"));
        assert_eq!(w.text(), "xxA");
        let none: Vec<String> = vec![];
        let mut w = StopWatch::new(&none);
        assert!(!w.push("anything"));
    }

    #[test]
    fn multibyte_text_is_cut_on_char_boundaries() {
        let markers = vec!["FIN".to_string()];
        let mut w = StopWatch::new(&markers);
        assert!(!w.push("éééé"));
        assert!(w.push("é FIN é"));
        assert_eq!(w.text(), "ééééé FIN");
    }
}
