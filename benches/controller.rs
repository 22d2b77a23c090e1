//! Controller benchmarks (issue 15's "Done means"). Parts, chosen by the arguments after `--`
//! (default: `unchanged rollout`; `fleet` runs alone, in its own process, so that its memory
//! figures are its own):
//!
//! - `unchanged`: an `Addon` (a small addon of 10 objects) selecting 10 managed API servers,
//!   reconciled by the controller running in this process ([`Controller::run`], no leader
//!   election): time to `Ready`, then N reconciles with nothing changed: API requests per
//!   reconcile by cluster and verb (counted from the API servers' audit logs) and the
//!   controller's own reconcile durations (median, p95, from its `/metrics`).
//! - `rollout`: `rollout::engine::run` (the library of `addonctl rollout run`) with stages of
//!   1, 3 and 6 clusters, 2 s soak each: wall time per stage split into soak and addonctl's
//!   own time (apply, gate observation).
//! - `drift`: the controller with its default settings (drift interval 10 s) and the same
//!   `Addon` on 10 clusters: how long after a hand edit (and after a deletion) on each managed
//!   cluster the object is as the record says again (polled every 20 ms).
//! - `fleet`: 1,000 simulated clusters behind a fake API server with added latency (see
//!   `support/fake_api.rs`): the controller's engine path of one full reconcile pass.
//! - `fleet-cli`: the same simulated clusters, `addonctl enable` of the addon to all of them (the
//!   binary next to this one, or `ADDONCTL_BENCH_BIN`), run three times: wall, CPU and peak
//!   memory of the command, requests per cluster.
//!
//! `unchanged` and `rollout` need an environment of `scripts/k8s/up.sh --managed 10` started
//! with `ADDONCTL_K8S_AUDIT=1` (`ADDONCTL_TEST_ENV`); `scripts/bench-controller.sh` starts one and
//! stops it afterwards.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::cast_precision_loss
)]

/// The system allocator, counting the bytes allocated: the `fleet` part reports what is live
/// after each pass (what a controller keeps between reconciles).
#[global_allocator]
static ALLOCATOR: cap::Cap<std::alloc::System> = cap::Cap::new(std::alloc::System, usize::MAX);

#[path = "support/audit.rs"]
mod audit;
#[path = "support/env.rs"]
mod env;
#[path = "support/fake_api.rs"]
mod fake_api;
#[path = "support/fleet.rs"]
mod fleet;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use addonctl::cluster::Cluster;
use addonctl::context::{Context, EngineChoice, NoopReporter, Reporter, Settings};
use addonctl::controller::{Controller, ControllerSettings};
use addonctl::rollout::engine::{RunRequest, DEFAULT_POLL_INTERVAL};
use addonctl::rollout::Rollout;
use audit::{count_by, AuditLogs};
use env::{connect, median, percentile, EnvFile};
use kube::core::GroupVersionKind;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// Managed clusters used.
const CLUSTERS: usize = 10;
/// The benchmark addon.
const ADDON: &str = "ctlbench";
/// The label every cluster of the `unchanged` part is joined with; the `Addon` selects it.
const SELECTOR: (&str, &str) = ("bench", "controller");
/// The longest any wait of the benchmark lasts.
const WAIT: Duration = Duration::from_secs(180);

