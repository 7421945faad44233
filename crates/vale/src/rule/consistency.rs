//! `consistency`: both forms of an `either` pair in one document (say
//! `colour` and `color`) are an alert, on the later one.

use super::keys::Keys;
use super::pattern::{compile, non_capturing, wrap};
use super::regex::Regex;
use super::{DocState, Hit, RuleError};

/// A compiled `consistency` rule: one pattern per pair, its first form
/// group 1 and its second group 2.
#[derive(Debug)]
pub(crate) struct Consistency {
    pairs: Vec<Regex>,
}

impl Consistency {
    /// Reads and compiles a `consistency` rule.
    pub(crate) fn read(keys: &mut Keys) -> Result<Consistency, RuleError> {
        let either = keys
            .pairs("either")?
            .ok_or_else(|| keys.error("either", "a consistency rule needs an either mapping"))?;
        if either.is_empty() {
            return Err(keys.error("either", "is empty"));
        }
        let ignorecase = keys.flag("ignorecase", false)?;
        let nonword = keys.flag("nonword", false)?;
        let pairs = either
            .iter()
            .map(|(one, other)| {
                let body = format!("({})|({})", non_capturing(one), non_capturing(other));
                compile(keys.rule(), "either", &wrap(&body, ignorecase, nonword))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Consistency { pairs })
    }

    /// The alerts on `text`, the forms seen before in the document in
    /// `state`: for each pair with a match here, once both its forms have
    /// been seen, one alert on its last match here (as Vale does).
    pub(crate) fn run(&self, message: &str, text: &str, state: &mut DocState) -> Vec<Hit> {
        let mut hits = Vec::new();
        for (i, pair) in self.pairs.iter().enumerate() {
            let mut last = None;
            for found in pair.captures_iter(text) {
                let Ok(found) = found else { break };
                for form in 1..=2 {
                    if let Some(group) = found.get(form) {
                        state.seen.insert(format!("either {i} {form}"));
                        last = Some(group.start()..group.end());
                    }
                }
            }
            let both = (1..=2).all(|form| state.seen.contains(&format!("either {i} {form}")));
            if let (Some(span), true) = (last, both) {
                hits.push(Hit::quoting(message, text, span));
            }
        }
        hits.sort_by_key(|h| h.span.start);
        hits
    }
}

#[cfg(test)]
mod tests {
    use crate::rule::testing::rule;
    use crate::{Block, ScopeKind};

    const SPELLING: &str = "extends: consistency\nmessage: \"Inconsistent spelling of '%s'.\"\nlevel: error\nignorecase: true\neither:\n  centre: center\n  colour: color\n";

    #[test]
    fn the_last_form_of_a_pair_in_a_block_is_the_alert() {
        let rule = rule("proselint.Spelling", SPELLING);
        let text = "Painting colour on color. The centre of the arts is the art center.";
        let alerts: Vec<(usize, String)> = rule
            .check(text)
            .into_iter()
            .map(|a| (a.span.start, a.message))
            .collect();
        assert_eq!(
            alerts,
            [
                (19, "Inconsistent spelling of 'color'.".to_owned()),
                (60, "Inconsistent spelling of 'center'.".to_owned()),
            ]
        );
        assert!(rule.check("Colour, colour.").is_empty());
    }

    #[test]
    fn forms_seen_in_earlier_blocks_count() {
        let rule = rule("proselint.Spelling", SPELLING);
        let text = "The colour.\n\nNo pair here.\n\nThe Color, the color.";
        let block = |span: std::ops::Range<usize>| Block {
            kind: ScopeKind::Paragraph,
            span,
        };
        let alerts = rule.check_blocks(text, &[block(0..11), block(13..26), block(28..49)]);
        assert_eq!(alerts.len(), 1);
        assert_eq!(&text[alerts[0].span.clone()], "color");
    }
}
