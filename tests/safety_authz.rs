//! Control plane first, locks, preconditions and timeouts, against the real API servers (see
//! `support::k8s`): the non-admin user gets exactly the role a test binds with a RoleBinding in
//! the test's own system namespace; concurrent commands run as real `addonctl` processes.

use std::io::Read as _;
use std::net::TcpListener;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use addonctl::apply::access::{self, Role};
use addonctl::cluster::Cluster;
use base64::Engine as _;
use predicates::prelude::*;
use serde_json::{json, Value};

use crate::support::builders::TestAddon;
use crate::support::k8s::{get_on, list_on, ClusterEnv, Env, Kind, Sandbox};

/// The label every fixture object carries: the addon's name.
const LABEL: &str = "addonctl.test/addon";
/// How long a concurrent `addonctl` may run before the test gives up on it.
const PROCESS_LIMIT: Duration = Duration::from_secs(180);

/// An addon `name` for the direct engine: a ConfigMap `<name>-settings` in the sandbox's
/// namespace on every cluster of the `clusters` argument (made by the test: disabling an addon
/// that created it would delete it, and without kube-controller-manager it would stay
/// terminating), plus one on the control plane.
fn addon(name: &str) -> TestAddon {
    let template = format!(
        "let ns = context.namespace;\n\
         let labels = #{{ \"{LABEL}\": \"{name}\" }};\n\
         let objects = [\n\
           #{{ apiVersion: \"v1\", kind: \"ConfigMap\", metadata: #{{ name: \"{name}-settings\", labels: labels }}, data: #{{ a: \"1\" }} }},\n\
         ];\n\
         #{{ output: application(#{{ components: [k8s_objects(\"{name}\", objects)], policies: [topology(\"where\", parameter.clusters)] }}),\n\
            outputs: #{{ local: #{{ apiVersion: \"v1\", kind: \"ConfigMap\", metadata: #{{ name: \"{name}-local\", labels: labels }}, data: #{{ b: \"2\" }} }} }} }}\n"
    );
    TestAddon::new(name)
        .file(
            "metadata.yaml",
            &format!("name: {name}\nversion: 1.0.0\ndescription: Fixture addon {name}\n"),
        )
        .file(
            "parameter.rhai",
            "#{\n    clusters: list(string()).optional(),\n}\n",
        )
        .file("template.rhai", &template)
}

/// A sandbox on the control plane (direct engine) with `managed-2` joined as `east`.
async fn sandbox(addons: &[&TestAddon]) -> Sandbox {
    let sb = Sandbox::with_kubevela().await.registries(addons).direct();
    sb.join("east", east(), &[]).await;
    east()
        .admin()
        .await
        .create_if_missing(&Kind::NAMESPACE.object(json!({"name": sb.ns()})))
        .await
        .unwrap();
    sb
}

fn east() -> &'static ClusterEnv {
    Env::get().managed_n(2)
}

