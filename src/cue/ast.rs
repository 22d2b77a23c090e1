//! The syntax tree of the supported CUE subset.

use std::sync::Arc;

use num_bigint::BigInt;

use super::value::BoundOp;

pub(crate) use super::error::Pos;

/// One parsed file.
#[derive(Debug)]
pub(crate) struct File {
    pub(crate) package: Option<String>,
    pub(crate) imports: Vec<Import>,
    pub(crate) body: Arc<StructLit>,
}

/// `import alias "path"`.
#[derive(Debug, Clone)]
pub(crate) struct Import {
    pub(crate) alias: String,
    pub(crate) path: String,
    pub(crate) pos: Pos,
}

/// A `{ … }` literal (or a file body).
#[derive(Debug, Default)]
pub(crate) struct StructLit {
    pub(crate) decls: Vec<Decl>,
    /// `...` written in the struct: it stays open even inside a definition.
    pub(crate) open: bool,
    pub(crate) pos: Pos,
}

impl StructLit {
    /// Whether this literal makes its value a struct (rather than only embedding a value).
    pub(crate) fn is_struct(&self) -> bool {
        self.open
            || self.decls.is_empty()
            || self
                .decls
                .iter()
                .any(|d| matches!(d, Decl::Field(_) | Decl::Pattern { .. }))
    }

    /// Whether the literal declares the identifier `name` (a field or a `let`).
    pub(crate) fn declares(&self, name: &str) -> Option<DeclRef<'_>> {
        self.decls.iter().find_map(|d| match d {
            Decl::Field(f) => match &f.label {
                Label::Ident(n) if n == name => Some(DeclRef::Field),
                _ => None,
            },
            Decl::Let { name: n, expr, .. } if n == name => Some(DeclRef::Let(expr)),
            _ => None,
        })
    }
}

/// What a name declared in a struct literal is.
pub(crate) enum DeclRef<'a> {
    Field,
    Let(&'a Arc<Expr>),
}

/// One declaration of a struct.
#[derive(Debug)]
pub(crate) enum Decl {
    Field(Field),
    /// `[string]: T` or `[=~"^a"]: T`.
    Pattern {
        label: Arc<Expr>,
        value: Arc<Expr>,
        /// `[Name=…]`: the field's name is bound to `Name` in the value.
        alias: Option<String>,
    },
    /// An embedded expression.
    Embed(Arc<Expr>),
    Let {
        name: String,
        expr: Arc<Expr>,
    },
    Comprehension(Arc<Comprehension>),
}

/// `label: value`, `label?: value`, `label!: value`.
#[derive(Debug)]
pub(crate) struct Field {
    pub(crate) label: Label,
    pub(crate) marker: Marker,
    pub(crate) value: Arc<Expr>,
    pub(crate) pos: Pos,
}

/// A field's label.
#[derive(Debug, Clone)]
pub(crate) enum Label {
    /// An identifier: `name`, `_hidden`, `#Definition`.
    Ident(String),
    /// A quoted string without interpolation.
    Str(String),
    /// An interpolated string `"\(x)-y"` or a parenthesised expression `(x)`.
    Dynamic(Arc<Expr>),
}

/// The mark after a label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Marker {
    Regular,
    Optional,
    Required,
}

/// `for …`/`if …`/`let …` clauses followed by a struct.
#[derive(Debug)]
pub(crate) struct Comprehension {
    pub(crate) clauses: Vec<Clause>,
    pub(crate) body: Arc<Expr>,
    pub(crate) pos: Pos,
}

/// One clause of a comprehension.
#[derive(Debug)]
pub(crate) enum Clause {
    For {
        key: Option<String>,
        value: String,
        source: Arc<Expr>,
    },
    If(Arc<Expr>),
    Let {
        name: String,
        expr: Arc<Expr>,
    },
}

/// An element of a list literal.
#[derive(Debug)]
pub(crate) enum Elem {
    Expr(Arc<Expr>),
    Comprehension(Arc<Comprehension>),
}

/// A unary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UnOp {
    Neg,
    Plus,
    Not,
    /// `*x` inside a disjunction.
    Default,
    /// `<x`, `=~x`, …: a bound.
    Bound(BoundOp),
}

/// A binary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BinOp {
    Or,
    And,
    LogicalOr,
    LogicalAnd,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Match,
    NotMatch,
    Add,
    Sub,
    Mul,
    Div,
}

impl BinOp {
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            BinOp::Or => "|",
            BinOp::And => "&",
            BinOp::LogicalOr => "||",
            BinOp::LogicalAnd => "&&",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Match => "=~",
            BinOp::NotMatch => "!~",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
        }
    }
}

/// One part of an interpolated string.
#[derive(Debug)]
pub(crate) enum Part {
    Text(String),
    Expr(Arc<Expr>),
}

/// An expression with its position.
#[derive(Debug)]
pub(crate) struct Expr {
    pub(crate) kind: ExprKind,
    pub(crate) pos: Pos,
}

/// What an expression is.
#[derive(Debug)]
pub(crate) enum ExprKind {
    Null,
    Bool(bool),
    Int(BigInt),
    Float(f64, i16),
    Str(String),
    Bytes(Vec<u8>),
    Interpolation(Vec<Part>),
    /// `_`.
    Top,
    /// `_|_`.
    Bottom,
    Ident(String),
    Selector(Arc<Expr>, String),
    Index(Arc<Expr>, Arc<Expr>),
    Slice(Arc<Expr>, Option<Arc<Expr>>, Option<Arc<Expr>>),
    Call(Arc<Expr>, Vec<Arc<Expr>>),
    Unary(UnOp, Arc<Expr>),
    Binary(BinOp, Arc<Expr>, Arc<Expr>),
    Struct(Arc<StructLit>),
    List {
        elems: Vec<Elem>,
        /// `...` or `...T` at the end; `Some(None)` is `...` alone (any element).
        #[allow(clippy::option_option)]
        rest: Option<Option<Arc<Expr>>>,
    },
    Paren(Arc<Expr>),
    /// An evaluated value (results of builtins and list operations).
    Value(Box<super::value::Val>),
}
