//! The JSON Schema lowering of `template.parameter` (and of `parameter.cue`).

#[allow(unused_imports)]
use serde_json::{Map, Number, Value};

use super::{
    beyond_subset, decode_string, error, object, short, CueError, Kind, Marker, Parser, Pos, Result,
};

// JSON Schema of `template.parameter`
// ---------------------------------------------------------------------------------------------

pub(super) type Schema = Map<String, Value>;

/// One operand of a `|` or `&` in a parameter declaration.
pub(super) enum Term {
    /// A concrete value: `"a"`, `3`, `true`, `["x"]`.
    Value(Value),
    /// A type, with its value when it is a struct whose fields are all concrete.
    Type {
        schema: Schema,
        literal: Option<Value>,
    },
    /// `>=n`, `<=n`, `>n` or `<n`.
    Bound { op: &'static str, limit: Number },
    /// `=~"regexp"`.
    Pattern(String),
}

/// A disjunct: a term, whether it is marked `*` default, where it starts and its text as
/// written (without the `*`).
pub(super) struct Disjunct {
    pub(super) term: Term,
    pub(super) default: bool,
    pub(super) pos: Pos,
    pub(super) text: String,
}

/// A parsed parameter field.
pub(super) struct SchemaField {
    pub(super) name: String,
    pub(super) pos: Pos,
    pub(super) schema: Schema,
    pub(super) required: bool,
    pub(super) constant: Option<Value>,
}

impl Parser<'_> {
    /// Parse the parameter declaration whose value starts at token `index`.
    pub(super) fn schema_at(&mut self, index: usize) -> Result<Schema> {
        let saved = self.index;
        self.index = index;
        let result = self
            .nested(Self::schema_field_value)
            .and_then(|(schema, _)| match self.kind() {
                Kind::Comma { .. } | Kind::Punct("}") | Kind::Eof => Ok(schema),
                _ => Err(self.unexpected("expected the end of `parameter`")),
            });
        self.index = saved;
        result
    }

    /// A field value: a `b: T` shorthand, a `[string]: T` map shorthand, or an expression.
    pub(super) fn schema_field_value(&mut self) -> Result<(Schema, Option<Value>)> {
        if self.is_field_start() {
            let field = self.schema_field()?;
            let required = if field.required {
                vec![field.name.clone()]
            } else {
                Vec::new()
            };
            let constant = field
                .constant
                .clone()
                .map(|v| object([(field.name.as_str(), v)]));
            let mut properties = Map::new();
            properties.insert(field.name, Value::Object(field.schema));
            return Ok((object_schema(properties, required, None), constant));
        }
        if self.is_pattern_start() {
            let values = self.schema_pattern()?;
            return Ok((object_schema(Map::new(), Vec::new(), Some(values)), None));
        }
        self.schema_expression()
    }

    pub(super) fn schema_field(&mut self) -> Result<SchemaField> {
        let label = self.label()?;
        if label.ident && label.name.starts_with('#') {
            return Err(beyond_subset(
                label.pos,
                &format!("the definition `{}`", label.name),
            ));
        }
        if label.ident && label.name.starts_with('_') {
            return Err(beyond_subset(
                label.pos,
                &format!("the hidden field `{}`", label.name),
            ));
        }
        let marker = self.marker();
        self.expect_punct(":", "after the field name")?;
        self.fields.push(label.name.clone());
        let value = self.nested(Self::schema_field_value);
        self.fields.pop();
        let (mut schema, constant) = value?;
        if self.at_punct("@") {
            return Err(beyond_subset(self.pos(), "a field attribute `@…`"));
        }
        schema.insert("title".into(), Value::String(label.name.clone()));
        if let Some(description) = describe_doc(&label.doc) {
            schema.insert("description".into(), Value::String(description));
        }
        let required = match marker {
            Marker::Optional => false,
            Marker::Required => true,
            Marker::Regular => !schema.contains_key("default"),
        };
        let constant = if marker == Marker::Optional {
            None
        } else {
            constant
        };
        Ok(SchemaField {
            name: label.name,
            pos: label.pos,
            schema,
            required,
            constant,
        })
    }

