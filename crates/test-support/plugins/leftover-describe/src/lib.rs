//! A plugin whose `spec()` leaves a thread behind that calls `exit(0)`
//! 300 ms later: the worker that described it dies while it serves other
//! work. No kernel of the run did that, so the death is the run's failure,
//! named after this library, never the failure of a kernel that happened
//! to run in that worker. The exit is deliberate.

use koas_kernel_api::prelude::*;
use std::sync::Once;
use std::time::Duration;

struct LeftoverInDescribe;
impl Kernel for LeftoverInDescribe {
    fn spec(&self) -> KernelSpec {
        static LEFT: Once = Once::new();
        LEFT.call_once(|| {
            std::thread::spawn(|| {
                std::thread::sleep(Duration::from_millis(300));
                std::process::exit(0)
            });
        });
        KernelSpec::new("leftover_in_describe", "1.0.0")
            .stage("H")
            .input("doc")
            .output("leftover_out")
    }
    fn run(&self, _ctx: &Context, _c: &KernelConfig, _inputs: &Inputs) -> KernelResult {
        Ok(KernelOutput::new().artifact("leftover_out", true))
    }
}

koas_kernel_api::export_kernel!(LeftoverInDescribe);
