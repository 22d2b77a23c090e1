//! Recursive-descent parser of the supported CUE subset into the [`super::ast`] tree.
//!
//! Tokens come from the shared [`super::lexer`]; positions are mapped to the file index so
//! that errors can name the file. Nesting is bounded by `max_depth`, so deeply nested input
//! is a clear error instead of a stack overflow.

use std::sync::Arc;

use super::ast::{
    BinOp, Clause, Comprehension, Decl, Elem, Expr, ExprKind, Field, File, Import, Label, Marker,
    Pos, StructLit, UnOp,
};
use super::error::{Error, ErrorKind};
use super::lexer::{self, Kind, Lexer, Token};

mod literal;

use literal::number;

/// Parse one file. `file` is its index among the package's sources, `name` its name.
pub(crate) fn parse_file(text: &str, file: u32, max_depth: usize) -> Result<File, Error> {
    let text = lexer::strip_bom(text);
    let mut parser = Parser::new(text, file, Base::default(), max_depth)?;
    parser.file()
}

/// Only the `package` clause of a file.
pub(crate) fn parse_package(text: &str) -> Result<Option<String>, Error> {
    let text = lexer::strip_bom(text);
    let mut parser = Parser::new(text, 0, Base::default(), 16)?;
    parser.skip_attributes()?;
    parser.package()
}

/// Where a sub-parser's text starts (for interpolations).
#[derive(Clone, Copy)]
struct Base {
    line: u32,
    column: u32,
}

impl Default for Base {
    fn default() -> Self {
        Base { line: 1, column: 1 }
    }
}

pub(crate) fn syntax(pos: Pos, message: impl Into<String>) -> Error {
    Error {
        kind: ErrorKind::Syntax,
        path: None,
        message: message.into(),
        positions: vec![super::error::Position {
            file: pos.file.to_string(),
            line: pos.line,
            column: pos.column,
        }],
    }
}

fn from_lex(e: &lexer::CueError, file: u32, base: Base) -> Error {
    syntax(map_pos(file, base, e.line, e.column), e.message.clone())
}

fn map_pos(file: u32, base: Base, line: usize, column: usize) -> Pos {
    let line = u32::try_from(line).unwrap_or(u32::MAX);
    let column = u32::try_from(column).unwrap_or(u32::MAX);
    if line <= 1 {
        Pos {
            file,
            line: base.line,
            column: base.column.saturating_add(column.saturating_sub(1)),
        }
    } else {
        Pos {
            file,
            line: base.line.saturating_add(line - 1),
            column,
        }
    }
}

struct Parser<'a> {
    src: &'a str,
    tokens: Vec<Token>,
    index: usize,
    depth: usize,
    max_depth: usize,
    file: u32,
    base: Base,
}

type PResult<T> = Result<T, Error>;

impl<'a> Parser<'a> {
    fn new(src: &'a str, file: u32, base: Base, max_depth: usize) -> PResult<Self> {
        let tokens = Lexer::new(src)
            .run()
            .map_err(|e| from_lex(&e, file, base))?;
        Ok(Parser {
            src,
            tokens,
            index: 0,
            depth: 0,
            max_depth,
            file,
            base,
        })
    }

    fn tok(&self, ahead: usize) -> Option<&Token> {
        self.tokens
            .get(self.index.saturating_add(ahead))
            .or_else(|| self.tokens.last())
    }

    fn kind(&self) -> Kind {
        self.tok(0).map_or(Kind::Eof, |t| t.kind)
    }

    fn kind_at(&self, ahead: usize) -> Kind {
        self.tok(ahead).map_or(Kind::Eof, |t| t.kind)
    }

