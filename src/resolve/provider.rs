//! The problem as pubgrub sees it: each addon is a package, each of its candidates (one version
//! from one registry, or what is installed) is a version index, and each constraint is the set
//! of indices it matches.
//!
//! Working on indices rather than on semver versions keeps every rule of ours in one place (the
//! mapping): prereleases and non-semver versions are matched exactly as [`Constraint::matches`]
//! says, the same version offered by two registries is two candidates, and index `0` stands for
//! "not part of the plan", which lets an installed addon's dependency apply only when that
//! dependency is in the plan at all.

use std::cell::RefCell;
use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::fmt;
use std::ops::Bound;
use std::rc::Rc;
use std::time::{Duration, Instant};

use pubgrub::{
    Dependencies, DependencyConstraints, DependencyProvider, PackageResolutionStatistics, Ranges,
    VersionSet,
};

use crate::model::{AddonVersion, Constraint, Dependency};

use super::error::{unmet_system, ResolveError};
use super::system::{self, Unmet};
use super::{Candidate, InstalledAddon, Platform, Request, Universe};

/// The version index meaning "not part of the plan".
pub(super) const ABSENT: u32 = 0;

/// A package: an index into [`Problem::packages`]; `0` is the virtual root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) struct Pkg(pub u32);

/// The virtual root package: it depends on the request and on the installed addons that matter.
pub(super) const ROOT: Pkg = Pkg(0);

impl fmt::Display for Pkg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// A set of version indices.
///
/// It wraps [`Ranges<u32>`] and keeps every segment in the half-open integer form `[a, b)`,
/// singletons included, so that two sets holding the same indices are always equal (the
/// [`VersionSet`] contract) and no set holds a value between two indices.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct IndexSet(Ranges<u32>);

impl IndexSet {
    /// The set of the given indices (in any order).
    pub fn of(indices: impl IntoIterator<Item = u32>) -> Self {
        let mut sorted: Vec<u32> = indices.into_iter().collect();
        sorted.sort_unstable();
        sorted.dedup();
        let mut runs: Vec<(u32, u32)> = Vec::new();
        for index in sorted {
            match runs.last_mut() {
                Some((_, end)) if *end == index => *end = index + 1,
                _ => runs.push((index, index + 1)),
            }
        }
        IndexSet(
            runs.into_iter()
                .map(|(start, end)| (Bound::Included(start), Bound::Excluded(end)))
                .collect(),
        )
    }

    /// Whether `index` is in the set.
    pub fn has(&self, index: u32) -> bool {
        self.0.contains(&index)
    }

    /// The indices in `1..=count` that the set holds (`ABSENT` left out).
    pub fn real(&self, count: usize) -> Vec<u32> {
        (1..=to_u32(count)).filter(|i| self.has(*i)).collect()
    }
}

impl fmt::Display for IndexSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl VersionSet for IndexSet {
    type V = u32;

    fn empty() -> Self {
        IndexSet(Ranges::empty())
    }

    fn singleton(v: u32) -> Self {
        IndexSet(Ranges::between(v, v.saturating_add(1)))
    }

    fn complement(&self) -> Self {
        IndexSet(self.0.complement())
    }

    fn intersection(&self, other: &Self) -> Self {
        IndexSet(self.0.intersection(&other.0))
    }

    fn contains(&self, v: &u32) -> bool {
        self.0.contains(v)
    }

    fn full() -> Self {
        IndexSet(Ranges::full())
    }

    fn union(&self, other: &Self) -> Self {
        IndexSet(self.0.union(&other.0))
    }

    fn is_disjoint(&self, other: &Self) -> bool {
        self.0.is_disjoint(&other.0)
    }

    fn subset_of(&self, other: &Self) -> bool {
        self.0.subset_of(&other.0)
    }
}

/// The version index of the candidate at `position` (`0..len` → `1..=len`).
fn index_of(position: usize) -> u32 {
    to_u32(position + 1)
}

/// Universes never come near `u32::MAX` addons, nor candidates of one addon.
fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX - 1)
}

/// One candidate of a package: a version from a registry, what is installed, or both.
#[derive(Debug)]
pub(super) struct Entry<'u> {
    /// The version.
    pub version: &'u AddonVersion,
    /// The registry it comes from (for what is installed: the one it was installed from).
    pub registry: &'u str,
    /// The registry's position in the registry order (unknown registries come last).
    pub rank: usize,
    /// The registry's metadata, if a registry offers this version.
    pub candidate: Option<&'u Candidate>,
    /// What is installed, if this is the installed version.
    pub installed: Option<&'u InstalledAddon>,
}

