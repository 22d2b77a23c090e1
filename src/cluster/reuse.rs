//! Lists one command reuses: while a [`Reusing`] guard of a cluster is held, a labelled list
//! made again ([`Cluster::list_reused`]) is answered from memory, until this client writes
//! anything (a lock taken, a record written): from then on every list reads the server, so
//! what a command reads under its locks, and every wait's polling, is new. No list is reused
//! across commands (the last guard dropped forgets them), nor on a client made elsewhere
//! ([`Cluster::from_client`]), whose writes this one does not see.
//!
//! Each session ([`Cluster::scoped`]) has its own memory: a list one session read is never
//! answered to another. A write through the shared client, by any session, makes every
//! session's memory stale (a write is seen, not who made it: reuse is only ever lost, never
//! wrong).
//!
//! What no addonctl lock protects (the joined clusters, the system namespace) is read once per
//! command ([`Cluster::list_kept`], [`Cluster::get_kept`]): taking or releasing a lock does not
//! make it stale, any other write of this client does. Another client may change it at any
//! moment, before a second read as well as after, so a second read would guarantee nothing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};

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
    /// Writes seen so far other than a lock's.
    other_writes: u64,
    /// Reads kept across a lock's writes (see the module documentation).
    kept: HashMap<Key, Vec<DynamicObject>>,
}

/// Which reads a [`Cluster::remembered`] read is one of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Memory {
    /// Reused until this client writes anything.
    Lists,
    /// Kept across a lock's writes.
    Kept,
}

impl State {
    /// Whether reads of `memory` may be answered from it now.
    fn usable(&self, memory: Memory) -> bool {
        self.holders > 0 && (memory == Memory::Kept || !self.wrote)
    }

    /// The writes that make reads of `memory` stale, counted.
    fn writes(&self, memory: Memory) -> u64 {
        match memory {
            Memory::Lists => self.generation,
            Memory::Kept => self.other_writes,
        }
    }

    fn reads(&mut self, memory: Memory) -> &mut HashMap<Key, Vec<DynamicObject>> {
        match memory {
            Memory::Lists => &mut self.lists,
            Memory::Kept => &mut self.kept,
        }
    }
}

/// The memories of every session of one client, told of each of its writes.
#[derive(Debug, Default)]
pub(super) struct Scopes(Mutex<Vec<Weak<Reuse>>>);

impl Scopes {
    /// A new memory for a session, told of this client's writes from now on.
    pub(super) fn open(&self) -> Arc<Reuse> {
        let reuse = Arc::new(Reuse {
            watched: true,
            state: Mutex::default(),
        });
        let mut scopes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        scopes.retain(|scope| scope.strong_count() > 0);
        scopes.push(Arc::downgrade(&reuse));
        reuse
    }

    /// This client is writing to `path`: every live session's memory hears of it.
    pub(super) fn wrote(&self, path: &str) {
        let live: Vec<Arc<Reuse>> = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for reuse in live {
            reuse.wrote(path);
        }
    }
}

impl Reuse {
    /// This client is writing to `path`: nothing read before is reused, except reads kept
    /// when the write is a lock's (a Lease).
    pub(super) fn wrote(&self, path: &str) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.generation += 1;
        state.wrote = state.holders > 0;
        state.lists.clear();
        if !is_lease(path) {
            state.other_writes += 1;
            state.kept.clear();
        }
    }
}

/// Whether a request path is a Lease's (addonctl's locks and leader election).
fn is_lease(path: &str) -> bool {
    path.starts_with("/apis/coordination.k8s.io/")
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
            state.kept.clear();
            state.wrote = false;
        }
    }
}

impl Cluster {
    /// The same cluster (connections, discovery, rate limit, managed clusters) with a memory
    /// of its own for [`Cluster::reuse_lists`]: what one session reads is never answered to
    /// another. A client made elsewhere ([`Cluster::from_client`]) reuses nothing either way.
    #[must_use]
    pub fn scoped(&self) -> Cluster {
        let mut scoped = self.clone();
        if self.reuse.watched {
            scoped.reuse = self.scopes.open();
        }
        scoped
    }

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
        let key = key(gvk, namespace, selector.to_owned());
        let read = self.list(gvk, namespace, selector);
        self.remembered(Memory::Lists, key, read).await
    }

    /// [`Cluster::list`] of what no addonctl lock protects, read once per command: answered
    /// from memory while a [`Cluster::reuse_lists`] guard is held and this client has written
    /// nothing but Leases since (see the module documentation).
    pub async fn list_kept(
        &self,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
        selector: &str,
    ) -> Result<Vec<DynamicObject>> {
        let key = key(gvk, namespace, selector.to_owned());
        let read = self.list(gvk, namespace, selector);
        self.remembered(Memory::Kept, key, read).await
    }

    /// [`Cluster::get`] of what no addonctl lock protects, read once per command, as
    /// [`Cluster::list_kept`].
    pub async fn get_kept(
        &self,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<DynamicObject>> {
        // A name is never a label selector: the keys of gets and lists cannot meet.
        let key = key(gvk, namespace, format!("/{name}"));
        let read = async { Ok(self.get(gvk, namespace, name).await?.into_iter().collect()) };
        Ok(self
            .remembered(Memory::Kept, key, read)
            .await?
            .into_iter()
            .next())
    }

    /// `read`, answered from `memory` when it holds `key`; what is read is remembered unless
    /// a write made it stale meanwhile.
    async fn remembered(
        &self,
        memory: Memory,
        key: Key,
        read: impl std::future::Future<Output = Result<Vec<DynamicObject>>>,
    ) -> Result<Vec<DynamicObject>> {
        let state = || {
            self.reuse
                .state
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
        };
        let writes = {
            let mut state = state();
            if !self.reuse.watched || !state.usable(memory) {
                None
            } else if let Some(known) = state.reads(memory).get(&key) {
                return Ok(known.clone());
            } else {
                Some(state.writes(memory))
            }
        };
        let read = read.await?;
        if let Some(writes) = writes {
            let mut state = state();
            if state.usable(memory) && state.writes(memory) == writes {
                state.reads(memory).insert(key, read.clone());
            }
        }
        Ok(read)
    }
}

fn key(gvk: &GroupVersionKind, namespace: Option<&str>, selector: String) -> Key {
    (gvk.clone(), namespace.map(str::to_owned), selector)
}
