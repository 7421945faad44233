//! The C ABI between the koas host and a plugin library.
//!
//! Kernel authors never use this module directly: [`crate::export_kernel!`]
//! generates the plugin side and the host uses [`PluginHandle`]. It is public
//! so that the ABI is documented in one place and so that the host's loader
//! (and tests that build deliberately broken plugins) can name the types.
//!
//! Every `unsafe` block of koas' plugin boundary is in this module; each has
//! a `SAFETY:` note.
//!
//! # Layout
//!
//! A plugin exports one symbol, [`ENTRY_SYMBOL`], of type [`EntryFn`]. It
//! returns a pointer to a static [`PluginTable`] whose first field is the
//! ABI version. Everything else is exchanged as UTF-8 JSON in
//! [`RawBuffer`]s; a buffer is always freed by the side that allocated it.
// The plugin boundary itself: every `unsafe` has a SAFETY note.
#![allow(unsafe_code)]

use crate::context::{Host, LogLevel};
use crate::protocol::{
    DescribeResponse, HostCallResponse, RunRequest, RunResponse, WireRunRequest,
};
use crate::{KernelError, KernelSpec};
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

mod host_calls;
use host_calls::{host_call, host_free, host_is_cancelled, host_log, host_progress};

/// The ABI version this crate implements. A host refuses a plugin whose
/// table declares another one.
pub const ABI_VERSION: u32 = 1;

/// The name of the symbol every plugin library exports.
pub const ENTRY_SYMBOL: &str = "koas_plugin_entry";

/// The version of this crate, `koas-kernel-api`. [`crate::export_kernel!`]
/// compiles it into every plugin: its describe answers carry it and the
/// optional [`API_VERSION_SYMBOL`] returns it, so a host can name the
/// kernel-api a plugin was built with, even one of another ABI version.
pub const API_VERSION: &str = env!("CARGO_PKG_VERSION");

/// [`API_VERSION`] ending with a NUL byte, the C string
/// [`API_VERSION_SYMBOL`] returns.
#[doc(hidden)]
pub const API_VERSION_NUL: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");

/// The name of an optional symbol of type [`ApiVersionFn`]: the
/// `koas-kernel-api` version the plugin was built with. Plugins built
/// before it existed, and plugins not written with this crate, may lack
/// it; a host looks it up without requiring it.
pub const API_VERSION_SYMBOL: &str = "koas_plugin_api_version";

/// The type of [`API_VERSION_SYMBOL`]: a pointer to a static,
/// NUL-terminated UTF-8 string (`"0.1.0"`), valid while the library is
/// loaded.
pub type ApiVersionFn = extern "C" fn() -> *const std::ffi::c_char;

/// The longest version string a host reads from [`API_VERSION_SYMBOL`].
pub const MAX_API_VERSION_LEN: usize = 64;

/// Status returned by the ABI functions when the answer is a success.
pub const STATUS_OK: i32 = 0;
/// Status returned by the ABI functions when the answer is an error.
pub const STATUS_ERROR: i32 = 1;

/// A byte buffer allocated by one side of the boundary.
#[repr(C)]
#[derive(Debug)]
pub struct RawBuffer {
    /// Start of the bytes (dangling when `cap` is 0).
    pub ptr: *mut u8,
    /// Number of initialized bytes: the length of the JSON payload.
    pub len: usize,
    /// Allocated capacity; needed to free the buffer.
    pub cap: usize,
}

impl RawBuffer {
    /// An empty buffer that owns nothing.
    pub fn empty() -> Self {
        RawBuffer {
            ptr: std::ptr::NonNull::<u8>::dangling().as_ptr(),
            len: 0,
            cap: 0,
        }
    }

    /// Hands a vector's allocation over to the other side. It must come
    /// back to [`RawBuffer::into_vec`] in *this* binary to be freed.
    pub fn from_vec(v: Vec<u8>) -> Self {
        let mut v = std::mem::ManuallyDrop::new(v);
        RawBuffer {
            ptr: v.as_mut_ptr(),
            len: v.len(),
            cap: v.capacity(),
        }
    }

