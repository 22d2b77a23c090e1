//! `addonctl diff`, `enable --dry-run=server` and offline `enable --dry-run`, against the real
//! API servers: changes come from server-side dry runs, deletions from the record, nothing is
//! written.

use serde_json::json;

use addonctl::diff::Change;
use addonctl::plan::EnableRequest;

use crate::support::builders::TestAddon;
use crate::support::k8s::{args, Env, Sandbox};

/// An addon `name` rendering ConfigMap `<name>-settings` (`replicas`, and a data key named by
/// `key`), plus ConfigMap `<name>-extra` while `extra` is true, with a secret `token` stored in a
/// Secret `<name>-token`.
fn addon(name: &str) -> TestAddon {
    let parameters = r#"#{
    replicas: pint(1),
    extra: bool(true),
    key: string("mode"),
    token: string("initial-token-1").secret(),
}
"#;
    let template = r#"let name = context.metadata.name;
let data = #{ replicas: `${parameter.replicas}` };
data[parameter.key] = "fast";
let objects = [
    #{ apiVersion: "v1", kind: "ConfigMap", metadata: #{ name: `${name}-settings` }, data: data },
    #{ apiVersion: "v1", kind: "Secret", metadata: #{ name: `${name}-token` },
       stringData: #{ token: parameter.token } },
];
if parameter.extra {
    objects.push(#{ apiVersion: "v1", kind: "ConfigMap", metadata: #{ name: `${name}-extra` },
        data: #{ a: "b" } });
}
#{ output: application(#{ components: [k8s_objects(name, objects)] }) }
"#;
    TestAddon::new(name)
        .file(
            "metadata.yaml",
            &format!("name: {name}\nversion: 1.0.0\ndescription: Fixture addon {name}\n"),
        )
        .file("parameter.rhai", parameters)
        .file("template.rhai", template)
}

fn run(cmd: &mut assert_cmd::Command) -> (i32, String, String) {
    let output = cmd.output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn diff_shows_changed_fields_deletions_and_parameters_and_exits_1() {
    let fixture = addon("dif");
    let sb = Sandbox::without_kubevela()
        .await
        .registries(&[&fixture])
        .direct();
    let (code, _, stderr) =
        run(sb
            .cli()
            .args(["enable", "dif", "replicas=1", "token=first-token-9"]));
    assert_eq!(code, 0, "{stderr}");

    let (code, stdout, stderr) =
        run(sb
            .cli()
            .args(["diff", "dif", "replicas=3", "token=second-token-7"]));
    assert_eq!(code, 1, "differences exit 1:\n{stdout}\n{stderr}");
    assert!(stdout.contains("replicas: 1 → 3"), "{stdout}");
    assert!(stdout.contains("token: (secret changed)"), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "changed ConfigMap `{}/dif-settings` on cluster `local`",
            sb.ns()
        )),
        "{stdout}"
    );
    assert!(stdout.contains("-  replicas: '1'"), "{stdout}");
    assert!(stdout.contains("+  replicas: '3'"), "{stdout}");
    // The Secret's data changes, but no value is shown.
    assert!(stdout.contains("****** (after)"), "{stdout}");
    for secret in ["first-token-9", "second-token-7", "Zmlyc3Q", "c2Vjb25k"] {
        assert!(!stdout.contains(secret), "`{secret}` shown:\n{stdout}");
        assert!(!stderr.contains(secret), "`{secret}` shown:\n{stderr}");
    }

    // A render that drops an object: it is deleted (it is in the record).
    let (code, stdout, _) = run(sb.cli().args(["diff", "dif", "extra=false"]));
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains(&format!(
            "deleted ConfigMap `{}/dif-extra` on cluster `local`",
            sb.ns()
        )),
        "{stdout}"
    );
    assert!(stdout.contains("extra: (unset) → false"), "{stdout}");

    // The same arguments (the stored ones are kept): nothing to change.
    let (code, stdout, stderr) = run(sb.cli().args(["diff", "dif"]));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("no differences"), "{stdout}");

    // JSON for scripts.
    let (code, stdout, _) = run(sb.cli().args(["diff", "dif", "replicas=2", "-o", "json"]));
    assert_eq!(code, 1);
    let parsed: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let objects = parsed["addons"][0]["objects"].as_array().unwrap();
    assert!(objects
        .iter()
        .any(|o| o["name"] == "dif-settings" && o["change"] == "change"));

    // `diff`, `enable --dry-run=server` and `enable --dry-run` print one preview: the plan,
    // with the API servers' verdicts when they were asked.
    assert_eq!(parsed["plan"][0]["name"], "dif", "{stdout}");
    assert_eq!(parsed["plan"][0]["action"], "upgrade", "{stdout}");
    let (_, server, _) = run(sb.cli().args([
        "enable",
        "dif",
        "replicas=2",
        "--dry-run=server",
        "-o",
        "json",
    ]));
    let server: serde_json::Value = serde_json::from_str(&server).unwrap();
    assert_eq!(server["plan"], parsed["plan"], "{server}");
    assert_eq!(server["addons"][0]["name"], "dif", "{server}");
    let (code, client, _) =
        run(sb
            .cli()
            .args(["enable", "dif", "replicas=2", "--dry-run", "-o", "json"]));
    assert_eq!(code, 0);
    let client: serde_json::Value = serde_json::from_str(&client).unwrap();
    assert_eq!(client["plan"][0]["name"], "dif", "{client}");
    assert!(
        client["plan"][0]["objects"]
            .as_array()
            .is_some_and(|o| !o.is_empty()),
        "{client}"
    );
    assert!(
        client.get("addons").is_none(),
        "a client preview asks no API server: {client}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_diff_writes_nothing_and_its_dry_runs_are_not_counted_as_writes() {
    let fixture = addon("quiet");
    let sb = Sandbox::without_kubevela()
        .await
        .registries(&[&fixture])
        .direct();
    sb.enable("quiet", json!({"replicas": 1})).await.unwrap();
    let before = sb.resource_versions().await;
    let request = EnableRequest {
        reference: "quiet".to_owned(),
        args: args(json!({"replicas": 4, "extra": false})).into(),
        ..EnableRequest::default()
    };
    let plan = addonctl::plan::plan(&sb.ctx.planner(), &request, false)
        .await
        .unwrap();
    let (requests, writes) = (sb.api().counters().requests(), sb.api().counters().writes());

    let diff = addonctl::diff::diff(&sb.ctx, &plan).await.unwrap();

    assert!(
        sb.api().counters().requests() > requests,
        "the diff asked the server"
    );
    assert_eq!(
        sb.api().counters().writes(),
        writes,
        "a diff writes nothing"
    );
    assert_eq!(
        sb.resource_versions().await,
        before,
        "nothing changed on the server"
    );
    let changes: Vec<(String, Change)> = diff.addons[0]
        .objects
        .iter()
        .map(|o| (o.name.clone(), o.change))
        .collect();
    assert!(
        changes.contains(&("quiet-settings".to_owned(), Change::Change)),
        "{changes:?}"
    );
    assert!(
        changes.contains(&("quiet-extra".to_owned(), Change::Delete)),
        "{changes:?}"
    );
    assert!(
        changes.contains(&("quiet-token".to_owned(), Change::Unchanged)),
        "{changes:?}"
    );
    assert!(diff.has_differences());

    // A real apply of the same plan does count its writes: the counter tells them apart.
    addonctl::apply::execute(
        &sb.ctx.applier(),
        &plan,
        false,
        &addonctl::context::NoopReporter,
    )
    .await
    .unwrap();
    assert!(sb.api().counters().writes() > writes);
}

