//! A fluent builder for throw-away addons on disk.

use std::path::{Path, PathBuf};

/// An addon written into a temporary directory.
pub struct TestAddon {
    dir: tempfile::TempDir,
    name: String,
}

impl TestAddon {
    /// A new addon `name` at version `1.0.0` with only `metadata.yaml`.
    pub fn new(name: &str) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let addon = TestAddon {
            dir,
            name: name.to_owned(),
        };
        addon.file("metadata.yaml", &format!("name: {name}\nversion: 1.0.0\n"))
    }

    /// Writes a file (parents created).
    pub fn file(self, path: &str, text: &str) -> Self {
        self.bytes(path, text.as_bytes())
    }

    /// Writes a file of raw bytes.
    pub fn bytes(self, path: &str, bytes: &[u8]) -> Self {
        let full = self.dir.path().join(path);
        std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
        std::fs::write(full, bytes).expect("write");
        self
    }

    /// The addon's directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The addon's directory as an owned path.
    pub fn path_buf(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }

    /// The addon's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}
