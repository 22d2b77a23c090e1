//! The API's handlers: JSON errors with their field paths, visibility of system addons, the
//! detail, plans of others, the event streams' cap, names that cannot be addons.

use super::*;

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
    for _ in 0..crate::serve::events::MAX_STREAMS {
        let response = open_stream().await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_hardened(&response);
        streams.push(response);
    }
    assert_eq!(app.events.streams(), crate::serve::events::MAX_STREAMS);
    let refused = open_stream().await;
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(json_of(refused).await["code"], "unavailable");
    assert_eq!(app.events.streams(), crate::serve::events::MAX_STREAMS);
    drop(streams.pop());
    assert_eq!(app.events.streams(), crate::serve::events::MAX_STREAMS - 1);
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
