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

#[tokio::test]
async fn without_the_token_every_path_is_refused_before_any_handler_runs() {
    let api = api(true);
    let app = app(&api);
    for (path, token) in [
        ("/api/v1/addons", None),
        ("/api/v1/addons", Some("Bearer wrong")),
        ("/api/v1/addons/uptime-beacon", Some("Bearer ")),
        ("/api/v1/registries", Some("Basic dXNlcjpwYXNz")),
        ("/api/v1/events", None),
    ] {
        let mut builder = Request::builder().uri(path).header(header::HOST, HOST);
        if let Some(token) = token {
            builder = builder.header(header::AUTHORIZATION, token);
        }
        let response = send(&app, builder.body(Body::empty()).expect("a request")).await;
        assert_eq!(
            response.status(),
            StatusCode::UNAUTHORIZED,
            "{path} {token:?}"
        );
        assert_hardened(&response);
        assert!(is_json(&response), "{path}: {:?}", response.headers());
        let body = json_of(response).await;
        assert_eq!(body["code"], "unauthenticated", "{body}");
        assert!(
            !body["message"].as_str().unwrap_or_default().is_empty(),
            "{body}"
        );
    }
    // A wrong cookie, and the right token under another cookie's name.
    for cookie in ["addonctl_token=nope".to_owned(), format!("other={TOKEN}")] {
        let response = send(
            &app,
            Request::builder()
                .uri("/api/v1/addons")
                .header(header::HOST, HOST)
                .header(header::COOKIE, cookie.clone())
                .body(Body::empty())
                .expect("a request"),
        )
        .await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{cookie}");
    }
    // A page: refused too (a page, not JSON).
    let response = send(
        &app,
        Request::builder()
            .uri("/")
            .header(header::HOST, HOST)
            .body(Body::empty())
            .expect("a request"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert_hardened(&response);
    assert!(
        api.requests().is_empty(),
        "a refused request reached the cluster: {:?}",
        api.requests()
    );
}

#[tokio::test]
async fn the_token_as_bearer_or_cookie_opens_the_api() {
    let api = api(true);
    let app = app(&api);
    let response = send(
        &app,
        request(Method::GET, "/api/v1/addons")
            .body(Body::empty())
            .expect("a request"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_hardened(&response);
    let body = json_of(response).await;
    let names: Vec<&str> = body["addons"]
        .as_array()
        .expect("addons")
        .iter()
        .filter_map(|a| a["name"].as_str())
        .collect();
    assert!(names.contains(&"uptime-beacon"), "{body}");

    let response = send(
        &app,
        Request::builder()
            .uri("/api/v1/registries")
            .header(header::HOST, HOST)
            .header(
                header::COOKIE,
                format!("theme=dark; addonctl_token={TOKEN}"),
            )
            .body(Body::empty())
            .expect("a request"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_hardened(&response);
}

#[tokio::test]
async fn another_host_name_is_misdirected_even_with_the_token() {
    let api = api(true);
    let app = app(&api);
    for host in ["evil.example:18080", "127.0.0.1:9999", "127.0.0.1", ""] {
        let mut builder = Request::builder()
            .uri("/api/v1/addons")
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"));
        if !host.is_empty() {
            builder = builder.header(header::HOST, host);
        }
        let response = send(&app, builder.body(Body::empty()).expect("a request")).await;
        assert_eq!(response.status(), StatusCode::MISDIRECTED_REQUEST, "{host}");
        assert_hardened(&response);
        let body = json_of(response).await;
        assert_eq!(body["code"], "forbiddenhost", "{body}");
    }
    // `localhost` with the bound port is the same server.
    let response = send(
        &app,
        Request::builder()
            .uri("/api/v1/registries")
            .header(header::HOST, "localhost:18080")
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .body(Body::empty())
            .expect("a request"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        api.writes()
            .iter()
            .all(|w| w == &format!("POST {ACCESS_REVIEWS}")),
        "{:?}",
        api.writes()
    );
}

#[tokio::test]
async fn a_change_from_another_site_is_forbidden_even_with_the_token() {
    let api = api(true);
    let app = app(&api);
    let plan = r#"{"action": "enable", "addon": "uptime-beacon"}"#;
    let cases: [(&str, Option<&str>, Option<&str>); 5] = [
        ("POST", Some("http://evil.example"), None),
        ("POST", Some("null"), None),
        ("POST", None, Some("cross-site")),
        ("POST", None, Some("same-site")),
        ("POST", Some("http://localhost:18080"), Some("cross-site")),
    ];
    for (method, origin, fetch_site) in cases {
        let mut builder = request(method.parse().expect("a method"), "/api/v1/plans")
            .header(header::CONTENT_TYPE, "application/json");
        if let Some(origin) = origin {
            builder = builder.header(header::ORIGIN, origin);
        }
        if let Some(site) = fetch_site {
            builder = builder.header("sec-fetch-site", site);
        }
        let response = send(&app, builder.body(Body::from(plan)).expect("a request")).await;
        assert_eq!(
            response.status(),
            StatusCode::FORBIDDEN,
            "{origin:?} {fetch_site:?}"
        );
        assert_hardened(&response);
        let body = json_of(response).await;
        assert_eq!(body["code"], "forbiddenorigin", "{body}");
    }
    // A form post from another site to the sign-in: refused as well.
    let response = send(
        &app,
        Request::builder()
            .method(Method::POST)
            .uri("/login")
            .header(header::HOST, HOST)
            .header(header::ORIGIN, "http://evil.example")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(format!("token={TOKEN}")))
            .expect("a request"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    assert!(response.headers().get(header::SET_COOKIE).is_none());
    assert!(
        api.requests().is_empty(),
        "a refused request reached the cluster: {:?}",
        api.requests()
    );
}

#[tokio::test]
async fn the_printed_url_signs_in_with_a_strict_http_only_cookie_and_leaves_the_address_bar() {
    let api = api(true);
    let app = app(&api);
    let login = app.access.login_url();
    assert_eq!(login, format!("http://{HOST}/login?token={TOKEN}"));
    let response = send(
        &app,
        Request::builder()
            .uri(format!("/login?token={TOKEN}"))
            .header(header::HOST, HOST)
            .body(Body::empty())
            .expect("a request"),
    )
    .await;
    assert!(response.status().is_redirection(), "{}", response.status());
    assert_eq!(
        response
            .headers()
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok()),
        Some("/")
    );
    assert_hardened(&response);
    let cookie = response
        .headers()
        .get(header::SET_COOKIE)
        .and_then(|v| v.to_str().ok())
        .expect("a cookie");
    assert!(
        cookie.starts_with(&format!("addonctl_token={TOKEN};")),
        "{cookie}"
    );
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(
            cookie.split(';').any(|a| a.trim() == attribute),
            "{attribute} missing: {cookie}"
        );
    }

    for query in ["?token=wrong", "", "?token=", "?other=1"] {
        let response = send(
            &app,
            Request::builder()
                .uri(format!("/login{query}"))
                .header(header::HOST, HOST)
                .body(Body::empty())
                .expect("a request"),
        )
        .await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{query}");
        assert!(
            response.headers().get(header::SET_COOKIE).is_none(),
            "{query}"
        );
        assert_hardened(&response);
    }
    assert!(api.requests().is_empty(), "{:?}", api.requests());
}

#[tokio::test]
async fn no_answer_carries_cors_headers_not_even_to_a_preflight() {
    let api = api(true);
    let app = app(&api);
    let preflight = send(
        &app,
        Request::builder()
            .method(Method::OPTIONS)
            .uri("/api/v1/plans")
            .header(header::HOST, HOST)
            .header(header::ORIGIN, "http://evil.example")
            .header("access-control-request-method", "POST")
            .header("access-control-request-headers", "content-type")
            .body(Body::empty())
            .expect("a request"),
    )
    .await;
    assert!(!preflight.status().is_success(), "{}", preflight.status());
    assert_hardened(&preflight);
    let read = send(
        &app,
        request(Method::GET, "/api/v1/openapi.json")
            .header(header::ORIGIN, "http://evil.example")
            .body(Body::empty())
            .expect("a request"),
    )
    .await;
    assert_eq!(read.status(), StatusCode::OK);
    assert_hardened(&read);
    let missing = send(
        &app,
        request(Method::GET, "/api/v1/no-such-thing")
            .body(Body::empty())
            .expect("a request"),
    )
    .await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert_hardened(&missing);
    assert_eq!(json_of(missing).await["code"], "notfound");
}

#[tokio::test]
async fn a_body_over_the_cap_is_refused_unread() {
    let api = api(true);
    let app = app(&api);
    let big = format!(
        r#"{{"action": "enable", "addon": "uptime-beacon", "values": {{"schedule": "{}"}}}}"#,
        "x".repeat(super::MAX_BODY + 1)
    );
    let response = send(&app, post_json("/api/v1/plans", &big)).await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_hardened(&response);
    assert!(
        api.writes()
            .iter()
            .all(|w| w == &format!("POST {ACCESS_REVIEWS}")),
        "{:?}",
        api.writes()
    );
}

#[tokio::test]
async fn a_body_that_is_not_a_plan_request_is_a_json_400() {
    let api = api(true);
    let app = app(&api);
    for (body, says) in [
        ("{not json", ""),
        ("", ""),
        (r#"{"action": "enable"}"#, "addon"),
        (
            r#"{"action": "explode", "addon": "uptime-beacon"}"#,
            "action",
        ),
        (
            r#"{"action": "enable", "addon": "uptime-beacon", "surprise": true}"#,
            "surprise",
        ),
        (
            r#"{"action": "enable", "addon": "uptime-beacon", "values": [1]}"#,
            "values",
        ),
    ] {
        let response = send(&app, post_json("/api/v1/plans", body)).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{body}");
        assert!(is_json(&response), "{body}: {:?}", response.headers());
        assert_hardened(&response);
        let answer = json_of(response).await;
        assert_eq!(answer["code"], "invalid", "{body}: {answer}");
        let message = answer["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{body}: {answer}");
    }
    // A plan request sent as a form is not JSON either.
    let response = send(
        &app,
        request(Method::POST, "/api/v1/plans")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::ORIGIN, format!("http://{HOST}"))
            .body(Body::from("action=enable&addon=uptime-beacon"))
            .expect("a request"),
    )
    .await;
    assert!(response.status().is_client_error(), "{}", response.status());
    assert!(is_json(&response), "{:?}", response.headers());
    assert!(
        api.writes().iter().all(|w| w.ends_with("accessreviews")),
        "{:?}",
        api.writes()
    );
}

#[tokio::test]
async fn a_query_that_does_not_fit_is_a_json_400() {
    let api = api(true);
    let app = app(&api);
    let response = send(
        &app,
        request(Method::GET, "/api/v1/addons?installed=perhaps")
            .body(Body::empty())
            .expect("a request"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(is_json(&response), "{:?}", response.headers());
    let answer = json_of(response).await;
    assert_eq!(answer["code"], "invalid", "{answer}");
    assert!(
        answer["message"]
            .as_str()
            .unwrap_or_default()
            .contains("installed"),
        "{answer}"
    );
}

#[tokio::test]
async fn a_value_that_breaks_the_schema_is_answered_with_its_field_path() {
    let api = api(true);
    let app = app(&api);
    let response = send(
        &app,
        post_json(
            "/api/v1/plans",
            r#"{"action": "enable", "addon": "uptime-beacon",
                "values": {"timeoutSeconds": 0, "targets": ["ftp://nowhere"]}}"#,
        ),
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let answer = json_of(response).await;
    assert_eq!(answer["code"], "invalid", "{answer}");
    let fields = answer["fields"]
        .as_array()
        .unwrap_or_else(|| panic!("fields at fault: {answer}"));
    let paths: Vec<&str> = fields.iter().filter_map(|f| f["path"].as_str()).collect();
    assert!(paths.contains(&"timeoutSeconds"), "{answer}");
    assert!(paths.iter().any(|p| p.starts_with("targets")), "{answer}");
    assert!(
        fields
            .iter()
            .all(|f| !f["message"].as_str().unwrap_or_default().is_empty()),
        "{answer}"
    );

    let unknown = send(
        &app,
        post_json(
            "/api/v1/plans",
            r#"{"action": "enable", "addon": "uptime-beacon", "values": {"ingress": {"host": 1}}}"#,
        ),
    )
    .await;
    assert_eq!(unknown.status(), StatusCode::BAD_REQUEST);
    let answer = json_of(unknown).await;
    let paths: Vec<&str> = answer["fields"]
        .as_array()
        .expect("fields at fault")
        .iter()
        .filter_map(|f| f["path"].as_str())
        .collect();
    assert!(paths.iter().any(|p| p.starts_with("ingress")), "{answer}");
    assert!(
        api.writes().iter().all(|w| w.ends_with("accessreviews")),
        "a refused plan wrote: {:?}",
        api.writes()
    );
}

#[tokio::test]
async fn a_system_addon_is_not_found_by_a_caller_without_the_right() {
    let registry = system_registry();
    let denied = api(false);
    let app = app_over(&denied, &[registry.path().to_path_buf()]);
    let list = send(
        &app,
        request(Method::GET, "/api/v1/addons")
            .body(Body::empty())
            .expect("a request"),
    )
    .await;
    assert_eq!(list.status(), StatusCode::OK);
    let body = json_of(list).await.to_string();
    assert!(!body.contains("hidden-system"), "{body}");
    for path in [
        "/api/v1/addons/hidden-system",
        "/api/v1/addons/hidden-system/status",
        "/api/v1/addons/hidden-system/history",
        "/api/v1/addons/hidden-system/values",
    ] {
        let response = send(
            &app,
            request(Method::GET, path)
                .body(Body::empty())
                .expect("a request"),
        )
        .await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{path}");
        let answer = json_of(response).await;
        assert_eq!(answer["code"], "notfound", "{path}: {answer}");
    }
    let plan = send(
        &app,
        post_json(
            "/api/v1/plans",
            r#"{"action": "enable", "addon": "hidden-system"}"#,
        ),
    )
    .await;
    assert_eq!(plan.status(), StatusCode::NOT_FOUND);
    // The same answer as for an addon no registry has: nothing tells them apart.
    let absent = send(
        &app,
        request(Method::GET, "/api/v1/addons/no-such-addon")
            .body(Body::empty())
            .expect("a request"),
    )
    .await;
    assert_eq!(absent.status(), StatusCode::NOT_FOUND);

    let allowed = api(true);
    let app = app_over(&allowed, &[registry.path().to_path_buf()]);
    let list = send(
        &app,
        request(Method::GET, "/api/v1/addons?tag=system")
            .body(Body::empty())
            .expect("a request"),
    )
    .await;
    let body = json_of(list).await;
    let hidden = body["addons"]
        .as_array()
        .expect("addons")
        .iter()
        .find(|a| a["name"] == "hidden-system")
        .cloned()
        .unwrap_or_else(|| panic!("an admin sees it: {body}"));
    assert_eq!(hidden["system"], true, "{hidden}");
    let detail = send(
        &app,
        request(Method::GET, "/api/v1/addons/hidden-system")
            .body(Body::empty())
            .expect("a request"),
    )
    .await;
    assert_eq!(detail.status(), StatusCode::OK);
}

#[tokio::test]
async fn addon_detail_has_its_readme_schema_and_versions() {
    let api = api(true);
    let app = app(&api);
    let response = send(
        &app,
        request(Method::GET, "/api/v1/addons/uptime-beacon")
            .body(Body::empty())
            .expect("a request"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    let detail = json_of(response).await;
    assert_eq!(detail["name"], "uptime-beacon");
    assert!(
        detail["readmeHtml"]
            .as_str()
            .is_some_and(|h| h.contains('<')),
        "{detail}"
    );
    assert!(
        detail["parameters"]["properties"]["timeoutSeconds"].is_object(),
        "{detail}"
    );
    assert!(
        detail["versions"].as_array().is_some_and(|v| !v.is_empty()),
        "{detail}"
    );
}

#[tokio::test]
async fn a_plan_of_another_caller_or_unknown_is_not_found_and_not_applied() {
    let api = api(true);
    let app = app(&api);
    let response = send(
        &app,
        request(Method::GET, "/api/v1/plans/0000")
            .body(Body::empty())
            .expect("a request"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let response = send(&app, post_json("/api/v1/plans/0000/apply", "")).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert_eq!(json_of(response).await["code"], "notfound");
}

#[tokio::test]
async fn event_streams_are_capped_and_a_closed_one_frees_its_place() {
    let api = api(true);
    let app = app(&api);
    let open_stream = || async {
        send(
            &app,
            request(Method::GET, "/api/v1/events")
                .body(Body::empty())
                .expect("a request"),
        )
        .await
    };
    let mut streams = Vec::new();
    for _ in 0..super::events::MAX_STREAMS {
        let response = open_stream().await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_hardened(&response);
        streams.push(response);
    }
    assert_eq!(app.events.streams(), super::events::MAX_STREAMS);
    let refused = open_stream().await;
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(json_of(refused).await["code"], "unavailable");
    assert_eq!(app.events.streams(), super::events::MAX_STREAMS);
    drop(streams.pop());
    assert_eq!(app.events.streams(), super::events::MAX_STREAMS - 1);
    let again = open_stream().await;
    assert_eq!(again.status(), StatusCode::OK);
    drop(streams);
    drop(again);
    assert_eq!(app.events.streams(), 0);
}

#[tokio::test]
async fn a_name_that_cannot_be_an_addon_reaches_neither_the_disk_nor_the_cluster() {
    let api = api(true);
    let app = app(&api);
    for name in [
        "%2Ftmp",
        "..",
        "a%3Fb",
        "%07U%F3%A2%BC%BB",
        "UPPER",
        "a%20b",
        "x%2Fy%2Fz",
    ] {
        for suffix in ["", "/status", "/history", "/values"] {
            let path = format!("/api/v1/addons/{name}{suffix}");
            let response = send(
                &app,
                request(Method::GET, &path)
                    .body(Body::empty())
                    .expect("a request"),
            )
            .await;
            assert_eq!(response.status(), StatusCode::NOT_FOUND, "{path}");
            assert_eq!(json_of(response).await["code"], "notfound", "{path}");
        }
    }
    let tmp = std::env::temp_dir();
    for addon in [
        tmp.to_string_lossy().as_ref(),
        "./addons/uptime-beacon",
        "a?b",
        "\u{7}",
    ] {
        let body = json!({"action": "enable", "addon": addon}).to_string();
        let response = send(&app, post_json("/api/v1/plans", &body)).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{addon}");
        assert_eq!(json_of(response).await["code"], "invalid", "{addon}");
    }
    assert!(
        api.requests().iter().all(|r| !r.contains("addon-record")
            && !r.starts_with("GET /api/v1/namespaces/vela-system/secrets/")),
        "{:?}",
        api.requests()
    );
}

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
