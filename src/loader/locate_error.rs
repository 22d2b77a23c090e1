//! Why the addon a user named (a directory, `registry/name` or a name) was not found.

use crate::model::ErrorKind;
use crate::source::{self, catalog};

/// [`super::locate_in`] found no single addon for what the user named.
#[derive(Debug, thiserror::Error)]
pub enum LocateError {
    /// A reference that is neither a directory nor an addon name.
    #[error("`{reference}` is neither an addon directory nor the name of an addon in {catalog}")]
    NotAnAddon {
        /// What was given.
        reference: String,
        /// The registries searched.
        catalog: String,
    },
    /// No such addon in the registries, and no such directory.
    #[error("no addon `{name}` in {catalog} (available: {}), and no directory `{reference}`", available.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", "))]
    NoSuchAddonOrDir {
        /// The addon's name.
        name: String,
        /// What was given.
        reference: String,
        /// The registries searched.
        catalog: String,
        /// The addons they hold.
        available: Vec<String>,
    },
    /// A directory with no (usable) addon.
    #[error("{}", no_addon(reference, problems))]
    NoAddonIn {
        /// The directory.
        reference: String,
        /// Why its `metadata.yaml` files are not usable (empty: there is none).
        problems: Vec<String>,
    },
    /// A directory with several addons where one is needed.
    #[error("`{reference}` holds {} addons ({}); name one directory", names.len(), names.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", "))]
    ManyAddons {
        /// The directory.
        reference: String,
        /// The addons it holds.
        names: Vec<String>,
    },
    /// The catalogue has no such addon (or version), or could not be read.
    #[error(transparent)]
    Catalog(#[from] catalog::Error),
    /// The directory could not be read.
    #[error(transparent)]
    Source(#[from] source::Error),
}

impl LocateError {
    /// What kind of failure it is: nothing of that name is [`ErrorKind::NotFound`]; a
    /// directory without a usable addon, or with several, is [`ErrorKind::Invalid`]; a
    /// registry or directory that failed to read says its own kind.
    pub fn kind(&self) -> ErrorKind {
        match self {
            LocateError::Source(e) => e.kind(),
            LocateError::Catalog(e) => e.kind(),
            LocateError::NotAnAddon { .. } | LocateError::NoSuchAddonOrDir { .. } => {
                ErrorKind::NotFound
            }
            LocateError::NoAddonIn { .. } | LocateError::ManyAddons { .. } => ErrorKind::Invalid,
        }
    }
}

fn no_addon(reference: &str, problems: &[String]) -> String {
    if problems.is_empty() {
        format!(
            "`{reference}` holds no addon: an addon directory needs a `metadata.yaml` (create one with `addonctl init`)"
        )
    } else {
        format!(
            "`{reference}` holds no usable addon: {}",
            problems.join("; ")
        )
    }
}