/// `template.rhai` of the benchmark addon: 10 objects (a Namespace, 4 ConfigMaps, 2 Services,
/// 2 ServiceAccounts, a Role) on the clusters of the `clusters` argument.
pub const TEMPLATE: &str = r#"let ns = context.namespace;
let labels = #{ "app.kubernetes.io/part-of": "bench" };
let objects = [#{ apiVersion: "v1", kind: "Namespace", metadata: #{ name: ns, labels: labels } }];
for i in 0..4 {
    objects.push(#{ apiVersion: "v1", kind: "ConfigMap", metadata: #{ name: `ctl-${i}`, labels: labels },
        data: #{ index: `${i}`, "settings.yaml": "level: info\nretries: 3\n" } });
}
for i in 0..2 {
    objects.push(#{ apiVersion: "v1", kind: "Service", metadata: #{ name: `ctl-${i}`, labels: labels },
        spec: #{ selector: #{ app: `ctl-${i}` }, ports: [#{ name: "http", protocol: "TCP", port: 80, targetPort: 8080 }] } });
    objects.push(#{ apiVersion: "v1", kind: "ServiceAccount", metadata: #{ name: `ctl-${i}`, labels: labels } });
}
objects.push(#{ apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", metadata: #{ name: "ctl", labels: labels },
    rules: [#{ apiGroups: [""], resources: ["configmaps"], verbs: ["get", "list", "watch"] }] });
#{ output: application(#{ components: [k8s_objects("ctlbench", objects)],
    policies: [topology("where", parameter.clusters)] }) }
"#;

/// Writes the benchmark addon into the registry directory `dir`.
pub fn write_addon(dir: &Path) {
    let addon = dir.join(ADDON);
    fs_err::create_dir_all(&addon).unwrap();
    fs_err::write(
        addon.join("metadata.yaml"),
        format!("name: {ADDON}\nversion: 1.0.0\ndescription: 10 objects for every cluster\n"),
    )
    .unwrap();
    fs_err::write(
        addon.join("parameter.rhai"),
        "#{\n    clusters: list(string()).optional(),\n}\n",
    )
    .unwrap();
    fs_err::write(addon.join("template.rhai"), TEMPLATE).unwrap();
}

fn settings(namespace: &str, registry: &Path) -> Settings {
    Settings {
        engine: EngineChoice::Direct,
        registry_dirs: vec![registry.to_path_buf()],
        ..Settings::new(namespace)
    }
}

/// Polls `check` every 100 ms until it returns `Some`, at most [`WAIT`].
async fn wait_for<T, F, Fut>(what: &str, mut check: F) -> T
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
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The `Addon` CRD of `addonctl controller manifests`, applied and served.
async fn install_crd(cluster: &Cluster) {
    let crd = addonctl::controller::manifests::crd();
    cluster.apply(&crd, "default").await.unwrap();
    let gvk = GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition");
    wait_for("the Addon CRD is established", || async {
        let stored = cluster.get(&gvk, None, "addons.addonctl.io").await.ok()??;
        let stored = serde_json::to_value(stored).ok()?;
        stored["status"]["conditions"]
            .as_array()?
            .iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True")
            .then_some(())
    })
    .await;
    let addon = GroupVersionKind::gvk("addonctl.io", "v1alpha1", "Addon");
    wait_for("the Addon kind is served", || async {
        cluster.refresh_discovery();
        cluster.serves(&addon).await.unwrap_or(false).then_some(())
    })
    .await;
}

/// The system namespace, then every cluster of `managed` joined with `labels(i)`.
async fn join_all(
    ctx: &Context,
    managed: &[&env::ClusterEntry],
    labels: impl Fn(usize) -> BTreeMap<String, String>,
) {
    ctx.cluster
        .create_if_missing(
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ctx.namespace}}),
        )
        .await
        .unwrap();
    for (i, cluster) in managed.iter().enumerate() {
        addonctl::apply::clusters::join(
            &ctx.applier(),
            &cluster.name,
            &cluster.kubeconfig,
            None,
            &labels(i),
        )
        .await
        .unwrap();
    }
}

/// One `GET` of the controller's HTTP endpoint; the body.
async fn http_get(address: &str, path: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let request = format!("GET {path} HTTP/1.0\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    tokio::time::timeout(
        Duration::from_secs(10),
        stream.read_to_string(&mut response),
    )
    .await
    .unwrap()
    .unwrap();
    response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default()
}

/// The controller's reconcile counters: (reconciles, skipped, duration sum in seconds).
async fn reconcile_metrics(address: &str) -> (u64, u64, f64) {
    let text = http_get(address, "/metrics").await;
    let value = |prefix: &str| {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .and_then(|l| l.rsplit(' ').next())
            .unwrap_or("0")
            .to_owned()
    };
    let addon = format!("{{addon=\"{ADDON}\"}}");
    (
        value(&format!("addonctl_controller_reconciles_total{addon}"))
            .parse()
            .unwrap_or(0),
        value(&format!(
            "addonctl_controller_reconciles_skipped_total{addon}"
        ))
        .parse()
        .unwrap_or(0),
        value("addonctl_controller_reconcile_duration_seconds_sum")
            .parse()
            .unwrap_or(0.0),
    )
}

