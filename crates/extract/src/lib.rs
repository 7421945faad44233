//! # koas-extract — turn raw LLM text into something a kernel can trust
//!
//! Two pure, I/O-free tools that kernels link directly:
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
//! 2. **The extraction ladder** ([`ladder`]): six parsers tried in order
//!    — `json_strict` (built on the canonicalizer),
//!    `json_relaxed`, `yaml`, `tagged_payload`, `plaintext_regex`,
//!    `freeform_salvage` — that turn whatever format a local model chose
//!    into raw edit proposals ([`RawEditOp`]) and report which level
//!    succeeded ([`ExtractionMethod`]).
//!
//! Nothing here panics on any input: every entry point is covered by
//! property tests fed arbitrary strings.
//!
//! ```
//! use koas_extract::{extract_edit_ops, extract_json_block, normalize_text, ExtractionMethod, CanonicalRejection};
//!
//! let raw = "Sure!\r\n```json\n{\"answer\": 42}\n```\r\n";
//! let block = extract_json_block(&normalize_text(raw)).expect("one object");
//! assert_eq!(block.value["answer"], 42);
//!
//! let two = extract_json_block("{\"a\":1} and {\"b\":2}");
//! assert_eq!(two.unwrap_err(), CanonicalRejection::AmbiguousMultiBlock { count: 2 });
//!
//! let out = extract_edit_ops(r#"[{"action": "replace", "lines": "3-4", "before": "teh", "after": "the"}]"#);
//! assert_eq!(out.method, ExtractionMethod::JsonStrict);
//! assert_eq!(out.ops[0].line_start, Some(3));
//! ```

#![deny(missing_docs)]

pub mod canonicalizer;
pub mod ladder;
mod op;
mod scan;

pub use canonicalizer::{
    canonicalizer_source_hash, extract_json_block, normalize_text, self_test, CanonicalBlock,
    CanonicalRejection, SelfTestError, SelfTestReport,
};
pub use ladder::{extract_edit_ops, ExtractionMethod, LadderOutcome, RejectedItem};
pub use op::{EditAction, OpReadError, RawEditOp};
