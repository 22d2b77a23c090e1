//! The command line: argument parsing, settings, printing and exit codes. The only place that
//! prints.
//!
//! Flow: clap parses [`Cli`]; [`settings`] resolves the global flags and the environment into
//! settings values; each command (one file under `commands/`) takes the settings, a
//! [`printer::Printer`] and its own arguments, starts the library through
//! [`settings::connect`], and prints through the printer; [`diagnostics`] turns an error into
//! its message and exit code.

mod args;
mod commands;
mod consent;
mod diagnostics;
mod help;
mod printer;
mod reference;
mod settings;
mod table;

use std::process::ExitCode;

pub use args::Cli;
use args::{Command, CompleteCli, CompleteCommand, GlobalArgs};
pub use diagnostics::report;
use printer::Printer;
use settings::{ClusterSettings, GlobalSettings};

/// What the command line asks for: a command, or the names a completion script asks for.
#[derive(Debug)]
pub enum Invocation {
    /// A command of [`Cli`] (boxed: it is far larger than the other variant).
    Command(Box<Cli>),
    /// `addonctl [global options] __complete addons|clusters`.
    Complete(CompleteCli),
}

/// Parses the command line as clap's `Cli::parse` does (printing help, or the error and exiting
/// 2), with each command's help ending in a pointer to the global options instead of listing them
/// ([`help::command`]); `__complete` is parsed on its own ([`CompleteCli`]).
pub fn parse() -> Invocation {
    use clap::Parser as _;
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if argv.iter().any(|word| word == "__complete") {
        if let Ok(complete) = CompleteCli::try_parse_from(&argv) {
            return Invocation::Complete(complete);
        }
    }
    Invocation::Command(Box::new(parse_from(argv).unwrap_or_else(|e| e.exit())))
}

/// [`parse`] of these arguments; help and errors are errors.
fn parse_from<I, T>(argv: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::{CommandFactory, FromArgMatches};
    let mut command = help::command(Cli::command());
    let matches = command.try_get_matches_from_mut(argv)?;
    let mut cli = Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut command))?;
    cli.global.request_timeout_given = matches
        .value_source("request_timeout")
        .is_some_and(|source| source != clap::parser::ValueSource::DefaultValue);
    Ok(cli)
}

