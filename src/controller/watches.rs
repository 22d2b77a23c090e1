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
//!
//! The watches also spare the periodic check its lists: a cluster whose every place has a
//! watch that is listed and live, and that saw nothing of another writer since the cluster was
//! last listed, is vouched for ([`Watches::vouched`]) and not listed again — at most for
//! [`FULL_CHECK`], and only at the record revision it was last listed at (see
//! `super::engine::DriftMemo`). A watch that starts, lists again or fails marks its place
//! unvouched until the next check lists it.

use std::collections::BTreeSet;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::channel::mpsc::UnboundedSender;
use futures::StreamExt as _;
use kube::api::{Api, DynamicObject};
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

/// The longest the watches vouch for a cluster: it is listed again after this, whatever they
/// say (a safety net under the watches themselves).
pub(super) const FULL_CHECK: Duration = Duration::from_secs(300);

/// The drift watches of one leadership term, per `Addon`.
pub(super) struct Watches {
    /// Where a change sends the `Addon` to be reconciled.
    requeue: UnboundedSender<ObjectRef<Addon>>,
    shared: Arc<Shared>,
    /// Per `Addon`, each place followed: its watch, or `None` where none could start (tried
    /// again at the next check).
    running: Mutex<HashMap<String, BTreeMap<Key, Option<Watch>>>>,
}

/// One running watch.
struct Watch {
    task: tokio::task::AbortHandle,
    state: Arc<State>,
}

/// What a watch says of its place.
#[derive(Default)]
struct State {
    /// Listed and live: every change from now on is seen.
    synced: AtomicBool,
    /// Something may have changed since the place was last listed by a check: another
    /// writer's change, a (re-)list of the watch, an error.
    dirty: AtomicBool,
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
                let keep = wanted.contains_key(key) && watch.is_some();
                if let (false, Some(watch)) = (keep, watch) {
                    watch.task.abort();
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
            let watch = match api_for(place).await {
                Some(api) => {
                    let state = Arc::new(State::default());
                    let task = tokio::spawn(watch(
                        api,
                        format!("{LABEL_NAME}={name}"),
                        watch_timeout(&place.client),
                        ObjectRef::from_obj(addon),
                        self.requeue.clone(),
                        Arc::clone(&self.shared),
                        Arc::clone(&state),
                    ));
                    tracing::debug!(addon = %name, cluster = %place.cluster, kind = %place.kind, "drift: watching");
                    Some(Watch {
                        task: task.abort_handle(),
                        state,
                    })
                }
                None => None,
            };
            self.running
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(name.clone())
                .or_default()
                .insert(place.key(), watch);
        }
        self.counted();
    }

    /// The clusters of `addon` whose every place has a synced watch that saw nothing since
    /// the last check listed it.
    pub fn vouched(&self, addon: &str) -> BTreeSet<String> {
        let running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(places) = running.get(addon) else {
            return BTreeSet::new();
        };
        let mut clusters: BTreeMap<&str, bool> = BTreeMap::new();
        for ((cluster, ..), watch) in places {
            let quiet = watch.as_ref().is_some_and(|w| {
                w.state.synced.load(Ordering::SeqCst) && !w.state.dirty.load(Ordering::SeqCst)
            });
            *clusters.entry(cluster).or_insert(true) &= quiet;
        }
        clusters
            .into_iter()
            .filter(|(_, quiet)| *quiet)
            .map(|(cluster, _)| cluster.to_owned())
            .collect()
    }

    /// A check is about to list every cluster of `addon` but `vouched`: what their watches
    /// see from now on is what the next check must look at.
    pub fn checking(&self, addon: &str, vouched: &BTreeSet<String>) {
        let running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        for ((cluster, ..), watch) in running.get(addon).into_iter().flatten() {
            if let (false, Some(watch)) = (vouched.contains(cluster), watch) {
                watch.state.dirty.store(false, Ordering::SeqCst);
            }
        }
    }

    /// Stops every watch of `addon`.
    pub fn forget(&self, addon: &str) {
        let removed = self
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(addon);
        for watch in removed
            .into_iter()
            .flat_map(BTreeMap::into_values)
            .flatten()
        {
            watch.task.abort();
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
            .map(|places| places.values().filter(|w| w.is_some()).count())
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
        for watch in running.drain().flat_map(|(_, w)| w.into_values()).flatten() {
            watch.task.abort();
        }
        self.shared.metrics.set_drift_watches(0);
    }
}

/// The API of the place's kind (see [`crate::drift::kind_api`]); `None` when the cluster does
/// not serve it or cannot be asked (the periodic check reports that).
async fn api_for(place: &Place) -> Option<Api<DynamicObject>> {
    let gvk = crate::state::record::ObjectRef {
        api_version: place.api_version.clone(),
        kind: place.kind.clone(),
        namespace: None,
        name: String::new(),
    }
    .gvk();
    match crate::drift::kind_api(&place.client, &gvk, place.namespace.as_deref()).await {
        Ok(api) => api,
        Err(error) => {
            tracing::debug!(cluster = %place.cluster, kind = %place.kind, %error, "drift: not watched");
            None
        }
    }
}

/// How long a watch of `cluster` lasts before it is made again ([`Cluster::watch_timeout`],
/// in whole seconds).
///
/// [`Cluster::watch_timeout`]: crate::cluster::Cluster::watch_timeout
pub(super) fn watch_timeout(cluster: &crate::cluster::Cluster) -> u32 {
    u32::try_from(cluster.watch_timeout().as_secs().clamp(1, 3600)).unwrap_or(290)
}

/// Follows one place until aborted: every change or deletion not made by addonctl alone sends
/// the `Addon`; so does a watch listed again after a gap (what happened in it is unknown).
/// `state` says whether the place is seen and whether something may have changed there.
async fn watch(
    api: Api<DynamicObject>,
    selector: String,
    timeout: u32,
    addon: ObjectRef<Addon>,
    requeue: UnboundedSender<ObjectRef<Addon>>,
    shared: Arc<Shared>,
    state: Arc<State>,
) {
    let config = watcher::Config::default()
        .labels(&selector)
        .timeout(timeout);
    let mut events = metadata_watcher(api, config).default_backoff().boxed();
    let mut listed = 0_u32;
    while let Some(event) = events.next().await {
        let send = match event {
            Ok(Event::InitDone) => {
                // What changed between the last check's list and this one is not known.
                state.dirty.store(true, Ordering::SeqCst);
                state.synced.store(true, Ordering::SeqCst);
                listed += 1;
                listed > 1
            }
            Ok(Event::Apply(object)) => !crate::drift::only_ours(&object.metadata),
            Ok(Event::Delete(_)) => true,
            Ok(Event::Init) => {
                state.synced.store(false, Ordering::SeqCst);
                false
            }
            Ok(Event::InitApply(_)) => false,
            Err(error) => {
                state.synced.store(false, Ordering::SeqCst);
                state.dirty.store(true, Ordering::SeqCst);
                tracing::debug!(addon = %addon.name, %error, "drift watch: retrying");
                false
            }
        };
        if !send {
            continue;
        }
        state.dirty.store(true, Ordering::SeqCst);
        shared.metrics.drift_wakeup(&addon.name);
        if requeue.unbounded_send(addon.clone()).is_err() {
            return;
        }
    }
}
