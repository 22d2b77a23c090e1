//! The registries a plan reads, listed only when the plan needs them.
//!
//! `enable reg/x` lists only `reg`; `enable x` lists the registries in search order until one
//! has `x` (and the registry `x` is installed from). As soon as the solver needs more — `x` has
//! dependencies, or the newest versions do not make a plan — every other registry is listed too,
//! concurrently, so the solver sees what it always saw. A registry the addon asked for that
//! cannot be listed is an error naming it and the cause; another one that fails is left out with
//! a note.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures::StreamExt as _;

use crate::model::{AddonMeta, AddonPackage, AddonVersion, Constraint};
use crate::resolve::{Candidate, PlannedAddon, Universe};
use crate::source::catalog::{registry_failure, Catalog};
use crate::source::{choose_version, sorted_versions, AddonRef, AddonSummary, Choice, Reader};

use super::{MAX_VERSIONS, READ_CONCURRENCY};
use crate::{Error, Result};

/// The registries of a plan with their listings, read once, and the versions read so far.
pub(super) struct Sources {
    /// The catalogue: each registry's listing is read once per run, shared with every search.
    catalog: Catalog,
    /// Every registry of the catalog (a directory enabled from first), in search order.
    order: Vec<Reader>,
    /// Registries not listed yet (positions in `order`).
    unread: BTreeSet<usize>,
    /// Every registry listed so far, in search order.
    registries: Vec<(Reader, Vec<AddonSummary>)>,
    /// `(registry, name, version as metadata.yaml writes it)` → the version as the registry
    /// lists it (what the reader is asked for).
    listed: BTreeMap<(String, String, String), String>,
    /// `(registry, name, listed version)` already read.
    read: BTreeSet<(String, String, String)>,
    /// The first failure to read a version of the addon asked for (its archive refused, say):
    /// the reason the plan gives when no version of it could be read, rather than "not found".
    root_unreadable: Option<crate::source::Error>,
}

impl Sources {
    /// The registries of the catalog, none listed yet.
    pub(super) fn new(catalog: &Catalog) -> Self {
        let catalog = catalog.clone();
        let order = catalog.readers().to_vec();
        Sources {
            catalog,
            unread: (0..order.len()).collect(),
            order,
            registries: Vec::new(),
            listed: BTreeMap::new(),
            read: BTreeSet::new(),
            root_unreadable: None,
        }
    }

    /// Puts a registry first (the directory an addon was enabled from) and lists it.
    pub(super) async fn add_first(&mut self, reader: Reader) -> Result<()> {
        self.catalog = self.catalog.with_first(Arc::clone(&reader));
        self.order.insert(0, Arc::clone(&reader));
        self.unread = self.unread.iter().map(|i| i + 1).collect();
        // The user's own directory: its errors are the user's to fix.
        let Some(listing) = self.catalog.listing_owned(0).await else {
            return Ok(());
        };
        let addons = listing.map_err(crate::Error::from)?;
        self.registries.insert(0, (reader, addons));
        Ok(())
    }

    /// Lists the registries the addon asked for may come from: the pinned one (an error when it
    /// cannot be listed), else the registries in order until one has `root` at `version`, and
    /// the registry `root` is installed from. When no registry that answered has `root` and
    /// some failed, the failure is the error.
    pub(super) async fn find_root(
        &mut self,
        root: &str,
        version: Option<&str>,
        pinned: Option<&str>,
        installed_from: Option<&str>,
        notes: &mut Vec<String>,
    ) -> Result<()> {
        if let Some(pinned) = pinned {
            for index in self.positions(|r| r.registry() == pinned) {
                if let Err(e) = self.list_one(index).await {
                    return Err(crate::Error::from(registry_failure(pinned, e)));
                }
            }
            return Ok(());
        }
        if let Some(installed_from) = installed_from {
            for index in self.positions(|r| r.registry() == installed_from) {
                if let Err(e) = self.list_one(index).await {
                    notes.push(format!("registry `{installed_from}` is left out: {e}"));
                }
            }
        }
        let mut failures = Vec::new();
        for index in 0..self.order.len() {
            if self.has(root, version) {
                return Ok(());
            }
            if let Err(e) = self.list_one(index).await {
                notes.push(format!(
                    "registry `{}` is left out: {e}",
                    self.order[index].registry()
                ));
                failures.push((self.order[index].registry().to_owned(), e));
            }
        }
        match failures.into_iter().next() {
            Some((registry, e)) if !self.has(root, version) => {
                Err(crate::Error::from(registry_failure(&registry, e)))
            }
            _ => Ok(()),
        }
    }

