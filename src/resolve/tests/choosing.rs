//! Choosing versions: shared dependencies, backtracking, explanations, prereleases, cycles,
//! and what is installed.

use super::*;

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
            Err("addon `e` has only a prerelease: `2.0.0-rc.1`; a version that is not stable is enabled only when asked for exactly: `addonctl enable e --version 2.0.0-rc.1`"),
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
