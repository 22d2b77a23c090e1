//! A plan as its page shows it: the [`crate::ops::preview::Preview`] of an enable or upgrade
//! (per addon, per cluster, each object's change and diff; the values' change; flags; kept
//! dependencies; notes), or the dry run of a disable (what is deleted, given back and kept,
//! and why), read back from the plan's JSON.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// A value of the plan, as a word (`"install"` → `install`).
fn word(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// An enable's or upgrade's preview.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Preview {
    /// The addons planned.
    pub plan: Vec<Planned>,
    /// Installed dependencies left as they are.
    pub kept: Vec<KeptAddon>,
    /// Notes.
    pub notes: Vec<String>,
    /// Definition conflicts.
    pub conflicts: Vec<String>,
    /// Objects that need attention.
    pub flags: Vec<Flag>,
    /// Clusters named that the template does not reach, per addon.
    pub untargeted: BTreeMap<String, Vec<String>>,
    /// Per addon, what the API servers said.
    pub addons: Vec<AddonDiff>,
    /// Made against an empty cluster.
    pub offline: bool,
}

/// One addon of the plan.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Planned {
    /// The addon.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Its registry.
    pub registry: String,
    /// What happens to it.
    pub action: Value,
    /// Who asked for it.
    pub installed_by: Value,
    /// What it depends on in the plan.
    pub depends_on: Vec<String>,
    /// What needs it in the plan.
    pub needed_by: Vec<String>,
}

impl Planned {
    /// Its action as a word.
    pub fn action_word(&self) -> String {
        word(&self.action)
    }
}

/// An installed dependency kept as it is.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct KeptAddon {
    /// The addon.
    pub name: String,
    /// Its installed version.
    pub version: String,
    /// The addons of the plan that need it.
    pub needed_by: Vec<String>,
}

/// An object flagged for attention.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Flag {
    /// The addon.
    pub addon: String,
    /// What kind of attention.
    pub kind: Value,
    /// The object.
    pub object: String,
    /// Why.
    pub reason: String,
}

impl Flag {
    /// Its kind as a word.
    pub fn kind_word(&self) -> String {
        word(&self.kind)
    }
}

/// One addon's changes.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AddonDiff {
    /// The addon.
    pub name: String,
    /// The version installed now.
    pub installed_version: Option<String>,
    /// The version applied.
    pub version: String,
    /// What happens to it.
    pub action: Value,
    /// The engine.
    pub engine: Value,
    /// The parameters that change.
    pub parameters: Vec<ParamChange>,
    /// Per cluster, the parameters over the arguments that change.
    pub cluster_parameters: Vec<ClusterParams>,
    /// Every object.
    pub objects: Vec<ObjectChange>,
    /// Notes.
    pub notes: Vec<String>,
    /// Clusters that could not be compared.
    pub failed: Vec<String>,
}

impl AddonDiff {
    /// The engine as a word.
    pub fn engine_word(&self) -> String {
        word(&self.engine)
    }

    /// The objects by cluster, clusters in order.
    pub fn by_cluster(&self) -> Vec<ClusterObjects<'_>> {
        let mut clusters: BTreeMap<&str, Vec<&ObjectChange>> = BTreeMap::new();
        for object in &self.objects {
            clusters.entry(&object.cluster).or_default().push(object);
        }
        clusters
            .into_iter()
            .map(|(cluster, objects)| {
                let mut counts: BTreeMap<String, usize> = BTreeMap::new();
                for o in &objects {
                    *counts.entry(o.change_word()).or_default() += 1;
                }
                ClusterObjects {
                    cluster,
                    summary: counts
                        .iter()
                        .map(|(change, n)| format!("{n} {change}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    objects,
                }
            })
            .collect()
    }
}

/// One cluster's objects.
#[derive(Debug)]
pub struct ClusterObjects<'a> {
    /// The cluster.
    pub cluster: &'a str,
    /// `2 create, 1 unchanged`.
    pub summary: String,
    /// Its objects.
    pub objects: Vec<&'a ObjectChange>,
}

/// One parameter's change.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ParamChange {
    /// Its path.
    pub path: String,
    /// How it changes.
    pub change: Value,
    /// The stored value.
    pub from: Option<Value>,
    /// The new value.
    pub to: Option<Value>,
}

impl ParamChange {
    /// The change as a word.
    pub fn change_word(&self) -> String {
        word(&self.change)
    }

