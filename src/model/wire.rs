//! Wire names: the labels, annotations and object names addonctl and KubeVela agree on, shared
//! by rendering (which writes them) and the stages that read and apply (which must not depend
//! on the renderer for them).

use kube::core::GroupVersionKind;

/// Label: the addon's name.
pub const LABEL_NAME: &str = "addons.oam.dev/name";
/// Label: the addon's version, exactly as `metadata.yaml` writes it.
pub const LABEL_VERSION: &str = "addons.oam.dev/version";
/// Label: the registry the addon came from.
pub const LABEL_REGISTRY: &str = "addons.oam.dev/registry";
/// Label on auxiliary outputs: their key in `outputs`.
pub const LABEL_AUXILIARY: &str = "addons.oam.dev/auxiliary-name";
/// Label marking addonctl's records (Secrets `addon-record-<addon>`).
pub const LABEL_RECORD: &str = "addonctl.io/record";
/// Label on every Secret that belongs to a record besides the record itself (shards, revision
/// Secrets): the addon's name.
pub const LABEL_RECORD_OF: &str = "addonctl.io/record-of";
/// Label saying which part of a record a Secret is: `shard` or `revision`.
pub const LABEL_RECORD_PART: &str = "addonctl.io/record-part";
/// The name of the control-plane cluster.
pub const LOCAL_CLUSTER: &str = "local";
/// The field manager of every server-side apply.
pub const FIELD_MANAGER: &str = "addonctl";

/// The field manager of the system namespace when addonctl makes it: not [`FIELD_MANAGER`], so
/// that an addon whose objects include that namespace never counts it as created by its apply
/// (objects written without a field manager would get the `User-Agent`'s first word).
pub const SYSTEM_NAMESPACE_MANAGER: &str = "addonctl-system";
/// The key of the argument Secret's data that holds the arguments (JSON).
pub const ARGS_SECRET_KEY: &str = "addonParameterDataKey";

/// The name of an addon's Application.
pub fn application_name(addon: &str) -> String {
    format!("addon-{addon}")
}

/// The name of an addon's argument Secret.
pub fn args_secret_name(addon: &str) -> String {
    format!("addon-secret-{addon}")
}

/// The name of an addon's record Secret.
pub fn record_name(addon: &str) -> String {
    format!("addon-record-{addon}")
}

/// The Namespace `name`, as created when missing (the system namespace, before the first thing
/// addonctl writes there).
pub fn namespace_object(name: &str) -> serde_json::Value {
    serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

/// The `properties` of an Application's topology policies, in order (`null` for a policy
/// without any).
pub fn topology_properties(
    application: &serde_json::Value,
) -> impl Iterator<Item = &serde_json::Value> {
    application
        .pointer("/spec/policies")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .filter(|p| p.get("type").and_then(serde_json::Value::as_str) == Some("topology"))
        .map(|p| p.get("properties").unwrap_or(&serde_json::Value::Null))
}

/// The strings of a JSON list (other items skipped); `None` when it is no list.
pub fn string_list(value: Option<&serde_json::Value>) -> Option<Vec<String>> {
    let list = value?.as_array()?;
    Some(
        list.iter()
            .filter_map(serde_json::Value::as_str)
            .map(str::to_owned)
            .collect(),
    )
}

fn gvk(api_version: &str, kind: &str) -> GroupVersionKind {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    GroupVersionKind::gvk(group, version, kind)
}

/// KubeVela's Application kind.
pub fn application_gvk() -> GroupVersionKind {
    gvk("core.oam.dev/v1beta1", "Application")
}

/// The Secret kind.
pub fn secret_gvk() -> GroupVersionKind {
    gvk("v1", "Secret")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_names_follow_kubevela_and_addonctl() {
        assert_eq!(application_name("fluxcd"), "addon-fluxcd");
        assert_eq!(args_secret_name("fluxcd"), "addon-secret-fluxcd");
        assert_eq!(record_name("fluxcd"), "addon-record-fluxcd");
        assert_eq!(application_gvk().kind, "Application");
        assert_eq!(secret_gvk().group, "");
    }
}