    /// Lists every registry not listed yet, concurrently; one that fails becomes a note.
    pub(super) async fn list_rest(&mut self, notes: &mut Vec<String>) {
        let unread: Vec<usize> = std::mem::take(&mut self.unread).into_iter().collect();
        let catalog = self.catalog.clone();
        let listings = futures::future::join_all(unread.iter().map(|&i| {
            let reader = Arc::clone(&self.order[i]);
            let catalog = &catalog;
            async move { (catalog.listing_owned(i).await, reader) }
        }))
        .await;
        for (listing, reader) in listings {
            match listing {
                Some(Ok(addons)) => self.insert(reader, addons),
                Some(Err(e)) => {
                    notes.push(format!("registry `{}` is left out: {e}", reader.registry()));
                }
                None => {}
            }
        }
    }

    /// The chart version of `name` at manifest `digest` in the `pinned` registry (which must
    /// be able to tell: an OCI registry).
    pub(super) async fn digest_version(
        &self,
        name: &str,
        pinned: Option<&str>,
        digest: &str,
    ) -> Result<String> {
        let invalid = |message: String| {
            crate::Error::from(crate::source::Error::InvalidContent {
                registry: pinned.unwrap_or("?").to_owned(),
                message,
            })
        };
        let Some(pinned) = pinned else {
            return Err(invalid(format!(
                "a digest names a chart in one registry: write `registry/{name}@{digest}`"
            )));
        };
        let Some((reader, _)) = self.registries.iter().find(|(r, _)| r.registry() == pinned) else {
            return Err(invalid(format!("registry `{pinned}` was not listed")));
        };
        let addon = AddonRef {
            name: name.to_owned(),
            version: Some(digest.to_owned()),
        };
        match reader
            .provenance(&addon)
            .await
            .map_err(crate::Error::from)?
        {
            Some(provenance) => Ok(provenance.version),
            None => Err(invalid(format!(
                "`{name}@{digest}`: only OCI registries are read by digest"
            ))),
        }
    }

    /// Whether a listed registry has `name` (at `version`).
    fn has(&self, name: &str, version: Option<&str>) -> bool {
        self.registries.iter().any(|(_, addons)| {
            addons.iter().any(|a| {
                a.name == name
                    && version.is_none_or(|v| {
                        let wanted = AddonVersion::parse(v);
                        a.versions.iter().any(|listed| wanted.same_as(listed))
                    })
            })
        })
    }

    fn positions(&self, matches: impl Fn(&Reader) -> bool) -> Vec<usize> {
        (0..self.order.len())
            .filter(|&i| matches(&self.order[i]))
            .collect()
    }

    /// Lists the registry at `index` of the order, unless it was tried already.
    async fn list_one(&mut self, index: usize) -> crate::source::Result<()> {
        if !self.unread.remove(&index) {
            return Ok(());
        }
        let reader = Arc::clone(&self.order[index]);
        let Some(listing) = self.catalog.listing_owned(index).await else {
            return Ok(());
        };
        self.insert(reader, listing?);
        Ok(())
    }

    /// Keeps a listing, in search order.
    fn insert(&mut self, reader: Reader, addons: Vec<AddonSummary>) {
        let position_of = |r: &Reader| self.order.iter().position(|o| Arc::ptr_eq(o, r));
        let mine = position_of(&reader);
        let at = self
            .registries
            .iter()
            .take_while(|(r, _)| position_of(r) < mine)
            .count();
        self.registries.insert(at, (reader, addons));
    }

    /// Every registry in search order, by name (listed or not).
    pub(super) fn registry_order(&self) -> Vec<String> {
        let mut order: Vec<String> = Vec::new();
        for reader in &self.order {
            if !order.iter().any(|r| r == reader.registry()) {
                order.push(reader.registry().to_owned());
            }
        }
        order
    }

