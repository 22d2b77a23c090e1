//! Addon parameters: CUE-style typed declarations written in Rhai (`parameter.rhai`) or plain
//! JSON Schema (`parameter.schema.json`), compiled to JSON Schema draft 2020-12, and the values
//! users give for them: `key=value` arguments, layering (defaults ← stored ← given), defaults,
//! validation with clear errors, and masking of secrets.
//!
//! This module owns the parameter constructors registered on the one Rhai engine ([`register`]),
//! the compiled declarations of one addon ([`ParameterSchema`]) and their errors ([`Error`]).
//! It knows nothing of files, templates or clusters.
//!
//! # Declarations
//!
//! ```rhai
//! #{
//!     replicas:  pint(1).max(10).usage("Number of controller replicas"),
//!     mode:      enum_of(["standalone", "ha"], "standalone"),
//!     token:     string().secret().optional(),
//!     clusters:  list(string()).optional(),
//!     resources: object(#{ cpu: string("100m"), memory: string("128Mi") }),
//! }
//! ```
//!
//! Constructors: `int`, `uint` (integer ≥ 0), `pint` (integer ≥ 1), `float`, `string`, `bool`,
//! `any`, each with an optional default; `list(T)` / `list(T, [default])`, `object(#{ field: T })`
//! (closed), `map_of(T)` / `map_of(T, #{default})` (free keys), `enum_of([values], default?)`.
//! Refinements: `.min(n)`, `.max(n)`, `.min_len(n)`, `.max_len(n)` (strings, lists, maps),
//! `.pattern(re)`, `.optional()`, `.required()`, `.usage(text)`, `.secret()`.
//!
//! # Guarantees
//!
//! - A parameter is required when `.required()` is set, or when it has no default and is not
//!   `.optional()`. Defaults are filled before validation, so a required parameter with a default
//!   is always present. An `object(…)` whose fields are all defaulted or optional has a default
//!   built from them (unless the object is `.optional()`). Optional parameters without a default
//!   stay absent.
//! - `clusters` (a list of strings) is always accepted, declared or not.
//! - Property order in [`ParameterSchema::schema`] and [`ParameterSchema::known`] is declaration
//!   order (the order in which the types were written; a type stored in a variable and used later
//!   counts where it was constructed). This relies on `serde_json`'s `preserve_order` feature.
//! - Secrets (`.secret()`, or `writeOnly: true` in a JSON Schema) never appear in error messages.
//! - Nothing here panics on untrusted input; types nest at most 32 levels deep.

mod args;
mod arguments;
mod compile;
mod error;
pub mod input;
mod types;
mod values;

use std::sync::Arc;

use serde_json::{json, Map, Value};

#[cfg(test)]
pub(crate) use arguments::{map, object_schema};
pub use arguments::{Arguments, Input, RawInput};
pub use error::{Error, InvalidArgument, Result, UnknownParameter, Violation, MASK};
pub use types::ParameterType;

use types::MAX_TYPE_DEPTH;

/// The `$schema` of every schema built from `parameter.rhai`.
pub const JSON_SCHEMA_DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// The parameter that is accepted by every addon: the clusters to deploy to.
pub const CLUSTERS: &str = "clusters";

/// How deeply a `parameter.schema.json` may nest (JSON levels; two per object level).
const MAX_JSON_SCHEMA_DEPTH: usize = 2 * MAX_TYPE_DEPTH + 8;

/// Registers the parameter constructors (`int`, `string`, `object`, …) and refinements (`.min`,
/// `.secret`, …) and the [`ParameterType`] custom type on the engine.
///
/// Needs no package beyond what the sandboxed engine already has; adds no access to anything
/// outside the script.
pub fn register(engine: &mut rhai::Engine) {
    engine.build_type::<ParameterType>();
}

/// The compiled parameter declarations of one addon: its JSON Schema, a compiled validator, and
/// what is needed to parse, default, validate and mask values. Cheap to clone.
#[derive(Clone, Debug)]
pub struct ParameterSchema {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    schema: Value,
    validator: jsonschema::Validator,
    known: Vec<String>,
}

impl ParameterSchema {
    /// The schema of an addon without a parameter file: only `clusters` is accepted.
    ///
    /// # Errors
    ///
    /// [`Error::Schema`] only if the JSON Schema library refuses this constant schema (a unit test
    /// builds it, so it does not in practice).
    pub fn empty() -> Result<Self> {
        let schema = root_schema(Map::new(), Vec::new());
        let validator = values::build_validator(&schema).map_err(|error| schema_error(&error))?;
        Ok(Self::assemble(schema, validator))
    }

