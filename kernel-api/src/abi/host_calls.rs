//! The host's callbacks: the functions of a HostTable a plugin calls during a
//! run. Part of the ABI module (its allow of unsafe code covers this file):
//! every unsafe block has a SAFETY note.

use super::*;

/// Recovers the host from a callback's ctx.
///
/// # Safety
/// `ctx` must be the `ctx` of a [`HostTable`] built by [`PluginHandle::run`]
/// whose call is still in progress.
pub(super) unsafe fn host_from<'a>(ctx: *mut c_void) -> &'a dyn Host {
    // SAFETY: PluginHandle::run points ctx at a `&dyn Host` on its stack
    // frame, which outlives the plugin's run call.
    unsafe { *(ctx as *const &dyn Host) }
}

pub(super) extern "C" fn host_log(ctx: *mut c_void, level: u32, message: *const u8, len: usize) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: called by the plugin during a run with our ctx and a
        // message valid for len bytes.
        let (host, msg) = unsafe { (host_from(ctx), bytes(message, len)) };
        host.log(LogLevel::from_u32(level), &String::from_utf8_lossy(msg));
    }));
}

pub(super) extern "C" fn host_progress(ctx: *mut c_void, done: u64, total: u64) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: called by the plugin during a run with our ctx.
        unsafe { host_from(ctx) }.progress(done, total);
    }));
}

pub(super) extern "C" fn host_is_cancelled(ctx: *mut c_void) -> u8 {
    catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: called by the plugin during a run with our ctx.
        u8::from(unsafe { host_from(ctx) }.is_cancelled())
    }))
    .unwrap_or(1)
}

pub(super) extern "C" fn host_call(
    ctx: *mut c_void,
    header: *const u8,
    header_len: usize,
    body: *const u8,
    body_len: usize,
    out: *mut RawBuffer,
) -> i32 {
    let answer = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: called by the plugin during a run with our ctx and
        // buffers valid for the given lengths.
        let (host, header, body) = unsafe {
            (
                host_from(ctx),
                bytes(header, header_len),
                bytes(body, body_len),
            )
        };
        match serde_json::from_slice::<serde_json::Value>(header) {
            Ok(h) => match host.call(&h, body) {
                Ok(value) => HostCallResponse::Ok { value },
                Err(message) => HostCallResponse::Error { message },
            },
            Err(e) => HostCallResponse::Error {
                message: format!("malformed host call header: {e}"),
            },
        }
    }))
    .unwrap_or_else(|p| HostCallResponse::Error {
        message: format!("the host panicked: {}", panic_message(p.as_ref())),
    });
    let status = match answer {
        HostCallResponse::Ok { .. } => STATUS_OK,
        HostCallResponse::Error { .. } => STATUS_ERROR,
    };
    // SAFETY: the plugin passes `out` as the ABI prescribes: null or a
    // RawBuffer slot it owns for this call.
    unsafe {
        write_out(
            out,
            RawBuffer::from_vec(serde_json::to_vec(&answer).unwrap_or_default()),
        )
    };
    status
}

pub(super) extern "C" fn host_free(_ctx: *mut c_void, buffer: RawBuffer) {
    // SAFETY: the plugin only hands back buffers host_call allocated with
    // RawBuffer::from_vec in this binary, once each.
    drop(unsafe { buffer.into_vec() });
}
