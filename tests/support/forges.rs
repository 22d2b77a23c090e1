//! Protocol-accurate fakes of the GitHub, Gitee and GitLab REST APIs, serving a repository held
//! in memory (by default the fixture registry under `addons/`).
//!
//! One [`Forge`] is one HTTP server on 127.0.0.1 (stopped when dropped, or with its test's
//! runtime) that answers all three APIs on the paths the real services use:
//!
//! - GitHub (also below `/api/v3`, as GitHub Enterprise Server): `GET /repos/{o}/{r}`,
//!   `GET /repos/{o}/{r}/commits/{ref}` (the bare id for `Accept: application/vnd.github.sha`,
//!   with an `ETag`, `304` for a matching `If-None-Match`) and
//!   `GET /repos/{o}/{r}/tarball[/{ref}]`, answered `302 Found` to
//!   `/_codeload/{o}/{r}/legacy.tar.gz/{ref}` (codeload's role), an archive whose top directory is
//!   `{o}-{r}-{sha7}/`; `GET /repos/{o}/{r}/git/trees/{ref}?recursive=1`. Every API answer carries
//!   `X-RateLimit-Limit/Remaining/Reset/Used/Resource`; errors are `{"message", "documentation_url",
//!   "status"}`; the token comes as `Authorization: Bearer|token`.
//! - Gitee (REST v5): `GET /api/v5/repos/{o}/{r}/commits?sha=&per_page=`,
//!   `GET /api/v5/repos/{o}/{r}/tarball?ref=&access_token=` (a redirect to
//!   `/{o}/{r}/repository/archive/{ref}.tar.gz`), `GET /api/v5/repos/{o}/{r}/git/trees/{sha}`,
//!   `GET /api/v5/repos/{o}/{r}/raw/{path}?ref=`; the token comes as the `access_token` query
//!   parameter; errors are `{"message": …}`.
//! - GitLab (REST v4): `GET /api/v4/projects/{url-encoded path}` (`default_branch`),
//!   `GET /api/v4/projects/{id}/repository/commits?ref_name=&per_page=`,
//!   `GET /api/v4/projects/{id}/repository/archive.tar.gz?sha=&path=` (top directory
//!   `{project}-{ref}-{path with / as -}/`, paths kept below it),
//!   `GET /api/v4/projects/{id}/repository/tree?recursive=true&per_page=&page=` (offset pagination
//!   with `Link`, `X-Next-Page`, `X-Page`, `X-Per-Page`, `X-Total`), and
//!   `/repository/files/{path}/raw?ref=`; the token comes as `PRIVATE-TOKEN`; errors are
//!   `{"message": "404 Project Not Found"}` and the like.
//!
//! Tests switch faults on ([`Forge::fail`]): any status (401/403/404/429/500…) with the headers the
//! real service sends with it, a rate limit, a server that hangs, or a truncated archive; and read
//! how many requests were made ([`Forge::requests`]).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Method, Response, StatusCode, Uri};
use serde_json::json;

/// A fault the server answers with instead of the normal answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// A status with the service's error body (401 and 404 as for bad credentials and a missing
    /// project, 403 as forbidden, 5xx as server errors).
    Status(u16),
    /// The primary rate limit: GitHub's `403` with `X-RateLimit-Remaining: 0` and
    /// `X-RateLimit-Reset` this many seconds ahead.
    RateLimitExhausted { reset_in: u64 },
    /// A secondary limit: `429 Too Many Requests` with `Retry-After`.
    TooManyRequests { retry_after: u64 },
    /// Accept the request, never answer.
    Hang,
    /// Answer archives cut in half.
    TruncateArchives,
}

/// Which requests a fault applies to.
#[derive(Debug, Clone)]
struct FaultRule {
    fault: Fault,
    /// How many more requests get it (`None` = all).
    remaining: Option<usize>,
}

/// One repository.
#[derive(Debug, Clone)]
pub struct Repo {
    /// `owner` (GitHub, Gitee) or the namespace path (GitLab, may hold `/`).
    pub owner: String,
    /// The repository (project) name.
    pub name: String,
    /// The default branch.
    pub default_branch: String,
    /// Ref → files (path relative to the repository root → bytes).
    pub refs: BTreeMap<String, BTreeMap<String, Vec<u8>>>,
}

