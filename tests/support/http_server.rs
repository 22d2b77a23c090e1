//! A static HTTP(S) file server on 127.0.0.1 for the Helm repository tests, with the faults real
//! registries have.
//!
//! It runs on its own thread and runtime (so that tests may block while it serves), on a port the
//! OS picks, and stops when dropped. It serves an in-memory map of path → bytes with `ETag`s
//! (answering `If-None-Match` with 304), counts requests, can require basic auth or a bearer
//! token, can speak TLS with a certificate from a throw-away CA ([`TestCa`]), and can be told to
//! misbehave for the next requests: answer a status (with headers), hang, or cut a body short.

use std::collections::{BTreeMap, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use sha2::{Digest, Sha256};
use tokio_rustls::rustls;

type Body = http_body_util::combinators::BoxBody<Bytes, std::io::Error>;

/// A misbehaviour for one request.
#[derive(Debug, Clone)]
pub enum Fault {
    /// Answer with this status, these headers and a short body.
    Status(u16, Vec<(String, String)>),
    /// Never answer.
    Hang,
    /// Announce the full length, send half the body, then close the connection.
    Truncate,
}

/// A throw-away certificate authority and a server certificate for 127.0.0.1 and localhost.
pub struct TestCa {
    /// The CA certificate (PEM), what clients trust.
    pub ca_pem: String,
    server_cert: Vec<u8>,
    server_key: Vec<u8>,
    server_cert_pem: String,
    server_key_pem: String,
}

impl TestCa {
    /// Generates a CA and a server certificate signed by it.
    pub fn new() -> Self {
        let ca_key = rcgen::KeyPair::generate().expect("CA key");
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "addonctl test CA");
        ca_params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
        ];
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).expect("CA");
        let server_key = rcgen::KeyPair::generate().expect("server key");
        let mut params =
            rcgen::CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
                .expect("server params");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "127.0.0.1");
        let cert = params.signed_by(&server_key, &ca).expect("server cert");
        TestCa {
            ca_pem: ca.pem(),
            server_cert: cert.der().to_vec(),
            server_key: server_key.serialize_der(),
            server_cert_pem: cert.pem(),
            server_key_pem: server_key.serialize_pem(),
        }
    }

    /// Writes the server certificate and key as PEM files into `dir` (for servers of other
    /// programs); returns their paths.
    pub fn write_server_pem(
        &self,
        dir: &std::path::Path,
    ) -> (std::path::PathBuf, std::path::PathBuf) {
        let (cert, key) = (dir.join("server.crt"), dir.join("server.key"));
        std::fs::write(&cert, &self.server_cert_pem).expect("write the certificate");
        std::fs::write(&key, &self.server_key_pem).expect("write the key");
        (cert, key)
    }

    fn server_config(&self) -> rustls::ServerConfig {
        rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![rustls::pki_types::CertificateDer::from(
                self.server_cert.clone(),
            )],
            rustls::pki_types::PrivateKeyDer::Pkcs8(self.server_key.clone().into()),
        )
        .expect("server config")
    }
}

#[derive(Default)]
struct State {
    files: Mutex<BTreeMap<String, Vec<u8>>>,
    faults: Mutex<VecDeque<Fault>>,
    always: Mutex<Option<Fault>>,
    requests: AtomicU64,
    paths: Mutex<Vec<String>>,
    authorization: Option<String>,
}

/// A running server; stops when dropped.
pub struct TestServer {
    /// `http://127.0.0.1:PORT` or `https://127.0.0.1:PORT` (no trailing slash).
    pub url: String,
    state: Arc<State>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Builds a [`TestServer`].
#[derive(Default)]
pub struct TestServerBuilder {
    authorization: Option<String>,
    tls: Option<rustls::ServerConfig>,
    files: BTreeMap<String, Vec<u8>>,
}

impl TestServerBuilder {
    /// Requires basic auth with these credentials (401 otherwise).
    pub fn basic_auth(mut self, username: &str, password: &str) -> Self {
        let encoded =
            base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"));
        self.authorization = Some(format!("Basic {encoded}"));
        self
    }

    /// Requires `Authorization: Bearer <token>` (401 otherwise).
    pub fn bearer(mut self, token: &str) -> Self {
        self.authorization = Some(format!("Bearer {token}"));
        self
    }

    /// Serves HTTPS with a certificate of `ca`.
    pub fn tls(mut self, ca: &TestCa) -> Self {
        self.tls = Some(ca.server_config());
        self
    }

    /// Serves every file under `dir` at `/<relative path>`.
    pub fn dir(mut self, dir: &std::path::Path) -> Self {
        for entry in std::fs::read_dir(dir).expect("read_dir") {
            let path = entry.expect("entry").path();
            if path.is_file() {
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                self.files
                    .insert(format!("/{name}"), std::fs::read(&path).expect("read"));
            }
        }
        self
    }

