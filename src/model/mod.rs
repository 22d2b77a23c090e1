//! Pure data: addon metadata, versions and classified packages, and the kinds of failure every
//! error is classified by ([`ErrorKind`]). No I/O happens here.

pub mod access;
pub mod addon;
pub mod error_kind;
pub mod metadata;
pub mod provenance;
pub mod registry;
pub mod secret;
pub mod version;
pub mod wire;

pub use addon::{AddonPackage, SourceFile, Template};
pub use error_kind::ErrorKind;
pub use metadata::{
    AddonMeta, Dependency, DeployTo, InstalledBy, MetadataError, SystemRequirements,
};
pub use version::{AddonVersion, Constraint};

/// Metadata the server sets itself. Registry files often carry them as `null`
/// (`creationTimestamp: null` from `kubectl --dry-run -o yaml`); applied as such, addonctl's field
/// manager would claim fields the server owns, and API servers that treat that as a change write
/// the object again on every apply.
const SERVER_SET_METADATA: &[&str] = &[
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "managedFields",
    "resourceVersion",
    "selfLink",
    "uid",
];

/// Drops the server-set metadata fields that are `null` (see [`SERVER_SET_METADATA`]).
pub fn drop_null_server_metadata(metadata: &mut serde_json::Map<String, serde_json::Value>) {
    for key in SERVER_SET_METADATA {
        if metadata.get(*key).is_some_and(serde_json::Value::is_null) {
            metadata.remove(*key);
        }
    }
}
