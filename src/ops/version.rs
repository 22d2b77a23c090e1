//! The control plane's versions: Kubernetes', and KubeVela's when it is installed.

use serde::Serialize;

use crate::context::Session;
use crate::Result;

/// The versions the control plane runs.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerVersions {
    /// The control plane's Kubernetes version (`v1.30.0`).
    pub kubernetes_version: String,
    /// KubeVela's version; `None` when it is not installed (or its Deployment cannot be read).
    pub kubevela_version: Option<String>,
}

/// The control plane's versions: `/version`, then KubeVela's Deployment (each bounded by the
/// request timeout).
pub async fn server(session: &Session) -> Result<ServerVersions> {
    let ctx = session.ctx();
    let kubernetes_version = ctx.cluster.kubernetes_version().await?;
    let kubevela_version = crate::plan::vela_version(&ctx.cluster, &ctx.namespace).await;
    Ok(ServerVersions {
        kubernetes_version,
        kubevela_version,
    })
}
