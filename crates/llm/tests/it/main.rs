//! The integration tests of `llm`, one binary: each module was its own
//! test binary, which linked the crate and its dependencies once each.

mod endpoints;
mod hostile_servers;
mod kernel_pipeline;
mod prose_and_reuse;
mod service_features;
mod support;
mod wire_backends;
