//! Why an addon directory could not be found, scaffolded, linted, packaged or indexed.

use std::path::PathBuf;

/// A registry author's (or a command line's) addon directory or archive is not usable.
#[derive(Debug, thiserror::Error)]
pub enum AuthoringError {
    /// A name that is not a DNS label.
    #[error("`{name}` is not a valid addon name: use lowercase letters, digits and single `-` between them")]
    InvalidName {
        /// The name given.
        name: String,
    },
    /// `init` into a directory that holds files.
    #[error("`{}` already exists and is not empty; choose another directory with `--dir`", dir.display())]
    DirNotEmpty {
        /// The directory.
        dir: PathBuf,
    },
    /// `package` of addons that lint finds errors in.
    #[error("lint found {} error{}; fix {} before packaging:\n  {}", errors.len(), if errors.len() == 1 { "" } else { "s" }, if errors.len() == 1 { "it" } else { "them" }, errors.join("\n  "))]
    LintFailed {
        /// The errors, one line each.
        errors: Vec<String>,
    },
    /// An addon directory without `metadata.yaml`.
    #[error("`{}` has no `metadata.yaml`; every addon needs one", dir.display())]
    NoMetadata {
        /// The directory.
        dir: PathBuf,
    },
    /// An addon's `metadata.yaml` cannot be read.
    #[error("`{}`: {reason}", file.display())]
    InvalidMetadata {
        /// The file.
        file: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A packaged addon's `metadata.yaml` cannot be read.
    #[error("`{archive}`: `metadata.yaml`: {reason}")]
    InvalidArchiveMetadata {
        /// The archive's file name.
        archive: String,
        /// What is wrong.
        reason: String,
    },
    /// A version Helm repositories cannot hold.
    #[error("addon `{addon}`: version `{version}` is not semver (`X.Y.Z`), which Helm repositories need")]
    NotSemver {
        /// The addon.
        addon: String,
        /// Its version.
        version: String,
    },
    /// The index to merge has `entries` of the wrong shape.
    #[error("`{}`: `entries` must be a mapping of chart names to versions", file.display())]
    EntriesNotMapping {
        /// The index.
        file: PathBuf,
    },
    /// The index could not be encoded.
    #[error("cannot write the index: {reason}")]
    IndexNotWritten {
        /// What failed.
        reason: String,
    },
    /// A file that is not valid YAML.
    #[error("`{file}` is not valid YAML: {reason}")]
    InvalidYaml {
        /// The file, as shown.
        file: String,
        /// What the parser said.
        reason: String,
    },
}
