//! `GET /api/v1/events`: Server-Sent Events. An apply's progress comes from the operation's own
//! [`Reporter`]; an addon's phase from a watch on the records (the Secrets labelled
//! `addonctl.io/record` in the system namespace), not from polling. Each stream only carries
//! what its caller may see (events about a system addon need [`super::visibility`]'s right).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::Extension;
use futures::{Stream, StreamExt};
use serde::Serialize;
use tokio::sync::broadcast;

use crate::context::{Progress, Reporter};

use super::{App, Caller};

/// Events kept for a slow stream before it misses some (it is then told so).
const BACKLOG: usize = 1024;

/// At most this many event streams at once; more are answered 503.
pub const MAX_STREAMS: usize = 512;

/// One event.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Event {
    /// An addon's record changed: its phase and version now.
    Addon {
        /// The addon.
        addon: String,
        /// Its phase (`enabled`, `enabling`, `disabled`, …).
        phase: String,
        /// Its installed version, when installed.
        #[serde(skip_serializing_if = "Option::is_none")]
        version: Option<String>,
        /// The clusters it reaches.
        clusters: Vec<String>,
        /// Ready workloads over all workloads, when known.
        #[serde(skip_serializing_if = "Option::is_none")]
        ready: Option<(usize, usize)>,
    },
    /// An apply's progress.
    Progress {
        /// The plan being applied.
        plan_id: String,
        /// The addon it is about, when one.
        #[serde(skip_serializing_if = "Option::is_none")]
        addon: Option<String>,
        /// The operation's event.
        #[schema(value_type = Object)]
        progress: Progress,
    },
    /// An apply finished.
    Applied {
        /// The plan.
        plan_id: String,
        /// `succeeded` or `failed`.
        outcome: String,
        /// What happened, one line.
        message: String,
    },
    /// A registry was added, changed, removed or synced.
    Registry {
        /// The registry.
        registry: String,
        /// What happened.
        change: String,
    },
    /// The stream fell behind and missed events: read the state again.
    Lagged {
        /// How many were missed.
        missed: u64,
    },
}

/// An event (its JSON, written once for every stream) with whether it is about a system addon.
#[derive(Debug, Clone)]
struct Envelope {
    json: Arc<str>,
    system: bool,
}

/// Where events go; every stream subscribes.
#[derive(Debug)]
pub struct Hub {
    sender: broadcast::Sender<Envelope>,
    streams: Arc<std::sync::atomic::AtomicUsize>,
}

impl Default for Hub {
    fn default() -> Self {
        Hub {
            sender: broadcast::channel(BACKLOG).0,
            streams: Arc::default(),
        }
    }
}

impl Hub {
    /// Sends `event` to every stream allowed to see it (`system`: about a system addon).
    pub fn send(&self, event: Event, system: bool) {
        match serde_json::to_string(&event) {
            Ok(json) => self.send_json(json.into(), system),
            Err(e) => tracing::debug!("an event cannot be written as JSON: {e}"),
        }
    }

    /// Sends an event written as JSON already (one another replica relayed).
    pub fn send_json(&self, json: Arc<str>, system: bool) {
        // No stream listening is not an error.
        let _ = self.sender.send(Envelope { json, system });
    }

