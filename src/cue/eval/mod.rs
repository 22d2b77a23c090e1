//! The evaluator: a graph of vertices (one per field), each holding its conjuncts (an
//! expression with its lexical environment). A vertex's value is the unification of its
//! conjuncts, computed on demand ([`Evaluator::expand`]) so that the order of declarations does
//! not matter. Comprehensions are expanded once the struct's other declarations are collected,
//! pattern constraints apply to every matching field, disjunctions of structs are resolved by
//! trying each disjunct, and definitions are closed.

mod export;
mod expr;
mod label;
mod list;
mod structs;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use indexmap::IndexMap;

use super::ast::{Comprehension, Expr, ExprKind, File, Import, Pos, StructLit};
use super::error::{Error, ErrorKind, Position};
use super::value::{bottom, push_label, Bottom, VId, Val};
use super::Limits;
pub(crate) use label::{Key, KeyRef, LabelKind};

/// An environment id.
pub(crate) type EnvId = usize;
/// A closedness group id.
pub(crate) type GroupId = usize;

/// What a conjunct contributes.
#[derive(Debug, Clone)]
pub(crate) enum Src {
    Expr(Arc<Expr>),
    Val(Val, Pos),
}

/// One conjunct of a vertex.
#[derive(Debug, Clone)]
pub(crate) struct Conjunct {
    pub(crate) src: Src,
    pub(crate) env: EnvId,
    pub(crate) closed: Option<GroupId>,
}

/// A lexical scope.
#[derive(Debug)]
pub(crate) struct Env {
    pub(crate) parent: Option<EnvId>,
    pub(crate) kind: EnvKind,
}

#[derive(Debug)]
pub(crate) enum EnvKind {
    /// The package: every file's top-level declarations.
    Package {
        vertex: VId,
        files: Vec<Arc<StructLit>>,
    },
    /// A file's imports.
    File { imports: Arc<Vec<Import>> },
    /// A struct literal evaluated for `vertex`.
    Struct { vertex: VId, lit: Arc<StructLit> },
    /// A `for` or `let` binding.
    Bind { name: Arc<str>, value: Val },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    Fresh,
    Expanding,
    Expanded,
}

/// Closedness: fields a closed group allows at one vertex.
#[derive(Debug, Clone)]
pub(crate) struct GroupFields {
    pub(crate) group: GroupId,
    pub(crate) fields: HashSet<Key>,
    pub(crate) open: bool,
    pub(crate) patterns: Vec<Val>,
}

/// A closedness group: active once a definition or `close` is involved.
#[derive(Debug, Clone)]
pub(crate) struct Group {
    pub(crate) parent: Option<GroupId>,
    pub(crate) active: bool,
}

/// A list literal waiting to be combined into a vertex.
#[derive(Debug, Clone)]
pub(crate) struct ListConj {
    pub(crate) expr: Arc<Expr>,
    pub(crate) env: EnvId,
    pub(crate) closed: Option<GroupId>,
}

/// One field (or list element) of the value graph.
#[derive(Debug)]
pub(crate) struct Vertex {
    pub(crate) parent: Option<VId>,
    pub(crate) label: Arc<str>,
    pub(crate) kind: LabelKind,
    pub(crate) index_label: bool,
    pub(crate) arcs: IndexMap<Key, VId>,
    pub(crate) conjuncts: Vec<Conjunct>,
    pub(crate) done: usize,
    pub(crate) scalars: Vec<(Val, Pos)>,
    pub(crate) is_struct: bool,
    pub(crate) lists: Vec<ListConj>,
    pub(crate) lists_done: usize,
    pub(crate) list: Option<list::ListState>,
    pub(crate) pending: Vec<(Arc<Comprehension>, EnvId, Option<GroupId>)>,
    pub(crate) patterns: Vec<(Val, Conjunct)>,
    pub(crate) disjs: Vec<usize>,
    pub(crate) groups: Vec<GroupFields>,
    pub(crate) regular: bool,
    pub(crate) optional: bool,
    pub(crate) in_def: bool,
    pub(crate) state: State,
    pub(crate) value: Option<Val>,
    pub(crate) pos: Pos,
    /// Conjuncts whose evaluation met a reference cycle: evaluated again for the value.
    pub(crate) deferred: Vec<(Arc<Expr>, EnvId, Option<GroupId>)>,
    /// The value is being computed (a reference back to it is a cycle).
    pub(crate) computing: bool,
    /// Where conjuncts derived from the one being processed go (so fields keep their order).
    pub(crate) insert_at: usize,
    /// A struct literal with only comprehensions: a struct unless they embed a scalar.
    pub(crate) maybe_struct: bool,
}

