//! `addonctl` with a stored OCI registry on a real API server: `registry add oci://…`, `enable`,
//! the digest in `status`, a moved tag refused, a policy enforced before anything is rendered.

use crate::support::k8s::Sandbox;
use crate::support::oci::{keygen, prefix, registries, sign};

/// Pushes `minimal` 0.1.0 (its description naming `label`, so each push is a chart of its own).
pub(crate) async fn push_minimal(prefix: &str, label: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("minimal");
    std::fs::create_dir_all(&target).unwrap();
    std::fs::write(
        target.join("metadata.yaml"),
        format!("name: minimal\nversion: 0.1.0\ndescription: chart {label}\n"),
    )
    .unwrap();
    crate::support::oci::push_addons(dir.path(), prefix).await["minimal"].clone()
}

pub(crate) fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub(crate) fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_oci_registry_is_added_enabled_from_pinned_and_a_moved_tag_refused() {
    let sb = Sandbox::with_kubevela().await;
    let cache = tempfile::tempdir().unwrap();
    let prefix = prefix("cli");
    let first = push_minimal(&prefix, "first").await;
    let endpoint = format!("oci://{}/{prefix}", registries().anonymous);
    let policy_dir = tempfile::tempdir().unwrap();
    let cli = || {
        let mut cmd = sb.cli();
        cmd.env("XDG_CACHE_HOME", cache.path())
            .env("ADDONCTL_VERIFY_FILE", policy_dir.path().join("none.yaml"));
        cmd
    };
    // `--type helm` with an `oci://` URL is an OCI registry, as KubeVela keeps it.
    cli()
        .args([
            "registry",
            "add",
            "oci-reg",
            "--type",
            "helm",
            "--endpoint",
            &endpoint,
        ])
        .args(["--option", "plainHttp=true"])
        .assert()
        .success()
        .stdout(predicates::str::contains(
            "added registry `oci-reg` (1 addon)",
        ));
    let got = cli()
        .args(["registry", "get", "oci-reg", "-o", "json"])
        .output()
        .unwrap();
    let spec: serde_json::Value = serde_json::from_slice(&got.stdout).unwrap();
    assert_eq!(spec["type"], "oci", "{spec}");

    cli().args(["enable", "oci-reg/minimal"]).assert().success();
    let status = cli().args(["status", "minimal"]).output().unwrap();
    let text = stdout(&status);
    assert!(
        text.contains(&format!("source:    {endpoint}/minimal@{first}")),
        "{text}"
    );
    assert!(text.contains("not checked (policy `off`)"), "{text}");

    // The same version pushed again: the tag moved; refused unless asked for.
    let second = push_minimal(&prefix, "second").await;
    let refused = cli().args(["enable", "oci-reg/minimal"]).output().unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    let message = stderr(&refused);
    assert!(message.contains("the tag moved"), "{message}");
    assert!(
        message.contains(&first) && message.contains(&second),
        "{message}"
    );
    cli()
        .args(["enable", "oci-reg/minimal", "--allow-moved-tag"])
        .assert()
        .success();
    let text = stdout(
        &cli()
            .args(["status", "minimal", "-o", "json"])
            .output()
            .unwrap(),
    );
    let status: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        status["source"]["manifestDigest"],
        second.as_str(),
        "{status}"
    );
    assert_eq!(status["source"]["tag"], "0.1.0");
    // `registry/addon@sha256:…` reproduces the first install exactly, whatever the tag says.
    cli()
        .args(["enable", &format!("oci-reg/minimal@{first}")])
        .assert()
        .success();
    let text = stdout(
        &cli()
            .args(["status", "minimal", "-o", "json"])
            .output()
            .unwrap(),
    );
    let status: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        status["source"]["manifestDigest"],
        first.as_str(),
        "{status}"
    );
    assert!(status["source"].get("tag").is_none(), "{status}");
    assert_eq!(status["installedVersion"], "0.1.0", "{status}");
    // Without a registry a digest means nothing.
    let out = cli()
        .args(["enable", &format!("minimal@{first}"), "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("registry/minimal@"),
        "{}",
        stderr(&out)
    );

    // `enforce` with a key: the unsigned chart is refused before anything is rendered (exit 2);
    // once signed, it is enabled and `status` says how it was verified.
    let (private, public) = keygen(policy_dir.path(), "cosign");
    let file = policy_dir.path().join("verification.yaml");
    std::fs::write(
        &file,
        format!(
            "registries:\n  oci-reg:\n    policy: enforce\n    keys: [{}]\n",
            public.display()
        ),
    )
    .unwrap();
    let enforced = || {
        let mut cmd = cli();
        cmd.env("ADDONCTL_VERIFY_FILE", &file);
        cmd
    };
    let refused = enforced()
        .args(["enable", "oci-reg/minimal", "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    let message = stderr(&refused);
    assert!(
        message.contains("is not verified") && message.contains(&second),
        "{message}"
    );
    sign(&format!("{prefix}/minimal"), &second, &private, &[]);
    enforced()
        .args(["enable", "oci-reg/minimal"])
        .assert()
        .success();
    let text = stdout(&enforced().args(["status", "minimal"]).output().unwrap());
    assert!(text.contains("verified:  verified (cosign-key"), "{text}");
    cli().args(["disable", "minimal"]).assert().success();
}
