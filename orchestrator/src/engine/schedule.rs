//! Readiness and execution: a kernel starts when every producer of its
//! inputs is done, on a pool of `jobs` threads; completions come back
//! over a channel and release their dependants.

use super::outputs::store_outputs;
use super::{Attempt, Completion, Engine, Failure, RunError};
use crate::dag::Producer;
use crate::discovery::LoadedKernel;
use crate::host::RunHost;
use crate::limits::{cap_warnings, cut, output_limit_message, KernelLimits, MAX_ERROR_CHARS};
use crate::run_record::now_rfc3339;
use crate::worker::pool::KernelCall;
use koas_kernel_api::protocol::RunResponse;
use koas_kernel_api::{ErrorKind, KernelOutput, MAX_SUMMARY_CHARS};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::mpsc;

impl Engine<'_> {
    /// The number of distinct selected kernels producing `name`'s inputs.
    fn upstream(&self, name: &str) -> BTreeSet<String> {
        self.kernel(name)
            .spec
            .inputs
            .iter()
            .filter_map(|i| match self.prepared.dag.producers.get(&i.artifact) {
                Some(Producer::Kernel(k)) => Some(k.clone()),
                _ => None,
            })
            .collect()
    }

    pub(super) fn schedule(&mut self, selected: &BTreeSet<String>) -> Result<(), RunError> {
        let order: Vec<String> = self
            .prepared
            .dag
            .order
            .iter()
            .filter(|k| selected.contains(*k))
            .cloned()
            .collect();
        let mut waiting: BTreeMap<String, usize> = order
            .iter()
            .map(|k| (k.clone(), self.upstream(k).len()))
            .collect();
        let mut ready: VecDeque<String> =
            order.iter().filter(|k| waiting[*k] == 0).cloned().collect();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(self.opts.jobs)
            .thread_name(|i| format!("koas-kernel-{i}"))
            .build()
            .map_err(|e| RunError::Threads(e.to_string()))?;
        let (tx, rx) = mpsc::channel::<Completion>();
        let mut running = 0usize;
        loop {
            while let Some(name) = ready.pop_front() {
                if self.opts.cancel.load(Ordering::SeqCst) {
                    self.skip(&name, "the run was cancelled before it started".into());
                    continue;
                }
                if let Err(e) = self.load_reserved(&name) {
                    let attempt = Attempt::instant(self.now_ms());
                    self.fail(&name, &BTreeMap::new(), None, attempt, Failure::Failed(e));
                    continue;
                }
                let (inputs, key) = self.key_for(&name);
                if self.opts.use_cache {
                    if let Some(hit) = self.cache.get_action(&key) {
                        match self.take_hit(&name, &inputs, &key, hit) {
                            Ok(()) => {
                                self.release(&name, &mut waiting, &mut ready);
                                continue;
                            }
                            Err(e) => {
                                self.reporter.note(&format!(
                                    "{name}: cache entry unusable ({e}); running it"
                                ));
                            }
                        }
                    }
                }
                if running >= self.opts.jobs {
                    ready.push_front(name);
                    break;
                }
                match self.request_for(&name) {
                    Ok(request) => {
                        self.spawn(&pool, &tx, &name, request, key, inputs);
                        running += 1;
                    }
                    Err(e) => {
                        let attempt = Attempt::instant(self.now_ms());
                        self.fail(&name, &inputs, Some(key), attempt, Failure::Failed(e));
                    }
                }
            }
            if running == 0 {
                break;
            }
            let Ok(mut c) = rx.recv() else { break };
            running -= 1;
            let name = c.kernel.clone();
            let late = self.own_late_death(&mut c);
            if self.finish(c) {
                self.release(&name, &mut waiting, &mut ready);
            }
            for death in late {
                self.late_death(death);
            }
        }
        // Whatever never became ready sits behind a failure or a cancel.
        for name in order {
            if !self.done.contains(&name) && !self.dead.contains(&name) {
                let reason = if self.opts.cancel.load(Ordering::SeqCst) {
                    "the run was cancelled before it started".to_string()
                } else {
                    "an upstream kernel did not complete".to_string()
                };
                self.skip(&name, reason);
            }
        }
        Ok(())
    }

    fn spawn(
        &self,
        pool: &rayon::ThreadPool,
        tx: &mpsc::Sender<Completion>,
        name: &str,
        request: super::inputs::Request,
        key: String,
        inputs: BTreeMap<String, Option<String>>,
    ) {
        let kernel = self.kernel(name).clone();
        let tx = tx.clone();
        let cache = self.cache.clone();
        let workspace = self.workspace.clone();
        let reporter = self.reporter.clone();
        let cancel = self.opts.cancel.clone();
        let llm = self.opts.llm.clone();
        let host_written = self.opts.host_written.clone();
        let workers = self.workers.clone();
        let rules = self.rules.clone();
        let limits = self.opts.limits.for_kernel(name);
        let run_start = self.run_start;
        pool.spawn(move || {
            reporter.kernel_started(&kernel.spec.name);
            let started_at = now_rfc3339();
            let start_ms = run_start.elapsed().as_secs_f64() * 1000.0;
            let host = RunHost::new(
                &kernel.spec.name,
                &workspace,
                &rules,
                &cancel,
                &reporter,
                llm.clone(),
            );
            let encoding =
                |e: serde_json::Error| Failure::Failed(format!("cannot encode its request: {e}"));
            let mut ticket = None;
            let mut late_deaths = Vec::new();
            let answer = match &workers {
                // Written to the worker as it is encoded: never whole in
                // memory.
                Some(workers) => request.streamed().map_err(encoding).and_then(|body| {
                    let ran = workers.run(KernelCall {
                        kernel: &kernel.spec.name,
                        library: &kernel.library,
                        index: kernel.index,
                        request: &body,
                        limits,
                        host: &host,
                        cancel: &cancel,
                    });
                    ticket = Some(ran.ticket);
                    late_deaths = ran.late_deaths;
                    ran.answer.map_err(|end| Failure::Worker {
                        message: end.message(&limits),
                        end,
                        after_answer: None,
                    })
                }),
                None => request
                    .encode()
                    .map_err(encoding)
                    .and_then(|bytes| run_in_process(&kernel, &host, &bytes, &limits)),
            };
            drop(request);
            let result = answer
                .and_then(|bytes| read_answer(&bytes))
                .and_then(|out| {
                    // A kernel that returns after the run was cancelled may
                    // have cut its work short (its model calls were refused):
                    // keeping that as a result would make the next run reuse
                    // it instead of redoing the work.
                    if cancel.load(Ordering::SeqCst) {
                        return Err(Failure::Cancelled(
                            "the run was cancelled while it ran; its outputs were not kept"
                                .to_string(),
                        ));
                    }
                    store_outputs(&kernel, &cache, &workspace, &key, out, &host_written)
                        .map_err(Failure::Failed)
                });
            let completion = Completion {
                kernel: kernel.spec.name.clone(),
                key,
                inputs,
                attempt: Attempt {
                    start_ms,
                    end_ms: run_start.elapsed().as_secs_f64() * 1000.0,
                    started_at,
                    finished_at: now_rfc3339(),
                    logs: host.recorded_logs(),
                    files: host.files.lock().map(|l| l.clone()).unwrap_or_default(),
                },
                result,
                ticket,
                late_deaths,
            };
            let _ = tx.send(completion);
        });
    }

    /// Makes the dependents of a finished kernel ready when all their
    /// producers are done.
    fn release(
        &self,
        name: &str,
        waiting: &mut BTreeMap<String, usize>,
        ready: &mut VecDeque<String>,
    ) {
        for d in self.prepared.dag.dependents(name) {
            if let Some(n) = waiting.get_mut(&d) {
                *n = n.saturating_sub(1);
                if *n == 0 && !self.dead.contains(&d) {
                    ready.push_back(d);
                }
            }
        }
    }
}

