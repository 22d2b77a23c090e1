//! The HTTP layer every HTTP-based reader uses (Helm, Gitee, GitLab, …).
//!
//! One [`HttpClient`] per registry, built from [`HttpOptions`]. It owns everything a reader should
//! not have to think about:
//!
//! - **Limits.** A connect timeout and one total timeout per request (headers and body, every
//!   retry and backoff included: a hanging server costs [`HttpOptions::timeout`]), at most
//!   [`HttpOptions::concurrency`] requests in flight (a semaphore, default 8), and bodies read as a
//!   stream and capped: a body over [`HttpOptions::max_body_bytes`] (or the limit passed to
//!   [`HttpClient::get_limited`]) fails with [`Error::TooLarge`] without being read any further.
//! - **Retries.** Timeouts, connection failures, 429 and 5xx answers are retried up to
//!   [`HttpOptions::retries`] times with exponential backoff, honouring `Retry-After` (seconds or an
//!   HTTP date) and GitHub-style `X-RateLimit-Reset` (also `RateLimit-Reset`). A server that asks
//!   for a wait longer than [`HttpOptions::max_retry_wait`] is not waited for: the call fails at
//!   once with [`Error::RateLimited`] naming the reset time.
//! - **Status mapping.** Every status is checked: 2xx and 304 are answers; 401 and 403 are
//!   [`Error::Unauthorized`] (403 with rate-limit headers is [`Error::RateLimited`]); 404 is
//!   [`Error::NotFound`]; 429 is [`Error::RateLimited`]; anything else is [`Error::Backend`].
//!   Redirects are followed (at most 10) by this layer itself, so credentials are only ever sent
//!   to the credentials' origin.
//! - **Credentials.** Basic auth, a bearer token and extra headers (e.g. `PRIVATE-TOKEN`) are sent
//!   as sensitive headers. URLs in errors and logs are redacted: user info is dropped and the
//!   values of query parameters that look like credentials are replaced by `***`.
//! - **TLS.** rustls with the system's roots, plus an optional PEM CA bundle; verification can be
//!   switched off (`insecure_skip_tls`) for test registries.
//!
//! ```no_run
//! # async fn demo() -> addonctl::source::Result<()> {
//! use addonctl::source::http::{Auth, HttpClient, HttpOptions};
//! let client = HttpClient::new("my-registry", HttpOptions {
//!     auth: Auth::Bearer("t0ken".into()),
//!     ..HttpOptions::default()
//! })?;
//! let response = client.get("https://charts.example.invalid/index.yaml", &[]).await?;
//! assert_eq!(response.status, 200);
//! # Ok(()) }
//! ```

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::header::{HeaderMap, HeaderName, HeaderValue, LOCATION, RETRY_AFTER};
use reqwest::Url;
use tokio::sync::Semaphore;

use crate::source::{Error, Result};

pub use crate::model::secret::redact;
use crate::model::secret::{masked, ExposeSecret as _, SecretString};

/// How many redirects one request follows.
const MAX_REDIRECTS: usize = 10;

/// Credentials sent with every request to the credentials' origin.
#[derive(Clone, Default)]
pub enum Auth {
    /// No credentials.
    #[default]
    None,
    /// HTTP basic authentication.
    Basic {
        /// The user name.
        username: String,
        /// The password.
        password: SecretString,
    },
    /// `Authorization: Bearer <token>`.
    Bearer(SecretString),
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auth::None => f.write_str("None"),
            Auth::Basic { username, password } => {
                write!(
                    f,
                    "Basic({username}, {})",
                    masked(Some(password)).unwrap_or_default()
                )
            }
            Auth::Bearer(token) => write!(f, "Bearer({})", masked(Some(token)).unwrap_or_default()),
        }
    }
}

