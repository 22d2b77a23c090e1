//! The kube client's HTTP stack, built here rather than by `kube::Client::try_from` so that
//! every connection sets `TCP_NODELAY` (kube's default `HttpConnector` leaves Nagle's algorithm
//! on, and a small request written in two segments then waits for the server's delayed ACK,
//! ~40 ms per request on Linux) and HTTP/2 is used where the server offers it.
//!
//! The stack is kube's own (base URI, authentication, extra headers, rustls, connect/read/write
//! timeouts) without its tracing spans, plus the retry of requests the server answers 429
//! ([`super::retry`]). A configuration with a proxy keeps kube's builder (the
//! proxy connectors are kube's), and so does one whose credentials come from an `exec` plugin
//! (kube bounds such a client by the plugin certificate's expiry); both keep Nagle's algorithm.

use std::time::Duration;

use http::{Request, Response};
use http_body_util::BodyExt;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use kube::client::{Body, ClientBuilder, ConfigExt, DynBody};
use tower::util::BoxService;
use tower::{BoxError, ServiceBuilder, ServiceExt};

/// The service every cluster client is built on.
pub type Stack = BoxService<Request<Body>, Response<Box<DynBody>>, BoxError>;

use crate::net::tcp_connector;

/// TLS over [`tcp_connector`] offering HTTP/2 and HTTP/1.1 by ALPN (kube's own connector offers
/// HTTP/1.1 only): with a server that accepts HTTP/2 (kube-apiserver does), every request of
/// the process to it shares one multiplexed connection, and no further TLS handshake is made
/// when requests run concurrently. A config naming its TLS server name keeps kube's connector.
fn https_connector(
    config: &kube::Config,
) -> Result<hyper_rustls::HttpsConnector<HttpConnector>, kube::Error> {
    if config.tls_server_name.is_some() {
        return config.rustls_https_connector_with_connector(tcp_connector());
    }
    Ok(hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls_config(config)?)
        .https_or_http()
        .enable_http1()
        .enable_http2()
        .wrap_connector(tcp_connector()))
}

/// kube's TLS configuration, but for a cluster without a CA of its own: kube then trusts the
/// system's roots, which it reads and parses from disk again for every client (a fleet of a
/// thousand clusters paid about 300 PEM certificates each, and kept its own copy of them). Here
/// they are read once per process and shared by every client ([`native_roots`]); a plain
/// `http://` endpoint and `insecure-skip-tls-verify` need none. Where the roots cannot be read,
/// kube's own way is taken (and says why).
fn tls_config(config: &kube::Config) -> Result<rustls::ClientConfig, kube::Error> {
    let mut tls = verified_tls_config(config)?;
    // A client talks to one API server: rustls's default session store (room for 256 tickets,
    // about 14 KiB allocated up front) would be kept by every cluster of a fleet.
    tls.resumption = rustls::client::Resumption::in_memory_sessions(TICKETS_PER_CLIENT);
    Ok(tls)
}

/// The session tickets a client keeps: rustls keeps at most this many per server.
const TICKETS_PER_CLIENT: usize = 8;

