//! The `Addon` custom resource (`addonctl.io/v1alpha1`): what GitOps repositories and scripts
//! write (the spec) and what the controller reports (the status). Secret values never appear
//! here: `secretParameters` name a key of a Secret, read at reconcile time.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The API group of the `Addon` resource.
pub const GROUP: &str = "addonctl.io";
/// Its version.
pub const VERSION: &str = "v1alpha1";
/// The finalizer the controller puts on every `Addon` it reconciles: the addon is disabled
/// before the resource goes.
pub const FINALIZER: &str = "addonctl.io/disable";

/// The annotation naming the user who last wrote an `Addon`'s spec: the controller acts for
/// them, never beyond their rights (the shipped ValidatingAdmissionPolicy makes it true).
pub const AUTHOR: &str = "addonctl.io/author";
/// The annotation listing that user's groups (comma-separated; a subset of theirs).
pub const AUTHOR_GROUPS: &str = "addonctl.io/author-groups";

/// An addon declared as a resource: which addon, which version constraint, with which
/// parameters, on which clusters.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "addonctl.io",
    version = "v1alpha1",
    kind = "Addon",
    namespaced,
    status = "AddonStatus",
    shortname = "addon",
    category = "addonctl",
    printcolumn = r#"{"name":"Version","type":"string","description":"The version applied","jsonPath":".status.appliedVersion"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","description":"Whether every target cluster has the addon and it is healthy","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","description":"The reason of the Ready condition: the addon's phase as addonctl status and list say it, capitalised (Enabled, Enabling, Upgrading, Failed), or why it is not ready","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason"}"#,
    printcolumn = r#"{"name":"Clusters","type":"string","description":"Healthy / target clusters","jsonPath":".status.clusterSummary"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct AddonSpec {
    /// The registry to take the addon from; absent = the registries in their search order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry: Option<String>,
    /// A version constraint (`1.2.3`, `^1.2`, `>=1.0, <2.0`); absent = the newest version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The addon's parameters (as `enable key=value` and `--values` give them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "free_object")]
    pub parameters: Option<Map<String, Value>>,
    /// Parameters read from Secrets at reconcile time (for `secret()` parameters).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secret_parameters: Vec<SecretParameter>,
    /// The target clusters by name (`local` is the control plane).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clusters: Option<Vec<String>>,
    /// The target clusters by the labels of their cluster Secrets (`{}` = every cluster,
    /// `local` included). With neither `clusters` nor `clusterSelector`, the addon's own
    /// topology decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_selector: Option<LabelSelector>,
    /// Parameters for the clusters a selector matches, merged over `parameters` in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<Override>,
    /// A staged rollout (stages of clusters, each gated on health).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<Rollout>,
    /// What to do when objects on the clusters differ from what was applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<Drift>,
    /// Stop reconciling: nothing is written until it is `false` again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub suspend: bool,
    /// What the plan's review flags and this `Addon` may still apply: `privilegedRbac`,
    /// `foreignNamespace`, `webhook`, `customResourceDefinition`, `adopts`. Setting it needs
    /// the `approve` verb on `addons.addonctl.io` (the shipped policy checks it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<Allowance>,
    /// Take over an installation made by other means (the CLI, KubeVela): without it, an
    /// addon this `Addon` did not install is left alone. Needs `approve`, as `allow` does.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub adopt: bool,
}

/// What an `Addon` may apply although the plan's review flags it.
#[derive(
    Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum Allowance {
    /// RBAC that grants much, or grants it to everyone.
    PrivilegedRbac,
    /// Objects in namespaces that are not the addon's.
    ForeignNamespace,
    /// Admission webhooks.
    Webhook,
    /// Replacing CustomResourceDefinitions already present.
    CustomResourceDefinition,
    /// Adopting existing objects addonctl did not create.
    Adopts,
}

/// A parameter whose value is the key of a Secret in the `Addon`'s namespace.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretParameter {
    /// The parameter (a dotted path such as `auth.token`).
    pub name: String,
    /// Where its value is.
    pub secret_ref: SecretKeyRef,
}

/// A key of a Secret.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct SecretKeyRef {
    /// The Secret (in the `Addon`'s namespace).
    pub name: String,
    /// The key.
    pub key: String,
}

/// A Kubernetes label selector (`matchLabels` and `matchExpressions`, ANDed).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// Labels that must be present with these values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub match_labels: BTreeMap<String, String>,
    /// Expressions that must hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<LabelExpression>,
}

