//! Who may talk to the server, checked before any handler runs.
//!
//! Local mode: the `Host` header must name the bound address (a page on another name that
//! resolves to 127.0.0.1 — DNS rebinding — is refused); a request that changes anything must
//! come from the server's own pages (`Sec-Fetch-Site` `same-origin`/`none`, an `Origin` equal
//! to the server's); every request carries the per-launch token, as the `HttpOnly;
//! SameSite=Strict` cookie set by `GET /login?token=…` (the URL `addonctl serve` prints) or as
//! `Authorization: Bearer`. No CORS header is ever sent, so no other origin reads an answer.
//! Every answer says `no-store`, `nosniff`, `same-origin` referrers and a content security policy that
//! runs only the server's own scripts.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::header::{self, HeaderMap, HeaderValue};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use secrecy::{ExposeSecret, SecretString};
use sha2::{Digest, Sha256};

use super::error::ApiError;
use super::{App, Caller, Mode, ServeOptions};
use crate::context::Identity;

/// The cookie that carries the token.
pub const COOKIE: &str = "addonctl_token";

/// The one path answered without a token (liveness and readiness; it says nothing else).
pub const HEALTHZ: &str = "/healthz";

/// The path that exchanges the printed URL's token for the cookie.
pub const LOGIN: &str = "/login";

/// The content security policy of every answer: the server's own scripts, styles and images.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The access rules of a server.
#[derive(Debug)]
pub struct Access {
    /// The token (local mode).
    token: Option<SecretString>,
    /// The `Host` values accepted (local mode: the bound address by number and as `localhost`;
    /// empty in a cluster, where a Service's names reach it).
    hosts: Vec<String>,
    /// Who each bearer token is, as the API server said lately (in a cluster).
    reviewed: Mutex<HashMap<[u8; 32], Reviewed>>,
}

/// A TokenReview's answer (`None`: the token does not authenticate) and when it came.
type Reviewed = (Instant, Option<Identity>);

/// How long a TokenReview's answer is kept.
pub const REVIEW_TTL: Duration = Duration::from_secs(60);

/// At most this many tokens' answers are kept.
const REVIEWS_KEPT: usize = 4096;

impl Access {
    /// The rules `options` ask for.
    pub fn new(options: &ServeOptions) -> Self {
        match &options.mode {
            Mode::Local { token } => {
                let port = options.addr.port();
                let ip = options.addr.ip();
                let mut hosts = vec![options.addr.to_string()];
                if ip.is_loopback() {
                    hosts.push(format!("localhost:{port}"));
                }
                Access {
                    token: Some(token.clone()),
                    hosts,
                    reviewed: Mutex::default(),
                }
            }
            Mode::InCluster => Access {
                token: None,
                hosts: Vec::new(),
                reviewed: Mutex::default(),
            },
        }
    }

    /// Who `token` belongs to: in local mode the kubeconfig's user when it is the launch
    /// token; in a cluster the TokenReview's user and groups (kept [`REVIEW_TTL`]). `None`: it
    /// does not authenticate.
    async fn authenticate(&self, app: &App, token: &str) -> Result<Option<Caller>, Box<Response>> {
        if self.token.is_some() {
            return Ok(self.token_matches(token).then(Caller::default));
        }
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(answer) = self.reviewed.lock().ok().and_then(|kept| {
            kept.get(&key)
                .filter(|(at, _)| at.elapsed() < REVIEW_TTL)
                .map(|(_, identity)| identity.clone())
        }) {
            return answer.map(|identity| acting(app, identity)).transpose();
        }
        let reviewed = app
            .runtime()
            .cluster
            .review_token(token)
            .await
            .map_err(|e| {
                tracing::warn!("a TokenReview failed: {e}");
                Box::new(
                    ApiError::of_kind(
                        crate::ErrorKind::Unavailable,
                        "the API server did not say who this token belongs to; retry",
                    )
                    .into_response(),
                )
            })?;
        let identity = reviewed.map(|r| Identity {
            user: r.user,
            groups: r.groups,
            extra: r.extra,
        });
        if let Ok(mut kept) = self.reviewed.lock() {
            if kept.len() >= REVIEWS_KEPT {
                kept.retain(|_, (at, _)| at.elapsed() < REVIEW_TTL);
                if kept.len() >= REVIEWS_KEPT {
                    kept.clear();
                }
            }
            kept.insert(key, (Instant::now(), identity.clone()));
        }
        identity.map(|identity| acting(app, identity)).transpose()
    }