#[tokio::test(flavor = "multi_thread")]
async fn dry_run_server_reports_each_object_and_a_server_rejection_with_its_path() {
    let fixture = addon("rej");
    let sb = Sandbox::without_kubevela()
        .await
        .registries(&[&fixture])
        .direct();
    // The system namespace exists (otherwise its objects are shown as rendered, not dry-run).
    sb.api()
        .create_if_missing(&addonctl::model::wire::namespace_object(sb.ns()))
        .await
        .unwrap();
    let (code, stdout, stderr) = run(sb.cli().args(["enable", "rej", "--dry-run=server"]));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!(
            "created ConfigMap `{}/rej-settings` on cluster `local`",
            sb.ns()
        )),
        "{stdout}"
    );
    assert!(stdout.contains("nothing was changed"), "{stdout}");
    assert!(sb
        .get(crate::support::k8s::Kind::CONFIG_MAP, "rej-settings")
        .await
        .is_none());

    // A data key the API server refuses (validation): named with the object, exit 2.
    let (code, stdout, stderr) =
        run(sb
            .cli()
            .args(["enable", "rej", "key=not a key!", "--dry-run=server"]));
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    let rejected = format!(
        "rejected ConfigMap `{}/rej-settings` on cluster `local`:",
        sb.ns()
    );
    assert!(stdout.contains(&rejected), "{stdout}");
    assert!(
        stdout.contains("not a key!"),
        "the server's reason:\n{stdout}"
    );
    assert!(stderr.contains("would reject 1 object"), "{stderr}");
    assert!(sb
        .get(crate::support::k8s::Kind::CONFIG_MAP, "rej-settings")
        .await
        .is_none());

    // `--dry-run` alone is still the client-side plan.
    let (code, stdout, _) = run(sb.cli().args(["enable", "rej", "--dry-run"]));
    assert_eq!(code, 0);
    assert!(
        stdout.contains("# dry run: nothing was changed"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn through_kubevela_the_diff_is_the_applications() {
    let fixture = addon("vdif");
    let sb = Sandbox::with_kubevela().await.registries(&[&fixture]);
    let (code, _, stderr) = run(sb.cli().args(["enable", "vdif"]));
    assert_eq!(code, 0, "{stderr}");
    let (code, stdout, stderr) = run(sb.cli().args(["diff", "vdif", "replicas=5"]));
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!(
            "changed Application `{}/addon-vdif` on cluster `local`",
            sb.ns()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("replicas: '5'") || stdout.contains("replicas: \"5\""),
        "{stdout}"
    );
    assert!(
        stderr.contains("managed-cluster objects are not compared through KubeVela"),
        "{stderr}"
    );
}

#[test]
fn offline_enable_dry_run_plans_against_an_empty_cluster_and_says_so() {
    let fixture = addon("off");
    let dir = tempfile::tempdir().unwrap();
    let (kubeconfig, _) = Env::get().unreachable_kubeconfig(dir.path());
    let mut cmd = assert_cmd::Command::cargo_bin("addonctl").unwrap();
    cmd.env_remove("KUBECONFIG")
        .env("NO_COLOR", "1")
        .args(["--kubeconfig".as_ref(), kubeconfig.as_os_str()])
        .args(["--request-timeout", "5", "enable"])
        .arg(fixture.path())
        .args(["replicas=2", "--dry-run"]);
    let (code, stdout, stderr) = run(&mut cmd);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stderr.contains("cannot reach cluster `local`"), "{stderr}");
    assert!(
        stderr.contains("planning against an empty cluster"),
        "{stderr}"
    );
    assert!(stdout.contains("install"), "the plan:\n{stdout}");
    assert!(
        stdout.contains("name: off-settings"),
        "the objects:\n{stdout}"
    );
    assert!(
        stdout.contains("planned offline against an empty cluster"),
        "{stdout}"
    );

    // Without a kubeconfig at all, too; a real enable still needs the cluster.
    let mut cmd = assert_cmd::Command::cargo_bin("addonctl").unwrap();
    cmd.env_remove("KUBECONFIG")
        .env("HOME", dir.path())
        .env("NO_COLOR", "1")
        .args(["enable"])
        .arg(fixture.path())
        .arg("--dry-run");
    let (code, _, stderr) = run(&mut cmd);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("planning against an empty cluster"),
        "{stderr}"
    );
    let mut cmd = assert_cmd::Command::cargo_bin("addonctl").unwrap();
    cmd.env_remove("KUBECONFIG")
        .args(["--kubeconfig".as_ref(), kubeconfig.as_os_str()])
        .args(["--request-timeout", "5", "enable"])
        .arg(fixture.path());
    let (code, _, _) = run(&mut cmd);
    assert_ne!(code, 0, "enable without --dry-run needs the control plane");
}

