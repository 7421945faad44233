//! A plugin whose `spec()` aborts the process: discovery must survive it
//! (`koas kernels` lists the other plugins and reports this one). The
//! abort is deliberate.

use koas_kernel_api::prelude::*;

struct AbortsInSpec;
impl Kernel for AbortsInSpec {
    fn spec(&self) -> KernelSpec {
        std::process::abort();
    }
    fn run(&self, _ctx: &Context, _c: &KernelConfig, _inputs: &Inputs) -> KernelResult {
        Ok(KernelOutput::new())
    }
}

koas_kernel_api::export_kernel!(AbortsInSpec);
