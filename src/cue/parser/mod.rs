//! Recursive-descent parser of the supported CUE subset into the [`super::ast`] tree.
//!
//! Tokens come from the shared [`super::lexer`]; positions are mapped to the file index so
//! that errors can name the file. Nesting is bounded by `max_depth`, so deeply nested input
//! is a clear error instead of a stack overflow.
//!
//! Files: `mod.rs` (entry points, tokens and positions), `decl.rs` (files, structs, fields,
//! comprehensions), `expr.rs` (expressions), `literal.rs` (strings, bytes and numbers).

use super::ast::{File, Pos};
use super::error::{Error, ErrorKind};
use super::lexer::{self, Kind, Lexer, Token};

mod decl;
mod expr;
mod literal;

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
