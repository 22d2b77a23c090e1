#![allow(clippy::many_single_char_names)]

//! Expressions: references, selectors, operators, interpolation and calls.

use std::sync::Arc;

use num_bigint::BigInt;
use num_traits::ToPrimitive;

use super::{EnvId, EnvKind, Evaluator, Key, KeyRef, Library, Src, ROOT};
use crate::cue::ast::{BinOp, DeclRef, Elem, Expr, ExprKind, Part, Pos, UnOp};
use crate::cue::error::ErrorKind;
use crate::cue::value::{
    arith, bottom, check_bound, compare, kind, meet, normalize_disj, scalar_eq, show, small_uint,
    BoundOp, VId, Val,
};

/// What a name refers to.
enum Target {
    Vertex(VId),
    Value(Val),
    Let(Arc<Expr>, EnvId),
    Package(String),
}

pub(super) fn incomplete(message: impl Into<String>, pos: Pos) -> Val {
    bottom(ErrorKind::Incomplete, message, vec![pos])
}

pub(super) fn conflict_at(message: impl Into<String>, pos: Pos) -> Val {
    bottom(ErrorKind::Conflict, message, vec![pos])
}

/// The conflict of `a op b` when `op` does not take such operands (`why`: what is added in
/// parentheses, or nothing).
fn invalid_operands(op: BinOp, a: &Val, b: &Val, why: &str, pos: Pos) -> Val {
    conflict_at(
        format!(
            "invalid operands {} and {} to `{}`{why}",
            show(a),
            show(b),
            op.symbol()
        ),
        pos,
    )
}

/// The value of a predeclared identifier.
fn predeclared(library: &Library, name: &str) -> Option<Val> {
    Some(match name {
        "int" => Val::Kind(kind::INT),
        "float" => Val::Kind(kind::FLOAT),
        "number" => Val::Kind(kind::NUMBER),
        "string" => Val::Kind(kind::STRING),
        "bool" => Val::Kind(kind::BOOL),
        "bytes" => Val::Kind(kind::BYTES),
        "uint" => Val::All(Arc::new(vec![
            Val::Kind(kind::INT),
            Val::Bound(BoundOp::Ge, Arc::new(Val::Int(BigInt::from(0)))),
        ])),
        "len" | "close" | "and" | "or" | "div" | "mod" | "quo" | "rem" => {
            return (library.lookup)("", name)
        }
        _ => return None,
    })
}

impl Evaluator {
    /// Evaluate an expression in an environment.
    pub(crate) fn eval(&mut self, expr: &Arc<Expr>, env: EnvId) -> Val {
        if !self.step() || !self.enter() {
            return self.limit_bottom();
        }
        let val = self.eval_inner(expr, env);
        self.leave();
        val
    }

    fn eval_inner(&mut self, expr: &Arc<Expr>, env: EnvId) -> Val {
        let pos = expr.pos;
        match &expr.kind {
            ExprKind::Null => Val::Null,
            ExprKind::Bool(b) => Val::Bool(*b),
            ExprKind::Int(i) => Val::Int(i.clone()),
            ExprKind::Float(f, s) => Val::Float(*f, *s),
            ExprKind::Str(s) => Val::Str(Arc::from(s.as_str())),
            ExprKind::Bytes(b) => Val::Bytes(Arc::from(b.as_slice())),
            ExprKind::Top => Val::Top,
            ExprKind::Bottom => bottom(
                ErrorKind::Conflict,
                "explicit error (_|_ literal)",
                vec![pos],
            ),
            ExprKind::Value(v) => (**v).clone(),
            ExprKind::Paren(e) => self.eval(e, env),
            ExprKind::Interpolation(parts) => self.interpolate(parts, env, pos),
            ExprKind::Ident(name) => match self.resolve(name, env) {
                Some(target) => self.target_value(target, name, pos),
                None => bottom(
                    ErrorKind::Other,
                    format!("reference `{name}` not found"),
                    vec![pos],
                ),
            },
            ExprKind::Selector(base, name) => self.select(base, name, env, pos),
            ExprKind::Index(base, index) => {
                let b = self.eval(base, env).default_value();
                let i = self.eval(index, env).default_value();
                self.index(&b, &i, pos)
            }
            ExprKind::Slice(base, low, high) => {
                self.slice(base, low.as_ref(), high.as_ref(), env, pos)
            }
            ExprKind::Call(func, args) => {
                let f = self.eval(func, env);
                match f {
                    Val::Func(name) => (self.library.call)(self, name, args, env, pos),
                    Val::Bottom(_) => f,
                    other => conflict_at(format!("cannot call non-function {}", show(&other)), pos),
                }
            }
            ExprKind::Unary(op, operand) => self.unary(*op, operand, env, pos),
            ExprKind::Binary(op, l, r) => self.binary(*op, l, r, env, pos),
            ExprKind::Struct(_) | ExprKind::List { .. } => {
                self.anonymous(Src::Expr(Arc::clone(expr)), env, pos)
            }
        }
    }

