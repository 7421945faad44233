//! Rendering a prompt template the host handed to a kernel.
//!
//! The templates are Tera files in `prompts/`; the host reads them (a
//! person may have edited them), hashes them into the kernel's cache key
//! and gives their text to the kernel, which renders them here with the
//! values of one request.

use serde::Serialize;

/// A template that cannot be rendered: its name and Tera's reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("prompt `{name}`: {reason}")]
pub struct RenderError {
    /// The template's name.
    pub name: String,
    /// Why (an unknown variable, a syntax error), with Tera's causes.
    pub reason: String,
}

/// Renders template `text` (named `name` in messages) with `values`, a
/// serializable struct or map whose fields are the template's variables.
pub fn render(name: &str, text: &str, values: &impl Serialize) -> Result<String, RenderError> {
    let error = |reason: String| RenderError {
        name: name.to_owned(),
        reason,
    };
    let context = tera::Context::from_serialize(values).map_err(|e| error(e.to_string()))?;
    tera::Tera::one_off(text, &context, false).map_err(|e| {
        let mut reason = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(cause) = source {
            reason.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        error(reason)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_values_and_names_the_template_on_error() {
        let out = render(
            "t",
            "Résume en {{ language }} :\n{{ text }}",
            &json!({"language": "français", "text": "x"}),
        )
        .expect("renders");
        assert_eq!(out, "Résume en français :\nx");
        let err =
            render("pyramid_leaf", "{{ missing }}", &json!({})).expect_err("unknown variable");
        assert!(
            err.to_string().starts_with("prompt `pyramid_leaf`"),
            "{err}"
        );
        assert!(err.to_string().contains("missing"), "{err}");
    }
}
