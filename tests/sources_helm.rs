//! The Helm repository reader against a static Helm repository served over HTTP(S) on
//! 127.0.0.1 (the fixture registry packaged with addonctl's own `package` and `index`), and the
//! real helm binary against that output.

use std::io::Write as _;
use std::time::{Duration, Instant};

use addonctl::source::archive::write_tgz;
use addonctl::source::cache::CacheOptions;
use addonctl::source::helm::HelmReader;
use addonctl::source::http::Auth;
use addonctl::source::{AddonRef, AsyncReader, Error};

use crate::support::conformance;
use crate::support::fixture_registry;
use crate::support::helm_repo::{
    fresh_cache, package_and_index, quick_http, reader, serve_fixture_repo, Helm,
};
use crate::support::http_server::{black_hole, Fault, TestCa, TestServer};

#[tokio::test]
async fn helm_repository_passes_the_conformance_suite() {
    let (server, url) = serve_fixture_repo(TestServer::builder()).await;
    let reader = reader(&url, |_| {});
    conformance::run(&reader, &fixture_registry()).await;
    // One index, one archive per addon, however many files were read.
    let archives = server
        .paths()
        .iter()
        .filter(|p| p.ends_with(".tgz"))
        .count();
    assert_eq!(archives, 3, "{:?}", server.paths());
    assert_eq!(
        server
            .paths()
            .iter()
            .filter(|p| p.ends_with("index.yaml"))
            .count(),
        1
    );
}

#[tokio::test]
async fn helm_repository_behind_basic_auth_passes_and_refuses_wrong_credentials() {
    let (server, url) =
        serve_fixture_repo(TestServer::builder().basic_auth("chart-user", "s3cret-pass")).await;
    let good = reader(&url, |h| {
        h.auth = Auth::Basic {
            username: "chart-user".into(),
            password: "s3cret-pass".into(),
        };
    });
    conformance::run(&good, &fixture_registry()).await;

    let wrong = reader(&url, |h| {
        h.auth = Auth::Basic {
            username: "chart-user".into(),
            password: "wrong-pass-123".into(),
        };
    });
    conformance::expect_unauthorized(&wrong, "wrong-pass-123").await;
    conformance::expect_unauthorized(&reader(&url, |_| {}), "s3cret-pass").await;

    // Credentials in the URL are used, and never shown.
    let embedded = url.replacen("http://", "http://chart-user:s3cret-pass@", 1);
    let from_url = reader(&embedded, |_| {});
    assert_eq!(from_url.list_addons().await.unwrap().len(), 3);
    assert!(!from_url.to_string().contains("s3cret"));
    drop(server);
}

#[tokio::test]
async fn helm_repository_with_a_bearer_token_passes() {
    let (_server, url) = serve_fixture_repo(TestServer::builder().bearer("tok-123456")).await;
    let good = reader(&url, |h| h.auth = Auth::Bearer("tok-123456".into()));
    conformance::run(&good, &fixture_registry()).await;
    conformance::expect_unauthorized(
        &reader(&url, |h| h.auth = Auth::Bearer("bad-token-999".into())),
        "bad-token-999",
    )
    .await;
}

#[tokio::test]
async fn helm_repository_over_tls_needs_its_ca_or_insecure_skip_tls() {
    let ca = TestCa::new();
    let (_server, url) = serve_fixture_repo(TestServer::builder().tls(&ca)).await;
    assert!(url.starts_with("https://127.0.0.1:"));
    let trusted = reader(&url, |h| h.ca_bundle = Some(ca.ca_pem.clone().into_bytes()));
    conformance::run(&trusted, &fixture_registry()).await;

    let untrusted = reader(&url, |_| {});
    let err = untrusted.list_addons().await.unwrap_err();
    assert!(matches!(err, Error::Backend { .. }), "{err}");
    assert!(err.to_string().contains("certificate"), "{err}");
    assert!(err.to_string().contains("--ca-file"), "{err}");

    let insecure = reader(&url, |h| h.insecure_skip_tls = true);
    assert_eq!(insecure.list_addons().await.unwrap().len(), 3);

    let bad_pem = HelmReader::new(
        "r",
        &url,
        addonctl::source::http::HttpOptions {
            ca_bundle: Some(b"not a certificate".to_vec()),
            ..quick_http()
        },
        &addonctl::source::cache::CacheOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(bad_pem, Error::InvalidContent { .. }), "{bad_pem}");
}

