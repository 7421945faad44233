//! Numbers in prose: English and French number words, small counts written
//! in digits, and percentages with a decimal point or a decimal comma.

/// The value of an English or French number word from two to twenty
/// (case-insensitive), or `None`.
pub fn number_word(word: &str) -> Option<u32> {
    let w = word.to_lowercase();
    let v = match w.as_str() {
        "two" | "deux" => 2,
        "three" | "trois" => 3,
        "four" | "quatre" => 4,
        "five" | "cinq" => 5,
        "six" => 6,
        "seven" | "sept" => 7,
        "eight" | "huit" => 8,
        "nine" | "neuf" => 9,
        "ten" | "dix" => 10,
        "eleven" | "onze" => 11,
        "twelve" | "douze" => 12,
        "thirteen" | "treize" => 13,
        "fourteen" | "quatorze" => 14,
        "fifteen" | "quinze" => 15,
        "sixteen" | "seize" => 16,
        "seventeen" | "dix-sept" => 17,
        "eighteen" | "dix-huit" => 18,
        "nineteen" | "dix-neuf" => 19,
        "twenty" | "vingt" => 20,
        _ => return None,
    };
    Some(v)
}

/// The characters that may separate a number from `%`: nothing, a space,
/// a no-break space or a narrow no-break space (French typography).
fn is_percent_gap(c: char) -> bool {
    matches!(c, ' ' | '\u{a0}' | '\u{202f}')
}

/// Parses a table cell holding one percentage: `40%`, `40 %`, `12,5 %`,
/// `**33.3%**`, `~20 %`. Returns `None` for anything else (ranges,
/// inequalities, text).
pub fn parse_percent_cell(cell: &str) -> Option<f64> {
    let mut s = cell.trim();
    for marker in ["**", "__", "*", "_"] {
        if let Some(inner) = s.strip_prefix(marker).and_then(|t| t.strip_suffix(marker)) {
            s = inner.trim();
        }
    }
    let s = s
        .strip_prefix('~')
        .or_else(|| s.strip_prefix('≈'))
        .unwrap_or(s)
        .trim_start();
    let number = s.strip_suffix('%')?.trim_end_matches(is_percent_gap);
    let number = number.strip_prefix('+').unwrap_or(number);
    if number.is_empty()
        || !number
            .chars()
            .all(|c| c.is_ascii_digit() || c == '.' || c == ',' || c == '-')
    {
        return None;
    }
    let (negative, digits) = match number.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, number),
    };
    if digits.contains('-') || digits.matches(['.', ',']).count() > 1 {
        return None;
    }
    let value: f64 = digits.replace(',', ".").parse().ok()?;
    Some(if negative { -value } else { value })
}

/// Formats a percentage total for messages: one decimal unless whole.
pub fn format_percent(value: f64) -> String {
    if (value - value.round()).abs() < 1e-9 {
        format!("{value:.0} %")
    } else {
        format!("{value:.1} %")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn number_words_in_both_languages() {
        assert_eq!(number_word("deux"), Some(2));
        assert_eq!(number_word("Three"), Some(3));
        assert_eq!(number_word("DIX"), Some(10));
        assert_eq!(number_word("une"), None);
        assert_eq!(number_word("approches"), None);
    }

    #[test]
    fn percent_cells_with_point_comma_and_spaces() {
        assert_eq!(parse_percent_cell("40%"), Some(40.0));
        assert_eq!(parse_percent_cell(" 55 % "), Some(55.0));
        assert_eq!(parse_percent_cell("12,5\u{a0}%"), Some(12.5));
        assert_eq!(parse_percent_cell("12,5\u{202f}%"), Some(12.5));
        assert_eq!(parse_percent_cell("**33.3%**"), Some(33.3));
        assert_eq!(parse_percent_cell("~20 %"), Some(20.0));
        assert_eq!(parse_percent_cell("-5%"), Some(-5.0));
        for bad in ["<5%", "10-20%", "n/a", "40", "1.2.3%", "%", "abc %"] {
            assert_eq!(parse_percent_cell(bad), None, "{bad}");
        }
    }

    #[test]
    fn percent_formatting() {
        assert_eq!(format_percent(120.0), "120 %");
        assert_eq!(format_percent(119.8), "119.8 %");
    }

    proptest! {
        #[test]
        fn formatted_percentages_parse_back(tenths in 0u32..100_000, comma in any::<bool>(), space in any::<bool>()) {
            let value = f64::from(tenths) / 10.0;
            let mut text = format!("{value:.1}");
            if comma { text = text.replace('.', ","); }
            text.push_str(if space { " %" } else { "%" });
            let parsed = parse_percent_cell(&text).expect("parses");
            prop_assert!((parsed - value).abs() < 1e-9);
        }
    }
}
