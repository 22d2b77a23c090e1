//! Staged upgrades against real API servers: `staged` 1.0.0 enabled on `m1`, `m2`, `m3`
//! (managed-1..3), then `rollout run` to 1.1.0 one cluster per stage. 1.1.0 changes the
//! ConfigMap `settings` (`mode`: `strict` → `relaxed`) and the Deployment `web`'s image, and no
//! longer renders the ConfigMap `legacy`. `web`'s pods are held until the test releases them on
//! a cluster (`release_pods_on`); the cluster's controllers, scheduler and kwok then make it
//! ready.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use addonctl::cluster::Cluster;
use addonctl::context::{NoopReporter, Reporter};
use addonctl::rollout::engine::{run, RunRequest};
use addonctl::rollout::gate::Phase;
use addonctl::rollout::Rollout;
use serde_json::{json, Value};

use crate::support::builders::TestAddon;
use crate::support::k8s::{
    fault_cluster_lock, get_on, release_pods_on, Env, Kind, Sandbox, HELD_POOL_RHAI,
};

/// `staged` at `version`: its Namespace, ConfigMap `settings`, Deployment `web` and, in 1.0.0
/// only, ConfigMap `legacy`, on the clusters of its `clusters` argument; `web`'s pods are held.
fn versioned(version: &str) -> TestAddon {
    let (mode, legacy) = if version == "1.0.0" {
        (
            "strict",
            r#"objects.push(#{ apiVersion: "v1", kind: "ConfigMap", metadata: #{ name: "legacy", labels: labels },
    data: #{ kept: "until 1.1.0" } });"#,
        )
    } else {
        ("relaxed", "")
    };
    let template = format!(
        r#"{HELD_POOL_RHAI}let ns = context.namespace;
let addon = context.metadata.name;
let labels = #{{ "addonctl.test/addon": addon }};
let objects = [];
objects.push(#{{ apiVersion: "v1", kind: "Namespace", metadata: #{{ name: ns, labels: labels }} }});
objects.push(#{{ apiVersion: "v1", kind: "ConfigMap", metadata: #{{ name: "settings", labels: labels }},
    data: #{{ mode: "{mode}" }} }});
{legacy}
objects.push(#{{ apiVersion: "apps/v1", kind: "Deployment", metadata: #{{ name: "web", labels: labels }},
    spec: #{{
        replicas: 2,
        selector: #{{ matchLabels: #{{ app: "web" }} }},
        template: #{{
            metadata: #{{ labels: #{{ app: "web" }} }},
            spec: #{{ nodeSelector: held_pool(ns), containers: [#{{ name: "web", image: `registry.example/web:${{context.metadata.version}}` }}] }},
        }},
    }} }});
#{{ output: application(#{{ components: [k8s_objects(addon, objects)],
    policies: [topology("where", parameter.clusters)] }}) }}
"#
    );
    TestAddon::new("staged")
        .file(
            "metadata.yaml",
            &format!("name: staged\nversion: {version}\ndescription: Fixture addon staged\n"),
        )
        .file(
            "parameter.rhai",
            "#{\n    clusters: list(string()).optional(),\n}\n",
        )
        .file("template.rhai", &template)
}

/// One stage per cluster: `one` (m1), `two` (m2), `three` (m3).
fn three_stages(soak_seconds: u64, deadline_seconds: u64) -> Rollout {
    let stage = |name: &str| {
        json!({"name": name, "clusterSelector": {"matchLabels": {"stage": name}},
               "soakSeconds": soak_seconds})
    };
    serde_json::from_value(json!({
        "stages": [stage("one"), stage("two"), stage("three")],
        "progressDeadlineSeconds": deadline_seconds,
    }))
    .unwrap()
}

/// Joins managed-1..3 as `m1`..`m3` (stages `one`..`three`) and enables `staged` 1.0.0 on all
/// three; returns each cluster's admin client.
async fn installed_on_three(sb: &Sandbox) -> Vec<(&'static str, Cluster)> {
    let mut clusters = Vec::new();
    for (name, n, stage) in [("m1", 1, "one"), ("m2", 2, "two"), ("m3", 3, "three")] {
        let env = Env::get().managed_n(n);
        sb.join(name, env, &[("stage", stage)]).await;
        clusters.push((name, env.admin().await));
    }
    sb.enable("staged", json!({"clusters": ["m1", "m2", "m3"]}))
        .await
        .unwrap();
    for (name, cluster) in &clusters {
        assert_eq!(what_runs(cluster, sb.ns()).await.version, "1.0.0", "{name}");
    }
    clusters
}