    /// Every registry (to look for the addons that provide a missing API).
    pub(super) fn readers(&self) -> Vec<Reader> {
        self.order.clone()
    }

    /// The newest stable version of an addon, in registry `prefer` if it has it, else in the
    /// first registry that does (directories sharing a registry name count as one registry).
    pub(super) fn newest(&self, name: &str, prefer: Option<&str>) -> Option<String> {
        let newest_in = |registry: &str| {
            let versions = self
                .registries
                .iter()
                .filter(|(r, _)| r.registry() == registry)
                .filter_map(|(_, addons)| addons.iter().find(|a| a.name == name))
                .flat_map(|summary| summary.versions.iter());
            let versions = sorted_versions(&versions.collect::<Vec<_>>());
            choose_version(&versions, Choice::NewestStable).map(|v| v.raw().to_owned())
        };
        prefer
            .and_then(newest_in)
            .or_else(|| self.registry_order().iter().find_map(|r| newest_in(r)))
    }

    /// Reads the metadata of the versions the solver may need, from `root` down its
    /// dependencies: with `all`, the newest [`MAX_VERSIONS`] of each addon in each registry;
    /// otherwise, per registry, the newest stable version and the newest matching each
    /// constraint seen. Returns whether any candidate was added.
    pub(super) async fn gather(
        &mut self,
        universe: &mut Universe,
        root: &str,
        root_version: Option<&str>,
        pinned: Option<&str>,
        all: bool,
        notes: &mut Vec<String>,
    ) -> bool {
        let mut added = false;
        let mut seen: BTreeSet<String> = BTreeSet::from([root.to_owned()]);
        let mut constraints: BTreeMap<String, Vec<Constraint>> = BTreeMap::new();
        let mut level: Vec<String> = vec![root.to_owned()];
        while !level.is_empty() {
            // Dependencies (or older versions) may come from any registry: read them all.
            if all || level.iter().any(|name| name != root) {
                self.list_rest(notes).await;
            }
            let mut wanted: Vec<(Reader, String, String)> = Vec::new();
            for name in &level {
                let is_root = name == root;
                for (reader, addons) in &self.registries {
                    if is_root && pinned.is_some_and(|p| p != reader.registry()) {
                        continue;
                    }
                    let Some(summary) = addons.iter().find(|a| &a.name == name) else {
                        continue;
                    };
                    let versions = sorted_versions(&summary.versions);
                    let chosen: Vec<&AddonVersion> = match (is_root, root_version) {
                        // A manifest digest (an OCI registry pinned to `addon@sha256:…`): read
                        // by it; its chart says the version.
                        (true, Some(digest)) if digest.starts_with("sha256:") => {
                            let key = (
                                reader.registry().to_owned(),
                                name.clone(),
                                digest.to_owned(),
                            );
                            if self.read.insert(key) {
                                wanted.push((Arc::clone(reader), name.clone(), digest.to_owned()));
                            }
                            Vec::new()
                        }
                        (true, Some(exact)) => choose_version(&versions, Choice::Exact(exact))
                            .into_iter()
                            .collect(),
                        _ if all => versions.iter().take(MAX_VERSIONS).collect(),
                        _ => {
                            let mut picks: Vec<&AddonVersion> = Vec::new();
                            picks.extend(choose_version(&versions, Choice::Default));
                            for constraint in constraints.get(name).into_iter().flatten() {
                                picks.extend(choose_version(
                                    &versions,
                                    Choice::Matching(constraint),
                                ));
                            }
                            picks
                        }
                    };
                    for version in chosen {
                        let key = (
                            reader.registry().to_owned(),
                            name.clone(),
                            version.raw().to_owned(),
                        );
                        if self.read.insert(key) {
                            wanted.push((
                                Arc::clone(reader),
                                name.clone(),
                                version.raw().to_owned(),
                            ));
                        }
                    }
                }
            }
            let metas: Vec<_> = futures::stream::iter(wanted)
                .map(|(reader, name, version)| async move {
                    let meta = read_metadata(&reader, &name, &version).await;
                    (reader, name, version, meta)
                })
                .buffer_unordered(READ_CONCURRENCY)
                .collect()
                .await;
            let mut next: Vec<String> = Vec::new();
            for (reader, name, version, meta) in metas {
                let meta = match meta {
                    Ok(meta) => meta,
                    Err(failure) => {
                        notes.push(format!(
                            "`{name}` {version} in registry `{}` is left out: {failure}",
                            reader.registry()
                        ));
                        if let (true, MetadataFailure::Source(e), None) =
                            (name == root, failure, &self.root_unreadable)
                        {
                            self.root_unreadable = Some(e);
                        }
                        continue;
                    }
                };
                for dependency in &meta.dependencies {
                    if let Some(Ok(constraint)) =
                        dependency.version.as_deref().map(Constraint::parse)
                    {
                        constraints
                            .entry(dependency.name.clone())
                            .or_default()
                            .push(constraint);
                    }
                    if seen.insert(dependency.name.clone()) {
                        next.push(dependency.name.clone());
                    }
                }
                self.listed.insert(
                    (
                        reader.registry().to_owned(),
                        name.clone(),
                        meta.version.raw().to_owned(),
                    ),
                    version,
                );
                universe.add(Candidate::from_meta(&meta, reader.registry()));
                added = true;
            }
            level = next;
        }
        added
    }

