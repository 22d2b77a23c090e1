//! Why a plan could not be made, worded for the person who has to fix it.

use std::fmt;

/// A `system` requirement of an addon (`metadata.yaml` → `system`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SystemRequirement {
    /// `system.kubernetes`: the cluster's Kubernetes version (`/version`).
    Kubernetes,
    /// `system.vela`: the KubeVela version (the vela-core image tag).
    Vela,
    /// `system.addonctl`: the version of addonctl itself.
    Addonctl,
}

impl SystemRequirement {
    /// The key as written under `system` in `metadata.yaml`.
    pub fn key(self) -> &'static str {
        match self {
            SystemRequirement::Kubernetes => "kubernetes",
            SystemRequirement::Vela => "vela",
            SystemRequirement::Addonctl => "addonctl",
        }
    }

    /// What the requirement is about, for messages.
    pub fn product(self) -> &'static str {
        match self {
            SystemRequirement::Kubernetes => "Kubernetes",
            SystemRequirement::Vela => "KubeVela",
            SystemRequirement::Addonctl => "addonctl",
        }
    }
}

impl fmt::Display for SystemRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.product())
    }
}

/// An installed addon whose dependency constraint a new version would break.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokenDependent {
    /// The installed addon.
    pub name: String,
    /// Its installed version.
    pub version: String,
    /// Its constraint on the addon being changed, as written.
    pub constraint: String,
    /// Why the constraint cannot be checked, when it cannot be parsed.
    pub invalid: Option<String>,
}

/// The solver found no plan.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// No choice of versions satisfies every constraint; `explanation` is the chain of
    /// constraints that conflict (``"`a 2.0.0` needs `fluxcd >=3`; `b 1.1.0` (installed) needs
    /// `fluxcd <3`"``).
    #[error("cannot enable `{root}`: {explanation}")]
    NoSolution {
        /// The addon asked for.
        root: String,
        /// The conflicting constraints, separated by `; `.
        explanation: String,
    },
    /// The chosen versions depend on each other in a circle.
    #[error("dependency cycle: {}", format_cycle(cycle))]
    Cycle {
        /// The addons of the cycle; the first is repeated at the end (`a`, `b`, `a`).
        cycle: Vec<String>,
    },
    /// The addon asked for, or the version asked for, is in no registry.
    #[error("{}", format_not_found(name, wanted.as_deref(), registry.as_deref(), available))]
    NotFound {
        /// The addon.
        name: String,
        /// The exact version asked for, if any.
        wanted: Option<String>,
        /// The registry asked for, if any.
        registry: Option<String>,
        /// The versions there are (in the registry asked for, if any), lowest first.
        available: Vec<String>,
    },
    /// An addon of the plan needs a newer (or older) platform than the one it would run on.
    #[error(
        "addon `{addon} {version}` requires {requirement} `{constraint}`, but {}; pass `--skip-version-check` to enable it anyway",
        format_actual(*requirement, actual.as_deref())
    )]
    System {
        /// The addon.
        addon: String,
        /// Its version.
        version: String,
        /// Which requirement.
        requirement: SystemRequirement,
        /// The constraint, as written.
        constraint: String,
        /// The platform's version; `None` when it is unknown (KubeVela not installed).
        actual: Option<String>,
    },
    /// The constraints are so intricate that the solver gave up (see
    /// [`TIME_LIMIT`](super::TIME_LIMIT)); real registries never come close.
    #[error(
        "cannot enable `{root}`: the version constraints are too intricate (no plan found within {seconds} s); ask for an exact version with `--version` to narrow them"
    )]
    TooComplex {
        /// The addon asked for.
        root: String,
        /// How long the solver searched, in whole seconds.
        seconds: u64,
    },
    /// Changing an installed addon's version would break installed addons that depend on it.
    #[error(
        "`{addon} {version}` would break installed addons that depend on `{addon}`: {}; upgrade or disable them first",
        format_broken(addon, dependents)
    )]
    BreaksDependents {
        /// The addon being changed.
        addon: String,
        /// The version it would change to.
        version: String,
        /// Each dependent whose constraint fails.
        dependents: Vec<BrokenDependent>,
    },
}

/// `Result` with [`ResolveError`].
pub type Result<T, E = ResolveError> = std::result::Result<T, E>;

fn format_cycle(cycle: &[String]) -> String {
    cycle
        .iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(" → ")
}

fn format_not_found(
    name: &str,
    wanted: Option<&str>,
    registry: Option<&str>,
    available: &[String],
) -> String {
    let place = registry.map_or_else(String::new, |r| format!(" in registry `{r}`"));
    match (wanted, available.is_empty()) {
        (Some(version), true) => format!("addon `{name}` has no version `{version}`{place}"),
        (Some(version), false) => format!(
            "addon `{name}` has no version `{version}`{place}; available: {}",
            available.join(", ")
        ),
        (None, true) if registry.is_some() => format!("addon `{name}` is not{place}"),
        (None, true) => format!("addon `{name}` is in no registry"),
        (None, false) => {
            // A prerelease is chosen only when asked for exactly: name the flag that does it.
            let newest = available
                .iter()
                .map(|v| crate::model::AddonVersion::parse(v))
                .max()
                .map_or_else(String::new, |v| v.raw().to_owned());
            let reference = registry.map_or_else(|| name.to_owned(), |r| format!("{r}/{name}"));
            let listed = available
                .iter()
                .map(|v| format!("`{v}`"))
                .collect::<Vec<_>>()
                .join(", ");
            let what = if available
                .iter()
                .all(|v| crate::model::AddonVersion::parse(v).is_prerelease())
            {
                if available.len() == 1 {
                    "only a prerelease"
                } else {
                    "only prereleases"
                }
            } else {
                "no stable version"
            };
            format!(
                "addon `{name}` has {what}{place}: {listed}; a version that is not stable is \
                 enabled only when asked for exactly: `addonctl enable {reference} --version {newest}`"
            )
        }
    }
}

fn format_actual(requirement: SystemRequirement, actual: Option<&str>) -> String {
    match (requirement, actual) {
        (SystemRequirement::Kubernetes, Some(v)) => format!("the cluster runs Kubernetes `{v}`"),
        (SystemRequirement::Kubernetes, None) => "the Kubernetes version is unknown".to_owned(),
        (SystemRequirement::Vela, Some(v)) => format!("KubeVela `{v}` is installed"),
        (SystemRequirement::Vela, None) => "KubeVela is not installed".to_owned(),
        (SystemRequirement::Addonctl, Some(v)) => format!("this is addonctl `{v}`"),
        (SystemRequirement::Addonctl, None) => "the addonctl version is unknown".to_owned(),
    }
}

fn format_broken(addon: &str, dependents: &[BrokenDependent]) -> String {
    dependents
        .iter()
        .map(|d| match &d.invalid {
            None => format!(
                "`{} {}` needs `{addon} {}`",
                d.name, d.version, d.constraint
            ),
            Some(message) => format!(
                "`{} {}` has a constraint on `{addon}` that cannot be read ({message})",
                d.name, d.version
            ),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The sentence for a system requirement that is not met, without the hint (used inside
/// explanations).
pub(super) fn unmet_system(
    requirement: SystemRequirement,
    constraint: &str,
    actual: Option<&str>,
) -> String {
    format!(
        "requires {requirement} `{constraint}`, but {}",
        format_actual(requirement, actual)
    )
}
