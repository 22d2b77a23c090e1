//! The git reader against bare repositories served by lighttpd + `git http-backend`, by sshd
//! (`git-upload-pack` over ssh, key files, the ssh-agent, known_hosts) and over `file://` URLs.

use addonctl::source::cache::CacheOptions;
use addonctl::source::git::{GitOptions, GitReader};
use addonctl::source::{AddonRef, AsyncReader, Error};

use crate::support::conformance;
use crate::support::fixture_registry;
use crate::support::git_server::{git, GitFixtures};
use crate::support::helm_repo::fresh_cache;
use crate::support::http_server::TestCa;
use crate::support::ssh_server::{SshFixtures, PASSPHRASE};

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

/// A temporary directory holding `name`, a bare clone of the fixtures repository.
fn scratch_clone(name: &str) -> tempfile::TempDir {
    let scratch = tempfile::tempdir().unwrap();
    let fixtures = GitFixtures::get().root.join("fixtures.git");
    git(
        scratch.path(),
        &["clone", "-q", "--bare", fixtures.to_str().unwrap(), name],
    );
    scratch
}

#[tokio::test]
async fn the_cache_is_reused_and_serves_when_the_server_is_gone() {
    let (_guard, cache) = fresh_cache();
    // A repository of our own that we can take away.
    let scratch = scratch_clone("copy.git");
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

/// A reader of the fixture repository over ssh, with its own cache.
fn ssh_reader(options: GitOptions) -> (tempfile::TempDir, GitReader) {
    let ssh = SshFixtures::get();
    let (guard, cache) = fresh_cache();
    (guard, reader(&ssh.url("fixtures.git"), options, &cache))
}

fn ssh_options(key: &std::path::Path, known_hosts: &std::path::Path) -> GitOptions {
    GitOptions {
        ssh_key: Some(key.to_path_buf()),
        known_hosts: Some(known_hosts.to_path_buf()),
        ..GitOptions::default()
    }
}

/// The base64 body of a private key file (what must never be shown).
fn key_body(path: &std::path::Path) -> String {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect()
}

#[tokio::test]
async fn git_over_ssh_with_a_key_file_passes_the_conformance_suite() {
    let ssh = SshFixtures::get();
    let before = ssh.sessions();
    let (_cache, reader) = ssh_reader(ssh_options(&ssh.key, &ssh.known_hosts));
    conformance::run(&reader, &fixture_registry()).await;
    // Tags are versions over ssh too.
    let listing = reader.list_addons().await.unwrap();
    let minimal = listing.iter().find(|a| a.name == "minimal").unwrap();
    assert_eq!(minimal.versions, ["0.1.0", "0.0.9"]);
    assert!(ssh.sessions() > before, "the server served the fetch");
}

#[tokio::test]
async fn git_over_ssh_with_an_encrypted_key_needs_its_passphrase() {
    let ssh = SshFixtures::get();
    let (_cache, reader) = ssh_reader(GitOptions {
        ssh_passphrase: Some(PASSPHRASE.into()),
        ..ssh_options(&ssh.protected_key, &ssh.known_hosts)
    });
    assert_eq!(reader.list_addons().await.unwrap().len(), 3);

    for passphrase in [None, Some("not the passphrase".to_owned())] {
        let (_cache, reader) = ssh_reader(GitOptions {
            ssh_passphrase: passphrase.clone().map(Into::into),
            ..ssh_options(&ssh.protected_key, &ssh.known_hosts)
        });
        let err = reader.list_addons().await.unwrap_err();
        assert!(matches!(err, Error::Unauthorized { .. }), "{err}");
        let text = err.to_string();
        assert!(!text.contains(PASSPHRASE), "{text}");
        assert!(!text.contains("not the passphrase"), "{text}");
        assert!(!text.contains(&key_body(&ssh.protected_key)), "{text}");
    }
}

#[tokio::test]
async fn git_over_ssh_with_a_wrong_key_is_a_clear_auth_error_without_the_key() {
    let ssh = SshFixtures::get();
    let (_cache, reader) = ssh_reader(ssh_options(&ssh.wrong_key, &ssh.known_hosts));
    let err = reader.list_addons().await.unwrap_err();
    assert!(matches!(err, Error::Unauthorized { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("did not accept the ssh key") && text.contains("id_wrong"),
        "names the key file: {text}"
    );
    assert!(text.contains("127.0.0.1"), "names the host: {text}");
    for key in [&ssh.wrong_key, &ssh.key] {
        let body = key_body(key);
        assert!(body.len() > 40);
        assert!(!text.contains(&body), "the key's content leaks: {text}");
        assert!(
            !text.contains(&body[..40]),
            "the key's content leaks: {text}"
        );
    }

    // A key file that is not there, and no key at all (no agent either).
    let (_cache, reader) = ssh_reader(ssh_options(
        &ssh.state.join("no-such-key"),
        &ssh.known_hosts,
    ));
    let err = reader.list_addons().await.unwrap_err();
    assert!(matches!(err, Error::Unauthorized { .. }), "{err}");
    assert!(err.to_string().contains("no-such-key"), "{err}");
}

#[tokio::test]
async fn git_over_ssh_refuses_an_unknown_or_changed_host_key() {
    let ssh = SshFixtures::get();
    let host = ssh
        .base
        .rsplit('@')
        .next()
        .unwrap()
        .replace("127.0.0.1:", "[127.0.0.1]:");
    let fingerprint = {
        let output = std::process::Command::new("ssh-keygen")
            .arg("-lf")
            .arg(ssh.state.join("host_ed25519.pub"))
            .output()
            .unwrap();
        String::from_utf8(output.stdout)
            .unwrap()
            .split_whitespace()
            .nth(1)
            .unwrap()
            .to_owned()
    };
    assert!(fingerprint.starts_with("SHA256:"), "{fingerprint}");

    // Unknown: the file lists no host; the error names the host, the fingerprint and the fix.
    let (_cache, reader) = ssh_reader(ssh_options(&ssh.key, &ssh.empty_known_hosts));
    let err = reader.list_addons().await.unwrap_err();
    assert!(matches!(err, Error::InvalidContent { .. }), "{err}");
    let text = err.to_string();
    for needle in [
        host.as_str(),
        fingerprint.as_str(),
        "is unknown",
        "empty_known_hosts",
        "ssh-keyscan",
        "--known-hosts",
        "--insecure-skip-tls",
    ] {
        assert!(text.contains(needle), "`{needle}` missing from: {text}");
    }

    // A known_hosts file that does not exist is no better.
    let (_cache, reader) = ssh_reader(ssh_options(&ssh.key, &ssh.state.join("missing_hosts")));
    let err = reader.list_addons().await.unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");

    // Changed: another key for the same host.
    let (_cache, reader) = ssh_reader(ssh_options(&ssh.key, &ssh.other_known_hosts));
    let err = reader.list_addons().await.unwrap_err();
    assert!(matches!(err, Error::InvalidContent { .. }), "{err}");
    let text = err.to_string();
    for needle in [
        host.as_str(),
        fingerprint.as_str(),
        "CHANGED",
        "ssh-keygen -R",
    ] {
        assert!(text.contains(needle), "`{needle}` missing from: {text}");
    }

    // insecure-skip-TLS skips the check (test servers only).
    let (_cache, reader) = ssh_reader(GitOptions {
        insecure_skip_tls: true,
        ..ssh_options(&ssh.key, &ssh.empty_known_hosts)
    });
    assert_eq!(reader.list_addons().await.unwrap().len(), 3);
}

#[tokio::test]
async fn git_over_ssh_uses_the_ssh_agent_without_a_key_file() {
    let ssh = SshFixtures::get();
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("agent.sock");
    let mut agent = std::process::Command::new("ssh-agent")
        .arg("-D")
        .arg("-a")
        .arg(&socket)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("run ssh-agent");
    let stop_agent = scopeguard(move || {
        let _ = agent.kill();
        let _ = agent.wait();
    });
    for _ in 0..100 {
        if socket.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let added = std::process::Command::new("ssh-add")
        .arg(&ssh.key)
        .env("SSH_AUTH_SOCK", &socket)
        .output()
        .unwrap();
    assert!(added.status.success(), "{added:?}");
    // The reader reads SSH_AUTH_SOCK; run it in a child process of ours so that the test's
    // environment is left alone: the addonctl binary, with a registry file.
    let registries = dir.path().join("registries.json");
    let cli = |agent: Option<&std::path::Path>| {
        let mut cmd = assert_cmd::Command::cargo_bin("addonctl").unwrap();
        cmd.env("NO_COLOR", "1")
            .env("ADDONCTL_REGISTRY_FILE", &registries)
            .env("ADDONCTL_CACHE_DIR", dir.path().join("cache"))
            .env_remove("SSH_AUTH_SOCK");
        if let Some(agent) = agent {
            cmd.env("SSH_AUTH_SOCK", agent);
        }
        cmd
    };
    let add = |name: &str, agent: Option<&std::path::Path>| {
        cli(agent)
            .args(["registry", "add", name, "--type", "git", "--endpoint"])
            .arg(ssh.url("fixtures.git"))
            .arg("--known-hosts")
            .arg(&ssh.known_hosts)
            .output()
            .unwrap()
    };
    let without = add("no-agent", None);
    assert!(!without.status.success());
    let stderr = String::from_utf8_lossy(&without.stderr);
    assert!(
        stderr.contains("--ssh-key") && stderr.contains("SSH_AUTH_SOCK"),
        "{stderr}"
    );
    let with = add("agent", Some(&socket));
    assert!(
        with.status.success(),
        "{}",
        String::from_utf8_lossy(&with.stderr)
    );
    assert!(String::from_utf8_lossy(&with.stdout).contains("(3 addons)"));
    drop(stop_agent);
}

/// Runs `f` when dropped.
fn scopeguard(f: impl FnOnce()) -> impl Drop {
    struct Guard<F: FnOnce()>(Option<F>);
    impl<F: FnOnce()> Drop for Guard<F> {
        fn drop(&mut self) {
            if let Some(f) = self.0.take() {
                f();
            }
        }
    }
    Guard(Some(f))
}

#[tokio::test]
async fn a_warm_run_over_the_cache_costs_one_request_and_refresh_fetches() {
    let (_guard, cache) = fresh_cache();
    // A repository of our own that we can change.
    let scratch = scratch_clone("warm.git");
    let state = scratch.path().join("lighttpd");
    let (_server, base) =
        crate::support::git_server::start_server_with(scratch.path(), &state, &[]);
    let url = format!("{base}/warm.git");
    let requests =
        || std::fs::read_to_string(state.join("access.log")).map_or(0, |l| l.lines().count());
    let count = |options: &CacheOptions| {
        let before = requests();
        let reader = reader(&url, GitOptions::default(), options);
        async move {
            let listing = reader.list_addons().await.unwrap();
            (requests() - before, listing)
        }
    };

    let (cold, listing) = count(&cache).await;
    assert_eq!(listing.len(), 3);
    assert!(cold >= 2, "a cold run lists and fetches: {cold} requests");
    let (warm, listing) = count(&cache).await;
    assert_eq!(listing.len(), 3);
    assert_eq!(warm, 1, "a warm run only lists the references");
    let refreshing = CacheOptions {
        refresh: true,
        ..cache.clone()
    };
    let (refreshed, _) = count(&refreshing).await;
    assert!(refreshed >= 2, "--refresh fetches: {refreshed} requests");

    // A new commit on the branch is fetched (and read) by the next run.
    let work = scratch.path().join("work");
    git(
        scratch.path(),
        &["clone", "-q", "-b", "main", "warm.git", "work"],
    );
    std::fs::create_dir_all(work.join("newer")).unwrap();
    std::fs::write(
        work.join("newer/metadata.yaml"),
        "name: newer\nversion: 1.0.0\n",
    )
    .unwrap();
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "newer"]);
    git(&work, &["push", "-q", "origin", "main"]);
    let (changed, listing) = count(&cache).await;
    assert!(
        changed >= 2,
        "a changed branch is fetched: {changed} requests"
    );
    assert!(listing.iter().any(|a| a.name == "newer"));
    let (warm, _) = count(&cache).await;
    assert_eq!(warm, 1);
}

#[tokio::test]
async fn a_warm_run_over_ssh_costs_one_session() {
    let fixtures = GitFixtures::get();
    let ssh = SshFixtures::get();
    // A repository only this test reads, so that its sessions can be counted in the server's log.
    git(
        &fixtures.root,
        &["clone", "-q", "--bare", "fixtures.git", "warm-ssh.git"],
    );
    let sessions = || {
        std::fs::read_to_string(ssh.state.join("access.log")).map_or(0, |log| {
            log.lines().filter(|l| l.contains("warm-ssh.git")).count()
        })
    };
    let (_guard, cache) = fresh_cache();
    let url = ssh.url("warm-ssh.git");
    let options = ssh_options(&ssh.key, &ssh.known_hosts);
    let cold = reader(&url, options.clone(), &cache);
    assert_eq!(cold.list_addons().await.unwrap().len(), 3);
    let after_cold = sessions();
    assert!(
        after_cold >= 2,
        "a cold run lists and fetches: {after_cold} sessions"
    );
    let warm = reader(&url, options.clone(), &cache);
    assert_eq!(warm.list_addons().await.unwrap().len(), 3);
    assert_eq!(
        sessions() - after_cold,
        1,
        "a warm run only lists the references"
    );
    let refreshing = CacheOptions {
        refresh: true,
        ..cache.clone()
    };
    let refreshed = reader(&url, options, &refreshing);
    assert_eq!(refreshed.list_addons().await.unwrap().len(), 3);
    assert!(sessions() - after_cold >= 3, "--refresh fetches");
}
