//! The OCI distribution protocol as registries speak it, on addonctl's HTTP layer
//! ([`HttpClient`]: limits, retries with `Retry-After`, status mapping, redirects that never
//! carry credentials to another origin).
//!
//! - **Authentication.** A request goes out with what is known to work for its scope (a token
//!   from an earlier exchange, or basic credentials once the registry asked for them). A `401`
//!   with `WWW-Authenticate: Bearer realm=…,service=…,scope=…` starts the token exchange: `GET`
//!   on the realm (basic credentials when there are any, none for anonymous access), and when
//!   the token server does not answer `GET` (400, 404, 405) the OAuth2 `POST` (`grant_type=password`,
//!   or `refresh_token` for an identity token). The realm may be another host: it receives the
//!   credentials because the registry named it, but only over HTTPS (plain HTTP only for a
//!   loopback realm of a loopback registry). A `401` with `Basic` sends the credentials to the
//!   registry's own origin. Tokens are kept per scope for the reader's life.
//! - **Digests.** Every manifest and blob is checked against the digest it was asked by (or the
//!   registry's `Docker-Content-Digest`), and every blob against its descriptor's size; only
//!   `sha256` is accepted.
//! - **Paging.** Tag and repository lists follow `Link: <…>; rel="next"` on the registry's own
//!   origin, with a bound on pages and names.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, PoisonError};

use reqwest::Url;
use serde::Deserialize;
use sha2::{Digest as _, Sha256};

use crate::model::secret::{ExposeSecret as _, SecretString};
use crate::source::cache::hex;
use crate::source::http::{redact, Auth, Call, HttpClient, Response};
use crate::source::{Error, Result};

/// The manifest media types asked for (without an `Accept` some registries answer 404).
pub const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.manifest.v1+json, \
     application/vnd.oci.image.index.v1+json, \
     application/vnd.docker.distribution.manifest.v2+json, \
     application/vnd.docker.distribution.manifest.list.v2+json";
/// An OCI image manifest.
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// An OCI image index.
pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
/// Helm's chart config blob.
pub const HELM_CONFIG: &str = "application/vnd.cncf.helm.config.v1+json";
/// Helm's chart archive layer.
pub const HELM_CHART: &str = "application/vnd.cncf.helm.chart.content.v1.tar+gzip";
/// Helm's provenance layer.
pub const HELM_PROVENANCE: &str = "application/vnd.cncf.helm.chart.provenance.v1.prov";

/// The largest manifest read (as containerd).
pub const MAX_MANIFEST_BYTES: u64 = 4 * 1024 * 1024;
/// The largest page of a tag or repository list.
const MAX_LIST_PAGE_BYTES: u64 = 4 * 1024 * 1024;
/// The most pages of one list followed.
const MAX_LIST_PAGES: usize = 200;
/// The most names of one list kept.
const MAX_LIST_NAMES: usize = 100_000;
/// The largest token answer.
const MAX_TOKEN_BYTES: u64 = 64 * 1024;
/// Names asked per page.
const PAGE_SIZE: usize = 1000;

/// How the reader logs in.
#[derive(Clone, Default)]
pub enum Login {
    /// Anonymous (tokens without credentials when the registry asks for them).
    #[default]
    Anonymous,
    /// A user name and a password or access token.
    Basic {
        /// The user name.
        username: String,
        /// The password or access token.
        password: SecretString,
    },
    /// A token: sent as a bearer token, and exchanged as an OAuth2 refresh token when the
    /// registry's token server asks.
    Token(SecretString),
}

impl fmt::Debug for Login {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Login::Anonymous => "Anonymous",
            Login::Basic { .. } => "Basic(***)",
            Login::Token(_) => "Token(***)",
        })
    }
}

/// A descriptor: what a manifest says about a blob.
#[derive(Debug, Clone, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// The media type.
    #[serde(default)]
    pub media_type: String,
    /// `sha256:<hex>`.
    pub digest: String,
    /// The size in bytes.
    pub size: u64,
    /// Annotations.
    #[serde(default, skip_serializing_if = "HashMap::is_empty")]
    pub annotations: HashMap<String, String>,
}

/// An image manifest (what a Helm chart, a cosign signature and a catalog chart are).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// Always 2.
    #[serde(default)]
    pub schema_version: u32,
    /// The manifest's media type, when given.
    #[serde(default)]
    pub media_type: Option<String>,
    /// The artifact type (OCI 1.1), when given.
    #[serde(default)]
    pub artifact_type: Option<String>,
    /// The config blob.
    pub config: Option<Descriptor>,
    /// The layers.
    #[serde(default)]
    pub layers: Vec<Descriptor>,
    /// An index's manifests (an index is refused where a manifest is needed).
    #[serde(default)]
    pub manifests: Vec<Descriptor>,
}

