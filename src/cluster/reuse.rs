//! Lists one command reuses: while a [`Reusing`] guard of a cluster is held, a labelled list
//! made again ([`Cluster::list_reused`]) is answered from memory, until this client writes
//! anything (a lock taken, a record written): from then on every list reads the server, so
//! what a command reads under its locks, and every wait's polling, is new. No list is reused
//! across commands (the last guard dropped forgets them), nor on a client made elsewhere
//! ([`Cluster::from_client`]), whose writes this one does not see.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use kube::api::DynamicObject;
use kube::core::GroupVersionKind;

use super::{Cluster, Result};

/// A list: its kind, namespace and label selector.
type Key = (GroupVersionKind, Option<String>, String);

/// The lists a cluster's client may reuse.
#[derive(Debug, Default)]
pub(super) struct Reuse {
    /// Whether this client's writes are seen (clients built by [`Cluster`] itself).
    watched: bool,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Guards held.
    holders: usize,
    /// Writes seen so far: a list answered before a write is not kept after it.
    generation: u64,
    /// A write was seen while guards were held: nothing is reused until they are all dropped.
    wrote: bool,
    lists: HashMap<Key, Vec<DynamicObject>>,
}

impl Reuse {
    /// For a client whose every request passes [`Reuse::wrote`].
    pub(super) fn watched() -> Self {
        Reuse {
            watched: true,
            state: Mutex::default(),
        }
    }

    /// This client is writing: nothing read before is reused.
    pub(super) fn wrote(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.generation += 1;
        state.wrote = state.holders > 0;
        state.lists.clear();
    }
}

/// Held while a command reuses lists (see [`Cluster::reuse_lists`]).
#[must_use = "lists are reused only while the guard is held"]
#[derive(Debug)]
pub struct Reusing(Arc<Reuse>);

impl Drop for Reusing {
    fn drop(&mut self) {
        let mut state = self.0.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.holders = state.holders.saturating_sub(1);
        if state.holders == 0 {
            state.lists.clear();
            state.wrote = false;
        }
    }
}

impl Cluster {
    /// Reuses lists made through [`Cluster::list_reused`] while the guard is held, until this
    /// client writes: one command's plan and checks read the state once.
    pub fn reuse_lists(&self) -> Reusing {
        let mut state = self
            .reuse
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        state.holders += 1;
        Reusing(Arc::clone(&self.reuse))
    }

    /// [`Cluster::list`], answered from memory when the same list was made before, while a
    /// [`Cluster::reuse_lists`] guard is held and this client has written nothing since it was
    /// taken.
    pub async fn list_reused(
        &self,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
        selector: &str,
    ) -> Result<Vec<DynamicObject>> {
        let key: Key = (
            gvk.clone(),
            namespace.map(str::to_owned),
            selector.to_owned(),
        );
        let generation = {
            let state = self
                .reuse
                .state
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if !self.reuse.watched || state.holders == 0 || state.wrote {
                None
            } else if let Some(known) = state.lists.get(&key) {
                return Ok(known.clone());
            } else {
                Some(state.generation)
            }
        };
        let listed = self.list(gvk, namespace, selector).await?;
        if let Some(generation) = generation {
            let mut state = self
                .reuse
                .state
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if state.holders > 0 && !state.wrote && state.generation == generation {
                state.lists.insert(key, listed.clone());
            }
        }
        Ok(listed)
    }
}
