//! clap definitions. Nothing here leaves the `cli` module.

use std::path::PathBuf;

use addonctl::model::secret::SecretString;
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::cli::help;

mod fleet;
mod registry;

pub use fleet::*;
pub use registry::*;

/// Installs Kubernetes addons from registries; KubeVela-compatible.
#[derive(Debug, Parser)]
#[command(name = "addonctl", version, long_version = LONG_VERSION, about)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// `addonctl --version`: the client's version and commit.
const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("ADDONCTL_GIT_COMMIT"),
    ")"
);

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
    /// The kubeconfig file (default: the `KUBECONFIG` list, merged as kubectl does; `~/.kube/config`; in-cluster).
    #[arg(long, global = true, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context (default: its current context).
    #[arg(long, global = true)]
    pub context: Option<String>,
    /// A local directory registry, searched before the built-in one (repeatable, in order).
    #[arg(long = "registry-dir", global = true, value_name = "DIR")]
    pub registry_dirs: Vec<PathBuf>,
    /// Read registries again instead of using cached listings.
    #[arg(long, global = true)]
    pub refresh: bool,
    /// Which engine deploys addons' components: `vela` (KubeVela), `direct` (addonctl itself),
    /// `auto` (vela when the control plane serves KubeVela's Application).
    #[arg(long, global = true, value_enum, default_value_t = Engine::Auto, env = "ADDONCTL_ENGINE")]
    pub engine: Engine,
    /// Requests per second to each cluster (the control plane and every managed cluster has a
    /// bucket of its own).
    #[arg(
        long,
        global = true,
        env = "ADDONCTL_QPS",
        default_value_t = addonctl::cluster::rate::DEFAULT_QPS,
        value_parser = clap::value_parser!(u32).range(1..),
        value_name = "N"
    )]
    pub qps: u32,
    /// Requests that may go to one cluster at once before `--qps` paces them.
    #[arg(
        long,
        global = true,
        env = "ADDONCTL_BURST",
        default_value_t = addonctl::cluster::rate::DEFAULT_BURST,
        value_parser = clap::value_parser!(u32).range(1..),
        value_name = "N"
    )]
    pub burst: u32,
    /// The limit of each request to a cluster (the control plane and every managed cluster)
    /// (`30s`, `1m`, or seconds): connecting, reading, writing and the whole request. A request
    /// still unanswered after a few seconds is announced on stderr.
    #[arg(
        long,
        global = true,
        env = "ADDONCTL_CLUSTER_TIMEOUT",
        default_value = "30s",
        value_parser = parse_duration,
        value_name = "TIME"
    )]
    pub request_timeout: std::time::Duration,
    /// Wall-clock limit for each addon script (`5s`, `500ms`, or seconds).
    #[arg(
        long,
        global = true,
        env = "ADDONCTL_SCRIPT_TIMEOUT",
        default_value = "5s",
        value_parser = parse_duration,
        value_name = "TIME"
    )]
    pub script_timeout: std::time::Duration,
    /// Operation limit for each addon script.
    #[arg(
        long,
        global = true,
        env = "ADDONCTL_SCRIPT_MAX_OPERATIONS",
        default_value_t = 10_000_000
    )]
    pub script_max_operations: u64,
    /// Whether `--request-timeout` was given (flag or environment), not its default: `version`
    /// waits less for the server than the default.
    #[arg(skip)]
    pub request_timeout_given: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print every object `enable` would apply, without a cluster.
    #[command(after_help = help::RENDER)]
    Render(RenderArgs),
    /// Check an addon (or a directory of addons) for problems.
    #[command(after_help = help::LINT)]
    Lint(LintArgs),
    /// Create a new addon that lints clean.
    #[command(after_help = help::INIT)]
    Init(InitArgs),
    /// Install an addon and its missing dependencies on the control plane.
    #[command(visible_alias = "install", after_help = help::ENABLE)]
    Enable(EnableArgs),
    /// Remove an addon.
    #[command(visible_alias = "uninstall", after_help = help::DISABLE)]
    Disable(DisableArgs),
    /// Show an addon's phase, version, registry and clusters.
    #[command(after_help = help::STATUS)]
    Status(StatusArgs),
    /// Wait until an addon is enabled (its workloads ready) or disabled.
    #[command(after_help = help::WAIT)]
    Wait(WaitArgs),
    /// List the addons of the registries and whether they are installed.
    #[command(visible_alias = "ls", after_help = help::LIST)]
    List(ListArgs),
    /// Show what `enable` (with these arguments) would change, per cluster; change nothing.
    /// Exits 1 when something would change, 0 when nothing would.
    #[command(after_help = help::DIFF)]
    Diff(DiffArgs),
    /// Change an installed addon's parameters or version.
    #[command(after_help = help::UPGRADE)]
    Upgrade(UpgradeArgs),
    /// Print what is stored for an installed addon.
    #[command(subcommand, after_help = help::GET)]
    Get(GetCommand),
    /// Show an installed addon's revisions (as `helm history`).
    #[command(after_help = help::HISTORY)]
    History(HistoryArgs),
    /// Apply an earlier revision of an installed addon again (its package and arguments).
    #[command(after_help = help::ROLLBACK)]
    Rollback(RollbackArgs),
    /// Package an addon (or a directory of addons) as `<name>-<version>.tgz`, after linting it.
    #[command(after_help = help::PACKAGE)]
    Package(PackageArgs),
    /// Write a Helm `index.yaml` for the packages in a directory.
    #[command(after_help = help::INDEX)]
    Index(IndexArgs),
    /// Publish addons to an OCI registry as Helm charts (as `helm push`), adding them to its
    /// catalog chart.
    #[command(after_help = help::PUSH)]
    Push(PushArgs),
    /// Add, change, list and remove the registries addons come from.
    #[command(after_help = help::REGISTRY)]
    Registry(RegistryArgs),
    /// Manage the clusters addons are deployed to.
    #[command(subcommand, after_help = help::CLUSTER)]
    Cluster(ClusterCommand),
    /// Roll an addon out to clusters stage by stage, each stage gated on health.
    #[command(subcommand, after_help = help::ROLLOUT)]
    Rollout(RolloutCommand),
    /// Print the ClusterRoles addonctl ships (`addonctl-viewer`, `-operator`, `-admin`), for
    /// `kubectl apply -f -`.
    #[command(after_help = help::RBAC)]
    Rbac(RbacArgs),
    /// Run the controller that reconciles `Addon` resources, or print its manifests.
    #[command(after_help = help::CONTROLLER)]
    Controller(ControllerArgs),
    /// Serve the app store: a web UI and an HTTP API to browse, configure, preview, install
    /// and watch addons (loopback only, with your kubeconfig).
    #[command(after_help = help::SERVE)]
    Serve(ServeArgs),
    /// Print a shell completion script (bash, zsh, fish or powershell) on stdout.
    #[command(after_help = help::COMPLETION)]
    Completion(CompletionArgs),
    /// Write the man pages: `addonctl.1` and one page per command (`addonctl-enable.1`,
    /// `addonctl-cluster-join.1`, …).
    #[command(after_help = help::MAN)]
    Man(ManArgs),
    /// Print addonctl's version and commit, and the control plane's Kubernetes and KubeVela
    /// versions when it answers within `--request-timeout` (default here: 5 seconds).
    #[command(after_help = help::VERSION)]
    Version(VersionArgs),
}

