//! A registry in a GitHub repository (the public service or GitHub Enterprise Server), read with
//! octocrab.
//!
//! Expected flow: the first question downloads the repository tarball at the wanted ref
//! (`GET /repos/{owner}/{repo}/tarball/{ref}`, which GitHub answers with a redirect to the archive:
//! one API request, two HTTP requests); every listing and read of the run is then answered from
//! the files below the registry path (see the `forge` module). KubeVela's reader makes one
//! contents call per directory and per file instead: hundreds of requests against an anonymous
//! budget of 60 an hour. When the tarball is over [`GithubOptions::max_archive_bytes`], one
//! `git/trees/{ref}?recursive=1` call lists the files and `contents/{path}` fetches the
//! `metadata.yaml` files for the listing and the other files when read; a tree GitHub answers
//! `truncated: true` is an error, never a partial listing.
//!
//! With a disk cache, `GET /repos/{owner}/{repo}/commits/{ref}` (the bare commit id, conditional
//! on its last `ETag`) names the commit first, the tarball is fetched at that commit and kept,
//! and the next run whose ref has not moved costs that one request (a `304`, free of the rate
//! limit).
//!
//! Guarantees: the token goes to the API host only (never to the archive host a redirect points
//! to) and never into an error; a rate limit is reported with its reset time, and is waited out
//! only when the wait is short; server errors and timeouts are retried with backoff; the archive
//! is size-capped and its paths are checked.
//!
//! Assumptions: a ref in a `/tree/<ref>/<path>` URL is one path segment (`main`, `v1.2.0`); give a
//! ref containing `/` explicitly ([`GithubOptions::git_ref`]) and the URL's path after it is then
//! taken as the registry path.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use http::header::{HeaderMap, ACCEPT, ETAG, IF_NONE_MATCH, RETRY_AFTER};
use http::HeaderValue;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use octocrab::Octocrab;
use secrecy::{ExposeSecret as _, SecretString};

use crate::model::registry::{Credentials, RegistrySpec};
use crate::source::cache::{CacheOptions, CachedEntry, DiskCache};
use crate::source::forge::{
    self, describe_reset, encode, encode_path, forge_reader, Download, ForgeApi, ForgeCore,
    Snapshot, Tree,
};
use crate::source::OpenOptions;
use crate::source::{Error, Result};

/// The web host of the public GitHub service; its API is at `api.` before it.
const PUBLIC_WEB_HOST: &str = "github.com";

/// The largest repository archive downloaded (compressed), 64 MiB.
pub const MAX_ARCHIVE_BYTES: u64 = 64 * 1024 * 1024;

/// Where a GitHub registry lives and how to reach it.
#[derive(Clone, Debug)]
pub struct GithubOptions {
    /// The API base URL: `None` for the public service, `https://<host>/api/v3` for GitHub
    /// Enterprise Server, any URL for a test double.
    pub api_base: Option<String>,
    /// The repository owner (user or organisation).
    pub owner: String,
    /// The repository name.
    pub repo: String,
    /// A branch, tag or commit; `None` for the repository's default branch.
    pub git_ref: Option<String>,
    /// The directory holding the registry (`""` for the whole repository).
    pub path: String,
    /// A token (personal access token or similar); `None` for anonymous access.
    pub token: Option<SecretString>,
    /// Time allowed to connect.
    pub connect_timeout: Duration,
    /// Time allowed for one request, body included, every retry and wait included.
    pub request_timeout: Duration,
    /// How often a failed request (5xx, 429, timeout, connection failure) is retried.
    pub retries: u32,
    /// The longest wait for a retry; a rate limit that resets later fails at once.
    pub max_retry_wait: Duration,
    /// The largest archive downloaded.
    pub max_archive_bytes: u64,
    /// The disk cache of archives across runs; off unless set (a stored registry gets the
    /// run's cache settings).
    pub cache: CacheOptions,
}

