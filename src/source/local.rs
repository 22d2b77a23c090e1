//! A registry in a local directory: either one addon (the directory holds `metadata.yaml`) or a
//! directory of addons (each sub-directory holding one).
//!
//! Symbolic links are followed only while they stay inside the root; one that points outside is
//! skipped with a warning (an error in `lint`) and refused by [`AsyncReader::read_file`]. Hidden entries (`.git`, …)
//! are ignored.

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::OnceCell;

use crate::model::registry::RegistrySpec;
use crate::source::tree::{join, Index};
use crate::source::{
    check_relative_path, AddonRef, AddonSummary, AsyncReader, Error, FileEntry, Result,
    MAX_FILES_PER_ADDON, MAX_FILE_SIZE,
};

/// The registry name of addons read from a local directory.
pub use crate::model::registry::LOCAL_REGISTRY;

/// Reads addons from a directory.
#[derive(Debug, Clone)]
pub struct LocalReader {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    root: PathBuf,
    registry: String,
    index: OnceCell<Index>,
}

impl LocalReader {
    /// The reader of a stored local registry: its endpoint (joined with its path, if any),
    /// under the registry's name.
    pub fn from_spec(spec: &RegistrySpec) -> Result<Self> {
        let dir = Path::new(&spec.endpoint);
        let dir = match &spec.path {
            Some(path) => dir.join(path),
            None => dir.to_path_buf(),
        };
        Self::with_registry(dir, &spec.name)
    }

    /// Opens `root` under the registry name `local`. Fails when it is not a readable directory.
    pub fn new(root: impl AsRef<Path>) -> Result<Self> {
        Self::with_registry(root, LOCAL_REGISTRY)
    }

    /// Opens `root` under a given registry name.
    pub fn with_registry(root: impl AsRef<Path>, registry: &str) -> Result<Self> {
        let shown = root.as_ref().display().to_string();
        let root = fs_err::canonicalize(root.as_ref()).map_err(|e| Error::NotFound {
            registry: registry.to_owned(),
            what: format!("directory `{shown}` ({})", io_reason(&e)),
        })?;
        if !root.is_dir() {
            return Err(Error::InvalidPath {
                registry: registry.to_owned(),
                path: shown,
                reason: "it is not a directory".to_owned(),
            });
        }
        Ok(LocalReader {
            inner: Arc::new(Inner {
                root,
                registry: registry.to_owned(),
                index: OnceCell::new(),
            }),
        })
    }

    /// The canonical root directory.
    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    /// Reads every file under the root whose relative path `wanted` accepts, with the same limits
    /// as [`AsyncReader::read_file`], without requiring a valid `metadata.yaml` (for `lint`).
    pub async fn read_tree(&self, wanted: fn(&str) -> bool) -> Result<Vec<(String, Vec<u8>)>> {
        Ok(self.read_tree_checked(wanted).await?.0)
    }

    /// [`LocalReader::read_tree`], plus the entries skipped because they link outside the root
    /// or cannot be resolved (`path: why`), which `lint` reports as errors.
    pub async fn read_tree_checked(
        &self,
        wanted: fn(&str) -> bool,
    ) -> Result<(Vec<(String, Vec<u8>)>, Vec<String>)> {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || {
            let mut files = Vec::new();
            let mut seen = HashSet::from([inner.root.clone()]);
            let mut skipped = Vec::new();
            inner.walk(&inner.root, "", &mut files, &mut seen, &mut skipped)?;
            let read = files
                .into_iter()
                .filter(|f| wanted(&f.path))
                .map(|f| {
                    let bytes = inner.read_bounded(&inner.root.join(&f.path))?;
                    Ok((f.path, bytes))
                })
                .collect::<Result<Vec<_>>>()?;
            Ok((read, skipped))
        })
        .await
        .map_err(|e| backend(&self.inner.registry, "reading failed", e))?
    }

    async fn index(&self) -> Result<&Index> {
        self.inner
            .index
            .get_or_try_init(|| async {
                let inner = Arc::clone(&self.inner);
                tokio::task::spawn_blocking(move || inner.build_index())
                    .await
                    .map_err(|e| backend(&self.inner.registry, "indexing failed", e))?
            })
            .await
    }

    /// The directory of `addon` (relative to the root), from the index.
    async fn addon_dir(&self, addon: &AddonRef) -> Result<String> {
        let index = self.index().await?;
        Ok(index.lookup(&self.inner.registry, addon)?.dir.clone())
    }
}

impl Inner {
    fn build_index(&self) -> Result<Index> {
        let root_meta = self.root.join("metadata.yaml");
        let mut candidates = Vec::new();
        if root_meta.is_file() {
            candidates.push((String::new(), self.read_text(&root_meta)?));
        } else {
            let mut dirs: Vec<_> = fs_err::read_dir(&self.root)
                .map_err(|e| backend(&self.registry, "cannot list the directory", e))?
                .filter_map(std::result::Result::ok)
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .map(|e| e.path())
                .filter(|p| p.join("metadata.yaml").is_file() && self.inside_root(p))
                .collect();
            dirs.sort();
            for dir in dirs {
                let Some(name) = dir.file_name().and_then(|n| n.to_str()).map(str::to_owned) else {
                    continue;
                };
                candidates.push((name, self.read_text(&dir.join("metadata.yaml"))?));
            }
        }
        Ok(Index::build(&self.registry, candidates))
    }

