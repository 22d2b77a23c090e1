//! An addon from an OCI registry over its revisions, on a real API server: each revision keeps
//! the digest it was installed from; `history` shows it; a rollback reads the registry by that
//! digest (never by a tag that may have moved); a kept package brings its recorded verification
//! and is refused when the policy now enforces one it never had; the controller's `Addon`
//! status carries the digest and a `Verified` condition. Registry credentials from a
//! `kubernetes.io/dockerconfigjson` Secret.

use std::time::Duration;

use addonctl::controller::ControllerSettings;
use serde_json::{json, Value};

use crate::controller::{
    addon, apply_addon, condition, in_process_with, install_crd, managed, stop_controller, wait_for,
};
use crate::sources_oci_cli::{push_minimal, stderr, stdout};
use crate::support::k8s::Sandbox;
use crate::support::oci::{keygen, prefix, registries};

/// `status minimal -o json`.
fn installed(cli: &mut assert_cmd::Command) -> Value {
    json_of(
        &cli.args(["status", "minimal", "-o", "json"])
            .output()
            .unwrap(),
    )
}

/// Creates the Secret `body` (a JSON object without `apiVersion` and `kind`) in the sandbox's
/// namespace.
async fn create_secret(sb: &Sandbox, body: Value) {
    crate::controller::ensure_namespace(sb).await;
    let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> =
        kube::Api::namespaced(sb.cluster.admin().await.client().clone(), sb.ns());
    let mut secret = json!({"apiVersion": "v1", "kind": "Secret"});
    if let (Some(secret), Value::Object(body)) = (secret.as_object_mut(), body) {
        secret.extend(body);
    }
    secrets
        .create(
            &kube::api::PostParams::default(),
            &serde_json::from_value(secret).unwrap(),
        )
        .await
        .unwrap();
}

fn json_of(output: &std::process::Output) -> Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", stdout(output), stderr(output)))
}