/// How an [`HttpClient`] behaves. `Default` gives sensible values for public registries.
#[derive(Clone)]
pub struct HttpOptions {
    /// Limit for one request, from sending it to the end of its body, every retry and wait
    /// included (default 30 s).
    pub timeout: Duration,
    /// Limit for opening a connection (default 10 s).
    pub connect_timeout: Duration,
    /// The largest body [`HttpClient::get`] reads (default 32 MiB).
    pub max_body_bytes: u64,
    /// How many times a failed request is retried (default 3).
    pub retries: u32,
    /// The first backoff between retries, doubled each time (default 250 ms).
    pub initial_backoff: Duration,
    /// The longest wait between retries; a server asking for more is not waited for (default 10 s).
    pub max_retry_wait: Duration,
    /// Requests in flight at once (default 8).
    pub concurrency: usize,
    /// Extra trusted CA certificates, PEM (one or more).
    pub ca_bundle: Option<Vec<u8>>,
    /// Accept any server certificate (test registries only).
    pub insecure_skip_tls: bool,
    /// Credentials.
    pub auth: Auth,
    /// Extra headers sent with every request to the credentials' origin (treated as secret).
    pub headers: Vec<(String, String)>,
    /// The only origin (`scheme://host:port`, taken from this URL) that receives the credentials
    /// and extra headers; `None` = the origin of each URL passed to [`HttpClient::get`]. Redirects
    /// to another origin never carry them.
    pub credentials_origin: Option<String>,
}

impl HttpOptions {
    /// The defaults with the request timeout from `ADDONCTL_REGISTRY_TIMEOUT` (seconds, every
    /// retry included); `None` when it is not set. A value that is not a positive number is
    /// ignored with a warning.
    pub fn from_env() -> Option<Self> {
        let raw = std::env::var("ADDONCTL_REGISTRY_TIMEOUT").ok()?;
        match raw.trim().parse::<f64>() {
            Ok(seconds) if seconds > 0.0 && seconds <= 86_400.0 => Some(HttpOptions {
                timeout: Duration::from_secs_f64(seconds),
                connect_timeout: Duration::from_secs_f64(seconds.min(10.0)),
                ..HttpOptions::default()
            }),
            _ => {
                tracing::warn!(
                    "ADDONCTL_REGISTRY_TIMEOUT=`{raw}` is not a number of seconds; using 30"
                );
                None
            }
        }
    }
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            max_body_bytes: 32 * 1024 * 1024,
            retries: 3,
            initial_backoff: Duration::from_millis(250),
            max_retry_wait: Duration::from_secs(10),
            concurrency: 8,
            ca_bundle: None,
            insecure_skip_tls: false,
            auth: Auth::None,
            headers: Vec::new(),
            credentials_origin: None,
        }
    }
}

