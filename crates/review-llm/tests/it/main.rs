//! The integration tests of `review-llm`, one binary: each module was its own
//! test binary, which linked the crate and its dependencies once each.

mod ladder_corpus;
mod ladder_props;
