//! The kubeconfig read as kubectl reads it, against the real API servers: a `KUBECONFIG` list
//! merged (a missing file skipped), `--kubeconfig` over the variable, an empty variable ignored.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use serde_json::Value;

use crate::support::k8s::Sandbox;

/// Splits a kubeconfig into clusters and users (`a`) and contexts with the current context (`b`).
fn split(kubeconfig: &Path, dir: &Path) -> (PathBuf, PathBuf) {
    let text = std::fs::read_to_string(kubeconfig).unwrap();
    let full: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    let pick = |keys: &[&str]| {
        let mut out = serde_yaml::Mapping::new();
        for key in keys {
            if let Some(v) = full.get(*key) {
                out.insert((*key).into(), v.clone());
            }
        }
        serde_yaml::to_string(&out).unwrap()
    };
    let a = dir.join("clusters-and-users.yaml");
    let b = dir.join("contexts.yaml");
    std::fs::write(&a, pick(&["apiVersion", "kind", "clusters", "users"])).unwrap();
    std::fs::write(&b, pick(&["contexts", "current-context"])).unwrap();
    assert!(!std::fs::read_to_string(&a).unwrap().contains("contexts"));
    (a, b)
}

fn addonctl(sandbox: &Sandbox, home: &Path) -> Command {
    let mut cmd = Command::cargo_bin("addonctl").unwrap();
    cmd.env_remove("KUBECONFIG")
        .env_remove("KUBEVELA_SYSTEM_NAMESPACE")
        .env_remove("ADDONCTL_ENGINE")
        .env("HOME", home)
        .env("NO_COLOR", "1")
        .args(["--system-namespace", sandbox.ns()]);
    cmd
}

fn local_row(stdout: &[u8]) -> Value {
    let rows: Value = serde_json::from_slice(stdout).unwrap();
    rows.as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "local")
        .cloned()
        .unwrap_or_else(|| panic!("no `local` row: {rows}"))
}

#[tokio::test]
async fn cli_kubeconfig_list_is_merged_as_kubectl_merges_it() {
    let sandbox = Sandbox::without_kubevela().await;
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = split(&sandbox.cluster.kubeconfig, dir.path());
    let missing = dir.path().join("not-there.yaml");
    let list = std::env::join_paths([&a, &missing, &b]).unwrap();
    let out = addonctl(&sandbox, dir.path())
        .env("KUBECONFIG", &list)
        .args(["cluster", "list", "-o", "json"])
        .assert()
        .success();
    let row = local_row(&out.get_output().stdout);
    assert_eq!(row["reachable"], true, "{row}");
    let server = sandbox.cluster.server.trim_end_matches('/');
    assert!(
        row["endpoint"].as_str().unwrap().starts_with(server),
        "{row} should be on {server}"
    );

    // Either file alone is not enough: the merge is what makes the list work.
    let out = addonctl(&sandbox, dir.path())
        .env("KUBECONFIG", &a)
        .args(["cluster", "list", "-o", "json"])
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("KUBECONFIG"), "{stderr}");
}

#[tokio::test]
async fn cli_kubeconfig_flag_wins_and_an_empty_variable_is_not_blamed_on_the_flag() {
    let sandbox = Sandbox::without_kubevela().await;
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.yaml");
    std::fs::write(&broken, "clusters: [unclosed\n").unwrap();
    let out = addonctl(&sandbox, dir.path())
        .env("KUBECONFIG", &broken)
        .arg("--kubeconfig")
        .arg(&sandbox.cluster.kubeconfig)
        .args(["cluster", "list", "-o", "json"])
        .assert()
        .success();
    assert_eq!(local_row(&out.get_output().stdout)["reachable"], true);

    // An empty variable, no `~/.kube/config` (HOME is a fresh directory), not in a pod.
    let out = addonctl(&sandbox, dir.path())
        .env("KUBECONFIG", "")
        .args(["cluster", "list", "-o", "json"])
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("no kubeconfig"), "{stderr}");
    assert!(!stderr.contains("--kubeconfig \""), "{stderr}");
    assert!(!stderr.contains("`--kubeconfig `"), "{stderr}");
}
