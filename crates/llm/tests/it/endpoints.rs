//! Several endpoints for one model, through the service with in-process
//! backends: dispatch by load, failover with back-off, every endpoint
//! down, the answering endpoint in the exchange log, cache keys that do
//! not depend on the endpoint, the model agreement check and a pool
//! shared between services.

use koas_kernel_api::LlmRequest;
use koas_llm::backend::{Backend, BackendCall, BackendReply};
use koas_llm::{
    read_exchanges, AbortReason, BackendKind, EndpointPool, ExchangeSource, LlmConfig, LlmError,
    LlmService, TransportError, TransportErrorKind,
};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A backend answering `answer: PROMPT` after `delay`, or failing when
/// told to, counting its calls and the most it answered at once.
struct Fake {
    url: String,
    models: Vec<String>,
    delay: Duration,
    down: AtomicBool,
    status: Option<u16>,
    calls: AtomicUsize,
    listings: AtomicUsize,
    now: AtomicUsize,
    peak: AtomicUsize,
}

impl Fake {
    fn new(port: u16, model: &str) -> Arc<Fake> {
        Arc::new(Fake {
            url: format!("http://127.0.0.1:{port}"),
            models: vec![model.to_string()],
            delay: Duration::ZERO,
            down: AtomicBool::new(false),
            status: None,
            calls: AtomicUsize::new(0),
            listings: AtomicUsize::new(0),
            now: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
        })
    }

