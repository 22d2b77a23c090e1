//! Turns pubgrub's proof that there is no plan into a short chain of facts a person can act on:
//! ``"`a 2.0.0` needs `fluxcd >=3`; `b 1.1.0` (installed) needs `fluxcd <3`"``.
//!
//! The proof is a tree whose leaves are the facts (a dependency, an unmet requirement, what is
//! installed) and whose inner nodes are deductions. The deductions are left out: each fact is
//! written once, with versions and constraints as the registries write them, facts about the
//! same candidates are merged, and they are ordered from the request down (what was asked for,
//! then each addon as the facts reach it, then installed addons).

use std::collections::{HashMap, HashSet, VecDeque};

use pubgrub::{DerivationTree, External};

use super::provider::{IndexSet, Pkg, Problem, RootReason, ROOT};
use super::provider::{Package, Unavailable};

type Tree = DerivationTree<Pkg, IndexSet, Unavailable>;

/// Beyond this many facts the explanation is cut (the first ones carry the conflict).
const MAX_FACTS: usize = 12;

/// How many versions an explanation lists when it lists what is available.
const MAX_LISTED: usize = 6;

/// One fact of the proof: `subject verb object`, or a whole sentence. Facts with the same
/// subject and verb and no qualification are merged (`` `a 1.0.0` needs `b` and `c` ``).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fact {
    /// `(subject, verb)`, when the fact can merge with others about the same subject.
    head: Option<(String, &'static str)>,
    /// What follows the head; with no head, the whole fact.
    objects: Vec<String>,
    /// Whether it is about the request (those come first).
    request: bool,
    /// The addon it is about, and the addons it leads to (to order facts from the request).
    subject: Pkg,
    targets: Vec<Pkg>,
}

impl Fact {
    fn sentence(subject: Pkg, text: String) -> Self {
        Fact {
            head: None,
            objects: vec![text],
            request: false,
            subject,
            targets: Vec::new(),
        }
    }

    fn text(&self) -> String {
        let objects = match self.objects.as_slice() {
            [] => String::new(),
            [one] => one.clone(),
            [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
        };
        match &self.head {
            Some((subject, verb)) => format!("{subject} {verb} {objects}"),
            None => objects,
        }
    }
}

impl Problem<'_> {
    /// The facts of the proof, joined by `; `: what was asked for first, then in the order the
    /// proof uses them.
    pub fn explain(&self, tree: &Tree) -> String {
        let mut found: Vec<Fact> = Vec::new();
        let mut shared = HashSet::new();
        self.collect(tree, &mut found, &mut shared);
        let mut facts: Vec<Fact> = Vec::new();
        for fact in found {
            if facts.contains(&fact) {
                continue;
            }
            let same_head = facts
                .iter_mut()
                .find(|f| fact.head.is_some() && f.head == fact.head);
            match same_head {
                Some(existing) => {
                    for object in fact.objects {
                        if !existing.objects.contains(&object) {
                            existing.objects.push(object);
                        }
                    }
                    existing.targets.extend(fact.targets);
                }
                None => facts.push(fact),
            }
        }
        // From the request down: what was asked for, then each addon in the order the facts
        // reach it from the request, then the rest (installed addons) in proof order.
        let mut rank: HashMap<Pkg, usize> = HashMap::from([(self.request_pkg, 0)]);
        let mut queue = VecDeque::from([self.request_pkg]);
        while let Some(pkg) = queue.pop_front() {
            for fact in facts.iter().filter(|f| f.subject == pkg) {
                for target in &fact.targets {
                    if !rank.contains_key(target) {
                        rank.insert(*target, rank.len());
                        queue.push_back(*target);
                    }
                }
            }
        }
        facts.sort_by_key(|f| {
            (
                !f.request,
                rank.get(&f.subject).copied().unwrap_or(usize::MAX),
            )
        });
        if facts.is_empty() {
            return "no combination of versions satisfies every constraint".to_owned();
        }
        let more = facts.len().saturating_sub(MAX_FACTS);
        facts.truncate(MAX_FACTS);
        let mut text = facts.iter().map(Fact::text).collect::<Vec<_>>().join("; ");
        if more > 0 {
            text.push_str(&format!("; and {more} more facts"));
        }
        text
    }

    /// The leaves of the proof, depth first, each shared subtree once.
    fn collect(&self, tree: &Tree, facts: &mut Vec<Fact>, shared: &mut HashSet<usize>) {
        // A stack rather than recursion: proofs of hard problems are deep.
        let mut stack = vec![tree];
        while let Some(node) = stack.pop() {
            match node {
                DerivationTree::External(external) => facts.extend(self.fact(external)),
                DerivationTree::Derived(derived) => {
                    if derived.shared_id.is_some_and(|id| !shared.insert(id)) {
                        continue;
                    }
                    stack.push(&derived.cause2);
                    stack.push(&derived.cause1);
                }
            }
        }
    }

