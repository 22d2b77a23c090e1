//! `/healthz` (the process answers), `/readyz` (ready to serve: the cache synced; with leader
//! election a standby is ready too), `/metrics` (Prometheus text) and `POST /webhook/registry`
//! (re-list the registries now), over HTTP/1 on the metrics address. Each connection is
//! bounded in time, each body in size; nothing here writes to a cluster.

use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt as _, Full, LengthLimitError, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

use super::Shared;

/// The longest one connection is served.
const CONNECTION_LIMIT: Duration = Duration::from_secs(30);
/// The longest a request's head is waited for (a connection that sends nothing is closed).
const HEADER_READ_LIMIT: Duration = Duration::from_secs(5);
/// Connections served at once; more are closed as soon as they are accepted, so that a flood
/// never takes the descriptors reconciles need.
const MAX_CONNECTIONS: usize = 64;
/// The registry webhook's path.
const WEBHOOK: &str = "/webhook/registry";
/// The largest webhook body read.
const WEBHOOK_BODY_LIMIT: usize = 64 * 1024;
/// The longest a webhook body is waited for.
const WEBHOOK_READ_LIMIT: Duration = Duration::from_secs(10);

/// Accepts connections until `stopped` turns `true`.
pub(super) async fn serve(
    listener: tokio::net::TcpListener,
    shared: Arc<Shared>,
    mut stopped: tokio::sync::watch::Receiver<bool>,
) {
    let permits = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stopped.changed() => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::warn!("metrics endpoint: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(permit) = Arc::clone(&permits).try_acquire_owned() else {
            // Over the cap: closed at once.
            drop(stream);
            continue;
        };
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            let _permit = permit;
            let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                let shared = Arc::clone(&shared);
                async move {
                    let response = if request.uri().path() == WEBHOOK {
                        webhook(&shared, request).await
                    } else {
                        respond(&shared, request.uri().path())
                    };
                    Ok::<_, Infallible>(response)
                }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_READ_LIMIT)
                .serve_connection(TokioIo::new(stream), service);
            let _ = tokio::time::timeout(CONNECTION_LIMIT, connection).await;
        });
    }
}

/// `POST /webhook/registry`: a registry published something; the registries are listed again
/// at once (the request asks, it does not say what: its body, at most [`WEBHOOK_BODY_LIMIT`]
/// bytes, is read and dropped). Answered `202 Accepted` before the re-list runs; calls during a
/// re-list coalesce into one more.
async fn webhook(shared: &Shared, request: Request<Incoming>) -> Response<Full<Bytes>> {
    if request.method() != hyper::Method::POST {
        return text(
            StatusCode::METHOD_NOT_ALLOWED,
            "use POST /webhook/registry (a body is optional)\n",
        );
    }
    let limited = Limited::new(request.into_body(), WEBHOOK_BODY_LIMIT);
    match tokio::time::timeout(WEBHOOK_READ_LIMIT, limited.collect()).await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => {
            return text(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("the body is larger than {WEBHOOK_BODY_LIMIT} bytes\n"),
            );
        }
        Ok(Err(_)) | Err(_) => {
            return text(
                StatusCode::BAD_REQUEST,
                "the body could not be read in time\n",
            );
        }
    }
    shared.metrics.webhook();
    shared.relist.notify_one();
    text(
        StatusCode::ACCEPTED,
        "the registries will be listed again\n",
    )
}

fn text(status: StatusCode, body: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_owned())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain"),
    );
    response
}

fn respond(shared: &Shared, path: &str) -> Response<Full<Bytes>> {
    let (status, content_type, body) = match path {
        "/healthz" => (StatusCode::OK, "text/plain", "ok\n".to_owned()),
        "/readyz" if shared.ready.load(Ordering::Relaxed) => match shared.trouble() {
            None => (StatusCode::OK, "text/plain", "ready\n".to_owned()),
            Some(trouble) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "text/plain",
                format!("cannot reconcile: {trouble}\n"),
            ),
        },
        "/readyz" => (
            StatusCode::SERVICE_UNAVAILABLE,
            "text/plain",
            "the Addon cache has not synced yet\n".to_owned(),
        ),
        "/metrics" => (
            StatusCode::OK,
            "text/plain; version=0.0.4",
            format!("{}{}", shared.metrics.render(), shared.reviews.render()),
        ),
        _ => (
            StatusCode::NOT_FOUND,
            "text/plain",
            "not found: try /healthz, /readyz, /metrics or POST /webhook/registry\n".to_owned(),
        ),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    if let Ok(value) = hyper::header::HeaderValue::from_str(content_type) {
        response
            .headers_mut()
            .insert(hyper::header::CONTENT_TYPE, value);
    }
    response
}
