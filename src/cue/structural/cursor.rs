//! The token cursor and skimming parser shared by the structural converters.

#[allow(unused_imports)]
use serde_json::{Map, Number, Value};

use super::{
    decode_number, decode_string, error, CueError, Kind, Lexer, Pos, Result, Token, MAX_DEPTH,
};

// Token cursor shared by the parsers
// ---------------------------------------------------------------------------------------------

/// A field name with where it stands and the doc comment above it.
pub(super) struct Label {
    pub(super) name: String,
    pub(super) pos: Pos,
    pub(super) doc: Vec<String>,
    /// Written as an identifier (so `#x` and `_x` are definitions and hidden fields).
    pub(super) ident: bool,
}

/// The `?` (optional) or `!` (required) mark after a field name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Marker {
    Regular,
    Optional,
    Required,
}

/// How many references to definitions one conversion lowers at most.
pub(super) const MAX_REFERENCES: usize = 2_000;

pub(super) struct Parser<'a> {
    pub(super) src: &'a str,
    pub(super) tokens: Vec<Token>,
    pub(super) index: usize,
    pub(super) depth: usize,
    pub(super) eof: Token,
    /// The texts of the other files of the package, where a parameter's definition may be
    /// declared.
    pub(super) others: Vec<&'a str>,
    /// Lowering the value of a definition: its structs are closed.
    pub(super) closed: bool,
    /// The definitions being lowered, outermost first (a reference to one of them is a cycle).
    pub(super) resolving: Vec<String>,
    /// The definitions declared in each struct enclosing the current token, outermost first:
    /// name and the index of the first token of its value.
    pub(super) scopes: Vec<Vec<(String, usize)>>,
    /// How many more references to definitions may be lowered, shared by the parsers of one
    /// conversion (each reference lowers the definition again: this bounds the work).
    pub(super) references_left: std::rc::Rc<std::cell::Cell<usize>>,
    /// The names of the parameter fields being lowered, outermost first (`resources`, `cpu`):
    /// where a problem is, for the messages that name the field.
    pub(super) fields: Vec<String>,
}

impl<'a> Parser<'a> {
    pub(super) fn new(src: &'a str) -> Result<Self> {
        let tokens = Lexer::new(src).run()?;
        let eof = tokens.last().cloned().unwrap_or(Token {
            kind: Kind::Eof,
            start: src.len(),
            end: src.len(),
            pos: Pos { line: 1, column: 1 },
            doc: Vec::new(),
        });
        Ok(Parser {
            src,
            tokens,
            index: 0,
            depth: 0,
            eof,
            others: Vec::new(),
            closed: false,
            resolving: Vec::new(),
            scopes: Vec::new(),
            references_left: std::rc::Rc::new(std::cell::Cell::new(MAX_REFERENCES)),
            fields: Vec::new(),
        })
    }

    pub(super) fn token(&self, index: usize) -> &Token {
        self.tokens.get(index).unwrap_or(&self.eof)
    }

    pub(super) fn peek(&self) -> &Token {
        self.token(self.index)
    }

    pub(super) fn kind(&self) -> Kind {
        self.peek().kind
    }

    pub(super) fn kind_at(&self, ahead: usize) -> Kind {
        self.token(self.index.saturating_add(ahead)).kind
    }

    pub(super) fn pos(&self) -> Pos {
        self.peek().pos
    }

