//! The command line: argument parsing, printing and exit codes. The only place that prints.

mod args;
mod commands;
mod diagnostics;

use std::process::ExitCode;

pub use args::Cli;
use args::{Command, GlobalArgs};
pub use diagnostics::report;

/// Routes logs to stderr: warnings by default, more with `-v`, only errors with `-q`.
pub fn init_logging(global: &GlobalArgs) {
    let level = match (global.quiet, global.verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, 2) => "debug",
        (false, _) => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("ADDONCTL_LOG").unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(format!(
            "addonctl={level},{}",
            // Libraries' own lines (a connect error kube logs before returning it) would
            // repeat what addonctl reports: shown from `-v` on.
            match global.verbose {
                0 => "off",
                1 | 2 => "error",
                _ => "info",
            }
        ))
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
        Command::Cluster(command) => commands::manage::cluster(&cli.global, command).await,
        Command::Rbac(args) => commands::manage::rbac(&args),
    }
}