impl Vertex {
    fn new(parent: Option<VId>, key: Key, index_label: bool, pos: Pos) -> Self {
        Vertex {
            parent,
            label: key.name,
            kind: key.kind,
            index_label,
            arcs: IndexMap::new(),
            conjuncts: Vec::new(),
            done: 0,
            scalars: Vec::new(),
            is_struct: false,
            lists: Vec::new(),
            lists_done: 0,
            list: None,
            pending: Vec::new(),
            patterns: Vec::new(),
            disjs: Vec::new(),
            groups: Vec::new(),
            regular: false,
            optional: false,
            in_def: false,
            state: State::Fresh,
            value: None,
            pos,
            deferred: Vec::new(),
            computing: false,
            insert_at: 0,
            maybe_struct: false,
        }
    }
}

/// The whole evaluation state of one package.
pub(crate) struct Evaluator {
    pub(crate) vertices: Vec<Vertex>,
    pub(crate) envs: Vec<Env>,
    pub(crate) groups: Vec<Group>,
    pub(crate) child_groups: HashMap<(GroupId, Key), GroupId>,
    pub(crate) names: Vec<String>,
    pub(crate) limits: Limits,
    pub(crate) steps: u64,
    pub(crate) depth: usize,
    pub(crate) deadline: Instant,
    pub(crate) fatal: Option<Error>,
    pub(crate) bytes: usize,
    /// How many reference cycles were met (values computed meanwhile are not cached).
    pub(crate) cycles: u64,
    /// The standard library.
    pub(crate) library: Library,
}

/// The standard library as the evaluator reaches it, given when the evaluator is built: the
/// builtins are written against the evaluator, so the evaluator does not import them.
#[derive(Clone, Copy)]
pub(crate) struct Library {
    /// The function or constant `name` of the imported package `path` (`""` for predeclared).
    pub(crate) lookup: fn(&str, &str) -> Option<Val>,
    /// Whether `name` of package `path` is a standard-library function not provided here.
    pub(crate) is_other: fn(&str, &str) -> bool,
    /// Calls the builtin `name` with its (unevaluated) arguments in `env`.
    pub(crate) call: fn(&mut Evaluator, &'static str, &[Arc<Expr>], EnvId, Pos) -> Val,
}

/// The root vertex id.
pub(crate) const ROOT: VId = 0;

impl Evaluator {
    /// Set up the root vertex with the files' bodies as conjuncts.
    pub(crate) fn new(
        files: &[File],
        names: Vec<String>,
        limits: &Limits,
        library: Library,
    ) -> Self {
        let mut ev = Evaluator {
            vertices: vec![Vertex::new(
                None,
                Key::regular(Arc::from("")),
                false,
                Pos::default(),
            )],
            envs: Vec::new(),
            groups: Vec::new(),
            child_groups: HashMap::new(),
            names,
            limits: limits.clone(),
            steps: 0,
            depth: 0,
            deadline: Instant::now() + limits.timeout,
            fatal: None,
            bytes: 0,
            cycles: 0,
            library,
        };
        let package = ev.env(
            None,
            EnvKind::Package {
                vertex: ROOT,
                files: files.iter().map(|f| Arc::clone(&f.body)).collect(),
            },
        );
        if let Some(root) = ev.vertices.get_mut(ROOT) {
            root.is_struct = true;
            root.regular = true;
        }
        for file in files {
            let env = ev.env(
                Some(package),
                EnvKind::File {
                    imports: Arc::new(file.imports.clone()),
                },
            );
            let pos = file.body.pos;
            let expr = Arc::new(Expr {
                kind: ExprKind::Struct(Arc::clone(&file.body)),
                pos,
            });
            ev.add(ROOT, Src::Expr(expr), env, None);
        }
        ev
    }

    /// Restart the clock and the counters for one public call.
    pub(crate) fn reset_budget(&mut self) {
        self.deadline = Instant::now() + self.limits.timeout;
        self.steps = 0;
        self.bytes = 0;
        self.fatal = None;
    }

