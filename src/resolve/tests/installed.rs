//! The installed world: dependents, prunable dependencies, upgrade checks, and the time limit.

use super::*;

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
