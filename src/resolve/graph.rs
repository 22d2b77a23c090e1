//! Walks over addon names: cycles, dependencies-first order, dependents and orphans.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::Universe;
use crate::model::InstalledBy;

/// Dependency edges between addon names, in the order the addons declare them.
pub(super) type Graph = BTreeMap<String, Vec<String>>;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mark {
    OnPath,
    Done,
}

/// Everything reachable from `starts`, dependencies first (each name after all it depends on),
/// following edges in declaration order so the order is deterministic.
///
/// With `allow_cycles = false` the first cycle met is returned instead, as names with the first
/// one repeated at the end (`a`, `b`, `a`). With `allow_cycles = true` an edge that closes a
/// cycle is ignored.
pub(super) fn dependencies_first(
    graph: &Graph,
    starts: &[&str],
    allow_cycles: bool,
) -> Result<Vec<String>, Vec<String>> {
    let mut marks: HashMap<&str, Mark> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    for &start in starts {
        if marks.contains_key(start) {
            continue;
        }
        marks.insert(start, Mark::OnPath);
        // The path being walked, each name with the position of its next edge.
        let mut path: Vec<(&str, usize)> = vec![(start, 0)];
        while let Some(&(node, next)) = path.last() {
            let edges = graph.get(node).map_or(&[][..], Vec::as_slice);
            let Some(child) = edges.get(next) else {
                marks.insert(node, Mark::Done);
                order.push(node.to_owned());
                path.pop();
                continue;
            };
            if let Some(top) = path.last_mut() {
                top.1 += 1;
            }
            match marks.get(child.as_str()) {
                None => {
                    marks.insert(child, Mark::OnPath);
                    path.push((child, 0));
                }
                Some(Mark::OnPath) if !allow_cycles => {
                    let from = path
                        .iter()
                        .position(|(n, _)| *n == child)
                        .unwrap_or_default();
                    let mut cycle: Vec<String> =
                        path[from..].iter().map(|(n, _)| (*n).to_owned()).collect();
                    cycle.push(child.clone());
                    return Err(cycle);
                }
                Some(_) => {}
            }
        }
    }
    Ok(order)
}

/// The dependency graph of what is installed, as the records say.
fn installed_graph(universe: &Universe) -> Graph {
    universe
        .installed_addons()
        .map(|addon| {
            let mut edges: Vec<String> = Vec::new();
            for dependency in &addon.dependencies {
                if !edges.contains(&dependency.name) {
                    edges.push(dependency.name.clone());
                }
            }
            (addon.name.clone(), edges)
        })
        .collect()
}

/// Installed addons whose records depend on `name`, sorted by name.
pub(super) fn dependents(universe: &Universe, name: &str) -> Vec<String> {
    universe
        .installed_addons()
        .filter(|addon| addon.name != name)
        .filter(|addon| addon.dependencies.iter().any(|d| d.name == name))
        .map(|addon| addon.name.clone())
        .collect()
}

/// Installed addons that came in as dependencies and that nothing would need once `name` is
/// gone, in a safe removal order (an addon before what it depends on).
///
/// Mark and sweep: everything installed except `name` and its own (transitive) dependencies is
/// kept, and so is every dependency that the user asked for; what those need is kept too
/// (walking through `name` is not allowed, as it goes away). The rest of `name`'s dependencies
/// can go. Cycles among installed addons do not stop it.
pub(super) fn prunable_after_removing(universe: &Universe, name: &str) -> Vec<String> {
    let graph = installed_graph(universe);
    let closure: BTreeSet<String> = dependencies_first(&graph, &[name], true)
        .unwrap_or_default()
        .into_iter()
        .filter(|n| n != name && universe.installed(n).is_some())
        .collect();
    let kept_roots: Vec<&str> = universe
        .installed_addons()
        .filter(|addon| addon.name != name)
        .filter(|addon| !closure.contains(&addon.name) || addon.installed_by == InstalledBy::User)
        .map(|addon| addon.name.as_str())
        .collect();
    let mut without_removed = graph.clone();
    without_removed.remove(name);
    for edges in without_removed.values_mut() {
        edges.retain(|e| e != name);
    }
    let kept: BTreeSet<String> = dependencies_first(&without_removed, &kept_roots, true)
        .unwrap_or_default()
        .into_iter()
        .collect();
    let mut order = dependencies_first(&graph, &[name], true).unwrap_or_default();
    order.reverse();
    order
        .into_iter()
        .filter(|n| closure.contains(n) && !kept.contains(n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(edges: &[(&str, &[&str])]) -> Graph {
        edges
            .iter()
            .map(|(from, to)| {
                (
                    (*from).to_owned(),
                    to.iter().map(|t| (*t).to_owned()).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn dependencies_come_first_and_cycles_are_named() {
        let g = graph(&[("a", &["b", "c"]), ("b", &["d"]), ("c", &["d"]), ("d", &[])]);
        assert_eq!(
            dependencies_first(&g, &["a"], false).unwrap(),
            ["d", "b", "c", "a"]
        );
        let g = graph(&[("a", &["b"]), ("b", &["c"]), ("c", &["a"])]);
        assert_eq!(
            dependencies_first(&g, &["a"], false).unwrap_err(),
            ["a", "b", "c", "a"]
        );
        assert_eq!(
            dependencies_first(&g, &["a"], true).unwrap(),
            ["c", "b", "a"]
        );
        let g = graph(&[("a", &["a"])]);
        assert_eq!(
            dependencies_first(&g, &["a"], false).unwrap_err(),
            ["a", "a"]
        );
    }
}