    /// Compiles the value `parameter.rhai` evaluated to: a map from parameter name to type.
    ///
    /// # Errors
    ///
    /// [`Error::NotAMap`] when the value is not such a map; [`Error::Declaration`] naming the
    /// parameter when a declaration is wrong (a refinement that does not apply, `.min` above
    /// `.max`, a bad `.pattern`, a default that breaks its own declaration, …).
    pub fn from_rhai(value: rhai::Dynamic) -> Result<Self> {
        let value = value.flatten();
        if !value.is_map() {
            return Err(Error::NotAMap {
                found: types::describe(&value),
            });
        }
        let Some(map) = value.try_cast::<rhai::Map>() else {
            return Err(Error::NotAMap {
                found: "a map that cannot be read".to_owned(),
            });
        };
        let mut declarations = Vec::with_capacity(map.len());
        for (name, entry) in map {
            let entry = entry.flatten();
            let found = types::describe(&entry);
            let Some(t) = entry.try_cast::<ParameterType>() else {
                return Err(Error::Declaration {
                    path: name.to_string(),
                    message: format!(
                        "expected a parameter type such as `string(\"x\")` or `pint(1)`, got {found}"
                    ),
                });
            };
            declarations.push((name.to_string(), t));
        }
        types::sort_declarations(&mut declarations);
        let clusters = declarations.iter().find(|(name, _)| name == CLUSTERS);
        if clusters.is_some_and(|(_, t)| !is_list_of_strings(t)) {
            return Err(Error::Declaration {
                path: CLUSTERS.to_owned(),
                message: "`clusters` is reserved for the target clusters and must be declared as `list(string())`"
                    .to_owned(),
            });
        }
        let fields = compile::compile_fields("", &declarations, 0)?;
        let schema = root_schema(fields.properties, fields.required);
        let validator = values::build_validator(&schema).map_err(|error| schema_error(&error))?;
        Ok(Self::assemble(schema, validator))
    }

    /// Accepts a `parameter.schema.json`: a JSON Schema object, used as it is (secrets are the
    /// properties with `writeOnly: true`); `clusters` is added to its `properties` when missing.
    /// The draft is taken from `$schema` (2020-12 when absent). The top level is closed (unknown
    /// parameters are errors) unless the schema opens it (`additionalProperties`,
    /// `patternProperties`, `$ref`, combinators); nested objects follow the schema.
    ///
    /// # Errors
    ///
    /// [`Error::Schema`] when it is not an object, nests too deeply, does not compile (invalid
    /// keywords, bad regular expressions, references to other documents, which are never
    /// fetched), or hides a secret behind `$ref` or a combinator where it could not be masked.
    pub fn from_json_schema(schema: Value) -> Result<Self> {
        let Value::Object(mut object) = schema else {
            return Err(Error::Schema {
                message: "the schema must be a JSON object such as `{\"type\": \"object\", \"properties\": {…}}`"
                    .to_owned(),
            });
        };
        let depth = object.values().map(|v| json_depth(v, 1)).max().unwrap_or(1);
        if depth > MAX_JSON_SCHEMA_DEPTH {
            return Err(Error::Schema {
                message: format!("the schema nests deeper than {MAX_JSON_SCHEMA_DEPTH} levels"),
            });
        }
        let properties = object
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        let Value::Object(properties) = properties else {
            return Err(Error::Schema {
                message: "`properties` must be an object".to_owned(),
            });
        };
        if !properties.contains_key(CLUSTERS) {
            properties.insert(CLUSTERS.to_owned(), clusters_schema());
        }
        let schema = Value::Object(object);
        if values::count_write_only(&schema, 0) > values::count_reachable_write_only(&schema, 0) {
            return Err(Error::Schema {
                message: "secret (`writeOnly`) parameters must be declared through `properties`, `items` or `additionalProperties`, not behind `$ref` or combinators such as `allOf`, so that their values can be masked".to_owned(),
            });
        }
        let validator = values::build_validator(&schema).map_err(|error| schema_error(&error))?;
        Ok(Self::assemble(schema, validator))
    }

    fn assemble(schema: Value, validator: jsonschema::Validator) -> Self {
        let known = values::known_at(&schema, &[]);
        Self {
            inner: Arc::new(Inner {
                schema,
                validator,
                known,
            }),
        }
    }

    /// The JSON Schema (draft 2020-12 for `parameter.rhai`), as `render --schema` prints it.
    #[must_use]
    pub fn schema(&self) -> &Value {
        &self.inner.schema
    }

    /// The top-level parameter names in declaration order, `clusters` included.
    #[must_use]
    pub fn known(&self) -> Vec<String> {
        self.inner.known.clone()
    }

    /// Whether the parameter at a dotted path (`auth.token`; list items as `keys[0]` or `keys.0`)
    /// is a secret or lies inside one.
    #[must_use]
    pub fn is_secret(&self, path: &str) -> bool {
        let mut node = &self.inner.schema;
        let mut secret = is_write_only(node);
        for segment in values::parse_path(path) {
            let items = || node.get("items").filter(|v| v.is_object());
            let next = match &segment {
                values::Segment::Key(key) => values::property_schema(node, key)
                    .or_else(|| key.parse::<usize>().ok().and_then(|_| items())),
                values::Segment::Index(_) => items(),
            };
            let Some(next) = next else {
                return secret;
            };
            node = next;
            secret |= is_write_only(node);
        }
        secret
    }

    /// Parses command-line arguments `key=value` (dotted keys) into a map of values typed by the
    /// schema; later arguments win over earlier ones.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArguments`] listing every argument without `=`, with an empty path segment,
    /// or with a value that does not parse as the declared type (secret values masked).
    pub fn parse_args(&self, args: &[String]) -> Result<Map<String, Value>> {
        args::parse(&self.inner.schema, args).map_err(Error::InvalidArguments)
    }

