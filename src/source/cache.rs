//! The on-disk cache shared by remote readers, across runs.
//!
//! Layout: `<root>/registries/<hash of the registry URL>/<key>` (a body) plus `<key>.meta.json`
//! (its `ETag` and `Last-Modified`, for conditional requests), and `<root>/git/<hash>` for git
//! clones. `<root>` is `$ADDONCTL_CACHE_DIR`, else `$XDG_CACHE_HOME/addonctl`, else
//! `~/.cache/addonctl`. Directories are created private (0700). Writes go to a temporary file that
//! is renamed into place, so a reader never sees half an entry; a cache that cannot be written is
//! logged and ignored, never an error. Within one run the readers keep what they fetched in
//! memory; [`CacheOptions::refresh`] makes them ignore what is on disk (it is still rewritten).

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Where the cache lives and whether to trust it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CacheOptions {
    /// The cache root; `None` = the default location ([`default_root`]).
    pub root: Option<PathBuf>,
    /// Ignore cached entries (fetch everything again, then update the cache).
    pub refresh: bool,
    /// Do not use a disk cache at all.
    pub disabled: bool,
}

impl CacheOptions {
    /// No disk cache.
    pub fn off() -> Self {
        CacheOptions {
            disabled: true,
            ..CacheOptions::default()
        }
    }
}

/// The default cache root: `$ADDONCTL_CACHE_DIR`, `$XDG_CACHE_HOME/addonctl` or
/// `~/.cache/addonctl`; `None` when none can be determined.
pub fn default_root() -> Option<PathBuf> {
    let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = non_empty("ADDONCTL_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = non_empty("XDG_CACHE_HOME") {
        return Some(PathBuf::from(dir).join("addonctl"));
    }
    non_empty("HOME").map(|home| PathBuf::from(home).join(".cache").join("addonctl"))
}

/// A short, stable, file-name-safe hash of a text (hex SHA-256, 24 characters).
pub fn key_hash(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    hex(&digest[..12])
}

/// Lowercase hexadecimal of some bytes.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
}

/// One cached body with its validators.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct CachedEntry {
    /// The body.
    #[serde(skip)]
    pub body: Vec<u8>,
    /// The `ETag` it was served with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    /// The `Last-Modified` it was served with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

impl CachedEntry {
    /// The validators without the body.
    fn clone_meta(&self) -> CachedEntry {
        CachedEntry {
            body: Vec::new(),
            etag: self.etag.clone(),
            last_modified: self.last_modified.clone(),
        }
    }
}

/// What is stored next to a cached body: its validators and its digest.
#[derive(serde::Serialize, serde::Deserialize)]
struct StoredMeta {
    #[serde(flatten)]
    entry: CachedEntry,
    /// SHA-256 of the body (hex); absent in entries written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sha256: Option<String>,
}

/// The cache directory of one registry (or of one git clone).
#[derive(Debug, Clone)]
pub struct DiskCache {
    dir: Option<PathBuf>,
    refresh: bool,
}

impl DiskCache {
    /// The cache of the registry at `url` (`kind` is `registries` or `git`).
    pub fn new(options: &CacheOptions, kind: &str, url: &str) -> Self {
        let dir = if options.disabled {
            None
        } else {
            options
                .root
                .clone()
                .or_else(default_root)
                .map(|root| root.join(kind).join(key_hash(url)))
        };
        DiskCache {
            dir,
            refresh: options.refresh,
        }
    }

    /// A cache that stores nothing.
    pub fn disabled() -> Self {
        DiskCache {
            dir: None,
            refresh: false,
        }
    }

    /// The directory, when caching is on.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Whether cached entries are to be ignored.
    pub fn refresh(&self) -> bool {
        self.refresh
    }

    /// Creates the directory (private) and returns it.
    pub fn ensure_dir(&self) -> Option<&Path> {
        let dir = self.dir.as_deref()?;
        if let Err(e) = create_private_dir(dir) {
            tracing::warn!("cannot create the cache directory `{}`: {e}", dir.display());
            return None;
        }
        Some(dir)
    }

