//! The `export_kernel!` macro and the hidden items it expands to.

#[doc(hidden)]
pub use crate::abi::Registry;

/// Counts macro arguments in a const context.
#[doc(hidden)]
#[macro_export]
macro_rules! __koas_count {
    () => { 0u32 };
    ($head:expr $(, $tail:expr)*) => { 1u32 + $crate::__koas_count!($($tail),*) };
}

/// Exports one or more kernels from a plugin library.
///
/// Call it once, at the root of a `cdylib` crate, with an expression
/// building each kernel:
///
/// ```ignore
/// koas_kernel_api::export_kernel!(WordCount, LineCount::new());
/// ```
///
/// It generates the library's entry symbol ([`crate::abi::ENTRY_SYMBOL`])
/// and the C functions behind it, and the symbol naming the
/// `koas-kernel-api` version it was built with
/// ([`crate::abi::API_VERSION_SYMBOL`]). Every call into a kernel runs under
/// `catch_unwind`, so a panic reaches the host as an error result and never
/// unwinds across the boundary. The kernels are built once, on first use.
#[macro_export]
macro_rules! export_kernel {
    ($($kernel:expr),+ $(,)?) => {
        #[doc(hidden)]
        fn __koas_registry() -> &'static $crate::export::Registry {
            static REGISTRY: ::std::sync::OnceLock<$crate::export::Registry> =
                ::std::sync::OnceLock::new();
            REGISTRY.get_or_init(|| {
                $crate::export::Registry::new(::std::vec![
                    $(::std::boxed::Box::new($kernel) as ::std::boxed::Box<dyn $crate::Kernel>),+
                ])
            })
        }

        #[doc(hidden)]
        #[allow(unsafe_code)]
        extern "C" fn __koas_describe(index: u32, out: *mut $crate::abi::RawBuffer) -> i32 {
            // SAFETY: only the host calls this entry point, with the
            // pointer the plugin ABI prescribes.
            unsafe { __koas_registry().describe(index, out) }
        }

        #[doc(hidden)]
        #[allow(unsafe_code)]
        extern "C" fn __koas_run(
            index: u32,
            host: *const $crate::abi::HostTable,
            request: *const u8,
            request_len: usize,
            out: *mut $crate::abi::RawBuffer,
        ) -> i32 {
            // SAFETY: only the host calls this entry point, with the
            // pointers the plugin ABI prescribes.
            unsafe { __koas_registry().run(index, host, request, request_len, out) }
        }

        #[doc(hidden)]
        extern "C" fn __koas_free(buffer: $crate::abi::RawBuffer) {
            $crate::export::Registry::free(buffer)
        }

        #[doc(hidden)]
        static __KOAS_TABLE: $crate::abi::PluginTable = $crate::abi::PluginTable {
            abi_version: $crate::abi::ABI_VERSION,
            kernel_count: $crate::__koas_count!($($kernel),+),
            describe: __koas_describe,
            run: __koas_run,
            free_buffer: __koas_free,
        };

        /// The koas plugin entry point.
        #[no_mangle]
        pub extern "C" fn koas_plugin_entry() -> *const $crate::abi::PluginTable {
            &__KOAS_TABLE
        }

        /// The `koas-kernel-api` version this plugin was built with, a
        /// static NUL-terminated string (an optional symbol a host reads
        /// even from a plugin of another ABI version).
        #[no_mangle]
        pub extern "C" fn koas_plugin_api_version() -> *const ::std::ffi::c_char {
            $crate::abi::API_VERSION_NUL.as_ptr().cast()
        }
    };
}
