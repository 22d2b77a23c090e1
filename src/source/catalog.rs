//! The one catalogue: which registries addonctl searches, in which order, and what they hold.
//!
//! Order: the local directories given (`--registry-dir`), then the stored registries (priority,
//! then order of addition), then the built-in registry, always last. The first registry that has
//! an addon (at the version asked for) wins; `registry/name` pins one registry. Every registry is
//! listed at most once per catalogue (a run): a listing, or the error that stopped it, is kept
//! and shared by every search, the planner and every command. The loader, the planner and the
//! CLI all search through this type, and choose versions with [`source::choose_version`].

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::OnceCell;

use crate::model::registry::Registry;
use crate::model::{Constraint, ErrorKind};
use crate::source::builtin::{BuiltinReader, BUILTIN_REGISTRY};
use crate::source::local::LocalReader;
use crate::source::{self, AddonRef, AddonSummary, Choice, OpenOptions, Reader};

/// Why the catalogue could not find an addon.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No registry has the addon (at the version asked for); names what was searched.
    #[error("{0}")]
    NoAddon(String),
    /// A registry that may hold the addon could not be read.
    #[error(transparent)]
    Source(#[from] source::Error),
}

impl Error {
    /// What kind of failure it is: no registry has it is [`ErrorKind::NotFound`]; a registry
    /// that failed says its own kind.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::NoAddon(_) => ErrorKind::NotFound,
            Error::Source(e) => e.kind(),
        }
    }
}

/// One registry and its listing, read at most once.
#[derive(Debug)]
struct Entry {
    reader: Reader,
    listing: OnceCell<Result<Vec<AddonSummary>, source::Error>>,
}

impl Entry {
    fn new(reader: Reader) -> Arc<Self> {
        Arc::new(Entry {
            reader,
            listing: OnceCell::new(),
        })
    }

    async fn listing(&self) -> &Result<Vec<AddonSummary>, source::Error> {
        self.listing
            .get_or_init(|| async { self.reader.list_addons().await })
            .await
    }
}

/// The registries in search order, each listed at most once. Clones share the listings.
#[derive(Debug, Clone)]
pub struct Catalog {
    entries: Vec<Arc<Entry>>,
    readers: Vec<Reader>,
    /// How to open the same registries again ([`Catalog::reopened`]).
    recipe: Option<Arc<Recipe>>,
}

/// What a catalogue was opened from.
struct Recipe {
    directories: Vec<PathBuf>,
    stored: Vec<Registry>,
    options: OpenOptions,
}

impl std::fmt::Debug for Recipe {
    // The stored registries' credentials stay out of logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recipe")
            .field("directories", &self.directories)
            .field("stored", &self.stored.len())
            .finish_non_exhaustive()
    }
}

/// One registry's listing, or why it failed.
#[derive(Debug)]
pub struct RegistryListing {
    /// The registry's name.
    pub registry: String,
    /// Its addons, or the error that stopped the listing.
    pub addons: Result<Vec<AddonSummary>, source::Error>,
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
    pub fn new(directories: &[PathBuf]) -> source::Result<Self> {
        let mut catalog = Self::ordered(local_readers(directories)?, Vec::new());
        catalog.recipe = Some(Arc::new(Recipe {
            directories: directories.to_vec(),
            stored: Vec::new(),
            options: OpenOptions::default(),
        }));
        Ok(catalog)
    }

    /// The built-in registry alone.
    pub fn builtin() -> Self {
        Self::ordered(Vec::new(), Vec::new())
    }

    /// Directories first, then the stored registries (already in their order), then the
    /// built-in registry.
    pub fn ordered(directories: Vec<Reader>, stored: Vec<Reader>) -> Self {
        let mut readers = directories;
        readers.extend(stored);
        readers.push(Arc::new(BuiltinReader::new()));
        Self::from_readers(readers)
    }

