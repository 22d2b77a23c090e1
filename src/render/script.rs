//! Running one script: compiling (cached), evaluating within the limits, errors with the
//! line and column, the scripts' `context`, and the CUE evaluator's input and errors.

use std::sync::{Arc, PoisonError};

use rhai::{Dynamic, EvalAltResult, Scope, AST};
use serde_json::{json, Map, Value};

use super::{
    content_hash, cue_addon, engine, functions, is_parameter_file, Error, Pkg, RenderOptions,
    Renderer, AST_CACHE_CAPACITY,
};
use crate::constants::VERSION;
use crate::model::{AddonPackage, SourceFile};

impl Renderer {
    pub(super) fn compile(&self, pkg: &Pkg<'_>, file: &SourceFile) -> Result<Arc<AST>, Error> {
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

    pub(super) fn eval(
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

    pub(super) fn script_error(
        &self,
        pkg: &Pkg<'_>,
        file: &SourceFile,
        mut error: EvalAltResult,
    ) -> Error {
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

    pub(super) fn file_error(pkg: &Pkg<'_>, file: &str, message: impl Into<String>) -> Error {
        Error::File {
            addon: pkg.package.name().to_owned(),
            file: file.to_owned(),
            message: message.into(),
        }
    }

    pub(super) fn to_json(
        pkg: &Pkg<'_>,
        file: &SourceFile,
        value: &Dynamic,
    ) -> Result<Value, Error> {
        functions::to_json_value(value).map_err(|e| {
            Self::file_error(
                pkg,
                &file.path,
                format!("the result cannot be converted to JSON: {e}"),
            )
        })
    }

    /// The scripts' `context`: as JSON (what the schema cache key includes) and as a Rhai value.
    pub(super) fn context(
        package: &AddonPackage,
        options: &RenderOptions,
        clusters: &[String],
    ) -> Result<(Value, Dynamic), Error> {
        let context = json!({
            "metadata": package.metadata.raw,
            "installer": {"name": "addonctl", "version": VERSION, "upgrade": options.upgrade},
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

    /// The CUE evaluator's limits: `--script-max-operations` steps and `--script-timeout`.
    pub(super) fn cue_limits(&self) -> crate::cue::Limits {
        crate::cue::Limits {
            max_steps: self.limits.max_operations,
            timeout: self.limits.deadline,
            ..crate::cue::Limits::default()
        }
    }

    pub(super) fn cue_input<'a>(
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

    pub(super) fn cue_error(pkg: &Pkg<'_>, failure: cue_addon::Failure) -> Error {
        Error::Script {
            addon: pkg.package.name().to_owned(),
            file: failure.file,
            line: failure.line,
            column: failure.column,
            message: failure.message,
        }
    }
}
