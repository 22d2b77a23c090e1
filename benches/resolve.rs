//! Dependency-solver benchmarks (issue 6 figures).
//!
//! - Deterministic pseudo-random registries of 1,000 addons × 10 versions with realistic
//!   constraints (mostly `^x.y`, `>=a, <b`, some `>=a`, some `||`, a few unconstrained), each
//!   addon depending on 0–4 addons of lower index (so the graph is acyclic), solved from several
//!   roots, on an empty cluster and on one where another plan is already installed (goal ≤ 50
//!   ms). Dependencies on any lower addon (uniform) give plans of tens of addons; dependencies
//!   on the addons just below (nearby) give plans of hundreds, a stress case.
//! - The worst case: pigeonhole problems (n + 1 addons that each need a different "slot" addon
//!   at a version naming them, n slots). They have no solution, and any conflict-driven solver
//!   needs a number of steps exponential in n to prove it.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::print_stderr,
    clippy::cast_possible_truncation
)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use addonctl::model::{AddonVersion, Dependency, SystemRequirements};
use addonctl::resolve::{self, Action, Candidate, InstalledAddon, Platform, Request, Universe};
use criterion::{criterion_group, criterion_main, Criterion};

const ADDONS: usize = 1000;
const VERSIONS: usize = 10;
const ROOTS: [usize; 6] = [999, 998, 950, 900, 750, 500];

/// splitmix64: deterministic and dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Version `v` (0..10) of every addon: 1.0.0, 1.1.1, 1.2.2, 1.3.0, 2.0.1, … 3.1.0.
fn version(v: usize) -> (usize, usize, usize) {
    (1 + v / 4, v % 4, (v * 7) % 3)
}

fn name(i: usize) -> String {
    format!("addon-{i:04}")
}

/// How a dependency's constraint is anchored to a version of the dependency.
#[derive(Clone, Copy, Debug)]
enum Model {
    /// Realistic: versions are released over time, and a constraint names the dependency's
    /// latest version when the dependent was released, so new versions mostly fit together;
    /// conflicts come from dependents that lag behind a dependency's new major version.
    Timeline,
    /// Conflict-heavy: a constraint names a version near the dependent's own position (from
    /// three below to one above), so dependents often disagree on a dependency's major version.
    Spread,
}

/// Which addons an addon depends on (always ones of lower index).
#[derive(Clone, Copy, Debug)]
enum Targets {
    /// Any addon of lower index, uniformly: a plan holds tens of addons, up to ~150.
    Uniform,
    /// Mostly the 50 addons just below (families of addons built on each other): a plan holds
    /// hundreds of addons, far more than any real cluster runs.
    Nearby,
}

fn random_universe(seed: u64, model: Model, targets_of: Targets) -> Universe {
    let mut rng = Rng(seed);
    // Release times of every version, ascending.
    let times: Vec<Vec<usize>> = (0..ADDONS)
        .map(|_| {
            let mut t: Vec<usize> = (0..VERSIONS).map(|_| rng.below(10_000)).collect();
            t.sort_unstable();
            t
        })
        .collect();
    let mut universe = Universe::new(vec!["main".to_owned(), "community".to_owned()]);
    for i in 0..ADDONS {
        // 0–4 dependencies, each from some version on.
        let count = [0, 1, 1, 2, 2, 2, 3, 3, 4, 4][rng.below(10)].min(i);
        let mut targets: Vec<(usize, usize)> = Vec::new();
        while targets.len() < count {
            let j = match targets_of {
                Targets::Nearby if rng.below(4) != 0 => i.saturating_sub(1 + rng.below(50.min(i))),
                Targets::Uniform | Targets::Nearby => rng.below(i),
            };
            if !targets.iter().any(|(t, _)| *t == j) {
                let since = if targets.is_empty() { 0 } else { rng.below(5) };
                targets.push((j, since));
            }
        }
        let registry = if i % 7 == 0 { "community" } else { "main" };
        for v in 0..VERSIONS {
            let (major, minor, patch) = version(v);
            let dependencies = targets
                .iter()
                .filter(|(_, since)| v >= *since)
                .map(|&(j, _)| {
                    let anchor = match model {
                        Model::Timeline => times[j]
                            .iter()
                            .rposition(|&t| t <= times[i][v])
                            .unwrap_or(0),
                        Model::Spread => (v + rng.below(5)).saturating_sub(3).min(VERSIONS - 1),
                    };
                    let (m, n, p) = version(anchor);
                    let constraint = match rng.below(100) {
                        0..50 => Some(format!("^{m}.{n}")),
                        50..70 => Some(format!(">={m}.{n}.{p}, <{}.0.0", m + 1)),
                        70..85 => Some(format!(">={m}.{n}.{p}")),
                        85..93 => Some(format!("^{m} || ^{}", m + 1)),
                        _ => None,
                    };
                    Dependency {
                        name: name(j),
                        version: constraint,
                    }
                })
                .collect();
            universe.add(Candidate {
                name: name(i),
                version: AddonVersion::parse(&format!("{major}.{minor}.{patch}")),
                registry: registry.to_owned(),
                dependencies,
                system: SystemRequirements::default(),
            });
        }
    }
    universe
}