#[tokio::test]
async fn the_index_is_cached_on_disk_and_revalidated_with_its_etag() {
    let (server, url) = serve_fixture_repo(TestServer::builder()).await;
    let (_guard, cache) = fresh_cache();
    let first = HelmReader::new("r", &url, quick_http(), &cache).unwrap();
    assert_eq!(first.list_addons().await.unwrap().len(), 3);
    let before = server.requests();
    // A new run: the index is revalidated (304) and read from the disk cache.
    let second = HelmReader::new("r", &url, quick_http(), &cache).unwrap();
    assert_eq!(second.list_addons().await.unwrap().len(), 3);
    assert_eq!(server.requests(), before + 1);
    assert_eq!(second.http().request_count(), 1);
    // --refresh: the cache is not trusted, the index comes again in full.
    let refreshing = HelmReader::new(
        "r",
        &url,
        quick_http(),
        &addonctl::source::cache::CacheOptions {
            refresh: true,
            ..cache.clone()
        },
    )
    .unwrap();
    assert_eq!(refreshing.list_addons().await.unwrap().len(), 3);
    // A changed index is fetched again.
    server.put(
        "/charts/index.yaml",
        "apiVersion: v1\nentries:\n  only:\n  - version: 1.0.0\n    urls: [only-1.0.0.tgz]\n",
    );
    let third = HelmReader::new("r", &url, quick_http(), &cache).unwrap();
    let listing = third.list_addons().await.unwrap();
    assert_eq!(listing.len(), 1);
    assert_eq!(listing[0].name, "only");
}

#[tokio::test]
async fn a_second_run_reads_chart_archives_from_the_disk_cache() {
    let (server, url) = serve_fixture_repo(TestServer::builder()).await;
    let (_guard, cache) = fresh_cache();
    let load = |cache: CacheOptions| {
        let url = url.clone();
        async move {
            let reader = HelmReader::new("r", &url, quick_http(), &cache).unwrap();
            addonctl::loader::load(&reader, &AddonRef::latest("full"))
                .await
                .unwrap();
            reader.http().request_count()
        }
    };
    // The index and the archive; then the index revalidated (304) and the archive from disk.
    assert_eq!(load(cache.clone()).await, 2);
    let before = server.requests();
    assert_eq!(load(cache.clone()).await, 1);
    assert_eq!(server.requests(), before + 1);
    // --refresh downloads both again.
    let refreshing = CacheOptions {
        refresh: true,
        ..cache.clone()
    };
    assert_eq!(load(refreshing).await, 2);
}

/// A repository holding `demo` at several versions (one a prerelease), with absolute URLs.
async fn multi_version_repo() -> (TestServer, String, tempfile::TempDir) {
    let server = TestServer::builder().start();
    let sources = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    for (version, description) in [
        ("1.0.0", "first"),
        ("v1.1.0", "second"),
        ("2.0.0-rc.1", "candidate"),
    ] {
        let dir = sources.path().join(format!("demo-{version}"));
        std::fs::create_dir_all(dir.join("resources")).unwrap();
        std::fs::write(
            dir.join("metadata.yaml"),
            format!("name: demo\nversion: {version}\ndescription: {description}\n"),
        )
        .unwrap();
        std::fs::write(
            dir.join("resources/cm.yaml"),
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  version: \"{version}\"\n"),
        )
        .unwrap();
    }
    package_and_index(
        sources.path(),
        out.path(),
        &format!("{}/archives", server.url),
    )
    .await;
    for entry in std::fs::read_dir(out.path()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let target = if name == "index.yaml" {
            format!("/repo/{name}")
        } else {
            format!("/archives/{name}")
        };
        server.put(&target, std::fs::read(&path).unwrap());
    }
    let url = format!("{}/repo", server.url);
    (server, url, out)
}

