//! Lists (list literals with comprehensions and `...T`, combined into one vertex whose arcs
//! are the elements) and the clauses of comprehensions.

use std::collections::HashSet;
use std::sync::Arc;

use num_bigint::BigInt;

use super::expr::{conflict_at, incomplete};

use super::{Conjunct, EnvId, EnvKind, Evaluator, GroupId, Key, ListConj, Src};
use crate::cue::ast::{Clause, Comprehension, Elem, ExprKind, Pos};
use crate::cue::error::ErrorKind;
use crate::cue::value::{bottom, show, VId, Val};

/// The combined shape of a list vertex.
#[derive(Debug, Clone, Default)]
pub(crate) struct ListState {
    /// The number of elements.
    pub(crate) len: usize,
    /// The length a closed list literal fixed.
    pub(crate) fixed: Option<usize>,
    /// `...T` element types with the index they start at.
    pub(crate) types: Vec<(usize, Conjunct)>,
    pub(crate) applied: HashSet<(usize, usize)>,
}

impl Evaluator {
    /// Combine the list literals of `v` collected so far.
    pub(crate) fn finish_lists(&mut self, v: VId) {
        while self.v(v).lists_done < self.v(v).lists.len() {
            let index = self.v(v).lists_done;
            self.vm(v).lists_done += 1;
            let Some(lc) = self.v(v).lists.get(index).cloned() else {
                break;
            };
            self.list_literal(v, &lc);
        }
        let Some(state) = self.v(v).list.clone() else {
            return;
        };
        for (t, (start, conj)) in state.types.iter().enumerate() {
            for i in *start..state.len {
                if self
                    .v(v)
                    .list
                    .as_ref()
                    .is_none_or(|s| s.applied.contains(&(t, i)))
                {
                    continue;
                }
                if let Some(s) = self.vm(v).list.as_mut() {
                    s.applied.insert((t, i));
                }
                let label = Key::regular(Arc::from(i.to_string()));
                let arc = self.arc(v, &label, true, self.v(v).pos);
                self.vm(arc).regular = true;
                self.add(arc, conj.src.clone(), conj.env, conj.closed);
            }
        }
    }

    fn list_literal(&mut self, v: VId, lc: &ListConj) {
        let ExprKind::List { elems, rest } = &lc.expr.kind else {
            return;
        };
        let pos = lc.expr.pos;
        let mut items: Vec<(Src, EnvId)> = Vec::new();
        for elem in elems {
            match elem {
                Elem::Expr(e) => items.push((Src::Expr(Arc::clone(e)), lc.env)),
                Elem::Comprehension(c) => {
                    let mut envs = Vec::new();
                    if let Err(b) = self.comp_envs(c, 0, lc.env, &mut envs) {
                        self.vm(v).scalars.push((b, c.pos));
                    }
                    for env in envs {
                        items.push((Src::Expr(Arc::clone(&c.body)), env));
                    }
                }
            }
        }
        let count = items.len();
        for (i, (src, env)) in items.into_iter().enumerate() {
            let label = Key::regular(Arc::from(i.to_string()));
            let arc = self.arc(v, &label, true, pos);
            self.vm(arc).regular = true;
            let group = self.list_group(lc.closed);
            self.add(arc, src, env, group);
        }
        let closed = rest.is_none();
        self.set_list_len(v, count, closed, pos);
        if let Some(Some(t)) = rest {
            let conj = Conjunct {
                src: Src::Expr(Arc::clone(t)),
                env: lc.env,
                closed: self.list_group(lc.closed),
            };
            if let Some(s) = self.vm(v).list.as_mut() {
                s.types.push((count, conj));
            }
        }
    }

    fn list_group(&mut self, closed: Option<GroupId>) -> Option<GroupId> {
        closed.map(|g| self.fresh_group(Some(g)))
    }

