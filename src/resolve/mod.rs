//! The dependency solver (DESIGN §4): from what the registries offer and what is installed, the
//! versions to install, upgrade or keep, in order. Pure: it works on an in-memory [`Universe`]
//! and does no I/O.
//!
//! # Expected flow
//!
//! The caller fills a [`Universe`] with every candidate (each version of each addon in each
//! registry, with its `dependencies` and `system` from `metadata.yaml`) and with what is
//! installed (from the records), then calls [`solve`] with the [`Platform`] and a [`Request`].
//! The [`Solution`] lists the addons of the plan dependencies first, each with its action.
//! `disable` uses [`dependents`] and [`prunable_after_removing`]; `upgrade` uses
//! [`check_upgrade`].
//!
//! # Guarantees
//!
//! - One version per addon, satisfying every constraint on it: those of the other addons of
//!   the plan and those of installed addons that stay. Versions are compared and matched as
//!   [`Constraint`](crate::model::Constraint) does: a leading `v` is ignored, prereleases are
//!   matched only by a constraint that names a prerelease of the same version (semver rules) or
//!   by the request's exact version, and a version that is not semver is chosen only by the
//!   request's exact version (or kept because it is installed). A dependency without a
//!   constraint accepts every stable version, and what is installed.
//! - Preference, for each addon: what is installed; then the registry of the first addon that
//!   needed it (same registry first), then the registries in order; within a registry, the
//!   highest version. Registry before version keeps an addon and its dependencies from one
//!   registry, as KubeVela does. The solver backtracks (pubgrub, conflict-driven) when a
//!   preferred choice leads to a conflict, so an older version is chosen when only it works.
//! - Installed addons: an installed addon that the request may need can be upgraded (never
//!   downgraded) only if the installed addons that depend on it keep their constraints; an
//!   installed addon that only depends on something the plan may change stays as it is. The
//!   addon asked for may move to any version the request allows. An installed addon's
//!   dependencies count only when that dependency is in the plan (a missing dependency of an
//!   installed addon is not installed behind the user's back). Installed addons unrelated to
//!   the request are left out of the problem, so an inconsistency among them does not block it.
//! - `system` requirements are met by every addon that the plan installs or upgrades, unless
//!   [`Request::skip_version_check`]; the solver prefers an older version that meets them. What
//!   stays installed is not checked again. A requirement on a platform version that is unknown
//!   (`None`, e.g. a `vela` constraint when KubeVela is not installed) is unmet: the addon says
//!   it needs it.
//! - Cycles among the chosen versions are an error naming the cycle (`a` → `b` → `a`); the
//!   solver does not look for other versions without the cycle.
//! - Errors are actionable: no plan comes with the chain of conflicting constraints, a cycle
//!   names its addons, an unmet requirement names the addon, the requirement and the platform's
//!   version (see [`ResolveError`]). When the constraints alone have a plan but `system`
//!   requirements rule out every one, the error is the first unmet requirement of that plan.
//! - The search stops after [`TIME_LIMIT`] with [`ResolveError::TooComplex`] rather than hang on
//!   a pathological registry.
//!
//! # Assumptions
//!
//! Candidates are few per addon (tens) and the universe fits in memory. The same-registry
//! preference follows the first dependent the solver visits when several dependents come from
//! different registries.

mod error;
mod explain;
mod graph;
mod provider;
mod system;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use pubgrub::PubGrubError;

use crate::model::{AddonMeta, AddonVersion, Constraint, Dependency, SystemRequirements};

pub use crate::model::InstalledBy;
pub use error::{BrokenDependent, ResolveError, Result, SystemRequirement};

use provider::{same_version, Problem, TimeLimit, ABSENT, ROOT};

/// One version of an addon as one registry offers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The addon's name.
    pub name: String,
    /// Its version.
    pub version: AddonVersion,
    /// The registry offering it.
    pub registry: String,
    /// `dependencies` of its `metadata.yaml`.
    pub dependencies: Vec<Dependency>,
    /// `system` of its `metadata.yaml`.
    pub system: SystemRequirements,
}

impl Candidate {
    /// The candidate described by an addon's metadata, offered by `registry`.
    pub fn from_meta(meta: &AddonMeta, registry: &str) -> Self {
        Candidate {
            name: meta.name.clone(),
            version: meta.version.clone(),
            registry: registry.to_owned(),
            dependencies: meta.dependencies.clone(),
            system: meta.system.clone(),
        }
    }
}

/// An installed addon, as its record says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstalledAddon {
    /// The addon's name.
    pub name: String,
    /// The installed version.
    pub version: AddonVersion,
    /// The registry it was installed from.
    pub registry: String,
    /// Whether the user asked for it or it came as a dependency.
    pub installed_by: InstalledBy,
    /// Its dependencies when it was installed.
    pub dependencies: Vec<Dependency>,
}