    /// A new vertex (not reachable from the root) holding `src`; its value.
    pub(crate) fn anonymous(&mut self, src: Src, env: EnvId, pos: Pos) -> Val {
        let parent = self.scope_vertex(env);
        let v = self.new_vertex(Some(parent), Key::regular(Arc::from("<value>")), false, pos);
        self.vm(v).regular = true;
        self.add(v, src, env, None);
        self.value_of(v)
    }

    /// The innermost vertex of an environment (for paths of anonymous values).
    fn scope_vertex(&self, mut env: EnvId) -> VId {
        loop {
            let Some(e) = self.envs.get(env) else {
                return ROOT;
            };
            match &e.kind {
                EnvKind::Struct { vertex, .. } | EnvKind::Package { vertex, .. } => return *vertex,
                _ => match e.parent {
                    Some(p) => env = p,
                    None => return ROOT,
                },
            }
        }
    }

    fn resolve(&mut self, name: &str, mut env: EnvId) -> Option<Target> {
        loop {
            let e = self.envs.get(env)?;
            let parent = e.parent;
            match &e.kind {
                EnvKind::Struct { vertex, lit } => match lit.declares(name) {
                    Some(DeclRef::Field) => {
                        let vertex = *vertex;
                        return self
                            .v(vertex)
                            .arcs
                            .get(&KeyRef::ident(name))
                            .map(|&a| Target::Vertex(a));
                    }
                    Some(DeclRef::Let(expr)) => return Some(Target::Let(Arc::clone(expr), env)),
                    None => {}
                },
                EnvKind::Package { vertex, files } => {
                    if files.iter().any(|f| f.declares(name).is_some()) {
                        let vertex = *vertex;
                        if let Some(&a) = self.v(vertex).arcs.get(&KeyRef::ident(name)) {
                            return Some(Target::Vertex(a));
                        }
                        // A package-level `let` of another file.
                        for f in files {
                            if let Some(DeclRef::Let(expr)) = f.declares(name) {
                                return Some(Target::Let(Arc::clone(expr), env));
                            }
                        }
                    }
                }
                EnvKind::File { imports } => {
                    if let Some(import) = imports.iter().find(|i| i.alias == name) {
                        return Some(Target::Package(import.path.clone()));
                    }
                }
                EnvKind::Bind { name: n, value } => {
                    if &**n == name {
                        return Some(Target::Value(value.clone()));
                    }
                }
            }
            match parent {
                Some(p) => env = p,
                None => return predeclared(&self.library, name).map(Target::Value),
            }
        }
    }

    fn target_value(&mut self, target: Target, name: &str, pos: Pos) -> Val {
        match target {
            Target::Vertex(v) => self.reference(v, pos),
            Target::Value(v) => v,
            Target::Let(expr, env) => self.eval(&expr, env),
            Target::Package(path) => conflict_at(
                format!("the package `{path}` (imported as `{name}`) is not a value; use one of its functions"),
                pos,
            ),
        }
    }

    /// The value of a referenced vertex: absent or optional-only fields are incomplete.
    fn reference(&mut self, v: VId, pos: Pos) -> Val {
        if !self.v(v).regular {
            let label = Arc::clone(&self.v(v).label);
            return incomplete(
                format!("cannot reference optional field `{label}` (it is not set)"),
                pos,
            );
        }
        self.value_of(v)
    }

    fn select(&mut self, base: &Arc<Expr>, name: &str, env: EnvId, pos: Pos) -> Val {
        if let ExprKind::Ident(pkg) = &base.kind {
            if let Some(Target::Package(path)) = self.resolve(pkg, env) {
                return (self.library.lookup)(&path, name).unwrap_or_else(|| {
                    let (kind, message) = if (self.library.is_other)(&path, name) {
                        (
                            ErrorKind::Unsupported,
                            format!("`{pkg}.{name}` ({path}) is not supported by addonctl's CUE evaluator"),
                        )
                    } else {
                        (
                            ErrorKind::Other,
                            format!("undefined: `{pkg}.{name}` (package {path} has no `{name}`)"),
                        )
                    };
                    bottom(kind, message, vec![pos])
                });
            }
        }
        let b = self.eval(base, env).default_value();
        self.field(&b, KeyRef::ident(name), pos)
    }

