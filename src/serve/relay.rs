//! Apply progress for every replica. In a cluster the server runs as several replicas behind
//! one Service: an apply runs on the replica that was asked, while the browser following it may
//! hold its event stream open on another. Each replica therefore writes the progress and the
//! outcome of the applies it runs as Kubernetes Events in the system namespace (about the
//! plan's Secret, reported by `addonctl-serve`, labelled with the replica), and every replica
//! watches them and passes on those of the others to its own streams. The API server keeps
//! Events for an hour and then deletes them: nothing to clean up.
//!
//! Writing is never in an apply's way: events queue (bounded) for one writer task, and when the
//! queue is full they are dropped (the outcome is also in the plan and the record).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::events::Event;
use super::App;
use crate::cluster::Cluster;

/// The label every relayed Event carries (its value: the replica that wrote it).
pub const LABEL_REPLICA: &str = "addonctl.io/serve-replica";

/// The component named as the Events' reporter.
pub const COMPONENT: &str = "addonctl-serve";

/// Events waiting to be written; more are dropped.
const QUEUE: usize = 256;

/// The longest event relayed (a longer one is dropped: a note of a few lines fits).
const MAX_MESSAGE: usize = 4096;

/// What a relayed Event's message holds.
#[derive(Debug, Serialize, Deserialize)]
struct Relayed {
    /// Whether it is about a system addon (only those who may see them get it).
    system: bool,
    /// The event, as the streams send it.
    event: Value,
}

/// The sending side: one per server.
#[derive(Debug)]
pub struct Relay {
    /// This replica's id (the label of the Events it writes).
    pub replica: String,
    queue: Option<mpsc::Sender<(String, Relayed)>>,
    receiver: std::sync::Mutex<Option<mpsc::Receiver<(String, Relayed)>>>,
}

impl Relay {
    /// A relay (`enabled`: in a cluster; otherwise it sends nothing).
    pub fn new(enabled: bool) -> Relay {
        let (queue, receiver) = if enabled {
            let (sender, receiver) = mpsc::channel(QUEUE);
            (Some(sender), Some(receiver))
        } else {
            (None, None)
        };
        Relay {
            replica: super::plans::new_id().chars().take(12).collect(),
            queue,
            receiver: std::sync::Mutex::new(receiver),
        }
    }

    /// Queues `event` of the apply of `plan_id` for the other replicas.
    pub fn send(&self, plan_id: &str, event: &Event, system: bool) {
        let Some(queue) = &self.queue else {
            return;
        };
        let Ok(event) = serde_json::to_value(event) else {
            return;
        };
        if queue
            .try_send((plan_id.to_owned(), Relayed { system, event }))
            .is_err()
        {
            tracing::debug!(
                "an apply event was not relayed to the other replicas: the queue is full"
            );
        }
    }
}

/// Writes the queued events and passes on the other replicas' until the server stops.
pub async fn run(app: Arc<App>) {
    let receiver = match app.relay.receiver.lock() {
        Ok(mut receiver) => receiver.take(),
        Err(poisoned) => poisoned.into_inner().take(),
    };
    let Some(receiver) = receiver else {
        return;
    };
    let runtime = app.runtime();
    let writer = write(
        runtime.cluster.clone(),
        runtime.namespace.clone(),
        app.relay.replica.clone(),
        receiver,
    );
    tokio::join!(writer, watch(app));
}

async fn write(
    cluster: Cluster,
    namespace: String,
    replica: String,
    mut receiver: mpsc::Receiver<(String, Relayed)>,
) {
    while let Some((plan_id, relayed)) = receiver.recv().await {
        let Ok(message) = serde_json::to_string(&relayed) else {
            continue;
        };
        if message.len() > MAX_MESSAGE {
            continue;
        }
        let reason = match relayed.event.get("type").and_then(Value::as_str) {
            Some("applied") => "Applied",
            _ => "Progress",
        };
        let now = crate::source::http::rfc3339(std::time::SystemTime::now());
        let object = json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "generateName": format!("{}.", super::plan_store::name(&plan_id)),
                "namespace": namespace,
                "labels": {LABEL_REPLICA: replica},
            },
            "involvedObject": {
                "apiVersion": "v1",
                "kind": "Secret",
                "namespace": namespace,
                "name": super::plan_store::name(&plan_id),
            },
            "reason": reason,
            "message": message,
            "type": "Normal",
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "reportingInstance": replica,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        });
        if let Err(e) = create(&cluster, &namespace, object).await {
            tracing::debug!("an apply event was not relayed to the other replicas: {e}");
        }
    }
}

