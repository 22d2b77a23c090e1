//! Controller mode against the real API servers: the `Addon` CRD applied from
//! `addonctl controller manifests`, the controller run as a child process of the test (or
//! in-process, where the test counts its requests), managed clusters joined into the test's
//! system namespace. Every child is killed on drop; every wait is bounded.

use std::collections::BTreeSet;
use std::io::BufRead as _;
use std::process::Stdio;
use std::time::{Duration, Instant};

use addonctl::cluster::Cluster;
use addonctl::context::{Context, Settings};
use addonctl::controller::{Backoff, Controller, ControllerSettings};
use serde::Deserialize as _;
use serde_json::{json, Value};

use crate::declarative::{addon_events, wait_event};
use crate::support::builders::TestAddon;
use crate::support::k8s::{get_on, list_on, ClusterEnv, Env, Kind, Sandbox};

/// The label every fixture object carries: the addon's name.
const LABEL: &str = "addonctl.test/addon";
/// The `Addon` kind.
pub(crate) const ADDON: Kind = Kind("addonctl.io/v1alpha1", "Addon");
/// Who writes the `Addon`s of the tests: the test environment's administrator (token user
/// `admin` of group `system:masters`).
pub(crate) const ADMIN_AUTHOR: AuthorNames = AuthorNames("admin", "system:masters");

/// An `Addon`'s author as its annotations name them.
pub(crate) struct AuthorNames(pub(crate) &'static str, pub(crate) &'static str);

impl AuthorNames {
    pub(crate) fn annotations(&self) -> Value {
        json!({"addonctl.io/author": self.0, "addonctl.io/author-groups": self.1})
    }
}

/// The longest any condition is waited for.
pub(crate) const WAIT: Duration = Duration::from_secs(60);
/// The one-time install of the CRD and the admission policy, done while the whole suite starts.
const SETUP_WAIT: Duration = Duration::from_secs(180);
/// The CRD kind.
const CRD: Kind = Kind("apiextensions.k8s.io/v1", "CustomResourceDefinition");

/// An addon `name` at `version`: `count` (default 2) ConfigMaps in a namespace named after the
/// system namespace, on the clusters of the `clusters` argument (every cluster without it).
/// `broken`: rendering fails.
pub(crate) fn fixture(name: &str, version: &str, broken: bool) -> TestAddon {
    let fail = if broken {
        "throw \"this addon is broken on purpose\";\n"
    } else {
        ""
    };
    let template = format!(
        r#"{fail}let ns = context.namespace;
let addon = context.metadata.name;
let labels = #{{ "{LABEL}": addon }};
let objects = [#{{ apiVersion: "v1", kind: "Namespace", metadata: #{{ name: ns, labels: labels }} }}];
for i in 0..parameter.count {{
    objects.push(#{{ apiVersion: "v1", kind: "ConfigMap",
        metadata: #{{ name: `${{addon}}-${{i}}`, labels: labels }}, data: #{{ index: `${{i}}` }} }});
}}
#{{ output: application(#{{ components: [k8s_objects(addon, objects)],
    policies: [topology("where", parameter.clusters)] }}) }}
"#
    );
    TestAddon::new(name)
        .file(
            "metadata.yaml",
            &format!("name: {name}\nversion: {version}\ndescription: Fixture addon {name}\n"),
        )
        .file(
            "parameter.rhai",
            "#{\n    count: pint(2),\n    clusters: list(string()).optional(),\n}\n",
        )
        .file("template.rhai", &template)
}

pub(crate) fn managed(n: usize) -> &'static ClusterEnv {
    Env::get().managed_n(n)
}