    /// The directories, the stored registries opened with `options`, and the built-in
    /// registry. A stored registry that cannot be opened is left out and returned, for the
    /// caller to show as a warning.
    pub fn with_stored(
        directories: &[PathBuf],
        stored: &[Registry],
        options: &OpenOptions,
    ) -> source::Result<(Self, Vec<source::Error>)> {
        let mut readers = Vec::new();
        let mut failures = Vec::new();
        for registry in stored {
            match source::open(&registry.spec, &registry.credentials, options) {
                Ok(reader) => readers.push(reader),
                Err(e) => failures.push(e),
            }
        }
        let mut catalog = Self::ordered(local_readers(directories)?, readers);
        catalog.recipe = Some(Arc::new(Recipe {
            directories: directories.to_vec(),
            stored: stored.to_vec(),
            options: options.clone(),
        }));
        Ok((catalog, failures))
    }

    /// The same registries opened again, nothing listed yet: what they publish now is seen
    /// (readers keep their own indexes, so they are opened anew). A catalogue made of explicit
    /// readers keeps them and drops only its listings. A stored registry that cannot be opened
    /// is left out and returned, as [`Catalog::with_stored`] does.
    pub fn reopened(&self) -> source::Result<(Self, Vec<source::Error>)> {
        let Some(recipe) = &self.recipe else {
            return Ok((Self::from_readers(self.readers.clone()), Vec::new()));
        };
        let (mut catalog, failures) =
            Self::with_stored(&recipe.directories, &recipe.stored, &recipe.options)?;
        catalog.recipe = Some(Arc::clone(recipe));
        Ok((catalog, failures))
    }

    /// [`Catalog::reopened`] with `stored` in place of the stored registries it was opened
    /// with (the store as it reads now: registries added, changed or removed since); the same
    /// directories and options. A catalogue made of explicit readers is only reopened.
    pub fn reopened_with(&self, stored: &[Registry]) -> source::Result<(Self, Vec<source::Error>)> {
        let Some(recipe) = &self.recipe else {
            return self.reopened();
        };
        Self::with_stored(&recipe.directories, stored, &recipe.options)
    }

    /// A catalogue of explicit readers, in this order (for tests and embedding).
    pub fn from_readers(readers: Vec<Reader>) -> Self {
        Catalog {
            entries: readers.iter().cloned().map(Entry::new).collect(),
            readers,
            recipe: None,
        }
    }

    /// This catalogue with `reader` searched first (the directory an addon is enabled from);
    /// the listings already read are shared.
    #[must_use]
    pub fn with_first(&self, reader: Reader) -> Self {
        let mut entries = vec![Entry::new(Arc::clone(&reader))];
        entries.extend(self.entries.iter().cloned());
        let mut readers = vec![reader];
        readers.extend(self.readers.iter().cloned());
        Catalog {
            entries,
            readers,
            recipe: None,
        }
    }

    /// The registries in search order.
    pub fn readers(&self) -> &[Reader] {
        &self.readers
    }

    /// The listing of the registry at `index` of the search order (read on first use only).
    pub async fn listing(&self, index: usize) -> Option<&Result<Vec<AddonSummary>, source::Error>> {
        Some(self.entries.get(index)?.listing().await)
    }

    /// [`Catalog::listing`], owned.
    pub async fn listing_owned(&self, index: usize) -> Option<source::Result<Vec<AddonSummary>>> {
        Some(match self.listing(index).await? {
            Ok(addons) => Ok(addons.clone()),
            Err(e) => Err(e.detached()),
        })
    }

    /// Lists every registry concurrently; a failing registry is reported, not dropped.
    pub async fn list(&self) -> Vec<RegistryListing> {
        self.list_only(None).await
    }

    /// Lists the registries named `registry` (every registry with `None`) concurrently; the
    /// others are not read.
    pub async fn list_only(&self, registry: Option<&str>) -> Vec<RegistryListing> {
        let chosen = self
            .entries
            .iter()
            .filter(|e| registry.is_none_or(|name| name == e.reader.registry()));
        let futures = chosen.map(|entry| async move {
            RegistryListing {
                registry: entry.reader.registry().to_owned(),
                addons: match entry.listing().await {
                    Ok(addons) => Ok(addons.clone()),
                    Err(e) => Err(e.detached()),
                },
            }
        });
        futures::future::join_all(futures).await
    }