/// Reconciles of `ADDON`, unchanged: how many reconciles and their total duration, and each one
/// seen alone (`durations`).
struct Window {
    reconciles: u64,
    durations: Vec<f64>,
}

/// Observes the controller's `/metrics` until `n` more reconciles finished; every reconcile
/// seen alone between two scrapes 20 ms apart gives its own duration.
async fn observe_reconciles(address: &str, n: u64) -> Window {
    let (start, _, mut sum) = reconcile_metrics(address).await;
    let mut last = start;
    let mut durations = Vec::new();
    let started = Instant::now();
    while last < start + n {
        assert!(
            started.elapsed() < WAIT,
            "{n} reconciles not within {WAIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        let (count, _, now_sum) = reconcile_metrics(address).await;
        if count == last + 1 {
            durations.push(now_sum - sum);
        }
        last = count;
        sum = now_sum;
    }
    Window {
        reconciles: last - start,
        durations,
    }
}

#[tokio::main]
async fn main() {
    let parts: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if parts.first().map(String::as_str) == Some(fake_api::CHILD_ARGUMENT) {
        fake_api::child_main().await;
        return;
    }
    assert!(
        !parts.iter().any(|p| p == "fleet") || parts.len() == 1,
        "`fleet` runs alone (its memory figures are its process's): run it in an invocation of its own"
    );
    let parts = if parts.is_empty() {
        vec![
            "unchanged".to_owned(),
            "drift".to_owned(),
            "rollout".to_owned(),
        ]
    } else {
        parts
    };
    println!(
        "controller benchmarks ({} build, {} CPUs, load average {})",
        if cfg!(debug_assertions) {
            "dev profile, unoptimized"
        } else {
            "optimized"
        },
        std::thread::available_parallelism().map_or(0, std::num::NonZero::get),
        env::load_average(),
    );
    for part in &parts {
        match part.as_str() {
            "unchanged" => unchanged().await,
            "drift" => drift().await,
            "rollout" => rollout().await,
            "fleet" => Box::pin(fleet::run()).await,
            "fleet-cli" => fleet::cli().await,
            other => {
                panic!("unknown part `{other}`: one of unchanged, drift, rollout, fleet, fleet-cli")
            }
        }
    }
}

/// Part 1: an unchanged `Addon` on 10 clusters.
async fn unchanged() {
    let env = EnvFile::load("scripts/bench-controller.sh");
    let managed: Vec<&env::ClusterEntry> =
        env.managed(CLUSTERS).into_iter().take(CLUSTERS).collect();
    let mut names = vec![env.control_plane().name.clone()];
    names.extend(managed.iter().map(|c| c.name.clone()));
    let logs = AuditLogs::open(&env.dir, &names)
        .expect("the environment writes no audit logs: start it with ADDONCTL_K8S_AUDIT=1");
    let rounds: u64 = std::env::var("ADDONCTL_BENCH_RECONCILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let interval = Duration::from_secs(2);
    let bench = Part::start(&env, &managed, "bench-ctl", Some(interval)).await;
    let started = bench.applied;
    let (ctx, namespace, address) = (&bench.ctx, &bench.namespace, &bench.address);
    let gvk = addon_gvk();
    let ready = wait_ready(ctx, &gvk, namespace).await;
    let to_ready = started.elapsed();
    let summary = ready["status"]["clusterSummary"].clone();
    // Settled: two skipped reconciles in a row.
    wait_for("two unchanged reconciles", || async {
        let (_, skipped, _) = reconcile_metrics(address).await;
        (skipped >= 2).then_some(())
    })
    .await;
    let version_before = ready_version(ctx, &gvk, namespace).await;
    let from = logs.mark();
    let window_started = Instant::now();
    let window = observe_reconciles(address, rounds).await;
    let window_wall = window_started.elapsed();
    // The audit log is written once the response completed: let the last ones land.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let to = logs.mark();
    let version_after = ready_version(ctx, &gvk, namespace).await;
    let requests = logs.between(&from, &to);
    report_unchanged(&UnchangedFigures {
        to_ready,
        summary,
        window,
        window_wall,
        interval,
        requests,
        clusters: managed.len(),
        addon_rewritten: version_before != version_after,
    });

    bench.stop(&managed).await;
}

/// The `Addon` kind.
fn addon_gvk() -> GroupVersionKind {
    GroupVersionKind::gvk("addonctl.io", "v1alpha1", "Addon")
}

/// The controller of a part, in this process (no leader election), with the benchmark addon
/// in a registry of its own, the clusters joined with [`SELECTOR`] and an `Addon` selecting
/// them (drift policy `correct`).
struct Part {
    ctx: Context,
    namespace: String,
    address: String,
    /// When the `Addon` was applied.
    applied: Instant,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<addonctl::controller::Result<()>>,
    _registry: tempfile::TempDir,
}

impl Part {
    /// Starts it (`drift_interval`: the default when `None`) and applies the `Addon`.
    async fn start(
        env: &EnvFile,
        managed: &[&env::ClusterEntry],
        prefix: &str,
        drift_interval: Option<Duration>,
    ) -> Part {
        let registry = tempfile::tempdir().unwrap();
        write_addon(registry.path());
        let namespace = format!("{prefix}-{}", std::process::id());
        let settings = settings(&namespace, registry.path());
        let admin = connect(&env.control_plane().kubeconfig).await;
        install_crd(&admin).await;
        let ctx = Context::with_cluster(&settings, admin).unwrap();
        join_all(&ctx, managed, |_| {
            BTreeMap::from([(SELECTOR.0.to_owned(), SELECTOR.1.to_owned())])
        })
        .await;
        let mut controller_settings = ControllerSettings {
            metrics_address: "127.0.0.1:0".parse().unwrap(),
            leader_elect: false,
            // The bench's `Addon`s are written by the administrator without the admission
            // policy: the controller's own rights (no SubjectAccessReviews in the figures).
            authorize_as: addonctl::controller::trust::AuthorizeAs::Controller,
            ..ControllerSettings::default()
        };
        if let Some(interval) = drift_interval {
            controller_settings.drift_interval = interval;
        }
        let controller = Controller::bind(
            Context::with_cluster(&settings, connect(&env.control_plane().kubeconfig).await)
                .unwrap(),
            controller_settings,
        )
        .await
        .unwrap();
        let address = controller.address().to_string();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let running = tokio::spawn(controller.run(async {
            let _ = stopped.await;
        }));
        let object = json!({
            "apiVersion": "addonctl.io/v1alpha1", "kind": "Addon",
            "metadata": {"name": ADDON, "namespace": namespace},
            "spec": {"clusterSelector": {"matchLabels": {SELECTOR.0: SELECTOR.1}},
                     "drift": {"policy": "correct"}},
        });
        let applied = Instant::now();
        ctx.cluster.apply(&object, &namespace).await.unwrap();
        Part {
            ctx,
            namespace,
            address,
            applied,
            stop,
            task: running,
            _registry: registry,
        }
    }

    /// Stops the controller and removes what the part made.
    async fn stop(self, managed: &[&env::ClusterEntry]) {
        let _ = self.stop.send(());
        let _ = tokio::time::timeout(Duration::from_secs(40), self.task).await;
        cleanup(&self.ctx, managed, &addon_gvk()).await;
    }
}

/// Waits until the `Addon` is `Ready` for its generation; returns it.
async fn wait_ready(ctx: &Context, gvk: &GroupVersionKind, namespace: &str) -> Value {
    wait_for("the Addon is Ready", || async {
        let stored = ctx.cluster.get(gvk, Some(namespace), ADDON).await.ok()??;
        let stored = serde_json::to_value(stored).ok()?;
        let ready = stored["status"]["conditions"]
            .as_array()?
            .iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        (ready && stored["status"]["observedGeneration"] == stored["metadata"]["generation"])
            .then_some(stored)
    })
    .await
}

/// Part `drift`: latency from a hand edit (and a deletion) to the object as recorded again,
/// with the controller's default settings.
async fn drift() {
    use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
    let env = EnvFile::load("scripts/bench-controller.sh");
    let managed: Vec<&env::ClusterEntry> =
        env.managed(CLUSTERS).into_iter().take(CLUSTERS).collect();
    let bench = Part::start(&env, &managed, "bench-drift", None).await;
    let (ctx, namespace, address) = (&bench.ctx, &bench.namespace, &bench.address);
    let interval = ControllerSettings::default().drift_interval;
    wait_ready(ctx, &addon_gvk(), namespace).await;
    let watches = wait_for("the drift watches", || async {
        let text = http_get(address, "/metrics").await;
        let n: u64 = text.lines().find_map(|l| {
            l.strip_prefix("addonctl_controller_drift_watches ")?
                .parse()
                .ok()
        })?;
        (n >= (CLUSTERS * 5) as u64).then_some(n)
    })
    .await;
    let (mut edits, mut deletions) = (Vec::new(), Vec::new());
    for cluster in &managed {
        let client = connect(&cluster.kubeconfig).await.client().clone();
        let maps: kube::Api<ConfigMap> = kube::Api::namespaced(client.clone(), namespace);
        let edited = Instant::now();
        // As a person with `kubectl edit` would: another field manager (the client's
        // User-Agent would name addonctl).
        let person = kube::api::PatchParams {
            field_manager: Some("kubectl-edit".to_owned()),
            ..kube::api::PatchParams::default()
        };
        maps.patch(
            "ctl-0",
            &person,
            &kube::api::Patch::Merge(&json!({"data": {"index": "edited"}})),
        )
        .await
        .unwrap();
        wait_for("the edit reverted", || async {
            let map = maps.get("ctl-0").await.ok()?;
            (map.data?.get("index")? == "0").then_some(())
        })
        .await;
        edits.push(edited.elapsed().as_secs_f64());
        let accounts: kube::Api<ServiceAccount> = kube::Api::namespaced(client, namespace);
        let deleted = Instant::now();
        accounts
            .delete("ctl-1", &kube::api::DeleteParams::default())
            .await
            .unwrap();
        wait_for("the deleted object recreated", || async {
            accounts.get_opt("ctl-1").await.ok()?.map(|_| ())
        })
        .await;
        deletions.push(deleted.elapsed().as_secs_f64());
    }
    let text = http_get(address, "/metrics").await;
    let wakeups = text
        .lines()
        .find_map(|l| {
            l.strip_prefix(&format!(
                "addonctl_controller_drift_wakeups_total{{addon=\"{ADDON}\"}} "
            ))
        })
        .unwrap_or("0")
        .to_owned();
    println!(
        "\n## drift latency, default settings (drift interval {} s), {} managed clusters, {watches} drift watches",
        interval.as_secs(),
        managed.len()
    );
    let row = |what: &str, v: &[f64]| {
        let mut sorted = v.to_vec();
        sorted.sort_by(f64::total_cmp);
        println!(
            "| {what} | {} | {:.0} | {:.0} | {:.0} |",
            v.len(),
            sorted.first().copied().unwrap_or(0.0) * 1e3,
            median(v) * 1e3,
            sorted.last().copied().unwrap_or(0.0) * 1e3
        );
    };
    println!("| hand change | count | min ms | median ms | max ms |\n|---|---|---|---|---|");
    row("ConfigMap `data` edited → reverted", &edits);
    row("ServiceAccount deleted → recreated", &deletions);
    println!("reconciles started by a drift watch: {wakeups}");
    bench.stop(&managed).await;
}

async fn ready_version(ctx: &Context, gvk: &GroupVersionKind, namespace: &str) -> Option<String> {
    ctx.cluster
        .get(gvk, Some(namespace), ADDON)
        .await
        .ok()
        .flatten()
        .and_then(|a| a.metadata.resource_version)
}

struct UnchangedFigures {
    to_ready: Duration,
    summary: Value,
    window: Window,
    window_wall: Duration,
    interval: Duration,
    requests: Vec<audit::Request>,
    clusters: usize,
    addon_rewritten: bool,
}

fn report_unchanged(f: &UnchangedFigures) {
    let n = f.window.reconciles.max(1) as f64;
    let ms = |s: f64| s * 1e3;
    println!(
        "\n## unchanged Addon on {} managed clusters (controller in-process, drift policy `correct`, drift interval {} s)",
        f.clusters,
        f.interval.as_secs()
    );
    println!(
        "first reconcile: Ready after {:.0} ms (clusters healthy: {})",
        f.to_ready.as_secs_f64() * 1e3,
        f.summary
    );
    println!(
        "{} unchanged reconciles in {:.1} s; reconcile time (controller's own measure, {} seen alone): median {:.1} ms, p95 {:.1} ms",
        f.window.reconciles,
        f.window_wall.as_secs_f64(),
        f.window.durations.len(),
        ms(median(&f.window.durations)),
        ms(percentile(&f.window.durations, 95)),
    );
    let watches: Vec<&audit::Request> = f.requests.iter().filter(|r| r.verb == "watch").collect();
    let requests: Vec<audit::Request> = f
        .requests
        .iter()
        .filter(|r| r.verb != "watch")
        .cloned()
        .collect();
    let writes = requests.iter().filter(|r| r.is_write()).count();
    println!(
        "API requests per reconcile (audit logs; watches apart: {} ended in the window): {:.2} in all, {:.2} writes; `Addon` rewritten: {}",
        watches.len(),
        requests.len() as f64 / n,
        writes as f64 / n,
        f.addon_rewritten
    );
    println!("| cluster | verb | resource | per reconcile |\n|---|---|---|---|");
    let by = count_by(&requests, |r| {
        let cluster = if r.cluster.starts_with("managed-") {
            "each managed cluster".to_owned()
        } else {
            r.cluster.clone()
        };
        (cluster, r.verb.clone(), r.resource.clone())
    });
    for ((cluster, verb, resource), count) in &by {
        let per = if cluster == "each managed cluster" {
            *count as f64 / n / f.clusters as f64
        } else {
            *count as f64 / n
        };
        println!("| {cluster} | {verb} | {resource} | {per:.2} |");
    }
    let per_cluster = count_by(&requests, |r| r.cluster.clone());
    let spread: Vec<String> = per_cluster
        .iter()
        .map(|(c, k)| format!("{c} {:.1}", *k as f64 / n))
        .collect();
    println!("per cluster per reconcile: {}", spread.join(", "));
}

async fn cleanup(ctx: &Context, managed: &[&env::ClusterEntry], gvk: &GroupVersionKind) {
    let _ = ctx.cluster.delete(gvk, Some(&ctx.namespace), ADDON).await;
    let _ = addonctl::apply::disable(&ctx.applier(), ADDON, true, &NoopReporter).await;
    let namespace_gvk = GroupVersionKind::gvk("", "v1", "Namespace");
    for cluster in managed {
        let _ = connect(&cluster.kubeconfig)
            .await
            .delete(&namespace_gvk, None, &ctx.namespace)
            .await;
    }
}

/// Every step the rollout reports, with when.
#[derive(Default)]
struct Timeline(Mutex<Vec<(Instant, String)>>);

impl Reporter for Timeline {
    fn step(&self, message: &str) {
        self.0
            .lock()
            .unwrap()
            .push((Instant::now(), message.to_owned()));
    }
}

/// Part 2: a three-stage rollout to 10 clusters.
async fn rollout() {
    let env = EnvFile::load("scripts/bench-controller.sh");
    let managed: Vec<&env::ClusterEntry> =
        env.managed(CLUSTERS).into_iter().take(CLUSTERS).collect();
    let registry = tempfile::tempdir().unwrap();
    write_addon(registry.path());
    let namespace = format!("bench-ro-{}", std::process::id());
    let ctx = Context::with_cluster(
        &settings(&namespace, registry.path()),
        connect(&env.control_plane().kubeconfig).await,
    )
    .unwrap();
    let tiers = ["canary", "early", "early", "early"];
    join_all(&ctx, &managed, |i| {
        BTreeMap::from([(
            "tier".to_owned(),
            tiers.get(i).copied().unwrap_or("rest").to_owned(),
        )])
    })
    .await;
    let soak = 2;
    let stages: Rollout = serde_json::from_value(json!({
        "stages": [
            {"name": "canary", "clusterSelector": {"matchLabels": {"tier": "canary"}}, "soakSeconds": soak},
            {"name": "early", "clusterSelector": {"matchLabels": {"tier": "early"}}, "soakSeconds": soak},
            {"name": "rest", "clusterSelector": {"matchLabels": {"tier": "rest"}}, "soakSeconds": soak},
        ],
        "progressDeadlineSeconds": 120,
    }))
    .unwrap();
    let request = RunRequest {
        reference: ADDON.to_owned(),
        version: None,
        values_files: Vec::new(),
        pairs: Vec::new(),
        set_files: Vec::new(),
        rollout: stages,
        skip_version_check: false,
        adopt: false,
        poll_interval: DEFAULT_POLL_INTERVAL,
    };
    let timeline = Timeline::default();
    let started = Instant::now();
    let report = addonctl::rollout::engine::run(&ctx, &request, &timeline)
        .await
        .unwrap();
    let wall = started.elapsed();
    assert!(report.succeeded(), "{report:?}");
    let steps = timeline.0.lock().unwrap().clone();
    report_rollout(started, wall, &steps, soak, ["canary", "early", "rest"]);
    let _ = addonctl::apply::disable(&ctx.applier(), ADDON, true, &NoopReporter).await;
    let namespace_gvk = GroupVersionKind::gvk("", "v1", "Namespace");
    for cluster in &managed {
        let _ = connect(&cluster.kubeconfig)
            .await
            .delete(&namespace_gvk, None, &namespace)
            .await;
    }
}

fn report_rollout(
    started: Instant,
    wall: Duration,
    steps: &[(Instant, String)],
    soak: u64,
    stages: [&str; 3],
) {
    let s = |d: Duration| d.as_secs_f64();
    println!(
        "\n## three-stage rollout to 10 clusters (1 / 3 / 6), soak {soak} s per stage, gate observed every {} s (the CLI's default)",
        DEFAULT_POLL_INTERVAL.as_secs()
    );
    println!("| stage | clusters | wall s | apply s | gate s (soak + observation) | soak s | addonctl's own s |\n|---|---|---|---|---|---|---|");
    let mut own_total = 0.0;
    let mut previous_end = started;
    for (stage, clusters) in stages.iter().zip([1, 3, 6]) {
        let begin = steps
            .iter()
            .find(|(_, m)| m.starts_with(&format!("stage `{stage}`: applying")))
            .map(|(t, _)| *t)
            .expect("the stage began");
        let gate = steps
            .iter()
            .find(|(t, m)| *t >= begin && m.starts_with("waiting for"))
            .map(|(t, _)| *t)
            .expect("the gate was observed");
        let end = steps
            .iter()
            .find(|(t, m)| {
                *t >= gate && m.starts_with(&format!("stage `{stage}`:")) && m.contains("passed")
            })
            .map(|(t, _)| *t)
            .expect("the stage passed");
        // The stage's wall time starts where the previous one ended (planning included).
        let stage_wall = s(end - previous_end);
        let own = stage_wall - soak as f64;
        own_total += own;
        println!(
            "| {stage} | {clusters} | {stage_wall:.2} | {:.2} | {:.2} | {soak} | {own:.2} |",
            s(gate - begin),
            s(end - gate),
        );
        previous_end = end;
    }
    let soak_total = 3.0 * soak as f64;
    println!(
        "total: {:.2} s wall, {soak_total:.0} s soak ({:.0} %), {own_total:.2} s addonctl's own (apply + gate observation, of which up to one poll interval per stage is waiting for the next observation)",
        s(wall),
        100.0 * soak_total / s(wall),
    );
}