/// Names of the fixture ConfigMaps of `addon` in `namespace` on a cluster.
pub(crate) async fn config_maps(
    cluster: &Cluster,
    namespace: &str,
    addon: &str,
) -> BTreeSet<String> {
    list_on(cluster, Kind::CONFIG_MAP, Some(namespace))
        .await
        .into_iter()
        .filter(|o| o["metadata"]["labels"][LABEL] == addon)
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

pub(crate) fn numbered(addon: &str, count: usize) -> BTreeSet<String> {
    (0..count).map(|i| format!("{addon}-{i}")).collect()
}

/// Polls `check` every 200 ms until it returns `Some`, at most [`WAIT`].
pub(crate) async fn wait_for<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let started = Instant::now();
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(started.elapsed() < WAIT, "{what}: not within {WAIT:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The `Addon` CRD from `addonctl controller manifests`, applied once per test run.
pub(crate) async fn install_crd(sb: &Sandbox) {
    static INSTALLED: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    let output = sb
        .cli()
        .args([
            "controller",
            "manifests",
            "--image",
            "example/addonctl:test",
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    INSTALLED
        .get_or_init(|| async {
            let admin = Env::get().control_plane().admin().await;
            let documents: Vec<Value> = serde_yaml::Deserializer::from_str(&text)
                .map(|d| Value::deserialize(d).unwrap())
                .collect();
            let crd = documents
                .iter()
                .find(|d| d["kind"] == "CustomResourceDefinition")
                .expect("the manifests hold the CRD");
            admin.apply(crd, "default").await.unwrap();
            // The admission policy that keeps `addonctl.io/author` true, as shipped.
            for kind in [
                "ValidatingAdmissionPolicy",
                "ValidatingAdmissionPolicyBinding",
            ] {
                let policy = documents
                    .iter()
                    .find(|d| d["kind"] == kind)
                    .unwrap_or_else(|| panic!("the manifests hold the {kind}"));
                admin.apply(policy, "default").await.unwrap();
            }
            wait_for("the Addon CRD is established", || async {
                let stored = admin
                    .get(&CRD.gvk(), None, "addons.addonctl.io")
                    .await
                    .unwrap()?;
                let stored = serde_json::to_value(stored).unwrap();
                let established = stored["status"]["conditions"]
                    .as_array()?
                    .iter()
                    .any(|c| c["type"] == "Established" && c["status"] == "True");
                established.then_some(())
            })
            .await;
            // A new policy takes a moment to be enforced: until an Addon naming another author
            // is refused. Discovery is read afresh each round, or a first look taken before the
            // group was served would be believed.
            let probe = json!({"apiVersion": "addonctl.io/v1alpha1", "kind": "Addon",
                "metadata": {"name": "policy-probe", "namespace": "default",
                             "annotations": {"addonctl.io/author": "not-the-writer"}},
                "spec": {"suspend": true}});
            let last = std::sync::Mutex::new(String::new());
            let enforced = tokio::time::timeout(SETUP_WAIT, async {
                loop {
                    admin.refresh_discovery();
                    match admin.apply(&probe, "default").await {
                        Ok(_) => {
                            let _ = admin
                                .delete(&ADDON.gvk(), Some("default"), "policy-probe")
                                .await;
                            "the probe was admitted".clone_into(&mut last.lock().unwrap());
                        }
                        Err(e) if e.to_string().contains("must name the user") => break,
                        Err(e) => *last.lock().unwrap() = e.to_string(),
                    }
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            })
            .await;
            assert!(
                enforced.is_ok(),
                "the admission policy was not enforced within {SETUP_WAIT:?}; last: {}",
                last.lock().unwrap()
            );
        })
        .await;
    // Each test's own client must see the new group.
    wait_for("the Addon kind is served", || async {
        sb.api().refresh_discovery();
        sb.api()
            .serves(&ADDON.gvk())
            .await
            .unwrap_or(false)
            .then_some(())
    })
    .await;
}

/// The system namespace, made if no join made it yet.
pub(crate) async fn ensure_namespace(sb: &Sandbox) {
    sb.api()
        .create_if_missing(
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": sb.ns()}}),
        )
        .await
        .unwrap();
}

/// Creates or updates the `Addon` `name` with `spec`.
pub(crate) async fn apply_addon(sb: &Sandbox, name: &str, spec: Value) -> Value {
    ensure_namespace(sb).await;
    let object = json!({
        "apiVersion": "addonctl.io/v1alpha1", "kind": "Addon",
        "metadata": {"name": name, "namespace": sb.ns(), "annotations": ADMIN_AUTHOR.annotations()},
        "spec": spec,
    });
    let stored = sb.api().apply(&object, sb.ns()).await.unwrap();
    serde_json::to_value(stored).unwrap()
}

pub(crate) async fn addon(sb: &Sandbox, name: &str) -> Option<Value> {
    sb.get(ADDON, name).await
}

pub(crate) fn condition<'a>(addon: &'a Value, type_: &str) -> Option<&'a Value> {
    addon["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// Waits until the `Addon` is `Ready` for its current generation.
pub(crate) async fn wait_ready(sb: &Sandbox, name: &str) -> Value {
    wait_for(&format!("Addon `{name}` Ready"), || async {
        let addon = addon(sb, name).await?;
        let ready = condition(&addon, "Ready")?;
        (ready["status"] == "True"
            && ready["observedGeneration"] == addon["metadata"]["generation"]
            && addon["status"]["observedGeneration"] == addon["metadata"]["generation"])
            .then_some(addon)
    })
    .await
}

/// A controller running as a child process; killed when dropped.
pub(crate) struct Child {
    pub(crate) process: tokio::process::Child,
    pub(crate) address: String,
}

impl Child {
    /// `addonctl controller` for the sandbox (its kubeconfig, namespace, registries and
    /// engine), with `extra` flags; waits until it prints its address.
    pub(crate) async fn start(sb: &Sandbox, extra: &[&str]) -> Child {
        let mut command = sb.command();
        command
            .args(["controller", "--metrics-addr", "127.0.0.1:0"])
            .args(["--backoff-initial", "1s", "--backoff-max", "4s"])
            .args(extra)
            .env("ADDONCTL_LOG", "addonctl=info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut command = tokio::process::Command::from(command);
        command.kill_on_drop(true);
        let mut process = command.spawn().unwrap();
        let stderr = process.stderr.take().unwrap().into_owned_fd().unwrap();
        let (found, address) = std::sync::mpsc::channel();
        // Reads stderr to its end (so the pipe never fills), echoing it for failing tests.
        std::thread::spawn(move || {
            let reader = std::io::BufReader::new(std::fs::File::from(stderr));
            for line in reader.lines().map_while(Result::ok) {
                if let Some(rest) = line.split("http://").nth(1) {
                    let _ = found.send(rest.split(';').next().unwrap_or_default().to_owned());
                }
                eprintln!("[controller] {line}");
            }
        });
        let address =
            tokio::task::spawn_blocking(move || address.recv_timeout(Duration::from_secs(30)))
                .await
                .unwrap()
                .expect("the controller prints its address within 30s");
        Child { process, address }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.process.id().unwrap()
    }

    pub(crate) async fn get(&self, path: &str) -> (u16, String) {
        http_get(&self.address, path).await
    }
}

pub(crate) async fn http_get(address: &str, path: &str) -> (u16, String) {
    let response = reqwest::Client::new()
        .get(format!("http://{address}{path}"))
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

// ------------------------------------------------------------------------------------ tests

#[tokio::test(flavor = "multi_thread")]
async fn an_addon_resource_follows_its_selector_across_joins_label_changes_detach_and_deletion() {
    let spread = fixture("spread", "1.0.0", false);
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&spread]);
    install_crd(&sb).await;
    sb.join("m1", managed(1), &[("env", "prod")]).await;
    sb.join("m2", managed(2), &[("env", "staging")]).await;
    let m1 = managed(1).admin().await;
    let m2 = managed(2).admin().await;
    let controller = Child::start(&sb, &["--leader-elect=false"]).await;

    apply_addon(
        &sb,
        "spread",
        json!({"clusterSelector": {"matchLabels": {"env": "prod"}}, "parameters": {"count": 2}}),
    )
    .await;

    let ready = wait_ready(&sb, "spread").await;
    assert_eq!(
        config_maps(&m1, sb.ns(), "spread").await,
        numbered("spread", 2)
    );
    assert!(config_maps(&m2, sb.ns(), "spread").await.is_empty());
    assert_eq!(ready["status"]["appliedVersion"], "1.0.0");
    assert_eq!(ready["status"]["clusters"][0]["name"], "m1");
    assert_eq!(ready["status"]["clusters"][0]["health"], "healthy");
    assert_eq!(ready["status"]["clusterSummary"], "1/1");
    assert_eq!(
        ready["metadata"]["finalizers"],
        json!(["addonctl.io/disable"])
    );
    let record = sb.record("spread").await;
    assert_eq!(record.dispatched.keys().collect::<Vec<_>>(), ["m1"]);
    let (code, body) = controller.get("/healthz").await;
    assert_eq!((code, body.trim()), (200, "ok"));
    let (code, metrics) = controller.get("/metrics").await;
    assert_eq!(code, 200);
    assert!(
        metrics.contains("addonctl_controller_reconciles_total{addon=\"spread\"}")
            && metrics.contains(
                "addonctl_controller_cluster_applies_total{cluster=\"m1\",outcome=\"applied\"} 1"
            ),
        "{metrics}"
    );

    // A cluster joined with matching labels is covered without touching the Addon.
    let m2_labels = sb
        .cli()
        .args(["cluster", "labels", "m2", "env=prod"])
        .output()
        .unwrap();
    assert!(m2_labels.status.success(), "{m2_labels:?}");
    wait_for("m2 covered after its label change", || async {
        (config_maps(&m2, sb.ns(), "spread").await == numbered("spread", 2)).then_some(())
    })
    .await;
    // A cluster whose labels stop matching is cleaned.
    let m1_labels = sb
        .cli()
        .args(["cluster", "labels", "m1", "env=staging"])
        .output()
        .unwrap();
    assert!(m1_labels.status.success(), "{m1_labels:?}");
    wait_for("m1 cleaned after its label change", || async {
        config_maps(&m1, sb.ns(), "spread")
            .await
            .is_empty()
            .then_some(())
    })
    .await;
    let status = wait_for("the status lists m2 only", || async {
        let addon = addon(&sb, "spread").await?;
        (addon["status"]["clusters"].as_array()?.len() == 1
            && addon["status"]["clusters"][0]["name"] == "m2"
            && condition(&addon, "Ready")?["status"] == "True")
            .then_some(addon)
    })
    .await;
    assert_eq!(
        status["metadata"]["generation"],
        ready["metadata"]["generation"]
    );

    // Detached: its objects are cleaned (by the detach) and the controller follows.
    let detach = sb.cli().args(["cluster", "detach", "m2"]).output().unwrap();
    assert!(detach.status.success(), "{detach:?}");
    assert!(config_maps(&m2, sb.ns(), "spread").await.is_empty());
    wait_for("the Addon has no target left", || async {
        let addon = addon(&sb, "spread").await?;
        (condition(&addon, "Ready")?["reason"] == "NoTargetClusters").then_some(())
    })
    .await;

    // Deleted: disabled, then the finalizer goes and so does the resource.
    sb.api()
        .delete(&ADDON.gvk(), Some(sb.ns()), "spread")
        .await
        .unwrap();
    wait_for("the Addon is gone", || async {
        addon(&sb, "spread").await.is_none().then_some(())
    })
    .await;
    assert!(
        sb.get(Kind::SECRET, "addon-record-spread").await.is_none(),
        "the record is deleted with the addon"
    );
    drop(controller);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unchanged_addon_is_not_applied_again_and_an_edit_is() {
    let spread = fixture("steady", "1.0.0", false);
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&spread]);
    install_crd(&sb).await;
    sb.join("m1", managed(1), &[("env", "prod")]).await;
    let m1 = managed(1).admin().await;
    let (controller, stop, cluster, address) =
        in_process(&sb, &[&spread], Backoff::default()).await;

    apply_addon(&sb, "steady", json!({"clusters": ["m1"]})).await;
    let ready = wait_ready(&sb, "steady").await;
    assert_eq!(
        config_maps(&m1, sb.ns(), "steady").await,
        numbered("steady", 2)
    );
    let version = ready["metadata"]["resourceVersion"].clone();
    let writes = cluster.counters().writes();

    // A cluster Secret event re-evaluates every Addon; nothing changed, so nothing is written.
    let labels = sb
        .cli()
        .args(["cluster", "labels", "m1", "team=a"])
        .output()
        .unwrap();
    assert!(labels.status.success(), "{labels:?}");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        cluster.counters().writes(),
        writes,
        "no writes for an unchanged Addon"
    );
    assert_eq!(
        addon(&sb, "steady").await.unwrap()["metadata"]["resourceVersion"],
        version
    );
    let (_, metrics) = http_get(&address, "/metrics").await;
    assert!(
        metrics.contains("addonctl_controller_reconciles_skipped_total{addon=\"steady\"}"),
        "{metrics}"
    );

    // An edit of the spec is applied.
    apply_addon(
        &sb,
        "steady",
        json!({"clusters": ["m1"], "parameters": {"count": 3}}),
    )
    .await;
    wait_for("the third ConfigMap", || async {
        (config_maps(&m1, sb.ns(), "steady").await == numbered("steady", 3)).then_some(())
    })
    .await;
    wait_ready(&sb, "steady").await;
    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(30), controller)
        .await
        .expect("the controller stops within 30s")
        .unwrap();
}

/// A controller in this process on its own connection (so its requests are counted), without
/// leader election; returns its task, its stop switch, its control-plane client and address.
pub(crate) async fn in_process(
    sb: &Sandbox,
    addons: &[&TestAddon],
    backoff: Backoff,
) -> (
    tokio::task::JoinHandle<()>,
    tokio::sync::oneshot::Sender<()>,
    Cluster,
    String,
) {
    in_process_with(
        sb,
        addons,
        ControllerSettings {
            backoff,
            ..ControllerSettings::default()
        },
    )
    .await
}

/// [`in_process`] with `settings` (its address and leader election are the test's).
pub(crate) async fn in_process_with(
    sb: &Sandbox,
    addons: &[&TestAddon],
    controller_settings: ControllerSettings,
) -> (
    tokio::task::JoinHandle<()>,
    tokio::sync::oneshot::Sender<()>,
    Cluster,
    String,
) {
    let cluster = sb.cluster.admin().await;
    let settings = Settings {
        registry_dirs: addons.iter().map(|a| a.path_buf()).collect(),
        engine: addonctl::context::EngineChoice::Direct,
        ..Settings::new(sb.ns())
    };
    let ctx = Context::with_cluster(&settings, cluster.clone()).unwrap();
    let controller = Controller::bind(
        ctx,
        ControllerSettings {
            metrics_address: "127.0.0.1:0".parse().unwrap(),
            leader_elect: false,
            ..controller_settings
        },
    )
    .await
    .unwrap();
    let address = controller.address().to_string();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        controller
            .run(async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
    });
    (task, stop, cluster, address)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_broken_addon_backs_off_and_stalls_after_the_retry_budget_with_few_requests() {
    let broken = fixture("broken", "1.0.0", true);
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&broken]);
    install_crd(&sb).await;
    let backoff = Backoff {
        initial: Duration::from_millis(500),
        max: Duration::from_secs(2),
        budget: 3,
    };
    let (controller, stop, cluster, address) = in_process(&sb, &[&broken], backoff).await;
    let started = Instant::now();

    apply_addon(&sb, "broken", json!({"clusters": ["local"]})).await;

    let stalled = wait_for("Stalled", || async {
        let addon = addon(&sb, "broken").await?;
        (condition(&addon, "Stalled")?["status"] == "True").then_some(addon)
    })
    .await;
    // Failures 1, 2 and 3 are 0.5 s and 1 s apart at least.
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(stalled["status"]["consecutiveFailures"], 3);
    assert_eq!(
        condition(&stalled, "Stalled").unwrap()["reason"],
        "RetryBudgetExhausted"
    );
    let ready = condition(&stalled, "Ready").unwrap();
    assert_eq!(ready["status"], "False");
    let error = stalled["status"]["lastError"].as_str().unwrap();
    assert!(error.contains("broken on purpose"), "{error}");
    assert!(wait_event(&sb, "broken", "Stalled")
        .await
        .contains("retry budget"));

    // Stalled: retries at the slowest pace only, each costing a handful of requests.
    let requests = cluster.counters().requests();
    tokio::time::sleep(Duration::from_secs(6)).await;
    let later = addon(&sb, "broken").await.unwrap();
    let failures = later["status"]["consecutiveFailures"].as_u64().unwrap();
    assert!(
        (3..=7).contains(&failures),
        "{failures} failures in 6 s at one per 2 s"
    );
    let spent = cluster.counters().requests() - requests;
    assert!(spent <= 80, "{spent} requests in 6 s while stalled");
    let failed = addon_events(&sb, "broken").await;
    assert_eq!(
        failed.iter().filter(|(r, _)| r == "ApplyFailed").count(),
        1,
        "the same failure is one Event: {failed:?}"
    );
    let (_, metrics) = http_get(&address, "/metrics").await;
    assert!(
        metrics.contains("addonctl_controller_reconcile_errors_total{addon=\"broken\"}"),
        "{metrics}"
    );

    // Deleting it disables nothing (it was never enabled) and lets it go.
    sb.api()
        .delete(&ADDON.gvk(), Some(sb.ns()), "broken")
        .await
        .unwrap();
    wait_for("the broken Addon is gone", || async {
        addon(&sb, "broken").await.is_none().then_some(())
    })
    .await;
    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(30), controller)
        .await
        .expect("the controller stops within 30s")
        .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_secret_parameter_is_reported_without_any_secret_value() {
    let spread = fixture("secretive", "1.0.0", false);
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&spread]);
    install_crd(&sb).await;
    let (controller, stop, _, _) = in_process(&sb, &[&spread], Backoff::default()).await;
    ensure_namespace(&sb).await;
    sb.api()
        .apply(
            &json!({"apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": "creds", "namespace": sb.ns(),
                                 "labels": {"addonctl.io/secret-parameter": "true"}},
                    "stringData": {"other": "hunter2"}}),
            sb.ns(),
        )
        .await
        .unwrap();

    apply_addon(
        &sb,
        "secretive",
        json!({"clusters": ["local"],
               "secretParameters": [{"name": "token", "secretRef": {"name": "creds", "key": "token"}}]}),
    )
    .await;

    let failed = wait_for("the missing key reported", || async {
        let addon = addon(&sb, "secretive").await?;
        addon["status"]["lastError"].is_string().then_some(addon)
    })
    .await;
    let error = failed["status"]["lastError"].as_str().unwrap();
    assert!(
        error.contains("`creds`") && error.contains("no key `token`") && error.contains("other"),
        "{error}"
    );
    assert_eq!(
        condition(&failed, "Ready").unwrap()["reason"],
        "InvalidSpec"
    );
    assert!(!failed.to_string().contains("hunter2"));
    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(30), controller)
        .await
        .expect("the controller stops within 30s")
        .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn two_controllers_elect_one_leader_and_the_other_takes_over_when_it_dies() {
    let spread = fixture("elected", "1.0.0", false);
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&spread]);
    install_crd(&sb).await;
    let first = Child::start(&sb, &["--leader-elect"]).await;
    let lease = wait_for("a leader", || async {
        let lease = sb.get(Kind::LEASE, "addonctl-controller").await?;
        let holder = lease["spec"]["holderIdentity"].as_str()?.to_owned();
        (!holder.is_empty()).then_some(holder)
    })
    .await;
    assert!(lease.contains(&format!("pid {} ", first.pid())), "{lease}");
    let second = Child::start(&sb, &["--leader-elect"]).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (_, first_metrics) = first.get("/metrics").await;
    let (_, second_metrics) = second.get("/metrics").await;
    assert!(
        first_metrics.contains("addonctl_controller_leader 1"),
        "{first_metrics}"
    );
    assert!(
        second_metrics.contains("addonctl_controller_leader 0"),
        "{second_metrics}"
    );
    let (code, _) = second.get("/readyz").await;
    assert_eq!(code, 200, "a standby is ready");

    apply_addon(&sb, "elected", json!({"clusters": ["local"]})).await;
    wait_ready(&sb, "elected").await;
    assert_eq!(
        config_maps(sb.api(), sb.ns(), "elected").await,
        numbered("elected", 2)
    );

    // The leader dies without releasing the Lease: the standby takes over and reconciles.
    let second_pid = second.pid();
    let mut first = first;
    first.process.kill().await.unwrap();
    wait_for("the standby leads", || async {
        let lease = sb.get(Kind::LEASE, "addonctl-controller").await?;
        lease["spec"]["holderIdentity"]
            .as_str()?
            .contains(&format!("pid {second_pid} "))
            .then_some(())
    })
    .await;
    apply_addon(
        &sb,
        "elected",
        json!({"clusters": ["local"], "parameters": {"count": 3}}),
    )
    .await;
    wait_for("the new leader applies the edit", || async {
        (config_maps(sb.api(), sb.ns(), "elected").await == numbered("elected", 3)).then_some(())
    })
    .await;
    let (_, metrics) = second.get("/metrics").await;
    assert!(
        metrics.contains("addonctl_controller_leader 1"),
        "{metrics}"
    );
}

