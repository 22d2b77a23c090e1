//! The OCI reader against the real registry (Debian's docker-registry on 127.0.0.1: anonymous,
//! htpasswd, token auth with GET and OAuth2 POST), charts pushed with the real `helm push`.

use addonctl::source::cache::CacheOptions;
use addonctl::source::oci::client::Login;
use addonctl::source::oci::OciReader;
use addonctl::source::{AddonRef, AsyncReader, Error};

use crate::support::conformance;
use crate::support::helm_repo::Helm;
use crate::support::oci::{
    get_manifest, helm_push, prefix, push_addons, reader, reader_with_cache, registries, retag,
    strict_fixture_registry, user_login,
};

fn minimal(version: Option<&str>) -> AddonRef {
    AddonRef {
        name: "minimal".into(),
        version: version.map(str::to_owned),
    }
}

#[tokio::test]
async fn oci_registry_passes_the_conformance_suite_through_the_repository_list() {
    let truth = strict_fixture_registry();
    let prefix = prefix("conformance");
    let digests = push_addons(truth.path(), &prefix).await;
    let reader = reader(&registries().anonymous, &prefix, Login::Anonymous, None);
    conformance::run(&reader, truth.path()).await;
    // Pinned by digest: the manifest helm pushed, its chart layer checked.
    let pinned = reader.pinned(&minimal(None)).await.unwrap();
    assert_eq!(pinned.manifest_digest, digests["minimal"]);
    assert_eq!(pinned.version, "0.1.0");
    assert_eq!(pinned.tag.as_deref(), Some("0.1.0"));
    assert!(pinned.chart_digest.starts_with("sha256:"));
    assert!(!pinned.verification.verified);
    // The same chart by digest, with no tag involved.
    let by_digest = reader
        .pinned(&minimal(Some(&digests["minimal"])))
        .await
        .unwrap();
    assert_eq!(by_digest.manifest_digest, digests["minimal"]);
    assert_eq!(by_digest.version, "0.1.0");
    assert_eq!(by_digest.tag, None);
}

#[tokio::test]
async fn oci_registry_behind_basic_auth_passes_and_refuses_wrong_or_missing_credentials() {
    let truth = strict_fixture_registry();
    let prefix = prefix("basic");
    push_addons(truth.path(), &prefix).await;
    let r = registries();
    conformance::run(&reader(&r.basic, &prefix, user_login(), None), truth.path()).await;
    let wrong = reader(
        &r.basic,
        &prefix,
        Login::Basic {
            username: r.user.clone(),
            password: "wrong-pass-4711".into(),
        },
        None,
    );
    conformance::expect_unauthorized(&wrong, "wrong-pass-4711").await;
    let anonymous = reader(&r.basic, &prefix, Login::Anonymous, None);
    let err = anonymous.list_addons().await.unwrap_err();
    assert!(matches!(err, Error::Unauthorized { .. }), "{err}");
    assert!(err.to_string().contains("--username"), "{err}");
}

