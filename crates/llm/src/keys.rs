//! Request identity: the input hash (of the whole prompt, system message
//! included, since both shape the answer) and the cache key.

use koas_kernel_api::hash::sha256;
use serde::{Deserialize, Serialize};

/// The sampling parameters that can change an answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Params {
    /// Temperature of the first attempt.
    pub temperature: f64,
    /// Most tokens the call may generate.
    pub max_tokens: u32,
    /// Stop markers of the request, in order; they change where the text
    /// ends.
    #[serde(default)]
    pub stop_markers: Vec<String>,
    /// Markers after which one whole JSON value completes the answer;
    /// they change where the text ends.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub complete_after: Vec<String>,
    /// Characters after which a prose answer ends at its next sentence
    /// end; it changes where the text ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prose_until: Option<u32>,
}

/// `sha256:` hash of the full prompt sent to the model: system and user
/// messages, length-prefixed so that no two prompts share a hash input.
pub fn input_hash(system: Option<&str>, prompt: &str) -> String {
    let system = system.unwrap_or("");
    let framed = format!(
        "system:{}:{}\nuser:{}:{}",
        system.len(),
        system,
        prompt.len(),
        prompt
    );
    sha256(framed.as_bytes())
}

/// blake3 key of input hash + exact model id + parameters: the response
/// cache key and the replay lookup key.
pub fn cache_key(input_hash: &str, model: &str, params: &Params) -> String {
    let mut hasher = blake3::Hasher::new();
    let mut identity = serde_json::json!({
        "input_hash": input_hash,
        "model": model,
        "temperature": params.temperature,
        "max_tokens": params.max_tokens,
        "stop_markers": params.stop_markers,
    });
    // Only when set: the keys of requests without it stay what they were.
    if !params.complete_after.is_empty() {
        identity["complete_after"] = serde_json::json!(params.complete_after);
    }
    if let Some(chars) = params.prose_until {
        identity["prose_until"] = serde_json::json!(chars);
    }
    hasher.update(identity.to_string().as_bytes());
    hasher.finalize().to_hex().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> Params {
        Params {
            temperature: 0.1,
            max_tokens: 100,
            stop_markers: vec![],
            complete_after: vec![],
            prose_until: None,
        }
    }

    #[test]
    fn system_and_user_both_count() {
        assert_ne!(input_hash(Some("a"), "b"), input_hash(None, "b"));
        assert_ne!(input_hash(Some("ab"), "c"), input_hash(Some("a"), "bc"));
        assert_eq!(input_hash(None, "x"), input_hash(Some(""), "x"));
    }

    #[test]
    fn key_changes_with_model_and_params() {
        let h = input_hash(None, "p");
        let k = cache_key(&h, "m", &params());
        assert_eq!(k, cache_key(&h, "m", &params()));
        assert_ne!(k, cache_key(&h, "m2", &params()));
        assert_ne!(
            k,
            cache_key(
                &h,
                "m",
                &Params {
                    temperature: 0.0,
                    ..params()
                }
            )
        );
        assert_ne!(
            k,
            cache_key(
                &h,
                "m",
                &Params {
                    stop_markers: vec!["X".into()],
                    ..params()
                }
            )
        );
        let prose = |chars| Params {
            prose_until: Some(chars),
            ..params()
        };
        assert_ne!(k, cache_key(&h, "m", &prose(400)));
        assert_ne!(
            cache_key(&h, "m", &prose(400)),
            cache_key(&h, "m", &prose(401))
        );
    }

    #[test]
    fn keys_of_requests_without_the_newer_options_did_not_change() {
        // Response caches and exchange logs written before an option
        // existed still answer the same requests.
        let h = input_hash(None, "p");
        let before = serde_json::json!({
            "input_hash": h,
            "model": "m",
            "temperature": 0.1,
            "max_tokens": 100,
            "stop_markers": Vec::<String>::new(),
        });
        let key = blake3::hash(before.to_string().as_bytes())
            .to_hex()
            .to_string();
        assert_eq!(cache_key(&h, "m", &params()), key);
    }
}
