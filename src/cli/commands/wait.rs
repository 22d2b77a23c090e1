//! `addonctl wait` (until an addon is enabled or disabled) and `addonctl status --watch`; both
//! follow the library's [`addonctl::ops::status::Watch`] and stop on Ctrl-C.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use addonctl::context::Session;
use addonctl::ops::status::{Phase, WaitRequest};

use crate::cli::args::{WaitArgs, WaitFor};
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
    let session = Session::new(ctx, None, Arc::new(printer));
    let request = WaitRequest {
        addon: args.addon.clone(),
        phase: wanted,
        timeout: args.timeout,
    };
    let started = Instant::now();
    let wait = addonctl::ops::status::wait(&session, &request);
    tokio::select! {
        waited = wait => {
            let waited = waited?;
            writeln!(
                printer.stdout(),
                "addon `{}` is {} (after {})",
                waited.addon,
                waited.phase,
                seconds(waited.elapsed)
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

/// `12.3s`.
pub(super) fn seconds(elapsed: Duration) -> String {
    format!("{:.1}s", elapsed.as_secs_f64())
}
