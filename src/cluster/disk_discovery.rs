//! Discovery kept on disk across runs, as kubectl keeps it: one file per group version under
//! `<cache root>/discovery/<host>/`, each holding the server's `gitVersion` it was read from.
//! An entry whose version differs from the server's, that cannot be parsed, or that is larger
//! than [`MAX_ENTRY_BYTES`] is ignored (and rewritten after the next read from the server); a
//! kind an entry does not list is looked up on the server once more (see `discovery.rs`).
//! The server's version itself is kept beside the entries for [`VERSION_REUSE`]: a run within
//! that time of the last one that asked trusts it without asking `/version` again (a server
//! upgraded meanwhile is noticed at most that much later, as kubectl's time-limited cache
//! notices it).
//! Writes are atomic (temporary file and rename); a cache that cannot be written is logged
//! and ignored, never an error.

use std::path::{Path, PathBuf};

use kube::core::ApiResource;
use kube::discovery::{ApiCapabilities, Scope};
use serde::{Deserialize, Serialize};

use crate::source::cache::{create_private_dir, key_hash, write_atomically};

/// The largest entry read or written (a group version of a few hundred kinds fits easily).
pub const MAX_ENTRY_BYTES: u64 = 1024 * 1024;

/// The most entries kept per server: past it, new group versions are not written.
pub const MAX_ENTRIES: usize = 512;

/// How long the server's version read by one run is trusted by the next ones.
pub const VERSION_REUSE: std::time::Duration = std::time::Duration::from_secs(300);

/// The file (in a server's directory) holding its version as last read.
const VERSION_FILE: &str = "server-version";

/// The largest version file read (a `gitVersion` is a few dozen bytes).
const MAX_VERSION_BYTES: u64 = 256;

/// Where one server's discovery lives on disk.
#[derive(Debug, Clone)]
pub struct DiscoveryCache {
    root: PathBuf,
    dir: PathBuf,
}

/// One resource of a group version, as stored.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
struct StoredResource {
    resource: ApiResource,
    namespaced: bool,
    verbs: Vec<String>,
    #[serde(default)]
    subresources: Vec<StoredResource>,
}

/// One group version's entry.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    server_version: String,
    /// `None`: the server does not serve this group version.
    resources: Option<Vec<StoredResource>>,
}

type Resources = Vec<(ApiResource, ApiCapabilities)>;

impl DiscoveryCache {
    /// The cache of the server at `server` (its URL) under the cache root `root`.
    pub fn new(root: &Path, server: &str) -> Self {
        DiscoveryCache {
            root: root.to_path_buf(),
            dir: root.join("discovery").join(host_dir(server)),
        }
    }

    /// The cache root it was made with.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory of this server's entries.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The server's version as a run read it less than [`VERSION_REUSE`] ago.
    pub fn recent_version(&self) -> Option<String> {
        let path = self.dir.join(VERSION_FILE);
        let metadata = std::fs::metadata(&path).ok()?;
        let age = metadata.modified().ok()?.elapsed().ok()?;
        if age >= VERSION_REUSE || metadata.len() > MAX_VERSION_BYTES {
            return None;
        }
        let text = fs_err::read_to_string(&path).ok()?;
        let version = text.trim();
        (!version.is_empty()).then(|| version.to_owned())
    }

    /// Keeps the server's version as just read (failures are logged, never returned).
    pub fn remember_version(&self, version: &str) {
        let written = create_private_dir(&self.dir)
            .and_then(|()| write_atomically(&self.dir.join(VERSION_FILE), version.as_bytes()));
        if let Err(e) = written {
            tracing::debug!(
                "cannot write the discovery cache in {}: {e}",
                self.dir.display()
            );
        }
    }

