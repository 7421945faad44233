//! The canonicalizer: a pure pipeline from raw LLM text to one canonical
//! JSON object, or a named rejection. It works on the text before any
//! parsing, so two answers that differ only in line endings, outer
//! whitespace, surrounding prose or key order hash the same.
//!
//! ```text
//! LLM raw text
//!   → normalize_text()      non-destructive sanitation
//!   → extract_json_block()  exactly one top-level object, else rejected
//!   → JSON parse            (inside extract_json_block)
//!   → canonical_json()      dict-level canonical form, from
//!                           `koas_kernel_api::hash`
//! ```
//!
//! The canonicalizer is frozen per session: [`canonicalizer_source_hash`]
//! and the [`self_test`] output hash are recorded in the run metadata,
//! so a replay can tell that the code that canonicalized the log is the
//! code that is replaying it.

mod json_block;
mod normalize;
mod self_test;

pub use json_block::{extract_json_block, CanonicalBlock, CanonicalRejection};
pub use normalize::normalize_text;
pub use self_test::{canonicalizer_source_hash, self_test, SelfTestError, SelfTestReport};