/// An addon and its candidates; the candidate at position `i` has version index `i + 1`.
#[derive(Debug)]
pub(super) struct Package<'u> {
    /// The addon's name.
    pub name: &'u str,
    /// Candidates, lowest version first (then by registry order).
    pub entries: Vec<Entry<'u>>,
    /// The index of the installed candidate.
    pub installed: Option<u32>,
    /// Whether candidates come from more than one registry (explanations then name it).
    pub several_registries: bool,
}

impl<'u> Package<'u> {
    /// The candidate of a (non-`ABSENT`) index.
    pub fn entry(&self, index: u32) -> Option<&Entry<'u>> {
        let position = usize::try_from(index).ok()?.checked_sub(1)?;
        self.entries.get(position)
    }
}

/// Why the root depends on a package.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RootReason {
    /// It is the addon asked for.
    Request,
    /// It is installed and may move only to a newer version (it may be needed by the plan).
    NoDowngrade,
    /// It is installed, depends on something the plan may change, and stays as it is.
    Held,
}

/// Why a candidate cannot be used (pubgrub's custom incompatibility).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Unavailable {
    /// A `system` requirement is unmet.
    System(Unmet),
    /// A dependency's constraint cannot be parsed.
    InvalidConstraint {
        /// The dependency.
        dependency: String,
        /// The parse error (it quotes the constraint).
        message: String,
    },
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unavailable::System(unmet) => f.write_str(&unmet_system(
                unmet.requirement,
                &unmet.constraint,
                unmet.actual.as_deref(),
            )),
            Unavailable::InvalidConstraint {
                dependency,
                message,
            } => write!(f, "cannot be used: dependency `{dependency}`: {message}"),
        }
    }
}

type ParsedConstraint = Rc<Result<Constraint, String>>;

/// The solver ran out of time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("gave up after {0:?}")]
pub(super) struct TimeLimit(pub Duration);

/// The candidates a constraint matches, or why the constraint cannot be read.
type MatchedSet = Result<IndexSet, String>;

/// The whole problem, and pubgrub's view of it.
pub(super) struct Problem<'u> {
    pub platform: &'u Platform,
    pub request: &'u Request,
    /// Whether `system` requirements make candidates unusable.
    pub check_system: bool,
    /// Indexed by [`Pkg`]; position 0 is the root (no candidates).
    pub packages: Vec<Package<'u>>,
    ids: HashMap<&'u str, Pkg>,
    /// The addon asked for.
    pub request_pkg: Pkg,
    root_dependencies: Vec<(Pkg, IndexSet)>,
    /// Why the root depends on each package.
    pub root_reasons: HashMap<Pkg, RootReason>,
    /// The registry rank of the first dependent seen, per package (same registry first).
    hints: RefCell<HashMap<Pkg, usize>>,
    /// The constraint text of each (dependent, dependency, set), for explanations.
    pub texts: RefCell<HashMap<(Pkg, Pkg, IndexSet), String>>,
    constraints: RefCell<HashMap<&'u str, ParsedConstraint>>,
    /// When the solver gives up, and after how long.
    deadline: Instant,
    time_limit: Duration,
    matches: RefCell<HashMap<(Pkg, &'u str), MatchedSet>>,
}

/// Compares versions, treating `v1.0.0` and `1.0.0` as equal.
pub(super) fn compare_versions(a: &AddonVersion, b: &AddonVersion) -> Ordering {
    match (a.semver(), b.semver()) {
        (Some(x), Some(y)) => x.cmp(y),
        _ => a.cmp(b),
    }
}

/// Whether two versions are the same (`v1.0.0` is `1.0.0`).
pub(super) fn same_version(a: &AddonVersion, b: &AddonVersion) -> bool {
    compare_versions(a, b) == Ordering::Equal
}

/// A semver version without prerelease: what a range without prerelease, or no constraint,
/// may pick.
fn is_stable(version: &AddonVersion) -> bool {
    version.semver().is_some_and(|v| v.pre.is_empty())
}

