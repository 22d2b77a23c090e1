//! Locks: a `coordination.k8s.io/v1` Lease in the system namespace held while a command writes
//! one addon's state (`addonctl-lock-<addon>`) or one registry's (`addonctl-registry-lock-<name>`),
//! so that two commands never interleave their writes.
//!
//! Expected flow: [`acquire`] creates the Lease (unless forced); when it exists, reads it;
//! absent, it creates it (a create that loses the race is a conflict, and the read starts
//! again); held by someone else and not expired, it
//! refuses with [`Busy`] (who, since when) unless forced; expired (or forced), it replaces it
//! with the read `resourceVersion` as precondition (compare-and-swap). While held, a task renews
//! it every quarter of its duration; [`Lock::release`] stops the renewal and deletes the Lease if
//! it is still ours (with the resourceVersion of its last write as precondition; read again
//! when that changed).
//!
//! Guarantees: at most one holder at a time, as long as holders renew (a crashed command's lease
//! expires after [`LEASE_DURATION`] and is taken over — at once when that command ran on this
//! host and its process is gone; `--force-unlock` takes it at once);
//! every step is bounded (a few attempts on conflicts, each request bounded by the cluster's
//! request timeout). A holder that finds its Lease taken over stops renewing and
//! [`Lock::ensure_held`] fails, so the command does not report success.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use k8s_openapi::chrono::{DateTime, SecondsFormat, Utc};
use kube::core::{DynamicObject, GroupVersionKind};
use serde_json::{json, Value};

use crate::cluster::{self, Cluster};
use crate::model::wire::namespace_object;

/// How long a Lease lasts without renewal.
pub const LEASE_DURATION: Duration = Duration::from_secs(60);
/// The longest a Lease's own `leaseDurationSeconds` is believed: addonctl's longest.
pub const MAX_CLAIMED: Duration = LEASE_DURATION;
/// Attempts at acquiring when others write the Lease at the same moment.
const ATTEMPTS: usize = 5;

/// The Lease of an addon.
pub fn addon_lease(addon: &str) -> String {
    format!("addonctl-lock-{addon}")
}

/// The Lease of a registry.
pub fn registry_lease(registry: &str) -> String {
    format!("addonctl-registry-lock-{registry}")
}

fn lease_gvk() -> GroupVersionKind {
    GroupVersionKind::gvk("coordination.k8s.io", "v1", "Lease")
}

pub use crate::error::Busy;

/// A Lease as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseState {
    /// `spec.holderIdentity` (empty when released).
    pub holder: String,
    /// `spec.acquireTime`.
    pub acquired: Option<DateTime<Utc>>,
    /// `spec.renewTime`.
    pub renewed: Option<DateTime<Utc>>,
    /// `spec.leaseDurationSeconds`.
    pub duration: Duration,
    /// `spec.leaseTransitions`.
    pub transitions: i64,
    /// `metadata.resourceVersion`.
    pub resource_version: String,
}

impl LeaseState {
    /// Reads a Lease object.
    pub fn of(object: &Value) -> Self {
        let time = |key: &str| {
            object
                .pointer(&format!("/spec/{key}"))
                .and_then(Value::as_str)
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                .map(|t| t.with_timezone(&Utc))
        };
        LeaseState {
            holder: object
                .pointer("/spec/holderIdentity")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            acquired: time("acquireTime"),
            renewed: time("renewTime"),
            duration: Duration::from_secs(
                object
                    .pointer("/spec/leaseDurationSeconds")
                    .and_then(Value::as_u64)
                    .unwrap_or(LEASE_DURATION.as_secs()),
            ),
            transitions: object
                .pointer("/spec/leaseTransitions")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            resource_version: object
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        }
    }

    /// When it expires: its last renewal (or acquisition) plus its duration; `None` = never
    /// renewed, so free.
    ///
    /// A duration longer than addonctl's own ([`MAX_CLAIMED`]) counts as that long: a Lease
    /// claiming years (written by hand, or by another tool) does not block an addon until then.
    pub fn expires(&self) -> Option<DateTime<Utc>> {
        let last = self.renewed.or(self.acquired)?;
        let duration =
            k8s_openapi::chrono::Duration::from_std(self.duration.min(MAX_CLAIMED)).ok()?;
        last.checked_add_signed(duration)
    }
}

