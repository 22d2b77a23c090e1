//! `system` requirements (`kubernetes`, `vela`, `addonctl`) against the platform.

use crate::model::{AddonVersion, Constraint, SystemRequirements};

use super::error::SystemRequirement;
use super::Platform;

/// A requirement that the platform does not meet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Unmet {
    pub requirement: SystemRequirement,
    pub constraint: String,
    /// The platform's version as reported; `None` when unknown or absent.
    pub actual: Option<String>,
}

/// The first requirement of `system` that `platform` does not meet.
///
/// A platform version is compared without its prerelease part (`v1.30.2-gke.1200` counts as
/// `1.30.2`; build metadata such as `+k3s1` never counts), since platforms tag builds that way.
/// A requirement on a version that is unknown (`None`: KubeVela not installed, `/version` not
/// readable) is unmet: the addon says it needs it. A constraint that cannot be parsed is unmet
/// too, and the message shows it as written.
pub(super) fn first_unmet(system: &SystemRequirements, platform: &Platform) -> Option<Unmet> {
    let checks = [
        (
            SystemRequirement::Kubernetes,
            system.kubernetes.as_deref(),
            platform.kubernetes.as_ref(),
        ),
        (
            SystemRequirement::Vela,
            system.vela.as_deref(),
            platform.vela.as_ref(),
        ),
        (
            SystemRequirement::Addonctl,
            system.addonctl.as_deref(),
            Some(&platform.addonctl),
        ),
    ];
    checks
        .into_iter()
        .find_map(|(requirement, constraint, actual)| {
            let constraint = constraint.filter(|c| !c.trim().is_empty())?;
            if satisfies(constraint, actual) {
                None
            } else {
                Some(Unmet {
                    requirement,
                    constraint: constraint.trim().to_owned(),
                    actual: actual.map(ToString::to_string),
                })
            }
        })
}

fn satisfies(constraint: &str, actual: Option<&AddonVersion>) -> bool {
    let Ok(constraint) = Constraint::parse(constraint) else {
        return false;
    };
    let Some(release) = actual.and_then(AddonVersion::semver) else {
        return false;
    };
    let mut release = release.clone();
    release.pre = semver::Prerelease::EMPTY;
    release.build = semver::BuildMetadata::EMPTY;
    constraint.matches(&AddonVersion::parse(&release.to_string()))
}
