//! API Priority and Fairness: a server that is too busy answers `429 Too Many Requests` with
//! `Retry-After`, before it handles the request. Such a request is sent again after the time the
//! server asks for (or a short back-off when it names none), a bounded number of times; any
//! method may be retried, as client-go does, because a 429 means nothing was done. The last
//! answer, a 429 included, goes to the caller.
//!
//! Every wait is bounded: at most [`MAX_RETRIES`] retries, each after at most [`MAX_PAUSE`]; the
//! cluster's request timeout (the watchdog layer outside this one) bounds the whole.

use std::time::Duration;

use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use kube::client::Body;
use tower::{BoxError, Service, ServiceExt};

/// Retries of one request answered 429.
pub const MAX_RETRIES: u32 = 5;
/// The longest pause before a retry, whatever the server asks.
pub const MAX_PAUSE: Duration = Duration::from_secs(10);
/// The first pause when the server names none; doubled on each retry.
const FIRST_PAUSE: Duration = Duration::from_millis(100);

/// The layer of [`Retry429`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Retry429Layer;

impl<S> tower::Layer<S> for Retry429Layer {
    type Service = Retry429<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Retry429 { inner }
    }
}

/// Sends a request again when the server answers 429 (see the module documentation).
#[derive(Debug, Clone)]
pub struct Retry429<S> {
    inner: S,
}

/// How long to wait before retry number `attempt` (0-based) of a request answered `response`.
pub fn pause<B>(response: &Response<B>, attempt: u32) -> Duration {
    let asked = response
        .headers()
        .get(http::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    let backoff = FIRST_PAUSE.saturating_mul(1 << attempt.min(16));
    asked.unwrap_or(backoff).clamp(FIRST_PAUSE, MAX_PAUSE)
}

impl<S, B> Service<Request<Body>> for Retry429<S>
where
    S: Service<Request<Body>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Into<BoxError>,
    B: Send + 'static,
{
    type Response = Response<B>;
    type Error = BoxError;
    type Future =
        std::pin::Pin<Box<dyn std::future::Future<Output = Result<Response<B>, BoxError>> + Send>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        // The ready service takes this request; clones take the retries.
        let ready = self.inner.clone();
        let ready = std::mem::replace(&mut self.inner, ready);
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let bytes = body.collect().await?.to_bytes();
            let rebuild = |parts: &http::request::Parts| {
                let mut request = Request::new(Body::from(bytes.clone()));
                *request.method_mut() = parts.method.clone();
                *request.uri_mut() = parts.uri.clone();
                *request.version_mut() = parts.version;
                *request.headers_mut() = parts.headers.clone();
                request
            };
            let mut service = ready.clone();
            let mut response = {
                let mut ready = ready;
                ready.call(rebuild(&parts)).await.map_err(Into::into)?
            };
            for attempt in 0..MAX_RETRIES {
                if response.status() != StatusCode::TOO_MANY_REQUESTS {
                    break;
                }
                tokio::time::sleep(pause(&response, attempt)).await;
                let next = service.clone();
                response = std::mem::replace(&mut service, next)
                    .ready()
                    .await
                    .map_err(Into::into)?
                    .call(rebuild(&parts))
                    .await
                    .map_err(Into::into)?;
            }
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;
    use tower::Layer as _;

    /// A server answering 429 to the first `busy` requests, recording each request's body.
    fn server(
        busy: u32,
    ) -> (
        impl Service<Request<Body>, Response = Response<()>, Error = BoxError, Future = impl Send>
            + Clone
            + Send
            + 'static,
        Arc<AtomicU32>,
    ) {
        let calls = Arc::new(AtomicU32::new(0));
        let seen = Arc::clone(&calls);
        let service = tower::service_fn(move |request: Request<Body>| {
            let seen = Arc::clone(&seen);
            async move {
                let body = request.into_body().collect().await?.to_bytes();
                assert_eq!(&body[..], b"{\"a\":1}", "the body is sent again as it was");
                let n = seen.fetch_add(1, Ordering::SeqCst);
                let mut response = Response::new(());
                if n < busy {
                    *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
                    response
                        .headers_mut()
                        .insert(http::header::RETRY_AFTER, "1".parse().unwrap());
                }
                Ok::<_, BoxError>(response)
            }
        });
        (service, calls)
    }

    fn request() -> Request<Body> {
        Request::patch("/api/v1/namespaces/x/configmaps/y")
            .body(Body::from(b"{\"a\":1}".to_vec()))
            .unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn a_429_is_retried_after_the_time_the_server_asks() {
        let (inner, calls) = server(2);
        let started = tokio::time::Instant::now();
        let response = Retry429Layer.layer(inner).oneshot(request()).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        assert_eq!(started.elapsed(), Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn retries_are_bounded_and_the_last_429_is_returned() {
        let (inner, calls) = server(u32::MAX);
        let response = Retry429Layer.layer(inner).oneshot(request()).await.unwrap();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(calls.load(Ordering::SeqCst), MAX_RETRIES + 1);
    }

    #[test]
    fn a_pause_is_what_the_server_asks_within_bounds_else_a_growing_back_off() {
        let mut response = Response::new(());
        assert_eq!(pause(&response, 0), FIRST_PAUSE);
        assert_eq!(pause(&response, 2), FIRST_PAUSE * 4);
        assert_eq!(pause(&response, 30), MAX_PAUSE);
        response
            .headers_mut()
            .insert(http::header::RETRY_AFTER, "3600".parse().unwrap());
        assert_eq!(pause(&response, 0), MAX_PAUSE);
        response
            .headers_mut()
            .insert(http::header::RETRY_AFTER, "2".parse().unwrap());
        assert_eq!(pause(&response, 0), Duration::from_secs(2));
    }
}
