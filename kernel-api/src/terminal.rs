//! Text from elsewhere made fit for a terminal or a log line.
//!
//! A model server's error page, a plugin's log line, a kernel's summary, a
//! document's words and a file's name are written by someone else. Printed
//! raw, their control characters act on the reader's terminal: `ESC ] 0 ;`
//! retitles the window, `ESC [ 2 J` clears the screen, a carriage return
//! rewrites the line already shown ("koas: run OK"), and bidirectional
//! controls reorder what is read. So every such text that reaches a
//! terminal or a log goes through [`escape_controls`] (one line) or
//! [`escape_controls_keep_lines`] (several lines): each control or
//! invisible formatting character is *shown*, escaped as `\u{1b}`, `\r`,
//! `\n`…, never obeyed and never silently dropped, so what the reader sees
//! is what was sent.

use std::borrow::Cow;

/// True for a character that a terminal obeys or hides instead of showing:
/// C0 and C1 controls, DEL, and the invisible formatting characters that
/// reorder or hide text (bidirectional embeddings, overrides and isolates,
/// marks, zero-width characters, the BOM).
pub fn is_unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{2069}'
                | '\u{feff}'
                | '\u{fff9}'..='\u{fffb}'
        )
}

/// `text` on one line with every unsafe character (see [`is_unsafe_char`])
/// shown escaped: `\t`, `\n`, `\r` by name, the others as `\u{…}`.
/// Borrowed when nothing needed escaping.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// Like [`escape_controls`], but line feeds are kept (and tabs, which do
/// nothing but move right): for messages that are several lines on
/// purpose. A carriage return is still escaped, since it rewrites the
/// line already shown.
pub fn escape_controls_keep_lines(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

fn escape(text: &str, keep_lines: bool) -> Cow<'_, str> {
    let kept = |c: char| keep_lines && (c == '\n' || c == '\t');
    let Some(first) = text.find(|c: char| is_unsafe_char(c) && !kept(c)) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 8);
    out.push_str(&text[..first]);
    for c in text[first..].chars() {
        if !is_unsafe_char(c) || kept(c) {
            out.push(c);
            continue;
        }
        match c {
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            _ => {
                use std::fmt::Write as _;
                // Writing to a String cannot fail.
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_forged_status_line_is_shown_not_obeyed() {
        let attack = "\u{1b}]0;PWNED\u{7}\u{1b}[2J\rkoas: run OK";
        assert_eq!(
            escape_controls(attack),
            "\\u{1b}]0;PWNED\\u{7}\\u{1b}[2J\\rkoas: run OK"
        );
    }

    #[test]
    fn c1_controls_and_bidi_overrides_are_escaped() {
        // U+009B is the one-byte CSI of 8-bit terminals.
        assert_eq!(escape_controls("a\u{9b}2Jb"), "a\\u{9b}2Jb");
        assert_eq!(
            escape_controls("safe\u{202e}txt.exe"),
            "safe\\u{202e}txt.exe"
        );
        assert_eq!(escape_controls("zero\u{200b}width"), "zero\\u{200b}width");
    }

    #[test]
    fn clean_text_is_borrowed_and_accents_stay() {
        let text = "Résumé : l’été — 3 µs, 東京";
        assert!(matches!(escape_controls(text), Cow::Borrowed(_)));
        assert_eq!(escape_controls(text), text);
    }

    #[test]
    fn line_feeds_are_kept_only_when_asked() {
        assert_eq!(escape_controls("a\nb\tc"), "a\\nb\\tc");
        assert_eq!(escape_controls_keep_lines("a\nb\tc\r"), "a\nb\tc\\r");
    }

    proptest! {
        #[test]
        fn nothing_unsafe_survives(text in any::<String>()) {
            let one = escape_controls(&text);
            prop_assert!(!one.chars().any(is_unsafe_char));
            let many = escape_controls_keep_lines(&text);
            prop_assert!(!many.chars().any(|c| is_unsafe_char(c) && c != '\n' && c != '\t'));
            // Text with nothing to escape comes back as it was.
            if !text.chars().any(is_unsafe_char) {
                prop_assert_eq!(one.as_ref(), text.as_str());
            }
        }
    }
}