#[tokio::test]
async fn every_version_is_listed_and_the_newest_stable_one_is_the_default() {
    let (server, url, _out) = multi_version_repo().await;
    let reader = reader(&url, |_| {});
    let listing = reader.list_addons().await.unwrap();
    assert_eq!(listing[0].versions, ["2.0.0-rc.1", "v1.1.0", "1.0.0"]);
    assert_eq!(listing[0].description.as_deref(), Some("second"));
    let read = |version: Option<&str>| {
        let reader = reader.clone();
        let addon = AddonRef {
            name: "demo".into(),
            version: version.map(str::to_owned),
        };
        async move {
            String::from_utf8(reader.read_file(&addon, "resources/cm.yaml").await.unwrap()).unwrap()
        }
    };
    assert!(read(None).await.contains("v1.1.0"));
    assert!(
        read(Some("1.1.0")).await.contains("v1.1.0"),
        "a leading `v` is ignored"
    );
    assert!(read(Some("v1.0.0")).await.contains("\"1.0.0\""));
    assert!(read(Some("2.0.0-rc.1")).await.contains("rc.1"));
    let err = reader
        .list_files(&AddonRef {
            name: "demo".into(),
            version: Some("3.0.0".into()),
        })
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("v1.1.0"),
        "lists what is available: {err}"
    );
    // Absolute chart URLs (another path on the server) are followed; each archive once.
    let archives: Vec<_> = server
        .paths()
        .into_iter()
        .filter(|p| p.starts_with("/archives/"))
        .collect();
    assert_eq!(archives.len(), 3, "{archives:?}");
}

