//! The JSON Schema lowering of `template.parameter` (and of `parameter.cue`).

#[allow(unused_imports)]
use serde_json::{Map, Number, Value};

use super::lowering::{
    array_schema, describe_doc, lower_conjunction, lower_disjunction, object_schema,
    predeclared_type,
};
use super::{
    beyond_subset, decode_string, error, object, CueError, Kind, Marker, Parser, Pos, Result,
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
