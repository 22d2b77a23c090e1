//! A vertex's value, disjunctions of structs, closedness checks and export to JSON.

use std::sync::Arc;

use num_traits::ToPrimitive;
use serde_json::{Map, Number, Value};

use super::{Conjunct, Evaluator, Key, KeyRef, Src, State};
use crate::cue::ast::{BinOp, ExprKind, Pos, UnOp};
use crate::cue::error::{Error, ErrorKind};
use crate::cue::value::{bottom, kind, meet, show, Bottom, VId, Val};

impl Evaluator {
    /// The value of vertex `v`: `Val::Struct(v)`, `Val::List(v)` or its scalar value.
    pub(crate) fn value_of(&mut self, v: VId) -> Val {
        if let Some(val) = &self.v(v).value {
            if self.v(v).state == State::Expanded && self.v(v).done == self.v(v).conjuncts.len() {
                return val.clone();
            }
        }
        if self.v(v).computing || self.v(v).state == State::Expanding {
            if self.v(v).is_struct {
                return Val::Struct(v);
            }
            if self.v(v).list.is_some() {
                return Val::List(v);
            }
            self.cycles += 1;
            return Val::Top;
        }
        if !self.enter() {
            return self.limit_bottom();
        }
        let cycles = self.cycles;
        self.expand(v);
        self.vm(v).computing = true;
        let extra = self.resolve_deferred(v);
        let val = self.compute_value(v, &extra);
        self.vm(v).computing = false;
        if self.v(v).state == State::Expanded && self.cycles == cycles {
            self.vm(v).value = Some(val.clone());
        }
        self.leave();
        val
    }

    /// Evaluate again the conjuncts that met a cycle; those that still do count for this
    /// computation only (returned), the others are kept.
    fn resolve_deferred(&mut self, v: VId) -> Vec<(Val, Pos)> {
        let deferred = std::mem::take(&mut self.vm(v).deferred);
        let mut still = Vec::new();
        let mut extra = Vec::new();
        for (expr, env, closed) in deferred {
            let cycles = self.cycles;
            let val = self.eval(&expr, env);
            if self.cycles == cycles {
                self.add_value(v, val, expr.pos, closed);
            } else {
                extra.push((val, expr.pos));
                still.push((expr, env, closed));
            }
        }
        self.vm(v).deferred = still;
        extra
    }

    fn compute_value(&mut self, v: VId, extra: &[(Val, Pos)]) -> Val {
        let scalar = self.scalar(v, extra);
        if let Val::Bottom(b) = &scalar {
            let incomplete = b.kind == ErrorKind::Incomplete;
            if incomplete && self.v(v).is_struct && self.v(v).list.is_none() {
                return Val::Struct(v);
            }
            if incomplete && self.v(v).list.is_some() && !self.v(v).is_struct {
                return Val::List(v);
            }
            return self.with_path(b, v);
        }
        if let Some(err) = self.closedness(v) {
            return err;
        }
        let shape = if self.v(v).list.is_some() {
            if self.v(v).is_struct {
                return self.shape_conflict(v, "a list", "a struct");
            }
            Some((kind::LIST, Val::List(v)))
        } else if self.v(v).is_struct
            || (self.v(v).maybe_struct
                && scalar.kinds() & kind::STRUCT != 0
                && !scalar.is_concrete())
        {
            Some((kind::STRUCT, Val::Struct(v)))
        } else {
            None
        };
        match shape {
            Some((k, val)) => {
                if scalar.kinds() & k == 0 {
                    let what = if k == kind::LIST { "[…]" } else { "{…}" };
                    return self.shape_conflict(v, &show(&scalar), what);
                }
                val
            }
            None => scalar,
        }
    }

    fn shape_conflict(&self, v: VId, a: &str, b: &str) -> Val {
        let positions = self.v(v).scalars.iter().map(|(_, p)| *p).take(2).collect();
        let b = Bottom {
            kind: ErrorKind::Conflict,
            message: format!("conflicting values {a} and {b} (mismatched types)"),
            positions,
            path: Some(self.path(v)),
        };
        Val::Bottom(Arc::new(b))
    }

    fn with_path(&self, b: &Arc<Bottom>, v: VId) -> Val {
        if b.path.is_some() {
            return Val::Bottom(Arc::clone(b));
        }
        let mut b = (**b).clone();
        b.path = Some(self.path(v));
        Val::Bottom(Arc::new(b))
    }