    /// Finds an addon by `name` or `registry/name`, at `version` or the newest non-prerelease
    /// version matching `constraint`. Registries are searched in order, each listed only when
    /// reached; `prefer` (a registry name) is searched first.
    pub async fn find(
        &self,
        reference: &str,
        version: Option<&str>,
        constraint: Option<&Constraint>,
        prefer: Option<&str>,
    ) -> Result<Found, Error> {
        let (pinned, name) = match reference.split_once('/') {
            Some((registry, name)) => (Some(registry), name),
            None => (None, reference),
        };
        let choice = Choice::of(version, constraint);
        let mut seen_versions = Vec::new();
        let mut failures = Vec::new();
        for entry in self.in_order(prefer) {
            let registry = entry.reader.registry();
            if pinned.is_some_and(|p| p != registry) {
                continue;
            }
            let addons = match entry.listing().await {
                Ok(addons) => addons,
                // The addon asked for may be in the registry that failed: say so.
                Err(e) if pinned.is_some() => {
                    return Err(registry_failure(registry, e.detached()).into())
                }
                Err(e) => {
                    failures.push((registry, e));
                    continue;
                }
            };
            let Some(summary) = addons.iter().find(|a| a.name == name) else {
                continue;
            };
            if let Some(chosen) =
                source::choose_version(&source::sorted_versions(&summary.versions), choice)
            {
                return Ok(Found {
                    reader: Arc::clone(&entry.reader),
                    addon: AddonRef {
                        name: name.to_owned(),
                        version: Some(chosen.raw().to_owned()),
                    },
                });
            }
            seen_versions.extend(
                summary
                    .versions
                    .iter()
                    .map(|v| format!("`{v}` in `{registry}`")),
            );
        }
        if let Some((registry, e)) = failures.into_iter().next() {
            return Err(registry_failure(registry, e.detached()).into());
        }
        Err(Error::NoAddon(self.not_found(
            name,
            pinned,
            choice,
            &seen_versions,
        )))
    }

    /// Why `name` was not found: the registries searched, or the versions they have.
    fn not_found(
        &self,
        name: &str,
        pinned: Option<&str>,
        choice: Choice<'_>,
        seen: &[String],
    ) -> String {
        let wanted = match choice {
            Choice::Exact(v) => format!(" version `{v}`"),
            Choice::Matching(c) => format!(" matching `{c}`"),
            Choice::NewestStable | Choice::Default => String::new(),
        };
        if !seen.is_empty() {
            return format!(
                "no version of addon `{name}`{wanted}; available: {}",
                seen.join(", ")
            );
        }
        let registries: Vec<String> = self
            .readers
            .iter()
            .filter(|r| pinned.is_none_or(|p| p == r.registry()))
            .map(|r| format!("`{}`", r.registry()))
            .collect();
        format!(
            "no addon `{name}`{wanted} in {}",
            if registries.is_empty() {
                format!("a registry named `{}`", pinned.unwrap_or_default())
            } else {
                registries.join(", ")
            }
        )
    }

    /// Finds addon `name` in listings already read ([`Catalog::list`]), reading no registry
    /// again: `version` in the registry `prefer` (searched first), else in any registry; else
    /// the newest non-prerelease version in the first registry that has it (`prefer` first,
    /// then search order). Registries whose listing failed are skipped.
    pub fn find_listed(
        &self,
        listings: &[RegistryListing],
        name: &str,
        version: Option<&str>,
        prefer: Option<&str>,
    ) -> Option<Found> {
        let order: Vec<&Arc<Entry>> = self.in_order(prefer).collect();
        let versions_in = |reader: &Reader| {
            let listing = listings.iter().find(|l| l.registry == reader.registry())?;
            let addons = listing.addons.as_ref().ok()?;
            addons.iter().find(|a| a.name == name).map(|a| &a.versions)
        };
        let pick = |version: Option<&str>| {
            order.iter().find_map(|entry| {
                let versions = source::sorted_versions(versions_in(&entry.reader)?);
                let chosen = source::choose_version(&versions, Choice::of(version, None))?;
                Some(Found {
                    reader: Arc::clone(&entry.reader),
                    addon: AddonRef {
                        name: name.to_owned(),
                        version: Some(chosen.raw().to_owned()),
                    },
                })
            })
        };
        version.and_then(|v| pick(Some(v))).or_else(|| pick(None))
    }