    /// The URL to open: the login path with the token (local mode).
    pub fn login_url(&self) -> String {
        let host = self.hosts.first().map_or("127.0.0.1", String::as_str);
        let token = self.token.as_ref().map_or("", |t| t.expose_secret());
        format!("http://{host}{LOGIN}?token={token}")
    }

    fn token_matches(&self, given: &str) -> bool {
        self.token
            .as_ref()
            .is_some_and(|token| same(token.expose_secret(), given))
    }
}

/// The caller acting as `identity`, or the refusal when the server cannot act as them.
fn acting(app: &App, identity: Identity) -> Result<Caller, Box<Response>> {
    app.acting_as(identity).map_err(|e| {
        tracing::error!("cannot act for a caller: {e}");
        Box::new(
            ApiError::of_kind(
                crate::ErrorKind::Internal,
                "the server cannot act as you (its client cannot impersonate); nothing was done",
            )
            .into_response(),
        )
    })
}

/// Equal strings, compared in constant time (hashes of both, so lengths leak nothing).
fn same(a: &str, b: &str) -> bool {
    let (a, b) = (Sha256::digest(a.as_bytes()), Sha256::digest(b.as_bytes()));
    a.iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

/// `bytes` in lowercase hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
}

/// A fresh token: 32 random bytes, hex.
pub fn new_token() -> SecretString {
    let mut bytes = [0u8; 32];
    if getrandom::fill(&mut bytes).is_err() {
        // No system randomness: a server that cannot make a secret must not start with a
        // guessable one; the caller checks for the empty token.
        return SecretString::from(String::new());
    }
    SecretString::from(hex(&bytes))
}

/// The middleware: refuses what the rules refuse, answers the login exchange, and passes the
/// caller on to the handlers.
pub async fn guard(State(app): State<Arc<App>>, mut request: Request, next: Next) -> Response {
    let mut response = match check(&app.access, &request) {
        Err(refusal) => *refusal,
        Ok(Pass::Health) => "ok\n".into_response(),
        Ok(Pass::Login) => login(&app, request).await,
        Ok(Pass::Token(token)) => match app.access.authenticate(&app, &token).await {
            Err(refusal) => *refusal,
            Ok(None) => unauthenticated(&app.access, &request),
            Ok(Some(caller)) => {
                request.extensions_mut().insert(caller);
                next.run(request).await
            }
        },
    };
    harden(response.headers_mut());
    response
}

enum Pass {
    Health,
    Login,
    Token(String),
}

fn check(access: &Access, request: &Request) -> Result<Pass, Box<Response>> {
    let headers = request.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    if !access.hosts.is_empty() && !access.hosts.iter().any(|h| h == host) {
        return Err(Box::new(refuse(
            StatusCode::MISDIRECTED_REQUEST,
            "forbiddenhost",
            format!(
                "this server answers only as `{}`; open the URL `addonctl serve` printed",
                access.hosts.join("` or `")
            ),
            request,
        )));
    }
    if !cross_site_allowed(headers, request.method(), host) {
        return Err(Box::new(refuse(
            StatusCode::FORBIDDEN,
            "forbiddenorigin",
            "a request from another site may not change anything here".to_owned(),
            request,
        )));
    }
    if request.uri().path() == HEALTHZ && request.method() == Method::GET {
        return Ok(Pass::Health);
    }
    if request.uri().path() == LOGIN && matches!(*request.method(), Method::GET | Method::POST) {
        return Ok(Pass::Login);
    }
    match presented_token(headers) {
        Some(token) => Ok(Pass::Token(token.to_owned())),
        None => Err(Box::new(unauthenticated(access, request))),
    }
}

fn unauthenticated(access: &Access, request: &Request) -> Response {
    let how = if access.token.is_some() {
        "open the URL `addonctl serve` printed (it signs this browser in), or send `Authorization: Bearer <token>`"
    } else {
        "send `Authorization: Bearer <token>` with a token the API server accepts (`kubectl create token …`), or sign in at /login"
    };
    refuse(
        StatusCode::UNAUTHORIZED,
        "unauthenticated",
        format!("no valid token: {how}"),
        request,
    )
}