/// What to do with the Lease as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// None exists: create it.
    Create,
    /// Free, expired, ours already, or forced: replace it while it has this resourceVersion.
    TakeOver {
        /// The precondition.
        resource_version: String,
        /// Transitions so far plus one when the holder changes.
        transitions: i64,
    },
    /// Someone else holds it.
    Busy {
        /// Who.
        holder: String,
        /// Since when.
        since: Option<DateTime<Utc>>,
        /// Until when.
        expires: Option<DateTime<Utc>>,
    },
}

/// Decides, at `now`, what `holder` does with `lease` (`force`: take it whoever holds it;
/// `gone`: whether a holder is known to have exited, see [`holder_is_gone`]).
pub fn decide(
    lease: Option<&LeaseState>,
    holder: &str,
    now: DateTime<Utc>,
    force: bool,
    gone: impl Fn(&str) -> bool,
) -> Decision {
    let Some(lease) = lease else {
        return Decision::Create;
    };
    let free = lease.holder.is_empty() || lease.holder == holder || gone(&lease.holder);
    // A stamp a little in the future (a skewed clock) counts as made now; one further ahead
    // than a Lease may last (a hostile or broken writer) as not made.
    let ahead = k8s_openapi::chrono::Duration::from_std(MAX_CLAIMED).unwrap_or_default();
    let believable = |t: DateTime<Utc>| (t <= now + ahead).then(|| t.min(now));
    let capped = LeaseState {
        renewed: lease.renewed.and_then(believable),
        acquired: lease.acquired.and_then(believable),
        ..lease.clone()
    };
    let expired = capped.expires().is_none_or(|t| t <= now);
    if free || expired || force {
        return Decision::TakeOver {
            resource_version: lease.resource_version.clone(),
            transitions: lease.transitions + i64::from(lease.holder != holder),
        };
    }
    Decision::Busy {
        holder: lease.holder.clone(),
        since: lease.acquired,
        expires: capped.expires(),
    }
}

fn stamp(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// A Lease as its holder writes it (the per-addon locks here, the controller's leader election);
/// how often it changed hands and the version it replaces are the [`Decision`]'s ([`take`]).
#[derive(Debug, Clone, Copy)]
pub struct LeaseWrite<'a> {
    /// Its namespace.
    pub namespace: &'a str,
    /// Its name.
    pub name: &'a str,
    /// Who holds it.
    pub holder: &'a str,
    /// How long it lasts without a renewal.
    pub duration: Duration,
    /// When the holder took it.
    pub acquired: DateTime<Utc>,
    /// Now (the renewal).
    pub now: DateTime<Utc>,
}

/// The Lease object of `write`, having changed hands `transitions` times, replacing the version
/// `resource_version` (`None`: created).
fn written(write: &LeaseWrite<'_>, transitions: i64, resource_version: Option<&str>) -> Value {
    let mut metadata = json!({
        "name": write.name,
        "namespace": write.namespace,
        "labels": {"app.kubernetes.io/managed-by": "addonctl"},
    });
    if let Some(version) = resource_version {
        metadata["resourceVersion"] = json!(version);
    }
    json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": metadata,
        "spec": {
            "holderIdentity": write.holder,
            "leaseDurationSeconds": write.duration.as_secs(),
            "acquireTime": stamp(write.acquired),
            "renewTime": stamp(write.now),
            "leaseTransitions": transitions,
        },
    })
}

/// Carries out `decision` as `lease`'s holder, taking or renewing the Lease: `Create` creates
/// it (making the system namespace first when it does not exist yet, as a first enable would),
/// `TakeOver` replaces it while it has the version read (a `Conflict`: another holder wrote
/// first). `Ok(None)`: `Busy`, nothing is written.
pub async fn take(
    cluster: &Cluster,
    lease: &LeaseWrite<'_>,
    decision: &Decision,
) -> cluster::Result<Option<DynamicObject>> {
    let object = match decision {
        Decision::Busy { .. } => return Ok(None),
        Decision::TakeOver {
            resource_version,
            transitions,
        } => {
            let object = written(lease, *transitions, Some(resource_version));
            return cluster.replace(&object).await.map(Some);
        }
        Decision::Create => written(lease, 0, None),
    };
    match cluster.create(&object).await {
        Err(cluster::Error::NotFound { .. }) => {
            cluster
                .create_if_missing(&namespace_object(lease.namespace))
                .await?;
            cluster.create(&object).await
        }
        other => other,
    }
    .map(Some)
}

