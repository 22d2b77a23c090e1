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
    /// # Panics
    ///
    /// Never: the schema is a constant that is known to compile (a unit test builds it).
    #[must_use]
    pub fn empty() -> Self {
        let schema = root_schema(Map::new(), Vec::new());
        let validator = values::build_validator(&schema)
            .expect("the schema accepting only `clusters` is a constant, valid schema");
        Self::assemble(schema, validator)
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
mod tests {
    use super::*;
    use rhai::packages::{
        ArithmeticPackage, BasicArrayPackage, BasicMapPackage, BasicStringPackage,
        LanguageCorePackage, LogicPackage, MoreStringPackage, Package,
    };
    use rhai::{Dynamic, Engine};

    /// The engine as the renderer builds it: raw, the listed packages, strict variables.
    fn engine() -> Engine {
        let mut engine = Engine::new_raw();
        engine.register_global_module(BasicArrayPackage::new().as_shared_module());
        engine.register_global_module(BasicMapPackage::new().as_shared_module());
        engine.register_global_module(LanguageCorePackage::new().as_shared_module());
        engine.register_global_module(ArithmeticPackage::new().as_shared_module());
        engine.register_global_module(LogicPackage::new().as_shared_module());
        engine.register_global_module(BasicStringPackage::new().as_shared_module());
        engine.register_global_module(MoreStringPackage::new().as_shared_module());
        engine.set_strict_variables(true);
        engine.set_max_expr_depths(64, 64);
        register(&mut engine);
        engine
    }

    fn eval(script: &str) -> Result<Dynamic, String> {
        engine().eval::<Dynamic>(script).map_err(|e| e.to_string())
    }

    fn schema_of(script: &str) -> ParameterSchema {
        let value = eval(script).expect("the script evaluates");
        ParameterSchema::from_rhai(value).expect("the declarations compile")
    }

    /// The schema fragment of one parameter `p` declared as `expression`.
    fn fragment(expression: &str) -> Value {
        schema_of(&format!("#{{ p: {expression} }}")).schema()["properties"]["p"].clone()
    }

    fn declaration_error(script: &str) -> String {
        let value = eval(script).expect("the script evaluates");
        ParameterSchema::from_rhai(value)
            .expect_err("the declarations are rejected")
            .to_string()
    }

    fn script_error(script: &str) -> String {
        eval(script).expect_err("the script fails")
    }

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            other => panic!("expected an object, got {other}"),
        }
    }

    /// Resolves `key=value` arguments alone; the error text on failure.
    fn resolve_args(schema: &ParameterSchema, given: &[&str]) -> Result<Value, String> {
        let given = schema.parse_args(&args(given)).map_err(|e| e.to_string())?;
        schema.resolve(&[&given]).map_err(|e| e.to_string())
    }

    const DESIGN_EXAMPLE: &str = r#"
        // parameter.rhai
        #{
            replicas:  pint(1).max(10).usage("Number of controller replicas"),
            image:     string("ghcr.io/example/controller:1.4.2").usage("Controller image"),
            mode:      enum_of(["standalone", "ha"], "standalone"),
            namespace: string("example-system"),
            clusters:  list(string()).optional().usage("Clusters to deploy to; all clusters when absent"),
            resources: object(#{ cpu: string("100m"), memory: string("128Mi") }),
        }
    "#;

    #[test]
    fn constructors_compile_to_their_schema_fragments() {
        let table: &[(&str, Value)] = &[
            ("int()", json!({"type": "integer"})),
            ("int(-3)", json!({"type": "integer", "default": -3})),
            ("uint()", json!({"type": "integer", "minimum": 0})),
            (
                "uint(2)",
                json!({"type": "integer", "minimum": 0, "default": 2}),
            ),
            ("pint()", json!({"type": "integer", "minimum": 1})),
            (
                "pint(3)",
                json!({"type": "integer", "minimum": 1, "default": 3}),
            ),
            ("float()", json!({"type": "number"})),
            ("float(1)", json!({"type": "number", "default": 1.0})),
            ("float(0.5)", json!({"type": "number", "default": 0.5})),
            ("string()", json!({"type": "string"})),
            (
                r#"string("nginx:1.25")"#,
                json!({"type": "string", "default": "nginx:1.25"}),
            ),
            ("bool()", json!({"type": "boolean"})),
            ("bool(false)", json!({"type": "boolean", "default": false})),
            (
                "list(string())",
                json!({"type": "array", "items": {"type": "string"}}),
            ),
            (
                "list(int(), [1, 2])",
                json!({"type": "array", "items": {"type": "integer"}, "default": [1, 2]}),
            ),
            (
                r"object(#{ a: int(1), b: string() })",
                json!({
                    "type": "object",
                    "properties": {"a": {"type": "integer", "default": 1}, "b": {"type": "string"}},
                    "required": ["b"],
                    "additionalProperties": false,
                }),
            ),
            (
                r"object(#{ a: int(1), b: string().optional() })",
                json!({
                    "type": "object",
                    "properties": {"a": {"type": "integer", "default": 1}, "b": {"type": "string"}},
                    "additionalProperties": false,
                    "default": {"a": 1},
                }),
            ),
            (
                "map_of(string())",
                json!({"type": "object", "additionalProperties": {"type": "string"}}),
            ),
            (
                "map_of(int(), #{ a: 1 })",
                json!({"type": "object", "additionalProperties": {"type": "integer"}, "default": {"a": 1}}),
            ),
            (
                r#"enum_of(["a", "b"])"#,
                json!({"type": "string", "enum": ["a", "b"]}),
            ),
            (
                r#"enum_of(["a", "b"], "b")"#,
                json!({"type": "string", "enum": ["a", "b"], "default": "b"}),
            ),
            (
                "enum_of([1, 2])",
                json!({"type": "integer", "enum": [1, 2]}),
            ),
            (
                "enum_of([1, 2.5])",
                json!({"type": "number", "enum": [1, 2.5]}),
            ),
            (
                r#"enum_of([1, "auto"], "auto")"#,
                json!({"enum": [1, "auto"], "default": "auto"}),
            ),
            ("any()", json!({})),
            (
                r#"any(#{ a: [1, "x", ()] })"#,
                json!({"default": {"a": [1, "x", null]}}),
            ),
        ];
        for (expression, expected) in table {
            assert_eq!(&fragment(expression), expected, "{expression}");
        }
    }

    #[test]
    fn refinements_compile_to_their_schema_keywords() {
        let table: &[(&str, Value)] = &[
            (
                "int().min(1).max(5)",
                json!({"type": "integer", "minimum": 1, "maximum": 5}),
            ),
            (
                "int().min(-1.5)",
                json!({"type": "integer", "minimum": -1.5}),
            ),
            (
                "float().min(0.5).max(2)",
                json!({"type": "number", "minimum": 0.5, "maximum": 2}),
            ),
            ("uint().min(3)", json!({"type": "integer", "minimum": 3})),
            ("pint().min(0)", json!({"type": "integer", "minimum": 1})),
            (
                "pint(1).max(10)",
                json!({"type": "integer", "minimum": 1, "maximum": 10, "default": 1}),
            ),
            (
                "string().min_len(1).max_len(3)",
                json!({"type": "string", "minLength": 1, "maxLength": 3}),
            ),
            (
                "list(int()).min_len(1).max_len(2)",
                json!({"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "integer"}}),
            ),
            (
                "map_of(int()).min_len(1).max_len(2)",
                json!({"type": "object", "minProperties": 1, "maxProperties": 2, "additionalProperties": {"type": "integer"}}),
            ),
            (
                r#"string().pattern("^[a-z]+$")"#,
                json!({"type": "string", "pattern": "^[a-z]+$"}),
            ),
            (
                r#"string().usage("The image")"#,
                json!({"type": "string", "description": "The image"}),
            ),
            (
                "string().secret()",
                json!({"type": "string", "writeOnly": true}),
            ),
            ("string().optional()", json!({"type": "string"})),
            ("string().required()", json!({"type": "string"})),
            (
                "int().min(1).min(2)",
                json!({"type": "integer", "minimum": 2}),
            ),
        ];
        for (expression, expected) in table {
            assert_eq!(&fragment(expression), expected, "{expression}");
        }
    }

    #[test]
    fn required_lists_parameters_without_default_unless_optional_and_those_marked_required() {
        let schema = schema_of(
            r#"#{
                a: int(),
                b: int(1),
                c: int().optional(),
                d: int(1).optional(),
                e: string().optional().required(),
                f: object(#{ x: int(1) }),
                g: object(#{ x: int() }),
                h: object(#{ x: int(1) }).required(),
                i: object(#{ x: int(1) }).optional(),
                j: list(string()),
                k: any(),
                l: string("x").required(),
                m: object(#{ x: int(1), y: int(2).required(), z: int().optional() }),
            }"#,
        );
        assert_eq!(
            schema.schema()["required"],
            json!(["a", "e", "g", "h", "j", "k", "l"])
        );
        let properties = &schema.schema()["properties"];
        assert_eq!(properties["f"]["default"], json!({"x": 1}));
        assert_eq!(properties["h"]["default"], json!({"x": 1}));
        assert_eq!(properties["l"]["default"], json!("x"));
        assert_eq!(properties["m"]["required"], json!(["y"]));
        assert_eq!(properties["m"]["default"], json!({"x": 1, "y": 2}));
        for name in ["g", "i"] {
            assert!(properties[name].get("default").is_none(), "{name}");
        }
        // Required parameters with a default are satisfied by it.
        let given = object(json!({"a": 1, "e": "e", "g": {"x": 1}, "j": [], "k": null}));
        let values = schema.resolve(&[&given]).expect("valid");
        assert_eq!(values["l"], "x");
        assert_eq!(values["h"], json!({"x": 1}));
        assert_eq!(values["m"], json!({"x": 1, "y": 2}));
        assert!(values.get("c").is_none() && values.get("i").is_none());
    }

    #[test]
    fn design_example_compiles_to_the_expected_schema_in_declaration_order() {
        let schema = schema_of(DESIGN_EXAMPLE);
        let expected = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "replicas": {
                    "type": "integer",
                    "description": "Number of controller replicas",
                    "minimum": 1,
                    "maximum": 10,
                    "default": 1
                },
                "image": {
                    "type": "string",
                    "description": "Controller image",
                    "default": "ghcr.io/example/controller:1.4.2"
                },
                "mode": {"type": "string", "enum": ["standalone", "ha"], "default": "standalone"},
                "namespace": {"type": "string", "default": "example-system"},
                "clusters": {
                    "type": "array",
                    "description": "Clusters to deploy to; all clusters when absent",
                    "items": {"type": "string"}
                },
                "resources": {
                    "type": "object",
                    "properties": {
                        "cpu": {"type": "string", "default": "100m"},
                        "memory": {"type": "string", "default": "128Mi"}
                    },
                    "additionalProperties": false,
                    "default": {"cpu": "100m", "memory": "128Mi"}
                }
            },
            "additionalProperties": false
        });
        // Compare the text: equality of maps ignores order, the text does not.
        assert_eq!(
            serde_json::to_string_pretty(schema.schema()).expect("serializes"),
            serde_json::to_string_pretty(&expected).expect("serializes"),
        );
        assert_eq!(
            schema.known(),
            [
                "replicas",
                "image",
                "mode",
                "namespace",
                "clusters",
                "resources"
            ]
        );
        let values = schema.resolve(&[]).expect("everything has a default");
        assert_eq!(
            values.to_string(),
            r#"{"replicas":1,"image":"ghcr.io/example/controller:1.4.2","mode":"standalone","namespace":"example-system","resources":{"cpu":"100m","memory":"128Mi"}}"#
        );
    }

    #[test]
    fn declaration_order_follows_construction_order_of_the_types() {
        let schema =
            schema_of("#{ zeta: int(1), alpha: object(#{ z: int(1), a: int(2) }), mid: int(3) }");
        assert_eq!(schema.known(), ["zeta", "alpha", "mid", "clusters"]);
        let fields: Vec<&String> = schema.schema()["properties"]["alpha"]["properties"]
            .as_object()
            .expect("object")
            .keys()
            .collect();
        assert_eq!(fields, ["z", "a"]);
        // A type built earlier and stored in a variable counts where it was built.
        let schema = schema_of("let common = string(\"x\"); #{ b: int(1), a: common }");
        assert_eq!(schema.known(), ["a", "b", "clusters"]);
    }

    #[test]
    fn empty_schema_accepts_only_clusters() {
        let schema = ParameterSchema::empty();
        assert_eq!(schema.known(), ["clusters"]);
        assert_eq!(
            resolve_args(&schema, &["clusters=a,b"]),
            Ok(json!({"clusters": ["a", "b"]}))
        );
        assert_eq!(resolve_args(&schema, &[]), Ok(json!({})));
        assert_eq!(
            resolve_args(&schema, &["foo=1"]),
            Err("unknown parameter `foo`; known parameters: `clusters`".to_owned())
        );
    }

    #[test]
    fn clusters_is_accepted_when_not_declared_and_may_be_declared_as_a_list_of_strings() {
        let schema = schema_of("#{ a: int(1) }");
        assert_eq!(schema.known(), ["a", "clusters"]);
        assert_eq!(
            schema.schema()["properties"]["clusters"]["items"],
            json!({"type": "string"})
        );
        assert_eq!(
            resolve_args(&schema, &["clusters={c1,c2}"]),
            Ok(json!({"a": 1, "clusters": ["c1", "c2"]}))
        );
        let declared = schema_of("#{ clusters: list(string(), [\"local\"]) }");
        assert_eq!(
            resolve_args(&declared, &[]),
            Ok(json!({"clusters": ["local"]}))
        );
        assert!(declaration_error("#{ clusters: string() }")
            .contains("`clusters` is reserved for the target clusters"));
    }

    #[test]
    fn defaults_are_filled_recursively_and_optional_fields_stay_absent() {
        let schema = schema_of(
            r#"#{
                resources: object(#{
                    cpu: string("100m"),
                    memory: string("128Mi"),
                    limits: object(#{ cpu: string("1"), burst: bool(false) }),
                    note: string().optional(),
                }),
                hosts: list(object(#{ name: string(), port: pint(80) })).optional(),
                labels: map_of(object(#{ value: string(), shown: bool(true) })).optional(),
                extra: any().optional(),
                level: int(2).optional(),
            }"#,
        );
        let values = resolve_args(
            &schema,
            &[
                "resources.limits.cpu=2",
                "hosts=[{name: a}, {name: b, port: 8080}]",
                "labels={x: {value: v}}",
            ],
        )
        .expect("valid");
        assert_eq!(
            values,
            json!({
                "resources": {"cpu": "100m", "memory": "128Mi", "limits": {"cpu": "2", "burst": false}},
                "hosts": [{"name": "a", "port": 80}, {"name": "b", "port": 8080}],
                "labels": {"x": {"value": "v", "shown": true}},
                "level": 2,
            })
        );
        // Output keeps declaration order even when the user gave fields in another order.
        let given = object(json!({"resources": {"memory": "1Gi", "cpu": "1"}}));
        let values = schema.resolve(&[&given]).expect("valid");
        assert_eq!(
            values["resources"].to_string(),
            r#"{"cpu":"1","memory":"1Gi","limits":{"cpu":"1","burst":false}}"#
        );
    }

    #[test]
    fn layers_merge_defaults_then_stored_then_given() {
        let schema = schema_of(
            r#"#{ replicas: pint(1), image: string("a:1"), resources: object(#{ cpu: string("100m"), memory: string("128Mi") }), tags: list(string(), ["x"]) }"#,
        );
        let stored =
            object(json!({"replicas": 3, "resources": {"cpu": "200m"}, "tags": ["s1", "s2"]}));
        let given = object(json!({"replicas": 5, "resources": {"memory": "1Gi"}, "tags": ["g"]}));
        let values = schema.resolve(&[&stored, &given]).expect("valid");
        assert_eq!(
            values,
            json!({
                "replicas": 5,
                "image": "a:1",
                "resources": {"cpu": "200m", "memory": "1Gi"},
                "tags": ["g"],
            })
        );
        let values = schema.resolve(&[&stored]).expect("valid");
        assert_eq!(values["replicas"], 3);
        assert_eq!(values["tags"], json!(["s1", "s2"]));
    }

    #[test]
    fn validation_errors_name_the_path_the_rule_and_the_value() {
        let schema = schema_of(
            r#"#{
                replicas: pint(1).max(10),
                mode: enum_of(["standalone", "ha"], "standalone"),
                name: string("a").pattern("^[a-z]+$"),
                short: string("ab").min_len(2).max_len(3),
                ratio: float(0.5).min(0).max(1),
                flag: bool(true),
                hosts: list(string(), []).max_len(1),
                resources: object(#{ cpu: string("100m") }),
            }"#,
        );
        let table: &[(&[&str], &str)] = &[
            (
                &["replicas=11"],
                "invalid parameter `replicas`: must be <= 10, got 11",
            ),
            (
                &["replicas=0"],
                "invalid parameter `replicas`: must be >= 1, got 0",
            ),
            (
                &["mode=cluster"],
                "invalid parameter `mode`: must be one of `standalone`, `ha`, got \"cluster\"",
            ),
            (
                &["name=Bad"],
                "invalid parameter `name`: must match the pattern `^[a-z]+$`, got \"Bad\"",
            ),
            (
                &["short=a"],
                "invalid parameter `short`: must be at least 2 characters long, got \"a\"",
            ),
            (
                &["short=abcd"],
                "invalid parameter `short`: must be at most 3 characters long, got \"abcd\"",
            ),
            (
                &["ratio=1.5"],
                "invalid parameter `ratio`: must be <= 1, got 1.5",
            ),
            (
                &["hosts=a,b"],
                "invalid parameter `hosts`: must have at most 1 item, got [\"a\",\"b\"]",
            ),
        ];
        for (given, expected) in table {
            assert_eq!(
                resolve_args(&schema, given),
                Err((*expected).to_owned()),
                "{given:?}"
            );
        }
        // Wrong types arrive through files and stored arguments, not only the command line.
        let table: &[(Value, &str)] = &[
            (
                json!({"replicas": "three"}),
                "invalid parameter `replicas`: expected integer, got \"three\"",
            ),
            (
                json!({"flag": "yes"}),
                "invalid parameter `flag`: expected boolean, got \"yes\"",
            ),
            (
                json!({"resources": {"cpu": 2}}),
                "invalid parameter `resources.cpu`: expected string, got 2",
            ),
            (
                json!({"hosts": [1]}),
                "invalid parameter `hosts[0]`: expected string, got 1",
            ),
            (
                json!({"resources": "big"}),
                "invalid parameter `resources`: expected object, got \"big\"",
            ),
        ];
        for (given, expected) in table {
            let given = object(given.clone());
            let error = schema.resolve(&[&given]).expect_err("invalid").to_string();
            assert_eq!(error, *expected);
        }
    }

    #[test]
    fn all_violations_are_reported_together() {
        let schema = schema_of(
            r#"#{ replicas: pint(1).max(10), mode: enum_of(["a", "b"], "a"), image: string() }"#,
        );
        let given = object(json!({"replicas": 0, "mode": "c"}));
        let error = schema.resolve(&[&given]).expect_err("invalid");
        let Error::Invalid(violations) = &error else {
            panic!("expected violations, got {error}");
        };
        assert_eq!(violations.len(), 3, "{error}");
        assert_eq!(
            error.to_string(),
            "3 invalid parameters:\n  `replicas`: must be >= 1, got 0\n  `mode`: must be one of `a`, `b`, got \"c\"\n  `image`: missing required parameter"
        );
    }

    #[test]
    fn unknown_parameters_are_reported_with_the_known_ones() {
        let schema =
            schema_of(r#"#{ a: int(1), b: object(#{ cpu: string("1"), memory: string("1") }) }"#);
        assert_eq!(
            resolve_args(&schema, &["foo=1"]),
            Err("unknown parameter `foo`; known parameters: `a`, `b`, `clusters`".to_owned())
        );
        assert_eq!(
            resolve_args(&schema, &["b.gpu=1"]),
            Err("unknown parameter `b.gpu`; known parameters: `b.cpu`, `b.memory`".to_owned())
        );
        assert_eq!(
            resolve_args(&schema, &["foo=1", "bar=2", "b.gpu=1", "a=2"]),
            Err("unknown parameters `foo`, `bar`; known parameters: `a`, `b`, `clusters`\nunknown parameter `b.gpu`; known parameters: `b.cpu`, `b.memory`".to_owned())
        );
        // Unknown fields inside list items of a declared object type.
        let schema = schema_of("#{ hosts: list(object(#{ name: string() })) }");
        let given = object(json!({"hosts": [{"name": "a", "port": 1}]}));
        assert_eq!(
            schema.resolve(&[&given]).expect_err("unknown").to_string(),
            "unknown parameter `hosts[0].port`; known parameters: `hosts[0].name`"
        );
        // Free keys of `map_of` are not unknown.
        let schema = schema_of("#{ labels: map_of(string()) }");
        assert_eq!(
            resolve_args(&schema, &["labels.anything=x"]),
            Ok(json!({"labels": {"anything": "x"}}))
        );
    }

    #[test]
    fn secrets_are_masked_in_errors_and_output() {
        let schema = schema_of(
            r#"#{
                token: string().secret().pattern("^[a-z]+$"),
                port: int(1).secret(),
                auth: object(#{ user: string("me"), password: string("pw").secret() }).secret(),
                login: object(#{ user: string("me"), password: string("pw").secret() }),
                keys: list(string().secret(), []),
            }"#,
        );
        let error = resolve_args(&schema, &["token=HUNTER2"]).expect_err("invalid");
        assert_eq!(
            error,
            "invalid parameter `token`: must match the pattern `^[a-z]+$`, got ******"
        );
        assert!(!error.contains("HUNTER2"));
        let error =
            resolve_args(&schema, &["token=abc", "port=sekrit"]).expect_err("not an integer");
        assert_eq!(error, "invalid argument `port=******`: expected integer");
        let given = object(json!({"token": "abc", "login": "s3cr3t-but-wrong-place"}));
        let error = schema.resolve(&[&given]).expect_err("invalid").to_string();
        assert_eq!(
            error,
            "invalid parameter `login`: expected object, got \"s3cr3t-but-wrong-place\""
        );
        let given = object(json!({"token": "abc", "login": {"user": 3, "password": "x"}}));
        let error = schema.resolve(&[&given]).expect_err("invalid").to_string();
        assert_eq!(
            error,
            "invalid parameter `login.user`: expected string, got 3"
        );
        let given = object(json!({"token": "abc", "login": {"password": 42}}));
        let error = schema.resolve(&[&given]).expect_err("invalid").to_string();
        assert_eq!(
            error,
            "invalid parameter `login.password`: expected string, got ******"
        );
        let given = object(json!({"token": "abc", "keys": ["k1", 7]}));
        let error = schema.resolve(&[&given]).expect_err("invalid").to_string();
        assert_eq!(
            error,
            "invalid parameter `keys[1]`: expected string, got ******"
        );

        let values = resolve_args(&schema, &["token=abc", "keys=k1,k2"]).expect("valid");
        assert_eq!(
            schema.mask(&values),
            json!({
                "token": MASK,
                "port": MASK,
                "auth": MASK,
                "login": {"user": "me", "password": MASK},
                "keys": [MASK, MASK],
            })
        );
        let table = [
            ("token", true),
            ("port", true),
            ("auth", true),
            ("auth.user", true),
            ("login", false),
            ("login.user", false),
            ("login.password", true),
            ("keys", false),
            ("keys.0", true),
            ("keys[3]", true),
            ("login[0]", false),
            ("unknown", false),
            ("clusters", false),
        ];
        for (path, secret) in table {
            assert_eq!(schema.is_secret(path), secret, "{path}");
        }
    }

    #[test]
    fn parse_args_types_values_by_the_schema() {
        let schema = schema_of(
            r#"#{
                replicas: pint(1),
                tag: string("latest"),
                ratio: float(0.5),
                debug_mode: bool(false),
                ports: list(int(), []),
                names: list(string(), []),
                mode: enum_of(["1", "2"], "1"),
                level: enum_of([1, 2], 1),
                mixed: enum_of([1, "auto"], "auto"),
                resources: object(#{ cpu: string("100m"), count: int(1) }),
                extra: any().optional(),
                labels: map_of(int()).optional(),
            }"#,
        );
        let table: &[(&str, Value)] = &[
            ("replicas=3", json!({"replicas": 3})),
            ("tag=3", json!({"tag": "3"})),
            ("tag=", json!({"tag": ""})),
            ("tag=a=b", json!({"tag": "a=b"})),
            ("ratio=2", json!({"ratio": 2})),
            ("ratio=0.25", json!({"ratio": 0.25})),
            ("debug_mode=true", json!({"debug_mode": true})),
            ("debug_mode=False", json!({"debug_mode": false})),
            ("ports={80,443}", json!({"ports": [80, 443]})),
            ("ports=80,443", json!({"ports": [80, 443]})),
            ("ports=80", json!({"ports": [80]})),
            ("ports={}", json!({"ports": []})),
            ("ports=[1, 2]", json!({"ports": [1, 2]})),
            ("names={a, b}", json!({"names": ["a", "b"]})),
            ("names=1,2", json!({"names": ["1", "2"]})),
            ("mode=2", json!({"mode": "2"})),
            ("level=2", json!({"level": 2})),
            ("mixed=1", json!({"mixed": 1})),
            ("mixed=auto", json!({"mixed": "auto"})),
            ("resources.cpu=200m", json!({"resources": {"cpu": "200m"}})),
            ("resources.count=2", json!({"resources": {"count": 2}})),
            (
                "resources={cpu: 1, count: 2}",
                json!({"resources": {"cpu": 1, "count": 2}}),
            ),
            ("extra=3", json!({"extra": 3})),
            ("extra=true", json!({"extra": true})),
            ("extra=hello", json!({"extra": "hello"})),
            ("extra=a: b", json!({"extra": "a: b"})),
            ("extra={a: [1, x]}", json!({"extra": {"a": [1, "x"]}})),
            ("extra=null", json!({"extra": null})),
            ("labels.x=1", json!({"labels": {"x": 1}})),
            ("unknown.deep=1.5", json!({"unknown": {"deep": 1.5}})),
            ("clusters=a,b", json!({"clusters": ["a", "b"]})),
            ("clusters={a}", json!({"clusters": ["a"]})),
            ("clusters=1", json!({"clusters": ["1"]})),
            ("clusters=", json!({"clusters": []})),
        ];
        for (arg, expected) in table {
            let parsed = schema.parse_args(&args(&[arg])).expect(arg);
            assert_eq!(Value::Object(parsed), *expected, "{arg}");
        }
    }

    #[test]
    fn parse_args_last_wins_and_dotted_paths_nest() {
        let schema =
            schema_of(r#"#{ a: int(1), r: object(#{ cpu: string("1"), mem: string("1") }) }"#);
        let parsed = schema
            .parse_args(&args(&["a=1", "r.cpu=2", "a=3", "r.mem=4", "r.cpu=5"]))
            .expect("valid");
        assert_eq!(
            Value::Object(parsed),
            json!({"a": 3, "r": {"cpu": "5", "mem": "4"}})
        );
        let parsed = schema
            .parse_args(&args(&["r.cpu=2", "r={}"]))
            .expect("valid");
        assert_eq!(Value::Object(parsed), json!({"r": {}}));
        let parsed = schema
            .parse_args(&args(&["r={mem: \"3\"}", "r.cpu=2"]))
            .expect("valid");
        assert_eq!(
            Value::Object(parsed),
            json!({"r": {"mem": "3", "cpu": "2"}})
        );
        let schema = schema_of("#{ extra: any().optional() }");
        let parsed = schema
            .parse_args(&args(&["extra=x", "extra.y=2"]))
            .expect("valid");
        assert_eq!(Value::Object(parsed), json!({"extra": {"y": 2}}));
        let parsed = schema
            .parse_args(&args(&["extra.y=2", "extra=x"]))
            .expect("valid");
        assert_eq!(Value::Object(parsed), json!({"extra": "x"}));
    }

    #[test]
    fn parse_args_rejects_malformed_arguments() {
        let schema = schema_of(
            "#{ replicas: pint(1), ratio: float(1), on: bool(true), ports: list(int(), []) }",
        );
        let table: &[(&str, &str)] = &[
            (
                "replicas",
                "invalid argument `replicas`: expected `key=value`",
            ),
            (
                "replicas=three",
                "invalid argument `replicas=three`: expected integer",
            ),
            (
                "replicas=1.5",
                "invalid argument `replicas=1.5`: expected integer",
            ),
            ("ratio=abc", "invalid argument `ratio=abc`: expected number"),
            ("ratio=inf", "invalid argument `ratio=inf`: expected number"),
            (
                "on=yes",
                "invalid argument `on=yes`: expected boolean (`true` or `false`)",
            ),
            (
                "ports=1,x",
                "invalid argument `ports=1,x`: list item `x`: expected integer",
            ),
            (
                "a..b=1",
                "invalid argument `a..b`: a parameter path must not have empty segments (`a.b`, not `a..b`, `.a` or `a.`)",
            ),
            (
                ".a=1",
                "invalid argument `.a`: a parameter path must not have empty segments (`a.b`, not `a..b`, `.a` or `a.`)",
            ),
            (
                "a.=1",
                "invalid argument `a.`: a parameter path must not have empty segments (`a.b`, not `a..b`, `.a` or `a.`)",
            ),
            (
                "=1",
                "invalid argument ``: a parameter path must not have empty segments (`a.b`, not `a..b`, `.a` or `a.`)",
            ),
        ];
        for (arg, expected) in table {
            let error = schema.parse_args(&args(&[arg])).expect_err(arg).to_string();
            assert_eq!(error, *expected, "{arg}");
        }
        let error = schema
            .parse_args(&args(&["replicas=x", "on=maybe"]))
            .expect_err("two problems")
            .to_string();
        assert_eq!(
            error,
            "2 invalid arguments:\n  `replicas=x`: expected integer\n  `on=maybe`: expected boolean (`true` or `false`)"
        );
    }

    #[test]
    #[expect(clippy::too_many_lines, reason = "one table of cases")]
    fn declaration_errors_name_the_parameter_and_the_problem() {
        let table: &[(&str, &str)] = &[
            (
                "#{ a: string().min(1) }",
                "invalid declaration of parameter `a`: `.min` applies to numbers (`int`, `uint`, `pint`, `float`), not to `string`; use `.min_len` for a length",
            ),
            (
                "#{ a: bool().max(1) }",
                "invalid declaration of parameter `a`: `.max` applies to numbers (`int`, `uint`, `pint`, `float`), not to `bool`",
            ),
            (
                "#{ a: int().min_len(1) }",
                "invalid declaration of parameter `a`: `.min_len` applies to `string`, `list` and `map_of`, not to `int`",
            ),
            (
                "#{ a: list(int()).pattern(\"x\") }",
                "invalid declaration of parameter `a`: `.pattern` applies to `string`, not to `list`",
            ),
            (
                "#{ a: string().pattern(\"[\") }",
                "invalid declaration of parameter `a`: `.pattern(\"[\")` is not a valid regular expression (ECMA-262 syntax, as in JSON Schema)",
            ),
            (
                "#{ a: int().min(5).max(1) }",
                "invalid declaration of parameter `a`: `.min(5)` is greater than `.max(1)`",
            ),
            (
                "#{ a: pint().max(0) }",
                "invalid declaration of parameter `a`: the minimum 1 of `pint` is greater than `.max(0)`",
            ),
            (
                "#{ a: string().min_len(3).max_len(1) }",
                "invalid declaration of parameter `a`: `.min_len(3)` is greater than `.max_len(1)`",
            ),
            (
                "#{ a: enum_of([\"x\", \"y\"], \"z\") }",
                "invalid declaration of parameter `a`: the default \"z\" does not satisfy the declaration: must be one of `x`, `y`",
            ),
            (
                "#{ a: pint(0) }",
                "invalid declaration of parameter `a`: the default 0 does not satisfy the declaration: must be >= 1",
            ),
            (
                "#{ a: uint(-1) }",
                "invalid declaration of parameter `a`: the default -1 does not satisfy the declaration: must be >= 0",
            ),
            (
                "#{ a: int(11).max(10) }",
                "invalid declaration of parameter `a`: the default 11 does not satisfy the declaration: must be <= 10",
            ),
            (
                "#{ a: string(\"Ab\").pattern(\"^[a-z]+$\") }",
                "invalid declaration of parameter `a`: the default \"Ab\" does not satisfy the declaration: must match the pattern `^[a-z]+$`",
            ),
            (
                "#{ a: string(\"hunter2\").secret().min_len(10) }",
                "invalid declaration of parameter `a`: the default ****** does not satisfy the declaration: must be at least 10 characters long",
            ),
            (
                "#{ a: list(int(), [1, \"x\"]) }",
                "invalid declaration of parameter `a`: the default [1,\"x\"] does not satisfy the declaration: `a[1]`: expected integer, got \"x\"",
            ),
            (
                "#{ a: list(object(#{ n: string() }), [#{}]) }",
                "invalid declaration of parameter `a`: the default [{}] does not satisfy the declaration: `a[0].n`: missing required parameter",
            ),
            (
                "#{ a: object(#{ b: pint(0) }) }",
                "invalid declaration of parameter `a.b`: the default 0 does not satisfy the declaration: must be >= 1",
            ),
            (
                "#{ a: list(string().min(1)) }",
                "invalid declaration of parameter `a[*]`: `.min` applies to numbers (`int`, `uint`, `pint`, `float`), not to `string`; use `.min_len` for a length",
            ),
            (
                "#{ a: map_of(bool().pattern(\"x\")) }",
                "invalid declaration of parameter `a.*`: `.pattern` applies to `string`, not to `bool`",
            ),
            (
                "#{ \"a.b\": int() }",
                "invalid declaration of parameter `a.b`: parameter names must not contain `.` (dots separate the levels of a parameter path)",
            ),
            (
                "#{ \"\": int() }",
                "invalid declaration of parameter ``: parameter names must not be empty",
            ),
            (
                "#{ a: 3 }",
                "invalid declaration of parameter `a`: expected a parameter type such as `string(\"x\")` or `pint(1)`, got integer 3",
            ),
            (
                "#{ a: \"int\" }",
                "invalid declaration of parameter `a`: expected a parameter type such as `string(\"x\")` or `pint(1)`, got string \"int\"",
            ),
            (
                "3",
                "`parameter.rhai` must evaluate to a map of parameter types such as `#{ replicas: pint(1) }`, got integer 3",
            ),
            (
                "[int()]",
                "`parameter.rhai` must evaluate to a map of parameter types such as `#{ replicas: pint(1) }`, got an array",
            ),
            (
                "int()",
                "`parameter.rhai` must evaluate to a map of parameter types such as `#{ replicas: pint(1) }`, got a parameter type",
            ),
        ];
        for (script, expected) in table {
            assert_eq!(declaration_error(script), *expected, "{script}");
        }
    }

    #[test]
    fn wrong_use_in_the_script_is_a_clear_script_error() {
        let table: &[(&str, &str)] = &[
            (
                "pint(\"x\")",
                "`pint(default)` expects an integer, got string \"x\"",
            ),
            (
                "int(1.5)",
                "`int(default)` expects an integer, got float 1.5",
            ),
            (
                "string(3)",
                "`string(default)` expects a string, got integer 3",
            ),
            (
                "bool(1)",
                "`bool(default)` expects `true` or `false`, got integer 1",
            ),
            (
                "float(\"1\")",
                "`float(default)` expects a finite number, got string \"1\"",
            ),
            (
                "int().min(\"a\")",
                "`.min(n)` expects a finite number, got string \"a\"",
            ),
            (
                "string().min_len(-1)",
                "`.min_len(n)` expects an integer >= 0, got integer -1",
            ),
            (
                "string().pattern(1)",
                "`.pattern(re)` expects a string, got integer 1",
            ),
            (
                "string().usage(#{})",
                "`.usage(text)` expects a string, got a map",
            ),
            (
                "list(1)",
                "`list(T)` expects a parameter type such as `string()` for T, got integer 1",
            ),
            (
                "list(int(), 1)",
                "`list(T, default)` expects an array as default, got integer 1",
            ),
            (
                "object(1)",
                "`object(fields)` expects a map `#{ name: type, … }`, got integer 1",
            ),
            (
                "object(#{ a: 1 })",
                "`object(fields)`: field `a` must be a parameter type such as `string()`, got integer 1",
            ),
            (
                "map_of(\"x\")",
                "`map_of(T)` expects a parameter type such as `string()` for T, got string \"x\"",
            ),
            (
                "enum_of([])",
                "`enum_of(values)` expects at least one value",
            ),
            (
                "enum_of(\"a\")",
                "`enum_of(values)` expects an array of strings or numbers, got string \"a\"",
            ),
            (
                "enum_of([true])",
                "`enum_of(values)` expects strings or numbers, got bool true",
            ),
            (
                "enum_of([\"a\", \"a\"])",
                "`enum_of(values)`: the value \"a\" is listed twice",
            ),
            (
                "any(int())",
                "`any(default)`: the value cannot be used as a parameter value",
            ),
        ];
        for (script, expected) in table {
            let error = script_error(script);
            assert!(error.contains(expected), "{script}: {error}");
            assert!(error.contains("line 1"), "{script}: {error}");
        }
    }

    #[test]
    fn types_nest_at_most_32_levels() {
        let fine = "let t = int(1); let i = 0; while i < 31 { t = list(t); i += 1; } #{ a: t }";
        let schema = ParameterSchema::from_rhai(eval(fine).expect("32 levels are fine"))
            .expect("32 levels compile");
        assert_eq!(
            schema.schema()["properties"]["a"]["items"]["items"]["type"],
            "array"
        );
        let error =
            script_error("let t = int(); let i = 0; while i < 40 { t = list(t); i += 1; } t");
        assert!(
            error.contains("parameter types may nest at most 32 levels deep"),
            "{error}"
        );
        let error = script_error(
            "let t = int(1); let i = 0; while i < 40 { t = object(#{ x: t }); i += 1; } t",
        );
        assert!(error.contains("at most 32 levels"), "{error}");
    }

    #[test]
    fn json_schema_is_accepted_as_is_with_clusters_added() {
        let schema = ParameterSchema::from_json_schema(json!({
            "type": "object",
            "properties": {
                "replicas": {"type": "integer", "minimum": 1, "default": 2},
                "token": {"type": "string", "writeOnly": true},
                "nested": {
                    "type": "object",
                    "properties": {"x": {"type": "integer", "default": 1}},
                },
            },
            "required": ["token"],
        }))
        .expect("valid");
        assert_eq!(schema.known(), ["replicas", "token", "nested", "clusters"]);
        assert!(schema.is_secret("token"));
        assert_eq!(
            resolve_args(&schema, &["token=t", "nested.y=2", "clusters=a"]),
            Ok(json!({"replicas": 2, "token": "t", "nested": {"x": 1, "y": 2}, "clusters": ["a"]}))
        );
        assert_eq!(
            resolve_args(&schema, &["bogus=1"]),
            Err("unknown parameter `bogus`; known parameters: `replicas`, `token`, `nested`, `clusters`".to_owned())
        );
        assert_eq!(
            resolve_args(&schema, &["token=t", "replicas=0"]),
            Err("invalid parameter `replicas`: must be >= 1, got 0".to_owned())
        );
        assert_eq!(
            resolve_args(&schema, &[]),
            Err("invalid parameter `token`: missing required parameter".to_owned())
        );
    }

    #[test]
    fn json_schema_of_older_drafts_and_with_local_references_works() {
        let schema = ParameterSchema::from_json_schema(json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "definitions": {"small": {"type": "integer", "maximum": 3}},
            "properties": {
                "a": {"$ref": "#/definitions/small"},
                "b": {"type": ["integer", "string"], "default": 1},
            },
        }))
        .expect("valid");
        assert_eq!(
            resolve_args(&schema, &["a=2", "b=x"]),
            Ok(json!({"a": 2, "b": "x"}))
        );
        assert_eq!(
            resolve_args(&schema, &["a=2", "b=7"]),
            Ok(json!({"a": 2, "b": 7}))
        );
        assert_eq!(
            resolve_args(&schema, &["a=4"]),
            Err("invalid parameter `a`: must be <= 3, got 4".to_owned())
        );
    }

    #[test]
    fn json_schema_errors_are_reported() {
        let table: &[(Value, &str)] = &[
            (json!([1]), "must be a JSON object"),
            (json!(true), "must be a JSON object"),
            (json!({"properties": 3}), "`properties` must be an object"),
            (
                json!({"type": "integr"}),
                "invalid parameter schema: at `/type`: ",
            ),
            (
                json!({"properties": {"a": {"pattern": "["}}}),
                "invalid parameter schema: at `/properties/a",
            ),
            (
                json!({"properties": {"a": {"$ref": "https://example.com/s.json"}}}),
                "invalid parameter schema: the reference `https://example.com/s.json` points to another document; only references inside the schema (`#/$defs/…`) are supported, other documents are never fetched",
            ),
            (
                json!({"properties": {"a": {"$ref": "file:///etc/passwd"}}}),
                "the reference `file:///etc/passwd` points to another document",
            ),
            (
                json!({"properties": {"a": {"$ref": "#/$defs/missing"}}}),
                "invalid parameter schema: bad reference: ",
            ),
        ];
        for (schema, expected) in table {
            let error = ParameterSchema::from_json_schema(schema.clone())
                .expect_err("rejected")
                .to_string();
            assert!(error.contains(expected), "{schema}: {error}");
        }
        let hidden = json!({
            "$defs": {"token": {"type": "string", "writeOnly": true}},
            "properties": {"token": {"$ref": "#/$defs/token"}},
        });
        let error = ParameterSchema::from_json_schema(hidden)
            .expect_err("secret behind $ref")
            .to_string();
        assert!(
            error.contains("secret (`writeOnly`) parameters must be declared through `properties`"),
            "{error}"
        );
        let hidden = json!({"properties": {"a": {"allOf": [{"writeOnly": true}]}}});
        assert!(ParameterSchema::from_json_schema(hidden).is_err());
        let visible = json!({"properties": {"a": {"type": "array", "items": {"writeOnly": true}, "default": [{"writeOnly": true}]}}});
        assert!(ParameterSchema::from_json_schema(visible).is_ok());
        let mut deep = json!({"type": "string"});
        for _ in 0..100 {
            deep = json!({"type": "object", "properties": {"x": deep}});
        }
        let error = ParameterSchema::from_json_schema(deep)
            .expect_err("too deep")
            .to_string();
        assert!(error.contains("nests deeper than"), "{error}");
    }

    #[test]
    fn merge_values_merges_objects_and_replaces_everything_else() {
        let table: &[(Value, Value, Value)] = &[
            (
                json!({"a": 1, "b": {"c": 1, "d": 2}}),
                json!({"b": {"c": 3}, "e": 4}),
                json!({"a": 1, "b": {"c": 3, "d": 2}, "e": 4}),
            ),
            (json!({"a": [1, 2]}), json!({"a": [3]}), json!({"a": [3]})),
            (json!({"a": {"b": 1}}), json!({"a": 2}), json!({"a": 2})),
            (
                json!({"a": 2}),
                json!({"a": {"b": 1}}),
                json!({"a": {"b": 1}}),
            ),
            (json!({"a": 1}), json!({"a": null}), json!({"a": null})),
            (json!(1), json!({"a": 1}), json!({"a": 1})),
        ];
        for (base, over, expected) in table {
            let mut merged = base.clone();
            merge_values(&mut merged, over);
            assert_eq!(&merged, expected, "{base} <- {over}");
        }
    }

    #[test]
    fn parameter_schema_is_cheap_to_clone_and_shareable() {
        fn assert_send_sync<T: Send + Sync>(_: &T) {}
        let schema = schema_of(DESIGN_EXAMPLE);
        let copy = schema.clone();
        assert!(Arc::ptr_eq(&schema.inner, &copy.inner));
        assert_send_sync(&schema);
    }
}
