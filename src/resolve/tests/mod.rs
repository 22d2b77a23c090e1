//! Unit tests of the solver, with the helpers they share.

mod choosing;
mod constraints;
mod installed;

use super::*;

/// `"fluxcd >=3, <4"` → dependency `fluxcd` with constraint `>=3, <4`; `"fluxcd"` → any version.
fn dependency(spec: &str) -> Dependency {
    let (name, constraint) = spec.split_once(' ').unwrap_or((spec, ""));
    Dependency {
        name: name.to_owned(),
        version: Some(constraint.trim().to_owned()).filter(|c| !c.is_empty()),
    }
}

/// `"a 1.0.0"` → (`a`, `1.0.0`).
fn name_version(spec: &str) -> (String, AddonVersion) {
    let (name, version) = spec.split_once(' ').unwrap();
    (name.to_owned(), AddonVersion::parse(version))
}

/// A universe described as `(registry, "name version", dependencies)`.
fn universe(registries: &[&str], candidates: &[Spec<'_>]) -> Universe {
    let mut universe = Universe::new(registries.iter().map(|r| (*r).to_owned()).collect());
    for (registry, spec, dependencies) in candidates {
        universe.add(candidate(registry, spec, dependencies));
    }
    universe
}

fn candidate(registry: &str, spec: &str, dependencies: &[&str]) -> Candidate {
    let (name, version) = name_version(spec);
    Candidate {
        name,
        version,
        registry: registry.to_owned(),
        dependencies: dependencies.iter().map(|d| dependency(d)).collect(),
        system: SystemRequirements::default(),
    }
}

fn install(universe: &mut Universe, spec: &str, by: InstalledBy, dependencies: &[&str]) {
    let (name, version) = name_version(spec);
    universe.install(InstalledAddon {
        name,
        version,
        registry: "main".to_owned(),
        installed_by: by,
        dependencies: dependencies.iter().map(|d| dependency(d)).collect(),
    });
}

fn platform() -> Platform {
    Platform {
        kubernetes: Some(AddonVersion::parse("v1.30.0")),
        vela: Some(AddonVersion::parse("v1.9.11")),
        addonctl: AddonVersion::parse("0.1.0"),
    }
}

/// The plan as `name version action`, in order.
fn plan(solution: &Solution) -> Vec<String> {
    solution
        .steps
        .iter()
        .map(|s| {
            let action = match s.action {
                Action::Install => "install",
                Action::Upgrade => "upgrade",
                Action::Keep => "keep",
            };
            format!("{} {} {action}", s.name, s.version)
        })
        .collect()
}

fn solve_for(universe: &Universe, request: &Request) -> Result<Vec<String>> {
    solve(universe, &platform(), request).map(|s| plan(&s))
}

fn error_for(universe: &Universe, request: &Request) -> String {
    match solve(universe, &platform(), request) {
        Ok(s) => panic!("expected an error, got {:?}", plan(&s)),
        Err(e) => e.to_string(),
    }
}

const MAIN: &[&str] = &["main"];

/// `(registry, "name version", dependencies)`.
type Spec<'a> = (&'a str, &'a str, &'a [&'a str]);

/// Installed addons: `("name version", dependencies)`.
type Installed<'a> = &'a [(&'a str, &'a [&'a str])];

/// A plan (`name version action` per step) or an error message.
type Outcome<'a> = Result<&'a [&'a str], &'a str>;