fn log_lines(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[tokio::test]
async fn token_auth_works_with_get_and_falls_back_to_the_oauth2_post() {
    let truth = strict_fixture_registry();
    let prefix = prefix("token");
    push_addons(truth.path(), &prefix).await;
    let r = registries();
    let reader_get = reader(&r.token, &prefix, user_login(), None);
    conformance::run(&reader_get, truth.path()).await;
    let gets = log_lines(&r.token_log);
    assert!(
        gets.iter()
            .any(|l| l["method"] == "GET" && l["credentials"] == true),
        "{gets:?}"
    );
    // A token per scope, kept: far fewer exchanges than requests (this test's scopes only: the
    // token server is shared).
    let exchanges = gets
        .iter()
        .filter(|l| l["scopes"].to_string().contains(&prefix))
        .count() as u64;
    assert!(exchanges > 0, "{gets:?}");
    assert!(
        exchanges < reader_get.http().request_count() / 2,
        "{exchanges} exchanges"
    );

    // A token server that answers POST only: GET gets 405, then the OAuth2 password grant.
    conformance::run(
        &reader(&r.token_post_only, &prefix, user_login(), None),
        truth.path(),
    )
    .await;
    let posts = log_lines(&r.token_post_log);
    assert!(
        posts
            .iter()
            .any(|l| l["method"] == "POST" && l["grant"] == "password"),
        "{posts:?}"
    );
    // An identity token is exchanged with the refresh-token grant.
    let refresh = reader(
        &r.token_post_only,
        &prefix,
        Login::Token(r.refresh.clone().into()),
        None,
    );
    refresh.list_files(&minimal(None)).await.unwrap();
    assert!(log_lines(&r.token_post_log)
        .iter()
        .any(|l| l["grant"] == "refresh_token"));
    // Wrong credentials: refused by the token server, the password in no message.
    let wrong = reader(
        &r.token,
        &prefix,
        Login::Basic {
            username: r.user.clone(),
            password: "wrong-token-pass-99".into(),
        },
        None,
    );
    conformance::expect_unauthorized(&wrong, "wrong-token-pass-99").await;
}

#[tokio::test]
async fn anonymous_tokens_read_what_the_token_server_allows_anonymously() {
    let truth = strict_fixture_registry();
    let public = format!("public/{}", prefix("anonymous"));
    push_addons(truth.path(), &public).await;
    let r = registries();
    let anonymous = reader(&r.token, &public, Login::Anonymous, None);
    // Pull is allowed; the repository list (`registry:catalog:*`) is not.
    let files = anonymous.list_files(&minimal(Some("0.1.0"))).await.unwrap();
    assert!(files.iter().any(|f| f.path == "metadata.yaml"));
    let err = anonymous.list_addons().await.unwrap_err();
    assert!(matches!(err, Error::Unauthorized { .. }), "{err}");
    let private = reader(&r.token, &prefix("private"), Login::Anonymous, None);
    let err = private
        .list_files(&minimal(Some("0.1.0")))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Unauthorized { .. }), "{err}");
}

/// An addon directory `minimal` at `version`.
fn minimal_at(version: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let source = crate::support::fixture_registry().join("minimal");
    let target = dir.path().join("minimal");
    std::fs::create_dir_all(&target).unwrap();
    for entry in std::fs::read_dir(&source).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::copy(&path, target.join(path.file_name().unwrap())).unwrap();
        }
    }
    let metadata = target.join("metadata.yaml");
    let text = std::fs::read_to_string(&metadata).unwrap();
    std::fs::write(
        &metadata,
        text.replace("version: 0.1.0", &format!("version: {version}")),
    )
    .unwrap();
    dir
}

