//! The app store's JSON API against the real API servers: `addonctl serve` runs as a child
//! process (stopped by its PID), requests carry the printed token as `Authorization: Bearer`.
//! The catalogue and an addon's detail; plan → apply → enabled, with its events on the stream;
//! a plan applied twice, or after the cluster changed, answers 409 and writes nothing; a
//! disable plan names what it deletes; a system addon is invisible to a caller whose group may
//! not declare addons, in every endpoint and on the event stream, and visible once a group
//! binding grants it; no registry credential in any answer. Every wait is bounded.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::builders::TestAddon;
use crate::support::k8s::{Env, Sandbox};
use crate::support::serve::{serve, token_of};

/// A fixture addon: one ConfigMap `<name>-config`, tagged `tags`.
fn config_addon(name: &str, tags: &str) -> TestAddon {
    TestAddon::new(name)
        .file(
            "metadata.yaml",
            &format!("name: {name}\nversion: 1.0.0\ndescription: Fixture {name}\ntags: [{tags}]\n"),
        )
        .file(
            "resources/config.yaml",
            &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}-config\ndata:\n  a: b\n"),
        )
}

fn names(list: &Value) -> Vec<String> {
    list["addons"]
        .as_array()
        .unwrap_or_else(|| panic!("a catalogue: {list}"))
        .iter()
        .map(|a| a["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_apply_events_and_stale_plans_through_the_api() {
    let tiny = config_addon("serve-tiny", "demo");
    let sb = Sandbox::without_kubevela()
        .await
        .direct()
        .registries(&[&tiny]);
    let server = serve(sb.command());

    // The catalogue: the built-in addons with their tags, and the local registry's.
    let (status, list) = server.get("/api/v1/addons").await;
    assert_eq!(status, 200, "{list}");
    let all = names(&list);
    for name in [
        "uptime-beacon",
        "node-pulse",
        "strongbox-operator",
        "serve-tiny",
    ] {
        assert!(all.iter().any(|n| n == name), "{name} missing: {all:?}");
    }
    let beacon = list["addons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "uptime-beacon")
        .unwrap();
    assert_eq!(beacon["tags"], json!(["monitoring", "http"]), "{beacon}");
    assert_eq!(beacon["phase"], "disabled", "{beacon}");
    let (_, tagged) = server.get("/api/v1/addons?tag=monitoring").await;
    assert!(
        names(&tagged).contains(&"uptime-beacon".to_owned()),
        "{tagged}"
    );
    assert!(
        !names(&tagged).contains(&"serve-tiny".to_owned()),
        "{tagged}"
    );

    // One addon: its README as HTML, its parameters' schema, its versions.
    let (status, detail) = server.get("/api/v1/addons/uptime-beacon").await;
    assert_eq!(status, 200, "{detail}");
    assert!(
        detail["readmeHtml"]
            .as_str()
            .is_some_and(|h| h.contains("<h")),
        "{detail}"
    );
    assert_eq!(
        detail["parameters"]["properties"]["timeoutSeconds"]["maximum"], 60,
        "{detail}"
    );
    assert!(
        detail["versions"]
            .as_array()
            .is_some_and(|v| v.contains(&json!("v1.0.0"))),
        "{detail}"
    );
    let (status, missing) = server.get("/api/v1/addons/no-such-addon").await;
    assert_eq!((status, missing["code"].as_str()), (404, Some("notfound")));

    // A plan made, then the same change made by someone else: its apply is refused (409) and
    // writes nothing; the plan stays unapplied.
    let stale = server
        .plan(json!({"action": "enable", "addon": "serve-tiny"}))
        .await;
    assert_eq!(stale["changes"], true, "{stale}");
    assert!(stale.to_string().contains("serve-tiny-config"), "{stale}");
    sb.cli().args(["enable", "serve-tiny"]).assert().success();
    let before = sb.resource_versions().await;
    let id = stale["planId"].as_str().unwrap();
    let (status, refused) = server
        .post(&format!("/api/v1/plans/{id}/apply"), json!({}))
        .await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["code"], "conflict", "{refused}");
    assert_eq!(sb.resource_versions().await, before);
    let (_, view) = server.get(&format!("/api/v1/plans/{id}")).await;
    assert_eq!(view["state"], "planned", "{view}");

    // Plan → apply → enabled, with its events on the stream.
    let mut events = server.events().await;
    let plan = server
        .plan(json!({"action": "enable", "addon": "uptime-beacon",
                     "values": {"timeoutSeconds": 15}}))
        .await;
    assert_eq!(plan["state"], "planned", "{plan}");
    assert!(
        plan["command"]
            .as_str()
            .is_some_and(|c| c.starts_with("addonctl enable uptime-beacon")
                && c.contains("timeoutSeconds=15")),
        "{plan}"
    );
    let id = plan["planId"].as_str().unwrap().to_owned();
    let done = server.apply(&plan).await;
    assert!(
        done["report"].is_array() || done["report"].is_object(),
        "{done}"
    );
    let applied = events
        .until(Duration::from_secs(30), "the `applied` event", |e| {
            e["type"] == "applied" && e["planId"] == id.as_str()
        })
        .await;
    assert_eq!(applied["outcome"], "succeeded", "{applied}");
    events
        .until(Duration::from_secs(30), "a progress event", |e| {
            e["type"] == "progress" && e["planId"] == id.as_str()
        })
        .await;
    events
        .until(Duration::from_secs(30), "the `addon` event", |e| {
            e["type"] == "addon" && e["addon"] == "uptime-beacon"
        })
        .await;
    let status = server.until_phase("uptime-beacon", "enabled").await;
    assert_eq!(status["installedVersion"], "v1.0.0", "{status}");
    // Its objects compared with what was applied: all there, none drifted.
    let (code, drift) = server.get("/api/v1/addons/uptime-beacon/drift").await;
    assert_eq!(code, 200, "{drift}");
    assert_eq!(drift["drifts"], json!([]), "{drift}");
    assert!(drift["objects"].as_u64().unwrap_or(0) >= 3, "{drift}");

    // The same plan again: refused, nothing written.
    let before = sb.resource_versions().await;
    let (status, again) = server
        .post(&format!("/api/v1/plans/{id}/apply"), json!({}))
        .await;
    assert_eq!(status, 409, "{again}");
    assert_eq!(sb.resource_versions().await, before);

    // An upgrade planned, then the values changed by another command: refused.
    let upgrade = server
        .plan(json!({"action": "upgrade", "addon": "uptime-beacon",
                     "values": {"timeoutSeconds": 20}}))
        .await;
    sb.cli()
        .args(["upgrade", "uptime-beacon", "timeoutSeconds=30"])
        .assert()
        .success();
    let before = sb.resource_versions().await;
    let upgrade_id = upgrade["planId"].as_str().unwrap();
    let (status, refused) = server
        .post(&format!("/api/v1/plans/{upgrade_id}/apply"), json!({}))
        .await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(sb.resource_versions().await, before);

    // A disable plan names what it deletes; applied, the addon is disabled.
    let (_, objects) = server.get("/api/v1/addons/serve-tiny/status").await;
    assert_eq!(objects["phase"], "enabled", "{objects}");
    let disable = server
        .plan(json!({"action": "disable", "addon": "serve-tiny"}))
        .await;
    assert_eq!(disable["changes"], true, "{disable}");
    assert!(
        disable["plan"].to_string().contains("serve-tiny-config"),
        "the disable plan does not name the ConfigMap it deletes: {disable}"
    );
    assert!(sb
        .get(crate::support::k8s::Kind::CONFIG_MAP, "serve-tiny-config")
        .await
        .is_some());
    server.apply(&disable).await;
    server.until_phase("serve-tiny", "disabled").await;
}

/// A kubeconfig for the sandbox's API server with `token`.
fn kubeconfig_with(sb: &Sandbox, dir: &Path, token: &str) -> std::path::PathBuf {
    let file = dir.join("kubeconfig");
    let text = serde_json::to_string(&json!({
        "apiVersion": "v1", "kind": "Config", "current-context": "sa",
        "clusters": [{"name": "c", "cluster": {"server": sb.cluster.server,
            "certificate-authority": Env::get().ca_file}}],
        "users": [{"name": "sa", "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "c", "user": "sa"}}],
    }))
    .unwrap();
    fs_err::write(&file, text).unwrap();
    file
}

/// `addonctl` of the sandbox acting with `kubeconfig`.
fn command_with(sb: &Sandbox, kubeconfig: &Path, registries: &[&TestAddon]) -> Command {
    let mut command = Command::new(assert_cmd::cargo::cargo_bin("addonctl"));
    command
        .env_remove("KUBECONFIG")
        .env_remove("KUBEVELA_SYSTEM_NAMESPACE")
        .env_remove("ADDONCTL_ENGINE")
        .env("NO_COLOR", "1")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["--system-namespace", sb.ns(), "--engine", "direct"]);
    for addon in registries {
        command.arg("--registry-dir").arg(addon.path());
    }
    command
}

/// Binds `role` (a `kind`: Role or ClusterRole) to `group` in the sandbox's namespace.
async fn bind_group(sb: &Sandbox, name: &str, kind: &str, role: &str, group: &str) {
    sb.api()
        .apply(
            &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": {"name": name, "namespace": sb.ns()},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
                    "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": group}]}),
            sb.ns(),
        )
        .await
        .unwrap();
}

