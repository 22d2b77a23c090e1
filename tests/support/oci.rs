//! The real OCI registry for the OCI reader's tests: Debian's docker-registry, started once per
//! test run by `scripts/sources/oci-registry.sh` (anonymous, htpasswd and token auth over one
//! storage directory; stopped by PID when the test process exits), charts pushed with the real
//! `helm push`, and cosign-style signatures made by `scripts/sources/cosign-sign.py`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use addonctl::render::Renderer;
use addonctl::source::cache::CacheOptions;
use addonctl::source::oci::client::Login;
use addonctl::source::oci::{OciOptions, OciReader, Policy};

use crate::support::helm_repo::{quick_http, Helm};
use crate::support::{fixture_registry, root};

/// The running registries.
#[derive(Debug)]
pub struct Registries {
    /// `127.0.0.1:PORT` of each.
    pub anonymous: String,
    /// With htpasswd basic auth.
    pub basic: String,
    /// With token auth (GET and POST token server).
    pub token: String,
    /// With token auth whose token server answers POST only.
    pub token_post_only: String,
    /// The user name.
    pub user: String,
    /// Its password.
    pub password: String,
    /// A refresh token the token servers accept.
    pub refresh: String,
    /// The request logs of the token servers.
    pub token_log: PathBuf,
    /// The POST-only one's.
    pub token_post_log: PathBuf,
    /// The storage directory (`docker/registry/v2/…`).
    pub storage: PathBuf,
}

/// The registries, started once per test run.
pub fn registries() -> &'static Registries {
    static CELL: OnceLock<Registries> = OnceLock::new();
    CELL.get_or_init(|| {
        let dir = root()
            .join("target/sources-env")
            .join(format!("oci-registry-{}", std::process::id()));
        let output = Command::new("bash")
            .arg(root().join("scripts/sources/oci-registry.sh"))
            .args(["start", "--dir"])
            .arg(&dir)
            .arg("--watch-pid")
            .arg(std::process::id().to_string())
            .stderr(std::process::Stdio::inherit())
            .output()
            .expect("run scripts/sources/oci-registry.sh");
        assert!(
            output.status.success(),
            "`scripts/sources/oci-registry.sh start` failed; see {}",
            dir.display()
        );
        let env: BTreeMap<String, String> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let get = |k: &str| {
            env.get(k)
                .cloned()
                .unwrap_or_else(|| panic!("{k} in {env:?}"))
        };
        Registries {
            anonymous: get("ANONYMOUS"),
            basic: get("BASIC"),
            token: get("TOKEN"),
            token_post_only: get("TOKEN_POST_ONLY"),
            user: get("USER"),
            password: get("PASSWORD"),
            refresh: get("REFRESH"),
            token_log: PathBuf::from(get("TOKEN_LOG")),
            token_post_log: PathBuf::from(get("TOKEN_POST_LOG")),
            storage: dir.join("storage"),
        }
    })
}

/// The fixture registry with `full`'s version as strict semver (`1.2.0`: Helm's OCI tags skip
/// `v1.2.0`), in a temporary directory: the truth for the conformance suite.
pub fn strict_fixture_registry() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    copy_dir(&fixture_registry(), dir.path());
    let metadata = dir.path().join("full/metadata.yaml");
    let text = std::fs::read_to_string(&metadata).expect("full metadata");
    std::fs::write(&metadata, text.replace("version: v1.2.0", "version: 1.2.0")).expect("write");
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let path = entry.expect("entry").path();
        let target = to.join(path.file_name().expect("name"));
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, &target).expect("copy");
        }
    }
}

/// Packages the addons under `dir` with addonctl's `package` and pushes each with the real
/// `helm push` to `oci://<anonymous>/<prefix>`; returns the pushed charts' manifest digests by
/// addon name.
pub async fn push_addons(dir: &Path, prefix: &str) -> BTreeMap<String, String> {
    let out = tempfile::tempdir().expect("tempdir");
    let packaged = addonctl::publish::package(dir, out.path(), &Renderer::new())
        .await
        .expect("package");
    let mut digests = BTreeMap::new();
    for package in packaged {
        digests.insert(package.name.clone(), helm_push(&package.path, prefix));
    }
    digests
}

/// `helm push <tgz> oci://<anonymous>/<prefix> --plain-http`; returns the manifest digest.
pub fn helm_push(tgz: &Path, prefix: &str) -> String {
    let home = tempfile::tempdir().expect("tempdir");
    let target = format!("oci://{}/{prefix}", registries().anonymous);
    let output = Helm::V3.run(
        home.path(),
        &[
            "push",
            tgz.to_str().expect("utf-8"),
            &target,
            "--plain-http",
        ],
    );
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "helm push: {text}");
    text.lines()
        .find_map(|l| l.strip_prefix("Digest: "))
        .map_or_else(|| panic!("no digest in: {text}"), |d| d.trim().to_owned())
}