    fn inside_root(&self, path: &Path) -> bool {
        fs_err::canonicalize(path).is_ok_and(|p| p.starts_with(&self.root))
    }

    fn read_text(&self, path: &Path) -> Result<String> {
        let bytes = self.read_bounded(path)?;
        String::from_utf8(bytes).map_err(|_| Error::InvalidContent {
            registry: self.registry.clone(),
            message: format!("`{}` is not valid UTF-8", self.relative(path)),
        })
    }

    fn relative(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .display()
            .to_string()
    }

    fn read_bounded(&self, path: &Path) -> Result<Vec<u8>> {
        let canonical = fs_err::canonicalize(path).map_err(|e| self.io_error(path, &e))?;
        if !canonical.starts_with(&self.root) {
            return Err(Error::InvalidPath {
                registry: self.registry.clone(),
                path: self.relative(path),
                reason: "it resolves to a location outside the registry directory".to_owned(),
            });
        }
        let size = fs_err::metadata(&canonical)
            .map_err(|e| self.io_error(path, &e))?
            .len();
        if size > MAX_FILE_SIZE {
            return Err(Error::TooLarge {
                registry: self.registry.clone(),
                path: self.relative(path),
                size,
                limit: MAX_FILE_SIZE,
            });
        }
        fs_err::read(&canonical).map_err(|e| self.io_error(path, &e))
    }

    fn io_error(&self, path: &Path, e: &std::io::Error) -> Error {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::NotFound {
                registry: self.registry.clone(),
                what: format!("file `{}`", self.relative(path)),
            }
        } else {
            Error::Backend {
                registry: self.registry.clone(),
                message: format!("cannot read `{}`: {}", self.relative(path), io_reason(e)),
                source: None,
            }
        }
    }

    fn walk(
        &self,
        dir: &Path,
        rel: &str,
        out: &mut Vec<FileEntry>,
        seen: &mut HashSet<PathBuf>,
        skipped: &mut Vec<String>,
    ) -> Result<()> {
        let mut entries: Vec<_> = fs_err::read_dir(dir)
            .map_err(|e| self.io_error(dir, &e))?
            .filter_map(std::result::Result::ok)
            .collect();
        entries.sort_by_key(fs_err::DirEntry::file_name);
        for entry in entries {
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                tracing::warn!(registry = %self.registry, "skipping a file whose name is not UTF-8 in `{rel}`");
                continue;
            };
            if name.starts_with('.') {
                continue;
            }
            let path = entry.path();
            let child = join(rel, &name);
            let Ok(canonical) = fs_err::canonicalize(&path) else {
                tracing::warn!(registry = %self.registry, "skipping `{child}`: it cannot be resolved (a dangling link?)");
                skipped.push(format!("`{child}` cannot be resolved (a dangling link?)"));
                continue;
            };
            if !canonical.starts_with(&self.root) {
                tracing::warn!(registry = %self.registry, "skipping `{child}`: it links outside the registry directory");
                skipped.push(format!("`{child}` links outside the addon directory"));
                continue;
            }
            let Ok(meta) = fs_err::metadata(&canonical) else {
                continue;
            };
            if meta.is_dir() {
                if seen.insert(canonical.clone()) {
                    self.walk(&canonical, &child, out, seen, skipped)?;
                }
            } else if meta.is_file() {
                out.push(FileEntry {
                    path: child,
                    size: meta.len(),
                });
                if out.len() > MAX_FILES_PER_ADDON {
                    return Err(Error::InvalidContent {
                        registry: self.registry.clone(),
                        message: format!("an addon may have at most {MAX_FILES_PER_ADDON} files"),
                    });
                }
            }
        }
        Ok(())
    }
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".to_owned(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        _ => e.to_string(),
    }
}

fn backend(
    registry: &str,
    message: &str,
    e: impl std::error::Error + Send + Sync + 'static,
) -> Error {
    Error::Backend {
        registry: registry.to_owned(),
        message: format!("{message}: {e}"),
        source: Some(Box::new(e)),
    }
}

impl fmt::Display for LocalReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "local directory `{}`", self.inner.root.display())
    }
}

#[async_trait]
impl AsyncReader for LocalReader {
    fn registry(&self) -> &str {
        &self.inner.registry
    }

    async fn list_addons(&self) -> Result<Vec<AddonSummary>> {
        Ok(self.index().await?.summaries())
    }

    async fn list_files(&self, addon: &AddonRef) -> Result<Vec<FileEntry>> {
        let dir = self.addon_dir(addon).await?;
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || {
            let start = inner.root.join(&dir);
            let mut out = Vec::new();
            let mut seen = HashSet::from([
                fs_err::canonicalize(&start).map_err(|e| inner.io_error(&start, &e))?
            ]);
            inner.walk(&start, "", &mut out, &mut seen, &mut Vec::new())?;
            Ok(out)
        })
        .await
        .map_err(|e| backend(&self.inner.registry, "listing failed", e))?
    }

    async fn read_file(&self, addon: &AddonRef, path: &str) -> Result<Vec<u8>> {
        check_relative_path(&self.inner.registry, path)?;
        let dir = self.addon_dir(addon).await?;
        let inner = Arc::clone(&self.inner);
        let full = inner.root.join(dir).join(path);
        tokio::task::spawn_blocking(move || inner.read_bounded(&full))
            .await
            .map_err(|e| backend(&self.inner.registry, "reading failed", e))?
    }
}