/// The `data.index` of the fixture ConfigMap `name` on a cluster.
async fn config_map_index(cluster: &Cluster, namespace: &str, name: &str) -> Option<String> {
    let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(cluster.client().clone(), namespace);
    let map = api.get_opt(name).await.unwrap()?;
    map.data?.get("index").cloned()
}

/// Edits the fixture ConfigMap `name` by hand, as another writer would.
async fn edit_config_map(cluster: &Cluster, namespace: &str, name: &str, index: &str) {
    let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(cluster.client().clone(), namespace);
    // As a person with `kubectl edit` would: another field manager (the client's User-Agent
    // would name addonctl).
    let params = kube::api::PatchParams {
        field_manager: Some("kubectl-edit".to_owned()),
        ..kube::api::PatchParams::default()
    };
    api.patch(
        name,
        &params,
        &kube::api::Patch::Merge(&json!({"data": {"index": index}})),
    )
    .await
    .unwrap();
}

/// A sandbox with one fixture addon `name` on m1 under the drift `policy`, its controller in
/// this process checking drift every `interval`; returns what the test needs.
async fn drift_case(
    name: &str,
    policy: &str,
    interval: Duration,
) -> (
    Sandbox,
    Cluster,
    String,
    tokio::task::JoinHandle<()>,
    tokio::sync::oneshot::Sender<()>,
) {
    let addon_dir = fixture(name, "1.0.0", false);
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&addon_dir]);
    install_crd(&sb).await;
    sb.join("m1", managed(1), &[]).await;
    let m1 = managed(1).admin().await;
    let (controller, stop, _cluster, address) = in_process_with(
        &sb,
        &[&addon_dir],
        ControllerSettings {
            drift_interval: interval,
            ..ControllerSettings::default()
        },
    )
    .await;
    apply_addon(
        &sb,
        name,
        json!({"clusters": ["m1"], "drift": {"policy": policy}}),
    )
    .await;
    wait_ready(&sb, name).await;
    assert_eq!(
        config_map_index(&m1, sb.ns(), &format!("{name}-0"))
            .await
            .as_deref(),
        Some("0")
    );
    (sb, m1, address, controller, stop)
}

