//! KubeVela's CUE addons (DESIGN §2.7), evaluated by [`crate::cue`] exactly as `vela` builds them.
//!
//! Expected flow:
//! - `template.cue` is evaluated together with every `resources/**.cue` that declares
//!   `package main`, `parameter.cue` and a generated file holding `context: {metadata: …}` and
//!   `parameter: <the arguments as JSON>`; `output` is the Application, `outputs` (optional)
//!   the auxiliary objects by key;
//! - a `resources/*.cue` file without a package clause is a legacy component: evaluated alone
//!   with `parameter.cue` and the generated file, its `output` is one component, named by its
//!   `name` or after the file (extension removed, dots → dashes); a file without `output` is
//!   skipped;
//! - `NOTES.cue` is evaluated with `parameter.cue` and the generated file, whose `context` also
//!   holds `installer: {upgrade}`; `notes` is the text.
//!
//! `vela` pastes `parameter.cue` into the generated file; here it stays a file of its own, which
//! unifies the same way (files of one package unify at the root) and keeps the lines of errors
//! in `parameter.cue` right. The arguments are the ones given (stored ← given), not the schema's
//! defaults: the defaults are `parameter.cue`'s own, as in `vela`.

use serde_json::{json, Map, Value};

use crate::cue::{self, Source};
use crate::model::{AddonPackage, SourceFile};

/// `context.metadata` as `vela` gives it: `metadata.yaml` read into KubeVela's `Meta` struct and
/// written back as JSON, so `name`, `version`, `description`, `icon` and `invisible` are always
/// there (empty when not written), the other known fields only when set, and fields `Meta` does
/// not know are dropped. The order is the struct's.
pub(crate) fn vela_metadata(raw: &Value) -> Value {
    let field = |key: &str| raw.get(key).filter(|v| !v.is_null());
    let mut out = Map::new();
    for key in ["name", "version", "description", "icon"] {
        out.insert(
            key.into(),
            Value::String(field(key).map_or_else(String::new, text)),
        );
    }
    if let Some(url) = field("url").map(text).filter(|u| !u.is_empty()) {
        out.insert("url".into(), Value::String(url));
    }
    if let Some(tags) = field("tags").and_then(strings).filter(|t| !t.is_empty()) {
        out.insert("tags".into(), tags.into());
    }
    if let Some(plugins) = field("uxPlugins").and_then(string_map) {
        out.insert("uxPlugins".into(), plugins);
    }
    if let Some(deploy) = field("deployTo") {
        let flag = |key: &str| deploy.get(key).and_then(Value::as_bool).unwrap_or(false);
        let mut d = Map::new();
        if flag("runtime_cluster") {
            d.insert("runtime_cluster".into(), true.into());
        }
        d.insert(
            "disableControlPlane".into(),
            flag("disableControlPlane").into(),
        );
        d.insert("runtimeCluster".into(), flag("runtimeCluster").into());
        out.insert("deployTo".into(), Value::Object(d));
    }
    if let Some(Value::Array(deps)) =
        field("dependencies").filter(|d| d.as_array().is_some_and(|a| !a.is_empty()))
    {
        let deps = deps.iter().map(|d| {
            if d.is_null() {
                return Value::Null;
            }
            let mut m = Map::new();
            for key in ["name", "version"] {
                if let Some(v) = d
                    .get(key)
                    .filter(|v| !v.is_null())
                    .map(text)
                    .filter(|v| !v.is_empty())
                {
                    m.insert(key.into(), Value::String(v));
                }
            }
            Value::Object(m)
        });
        out.insert("dependencies".into(), Value::Array(deps.collect()));
    }
    if let Some(ns) = field("needNamespace")
        .and_then(strings)
        .filter(|n| !n.is_empty())
    {
        out.insert("needNamespace".into(), ns.into());
    }
    let invisible = field("invisible").and_then(Value::as_bool).unwrap_or(false);
    out.insert("invisible".into(), invisible.into());
    if let Some(system) = field("system") {
        let mut m = Map::new();
        for key in ["vela", "kubernetes"] {
            if let Some(v) = system
                .get(key)
                .filter(|v| !v.is_null())
                .map(text)
                .filter(|v| !v.is_empty())
            {
                m.insert(key.into(), Value::String(v));
            }
        }
        out.insert("system".into(), Value::Object(m));
    }
    if let Some(annotations) = field("annotations").and_then(string_map) {
        out.insert("annotations".into(), annotations);
    }
    Value::Object(out)
}