    pub(super) fn is_pattern_start(&self) -> bool {
        self.at_punct("[")
            && self.kind_at(1) == Kind::Ident
            && self.punct_at(2, "]")
            && self.punct_at(3, ":")
    }

    /// `[string]: T`, returning the schema of `T`.
    pub(super) fn schema_pattern(&mut self) -> Result<Schema> {
        let pos = self.pos();
        let key = self.text_at(1);
        if key != "string" {
            return Err(beyond_subset(
                pos,
                &format!("the pattern constraint `[{key}]` (only `[string]: T`)"),
            ));
        }
        self.bump();
        self.bump();
        self.bump();
        self.bump();
        self.nested(Self::schema_field_value)
            .map(|(schema, _)| schema)
    }

    /// A full expression: disjuncts of conjunctions.
    pub(super) fn schema_expression(&mut self) -> Result<(Schema, Option<Value>)> {
        let mut disjuncts = Vec::new();
        loop {
            let pos = self.pos();
            let default = self.at_punct("*");
            if default {
                self.bump();
            }
            let first = self.index;
            let term = self.schema_conjunction()?;
            let text = self.text_between(first, self.index);
            disjuncts.push(Disjunct {
                term,
                default,
                pos,
                text,
            });
            if !self.at_punct("|") {
                break;
            }
            self.bump();
        }
        self.reject_trailing_operator()?;
        let constant = match disjuncts.as_slice() {
            [Disjunct {
                term:
                    Term::Value(v)
                    | Term::Type {
                        literal: Some(v), ..
                    },
                default: false,
                ..
            }] => Some(v.clone()),
            _ => None,
        };
        Ok((lower_disjunction(disjuncts, &self.fields)?, constant))
    }

    /// The source text of the tokens `first..end`.
    fn text_between(&self, first: usize, end: usize) -> String {
        if end <= first {
            return String::new();
        }
        let from = self.token(first).start;
        let to = self.token(end - 1).end;
        self.src.get(from..to).unwrap_or_default().to_owned()
    }

    pub(super) fn reject_trailing_operator(&self) -> Result<()> {
        match self.kind() {
            Kind::Comma { .. } | Kind::Eof | Kind::Punct("}" | "]" | ")" | "@") => Ok(()),
            Kind::Punct(op) => Err(beyond_subset(
                self.pos(),
                &format!("an expression with `{op}`"),
            )),
            _ => Err(self.unexpected("expected a new line or `,` after the value")),
        }
    }

    pub(super) fn schema_conjunction(&mut self) -> Result<Term> {
        let pos = self.pos();
        let first = (self.schema_unary()?, pos);
        if !self.at_punct("&") {
            return Ok(first.0);
        }
        let mut terms = vec![first];
        while self.at_punct("&") {
            self.bump();
            let pos = self.pos();
            terms.push((self.schema_unary()?, pos));
        }
        Ok(Term::Type {
            schema: lower_conjunction(terms)?,
            literal: None,
        })
    }

    pub(super) fn schema_unary(&mut self) -> Result<Term> {
        let pos = self.pos();
        match self.kind() {
            Kind::Punct(op @ (">=" | "<=" | ">" | "<")) => {
                self.bump();
                match self
                    .scalar_len()
                    .map(|_| self.scalar_literal())
                    .transpose()?
                {
                    Some(Value::Number(limit)) => Ok(Term::Bound { op, limit }),
                    _ => Err(beyond_subset(
                        pos,
                        &format!("a `{op}` bound that is not a number"),
                    )),
                }
            }
            Kind::Punct("=~") => {
                self.bump();
                if self.kind()
                    != (Kind::Str {
                        interpolated: false,
                    })
                {
                    return Err(beyond_subset(
                        pos,
                        "a `=~` pattern that is not a string literal",
                    ));
                }
                let pattern = decode_string(self.text(), self.pos())?;
                self.bump();
                Ok(Term::Pattern(pattern))
            }
            Kind::Punct(op @ ("!=" | "!~" | "!")) => {
                Err(beyond_subset(pos, &format!("the `{op}` constraint")))
            }
            Kind::Punct("*") => Err(beyond_subset(
                pos,
                "a `*` default that does not start a disjunct",
            )),
            _ => {
                let term = self.schema_primary()?;
                if self.at_punct(".") || self.at_punct("(") || self.at_punct("[") {
                    return Err(beyond_subset(
                        self.pos(),
                        &format!("a selector, call or index `{}`", self.text()),
                    ));
                }
                Ok(term)
            }
        }
    }

