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

#[allow(dead_code)]
mod ast;
mod error;
pub(crate) mod lexer;
#[allow(dead_code)]
mod parser;

pub use error::{Error, ErrorKind, Position};

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
    let _ = source;
    Err(Error::unsupported(
        "package clauses are not implemented yet",
    ))
}

/// Evaluate the files of one package, unified at the root.
pub fn evaluate(sources: &[Source], limits: &Limits) -> Result<Instance, Error> {
    let _ = (sources, limits);
    Err(Error::unsupported(
        "the CUE evaluator is not implemented yet",
    ))
}

/// An evaluated package.
#[derive(Debug)]
pub struct Instance {
    _private: (),
}

impl Instance {
    /// Concrete JSON of the value at a path of regular field names (`["output"]`).
    ///
    /// `Ok(None)` when the field is absent; an error when it is not concrete or conflicts (the
    /// message names the path).
    pub fn export(&self, path: &[&str]) -> Result<Option<serde_json::Value>, Error> {
        let _ = path;
        Err(Error::unsupported("export is not implemented yet"))
    }

    /// What `cue export --out json` prints for the whole instance (hidden fields,
    /// definitions and optional fields left out).
    pub fn export_all(&self) -> Result<serde_json::Value, Error> {
        Err(Error::unsupported("export is not implemented yet"))
    }
}

/// JSON Schema (draft 2020-12) of the `parameter` field of a `parameter.cue` file.
pub fn parameter_schema(source: &Source, limits: &Limits) -> Result<serde_json::Value, Error> {
    let _ = (source, limits);
    Err(Error::unsupported(
        "parameter schemas are not implemented yet",
    ))
}
