//! Re-`enable` keeps what is stored (`--reset-values` starts from the defaults), and `get values`
//! prints the stored arguments as a file `enable -f` takes back, against the real API servers.

use predicates::prelude::*;
use serde_json::{json, Value};

use crate::support::builders::TestAddon;
use crate::support::k8s::{Env, Sandbox};

const TOKEN: &str = "s3cr3t-5d2b8e71";

/// An addon `name` with `replicas`, `mode`, a secret `token`, nested `resources` and
/// `clusters` (its topology), rendering a ConfigMap of its settings.
fn settings_addon(name: &str) -> TestAddon {
    let parameters = [
        "replicas: pint(1)",
        r#"mode: string("fast")"#,
        "token: string().optional().secret()",
        r#"resources: object(#{ cpu: string("100m"), memory: string("128Mi") })"#,
        "clusters: list(string()).optional()",
    ];
    let template = r#"let labels = #{ "app.example/addon": context.metadata.name };
let settings = #{ apiVersion: "v1", kind: "ConfigMap",
    metadata: #{ name: `${context.metadata.name}-settings`, labels: labels },
    data: #{ replicas: `${parameter.replicas}`, mode: parameter.mode } };
#{ output: application(#{
    components: [k8s_objects(context.metadata.name, [settings])],
    policies: [topology("where", parameter.clusters)],
}) }
"#;
    TestAddon::new(name)
        .file(
            "metadata.yaml",
            &format!("name: {name}\nversion: 1.0.0\ndescription: Fixture addon {name}\n"),
        )
        .file(
            "parameter.rhai",
            &format!("#{{\n    {},\n}}\n", parameters.join(",\n    ")),
        )
        .file("template.rhai", template)
}

