//! The OCI reader against a protocol-accurate fake, for what Debian's docker-registry does not do:
//! tag-list paging with `Link`, 429 with `Retry-After`, a blob redirected to another host (the
//! way registries hand blobs to a CDN), a paging link to another host, the OCI 1.1 referrers API
//! (cosign bundles).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use addonctl::source::cache::CacheOptions;
use addonctl::source::oci::client::{sha256_digest, Login, HELM_CHART, HELM_CONFIG, OCI_MANIFEST};
use addonctl::source::oci::{OciOptions, OciReader};
use addonctl::source::{AddonRef, AsyncReader, Error};
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Response, Uri};

use crate::support::helm_repo::quick_http;

const TAGS: [&str; 5] = ["0.1.0", "0.2.0", "0.3.0", "latest", "0.4.0"];
const PAGE: usize = 2;
const USER: &str = "fake-user";
const PASSWORD: &str = "fake-pass-31337";

#[derive(Default)]
struct Fake {
    /// Paths asked, with whether credentials came.
    requests: Mutex<Vec<(String, bool)>>,
    /// Answer the next tag-list request with 429 and `Retry-After`.
    rate_limit: Mutex<Option<&'static str>>,
    /// Redirect blobs to this origin.
    blobs_at: Mutex<Option<String>>,
    /// Put this origin in the paging links.
    links_at: Mutex<Option<String>>,
    /// The chart archive, manifest and config.
    chart: Vec<u8>,
    manifest: Vec<u8>,
    config: Vec<u8>,
    /// Requests the blob host got with credentials.
    leaked: AtomicU64,
    blob_host: AtomicBool,
    /// Other paths served: path → (content type, body).
    extra: Mutex<std::collections::HashMap<String, (String, Vec<u8>)>>,
}

fn answer(status: u16, headers: &[(&str, String)], body: Vec<u8>) -> Response<Body> {
    let mut response = Response::builder().status(status);
    for (name, value) in headers {
        response = response.header(*name, value);
    }
    response.body(Body::from(body)).unwrap()
}