/// One expression of a label selector.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct LabelExpression {
    /// The label.
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    pub operator: String,
    /// The values of `In` and `NotIn`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// Parameters for some clusters.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Override {
    /// The clusters it applies to.
    pub cluster_selector: LabelSelector,
    /// The parameters merged over the spec's.
    #[schemars(schema_with = "free_object")]
    pub parameters: Map<String, Value>,
}

/// A staged rollout.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Rollout {
    /// The stages, in order.
    #[serde(default)]
    pub stages: Vec<Stage>,
    /// How long a stage may take to become healthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_deadline_seconds: Option<u64>,
    /// Hold the rollout where it is: nothing new is applied, the status is kept
    /// (`addonctl rollout pause|resume` set it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
}

/// One stage of a rollout.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Stage {
    /// The stage's name.
    pub name: String,
    /// Its clusters (among the targets).
    #[serde(default)]
    pub cluster_selector: LabelSelector,
    /// Clusters updated at once: a number or a percentage (`"25%"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "int_or_string")]
    pub max_concurrency: Option<Value>,
    /// Clusters that may fail before the rollout stops (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_failures: Option<u32>,
    /// How long every cluster of the stage must stay healthy on the new revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soak_seconds: Option<u64>,
}

/// The drift policy.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Drift {
    /// `correct` (the default), `warn` or `ignore`.
    #[serde(default)]
    pub policy: DriftPolicy,
    /// Objects or fields left alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclusions: Vec<DriftExclusion>,
}

/// What to do about drift.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DriftPolicy {
    /// Apply again.
    #[default]
    Correct,
    /// Report only (condition, event, metric).
    Warn,
    /// Do nothing.
    Ignore,
}

/// Objects (and optionally only some of their fields) drift handling leaves alone.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct DriftExclusion {
    /// The kind; absent = every kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The namespace; absent = every namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The name; absent = every name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// JSON paths (`spec.replicas`); absent = the whole object.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
}

/// What the controller reports.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddonStatus {
    /// The generation the status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Ready`, `Progressing`, `Degraded`, `Drifted`, `Stalled`.
    #[serde(default)]
    pub conditions: Vec<Condition>,
    /// The version applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_version: Option<String>,
    /// The registry it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry: Option<String>,
    /// The record's revision (its resourceVersion) after the last apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_revision: Option<String>,
    /// A digest of what the last successful apply was made from (spec, target clusters,
    /// versions of the referenced Secrets): equal digests and an unchanged record mean nothing
    /// to do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs_digest: Option<String>,
    /// Per target cluster: outcome and health.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<ClusterStatus>,
    /// `healthy/targets`, for the printer column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_summary: Option<String>,
    /// The current rollout stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout_stage: Option<String>,
    /// The staged rollout's progress (with `spec.rollout`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<RolloutStatus>,
    /// Failed reconciles in a row.
    #[serde(default)]
    pub consecutive_failures: u32,
    /// The last failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// `Created` once this `Addon` installed the addon, `Adopted` once it took over an
    /// installation made by other means (`spec.adopt`); absent while it has installed nothing,
    /// and then deleting it disables nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installation: Option<String>,
    /// What the plan's review flagged at the last apply (allowed by `spec.allow` or refused).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
    /// Where the applied version came from, pinned by digest, and how it was verified (OCI
    /// registries; see also the `Verified` condition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<AppliedSource>,
}

/// The applied version's origin: what `addonctl status` shows as `source` and `verified`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppliedSource {
    /// `oci://host/prefix/addon`.
    pub reference: String,
    /// The manifest's digest: `reference@digest` is exactly what was applied.
    pub digest: String,
    /// Whether a trusted signature names the digest.
    pub verified: bool,
    /// The verification policy applied: `enforce`, `warn` or `off`.
    pub policy: String,
    /// How it was verified, or why not, in a line.
    pub verification: String,
}

impl AppliedSource {
    /// The status entry and the `Verified` condition (`True`, `False` under `warn`, `Unknown`
    /// when the policy is `off`) of a provenance.
    pub fn of(
        source: &crate::model::provenance::Provenance,
        generation: Option<i64>,
    ) -> (Self, Condition) {
        use crate::model::provenance::Mode;
        let v = &source.verification;
        let (status, reason) = match (v.verified, v.policy) {
            (true, _) => ("True", "Verified"),
            (false, Mode::Off) => ("Unknown", "NotChecked"),
            (false, _) => ("False", "Unverified"),
        };
        let mut message = format!(
            "{}@{}: {}",
            source.reference,
            source.manifest_digest,
            v.describe()
        );
        if !v.failures.is_empty() {
            message.push_str(": ");
            message.push_str(&v.failures.join("; "));
        }
        let applied = AppliedSource {
            reference: source.reference.clone(),
            digest: source.manifest_digest.clone(),
            verified: v.verified,
            policy: v.policy.to_string(),
            verification: v.describe(),
        };
        let condition = Condition {
            type_: "Verified".to_owned(),
            status: status.to_owned(),
            reason: reason.to_owned(),
            message,
            observed_generation: generation,
            last_transition_time: None,
        };
        (applied, condition)
    }
}