    /// The stored value, as text (`(unset)`).
    pub fn before_text(&self) -> String {
        self.from
            .as_ref()
            .map_or_else(|| "(unset)".to_owned(), Value::to_string)
    }

    /// The new value, as text (`(default)`, `(secret)`).
    pub fn after_text(&self) -> String {
        match (&self.to, word(&self.change).as_str()) {
            (_, "secretChanged") => "(secret changed)".to_owned(),
            (Some(to), _) => to.to_string(),
            (None, _) => "(default)".to_owned(),
        }
    }
}

/// One cluster's parameter changes.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ClusterParams {
    /// The cluster.
    pub cluster: String,
    /// What changes.
    pub changes: Vec<ParamChange>,
}

/// One object's change.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObjectChange {
    /// The cluster.
    pub cluster: String,
    /// Kind.
    pub kind: String,
    /// Namespace.
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
    /// What happens.
    pub change: Value,
    /// The diff.
    pub diff: Option<String>,
    /// Why.
    pub message: Option<String>,
}

impl ObjectChange {
    /// The change as a word.
    pub fn change_word(&self) -> String {
        word(&self.change)
    }

    /// `ns/name` or `name`.
    pub fn qualified(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{ns}/{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// The lines of a unified diff, each with its class (`add`, `del`, `hunk`, `ctx`).
pub fn diff_lines(diff: &str) -> Vec<(&'static str, &str)> {
    diff.lines()
        .map(|line| {
            let class = if line.starts_with("+++") || line.starts_with("---") {
                "file"
            } else if line.starts_with('+') {
                "add"
            } else if line.starts_with('-') {
                "del"
            } else if line.starts_with("@@") {
                "hunk"
            } else {
                "ctx"
            };
            (class, line)
        })
        .collect()
}

/// A disable's dry run, per addon.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Removal {
    /// The addon.
    pub name: String,
    /// Objects deleted.
    pub deleted: Vec<Entry>,
    /// Objects given back.
    pub given_back: Vec<Entry>,
    /// Objects kept, with why.
    pub kept: Vec<Entry>,
}

/// One object of a removal.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Entry {
    /// The cluster.
    pub cluster: String,
    /// Kind.
    pub kind: String,
    /// Namespace.
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
    /// Why it is kept.
    pub reason: Option<String>,
}

impl Entry {
    /// `ns/name` or `name`.
    pub fn qualified(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{ns}/{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// What a plan's JSON is.
#[derive(Debug)]
pub enum Shown {
    /// An enable's or upgrade's preview.
    Preview(Box<Preview>),
    /// A disable's dry run.
    Removal(Vec<Removal>),
}

/// Reads a plan's JSON (`disable`: a dry run's reports).
pub fn read(plan: &Value, disable: bool) -> Shown {
    if disable {
        Shown::Removal(serde_json::from_value(plan.clone()).unwrap_or_default())
    } else {
        Shown::Preview(Box::new(
            serde_json::from_value(plan.clone()).unwrap_or_default(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_preview_reads_back_grouped_by_cluster() {
        let plan = json!({
            "plan": [{"name": "a", "version": "1.0.0", "registry": "builtin", "action": "install",
                      "installedBy": "user", "layer": 0, "clusters": null, "dependsOn": [], "neededBy": []}],
            "kept": [], "notes": ["n"], "conflicts": [], "flags": [],
            "addons": [{"name": "a", "installedVersion": null, "version": "1.0.0", "action": "install",
                        "engine": "direct", "parameters": [{"path": "x", "change": "added", "to": 1}],
                        "objects": [
                            {"cluster": "local", "apiVersion": "v1", "kind": "ConfigMap", "namespace": "ns", "name": "c", "change": "create", "diff": "+a"},
                            {"cluster": "local", "apiVersion": "v1", "kind": "Secret", "namespace": "ns", "name": "s", "change": "unchanged"}
                        ], "notes": []}]
        });
        let Shown::Preview(preview) = read(&plan, false) else {
            panic!("a preview");
        };
        assert_eq!(preview.plan[0].action_word(), "install");
        let clusters = preview.addons[0].by_cluster();
        assert_eq!(clusters.len(), 1);
        assert_eq!(clusters[0].summary, "1 create, 1 unchanged");
        assert_eq!(preview.addons[0].parameters[0].after_text(), "1");
        assert_eq!(preview.addons[0].parameters[0].before_text(), "(unset)");
    }
}
