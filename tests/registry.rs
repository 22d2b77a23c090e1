//! The registry store and `addonctl registry …`: the local file, and ConfigMap
//! `vela-addon-registry` + Secrets on a real API server, in KubeVela's shape.

use std::os::unix::fs::PermissionsExt;

use addonctl::model::secret::ExposeSecret;
use addonctl::registry::{self, OpenOptions, RegistryType, Store};
use addonctl::source::cache::CacheOptions;
use addonctl::source::catalog::Catalog;
use assert_cmd::Command;
use base64::Engine as _;
use predicates::prelude::*;
use serde_json::{json, Value};

use crate::support::conformance;
use crate::support::fixture_registry;
use crate::support::helm_repo::serve_fixture_repo;
use crate::support::http_server::TestServer;
use crate::support::k8s::{Kind, Sandbox};
use crate::support::root;

/// `addonctl` with the local registry file `file` and a private cache.
fn local_cli(file: &std::path::Path, cache: &std::path::Path) -> Command {
    let mut cmd = Command::cargo_bin("addonctl").unwrap();
    cmd.env("NO_COLOR", "1")
        .env("ADDONCTL_REGISTRY_FILE", file)
        .env("ADDONCTL_CACHE_DIR", cache)
        .env_remove("ADDONCTL_REGISTRY_TOKEN")
        .env_remove("ADDONCTL_REGISTRY_PASSWORD");
    cmd
}