#[tokio::test(flavor = "multi_thread")]
async fn diff_flags_objects_that_exist_and_are_not_addonctls_as_conflicts() {
    let fixture = addon("clash");
    let sb = Sandbox::without_kubevela()
        .await
        .registries(&[&fixture])
        .direct();
    sb.apply_as(
        "test",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": sb.ns()}}),
    )
    .await;
    // Someone else's ConfigMap, of the name the addon renders.
    sb.apply_as(
        "someone-else",
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "clash-settings", "namespace": sb.ns()},
               "data": {"owner": "someone-else"}}),
    )
    .await;

    let (code, stdout, stderr) = run(sb.cli().args(["diff", "clash"]));
    assert_eq!(code, 1, "a conflict is a difference:\n{stdout}\n{stderr}");
    let conflict = format!(
        "conflict (needs --adopt) ConfigMap `{}/clash-settings` on cluster `local`: exists and addonctl did not create it: `enable` refuses it without `--adopt`",
        sb.ns()
    );
    assert!(stdout.contains(&conflict), "{stdout}");
    // The object the addon would create is not a conflict.
    assert!(
        stdout.contains(&format!("created ConfigMap `{}/clash-extra`", sb.ns())),
        "{stdout}"
    );

    let (code, stdout, stderr) = run(sb.cli().args(["diff", "clash", "-o", "json"]));
    assert_eq!(code, 1, "{stderr}");
    let diff: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let objects = diff["addons"][0]["objects"].as_array().unwrap();
    let settings = objects
        .iter()
        .find(|o| o["name"] == "clash-settings")
        .unwrap();
    assert_eq!(settings["change"], "conflict", "{settings}");
    assert_eq!(
        objects.iter().filter(|o| o["change"] == "conflict").count(),
        1,
        "{stdout}"
    );

    // `enable --dry-run=server` says the enable would refuse it: the user's error.
    let (code, stdout, stderr) = run(sb.cli().args(["enable", "clash", "--dry-run=server"]));
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("conflict (needs --adopt) ConfigMap"),
        "{stdout}"
    );
    assert!(stderr.contains("pass `--adopt`"), "{stderr}");
    // With `--adopt` it would be taken over: no conflict.
    let (code, stdout, stderr) =
        run(sb
            .cli()
            .args(["enable", "clash", "--dry-run=server", "--adopt"]));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(!stdout.contains("conflict"), "{stdout}");

    // Once adopted, the record holds it: no longer a conflict.
    let (code, _, stderr) = run(sb.cli().args(["enable", "clash", "--adopt"]));
    assert_eq!(code, 0, "{stderr}");
    let (code, stdout, stderr) = run(sb.cli().args(["diff", "clash"]));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("no differences"), "{stdout}");
}
