//! `cluster join | list | detach | labels`: managed clusters as KubeVela cluster Secrets.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use super::deletion::Entry;
use super::{access, direct};
use crate::cluster::set::{ClusterCredentials, CredentialType, LOCAL};
use crate::context::Context;
use crate::model::wire::secret_gvk;
use crate::state::record::{OtherRecords, Record};
use crate::{Error, Result};

/// A managed cluster as `cluster list` shows it (never its credentials).
#[derive(Debug, Clone, Serialize)]
pub struct ClusterRow {
    /// Its name.
    pub name: String,
    /// Its API server.
    pub endpoint: String,
    /// How it authenticates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credential_type: Option<CredentialType>,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// Whether `/version` answered.
    pub reachable: bool,
    /// Its Kubernetes version, or why it could not be read.
    pub version: String,
}

fn check_name(name: &str) -> Result<()> {
    if name == LOCAL {
        return Err(Error::ReservedClusterName);
    }
    if !crate::model::metadata::is_valid_name(name) {
        return Err(Error::InvalidClusterName {
            name: name.to_owned(),
        });
    }
    Ok(())
}

/// Parses `k=v` labels.
pub fn parse_labels(pairs: &[String]) -> Result<BTreeMap<String, String>> {
    pairs
        .iter()
        .flat_map(|p| p.split(','))
        .filter(|p| !p.is_empty())
        .map(|pair| {
            pair.split_once('=')
                .filter(|(k, _)| !k.is_empty())
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .ok_or_else(|| Error::InvalidLabel {
                    pair: pair.to_string(),
                })
        })
        .collect()
}

/// Joins a cluster from a kubeconfig: checks it answers, then stores its Secret.
pub async fn join(
    ctx: &Context,
    name: &str,
    kubeconfig: &Path,
    context: Option<&str>,
    labels: &BTreeMap<String, String>,
) -> Result<ClusterRow> {
    check_name(name)?;
    let credentials = ClusterCredentials::from_kubeconfig(kubeconfig, context)?;
    let client = ctx.state().connect(name, &credentials).await?;
    let version = client.kubernetes_version().await?;
    ctx.cluster
        .create_if_missing(&crate::model::wire::namespace_object(&ctx.namespace))
        .await?;
    write_cluster_secret(ctx, name, |_| {
        Ok(credentials.to_secret(name, &ctx.namespace, labels))
    })
    .await?;
    Ok(ClusterRow {
        name: name.to_owned(),
        endpoint: client.server().to_owned(),
        credential_type: Some(credentials.credential_type()),
        labels: labels.clone(),
        reachable: true,
        version,
    })
}

/// Lists `local` and every joined cluster, asking each for its version (concurrently).
pub async fn list(ctx: &Context) -> Result<Vec<ClusterRow>> {
    let joined = ctx.state().joined().await?;
    let local = async {
        let version = ctx.cluster.kubernetes_version().await;
        ClusterRow {
            name: LOCAL.to_owned(),
            endpoint: ctx.cluster.server().to_owned(),
            credential_type: None,
            labels: BTreeMap::new(),
            reachable: version.is_ok(),
            version: version.unwrap_or_else(|e| e.to_string()),
        }
    };
    let others = joined.into_iter().map(|(info, credentials)| async move {
        let version = match ctx.state().connect(&info.name, &credentials).await {
            Ok(client) => client.kubernetes_version().await.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        ClusterRow {
            name: info.name,
            endpoint: info.endpoint,
            credential_type: Some(info.credential_type),
            labels: info.labels,
            reachable: version.is_ok(),
            version: version.unwrap_or_else(|e| e),
        }
    });
    let (local, mut rows) = futures::join!(local, futures::future::join_all(others));
    rows.insert(0, local);
    Ok(rows)
}

/// What `cluster detach` did (or, with `dry_run`, would do), per addon.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DetachReport {
    /// The cluster.
    pub cluster: String,
    /// Objects deleted there, each with the addon's name in `addons`.
    pub deleted: Vec<Entry>,
    /// Objects addonctl adopted there, given back (its fields removed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub given_back: Vec<Entry>,
    /// Objects kept there, with the reason.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kept: Vec<Entry>,
    /// Per addon, what happened (`addon `a`: 3 objects deleted`, objects left behind with
    /// `--force`).
    pub addons: Vec<String>,
    /// Nothing was changed: this is what `detach` would do.
    pub dry_run: bool,
}

/// Detaches a cluster: first deletes what addons applied there (by the rules of
/// [`super::deletion`]) and drops it from their records, then removes its Secret. When the
/// cluster cannot be cleaned, it is not detached unless `force` (its objects are then left
/// behind and the records forget them). With `dry_run`, reports what it would delete, give back
/// and keep, and changes nothing.
///
/// Control plane first: checks that the caller may write the cluster Secrets, the records and
/// the locks, then holds the locks of the addons whose records it rewrites while it runs
/// ([`super::guarded`]). A dry run takes no lock and needs no write permission.
pub async fn detach(ctx: &Context, name: &str, force: bool, dry_run: bool) -> Result<DetachReport> {
    check_name(name)?;
    if dry_run {
        return detach_unlocked(ctx, name, force, true).await;
    }
    let command = format!("`addonctl cluster detach {name}`");
    let mut needs = access::cluster_state(&ctx.namespace);
    needs.extend(access::Need::all(
        &["get", "create", "update", "delete"],
        "coordination.k8s.io",
        "leases",
        Some(&ctx.namespace),
    ));
    access::check(&ctx.cluster, &command, &needs).await?;
    let addons: Vec<String> = ctx
        .state()
        .installed()
        .await?
        .into_values()
        .filter(|i| {
            i.record
                .as_ref()
                .is_some_and(|r| r.dispatched_or_planned().contains_key(name))
        })
        .map(|i| i.name)
        .collect();
    super::guarded(
        ctx,
        &command,
        &[],
        &addons,
        Box::pin(detach_unlocked(ctx, name, force, false)),
    )
    .await
}

