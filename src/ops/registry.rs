//! The registries an installation reads addons from: add (validated by listing it), update,
//! remove, list and get, on the cluster's store (KubeVela's ConfigMap and Secrets) or a local
//! file. Writes to a cluster's store are checked first (control plane first) and each holds the
//! registry's lock from its read to its write.

use crate::error::RegistryError;
use crate::model::registry::{Credentials, Registry, RegistrySpec};
use crate::registry::{self, check_name, strip_endpoint_credentials, OpenOptions, Store};
use crate::source::cache::CacheOptions;
use crate::state::lease;
use crate::Result;

/// A registry stored by [`add`], with the number of its addons when it was validated.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Added {
    /// The registry as stored.
    pub spec: RegistrySpec,
    /// Its addons, listed to validate it (`None`: not validated).
    pub addons: Option<usize>,
}

/// How a write to a store takes its locks.
#[derive(Debug, Clone, Copy, Default)]
pub struct Writing {
    /// Take locks others hold (`--force-unlock`: their command is gone).
    pub force_unlock: bool,
}

/// Refuses, naming every missing permission, before a write to a cluster's store reads
/// credentials or writes anything (a local file needs none).
pub async fn check_write(store: &Store, verb: &str) -> Result<()> {
    if let Store::Cluster { cluster, namespace } = store {
        crate::apply::access::check(
            cluster,
            &format!("`addonctl registry {verb}`"),
            &crate::apply::access::registry_state(namespace),
        )
        .await?;
    }
    Ok(())
}

/// Adds registries: each name checked and free, its endpoint given (credentials written in
/// it moved to its Secret), validated by listing it unless `validate` is false, then stored
/// under its lock. Stops at the first that cannot be added (those before stay added).
pub async fn add(
    store: &Store,
    registries: Vec<Registry>,
    validate: bool,
    writing: Writing,
) -> Result<Vec<Added>> {
    check_write(store, "add").await?;
    let mut added = Vec::new();
    for mut registry in registries {
        check_name(&registry.spec.name)?;
        if store.get(&registry.spec.name).await?.is_some() {
            return Err(RegistryError::Exists {
                name: registry.spec.name,
            }
            .into());
        }
        if registry.spec.endpoint.trim().is_empty() {
            return Err(RegistryError::NeedsEndpoint {
                name: registry.spec.name,
            }
            .into());
        }
        registry.spec.endpoint = strip_endpoint_credentials(
            registry.spec.kind,
            &registry.spec.endpoint,
            &mut registry.credentials,
        );
        let addons = if validate {
            linked(store, &mut registry).await?;
            Some(listed(&registry).await?)
        } else {
            None
        };
        let lock = take(store, &registry.spec.name, "add", writing).await?;
        let stored = store.add(registry.spec, registry.credentials).await;
        release(lock).await;
        added.push(Added {
            spec: stored?,
            addons,
        });
    }
    Ok(added)
}

/// Why [`update`] failed: the library's error, or the front end's `change`'s own.
#[derive(Debug)]
pub enum UpdateError<E> {
    /// Reading, checking, validating or writing failed.
    Library(crate::Error),
    /// The front end's change of the stored registry failed.
    Change(E),
}

impl<E> From<crate::Error> for UpdateError<E> {
    fn from(error: crate::Error) -> Self {
        UpdateError::Library(error)
    }
}

/// Updates a stored registry: `change` edits it (a front end's flags, read against what is
/// stored), `credentials` replaces its credentials when given; credentials written into a
/// changed endpoint move to its Secret. The registry's lock is held from the read to the write.
pub async fn update<E>(
    store: &Store,
    name: &str,
    change: impl FnOnce(&mut RegistrySpec) -> std::result::Result<(), E>,
    credentials: Option<Credentials>,
    validate: bool,
    writing: Writing,
) -> std::result::Result<(), UpdateError<E>> {
    check_write(store, "update").await?;
    let lock = take(store, name, "update", writing).await?;
    let result = update_locked(store, name, change, credentials, validate).await;
    release(lock).await;
    result
}