    /// The streams open now.
    pub fn streams(&self) -> usize {
        self.streams.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// A [`Reporter`] that turns an apply's progress into events of its plan.
pub struct PlanReporter {
    app: Arc<App>,
    plan_id: String,
    system: bool,
}

impl PlanReporter {
    /// The reporter of the apply of `plan_id` (`system`: about a system addon).
    pub fn new(app: Arc<App>, plan_id: String, system: bool) -> Self {
        PlanReporter {
            app,
            plan_id,
            system,
        }
    }
}

impl Reporter for PlanReporter {
    fn step(&self, message: &str) {
        self.event(&Progress::Note {
            message: message.to_owned(),
        });
    }

    fn event(&self, event: &Progress) {
        let addon = match event {
            Progress::Applying { addon, .. }
            | Progress::Disabling { addon, .. }
            | Progress::Phase { addon, .. } => Some(addon.clone()),
            _ => None,
        };
        let event = Event::Progress {
            plan_id: self.plan_id.clone(),
            addon,
            progress: event.clone(),
        };
        self.app.relay.send(&self.plan_id, &event, self.system);
        self.app.events.send(event, self.system);
    }
}

/// Counts a stream while it is open.
struct Open(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// `GET /api/v1/events`.
#[utoipa::path(
    get,
    path = "/api/v1/events",
    tag = "events",
    responses(
        (status = 200, description = "A stream of Server-Sent Events, each a JSON `Event`", content_type = "text/event-stream", body = Event),
        (status = 503, description = "Too many streams open", body = super::ApiError),
    )
)]
pub async fn stream(
    State(app): State<Arc<App>>,
    Extension(caller): Extension<Caller>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, super::ApiError> {
    let counter = Arc::clone(&app.events.streams);
    if counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed) >= MAX_STREAMS {
        counter.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        return Err(super::ApiError::of_kind(
            crate::ErrorKind::Unavailable,
            format!("{MAX_STREAMS} event streams are open already; close one and retry"),
        ));
    }
    let open = Open(counter);
    let session = app.session(&caller, None);
    let sees_system = app.visibility.may_see_system(&session).await;
    let receiver = app.events.sender.subscribe();
    let events = tokio_stream_of(receiver).filter_map(move |item| {
        let _open = &open;
        let json = match item {
            Ok(envelope) if envelope.system && !sees_system => None,
            Ok(envelope) => Some(envelope.json),
            Err(missed) => serde_json::to_string(&Event::Lagged { missed })
                .ok()
                .map(Arc::from),
        };
        std::future::ready(json.map(|json| Ok(SseEvent::default().data(&*json))))
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

/// A broadcast receiver as a stream: each event, or how many were missed.
fn tokio_stream_of(
    receiver: broadcast::Receiver<Envelope>,
) -> impl Stream<Item = Result<Envelope, u64>> {
    futures::stream::unfold(receiver, |mut receiver| async move {
        match receiver.recv().await {
            Ok(envelope) => Some((Ok(envelope), receiver)),
            Err(broadcast::error::RecvError::Lagged(missed)) => Some((Err(missed), receiver)),
            Err(broadcast::error::RecvError::Closed) => None,
        }
    })
}

/// Watches the records until the server stops: each change becomes an [`Event::Addon`] with the
/// addon's status now. The watch restarts (after a pause) when the API server ends it.
pub async fn watch(app: Arc<App>) {
    use k8s_openapi::api::core::v1::Secret;
    use kube::core::PartialObjectMeta;
    use kube::runtime::watcher::{self, Event as WatchEvent};

    let runtime = app.runtime();
    let api: kube::Api<PartialObjectMeta<Secret>> =
        kube::Api::namespaced(runtime.cluster.client().clone(), &runtime.namespace);
    let config =
        watcher::Config::default().labels(&format!("{}=true", crate::model::wire::LABEL_RECORD));
    let mut changes = std::pin::pin!(watcher::metadata_watcher(api, config));
    while let Some(change) = changes.next().await {
        let names: Vec<String> = match change {
            Ok(WatchEvent::Apply(object) | WatchEvent::Delete(object)) => object
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(crate::model::wire::LABEL_NAME))
                .cloned()
                .into_iter()
                .collect(),
            Ok(_) => Vec::new(),
            Err(e) => {
                tracing::debug!("the record watch restarts: {e}");
                tokio::time::sleep(Duration::from_secs(1)).await;
                Vec::new()
            }
        };
        for name in names {
            publish_status(&app, &name).await;
        }
    }
}

/// Sends the status of `addon` now (read on a worker).
pub async fn publish_status(app: &Arc<App>, addon: &str) {
    let job = Arc::clone(app);
    let addon = addon.to_owned();
    let _ = app
        .workers
        .run(move || async move { publish_status_here(&job, &addon).await })
        .await;
}

/// Sends the status of `addon` now, read where this runs.
pub async fn publish_status_here(app: &Arc<App>, addon: &str) {
    let session = app.session(&Caller::local(), None);
    let system = super::api::is_system(&session.ctx().catalog, addon).await;
    match crate::status::status(session.ctx().state(), addon, None).await {
        Ok(status) => app.events.send(
            Event::Addon {
                addon: addon.to_owned(),
                phase: status.phase.to_string(),
                version: status.installed_version,
                clusters: status.clusters,
                ready: status
                    .workload_count
                    .map(|all| (status.ready_workload_count.unwrap_or(0), all)),
            },
            system,
        ),
        Err(e) => tracing::debug!("no status of `{addon}` for the event stream: {e}"),
    }
}