/// A manifest fetched and checked, with its digest.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// `sha256:<hex>` of its bytes.
    pub digest: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// Parsed.
    pub manifest: Manifest,
}

/// A `WWW-Authenticate` challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Challenge {
    Bearer {
        realm: String,
        service: Option<String>,
        scope: Option<String>,
    },
    Basic,
}

/// A token server's answer (`token`, or OAuth2's `access_token`).
#[derive(Deserialize)]
struct TokenAnswer {
    token: Option<String>,
    access_token: Option<String>,
}

/// A client of one OCI registry (one origin).
pub struct OciClient {
    registry: String,
    /// `http(s)://host:port/`.
    base: Url,
    http: HttpClient,
    login: Login,
    /// Whether plain HTTP is allowed (a loopback registry, or asked for).
    plain_http: bool,
    /// Tokens by scope.
    tokens: Mutex<HashMap<String, SecretString>>,
    /// Set once the registry asked for basic authentication.
    basic: Mutex<bool>,
}

impl fmt::Debug for OciClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OciClient")
            .field("registry", &self.registry)
            .field("base", &self.base.as_str())
            .field("login", &self.login)
            .finish_non_exhaustive()
    }
}

/// `sha256:<64 lowercase hex>`, the only digests accepted.
pub fn check_digest(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// `sha256:<hex>` of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex(&Sha256::digest(bytes)))
}

impl OciClient {
    /// A client of the registry at `base` (`http(s)://host:port/`).
    pub fn new(
        registry: &str,
        base: Url,
        http: HttpClient,
        login: Login,
        plain_http: bool,
    ) -> Self {
        OciClient {
            registry: registry.to_owned(),
            base,
            http,
            login,
            plain_http,
            tokens: Mutex::new(HashMap::new()),
            basic: Mutex::new(false),
        }
    }

    /// The HTTP client (for its request counter).
    pub fn http(&self) -> &HttpClient {
        &self.http
    }

    /// `host[:port]` of the registry.
    pub fn location_host(&self) -> String {
        match (self.base.host_str(), self.base.port()) {
            (Some(host), Some(port)) => format!("{host}:{port}"),
            (Some(host), None) => host.to_owned(),
            _ => String::new(),
        }
    }

    /// The registry's name.
    pub fn registry(&self) -> &str {
        &self.registry
    }

    fn invalid(&self, message: String) -> Error {
        Error::InvalidContent {
            registry: self.registry.clone(),
            message,
        }
    }

    /// `path` under the registry's URL.
    pub(crate) fn base_url(&self, path: &str) -> Result<Url> {
        self.url(path)
    }

    /// An [`Error::InvalidContent`] of this registry.
    pub(crate) fn invalid_content(&self, message: String) -> Error {
        self.invalid(message)
    }

    fn url(&self, path: &str) -> Result<Url> {
        self.base
            .join(path)
            .map_err(|e| self.invalid(format!("cannot build the URL of `{path}`: {e}")))
    }

    /// One request to the registry for `scope`, with the token exchange when it asks for it.
    pub async fn send(&self, scope: &str, call: Call<'_>) -> Result<Response> {
        let mut answers: Vec<u16> = call.answers.to_vec();
        answers.push(401);
        let known = self.known_auth(scope);
        let first = self
            .http
            .call(&Call {
                auth: Some(&known),
                answers: &answers,
                ..call.clone()
            })
            .await?;
        if first.status != 401 || call.answers.contains(&401) {
            return Ok(first);
        }
        let challenge = first
            .header("www-authenticate")
            .and_then(parse_challenge)
            .ok_or_else(|| self.unauthorized(call.url, "without a usable `WWW-Authenticate`"))?;
        let auth = match challenge {
            Challenge::Basic => {
                let Login::Basic { username, password } = &self.login else {
                    return Err(self.unauthorized(
                        call.url,
                        "asking for a user name and password; give them with `--username` and \
                         `--password`",
                    ));
                };
                *self.basic.lock().unwrap_or_else(PoisonError::into_inner) = true;
                Auth::Basic {
                    username: username.clone(),
                    password: password.clone(),
                }
            }
            Challenge::Bearer {
                realm,
                service,
                scope: asked,
            } => {
                let scope_key = asked.clone().unwrap_or_else(|| scope.to_owned());
                let token = self
                    .exchange(&realm, service.as_deref(), &scope_key)
                    .await?;
                self.tokens
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(scope.to_owned(), token.clone());
                Auth::Bearer(token)
            }
        };
        let second = self
            .http
            .call(&Call {
                auth: Some(&auth),
                answers: &answers,
                ..call.clone()
            })
            .await?;
        if second.status == 401 && !call.answers.contains(&401) {
            return Err(self.unauthorized(
                call.url,
                "refusing the credentials; check the user name and password or token",
            ));
        }
        Ok(second)
    }