    /// Takes back a buffer made by [`RawBuffer::from_vec`] in this binary.
    ///
    /// # Safety
    /// `self` must come from `RawBuffer::from_vec` in the same binary and
    /// must not have been freed already.
    pub unsafe fn into_vec(self) -> Vec<u8> {
        if self.cap == 0 {
            return Vec::new();
        }
        // SAFETY: the caller guarantees ptr/len/cap come from a Vec<u8>
        // allocated by this binary's allocator and not yet freed.
        unsafe { Vec::from_raw_parts(self.ptr, self.len, self.cap) }
    }

    /// Copies the bytes out without taking ownership.
    ///
    /// # Safety
    /// `ptr` must point to `len` readable bytes (or `len` must be 0).
    pub unsafe fn to_vec(&self) -> Vec<u8> {
        if self.len == 0 {
            return Vec::new();
        }
        // SAFETY: the caller guarantees ptr is valid for len bytes.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }.to_vec()
    }
}

/// `describe(index, out) -> status`: writes a JSON [`DescribeResponse`]
/// for kernel `index` into `out`.
pub type DescribeFn = extern "C" fn(index: u32, out: *mut RawBuffer) -> i32;

/// `run(index, host, request, request_len, out) -> status`: runs kernel
/// `index` on a JSON [`RunRequest`] and writes a JSON [`RunResponse`] into
/// `out`. `host` stays valid for the duration of the call only.
pub type RunFn = extern "C" fn(
    index: u32,
    host: *const HostTable,
    request: *const u8,
    request_len: usize,
    out: *mut RawBuffer,
) -> i32;

/// Frees a buffer the plugin allocated.
pub type FreeFn = extern "C" fn(buffer: RawBuffer);

/// The type of [`ENTRY_SYMBOL`].
pub type EntryFn = extern "C" fn() -> *const PluginTable;

/// The table a plugin's entry symbol returns. Its first field is always the
/// ABI version, whatever the version: a host reads it before anything else.
#[repr(C)]
pub struct PluginTable {
    /// The ABI version the plugin was built against.
    pub abi_version: u32,
    /// How many kernels the library exports (indices `0..kernel_count`).
    pub kernel_count: u32,
    /// Describes one kernel (see [`DescribeFn`]).
    pub describe: DescribeFn,
    /// Runs one kernel (see [`RunFn`]).
    pub run: RunFn,
    /// Frees the buffers `describe` and `run` returned (see [`FreeFn`]);
    /// the host must not free them itself, allocators may differ.
    pub free_buffer: FreeFn,
}

/// The host's callbacks, passed to every run.
#[repr(C)]
pub struct HostTable {
    /// The ABI version the host implements.
    pub abi_version: u32,
    /// Opaque host state handed back to every callback.
    pub ctx: *mut c_void,
    /// `log(ctx, level, message, len)`; the message is UTF-8.
    pub log: extern "C" fn(ctx: *mut c_void, level: u32, message: *const u8, len: usize),
    /// `progress(ctx, done, total)`: `done` of `total` units of work.
    pub progress: extern "C" fn(ctx: *mut c_void, done: u64, total: u64),
    /// `is_cancelled(ctx) -> 0 | 1`.
    pub is_cancelled: extern "C" fn(ctx: *mut c_void) -> u8,
    /// `call(ctx, header, header_len, body, body_len, out) -> status`: a
    /// generic JSON call; the answer is a JSON [`HostCallResponse`] in a
    /// buffer the host allocated.
    pub call: extern "C" fn(
        ctx: *mut c_void,
        header: *const u8,
        header_len: usize,
        body: *const u8,
        body_len: usize,
        out: *mut RawBuffer,
    ) -> i32,
    /// Frees a buffer the host allocated.
    pub free_buffer: extern "C" fn(ctx: *mut c_void, buffer: RawBuffer),
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-string payload".to_string()
    }
}

/// Reads `len` bytes at `ptr` as a slice; empty for a null pointer.
///
/// # Safety
/// `ptr` must be null or valid for `len` bytes for the lifetime `'a`.
unsafe fn bytes<'a>(ptr: *const u8, len: usize) -> &'a [u8] {
    if ptr.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: guaranteed by the caller.
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }
}

