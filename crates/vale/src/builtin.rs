//! The rules of Vale's own style, `Vale`, that no file holds:
//! `Vale.Repetition` and `Vale.Spelling` (its `Vale.Terms` and
//! `Vale.Avoid` come from the vocabularies: [`crate::Vocabulary::rules`]).

use crate::rule::{load_rule_with, Loaded};

/// `Vale.Repetition`: a word twice in a row, in any case, not across a
/// sentence's end.
const REPETITION: &str = r#"
extends: repetition
message: "'%s' is repeated!"
level: error
scope: text
ignorecase: true
alpha: true
action:
  name: edit
  params: [truncate, " "]
tokens: ['[^\s.!?]+']
"#;

/// `Vale.Spelling`: the host's speller with Vale's default dictionary.
const SPELLING: &str = r#"
extends: spelling
message: "Did you really mean '%s'?"
level: error
scope: text
action:
  name: suggest
  params: [spellings]
"#;

/// The rule `name` of Vale's own style (`Vale.Repetition`,
/// `Vale.Spelling`), the vocabularies' `accepted` entries its exceptions;
/// `None` for another name.
pub fn builtin_rule(name: &str, accepted: &[String]) -> Option<Loaded> {
    let yaml = match name {
        "Vale.Repetition" => REPETITION,
        "Vale.Spelling" => SPELLING,
        _ => return None,
    };
    // Fixed texts, read by the tests below: they load.
    load_rule_with(name, yaml, accepted).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vales_own_rules_load_whole_and_run() {
        let accepted = ["did".to_owned()];
        let repetition = builtin_rule("Vale.Repetition", &accepted).expect("loads");
        assert!(
            repetition.unsupported.is_empty(),
            "{:?}",
            repetition.unsupported
        );
        let alerts = repetition
            .rule
            .check("It was as as good. Sometimes did did is okay. Redis. Redis");
        let messages: Vec<&str> = alerts.iter().map(|a| a.message.as_str()).collect();
        assert_eq!(messages, ["'as' is repeated!"]);
        let spelling = builtin_rule("Vale.Spelling", &[]).expect("loads");
        assert!(
            spelling.unsupported.is_empty(),
            "{:?}",
            spelling.unsupported
        );
        assert!(spelling.rule.spelling().is_some());
        assert!(builtin_rule("Vale.Terms", &[]).is_none());
    }
}
