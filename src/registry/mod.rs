//! The registries addonctl searches: stored where KubeVela stores them, opened as readers.
//!
//! **Storage.** With a cluster, registries live in ConfigMap `vela-addon-registry` (key
//! `registries`, a JSON map of name → registry) in the system namespace, in KubeVela's shape
//! (`helm`, `git` (GitHub), `gitee`, `gitlab`, `oss` sub-objects) so that `vela addon registry
//! list` and addonctl see the same list. Each entry also carries an `addonctl` object with the
//! whole [`RegistrySpec`] (type, ref, priority, order of addition, …), which KubeVela ignores.
//! Registries that `vela` added (no `addonctl` object) are read from the KubeVela sub-objects.
//! Without a cluster the same document lives in a local file (mode 0600, see [`default_file`]).
//!
//! **Credentials** (token, user name, password) are never written into the ConfigMap, a log or an
//! error: they go into Secret `addon-registry-<name>` (keys `token`, `username`, `password`; the
//! Git/Gitee/GitLab sub-objects name it in `tokenSecretRef`, as KubeVela does), or into the
//! `credentials` section of the local file. Credentials embedded in an endpoint URL are moved
//! there too, and credentials KubeVela kept inline are moved on the next write.
//!
//! **Order.** Highest `priority` first, then the order in which registries were added, then the
//! name; the built-in registry is always last ([`crate::source::catalog::Catalog`]).
//!
//! **Layout.** The data model (kinds, specs, credentials, KubeVela's JSON shape) is
//! [`crate::model::registry`]; the store is [`store`]; registry files are [`definitions`];
//! [`crate::source::open`] turns a stored registry into a reader, and
//! [`crate::source::catalog::Catalog`] orders the readers.

pub mod definitions;
pub mod store;

pub use crate::model::registry::{
    check_name, sort, strip_endpoint_credentials, Credentials, InvalidRegistry, Registry,
    RegistrySpec, RegistryType, CONFIG_MAP, CONFIG_MAP_KEY, KNOWN_HOSTS_OPTION, RESERVED_NAMES,
    SECRET_PREFIX, SSH_KEY_OPTION,
};
pub use crate::source::OpenOptions;
pub use definitions::{read_definitions, read_definitions_with};
pub use store::{default_file, Store};

use crate::source::{self, Reader};

/// A reader for a stored registry, with the run's disk cache and HTTP settings.
pub fn open(registry: &Registry, options: &OpenOptions) -> Result<Reader, source::Error> {
    source::open(&registry.spec, &registry.credentials, options)
}
