//! Literal values (the metadata blocks of definitions and config templates).

#[allow(unused_imports)]
use serde_json::{Map, Number, Value};

use super::{error, not_literal, Kind, Label, Parser, Pos, Result};

// Literal values (metadata blocks)
// ---------------------------------------------------------------------------------------------

/// A literal CUE value with the position of its first token.
#[derive(Debug)]
pub(super) struct Lit {
    pub(super) pos: Pos,
    pub(super) kind: LitKind,
}

#[derive(Debug)]
pub(super) enum LitKind {
    Scalar(Value),
    List(Vec<Lit>),
    /// Fields in source order; a repeated key appears once per declaration.
    Struct(Vec<LitField>),
}

#[derive(Debug)]
pub(super) struct LitField {
    pub(super) key: String,
    pub(super) pos: Pos,
    pub(super) value: Lit,
}

pub(super) fn reject_non_literal_label(label: &Label) -> Result<()> {
    if label.ident && label.name.starts_with('#') {
        return Err(not_literal(
            label.pos,
            &format!("the definition `{}`", label.name),
        ));
    }
    if label.ident && label.name.starts_with('_') {
        return Err(not_literal(
            label.pos,
            &format!("the hidden field `{}`", label.name),
        ));
    }
    Ok(())
}

impl Parser<'_> {
    /// A field value, which may be the `a: b: c` shorthand for nested structs.
    pub(super) fn lit_field_value(&mut self) -> Result<Lit> {
        if self.is_field_start() {
            let pos = self.pos();
            let field = self.lit_field()?;
            return Ok(Lit {
                pos,
                kind: LitKind::Struct(vec![field]),
            });
        }
        let value = self.lit_value()?;
        self.reject_operator()?;
        Ok(value)
    }

    pub(super) fn lit_field(&mut self) -> Result<LitField> {
        let label = self.label()?;
        reject_non_literal_label(&label)?;
        if self.at_punct("?") || self.at_punct("!") {
            return Err(not_literal(
                self.pos(),
                &format!("the `{}` field marker", self.text()),
            ));
        }
        self.expect_punct(":", "after the field name")?;
        let value = self.nested(Self::lit_field_value)?;
        Ok(LitField {
            key: label.name,
            pos: label.pos,
            value,
        })
    }

    pub(super) fn lit_value(&mut self) -> Result<Lit> {
        let pos = self.pos();
        if self.scalar_len().is_some() {
            return Ok(Lit {
                pos,
                kind: LitKind::Scalar(self.scalar_literal()?),
            });
        }
        match self.kind() {
            Kind::Punct("{") => self.nested(Self::lit_struct),
            Kind::Punct("[") => self.nested(Self::lit_list),
            Kind::Str { interpolated: true } => {
                Err(not_literal(pos, "a string interpolation `\\(…)`"))
            }
            Kind::Bytes => Err(error(
                pos,
                "bytes literals ('…') are not supported; use a double-quoted string",
            )),
            Kind::Ident => Err(not_literal(pos, &self.non_literal_ident())),
            Kind::Punct("*") => Err(not_literal(pos, "a default marker `*`")),
            Kind::Punct("(") => Err(not_literal(pos, "a parenthesized expression")),
            Kind::Punct(op) if op != "}" && op != "]" && op != ")" => {
                Err(not_literal(pos, &format!("the operator `{op}`")))
            }
            _ => Err(self.unexpected("expected a literal value")),
        }
    }

    /// Describe a non-literal identifier: a comprehension keyword, a type or a reference.
    pub(super) fn non_literal_ident(&self) -> String {
        let name = self.text();
        match name {
            "if" | "for" => format!("an `{name}` comprehension"),
            "let" => "a `let` declaration".to_string(),
            "string" | "int" | "float" | "number" | "bool" | "bytes" | "uint" | "_" => {
                format!("the type `{name}`")
            }
            _ if self.punct_at(1, "(") => format!("the function call `{name}(…)`"),
            _ => format!("the reference `{name}`"),
        }
    }

    /// After a literal, anything that would make it an expression is an error.
    pub(super) fn reject_operator(&self) -> Result<()> {
        match self.kind() {
            Kind::Punct("}" | "]" | ")") | Kind::Comma { .. } | Kind::Eof => Ok(()),
            Kind::Punct("@") => Err(not_literal(self.pos(), "a field attribute `@…`")),
            Kind::Punct(op) => Err(not_literal(
                self.pos(),
                &format!("an expression with `{op}`"),
            )),
            _ => Err(self.unexpected("expected a new line or `,` after the value")),
        }
    }

    pub(super) fn lit_struct(&mut self) -> Result<Lit> {
        let pos = self.pos();
        let mut fields = Vec::new();
        self.struct_body(|p| match p.kind() {
            Kind::Punct("...") => Err(not_literal(p.pos(), "an open struct `...`")),
            Kind::Punct("[") => Err(not_literal(p.pos(), "a pattern constraint `[…]: …`")),
            Kind::Ident if matches!(p.text(), "if" | "for" | "let") && !p.punct_at(1, ":") => {
                Err(not_literal(p.pos(), &p.non_literal_ident()))
            }
            _ if p.is_field_start() => {
                fields.push(p.lit_field()?);
                p.field_end()
            }
            Kind::Ident => Err(not_literal(
                p.pos(),
                &format!("the embedded {}", p.non_literal_ident()),
            )),
            Kind::Punct("(") => Err(not_literal(p.pos(), "an embedded expression")),
            _ => Err(p.unexpected("expected a field such as `key: value`")),
        })?;
        Ok(Lit {
            pos,
            kind: LitKind::Struct(fields),
        })
    }

    pub(super) fn lit_list(&mut self) -> Result<Lit> {
        let pos = self.pos();
        self.bump();
        let mut items = Vec::new();
        loop {
            match self.kind() {
                Kind::Punct("]") => {
                    self.bump();
                    return Ok(Lit {
                        pos,
                        kind: LitKind::List(items),
                    });
                }
                Kind::Punct("...") => return Err(not_literal(self.pos(), "an open list `...`")),
                Kind::Eof => return Err(error(pos, "this `[` is never closed")),
                _ => {
                    items.push(self.lit_value()?);
                    self.reject_operator()?;
                    match self.kind() {
                        Kind::Comma { .. } => self.bump(),
                        Kind::Punct("]") => {}
                        _ => {
                            return Err(
                                self.unexpected("expected `,` or `]` after the list element")
                            );
                        }
                    }
                }
            }
        }
    }
}

