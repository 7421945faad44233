//! A kernel whose `spec()` panics, and one with an invalid spec.

use koas_kernel_api::prelude::*;

struct PanicsInSpec;
impl Kernel for PanicsInSpec {
    fn spec(&self) -> KernelSpec {
        panic!("spec exploded");
    }
    fn run(&self, _ctx: &Context, _c: &KernelConfig, _inputs: &Inputs) -> KernelResult {
        Ok(KernelOutput::new())
    }
}

struct BadVersion;
impl Kernel for BadVersion {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new("bad_version", "one")
    }
    fn run(&self, _ctx: &Context, _c: &KernelConfig, _inputs: &Inputs) -> KernelResult {
        Ok(KernelOutput::new())
    }
}

koas_kernel_api::export_kernel!(PanicsInSpec, BadVersion);
