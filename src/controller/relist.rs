//! New registry versions without a restart: every `--registry-interval`, at once when a
//! registry calls `POST /webhook/registry`, and at once when the stored registries change
//! (ConfigMap `vela-addon-registry`: a registry added, updated or removed, watched by
//! [`watch_store`]) the stored registries are read and opened again and listed, the
//! controller's context takes the fresh catalogue, and every `Addon` whose version would change
//! (a constraint matching a newly published version, or the newest version moving) is
//! reconciled — which starts its (staged) rollout. One re-list runs at a time; webhook calls
//! during one coalesce into at most one more.

use std::sync::Arc;
use std::time::Duration;

use futures::channel::mpsc::UnboundedSender;
use kube::runtime::reflector::ObjectRef;
use kube::ResourceExt;

use super::crd::Addon;
use super::data::{Data, Job};
use super::engine;
use crate::context::Context;
use crate::render::Renderer;

/// The longest a re-list may take before it is given up (the next one starts afresh).
const RELIST_LIMIT: Duration = Duration::from_secs(120);

/// Re-lists at the interval and at each webhook call, until the term ends (the task is
/// aborted); sends the `Addon`s to reconcile into `requeue`.
pub(super) async fn poll(data: Arc<Data>, requeue: UnboundedSender<ObjectRef<Addon>>) {
    let interval = data.shared.settings.registry_interval;
    loop {
        let timer = async {
            if interval.is_zero() {
                std::future::pending::<()>().await;
            } else {
                tokio::time::sleep(interval).await;
            }
        };
        tokio::select! {
            () = timer => {}
            () = data.shared.relist.notified() => {}
        }
        let (reply, answer) = tokio::sync::oneshot::channel();
        let job = Job::Relist {
            data: Arc::clone(&data),
            reply,
        };
        if data.jobs.send(job).is_err() {
            return;
        }
        let Ok(Ok(changed)) = tokio::time::timeout(RELIST_LIMIT, answer).await else {
            tracing::warn!("registry re-list did not finish within {RELIST_LIMIT:?}");
            continue;
        };
        for addon in changed {
            if requeue.unbounded_send(addon).is_err() {
                return;
            }
        }
    }
}

/// Opens and lists the registries again, swaps the controller's context for one with the fresh
/// catalogue, and returns the `Addon`s whose resolved version differs from the one they apply
/// (or roll out).
pub(super) async fn relist(data: &Data) -> Vec<ObjectRef<Addon>> {
    let old = data.shared.ctx();
    let store = crate::registry::Store::Cluster {
        cluster: Box::new(old.cluster.clone()),
        namespace: old.namespace.clone(),
    };
    let reopened = match store.load().await {
        Ok(stored) => old.catalog.reopened_with(&stored),
        Err(error) => {
            tracing::warn!(
                "the stored registries cannot be read ({error}); re-listing the known ones"
            );
            old.catalog.reopened()
        }
    };
    let (catalog, failures) = match reopened {
        Ok(reopened) => reopened,
        Err(error) => {
            tracing::warn!("registries cannot be opened again: {error}");
            return Vec::new();
        }
    };
    for failure in failures {
        tracing::warn!("registry left out of the re-list: {failure}");
    }
    for listing in catalog.list().await {
        if let Err(error) = listing.addons {
            tracing::warn!(registry = %listing.registry, "registry cannot be listed: {error}");
        }
    }
    let fresh = Arc::new(Context {
        cluster: old.cluster.clone(),
        namespace: old.namespace.clone(),
        catalog,
        renderer: Arc::new(Renderer::with_limits(old.renderer.limits().clone())),
        engine: old.engine,
        lock: old.lock.clone(),
    });
    let mut changed = Vec::new();
    for addon in data.addons.state() {
        let status = addon.status.clone().unwrap_or_default();
        let current = status.rollout.map(|r| r.version).or(status.applied_version);
        let desired = engine::version_request(addon.name_any(), &addon.spec);
        match engine::resolve_version(&fresh, &desired).await {
            Ok(version) if current.as_ref() != Some(&version) => {
                tracing::info!(addon = %desired.name, %version, "registry re-list: a new version");
                // What failed may have been the registry: the back-off does not hold this one.
                data.update_memo(&desired.name, |memo| memo.retry_at = None);
                changed.push(ObjectRef::from_obj(addon.as_ref()));
            }
            Ok(_) => {}
            Err(error) => {
                tracing::debug!(addon = %desired.name, %error, "registry re-list: not resolved");
            }
        }
    }
    data.shared.set_ctx(fresh);
    data.shared.metrics.relisted();
    changed
}

/// Asks for a re-list whenever the ConfigMap that keeps the stored registries changes (created,
/// updated, deleted; not at the watch's first list), until the term ends (the task is aborted).
pub(super) async fn watch_store(data: Arc<Data>, timeout: u32) {
    use futures::StreamExt as _;
    use kube::runtime::watcher::{self, Event};
    use kube::runtime::WatchStreamExt as _;
    let ctx = data.shared.ctx();
    let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(ctx.cluster.client().clone(), &ctx.namespace);
    let config = watcher::Config::default()
        .fields(&format!("metadata.name={}", crate::registry::CONFIG_MAP))
        .timeout(timeout);
    let mut events = watcher::metadata_watcher(api, config)
        .default_backoff()
        .boxed();
    let mut listed = false;
    while let Some(event) = events.next().await {
        let changed = match event {
            Ok(Event::InitDone) => std::mem::replace(&mut listed, true),
            Ok(Event::Apply(_) | Event::Delete(_)) => true,
            Ok(Event::Init | Event::InitApply(_)) => false,
            Err(error) => {
                tracing::debug!(%error, "registry store watch: retrying");
                false
            }
        };
        if changed {
            tracing::info!("the stored registries changed: re-listing");
            data.shared.relist.notify_one();
        }
    }
}