/// Waits (bounded) until the holder of `kubeconfig` may (or may not) create addons in the
/// sandbox's namespace, as the API server's authorizer says.
async fn until_may_declare(sb: &Sandbox, kubeconfig: &Path, may: bool) {
    let caller = addonctl::cluster::Cluster::connect(&addonctl::cluster::ConnectOptions {
        kubeconfig: Some(kubeconfig.to_path_buf()),
        ..addonctl::cluster::ConnectOptions::default()
    })
    .await
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while caller
        .can_i("create", "addonctl.io", "addons", Some(sb.ns()))
        .await
        .unwrap()
        != may
    {
        assert!(Instant::now() < deadline, "the binding is not effective");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // And that they may read the state the server reads.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !caller
        .can_i("watch", "", "secrets", Some(sb.ns()))
        .await
        .unwrap()
    {
        assert!(
            Instant::now() < deadline,
            "the read binding is not effective"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_system_addon_is_seen_only_through_a_group_that_may_declare_addons() {
    let hidden = config_addon("serve-hidden", "system, demo");
    let open = config_addon("serve-open", "demo");
    let sb = Sandbox::without_kubevela()
        .await
        .direct()
        .registries(&[&hidden, &open]);
    sb.api()
        .create_if_missing(&json!({"apiVersion": "v1", "kind": "Namespace",
                                   "metadata": {"name": sb.ns()}}))
        .await
        .unwrap();
    // A ServiceAccount of another namespace reads addonctl's state through its namespace's
    // group, bound to the shipped read-only ClusterRole; it may not declare addons.
    let callers = sb.other_namespace("callers").await;
    let group = format!("system:serviceaccounts:{callers}");
    for role in addonctl::apply::access::roles() {
        sb.api().apply(&role, sb.ns()).await.unwrap();
    }
    bind_group(
        &sb,
        "callers-read",
        "ClusterRole",
        "addonctl-viewer",
        &group,
    )
    .await;
    let token = token_of(&sb, &callers, "reader").await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = kubeconfig_with(&sb, dir.path(), &token);
    until_may_declare(&sb, &kubeconfig, false).await;

    let reader = serve(command_with(&sb, &kubeconfig, &[&hidden, &open]));
    let admin = serve(sb.command());
    let (status, list) = reader.get("/api/v1/addons").await;
    assert_eq!(status, 200, "{list}");
    assert!(names(&list).contains(&"serve-open".to_owned()), "{list}");
    assert!(!list.to_string().contains("serve-hidden"), "{list}");
    for search in [
        "?search=serve",
        "?tag=system",
        "?tag=demo",
        "?registry=serve-hidden",
    ] {
        let (_, found) = reader.get(&format!("/api/v1/addons{search}")).await;
        assert!(
            !found.to_string().contains("serve-hidden"),
            "{search}: {found}"
        );
    }
    let (_, admin_list) = admin.get("/api/v1/addons?tag=system").await;
    assert_eq!(names(&admin_list), ["serve-hidden"], "{admin_list}");

    for path in ["", "/status", "/history", "/values", "/drift"] {
        let (status, body) = reader
            .get(&format!("/api/v1/addons/serve-hidden{path}"))
            .await;
        assert_eq!(status, 404, "{path}: {body}");
        assert!(!body.to_string().contains("system"), "{path}: {body}");
    }
    for action in ["enable", "upgrade", "disable"] {
        let (status, body) = reader
            .post(
                "/api/v1/plans",
                json!({"action": action, "addon": "serve-hidden"}),
            )
            .await;
        assert_eq!(status, 404, "{action}: {body}");
    }

    // Events about it do not reach the reader's stream; those of an open addon do.
    let mut reader_events = reader.events().await;
    let mut admin_events = admin.events().await;
    sb.cli().args(["enable", "serve-hidden"]).assert().success();
    admin_events
        .until(
            Duration::from_secs(30),
            "the admin's event of serve-hidden",
            |e| e["addon"] == "serve-hidden",
        )
        .await;
    sb.cli().args(["enable", "serve-open"]).assert().success();
    reader_events
        .until(
            Duration::from_secs(30),
            "the reader's event of serve-open",
            |e| e["addon"] == "serve-open",
        )
        .await;
    // The stream delivers in order: the system addon's change came first and was filtered.
    assert!(
        !reader_events
            .seen
            .iter()
            .any(|e| e.to_string().contains("serve-hidden")),
        "{:?}",
        reader_events.seen
    );
    let (status, _) = reader.get("/api/v1/addons/serve-hidden/status").await;
    assert_eq!(status, 404);
    drop(reader_events);
    drop(reader);

    // Granted through the same group, with a Role that may declare addons: seen everywhere.
    sb.api()
        .apply(
            &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                    "metadata": {"name": "declare", "namespace": sb.ns()},
                    "rules": [{"apiGroups": ["addonctl.io"], "resources": ["addons"], "verbs": ["create"]}]}),
            sb.ns(),
        )
        .await
        .unwrap();
    bind_group(&sb, "callers-declare", "Role", "declare", &group).await;
    until_may_declare(&sb, &kubeconfig, true).await;
    let granted = serve(command_with(&sb, &kubeconfig, &[&hidden, &open]));
    let (_, list) = granted.get("/api/v1/addons").await;
    let hidden_item = list["addons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "serve-hidden")
        .cloned()
        .unwrap_or_else(|| panic!("granted, it is listed: {list}"));
    assert_eq!(hidden_item["system"], true);
    for path in ["", "/status", "/history", "/drift"] {
        let (status, body) = granted
            .get(&format!("/api/v1/addons/serve-hidden{path}"))
            .await;
        assert_eq!(status, 200, "{path}: {body}");
    }
    let (status, body) = granted
        .post(
            "/api/v1/plans",
            json!({"action": "disable", "addon": "serve-hidden"}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let mut granted_events = granted.events().await;
    sb.cli()
        .args(["disable", "serve-hidden"])
        .assert()
        .success();
    granted_events
        .until(
            Duration::from_secs(30),
            "the granted event of serve-hidden",
            |e| e["addon"] == "serve-hidden",
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_answer_carries_a_registry_credential() {
    const TOKEN: &str = "s3cr3t-registry-token-5b1f";
    const PASSWORD: &str = "pa55-in-url-9c2e";
    const POSTED: &str = "posted-token-77aa";
    let sb = Sandbox::without_kubevela().await.direct();
    sb.cli()
        .args([
            "registry",
            "add",
            "with-token",
            "--type",
            "helm",
            "--endpoint",
            "http://127.0.0.1:9/charts",
            "--token",
            TOKEN,
            "--no-validate",
        ])
        .assert()
        .success();
    sb.cli()
        .args([
            "registry",
            "add",
            "in-url",
            "--type",
            "helm",
            "--endpoint",
            &format!("http://someone:{PASSWORD}@127.0.0.1:9/charts"),
            "--no-validate",
        ])
        .assert()
        .success();
    let server = serve(sb.command());
    let mut answers = Vec::new();
    for path in [
        "/api/v1/registries",
        "/api/v1/addons",
        "/api/v1/addons?registry=with-token",
        "/api/v1/addons?registry=in-url",
        "/api/v1/addons/uptime-beacon",
        "/api/v1/openapi.json",
    ] {
        let (status, body) = server.get(path).await;
        // A registry that cannot be reached, asked for alone, is unavailable (503).
        assert!(
            status < 500 || (status == 503 && body["code"] == "unavailable"),
            "{path}: {status} {body}"
        );
        answers.push((path.to_owned(), body.to_string()));
    }
    let (status, registries) = server.get("/api/v1/registries").await;
    assert_eq!(status, 200);
    let listed: Vec<&str> = registries
        .as_array()
        .unwrap_or_else(|| panic!("registries: {registries}"))
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert!(
        listed.contains(&"with-token") && listed.contains(&"in-url"),
        "{registries}"
    );
    // Through the API too: a registry added with a token answers without it.
    for path in ["/api/v1/registries?validate=true", "/api/v1/registries"] {
        let (status, body) = server
            .post(
                path,
                json!({"name": "posted", "type": "helm",
                       "endpoint": "http://127.0.0.1:9/posted", "token": POSTED}),
            )
            .await;
        assert!(status < 500, "{path}: {status} {body}");
        answers.push((format!("POST {path}"), body.to_string()));
    }
    let (_, after) = server.get("/api/v1/registries").await;
    answers.push(("/api/v1/registries after".to_owned(), after.to_string()));
    for (path, body) in &answers {
        for secret in [TOKEN, PASSWORD, POSTED] {
            assert!(
                !body.contains(secret),
                "{path} answers a credential: {body}"
            );
        }
    }
}

/// schemathesis, as `scripts/test.sh` installs it (or `$ADDONCTL_SCHEMATHESIS`).
fn schemathesis() -> Option<std::path::PathBuf> {
    let installed = std::env::var_os("ADDONCTL_SCHEMATHESIS")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|home| {
                Path::new(&home).join(".cache/addonctl/schemathesis-4.32.5/bin/schemathesis")
            })
        })
        .filter(|p| p.is_file());
    if installed.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "the API fuzz run needs schemathesis (scripts/test.sh installs it from PyPI)"
        );
        eprintln!("skipped: no schemathesis (scripts/test.sh installs it from PyPI)");
    }
    installed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_fuzzed_from_the_committed_document_never_answers_a_server_error() {
    const LIMIT: Duration = Duration::from_secs(150);
    let Some(schemathesis) = schemathesis() else {
        return;
    };
    let sb = Sandbox::without_kubevela().await.direct();
    let server = serve(sb.command());
    let reports = tempfile::tempdir().unwrap();
    let (log, errors) = (
        reports.path().join("out.log"),
        reports.path().join("err.log"),
    );
    let mut child = Command::new(schemathesis)
        .arg("run")
        .arg(crate::support::root().join("docs/openapi.json"))
        .args(["--url", &server.base])
        .args([
            "-H",
            &format!("Authorization: Bearer {}", server.token.as_deref().unwrap()),
        ])
        .args(["-H", &format!("Origin: {}", server.base)])
        .args(["--checks", "not_a_server_error"])
        .args(["--phases", "examples,coverage,fuzzing"])
        .args(["--max-examples", "15", "--max-time", "75", "--seed", "1"])
        .args(["--request-timeout", "30", "--workers", "1"])
        // The event stream never ends: it has its own tests.
        .args(["--exclude-path", "/api/v1/events"])
        .args(["--generation-with-security-parameters", "false"])
        .args(["--generation-database", "none", "--no-color"])
        .arg("--report-dir")
        .arg(reports.path())
        .current_dir(reports.path())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(&errors).unwrap())
        .spawn()
        .expect("schemathesis starts");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("schemathesis ran longer than {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let output = format!(
        "{}{}",
        fs_err::read_to_string(&log).unwrap_or_default(),
        fs_err::read_to_string(&errors).unwrap_or_default()
    );
    eprintln!("schemathesis ran {:?}", started.elapsed());
    // Its report's end: the failures with how to reproduce them, and the summary.
    let tail: String = {
        let chars: Vec<char> = output.chars().collect();
        chars[chars.len().saturating_sub(12_000)..].iter().collect()
    };
    assert!(
        status.success(),
        "schemathesis found a server error (or could not run):\n{tail}"
    );
    assert!(
        !output.contains("Server error"),
        "schemathesis reports a server error:\n{tail}"
    );
    // The server still answers.
    let (status, _) = server.get("/api/v1/addons").await;
    assert_eq!(status, 200);
}