    pub(super) fn schema_primary(&mut self) -> Result<Term> {
        let pos = self.pos();
        match self.kind() {
            Kind::Str { interpolated: true } => {
                Err(beyond_subset(pos, "a string interpolation `\\(…)`"))
            }
            Kind::Bytes => Err(beyond_subset(pos, "a bytes literal")),
            _ if self.scalar_len().is_some() => Ok(Term::Value(self.scalar_literal()?)),
            Kind::Ident => self.schema_ident(),
            Kind::Punct("{") => self.nested(Self::schema_struct),
            Kind::Punct("[") => self.nested(Self::schema_list),
            Kind::Punct("(") => {
                self.bump();
                let (schema, literal) = self.nested(Self::schema_expression)?;
                self.expect_punct(")", "to close the parenthesis")?;
                Ok(literal.map_or(
                    Term::Type {
                        schema,
                        literal: None,
                    },
                    Term::Value,
                ))
            }
            _ => Err(self
                .unexpected("expected a type such as `string`, `int`, `bool`, a struct or a list")),
        }
    }

    /// A predeclared type, or a named construct beyond the subset.
    pub(super) fn schema_ident(&mut self) -> Result<Term> {
        let pos = self.pos();
        let name = self.text();
        if let Some(schema) = predeclared_type(name) {
            self.bump();
            return Ok(Term::Type {
                schema,
                literal: None,
            });
        }
        if name.starts_with('#') {
            return self.definition_reference();
        }
        let construct = match name {
            "if" | "for" => format!("an `{name}` comprehension"),
            "let" => "a `let` declaration".to_string(),
            "bytes" => "the `bytes` type".to_string(),
            _ => {
                let mut path = name.to_string();
                let mut ahead = 1;
                while self.punct_at(ahead, ".") && self.kind_at(ahead + 1) == Kind::Ident {
                    path.push('.');
                    path.push_str(self.text_at(ahead + 1));
                    ahead += 2;
                }
                if self.punct_at(ahead, "(") {
                    format!("the function call `{path}(…)`")
                } else {
                    format!("the reference `{path}`")
                }
            }
        };
        Err(beyond_subset(pos, &construct))
    }

    pub(super) fn schema_struct(&mut self) -> Result<Term> {
        let definitions = self.struct_definitions(self.index);
        self.scopes.push(definitions);
        let result = self.schema_struct_body();
        self.scopes.pop();
        result
    }

    fn schema_struct_body(&mut self) -> Result<Term> {
        let mut properties = Map::new();
        let mut required = Vec::new();
        let mut additional = None;
        let mut literal = Some(Map::new());
        let mut open = false;
        self.struct_body(|p| {
            let pos = p.pos();
            match p.kind() {
                Kind::Punct("...") => {
                    p.bump();
                    literal = None;
                    open = true;
                }
                // A definition declared in the struct is no field of it: references to it
                // lower its value where they stand.
                Kind::Ident if p.text().starts_with('#') && p.is_field_start() => {
                    p.bump();
                    p.marker();
                    p.expect_punct(":", "after the definition name")?;
                    p.skip_expression()?;
                }
                _ if p.is_pattern_start() => {
                    if additional.is_some() {
                        return Err(beyond_subset(pos, "a second pattern constraint"));
                    }
                    additional = Some(p.schema_pattern()?);
                    literal = None;
                }
                _ if p.is_field_start() => {
                    let field = p.schema_field()?;
                    if properties.contains_key(&field.name) {
                        return Err(beyond_subset(
                            field.pos,
                            &format!("declaring `{}` twice (unification)", field.name),
                        ));
                    }
                    match (&mut literal, field.constant) {
                        (Some(values), Some(value)) => {
                            values.insert(field.name.clone(), value);
                        }
                        _ => literal = None,
                    }
                    if field.required {
                        required.push(field.name.clone());
                    }
                    properties.insert(field.name, Value::Object(field.schema));
                }
                _ => return Err(p.struct_element_error()),
            }
            p.field_end()
        })?;
        // A struct of a definition is closed: only what it declares is allowed.
        let closed = self.closed && !open && additional.is_none();
        let mut schema = object_schema(properties, required, additional);
        if closed {
            schema.insert("additionalProperties".into(), Value::Bool(false));
        }
        Ok(Term::Type {
            schema,
            literal: literal.map(Value::Object),
        })
    }