/// `addonctl serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The address to listen on (loopback only; port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub addr: std::net::SocketAddr,
    /// Print the URL without opening a browser.
    #[arg(long)]
    pub no_browser: bool,
    /// Serve in a cluster: every request carries a bearer token the API server accepts, and
    /// the server acts as its owner (TokenReview, impersonation); `--addr` may then be any
    /// address (e.g. `0.0.0.0:8080` behind a Service).
    #[arg(long)]
    pub in_cluster: bool,
    /// How often the registries are listed again (at least 10s).
    #[arg(long, default_value = "10m", value_parser = parse_duration)]
    pub sync_interval: std::time::Duration,
}

/// `addonctl [global options] __complete addons|clusters`: the names the completion scripts
/// offer. A parser of its own, not a command of [`Cli`], so that no completion script offers it.
#[derive(Debug, Parser)]
#[command(name = "addonctl")]
pub struct CompleteCli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: CompleteCommand,
}

/// The one command of [`CompleteCli`].
#[derive(Debug, Subcommand)]
pub enum CompleteCommand {
    /// The names, one a line.
    #[command(name = "__complete")]
    Complete {
        /// Which names.
        #[arg(value_enum)]
        what: CompleteWhat,
    },
}

/// The kinds of names the completion scripts ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompleteWhat {
    /// Addon names: the registries readable at once and the installed addons.
    Addons,
    /// Cluster names: `local` and the joined clusters.
    Clusters,
}