    /// `b.name` on an evaluated value.
    pub(crate) fn field(&mut self, b: &Val, key: KeyRef<'_>, pos: Pos) -> Val {
        let name = key.name;
        match b {
            Val::Struct(w) => {
                let w = *w;
                self.expand(w);
                match self.v(w).arcs.get(&key).copied() {
                    Some(a) if self.v(a).regular => self.value_of(a),
                    Some(_) => incomplete(
                        format!("cannot reference optional field `{name}` (it is not set)"),
                        pos,
                    ),
                    None => incomplete(format!("undefined field: {name}"), pos),
                }
            }
            Val::Bottom(_) => b.clone(),
            other if !other.is_concrete() => incomplete(
                format!(
                    "cannot select `{name}` of the incomplete value {}",
                    show(other)
                ),
                pos,
            ),
            other => conflict_at(
                format!("cannot select `{name}` of {} (not a struct)", show(other)),
                pos,
            ),
        }
    }

    fn index(&mut self, b: &Val, i: &Val, pos: Pos) -> Val {
        match (b, i) {
            (Val::Bottom(_), _) => b.clone(),
            (_, Val::Bottom(_)) => i.clone(),
            (Val::Struct(_), Val::Str(s)) => self.field(b, KeyRef::regular(s), pos),
            (Val::List(w), Val::Int(n)) => {
                let w = *w;
                self.expand(w);
                let len = self.v(w).list.as_ref().map_or(0, |s| s.len);
                match n.to_usize().filter(|&n| n < len) {
                    Some(n) => match self
                        .v(w)
                        .arcs
                        .get(&KeyRef::regular(&n.to_string()))
                        .copied()
                    {
                        Some(a) => self.value_of(a),
                        None => incomplete(format!("index {n} out of range"), pos),
                    },
                    None => bottom(
                        ErrorKind::Incomplete,
                        format!("index {n} out of range (the list has {len} elements)"),
                        vec![pos],
                    ),
                }
            }
            (Val::Str(s), Val::Int(n)) => match n.to_usize().and_then(|n| s.as_bytes().get(n)) {
                Some(byte) => Val::Int(BigInt::from(*byte)),
                None => conflict_at(format!("index {n} out of range"), pos),
            },
            _ if !b.is_concrete() || !i.is_concrete() => incomplete(
                format!("cannot index the incomplete value {}", show(b)),
                pos,
            ),
            _ => conflict_at(format!("invalid index {} of {}", show(i), show(b)), pos),
        }
    }

    fn slice(
        &mut self,
        base: &Arc<Expr>,
        low: Option<&Arc<Expr>>,
        high: Option<&Arc<Expr>>,
        env: EnvId,
        pos: Pos,
    ) -> Val {
        let b = self.eval(base, env).default_value();
        let items = match self.list_items(&b, pos) {
            Ok(items) => items,
            Err(e) => return e,
        };
        let bound = |ev: &mut Self, e: Option<&Arc<Expr>>, default: usize| match e {
            None => Some(default),
            Some(e) => small_uint(&ev.eval(e, env).default_value()),
        };
        let (Some(lo), Some(hi)) = (bound(self, low, 0), bound(self, high, items.len())) else {
            return conflict_at("invalid slice bounds", pos);
        };
        if lo > hi || hi > items.len() {
            return conflict_at(format!("slice bounds [{lo}:{hi}] out of range"), pos);
        }
        self.make_list(items.get(lo..hi).unwrap_or_default().to_vec(), pos)
    }

    /// The element values of a list value.
    pub(crate) fn list_items(&mut self, b: &Val, pos: Pos) -> Result<Vec<Val>, Val> {
        match b {
            Val::List(w) => {
                let w = *w;
                self.expand(w);
                let len = self.v(w).list.as_ref().map_or(0, |s| s.len);
                let mut out = Vec::with_capacity(len);
                for i in 0..len {
                    let a = self
                        .v(w)
                        .arcs
                        .get(&KeyRef::regular(&i.to_string()))
                        .copied();
                    out.push(a.map_or(Val::Top, |a| self.value_of(a)));
                }
                Ok(out)
            }
            Val::Bottom(_) => Err(b.clone()),
            other if !other.is_concrete() => Err(incomplete(
                format!("incomplete value {} where a list is needed", show(other)),
                pos,
            )),
            other => Err(conflict_at(format!("{} is not a list", show(other)), pos)),
        }
    }

