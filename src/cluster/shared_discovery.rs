//! One copy in memory of each distinct group version's resources, whatever the number of
//! clusters that serve it.
//!
//! Clusters of one Kubernetes version answer discovery alike, so a process talking to a fleet
//! would otherwise keep the same lists once per cluster (about 7 KiB per cluster for the few
//! kinds of a small addon). Each cluster keeps a shared handle instead: the lists are
//! compared by value, and a list no cluster holds any more is dropped.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock, Mutex, PoisonError, Weak};

use kube::core::ApiResource;
use kube::discovery::ApiCapabilities;

/// A group version's resources, shared by the clusters that serve them alike.
pub(super) type Resources = Arc<[(ApiResource, ApiCapabilities)]>;
/// A handle on a shared list that does not keep it.
type Handle = Weak<[(ApiResource, ApiCapabilities)]>;

/// One kind of a shared list: what a cluster keeps for each kind it looked up.
#[derive(Clone)]
pub(crate) struct ServedKind {
    pub(super) list: Resources,
    /// Its place in `list` (found there: always in range).
    pub(super) at: usize,
}

impl ServedKind {
    /// The API resource serving the kind.
    pub(crate) fn resource(&self) -> &ApiResource {
        &self.list[self.at].0
    }

    /// What the server allows on it, and its scope.
    pub(crate) fn caps(&self) -> &ApiCapabilities {
        &self.list[self.at].1
    }
}

/// The lists handed out, by the hash of their content; a hash may name several lists.
#[derive(Default)]
struct Interner {
    lists: HashMap<u64, Vec<Handle>>,
    /// Lists added since the dead handles were last swept.
    added: usize,
}

/// Past this many lists added, the handles of dropped lists are swept from the whole table,
/// so that it holds at most this many handles beyond those of the lists in use.
const SWEEP_EVERY: usize = 1024;

static INTERNER: LazyLock<Mutex<Interner>> = LazyLock::new(Mutex::default);

/// The shared copy of `resources`: the one already in use when another cluster holds an
/// equal list, else this one, from now on shared.
pub(super) fn share(resources: Vec<(ApiResource, ApiCapabilities)>) -> Resources {
    let mut hasher = DefaultHasher::new();
    hash_list(&resources, &mut hasher);
    let key = hasher.finish();
    let mut interner = INTERNER.lock().unwrap_or_else(PoisonError::into_inner);
    let bucket = interner.lists.entry(key).or_default();
    bucket.retain(|list| list.strong_count() > 0);
    if let Some(found) = bucket
        .iter()
        .filter_map(Weak::upgrade)
        .find(|list| same_list(list, &resources))
    {
        return found;
    }
    let list: Resources = resources.into();
    bucket.push(Arc::downgrade(&list));
    interner.added += 1;
    if interner.added >= SWEEP_EVERY {
        interner.added = 0;
        interner.lists.retain(|_, bucket| {
            bucket.retain(|list| list.strong_count() > 0);
            !bucket.is_empty()
        });
    }
    list
}

// `ApiCapabilities` implements neither `Hash` nor `PartialEq`: both by hand, field by field.

fn hash_list(list: &[(ApiResource, ApiCapabilities)], state: &mut impl Hasher) {
    list.len().hash(state);
    for (resource, caps) in list {
        resource.hash(state);
        caps.scope.hash(state);
        caps.operations.hash(state);
        hash_list(&caps.subresources, state);
    }
}

fn same_list(a: &[(ApiResource, ApiCapabilities)], b: &[(ApiResource, ApiCapabilities)]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|((ra, ca), (rb, cb))| {
            ra == rb
                && ca.scope == cb.scope
                && ca.operations == cb.operations
                && same_list(&ca.subresources, &cb.subresources)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::discovery::Scope;

    fn resources(kind: &str) -> Vec<(ApiResource, ApiCapabilities)> {
        let resource = ApiResource {
            group: String::new(),
            version: "v1".into(),
            api_version: "v1".into(),
            kind: kind.into(),
            plural: format!("{}s", kind.to_lowercase()),
        };
        let caps = ApiCapabilities {
            scope: Scope::Namespaced,
            subresources: Vec::new(),
            operations: vec!["get".into(), "list".into()],
        };
        vec![(resource, caps)]
    }

    #[test]
    fn equal_lists_are_one_copy_and_different_ones_are_not_merged() {
        let a = share(resources("ConfigMap"));
        let b = share(resources("ConfigMap"));
        assert!(Arc::ptr_eq(&a, &b), "an equal list is the copy in use");
        let c = share(resources("Secret"));
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(c[0].0.kind, "Secret");
        // Dropped by every holder: the next equal list is a copy of its own, still right.
        drop(c);
        let again = share(resources("Secret"));
        assert_eq!(again[0].0.kind, "Secret");
        assert_eq!(Arc::strong_count(&again), 1);
    }

    #[test]
    fn lists_differing_in_a_capability_alone_are_kept_apart() {
        let mut read_only = resources("Lease");
        read_only[0].1.operations = vec!["get".into()];
        let writable = share(resources("Lease"));
        let other = share(read_only);
        assert!(!Arc::ptr_eq(&writable, &other));
        assert_eq!(other[0].1.operations, ["get"]);
        let mut with_status = resources("Lease");
        let status = with_status[0].clone();
        with_status[0].1.subresources.push(status);
        let third = share(with_status);
        assert!(!Arc::ptr_eq(&writable, &third));
        assert_eq!(third[0].1.subresources.len(), 1);
    }
}
