//! A gate's wake: while a rollout's gate waits for clusters of its batch, their workloads are
//! watched (not ready ones first, at most [`crate::status::wait::MAX_WATCHED`], from the
//! versions the last look read) and the `Addon` is reconciled at the first change, so a
//! workload that becomes ready is seen a request's time later rather than at the next poll
//! (`ControllerSettings::gate_poll`). One wait per `Addon`, each bounded by the time of its
//! next look; a new look replaces it, and all end with the leadership term ([`Gates`] aborts
//! them when dropped).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::channel::mpsc::UnboundedSender;
use kube::runtime::reflector::ObjectRef;

use super::crd::Addon;
use super::Shared;
use crate::status::wait::Watched;

/// The gates' waits of one leadership term.
pub(super) struct Gates {
    /// Where a change sends the `Addon` to be reconciled.
    requeue: UnboundedSender<ObjectRef<Addon>>,
    shared: Arc<Shared>,
    /// Per `Addon`, its running wait.
    running: Mutex<HashMap<String, tokio::task::AbortHandle>>,
}

impl Gates {
    pub fn new(requeue: UnboundedSender<ObjectRef<Addon>>, shared: Arc<Shared>) -> Self {
        Gates {
            requeue,
            shared,
            running: Mutex::new(HashMap::new()),
        }
    }

    /// Watches `watched` for `addon` for at most `until` (its next look), replacing its last
    /// wait; nothing is watched when `watched` is empty.
    pub fn follow(&self, addon: &Addon, watched: Vec<Watched>, until: Duration) {
        let name = kube::ResourceExt::name_any(addon);
        let task = (!watched.is_empty()).then(|| {
            let target = ObjectRef::from_obj(addon);
            let requeue = self.requeue.clone();
            let shared = Arc::clone(&self.shared);
            let deadline = tokio::time::Instant::now() + until;
            tokio::spawn(async move {
                let ctx = shared.ctx();
                if crate::status::wait::changed(ctx.state(), &watched, deadline).await {
                    tracing::debug!(addon = %target.name, "a gate's workload changed");
                    let _ = requeue.unbounded_send(target);
                }
            })
            .abort_handle()
        });
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        let old = match task {
            Some(task) => running.insert(name, task),
            None => running.remove(&name),
        };
        if let Some(old) = old {
            old.abort();
        }
    }

    /// Ends the wait of `name`, if any.
    pub fn forget(&self, name: &str) {
        let old = self
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(name);
        if let Some(old) = old {
            old.abort();
        }
    }
}

impl Drop for Gates {
    fn drop(&mut self) {
        for (_, task) in self
            .running
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
        {
            task.abort();
        }
    }
}