    pub(super) fn text_of(&self, token: &Token) -> &'a str {
        self.src.get(token.start..token.end).unwrap_or("")
    }

    pub(super) fn text(&self) -> &'a str {
        self.text_of(self.peek())
    }

    pub(super) fn text_at(&self, ahead: usize) -> &'a str {
        self.text_of(self.token(self.index.saturating_add(ahead)))
    }

    pub(super) fn bump(&mut self) {
        if self.index < self.tokens.len() {
            self.index += 1;
        }
    }

    pub(super) fn at_punct(&self, punct: &str) -> bool {
        matches!(self.kind(), Kind::Punct(p) if p == punct)
    }

    pub(super) fn punct_at(&self, ahead: usize, punct: &str) -> bool {
        matches!(self.kind_at(ahead), Kind::Punct(p) if p == punct)
    }

    pub(super) fn at_comma(&self) -> bool {
        matches!(self.kind(), Kind::Comma { .. })
    }

    pub(super) fn at_eof(&self) -> bool {
        self.kind() == Kind::Eof
    }

    pub(super) fn at_ident(&self, word: &str) -> bool {
        self.kind() == Kind::Ident && self.text() == word
    }

    /// A readable name for the current token, for error messages.
    pub(super) fn describe(&self) -> String {
        match self.kind() {
            Kind::Eof => "the end of the file".to_string(),
            Kind::Comma { explicit: false } => "the end of the line".to_string(),
            _ => {
                let text: String = self.text().chars().take(40).collect();
                format!("`{text}`")
            }
        }
    }

    pub(super) fn unexpected(&self, expected: &str) -> CueError {
        error(self.pos(), format!("{expected}, found {}", self.describe()))
    }

    pub(super) fn expect_punct(&mut self, punct: &str, context: &str) -> Result<()> {
        if self.at_punct(punct) {
            self.bump();
            Ok(())
        } else {
            Err(self.unexpected(&format!("expected `{punct}` {context}")))
        }
    }

    /// Run `parse` one nesting level deeper, refusing to go past [`MAX_DEPTH`].
    pub(super) fn nested<T>(&mut self, parse: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        if self.depth >= MAX_DEPTH {
            return Err(error(
                self.pos(),
                format!("nesting deeper than {MAX_DEPTH} levels"),
            ));
        }
        self.depth += 1;
        let result = parse(self);
        self.depth -= 1;
        result
    }

    /// The members of a struct whose `{` is the current token, up to its `}` (consumed): commas
    /// are skipped, the end of the file is an error at the `{`, and `member` reads each of the
    /// rest (and what ends it).
    pub(super) fn struct_body(
        &mut self,
        mut member: impl FnMut(&mut Self) -> Result<()>,
    ) -> Result<()> {
        let open = self.pos();
        self.bump();
        loop {
            match self.kind() {
                Kind::Punct("}") => {
                    self.bump();
                    return Ok(());
                }
                Kind::Eof => return Err(error(open, "this `{` is never closed")),
                Kind::Comma { .. } => self.bump(),
                _ => member(self)?,
            }
        }
    }

    /// The end of a top-level declaration: a comma, a line end or the end of the file.
    pub(super) fn decl_end(&mut self) -> Result<()> {
        match self.kind() {
            Kind::Comma { .. } => {
                self.bump();
                Ok(())
            }
            Kind::Eof => Ok(()),
            _ => Err(self.unexpected("expected a new line or `,` after the declaration")),
        }
    }

    /// After a field inside `{ … }`: a comma, a line end, or the closing brace.
    pub(super) fn field_end(&mut self) -> Result<()> {
        match self.kind() {
            Kind::Comma { .. } => {
                self.bump();
                Ok(())
            }
            Kind::Punct("}") => Ok(()),
            _ => Err(self.unexpected("expected a new line, `,` or `}` after the field")),
        }
    }

    /// Whether a field `name:`, `name?:` or `name!:` starts here.
    pub(super) fn is_field_start(&self) -> bool {
        let named = matches!(
            self.kind(),
            Kind::Ident
                | Kind::Str {
                    interpolated: false
                }
        );
        let colon = self.punct_at(1, ":")
            || ((self.punct_at(1, "?") || self.punct_at(1, "!")) && self.punct_at(2, ":"));
        named && colon
    }

    pub(super) fn label(&mut self) -> Result<Label> {
        let token = self.peek();
        let (pos, doc) = (token.pos, token.doc.clone());
        let (name, ident) = match token.kind {
            Kind::Ident => (self.text().to_string(), true),
            Kind::Str {
                interpolated: false,
            } => (decode_string(self.text(), pos)?, false),
            _ => return Err(self.unexpected("expected a field name")),
        };
        self.bump();
        Ok(Label {
            name,
            pos,
            doc,
            ident,
        })
    }

    pub(super) fn marker(&mut self) -> Marker {
        let marker = if self.at_punct("?") {
            Marker::Optional
        } else if self.at_punct("!") {
            Marker::Required
        } else {
            return Marker::Regular;
        };
        self.bump();
        marker
    }

    pub(super) fn reject_marker(&mut self, label: &Label) -> Result<()> {
        let pos = self.pos();
        match self.marker() {
            Marker::Regular => Ok(()),
            Marker::Optional => Err(error(
                pos,
                format!("field `{}` may not be optional (`?`) here", label.name),
            )),
            Marker::Required => Err(error(
                pos,
                format!(
                    "field `{}` may not be marked required (`!`) here",
                    label.name
                ),
            )),
        }
    }

    /// Skip an optional `package` clause and parse the `import` declarations, returning each
    /// import declaration's text as written.
    pub(super) fn preamble(&mut self) -> Result<Vec<String>> {
        if self.at_ident("package") && self.kind_at(1) == Kind::Ident {
            self.bump();
            self.bump();
            self.decl_end()?;
        }
        let mut imports = Vec::new();
        while self.at_ident("import") && !self.punct_at(1, ":") {
            let first = self.index;
            self.bump();
            if self.at_punct("(") {
                self.bump();
                loop {
                    if self.at_comma() {
                        self.bump();
                    } else if self.at_punct(")") {
                        self.bump();
                        break;
                    } else {
                        self.import_spec()?;
                        if !self.at_comma() && !self.at_punct(")") {
                            return Err(
                                self.unexpected("expected a new line or `)` after the import path")
                            );
                        }
                    }
                }
            } else {
                self.import_spec()?;
            }
            let start = self.token(first).start;
            let end = self.token(self.index.saturating_sub(1)).end;
            imports.push(self.src.get(start..end).unwrap_or("").to_string());
            self.decl_end()?;
        }
        Ok(imports)
    }

    /// `"path"` or `alias "path"`.
    pub(super) fn import_spec(&mut self) -> Result<()> {
        if self.kind() == Kind::Ident {
            self.bump();
        }
        if self.kind()
            != (Kind::Str {
                interpolated: false,
            })
        {
            return Err(self.unexpected("expected an import path string"));
        }
        decode_string(self.text(), self.pos())?;
        self.bump();
        Ok(())
    }

    /// Skip one bracketed group starting at the current opener; returns the closer's index.
    pub(super) fn skip_balanced(&mut self) -> Result<usize> {
        let mut stack: Vec<(&'static str, Pos)> = Vec::new();
        loop {
            let pos = self.pos();
            match self.kind() {
                Kind::Punct("{") => stack.push(("}", pos)),
                Kind::Punct("[") => stack.push(("]", pos)),
                Kind::Punct("(") => stack.push((")", pos)),
                Kind::Punct(closer @ ("}" | "]" | ")")) => match stack.pop() {
                    Some((wanted, _)) if wanted == closer => {
                        if stack.is_empty() {
                            let index = self.index;
                            self.bump();
                            return Ok(index);
                        }
                    }
                    Some((wanted, opened)) => {
                        return Err(error(
                            pos,
                            format!(
                                "found `{closer}` where `{wanted}` was expected, to close the bracket \
                                 opened at line {}, column {}",
                                opened.line, opened.column
                            ),
                        ));
                    }
                    None => return Err(error(pos, format!("unexpected `{closer}`"))),
                },
                Kind::Eof => {
                    let (wanted, opened) = stack.last().copied().unwrap_or(("}", pos));
                    return Err(error(
                        opened,
                        format!("this bracket is never closed (expected `{wanted}`)"),
                    ));
                }
                _ => {}
            }
            self.bump();
        }
    }

    /// Skip an arbitrary expression or declaration up to a comma or line end at its own level,
    /// or up to (not including) the bracket that closes the enclosing group.
    pub(super) fn skip_expression(&mut self) -> Result<()> {
        loop {
            match self.kind() {
                Kind::Eof | Kind::Comma { .. } | Kind::Punct("}" | "]" | ")") => return Ok(()),
                Kind::Punct("{" | "[" | "(") => {
                    self.skip_balanced()?;
                }
                _ => self.bump(),
            }
        }
    }

    /// The text between the braces of a `template: { … }` block.
    pub(super) fn template_body(&mut self) -> Result<&'a str> {
        if !self.at_punct("{") {
            return Err(self.unexpected("expected `{` to open the template block"));
        }
        let open = self.index;
        let close = self.skip_balanced()?;
        let has_content =
            (open + 1..close).any(|i| self.token(i).kind != Kind::Comma { explicit: false });
        let (open_token, close_token) = (self.token(open), self.token(close));
        if !has_content {
            return Err(error(open_token.pos, "the template block is empty"));
        }
        Ok(self
            .src
            .get(open_token.end..close_token.start)
            .unwrap_or(""))
    }

    /// If a scalar literal (`"s"`, `1`, `-1`, `true`, `null`) starts here, how many tokens it spans.
    pub(super) fn scalar_len(&self) -> Option<usize> {
        match self.kind() {
            Kind::Str {
                interpolated: false,
            }
            | Kind::Number => Some(1),
            Kind::Ident if matches!(self.text(), "true" | "false" | "null") => Some(1),
            Kind::Punct("-" | "+") if self.kind_at(1) == Kind::Number => Some(2),
            _ => None,
        }
    }

    pub(super) fn scalar_literal(&mut self) -> Result<Value> {
        let pos = self.pos();
        let value = match self.kind() {
            Kind::Str { .. } => Value::String(decode_string(self.text(), pos)?),
            Kind::Number => decode_number(self.text(), false, pos)?,
            Kind::Punct(sign @ ("-" | "+")) if self.kind_at(1) == Kind::Number => {
                self.bump();
                decode_number(self.text(), sign == "-", pos)?
            }
            Kind::Ident => match self.text() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                "null" => Value::Null,
                _ => return Err(self.unexpected("expected a literal value")),
            },
            _ => return Err(self.unexpected("expected a literal value")),
        };
        self.bump();
        Ok(value)
    }
}

// ---------------------------------------------------------------------------------------------
