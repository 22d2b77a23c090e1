//! Structs: closedness groups, a struct's declarations added to its vertex, pattern
//! constraints applied to matching fields, and labels evaluated to keys.

use std::collections::HashSet;
use std::sync::Arc;

use super::{Conjunct, EnvId, EnvKind, Evaluator, Group, GroupFields, GroupId, Key, Src};
use crate::cue::ast::{Decl, Label, Marker, Pos, StructLit};
use crate::cue::error::ErrorKind;
use crate::cue::value::{bottom, VId, Val};

impl Evaluator {
    pub(crate) fn fresh_group(&mut self, parent: Option<GroupId>) -> GroupId {
        self.groups.push(Group {
            parent,
            active: false,
        });
        self.groups.len() - 1
    }

    pub(super) fn child_group(&mut self, group: Option<GroupId>, label: &Key) -> Option<GroupId> {
        let g = group?;
        if let Some(&c) = self.child_groups.get(&(g, label.clone())) {
            return Some(c);
        }
        let c = self.fresh_group(Some(g));
        self.child_groups.insert((g, label.clone()), c);
        Some(c)
    }

    pub(crate) fn group_active(&self, mut g: GroupId) -> bool {
        loop {
            let Some(group) = self.groups.get(g) else {
                return false;
            };
            if group.active {
                return true;
            }
            match group.parent {
                Some(p) => g = p,
                None => return false,
            }
        }
    }

    pub(super) fn group_fields(&mut self, v: VId, g: GroupId) -> &mut GroupFields {
        let vertex = self.vm(v);
        let at = if let Some(at) = vertex.groups.iter().position(|f| f.group == g) {
            at
        } else {
            vertex.groups.push(GroupFields {
                group: g,
                fields: HashSet::new(),
                open: false,
                patterns: Vec::new(),
            });
            vertex.groups.len() - 1
        };
        &mut vertex.groups[at]
    }

    pub(super) fn process_struct(
        &mut self,
        v: VId,
        lit: &Arc<StructLit>,
        env: EnvId,
        closed: Option<GroupId>,
    ) {
        if lit.is_struct() {
            self.vm(v).is_struct = true;
        }
        let scope = self.env(
            Some(env),
            EnvKind::Struct {
                vertex: v,
                lit: Arc::clone(lit),
            },
        );
        let has_embeds = lit.decls.iter().any(|d| matches!(d, Decl::Embed(_)));
        let closed = match closed {
            None if has_embeds => Some(self.fresh_group(None)),
            other => other,
        };
        if let Some(g) = closed {
            self.group_fields(v, g).open |= lit.open;
        }
        for decl in &lit.decls {
            match decl {
                Decl::Field(field) => {
                    let Some(label) = self.label(&field.label, scope, v, field.pos) else {
                        continue;
                    };
                    if let Some(g) = closed {
                        self.group_fields(v, g).fields.insert(label.clone());
                    }
                    let child = self.arc(v, &label, false, field.pos);
                    match field.marker {
                        Marker::Optional => self.vm(child).optional = true,
                        _ => self.vm(child).regular = true,
                    }
                    let group = self.child_group(closed, &label);
                    self.add(child, Src::Expr(Arc::clone(&field.value)), scope, group);
                }
                Decl::Pattern {
                    label,
                    value,
                    alias,
                } => {
                    let pattern = self.eval(label, scope);
                    if let Some(g) = closed {
                        self.group_fields(v, g).patterns.push(pattern.clone());
                    }
                    let env = match alias {
                        // The alias is bound per field when the pattern applies.
                        Some(name) => self.env(
                            Some(scope),
                            EnvKind::Bind {
                                name: Arc::from(format!("\u{0}alias:{name}")),
                                value: Val::Top,
                            },
                        ),
                        None => scope,
                    };
                    let conj = Conjunct {
                        src: Src::Expr(Arc::clone(value)),
                        env,
                        closed: None,
                    };
                    self.vm(v).patterns.push((pattern.clone(), conj.clone()));
                    let arcs = self.arcs_of(v);
                    for (name, a) in arcs {
                        self.apply_pattern(a, &name, &pattern, conj.clone());
                    }
                }
                Decl::Embed(expr) => self.add(v, Src::Expr(Arc::clone(expr)), scope, closed),
                Decl::Let { .. } => {}
                Decl::Comprehension(comp) => {
                    self.vm(v).maybe_struct = true;
                    self.vm(v).pending.push((Arc::clone(comp), scope, closed));
                }
            }
        }
    }

    pub(super) fn apply_pattern(&mut self, arc: VId, key: &Key, pattern: &Val, conj: Conjunct) {
        if !key.is_regular() || self.v(arc).index_label {
            return;
        }
        let name: &str = &key.name;
        let value = Val::Str(Arc::from(name));
        let matched = crate::cue::value::meet(pattern, &value);
        if matched.is_bottom() {
            return;
        }
        let alias = match self.envs.get(conj.env).map(|e| &e.kind) {
            Some(EnvKind::Bind { name: n, .. }) => {
                n.strip_prefix("\u{0}alias:").map(Arc::<str>::from)
            }
            _ => None,
        };
        let env = match alias {
            Some(alias) => self.env(
                Some(conj.env),
                EnvKind::Bind {
                    name: alias,
                    value: Val::Str(Arc::from(name)),
                },
            ),
            None => conj.env,
        };
        self.add(arc, conj.src, env, conj.closed);
    }

    /// A field label's text; dynamic labels are evaluated (an error is recorded on `v`).
    pub(super) fn label(&mut self, label: &Label, env: EnvId, v: VId, pos: Pos) -> Option<Key> {
        match label {
            Label::Ident(name) => Some(Key::ident(name)),
            Label::Str(name) => Some(Key::regular(Arc::from(name.as_str()))),
            Label::Dynamic(expr) => {
                let val = self.eval(expr, env).default_value();
                match val {
                    Val::Str(s) => Some(Key::regular(s)),
                    Val::Bottom(_) => {
                        self.vm(v).scalars.push((val, pos));
                        None
                    }
                    other => {
                        let message = format!(
                            "a field label must be a concrete string, not {}",
                            crate::cue::value::show(&other)
                        );
                        let kind = if other.is_concrete() {
                            ErrorKind::Conflict
                        } else {
                            ErrorKind::Incomplete
                        };
                        self.vm(v)
                            .scalars
                            .push((bottom(kind, message, vec![pos]), pos));
                        None
                    }
                }
            }
        }
    }
}
