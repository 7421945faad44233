//! API keys: read from the environment only, never printable.

use std::fmt;

/// An API key read from an environment variable.
///
/// It has no `Display` and no `Serialize`, and its `Debug` prints
/// `ApiKey(<redacted>)`, so it cannot reach a log, a config dump, a run
/// record or an error message by accident. Only the backends read it, to
/// put it in a request header.
#[derive(Clone)]
pub struct ApiKey {
    value: String,
    var: String,
}

impl ApiKey {
    /// Reads the key from the environment variable `var`; `None` when the
    /// variable is unset or empty.
    pub fn from_env(var: &str) -> Option<ApiKey> {
        std::env::var(var)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .map(|value| ApiKey {
                value: value.trim().to_string(),
                var: var.to_string(),
            })
    }

    /// The variable the key came from (safe to print).
    pub fn var(&self) -> &str {
        &self.var
    }

    /// The secret, for a request header only.
    pub(crate) fn expose(&self) -> &str {
        &self.value
    }

    /// Replaces every occurrence of the key in `text` with `<redacted>`.
    pub fn redact(&self, text: &str) -> String {
        if self.value.is_empty() {
            text.to_string()
        } else {
            text.replace(&self.value, "<redacted>")
        }
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ApiKey(<redacted> from ${})", self.var)
    }
}

/// Redacts an optional key from `text`.
pub(crate) fn redact(key: Option<&ApiKey>, text: &str) -> String {
    match key {
        Some(k) => k.redact(text),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_redaction_hide_the_value() {
        std::env::set_var("KOAS_SECRET_UNIT_TEST", "sk-unit-123");
        let key = ApiKey::from_env("KOAS_SECRET_UNIT_TEST").unwrap();
        assert_eq!(key.expose(), "sk-unit-123");
        assert!(!format!("{key:?}").contains("sk-unit-123"));
        assert_eq!(key.redact("bad key sk-unit-123!"), "bad key <redacted>!");
        assert!(ApiKey::from_env("KOAS_SECRET_UNIT_TEST_UNSET").is_none());
    }
}
