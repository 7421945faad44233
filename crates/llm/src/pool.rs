//! The endpoints serving one model, shared by every service that drives
//! them: each endpoint's backend, its slots, the requests outstanding on
//! it and its health.
//!
//! * **Dispatch.** An attempt waits until a healthy endpoint has a free
//!   slot, then takes the one with the fewest outstanding requests
//!   relative to its slots (ties: config order). A waiter wakes when a
//!   slot is freed, when an endpoint comes back, and every 100 ms to see
//!   the cancel flag.
//! * **Health.** A transport failure on an endpoint takes it out of
//!   rotation for a back-off period (1 s, doubling per failure in a row,
//!   capped at 30 s); it comes back when the period ends, and one success
//!   resets the count. When every endpoint is out, attempts go to them
//!   anyway (the service's retry and backoff rules then bound the
//!   request), so one endpoint behaves as a single server always did.
//! * **Same model.** With more than one endpoint, each endpoint's model
//!   list is read once before the first request is sent to it, and the
//!   pool refuses endpoints that disagree ([`model_disagreement`]). An
//!   endpoint unreachable then is out of rotation until it can be listed.

use crate::backend::{build_backend, Backend, CancelFlag};
use crate::config::{EndpointConfig, LlmConfig};
use crate::error::{LlmError, TransportError, TransportErrorKind};
use crate::sovereignty::check_sovereignty;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How often a waiter looks at the cancel flag.
const POLL: Duration = Duration::from_millis(100);

/// One endpoint's fixed parts.
struct Member {
    url: String,
    slots: usize,
    backend: Arc<dyn Backend>,
    /// The backend that lists models, with the short ping deadline: a hung
    /// server must not hold the first request for a generation's timeout.
    lister: Arc<dyn Backend>,
}

/// One endpoint's changing parts.
#[derive(Debug, Default, Clone)]
struct Health {
    outstanding: usize,
    /// Failures in a row; sets the next back-off.
    failures: u32,
    down_until: Option<Instant>,
    /// The models it lists, once read (always "read" with one endpoint).
    models: Option<Vec<String>>,
    last_error: Option<String>,
    /// Attempts it answered.
    answered: u64,
}

/// One endpoint's load as it is now, for a progress display.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct EndpointLoad {
    /// Its base URL.
    pub url: String,
    /// Its slots.
    pub slots: usize,
    /// Requests it is answering.
    pub in_flight: usize,
    /// Attempts it answered so far.
    pub answered: u64,
    /// In rotation (not in a back-off after a failure).
    pub up: bool,
}

impl Health {
    fn up(&self, now: Instant) -> bool {
        self.down_until.map_or(true, |t| t <= now)
    }
}

/// The endpoints of one model with their slots, load and health.
/// Thread-safe; share it with `Arc` between the services (one per
/// workspace, say) that drive the same servers, so that they share the
/// slots too.
pub struct EndpointPool {
    members: Vec<Member>,
    state: Mutex<Vec<Health>>,
    changed: Condvar,
    down_initial: Duration,
    down_max: Duration,
    /// Every endpoint's models are known (no listing left to do).
    listed: AtomicBool,
    /// One listing round at a time.
    listing: Mutex<()>,
}

impl fmt::Debug for EndpointPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EndpointPool")
            .field("endpoints", &self.endpoints())
            .finish()
    }
}

/// Why no endpoint could be taken.
#[derive(Debug)]
pub(crate) enum AcquireError {
    /// The cancel flag was set while waiting.
    Cancelled,
    /// No endpoint's models could be read yet: every one is unreachable.
    Unlisted(TransportError),
}

/// A slot taken on one endpoint; dropping it frees the slot.
pub(crate) struct Lease<'a> {
    pool: &'a EndpointPool,
    index: usize,
}

impl Lease<'_> {
    /// The endpoint's position in config order.
    pub(crate) fn index(&self) -> usize {
        self.index
    }

    /// The endpoint's base URL.
    pub(crate) fn url(&self) -> &str {
        &self.pool.members[self.index].url
    }

    /// The endpoint's backend.
    pub(crate) fn backend(&self) -> &Arc<dyn Backend> {
        &self.pool.members[self.index].backend
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let mut state = self.pool.lock();
        state[self.index].outstanding = state[self.index].outstanding.saturating_sub(1);
        drop(state);
        self.pool.changed.notify_all();
    }
}