    /// The entry stored under `key`, unless refreshing or absent. An entry whose body does not
    /// match the digest stored with it (a write cut short, a file changed on disk) is removed
    /// and not returned.
    pub fn load(&self, key: &str) -> Option<CachedEntry> {
        if self.refresh {
            return None;
        }
        let dir = self.dir.as_deref()?;
        let body = fs_err::read(dir.join(key)).ok()?;
        let meta = fs_err::read_to_string(dir.join(format!("{key}.meta.json"))).ok()?;
        let stored: StoredMeta = serde_json::from_str(&meta).ok()?;
        if stored
            .sha256
            .is_some_and(|digest| digest != hex(&Sha256::digest(&body)))
        {
            tracing::debug!("the cached `{key}` does not match its digest; dropped");
            self.remove(key);
            return None;
        }
        let mut entry = stored.entry;
        entry.body = body;
        Some(entry)
    }

    /// Stores an entry under `key` (best effort).
    pub fn store(&self, key: &str, entry: &CachedEntry) {
        let Some(dir) = self.ensure_dir() else {
            return;
        };
        let result = (|| -> std::io::Result<()> {
            let meta = serde_json::to_vec(&StoredMeta {
                entry: entry.clone_meta(),
                sha256: Some(hex(&Sha256::digest(&entry.body))),
            })
            .map_err(std::io::Error::other)?;
            write_atomically(&dir.join(key), &entry.body)?;
            write_atomically(&dir.join(format!("{key}.meta.json")), &meta)
        })();
        if let Err(e) = result {
            tracing::warn!("cannot write the cache in `{}`: {e}", dir.display());
        }
    }
}

impl DiskCache {
    /// Removes the entry stored under `key` (best effort): a cached body that turned out to be
    /// unusable, so that the next request is not conditional on it.
    pub fn remove(&self, key: &str) {
        let Some(dir) = self.dir.as_deref() else {
            return;
        };
        for path in [dir.join(key), dir.join(format!("{key}.meta.json"))] {
            if let Err(e) = fs_err::remove_file(&path) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    tracing::debug!("cannot remove `{}` from the cache: {e}", path.display());
                }
            }
        }
    }

    /// Removes the entries whose key starts with `prefix`, except `keep` (best effort): older
    /// archives of a repository once a newer one is stored.
    pub fn remove_others(&self, prefix: &str, keep: &str) {
        let Some(dir) = self.dir.as_deref() else {
            return;
        };
        let Ok(entries) = fs_err::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let key = name.strip_suffix(".meta.json").unwrap_or(&name);
            if key.starts_with(prefix) && key != keep {
                if let Err(e) = fs_err::remove_file(entry.path()) {
                    tracing::debug!(
                        "cannot remove `{}` from the cache: {e}",
                        entry.path().display()
                    );
                }
            }
        }
    }
}

/// Creates a directory and its parents, private to the user.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    fs_err::create_dir_all(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs_err::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Writes a file through a temporary sibling and a rename.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temporary = path.with_file_name(format!(".{file_name}.{}.tmp", std::process::id()));
    fs_err::write(&temporary, bytes)?;
    fs_err::rename(&temporary, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_refresh_ignores_them() {
        let root = tempfile::tempdir().unwrap();
        let options = CacheOptions {
            root: Some(root.path().to_path_buf()),
            ..CacheOptions::default()
        };
        let cache = DiskCache::new(&options, "registries", "https://example.invalid/charts");
        assert!(cache.load("index.yaml").is_none());
        let entry = CachedEntry {
            body: b"apiVersion: v1".to_vec(),
            etag: Some("\"abc\"".into()),
            last_modified: None,
        };
        cache.store("index.yaml", &entry);
        assert_eq!(cache.load("index.yaml"), Some(entry.clone()));
        let refreshing = DiskCache::new(
            &CacheOptions {
                refresh: true,
                ..options
            },
            "registries",
            "https://example.invalid/charts",
        );
        assert!(refreshing.load("index.yaml").is_none());
        assert_eq!(key_hash("x").len(), 24);

        cache.store("archive-a.tar.gz", &entry);
        cache.store("archive-b.tar.gz", &entry);
        cache.remove_others("archive-", "archive-b.tar.gz");
        assert!(cache.load("archive-a.tar.gz").is_none());
        assert!(cache.load("archive-b.tar.gz").is_some());
        assert!(cache.load("index.yaml").is_some());

        // A body changed on disk no longer matches its digest: dropped.
        let dir = cache.dir().unwrap().to_path_buf();
        fs_err::write(dir.join("index.yaml"), b"apiVersion: v").unwrap();
        assert!(cache.load("index.yaml").is_none());
        assert!(!dir.join("index.yaml").exists());
        assert!(!dir.join("index.yaml.meta.json").exists());
    }
}
