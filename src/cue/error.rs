//! The one error type of the CUE module.

use std::fmt;

/// A position in one of the package's files (`file` indexes the sources).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Pos {
    pub(crate) file: u32,
    pub(crate) line: u32,
    pub(crate) column: u32,
}

/// A place in a CUE file (1-based line and column, in characters).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Position {
    /// The file's name as given in its [`super::Source`].
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column, counted in characters.
    pub column: u32,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// What kind of failure an [`Error`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The text is not CUE.
    Syntax,
    /// Valid CUE beyond the supported subset.
    Unsupported,
    /// Two values that do not unify.
    Conflict,
    /// A value that is not concrete where a concrete one is needed.
    Incomplete,
    /// A sandbox limit (steps, depth, size, time) was reached.
    Limit,
    /// A standard-library function failed.
    Builtin,
    /// Anything else (a cycle, a bad reference, …).
    Other,
}

/// Why CUE could not be evaluated: the path, a message a person can act on, and positions.
///
/// Displayed as `output.spec.replicas: conflicting values 2 and "two" (template.cue:12:14,
/// parameter.cue:4:12)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// What kind of failure this is.
    pub kind: ErrorKind,
    /// The path of the value concerned (`output.spec.components[0].image`), when known.
    pub path: Option<String>,
    /// What is wrong.
    pub message: String,
    /// Where: the positions of the values involved.
    pub positions: Vec<Position>,
}

impl Error {
    /// An error of `kind` without path or position.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            path: None,
            message: message.into(),
            positions: Vec::new(),
        }
    }

    /// An [`ErrorKind::Unsupported`] error.
    pub fn unsupported(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Unsupported, message)
    }

    /// The same error with a position added.
    #[must_use]
    pub fn at(mut self, position: Position) -> Self {
        if !self.positions.contains(&position) {
            self.positions.push(position);
        }
        self
    }

    /// The same error with its path set, unless it already has one.
    #[must_use]
    pub fn with_path(mut self, path: impl Into<String>) -> Self {
        if self.path.is_none() {
            let path = path.into();
            if !path.is_empty() {
                self.path = Some(path);
            }
        }
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(path) = &self.path {
            write!(f, "{path}: ")?;
        }
        f.write_str(&self.message)?;
        if !self.positions.is_empty() {
            let list: Vec<String> = self.positions.iter().map(ToString::to_string).collect();
            write!(f, " ({})", list.join(", "))?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}
