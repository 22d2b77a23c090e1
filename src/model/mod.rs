//! Pure data: addon metadata, versions and classified packages. No I/O happens here.

pub mod addon;
pub mod metadata;
pub mod version;

pub use addon::{AddonPackage, SourceFile, Template};
pub use metadata::{
    AddonMeta, Dependency, DeployTo, InstalledBy, MetadataError, SystemRequirements,
};
pub use version::{AddonVersion, Constraint};
