//! `cluster join | list | detach | labels`: managed clusters as KubeVela cluster Secrets.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use super::deletion::Entry;
use super::{access, direct};
use crate::apply::Applier;
use crate::cluster::set::{ClusterCredentials, CredentialType, LABEL_CREDENTIAL_TYPE, LOCAL};
use crate::model::wire::secret_gvk;
use crate::state::record::{OtherRecords, Record};
use crate::{Error, Result};

/// A managed cluster as `cluster list` shows it (never its credentials).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
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

/// What a `join` does with the labels of a cluster joined before under the same name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JoinLabels {
    /// Keep the stored labels (none for a new cluster).
    Keep,
    /// Replace them with these.
    Replace(BTreeMap<String, String>),
    /// Drop them.
    Reset,
}

/// Joins a cluster from a kubeconfig with exactly `labels` (see [`join_with`]).
pub async fn join(
    ctx: &Applier<'_>,
    name: &str,
    kubeconfig: &Path,
    context: Option<&str>,
    labels: &BTreeMap<String, String>,
) -> Result<ClusterRow> {
    join_with(
        ctx,
        name,
        kubeconfig,
        context,
        &JoinLabels::Replace(labels.clone()),
    )
    .await
}

/// Joins a cluster from a kubeconfig: refuses an API server already joined under another name,
/// checks it answers, then stores its Secret. Re-joining a name (credential rotation) keeps,
/// replaces or drops its labels as `labels` says.
pub async fn join_with(
    ctx: &Applier<'_>,
    name: &str,
    kubeconfig: &Path,
    context: Option<&str>,
    labels: &JoinLabels,
) -> Result<ClusterRow> {
    check_name(name)?;
    let credentials = ClusterCredentials::from_kubeconfig(kubeconfig, context)?;
    refuse_joined_endpoint(ctx, name, credentials.endpoint()).await?;
    let client = ctx.state().connect(name, &credentials).await?;
    let version = client.kubernetes_version().await?;
    ctx.cluster
        .create_if_missing(&crate::model::wire::namespace_object(ctx.namespace))
        .await?;
    let written = std::cell::RefCell::new(BTreeMap::new());
    write_cluster_secret(ctx, name, |stored| {
        let labels = match labels {
            JoinLabels::Keep => stored.map(stored_labels).unwrap_or_default(),
            JoinLabels::Replace(labels) => labels.clone(),
            JoinLabels::Reset => BTreeMap::new(),
        };
        let secret = credentials.to_secret(name, ctx.namespace, &labels);
        written.replace(labels);
        Ok(secret)
    })
    .await?;
    Ok(ClusterRow {
        name: name.to_owned(),
        endpoint: client.server().to_owned(),
        credential_type: Some(credentials.credential_type()),
        labels: written.into_inner(),
        reachable: true,
        version,
    })
}

/// The labels of a stored cluster Secret (its credential-type label aside), read from its
/// metadata so that a Secret whose credentials are unreadable still keeps them.
pub fn stored_labels(secret: &serde_json::Value) -> BTreeMap<String, String> {
    secret["metadata"]["labels"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.as_str() != LABEL_CREDENTIAL_TYPE)
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
        .collect()
}

/// Refuses `endpoint` when a cluster of another name is joined with the same API server.
async fn refuse_joined_endpoint(ctx: &Applier<'_>, name: &str, endpoint: &str) -> Result<()> {
    let wanted = normalize_endpoint(endpoint);
    let other = ctx
        .state()
        .joined()
        .await?
        .into_iter()
        .find(|(info, _)| info.name != name && normalize_endpoint(&info.endpoint) == wanted);
    match other {
        Some((info, _)) => Err(Error::EndpointAlreadyJoined {
            endpoint: endpoint.to_owned(),
            other: info.name,
            name: name.to_owned(),
        }),
        None => Ok(()),
    }
}

/// An API server URL for comparison: scheme and host lower-cased, the scheme's default port
/// and trailing slashes dropped (`HTTPS://Api.Example:443/` is `https://api.example`).
pub fn normalize_endpoint(endpoint: &str) -> String {
    let trimmed = endpoint.trim();
    let (scheme, rest) = trimmed.split_once("://").unwrap_or(("https", trimmed));
    let scheme = scheme.to_ascii_lowercase();
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut host = authority.to_ascii_lowercase();
    let default_port = match scheme.as_str() {
        "http" => ":80",
        _ => ":443",
    };
    if let Some(stripped) = host.strip_suffix(default_port) {
        host = stripped.to_owned();
    }
    format!("{scheme}://{host}{}", path.trim_end_matches('/'))
}

/// Lists `local` and every joined cluster, asking each for its version (concurrently).
pub async fn list(ctx: &Applier<'_>) -> Result<Vec<ClusterRow>> {
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
pub async fn detach(
    ctx: &Applier<'_>,
    name: &str,
    force: bool,
    dry_run: bool,
) -> Result<DetachReport> {
    check_name(name)?;
    if dry_run {
        return detach_unlocked(ctx, name, force, true).await;
    }
    let command = format!("`addonctl cluster detach {name}`");
    let mut needs = access::cluster_state(ctx.namespace);
    needs.extend(access::Need::all(
        &["get", "create", "update", "delete"],
        "coordination.k8s.io",
        "leases",
        Some(ctx.namespace),
    ));
    access::check(ctx.cluster, &command, &needs).await?;
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
    ctx: &Applier<'_>,
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
    // What a damaged record lists cannot be known: nothing is deleted while one is.
    let records: Vec<Record> = ctx
        .state()
        .installed_checked()
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
                    ctx.namespace,
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
        crate::state::record::update(ctx.cluster, ctx.namespace, &addon, |stored| {
            let mut record = stored?;
            forget_cluster(&mut record, name);
            Some(record)
        })
        .await?;
    }
    if !dry_run {
        ctx.cluster
            .delete(&secret_gvk(), Some(ctx.namespace), name)
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
    ctx: &Applier<'_>,
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
        Ok(credentials.to_secret(name, ctx.namespace, labels))
    })
    .await
}

/// Attempts at a read-modify-write of a cluster Secret before giving up on conflicts.
const WRITE_ATTEMPTS: usize = 5;

/// Read-modify-write of the cluster Secret `name`: `change` gets the stored Secret (if any) and
/// returns the new one, written only while the stored one is unchanged; on a conflict the whole
/// read-modify-write runs again (bounded).
async fn write_cluster_secret(
    ctx: &Applier<'_>,
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

#[cfg(test)]
mod tests {
    use super::normalize_endpoint;

    #[test]
    fn endpoints_compare_by_scheme_host_default_port_and_no_trailing_slash() {
        let same = [
            "https://api.example",
            "HTTPS://Api.Example:443/",
            "https://api.example//",
            "api.example",
        ];
        for endpoint in same {
            assert_eq!(
                normalize_endpoint(endpoint),
                "https://api.example",
                "{endpoint}"
            );
        }
        assert_eq!(normalize_endpoint("http://h:80/"), "http://h");
        assert_ne!(
            normalize_endpoint("https://h:6443"),
            normalize_endpoint("https://h")
        );
        assert_ne!(
            normalize_endpoint("http://h"),
            normalize_endpoint("https://h")
        );
        assert_ne!(
            normalize_endpoint("https://h/Path"),
            normalize_endpoint("https://h/path")
        );
    }
}
