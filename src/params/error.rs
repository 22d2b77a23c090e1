//! Errors of the parameters module: declaration problems, malformed arguments, unknown parameters and
//! validation violations, each worded for the person who has to fix them.

use std::fmt;

/// Result of the parameters module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

pub use crate::model::secret::MASK;

/// Everything that can go wrong while declaring, parsing or validating parameters.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `parameter.rhai` did not evaluate to a map from parameter name to type.
    #[error(
        "`parameter.rhai` must evaluate to a map of parameter types such as `#{{ replicas: pint(1) }}`, got {found}"
    )]
    NotAMap {
        /// What the script evaluated to (a type name).
        found: String,
    },

    /// A parameter declaration is wrong (a refinement that does not apply, a default that breaks
    /// the declaration, a bad regular expression, ...).
    #[error("invalid declaration of parameter `{path}`: {message}")]
    Declaration {
        /// Dotted path of the parameter (`resources.cpu`; `hosts[*]` for list items, `labels.*` for map values).
        path: String,
        /// What is wrong.
        message: String,
    },

    /// A `parameter.schema.json` (or the schema built from `parameter.rhai`) cannot be used.
    #[error("invalid parameter schema: {message}")]
    Schema {
        /// What is wrong.
        message: String,
    },

    /// One or more `key=value` arguments could not be parsed.
    #[error("{}", display_lines(.0, "invalid argument", "invalid arguments"))]
    InvalidArguments(Vec<InvalidArgument>),

    /// Arguments name parameters (or fields of a declared object) that do not exist.
    #[error("{}", display_unknown(.0))]
    UnknownParameters(Vec<UnknownParameter>),

    /// A values file or a `--set-file` file could not be read.
    #[error("{what} `{path}`: {message}")]
    File {
        /// What the file is for (`values file`, `--set-file key`).
        what: String,
        /// The path as given.
        path: String,
        /// Why it could not be read.
        message: String,
    },

    /// A values file (`-f`) is not YAML, or not a mapping.
    #[error("values file `{path}` {message}")]
    ValuesFile {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        message: String,
    },

    /// A `--set-file key=path` is malformed.
    #[error("`--set-file {spec}`: {message}")]
    SetFile {
        /// The argument as given.
        spec: String,
        /// What is wrong with it.
        message: String,
    },

    /// The `clusters` argument is not a list of cluster names.
    #[error("the `clusters` argument must be a list of cluster names")]
    Clusters,

    /// The effective values break the declarations; every violation found is listed.
    #[error("{}", display_lines(.0, "invalid parameter", "invalid parameters"))]
    Invalid(Vec<Violation>),
}

/// One `key=value` argument that could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidArgument {
    /// The argument as given, its value masked when the parameter is a secret.
    pub argument: String,
    /// What is wrong with it.
    pub message: String,
}

impl fmt::Display for InvalidArgument {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.argument, self.message)
    }
}

/// A parameter path that no declaration matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownParameter {
    /// Dotted path of the unknown parameter.
    pub path: String,
    /// Dotted paths of the parameters known at that level, in declaration order.
    pub known: Vec<String>,
}

impl fmt::Display for UnknownParameter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown parameter `{}`; known parameters: {}",
            self.path,
            backticked(&self.known)
        )
    }
}

/// One broken rule: where, which rule, and the offending value (masked for secrets).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Dotted path of the parameter (`resources.cpu`, `hosts[2]`).
    pub path: String,
    /// The rule, worded as a requirement (`must be >= 1`, `expected integer`).
    pub rule: String,
    /// The offending value as compact JSON, or [`MASK`] for a secret; `None` when there is no value
    /// (a missing required parameter).
    pub value: Option<String>,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() {
            "<root>"
        } else {
            &self.path
        };
        write!(f, "`{path}`: {}", self.rule)?;
        if let Some(value) = &self.value {
            write!(f, ", got {value}")?;
        }
        Ok(())
    }
}

/// Formats values as `` `a`, `b`, `c` ``.
pub(crate) fn backticked<S: AsRef<str>>(items: &[S]) -> String {
    if items.is_empty() {
        return "none".to_owned();
    }
    items
        .iter()
        .map(|item| format!("`{}`", item.as_ref()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn display_lines<T: fmt::Display>(items: &[T], one: &str, many: &str) -> String {
    if let [single] = items {
        return format!("{one} {single}");
    }
    let mut out = format!("{} {many}:", items.len());
    for item in items {
        out.push_str("\n  ");
        out.push_str(&item.to_string());
    }
    out
}

fn display_unknown(unknown: &[UnknownParameter]) -> String {
    // Group the unknown paths that share one list of known parameters (same level).
    let mut groups: Vec<(&[String], Vec<&str>)> = Vec::new();
    for item in unknown {
        match groups
            .iter_mut()
            .find(|(known, _)| *known == item.known.as_slice())
        {
            Some((_, paths)) => paths.push(&item.path),
            None => groups.push((&item.known, vec![&item.path])),
        }
    }
    groups
        .iter()
        .map(|(known, paths)| {
            let noun = if paths.len() == 1 {
                "parameter"
            } else {
                "parameters"
            };
            format!(
                "unknown {noun} {}; known parameters: {}",
                backticked(paths),
                backticked(known)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn violations_display_path_rule_and_value() {
        let table = [
            (
                Violation {
                    path: "a.b".into(),
                    rule: "must be >= 1".into(),
                    value: Some("0".into()),
                },
                "`a.b`: must be >= 1, got 0",
            ),
            (
                Violation {
                    path: "a".into(),
                    rule: "missing required parameter".into(),
                    value: None,
                },
                "`a`: missing required parameter",
            ),
            (
                Violation {
                    path: String::new(),
                    rule: "expected object".into(),
                    value: Some("3".into()),
                },
                "`<root>`: expected object, got 3",
            ),
        ];
        for (violation, expected) in table {
            assert_eq!(violation.to_string(), expected);
        }
    }

    #[test]
    fn errors_are_send_sync_and_static_for_aggregation() {
        fn assert_error<E: std::error::Error + Send + Sync + 'static>() {}
        assert_error::<Error>();
    }

    #[test]
    fn unknown_parameters_are_grouped_by_level() {
        let known = vec!["a".to_owned(), "clusters".to_owned()];
        let error = Error::UnknownParameters(vec![
            UnknownParameter {
                path: "x".into(),
                known: known.clone(),
            },
            UnknownParameter {
                path: "y".into(),
                known,
            },
            UnknownParameter {
                path: "o.z".into(),
                known: Vec::new(),
            },
        ]);
        assert_eq!(
            error.to_string(),
            "unknown parameters `x`, `y`; known parameters: `a`, `clusters`\nunknown parameter `o.z`; known parameters: none"
        );
    }
}
