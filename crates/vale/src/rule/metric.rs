//! `metric`: a formula over the document's counts (words, sentences,
//! syllables, lists…) and a condition on its result; met, it is an alert
//! on the document, its `%s` the result.

use super::formula::{parse, Expr, Value};
use super::keys::Keys;
use super::message::fill;
use super::{Hit, RuleError};
use crate::prose::TextCounts;
use std::collections::HashMap;

/// The variables a formula may use.
const VARIABLES: [&str; 17] = [
    "words",
    "sentences",
    "syllables",
    "characters",
    "complex_words",
    "long_words",
    "polysyllabic_words",
    "paragraphs",
    "pre",
    "list",
    "blockquote",
    "heading_h1",
    "heading_h2",
    "heading_h3",
    "heading_h4",
    "heading_h5",
    "heading_h6",
];

/// The name the result of the formula has in the condition.
const RESULT: &str = "__result__";

/// A compiled `metric` rule.
#[derive(Debug)]
pub(crate) struct Metric {
    formula: Expr,
    /// `<result> <condition>`, a yes-or-no.
    condition: Expr,
}

/// What the document holds, for a formula: the counts of its summary and
/// of its blocks by kind.
pub(crate) fn variables(counts: &TextCounts, blocks: &[(&str, f64)]) -> HashMap<String, f64> {
    let mut vars: HashMap<String, f64> = [
        ("words", counts.words),
        ("sentences", counts.sentences),
        ("syllables", counts.syllables),
        ("characters", counts.characters),
        ("complex_words", counts.complex_words),
        ("long_words", counts.long_words),
        ("polysyllabic_words", counts.polysyllabic_words),
        ("paragraphs", counts.paragraphs),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    for (name, n) in blocks {
        vars.insert((*name).to_owned(), *n);
    }
    vars
}

impl Metric {
    /// Reads and checks a `metric` rule.
    pub(crate) fn read(keys: &mut Keys) -> Result<Metric, RuleError> {
        let formula = keys
            .text("formula")?
            .ok_or_else(|| keys.error("formula", "a metric rule needs a formula"))?;
        let condition = keys
            .text("condition")?
            .ok_or_else(|| keys.error("condition", "a metric rule needs a condition"))?;
        // Vale lets a formula name a heading level as its scope does.
        let mut formula = formula;
        for level in 1..=6 {
            formula = formula.replace(&format!("heading.h{level}"), &format!("heading_h{level}"));
        }
        let known = |name: &str| VARIABLES.contains(&name);
        let formula = parse(&formula, &known).map_err(|e| keys.error("formula", e))?;
        if formula.numeric() != Some(true) {
            return Err(keys.error("formula", "must compute a number"));
        }
        let result_only = |name: &str| name == RESULT;
        let condition = parse(&format!("{RESULT} {condition}"), &result_only)
            .map_err(|e| keys.error("condition", e))?;
        if condition.numeric() != Some(false) {
            return Err(keys.error("condition", "must compare the result, as `> 8`"));
        }
        Ok(Metric { formula, condition })
    }

    /// The alert on a document with `vars`, if its result meets the
    /// condition (none on a document without words).
    pub(crate) fn run(&self, message: &str, vars: &HashMap<String, f64>) -> Vec<Hit> {
        if vars.get("words").copied().unwrap_or(0.0) == 0.0 {
            return Vec::new();
        }
        let Value::Number(result) = self.formula.eval(vars) else {
            return Vec::new();
        };
        // Vale compares the result as printed with six decimals.
        let printed = (result * 1e6).round() / 1e6;
        let mut with_result = HashMap::new();
        with_result.insert(
            RESULT.to_owned(),
            if printed.is_finite() { printed } else { result },
        );
        if self.condition.eval(&with_result) != Value::Bool(true) {
            return Vec::new();
        }
        vec![document_hit(message, result)]
    }
}

/// An alert on the whole document (Vale puts it at its start), its `%s`
/// the score with two decimals.
pub(crate) fn document_hit(message: &str, score: f64) -> Hit {
    Hit {
        span: 0..0,
        message: fill(message, &[&two_decimals(score)]),
        replacements: Vec::new(),
    }
}

/// `score` as Go's `%.2f` prints it.
fn two_decimals(score: f64) -> String {
    if score.is_nan() {
        "NaN".to_owned()
    } else if score.is_infinite() {
        if score > 0.0 { "+Inf" } else { "-Inf" }.to_owned()
    } else {
        format!("{score:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use yaml_rust2::YamlLoader;

    fn metric(yaml: &str) -> Result<Metric, RuleError> {
        let doc = YamlLoader::load_from_str(yaml)
            .ok()
            .and_then(|d| d.into_iter().next())
            .unwrap_or(yaml_rust2::Yaml::Null);
        Metric::read(&mut Keys::new("House.Metric", &doc))
    }

    #[test]
    fn a_met_condition_is_an_alert_with_the_result() {
        let rule =
            metric("formula: (words / sentences) + heading.h2\ncondition: '> 8'\n").expect("reads");
        let counts = TextCounts {
            words: 30.0,
            sentences: 3.0,
            ..TextCounts::default()
        };
        let vars = variables(&counts, &[("heading_h2", 1.0)]);
        let hits = rule.run("Score %s.", &vars);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].message, "Score 11.00.");
        assert_eq!(hits[0].span, 0..0);
        let vars = variables(
            &TextCounts {
                words: 10.0,
                sentences: 5.0,
                ..TextCounts::default()
            },
            &[],
        );
        assert!(rule.run("x", &vars).is_empty());
        assert!(
            rule.run("x", &variables(&TextCounts::default(), &[]))
                .is_empty(),
            "no words"
        );
        assert_eq!(two_decimals(f64::INFINITY), "+Inf");
    }

    #[test]
    fn a_broken_metric_names_its_key() {
        let err = metric("formula: words / lines\ncondition: '> 1'\n").expect_err("unknown");
        assert_eq!(
            err.to_string(),
            "House.Metric: `formula`: does not know the variable `lines`"
        );
        let err = metric("formula: words\ncondition: '+ 1'\n").expect_err("not a test");
        assert!(err.to_string().contains("`condition`"), "{err}");
        assert!(metric("formula: words > 1\ncondition: '> 1'\n").is_err());
        assert!(metric("condition: '> 1'\n").is_err());
    }
}
