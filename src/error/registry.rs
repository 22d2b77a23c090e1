//! Why a registry could not be stored, changed or read from its definition file.

use std::path::PathBuf;

use crate::model::registry::{CONFIG_MAP, CONFIG_MAP_KEY};

/// A registry operation refused or failed on what it was given or found (the user's to fix).
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// `registry add` of a name that is taken.
    #[error("registry `{name}` already exists; change it with `addonctl registry update {name}`")]
    Exists {
        /// The registry.
        name: String,
    },
    /// A command names a registry that is not stored.
    #[error("registry `{name}` does not exist; add it with `addonctl registry add {name}`")]
    NotFound {
        /// The registry.
        name: String,
    },
    /// A registry to store has no endpoint.
    #[error("registry `{name}` needs `--endpoint`")]
    NeedsEndpoint {
        /// The registry.
        name: String,
    },
    /// A registry to store cannot be listed: nothing was stored.
    #[error("registry `{name}` does not work: {reason}\nnothing was stored; check the settings, or store it anyway with `--no-validate`")]
    DoesNotWork {
        /// The registry.
        name: String,
        /// Why (the reader's error).
        reason: String,
    },
    /// The registry was removed by another command while this one changed it.
    #[error("registry `{name}` does not exist")]
    Removed {
        /// The registry.
        name: String,
    },
    /// The stored registry list is not a JSON map.
    #[error(
        "the registry list (`{CONFIG_MAP}` key `{CONFIG_MAP_KEY}`) is not a JSON map: {reason}"
    )]
    ListNotMap {
        /// What the parser said.
        reason: String,
    },
    /// The registry ConfigMap changed under every retry.
    #[error("ConfigMap `{namespace}/{CONFIG_MAP}` kept changing while it was written ({attempts} attempts); nothing was changed: try again")]
    StoreContended {
        /// Its namespace.
        namespace: String,
        /// How many writes were tried.
        attempts: u32,
    },
    /// The registry was stored, its credential Secret was not.
    #[error("registry `{name}` was stored but its credentials were not ({reason}); set them again with `addonctl registry update {name}`")]
    CredentialsNotStored {
        /// The registry.
        name: String,
        /// What failed.
        reason: String,
    },
    /// The local registry file is not what addonctl writes.
    #[error("`{}` is not a valid registry file: {reason}", path.display())]
    InvalidFile {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        reason: String,
    },
    /// The registry list could not be encoded.
    #[error("{0}")]
    Encode(#[from] serde_json::Error),
    /// A definition file's `registries` is not a list.
    #[error("`{file}`: `registries` must be a list")]
    RegistriesNotList {
        /// The file.
        file: String,
    },
    /// A definition file holds neither a definition nor a list of them.
    #[error("`{file}` holds no registry definition")]
    NoDefinition {
        /// The file.
        file: String,
    },
    /// An entry of a definition file is not a registry definition.
    #[error("`{file}`: not a registry definition: {reason}")]
    NotDefinition {
        /// The file.
        file: String,
        /// What the parser said.
        reason: String,
    },
    /// A definition file refers to an environment variable that is not set.
    #[error("`{file}` needs the environment variable `{variable}`; set it (the file's comments say to what) and try again")]
    MissingVariable {
        /// The file.
        file: String,
        /// The variable.
        variable: String,
    },
}