    fn unauthorized(&self, url: &str, why: &str) -> Error {
        Error::Unauthorized {
            registry: self.registry.clone(),
            message: format!("HTTP 401 from `{}` {why}", redact(url)),
        }
    }

    /// What to send first for `scope`: a token got before, basic credentials once the registry
    /// asked for them, a token given by the user, else nothing.
    fn known_auth(&self, scope: &str) -> Auth {
        if let Some(token) = self
            .tokens
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(scope)
        {
            return Auth::Bearer(token.clone());
        }
        match &self.login {
            Login::Basic { username, password }
                if *self.basic.lock().unwrap_or_else(PoisonError::into_inner) =>
            {
                Auth::Basic {
                    username: username.clone(),
                    password: password.clone(),
                }
            }
            Login::Token(token) => Auth::Bearer(token.clone()),
            _ => Auth::None,
        }
    }

    /// The token exchange with the realm: `GET`, else the OAuth2 `POST`.
    async fn exchange(
        &self,
        realm: &str,
        service: Option<&str>,
        scope: &str,
    ) -> Result<SecretString> {
        let mut url = Url::parse(realm).map_err(|e| {
            self.invalid(format!(
                "the token realm `{}` is not a URL: {e}",
                redact(realm)
            ))
        })?;
        let loopback = |u: &Url| {
            u.host_str().is_some_and(|h| {
                h == "localhost"
                    || h.parse::<std::net::IpAddr>()
                        .is_ok_and(|ip| ip.is_loopback())
                    || h == "[::1]"
            })
        };
        let secure = url.scheme() == "https"
            || (url.scheme() == "http"
                && self.plain_http
                && (loopback(&url) || !loopback(&self.base)));
        if !secure {
            return Err(self.invalid(format!(
                "the token realm `{}` is not HTTPS; credentials are not sent over plain HTTP",
                redact(realm)
            )));
        }
        {
            let mut query = url.query_pairs_mut();
            if let Some(service) = service {
                query.append_pair("service", service);
            }
            for scope in scope.split(' ').filter(|s| !s.is_empty()) {
                query.append_pair("scope", scope);
            }
        }
        let (auth, refresh) = match &self.login {
            Login::Anonymous => (Auth::None, None),
            Login::Basic { username, password } => (
                Auth::Basic {
                    username: username.clone(),
                    password: password.clone(),
                },
                None,
            ),
            Login::Token(token) => (Auth::None, Some(token)),
        };
        let text = url.to_string();
        let headers = [("accept", "application/json")];
        let response = if refresh.is_none() {
            let response = self
                .http
                .call(&Call {
                    headers: &headers,
                    limit: MAX_TOKEN_BYTES,
                    auth: Some(&auth),
                    answers: &[400, 401, 403, 404, 405],
                    ..Call::get(&text)
                })
                .await?;
            match response.status {
                200..=299 => Some(response),
                400 | 404 | 405 if !matches!(self.login, Login::Anonymous) => None,
                _ => {
                    return Err(Error::Unauthorized {
                        registry: self.registry.clone(),
                        message: format!(
                            "the token server `{}` refused the {} (HTTP {}); check the \
                             credentials",
                            redact(realm),
                            if matches!(self.login, Login::Anonymous) {
                                "anonymous request"
                            } else {
                                "credentials"
                            },
                            response.status
                        ),
                    })
                }
            }
        } else {
            None
        };
        let response = match response {
            Some(response) => response,
            None => self.exchange_oauth2(realm, service, scope, refresh).await?,
        };
        let answer: TokenAnswer = serde_json::from_slice(&response.body).map_err(|e| {
            self.invalid(format!(
                "the token server `{}` answered no JSON: {e}",
                redact(realm)
            ))
        })?;
        answer
            .token
            .or(answer.access_token)
            .filter(|t| !t.is_empty())
            .map(SecretString::from)
            .ok_or_else(|| {
                self.invalid(format!(
                    "the token server `{}` answered no token",
                    redact(realm)
                ))
            })
    }