    pub(crate) fn env(&mut self, parent: Option<EnvId>, kind: EnvKind) -> EnvId {
        self.envs.push(Env { parent, kind });
        self.envs.len() - 1
    }

    pub(crate) fn v(&self, id: VId) -> &Vertex {
        self.vertices
            .get(id)
            .unwrap_or_else(|| &self.vertices[ROOT])
    }

    /// The arcs of `id` (key and vertex), copied out so that the evaluator can be borrowed
    /// mutably while it walks them.
    pub(crate) fn arcs_of(&self, id: VId) -> Vec<(Key, VId)> {
        self.v(id)
            .arcs
            .iter()
            .map(|(k, &a)| (k.clone(), a))
            .collect()
    }

    pub(crate) fn vm(&mut self, id: VId) -> &mut Vertex {
        let id = if id < self.vertices.len() { id } else { ROOT };
        &mut self.vertices[id]
    }

    pub(crate) fn new_vertex(
        &mut self,
        parent: Option<VId>,
        key: Key,
        index: bool,
        pos: Pos,
    ) -> VId {
        let in_def = parent.is_some_and(|p| self.v(p).in_def) || key.kind == LabelKind::Definition;
        let mut vertex = Vertex::new(parent, key, index, pos);
        vertex.in_def = in_def;
        self.vertices.push(vertex);
        self.vertices.len() - 1
    }

    pub(crate) fn add(&mut self, v: VId, src: Src, env: EnvId, closed: Option<GroupId>) {
        self.vm(v).conjuncts.push(Conjunct { src, env, closed });
        self.vm(v).value = None;
    }

    /// Add a conjunct derived from the one being processed, right after it.
    fn insert_next(&mut self, v: VId, src: Src, env: EnvId, closed: Option<GroupId>) {
        let vertex = self.vm(v);
        let at = vertex
            .insert_at
            .max(vertex.done)
            .min(vertex.conjuncts.len());
        vertex.conjuncts.insert(at, Conjunct { src, env, closed });
        vertex.insert_at = at + 1;
        vertex.value = None;
    }

    /// The arc `label` of `v`, created (with the matching pattern constraints) if missing.
    pub(crate) fn arc(&mut self, v: VId, label: &Key, index: bool, pos: Pos) -> VId {
        if let Some(&id) = self.v(v).arcs.get(label) {
            return id;
        }
        let id = self.new_vertex(Some(v), label.clone(), index, pos);
        self.vm(v).arcs.insert(label.clone(), id);
        let patterns = self.v(v).patterns.clone();
        for (pattern, conj) in patterns {
            self.apply_pattern(id, label, &pattern, conj);
        }
        id
    }

    // --- budget ------------------------------------------------------------------------------

    /// Count one step; false once a limit is reached (the error is in `fatal`).
    pub(crate) fn step(&mut self) -> bool {
        if self.fatal.is_some() {
            return false;
        }
        self.steps += 1;
        if self.steps > self.limits.max_steps {
            self.fatal = Some(Error::new(
                ErrorKind::Limit,
                format!(
                    "evaluation took more than {} steps (a runaway comprehension or a self-referencing structure?)",
                    self.limits.max_steps
                ),
            ));
            return false;
        }
        if self.steps.is_multiple_of(1024) && Instant::now() > self.deadline {
            self.fatal = Some(Error::new(
                ErrorKind::Limit,
                format!(
                    "evaluation took longer than {:?} (the timeout)",
                    self.limits.timeout
                ),
            ));
            return false;
        }
        true
    }

    /// Enter one nesting level; false (with `fatal` set) past the depth limit.
    pub(crate) fn enter(&mut self) -> bool {
        if self.depth >= self.limits.max_depth.saturating_mul(4).max(16) {
            if self.fatal.is_none() {
                self.fatal = Some(Error::new(
                    ErrorKind::Limit,
                    format!(
                        "evaluation nested deeper than the limit (depth {}): a self-referencing structure?",
                        self.limits.max_depth
                    ),
                ));
            }
            return false;
        }
        self.depth += 1;
        true
    }

    pub(crate) fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    pub(crate) fn limit_bottom(&self) -> Val {
        let message = self
            .fatal
            .as_ref()
            .map_or_else(|| "evaluation stopped".to_string(), |e| e.message.clone());
        bottom(ErrorKind::Limit, message, Vec::new())
    }

