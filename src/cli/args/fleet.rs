//! clap definitions of the multi-cluster commands: `controller`, `rbac`, `cluster`, `rollout`.

#[allow(clippy::wildcard_imports)]
use super::*;

#[derive(Debug, Args)]
pub struct ControllerArgs {
    /// `manifests`: print the CRD, RBAC and Deployment instead of running.
    #[command(subcommand)]
    pub command: Option<ControllerCommand>,
    /// Where `/healthz`, `/readyz` and `/metrics` listen (port 0: any free port, printed on
    /// stderr).
    #[arg(long, default_value = "127.0.0.1:9090")]
    pub metrics_addr: String,
    /// Reconcile only while holding the Lease `addonctl-controller` (run several replicas
    /// safely); `--leader-elect=false` reconciles at once.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub leader_elect: bool,
    /// How often the registries are listed again (`30s`, `5m`, `1h`; `0`: never): an `Addon`
    /// whose version would change (a new version matching `spec.version`) is rolled out.
    /// `POST /webhook/registry` on the metrics address re-lists at once.
    #[arg(long, default_value = "5m", visible_alias = "registry-poll")]
    pub registry_interval: String,
    /// How often an `Addon`'s clusters are compared with its record when its drift policy is
    /// `correct` or `warn` (`10s`, `1m`).
    #[arg(long, default_value = "10s")]
    pub drift_interval: String,
    /// The longest time between two looks at a rollout's gate while a cluster of its batch is
    /// not healthy yet (`3s`, `1m`): a change of its workloads is looked at at once.
    #[arg(long, default_value = "3s")]
    pub gate_poll: String,
    /// The first retry's delay after a failed reconcile (doubling each failure).
    #[arg(long, default_value = "5s")]
    pub backoff_initial: String,
    /// The longest retry delay, and the pace of a `Stalled` `Addon`'s retries.
    #[arg(long, default_value = "5m")]
    pub backoff_max: String,
    /// Failures in a row before an `Addon` is `Stalled`.
    #[arg(long, default_value_t = 6)]
    pub retry_budget: u32,
    /// `Addon`s reconciled at once (on the worker threads, at most this many).
    #[arg(long, default_value_t = 4)]
    pub concurrency: u16,
    /// Worker threads, for the reconciles and for the clusters of each (default: one per CPU
    /// available; the clusters of one reconcile are spread over them, at most 128 at once).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub workers: Option<u16>,
    /// Whose rights an `Addon` is applied within: `author` (the user who wrote it, named by
    /// the annotation `addonctl.io/author` that the shipped admission policy keeps true) or
    /// `controller` (its own: anyone who may write `Addon`s gets the controller's rights).
    #[arg(long, value_enum, default_value_t = AuthorizeAsArg::Author)]
    pub authorize_as: AuthorizeAsArg,
}

/// `--authorize-as`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AuthorizeAsArg {
    /// The `Addon`'s author's rights.
    Author,
    /// The controller's own rights.
    Controller,
}

#[derive(Debug, Subcommand)]
pub enum ControllerCommand {
    /// Print the `Addon` CRD, the controller's ServiceAccount, least-privilege RBAC and
    /// Deployment, for `kubectl apply -f -`.
    #[command(after_help = help::CONTROLLER_MANIFESTS)]
    Manifests(ManifestsArgs),
}

#[derive(Debug, Args)]
pub struct ManifestsArgs {
    /// The controller's image (an image of this build of addonctl; there is no default).
    #[arg(long, required_unless_present = "crd_only")]
    pub image: Option<String>,
    /// Only the `Addon` CRD and the admission policy that keeps `Addon` authors true: for a
    /// controller run elsewhere (`addonctl controller` with a kubeconfig).
    #[arg(long)]
    pub crd_only: bool,
    /// The namespace (default: the system namespace).
    #[arg(long)]
    pub namespace: Option<String>,
    /// Replicas of the Deployment (one leads, the others stand by).
    #[arg(long, default_value_t = 2)]
    pub replicas: u32,
    /// Bind ClusterRole `addonctl-admin` instead of `addonctl-operator` (addons that put
    /// arbitrary objects on the control plane need it).
    #[arg(long)]
    pub admin: bool,
    /// Also serve the app store (`addonctl serve --in-cluster`) from each replica, with a
    /// Service `addonctl-controller-serve` and the rights to act as each caller.
    #[arg(long, conflicts_with = "crd_only")]
    pub serve: bool,
}

#[derive(Debug, Args)]
pub struct RbacArgs {
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = ObjectFormat::Yaml)]
    pub output: ObjectFormat,
}

#[derive(Debug, Args)]
pub struct LockArgs {
    /// Take the addon's (or registry's) lock from another command: only when that command is
    /// gone (a lock expires a minute after its command stopped).
    #[arg(long)]
    pub force_unlock: bool,
}

