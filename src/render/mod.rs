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
//!
//! Files: `options.rs` (what a render takes and gives), `parameters.rs` (the schema in a
//! render's context), `script.rs` (compiling and running one script), `steps.rs` (the steps
//! above), `assemble.rs` (checks, definitions, UI-schema ConfigMaps), `mask.rs` (secrets).

mod assemble;
mod cue_addon;
pub mod engine;
mod functions;
mod mask;
pub mod normalize;
mod options;
pub mod output;
mod parameters;
mod script;
mod steps;

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use rhai::{Dynamic, Scope, AST};
use serde_json::{Map, Value};

use crate::model::{AddonPackage, SourceFile, Template};
use crate::params::{self, ParameterSchema};
pub use engine::Limits;
pub(crate) use mask::mask_message;
use mask::secret_strings;
pub use mask::MASK;
use normalize::Normalisation;
pub use options::{RenderOptions, Rendered};

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

    /// [`Renderer::render`] once the parameter values are known: the template, the components,
    /// normalisation, then the definitions, ConfigMaps, views, argument Secret and notes.
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
        let (mut application, outputs, scripted) =
            self.template(pkg, &scope, &args, &mut warnings)?;
        let extra = self.components(pkg, options, &scope, &args, &mut warnings)?;
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
        let config_maps = Self::config_maps(pkg, &options.namespace)?;
        let views = Self::views(pkg)?;
        let args_secret = Self::args_secret(pkg, &options.namespace, &args)?;
        let notes = self.notes(pkg, &scope, &args, options.upgrade)?;
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
}