    /// The stored resources of a group version read from a server of version
    /// `server_version` (`Some(None)`: stored as not served); `None` when nothing usable is
    /// stored.
    #[allow(clippy::option_option)] // not stored / stored as not served / stored resources
    pub fn load(
        &self,
        group: &str,
        version: &str,
        server_version: &str,
    ) -> Option<Option<Resources>> {
        let path = self.dir.join(file_name(group, version));
        let file = std::fs::File::open(&path).ok()?;
        let size = file.metadata().ok()?.len();
        if size > MAX_ENTRY_BYTES {
            tracing::debug!(
                "ignoring the oversized discovery cache entry {}",
                path.display()
            );
            return None;
        }
        let entry: Entry = match serde_json::from_reader(std::io::BufReader::new(file)) {
            Ok(entry) => entry,
            Err(e) => {
                tracing::debug!(
                    "ignoring the unreadable discovery cache entry {}: {e}",
                    path.display()
                );
                return None;
            }
        };
        if entry.server_version != server_version {
            return None;
        }
        let resources = entry.resources.map(|stored| {
            stored
                .into_iter()
                .filter(|r| r.resource.group == group && r.resource.version == version)
                .map(StoredResource::into_pair)
                .collect()
        });
        Some(resources)
    }

    /// Stores a group version's resources (`None`: not served) read from a server of version
    /// `server_version`. Failures are logged, never returned.
    pub fn store(
        &self,
        group: &str,
        version: &str,
        server_version: &str,
        resources: Option<&[(ApiResource, ApiCapabilities)]>,
    ) {
        if let Err(e) = self.try_store(group, version, server_version, resources) {
            tracing::debug!(
                "cannot write the discovery cache in {}: {e}",
                self.dir.display()
            );
        }
    }

    fn try_store(
        &self,
        group: &str,
        version: &str,
        server_version: &str,
        resources: Option<&[(ApiResource, ApiCapabilities)]>,
    ) -> std::io::Result<()> {
        let entry = Entry {
            server_version: server_version.to_owned(),
            resources: resources.map(|r| r.iter().map(StoredResource::from_pair).collect()),
        };
        let bytes = serde_json::to_vec(&entry).map_err(std::io::Error::other)?;
        if bytes.len() as u64 > MAX_ENTRY_BYTES {
            return Err(std::io::Error::other(format!(
                "the entry of {group}/{version} is {} bytes, more than the cap of {MAX_ENTRY_BYTES}",
                bytes.len()
            )));
        }
        create_private_dir(&self.dir)?;
        let path = self.dir.join(file_name(group, version));
        if !path.exists() && entries(&self.dir) >= MAX_ENTRIES {
            return Err(std::io::Error::other(format!(
                "{MAX_ENTRIES} entries already; not adding {group}/{version}"
            )));
        }
        write_atomically(&path, &bytes)
    }
}

