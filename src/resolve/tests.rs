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

#[test]
fn diamond_resolves_the_shared_dependency_once_dependencies_first() {
    let u = universe(
        MAIN,
        &[
            ("main", "a 1.0.0", &["b ^1", "c ^1"]),
            ("main", "b 1.0.0", &["d >=1.0, <2"]),
            ("main", "b 1.4.0", &["d >= 1.1.0, < 2.0.0"]),
            ("main", "c 1.0.0", &["d ^1.2"]),
            ("main", "d 1.0.0", &[]),
            ("main", "d 1.2.0", &[]),
            ("main", "d 1.3.0", &[]),
            ("main", "d 2.0.0", &[]),
        ],
    );
    let solution = solve(&u, &platform(), &Request::new("a")).unwrap();
    assert_eq!(
        plan(&solution),
        [
            "d 1.3.0 install",
            "b 1.4.0 install",
            "c 1.0.0 install",
            "a 1.0.0 install"
        ]
    );
    let d = solution.get("d").unwrap();
    assert_eq!(d.needed_by, ["b", "c"]);
    assert_eq!(d.installed_by, InstalledBy::Dependency);
    assert_eq!(solution.get("a").unwrap().installed_by, InstalledBy::User);
    assert_eq!(solution.get("a").unwrap().depends_on, ["b", "c"]);
    let layers: Vec<Vec<&str>> = solution
        .layers()
        .iter()
        .map(|l| l.iter().map(|s| s.name.as_str()).collect())
        .collect();
    assert_eq!(layers, [vec!["d"], vec!["b", "c"], vec!["a"]]);
}