impl EndpointPool {
    /// The pool of `config`'s endpoints: validates the config, checks
    /// strict sovereignty for every endpoint, and builds one backend per
    /// endpoint. Nothing is sent yet.
    pub fn from_config(config: &LlmConfig) -> Result<EndpointPool, LlmError> {
        config.validate()?;
        check_sovereignty(config)?;
        let mut members = Vec::new();
        for endpoint in config.endpoints() {
            let one = config.for_endpoint(&endpoint);
            let mut bounded = one.clone();
            bounded.timeout_secs = config.ping_timeout_secs;
            bounded.connect_timeout_secs =
                config.connect_timeout_secs.min(config.ping_timeout_secs);
            members.push(Member {
                backend: build_backend(&one)?,
                lister: build_backend(&bounded)?,
                url: endpoint.url,
                slots: endpoint.slots,
            });
        }
        Ok(Self::with_members(members))
    }

    /// A pool of ready backends, each with its slots, in this order (tests,
    /// or a host that builds its own backends). Each endpoint's URL is its
    /// backend's.
    pub fn from_backends(backends: Vec<(Arc<dyn Backend>, usize)>) -> EndpointPool {
        let members = backends
            .into_iter()
            .map(|(backend, slots)| Member {
                url: backend.endpoint().to_string(),
                slots: slots.max(1),
                lister: backend.clone(),
                backend,
            })
            .collect();
        Self::with_members(members)
    }

    fn with_members(members: Vec<Member>) -> EndpointPool {
        let single = members.len() < 2;
        let health = members
            .iter()
            .map(|_| Health {
                // One endpoint has nothing to agree with: no listing.
                models: single.then(Vec::new),
                ..Health::default()
            })
            .collect();
        EndpointPool {
            members,
            state: Mutex::new(health),
            changed: Condvar::new(),
            down_initial: Duration::from_secs(1),
            down_max: Duration::from_secs(30),
            listed: AtomicBool::new(single),
            listing: Mutex::new(()),
        }
    }

    /// The same pool with another back-off for endpoints taken out of
    /// rotation: `initial` after the first failure, doubled per failure in
    /// a row, at most `max` (default 1 s and 30 s).
    pub fn with_down_backoff(mut self, initial: Duration, max: Duration) -> EndpointPool {
        self.down_initial = initial;
        self.down_max = max.max(initial);
        self
    }

    /// The endpoints in config order, with their slots.
    pub fn endpoints(&self) -> Vec<EndpointConfig> {
        self.members
            .iter()
            .map(|m| EndpointConfig {
                url: m.url.clone(),
                slots: m.slots,
            })
            .collect()
    }

    /// The slots of all endpoints together.
    pub fn total_slots(&self) -> usize {
        self.members.iter().map(|m| m.slots).sum()
    }

    /// Requests outstanding on each endpoint, in config order.
    pub fn outstanding(&self) -> Vec<usize> {
        self.lock().iter().map(|h| h.outstanding).collect()
    }

