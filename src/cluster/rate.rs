//! The client-side request rate limit of one cluster: a bucket of `burst` requests, refilled at
//! `qps` per second, that every request made through a [`Cluster`](super::Cluster) (and its
//! clones) draws from, as client-go's QPS/burst do.
//!
//! Expected flow: the tower layer [`RateLimitLayer`] sits in each cluster's client stack; before
//! the inner service is polled ready, it waits for a token ([`Limiter::acquire`]). kube puts a
//! buffer in front of the stack, so waiting requests queue there in order.
//!
//! Guarantees: over any interval `t`, at most `burst + qps × t` requests start; a request waits
//! only as long as the bucket is empty (no polling, one timer). The decision is governor's GCRA;
//! the clock is tokio's, so the limit follows `tokio::time::pause` in tests.
//!
//! The limit can be changed on a live cluster ([`Limits::set`]): requests already waiting keep
//! the bucket they wait on; later ones use the new one.

use std::future::Future;
use std::num::NonZeroU32;
use std::ops::Add;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use governor::clock::{Clock, Reference};
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};

/// Requests per second and burst of one cluster's client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// Sustained requests per second.
    pub qps: NonZeroU32,
    /// Requests that may start at once after a quiet spell.
    pub burst: NonZeroU32,
}

/// Default requests per second per cluster: a safety net against a runaway loop, not the
/// server's protection (API Priority and Fairness answers 429, which [`super::retry`] honours).
pub const DEFAULT_QPS: u32 = 500;
/// Default burst per cluster.
pub const DEFAULT_BURST: u32 = 1000;

impl Default for RateLimit {
    fn default() -> Self {
        RateLimit {
            qps: NonZeroU32::new(DEFAULT_QPS).unwrap_or(NonZeroU32::MIN),
            burst: NonZeroU32::new(DEFAULT_BURST).unwrap_or(NonZeroU32::MIN),
        }
    }
}

impl RateLimit {
    /// A limit of `qps` requests per second with bursts of `burst`; `None` when either is 0.
    pub fn new(qps: u32, burst: u32) -> Option<Self> {
        Some(RateLimit {
            qps: NonZeroU32::new(qps)?,
            burst: NonZeroU32::new(burst)?,
        })
    }
}

/// An instant of tokio's clock, as governor measures time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct TokioInstant(tokio::time::Instant);

impl Add<Nanos> for TokioInstant {
    type Output = Self;

    fn add(self, other: Nanos) -> Self {
        TokioInstant(self.0 + Duration::from(other))
    }
}

impl Reference for TokioInstant {
    fn duration_since(&self, earlier: Self) -> Nanos {
        self.0.saturating_duration_since(earlier.0).into()
    }

    fn saturating_sub(&self, duration: Nanos) -> Self {
        self.0
            .checked_sub(Duration::from(duration))
            .map_or(*self, TokioInstant)
    }
}

/// tokio's clock (paused in tests, real otherwise).
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioClock;

impl Clock for TokioClock {
    type Instant = TokioInstant;

    fn now(&self) -> TokioInstant {
        TokioInstant(tokio::time::Instant::now())
    }
}

/// One bucket.
pub struct Limiter {
    limit: RateLimit,
    bucket: RateLimiter<NotKeyed, InMemoryState, TokioClock, NoOpMiddleware<TokioInstant>>,
}

impl std::fmt::Debug for Limiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limiter")
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

impl Limiter {
    /// A full bucket for `limit`.
    pub fn new(limit: RateLimit) -> Self {
        let quota = Quota::per_second(limit.qps).allow_burst(limit.burst);
        Limiter {
            limit,
            bucket: RateLimiter::direct_with_clock(quota, TokioClock),
        }
    }

    /// Waits until a request may start, and takes its token.
    pub async fn acquire(&self) {
        while let Err(not_until) = self.bucket.check() {
            tokio::time::sleep(not_until.wait_time_from(TokioClock.now())).await;
        }
    }
}

/// The limit of one cluster, shared by its clones; replaceable.
#[derive(Debug, Clone)]
pub struct Limits(Arc<Mutex<Arc<Limiter>>>);

impl Limits {
    /// A full bucket for `limit`.
    pub fn new(limit: RateLimit) -> Self {
        Limits(Arc::new(Mutex::new(Arc::new(Limiter::new(limit)))))
    }

    /// The current limit.
    pub fn get(&self) -> RateLimit {
        self.current().limit
    }

