//! # koas-extract — turn raw LLM text into something a kernel can trust
//!
//! Pure, I/O-free tools for model output, which the LLM host and kernels
//! link directly:
//!
//! 1. **The canonicalizer** ([`canonicalizer`]), which makes a model's
//!    answer comparable and hashable across runs: [`normalize_text`]
//!    sanitises raw model text without destroying anything (line endings,
//!    outer whitespace), and
//!    [`extract_json_block`] extracts **exactly one** top-level JSON object
//!    from it, or rejects the text with a named reason
//!    ([`CanonicalRejection::NoJson`], [`CanonicalRejection::AmbiguousMultiBlock`],
//!    [`CanonicalRejection::ParseError`]). `koas_kernel_api::hash::canonical_json` and
//!    `canonical_sha256` give the dict-level canonical form and its
//!    `sha256:` hash; [`self_test`] runs the fixed self-test whose output
//!    hash (with [`canonicalizer_source_hash`]) goes into the run metadata.
//!
//! 2. **Forgiving readers** for the formats models drift into, which a
//!    kernel combines into its own parser of its own answer format:
//!    [`fences`] (the payload inside a code fence), [`relaxed_json`]
//!    (comments, trailing commas, single quotes… rewritten into strict
//!    JSON), [`yaml`] (one bounded YAML document as JSON) and [`scan`]
//!    (balanced `{…}`/`[…]` regions, quote-aware).
//!
//! Nothing here knows what a kernel asks a model for; nothing here panics
//! on any input: every entry point is covered by property tests fed
//! arbitrary strings.
//!
//! ```
//! use koas_extract::{extract_json_block, normalize_text, CanonicalRejection};
//!
//! let raw = "Sure!\r\n```json\n{\"answer\": 42}\n```\r\n";
//! let block = extract_json_block(&normalize_text(raw)).expect("one object");
//! assert_eq!(block.value["answer"], 42);
//!
//! let two = extract_json_block("{\"a\":1} and {\"b\":2}");
//! assert_eq!(two.unwrap_err(), CanonicalRejection::AmbiguousMultiBlock { count: 2 });
//!
//! let relaxed = koas_extract::relaxed_json::to_strict_json("{a: 'b',}");
//! assert_eq!(relaxed, "{\"a\": \"b\"}");
//! ```

#![deny(missing_docs)]

pub mod canonicalizer;
pub mod fences;
pub mod relaxed_json;
pub mod scan;
pub mod yaml;

pub use canonicalizer::{
    canonicalizer_source_hash, extract_json_block, normalize_text, self_test, CanonicalBlock,
    CanonicalRejection, SelfTestError, SelfTestReport,
};