/// Where a staged rollout stands.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum RolloutPhase {
    /// Applying a batch or waiting for its gate.
    #[default]
    Progressing,
    /// `spec.rollout.paused`: nothing new is applied.
    Paused,
    /// Every stage passed.
    Succeeded,
    /// A gate failed: later batches and stages untouched.
    Failed,
}

/// A staged rollout's progress, kept in the status so that another process (a restart, a new
/// leader) resumes it where it stands.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutStatus {
    /// The version rolled out.
    pub version: String,
    /// A digest of what is rolled out (the spec but `rollout.paused`, the version, the
    /// referenced Secrets' versions): another digest starts another rollout.
    pub key: String,
    /// Where it stands.
    pub phase: RolloutPhase,
    /// The current stage's name (the last one once succeeded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
    /// Per stage: its clusters and those done.
    #[serde(default)]
    pub stages: Vec<StageStatus>,
    /// Failed clusters (tolerated, or the ones that stopped the rollout), with the reasons.
    #[serde(default)]
    pub failed: Vec<FailedCluster>,
    /// Why it stopped or waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The record revision the current batch's gate waits for (`version (args digest)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate_revision: Option<String>,
    /// The rollout library's state (stage and batch indexes, the gate's timings), as it
    /// persists it.
    #[schemars(schema_with = "free_object")]
    pub state: Value,
    /// The plan followed (stages cut into batches when the rollout started).
    #[schemars(schema_with = "free_object")]
    pub plan: Value,
    /// Written at each change; a process keeps the newest it wrote, so a lagging cache never
    /// takes it back.
    #[serde(default)]
    pub step: u64,
}

/// One stage of a rollout, in the status.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StageStatus {
    /// The stage.
    pub name: String,
    /// Its clusters.
    #[serde(default)]
    pub clusters: Vec<String>,
    /// Those whose gate passed.
    #[serde(default)]
    pub done: Vec<String>,
    /// Its soak time.
    #[serde(default)]
    pub soak_seconds: u64,
}

/// A cluster that failed a rollout's gate.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailedCluster {
    /// The cluster.
    pub cluster: String,
    /// Its stage.
    pub stage: String,
    /// Why.
    pub reason: String,
}

/// One target cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    /// The cluster.
    pub name: String,
    /// `applied`, `unchanged` or `failed`.
    pub outcome: String,
    /// `healthy`, `progressing`, `unknown` or `unreachable`.
    pub health: String,
    /// Why it failed or is not healthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A status condition, as Kubernetes writes them.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// `Ready`, `Progressing`, `Degraded`, `Drifted` or `Stalled`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// One CamelCase word.
    pub reason: String,
    /// What happened, for people (left out when empty: Kubernetes 1.20 stores an empty string
    /// of a custom resource as `null`, which its own schema then refuses).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The generation it describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// When `status` last changed (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
}

impl AddonStatus {
    /// The condition of this type, if set.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }

    /// Sets a condition, keeping its transition time when its status does not change.
    pub fn set_condition(&mut self, mut condition: Condition, now: &str) {
        let previous = self
            .conditions
            .iter()
            .position(|c| c.type_ == condition.type_);
        if let Some(i) = previous {
            condition.last_transition_time = if self.conditions[i].status == condition.status {
                self.conditions[i].last_transition_time.clone()
            } else {
                Some(now.to_owned())
            };
            self.conditions[i] = condition;
        } else {
            condition.last_transition_time = Some(now.to_owned());
            self.conditions.push(condition);
        }
    }
}

/// `{type: object, x-kubernetes-preserve-unknown-fields: true}`: free-form parameters.
fn free_object(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true
    })
}

/// A number or a string (`3` or `"25%"`).
fn int_or_string(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "x-kubernetes-int-or-string": true
    })
}

/// A condition of the `Addon`'s status (its transition time is set when it is stored).
pub(super) fn condition(
    type_: &str,
    status: bool,
    reason: &str,
    message: &str,
    generation: Option<i64>,
) -> Condition {
    Condition {
        type_: type_.to_owned(),
        status: if status { "True" } else { "False" }.to_owned(),
        reason: reason.to_owned(),
        message: message.to_owned(),
        observed_generation: generation,
        last_transition_time: None,
    }
}

