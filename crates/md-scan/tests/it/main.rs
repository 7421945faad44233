//! The integration tests of `md-scan`, one binary: each module was its own
//! test binary, which linked the crate and its dependencies once each.

mod docs;
mod invariants;
mod planted;