    // --- expansion ---------------------------------------------------------------------------

    /// Collect every conjunct of `v` into its arcs, scalars and lists; run its comprehensions;
    /// resolve disjunctions of structs. Idempotent, and incremental when conjuncts were added.
    pub(crate) fn expand(&mut self, v: VId) {
        let state = self.v(v).state;
        if state == State::Expanding {
            return;
        }
        if state == State::Expanded
            && self.v(v).done == self.v(v).conjuncts.len()
            && self.v(v).pending.is_empty()
            && self.v(v).lists_done == self.v(v).lists.len()
        {
            return;
        }
        if !self.enter() {
            return;
        }
        self.vm(v).state = State::Expanding;
        loop {
            while self.v(v).done < self.v(v).conjuncts.len() {
                if !self.step() {
                    break;
                }
                let index = self.v(v).done;
                let Some(conj) = self.v(v).conjuncts.get(index).cloned() else {
                    break;
                };
                self.vm(v).done += 1;
                self.vm(v).insert_at = index + 1;
                self.process(v, index, conj);
            }
            if self.fatal.is_some() {
                break;
            }
            let pending = std::mem::take(&mut self.vm(v).pending);
            if pending.is_empty() {
                break;
            }
            for (comp, env, closed) in pending {
                self.comprehension(v, &comp, 0, env, closed);
            }
        }
        self.finish_lists(v);
        self.vm(v).state = State::Expanded;
        if !self.v(v).disjs.is_empty() && self.fatal.is_none() {
            self.resolve_disjunctions(v);
        }
        self.vm(v).value = None;
        self.leave();
    }

    /// Process one conjunct of `v`.
    fn process(&mut self, v: VId, index: usize, conj: Conjunct) {
        let expr = match conj.src {
            Src::Val(val, pos) => {
                self.add_value(v, val, pos, conj.closed);
                return;
            }
            Src::Expr(expr) => expr,
        };
        match &expr.kind {
            ExprKind::Struct(lit) => self.process_struct(v, lit, conj.env, conj.closed),
            ExprKind::Paren(inner) => {
                self.insert_next(v, Src::Expr(Arc::clone(inner)), conj.env, conj.closed);
            }
            ExprKind::Binary(super::ast::BinOp::And, l, r) => {
                self.insert_next(v, Src::Expr(Arc::clone(l)), conj.env, conj.closed);
                self.insert_next(v, Src::Expr(Arc::clone(r)), conj.env, conj.closed);
            }
            ExprKind::Value(val) => self.add_value(v, (**val).clone(), expr.pos, conj.closed),
            ExprKind::List { .. } => {
                self.vm(v).lists.push(ListConj {
                    expr: Arc::clone(&expr),
                    env: conj.env,
                    closed: conj.closed,
                });
            }
            ExprKind::Binary(super::ast::BinOp::Or, ..)
                if self.struct_disjunction(&expr, conj.env) =>
            {
                self.vm(v).disjs.push(index);
            }
            _ => {
                let cycles = self.cycles;
                let val = self.eval(&expr, conj.env);
                if self.cycles != cycles && !matches!(val, Val::Struct(_) | Val::List(_)) {
                    self.vm(v)
                        .deferred
                        .push((Arc::clone(&expr), conj.env, conj.closed));
                } else {
                    self.add_value(v, val, expr.pos, conj.closed);
                }
            }
        }
    }

    /// Add an evaluated value to `v`: structs and lists are copied conjunct by conjunct.
    pub(crate) fn add_value(&mut self, v: VId, val: Val, pos: Pos, closed: Option<GroupId>) {
        match val {
            Val::Struct(w) | Val::List(w) => self.copy_from(v, w, pos, closed),
            Val::Disj(ref ds)
                if ds
                    .iter()
                    .any(|(d, _)| matches!(d, Val::Struct(_) | Val::List(_))) =>
            {
                let index = self.v(v).conjuncts.len();
                self.vm(v).conjuncts.push(Conjunct {
                    src: Src::Val(val.clone(), pos),
                    env: 0,
                    closed,
                });
                self.vm(v).done = self.v(v).done.max(index + 1);
                self.vm(v).disjs.push(index);
            }
            other => self.vm(v).scalars.push((other, pos)),
        }
    }