impl GithubOptions {
    /// Options for `owner/repo` on the public service: default branch, whole repository,
    /// anonymous, 10 s to connect, 120 s per request, 3 retries waiting at most 10 s.
    pub fn new(owner: impl Into<String>, repo: impl Into<String>) -> Self {
        GithubOptions {
            api_base: None,
            owner: owner.into(),
            repo: repo.into(),
            git_ref: None,
            path: String::new(),
            token: None,
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(120),
            retries: 3,
            max_retry_wait: Duration::from_secs(10),
            max_archive_bytes: MAX_ARCHIVE_BYTES,
            cache: CacheOptions::off(),
        }
    }

    /// Reads a repository URL as users copy it from the browser:
    /// `https://<host>/<owner>/<repo>[.git]` or `https://<host>/<owner>/<repo>/tree/<ref>/<path>`.
    /// A host other than the public one is taken as GitHub Enterprise Server
    /// (`https://<host>/api/v3`).
    pub fn from_url(registry: &str, url: &str) -> Result<Self> {
        let url = forge::repository_url(registry, url, "GitHub repository")?;
        let mut options = GithubOptions::new(url.owner, url.repo);
        if !url.host.eq_ignore_ascii_case(PUBLIC_WEB_HOST) {
            options.api_base = Some(format!("{}://{}/api/v3", url.scheme, url.host));
        }
        (options.git_ref, options.path) = (url.git_ref, url.path);
        Ok(options)
    }

    /// Sets the ref. When the registry path taken from a URL starts with it (a ref containing
    /// `/`, such as `release/1.2`), that part is removed from the path.
    #[must_use]
    pub fn with_ref(mut self, git_ref: impl Into<String>) -> Self {
        self.put_ref(git_ref.into());
        self
    }

    fn put_ref(&mut self, git_ref: String) {
        if let Some(url_ref) = &self.git_ref {
            let full = if self.path.is_empty() {
                url_ref.clone()
            } else {
                format!("{url_ref}/{}", self.path)
            };
            if let Some(rest) = full.strip_prefix(&git_ref) {
                if rest.is_empty() || rest.starts_with('/') {
                    rest.trim_start_matches('/').clone_into(&mut self.path);
                }
            }
        }
        self.git_ref = Some(git_ref);
    }
}

forge::stored_options!(GithubOptions, GithubOptions::put_ref);

/// Reads addons from a GitHub repository.
#[derive(Debug, Clone)]
pub struct GithubReader {
    core: Arc<ForgeCore<Api>>,
}

/// GitHub's side of the reader.
struct Api {
    client: Octocrab,
    options: GithubOptions,
    registry: String,
}

impl fmt::Debug for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Api")
            .field("registry", &self.registry)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl GithubReader {
    /// The reader of a stored GitHub registry, with the run's cache and HTTP limits.
    pub fn from_spec(
        spec: &RegistrySpec,
        credentials: &Credentials,
        options: &OpenOptions,
    ) -> Result<Self> {
        let mut github: GithubOptions = forge::options_of(spec, credentials, options)?;
        if let Some(http) = &options.http {
            github.connect_timeout = http.connect_timeout;
            github.request_timeout = http.timeout;
            github.retries = http.retries;
            github.max_retry_wait = http.max_retry_wait;
        }
        Self::new(github, spec.name.clone())
    }

    /// A reader for the repository in `options`, under the registry name `registry`.
    pub fn new(options: GithubOptions, registry: impl Into<String>) -> Result<Self> {
        let registry = registry.into();
        let client = client(&options).map_err(|message| Error::Backend {
            registry: registry.clone(),
            message,
            source: None,
        })?;
        Ok(Self::with_client(client, options, registry))
    }

    /// A reader over a client the caller built (its base URI and credentials are used as they
    /// are; `options.api_base` and `options.token` are then only descriptive).
    pub fn with_client(
        client: Octocrab,
        options: GithubOptions,
        registry: impl Into<String>,
    ) -> Self {
        let api_base = options.api_base.as_deref().unwrap_or("public");
        let place = forge::Place::new(
            &options.cache,
            format_args!("github {api_base} {}/{}", options.owner, options.repo),
            options.git_ref.as_deref(),
            &options.path,
        );
        let api = Api {
            client,
            options,
            registry: registry.into(),
        };
        GithubReader {
            core: Arc::new(ForgeCore::new(api, place)),
        }
    }
}

