//! What the Stage 1 kernels share at their start.

use koas_kernel_api::hash::sha256;
use koas_kernel_api::{Inputs, KernelError};
use koas_review_schema::names;

/// The document a Stage 1 kernel reads (`doc_raw`) and its hash: the
/// `doc_hash` `md_inventory` gave when the pipeline has it, else computed
/// here, so a kernel run alone still names the document it described.
pub fn document(inputs: &Inputs) -> Result<(&str, String), KernelError> {
    let text = inputs.source_text(names::DOC_RAW)?;
    let doc_hash = match inputs.parse_optional::<String>(names::DOC_HASH)? {
        Some(h) => h,
        None => sha256(text.as_bytes()),
    };
    Ok((text, doc_hash))
}