/// Everything the solver may choose from, and what is installed.
#[derive(Debug, Clone, Default)]
pub struct Universe {
    registry_order: Vec<String>,
    available: BTreeMap<String, Vec<Candidate>>,
    installed: BTreeMap<String, InstalledAddon>,
}

impl Universe {
    /// An empty universe; `registry_order` is the order registries are preferred in.
    pub fn new(registry_order: Vec<String>) -> Self {
        Universe {
            registry_order,
            ..Universe::default()
        }
    }

    /// Adds a candidate; one with the same name, version and registry is replaced.
    pub fn add(&mut self, candidate: Candidate) {
        let list = self.available.entry(candidate.name.clone()).or_default();
        match list.iter_mut().find(|c| {
            c.registry == candidate.registry && same_version(&c.version, &candidate.version)
        }) {
            Some(existing) => *existing = candidate,
            None => list.push(candidate),
        }
    }

    /// Records an installed addon (replacing what was recorded for that name).
    pub fn install(&mut self, addon: InstalledAddon) {
        self.installed.insert(addon.name.clone(), addon);
    }

    /// Forgets an installed addon (to ask what a plan would be without it); returns its record.
    pub fn uninstall(&mut self, name: &str) -> Option<InstalledAddon> {
        self.installed.remove(name)
    }

    /// The order registries are preferred in.
    pub fn registry_order(&self) -> &[String] {
        &self.registry_order
    }

    /// The candidates of an addon, in the order they were added.
    pub fn candidates(&self, name: &str) -> &[Candidate] {
        self.available.get(name).map_or(&[], Vec::as_slice)
    }

    /// Whether a candidate requires a KubeVela version (`system.vela`): only then is the
    /// platform's looked for.
    pub fn requires_vela(&self) -> bool {
        self.available.values().flatten().any(|candidate| {
            candidate
                .system
                .vela
                .as_deref()
                .is_some_and(|constraint| !constraint.trim().is_empty())
        })
    }

    /// What is installed of an addon.
    pub fn installed(&self, name: &str) -> Option<&InstalledAddon> {
        self.installed.get(name)
    }

    /// Every installed addon, by name.
    pub fn installed_addons(&self) -> impl Iterator<Item = &InstalledAddon> {
        self.installed.values()
    }
}

/// The versions of what the addons run on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Platform {
    /// Kubernetes (`/version`); `None` when it could not be read.
    pub kubernetes: Option<AddonVersion>,
    /// KubeVela (the vela-core image tag); `None` when KubeVela is not installed.
    pub vela: Option<AddonVersion>,
    /// addonctl itself.
    pub addonctl: AddonVersion,
}

impl Platform {
    /// A platform with this build of addonctl.
    pub fn new(kubernetes: Option<&str>, vela: Option<&str>) -> Self {
        Platform {
            kubernetes: kubernetes.map(AddonVersion::parse),
            vela: vela.map(AddonVersion::parse),
            addonctl: AddonVersion::parse(crate::constants::VERSION),
        }
    }
}

/// What the user asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    /// The addon.
    pub root: String,
    /// An exact version (`--version`); it may be a prerelease or not semver.
    pub version: Option<String>,
    /// Take the addon from this registry only.
    pub registry: Option<String>,
    /// Do not check `system` requirements (`--skip-version-check`).
    pub skip_version_check: bool,
    /// Take the highest version of the addon rather than keep the installed one (`upgrade`
    /// without `--version`). Its dependencies still prefer what is installed.
    pub upgrade: bool,
}

impl Request {
    /// A request for the preferred version of `root`.
    pub fn new(root: impl Into<String>) -> Self {
        Request {
            root: root.into(),
            ..Request::default()
        }
    }
}

/// What happens to an addon of the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Not installed: install it.
    Install,
    /// Installed at another version or from another registry: replace it with this one (for
    /// the addon asked for with an exact version, this may be an older version).
    Upgrade,
    /// Installed at this version: nothing to change for its version (the caller may still
    /// apply the addon asked for again, e.g. with new parameters).
    Keep,
}

/// One addon of the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedAddon {
    /// The addon.
    pub name: String,
    /// The chosen version.
    pub version: AddonVersion,
    /// The registry it comes from (for a kept addon: the one it was installed from).
    pub registry: String,
    /// What happens to it.
    pub action: Action,
    /// Who asks for it: the user for the addon asked for; for a dependency, what its record
    /// says if it is installed, else a dependency.
    pub installed_by: InstalledBy,
    /// The version installed now, if any.
    pub installed_version: Option<AddonVersion>,
    /// The addons of the plan it depends on, as declared.
    pub depends_on: Vec<String>,
    /// The addons of the plan that depend on it, sorted.
    pub needed_by: Vec<String>,
}

