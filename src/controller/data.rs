//! What the reconciles of the controller share: the `Addon`'s memo of its last reconcile, the
//! reflector stores and clients ([`Data`]), and one reconcile handed to a worker thread
//! ([`Job`], run by [`crate::spread::workers::Workers`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use k8s_openapi::api::core::v1::Secret;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::Api;

use super::crd::Addon;
use super::{Result, Shared};

/// What a reconcile remembers of the last one of its `Addon` (this process only; after a
/// leader change the status holds the same).
#[derive(Debug, Clone, Default)]
pub(super) struct Memo {
    /// The digest of the inputs last applied successfully.
    pub digest: String,
    /// The record's revision after that apply.
    pub revision: Option<String>,
    /// When it was last planned.
    pub planned: Option<Instant>,
    /// Whether every target cluster was healthy at the last look.
    pub healthy: bool,
    /// When the health was last read.
    pub health_at: Option<Instant>,
    /// Failures in a row, with the generation they failed at.
    pub failures: u32,
    /// The generation of those failures.
    pub failed_generation: Option<i64>,
    /// Not before this instant is a failed generation tried again (the `Addon`'s own status
    /// writes trigger reconciles too; they must not shorten the back-off).
    pub retry_at: Option<Instant>,
    /// The rollout status this process last wrote (newer than a lagging cache's).
    pub rollout: Option<super::crd::RolloutStatus>,
}

/// What every reconcile of one leadership term shares.
pub(super) struct Data {
    pub shared: Arc<Shared>,
    pub api: Api<Addon>,
    pub secrets: Api<Secret>,
    pub clusters: Store<Secret>,
    pub records: Store<Secret>,
    /// The `Addon` cache.
    pub addons: Store<Addon>,
    pub jobs: crate::spread::workers::Workers<Job>,
    pub memo: Mutex<HashMap<String, Memo>>,
    /// Drift state per addon, taken out for a reconcile and put back (the reconciles of one
    /// `Addon` never overlap).
    pub drift: Mutex<HashMap<String, super::engine::DriftMemo>>,
    /// The Events published on the `Addon`s.
    pub events: super::events::Events,
    /// The drift watches on the managed clusters.
    pub watches: super::watches::Watches,
    /// The rollout gates' waits for their workloads.
    pub gates: super::gates::Gates,
}

impl Data {
    /// The memo of `name` (default when none).
    pub fn memo(&self, name: &str) -> Memo {
        self.memo
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .cloned()
            .unwrap_or_default()
    }

    /// Changes the memo of `name`.
    pub fn update_memo(&self, name: &str, f: impl FnOnce(&mut Memo)) {
        f(self
            .memo
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(name.to_owned())
            .or_default());
    }

    /// Forgets `name`.
    pub fn forget(&self, name: &str) {
        self.memo
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(name);
        self.drift
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(name);
        self.watches.forget(name);
        self.gates.forget(name);
        self.shared.metrics.forget(name);
    }

    /// Takes the drift state of `name` (empty when none) for one reconcile.
    pub fn take_drift(&self, name: &str) -> super::engine::DriftMemo {
        self.drift
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(name)
            .unwrap_or_default()
    }

    /// Puts the drift state of `name` back.
    pub fn put_drift(&self, name: &str, memo: super::engine::DriftMemo) {
        self.drift
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.to_owned(), memo);
    }
}

/// Work for a worker thread.
pub(super) enum Job {
    /// One reconcile.
    Reconcile {
        addon: Arc<Addon>,
        data: Arc<Data>,
        reply: tokio::sync::oneshot::Sender<Result<Action>>,
    },
    /// List the registries again; answers the `Addon`s whose version changes.
    Relist {
        data: Arc<Data>,
        reply: tokio::sync::oneshot::Sender<Vec<ObjectRef<Addon>>>,
    },
}
