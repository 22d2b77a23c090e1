//! New registry versions without a restart: every `--registry-interval` (and at once when a
//! registry calls `POST /webhook/registry`) the registries are opened and listed again, the
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
    let (catalog, failures) = match old.catalog.reopened() {
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
        renderer: Renderer::with_limits(old.renderer.limits().clone()),
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