/// The plan: every addon the request needs, dependencies first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Solution {
    /// In apply order: each addon after everything it depends on; the addon asked for is last
    /// unless an installed addon had to move without being on its dependency path.
    pub steps: Vec<PlannedAddon>,
}

impl Solution {
    /// The step of an addon.
    pub fn get(&self, name: &str) -> Option<&PlannedAddon> {
        self.steps.iter().find(|s| s.name == name)
    }

    /// The steps in layers: the first layer depends on nothing in the plan, each next one only
    /// on earlier layers; addons of a layer can be applied together.
    pub fn layers(&self) -> Vec<Vec<&PlannedAddon>> {
        let mut depth: BTreeMap<&str, usize> = BTreeMap::new();
        let mut layers: Vec<Vec<&PlannedAddon>> = Vec::new();
        for step in &self.steps {
            let level = step
                .depends_on
                .iter()
                .filter_map(|d| depth.get(d.as_str()))
                .map(|d| d + 1)
                .max()
                .unwrap_or(0);
            depth.insert(&step.name, level);
            if layers.len() <= level {
                layers.resize_with(level + 1, Vec::new);
            }
            layers[level].push(step);
        }
        layers
    }
}

/// How long the solver may search before it gives up ([`ResolveError::TooComplex`]). Real
/// registries take milliseconds; only constructed problems (the benchmark's pigeonhole, whose
/// proof grows exponentially) come near it.
pub const TIME_LIMIT: Duration = Duration::from_secs(10);

/// Chooses the versions for `request`: see the module documentation for the rules.
pub fn solve(universe: &Universe, platform: &Platform, request: &Request) -> Result<Solution> {
    solve_within(universe, platform, request, TIME_LIMIT)
}

fn solve_within(
    universe: &Universe,
    platform: &Platform,
    request: &Request,
    time_limit: Duration,
) -> Result<Solution> {
    let check_system = !request.skip_version_check;
    match run(universe, platform, request, check_system, time_limit) {
        Err(error @ ResolveError::NoSolution { .. }) if check_system => {
            // When the constraints alone have a plan, say which requirement it breaks: that
            // names the version the user would otherwise get. Otherwise the full explanation
            // (requirements included) stands.
            match run(universe, platform, request, false, time_limit) {
                Ok(without) => Err(first_unmet(universe, platform, &without).unwrap_or(error)),
                Err(_) => Err(error),
            }
        }
        other => other,
    }
}

