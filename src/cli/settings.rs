//! Global flags and the environment, resolved once into the values the library takes
//! (`--system-namespace` or `KUBEVELA_SYSTEM_NAMESPACE`, `--kubeconfig` or `KUBECONFIG`,
//! `ADDONCTL_*`, …; clap reads the environment variables named on [`GlobalArgs`]). Commands
//! never read flags or the environment themselves: they take these settings, and start the
//! library through [`connect`], the one place a [`Context`] is made.

use std::path::PathBuf;
use std::time::Duration;

use addonctl::cluster::{Cluster, ConnectOptions, RateLimit};
use addonctl::context::{Context, LockOptions, Settings};
use addonctl::render::{Limits, Renderer};
use addonctl::source::catalog::Catalog;

use crate::cli::args::{Engine, GlobalArgs};
use crate::cli::diagnostics::user;
use crate::cli::printer::Printer;

/// What every command may need that does not touch a cluster.
#[derive(Debug, Clone)]
pub struct GlobalSettings {
    /// The namespace KubeVela and addonctl keep their state in.
    pub namespace: String,
    /// `--registry-dir` directories, searched before the stored and built-in registries.
    pub registry_dirs: Vec<PathBuf>,
    /// `--refresh`: read registries again instead of using cached listings.
    pub refresh: bool,
    /// The sandbox limits of addon scripts.
    pub limits: Limits,
    /// The engine that deploys addons' components.
    pub engine: addonctl::context::EngineChoice,
}

impl GlobalSettings {
    /// Resolves the flags and environment (clap has read both into `args`).
    ///
    /// # Errors
    ///
    /// A user error when `--script-timeout` is zero.
    pub fn resolve(args: &GlobalArgs) -> anyhow::Result<Self> {
        let deadline = args.script_timeout;
        if deadline.is_zero() {
            return Err(user("`--script-timeout` must be longer than zero"));
        }
        Ok(GlobalSettings {
            namespace: args.system_namespace.clone(),
            registry_dirs: args.registry_dirs.clone(),
            refresh: args.refresh,
            limits: Limits {
                deadline,
                max_operations: args.script_max_operations,
                ..Limits::default()
            },
            engine: match args.engine {
                Engine::Auto => addonctl::context::EngineChoice::Auto,
                Engine::Vela => addonctl::context::EngineChoice::Vela,
                Engine::Direct => addonctl::context::EngineChoice::Direct,
            },
        })
    }

    /// The renderer these settings ask for.
    pub fn renderer(&self) -> Renderer {
        Renderer::with_limits(self.limits.clone())
    }
}

/// Whether stderr gets colour: a terminal, and no `NO_COLOR` in the environment.
pub fn stderr_color() -> bool {
    std::env::var_os("NO_COLOR").is_none() && std::io::IsTerminal::is_terminal(&std::io::stderr())
}

/// How to reach the control plane.
#[derive(Debug, Clone)]
pub struct ClusterSettings {
    /// The kubeconfig file (`--kubeconfig` or `KUBECONFIG`); `None` = the default places.
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context; `None` = its current context.
    pub context: Option<String>,
    /// The limit of each request to a cluster.
    pub request_timeout: Duration,
    /// Requests per second (and burst) to each cluster.
    pub rate_limit: RateLimit,
}

impl ClusterSettings {
    /// Resolves the flags and environment (clap has read both into `args`).
    ///
    /// # Errors
    ///
    /// A user error when `--request-timeout` is zero, or `--qps` or
    /// `--burst` is 0.
    pub fn resolve(args: &GlobalArgs) -> anyhow::Result<Self> {
        let request_timeout = args.request_timeout;
        if request_timeout.is_zero() {
            return Err(user(
                "`--request-timeout` (`ADDONCTL_CLUSTER_TIMEOUT`) must be longer than zero",
            ));
        }
        let rate_limit = RateLimit::new(args.qps, args.burst)
            .ok_or_else(|| user("`--qps` and `--burst` must be at least 1"))?;
        Ok(ClusterSettings {
            kubeconfig: args.kubeconfig.clone(),
            context: args.context.clone(),
            request_timeout,
            rate_limit,
        })
    }

