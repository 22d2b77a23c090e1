//! addonctl: installs Kubernetes addons.
//!
//! The data flows through the modules in this order:
//!
//! - [`source`]: the [`source::AsyncReader`] trait and one reader per kind of registry
//!   (a local directory, the built-in registry embedded in the binary, …);
//! - [`loader`]: classifies an addon's files into an [`model::AddonPackage`];
//! - [`params`]: CUE-style parameter declarations → JSON Schema → validated values;
//! - [`render`]: the one sandboxed Rhai engine that turns a package and its values into
//!   [`render::Rendered`], everything `enable` applies;
//! - [`lint`] and [`scaffold`]: checks and templates for registry authors.
//!
//! Sources know nothing of rendering, rendering knows nothing of clusters, and the CLI (`cli`,
//! private to the binary) only parses arguments, prints and calls this library.

mod chain;
pub mod cluster;
pub mod cue;
pub mod error;
pub mod lint;
pub mod loader;
pub mod manage;
pub mod model;
pub mod params;
pub mod publish;
pub mod registry;
pub mod render;
pub mod resolve;
pub mod scaffold;
pub mod source;
pub mod yaml;

pub use error::{Error, Result};

/// The version of addonctl itself, as `context.installer.version` shows it to scripts.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The system namespace used when none is configured (KubeVela's default).
pub const DEFAULT_SYSTEM_NAMESPACE: &str = "vela-system";