/// Turn a literal into JSON, unifying repeated keys by deep merge.
pub(super) fn lit_to_json(lit: &Lit) -> Result<Value> {
    match &lit.kind {
        LitKind::Scalar(value) => Ok(value.clone()),
        LitKind::List(items) => items
            .iter()
            .map(lit_to_json)
            .collect::<Result<Vec<_>>>()
            .map(Value::Array),
        LitKind::Struct(fields) => {
            let mut map = Map::new();
            for field in fields {
                let value = lit_to_json(&field.value)?;
                match map.get_mut(&field.key) {
                    Some(existing) => unify(existing, value, &field.key, field.pos)?,
                    None => {
                        map.insert(field.key.clone(), value);
                    }
                }
            }
            Ok(Value::Object(map))
        }
    }
}

/// CUE unification of two concrete values: structs merge, equal values agree, others conflict.
pub(super) fn unify(target: &mut Value, value: Value, key: &str, pos: Pos) -> Result<()> {
    match (target, value) {
        (Value::Object(into), Value::Object(from)) => {
            for (k, v) in from {
                match into.get_mut(&k) {
                    Some(existing) => unify(existing, v, &k, pos)?,
                    None => {
                        into.insert(k, v);
                    }
                }
            }
            Ok(())
        }
        (Value::Array(into), Value::Array(from)) if into.len() == from.len() => {
            for (existing, v) in into.iter_mut().zip(from) {
                unify(existing, v, key, pos)?;
            }
            Ok(())
        }
        (existing, value) if *existing == value => Ok(()),
        (existing, value) => Err(error(
            pos,
            format!(
                "conflicting values for `{key}`: {} and {} (a repeated key is unified)",
                short(existing),
                short(&value)
            ),
        )),
    }
}

pub(super) fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 60 {
        format!("{}…", text.chars().take(60).collect::<String>())
    } else {
        text
    }
}

/// The first value declared for `key` in a literal struct.
pub(super) fn lit_lookup<'l>(lit: &'l Lit, key: &str) -> Option<&'l Lit> {
    match &lit.kind {
        LitKind::Struct(fields) => fields.iter().find(|f| f.key == key).map(|f| &f.value),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