/// kube's TLS configuration, with the system's roots shared (see [`tls_config`]).
fn verified_tls_config(config: &kube::Config) -> Result<rustls::ClientConfig, kube::Error> {
    if config.root_cert.is_some() {
        return config.rustls_client_config();
    }
    let mut bare = config.clone();
    bare.root_cert = Some(Vec::new());
    let mut tls = bare.rustls_client_config()?;
    let plain = config.cluster_url.scheme_str() == Some("http");
    if plain || config.accept_invalid_certs {
        return Ok(tls);
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let verifier = native_roots().and_then(|roots| {
        rustls::client::WebPkiServerVerifier::builder_with_provider(roots, provider)
            .build()
            .ok()
    });
    let Some(verifier) = verifier else {
        return config.rustls_client_config();
    };
    tls.dangerous().set_certificate_verifier(verifier);
    Ok(tls)
}

/// The system's trust anchors, read once per process (`None` when none can be read).
fn native_roots() -> Option<std::sync::Arc<rustls::RootCertStore>> {
    static ROOTS: std::sync::OnceLock<Option<std::sync::Arc<rustls::RootCertStore>>> =
        std::sync::OnceLock::new();
    ROOTS
        .get_or_init(|| {
            let found = rustls_native_certs::load_native_certs();
            let mut roots = rustls::RootCertStore::empty();
            roots.add_parsable_certificates(found.certs);
            (!roots.is_empty()).then(|| std::sync::Arc::new(roots))
        })
        .clone()
}

/// Longest a pooled connection is kept idle.
const MAX_POOL_IDLE: Duration = Duration::from_secs(90);

/// How long a connection may sit idle in the pool: half the read timeout (at most
/// [`MAX_POOL_IDLE`]). The read timeout wraps the connection's stream, so an idle connection is
/// cut by it after that long; one kept in the pool as long would be handed out just as it is cut
/// (`SendRequest` errors when requests to a cluster are spaced about one timeout apart).
fn pool_idle_timeout(read_timeout: Option<Duration>) -> Duration {
    read_timeout.map_or(MAX_POOL_IDLE, |read| (read / 2).min(MAX_POOL_IDLE))
}

/// How often an HTTP/2 connection with a stream open (a watch) is pinged: a third of the read
/// timeout (1–30 s). The read timeout wraps the connection's stream, so a watch that sees no
/// event for that long would be cut; the server's answers to the pings are reads, and keep it
/// open (and a connection whose server stopped answering is found within one interval plus
/// the ping's timeout).
fn keep_alive_interval(read_timeout: Option<Duration>) -> Duration {
    read_timeout.map_or(MAX_KEEP_ALIVE, |read| {
        (read / 3).clamp(Duration::from_secs(1), MAX_KEEP_ALIVE)
    })
}

/// Longest interval between the pings of a connection with a stream open.
const MAX_KEEP_ALIVE: Duration = Duration::from_secs(30);

/// Whether [`builder`] builds addonctl's own stack for `config` (HTTP/2 offered, pings while a
/// stream is open), not kube's (a proxy, an `exec` plugin).
pub fn own_stack(config: &kube::Config) -> bool {
    config.proxy_url.is_none() && config.auth_info.exec.is_none()
}

/// The client builder of a cluster's config (see the module documentation).
pub fn builder(config: &kube::Config) -> Result<ClientBuilder<Stack>, kube::Error> {
    if !own_stack(config) {
        return ClientBuilder::try_from(config.clone());
    }
    let https = https_connector(config)?;
    let mut connector = hyper_timeout::TimeoutConnector::new(https);
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    let client: hyper_util::client::legacy::Client<_, Body> =
        hyper_util::client::legacy::Builder::new(TokioExecutor::new())
            .pool_idle_timeout(pool_idle_timeout(config.read_timeout))
            .timer(hyper_util::rt::TokioTimer::new())
            .http2_keep_alive_interval(keep_alive_interval(config.read_timeout))
            .http2_keep_alive_timeout(
                config
                    .read_timeout
                    .unwrap_or(MAX_KEEP_ALIVE)
                    .min(MAX_KEEP_ALIVE),
            )
            .build(connector);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(BoxError::from)
        .layer(super::retry::Retry429Layer)
        .service(client)
        .map_response(|response: Response<hyper::body::Incoming>| {
            response.map(|body| Box::new(body.map_err(BoxError::from)) as Box<DynBody>)
        });
    Ok(ClientBuilder::new(
        BoxService::new(service),
        config.default_namespace.clone(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watch_is_pinged_well_within_the_read_timeout() {
        assert_eq!(
            keep_alive_interval(Some(Duration::from_secs(30))),
            Duration::from_secs(10)
        );
        assert_eq!(
            keep_alive_interval(Some(Duration::from_millis(900))),
            Duration::from_secs(1)
        );
        assert_eq!(
            keep_alive_interval(Some(Duration::from_secs(600))),
            MAX_KEEP_ALIVE
        );
        assert_eq!(keep_alive_interval(None), MAX_KEEP_ALIVE);
    }

    #[test]
    fn idle_connections_leave_the_pool_well_before_the_read_timeout_cuts_them() {
        let read = Duration::from_secs(30);
        assert_eq!(pool_idle_timeout(Some(read)), Duration::from_secs(15));
        assert!(pool_idle_timeout(Some(read)) < read);
        assert_eq!(
            pool_idle_timeout(Some(Duration::from_secs(600))),
            MAX_POOL_IDLE
        );
        assert_eq!(pool_idle_timeout(None), MAX_POOL_IDLE);
    }

    #[tokio::test]
    async fn connections_are_made_with_nagle_off() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let accept = tokio::spawn(async move { listener.accept().await.map(|(s, _)| s) });
        let mut connector = tcp_connector();
        let uri: http::Uri = format!("http://{address}/").parse().unwrap();
        let stream = tower::Service::call(&mut connector, uri).await.unwrap();
        assert!(stream.inner().nodelay().unwrap(), "TCP_NODELAY is not set");
        drop(accept.await);
    }

    #[tokio::test]
    async fn every_request_names_addonctl_and_its_version_as_the_user_agent() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let served = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut head = Vec::new();
            let mut buf = [0u8; 4096];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = stream.read(&mut buf).await.unwrap();
                if n == 0 {
                    break;
                }
                head.extend_from_slice(&buf[..n]);
            }
            let body = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}"#;
            let response = format!(
                "HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            stream.write_all(response.as_bytes()).await.unwrap();
            String::from_utf8_lossy(&head).to_lowercase()
        });
        let cluster =
            crate::cluster::Cluster::from_config("m1", config(&format!("http://{address}")))
                .unwrap();
        let gvk = kube::core::GroupVersionKind::gvk("", "v1", "Namespace");
        let _ = cluster.get(&gvk, None, "web").await;
        let head = served.await.unwrap();
        let agent = crate::cluster::user_agent();
        assert!(
            agent.starts_with(concat!("addonctl/", env!("CARGO_PKG_VERSION"), " (")),
            "{agent}"
        );
        assert!(
            head.contains(&format!("\r\nuser-agent: {}\r\n", agent.to_lowercase())),
            "{head}"
        );
    }

    fn config(url: &str) -> kube::Config {
        kube::Config::new(url.parse().expect("a URL"))
    }

    #[test]
    fn clusters_without_a_ca_of_their_own_share_the_roots_read_once() {
        let first = tls_config(&config("https://127.0.0.1:6443"));
        let second = tls_config(&config("https://127.0.0.1:6444"));
        assert!(first.is_ok() && second.is_ok());
        let (a, b) = (native_roots(), native_roots());
        if let (Some(a), Some(b)) = (a, b) {
            assert!(std::sync::Arc::ptr_eq(&a, &b), "the roots are read once");
            assert!(!a.is_empty());
        }
        assert!(tls_config(&config("http://127.0.0.1:8080")).is_ok());
    }
}
