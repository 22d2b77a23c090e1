//! The git reader against bare repositories served by lighttpd + `git http-backend` and over
//! `file://` URLs.

use addonctl::source::cache::CacheOptions;
use addonctl::source::git::{GitOptions, GitReader};
use addonctl::source::{AddonRef, AsyncReader, Error};

use crate::support::conformance;
use crate::support::fixture_registry;
use crate::support::git_server::{git, GitFixtures};
use crate::support::helm_repo::fresh_cache;
use crate::support::http_server::TestCa;

fn reader(url: &str, options: GitOptions, cache: &CacheOptions) -> GitReader {
    GitReader::new("git-test", url, options, cache).unwrap()
}

#[tokio::test]
async fn git_over_smart_http_passes_the_conformance_suite() {
    let fixtures = GitFixtures::get();
    let (_guard, cache) = fresh_cache();
    let reader = reader(
        &fixtures.http_url("fixtures.git"),
        GitOptions::default(),
        &cache,
    );
    conformance::run(&reader, &fixture_registry()).await;
}

#[tokio::test]
async fn git_over_file_urls_passes_the_conformance_suite() {
    let fixtures = GitFixtures::get();
    let (_guard, cache) = fresh_cache();
    let reader = reader(
        &fixtures.file_url("fixtures.git"),
        GitOptions::default(),
        &cache,
    );
    conformance::run(&reader, &fixture_registry()).await;
}

#[tokio::test]
async fn version_tags_become_addon_versions() {
    let fixtures = GitFixtures::get();
    let (_guard, cache) = fresh_cache();
    let reader = reader(
        &fixtures.http_url("fixtures.git"),
        GitOptions::default(),
        &cache,
    );
    let listing = reader.list_addons().await.unwrap();
    let minimal = listing.iter().find(|a| a.name == "minimal").unwrap();
    assert_eq!(minimal.versions, ["0.1.0", "0.0.9"]);
    assert!(
        !listing.iter().any(|a| a.name == "dev-only"),
        "other branches are not read"
    );
    let old = AddonRef {
        name: "minimal".into(),
        version: Some("v0.0.9".into()),
    };
    let text = String::from_utf8(reader.read_file(&old, "metadata.yaml").await.unwrap()).unwrap();
    assert!(text.contains("0.0.9"), "{text}");
}

#[tokio::test]
async fn a_branch_or_tag_pins_what_is_read() {
    let fixtures = GitFixtures::get();
    let (_guard, cache) = fresh_cache();
    let url = fixtures.http_url("fixtures.git");
    let pinned = |reference: &str| {
        reader(
            &url,
            GitOptions {
                reference: Some(reference.into()),
                ..GitOptions::default()
            },
            &cache,
        )
    };
    let dev = pinned("dev").list_addons().await.unwrap();
    assert!(dev.iter().any(|a| a.name == "dev-only"));
    let tag = pinned("v0.0.9").list_addons().await.unwrap();
    let minimal = tag.iter().find(|a| a.name == "minimal").unwrap();
    assert_eq!(minimal.versions, ["0.0.9"]);
    let err = pinned("no-such-branch").list_addons().await.unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err}");
    assert!(err.to_string().contains("no-such-branch"), "{err}");
}

#[tokio::test]
async fn a_registry_directory_inside_the_repository_is_read_and_links_are_not_files() {
    let fixtures = GitFixtures::get();
    let (_guard, cache) = fresh_cache();
    let reader = reader(
        &fixtures.file_url("nested.git"),
        GitOptions {
            path: "catalog/addons".into(),
            ..GitOptions::default()
        },
        &cache,
    );
    let listing = reader.list_addons().await.unwrap();
    assert_eq!(listing.len(), 3);
    let minimal = AddonRef::latest("minimal");
    let files = reader.list_files(&minimal).await.unwrap();
    let paths: Vec<_> = files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["metadata.yaml"], "the symbolic link is not a file");
    let err = reader.read_file(&minimal, "passwd").await.unwrap_err();
    assert!(matches!(err, Error::InvalidPath { .. }), "{err}");
}