    /// A new list vertex with these elements.
    pub(crate) fn make_list(&mut self, items: Vec<Val>, pos: Pos) -> Val {
        let elems = items
            .into_iter()
            .map(|v| {
                Elem::Expr(Arc::new(Expr {
                    kind: ExprKind::Value(Box::new(v)),
                    pos,
                }))
            })
            .collect();
        let expr = Arc::new(Expr {
            kind: ExprKind::List { elems, rest: None },
            pos,
        });
        self.anonymous(Src::Expr(expr), 0, pos)
    }

    fn interpolate(&mut self, parts: &[Part], env: EnvId, pos: Pos) -> Val {
        let mut out = String::new();
        for part in parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Expr(e) => match self.eval(e, env).default_value() {
                    Val::Str(s) => out.push_str(&s),
                    Val::Int(i) => out.push_str(&i.to_string()),
                    Val::Float(f, s) => out.push_str(&crate::cue::value::show_float(f, s)),
                    Val::Bool(b) => out.push_str(if b { "true" } else { "false" }),
                    Val::Bytes(b) => out.push_str(&String::from_utf8_lossy(&b)),
                    Val::Null => return conflict_at("cannot interpolate null", e.pos),
                    b @ Val::Bottom(_) => return b,
                    other if other.is_concrete() => {
                        return conflict_at(
                            format!("cannot interpolate {} into a string", show(&other)),
                            e.pos,
                        )
                    }
                    other => {
                        return incomplete(
                            format!("incomplete value {} in interpolation", show(&other)),
                            e.pos,
                        )
                    }
                },
            }
            if out.len() > self.limits.max_bytes {
                return bottom(
                    ErrorKind::Limit,
                    "string grows beyond the size limit",
                    vec![pos],
                );
            }
        }
        Val::Str(Arc::from(out))
    }

    fn unary(&mut self, op: UnOp, operand: &Arc<Expr>, env: EnvId, pos: Pos) -> Val {
        let raw = self.eval(operand, env);
        if op == UnOp::Default {
            return raw;
        }
        let v = raw.default_value();
        if v.is_bottom() {
            return v;
        }
        let bound = |b: BoundOp| Val::Bound(b, Arc::new(v.clone()));
        match op {
            UnOp::Bound(_) if !v.is_concrete() => incomplete(
                format!("the operand of a bound must be concrete, not {}", show(&v)),
                pos,
            ),
            UnOp::Bound(b @ (BoundOp::Match | BoundOp::NotMatch)) => match &v {
                Val::Str(re) => match crate::cue::value::regex_match(re, "") {
                    Err(m) => conflict_at(m, pos),
                    Ok(_) => bound(b),
                },
                _ => conflict_at(
                    format!("a regular expression must be a string, not {}", show(&v)),
                    pos,
                ),
            },
            UnOp::Bound(b) => bound(b),
            UnOp::Neg => match v {
                Val::Int(i) => Val::Int(-i),
                Val::Float(f, s) => Val::Float(-f, s),
                other if !other.is_concrete() => {
                    incomplete(format!("incomplete operand {} of `-`", show(&other)), pos)
                }
                other => conflict_at(format!("invalid operand {} to `-`", show(&other)), pos),
            },
            UnOp::Plus => match v {
                Val::Int(_) | Val::Float(..) => v,
                other => conflict_at(format!("invalid operand {} to `+`", show(&other)), pos),
            },
            UnOp::Not => match v {
                Val::Bool(b) => Val::Bool(!b),
                other if !other.is_concrete() => {
                    incomplete(format!("incomplete operand {} of `!`", show(&other)), pos)
                }
                other => conflict_at(format!("invalid operand {} to `!`", show(&other)), pos),
            },
            UnOp::Default => raw,
        }
    }

    fn binary(&mut self, op: BinOp, l: &Arc<Expr>, r: &Arc<Expr>, env: EnvId, pos: Pos) -> Val {
        match op {
            BinOp::Or => {
                let mut ds = Vec::new();
                self.disjuncts(l, env, false, &mut ds);
                self.disjuncts(r, env, false, &mut ds);
                let any_default = ds.iter().any(|(_, d)| *d);
                let ds = ds.into_iter().map(|(v, d)| (v, d && any_default)).collect();
                return normalize_disj(ds);
            }
            BinOp::And => {
                let a = self.eval(l, env);
                let b = self.eval(r, env);
                if matches!(a, Val::Struct(_) | Val::List(_))
                    || matches!(b, Val::Struct(_) | Val::List(_))
                {
                    let expr = Arc::new(Expr {
                        kind: ExprKind::Binary(
                            BinOp::And,
                            Arc::new(Expr {
                                kind: ExprKind::Value(Box::new(a)),
                                pos: l.pos,
                            }),
                            Arc::new(Expr {
                                kind: ExprKind::Value(Box::new(b)),
                                pos: r.pos,
                            }),
                        ),
                        pos,
                    });
                    return self.anonymous(Src::Expr(expr), env, pos);
                }
                let m = meet(&a, &b);
                return with_positions(m, &[l.pos, r.pos]);
            }
            BinOp::Eq | BinOp::Ne if is_bottom_literal(r) || is_bottom_literal(l) => {
                let other = if is_bottom_literal(r) { l } else { r };
                let v = self.eval(other, env);
                if matches!(&v, Val::Bottom(b) if b.kind == ErrorKind::Limit) {
                    return v;
                }
                let is_bottom = match v.default_value() {
                    Val::Bottom(_) => true,
                    Val::Struct(_) | Val::List(_) => false,
                    other => !other.is_concrete(),
                };
                return Val::Bool(if op == BinOp::Eq {
                    is_bottom
                } else {
                    !is_bottom
                });
            }
            BinOp::LogicalAnd | BinOp::LogicalOr => {
                let a = self.eval(l, env).default_value();
                let Val::Bool(x) = a else {
                    return not_bool(&a, op, l.pos);
                };
                let b = self.eval(r, env).default_value();
                let Val::Bool(y) = b else {
                    return not_bool(&b, op, r.pos);
                };
                return Val::Bool(if op == BinOp::LogicalAnd {
                    x && y
                } else {
                    x || y
                });
            }
            _ => {}
        }
        let a = self.eval(l, env).default_value();
        let b = self.eval(r, env).default_value();
        for v in [&a, &b] {
            if v.is_bottom() {
                return v.clone();
            }
        }
        if !a.is_concrete() || !b.is_concrete() {
            let which = if a.is_concrete() { &b } else { &a };
            return incomplete(
                format!(
                    "incomplete value {} in an operand of `{}`",
                    show(which),
                    op.symbol()
                ),
                pos,
            );
        }
        self.concrete_binary(op, &a, &b, pos)
    }

    fn disjuncts(&mut self, e: &Arc<Expr>, env: EnvId, default: bool, out: &mut Vec<(Val, bool)>) {
        match &e.kind {
            ExprKind::Binary(BinOp::Or, l, r) => {
                self.disjuncts(l, env, default, out);
                self.disjuncts(r, env, default, out);
            }
            ExprKind::Unary(UnOp::Default, inner) => self.disjuncts(inner, env, true, out),
            _ => {
                let v = self.eval(e, env);
                out.push((v, default));
            }
        }
    }

    fn concrete_binary(&mut self, op: BinOp, a: &Val, b: &Val, pos: Pos) -> Val {
        match op {
            BinOp::Eq | BinOp::Ne => {
                let (ka, kb) = (a.kinds(), b.kinds());
                let numbers = ka & kind::NUMBER != 0 && kb & kind::NUMBER != 0;
                if ka != kb && !numbers && ka != kind::NULL && kb != kind::NULL {
                    return invalid_operands(op, a, b, " (mismatched types)", pos);
                }
                let eq = match scalar_eq(a, b) {
                    Some(eq) => eq,
                    None => self.deep_equal(a, b),
                };
                Val::Bool(if op == BinOp::Eq { eq } else { !eq })
            }
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                let bop = match op {
                    BinOp::Lt => BoundOp::Lt,
                    BinOp::Le => BoundOp::Le,
                    BinOp::Gt => BoundOp::Gt,
                    _ => BoundOp::Ge,
                };
                if compare(a, b).is_none() {
                    return invalid_operands(op, a, b, "", pos);
                }
                match check_bound(bop, b, a) {
                    Ok(r) => Val::Bool(r),
                    Err(m) => conflict_at(m, pos),
                }
            }
            BinOp::Match | BinOp::NotMatch => match (a, b) {
                (Val::Str(s), Val::Str(re)) => match crate::cue::value::regex_match(re, s) {
                    Ok(m) => Val::Bool(m == (op == BinOp::Match)),
                    Err(m) => conflict_at(m, pos),
                },
                _ => invalid_operands(op, a, b, "", pos),
            },
            BinOp::Add => match (a, b) {
                (Val::Str(x), Val::Str(y)) => Val::Str(Arc::from(format!("{x}{y}"))),
                (Val::Bytes(x), Val::Bytes(y)) => Val::Bytes(Arc::from([&x[..], &y[..]].concat())),
                (Val::List(_), Val::List(_)) => {
                    let mut xs = match self.list_items(a, pos) {
                        Ok(x) => x,
                        Err(e) => return e,
                    };
                    match self.list_items(b, pos) {
                        Ok(ys) => xs.extend(ys),
                        Err(e) => return e,
                    }
                    self.make_list(xs, pos)
                }
                _ => arith_op(op, a, b, pos),
            },
            BinOp::Mul => match (a, b) {
                (Val::Str(s), n @ Val::Int(_)) | (n @ Val::Int(_), Val::Str(s)) => {
                    match small_uint(n)
                        .filter(|n| n.saturating_mul(s.len()) <= self.limits.max_bytes)
                    {
                        Some(n) => Val::Str(Arc::from(s.repeat(n))),
                        None => conflict_at("invalid string repetition count", pos),
                    }
                }
                (Val::List(_), n @ Val::Int(_)) | (n @ Val::Int(_), Val::List(_)) => {
                    let list = if matches!(a, Val::List(_)) { a } else { b };
                    let items = match self.list_items(list, pos) {
                        Ok(x) => x,
                        Err(e) => return e,
                    };
                    let Some(n) =
                        small_uint(n).filter(|n| n.saturating_mul(items.len()) <= 100_000)
                    else {
                        return conflict_at("invalid list repetition count", pos);
                    };
                    let mut out = Vec::with_capacity(n * items.len());
                    for _ in 0..n {
                        out.extend(items.iter().cloned());
                    }
                    self.make_list(out, pos)
                }
                _ => arith_op(op, a, b, pos),
            },
            _ => arith_op(op, a, b, pos),
        }
    }

    /// Equality of structs and lists by their exported values.
    fn deep_equal(&mut self, a: &Val, b: &Val) -> bool {
        match (self.json_of(a), self.json_of(b)) {
            (Ok(x), Ok(y)) => x == y,
            _ => false,
        }
    }

    /// Whether a disjunction has struct or list disjuncts (resolved by trial).
    pub(crate) fn struct_disjunction(&mut self, expr: &Arc<Expr>, env: EnvId) -> bool {
        match &expr.kind {
            ExprKind::Binary(BinOp::Or, l, r) => {
                self.struct_disjunction(l, env) || self.struct_disjunction(r, env)
            }
            ExprKind::Unary(UnOp::Default, e) | ExprKind::Paren(e) => {
                self.struct_disjunction(e, env)
            }
            ExprKind::Struct(_) | ExprKind::List { .. } => true,
            ExprKind::Ident(_) | ExprKind::Selector(..) => {
                let v = self.eval(expr, env);
                matches!(v, Val::Struct(_) | Val::List(_))
            }
            _ => false,
        }
    }
}

