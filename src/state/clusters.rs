//! The clusters the control plane knows: `local` and the joined clusters (KubeVela's cluster
//! Secrets in the system namespace), and clients for them.

use std::collections::{BTreeMap, BTreeSet};

use crate::cluster::set::{ClusterCredentials, ClusterInfo, LABEL_CREDENTIAL_TYPE, LOCAL};
use crate::cluster::{self, Cluster};
use crate::context::Context;
use crate::model::wire::secret_gvk;
use crate::Result;

/// Clusters worked on at once.
pub const CLUSTER_CONCURRENCY: usize = 16;
/// Requests in flight per cluster.
pub const OBJECT_CONCURRENCY: usize = 8;

/// A client for a joined cluster, with the request timeout, rate limit and notice hook of the
/// control plane's client (each cluster has its own bucket).
pub async fn connect(
    ctx: &Context,
    name: &str,
    credentials: &ClusterCredentials,
) -> cluster::Result<Cluster> {
    ctx.cluster.managed(name, credentials).await
}

/// The joined clusters (from their Secrets), without credentials.
pub async fn joined(ctx: &Context) -> Result<Vec<(ClusterInfo, ClusterCredentials)>> {
    let secrets = ctx
        .cluster
        .list(&secret_gvk(), Some(&ctx.namespace), LABEL_CREDENTIAL_TYPE)
        .await?;
    let mut out = Vec::new();
    for secret in secrets {
        let value = super::to_value(&secret);
        match ClusterCredentials::from_secret(&value) {
            Ok(pair) => out.push(pair),
            Err(e) => tracing::warn!("{e}"),
        }
    }
    Ok(out)
}

/// Clients for `local` (the control plane) and the joined clusters named.
pub async fn clients(
    ctx: &Context,
    names: &BTreeSet<String>,
) -> Result<BTreeMap<String, std::result::Result<Cluster, String>>> {
    let mut out = BTreeMap::new();
    let joined = joined(ctx).await?;
    for name in names {
        if name == LOCAL {
            out.insert(name.clone(), Ok(ctx.cluster.clone()));
            continue;
        }
        let client = match joined.iter().find(|(info, _)| &info.name == name) {
            Some((_, credentials)) => connect(ctx, name, credentials)
                .await
                .map_err(|e| e.to_string()),
            None => Err(format!("cluster `{name}` is no longer joined")),
        };
        out.insert(name.clone(), client);
    }
    Ok(out)
}
