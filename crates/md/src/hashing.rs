//! `sha256:` content hashes, as the spec shows them.

use sha2::{Digest, Sha256};

/// `sha256:` followed by the lowercase hex SHA-256 of `bytes`.
pub fn content_hash(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in digest {
        out.push(hex_digit(b >> 4));
        out.push(hex_digit(b & 0x0f));
    }
    out
}

/// The hex digits of a `sha256:` hash (the part after the prefix).
pub fn hex_part(hash: &str) -> &str {
    hash.strip_prefix("sha256:").unwrap_or(hash)
}

fn hex_digit(n: u8) -> char {
    char::from_digit(u32::from(n), 16).unwrap_or('0')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_known_vectors() {
        assert_eq!(
            content_hash(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            content_hash(b"abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn hex_part_strips_the_prefix() {
        assert_eq!(hex_part("sha256:abcd"), "abcd");
        assert_eq!(hex_part("abcd"), "abcd");
    }
}