#[tokio::test]
async fn listing_takes_one_request_and_loading_an_addon_one_more() {
    // 90 addons, as a large registry has.
    let sources = tempfile::tempdir().unwrap();
    for i in 0..90 {
        let dir = sources.path().join(format!("addon-{i:02}"));
        std::fs::create_dir_all(dir.join("resources")).unwrap();
        std::fs::write(
            dir.join("metadata.yaml"),
            format!("name: addon-{i:02}\nversion: 1.0.{i}\ndescription: Addon number {i}\n"),
        )
        .unwrap();
        for j in 0..5 {
            std::fs::write(
                dir.join(format!("resources/cm-{j}.yaml")),
                format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a{i}-{j}\n"),
            )
            .unwrap();
        }
    }
    let out = tempfile::tempdir().unwrap();
    package_and_index(sources.path(), out.path(), "").await;
    let server = TestServer::builder().dir(out.path()).start();
    let reader = reader(&format!("{}/", server.url), |_| {});
    let listing = reader.list_addons().await.unwrap();
    assert_eq!(listing.len(), 90);
    let list_requests = reader.http().request_count();
    let package = addonctl::loader::load(&reader, &AddonRef::latest("addon-42"))
        .await
        .unwrap();
    assert_eq!(package.name(), "addon-42");
    let enable_requests = reader.http().request_count() - list_requests;
    eprintln!(
        "helm source, 90 addons: list = {list_requests} request(s), loading one addon = \
         {enable_requests} more"
    );
    assert_eq!(list_requests, 1);
    assert_eq!(enable_requests, 1);
    assert_eq!(server.requests(), 2);
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_retried_or_reported_with_the_reset_time() {
    let (server, url) = serve_fixture_repo(TestServer::builder()).await;

    // A short Retry-After is honoured, then the request succeeds.
    server.fail_next(Fault::Status(429, vec![("retry-after".into(), "1".into())]));
    let started = Instant::now();
    assert_eq!(reader(&url, |_| {}).list_addons().await.unwrap().len(), 3);
    assert!(started.elapsed() >= Duration::from_millis(900));

    // 5xx twice, then fine.
    server.fail_next(Fault::Status(503, vec![]));
    server.fail_next(Fault::Status(500, vec![]));
    assert_eq!(reader(&url, |_| {}).list_addons().await.unwrap().len(), 3);

    // A reset far away is not waited for: a clear error with the time.
    let reset = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3600;
    server.fail_always(Fault::Status(
        403,
        vec![
            ("x-ratelimit-remaining".into(), "0".into()),
            ("x-ratelimit-reset".into(), reset.to_string()),
        ],
    ));
    let started = Instant::now();
    let limited = reader(&url, |_| {});
    conformance::expect_rate_limited(&limited).await;
    let err = limited.list_addons().await.unwrap_err();
    assert!(err.to_string().contains("resets at"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(2));
    server.fail_always(Fault::Status(
        429,
        vec![("retry-after".into(), "600".into())],
    ));
    conformance::expect_rate_limited(&reader(&url, |_| {})).await;

    // A server that keeps failing: retried, then a backend error naming the status.
    server.fail_always(Fault::Status(502, vec![]));
    let before = server.requests();
    let err = reader(&url, |_| {}).list_addons().await.unwrap_err();
    assert!(matches!(err, Error::Backend { .. }), "{err}");
    assert!(err.to_string().contains("502"), "{err}");
    assert_eq!(server.requests() - before, 3, "one request and two retries");

    // Statuses that retrying cannot fix are not retried.
    server.fail_always(Fault::Status(418, vec![]));
    let before = server.requests();
    let err = reader(&url, |_| {}).list_addons().await.unwrap_err();
    assert!(err.to_string().contains("418"), "{err}");
    assert_eq!(server.requests() - before, 1);
    server.heal();
}

#[tokio::test]
async fn a_registry_that_hangs_fails_within_the_timeout() {
    let (server, url) = serve_fixture_repo(TestServer::builder()).await;
    server.fail_always(Fault::Hang);
    let short = |h: &mut addonctl::source::http::HttpOptions| {
        h.timeout = Duration::from_millis(400);
        h.retries = 1;
    };
    let started = Instant::now();
    let err = reader(&url, short).list_addons().await.unwrap_err();
    assert!(matches!(err, Error::Backend { .. }), "{err}");
    assert!(err.to_string().contains("did not answer"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    server.heal();

    // A server that accepts the connection and never speaks HTTP.
    let hole = black_hole();
    let started = Instant::now();
    let err = reader(&format!("http://{hole}/"), short)
        .list_addons()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Backend { .. }), "{err}");
    assert!(started.elapsed() < Duration::from_secs(3));
}

/// A repository whose one addon `bad` is served from `archive` (no digest in the index).
fn repo_with_archive(archive: Vec<u8>) -> (TestServer, String) {
    let server = TestServer::builder().start();
    server.put(
        "/index.yaml",
        "apiVersion: v1\nentries:\n  bad:\n  - name: bad\n    version: 1.0.0\n    urls: [bad-1.0.0.tgz]\n    unknownField: {nested: true}\n",
    );
    server.put("/bad-1.0.0.tgz", archive);
    let url = format!("{}/", server.url);
    (server, url)
}

fn raw_tar_entry(path: &str) -> Vec<u8> {
    let mut header = tar::Header::new_old();
    header.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
    header.set_size(4);
    header.set_mode(0o644);
    header.set_entry_type(tar::EntryType::Regular);
    header.set_cksum();
    let mut bytes = header.as_bytes().to_vec();
    let mut block = vec![0u8; 512];
    block[..4].copy_from_slice(b"evil");
    bytes.extend(block);
    bytes.extend(vec![0u8; 1024]);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&bytes).unwrap();
    gz.finish().unwrap()
}

#[tokio::test]
async fn bad_archives_are_refused_with_the_reason() {
    let good = write_tgz(
        Some("bad"),
        &[(
            "metadata.yaml".to_owned(),
            b"name: bad\nversion: 1.0.0\n".to_vec(),
        )],
    )
    .unwrap();
    let addon = AddonRef::latest("bad");

    // Truncated in transit (the connection drops mid-body).
    let (server, url) = repo_with_archive(good.clone());
    let r = reader(&url, |h| h.retries = 0);
    r.list_addons().await.unwrap();
    server.fail_next(Fault::Truncate);
    let err = r.list_files(&addon).await.unwrap_err();
    assert!(
        matches!(err, Error::Backend { .. }),
        "truncated in transit: {err}"
    );

    // Truncated file, corrupt file.
    for (label, bytes) in [
        ("truncated", good[..good.len() / 2].to_vec()),
        ("corrupt", b"this is not a gzip archive".to_vec()),
    ] {
        let (_server, url) = repo_with_archive(bytes);
        let err = reader(&url, |_| {}).list_files(&addon).await.unwrap_err();
        assert!(
            matches!(err, Error::InvalidContent { .. }),
            "{label}: {err}"
        );
        assert!(err.to_string().contains("bad-1.0.0.tgz"), "{label}: {err}");
    }

    // Path traversal and absolute paths.
    for path in ["bad/../../escape.yaml", "/etc/cron.d/evil"] {
        let (_server, url) = repo_with_archive(raw_tar_entry(path));
        let err = reader(&url, |_| {}).list_files(&addon).await.unwrap_err();
        assert!(matches!(err, Error::InvalidPath { .. }), "{path}: {err}");
    }

    // A gzip bomb: 100 MiB of zeros in a ~100 KiB archive.
    let bomb = {
        let mut header = tar::Header::new_gnu();
        header.set_size(100 * 1024 * 1024);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
            Vec::new(),
            flate2::Compression::best(),
        ));
        builder
            .append_data(
                &mut header,
                "bad/zeros",
                std::io::Read::take(std::io::repeat(0), 100 * 1024 * 1024),
            )
            .unwrap();
        builder.into_inner().unwrap().finish().unwrap()
    };
    assert!(bomb.len() < 1024 * 1024, "{}", bomb.len());
    let (_server, url) = repo_with_archive(bomb);
    let err = reader(&url, |_| {}).list_files(&addon).await.unwrap_err();
    assert!(matches!(err, Error::TooLarge { .. }), "{err}");

    // An archive that does not match the digest in the index.
    let server = TestServer::builder().start();
    server.put(
        "/index.yaml",
        format!(
            "apiVersion: v1\nentries:\n  bad:\n  - version: 1.0.0\n    urls: [bad-1.0.0.tgz]\n    digest: {}\n",
            "0".repeat(64)
        ),
    );
    server.put("/bad-1.0.0.tgz", good);
    let err = reader(&format!("{}/", server.url), |_| {})
        .list_files(&addon)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("digest"), "{err}");
}