    /// Unify the value of vertex `w` into `v` by copying its conjuncts.
    fn copy_from(&mut self, v: VId, w: VId, pos: Pos, closed: Option<GroupId>) {
        if v == w {
            return;
        }
        if self.is_ancestor(w, v) {
            let path = self.path(v);
            self.vm(v).scalars.push((
                bottom(
                    ErrorKind::Other,
                    format!("structural cycle: {path} refers to a struct that contains it"),
                    vec![pos],
                ),
                pos,
            ));
            return;
        }
        let def = self.v(w).in_def;
        let closed = if def {
            let g = closed.unwrap_or_else(|| self.fresh_group(None));
            if let Some(group) = self.groups.get_mut(g) {
                group.active = true;
            }
            Some(g)
        } else {
            closed
        };
        self.expand(w);
        let conjuncts = self.v(w).conjuncts.clone();
        for conj in conjuncts {
            let closed = closed.or(conj.closed);
            self.insert_next(v, conj.src, conj.env, closed);
        }
        self.vm(v).value = None;
    }

    fn is_ancestor(&self, a: VId, mut v: VId) -> bool {
        while let Some(p) = self.v(v).parent {
            if p == a {
                return true;
            }
            v = p;
        }
        false
    }

    /// Run the clauses of a comprehension from `at`, adding its body to `v` for each result.
    pub(crate) fn comprehension(
        &mut self,
        v: VId,
        comp: &Arc<Comprehension>,
        at: usize,
        env: EnvId,
        closed: Option<GroupId>,
    ) {
        if !self.step() {
            return;
        }
        let Some(clause) = comp.clauses.get(at) else {
            self.add(v, Src::Expr(Arc::clone(&comp.body)), env, closed);
            return;
        };
        match self.clause_envs(clause, env, comp.pos) {
            Ok(envs) => {
                for e in envs {
                    self.comprehension(v, comp, at + 1, e, closed);
                }
            }
            Err(b) => self.vm(v).scalars.push((b, comp.pos)),
        }
    }

    /// The path of a vertex for messages: `output.spec.containers[0].image`.
    pub(crate) fn path(&self, v: VId) -> String {
        let mut labels = Vec::new();
        let mut at = v;
        while let Some(p) = self.v(at).parent {
            let vx = self.v(at);
            // A regular field named like a definition or hidden field is written quoted.
            let quote = vx.kind.is_regular() && vx.label.starts_with(['#', '_']);
            labels.push((Arc::clone(&vx.label), vx.index_label, quote));
            at = p;
        }
        let mut path = String::new();
        for (label, index, quote) in labels.iter().rev() {
            if *quote && !*index {
                let quoted = serde_json::to_string(&**label).unwrap_or_default();
                if path.is_empty() {
                    path.push_str(&quoted);
                } else {
                    path.push('[');
                    path.push_str(&quoted);
                    path.push(']');
                }
            } else {
                push_label(&mut path, label, *index);
            }
        }
        path
    }

    /// The position of an AST node as a public [`Position`].
    pub(crate) fn position(&self, pos: Pos) -> Position {
        let file = usize::try_from(pos.file)
            .ok()
            .and_then(|i| self.names.get(i))
            .cloned()
            .unwrap_or_default();
        Position {
            file,
            line: pos.line,
            column: pos.column,
        }
    }

    /// A bottom value as a public error at `v`.
    pub(crate) fn error_of(&self, b: &Bottom, v: Option<VId>) -> Error {
        if let Some(fatal) = &self.fatal {
            return fatal.clone();
        }
        let mut positions: Vec<Position> = Vec::new();
        for p in &b.positions {
            if p.line == 0 {
                continue;
            }
            let p = self.position(*p);
            if !positions.contains(&p) {
                positions.push(p);
            }
        }
        Error {
            kind: b.kind,
            path: b
                .path
                .clone()
                .or_else(|| v.map(|v| self.path(v)))
                .filter(|p| !p.is_empty()),
            message: b.message.clone(),
            positions,
        }
    }
}

/// Fill in the file names of a parser error's positions (the parser knows only indexes).
pub(crate) fn name_positions(mut error: Error, names: &[String]) -> Error {
    for p in &mut error.positions {
        if let Some(name) = p.file.parse::<usize>().ok().and_then(|i| names.get(i)) {
            p.file.clone_from(name);
        }
    }
    error
}
