//! The clusters the control plane knows: `local` and the joined clusters (KubeVela's cluster
//! Secrets in the system namespace), and clients for them.

use std::collections::{BTreeMap, BTreeSet};

use super::Store;
use crate::cluster::set::{ClusterCredentials, ClusterInfo, LABEL_CREDENTIAL_TYPE, LOCAL};
use crate::cluster::{self, Cluster};
use crate::model::wire::secret_gvk;
use crate::Result;

/// Clusters one call works on at once: enough to cover each answer's wait (a cluster's work is a
/// few milliseconds of CPU between round trips of several milliseconds each), spread over the
/// cores by [`crate::spread`].
pub const CLUSTER_CONCURRENCY: usize = 128;
/// Requests in flight per cluster.
pub const OBJECT_CONCURRENCY: usize = 8;

impl Store<'_> {
    /// A client for a joined cluster, with the request timeout, rate limit and notice hook of the
    /// control plane's client (each cluster has its own bucket).
    pub async fn connect(
        &self,
        name: &str,
        credentials: &ClusterCredentials,
    ) -> cluster::Result<Cluster> {
        self.cluster.managed(name, credentials).await
    }

    /// The joined clusters and their credentials (from their Secrets; one list per command
    /// until it writes anything but a lock, see [`Cluster::list_kept`]).
    pub async fn joined(&self) -> Result<Vec<(ClusterInfo, ClusterCredentials)>> {
        let secrets = self
            .cluster
            .list_kept(&secret_gvk(), Some(self.namespace), LABEL_CREDENTIAL_TYPE)
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

    /// Clients for `local` (the control plane) and the joined clusters named (their Secrets
    /// are listed only when a joined cluster is named).
    pub async fn clients(
        &self,
        names: &BTreeSet<String>,
    ) -> Result<BTreeMap<String, std::result::Result<Cluster, String>>> {
        let joined = if names.iter().any(|n| n != LOCAL) {
            self.joined().await?
        } else {
            Vec::new()
        };
        Ok(self.clients_of(&joined, names).await)
    }

    /// [`Store::clients`] from the joined clusters read already ([`Store::joined`]).
    pub async fn clients_of(
        &self,
        joined: &[(ClusterInfo, ClusterCredentials)],
        names: &BTreeSet<String>,
    ) -> BTreeMap<String, std::result::Result<Cluster, String>> {
        let mut out = BTreeMap::new();
        for name in names {
            if name == LOCAL {
                out.insert(name.clone(), Ok(self.cluster.clone()));
                continue;
            }
            let client = match joined.iter().find(|(info, _)| &info.name == name) {
                Some((_, credentials)) => self
                    .connect(name, credentials)
                    .await
                    .map_err(|e| e.to_string()),
                None => Err(format!("cluster `{name}` is no longer joined")),
            };
            out.insert(name.clone(), client);
        }
        out
    }
}