fn upgrade_to(newer: &TestAddon, rollout: Rollout) -> RunRequest {
    RunRequest {
        reference: newer.path().display().to_string(),
        version: None,
        values_files: Vec::new(),
        pairs: Vec::new(),
        set_files: Vec::new(),
        rollout,
        skip_version_check: false,
        adopt: false,
        poll_interval: Duration::from_millis(200),
    }
}

/// What one cluster runs, read from its objects.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Runs {
    /// The version in `web`'s image.
    version: String,
    /// `settings`' `mode`.
    mode: String,
    /// Whether `legacy` is there.
    legacy: bool,
    /// `settings`' resourceVersion (unchanged = not written).
    settings_version: String,
}

async fn what_runs(cluster: &Cluster, ns: &str) -> Runs {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_owned();
    let web = get_on(cluster, Kind::DEPLOYMENT, Some(ns), "web").await;
    let image = text(
        web.as_ref()
            .and_then(|w| w.pointer("/spec/template/spec/containers/0/image")),
    );
    let settings = get_on(cluster, Kind::CONFIG_MAP, Some(ns), "settings").await;
    Runs {
        version: image.rsplit(':').next().unwrap_or_default().to_owned(),
        mode: text(settings.as_ref().and_then(|s| s.pointer("/data/mode"))),
        legacy: get_on(cluster, Kind::CONFIG_MAP, Some(ns), "legacy")
            .await
            .is_some(),
        settings_version: text(
            settings
                .as_ref()
                .and_then(|s| s.pointer("/metadata/resourceVersion")),
        ),
    }
}

/// Per cluster, what it runs and the version its record entry says.
type Snapshot = BTreeMap<&'static str, (Runs, String)>;

/// At the start of each stage, what every cluster runs and what the record says it runs.
struct Snapshots<'a> {
    sb: &'a Sandbox,
    clusters: &'a [(&'static str, Cluster)],
    taken: Mutex<Vec<(String, Snapshot)>>,
}

