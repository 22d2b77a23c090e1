//! The conventions users bring from helm and kubectl: shell completion, `version`, examples in
//! help with the global options listed once, aliases, and confirmation only on a terminal.

use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::{json, Value};

use crate::support::fixture_registry;
use crate::support::k8s::{Env, Kind, Sandbox};

/// The binary without a kubeconfig anywhere (`HOME` is an empty directory).
fn addonctl(home: &Path) -> Command {
    let mut cmd = Command::cargo_bin("addonctl").unwrap();
    cmd.env_remove("KUBECONFIG")
        .env_remove("KUBEVELA_SYSTEM_NAMESPACE")
        .env_remove("ADDONCTL_CLUSTER_TIMEOUT")
        .env("HOME", home)
        .env("NO_COLOR", "1");
    cmd
}

fn stdout(cmd: &mut Command) -> String {
    String::from_utf8(cmd.assert().success().get_output().stdout.clone()).unwrap()
}

/// What bash completes for `words` (the last one being completed), with the script loaded as
/// users load it.
fn bash_completes(words: &str) -> String {
    let bin = assert_cmd::cargo::cargo_bin("addonctl");
    let script = format!(
        "source <('{}' completion bash) || exit 3\n\
         COMP_WORDS=({words}); COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 )); COMP_LINE='{words}'; COMP_POINT=${{#COMP_LINE}}\n\
         _addonctl addonctl \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        bin.display()
    );
    let out = std::process::Command::new("bash")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn cli_completion_scripts_load_in_bash_and_complete_commands_and_options() {
    let bin = assert_cmd::cargo::cargo_bin("addonctl");
    let loaded = std::process::Command::new("bash")
        .args([
            "-c",
            &format!(
                "source <('{}' completion bash) && complete -p addonctl",
                bin.display()
            ),
        ])
        .output()
        .unwrap();
    assert!(loaded.status.success(), "{loaded:?}");
    assert!(String::from_utf8_lossy(&loaded.stdout).contains("-F _addonctl"));

    let commands = bash_completes("addonctl en");
    assert_eq!(
        commands.lines().collect::<Vec<_>>(),
        ["enable"],
        "{commands}"
    );
    let aliases = bash_completes("addonctl inst");
    assert!(aliases.lines().any(|l| l == "install"), "{aliases}");
    // Global options are completed after a command, where they are accepted.
    let options = bash_completes("addonctl enable --kube");
    assert!(options.lines().any(|l| l == "--kubeconfig"), "{options}");
    let nested = bash_completes("addonctl cluster detach --y");
    assert!(nested.lines().any(|l| l == "--yes"), "{nested}");
}

#[test]
fn cli_completion_scripts_for_every_shell_name_the_commands() {
    let home = tempfile::tempdir().unwrap();
    for (shell, marker) in [
        ("bash", "_addonctl()"),
        ("zsh", "#compdef addonctl"),
        ("fish", "complete -c addonctl"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let script = stdout(addonctl(home.path()).args(["completion", shell]));
        assert!(script.contains(marker), "{shell}: no `{marker}`");
        assert!(script.contains("detach"), "{shell}: no `detach`");
    }
    addonctl(home.path())
        .args(["completion", "tcsh"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("possible values: bash"));
}

/// What the function bash registers for `addonctl` offers for `words` (the binary first, the
/// word being completed last), as bash calls it.
fn bash_offers(words: &[&str], env: &[(&str, &str)]) -> Vec<String> {
    let bin = assert_cmd::cargo::cargo_bin("addonctl");
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let script = format!(
        "source <('{bin}' completion bash) || exit 3\n\
         function=$(complete -p addonctl | sed -E 's/.* -F ([^ ]+) .*/\\1/')\n\
         COMP_WORDS=('{bin}' {words}); COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))\n\
         COMP_LINE=\"${{COMP_WORDS[*]}}\"; COMP_POINT=${{#COMP_LINE}}\n\
         \"$function\" \"${{COMP_WORDS[0]}}\" \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"\n\
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        bin = bin.display(),
        words = quoted.join(" "),
    );
    let mut command = std::process::Command::new("bash");
    command
        .args(["-c", &script])
        .env_remove("KUBECONFIG")
        .env_remove("KUBEVELA_SYSTEM_NAMESPACE");
    for (key, value) in env {
        command.env(key, value);
    }
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn cli_completion_offers_addon_names_where_a_command_takes_an_addon() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path().to_str().unwrap();
    let env = [("HOME", home)];
    let all = bash_offers(&["enable", ""], &env);
    for builtin in ["strongbox-dashboard", "strongbox-operator", "node-pulse"] {
        assert!(all.iter().any(|n| n == builtin), "{builtin}: {all:?}");
    }
    assert_eq!(
        bash_offers(&["status", "strongbox-o"], &env),
        ["strongbox-operator"]
    );
    // Option values are skipped; the alias and the two-word commands are known.
    assert_eq!(
        bash_offers(
            &[
                "install",
                "-f",
                "values.yaml",
                "--version",
                "1.0.0",
                "strongbox-d"
            ],
            &env
        ),
        ["strongbox-dashboard"]
    );
    assert_eq!(
        bash_offers(&["get", "values", "strongbox-d"], &env),
        ["strongbox-dashboard"]
    );
    // A `--registry-dir` on the line is searched.
    let fixture = fixture_registry();
    let fixture = fixture.to_str().unwrap();
    let with_dir = bash_offers(&["--registry-dir", fixture, "render", "ful"], &env);
    assert_eq!(with_dir, ["full"], "{with_dir:?}");
    // Only the first argument is an addon; `key=value` arguments follow it.
    assert!(bash_offers(&["enable", "strongbox-operator", "str"], &env).is_empty());
    // `--clusters` without a cluster: the control plane's own name.
    assert_eq!(
        bash_offers(&["enable", "x", "--clusters", ""], &env),
        ["local"]
    );
    assert_eq!(
        bash_offers(&["enable", "x", "--clusters", "m1,"], &env),
        ["m1,local"]
    );
    // Commands and options still come from the static script.
    assert_eq!(bash_offers(&["wai"], &env), ["wait"]);
    assert!(bash_offers(&["enable", "--kubec"], &env).contains(&"--kubeconfig".to_owned()));

    // The hidden command itself: names one a line, nothing on stderr, exit 0, even when the
    // kubeconfig points nowhere.
    let out = addonctl(Path::new(home))
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .args(["__complete", "addons"])
        .timeout(std::time::Duration::from_secs(20))
        .assert()
        .success()
        .stderr("");
    let names = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(names.lines().any(|l| l == "strongbox-operator"), "{names}");
    // It is not offered as a command.
    assert!(bash_offers(&["__"], &env).is_empty());
}

#[tokio::test]
async fn cli_completion_offers_the_joined_clusters_of_the_control_plane() {
    let sb = Sandbox::with_kubevela().await;
    sb.join("completion-m1", Env::get().managed(), &[]).await;
    let kubeconfig = sb.cluster.kubeconfig.clone();
    let kubeconfig = kubeconfig.to_str().unwrap();
    let home = tempfile::tempdir().unwrap();
    let env = [("HOME", home.path().to_str().unwrap())];
    let global = ["--kubeconfig", kubeconfig, "--system-namespace", sb.ns()];
    let words = |rest: &[&'static str]| -> Vec<String> {
        let mut words: Vec<&str> = global.to_vec();
        words.extend_from_slice(rest);
        bash_offers(&words, &env)
    };
    assert_eq!(
        words(&["cluster", "detach", ""]),
        ["completion-m1", "local"]
    );
    assert_eq!(words(&["cluster", "labels", "comp"]), ["completion-m1"]);
    assert_eq!(
        words(&["enable", "x", "--clusters", "local,c"]),
        ["local,completion-m1"]
    );
    // Another system namespace has no such cluster.
    let other = bash_offers(
        &["--kubeconfig", kubeconfig, "cluster", "detach", "comp"],
        &env,
    );
    assert!(other.is_empty(), "{other:?}");
}

#[test]
fn cli_version_without_a_cluster_prints_the_client_and_a_note() {
    let home = tempfile::tempdir().unwrap();
    let out = addonctl(home.path())
        .args(["version", "-o", "json"])
        .assert()
        .success()
        .stderr(predicate::str::contains("note: no server versions"))
        .stderr(predicate::str::contains("KUBECONFIG"));
    let version: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(version["client"]["version"], env!("CARGO_PKG_VERSION"));
    // build.rs gives the binary and this test the same commit (`git rev-parse`, 12 digits).
    let commit = version["client"]["gitCommit"].as_str().unwrap();
    assert_eq!(commit, env!("ADDONCTL_GIT_COMMIT"));
    let in_git = Path::new(env!("CARGO_MANIFEST_DIR")).join(".git").exists();
    if in_git && std::env::var_os("ADDONCTL_GIT_COMMIT").is_none() {
        assert!(
            commit.len() == 12 && commit.bytes().all(|b| b.is_ascii_hexdigit()),
            "{commit}"
        );
    }
    assert!(version.get("server").is_none(), "{version}");

    let text = stdout(addonctl(home.path()).arg("version"));
    assert_eq!(
        text,
        format!(
            "Client:     addonctl {} (commit {commit})\n",
            env!("CARGO_PKG_VERSION")
        )
    );
    let long = stdout(addonctl(home.path()).arg("--version"));
    assert!(long.contains(commit), "{long}");
}

#[test]
fn cli_version_gives_up_on_a_silent_server_within_the_request_timeout() {
    // A server that accepts connections and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let (kubeconfig, _) = Env::get().unreachable_kubeconfig(dir.path());
    let text = std::fs::read_to_string(&kubeconfig).unwrap();
    let silent: Value = serde_json::from_str(&text).unwrap();
    let mut silent = silent;
    silent["clusters"][0]["cluster"]["server"] = json!(format!("https://127.0.0.1:{port}"));
    std::fs::write(&kubeconfig, silent.to_string()).unwrap();
    let out = addonctl(dir.path())
        .args([
            "version",
            "-o",
            "json",
            "--request-timeout",
            "1",
            "--kubeconfig",
        ])
        .arg(&kubeconfig)
        .timeout(std::time::Duration::from_secs(20))
        .assert()
        .success()
        .stderr(predicate::str::contains("note: no server versions"));
    let version: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert!(version.get("server").is_none(), "{version}");
    drop(listener);
}

#[tokio::test]
async fn cli_version_reports_the_control_planes_kubernetes_and_kubevela_versions() {
    let sb = Sandbox::with_kubevela().await;
    let kubernetes = sb.api().kubernetes_version().await.unwrap();
    let version = |sb: &Sandbox| -> Value {
        let out = sb
            .cli()
            .args(["version", "-o", "json"])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        serde_json::from_slice(&out).unwrap()
    };
    let before = version(&sb);
    assert_eq!(before["server"]["kubernetesVersion"], kubernetes.as_str());
    assert_eq!(before["server"]["kubevelaVersion"], Value::Null);
    assert_eq!(before["client"]["version"], env!("CARGO_PKG_VERSION"));

    // KubeVela as its Helm chart installs it: its version is the vela-core image's tag.
    sb.apply_as(
        "test",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": sb.ns()}}),
    )
    .await;
    let labels = json!({"app.kubernetes.io/name": "vela-core"});
    sb.apply_as(
        "helm",
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "kubevela-vela-core", "labels": labels},
            "spec": {
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [
                        {"name": "kubevela", "image": "oamdev/vela-core:v1.9.7"},
                    ]},
                },
            },
        }),
    )
    .await;
    let after = version(&sb);
    assert_eq!(after["server"]["kubevelaVersion"], "v1.9.7", "{after}");

    let text = String::from_utf8(
        sb.cli()
            .arg("version")
            .assert()
            .success()
            .get_output()
            .stdout
            .clone(),
    )
    .unwrap();
    assert!(
        text.contains(&format!("Kubernetes: {kubernetes}\n")),
        "{text}"
    );
    assert!(text.contains("KubeVela:   v1.9.7\n"), "{text}");
}

