//! A kernel whose findings output holds a finding of a kind its spec does
//! not declare: the host must fail it when it returns, naming the kind.

use koas_kernel_api::prelude::*;

struct UndeclaredKind;

impl Kernel for UndeclaredKind {
    fn spec(&self) -> KernelSpec {
        KernelSpec::new("undeclared_kind", "1.0.0")
            .input("doc")
            .findings_output("undeclared_findings")
            .finding_kind("declared", "The one kind this kernel declares")
    }

    fn run(&self, _ctx: &Context, _c: &KernelConfig, _inputs: &Inputs) -> KernelResult {
        let mut found = FindingsOutput::new("undeclared_kind");
        found.push(KernelFinding::new("surprise", 1, Severity::Warning, "not declared"));
        Ok(KernelOutput::new()
            .summary(found.summary())
            .artifact("undeclared_findings", &found))
    }
}

koas_kernel_api::export_kernel!(UndeclaredKind);
