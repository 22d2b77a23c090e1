//! The server's handlers and guard without sockets: the whole router over the in-process fake
//! API, one request at a time (`tower::ServiceExt::oneshot`). What a refusal answers, that no
//! handler ran for it (the fake API saw no request), the headers of every answer, the body cap,
//! the JSON errors, and the committed OpenAPI document.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use axum::response::Response;
use secrecy::SecretString;
use serde_json::{json, Value};
use tower::ServiceExt as _;

use super::{router, App, Mode, ServeOptions};
use crate::cluster::fake::FakeApi;
use crate::context::{Runtime, Settings};

const TOKEN: &str = "0123456789abcdef0123456789abcdef";
const HOST: &str = "127.0.0.1:18080";
const SECRETS: &str = "/api/v1/namespaces/vela-system/secrets";
const ACCESS_REVIEWS: &str = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";

/// A fake API with no addon installed, answering `allowed` to every access review.
fn api(allowed: bool) -> FakeApi {
    FakeApi::default()
        .serves("v1", "secrets", "Secret")
        .serves("v1", "configmaps", "ConfigMap")
        .on(
            "GET",
            SECRETS,
            200,
            json!({"apiVersion": "v1", "kind": "SecretList", "metadata": {}, "items": []}),
        )
        .on(
            "GET",
            "/api/v1/namespaces/vela-system/configmaps",
            200,
            json!({"apiVersion": "v1", "kind": "ConfigMapList", "metadata": {}, "items": []}),
        )
        .on(
            "GET",
            "/version",
            200,
            json!({"major": "1", "minor": "31", "gitVersion": "v1.31.0", "platform": "linux/amd64"}),
        )
        .on(
            "POST",
            ACCESS_REVIEWS,
            201,
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                   "spec": {}, "status": {"allowed": allowed}}),
        )
}

/// A local registry with one addon tagged `system` (and the built-in one after it).
fn system_registry() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let addon = dir.path().join("hidden-system");
    fs_err::create_dir_all(&addon).expect("the addon's directory");
    fs_err::write(
        addon.join("metadata.yaml"),
        "name: hidden-system\nversion: 1.0.0\ndescription: Only admins see it\ntags: [system]\n",
    )
    .expect("its metadata");
    dir
}

fn app_over(api: &FakeApi, registries: &[PathBuf]) -> Arc<App> {
    let settings = Settings {
        registry_dirs: registries.to_vec(),
        ..Settings::new("vela-system")
    };
    let runtime = Runtime::with_cluster(&settings, api.watched_cluster("local"))
        .expect("a runtime over the fake API");
    let addr: SocketAddr = HOST.parse().expect("an address");
    let options = ServeOptions {
        mode: Mode::Local {
            token: SecretString::from(TOKEN.to_owned()),
        },
        addr,
        sync_interval: Duration::from_secs(3600),
    };
    App::new(runtime, &options).expect("the server's state")
}

fn app(api: &FakeApi) -> Arc<App> {
    app_over(api, &[])
}

/// A request as the server's own pages make it: the bound `Host`, the bearer token.
fn request(method: Method, path: &str) -> axum::http::request::Builder {
    Request::builder()
        .method(method)
        .uri(path)
        .header(header::HOST, HOST)
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
}

fn post_json(path: &str, body: &str) -> Request<Body> {
    request(Method::POST, path)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ORIGIN, format!("http://{HOST}"))
        .header("sec-fetch-site", "same-origin")
        .body(Body::from(body.to_owned()))
        .expect("a request")
}

async fn send(app: &Arc<App>, request: Request<Body>) -> Response {
    tokio::time::timeout(
        Duration::from_secs(60),
        router(Arc::clone(app)).oneshot(request),
    )
    .await
    .expect("an answer within a minute")
    .expect("the router never fails")
}

async fn json_of(response: Response) -> Value {
    let bytes = axum::body::to_bytes(response.into_body(), 16 * 1024 * 1024)
        .await
        .expect("the body");
    serde_json::from_slice(&bytes).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}",
            String::from_utf8_lossy(&bytes)
                .chars()
                .take(500)
                .collect::<String>()
        )
    })
}

fn is_json(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"))
}

