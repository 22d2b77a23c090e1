//! `enable --declarative` / `disable --declarative` against the real control plane: the `Addon`
//! written (secret parameters in their own Secret, never in the `Addon` nor the output), bad
//! arguments refused before anything is written, the controller (a child process) applying it
//! with Events and `status`/`list` reading it, and the CLI refusing to fight the controller.

use base64::Engine as _;
use serde_json::{json, Value};

use crate::controller::{condition, install_crd, wait_for, Child, ADDON};
use crate::support::builders::TestAddon;
use crate::support::k8s::{list_on, Env, Kind, Sandbox};

/// The secret value every test gives; it must appear nowhere but in the Secrets.
const TOKEN: &str = "hunter2-Declared-Token";

/// An addon `name`: `count` ConfigMaps and a Secret `<name>-token` holding the secret `token`,
/// in a namespace named after the system namespace, on the clusters of `clusters`.
fn fixture(name: &str) -> TestAddon {
    let template = r#"let ns = context.namespace;
let addon = context.metadata.name;
let labels = #{ "addonctl.test/addon": addon };
let objects = [#{ apiVersion: "v1", kind: "Namespace", metadata: #{ name: ns, labels: labels } },
    #{ apiVersion: "v1", kind: "Secret", metadata: #{ name: `${addon}-token`, labels: labels },
        stringData: #{ token: parameter.token } }];
for i in 0..parameter.count {
    objects.push(#{ apiVersion: "v1", kind: "ConfigMap",
        metadata: #{ name: `${addon}-${i}`, labels: labels }, data: #{ index: `${i}` } });
}
#{ output: application(#{ components: [k8s_objects(addon, objects)],
    policies: [topology("where", parameter.clusters)] }) }
"#;
    TestAddon::new(name)
        .file(
            "metadata.yaml",
            &format!("name: {name}\nversion: 1.2.0\ndescription: Fixture addon {name}\n"),
        )
        .file(
            "parameter.rhai",
            "#{\n    count: pint(1),\n    token: string().secret(),\n    clusters: list(string()).optional(),\n}\n",
        )
        .file("template.rhai", template)
}

