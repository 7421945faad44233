//! A plugin of this ABI version whose describe answers say it was built
//! with koas-kernel-api 99.0.0, a version newer than any koas's: it must
//! load, and `koas kernels` must say so. Written by hand (no
//! `export_kernel!`, whose symbols would name the real version), without
//! the version symbol: the version comes from the describe answer alone.

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
        json!({"status": "ok", "api_version": "99.0.0", "spec": {
            "name": "newer_api",
            "version": "1.0.0",
            "inputs": [{"artifact": "doc"}],
            "outputs": [{"artifact": "newer_out"}]
        }}),
    )
}

extern "C" fn run(
    _index: u32,
    _host: *const HostTable,
    _request: *const u8,
    _len: usize,
    out: *mut RawBuffer,
) -> i32 {
    give(
        out,
        json!({"status": "ok", "artifacts": {"newer_out": true}, "summary": "ran"}),
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