    /// The options of a connection.
    pub fn connect_options(&self) -> ConnectOptions {
        ConnectOptions {
            kubeconfig: self.kubeconfig.clone(),
            context: self.context.clone(),
            timeout: Some(self.request_timeout),
        }
    }
}

/// The library settings these flags ask for ("still waiting" lines on stderr unless `-q`).
pub fn library(global: &GlobalSettings, cluster: &ClusterSettings, printer: Printer) -> Settings {
    Settings {
        namespace: global.namespace.clone(),
        kubeconfig: cluster.kubeconfig.clone(),
        kube_context: cluster.context.clone(),
        engine: global.engine,
        request_timeout: Some(cluster.request_timeout),
        rate_limit: Some(cluster.rate_limit),
        limits: global.limits.clone(),
        registry_dirs: global.registry_dirs.clone(),
        lock: LockOptions::default(),
        notice: printer.notice(),
        // `--refresh` reads discovery from the servers again (and keeps it in memory only).
        discovery_cache: if global.refresh {
            None
        } else {
            addonctl::source::cache::default_root()
        },
    }
}

/// The one way a command starts the library ([`Context::connect`]): the control plane, the
/// registries (`registries`: whether the command reads any; commands that need none never read
/// the stored ones, so they neither wait for nor warn about them), the renderer and the engine.
pub async fn connect(
    global: &GlobalSettings,
    cluster: &ClusterSettings,
    printer: Printer,
    registries: bool,
) -> anyhow::Result<Context> {
    let mut ctx = Context::connect(&library(global, cluster, printer)).await?;
    if registries {
        ctx.catalog = catalog(global, &ctx.cluster).await?;
    }
    Ok(ctx)
}

/// Whether `error` says no cluster can be asked: no usable kubeconfig, or the control plane does
/// not answer (commands that can do without one go on offline).
pub fn is_offline(error: &anyhow::Error) -> bool {
    use addonctl::cluster::Error as E;
    error.chain().any(|cause| {
        matches!(
            cause.downcast_ref::<addonctl::Error>(),
            Some(addonctl::Error::Cluster(
                E::Config(_) | E::Unreachable { .. }
            ))
        ) || matches!(
            cause.downcast_ref::<E>(),
            Some(E::Config(_) | E::Unreachable { .. })
        )
    })
}

/// [`connect`] with the registries, or, when `offline` allows it and no cluster can be asked
/// ([`is_offline`]), a context over an empty in-process control plane, after notes saying why
/// and what a plan then assumes; the flag is `true` in that second case.
pub async fn connect_or_offline(
    global: &GlobalSettings,
    cluster: &ClusterSettings,
    printer: Printer,
    offline: bool,
) -> anyhow::Result<(Context, bool)> {
    match connect(global, cluster, printer, true).await {
        Ok(ctx) => Ok((ctx, false)),
        Err(e) if offline && is_offline(&e) => {
            printer.note(&format!("{e:#}"));
            printer.note(addonctl::plan::offline::ASSUMPTIONS);
            let empty = addonctl::plan::offline::empty_cluster();
            let ctx = Context::with_cluster(&library(global, cluster, printer), empty)?;
            Ok((ctx, true))
        }
        Err(e) => Err(e),
    }
}

/// The registries without a cluster: `--registry-dir` directories, the registries of the local
/// registry file (`registry add --local`) when there is one, and the built-in registry.
pub async fn offline_catalog(global: &GlobalSettings) -> anyhow::Result<Catalog> {
    let file = addonctl::registry::default_file();
    let stored = if file.is_file() {
        match addonctl::registry::Store::File(file.clone()).load().await {
            Ok(stored) => stored,
            Err(e) => {
                tracing::warn!(
                    "the local registry file `{}` cannot be read ({e}); leaving its registries out",
                    file.display()
                );
                Vec::new()
            }
        }
    } else {
        Vec::new()
    };
    opened(global, &stored)
}

/// The catalogue of the `--registry-dir` directories, the `stored` registries and the built-in
/// one; a stored registry that cannot be opened is a warning, not a silent omission.
fn opened(
    global: &GlobalSettings,
    stored: &[addonctl::registry::Registry],
) -> anyhow::Result<Catalog> {
    let (catalog, failures) =
        Catalog::with_stored(&global.registry_dirs, stored, &open_options(global))
            .map_err(addonctl::Error::from)?;
    for e in failures {
        tracing::warn!("{e}");
    }
    Ok(catalog)
}