/// The `Ready` (and `Progressing`) reason that names an addon's phase: addonctl's own word
/// (`addonctl status`, `list`), capitalised, so `kubectl get addons` and the CLI say the same
/// for the same state (`enabling` is `Enabling`, `upgrading` is `Upgrading`). Every other
/// reason the controller writes (`InvalidSpec`, `Refused`, `RolloutFailed`, …) says why the
/// addon is not ready, not a phase.
pub fn phase_reason(phase: crate::status::Phase) -> &'static str {
    use crate::status::Phase;
    match phase {
        Phase::Enabled => "Enabled",
        Phase::Enabling => "Enabling",
        Phase::Upgrading => "Upgrading",
        Phase::Disabling => "Disabling",
        Phase::Suspend => "Suspend",
        Phase::Failed => "Failed",
        Phase::Disabled => "Disabled",
        Phase::Unknown => "Unknown",
    }
}

/// The phase a condition reason names ([`phase_reason`] read back); `None` for a reason that
/// says why, not a phase.
pub fn reason_phase(reason: &str) -> Option<crate::status::Phase> {
    use crate::status::Phase;
    Some(match reason {
        "Enabled" => Phase::Enabled,
        "Enabling" => Phase::Enabling,
        "Upgrading" => Phase::Upgrading,
        "Disabling" => Phase::Disabling,
        "Suspend" => Phase::Suspend,
        "Failed" => Phase::Failed,
        "Disabled" => Phase::Disabled,
        "Unknown" => Phase::Unknown,
        _ => return None,
    })
}

/// Now, as the status's timestamps are written.
pub(super) fn now() -> String {
    k8s_openapi::chrono::Utc::now().to_rfc3339_opts(k8s_openapi::chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::CustomResourceExt as _;

    #[test]
    fn the_crd_is_namespaced_with_a_status_subresource_and_printer_columns() {
        let crd = serde_json::to_value(Addon::crd()).unwrap();
        assert_eq!(crd["metadata"]["name"], "addons.addonctl.io");
        assert_eq!(crd["spec"]["scope"], "Namespaced");
        let version = &crd["spec"]["versions"][0];
        assert_eq!(version["name"], "v1alpha1");
        assert!(version["subresources"]["status"].is_object());
        let columns: Vec<&str> = version["additionalPrinterColumns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        // `Phase` is addonctl's word for `enabled`, `enabling`, …: the Ready condition's reason
        // is shown as what it is.
        assert_eq!(columns, ["Version", "Ready", "Reason", "Clusters", "Age"]);
        let spec = &version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
        assert_eq!(
            spec["parameters"]["x-kubernetes-preserve-unknown-fields"],
            true
        );
        assert!(spec["secretParameters"]["items"]["properties"]["secretRef"].is_object());
    }

    #[test]
    fn a_phase_reason_is_the_cli_phase_capitalised_and_reads_back() {
        use crate::status::Phase;
        let phases = [
            Phase::Enabled,
            Phase::Enabling,
            Phase::Upgrading,
            Phase::Disabling,
            Phase::Suspend,
            Phase::Failed,
            Phase::Disabled,
            Phase::Unknown,
        ];
        for phase in phases {
            let reason = phase_reason(phase);
            assert_eq!(reason.to_lowercase(), phase.to_string(), "{phase:?}");
            assert!(reason.starts_with(char::is_uppercase), "{reason}");
            assert_eq!(reason_phase(reason), Some(phase), "{reason}");
        }
        // The words the controller wrote before are no phase.
        for reason in ["Progressing", "RollingOut", "InvalidSpec", "RolloutFailed"] {
            assert_eq!(reason_phase(reason), None, "{reason}");
        }
    }

    #[test]
    fn a_condition_keeps_its_transition_time_while_its_status_holds() {
        let mut status = AddonStatus::default();
        let ready = |s: &str| Condition {
            type_: "Ready".into(),
            status: s.into(),
            reason: "R".into(),
            ..Condition::default()
        };
        status.set_condition(ready("False"), "t1");
        status.set_condition(ready("False"), "t2");
        assert_eq!(
            status
                .condition("Ready")
                .unwrap()
                .last_transition_time
                .as_deref(),
            Some("t1")
        );
        status.set_condition(ready("True"), "t3");
        assert_eq!(
            status
                .condition("Ready")
                .unwrap()
                .last_transition_time
                .as_deref(),
            Some("t3")
        );
    }
}