    fn fact(&self, external: &External<Pkg, IndexSet, Unavailable>) -> Option<Fact> {
        match external {
            External::NotRoot(..) => None,
            External::NoVersions(package, _) => (*package != ROOT).then(|| {
                Fact::sentence(
                    *package,
                    format!("no version of `{}` fits", self.package(*package).name),
                )
            }),
            External::Custom(package, set, reason) => {
                let (who, _) = self.describe(*package, set);
                Some(Fact::sentence(*package, format!("{who} {reason}")))
            }
            External::FromDependencyOf(dependent, dependent_set, dependency, set) => {
                if *dependent == ROOT {
                    return self.root_fact(*dependency);
                }
                let (who, plural) = self.describe(*dependent, dependent_set);
                let verb = if plural { "need" } else { "needs" };
                let requirement = self.requirement(*dependent, *dependency, set);
                let target = self.package(*dependency);
                if set.real(target.entries.len()).is_empty() {
                    Some(Fact::sentence(
                        *dependent,
                        format!("{who} {verb} {requirement}, but {}", none_matches(target)),
                    ))
                } else {
                    Some(Fact {
                        head: Some((who, verb)),
                        objects: vec![requirement],
                        request: false,
                        subject: *dependent,
                        targets: vec![*dependency],
                    })
                }
            }
        }
    }

    /// Why the root wants a package, when that says something the other facts do not.
    fn root_fact(&self, pkg: Pkg) -> Option<Fact> {
        let package = self.package(pkg);
        match self.root_reasons.get(&pkg)? {
            RootReason::Request => {
                let request = self.request;
                let from = request
                    .registry
                    .as_deref()
                    .map_or_else(String::new, |r| format!(" from registry `{r}`"));
                let text = match (&request.version, request.registry.is_some()) {
                    (Some(version), _) => {
                        format!("you asked for `{} {version}`{from}", package.name)
                    }
                    (None, true) => format!("you asked for `{}`{from}", package.name),
                    (None, false) => return None,
                };
                Some(Fact {
                    request: true,
                    ..Fact::sentence(pkg, text)
                })
            }
            RootReason::NoDowngrade => {
                let installed = package.installed.and_then(|i| package.entry(i))?;
                Some(Fact::sentence(
                    pkg,
                    format!(
                        "`{} {}` is installed and addonctl does not downgrade it",
                        package.name, installed.version
                    ),
                ))
            }
            RootReason::Held => None,
        }
    }

    /// The constraint as written (`` `fluxcd >=3` ``), or the versions it stands for.
    fn requirement(&self, dependent: Pkg, dependency: Pkg, set: &IndexSet) -> String {
        let name = self.package(dependency).name;
        match self
            .texts
            .borrow()
            .get(&(dependent, dependency, set.clone()))
        {
            Some(text) if text.is_empty() => format!("`{name}`"),
            Some(text) => format!("`{name} {text}`"),
            None => self.describe(dependency, set).0,
        }
    }

    /// Names the candidates of a set: `` `a 2.0.0` (installed) ``, `` every version of `a` ``,
    /// `` 5 versions of `a` (1.0.0 to 2.1.0) ``. The flag says whether the phrase is plural.
    fn describe(&self, pkg: Pkg, set: &IndexSet) -> (String, bool) {
        let package = self.package(pkg);
        let real = set.real(package.entries.len());
        match real.as_slice() {
            [] => (format!("`{}`", package.name), false),
            [one] => (label(package, *one), false),
            all if all.len() == package.entries.len() => {
                (format!("every version of `{}`", package.name), false)
            }
            few if few.len() <= 3 => {
                let mut labels: Vec<String> = few.iter().map(|i| label(package, *i)).collect();
                let last = labels.pop().unwrap_or_default();
                (format!("{} and {last}", labels.join(", ")), true)
            }
            many => {
                let version = |i: &u32| {
                    package
                        .entry(*i)
                        .map_or_else(String::new, |e| e.version.to_string())
                };
                (
                    format!(
                        "{} versions of `{}` ({} to {})",
                        many.len(),
                        package.name,
                        many.first().map_or_else(String::new, version),
                        many.last().map_or_else(String::new, version),
                    ),
                    true,
                )
            }
        }
    }
}

/// `` `a 2.0.0` ``, with `(installed)` and the registry when it matters.
fn label(package: &Package<'_>, index: u32) -> String {
    let Some(entry) = package.entry(index) else {
        return format!("`{}`", package.name);
    };
    let mut notes = Vec::new();
    if entry.installed.is_some() {
        notes.push("installed".to_owned());
    }
    if package.several_registries {
        notes.push(format!("registry `{}`", entry.registry));
    }
    let notes = if notes.is_empty() {
        String::new()
    } else {
        format!(" ({})", notes.join(", "))
    };
    format!("`{} {}`{notes}", package.name, entry.version)
}

/// Why nothing matches: the addon is nowhere, or these are the versions there are.
fn none_matches(package: &Package<'_>) -> String {
    if package.entries.is_empty() {
        return format!("no registry has `{}`", package.name);
    }
    let mut versions: Vec<String> = Vec::new();
    for entry in &package.entries {
        let text = if entry.installed.is_some() {
            format!("{} (installed)", entry.version)
        } else {
            entry.version.to_string()
        };
        if !versions.contains(&text) {
            versions.push(text);
        }
    }
    let skipped = versions.len().saturating_sub(MAX_LISTED);
    let listed = versions.split_off(skipped);
    format!(
        "no version of `{}` matches (available: {}{})",
        package.name,
        if skipped > 0 { "…, " } else { "" },
        listed.join(", ")
    )
}