impl<'u> Problem<'u> {
    /// Gathers the addons the request may touch and the installed addons that constrain them.
    pub fn new(
        universe: &'u Universe,
        platform: &'u Platform,
        request: &'u Request,
        check_system: bool,
        time_limit: Duration,
    ) -> Result<Self, ResolveError> {
        // Every addon the request may reach, through any candidate or installed record.
        let root_name = request.root.as_str();
        let mut reach: BTreeSet<&'u str> = BTreeSet::from([root_name]);
        let mut queue = VecDeque::from([root_name]);
        while let Some(name) = queue.pop_front() {
            let from_candidates = universe
                .candidates(name)
                .iter()
                .flat_map(|c| c.dependencies.iter());
            let from_installed = universe
                .installed(name)
                .into_iter()
                .flat_map(|i| i.dependencies.iter());
            for dependency in from_candidates.chain(from_installed) {
                if reach.insert(dependency.name.as_str()) {
                    queue.push_back(dependency.name.as_str());
                }
            }
        }
        // Installed addons that depend on something reachable constrain the plan too.
        let relevant: BTreeSet<&'u str> = universe
            .installed_addons()
            .filter(|i| {
                reach.contains(i.name.as_str())
                    || i.dependencies
                        .iter()
                        .any(|d| reach.contains(d.name.as_str()))
            })
            .map(|i| i.name.as_str())
            .collect();
        let names: BTreeSet<&'u str> = reach.iter().chain(relevant.iter()).copied().collect();

        let mut packages = vec![Package {
            name: "",
            entries: Vec::new(),
            installed: None,
            several_registries: false,
        }];
        let mut ids = HashMap::with_capacity(names.len());
        for name in names {
            ids.insert(name, Pkg(to_u32(packages.len())));
            packages.push(package(universe, name));
        }
        let request_pkg = ids.get(root_name).copied().unwrap_or(ROOT);
        let mut problem = Problem {
            platform,
            request,
            check_system,
            packages,
            ids,
            request_pkg,
            root_dependencies: Vec::new(),
            root_reasons: HashMap::new(),
            hints: RefCell::new(HashMap::new()),
            texts: RefCell::new(HashMap::new()),
            constraints: RefCell::new(HashMap::new()),
            deadline: Instant::now() + time_limit,
            time_limit,
            matches: RefCell::new(HashMap::new()),
        };
        let requested = problem.requested_set()?;
        problem.root_dependencies.push((request_pkg, requested));
        problem
            .root_reasons
            .insert(request_pkg, RootReason::Request);
        for name in relevant {
            if name == root_name {
                continue;
            }
            let Some(&pkg) = problem.ids.get(name) else {
                continue;
            };
            let package = &problem.packages[pkg.0 as usize];
            let Some(installed_index) = package.installed else {
                continue;
            };
            let (set, reason) = if reach.contains(name) {
                let Some(installed_version) = package.entry(installed_index).map(|e| e.version)
                else {
                    continue;
                };
                let newer = package
                    .entries
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| compare_versions(e.version, installed_version).is_ge())
                    .map(|(i, _)| index_of(i));
                (IndexSet::of(newer), RootReason::NoDowngrade)
            } else {
                (IndexSet::of([installed_index]), RootReason::Held)
            };
            problem.root_dependencies.push((pkg, set));
            problem.root_reasons.insert(pkg, reason);
        }
        Ok(problem)
    }

    /// The candidates the request accepts, or why there are none.
    fn requested_set(&self) -> Result<IndexSet, ResolveError> {
        let request = self.request;
        let package = &self.packages[self.request_pkg.0 as usize];
        let pinned = |e: &Entry<'_>| request.registry.as_deref().is_none_or(|r| e.registry == r);
        let wanted = request.version.as_deref().map(AddonVersion::parse);
        let chosen: Vec<u32> = package
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| pinned(e))
            .filter(|(_, e)| match &wanted {
                Some(w) => same_version(e.version, w),
                None => is_stable(e.version) || e.installed.is_some(),
            })
            .map(|(i, _)| index_of(i))
            .collect();
        if self.request_pkg != ROOT && !chosen.is_empty() {
            return Ok(IndexSet::of(chosen));
        }
        let mut available: Vec<String> = Vec::new();
        for entry in package.entries.iter().filter(|e| pinned(e)) {
            let raw = entry.version.raw().to_owned();
            if !available.contains(&raw) {
                available.push(raw);
            }
        }
        Err(ResolveError::NotFound {
            name: request.root.clone(),
            wanted: request.version.clone(),
            registry: request.registry.clone(),
            available,
        })
    }

    /// The package of an addon name, if it is part of the problem.
    pub fn id(&self, name: &str) -> Option<Pkg> {
        self.ids.get(name).copied()
    }

    /// The package data of `pkg`.
    pub fn package(&self, pkg: Pkg) -> &Package<'u> {
        &self.packages[pkg.0 as usize]
    }

    /// The dependencies that count for a chosen candidate: the installed record when it is the
    /// installed version (except for the addon asked for, which is applied again from its
    /// registry), else the registry's metadata.
    pub fn dependencies_of(&self, pkg: Pkg, entry: &Entry<'u>) -> (&'u [Dependency], bool) {
        match (entry.installed, entry.candidate) {
            (Some(installed), None) => (&installed.dependencies, true),
            (Some(installed), Some(_)) if pkg != self.request_pkg => {
                (&installed.dependencies, true)
            }
            (_, Some(candidate)) => (&candidate.dependencies, false),
            (None, None) => (&[], false),
        }
    }

    fn constraint(&self, text: &'u str) -> ParsedConstraint {
        self.constraints
            .borrow_mut()
            .entry(text)
            .or_insert_with(|| Rc::new(Constraint::parse(text)))
            .clone()
    }

    /// The candidates of `dependency` that a constraint accepts. No constraint accepts every
    /// stable version and whatever is installed.
    fn dependency_set(&self, dependency: Pkg, constraint: &'u str) -> Result<IndexSet, String> {
        if let Some(set) = self.matches.borrow().get(&(dependency, constraint)) {
            return set.clone();
        }
        let package = self.package(dependency);
        let set = if constraint.is_empty() {
            Ok(IndexSet::of(
                package
                    .entries
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| is_stable(e.version) || e.installed.is_some())
                    .map(|(i, _)| index_of(i)),
            ))
        } else {
            match self.constraint(constraint).as_ref() {
                Err(message) => Err(message.clone()),
                Ok(parsed) => Ok(IndexSet::of(
                    package
                        .entries
                        .iter()
                        .enumerate()
                        .filter(|(_, e)| parsed.matches(e.version))
                        .map(|(i, _)| index_of(i)),
                )),
            }
        };
        self.matches
            .borrow_mut()
            .insert((dependency, constraint), set.clone());
        set
    }

    fn remember_text(&self, dependent: Pkg, dependency: Pkg, set: &IndexSet, text: String) {
        self.texts
            .borrow_mut()
            .entry((dependent, dependency, set.clone()))
            .or_insert(text);
    }

    fn count_in(&self, pkg: Pkg, range: &IndexSet) -> usize {
        let package = self.package(pkg);
        (0..=to_u32(package.entries.len()))
            .filter(|i| range.has(*i))
            .count()
    }
}

