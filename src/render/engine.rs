//! The one sandboxed Rhai engine every addon script runs in (DESIGN §2.5).
//!
//! Guarantees:
//! - built from [`Engine::new_raw`] plus only the language, arithmetic, logic, math, string,
//!   array and map packages: there is no file, network, environment or clock access, and `eval`
//!   is disabled;
//! - every limit is set ([`Limits`]): operations, a wall-clock deadline (checked from
//!   `on_progress` against a per-thread deadline set around each evaluation), string, array and
//!   map sizes, call levels, expression depth and the number of modules; strict variables;
//! - `import "name"` resolves only to the calling addon's own `lib/name.rhai` ([`LibResolver`]);
//!   the AST's source string carries the package key so one shared engine serves every addon;
//! - `print` and `debug` go to the log at `info`/`debug`, inside the caller's span (addon, file),
//!   with the render's secret parameter values masked ([`with_secrets`]).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use rhai::packages::{
    BasicArrayPackage, BasicMapPackage, BasicMathPackage, CorePackage, LogicPackage,
    MoreStringPackage, Package,
};
use rhai::{Dynamic, Engine, EvalAltResult, Module, ModuleResolver, Position, Scope};

/// Resource limits of the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Operations one evaluation may perform.
    pub max_operations: u64,
    /// Wall-clock time one evaluation may take.
    pub deadline: Duration,
    /// Bytes in one string.
    pub max_string_size: usize,
    /// Elements in one array.
    pub max_array_size: usize,
    /// Entries in one map.
    pub max_map_size: usize,
    /// Nested function calls.
    pub max_call_levels: usize,
    /// Expression nesting depth (global, inside functions).
    pub max_expr_depth: (usize, usize),
    /// Modules one evaluation may import.
    pub max_modules: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_operations: 10_000_000,
            deadline: Duration::from_secs(5),
            max_string_size: 4 * 1024 * 1024,
            // A fleet's clusters reach a script as one list (`clusters`): room for 100,000.
            max_array_size: 100_000,
            max_map_size: 100_000,
            max_call_levels: 64,
            max_expr_depth: (64, 64),
            max_modules: 64,
        }
    }
}

