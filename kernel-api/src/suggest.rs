//! "Did you mean" suggestions for misspelt names: kernels, artifacts,
//! inputs. The host and the kernel API use this one function so that a
//! typo gets the same help wherever it is made.

/// The name of `available` closest to `name`, when it is close enough to
/// be a likely typo (at most 2 edits, or a quarter of its length for long
/// names). `name` itself is never suggested.
pub fn closest<'a, S: AsRef<str> + ?Sized + 'a>(
    name: &str,
    available: impl IntoIterator<Item = &'a S>,
) -> Option<&'a str> {
    available
        .into_iter()
        .map(AsRef::as_ref)
        .filter(|a| *a != name)
        .map(|a| (edit_distance(name, a), a))
        .filter(|(d, a)| *d <= 2.max(a.len() / 4))
        .min_by_key(|(d, _)| *d)
        .map(|(_, a)| a)
}

/// ` (did you mean `x`?)` when [`closest`] finds a name, else nothing: the
/// tail of an error message about `name`.
pub fn did_you_mean<'a, S: AsRef<str> + ?Sized + 'a>(
    name: &str,
    available: impl IntoIterator<Item = &'a S>,
) -> String {
    closest(name, available)
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default()
}

/// The Levenshtein distance between two strings, in characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur.push((prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names_only() {
        let names = ["source_len".to_string(), "md_structure".to_string()];
        assert_eq!(closest("sourcelen", &names), Some("source_len"));
        assert_eq!(closest("md_structur", &names), Some("md_structure"));
        assert_eq!(closest("zzz", &names), None);
        assert_eq!(closest("doc", ["doc", "dco"]), Some("dco"));
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(did_you_mean("opss", ["ops"]), " (did you mean `ops`?)");
        assert_eq!(did_you_mean("x", ["ops"]), "");
    }
}