    /// The names of every addon in the registries that answer, for messages.
    pub async fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for entry in &self.entries {
            if let Ok(addons) = entry.listing().await {
                names.extend(addons.iter().map(|a| a.name.clone()));
            }
        }
        names.sort();
        names.dedup();
        names
    }

    /// The registries searched, for messages: the built-in one by description, the others by
    /// name.
    pub fn describe(&self) -> String {
        let names: Vec<String> = self
            .readers
            .iter()
            .map(|r| match r.registry() {
                BUILTIN_REGISTRY => "the built-in registry".to_owned(),
                other => format!("registry `{other}`"),
            })
            .collect();
        names.join(", ")
    }

    /// The entries in search order, `prefer` first.
    fn in_order<'a>(&'a self, prefer: Option<&str>) -> impl Iterator<Item = &'a Arc<Entry>> + 'a {
        let mut order: Vec<&Arc<Entry>> = self.entries.iter().collect();
        if let Some(prefer) = prefer {
            order.sort_by_key(|e| e.reader.registry() != prefer);
        }
        order.into_iter()
    }
}

/// Readers for local directories, in order.
fn local_readers(directories: &[PathBuf]) -> source::Result<Vec<Reader>> {
    directories
        .iter()
        .flat_map(|dir| registry_dirs_of(dir))
        .map(|dir| Ok(Arc::new(LocalReader::new(dir)?) as Reader))
        .collect()
}

/// The registry directories a `--registry-dir` stands for: the directory itself, or — when it
/// is the root of a KubeVela catalog checkout (no addon in it or directly under it, but
/// `addons/` and/or `experimental/addons/`) — those two directories, stable first.
pub fn registry_dirs_of(dir: &std::path::Path) -> Vec<PathBuf> {
    if !dir.is_dir() || holds_addons(dir) {
        return vec![dir.to_path_buf()];
    }
    let nested: Vec<PathBuf> = [dir.join("addons"), dir.join("experimental").join("addons")]
        .into_iter()
        .filter(|d| d.is_dir())
        .collect();
    if nested.is_empty() {
        vec![dir.to_path_buf()]
    } else {
        tracing::debug!(
            directory = %dir.display(),
            "a KubeVela catalog checkout: reading its `addons/` and `experimental/addons/`"
        );
        nested
    }
}

/// Whether a directory is one addon or holds addons directly under it.
fn holds_addons(dir: &std::path::Path) -> bool {
    if dir.join("metadata.yaml").is_file() {
        return true;
    }
    fs_err::read_dir(dir).is_ok_and(|entries| {
        entries
            .filter_map(std::result::Result::ok)
            .any(|e| e.path().join("metadata.yaml").is_file())
    })
}

/// A registry that could not be listed, as the error of a command that needed it: the
/// registry's name and the cause, and — unless the registry refused the credentials, which the
/// user fixes — not the user's error (exit 1), since a server error, a hang or a truncated index
/// is the registry's fault, not a missing addon.
pub fn registry_failure(registry: &str, error: source::Error) -> source::Error {
    use source::Error as E;
    match error {
        E::Unauthorized { .. } => error,
        other => {
            let text = other.to_string();
            let prefix = format!("registry `{registry}`: ");
            let cause = text.strip_prefix(&prefix).unwrap_or(&text);
            E::Backend {
                registry: registry.to_owned(),
                message: format!(
                    "cannot be read: {cause}; check it with `addonctl registry get {registry}` or try again later"
                ),
                source: None,
            }
        }
    }
}

#[cfg(test)]
mod tests;
