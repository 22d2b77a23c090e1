//! A native, sandboxed evaluator for the subset of CUE that KubeVela addons use.
//!
//! The pipeline is [`lexer`] (tokens with CUE's automatic comma insertion) → [`parser`]
//! (a syntax tree) → `eval` (order-independent unification of conjuncts, lazily and with
//! cycle detection) → [`Instance::export`] (concrete JSON). [`parameter_schema`] lowers the
//! `parameter` field of a `parameter.cue` file to JSON Schema.
//!
//! Everything here is pure: no I/O, no clock except the deadline check of [`Limits`], no
//! cluster. All input is untrusted: every failure is an [`Error`] naming the path, the values
//! and the positions involved; nothing panics, and steps, depth, size and time are bounded.

mod ast;
mod builtins;
mod error;
mod eval;
pub(crate) mod lexer;
mod parser;
mod schema;
mod structural;
mod value;
mod yaml;

#[cfg(test)]
mod tests;

pub use error::{Error, ErrorKind, Position};
pub use structural::{config_template_from_cue, definition_from_cue, CueError};

use std::sync::Mutex;
use std::time::Duration;

/// One CUE file of a package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// The name shown in errors: `template.cue`, `resources/a.cue`.
    pub name: String,
    /// The file's text.
    pub text: String,
}

impl Source {
    /// A source from its name and text.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        Source {
            name: name.into(),
            text: text.into(),
        }
    }
}

/// Bounds on one evaluation, as the Rhai sandbox has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Evaluation steps (each expression evaluated, each field unified counts one).
    pub max_steps: u64,
    /// Nesting depth of the syntax tree and of the evaluation.
    pub max_depth: usize,
    /// Size of an exported value, in bytes of compact JSON (approximately).
    pub max_bytes: usize,
    /// Wall-clock time for one evaluation or export.
    pub timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_steps: 10_000_000,
            max_depth: 256,
            max_bytes: 16 * 1024 * 1024,
            timeout: Duration::from_secs(5),
        }
    }
}

/// The `package x` clause of one file, without evaluating it.
pub fn package_clause(source: &Source) -> Result<Option<String>, Error> {
    parser::parse_package(&source.text)
        .map_err(|e| eval::name_positions(e, std::slice::from_ref(&source.name)))
}

/// The packages an addon's CUE may import.
const PACKAGES: [&str; 7] = [
    "strings",
    "strconv",
    "list",
    "math",
    "encoding/json",
    "encoding/yaml",
    "encoding/base64",
];

/// Evaluate the files of one package, unified at the root.
///
/// Syntax errors, unsupported constructs and imports, and sandbox limits are reported here;
/// conflicts and incomplete values are reported by [`Instance::export`] for the path asked.
pub fn evaluate(sources: &[Source], limits: &Limits) -> Result<Instance, Error> {
    evaluate_files(sources, limits, false)
}

/// [`evaluate`], every file counted as a file of `package main` whether it says so or not, as
/// KubeVela builds an addon's `template.cue` (it prepends `package main` to a file without a
/// package clause): an unused import is then an error in every file.
pub fn evaluate_main(sources: &[Source], limits: &Limits) -> Result<Instance, Error> {
    evaluate_files(sources, limits, true)
}

fn evaluate_files(sources: &[Source], limits: &Limits, all_main: bool) -> Result<Instance, Error> {
    let names: Vec<String> = sources.iter().map(|s| s.name.clone()).collect();
    let evaluator = on_big_stack(|| {
        let mut files = Vec::with_capacity(sources.len());
        let mut package: Option<(String, usize)> = None;
        for (i, source) in sources.iter().enumerate() {
            let index = u32::try_from(i).unwrap_or(u32::MAX);
            let file = parser::parse_file(&source.text, index, limits.max_depth)
                .map_err(|e| eval::name_positions(e, &names))?;
            check_imports(&file, &source.name)?;
            // CUE resolves the imports of a file of a package (not of an anonymous one) and
            // refuses one that is never used.
            if all_main || file.package.is_some() {
                check_imports_used(&file, &source.name)?;
            }
            if let (Some(name), Some((first, at))) = (&file.package, &package) {
                if name != first {
                    return Err(Error::new(
                        ErrorKind::Other,
                        format!(
                            "{} declares package {name} but {} declares package {first}: files of one \
                             package must agree",
                            source.name,
                            names.get(*at).map_or("", String::as_str)
                        ),
                    ));
                }
            }
            if package.is_none() {
                package = file.package.clone().map(|p| (p, i));
            }
            files.push(file);
        }
        let mut ev = eval::Evaluator::new(&files, names.clone(), limits, builtins::LIBRARY);
        ev.expand(eval::ROOT);
        if let Some(e) = ev.fatal.take() {
            return Err(e);
        }
        Ok(ev)
    })?;
    Ok(Instance {
        evaluator: Mutex::new(evaluator),
    })
}