/// A scalar as the string Go's `Meta` holds (a YAML `1.0` is read as the text `1.0`).
fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn strings(value: &Value) -> Option<Vec<Value>> {
    let items = value.as_array()?;
    Some(items.iter().map(|v| Value::String(text(v))).collect())
}

/// A non-empty map of strings (`omitempty` drops an empty one), keys sorted as Go writes a map.
fn string_map(value: &Value) -> Option<Value> {
    let map = value.as_object().filter(|m| !m.is_empty())?;
    let sorted: std::collections::BTreeMap<&String, String> =
        map.iter().map(|(k, v)| (k, text(v))).collect();
    Some(Value::Object(
        sorted
            .into_iter()
            .map(|(k, v)| (k.clone(), Value::String(v)))
            .collect(),
    ))
}

/// The name errors give the generated file.
pub(crate) const GENERATED: &str = "(generated: context and parameter)";

/// An evaluation failed: the file and position of the first place involved, and the message.
#[derive(Debug)]
pub(crate) struct Failure {
    /// The file (`template.cue`, `resources/a.cue`).
    pub file: String,
    /// 1-based line, 0 when unknown.
    pub line: usize,
    /// 1-based column, 0 when unknown.
    pub column: usize,
    /// What went wrong (for CUE errors, the evaluator's message with path and positions).
    pub message: String,
}

impl Failure {
    fn of(file: &str, error: &cue::Error) -> Self {
        let first = error.positions.first();
        Failure {
            file: first.map_or_else(|| file.to_owned(), |p| p.file.clone()),
            line: first.map_or(0, |p| p.line as usize),
            column: first.map_or(0, |p| p.column as usize),
            message: error.to_string(),
        }
    }

    fn file(file: &str, message: impl Into<String>) -> Self {
        Failure {
            file: file.to_owned(),
            line: 0,
            column: 0,
            message: message.into(),
        }
    }
}

/// The result of `template.cue`.
pub(crate) struct TemplateOutput {
    /// `output`, the Application (not yet normalised).
    pub application: Value,
    /// `outputs`, by key, in CUE's field order.
    pub outputs: Vec<(String, Value)>,
}

/// What the CUE files of one addon see.
pub(crate) struct CueInput<'a> {
    pub package: &'a AddonPackage,
    /// The arguments (stored ← given), without defaults.
    pub args: &'a Map<String, Value>,
    pub limits: cue::Limits,
}