/// Writes `buf` through `out` when `out` is not null.
///
/// # Safety
/// `out` must be null or point to a writable `RawBuffer` slot.
unsafe fn write_out(out: *mut RawBuffer, buf: RawBuffer) -> bool {
    if out.is_null() {
        return false;
    }
    // SAFETY: `out` is non-null and, by the caller's contract, points to a
    // RawBuffer slot owned by the caller for the duration of the call.
    unsafe { out.write(buf) };
    true
}

// ---------------------------------------------------------------------------
// Plugin side
// ---------------------------------------------------------------------------

/// The plugin-side [`Host`]: forwards to the host's C callbacks.
struct PluginSideHost {
    table: *const HostTable,
}

// SAFETY: the host promises (ABI contract) that its callbacks may be called
// from any thread while a run is in progress; the pointer itself is only
// read.
unsafe impl Send for PluginSideHost {}
// SAFETY: as above; the callbacks are thread-safe by contract.
unsafe impl Sync for PluginSideHost {}

impl PluginSideHost {
    fn table(&self) -> &HostTable {
        // SAFETY: the host guarantees the table outlives the run call, and
        // PluginSideHost never escapes that call.
        unsafe { &*self.table }
    }
}

impl Host for PluginSideHost {
    fn log(&self, level: LogLevel, message: &str) {
        let t = self.table();
        (t.log)(t.ctx, level as u32, message.as_ptr(), message.len());
    }

    fn progress(&self, done: u64, total: u64) {
        let t = self.table();
        (t.progress)(t.ctx, done, total);
    }

    fn is_cancelled(&self) -> bool {
        let t = self.table();
        (t.is_cancelled)(t.ctx) != 0
    }

    fn call(&self, header: &serde_json::Value, body: &[u8]) -> Result<serde_json::Value, String> {
        let t = self.table();
        let header = serde_json::to_vec(header).map_err(|e| e.to_string())?;
        let mut out = RawBuffer::empty();
        (t.call)(
            t.ctx,
            header.as_ptr(),
            header.len(),
            body.as_ptr(),
            body.len(),
            &mut out,
        );
        // SAFETY: the host filled `out` with a buffer of `len` valid bytes
        // that stays allocated until we hand it back to free_buffer.
        let answer = unsafe { out.to_vec() };
        (t.free_buffer)(t.ctx, out);
        match serde_json::from_slice::<HostCallResponse>(&answer) {
            Ok(HostCallResponse::Ok { value }) => Ok(value),
            Ok(HostCallResponse::Error { message }) => Err(message),
            Err(e) => Err(format!("the host answered with malformed JSON: {e}")),
        }
    }
}

/// The kernels one plugin library exports. Built by [`crate::export_kernel!`].
#[doc(hidden)]
pub struct Registry {
    kernels: Vec<Box<dyn crate::Kernel>>,
}

thread_local! {
    static LAST_PANIC: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Installs this plugin's panic hook: instead of printing to stderr, it
/// keeps the message and location for the error result the host receives.
/// The hook belongs to the plugin's own copy of `std`, so the host's hook
/// is untouched.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let text = info.to_string();
        LAST_PANIC.with(|p| *p.borrow_mut() = Some(text));
    }));
}

/// The message of the last panic caught on this thread, with its location
/// when the plugin's hook recorded it.
fn caught_panic(payload: &(dyn std::any::Any + Send)) -> String {
    LAST_PANIC
        .with(|p| p.borrow_mut().take())
        .map(|t| t.replace('\n', " "))
        .unwrap_or_else(|| panic_message(payload))
}

impl Registry {
    /// Wraps the exported kernels and installs the plugin's panic hook.
    pub fn new(kernels: Vec<Box<dyn crate::Kernel>>) -> Self {
        install_panic_hook();
        Registry { kernels }
    }