#[tokio::test(flavor = "multi_thread")]
async fn registries_in_the_local_file_keep_credentials_apart_and_search_in_order() {
    let (server, url) =
        serve_fixture_repo(TestServer::builder().basic_auth("reader", "pa55-word-42")).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config/registries.json");
    let cache = dir.path().join("cache");
    let cli = || local_cli(&file, &cache);

    // Credentials in the URL are moved out of it; the registry is validated by listing it.
    let with_credentials = url.replacen("http://", "http://reader:pa55-word-42@", 1);
    cli()
        .args(["registry", "add", "first", "--type", "helm", "--endpoint"])
        .arg(&with_credentials)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "added registry `first` (3 addons)",
        ));
    // Wrong credentials: refused, nothing stored, the password not shown.
    cli()
        .args([
            "registry",
            "add",
            "wrong",
            "--type",
            "helm",
            "--username",
            "reader",
        ])
        .args(["--password", "not-the-password", "--endpoint", &url])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("refused access"))
        .stderr(predicate::str::contains("not-the-password").not());
    cli()
        .args([
            "registry",
            "add",
            "second",
            "--type",
            "git",
            "--no-validate",
        ])
        .args([
            "--endpoint",
            "file:///nonexistent/repo.git",
            "--ref",
            "main",
        ])
        .assert()
        .success();
    cli()
        .args([
            "registry",
            "add",
            "urgent",
            "--type",
            "local",
            "--priority",
            "10",
        ])
        .arg("--endpoint")
        .arg(fixture_registry())
        .assert()
        .success();
    cli()
        .args([
            "registry",
            "add",
            "first",
            "--type",
            "helm",
            "--endpoint",
            &url,
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("already exists"));
    cli()
        .args([
            "registry",
            "add",
            "builtin",
            "--type",
            "helm",
            "--endpoint",
            &url,
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("reserved"));

    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let stored: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(stored["registries"]["first"]["helm"]["url"], url.as_str());
    assert!(!stored["registries"].to_string().contains("pa55"), "{text}");
    assert_eq!(stored["credentials"]["first"]["password"], "pa55-word-42");

    let listing = cli()
        .args(["registry", "list"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let listing = String::from_utf8(listing).unwrap();
    let names: Vec<&str> = listing
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(names, ["urgent", "first", "second", "builtin"], "{listing}");
    cli()
        .args(["registry", "get", "first", "-o", "json"])
        .assert()
        .success()
        .stdout(predicate::str::contains("\"password\""))
        .stdout(predicate::str::contains("pa55").not());

    // The library opens them in the same order, the built-in registry last.
    let store = Store::File(file.clone());
    let registries = store.load().await.unwrap();
    let (catalog, failures) = Catalog::with_stored(
        &[],
        &registries,
        &OpenOptions {
            cache: CacheOptions {
                root: Some(cache.clone()),
                ..CacheOptions::default()
            },
            http: None,
        },
    )
    .unwrap();
    assert!(failures.is_empty(), "{failures:?}");
    let opened: Vec<&str> = catalog.readers().iter().map(|r| r.registry()).collect();
    assert_eq!(opened, ["urgent", "first", "second", "builtin"]);
    let helm = &catalog.readers()[1];
    conformance::run(helm.as_ref(), &fixture_registry()).await;

    // Update keeps the order of addition; remove forgets credentials too.
    cli()
        .args([
            "registry",
            "update",
            "second",
            "--priority",
            "20",
            "--no-validate",
        ])
        .assert()
        .success();
    let order: Vec<String> = store
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(order, ["second", "urgent", "first"]);
    cli()
        .args(["registry", "remove", "first"])
        .assert()
        .success();
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert!(stored["credentials"].get("first").is_none());
    cli()
        .args(["registry", "remove", "first"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("does not exist"));
    drop(server);
}

#[tokio::test(flavor = "multi_thread")]
async fn registry_files_are_added_with_their_url_from_the_environment() {
    let (_server, url) = serve_fixture_repo(TestServer::builder()).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("registries.json");
    let cache = dir.path().join("cache");
    let definition = root().join("registries/kubevela.yaml");
    local_cli(&file, &cache)
        .env_remove("KUBEVELA_ADDON_REGISTRY_URL")
        .args(["registry", "add", "--from"])
        .arg(&definition)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("KUBEVELA_ADDON_REGISTRY_URL"));
    local_cli(&file, &cache)
        .env("KUBEVELA_ADDON_REGISTRY_URL", url.trim_end_matches('/'))
        .args(["registry", "add", "--from"])
        .arg(&definition)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "added registry `kubevela` (3 addons)",
        ));
    // The experimental catalog: the `experimental/` directory of the same base URL, searched
    // after the official one.
    let experimental = TestServer::builder().start();
    let charts = crate::support::helm_repo::fixture_repo_dir().await;
    for entry in std::fs::read_dir(charts.path()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        experimental.put(
            &format!("/catalog/experimental/{name}"),
            std::fs::read(&path).unwrap(),
        );
    }
    local_cli(&file, &cache)
        .env(
            "KUBEVELA_ADDON_REGISTRY_URL",
            format!("{}/catalog", experimental.url),
        )
        .args(["registry", "add", "--from"])
        .arg(root().join("registries/kubevela-experimental.yaml"))
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "added registry `kubevela-experimental` (3 addons)",
        ));
    // addonctl's own addons from a git repository holding this project's `addons/`.
    let repository = dir.path().join("addonctl.git");
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@localhost", "-C"])
            .arg(&repository)
            .args(args)
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    std::fs::create_dir_all(&repository).unwrap();
    git(&["init", "-q", "-b", "main"]);
    copy_dir(&root().join("addons"), &repository.join("addons"));
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "addons"]);
    let builtin_count = std::fs::read_dir(root().join("addons"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().join("metadata.yaml").is_file())
        .count();
    local_cli(&file, &cache)
        .env(
            "ADDONCTL_REPOSITORY_URL",
            format!("file://{}", repository.display()),
        )
        .args(["registry", "add", "--from"])
        .arg(root().join("registries/builtin.yaml"))
        .args(["--ref", "main"])
        .assert()
        .success()
        .stdout(predicate::str::contains(format!(
            "added registry `addonctl-addons` ({builtin_count} addons)"
        )));
    local_cli(&file, &cache)
        .args(["registry", "list", "-o", "json"])
        .assert()
        .success()
        .stdout(predicate::str::contains("\"kubevela-experimental\""))
        .stdout(predicate::str::contains("\"addonctl-addons\""));

    for name in [
        "builtin.yaml",
        "kubevela.yaml",
        "kubevela-experimental.yaml",
    ] {
        let text = std::fs::read_to_string(root().join("registries").join(name)).unwrap();
        assert!(!text.contains("://"), "{name} names no host: {text}");
        let lookup = |_: &str| Some("https://x.invalid".to_owned());
        let parsed =
            registry::read_definitions_with(&root().join("registries").join(name), &lookup)
                .unwrap();
        assert_eq!(parsed.len(), 1, "{name}");
        if name.starts_with("kubevela") {
            assert_eq!(parsed[0].spec.kind, RegistryType::Helm);
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn registries_on_the_cluster_use_kubevelas_configmap_and_a_secret() {
    let sandbox = Sandbox::without_kubevela().await;
    let (_server, url) = serve_fixture_repo(TestServer::builder().bearer("tok-abcdef-123")).await;
    let cache = tempfile::tempdir().unwrap();
    let cli = || {
        let mut cmd = sandbox.cli();
        cmd.env("ADDONCTL_CACHE_DIR", cache.path())
            .env_remove("ADDONCTL_REGISTRY_FILE");
        cmd
    };
    cli()
        .args([
            "registry",
            "add",
            "charts",
            "--type",
            "helm",
            "--endpoint",
            &url,
        ])
        .env("ADDONCTL_REGISTRY_TOKEN", "tok-abcdef-123")
        .assert()
        .success()
        .stdout(predicate::str::contains("(3 addons)"));
    cli()
        .args([
            "registry",
            "add",
            "hub",
            "--type",
            "github",
            "--no-validate",
        ])
        .args([
            "--endpoint",
            "https://ghp_secret999@github.example.invalid/org/catalog",
        ])
        .args(["--path", "addons"])
        .assert()
        .success();

    let config_map = sandbox
        .get(Kind::CONFIG_MAP, "vela-addon-registry")
        .await
        .expect("ConfigMap vela-addon-registry");
    let text = config_map["data"]["registries"].as_str().unwrap();
    assert!(
        !text.contains("tok-abcdef") && !text.contains("ghp_secret999"),
        "{text}"
    );
    let map: Value = serde_json::from_str(text).unwrap();
    assert_eq!(map["charts"]["name"], "charts");
    assert_eq!(map["charts"]["helm"]["url"], url.as_str());
    assert_eq!(
        map["hub"]["git"]["url"],
        "https://github.example.invalid/org/catalog"
    );
    assert_eq!(map["hub"]["git"]["path"], "addons");
    assert_eq!(map["hub"]["git"]["tokenSecretRef"], "addon-registry-hub");
    let secret = sandbox
        .get(Kind::SECRET, "addon-registry-hub")
        .await
        .expect("Secret addon-registry-hub");
    let token = base64::engine::general_purpose::STANDARD
        .decode(secret["data"]["token"].as_str().unwrap())
        .unwrap();
    assert_eq!(token, b"ghp_secret999");

    // A registry `vela addon registry add` wrote (no `addonctl` object, inline password).
    let mut edited = map.clone();
    edited["vela-added"] = json!({
        "name": "vela-added",
        "helm": {"url": url, "username": "u", "password": "inline-pass"}
    });
    sandbox
        .apply_as(
            "kubectl",
            json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "vela-addon-registry", "namespace": sandbox.ns()},
                "data": {"registries": edited.to_string()},
            }),
        )
        .await;
    let store = Store::Cluster {
        cluster: Box::new(sandbox.api().clone()),
        namespace: sandbox.ns().to_owned(),
    };
    let loaded = store.load().await.unwrap();
    let names: Vec<&str> = loaded.iter().map(|r| r.spec.name.as_str()).collect();
    assert_eq!(names, ["vela-added", "charts", "hub"]);
    assert_eq!(
        loaded[0]
            .credentials
            .password
            .as_ref()
            .map(ExposeSecret::expose_secret),
        Some("inline-pass")
    );
    assert_eq!(
        loaded[1]
            .credentials
            .token
            .as_ref()
            .map(ExposeSecret::expose_secret),
        Some("tok-abcdef-123")
    );
    let reader = registry::open(&loaded[1], &OpenOptions::default()).unwrap();
    assert_eq!(reader.list_addons().await.unwrap().len(), 3);

    cli()
        .args(["registry", "list", "-o", "json"])
        .assert()
        .success()
        .stdout(predicate::str::contains("\"vela-added\""))
        .stdout(predicate::str::contains("inline-pass").not());
    cli().args(["registry", "remove", "hub"]).assert().success();
    assert!(sandbox
        .get(Kind::SECRET, "addon-registry-hub")
        .await
        .is_none());
}