#[test]
fn cli_help_shows_examples_and_leaves_the_global_options_to_the_top_level() {
    let home = tempfile::tempdir().unwrap();
    let commands: &[&[&str]] = &[
        &["render"],
        &["lint"],
        &["init"],
        &["enable"],
        &["disable"],
        &["status"],
        &["list"],
        &["upgrade"],
        &["history"],
        &["rollback"],
        &["diff"],
        &["package"],
        &["index"],
        &["registry"],
        &["registry", "add"],
        &["registry", "update"],
        &["registry", "list"],
        &["registry", "get"],
        &["registry", "remove"],
        &["cluster"],
        &["cluster", "join"],
        &["cluster", "list"],
        &["cluster", "detach"],
        &["cluster", "labels"],
        &["rollout"],
        &["rollout", "run"],
        &["rbac"],
        &["controller"],
        &["controller", "manifests"],
        &["completion"],
        &["man"],
        &["version"],
    ];
    for command in commands {
        let help = stdout(addonctl(home.path()).args(*command).arg("--help"));
        let invocation = format!("\n  addonctl {}", command.join(" "));
        assert!(
            help.contains(&format!("Examples:{invocation}")),
            "{command:?}: no example\n{help}"
        );
        assert!(!help.contains("--kubeconfig <FILE>"), "{command:?}\n{help}");
        assert!(
            !help.contains("--script-max-operations"),
            "{command:?}\n{help}"
        );
        assert!(
            help.contains("see `addonctl --help`"),
            "{command:?}\n{help}"
        );
        // The short help too.
        let short = stdout(addonctl(home.path()).args(*command).arg("-h"));
        assert!(
            !short.contains("--kubeconfig <FILE>"),
            "{command:?}\n{short}"
        );
    }
    let enable = stdout(addonctl(home.path()).args(["enable", "--help"]));
    assert!(enable.lines().count() < 50, "{enable}");

    let top = stdout(addonctl(home.path()).arg("--help"));
    assert_eq!(top.matches("Global options:").count(), 1, "{top}");
    assert!(top.contains("--kubeconfig <FILE>"), "{top}");
    assert!(top.contains("--script-max-operations"), "{top}");
}