/// Routes logs to stderr: addonctl's warnings by default, more with `-v`, only errors with `-q`.
/// Other crates' logs (kube, hyper, rustls, the AWS SDK, …) stay silent at the default verbosity:
/// their failures reach the user as addonctl's own errors; `-v` shows their errors, `-vv` their
/// warnings, `-vvv` their info.
pub fn init_logging(invocation: &Invocation) {
    // The names the completion scripts ask for come without a word on stderr.
    let Invocation::Command(cli) = invocation else {
        return;
    };
    let global = &cli.global;
    // A running controller logs each reconcile, apply, drift correction and error (one line
    // each, timed), as controllers do.
    let controller = matches!(&cli.command, Command::Controller(args) if args.command.is_none())
        || matches!(&cli.command, Command::Serve(_));
    let level = match (global.quiet, global.verbose) {
        (true, _) => "error",
        (false, 0) if controller => "info",
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
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(settings::stderr_color());
    // Outside controller mode addonctl's warnings are the user's: `warning: …`, as its notes.
    let _ = if controller {
        builder.try_init()
    } else {
        builder.event_format(printer::UserLog::default()).try_init()
    };
}

/// The settings of a command that talks to the control plane (the cluster's first, as they are
/// used first).
fn cluster_settings(global: &GlobalArgs) -> anyhow::Result<(GlobalSettings, ClusterSettings)> {
    let cluster = ClusterSettings::resolve(global)?;
    Ok((GlobalSettings::resolve(global)?, cluster))
}

/// Runs one command, or prints the names a completion script asks for.
pub async fn run(invocation: Invocation) -> anyhow::Result<ExitCode> {
    let cli = match invocation {
        Invocation::Command(cli) => *cli,
        Invocation::Complete(complete) => {
            let CompleteCommand::Complete { what } = complete.command;
            let printer = Printer::new(true);
            return Ok(commands::completion::names(&complete.global, printer, what).await);
        }
    };
    let printer = Printer::new(cli.global.quiet);
    let global = &cli.global;
    match cli.command {
        Command::Render(args) => {
            let (global, cluster) = cluster_settings(global)?;
            commands::render::run(&global, &cluster, printer, args).await
        }
        Command::Lint(args) => {
            commands::lint::run(&GlobalSettings::resolve(global)?, printer, args).await
        }
        Command::Init(args) => commands::init::run(printer, &args),
        Command::Enable(args) => {
            let (global, cluster) = cluster_settings(global)?;
            commands::enable::run(&global, &cluster, printer, args).await
        }
        Command::Disable(args) => {
            let (global, cluster) = cluster_settings(global)?;
            commands::disable::run(&global, &cluster, printer, args).await
        }
        Command::Status(args) => {
            let (global, cluster) = cluster_settings(global)?;
            commands::status::run(&global, &cluster, printer, args).await
        }
        Command::Wait(args) => {
            let (global, cluster) = cluster_settings(global)?;
            commands::wait::run(&global, &cluster, printer, args).await
        }
        Command::List(args) => {
            let (global, cluster) = cluster_settings(global)?;
            commands::list::run(&global, &cluster, printer, args).await
        }
        Command::Diff(args) => {
            let (global, cluster) = cluster_settings(global)?;
            commands::diff::run(&global, &cluster, printer, args).await
        }
        Command::Upgrade(args) => {
            let (global, cluster) = cluster_settings(global)?;
            commands::upgrade::run(&global, &cluster, printer, args).await
        }
        Command::Get(args::GetCommand::Values(args)) => {
            let (global, cluster) = cluster_settings(global)?;
            commands::get::values(&global, &cluster, printer, &args).await
        }
        Command::History(args) => {
            let (global, cluster) = cluster_settings(global)?;
            commands::history::run(&global, &cluster, printer, &args).await
        }
        Command::Rollback(args) => {
            let (global, cluster) = cluster_settings(global)?;
            commands::rollback::run(&global, &cluster, printer, args).await
        }
        Command::Package(args) => {
            commands::publish::package(&GlobalSettings::resolve(global)?, printer, args).await
        }
        Command::Index(args) => commands::publish::index(printer, &args),
        Command::Push(args) => {
            commands::publish::push(&GlobalSettings::resolve(global)?, printer, args).await
        }
        Command::Registry(args) => {
            // Only a command that reaches the control plane needs its settings to be right.
            let cluster = (!args.local && args.registry_file.is_none())
                .then(|| ClusterSettings::resolve(global))
                .transpose()?;
            let global = GlobalSettings::resolve(global)?;
            commands::registry::run(&global, cluster.as_ref(), printer, args).await
        }
        Command::Cluster(command) => {
            let (global, cluster) = cluster_settings(global)?;
            Box::pin(commands::cluster::run(&global, &cluster, printer, command)).await
        }
        Command::Rollout(args::RolloutCommand::Run(args)) => {
            let (global, cluster) = cluster_settings(global)?;
            commands::rollout::run(&global, &cluster, printer, args).await
        }
        Command::Rollout(command) => {
            let (global, cluster) = cluster_settings(global)?;
            commands::rollout::control(&global, &cluster, printer, command).await
        }
        Command::Rbac(args) => commands::rbac::run(printer, &args),
        Command::Controller(args) => {
            if let Some(args::ControllerCommand::Manifests(manifests)) = &args.command {
                return commands::controller::manifests(
                    &GlobalSettings::resolve(global)?,
                    printer,
                    manifests,
                );
            }
            let (global, cluster) = cluster_settings(global)?;
            commands::controller::run(&global, &cluster, printer, args).await
        }
        Command::Serve(args) => {
            let (global, cluster) = cluster_settings(global)?;
            commands::serve::run(&global, &cluster, printer, args).await
        }
        Command::Completion(args) => commands::completion::run(printer, &args),
        Command::Man(args) => commands::man::run(printer, &args),
        Command::Version(args) => commands::version::run(global, printer, &args).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_options_after_the_command_are_parsed_and_known_as_given() {
        let cli = parse_from(["addonctl", "version", "--request-timeout", "1", "-q"]).unwrap();
        assert!(cli.global.request_timeout_given);
        assert!(cli.global.quiet);
        assert_eq!(
            cli.global.request_timeout,
            std::time::Duration::from_secs(1)
        );
        let cli = parse_from([
            "addonctl",
            "cluster",
            "detach",
            "m1",
            "--context",
            "blue",
            "-y",
        ])
        .unwrap();
        assert_eq!(cli.global.context.as_deref(), Some("blue"));
        assert!(matches!(
            cli.command,
            Command::Cluster(args::ClusterCommand::Detach { yes: true, .. })
        ));
        let cli = parse_from(["addonctl", "--request-timeout", "2", "version"]).unwrap();
        assert!(cli.global.request_timeout_given);
        let cli = parse_from(["addonctl", "version"]).unwrap();
        assert!(
            !cli.global.request_timeout_given
                || std::env::var_os("ADDONCTL_CLUSTER_TIMEOUT").is_some()
        );
        let cli = parse_from(["addonctl", "ls"]).unwrap();
        assert!(matches!(cli.command, Command::List(_)));
    }

    #[test]
    fn wait_takes_a_phase_and_a_duration_with_a_unit() {
        use std::time::Duration;
        let cli = parse_from([
            "addonctl",
            "wait",
            "a",
            "--for",
            "disabled",
            "--timeout",
            "2m",
        ])
        .unwrap();
        let Command::Wait(wait) = cli.command else {
            panic!("not `wait`");
        };
        assert_eq!(wait.wait_for, args::WaitFor::Disabled);
        assert_eq!(wait.timeout, Duration::from_secs(120));
        for (text, millis) in [
            ("90", 90_000),
            ("90s", 90_000),
            ("1h", 3_600_000),
            ("250ms", 250),
        ] {
            assert_eq!(
                args::parse_duration(text).map(|d| d.as_millis()),
                Ok(millis),
                "{text}"
            );
        }
        for bad in ["0", "5d", "-1s", "m", ""] {
            assert!(args::parse_duration(bad).is_err(), "{bad}");
        }
        assert!(parse_from(["addonctl", "status", "a", "--timeout", "5s"]).is_err());
    }

    #[test]
    fn every_timeout_and_interval_takes_the_same_durations() {
        use std::time::Duration;
        let five_minutes = Duration::from_secs(300);
        let cli = parse_from(["addonctl", "enable", "a", "--wait", "--timeout", "5m"]).unwrap();
        let Command::Enable(enable) = cli.command else {
            panic!("not `enable`");
        };
        assert_eq!(enable.timeout, five_minutes);
        // C6: `disable --timeout 40s`.
        let cli = parse_from(["addonctl", "disable", "a", "--wait", "--timeout", "40s"]).unwrap();
        let Command::Disable(disable) = cli.command else {
            panic!("not `disable`");
        };
        assert_eq!(disable.timeout, Duration::from_secs(40));
        let cli = parse_from(["addonctl", "upgrade", "a", "--wait", "--timeout", "1h"]).unwrap();
        let Command::Upgrade(upgrade) = cli.command else {
            panic!("not `upgrade`");
        };
        assert_eq!(upgrade.timeout, Duration::from_secs(3600));
        for argv in [
            &["addonctl", "enable", "a", "--dependency-timeout", "5m"][..],
            &["addonctl", "wait", "a", "--timeout", "5m"],
            &["addonctl", "status", "a", "-w", "--timeout", "5m"],
            &[
                "addonctl",
                "rollout",
                "run",
                "a",
                "--stages",
                "s.yaml",
                "--poll-interval",
                "5m",
            ],
            &["addonctl", "--request-timeout", "5m", "list"],
            &["addonctl", "--script-timeout", "5m", "list"],
            &["addonctl", "enable", "a", "--timeout", "300"],
            &["addonctl", "enable", "a", "--timeout", "4m60s"],
        ] {
            parse_from(argv.iter().copied()).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
        }
        // A refusal names the flag and says what is accepted.
        for argv in [
            &["addonctl", "enable", "a", "--timeout", "5 min"][..],
            &["addonctl", "disable", "a", "--timeout", "forever"],
            &["addonctl", "upgrade", "a", "--timeout", "0"],
        ] {
            let error = parse_from(argv.iter().copied()).unwrap_err().to_string();
            assert!(error.contains("--timeout"), "{error}");
            assert!(error.contains("`90s`, `5m`, `1h`"), "{error}");
        }
    }
}