/// Who this process is, for the Lease and the messages of others: the command, the host and
/// the process id.
pub fn holder_identity(command: &str) -> String {
    let host = fs_err::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "an unknown host".to_owned());
    format!(
        "`addonctl {command}` (pid {} on {host})",
        std::process::id()
    )
}

/// Whether the holder `identity` (see [`holder_identity`]) was a process of this host that no
/// longer runs: its lock is free at once instead of after [`LEASE_DURATION`].
pub fn holder_is_gone(identity: &str) -> bool {
    let Some((pid, host)) = identity
        .rsplit_once("(pid ")
        .and_then(|(_, rest)| rest.strip_suffix(')'))
        .and_then(|rest| rest.split_once(" on "))
    else {
        return false;
    };
    let Ok(pid) = pid.parse::<u32>() else {
        return false;
    };
    let ours = holder_identity("");
    let same_host = ours.ends_with(&format!(" on {host})"));
    same_host
        && pid != std::process::id()
        && !std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// A held lock. Release it with [`Lock::release`]; dropped, it stops renewing and expires.
#[derive(Debug)]
pub struct Lock {
    held: Held,
    renewal: tokio::task::JoinHandle<()>,
}

/// What the holder and its renewal task share.
#[derive(Debug, Clone)]
struct Held {
    cluster: Cluster,
    namespace: String,
    name: String,
    holder: String,
    /// After the last write.
    resource_version: Arc<Mutex<String>>,
    /// Set when another holder took the Lease over.
    lost: Arc<AtomicBool>,
}

impl Held {
    /// The Lease as stored now, if there is one.
    async fn read(&self) -> cluster::Result<Option<LeaseState>> {
        read(&self.cluster, &self.namespace, &self.name).await
    }
}

/// The Lease `namespace/name` as stored, if there is one.
pub async fn read(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
) -> cluster::Result<Option<LeaseState>> {
    let stored = cluster.get(&lease_gvk(), Some(namespace), name).await?;
    Ok(stored.map(|s| LeaseState::of(&serde_json::to_value(&s).unwrap_or(Value::Null))))
}

impl Drop for Lock {
    fn drop(&mut self) {
        self.renewal.abort();
    }
}

/// A lock's Lease as `holder` takes it at `now`.
fn lock_lease<'a>(
    namespace: &'a str,
    name: &'a str,
    holder: &'a str,
    now: DateTime<Utc>,
) -> LeaseWrite<'a> {
    LeaseWrite {
        namespace,
        name,
        holder,
        duration: LEASE_DURATION,
        acquired: now,
        now,
    }
}