#[test]
fn man_writes_a_page_per_command_with_its_options_and_examples() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("man/man1");
    addonctl(home.path())
        .args(["man", "--dir"])
        .arg(&dir)
        .assert()
        .success()
        .stderr(predicates::str::contains("man pages"));
    let page = |name: &str| fs_err::read_to_string(dir.join(name)).unwrap();
    let top = page("addonctl.1");
    assert!(top.contains(".TH addonctl 1"), "{top}");
    assert!(top.contains("kubeconfig"), "{top}");
    let join = page("addonctl-cluster-join.1");
    assert!(join.contains("from\\-kubeconfig"), "{join}");
    assert!(join.contains("addonctl cluster join edge\\-1"), "{join}");
    let pages = fs_err::read_dir(&dir).unwrap().count();
    assert!(pages > 30, "{pages} pages");
}

#[test]
fn cli_global_options_still_work_after_the_command() {
    let home = tempfile::tempdir().unwrap();
    // `--script-max-operations` after the command reaches the renderer: too few operations fail.
    addonctl(home.path())
        .arg("render")
        .arg(fixture_registry().join("full"))
        .args(["--script-max-operations", "1", "-o", "json"])
        .assert()
        .code(2);
    // `--system-namespace` after the command is the namespace addons are rendered for.
    let out = stdout(
        addonctl(home.path())
            .arg("render")
            .arg(fixture_registry().join("full"))
            .args(["--system-namespace", "ops", "-o", "json"]),
    );
    let list: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(list["items"][0]["kind"], "Namespace", "{list}");
    assert_eq!(list["items"][0]["metadata"]["name"], "ops", "{list}");
}

