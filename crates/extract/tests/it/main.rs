//! The integration tests of `extract`, one binary: each module was its own
//! test binary, which linked the crate and its dependencies once each.

mod corpus;
mod fuzz_props;