    fn text_at(&self, ahead: usize) -> &'a str {
        self.tok(ahead)
            .and_then(|t| self.src.get(t.start..t.end))
            .unwrap_or("")
    }

    fn text(&self) -> &'a str {
        self.text_at(0)
    }

    fn pos(&self) -> Pos {
        self.tok(0).map_or(
            Pos {
                file: self.file,
                line: self.base.line,
                column: self.base.column,
            },
            |t| map_pos(self.file, self.base, t.pos.line, t.pos.column),
        )
    }

    fn bump(&mut self) {
        if self.index < self.tokens.len() {
            self.index += 1;
        }
    }

    fn at(&self, punct: &str) -> bool {
        matches!(self.kind(), Kind::Punct(p) if p == punct)
    }

    fn at_n(&self, ahead: usize, punct: &str) -> bool {
        matches!(self.kind_at(ahead), Kind::Punct(p) if p == punct)
    }

    fn at_keyword(&self, word: &str) -> bool {
        self.kind() == Kind::Ident && self.text() == word
    }

    fn at_comma(&self) -> bool {
        matches!(self.kind(), Kind::Comma { .. })
            || (self.kind() == Kind::Other && self.text() == ";")
    }

    fn expect(&mut self, punct: &str, context: &str) -> PResult<()> {
        if self.at(punct) {
            self.bump();
            Ok(())
        } else {
            Err(self.unexpected(&format!("`{punct}` {context}")))
        }
    }

    fn unexpected(&self, wanted: &str) -> Error {
        let found = match self.kind() {
            Kind::Eof => "the end of the file".to_string(),
            Kind::Comma { explicit: false } => "the end of the line".to_string(),
            _ => format!("`{}`", self.text()),
        };
        syntax(self.pos(), format!("expected {wanted}, found {found}"))
    }

    fn deeper<T>(&mut self, parse: impl FnOnce(&mut Self) -> PResult<T>) -> PResult<T> {
        if self.depth >= self.max_depth {
            return Err(Error {
                kind: ErrorKind::Limit,
                ..syntax(
                    self.pos(),
                    format!("nesting deeper than {} levels", self.max_depth),
                )
            });
        }
        self.depth += 1;
        let result = parse(self);
        self.depth -= 1;
        result
    }

    fn skip_commas(&mut self) {
        while self.at_comma() {
            self.bump();
        }
    }

    // --- file level ------------------------------------------------------------------------

    fn file(&mut self) -> PResult<File> {
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

    fn skip_attributes(&mut self) -> PResult<()> {
        self.skip_commas();
        while self.at("@") {
            self.attribute()?;
            self.skip_commas();
        }
        Ok(())
    }

    fn package(&mut self) -> PResult<Option<String>> {
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

    fn import_spec(&mut self) -> PResult<Import> {
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
    fn attribute(&mut self) -> PResult<()> {
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
    fn struct_body(&mut self, pos: Pos, top: bool) -> PResult<StructLit> {
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

    fn decl(&mut self) -> PResult<Decl> {
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
    fn label_follows(&self, ahead: usize) -> bool {
        self.at_n(ahead, ":")
            || ((self.at_n(ahead, "?") || self.at_n(ahead, "!")) && self.at_n(ahead + 1, ":"))
    }

    fn try_pattern(&mut self) -> PResult<Option<Decl>> {
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
    fn try_field(&mut self) -> PResult<Option<Field>> {
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
    fn field_value(&mut self) -> PResult<Arc<Expr>> {
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

    fn let_clause(&mut self) -> PResult<(String, Arc<Expr>)> {
        if self.kind() != Kind::Ident {
            return Err(self.unexpected("a name after `let`"));
        }
        let name = self.text().to_string();
        self.bump();
        self.expect("=", "after the `let` name")?;
        Ok((name, self.expr()?))
    }

    fn comprehension(&mut self) -> PResult<Arc<Comprehension>> {
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

    fn ident(&mut self, wanted: &str) -> PResult<String> {
        if self.kind() != Kind::Ident {
            return Err(self.unexpected(wanted));
        }
        let name = self.text().to_string();
        self.bump();
        Ok(name)
    }

    // --- expressions ----------------------------------------------------------------------

    pub(crate) fn expr(&mut self) -> PResult<Arc<Expr>> {
        self.deeper(|p| p.binary(1))
    }

    fn binary_op(&self) -> Option<(BinOp, u8)> {
        let Kind::Punct(p) = self.kind() else {
            return None;
        };
        Some(match p {
            "|" if !self.bottom_at(0) => (BinOp::Or, 1),
            "&" => (BinOp::And, 2),
            "||" => (BinOp::LogicalOr, 3),
            "&&" => (BinOp::LogicalAnd, 4),
            "==" => (BinOp::Eq, 5),
            "!=" => (BinOp::Ne, 5),
            "<" => (BinOp::Lt, 5),
            "<=" => (BinOp::Le, 5),
            ">" => (BinOp::Gt, 5),
            ">=" => (BinOp::Ge, 5),
            "=~" => (BinOp::Match, 5),
            "!~" => (BinOp::NotMatch, 5),
            "+" => (BinOp::Add, 6),
            "-" => (BinOp::Sub, 6),
            "*" => (BinOp::Mul, 7),
            "/" => (BinOp::Div, 7),
            _ => return None,
        })
    }

    fn binary(&mut self, min: u8) -> PResult<Arc<Expr>> {
        let mut left = self.unary()?;
        while let Some((op, prec)) = self.binary_op() {
            if prec < min {
                break;
            }
            let pos = self.pos();
            self.bump();
            let right = self.deeper(|p| p.binary(prec + 1))?;
            left = Arc::new(Expr {
                kind: ExprKind::Binary(op, left, right),
                pos,
            });
        }
        Ok(left)
    }

    fn unary(&mut self) -> PResult<Arc<Expr>> {
        let pos = self.pos();
        let op = match self.kind() {
            Kind::Punct("-") => UnOp::Neg,
            Kind::Punct("+") => UnOp::Plus,
            Kind::Punct("!") => UnOp::Not,
            Kind::Punct("*") => UnOp::Default,
            Kind::Punct("<") => UnOp::Lt,
            Kind::Punct("<=") => UnOp::Le,
            Kind::Punct(">") => UnOp::Gt,
            Kind::Punct(">=") => UnOp::Ge,
            Kind::Punct("!=") => UnOp::Ne,
            Kind::Punct("=~") => UnOp::Match,
            Kind::Punct("!~") => UnOp::NotMatch,
            _ => return self.postfix(),
        };
        self.bump();
        let operand = self.deeper(Parser::unary)?;
        Ok(Arc::new(Expr {
            kind: ExprKind::Unary(op, operand),
            pos,
        }))
    }

    fn postfix(&mut self) -> PResult<Arc<Expr>> {
        let mut expr = self.operand()?;
        loop {
            let pos = self.pos();
            let kind = if self.at(".") {
                self.bump();
                let name = match self.kind() {
                    Kind::Ident => self.text().to_string(),
                    Kind::Str {
                        interpolated: false,
                    } => self.plain_string()?,
                    _ => return Err(self.unexpected("a field name after `.`")),
                };
                self.bump();
                ExprKind::Selector(expr, name)
            } else if self.at("[") {
                self.bump();
                let kind = self.index_or_slice(expr)?;
                self.expect("]", "closing the index")?;
                kind
            } else if self.at("(") {
                self.bump();
                let mut args = Vec::new();
                loop {
                    self.skip_commas();
                    if self.at(")") {
                        self.bump();
                        break;
                    }
                    args.push(self.expr()?);
                    if !self.at_comma() && !self.at(")") {
                        return Err(self.unexpected("`,` or `)` in the argument list"));
                    }
                }
                ExprKind::Call(expr, args)
            } else {
                return Ok(expr);
            };
            expr = Arc::new(Expr { kind, pos });
        }
    }

    fn index_or_slice(&mut self, expr: Arc<Expr>) -> PResult<ExprKind> {
        let low = if self.at(":") {
            None
        } else {
            Some(self.expr()?)
        };
        if self.at(":") {
            self.bump();
            let high = if self.at("]") {
                None
            } else {
                Some(self.expr()?)
            };
            return Ok(ExprKind::Slice(expr, low, high));
        }
        match low {
            Some(index) => Ok(ExprKind::Index(expr, index)),
            None => Err(self.unexpected("an index")),
        }
    }

    /// Whether the tokens at `ahead` are `_|_` (the `|` between two adjacent `_`).
    fn bottom_at(&self, ahead: usize) -> bool {
        let (Some(bar), Some(before), Some(after)) = (
            self.tok(ahead),
            self.index
                .checked_add(ahead)
                .and_then(|i| i.checked_sub(1))
                .and_then(|i| self.tokens.get(i)),
            self.tok(ahead + 1),
        ) else {
            return false;
        };
        bar.kind == Kind::Punct("|")
            && before.kind == Kind::Ident
            && self.src.get(before.start..before.end) == Some("_")
            && before.end == bar.start
            && after.kind == Kind::Ident
            && self.src.get(after.start..after.end) == Some("_")
            && bar.end == after.start
    }

    fn operand(&mut self) -> PResult<Arc<Expr>> {
        let pos = self.pos();
        let kind = match self.kind() {
            Kind::Ident => return self.ident_operand(pos),
            Kind::Number => {
                let kind = number(self.text())
                    .ok_or_else(|| syntax(pos, format!("invalid number `{}`", self.text())))?;
                self.bump();
                kind
            }
            Kind::Str { interpolated: true } => {
                let expr = self.string_expr()?;
                self.bump();
                return Ok(expr);
            }
            Kind::Str {
                interpolated: false,
            } => {
                let text = self.plain_string()?;
                self.bump();
                ExprKind::Str(text)
            }
            Kind::Bytes => {
                let bytes = self.bytes()?;
                self.bump();
                ExprKind::Bytes(bytes)
            }
            Kind::Punct("(") => {
                self.bump();
                let inner = self.expr()?;
                self.skip_commas();
                self.expect(")", "closing the parenthesis")?;
                ExprKind::Paren(inner)
            }
            Kind::Punct("{") => {
                self.bump();
                let body = self.deeper(|p| p.struct_body(pos, false))?;
                ExprKind::Struct(Arc::new(body))
            }
            Kind::Punct("[") => {
                self.bump();
                self.deeper(Parser::list)?
            }
            _ => return Err(self.unexpected("a value")),
        };
        Ok(Arc::new(Expr { kind, pos }))
    }

    fn ident_operand(&mut self, pos: Pos) -> PResult<Arc<Expr>> {
        let text = self.text();
        if text == "_" && self.bottom_at(1) {
            self.bump();
            self.bump();
            self.bump();
            return Ok(Arc::new(Expr {
                kind: ExprKind::Bottom,
                pos,
            }));
        }
        let kind = match text {
            "_" => ExprKind::Top,
            "null" => ExprKind::Null,
            "true" => ExprKind::Bool(true),
            "false" => ExprKind::Bool(false),
            "for" | "if" | "let" | "import" | "package" | "in" => {
                return Err(syntax(pos, format!("unexpected keyword `{text}`")));
            }
            _ => ExprKind::Ident(text.to_string()),
        };
        self.bump();
        Ok(Arc::new(Expr { kind, pos }))
    }

    fn list(&mut self) -> PResult<ExprKind> {
        let mut elems = Vec::new();
        let mut rest = None;
        loop {
            self.skip_commas();
            if self.at("]") {
                self.bump();
                break;
            }
            if rest.is_some() {
                return Err(self.unexpected("`]` after `...`"));
            }
            if self.at("...") {
                self.bump();
                rest = Some(if self.at("]") || self.at_comma() {
                    None
                } else {
                    Some(self.expr()?)
                });
            } else if self.kind() == Kind::Ident && matches!(self.text(), "for" | "if" | "let") {
                elems.push(Elem::Comprehension(self.comprehension()?));
            } else {
                elems.push(Elem::Expr(self.expr()?));
            }
            if !self.at_comma() && !self.at("]") {
                return Err(self.unexpected("`,` or `]` in the list"));
            }
        }
        Ok(ExprKind::List { elems, rest })
    }
}

impl Error {
    /// The same error at an AST position (the file is its index until names are filled in).
    pub(crate) fn at_pos(self, pos: Pos) -> Self {
        self.at(super::error::Position {
            file: pos.file.to_string(),
            line: pos.line,
            column: pos.column,
        })
    }
}
