//! What a plugin library says of itself when described: each kernel's
//! spec, and the kernel API version it was built with.
//!
//! Apart from discovery, which keeps the result, from the worker pool,
//! which describes a library in a worker process, and from the describe
//! cache, which remembers it: each of the three depends on this alone.

use koas_kernel_api::abi::{PluginError, PluginHandle};
use koas_kernel_api::KernelSpec;

/// What describing one library gave: each kernel's spec or describe
/// error, and the `koas-kernel-api` version it was built with.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LibraryKernels {
    /// Per kernel index, its spec or why describe failed.
    pub kernels: Vec<Result<KernelSpec, String>>,
    /// The library's version symbol, else the first describe answer that
    /// names one; `None` when neither does.
    pub api_version: Option<String>,
}

impl LibraryKernels {
    /// Describes every kernel of a loaded library.
    pub fn describe(handle: &PluginHandle) -> LibraryKernels {
        let mut api_version = handle.api_version().map(str::to_owned);
        let kernels = (0..handle.kernel_count())
            .map(|index| match handle.describe_versioned(index) {
                Ok((spec, named)) => {
                    api_version = api_version.take().or(named);
                    Ok(spec)
                }
                Err(PluginError::Describe { message, .. }) => Err(message),
                Err(other) => Err(other.to_string()),
            })
            .collect();
        LibraryKernels {
            kernels,
            api_version,
        }
    }
}