    /// Replaces the limit (with a full bucket).
    pub fn set(&self, limit: RateLimit) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Arc::new(Limiter::new(limit));
    }

    fn current(&self) -> Arc<Limiter> {
        Arc::clone(&self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// The tower layer that makes every request wait for a token of [`Limits`].
#[derive(Debug, Clone)]
pub struct RateLimitLayer {
    limits: Limits,
}

impl RateLimitLayer {
    /// Requests wait for tokens of `limits`.
    pub fn new(limits: Limits) -> Self {
        RateLimitLayer { limits }
    }
}

impl<S> tower::Layer<S> for RateLimitLayer {
    type Service = RateLimitService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimitService {
            inner,
            limits: self.limits.clone(),
            waiting: None,
            permitted: false,
        }
    }
}

type Waiting = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A service whose requests wait for a token (see [`RateLimitLayer`]).
pub struct RateLimitService<S> {
    inner: S,
    limits: Limits,
    waiting: Option<Waiting>,
    permitted: bool,
}

impl<S: Clone> Clone for RateLimitService<S> {
    fn clone(&self) -> Self {
        RateLimitService {
            inner: self.inner.clone(),
            limits: self.limits.clone(),
            waiting: None,
            permitted: false,
        }
    }
}

impl<S> std::fmt::Debug for RateLimitService<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimitService")
            .field("limits", &self.limits)
            .field("permitted", &self.permitted)
            .finish_non_exhaustive()
    }
}

impl<S, R> tower::Service<R> for RateLimitService<S>
where
    S: tower::Service<R>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        if !self.permitted {
            let limits = &self.limits;
            let waiting = self.waiting.get_or_insert_with(|| {
                let limiter = limits.current();
                Box::pin(async move { limiter.acquire().await })
            });
            std::task::ready!(waiting.as_mut().poll(cx));
            self.waiting = None;
            self.permitted = true;
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        self.permitted = false;
        self.inner.call(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::time::Instant;
    use tower::{Service as _, ServiceExt as _};

    fn limit(qps: u32, burst: u32) -> RateLimit {
        RateLimit::new(qps, burst).unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_bucket_lets_a_burst_through_at_once_then_paces_at_qps() {
        let limiter = Limiter::new(limit(10, 5));
        let started = Instant::now();
        for _ in 0..5 {
            limiter.acquire().await;
        }
        assert_eq!(started.elapsed(), Duration::ZERO);
        for _ in 0..10 {
            limiter.acquire().await;
        }
        assert_eq!(started.elapsed(), Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_bucket_refills_at_qps_up_to_the_burst() {
        let limiter = Limiter::new(limit(10, 5));
        for _ in 0..5 {
            limiter.acquire().await;
        }
        tokio::time::advance(Duration::from_millis(300)).await;
        let refilled = Instant::now();
        for _ in 0..3 {
            limiter.acquire().await;
        }
        assert_eq!(refilled.elapsed(), Duration::ZERO, "3 tokens in 300 ms");
        limiter.acquire().await;
        assert_eq!(refilled.elapsed(), Duration::from_millis(100));

        // A long pause refills no more than the burst.
        tokio::time::advance(Duration::from_secs(60)).await;
        let rested = Instant::now();
        for _ in 0..5 {
            limiter.acquire().await;
        }
        assert_eq!(rested.elapsed(), Duration::ZERO);
        limiter.acquire().await;
        assert_eq!(rested.elapsed(), Duration::from_millis(100));
    }

    #[tokio::test(start_paused = true)]
    async fn requests_through_the_layer_wait_for_tokens_and_a_new_limit_applies_to_later_ones() {
        let limits = Limits::new(limit(2, 1));
        let calls = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&calls);
        let started = Instant::now();
        let mut service = tower::ServiceBuilder::new()
            .layer(RateLimitLayer::new(limits.clone()))
            .service_fn(move |request: u32| {
                seen.lock().unwrap().push((request, started.elapsed()));
                async move { Ok::<_, std::convert::Infallible>(request) }
            });
        for request in 0..3 {
            let answer = service.ready().await.unwrap().call(request).await.unwrap();
            assert_eq!(answer, request);
        }
        limits.set(limit(1, 4));
        assert_eq!(limits.get(), limit(1, 4));
        for request in 3..7 {
            service.ready().await.unwrap().call(request).await.unwrap();
        }
        service.ready().await.unwrap().call(7).await.unwrap();
        let ms = |ms| Duration::from_millis(ms);
        assert_eq!(
            *calls.lock().unwrap(),
            [
                (0, ms(0)),
                (1, ms(500)),
                (2, ms(1000)),
                (3, ms(1000)),
                (4, ms(1000)),
                (5, ms(1000)),
                (6, ms(1000)),
                (7, ms(2000)),
            ]
        );
    }

    #[test]
    fn a_zero_rate_or_burst_is_refused() {
        assert_eq!(RateLimit::new(0, 10), None);
        assert_eq!(RateLimit::new(10, 0), None);
        assert_eq!(
            RateLimit::default(),
            RateLimit::new(DEFAULT_QPS, DEFAULT_BURST).unwrap()
        );
    }
}
