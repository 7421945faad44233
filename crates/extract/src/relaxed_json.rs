//! JSON as models actually write it: comments, trailing commas, single
//! quotes, bare keys, Python literals. [`to_strict_json`] rewrites such
//! text into strict JSON for `serde_json` to judge.

/// Rewrites relaxed JSON into strict JSON: drops `//`, `#` and `/* */`
/// comments and trailing commas, converts single-quoted and “curly”
/// strings, quotes bare keys, maps `True`/`False`/`None`, and escapes raw
/// control characters inside strings. Linear time, no recursion; the
/// result is not guaranteed to be valid JSON (the parser decides).
pub fn to_strict_json(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 16);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            '"' => i = copy_string(&chars, i + 1, '"', &mut out),
            '\'' => i = copy_string(&chars, i + 1, '\'', &mut out),
            '“' => i = copy_string(&chars, i + 1, '”', &mut out),
            '/' if next == Some('/') => i = skip_line(&chars, i),
            '#' => i = skip_line(&chars, i),
            '/' if next == Some('*') => i = skip_block_comment(&chars, i + 2),
            '}' | ']' => {
                drop_trailing_comma(&mut out);
                out.push(c);
                i += 1;
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                let start = i;
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let mut j = i;
                while j < chars.len() && chars[j].is_whitespace() {
                    j += 1;
                }
                let is_key = chars.get(j) == Some(&':');
                match word.as_str() {
                    _ if is_key => {
                        out.push('"');
                        out.push_str(&word);
                        out.push('"');
                    }
                    "True" => out.push_str("true"),
                    "False" => out.push_str("false"),
                    "None" => out.push_str("null"),
                    _ => out.push_str(&word),
                }
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// Copies a string literal opened before `start` and closed by `close` as a
/// double-quoted JSON string; returns the index after the closing quote.
fn copy_string(chars: &[char], start: usize, close: char, out: &mut String) -> usize {
    out.push('"');
    let mut i = start;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' {
            match chars.get(i + 1) {
                Some('\'') => out.push('\''),
                Some(&e) => {
                    out.push('\\');
                    out.push(e);
                }
                None => out.push_str("\\\\"),
            }
            i += 2;
            continue;
        }
        if c == close {
            out.push('"');
            return i + 1;
        }
        match c {
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
        i += 1;
    }
    i
}

fn skip_line(chars: &[char], mut i: usize) -> usize {
    while i < chars.len() && chars[i] != '\n' {
        i += 1;
    }
    i
}

fn skip_block_comment(chars: &[char], mut i: usize) -> usize {
    while i + 1 < chars.len() {
        if chars[i] == '*' && chars[i + 1] == '/' {
            return i + 2;
        }
        i += 1;
    }
    chars.len()
}

fn drop_trailing_comma(out: &mut String) {
    let trimmed_len = out.trim_end().len();
    if out[..trimmed_len].ends_with(',') {
        out.truncate(trimmed_len - 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn strict(text: &str) -> Value {
        serde_json::from_str(&to_strict_json(text)).unwrap()
    }

    #[test]
    fn repairs_common_model_habits() {
        let v = strict("{action: 'replace', // comment\n 'after': \"it's\", n: [1, 2,], ok: True, x: None, /* c */}");
        assert_eq!(
            v,
            serde_json::json!({"action": "replace", "after": "it's", "n": [1, 2], "ok": true, "x": null})
        );
    }

    #[test]
    fn raw_newlines_and_quotes_inside_strings_are_escaped() {
        let v = strict("{'t': 'line one\nsays \"hi\"'}");
        assert_eq!(v["t"], "line one\nsays \"hi\"");
    }

    #[test]
    fn words_inside_strings_are_untouched() {
        let v = strict("{\"t\": \"True None # not a comment, // nor this\"}");
        assert_eq!(v["t"], "True None # not a comment, // nor this");
    }
}