    /// Merges the layers (each deep-merged over the previous), fills defaults, validates, and
    /// returns the effective values (an object).
    ///
    /// Pass the layers weakest first: `&[&stored, &given]`.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownParameters`] when a key is not declared (checked first);
    /// [`Error::Invalid`] listing every violation otherwise.
    pub fn resolve(&self, layers: &[&Map<String, Value>]) -> Result<Value> {
        let mut merged = Value::Object(Map::new());
        for layer in layers {
            for (key, value) in *layer {
                merge_entry(&mut merged, key, value);
            }
        }
        let schema = &self.inner.schema;
        let mut unknown = Vec::new();
        values::find_unknown(schema, &merged, &mut Vec::new(), &mut unknown);
        if !unknown.is_empty() {
            return Err(Error::UnknownParameters(unknown));
        }
        values::fill_defaults(schema, &mut merged, 0);
        let mut violations = values::violations(&self.inner.validator, schema, &merged);
        // Report in declaration order of the top-level parameters (stable within one).
        violations.sort_by_key(|violation| {
            let top = violation.path.split(['.', '[']).next().unwrap_or_default();
            self.inner.known.iter().position(|known| known == top)
        });
        if violations.is_empty() {
            Ok(merged)
        } else {
            Err(Error::Invalid(violations))
        }
    }

    /// `values` with every secret replaced by [`MASK`], for printing.
    #[must_use]
    pub fn mask(&self, values: &Value) -> Value {
        values::mask_value(&self.inner.schema, values, 0)
    }
}

/// The dotted path of `key` below `path` (`""` is the top): how parameters are named in
/// arguments, messages and schemas (`resources.cpu`).
pub fn dotted(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// Deep merge: objects are merged key by key (recursively), anything else in `over` replaces
/// what is in `base`.
pub fn merge_values(base: &mut Value, over: &Value) {
    merge_at(base, over, 0);
}

fn merge_at(base: &mut Value, over: &Value, depth: usize) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) if depth < values::MAX_WALK_DEPTH => {
            for (key, value) in over {
                match base.get_mut(key) {
                    Some(existing) => merge_at(existing, value, depth + 1),
                    None => {
                        base.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (base, over) => *base = over.clone(),
    }
}

fn merge_entry(base: &mut Value, key: &str, value: &Value) {
    if let Value::Object(map) = base {
        match map.get_mut(key) {
            Some(existing) => merge_values(existing, value),
            None => {
                map.insert(key.to_owned(), value.clone());
            }
        }
    }
}

/// Words a schema compile error for the author of the schema.
fn schema_error(error: &jsonschema::ValidationError<'_>) -> Error {
    let message = if let jsonschema::error::ValidationErrorKind::Referencing(reference) =
        error.kind()
    {
        match reference {
            jsonschema::ReferencingError::Unretrievable { uri, .. } => format!(
                "the reference `{uri}` points to another document; only references inside the schema (`#/$defs/…`) are supported, other documents are never fetched"
            ),
            other => format!("bad reference: {other}"),
        }
    } else {
        let location = error.instance_path().as_str();
        let location = if location.is_empty() { "/" } else { location };
        format!("at `{location}`: {error}")
    };
    Error::Schema { message }
}

fn is_write_only(node: &Value) -> bool {
    node.get("writeOnly").and_then(Value::as_bool) == Some(true)
}

fn is_list_of_strings(t: &ParameterType) -> bool {
    matches!(&t.kind, types::Kind::List(item) if matches!(item.kind, types::Kind::String))
}

fn clusters_schema() -> Value {
    json!({
        "type": "array",
        "items": { "type": "string" },
        "description": "Clusters to deploy to; all clusters when absent",
    })
}

/// The top-level schema: declared properties (plus `clusters`), closed.
fn root_schema(mut properties: Map<String, Value>, required: Vec<Value>) -> Value {
    if !properties.contains_key(CLUSTERS) {
        properties.insert(CLUSTERS.to_owned(), clusters_schema());
    }
    let mut root = Map::new();
    root.insert("$schema".into(), JSON_SCHEMA_DIALECT.into());
    root.insert("type".into(), "object".into());
    root.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        root.insert("required".into(), Value::Array(required));
    }
    root.insert("additionalProperties".into(), false.into());
    Value::Object(root)
}

/// Nesting depth of a JSON value (a scalar is 0), stopping once past the schema limit.
fn json_depth(value: &Value, depth: usize) -> usize {
    if depth > MAX_JSON_SCHEMA_DEPTH {
        return depth;
    }
    match value {
        Value::Object(map) => map
            .values()
            .map(|v| json_depth(v, depth + 1))
            .max()
            .unwrap_or(depth + 1),
        Value::Array(items) => items
            .iter()
            .map(|v| json_depth(v, depth + 1))
            .max()
            .unwrap_or(depth + 1),
        _ => depth,
    }
}

#[cfg(test)]
mod tests;
