//! The JSON messages that cross the plugin boundary.
//!
//! These types carry no I/O; the host and the plugin glue both use them.

use crate::{KernelError, KernelOutput, KernelSpec};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// What the host sends to a kernel's run function.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunRequest {
    /// The resolved config: the kernel's defaults with the pipeline's values
    /// merged over them.
    #[serde(default)]
    pub config: Value,
    /// Input artifacts by name; an absent optional input is not a key.
    #[serde(default)]
    pub inputs: BTreeMap<String, Value>,
}

/// [`RunRequest`] as the plugin glue reads it: each input kept as its JSON
/// text, so that a kernel parses its own types straight from it (see
/// [`crate::Inputs`]) instead of from a `Value` tree several times larger.
#[derive(Debug, Deserialize)]
pub(crate) struct WireRunRequest {
    #[serde(default)]
    pub config: Value,
    #[serde(default)]
    pub inputs: BTreeMap<String, Box<serde_json::value::RawValue>>,
}

/// What a kernel's run function answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RunResponse {
    /// The kernel succeeded; its summary is already cut to 500 characters.
    Ok(KernelOutput),
    /// The kernel failed (or panicked).
    Error(KernelError),
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Status {
    Ok,
    Error,
}

/// [`RunResponse`] as it is read: one flat object. serde's tagged enums
/// buffer their content, which neither keeps an artifact's JSON text (a
/// raw value cannot be read from the buffer) nor spares the copy.
#[derive(Deserialize)]
struct WireRunResponse {
    status: Status,
    #[serde(default)]
    artifacts: BTreeMap<String, crate::ArtifactJson>,
    #[serde(default)]
    summary: String,
    #[serde(default)]
    warnings: Vec<String>,
    #[serde(default)]
    incomplete: Option<String>,
    kind: Option<crate::ErrorKind>,
    message: Option<String>,
}

impl<'de> Deserialize<'de> for RunResponse {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let wire = WireRunResponse::deserialize(d)?;
        Ok(match wire.status {
            Status::Ok => RunResponse::Ok(KernelOutput {
                artifacts: wire.artifacts,
                summary: wire.summary,
                warnings: wire.warnings,
                incomplete: wire.incomplete,
            }),
            Status::Error => RunResponse::Error(KernelError {
                kind: wire
                    .kind
                    .ok_or_else(|| serde::de::Error::missing_field("kind"))?,
                message: wire
                    .message
                    .ok_or_else(|| serde::de::Error::missing_field("message"))?,
            }),
        })
    }
}

/// What a plugin's describe function answers.
// One answer per kernel, once per load: the size of the spec variant costs
// nothing worth a box (which would change every constructor).
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum DescribeResponse {
    /// The kernel described itself.
    Ok {
        /// Its spec, not validated yet (the host validates it).
        spec: KernelSpec,
        /// The `koas-kernel-api` version the plugin was built with
        /// ([`crate::abi::API_VERSION`]); absent from older plugins'
        /// answers and from plugins not written with this crate.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        api_version: Option<String>,
    },
    /// `spec()` panicked or the index is out of range.
    Error {
        /// The panic message, or which index was out of range.
        message: String,
    },
}

/// The answer to a host call (`write_file`, `append_file`, `llm_complete`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum HostCallResponse {
    /// The call succeeded; `value` is the method's answer.
    Ok {
        /// The answer (`null` for file writes).
        #[serde(default)]
        value: Value,
    },
    /// The host refused or failed.
    Error {
        /// Why, in words a person can act on.
        message: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_response_reads_back_with_its_artifacts_text_unchanged() {
        let ok = RunResponse::Ok(
            KernelOutput::new()
                .artifact("doc", "é\n")
                .artifact("counts", serde_json::json!({"b": 1, "a": [1, 2]}))
                .summary("done")
                .warning("w")
                .incomplete("server down"),
        );
        let bytes = serde_json::to_vec(&ok).expect("encode");
        assert_eq!(
            serde_json::from_slice::<RunResponse>(&bytes).expect("decode"),
            ok
        );
        let text = br#"{"status":"ok","artifacts":{"x":{ "b" : 1 }}}"#;
        let RunResponse::Ok(out) = serde_json::from_slice(text).expect("decode") else {
            panic!("not ok");
        };
        assert_eq!(out.artifacts["x"].text(), r#"{ "b" : 1 }"#);
        let error = RunResponse::Error(KernelError::invalid_input("bad `doc`"));
        let bytes = serde_json::to_vec(&error).expect("encode");
        assert_eq!(
            serde_json::from_slice::<RunResponse>(&bytes).expect("decode"),
            error
        );
        assert!(serde_json::from_slice::<RunResponse>(br#"{"status":"error"}"#).is_err());
        assert!(serde_json::from_slice::<RunResponse>(br#"{"status":"maybe"}"#).is_err());
    }
}
