//! Revisions, history and rollback, and the record's storage, against the real API servers:
//! enable 1.0.0 → the registry moves to 2.0.0 (a directory registry holds one version, so
//! 1.0.0 is gone from it) → upgrade 2.0.0 → `rollback` restores 1.0.0's
//! objects and arguments (secret ones included) and prunes what only 2.0.0 had; `history`
//! lists the revisions; `--history-max` is honoured; no secret value is in clear in a record
//! Secret; a large record is sharded and reads back identically; disable removes every part.

use addonctl::apply::UpgradeRequest;
use addonctl::context::NoopReporter;
use addonctl::plan::EnableRequest;
use addonctl::state::record::storage::{self, LABEL_RECORD_OF};
use addonctl::state::record::{record_name, ClusterInventory, DispatchedObject, ObjectRef, Record};
use addonctl::state::revisions::{History, RevisionStatus};
use base64::Engine as _;
use serde_json::{json, Value};

use crate::support::builders::TestAddon;
use crate::support::k8s::{args, get_on, list_on, Env, Kind, Sandbox};

const LABEL: &str = "test.addonctl.io/addon";
const TOKEN: &str = "tok-one-s3cr3t-value";

/// Version `version` of addon `roll` written over the directory: ConfigMaps `roll-<name>` (each
/// with the `greeting` argument) on the clusters of the `clusters` argument.
fn version(addon: TestAddon, version: &str, config_maps: &[&str]) -> TestAddon {
    let names = config_maps
        .iter()
        .map(|n| format!("\"{n}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let template = format!(
        "let labels = #{{ \"{LABEL}\": \"roll\" }};\n\
         let objects = [];\n\
         for n in [{names}] {{\n\
             objects.push(#{{ apiVersion: \"v1\", kind: \"ConfigMap\",\n\
                 metadata: #{{ name: `roll-${{n}}`, labels: labels }},\n\
                 data: #{{ greeting: parameter.greeting }} }});\n\
         }}\n\
         #{{ output: application(#{{ components: [k8s_objects(\"roll\", objects)],\n\
             policies: [topology(\"where\", parameter.clusters)] }}) }}\n"
    );
    addon
        .file(
            "metadata.yaml",
            &format!("name: roll\nversion: {version}\ndescription: Rollback fixture\n"),
        )
        .file(
            "parameter.rhai",
            "#{\n    greeting: string(\"hello\"),\n    token: string().optional().secret(),\n    clusters: list(string()).optional(),\n}\n",
        )
        .file("template.rhai", &template)
}

/// A directory registry holding `roll` 1.0.0 (ConfigMaps `a`, `b`); 2.0.0 has `a`, `c`.
fn registry() -> TestAddon {
    version(TestAddon::new("roll"), "1.0.0", &["a", "b"])
}

/// `roll`'s ConfigMaps on a cluster: name → greeting.
async fn config_maps(sb: &Sandbox, cluster: &addonctl::cluster::Cluster) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = list_on(cluster, Kind::CONFIG_MAP, Some(sb.ns()))
        .await
        .into_iter()
        .filter(|o| o["metadata"]["labels"][LABEL] == "roll")
        .filter(|o| o["metadata"]["deletionTimestamp"].is_null())
        .map(|o| {
            (
                o["metadata"]["name"].as_str().unwrap().to_owned(),
                o["data"]["greeting"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect();
    out.sort();
    out
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

async fn enable_v1(sb: &Sandbox, history_max: Option<usize>) {
    let request = EnableRequest {
        reference: "roll".to_owned(),
        version: Some("1.0.0".to_owned()),
        args: args(json!({"greeting": "one", "token": TOKEN, "clusters": ["m1"]})).into(),
        history: History {
            max: history_max,
            description: None,
        },
        ..EnableRequest::default()
    };
    addonctl::apply::enable(&sb.ctx, &request, &NoopReporter)
        .await
        .unwrap();
}

async fn upgrade(sb: &Sandbox, version: &str, greeting: &str, history_max: Option<usize>) {
    addonctl::apply::upgrade(
        &sb.ctx,
        &UpgradeRequest {
            name: "roll".to_owned(),
            enable: EnableRequest {
                version: Some(version.to_owned()),
                args: args(json!({"greeting": greeting})).into(),
                history: History {
                    max: history_max,
                    description: None,
                },
                ..EnableRequest::default()
            },
            ..UpgradeRequest::default()
        },
        &NoopReporter,
    )
    .await
    .unwrap();
}

/// Every Secret of the record (the record itself, its shards and revision Secrets), decoded:
/// name → key → text.
async fn record_secrets(sb: &Sandbox) -> Vec<(String, Vec<(String, String)>)> {
    let mut out = Vec::new();
    let secrets = list_on(sb.api(), Kind::SECRET, Some(sb.ns())).await;
    for secret in secrets {
        let name = secret["metadata"]["name"].as_str().unwrap().to_owned();
        let ours =
            name == record_name("roll") || secret["metadata"]["labels"][LABEL_RECORD_OF] == "roll";
        if !ours {
            continue;
        }
        let data = secret["data"].as_object().cloned().unwrap_or_default();
        let decoded = data
            .iter()
            .map(|(key, value)| {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(value.as_str().unwrap())
                    .unwrap();
                let text = match storage::gunzip(&bytes, 1 << 30) {
                    Ok(inflated) => String::from_utf8_lossy(&inflated).into_owned(),
                    Err(_) => String::from_utf8_lossy(&bytes).into_owned(),
                };
                (key.clone(), text)
            })
            .collect();
        out.push((name, decoded));
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn rollback_after_the_registry_dropped_the_version_restores_its_objects_and_arguments() {
    let registry = registry();
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&registry]);
    sb.join("m1", Env::get().managed_n(1), &[]).await;
    let m1 = Env::get().managed_n(1).admin().await;
    enable_v1(&sb, None).await;
    // The registry moves on: 2.0.0 replaces 1.0.0 (a fresh process reads it).
    let registry = version(registry, "2.0.0", &["a", "c"]);
    let output = sb
        .cli()
        .args(["upgrade", "roll", "--version", "2.0.0", "greeting=two"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        config_maps(&sb, &m1).await,
        pairs(&[("roll-a", "two"), ("roll-c", "two")])
    );
    let output = sb
        .cli()
        .args(["enable", "roll", "--version", "1.0.0"])
        .output()
        .unwrap();
    assert!(
        !output.status.success(),
        "the registry has no 1.0.0 any more"
    );

    let output = sb.cli().args(["rollback", "roll"]).output().unwrap();

    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("rolled back to revision 1 (1.0.0, from its kept package)"),
        "{stdout}"
    );
    assert_eq!(
        config_maps(&sb, &m1).await,
        pairs(&[("roll-a", "one"), ("roll-b", "one")]),
        "1.0.0's objects and arguments are back, 2.0.0's `roll-c` is pruned"
    );
    let stored = sb.stored_args("roll").await.unwrap();
    assert_eq!(stored["greeting"], "one");
    assert_eq!(stored["token"], TOKEN, "the secret argument is restored");
    assert!(get_on(&m1, Kind::CONFIG_MAP, Some(sb.ns()), "roll-c")
        .await
        .is_none_or(|o| !o["metadata"]["deletionTimestamp"].is_null()));

    let output = sb
        .cli()
        .args(["history", "roll", "-o", "json"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let history: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    let seen: Vec<(u64, &str, &str, &str)> = history
        .iter()
        .map(|r| {
            (
                r["revision"].as_u64().unwrap(),
                r["version"].as_str().unwrap(),
                r["status"].as_str().unwrap(),
                r["description"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (1, "1.0.0", "superseded", "install"),
            (2, "2.0.0", "superseded", "upgrade"),
            (3, "1.0.0", "deployed", "rollback to 1"),
        ]
    );
    let table = sb.cli().args(["history", "roll"]).output().unwrap();
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(table.starts_with("REVISION  UPDATED"), "{table}");
    assert!(table.contains("rollback to 1"), "{table}");

    // The secret value is never in clear in the record, only in the revision Secrets' key
    // `secretArgs`.
    let secrets = record_secrets(&sb).await;
    assert!(secrets.len() >= 4, "{secrets:?}");
    for (name, data) in &secrets {
        for (key, text) in data {
            if text.contains(TOKEN) {
                assert!(
                    key == "secretArgs" && name.contains("-rev-"),
                    "`{TOKEN}` in clear in Secret `{name}` key `{key}`"
                );
            }
        }
    }
    let record = sb.record("roll").await;
    assert!(!serde_json::to_string(&record).unwrap().contains(TOKEN));
    assert_eq!(record.revisions[0].secret_args, ["token"]);

    // Disable removes the record and every part of it.
    let output = sb.cli().args(["disable", "roll"]).output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(record_secrets(&sb).await.is_empty());
    drop(registry);
}

#[tokio::test(flavor = "multi_thread")]
async fn history_max_keeps_the_newest_revisions_and_deletes_the_others_secrets() {
    let registry = registry();
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&registry]);
    sb.join("m1", Env::get().managed_n(1), &[]).await;
    enable_v1(&sb, Some(2)).await;
    // Unchanged: no revision.
    upgrade(&sb, "1.0.0", "one", Some(2)).await;
    assert_eq!(sb.record("roll").await.revisions.len(), 1);
    for greeting in ["x", "y", "z"] {
        upgrade(&sb, "1.0.0", greeting, Some(2)).await;
    }

    let record = sb.record("roll").await;
    let kept: Vec<(u32, RevisionStatus)> = record
        .revisions
        .iter()
        .map(|r| (r.revision, r.status))
        .collect();
    assert_eq!(
        kept,
        [
            (3, RevisionStatus::Superseded),
            (4, RevisionStatus::Deployed)
        ]
    );
    let mut names: Vec<String> = record_secrets(&sb)
        .await
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            record_name("roll"),
            format!("{}-rev-3", record_name("roll")),
            format!("{}-rev-4", record_name("roll")),
        ]
    );
    let output = sb.cli().args(["rollback", "roll", "1"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("has no revision 1; it keeps 3, 4"),
        "{stderr}"
    );
}

/// A record of `objects` ConfigMaps on each of `clusters` clusters.
fn large(objects: usize, clusters: usize) -> Record {
    let mut record: Record = serde_json::from_value(json!({
        "name": "large", "version": "1.0.0", "registry": "local", "installedBy": "user",
        "argsHash": "h", "application": false,
    }))
    .unwrap();
    for c in 0..clusters {
        let objects = (0..objects)
            .map(|o| DispatchedObject {
                object: ObjectRef {
                    api_version: "v1".to_owned(),
                    kind: "ConfigMap".to_owned(),
                    namespace: Some("large-system".to_owned()),
                    name: format!("large-config-{o}"),
                },
                uid: format!(
                    "{:016x}-{c:04}-{o:04}",
                    (c * 7919 + o * 104_729) as u64 * 0x9e37_79b9
                ),
                created: true,
            })
            .collect();
        record.dispatched.insert(
            format!("cluster-{c}"),
            ClusterInventory {
                objects,
                error: None,
                revision: None,
            },
        );
    }
    record
}

#[tokio::test(flavor = "multi_thread")]
async fn a_large_record_is_sharded_on_the_server_and_reads_back_identically() {
    let sb = Sandbox::without_kubevela().await;
    sb.api()
        .create_if_missing(&addonctl::model::wire::namespace_object(sb.ns()))
        .await
        .unwrap();
    let record = large(800, 10);
    assert!(serde_json::to_vec(&record).unwrap().len() > 1024 * 1024);

    let written = storage::write(sb.api(), sb.ns(), &record, None, false)
        .await
        .unwrap();

    assert!(matches!(written, storage::Written::Stored(_, true)));
    let read = storage::read(sb.api(), sb.ns(), "large").await.unwrap();
    assert!(read.sharded);
    assert_eq!(read.record.as_ref(), Some(&record));
    let all = sb.ctx.state().records().await.unwrap();
    assert_eq!(all, std::slice::from_ref(&record));
    let shards = list_on(sb.api(), Kind::SECRET, Some(sb.ns()))
        .await
        .into_iter()
        .filter(|s| s["metadata"]["labels"][LABEL_RECORD_OF] == "large")
        .count();
    assert!(shards >= 1);

    // Smaller again: back to one Secret, the shards deleted.
    let small = large(2, 1);
    let written = storage::write(
        sb.api(),
        sb.ns(),
        &small,
        read.resource_version.as_deref(),
        true,
    )
    .await
    .unwrap();
    assert!(matches!(written, storage::Written::Stored(_, false)));
    let read = storage::read(sb.api(), sb.ns(), "large").await.unwrap();
    assert_eq!(read.record, Some(small));
    assert!(!list_on(sb.api(), Kind::SECRET, Some(sb.ns()))
        .await
        .iter()
        .any(|s| s["metadata"]["labels"][LABEL_RECORD_OF] == "large"));
}

/// The fixture's ConfigMaps of `addon` on managed cluster `n`, counted.
async fn fixture_count(sb: &Sandbox, n: usize, addon: &str) -> usize {
    crate::controller::config_maps(&Env::get().managed_n(n).admin().await, sb.ns(), addon)
        .await
        .len()
}

/// Enables the fixture `tuned` on m1 and m2 with `count` = 2, m1 getting `count` = `m1_count`
/// over it when given — as the controller applies an `Addon`'s spec: all of it, nothing kept
/// from the last apply (`reset_values`).
async fn enable_tuned(sb: &Sandbox, m1_count: Option<u64>) {
    let mut overrides = addonctl::plan::Overrides::default();
    if let Some(count) = m1_count {
        overrides.parameters.push(
            json!({ "count": count })
                .as_object()
                .cloned()
                .unwrap_or_default(),
        );
        overrides.groups.push(addonctl::plan::OverrideGroup {
            overrides: vec![0],
            clusters: vec!["m1".to_owned()],
        });
    }
    let request = EnableRequest {
        reference: "tuned".to_owned(),
        args: args(json!({"count": 2, "clusters": ["m1", "m2"]})).into(),
        overrides,
        reset_values: true,
        ..EnableRequest::default()
    };
    addonctl::apply::enable(&sb.ctx, &request, &NoopReporter)
        .await
        .unwrap();
}

/// A sandbox with m1 and m2 joined and `tuned` enabled there, m1 with `count` = 3 over the
/// arguments (the fixture addon is returned with it: its directory lives as long as it does).
async fn tuned_with_an_override() -> (Sandbox, TestAddon) {
    let tuned = crate::controller::fixture("tuned", "1.0.0", false);
    let sb = Sandbox::with_kubevela()
        .await
        .direct()
        .registries(&[&tuned]);
    sb.join("m1", Env::get().managed_n(1), &[]).await;
    sb.join("m2", Env::get().managed_n(2), &[]).await;
    enable_tuned(&sb, Some(3)).await;
    (sb, tuned)
}

#[tokio::test(flavor = "multi_thread")]
async fn rollback_gives_each_cluster_the_parameters_it_had_in_that_revision() {
    let (sb, _tuned) = tuned_with_an_override().await;
    assert_eq!(
        (
            fixture_count(&sb, 1, "tuned").await,
            fixture_count(&sb, 2, "tuned").await
        ),
        (3, 2)
    );
    // The override gone: a revision of its own.
    enable_tuned(&sb, None).await;
    assert_eq!(fixture_count(&sb, 1, "tuned").await, 2);
    let record = sb.ctx.state().record("tuned").await.unwrap().unwrap();
    let numbers: Vec<u32> = record.revisions.iter().map(|r| r.revision).collect();
    assert_eq!(numbers, [1, 2], "{:?}", record.revisions);
    let first = &record.revisions[0].overrides;
    assert_eq!(first.len(), 1, "{first:?}");
    let set = first.values().next().unwrap();
    assert_eq!(
        (set.parameters["count"].clone(), set.clusters.clone()),
        (json!(3), vec!["m1".to_owned()])
    );
    assert!(record.revisions[1].overrides.is_empty());

    let report = addonctl::apply::rollback(
        &sb.ctx,
        &addonctl::apply::RollbackRequest {
            name: "tuned".to_owned(),
            revision: Some(1),
            history_max: None,
            override_definitions: false,
            adopt: false,
            skip_version_check: false,
            skip_api_check: false,
        },
        &NoopReporter,
    )
    .await
    .unwrap();
    assert_eq!(report.revision, 1);
    assert_eq!(
        (
            fixture_count(&sb, 1, "tuned").await,
            fixture_count(&sb, 2, "tuned").await
        ),
        (3, 2),
        "m1 has its override again, m2 the arguments alone"
    );
    let record = sb.ctx.state().record("tuned").await.unwrap().unwrap();
    let (key, _) = record
        .cluster_parameters("m1")
        .expect("m1 gets a parameter set");
    assert_eq!(record.overrides[key]["count"], json!(3));
    assert!(record.cluster_parameters("m2").is_none());
}

/// `enable` (and `diff`) without `--reset-values` keep the parameters clusters got over the
/// arguments (an `Addon`'s overrides), as they keep the stored arguments; `diff` shows them per
/// cluster; `--reset-values` drops them.
#[tokio::test(flavor = "multi_thread")]
async fn enable_keeps_the_parameters_clusters_got_over_the_arguments_until_reset() {
    let (sb, _tuned) = tuned_with_an_override().await;
    let counts = || async {
        (
            fixture_count(&sb, 1, "tuned").await,
            fixture_count(&sb, 2, "tuned").await,
        )
    };
    assert_eq!(counts().await, (3, 2));

    // Another count for the addon: m2 gets it, m1 keeps what it got over the arguments.
    let enabled = sb
        .cli()
        .args(["enable", "tuned", "count=4"])
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&enabled.get_output().stderr).into_owned();
    assert!(
        stderr.contains("keeping the parameters (count) cluster m1 got over the arguments"),
        "{stderr}"
    );
    assert_eq!(counts().await, (3, 4));

    // `diff --reset-values` shows m1's parameter going back to the arguments' value.
    let reset = ["tuned", "--reset-values", "count=4", "--clusters", "m1,m2"];
    let diffed = sb.cli().arg("diff").args(reset).assert().code(1);
    let stdout = String::from_utf8_lossy(&diffed.get_output().stdout).into_owned();
    assert!(
        stdout.contains(
            "parameters cluster `m1` gets over the arguments:\n  count: 3 → (not overridden"
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("cluster `m2`"), "{stdout}");
    assert_eq!(counts().await, (3, 4), "a diff changes nothing");

    sb.cli().arg("enable").args(reset).assert().success();
    assert_eq!(counts().await, (4, 4));
    let record = sb.ctx.state().record("tuned").await.unwrap().unwrap();
    assert!(record.cluster_parameters("m1").is_none());
    assert!(record.overrides.is_empty(), "{:?}", record.overrides);
}

/// A kept parameter set the addon's new version refuses stops the upgrade before anything is
/// applied, naming the clusters, the parameter and the ways out.
#[tokio::test(flavor = "multi_thread")]
async fn an_upgrade_whose_schema_refuses_a_kept_parameter_set_says_so_and_changes_nothing() {
    let (sb, tuned) = tuned_with_an_override().await;
    // 2.0.0 allows at most 2: m1's `count` = 3 no longer fits.
    let _tuned = tuned
        .file(
            "metadata.yaml",
            "name: tuned\nversion: 2.0.0\ndescription: Fixture addon tuned\n",
        )
        .file(
            "parameter.rhai",
            "#{\n    count: pint(2).max(2),\n    clusters: list(string()).optional(),\n}\n",
        );
    let output = sb
        .cli()
        .args(["upgrade", "tuned", "--version", "2.0.0"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("cluster(s) `m1`")
            && stderr.contains("set `count`")
            && stderr.contains("--reset-values"),
        "{stderr}"
    );
    assert_eq!(
        (
            fixture_count(&sb, 1, "tuned").await,
            fixture_count(&sb, 2, "tuned").await
        ),
        (3, 2)
    );
    let record = sb.ctx.state().record("tuned").await.unwrap().unwrap();
    assert_eq!(record.version, "1.0.0");
}