#[derive(Debug, Args)]
pub struct CompletionArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// The directory to write the pages into (created when missing).
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct VersionArgs {
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = ReportFormat::Text)]
    pub output: ReportFormat,
}

#[derive(Debug, Subcommand)]
pub enum GetCommand {
    /// The stored arguments of an installed addon, reusable as `enable <addon> -f <file>`.
    #[command(after_help = help::GET_VALUES)]
    Values(GetValuesArgs),
}

#[derive(Debug, Args)]
pub struct GetValuesArgs {
    /// The installed addon.
    pub addon: String,
    /// Print `secret()` parameters as they are (masked otherwise).
    #[arg(long)]
    pub show_secrets: bool,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = ObjectFormat::Yaml)]
    pub output: ObjectFormat,
}

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The installed addon.
    pub addon: String,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = ReportFormat::Text)]
    pub output: ReportFormat,
}

#[derive(Debug, Args)]
pub struct RollbackArgs {
    /// The installed addon.
    pub addon: String,
    /// The revision to go back to (default: the one before the deployed one).
    pub revision: Option<u32>,
    /// Revisions the addon's history keeps.
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub history_max: u32,
    /// Take over definitions owned by another addon or by nobody.
    #[arg(long)]
    pub override_definitions: bool,
    /// Take over existing objects addonctl did not create (`disable` gives them back).
    #[arg(long)]
    pub adopt: bool,
    /// Do not check the addons' `system` requirements.
    #[arg(long)]
    pub skip_version_check: bool,
    /// Roll back even when APIs the addons use (kinds, definitions) are served by nobody yet.
    #[arg(long)]
    pub skip_api_check: bool,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = ReportFormat::Text)]
    pub output: ReportFormat,
    #[command(flatten)]
    pub lock: LockArgs,
    #[command(flatten)]
    pub controller: ControllerGuardArgs,
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
    /// Change nothing: print the plan (`client`; offline too) or the servers' verdicts (`server`).
    #[arg(long, value_enum, num_args = 0..=1, require_equals = true, default_missing_value = "client", value_name = "MODE")]
    pub dry_run: Option<DryRun>,
    /// Wait until the addon is enabled.
    #[arg(long)]
    pub wait: bool,
    /// How long `--wait` waits (`90s`, `5m`, `1h`, or seconds).
    #[arg(long, default_value = "5m", value_parser = parse_duration, value_name = "TIME")]
    pub timeout: std::time::Duration,
    /// Direct engine: how long to wait for a dependency's workloads before applying what
    /// needs it (0 = do not wait).
    #[arg(long, default_value = "5m", value_parser = parse_duration_or_zero, value_name = "TIME")]
    pub dependency_timeout: std::time::Duration,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = ReportFormat::Text)]
    pub output: ReportFormat,
    /// Print Secret data and `secret()` parameters with `--dry-run`.
    #[arg(long)]
    pub show_secrets: bool,
    #[command(flatten)]
    pub lock: LockArgs,
    #[command(flatten)]
    pub plan: PlanFlags,
    #[command(flatten)]
    pub declarative: DeclarativeArgs,
    #[command(flatten)]
    pub controller: ControllerGuardArgs,
}

/// The flags `enable` and `upgrade` share: what the plan may do and what its revision keeps.
#[derive(Debug, Args)]
pub struct PlanFlags {
    /// Start from the defaults, not an installed addon's stored arguments and clusters
    /// (otherwise what is given is merged over them).
    #[arg(long)]
    pub reset_values: bool,
    /// Revisions kept in `addonctl history` (default 10).
    #[arg(long, value_name = "N", default_value_t = 10, hide_default_value = true, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub history_max: u32,
    /// Take over definitions owned by another addon or by nobody.
    #[arg(long)]
    pub override_definitions: bool,
    /// Take over existing objects addonctl did not create (`disable` gives them back).
    #[arg(long)]
    pub adopt: bool,
    /// Do not check the addons' `system` requirements.
    #[arg(long)]
    pub skip_version_check: bool,
    /// Enable even when APIs the addons use (kinds, definitions) are served by nobody yet.
    #[arg(long)]
    pub skip_api_check: bool,
    /// Take a version whose OCI tag now names another chart than the one installed (named in
    /// the error that needs it, and in docs/oci.md; kept out of `enable --help`, one screen).
    #[arg(long, hide = true)]
    pub allow_moved_tag: bool,
}

