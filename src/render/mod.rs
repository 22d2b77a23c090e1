//! Rendering: an [`AddonPackage`] and its arguments → [`Rendered`], every object `enable` applies.
//!
//! Expected flow of [`Renderer::render`]:
//! 1. (KubeVela's CUE addons: see [`cue_addon`] for what is evaluated with what);
//! 2. parameters: `parameter.rhai` (or `parameter.cue`, or `parameter.schema.json`) →
//!    [`ParameterSchema`];
//!    values = defaults ← stored arguments ← given arguments, validated;
//! 3. `template.rhai` / `template.yaml` / `template.cue` → the Application and auxiliary outputs;
//! 4. components appended in KubeVela's order: `needNamespace` namespaces, `<addon>-resources`
//!    (every `resources/*.yaml`), then `resources/*.rhai` in path order, then the legacy
//!    `resources/*.cue` components; normalisation;
//! 5. definitions (YAML, Rhai, CUE), UI-schema and config-template ConfigMaps, views, the
//!    argument Secret, and the notes.
//!
//! Guarantees: one shared sandboxed engine ([`engine`]), every script compiled once per text and
//! cached, every error names the addon, the file and (for scripts) the line and column.

mod cue_addon;
pub mod engine;
mod functions;
pub mod normalize;
pub mod output;

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};

use base64::Engine as _;
use rhai::{Dynamic, EvalAltResult, Scope, AST};
use serde_json::{json, Map, Value};

use crate::model::{AddonPackage, SourceFile, Template};
use crate::params::{self, ParameterSchema};
pub use engine::Limits;
use normalize::{Normalisation, LABEL_AUXILIARY};

/// How many compiled scripts the cache keeps before it starts over.
const AST_CACHE_CAPACITY: usize = 4096;

/// Rendering failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A script failed to compile or run.
    #[error("addon `{addon}`: `{file}` line {line}, column {column}: {message}")]
    Script {
        /// The addon.
        addon: String,
        /// The file, relative to the addon root.
        file: String,
        /// 1-based line (0 when unknown).
        line: usize,
        /// 1-based column (0 when unknown).
        column: usize,
        /// What went wrong.
        message: String,
    },
    /// A file's content is wrong.
    #[error("addon `{addon}`: `{file}`: {message}")]
    File {
        /// The addon.
        addon: String,
        /// The file, relative to the addon root.
        file: String,
        /// What is wrong.
        message: String,
    },
    /// The addon as a whole cannot be rendered.
    #[error("addon `{addon}`: {message}")]
    Addon {
        /// The addon.
        addon: String,
        /// What is wrong.
        message: String,
    },
    /// The parameters are declared wrongly or the arguments do not match them.
    #[error("addon `{addon}`: {error}")]
    Parameters {
        /// The addon.
        addon: String,
        /// The parameter error.
        error: params::Error,
    },
}

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
            namespace: crate::DEFAULT_SYSTEM_NAMESPACE.to_owned(),
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

/// The placeholder secret values are replaced with.
pub const MASK: &str = "******";

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

    /// The notes with secret parameter values masked.
    pub fn masked_notes(&self) -> Option<String> {
        let secrets = self.secret_values();
        self.notes.as_ref().map(|n| mask_text(n, &secrets))
    }
}

/// Masks the data of every Secret, including Secrets nested in components.
fn mask_secret_objects(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.get("kind").and_then(Value::as_str) == Some("Secret") {
                for key in ["data", "stringData"] {
                    if let Some(Value::Object(data)) = map.get_mut(key) {
                        data.values_mut().for_each(|v| *v = json!(MASK));
                    }
                }
            }
            map.values_mut().for_each(mask_secret_objects);
        }
        Value::Array(items) => items.iter_mut().for_each(mask_secret_objects),
        _ => {}
    }
}

fn collect_secrets(
    schema: &ParameterSchema,
    value: &Value,
    path: &str,
    out: &mut Vec<(String, String)>,
) {
    if !path.is_empty() && schema.is_secret(path) {
        match value {
            Value::String(s) if !s.is_empty() => out.push((path.to_owned(), s.clone())),
            Value::String(_) | Value::Null => {}
            other => out.push((path.to_owned(), other.to_string())),
        }
        return;
    }
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let child = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                collect_secrets(schema, v, &child, out);
            }
        }
        Value::Array(items) => items
            .iter()
            .for_each(|v| collect_secrets(schema, v, path, out)),
        _ => {}
    }
}