#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// Join a cluster from a kubeconfig (stored as KubeVela stores clusters).
    #[command(after_help = help::CLUSTER_JOIN)]
    Join {
        /// The cluster's name.
        name: String,
        /// The kubeconfig holding its credentials (not the global `--kubeconfig`).
        #[arg(long = "from-kubeconfig", value_name = "FILE")]
        from_kubeconfig: PathBuf,
        /// The kubeconfig context (default: its current context).
        #[arg(long = "from-context")]
        from_context: Option<String>,
        /// Labels `k=v,…` for `clusterLabelSelector`; on a re-join they replace the stored set
        /// (without `--labels` a re-join keeps it).
        #[arg(long)]
        labels: Vec<String>,
        /// On a re-join, drop the cluster's stored labels.
        #[arg(long, conflicts_with = "labels")]
        reset_labels: bool,
        /// Do not ask before a re-join drops labels (`--reset-labels`, or `--labels` without
        /// some stored key; only asked on a terminal).
        #[arg(short, long)]
        yes: bool,
        /// Output format.
        #[arg(short, long, value_enum, default_value_t = ReportFormat::Text)]
        output: ReportFormat,
    },
    /// List `local` and the joined clusters: endpoint, credential type, labels, reachability, version.
    #[command(after_help = help::CLUSTER_LIST)]
    List {
        /// Output format.
        #[arg(short, long, value_enum, default_value_t = ReportFormat::Text)]
        output: ReportFormat,
    },
    /// Delete what addons applied to a cluster, then forget the cluster (on a terminal, asks
    /// first).
    #[command(after_help = help::CLUSTER_DETACH)]
    Detach {
        /// The cluster's name.
        name: String,
        /// Detach even when the cluster cannot be cleaned.
        #[arg(long)]
        force: bool,
        /// Print what would be deleted, given back and kept there; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Do not ask for confirmation (only asked on a terminal).
        #[arg(short, long)]
        yes: bool,
        /// Output format.
        #[arg(short, long, value_enum, default_value_t = ReportFormat::Text)]
        output: ReportFormat,
    },
    /// Replace a cluster's labels.
    #[command(after_help = help::CLUSTER_LABELS)]
    Labels {
        /// The cluster's name.
        name: String,
        /// Labels `k=v` (all of them; the old ones are replaced).
        labels: Vec<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum RolloutCommand {
    /// Enable an addon stage by stage: each batch of clusters is applied (with the clusters
    /// before it), then must stay healthy on the new revision for the stage's soak time before
    /// the next one; stops at the first failed gate (exit 1), later stages untouched.
    #[command(after_help = help::ROLLOUT_RUN)]
    Run(RolloutRunArgs),
    /// Show the controller's staged rollout of an `Addon`: phase, stage, clusters done,
    /// pending and failed (with the reasons), soak left.
    #[command(after_help = help::ROLLOUT_STATUS)]
    Status(RolloutAddonArgs),
    /// Pause the controller's rollout of an `Addon` (`spec.rollout.paused: true`): nothing new
    /// is applied; the status is kept.
    #[command(after_help = help::ROLLOUT_PAUSE)]
    Pause(RolloutAddonArgs),
    /// Resume a paused rollout (clears `spec.rollout.paused`).
    #[command(after_help = help::ROLLOUT_RESUME)]
    Resume(RolloutAddonArgs),
}

#[derive(Debug, Args)]
pub struct RolloutAddonArgs {
    /// The `Addon` (its name: the addon's).
    pub addon: String,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = ReportFormat::Text)]
    pub output: ReportFormat,
}

#[derive(Debug, Args)]
pub struct RolloutRunArgs {
    /// The addon: `name`, `registry/name`, or a directory.
    pub addon: String,
    /// The stages: a YAML file `{stages: [{name, clusterSelector, maxConcurrency, maxFailures,
    /// soakSeconds}], progressDeadlineSeconds}`.
    #[arg(long, value_name = "FILE")]
    pub stages: PathBuf,
    #[command(flatten)]
    pub parameters: ParameterArgs,
    /// The version to roll out (default: the newest).
    #[arg(long)]
    pub version: Option<String>,
    /// The longest time between two checks of a gate (`2s`, `500ms`, or seconds): a change of
    /// a watched workload, or a soak's end, is checked at once.
    #[arg(long, default_value = "2s", value_parser = parse_duration, value_name = "TIME")]
    pub poll_interval: std::time::Duration,
    /// Do not check the addons' `system` requirements.
    #[arg(long)]
    pub skip_version_check: bool,
    /// Take over existing objects addonctl did not create (`disable` gives them back).
    #[arg(long)]
    pub adopt: bool,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = ReportFormat::Text)]
    pub output: ReportFormat,
    #[command(flatten)]
    pub lock: LockArgs,
}