/// Runs a kernel on this process's threads (`--in-process`): its answer,
/// unchecked, or the output cap's refusal.
fn run_in_process(
    kernel: &LoadedKernel,
    host: &RunHost<'_>,
    request: &[u8],
    limits: &KernelLimits,
) -> Result<Vec<u8>, Failure> {
    let handle = match kernel.handle {
        Some(handle) => handle,
        None => crate::loader::load_plugin(&kernel.library).map_err(|e| {
            Failure::Failed(format!("cannot load {}: {e}", kernel.library.display()))
        })?,
    };
    let max = limits.output_bytes();
    handle
        .run_bytes(kernel.index, host, request, max)
        .map_err(|len| Failure::Failed(output_limit_message(len, max)))
}

/// Reads a plugin's answer, whoever ran it, and caps what a plugin that
/// does not use `koas-kernel-api` could send unbounded: the summary, the
/// warnings, the error message.
fn read_answer(bytes: &[u8]) -> Result<KernelOutput, Failure> {
    let response = serde_json::from_slice::<RunResponse>(bytes)
        .map_err(|e| Failure::Failed(format!("the plugin answered with malformed JSON: {e}")))?;
    match response {
        RunResponse::Ok(mut out) => {
            out.summary = cut_summary(std::mem::take(&mut out.summary));
            out.warnings = cap_warnings(std::mem::take(&mut out.warnings));
            Ok(out)
        }
        RunResponse::Error(e) => {
            let message = cut(e.message, MAX_ERROR_CHARS, "error message");
            Err(match e.kind {
                ErrorKind::Cancelled => Failure::Cancelled(message),
                ErrorKind::Panic if !message.starts_with("panicked") => {
                    Failure::Failed(format!("panicked: {message}"))
                }
                _ => Failure::Failed(message),
            })
        }
    }
}

/// A summary cut to [`MAX_SUMMARY_CHARS`], ending with `…` when cut (as
/// `koas-kernel-api` does on the plugin side).
fn cut_summary(summary: String) -> String {
    if summary.chars().count() <= MAX_SUMMARY_CHARS {
        return summary;
    }
    let mut cut: String = summary.chars().take(MAX_SUMMARY_CHARS - 1).collect();
    cut.push('…');
    cut
}
