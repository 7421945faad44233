//! A library named like a kernel plugin but without the entry symbol.

/// An exported function that is not the koas entry point, so the library
/// loads but must be skipped.
#[no_mangle]
pub extern "C" fn not_the_koas_entry() -> u32 {
    42
}
