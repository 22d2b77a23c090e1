//! The crate's one error: every module's typed error as a source, the stages' own failures,
//! and what kind of failure each is ([`Error::kind`], one [`ErrorKind`] vocabulary that each
//! front end maps once: the CLI to its exit code). A low module: it imports module errors and
//! pure data ([`crate::model`]), never a stage.

mod authoring;
mod record;
mod registry;

pub use authoring::AuthoringError;
pub use record::{RecordError, RevisionError};
pub use registry::RegistryError;

use crate::model::access::Denied;
use crate::model::registry::InvalidRegistry;
pub use crate::model::ErrorKind;
use crate::resolve::ResolveError;
use crate::{cluster, loader, params, render, resolve, source};

/// Any error the library returns.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading from a registry failed.
    #[error(transparent)]
    Source(#[from] source::Error),
    /// An addon's files could not be loaded into a package.
    #[error(transparent)]
    Load(#[from] loader::Error),
    /// Parameters were declared or given wrongly.
    #[error(transparent)]
    Params(#[from] params::Error),
    /// Rendering an addon failed.
    #[error(transparent)]
    Render(#[from] render::Error),
    /// A registry definition that cannot be used (a bad name or type).
    #[error(transparent)]
    InvalidRegistry(#[from] InvalidRegistry),
    /// The catalogue has no such addon (or version), or a registry could not be read.
    #[error(transparent)]
    Catalog(#[from] source::catalog::Error),
    /// Storing, changing or defining a registry failed on what was given or found.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// An addon directory or archive is not usable.
    #[error(transparent)]
    Authoring(#[from] AuthoringError),
    /// The addon a user named (a directory or a name) was not found.
    #[error(transparent)]
    Locate(#[from] loader::LocateError),
    /// Talking to a cluster failed.
    #[error(transparent)]
    Cluster(#[from] cluster::Error),
    /// A local file could not be read or written.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// No plan satisfies the dependency constraints and system requirements.
    #[error(transparent)]
    Resolve(#[from] resolve::ResolveError),
    /// The caller may not do what the command needs on the control plane (checked before any
    /// write).
    #[error(transparent)]
    Denied(#[from] Denied),
    /// Another command holds the addon's (or registry's) lock.
    #[error(transparent)]
    Busy(#[from] Busy),
    /// An addon's record cannot be read, or would not fit its budget.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// A revision of an addon's history cannot be used.
    #[error(transparent)]
    Revision(#[from] RevisionError),
    /// An addon the command works on is not enabled.
    #[error("addon `{addon}` is not enabled (see `addonctl list`)")]
    NotEnabled {
        /// The addon.
        addon: String,
    },
    /// The tag of the version installed now names another manifest than the one installed.
    #[error("the tag moved: {0}")]
    TagMoved(Box<MovedTag>),
    /// `upgrade` of an addon that is not enabled.
    #[error("addon `{addon}` is not enabled; use `addonctl enable {addon}`")]
    NotEnabledToUpgrade {
        /// The addon.
        addon: String,
    },
    /// `get values` cannot tell which stored arguments are secrets.
    #[error("cannot tell which stored arguments of addon `{addon}` are secrets: its version {version} could not be read ({reason}); pass `--show-secrets` to print them unmasked, or add a registry that has this version")]
    SecretsUnknown {
        /// The addon.
        addon: String,
        /// Its installed version.
        version: String,
        /// Why its package could not be read.
        reason: String,
    },
    /// A secret parameter was given as the mask `get values` prints in its place.
    #[error("parameter `{path}` of addon `{addon}` is a secret given as the mask `******` (a file from `addonctl get values` without `--show-secrets`?): give its real value, or leave it out to keep the stored one")]
    MaskedSecretGiven {
        /// The addon.
        addon: String,
        /// The parameter's dotted path.
        path: String,
    },
    /// An addon neither installed nor in any registry.
    #[error("no addon `{addon}` is installed or in any registry")]
    NoSuchAddon {
        /// The addon.
        addon: String,
    },
    /// The addon's Application reports that it failed.
    #[error("addon `{addon}` failed{}", reason.as_ref().map(|r| format!(": {r}")).unwrap_or_default())]
    AddonFailed {
        /// The addon.
        addon: String,
        /// Why, when the status says.
        reason: Option<String>,
    },
    /// Workloads did not become ready in time.
    #[error("addon `{addon}` is still {phase} after {seconds}s (waiting for {wanted}){why}")]
    NotReady {
        /// The addon.
        addon: String,
        /// Its phase when the wait ended.
        phase: String,
        /// How long it waited.
        seconds: u64,
        /// The phase it waited for.
        wanted: String,
        /// The workloads not ready and the status's notes (empty, or starting with `;`/a line).
        why: String,
    },
    /// `--cluster` names clusters that are not joined.
    #[error(
        "unknown cluster{} {}; known clusters: {} (join one with `addonctl cluster join` or `vela cluster join`)",
        if names.len() == 1 { "" } else { "s" },
        quoted(names),
        quoted(known)
    )]
    UnknownClusters {
        /// The unknown names.
        names: Vec<String>,
        /// The clusters there are.
        known: Vec<String>,
    },
    /// An addon's topology names a cluster that is not joined.
    #[error("the topology names cluster `{name}`, which is not joined (known: `local`{})", joined.iter().map(|c| format!(", `{c}`")).collect::<Vec<_>>().concat())]
    TopologyUnknownCluster {
        /// The cluster named.
        name: String,
        /// The joined clusters (`local` aside).
        joined: Vec<String>,
    },
    /// A cluster the command names is not joined.
    #[error("cluster `{name}` is not joined (see `addonctl cluster list`)")]
    ClusterNotJoined {
        /// The cluster.
        name: String,
    },
    /// `cluster join local`.
    #[error("`local` is the control plane itself; choose another name")]
    ReservedClusterName,
    /// A cluster name that is not a DNS label.
    #[error("`{name}` is not a valid cluster name: use lowercase letters, digits and single `-` between them")]
    InvalidClusterName {
        /// The name given.
        name: String,
    },
    /// A cluster label not written `key=value`.
    #[error("label `{pair}`: expected `key=value`")]
    InvalidLabel {
        /// The label given.
        pair: String,
    },
    /// `cluster detach` could not remove an addon's objects from the cluster.
    #[error("cannot clean addon `{addon}` from cluster `{cluster}`: {reason}; pass `--force` to detach anyway (its objects stay there)")]
    DetachBlocked {
        /// The addon.
        addon: String,
        /// The cluster.
        cluster: String,
        /// What failed.
        reason: String,
    },
    /// `cluster join` of an API server already joined under another name.
    #[error("the API server `{endpoint}` is already joined as cluster `{other}`: run `addonctl cluster detach {other}` first to join it as `{name}`, or join it as `{other}` (re-joining a name rotates its credentials)")]
    EndpointAlreadyJoined {
        /// The API server URL.
        endpoint: String,
        /// The cluster it is joined as.
        other: String,
        /// The name asked for.
        name: String,
    },
    /// A cluster's Secret changed under every retry.
    #[error("the Secret of cluster `{cluster}` kept changing while it was written; try again")]
    ClusterSecretContended {
        /// The cluster.
        cluster: String,
    },
    /// A lock's Lease changed under every retry.
    #[error(
        "the lock of `{subject}` (Lease `{lease}`) kept changing while it was taken; try again"
    )]
    LockContended {
        /// What is locked.
        subject: String,
        /// The Lease, `namespace/name`.
        lease: String,
    },
    /// Another command took the lock over while this one held it.
    #[error("the lock `{lease}` was taken over by another command while this one ran (it could not renew it for {seconds}s, or `--force-unlock` was used): both may have written; run `addonctl status` and the command again")]
    LockTakenOver {
        /// The Lease, `namespace/name`.
        lease: String,
        /// How long a Lease lasts unrenewed.
        seconds: u64,
    },
    /// `--engine vela` on a control plane without KubeVela.
    #[error("`--engine vela` needs KubeVela: the control plane does not serve `applications.core.oam.dev`; use `--engine direct` or `auto`")]
    VelaMissing,
    /// Clusters held at their version (a staged upgrade) with KubeVela deploying the addon: its
    /// Application deploys one revision to every cluster.
    #[error("addon `{addon}` is deployed by KubeVela, whose Application puts one revision on every cluster: clusters {} cannot be held at the version they run; upgrade every cluster at once with `addonctl upgrade {addon}`", quoted(clusters))]
    HoldNeedsDirectEngine {
        /// The addon.
        addon: String,
        /// The clusters asked to be held.
        clusters: Vec<String>,
    },
    /// An operation's question was answered no: nothing was changed.
    #[error("{}", declined_message(_0))]
    Declined(crate::ops::Question),
    /// A command would change an addon an `Addon` resource declares: the controller owns it.
    #[error("{}", declared_message(addon, namespace, *command))]
    DeclaredByAddon {
        /// The addon.
        addon: String,
        /// The namespace of the `Addon` resource (the system namespace).
        namespace: String,
        /// The command refused.
        command: crate::ops::guard::Command,
    },
    /// Overrides give some clusters other parameters, and KubeVela deploys the addon.
    #[error("addon `{addon}` is deployed by KubeVela, whose Application puts the same components on every cluster: the overrides that give clusters {} other parameters cannot be applied; make every override select all target clusters or none of them, or use the direct engine (`--engine direct`)", quoted(clusters))]
    OverridesNeedDirectEngine {
        /// The addon.
        addon: String,
        /// The clusters the overrides set apart.
        clusters: Vec<String>,
    },
    /// An override's parameters are not valid for the addon.
    #[error("override #{} (`overrides[{index}]`) of addon `{addon}`{} sets parameter `{parameter}`: {reason}", index + 1, if clusters.is_empty() { " (it selects no cluster now)".to_owned() } else { format!(" (selecting cluster(s) {})", quoted(clusters)) })]
    OverrideInvalid {
        /// The addon.
        addon: String,
        /// The override's index (in the order given).
        index: usize,
        /// The clusters it selects.
        clusters: Vec<String>,
        /// The parameter at fault (dotted path; empty when the schema says nothing more precise).
        parameter: String,
        /// Why (secret values masked).
        reason: String,
    },
    /// The parameters some clusters got over the arguments, kept by an `enable` or `upgrade`, are
    /// not valid for the addon as planned now.
    #[error("the parameters cluster(s) {} of addon `{addon}` got over its arguments (kept from the last apply, an `Addon`'s overrides) set `{parameter}`, which the addon as planned now refuses: {reason}; pass --reset-values to drop them, or change the `Addon`'s overrides", quoted(clusters))]
    KeptOverrideInvalid {
        /// The addon.
        addon: String,
        /// The clusters that got them.
        clusters: Vec<String>,
        /// The parameter at fault (dotted path; empty when the schema says nothing more precise).
        parameter: String,
        /// Why (secret values masked).
        reason: String,
    },
    /// A component type the direct engine cannot deploy.
    #[error("component `{component}` has type `{kind}`, which the direct engine cannot deploy (it deploys `k8s-objects` and `raw`); install KubeVela and use `--engine vela`")]
    UndeployableComponent {
        /// The component's name (`?` when it has none).
        component: String,
        /// Its type (`?` when it has none).
        kind: String,
    },
    /// A CRD the direct engine applied did not become Established in time.
    #[error("CustomResourceDefinition `{crd}` on cluster `{cluster}` did not become Established within {seconds}s")]
    CrdNotEstablished {
        /// The CRD.
        crd: String,
        /// The cluster.
        cluster: String,
        /// How long it waited.
        seconds: u64,
    },
    /// An addon renders objects of addonctl's or KubeVela's own state.
    #[error("refused: an addon may not write addonctl's or KubeVela's own state (whatever the flags); nothing was applied:\n  {}\nremove these objects from the addon", objects.join("\n  "))]
    ProtectedObjects {
        /// The objects, one line each.
        objects: Vec<String>,
    },
    /// Objects use APIs nothing provides.
    #[error("APIs that neither the cluster, an installed addon nor the plan provides:\n  {}\n(pass `--skip-api-check` to enable anyway when the environment will serve them later)", missing.join("\n  "))]
    MissingApis {
        /// One line per missing API.
        missing: Vec<String>,
    },
    /// An object larger than the API server accepts.
    #[error("addon `{addon}`: the {kind} `{name}` would hold {size} bytes of {what}, more than the {limit} the API server accepts{hint}; nothing was written")]
    TooLarge {
        /// The addon.
        addon: String,
        /// The object's kind.
        kind: String,
        /// The object's name.
        name: String,
        /// Its size in bytes.
        size: usize,
        /// `data` or `object`.
        what: &'static str,
        /// The limit in bytes.
        limit: usize,
        /// What to do about it (empty, or starting with `; `).
        hint: &'static str,
    },
    /// The plan picks a version from a registry that is no longer configured.
    #[error("addon `{addon}` {version} comes from registry `{registry}`, which is not configured any more; add it again (`addonctl registry add`) or pass `--version` with a version another registry has")]
    RegistryGone {
        /// The addon.
        addon: String,
        /// Its version.
        version: String,
        /// The registry.
        registry: String,
    },
    /// Definitions that other owners hold.
    #[error("definition conflicts (pass `--override-definitions` to take them over):\n  {}", clashes.join("\n  "))]
    DefinitionConflicts {
        /// One line per clash.
        clashes: Vec<String>,
    },
    /// Enabling would adopt objects addonctl did not create.
    #[error("addon `{addon}` would adopt objects that exist and that addonctl did not create:\n  {}\nenabling would overwrite their fields, and `disable` would give them back (remove addonctl's fields) instead of deleting them; check them, then pass `--adopt` to take them over", objects.join("\n  "))]
    WouldAdopt {
        /// The addon.
        addon: String,
        /// The objects, one line each.
        objects: Vec<String>,
    },
    /// Disabling would break what is still in use.
    #[error("{}\n(pass `--force` to disable anyway)", problems.join("\n"))]
    InUse {
        /// Each use, one paragraph each.
        problems: Vec<String>,
    },
    /// Whether custom resources of an addon's CRD exist could not be checked.
    #[error("cannot check whether custom resources of `{crd}` exist on cluster `{cluster}`: {reason}; pass `--force` to disable anyway")]
    Uncheckable {
        /// The CRD.
        crd: String,
        /// The cluster.
        cluster: String,
        /// What failed.
        reason: String,
    },
    /// An addon's argument Secret holds something that is not base64.
    #[error("the stored arguments of `{addon}` are not base64: {reason}")]
    StoredArgumentsNotBase64 {
        /// The addon.
        addon: String,
        /// What the decoder said.
        reason: String,
    },
    /// An addon's argument Secret holds something other than a JSON object.
    #[error("the stored arguments of `{addon}` (Secret `{secret}`) are not a JSON object; fix or delete it")]
    StoredArgumentsNotObject {
        /// The addon.
        addon: String,
        /// The Secret.
        secret: String,
    },
    /// Deleting an object on the control plane failed (the reason names the object and what
    /// failed); the record keeps what is left.
    #[error("{reason}")]
    DeleteFailed {
        /// What failed.
        reason: String,
    },
    /// Some clusters failed; the others were applied. Running the command again converges.
    #[error("addon `{addon}`: {} of {} clusters failed:\n  {}\n{}", failed.len(), total, failed.join("\n  "), clusters_note(addon, failed.len(), *total))]
    Clusters {
        /// The addon.
        addon: String,
        /// `cluster: reason`, one per failed cluster.
        failed: Vec<String>,
        /// How many clusters were targeted.
        total: usize,
    },
    /// Deleting an addon's objects failed on some clusters (wrapped in [`Error::Unfinished`]).
    #[error("addon `{addon}`: {} of {} clusters failed:\n  {}", failed.len(), total, failed.join("\n  "))]
    DeletionFailed {
        /// The addon.
        addon: String,
        /// `cluster: reason`, one per failed cluster.
        failed: Vec<String>,
        /// How many clusters held its objects.
        total: usize,
    },
    /// Deleting failed midway: what was done, and the command that finishes it (the record
    /// still lists everything left).
    #[error("{source}\n{}", unfinished_note(.done, .next))]
    Unfinished {
        /// The failure.
        #[source]
        source: Box<Error>,
        /// What was deleted before it.
        done: Vec<String>,
        /// The command to run next.
        next: String,
    },
    /// Applying failed midway; `applied` lists what had been applied.
    #[error("{source}\n{}", applied_note(.applied))]
    Partial {
        /// The failure.
        #[source]
        source: Box<Error>,
        /// What was applied before it, as `Kind ns/name`.
        applied: Vec<String>,
    },
}

impl Error {
    /// What kind of failure it is. Each variant is classified by what it means; the module
    /// errors it wraps say their own kind.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Source(e) => e.kind(),
            Error::Load(loader::Error::Source { source, .. }) => source.kind(),
            Error::Locate(e) => e.kind(),
            Error::Catalog(e) => e.kind(),
            Error::Cluster(e) => e.kind(),
            Error::Record(e) => e.kind(),
            Error::Revision(e) => e.kind(),
            Error::Registry(e) => registry_kind(e),
            Error::Resolve(e) => resolve_kind(e),
            Error::Partial { source, .. } | Error::Unfinished { source, .. } => source.kind(),
            // Refused by every failed cluster: the credentials' fault, as when refused up front;
            // otherwise clusters that failed, which running again converges.
            Error::Clusters { failed, .. } => {
                if failed.iter().all(|f| cluster::is_forbidden_text(f)) {
                    ErrorKind::Denied
                } else {
                    ErrorKind::Unavailable
                }
            }
            // What was given, or the request as asked, cannot be carried out: the user decides
            // what to change (or which flag to pass).
            Error::Load(_)
            | Error::Params(_)
            | Error::Render(_)
            | Error::InvalidRegistry(_)
            | Error::Authoring(_)
            | Error::MaskedSecretGiven { .. }
            | Error::AddonFailed { .. }
            | Error::ReservedClusterName
            | Error::InvalidClusterName { .. }
            | Error::InvalidLabel { .. }
            | Error::DetachBlocked { .. }
            | Error::VelaMissing
            | Error::HoldNeedsDirectEngine { .. }
            | Error::OverridesNeedDirectEngine { .. }
            | Error::Declined(_)
            | Error::OverrideInvalid { .. }
            | Error::KeptOverrideInvalid { .. }
            | Error::UndeployableComponent { .. }
            | Error::CrdNotEstablished { .. }
            | Error::MissingApis { .. }
            | Error::TooLarge { .. }
            | Error::Uncheckable { .. }
            | Error::StoredArgumentsNotBase64 { .. }
            | Error::StoredArgumentsNotObject { .. } => ErrorKind::Invalid,
            // Something named is not there: an addon (or the version installed), a cluster, a
            // registry.
            Error::NotEnabled { .. }
            | Error::NotEnabledToUpgrade { .. }
            | Error::NoSuchAddon { .. }
            | Error::SecretsUnknown { .. }
            | Error::UnknownClusters { .. }
            | Error::TopologyUnknownCluster { .. }
            | Error::ClusterNotJoined { .. }
            | Error::RegistryGone { .. } => ErrorKind::NotFound,
            // Refused by addonctl's own checks: the rights the command needs, what an addon may
            // write.
            Error::Denied(_) | Error::ProtectedObjects { .. } => ErrorKind::Denied,
            // Another command holds the lock or wrote first, or what would change is someone
            // else's: every contention is the same kind.
            Error::Busy(_)
            | Error::LockContended { .. }
            | Error::LockTakenOver { .. }
            | Error::ClusterSecretContended { .. }
            | Error::EndpointAlreadyJoined { .. }
            | Error::DefinitionConflicts { .. }
            | Error::WouldAdopt { .. }
            | Error::InUse { .. }
            | Error::DeclaredByAddon { .. }
            | Error::TagMoved(_) => ErrorKind::Conflict,
            // The clusters did not do what was asked in time, or failed: running again may do.
            Error::NotReady { .. } | Error::DeleteFailed { .. } | Error::DeletionFailed { .. } => {
                ErrorKind::Unavailable
            }
            // A local file that cannot be read or written.
            Error::Io(_) => ErrorKind::Internal,
        }
    }

    /// Whether the error is caused by input the user controls (an addon, an argument, a file they
    /// named, their rights, a request that cannot be carried out as asked) rather than by the
    /// environment or a bug: [`ErrorKind::is_user`] of its [`kind`](Error::kind).
    pub fn is_user_error(&self) -> bool {
        self.kind().is_user()
    }
}

/// The kind of a registry operation's refusal.
fn registry_kind(error: &RegistryError) -> ErrorKind {
    match error {
        RegistryError::NotFound { .. } | RegistryError::Removed { .. } => ErrorKind::NotFound,
        RegistryError::Exists { .. } | RegistryError::StoreContended { .. } => ErrorKind::Conflict,
        RegistryError::ListNotMap { .. }
        | RegistryError::CredentialsNotStored { .. }
        | RegistryError::InvalidFile { .. }
        | RegistryError::RegistriesNotList { .. }
        | RegistryError::NoDefinition { .. }
        | RegistryError::NotDefinition { .. }
        | RegistryError::MissingVariable { .. }
        | RegistryError::NeedsEndpoint { .. }
        // A registry that cannot be listed when it is added: its settings are to check.
        | RegistryError::DoesNotWork { .. } => ErrorKind::Invalid,
        RegistryError::Encode(_) => ErrorKind::Internal,
    }
}

/// The kind of the solver's refusal.
fn resolve_kind(error: &ResolveError) -> ErrorKind {
    match error {
        ResolveError::NotFound { .. } => ErrorKind::NotFound,
        ResolveError::BreaksDependents { .. } => ErrorKind::Conflict,
        ResolveError::NoSolution { .. }
        | ResolveError::Cycle { .. }
        | ResolveError::System { .. }
        | ResolveError::TooComplex { .. } => ErrorKind::Invalid,
    }
}

/// Names in backticks, separated by `, `.
/// The first `shown` of `items` joined by `, `, then how many more there are.
pub(crate) fn listed(items: &[String], shown: usize) -> String {
    let mut text = items
        .iter()
        .take(shown)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > shown {
        text.push_str(&format!(", and {} more", items.len() - shown));
    }
    text
}

/// What a question answered no says: nothing changed, and how to go ahead without being asked.
fn declined_message(question: &crate::ops::Question) -> String {
    use crate::ops::Question;
    match question {
        Question::Adopt { .. } => {
            "not adopted: nothing was changed (pass `--adopt` to adopt them without asking)".to_owned()
        }
        Question::Detach { cluster, .. } => format!(
            "cluster `{cluster}` not detached: nothing was changed (pass `--yes` to detach without asking)"
        ),
        Question::Rejoin { cluster, .. } => format!(
            "cluster `{cluster}` not joined again: nothing was changed (leave out `--labels`/`--reset-labels` to keep them, or pass `--yes` to join without asking)"
        ),
    }
}

/// What a command refused for an addon an `Addon` declares says, and what to do instead.
fn declared_message(addon: &str, ns: &str, command: crate::ops::guard::Command) -> String {
    use crate::ops::guard::Command;
    let verb = match command {
        Command::Disable => {
            return format!(
                "addon `{addon}` is declared by the `Addon` resource `{ns}/{addon}`: the controller would enable it again. Delete the `Addon` instead: `addonctl disable {addon} --declarative` (the controller then disables the addon)"
            )
        }
        Command::Enable => "enable it",
        Command::Rollback => "roll it back",
        Command::Upgrade => "upgrade it",
    };
    format!(
        "addon `{addon}` is declared by the `Addon` resource `{ns}/{addon}`: the controller owns it and would apply the `Addon`'s spec again. Change the `Addon` (`addonctl enable {addon} --declarative …`, or edit it), or pass `--override-controller` to {verb} anyway"
    )
}

fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn applied_note(applied: &[String]) -> String {
    if applied.is_empty() {
        "nothing was applied".to_owned()
    } else {
        format!(
            "applied before the failure ({}): {}; the addon's record lists everything that may have been applied: run the same command again to finish, or `addonctl disable` the addon to undo",
            applied.len(),
            applied.join(", ")
        )
    }
}

fn clusters_note(addon: &str, failed: usize, total: usize) -> String {
    let done = if failed >= total {
        "no cluster has it".to_owned()
    } else {
        match total - failed {
            1 => "the other cluster was applied".to_owned(),
            n => format!("the other {n} clusters were applied"),
        }
    };
    format!(
        "{done}; the record lists what each cluster may hold: run the same command again to finish (an enable can also be undone with `addonctl disable {addon}`)"
    )
}

fn unfinished_note(done: &[String], next: &str) -> String {
    let done = if done.is_empty() {
        "nothing was deleted".to_owned()
    } else {
        format!(
            "deleted before the failure ({}): {}",
            done.len(),
            done.join(", ")
        )
    };
    format!("{done}; the record keeps what is left: run `{next}` again to finish")
}

/// Someone else holds the lock.
#[derive(Debug, Clone, thiserror::Error)]
#[error("`{subject}` is being changed by {holder} since {since}; retry when it is done, or pass `--force-unlock` if that command is gone (its Lease `{lease}` expires {expires})")]
pub struct Busy {
    /// What is locked (an addon or a registry).
    pub subject: String,
    /// The Lease's name.
    pub lease: String,
    /// Who holds it.
    pub holder: String,
    /// Since when (RFC 3339).
    pub since: String,
    /// When it expires without renewal (RFC 3339).
    pub expires: String,
}

/// `Result` with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A front end's error (the controller's, drift's, a rollout's) that wraps the library's as
/// `Library(Box<crate::Error>)`: `From<crate::Error>`, `kind` — the library's kind for
/// `Library`, the given kind for each of the other arms — and `is_user_error`, its
/// [`ErrorKind::is_user`].
macro_rules! front_end_error {
    ($error:ident $(, $pattern:pat => $kind:expr)+ $(,)?) => {
        impl From<$crate::Error> for $error {
            fn from(e: $crate::Error) -> Self {
                $error::Library(Box::new(e))
            }
        }

        impl $error {
            /// What kind of failure it is.
            pub fn kind(&self) -> $crate::ErrorKind {
                match self {
                    $error::Library(e) => e.kind(),
                    $($pattern => $kind,)+
                }
            }

            /// Whether the user can fix it: [`ErrorKind::is_user`](crate::ErrorKind::is_user)
            /// of its kind.
            pub fn is_user_error(&self) -> bool {
                self.kind().is_user()
            }
        }
    };
}
pub(crate) use front_end_error;

/// A tag that names another manifest now than when its version was installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MovedTag {
    /// The addon.
    pub addon: String,
    /// `oci://host/prefix/addon`.
    pub reference: String,
    /// The tag.
    pub tag: String,
    /// The version.
    pub version: String,
    /// The manifest digest recorded.
    pub recorded: String,
    /// The manifest digest the tag names now.
    pub now: String,
}

impl std::fmt::Display for MovedTag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let MovedTag {
            addon,
            reference,
            tag,
            version,
            recorded,
            now,
        } = self;
        write!(
            f,
            "`{reference}:{tag}` (version {version} of addon `{addon}`) was {recorded} when it \
             was installed and is {now} now; install the recorded chart with `addonctl enable \
             {addon} --version {recorded}`, or take the new one with `--allow-moved-tag`"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_refusals_keep_their_sentences() {
        let cases = [
            (
                Error::UnknownClusters {
                    names: vec!["x".to_owned()],
                    known: vec!["local".to_owned(), "m1".to_owned()],
                },
                "unknown cluster `x`; known clusters: `local`, `m1` (join one with `addonctl cluster join` or `vela cluster join`)",
            ),
            (
                Error::UnknownClusters {
                    names: vec!["x".to_owned(), "y".to_owned()],
                    known: vec!["local".to_owned()],
                },
                "unknown clusters `x`, `y`; known clusters: `local` (join one with `addonctl cluster join` or `vela cluster join`)",
            ),
            (
                Error::TopologyUnknownCluster {
                    name: "gone".to_owned(),
                    joined: vec!["m1".to_owned(), "m2".to_owned()],
                },
                "the topology names cluster `gone`, which is not joined (known: `local`, `m1`, `m2`)",
            ),
            (
                Error::AddonFailed {
                    addon: "a".to_owned(),
                    reason: None,
                },
                "addon `a` failed",
            ),
            (
                Error::AddonFailed {
                    addon: "a".to_owned(),
                    reason: Some("workflow failed".to_owned()),
                },
                "addon `a` failed: workflow failed",
            ),
            (
                Error::NotEnabledToUpgrade {
                    addon: "a".to_owned(),
                },
                "addon `a` is not enabled; use `addonctl enable a`",
            ),
            (
                Error::InUse {
                    problems: vec!["one".to_owned(), "two".to_owned()],
                },
                "one\ntwo\n(pass `--force` to disable anyway)",
            ),
            (
                Error::WouldAdopt {
                    addon: "a".to_owned(),
                    objects: vec!["ConfigMap `ns/x`".to_owned()],
                },
                "addon `a` would adopt objects that exist and that addonctl did not create:\n  ConfigMap `ns/x`\nenabling would overwrite their fields, and `disable` would give them back (remove addonctl's fields) instead of deleting them; check them, then pass `--adopt` to take them over",
            ),
            (
                Error::DeletionFailed {
                    addon: "a".to_owned(),
                    failed: vec!["m1: gone".to_owned(), "m2: gone".to_owned()],
                    total: 3,
                },
                "addon `a`: 2 of 3 clusters failed:\n  m1: gone\n  m2: gone",
            ),
        ];
        for (error, expected) in cases {
            assert_eq!(error.to_string(), expected);
        }
    }
}
