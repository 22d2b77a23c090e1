//! Registry benchmark (issue figures): requests and wall time to list a 90-addon registry and to
//! load ("enable") one of its addons, from every kind of source, cold (empty disk cache) and warm
//! (a second run over the disk cache of the first).
//!
//! The sources are the test suite's stand-ins, all on 127.0.0.1: the protocol fakes of GitHub,
//! Gitee and GitLab (`tests/support/forges.rs`, requests counted by the server), a static Helm
//! repository made with `addonctl package` + `index` (`tests/support/http_server.rs`, counted by
//! the server), moto (anonymous, path style) and s3s-fs (signed) started by
//! `scripts/sources/*.sh` (requests counted by an SDK interceptor), lighttpd + `git http-backend`
//! (counted in its access log), sshd running `git-upload-pack` (ssh sessions counted in its log)
//! Debian's docker-registry (`scripts/sources/oci-registry.sh`, charts pushed with the real `helm
//! push`; requests counted by the reader's client), read through the catalog chart, through
//! `/v2/_catalog`, and with cosign verification under `enforce`,
//! and a local directory. Every server is stopped by PID when the benchmark ends. `scripts/bench-sources.sh` runs it.
//!
//! Columns: `list` = requests of a new reader listing the registry with an empty cache; `enable
//! cold` = requests of a new reader loading `addon-042` with an empty cache (what `enable` reads);
//! `enable warm` = the same with the cache a first run left; then the median wall time of each
//! over `ADDONCTL_BENCH_RUNS` runs (default 5).
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::disallowed_methods
)]

use std::collections::BTreeMap;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::time::{Duration, Instant};

use addonctl::render::Renderer;
use addonctl::source::cache::CacheOptions;
use addonctl::source::gitee::{GiteeOptions, GiteeReader};
use addonctl::source::github::{GithubOptions, GithubReader};
use addonctl::source::gitlab::{GitlabOptions, GitlabReader};
use addonctl::source::helm::HelmReader;
use addonctl::source::http::HttpOptions;
use addonctl::source::local::LocalReader;
use addonctl::source::oci::client::Login;
use addonctl::source::oci::{Mode, OciOptions, OciReader, Policy};
use addonctl::source::s3::S3Reader;
use addonctl::source::{AddonRef, AsyncReader};
use p256::pkcs8::DecodePublicKey as _;

// The test suite's support code this benchmark shares: the fakes and the server starters.
#[allow(dead_code, reason = "the benchmark uses part of the test support")]
#[path = "../tests/support/forges.rs"]
mod forges;
#[allow(dead_code, reason = "the benchmark uses part of the test support")]
#[path = "../tests/support/git_server.rs"]
mod git_server;
#[allow(dead_code, reason = "the benchmark uses part of the test support")]
#[path = "../tests/support/http_server.rs"]
mod http_server;
#[allow(dead_code, reason = "the benchmark uses part of the test support")]
#[path = "../tests/support/s3.rs"]
mod s3;
#[allow(dead_code, reason = "the benchmark uses part of the test support")]
#[path = "../tests/support/ssh_server.rs"]
mod ssh_server;

/// What the shared support code expects of `crate::support`.
mod support {
    use std::path::PathBuf;

    pub(crate) use super::git_server;

    /// The repository root.
    pub fn root() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
    }

    /// `tests/fixtures/registry`.
    pub fn fixture_registry() -> PathBuf {
        root().join("tests/fixtures/registry")
    }
}

use forges::{many_addons, Forge, Repo};
use http_server::TestServer;
use s3 as s3_support;

/// Addons in the fixture registry.
const ADDONS: usize = 90;
/// The addon loaded.
const ADDON: &str = "addon-042";

type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// One source: how to open a reader over a cache, and how many requests its server has seen.
struct Source<'a> {
    name: &'static str,
    open: Box<dyn Fn(CacheOptions) -> Box<dyn AsyncReader> + 'a>,
    requests: Box<dyn Fn() -> u64 + 'a>,
}