forge_reader!(GithubReader);

/// The octocrab client of `options`: octocrab's own layers (base URI, the token for the API host
/// only, a user agent, redirects followed without the token to another host) over a connection
/// made here, so that Nagle's algorithm is off (octocrab's default client leaves it on) and the
/// connect and read timeouts are the reader's.
fn client(options: &GithubOptions) -> std::result::Result<Octocrab, String> {
    use octocrab::service::middleware::{
        auth_header::AuthHeaderLayer, base_uri::BaseUriLayer, extra_headers::ExtraHeadersLayer,
    };
    use tower::ServiceBuilder;

    let base = options
        .api_base
        .clone()
        .unwrap_or_else(|| format!("https://api.{PUBLIC_WEB_HOST}"));
    let base: http::Uri = base
        .parse()
        .map_err(|e| format!("`{base}` is not a valid API URL: {e}"))?;
    let auth = match &options.token {
        Some(token) => Some(
            HeaderValue::from_str(&format!("Bearer {}", token.expose_secret()))
                .map_err(|_| "the token is not a valid HTTP header value".to_owned())?,
        ),
        None => None,
    };
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_native_roots()
        .map_err(|e| format!("cannot read the system's CA certificates: {e}"))?
        .https_or_http()
        .enable_http1()
        .wrap_connector(crate::net::tcp_connector());
    let mut connector = hyper_timeout::TimeoutConnector::new(https);
    connector.set_connect_timeout(Some(options.connect_timeout));
    connector.set_read_timeout(Some(options.request_timeout));
    let http = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build::<_, octocrab::OctoBody>(connector);
    let user_agent = HeaderValue::from_static(concat!("addonctl/", env!("CARGO_PKG_VERSION")));
    let service = ServiceBuilder::new()
        .layer(AuthHeaderLayer::new(auth, base.clone(), base.clone()))
        .layer(BaseUriLayer::new(base))
        .layer(ExtraHeadersLayer::new(Arc::new(vec![(
            http::header::USER_AGENT,
            user_agent,
        )])))
        .layer(tower_http::follow_redirect::FollowRedirectLayer::new())
        .service(http);
    match octocrab::OctocrabBuilder::new_empty()
        .with_service(service)
        .with_auth(octocrab::AuthState::None)
        .build()
    {
        Ok(client) => Ok(client),
        Err(never) => match never {},
    }
}

/// A successful answer: its body, or "not modified" for a conditional request.
struct Fetched {
    not_modified: bool,
    etag: Option<String>,
    body: Vec<u8>,
}

/// What one attempt ended with.
enum Attempt {
    Done(Fetched),
    Retry(Option<Duration>, Error),
    Fail(Error),
}

/// One GET: where, what to accept, the body limit, and what a 404 means.
struct Get<'a> {
    uri: String,
    accept: &'static str,
    limit: u64,
    /// What was not found, for a 404.
    what: &'a str,
    /// An `ETag` from an earlier answer, for a conditional request.
    if_none_match: Option<&'a str>,
}

impl Api {
    fn repository(&self) -> String {
        format!("{}/{}", self.options.owner, self.options.repo)
    }

    fn repo_uri(&self) -> String {
        let base = self
            .options
            .api_base
            .as_deref()
            .unwrap_or("")
            .trim_end_matches('/');
        format!(
            "{base}/repos/{}/{}",
            encode(&self.options.owner),
            encode(&self.options.repo)
        )
    }

    /// The repository (and ref) as a not-found answer names them.
    fn not_found_what(&self) -> String {
        format!(
            "repository `{}`{}{}",
            self.repository(),
            self.options
                .git_ref
                .as_ref()
                .map(|r| format!(" at ref `{r}`"))
                .unwrap_or_default(),
            if self.options.token.is_some() {
                ""
            } else {
                " (a private repository needs a token)"
            }
        )
    }

