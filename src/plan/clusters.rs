//! Which clusters the dependencies of a plan go to: a dependency follows the addons that need
//! it, and an installed dependency is widened (never narrowed) to their clusters.

use std::collections::{BTreeMap, BTreeSet};

/// What the addons of a plan need of each dependency's clusters, by dependency: `None` = an
/// addon that needs it is not limited to a list of clusters.
pub(super) type Needs = BTreeMap<String, Option<BTreeSet<String>>>;

/// A dependency's clusters, as [`widen`] decides them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Clusters {
    /// The clusters it goes to; `None` = wherever its topology says.
    pub list: Option<Vec<String>>,
    /// Whether an installed dependency gained clusters (it is applied again).
    pub widened: bool,
}

/// The clusters of a dependency (not the addon asked for), from what the addons that need it
/// need (`needed`, see [`Needs`]), whether it is installed, and the clusters its stored
/// arguments list (`existing`).
///
/// An installed dependency limited to a list of clusters keeps that list, widened to every
/// cluster needed; a new one goes to the clusters needed; otherwise (installed everywhere its
/// topology says, or needed by an addon that is not limited to a list of clusters) `None`.
pub(super) fn widen(
    needed: Option<&Option<BTreeSet<String>>>,
    installed: bool,
    existing: Option<Vec<String>>,
) -> Clusters {
    let list = |list, widened| Clusters { list, widened };
    match (needed, installed, existing) {
        (Some(Some(needed)), true, Some(existing)) => {
            let mut all: BTreeSet<String> = existing.iter().cloned().collect();
            if needed.iter().any(|c| !all.contains(c)) {
                all.extend(needed.iter().cloned());
                list(Some(all.into_iter().collect()), true)
            } else {
                list(Some(existing), false)
            }
        }
        (_, true, Some(existing)) => list(Some(existing), false),
        (Some(Some(needed)), false, _) => list(Some(needed.iter().cloned().collect()), false),
        _ => list(None, false),
    }
}

/// Records that an addon going to `own` clusters (`None` = not limited to a list) needs each
/// of its `dependencies` there too.
pub(super) fn add_needs(needs: &mut Needs, dependencies: &[String], own: Option<&[String]>) {
    for dependency in dependencies {
        let entry = needs
            .entry(dependency.clone())
            .or_insert_with(|| Some(BTreeSet::new()));
        match (own, entry.as_mut()) {
            (None, _) => *entry = None,
            (Some(list), Some(set)) => set.extend(list.iter().cloned()),
            (Some(_), None) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unnecessary_wraps,
        reason = "the helpers build the optional values compared"
    )]
    use super::*;

    /// Clusters needed: `Some(set)`.
    fn set(names: &[&str]) -> Option<BTreeSet<String>> {
        Some(names.iter().map(|n| (*n).to_owned()).collect())
    }

    /// A list of clusters: `Some(list)`.
    fn list(names: &[&str]) -> Option<Vec<String>> {
        Some(names.iter().map(|n| (*n).to_owned()).collect())
    }

    #[test]
    fn an_installed_dependency_is_widened_to_the_clusters_needed() {
        let needed = set(&["managed-2", "managed-3"]);
        let clusters = widen(Some(&needed), true, list(&["managed-1", "managed-2"]));
        assert_eq!(
            clusters,
            Clusters {
                list: list(&["managed-1", "managed-2", "managed-3"]),
                widened: true
            }
        );
    }

    #[test]
    fn an_installed_dependency_that_covers_the_clusters_needed_is_left_as_it_is() {
        let needed = set(&["managed-1"]);
        let clusters = widen(Some(&needed), true, list(&["managed-2", "managed-1"]));
        assert_eq!(
            clusters,
            Clusters {
                list: list(&["managed-2", "managed-1"]),
                widened: false
            }
        );
        // Never narrowed, whatever the addons that need it say.
        assert_eq!(
            widen(Some(&None), true, list(&["managed-1"])).list,
            list(&["managed-1"])
        );
        assert_eq!(
            widen(None, true, list(&["managed-1"])).list,
            list(&["managed-1"])
        );
    }

    #[test]
    fn a_new_dependency_goes_to_the_clusters_needed() {
        let needed = set(&["managed-3", "managed-1"]);
        let clusters = widen(Some(&needed), false, None);
        assert_eq!(
            clusters,
            Clusters {
                list: list(&["managed-1", "managed-3"]),
                widened: false
            }
        );
    }

    #[test]
    fn no_list_when_not_limited_or_installed_everywhere() {
        let unlimited = Clusters {
            list: None,
            widened: false,
        };
        assert_eq!(widen(Some(&None), false, None), unlimited);
        assert_eq!(widen(None, false, None), unlimited);
        // Installed without a list of clusters: everywhere its topology says, nothing to widen.
        assert_eq!(widen(Some(&set(&["managed-1"])), true, None), unlimited);
    }

    #[test]
    fn needs_gather_the_clusters_of_every_addon_that_needs_a_dependency() {
        let mut needs = Needs::new();
        let deps = vec!["fluxcd".to_owned()];
        add_needs(&mut needs, &deps, list(&["managed-1"]).as_deref());
        add_needs(&mut needs, &deps, list(&["managed-2"]).as_deref());
        assert_eq!(needs.get("fluxcd"), Some(&set(&["managed-1", "managed-2"])));
        // An addon not limited to a list of clusters needs the dependency everywhere, for good.
        add_needs(&mut needs, &deps, None);
        add_needs(&mut needs, &deps, list(&["managed-3"]).as_deref());
        assert_eq!(needs.get("fluxcd"), Some(&None));
        assert_eq!(needs.len(), 1);
    }
}