impl Reporter for Snapshots<'_> {
    fn step(&self, message: &str) {
        let Some(stage) = message
            .strip_prefix("stage `")
            .and_then(|m| m.split_once("`: applying to"))
            .map(|(stage, _)| stage.to_owned())
        else {
            return;
        };
        let snapshot = tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(async {
                let record = self.sb.record("staged").await;
                let mut out = BTreeMap::new();
                for (name, cluster) in self.clusters {
                    let recorded = record.cluster_version(name).unwrap_or_default().to_owned();
                    out.insert(*name, (what_runs(cluster, self.sb.ns()).await, recorded));
                }
                out
            })
        });
        self.taken.lock().unwrap().push((stage, snapshot));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_staged_upgrade_moves_each_cluster_when_its_stage_comes_and_prunes_only_there() {
    let _managed_3 = fault_cluster_lock().await;
    let (installed, newer) = (versioned("1.0.0"), versioned("1.1.0"));
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&installed]);
    let clusters = installed_on_three(&sb).await;
    let before = what_runs(&clusters[2].1, sb.ns()).await;
    for (_, cluster) in &clusters {
        release_pods_on(cluster, sb.ns()).await;
    }
    let snapshots = Snapshots {
        sb: &sb,
        clusters: &clusters,
        taken: Mutex::new(Vec::new()),
    };

    let report = run(
        &sb.ctx,
        &upgrade_to(&newer, three_stages(1, 60)),
        &snapshots,
    )
    .await
    .unwrap();

    assert!(report.succeeded(), "{:?}", report.state);
    assert_eq!(report.state.done, ["m1", "m2", "m3"]);
    let taken = snapshots.taken.into_inner().unwrap();
    let stages: Vec<&str> = taken.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(stages, ["one", "two", "three"]);
    // Each stage starts with the earlier stages' clusters on 1.1.0 (`legacy` pruned there) and
    // the later ones on 1.0.0 with every object of 1.0.0, in the record and on the cluster.
    for (index, (stage, snapshot)) in taken.iter().enumerate() {
        for (position, (name, (runs, recorded))) in snapshot.iter().enumerate() {
            let moved = position < index;
            let (version, mode) = if moved {
                ("1.1.0", "relaxed")
            } else {
                ("1.0.0", "strict")
            };
            assert_eq!(
                (runs.version.as_str(), runs.mode.as_str(), runs.legacy),
                (version, mode, !moved),
                "{name} at the start of stage `{stage}`"
            );
            assert_eq!(
                recorded, version,
                "{name}'s record entry at stage `{stage}`"
            );
        }
    }
    // The held cluster was not written to before its stage.
    let (_, last) = &taken[2];
    assert_eq!(last["m3"].0, before, "m3 was touched before its stage");
    for (name, cluster) in &clusters {
        let runs = what_runs(cluster, sb.ns()).await;
        assert_eq!(
            (runs.version.as_str(), runs.mode.as_str(), runs.legacy),
            ("1.1.0", "relaxed", false),
            "{name} after the rollout"
        );
    }
    let record = sb.record("staged").await;
    assert_eq!(record.version, "1.1.0");
    assert!(!record.is_mixed(), "{:?}", record.cluster_versions());
    assert_eq!(record.pending, None);
    assert!(record
        .dispatched
        .values()
        .all(|i| i.objects.iter().all(|o| o.object.name != "legacy")));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_gate_failing_at_stage_two_leaves_the_later_clusters_on_the_old_version_whole() {
    let _managed_3 = fault_cluster_lock().await;
    let (installed, newer) = (versioned("1.0.0"), versioned("1.1.0"));
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&installed]);
    let clusters = installed_on_three(&sb).await;
    let before = what_runs(&clusters[2].1, sb.ns()).await;
    // Only m1's workload ever becomes ready: m2's gate cannot pass.
    release_pods_on(&clusters[0].1, sb.ns()).await;

    let report = run(
        &sb.ctx,
        &upgrade_to(&newer, three_stages(1, 4)),
        &NoopReporter,
    )
    .await
    .unwrap();

    assert_eq!(report.state.phase, Phase::Failed, "{:?}", report.state);
    let message = report.state.message.clone().unwrap_or_default();
    assert!(message.starts_with("stage `two`"), "{message}");
    assert_eq!(report.state.done, ["m1"]);
    assert_eq!(report.untouched, ["m3"]);
    for (name, cluster) in &clusters[..2] {
        let runs = what_runs(cluster, sb.ns()).await;
        assert_eq!(
            (runs.version.as_str(), runs.mode.as_str(), runs.legacy),
            ("1.1.0", "relaxed", false),
            "{name}"
        );
    }
    let m3 = what_runs(&clusters[2].1, sb.ns()).await;
    assert_eq!(m3, before, "m3 was touched");
    assert!(m3.legacy && m3.mode == "strict" && m3.version == "1.0.0");
    let record = sb.record("staged").await;
    assert_eq!(record.version, "1.1.0");
    assert_eq!(
        record.cluster_versions(),
        BTreeMap::from([
            ("m1".to_owned(), "1.1.0".to_owned()),
            ("m2".to_owned(), "1.1.0".to_owned()),
            ("m3".to_owned(), "1.0.0".to_owned()),
        ])
    );
    assert!(record.dispatched["m3"]
        .objects
        .iter()
        .any(|o| o.object.name == "legacy"));

    let output = sb
        .cli()
        .args(["status", "staged", "-o", "json"])
        .output()
        .unwrap();
    let status: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    assert_eq!(status["phase"], "upgrading", "{status}");
    assert_eq!(status["installedVersion"], "1.1.0", "{status}");
    let reason = status["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("2 of 3 clusters on 1.1.0 (`m3` on 1.0.0)"),
        "{status}"
    );
    let versions: BTreeMap<&str, &str> = status["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["cluster"].as_str().unwrap(),
                c["version"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        versions,
        BTreeMap::from([("m1", "1.1.0"), ("m2", "1.1.0"), ("m3", "1.0.0")])
    );
    let text = sb.cli().args(["status", "staged"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("phase:     upgrading"), "{text}");
    assert!(
        text.contains(&format!("cluster {:<16} (at 1.0.0)", "m3")),
        "{text}"
    );
}