thread_local! {
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
    /// The secret parameter values of the render running on this thread, masked in `print`
    /// and `debug` output.
    static SECRETS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` with `secrets` masked in what scripts evaluated on this thread meanwhile log.
pub(crate) fn with_secrets<T>(secrets: &[String], f: impl FnOnce() -> T) -> T {
    let previous = SECRETS.with(|s| s.replace(secrets.to_vec()));
    let out = f();
    SECRETS.with(|s| *s.borrow_mut() = previous);
    out
}

/// `text` with the current render's secret values masked.
fn masked(text: &str) -> String {
    SECRETS.with(|s| super::mask_message(text, &s.borrow()))
}

/// The value `on_progress` terminates a script with when its deadline passes.
pub(crate) const DEADLINE_TOKEN: &str = "addonctl:deadline";

/// Runs `f` with a wall-clock deadline for every script evaluated on this thread meanwhile.
/// Nested calls keep the earliest deadline.
pub(crate) fn with_deadline<T>(limit: Duration, f: impl FnOnce() -> T) -> T {
    let previous = DEADLINE.with(Cell::get);
    let mine = Instant::now() + limit;
    let effective = previous.map_or(mine, |p| p.min(mine));
    DEADLINE.with(|d| d.set(Some(effective)));
    let out = f();
    DEADLINE.with(|d| d.set(previous));
    out
}

/// Builds the engine. Called once per [`super::Renderer`].
pub(crate) fn build(limits: &Limits, resolver: Arc<LibResolver>) -> Engine {
    let mut engine = Engine::new_raw();
    engine.register_global_module(CorePackage::new().as_shared_module());
    engine.register_global_module(LogicPackage::new().as_shared_module());
    engine.register_global_module(BasicMathPackage::new().as_shared_module());
    engine.register_global_module(MoreStringPackage::new().as_shared_module());
    engine.register_global_module(BasicArrayPackage::new().as_shared_module());
    engine.register_global_module(BasicMapPackage::new().as_shared_module());

    engine
        .set_max_operations(limits.max_operations)
        .set_max_string_size(limits.max_string_size)
        .set_max_array_size(limits.max_array_size)
        .set_max_map_size(limits.max_map_size)
        .set_max_call_levels(limits.max_call_levels)
        .set_max_expr_depths(limits.max_expr_depth.0, limits.max_expr_depth.1)
        .set_max_modules(limits.max_modules)
        .set_strict_variables(true);
    engine.disable_symbol("eval");

    // Checked every 16 operations: one operation may clone a large array or string, so a
    // sparser check lets a clone-heavy script run well past its deadline.
    engine.on_progress(|operations| {
        if operations % 16 != 0 {
            return None;
        }
        let deadline = DEADLINE.with(Cell::get)?;
        (Instant::now() >= deadline).then(|| Dynamic::from(DEADLINE_TOKEN))
    });
    engine.on_print(|text| tracing::info!(target: "addonctl::script", "{}", masked(text)));
    engine.on_debug(|text, _source, position| {
        tracing::debug!(target: "addonctl::script", line = position.line(), "{}", masked(text));
    });
    engine.set_module_resolver(SharedResolver(resolver));

    super::functions::register(&mut engine);
    crate::params::register(&mut engine);
    engine
}

/// Separates the package key from the file path in an AST's source string.
pub(crate) const SOURCE_SEPARATOR: char = '|';

/// The `lib/` modules of one package.
#[derive(Debug, Default)]
struct PackageLib {
    files: BTreeMap<String, Arc<str>>,
    modules: Mutex<HashMap<String, Arc<Module>>>,
    loading: Mutex<HashSet<String>>,
}

/// Resolves `import` to the importing addon's own `lib/` and nothing else.
#[derive(Debug, Default)]
pub(crate) struct LibResolver {
    packages: RwLock<HashMap<String, Arc<PackageLib>>>,
}

impl LibResolver {
    /// Registers a package's `lib/` files (module name → text) under its key, once.
    pub(crate) fn register(&self, key: &str, files: impl FnOnce() -> BTreeMap<String, Arc<str>>) {
        let known = self
            .packages
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(key);
        if !known {
            let lib = Arc::new(PackageLib {
                files: files(),
                ..PackageLib::default()
            });
            self.packages
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(key.to_owned())
                .or_insert(lib);
        }
    }
}

struct SharedResolver(Arc<LibResolver>);

impl ModuleResolver for SharedResolver {
    fn resolve(
        &self,
        engine: &Engine,
        source: Option<&str>,
        path: &str,
        pos: Position,
    ) -> Result<Arc<Module>, Box<EvalAltResult>> {
        // Not `ErrorModuleNotFound`: Rhai replaces that one with a bare "not found".
        let not_found = |why: String| -> Box<EvalAltResult> {
            Box::new(EvalAltResult::ErrorRuntime(
                format!("cannot import {why}").into(),
                pos,
            ))
        };
        let key = source
            .and_then(|s| s.split_once(SOURCE_SEPARATOR))
            .map(|(k, _)| k)
            .ok_or_else(|| {
                not_found(format!(
                    "`{path}`: imports are only allowed from addon scripts"
                ))
            })?;
        let lib = self
            .0
            .packages
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .cloned()
            .ok_or_else(|| not_found(format!("`{path}`: the addon has no `lib/` modules")))?;
        let name = path.strip_suffix(".rhai").unwrap_or(path);
        let name = name.strip_prefix("lib/").unwrap_or(name);
        let valid = !name.is_empty()
            && name.split('/').all(|s| {
                !s.is_empty() && s != "." && s != ".." && !s.contains('\\') && !s.contains(':')
            });
        let Some(text) = lib.files.get(name).filter(|_| valid) else {
            let known: Vec<String> = lib.files.keys().map(|k| format!("`{k}`")).collect();
            return Err(not_found(format!(
                "`{path}`: only the addon's own `lib/*.rhai` modules can be imported (available: {})",
                if known.is_empty() { "none".to_owned() } else { known.join(", ") }
            )));
        };
        if let Some(module) = lib
            .modules
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
        {
            return Ok(module.clone());
        }
        if !lib
            .loading
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.to_owned())
        {
            return Err(not_found(format!("`{path}`: circular import")));
        }
        let result = (|| {
            let mut ast = engine.compile(text.as_ref()).map_err(|e| {
                Box::new(EvalAltResult::ErrorInModule(
                    format!("lib/{name}.rhai"),
                    Box::new(EvalAltResult::ErrorParsing(*e.0, e.1)),
                    pos,
                ))
            })?;
            ast.set_source(format!("{key}{SOURCE_SEPARATOR}lib/{name}.rhai"));
            Module::eval_ast_as_new(Scope::new(), &ast, engine).map(Arc::new)
        })();
        lib.loading
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(name);
        let module = result?;
        lib.modules
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.to_owned(), module.clone());
        Ok(module)
    }
}