    /// The implementation of [`DescribeFn`].
    ///
    /// # Safety
    /// `out` must be null or point to a writable `RawBuffer` slot, as the
    /// ABI contract has the host pass it.
    pub unsafe fn describe(&self, index: u32, out: *mut RawBuffer) -> i32 {
        let answer = catch_unwind(AssertUnwindSafe(|| {
            match self.kernels.get(index as usize) {
                Some(k) => DescribeResponse::Ok {
                    spec: k.spec(),
                    api_version: Some(API_VERSION.to_owned()),
                },
                None => DescribeResponse::Error {
                    message: format!("no kernel at index {index}"),
                },
            }
        }))
        .unwrap_or_else(|p| DescribeResponse::Error {
            message: format!("spec() {}", caught_panic(p.as_ref())),
        });
        let status = match answer {
            DescribeResponse::Ok { .. } => STATUS_OK,
            DescribeResponse::Error { .. } => STATUS_ERROR,
        };
        let json = serde_json::to_vec(&answer).unwrap_or_default();
        // SAFETY: guaranteed by this function's contract.
        unsafe { write_out(out, RawBuffer::from_vec(json)) };
        status
    }

    /// The implementation of [`RunFn`].
    ///
    /// # Safety
    /// As the ABI contract has the host pass them: `host` is null or points
    /// to a [`HostTable`] that stays valid, with thread-safe callbacks,
    /// until this call returns; `request` is valid for `request_len` bytes;
    /// `out` is null or points to a writable `RawBuffer` slot.
    pub unsafe fn run(
        &self,
        index: u32,
        host: *const HostTable,
        request: *const u8,
        request_len: usize,
        out: *mut RawBuffer,
    ) -> i32 {
        let answer = catch_unwind(AssertUnwindSafe(|| {
            let Some(kernel) = self.kernels.get(index as usize) else {
                return RunResponse::Error(KernelError::failed(format!(
                    "no kernel at index {index}"
                )));
            };
            if host.is_null() {
                return RunResponse::Error(KernelError::failed(
                    "the host passed no callback table",
                ));
            }
            // SAFETY: `host` is non-null and valid for this call (contract);
            // whatever its version, a host table starts with its ABI
            // version, so reading that field is valid.
            let host_abi = unsafe { (*host).abi_version };
            if host_abi != ABI_VERSION {
                return RunResponse::Error(KernelError::failed(format!(
                    "the host speaks plugin ABI version {host_abi}, this plugin was built for version {ABI_VERSION}; rebuild the plugin against the koas-kernel-api of this koas"
                )));
            }
            // SAFETY: the host guarantees `request` is valid for
            // `request_len` bytes during this call.
            let raw = unsafe { bytes(request, request_len) };
            let req: WireRunRequest = match serde_json::from_slice(raw) {
                Ok(r) => r,
                Err(e) => {
                    return RunResponse::Error(KernelError::failed(format!(
                        "malformed run request from the host: {e}"
                    )))
                }
            };
            let host = PluginSideHost { table: host };
            let name = kernel.spec().name;
            run_kernel(
                kernel.as_ref(),
                &host,
                &name,
                req.config,
                crate::Inputs::from_raw(req.inputs),
            )
        }))
        .unwrap_or_else(|p| {
            RunResponse::Error(KernelError::new(
                crate::ErrorKind::Panic,
                caught_panic(p.as_ref()),
            ))
        });
        let status = match answer {
            RunResponse::Ok(_) => STATUS_OK,
            RunResponse::Error(_) => STATUS_ERROR,
        };
        let json = serde_json::to_vec(&answer).unwrap_or_else(|e| {
            serde_json::to_vec(&RunResponse::Error(KernelError::failed(format!(
                "the kernel's output cannot be serialized: {e}"
            ))))
            .unwrap_or_default()
        });
        // SAFETY: guaranteed by this function's contract.
        unsafe { write_out(out, RawBuffer::from_vec(json)) };
        status
    }

    /// The implementation of [`FreeFn`].
    pub fn free(buffer: RawBuffer) {
        // SAFETY: the host only hands back buffers this plugin allocated
        // with RawBuffer::from_vec, once each.
        drop(unsafe { buffer.into_vec() });
    }
}