    /// The error for something inside a parameter struct that is not a field.
    pub(super) fn struct_element_error(&self) -> CueError {
        let pos = self.pos();
        match self.kind() {
            Kind::Ident if matches!(self.text(), "if" | "for") => {
                beyond_subset(pos, &format!("an `{}` comprehension", self.text()))
            }
            Kind::Ident if self.text() == "let" => beyond_subset(pos, "a `let` declaration"),
            Kind::Punct("[") => beyond_subset(pos, "a pattern constraint other than `[string]: T`"),
            Kind::Ident | Kind::Punct("(") => beyond_subset(
                pos,
                &format!("the embedded expression starting with `{}`", self.text()),
            ),
            _ => self.unexpected("expected a field"),
        }
    }

    pub(super) fn schema_list(&mut self) -> Result<Term> {
        let open = self.pos();
        self.bump();
        if self.at_punct("...") {
            self.bump();
            let items = if self.at_punct("]") {
                Map::new()
            } else {
                self.nested(Self::schema_expression)?.0
            };
            self.expect_punct("]", "to close the list type `[...T]`")?;
            return Ok(Term::Type {
                schema: array_schema(items),
                literal: None,
            });
        }
        let mut values = Vec::new();
        loop {
            let pos = self.pos();
            match self.kind() {
                Kind::Punct("]") => {
                    self.bump();
                    return Ok(Term::Value(Value::Array(values)));
                }
                Kind::Eof => return Err(error(open, "this `[` is never closed")),
                Kind::Punct("...") => {
                    return Err(beyond_subset(
                        pos,
                        "a list with fixed leading elements `[T, ...U]`",
                    ));
                }
                _ => match self.nested(Self::schema_expression)? {
                    (_, Some(value)) => values.push(value),
                    (_, None) => {
                        return Err(beyond_subset(
                            pos,
                            "a list element that is not a concrete value",
                        ));
                    }
                },
            }
            match self.kind() {
                Kind::Comma { .. } => self.bump(),
                Kind::Punct("]") => {}
                _ => return Err(self.unexpected("expected `,` or `]` after the list element")),
            }
        }
    }
}

/// The schema of a predeclared CUE type, or `None` for any other name.
pub(super) fn predeclared_type(name: &str) -> Option<Schema> {
    let typed = |ty: &str| object_map([("type", Value::from(ty))]);
    let ranged = |min: i64, max: Option<u64>| {
        let mut schema = typed("integer");
        schema.insert("minimum".into(), Value::from(min));
        if let Some(max) = max {
            schema.insert("maximum".into(), Value::from(max));
        }
        schema
    };
    Some(match name {
        "string" => typed("string"),
        "bool" => typed("boolean"),
        "int" | "int64" => typed("integer"),
        "float" | "number" | "float32" | "float64" => typed("number"),
        "uint" | "uint64" => ranged(0, None),
        "int8" => ranged(-128, Some(127)),
        "int16" => ranged(-32_768, Some(32_767)),
        "int32" => ranged(-2_147_483_648, Some(2_147_483_647)),
        "uint8" => ranged(0, Some(255)),
        "uint16" => ranged(0, Some(65_535)),
        "uint32" => ranged(0, Some(4_294_967_295)),
        "_" => Map::new(),
        _ => return None,
    })
}