impl PlanFlags {
    /// The library's request for `reference` at `version` with the arguments `given`.
    pub fn request(
        &self,
        reference: String,
        version: Option<String>,
        given: addonctl::params::Input,
    ) -> addonctl::plan::EnableRequest {
        // `registry/addon@sha256:…`: a chart pinned by its manifest digest.
        let (reference, version) = match (reference.split_once('@'), version) {
            (Some((name, digest)), None) if digest.starts_with("sha256:") => {
                (name.to_owned(), Some(digest.to_owned()))
            }
            (_, version) => (reference, version),
        };
        addonctl::plan::EnableRequest {
            reference,
            version,
            args: given,
            skip_version_check: self.skip_version_check,
            override_definitions: self.override_definitions,
            adopt: self.adopt,
            skip_api_check: self.skip_api_check,
            reset_values: self.reset_values,
            allow_moved_tag: self.allow_moved_tag,
            history: addonctl::state::revisions::History {
                max: Some(self.history_max as usize),
                description: None,
            },
            ..addonctl::plan::EnableRequest::default()
        }
    }
}

/// `enable --declarative`: an `Addon` resource for the controller instead of an apply. Only
/// `--declarative` is in `enable --help` (which stays one screen); the others are in
/// docs/multi-cluster/controller.md, in `--declarative`'s errors and in the examples.
#[derive(Debug, Args)]
pub struct DeclarativeArgs {
    /// Write an `Addon` for `addonctl controller` instead of applying.
    #[arg(long, conflicts_with_all = ["wait", "adopt", "override_definitions", "reset_values", "show_secrets"])]
    pub declarative: bool,
    /// With `--declarative`: the target clusters by the labels of their cluster Secrets
    /// (`env=prod,region=eu`; `''` = every cluster, `local` included).
    #[arg(
        long,
        hide = true,
        value_name = "K=V,...",
        requires = "declarative",
        conflicts_with = "clusters"
    )]
    pub cluster_selector: Option<String>,
    /// With `--declarative`: when objects on the clusters differ from what the controller
    /// applied, apply them again (`correct`, the default), report (`warn`) or `ignore`.
    #[arg(
        long,
        hide = true,
        value_enum,
        value_name = "POLICY",
        requires = "declarative"
    )]
    pub drift: Option<DriftChoice>,
    /// With `--declarative`: declare it suspended (the controller writes nothing until
    /// `suspend` is false).
    #[arg(long, hide = true, requires = "declarative")]
    pub suspend: bool,
}

/// The drift policies of an `Addon`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DriftChoice {
    // Apply drifted or deleted objects again.
    Correct,
    // Report only (condition, Event, metric).
    Warn,
    // Do nothing.
    Ignore,
}

/// Commands that write an addon the controller may own.
#[derive(Debug, Args)]
pub struct ControllerGuardArgs {
    /// Apply even though an `Addon` resource declares this addon (the controller applies the
    /// `Addon`'s spec again at its next reconcile unless it is suspended). Named in the refusal
    /// it overrides; not in `--help`.
    #[arg(long, hide = true)]
    pub override_controller: bool,
}

