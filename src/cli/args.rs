//! clap definitions. Nothing here leaves the `cli` module.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Installs Kubernetes addons from registries; KubeVela-compatible.
#[derive(Debug, Parser)]
#[command(name = "addonctl", version, about, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Flags every command accepts.
#[derive(Debug, Args)]
#[command(next_help_heading = "Global options")]
pub struct GlobalArgs {
    /// More log output (-v info, -vv debug, -vvv trace), on stderr.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Only errors on stderr.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// The namespace KubeVela and addonctl keep their state in.
    #[arg(
        long,
        global = true,
        env = "KUBEVELA_SYSTEM_NAMESPACE",
        default_value = "vela-system"
    )]
    pub system_namespace: String,
    /// Wall-clock limit for each addon script, in seconds.
    #[arg(
        long,
        global = true,
        env = "ADDONCTL_SCRIPT_TIMEOUT",
        default_value_t = 5.0,
        value_name = "SECONDS"
    )]
    pub script_timeout: f64,
    /// Operation limit for each addon script.
    #[arg(
        long,
        global = true,
        env = "ADDONCTL_SCRIPT_MAX_OPERATIONS",
        default_value_t = 10_000_000
    )]
    pub script_max_operations: u64,
}

impl GlobalArgs {
    /// The sandbox limits these flags ask for.
    pub fn limits(&self) -> anyhow::Result<addonctl::render::Limits> {
        let deadline = std::time::Duration::try_from_secs_f64(self.script_timeout)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| {
                crate::cli::diagnostics::user(
                    "`--script-timeout` must be a positive number of seconds",
                )
            })?;
        Ok(addonctl::render::Limits {
            deadline,
            max_operations: self.script_max_operations,
            ..addonctl::render::Limits::default()
        })
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print every object `enable` would apply, without a cluster.
    Render(RenderArgs),
    /// Check an addon (or a directory of addons) for problems.
    Lint(LintArgs),
    /// Create a new addon that lints clean.
    Init(InitArgs),
}

/// Output formats of object-printing commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ObjectFormat {
    Yaml,
    Json,
}

#[derive(Debug, Args)]
pub struct RenderArgs {
    /// An addon directory, or the name of a built-in addon (`name` or `builtin/name`).
    pub addon: String,
    /// Parameters as `key=value` (dotted paths for nested keys, `a,b` or `{a,b}` for lists).
    pub args: Vec<String>,
    /// A YAML file of parameter values (repeatable; later files win; `key=value` wins over files).
    #[arg(short = 'f', long = "values", value_name = "FILE")]
    pub values: Vec<PathBuf>,
    /// Set a parameter to the contents of a file: `key=path` (repeatable).
    #[arg(long = "set-file", value_name = "KEY=PATH")]
    pub set_file: Vec<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = ObjectFormat::Yaml)]
    pub output: ObjectFormat,
    /// Print the parameters' JSON Schema instead of the objects.
    #[arg(long)]
    pub schema: bool,
    /// Print Secret data and `secret()` parameters instead of masking them.
    #[arg(long)]
    pub show_secrets: bool,
}

/// Output formats of reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Text,
    Json,
    Yaml,
}

#[derive(Debug, Args)]
pub struct LintArgs {
    /// An addon directory or a directory of addons.
    pub dir: PathBuf,
    /// Treat warnings as errors.
    #[arg(long)]
    pub strict: bool,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = ReportFormat::Text)]
    pub output: ReportFormat,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// The new addon's name (lowercase letters, digits and `-`).
    pub name: String,
    /// Where to create it (default: `./<name>`).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}