async fn create(cluster: &Cluster, namespace: &str, object: Value) -> Result<(), String> {
    use k8s_openapi::api::core::v1::Event as KubeEvent;
    let event: KubeEvent = serde_json::from_value(object).map_err(|e| e.to_string())?;
    let api: kube::Api<KubeEvent> = kube::Api::namespaced(cluster.client().clone(), namespace);
    api.create(&kube::api::PostParams::default(), &event)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Passes on the events the other replicas write (not those written before the watch began:
/// they are about applies whose outcome the plans and records hold).
async fn watch(app: Arc<App>) {
    use k8s_openapi::api::core::v1::Event as KubeEvent;
    use kube::runtime::watcher::{self, Event as WatchEvent};

    let runtime = app.runtime();
    let api: kube::Api<KubeEvent> =
        kube::Api::namespaced(runtime.cluster.client().clone(), &runtime.namespace);
    let config = watcher::Config::default().labels(&format!(
        "{LABEL_REPLICA},{LABEL_REPLICA}!={}",
        app.relay.replica
    ));
    let mut changes = std::pin::pin!(watcher::watcher(api, config));
    while let Some(change) = changes.next().await {
        match change {
            Ok(WatchEvent::Apply(event)) => {
                if let Some((json, system)) = read(&event) {
                    app.events.send_json(json, system);
                }
            }
            Ok(_) => {}
            Err(e) => {
                tracing::debug!("the watch of the other replicas' events restarts: {e}");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// The stream event a relayed Event holds (its JSON: an object of a known `type`).
fn read(event: &k8s_openapi::api::core::v1::Event) -> Option<(Arc<str>, bool)> {
    if event.reporting_component.as_deref() != Some(COMPONENT) {
        return None;
    }
    let message = event.message.as_deref()?;
    if message.len() > MAX_MESSAGE {
        return None;
    }
    let relayed: Relayed = serde_json::from_str(message).ok()?;
    let kind = relayed.event.get("type").and_then(Value::as_str)?;
    if !matches!(kind, "progress" | "applied") || relayed.event.get("planId").is_none() {
        return None;
    }
    Some((relayed.event.to_string().into(), relayed.system))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relayed_event_reads_back_as_it_was_sent_and_nothing_else_does() {
        let sent = Event::Applied {
            plan_id: "abc".to_owned(),
            outcome: "succeeded".to_owned(),
            message: "done".to_owned(),
        };
        let relayed = Relayed {
            system: true,
            event: serde_json::to_value(&sent).unwrap(),
        };
        let mut event = k8s_openapi::api::core::v1::Event {
            message: Some(serde_json::to_string(&relayed).unwrap()),
            reporting_component: Some(COMPONENT.to_owned()),
            ..Default::default()
        };
        let (read_back, system) = read(&event).unwrap();
        assert!(system);
        assert_eq!(
            serde_json::from_str::<Value>(&read_back).unwrap(),
            serde_json::to_value(&sent).unwrap()
        );
        event.reporting_component = Some("someone-else".to_owned());
        assert!(read(&event).is_none(), "another component's Event");
        event.reporting_component = Some(COMPONENT.to_owned());
        event.message = Some("{\"system\": false, \"event\": {\"type\": \"nonsense\"}}".to_owned());
        assert!(read(&event).is_none(), "an event that is no stream event");
        event.message = Some("x".repeat(MAX_MESSAGE + 1));
        assert!(read(&event).is_none(), "a message over the cap");
    }
}
