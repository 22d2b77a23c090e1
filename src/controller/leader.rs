//! Leader election: the Lease `addonctl-controller` (`coordination.k8s.io/v1`) in the system
//! namespace, held by one process at a time.
//!
//! Expected flow: every [`RETRY_PERIOD`] a follower reads the Lease and takes it when it is
//! free, expired ([`LEASE_DURATION`] after its last renewal) or held by a process of this host
//! that is gone; the leader renews it every [`RENEW_PERIOD`] (a replace with the read
//! resourceVersion as precondition, so two processes never both win). A leader that has not
//! renewed for [`RENEW_DEADLINE`] (the API server does not answer, or another took the Lease)
//! stops leading before the Lease can expire for the others. On shutdown the leader releases
//! the Lease (empty holder) so a standby takes over at once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::core::GroupVersionKind;
use serde_json::{json, Value};

use super::engine::hold_lease;
use super::Shared;
use crate::cluster;

/// The Lease's name.
pub const LEASE: &str = "addonctl-controller";
/// How long the Lease lasts without renewal.
pub const LEASE_DURATION: Duration = Duration::from_secs(15);
/// How long a leader goes on without a successful renewal.
pub const RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// How often the leader renews.
pub const RENEW_PERIOD: Duration = Duration::from_secs(4);
/// How often a follower tries.
pub const RETRY_PERIOD: Duration = Duration::from_secs(2);

fn lease_gvk() -> GroupVersionKind {
    GroupVersionKind::gvk("coordination.k8s.io", "v1", "Lease")
}

/// Runs the election until `stopped` turns `true`, publishing leadership in `shared.leader`.
pub(super) async fn elect(shared: Arc<Shared>, mut stopped: tokio::sync::watch::Receiver<bool>) {
    let mut last_renewal: Option<Instant> = None;
    loop {
        if *stopped.borrow() {
            break;
        }
        // Counted from when the renewal was sent, and never waited for past the deadline: a
        // leader cut off from the API server steps down by its own clock, before the Lease
        // can expire for the others (whatever the request timeout).
        let sent = Instant::now();
        let limit = last_renewal
            .and_then(|at| RENEW_DEADLINE.checked_sub(at.elapsed()))
            .unwrap_or(RENEW_DEADLINE)
            .max(Duration::from_millis(100));
        match tokio::time::timeout(limit, try_hold(&shared)).await {
            Ok(Ok(true)) => last_renewal = Some(sent),
            Ok(Ok(false)) => last_renewal = None,
            Ok(Err(e)) => tracing::warn!("leader election: {e}"),
            Err(_) => tracing::warn!(
                "leader election: the Lease `{LEASE}` could not be renewed within {}s",
                limit.as_secs()
            ),
        }
        let leading = last_renewal.is_some_and(|t| t.elapsed() < RENEW_DEADLINE);
        if leading != *shared.leader.borrow() {
            if leading {
                tracing::info!(identity = %shared.settings.identity, "became the leader");
            } else {
                tracing::warn!("lost the leadership: reconciling stops");
            }
            shared.leader.send_replace(leading);
            shared.metrics.set_leader(leading);
        }
        let pause = if leading { RENEW_PERIOD } else { RETRY_PERIOD };
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            _ = stopped.changed() => {}
        }
    }
    if *shared.leader.borrow() {
        shared.leader.send_replace(false);
        shared.metrics.set_leader(false);
        if let Err(e) = release(&shared).await {
            tracing::warn!("releasing the Lease `{LEASE}`: {e}");
        }
    }
}

/// Takes or renews the Lease: `Ok(true)` when this process holds it now.
async fn try_hold(shared: &Shared) -> cluster::Result<bool> {
    let ctx = shared.ctx();
    let identity = &shared.settings.identity;
    hold_lease(
        &ctx.cluster,
        &ctx.namespace,
        LEASE,
        identity,
        LEASE_DURATION,
    )
    .await
}

/// Empties the holder of the Lease if this process still holds it.
async fn release(shared: &Shared) -> cluster::Result<()> {
    let ctx = shared.ctx();
    let cluster = &ctx.cluster;
    let namespace = &ctx.namespace;
    let Some(stored) = cluster.get(&lease_gvk(), Some(namespace), LEASE).await? else {
        return Ok(());
    };
    let value = serde_json::to_value(&stored).unwrap_or(Value::Null);
    if value["spec"]["holderIdentity"] != shared.settings.identity.as_str() {
        return Ok(());
    }
    let mut object = value;
    object["spec"]["holderIdentity"] = json!("");
    cluster.replace(&object).await?;
    tracing::info!("released the Lease `{LEASE}`");
    Ok(())
}
