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
//!
//! What the locks protect is read again under them, but not always by a list
//! ([`Cluster::list_locked`]). Since Kubernetes 1.31 a list is answered from the API server's
//! cache once that cache has caught up with etcd, and after a write of another kind (the lock's
//! Lease) that takes a progress notification from etcd, asked for every 100 ms: a list read
//! under a lock waited 85–98 ms where a read of one object (answered by etcd itself) takes 1–5
//! ms. So when every lock of the command was created new (no other command held one, nor died
//! holding one), and nothing but those Leases was written since the list was read, the list
//! read before the locks is answered with the objects of the locked subjects read again by
//! name: those are exactly what another command could have changed while holding their locks.
//! The other objects are as the list read them, a moment before: no lock of this command covers
//! them, so a read under the locks would not keep them from changing either.

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
    /// Lists read before a Lease was created, until the lock it takes is known to be new.
    stash: HashMap<Key, Vec<DynamicObject>>,
    /// Lists read before this command's locks, every one of which it created
    /// ([`Cluster::list_locked`]).
    before: HashMap<Key, Vec<DynamicObject>>,
    /// The locks behind `before`: Lease name and subject.
    locked: Vec<(String, String)>,
    /// Objects read again by name under those locks (`None`: not found).
    again: HashMap<Key, Option<DynamicObject>>,
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

    fn forget_before(&mut self) {
        self.stash.clear();
        self.before.clear();
        self.locked.clear();
        self.again.clear();
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
    /// The state, held.
    fn locked(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// This client is writing to `path`: nothing read before is reused, except reads kept
    /// when the write is a lock's (a Lease), and, when it creates one, the lists read before it
    /// (set aside until the lock is known to be new, [`Cluster::locked_new`]).
    pub(super) fn wrote(&self, path: &str) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.generation += 1;
        state.wrote = state.holders > 0;
        let lists = std::mem::take(&mut state.lists);
        if !is_lease(path) {
            state.other_writes += 1;
            state.kept.clear();
            state.forget_before();
        } else if path.ends_with("/leases") {
            // A create (a POST to the collection): what it is worth is known from its answer.
            state.stash.extend(lists);
        } else {
            // A Lease renewed, taken over or deleted: another command may have held it.
            state.forget_before();
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
            state.forget_before();
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
        let mut state = self.reuse.locked();
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

    /// The lock Lease `lease` of `subject` was just created by this client (no other command
    /// held it): the lists read before it may serve [`Cluster::list_locked`].
    pub fn locked_new(&self, lease: &str, subject: &str) {
        let mut state = self.reuse.locked();
        if state.holders == 0 {
            return;
        }
        let stash = std::mem::take(&mut state.stash);
        state.before.extend(stash);
        state.locked.push((lease.to_owned(), subject.to_owned()));
    }

    /// [`Cluster::list_reused`] of what this command's locks protect: under locks it created,
    /// when this list was read before them and nothing but the locks was written since, that
    /// list with the objects `name_of` names for each lock (Lease name, subject) read again
    /// by name, in one request each (see the module documentation); otherwise a list.
    pub async fn list_locked(
        &self,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
        selector: &str,
        name_of: impl Fn(&str, &str) -> Option<String>,
    ) -> Result<Vec<DynamicObject>> {
        let key = key(gvk, namespace, selector.to_owned());
        let before = {
            let state = self.reuse.locked();
            match (state.before.get(&key), Selector::parse(selector)) {
                (Some(before), Some(selector)) if self.reuse.watched && state.holders > 0 => {
                    let names: Vec<String> = state
                        .locked
                        .iter()
                        .filter_map(|(lease, subject)| name_of(lease, subject))
                        .collect();
                    Some((before.clone(), selector, names))
                }
                _ => None,
            }
        };
        let Some((before, selector, names)) = before else {
            return self.list_reused(gvk, namespace, selector).await;
        };
        let again = self.read_again(gvk, namespace, &names).await?;
        let mut listed: Vec<DynamicObject> = before
            .into_iter()
            .filter(|o| !o.metadata.name.as_ref().is_some_and(|n| names.contains(n)))
            .collect();
        listed.extend(
            again
                .into_iter()
                .flatten()
                .filter(|o| selector.matches(o.metadata.labels.as_ref())),
        );
        listed.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        Ok(listed)
    }

    /// Under locks this command created, the list `selector` read before them, when the object
    /// `witness` (a member of the list `witness_selector`, of the same kind and namespace) is
    /// as that list showed it, read again now: what only changes with the witness, under its
    /// lock, did not change either. Otherwise a list.
    pub async fn list_locked_if_unchanged(
        &self,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
        selector: &str,
        witness_selector: &str,
        witness: &str,
    ) -> Result<Vec<DynamicObject>> {
        let (before, witnessed) = {
            let state = self.reuse.locked();
            let usable = self.reuse.watched && state.holders > 0 && !state.locked.is_empty();
            let list = |selector: &str| {
                usable
                    .then(|| state.before.get(&key(gvk, namespace, selector.to_owned())))
                    .flatten()
            };
            let witnessed = list(witness_selector).map(|listed| {
                listed
                    .iter()
                    .find(|o| o.metadata.name.as_deref() == Some(witness))
                    .and_then(|o| o.metadata.resource_version.clone())
            });
            (list(selector).cloned(), witnessed)
        };
        if let (Some(before), Some(witnessed)) = (before, witnessed) {
            let now = self
                .read_again(gvk, namespace, &[witness.to_owned()])
                .await?
                .into_iter()
                .flatten()
                .next()
                .and_then(|o| o.metadata.resource_version);
            if now == witnessed {
                return Ok(before);
            }
        }
        self.list(gvk, namespace, selector).await
    }

    /// `names` read by name (concurrently), each once while the locks' lists serve.
    async fn read_again(
        &self,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
        names: &[String],
    ) -> Result<Vec<Option<DynamicObject>>> {
        let reads = names.iter().map(|name| async move {
            let key = key(gvk, namespace, format!("/{name}"));
            let known = {
                let state = self.reuse.locked();
                state.again.get(&key).cloned()
            };
            if let Some(known) = known {
                return Ok(known);
            }
            let generation = self.reuse.locked().generation;
            let read = self.get(gvk, namespace, name).await?;
            let mut state = self.reuse.locked();
            if state.generation == generation && !state.locked.is_empty() {
                state.again.insert(key, read.clone());
            }
            Ok(read)
        });
        futures::future::try_join_all(reads).await
    }

    /// `read`, answered from `memory` when it holds `key`; what is read is remembered unless
    /// a write made it stale meanwhile.
    async fn remembered(
        &self,
        memory: Memory,
        key: Key,
        read: impl std::future::Future<Output = Result<Vec<DynamicObject>>>,
    ) -> Result<Vec<DynamicObject>> {
        let state = || self.reuse.locked();
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

/// A label selector of equality and existence terms (`a=b`, `a==b`, `a!=b`, `a`, `!a`, joined
/// by commas), as the API server matches it; set-based terms are not read (`None`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Selector(Vec<Term>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Term {
    Equals(String, String),
    NotEquals(String, String),
    Exists(String),
    Absent(String),
}

impl Selector {
    fn parse(selector: &str) -> Option<Selector> {
        let plain = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
        };
        let value = |s: &str| s.is_empty() || plain(s);
        let mut terms = Vec::new();
        for term in selector.split(',').map(str::trim) {
            if term.is_empty() {
                continue;
            }
            let term = if let Some((k, v)) = term.split_once("!=") {
                Term::NotEquals(k.trim().to_owned(), v.trim().to_owned())
            } else if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
                Term::Equals(k.trim().to_owned(), v.trim().to_owned())
            } else if let Some(k) = term.strip_prefix('!') {
                Term::Absent(k.trim().to_owned())
            } else {
                Term::Exists(term.to_owned())
            };
            let ok = match &term {
                Term::Equals(k, v) | Term::NotEquals(k, v) => plain(k) && value(v),
                Term::Exists(k) | Term::Absent(k) => plain(k),
            };
            if !ok {
                return None;
            }
            terms.push(term);
        }
        Some(Selector(terms))
    }

    fn matches(&self, labels: Option<&std::collections::BTreeMap<String, String>>) -> bool {
        let get = |k: &str| labels.and_then(|l| l.get(k));
        self.0.iter().all(|term| match term {
            Term::Equals(k, v) => get(k) == Some(v),
            Term::NotEquals(k, v) => get(k) != Some(v),
            Term::Exists(k) => get(k).is_some(),
            Term::Absent(k) => get(k).is_none(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> std::collections::BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn a_selector_matches_as_the_api_server_does() {
        let record = Selector::parse("addonctl.io/record=true").unwrap();
        assert!(record.matches(Some(&labels(&[("addonctl.io/record", "true")]))));
        assert!(!record.matches(Some(&labels(&[("addonctl.io/record", "false")]))));
        assert!(!record.matches(None));
        let named = Selector::parse("addons.oam.dev/name").unwrap();
        assert!(named.matches(Some(&labels(&[("addons.oam.dev/name", "")]))));
        assert!(!named.matches(Some(&labels(&[("other", "x")]))));
        let both = Selector::parse("a==1, b!=2,!c").unwrap();
        assert!(both.matches(Some(&labels(&[("a", "1"), ("b", "3")]))));
        assert!(both.matches(Some(&labels(&[("a", "1")]))));
        assert!(!both.matches(Some(&labels(&[("a", "1"), ("b", "2")]))));
        assert!(!both.matches(Some(&labels(&[("a", "1"), ("c", "")]))));
        assert_eq!(Selector::parse(""), Some(Selector(Vec::new())));
        // Set-based terms are not read: the caller lists instead.
        assert_eq!(Selector::parse("env in (a,b)"), None);
        assert_eq!(Selector::parse("a=b=c"), None);
    }
}
