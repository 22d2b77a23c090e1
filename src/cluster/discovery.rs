//! Discovery (cached): which resource serves a kind, in which versions, and the server's
//! version and revision.

use std::sync::PoisonError;

use kube::api::{Api, DynamicObject, ListParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::{ApiCapabilities, Scope};

use super::shared_discovery::{share, Resources, ServedKind};
use super::{Cluster, Discovered, Error, Result};

impl Cluster {
    /// The API resource serving a kind, or `None` when the server does not serve it. Cached;
    /// a kind not served is looked up again after `refresh_discovery`. An owned copy: where a
    /// borrow serves, [`Cluster::kind`] costs no copy.
    pub async fn resource(&self, gvk: &GroupVersionKind) -> Result<Discovered> {
        Ok(self
            .kind(gvk)
            .await?
            .map(|kind| (kind.resource().clone(), kind.caps().clone())))
    }

    /// How the server serves a kind (`None`: it does not), from the discovery this client
    /// shares with the clusters that serve the same. Cached as [`Cluster::resource`] is.
    pub(crate) async fn kind(&self, gvk: &GroupVersionKind) -> Result<Option<ServedKind>> {
        if let Some(found) = self
            .discovery
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(gvk)
        {
            return Ok(found.clone());
        }
        let pick = |resources: Option<Resources>| {
            resources.and_then(|list| {
                let at = list
                    .iter()
                    .position(|(resource, _)| resource.kind == gvk.kind)?;
                Some(ServedKind { list, at })
            })
        };
        let mut found = pick(self.group_version(gvk).await?);
        // A kind the disk cache does not know: ask the server once.
        if found.is_none() && self.forget_disk_entry(gvk) {
            found = pick(self.group_version(gvk).await?);
        }
        self.discovery
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(gvk.clone(), found.clone());
        Ok(found)
    }

    /// The resources of a kind's group version (read once; `None` when not served), shared
    /// with the clusters that serve the same.
    pub(super) async fn group_version(&self, gvk: &GroupVersionKind) -> Result<Option<Resources>> {
        let key = (gvk.group.clone(), gvk.version.clone());
        let known = || {
            self.versions
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&key)
                .cloned()
        };
        if let Some(known) = known() {
            return Ok(known);
        }
        // Another lookup reading it: wait for its answer rather than read it again.
        let reading = self
            .reading
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key.clone())
            .or_default()
            .clone();
        let _reading = reading.lock().await;
        if let Some(known) = known() {
            return Ok(known);
        }
        if let Some(stored) = self.read_disk(&key).await {
            let stored = stored.map(share);
            self.versions
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(key, stored.clone());
            return Ok(stored);
        }
        let gv = kube::core::GroupVersion::gv(&gvk.group, &gvk.version);
        let found = match kube::discovery::pinned_group(&self.client, &gv).await {
            Ok(group) => Some(share(group.versioned_resources(&gvk.version))),
            Err(kube::Error::Api(r)) if r.code == 404 => None,
            Err(kube::Error::Discovery(_)) => None,
            Err(e) => {
                return Err(self.map_error(
                    e,
                    &format!("discovery of {}/{} {}", gvk.group, gvk.version, gvk.kind),
                ))
            }
        };
        self.write_disk(&key, found.as_deref()).await;
        self.versions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, found.clone());
        Ok(found)
    }

    /// The disk cache of discovery, when this client has one.
    fn disk_cache(&self) -> Option<super::disk_discovery::DiscoveryCache> {
        self.disk
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .cache
            .clone()
    }

    /// A group version's resources from the disk cache, when one is set, the server's version
    /// is known and the entry was read from that version (never twice for a group version
    /// after [`Cluster::forget_disk_entry`] or `refresh_discovery`).
    #[allow(clippy::option_option)] // not stored / stored as not served / stored resources
    async fn read_disk(
        &self,
        key: &(String, String),
    ) -> Option<Option<Vec<(ApiResource, ApiCapabilities)>>> {
        let cache = self.disk_cache()?;
        if self
            .disk
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .bypass
            .contains(key)
        {
            return None;
        }
        let version = self.cached_server_version().await?;
        let stored = cache.load(&key.0, &key.1, &version)?;
        self.disk
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .loaded
            .insert(key.clone());
        Some(stored)
    }

    async fn write_disk(
        &self,
        key: &(String, String),
        found: Option<&[(ApiResource, ApiCapabilities)]>,
    ) {
        let cache = self.disk_cache();
        if let Some(cache) = cache {
            if let Some(version) = self.cached_server_version().await {
                cache.store(&key.0, &key.1, &version, found);
            }
        }
    }

    /// When a kind's group version was read from the disk cache: forgets it, so that the next
    /// look-up asks the server (true), else false.
    fn forget_disk_entry(&self, gvk: &GroupVersionKind) -> bool {
        let key = (gvk.group.clone(), gvk.version.clone());
        let mut disk = self.disk.lock().unwrap_or_else(PoisonError::into_inner);
        if !disk.loaded.remove(&key) {
            return false;
        }
        disk.bypass.insert(key.clone());
        drop(disk);
        self.versions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&key);
        true
    }

    /// The server's `gitVersion`, read once per process, or taken from the disk cache when a
    /// run read it lately ([`super::disk_discovery::VERSION_REUSE`]); `None` when it cannot be read
    /// (the disk cache is then not used).
    async fn cached_server_version(&self) -> Option<String> {
        let cache = self.disk_cache();
        self.server_version
            .get_or_init(|| async {
                if let Some(known) = cache
                    .as_ref()
                    .and_then(super::disk_discovery::DiscoveryCache::recent_version)
                {
                    return Some(known);
                }
                match self.client.apiserver_version().await {
                    Ok(info) => {
                        if let Some(cache) = &cache {
                            cache.remember_version(&info.git_version);
                        }
                        Some(info.git_version)
                    }
                    Err(e) => {
                        tracing::debug!(cluster = %self.name, "cannot read /version: {e}");
                        None
                    }
                }
            })
            .await
            .clone()
    }

    /// Forgets kinds found not served, and the group versions they were looked up in (call
    /// after installing CRDs).
    pub fn refresh_discovery(&self) {
        let mut discovery = self
            .discovery
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let missing: Vec<(String, String)> = discovery
            .iter()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| (k.group.clone(), k.version.clone()))
            .collect();
        discovery.retain(|_, v| v.is_some());
        drop(discovery);
        // What the disk held for them predates the change: ask the server.
        let mut disk = self.disk.lock().unwrap_or_else(PoisonError::into_inner);
        for key in &missing {
            disk.loaded.remove(key);
            disk.bypass.insert(key.clone());
        }
        drop(disk);
        self.versions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|k, v| v.is_some() && !missing.contains(k));
    }

    /// Whether the server serves a kind.
    pub async fn serves(&self, gvk: &GroupVersionKind) -> Result<bool> {
        Ok(self.kind(gvk).await?.is_some())
    }

    /// The server's current revision, read with a one-item list of Secrets in `namespace`:
    /// a later write to any object gives it a newer `resourceVersion` (see
    /// [`written_since`](super::written_since)).
    /// `None` when it cannot be read or is not a number (servers other than kube-apiserver's
    /// etcd storage); callers then count every apply as a write.
    pub async fn revision(&self, namespace: &str) -> Option<u64> {
        let api: Api<k8s_openapi::api::core::v1::Secret> =
            Api::namespaced(self.client.clone(), namespace);
        let list = api.list_metadata(&ListParams::default().limit(1)).await;
        match list {
            Ok(list) => list.metadata.resource_version?.parse().ok(),
            Err(e) => {
                tracing::debug!(cluster = %self.name, "cannot read the revision: {e}");
                None
            }
        }
    }

    /// The versions in which the server serves `kind` of `group` (empty when it serves none).
    pub async fn served_versions(&self, group: &str, kind: &str) -> Result<Vec<String>> {
        let found = match kube::discovery::group(&self.client, group).await {
            Ok(found) => found,
            Err(kube::Error::Api(r)) if r.code == 404 => return Ok(Vec::new()),
            Err(kube::Error::Discovery(_)) => return Ok(Vec::new()),
            Err(e) => return Err(self.map_error(e, &format!("discovery of {group}"))),
        };
        Ok(found
            .versions()
            .filter(|v| {
                found
                    .versioned_resources(v)
                    .iter()
                    .any(|(r, _)| r.kind == kind)
            })
            .map(str::to_owned)
            .collect())
    }

    /// The server's Kubernetes version (`v1.20.2`).
    pub async fn kubernetes_version(&self) -> Result<String> {
        if let Some(known) = self.cached_server_version().await {
            return Ok(known);
        }
        // It could not be read: ask again, for the error.
        let version = self
            .client
            .apiserver_version()
            .await
            .map(|v| v.git_version)
            .map_err(|e| self.map_error(e, "/version"))?;
        let _ = self.server_version.set(Some(version.clone()));
        Ok(version)
    }

    pub(super) async fn api_for(
        &self,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
        what: &str,
    ) -> Result<(Api<DynamicObject>, bool)> {
        let Some(kind) = self.kind(gvk).await? else {
            return Err(Error::NotFound {
                cluster: self.name.clone(),
                message: format!(
                    "{what}: the server does not serve {}{}{} (is its CRD installed?)",
                    gvk.group,
                    if gvk.group.is_empty() { "" } else { "/" },
                    format_args!("{} {}", gvk.version, gvk.kind)
                ),
            });
        };
        Ok(self.api_of_kind(&kind, namespace))
    }

    /// The API of a served kind: in `namespace` when the kind is namespaced and one is given,
    /// else across the cluster; and whether the kind is namespaced.
    pub(crate) fn api_of_kind(
        &self,
        kind: &ServedKind,
        namespace: Option<&str>,
    ) -> (Api<DynamicObject>, bool) {
        let namespaced = kind.caps().scope == Scope::Namespaced;
        let api = match (namespaced, namespace) {
            (true, Some(ns)) => Api::namespaced_with(self.client.clone(), ns, kind.resource()),
            (true, None) | (false, _) => Api::all_with(self.client.clone(), kind.resource()),
        };
        (api, namespaced)
    }
}
