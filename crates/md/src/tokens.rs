//! Token estimates for chunk sizes: Unicode scalar values (chars, not
//! bytes) divided by 4, rounded down. A rough rule, but it needs no
//! tokenizer and gives the same chunks on every machine and for every
//! model.

/// Estimated tokens of `text`: its number of chars divided by 4, rounded
/// down, saturating at `u32::MAX`.
pub fn estimate_tokens(text: &str) -> u32 {
    tokens_for_chars(text.chars().count() as u64)
}

/// Estimated tokens for a number of chars.
pub fn tokens_for_chars(chars: u64) -> u32 {
    u32::try_from(chars / 4).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_chars_not_bytes() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abc"), 0);
        assert_eq!(estimate_tokens("abcd"), 1);
        // 8 chars, 16 bytes.
        assert_eq!(estimate_tokens("éééééééé"), 2);
    }
}