/// Runs a kernel on a decoded request, catching panics. Shared by the
/// plugin glue and [`crate::testing`].
pub(crate) fn run_kernel(
    kernel: &dyn crate::Kernel,
    host: &dyn Host,
    name: &str,
    config: serde_json::Value,
    inputs: crate::Inputs,
) -> RunResponse {
    let ctx = crate::Context::new(host, name);
    let config = crate::KernelConfig(config);
    match catch_unwind(AssertUnwindSafe(|| kernel.run(&ctx, &config, &inputs))) {
        Ok(Ok(mut out)) => {
            out.summary = crate::output::truncate_summary(std::mem::take(&mut out.summary));
            RunResponse::Ok(out)
        }
        Ok(Err(e)) => RunResponse::Error(e),
        Err(p) => RunResponse::Error(KernelError::new(
            crate::ErrorKind::Panic,
            caught_panic(p.as_ref()),
        )),
    }
}

// ---------------------------------------------------------------------------
// Host side
// ---------------------------------------------------------------------------

/// Why a library could not be used as a plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PluginError {
    /// The entry symbol returned a null table.
    NullTable,
    /// The table declares another ABI version.
    AbiMismatch {
        /// The version the plugin was built against.
        found: u32,
        /// The version this host implements.
        expected: u32,
        /// The `koas-kernel-api` version the plugin was built with, when
        /// it exports [`API_VERSION_SYMBOL`].
        api_version: Option<String>,
    },
    /// Describe failed for one kernel.
    Describe {
        /// The kernel's index in the library.
        index: u32,
        /// The plugin's message (its `spec()` panicked, or the index is out of
        /// range), or why its answer could not be decoded.
        message: String,
    },
}

impl std::fmt::Display for PluginError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PluginError::NullTable => write!(f, "the entry symbol returned no table"),
            PluginError::AbiMismatch {
                found,
                expected,
                api_version,
            } => write!(
                f,
                "{}",
                abi_mismatch_text(*found, api_version.as_deref(), *expected)
            ),
            PluginError::Describe { index, message } => {
                write!(f, "describe of kernel #{index} failed: {message}")
            }
        }
    }
}

/// How a host says that a plugin is of another ABI version: both ABI
/// versions and both `koas-kernel-api` versions, the plugin's when it says
/// it (`api_version`).
pub fn abi_mismatch_text(found: u32, api_version: Option<&str>, expected: u32) -> String {
    let built = match api_version {
        Some(v) => format!("koas-kernel-api {v}"),
        None => "a koas-kernel-api that does not say its version".to_owned(),
    };
    format!(
        "built with {built} (ABI {found}); this koas has koas-kernel-api {API_VERSION} (ABI {expected})"
    )
}

/// A checked plugin table, usable from safe code on the host side.
#[derive(Clone, Copy)]
pub struct PluginHandle {
    table: &'static PluginTable,
    api_version: Option<&'static str>,
}

impl std::fmt::Debug for PluginHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginHandle")
            .field("abi_version", &self.table.abi_version)
            .field("kernel_count", &self.table.kernel_count)
            .field("api_version", &self.api_version)
            .finish()
    }
}

/// The version a plugin's [`API_VERSION_SYMBOL`] returns: `None` for a
/// null pointer, a string longer than [`MAX_API_VERSION_LEN`] bytes or one
/// that is not UTF-8.
///
/// # Safety
/// `f` must be a plugin's [`API_VERSION_SYMBOL`], returning null or a
/// pointer to a static NUL-terminated string of a library that stays
/// loaded for the rest of the process.
pub unsafe fn read_api_version(f: ApiVersionFn) -> Option<&'static str> {
    let ptr = f();
    if ptr.is_null() {
        return None;
    }
    let mut len = 0;
    // SAFETY: by the contract the string is NUL-terminated: every byte up
    // to the NUL is readable; the scan stops there, or after
    // MAX_API_VERSION_LEN bytes without reading further.
    while len <= MAX_API_VERSION_LEN && unsafe { *ptr.add(len) } != 0 {
        len += 1;
    }
    if len > MAX_API_VERSION_LEN {
        return None;
    }
    // SAFETY: the `len` bytes before the NUL were just read; the string is
    // a static of a library that is never unloaded, so `'static` holds.
    let bytes: &'static [u8] = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) };
    std::str::from_utf8(bytes).ok()
}