#[tokio::test]
async fn malformed_index_files_are_clear_errors() {
    for (label, body) in [
        ("not yaml", "entries: [unclosed\n"),
        ("no entries", "apiVersion: v1\nsomething: else\n"),
        ("entries is a list", "apiVersion: v1\nentries: [1, 2]\n"),
        ("an html page", "<html><body>Welcome</body></html>\n"),
    ] {
        let server = TestServer::builder().start();
        server.put("/index.yaml", body);
        let err = reader(&format!("{}/", server.url), |_| {})
            .list_addons()
            .await
            .unwrap_err();
        assert!(
            matches!(err, Error::InvalidContent { .. }),
            "{label}: {err}"
        );
        assert!(err.to_string().contains("index.yaml"), "{label}: {err}");
    }
    // Not a Helm repository at all.
    let server = TestServer::builder().start();
    let err = reader(&format!("{}/", server.url), |_| {})
        .list_addons()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    assert!(err.to_string().contains("Helm repository"), "{err}");
}

#[tokio::test]
async fn bodies_over_the_limit_are_not_read() {
    let server = TestServer::builder().start();
    server.put("/index.yaml", vec![b'#'; 64 * 1024]);
    let err = reader(&format!("{}/", server.url), |h| h.max_body_bytes = 1024)
        .list_addons()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::TooLarge { .. }), "{err}");
}

/// Helm 3 and Helm 4 both add the repository `index` wrote, pull the archives `package` wrote
/// (latest and a given version), lint them and read their Chart.yaml.
#[tokio::test]
async fn helm_accepts_what_package_and_index_write() {
    let (_server, url) = serve_fixture_repo(TestServer::builder()).await;
    for version in Helm::ALL {
        let home = tempfile::tempdir().unwrap();
        let helm = |args: &[&str]| version.run(home.path(), args);
        let ok = |output: std::process::Output, what: &str| {
            assert!(
                output.status.success(),
                "{version:?}: {what} failed:\n{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            String::from_utf8_lossy(&output.stdout).into_owned()
        };
        ok(helm(&["repo", "add", "fixtures", &url]), "helm repo add");
        let pulled = home.path().join("pulled");
        std::fs::create_dir_all(&pulled).unwrap();
        let destination = pulled.to_str().unwrap();
        ok(
            helm(&["pull", "fixtures/minimal", "--destination", destination]),
            "helm pull",
        );
        assert!(pulled.join("minimal-0.1.0.tgz").is_file(), "{version:?}");
        ok(
            helm(&[
                "pull",
                "fixtures/full",
                "--version",
                "v1.2.0",
                "--destination",
                destination,
            ]),
            "helm pull --version",
        );
        assert!(pulled.join("full-v1.2.0.tgz").is_file(), "{version:?}");
        // Helm 4's linter warns where Helm 3's does not: when a chart has no `templates/`
        // directory (addonctl's archives hold the addon's own files, no Helm templates), and when
        // the version is not strict SemVer 2 (`full` is `v1.2.0`, written as the addon declares
        // it; both Helm versions index, pull and show it all the same). `--strict` turns those
        // warnings into a failure; nothing else is reported.
        for (archive, helm4_warnings) in [
            (
                "minimal-0.1.0.tgz",
                &["templates/: directory does not exist"][..],
            ),
            (
                "full-v1.2.0.tgz",
                &[
                    "Chart.yaml: version 'v1.2.0' is not a valid SemVerV2",
                    "templates/: directory does not exist",
                ][..],
            ),
        ] {
            let path = pulled.join(archive);
            let lint = helm(&["lint", "--strict", path.to_str().unwrap()]);
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&lint.stdout),
                String::from_utf8_lossy(&lint.stderr)
            );
            let complaints: Vec<&str> = text
                .lines()
                .filter(|l| l.starts_with("[WARNING]") || l.starts_with("[ERROR]"))
                .collect();
            let expected: Vec<String> = match version {
                Helm::V3 => Vec::new(),
                Helm::V4 => helm4_warnings
                    .iter()
                    .map(|w| format!("[WARNING] {w}"))
                    .collect(),
            };
            assert_eq!(complaints, expected, "{version:?} {archive}: {text}");
            assert_eq!(
                lint.status.success(),
                expected.is_empty(),
                "{version:?} {archive}: {text}"
            );
            assert!(
                text.contains("1 chart(s) linted"),
                "{version:?} {archive}: {text}"
            );
        }
        let chart = ok(helm(&["show", "chart", "fixtures/full"]), "helm show chart");
        assert!(chart.contains("name: full"), "{version:?}: {chart}");
        assert!(chart.contains("apiVersion: v2"), "{version:?}: {chart}");
        assert!(chart.contains("addon.name: full"), "{version:?}: {chart}");
        let search = ok(helm(&["search", "repo", "fixtures/"]), "helm search");
        assert!(search.contains("fixtures/legacy"), "{version:?}: {search}");
    }
}