#[test]
fn the_solver_backtracks_when_the_highest_choice_leads_to_a_conflict() {
    let cases: &[(&str, &[Spec<'_>], &[&str])] = &[
        (
            "the newest root needs incompatible dependencies: take the older root",
            &[
                ("main", "a 1.0.0", &["b ^1", "c ^1"]),
                ("main", "a 2.0.0", &["b ^2", "c ^1"]),
                ("main", "b 1.0.0", &["x ^1"]),
                ("main", "b 2.0.0", &["x ^2"]),
                ("main", "c 1.0.0", &["x ^1"]),
                ("main", "x 1.0.0", &[]),
                ("main", "x 2.0.0", &[]),
            ],
            &[
                "x 1.0.0 install",
                "b 1.0.0 install",
                "c 1.0.0 install",
                "a 1.0.0 install",
            ],
        ),
        (
            "the newest dependency conflicts: take an older dependency, keep the newest root",
            &[
                ("main", "a 2.0.0", &["b ^2", "c ^1"]),
                ("main", "b 2.0.0", &["x ^1"]),
                ("main", "b 2.1.0", &["x ^2"]),
                ("main", "b 2.2.0", &["x ^2"]),
                ("main", "c 1.0.0", &["x ^1.5"]),
                ("main", "x 1.4.0", &[]),
                ("main", "x 1.6.0", &[]),
                ("main", "x 2.0.0", &[]),
            ],
            &[
                "x 1.6.0 install",
                "b 2.0.0 install",
                "c 1.0.0 install",
                "a 2.0.0 install",
            ],
        ),
        (
            "a conflict found deep in the graph undoes a choice made at the top",
            &[
                ("main", "a 1.0.0", &["b", "e"]),
                ("main", "b 1.0.0", &["c ^1"]),
                ("main", "b 2.0.0", &["c ^2"]),
                ("main", "c 1.0.0", &["d ^1"]),
                ("main", "c 2.0.0", &["d ^2"]),
                ("main", "d 1.0.0", &[]),
                ("main", "d 2.0.0", &[]),
                ("main", "e 1.0.0", &["d <2"]),
            ],
            &[
                "d 1.0.0 install",
                "c 1.0.0 install",
                "b 1.0.0 install",
                "e 1.0.0 install",
                "a 1.0.0 install",
            ],
        ),
    ];
    for (what, candidates, expected) in cases {
        let u = universe(MAIN, candidates);
        assert_eq!(
            solve_for(&u, &Request::new("a")).unwrap(),
            *expected,
            "{what}"
        );
    }
}

#[test]
fn no_solution_is_explained_as_a_chain_of_constraints() {
    let mut installed_conflict = universe(
        MAIN,
        &[
            ("main", "a 2.0.0", &["fluxcd >=3"]),
            ("main", "b 1.1.0", &["fluxcd <3"]),
            ("main", "fluxcd 2.1.0", &[]),
            ("main", "fluxcd 3.0.0", &[]),
        ],
    );
    install(
        &mut installed_conflict,
        "b 1.1.0",
        InstalledBy::User,
        &["fluxcd <3"],
    );
    install(
        &mut installed_conflict,
        "fluxcd 2.1.0",
        InstalledBy::Dependency,
        &[],
    );
    let cases: Vec<(&str, Universe, Request, &str)> = vec![
        (
            "an installed addon's constraint",
            installed_conflict.clone(),
            Request::new("a"),
            "cannot enable `a`: `a 2.0.0` needs `fluxcd >=3`; `b 1.1.0` (installed) needs `fluxcd <3`",
        ),
        (
            "an exact version asked for",
            installed_conflict,
            Request {
                version: Some("3.0.0".to_owned()),
                ..Request::new("fluxcd")
            },
            "cannot enable `fluxcd`: you asked for `fluxcd 3.0.0`; `b 1.1.0` (installed) needs `fluxcd <3`",
        ),
        (
            "two dependencies of the plan",
            universe(
                MAIN,
                &[
                    ("main", "a 1.0.0", &["b", "c"]),
                    ("main", "b 1.0.0", &["x >=2"]),
                    ("main", "c 1.0.0", &["x ~1.4"]),
                    ("main", "x 1.4.2", &[]),
                    ("main", "x 2.0.0", &[]),
                ],
            ),
            Request::new("a"),
            "cannot enable `a`: `a 1.0.0` needs `b` and `c`; `b 1.0.0` needs `x >=2`; `c 1.0.0` needs `x ~1.4`",
        ),
        (
            "every version of the root",
            universe(
                MAIN,
                &[
                    ("main", "a 1.0.0", &["x ^3"]),
                    ("main", "a 1.1.0", &["x ^3"]),
                    ("main", "x 1.0.0", &[]),
                    ("main", "x 2.1.0", &[]),
                ],
            ),
            Request::new("a"),
            "cannot enable `a`: every version of `a` needs `x ^3`, but no version of `x` matches (available: 1.0.0, 2.1.0)",
        ),
        (
            "a dependency in no registry",
            universe(MAIN, &[("main", "a 1.0.0", &["ghost ^1"])]),
            Request::new("a"),
            "cannot enable `a`: `a 1.0.0` needs `ghost ^1`, but no registry has `ghost`",
        ),
        (
            "an invalid constraint",
            universe(
                MAIN,
                &[("main", "a 1.0.0", &["b >=> 1"]), ("main", "b 1.0.0", &[])],
            ),
            Request::new("a"),
            "cannot enable `a`: `a 1.0.0` cannot be used: dependency `b`: invalid version constraint `>=> 1`: unexpected character '>' while parsing major version number",
        ),
    ];
    for (what, u, request, expected) in cases {
        assert_eq!(error_for(&u, &request), expected, "{what}");
    }
}

#[test]
fn prereleases_are_chosen_only_when_asked_for() {
    let u = universe(
        MAIN,
        &[
            ("main", "a 1.0.0", &["c"]),
            ("main", "b 1.0.0", &["c >=1.1.0-rc.0"]),
            ("main", "c 1.0.0", &[]),
            ("main", "c 1.1.0-rc.1", &[]),
            ("main", "d 1.0.0", &["c ^1"]),
            ("main", "e 2.0.0-rc.1", &[]),
        ],
    );
    let cases: &[(Request, Outcome<'_>)] = &[
        (
            Request::new("a"),
            Ok(&["c 1.0.0 install", "a 1.0.0 install"]),
        ),
        (
            Request::new("b"),
            Ok(&["c 1.1.0-rc.1 install", "b 1.0.0 install"]),
        ),
        (
            Request::new("d"),
            Ok(&["c 1.0.0 install", "d 1.0.0 install"]),
        ),
        (
            Request {
                version: Some("1.1.0-rc.1".to_owned()),
                ..Request::new("c")
            },
            Ok(&["c 1.1.0-rc.1 install"]),
        ),
        (
            Request::new("e"),
            Err("addon `e` has no stable version; available: 2.0.0-rc.1 (ask for one with `--version`)"),
        ),
        (
            Request {
                version: Some("v2.0.0-rc.1".to_owned()),
                ..Request::new("e")
            },
            Ok(&["e 2.0.0-rc.1 install"]),
        ),
    ];
    for (request, expected) in cases {
        let got = solve_for(&u, request).map_err(|e| e.to_string());
        let expected = expected
            .map(|steps| steps.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
            .map_err(str::to_owned);
        assert_eq!(got, expected, "{request:?}");
    }
}

#[test]
fn cycles_are_errors_naming_the_cycle() {
    let cases: &[(&[Spec<'_>], &str)] = &[
        (
            &[("main", "a 1.0.0", &["b"]), ("main", "b 1.0.0", &["a ^1"])],
            "dependency cycle: `a` → `b` → `a`",
        ),
        (
            &[
                ("main", "a 1.0.0", &["b"]),
                ("main", "b 1.0.0", &["c"]),
                ("main", "c 1.0.0", &["b"]),
            ],
            "dependency cycle: `b` → `c` → `b`",
        ),
        (
            &[("main", "a 1.0.0", &["a"])],
            "dependency cycle: `a` → `a`",
        ),
    ];
    for (candidates, expected) in cases {
        let u = universe(MAIN, candidates);
        let error = solve(&u, &platform(), &Request::new("a")).unwrap_err();
        assert!(matches!(error, ResolveError::Cycle { .. }));
        assert_eq!(error.to_string(), *expected);
    }
}

#[test]
fn installed_addons_are_preferred_and_upgraded_only_when_nothing_breaks() {
    let base: &[Spec<'_>] = &[
        ("main", "a 1.0.0", &["fluxcd ^2"]),
        ("main", "a 2.0.0", &["fluxcd >=3"]),
        ("main", "b 1.1.0", &["fluxcd <3"]),
        ("main", "c 1.0.0", &["fluxcd >=2"]),
        ("main", "fluxcd 2.1.0", &[]),
        ("main", "fluxcd 2.3.0", &[]),
        ("main", "fluxcd 3.0.0", &[]),
    ];
    // (what, installed, request, expected plan or error)
    let cases: &[(&str, Installed<'_>, &str, Outcome<'_>)] = &[
        (
            "the installed version is kept when it fits",
            &[("fluxcd 2.1.0", &[])],
            "a",
            Ok(&["fluxcd 3.0.0 upgrade", "a 2.0.0 install"]),
        ),
        (
            "an installed dependent holds the dependency: the older root fits",
            &[("fluxcd 2.1.0", &[]), ("b 1.1.0", &["fluxcd <3"])],
            "a",
            Ok(&["fluxcd 2.1.0 keep", "a 1.0.0 install"]),
        ),
        (
            "an installed dependent whose constraint still holds lets the dependency upgrade",
            &[("fluxcd 2.1.0", &[]), ("c 1.0.0", &["fluxcd >=2"])],
            "a",
            Ok(&["fluxcd 3.0.0 upgrade", "a 2.0.0 install"]),
        ),
    ];
    for (what, installed, root, expected) in cases {
        let mut u = universe(MAIN, base);
        for (spec, dependencies) in *installed {
            install(&mut u, spec, InstalledBy::Dependency, dependencies);
        }
        let got = solve_for(&u, &Request::new(*root)).map_err(|e| e.to_string());
        let expected = expected
            .map(|steps| steps.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
            .map_err(str::to_owned);
        assert_eq!(got, expected, "{what}");
    }

    // The upgrade says what was installed before.
    let mut u = universe(MAIN, base);
    install(&mut u, "fluxcd 2.1.0", InstalledBy::User, &[]);
    let solution = solve(&u, &platform(), &Request::new("a")).unwrap();
    let fluxcd = solution.get("fluxcd").unwrap();
    assert_eq!(fluxcd.installed_version, Some(AddonVersion::parse("2.1.0")));
    assert_eq!(fluxcd.installed_by, InstalledBy::User);
}

#[test]
fn installed_but_incompatible_is_explained() {
    let mut u = universe(
        MAIN,
        &[
            ("main", "a 1.0.0", &["fluxcd <2"]),
            ("main", "fluxcd 1.0.0", &[]),
            ("main", "fluxcd 2.1.0", &[]),
        ],
    );
    install(&mut u, "fluxcd 2.1.0", InstalledBy::User, &[]);
    assert_eq!(
        error_for(&u, &Request::new("a")),
        "cannot enable `a`: `a 1.0.0` needs `fluxcd <2`; `fluxcd 2.1.0` is installed and addonctl does not downgrade it"
    );
}

#[test]
fn what_is_installed_apart_from_the_request_does_not_get_in_the_way() {
    let mut u = universe(
        MAIN,
        &[
            ("main", "a 1.0.0", &["b"]),
            ("main", "b 1.0.0", &[]),
            ("main", "b 1.2.0", &[]),
            ("main", "y 2.0.0", &[]),
        ],
    );
    // An unrelated, inconsistent installation: `x` needs `y ^1` but `y 2.0.0` is installed.
    install(&mut u, "x 1.0.0", InstalledBy::User, &["y ^1"]);
    install(&mut u, "y 2.0.0", InstalledBy::Dependency, &[]);
    // An installed `b` whose record names a dependency that is not installed.
    install(&mut u, "b 1.0.0", InstalledBy::Dependency, &["ghost"]);
    assert_eq!(
        solve_for(&u, &Request::new("a")).unwrap(),
        ["b 1.0.0 keep", "a 1.0.0 install"]
    );
}

#[test]
fn the_root_keeps_its_installed_version_unless_upgraded_or_asked_for() {
    let mut u = universe(
        MAIN,
        &[
            ("main", "a 1.0.0", &[]),
            ("main", "a 2.0.0", &[]),
            ("main", "b 1.0.0", &["a <2"]),
        ],
    );
    install(&mut u, "a 1.0.0", InstalledBy::Dependency, &[]);
    let enable = solve(&u, &platform(), &Request::new("a")).unwrap();
    assert_eq!(plan(&enable), ["a 1.0.0 keep"]);
    assert_eq!(enable.steps[0].installed_by, InstalledBy::User);
    let upgrade = Request {
        upgrade: true,
        ..Request::new("a")
    };
    assert_eq!(solve_for(&u, &upgrade).unwrap(), ["a 2.0.0 upgrade"]);
    // An installed dependent's constraint bounds the upgrade.
    install(&mut u, "b 1.0.0", InstalledBy::User, &["a <2"]);
    assert_eq!(solve_for(&u, &upgrade).unwrap(), ["a 1.0.0 keep"]);
}

#[test]
fn system_requirements_are_checked_and_can_be_skipped() {
    let with_system = |spec: &str, system: SystemRequirements| Candidate {
        system,
        ..candidate("main", spec, &[])
    };
    let kubernetes = |c: &str| SystemRequirements {
        kubernetes: Some(c.to_owned()),
        ..SystemRequirements::default()
    };
    let mut u = universe(MAIN, &[("main", "a 1.0.0", &["fluxcd"])]);
    u.add(with_system("fluxcd 2.2.0", kubernetes(">=1.28")));
    u.add(with_system("fluxcd 2.3.0", kubernetes(">=1.31")));
    // The newest version needs a newer cluster: the solver takes the one that runs here.
    assert_eq!(
        solve_for(&u, &Request::new("a")).unwrap(),
        ["fluxcd 2.2.0 install", "a 1.0.0 install"]
    );
    let skip = Request {
        skip_version_check: true,
        ..Request::new("a")
    };
    assert_eq!(
        solve_for(&u, &skip).unwrap(),
        ["fluxcd 2.3.0 install", "a 1.0.0 install"]
    );

    // No version runs here: the error names the addon, the requirement and the actual version.
    let cases: &[(SystemRequirements, &str)] = &[
        (
            kubernetes(">=1.31"),
            "addon `b 1.0.0` requires Kubernetes `>=1.31`, but the cluster runs Kubernetes `v1.30.0`; pass `--skip-version-check` to enable it anyway",
        ),
        (
            SystemRequirements {
                vela: Some(">=1.10".to_owned()),
                ..SystemRequirements::default()
            },
            "addon `b 1.0.0` requires KubeVela `>=1.10`, but KubeVela `v1.9.11` is installed; pass `--skip-version-check` to enable it anyway",
        ),
        (
            SystemRequirements {
                addonctl: Some(">=0.2".to_owned()),
                ..SystemRequirements::default()
            },
            "addon `b 1.0.0` requires addonctl `>=0.2`, but this is addonctl `0.1.0`; pass `--skip-version-check` to enable it anyway",
        ),
    ];
    for (system, expected) in cases {
        let mut u = universe(MAIN, &[("main", "a 1.0.0", &["b"])]);
        u.add(with_system("b 1.0.0", system.clone()));
        let error = solve(&u, &platform(), &Request::new("a")).unwrap_err();
        assert!(matches!(error, ResolveError::System { .. }), "{error}");
        assert_eq!(error.to_string(), *expected);
    }

    // KubeVela not installed: a `vela` requirement is unmet unless skipped.
    let mut u = Universe::new(vec!["main".to_owned()]);
    u.add(with_system(
        "a 1.0.0",
        SystemRequirements {
            vela: Some(">=1.5".to_owned()),
            ..SystemRequirements::default()
        },
    ));
    let no_vela = Platform {
        vela: None,
        ..platform()
    };
    assert_eq!(
        solve(&u, &no_vela, &Request::new("a"))
            .unwrap_err()
            .to_string(),
        "addon `a 1.0.0` requires KubeVela `>=1.5`, but KubeVela is not installed; pass `--skip-version-check` to enable it anyway"
    );
    let skip = Request {
        skip_version_check: true,
        ..Request::new("a")
    };
    assert!(solve(&u, &no_vela, &skip).is_ok());

    // Platform builds with a prerelease tag count as their release.
    let mut u = Universe::new(vec!["main".to_owned()]);
    u.add(with_system("a 1.0.0", kubernetes(">=1.30")));
    let gke = Platform {
        kubernetes: Some(AddonVersion::parse("v1.30.2-gke.1200")),
        ..platform()
    };
    assert!(solve(&u, &gke, &Request::new("a")).is_ok());

    // What stays installed is not checked again.
    let mut u = universe(MAIN, &[("main", "a 1.0.0", &["b"])]);
    u.add(with_system("b 1.0.0", kubernetes("<1.29")));
    install(&mut u, "b 1.0.0", InstalledBy::Dependency, &[]);
    assert_eq!(
        solve_for(&u, &Request::new("a")).unwrap(),
        ["b 1.0.0 keep", "a 1.0.0 install"]
    );
    assert_eq!(solve_for(&u, &Request::new("b")).unwrap(), ["b 1.0.0 keep"]);
}

#[test]
fn registries_same_registry_first_then_registry_order() {
    // (what, candidates, request, (addon, registry) per step)
    type Registries<'a> = &'a [(&'a str, &'a str)];
    let registries = &["main", "exp"];
    let cases: &[(&str, &[Spec<'_>], Request, Registries<'_>)] = &[
        (
            "a dependency only in another registry",
            &[("exp", "a 1.0.0", &["b ^1"]), ("main", "b 1.2.0", &[])],
            Request::new("a"),
            &[("b", "main"), ("a", "exp")],
        ),
        (
            "the dependent's registry wins over the registry order and a higher version",
            &[
                ("exp", "a 1.0.0", &["b ^1"]),
                ("main", "b 1.2.0", &[]),
                ("exp", "b 1.0.0", &[]),
            ],
            Request::new("a"),
            &[("b", "exp"), ("a", "exp")],
        ),
        (
            "the registry order decides for the root",
            &[
                ("main", "a 1.0.0", &["b ^1"]),
                ("exp", "a 1.5.0", &["b ^1"]),
                ("main", "b 1.0.0", &[]),
                ("exp", "b 1.1.0", &[]),
            ],
            Request::new("a"),
            &[("b", "main"), ("a", "main")],
        ),
        (
            "a pinned registry",
            &[
                ("main", "a 1.0.0", &["b ^1"]),
                ("exp", "a 1.5.0", &["b ^1"]),
                ("main", "b 1.0.0", &[]),
                ("exp", "b 1.1.0", &[]),
            ],
            Request {
                registry: Some("exp".to_owned()),
                ..Request::new("a")
            },
            &[("b", "exp"), ("a", "exp")],
        ),
        (
            "the same registry does not hold a matching version: another one does",
            &[
                ("exp", "a 1.0.0", &["b ^2"]),
                ("exp", "b 1.0.0", &[]),
                ("main", "b 2.0.0", &[]),
            ],
            Request::new("a"),
            &[("b", "main"), ("a", "exp")],
        ),
    ];
    for (what, candidates, request, expected) in cases {
        let u = universe(registries, candidates);
        let solution = solve(&u, &platform(), request).unwrap();
        let got: Vec<(&str, &str)> = solution
            .steps
            .iter()
            .map(|s| (s.name.as_str(), s.registry.as_str()))
            .collect();
        assert_eq!(got, *expected, "{what}");
    }
}

#[test]
fn versions_that_are_not_semver_are_chosen_only_by_an_exact_request() {
    let mut u = universe(
        MAIN,
        &[
            ("main", "a latest", &[]),
            ("main", "a 1.0.0", &[]),
            ("main", "b 1.0.0", &["c"]),
            ("main", "c nightly", &[]),
            ("main", "d 1.0.0", &["e"]),
            ("main", "e v1.2.0", &[]),
            ("main", "e nightly", &[]),
        ],
    );
    assert_eq!(
        solve_for(&u, &Request::new("a")).unwrap(),
        ["a 1.0.0 install"]
    );
    let latest = Request {
        version: Some("latest".to_owned()),
        ..Request::new("a")
    };
    assert_eq!(solve_for(&u, &latest).unwrap(), ["a latest install"]);
    assert_eq!(
        error_for(&u, &Request::new("b")),
        "cannot enable `b`: `b 1.0.0` needs `c`, but no version of `c` matches (available: nightly)"
    );
    assert_eq!(
        solve_for(&u, &Request::new("d")).unwrap(),
        ["e v1.2.0 install", "d 1.0.0 install"]
    );
    // A leading `v` does not matter when asking for a version.
    let exact = Request {
        version: Some("1.2.0".to_owned()),
        ..Request::new("e")
    };
    assert_eq!(solve_for(&u, &exact).unwrap(), ["e v1.2.0 install"]);
    // What is installed stays, even when it is not semver.
    install(&mut u, "c nightly", InstalledBy::User, &[]);
    assert_eq!(
        solve_for(&u, &Request::new("b")).unwrap(),
        ["c nightly keep", "b 1.0.0 install"]
    );
}

#[test]
fn alternatives_and_ranges_pick_the_highest_matching_version() {
    let u = universe(
        MAIN,
        &[
            ("main", "a 1.0.0", &["c ^1 || ^3"]),
            ("main", "b 1.0.0", &["c >= 1.1.0, < 2.0.0 || ~2.0.1"]),
            ("main", "c 1.0.0", &[]),
            ("main", "c 1.1.0", &[]),
            ("main", "c 2.0.5", &[]),
            ("main", "c 2.1.0", &[]),
            ("main", "c 3.2.0", &[]),
            ("main", "c 4.0.0", &[]),
        ],
    );
    for (root, expected) in [("a", "c 3.2.0 install"), ("b", "c 2.0.5 install")] {
        assert_eq!(solve_for(&u, &Request::new(root)).unwrap()[0], expected);
    }
}

#[test]
fn missing_addons_and_versions_are_not_found() {
    let u = universe(
        &["main", "exp"],
        &[("main", "a 1.0.0", &[]), ("main", "a 1.1.0", &[])],
    );
    let cases = [
        (Request::new("zzz"), "addon `zzz` is in no registry"),
        (
            Request {
                version: Some("2.0.0".to_owned()),
                ..Request::new("a")
            },
            "addon `a` has no version `2.0.0`; available: 1.0.0, 1.1.0",
        ),
        (
            Request {
                registry: Some("exp".to_owned()),
                ..Request::new("a")
            },
            "addon `a` is not in registry `exp`",
        ),
    ];
    for (request, expected) in cases {
        let error = solve(&u, &platform(), &request).unwrap_err();
        assert!(matches!(error, ResolveError::NotFound { .. }));
        assert_eq!(error.to_string(), expected);
    }
}

#[test]
fn candidates_with_unreadable_constraints_are_avoided() {
    let u = universe(
        MAIN,
        &[
            ("main", "a 1.0.0", &["b ^1"]),
            ("main", "a 2.0.0", &["b >=> 1"]),
            ("main", "b 1.0.0", &[]),
        ],
    );
    assert_eq!(
        solve_for(&u, &Request::new("a")).unwrap(),
        ["b 1.0.0 install", "a 1.0.0 install"]
    );
}

/// `app` (user) → `fluxcd` (dependency) → `cert-manager` (dependency); `other` (user) →
/// `cert-manager`; `monitoring` (user, asked for explicitly although `app` needs it too).
fn installed_world() -> Universe {
    let mut u = Universe::new(vec!["main".to_owned()]);
    install(
        &mut u,
        "app 1.0.0",
        InstalledBy::User,
        &["fluxcd ^2", "monitoring"],
    );
    install(
        &mut u,
        "fluxcd 2.1.0",
        InstalledBy::Dependency,
        &["cert-manager >=1.10", "helper"],
    );
    install(&mut u, "helper 1.0.0", InstalledBy::Dependency, &[]);
    install(&mut u, "cert-manager 1.12.0", InstalledBy::Dependency, &[]);
    install(&mut u, "monitoring 1.0.0", InstalledBy::User, &[]);
    install(
        &mut u,
        "other 1.0.0",
        InstalledBy::User,
        &["cert-manager ^1"],
    );
    u
}

#[test]
fn dependents_are_the_installed_addons_that_need_an_addon() {
    let u = installed_world();
    let cases: &[(&str, &[&str])] = &[
        ("cert-manager", &["fluxcd", "other"]),
        ("fluxcd", &["app"]),
        ("monitoring", &["app"]),
        ("app", &[]),
        ("unknown", &[]),
    ];
    for (name, expected) in cases {
        assert_eq!(dependents(&u, name), *expected, "{name}");
    }
}

#[test]
fn prunable_dependencies_are_those_nothing_else_needs() {
    let u = installed_world();
    let cases: &[(&str, &[&str])] = &[
        // `cert-manager` is still needed by `other`; `monitoring` was asked for by the user.
        ("app", &["fluxcd", "helper"]),
        ("fluxcd", &["helper"]),
        ("other", &[]),
        ("helper", &[]),
    ];
    for (name, expected) in cases {
        assert_eq!(prunable_after_removing(&u, name), *expected, "{name}");
    }
    // Without `other`, removing `app` frees `cert-manager` too, after `fluxcd` in removal order.
    let mut u = installed_world();
    u.uninstall("other");
    assert_eq!(
        prunable_after_removing(&u, "app"),
        ["fluxcd", "helper", "cert-manager"]
    );
    // Dependencies that need each other are freed together.
    let mut u = Universe::new(vec!["main".to_owned()]);
    install(&mut u, "a 1.0.0", InstalledBy::User, &["b"]);
    install(&mut u, "b 1.0.0", InstalledBy::Dependency, &["c"]);
    install(&mut u, "c 1.0.0", InstalledBy::Dependency, &["b"]);
    assert_eq!(prunable_after_removing(&u, "a"), ["b", "c"]);
}

#[test]
fn an_upgrade_is_checked_against_every_installed_dependent() {
    let u = installed_world();
    assert!(check_upgrade(&u, "cert-manager", &AddonVersion::parse("1.14.0")).is_ok());
    assert!(check_upgrade(&u, "monitoring", &AddonVersion::parse("9.0.0")).is_ok());
    let cases = [
        (
            "2.0.0",
            "`cert-manager 2.0.0` would break installed addons that depend on `cert-manager`: \
             `other 1.0.0` needs `cert-manager ^1`; upgrade or disable them first",
        ),
        (
            "0.9.0",
            "`cert-manager 0.9.0` would break installed addons that depend on `cert-manager`: \
             `fluxcd 2.1.0` needs `cert-manager >=1.10`; `other 1.0.0` needs `cert-manager ^1`; \
             upgrade or disable them first",
        ),
    ];
    for (version, expected) in cases {
        let error = check_upgrade(&u, "cert-manager", &AddonVersion::parse(version)).unwrap_err();
        assert_eq!(error.to_string(), expected, "{version}");
    }
    // A constraint that cannot be read is reported, not ignored.
    let mut u = installed_world();
    install(&mut u, "broken 1.0.0", InstalledBy::User, &["helper >=> 1"]);
    let error = check_upgrade(&u, "helper", &AddonVersion::parse("1.1.0")).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("`broken 1.0.0` has a constraint on `helper` that cannot be read"),
        "{error}"
    );
}

#[test]
fn the_solver_gives_up_after_its_time_limit() {
    let u = universe(
        MAIN,
        &[("main", "a 1.0.0", &["b"]), ("main", "b 1.0.0", &[])],
    );
    let error = solve_within(&u, &platform(), &Request::new("a"), Duration::ZERO).unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot enable `a`: the version constraints are too intricate (no plan found within 0 s); \
         ask for an exact version with `--version` to narrow them"
    );
}
