//! Prompt templates: Tera files in a `prompts/` folder that people edit,
//! read when koas runs, with the copies built into `koas` as a fallback.
//!
//! A template's hash ([`Template::hash`]) identifies the exact text a run
//! used: callers put it in cache keys and session records, so an edited
//! template is never answered from a stale cache. A template's final
//! newline is not part of the prompt (editors add one).

use std::path::{Path, PathBuf};

use koas_kernel_api::hash::sha256;
use serde::Serialize;

use crate::error::LlmError;

/// The environment variable naming a prompts folder.
pub const PROMPTS_ENV: &str = "KOAS_PROMPTS";

// The templates built into this binary: every file of the repository's
// `prompts/` folder at build time, listed by `build.rs` (so this crate
// names no host's templates).
include!(concat!(env!("OUT_DIR"), "/built_in_prompts.rs"));

/// Where a template's text came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "path")]
pub enum TemplateSource {
    /// A file of the prompts folder.
    File(PathBuf),
    /// The copy built into this binary.
    BuiltIn,
}

/// One prompt template, ready to render.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    name: String,
    text: String,
    source: TemplateSource,
}

impl Template {
    /// The template's name (its file name without `.tera`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The template text (final newline removed).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Where the text came from.
    pub fn source(&self) -> &TemplateSource {
        &self.source
    }

    /// `sha256:` of the template text, for cache keys and session records.
    pub fn hash(&self) -> String {
        sha256(&self.text)
    }

    /// Renders the template with the variables of `context` (a JSON
    /// object). An unknown variable or a syntax error names the template.
    pub fn render(&self, context: &serde_json::Value) -> Result<String, LlmError> {
        let context = tera::Context::from_value(context.clone()).map_err(|e| {
            LlmError::Config(format!(
                "prompt `{}`: the variables must be a JSON object: {e}",
                self.name
            ))
        })?;
        tera::Tera::one_off(&self.text, &context, false).map_err(|e| {
            let mut message = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(cause) = source {
                message.push_str(&format!(": {cause}"));
                source = cause.source();
            }
            LlmError::Config(format!(
                "prompt `{}` ({}): {message}",
                self.name,
                self.source.describe()
            ))
        })
    }
}

impl TemplateSource {
    /// The file, or `built into koas`.
    pub fn describe(&self) -> String {
        match self {
            TemplateSource::File(path) => path.display().to_string(),
            TemplateSource::BuiltIn => "built into koas".to_owned(),
        }
    }
}

/// A prompts folder (or none), with the built-in templates behind it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Prompts {
    dir: Option<PathBuf>,
}

impl Prompts {
    /// The folder `dir`, as given (a pipeline's `prompts`, `--prompts`).
    pub fn in_dir(dir: impl Into<PathBuf>) -> Prompts {
        Prompts {
            dir: Some(dir.into()),
        }
    }

    /// Only the templates compiled into koas, ignoring every folder.
    pub fn built_in() -> Prompts {
        Prompts { dir: None }
    }

