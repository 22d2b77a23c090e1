//! The registries addonctl searches, in order: local directories as given, then the built-in
//! registry (always last). `registry/name` pins one registry.

use std::sync::Arc;

use crate::loader;
use crate::model::{AddonPackage, AddonVersion, Constraint};
use crate::source::builtin::BuiltinReader;
use crate::source::local::LocalReader;
use crate::source::{AddonRef, AddonSummary, Reader};

/// An ordered list of registries.
#[derive(Debug, Clone)]
pub struct Catalog {
    readers: Vec<Reader>,
}

/// One registry's listing, or why it failed.
#[derive(Debug)]
pub struct RegistryListing {
    /// The registry's name.
    pub registry: String,
    /// Its addons, or the error that stopped the listing.
    pub addons: Result<Vec<AddonSummary>, crate::source::Error>,
}

/// Where an addon version was found.
#[derive(Debug, Clone)]
pub struct Found {
    /// The registry's reader.
    pub reader: Reader,
    /// The addon and the exact version chosen.
    pub addon: AddonRef,
}

impl Catalog {
    /// The given local directories (searched first, in order) and the built-in registry.
    pub fn new(directories: &[std::path::PathBuf]) -> crate::Result<Self> {
        let mut readers: Vec<Reader> = Vec::new();
        for dir in directories {
            readers.push(Arc::new(LocalReader::new(dir)?));
        }
        readers.push(Arc::new(BuiltinReader::new()));
        Ok(Catalog { readers })
    }

    /// A catalog of explicit readers (for tests and embedding).
    pub fn from_readers(readers: Vec<Reader>) -> Self {
        Catalog { readers }
    }

    /// The registries in search order.
    pub fn readers(&self) -> &[Reader] {
        &self.readers
    }

    /// Lists every registry concurrently; a failing registry is reported, not dropped.
    pub async fn list(&self) -> Vec<RegistryListing> {
        self.list_only(None).await
    }

    /// Lists the registries named `registry` (every registry with `None`) concurrently; the
    /// others are not read.
    pub async fn list_only(&self, registry: Option<&str>) -> Vec<RegistryListing> {
        let chosen = self
            .readers
            .iter()
            .filter(|r| registry.is_none_or(|name| name == r.registry()));
        let futures = chosen.map(|r| async move {
            RegistryListing {
                registry: r.registry().to_owned(),
                addons: r.list_addons().await,
            }
        });
        futures::future::join_all(futures).await
    }

    /// Finds an addon by `name` or `registry/name`, at `version` or the newest non-prerelease
    /// version matching `constraint`. Registries are searched in order; `prefer` (a registry
    /// name) is searched first.
    pub async fn find(
        &self,
        reference: &str,
        version: Option<&str>,
        constraint: Option<&Constraint>,
        prefer: Option<&str>,
    ) -> crate::Result<Found> {
        let (pinned, name) = match reference.split_once('/') {
            Some((registry, name)) => (Some(registry), name),
            None => (None, reference),
        };
        let mut order: Vec<&Reader> = self.readers.iter().collect();
        if let Some(prefer) = prefer {
            order.sort_by_key(|r| r.registry() != prefer);
        }
        let mut seen_versions = Vec::new();
        let mut failures = Vec::new();
        for reader in order {
            if pinned.is_some_and(|p| p != reader.registry()) {
                continue;
            }
            let addons = match reader.list_addons().await {
                Ok(addons) => addons,
                // The addon asked for may be in the registry that failed: say so.
                Err(e) if pinned.is_some() => return Err(registry_failure(reader.registry(), e)),
                Err(e) => {
                    failures.push((reader.registry().to_owned(), e));
                    continue;
                }
            };
            let Some(summary) = addons.into_iter().find(|a| a.name == name) else {
                continue;
            };
            let chosen = pick_version(&summary.versions, version, constraint);
            if let Some(chosen) = chosen {
                return Ok(Found {
                    reader: Arc::clone(reader),
                    addon: AddonRef {
                        name: name.to_owned(),
                        version: Some(chosen),
                    },
                });
            }
            seen_versions.extend(
                summary
                    .versions
                    .into_iter()
                    .map(|v| format!("`{v}` in `{}`", reader.registry())),
            );
        }
        if let Some((registry, e)) = failures.into_iter().next() {
            return Err(registry_failure(&registry, e));
        }
        let wanted = match (version, constraint) {
            (Some(v), _) => format!(" version `{v}`"),
            (None, Some(c)) => format!(" matching `{c}`"),
            (None, None) => String::new(),
        };
        let registries: Vec<String> = self
            .readers
            .iter()
            .filter(|r| pinned.is_none_or(|p| p == r.registry()))
            .map(|r| format!("`{}`", r.registry()))
            .collect();
        Err(crate::Error::User(if seen_versions.is_empty() {
            format!(
                "no addon `{name}`{wanted} in {}",
                if registries.is_empty() {
                    format!("a registry named `{}`", pinned.unwrap_or_default())
                } else {
                    registries.join(", ")
                }
            )
        } else {
            format!(
                "no version of addon `{name}`{wanted}; available: {}",
                seen_versions.join(", ")
            )
        }))
    }

