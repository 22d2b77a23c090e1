//! The steps of a render once the parameter values are known (see [`Renderer::render`]): the
//! template, the components appended in KubeVela's order, the ConfigMaps, views, argument
//! Secret and notes.

use base64::Engine as _;
use rhai::Scope;
use serde_json::{json, Map, Value};

use super::normalize;
use super::{Error, Pkg, Renderer};
use crate::model::Template;

/// A template's result: the Application, the auxiliary outputs, and whether a script placed the
/// Application itself.
type TemplateResult = (Value, Vec<(String, Value)>, bool);

impl Renderer {
    /// `template.rhai` / `template.yaml` / `template.cue` → the Application and auxiliary outputs.
    pub(super) fn template(
        &self,
        pkg: &Pkg<'_>,
        scope: &Scope<'_>,
        args: &Map<String, Value>,
        warnings: &mut Vec<String>,
    ) -> Result<TemplateResult, Error> {
        let package = pkg.package;
        Ok(match &package.template {
            Some(Template::Rhai(file)) => {
                let result = self.eval(pkg, file, &mut scope.clone())?;
                let (app, outputs) = Self::template_result(pkg, file, &result)?;
                (app, outputs, true)
            }
            Some(Template::Yaml(file)) => {
                let mut documents = Self::yaml_documents(pkg, file, warnings)?;
                if documents.len() > 1 {
                    return Err(Self::file_error(
                        pkg,
                        &file.path,
                        format!(
                            "expected one Application, found {} documents",
                            documents.len()
                        ),
                    ));
                }
                (documents.pop().unwrap_or(Value::Null), Vec::new(), false)
            }
            Some(Template::Cue(file)) => {
                let result = self
                    .cue_input(package, args)
                    .template(file)
                    .map_err(|f| Self::cue_error(pkg, f))?;
                let mut outputs = Self::labelled_outputs(pkg, file, result.outputs)?;
                // KubeVela labels every auxiliary output of `template.cue` with the addon's name
                // and version (the text of metadata.yaml), over any label the output sets.
                let version = package.metadata.version.raw();
                for (key, object) in &mut outputs {
                    for (label, value) in [
                        (normalize::LABEL_NAME, package.name()),
                        (normalize::LABEL_VERSION, version),
                    ] {
                        normalize::add_label(object, label, value).map_err(|m| {
                            Self::file_error(pkg, &file.path, format!("`outputs.{key}`: {m}"))
                        })?;
                    }
                }
                // Like a Rhai template, a CUE template places the Application itself.
                (result.application, outputs, true)
            }
            None => (Value::Null, Vec::new(), false),
        })
    }