#[tokio::test]
async fn tags_are_versions_as_helm_reads_them() {
    let prefix = prefix("tags");
    let repository = format!("{prefix}/minimal");
    // addonctl's `package` refuses `+` (it would be a label value): the chart is made by hand.
    push_addons(minimal_at("0.9.0").path(), &prefix).await;
    let dir = tempfile::tempdir().unwrap();
    let chart = dir.path().join("minimal-1.0.0+build.1.tgz");
    let files = vec![
        (
            "Chart.yaml".to_owned(),
            b"apiVersion: v2\nname: minimal\nversion: 1.0.0+build.1\n".to_vec(),
        ),
        (
            "metadata.yaml".to_owned(),
            b"name: minimal\nversion: 1.0.0+build.1\n".to_vec(),
        ),
    ];
    std::fs::write(
        &chart,
        addonctl::source::archive::write_tgz(Some("minimal"), &files).unwrap(),
    )
    .unwrap();
    helm_push(&chart, &prefix);
    // Helm pushed `1.0.0+build.1` as tag `1.0.0_build.1`; odd tags beside it.
    let (manifest, _) = get_manifest(&repository, "1.0.0_build.1").await;
    let digest = addonctl::source::oci::client::sha256_digest(&manifest);
    retag(&repository, "0.9.0", "v1.2.0").await;
    retag(&repository, "0.9.0", "latest").await;
    retag(
        &repository,
        "0.9.0",
        &format!("{}.sig", digest.replace(':', "-")),
    )
    .await;
    let reader = reader(&registries().anonymous, &prefix, Login::Anonymous, None);
    let listing = reader.list_addons().await.unwrap();
    assert_eq!(listing.len(), 1);
    assert_eq!(listing[0].versions, ["1.0.0+build.1", "0.9.0"]);
    let pinned = reader.pinned(&minimal(None)).await.unwrap();
    assert_eq!(
        (pinned.version.as_str(), pinned.tag.as_deref()),
        ("1.0.0+build.1", Some("1.0.0_build.1"))
    );
    assert_eq!(pinned.manifest_digest, digest);
    // Helm chooses the same "latest".
    let home = tempfile::tempdir().unwrap();
    let chart = format!("oci://{}/{repository}", registries().anonymous);
    let output = Helm::V3.run(home.path(), &["show", "chart", &chart, "--plain-http"]);
    let shown = String::from_utf8_lossy(&output.stdout);
    assert!(shown.contains("version: 1.0.0+build.1"), "{shown}");
    // A version asked for that only a skipped tag has is not found, naming what exists.
    let err = reader
        .list_files(&minimal(Some("1.2.0")))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    assert!(err.to_string().contains("0.9.0"), "{err}");
}

#[tokio::test]
async fn a_blob_that_does_not_match_its_descriptor_is_refused() {
    let prefix = prefix("tamper");
    // A chart of its own (blobs are shared by content across the tests' repositories).
    let digests = push_addons(minimal_at("0.1.0-tamper").path(), &prefix).await;
    let r = registries();
    let reader = reader(&r.anonymous, &prefix, Login::Anonymous, None);
    let pinned = reader.pinned(&minimal(None)).await.unwrap();
    assert_eq!(pinned.manifest_digest, digests["minimal"]);
    // Overwrite the chart blob in the registry's storage (as a compromised store would).
    let hex = pinned.chart_digest.trim_start_matches("sha256:");
    let data = r
        .storage
        .join("docker/registry/v2/blobs/sha256")
        .join(&hex[..2])
        .join(hex)
        .join("data");
    let mut bytes = std::fs::read(&data).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&data, &bytes).unwrap();
    let fresh = crate::support::oci::reader(&r.anonymous, &prefix, Login::Anonymous, None);
    let err = fresh.list_files(&minimal(None)).await.unwrap_err();
    bytes[last] ^= 0xff;
    std::fs::write(&data, &bytes).unwrap();
    assert!(matches!(err, Error::InvalidContent { .. }), "{err}");
    assert!(
        err.to_string().contains("does not match its descriptor"),
        "{err}"
    );
}