#[tokio::test]
async fn cli_aliases_run_the_same_commands() {
    let sb = Sandbox::with_kubevela().await;
    let list = stdout(sb.cli().args(["list", "-o", "json"]));
    let ls = stdout(sb.cli().args(["ls", "-o", "json"]));
    let rows: Value = serde_json::from_str(&ls).unwrap();
    assert!(!rows["addons"].as_array().unwrap().is_empty(), "{rows}");
    assert_eq!(list, ls);

    let dir = fixture_registry().join("minimal");
    let planned = sb
        .cli()
        .arg("install")
        .arg(&dir)
        .args(["--dry-run"])
        .assert()
        .success();
    assert!(
        String::from_utf8_lossy(&planned.get_output().stdout).contains("kind: Namespace"),
        "{planned:?}"
    );
    sb.cli()
        .args(["uninstall", "nothing-like-this"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("nothing-like-this"));
    for (alias, command) in [
        ("install", "enable"),
        ("uninstall", "disable"),
        ("ls", "list"),
    ] {
        let home = tempfile::tempdir().unwrap();
        assert_eq!(
            stdout(addonctl(home.path()).args([alias, "--help"])),
            stdout(addonctl(home.path()).args([command, "--help"]))
        );
    }
}

#[tokio::test]
async fn cli_cluster_detach_without_a_terminal_does_not_ask() {
    let sb = Sandbox::with_kubevela().await;
    let managed = Env::get().managed_n(1);
    sb.join("m1", managed, &[("region", "west")]).await;
    // A re-join dropping the labels: no terminal, no question (the join goes ahead).
    sb.cli()
        .args([
            "cluster",
            "join",
            "m1",
            "--reset-labels",
            "--from-kubeconfig",
        ])
        .arg(&managed.kubeconfig)
        .assert()
        .success()
        .stderr(predicate::str::contains("[y/N]").not());
    sb.cli()
        .args(["cluster", "detach", "m1"])
        .assert()
        .success()
        .stdout(predicate::str::contains("cluster `m1` detached"))
        .stderr(predicate::str::contains("[y/N]").not());
    assert!(sb.get(Kind::SECRET, "m1").await.is_none());
}

/// Runs `addonctl <args>` on a pseudo-terminal (util-linux `script`), typing `answer`.
fn on_a_terminal(sb: &Sandbox, args: &str, answer: &str) -> std::process::Output {
    let bin = assert_cmd::cargo::cargo_bin("addonctl");
    let command = format!(
        "'{}' --kubeconfig '{}' --system-namespace '{}' {args}",
        bin.display(),
        sb.cluster.kubeconfig.display(),
        sb.ns()
    );
    let mut child = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env("NO_COLOR", "1")
        .env_remove("KUBECONFIG")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The answer is typed once the question is up (the terminal would echo it otherwise).
    std::thread::sleep(std::time::Duration::from_secs(1));
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), answer.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

#[tokio::test]
async fn cli_cluster_detach_on_a_terminal_asks_and_no_keeps_the_cluster() {
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        panic!("util-linux `script` is needed for the terminal tests");
    }
    let sb = Sandbox::with_kubevela().await;
    let managed = Env::get().managed_n(1);
    sb.join("m1", managed, &[("region", "west")]).await;

    let declined = on_a_terminal(&sb, "cluster detach m1", "n\n");
    let seen = String::from_utf8_lossy(&declined.stdout).into_owned();
    assert!(seen.contains("detach `m1`? [y/N]"), "{seen}");
    assert!(seen.contains("not detached"), "{seen}");
    assert_eq!(declined.status.code(), Some(2), "{seen}");
    assert!(sb.get(Kind::SECRET, "m1").await.is_some());

    // A re-join without `--labels` keeps them and asks nothing.
    let kept = on_a_terminal(
        &sb,
        &format!(
            "cluster join m1 --from-kubeconfig '{}'",
            managed.kubeconfig.display()
        ),
        "",
    );
    let seen = String::from_utf8_lossy(&kept.stdout).into_owned();
    assert_eq!(kept.status.code(), Some(0), "{seen}");
    assert!(!seen.contains("[y/N]"), "{seen}");

    // A re-join that would drop `region=west` (`--labels` without it) asks; declined, the
    // labels stay.
    let rejoin = format!(
        "cluster join m1 --from-kubeconfig '{}' --labels tier=gold",
        managed.kubeconfig.display()
    );
    let declined = on_a_terminal(&sb, &rejoin, "n\n");
    let seen = String::from_utf8_lossy(&declined.stdout).into_owned();
    assert!(seen.contains("region=west"), "{seen}");
    assert_eq!(declined.status.code(), Some(2), "{seen}");
    let secret = sb.get(Kind::SECRET, "m1").await.unwrap();
    assert_eq!(secret["metadata"]["labels"]["region"], "west");

    let accepted = on_a_terminal(&sb, "cluster detach m1", "y\n");
    let seen = String::from_utf8_lossy(&accepted.stdout).into_owned();
    assert_eq!(accepted.status.code(), Some(0), "{seen}");
    assert!(seen.contains("cluster `m1` detached"), "{seen}");
    assert!(sb.get(Kind::SECRET, "m1").await.is_none());

    // `--yes` does not ask.
    sb.join("m1", managed, &[]).await;
    let skipped = on_a_terminal(&sb, "cluster detach m1 --yes", "");
    let seen = String::from_utf8_lossy(&skipped.stdout).into_owned();
    assert_eq!(skipped.status.code(), Some(0), "{seen}");
    assert!(!seen.contains("[y/N]"), "{seen}");
}
