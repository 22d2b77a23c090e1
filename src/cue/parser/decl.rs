//! File level (package, imports, attributes), structs, fields, patterns and comprehensions.

use std::sync::Arc;

use super::{PResult, Parser};
use crate::cue::ast::{
    Clause, Comprehension, Decl, Expr, ExprKind, Field, File, Import, Label, Marker, Pos, StructLit,
};
use crate::cue::error::Error;
use crate::cue::lexer::Kind;

impl Parser<'_> {
    // --- file level ------------------------------------------------------------------------

    pub(super) fn file(&mut self) -> PResult<File> {
        self.skip_attributes()?;
        let package = self.package()?;
        let mut imports = Vec::new();
        loop {
            self.skip_commas();
            if !self.at_keyword("import") {
                break;
            }
            self.bump();
            if self.at("(") {
                self.bump();
                loop {
                    self.skip_commas();
                    if self.at(")") {
                        self.bump();
                        break;
                    }
                    imports.push(self.import_spec()?);
                }
            } else {
                imports.push(self.import_spec()?);
            }
        }
        let pos = self.pos();
        let body = self.struct_body(pos, true)?;
        Ok(File {
            package,
            imports,
            body: Arc::new(body),
        })
    }

    pub(super) fn skip_attributes(&mut self) -> PResult<()> {
        self.skip_commas();
        while self.at("@") {
            self.attribute()?;
            self.skip_commas();
        }
        Ok(())
    }

    pub(super) fn package(&mut self) -> PResult<Option<String>> {
        self.skip_commas();
        if !self.at_keyword("package") || self.at_n(1, ":") {
            return Ok(None);
        }
        self.bump();
        if self.kind() != Kind::Ident {
            return Err(self.unexpected("a package name"));
        }
        let name = self.text().to_string();
        self.bump();
        Ok(Some(name))
    }

    pub(super) fn import_spec(&mut self) -> PResult<Import> {
        let pos = self.pos();
        let alias = if self.kind() == Kind::Ident {
            let alias = self.text().to_string();
            self.bump();
            Some(alias)
        } else {
            None
        };
        if !matches!(
            self.kind(),
            Kind::Str {
                interpolated: false
            }
        ) {
            return Err(self.unexpected("an import path string"));
        }
        let path = self.plain_string()?;
        self.bump();
        let path = path.split(':').next().unwrap_or_default().to_string();
        let alias =
            alias.unwrap_or_else(|| path.rsplit('/').next().unwrap_or_default().to_string());
        Ok(Import { alias, path, pos })
    }

    /// `@name(…)`: attributes carry no meaning for evaluation and are skipped.
    pub(super) fn attribute(&mut self) -> PResult<()> {
        self.bump();
        if self.kind() == Kind::Ident {
            self.bump();
        }
        if self.at("(") {
            let mut level = 0usize;
            loop {
                match self.kind() {
                    Kind::Eof => return Err(self.unexpected("`)` closing the attribute")),
                    Kind::Punct("(") => level += 1,
                    Kind::Punct(")") => {
                        level = level.saturating_sub(1);
                        if level == 0 {
                            self.bump();
                            break;
                        }
                    }
                    _ => {}
                }
                self.bump();
            }
        }
        Ok(())
    }

    // --- structs -------------------------------------------------------------------------

    /// Declarations up to `}` (or the end of the file when `top`).
    pub(super) fn struct_body(&mut self, pos: Pos, top: bool) -> PResult<StructLit> {
        let mut lit = StructLit {
            decls: Vec::new(),
            open: false,
            pos,
        };
        loop {
            self.skip_commas();
            match self.kind() {
                Kind::Eof if top => return Ok(lit),
                Kind::Eof => return Err(self.unexpected("`}` closing the struct")),
                Kind::Punct("}") if !top => {
                    self.bump();
                    return Ok(lit);
                }
                Kind::Punct("@") => {
                    self.attribute()?;
                    continue;
                }
                Kind::Punct("...") => {
                    self.bump();
                    if !self.at_comma() && !self.at("}") && self.kind() != Kind::Eof {
                        self.expr()?;
                    }
                    lit.open = true;
                }
                _ => {
                    let decl = self.decl()?;
                    lit.decls.push(decl);
                }
            }
            if !(self.at_comma() || self.at("}") || self.kind() == Kind::Eof) {
                return Err(self.unexpected("`,` or a new line after the declaration"));
            }
        }
    }

    pub(super) fn decl(&mut self) -> PResult<Decl> {
        let pos = self.pos();
        if self.kind() == Kind::Ident && !self.label_follows(1) {
            match self.text() {
                "let" => {
                    self.bump();
                    let (name, expr) = self.let_clause()?;
                    return Ok(Decl::Let { name, expr });
                }
                "for" | "if" => {
                    return Ok(Decl::Comprehension(self.comprehension()?));
                }
                _ => {}
            }
        }
        if self.kind() == Kind::Ident && self.at_n(1, "=") {
            return Err(Error::unsupported("aliases (`X=…`) are not supported").at_pos(pos));
        }
        if self.at("[") {
            let save = self.index;
            if let Some(decl) = self.try_pattern()? {
                return Ok(decl);
            }
            self.index = save;
        }
        if let Some(field) = self.try_field()? {
            return Ok(Decl::Field(field));
        }
        Ok(Decl::Embed(self.expr()?))
    }

    /// Whether the token `ahead` starts `:`, `?:` or `!:` (so the token before is a label).
    pub(super) fn label_follows(&self, ahead: usize) -> bool {
        self.at_n(ahead, ":")
            || ((self.at_n(ahead, "?") || self.at_n(ahead, "!")) && self.at_n(ahead + 1, ":"))
    }

    pub(super) fn try_pattern(&mut self) -> PResult<Option<Decl>> {
        self.bump();
        let alias = if self.kind() == Kind::Ident && self.at_n(1, "=") {
            let name = self.text().to_string();
            self.bump();
            self.bump();
            Some(name)
        } else {
            None
        };
        let Ok(label) = self.deeper(Parser::expr) else {
            return Ok(None);
        };
        if !self.at("]") || !self.at_n(1, ":") {
            return Ok(None);
        }
        self.bump();
        self.bump();
        let value = self.field_value()?;
        Ok(Some(Decl::Pattern {
            label,
            value,
            alias,
        }))
    }

    /// A field if the next tokens are a label and `:`; otherwise nothing is consumed.
    pub(super) fn try_field(&mut self) -> PResult<Option<Field>> {
        let pos = self.pos();
        let save = self.index;
        let label = match self.kind() {
            Kind::Ident if self.label_follows(1) => {
                let name = self.text().to_string();
                self.bump();
                Label::Ident(name)
            }
            Kind::Str { interpolated } if self.label_follows(1) => {
                let label = if interpolated {
                    Label::Dynamic(self.string_expr()?)
                } else {
                    Label::Str(self.plain_string()?)
                };
                self.bump();
                label
            }
            Kind::Punct("(") => {
                self.bump();
                let expr = self.deeper(Parser::expr)?;
                if !self.at(")") || !self.label_follows(1) {
                    self.index = save;
                    return Ok(None);
                }
                self.bump();
                Label::Dynamic(expr)
            }
            _ => return Ok(None),
        };
        let marker = if self.at("?") {
            self.bump();
            Marker::Optional
        } else if self.at("!") {
            self.bump();
            Marker::Required
        } else {
            Marker::Regular
        };
        self.expect(":", "after the field name")?;
        let value = self.field_value()?;
        while self.at("@") {
            self.attribute()?;
        }
        Ok(Some(Field {
            label,
            marker,
            value,
            pos,
        }))
    }

    /// A field's value: an expression or the `b: c` of `a: b: c`.
    pub(super) fn field_value(&mut self) -> PResult<Arc<Expr>> {
        let pos = self.pos();
        let nested = match self.kind() {
            Kind::Ident | Kind::Str { .. } => self.label_follows(1),
            _ => false,
        };
        if !nested && self.at("[") {
            let save = self.index;
            let pattern = self.deeper(Parser::try_pattern)?;
            if let Some(decl) = pattern {
                return Ok(Arc::new(Expr {
                    kind: ExprKind::Struct(Arc::new(StructLit {
                        decls: vec![decl],
                        open: false,
                        pos,
                    })),
                    pos,
                }));
            }
            self.index = save;
        }
        if !nested {
            return self.expr();
        }
        self.deeper(|p| {
            let field = p.try_field()?.ok_or_else(|| p.unexpected("a field"))?;
            Ok(Arc::new(Expr {
                kind: ExprKind::Struct(Arc::new(StructLit {
                    decls: vec![Decl::Field(field)],
                    open: false,
                    pos,
                })),
                pos,
            }))
        })
    }

    pub(super) fn let_clause(&mut self) -> PResult<(String, Arc<Expr>)> {
        if self.kind() != Kind::Ident {
            return Err(self.unexpected("a name after `let`"));
        }
        let name = self.text().to_string();
        self.bump();
        self.expect("=", "after the `let` name")?;
        Ok((name, self.expr()?))
    }

    pub(super) fn comprehension(&mut self) -> PResult<Arc<Comprehension>> {
        let pos = self.pos();
        let mut clauses = Vec::new();
        loop {
            if self.kind() != Kind::Ident {
                break;
            }
            match self.text() {
                "for" => {
                    self.bump();
                    let first = self.ident("a variable name after `for`")?;
                    let (key, value) = if self.at_comma() && self.text() == "," {
                        self.bump();
                        (Some(first), self.ident("a value variable after `for k,`")?)
                    } else {
                        (None, first)
                    };
                    if !self.at_keyword("in") {
                        return Err(self.unexpected("`in`"));
                    }
                    self.bump();
                    let source = self.expr()?;
                    clauses.push(Clause::For { key, value, source });
                }
                "if" => {
                    self.bump();
                    clauses.push(Clause::If(self.expr()?));
                }
                "let" => {
                    self.bump();
                    let (name, expr) = self.let_clause()?;
                    clauses.push(Clause::Let { name, expr });
                }
                _ => break,
            }
        }
        if !self.at("{") {
            return Err(self.unexpected("`{` starting the body of the comprehension"));
        }
        let body = self.operand()?;
        Ok(Arc::new(Comprehension { clauses, body, pos }))
    }

    pub(super) fn ident(&mut self, wanted: &str) -> PResult<String> {
        if self.kind() != Kind::Ident {
            return Err(self.unexpected(wanted));
        }
        let name = self.text().to_string();
        self.bump();
        Ok(name)
    }
}
