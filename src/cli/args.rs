//! clap definitions. Nothing here leaves the `cli` module.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Installs Kubernetes addons from registries; KubeVela-compatible.
#[derive(Debug, Parser)]
#[command(name = "addonctl", version, about)]
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
    /// More log output (-v info, -vv debug, -vvv trace), on stderr; give it before the command.
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Only errors on stderr.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// The namespace KubeVela and addonctl keep their state in.
    #[arg(
        long,
        global = true,
        env = "KUBEVELA_SYSTEM_NAMESPACE",
        default_value = "vela-system"
    )]
    pub system_namespace: String,
    /// The kubeconfig file (default: `KUBECONFIG`, `~/.kube/config`, or in-cluster).
    #[arg(long, global = true, env = "KUBECONFIG", value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context (default: its current context).
    #[arg(long, global = true)]
    pub context: Option<String>,
    /// A local directory registry, searched before the built-in one (repeatable, in order).
    #[arg(long = "registry-dir", global = true, value_name = "DIR")]
    pub registry_dirs: Vec<PathBuf>,
    /// Which engine deploys addons' components: `vela` (KubeVela), `direct` (addonctl itself),
    /// `auto` (vela when the control plane serves KubeVela's Application).
    #[arg(long, global = true, value_enum, default_value_t = Engine::Auto, env = "ADDONCTL_ENGINE")]
    pub engine: Engine,
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
    /// Install an addon and its missing dependencies on the control plane.
    Enable(EnableArgs),
    /// Remove an addon.
    Disable(DisableArgs),
    /// Show an addon's phase, version, registry and clusters.
    Status(StatusArgs),
    /// List the addons of the registries and whether they are installed.
    List(ListArgs),
    /// Change an installed addon's parameters or version.
    Upgrade(UpgradeArgs),
}

#[derive(Debug, Args)]
pub struct ParameterArgs {
    /// Parameters as `key=value` (dotted paths for nested keys, `a,b` or `{a,b}` for lists).
    pub args: Vec<String>,
    /// A YAML file of parameter values (repeatable; later files win; `key=value` wins over files).
    #[arg(short = 'f', long = "values", value_name = "FILE")]
    pub values: Vec<PathBuf>,
    /// Set a parameter to the contents of a file: `key=path` (repeatable).
    #[arg(long = "set-file", value_name = "KEY=PATH")]
    pub set_file: Vec<String>,
}

#[derive(Debug, Args)]
pub struct EnableArgs {
    /// The addon: `name`, `registry/name`, or a directory.
    pub addon: String,
    #[command(flatten)]
    pub parameters: ParameterArgs,
    /// The version to install (default: the newest).
    #[arg(long)]
    pub version: Option<String>,
    /// Clusters to deploy to (the `clusters` parameter), comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub clusters: Option<Vec<String>>,
    /// Print the plan and every object; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Take over definitions owned by another addon or by nobody.
    #[arg(long)]
    pub override_definitions: bool,
    /// Do not check the addons' `system` requirements.
    #[arg(long)]
    pub skip_version_check: bool,
    /// Wait until the addon is enabled.
    #[arg(long)]
    pub wait: bool,
    /// How long `--wait` waits, in seconds.
    #[arg(long, default_value_t = 300)]
    pub timeout: u64,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = ReportFormat::Text)]
    pub output: ReportFormat,
    /// Print Secret data and `secret()` parameters in `--dry-run` output.
    #[arg(long)]
    pub show_secrets: bool,
}

#[derive(Debug, Args)]
pub struct DisableArgs {
    /// The addon.
    pub addon: String,
    /// Disable even when other addons or Applications still use it.
    #[arg(long)]
    pub force: bool,
    /// Wait until everything is gone.
    #[arg(long)]
    pub wait: bool,
    /// How long `--wait` waits, in seconds.
    #[arg(long, default_value_t = 120)]
    pub timeout: u64,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = ReportFormat::Text)]
    pub output: ReportFormat,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The addon.
    pub addon: String,
    /// Also description, available versions, dependencies and parameters.
    #[arg(short = 'v', long = "verbose-status")]
    pub detail: bool,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = ReportFormat::Text)]
    pub output: ReportFormat,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only this registry.
    #[arg(long)]
    pub registry: Option<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = ReportFormat::Text)]
    pub output: ReportFormat,
}

#[derive(Debug, Args)]
pub struct UpgradeArgs {
    /// The installed addon.
    pub addon: String,
    #[command(flatten)]
    pub parameters: ParameterArgs,
    /// Move to this version.
    #[arg(long, conflicts_with = "latest")]
    pub version: Option<String>,
    /// Move to the newest version.
    #[arg(long)]
    pub latest: bool,
    /// Take over definitions owned by another addon or by nobody.
    #[arg(long)]
    pub override_definitions: bool,
    /// Do not check the addons' `system` requirements.
    #[arg(long)]
    pub skip_version_check: bool,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = ReportFormat::Text)]
    pub output: ReportFormat,
}

/// The engine choice on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Engine {
    Auto,
    Vela,
    Direct,
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
    #[command(flatten)]
    pub parameters: ParameterArgs,
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

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_line_definition_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
