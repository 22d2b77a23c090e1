//! The runtime wiring: while this process leads, kube-runtime's `Controller` on `Addon` (one
//! reflector cache, one work queue), triggered by the `Addon`s, by every cluster Secret (a
//! join, detach or label change maps to every `Addon`), by the records (a record maps to its
//! `Addon`) and by the registry re-lists (the `Addon`s whose version changes); each reconcile goes through the finalizer helper to
//! [`converge`](super::converge).

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::runtime::controller::{Action, Config};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, ResourceExt};

use super::converge;
use super::crd::{Addon, FINALIZER};
use super::data::{Data, Job};
use super::relist;
use super::{Error, Result, Shared};
use crate::cluster::set::LABEL_CREDENTIAL_TYPE;
use crate::model::wire::LABEL_RECORD;
use crate::spread::workers::Workers;

/// Requeue delay when a reconcile returned an error the reconcile could not record.
const ERROR_REQUEUE: Duration = Duration::from_secs(15);
/// Triggers closer than this are merged into one reconcile.
const DEBOUNCE: Duration = Duration::from_secs(1);

/// Waits for leadership, reconciles while it lasts, and again, until `stopped` turns `true`.
pub(super) async fn run_while_leading(
    shared: Arc<Shared>,
    stopped: tokio::sync::watch::Receiver<bool>,
) -> Result<()> {
    let mut leader = shared.leader.subscribe();
    let mut stopping = stopped.clone();
    loop {
        loop {
            if *stopping.borrow() {
                return Ok(());
            }
            if *leader.borrow_and_update() {
                break;
            }
            tokio::select! {
                changed = leader.changed() => if changed.is_err() { return Ok(()) },
                changed = stopping.changed() => if changed.is_err() { return Ok(()) },
            }
        }
        let ended = term_ended(shared.leader.subscribe(), stopped.clone());
        run_term(&shared, ended).await;
        if !shared.settings.leader_elect {
            return Ok(());
        }
    }
}

/// Resolves when leadership is lost or the controller stops.
#[expect(
    clippy::manual_async_fn,
    reason = "`graceful_shutdown_on` needs the future to be `Sync`, which this signature states"
)]
fn term_ended(
    mut leader: tokio::sync::watch::Receiver<bool>,
    mut stopped: tokio::sync::watch::Receiver<bool>,
) -> impl Future<Output = ()> + Send + Sync + 'static {
    async move {
        loop {
            if !*leader.borrow_and_update() || *stopped.borrow_and_update() {
                return;
            }
            tokio::select! {
                changed = leader.changed() => if changed.is_err() { return },
                changed = stopped.changed() => if changed.is_err() { return },
            }
        }
    }
}

/// One leadership term: the caches, the work queue and the reconciles, until `ended`.
async fn run_term(shared: &Arc<Shared>, ended: impl Future<Output = ()> + Send + Sync + 'static) {
    let client = shared.ctx().cluster.client().clone();
    let namespace = shared.ctx().namespace.clone();
    let api: Api<Addon> = Api::namespaced(client.clone(), &namespace);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &namespace);
    let seconds = super::watches::watch_timeout(&shared.ctx().cluster);
    let config = watcher::Config::default().timeout(seconds);

    let (clusters, clusters_writer) = reflector::store();
    let cluster_events = reflector::reflector(
        clusters_writer,
        watcher(
            secrets.clone(),
            config.clone().labels(LABEL_CREDENTIAL_TYPE),
        ),
    )
    .touched_objects();
    let (records, records_writer) = reflector::store();
    let record_events = reflector::reflector(
        records_writer,
        watcher(
            secrets.clone(),
            config.clone().labels(&format!("{LABEL_RECORD}=true")),
        ),
    )
    .touched_objects();

    let runtime = kube::runtime::Controller::new(api.clone(), config).with_config(
        Config::default()
            .debounce(DEBOUNCE)
            .concurrency(shared.settings.concurrency.max(1)),
    );
    let addons = runtime.store();
    mark_ready_when_synced(shared, addons.clone(), api.clone());
    let every_addon = addons.clone();
    let record_namespace = namespace.clone();
    let (requeue, requeued) = futures::channel::mpsc::unbounded();
    let data = Arc::new(Data {
        shared: Arc::clone(shared),
        api,
        secrets,
        clusters,
        records,
        addons,
        jobs: workers(shared.settings.concurrency, shared.settings.workers),
        memo: Mutex::new(HashMap::new()),
        drift: Mutex::new(HashMap::new()),
        events: super::events::Events::new(client.clone()),
        watches: super::watches::Watches::new(requeue.clone(), Arc::clone(shared)),
        gates: super::gates::Gates::new(requeue.clone(), Arc::clone(shared)),
    });
    let poller = tokio::spawn(relist::poll(Arc::clone(&data), requeue));
    let store_watch = tokio::spawn(relist::watch_store(Arc::clone(&data), seconds));
    runtime
        .watches_stream(cluster_events, move |_: Secret| {
            every_addon
                .state()
                .iter()
                .map(|a| ObjectRef::from_obj(a.as_ref()))
                .collect::<Vec<_>>()
        })
        .watches_stream(record_events, move |record: Secret| {
            record
                .name_any()
                .strip_prefix("addon-record-")
                .map(|addon| ObjectRef::<Addon>::new(addon).within(&record_namespace))
        })
        .reconcile_on(requeued)
        .graceful_shutdown_on(ended)
        .run(reconcile, error_policy, data)
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!("controller: {e}");
            }
        })
        .await;
    poller.abort();
    store_watch.abort();
}