impl CueInput<'_> {
    fn source(file: &SourceFile) -> Source {
        Source::new(file.path.clone(), file.text.to_string())
    }

    /// `parameter.cue` (when there is one) and the generated file.
    fn common(&self, upgrade: Option<bool>) -> Result<Vec<Source>, Failure> {
        let mut context = Map::new();
        context.insert("metadata".into(), vela_metadata(&self.package.metadata.raw));
        if let Some(upgrade) = upgrade {
            context.insert("installer".into(), json!({ "upgrade": upgrade }));
        }
        let encode = |value: &Value| {
            serde_json::to_string(value)
                .map_err(|e| Failure::file(GENERATED, format!("cannot encode as JSON: {e}")))
        };
        let text = format!(
            "context: {}\nparameter: {}\n",
            encode(&Value::Object(context))?,
            encode(&Value::Object(self.args.clone()))?
        );
        let mut sources: Vec<Source> = self
            .package
            .parameter_cue
            .iter()
            .map(Self::source)
            .collect();
        sources.push(Source::new(GENERATED, text));
        Ok(sources)
    }

    fn evaluate(&self, primary: &SourceFile, sources: &[Source]) -> Result<cue::Instance, Failure> {
        cue::evaluate(sources, &self.limits).map_err(|e| Failure::of(&primary.path, &e))
    }

    /// `template.cue` with the `package main` fragments of `resources/`.
    pub fn template(&self, template: &SourceFile) -> Result<TemplateOutput, Failure> {
        let mut sources = vec![Self::source(template)];
        for file in &self.package.resource_cues {
            let source = Self::source(file);
            let package = cue::package_clause(&source).map_err(|e| Failure::of(&file.path, &e))?;
            if package.as_deref() == Some("main") {
                sources.push(source);
            }
        }
        sources.extend(self.common(None)?);
        // `vela` builds these files as `package main` (adding the clause where it is missing),
        // so an unused import is an error in each of them.
        let instance = cue::evaluate_main(&sources, &self.limits)
            .map_err(|e| Failure::of(&template.path, &e))?;
        let export = |path: &str| {
            instance
                .export(&[path])
                .map_err(|e| Failure::of(&template.path, &e))
        };
        let application = export("output")?.ok_or_else(|| {
            Failure::file(
                &template.path,
                "has no `output` field (the Application the addon installs)",
            )
        })?;
        let outputs = match export("outputs")? {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Object(map)) => map.into_iter().collect(),
            Some(other) => {
                return Err(Failure::file(
                    &template.path,
                    format!(
                        "`outputs` must be a struct of key: object, found {}",
                        kind(&other)
                    ),
                ))
            }
        };
        Ok(TemplateOutput {
            application,
            outputs,
        })
    }

    /// The legacy components: `resources/*.cue` files without a package clause, in path order.
    pub fn legacy_components(&self, warnings: &mut Vec<String>) -> Result<Vec<Value>, Failure> {
        let mut components = Vec::new();
        for file in &self.package.resource_cues {
            let source = Self::source(file);
            match cue::package_clause(&source).map_err(|e| Failure::of(&file.path, &e))? {
                None => {}
                Some(name) if name == "main" => continue,
                Some(other) => {
                    warnings.push(format!(
                        "`{}` declares `package {other}`: only `package main` files join `template.cue`; skipped",
                        file.path
                    ));
                    continue;
                }
            }
            let mut sources = vec![source];
            sources.extend(self.common(None)?);
            let instance = self.evaluate(file, &sources)?;
            let Some(output) = instance
                .export(&["output"])
                .map_err(|e| Failure::of(&file.path, &e))?
            else {
                continue;
            };
            let Value::Object(mut component) = output else {
                return Err(Failure::file(
                    &file.path,
                    format!(
                        "`output` must be a component struct, found {}",
                        kind(&output)
                    ),
                ));
            };
            let named = component
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty());
            if !named {
                component.insert("name".into(), json!(component_name(&file.path)));
            }
            components.push(Value::Object(component));
        }
        Ok(components)
    }

    /// `NOTES.cue`'s `notes`.
    pub fn notes(&self, file: &SourceFile, upgrade: bool) -> Result<Option<String>, Failure> {
        let mut sources = vec![Self::source(file)];
        sources.extend(self.common(Some(upgrade))?);
        let instance = self.evaluate(file, &sources)?;
        match instance
            .export(&["notes"])
            .map_err(|e| Failure::of(&file.path, &e))?
        {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(other) => Err(Failure::file(
                &file.path,
                format!("`notes` must be a string, found {}", kind(&other)),
            )),
        }
    }
}

/// The name of a legacy component without `name`, as `vela` makes it: the file's base name with
/// every occurrence of its extension removed, then dots as dashes
/// (`resources/legacy.worker.cue` → `legacy-worker`, `resources/chartmuseum.cue` →
/// `chartmuseum`).
pub(crate) fn component_name(path: &str) -> String {
    let base = path.rsplit('/').next().unwrap_or(path);
    let stem = match base.rfind('.') {
        Some(dot) => base.replace(&base[dot..], ""),
        None => base.to_owned(),
    };
    stem.replace('.', "-")
}

/// The files `vela` builds together with `parameter.cue` into one package: `template.cue` and
/// the `package main` files of `resources/` (a definition `parameter` refers to may be declared
/// in any of them). Files whose package clause cannot be read are left out (their render
/// reports it).
pub(crate) fn package_files(package: &AddonPackage) -> Vec<&SourceFile> {
    let mut files = Vec::new();
    if let Some(crate::model::Template::Cue(template)) = &package.template {
        files.push(template);
        for file in &package.resource_cues {
            let source = CueInput::source(file);
            if matches!(cue::package_clause(&source), Ok(Some(name)) if name == "main") {
                files.push(file);
            }
        }
    }
    files
}