fn check_imports(file: &ast::File, name: &str) -> Result<(), Error> {
    for import in &file.imports {
        if !PACKAGES.contains(&import.path.as_str()) {
            let (kind, what) = if builtins::OTHER_STDLIB.contains(&import.path.as_str()) {
                (ErrorKind::Unsupported, "is not supported")
            } else {
                (ErrorKind::Other, "is not a CUE standard-library package")
            };
            return Err(Error::new(
                kind,
                format!(
                    "import of package \"{}\" {what} (addonctl evaluates: {})",
                    import.path,
                    PACKAGES.join(", ")
                ),
            )
            .at(Position {
                file: name.to_string(),
                line: import.pos.line,
                column: import.pos.column,
            }));
        }
    }
    Ok(())
}

/// The first import of `file` that no identifier of the file refers to, as CUE reports it:
/// `imported and not used: "strings"` (`… as s` for an import with its own name).
fn check_imports_used(file: &ast::File, name: &str) -> Result<(), Error> {
    if file.imports.is_empty() {
        return Ok(());
    }
    let mut used = std::collections::HashSet::new();
    idents_in_struct(&file.body, &mut used);
    for import in &file.imports {
        if used.contains(import.alias.as_str()) {
            continue;
        }
        let own_name = import.path.rsplit('/').next() != Some(import.alias.as_str());
        let message = if own_name {
            format!(
                "imported and not used: \"{}\" as {}",
                import.path, import.alias
            )
        } else {
            format!("imported and not used: \"{}\"", import.path)
        };
        return Err(Error::new(ErrorKind::Other, message).at(Position {
            file: name.to_string(),
            line: import.pos.line,
            column: import.pos.column,
        }));
    }
    Ok(())
}

/// Every identifier an expression of `body` refers to (labels are not references).
fn idents_in_struct<'a>(body: &'a ast::StructLit, out: &mut std::collections::HashSet<&'a str>) {
    for decl in &body.decls {
        match decl {
            ast::Decl::Field(field) => {
                if let ast::Label::Dynamic(label) = &field.label {
                    idents_in_expr(label, out);
                }
                idents_in_expr(&field.value, out);
            }
            ast::Decl::Pattern { label, value, .. } => {
                idents_in_expr(label, out);
                idents_in_expr(value, out);
            }
            ast::Decl::Embed(expr) | ast::Decl::Let { expr, .. } => idents_in_expr(expr, out),
            ast::Decl::Comprehension(c) => idents_in_comprehension(c, out),
        }
    }
}

fn idents_in_comprehension<'a>(
    comprehension: &'a ast::Comprehension,
    out: &mut std::collections::HashSet<&'a str>,
) {
    for clause in &comprehension.clauses {
        match clause {
            ast::Clause::For { source, .. } => idents_in_expr(source, out),
            ast::Clause::If(expr) | ast::Clause::Let { expr, .. } => idents_in_expr(expr, out),
        }
    }
    idents_in_expr(&comprehension.body, out);
}

fn idents_in_expr<'a>(expr: &'a ast::Expr, out: &mut std::collections::HashSet<&'a str>) {
    use ast::ExprKind as K;
    match &expr.kind {
        K::Ident(name) => {
            out.insert(name.as_str());
        }
        K::Interpolation(parts) => {
            for part in parts {
                if let ast::Part::Expr(e) = part {
                    idents_in_expr(e, out);
                }
            }
        }
        K::Selector(e, _) | K::Unary(_, e) | K::Paren(e) => idents_in_expr(e, out),
        K::Index(a, b) | K::Binary(_, a, b) => {
            idents_in_expr(a, out);
            idents_in_expr(b, out);
        }
        K::Slice(e, low, high) => {
            idents_in_expr(e, out);
            for bound in [low, high].into_iter().flatten() {
                idents_in_expr(bound, out);
            }
        }
        K::Call(f, args) => {
            idents_in_expr(f, out);
            for arg in args {
                idents_in_expr(arg, out);
            }
        }
        K::Struct(body) => idents_in_struct(body, out),
        K::List { elems, rest } => {
            for elem in elems {
                match elem {
                    ast::Elem::Expr(e) => idents_in_expr(e, out),
                    ast::Elem::Comprehension(c) => idents_in_comprehension(c, out),
                }
            }
            if let Some(Some(rest)) = rest {
                idents_in_expr(rest, out);
            }
        }
        K::Null
        | K::Bool(_)
        | K::Int(_)
        | K::Float(..)
        | K::Str(_)
        | K::Bytes(_)
        | K::Top
        | K::Bottom
        | K::Value(_) => {}
    }
}

