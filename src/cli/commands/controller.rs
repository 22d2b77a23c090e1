//! `addonctl controller`: run the controller that reconciles `Addon` resources, or print its
//! manifests (`controller manifests`).

use std::io::Write as _;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use addonctl::controller::manifests::{self, ManifestOptions};
use addonctl::controller::{Backoff, Controller, ControllerSettings};

use crate::cli::args::{ControllerArgs, ManifestsArgs};
use crate::cli::commands::lock_options;
use crate::cli::diagnostics::user;
use crate::cli::printer::Printer;
use crate::cli::settings::{connect, ClusterSettings, GlobalSettings};

/// `controller manifests`.
pub fn manifests(
    global: &GlobalSettings,
    printer: Printer,
    args: &ManifestsArgs,
) -> anyhow::Result<ExitCode> {
    let options = ManifestOptions {
        namespace: args
            .namespace
            .clone()
            .unwrap_or_else(|| global.namespace.clone()),
        image: args.image.clone().unwrap_or_default(),
        replicas: args.replicas,
        admin: args.admin,
        crd_only: args.crd_only,
        serve: args.serve,
    };
    write!(printer.stdout(), "{}", manifests::render(&options)?)?;
    Ok(ExitCode::SUCCESS)
}

/// `controller`: runs until SIGTERM or Ctrl-C.
pub async fn run(
    global: &GlobalSettings,
    cluster: &ClusterSettings,
    printer: Printer,
    args: ControllerArgs,
) -> anyhow::Result<ExitCode> {
    let settings = settings(&args)?;
    let mut ctx = connect(global, cluster, printer, true).await?;
    ctx.lock = lock_options("controller", false);
    ctx.lock.holder.clone_from(&settings.identity);
    let controller = Controller::bind(ctx, settings.clone())
        .await
        .map_err(classify)?;
    if !printer.quiet() {
        let _ = writeln!(
            std::io::stderr(),
            "controller: /healthz, /readyz and /metrics on http://{}; leader election {}",
            controller.address(),
            if settings.leader_elect {
                "on (Lease `addonctl-controller`)"
            } else {
                "off"
            }
        );
    }
    controller.run(shutdown_signal()).await.map_err(classify)?;
    if !printer.quiet() {
        let _ = writeln!(std::io::stderr(), "controller: stopped");
    }
    Ok(ExitCode::SUCCESS)
}

/// A controller error the user can fix exits 2, others 1.
fn classify(error: addonctl::controller::Error) -> anyhow::Error {
    if error.is_user_error() {
        user(error.to_string())
    } else {
        error.into()
    }
}

/// The controller's settings from the flags; a malformed one is the user's error.
fn settings(args: &ControllerArgs) -> anyhow::Result<ControllerSettings> {
    let metrics_address: SocketAddr = args.metrics_addr.parse().map_err(|e| {
        user(format!(
            "`--metrics-addr {}`: {e} (expected HOST:PORT such as `127.0.0.1:9090` or `0.0.0.0:9090`)",
            args.metrics_addr
        ))
    })?;
    let backoff = Backoff {
        initial: duration("--backoff-initial", &args.backoff_initial)?,
        max: duration("--backoff-max", &args.backoff_max)?,
        budget: args.retry_budget.max(1),
    };
    if backoff.initial > backoff.max {
        return Err(user(format!(
            "`--backoff-initial {}` is longer than `--backoff-max {}`",
            args.backoff_initial, args.backoff_max
        )));
    }
    Ok(ControllerSettings {
        metrics_address,
        leader_elect: args.leader_elect,
        registry_interval: interval("--registry-interval", &args.registry_interval)?,
        drift_interval: duration("--drift-interval", &args.drift_interval)?,
        gate_poll: duration("--gate-poll", &args.gate_poll)?,
        backoff,
        concurrency: args.concurrency.max(1),
        workers: args.workers.unwrap_or(0),
        authorize_as: match args.authorize_as {
            crate::cli::args::AuthorizeAsArg::Author => {
                addonctl::controller::trust::AuthorizeAs::Author
            }
            crate::cli::args::AuthorizeAsArg::Controller => {
                addonctl::controller::trust::AuthorizeAs::Controller
            }
        },
        ..ControllerSettings::default()
    })
}

/// A [`duration`], or zero (off).
fn interval(flag: &str, text: &str) -> anyhow::Result<Duration> {
    parse_duration(flag, text, true)
}

/// `250ms`, `30s`, `5m`, `1h`, or a number of seconds; longer than zero.
fn duration(flag: &str, text: &str) -> anyhow::Result<Duration> {
    parse_duration(flag, text, false)
}

/// The one duration parser of the command line ([`crate::cli::args::parse_duration`]), its
/// refusal naming the flag.
fn parse_duration(flag: &str, text: &str, zero: bool) -> anyhow::Result<Duration> {
    let parsed = if zero {
        crate::cli::args::parse_duration_or_zero(text)
    } else {
        crate::cli::args::parse_duration(text)
    };
    parsed.map_err(|reason| user(format!("`{flag} {text}`: {reason}")))
}

/// Resolves at SIGTERM or Ctrl-C (SIGINT).
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = terminate.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_a_unit_and_refuse_nonsense() {
        assert_eq!(
            duration("--x", "250ms").unwrap(),
            Duration::from_millis(250)
        );
        assert_eq!(duration("--x", "30").unwrap(), Duration::from_secs(30));
        assert_eq!(duration("--x", "5m").unwrap(), Duration::from_secs(300));
        assert_eq!(duration("--x", "1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(interval("--x", "0").unwrap(), Duration::ZERO);
        assert_eq!(interval("--x", "0s").unwrap(), Duration::ZERO);
        assert_eq!(interval("--x", "2m").unwrap(), Duration::from_secs(120));
        assert!(interval("--x", "-1").is_err());
        for bad in ["", "m", "5 weeks", "0s", "-1s"] {
            let error = duration("--x", bad).unwrap_err().to_string();
            assert!(error.contains("`--x"), "{bad}: {error}");
        }
    }
}
