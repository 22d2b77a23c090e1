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
use addonctl::source::s3::S3Reader;
use addonctl::source::{AddonRef, AsyncReader};

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
        &local,
    ];
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
    for (script, name) in [("moto.sh", "moto"), ("s3s-fs.sh", "s3s-fs")] {
        let dir = support::root()
            .join("target/sources-env")
            .join(format!("{name}-{}", std::process::id()));
        stop_script_server(script, &dir);
    }
}
