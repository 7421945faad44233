//! `conditional`: a match of `first` (an acronym, say) is an alert unless
//! the document has shown `second` for it (its definition, "World Health
//! Organization (WHO)") before or in the same piece of text.

use super::keys::Keys;
use super::pattern::{compile, has_capture_group, is_match, matches, Exceptions};
use super::regex::Regex;
use super::{DocState, Hit, RuleError};

/// A compiled `conditional` rule.
#[derive(Debug)]
pub(crate) struct Conditional {
    /// The antecedent: each match must be accounted for.
    first: Regex,
    /// The consequent: its groups capture what it defines.
    second: Regex,
    /// `second` captures: a `first` match is fine when captured before.
    /// Without a group, `second` anywhere in the same piece is enough.
    second_captures: bool,
    exceptions: Exceptions,
}

impl Conditional {
    /// Reads and compiles a `conditional` rule; `accepted` are the
    /// vocabularies' accepted entries.
    pub(crate) fn read(keys: &mut Keys, accepted: &[String]) -> Result<Conditional, RuleError> {
        let first = keys
            .text("first")?
            .ok_or_else(|| keys.error("first", "a conditional rule needs first"))?;
        let second = keys
            .text("second")?
            .ok_or_else(|| keys.error("second", "a conditional rule needs second"))?;
        // Vale reads `ignorecase` here but never applies it; its documented
        // meaning (any case) is what is done.
        let case = if keys.flag("ignorecase", false)? {
            "(?i)"
        } else {
            ""
        };
        let own = keys.list("exceptions")?;
        let vocab: &[String] = if keys.flag("vocab", true)? {
            accepted
        } else {
            &[]
        };
        Ok(Conditional {
            first: compile(keys.rule(), "first", &format!("{case}{first}"))?,
            second: compile(keys.rule(), "second", &format!("{case}{second}"))?,
            second_captures: has_capture_group(&second),
            exceptions: Exceptions::new(keys.rule(), &own, vocab)?,
        })
    }

    /// The alerts on `text`, what the document defined before in
    /// `state`; this text's definitions are added to it first.
    pub(crate) fn run(&self, message: &str, text: &str, state: &mut DocState) -> Vec<Hit> {
        if self.second_captures {
            for found in self.second.captures_iter(text) {
                let Ok(found) = found else { break };
                for i in 1..found.len() {
                    if let Some(group) = found.get(i).filter(|g| !g.as_str().is_empty()) {
                        state.seen.insert(group.as_str().to_owned());
                    }
                }
            }
        } else if is_match(&self.second, text) {
            return Vec::new();
        }
        let excuser = self.exceptions.excuser(text);
        matches(&self.first, text)
            .into_iter()
            .filter(|span| {
                let defined = self.second_captures && state.seen.contains(&text[span.clone()]);
                !defined && !excuser.excuse(span)
            })
            .map(|span| Hit::quoting(message, text, span))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::rule::testing::rule;
    use crate::{Block, ScopeKind};

    const ACRONYMS: &str = "extends: conditional\nmessage: \"'%s' has no definition.\"\nlevel: suggestion\nignorecase: false\nfirst: '\\b([A-Z]{3,5})\\b'\nsecond: '(?:\\b[A-Z][a-z]+ )+\\(([A-Z]{3,5})\\)'\nexceptions:\n  - FAQ\n";

    #[test]
    fn an_acronym_is_fine_once_defined_before_or_in_its_block() {
        let rule = rule("Microsoft.Acronyms", ACRONYMS);
        let text = "The WHO came first.\n\nThe World Health Organization (WHO) is an agency.\n\nWe can use WHO, not DAFB, and FAQ.";
        let block = |span: std::ops::Range<usize>| Block {
            kind: ScopeKind::Paragraph,
            span,
        };
        let alerts = rule.check_blocks(text, &[block(0..19), block(21..70), block(72..106)]);
        let found: Vec<(&str, &str)> = alerts
            .iter()
            .map(|a| (&text[a.span.clone()], a.message.as_str()))
            .collect();
        assert_eq!(
            found,
            [
                ("WHO", "'WHO' has no definition."),
                ("DAFB", "'DAFB' has no definition."),
            ]
        );
        assert_eq!(alerts[0].span.start, 4, "used before its definition");
    }

    #[test]
    fn without_a_group_second_anywhere_in_the_block_is_enough() {
        let rule = rule(
            "House.Alt",
            "extends: conditional\nmessage: \"'%s' needs alt text.\"\nfirst: '!\\[\\]'\nsecond: 'alt='\n",
        );
        assert_eq!(rule.check("![] and ![]").len(), 2);
        assert!(rule.check("![] with alt=x").is_empty());
    }
}