/// The headers every answer carries, and no CORS header.
fn assert_hardened(response: &Response) {
    let headers = response.headers();
    for (name, value) in [
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "same-origin"),
        ("x-frame-options", "DENY"),
        (
            "content-security-policy",
            super::guard::CONTENT_SECURITY_POLICY,
        ),
    ] {
        assert_eq!(
            headers.get(name).and_then(|v| v.to_str().ok()),
            Some(value),
            "{name} on an answer {}: {headers:?}",
            response.status()
        );
    }
    // Nothing is kept by a cache; an event stream says `no-cache` (SSE's own), the rest `no-store`.
    let streamed = headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let cache = headers
        .get(header::CACHE_CONTROL)
        .and_then(|v| v.to_str().ok());
    assert!(
        cache == Some("no-store") || (streamed && cache == Some("no-cache")),
        "cache-control on an answer {}: {headers:?}",
        response.status()
    );
    let cors: Vec<_> = headers
        .keys()
        .filter(|name| name.as_str().starts_with("access-control-"))
        .collect();
    assert!(cors.is_empty(), "CORS headers sent: {cors:?}");
}

mod api;
mod guard;

/// Where the committed document is.
fn committed_openapi() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/openapi.json")
}

#[test]
fn the_committed_openapi_document_is_the_code_s() {
    let generated = super::openapi::json();
    let path = committed_openapi();
    if std::env::var_os("UPDATE_OPENAPI").is_some() {
        fs_err::write(&path, &generated).expect("docs/openapi.json written");
        return;
    }
    let committed = fs_err::read_to_string(&path).unwrap_or_default();
    if committed != generated {
        let line = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .map_or_else(
                || committed.lines().count().min(generated.lines().count()) + 1,
                |i| i + 1,
            );
        panic!(
            "docs/openapi.json differs from the API the code serves (first at line {line}).\n\
             Regenerate it with:\n    UPDATE_OPENAPI=1 cargo test --locked --lib serve::tests::the_committed_openapi_document\n\
             and commit it."
        );
    }
}

/// Each route `api::routes()` declares, as `(method, path under /api/v1)`, read from its source:
/// a route added there without its `#[utoipa::path]` in the document fails the test below.
fn declared_routes() -> Vec<(String, String)> {
    let source =
        fs_err::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/serve/api.rs"))
            .expect("src/serve/api.rs");
    let body = source
        .split("pub fn routes()")
        .nth(1)
        .and_then(|rest| rest.split(".fallback(").next())
        .expect("api::routes() and its fallback");
    let path = regex::Regex::new(r#"^\s*"(/[^"]*)""#).expect("a pattern");
    let method = regex::Regex::new(r"\b(get|post|put|delete|patch)\(").expect("a pattern");
    let mut routes = Vec::new();
    for call in body.split(".route(").skip(1) {
        let route = path.captures(call).map_or_else(
            || panic!("a route whose path is not a literal: {call}"),
            |c| c[1].to_owned(),
        );
        for found in method.captures_iter(call) {
            routes.push((found[1].to_owned(), route.clone()));
        }
    }
    routes
}

#[test]
fn every_api_route_is_in_the_openapi_document_with_its_answers() {
    let document: Value =
        serde_json::from_str(&super::openapi::json()).expect("the document is JSON");
    let paths = document["paths"].as_object().expect("paths");
    let routes = declared_routes();
    assert!(routes.len() >= 10, "{routes:?}");
    for (method, route) in &routes {
        let path = format!("/api/v1{route}");
        let operation = &paths
            .get(&path)
            .unwrap_or_else(|| panic!("{path} is not in the document"))[method.as_str()];
        let responses = operation["responses"]
            .as_object()
            .unwrap_or_else(|| panic!("{method} {path} is not in the document"));
        assert!(
            responses.keys().any(|status| status.starts_with('2')),
            "{method} {path}: no success answer documented"
        );
        for status in ["401", "421"] {
            assert!(
                responses.contains_key(status),
                "{method} {path}: the guard's {status} is not documented"
            );
        }
        if method != "get" {
            assert!(
                responses.contains_key("403"),
                "{method} {path}: the refusal of another site is not documented"
            );
        }
    }
    let documented: Vec<(String, String)> = paths
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .into_iter()
                .flat_map(|ops| ops.keys())
                .filter(|k| *k != "parameters")
                .map(move |method| (method.clone(), path.clone()))
        })
        .collect();
    for (method, path) in &documented {
        let route = path.trim_start_matches("/api/v1");
        assert!(
            routes.iter().any(|(m, r)| m == method && r == route),
            "{method} {path} is documented but not routed"
        );
    }
}
