//! addonctl: installs Kubernetes addons.
//!
//! The data flows through the modules in this order:
//!
//! - [`source`]: the [`source::AsyncReader`] trait and one reader per kind of registry
//!   (a local directory, the built-in registry embedded in the binary, …);
//! - [`loader`]: classifies an addon's files into an [`model::AddonPackage`];
//! - [`params`]: CUE-style parameter declarations → JSON Schema → validated values;
//! - [`render`]: the one sandboxed Rhai engine (and [`cue`] for KubeVela's CUE addons) that
//!   turns a package and its values into [`render::Rendered`], everything `enable` applies;
//! - [`lint`] and [`scaffold`]: checks and templates for registry authors.
//!
//! Commands that talk to clusters start with [`context::Settings`] →
//! [`context::Context::connect`] (the one way in) and go through four stages, each one idea,
//! a lower stage never importing a higher one:
//!
//! ```text
//! state   what is installed: records, stored arguments, known clusters, leases   (reads)
//!   ↑
//! plan    catalogue → solver → Plan { steps: rendered addons, layers, clusters }  (writes nothing)
//!   ↑
//! status  phase, per-cluster health, list, wait                                   (reads)
//!   ↑
//! apply   pending revision → control-plane objects → direct dispatch → prune; disable, upgrade
//! ```
//!
//! Two library pieces sit beside `apply` for long-running front ends (a controller) and the
//! CLI's one-shot runs: [`drift`] compares what each cluster holds with what the record says
//! addonctl applied (and corrects it), and [`rollout`] plans and gates a staged rollout over
//! clusters. [`declare`] builds the `Addon` resource `enable --declarative` writes for the
//! controller (arguments validated by the same plan, secret parameters in their own Secret).
//!
//! [`cluster`] is the kube-rs access every stage uses; [`model::wire`] holds the names (labels,
//! object names, `local`) rendering writes and the stages read, so applying never imports the
//! renderer. Every module's typed error (and the stages' own refusals, each a variant with its
//! data) meets in the one [`Error`], which says what kind of failure it is ([`ErrorKind`]); it
//! sits low, with [`model`] and the one-line `chain` formatter, and imports no stage. Sources
//! know nothing of rendering, rendering knows nothing of clusters, and the CLI
//! (`cli`, private to the binary) only parses arguments, prints and calls this library.

pub mod apply;
mod chain;
pub mod cluster;
mod constants;
pub mod context;
pub mod controller;
pub mod cue;
pub mod declare;
pub mod diff;
pub mod drift;
pub mod error;
pub mod lint;
pub mod loader;
pub mod model;
mod net;
pub mod ops;
pub mod params;
pub mod plan;
pub mod publish;
pub mod registry;
pub mod render;
pub mod resolve;
pub mod rollout;
pub mod scaffold;
pub mod serve;
pub mod source;
pub mod spread;
pub mod state;
pub mod status;
pub mod yaml;

pub use constants::{DEFAULT_SYSTEM_NAMESPACE, VERSION};
pub use error::{Error, ErrorKind, Result};
