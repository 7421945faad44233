//! A plugin that really declares another ABI version: the host must refuse
//! it by reading only the version field, and name the koas-kernel-api
//! version its optional symbol gives (7.0.0 here).

use koas_kernel_api::abi::{HostTable, PluginTable, RawBuffer};

extern "C" fn describe(_index: u32, _out: *mut RawBuffer) -> i32 {
    1
}

extern "C" fn run(
    _index: u32,
    _host: *const HostTable,
    _request: *const u8,
    _len: usize,
    _out: *mut RawBuffer,
) -> i32 {
    1
}

extern "C" fn free_buffer(_buffer: RawBuffer) {}

static TABLE: PluginTable = PluginTable {
    abi_version: 999,
    kernel_count: 1,
    describe,
    run,
    free_buffer,
};

/// The entry symbol, with a table of ABI version 999.
#[no_mangle]
pub extern "C" fn koas_plugin_entry() -> *const PluginTable {
    &TABLE
}

/// The optional symbol naming the koas-kernel-api it was "built with".
#[no_mangle]
pub extern "C" fn koas_plugin_api_version() -> *const std::ffi::c_char {
    b"7.0.0\0".as_ptr().cast()
}