    fn slow(port: u16, delay: Duration) -> Arc<Fake> {
        let mut f = Arc::into_inner(Fake::new(port, "m")).expect("fresh");
        f.delay = delay;
        Arc::new(f)
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Backend for Fake {
    fn kind(&self) -> BackendKind {
        BackendKind::Openai
    }
    fn endpoint(&self) -> &str {
        &self.url
    }
    fn complete(&self, call: &BackendCall) -> Result<BackendReply, TransportError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if let Some(status) = self.status {
            return Err(TransportError::http(status, "too long"));
        }
        if self.down.load(Ordering::SeqCst) {
            return Err(TransportError::new(
                TransportErrorKind::Connect,
                format!("{}: connection refused", self.url),
            ));
        }
        let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(n, Ordering::SeqCst);
        std::thread::sleep(self.delay);
        self.now.fetch_sub(1, Ordering::SeqCst);
        Ok(BackendReply {
            text: format!("answer: {}", call.prompt),
            prompt_tokens: Some(3),
            completion_tokens: Some(2),
            ..BackendReply::default()
        })
    }
    fn list_models(&self) -> Result<Vec<String>, TransportError> {
        self.listings.fetch_add(1, Ordering::SeqCst);
        if self.down.load(Ordering::SeqCst) {
            return Err(TransportError::new(
                TransportErrorKind::Connect,
                "connection refused",
            ));
        }
        Ok(self.models.clone())
    }
}

fn config() -> LlmConfig {
    let mut c = LlmConfig::new(BackendKind::Openai, "http://127.0.0.1:1", "m");
    c.backoff_initial_ms = 5;
    c.backoff_max_ms = 10;
    c.max_retries = 2;
    c.empty_retries = 0;
    c
}

fn pool(fakes: &[&Arc<Fake>], slots: usize) -> Arc<EndpointPool> {
    pool_with_backoff(fakes, slots, Duration::from_millis(150))
}

fn pool_with_backoff(fakes: &[&Arc<Fake>], slots: usize, down: Duration) -> Arc<EndpointPool> {
    Arc::new(
        EndpointPool::from_backends(
            fakes
                .iter()
                .map(|f| ((*f).clone() as Arc<dyn Backend>, slots))
                .collect(),
        )
        .with_down_backoff(down, Duration::from_secs(5)),
    )
}

fn service(pool: &Arc<EndpointPool>, ws: &std::path::Path) -> LlmService {
    LlmService::builder(config(), ws)
        .pool(pool.clone())
        .build()
        .expect("service")
}

fn req(prompt: &str) -> LlmRequest {
    LlmRequest::new("edit", prompt)
}

#[test]
fn a_failing_endpoint_is_skipped_at_once_and_comes_back_after_its_backoff() {
    let (a, b) = (Fake::new(1, "m"), Fake::new(2, "m"));
    a.down.store(true, Ordering::SeqCst);
    // A back-off long enough that a loaded machine (the whole suite on two
    // cores) cannot let it end between the first two requests.
    let backoff = Duration::from_millis(1500);
    let pool = pool_with_backoff(&[&a, &b], 2, backoff);
    let ws = tempfile::tempdir().unwrap();
    let s = service(&pool, ws.path());
    let answer = s.complete(&req("one")).expect("answered elsewhere");
    assert_eq!(answer.text, "answer: one");
    assert_eq!(
        (a.calls(), b.calls()),
        (0, 1),
        "a was not listed, so never asked"
    );
    // a comes up; it is still out until its back-off ends.
    a.down.store(false, Ordering::SeqCst);
    s.complete(&req("two")).unwrap();
    assert_eq!(a.calls(), 0);
    std::thread::sleep(backoff + Duration::from_millis(100));
    // Back in rotation: listed, then it takes the next request (it is
    // first in config order and both are idle).
    s.complete(&req("three")).unwrap();
    assert_eq!((a.calls(), b.calls()), (1, 2));
    // A failure during a request: moved to b at once, no retry spent.
    a.down.store(true, Ordering::SeqCst);
    s.complete(&req("four")).unwrap();
    assert_eq!((a.calls(), b.calls()), (2, 3));
    let log = read_exchanges(s.exchange_log_path()).unwrap();
    let four = log.last().unwrap();
    assert_eq!(
        four.endpoint, b.url,
        "the exchange names the answering endpoint"
    );
    assert_eq!(four.retries, 0, "a failover is not a retry");
    let three = &log[2];
    assert_eq!(three.endpoint, a.url);
    assert_eq!(pool.healthy(), vec![false, true]);
}

#[test]
fn every_endpoint_down_is_a_transport_failure_after_the_usual_retries() {
    let (a, b) = (Fake::new(1, "m"), Fake::new(2, "m"));
    let pool = pool(&[&a, &b], 2);
    let ws = tempfile::tempdir().unwrap();
    let s = service(&pool, ws.path());
    s.complete(&req("listed first")).unwrap();
    a.down.store(true, Ordering::SeqCst);
    b.down.store(true, Ordering::SeqCst);
    let e = s.complete(&req("x")).unwrap_err();
    assert_eq!(e.code(), "TRANSPORT_FAILURE", "{e}");
    assert!(e.to_string().contains("127.0.0.1:"), "{e}");
    // One round over both, then each retry (2) probes one endpoint.
    assert_eq!(a.calls() + b.calls() - 1, 2 + 2);
    assert_eq!(
        s.session_metadata().abort_reason,
        Some(AbortReason::TransportFailure)
    );
    let log = read_exchanges(s.exchange_log_path()).unwrap();
    let failed = log.last().unwrap();
    assert_eq!(failed.retries, 2);
    assert!(failed.endpoint == a.url || failed.endpoint == b.url);
}

#[test]
fn a_request_the_server_rejects_is_not_failed_over() {
    let mut a = Arc::into_inner(Fake::new(1, "m")).unwrap();
    a.status = Some(413);
    let (a, b) = (Arc::new(a), Fake::new(2, "m"));
    let pool = pool(&[&a, &b], 2);
    let ws = tempfile::tempdir().unwrap();
    let e = service(&pool, ws.path()).complete(&req("x")).unwrap_err();
    assert_eq!(e.code(), "REQUEST_REJECTED", "{e}");
    assert_eq!((a.calls(), b.calls()), (1, 0));
    assert_eq!(pool.healthy(), vec![true, true]);
}

#[test]
fn endpoints_serving_other_models_are_refused_before_any_request() {
    let (a, b) = (Fake::new(1, "m"), Fake::new(2, "other"));
    let pool = pool(&[&a, &b], 2);
    let ws = tempfile::tempdir().unwrap();
    let s = service(&pool, ws.path());
    let e = s.complete(&req("x")).unwrap_err();
    assert!(matches!(e, LlmError::ModelMismatch(_)), "{e}");
    assert!(e.to_string().contains("127.0.0.1:2 (serves other)"), "{e}");
    assert_eq!((a.calls(), b.calls()), (0, 0));
    assert_eq!(
        s.session_metadata().abort_reason,
        Some(AbortReason::ModelMismatch)
    );
    assert!(matches!(
        s.complete(&req("y")),
        Err(LlmError::SessionAborted { .. })
    ));
    // Listed once each.
    assert_eq!(
        (
            a.listings.load(Ordering::SeqCst),
            b.listings.load(Ordering::SeqCst)
        ),
        (1, 1)
    );
}

#[test]
fn the_cache_key_does_not_depend_on_the_answering_endpoint() {
    let (a, b) = (Fake::new(1, "m"), Fake::new(2, "m"));
    a.down.store(true, Ordering::SeqCst);
    let ws = tempfile::tempdir().unwrap();
    let two = service(&pool(&[&a, &b], 1), ws.path());
    two.complete(&req("same")).unwrap();
    let other_ws = tempfile::tempdir().unwrap();
    let alone = service(&pool(&[&b], 1), other_ws.path());
    alone.complete(&req("same")).unwrap();
    let k1 = read_exchanges(two.exchange_log_path()).unwrap()[0]
        .cache_key
        .clone();
    let k2 = read_exchanges(alone.exchange_log_path()).unwrap()[0]
        .cache_key
        .clone();
    assert_eq!(k1, k2);
    // Served from the response cache by a service on a's endpoint alone.
    a.down.store(false, Ordering::SeqCst);
    let again = service(&pool(&[&a], 1), ws.path());
    assert!(again.complete(&req("same")).unwrap().cached);
    assert_eq!(a.calls(), 0);
    let log = read_exchanges(again.exchange_log_path()).unwrap();
    assert_eq!(log.last().unwrap().source, ExchangeSource::Cache);
}

#[test]
fn requests_spread_by_load_and_a_shared_pool_shares_the_slots() {
    let (a, b) = (
        Fake::slow(1, Duration::from_millis(40)),
        Fake::slow(2, Duration::from_millis(40)),
    );
    let pool = Arc::new(EndpointPool::from_backends(vec![
        (a.clone() as Arc<dyn Backend>, 1),
        (b.clone() as Arc<dyn Backend>, 3),
    ]));
    assert_eq!(pool.total_slots(), 4);
    let (w1, w2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (s1, s2) = (service(&pool, w1.path()), service(&pool, w2.path()));
    assert_eq!(s1.total_slots(), 4);
    let batch =
        |tag: &str| -> Vec<LlmRequest> { (0..12).map(|i| req(&format!("{tag}{i}"))).collect() };
    std::thread::scope(|s| {
        let one = s.spawn(|| s1.complete_many(&batch("a")));
        let two = s.spawn(|| s2.complete_many(&batch("b")));
        assert!(one.join().unwrap().iter().all(Result::is_ok));
        assert!(two.join().unwrap().iter().all(Result::is_ok));
    });
    assert_eq!(a.calls() + b.calls(), 24, "each asked once");
    assert_eq!(a.peak.load(Ordering::SeqCst), 1, "a's one slot, shared");
    assert_eq!(b.peak.load(Ordering::SeqCst), 3, "b's three slots, shared");
    assert!(b.calls() > a.calls(), "{} vs {}", b.calls(), a.calls());
    assert_eq!(pool.outstanding(), vec![0, 0]);
    let meta = s1.session_metadata();
    assert_eq!(meta.endpoints.len(), 2);
    assert_eq!(meta.endpoints[1].slots, 3);
}
