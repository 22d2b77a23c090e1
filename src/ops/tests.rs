//! Sessions on one runtime, at once, against the in-process fake API: each has its own lock
//! options, list memory, progress and identity; nothing one holds is seen by the other.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::json;

use crate::cluster::fake::FakeApi;
use crate::context::{Identity, Progress, Reporter, Runtime, Session, SessionOptions, Settings};
use crate::ops::guard::{lock_options, refuse_if_declared, Command};

/// Keeps the events reported to it.
#[derive(Default)]
struct Events(Mutex<Vec<Progress>>);

impl Reporter for Events {
    fn step(&self, message: &str) {
        self.event(&Progress::Stage {
            message: message.to_owned(),
        });
    }

    fn event(&self, event: &Progress) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(event.clone());
    }
}

impl Events {
    fn taken(&self) -> Vec<Progress> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

const SECRETS: &str = "/api/v1/namespaces/vela-system/secrets";

fn api() -> FakeApi {
    FakeApi::default()
        .serves("addonctl.io/v1alpha1", "addons", "Addon")
        .serves("v1", "secrets", "Secret")
        .on(
            "GET",
            "/apis/addonctl.io/v1alpha1/namespaces/vela-system/addons/declared",
            200,
            json!({"apiVersion": "addonctl.io/v1alpha1", "kind": "Addon",
                   "metadata": {"name": "declared", "namespace": "vela-system"}, "spec": {}}),
        )
        .on(
            "GET",
            SECRETS,
            200,
            json!({"apiVersion": "v1", "kind": "SecretList", "metadata": {}, "items": []}),
        )
        .on(
            "POST",
            SECRETS,
            201,
            json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "written", "namespace": "vela-system"}}),
        )
}

fn session(runtime: &Runtime, command: &str, user: &str, events: &Arc<Events>) -> Session {
    runtime.session(SessionOptions {
        identity: Some(Identity {
            user: user.to_owned(),
            groups: vec!["team".to_owned()],
            extra: std::collections::BTreeMap::new(),
        }),
        lock: Some(lock_options(command, false)),
        progress: Some(Arc::clone(events) as Arc<dyn Reporter>),
    })
}

fn lists(api: &FakeApi) -> usize {
    api.requests()
        .iter()
        .filter(|r| *r == &format!("GET {SECRETS}"))
        .count()
}

#[tokio::test]
async fn two_sessions_on_one_runtime_share_nothing_of_their_commands() {
    let api = api();
    let runtime = Arc::new(
        Runtime::with_cluster(&Settings::new("vela-system"), api.watched_cluster("local"))
            .expect("a runtime over the fake API"),
    );
    let (first_events, second_events) = (Arc::new(Events::default()), Arc::new(Events::default()));
    let first = session(&runtime, "enable declared", "alice", &first_events);
    let second = session(&runtime, "disable other", "bob", &second_events);

    // Who asked and how they lock are each session's own.
    assert_eq!(first.identity().map(|i| i.user.as_str()), Some("alice"));
    assert_eq!(second.identity().map(|i| i.user.as_str()), Some("bob"));
    assert!(first.ctx().lock.holder.contains("enable declared"));
    assert!(second.ctx().lock.holder.contains("disable other"));

    // At once: each session's refusal or note goes to its own progress, never the other's.
    let (overridden, refused) = tokio::join!(
        refuse_if_declared(&first, "declared", Command::Upgrade, true),
        refuse_if_declared(&second, "declared", Command::Disable, false),
    );
    assert!(overridden.is_ok(), "{overridden:?}");
    assert!(
        matches!(
            refused,
            Err(crate::Error::DeclaredByAddon {
                command: Command::Disable,
                ..
            })
        ),
        "{refused:?}"
    );
    let noted = first_events.taken();
    assert!(
        matches!(noted.as_slice(), [Progress::Note { message }] if message.contains("--override-controller")),
        "{noted:?}"
    );
    assert!(second_events.taken().is_empty());

    // Each session reuses its own lists: the first's memory answers the first only.
    let gvk = kube::core::GroupVersionKind::gvk("", "v1", "Secret");
    let first_reuse = first.ctx().cluster.reuse_lists();
    let second_reuse = second.ctx().cluster.reuse_lists();
    for _ in 0..2 {
        first
            .ctx()
            .cluster
            .list_reused(&gvk, Some("vela-system"), "")
            .await
            .expect("the first session lists");
    }
    assert_eq!(lists(&api), 1, "the first session read once and reused it");
    second
        .ctx()
        .cluster
        .list_reused(&gvk, Some("vela-system"), "")
        .await
        .expect("the second session lists");
    assert_eq!(
        lists(&api),
        2,
        "the second session did not get the first's list"
    );

    // A write through the shared client, by either session, makes every memory stale.
    second
        .ctx()
        .cluster
        .client()
        .request::<serde_json::Value>(
            http::Request::post(SECRETS)
                .body(
                    serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": "written"}}))
                    .unwrap_or_default(),
                )
                .expect("a request"),
        )
        .await
        .expect("the write is answered");
    first
        .ctx()
        .cluster
        .list_reused(&gvk, Some("vela-system"), "")
        .await
        .expect("the first session lists again");
    assert_eq!(
        lists(&api),
        3,
        "the second session's write made the first read again"
    );
    drop((first_reuse, second_reuse));
}