    /// The OAuth2 `POST` to the realm (form-encoded, the credentials in the body).
    async fn exchange_oauth2(
        &self,
        realm: &str,
        service: Option<&str>,
        scope: &str,
        refresh: Option<&SecretString>,
    ) -> Result<Response> {
        let mut form: Vec<(&str, &str)> = vec![("client_id", "addonctl")];
        if let Some(service) = service {
            form.push(("service", service));
        }
        form.push(("scope", scope));
        match (&self.login, refresh) {
            (_, Some(token)) => {
                form.push(("grant_type", "refresh_token"));
                form.push(("refresh_token", token.expose_secret()));
            }
            (Login::Basic { username, password }, None) => {
                form.push(("grant_type", "password"));
                form.push(("username", username));
                form.push(("password", password.expose_secret()));
            }
            _ => {}
        }
        let body = serde_urlencoded::to_string(&form)
            .map_err(|e| self.invalid(format!("cannot encode the token request: {e}")))?;
        let headers = [
            ("content-type", "application/x-www-form-urlencoded"),
            ("accept", "application/json"),
        ];
        let response = self
            .http
            .call(&Call {
                method: http::Method::POST,
                headers: &headers,
                body: Some(body.into()),
                limit: MAX_TOKEN_BYTES,
                auth: Some(&Auth::None),
                answers: &[400, 401, 403],
                ..Call::get(realm)
            })
            .await?;
        if response.status >= 400 {
            return Err(Error::Unauthorized {
                registry: self.registry.clone(),
                message: format!(
                    "the token server `{}` refused the credentials (HTTP {}); check them",
                    redact(realm),
                    response.status
                ),
            });
        }
        Ok(response)
    }

    /// The manifest of `repository` at `reference` (a tag or a digest), checked against the
    /// digest asked for and the one the registry names.
    pub async fn manifest(&self, repository: &str, reference: &str) -> Result<Fetched> {
        let url = self.url(&format!("v2/{repository}/manifests/{reference}"))?;
        let headers = [("accept", MANIFEST_ACCEPT)];
        let response = self
            .send(
                &pull_scope(repository),
                Call {
                    headers: &headers,
                    limit: MAX_MANIFEST_BYTES,
                    ..Call::get(url.as_str())
                },
            )
            .await
            .map_err(|e| Self::name_not_found(e, &format!("`{repository}:{reference}`")))?;
        let digest = sha256_digest(&response.body);
        let what = format!("the manifest of `{repository}:{reference}`");
        if reference.starts_with("sha256:") && reference != digest {
            return Err(self.invalid(format!(
                "{what} does not match its digest (got {digest}); the registry served other bytes"
            )));
        }
        if let Some(named) = response.header("docker-content-digest") {
            if named.starts_with("sha256:") && named != digest {
                return Err(self.invalid(format!(
                    "{what} does not match the digest the registry names ({named}, got {digest})"
                )));
            }
        }
        let manifest: Manifest = serde_json::from_slice(&response.body)
            .map_err(|e| self.invalid(format!("{what} is not a valid manifest: {e}")))?;
        Ok(Fetched {
            digest,
            bytes: response.body,
            manifest,
        })
    }