/// The figures of one source.
struct Figures {
    list: u64,
    cold: u64,
    warm: u64,
    list_time: Duration,
    cold_time: Duration,
    warm_time: Duration,
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn fresh_cache() -> (tempfile::TempDir, CacheOptions) {
    let dir = tempfile::tempdir().unwrap();
    let options = CacheOptions {
        root: Some(dir.path().to_path_buf()),
        ..CacheOptions::default()
    };
    (dir, options)
}

/// Runs `step` over a new reader and returns (requests, wall time).
async fn measure<'a>(
    source: &Source<'a>,
    cache: CacheOptions,
    step: impl for<'r> Fn(&'r dyn AsyncReader) -> Boxed<'r, ()>,
) -> (u64, Duration) {
    let reader = (source.open)(cache);
    let before = (source.requests)();
    let started = Instant::now();
    step(reader.as_ref()).await;
    let elapsed = started.elapsed();
    ((source.requests)() - before, elapsed)
}

fn list(reader: &dyn AsyncReader) -> Boxed<'_, ()> {
    Box::pin(async move {
        let listing = reader.list_addons().await.unwrap();
        assert_eq!(listing.len(), ADDONS, "{reader}");
    })
}

fn load(reader: &dyn AsyncReader) -> Boxed<'_, ()> {
    Box::pin(async move {
        let package = addonctl::loader::load(reader, &AddonRef::latest(ADDON))
            .await
            .unwrap();
        assert_eq!(package.metadata.name, ADDON);
    })
}

async fn run(source: &Source<'_>, runs: usize) -> Figures {
    let mut figures = Figures {
        list: 0,
        cold: 0,
        warm: 0,
        list_time: Duration::ZERO,
        cold_time: Duration::ZERO,
        warm_time: Duration::ZERO,
    };
    let (mut list_times, mut cold_times, mut warm_times) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        let (_guard, cache) = fresh_cache();
        let (requests, time) = measure(source, cache, list).await;
        figures.list = requests;
        list_times.push(time);

        let (_guard, cache) = fresh_cache();
        let (requests, time) = measure(source, cache.clone(), load).await;
        figures.cold = requests;
        cold_times.push(time);
        let (requests, time) = measure(source, cache, load).await;
        figures.warm = requests;
        warm_times.push(time);
    }
    figures.list_time = median(list_times);
    figures.cold_time = median(cold_times);
    figures.warm_time = median(warm_times);
    figures
}

/// Writes the fixture registry (one directory per addon) under `dir`.
fn write_registry(dir: &Path, files: &BTreeMap<String, Vec<u8>>) {
    for (path, bytes) in files {
        let target = dir.join(path);
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(target, bytes).unwrap();
    }
}

fn quick_http() -> HttpOptions {
    HttpOptions {
        timeout: Duration::from_secs(30),
        retries: 1,
        ..HttpOptions::default()
    }
}

/// Stops a server a start script started in `dir` (by the PID it wrote there).
fn stop_script_server(script: &str, dir: &Path) {
    let status = std::process::Command::new("bash")
        .arg(support::root().join("scripts/sources").join(script))
        .args(["stop", "--dir"])
        .arg(dir)
        .status();
    if !status.is_ok_and(|s| s.success()) {
        eprintln!("could not stop the server of {script} in {}", dir.display());
    }
}

/// Runs a command that must succeed.
fn run_ok(command: &mut std::process::Command) -> String {
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Starts the OCI registries in `dir`; returns the anonymous one's `host:port`.
fn start_oci_registry(dir: &Path) -> String {
    let out = run_ok(
        std::process::Command::new("bash")
            .arg(support::root().join("scripts/sources/oci-registry.sh"))
            .args(["start", "--dir"])
            .arg(dir)
            .args(["--watch-pid", &std::process::id().to_string()]),
    );
    out.lines()
        .find_map(|l| l.strip_prefix("ANONYMOUS="))
        .unwrap()
        .to_owned()
}

/// Pushes every chart of `charts` with helm under `plain/` and `catalog/`, and the catalog chart
/// (`catalog.json` of the addons in `registry`) under `catalog/`.
fn push_oci(registry: &str, charts: &Path, addons: &Path, work: &Path) {
    let helm = run_ok(
        std::process::Command::new("bash").arg(support::root().join("scripts/sources/helm.sh")),
    );
    let helm = helm.trim();
    let home = work.join("helm-home");
    let push = |tgz: &Path, prefix: &str| {
        run_ok(
            std::process::Command::new(helm)
                .env("HELM_CONFIG_HOME", home.join("config"))
                .env("HELM_CACHE_HOME", home.join("cache"))
                .env("HELM_DATA_HOME", home.join("data"))
                .arg("push")
                .arg(tgz)
                .arg(format!("oci://{registry}/{prefix}"))
                .arg("--plain-http"),
        );
    };
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(charts).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "tgz") {
            push(&path, "plain");
            push(&path, "catalog");
        }
    }
    for entry in std::fs::read_dir(addons).unwrap() {
        let dir = entry.unwrap().path();
        let text = std::fs::read_to_string(dir.join("metadata.yaml")).unwrap();
        let (meta, _) = addonctl::model::AddonMeta::parse(&text).unwrap();
        entries.push(serde_json::json!({
            "name": meta.name, "versions": [meta.version.raw()], "description": meta.description,
        }));
    }
    let files = vec![
        (
            "Chart.yaml".to_owned(),
            b"apiVersion: v2\nname: kubevela-addon-catalog\nversion: 1.0.0\n".to_vec(),
        ),
        (
            "catalog.json".to_owned(),
            serde_json::to_vec(&serde_json::json!({ "addons": entries })).unwrap(),
        ),
    ];
    let tgz = work.join("kubevela-addon-catalog-1.0.0.tgz");
    std::fs::write(
        &tgz,
        addonctl::source::archive::write_tgz(Some("kubevela-addon-catalog"), &files).unwrap(),
    )
    .unwrap();
    push(&tgz, "catalog");
}