    /// The meet of the scalar conjuncts of `v`; a new conflict names both positions.
    fn scalar(&self, v: VId, extra: &[(Val, Pos)]) -> Val {
        let mut acc = Val::Top;
        let mut acc_pos: Option<Pos> = None;
        for (val, pos) in self.v(v).scalars.iter().chain(extra) {
            if let Val::Bottom(b) = val {
                if b.positions.is_empty() {
                    let mut b = (**b).clone();
                    b.positions.push(*pos);
                    return Val::Bottom(Arc::new(b));
                }
                return val.clone();
            }
            let m = meet(&acc, val);
            if let Val::Bottom(b) = &m {
                let mut b = (**b).clone();
                if b.positions.is_empty() {
                    b.positions.extend(acc_pos);
                    b.positions.push(*pos);
                }
                return Val::Bottom(Arc::new(b));
            }
            if !matches!(val, Val::Top) {
                acc_pos = Some(*pos);
            }
            acc = m;
        }
        acc
    }

    /// A field not allowed by a closed definition (or `close`), as a bottom.
    fn closedness(&self, v: VId) -> Option<Val> {
        for g in &self.v(v).groups {
            if g.open || !self.group_active(g.group) {
                continue;
            }
            for (label, &a) in &self.v(v).arcs {
                if !label.is_regular() || self.v(a).index_label {
                    continue;
                }
                if g.fields.contains(label) {
                    continue;
                }
                let name = Val::Str(Arc::clone(&label.name));
                if g.patterns.iter().any(|p| !meet(p, &name).is_bottom()) {
                    continue;
                }
                let b = Bottom {
                    kind: ErrorKind::Conflict,
                    message: format!(
                        "field not allowed: `{}` is not declared in the closed definition",
                        label.name
                    ),
                    positions: vec![self.v(a).pos],
                    path: Some(self.path(a)),
                };
                return Some(Val::Bottom(Arc::new(b)));
            }
        }
        None
    }

    // --- disjunctions of structs -------------------------------------------------------------