impl PluginHandle {
    /// Checks a table returned by a plugin's entry symbol.
    ///
    /// # Safety
    /// `entry` must be the plugin's [`ENTRY_SYMBOL`], and the library it
    /// comes from must stay loaded for the rest of the process (the host
    /// never unloads plugins).
    pub unsafe fn from_entry(entry: EntryFn) -> Result<PluginHandle, PluginError> {
        // SAFETY: the caller's guarantees are this function's.
        unsafe { Self::from_symbols(entry, None) }
    }

    /// Checks a table returned by a plugin's entry symbol, with the
    /// plugin's [`API_VERSION_SYMBOL`] when it exports one: its version is
    /// read first, so that an ABI mismatch names it too.
    ///
    /// # Safety
    /// As for [`PluginHandle::from_entry`]; `api_version`, when given, is
    /// the same library's [`API_VERSION_SYMBOL`] (see
    /// [`read_api_version`]).
    pub unsafe fn from_symbols(
        entry: EntryFn,
        api_version: Option<ApiVersionFn>,
    ) -> Result<PluginHandle, PluginError> {
        // SAFETY: the caller guarantees the symbol is the library's and
        // that the library stays loaded.
        let api_version = api_version.and_then(|f| unsafe { read_api_version(f) });
        let ptr = entry();
        if ptr.is_null() {
            return Err(PluginError::NullTable);
        }
        // SAFETY: by the ABI contract the first field of the table is a u32
        // ABI version whatever the version; reading only that field is valid
        // even for a table of another layout.
        let found = unsafe { *(ptr as *const u32) };
        if found != ABI_VERSION {
            return Err(PluginError::AbiMismatch {
                found,
                expected: ABI_VERSION,
                api_version: api_version.map(str::to_owned),
            });
        }
        // SAFETY: the version matches, so the table has this layout; it is
        // a static of a library that is never unloaded.
        let table: &'static PluginTable = unsafe { &*ptr };
        Ok(PluginHandle { table, api_version })
    }