/// The Events (`events.k8s.io/v1`) the controller published on the `Addon` `name`: (reason,
/// note), oldest first.
pub(crate) async fn addon_events(sb: &Sandbox, name: &str) -> Vec<(String, String)> {
    let mut events: Vec<Value> = sb
        .list(Kind("events.k8s.io/v1", "Event"))
        .await
        .into_iter()
        .filter(|e| {
            e["regarding"]["kind"] == "Addon"
                && e["regarding"]["name"] == name
                && e["reportingController"] == "addonctl-controller"
        })
        .collect();
    events.sort_by_key(|e| e["eventTime"].as_str().unwrap_or_default().to_owned());
    events
        .iter()
        .map(|e| {
            (
                e["reason"].as_str().unwrap_or_default().to_owned(),
                e["note"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// Waits for an Event of `reason` on the `Addon` `name`; returns its note.
pub(crate) async fn wait_event(sb: &Sandbox, name: &str, reason: &str) -> String {
    wait_for(&format!("a `{reason}` Event on `{name}`"), || async {
        addon_events(sb, name)
            .await
            .into_iter()
            .find(|(r, _)| r == reason)
            .map(|(_, note)| note)
    })
    .await
}

fn run(cmd: &mut assert_cmd::Command) -> (i32, String, String) {
    let output = cmd.output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn decoded(secret: &Value, key: &str) -> String {
    let data = secret["data"][key].as_str().unwrap();
    String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap(),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn enable_declarative_writes_the_addon_and_a_secret_and_refuses_bad_arguments_first() {
    let addon = fixture("decl");
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&addon]);
    install_crd(&sb).await;

    let (code, stdout, stderr) = run(sb.cli().args([
        "enable",
        "decl",
        "count=3",
        &format!("token={TOKEN}"),
        "--version",
        "^1.0",
        "--declarative",
        "--cluster-selector",
        "env=prod",
        "--drift",
        "warn",
    ]));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("Addon `decl` written")
            && stdout.contains("Secret `addon-params-decl`")
            && stdout
                .contains("the controller applies it; `addonctl status decl` shows its conditions"),
        "{stdout}"
    );
    assert!(!stdout.contains(TOKEN) && !stderr.contains(TOKEN));

    let stored = sb.get(ADDON, "decl").await.expect("the Addon is written");
    assert_eq!(
        stored["spec"],
        json!({
            "version": "^1.0",
            "parameters": {"count": 3},
            "secretParameters": [{"name": "token", "secretRef": {"name": "addon-params-decl", "key": "token"}}],
            "clusterSelector": {"matchLabels": {"env": "prod"}},
            "drift": {"policy": "warn"},
        })
    );
    assert!(!stored.to_string().contains(TOKEN), "{stored}");
    let managers: Vec<&str> = stored["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["manager"].as_str())
        .collect();
    assert_eq!(managers, ["addonctl"]);
    let secret = sb.get(Kind::SECRET, "addon-params-decl").await.unwrap();
    assert_eq!(decoded(&secret, "token"), TOKEN);
    assert_eq!(
        secret["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "addonctl"
    );

    // Bad arguments are refused before anything is written.
    let version = stored["metadata"]["resourceVersion"].clone();
    for bad in ["count=many", "nope=1", "count=0"] {
        let (code, stdout, stderr) =
            run(sb
                .cli()
                .args(["enable", "decl", bad, "token=other-token", "--declarative"]));
        assert_eq!(code, 2, "{bad}: {stdout}\n{stderr}");
        assert!(!stderr.contains("other-token"), "{stderr}");
    }
    let (code, _, stderr) = run(sb
        .cli()
        .args(["enable", "other", "count=1", "--declarative"]));
    assert_eq!(code, 2, "an unknown addon: {stderr}");
    assert!(sb.get(ADDON, "other").await.is_none());
    let after = sb.get(ADDON, "decl").await.unwrap();
    assert_eq!(after["metadata"]["resourceVersion"], version);
    let secret = sb.get(Kind::SECRET, "addon-params-decl").await.unwrap();
    assert_eq!(decoded(&secret, "token"), TOKEN);

    // Declared again with another token: the Secret follows, `-o json` prints the Addon.
    let (code, stdout, stderr) = run(sb.cli().args([
        "enable",
        "decl",
        "token=second-Token-value",
        "--declarative",
        "--clusters",
        "local",
        "-o",
        "json",
    ]));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let printed: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(printed["kind"], "Addon");
    assert_eq!(printed["spec"]["clusters"], json!(["local"]));
    assert!(
        printed["spec"].get("clusterSelector").is_none(),
        "{printed}"
    );
    assert!(printed["spec"].get("drift").is_none(), "{printed}");
    assert!(!stdout.contains("second-Token-value"));
    let secret = sb.get(Kind::SECRET, "addon-params-decl").await.unwrap();
    assert_eq!(decoded(&secret, "token"), "second-Token-value");
}

#[tokio::test(flavor = "multi_thread")]
async fn without_the_crd_declarative_says_how_to_install_it() {
    let addon = fixture("nocrd");
    // The managed API servers never get the `Addon` CRD.
    let sb = Sandbox::without_kubevela()
        .await
        .direct()
        .registries(&[&addon]);
    assert!(!sb.api().serves(&ADDON.gvk()).await.unwrap());
    let (code, stdout, stderr) =
        run(sb
            .cli()
            .args(["enable", "nocrd", "token=t", "--declarative"]));
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("does not serve the `Addon` resource")
            && stderr.contains("addonctl controller manifests"),
        "{stderr}"
    );
    assert!(sb.get(Kind::SECRET, "addon-params-nocrd").await.is_none());
    let (code, _, stderr) = run(sb.cli().args(["disable", "nocrd", "--declarative"]));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("addonctl controller manifests"), "{stderr}");
    // `status` and `list` work as before, without an `Addon` block.
    let (code, stdout, stderr) = run(sb.cli().args(["status", "nocrd"]));
    assert_eq!(code, 0, "{stderr}");
    assert!(!stdout.contains("Declared by"), "{stdout}");
    let (code, stdout, stderr) = run(sb.cli().args(["list", "-o", "json"]));
    assert_eq!(code, 0, "{stderr}");
    let listed: Value = serde_json::from_str(&stdout).unwrap();
    assert!(listed["addons"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["declared"] == false));
}

#[test]
fn a_declarative_dry_run_without_a_cluster_prints_the_addon_and_a_masked_secret() {
    let addon = fixture("dry");
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = assert_cmd::Command::cargo_bin("addonctl").unwrap();
    cmd.env_remove("KUBECONFIG")
        .env("HOME", dir.path())
        .env("NO_COLOR", "1")
        .arg("--registry-dir")
        .arg(addon.path())
        .args(["enable", "dry", "count=2", &format!("token={TOKEN}")])
        .args(["--declarative", "--dry-run", "--clusters", "m1,m2"]);
    let (code, stdout, stderr) = run(&mut cmd);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        !stdout.contains(TOKEN) && !stderr.contains(TOKEN),
        "{stdout}"
    );
    assert!(
        stdout.contains("kind: Addon") && stdout.contains("kind: Secret"),
        "{stdout}"
    );
    assert!(stdout.contains("nothing was written"), "{stdout}");
    let mut cmd = assert_cmd::Command::cargo_bin("addonctl").unwrap();
    cmd.env_remove("KUBECONFIG")
        .env("HOME", dir.path())
        .arg("--registry-dir")
        .arg(addon.path())
        .args(["enable", "dry", "count=2", &format!("token={TOKEN}")])
        .args([
            "--declarative",
            "--dry-run",
            "--clusters",
            "m1,m2",
            "-o",
            "json",
        ]);
    let (code, stdout, stderr) = run(&mut cmd);
    assert_eq!(code, 0, "{stderr}");
    let list: Value = serde_json::from_str(&stdout).unwrap();
    let declared = &list["items"][0];
    assert_eq!(declared["kind"], "Addon");
    assert_eq!(declared["spec"]["clusters"], json!(["m1", "m2"]));
    assert_eq!(declared["spec"]["parameters"], json!({"count": 2}));
    assert_eq!(declared["spec"]["secretParameters"][0]["name"], "token");
    assert_eq!(list["items"][1]["kind"], "Secret");
    assert_eq!(list["items"][1]["data"]["token"], addonctl::render::MASK);
    assert!(!stdout.contains(TOKEN));
    // A bad argument is refused offline too.
    let mut cmd = assert_cmd::Command::cargo_bin("addonctl").unwrap();
    cmd.env_remove("KUBECONFIG")
        .env("HOME", dir.path())
        .arg("--registry-dir")
        .arg(addon.path())
        .args([
            "enable",
            "dry",
            "count=-1",
            "token=x",
            "--declarative",
            "--dry-run",
        ]);
    let (code, _, stderr) = run(&mut cmd);
    assert_eq!(code, 2, "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_declared_addon_is_applied_by_the_controller_and_deleted_through_disable_declarative() {
    let addon = fixture("owned");
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&addon]);
    install_crd(&sb).await;
    sb.join("m1", Env::get().managed_n(1), &[("env", "prod")])
        .await;
    let m1 = Env::get().managed_n(1).admin().await;
    let controller = Child::start(&sb, &["--leader-elect=false"]).await;

    let (code, stdout, stderr) = run(sb.cli().args([
        "enable",
        "owned",
        "count=2",
        &format!("token={TOKEN}"),
        "--declarative",
        "--clusters",
        "m1",
        "--drift",
        "ignore",
    ]));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    wait_for("the Addon is Ready", || async {
        let stored = sb.get(ADDON, "owned").await?;
        (condition(&stored, "Ready")?["status"] == "True").then_some(())
    })
    .await;
    let on_m1 = list_on(&m1, Kind::SECRET, Some(sb.ns())).await;
    let token = on_m1
        .iter()
        .find(|s| s["metadata"]["name"] == "owned-token")
        .expect("the addon's Secret is on m1");
    assert_eq!(
        decoded(token, "token"),
        TOKEN,
        "the secret parameter reached the addon"
    );

    // `status` shows the Addon's block; `-o json` has it as `addon`.
    let (code, stdout, _) = run(sb.cli().args(["status", "owned"]));
    assert_eq!(code, 0);
    assert!(
        stdout.contains("Declared by Addon resource")
            && stdout.contains("Ready ")
            && stdout.contains("drift policy ignore"),
        "{stdout}"
    );
    let (_, stdout, _) = run(sb.cli().args(["status", "owned", "-o", "json"]));
    let status: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(status["addon"]["stale"], false);
    assert!(status["addon"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["type"] == "Ready" && c["status"] == "True"));
    let (_, stdout, _) = run(sb.cli().args(["list", "-o", "json"]));
    let listed: Value = serde_json::from_str(&stdout).unwrap();
    let row = listed["addons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "owned")
        .unwrap();
    assert_eq!(row["declared"], true);

    // The controller published `Applied` on the Addon, with the version and cluster.
    let note = wait_event(&sb, "owned", "Applied").await;
    assert!(note.contains("1.2.0") && note.contains("m1"), "{note}");
    let events = addon_events(&sb, "owned").await;
    assert!(!format!("{events:?}").contains(TOKEN));

    // The CLI does not fight the controller.
    let (code, _, stderr) = run(sb.cli().args(["disable", "owned"]));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--declarative"), "{stderr}");
    let (code, _, stderr) = run(sb.cli().args(["enable", "owned", "token=x"]));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--override-controller"), "{stderr}");
    let (code, _, stderr) = run(sb.cli().args(["upgrade", "owned"]));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("declared by the `Addon` resource"),
        "{stderr}"
    );
    assert!(sb.get(ADDON, "owned").await.is_some());

    // Deleting the Addon disables the addon.
    let (code, stdout, stderr) = run(sb.cli().args([
        "disable",
        "owned",
        "--declarative",
        "--wait",
        "--timeout",
        "60",
    ]));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("Addon `owned` deleted"), "{stdout}");
    assert!(sb.get(ADDON, "owned").await.is_none());
    assert!(sb.get(Kind::SECRET, "addon-params-owned").await.is_none());
    assert!(sb.get(Kind::SECRET, "addon-record-owned").await.is_none());
    let left = list_on(&m1, Kind::CONFIG_MAP, Some(sb.ns())).await;
    assert!(
        !left
            .iter()
            .any(|c| c["metadata"]["labels"]["addonctl.test/addon"] == "owned"),
        "the controller disabled the addon on m1"
    );
    drop(controller);
}