pub(crate) async fn stop_controller(
    controller: tokio::task::JoinHandle<()>,
    stop: tokio::sync::oneshot::Sender<()>,
) {
    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(30), controller)
        .await
        .expect("the controller stops within 30s")
        .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hand_edit_is_corrected_under_correct() {
    let (sb, m1, address, controller, stop) =
        drift_case("fixed", "correct", Duration::from_secs(1)).await;
    let generation = addon(&sb, "fixed").await.unwrap()["metadata"]["generation"].clone();
    // Once listed in sync with its watches running, a quiet cluster is not listed again.
    let listed = "addonctl_controller_drift_clusters_listed_total{addon=\"fixed\"}";
    let vouched = "addonctl_controller_drift_clusters_vouched_total{addon=\"fixed\"}";
    let quiet = |at_least: u64| {
        let address = address.clone();
        async move {
            wait_for("drift checks the watches vouch for", || async {
                let (_, metrics) = http_get(&address, "/metrics").await;
                (metric(&metrics, vouched) >= at_least)
                    .then(|| (metric(&metrics, listed), metric(&metrics, vouched)))
            })
            .await
        }
    };
    let (listed_before, vouched_before) = quiet(1).await;
    let (listed_after, _) = quiet(vouched_before + 2).await;
    assert_eq!(
        listed_after, listed_before,
        "m1 was listed again while quiet"
    );
    edit_config_map(&m1, sb.ns(), "fixed-0", "edited").await;
    wait_for("the edit reverted", || async {
        (config_map_index(&m1, sb.ns(), "fixed-0").await.as_deref() == Some("0")).then_some(())
    })
    .await;
    let fixed = wait_for("Drifted=False (Corrected)", || async {
        let addon = addon(&sb, "fixed").await?;
        (condition(&addon, "Drifted")?["reason"] == "Corrected").then_some(addon)
    })
    .await;
    let message = condition(&fixed, "Drifted").unwrap()["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(message.contains("fixed-0"), "{message}");
    assert!(wait_event(&sb, "fixed", "DriftCorrected")
        .await
        .contains("fixed-0"));
    assert_eq!(
        fixed["metadata"]["generation"], generation,
        "the Addon is not touched"
    );
    let (_, metrics) = http_get(&address, "/metrics").await;
    assert!(
        metrics.contains("addonctl_controller_drift_corrections_total{addon=\"fixed\"} 1"),
        "{metrics}"
    );
    assert!(
        metric(&metrics, listed) > listed_before,
        "the edited cluster is listed: {metrics}"
    );
    stop_controller(controller, stop).await;
}

/// Two `Addon`s whose addons render one object differently (the fixture's Namespace, labelled
/// with each addon's name), both under `correct`: the one that did not apply it last reports
/// `SharedObjectConflict` and neither undoes the other.
#[tokio::test(flavor = "multi_thread")]
async fn two_addons_rendering_one_object_differently_report_it_and_do_not_flip_it() {
    let (left, right) = (
        fixture("left", "1.0.0", false),
        fixture("right", "1.0.0", false),
    );
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&left, &right]);
    install_crd(&sb).await;
    sb.join("m1", managed(1), &[]).await;
    let m1 = managed(1).admin().await;
    let (controller, stop, _cluster, _address) = in_process_with(
        &sb,
        &[&left, &right],
        ControllerSettings {
            drift_interval: Duration::from_secs(1),
            ..ControllerSettings::default()
        },
    )
    .await;
    let spec = json!({"clusters": ["m1"], "drift": {"policy": "correct"}});
    apply_addon(&sb, "left", spec.clone()).await;
    wait_ready(&sb, "left").await;
    apply_addon(&sb, "right", spec).await;
    wait_ready(&sb, "right").await;
    let owner = || async {
        get_on(&m1, Kind::NAMESPACE, None, sb.ns()).await.unwrap()["metadata"]["labels"][LABEL]
            .clone()
    };
    let reported = wait_for("`left` reports the conflict", || async {
        let addon = addon(&sb, "left").await?;
        let drifted = condition(&addon, "Drifted")?.clone();
        (drifted["reason"] == "SharedObjectConflict").then_some(drifted)
    })
    .await;
    let message = reported["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("also applied by addon `right`") && message.contains(LABEL),
        "{message}"
    );
    // A few drift checks later (every second): the Namespace still has `right`'s label.
    for _ in 0..8 {
        assert_eq!(owner().await, json!("right"));
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let right_drifted = condition(&addon(&sb, "right").await.unwrap(), "Drifted").cloned();
    assert_ne!(
        right_drifted.as_ref().map(|c| c["status"].clone()),
        Some(json!("True")),
        "{right_drifted:?}"
    );
    stop_controller(controller, stop).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_registry_added_while_the_controller_runs_is_listed_at_once() {
    let late = fixture("late", "1.0.0", false);
    let sb = Sandbox::with_kubevela().await.direct();
    install_crd(&sb).await;
    sb.join("m1", managed(1), &[]).await;
    // Neither the registry poll nor the back-off comes within the test: only the store's
    // watch can bring the registry in.
    let (controller, stop, _cluster, address) = in_process_with(
        &sb,
        &[],
        ControllerSettings {
            registry_interval: Duration::from_secs(3600),
            backoff: Backoff {
                initial: Duration::from_secs(3600),
                max: Duration::from_secs(3600),
                budget: 6,
            },
            ..ControllerSettings::default()
        },
    )
    .await;
    apply_addon(
        &sb,
        "late",
        json!({"registry": "later", "clusters": ["m1"]}),
    )
    .await;
    let failed = wait_for("the Addon failed: no such registry", || async {
        let addon = addon(&sb, "late").await?;
        (addon["status"]["consecutiveFailures"].as_u64()? >= 1).then_some(addon)
    })
    .await;
    assert!(
        failed["status"]["lastError"]
            .as_str()
            .is_some_and(|e| e.contains("later")),
        "{failed}"
    );
    let output = sb
        .cli()
        .args(["registry", "add", "later", "--type", "local", "--endpoint"])
        .arg(late.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let ready = wait_ready(&sb, "late").await;
    assert_eq!(ready["status"]["appliedVersion"], "1.0.0", "{ready}");
    assert_eq!(
        config_maps(&managed(1).admin().await, sb.ns(), "late")
            .await
            .len(),
        2
    );
    let (_, metrics) = http_get(&address, "/metrics").await;
    assert!(
        metric(&metrics, "addonctl_controller_registry_relists_total") >= 1,
        "{metrics}"
    );
    stop_controller(controller, stop).await;
}

/// The value of the metric line starting with `name` (0 when absent).
pub(crate) fn metric(metrics: &str, name: &str) -> u64 {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hand_edit_and_a_deletion_are_seen_by_the_watches_long_before_the_interval() {
    // The periodic check is an hour away: only the watches can see these.
    let (sb, m1, address, controller, stop) =
        drift_case("seen", "correct", Duration::from_secs(3600)).await;
    let wakeups = "addonctl_controller_drift_wakeups_total{addon=\"seen\"}";
    wait_for("the drift watches running", || async {
        let (_, metrics) = http_get(&address, "/metrics").await;
        (metric(&metrics, "addonctl_controller_drift_watches") >= 2).then_some(())
    })
    .await;
    let (_, metrics) = http_get(&address, "/metrics").await;
    assert_eq!(
        metric(&metrics, wakeups),
        0,
        "addonctl's own applies wake nothing: {metrics}"
    );
    edit_config_map(&m1, sb.ns(), "seen-0", "edited").await;
    wait_for("the edit reverted", || async {
        (config_map_index(&m1, sb.ns(), "seen-0").await.as_deref() == Some("0")).then_some(())
    })
    .await;
    let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(m1.client().clone(), sb.ns());
    api.delete("seen-1", &kube::api::DeleteParams::default())
        .await
        .unwrap();
    wait_for("the deleted object recreated", || async {
        config_map_index(&m1, sb.ns(), "seen-1")
            .await
            .filter(|i| i == "1")
    })
    .await;
    let (_, metrics) = http_get(&address, "/metrics").await;
    assert!(metric(&metrics, wakeups) >= 2, "{metrics}");
    assert!(
        metric(
            &metrics,
            "addonctl_controller_drift_corrections_total{addon=\"seen\"}"
        ) >= 2,
        "{metrics}"
    );
    stop_controller(controller, stop).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hand_edit_is_only_reported_under_warn() {
    let (sb, m1, address, controller, stop) =
        drift_case("watched", "warn", Duration::from_secs(1)).await;
    let in_sync = wait_for("Drifted=False (InSync)", || async {
        let addon = addon(&sb, "watched").await?;
        (condition(&addon, "Drifted")?["reason"] == "InSync").then_some(addon)
    })
    .await;
    assert_eq!(condition(&in_sync, "Drifted").unwrap()["status"], "False");
    edit_config_map(&m1, sb.ns(), "watched-1", "edited").await;
    let drifted = wait_for("Drifted=True", || async {
        let addon = addon(&sb, "watched").await?;
        (condition(&addon, "Drifted")?["status"] == "True").then_some(addon)
    })
    .await;
    let message = condition(&drifted, "Drifted").unwrap()["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.contains("watched-1") && message.contains("data.index"),
        "{message}"
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        config_map_index(&m1, sb.ns(), "watched-1").await.as_deref(),
        Some("edited"),
        "`warn` never reverts"
    );
    let later = addon(&sb, "watched").await.unwrap();
    assert_eq!(
        condition(&later, "Drifted").unwrap()["status"],
        "True",
        "a drifted cluster is listed at every check, not vouched for: {later}"
    );
    let events = addon_events(&sb, "watched").await;
    let drifted: Vec<&String> = events
        .iter()
        .filter(|(r, _)| r == "Drifted")
        .map(|(_, n)| n)
        .collect();
    assert!(
        drifted.len() == 1 && drifted[0].contains("watched-1") && drifted[0].contains("data.index"),
        "one Event while the drift lasts: {events:?}"
    );
    let (_, metrics) = http_get(&address, "/metrics").await;
    assert!(
        metrics.contains("addonctl_controller_drifted_objects_total{addon=\"watched\"}"),
        "{metrics}"
    );
    assert!(
        !metrics.contains("addonctl_controller_drift_corrections_total{addon=\"watched\"} 1"),
        "{metrics}"
    );
    stop_controller(controller, stop).await;
}

/// Each fixture ConfigMap of `addon` on a cluster with its resourceVersion.
async fn config_map_versions(
    cluster: &Cluster,
    namespace: &str,
    addon: &str,
) -> std::collections::BTreeMap<String, String> {
    list_on(cluster, Kind::CONFIG_MAP, Some(namespace))
        .await
        .into_iter()
        .filter(|o| o["metadata"]["labels"][LABEL] == addon)
        .map(|o| {
            (
                o["metadata"]["name"].as_str().unwrap().to_owned(),
                o["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_override_gives_one_cluster_other_parameters_and_follows_its_labels() {
    let tiers = fixture("tiers", "1.0.0", false);
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&tiers]);
    install_crd(&sb).await;
    sb.join("m1", managed(1), &[("env", "prod")]).await;
    sb.join("m2", managed(2), &[("env", "prod"), ("tier", "canary")])
        .await;
    sb.join("m3", managed(3), &[("env", "prod")]).await;
    let clusters = [
        managed(1).admin().await,
        managed(2).admin().await,
        managed(3).admin().await,
    ];
    let controller = Child::start(&sb, &["--leader-elect=false", "--drift-interval", "1s"]).await;
    let spec = |count: u64| {
        json!({
            "clusterSelector": {"matchLabels": {"env": "prod"}},
            "parameters": {"count": 2},
            "overrides": [{"clusterSelector": {"matchLabels": {"tier": "canary"}},
                           "parameters": {"count": count}}],
        })
    };
    let counts = || async {
        let mut out = Vec::new();
        for cluster in &clusters {
            out.push(config_maps(cluster, sb.ns(), "tiers").await.len());
        }
        out
    };
    let versions = || async {
        let mut out = Vec::new();
        for cluster in &clusters {
            out.push(config_map_versions(cluster, sb.ns(), "tiers").await);
        }
        out
    };

    apply_addon(&sb, "tiers", spec(3)).await;
    let ready = wait_ready(&sb, "tiers").await;
    assert_eq!(counts().await, [2, 3, 2], "m2 gets its override's count");
    assert_eq!(ready["status"]["clusterSummary"], "3/3");
    // One record: each parameter set once, each cluster the key of the one it got.
    let record = sb.record("tiers").await;
    assert_eq!(record.overrides.len(), 1);
    let (_, m2_parameters) = record
        .cluster_parameters("m2")
        .expect("m2 got the override");
    assert_eq!(Value::Object(m2_parameters.clone()), json!({"count": 3}));
    assert!(record.cluster_parameters("m1").is_none());
    assert!(record.cluster_parameters("m3").is_none());
    // `status` says which parameters each cluster got.
    let status = sb
        .cli()
        .args(["status", "tiers", "-o", "json"])
        .output()
        .unwrap();
    assert!(status.status.success(), "{status:?}");
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    let parameters_of = |name: &str| {
        status["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["cluster"] == name)
            .map(|c| c["parameters"].clone())
    };
    assert_eq!(parameters_of("m2"), Some(json!({"count": 3})));
    assert_eq!(parameters_of("m1"), Some(Value::Null));
    let text = sb.cli().args(["status", "tiers"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert_eq!(text.matches("    overrides: count=3").count(), 1, "{text}");
    assert_eq!(
        sb.stored_args("tiers").await.unwrap()["count"],
        2,
        "the argument Secret holds the addon's own parameters"
    );

    // Unchanged: a cluster Secret event re-evaluates the Addon, which writes nothing (the Addon,
    // the record and every ConfigMap keep their resourceVersions).
    let before = (
        addon(&sb, "tiers").await.unwrap()["metadata"]["resourceVersion"].clone(),
        sb.get(Kind::SECRET, "addon-record-tiers").await.unwrap()["metadata"]["resourceVersion"]
            .clone(),
        versions().await,
    );
    let relabel = sb
        .cli()
        .args(["cluster", "labels", "m1", "env=prod", "team=a"])
        .output()
        .unwrap();
    assert!(relabel.status.success(), "{relabel:?}");
    tokio::time::sleep(Duration::from_secs(4)).await;
    let after = (
        addon(&sb, "tiers").await.unwrap()["metadata"]["resourceVersion"].clone(),
        sb.get(Kind::SECRET, "addon-record-tiers").await.unwrap()["metadata"]["resourceVersion"]
            .clone(),
        versions().await,
    );
    assert_eq!(after, before, "an unchanged Addon writes nothing");

    // Drift on m2 is judged by its own parameter set: the ConfigMap only its override renders,
    // edited by hand, is corrected.
    edit_config_map(&clusters[1], sb.ns(), "tiers-2", "edited").await;
    wait_for("m2's tiers-2 corrected", || async {
        let index = config_map_index(&clusters[1], sb.ns(), "tiers-2").await;
        (index.as_deref() == Some("2")).then_some(())
    })
    .await;

    // The override changes: only m2 changes.
    apply_addon(&sb, "tiers", spec(4)).await;
    wait_for("m2 has four ConfigMaps", || async {
        (counts().await == [2, 4, 2]).then_some(())
    })
    .await;
    wait_ready(&sb, "tiers").await;
    let now = versions().await;
    assert_eq!(now[0], before.2[0], "m1 untouched");
    assert_eq!(now[2], before.2[2], "m3 untouched");
    assert_eq!(
        now[1].get("tiers-1"),
        before.2[1].get("tiers-1"),
        "m2's objects the override leaves as they are are not written again"
    );

    // m2 loses the label: it moves back to the addon's own parameters (its extra ConfigMaps
    // are pruned), the others untouched.
    let relabel = sb
        .cli()
        .args(["cluster", "labels", "m2", "env=prod"])
        .output()
        .unwrap();
    assert!(relabel.status.success(), "{relabel:?}");
    wait_for("m2 back to two ConfigMaps", || async {
        (counts().await == [2, 2, 2]).then_some(())
    })
    .await;
    let record = wait_for("the record forgets the override", || async {
        let record = sb.record("tiers").await;
        record.overrides.is_empty().then_some(record)
    })
    .await;
    assert!(record.cluster_parameters("m2").is_none());
    let last = versions().await;
    assert_eq!(last[0], before.2[0], "m1 untouched");
    assert_eq!(last[2], before.2[2], "m3 untouched");
    assert_eq!(
        config_maps(&clusters[1], sb.ns(), "tiers").await,
        numbered("tiers", 2)
    );

    // A bad override value is the user's to fix: a condition names the override and the
    // parameter, and nothing is applied (even though it selects no cluster now).
    apply_addon(&sb, "tiers", spec(0)).await;
    let refused = wait_for("Ready=False naming the override", || async {
        let addon = addon(&sb, "tiers").await?;
        let ready = condition(&addon, "Ready")?;
        (ready["reason"] == "InvalidSpec"
            && ready["observedGeneration"] == addon["metadata"]["generation"])
            .then(|| ready["message"].as_str().unwrap_or_default().to_owned())
    })
    .await;
    assert!(
        refused.contains("override #1 (`overrides[0]`)")
            && refused.contains("`count`")
            && refused.contains("it selects no cluster now"),
        "{refused}"
    );
    assert_eq!(counts().await, [2, 2, 2]);
    drop(controller);
}

/// The components an override gives some clusters are checked like the addon's own: an API
/// only they use, which nothing serves, refuses the apply before anything is written.
#[tokio::test(flavor = "multi_thread")]
async fn an_override_whose_components_use_an_api_nothing_serves_is_refused_before_anything_is_applied(
) {
    let widgets = TestAddon::new("widgets")
        .file(
            "metadata.yaml",
            "name: widgets\nversion: 1.0.0\ndescription: A Widget where asked\n",
        )
        .file(
            "parameter.rhai",
            "#{\n    widget: bool(false),\n    clusters: list(string()).optional(),\n}\n",
        )
        .file(
            "template.rhai",
            r#"let objects = [#{ apiVersion: "v1", kind: "ConfigMap", metadata: #{ name: "widgets" }, data: #{ a: "1" } }];
if parameter.widget {
    objects.push(#{ apiVersion: "widgets.example.com/v1", kind: "Widget", metadata: #{ name: "w" } });
}
#{ output: application(#{ components: [k8s_objects("widgets", objects)], policies: [topology("where", parameter.clusters)] }) }
"#,
        );
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&widgets]);
    install_crd(&sb).await;
    sb.join("m1", managed(1), &[]).await;
    sb.join("m2", managed(2), &[("tier", "canary")]).await;
    let controller = Child::start(&sb, &["--leader-elect=false"]).await;

    apply_addon(
        &sb,
        "widgets",
        json!({"clusters": ["m1", "m2"],
               "overrides": [{"clusterSelector": {"matchLabels": {"tier": "canary"}},
                              "parameters": {"widget": true}}]}),
    )
    .await;
    let refused = wait_for("Ready=False naming the missing API", || async {
        let addon = addon(&sb, "widgets").await?;
        let ready = condition(&addon, "Ready")?;
        (ready["reason"] == "InvalidSpec")
            .then(|| ready["message"].as_str().unwrap_or_default().to_owned())
    })
    .await;
    assert!(
        refused.contains("widgets.example.com/v1 Widget"),
        "{refused}"
    );
    assert!(
        sb.get(Kind::SECRET, "addon-record-widgets").await.is_none(),
        "nothing is applied"
    );
    drop(controller);
}

#[tokio::test(flavor = "multi_thread")]
async fn with_kubevela_overrides_that_set_clusters_apart_are_refused_and_nothing_is_applied() {
    let split = fixture("split", "1.0.0", false);
    // KubeVela's CRDs are served and no engine is forced: KubeVela dispatches.
    let sb = Sandbox::with_kubevela().await.registries(&[&split]);
    install_crd(&sb).await;
    sb.join("m1", managed(1), &[("tier", "canary")]).await;
    sb.join("m2", managed(2), &[]).await;
    let controller = Child::start(&sb, &["--leader-elect=false"]).await;
    let spec = |selector: Value| {
        json!({"clusters": ["m1", "m2"],
               "overrides": [{"clusterSelector": selector, "parameters": {"count": 3}}]})
    };

    apply_addon(
        &sb,
        "split",
        spec(json!({"matchLabels": {"tier": "canary"}})),
    )
    .await;
    let refused = wait_for("Degraded, reason OverridesUnsupported", || async {
        let addon = addon(&sb, "split").await?;
        (condition(&addon, "Degraded")?["reason"] == "OverridesUnsupported").then_some(addon)
    })
    .await;
    let message = condition(&refused, "Degraded").unwrap()["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.contains("`m1`") && !message.contains("`m2`") && message.contains("direct engine"),
        "{message}"
    );
    assert_eq!(condition(&refused, "Ready").unwrap()["status"], "False");
    assert!(
        sb.get(Kind::SECRET, "addon-record-split").await.is_none(),
        "nothing is applied"
    );

    // An override that selects every target is the addon's own parameters: applied.
    apply_addon(&sb, "split", spec(json!({}))).await;
    let stored = wait_for("the addon applied with the override", || async {
        sb.stored_args("split").await
    })
    .await;
    assert_eq!(stored["count"], 3);
    drop(controller);
}