    /// Record a list literal of `count` elements (closed or open) on `v`.
    pub(crate) fn set_list_len(&mut self, v: VId, count: usize, closed: bool, pos: Pos) {
        let state = self.vm(v).list.get_or_insert_with(ListState::default);
        let mut conflict = None;
        if closed {
            match state.fixed {
                Some(n) if n != count => conflict = Some((n, count)),
                _ => state.fixed = Some(count),
            }
        }
        if let Some(n) = state.fixed {
            if state.len > n {
                conflict = Some((n, state.len));
            }
        }
        state.len = state.len.max(count);
        if let Some((a, b)) = conflict {
            self.vm(v).scalars.push((
                bottom(
                    ErrorKind::Conflict,
                    format!("incompatible list lengths ({a} and {b})"),
                    vec![pos],
                ),
                pos,
            ));
        }
    }

    /// The environments a comprehension's clauses produce, from clause `at`.
    pub(crate) fn comp_envs(
        &mut self,
        comp: &Arc<Comprehension>,
        at: usize,
        env: EnvId,
        out: &mut Vec<EnvId>,
    ) -> Result<(), crate::cue::value::Val> {
        if !self.step() {
            return Err(self.limit_bottom());
        }
        let Some(clause) = comp.clauses.get(at) else {
            out.push(env);
            return Ok(());
        };
        for e in self.clause_envs(clause, env, comp.pos)? {
            self.comp_envs(comp, at + 1, e, out)?;
        }
        Ok(())
    }

    /// The environments a comprehension clause yields.
    pub(crate) fn clause_envs(
        &mut self,
        clause: &Clause,
        env: EnvId,
        pos: Pos,
    ) -> Result<Vec<EnvId>, Val> {
        match clause {
            Clause::If(cond) => match self.eval(cond, env).default_value() {
                Val::Bool(true) => Ok(vec![env]),
                Val::Bool(false) => Ok(Vec::new()),
                b @ Val::Bottom(_) => Err(b),
                other if !other.is_concrete() => Err(incomplete(
                    format!("incomplete condition {} of `if`", show(&other)),
                    cond.pos,
                )),
                other => Err(conflict_at(
                    format!("the condition of `if` must be a bool, not {}", show(&other)),
                    cond.pos,
                )),
            },
            Clause::Let { name, expr } => {
                let value = self.eval(expr, env);
                Ok(vec![self.env(
                    Some(env),
                    EnvKind::Bind {
                        name: Arc::from(name.as_str()),
                        value,
                    },
                )])
            }
            Clause::For { key, value, source } => {
                let src = self.eval(source, env).default_value();
                let pairs = self.iterate(&src, pos)?;
                let mut out = Vec::with_capacity(pairs.len());
                for (k, v) in pairs {
                    let mut e = env;
                    if let Some(key) = key {
                        e = self.env(
                            Some(e),
                            EnvKind::Bind {
                                name: Arc::from(key.as_str()),
                                value: k,
                            },
                        );
                    }
                    e = self.env(
                        Some(e),
                        EnvKind::Bind {
                            name: Arc::from(value.as_str()),
                            value: v,
                        },
                    );
                    out.push(e);
                }
                Ok(out)
            }
        }
    }

    /// `(key, value)` pairs of a struct's regular fields or a list's elements.
    fn iterate(&mut self, src: &Val, pos: Pos) -> Result<Vec<(Val, Val)>, Val> {
        match src {
            Val::Struct(w) => {
                let w = *w;
                if self.v(w).state == super::State::Expanding && w != super::ROOT {
                    return Err(bottom(
                        ErrorKind::Other,
                        format!(
                            "cycle error: a comprehension iterates over `{}`, the struct it adds fields to",
                            self.path(w)
                        ),
                        vec![pos],
                    ));
                }
                self.expand(w);
                let arcs = self.arcs_of(w);
                let mut out = Vec::new();
                for (k, a) in arcs {
                    if !k.is_regular() || !self.v(a).regular {
                        continue;
                    }
                    let v = self.value_of(a);
                    out.push((Val::Str(k.name), v));
                }
                Ok(out)
            }
            Val::List(_) => Ok(self
                .list_items(src, pos)?
                .into_iter()
                .enumerate()
                .map(|(i, v)| (Val::Int(BigInt::from(i)), v))
                .collect()),
            Val::Bottom(_) => Err(src.clone()),
            other if !other.is_concrete() => Err(incomplete(
                format!("cannot range over the incomplete value {}", show(other)),
                pos,
            )),
            other => Err(conflict_at(
                format!("cannot range over {}", show(other)),
                pos,
            )),
        }
    }
}
