//! Output assembly: the template's result, auxiliary outputs, object and component checks,
//! definitions and UI-schema ConfigMaps.

use std::collections::HashMap;

use rhai::{Dynamic, Scope};
use serde_json::{json, Map, Value};

use super::normalize::{self, LABEL_AUXILIARY};
use super::{inner_message, Error, Pkg, Renderer};
use crate::model::SourceFile;

impl Renderer {
    pub(super) fn template_result(
        pkg: &Pkg<'_>,
        file: &SourceFile,
        result: &Dynamic,
    ) -> Result<(Value, Vec<(String, Value)>), Error> {
        let value = Self::to_json(pkg, file, result)?;
        let Value::Object(mut map) = value else {
            return Err(Self::file_error(
                pkg,
                &file.path,
                "must evaluate to `#{ output: <Application>, outputs: #{ … } }`",
            ));
        };
        if map.get("kind").and_then(Value::as_str) == Some("Application") {
            return Ok((Value::Object(map), Vec::new()));
        }
        let application = map.remove("output").ok_or_else(|| {
            Self::file_error(pkg, &file.path, "the result has no `output` (the Application); return `#{ output: application(…) }`")
        })?;
        let outputs = match map.remove("outputs") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Object(items)) => {
                Self::labelled_outputs(pkg, file, items.into_iter().collect())?
            }
            Some(_) => {
                return Err(Self::file_error(
                    pkg,
                    &file.path,
                    "`outputs` must be a map of key → object",
                ))
            }
        };
        if let Some(unknown) = map.keys().next() {
            return Err(Self::file_error(
                pkg,
                &file.path,
                format!("unexpected key `{unknown}` in the result; only `output` and `outputs` are allowed"),
            ));
        }
        Ok((application, outputs))
    }

    /// Auxiliary outputs, checked and labelled with their key.
    pub(super) fn labelled_outputs(
        pkg: &Pkg<'_>,
        file: &SourceFile,
        items: Vec<(String, Value)>,
    ) -> Result<Vec<(String, Value)>, Error> {
        let mut outputs = Vec::new();
        for (key, mut object) in items {
            Self::check_object(pkg, &file.path, &object).map_err(|e| {
                Self::file_error(
                    pkg,
                    &file.path,
                    format!("`outputs.{key}`: {}", inner_message(&e)),
                )
            })?;
            normalize::add_label(&mut object, LABEL_AUXILIARY, &key)
                .map_err(|m| Self::file_error(pkg, &file.path, format!("`outputs.{key}`: {m}")))?;
            outputs.push((key, object));
        }
        Ok(outputs)
    }

    /// A Kubernetes object must be a mapping with `apiVersion`, `kind` and `metadata.name`.
    pub(super) fn check_object(pkg: &Pkg<'_>, file: &str, object: &Value) -> Result<(), Error> {
        let field = |p: &str| {
            object
                .pointer(p)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        };
        let missing: Vec<&str> = [
            ("/apiVersion", "apiVersion"),
            ("/kind", "kind"),
            ("/metadata/name", "metadata.name"),
        ]
        .into_iter()
        .filter(|(p, _)| field(p).is_none())
        .map(|(_, n)| n)
        .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            let shown = field("/kind").map_or(String::new(), |k| format!(" (kind `{k}`)"));
            Err(Self::file_error(
                pkg,
                file,
                format!(
                    "an object{shown} lacks {}",
                    missing
                        .iter()
                        .map(|m| format!("`{m}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ))
        }
    }

    pub(super) fn check_component(
        pkg: &Pkg<'_>,
        file: &str,
        component: &Value,
    ) -> Result<(), Error> {
        let ok = |k: &str| {
            component
                .get(k)
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty())
        };
        if component.is_object() && ok("name") && ok("type") {
            Ok(())
        } else {
            Err(Self::file_error(
                pkg,
                file,
                "must evaluate to a component `#{ name, type, properties }` (see `component(…)`, `k8s_objects(…)`) or a list of them",
            ))
        }
    }

    pub(super) fn definitions(
        &self,
        pkg: &Pkg<'_>,
        scope: &mut Scope<'_>,
        namespace: &str,
    ) -> Result<Vec<Value>, Error> {
        let mut out: Vec<Value> = Vec::new();
        let mut seen: HashMap<(String, String), String> = HashMap::new();
        for file in &pkg.package.definitions {
            let objects = if file.path.ends_with(".cue") {
                vec![
                    crate::cue::definition_from_cue(&file.text, namespace).map_err(|e| {
                        Error::Script {
                            addon: pkg.package.name().to_owned(),
                            file: file.path.clone(),
                            line: e.line,
                            column: e.column,
                            message: e.message,
                        }
                    })?,
                ]
            } else if file.path.ends_with(".rhai") {
                let result = self.eval(pkg, file, &mut scope.clone())?;
                match Self::to_json(pkg, file, &result)? {
                    Value::Array(items) => items,
                    other => vec![other],
                }
            } else {
                crate::yaml::parse_documents(&file.text)
                    .map_err(|e| {
                        Self::file_error(pkg, &file.path, format!("invalid YAML: {}", e.message))
                    })?
                    .documents
            };
            for mut object in objects {
                Self::check_object(pkg, &file.path, &object)?;
                if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                    metadata.insert("namespace".into(), json!(namespace));
                    crate::model::drop_null_server_metadata(metadata);
                    // KubeVela writes no empty annotation or label maps on definitions.
                    for key in ["annotations", "labels"] {
                        if metadata.get(key).is_some_and(|v| {
                            v.is_null() || v.as_object().is_some_and(Map::is_empty)
                        }) {
                            metadata.remove(key);
                        }
                    }
                }
                let kind = object["kind"].as_str().unwrap_or_default().to_owned();
                let def_name = object["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                if let Some(previous) =
                    seen.insert((kind.clone(), def_name.clone()), file.path.clone())
                {
                    return Err(Self::file_error(
                        pkg,
                        &file.path,
                        format!("{kind} `{def_name}` is also defined in `{previous}`; definition names must be unique per kind"),
                    ));
                }
                out.push(object);
            }
        }
        Ok(out)
    }

    pub(super) fn schema_config_maps(pkg: &Pkg<'_>, namespace: &str) -> Result<Vec<Value>, Error> {
        let mut out = Vec::new();
        for file in &pkg.package.schemas {
            let (value, _) = crate::yaml::parse_single(&file.text).map_err(|e| {
                Self::file_error(pkg, &file.path, format!("invalid YAML: {}", e.message))
            })?;
            let base = file.path.rsplit('/').next().unwrap_or(&file.path);
            let cm_name = base.split('.').next().unwrap_or(base);
            if !crate::model::metadata::is_valid_name(cm_name) {
                return Err(Self::file_error(
                    pkg,
                    &file.path,
                    format!("`{cm_name}` (the file name up to its first dot) is not a valid ConfigMap name"),
                ));
            }
            let text = serde_json::to_string(&value).map_err(|e| {
                Self::file_error(pkg, &file.path, format!("cannot encode as JSON: {e}"))
            })?;
            out.push(json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": cm_name, "namespace": namespace},
                "data": {"ui-schema": text},
            }));
        }
        Ok(out)
    }
}