/// The stack the evaluator runs on: deep (but bounded) recursion never overflows it.
const STACK_SIZE: usize = 256 * 1024 * 1024;

/// Run `f` on a thread with a large stack; a panic becomes an error.
fn on_big_stack<T: Send>(f: impl FnOnce() -> Result<T, Error> + Send) -> Result<T, Error> {
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name("cue-eval".into())
            .stack_size(STACK_SIZE)
            .spawn_scoped(scope, f)
            .map_err(|e| {
                Error::new(
                    ErrorKind::Other,
                    format!("cannot start the CUE evaluator: {e}"),
                )
            })?;
        handle.join().unwrap_or_else(|_| {
            Err(Error::new(
                ErrorKind::Other,
                "internal error in the CUE evaluator (please report this input)",
            ))
        })
    })
}

/// An evaluated package.
pub struct Instance {
    evaluator: Mutex<eval::Evaluator>,
}

impl std::fmt::Debug for Instance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instance").finish_non_exhaustive()
    }
}

impl Instance {
    fn with<T: Send>(
        &self,
        f: impl FnOnce(&mut eval::Evaluator) -> Result<T, Error> + Send,
    ) -> Result<T, Error> {
        let mut guard = self.evaluator.lock().map_err(|_| {
            Error::new(
                ErrorKind::Other,
                "the CUE instance is unusable after an earlier failure",
            )
        })?;
        let ev: &mut eval::Evaluator = &mut guard;
        on_big_stack(move || {
            ev.reset_budget();
            f(ev)
        })
    }

    /// Concrete JSON of the value at a path of regular field names (`["output"]`).
    ///
    /// Numbers are those KubeVela sends to Kubernetes: a float that is a whole number up to 2^53
    /// is an integer (`4 / 2` is `2`, where `cue export` prints `2.0`); other floats keep their
    /// value.
    ///
    /// `Ok(None)` when the field is absent; an error when it is not concrete or conflicts (the
    /// message names the path).
    pub fn export(&self, path: &[&str]) -> Result<Option<serde_json::Value>, Error> {
        self.with(|ev| match ev.lookup(path) {
            Some(at) => ev.export_vertex(at).map(Some),
            None => Ok(None),
        })
    }

    /// What `cue export --out json` prints for the whole instance (hidden fields,
    /// definitions and optional fields left out), numbers as [`Instance::export`] gives them.
    pub fn export_all(&self) -> Result<serde_json::Value, Error> {
        self.with(|ev| ev.export_vertex(eval::ROOT))
    }

    /// Compact JSON text of the value at a path, with the numbers `cue export` prints: floats
    /// keep the digits CUE gives them (`4 / 2` is `2.0`, where [`Instance::export`] gives `2`)
    /// and integers beyond 64 bits keep all their digits (a `serde_json::Value` cannot hold
    /// them: [`Instance::export`] reports them as an error).
    pub fn export_text(&self, path: &[&str]) -> Result<Option<String>, Error> {
        self.with(|ev| match ev.lookup(path) {
            Some(at) => ev.export_text(at).map(Some),
            None => Ok(None),
        })
    }

    /// [`Instance::export_all`] as compact JSON text, integers of any size exact.
    pub fn export_all_text(&self) -> Result<String, Error> {
        self.with(|ev| ev.export_text(eval::ROOT))
    }
}

/// JSON Schema (draft 2020-12) of the `parameter` field of a `parameter.cue` file; `others` are
/// the other files of its package (where a definition it refers to may be declared).
pub fn parameter_schema(
    source: &Source,
    others: &[Source],
    limits: &Limits,
) -> Result<serde_json::Value, Error> {
    schema::parameter_schema(source, others, limits)
}
