//! Waiting for one object to change, with a watch rather than a poll: the caller reads the
//! object, finds it not ready, and calls [`Cluster::changed_since`] with the resource version it
//! read; that returns at the object's next event (or when the watch ends), and the caller reads
//! again. Every watch is bounded (the server's `timeoutSeconds` and a client-side timer).

use std::time::Duration;

use futures::stream::FuturesUnordered;
use futures::StreamExt;
use kube::api::{DynamicObject, WatchEvent, WatchParams};
use kube::core::GroupVersionKind;

use super::{Cluster, Result};

/// The longest one watch lasts before the caller reads again.
const MAX_WATCH: Duration = Duration::from_secs(10);

/// A watch that ends without an event sooner than this is not made again by [`first_change`]
/// (a server that ends watches at once would otherwise be asked again and again).
const SHORTEST_QUIET_WATCH: Duration = Duration::from_millis(500);

/// One object [`first_change`] watches: which, and since which resource version (the one a
/// read saw; for an object that did not exist, the newest version read on its cluster, so its
/// creation is a change).
#[derive(Debug, Clone)]
pub struct Since<'a> {
    /// Its kind.
    pub gvk: GroupVersionKind,
    /// Its namespace, when namespaced.
    pub namespace: Option<&'a str>,
    /// Its name.
    pub name: &'a str,
    /// The version to watch from.
    pub version: &'a str,
}

/// Waits until one of `objects` (each on its cluster) changes, or `deadline` passes; returns
/// whether a change came first. A watch that ends without an event is made again from the same
/// version (one lasts at most [`MAX_WATCH`]), so a long pause stays watched to its end; one
/// that cannot be made (no `watch` permission, a cluster that does not answer) or that ends at
/// once leaves the deadline to pass, and the caller reads again then.
pub async fn first_change(
    objects: Vec<(&Cluster, Since<'_>)>,
    deadline: tokio::time::Instant,
) -> bool {
    let mut watches: FuturesUnordered<_> = objects
        .into_iter()
        .map(|(cluster, since)| async move {
            loop {
                let started = tokio::time::Instant::now();
                let left = deadline.saturating_duration_since(started);
                if left.is_zero() {
                    return false;
                }
                match cluster
                    .changed_since(&since.gvk, since.namespace, since.name, since.version, left)
                    .await
                {
                    Ok(true) => return true,
                    Ok(false) if started.elapsed() >= SHORTEST_QUIET_WATCH => {}
                    Ok(false) | Err(_) => return false,
                }
            }
        })
        .collect();
    let woken = async {
        while let Some(changed) = watches.next().await {
            if changed {
                return;
            }
        }
        // Every watch ended without an event: the deadline passes.
        std::future::pending::<()>().await;
    };
    tokio::time::timeout_at(deadline, woken).await.is_ok()
}

/// What [`Cluster::next_change`] saw.
#[derive(Debug)]
pub enum Change {
    /// The object as its event carried it (added or modified).
    Object(Box<DynamicObject>),
    /// Another event (deleted, an error such as an expired version): read the object again.
    Other,
    /// No event: the watch ended or its time passed.
    Nothing,
}

impl Cluster {
    /// Waits until the object `name` of `gvk` (in `namespace` when namespaced) changes after
    /// `resource_version`, the watch ends, or `limit` passes (whichever comes first; at most
    /// [`MAX_WATCH`]). Returns whether an event came (its creation, when it did not exist at
    /// `resource_version`, is one). A kind the server does not serve returns at once.
    pub async fn changed_since(
        &self,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
        name: &str,
        resource_version: &str,
        limit: Duration,
    ) -> Result<bool> {
        self.next_change(gvk, namespace, name, resource_version, limit)
            .await
            .map(|change| !matches!(change, Change::Nothing))
    }

    /// [`Cluster::changed_since`], with what the event carried: the object as it is now, so
    /// the caller need not read it again.
    pub async fn next_change(
        &self,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
        name: &str,
        resource_version: &str,
        limit: Duration,
    ) -> Result<Change> {
        // Within the request timeout (the connection's read timeout) with a second to spare.
        let limit = limit
            .min(MAX_WATCH)
            .min(self.timeout.saturating_sub(Duration::from_secs(2)))
            .max(Duration::from_secs(1));
        let what = format!("watch of {} `{name}`", gvk.kind);
        let (api, _) = self.api_for(gvk, namespace, &what).await?;
        let seconds = u32::try_from(limit.as_secs()).unwrap_or(u32::MAX).max(1);
        let params = WatchParams::default()
            .fields(&format!("metadata.name={name}"))
            .timeout(seconds);
        let watch = async {
            let stream = api
                .watch(&params, resource_version)
                .await
                .map_err(|e| self.map_error(e, &what))?;
            let mut stream = Box::pin(stream);
            // Any event, an error event (the version expired) included, means "read again".
            Ok(match stream.next().await {
                Some(Ok(WatchEvent::Added(object) | WatchEvent::Modified(object))) => {
                    Change::Object(Box::new(object))
                }
                Some(_) => Change::Other,
                None => Change::Nothing,
            })
        };
        match tokio::time::timeout(limit + Duration::from_secs(1), watch).await {
            Ok(result) => result,
            Err(_) => Ok(Change::Nothing),
        }
    }
}
