//! The integration tests of `md`, one binary: each module was its own
//! test binary, which linked the crate and its dependencies once each.

mod adversarial;
mod corpus;
mod examples;
mod properties;