impl fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpOptions")
            .field("timeout", &self.timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("retries", &self.retries)
            .field("max_retry_wait", &self.max_retry_wait)
            .field("concurrency", &self.concurrency)
            .field("ca_bundle", &self.ca_bundle.as_ref().map(Vec::len))
            .field("insecure_skip_tls", &self.insecure_skip_tls)
            .field("auth", &self.auth)
            .field(
                "headers",
                &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// A successful answer (2xx, or 304 Not Modified with an empty body).
#[derive(Debug, Clone)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The response headers.
    pub headers: HeaderMap,
    /// The whole body (at most the limit).
    pub body: Vec<u8>,
    /// The URL that answered, after redirects (for joining relative URLs).
    pub url: String,
}

impl Response {
    /// Whether the server answered 304 Not Modified.
    pub fn not_modified(&self) -> bool {
        self.status == 304
    }

    /// A header's value as text, if present and printable.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// One request for [`HttpClient::call`].
#[derive(Debug, Clone)]
pub struct Call<'a> {
    /// The method.
    pub method: http::Method,
    /// The URL.
    pub url: &'a str,
    /// Extra headers (not secret).
    pub headers: &'a [(&'a str, &'a str)],
    /// The body sent, when any (sent again on a retry or a 307/308 redirect).
    pub body: Option<bytes::Bytes>,
    /// The largest body read.
    pub limit: u64,
    /// Credentials for this call only, sent to the origin of `url` and nowhere else; `None`
    /// sends the client's own ([`HttpOptions::auth`]) to the credentials' origin.
    pub auth: Option<&'a Auth>,
    /// Statuses answered as a [`Response`] instead of an error (e.g. 401 for a token
    /// challenge).
    pub answers: &'a [u16],
}

impl<'a> Call<'a> {
    /// `GET url` with the default body limit (32 MiB) and the client's credentials.
    pub fn get(url: &'a str) -> Self {
        Call {
            method: http::Method::GET,
            url,
            headers: &[],
            body: None,
            limit: 32 * 1024 * 1024,
            auth: None,
            answers: &[],
        }
    }
}

/// An HTTP client for one registry. Cheap to clone (clones share the limits and the counter).
#[derive(Clone)]
pub struct HttpClient {
    client: reqwest::Client,
    registry: String,
    options: Arc<HttpOptions>,
    credentials_origin: Option<String>,
    semaphore: Arc<Semaphore>,
    requests: Arc<AtomicU64>,
}

impl fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClient")
            .field("registry", &self.registry)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// What one attempt ended with.
enum Attempt {
    Done(Response),
    /// Retry after at least this long (a server hint or the backoff), with the error to return
    /// when no retry is left.
    Retry(Option<Duration>, Error),
    Fail(Error),
}

impl HttpClient {
    /// Builds a client for `registry` (the name used in errors). Fails when the CA bundle cannot
    /// be read.
    pub fn new(registry: &str, options: HttpOptions) -> Result<Self> {
        let mut builder = reqwest::Client::builder()
            .timeout(options.timeout)
            .connect_timeout(options.connect_timeout)
            .redirect(reqwest::redirect::Policy::none())
            // Nagle's algorithm off (reqwest's default too, said here so that it stays so).
            .tcp_nodelay(true)
            .user_agent(concat!("addonctl/", env!("CARGO_PKG_VERSION")));
        if let Some(pem) = &options.ca_bundle {
            let certificates =
                reqwest::Certificate::from_pem_bundle(pem).map_err(|e| Error::InvalidContent {
                    registry: registry.to_owned(),
                    message: format!("the CA bundle is not valid PEM: {}", e.without_url()),
                })?;
            if certificates.is_empty() {
                return Err(Error::InvalidContent {
                    registry: registry.to_owned(),
                    message: "the CA bundle holds no certificate".to_owned(),
                });
            }
            for certificate in certificates {
                builder = builder.add_root_certificate(certificate);
            }
        }
        if options.insecure_skip_tls {
            builder = builder.danger_accept_invalid_certs(true);
        }
        let client = builder.build().map_err(|e| Error::Backend {
            registry: registry.to_owned(),
            message: format!("cannot set up the HTTP client: {}", e.without_url()),
            source: None,
        })?;
        let credentials_origin = options
            .credentials_origin
            .as_deref()
            .and_then(|u| Url::parse(u).ok())
            .map(|u| origin(&u));
        Ok(HttpClient {
            client,
            registry: registry.to_owned(),
            semaphore: Arc::new(Semaphore::new(options.concurrency.max(1))),
            options: Arc::new(options),
            credentials_origin,
            requests: Arc::new(AtomicU64::new(0)),
        })
    }

    /// The registry name used in errors.
    pub fn registry(&self) -> &str {
        &self.registry
    }

    /// The options the client was built with.
    pub fn options(&self) -> &HttpOptions {
        &self.options
    }

    /// How many HTTP requests (including retries and redirects) this client and its clones sent.
    pub fn request_count(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// `GET url` with extra `headers`, the body capped at [`HttpOptions::max_body_bytes`].
    pub async fn get(&self, url: &str, headers: &[(&str, &str)]) -> Result<Response> {
        self.get_limited(url, headers, self.options.max_body_bytes)
            .await
    }

    /// `GET url` with extra `headers`, the body capped at `limit` bytes.
    pub async fn get_limited(
        &self,
        url: &str,
        headers: &[(&str, &str)],
        limit: u64,
    ) -> Result<Response> {
        self.call(&Call {
            headers,
            limit,
            ..Call::get(url)
        })
        .await
    }

    /// One request as `call` describes it, with this client's limits, retries and status
    /// mapping. A call's own credentials ([`Call::auth`]) go to the origin of [`Call::url`]
    /// only; the client's ([`HttpOptions::auth`]) to the credentials' origin only. Neither
    /// follows a redirect to another origin.
    pub async fn call(&self, call: &Call<'_>) -> Result<Response> {
        let url = call.url;
        let start = Url::parse(url).map_err(|e| Error::InvalidContent {
            registry: self.registry.clone(),
            message: format!("`{}` is not a valid URL: {e}", redact(url)),
        })?;
        if !matches!(start.scheme(), "http" | "https") {
            return Err(Error::InvalidContent {
                registry: self.registry.clone(),
                message: format!("`{}` is not an http or https URL", redact(start.as_str())),
            });
        }
        let credentials_origin = if call.auth.is_some() {
            origin(&start)
        } else {
            self.credentials_origin
                .clone()
                .unwrap_or_else(|| origin(&start))
        };
        let mut retries_left = self.options.retries;
        let mut attempt_number = 0u32;
        // One deadline over every attempt, redirect and wait: a hanging server costs
        // `timeout`, not `timeout` per retry.
        let deadline = tokio::time::Instant::now() + self.options.timeout;
        loop {
            let attempt = self.attempt(&start, call, &credentials_origin);
            let Ok(outcome) = tokio::time::timeout_at(deadline, attempt).await else {
                return Err(self.out_of_time(&start, attempt_number + 1, None));
            };
            match outcome {
                Attempt::Done(response) => return Ok(response),
                Attempt::Fail(error) => return Err(error),
                Attempt::Retry(hint, error) => {
                    if retries_left == 0 {
                        return Err(error);
                    }
                    retries_left -= 1;
                    let backoff = self.backoff(attempt_number);
                    attempt_number += 1;
                    let wait = hint.map_or(backoff, |h| h.max(backoff));
                    if tokio::time::Instant::now() + wait >= deadline {
                        return Err(self.out_of_time(&start, attempt_number, Some(&error)));
                    }
                    tracing::debug!(
                        registry = %self.registry,
                        url = %redact(start.as_str()),
                        "retrying in {} ms: {error}",
                        wait.as_millis()
                    );
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    /// The error of a request that used up [`HttpOptions::timeout`] over all its attempts.
    fn out_of_time(&self, url: &Url, attempts: u32, last: Option<&Error>) -> Error {
        let limit = self.options.timeout.as_secs_f64();
        let shown = redact(url.as_str());
        let tries = if attempts == 1 {
            String::new()
        } else {
            format!(" ({attempts} attempts)")
        };
        let last = last
            .map(|e| format!("; last error: {e}"))
            .unwrap_or_default();
        self.backend(format!(
            "`{shown}` did not answer within {limit} s{tries}{last}"
        ))
    }

    fn backoff(&self, attempt: u32) -> Duration {
        let base = self
            .options
            .initial_backoff
            .saturating_mul(2u32.saturating_pow(attempt.min(16)));
        // Up to 25 % jitter so that concurrent readers do not retry in lock-step.
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let jitter = base.mul_f64(f64::from(nanos % 1000) / 4000.0);
        (base + jitter).min(self.options.max_retry_wait)
    }

    /// One request, following redirects.
    async fn attempt(&self, start: &Url, call: &Call<'_>, credentials_origin: &str) -> Attempt {
        let (headers, limit) = (call.headers, call.limit);
        let mut url = start.clone();
        let mut method = call.method.clone();
        let mut body = call.body.clone();
        for _ in 0..=MAX_REDIRECTS {
            let shown = redact(url.as_str());
            let Ok(_permit) = self.semaphore.acquire().await else {
                return Attempt::Fail(self.backend(format!("`{shown}`: the client was closed")));
            };
            let mut request = self.client.request(method.clone(), url.clone());
            if let Some(body) = &body {
                request = request.body(body.clone());
            }
            let trusted = origin(&url) == credentials_origin;
            if trusted {
                request = match call.auth.unwrap_or(&self.options.auth) {
                    Auth::None => request,
                    // The one place a credential leaves its `SecretString`: the request header.
                    Auth::Basic { username, password } => {
                        request.basic_auth(username, Some(password.expose_secret()))
                    }
                    Auth::Bearer(token) => request.bearer_auth(token.expose_secret()),
                };
                let extra = if call.auth.is_some() {
                    &[][..]
                } else {
                    &self.options.headers[..]
                };
                for (name, value) in extra {
                    match (
                        HeaderName::try_from(name.as_str()),
                        HeaderValue::try_from(value.as_str()),
                    ) {
                        (Ok(name), Ok(mut value)) => {
                            value.set_sensitive(true);
                            request = request.header(name, value);
                        }
                        _ => {
                            return Attempt::Fail(Error::InvalidContent {
                                registry: self.registry.clone(),
                                message: format!("the header `{name}` is not a valid HTTP header"),
                            })
                        }
                    }
                }
            }
            for (name, value) in headers {
                request = request.header(*name, *value);
            }
            self.requests.fetch_add(1, Ordering::Relaxed);
            let mut response = match request.send().await {
                Ok(response) => response,
                Err(e) => return self.transport_error(&shown, e),
            };
            let status = response.status().as_u16();
            tracing::debug!(registry = %self.registry, url = %shown, status, method = %method);
            match status {
                _ if call.answers.contains(&status)
                    || (200..=299).contains(&status)
                    || status == 304 =>
                {
                    let body = if status == 304 || method == http::Method::HEAD {
                        Vec::new()
                    } else {
                        match self.read_body(&mut response, &shown, limit).await {
                            Ok(body) => body,
                            Err(outcome) => return outcome,
                        }
                    };
                    return Attempt::Done(Response {
                        status,
                        headers: response.headers().clone(),
                        body,
                        url: url.to_string(),
                    });
                }
                301 | 302 | 303 | 307 | 308 => {
                    let next = response
                        .headers()
                        .get(LOCATION)
                        .and_then(|l| l.to_str().ok())
                        .and_then(|l| url.join(l).ok());
                    match next {
                        Some(next) if matches!(next.scheme(), "http" | "https") => {
                            // As browsers and Go do: 303 (and 301/302 after a POST) turn into a
                            // GET without a body; 307 and 308 repeat the request.
                            if status == 303
                                || (matches!(status, 301 | 302) && method == http::Method::POST)
                            {
                                method = http::Method::GET;
                                body = None;
                            }
                            url = next;
                        }
                        _ => {
                            return Attempt::Fail(self.backend(format!(
                                "`{shown}` redirects (HTTP {status}) without a usable location"
                            )))
                        }
                    }
                }
                _ => return self.status_error(status, response.headers(), &shown),
            }
        }
        Attempt::Fail(self.backend(format!(
            "`{}` redirects more than {MAX_REDIRECTS} times",
            redact(start.as_str())
        )))
    }

    async fn read_body(
        &self,
        response: &mut reqwest::Response,
        shown: &str,
        limit: u64,
    ) -> std::result::Result<Vec<u8>, Attempt> {
        let too_large = |size: u64| {
            Attempt::Fail(Error::TooLarge {
                registry: self.registry.clone(),
                path: shown.to_owned(),
                size,
                limit,
            })
        };
        if let Some(length) = response.content_length() {
            if length > limit {
                return Err(too_large(length));
            }
        }
        let capacity = response
            .content_length()
            .and_then(|l| usize::try_from(l).ok())
            .unwrap_or(0);
        let mut body = Vec::with_capacity(capacity);
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    let size = (body.len() + chunk.len()) as u64;
                    if size > limit {
                        return Err(too_large(size));
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => return Ok(body),
                Err(e) => return Err(self.transport_error(shown, e)),
            }
        }
    }

    fn transport_error(&self, shown: &str, error: reqwest::Error) -> Attempt {
        let timeout = error.is_timeout();
        let text = crate::chain::chain(&error.without_url());
        if timeout {
            let limit = self.options.timeout.as_secs_f64();
            return Attempt::Retry(
                None,
                self.backend(format!("`{shown}` did not answer within {limit} s")),
            );
        }
        if text.to_ascii_lowercase().contains("certificate") {
            return Attempt::Fail(self.backend(format!(
                "`{shown}`: TLS certificate not accepted ({text}); give the registry's CA with \
                 `--ca-file` (or, for a test registry, `--insecure-skip-tls`)"
            )));
        }
        Attempt::Retry(
            None,
            self.backend(format!("cannot reach `{shown}`: {text}")),
        )
    }

    fn status_error(&self, status: u16, headers: &HeaderMap, shown: &str) -> Attempt {
        let reason = http::StatusCode::from_u16(status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("");
        let label = format!("HTTP {status} {reason}").trim_end().to_owned();
        let limit = rate_limit_wait(headers);
        let rate_limited =
            status == 429 || (status == 403 && (limit.is_some() || exhausted(headers)));
        if rate_limited {
            let message = match limit {
                Some((wait, at)) => format!(
                    "{label} from `{shown}`; the limit resets at {} (in {} s)",
                    rfc3339(at),
                    wait.as_secs()
                ),
                None => format!("{label} from `{shown}`"),
            };
            let error = Error::RateLimited {
                registry: self.registry.clone(),
                message: format!("{message}; try again later or use credentials"),
            };
            return match limit {
                Some((wait, _)) if wait > self.options.max_retry_wait => Attempt::Fail(error),
                Some((wait, _)) => Attempt::Retry(Some(wait), error),
                None => Attempt::Retry(None, error),
            };
        }
        match status {
            401 | 403 => Attempt::Fail(Error::Unauthorized {
                registry: self.registry.clone(),
                message: format!(
                    "{label} for `{shown}`; check the registry's credentials (token, user name \
                     and password)"
                ),
            }),
            404 | 410 => Attempt::Fail(Error::NotFound {
                registry: self.registry.clone(),
                what: format!("`{shown}` ({label})"),
            }),
            500..=599 if status != 501 => {
                let error = self.backend(format!("{label} from `{shown}`"));
                match limit {
                    Some((wait, _)) if wait > self.options.max_retry_wait => {
                        Attempt::Fail(self.backend(format!(
                            "{label} from `{shown}`; the server asks to retry in {} s",
                            wait.as_secs()
                        )))
                    }
                    hint => Attempt::Retry(hint.map(|(w, _)| w), error),
                }
            }
            _ => Attempt::Fail(self.backend(format!("{label} from `{shown}`"))),
        }
    }

    fn backend(&self, message: String) -> Error {
        Error::Backend {
            registry: self.registry.clone(),
            message,
            source: None,
        }
    }
}

/// `scheme://host:port` of a URL.
fn origin(url: &Url) -> String {
    format!(
        "{}://{}:{}",
        url.scheme(),
        url.host_str().unwrap_or_default(),
        url.port_or_known_default().unwrap_or(0)
    )
}

/// Whether `X-RateLimit-Remaining` (or `RateLimit-Remaining`) says the budget is spent.
fn exhausted(headers: &HeaderMap) -> bool {
    ["x-ratelimit-remaining", "ratelimit-remaining"]
        .iter()
        .filter_map(|h| headers.get(*h)?.to_str().ok())
        .any(|v| v.trim() == "0")
}

/// How long the server asks to wait, and until when: `Retry-After` (seconds or an HTTP date),
/// else `X-RateLimit-Reset`/`RateLimit-Reset` (Unix time, or seconds when small) when the budget
/// is spent.
fn rate_limit_wait(headers: &HeaderMap) -> Option<(Duration, SystemTime)> {
    let now = SystemTime::now();
    let text = |name: &HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(value) = text(&RETRY_AFTER) {
        let value = value.trim();
        if let Ok(seconds) = value.parse::<u64>() {
            let wait = Duration::from_secs(seconds);
            return Some((wait, now + wait));
        }
        if let Ok(at) = httpdate::parse_http_date(value) {
            let wait = at.duration_since(now).unwrap_or_default();
            return Some((wait, at));
        }
    }
    if !exhausted(headers) {
        return None;
    }
    let reset = ["x-ratelimit-reset", "ratelimit-reset"]
        .iter()
        .find_map(|h| headers.get(*h)?.to_str().ok()?.trim().parse::<u64>().ok())?;
    if reset > 1_000_000_000 {
        let at = UNIX_EPOCH + Duration::from_secs(reset);
        Some((at.duration_since(now).unwrap_or_default(), at))
    } else {
        let wait = Duration::from_secs(reset);
        Some((wait, now + wait))
    }
}
/// A time as RFC 3339 in UTC, to the second (`2026-01-31T12:00:00Z`).
pub(crate) fn rfc3339(time: SystemTime) -> String {
    let seconds = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let days = i64::try_from(seconds / 86_400).unwrap_or(0);
    let rest = seconds % 86_400;
    // Howard Hinnant's days-to-civil algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_formatted_as_rfc3339() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        assert_eq!(
            rfc3339(UNIX_EPOCH + Duration::from_secs(1_709_210_096)),
            "2024-02-29T12:34:56Z"
        );
        assert_eq!(
            rfc3339(UNIX_EPOCH + Duration::from_secs(951_782_400)),
            "2000-02-29T00:00:00Z"
        );
    }

    #[test]
    fn retry_after_and_rate_limit_reset_are_read() {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, HeaderValue::from_static("7"));
        let (wait, _) = rate_limit_wait(&headers).unwrap();
        assert_eq!(wait, Duration::from_secs(7));

        let mut headers = HeaderMap::new();
        let at = SystemTime::now() + Duration::from_secs(120);
        headers.insert(
            RETRY_AFTER,
            HeaderValue::from_str(&httpdate::fmt_http_date(at)).unwrap(),
        );
        let (wait, _) = rate_limit_wait(&headers).unwrap();
        assert!(wait > Duration::from_secs(100) && wait <= Duration::from_secs(120));

        let mut headers = HeaderMap::new();
        let reset = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs()
            + 3600;
        headers.insert("x-ratelimit-reset", HeaderValue::from(reset));
        assert!(rate_limit_wait(&headers).is_none(), "budget not spent");
        headers.insert("x-ratelimit-remaining", HeaderValue::from_static("0"));
        let (wait, _) = rate_limit_wait(&headers).unwrap();
        assert!(wait > Duration::from_secs(3500));
    }

    #[test]
    fn credentials_do_not_show_in_debug_output() {
        let options = HttpOptions {
            auth: Auth::Basic {
                username: "me".into(),
                password: "hunter2".into(),
            },
            headers: vec![("PRIVATE-TOKEN".into(), "glpat-secret".into())],
            ..HttpOptions::default()
        };
        let text = format!("{options:?}");
        assert!(
            !text.contains("hunter2") && !text.contains("glpat-secret"),
            "{text}"
        );
        assert!(!format!("{:?}", Auth::Bearer("tok".into())).contains("tok"));
    }
}
