//! The integration tests of `review`, one binary: each module was its own
//! test binary, which linked the crate and its dependencies once each.

mod common;
mod corpus_roundtrip;
mod git_compat;
mod roundtrip_props;
mod silent_props;