fn run_ok(cmd: &mut assert_cmd::Command) -> (String, String) {
    let output = cmd.assert().success().get_output().clone();
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The clusters `status -o json` says the addon targets.
fn status_clusters(sb: &Sandbox, addon: &str) -> Value {
    let (stdout, _) = run_ok(sb.cli().args(["status", addon, "-o", "json"]));
    let status: Value = serde_json::from_str(&stdout).unwrap();
    status["clusters"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn re_enabling_keeps_the_stored_arguments_and_clusters_unless_reset_values() {
    let kept = settings_addon("kept");
    let sb = Sandbox::with_kubevela().await.registries(&[&kept]);
    sb.join("m1", Env::get().managed_n(1), &[]).await;
    run_ok(sb.cli().args([
        "enable",
        "kept",
        "replicas=3",
        "mode=slow",
        "resources.memory=1Gi",
        "--clusters",
        "m1",
    ]));
    let first =
        json!({"replicas": 3, "mode": "slow", "resources": {"memory": "1Gi"}, "clusters": ["m1"]});
    assert_eq!(sb.stored_args("kept").await, Some(first));
    assert_eq!(status_clusters(&sb, "kept"), json!(["m1"]));

    // The plan says what it starts from.
    let (plan, _) = run_ok(sb.cli().args(["enable", "kept", "replicas=4", "--dry-run"]));
    assert!(
        plan.contains("note: keeping stored arguments (clusters, mode, replicas, resources); --reset-values to start from the defaults"),
        "{plan}"
    );
    assert!(plan.contains("m1"), "the plan keeps the clusters:\n{plan}");

    // One changed key (a nested one too): the others and the clusters stay.
    let (_, stderr) = run_ok(
        sb.cli()
            .args(["enable", "kept", "replicas=5", "resources.cpu=2"]),
    );
    assert!(stderr.contains("keeping stored arguments ("), "{stderr}");
    let merged = json!({"replicas": 5, "mode": "slow", "resources": {"cpu": "2", "memory": "1Gi"}, "clusters": ["m1"]});
    assert_eq!(sb.stored_args("kept").await, Some(merged));
    assert_eq!(status_clusters(&sb, "kept"), json!(["m1"]));
    let app = sb
        .get(crate::support::k8s::Kind::APPLICATION, "addon-kept")
        .await
        .unwrap();
    assert!(
        app["spec"]["policies"].to_string().contains("\"m1\""),
        "{app:#}"
    );

    // `--reset-values`: the defaults, then what is given; the clusters go back to the default.
    let (_, stderr) = run_ok(
        sb.cli()
            .args(["enable", "kept", "replicas=2", "--reset-values"]),
    );
    assert!(
        stderr.contains("--reset-values: starting from the defaults"),
        "{stderr}"
    );
    assert_eq!(sb.stored_args("kept").await, Some(json!({"replicas": 2})));
    assert_ne!(status_clusters(&sb, "kept"), json!(["m1"]));

    // `upgrade` merges, and `upgrade --reset-values` starts from the defaults too.
    run_ok(sb.cli().args(["upgrade", "kept", "mode=slow"]));
    assert_eq!(
        sb.stored_args("kept").await,
        Some(json!({"replicas": 2, "mode": "slow"}))
    );
    run_ok(
        sb.cli()
            .args(["upgrade", "kept", "mode=eco", "--reset-values"]),
    );
    assert_eq!(sb.stored_args("kept").await, Some(json!({"mode": "eco"})));
}

#[tokio::test(flavor = "multi_thread")]
async fn get_values_masks_secrets_and_round_trips_through_enable_f() {
    let vaulted = settings_addon("vaulted");
    let sb = Sandbox::with_kubevela().await.registries(&[&vaulted]);
    let token_arg = format!("token={TOKEN}");
    run_ok(sb.cli().args([
        "enable",
        "vaulted",
        &token_arg,
        "replicas=3",
        "resources.cpu=500m",
    ]));
    let stored = sb.stored_args("vaulted").await.unwrap();
    assert_eq!(
        stored,
        json!({"token": TOKEN, "replicas": 3, "resources": {"cpu": "500m"}})
    );

    // Masked by default (YAML).
    let (masked, stderr) = run_ok(sb.cli().args(["get", "values", "vaulted"]));
    assert!(
        !masked.contains(TOKEN) && !stderr.contains(TOKEN),
        "{masked}{stderr}"
    );
    let (parsed, _) = addonctl::yaml::parse_single(&masked).unwrap();
    assert_eq!(
        parsed,
        json!({"token": "******", "replicas": 3, "resources": {"cpu": "500m"}})
    );

    // Shown with `--show-secrets`, as YAML and as JSON.
    let (shown, _) = run_ok(
        sb.cli()
            .args(["get", "values", "vaulted", "--show-secrets"]),
    );
    assert_eq!(addonctl::yaml::parse_single(&shown).unwrap().0, stored);
    let (json_out, _) =
        run_ok(
            sb.cli()
                .args(["get", "values", "vaulted", "--show-secrets", "-o", "json"]),
        );
    assert_eq!(serde_json::from_str::<Value>(&json_out).unwrap(), stored);

    // Round trip: change what is stored, then start from the defaults with the saved file.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("values.yaml");
    fs_err::write(&file, &shown).unwrap();
    run_ok(
        sb.cli()
            .args(["enable", "vaulted", "replicas=9", "mode=slow"]),
    );
    assert_ne!(sb.stored_args("vaulted").await.as_ref(), Some(&stored));
    run_ok(
        sb.cli()
            .args(["enable", "vaulted", "--reset-values", "-f"])
            .arg(&file),
    );
    assert_eq!(sb.stored_args("vaulted").await, Some(stored.clone()));

    // The masked output given back as a file would replace the secret with the mask: refused,
    // naming the parameter, and the stored secret stays.
    let masked_file = dir.path().join("masked.yaml");
    fs_err::write(&masked_file, &masked).unwrap();
    let refused = sb
        .cli()
        .args(["enable", "vaulted", "-f"])
        .arg(&masked_file)
        .assert()
        .code(2)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("parameter `token`") && stderr.contains("mask"),
        "{stderr}"
    );
    assert_eq!(sb.stored_args("vaulted").await, Some(stored));

    // The registry no longer has the installed version: no schema to mask with, so it refuses
    // (showing nothing) and names `--show-secrets`, which still works.
    let metadata = vaulted.path().join("metadata.yaml");
    let text = fs_err::read_to_string(&metadata).unwrap();
    fs_err::write(&metadata, text.replace("version: 1.0.0", "version: 2.0.0")).unwrap();
    let refused = sb
        .cli()
        .args(["get", "values", "vaulted"])
        .assert()
        .code(2)
        .stdout("")
        .stderr(predicate::str::contains(
            "cannot tell which stored arguments of addon `vaulted` are secrets: its version 1.0.0",
        ))
        .get_output()
        .clone();
    assert!(!String::from_utf8_lossy(&refused.stderr).contains(TOKEN));
    let (shown_again, _) = run_ok(
        sb.cli()
            .args(["get", "values", "vaulted", "--show-secrets"]),
    );
    assert_eq!(shown_again, shown);

    // An addon that is not installed is the user's error.
    sb.cli()
        .args(["get", "values", "absent"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("addon `absent` is not enabled"));
}