/// A gzip bomb: `size` bytes of zeros, compressed to a few hundred KiB.
fn gzip_bomb(size: u64) -> Vec<u8> {
    let mut header = tar::Header::new_gnu();
    header.set_size(size);
    header.set_mode(0o644);
    header.set_entry_type(tar::EntryType::Regular);
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::best(),
    ));
    builder
        .append_data(
            &mut header,
            "bad/zeros",
            std::io::Read::take(std::io::repeat(0), size),
        )
        .unwrap();
    builder.into_inner().unwrap().finish().unwrap()
}

/// An archive whose `bad/link` points out of the archive.
fn symlink_out() -> Vec<u8> {
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    let metadata = b"name: bad\nversion: 1.0.0\n";
    let mut header = tar::Header::new_gnu();
    header.set_size(metadata.len() as u64);
    header.set_mode(0o644);
    header.set_entry_type(tar::EntryType::Regular);
    builder
        .append_data(&mut header, "bad/metadata.yaml", &metadata[..])
        .unwrap();
    let mut link = tar::Header::new_gnu();
    link.set_entry_type(tar::EntryType::Symlink);
    link.set_size(0);
    link.set_mode(0o777);
    builder
        .append_link(&mut link, "bad/link", "../../../etc/passwd")
        .unwrap();
    builder.into_inner().unwrap().finish().unwrap()
}

/// `enable reg/x --dry-run` from a stored Helm registry whose archive of `x` is hostile: the
/// reason, exit 2, as `render` gives it; never "`x` is not in registry `reg`".
#[tokio::test(flavor = "multi_thread")]
async fn enable_from_a_stored_registry_names_why_a_hostile_archive_cannot_be_read() {
    use crate::support::k8s::Sandbox;
    let sb = Sandbox::with_kubevela().await;
    let cache = tempfile::tempdir().unwrap();
    let cases = [
        ("traversal", raw_tar_entry("bad/../../escape.yaml"), ".."),
        (
            "absolute",
            raw_tar_entry("/etc/cron.d/evil"),
            "/etc/cron.d/evil",
        ),
        ("symlink", symlink_out(), "outside the archive"),
        ("bomb", gzip_bomb(100 * 1024 * 1024), "over the limit"),
    ];
    for (label, archive, needle) in cases {
        let (_server, url) = repo_with_archive(archive);
        let registry = format!("hostile-{label}");
        sb.cli()
            .env("XDG_CACHE_HOME", cache.path())
            .args(["registry", "add", &registry, "--type", "helm", "--endpoint"])
            .arg(&url)
            .assert()
            .success();
        let reference = format!("{registry}/bad");
        for command in [
            vec!["enable", reference.as_str(), "--dry-run"],
            vec!["render", reference.as_str()],
        ] {
            let out = sb
                .cli()
                .env("XDG_CACHE_HOME", cache.path())
                .args(&command)
                .assert()
                .code(2);
            let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
            assert!(
                !stderr.contains("is not in registry") && !stderr.contains("in no registry"),
                "{label}: {command:?}: {stderr}"
            );
            assert!(stderr.contains(needle), "{label}: {command:?}: {stderr}");
        }
    }
}
