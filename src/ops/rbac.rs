//! The ClusterRoles addonctl ships (`addonctl-viewer`, `addonctl-operator`, `addonctl-admin`),
//! least privilege first: what a caller is told to bind when a check refuses them.

use serde_json::Value;

/// The shipped ClusterRoles, as objects to apply.
pub fn roles() -> Vec<Value> {
    crate::apply::access::roles()
}