impl Repo {
    /// A repository whose default branch `main` holds `files`.
    pub fn new(owner: &str, name: &str, files: BTreeMap<String, Vec<u8>>) -> Self {
        Repo {
            owner: owner.to_owned(),
            name: name.to_owned(),
            default_branch: "main".to_owned(),
            refs: BTreeMap::from([("main".to_owned(), files)]),
        }
    }

    /// Adds a branch or tag.
    pub fn with_ref(mut self, name: &str, files: BTreeMap<String, Vec<u8>>) -> Self {
        self.refs.insert(name.to_owned(), files);
        self
    }

    fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }

    /// The commit a ref points at: a hash of the repository, the ref and its files, so that it
    /// moves when the files change.
    pub fn sha(&self, git_ref: &str) -> String {
        use sha2::Digest;
        let mut hasher = sha2::Sha256::new();
        hasher.update(format!("{}@{git_ref}", self.full_name()));
        for (path, bytes) in self.refs.get(git_ref).into_iter().flatten() {
            hasher.update(path.as_bytes());
            hasher.update(bytes);
        }
        let digest = hasher.finalize();
        digest
            .iter()
            .take(20)
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .concat()
    }

    fn files(&self, git_ref: Option<&str>) -> Option<(&str, &BTreeMap<String, Vec<u8>>)> {
        let git_ref = match git_ref {
            None | Some("HEAD") => self.default_branch.as_str(),
            Some(r) => r,
        };
        if let Some((name, files)) = self.refs.get_key_value(git_ref) {
            return Some((name, files));
        }
        // A commit id names its ref too.
        self.refs
            .iter()
            .find(|(name, _)| self.sha(name) == git_ref)
            .map(|(name, files)| (name.as_str(), files))
    }
}

/// Files of a directory on disk, relative paths under `prefix/`.
pub fn files_from_dir(dir: &Path, prefix: &str) -> BTreeMap<String, Vec<u8>> {
    fn walk(base: &Path, dir: &Path, prefix: &str, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).expect("read_dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                walk(base, &path, prefix, out);
            } else {
                let rel = path.strip_prefix(base).expect("prefix").to_string_lossy();
                let key = if prefix.is_empty() {
                    rel.into_owned()
                } else {
                    format!("{prefix}/{rel}")
                };
                out.insert(key, std::fs::read(&path).expect("read"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, prefix, &mut out);
    out
}

/// A registry of `count` small addons (`addon-000` …) under `prefix/`, each with metadata, a
/// template and two resources: the request-budget fixture.
pub fn many_addons(count: usize, prefix: &str) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for i in 0..count {
        let name = format!("addon-{i:03}");
        let dir = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        out.insert(
            format!("{dir}/metadata.yaml"),
            format!("name: {name}\nversion: 1.0.{i}\ndescription: Addon number {i}\n").into_bytes(),
        );
        out.insert(
            format!("{dir}/resources/configmap.yaml"),
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  index: \"{i}\"\n"
            )
            .into_bytes(),
        );
        out.insert(
            format!("{dir}/resources/service-account.yaml"),
            format!("apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {name}\n")
                .into_bytes(),
        );
        out.insert(
            format!("{dir}/README.md"),
            format!("# {name}\n").into_bytes(),
        );
    }
    out
}

struct Shared {
    repo: Mutex<Repo>,
    /// The token every request must carry; `None` = public.
    token: Mutex<Option<String>>,
    fault: Mutex<Option<FaultRule>>,
    requests: Mutex<Vec<String>>,
    count: AtomicU64,
    base: String,
    /// Answer tree listings cut in half with `"truncated": true`.
    truncate_trees: std::sync::atomic::AtomicBool,
}