    async fn tree_snapshot(&self, commit: Option<&str>) -> Result<Snapshot> {
        let git_ref = commit.or(self.options.git_ref.as_deref()).unwrap_or("HEAD");
        let what = self.not_found_what();
        let body = self
            .get(&Get {
                uri: format!(
                    "{}/git/trees/{}?recursive=1",
                    self.repo_uri(),
                    encode_path(git_ref)
                ),
                accept: "application/vnd.github+json",
                limit: 64 * 1024 * 1024,
                what: &what,
                if_none_match: None,
            })
            .await?
            .body;
        let tree: Tree = serde_json::from_slice(&body).map_err(|e| Error::InvalidContent {
            registry: self.registry.clone(),
            message: format!("the tree of `{}` cannot be read: {e}", self.repository()),
        })?;
        let files = tree.files(&self.registry, &self.repository(), "GitHub")?;
        let tree_ref = commit.or(self.options.git_ref.as_deref());
        Snapshot::from_tree(&self.registry, &self.options.path, files, |path| {
            self.fetch_at(path, tree_ref)
        })
        .await
    }

    /// One file by its path in the repository (`GET /repos/{o}/{r}/contents/{path}`, raw).
    async fn fetch_at(&self, path: String, git_ref: Option<&str>) -> Result<Vec<u8>> {
        let mut uri = format!("{}/contents/{}", self.repo_uri(), encode_path(&path));
        if let Some(git_ref) = git_ref {
            uri.push_str("?ref=");
            uri.push_str(&encode(git_ref));
        }
        let what = format!("file `{path}` of repository `{}`", self.repository());
        Ok(self
            .get(&Get {
                uri,
                accept: "application/vnd.github.raw",
                limit: crate::source::MAX_FILE_SIZE,
                what: &what,
                if_none_match: None,
            })
            .await?
            .body)
    }

