//! Constraints: system requirements, registry order, versions that are not semver, ranges,
//! what is not found, and unreadable constraints.

use super::*;

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

#[test]
fn kubevelas_version_is_needed_only_by_a_candidate_requiring_one() {
    let mut u = universe(MAIN, &[("main", "a 1.0.0", &["b"])]);
    u.add(Candidate {
        system: SystemRequirements {
            kubernetes: Some(">=1.20".to_owned()),
            vela: Some("  ".to_owned()),
            ..SystemRequirements::default()
        },
        ..candidate("main", "b 1.0.0", &[])
    });
    assert!(
        !u.requires_vela(),
        "Kubernetes and a blank KubeVela requirement need no version"
    );
    u.add(Candidate {
        system: SystemRequirements {
            vela: Some(">=1.9".to_owned()),
            ..SystemRequirements::default()
        },
        ..candidate("other", "b 0.9.0", &[])
    });
    assert!(
        u.requires_vela(),
        "an older candidate requiring KubeVela counts too"
    );
}

#[test]
fn an_addon_with_only_prereleases_names_them_and_the_exact_flag() {
    let u = universe(
        &["main", "exp"],
        &[
            ("exp", "traefik 1.0.0-beta.10", &[]),
            ("exp", "traefik 1.0.0-beta.2", &[]),
        ],
    );
    for (request, expected) in [
        (
            Request::new("traefik"),
            "addon `traefik` has only prereleases: `1.0.0-beta.2`, `1.0.0-beta.10`; a version that \
             is not stable is enabled only when asked for exactly: \
             `addonctl enable traefik --version 1.0.0-beta.10`",
        ),
        (
            Request {
                registry: Some("exp".to_owned()),
                ..Request::new("traefik")
            },
            "addon `traefik` has only prereleases in registry `exp`: `1.0.0-beta.2`, \
             `1.0.0-beta.10`; a version that is not stable is enabled only when asked for \
             exactly: `addonctl enable exp/traefik --version 1.0.0-beta.10`",
        ),
    ] {
        let error = solve(&u, &platform(), &request).unwrap_err();
        assert_eq!(error.to_string(), expected);
    }
}
