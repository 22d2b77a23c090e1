//! The crate's constants that every layer may need: a leaf, importing nothing, so that the
//! lowest modules read them without going through the crate's root.

/// The version of addonctl itself, as `context.installer.version` shows it to scripts.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The system namespace used when none is configured (KubeVela's default).
pub const DEFAULT_SYSTEM_NAMESPACE: &str = "vela-system";