/// A running fake forge.
pub struct Forge {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Forge {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl Forge {
    /// Starts a fake serving `repo` on 127.0.0.1 (a free port).
    pub async fn start(repo: Repo) -> Forge {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let shared = Arc::new(Shared {
            repo: Mutex::new(repo),
            token: Mutex::new(None),
            fault: Mutex::new(None),
            requests: Mutex::new(Vec::new()),
            count: AtomicU64::new(0),
            base: url.clone(),
            truncate_trees: std::sync::atomic::AtomicBool::new(false),
        });
        let app = axum::Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&shared));
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Forge {
            url,
            shared,
            server,
        }
    }

    /// A fake whose repository `acme/addons` holds the fixture registry under `addons/`.
    pub async fn fixture() -> Forge {
        let files = files_from_dir(&crate::support::fixture_registry(), "addons");
        Forge::start(Repo::new("acme", "addons", files)).await
    }

    /// Requires `token` on every request from now on.
    pub fn require_token(&self, token: &str) {
        *self.shared.token.lock().expect("lock") = Some(token.to_owned());
    }

    /// Answers every request with `fault`.
    pub fn fail(&self, fault: Fault) {
        *self.shared.fault.lock().expect("lock") = Some(FaultRule {
            fault,
            remaining: None,
        });
    }

    /// Answers the next `times` requests with `fault`, then normally again.
    pub fn fail_times(&self, fault: Fault, times: usize) {
        *self.shared.fault.lock().expect("lock") = Some(FaultRule {
            fault,
            remaining: Some(times),
        });
    }

    /// Answers tree listings cut in half and marked `"truncated": true`, as GitHub does for
    /// trees over its limits.
    pub fn truncate_trees(&self) {
        self.shared.truncate_trees.store(true, Ordering::SeqCst);
    }

    /// Replaces the files of a ref (a push).
    pub fn push(&self, git_ref: &str, files: BTreeMap<String, Vec<u8>>) {
        self.shared
            .repo
            .lock()
            .expect("lock")
            .refs
            .insert(git_ref.to_owned(), files);
    }

    /// Answers normally again.
    pub fn heal(&self) {
        *self.shared.fault.lock().expect("lock") = None;
    }

    /// How many requests were served so far.
    pub fn requests(&self) -> u64 {
        self.shared.count.load(Ordering::SeqCst)
    }

    /// The requests served so far (`METHOD path?query`).
    pub fn log(&self) -> Vec<String> {
        self.shared.requests.lock().expect("lock").clone()
    }

