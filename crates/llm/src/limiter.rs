//! A bound on requests in flight per endpoint (a counting semaphore).

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};

/// A counting semaphore. [`Semaphore::acquire`] blocks until a permit is
/// free; the permit is returned when the guard drops.
#[derive(Debug)]
pub struct Semaphore {
    free: Mutex<usize>,
    freed: Condvar,
}

/// A held permit; dropping it frees the slot and wakes one waiter.
#[derive(Debug)]
pub struct Permit<'a> {
    semaphore: &'a Semaphore,
}

impl Semaphore {
    /// A semaphore with `permits` permits (at least 1).
    pub fn new(permits: usize) -> Self {
        Semaphore {
            free: Mutex::new(permits.max(1)),
            freed: Condvar::new(),
        }
    }

    /// Blocks until a permit is free, then takes it.
    pub fn acquire(&self) -> Permit<'_> {
        let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        while *free == 0 {
            free = self.freed.wait(free).unwrap_or_else(|p| p.into_inner());
        }
        *free -= 1;
        Permit { semaphore: self }
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let mut free = self
            .semaphore
            .free
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        *free += 1;
        self.semaphore.freed.notify_one();
    }
}

/// One semaphore per endpoint, each with the same bound.
#[derive(Debug)]
pub struct EndpointLimiter {
    per_endpoint: usize,
    semaphores: Mutex<HashMap<String, Arc<Semaphore>>>,
}

impl EndpointLimiter {
    /// A limiter allowing `per_endpoint` requests in flight per endpoint.
    pub fn new(per_endpoint: usize) -> Self {
        EndpointLimiter {
            per_endpoint: per_endpoint.max(1),
            semaphores: Mutex::new(HashMap::new()),
        }
    }

    /// The semaphore of `endpoint`, created on first use; every caller for
    /// the same endpoint string shares it.
    pub fn semaphore(&self, endpoint: &str) -> Arc<Semaphore> {
        let mut map = self.semaphores.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(endpoint.to_string())
            .or_insert_with(|| Arc::new(Semaphore::new(self.per_endpoint)))
            .clone()
    }

    /// Requests allowed in flight per endpoint (at least 1).
    pub fn bound(&self) -> usize {
        self.per_endpoint
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn never_more_than_the_bound_in_flight() {
        let limiter = EndpointLimiter::new(3);
        let sem = limiter.semaphore("http://a");
        let now = AtomicUsize::new(0);
        let peak = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..12 {
                s.spawn(|| {
                    let _p = sem.acquire();
                    let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(n, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(5));
                    now.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        assert_eq!(peak.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn endpoints_have_separate_semaphores() {
        let limiter = EndpointLimiter::new(1);
        let a = limiter.semaphore("http://a");
        let b = limiter.semaphore("http://b");
        let _pa = a.acquire();
        let _pb = b.acquire(); // would block forever if shared
        assert!(Arc::ptr_eq(&a, &limiter.semaphore("http://a")));
    }
}