fn arith_op(op: BinOp, a: &Val, b: &Val, pos: Pos) -> Val {
    let c = match op {
        BinOp::Add => '+',
        BinOp::Sub => '-',
        BinOp::Mul => '*',
        BinOp::Div => '/',
        _ => {
            return conflict_at(format!("invalid operator `{}`", op.symbol()), pos);
        }
    };
    match arith(c, a, b) {
        Ok(v) => v,
        Err(m) => conflict_at(m, pos),
    }
}

fn is_bottom_literal(e: &Expr) -> bool {
    matches!(e.kind, ExprKind::Bottom)
}

fn not_bool(v: &Val, op: BinOp, pos: Pos) -> Val {
    match v {
        Val::Bottom(_) => v.clone(),
        other if !other.is_concrete() => incomplete(
            format!("incomplete operand {} of `{}`", show(other), op.symbol()),
            pos,
        ),
        other => conflict_at(
            format!(
                "invalid operand {} to `{}` (a bool is needed)",
                show(other),
                op.symbol()
            ),
            pos,
        ),
    }
}

/// Attach positions to a fresh conflict that has none.
pub(crate) fn with_positions(v: Val, positions: &[Pos]) -> Val {
    match v {
        Val::Bottom(b) if b.positions.is_empty() => {
            let mut b = (*b).clone();
            b.positions = positions.to_vec();
            Val::Bottom(Arc::new(b))
        }
        other => other,
    }
}