/// The secret parameter values of `values` (and their base64 forms), to mask in errors and logs.
fn secret_strings(schema: &ParameterSchema, values: &Value) -> Vec<String> {
    let mut pairs = Vec::new();
    collect_secrets(schema, values, "", &mut pairs);
    let mut found: Vec<String> = pairs.into_iter().map(|(_, value)| value).collect();
    let encoded: Vec<String> = found
        .iter()
        .map(|s| base64::engine::general_purpose::STANDARD.encode(s))
        .collect();
    found.extend(encoded);
    found
}

/// Masks secret values in a message: like [`mask_text`], and a short secret also where it
/// stands quoted (`'abc'`, `"abc"`, `` `abc` ``), as error messages quote values.
pub(crate) fn mask_message(text: &str, secrets: &[String]) -> String {
    let mut out = mask_text(text, secrets);
    for secret in secrets.iter().filter(|s| !s.is_empty() && s.len() < 4) {
        for quote in ['\'', '"', '`'] {
            out = out.replace(
                &format!("{quote}{secret}{quote}"),
                &format!("{quote}{MASK}{quote}"),
            );
        }
    }
    out
}

impl Error {
    /// The error with every secret value masked.
    fn masked(self, secrets: &[String]) -> Self {
        if secrets.is_empty() {
            return self;
        }
        match self {
            Error::Script {
                addon,
                file,
                line,
                column,
                message,
            } => Error::Script {
                addon,
                file,
                line,
                column,
                message: mask_message(&message, secrets),
            },
            Error::File {
                addon,
                file,
                message,
            } => Error::File {
                addon,
                file,
                message: mask_message(&message, secrets),
            },
            Error::Addon { addon, message } => Error::Addon {
                addon,
                message: mask_message(&message, secrets),
            },
            other @ Error::Parameters { .. } => other,
        }
    }
}

/// Replaces secret values inside strings. Values shorter than four characters are only masked
/// where a whole string equals them, so that short secrets do not garble unrelated text.
fn mask_text(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_owned();
    for secret in secrets {
        if out == *secret {
            return MASK.to_owned();
        }
        if secret.len() >= 4 {
            out = out.replace(secret.as_str(), MASK);
        }
    }
    out
}

fn mask_strings(value: &mut Value, secrets: &[String]) {
    if secrets.is_empty() {
        return;
    }
    match value {
        Value::String(s) => *s = mask_text(s, secrets),
        Value::Array(items) => items.iter_mut().for_each(|v| mask_strings(v, secrets)),
        Value::Object(map) => map.values_mut().for_each(|v| mask_strings(v, secrets)),
        _ => {}
    }
}

/// A stable hash of some texts, the key of the compile and schema caches.
fn content_hash(parts: &[&str]) -> u64 {
    let mut hasher = DefaultHasher::new();
    for part in parts {
        part.hash(&mut hasher);
    }
    hasher.finish()
}

/// The message of a file error without its addon/file prefix.
fn inner_message(error: &Error) -> String {
    match error {
        Error::File { message, .. }
        | Error::Addon { message, .. }
        | Error::Script { message, .. } => message.clone(),
        Error::Parameters { error, .. } => error.to_string(),
    }
}

/// `parameter.rhai` declares the parameters, so it cannot read them.
fn is_parameter_file(file: &SourceFile) -> bool {
    file.path == "parameter.rhai"
}

/// Renders addons. Holds the one engine and the caches; cheap to share (`Sync`).
pub struct Renderer {
    engine: rhai::Engine,
    limits: Limits,
    libs: Arc<engine::LibResolver>,
    asts: Mutex<HashMap<u64, Arc<AST>>>,
    schemas: Mutex<HashMap<u64, ParameterSchema>>,
}

impl std::fmt::Debug for Renderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Renderer")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Default for Renderer {
    fn default() -> Self {
        Self::new()
    }
}

/// Per-render identity of a package: its key for the module resolver and its name for errors.
struct Pkg<'a> {
    package: &'a AddonPackage,
    key: String,
}

impl Renderer {
    /// A renderer with the default limits.
    pub fn new() -> Self {
        Self::with_limits(Limits::default())
    }

