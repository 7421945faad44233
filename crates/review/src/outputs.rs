//! Reading a finished pass's kernel outputs back from the workspace's
//! cache, for the commands and the report builders alike.

use anyhow::Context as _;
use koas_orchestrator::cache::Cache;
use koas_orchestrator::run_record::RunRecord;
use serde_json::Value;

/// The cache hash of `artifact`, an output of `kernel` in a finished pass.
fn output_hash<'r>(record: &'r RunRecord, kernel: &str, artifact: &str) -> anyhow::Result<&'r str> {
    record
        .kernels
        .iter()
        .find(|k| k.name == kernel)
        .and_then(|k| k.output_hashes.get(artifact))
        .map(String::as_str)
        .with_context(|| format!("kernel `{kernel}` did not produce `{artifact}`"))
}

/// The value of `artifact`, an output of `kernel` in a finished pass,
/// read back from the workspace's cache.
pub fn output(record: &RunRecord, kernel: &str, artifact: &str) -> anyhow::Result<Value> {
    let hash = output_hash(record, kernel, artifact)?;
    Cache::open(&record.workspace)
        .get_value(hash)
        .with_context(|| format!("reading `{artifact}` of `{kernel}` from the cache"))
}

/// Parses a kernel's output artifact into a host type, straight from its
/// stored bytes (no `Value` tree in between: an apply outcome of 100,000
/// changes is hundreds of MB as one).
pub fn parse_output<T: serde::de::DeserializeOwned>(
    record: &RunRecord,
    kernel: &str,
    artifact: &str,
) -> anyhow::Result<T> {
    let hash = output_hash(record, kernel, artifact)?;
    let bytes = Cache::open(&record.workspace)
        .get_bytes(hash)
        .with_context(|| format!("reading `{artifact}` of `{kernel}` from the cache"))?;
    serde_json::from_slice(&bytes)
        .with_context(|| format!("`{artifact}` of kernel `{kernel}` has an unexpected shape"))
}