    /// A GET through octocrab, retrying what can be retried, bounded in size and in time: one
    /// deadline ([`GithubOptions::request_timeout`]) covers every attempt and wait.
    async fn get(&self, get: &Get<'_>) -> Result<Fetched> {
        let mut attempt = 0u32;
        let deadline = tokio::time::Instant::now() + self.options.request_timeout;
        loop {
            let outcome = match tokio::time::timeout_at(deadline, self.attempt(get)).await {
                Ok(outcome) => outcome,
                Err(_) => Attempt::Retry(
                    None,
                    self.backend(format!(
                        "GitHub did not answer within {} s",
                        self.options.request_timeout.as_secs_f64()
                    )),
                ),
            };
            match outcome {
                Attempt::Done(fetched) => return Ok(fetched),
                Attempt::Fail(error) => return Err(error),
                Attempt::Retry(hint, error) => {
                    if attempt >= self.options.retries {
                        return Err(error);
                    }
                    let backoff = Duration::from_millis(250)
                        .saturating_mul(2u32.saturating_pow(attempt.min(16)))
                        .min(self.options.max_retry_wait);
                    let wait = hint.map_or(backoff, |h| h.max(backoff));
                    if tokio::time::Instant::now() + wait >= deadline {
                        return Err(error);
                    }
                    attempt += 1;
                    tracing::debug!(registry = %self.registry, "retrying in {} ms: {error}", wait.as_millis());
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    async fn attempt(&self, get: &Get<'_>) -> Attempt {
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static(get.accept));
        headers.insert(
            "x-github-api-version",
            HeaderValue::from_static("2022-11-28"),
        );
        if let Some(etag) = get
            .if_none_match
            .and_then(|e| HeaderValue::from_str(e).ok())
        {
            headers.insert(IF_NONE_MATCH, etag);
        }
        let response = match self
            .client
            ._get_with_headers(get.uri.as_str(), Some(headers))
            .await
        {
            Ok(response) => response,
            Err(e) => {
                return Attempt::Retry(
                    None,
                    self.backend(format!(
                        "cannot reach the GitHub API: {}",
                        crate::chain::chain(&e)
                    )),
                )
            }
        };
        let status = response.status().as_u16();
        let etag = response
            .headers()
            .get(ETAG)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if status == 304 && get.if_none_match.is_some() {
            return Attempt::Done(Fetched {
                not_modified: true,
                etag,
                body: Vec::new(),
            });
        }
        if !(200..300).contains(&status) {
            let headers = response.headers().clone();
            let body = Limited::new(response.into_body(), 64 * 1024)
                .collect()
                .await
                .map(http_body_util::Collected::to_bytes)
                .unwrap_or_default();
            return self.status_error(status, &headers, &body, get.what);
        }
        let too_large = |size: u64| {
            Attempt::Fail(Error::TooLarge {
                registry: self.registry.clone(),
                path: get.what.to_owned(),
                size,
                limit: get.limit,
            })
        };
        if let Some(length) = response
            .headers()
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
        {
            if length > get.limit {
                return too_large(length);
            }
        }
        let limit = usize::try_from(get.limit).unwrap_or(usize::MAX);
        match Limited::new(response.into_body(), limit).collect().await {
            Ok(body) => Attempt::Done(Fetched {
                not_modified: false,
                etag,
                body: body.to_bytes().to_vec(),
            }),
            Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
                too_large(get.limit.saturating_add(1))
            }
            Err(e) => Attempt::Retry(
                None,
                self.backend(format!(
                    "the answer for {} broke off: {}",
                    get.what,
                    crate::chain::chain(e.as_ref())
                )),
            ),
        }
    }

    fn status_error(&self, status: u16, headers: &HeaderMap, body: &[u8], what: &str) -> Attempt {
        let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        let github_message = serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|v| v.get("message")?.as_str().map(str::to_owned))
            .map(|m| m.chars().take(200).collect::<String>());
        let label = match &github_message {
            Some(m) => format!("HTTP {status}: {m}"),
            None => format!("HTTP {status}"),
        };
        let remaining = text("x-ratelimit-remaining").and_then(|v| v.trim().parse::<u64>().ok());
        let limit = text("x-ratelimit-limit").unwrap_or("?");
        let reset = text("x-ratelimit-reset").and_then(|v| v.trim().parse::<u64>().ok());
        let retry_after = text(RETRY_AFTER.as_str()).and_then(|v| v.trim().parse::<u64>().ok());
        let rate_limited = status == 429
            || (status == 403
                && (remaining == Some(0)
                    || retry_after.is_some()
                    || github_message
                        .as_deref()
                        .is_some_and(|m| m.to_ascii_lowercase().contains("rate limit"))));
        if rate_limited {
            let (wait, when) = match (retry_after, remaining, reset) {
                (Some(seconds), ..) => (
                    Some(Duration::from_secs(seconds)),
                    format!("retry in {seconds} s"),
                ),
                (None, Some(0), Some(reset)) => (
                    Some(forge::until(reset)),
                    format!("the limit resets {}", describe_reset(reset)),
                ),
                _ => (None, "the reset time was not given".to_owned()),
            };
            let budget = match remaining {
                Some(r) => format!(" ({r} of {limit} requests left)"),
                None => String::new(),
            };
            let hint = if self.options.token.is_some() {
                ""
            } else {
                "; a token raises the limit"
            };
            let error = Error::RateLimited {
                registry: self.registry.clone(),
                message: format!("GitHub answered {label}{budget}; {when}{hint}"),
            };
            return match wait {
                Some(wait) if wait <= self.options.max_retry_wait => {
                    Attempt::Retry(Some(wait), error)
                }
                _ => Attempt::Fail(error),
            };
        }
        match status {
            401 => Attempt::Fail(Error::Unauthorized {
                registry: self.registry.clone(),
                message: if self.options.token.is_some() {
                    format!("GitHub answered {label}; the token is not valid (expired or revoked?)")
                } else {
                    format!("GitHub answered {label}; this repository needs a token")
                },
            }),
            403 => Attempt::Fail(Error::Unauthorized {
                registry: self.registry.clone(),
                message: format!(
                    "GitHub answered {label}; the token may not read `{}`",
                    self.repository()
                ),
            }),
            404 => Attempt::Fail(Error::NotFound {
                registry: self.registry.clone(),
                what: what.to_owned(),
            }),
            // What the commits endpoint answers for a ref that names no commit.
            422 if github_message
                .as_deref()
                .is_some_and(|m| m.starts_with("No commit found")) =>
            {
                Attempt::Fail(Error::NotFound {
                    registry: self.registry.clone(),
                    what: what.to_owned(),
                })
            }
            500..=599 if status != 501 => Attempt::Retry(
                retry_after.map(Duration::from_secs),
                self.backend(format!("GitHub answered {label}")),
            ),
            _ => Attempt::Fail(self.backend(format!("GitHub answered {label}"))),
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

#[async_trait]
impl ForgeApi for Api {
    fn registry(&self) -> &str {
        &self.registry
    }

    fn describe(&self) -> String {
        match &self.options.git_ref {
            Some(git_ref) => format!("`{}` at ref `{git_ref}`", self.repository()),
            None => format!("`{}`", self.repository()),
        }
    }

    /// `GET /repos/{o}/{r}/commits/{ref}` answered as the bare commit id
    /// (`application/vnd.github.sha`), conditional on the `ETag` of the last answer: an
    /// unchanged ref costs a `304`, which GitHub does not count against the rate limit.
    async fn resolve_commit(&self, cache: &DiskCache) -> Result<String> {
        const KEY: &str = "commit";
        let git_ref = self.options.git_ref.as_deref().unwrap_or("HEAD");
        // A cached answer is trusted only while it is a commit id: a corrupt one would otherwise
        // stick, GitHub answering 304 to its `ETag`.
        let cached = cache.load(KEY).filter(|entry| {
            let usable = crate::source::forge::check_commit(
                &self.registry,
                &String::from_utf8_lossy(&entry.body),
            )
            .is_ok();
            if !usable {
                cache.remove(KEY);
            }
            usable
        });
        let what = self.not_found_what();
        let fetched = self
            .get(&Get {
                uri: format!("{}/commits/{}", self.repo_uri(), encode_path(git_ref)),
                accept: "application/vnd.github.sha",
                limit: 4096,
                what: &what,
                if_none_match: cached.as_ref().and_then(|c| c.etag.as_deref()),
            })
            .await?;
        let body = match (fetched.not_modified, cached) {
            (true, Some(entry)) => entry.body,
            (true, None) => {
                return Err(Error::InvalidContent {
                    registry: self.registry.clone(),
                    message: "GitHub answered 304 Not Modified to an unconditional request"
                        .to_owned(),
                })
            }
            (false, _) => {
                if fetched.etag.is_some() {
                    cache.store(
                        KEY,
                        &CachedEntry {
                            body: fetched.body.clone(),
                            etag: fetched.etag,
                            last_modified: None,
                        },
                    );
                }
                fetched.body
            }
        };
        Ok(String::from_utf8_lossy(&body).trim().to_owned())
    }

    /// The tarball first; when it is over the size cap, a tree listing plus the metadata files
    /// (the rest is fetched file by file when read).
    async fn download(&self, commit: Option<&str>) -> Result<Download> {
        let mut uri = format!("{}/tarball", self.repo_uri());
        if let Some(git_ref) = commit.or(self.options.git_ref.as_deref()) {
            uri.push('/');
            uri.push_str(&encode_path(git_ref));
        }
        let what = self.not_found_what();
        let archive = self
            .get(&Get {
                uri,
                accept: "application/vnd.github+json",
                limit: self.options.max_archive_bytes,
                what: &what,
                if_none_match: None,
            })
            .await;
        match archive {
            Ok(fetched) => Ok(Download::Archive(fetched.body)),
            Err(Error::TooLarge { size, limit, .. }) => {
                tracing::info!(
                    registry = %self.registry,
                    "the archive of `{}` is over {limit} bytes ({size}); reading the tree instead",
                    self.repository()
                );
                Ok(Download::Tree(self.tree_snapshot(commit).await?))
            }
            Err(e) => Err(e),
        }
    }

    async fn fetch(&self, path: String, commit: Option<&str>) -> Result<Vec<u8>> {
        self.fetch_at(path, commit.or(self.options.git_ref.as_deref()))
            .await
    }
}

impl fmt::Display for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = &self.options;
        forge::write_location(
            f,
            format_args!("GitHub repository `{}/{}`", o.owner, o.repo),
            o.git_ref.as_deref(),
            &o.path,
        )
    }
}

#[cfg(test)]
mod tests;