    /// Finds addon `name` in listings already read ([`Catalog::list`]), reading no registry
    /// again: `version` in the registry `prefer` (searched first), else in any registry; else
    /// the newest non-prerelease version in the first registry that has it (`prefer` first,
    /// then search order).
    /// Registries whose listing failed are skipped.
    pub fn find_listed(
        &self,
        listings: &[RegistryListing],
        name: &str,
        version: Option<&str>,
        prefer: Option<&str>,
    ) -> Option<Found> {
        let mut order: Vec<&Reader> = self.readers.iter().collect();
        if let Some(prefer) = prefer {
            order.sort_by_key(|r| r.registry() != prefer);
        }
        let versions_in = |reader: &Reader| {
            let listing = listings.iter().find(|l| l.registry == reader.registry())?;
            let addons = listing.addons.as_ref().ok()?;
            addons.iter().find(|a| a.name == name).map(|a| &a.versions)
        };
        let pick = |version: Option<&str>| {
            order.iter().find_map(|reader| {
                let chosen = pick_version(versions_in(reader)?, version, None)?;
                Some(Found {
                    reader: Arc::clone(reader),
                    addon: AddonRef {
                        name: name.to_owned(),
                        version: Some(chosen),
                    },
                })
            })
        };
        version.and_then(|v| pick(Some(v))).or_else(|| pick(None))
    }

    /// Loads a found addon.
    pub async fn load(&self, found: &Found) -> crate::Result<AddonPackage> {
        Ok(loader::load(found.reader.as_ref(), &found.addon).await?)
    }
}

/// A registry that could not be listed, as the error of a command that needed it: the
/// registry's name and the cause, and — unless the registry refused the credentials, which the
/// user fixes — not the user's error (exit 1), since a server error, a hang or a truncated index
/// is the registry's fault, not a missing addon.
pub fn registry_failure(registry: &str, error: crate::source::Error) -> crate::Error {
    use crate::source::Error as E;
    match error {
        E::Unauthorized { .. } => crate::Error::Source(error),
        other => {
            let text = other.to_string();
            let prefix = format!("registry `{registry}`: ");
            let cause = text.strip_prefix(&prefix).unwrap_or(&text);
            crate::Error::Source(E::Backend {
                registry: registry.to_owned(),
                message: format!(
                    "cannot be read: {cause}; check it with `addonctl registry get {registry}` or try again later"
                ),
                source: None,
            })
        }
    }
}

/// `version` exactly (a leading `v` ignored), else the highest non-prerelease version matching
/// `constraint` (or any), else `None`.
fn pick_version(
    versions: &[String],
    version: Option<&str>,
    constraint: Option<&Constraint>,
) -> Option<String> {
    if let Some(wanted) = version {
        let wanted = AddonVersion::parse(wanted);
        return versions.iter().find(|v| wanted.same_as(v)).cloned();
    }
    let mut candidates: Vec<AddonVersion> = versions
        .iter()
        .map(|v| AddonVersion::parse(v))
        .filter(|v| match constraint {
            Some(c) => c.matches(v),
            None => !v.is_prerelease(),
        })
        .collect();
    if candidates.is_empty() && constraint.is_none() {
        // Only prereleases or non-semver versions: take the newest of them.
        candidates = versions.iter().map(|v| AddonVersion::parse(v)).collect();
    }
    candidates.sort();
    candidates.pop().map(|v| v.raw().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_addon_is_found_in_listings_already_read_preferring_its_registry_and_version() {
        let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
        let catalog = Catalog::from_readers(vec![
            Arc::new(LocalReader::with_registry(dirs[0].path(), "first").unwrap()),
            Arc::new(LocalReader::with_registry(dirs[1].path(), "second").unwrap()),
        ]);
        let listing = |registry: &str, versions: &[&str]| RegistryListing {
            registry: registry.to_owned(),
            addons: Ok(vec![AddonSummary {
                name: "a".to_owned(),
                versions: versions.iter().map(|v| (*v).to_owned()).collect(),
                description: None,
            }]),
        };
        let listings = [listing("first", &["2.0.0"]), listing("second", &["1.0.0"])];
        let found = |version: Option<&str>, prefer: Option<&str>| {
            catalog
                .find_listed(&listings, "a", version, prefer)
                .map(|f| (f.reader.registry().to_owned(), f.addon.version.unwrap()))
        };
        let at = |registry: &str, version: &str| Some((registry.to_owned(), version.to_owned()));

        assert_eq!(found(Some("1.0.0"), Some("second")), at("second", "1.0.0"));
        assert_eq!(found(Some("1.0.0"), None), at("second", "1.0.0"));
        // The installed version is gone from every registry: the newest in search order.
        assert_eq!(found(Some("0.9.0"), Some("second")), at("second", "1.0.0"));
        assert_eq!(found(None, None), at("first", "2.0.0"));
        assert!(catalog.find_listed(&listings, "b", None, None).is_none());
        let failed = [RegistryListing {
            registry: "first".to_owned(),
            addons: Err(crate::source::Error::Backend {
                registry: "first".to_owned(),
                message: "down".to_owned(),
                source: None,
            }),
        }];
        assert!(catalog.find_listed(&failed, "a", None, None).is_none());
    }

    #[test]
    fn versions_are_picked_as_users_expect() {
        let versions: Vec<String> = ["2.0.0-rc.1", "1.4.0", "v1.10.0", "1.2.0", "nightly"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            pick_version(&versions, None, None).as_deref(),
            Some("v1.10.0")
        );
        assert_eq!(
            pick_version(&versions, Some("1.10.0"), None).as_deref(),
            Some("v1.10.0")
        );
        assert_eq!(
            pick_version(&versions, Some("2.0.0-rc.1"), None).as_deref(),
            Some("2.0.0-rc.1")
        );
        let c = Constraint::parse(">=1.0.0, <1.5.0").unwrap();
        assert_eq!(
            pick_version(&versions, None, Some(&c)).as_deref(),
            Some("1.4.0")
        );
        let c = Constraint::parse(">=3").unwrap();
        assert_eq!(pick_version(&versions, None, Some(&c)), None);
        assert_eq!(
            pick_version(&["nightly".to_owned()], None, None).as_deref(),
            Some("nightly")
        );
    }
}