    /// Whether each endpoint is in rotation now, in config order.
    pub fn healthy(&self) -> Vec<bool> {
        let now = Instant::now();
        self.lock().iter().map(|h| h.up(now)).collect()
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Health>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reads the model list of every endpoint not read yet (and not out of
    /// rotation), then checks that the endpoints agree on `wanted` (the
    /// configured models) by [`model_disagreement`]. An endpoint that
    /// cannot be listed is taken out of rotation, not called a mismatch.
    /// Nothing happens with one endpoint.
    pub fn check_models(&self, wanted: &[String]) -> Result<(), LlmError> {
        if !self.listed.load(Ordering::SeqCst) {
            let _round = self.listing.lock().unwrap_or_else(|p| p.into_inner());
            let now = Instant::now();
            let due: Vec<usize> = {
                let state = self.lock();
                (0..self.members.len())
                    .filter(|&i| state[i].models.is_none() && state[i].up(now))
                    .collect()
            };
            // Listed one after the other, outside the lock: a slow server
            // delays the check, never the other endpoints' bookkeeping.
            for i in due {
                match self.members[i].lister.list_models() {
                    Ok(models) => {
                        let mut state = self.lock();
                        state[i].models = Some(models);
                        state[i].last_error = None;
                    }
                    Err(e) => self.failed(i, &e),
                }
            }
            if self.lock().iter().all(|h| h.models.is_some()) {
                self.listed.store(true, Ordering::SeqCst);
            }
            self.changed.notify_all();
        }
        let listings: Vec<(String, Vec<String>)> = {
            let state = self.lock();
            self.members
                .iter()
                .zip(state.iter())
                .filter_map(|(m, h)| Some((m.url.clone(), h.models.clone()?)))
                .collect()
        };
        match model_disagreement(&listings, wanted) {
            Some(why) => Err(LlmError::ModelMismatch(why)),
            None => Ok(()),
        }
    }

    /// Takes a slot: waits until an endpoint whose models are known and
    /// that is in rotation has a free slot, then takes the least loaded
    /// relative to its slots (ties: config order). Endpoints in `avoid`
    /// are taken only when no other one is in rotation; when none is in
    /// rotation, any endpoint is (the caller's retry rules bound that).
    pub(crate) fn acquire(
        &self,
        avoid: &[usize],
        cancel: Option<&CancelFlag>,
    ) -> Result<Lease<'_>, AcquireError> {
        let mut state = self.lock();
        loop {
            if cancel.is_some_and(CancelFlag::is_set) {
                return Err(AcquireError::Cancelled);
            }
            let now = Instant::now();
            let listed: Vec<usize> = (0..self.members.len())
                .filter(|&i| state[i].models.is_some())
                .collect();
            if listed.is_empty() {
                let why = state
                    .iter()
                    .zip(&self.members)
                    .filter_map(|(h, m)| Some(format!("{}: {}", m.url, h.last_error.as_ref()?)))
                    .collect::<Vec<_>>()
                    .join("; ");
                return Err(AcquireError::Unlisted(TransportError::new(
                    TransportErrorKind::Connect,
                    format!("no endpoint could be asked for its models ({why})"),
                )));
            }
            let up: Vec<usize> = listed
                .iter()
                .copied()
                .filter(|&i| state[i].up(now))
                .collect();
            let preferred: Vec<usize> = up.iter().copied().filter(|i| !avoid.contains(i)).collect();
            let tier = [preferred, up, listed]
                .into_iter()
                .find(|t| !t.is_empty())
                .unwrap_or_default();
            let best = tier
                .iter()
                .copied()
                .filter(|&i| state[i].outstanding < self.members[i].slots)
                .min_by(|&a, &b| {
                    // outstanding/slots compared without division.
                    let la = state[a].outstanding * self.members[b].slots;
                    let lb = state[b].outstanding * self.members[a].slots;
                    la.cmp(&lb).then(a.cmp(&b))
                });
            if let Some(index) = best {
                state[index].outstanding += 1;
                return Ok(Lease { pool: self, index });
            }
            // Wake at the latest when the next endpoint comes back.
            let back = state
                .iter()
                .filter_map(|h| h.down_until.filter(|t| *t > now))
                .map(|t| t - now)
                .min()
                .unwrap_or(POLL);
            state = self
                .changed
                .wait_timeout(state, back.min(POLL))
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
        }
    }

    /// Takes endpoint `index` out of rotation after a transport failure,
    /// for the back-off its failures in a row earn.
    pub(crate) fn failed(&self, index: usize, error: &TransportError) {
        let mut state = self.lock();
        let Some(h) = state.get_mut(index) else {
            return;
        };
        h.failures = h.failures.saturating_add(1);
        let factor = 2u32.saturating_pow((h.failures - 1).min(20));
        let period = self.down_initial.saturating_mul(factor).min(self.down_max);
        h.down_until = Some(Instant::now() + period);
        h.last_error = Some(error.message.clone());
        drop(state);
        self.changed.notify_all();
    }

    /// Endpoint `index` answered: back in rotation, its failure count
    /// reset.
    pub(crate) fn succeeded(&self, index: usize) {
        let mut state = self.lock();
        if let Some(h) = state.get_mut(index) {
            let was_down = h.down_until.is_some();
            h.answered += 1;
            h.failures = 0;
            h.down_until = None;
            if was_down {
                drop(state);
                self.changed.notify_all();
            }
        }
    }

    /// Whether an endpoint outside `tried` is in rotation (its models
    /// known): a failed attempt then moves there at once.
    pub(crate) fn healthy_except(&self, tried: &[usize]) -> bool {
        let now = Instant::now();
        self.lock()
            .iter()
            .enumerate()
            .any(|(i, h)| !tried.contains(&i) && h.models.is_some() && h.up(now))
    }

    /// Every endpoint's load now, in config order.
    pub fn load(&self) -> Vec<EndpointLoad> {
        let now = Instant::now();
        let state = self.lock();
        self.members
            .iter()
            .zip(state.iter())
            .map(|(m, h)| EndpointLoad {
                url: m.url.clone(),
                slots: m.slots,
                in_flight: h.outstanding,
                answered: h.answered,
                up: h.up(now),
            })
            .collect()
    }

    /// The first endpoint's URL (named when no attempt was made).
    pub(crate) fn first_url(&self) -> &str {
        self.members.first().map(|m| m.url.as_str()).unwrap_or("")
    }
}

/// Whether endpoints serving `listings` (URL, models listed) disagree on
/// the `wanted` models, and how. The rule: each wanted model must be
/// listed by every endpoint; a model no endpoint lists (a server that
/// answers with whatever it loaded, such as llama-server without
/// `--alias`, ignores the request's model) requires identical model lists
/// instead. `None`: they agree (always, with fewer than two listings).
pub fn model_disagreement(listings: &[(String, Vec<String>)], wanted: &[String]) -> Option<String> {
    if listings.len() < 2 {
        return None;
    }
    let serves = |models: &[String]| {
        if models.is_empty() {
            "no model".to_string()
        } else {
            models.join(", ")
        }
    };
    let wanted: BTreeSet<&String> = wanted.iter().collect();
    let mut unlisted = wanted.is_empty();
    for model in &wanted {
        let (with, without): (Vec<_>, Vec<_>) =
            listings.iter().partition(|(_, m)| m.contains(model));
        if with.is_empty() {
            unlisted = true;
        } else if !without.is_empty() {
            let lacking = without
                .iter()
                .map(|(url, m)| format!("{url} (serves {})", serves(m)))
                .collect::<Vec<_>>()
                .join("; ");
            let having = with
                .iter()
                .map(|(url, _)| url.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            return Some(format!(
                "model {model} is listed by {having} but not by {lacking}"
            ));
        }
    }
    if unlisted {
        let sets: Vec<BTreeSet<&String>> =
            listings.iter().map(|(_, m)| m.iter().collect()).collect();
        if sets.iter().any(|s| *s != sets[0]) {
            let all = listings
                .iter()
                .map(|(url, m)| format!("{url} serves {}", serves(m)))
                .collect::<Vec<_>>()
                .join("; ");
            let missing = wanted
                .iter()
                .filter(|m| !listings.iter().any(|(_, l)| l.contains(m)))
                .map(|m| m.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            return Some(format!(
                "no endpoint lists the configured model ({missing}), so their model lists must be \
                 identical, and they differ: {all}"
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{BackendCall, BackendReply};
    use crate::config::BackendKind;

    struct Fake(String, Vec<String>);

    impl Backend for Fake {
        fn kind(&self) -> BackendKind {
            BackendKind::Openai
        }
        fn endpoint(&self) -> &str {
            &self.0
        }
        fn complete(&self, _call: &BackendCall) -> Result<BackendReply, TransportError> {
            Ok(BackendReply::default())
        }
        fn list_models(&self) -> Result<Vec<String>, TransportError> {
            Ok(self.1.clone())
        }
    }

    fn pool(slots: &[usize]) -> EndpointPool {
        EndpointPool::from_backends(
            slots
                .iter()
                .enumerate()
                .map(|(i, &s)| {
                    let b: Arc<dyn Backend> =
                        Arc::new(Fake(format!("http://e{i}"), vec!["m".into()]));
                    (b, s)
                })
                .collect(),
        )
    }

    #[test]
    fn dispatch_takes_the_least_loaded_relative_to_slots_ties_in_config_order() {
        let p = pool(&[1, 4]);
        p.check_models(&["m".into()]).unwrap();
        // Both idle: a tie, the first in config order.
        let a = p.acquire(&[], None).unwrap();
        assert_eq!(a.index(), 0);
        // e0 is full (1/1); e1 takes the next four.
        let rest: Vec<_> = (0..4).map(|_| p.acquire(&[], None).unwrap()).collect();
        assert!(rest.iter().all(|l| l.index() == 1));
        assert_eq!(p.outstanding(), vec![1, 4]);
        drop(rest);
        drop(a);
        // e0 at 0/1 and e1 at 1/4: 0 < 1/4, then e1 at 1/4 < e0's 1/1.
        let p = pool(&[1, 4]);
        p.check_models(&[]).unwrap();
        let first = p.acquire(&[], None).unwrap();
        let second = p.acquire(&[], None).unwrap();
        assert_eq!((first.index(), second.index()), (0, 1));
        let third = p.acquire(&[], None).unwrap();
        assert_eq!(third.index(), 1, "2/4 beats the full 1/1");
    }

    #[test]
    fn a_failed_endpoint_is_out_for_its_backoff_then_back_and_a_success_resets_it() {
        let p = pool(&[2, 2]).with_down_backoff(Duration::from_millis(60), Duration::from_secs(1));
        p.check_models(&[]).unwrap();
        let err = TransportError::new(TransportErrorKind::Connect, "refused");
        p.failed(0, &err);
        assert_eq!(p.healthy(), vec![false, true]);
        assert_eq!(p.acquire(&[], None).unwrap().index(), 1);
        assert!(p.healthy_except(&[0]));
        assert!(!p.healthy_except(&[1]));
        std::thread::sleep(Duration::from_millis(80));
        assert_eq!(p.healthy(), vec![true, true]);
        assert_eq!(p.acquire(&[], None).unwrap().index(), 0);
        // A second failure in a row doubles the period; a success resets.
        p.failed(0, &err);
        p.failed(0, &err);
        std::thread::sleep(Duration::from_millis(80));
        assert_eq!(p.healthy(), vec![false, true], "120 ms the second time");
        p.succeeded(0);
        assert_eq!(p.healthy(), vec![true, true]);
        // All down: attempts still go somewhere (the caller's retries
        // bound them), avoided endpoints last.
        p.failed(0, &err);
        p.failed(1, &err);
        assert_eq!(
            p.acquire(&[0], None).unwrap().index(),
            0,
            "probe by load, config order"
        );
    }

    #[test]
    fn a_waiter_wakes_when_a_slot_is_freed_and_honours_the_cancel_flag() {
        let p = pool(&[1]);
        let held = p.acquire(&[], None).unwrap();
        std::thread::scope(|s| {
            let waiter = s.spawn(|| p.acquire(&[], None).map(|l| l.index()).ok());
            std::thread::sleep(Duration::from_millis(50));
            drop(held);
            assert_eq!(waiter.join().unwrap(), Some(0));
        });
        let _held = p.acquire(&[], None).unwrap();
        let flag = CancelFlag(Arc::new(AtomicBool::new(false)));
        std::thread::scope(|s| {
            let waiter =
                s.spawn(|| matches!(p.acquire(&[], Some(&flag)), Err(AcquireError::Cancelled)));
            std::thread::sleep(Duration::from_millis(50));
            flag.0.store(true, Ordering::SeqCst);
            assert!(waiter.join().unwrap());
        });
    }

    #[test]
    fn the_model_rule_needs_the_model_everywhere_or_identical_lists() {
        let l = |u: &str, m: &[&str]| (u.to_string(), m.iter().map(|s| s.to_string()).collect());
        let wanted = vec!["m".to_string()];
        assert!(model_disagreement(&[l("a", &["m", "x"]), l("b", &["m"])], &wanted).is_none());
        let why = model_disagreement(&[l("a", &["m"]), l("b", &["other"])], &wanted).unwrap();
        assert!(
            why.contains("b (serves other)") && why.contains("listed by a"),
            "{why}"
        );
        // Nobody lists it: the lists must be identical.
        assert!(model_disagreement(&[l("a", &["x"]), l("b", &["x"])], &wanted).is_none());
        let why = model_disagreement(&[l("a", &["x"]), l("b", &["y"])], &wanted).unwrap();
        assert!(why.contains("a serves x; b serves y"), "{why}");
        assert!(model_disagreement(&[l("a", &["x"])], &wanted).is_none());
    }
}