/// Without leader election, `/readyz` turns ready once the `Addon` cache has synced, or once
/// the `Addon`s can be listed (the cache's own readiness signal is not relied on alone).
fn mark_ready_when_synced(shared: &Arc<Shared>, addons: Store<Addon>, api: Api<Addon>) {
    if shared.settings.leader_elect {
        return;
    }
    let shared = Arc::clone(shared);
    tokio::spawn(async move {
        let listed = async {
            let params = kube::api::ListParams::default().limit(1);
            loop {
                match api.list(&params).await {
                    Ok(_) => return,
                    Err(e) => tracing::warn!("cannot list the Addons yet: {e}"),
                }
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            }
        };
        tokio::select! {
            _ = addons.wait_until_ready() => {}
            () = listed => {}
        }
        shared.ready.store(true, Ordering::Relaxed);
    });
}

/// One reconcile: the finalizer is added first (the patch triggers the next reconcile); a
/// deleted `Addon` is disabled before its finalizer goes (a refused disable keeps it).
///
/// The library's futures are not `Send` (the compiler cannot prove it through their stream
/// combinators), so the reconcile itself runs on one of the term's worker threads
/// ([`workers`]) and this future only waits for its answer.
fn reconcile(
    addon: Arc<Addon>,
    data: Arc<Data>,
) -> std::pin::Pin<Box<dyn Future<Output = Result<Action>> + Send>> {
    Box::pin(async move {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let job = Job::Reconcile {
            addon,
            data: Arc::clone(&data),
            reply,
        };
        if data.jobs.send(job).is_err() {
            return Err(Error::Worker("the reconcile thread has stopped".to_owned()));
        }
        answer
            .await
            .map_err(|_| Error::Worker("the reconcile thread dropped a reconcile".to_owned()))?
    })
}

/// The term's worker threads (`--workers`, else one per CPU; at most `--concurrency`; see
/// [`Workers`]).
fn workers(concurrency: u16, workers: u16) -> Workers<Job> {
    let threads = match workers {
        0 => std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        n => usize::from(n),
    };
    let threads = threads.min(usize::from(concurrency.max(1)));
    Workers::start(threads, "addonctl-reconcile", |job: Job| async move {
        match job {
            Job::Reconcile { addon, data, reply } => {
                let _ = reply.send(Box::pin(reconcile_one(addon, data)).await);
            }
            Job::Relist { data, reply } => {
                let _ = reply.send(relist::relist(&data).await);
            }
        }
    })
}

async fn reconcile_one(addon: Arc<Addon>, data: Arc<Data>) -> Result<Action> {
    let finalizers = addon.finalizers();
    let ours = finalizers.iter().any(|f| f == FINALIZER);
    if addon.metadata.deletion_timestamp.is_some() {
        if !ours {
            return Ok(Action::await_change());
        }
        let action = converge::cleanup(&addon, &data).await?;
        let rest: Vec<&String> = finalizers.iter().filter(|f| *f != FINALIZER).collect();
        set_finalizers(&data, &addon, &rest).await?;
        return Ok(action);
    }
    if !ours {
        let mut all: Vec<&String> = finalizers.iter().collect();
        let ours = FINALIZER.to_owned();
        all.push(&ours);
        set_finalizers(&data, &addon, &all).await?;
        return Ok(Action::await_change());
    }
    Box::pin(converge::apply(&addon, &data)).await
}

/// Replaces the `Addon`'s finalizers, as long as it is unchanged since it was read (its
/// resourceVersion as precondition).
async fn set_finalizers(data: &Data, addon: &Addon, finalizers: &[&String]) -> Result<()> {
    let patch = serde_json::json!({
        "metadata": {
            "finalizers": finalizers,
            "resourceVersion": addon.resource_version(),
        }
    });
    let params = crate::cluster::patch_params();
    data.api
        .patch(&addon.name_any(), &params, &kube::api::Patch::Merge(&patch))
        .await
        .map_err(|e| Error::Finalizer(e.to_string()))?;
    Ok(())
}

/// A reconcile that failed without recording it (the status could not be written, a disable
/// was refused): retried with the back-off of its failures.
fn error_policy(addon: Arc<Addon>, error: &Error, data: Arc<Data>) -> Action {
    let name = addon.name_any();
    tracing::warn!(addon = %name, "reconcile failed: {error}");
    // Counted for `/readyz`: a controller that cannot write its `Addon`s cannot reconcile.
    data.shared.reconciled(Some(error));
    let mut failures = 0;
    data.update_memo(&name, |memo| {
        memo.failures += 1;
        failures = memo.failures;
    });
    let delay = data.shared.settings.backoff.delay(failures);
    Action::requeue(delay.max(ERROR_REQUEUE.min(data.shared.settings.backoff.max)))
}
