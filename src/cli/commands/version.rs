//! `addonctl version`: the client's version and commit, and the control plane's Kubernetes and
//! KubeVela versions when it answers in time.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use addonctl::context::Session;
use addonctl::ops::version::ServerVersions;

use crate::cli::args::{GlobalArgs, VersionArgs};
use crate::cli::printer::Printer;
use crate::cli::settings::{connect, ClusterSettings, GlobalSettings};

/// How long `version` waits for each request to the control plane unless `--request-timeout`
/// (or `ADDONCTL_CLUSTER_TIMEOUT`) says otherwise: a version is asked for in a hurry.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// What `version` prints.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Versions {
    client: Client,
    /// Absent when the control plane did not answer (the reason is on stderr).
    #[serde(skip_serializing_if = "Option::is_none")]
    server: Option<ServerVersions>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Client {
    version: &'static str,
    git_commit: &'static str,
}

/// `version [-o text|json|yaml]`: exits 0 even when the control plane cannot be reached.
pub async fn run(
    args: &GlobalArgs,
    printer: Printer,
    version: &VersionArgs,
) -> anyhow::Result<ExitCode> {
    let global = GlobalSettings::resolve(args)?;
    let mut cluster = ClusterSettings::resolve(args)?;
    if !args.request_timeout_given {
        cluster.request_timeout = DEFAULT_TIMEOUT;
    }
    let server = match server(&global, &cluster, printer).await {
        Ok(server) => Some(server),
        Err(e) => {
            printer.note(&format!("no server versions: {e:#}"));
            None
        }
    };
    let versions = Versions {
        client: Client {
            version: env!("CARGO_PKG_VERSION"),
            git_commit: env!("ADDONCTL_GIT_COMMIT"),
        },
        server,
    };
    if !printer.structured(&versions, version.output)? {
        let mut out = printer.stdout();
        writeln!(
            out,
            "Client:     addonctl {} (commit {})",
            versions.client.version, versions.client.git_commit
        )?;
        if let Some(server) = &versions.server {
            writeln!(out, "Kubernetes: {}", server.kubernetes_version)?;
            let vela = server
                .kubevela_version
                .as_deref()
                .unwrap_or("not installed");
            writeln!(out, "KubeVela:   {vela}")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The control plane's versions; each request is bounded by the request timeout, the whole by
/// three of them (connecting, `/version`, KubeVela's Deployment).
async fn server(
    global: &GlobalSettings,
    cluster: &ClusterSettings,
    printer: Printer,
) -> anyhow::Result<ServerVersions> {
    let ask = async {
        let ctx = connect(global, cluster, printer, false).await?;
        let session = Session::new(ctx, None, Arc::new(printer));
        anyhow::Ok(addonctl::ops::version::server(&session).await?)
    };
    let limit = cluster.request_timeout * 3;
    tokio::time::timeout(limit, ask).await.map_err(|_| {
        anyhow::anyhow!(
            "the control plane did not answer within {}s (`--request-timeout`)",
            limit.as_secs_f64()
        )
    })?
}