/// Takes the lock `name` (a Lease in `namespace`) for `subject` (the addon or registry named in
/// messages), or refuses with [`Busy`].
pub async fn acquire(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    subject: &str,
    holder: &str,
    force: bool,
) -> crate::Result<Lock> {
    // Most often there is no Lease: create it straight away (one request); one that exists
    // (`409`) is read and decided on below.
    if !force {
        let lease = lock_lease(namespace, name, holder, Utc::now());
        match take(cluster, &lease, &Decision::Create).await {
            Ok(Some(stored)) => {
                let version = stored.metadata.resource_version.unwrap_or_default();
                cluster.locked_new(name, subject);
                return Ok(Lock::start(cluster, namespace, name, holder, version));
            }
            Ok(None) | Err(cluster::Error::Conflict { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    for _ in 0..ATTEMPTS {
        let state = read(cluster, namespace, name).await?;
        let now = Utc::now();
        let decision = decide(state.as_ref(), holder, now, force, holder_is_gone);
        if let Decision::Busy {
            holder,
            since,
            expires,
        } = decision
        {
            let show = |t: Option<DateTime<Utc>>| t.map_or_else(|| "?".to_owned(), stamp);
            return Err(crate::Error::Busy(Busy {
                subject: subject.to_owned(),
                lease: name.to_owned(),
                holder,
                since: show(since),
                expires: show(expires),
            }));
        }
        let lease = lock_lease(namespace, name, holder, now);
        match take(cluster, &lease, &decision).await {
            Ok(Some(stored)) => {
                let version = stored.metadata.resource_version.unwrap_or_default();
                cluster.locked_new(name, subject);
                return Ok(Lock::start(cluster, namespace, name, holder, version));
            }
            Ok(None) | Err(cluster::Error::Conflict { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Err(crate::Error::LockContended {
        subject: subject.to_owned(),
        lease: format!("{namespace}/{name}"),
    })
}

impl Lock {
    fn start(
        cluster: &Cluster,
        namespace: &str,
        name: &str,
        holder: &str,
        version: String,
    ) -> Lock {
        let held = Held {
            cluster: cluster.clone(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            holder: holder.to_owned(),
            resource_version: Arc::new(Mutex::new(version)),
            lost: Arc::new(AtomicBool::new(false)),
        };
        let renewal = tokio::spawn(renew(held.clone()));
        Lock { held, renewal }
    }

    /// The server's revision when the Lease was last written (taken or renewed): everything
    /// written later has a higher resourceVersion.
    #[must_use]
    pub fn revision(&self) -> Option<u64> {
        self.held
            .resource_version
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .parse()
            .ok()
    }

    /// Fails when another command took the lock over (this one's renewals stopped reaching the
    /// server for longer than [`LEASE_DURATION`], or `--force-unlock` was used).
    pub fn ensure_held(&self) -> crate::Result<()> {
        if self.held.lost.load(Ordering::Relaxed) {
            return Err(crate::Error::LockTakenOver {
                lease: format!("{}/{}", self.held.namespace, self.held.name),
                seconds: LEASE_DURATION.as_secs(),
            });
        }
        Ok(())
    }

    /// Stops renewing and deletes the Lease if it is still this holder's: with the
    /// resourceVersion of its last write as precondition (one request); when that changed (a
    /// renewal cut off midway, or a take-over), read and decide.
    pub async fn release(self) -> crate::Result<()> {
        self.renewal.abort();
        let held = &self.held;
        let written = self.resource_version();
        if !written.is_empty()
            && held
                .cluster
                .delete_if_version(&lease_gvk(), Some(&held.namespace), &held.name, &written)
                .await?
        {
            return Ok(());
        }
        let Some(state) = held.read().await? else {
            return Ok(());
        };
        if state.holder != held.holder {
            return Ok(());
        }
        held.cluster
            .delete_if_version(
                &lease_gvk(),
                Some(&held.namespace),
                &held.name,
                &state.resource_version,
            )
            .await?;
        Ok(())
    }

    /// The Lease's resourceVersion after the last write (for tests).
    pub fn resource_version(&self) -> String {
        self.held
            .resource_version
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Renews the Lease every quarter of its duration until aborted or taken over.
async fn renew(held: Held) {
    let period = LEASE_DURATION / 4;
    loop {
        tokio::time::sleep(period).await;
        let Ok(Some(state)) = held.read().await else {
            continue;
        };
        if state.holder != held.holder {
            held.lost.store(true, Ordering::Relaxed);
            return;
        }
        let now = Utc::now();
        let lease = LeaseWrite {
            namespace: &held.namespace,
            name: &held.name,
            holder: &held.holder,
            duration: LEASE_DURATION,
            acquired: state.acquired.unwrap_or(now),
            now,
        };
        let renewal = Decision::TakeOver {
            resource_version: state.resource_version,
            transitions: state.transitions,
        };
        if let Ok(Some(stored)) = take(&held.cluster, &lease, &renewal).await {
            *held
                .resource_version
                .lock()
                .unwrap_or_else(PoisonError::into_inner) =
                stored.metadata.resource_version.unwrap_or_default();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lock's Lease object, `holder`'s at `now`.
    fn lease_object(
        namespace: &str,
        name: &str,
        holder: &str,
        acquired: DateTime<Utc>,
        now: DateTime<Utc>,
        transitions: i64,
        resource_version: Option<&str>,
    ) -> Value {
        let lease = LeaseWrite {
            namespace,
            name,
            holder,
            duration: LEASE_DURATION,
            acquired,
            now,
        };
        written(&lease, transitions, resource_version)
    }

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + seconds, 0).unwrap()
    }

    fn held_by(holder: &str, renewed: i64) -> LeaseState {
        LeaseState::of(&lease_object(
            "ns",
            "l",
            holder,
            at(0),
            at(renewed),
            2,
            Some("41"),
        ))
    }

    #[test]
    fn no_lease_is_created() {
        assert_eq!(
            decide(None, "me", at(0), false, |_| false),
            Decision::Create
        );
    }

    #[test]
    fn a_live_lease_of_another_holder_is_busy_until_it_expires() {
        let lease = held_by("other", 10);
        assert_eq!(
            decide(Some(&lease), "me", at(69), false, |_| false),
            Decision::Busy {
                holder: "other".to_owned(),
                since: Some(at(0)),
                expires: Some(at(70)),
            }
        );
        assert_eq!(
            decide(Some(&lease), "me", at(70), false, |_| false),
            Decision::TakeOver {
                resource_version: "41".to_owned(),
                transitions: 3
            }
        );
    }

    #[test]
    fn a_lease_claiming_years_or_renewed_in_the_future_lasts_no_longer_than_addonctls_own() {
        let mut lease = held_by("other", 10);
        lease.duration = Duration::from_secs(31 * 365 * 24 * 3600);
        assert!(matches!(
            decide(Some(&lease), "me", at(70), false, |_| false),
            Decision::TakeOver { .. }
        ));
        let mut ahead = held_by("other", 10);
        ahead.renewed = Some(at(1_000_000));
        assert_eq!(
            decide(Some(&ahead), "me", at(20), false, |_| false),
            Decision::Busy {
                holder: "other".to_owned(),
                since: Some(at(0)),
                expires: Some(at(60)),
            }
        );
        assert!(matches!(
            decide(Some(&ahead), "me", at(60), false, |_| false),
            Decision::TakeOver { .. }
        ));
    }

    #[test]
    fn force_takes_a_live_lease_and_a_released_or_own_lease_is_taken_without_force() {
        let lease = held_by("other", 10);
        assert!(matches!(
            decide(Some(&lease), "me", at(11), true, |_| false),
            Decision::TakeOver { .. }
        ));
        let own = held_by("me", 10);
        assert_eq!(
            decide(Some(&own), "me", at(11), false, |_| false),
            Decision::TakeOver {
                resource_version: "41".to_owned(),
                transitions: 2
            }
        );
        let released = held_by("", 10);
        assert!(matches!(
            decide(Some(&released), "me", at(11), false, |_| false),
            Decision::TakeOver { .. }
        ));
    }

    #[test]
    fn a_live_lease_of_a_process_gone_from_this_host_is_free_and_a_running_ones_is_not() {
        let lease = held_by("other", 10);
        assert!(matches!(
            decide(Some(&lease), "me", at(11), false, |h| h == "other"),
            Decision::TakeOver { .. }
        ));
        let ours = holder_identity("x");
        let host = ours.rsplit_once(" on ").unwrap().1;
        // pid 1 always runs; no pid is as high as u32::MAX.
        assert!(!holder_is_gone(&format!(
            "`addonctl enable a` (pid 1 on {host}"
        )));
        assert!(holder_is_gone(&format!(
            "`addonctl enable a` (pid 4294967295 on {host}"
        )));
        assert!(!holder_is_gone(
            "`addonctl enable a` (pid 4294967295 on elsewhere)"
        ));
        assert!(!holder_is_gone("someone"));
    }

    #[test]
    fn lease_times_are_written_as_kubernetes_micro_times_and_read_back() {
        let object = lease_object("ns", "l", "me", at(0), at(5), 0, None);
        assert_eq!(object["spec"]["renewTime"], "2027-01-15T08:00:05.000000Z");
        let state = LeaseState::of(&object);
        assert_eq!(state.renewed, Some(at(5)));
        assert_eq!(state.expires(), Some(at(65)));
        assert!(object["metadata"].get("resourceVersion").is_none());
    }

    #[test]
    fn the_busy_error_says_who_since_when_and_how_to_go_on() {
        let text = Busy {
            subject: "a".to_owned(),
            lease: "addonctl-lock-a".to_owned(),
            holder: "`addonctl disable a` (pid 7 on h)".to_owned(),
            since: "2027-01-15T08:00:00.000000Z".to_owned(),
            expires: "2027-01-15T08:01:00.000000Z".to_owned(),
        }
        .to_string();
        assert!(text.starts_with("`a` is being changed by `addonctl disable a` (pid 7 on h) since 2027-01-15T08:00:00.000000Z; retry"), "{text}");
        assert!(text.contains("`--force-unlock`"), "{text}");
    }
}
