//! The request and response of the host's LLM service.

use serde::{Deserialize, Serialize};

/// The error a host without an LLM backend answers to every LLM request.
pub const NO_BACKEND: &str =
    "no LLM backend configured: set [llm] in the pipeline file to use an LLM kernel";

/// A completion request a kernel sends to the host's LLM service.
///
/// The host chooses the backend, endpoint and model (from the pipeline's
/// LLM config and [`LlmRequest::role`]), enforces sovereignty, budgets,
/// retries and timeouts, and logs the exchange.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LlmRequest {
    /// Which configured model to use, e.g. `edit`, `pyramid` or `tutor`.
    #[serde(default)]
    pub role: String,
    /// The system prompt, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The user prompt, sent as given.
    pub prompt: String,
    /// Sampling temperature; `None` uses the configured one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Maximum tokens to generate; `None` uses the configured one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Markers that end generation early when they appear in the output
    /// (for example `END_ANSWER`). The output up to and including the
    /// marker is kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop_markers: Vec<String>,
    /// Markers after which one whole JSON value (array or object) is the
    /// complete answer (for example `BEGIN_ANSWER`): generation ends as
    /// soon as that value is closed, and the text ends with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub complete_after: Vec<String>,
    /// A prose answer of about this many characters (Unicode characters,
    /// not bytes): once the text holds that many, the first sentence end
    /// (or paragraph break) ends generation, and a sentence written a
    /// second time ends it before the repeat. `None`: no such rule (the
    /// default; an answer in a structured format may repeat a sentence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prose_until: Option<u32>,
}

impl LlmRequest {
    /// A request for `prompt` with the given model role and the configured
    /// sampling parameters.
    pub fn new(role: impl Into<String>, prompt: impl Into<String>) -> Self {
        LlmRequest {
            role: role.into(),
            system: None,
            prompt: prompt.into(),
            temperature: None,
            max_tokens: None,
            stop_markers: Vec::new(),
            complete_after: Vec::new(),
            prose_until: None,
        }
    }

    /// Sets the system prompt (none by default).
    pub fn system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// Overrides the configured sampling temperature for this request.
    pub fn temperature(mut self, t: f64) -> Self {
        self.temperature = Some(t);
        self
    }

    /// Overrides the maximum number of generated tokens.
    pub fn max_tokens(mut self, n: u32) -> Self {
        self.max_tokens = Some(n);
        self
    }

    /// Adds a stop marker: generation ends once the marker appears, and the
    /// text keeps it.
    pub fn stop_marker(mut self, marker: impl Into<String>) -> Self {
        self.stop_markers.push(marker.into());
        self
    }

    /// Ends generation once a whole JSON value follows `marker`: an
    /// answer written in full is not left to run on to the token cap.
    pub fn complete_json_after(mut self, marker: impl Into<String>) -> Self {
        self.complete_after.push(marker.into());
        self
    }

    /// Asks for prose of about `chars` characters (one paragraph, say):
    /// once the text holds at least `chars` Unicode characters, the host
    /// ends generation at the next sentence end (`.`, `!`, `?` or `…`,
    /// closing quotes kept, then whitespace; or a paragraph break), and a
    /// sentence of 20 or more non-blank characters that the text already
    /// holds ends it before the repeat. The exchange log then says
    /// `ended_by: "enough"` or `"repetition"`. A small model asked for 80
    /// words otherwise writes on to the token cap: prose has no closing
    /// bracket to wait for. With [`LlmRequest::complete_json_after`] too,
    /// only the first rule applies (a repeated sentence is kept, for the
    /// kernel to judge), and only while the answer is prose: once a JSON value
    /// begins (a line that opens an array or object, or the first bracket
    /// after the marker), they stop applying. Part of the request's identity
    /// (cache key).
    pub fn prose_until(mut self, chars: u32) -> Self {
        self.prose_until = Some(chars);
        self
    }
}

/// The host's answer to an [`LlmRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LlmResponse {
    /// The generated text, exactly as the model produced it.
    pub text: String,
    /// The exact model id that answered.
    #[serde(default)]
    pub model: String,
    /// Tokens of the prompt, as the backend reported them (or estimated, see
    /// `tokens_estimated`).
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Tokens of the generated text, as the backend reported them (or
    /// estimated, see `tokens_estimated`).
    #[serde(default)]
    pub completion_tokens: u64,
    /// `true` when the token counts were estimated because the backend did
    /// not report usage.
    #[serde(default)]
    pub tokens_estimated: bool,
    /// `true` when the answer came from the host's response cache or an
    /// exchange log being replayed.
    #[serde(default)]
    pub cached: bool,
    /// `true` when generation stopped at one of the stop markers.
    #[serde(default)]
    pub stopped_at_marker: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prose_option_crosses_the_boundary_and_is_absent_when_unset() {
        // The request crosses the plugin boundary as JSON: a host that
        // predates the option ignores it, and a request without it is
        // the JSON it always was.
        let plain = serde_json::to_value(LlmRequest::new("r", "p")).expect("json");
        assert!(plain.get("prose_until").is_none(), "{plain}");
        let prose = LlmRequest::new("r", "p").prose_until(400);
        let json = serde_json::to_value(&prose).expect("json");
        assert_eq!(json["prose_until"], 400);
        let back: LlmRequest = serde_json::from_value(json).expect("back");
        assert_eq!(back, prose);
        let old: LlmRequest =
            serde_json::from_str(r#"{"role":"r","prompt":"p"}"#).expect("old form");
        assert_eq!(old.prose_until, None);
    }
}