/// The JSON Schema of `parameter.cue`'s `parameter` field (`others`: see [`package_files`]). A
/// struct whose fields all have defaults (or are optional) is concrete without arguments, so it
/// is not required, as in CUE; nor is an open list without a default, which CUE exports as
/// `[]` (its default here).
pub(crate) fn parameter_schema(
    file: &SourceFile,
    others: &[&SourceFile],
    limits: &cue::Limits,
) -> Result<Value, Failure> {
    let others: Vec<Source> = others.iter().map(|f| CueInput::source(f)).collect();
    let mut schema = cue::parameter_schema(&CueInput::source(file), &others, limits)
        .map_err(|e| Failure::of(&file.path, &e))?;
    relax_required(&mut schema, 0);
    Ok(schema)
}

/// Keeps in `required` only the properties that need an argument (see [`parameter_schema`]);
/// returns whether `schema` itself needs one: it has no default and is not a struct that is
/// concrete without arguments.
fn relax_required(schema: &mut Value, depth: usize) -> bool {
    // Schemas come from parameter.cue, nested as deep as the evaluator allows; stay bounded.
    if depth > 64 {
        return true;
    }
    let Some(object) = schema.as_object_mut() else {
        return false;
    };
    if object.contains_key("default") {
        return false;
    }
    match object.get("type").and_then(Value::as_str) {
        Some("object") => {}
        Some("array") => {
            object.insert("default".into(), Value::Array(Vec::new()));
            return false;
        }
        _ => return true,
    }
    let mut needed = Vec::new();
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        for (name, property) in properties.iter_mut() {
            if relax_required(property, depth + 1) {
                needed.push(name.clone());
            }
        }
    }
    let Some(Value::Array(required)) = object.get_mut("required") else {
        return false;
    };
    required.retain(|r| r.as_str().is_some_and(|r| needed.iter().any(|n| n == r)));
    if required.is_empty() {
        object.remove("required");
        false
    } else {
        true
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a struct",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structs_whose_fields_all_have_defaults_are_not_required() {
        let mut schema = json!({
            "type": "object",
            "properties": {
                "ingress": {
                    "type": "object",
                    "properties": {"enabled": {"type": "boolean", "default": false}},
                    "required": ["enabled"],
                },
                "auth": {
                    "type": "object",
                    "properties": {"user": {"type": "string"}},
                    "required": ["user"],
                },
                "owner": {"type": "string"},
            },
            "required": ["ingress", "auth", "owner"],
        });

        relax_required(&mut schema, 0);

        assert_eq!(schema["required"], json!(["auth", "owner"]));
        assert!(schema["properties"]["ingress"].get("required").is_none());
        assert_eq!(schema["properties"]["auth"]["required"], json!(["user"]));
    }

    #[test]
    fn context_metadata_has_the_shape_of_kubevelas_meta_struct() {
        let raw = json!({
            "name": "demo", "version": 1.5, "maintainer": "dropped", "tags": [],
            "annotations": {"z": "1", "a": 2}, "deployTo": {"runtimeCluster": true},
            "dependencies": [{"name": "fluxcd"}, {"name": "x", "version": ">=1.0.0", "extra": 1}],
            "system": {"vela": ">=v1.5.0"}, "url": "", "needNamespace": ["ns"]
        });
        let meta = vela_metadata(&raw);
        assert_eq!(
            serde_json::to_string(&meta).unwrap(),
            concat!(
                r#"{"name":"demo","version":"1.5","description":"","icon":"","#,
                r#""deployTo":{"disableControlPlane":false,"runtimeCluster":true},"#,
                r#""dependencies":[{"name":"fluxcd"},{"name":"x","version":">=1.0.0"}],"#,
                r#""needNamespace":["ns"],"invisible":false,"system":{"vela":">=v1.5.0"},"#,
                r#""annotations":{"a":"2","z":"1"}}"#
            )
        );
        let bare = vela_metadata(&json!({"name": "bare", "invisible": true}));
        assert_eq!(
            bare,
            json!({"name": "bare", "version": "", "description": "", "icon": "", "invisible": true})
        );
    }

    #[test]
    fn legacy_components_are_named_after_their_file_without_extension_dots_as_dashes() {
        assert_eq!(
            component_name("resources/legacy.worker.cue"),
            "legacy-worker"
        );
        assert_eq!(component_name("resources/chartmuseum.cue"), "chartmuseum");
        assert_eq!(component_name("resources/deep/a.cue"), "a");
        // Every occurrence of the extension goes, as Go's `strings.ReplaceAll` takes it.
        assert_eq!(component_name("resources/x.cue.y.cue"), "x-y");
        assert_eq!(component_name("resources/noext"), "noext");
    }
}
