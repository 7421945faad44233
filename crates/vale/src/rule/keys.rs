//! A rule's YAML keys, read with their types checked: a rule file is
//! untrusted, so a wrong type is an error naming the rule and the key,
//! and every key read is remembered so that the others can be named as
//! not acted on.

use super::RuleError;
use yaml_rust2::Yaml;

/// The keys of one rule's mapping.
pub(crate) struct Keys<'a> {
    rule: &'a str,
    doc: &'a Yaml,
    /// The keys this crate has acted on.
    used: Vec<String>,
}

/// The largest count a key may hold: more is surely a mistake, and a
/// bound keeps arithmetic on counts from overflowing.
const MAX_COUNT: i64 = 1 << 32;

impl<'a> Keys<'a> {
    pub(crate) fn new(rule: &'a str, doc: &'a Yaml) -> Keys<'a> {
        Keys {
            rule,
            doc,
            used: Vec::new(),
        }
    }

    /// The rule's name (`Style.Rule`).
    pub(crate) fn rule(&self) -> &str {
        self.rule
    }

    /// An error on `key`.
    pub(crate) fn error(&self, key: &str, reason: impl Into<String>) -> RuleError {
        RuleError::Key {
            rule: self.rule.to_owned(),
            key: key.to_owned(),
            reason: reason.into(),
        }
    }

    /// The value of `key`, remembered as acted on; `None` when absent or
    /// null.
    fn get(&mut self, key: &str) -> Option<&'a Yaml> {
        self.used.push(key.to_owned());
        match &self.doc[key] {
            Yaml::BadValue | Yaml::Null => None,
            value => Some(value),
        }
    }

    /// Whether the mapping holds `key` at all.
    pub(crate) fn has(&self, key: &str) -> bool {
        !matches!(self.doc[key], Yaml::BadValue)
    }

    /// Marks `key` as acted on without reading it.
    pub(crate) fn mark(&mut self, key: &str) {
        self.used.push(key.to_owned());
    }

    /// A text value (Vale's YAML writes some words and numbers bare).
    pub(crate) fn text(&mut self, key: &str) -> Result<Option<String>, RuleError> {
        match self.get(key) {
            None => Ok(None),
            Some(value) => scalar(value)
                .map(Some)
                .ok_or_else(|| self.error(key, "must be text")),
        }
    }

    /// A yes-or-no value: `true`/`false`, or, as Vale's weak decoding
    /// takes them, the words `true`/`false` and the numbers 1 and 0.
    pub(crate) fn flag(&mut self, key: &str, default: bool) -> Result<bool, RuleError> {
        match self.get(key) {
            None => Ok(default),
            Some(Yaml::Boolean(b)) => Ok(*b),
            Some(Yaml::Integer(1)) => Ok(true),
            Some(Yaml::Integer(0)) => Ok(false),
            Some(Yaml::String(s)) if s.eq_ignore_ascii_case("true") => Ok(true),
            Some(Yaml::String(s)) if s.eq_ignore_ascii_case("false") => Ok(false),
            Some(_) => Err(self.error(key, "must be true or false")),
        }
    }

    /// A whole number of 0 or more.
    pub(crate) fn count(&mut self, key: &str) -> Result<Option<usize>, RuleError> {
        let wrong = || format!("must be a whole number from 0 to {MAX_COUNT}");
        match self.get(key) {
            None => Ok(None),
            Some(Yaml::Integer(i)) if (0..=MAX_COUNT).contains(i) => usize::try_from(*i)
                .map(Some)
                .map_err(|_| self.error(key, wrong())),
            Some(Yaml::String(s)) => match s.trim().parse::<i64>() {
                Ok(i) if (0..=MAX_COUNT).contains(&i) => usize::try_from(i)
                    .map(Some)
                    .map_err(|_| self.error(key, wrong())),
                _ => Err(self.error(key, wrong())),
            },
            Some(_) => Err(self.error(key, wrong())),
        }
    }

    /// A finite number.
    pub(crate) fn number(&mut self, key: &str) -> Result<Option<f64>, RuleError> {
        let parsed = match self.get(key) {
            None => return Ok(None),
            Some(Yaml::Integer(i)) => Some(*i as f64),
            Some(Yaml::Real(r) | Yaml::String(r)) => r.trim().parse::<f64>().ok(),
            Some(_) => None,
        };
        match parsed {
            Some(n) if n.is_finite() => Ok(Some(n)),
            _ => Err(self.error(key, "must be a number")),
        }
    }

    /// A list of texts (a single text is a list of one); empty when
    /// absent.
    pub(crate) fn list(&mut self, key: &str) -> Result<Vec<String>, RuleError> {
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(Yaml::Array(items)) => items
                .iter()
                .map(|item| scalar(item).ok_or_else(|| self.error(key, "must be a list of texts")))
                .collect(),
            Some(value) => scalar(value)
                .map(|s| vec![s])
                .ok_or_else(|| self.error(key, "must be a text or a list of texts")),
        }
    }

    /// A mapping of texts to texts, in file order; `None` when absent.
    pub(crate) fn pairs(&mut self, key: &str) -> Result<Option<Vec<(String, String)>>, RuleError> {
        match self.get(key) {
            None => Ok(None),
            Some(Yaml::Hash(map)) => map
                .iter()
                .map(|(k, v)| match (scalar(k), scalar(v)) {
                    (Some(k), Some(v)) => Ok((k, v)),
                    _ => Err(self.error(key, "its keys and values must be texts")),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(_) => Err(self.error(key, "must be a mapping")),
        }
    }

    /// The mapping's keys this crate has not acted on, in file order.
    pub(crate) fn unused(&self) -> Vec<String> {
        let Some(map) = self.doc.as_hash() else {
            return Vec::new();
        };
        map.keys()
            .map(|k| scalar(k).unwrap_or_else(|| format!("{k:?}")))
            .filter(|k| !self.used.contains(k))
            .collect()
    }
}

/// A scalar's text.
pub(crate) fn scalar(value: &Yaml) -> Option<String> {
    match value {
        Yaml::String(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Real(r) => Some(r.clone()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use yaml_rust2::YamlLoader;

    fn doc(yaml: &str) -> Yaml {
        YamlLoader::load_from_str(yaml)
            .ok()
            .and_then(|d| d.into_iter().next())
            .unwrap_or(Yaml::Null)
    }

    #[test]
    fn wrong_types_name_the_rule_and_the_key() {
        let yaml = doc("max: lots\nmin: -2\nflag: maybe\ntokens: {a: b}\ngrade: .nan\nswap: [a]\n");
        let mut keys = Keys::new("House.Bad", &yaml);
        let err = keys.count("max").expect_err("not a number");
        assert_eq!(
            err.to_string(),
            "House.Bad: `max`: must be a whole number from 0 to 4294967296"
        );
        assert!(keys.count("min").is_err(), "negative");
        assert!(keys.flag("flag", false).is_err());
        assert!(keys.list("tokens").is_err());
        assert!(keys.number("grade").is_err(), "not finite");
        assert!(keys.pairs("swap").is_err());
    }

    #[test]
    fn values_are_read_as_vale_reads_them_weakly() {
        let yaml = doc("max: '12'\nnonword: 'true'\nalpha: 1\ntokens: word\ngrade: 8\nother: x\n");
        let mut keys = Keys::new("House.Ok", &yaml);
        assert_eq!(keys.count("max").ok().flatten(), Some(12));
        assert_eq!(keys.flag("nonword", false).ok(), Some(true));
        assert_eq!(keys.flag("alpha", false).ok(), Some(true));
        assert_eq!(keys.flag("missing", true).ok(), Some(true));
        assert_eq!(keys.list("tokens").ok(), Some(vec!["word".to_owned()]));
        assert_eq!(keys.number("grade").ok().flatten(), Some(8.0));
        assert_eq!(keys.unused(), ["other"]);
    }
}