fn package<'u>(universe: &'u Universe, name: &'u str) -> Package<'u> {
    let rank = |registry: &str| {
        universe
            .registry_order()
            .iter()
            .position(|r| r == registry)
            .unwrap_or(universe.registry_order().len())
    };
    let mut entries: Vec<Entry<'u>> = universe
        .candidates(name)
        .iter()
        .map(|c| Entry {
            version: &c.version,
            registry: &c.registry,
            rank: rank(&c.registry),
            candidate: Some(c),
            installed: None,
        })
        .collect();
    if let Some(installed) = universe.installed(name) {
        match entries.iter_mut().find(|e| {
            e.registry == installed.registry && same_version(e.version, &installed.version)
        }) {
            Some(entry) => entry.installed = Some(installed),
            None => entries.push(Entry {
                version: &installed.version,
                registry: &installed.registry,
                rank: rank(&installed.registry),
                candidate: None,
                installed: Some(installed),
            }),
        }
    }
    entries.sort_by(|a, b| {
        compare_versions(a.version, b.version)
            .then_with(|| b.rank.cmp(&a.rank))
            .then_with(|| a.registry.cmp(b.registry))
            .then_with(|| a.version.cmp(b.version))
    });
    let installed = entries
        .iter()
        .position(|e| e.installed.is_some())
        .map(index_of);
    let several_registries = entries.iter().any(|e| e.registry != entries[0].registry);
    Package {
        name,
        entries,
        installed,
        several_registries,
    }
}