/// One run of the solver: the chosen versions, then the plan in dependency order.
fn run(
    universe: &Universe,
    platform: &Platform,
    request: &Request,
    check_system: bool,
    time_limit: Duration,
) -> Result<Solution> {
    let problem = Problem::new(universe, platform, request, check_system, time_limit)?;
    let selected = match pubgrub::resolve(&problem, ROOT, 0u32) {
        Ok(selected) => selected,
        Err(PubGrubError::NoSolution(tree)) => {
            return Err(ResolveError::NoSolution {
                root: request.root.clone(),
                explanation: problem.explain(&tree),
            })
        }
        Err(
            PubGrubError::ErrorInShouldCancel(TimeLimit(limit))
            | PubGrubError::ErrorChoosingVersion {
                source: TimeLimit(limit),
                ..
            }
            | PubGrubError::ErrorRetrievingDependencies {
                source: TimeLimit(limit),
                ..
            },
        ) => {
            return Err(ResolveError::TooComplex {
                root: request.root.clone(),
                seconds: limit.as_secs(),
            })
        }
    };

    // The chosen candidates, by name.
    let mut chosen = BTreeMap::new();
    for (pkg, index) in selected {
        if pkg == ROOT || index == ABSENT {
            continue;
        }
        let package = problem.package(pkg);
        if let Some(entry) = package.entry(index) {
            chosen.insert(package.name, (pkg, entry));
        }
    }
    let mut graph = graph::Graph::new();
    for (name, (pkg, entry)) in &chosen {
        let (dependencies, _) = problem.dependencies_of(*pkg, entry);
        let mut edges: Vec<String> = Vec::new();
        for dependency in dependencies {
            if chosen.contains_key(dependency.name.as_str()) && !edges.contains(&dependency.name) {
                edges.push(dependency.name.clone());
            }
        }
        graph.insert((*name).to_owned(), edges);
    }
    let action = |name: &str| {
        let (_, entry) = chosen.get(name)?;
        Some(match universe.installed(name) {
            None => Action::Install,
            Some(i) if same_version(&i.version, entry.version) && i.registry == entry.registry => {
                Action::Keep
            }
            Some(_) => Action::Upgrade,
        })
    };
    // The request and its dependencies, then any installed addon that had to move otherwise.
    let mut starts: Vec<&str> = vec![request.root.as_str()];
    starts.extend(
        chosen
            .keys()
            .copied()
            .filter(|n| *n != request.root && action(n) != Some(Action::Keep)),
    );
    let order = graph::dependencies_first(&graph, &starts, false)
        .map_err(|cycle| ResolveError::Cycle { cycle })?;
    let in_plan: BTreeSet<&str> = order.iter().map(String::as_str).collect();

    let mut steps: Vec<PlannedAddon> = Vec::new();
    for name in &order {
        let (Some((_, entry)), Some(action)) = (chosen.get(name.as_str()), action(name)) else {
            continue;
        };
        let installed = universe.installed(name);
        let installed_by = if *name == request.root {
            InstalledBy::User
        } else {
            installed.map_or(InstalledBy::Dependency, |i| i.installed_by)
        };
        let depends_on = graph
            .get(name)
            .map(|edges| {
                edges
                    .iter()
                    .filter(|e| in_plan.contains(e.as_str()))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        steps.push(PlannedAddon {
            name: name.clone(),
            version: entry.version.clone(),
            registry: entry.registry.to_owned(),
            action,
            installed_by,
            installed_version: installed.map(|i| i.version.clone()),
            depends_on,
            needed_by: Vec::new(),
        });
    }
    add_needed_by(&mut steps);
    Ok(Solution { steps })
}

/// Fills each step's `needed_by`: the steps that depend on it.
fn add_needed_by(steps: &mut [PlannedAddon]) {
    let mut needed_by: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for step in steps.iter() {
        for dependency in &step.depends_on {
            needed_by
                .entry(dependency.clone())
                .or_default()
                .insert(step.name.clone());
        }
    }
    for step in steps {
        step.needed_by = needed_by
            .remove(&step.name)
            .map(|s| s.into_iter().collect())
            .unwrap_or_default();
    }
}

/// The first addon of a plan (in order) that the plan would install or upgrade although a
/// `system` requirement is unmet.
fn first_unmet(
    universe: &Universe,
    platform: &Platform,
    solution: &Solution,
) -> Option<ResolveError> {
    solution
        .steps
        .iter()
        .filter(|step| step.action != Action::Keep)
        .find_map(|step| {
            let candidate = universe
                .candidates(&step.name)
                .iter()
                .find(|c| c.registry == step.registry && same_version(&c.version, &step.version))?;
            let unmet = system::first_unmet(&candidate.system, platform)?;
            Some(ResolveError::System {
                addon: step.name.clone(),
                version: step.version.to_string(),
                requirement: unmet.requirement,
                constraint: unmet.constraint,
                actual: unmet.actual,
            })
        })
}

/// Installed addons that depend on `name` (their records say so), sorted: `disable` refuses
/// while there are any.
pub fn dependents(universe: &Universe, name: &str) -> Vec<String> {
    graph::dependents(universe, name)
}

/// Installed addons that came in as dependencies and that nothing installed needs once `name`
/// is removed, transitively, in removal order (an addon before what it depends on): what
/// `disable --prune-dependencies` removes. Addons the user asked for are never listed, nor is
/// anything they need.
pub fn prunable_after_removing(universe: &Universe, name: &str) -> Vec<String> {
    graph::prunable_after_removing(universe, name)
}

/// Whether `name` can change to `new_version` without breaking the installed addons that
/// depend on it; the error names each one and its constraint.
pub fn check_upgrade(universe: &Universe, name: &str, new_version: &AddonVersion) -> Result<()> {
    let mut broken = Vec::new();
    for dependent in universe.installed_addons() {
        if dependent.name == name {
            continue;
        }
        for dependency in dependent.dependencies.iter().filter(|d| d.name == name) {
            let Some(text) = dependency
                .version
                .as_deref()
                .filter(|t| !t.trim().is_empty())
            else {
                continue;
            };
            let invalid = match Constraint::parse(text) {
                Ok(constraint) if constraint.matches(new_version) => continue,
                Ok(_) => None,
                Err(message) => Some(message),
            };
            broken.push(BrokenDependent {
                name: dependent.name.clone(),
                version: dependent.version.to_string(),
                constraint: text.trim().to_owned(),
                invalid,
            });
        }
    }
    if broken.is_empty() {
        Ok(())
    } else {
        Err(ResolveError::BreaksDependents {
            addon: name.to_owned(),
            version: new_version.to_string(),
            dependents: broken,
        })
    }
}