/// The manifest bytes and media type of `repository:reference` on the anonymous registry.
pub async fn get_manifest(repository: &str, reference: &str) -> (Vec<u8>, String) {
    let url = format!(
        "http://{}/v2/{repository}/manifests/{reference}",
        registries().anonymous
    );
    let response = reqwest::Client::new()
        .get(url)
        .header("accept", addonctl::source::oci::client::MANIFEST_ACCEPT)
        .send()
        .await
        .expect("get manifest");
    assert!(response.status().is_success(), "{}", response.status());
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (response.bytes().await.expect("body").to_vec(), kind)
}

/// Uploads `bytes` as a blob of `repository` on the anonymous registry (monolithic upload);
/// returns its digest.
pub async fn put_blob(repository: &str, bytes: &[u8]) -> String {
    let digest = addonctl::source::oci::client::sha256_digest(bytes);
    let base = format!("http://{}", registries().anonymous);
    let client = reqwest::Client::new();
    let started = client
        .post(format!("{base}/v2/{repository}/blobs/uploads/"))
        .send()
        .await
        .expect("start upload");
    assert!(started.status().is_success(), "{}", started.status());
    let location = started.headers()["location"]
        .to_str()
        .expect("location")
        .to_owned();
    let location = if location.starts_with('/') {
        format!("{base}{location}")
    } else {
        location
    };
    let separator = if location.contains('?') { '&' } else { '?' };
    let done = client
        .put(format!("{location}{separator}digest={digest}"))
        .header("content-type", "application/octet-stream")
        .body(bytes.to_vec())
        .send()
        .await
        .expect("upload");
    assert!(done.status().is_success(), "{}", done.status());
    digest
}

/// Puts `bytes` as the manifest `repository:reference` on the anonymous registry.
pub async fn put_manifest(repository: &str, reference: &str, media_type: &str, bytes: &[u8]) {
    let url = format!(
        "http://{}/v2/{repository}/manifests/{reference}",
        registries().anonymous
    );
    let response = reqwest::Client::new()
        .put(url)
        .header("content-type", media_type)
        .body(bytes.to_vec())
        .send()
        .await
        .expect("put manifest");
    assert!(response.status().is_success(), "{}", response.status());
}

/// Points `repository:to` at the manifest of `repository:from` (as `crane tag` does).
pub async fn retag(repository: &str, from: &str, to: &str) {
    let (bytes, kind) = get_manifest(repository, from).await;
    let url = format!(
        "http://{}/v2/{repository}/manifests/{to}",
        registries().anonymous
    );
    let response = reqwest::Client::new()
        .put(url)
        .header("content-type", kind)
        .body(bytes)
        .send()
        .await
        .expect("put manifest");
    assert!(response.status().is_success(), "{}", response.status());
}

/// A new ECDSA P-256 key pair in `dir`: (private, public) PEM files.
pub fn keygen(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let private = dir.join(format!("{name}.key"));
    let public = dir.join(format!("{name}.pub"));
    let status = Command::new("python3")
        .arg(root().join("scripts/sources/cosign-sign.py"))
        .arg("keygen")
        .args([&private, &public])
        .status()
        .expect("keygen");
    assert!(status.success());
    (private, public)
}

/// Signs `repository@digest` with `key` (extra arguments: `--names D`, `--tamper`).
pub fn sign(repository: &str, digest: &str, key: &Path, extra: &[&str]) {
    cosign_sign("sign", repository, digest, key, extra);
}

/// Signs `repository@digest` with `key` as a Sigstore bundle attached as a referrer (the fallback
/// tag on this registry); extra arguments: `--names D`, `--tamper`, `--message`, `--predicate T`.
pub fn sign_bundle(repository: &str, digest: &str, key: &Path, extra: &[&str]) {
    cosign_sign("bundle", repository, digest, key, extra);
}

fn cosign_sign(command: &str, repository: &str, digest: &str, key: &Path, extra: &[&str]) {
    let output = Command::new("python3")
        .arg(root().join("scripts/sources/cosign-sign.py"))
        .args([command, "--registry", &registries().anonymous])
        .args(["--repository", repository, "--digest", digest, "--key"])
        .arg(key)
        .args(extra)
        .output()
        .expect("sign");
    assert!(
        output.status.success(),
        "cosign-sign.py: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A reader of `oci://<host>/<prefix>` (plain HTTP, loopback), no disk cache.
pub fn reader(host: &str, prefix: &str, login: Login, policy: Option<Policy>) -> OciReader {
    reader_with_cache(host, prefix, login, policy, &CacheOptions::off())
}

/// As [`reader`], with a disk cache.
pub fn reader_with_cache(
    host: &str,
    prefix: &str,
    login: Login,
    policy: Option<Policy>,
    cache: &CacheOptions,
) -> OciReader {
    OciReader::new(
        "oci-test",
        &format!("oci://{host}/{prefix}"),
        OciOptions {
            http: quick_http(),
            login,
            plain_http: Some("true".into()),
            policy: policy.map(std::sync::Arc::new),
        },
        cache,
    )
    .expect("reader")
}

/// The basic login of the registries' user.
pub fn user_login() -> Login {
    Login::Basic {
        username: registries().user.clone(),
        password: registries().password.clone().into(),
    }
}

/// A unique repository prefix for one test.
pub fn prefix(test: &str) -> String {
    format!("t{}-{test}", std::process::id())
}
