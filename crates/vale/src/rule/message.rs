//! A rule's message, filled in as Vale fills it.

/// `message` with its `%s` (and `%d`, `%v`) filled by `args`, one each,
/// in order, and `%%` a percent sign; a verb with no argument left stays
/// as written. Vale then writes the message on one line: a line break
/// or a run of spaces in it (from the text it quotes) is one space.
pub(crate) fn fill(message: &str, args: &[&str]) -> String {
    let mut out = String::with_capacity(message.len());
    let mut args = args.iter();
    let mut chars = message.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('%') => {
                chars.next();
                out.push('%');
            }
            Some(&verb @ ('s' | 'd' | 'v')) => {
                chars.next();
                match args.next() {
                    Some(arg) => out.push_str(arg),
                    None => {
                        out.push('%');
                        out.push(verb);
                    }
                }
            }
            _ => out.push('%'),
        }
    }
    one_line(&out)
}

/// `text` with each run of spaces and line breaks made one space (as the
/// Vale the style repositories' tests were written with prints it).
fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = false;
    for c in text.chars() {
        if c == ' ' || c == '\n' || c == '\r' {
            if !blank {
                out.push(' ');
            }
            blank = true;
        } else {
            out.push(c);
            blank = false;
        }
    }
    out
}

/// Options as Vale lists them in a message: `'a'`, `'a' or 'b'`,
/// `'a', 'b', or 'c'`.
pub(crate) fn to_sentence(options: &[String]) -> String {
    match options {
        [] => String::new(),
        [one] => format!("'{one}'"),
        [a, b] => format!("'{a}' or '{b}'"),
        [rest @ .., last] => {
            let mut parts: Vec<String> = rest.iter().map(|o| format!("'{o}'")).collect();
            parts.push(format!("or '{last}'"));
            parts.join(", ")
        }
    }
}

/// `text` with its first letter a capital.
pub(crate) fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbs_are_filled_in_order_and_spaces_made_one() {
        assert_eq!(
            fill("Use '%s' instead of '%s'.", &["a", "b"]),
            "Use 'a' instead of 'b'."
        );
        assert_eq!(
            fill("'%s' has %d words, 100%%.", &["x"]),
            "'x' has %d words, 100%."
        );
        assert_eq!(
            fill("'%s' should have one space.", &["y.  T"]),
            "'y. T' should have one space."
        );
        assert_eq!(fill("'%s'", &["a\nb"]), "'a b'");
        assert_eq!(fill("50% off", &[]), "50% off");
    }

    #[test]
    fn options_read_as_a_sentence() {
        let opts = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(to_sentence(&opts(&["a"])), "'a'");
        assert_eq!(to_sentence(&opts(&["a", "b"])), "'a' or 'b'");
        assert_eq!(to_sentence(&opts(&["a", "b", "c"])), "'a', 'b', or 'c'");
        assert_eq!(capitalized("élan"), "Élan");
    }
}
