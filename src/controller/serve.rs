//! `/healthz` (the process answers), `/readyz` (ready to serve: the cache synced; with leader
//! election a standby is ready too) and `/metrics` (Prometheus text), over HTTP/1 on the
//! metrics address. Each connection is bounded in time; nothing here writes anything.

use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

use super::Shared;

/// The longest one connection is served.
const CONNECTION_LIMIT: Duration = Duration::from_secs(30);

/// Accepts connections until `stopped` turns `true`.
pub(super) async fn serve(
    listener: tokio::net::TcpListener,
    shared: Arc<Shared>,
    mut stopped: tokio::sync::watch::Receiver<bool>,
) {
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
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request: Request<_>| {
                let response = respond(&shared, request.uri().path());
                async move { Ok::<_, Infallible>(response) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service);
            let _ = tokio::time::timeout(CONNECTION_LIMIT, connection).await;
        });
    }
}

fn respond(shared: &Shared, path: &str) -> Response<Full<Bytes>> {
    let (status, content_type, body) = match path {
        "/healthz" => (StatusCode::OK, "text/plain", "ok\n".to_owned()),
        "/readyz" if shared.ready.load(Ordering::Relaxed) => {
            (StatusCode::OK, "text/plain", "ready\n".to_owned())
        }
        "/readyz" => (
            StatusCode::SERVICE_UNAVAILABLE,
            "text/plain",
            "the Addon cache has not synced yet\n".to_owned(),
        ),
        "/metrics" => (
            StatusCode::OK,
            "text/plain; version=0.0.4",
            shared.metrics.render(),
        ),
        _ => (
            StatusCode::NOT_FOUND,
            "text/plain",
            "not found: try /healthz, /readyz or /metrics\n".to_owned(),
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
