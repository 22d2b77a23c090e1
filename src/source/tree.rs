//! An index of the addons in a tree of directories, shared by the local and built-in readers.

use std::collections::BTreeMap;

use crate::model::{AddonMeta, AddonVersion};
use crate::source::{AddonRef, AddonSummary, Error, Result};

/// Where one addon lives in the tree and which version it is.
#[derive(Debug, Clone)]
pub(crate) struct IndexEntry {
    /// The addon's directory relative to the root (`""` when the root is the addon).
    pub dir: String,
    /// The version in its `metadata.yaml`.
    pub version: AddonVersion,
    /// Its description.
    pub description: Option<String>,
    /// Its tags.
    pub tags: Vec<String>,
}

/// Addon name → where it lives.
#[derive(Debug, Clone, Default)]
pub(crate) struct Index {
    pub addons: BTreeMap<String, IndexEntry>,
    /// Directories skipped because their `metadata.yaml` cannot be read → why.
    pub skipped: BTreeMap<String, String>,
}

impl Index {
    /// Builds the index from `(directory, metadata.yaml text)` pairs, in directory order.
    /// Directories whose metadata cannot be read are skipped with a warning in the log, and
    /// named with the reason when the addon is looked up.
    pub fn build(registry: &str, candidates: impl IntoIterator<Item = (String, String)>) -> Self {
        let mut addons = BTreeMap::new();
        let mut skipped = BTreeMap::new();
        for (dir, text) in candidates {
            let shown = if dir.is_empty() { "." } else { dir.as_str() };
            match AddonMeta::parse(&text) {
                Ok((meta, _)) => {
                    if let Some(existing) = addons.get(&meta.name) {
                        let existing: &IndexEntry = existing;
                        tracing::warn!(
                            registry,
                            "addon `{}` appears in `{}` and `{shown}`; using `{}`",
                            meta.name,
                            existing.dir,
                            existing.dir
                        );
                        continue;
                    }
                    addons.insert(
                        meta.name.clone(),
                        IndexEntry {
                            dir,
                            version: meta.version,
                            description: meta.description,
                            tags: meta.tags,
                        },
                    );
                }
                Err(e) => {
                    tracing::warn!(registry, "skipping `{shown}`: {e}");
                    skipped.insert(dir, e.to_string());
                }
            }
        }
        Index { addons, skipped }
    }

    /// The listing, sorted by name.
    pub fn summaries(&self) -> Vec<AddonSummary> {
        self.addons
            .iter()
            .map(|(name, entry)| AddonSummary {
                name: name.clone(),
                versions: vec![entry.version.raw().to_owned()],
                description: entry.description.clone(),
                tags: entry.tags.clone(),
            })
            .collect()
    }

    /// Finds the directory of an addon version.
    pub fn lookup(&self, registry: &str, addon: &AddonRef) -> Result<&IndexEntry> {
        let skipped = self
            .skipped
            .get(&addon.name)
            .map(|why| (format!("{}/metadata.yaml", addon.name), why))
            .or_else(|| {
                self.skipped
                    .get("")
                    .map(|why| ("metadata.yaml".to_owned(), why))
            });
        let entry = self.addons.get(&addon.name).ok_or_else(|| match skipped {
            Some((file, why)) => Error::InvalidContent {
                registry: registry.to_owned(),
                message: format!(
                    "`{file}` is not valid, so addon `{}` cannot be read: {why}",
                    addon.name
                ),
            },
            None => Error::NotFound {
                registry: registry.to_owned(),
                what: format!("addon `{}`", addon.name),
            },
        })?;
        if let Some(version) = &addon.version {
            if !entry.version.same_as(version) {
                return Err(Error::NotFound {
                    registry: registry.to_owned(),
                    what: format!(
                        "version `{version}` of addon `{}` (available: `{}`)",
                        addon.name, entry.version
                    ),
                });
            }
        }
        Ok(entry)
    }
}

/// Joins an addon directory and a relative path.
pub(crate) fn join(dir: &str, path: &str) -> String {
    if dir.is_empty() {
        path.to_owned()
    } else {
        format!("{dir}/{path}")
    }
}
