//! Expressions: binary and unary operators, postfix selectors, indexes and slices, operands
//! and lists.

use std::sync::Arc;

use super::literal::number;
use super::{syntax, PResult, Parser};
use crate::cue::ast::{BinOp, Elem, Expr, ExprKind, Pos, UnOp};
use crate::cue::lexer::Kind;
use crate::cue::value::BoundOp;

impl Parser<'_> {
    // --- expressions ----------------------------------------------------------------------

    pub(crate) fn expr(&mut self) -> PResult<Arc<Expr>> {
        self.deeper(|p| p.binary(1))
    }

    pub(super) fn binary_op(&self) -> Option<(BinOp, u8)> {
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

    pub(super) fn binary(&mut self, min: u8) -> PResult<Arc<Expr>> {
        let mut left = self.unary()?;
        while let Some((op, prec)) = self.binary_op() {
            if prec < min {
                break;
            }
            // A conjunction or disjunction stands where its first operand does.
            let pos = if matches!(op, BinOp::Or | BinOp::And) {
                left.pos
            } else {
                self.pos()
            };
            self.bump();
            let right = self.deeper(|p| p.binary(prec + 1))?;
            left = Arc::new(Expr {
                kind: ExprKind::Binary(op, left, right),
                pos,
            });
        }
        Ok(left)
    }

    pub(super) fn unary(&mut self) -> PResult<Arc<Expr>> {
        let pos = self.pos();
        let op = match self.kind() {
            Kind::Punct("-") => UnOp::Neg,
            Kind::Punct("+") => UnOp::Plus,
            Kind::Punct("!") => UnOp::Not,
            Kind::Punct("*") => UnOp::Default,
            Kind::Punct("<") => UnOp::Bound(BoundOp::Lt),
            Kind::Punct("<=") => UnOp::Bound(BoundOp::Le),
            Kind::Punct(">") => UnOp::Bound(BoundOp::Gt),
            Kind::Punct(">=") => UnOp::Bound(BoundOp::Ge),
            Kind::Punct("!=") => UnOp::Bound(BoundOp::Ne),
            Kind::Punct("=~") => UnOp::Bound(BoundOp::Match),
            Kind::Punct("!~") => UnOp::Bound(BoundOp::NotMatch),
            _ => return self.postfix(),
        };
        self.bump();
        let operand = self.deeper(Parser::unary)?;
        Ok(Arc::new(Expr {
            kind: ExprKind::Unary(op, operand),
            pos,
        }))
    }

    pub(super) fn postfix(&mut self) -> PResult<Arc<Expr>> {
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

    pub(super) fn index_or_slice(&mut self, expr: Arc<Expr>) -> PResult<ExprKind> {
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
    pub(super) fn bottom_at(&self, ahead: usize) -> bool {
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

    pub(super) fn operand(&mut self) -> PResult<Arc<Expr>> {
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

    pub(super) fn ident_operand(&mut self, pos: Pos) -> PResult<Arc<Expr>> {
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

    pub(super) fn list(&mut self) -> PResult<ExprKind> {
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