/// `n + 1` pigeons, `n` holes: pigeon `i` at version `h` needs hole `h` at version `i`.
fn pigeonhole(n: usize) -> Universe {
    let mut universe = Universe::new(vec!["main".to_owned()]);
    let pigeons: Vec<Dependency> = (0..=n)
        .map(|i| Dependency {
            name: format!("pigeon-{i}"),
            version: None,
        })
        .collect();
    universe.add(Candidate {
        name: "root".to_owned(),
        version: AddonVersion::parse("1.0.0"),
        registry: "main".to_owned(),
        dependencies: pigeons,
        system: SystemRequirements::default(),
    });
    for i in 0..=n {
        for h in 0..n {
            universe.add(Candidate {
                name: format!("pigeon-{i}"),
                version: AddonVersion::parse(&format!("{}.0.0", h + 1)),
                registry: "main".to_owned(),
                dependencies: vec![Dependency {
                    name: format!("hole-{h}"),
                    version: Some(format!("={}.0.0", i + 1)),
                }],
                system: SystemRequirements::default(),
            });
        }
    }
    for h in 0..n {
        for i in 0..=n {
            universe.add(Candidate {
                name: format!("hole-{h}"),
                version: AddonVersion::parse(&format!("{}.0.0", i + 1)),
                registry: "main".to_owned(),
                dependencies: Vec::new(),
                system: SystemRequirements::default(),
            });
        }
    }
    universe
}

fn platform() -> Platform {
    Platform {
        kubernetes: Some(AddonVersion::parse("1.30.0")),
        vela: Some(AddonVersion::parse("1.9.0")),
        addonctl: AddonVersion::parse("0.1.0"),
    }
}

/// Median of `runs` timed solves.
fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}

fn describe(result: &resolve::Result<resolve::Solution>) -> String {
    const SHOWN: usize = 160;
    match result {
        Ok(solution) => {
            let installs = solution
                .steps
                .iter()
                .filter(|s| s.action != Action::Keep)
                .count();
            format!(
                "{} addons in the plan, {installs} to apply",
                solution.steps.len()
            )
        }
        Err(e) => {
            let text = e.to_string();
            format!("no plan: {}", text.chars().take(SHOWN).collect::<String>())
        }
    }
}

/// A cluster where the plan of `root` is installed.
fn with_plan_installed(universe: &Universe, platform: &Platform, root: usize) -> Universe {
    let mut installed = universe.clone();
    if let Ok(plan) = resolve::solve(universe, platform, &Request::new(name(root))) {
        for step in plan.steps {
            let dependencies = universe
                .candidates(&step.name)
                .iter()
                .find(|c| c.version == step.version && c.registry == step.registry)
                .map(|c| c.dependencies.clone())
                .unwrap_or_default();
            installed.install(InstalledAddon {
                name: step.name,
                version: step.version,
                registry: step.registry,
                installed_by: step.installed_by,
                dependencies,
            });
        }
    }
    installed
}

/// Prints the median time and outcome of solving from each root.
fn report(universe: &Universe, platform: &Platform, roots: &[usize], label: &str) {
    for &root in roots {
        let request = Request::new(name(root));
        let result = resolve::solve(universe, platform, &request);
        let time = median(11, || {
            black_box(resolve::solve(universe, platform, &request)).ok();
        });
        eprintln!(
            "  {label}from `{}`: {time:?} (median of 11), {}",
            name(root),
            describe(&result)
        );
    }
}

fn bench(c: &mut Criterion) {
    let platform = platform();
    let mut group = c.benchmark_group("resolve");
    group.sample_size(10);
    // (dependencies, constraints, name, the root with the largest plan)
    let universes = [
        (Targets::Uniform, Model::Timeline, "uniform_timeline", 998),
        (Targets::Uniform, Model::Spread, "uniform_spread", 998),
        (Targets::Nearby, Model::Timeline, "nearby_timeline", 900),
        (Targets::Nearby, Model::Spread, "nearby_spread", 999),
    ];
    for (targets, model, label, root) in universes {
        let start = Instant::now();
        let universe = random_universe(42, model, targets);
        eprintln!(
            "random registry ({targets:?} dependencies, {model:?} constraints): {ADDONS} addons × {VERSIONS} versions, built in {:?}",
            start.elapsed()
        );
        report(&universe, &platform, &ROOTS, "");
        let installed = with_plan_installed(&universe, &platform, 900);
        let count = installed.installed_addons().count();
        report(
            &installed,
            &platform,
            &[999, 500],
            &format!("with {count} addons installed, "),
        );
        let request = Request::new(name(root));
        group.bench_function(format!("{label}_from_{root}"), |b| {
            b.iter(|| black_box(resolve::solve(&universe, &platform, &request)).ok());
        });
        let request = Request::new(name(999));
        group.bench_function(format!("{label}_with_installed_from_999"), |b| {
            b.iter(|| black_box(resolve::solve(&installed, &platform, &request)).ok());
        });
    }

    // Worst case: pigeonhole, growing n until one solve takes over a second.
    let request = Request::new("root");
    for n in 3..=12 {
        let universe = pigeonhole(n);
        let start = Instant::now();
        let result = resolve::solve(&universe, &platform, &request);
        let time = start.elapsed();
        eprintln!(
            "pigeonhole n={n} ({} addons, {} candidates): {time:?}, {}",
            2 * n + 2,
            (n + 1) * n * 2 + 1,
            describe(&result)
        );
        if n == 6 {
            group.bench_function("pigeonhole_6", |b| {
                b.iter(|| black_box(resolve::solve(&universe, &platform, &request)).ok());
            });
        }
        if time > Duration::from_secs(1) {
            break;
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
