//! The `--llm-*` flags a host's command line offers, in one place so every
//! command that takes them shows the same help.

use clap::Args;

use crate::llm_host::LlmOverrides;

/// Flags that override the `[llm]` tables: the command line's form of
/// [`LlmOverrides`]. A host with a command line flattens them into its
/// commands' arguments.
#[derive(Debug, Clone, Default, Args)]
pub struct LlmFlags {
    /// LLM wire protocol: ollama, openai (llama.cpp, vLLM, LM Studio) or
    /// anthropic.
    #[arg(long = "llm-backend", value_name = "BACKEND")]
    pub backend: Option<String>,
    /// LLM endpoint base URL, e.g. http://127.0.0.1:11434. Repeat it for
    /// several servers of the same model (requests go to the least loaded
    /// and fail over between them); `URL#slots=N` gives that endpoint N
    /// requests in flight instead of --llm-max-in-flight. Replaces the
    /// config's `endpoint`/`endpoints`.
    #[arg(long = "llm-endpoint", value_name = "URL[#slots=N]")]
    pub endpoints: Vec<String>,
    /// Model for every role that has no model of its own.
    #[arg(long = "llm-model", value_name = "MODEL")]
    pub model: Option<String>,
    /// Requests in flight at once per endpoint (a batching server such as
    /// llama-server with several slots, or vLLM, answers them together).
    #[arg(long = "llm-max-in-flight", value_name = "N")]
    pub max_in_flight: Option<usize>,
    /// Allow a non-local endpoint or the Anthropic backend (refused by
    /// default: documents stay on this machine).
    #[arg(long = "no-strict-sovereign")]
    pub no_strict_sovereign: bool,
}

impl LlmFlags {
    /// As library overrides.
    pub fn overrides(&self) -> LlmOverrides {
        LlmOverrides {
            backend: self.backend.clone(),
            endpoints: self.endpoints.clone(),
            model: self.model.clone(),
            no_strict_sovereign: self.no_strict_sovereign,
            max_in_flight: self.max_in_flight,
        }
    }
}