    /// The `koas-kernel-api` version the library's [`API_VERSION_SYMBOL`]
    /// returned, when it exports one.
    pub fn api_version(&self) -> Option<&'static str> {
        self.api_version
    }

    /// The number of kernels the library exports.
    pub fn kernel_count(&self) -> u32 {
        self.table.kernel_count
    }

    /// The ABI version the library declares.
    pub fn abi_version(&self) -> u32 {
        self.table.abi_version
    }

    fn take(&self, out: RawBuffer) -> Vec<u8> {
        // SAFETY: the plugin filled `out` with a buffer of `len` bytes it
        // allocated; we copy it, then hand it back to the plugin's free.
        let bytes = unsafe { out.to_vec() };
        (self.table.free_buffer)(out);
        bytes
    }

    /// Calls describe for kernel `index`.
    pub fn describe(&self, index: u32) -> Result<KernelSpec, PluginError> {
        self.describe_versioned(index).map(|(spec, _)| spec)
    }

    /// Calls describe for kernel `index`: its spec, and the
    /// `koas-kernel-api` version the answer names (absent from the answers
    /// of older plugins).
    pub fn describe_versioned(
        &self,
        index: u32,
    ) -> Result<(KernelSpec, Option<String>), PluginError> {
        let mut out = RawBuffer::empty();
        (self.table.describe)(index, &mut out);
        let bytes = self.take(out);
        match serde_json::from_slice::<DescribeResponse>(&bytes) {
            Ok(DescribeResponse::Ok { spec, api_version }) => Ok((spec, api_version)),
            Ok(DescribeResponse::Error { message }) => {
                Err(PluginError::Describe { index, message })
            }
            Err(e) => Err(PluginError::Describe {
                index,
                message: format!("malformed describe answer: {e}"),
            }),
        }
    }

    /// Runs kernel `index` with `host` serving its callbacks. Never panics;
    /// a malformed answer becomes an error response.
    pub fn run(&self, index: u32, host: &dyn Host, request: &RunRequest) -> RunResponse {
        let req = match serde_json::to_vec(request) {
            Ok(r) => r,
            Err(e) => {
                return RunResponse::Error(KernelError::failed(format!(
                    "cannot encode request: {e}"
                )))
            }
        };
        let bytes = self
            .run_bytes(index, host, &req, usize::MAX)
            .unwrap_or_default();
        serde_json::from_slice::<RunResponse>(&bytes).unwrap_or_else(|e| {
            RunResponse::Error(KernelError::failed(format!(
                "the plugin answered with malformed JSON: {e}"
            )))
        })
    }

    /// Runs kernel `index` on an encoded [`RunRequest`] and returns the
    /// plugin's answer as it sent it (a JSON [`RunResponse`], not checked).
    /// An answer longer than `max_len` bytes is freed without being copied
    /// and `Err` holds its length.
    pub fn run_bytes(
        &self,
        index: u32,
        host: &dyn Host,
        request: &[u8],
        max_len: usize,
    ) -> Result<Vec<u8>, usize> {
        let req = request;
        let mut host_ref: &dyn Host = host;
        let table = HostTable {
            abi_version: ABI_VERSION,
            ctx: &mut host_ref as *mut &dyn Host as *mut c_void,
            log: host_log,
            progress: host_progress,
            is_cancelled: host_is_cancelled,
            call: host_call,
            free_buffer: host_free,
        };
        let mut out = RawBuffer::empty();
        (self.table.run)(index, &table, req.as_ptr(), req.len(), &mut out);
        if out.len > max_len {
            let len = out.len;
            (self.table.free_buffer)(out);
            return Err(len);
        }
        Ok(self.take(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prelude::*;

    struct Echo;

    impl crate::Kernel for Echo {
        fn spec(&self) -> KernelSpec {
            KernelSpec::new("echo", "1.0.0").output("out")
        }
        fn run(&self, _ctx: &Context, _config: &KernelConfig, _inputs: &Inputs) -> KernelResult {
            Ok(KernelOutput::new().artifact("out", 1))
        }
    }

    extern "C" fn log(_: *mut c_void, _: u32, _: *const u8, _: usize) {}
    extern "C" fn progress(_: *mut c_void, _: u64, _: u64) {}
    extern "C" fn is_cancelled(_: *mut c_void) -> u8 {
        0
    }
    extern "C" fn call(
        _: *mut c_void,
        _: *const u8,
        _: usize,
        _: *const u8,
        _: usize,
        _: *mut RawBuffer,
    ) -> i32 {
        STATUS_ERROR
    }
    extern "C" fn free(_: *mut c_void, buffer: RawBuffer) {
        // SAFETY: only buffers made by RawBuffer::from_vec reach here.
        drop(unsafe { buffer.into_vec() });
    }

    fn run_with_host_version(abi_version: u32) -> RunResponse {
        let registry = Registry::new(vec![Box::new(Echo)]);
        let table = HostTable {
            abi_version,
            ctx: std::ptr::null_mut(),
            log,
            progress,
            is_cancelled,
            call,
            free_buffer: free,
        };
        let request = serde_json::to_vec(&RunRequest::default()).expect("request");
        let mut out = RawBuffer::empty();
        // SAFETY: every pointer is valid for the call, as a host passes them.
        unsafe { registry.run(0, &table, request.as_ptr(), request.len(), &mut out) };
        // SAFETY: `run` filled `out` with a buffer from RawBuffer::from_vec.
        let bytes = unsafe { out.into_vec() };
        serde_json::from_slice(&bytes).expect("a JSON run response")
    }

    extern "C" fn version_ok() -> *const std::ffi::c_char {
        c"1.2.3".as_ptr()
    }
    extern "C" fn version_null() -> *const std::ffi::c_char {
        std::ptr::null()
    }
    static LONG: [u8; 101] = {
        let mut bytes = [b'9'; 101];
        bytes[100] = 0;
        bytes
    };
    extern "C" fn version_long() -> *const std::ffi::c_char {
        LONG.as_ptr().cast()
    }
    extern "C" fn version_not_utf8() -> *const std::ffi::c_char {
        c"\xff\xfe".as_ptr()
    }

    /// A table of another ABI: only its first field, the version, exists.
    static OTHER_ABI: [u32; 2] = [999, 0];
    extern "C" fn other_entry() -> *const PluginTable {
        OTHER_ABI.as_ptr().cast()
    }

    extern "C" fn describe_nothing(_: u32, _: *mut RawBuffer) -> i32 {
        STATUS_ERROR
    }
    extern "C" fn run_nothing(
        _: u32,
        _: *const HostTable,
        _: *const u8,
        _: usize,
        _: *mut RawBuffer,
    ) -> i32 {
        STATUS_ERROR
    }
    extern "C" fn free_nothing(_: RawBuffer) {}
    static GOOD: PluginTable = PluginTable {
        abi_version: ABI_VERSION,
        kernel_count: 0,
        describe: describe_nothing,
        run: run_nothing,
        free_buffer: free_nothing,
    };
    extern "C" fn good_entry() -> *const PluginTable {
        &GOOD
    }

    #[test]
    fn the_api_version_symbol_is_read_when_sound_and_named_by_an_abi_mismatch() {
        // SAFETY: each function returns null or a static NUL-terminated
        // string, as the symbol's contract says.
        unsafe {
            assert_eq!(read_api_version(version_ok), Some("1.2.3"));
            assert_eq!(read_api_version(version_null), None);
            assert_eq!(read_api_version(version_long), None);
            assert_eq!(read_api_version(version_not_utf8), None);
        }
        // SAFETY: the entry functions return static tables, as a plugin's.
        let err = unsafe { PluginHandle::from_symbols(other_entry, Some(version_ok)) }
            .expect_err("another ABI");
        assert_eq!(
            err,
            PluginError::AbiMismatch {
                found: 999,
                expected: ABI_VERSION,
                api_version: Some("1.2.3".into())
            }
        );
        assert_eq!(
            err.to_string(),
            format!("built with koas-kernel-api 1.2.3 (ABI 999); this koas has koas-kernel-api {API_VERSION} (ABI {ABI_VERSION})")
        );
        // SAFETY: as above.
        let err = unsafe { PluginHandle::from_entry(other_entry) }.expect_err("another ABI");
        assert!(
            err.to_string().starts_with(
                "built with a koas-kernel-api that does not say its version (ABI 999); this koas has koas-kernel-api"
            ),
            "{err}"
        );
        // SAFETY: as above.
        let handle =
            unsafe { PluginHandle::from_symbols(good_entry, Some(version_ok)) }.expect("this ABI");
        assert_eq!(handle.api_version(), Some("1.2.3"));
        // SAFETY: as above.
        let handle = unsafe { PluginHandle::from_entry(good_entry) }.expect("this ABI");
        assert_eq!(handle.api_version(), None);
    }

    #[test]
    fn a_describe_answer_names_the_kernel_api_version() {
        let registry = Registry::new(vec![Box::new(Echo)]);
        let mut out = RawBuffer::empty();
        // SAFETY: `out` is a writable slot, as a host passes it.
        let status = unsafe { registry.describe(0, &mut out) };
        assert_eq!(status, STATUS_OK);
        // SAFETY: `describe` filled `out` with a buffer from RawBuffer::from_vec.
        let bytes = unsafe { out.into_vec() };
        let answer: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON");
        assert_eq!(answer["api_version"], API_VERSION);
        assert_eq!(answer["spec"]["name"], "echo");
        // An older plugin's answer, without it, still reads.
        let old: DescribeResponse =
            serde_json::from_str(r#"{"status":"ok","spec":{"name":"x","version":"1.0.0"}}"#)
                .expect("an older answer");
        assert!(matches!(
            old,
            DescribeResponse::Ok {
                api_version: None,
                ..
            }
        ));
        assert_eq!(API_VERSION_NUL, format!("{API_VERSION}\0"));
    }

    #[test]
    fn a_plugin_refuses_a_host_of_another_abi_version() {
        match run_with_host_version(ABI_VERSION + 1) {
            RunResponse::Error(e) => {
                assert!(
                    e.message.contains(&format!("version {}", ABI_VERSION + 1)),
                    "{}",
                    e.message
                );
                assert!(e.message.contains("rebuild the plugin"), "{}", e.message);
            }
            RunResponse::Ok(_) => panic!("ran against a host of another ABI"),
        }
        assert!(matches!(
            run_with_host_version(ABI_VERSION),
            RunResponse::Ok(_)
        ));
    }
}