    /// `HEAD` of a manifest: its digest, or `None` when there is none (for signature tags).
    pub async fn manifest_digest(
        &self,
        repository: &str,
        reference: &str,
    ) -> Result<Option<String>> {
        let url = self.url(&format!("v2/{repository}/manifests/{reference}"))?;
        let headers = [("accept", MANIFEST_ACCEPT)];
        let result = self
            .send(
                &pull_scope(repository),
                Call {
                    method: http::Method::HEAD,
                    headers: &headers,
                    limit: 0,
                    ..Call::get(url.as_str())
                },
            )
            .await;
        match result {
            Ok(response) => Ok(response
                .header("docker-content-digest")
                .filter(|d| check_digest(d))
                .map(str::to_owned)),
            Err(Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// A blob, checked against its descriptor (size, then digest).
    pub async fn blob(
        &self,
        repository: &str,
        descriptor: &Descriptor,
        cap: u64,
    ) -> Result<Vec<u8>> {
        if !check_digest(&descriptor.digest) {
            return Err(self.invalid(format!(
                "`{repository}`: the digest `{}` is not a sha256 digest",
                descriptor.digest
            )));
        }
        if descriptor.size > cap {
            return Err(Error::TooLarge {
                registry: self.registry.clone(),
                path: format!("{repository}@{}", descriptor.digest),
                size: descriptor.size,
                limit: cap,
            });
        }
        let url = self.url(&format!("v2/{repository}/blobs/{}", descriptor.digest))?;
        let response = self
            .send(
                &pull_scope(repository),
                Call {
                    limit: descriptor.size,
                    ..Call::get(url.as_str())
                },
            )
            .await?;
        let actual = sha256_digest(&response.body);
        if response.body.len() as u64 != descriptor.size || actual != descriptor.digest {
            return Err(self.invalid(format!(
                "the blob `{repository}@{}` does not match its descriptor ({} bytes, {actual}; \
                 expected {} bytes)",
                descriptor.digest,
                response.body.len(),
                descriptor.size
            )));
        }
        Ok(response.body)
    }

    /// Every tag of `repository` (`n`/`last` paging through `Link`).
    pub async fn tags(&self, repository: &str) -> Result<Vec<String>> {
        #[derive(Deserialize)]
        struct Page {
            #[serde(default)]
            tags: Option<Vec<String>>,
        }
        let first = self.url(&format!("v2/{repository}/tags/list?n={PAGE_SIZE}"))?;
        self.paged(&pull_scope(repository), first, |body| {
            serde_json::from_slice::<Page>(body).map(|p| p.tags.unwrap_or_default())
        })
        .await
        .map_err(|e| Self::name_not_found(e, &format!("repository `{repository}`")))
    }

    /// Every repository the registry lists (`/v2/_catalog`, paged).
    pub async fn repositories(&self) -> Result<Vec<String>> {
        #[derive(Deserialize)]
        struct Page {
            #[serde(default)]
            repositories: Option<Vec<String>>,
        }
        let first = self.url(&format!("v2/_catalog?n={PAGE_SIZE}"))?;
        self.paged("registry:catalog:*", first, |body| {
            serde_json::from_slice::<Page>(body).map(|p| p.repositories.unwrap_or_default())
        })
        .await
    }

    async fn paged(
        &self,
        scope: &str,
        first: Url,
        parse: impl Fn(&[u8]) -> serde_json::Result<Vec<String>>,
    ) -> Result<Vec<String>> {
        let mut names = Vec::new();
        let mut next = Some(first);
        let mut pages = 0;
        while let Some(url) = next.take() {
            pages += 1;
            if pages > MAX_LIST_PAGES {
                return Err(self.invalid(format!(
                    "`{}` has more than {MAX_LIST_PAGES} pages",
                    redact(url.as_str())
                )));
            }
            let headers = [("accept", "application/json")];
            let response = self
                .send(
                    scope,
                    Call {
                        headers: &headers,
                        limit: MAX_LIST_PAGE_BYTES,
                        ..Call::get(url.as_str())
                    },
                )
                .await?;
            let page = parse(&response.body).map_err(|e| {
                self.invalid(format!(
                    "`{}` is not a valid list: {e}",
                    redact(url.as_str())
                ))
            })?;
            names.extend(page);
            if names.len() > MAX_LIST_NAMES {
                return Err(self.invalid(format!(
                    "`{}` lists more than {MAX_LIST_NAMES} names",
                    redact(url.as_str())
                )));
            }
            next = match response.header("link").and_then(next_link) {
                Some(link) => {
                    let joined = url.join(&link).map_err(|e| {
                        self.invalid(format!("the `Link` header `{link}` is not a URL: {e}"))
                    })?;
                    if joined.origin() != self.base.origin() {
                        return Err(self.invalid(format!(
                            "the next page `{}` is on another host; not followed",
                            redact(joined.as_str())
                        )));
                    }
                    Some(joined)
                }
                None => None,
            };
        }
        Ok(names)
    }

    /// A 404 for `what` (the registry's `NAME_UNKNOWN`/`MANIFEST_UNKNOWN`) named for the user.
    fn name_not_found(error: Error, what: &str) -> Error {
        match error {
            Error::NotFound { registry, .. } => Error::NotFound {
                registry,
                what: what.to_owned(),
            },
            other => other,
        }
    }
}

/// The scope of pulling from `repository`.
pub fn pull_scope(repository: &str) -> String {
    format!("repository:{repository}:pull")
}

/// The URL of `Link: <url>; rel="next"`.
fn next_link(header: &str) -> Option<String> {
    header.split(',').find_map(|part| {
        let (target, params) = part.trim().split_once(';')?;
        let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        params
            .split(';')
            .any(|p| {
                let p = p.trim().replace(' ', "");
                p == "rel=\"next\"" || p == "rel=next"
            })
            .then(|| target.to_owned())
    })
}

/// Parses `Bearer realm="…",service="…",scope="…"` or `Basic realm="…"`.
fn parse_challenge(header: &str) -> Option<Challenge> {
    let (scheme, rest) = header.trim().split_once(' ').unwrap_or((header.trim(), ""));
    if scheme.eq_ignore_ascii_case("basic") {
        return Some(Challenge::Basic);
    }
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let mut params: HashMap<String, String> = HashMap::new();
    let mut chars = rest.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
        if key.is_empty() {
            break;
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            let mut escaped = false;
            for c in chars.by_ref() {
                match (escaped, c) {
                    (false, '\\') => escaped = true,
                    (false, '"') => break,
                    (_, c) => {
                        value.push(c);
                        escaped = false;
                    }
                }
            }
        } else {
            while let Some(c) = chars.peek() {
                if *c == ',' {
                    break;
                }
                value.push(*c);
                chars.next();
            }
        }
        params.insert(key.trim().to_ascii_lowercase(), value.trim().to_owned());
    }
    Some(Challenge::Bearer {
        realm: params.remove("realm").filter(|r| !r.is_empty())?,
        service: params.remove("service"),
        scope: params.remove("scope"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_are_parsed() {
        assert_eq!(
            parse_challenge(
                r#"Bearer realm="https://auth.example.invalid/token",service="registry.example.invalid",scope="repository:a/b:pull,push""#
            ),
            Some(Challenge::Bearer {
                realm: "https://auth.example.invalid/token".into(),
                service: Some("registry.example.invalid".into()),
                scope: Some("repository:a/b:pull,push".into()),
            })
        );
        assert_eq!(
            parse_challenge(r#"Basic realm="Registry Realm""#),
            Some(Challenge::Basic)
        );
        assert_eq!(parse_challenge("Bearer service=x"), None);
        assert_eq!(parse_challenge("Negotiate"), None);
        assert_eq!(
            parse_challenge("bearer realm=http://127.0.0.1:1/t"),
            Some(Challenge::Bearer {
                realm: "http://127.0.0.1:1/t".into(),
                service: None,
                scope: None
            })
        );
    }

    #[tokio::test]
    async fn credentials_are_not_sent_to_a_plain_http_realm() {
        let client = |base: &str, plain: bool| {
            OciClient::new(
                "r",
                Url::parse(base).unwrap(),
                HttpClient::new("r", crate::source::http::HttpOptions::default()).unwrap(),
                Login::Basic {
                    username: "u".into(),
                    password: "secret-pass".into(),
                },
                plain,
            )
        };
        // An HTTPS registry naming a plain-HTTP realm: refused before any request.
        let https = client("https://127.0.0.1:1/", false);
        let err = https
            .exchange("http://127.0.0.1:1/token", None, "repository:a:pull")
            .await
            .unwrap_err();
        assert!(err.to_string().contains("not HTTPS"), "{err}");
        assert_eq!(https.http().request_count(), 0);
        // A loopback plain-HTTP registry may not send them to a remote plain-HTTP realm either.
        let loopback = client("http://127.0.0.1:1/", true);
        let err = loopback
            .exchange(
                "http://auth.example.invalid/token",
                None,
                "repository:a:pull",
            )
            .await
            .unwrap_err();
        assert!(err.to_string().contains("not HTTPS"), "{err}");
        assert!(!err.to_string().contains("secret-pass"));
    }

    #[test]
    fn next_links_are_read() {
        assert_eq!(
            next_link(r#"</v2/a/tags/list?n=2&last=b>; rel="next""#).as_deref(),
            Some("/v2/a/tags/list?n=2&last=b")
        );
        assert_eq!(next_link(r#"</x>; rel="prev""#), None);
        assert_eq!(next_link("garbage"), None);
    }

    #[test]
    fn only_sha256_digests_are_accepted() {
        assert!(check_digest(&sha256_digest(b"x")));
        for bad in [
            "sha256:abc",
            "sha512:00",
            &format!("sha256:{}", "A".repeat(64)),
            "sha256:../../etc",
        ] {
            assert!(!check_digest(bad), "{bad}");
        }
    }
}
