//! `sha256:`-prefixed content hashes, as the spec shows them.

use sha2::{Digest, Sha256};

/// The prefix every content hash carries.
pub const HASH_PREFIX: &str = "sha256:";

/// `sha256:<64 lowercase hex digits>` of `text`'s bytes.
pub fn content_hash(text: &str) -> String {
    bytes_hash(text.as_bytes())
}

/// `sha256:<hex>` of raw bytes.
pub fn bytes_hash(bytes: &[u8]) -> String {
    format_digest(&Sha256::digest(bytes))
}

/// `sha256:<hex>` of the concatenation of `parts`.
pub fn lines_hash<S: AsRef<str>>(parts: &[S]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_ref().as_bytes());
    }
    format_digest(&hasher.finalize())
}

/// Formats a digest as `sha256:<hex>`.
pub fn format_digest(digest: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(HASH_PREFIX.len() + digest.len() * 2);
    out.push_str(HASH_PREFIX);
    for byte in digest {
        out.push(HEX[(byte >> 4) as usize] as char);
        out.push(HEX[(byte & 0x0f) as usize] as char);
    }
    out
}

/// Compares two hashes, tolerating a missing `sha256:` prefix and case.
pub fn same_hash(a: &str, b: &str) -> bool {
    let strip = |h: &str| {
        h.trim()
            .trim_start_matches(HASH_PREFIX)
            .to_ascii_lowercase()
    };
    strip(a) == strip(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vector() {
        assert_eq!(
            content_hash("abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn lines_hash_equals_concatenation() {
        assert_eq!(lines_hash(&["a\n", "b"]), content_hash("a\nb"));
    }

    #[test]
    fn same_hash_is_lenient_on_prefix_and_case() {
        let h = content_hash("x");
        assert!(same_hash(
            &h,
            &h.trim_start_matches(HASH_PREFIX).to_uppercase()
        ));
        assert!(!same_hash(&h, &content_hash("y")));
    }
}
