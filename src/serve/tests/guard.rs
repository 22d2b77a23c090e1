//! The guard: the token, the cookie, the Host and Origin checks, the headers of every answer,
//! CORS, the body cap.

use super::*;

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
        "x".repeat(crate::serve::MAX_BODY + 1)
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