/// Applies the shipped ClusterRoles (as `addonctl rbac` prints them) and binds `role` to the
/// non-admin user in the sandbox's system namespace only.
async fn bind(sb: &Sandbox, role: Role) {
    for cluster_role in access::roles() {
        sb.api().apply(&cluster_role, sb.ns()).await.unwrap();
    }
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": format!("user-{}", role.name()), "namespace": sb.ns()},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role.name()},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": sb.cluster.user_name}],
    });
    sb.api().apply(&binding, sb.ns()).await.unwrap();
    // RBAC is cached briefly by the authorizer: wait until the binding is seen.
    let user = Cluster::connect(&addonctl::cluster::ConnectOptions {
        kubeconfig: Some(sb.cluster.user_kubeconfig.clone()),
        ..addonctl::cluster::ConnectOptions::default()
    })
    .await
    .unwrap();
    let started = Instant::now();
    while !user
        .can_i("list", "", "secrets", Some(sb.ns()))
        .await
        .unwrap()
    {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "binding not effective"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The ConfigMaps of `addon` in the sandbox's namespace on `east`.
async fn on_east(sb: &Sandbox, addon: &str) -> Vec<String> {
    let cluster = east().admin().await;
    list_on(&cluster, Kind::CONFIG_MAP, Some(sb.ns()))
        .await
        .into_iter()
        .filter(|o| o["metadata"]["labels"][LABEL] == addon)
        .filter(|o| o["metadata"]["deletionTimestamp"].is_null())
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

fn stderr_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Waits for a child within [`PROCESS_LIMIT`] (killing it past that) and returns its output.
fn finish(mut child: Child) -> Output {
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if started.elapsed() > PROCESS_LIMIT {
            let _ = child.kill();
            panic!("addonctl ran longer than {PROCESS_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn spawn(mut command: std::process::Command, args: &[&str]) -> Child {
    command
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_user_changes_nothing_anywhere_and_is_told_the_permission_and_the_role() {
    let (kept, fresh) = (addon("kept"), addon("fresh"));
    let sb = sandbox(&[&kept, &fresh]).await;
    sb.cli()
        .args(["enable", "kept", "--clusters", "east"])
        .assert()
        .success();
    bind(&sb, Role::Viewer).await;
    let before = sb.resource_versions().await;

    sb.cli_as_user()
        .args(["disable", "kept"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "`delete` `secrets` in namespace `{}` (ClusterRole `addonctl-operator` allows it)",
            sb.ns()
        )))
        .stderr(predicate::str::contains(
            "nothing was changed on any cluster",
        ));
    sb.cli_as_user()
        .args(["enable", "fresh", "--clusters", "east"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "`create` `leases.coordination.k8s.io`",
        ))
        .stderr(predicate::str::contains("addonctl-operator"));
    sb.cli_as_user()
        .args([
            "registry",
            "add",
            "mine",
            "--type",
            "helm",
            "--endpoint",
            "http://127.0.0.1:9/mine",
            "--token",
            "t",
            "--no-validate",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "`create` `configmaps` in namespace `{}` (ClusterRole `addonctl-operator` allows it)",
            sb.ns()
        )));
    sb.cli_as_user()
        .args(["cluster", "labels", "east", "tier=gold"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "`addonctl cluster labels east` needs permissions",
        ));

    assert_eq!(sb.resource_versions().await, before);
    assert_eq!(on_east(&sb, "kept").await, ["kept-settings"]);
    assert!(on_east(&sb, "fresh").await.is_empty());
    assert!(sb.get(Kind::SECRET, "addon-record-fresh").await.is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_user_with_rights_only_on_managed_clusters_changes_nothing() {
    let kept = addon("kept");
    let sb = sandbox(&[&kept]).await;
    sb.cli()
        .args(["enable", "kept", "--clusters", "east"])
        .assert()
        .success();
    // Full rights on `east` (in the sandbox's namespace there), none on the control plane.
    let east_admin = east().admin().await;
    east_admin
        .apply(
            &json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": "user-admin", "namespace": sb.ns()},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": east().user_name}],
            }),
            sb.ns(),
        )
        .await
        .unwrap();
    let before = sb.resource_versions().await;

    for args in [["disable", "kept"], ["enable", "kept"]] {
        sb.cli_as_user()
            .args(args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(format!(
                "`list` `secrets` in namespace `{}` (ClusterRole `addonctl-viewer` allows it)",
                sb.ns()
            )))
            .stderr(predicate::str::contains(
                "ClusterRole `addonctl-operator` in the system namespace",
            ));
    }

    assert_eq!(sb.resource_versions().await, before);
    assert_eq!(on_east(&sb, "kept").await, ["kept-settings"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn with_addonctl_operator_bound_the_user_enables_and_disables() {
    let shared = addon("shared");
    let sb = sandbox(&[&shared]).await;
    bind(&sb, Role::Operator).await;

    sb.cli_as_user()
        .args(["enable", "shared", "--clusters", "east"])
        .assert()
        .success();
    assert_eq!(on_east(&sb, "shared").await, ["shared-settings"]);
    assert!(sb.get(Kind::CONFIG_MAP, "shared-local").await.is_some());
    assert!(
        sb.get(Kind::LEASE, "addonctl-lock-shared").await.is_none(),
        "the lock is released"
    );

    sb.cli_as_user()
        .args(["disable", "shared"])
        .assert()
        .success();
    assert!(on_east(&sb, "shared").await.is_empty());
    assert!(sb.get(Kind::SECRET, "addon-record-shared").await.is_none());
}

/// Checks that the final state of `addon` is one a serial run leaves: enabled with every
/// recorded object present, or disabled with none left.
async fn assert_serial_outcome(sb: &Sandbox, addon: &str) -> bool {
    let enabled = sb
        .get(Kind::SECRET, &format!("addon-record-{addon}"))
        .await
        .is_some();
    let local = sb.get(Kind::CONFIG_MAP, &format!("{addon}-local")).await;
    let remote = on_east(sb, addon).await;
    if enabled {
        let record = sb.record(addon).await;
        assert!(record.pending.is_none(), "{record:?}");
        assert!(local.is_some());
        assert_eq!(remote, [format!("{addon}-settings")]);
    } else {
        assert!(
            local.is_none_or(|o| !o["metadata"]["deletionTimestamp"].is_null()),
            "orphan on the control plane"
        );
        assert!(remote.is_empty(), "orphans on `east`: {remote:?}");
    }
    enabled
}

/// A loser of a race: refused with the lock error (a conflict, exit 2, as a lock that kept
/// changing), naming the holder.
fn assert_lost_the_lock(output: &Output, addon: &str) {
    let stderr = stderr_of(output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("`{addon}` is being changed by `addonctl ")),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_enables_and_an_enable_during_a_disable_end_as_some_serial_order_would() {
    let racy = addon("racy");
    let sb = sandbox(&[&racy]).await;

    let enables: Vec<Child> = (0..3)
        .map(|_| spawn(sb.command(), &["enable", "racy", "--clusters", "east"]))
        .collect();
    let outputs: Vec<Output> = enables.into_iter().map(finish).collect();
    let winners = outputs.iter().filter(|o| o.status.success()).count();
    assert!(
        winners >= 1,
        "{:?}",
        outputs.iter().map(stderr_of).collect::<Vec<_>>()
    );
    for lost in outputs.iter().filter(|o| !o.status.success()) {
        assert_lost_the_lock(lost, "racy");
    }
    assert!(assert_serial_outcome(&sb, "racy").await);

    for round in 0..3 {
        let disable = spawn(sb.command(), &["disable", "racy"]);
        let enable = spawn(sb.command(), &["enable", "racy", "--clusters", "east"]);
        for output in [finish(disable), finish(enable)] {
            if !output.status.success() {
                assert_lost_the_lock(&output, "racy");
            }
        }
        if !assert_serial_outcome(&sb, "racy").await {
            eprintln!("round {round}: disabled last");
            sb.cli()
                .args(["enable", "racy", "--clusters", "east"])
                .assert()
                .success();
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_live_lease_refuses_with_its_holder_force_unlock_takes_it_and_a_stale_one_is_taken_over()
{
    let locked = addon("locked");
    let sb = sandbox(&[&locked]).await;
    let lease = |renewed: String| {
        json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "addonctl-lock-locked", "namespace": sb.ns()},
            "spec": {
                "holderIdentity": "`addonctl enable locked` (pid 1 on elsewhere)",
                "leaseDurationSeconds": 60,
                "acquireTime": renewed,
                "renewTime": renewed,
            },
        })
    };
    let now = k8s_openapi::chrono::Utc::now();
    let stamp = |t: k8s_openapi::chrono::DateTime<k8s_openapi::chrono::Utc>| {
        t.to_rfc3339_opts(k8s_openapi::chrono::SecondsFormat::Micros, true)
    };
    sb.api().apply(&lease(stamp(now)), sb.ns()).await.unwrap();

    sb.cli()
        .args(["enable", "locked", "--clusters", "east"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "`locked` is being changed by `addonctl enable locked` (pid 1 on elsewhere) since {}",
            stamp(now)
        )))
        .stderr(predicate::str::contains("`--force-unlock`"));
    assert!(sb.get(Kind::SECRET, "addon-record-locked").await.is_none());
    assert!(on_east(&sb, "locked").await.is_empty());

    sb.cli()
        .args(["enable", "locked", "--clusters", "east", "--force-unlock"])
        .assert()
        .success();
    assert!(sb.get(Kind::LEASE, "addonctl-lock-locked").await.is_none());

    let stale = now - k8s_openapi::chrono::Duration::minutes(5);
    sb.api().apply(&lease(stamp(stale)), sb.ns()).await.unwrap();
    sb.cli().args(["disable", "locked"]).assert().success();
    assert!(sb.get(Kind::SECRET, "addon-record-locked").await.is_none());
    assert!(on_east(&sb, "locked").await.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_registry_adds_all_land_and_one_name_never_pairs_an_endpoint_with_another_token()
{
    let sb = Sandbox::with_kubevela().await;
    let adds: Vec<Child> = (0..16)
        .map(|i| {
            let name = format!("r{i}");
            let endpoint = format!("http://127.0.0.1:9/{name}");
            let token = format!("token-{name}");
            spawn(
                sb.command(),
                &[
                    "registry",
                    "add",
                    &name,
                    "--type",
                    "helm",
                    "--endpoint",
                    &endpoint,
                    "--token",
                    &token,
                    "--no-validate",
                ],
            )
        })
        .collect();
    for output in adds.into_iter().map(finish) {
        assert!(output.status.success(), "{}", stderr_of(&output));
    }
    let listed = sb
        .cli()
        .args(["registry", "list", "-o", "json"])
        .output()
        .unwrap();
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let text = listed.to_string();
    for i in 0..16 {
        assert!(text.contains(&format!("\"r{i}\"")), "r{i} lost: {text}");
    }

    let same: Vec<Child> = ["a", "b", "c"]
        .iter()
        .map(|side| {
            spawn(
                sb.command(),
                &[
                    "registry",
                    "add",
                    "same",
                    "--type",
                    "helm",
                    "--endpoint",
                    &format!("http://127.0.0.1:9/{side}"),
                    "--token",
                    &format!("token-{side}"),
                    "--no-validate",
                ],
            )
        })
        .collect();
    let outputs: Vec<Output> = same.into_iter().map(finish).collect();
    assert_eq!(outputs.iter().filter(|o| o.status.success()).count(), 1);
    for lost in outputs.iter().filter(|o| !o.status.success()) {
        let stderr = stderr_of(lost);
        assert!(
            stderr.contains("already exists") || stderr.contains("is being changed by"),
            "{stderr}"
        );
    }
    let shown = sb
        .cli()
        .args(["registry", "get", "same", "-o", "json"])
        .output()
        .unwrap();
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    let endpoint = shown.to_string();
    let side = ["a", "b", "c"]
        .into_iter()
        .find(|s| endpoint.contains(&format!("127.0.0.1:9/{s}\"")))
        .unwrap_or_else(|| panic!("{endpoint}"));
    let secret = sb.get(Kind::SECRET, "addon-registry-same").await.unwrap();
    let token = base64::engine::general_purpose::STANDARD
        .decode(secret["data"]["token"].as_str().unwrap())
        .unwrap();
    assert_eq!(String::from_utf8(token).unwrap(), format!("token-{side}"));
}

#[test]
fn a_hung_control_plane_fails_within_the_request_timeout_saying_so_while_waiting() {
    // Accepts connections and never answers.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let held = std::thread::spawn(move || {
        let mut open = Vec::new();
        for stream in listener.incoming().take(8) {
            let Ok(mut stream) = stream else { break };
            let mut buffer = [0u8; 1024];
            let _ = stream.set_read_timeout(Some(Duration::from_millis(10)));
            let _ = stream.read(&mut buffer);
            open.push(stream);
        }
    });
    drop(held);
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let ca = fs_err::read(&Env::get().ca_file).unwrap();
    fs_err::write(
        &kubeconfig,
        serde_json::to_string(&json!({
            "apiVersion": "v1", "kind": "Config", "current-context": "hung",
            "clusters": [{"name": "hung", "cluster": {
                "server": format!("https://127.0.0.1:{port}"),
                "certificate-authority-data": base64::engine::general_purpose::STANDARD.encode(ca),
            }}],
            "users": [{"name": "u", "user": {"token": "t"}}],
            "contexts": [{"name": "hung", "context": {"cluster": "hung", "user": "u"}}],
        }))
        .unwrap(),
    )
    .unwrap();

    let started = Instant::now();
    let output = assert_cmd::Command::cargo_bin("addonctl")
        .unwrap()
        .env_remove("KUBECONFIG")
        .env_remove("ADDONCTL_CLUSTER_TIMEOUT")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["--request-timeout", "5", "status", "anything"])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let elapsed = started.elapsed();

    let stderr = stderr_of(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "waiting for the control plane (https://127.0.0.1:{port}) to answer GET"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "cannot reach cluster `local` at https://127.0.0.1:{port}"
        )),
        "{stderr}"
    );
    // Bounded by the request timeout, not kube's default of ~5 minutes.
    assert!(elapsed < Duration::from_secs(60), "{elapsed:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn cluster_list_as_a_user_without_rights_reads_no_registry() {
    let sb = Sandbox::with_kubevela().await;
    let output = sb.cli_as_user().args(["cluster", "list"]).output().unwrap();
    let stderr = stderr_of(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(!stderr.to_lowercase().contains("registr"), "{stderr}");
    assert!(
        stderr.contains("ClusterRole `addonctl-viewer` allows `list` `secrets`"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cluster_refusing_during_apply_is_a_user_error_like_a_refusal_up_front() {
    let refused = addon("refused");
    let sb = Sandbox::with_kubevela()
        .await
        .registries(&[&refused])
        .direct();
    // `west` is joined with the credentials of the user without rights there.
    sb.track(east());
    addonctl::apply::clusters::join(
        &sb.ctx.applier(),
        "west",
        &east().user_kubeconfig,
        None,
        &std::collections::BTreeMap::new(),
    )
    .await
    .unwrap();

    sb.cli()
        .args(["enable", "refused", "--clusters", "west"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cluster `west` refused"));
    let west = east().admin().await;
    assert!(
        get_on(&west, Kind::CONFIG_MAP, Some(sb.ns()), "refused-settings")
            .await
            .is_none()
    );
}

#[test]
fn rbac_prints_the_three_roles_as_yaml_and_json() {
    let yaml = assert_cmd::Command::cargo_bin("addonctl")
        .unwrap()
        .arg("rbac")
        .output()
        .unwrap();
    assert!(yaml.status.success());
    let text = String::from_utf8(yaml.stdout).unwrap();
    for role in ["addonctl-viewer", "addonctl-operator", "addonctl-admin"] {
        assert!(text.contains(&format!("name: {role}")), "{text}");
    }
    let json = assert_cmd::Command::cargo_bin("addonctl")
        .unwrap()
        .args(["rbac", "-o", "json"])
        .output()
        .unwrap();
    let list: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(list["kind"], "List");
    assert_eq!(list["items"], Value::Array(access::roles()));
    let viewer = &list["items"][0];
    assert!(viewer["rules"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["verbs"] == json!(["get", "list", "watch"])));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_held_lock_is_renewed_refuses_a_second_holder_and_is_gone_after_release() {
    use addonctl::state::lease;
    let sb = Sandbox::with_kubevela().await;
    sb.api()
        .create_if_missing(&Kind::NAMESPACE.object(json!({"name": sb.ns()})))
        .await
        .unwrap();
    let name = lease::addon_lease("renewed");
    let lock = lease::acquire(sb.api(), sb.ns(), &name, "renewed", "first", false)
        .await
        .unwrap();
    let acquired = sb.get(Kind::LEASE, &name).await.unwrap();
    assert_eq!(acquired["spec"]["holderIdentity"], "first");

    let refused = lease::acquire(sb.api(), sb.ns(), &name, "renewed", "second", false)
        .await
        .unwrap_err();
    assert!(
        refused
            .to_string()
            .starts_with("`renewed` is being changed by first since "),
        "{refused}"
    );

    // Renewed every quarter of its duration while held.
    let started = Instant::now();
    loop {
        let now = sb.get(Kind::LEASE, &name).await.unwrap();
        if now["spec"]["renewTime"] != acquired["spec"]["renewTime"] {
            assert_eq!(now["spec"]["acquireTime"], acquired["spec"]["acquireTime"]);
            assert_eq!(now["spec"]["holderIdentity"], "first");
            break;
        }
        assert!(
            started.elapsed() < lease::LEASE_DURATION / 2,
            "not renewed: {now}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    lock.ensure_held().unwrap();

    lock.release().await.unwrap();
    assert!(sb.get(Kind::LEASE, &name).await.is_none());
    let again = lease::acquire(sb.api(), sb.ns(), &name, "renewed", "second", false)
        .await
        .unwrap();
    again.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_viewer_dry_runs_disable_and_detach_but_the_library_refuses_the_real_ones() {
    let kept = addon("kept");
    let sb = sandbox(&[&kept]).await;
    sb.cli()
        .args(["enable", "kept", "--clusters", "east"])
        .assert()
        .success();
    bind(&sb, Role::Viewer).await;
    let before = sb.resource_versions().await;

    sb.cli_as_user()
        .args(["disable", "kept", "--dry-run"])
        .assert()
        .success()
        .stdout(predicate::str::contains("kept-settings"));
    sb.cli_as_user()
        .args(["cluster", "detach", "east", "--dry-run"])
        .assert()
        .success()
        .stdout(predicate::str::contains("cluster `east` would be detached"));
    sb.cli_as_user()
        .args(["cluster", "detach", "east"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "`addonctl cluster detach east` needs permissions",
        ))
        .stderr(predicate::str::contains("addonctl-operator"));
    let user = sb.user_context().await;
    let refused = addonctl::apply::disable(
        &user.applier(),
        "kept",
        false,
        &addonctl::context::NoopReporter,
    )
    .await
    .unwrap_err();
    assert!(matches!(refused, addonctl::Error::Denied(_)), "{refused}");
    assert!(
        refused.to_string().contains("addonctl-operator"),
        "{refused}"
    );

    assert_eq!(sb.resource_versions().await, before);
    assert_eq!(on_east(&sb, "kept").await, ["kept-settings"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_access_check_asks_once_per_namespace_and_a_namespace_binding_grants_nothing_cluster_wide(
) {
    let sb = Sandbox::with_kubevela().await;
    sb.api()
        .create_if_missing(&Kind::NAMESPACE.object(json!({"name": sb.ns()})))
        .await
        .unwrap();
    // `addonctl-admin` (every verb on everything) bound in the system namespace only.
    bind(&sb, Role::Admin).await;
    let other = sb.other_namespace("other").await;
    let user = sb.user_context().await;
    let ns = Some(sb.ns());
    let needs = [
        access::Need::new("create", "", "secrets", ns),
        access::Need::new("delete", "apps", "deployments", ns),
        access::Need::new("patch", "coordination.k8s.io", "leases", ns),
        access::Need::new("patch", "", "configmaps", Some(&other)),
        access::Need::new("create", "rbac.authorization.k8s.io", "clusterroles", None),
        access::Need::new("create", "", "namespaces", None),
    ];
    let before = user.cluster.counters().requests();
    let refused = access::check(&user.cluster, "`x`", &needs)
        .await
        .unwrap_err();
    let asked = user.cluster.counters().requests() - before;
    let addonctl::Error::Denied(denied) = refused else {
        panic!("{refused}");
    };
    let missing: Vec<String> = denied.missing.iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(
        missing,
        [
            "`create` `namespaces` (cluster-wide)".to_owned(),
            "`create` `clusterroles.rbac.authorization.k8s.io` (cluster-wide)".to_owned(),
            format!("`patch` `configmaps` in namespace `{other}`"),
        ]
    );
    // One rules review per namespace and one for the cluster-scoped needs, none per need.
    assert_eq!(asked, 3, "requests of the check");
    access::check(&user.cluster, "`x`", &needs[..3])
        .await
        .unwrap();
}
