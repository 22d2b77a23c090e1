//! The parameter schema of a package in a render's context (cached), and the one merge of the
//! given and stored arguments.

use std::sync::PoisonError;

use rhai::{Dynamic, Scope};
use serde_json::{Map, Value};

use super::{content_hash, cue_addon, Error, Pkg, RenderOptions, Renderer};
use crate::model::AddonPackage;
use crate::params::{self, ParameterSchema};

impl Renderer {
    /// The parameter schema of a package, as `parameter.rhai` declares it without a cluster or an
    /// installed addon in view (cached per parameter file and script context).
    pub fn parameter_schema(&self, package: &AddonPackage) -> Result<ParameterSchema, Error> {
        self.parameter_schema_in(package, &RenderOptions::default())
    }

    /// The parameter schema of a package in the context a render with `options` gives
    /// `parameter.rhai` (namespace, upgrade, Kubernetes version, the clusters of
    /// `options.clusters` or of the arguments).
    pub fn parameter_schema_in(
        &self,
        package: &AddonPackage,
        options: &RenderOptions,
    ) -> Result<ParameterSchema, Error> {
        let pkg = self.pkg(package);
        let arguments = Self::arguments(package, options)?;
        let clusters = options
            .clusters
            .as_deref()
            .or(arguments.clusters())
            .unwrap_or_default();
        let context = Self::context(package, options, clusters)?;
        self.schema_for(&pkg, &context)
    }

    /// The given arguments over the stored ones: the one merge ([`params::Arguments::over`]).
    pub(super) fn arguments(
        package: &AddonPackage,
        options: &RenderOptions,
    ) -> Result<params::Arguments, Error> {
        let typed = |map: &Map<String, Value>| {
            params::Arguments::from_map(map.clone()).map_err(|e| Error::Addon {
                addon: package.name().to_owned(),
                message: e.to_string(),
            })
        };
        Ok(typed(&options.args)?.over(&typed(&options.stored_args)?))
    }

    pub(super) fn schema_for(
        &self,
        pkg: &Pkg<'_>,
        (context_json, context): &(Value, Dynamic),
    ) -> Result<ParameterSchema, Error> {
        let package = pkg.package;
        let params_error = |error| Error::Parameters {
            addon: package.name().to_owned(),
            error,
        };
        let Some(file) = package
            .parameter
            .as_ref()
            .or(package.parameter_cue.as_ref())
            .or(package.parameter_schema.as_ref())
        else {
            return ParameterSchema::empty().map_err(params_error);
        };
        // `parameter.rhai` can read `context`: the same text in another context may declare
        // other parameters.
        let context_text = if file.path.ends_with(".rhai") {
            context_json.to_string()
        } else {
            String::new()
        };
        // A CUE parameter file may refer to definitions of the other files of its package.
        let others = if file.path.ends_with(".cue") {
            cue_addon::package_files(package)
        } else {
            Vec::new()
        };
        let mut hashed: Vec<&str> = vec![&file.path, &file.text, &context_text];
        for other in &others {
            hashed.push(&other.path);
            hashed.push(&other.text);
        }
        let key = content_hash(&hashed);
        if let Some(schema) = self
            .schemas
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
        {
            return Ok(schema.clone());
        }
        let schema = if file.path.ends_with(".rhai") {
            let mut scope = Scope::new();
            scope.push_constant_dynamic("context", context.clone());
            let value = self.eval(pkg, file, &mut scope)?;
            ParameterSchema::from_rhai(value).map_err(params_error)?
        } else if file.path.ends_with(".cue") {
            let json = cue_addon::parameter_schema(file, &others, &self.cue_limits())
                .map_err(|f| Self::cue_error(pkg, f))?;
            ParameterSchema::from_json_schema(json).map_err(params_error)?
        } else {
            let json: Value = serde_json::from_str(&file.text)
                .map_err(|e| Self::file_error(pkg, &file.path, format!("invalid JSON: {e}")))?;
            ParameterSchema::from_json_schema(json).map_err(params_error)?
        };
        self.schemas
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, schema.clone());
        Ok(schema)
    }
}
