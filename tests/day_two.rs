//! Day-two commands against the real API servers (see `support::k8s`): one phase for `list`,
//! `status` and `-o json`; `list --installed`; ready, not-ready and missing objects; `wait`;
//! `status --watch`; `list` and `render` without a cluster; `render` of a stored registry; the
//! warning for a `clusters` argument the template does not use. Fixture addons deploy with the
//! direct engine to the control plane itself (`local`), into the sandbox's namespace.

use std::io::{BufRead as _, BufReader, Read};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::controller::wait_for;
use crate::support::builders::TestAddon;
use crate::support::fixture_registry;
use crate::support::k8s::{hold_pods_on, release_pods_on, Env, Kind, Sandbox, HELD_POOL_RHAI};

/// An addon `name` at 1.0.0: a Deployment `<name>` (1 replica) and a ConfigMap
/// `<name>-settings` in the system namespace, without a topology (so: `local`). The Deployment's
/// pods are held in the namespace's pool until the test releases them ([`make_ready`]).
fn workload_addon(name: &str) -> TestAddon {
    workload_addon_in(name, "ns")
}

/// [`workload_addon`] with its pods held in the pool `<namespace>-<name>` of their own, which
/// releasing the namespace's pool leaves held.
fn workload_addon_in_own_pool(name: &str) -> TestAddon {
    workload_addon_in(name, "`${ns}-${addon}`")
}