#[tokio::test]
async fn the_cache_is_reused_and_serves_when_the_server_is_gone() {
    let fixtures = GitFixtures::get();
    let (_guard, cache) = fresh_cache();
    // A repository of our own that we can take away.
    let scratch = tempfile::tempdir().unwrap();
    git(
        scratch.path(),
        &[
            "clone",
            "-q",
            "--bare",
            fixtures.root.join("fixtures.git").to_str().unwrap(),
            "copy.git",
        ],
    );
    let url = format!("file://{}", scratch.path().join("copy.git").display());
    let first = reader(&url, GitOptions::default(), &cache);
    assert_eq!(first.list_addons().await.unwrap().len(), 3);
    assert!(
        first.cache_dir().join("HEAD").is_file(),
        "a bare clone in the cache"
    );
    std::fs::remove_dir_all(scratch.path().join("copy.git")).unwrap();
    let offline = reader(&url, GitOptions::default(), &cache);
    assert_eq!(offline.list_addons().await.unwrap().len(), 3);
    // --refresh asks for the server's answer: no falling back on the earlier fetch.
    let refreshing = CacheOptions {
        refresh: true,
        ..cache.clone()
    };
    let err = reader(&url, GitOptions::default(), &refreshing)
        .list_addons()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Backend { .. }), "{err}");
    // Without a cache there is nothing to fall back on.
    let (_other, empty_cache) = fresh_cache();
    let err = reader(&url, GitOptions::default(), &empty_cache)
        .list_addons()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Backend { .. }), "{err}");
}

#[tokio::test]
async fn an_unreachable_git_server_is_a_backend_error() {
    let (_guard, cache) = fresh_cache();
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let err = reader(
        &format!("http://127.0.0.1:{port}/git/none.git"),
        GitOptions::default(),
        &cache,
    )
    .list_addons()
    .await
    .unwrap_err();
    assert!(matches!(err, Error::Backend { .. }), "{err}");
    let fixtures = GitFixtures::get();
    let err = reader(
        &fixtures.http_url("missing.git"),
        GitOptions::default(),
        &cache,
    )
    .list_addons()
    .await
    .unwrap_err();
    assert!(!err.to_string().is_empty());
}

#[tokio::test]
async fn git_over_https_needs_the_registry_ca_bundle_or_insecure_skip_tls() {
    let fixtures = GitFixtures::get();
    let ca = TestCa::new();
    let tls = tempfile::tempdir().unwrap();
    let (cert, key) = ca.write_server_pem(tls.path());
    let (_server, base) = crate::support::git_server::start_server_with(
        &fixtures.root,
        &tls.path().join("lighttpd"),
        &[
            "--tls-cert".as_ref(),
            cert.as_os_str(),
            "--tls-key".as_ref(),
            key.as_os_str(),
        ],
    );
    assert!(base.starts_with("https://"), "{base}");
    let url = format!("{base}/fixtures.git");
    // A cache of its own for each reader: a failed fetch would fall back on an earlier one.
    let with = |options: GitOptions| {
        let (guard, cache) = fresh_cache();
        (guard, reader(&url, options, &cache))
    };

    // The system does not trust the test CA.
    let err = with(GitOptions::default())
        .1
        .list_addons()
        .await
        .unwrap_err();
    assert!(err.to_string().contains("certificate"), "{err}");

    // The registry's CA bundle.
    let (_trusted_cache, trusted) = with(GitOptions {
        ca_bundle: Some(ca.ca_pem.clone().into_bytes()),
        ..GitOptions::default()
    });
    conformance::run(&trusted, &fixture_registry()).await;

    // Another CA does not vouch for the server.
    let other = TestCa::new();
    let err = with(GitOptions {
        ca_bundle: Some(other.ca_pem.clone().into_bytes()),
        ..GitOptions::default()
    })
    .1
    .list_addons()
    .await
    .unwrap_err();
    assert!(err.to_string().contains("certificate"), "{err}");

    // insecure-skip-TLS accepts anything (test servers only).
    let (_insecure_cache, insecure) = with(GitOptions {
        insecure_skip_tls: true,
        ..GitOptions::default()
    });
    assert_eq!(insecure.list_addons().await.unwrap().len(), 3);

    // A bundle that is not PEM is refused when the registry is opened.
    let err = GitReader::new(
        "git-test",
        &url,
        GitOptions {
            ca_bundle: Some(b"not a certificate".to_vec()),
            ..GitOptions::default()
        },
        &CacheOptions::default(),
    )
    .err()
    .unwrap();
    assert!(matches!(err, Error::InvalidContent { .. }), "{err}");
}