#[derive(Debug, Args)]
pub struct DisableArgs {
    /// The addon.
    pub addon: String,
    /// Disable even when other addons, Applications or custom resources still use it.
    #[arg(long)]
    pub force: bool,
    /// Also disable the dependencies it brought in that no other addon needs any more.
    #[arg(long)]
    pub prune_dependencies: bool,
    /// Print what would be deleted, given back and kept; change nothing.
    #[arg(long, conflicts_with = "wait")]
    pub dry_run: bool,
    /// Wait until everything is gone.
    #[arg(long)]
    pub wait: bool,
    /// How long `--wait` waits (`90s`, `5m`, `1h`, or seconds).
    #[arg(long, default_value = "2m", value_parser = parse_duration, value_name = "TIME")]
    pub timeout: std::time::Duration,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = ReportFormat::Text)]
    pub output: ReportFormat,
    #[command(flatten)]
    pub lock: LockArgs,
    /// Delete the addon's `Addon` resource (and its secret-parameter Secret); the controller
    /// then disables the addon (its finalizer runs the guarded disable).
    #[arg(long, conflicts_with_all = ["force", "prune_dependencies"])]
    pub declarative: bool,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The addon.
    pub addon: String,
    /// Also description, available versions, dependencies and parameters.
    #[arg(short = 'v', long = "verbose-status", conflicts_with = "watch")]
    pub detail: bool,
    /// Keep watching: a per-cluster table redrawn on a terminal, one line per change when
    /// piped; stops on Ctrl-C (exit 0) or after `--timeout`.
    #[arg(short, long)]
    pub watch: bool,
    /// With `--watch`: stop watching after this long (`90s`, `5m`, `1h`, or seconds).
    #[arg(long, requires = "watch", value_parser = parse_duration, value_name = "TIME")]
    pub timeout: Option<std::time::Duration>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = ReportFormat::Text)]
    pub output: ReportFormat,
}

/// The phases `wait` waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WaitFor {
    Enabled,
    Disabled,
}

#[derive(Debug, Args)]
pub struct WaitArgs {
    /// The addon.
    pub addon: String,
    /// The phase to wait for.
    #[arg(long = "for", value_enum, default_value_t = WaitFor::Enabled)]
    pub wait_for: WaitFor,
    /// How long to wait (`90s`, `5m`, `1h`, or seconds).
    #[arg(long, default_value = "5m", value_parser = parse_duration, value_name = "TIME")]
    pub timeout: std::time::Duration,
}

/// The forms of a duration, said when one is refused.
pub const DURATION_FORMS: &str =
    "a number of seconds (`90`, `2.5`) or numbers with `ms`, `s`, `m` or `h` (`90s`, `5m`, `1h`, `1m30s`)";

/// A duration of every `--timeout` and interval flag: a positive number of seconds, or numbers
/// with `ms`, `s`, `m` or `h` (`90s`, `5m`, `1h`, `1m30s`).
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let duration = parse_duration_or_zero(text)?;
    if duration.is_zero() {
        return Err(format!(
            "`{text}` is not longer than zero: use {DURATION_FORMS}"
        ));
    }
    Ok(duration)
}

/// A [`parse_duration`] that may be zero (for flags where `0` means "off").
pub fn parse_duration_or_zero(text: &str) -> Result<std::time::Duration, String> {
    let refused = || format!("`{text}` is not a duration: use {DURATION_FORMS}");
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(refused());
    }
    let number_end = |rest: &str| {
        rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len())
    };
    let mut rest = trimmed;
    let mut seconds = 0.0_f64;
    let mut parts = 0;
    while !rest.is_empty() {
        let split = number_end(rest);
        let (number, after) = rest.split_at(split);
        let unit_end = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, next) = after.split_at(unit_end);
        let scale = match unit {
            // A plain number is seconds, alone only.
            "" if parts == 0 && next.is_empty() => 1.0,
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(refused()),
        };
        let value: f64 = number.parse().map_err(|_| refused())?;
        seconds += value * scale;
        parts += 1;
        rest = next;
    }
    std::time::Duration::try_from_secs_f64(seconds).map_err(|_| refused())
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only this registry.
    #[arg(long)]
    pub registry: Option<String>,
    /// Only installed addons.
    #[arg(long)]
    pub installed: bool,
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
    #[command(flatten)]
    pub plan: PlanFlags,
    /// Change nothing: print the plan (`client`) or the API servers' verdict on each object
    /// (`server`).
    #[arg(long, value_enum, num_args = 0..=1, require_equals = true, default_missing_value = "client", value_name = "MODE")]
    pub dry_run: Option<DryRun>,
    /// Print Secret data and `secret()` parameters in `--dry-run` output.
    #[arg(long)]
    pub show_secrets: bool,
    /// Wait until the addon is enabled again (its workloads ready).
    #[arg(long, conflicts_with = "dry_run")]
    pub wait: bool,
    /// How long `--wait` waits (`90s`, `5m`, `1h`, or seconds).
    #[arg(long, default_value = "5m", value_parser = parse_duration, value_name = "TIME")]
    pub timeout: std::time::Duration,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = ReportFormat::Text)]
    pub output: ReportFormat,
    #[command(flatten)]
    pub lock: LockArgs,
    #[command(flatten)]
    pub controller: ControllerGuardArgs,
}

