//! Vale's comment switches in a Markdown document: `<!-- vale off -->`,
//! `<!-- vale on -->`, `<!-- vale Style.Rule = NO -->` (and `= YES`),
//! `<!-- vale Style = NO -->` for a whole style, `<!-- vale
//! Style.Rule["term","other"] = NO -->` for some matches of a rule, and
//! `<!-- vale style = A -->` / `<!-- vale styles = A, B -->` to keep
//! only those styles on. A switch holds from the end of its comment to
//! the next switch that changes it.
//!
//! Vale applies them to the rules it runs block by block; before its
//! last passes (`summary`, `raw` rules) it turns every rule and style
//! back on, so those rules are not silenced by a rule's or a style's
//! switch.

use crate::RuleAlert;
use std::collections::HashMap;

/// The switches of a document, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommentSwitches {
    /// From each byte offset (a comment's end) on, the state then.
    changes: Vec<(usize, SwitchState)>,
}

/// What is off at some place.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct SwitchState {
    /// `vale off`.
    all_off: bool,
    /// A rule (`Style.Rule`), a style (`Style`) or some matches of a rule
    /// (`Style.Rule[term]`): off (true) or on (false).
    named: HashMap<String, bool>,
    /// After `vale styles = …`: a style not named since is off.
    other_styles_off: bool,
}

impl CommentSwitches {
    /// The switches of the Markdown (or HTML) `text`: its `<!-- … -->`
    /// comments saying `vale …`. Comments inside code are the host's to
    /// leave out (this reads text, not Markdown).
    pub fn parse(text: &str) -> CommentSwitches {
        let mut state = SwitchState::default();
        let mut changes = Vec::new();
        let mut rest = 0;
        while let Some(open) = text[rest..].find("<!--") {
            let inner_start = rest + open + 4;
            let Some(close) = text[inner_start..].find("-->") else {
                break;
            };
            let end = inner_start + close + 3;
            if state.apply(text[inner_start..inner_start + close].trim()) {
                changes.push((end, state.clone()));
            }
            rest = end;
        }
        CommentSwitches { changes }
    }

    /// Whether a comment turns rule `rule` (`Style.Rule`) off at byte
    /// `offset`: all of Vale, the rule's style, or the rule.
    pub fn is_off(&self, rule: &str, offset: usize) -> bool {
        let Some(state) = self.at(offset) else {
            return false;
        };
        let style = rule.split_once('.').map_or(rule, |(s, _)| s);
        state.all_off
            || state
                .named
                .get(style)
                .copied()
                .unwrap_or(state.other_styles_off)
            || state.named.get(rule).copied().unwrap_or(false)
    }

    /// Whether rule `rule`'s match `matched` at byte `offset` is off: the
    /// rule is, or `Style.Rule["matched"] = NO` said so of this text.
    pub fn is_off_for(&self, rule: &str, offset: usize, matched: &str) -> bool {
        self.is_off(rule, offset)
            || self.at(offset).is_some_and(|state| {
                state
                    .named
                    .get(&format!("{rule}[{matched}]"))
                    .copied()
                    .unwrap_or(false)
            })
    }

    /// Whether `alert`, of the document `text`, is switched off.
    pub fn silences(&self, alert: &RuleAlert, text: &str) -> bool {
        let matched = text.get(alert.span.clone()).unwrap_or("");
        self.is_off_for(&alert.rule, alert.span.start, matched)
    }

    /// The state at `offset`, if a switch came before.
    fn at(&self, offset: usize) -> Option<&SwitchState> {
        let after = self.changes.partition_point(|(end, _)| *end <= offset);
        after
            .checked_sub(1)
            .and_then(|i| self.changes.get(i))
            .map(|(_, s)| s)
    }
}

impl SwitchState {
    /// Applies the comment `comment` (its text, trimmed); whether it was a
    /// switch.
    fn apply(&mut self, comment: &str) -> bool {
        let Some(body) = comment.strip_prefix("vale ") else {
            return false;
        };
        match body.trim() {
            "off" => self.all_off = true,
            "on" => self.all_off = false,
            body => {
                let Some((target, value)) = body.rsplit_once('=') else {
                    return false;
                };
                let (target, value) = (target.trim(), value.trim());
                if target == "style" || target == "styles" {
                    // Only the styles named stay on.
                    self.named.retain(|name, _| name.contains('.'));
                    self.other_styles_off = true;
                    for style in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                        self.named.insert(style.to_owned(), false);
                    }
                    return true;
                }
                let off = match value {
                    "NO" | "off" => true,
                    "YES" | "on" => false,
                    _ => return false,
                };
                match target.split_once('[') {
                    Some((rule, terms)) => {
                        let Some(terms) = terms.strip_suffix(']') else {
                            return false;
                        };
                        // Only YES/NO name some matches, as Vale reads them.
                        if !matches!(value, "NO" | "YES") {
                            return false;
                        }
                        let Some(terms) = quoted_list(terms) else {
                            return false;
                        };
                        for term in terms {
                            self.named.insert(format!("{rule}[{term}]"), off);
                        }
                    }
                    None => {
                        if target.is_empty() || target.contains(char::is_whitespace) {
                            return false;
                        }
                        self.named.insert(target.to_owned(), off);
                    }
                }
            }
        }
        true
    }
}

