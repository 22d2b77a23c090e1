//! The command line: argument parsing, printing and exit codes. The only place that prints.

mod args;
mod commands;
mod diagnostics;

use std::process::ExitCode;

pub use args::Cli;
use args::{Command, GlobalArgs};
pub use diagnostics::report;

/// Routes logs to stderr: addonctl's warnings by default, more with `-v`, only errors with `-q`.
/// Other crates' logs (kube, hyper, rustls, the AWS SDK, …) stay silent at the default verbosity:
/// their failures reach the user as addonctl's own errors; `-v` shows their errors, `-vv` their
/// warnings, `-vvv` their info.
pub fn init_logging(global: &GlobalArgs) {
    let level = match (global.quiet, global.verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, 2) => "debug",
        (false, _) => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("ADDONCTL_LOG").unwrap_or_else(|_| {
        let libraries = match (global.quiet, global.verbose) {
            (true, _) | (false, 0) => "off",
            (false, 1) => "error",
            (false, 2) => "warn",
            (false, _) => "info",
        };
        tracing_subscriber::EnvFilter::new(format!("{libraries},addonctl={level}"))
    });
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .without_time()
        .with_ansi(
            std::env::var_os("NO_COLOR").is_none()
                && std::io::IsTerminal::is_terminal(&std::io::stderr()),
        )
        .try_init();
}

/// Runs one command.
pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Render(args) => commands::render::run(&cli.global, args).await,
        Command::Lint(args) => commands::lint::run(&cli.global, args).await,
        Command::Init(args) => commands::init::run(&cli.global, &args),
        Command::Enable(args) => commands::manage::enable(&cli.global, args).await,
        Command::Disable(args) => commands::manage::disable(&cli.global, args).await,
        Command::Status(args) => commands::manage::status(&cli.global, args).await,
        Command::List(args) => commands::manage::list(&cli.global, args).await,
        Command::Upgrade(args) => commands::manage::upgrade(&cli.global, args).await,
        Command::Package(args) => commands::publish::package(&cli.global, args).await,
        Command::Index(args) => commands::publish::index(&args),
        Command::Registry(args) => commands::registry::run(&cli.global, args).await,
        Command::Cluster(command) => {
            Box::pin(commands::manage::cluster(&cli.global, command)).await
        }
        Command::Rbac(args) => commands::manage::rbac(&args),
    }
}
