//! The built-in registry: this repository's `addons/`, embedded in the binary at build time, so
//! addonctl works offline out of the box. It is always searched last.

use std::fmt;
use std::sync::LazyLock;

use async_trait::async_trait;
use include_dir::{include_dir, Dir, DirEntry};

use crate::source::tree::{join, Index};
use crate::source::{
    check_relative_path, AddonRef, AddonSummary, AsyncReader, Error, FileEntry, Result,
};

/// The registry name of the built-in addons.
pub use crate::model::registry::BUILTIN_REGISTRY;

static ADDONS: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/addons");

static INDEX: LazyLock<Index> = LazyLock::new(|| {
    let candidates = ADDONS.dirs().filter_map(|dir| {
        let name = dir.path().to_str()?.to_owned();
        let text = dir
            .get_file(dir.path().join("metadata.yaml"))?
            .contents_utf8()?
            .to_owned();
        Some((name, text))
    });
    Index::build(BUILTIN_REGISTRY, candidates)
});

/// Reads the addons embedded in the binary.
#[derive(Debug, Clone, Copy, Default)]
pub struct BuiltinReader;

impl BuiltinReader {
    /// The built-in registry.
    pub fn new() -> Self {
        BuiltinReader
    }

    fn addon_dir(addon: &AddonRef) -> Result<&'static Dir<'static>> {
        let entry = INDEX.lookup(BUILTIN_REGISTRY, addon)?;
        ADDONS.get_dir(&entry.dir).ok_or_else(|| Error::NotFound {
            registry: BUILTIN_REGISTRY.to_owned(),
            what: format!("addon `{}`", addon.name),
        })
    }
}

fn collect(dir: &'static Dir<'static>, base: &str, out: &mut Vec<FileEntry>) {
    for entry in dir.entries() {
        match entry {
            DirEntry::Dir(d) => collect(d, base, out),
            DirEntry::File(f) => {
                let Some(path) = f.path().to_str() else {
                    continue;
                };
                let rel = path
                    .strip_prefix(base)
                    .unwrap_or(path)
                    .trim_start_matches('/');
                if rel.split('/').any(|s| s.starts_with('.')) {
                    continue;
                }
                out.push(FileEntry {
                    path: rel.to_owned(),
                    size: f.contents().len() as u64,
                });
            }
        }
    }
}

impl fmt::Display for BuiltinReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("built-in registry")
    }
}

#[async_trait]
impl AsyncReader for BuiltinReader {
    fn registry(&self) -> &str {
        BUILTIN_REGISTRY
    }

    async fn list_addons(&self) -> Result<Vec<AddonSummary>> {
        Ok(INDEX.summaries())
    }

    async fn list_files(&self, addon: &AddonRef) -> Result<Vec<FileEntry>> {
        let dir = Self::addon_dir(addon)?;
        let base = dir.path().to_str().unwrap_or_default();
        let mut out = Vec::new();
        collect(dir, base, &mut out);
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }

    async fn read_file(&self, addon: &AddonRef, path: &str) -> Result<Vec<u8>> {
        check_relative_path(BUILTIN_REGISTRY, path)?;
        let dir = Self::addon_dir(addon)?;
        let base = dir.path().to_str().unwrap_or_default();
        ADDONS
            .get_file(join(base, path))
            .map(|f| f.contents().to_vec())
            .ok_or_else(|| Error::NotFound {
                registry: BUILTIN_REGISTRY.to_owned(),
                what: format!("file `{path}` of addon `{}`", addon.name),
            })
    }
}