impl DependencyProvider for Problem<'_> {
    type P = Pkg;
    type V = u32;
    type VS = IndexSet;
    type Priority = (bool, u32, Reverse<usize>);
    type M = Unavailable;
    type Err = TimeLimit;

    fn prioritize(
        &self,
        package: &Pkg,
        range: &IndexSet,
        statistics: &PackageResolutionStatistics,
    ) -> Self::Priority {
        if *package == ROOT {
            return (true, u32::MAX, Reverse(0));
        }
        // Decide what is certainly needed first, the most conflicting and the most constrained
        // first among those; what an installed addon merely allows is decided last.
        (
            !range.has(ABSENT),
            statistics.conflict_count(),
            Reverse(self.count_in(*package, range)),
        )
    }

    fn choose_version(&self, package: &Pkg, range: &IndexSet) -> Result<Option<u32>, TimeLimit> {
        if *package == ROOT {
            return Ok(Some(0));
        }
        if range.has(ABSENT) {
            return Ok(Some(ABSENT));
        }
        let data = self.package(*package);
        let newest_root = *package == self.request_pkg && self.request.upgrade;
        if let Some(installed) = data.installed {
            if range.has(installed) && !newest_root {
                return Ok(Some(installed));
            }
        }
        let hint = self.hints.borrow().get(package).copied();
        let best = data
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| (index_of(i), e))
            .filter(|(index, _)| range.has(*index))
            .max_by_key(|(index, e)| (Some(e.rank) == hint, Reverse(e.rank), *index))
            .map(|(index, _)| index);
        Ok(best)
    }

    fn should_cancel(&self) -> Result<(), TimeLimit> {
        if Instant::now() >= self.deadline {
            Err(TimeLimit(self.time_limit))
        } else {
            Ok(())
        }
    }

    fn get_dependencies(
        &self,
        package: &Pkg,
        version: &u32,
    ) -> Result<Dependencies<Pkg, IndexSet, Unavailable>, TimeLimit> {
        if *package == ROOT {
            return Ok(Dependencies::Available(
                self.root_dependencies.iter().cloned().collect(),
            ));
        }
        let data = self.package(*package);
        let Some(entry) = data.entry(*version) else {
            return Ok(Dependencies::Available(DependencyConstraints::default()));
        };
        let (dependencies, from_record) = self.dependencies_of(*package, entry);
        // What is installed is not checked again: it runs already.
        if self.check_system && entry.installed.is_none() {
            if let Some(unmet) = entry
                .candidate
                .and_then(|c| system::first_unmet(&c.system, self.platform))
            {
                return Ok(Dependencies::Unavailable(Unavailable::System(unmet)));
            }
        }
        let mut merged: Vec<(Pkg, IndexSet, String)> = Vec::new();
        for dependency in dependencies {
            let Some(target) = self.id(&dependency.name) else {
                // Only an installed record can name an addon outside the problem: nothing the
                // plan changes can affect it.
                continue;
            };
            if target == *package {
                // A self-dependency is a cycle, reported once the plan is chosen.
                continue;
            }
            let text = dependency.version.as_deref().map_or("", str::trim);
            let set = match (self.dependency_set(target, text), from_record) {
                (Ok(set), false) => set,
                (Ok(set), true) => set.union(&IndexSet::of([ABSENT])),
                // An installed record's constraint that cannot be read constrains nothing.
                (Err(_), true) => IndexSet::full(),
                (Err(message), false) => {
                    return Ok(Dependencies::Unavailable(Unavailable::InvalidConstraint {
                        dependency: dependency.name.clone(),
                        message,
                    }));
                }
            };
            match merged.iter_mut().find(|(p, _, _)| *p == target) {
                Some((_, existing, existing_text)) => {
                    *existing = existing.intersection(&set);
                    if !text.is_empty() {
                        if !existing_text.is_empty() {
                            existing_text.push_str(", ");
                        }
                        existing_text.push_str(text);
                    }
                }
                None => merged.push((target, set, text.to_owned())),
            }
        }
        let mut hints = self.hints.borrow_mut();
        for (target, set, text) in &merged {
            hints.entry(*target).or_insert(entry.rank);
            self.remember_text(*package, *target, set, text.clone());
        }
        Ok(Dependencies::Available(
            merged.into_iter().map(|(p, set, _)| (p, set)).collect(),
        ))
    }
}