/// [`detach`] without the permission check and the locks.
async fn detach_unlocked(
    ctx: &Context,
    name: &str,
    force: bool,
    dry_run: bool,
) -> Result<DetachReport> {
    let joined = ctx.state().joined().await?;
    let Some((_, credentials)) = joined.into_iter().find(|(info, _)| info.name == name) else {
        return Err(Error::ClusterNotJoined {
            name: name.to_owned(),
        });
    };
    let mut report = DetachReport {
        cluster: name.to_owned(),
        dry_run,
        ..DetachReport::default()
    };
    let client = ctx.state().connect(name, &credentials).await;
    let records: Vec<Record> = ctx
        .state()
        .installed()
        .await?
        .into_values()
        .filter_map(|installed| installed.record)
        .collect();
    for record in &records {
        let addon = record.name.clone();
        let Some(inventory) = record.dispatched_or_planned().remove(name) else {
            continue;
        };
        let others = OtherRecords::of(&records, &addon);
        let result = match &client {
            Ok(client) => {
                let removal = direct::remove_all(
                    client,
                    name,
                    &ctx.namespace,
                    &inventory,
                    others.dispatched.get(name),
                    dry_run,
                )
                .await;
                let count = removal.deleted.len();
                report.deleted.extend(removal.deleted);
                report.given_back.extend(removal.given_back);
                report.kept.extend(removal.kept);
                match removal.failure {
                    None => Ok(count),
                    Some((e, _)) => Err(e),
                }
            }
            Err(e) => Err(e.to_string()),
        };
        let verb = if dry_run {
            "would be deleted"
        } else {
            "deleted"
        };
        match result {
            Ok(count) => report
                .addons
                .push(format!("addon `{addon}`: {count} objects {verb}")),
            Err(e) if force => report
                .addons
                .push(format!("addon `{addon}`: objects left behind ({e})")),
            Err(e) => {
                let done = report
                    .deleted
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>();
                return Err(Error::Unfinished {
                    source: Box::new(Error::DetachBlocked {
                        addon: addon.clone(),
                        cluster: name.to_owned(),
                        reason: e.clone(),
                    }),
                    done,
                    next: format!("addonctl cluster detach {name}"),
                });
            }
        }
        if dry_run {
            continue;
        }
        crate::state::record::update(&ctx.cluster, &ctx.namespace, &addon, |stored| {
            let mut record = stored?;
            forget_cluster(&mut record, name);
            Some(record)
        })
        .await?;
    }
    if !dry_run {
        ctx.cluster
            .delete(&secret_gvk(), Some(&ctx.namespace), name)
            .await?;
    }
    Ok(report)
}

/// Drops a cluster from a record (its inventory and what a pending revision planned there).
fn forget_cluster(record: &mut Record, cluster: &str) {
    record.dispatched.remove(cluster);
    if let Some(pending) = &mut record.pending {
        pending.dispatched.remove(cluster);
    }
}

/// Replaces a joined cluster's labels.
pub async fn set_labels(
    ctx: &Context,
    name: &str,
    labels: &BTreeMap<String, String>,
) -> Result<()> {
    check_name(name)?;
    write_cluster_secret(ctx, name, |stored| {
        let Some(stored) = stored else {
            return Err(Error::ClusterNotJoined {
                name: name.to_owned(),
            });
        };
        let (_, credentials) = ClusterCredentials::from_secret(stored)?;
        Ok(credentials.to_secret(name, &ctx.namespace, labels))
    })
    .await
}

/// Attempts at a read-modify-write of a cluster Secret before giving up on conflicts.
const WRITE_ATTEMPTS: usize = 5;

/// Read-modify-write of the cluster Secret `name`: `change` gets the stored Secret (if any) and
/// returns the new one, written only while the stored one is unchanged; on a conflict the whole
/// read-modify-write runs again (bounded).
async fn write_cluster_secret(
    ctx: &Context,
    name: &str,
    change: impl Fn(Option<&serde_json::Value>) -> Result<serde_json::Value>,
) -> Result<()> {
    let ns = &ctx.namespace;
    for _ in 0..WRITE_ATTEMPTS {
        let stored = ctx.cluster.get(&secret_gvk(), Some(ns), name).await?;
        let stored_value = stored.as_ref().map(crate::state::to_value);
        let mut secret = change(stored_value.as_ref())?;
        // Server-side applied, so that fields dropped later (labels) are removed; a Secret that
        // did not exist is applied unconditionally (a create would own its fields as an update,
        // which later applies do not remove).
        if let Some(version) = stored.and_then(|s| s.metadata.resource_version) {
            secret["metadata"]["resourceVersion"] = serde_json::json!(version);
        }
        let written = ctx.cluster.apply(&secret, ns).await;
        match written {
            Ok(_) => return Ok(()),
            Err(crate::cluster::Error::Conflict { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Err(Error::ClusterSecretContended {
        cluster: name.to_owned(),
    })
}