    /// The folder to use: `explicit` when given, else `$KOAS_PROMPTS`,
    /// else `share/koas/prompts` of the install prefix of the running
    /// executable, else the repository's `prompts/` for a `koas` built in
    /// it; none of these: the built-in templates only.
    pub fn locate(explicit: Option<&Path>) -> Prompts {
        if let Some(dir) = explicit {
            return Prompts::in_dir(dir);
        }
        if let Some(dir) = std::env::var_os(PROMPTS_ENV).filter(|v| !v.is_empty()) {
            return Prompts::in_dir(PathBuf::from(dir));
        }
        let exe_dir = std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(Path::to_path_buf));
        if let Some(exe_dir) = exe_dir {
            // <prefix>/bin/koas → <prefix>/share/koas/prompts;
            // <repo>/target/<profile>/koas → <repo>/prompts.
            for candidate in [
                exe_dir.join("../share/koas/prompts"),
                exe_dir.join("../../prompts"),
            ] {
                if candidate.is_dir() {
                    return Prompts::in_dir(candidate);
                }
            }
        }
        Prompts::built_in()
    }

    /// The folder in use, if any.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Loads template `name`: `<dir>/<name>.tera` when it exists, else the
    /// built-in copy. A name that is neither is an error listing where
    /// koas looked.
    pub fn load(&self, name: &str) -> Result<Template, LlmError> {
        if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
            return Err(LlmError::Config(format!(
                "`{name}` is not a prompt name (a file name without `.tera`)"
            )));
        }
        if let Some(dir) = &self.dir {
            let path = dir.join(format!("{name}.tera"));
            match std::fs::read_to_string(&path) {
                Ok(text) => {
                    return Ok(Template {
                        name: name.to_owned(),
                        text: without_final_newline(text),
                        source: TemplateSource::File(path),
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(LlmError::Config(format!(
                        "prompt `{name}`: cannot read {}: {e}",
                        path.display()
                    )))
                }
            }
        }
        match BUILT_IN.iter().find(|(n, _)| *n == name) {
            Some((_, text)) => Ok(Template {
                name: name.to_owned(),
                text: without_final_newline((*text).to_owned()),
                source: TemplateSource::BuiltIn,
            }),
            None => Err(LlmError::Config(format!(
                "no prompt template `{name}`: looked for {} and among the built-in templates ({})",
                self.dir
                    .as_ref()
                    .map(|d| d.join(format!("{name}.tera")).display().to_string())
                    .unwrap_or_else(|| "no prompts folder".to_owned()),
                BUILT_IN
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }
}

fn without_final_newline(mut text: String) -> String {
    if text.ends_with('\n') {
        text.pop();
        if text.ends_with('\r') {
            text.pop();
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_file_in_the_folder_wins_over_the_built_in_copy() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::write(dir.path().join("calibration.tera"), "Say {{ word }}.\n").expect("write");
        let prompts = Prompts::in_dir(dir.path());
        let t = prompts.load("calibration").expect("loads");
        assert_eq!(t.text(), "Say {{ word }}.");
        assert_eq!(
            t.source(),
            &TemplateSource::File(dir.path().join("calibration.tera"))
        );
        assert_eq!(
            t.render(&json!({"word": "hi"})).expect("renders"),
            "Say hi."
        );
        let built_in = prompts.load("calibration_system").expect("falls back");
        assert_eq!(built_in.source(), &TemplateSource::BuiltIn);
        assert_ne!(
            t.hash(),
            Prompts::built_in()
                .load("calibration")
                .expect("built in")
                .hash()
        );
    }

    #[test]
    fn errors_name_the_template_and_where_koas_looked() {
        let dir = tempfile::tempdir().expect("tmp");
        let prompts = Prompts::in_dir(dir.path());
        let err = prompts
            .load("no_such_prompt")
            .expect_err("unknown")
            .to_string();
        assert!(
            err.contains("no_such_prompt.tera") && err.contains("calibration"),
            "{err}"
        );
        std::fs::write(dir.path().join("bad.tera"), "{{ missing }}").expect("write");
        let err = prompts
            .load("bad")
            .expect("loads")
            .render(&json!({}))
            .expect_err("unknown variable")
            .to_string();
        assert!(
            err.contains("prompt `bad`") && err.contains("missing"),
            "{err}"
        );
        assert!(prompts.load("../etc/passwd").is_err());
    }

    #[test]
    fn the_calibration_prompt_is_the_fixed_one() {
        let t = Prompts::built_in().load("calibration").expect("built in");
        assert_eq!(
            t.render(&json!({})).expect("renders"),
            "Return exactly this JSON object and nothing else:\n{\"calibration\": \"koas\", \"version\": 1, \"items\": [1, 2, 3]}"
        );
    }
}