    /// A renderer with the given limits.
    pub fn with_limits(limits: Limits) -> Self {
        let libs = Arc::new(engine::LibResolver::default());
        Renderer {
            engine: engine::build(&limits, Arc::clone(&libs)),
            limits,
            libs,
            asts: Mutex::new(HashMap::new()),
            schemas: Mutex::new(HashMap::new()),
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    fn pkg<'a>(&self, package: &'a AddonPackage) -> Pkg<'a> {
        let mut hasher = DefaultHasher::new();
        package.registry.hash(&mut hasher);
        for file in package.lib.values() {
            file.path.hash(&mut hasher);
            file.text.hash(&mut hasher);
        }
        let key = format!(
            "{}@{}#{:016x}",
            package.name(),
            package.metadata.version.raw(),
            hasher.finish()
        );
        self.libs.register(&key, || {
            package
                .lib
                .iter()
                .map(|(name, file)| (name.clone(), Arc::clone(&file.text)))
                .collect::<BTreeMap<_, _>>()
        });
        Pkg { package, key }
    }

    fn compile(&self, pkg: &Pkg<'_>, file: &SourceFile) -> Result<Arc<AST>, Error> {
        let key = content_hash(&[&pkg.key, &file.path, &file.text]);
        if let Some(ast) = self
            .asts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
        {
            return Ok(Arc::clone(ast));
        }
        // Strict variables: the constants each script sees must be known at compile time.
        // Plain variables, not constants: the optimiser would inline a constant placeholder.
        let mut scope = Scope::new();
        scope.push("context", ());
        if !is_parameter_file(file) {
            scope.push("parameter", ());
        }
        let mut ast = self
            .engine
            .compile_with_scope(&scope, file.text.as_ref())
            .map_err(|e| Error::Script {
                addon: pkg.package.name().to_owned(),
                file: file.path.clone(),
                line: e.1.line().unwrap_or(0),
                column: e.1.position().unwrap_or(0),
                message: format!("syntax error: {}", e.0),
            })?;
        ast.set_source(format!(
            "{}{}{}",
            pkg.key,
            engine::SOURCE_SEPARATOR,
            file.path
        ));
        let ast = Arc::new(ast);
        let mut cache = self.asts.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.len() >= AST_CACHE_CAPACITY {
            cache.clear();
        }
        cache.insert(key, Arc::clone(&ast));
        Ok(ast)
    }

    fn eval(
        &self,
        pkg: &Pkg<'_>,
        file: &SourceFile,
        scope: &mut Scope<'_>,
    ) -> Result<Dynamic, Error> {
        let ast = self.compile(pkg, file)?;
        let span = tracing::info_span!("script", addon = %pkg.package.name(), file = %file.path);
        let _entered = span.enter();
        engine::with_deadline(self.limits.deadline, || {
            self.engine.eval_ast_with_scope::<Dynamic>(scope, &ast)
        })
        .map_err(|e| self.script_error(pkg, file, *e))
    }

    fn script_error(&self, pkg: &Pkg<'_>, file: &SourceFile, mut error: EvalAltResult) -> Error {
        let position = error.take_position();
        let mut innermost = &error;
        while let EvalAltResult::ErrorInFunctionCall(_, _, inner, _)
        | EvalAltResult::ErrorInModule(_, inner, _) = innermost
        {
            innermost = inner;
        }
        let message = match innermost {
            EvalAltResult::ErrorTerminated(token, _)
                if token.to_string() == engine::DEADLINE_TOKEN =>
            {
                format!(
                    "the script ran longer than the {:?} limit and was stopped (an endless loop?)",
                    self.limits.deadline
                )
            }
            EvalAltResult::ErrorTooManyOperations(_) => format!(
                "the script exceeded the limit of {} operations and was stopped (an endless loop?)",
                self.limits.max_operations
            ),
            EvalAltResult::ErrorDataTooLarge(what, _) => {
                format!("{what} exceeds the sandbox's limit (strings {} bytes, arrays {} items, maps {} entries)",
                    self.limits.max_string_size, self.limits.max_array_size, self.limits.max_map_size)
            }
            EvalAltResult::ErrorStackOverflow(_) => format!(
                "the script nests calls deeper than the limit of {} (unbounded recursion?)",
                self.limits.max_call_levels
            ),
            _ => error
                .to_string()
                .replace(&format!("{}{}", pkg.key, engine::SOURCE_SEPARATOR), ""),
        };
        Error::Script {
            addon: pkg.package.name().to_owned(),
            file: file.path.clone(),
            line: position.line().unwrap_or(0),
            column: position.position().unwrap_or(0),
            message,
        }
    }

    fn file_error(pkg: &Pkg<'_>, file: &str, message: impl Into<String>) -> Error {
        Error::File {
            addon: pkg.package.name().to_owned(),
            file: file.to_owned(),
            message: message.into(),
        }
    }

