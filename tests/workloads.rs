//! Workloads on clusters whose controllers, scheduler and node (kwok) are real: what `status`,
//! `wait` and a rollout gate call ready is the new version ready, not old pods still serving.

use std::time::Duration;

use serde_json::Value;

use crate::support::builders::TestAddon;
use crate::support::k8s::{get_on, release_pods_on, Kind, Sandbox, HELD_POOL_RHAI};

/// One Deployment whose pod template follows the parameters: its image, and whether its pods are
/// held (a node selector the node lacks until the test releases them).
fn rolling_addon(name: &str) -> TestAddon {
    let template = r#"let ns = context.namespace;
let addon = context.metadata.name;
let pod = #{ containers: [#{ name: "main", image: parameter.image }] };
if parameter.held { pod.nodeSelector = held_pool(ns); }
let objects = [
    #{ apiVersion: "apps/v1", kind: "Deployment", metadata: #{ name: addon, namespace: ns },
       spec: #{ replicas: 1, selector: #{ matchLabels: #{ app: addon } },
                template: #{ metadata: #{ labels: #{ app: addon } }, spec: pod } } },
];
#{ output: application(#{ components: [k8s_objects(addon, objects)] }) }
"#;
    TestAddon::new(name)
        .file(
            "metadata.yaml",
            &format!("name: {name}\nversion: 1.0.0\ndescription: Fixture addon {name}\n"),
        )
        .file(
            "parameter.rhai",
            "#{\n    image: string(\"registry.example/app:1\"),\n    held: bool(false),\n}\n",
        )
        .file("template.rhai", &format!("{HELD_POOL_RHAI}{template}"))
}

/// Runs `addonctl ARGS` in the sandbox; the output, and whether it succeeded.
fn run(sb: &Sandbox, args: &[&str]) -> (std::process::Output, bool) {
    let output = sb.cli().args(args).output().unwrap();
    let ok = output.status.success();
    (output, ok)
}

/// Runs `addonctl ARGS` in the sandbox and requires it to succeed.
fn run_ok(sb: &Sandbox, args: &[&str]) {
    let (output, ok) = run(sb, args);
    assert!(
        ok,
        "addonctl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn deployment_state(sb: &Sandbox, addon: &str) -> (String, Value) {
    let (output, _) = run(sb, &["status", addon, "-o", "json"]);
    let status: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "status -o json ({e}): {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let deployment = status["resources"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "Deployment")
        .unwrap_or_else(|| panic!("no Deployment in {status}"))
        .clone();
    (
        status["phase"].as_str().unwrap_or("").to_owned(),
        deployment,
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn an_upgrade_is_ready_only_once_its_new_pods_are_while_the_old_pod_still_serves() {
    let addon = rolling_addon("rolling");
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&addon]);
    run_ok(&sb, &["enable", "rolling"]);
    // The first version's pod is scheduled on the node and becomes ready by itself.
    run_ok(&sb, &["wait", "rolling", "--timeout", "60s"]);

    // The new version's pod cannot be scheduled; the old one keeps serving (maxUnavailable of
    // one replica rounds down to 0).
    run_ok(
        &sb,
        &[
            "upgrade",
            "rolling",
            "image=registry.example/app:2",
            "held=true",
        ],
    );
    // Once the controller has started the new ReplicaSet, the Deployment's own counts still
    // say one ready replica: the old pod's.
    let mut live = Value::Null;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::time::Instant::now() < deadline {
        live = get_on(sb.api(), Kind::DEPLOYMENT, Some(sb.ns()), "rolling")
            .await
            .unwrap();
        let status = &live["status"];
        if status["observedGeneration"] == live["metadata"]["generation"]
            && status["updatedReplicas"] == 1
            && status["replicas"] == 2
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(live["status"]["readyReplicas"], 1, "{live}");
    assert_eq!(live["status"]["replicas"], 2, "{live}");

    let (phase, deployment) = deployment_state(&sb, "rolling");
    assert_eq!(deployment["state"], "notReady", "{deployment}");
    assert_eq!(deployment["readyReplicas"], 0, "{deployment}");
    assert_eq!(phase, "enabling");
    let (output, ok) = run(&sb, &["wait", "rolling", "--timeout", "2s"]);
    assert!(
        !ok,
        "wait returned while the new version was not ready: {}",
        String::from_utf8_lossy(&output.stdout)
    );

    // The new pod runs; the old one goes.
    release_pods_on(sb.api(), sb.ns()).await;
    run_ok(&sb, &["wait", "rolling", "--timeout", "60s"]);
    let (phase, deployment) = deployment_state(&sb, "rolling");
    assert_eq!(deployment["state"], "ready", "{deployment}");
    assert_eq!(phase, "enabled");
}
