//! Candidates one edit away, and which of them is certainly meant.

/// Letters an edit may add or put in place of another: the Latin
/// alphabet and the accented letters of French.
pub(crate) const LETTERS: &str = "abcdefghijklmnopqrstuvwxyzàâäçéèêëîïôöùûüÿœæ";

/// Every string one edit from `word` (a letter added, dropped, changed,
/// or two neighbours swapped), lower-case letters only, without repeats.
pub fn one_edit(word: &str) -> Vec<String> {
    let chars: Vec<char> = word.chars().collect();
    let mut out = Vec::new();
    let n = chars.len();
    for i in 0..n {
        // Dropped.
        out.push(chars[..i].iter().chain(&chars[i + 1..]).collect());
        // Swapped with the next.
        if i + 1 < n && chars[i] != chars[i + 1] {
            let mut c = chars.clone();
            c.swap(i, i + 1);
            out.push(c.into_iter().collect());
        }
        // Changed.
        for l in LETTERS.chars().filter(|l| *l != chars[i]) {
            let mut c = chars.clone();
            c[i] = l;
            out.push(c.into_iter().collect());
        }
    }
    // Added.
    for i in 0..=n {
        for l in LETTERS.chars() {
            let mut c = chars.clone();
            c.insert(i, l);
            out.push(c.into_iter().collect());
        }
    }
    out.sort_unstable();
    out.dedup();
    out.retain(|w: &String| w != word && !w.is_empty());
    out
}

/// `true` when `cand` (one edit from `word`) is what a slip of the hand
/// would have turned into `word`. Two kinds of edit are not: one at the
/// first letter (people rarely mistype it; "inodes" is no slip of
/// "nodes", "rvalues" none of "values"), except two first letters
/// swapped ("hte"); and a consonant added after the end ("rustc",
/// "containerd": tools are named so).
pub fn slip_like(word: &str, cand: &str) -> bool {
    let w: Vec<char> = word.chars().collect();
    let c: Vec<char> = cand.chars().collect();
    let Some(i) = w
        .iter()
        .zip(&c)
        .position(|(a, b)| a != b)
        .or(Some(w.len().min(c.len())))
    else {
        return false;
    };
    let swap_at_start =
        w.len() == c.len() && w.len() >= 2 && w[0] == c[1] && w[1] == c[0] && w[2..] == c[2..];
    if swap_at_start {
        return true;
    }
    if i == 0 {
        return false;
    }
    // "pprof" for "prof": the first letter doubled is the first letter's edit.
    if i == 1 && w.len() == c.len() + 1 && w[0] == w[1] {
        return false;
    }
    let appended = w.len() == c.len() + 1 && w[..c.len()] == c[..];
    if appended {
        let last = w[w.len() - 1];
        return !"bcdfgjklmnpqrtvwxz".contains(last) || c.last() == Some(&last);
    }
    true
}

/// How typical a slip turning `cand` into `word` is, most typical first:
/// 0 two neighbours swapped ("teh"), 1 a doubled letter lost or added
/// ("writen", "adresses", "thhe"), 2 another edit sparing the first
/// letter, 3 no slip ([`slip_like`] is false).
pub fn slip_kind(word: &str, cand: &str) -> u8 {
    if !slip_like(word, cand) {
        return 3;
    }
    let w: Vec<char> = word.chars().collect();
    let c: Vec<char> = cand.chars().collect();
    if w.len() == c.len() {
        let diff: Vec<usize> = (0..w.len()).filter(|&i| w[i] != c[i]).collect();
        return if diff.len() == 2 && diff[1] == diff[0] + 1 {
            0
        } else {
            2
        };
    }
    // The longer of the two has a letter the shorter lacks: is it the
    // twin of a neighbour?
    let (long, short) = if w.len() > c.len() {
        (&w, &c)
    } else {
        (&c, &w)
    };
    let i = long
        .iter()
        .zip(short.iter())
        .position(|(a, b)| a != b)
        .unwrap_or(short.len());
    let doubled = (i > 0 && long[i] == long[i - 1]) || long.get(i + 1) == Some(&long[i]);
    if doubled {
        1
    } else {
        2
    }
}

/// The optimal string alignment distance (Levenshtein plus swaps of
/// neighbours) between `a` and `b`, in characters.
pub fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

/// `word` written with the capitalisation of `model` (a capital first
/// letter, or all capitals).
pub fn match_case(word: &str, model: &str) -> String {
    let mut m = model.chars().filter(|c| c.is_alphabetic());
    let first_upper = m.next().is_some_and(char::is_uppercase);
    let all_upper = first_upper
        && model.chars().filter(|c| c.is_alphabetic()).count() > 1
        && model
            .chars()
            .filter(|c| c.is_alphabetic())
            .all(char::is_uppercase);
    if all_upper {
        word.to_uppercase()
    } else if first_upper {
        let mut c = word.chars();
        c.next()
            .map(|f| f.to_uppercase().chain(c).collect())
            .unwrap_or_default()
    } else {
        word.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_edit_holds_each_kind_of_slip() {
        let e = one_edit("explians");
        assert!(e.contains(&"explains".to_owned()), "swap");
        assert!(
            one_edit("adresses").contains(&"addresses".to_owned()),
            "added"
        );
        assert!(
            one_edit("developpement").contains(&"développement".to_owned()),
            "changed"
        );
        assert!(one_edit("thhe").contains(&"the".to_owned()), "dropped");
        assert!(!e.contains(&"explians".to_owned()));
    }

    #[test]
    fn slips_spare_the_first_letter_and_tool_suffixes() {
        assert!(slip_like("explians", "explains"));
        assert!(slip_like("teh", "the"));
        assert!(slip_like("hte", "the"));
        assert!(slip_like("adresses", "addresses"));
        assert!(slip_like("thee", "the"), "a doubled last letter");
        assert!(!slip_like("inodes", "nodes"));
        assert!(!slip_like("kustomization", "customization"));
        assert!(!slip_like("pprof", "prof"));
        assert!(!slip_like("rustc", "rust"));
        assert!(!slip_like("containerd", "container"));
    }

    #[test]
    fn slip_kinds_rank_swaps_then_doubled_letters() {
        assert_eq!(slip_kind("teh", "the"), 0);
        assert_eq!(slip_kind("writen", "written"), 1);
        assert_eq!(slip_kind("adresses", "addresses"), 1);
        assert_eq!(slip_kind("thhe", "the"), 1);
        assert_eq!(slip_kind("writen", "writes"), 2);
        assert_eq!(slip_kind("metdata", "metadata"), 2);
        assert_eq!(slip_kind("inodes", "nodes"), 3);
    }

    #[test]
    fn distance_counts_swaps_as_one() {
        assert_eq!(distance("explians", "explains"), 1);
        assert_eq!(distance("teh", "the"), 1);
        assert_eq!(distance("adresses", "addresses"), 1);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("", "abc"), 3);
    }

    #[test]
    fn case_follows_the_written_word() {
        assert_eq!(match_case("the", "Teh"), "The");
        assert_eq!(match_case("the", "TEH"), "THE");
        assert_eq!(match_case("the", "teh"), "the");
    }
}
