//! Who may talk to the server, checked before any handler runs.
//!
//! Local mode: the `Host` header must name the bound address (a page on another name that
//! resolves to 127.0.0.1 — DNS rebinding — is refused); a request that changes anything must
//! come from the server's own pages (`Sec-Fetch-Site` `same-origin`/`none`, an `Origin` equal
//! to the server's); every request carries the per-launch token, as the `HttpOnly;
//! SameSite=Strict` cookie set by `GET /login?token=…` (the URL `addonctl serve` prints) or as
//! `Authorization: Bearer`. No CORS header is ever sent, so no other origin reads an answer.
//! Every answer says `no-store`, `nosniff`, `no-referrer` and a content security policy that
//! runs only the server's own scripts.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::{self, HeaderMap, HeaderValue};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use secrecy::{ExposeSecret, SecretString};
use sha2::{Digest, Sha256};

use super::error::ApiError;
use super::{App, Caller, Mode, ServeOptions};

/// The cookie that carries the token.
pub const COOKIE: &str = "addonctl_token";

/// The path that exchanges the printed URL's token for the cookie.
pub const LOGIN: &str = "/login";

/// The content security policy of every answer: the server's own scripts, styles and images.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The access rules of a server.
#[derive(Debug)]
pub struct Access {
    /// The token (local mode).
    token: Option<SecretString>,
    /// The `Host` values accepted (local mode: the bound address by number and as `localhost`).
    hosts: Vec<String>,
}

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
                }
            }
        }
    }

    /// The URL to open: the login path with the token.
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
        Ok(Pass::Login) => login(&app.access, &request),
        Ok(Pass::Through) => {
            request.extensions_mut().insert(Caller::default());
            next.run(request).await
        }
    };
    harden(response.headers_mut());
    response
}

enum Pass {
    Login,
    Through,
}

fn check(access: &Access, request: &Request) -> Result<Pass, Box<Response>> {
    let headers = request.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    if !access.hosts.iter().any(|h| h == host) {
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
    if request.uri().path() == LOGIN && request.method() == Method::GET {
        return Ok(Pass::Login);
    }
    if presented_token(headers).is_some_and(|t| access.token_matches(t)) {
        return Ok(Pass::Through);
    }
    Err(Box::new(refuse(
        StatusCode::UNAUTHORIZED,
        "unauthenticated",
        "no valid token: open the URL `addonctl serve` printed (it signs this browser in), or send `Authorization: Bearer <token>`".to_owned(),
        request,
    )))
}

/// Whether a request may come from where it says it comes from: reads from anywhere (no CORS
/// header lets another origin read the answer), changes only from this server's pages.
fn cross_site_allowed(headers: &HeaderMap, method: &Method, host: &str) -> bool {
    let fetch_site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok());
    if matches!(fetch_site, Some("cross-site" | "same-site")) && !is_safe(method) {
        return false;
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let expected = format!("http://{host}");
        if origin.to_str().ok() != Some(expected.as_str()) {
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

/// `GET /login?token=…`: the cookie, and on to the catalogue (the token leaves the address
/// bar); a wrong token is refused.
fn login(access: &Access, request: &Request) -> Response {
    let given = request
        .uri()
        .query()
        .into_iter()
        .flat_map(|q| q.split('&'))
        .filter_map(|pair| pair.split_once('='))
        .find(|(name, _)| *name == "token")
        .map(|(_, value)| value);
    match given {
        Some(token) if access.token_matches(token) => {
            let cookie = format!("{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/");
            let mut response = Redirect::to("/").into_response();
            if let Ok(value) = HeaderValue::from_str(&cookie) {
                response.headers_mut().insert(header::SET_COOKIE, value);
            }
            response
        }
        _ => refuse(
            StatusCode::UNAUTHORIZED,
            "unauthenticated",
            "this sign-in link is not valid: open the URL the running `addonctl serve` printed"
                .to_owned(),
            request,
        ),
    }
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
        (header::REFERRER_POLICY, "no-referrer"),
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
