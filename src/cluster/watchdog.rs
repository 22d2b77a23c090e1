//! Bounded requests with a word while they wait: every request made through a
//! [`Cluster`](super::Cluster) fails after the cluster's request timeout, and a request still
//! unanswered after [`NOTICE_AFTER`] is announced once through the cluster's [`Notice`] hook (the
//! CLI prints it on stderr), so a hung API server costs at most the timeout, never in silence.
//!
//! The kube client's own connect/read/write timeouts bound each socket operation; this layer
//! bounds the whole request (a server that trickles bytes forever included).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

/// How long a request may wait before the hook hears of it.
pub const NOTICE_AFTER: Duration = Duration::from_secs(3);

/// Receives "still waiting" lines.
pub type Notice = Arc<dyn Fn(&str) + Send + Sync>;

/// The hook shared by a cluster and its clones (set after the client is built).
#[derive(Clone, Default)]
pub struct NoticeSlot(Arc<Mutex<Option<Notice>>>);

impl std::fmt::Debug for NoticeSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NoticeSlot")
    }
}

impl NoticeSlot {
    /// Sets the hook.
    pub fn set(&self, notice: Notice) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(notice);
    }

    /// The hook, if any.
    pub fn get(&self) -> Option<Notice> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// What a [`WatchdogLayer`] needs to know.
#[derive(Clone, Debug)]
pub struct Watch {
    /// The cluster's name, for the messages.
    pub cluster: String,
    /// Its address.
    pub server: String,
    /// The whole request's limit.
    pub timeout: Duration,
    /// Where notices go.
    pub notice: NoticeSlot,
}

/// A request that took longer than the cluster's request timeout.
#[derive(Debug, thiserror::Error)]
#[error("no answer within {}s (the request timeout; raise it with `--request-timeout` or `ADDONCTL_CLUSTER_TIMEOUT`)", .0.as_secs_f64())]
pub struct TimedOut(pub Duration);

/// The tower layer (see the module documentation).
#[derive(Clone, Debug)]
pub struct WatchdogLayer(pub Watch);

impl<S> tower::Layer<S> for WatchdogLayer {
    type Service = WatchdogService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        WatchdogService {
            inner,
            watch: self.0.clone(),
        }
    }
}

/// The service of [`WatchdogLayer`].
#[derive(Clone, Debug)]
pub struct WatchdogService<S> {
    inner: S,
    watch: Watch,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl<S, B> tower::Service<http::Request<B>> for WatchdogService<S>
where
    S: tower::Service<http::Request<B>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let what = format!("{} {}", request.method(), request.uri().path());
        let response = self.inner.call(request);
        let watch = self.watch.clone();
        Box::pin(async move { guard(response, &watch, &what).await })
    }
}

/// Awaits `response` within the watch's timeout, announcing it once if it is slow.
async fn guard<F, T, E>(response: F, watch: &Watch, what: &str) -> Result<T, BoxError>
where
    F: Future<Output = Result<T, E>>,
    E: Into<BoxError>,
{
    let deadline = tokio::time::sleep(watch.timeout);
    tokio::pin!(response, deadline);
    let notice = tokio::time::sleep(NOTICE_AFTER.min(watch.timeout));
    tokio::pin!(notice);
    // A limit no longer than the notice's delay gives up before there is anything to announce.
    let mut announced = watch.timeout <= NOTICE_AFTER;
    loop {
        tokio::select! {
            result = &mut response => return result.map_err(Into::into),
            () = &mut deadline => return Err(Box::new(TimedOut(watch.timeout))),
            () = &mut notice, if !announced => {
                announced = true;
                if let Some(hook) = watch.notice.get() {
                    let who = if watch.cluster == super::set::LOCAL {
                        "the control plane".to_owned()
                    } else {
                        format!("cluster `{}`", watch.cluster)
                    };
                    hook(&format!(
                        "waiting for {who} ({}) to answer {what}: {}s so far, giving up after {}s",
                        watch.server,
                        NOTICE_AFTER.as_secs(),
                        watch.timeout.as_secs()
                    ));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watch(timeout: Duration, seen: &Arc<Mutex<Vec<String>>>) -> Watch {
        let slot = NoticeSlot::default();
        let sink = Arc::clone(seen);
        slot.set(Arc::new(move |line: &str| {
            sink.lock().unwrap().push(line.to_owned());
        }));
        Watch {
            cluster: "local".to_owned(),
            server: "https://127.0.0.1:1".to_owned(),
            timeout,
            notice: slot,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_that_never_answers_is_announced_once_then_fails_at_the_timeout() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let started = tokio::time::Instant::now();
        let never = std::future::pending::<Result<(), std::io::Error>>();
        let error = guard(never, &watch(Duration::from_secs(10), &seen), "GET /api")
            .await
            .unwrap_err();
        assert_eq!(started.elapsed(), Duration::from_secs(10));
        assert!(
            error.to_string().contains("no answer within 10s"),
            "{error}"
        );
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert!(
            seen[0].starts_with(
                "waiting for the control plane (https://127.0.0.1:1) to answer GET /api"
            ),
            "{seen:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_quick_answer_passes_through_without_a_notice() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let quick = async { Ok::<_, std::io::Error>(7) };
        let answer = guard(quick, &watch(Duration::from_secs(10), &seen), "GET /api")
            .await
            .unwrap();
        assert_eq!(answer, 7);
        assert!(seen.lock().unwrap().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_limit_shorter_than_the_notice_delay_fails_without_announcing() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let never = std::future::pending::<Result<(), std::io::Error>>();
        let error = guard(never, &watch(Duration::from_secs(2), &seen), "GET /api")
            .await
            .unwrap_err();
        assert!(error.to_string().contains("no answer within 2s"), "{error}");
        assert!(
            seen.lock().unwrap().is_empty(),
            "{:?}",
            seen.lock().unwrap()
        );
    }
}
