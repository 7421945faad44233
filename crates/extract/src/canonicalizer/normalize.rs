//! Non-destructive text sanitation: only changes that cannot alter a JSON
//! value (line endings, outer whitespace), so no string inside the answer
//! is ever corrupted.

/// Sanitises raw LLM text before block extraction.
///
/// * `\r\n` and lone `\r` become `\n`;
/// * leading and trailing whitespace (and byte-order marks) of the *whole*
///   text are removed;
/// * nothing else changes: interior spaces, tabs and blank lines are kept,
///   so JSON string values are never corrupted.
///
/// The function is idempotent: `normalize_text(&normalize_text(x)) ==
/// normalize_text(x)` for every `x`.
///
/// ```
/// assert_eq!(koas_extract::normalize_text("\u{feff}  {\"a\":\r\n 1}\r\n\n"), "{\"a\":\n 1}");
/// ```
pub fn normalize_text(raw: &str) -> String {
    let unified = raw.replace("\r\n", "\n").replace('\r', "\n");
    unified
        .trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}')
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_endings_are_unified() {
        assert_eq!(normalize_text("a\r\nb\rc\n"), "a\nb\nc");
        assert_eq!(normalize_text("a\r\r\nb"), "a\n\nb");
    }

    #[test]
    fn interior_whitespace_is_kept() {
        let text = "{\"a\": \"two  spaces\t tab\"}\n\n\nnext";
        assert_eq!(normalize_text(text), text);
    }

    #[test]
    fn outer_whitespace_and_bom_are_stripped() {
        assert_eq!(normalize_text("\u{feff}\u{feff} \n x \t\n"), "x");
        assert_eq!(normalize_text(" \r\n "), "");
    }
}