/// `--dry-run`'s modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DryRun {
    // The plan and every object, rendered here.
    Client,
    // Every object dry-run by the API servers (`dryRun=All`), nothing stored.
    Server,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The addon: `name`, `registry/name`, or a directory.
    pub addon: String,
    #[command(flatten)]
    pub parameters: ParameterArgs,
    /// Compare with this version (default: what `enable` would pick, the newest).
    #[arg(long)]
    pub version: Option<String>,
    /// Clusters to deploy to (the `clusters` parameter), comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub clusters: Option<Vec<String>>,
    /// Start from the defaults instead of the stored arguments and clusters (keys dropped show
    /// as "reset to default").
    #[arg(long)]
    pub reset_values: bool,
    /// Do not check the addons' `system` requirements.
    #[arg(long)]
    pub skip_version_check: bool,
    /// Plan even when APIs the addons use (kinds, definitions) are served by nobody yet.
    #[arg(long)]
    pub skip_api_check: bool,
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
    /// An addon directory, or an addon of the registries (`name` or `registry/name`).
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
    /// KubeVela's CUE layout (`parameter.cue`, `template.cue`, `resources/`) instead of Rhai.
    #[arg(long)]
    pub cue: bool,
}

#[derive(Debug, Args)]
pub struct PackageArgs {
    /// An addon directory or a directory of addons.
    pub dir: PathBuf,
    /// Where to write the packages (default: the current directory).
    #[arg(short = 'd', long = "destination", value_name = "DIR")]
    pub destination: Option<PathBuf>,
    /// The former name of `--destination` (`-o` is an output format everywhere else): still
    /// taken, with a note; `-o json|yaml|text` is refused rather than made a directory.
    #[arg(
        short = 'o',
        long = "output-dir",
        value_name = "DIR",
        hide = true,
        conflicts_with = "destination"
    )]
    pub output_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct PushArgs {
    /// A package (`.tgz` from `addonctl package`), an addon directory or a directory of addons.
    pub source: PathBuf,
    /// The registry: `oci://host[:port]/prefix`.
    pub url: String,
    /// Plain HTTP (a loopback registry only).
    #[arg(long)]
    pub plain_http: bool,
    /// A user name.
    #[arg(long)]
    pub username: Option<String>,
    /// A password or access token for `--username`.
    #[arg(long, env = "ADDONCTL_REGISTRY_PASSWORD", hide_env_values = true, value_parser = registry::secret_flag)]
    pub password: Option<SecretString>,
    /// A PEM file of CA certificates to trust.
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct IndexArgs {
    /// The directory holding the `.tgz` packages; `index.yaml` is written there.
    pub dir: PathBuf,
    /// The URL the packages will be served from (each package's URL is this plus its file name).
    #[arg(long)]
    pub url: String,
    /// An existing `index.yaml` to merge with (its entries are kept).
    #[arg(long, value_name = "FILE")]
    pub merge: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    #[test]
    fn the_command_line_definition_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
        crate::cli::help::command(super::Cli::command()).debug_assert();
    }

    #[test]
    fn credential_flags_never_show_in_debug_output() {
        let cli = super::Cli::try_parse_from([
            "addonctl",
            "registry",
            "add",
            "team",
            "--type",
            "helm",
            "--endpoint",
            "http://127.0.0.1:1/charts",
            "--token",
            "t0ken-value",
            "--password",
            "pa55word-value",
            "--ssh-key-passphrase",
            "phrase-value",
        ])
        .unwrap();
        let shown = format!("{cli:?}");
        assert!(shown.contains("team"), "{shown}");
        for secret in ["t0ken-value", "pa55word-value", "phrase-value"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
    }
}