    /// The components appended in KubeVela's order: `needNamespace` namespaces,
    /// `<addon>-resources`, `resources/*.rhai`, then the legacy `resources/*.cue` components.
    pub(super) fn components(
        &self,
        pkg: &Pkg<'_>,
        options: &super::RenderOptions,
        scope: &Scope<'_>,
        args: &Map<String, Value>,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<Value>, Error> {
        let package = pkg.package;
        let name = package.name().to_owned();
        let mut extra = Vec::new();
        for ns in &package.metadata.need_namespace {
            if ns != &options.namespace {
                extra.push(normalize::namespace_component(ns));
            }
        }
        let mut yaml_objects = Vec::new();
        for file in &package.resource_yamls {
            for doc in Self::yaml_documents(pkg, file, warnings)? {
                Self::check_object(pkg, &file.path, &doc)?;
                yaml_objects.push(doc);
            }
        }
        if !yaml_objects.is_empty() {
            extra.push(json!({
                "name": format!("{name}-resources"),
                "type": "k8s-objects",
                "properties": {"objects": yaml_objects},
            }));
        }
        for file in &package.resource_scripts {
            let result = self.eval(pkg, file, &mut scope.clone())?;
            let value = Self::to_json(pkg, file, &result)?;
            let components = match value {
                Value::Null => Vec::new(),
                Value::Array(items) => items,
                other => vec![other],
            };
            for component in components {
                Self::check_component(pkg, &file.path, &component)?;
                extra.push(component);
            }
        }
        extra.extend(
            self.cue_input(package, args)
                .legacy_components(warnings)
                .map_err(|f| Self::cue_error(pkg, f))?,
        );
        Ok(extra)
    }

    /// The UI-schema ConfigMaps and the config-template ConfigMaps.
    pub(super) fn config_maps(pkg: &Pkg<'_>, namespace: &str) -> Result<Vec<Value>, Error> {
        let package = pkg.package;
        let name = package.name().to_owned();
        let mut config_maps = Self::schema_config_maps(pkg, namespace)?;
        for file in &package.config_templates {
            let cm = crate::cue::config_template_from_cue(&file.text, namespace).map_err(|e| {
                Error::Script {
                    addon: name.clone(),
                    file: file.path.clone(),
                    line: e.line,
                    column: e.column,
                    message: e.message,
                }
            })?;
            config_maps.push(cm);
        }
        Ok(config_maps)
    }

    /// The objects of `views/`.
    pub(super) fn views(pkg: &Pkg<'_>) -> Result<Vec<Value>, Error> {
        let package = pkg.package;
        let mut views = Vec::new();
        for file in &package.views {
            let docs = crate::yaml::parse_documents(&file.text).map_err(|e| {
                Self::file_error(pkg, &file.path, format!("invalid YAML: {}", e.message))
            })?;
            for doc in docs.documents {
                Self::check_object(pkg, &file.path, &doc)?;
                views.push(doc);
            }
        }
        Ok(views)
    }

    /// The Secret holding the arguments, when there are any.
    pub(super) fn args_secret(
        pkg: &Pkg<'_>,
        namespace: &str,
        args: &Map<String, Value>,
    ) -> Result<Option<Value>, Error> {
        let name = pkg.package.name().to_owned();
        let args_secret = if args.is_empty() {
            None
        } else {
            let data = serde_json::to_string(&args).map_err(|e| Error::Addon {
                addon: name.clone(),
                message: format!("cannot encode the arguments: {e}"),
            })?;
            Some(json!({
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": normalize::args_secret_name(&name), "namespace": namespace},
                "type": "Opaque",
                "data": {"addonParameterDataKey": base64::engine::general_purpose::STANDARD.encode(data)},
            }))
        };
        Ok(args_secret)
    }

    /// The notes: `NOTES.rhai` / `NOTES.cue` evaluated, if any.
    pub(super) fn notes(
        &self,
        pkg: &Pkg<'_>,
        scope: &Scope<'_>,
        args: &Map<String, Value>,
        upgrade: bool,
    ) -> Result<Option<String>, Error> {
        let package = pkg.package;
        let notes = match &package.notes {
            Some(file) if file.path.ends_with(".cue") => self
                .cue_input(package, args)
                .notes(file, upgrade)
                .map_err(|f| Self::cue_error(pkg, f))?,
            Some(file) => {
                let result = self.eval(pkg, file, &mut scope.clone())?;
                if result.is_unit() {
                    None
                } else if result.is_string() {
                    Some(result.to_string())
                } else {
                    return Err(Self::file_error(
                        pkg,
                        &file.path,
                        format!("must evaluate to a string, found {}", result.type_name()),
                    ));
                }
            }
            None => None,
        };
        Ok(notes)
    }
}

impl Renderer {
    /// The documents of a YAML file of the package; its parser's warnings go to `warnings`,
    /// naming the file.
    fn yaml_documents(
        pkg: &Pkg<'_>,
        file: &crate::model::SourceFile,
        warnings: &mut Vec<String>,
    ) -> Result<Vec<Value>, Error> {
        let docs = crate::yaml::parse_documents(&file.text).map_err(|e| {
            Self::file_error(pkg, &file.path, format!("invalid YAML: {}", e.message))
        })?;
        warnings.extend(
            docs.warnings
                .iter()
                .map(|w| format!("`{}`: {w}", file.path)),
        );
        Ok(docs.documents)
    }
}