async fn handle(State(fake): State<Arc<Fake>>, uri: Uri, headers: HeaderMap) -> Response<Body> {
    let path = uri.path().to_owned();
    let query = uri.query().unwrap_or_default().to_owned();
    let authorization = headers.get("authorization").is_some();
    fake.requests
        .lock()
        .unwrap()
        .push((format!("{path}?{query}"), authorization));
    if fake.blob_host.load(Ordering::Relaxed) {
        if authorization {
            fake.leaked.fetch_add(1, Ordering::Relaxed);
        }
        return answer(200, &[], fake.chart.clone());
    }
    let expected = format!(
        "Basic {}",
        base64_encode(format!("{USER}:{PASSWORD}").as_bytes())
    );
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(expected.as_str()) {
        return answer(
            401,
            &[("www-authenticate", "Basic realm=\"fake\"".to_owned())],
            b"{\"errors\":[{\"code\":\"UNAUTHORIZED\"}]}".to_vec(),
        );
    }
    if let Some((kind, body)) = fake.extra.lock().unwrap().get(&path).cloned() {
        let digest = sha256_digest(&body);
        return answer(
            200,
            &[("content-type", kind), ("docker-content-digest", digest)],
            body,
        );
    }
    if path.starts_with("/v2/p/minimal/manifests/sha256-") {
        return answer(
            404,
            &[],
            b"{\"errors\":[{\"code\":\"MANIFEST_UNKNOWN\"}]}".to_vec(),
        );
    }
    if path == "/v2/p/minimal/tags/list" {
        if let Some(after) = fake.rate_limit.lock().unwrap().take() {
            return answer(429, &[("retry-after", after.to_owned())], Vec::new());
        }
        let params: Vec<(String, String)> = serde_urlencoded::from_str(&query).unwrap();
        let last = params
            .iter()
            .find(|(k, _)| k == "last")
            .map(|(_, v)| v.clone());
        let start = last.map_or(0, |l| TAGS.iter().position(|t| *t == l).unwrap() + 1);
        let page: Vec<&str> = TAGS.iter().skip(start).take(PAGE).copied().collect();
        let mut extra = Vec::new();
        if start + PAGE < TAGS.len() {
            let origin = fake.links_at.lock().unwrap().clone().unwrap_or_default();
            extra.push((
                "link",
                format!(
                    "<{origin}/v2/p/minimal/tags/list?n={PAGE}&last={}>; rel=\"next\"",
                    page[page.len() - 1]
                ),
            ));
        }
        let body = serde_json::json!({"name": "p/minimal", "tags": page});
        return answer(200, &extra, serde_json::to_vec(&body).unwrap());
    }
    if path.starts_with("/v2/p/minimal/manifests/") {
        let digest = sha256_digest(&fake.manifest);
        return answer(
            200,
            &[
                ("content-type", OCI_MANIFEST.to_owned()),
                ("docker-content-digest", digest),
            ],
            fake.manifest.clone(),
        );
    }
    if let Some(digest) = path.strip_prefix("/v2/p/minimal/blobs/") {
        if digest == sha256_digest(&fake.config) {
            return answer(200, &[], fake.config.clone());
        }
        if let Some(origin) = fake.blobs_at.lock().unwrap().clone() {
            return answer(
                307,
                &[("location", format!("{origin}/cdn/{digest}"))],
                Vec::new(),
            );
        }
        return answer(200, &[], fake.chart.clone());
    }
    answer(
        404,
        &[],
        b"{\"errors\":[{\"code\":\"NAME_UNKNOWN\"}]}".to_vec(),
    )
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Starts a fake on 127.0.0.1; returns its state and `127.0.0.1:PORT`.
async fn start(blob_host: bool) -> (Arc<Fake>, String) {
    let files = vec![
        (
            "Chart.yaml".to_owned(),
            b"apiVersion: v2\nname: minimal\nversion: 0.4.0\n".to_vec(),
        ),
        (
            "metadata.yaml".to_owned(),
            b"name: minimal\nversion: 0.4.0\n".to_vec(),
        ),
    ];
    let chart = addonctl::source::archive::write_tgz(Some("minimal"), &files).unwrap();
    let config = br#"{"name":"minimal","version":"0.4.0"}"#.to_vec();
    let manifest = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": HELM_CONFIG, "digest": sha256_digest(&config), "size": config.len()},
        "layers": [{"mediaType": HELM_CHART, "digest": sha256_digest(&chart), "size": chart.len()}],
    }))
    .unwrap();
    let fake = Arc::new(Fake {
        chart,
        manifest,
        config,
        blob_host: AtomicBool::new(blob_host),
        ..Fake::default()
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let host = listener.local_addr().unwrap().to_string();
    let app = axum::Router::new()
        .fallback(handle)
        .with_state(Arc::clone(&fake));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (fake, host)
}

fn options() -> OciOptions {
    OciOptions {
        http: quick_http(),
        login: Login::Basic {
            username: USER.into(),
            password: PASSWORD.into(),
        },
        plain_http: Some("true".into()),
        policy: None,
    }
}

fn reader(host: &str) -> OciReader {
    OciReader::new(
        "fake",
        &format!("oci://{host}/p"),
        options(),
        &CacheOptions::off(),
    )
    .unwrap()
}

#[tokio::test]
async fn tag_lists_are_followed_page_by_page_and_a_429_is_waited_for() {
    let (fake, host) = start(false).await;
    *fake.rate_limit.lock().unwrap() = Some("1");
    let reader = reader(&host);
    let begun = std::time::Instant::now();
    let files = reader
        .list_files(&AddonRef::latest("minimal"))
        .await
        .unwrap();
    assert!(
        begun.elapsed() >= std::time::Duration::from_millis(900),
        "Retry-After honoured"
    );
    assert!(files.iter().any(|f| f.path == "metadata.yaml"));
    let pinned = reader.pinned(&AddonRef::latest("minimal")).await.unwrap();
    assert_eq!(pinned.version, "0.4.0", "the last page's tag is the newest");
    let pages: Vec<String> = fake
        .requests
        .lock()
        .unwrap()
        .iter()
        .filter(|(p, auth)| *auth && p.contains("/tags/list"))
        .map(|(p, _)| p.clone())
        .collect();
    assert_eq!(pages.len(), 4, "429, then three pages: {pages:?}");
    assert!(pages[3].contains("last=latest"), "{pages:?}");

    // A wait longer than allowed is not waited for.
    *fake.rate_limit.lock().unwrap() = Some("3600");
    let slow = self::reader(&host);
    let begun = std::time::Instant::now();
    let err = slow
        .list_files(&AddonRef::latest("minimal"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::RateLimited { .. }), "{err}");
    assert!(begun.elapsed() < std::time::Duration::from_secs(2));
}

#[tokio::test]
async fn credentials_never_follow_a_redirect_or_a_paging_link_to_another_host() {
    let (fake, host) = start(false).await;
    let (cdn, cdn_host) = start(true).await;
    *fake.blobs_at.lock().unwrap() = Some(format!("http://{cdn_host}"));
    let reader = reader(&host);
    let files = reader
        .list_files(&AddonRef {
            name: "minimal".into(),
            version: Some("0.4.0".into()),
        })
        .await
        .unwrap();
    assert!(files.iter().any(|f| f.path == "metadata.yaml"));
    assert_eq!(
        cdn.requests.lock().unwrap().len(),
        1,
        "the blob came from the other host"
    );
    assert_eq!(
        cdn.leaked.load(Ordering::Relaxed),
        0,
        "without the credentials"
    );

    // A paging link to another host is not followed.
    *fake.links_at.lock().unwrap() = Some(format!("http://{cdn_host}"));
    let err = self::reader(&host)
        .list_files(&AddonRef::latest("minimal"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("another host"), "{err}");
    assert_eq!(cdn.leaked.load(Ordering::Relaxed), 0);
    assert!(!err.to_string().contains(PASSWORD));
}

/// A reader of the fake enforcing a policy trusting `public`.
fn enforcing(host: &str, public: &std::path::Path) -> OciReader {
    use p256::pkcs8::DecodePublicKey as _;
    let pem = std::fs::read_to_string(public).unwrap();
    let key = p256::ecdsa::VerifyingKey::from_public_key_pem(&pem).unwrap();
    let policy = addonctl::source::oci::Policy::new(
        addonctl::source::oci::Mode::Enforce,
        vec![("trusted.pub".to_owned(), key)],
        Vec::new(),
    );
    OciReader::new(
        "fake",
        &format!("oci://{host}/p"),
        OciOptions {
            policy: Some(Arc::new(policy)),
            ..options()
        },
        &CacheOptions::off(),
    )
    .unwrap()
}

#[tokio::test]
async fn a_cosign_bundle_is_found_through_the_referrers_api() {
    let (fake, host) = start(false).await;
    let digest = sha256_digest(&fake.manifest);
    let keys = tempfile::tempdir().unwrap();
    let (private, public) = crate::support::oci::keygen(keys.path(), "trusted");
    let written = keys.path().join("bundle");
    let output = std::process::Command::new("python3")
        .arg(crate::support::root().join("scripts/sources/cosign-sign.py"))
        .args(["bundle", "--registry", &host, "--repository", "p/minimal"])
        .args(["--digest", &digest, "--key"])
        .arg(&private)
        .arg("--write")
        .arg(&written)
        .args(["--subject-size", &fake.manifest.len().to_string()])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let referrer = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    // The registry answers the referrers API with nothing yet: no fallback tag is read.
    let empty = br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}"#;
    let referrers_path = format!("/v2/p/minimal/referrers/{digest}");
    let index = "application/vnd.oci.image.index.v1+json".to_owned();
    fake.extra
        .lock()
        .unwrap()
        .insert(referrers_path.clone(), (index.clone(), empty.to_vec()));
    let err = enforcing(&host, &public)
        .list_files(&AddonRef::latest("minimal"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Unverified { .. }), "{err}");
    assert!(err.to_string().contains("no cosign bundle"), "{err}");
    // Then the bundle's referrer is listed.
    {
        let mut extra = fake.extra.lock().unwrap();
        extra.insert(
            referrers_path.clone(),
            (
                index,
                std::fs::read(written.join("referrers.json")).unwrap(),
            ),
        );
        for entry in std::fs::read_dir(&written).unwrap() {
            let path = entry.unwrap().path();
            let name = path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .replace('-', ":");
            let body = std::fs::read(&path).unwrap();
            if name == referrer {
                extra.insert(
                    format!("/v2/p/minimal/manifests/{name}"),
                    (OCI_MANIFEST.to_owned(), body),
                );
            } else if name.starts_with("sha256:") {
                extra.insert(
                    format!("/v2/p/minimal/blobs/{name}"),
                    ("application/octet-stream".to_owned(), body),
                );
            }
        }
    }
    let reader = enforcing(&host, &public);
    let pinned = reader.pinned(&AddonRef::latest("minimal")).await.unwrap();
    assert!(pinned.verification.verified, "{:?}", pinned.verification);
    assert_eq!(pinned.verification.method.as_deref(), Some("cosign-bundle"));
    let asked: Vec<String> = fake
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|(p, _)| p.clone())
        .collect();
    assert!(
        asked.iter().any(|p| p.starts_with(&referrers_path)
            && p.contains("artifactType=application%2Fvnd.dev.sigstore.bundle.v0.3%2Bjson")),
        "{asked:?}"
    );
    let fallback = format!("/manifests/{}?", digest.replace(':', "-"));
    assert!(!asked.iter().any(|p| p.contains(&fallback)), "{asked:?}");
}
