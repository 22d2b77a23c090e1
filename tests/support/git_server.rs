//! Git repositories for the git reader tests, served over smart HTTP by lighttpd +
//! `git http-backend` (`scripts/sources/lighttpd-git.sh`, started once per test run) and over
//! `file://`.
//!
//! The fixture repository (`fixtures.git`) holds `tests/fixtures/registry` at the root of branch
//! `main`, with history:
//! - tag `v0.0.9`: the fixture addons, but `minimal` at version `0.0.9`;
//! - tag `v1.0.0` (= `main`): the fixture addons as they are;
//! - branch `dev`: `main` plus an addon `dev-only` (version `0.5.0`).
//!
//! `nested.git` holds the fixture addons under `catalog/addons/`, plus a symbolic link.
//!
//! The server runs in the script's `serve` mode with our pipe as its standard input: when the
//! test process exits the pipe closes and the script stops lighttpd by its PID. If it cannot
//! start, every test that needs it fails with the script's output.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};

use crate::support::{fixture_registry, root};

/// The repositories and the server.
pub struct GitFixtures {
    /// The directory holding the bare repositories.
    pub root: PathBuf,
    /// `http://127.0.0.1:PORT/git` (repositories are under it).
    pub http_base: String,
    _server: Mutex<Child>,
}

impl GitFixtures {
    /// Built and started once per test run.
    pub fn get() -> &'static GitFixtures {
        static FIXTURES: OnceLock<GitFixtures> = OnceLock::new();
        FIXTURES.get_or_init(|| {
            let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
            remove_stale_runs(&base);
            let root = base.join(format!("git-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&root);
            std::fs::create_dir_all(&root).expect("mkdir");
            build_fixture_repositories(&root);
            let (server, http_base) = start_server(&root);
            GitFixtures {
                root,
                http_base,
                _server: Mutex::new(server),
            }
        })
    }

    /// The HTTP URL of a repository (`fixtures.git`, `nested.git`).
    pub fn http_url(&self, repository: &str) -> String {
        format!("{}/{repository}", self.http_base)
    }

    /// The `file://` URL of a repository.
    pub fn file_url(&self, repository: &str) -> String {
        format!("file://{}", self.root.join(repository).display())
    }
}

/// Removes the repositories of earlier test runs whose process is gone.
fn remove_stale_runs(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix("git-") else {
            continue;
        };
        if !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Runs git with a fixed identity, failing the test on error.
pub fn git(dir: &Path, args: &[&str]) {
    let output = Command::new("git")
        .args([
            "-c",
            "user.name=addonctl tests",
            "-c",
            "user.email=tests@addonctl.invalid",
        ])
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "tag.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("run git");
    assert!(
        output.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

fn build_fixture_repositories(root: &Path) {
    // fixtures.git
    let work = root.join("work-fixtures");
    copy_tree(&fixture_registry(), &work);
    let minimal = work.join("minimal/metadata.yaml");
    let current = std::fs::read_to_string(&minimal).expect("read");
    std::fs::write(&minimal, current.replace("0.1.0", "0.0.9")).expect("write");
    git(&work, &["init", "-q"]);
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "old minimal"]);
    git(&work, &["tag", "-a", "v0.0.9", "-m", "v0.0.9"]);
    std::fs::write(&minimal, current).expect("write");
    git(&work, &["commit", "-q", "-am", "minimal 0.1.0"]);
    git(&work, &["tag", "v1.0.0"]);
    git(&work, &["tag", "not-a-version"]);
    git(&work, &["checkout", "-q", "-b", "dev"]);
    std::fs::create_dir_all(work.join("dev-only")).expect("mkdir");
    std::fs::write(
        work.join("dev-only/metadata.yaml"),
        "name: dev-only\nversion: 0.5.0\n",
    )
    .expect("write");
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "dev addon"]);
    git(&work, &["checkout", "-q", "main"]);
    git(
        root,
        &["clone", "-q", "--bare", "work-fixtures", "fixtures.git"],
    );

    // nested.git
    let work = root.join("work-nested");
    copy_tree(&fixture_registry(), &work.join("catalog/addons"));
    std::os::unix::fs::symlink("/etc/passwd", work.join("catalog/addons/minimal/passwd"))
        .expect("symlink");
    git(&work, &["init", "-q"]);
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "nested"]);
    git(
        root,
        &["clone", "-q", "--bare", "work-nested", "nested.git"],
    );
}

/// Serves the bare repositories under `root` (state and logs in `root/lighttpd`, requests one a
/// line in `root/lighttpd/access.log`) until the returned child's standard input closes, that is
/// when it is dropped or this process exits; returns it and the base URL.
pub fn start_server(root: &Path) -> (Child, String) {
    start_server_with(root, &root.join("lighttpd"), &[])
}

/// Like [`start_server`] with its state in `state` and more arguments for the script (for
/// example `--tls-cert FILE --tls-key FILE`).
pub fn start_server_with(root: &Path, state: &Path, extra: &[&std::ffi::OsStr]) -> (Child, String) {
    std::fs::create_dir_all(state).expect("state directory");
    let log = state.join("lighttpd-git.log");
    let mut child = Command::new("bash")
        .arg(crate::support::root().join("scripts/sources/lighttpd-git.sh"))
        .args(["serve", "--root"])
        .arg(root)
        .arg("--state")
        .arg(state)
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).expect("log file"))
        .spawn()
        .expect("run scripts/sources/lighttpd-git.sh");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    let read = BufReader::new(stdout).read_line(&mut line);
    let started = line.starts_with("http://127.0.0.1:") || line.starts_with("https://127.0.0.1:");
    if read.is_err() || !started {
        let _ = child.kill();
        let _ = child.wait();
        panic!(
            "the git test server (lighttpd + git http-backend) did not start; run `bash {}` \
             by hand to see why:\n{}",
            root_script(),
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    }
    (child, line.trim().to_owned())
}

fn root_script() -> String {
    root()
        .join("scripts/sources/lighttpd-git.sh serve --root DIR --state DIR")
        .display()
        .to_string()
}