    fn to_json(pkg: &Pkg<'_>, file: &SourceFile, value: &Dynamic) -> Result<Value, Error> {
        functions::to_json_value(value).map_err(|e| {
            Self::file_error(
                pkg,
                &file.path,
                format!("the result cannot be converted to JSON: {e}"),
            )
        })
    }

    /// The scripts' `context`: as JSON (what the schema cache key includes) and as a Rhai value.
    fn context(
        package: &AddonPackage,
        options: &RenderOptions,
        clusters: &[String],
    ) -> Result<(Value, Dynamic), Error> {
        let context = json!({
            "metadata": package.metadata.raw,
            "installer": {"name": "addonctl", "version": crate::VERSION, "upgrade": options.upgrade},
            "namespace": options.namespace,
            "clusters": clusters,
            "kubernetes": options.kubernetes_version.as_ref().map(|v| json!({"version": v})),
        });
        let dynamic = functions::from_json_value(&context).map_err(|e| Error::Addon {
            addon: package.name().to_owned(),
            message: format!("cannot build the script context: {e}"),
        })?;
        Ok((context, dynamic))
    }

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
    fn arguments(
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

    fn schema_for(
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
            return Ok(ParameterSchema::empty());
        };
        // `parameter.rhai` can read `context`: the same text in another context may declare
        // other parameters.
        let context_text = if file.path.ends_with(".rhai") {
            context_json.to_string()
        } else {
            String::new()
        };
        let key = content_hash(&[&file.path, &file.text, &context_text]);
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
            let json = cue_addon::parameter_schema(file, &self.cue_limits())
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

    /// Compiles every script of a package without running it; returns every failure.
    pub fn compile_all(&self, package: &AddonPackage) -> Vec<Error> {
        let pkg = self.pkg(package);
        package
            .scripts()
            .into_iter()
            .filter_map(|file| self.compile(&pkg, file).err())
            .collect()
    }

    /// Renders a package with the given options.
    pub fn render(
        &self,
        package: &AddonPackage,
        options: &RenderOptions,
    ) -> Result<Rendered, Error> {
        let pkg = self.pkg(package);
        let name = package.name().to_owned();
        // Parameters: the given arguments over the stored ones, one merge for the Secret and
        // the values.
        let arguments = Self::arguments(package, options)?;
        let given_clusters = arguments.clusters().map(<[String]>::to_vec);
        let args = arguments.to_map();
        let clusters = options
            .clusters
            .clone()
            .or_else(|| given_clusters.clone())
            .unwrap_or_default();
        let context = Self::context(package, options, &clusters)?;
        let schema = self.schema_for(&pkg, &context)?;
        let context = context.1;
        let values = schema
            .resolve(&[&args])
            .map_err(|error| Error::Parameters {
                addon: name.clone(),
                error,
            })?;
        // From here on, every error and every script `print` has the secret values masked.
        let secrets = secret_strings(&schema, &values);
        let rendered = engine::with_secrets(&secrets, || {
            self.render_with(
                &pkg,
                options,
                &context,
                args,
                given_clusters,
                values,
                schema,
            )
        });
        rendered.map_err(|e| e.masked(&secrets))
    }

    /// [`Renderer::render`] once the parameter values are known.
    #[allow(clippy::too_many_arguments)]
    fn render_with(
        &self,
        pkg: &Pkg<'_>,
        options: &RenderOptions,
        context: &Dynamic,
        args: Map<String, Value>,
        given_clusters: Option<Vec<String>>,
        values: Value,
        schema: ParameterSchema,
    ) -> Result<Rendered, Error> {
        let package = pkg.package;
        let name = package.name().to_owned();
        let context = context.clone();
        let parameter = functions::from_json_value(&values).map_err(|e| Error::Addon {
            addon: name.clone(),
            message: format!("cannot pass the parameters to scripts: {e}"),
        })?;
        let mut scope = Scope::new();
        scope.push_constant_dynamic("parameter", parameter);
        scope.push_constant_dynamic("context", context);
        let mut warnings = package.warnings.clone();

        // Template.
        let (mut application, outputs, scripted) = match &package.template {
            Some(Template::Rhai(file)) => {
                let result = self.eval(pkg, file, &mut scope.clone())?;
                let (app, outputs) = Self::template_result(pkg, file, &result)?;
                (app, outputs, true)
            }
            Some(Template::Yaml(file)) => {
                let docs = crate::yaml::parse_documents(&file.text).map_err(|e| {
                    Self::file_error(pkg, &file.path, format!("invalid YAML: {}", e.message))
                })?;
                warnings.extend(
                    docs.warnings
                        .iter()
                        .map(|w| format!("`{}`: {w}", file.path)),
                );
                let mut documents = docs.documents;
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
                    .cue_input(package, &args)
                    .template(file)
                    .map_err(|f| Self::cue_error(pkg, f))?;
                let outputs = Self::labelled_outputs(pkg, file, result.outputs)?;
                // Like a Rhai template, a CUE template places the Application itself.
                (result.application, outputs, true)
            }
            None => (Value::Null, Vec::new(), false),
        };

        // Components appended in KubeVela's order.
        let mut extra = Vec::new();
        for ns in &package.metadata.need_namespace {
            if ns != &options.namespace {
                extra.push(normalize::namespace_component(ns));
            }
        }
        let mut yaml_objects = Vec::new();
        for file in &package.resource_yamls {
            let docs = crate::yaml::parse_documents(&file.text).map_err(|e| {
                Self::file_error(pkg, &file.path, format!("invalid YAML: {}", e.message))
            })?;
            warnings.extend(
                docs.warnings
                    .iter()
                    .map(|w| format!("`{}`: {w}", file.path)),
            );
            for doc in docs.documents {
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
            self.cue_input(package, &args)
                .legacy_components(&mut warnings)
                .map_err(|f| Self::cue_error(pkg, f))?,
        );
        normalize::normalise(
            &mut application,
            Normalisation {
                metadata: &package.metadata,
                registry: &package.registry,
                namespace: &options.namespace,
                extra_components: extra,
                scripted_template: scripted,
                clusters: given_clusters.clone(),
            },
        )
        .map_err(|message| match &package.template {
            Some(Template::Rhai(f) | Template::Yaml(f) | Template::Cue(f)) => {
                Self::file_error(pkg, &f.path, message)
            }
            None => Error::Addon {
                addon: name.clone(),
                message,
            },
        })?;

        let definitions = self.definitions(pkg, &mut scope, &options.namespace)?;
        normalize::annotate_definitions(&mut application, &definitions);
        let mut config_maps = Self::schema_config_maps(pkg, &options.namespace)?;
        for file in &package.config_templates {
            let cm = crate::cue::config_template_from_cue(&file.text, &options.namespace).map_err(
                |e| Error::Script {
                    addon: name.clone(),
                    file: file.path.clone(),
                    line: e.line,
                    column: e.column,
                    message: e.message,
                },
            )?;
            config_maps.push(cm);
        }
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
                "metadata": {"name": normalize::args_secret_name(&name), "namespace": options.namespace},
                "type": "Opaque",
                "data": {"addonParameterDataKey": base64::engine::general_purpose::STANDARD.encode(data)},
            }))
        };
        let notes = match &package.notes {
            Some(file) if file.path.ends_with(".cue") => self
                .cue_input(package, &args)
                .notes(file, options.upgrade)
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
        Ok(Rendered {
            name: name.clone(),
            version: package.metadata.version.raw().to_owned(),
            registry: package.registry.clone(),
            namespace: options.namespace.clone(),
            application,
            outputs,
            definitions,
            config_maps,
            views,
            args_secret,
            notes,
            args,
            clusters: given_clusters,
            values,
            schema,
            warnings,
        })
    }

    fn template_result(
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
    fn labelled_outputs(
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

    /// The CUE evaluator's limits: `--script-max-operations` steps and `--script-timeout`.
    fn cue_limits(&self) -> crate::cue::Limits {
        crate::cue::Limits {
            max_steps: self.limits.max_operations,
            timeout: self.limits.deadline,
            ..crate::cue::Limits::default()
        }
    }

    fn cue_input<'a>(
        &self,
        package: &'a AddonPackage,
        args: &'a Map<String, Value>,
    ) -> cue_addon::CueInput<'a> {
        cue_addon::CueInput {
            package,
            args,
            limits: self.cue_limits(),
        }
    }

    fn cue_error(pkg: &Pkg<'_>, failure: cue_addon::Failure) -> Error {
        Error::Script {
            addon: pkg.package.name().to_owned(),
            file: failure.file,
            line: failure.line,
            column: failure.column,
            message: failure.message,
        }
    }

    /// A Kubernetes object must be a mapping with `apiVersion`, `kind` and `metadata.name`.
    fn check_object(pkg: &Pkg<'_>, file: &str, object: &Value) -> Result<(), Error> {
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

    fn check_component(pkg: &Pkg<'_>, file: &str, component: &Value) -> Result<(), Error> {
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

    fn definitions(
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

    fn schema_config_maps(pkg: &Pkg<'_>, namespace: &str) -> Result<Vec<Value>, Error> {
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
