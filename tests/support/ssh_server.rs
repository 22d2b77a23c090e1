//! Git over ssh for the git reader tests: OpenSSH's sshd on 127.0.0.1, run as the current user
//! by `scripts/sources/sshd-git.sh` with a host key of its own, serving the bare repositories of
//! [`GitFixtures`](crate::support::git_server::GitFixtures) through `git-upload-pack` only, to
//! the client keys made here.
//!
//! Keys (made with `ssh-keygen`, ed25519):
//! - `key`: authorized, no passphrase;
//! - `protected_key`: authorized, encrypted with [`PASSPHRASE`];
//! - `wrong_key`: not authorized.
//!
//! `known_hosts` lists the server's host key for `[127.0.0.1]:PORT` (as the script wrote it);
//! `other_known_hosts` lists another key for the same host (a changed key); `empty_known_hosts`
//! lists no host. Like the http server, sshd runs in the script's `serve` mode with our pipe as
//! its standard input, so it is stopped by its PID when the test process exits.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};

use crate::support::git_server::GitFixtures;
use crate::support::root;

/// The passphrase of `protected_key`.
pub const PASSPHRASE: &str = "correct horse battery staple 42";

/// The server and the client's files.
pub struct SshFixtures {
    /// `ssh://USER@127.0.0.1:PORT` (repositories are under it: `/fixtures.git`).
    pub base: String,
    /// The server's state directory (its log: `sshd.log`; commands served: `access.log`).
    pub state: PathBuf,
    /// An authorized private key without a passphrase.
    pub key: PathBuf,
    /// An authorized private key encrypted with [`PASSPHRASE`].
    pub protected_key: PathBuf,
    /// A private key the server does not accept.
    pub wrong_key: PathBuf,
    /// The server's host key, for `[127.0.0.1]:PORT`.
    pub known_hosts: PathBuf,
    /// Another host key for `[127.0.0.1]:PORT`.
    pub other_known_hosts: PathBuf,
    /// A known_hosts file that lists no host.
    pub empty_known_hosts: PathBuf,
    _server: Mutex<Child>,
}

impl SshFixtures {
    /// Made and started once per test run.
    pub fn get() -> &'static SshFixtures {
        static FIXTURES: OnceLock<SshFixtures> = OnceLock::new();
        FIXTURES.get_or_init(|| {
            let git = GitFixtures::get();
            let dir = git.root.join("ssh");
            std::fs::create_dir_all(&dir).expect("mkdir");
            let key = dir.join("id_client");
            let protected_key = dir.join("id_protected");
            let wrong_key = dir.join("id_wrong");
            keygen(&key, "");
            keygen(&protected_key, PASSPHRASE);
            keygen(&wrong_key, "");
            let authorized = dir.join("authorized_keys");
            let mut lines = String::new();
            for private in [&key, &protected_key] {
                lines.push_str(&std::fs::read_to_string(public_of(private)).expect("public key"));
            }
            std::fs::write(&authorized, lines).expect("authorized_keys");
            let state = dir.join("sshd");
            let (server, base) = start_sshd(&git.root, &state, &authorized);

            let port = base.rsplit(':').next().expect("port");
            let other_host_key = dir.join("other_host_key");
            keygen(&other_host_key, "");
            let other_known_hosts = dir.join("other_known_hosts");
            std::fs::write(
                &other_known_hosts,
                format!(
                    "[127.0.0.1]:{port} {}",
                    std::fs::read_to_string(public_of(&other_host_key)).expect("public key")
                ),
            )
            .expect("known_hosts");
            let empty_known_hosts = dir.join("empty_known_hosts");
            std::fs::write(&empty_known_hosts, "# no host\n").expect("known_hosts");
            SshFixtures {
                base,
                known_hosts: state.join("known_hosts"),
                state,
                key,
                protected_key,
                wrong_key,
                other_known_hosts,
                empty_known_hosts,
                _server: Mutex::new(server),
            }
        })
    }

    /// The ssh URL of a repository (`fixtures.git`, `nested.git`).
    pub fn url(&self, repository: &str) -> String {
        format!("{}/{repository}", self.base)
    }

    /// How many ssh sessions ran a git command so far.
    pub fn sessions(&self) -> usize {
        std::fs::read_to_string(self.state.join("access.log")).map_or(0, |log| log.lines().count())
    }
}

/// `PATH.pub`.
pub fn public_of(private: &Path) -> PathBuf {
    let mut name = private.as_os_str().to_owned();
    name.push(".pub");
    PathBuf::from(name)
}

/// Makes an ed25519 key pair at `path` (and `path.pub`), replacing one that is there.
pub fn keygen(path: &Path, passphrase: &str) {
    let _ = std::fs::remove_file(path);
    let _ = std::fs::remove_file(public_of(path));
    let output = Command::new("ssh-keygen")
        .args([
            "-q",
            "-t",
            "ed25519",
            "-C",
            "addonctl tests",
            "-N",
            passphrase,
            "-f",
        ])
        .arg(path)
        .output()
        .expect("run ssh-keygen (is openssh-client installed?)");
    assert!(
        output.status.success(),
        "ssh-keygen failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Serves the bare repositories under `root` over ssh (state and logs in `state`) to the keys in
/// `authorized_keys`, until the returned child's standard input closes; returns it and the base
/// URL.
pub fn start_sshd(root: &Path, state: &Path, authorized_keys: &Path) -> (Child, String) {
    std::fs::create_dir_all(state).expect("state directory");
    let log = state.join("sshd-git.log");
    let script = root_dir().join("scripts/sources/sshd-git.sh");
    let mut child = Command::new("bash")
        .arg(&script)
        .args(["serve", "--root"])
        .arg(root)
        .arg("--state")
        .arg(state)
        .arg("--authorized-keys")
        .arg(authorized_keys)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).expect("log file"))
        .spawn()
        .expect("run scripts/sources/sshd-git.sh");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    let read = BufReader::new(stdout).read_line(&mut line);
    if read.is_err() || !line.starts_with("ssh://") {
        let _ = child.kill();
        let _ = child.wait();
        panic!(
            "the git test server (sshd) did not start; run `bash {} serve --root DIR --state DIR \
             --authorized-keys FILE` by hand to see why:\n{}\n{}",
            script.display(),
            std::fs::read_to_string(&log).unwrap_or_default(),
            std::fs::read_to_string(state.join("sshd.log")).unwrap_or_default()
        );
    }
    (child, line.trim().to_owned())
}

fn root_dir() -> PathBuf {
    root()
}
