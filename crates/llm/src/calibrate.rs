//! Calibration: the fixed prompt three times at temperature 0; the three
//! canonical hashes must be identical. It checks the server (same model,
//! stable at temperature 0) and the canonicalizer at once: variation the
//! canonicalizer removes is accepted, any other is drift.

use crate::error::LlmError;
use crate::prompts::Prompts;
use crate::service::{Deadline, LlmService, RunOptions};
use koas_extract::{extract_json_block, normalize_text};
use koas_kernel_api::LlmRequest;
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// The prompt templates of calibration: a fixed system prompt and a
/// small, schema-conforming user prompt with no variable content.
pub const CALIBRATION_TEMPLATES: (&str, &str) = ("calibration_system", "calibration");

/// How many identical runs calibration requires.
pub const CALIBRATION_RUNS: usize = 3;

/// The canonicalizer's verdict on one calibration answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CalibrationRun {
    /// `OK` or the canonicalizer's rejection code.
    pub status: String,
    /// `sha256:` of the canonical JSON, when `OK`.
    pub canonical_hash: Option<String>,
}

/// The calibration verdict, printed by `koas llm calibrate`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CalibrationReport {
    /// The exact model id calibrated (that of the role asked for).
    pub model: String,
    /// One entry per call, in call order ([`CALIBRATION_RUNS`] when no
    /// call failed).
    pub runs: Vec<CalibrationRun>,
    /// All runs extracted one object with the same canonical hash.
    pub passed: bool,
    /// `sha256:` of the system and user templates used, `+`-joined: a
    /// calibration only vouches for the prompt it sent.
    pub prompt_hash: String,
    /// A one-line verdict for people.
    pub verdict: String,
}

impl CalibrationReport {
    /// `Err(CALIBRATION_FAILED)` unless the calibration passed: a model that
    /// drifts at temperature 0 cannot give reproducible runs, so callers stop.
    pub fn require_pass(&self) -> Result<(), LlmError> {
        if self.passed {
            Ok(())
        } else {
            Err(LlmError::CalibrationFailed(self.verdict.clone()))
        }
    }
}

/// Calibrates the model of the `edit` role with the prompts koas finds
/// (see [`Prompts::locate`]).
pub fn calibrate(service: &LlmService) -> Result<CalibrationReport, LlmError> {
    calibrate_role(service, "edit", &Prompts::locate(None))
}

/// Calibrates the model of `role`: three calls at temperature 0 that
/// bypass the response cache and the empty-response temperature nudges,
/// each logged with purpose `calibration`. Transport failures are errors;
/// drifting or unextractable answers give a report with `passed: false`.
///
/// The whole calibration — every call, attempt and backoff wait — ends
/// within `calibrate_deadline_secs` (default 300 s): an attempt still
/// running then is cut and the error is `DEADLINE_EXCEEDED`.
pub fn calibrate_role(
    service: &LlmService,
    role: &str,
    prompts: &Prompts,
) -> Result<CalibrationReport, LlmError> {
    let model = service.config().model_for(role)?;
    let system = prompts.load(CALIBRATION_TEMPLATES.0)?;
    let user = prompts.load(CALIBRATION_TEMPLATES.1)?;
    let no_variables = serde_json::json!({});
    let request = LlmRequest::new(role, user.render(&no_variables)?)
        .system(system.render(&no_variables)?)
        .temperature(0.0)
        .max_tokens(256);
    let config = service.config();
    let options = RunOptions {
        purpose: "calibration",
        use_cache: false,
        empty_retries: 0,
        deadline: Some(Deadline {
            at: Instant::now() + config.calibrate_deadline(),
            secs: config.calibrate_deadline_secs,
            what: "calibration",
            setting: "calibrate_deadline_secs, --deadline",
        }),
    };
    let mut runs = Vec::with_capacity(CALIBRATION_RUNS);
    for _ in 0..CALIBRATION_RUNS {
        let response = service.run(&request, options)?;
        runs.push(match extract_json_block(&normalize_text(&response.text)) {
            Ok(block) => CalibrationRun {
                status: "OK".to_string(),
                canonical_hash: Some(block.hash),
            },
            Err(rejection) => CalibrationRun {
                status: rejection.code().to_string(),
                canonical_hash: None,
            },
        });
    }
    let prompt_hash = format!("{}+{}", system.hash(), user.hash());
    Ok(verdict(model, runs, prompt_hash))
}

fn verdict(model: String, runs: Vec<CalibrationRun>, prompt_hash: String) -> CalibrationReport {
    let first = runs.first().and_then(|r| r.canonical_hash.clone());
    let all_ok = runs.iter().all(|r| r.status == "OK");
    let identical = runs.iter().all(|r| r.canonical_hash == first);
    let (passed, verdict) = match (all_ok, identical, &first) {
        (true, true, Some(hash)) => (
            true,
            format!("PASS: {} runs at temperature 0 gave the same canonical hash {hash}", runs.len()),
        ),
        (false, _, _) => (
            false,
            format!(
                "FAIL: not every answer held exactly one JSON object ({})",
                runs.iter().map(|r| r.status.as_str()).collect::<Vec<_>>().join(", ")
            ),
        ),
        _ => (
            false,
            "FAIL: the canonical hashes differ at temperature 0; this provider is not suitable for deterministic replay".to_string(),
        ),
    };
    CalibrationReport {
        model,
        runs,
        passed,
        prompt_hash,
        verdict,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(status: &str, hash: Option<&str>) -> CalibrationRun {
        CalibrationRun {
            status: status.into(),
            canonical_hash: hash.map(str::to_string),
        }
    }

    #[test]
    fn verdicts() {
        let ok = verdict("m".into(), vec![run("OK", Some("h")); 3], String::new());
        assert!(ok.passed && ok.require_pass().is_ok());
        let drift = verdict(
            "m".into(),
            vec![
                run("OK", Some("h")),
                run("OK", Some("h2")),
                run("OK", Some("h")),
            ],
            String::new(),
        );
        assert!(!drift.passed);
        assert_eq!(
            drift.require_pass().unwrap_err().code(),
            "CALIBRATION_FAILED"
        );
        let bad = verdict("m".into(), vec![run("NO_JSON", None); 3], String::new());
        assert!(!bad.passed && bad.verdict.contains("NO_JSON"));
    }

    #[test]
    fn the_prompt_itself_holds_the_expected_object() {
        let prompt = Prompts::built_in()
            .load(CALIBRATION_TEMPLATES.1)
            .unwrap()
            .render(&serde_json::json!({}))
            .unwrap();
        let block = extract_json_block(&prompt).unwrap();
        assert_eq!(block.value["calibration"], "koas");
    }
}