#[tokio::test(flavor = "multi_thread")]
async fn revisions_keep_their_digest_and_a_rollback_reads_that_manifest_not_the_tag() {
    let sb = Sandbox::with_kubevela().await;
    let cache = tempfile::tempdir().unwrap();
    let prefix = prefix("history");
    let policy_dir = tempfile::tempdir().unwrap();
    let first = push_minimal(&prefix, "first").await;
    let endpoint = format!("oci://{}/{prefix}", registries().anonymous);
    let cli = || {
        let mut cmd = sb.cli();
        cmd.env("XDG_CACHE_HOME", cache.path())
            .env("ADDONCTL_VERIFY_FILE", policy_dir.path().join("none.yaml"));
        cmd
    };
    cli()
        .args(["registry", "add", "oci-reg", "--endpoint", &endpoint])
        .args(["--option", "plainHttp=true"])
        .assert()
        .success();
    cli().args(["enable", "oci-reg/minimal"]).assert().success();
    // The same version pushed again moves its tag; revision 2 is that manifest.
    let second = push_minimal(&prefix, "second").await;
    cli()
        .args(["enable", "oci-reg/minimal", "--allow-moved-tag"])
        .assert()
        .success();

    // `history` names each revision's manifest, shortened, and its verification.
    let table = stdout(&cli().args(["history", "minimal"]).output().unwrap());
    assert!(
        table.lines().next().unwrap_or("").contains("SOURCE"),
        "{table}"
    );
    for digest in [&first, &second] {
        assert!(
            table.contains(&format!("{} unchecked", &digest[..19])),
            "{table}"
        );
    }
    let revisions = json_of(
        &cli()
            .args(["history", "minimal", "-o", "json"])
            .output()
            .unwrap(),
    );
    assert_eq!(
        revisions[0]["source"]["manifestDigest"],
        first.as_str(),
        "{revisions}"
    );
    assert_eq!(
        revisions[1]["source"]["manifestDigest"],
        second.as_str(),
        "{revisions}"
    );

    // Revision 1 without its kept package: the rollback reads the registry, by digest — the
    // tag `0.1.0` names the second manifest now.
    let secret = revisions[0]["secret"].as_str().unwrap().to_owned();
    let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> =
        kube::Api::namespaced(sb.cluster.admin().await.client().clone(), sb.ns());
    secrets
        .patch(
            &secret,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Json::<()>(
                serde_json::from_value(json!([{"op": "remove", "path": "/data/package"}])).unwrap(),
            ),
        )
        .await
        .unwrap();
    let rolled = cli().args(["rollback", "minimal", "1"]).output().unwrap();
    assert!(rolled.status.success(), "{}", stderr(&rolled));
    let said = format!("{}{}", stdout(&rolled), stderr(&rolled));
    assert!(
        said.contains(&format!("reading `minimal` {first}")),
        "{said}"
    );
    let status = installed(&mut cli());
    assert_eq!(
        status["source"]["manifestDigest"],
        first.as_str(),
        "{status}"
    );
    assert!(status["source"].get("tag").is_none(), "{status}");

    // Revision 2 keeps its package: the rollback applies it and keeps its recorded origin.
    cli().args(["rollback", "minimal", "2"]).assert().success();
    let status = installed(&mut cli());
    assert_eq!(
        status["source"]["manifestDigest"],
        second.as_str(),
        "{status}"
    );
    let revisions = json_of(
        &cli()
            .args(["history", "minimal", "-o", "json"])
            .output()
            .unwrap(),
    );
    let last = &revisions[revisions.as_array().unwrap().len() - 1];
    assert_eq!(last["description"], "rollback to 2", "{revisions}");
    assert_eq!(
        last["source"]["manifestDigest"],
        second.as_str(),
        "{revisions}"
    );

    // The registry's policy now enforces signatures: the kept package of revision 3 (first,
    // installed unverified) is refused before anything changes, naming the way out.
    let (_, public) = keygen(policy_dir.path(), "cosign");
    let file = policy_dir.path().join("verification.yaml");
    std::fs::write(
        &file,
        format!(
            "registries:\n  oci-reg:\n    policy: enforce\n    keys: [{}]\n",
            public.display()
        ),
    )
    .unwrap();
    let refused = cli()
        .env("ADDONCTL_VERIFY_FILE", &file)
        .args(["rollback", "minimal", "3"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    let message = stderr(&refused);
    assert!(
        message.contains("policy now enforces verification") && message.contains(&first),
        "{message}"
    );
    let status = installed(&mut cli());
    assert_eq!(
        status["source"]["manifestDigest"],
        second.as_str(),
        "{status}"
    );
    cli().args(["disable", "minimal"]).assert().success();
}

#[tokio::test(flavor = "multi_thread")]
async fn an_addon_resource_from_an_oci_registry_shows_its_digest_and_verification() {
    let sb = Sandbox::with_kubevela().await.direct();
    install_crd(&sb).await;
    sb.join("m1", managed(1), &[]).await;
    let prefix = prefix("controller");
    let digest = push_minimal(&prefix, "controller").await;
    let endpoint = format!("oci://{}/{prefix}", registries().anonymous);
    let (controller, stop, _cluster, _address) = in_process_with(
        &sb,
        &[],
        ControllerSettings {
            registry_interval: Duration::from_secs(3600),
            ..ControllerSettings::default()
        },
    )
    .await;
    // Added while the controller runs: its watch of the registry store brings it in.
    let added = sb
        .cli()
        .args(["registry", "add", "oci-ctl", "--endpoint", &endpoint])
        .args(["--option", "plainHttp=true"])
        .output()
        .unwrap();
    assert!(added.status.success(), "{}", stderr(&added));
    apply_addon(
        &sb,
        "minimal",
        json!({"registry": "oci-ctl", "clusters": ["m1"]}),
    )
    .await;
    // Until the registry store's watch brings the registry in, a reconcile fails and is retried.
    let ready = wait_for("the Addon applied", || async {
        let current = addon(&sb, "minimal").await?;
        current["status"]["appliedVersion"]
            .is_string()
            .then_some(current)
    })
    .await;
    assert_eq!(ready["status"]["appliedVersion"], "0.1.0", "{ready}");
    let source = &ready["status"]["source"];
    assert_eq!(source["digest"], digest.as_str(), "{ready}");
    assert_eq!(
        source["reference"],
        format!("{endpoint}/minimal"),
        "{ready}"
    );
    assert_eq!(source["verified"], false, "{ready}");
    let verified = wait_for("the Verified condition", || async {
        let current = addon(&sb, "minimal").await?;
        condition(&current, "Verified").cloned()
    })
    .await;
    // Without a policy nothing is checked: neither true nor false.
    assert_eq!(verified["status"], "Unknown", "{verified}");
    assert_eq!(verified["reason"], "NotChecked", "{verified}");
    assert!(
        verified["message"]
            .as_str()
            .is_some_and(|m| m.contains(&digest)),
        "{verified}"
    );
    stop_controller(controller, stop).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_docker_config_secret_logs_in_to_an_oci_registry_and_never_shows() {
    let sb = Sandbox::with_kubevela().await;
    let cache = tempfile::tempdir().unwrap();
    let prefix = prefix("dockercfg");
    push_minimal(&prefix, "dockercfg").await;
    let oci = registries();
    let endpoint = format!("oci://{}/{prefix}", oci.basic);
    let cli = || {
        let mut cmd = sb.cli();
        cmd.env("XDG_CACHE_HOME", cache.path());
        cmd
    };
    let add = || {
        let mut cmd = cli();
        cmd.args(["registry", "add", "private", "--endpoint", &endpoint])
            .args(["--option", "plainHttp=true"])
            .args(["--option", "dockerConfigSecret=pull-secret"]);
        cmd
    };
    // The Secret it names does not exist yet: nothing is stored, and the error says how to make it.
    let refused = add().output().unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    let message = stderr(&refused);
    assert!(
        message.contains("pull-secret") && message.contains("create secret docker-registry"),
        "{message}"
    );
    let auth = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        format!("{}:{}", oci.user, oci.password),
    );
    let config = json!({"auths": {oci.basic.clone(): {"auth": auth}}}).to_string();
    create_secret(
        &sb,
        json!({
            "metadata": {"name": "pull-secret"},
            "type": "kubernetes.io/dockerconfigjson",
            "stringData": {".dockerconfigjson": config},
        }),
    )
    .await;
    let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> =
        kube::Api::namespaced(sb.cluster.admin().await.client().clone(), sb.ns());
    let added = add().output().unwrap();
    assert!(added.status.success(), "{}", stderr(&added));
    assert!(stdout(&added).contains("(1 addon)"), "{}", stdout(&added));
    let listed = cli().args(["list", "-o", "json"]).output().unwrap();
    assert!(listed.status.success(), "{}", stderr(&listed));
    assert!(
        stdout(&listed).contains("\"minimal\""),
        "{}",
        stdout(&listed)
    );
    cli().args(["enable", "private/minimal"]).assert().success();
    // The password is in no output, and the registry's own Secret holds no credential.
    let shown = cli()
        .args(["registry", "get", "private", "-o", "yaml"])
        .output()
        .unwrap();
    for out in [&added, &listed, &shown] {
        let text = format!("{}{}", stdout(out), stderr(out));
        assert!(
            !text.contains(&oci.password) && !text.contains(&auth),
            "{text}"
        );
    }
    assert!(
        secrets
            .get_opt("addon-registry-private")
            .await
            .unwrap()
            .is_none(),
        "credentials linked from a Secret are not copied"
    );
    cli().args(["disable", "minimal"]).assert().success();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_verification_key_kept_in_a_secret_is_read_from_the_cluster_and_fails_closed() {
    let sb = Sandbox::with_kubevela().await;
    let cache = tempfile::tempdir().unwrap();
    let prefix = prefix("secretkey");
    let digest = push_minimal(&prefix, "secret key").await;
    let endpoint = format!("oci://{}/{prefix}", registries().anonymous);
    let policy_dir = tempfile::tempdir().unwrap();
    let file = policy_dir.path().join("verification.yaml");
    let policy = |secret: &str| {
        std::fs::write(
            &file,
            format!(
                "registries:\n  oci-keys:\n    policy: enforce\n    keys: [\"k8s://{}/{secret}\"]\n",
                sb.ns()
            ),
        )
        .unwrap();
    };
    let cli = || {
        let mut cmd = sb.cli();
        cmd.env("XDG_CACHE_HOME", cache.path())
            .env("ADDONCTL_VERIFY_FILE", &file);
        cmd
    };
    policy("cosign-key");
    let (private, public) = keygen(policy_dir.path(), "cosign");
    create_secret(
        &sb,
        json!({
            "metadata": {"name": "cosign-key"},
            "stringData": {"cosign.pub": std::fs::read_to_string(&public).unwrap()},
        }),
    )
    .await;
    cli()
        .args(["registry", "add", "oci-keys", "--endpoint", &endpoint])
        .args(["--option", "plainHttp=true", "--no-validate"])
        .assert()
        .success();
    // Unsigned: refused under `enforce` with the key from the Secret.
    let refused = cli()
        .args(["enable", "oci-keys/minimal", "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("is not verified"),
        "{}",
        stderr(&refused)
    );
    // Signed with the Secret's key: verified, and `status` names the key by its reference.
    crate::support::oci::sign(&format!("{prefix}/minimal"), &digest, &private, &[]);
    let enabled = cli().args(["enable", "oci-keys/minimal"]).output().unwrap();
    assert!(enabled.status.success(), "{}", stderr(&enabled));
    let status = stdout(&cli().args(["status", "minimal"]).output().unwrap());
    assert!(
        status.contains(&format!(
            "verified (cosign-key, key `k8s://{}/cosign-key`)",
            sb.ns()
        )),
        "{status}"
    );
    // A policy naming a Secret that does not exist fails closed, naming it.
    policy("no-such-key");
    let refused = cli()
        .args(["enable", "oci-keys/minimal", "--dry-run"])
        .output()
        .unwrap();
    assert_ne!(refused.status.code(), Some(0), "{}", stdout(&refused));
    let message = stderr(&refused);
    assert!(
        message.contains(&format!("Secret `{}/no-such-key` does not exist", sb.ns())),
        "{message}"
    );
    policy("cosign-key");
    cli().args(["disable", "minimal"]).assert().success();
}