#[tokio::test]
async fn a_catalog_chart_lists_the_registry_in_three_requests_and_two_when_warm() {
    let truth = strict_fixture_registry();
    let prefix = prefix("catalog");
    push_addons(truth.path(), &prefix).await;
    // The catalog chart, as KubeVela lays it out: `catalog.json` in chart `kubevela-addon-catalog`.
    let catalog = serde_json::json!({"addons": [
        {"name": "full", "versions": ["1.2.0"], "description": "Fixture addon with every kind of file", "tags": ["fixture"]},
        {"name": "legacy", "versions": ["0.3.0"], "description": "Fixture in KubeVela's legacy YAML form"},
        {"name": "minimal", "versions": ["0.1.0", "v0.0.1", "nonsense"]},
    ]});
    let files = vec![
        (
            "Chart.yaml".to_owned(),
            b"apiVersion: v2\nname: kubevela-addon-catalog\nversion: 0.1.0\n".to_vec(),
        ),
        (
            "catalog.json".to_owned(),
            serde_json::to_vec(&catalog).unwrap(),
        ),
    ];
    let tgz = addonctl::source::archive::write_tgz(Some("kubevela-addon-catalog"), &files).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubevela-addon-catalog-0.1.0.tgz");
    std::fs::write(&path, tgz).unwrap();
    helm_push(&path, &prefix);

    let cache_dir = tempfile::tempdir().unwrap();
    let cache = CacheOptions {
        root: Some(cache_dir.path().to_path_buf()),
        ..CacheOptions::default()
    };
    let host = &registries().anonymous;
    let cold: OciReader = reader_with_cache(host, &prefix, Login::Anonymous, None, &cache);
    conformance::run(&cold, truth.path()).await;
    let listing = cold.list_addons().await.unwrap();
    assert_eq!(
        listing[2].versions,
        ["0.1.0"],
        "non-semver versions skipped"
    );
    let warm = reader_with_cache(host, &prefix, Login::Anonymous, None, &cache);
    warm.list_addons().await.unwrap();
    assert_eq!(
        warm.http().request_count(),
        2,
        "tags and manifest; the archive from disk"
    );
    let fresh = reader(host, &prefix, Login::Anonymous, None);
    fresh.list_addons().await.unwrap();
    assert_eq!(fresh.http().request_count(), 3, "tags, manifest, archive");
}

#[tokio::test]
async fn addonctl_push_publishes_charts_helm_reads_and_keeps_the_catalog_chart() {
    let truth = strict_fixture_registry();
    let prefix = prefix("push");
    let r = registries();
    // To the token registry, with the user's credentials (a push scope).
    let endpoint = format!("oci://{}/{prefix}", r.token);
    let out = assert_cmd::Command::cargo_bin("addonctl")
        .unwrap()
        .env("ADDONCTL_REGISTRY_PASSWORD", &r.password)
        .args(["push"])
        .arg(truth.path())
        .args([&endpoint, "--plain-http", "--username", &r.user])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("pushed `minimal` 0.1.0"), "{stdout}");
    assert!(!stdout.contains(&r.password));

    // Helm reads what was pushed.
    let home = tempfile::tempdir().unwrap();
    let chart = format!("oci://{}/{prefix}/full", r.anonymous);
    let shown = Helm::V3.run(home.path(), &["show", "chart", &chart, "--plain-http"]);
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(
        text.contains("name: full") && text.contains("version: 1.2.0"),
        "{text}"
    );
    let dest = home.path().join("pulled");
    std::fs::create_dir_all(&dest).unwrap();
    let pulled = Helm::V3.run(
        home.path(),
        &[
            "pull",
            &chart,
            "--version",
            "1.2.0",
            "--plain-http",
            "-d",
            dest.to_str().unwrap(),
        ],
    );
    assert!(
        pulled.status.success(),
        "{}",
        String::from_utf8_lossy(&pulled.stderr)
    );
    assert!(dest.join("full-1.2.0.tgz").is_file());

    // addonctl reads it through the catalog chart push wrote: three requests.
    let fresh = reader(&r.anonymous, &prefix, Login::Anonymous, None);
    conformance::run(&fresh, truth.path()).await;
    let listing_only = reader(&r.anonymous, &prefix, Login::Anonymous, None);
    listing_only.list_addons().await.unwrap();
    assert_eq!(listing_only.http().request_count(), 3);

    // A second version: the catalog lists both, newest first.
    let newer = minimal_at("0.2.0");
    let out = assert_cmd::Command::cargo_bin("addonctl")
        .unwrap()
        .args(["push"])
        .arg(newer.path().join("minimal"))
        .args([&format!("oci://{}/{prefix}", r.anonymous), "--plain-http"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("catalog chart `kubevela-addon-catalog` to 0.1."),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let listing = reader(&r.anonymous, &prefix, Login::Anonymous, None)
        .list_addons()
        .await
        .unwrap();
    let minimal = listing.iter().find(|a| a.name == "minimal").unwrap();
    assert_eq!(minimal.versions, ["0.2.0", "0.1.0"]);
    assert_eq!(listing.len(), 3);
}