    /// Resolve the first disjunction of structs of `v` by trying each disjunct with the other
    /// conjuncts; `v` is then rebuilt from the chosen one (the default when several remain).
    pub(crate) fn resolve_disjunctions(&mut self, v: VId) {
        let Some(&index) = self.v(v).disjs.first() else {
            return;
        };
        let conjuncts = self.v(v).conjuncts.clone();
        let Some(disj) = conjuncts.get(index).cloned() else {
            return;
        };
        let others: Vec<Conjunct> = conjuncts
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != index)
            .map(|(_, c)| c.clone())
            .collect();
        let mut options = Vec::new();
        match &disj.src {
            Src::Expr(e) => flatten(e, false, &mut options),
            Src::Val(Val::Disj(ds), pos) => {
                for (d, def) in ds.iter() {
                    options.push((Src::Val(d.clone(), *pos), *def));
                }
            }
            Src::Val(..) => {}
        }
        let mut survivors = Vec::new();
        let mut first_error = None;
        for (src, default) in options {
            let (parent, label, index_label) = {
                let vx = self.v(v);
                let key = Key {
                    name: Arc::clone(&vx.label),
                    kind: vx.kind,
                };
                (vx.parent, key, vx.index_label)
            };
            let t = self.new_vertex(parent, label, index_label, self.v(v).pos);
            self.vm(t).regular = true;
            self.vm(t).in_def = self.v(v).in_def;
            let mut conj = others.clone();
            conj.push(Conjunct {
                src,
                ..disj.clone()
            });
            self.vm(t).conjuncts = conj;
            match self.check(t) {
                Ok(()) => survivors.push((t, default)),
                Err(b) => {
                    if first_error.is_none() {
                        first_error = Some(b);
                    }
                }
            }
            if self.fatal.is_some() {
                return;
            }
        }
        let chosen = match survivors.len() {
            0 => None,
            1 => survivors.first().map(|s| s.0),
            _ => survivors.iter().find(|s| s.1).map(|s| s.0),
        };
        let Some(chosen) = chosen else {
            let b = if survivors.is_empty() {
                let detail = first_error.map_or_else(String::new, |b| format!(": {}", b.message));
                bottom(
                    ErrorKind::Conflict,
                    format!("no disjunct matches{detail}"),
                    vec![disj_pos(&disj)],
                )
            } else {
                bottom(
                    ErrorKind::Incomplete,
                    "incomplete value: ambiguous disjunction (several disjuncts match and none is a default)",
                    vec![disj_pos(&disj)],
                )
            };
            self.vm(v).disjs.clear();
            self.vm(v).scalars.push((b, disj_pos(&disj)));
            return;
        };
        let conj = self.v(chosen).conjuncts.clone();
        self.rebuild(v, conj);
    }

    fn rebuild(&mut self, v: VId, conjuncts: Vec<Conjunct>) {
        let vx = self.vm(v);
        vx.arcs.clear();
        vx.conjuncts = conjuncts;
        vx.done = 0;
        vx.scalars.clear();
        vx.is_struct = false;
        vx.maybe_struct = false;
        vx.lists.clear();
        vx.lists_done = 0;
        vx.list = None;
        vx.pending.clear();
        vx.patterns.clear();
        vx.disjs.clear();
        vx.groups.clear();
        vx.state = State::Fresh;
        vx.value = None;
        self.expand(v);
    }

    /// Whether `v` and its regular descendants are free of conflicts (incomplete is fine).
    fn check(&mut self, v: VId) -> Result<(), Arc<Bottom>> {
        if !self.enter() {
            return Err(Arc::new(Bottom {
                kind: ErrorKind::Limit,
                message: "too deep".into(),
                positions: Vec::new(),
                path: None,
            }));
        }
        let result = self.check_inner(v);
        self.leave();
        result
    }

    fn check_inner(&mut self, v: VId) -> Result<(), Arc<Bottom>> {
        match self.value_of(v) {
            Val::Bottom(b) if b.kind != ErrorKind::Incomplete => Err(b),
            Val::Struct(_) | Val::List(_) => {
                let arcs: Vec<VId> = self.v(v).arcs.values().copied().collect();
                for a in arcs {
                    if self.v(a).regular {
                        self.check(a)?;
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    // --- export ------------------------------------------------------------------------------

    /// The vertex at a path of regular field names from the root, if there is one.
    pub(crate) fn lookup(&mut self, path: &[&str]) -> Option<VId> {
        let mut at = super::ROOT;
        for label in path {
            self.expand(at);
            match self.v(at).arcs.get(&KeyRef::regular(label)).copied() {
                Some(a) if self.v(a).regular => at = a,
                _ => return None,
            }
        }
        Some(at)
    }

    /// Concrete JSON of vertex `v` for Kubernetes objects: whole floats are integers (see
    /// [`ObjectJson`]).
    pub(crate) fn export_vertex(&mut self, v: VId) -> Result<Value, Error> {
        self.export_as::<ObjectJson>(v).map(|o| o.0)
    }

    /// Concrete JSON text (compact) of vertex `v`, integers of any size with all their digits.
    pub(crate) fn export_text(&mut self, v: VId) -> Result<String, Error> {
        self.export_as::<JsonText>(v).map(|t| t.0)
    }

    fn export_as<O: Out>(&mut self, v: VId) -> Result<O, Error> {
        if !self.enter() {
            return Err(self.fatal_error());
        }
        let result = self.export_inner::<O>(v);
        self.leave();
        result
    }

    fn export_inner<O: Out>(&mut self, v: VId) -> Result<O, Error> {
        let val = self.value_of(v);
        if let Some(e) = self.fatal.clone() {
            return Err(e);
        }
        match val {
            Val::Struct(w) if w == v => {
                if let Val::Bottom(b) = self.scalar(v, &[]) {
                    return Err(self.error_of(&b, Some(v)));
                }
                let arcs = self.arcs_of(v);
                let mut fields = Vec::with_capacity(arcs.len());
                for (key, a) in arcs {
                    if !self.v(a).regular {
                        continue;
                    }
                    let label = key.name;
                    if !key.kind.is_regular() {
                        if let Err(e) = self.check(a) {
                            if e.kind != ErrorKind::Limit {
                                return Err(self.error_of(&e, Some(a)));
                            }
                        }
                        continue;
                    }
                    let value = self.export_as::<O>(a)?;
                    self.count(label.len() + 4)?;
                    fields.push((label.to_string(), value));
                }
                Ok(O::object(fields))
            }
            Val::List(w) if w == v => {
                if let Val::Bottom(b) = self.scalar(v, &[]) {
                    return Err(self.error_of(&b, Some(v)));
                }
                let len = self.v(v).list.as_ref().map_or(0, |s| s.len);
                let mut out = Vec::with_capacity(len);
                for i in 0..len {
                    match self
                        .v(v)
                        .arcs
                        .get(&KeyRef::regular(&i.to_string()))
                        .copied()
                    {
                        Some(a) => out.push(self.export_as::<O>(a)?),
                        None => out.push(O::scalar(Value::Null)),
                    }
                }
                Ok(O::array(out))
            }
            other => self.scalar_out::<O>(&other, Some(v)),
        }
    }

    /// Concrete JSON of a value (structs and lists through their vertices), floats with the
    /// digits CUE keeps (`2.0` stays a float).
    pub(crate) fn json_of(&mut self, val: &Val) -> Result<Value, Error> {
        self.out_of::<Value>(val)
    }

    /// Compact JSON text of a value, integers of any size with all their digits.
    pub(crate) fn text_of(&mut self, val: &Val) -> Result<String, Error> {
        self.out_of::<JsonText>(val).map(|t| t.0)
    }

    fn out_of<O: Out>(&mut self, val: &Val) -> Result<O, Error> {
        match val.default_value() {
            Val::Struct(w) | Val::List(w) => self.export_as::<O>(w),
            other => self.scalar_out::<O>(&other, None),
        }
    }

    fn scalar_out<O: Out>(&mut self, val: &Val, at: Option<VId>) -> Result<O, Error> {
        let val = val.default_value();
        let json = match &val {
            Val::Null => Value::Null,
            Val::Bool(b) => Value::Bool(*b),
            Val::Int(i) => {
                if let Some(n) = i.to_i64() {
                    Value::from(n)
                } else if let Some(n) = i.to_u64() {
                    Value::from(n)
                } else {
                    let text = i.to_string();
                    self.count(text.len())?;
                    return O::big_int(text).map_err(|text| {
                        let mut e = Error::unsupported(format!(
                            "the integer {text} does not fit in 64 bits: a JSON value for \
                             Kubernetes cannot hold it exactly (make it a string: \"\\(x)\")"
                        ));
                        if let Some(v) = at {
                            e = e.with_path(self.path(v));
                        }
                        e
                    });
                }
            }
            Val::Float(f, s) => {
                let whole = f.fract() == 0.0;
                let integral = whole
                    && ((f.abs() < 9.0e15 && (*s == 0 || *s == crate::cue::value::SHORTEST))
                        || (O::WHOLE_FLOATS_AS_INTEGERS && f.abs() <= MAX_EXACT_INTEGER));
                if integral {
                    // |f| ≤ 2^53 here: the conversion is exact.
                    #[allow(clippy::cast_possible_truncation)]
                    Value::from(*f as i64)
                } else {
                    Number::from_f64(*f).map_or(Value::Null, Value::Number)
                }
            }
            Val::Str(s) => Value::String(s.to_string()),
            Val::Bytes(b) => {
                use base64::Engine as _;
                Value::String(base64::engine::general_purpose::STANDARD.encode(b))
            }
            Val::Struct(w) | Val::List(w) => return self.export_as::<O>(*w),
            Val::Bottom(b) => return Err(self.error_of(b, at)),
            other => {
                let what = match other {
                    Val::Disj(_) => format!("incomplete value {} (no default)", show(other)),
                    _ => format!(
                        "incomplete value {} (the value is not concrete)",
                        show(other)
                    ),
                };
                let positions = at
                    .map(|v| self.v(v).scalars.iter().map(|(_, p)| *p).take(1).collect())
                    .unwrap_or_default();
                let b = Bottom {
                    kind: ErrorKind::Incomplete,
                    message: what,
                    positions,
                    path: None,
                };
                return Err(self.error_of(&b, at));
            }
        };
        let size = match &json {
            Value::String(s) => s.len() + 2,
            _ => 8,
        };
        self.count(size)?;
        Ok(O::scalar(json))
    }

    fn count(&mut self, size: usize) -> Result<(), Error> {
        self.bytes = self.bytes.saturating_add(size);
        if self.bytes > self.limits.max_bytes {
            return Err(Error::new(
                ErrorKind::Limit,
                format!(
                    "the exported value is larger than the limit of {} bytes",
                    self.limits.max_bytes
                ),
            ));
        }
        if !self.step() {
            return Err(self.fatal_error());
        }
        Ok(())
    }

    pub(crate) fn fatal_error(&self) -> Error {
        self.fatal
            .clone()
            .unwrap_or_else(|| Error::new(ErrorKind::Limit, "evaluation stopped at a limit"))
    }
}

fn disj_pos(c: &Conjunct) -> Pos {
    match &c.src {
        Src::Expr(e) => e.pos,
        Src::Val(_, p) => *p,
    }
}

fn flatten(e: &Arc<crate::cue::ast::Expr>, default: bool, out: &mut Vec<(Src, bool)>) {
    match &e.kind {
        ExprKind::Binary(BinOp::Or, l, r) => {
            flatten(l, default, out);
            flatten(r, default, out);
        }
        ExprKind::Unary(UnOp::Default, inner) => flatten(inner, true, out),
        ExprKind::Paren(inner) if matches!(inner.kind, ExprKind::Binary(BinOp::Or, ..)) => {
            flatten(inner, default, out);
        }
        _ => out.push((Src::Expr(Arc::clone(e)), default)),
    }
}

/// The largest whole number a float64 holds with every smaller one: 2^53.
const MAX_EXACT_INTEGER: f64 = 9_007_199_254_740_992.0;

/// What an export builds: a `serde_json::Value`, or JSON text that keeps big integers exact.
trait Out: Sized {
    /// Whether a float that is a whole number (|x| ≤ 2^53) comes out as a JSON integer rather
    /// than with the digits CUE prints (`2.0`).
    const WHOLE_FLOATS_AS_INTEGERS: bool = false;
    fn scalar(value: Value) -> Self;
    /// An integer beyond 64 bits, as decimal digits (`Err` gives the digits back when this
    /// output cannot hold it).
    fn big_int(digits: String) -> Result<Self, String>;
    fn array(items: Vec<Self>) -> Self;
    fn object(fields: Vec<(String, Self)>) -> Self;
}

impl Out for Value {
    fn scalar(value: Value) -> Self {
        value
    }

    fn big_int(digits: String) -> Result<Self, String> {
        Err(digits)
    }

    fn array(items: Vec<Self>) -> Self {
        Value::Array(items)
    }

    fn object(fields: Vec<(String, Self)>) -> Self {
        Value::Object(fields.into_iter().collect::<Map<String, Value>>())
    }
}

/// JSON for Kubernetes objects, with numbers as KubeVela sends them: it decodes the JSON CUE
/// exports into Go values (every number a float64) and encodes them again, so a whole float
/// such as `4 / 2` (`2.0` in `cue export`) reaches the API server as `2`, which an integer field
/// accepts. Other floats keep their value; the numbers of `json.Marshal`, `yaml.Marshal` and of
/// the text export stay as CUE prints them.
struct ObjectJson(Value);

impl Out for ObjectJson {
    const WHOLE_FLOATS_AS_INTEGERS: bool = true;

    fn scalar(value: Value) -> Self {
        ObjectJson(value)
    }

    fn big_int(digits: String) -> Result<Self, String> {
        Err(digits)
    }

    fn array(items: Vec<Self>) -> Self {
        ObjectJson(Value::Array(items.into_iter().map(|i| i.0).collect()))
    }

    fn object(fields: Vec<(String, Self)>) -> Self {
        ObjectJson(Value::Object(
            fields
                .into_iter()
                .map(|(k, v)| (k, v.0))
                .collect::<Map<String, Value>>(),
        ))
    }
}

/// Compact JSON text, as `serde_json::to_string` writes it.
struct JsonText(String);

impl Out for JsonText {
    fn scalar(value: Value) -> Self {
        JsonText(value.to_string())
    }

    fn big_int(digits: String) -> Result<Self, String> {
        Ok(JsonText(digits))
    }

    fn array(items: Vec<Self>) -> Self {
        let mut out = String::with_capacity(2 + items.iter().map(|i| i.0.len() + 1).sum::<usize>());
        out.push('[');
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&item.0);
        }
        out.push(']');
        JsonText(out)
    }

    fn object(fields: Vec<(String, Self)>) -> Self {
        let mut out = String::from("{");
        for (i, (key, value)) in fields.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&Value::String(key.clone()).to_string());
            out.push(':');
            out.push_str(&value.0);
        }
        out.push('}');
        JsonText(out)
    }
}