async fn update_locked<E>(
    store: &Store,
    name: &str,
    change: impl FnOnce(&mut RegistrySpec) -> std::result::Result<(), E>,
    credentials: Option<Credentials>,
    validate: bool,
) -> std::result::Result<(), UpdateError<E>> {
    let mut registry = store.get(name).await?.ok_or_else(|| {
        crate::Error::from(RegistryError::NotFound {
            name: name.to_owned(),
        })
    })?;
    change(&mut registry.spec).map_err(UpdateError::Change)?;
    let given = credentials.is_some();
    if let Some(credentials) = credentials {
        registry.credentials = credentials;
    }
    let before = registry.credentials.keys();
    registry.spec.endpoint = strip_endpoint_credentials(
        registry.spec.kind,
        &registry.spec.endpoint,
        &mut registry.credentials,
    );
    let moved = registry.credentials.keys() != before;
    if validate {
        linked(store, &mut registry).await?;
        listed(&registry).await?;
    }
    let credentials = (given || moved).then_some(registry.credentials);
    store.update(registry.spec, credentials).await?;
    Ok(())
}

/// Removes a stored registry (under its lock); one that does not exist is an error.
pub async fn remove(store: &Store, name: &str, writing: Writing) -> Result<()> {
    check_write(store, "remove").await?;
    let lock = take(store, name, "remove", writing).await?;
    let removed = store.remove(name).await;
    release(lock).await;
    if removed? {
        Ok(())
    } else {
        Err(RegistryError::Removed {
            name: name.to_owned(),
        }
        .into())
    }
}

/// The stored registries, in the store's order (the built-in registry is not among them).
pub async fn list(store: &Store) -> Result<Vec<RegistrySpec>> {
    store.list().await
}

/// One stored registry, with its credentials (callers show only their keys).
pub async fn get(store: &Store, name: &str) -> Result<Registry> {
    Ok(store
        .get(name)
        .await?
        .ok_or_else(|| RegistryError::Removed {
            name: name.to_owned(),
        })?)
}

/// Checks a registry without storing it: its name, its endpoint (credentials written in it
/// moved to `registry.credentials`), and that it lists with the credentials given (and those
/// it links to in `store`); its addons.
pub async fn check(store: &Store, registry: &mut Registry) -> Result<usize> {
    check_name(&registry.spec.name)?;
    if registry.spec.endpoint.trim().is_empty() {
        return Err(RegistryError::NeedsEndpoint {
            name: registry.spec.name.clone(),
        }
        .into());
    }
    registry.spec.endpoint = strip_endpoint_credentials(
        registry.spec.kind,
        &registry.spec.endpoint,
        &mut registry.credentials,
    );
    linked(store, registry).await?;
    listed(registry).await
}

/// Reads the credentials a registry links to (a Docker config Secret) to check it with them.
async fn linked(store: &Store, registry: &mut Registry) -> Result<()> {
    store.link(registry).await.map_err(|reason| {
        RegistryError::DoesNotWork {
            name: registry.spec.name.clone(),
            reason,
        }
        .into()
    })
}

/// Lists a registry to check that it works: its addons.
async fn listed(registry: &Registry) -> Result<usize> {
    let options = OpenOptions {
        cache: CacheOptions {
            refresh: true,
            ..CacheOptions::default()
        },
        http: crate::source::http::HttpOptions::from_env(),
    };
    let reader = registry::open(registry, &options)?;
    let addons = reader
        .list_addons()
        .await
        .map_err(|e| RegistryError::DoesNotWork {
            name: registry.spec.name.clone(),
            reason: e.to_string(),
        })?;
    Ok(addons.len())
}

/// Takes the lock of registry `name` for `verb` (a local file needs none).
async fn take(
    store: &Store,
    name: &str,
    verb: &str,
    writing: Writing,
) -> Result<Option<lease::Lock>> {
    let Store::Cluster { cluster, namespace } = store else {
        return Ok(None);
    };
    let lock = lease::acquire(
        cluster,
        namespace,
        &lease::registry_lease(name),
        &format!("registry {name}"),
        &lease::holder_identity(&format!("registry {verb} {name}")),
        writing.force_unlock,
    )
    .await?;
    Ok(Some(lock))
}

/// Releases a lock (one that cannot be released expires on its own).
async fn release(lock: Option<lease::Lock>) {
    if let Some(lock) = lock {
        if let Err(e) = lock.release().await {
            tracing::debug!("a registry lock was left to expire: {e}");
        }
    }
}
