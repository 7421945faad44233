//! A plugin that speaks the C ABI by hand, without `export_kernel!`, so
//! nothing of `koas-kernel-api` trims what it sends: a 1 MB summary, a
//! 10 MB warning followed by 5,000 more, a 2 MB log line and 3,000 log
//! lines. The host must cap each of them. Deliberately careless; this
//! plugin workspace is outside the main workspace's lints.

use koas_kernel_api::abi::{HostTable, PluginTable, RawBuffer, ABI_VERSION};
use serde_json::json;

fn give(out: *mut RawBuffer, value: serde_json::Value) -> i32 {
    let bytes = serde_json::to_vec(&value).unwrap_or_default();
    unsafe { out.write(RawBuffer::from_vec(bytes)) };
    0
}

extern "C" fn describe(_index: u32, out: *mut RawBuffer) -> i32 {
    give(
        out,
        json!({"status": "ok", "spec": {
            "name": "hostile_raw",
            "version": "1.0.0",
            "inputs": [{"artifact": "doc"}],
            "outputs": [{"artifact": "hostile_out"}]
        }}),
    )
}

extern "C" fn run(
    _index: u32,
    host: *const HostTable,
    _request: *const u8,
    _len: usize,
    out: *mut RawBuffer,
) -> i32 {
    let host = unsafe { &*host };
    let huge_line = "L".repeat(2 * 1024 * 1024);
    (host.log)(host.ctx, 2, huge_line.as_ptr(), huge_line.len());
    let line = "l".repeat(100);
    for _ in 0..3000 {
        (host.log)(host.ctx, 2, line.as_ptr(), line.len());
    }
    let mut warnings = vec!["W".repeat(10 * 1024 * 1024)];
    warnings.extend((0..5000).map(|i| format!("warning {i}")));
    give(
        out,
        json!({
            "status": "ok",
            "artifacts": {"hostile_out": true},
            "summary": "S".repeat(1024 * 1024),
            "warnings": warnings,
        }),
    )
}

extern "C" fn free_buffer(buffer: RawBuffer) {
    drop(unsafe { buffer.into_vec() });
}

static TABLE: PluginTable = PluginTable {
    abi_version: ABI_VERSION,
    kernel_count: 1,
    describe,
    run,
    free_buffer,
};

/// The entry symbol.
#[no_mangle]
pub extern "C" fn koas_plugin_entry() -> *const PluginTable {
    &TABLE
}