fn entries(dir: &Path) -> usize {
    fs_err::read_dir(dir).map_or(0, |d| {
        d.filter_map(std::result::Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
            .count()
    })
}

impl StoredResource {
    fn from_pair((resource, caps): &(ApiResource, ApiCapabilities)) -> Self {
        StoredResource {
            resource: resource.clone(),
            namespaced: caps.scope == Scope::Namespaced,
            verbs: caps.operations.clone(),
            subresources: caps.subresources.iter().map(Self::from_pair).collect(),
        }
    }

    fn into_pair(self) -> (ApiResource, ApiCapabilities) {
        let caps = ApiCapabilities {
            scope: if self.namespaced {
                Scope::Namespaced
            } else {
                Scope::Cluster
            },
            subresources: self.subresources.into_iter().map(Self::into_pair).collect(),
            operations: self.verbs,
        };
        (self.resource, caps)
    }
}

/// A file-name-safe directory for a server: its host and port, characters other than
/// `[A-Za-z0-9.-]` replaced, plus a hash of the whole URL (two servers behind one host differ).
fn host_dir(server: &str) -> String {
    let host = server
        .split_once("://")
        .map_or(server, |(_, rest)| rest)
        .split('/')
        .next()
        .unwrap_or_default();
    format!("{}_{}", safe(host, 64), &key_hash(server)[..12])
}

/// A file-name-safe entry name for a group version.
fn file_name(group: &str, version: &str) -> String {
    let group = if group.is_empty() { "core" } else { group };
    format!(
        "{}_{}_{}.json",
        safe(group, 80),
        safe(version, 32),
        &key_hash(&format!("{group}/{version}"))[..8]
    )
}

fn safe(text: &str, max: usize) -> String {
    text.chars()
        .take(max)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect::<String>()
        .trim_start_matches('.')
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployments() -> Vec<(ApiResource, ApiCapabilities)> {
        let gvk = kube::core::GroupVersionKind::gvk("apps", "v1", "Deployment");
        vec![(
            ApiResource::from_gvk_with_plural(&gvk, "deployments"),
            ApiCapabilities {
                scope: Scope::Namespaced,
                subresources: Vec::new(),
                operations: vec!["get".into(), "patch".into()],
            },
        )]
    }

    #[test]
    fn entries_round_trip_for_the_same_server_version_only() {
        let root = tempfile::tempdir().unwrap();
        let cache = DiscoveryCache::new(root.path(), "https://127.0.0.1:6443");
        assert!(cache.load("apps", "v1", "v1.20.2").is_none());
        cache.store("apps", "v1", "v1.20.2", Some(&deployments()));
        let loaded = cache.load("apps", "v1", "v1.20.2").unwrap().unwrap();
        assert_eq!(loaded.len(), 1);
        assert_eq!(loaded[0].0.plural, "deployments");
        assert_eq!(loaded[0].1.scope, Scope::Namespaced);
        assert!(loaded[0].1.supports_operation("patch"));
        // Another server version: the entry is stale.
        assert!(cache.load("apps", "v1", "v1.21.0").is_none());
        // Not served is remembered too.
        cache.store("example.com", "v1", "v1.20.2", None);
        assert!(cache
            .load("example.com", "v1", "v1.20.2")
            .unwrap()
            .is_none());
    }

    #[test]
    fn corrupt_and_oversized_entries_are_ignored() {
        let root = tempfile::tempdir().unwrap();
        let cache = DiscoveryCache::new(root.path(), "https://127.0.0.1:6443");
        cache.store("apps", "v1", "v1.20.2", Some(&deployments()));
        let path = cache.dir().join(file_name("apps", "v1"));
        fs_err::write(&path, b"{\"server_version\": \"v1.20.2\", \"resou").unwrap();
        assert!(cache.load("apps", "v1", "v1.20.2").is_none());
        let big = vec![b' '; usize::try_from(MAX_ENTRY_BYTES).unwrap() + 1];
        fs_err::write(&path, big).unwrap();
        assert!(cache.load("apps", "v1", "v1.20.2").is_none());
        // Rewritten after the next read from the server.
        cache.store("apps", "v1", "v1.20.2", Some(&deployments()));
        assert!(cache.load("apps", "v1", "v1.20.2").unwrap().is_some());
    }

    #[test]
    fn the_server_version_is_trusted_for_a_while_after_it_was_read() {
        let root = tempfile::tempdir().unwrap();
        let cache = DiscoveryCache::new(root.path(), "https://127.0.0.1:6443");
        assert_eq!(cache.recent_version(), None);
        cache.remember_version("v1.20.2");
        assert_eq!(cache.recent_version().as_deref(), Some("v1.20.2"));
        // Older than the reuse time: asked again.
        let old = std::time::SystemTime::now() - VERSION_REUSE - std::time::Duration::from_secs(1);
        let file = std::fs::File::options()
            .write(true)
            .open(cache.dir().join(VERSION_FILE))
            .unwrap();
        file.set_modified(old).unwrap();
        assert_eq!(cache.recent_version(), None);
        // Not an entry: the cap counts group versions only.
        assert_eq!(entries(cache.dir()), 0);
    }

    #[test]
    fn the_number_of_entries_is_capped() {
        let root = tempfile::tempdir().unwrap();
        let cache = DiscoveryCache::new(root.path(), "https://127.0.0.1:6443");
        for i in 0..MAX_ENTRIES {
            cache.store(&format!("g{i}.example.com"), "v1", "v1", None);
        }
        cache.store("one-more.example.com", "v1", "v1", None);
        assert!(cache.load("one-more.example.com", "v1", "v1").is_none());
        assert_eq!(entries(cache.dir()), MAX_ENTRIES);
        // Existing entries are still rewritten.
        cache.store("g0.example.com", "v1", "v2", None);
        assert!(cache.load("g0.example.com", "v1", "v2").is_some());
    }

    #[test]
    fn names_are_file_name_safe() {
        let dir = host_dir("https://../../etc:443/some/path");
        assert!(!dir.contains('/') && !dir.starts_with('.'), "{dir}");
        let name = file_name("../x/y", "v1/../..");
        assert!(!name.contains('/') && !name.starts_with('.'), "{name}");
        assert_ne!(file_name("a_b", "v1"), file_name("a.b", "v1"));
        assert_ne!(host_dir("https://h:1/a"), host_dir("https://h:1/b"));
    }
}