    /// Loads the package of a planned addon.
    pub(super) async fn load(&self, planned: &PlannedAddon) -> Result<AddonPackage> {
        let version = self
            .listed
            .get(&(
                planned.registry.clone(),
                planned.name.clone(),
                planned.version.raw().to_owned(),
            ))
            .cloned()
            .unwrap_or_else(|| planned.version.raw().to_owned());
        // Several directories share the registry name `local`: take the one listing the version.
        let lists = |addons: &[AddonSummary]| {
            addons
                .iter()
                .any(|a| a.name == planned.name && a.versions.contains(&version))
        };
        let Some((reader, _)) = self
            .registries
            .iter()
            .filter(|(r, _)| r.registry() == planned.registry)
            .find(|(_, addons)| lists(addons))
            .or_else(|| {
                self.registries
                    .iter()
                    .find(|(r, _)| r.registry() == planned.registry)
            })
        else {
            return Err(Error::RegistryGone {
                addon: planned.name.clone(),
                version: planned.version.to_string(),
                registry: planned.registry.clone(),
            });
        };
        let addon = AddonRef {
            name: planned.name.clone(),
            version: Some(version),
        };
        crate::loader::load(reader.as_ref(), &addon)
            .await
            .map_err(crate::Error::from)
    }

    /// Why the addon asked for could not be read, when no version of it could: the first
    /// failure of the registry (a refused archive, an unreachable server…), as `render` gives
    /// it.
    pub(super) fn root_unreadable(&self, root: &str) -> Option<Error> {
        self.root_unreadable.as_ref().map(|e| {
            Error::from(crate::loader::Error::Source {
                addon: root.to_owned(),
                source: e.detached(),
            })
        })
    }
}

/// Why one version's `metadata.yaml` could not be read.
enum MetadataFailure {
    /// The registry could not give it.
    Source(crate::source::Error),
    /// It is not a valid `metadata.yaml` of this addon.
    Invalid(String),
}

impl std::fmt::Display for MetadataFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MetadataFailure::Source(e) => e.fmt(f),
            MetadataFailure::Invalid(message) => f.write_str(message),
        }
    }
}

/// Reads and parses one version's `metadata.yaml`.
async fn read_metadata(
    reader: &Reader,
    name: &str,
    version: &str,
) -> Result<AddonMeta, MetadataFailure> {
    let addon = AddonRef {
        name: name.to_owned(),
        version: Some(version.to_owned()),
    };
    let bytes = reader
        .read_file(&addon, "metadata.yaml")
        .await
        .map_err(MetadataFailure::Source)?;
    let invalid = MetadataFailure::Invalid;
    let text =
        String::from_utf8(bytes).map_err(|_| invalid("`metadata.yaml` is not UTF-8".to_owned()))?;
    let (meta, _) =
        AddonMeta::parse(&text).map_err(|e| invalid(format!("`metadata.yaml`: {e}")))?;
    if meta.name == name {
        Ok(meta)
    } else {
        Err(invalid(format!(
            "its `metadata.yaml` names it `{}`",
            meta.name
        )))
    }
}
