//! Drift seen as it happens: for every `Addon` whose drift policy is not `ignore`, one
//! metadata-only watch per kind (and namespace) of each cluster its objects live on, by the
//! label `addons.oam.dev/name=<addon>` — the places the last drift check compared
//! ([`crate::drift::Report::places`]). A change or deletion of one of them by another writer
//! reconciles the `Addon` at once, and the reconcile's drift check finds (and corrects) it;
//! the periodic check (`--drift-interval`) stays as the safety net for what a watch misses
//! (a watch re-established after a gap, a cluster unreachable for a while).
//!
//! What is not another writer's doing is not sent on: an object whose fields only addonctl
//! (and status writers) manage ([`crate::drift::only_ours`]) changed because addonctl applied
//! it, or because its status moved. The watches are started and stopped as the places change
//! and all stop with the leadership term ([`Watches`] aborts them when dropped).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::channel::mpsc::UnboundedSender;
use futures::StreamExt as _;
use kube::api::{Api, DynamicObject};
use kube::discovery::Scope;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher::{self, metadata_watcher, Event};
use kube::runtime::WatchStreamExt as _;
use kube::ResourceExt as _;

use super::crd::Addon;
use super::Shared;
use crate::drift::Place;
use crate::model::wire::LABEL_NAME;

/// What tells two watches apart: cluster, `apiVersion`, kind and namespace.
type Key = (String, String, String, Option<String>);

/// The drift watches of one leadership term, per `Addon`.
pub(super) struct Watches {
    /// Where a change sends the `Addon` to be reconciled.
    requeue: UnboundedSender<ObjectRef<Addon>>,
    shared: Arc<Shared>,
    running: Mutex<HashMap<String, BTreeMap<Key, tokio::task::AbortHandle>>>,
}

impl Watches {
    pub fn new(requeue: UnboundedSender<ObjectRef<Addon>>, shared: Arc<Shared>) -> Self {
        Watches {
            requeue,
            shared,
            running: Mutex::new(HashMap::new()),
        }
    }

    /// Watches exactly `places` for `addon`: new places get a watch, places no longer listed
    /// lose theirs. A kind the cluster does not serve (any more) is not watched.
    pub async fn follow(&self, addon: &Addon, places: &[Place]) {
        let name = addon.name_any();
        let wanted: BTreeMap<Key, &Place> = places.iter().map(|p| (p.key(), p)).collect();
        let new: Vec<&Place> = {
            let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
            let watches = running.entry(name.clone()).or_default();
            watches.retain(|key, watch| {
                let keep = wanted.contains_key(key);
                if !keep {
                    watch.abort();
                }
                keep
            });
            wanted
                .iter()
                .filter(|(key, _)| !watches.contains_key(*key))
                .map(|(_, place)| *place)
                .collect()
        };
        for place in new {
            let Some(api) = api_for(place).await else {
                continue;
            };
            let task = tokio::spawn(watch(
                api,
                format!("{LABEL_NAME}={name}"),
                timeout(&place.client),
                ObjectRef::from_obj(addon),
                self.requeue.clone(),
                Arc::clone(&self.shared),
            ));
            tracing::debug!(addon = %name, cluster = %place.cluster, kind = %place.kind, "drift: watching");
            self.running
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(name.clone())
                .or_default()
                .insert(place.key(), task.abort_handle());
        }
        self.counted();
    }

    /// Stops every watch of `addon`.
    pub fn forget(&self, addon: &str) {
        let removed = self
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(addon);
        for watch in removed.into_iter().flat_map(BTreeMap::into_values) {
            watch.abort();
        }
        self.counted();
    }

    /// Sets the gauge of running watches.
    fn counted(&self) {
        let count = self
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .map(BTreeMap::len)
            .sum();
        self.shared.metrics.set_drift_watches(count);
    }
}

impl Drop for Watches {
    fn drop(&mut self) {
        let running = self
            .running
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        for watch in running.drain().flat_map(|(_, w)| w.into_values()) {
            watch.abort();
        }
        self.shared.metrics.set_drift_watches(0);
    }
}

/// The API of the place's kind, in its namespace when namespaced; `None` when the cluster does
/// not serve it or cannot be asked (the periodic check reports that).
async fn api_for(place: &Place) -> Option<Api<DynamicObject>> {
    let gvk = crate::state::record::ObjectRef {
        api_version: place.api_version.clone(),
        kind: place.kind.clone(),
        namespace: None,
        name: String::new(),
    }
    .gvk();
    let (resource, caps) = match place.client.resource(&gvk).await {
        Ok(Some(found)) => found,
        Ok(None) => return None,
        Err(error) => {
            tracing::debug!(cluster = %place.cluster, kind = %place.kind, %error, "drift: not watched");
            return None;
        }
    };
    let client = place.client.client().clone();
    Some(match (caps.scope == Scope::Namespaced, &place.namespace) {
        (true, Some(ns)) => Api::namespaced_with(client, ns, &resource),
        _ => Api::all_with(client, &resource),
    })
}

/// A watch ends (and is made again) before the connection's read timeout would cut it.
fn timeout(cluster: &crate::cluster::Cluster) -> u32 {
    let seconds = cluster
        .request_timeout()
        .saturating_sub(Duration::from_secs(5))
        .as_secs()
        .clamp(1, 290);
    u32::try_from(seconds).unwrap_or(290)
}

/// Follows one place until aborted: every change or deletion not made by addonctl alone sends
/// the `Addon`; so does a watch listed again after a gap (what happened in it is unknown).
async fn watch(
    api: Api<DynamicObject>,
    selector: String,
    timeout: u32,
    addon: ObjectRef<Addon>,
    requeue: UnboundedSender<ObjectRef<Addon>>,
    shared: Arc<Shared>,
) {
    let config = watcher::Config::default()
        .labels(&selector)
        .timeout(timeout);
    let mut events = metadata_watcher(api, config).default_backoff().boxed();
    let mut listed = 0_u32;
    while let Some(event) = events.next().await {
        let send = match event {
            Ok(Event::InitDone) => {
                listed += 1;
                listed > 1
            }
            Ok(Event::Apply(object)) => !crate::drift::only_ours(&object.metadata),
            Ok(Event::Delete(_)) => true,
            Ok(Event::Init | Event::InitApply(_)) => false,
            Err(error) => {
                tracing::debug!(addon = %addon.name, %error, "drift watch: retrying");
                false
            }
        };
        if !send {
            continue;
        }
        shared.metrics.drift_wakeup(&addon.name);
        if requeue.unbounded_send(addon.clone()).is_err() {
            return;
        }
    }
}
