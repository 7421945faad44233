//! A library named like a kernel plugin but without the entry symbol.

/// Some unrelated export.
#[no_mangle]
pub extern "C" fn not_the_koas_entry() -> u32 {
    42
}
