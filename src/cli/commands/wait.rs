//! `addonctl wait` (until an addon is enabled or disabled) and `addonctl status --watch`; both
//! follow the library's [`addonctl::status::wait::Watch`] and stop on Ctrl-C.

use std::io::{IsTerminal as _, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use addonctl::context::Context;
use addonctl::status::wait::cluster_readiness;
use addonctl::status::{Phase, Status};

use crate::cli::args::{ReportFormat, StatusArgs, WaitArgs, WaitFor};
use crate::cli::printer::Printer;
use crate::cli::settings::{connect, ClusterSettings, GlobalSettings};

/// The exit code of a wait interrupted by Ctrl-C (128 + SIGINT, as shells report it).
const INTERRUPTED: u8 = 130;

/// `wait`: 0 once the phase is reached (with the time it took), 1 on timeout (what is not ready,
/// per cluster), 130 on Ctrl-C.
pub async fn run(
    global: &GlobalSettings,
    cluster: &ClusterSettings,
    printer: Printer,
    args: WaitArgs,
) -> anyhow::Result<ExitCode> {
    let ctx = connect(global, cluster, printer, false).await?;
    let wanted = match args.wait_for {
        WaitFor::Enabled => Phase::Enabled,
        WaitFor::Disabled => Phase::Disabled,
    };
    let started = Instant::now();
    let wait =
        addonctl::status::wait::until(ctx.state(), &args.addon, wanted, args.timeout, &printer);
    tokio::select! {
        waited = wait => {
            let elapsed = waited?;
            writeln!(
                printer.stdout(),
                "addon `{}` is {wanted} (after {})",
                args.addon,
                seconds(elapsed)
            )?;
            Ok(ExitCode::SUCCESS)
        }
        _ = tokio::signal::ctrl_c() => {
            printer.note(&format!(
                "interrupted after {}: addon `{}` is not {wanted} yet; nothing was changed",
                seconds(started.elapsed()),
                args.addon
            ));
            Ok(ExitCode::from(INTERRUPTED))
        }
    }
}

/// `status --watch`: on a terminal the status redrawn at each change; piped, one line per
/// change (`-o json|yaml`: one compact JSON document per change). Ends with exit 0 on Ctrl-C or
/// after `--timeout`.
pub async fn watch(ctx: &Context, printer: Printer, args: &StatusArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let mut watch = addonctl::status::wait::Watch::new(ctx.state(), &args.addon);
    let terminal = std::io::stdout().is_terminal() && args.output == ReportFormat::Text;
    let until = args.timeout.map(|t| tokio::time::Instant::now() + t);
    let stop = async {
        match until {
            Some(deadline) => tokio::time::sleep_until(deadline).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(stop);
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    loop {
        tokio::select! {
            next = watch.next() => {
                let status = next?;
                show(printer, args.output, terminal, started.elapsed(), &status)?;
            }
            _ = &mut ctrl_c => return Ok(ExitCode::SUCCESS),
            () = &mut stop => return Ok(ExitCode::SUCCESS),
        }
    }
}

/// One change of `status --watch`.
fn show(
    printer: Printer,
    output: ReportFormat,
    terminal: bool,
    elapsed: Duration,
    status: &Status,
) -> anyhow::Result<()> {
    let mut out = printer.stdout();
    if output != ReportFormat::Text {
        writeln!(out, "{}", serde_json::to_string(status)?)?;
    } else if terminal {
        // Home, clear the screen, draw again.
        write!(out, "\x1b[H\x1b[2J")?;
        writeln!(
            out,
            "watching `{}` for {} (Ctrl-C to stop)\n",
            status.name,
            seconds(elapsed)
        )?;
        super::status::print_status(&mut out, status)?;
    } else {
        let mut line = format!("{:>7} {} {}", seconds(elapsed), status.name, status.phase);
        for cluster in &status.resources {
            line.push_str(&format!(
                "; {}: {}",
                cluster.cluster,
                cluster_readiness(cluster)
            ));
        }
        if let Some(reason) = &status.reason {
            line.push_str(&format!("; reason: {reason}"));
        }
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(())
}

/// `12.3s`.
fn seconds(elapsed: Duration) -> String {
    format!("{:.1}s", elapsed.as_secs_f64())
}