    /// Starts the server.
    pub fn start(self) -> TestServer {
        let state = Arc::new(State {
            files: Mutex::new(self.files),
            authorization: self.authorization,
            ..State::default()
        });
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        listener.set_nonblocking(true).expect("nonblocking");
        let address = listener.local_addr().expect("address");
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        let (shutdown, stop) = tokio::sync::oneshot::channel();
        let served = Arc::clone(&state);
        let tls = self
            .tls
            .map(|c| tokio_rustls::TlsAcceptor::from(Arc::new(c)));
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("server runtime");
            runtime.block_on(serve(listener, served, tls, stop));
            runtime.shutdown_timeout(Duration::from_millis(100));
        });
        TestServer {
            url: format!("{scheme}://{address}"),
            state,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }
}

impl TestServer {
    /// A builder.
    pub fn builder() -> TestServerBuilder {
        TestServerBuilder::default()
    }

    /// Serves `bytes` at `path` (from now on).
    pub fn put(&self, path: &str, bytes: impl Into<Vec<u8>>) {
        self.state
            .files
            .lock()
            .unwrap()
            .insert(path.to_owned(), bytes.into());
    }

    /// The next request gets `fault` (faults queue up).
    pub fn fail_next(&self, fault: Fault) {
        self.state.faults.lock().unwrap().push_back(fault);
    }

    /// Every request gets `fault` (until [`TestServer::heal`]).
    pub fn fail_always(&self, fault: Fault) {
        *self.state.always.lock().unwrap() = Some(fault);
    }

    /// Stops misbehaving.
    pub fn heal(&self) {
        *self.state.always.lock().unwrap() = None;
        self.state.faults.lock().unwrap().clear();
    }

    /// Requests received so far.
    pub fn requests(&self) -> u64 {
        self.state.requests.load(Ordering::Relaxed)
    }

    /// The paths requested so far, in order.
    pub fn paths(&self) -> Vec<String> {
        self.state.paths.lock().unwrap().clone()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve(
    listener: std::net::TcpListener,
    state: Arc<State>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) {
    let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
    loop {
        let accepted = tokio::select! {
            _ = &mut stop => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else { continue };
        let state = Arc::clone(&state);
        let tls = tls.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let state = Arc::clone(&state);
                async move { Ok::<_, Infallible>(handle(&state, request).await) }
            });
            let builder = hyper::server::conn::http1::Builder::new();
            match tls {
                Some(acceptor) => {
                    if let Ok(stream) = acceptor.accept(stream).await {
                        let _ = builder
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    }
                }
                None => {
                    let _ = builder
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                }
            }
        });
    }
}

fn full(status: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    let mut response = Response::new(
        Full::new(body.into())
            .map_err(|never: Infallible| match never {})
            .boxed(),
    );
    *response.status_mut() = status;
    response
}

async fn handle(state: &State, request: Request<Incoming>) -> Response<Body> {
    state.requests.fetch_add(1, Ordering::Relaxed);
    let path = request.uri().path().to_owned();
    state.paths.lock().unwrap().push(path.clone());
    let fault = state
        .faults
        .lock()
        .unwrap()
        .pop_front()
        .or_else(|| state.always.lock().unwrap().clone());
    match &fault {
        Some(Fault::Status(status, headers)) => {
            let mut response = full(
                StatusCode::from_u16(*status).unwrap(),
                format!("injected {status}"),
            );
            for (name, value) in headers {
                response.headers_mut().insert(
                    hyper::header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                    value.parse().unwrap(),
                );
            }
            return response;
        }
        Some(Fault::Hang) => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            return full(StatusCode::OK, "");
        }
        Some(Fault::Truncate) | None => {}
    }
    if let Some(expected) = &state.authorization {
        let given = request
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        if given != Some(expected.as_str()) {
            let mut response = full(StatusCode::UNAUTHORIZED, "unauthorized");
            response.headers_mut().insert(
                hyper::header::WWW_AUTHENTICATE,
                "Basic realm=\"charts\"".parse().unwrap(),
            );
            return response;
        }
    }
    let Some(bytes) = state.files.lock().unwrap().get(&path).cloned() else {
        return full(StatusCode::NOT_FOUND, "not found");
    };
    let etag = format!(
        "\"{}\"",
        addonctl::source::cache::hex(&Sha256::digest(&bytes)[..8])
    );
    if request
        .headers()
        .get(hyper::header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        == Some(etag.as_str())
    {
        let mut response = full(StatusCode::NOT_MODIFIED, "");
        response
            .headers_mut()
            .insert(hyper::header::ETAG, etag.parse().unwrap());
        return response;
    }
    if matches!(fault, Some(Fault::Truncate)) {
        let half = Bytes::from(bytes[..bytes.len() / 2].to_vec());
        let frames = futures::stream::iter(vec![
            Ok(Frame::data(half)),
            Err(std::io::Error::other("cut short")),
        ]);
        let mut response = Response::new(StreamBody::new(frames).boxed());
        response.headers_mut().insert(
            hyper::header::CONTENT_LENGTH,
            bytes.len().to_string().parse().unwrap(),
        );
        return response;
    }
    let mut response = full(StatusCode::OK, bytes);
    response
        .headers_mut()
        .insert(hyper::header::ETAG, etag.parse().unwrap());
    response
}

/// The address of a listener that accepts connections and never reads or answers them (a
/// registry that hangs before any HTTP is spoken). Lives as long as the test process.
pub fn black_hole() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address");
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten().take(64) {
            held.push(stream);
        }
    });
    address
}
