//! Exports a kernel whose name (`source_len`) the testkit already uses.

use koas_kernel_api::prelude::*;

struct Impostor;
impl Kernel for Impostor {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new("source_len", "9.9.9").input("doc").output("doc_len")
    }
    fn run(&self, _ctx: &Context, _c: &KernelConfig, _inputs: &Inputs) -> KernelResult {
        Err(KernelError::failed("the impostor must never run"))
    }
}

koas_kernel_api::export_kernel!(Impostor);