/// `"a","b"` (a JSON list's inside, strings only) as its texts.
fn quoted_list(text: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut chars = text.trim().chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.next()? != '"' {
            return None;
        }
        let mut term = String::new();
        loop {
            match chars.next()? {
                '"' => break,
                '\\' => term.push(chars.next()?),
                c => term.push(c),
            }
        }
        out.push(term);
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        match chars.next() {
            None => return Some(out),
            Some(',') => continue,
            Some(_) => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str, needle: &str) -> usize {
        text.find(needle).expect("in the text")
    }

    #[test]
    fn vale_off_and_on_hold_between_their_comments() {
        let text = "One.\n<!-- vale off -->\nTwo.\n<!--vale on-->\nThree.\n";
        let switches = CommentSwitches::parse(text);
        assert!(!switches.is_off("Google.Will", at(text, "One")));
        assert!(switches.is_off("Google.Will", at(text, "Two")));
        assert!(!switches.is_off("Google.Will", at(text, "Three")));
    }

    #[test]
    fn a_rule_or_a_style_is_switched_alone() {
        let text = "one <!-- vale Google.Will = NO --> two <!-- vale Microsoft = NO --> three \
                    <!-- vale Google.Will = YES --> four <!-- vale Microsoft = YES --> five";
        let s = CommentSwitches::parse(text);
        assert!(!s.is_off("Google.Will", at(text, "one")));
        assert!(s.is_off("Google.Will", at(text, "two")));
        assert!(!s.is_off("Google.Latin", at(text, "two")));
        assert!(s.is_off("Microsoft.Terms", at(text, "three")));
        assert!(!s.is_off("Google.Will", at(text, "four")));
        assert!(s.is_off("Microsoft.Terms", at(text, "four")));
        assert!(!s.is_off("Microsoft.Terms", at(text, "five")));
    }

    #[test]
    fn some_matches_of_a_rule_are_switched() {
        let text = "<!-- vale Style.Redundancy[\"ACT test\",\"OTHER\"] = NO --> ACT test \
                    <!-- vale Style.Redundancy[\"ACT test\"] = YES --> ACT test";
        let s = CommentSwitches::parse(text);
        let first = at(text, "ACT test ");
        assert!(s.is_off_for("Style.Redundancy", first, "ACT test"));
        assert!(s.is_off_for("Style.Redundancy", first, "OTHER"));
        assert!(!s.is_off_for("Style.Redundancy", first, "else"));
        assert!(!s.is_off("Style.Redundancy", first));
        let last = text.rfind("ACT test").expect("there");
        assert!(!s.is_off_for("Style.Redundancy", last, "ACT test"));
        let alert = RuleAlert {
            rule: "Style.Redundancy".to_owned(),
            span: first..first + 8,
            message: String::new(),
            level: crate::Level::Error,
            link: None,
            replacements: Vec::new(),
        };
        assert!(s.silences(&alert, text));
    }

    #[test]
    fn setting_styles_keeps_only_those_on() {
        let text = "<!-- vale styles = Google, proselint --> one <!-- vale Microsoft = YES --> two";
        let s = CommentSwitches::parse(text);
        assert!(!s.is_off("Google.Will", at(text, "one")));
        assert!(s.is_off("Microsoft.Terms", at(text, "one")));
        assert!(!s.is_off("Microsoft.Terms", at(text, "two")));
        assert!(s.is_off("write-good.Weasel", at(text, "two")));
    }

    #[test]
    fn other_comments_and_broken_switches_change_nothing() {
        let text = "<!-- a note --> <!-- vale Google.Will = maybe --> <!-- vale X[\"a\" = NO --> <!-- vale";
        let s = CommentSwitches::parse(text);
        assert_eq!(s, CommentSwitches::default());
        assert!(!s.is_off("Google.Will", text.len()));
    }
}