pub(super) fn object_map<const N: usize>(entries: [(&str, Value); N]) -> Schema {
    entries
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

pub(super) fn object_schema(
    properties: Map<String, Value>,
    required: Vec<String>,
    additional: Option<Schema>,
) -> Schema {
    let mut schema = object_map([("type", Value::from("object"))]);
    if !properties.is_empty() {
        schema.insert("properties".into(), Value::Object(properties));
    }
    if !required.is_empty() {
        schema.insert(
            "required".into(),
            Value::Array(required.into_iter().map(Value::String).collect()),
        );
    }
    if let Some(additional) = additional {
        schema.insert("additionalProperties".into(), Value::Object(additional));
    }
    schema
}

pub(super) fn array_schema(items: Schema) -> Schema {
    object_map([
        ("type", Value::from("array")),
        ("items", Value::Object(items)),
    ])
}

/// The JSON Schema type name of a concrete value.
pub(super) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Whether `value` is an instance of `schema` as far as its `type` and `enum` go.
pub(super) fn schema_accepts(schema: &Schema, value: &Value) -> bool {
    let type_ok = match schema.get("type").and_then(Value::as_str) {
        None => true,
        Some("number") => value.is_number(),
        Some(ty) => json_type(value) == ty,
    };
    let enum_ok = match schema.get("enum") {
        Some(Value::Array(options)) => options.contains(value),
        _ => true,
    };
    type_ok && enum_ok
}

/// The schema of a single term.
pub(super) fn lower_term(term: Term, pos: Pos) -> Result<Schema> {
    match term {
        Term::Value(value) => {
            let mut schema = object_map([("type", Value::from(json_type(&value)))]);
            if !value.is_array() && !value.is_object() {
                schema.insert("enum".into(), Value::Array(vec![value.clone()]));
            }
            schema.insert("default".into(), value);
            Ok(schema)
        }
        Term::Type { schema, .. } => Ok(schema),
        Term::Bound { .. } | Term::Pattern(_) => lower_conjunction(vec![(term, pos)]),
    }
}

/// `T & >=a & <=b & =~"re"`: one type (or none) refined by bounds and patterns.
pub(super) fn lower_conjunction(terms: Vec<(Term, Pos)>) -> Result<Schema> {
    let mut base: Option<Schema> = None;
    let mut constraints = Vec::new();
    for (term, pos) in terms {
        match term {
            Term::Type { schema, .. } => {
                if base.is_some() {
                    return Err(beyond_subset(pos, "a conjunction `&` of two types"));
                }
                base = Some(schema);
            }
            Term::Value(_) => {
                return Err(beyond_subset(
                    pos,
                    "a conjunction `&` with a concrete value",
                ));
            }
            constraint => constraints.push((constraint, pos)),
        }
    }
    let implied = if constraints
        .iter()
        .any(|(t, _)| matches!(t, Term::Pattern(_)))
    {
        "string"
    } else {
        "number"
    };
    let mut schema = base.unwrap_or_else(|| object_map([("type", Value::from(implied))]));
    for (constraint, pos) in constraints {
        match constraint {
            Term::Bound { op, limit } => apply_bound(&mut schema, op, &limit, pos)?,
            Term::Pattern(pattern) => {
                if schema.get("type").and_then(Value::as_str) != Some("string") {
                    return Err(beyond_subset(
                        pos,
                        "a `=~` pattern on a type other than string",
                    ));
                }
                if schema
                    .insert("pattern".into(), Value::String(pattern))
                    .is_some()
                {
                    return Err(beyond_subset(pos, "a second `=~` pattern"));
                }
            }
            Term::Type { .. } | Term::Value(_) => {}
        }
    }
    Ok(schema)
}

/// Add `minimum`/`maximum` for a bound, keeping the tighter one. Exclusive bounds are only
/// accepted on integers (where `>n` is `>=n+1`): JSON Schema and OpenAPI 3.0 disagree on how
/// to write them, and KubeVela reads these schemas as OpenAPI 3.0.
pub(super) fn apply_bound(schema: &mut Schema, op: &str, limit: &Number, pos: Pos) -> Result<()> {
    let ty = schema.get("type").and_then(Value::as_str).unwrap_or("");
    if ty != "integer" && ty != "number" {
        return Err(beyond_subset(
            pos,
            &format!("the bound `{op}` on a non-numeric type"),
        ));
    }
    let exclusive = |shift: i64| -> Result<Number> {
        match (ty, limit.as_i64()) {
            ("integer", Some(n)) => n
                .checked_add(shift)
                .map(Number::from)
                .ok_or_else(|| beyond_subset(pos, &format!("the bound `{op}{n}`"))),
            _ => Err(beyond_subset(
                pos,
                &format!("the exclusive bound `{op}` on a non-integer type"),
            )),
        }
    };
    let (key, value, tighter_is_greater) = match op {
        ">=" => ("minimum", limit.clone(), true),
        ">" => ("minimum", exclusive(1)?, true),
        "<=" => ("maximum", limit.clone(), false),
        _ => ("maximum", exclusive(-1)?, false),
    };
    let new = value.as_f64().unwrap_or(0.0);
    let keep_old = schema.get(key).and_then(Value::as_f64).is_some_and(|old| {
        if tighter_is_greater {
            old >= new
        } else {
            old <= new
        }
    });
    if !keep_old {
        schema.insert(key.into(), Value::Number(value));
    }
    Ok(())
}

/// `*default | type`, enums `"a" | "b"`, or a single term. `fields` is where the declaration
/// is (`resources`, `cpu`), for the messages.
pub(super) fn lower_disjunction(disjuncts: Vec<Disjunct>, fields: &[String]) -> Result<Schema> {
    let first_pos = disjuncts
        .first()
        .map_or(Pos { line: 1, column: 1 }, |d| d.pos);
    let mut disjuncts = disjuncts;
    if disjuncts.len() == 1 && disjuncts.first().is_some_and(|d| !d.default) {
        let only = disjuncts.remove(0);
        return lower_term(only.term, only.pos);
    }
    let mut default: Option<(Value, Pos)> = None;
    let mut literals: Vec<(Value, Pos)> = Vec::new();
    let mut types: Vec<(Schema, Pos, String)> = Vec::new();
    for Disjunct {
        term,
        default: is_default,
        pos,
        text,
    } in disjuncts
    {
        let concrete = match &term {
            Term::Value(value) => Some(value.clone()),
            Term::Type {
                literal: Some(value),
                ..
            } if is_default => Some(value.clone()),
            _ => None,
        };
        if is_default {
            if default.is_some() {
                return Err(beyond_subset(pos, "a second `*` default"));
            }
            let value = concrete
                .ok_or_else(|| beyond_subset(pos, "a `*` default that is not a concrete value"))?;
            default = Some((value.clone(), pos));
            literals.push((value, pos));
        } else if let Some(value) = concrete {
            literals.push((value, pos));
        } else {
            types.push((lower_term(term, pos)?, pos, text));
        }
    }
    if let Some((_, pos, _)) = types.get(1) {
        return Err(beyond_subset(
            *pos,
            "a disjunction of several types (such as `string | int`)",
        ));
    }
    // `null` beside a type or an enum (`*null | string`): the type also allows null.
    let nullable = literals.iter().any(|(v, _)| v.is_null())
        && (!types.is_empty() || literals.iter().any(|(v, _)| !v.is_null()));
    if nullable {
        literals.retain(|(v, _)| !v.is_null());
    }
    let mut schema = match types.pop() {
        Some((schema, _, written)) => {
            if let Some((value, pos)) = literals.iter().find(|(v, _)| !schema_accepts(&schema, v)) {
                if default.as_ref().is_some_and(|(_, at)| at == pos) {
                    return Err(default_type_error(fields, value, &schema, &written, *pos));
                }
                return Err(beyond_subset(
                    *pos,
                    &format!(
                        "a disjunction of several types ({} and a type)",
                        short(value)
                    ),
                ));
            }
            schema
        }
        None => enum_schema(&literals, first_pos)?,
    };
    if nullable {
        allow_null(&mut schema);
    }
    if let Some((value, _)) = default {
        schema.insert("default".into(), value);
    }
    Ok(schema)
}

/// The start of the message of a default whose type is not the declared one.
pub(crate) const DEFAULT_TYPE_MISMATCH: &str = "type mismatch: the default of";

/// `*"1" | int`: the default is not of the field's type. Names the field, the default and its
/// type, the declared type, and the default written in that type when the text converts.
fn default_type_error(
    fields: &[String],
    value: &Value,
    schema: &Schema,
    written: &str,
    pos: Pos,
) -> CueError {
    let field = std::iter::once("parameter")
        .chain(fields.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(".");
    let expected = schema.get("type").and_then(Value::as_str).unwrap_or("");
    let found = match value {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(n) if n.is_f64() => "a float",
        Value::Number(_) => "an int",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a struct",
    };
    let written = if written.is_empty() {
        match expected {
            "integer" => "int",
            "boolean" => "bool",
            "array" => "[...]",
            "object" => "{...}",
            other => other,
        }
    } else {
        written
    };
    let converted = value.as_str().and_then(|text| match expected {
        "integer" => text.trim().parse::<i64>().ok().map(|n| n.to_string()),
        "number" => text
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite())
            .map(|_| text.trim().to_owned()),
        "boolean" => matches!(text.trim(), "true" | "false").then(|| text.trim().to_owned()),
        _ => None,
    });
    let converted = converted.or_else(|| match (expected, value) {
        ("string", Value::Number(_) | Value::Bool(_)) => Some(format!("\"{value}\"")),
        _ => None,
    });
    let fix = converted.map_or_else(
        || "give it a default of that type or change the type".to_owned(),
        |default| format!("write `*{default} | {written}`, or change the type"),
    );
    error(
        pos,
        format!(
            "{DEFAULT_TYPE_MISMATCH} `{field}` is `{}` ({found}), but its type is `{written}`; {fix}",
            short(value)
        ),
    )
}

/// Lets `schema` also accept `null`: `null` joins its type (and its enum, when it has one).
fn allow_null(schema: &mut Schema) {
    let null = Value::from("null");
    match schema.get_mut("type") {
        Some(Value::String(ty)) => {
            let ty = Value::String(std::mem::take(ty));
            schema.insert("type".into(), Value::Array(vec![ty, null]));
        }
        Some(Value::Array(types)) if !types.contains(&null) => types.push(null),
        // Any type (`_`) already accepts null.
        _ => {}
    }
    if let Some(Value::Array(options)) = schema.get_mut("enum") {
        if !options.contains(&Value::Null) {
            options.push(Value::Null);
        }
    }
}

/// `"a" | "b" | "c"`: an enum of scalars of one type.
pub(super) fn enum_schema(literals: &[(Value, Pos)], pos: Pos) -> Result<Schema> {
    let mut ty: Option<&'static str> = None;
    for (value, at) in literals {
        let this = json_type(value);
        if matches!(this, "array" | "object") {
            return Err(beyond_subset(*at, "an enum of lists or structs"));
        }
        ty = match (ty, this) {
            (None, this) => Some(this),
            (Some(prev), this) if prev == this => Some(prev),
            (Some("integer" | "number"), "integer" | "number") => Some("number"),
            _ => return Err(beyond_subset(*at, "an enum mixing value types")),
        };
    }
    let mut schema = object_map([("type", Value::from(ty.unwrap_or("string")))]);
    let mut options: Vec<Value> = Vec::new();
    for (value, _) in literals {
        if !options.contains(value) {
            options.push(value.clone());
        }
    }
    if options.is_empty() {
        return Err(beyond_subset(pos, "an empty disjunction"));
    }
    schema.insert("enum".into(), Value::Array(options));
    Ok(schema)
}

/// The description of a field from its doc comment: the `+usage=` text (continued by the
/// following lines up to the next `+tag` line), or else the comment lines that are not `+tag`
/// markers, as KubeVela's schema generator does.
pub(super) fn describe_doc(doc: &[String]) -> Option<String> {
    let lines: Vec<&str> = doc.iter().map(|line| line.trim()).collect();
    let usage_at = lines.iter().position(|line| line.starts_with("+usage="));
    let described: Vec<&str> = match usage_at {
        Some(at) => {
            let first = lines
                .get(at)
                .and_then(|l| l.strip_prefix("+usage="))
                .unwrap_or("");
            let rest = lines
                .iter()
                .skip(at + 1)
                .take_while(|l| !l.starts_with('+'));
            std::iter::once(first.trim()).chain(rest.copied()).collect()
        }
        None => lines.into_iter().filter(|l| !l.starts_with('+')).collect(),
    };
    let text = described.join("\n").trim().to_string();
    if text.is_empty() {
        None
    } else {
        Some(text)
    }
}