/// The manifest digest of `repository:tag` on the anonymous registry.
fn oci_digest(registry: &str, repository: &str, tag: &str) -> String {
    run_ok(
        std::process::Command::new("curl")
            .args(["-sfI", "-H"])
            .arg(format!(
                "accept: {}",
                addonctl::source::oci::client::MANIFEST_ACCEPT
            ))
            .arg(format!("http://{registry}/v2/{repository}/manifests/{tag}")),
    )
    .lines()
    .find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.eq_ignore_ascii_case("docker-content-digest")
            .then(|| value.trim().to_owned())
    })
    .unwrap()
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1000.0)
}

#[tokio::main]
async fn main() {
    let runs: usize = std::env::var("ADDONCTL_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(5);
    let files = many_addons(ADDONS, "");
    let work = tempfile::tempdir().unwrap();
    let registry_dir = work.path().join("registry");
    write_registry(&registry_dir, &files);

    // GitHub, Gitee and GitLab: one fake serving `acme/addons` with the registry under `addons/`.
    let forge = Forge::start(Repo::new("acme", "addons", many_addons(ADDONS, "addons"))).await;
    let forge_requests = || forge.requests();
    let github = Source {
        name: "GitHub (fake)",
        open: Box::new(|cache| {
            let mut options = GithubOptions::new("acme", "addons");
            options.api_base = Some(forge.url.clone());
            options.path = "addons".into();
            options.cache = cache;
            Box::new(GithubReader::new(options, "github").unwrap())
        }),
        requests: Box::new(forge_requests),
    };
    let gitee = Source {
        name: "Gitee (fake)",
        open: Box::new(|cache| {
            let mut options = GiteeOptions::new(format!("{}/api/v5", forge.url), "acme", "addons");
            options.path = "addons".into();
            options.http = quick_http();
            options.cache = cache;
            Box::new(GiteeReader::new(options, "gitee").unwrap())
        }),
        requests: Box::new(forge_requests),
    };
    let gitlab = Source {
        name: "GitLab (fake)",
        open: Box::new(|cache| {
            let mut options = GitlabOptions::new(format!("{}/api/v4", forge.url), "acme/addons");
            options.path = "addons".into();
            options.http = quick_http();
            options.cache = cache;
            Box::new(GitlabReader::new(options, "gitlab").unwrap())
        }),
        requests: Box::new(forge_requests),
    };

    // Helm: the registry packaged and indexed by addonctl, on a static server with ETags.
    let charts = work.path().join("charts");
    addonctl::publish::package(&registry_dir, &charts, &Renderer::new())
        .await
        .unwrap();
    addonctl::publish::index(&charts, "", None).unwrap();
    let helm_server = TestServer::builder().start();
    for entry in std::fs::read_dir(&charts).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        helm_server.put(&format!("/charts/{name}"), std::fs::read(&path).unwrap());
    }
    let helm_url = format!("{}/charts/", helm_server.url);
    let helm = Source {
        name: "Helm (static HTTP)",
        open: Box::new(|cache| {
            Box::new(HelmReader::new("helm", &helm_url, quick_http(), &cache).unwrap())
        }),
        requests: Box::new(|| helm_server.requests()),
    };

    // S3: moto (anonymous, path style) and s3s-fs (signed).
    let moto = s3_support::moto();
    s3_support::upload_to_moto("bench", &files).await;
    let moto_options = s3_support::options(moto, "bench", None);
    let (moto_client, moto_counter) = s3_support::client(&moto_options, false);
    let moto_source = Source {
        name: "S3 (moto, anonymous)",
        open: Box::new(|cache| {
            Box::new(
                S3Reader::new(moto_client.clone(), "bench", "", "s3").with_cache(&cache, &moto.url),
            )
        }),
        requests: Box::new(|| moto_counter.get()),
    };
    s3_support::write_to_s3s("bench", &files);
    let s3s = s3_support::s3s_fs();
    let s3s_options = s3_support::options(
        s3s,
        "bench",
        Some((s3_support::ACCESS_KEY, s3_support::SECRET_KEY)),
    );
    let (s3s_client, s3s_counter) = s3_support::client(&s3s_options, false);
    let s3s_source = Source {
        name: "S3 (s3s-fs, signed)",
        open: Box::new(|cache| {
            Box::new(
                S3Reader::new(s3s_client.clone(), "bench", "", "s3").with_cache(&cache, &s3s.url),
            )
        }),
        requests: Box::new(|| s3s_counter.get()),
    };

    // git: a bare repository served by lighttpd + git http-backend.
    let git_root = work.path().join("git");
    let checkout = git_root.join("work");
    write_registry(&checkout, &files);
    git_server::git(&checkout, &["init", "-q"]);
    git_server::git(&checkout, &["add", "-A"]);
    git_server::git(&checkout, &["commit", "-q", "-m", "registry"]);
    git_server::git(
        &git_root,
        &["clone", "-q", "--bare", "work", "registry.git"],
    );
    let (git_server, git_base) = git_server::start_server(&git_root);
    let access_log = git_root.join("lighttpd/access.log");
    let git_url = format!("{git_base}/registry.git");
    let git = Source {
        name: "git (lighttpd smart HTTP)",
        open: Box::new(|cache| {
            Box::new(
                addonctl::source::git::GitReader::new(
                    "git",
                    &git_url,
                    addonctl::source::git::GitOptions::default(),
                    &cache,
                )
                .unwrap(),
            )
        }),
        requests: Box::new(|| {
            std::fs::read_to_string(&access_log).map_or(0, |log| log.lines().count() as u64)
        }),
    };

    // git over ssh: the same repository served by sshd (git-upload-pack), a key file and the
    // server's host key in a known_hosts file; sessions counted in the wrapper's log.
    let ssh_dir = git_root.join("ssh");
    std::fs::create_dir_all(&ssh_dir).unwrap();
    let ssh_key = ssh_dir.join("id_client");
    ssh_server::keygen(&ssh_key, "");
    let authorized = ssh_dir.join("authorized_keys");
    std::fs::copy(ssh_server::public_of(&ssh_key), &authorized).unwrap();
    let ssh_state = ssh_dir.join("sshd");
    let (ssh_server, ssh_base) = ssh_server::start_sshd(&git_root, &ssh_state, &authorized);
    let ssh_log = ssh_state.join("access.log");
    let ssh_url = format!("{ssh_base}/registry.git");
    let ssh_options = addonctl::source::git::GitOptions {
        ssh_key: Some(ssh_key.clone()),
        known_hosts: Some(ssh_state.join("known_hosts")),
        ..addonctl::source::git::GitOptions::default()
    };
    let git_ssh = Source {
        name: "git (sshd, git-upload-pack)",
        open: Box::new(|cache| {
            Box::new(
                addonctl::source::git::GitReader::new("git", &ssh_url, ssh_options.clone(), &cache)
                    .unwrap(),
            )
        }),
        requests: Box::new(|| {
            std::fs::read_to_string(&ssh_log).map_or(0, |log| log.lines().count() as u64)
        }),
    };

    // OCI: Debian's docker-registry, every addon pushed by helm; the catalog chart under one
    // prefix, none under the other; `addon-042` signed for the verifying reader.
    let oci_dir = work.path().join("oci");
    let oci = start_oci_registry(&oci_dir);
    push_oci(&oci, &charts, &registry_dir, work.path());
    let keys = work.path().join("keys");
    std::fs::create_dir_all(&keys).unwrap();
    let signer = support::root().join("scripts/sources/cosign-sign.py");
    let (private, public) = (keys.join("cosign.key"), keys.join("cosign.pub"));
    run_ok(
        std::process::Command::new("python3")
            .arg(&signer)
            .arg("keygen")
            .args([&private, &public]),
    );
    for prefix in ["catalog", "plain"] {
        let repository = format!("{prefix}/{ADDON}");
        let digest = oci_digest(&oci, &repository, "1.0.42");
        run_ok(
            std::process::Command::new("python3")
                .arg(&signer)
                .args([
                    "sign",
                    "--registry",
                    &oci,
                    "--repository",
                    &repository,
                    "--digest",
                    &digest,
                    "--key",
                ])
                .arg(&private),
        );
    }
    let last_oci: std::sync::Mutex<Option<OciReader>> = std::sync::Mutex::new(None);
    let oci_requests = || {
        last_oci
            .lock()
            .unwrap()
            .as_ref()
            .map_or(0, |r| r.http().request_count())
    };
    let open_oci = |prefix: &str, cache: &CacheOptions, verify: bool| -> Box<dyn AsyncReader> {
        let policy = verify.then(|| {
            let pem = std::fs::read_to_string(&public).unwrap();
            let key = p256::ecdsa::VerifyingKey::from_public_key_pem(pem.trim()).unwrap();
            std::sync::Arc::new(Policy::new(
                Mode::Enforce,
                vec![("cosign.pub".into(), key)],
                Vec::new(),
            ))
        });
        let reader = OciReader::new(
            "oci",
            &format!("oci://{oci}/{prefix}"),
            OciOptions {
                http: quick_http(),
                login: Login::Anonymous,
                plain_http: Some("true".into()),
                policy,
            },
            cache,
        )
        .unwrap();
        *last_oci.lock().unwrap() = Some(reader.clone());
        Box::new(reader)
    };
    let oci_catalog = Source {
        name: "OCI (docker-registry, catalog chart)",
        open: Box::new(|cache| open_oci("catalog", &cache, false)),
        requests: Box::new(oci_requests),
    };
    let oci_plain = Source {
        name: "OCI (docker-registry, /v2/_catalog)",
        open: Box::new(|cache| open_oci("plain", &cache, false)),
        requests: Box::new(oci_requests),
    };
    let oci_verified = Source {
        name: "OCI (catalog chart, cosign enforce)",
        open: Box::new(|cache| open_oci("catalog", &cache, true)),
        requests: Box::new(oci_requests),
    };

    let local = Source {
        name: "local directory",
        open: Box::new(|_| Box::new(LocalReader::new(&registry_dir).unwrap())),
        requests: Box::new(|| 0),
    };

    let sources = [
        &github,
        &gitee,
        &gitlab,
        &helm,
        &moto_source,
        &s3s_source,
        &git,
        &git_ssh,
        &oci_catalog,
        &oci_plain,
        &oci_verified,
        &local,
    ];
    // `ADDONCTL_BENCH_SOURCES=oci,helm` keeps the sources whose names contain one of the words.
    let only: Vec<String> = std::env::var("ADDONCTL_BENCH_SOURCES")
        .map(|v| v.split(',').map(|w| w.trim().to_lowercase()).collect())
        .unwrap_or_default();
    let sources: Vec<&Source> = sources
        .into_iter()
        .filter(|s| {
            only.is_empty()
                || only
                    .iter()
                    .any(|w| s.name.to_lowercase().contains(w.as_str()))
        })
        .collect();
    println!(
        "registry of {ADDONS} addons; loading `{ADDON}`; wall times are medians of {runs} runs"
    );
    println!();
    println!(
        "| source | requests: list | requests: enable cold | requests: enable warm | list ms | enable cold ms | enable warm ms |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for source in sources {
        let f = run(source, runs).await;
        println!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            source.name,
            f.list,
            f.cold,
            f.warm,
            ms(f.list_time),
            ms(f.cold_time),
            ms(f.warm_time)
        );
    }

    // Stop what was started, by PID.
    drop(git_server);
    drop(ssh_server);
    stop_script_server("oci-registry.sh", &oci_dir);
    for (script, name) in [("moto.sh", "moto"), ("s3s-fs.sh", "s3s-fs")] {
        let dir = support::root()
            .join("target/sources-env")
            .join(format!("{name}-{}", std::process::id()));
        stop_script_server(script, &dir);
    }
}
