//! What a render takes ([`RenderOptions`]) and what it gives ([`Rendered`]).

use base64::Engine as _;
use serde_json::{json, Map, Value};

use super::mask::{collect_secrets, mask_secret_objects, mask_strings, mask_text, secret_strings};
use crate::params::ParameterSchema;

/// What to render with.
#[derive(Debug, Clone)]
pub struct RenderOptions {
    /// The system namespace (`vela-system` by default).
    pub namespace: String,
    /// Arguments given now.
    pub args: Map<String, Value>,
    /// Arguments stored by the installed addon (on upgrade); given arguments win.
    pub stored_args: Map<String, Value>,
    /// Whether this render is an upgrade of an installed addon (`context.installer.upgrade`).
    pub upgrade: bool,
    /// The target cluster's Kubernetes version (`context.kubernetes.version`); `None` offline.
    pub kubernetes_version: Option<String>,
    /// Target cluster names (`context.clusters`); `None` = the `clusters` argument, if any.
    pub clusters: Option<Vec<String>>,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            namespace: crate::constants::DEFAULT_SYSTEM_NAMESPACE.to_owned(),
            args: Map::new(),
            stored_args: Map::new(),
            upgrade: false,
            kubernetes_version: None,
            clusters: None,
        }
    }
}

/// Everything `enable` applies for one addon, plus the notes.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The addon's name.
    pub name: String,
    /// Its version as written in `metadata.yaml`.
    pub version: String,
    /// The registry it came from.
    pub registry: String,
    /// The system namespace it was rendered for.
    pub namespace: String,
    /// The normalised KubeVela Application `addon-<name>`.
    pub application: Value,
    /// Auxiliary outputs of `template.rhai` (key, object), labelled with their key.
    pub outputs: Vec<(String, Value)>,
    /// X-Definitions, in the system namespace.
    pub definitions: Vec<Value>,
    /// UI-schema and config-template ConfigMaps.
    pub config_maps: Vec<Value>,
    /// `views/` objects, as written.
    pub views: Vec<Value>,
    /// The argument Secret `addon-secret-<name>`; `None` when no arguments were given.
    pub args_secret: Option<Value>,
    /// The text of `NOTES.rhai`.
    pub notes: Option<String>,
    /// The arguments to store (stored ← given, merged at every depth), without defaults.
    pub args: Map<String, Value>,
    /// The clusters of its `clusters` argument, typed; `None` = where its topology says.
    pub clusters: Option<Vec<String>>,
    /// The effective parameter values (defaults applied).
    pub values: Value,
    /// The parameter schema.
    pub schema: ParameterSchema,
    /// Problems that did not stop rendering.
    pub warnings: Vec<String>,
}

impl Rendered {
    /// Every object in apply order: the system Namespace, Namespaces and CRDs among the outputs,
    /// definitions, ConfigMaps, views, the other outputs, the argument Secret, the Application.
    pub fn objects(&self) -> Vec<Value> {
        let kind_of = |o: &Value| {
            o.get("kind")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let mut out = vec![json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": self.namespace},
        })];
        let outputs: Vec<&Value> = self.outputs.iter().map(|(_, o)| o).collect();
        out.extend(
            outputs
                .iter()
                .filter(|o| kind_of(o) == "Namespace")
                .map(|o| (*o).clone()),
        );
        out.extend(
            outputs
                .iter()
                .filter(|o| kind_of(o) == "CustomResourceDefinition")
                .map(|o| (*o).clone()),
        );
        out.extend(self.definitions.iter().cloned());
        out.extend(self.config_maps.iter().cloned());
        out.extend(self.views.iter().cloned());
        out.extend(
            outputs
                .iter()
                .filter(|o| {
                    !matches!(
                        kind_of(o).as_str(),
                        "Namespace" | "CustomResourceDefinition"
                    )
                })
                .map(|o| (*o).clone()),
        );
        out.extend(self.args_secret.iter().cloned());
        out.push(self.application.clone());
        out
    }

    /// The values of `secret()` parameters (to mask wherever they appear).
    pub fn secret_values(&self) -> Vec<String> {
        // Scripts often store a secret base64-encoded (Secret `data`): that form is masked too.
        secret_strings(&self.schema, &self.values)
    }

    /// The `secret()` parameters whose value (as written or base64-encoded) appears in the
    /// Application: KubeVela stores the Application, and shows it, in plain text.
    pub fn secrets_in_application(&self) -> Vec<String> {
        let mut pairs = Vec::new();
        collect_secrets(&self.schema, &self.values, "", &mut pairs);
        let text = self.application.to_string();
        let mut paths: Vec<String> = pairs
            .into_iter()
            .filter(|(_, value)| {
                let encoded = base64::engine::general_purpose::STANDARD.encode(value);
                // A short value only counts as a whole JSON string, not inside other text.
                let exact = Value::String(value.clone()).to_string();
                text.contains(&exact)
                    || text.contains(&format!("\"{encoded}\""))
                    || (value.len() >= 4
                        && (text.contains(value.as_str()) || text.contains(&encoded)))
            })
            .map(|(path, _)| path)
            .collect();
        paths.dedup();
        paths
    }

    /// [`Rendered::objects`] with every Secret's data and every secret parameter value masked.
    pub fn masked_objects(&self) -> Vec<Value> {
        let secrets = self.secret_values();
        self.objects()
            .into_iter()
            .map(|mut object| {
                mask_secret_objects(&mut object);
                mask_strings(&mut object, &secrets);
                object
            })
            .collect()
    }

    /// The values of `secret()` parameters among other arguments of this addon (the stored
    /// ones, read by this schema), with their base64 forms: to mask them too.
    pub fn secret_values_in(&self, args: &Value) -> Vec<String> {
        secret_strings(&self.schema, args)
    }

    /// The notes with secret parameter values masked.
    pub fn masked_notes(&self) -> Option<String> {
        let secrets = self.secret_values();
        self.notes.as_ref().map(|n| mask_text(n, &secrets))
    }
}
