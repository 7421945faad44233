//! Token estimates, used only when an API reports no usage.

/// Estimated tokens of `text`: one token per 4 bytes of UTF-8, rounded up
/// (a deliberate over-estimate for French and other accented text, so
/// budgets err on the safe side).
pub fn estimate_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_up() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abc"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        assert_eq!(estimate_tokens("é"), 1);
    }
}