fn open_options(global: &GlobalSettings) -> addonctl::source::OpenOptions {
    addonctl::source::OpenOptions {
        cache: addonctl::source::cache::CacheOptions {
            refresh: global.refresh,
            ..addonctl::source::cache::CacheOptions::default()
        },
        http: addonctl::source::http::HttpOptions::from_env(),
    }
}

/// The registries in search order: `--registry-dir` directories, the stored registries
/// (ConfigMap `vela-addon-registry`; priority, then order of addition), the built-in one last.
/// A stored registry that cannot be opened is a warning, not a silent omission.
pub async fn catalog(global: &GlobalSettings, cluster: &Cluster) -> anyhow::Result<Catalog> {
    let store = addonctl::registry::Store::Cluster {
        cluster: Box::new(cluster.clone()),
        namespace: global.namespace.clone(),
    };
    let stored = match store.load().await {
        Ok(stored) => stored,
        // The control plane itself does not answer: every later request would wait as long.
        Err(e @ addonctl::Error::Cluster(addonctl::cluster::Error::Unreachable { .. })) => {
            return Err(e.into());
        }
        Err(e) => {
            let hint = match &e {
                addonctl::Error::Cluster(addonctl::cluster::Error::Forbidden { .. }) => {
                    " (reading them needs `get` on ConfigMap `vela-addon-registry` and its Secrets in the system namespace: ClusterRole `addonctl-viewer`, see `addonctl rbac`)"
                }
                _ => "",
            };
            tracing::warn!(
                "the stored registries cannot be read ({e}){hint}; using the built-in registry only"
            );
            Vec::new()
        }
    };
    opened(global, &stored)
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;
    use crate::cli::args::Cli;

    fn global(flags: &[&str]) -> GlobalArgs {
        let mut argv = vec!["addonctl"];
        argv.extend_from_slice(flags);
        argv.push("rbac");
        Cli::try_parse_from(argv).unwrap().global
    }

    #[test]
    fn flags_resolve_into_settings() {
        let args = global(&[
            "--system-namespace",
            "ops",
            "--engine",
            "direct",
            "--script-timeout",
            "0.5",
            "--request-timeout",
            "7",
            "--kubeconfig",
            "/tmp/kc",
            "--context",
            "blue",
        ]);
        let settings = GlobalSettings::resolve(&args).unwrap();
        assert_eq!(settings.namespace, "ops");
        assert_eq!(settings.engine, addonctl::context::EngineChoice::Direct);
        assert_eq!(settings.limits.deadline, Duration::from_millis(500));
        let cluster = ClusterSettings::resolve(&args).unwrap();
        assert_eq!(cluster.request_timeout, Duration::from_secs(7));
        let options = cluster.connect_options();
        assert_eq!(options.kubeconfig, Some(PathBuf::from("/tmp/kc")));
        assert_eq!(options.context.as_deref(), Some("blue"));
        assert_eq!(options.timeout, Some(Duration::from_secs(7)));
    }

    #[test]
    fn bad_limits_are_refused_naming_the_flag_and_the_forms_accepted() {
        for (flags, flag) in [
            (&["--script-timeout", "0"][..], "--script-timeout"),
            (&["--script-timeout=-1"][..], "--script-timeout"),
            (&["--request-timeout", "0"][..], "--request-timeout"),
            (&["--request-timeout", "5 min"][..], "--request-timeout"),
        ] {
            let mut argv = vec!["addonctl"];
            argv.extend_from_slice(flags);
            argv.push("rbac");
            let err = Cli::try_parse_from(argv).unwrap_err().to_string();
            assert!(err.contains(flag), "{err}");
            assert!(err.contains("`90s`, `5m`, `1h`"), "{err}");
        }
        let args = global(&["--request-timeout", "1m", "--script-timeout", "500ms"]);
        let cluster = ClusterSettings::resolve(&args).unwrap();
        assert_eq!(cluster.request_timeout, Duration::from_secs(60));
        let settings = GlobalSettings::resolve(&args).unwrap();
        assert_eq!(settings.limits.deadline, Duration::from_millis(500));
    }
}