    /// Forgets the counted requests.
    pub fn reset_count(&self) {
        self.shared.count.store(0, Ordering::SeqCst);
        self.shared.requests.lock().expect("lock").clear();
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Api {
    Github,
    Gitee,
    Gitlab,
    Download,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs()
}

fn query_pairs(uri: &Uri) -> BTreeMap<String, String> {
    uri.query()
        .map(|q| {
            q.split('&')
                .map(|pair| {
                    let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                    (decode(k), decode(v))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(b) = u8::from_str_radix(&text[i + 1..i + 3], 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn json_response(status: u16, body: &serde_json::Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json; charset=utf-8")
        .body(Body::from(body.to_string()))
        .expect("response")
}

fn archive_response(bytes: Vec<u8>, file_name: &str) -> Response<Body> {
    Response::builder()
        .status(200)
        .header("content-type", "application/x-gzip")
        .header(
            "content-disposition",
            format!("attachment; filename={file_name}"),
        )
        .body(Body::from(bytes))
        .expect("response")
}

fn error_body(api: Api, status: u16) -> serde_json::Value {
    let reason = StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Error");
    match api {
        Api::Github | Api::Download => {
            let message = match status {
                401 => "Bad credentials",
                403 => "Resource not accessible by personal access token",
                404 => "Not Found",
                _ => reason,
            };
            json!({
                "message": message,
                "documentation_url": "https://docs.example.test/rest",
                "status": status.to_string(),
            })
        }
        Api::Gitee => json!({
            "message": match status {
                401 => "401 Unauthorized: Access token does not exist".to_owned(),
                404 => "Not Found Project".to_owned(),
                _ => format!("{status} {reason}"),
            }
        }),
        Api::Gitlab => json!({
            "message": match status {
                401 => "401 Unauthorized".to_owned(),
                404 => "404 Project Not Found".to_owned(),
                _ => format!("{status} {reason}"),
            }
        }),
    }
}

/// Adds GitHub's rate-limit headers to an API answer.
fn github_rate_headers(mut response: Response<Body>, remaining: u64, reset: u64) -> Response<Body> {
    let headers = response.headers_mut();
    headers.insert("x-ratelimit-limit", "60".parse().expect("header"));
    headers.insert("x-ratelimit-remaining", remaining.into());
    headers.insert("x-ratelimit-reset", reset.into());
    headers.insert("x-ratelimit-used", (60 - remaining.min(60)).into());
    headers.insert("x-ratelimit-resource", "core".parse().expect("header"));
    headers.insert(
        "x-github-api-version-selected",
        "2022-11-28".parse().expect("header"),
    );
    response
}

fn fault_response(api: Api, fault: &Fault) -> Option<Response<Body>> {
    let reset = now() + 3600;
    let response = match fault {
        Fault::Status(status) => json_response(*status, &error_body(api, *status)),
        Fault::RateLimitExhausted { reset_in } => {
            let body = match api {
                Api::Github | Api::Download => json!({
                    "message": "API rate limit exceeded for 127.0.0.1. (But here's the good news: Authenticated requests get a higher rate limit.)",
                    "documentation_url": "https://docs.example.test/rest/rate-limit",
                }),
                Api::Gitee => json!({"message": "Rate Limit Exceeded"}),
                Api::Gitlab => json!({"message": "Retry later"}),
            };
            let response = json_response(403, &body);
            return Some(github_rate_headers(response, 0, now() + reset_in));
        }
        Fault::TooManyRequests { retry_after } => {
            let mut response = json_response(
                429,
                &json!({"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}),
            );
            let headers = response.headers_mut();
            headers.insert("retry-after", (*retry_after).into());
            headers.insert("ratelimit-limit", 600u64.into());
            headers.insert("ratelimit-remaining", 0u64.into());
            headers.insert("ratelimit-reset", (now() + retry_after).into());
            response
        }
        Fault::Hang | Fault::TruncateArchives => return None,
    };
    Some(if api == Api::Github {
        github_rate_headers(response, 59, reset)
    } else {
        response
    })
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response<Body> {
    shared.count.fetch_add(1, Ordering::SeqCst);
    shared.requests.lock().expect("lock").push(format!(
        "{method} {}",
        uri.path_and_query().map_or("", |p| p.as_str())
    ));
    let path = uri.path().to_owned();
    let api = if path.starts_with("/api/v5/") {
        Api::Gitee
    } else if path.starts_with("/api/v4/") {
        Api::Gitlab
    } else if path.starts_with("/repos/") || path.starts_with("/api/v3/repos/") {
        Api::Github
    } else {
        Api::Download
    };

    // Faults first.
    let fault = {
        let mut rule = shared.fault.lock().expect("lock");
        let fault = rule.as_ref().map(|r| r.fault.clone());
        if let Some(r) = rule.as_mut() {
            if let Some(n) = r.remaining.as_mut() {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    *rule = None;
                }
            }
        }
        fault
    };
    if fault == Some(Fault::Hang) {
        tokio::time::sleep(Duration::from_secs(3600)).await;
    }
    if let Some(fault) = &fault {
        if let Some(response) = fault_response(api, fault) {
            return response;
        }
    }
    let truncate = fault == Some(Fault::TruncateArchives);

    if method != Method::GET {
        return json_response(405, &json!({"message": "Method Not Allowed"}));
    }

    // Credentials, as each API takes them. Archive downloads (the redirect targets) carry the
    // temporary token the API put in the location, as GitHub's codeload does for private
    // repositories.
    let query = query_pairs(&uri);
    let required = shared.token.lock().expect("lock").clone();
    if let Some(token) = required {
        let given = match api {
            Api::Download => query
                .get("token")
                .filter(|t| t.as_str() == DOWNLOAD_TOKEN)
                .map(|_| token.clone()),
            Api::Github => headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| {
                    v.strip_prefix("Bearer ")
                        .or_else(|| v.strip_prefix("token "))
                })
                .map(str::to_owned),
            Api::Gitee => query.get("access_token").cloned(),
            Api::Gitlab => headers
                .get("private-token")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
        };
        if given.as_deref() != Some(token.as_str()) {
            let response = json_response(401, &error_body(api, 401));
            return if api == Api::Github {
                github_rate_headers(response, 59, now() + 3600)
            } else {
                response
            };
        }
    }

    let repo = shared.repo.lock().expect("lock").clone();
    let private = shared.token.lock().expect("lock").is_some();
    let response = match api {
        Api::Github => github(&shared, &repo, &path, &query, &headers, private),
        Api::Gitee => gitee(&shared, &repo, &path, &query, private),
        Api::Gitlab => gitlab(&shared.base, &repo, &uri, &query, truncate),
        Api::Download => download(&repo, &path, truncate),
    };
    if api == Api::Github {
        github_rate_headers(response, 59, now() + 3600)
    } else {
        response
    }
}

fn not_found(api: Api) -> Response<Body> {
    json_response(404, &error_body(api, 404))
}

fn tarball(prefix: &str, files: &BTreeMap<String, Vec<u8>>, only: Option<&str>) -> Vec<u8> {
    let files: Vec<(String, Vec<u8>)> = files
        .iter()
        .filter(|(path, _)| {
            only.is_none_or(|dir| path.starts_with(&format!("{}/", dir.trim_matches('/'))))
        })
        .map(|(p, b)| (p.clone(), b.clone()))
        .collect();
    addonctl::source::archive::write_tgz(Some(prefix), &files).expect("tgz")
}

fn redirect(location: String) -> Response<Body> {
    Response::builder()
        .status(302)
        .header("location", location)
        .header("content-length", "0")
        .body(Body::empty())
        .expect("response")
}

/// The temporary token archive locations carry for private repositories.
const DOWNLOAD_TOKEN: &str = "temporary-download-token";

fn download_query(private: bool) -> String {
    if private {
        format!("?token={DOWNLOAD_TOKEN}")
    } else {
        String::new()
    }
}

fn github(
    shared: &Shared,
    repo: &Repo,
    path: &str,
    query: &BTreeMap<String, String>,
    headers: &HeaderMap,
    private: bool,
) -> Response<Body> {
    let base = shared.base.as_str();
    let path = path.strip_prefix("/api/v3").unwrap_or(path);
    if path == format!("/repos/{}", repo.full_name()) {
        return json_response(
            200,
            &json!({
                "id": 42,
                "name": repo.name,
                "full_name": repo.full_name(),
                "private": false,
                "default_branch": repo.default_branch,
                "html_url": format!("{base}/{}", repo.full_name()),
            }),
        );
    }
    let Some(rest) = path.strip_prefix(&format!("/repos/{}/", repo.full_name())) else {
        return not_found(Api::Github);
    };
    if rest.is_empty() {
        return not_found(Api::Github);
    }
    let (head, git_ref) = match rest.split_once('/') {
        Some((head, tail)) => (head, Some(decode(tail))),
        None => (rest, None),
    };
    match head {
        "tarball" => {
            let Some((name, _)) = repo.files(git_ref.as_deref()) else {
                return not_found(Api::Github);
            };
            redirect(format!(
                "{base}/_codeload/{}/legacy.tar.gz/refs/heads/{name}{}",
                repo.full_name(),
                download_query(private)
            ))
        }
        "commits" => {
            // `GET /repos/{o}/{r}/commits/{ref}`; with `Accept: application/vnd.github.sha` the
            // bare commit id, with an `ETag`, and `304` for a matching `If-None-Match`.
            let Some((name, _)) = git_ref.as_deref().and_then(|r| repo.files(Some(r))) else {
                return json_response(
                    422,
                    &json!({"message": "No commit found for SHA: unknown", "documentation_url": "https://docs.example.test/rest", "status": "422"}),
                );
            };
            let sha = repo.sha(name);
            let etag = format!("\"{sha}\"");
            let accept = headers
                .get("accept")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            if !accept.contains("application/vnd.github.sha") {
                return json_response(200, &json!({"sha": sha, "commit": {"message": "update"}}));
            }
            let matches = headers
                .get("if-none-match")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v == etag);
            Response::builder()
                .status(if matches { 304 } else { 200 })
                .header("content-type", "application/vnd.github.sha; charset=utf-8")
                .header("etag", etag)
                .body(if matches {
                    Body::empty()
                } else {
                    Body::from(sha)
                })
                .expect("response")
        }
        "git" => {
            let Some(sha) = git_ref.as_deref().and_then(|r| r.strip_prefix("trees/")) else {
                return not_found(Api::Github);
            };
            let Some((name, files)) = repo.files(Some(&decode(sha))) else {
                return not_found(Api::Github);
            };
            json_response(200, &git_tree(shared, repo, name, files))
        }
        "contents" => {
            let Some(file) = git_ref.as_deref() else {
                return not_found(Api::Github);
            };
            let Some((_, files)) = repo.files(query.get("ref").map(String::as_str)) else {
                return not_found(Api::Github);
            };
            match files.get(file) {
                Some(bytes) => Response::builder()
                    .status(200)
                    .header("content-type", "application/vnd.github.raw; charset=utf-8")
                    .body(Body::from(bytes.clone()))
                    .expect("response"),
                None => not_found(Api::Github),
            }
        }
        _ => not_found(Api::Github),
    }
}

/// A recursive git tree in the GitHub/Gitee JSON shape.
fn git_tree(
    shared: &Shared,
    repo: &Repo,
    git_ref: &str,
    files: &BTreeMap<String, Vec<u8>>,
) -> serde_json::Value {
    let mut dirs = std::collections::BTreeSet::new();
    for path in files.keys() {
        let mut parts: Vec<&str> = path.split('/').collect();
        parts.pop();
        for i in 1..=parts.len() {
            dirs.insert(parts[..i].join("/"));
        }
    }
    let mut tree: Vec<serde_json::Value> = dirs
        .into_iter()
        .map(|d| json!({"path": d, "mode": "040000", "type": "tree", "sha": format!("{:040}", 0)}))
        .collect();
    for (path, bytes) in files {
        tree.push(json!({"path": path, "mode": "100644", "type": "blob", "sha": format!("{:040}", bytes.len()), "size": bytes.len()}));
    }
    let truncated = shared.truncate_trees.load(Ordering::SeqCst);
    if truncated {
        tree.truncate(tree.len() / 2);
    }
    json!({
        "sha": repo.sha(git_ref),
        "url": format!("{}/repos/{}/git/trees/{}", shared.base, repo.full_name(), repo.sha(git_ref)),
        "tree": tree,
        "truncated": truncated,
    })
}

fn gitee(
    shared: &Shared,
    repo: &Repo,
    path: &str,
    query: &BTreeMap<String, String>,
    private: bool,
) -> Response<Body> {
    let base = shared.base.as_str();
    if path == format!("/api/v5/repos/{}", repo.full_name()) {
        return json_response(
            200,
            &json!({
                "id": 42,
                "full_name": repo.full_name(),
                "path": repo.name,
                "default_branch": repo.default_branch,
                "html_url": format!("{base}/{}", repo.full_name()),
            }),
        );
    }
    let Some(rest) = path.strip_prefix(&format!("/api/v5/repos/{}/", repo.full_name())) else {
        return not_found(Api::Gitee);
    };
    if rest == "tarball" {
        let Some((name, _)) = repo.files(query.get("ref").map(String::as_str)) else {
            return not_found(Api::Gitee);
        };
        return redirect(format!(
            "{base}/{}/repository/archive/{name}.tar.gz{}",
            repo.full_name(),
            download_query(private)
        ));
    }
    if rest == "commits" {
        // `GET /repos/{o}/{r}/commits?sha=&per_page=`: the newest commits of a ref (the default
        // branch without `sha`).
        let Some((name, _)) = repo.files(query.get("sha").map(String::as_str)) else {
            return not_found(Api::Gitee);
        };
        let sha = repo.sha(name);
        return json_response(
            200,
            &json!([{"sha": sha, "url": format!("{base}/api/v5/repos/{}/commits/{sha}", repo.full_name()), "commit": {"message": "update"}}]),
        );
    }
    if let Some(sha) = rest.strip_prefix("git/trees/") {
        let Some((name, files)) = repo.files(Some(&decode(sha))) else {
            return not_found(Api::Gitee);
        };
        return json_response(200, &git_tree(shared, repo, name, files));
    }
    if let Some(file) = rest.strip_prefix("raw/") {
        let Some((_, files)) = repo.files(query.get("ref").map(String::as_str)) else {
            return not_found(Api::Gitee);
        };
        return match files.get(&decode(file)) {
            Some(bytes) => Response::builder()
                .status(200)
                .header("content-type", "text/plain; charset=utf-8")
                .body(Body::from(bytes.clone()))
                .expect("response"),
            None => not_found(Api::Gitee),
        };
    }
    not_found(Api::Gitee)
}

fn project_json(base: &str, repo: &Repo) -> serde_json::Value {
    json!({
        "id": 42,
        "name": repo.name,
        "path": repo.name,
        "path_with_namespace": repo.full_name(),
        "default_branch": repo.default_branch,
        "visibility": "public",
        "web_url": format!("{base}/{}", repo.full_name()),
        "http_url_to_repo": format!("{base}/{}.git", repo.full_name()),
    })
}

fn gitlab(
    base: &str,
    repo: &Repo,
    uri: &Uri,
    query: &BTreeMap<String, String>,
    truncate: bool,
) -> Response<Body> {
    let path = uri.path();
    let Some(rest) = path.strip_prefix("/api/v4/projects/") else {
        return not_found(Api::Gitlab);
    };
    let (id, tail) = rest.split_once('/').unwrap_or((rest, ""));
    let id = decode(id);
    if id != "42" && id != repo.full_name() {
        return not_found(Api::Gitlab);
    }
    match tail {
        "" => json_response(200, &project_json(base, repo)),
        "repository/archive.tar.gz" | "repository/archive" => {
            let Some((name, files)) = repo.files(query.get("sha").map(String::as_str)) else {
                return json_response(404, &json!({"message": "404 Not Found"}));
            };
            let sub = query.get("path").map(|p| p.trim_matches('/').to_owned());
            let mut top = format!("{}-{name}", repo.name);
            if let Some(sub) = sub.as_deref().filter(|s| !s.is_empty()) {
                top.push('-');
                top.push_str(&sub.replace('/', "-"));
            }
            let mut bytes = tarball(&top, files, sub.as_deref().filter(|s| !s.is_empty()));
            if truncate {
                bytes.truncate(bytes.len() / 2);
            }
            archive_response(bytes, &format!("{top}.tar.gz"))
        }
        "repository/tree" => gitlab_tree(base, repo, uri, query),
        "repository/commits" => {
            // The newest commits of `ref_name` (the default branch without it); an unknown ref
            // gives an empty list.
            let commits: Vec<serde_json::Value> = repo
                .files(query.get("ref_name").map(String::as_str))
                .map(|(name, _)| {
                    let sha = repo.sha(name);
                    json!({"id": sha, "short_id": &sha[..8], "title": "update", "message": "update\n"})
                })
                .into_iter()
                .collect();
            json_response(200, &serde_json::Value::Array(commits))
        }
        _ => {
            if let Some(file) = tail
                .strip_prefix("repository/files/")
                .and_then(|f| f.strip_suffix("/raw"))
            {
                let Some((_, files)) = repo.files(query.get("ref").map(String::as_str)) else {
                    return json_response(404, &json!({"message": "404 Commit Not Found"}));
                };
                return match files.get(&decode(file)) {
                    Some(bytes) => Response::builder()
                        .status(200)
                        .header("content-type", "text/plain; charset=utf-8")
                        .body(Body::from(bytes.clone()))
                        .expect("response"),
                    None => json_response(404, &json!({"message": "404 File Not Found"})),
                };
            }
            json_response(404, &json!({"error": "404 Not Found"}))
        }
    }
}

fn gitlab_tree(
    base: &str,
    repo: &Repo,
    uri: &Uri,
    query: &BTreeMap<String, String>,
) -> Response<Body> {
    let Some((_, files)) = repo.files(query.get("ref").map(String::as_str)) else {
        return json_response(404, &json!({"message": "404 Tree Not Found"}));
    };
    let sub = query
        .get("path")
        .map(|p| p.trim_matches('/').to_owned())
        .unwrap_or_default();
    let mut entries = Vec::new();
    let mut dirs = std::collections::BTreeSet::new();
    for path in files.keys() {
        if !sub.is_empty() && !path.starts_with(&format!("{sub}/")) {
            continue;
        }
        let mut parts: Vec<&str> = path.split('/').collect();
        parts.pop();
        for i in 1..=parts.len() {
            let dir = parts[..i].join("/");
            if dir.len() > sub.len() {
                dirs.insert(dir);
            }
        }
        entries.push((path.clone(), "blob"));
    }
    entries.extend(dirs.into_iter().map(|d| (d, "tree")));
    entries.sort();
    let per_page: usize = query
        .get("per_page")
        .and_then(|p| p.parse().ok())
        .unwrap_or(20)
        .clamp(1, 100);
    let page: usize = query
        .get("page")
        .and_then(|p| p.parse().ok())
        .unwrap_or(1)
        .max(1);
    let total = entries.len();
    let pages = total.div_ceil(per_page).max(1);
    let body: Vec<serde_json::Value> = entries
        .iter()
        .skip((page - 1) * per_page)
        .take(per_page)
        .map(|(path, kind)| {
            json!({
                "id": format!("{:040}", path.len()),
                "name": path.rsplit('/').next().unwrap_or(path),
                "type": kind,
                "path": path,
                "mode": if *kind == "tree" { "040000" } else { "100644" },
            })
        })
        .collect();
    let mut response = json_response(200, &serde_json::Value::Array(body));
    let headers = response.headers_mut();
    headers.insert("x-page", page.into());
    headers.insert("x-per-page", per_page.into());
    headers.insert("x-total", total.into());
    headers.insert("x-total-pages", pages.into());
    if page < pages {
        headers.insert("x-next-page", (page + 1).into());
        let mut next: Vec<String> = query
            .iter()
            .filter(|(k, _)| k.as_str() != "page")
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        next.push(format!("page={}", page + 1));
        headers.insert(
            "link",
            format!("<{base}{}?{}>; rel=\"next\"", uri.path(), next.join("&"))
                .parse()
                .expect("header"),
        );
    } else {
        headers.insert("x-next-page", "".parse().expect("header"));
    }
    response
}

fn download(repo: &Repo, path: &str, truncate: bool) -> Response<Body> {
    // GitHub's codeload: /_codeload/{o}/{r}/legacy.tar.gz/refs/heads/{ref}
    if let Some(git_ref) = path
        .strip_prefix(&format!(
            "/_codeload/{}/legacy.tar.gz/refs/heads/",
            repo.full_name()
        ))
        .map(decode)
    {
        let Some((name, files)) = repo.files(Some(&git_ref)) else {
            return not_found(Api::Download);
        };
        let sha = repo.sha(name);
        let top = format!(
            "{}-{}-{}",
            repo.owner.replace('/', "-"),
            repo.name,
            &sha[..7]
        );
        let mut bytes = tarball(&top, files, None);
        if truncate {
            bytes.truncate(bytes.len() / 2);
        }
        return archive_response(bytes, &format!("{top}.tar.gz"));
    }
    // Gitee's archive download: /{o}/{r}/repository/archive/{ref}.tar.gz
    if let Some(git_ref) = path
        .strip_prefix(&format!("/{}/repository/archive/", repo.full_name()))
        .and_then(|r| r.strip_suffix(".tar.gz"))
        .map(decode)
    {
        let Some((name, files)) = repo.files(Some(&git_ref)) else {
            return not_found(Api::Download);
        };
        let top = format!("{}-{name}", repo.name);
        let mut bytes = tarball(&top, files, None);
        if truncate {
            bytes.truncate(bytes.len() / 2);
        }
        return archive_response(bytes, &format!("{top}.tar.gz"));
    }
    not_found(Api::Download)
}