/// [`workload_addon`] with its pods held in the pool the Rhai expression `pool` names.
fn workload_addon_in(name: &str, pool: &str) -> TestAddon {
    let template = r#"let ns = context.namespace;
let addon = context.metadata.name;
let objects = [
    #{ apiVersion: "apps/v1", kind: "Deployment", metadata: #{ name: addon, namespace: ns },
       spec: #{ replicas: 1, selector: #{ matchLabels: #{ app: addon } },
                template: #{ metadata: #{ labels: #{ app: addon } },
                             spec: #{ nodeSelector: held_pool(POOL),
                                      containers: [#{ name: "main", image: "registry.example/app:1" }] } } } },
    #{ apiVersion: "v1", kind: "ConfigMap", metadata: #{ name: `${addon}-settings`, namespace: ns },
       data: #{ key: "value" } },
];
#{ output: application(#{ components: [k8s_objects(addon, objects)] }) }
"#;
    let template = format!("{HELD_POOL_RHAI}{}", template.replace("POOL", pool));
    TestAddon::new(name)
        .file(
            "metadata.yaml",
            &format!("name: {name}\nversion: 1.0.0\ndescription: Fixture addon {name}\n"),
        )
        .file("parameter.rhai", "#{\n    replicas: pint(1),\n}\n")
        .file("template.rhai", &template)
}

fn run(cmd: &mut assert_cmd::Command) -> std::process::Output {
    cmd.output().unwrap()
}

fn stdout_json(output: &std::process::Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

fn stderr_of(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Releases the held pods of the sandbox's namespace: the cluster's controllers, scheduler and
/// kwok make its Deployments ready.
async fn make_ready(sb: &Sandbox) {
    release_pods_on(sb.api(), sb.ns()).await;
}

/// Polls `check` every 200 ms until it holds, at most 30 s; panics with `what` and the last
/// value otherwise.
async fn eventually<T: std::fmt::Debug>(
    what: &str,
    mut read: impl FnMut() -> T,
    check: impl Fn(&T) -> bool,
) -> T {
    let started = Instant::now();
    loop {
        let value = tokio::task::block_in_place(&mut read);
        if check(&value) {
            return value;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{what}: not within 30 s; last: {value:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `(phase, installedVersion)` of `addon` in `list -o json` and in `status -o json`.
fn phases(sb: &Sandbox, addon: &str) -> ((Value, Value), (Value, Value)) {
    let listed = stdout_json(&run(sb.cli().args(["list", "-o", "json"])));
    let row = listed["addons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == addon)
        .unwrap_or_else(|| panic!("no `{addon}` in {listed}"))
        .clone();
    assert!(row.get("status").is_none(), "no prose status: {row}");
    let status = stdout_json(&run(sb.cli().args(["status", addon, "-o", "json"])));
    (
        (row["phase"].clone(), row["installedVersion"].clone()),
        (status["phase"].clone(), status["installedVersion"].clone()),
    )
}

/// The `state` of each object of the first cluster in `status -o json`, by kind.
fn states(sb: &Sandbox, addon: &str) -> Vec<(String, String)> {
    let status = stdout_json(&run(sb.cli().args(["status", addon, "-o", "json"])));
    status["resources"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["kind"].as_str().unwrap().to_owned(),
                r["state"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn list_and_status_agree_on_the_phase_and_mark_not_ready_and_missing_objects() {
    let web = workload_addon("web");
    let sb = Sandbox::with_kubevela().await.direct().registries(&[&web]);
    let output = run(sb.cli().args(["enable", "web"]));
    assert!(output.status.success(), "{}", stderr_of(&output));

    let enabling = (json!("enabling"), json!("1.0.0"));
    assert_eq!(phases(&sb, "web"), (enabling.clone(), enabling));
    assert_eq!(
        states(&sb, "web"),
        [
            ("Deployment".to_owned(), "notReady".to_owned()),
            ("ConfigMap".to_owned(), "ready".to_owned())
        ]
    );
    let installed = stdout_json(&run(sb.cli().args(["list", "--installed", "-o", "json"])));
    let names: Vec<&str> = installed["addons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["web"], "{installed}");
    let all = stdout_json(&run(sb.cli().args(["list", "-o", "json"])));
    assert!(all["addons"].as_array().unwrap().len() > 1, "{all}");
    assert!(
        all["addons"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["phase"] == "disabled" && r.get("installedVersion").is_none()),
        "{all}"
    );

    make_ready(&sb).await;
    let enabled = (json!("enabled"), json!("1.0.0"));
    let both = (enabled.clone(), enabled);
    eventually("`web` enabled", || phases(&sb, "web"), |p| *p == both).await;

    sb.api()
        .delete(&Kind::CONFIG_MAP.gvk(), Some(sb.ns()), "web-settings")
        .await
        .unwrap();
    assert_eq!(
        states(&sb, "web"),
        [
            ("Deployment".to_owned(), "ready".to_owned()),
            ("ConfigMap".to_owned(), "missing".to_owned())
        ]
    );
    let text = run(sb.cli().args(["status", "web"]));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("✓ Deployment"), "{text}");
    assert!(
        text.contains(&format!("✗ ConfigMap {}/web-settings (missing)", sb.ns())),
        "{text}"
    );
}

/// Starts `cmd` in the background with stdout and stderr piped.
fn spawn(mut cmd: std::process::Command) -> Child {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Reads `reader`'s lines until one contains `wanted` and returns what it read (blocking: the
/// command's own timeout bounds it).
fn read_until<R: Read>(reader: &mut BufReader<R>, wanted: &str) -> String {
    let mut seen = String::new();
    tokio::task::block_in_place(|| loop {
        let mut line = String::new();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "ended before `{wanted}`:\n{seen}"
        );
        seen.push_str(&line);
        if line.contains(wanted) {
            return seen;
        }
    })
}

/// The rest of `reader`, once its command has ended.
fn rest<R: Read>(mut reader: BufReader<R>) -> String {
    let mut text = String::new();
    reader.read_to_string(&mut text).unwrap();
    text
}

/// Waits up to `limit` for `child` to end; kills it and panics otherwise.
async fn finish(mut child: Child, limit: Duration) -> std::process::Output {
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            panic!("still running after {limit:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    child.wait_with_output().unwrap()
}

/// A watch of an addon's status is woken by its workloads' changes, not by its pauses: with
/// pauses of ten minutes it still sees a workload become ready (changed between its read and
/// its watch) and become not ready again (changed while it watches).
#[tokio::test(flavor = "multi_thread")]
async fn a_status_watch_wakes_when_a_workload_changes_not_when_its_pause_ends() {
    let woken = workload_addon("woken");
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&woken]);
    let output = run(sb.cli().args(["enable", "woken"]));
    assert!(output.status.success(), "{}", stderr_of(&output));
    let mut watch =
        addonctl::status::wait::Watch::new(sb.ctx.state(), "woken").every(Duration::from_secs(600));
    let ready =
        |status: &addonctl::status::Status| (status.ready_workload_count, status.workload_count);
    let first = watch.next().await.unwrap();
    assert_eq!(ready(&first), (Some(0), Some(1)));

    make_ready(&sb).await;
    // Ready before the watch looks again: changed between its read and its watch.
    wait_for("`woken` ready", || async {
        let woken = sb.get(Kind::DEPLOYMENT, "woken").await?;
        (woken["status"]["readyReplicas"] == 1).then_some(())
    })
    .await;
    let next = tokio::time::timeout(Duration::from_secs(30), watch.next())
        .await
        .expect("the change made before the watch started wakes it")
        .unwrap();
    assert_eq!(ready(&next), (Some(1), Some(1)));

    let later = {
        let api = sb.api().clone();
        let ns = sb.ns().to_owned();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(500)).await;
            hold_pods_on(&api, &ns).await;
        })
    };
    let next = tokio::time::timeout(Duration::from_secs(30), watch.next())
        .await
        .expect("the change made while it watches wakes it")
        .unwrap();
    later.await.unwrap();
    assert_eq!(ready(&next), (Some(0), Some(1)));
}

/// `disable --wait` returns once KubeVela's Application is gone, not when it was asked to
/// go: while KubeVela's finalizer holds it, the addon still counts as installed, and the wait
/// times out saying so.
#[tokio::test(flavor = "multi_thread")]
async fn disable_wait_returns_once_kubevelas_application_is_gone() {
    let held = workload_addon("held");
    let sb = Sandbox::with_kubevela().await.registries(&[&held]);
    let finalizer = |finalizers: Value| {
        json!({"apiVersion": "core.oam.dev/v1beta1", "kind": "Application",
               "metadata": {"name": "addon-held", "finalizers": finalizers}})
    };
    let output = run(sb.cli().args(["enable", "held"]));
    assert!(output.status.success(), "{}", stderr_of(&output));
    // KubeVela's controller holds the Application while it cleans up.
    sb.apply_as(
        "kubevela",
        finalizer(json!(["app.oam.dev/resource-tracker-finalizer"])),
    )
    .await;

    let output = run(sb
        .cli()
        .args(["disable", "held", "--wait", "--timeout", "2"]));
    let stderr = stderr_of(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("addon `held` is still") && stderr.contains("(waiting for disabled)"),
        "{stderr}"
    );
    assert!(sb.get(Kind::APPLICATION, "addon-held").await.is_some());

    let mut wait = sb.command();
    wait.args(["disable", "held", "--wait", "--timeout", "60"]);
    let mut child = spawn(wait);
    let mut progress = BufReader::new(child.stderr.take().unwrap());
    let mut stderr = read_until(&mut progress, "waiting for disabled");
    sb.apply_as("kubevela", finalizer(json!([]))).await;
    let output = finish(child, Duration::from_secs(30)).await;
    stderr.push_str(&rest(progress));
    assert!(output.status.success(), "{stderr}");
    assert!(sb.get(Kind::APPLICATION, "addon-held").await.is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn wait_returns_when_the_workloads_are_ready_or_gone_and_times_out_otherwise() {
    let ready = workload_addon("ready");
    // Its pods wait in a pool of their own, never released.
    let stuck = workload_addon_in_own_pool("stuck");
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&ready, &stuck]);
    for addon in ["ready", "stuck"] {
        let output = run(sb.cli().args(["enable", addon]));
        assert!(output.status.success(), "{}", stderr_of(&output));
    }

    let mut wait = sb.command();
    wait.args(["wait", "ready", "--for", "enabled", "--timeout", "60s"]);
    let mut child = spawn(wait);
    let mut progress = BufReader::new(child.stderr.take().unwrap());
    let mut stderr = read_until(&mut progress, "local: 0/1 workloads ready");
    make_ready(&sb).await;
    let output = finish(child, Duration::from_secs(30)).await;
    stderr.push_str(&rest(progress));
    assert!(output.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("addon `ready` is enabled (after "),
        "{stdout}"
    );
    assert!(stderr.contains("local: 0/1 workloads ready"), "{stderr}");

    let output = run(sb.cli().args(["wait", "stuck", "--timeout", "2s"]));
    let stderr = stderr_of(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr
            .contains("addon `stuck` is still enabling after 2s (waiting for enabled); not ready:"),
        "{stderr}"
    );
    let why = format!("local: Deployment {}/stuck 0/1 ready", sb.ns());
    assert!(stderr.contains(&why), "no `{why}`:\n{stderr}");

    let mut wait = sb.command();
    wait.args(["wait", "stuck", "--for", "disabled", "--timeout", "60s"]);
    let mut child = spawn(wait);
    let mut progress = BufReader::new(child.stderr.take().unwrap());
    read_until(&mut progress, "`stuck` is enabling; waiting for disabled");
    let output = run(sb.cli().args(["disable", "stuck"]));
    assert!(output.status.success(), "{}", stderr_of(&output));
    let output = finish(child, Duration::from_secs(30)).await;
    assert!(output.status.success(), "{}", stderr_of(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("addon `stuck` is disabled"), "{stdout}");

    for bad in [&["--timeout", "0"][..], &["--for", "running"][..]] {
        let output = run(sb.cli().args(["wait", "ready"]).args(bad));
        assert_eq!(
            output.status.code(),
            Some(2),
            "{bad:?}: {}",
            stderr_of(&output)
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn status_watch_piped_prints_a_line_per_change_and_ends_on_timeout_or_ctrl_c() {
    let watched = workload_addon("watched");
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&watched]);
    let output = run(sb.cli().args(["enable", "watched"]));
    assert!(output.status.success(), "{}", stderr_of(&output));

    let mut watch = sb.command();
    watch.args(["status", "watched", "--watch", "--timeout", "6s"]);
    let mut child = spawn(watch);
    let mut changes = BufReader::new(child.stdout.take().unwrap());
    let mut stdout = read_until(&mut changes, "watched enabling");
    make_ready(&sb).await;
    let output = finish(child, Duration::from_secs(30)).await;
    assert!(output.status.success(), "{}", stderr_of(&output));
    stdout.push_str(&rest(changes));
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "one line per change:\n{stdout}");
    assert!(
        lines[0].ends_with("watched enabling; local: 0/1 workloads ready"),
        "{stdout}"
    );
    assert!(
        lines[1].ends_with("watched enabled; local: 1/1 workloads ready"),
        "{stdout}"
    );

    // Ctrl-C (SIGINT) ends a watch without a timeout, successfully.
    let mut watch = sb.command();
    watch.args(["status", "watched", "--watch"]);
    let mut child = spawn(watch);
    let mut changes = BufReader::new(child.stdout.take().unwrap());
    let first = read_until(&mut changes, "watched");
    assert!(first.contains("watched enabled;"), "{first}");
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = finish(child, Duration::from_secs(10)).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
}

#[tokio::test(flavor = "multi_thread")]
async fn list_and_render_without_a_reachable_cluster_use_the_registries_they_can_read() {
    let dir = tempfile::tempdir().unwrap();
    let (kubeconfig, _) = Env::get().unreachable_kubeconfig(dir.path());
    let offline = || {
        let mut cmd = assert_cmd::Command::cargo_bin("addonctl").unwrap();
        cmd.env_remove("KUBECONFIG")
            .env(
                "ADDONCTL_REGISTRY_FILE",
                dir.path().join("no-registries.json"),
            )
            .env("NO_COLOR", "1")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .arg("--registry-dir")
            .arg(fixture_registry());
        cmd
    };

    let output = run(offline().args(["list", "-o", "json"]));
    let stderr = stderr_of(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("note: no cluster"), "{stderr}");
    let listed = stdout_json(&output);
    let rows = listed["addons"].as_array().unwrap();
    assert!(rows.iter().any(|r| r["name"] == "minimal"), "{listed}");
    assert!(rows.iter().all(|r| r["phase"] == "unknown"), "{listed}");

    // Which addons are installed cannot be told without a cluster.
    let output = run(offline().args(["list", "--installed"]));
    assert_eq!(output.status.code(), Some(1), "{}", stderr_of(&output));

    let output = run(offline().args(["render", "minimal"]));
    let stderr = stderr_of(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("note: no cluster"), "{stderr}");
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("kind: Application"),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn render_reads_an_addon_of_a_stored_registry() {
    let sb = Sandbox::with_kubevela().await;
    let output = run(sb
        .cli()
        .args(["registry", "add", "stored", "--type", "local", "--endpoint"])
        .arg(fixture_registry()));
    assert!(output.status.success(), "{}", stderr_of(&output));

    for reference in ["stored/minimal", "minimal"] {
        let output = run(sb.cli().args(["render", reference, "-o", "json"]));
        let stderr = stderr_of(&output);
        assert!(output.status.success(), "{reference}: {stderr}");
        assert!(!stderr.contains("no cluster"), "{stderr}");
        let list = stdout_json(&output);
        assert!(
            list["items"]
                .as_array()
                .unwrap()
                .iter()
                .any(|o| o["kind"] == "Application" && o["metadata"]["name"] == "addon-minimal"),
            "{list}"
        );
    }
    let output = run(sb.cli().args(["render", "elsewhere/minimal"]));
    assert_eq!(output.status.code(), Some(2), "{}", stderr_of(&output));
}

#[tokio::test(flavor = "multi_thread")]
async fn enable_warns_about_clusters_its_template_does_not_reach_and_status_shows_the_targets() {
    let web = workload_addon("local-only");
    let sb = Sandbox::with_kubevela().await.direct().registries(&[&web]);
    sb.join("m1", Env::get().managed_n(1), &[]).await;

    let output = run(sb
        .cli()
        .args(["enable", "local-only", "--clusters", "m1", "-o", "json"]));
    let stderr = stderr_of(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "addon `local-only` does not reach cluster `m1` named in its `clusters` argument"
        ),
        "{stderr}"
    );
    let reports = stdout_json(&output);
    assert_eq!(reports[0]["untargetedClusters"], json!(["m1"]), "{reports}");

    let status = stdout_json(&run(sb.cli().args(["status", "local-only", "-o", "json"])));
    assert_eq!(status["clusters"], json!(["local"]), "{status}");
}

#[tokio::test(flavor = "multi_thread")]
async fn enable_evaluates_a_label_selector_against_the_joined_clusters_labels() {
    // The topology selects clusters by label and ignores the `clusters` argument.
    let template = r#"let ns = context.namespace;
let addon = context.metadata.name;
let objects = [
    #{ apiVersion: "v1", kind: "ConfigMap", metadata: #{ name: `${addon}-settings`, namespace: ns },
       data: #{ key: "value" } },
];
#{ output: application(#{
    components: [k8s_objects(addon, objects)],
    policies: [#{ name: "eu", type: "topology", properties: #{ clusterLabelSelector: #{ region: "eu" } } }],
}) }
"#;
    let addon = TestAddon::new("eu-only")
        .file(
            "metadata.yaml",
            "name: eu-only\nversion: 1.0.0\ndescription: Fixture addon eu-only\n",
        )
        .file("parameter.rhai", "#{}\n")
        .file("template.rhai", template);
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&addon]);
    sb.join("m1", Env::get().managed_n(1), &[("region", "eu")])
        .await;
    sb.join("m2", Env::get().managed_n(2), &[("region", "us")])
        .await;

    let output = run(sb
        .cli()
        .args(["enable", "eu-only", "--clusters", "m1,m2", "-o", "json"]));
    let stderr = stderr_of(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "addon `eu-only` does not reach cluster `m2` named in its `clusters` argument"
        ),
        "{stderr}"
    );
    assert_eq!(stderr.matches("does not reach").count(), 1, "{stderr}");
    let reports = stdout_json(&output);
    assert_eq!(reports[0]["untargetedClusters"], json!(["m2"]), "{reports}");
    let status = stdout_json(&run(sb.cli().args(["status", "eu-only", "-o", "json"])));
    assert_eq!(status["clusters"], json!(["m1"]), "{status}");

    // Once m2 carries the label, the selector reaches it: no warning.
    let output = run(sb.cli().args(["cluster", "labels", "m2", "region=eu"]));
    assert!(output.status.success(), "{}", stderr_of(&output));
    let output = run(sb
        .cli()
        .args(["enable", "eu-only", "--clusters", "m1,m2", "-o", "json"]));
    let stderr = stderr_of(&output);
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("does not reach"), "{stderr}");
    let reports = stdout_json(&output);
    assert!(
        reports[0].get("untargetedClusters").is_none()
            || reports[0]["untargetedClusters"] == json!([]),
        "{reports}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn wait_on_ctrl_c_exits_130_saying_nothing_was_changed() {
    let pending = workload_addon("pending");
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&pending]);
    let output = run(sb.cli().args(["enable", "pending"]));
    assert!(output.status.success(), "{}", stderr_of(&output));

    let mut wait = sb.command();
    wait.args(["wait", "pending", "--for", "enabled", "--timeout", "60s"]);
    let mut child = spawn(wait);
    let mut progress = BufReader::new(child.stderr.take().unwrap());
    // Waiting has begun (the first reading is on stderr): Ctrl-C now.
    let mut stderr = read_until(&mut progress, "local: 0/1 workloads ready");
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = finish(child, Duration::from_secs(10)).await;
    stderr.push_str(&rest(progress));
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("interrupted after ")
            && stderr.contains("addon `pending` is not enabled yet; nothing was changed"),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&output.stdout).is_empty());
    // Nothing was changed: the addon is still there, still waiting for its workload.
    let status = stdout_json(&run(sb.cli().args(["status", "pending", "-o", "json"])));
    assert_eq!(status["phase"], "enabling", "{status}");
}