/// Whether a request may come from where it says it comes from: reads from anywhere (no CORS
/// header lets another origin read the answer), changes only from this server's pages.
fn cross_site_allowed(headers: &HeaderMap, method: &Method, host: &str) -> bool {
    let fetch_site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok());
    if matches!(fetch_site, Some("cross-site" | "same-site")) && !is_safe(method) {
        return false;
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        // The server's own origin: plain HTTP here, or HTTPS where a proxy in front of it
        // ends TLS (in a cluster).
        let own = origin.to_str().ok().is_some_and(|origin| {
            origin
                .strip_prefix("http://")
                .or_else(|| origin.strip_prefix("https://"))
                == Some(host)
        });
        // `Origin: null` from a page of this server (the browser says so) is its own.
        let own_page = origin.as_bytes() == b"null" && fetch_site == Some("same-origin");
        if !own && !own_page {
            return is_safe(method) && origin.as_bytes() != b"null";
        }
    }
    true
}

fn is_safe(method: &Method) -> bool {
    matches!(*method, Method::GET | Method::HEAD)
}

/// The token a request carries: the cookie, or `Authorization: Bearer`.
fn presented_token(headers: &HeaderMap) -> Option<&str> {
    if let Some(bearer) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    {
        return Some(bearer.trim());
    }
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value)
}

/// `GET /login?token=…` (the printed URL) or `POST /login` with a form field `token`: the
/// cookie, and on to the catalogue (the token leaves the address bar); a token that does not
/// authenticate is refused.
async fn login(app: &App, request: Request) -> Response {
    let from_query = request
        .uri()
        .query()
        .into_iter()
        .flat_map(|q| q.split('&'))
        .filter_map(|pair| pair.split_once('='))
        .find(|(name, _)| *name == "token")
        .map(|(_, value)| value.to_owned());
    let (parts, body) = request.into_parts();
    let given = match from_query {
        Some(token) => Some(token),
        None if parts.method == Method::POST => axum::body::to_bytes(body, 16 * 1024)
            .await
            .ok()
            .and_then(|bytes| {
                url_form(&bytes)
                    .into_iter()
                    .find(|(name, _)| name == "token")
                    .map(|(_, value)| value)
            }),
        None => None,
    };
    let request = Request::from_parts(parts, axum::body::Body::empty());
    let Some(token) = given.filter(|t| !t.is_empty() && t.len() <= 16 * 1024) else {
        return unauthenticated(&app.access, &request);
    };
    match app.access.authenticate(app, &token).await {
        Err(refusal) => *refusal,
        Ok(None) => refuse(
            StatusCode::UNAUTHORIZED,
            "unauthenticated",
            "this token does not sign in: open the URL the running `addonctl serve` printed, or use a token the API server accepts".to_owned(),
            &request,
        ),
        Ok(Some(_)) => {
            let cookie = format!("{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/");
            let mut response = Redirect::to("/").into_response();
            if let Ok(value) = HeaderValue::from_str(&cookie) {
                response.headers_mut().insert(header::SET_COOKIE, value);
            }
            response
        }
    }
}

/// `application/x-www-form-urlencoded` pairs.
fn url_form(bytes: &[u8]) -> Vec<(String, String)> {
    serde_urlencoded::from_bytes(bytes).unwrap_or_default()
}

/// A refusal: JSON for the API, a short page for a browser.
fn refuse(status: StatusCode, code: &str, message: String, request: &Request) -> Response {
    if request.uri().path().starts_with("/api/") {
        return ApiError::new(status, code, message).into_response();
    }
    let page = super::pages::refusal(status, &message);
    (status, page).into_response()
}

/// The headers every answer carries.
fn harden(headers: &mut HeaderMap) {
    let fixed = [
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        // Same-origin requests keep their `Origin` (with `no-referrer` a browser sends
        // `Origin: null` on a form's POST); no other site learns any address of this server.
        (header::REFERRER_POLICY, "same-origin"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
    ];
    for (name, value) in fixed {
        headers.insert(name, HeaderValue::from_static(value));
    }
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
}