#[test]
fn git_over_ssh_registries_store_the_key_path_and_never_the_key() {
    use crate::support::ssh_server::{SshFixtures, PASSPHRASE};
    let ssh = SshFixtures::get();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("registries.json");
    let cache = dir.path().join("cache");
    let cli = || {
        let mut cmd = local_cli(&file, &cache);
        cmd.env_remove("SSH_AUTH_SOCK")
            .env_remove("ADDONCTL_SSH_KEY_PASSPHRASE");
        cmd
    };
    let key_text = |path: &std::path::Path| -> Vec<String> {
        // The key's base64 lines (what must never be shown or stored).
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with("-----") && l.len() > 20)
            .map(str::to_owned)
            .collect()
    };
    let secrets: Vec<String> = key_text(&ssh.protected_key)
        .into_iter()
        .chain(key_text(&ssh.wrong_key))
        .collect();
    assert!(!secrets.is_empty());
    let assert_hidden = |what: &str, text: &str, passphrase_allowed: bool| {
        for line in &secrets {
            assert!(
                !text.contains(line.as_str()),
                "{what} holds the key:\n{text}"
            );
        }
        if !passphrase_allowed {
            assert!(
                !text.contains(PASSPHRASE),
                "{what} holds the passphrase:\n{text}"
            );
        }
    };

    let added = cli()
        .args(["registry", "add", "over-ssh", "--type", "git", "--endpoint"])
        .arg(ssh.url("fixtures.git"))
        .arg("--ssh-key")
        .arg(&ssh.protected_key)
        .args(["--ssh-key-passphrase", PASSPHRASE])
        .arg("--known-hosts")
        .arg(&ssh.known_hosts)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "added registry `over-ssh` (3 addons)",
        ))
        .get_output()
        .clone();
    assert_hidden(
        "`registry add`",
        &String::from_utf8_lossy(&added.stdout),
        false,
    );
    assert_hidden(
        "`registry add`",
        &String::from_utf8_lossy(&added.stderr),
        false,
    );

    // The registry keeps the key's path and the known_hosts file; the passphrase is a credential.
    let stored: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let entry = &stored["registries"]["over-ssh"];
    assert_eq!(
        entry["addonctl"]["options"]["sshKey"],
        json!(ssh.protected_key.display().to_string())
    );
    assert_eq!(
        entry["addonctl"]["options"]["knownHosts"],
        json!(ssh.known_hosts.display().to_string())
    );
    assert_hidden("the registry entry", &entry.to_string(), false);
    assert_eq!(
        stored["credentials"]["over-ssh"]["sshPassphrase"],
        json!(PASSPHRASE)
    );
    assert_hidden("the registry file", &stored.to_string(), true);

    for args in [
        vec!["registry", "get", "over-ssh", "-o", "json"],
        vec!["registry", "get", "over-ssh"],
        vec!["registry", "list"],
        vec!["registry", "list", "-o", "json"],
    ] {
        let output = cli().args(&args).assert().success().get_output().clone();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert_hidden(&args.join(" "), &text, false);
    }

    // A key the server does not accept: refused, named, not shown, nothing stored.
    let refused = cli()
        .args([
            "registry",
            "add",
            "wrong-key",
            "--type",
            "git",
            "--endpoint",
        ])
        .arg(ssh.url("fixtures.git"))
        .arg("--ssh-key")
        .arg(&ssh.wrong_key)
        .arg("--known-hosts")
        .arg(&ssh.known_hosts)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("refused access"))
        .stderr(predicate::str::contains("did not accept the ssh key"))
        .get_output()
        .clone();
    assert_hidden(
        "a refused key's error",
        &String::from_utf8_lossy(&refused.stderr),
        false,
    );
    let stored: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert!(stored["registries"].get("wrong-key").is_none());

    // ssh settings belong to git registries only.
    cli()
        .args([
            "registry",
            "add",
            "helm-ssh",
            "--type",
            "helm",
            "--no-validate",
        ])
        .args(["--endpoint", "http://127.0.0.1:9/charts/", "--ssh-key"])
        .arg(&ssh.key)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "`--ssh-key` is for registries of type `git`",
        ));
}

/// Copies a directory tree.
fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
