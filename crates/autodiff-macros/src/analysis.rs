//! Analyses over the IR.
//!
//! * **Activity**: a local is active when its value can depend on an active input. Only
//!   active values get tangents and adjoints; everything else is plain primal code, so a
//!   constant call or integer index costs nothing and needs no derivative.
//! * **Needed values**: a local whose old value the reverse sweep may read. Overwrites of
//!   such a local record the old value so that the reverse sweep can restore it; locals
//!   only ever accumulated into (`s += ..`) need no record, which is why Rosenbrock's
//!   reverse sweep needs no tape.
//! * **Writes**: which locals a statement may overwrite, to decide whether a `let` can be
//!   recomputed in the reverse sweep instead of recorded.
//! * **Dead values**: the scalar locals whose values no adjoint depends on (`sqnorm` of
//!   `main = a - 0.5 * sqnorm`, a term only added into a sum). The reverse sweep still
//!   names them (an adjoint's zero is made from its primal), but need not record them.

use crate::activity::Mode;
use crate::collections::{HashMap, HashSet};
use crate::ir::*;
use crate::lower::walk_idents;
use proc_macro2::TokenStream;
use quote::quote;

pub struct Analysis {
    pub active: HashSet<String>,
    /// The locals that a statement evaluated again in the reverse sweep reads.
    pub needed: HashSet<String>,
    /// The part of `needed` that the sweep depends on: what the statements of dead values
    /// (see `dead`) read is left out. An overwritten local outside it needs no record:
    /// the dead statements that read it may see a later value.
    pub live_needed: HashSet<String>,
    /// Nothing is differentiated, closure parameters included: the primal function of a
    /// closure that becomes a `DiffFn` (its calls of a closure parameter are plain
    /// `call`s; a closure parameter is otherwise always taken to carry derivatives).
    pub primal_only: bool,
    /// With `primal_only`: the calls that go through the callee's protocol call its
    /// augmented forward sweep (`__ad_aug`) and keep the value, dropping the state. This is
    /// the value function of a closure built by reverse-mode code, so that a callee's
    /// reverse rule, not its forward rule, runs in a reverse-mode derivative.
    pub augmented_values: bool,
    /// The locals holding a struct built in the body (`Op::StructLit`), with its path and
    /// members: the struct has no `ZeroLike`, so a zero shaped like it is built member by
    /// member.
    pub structs: HashMap<String, (syn::Path, Vec<syn::Member>)>,
    /// The locals bound by `let` whose values the reverse sweep never reads: see
    /// [`dead_values`].
    pub dead: HashSet<String>,
    /// The locals holding a copy of a call's struct (`let mut acc = V2::new(..);`, see
    /// `CopyKind::Struct`): whole values of a type the macro does not see into, saved with
    /// `__ad::snapshot`, never as a slice.
    pub struct_copies: HashSet<String>,
    /// The `ndarray` arrays the function creates (`let mut h = Array1::zeros(n);`): read
    /// and written by index like a local buffer, but no slice of one can be taken
    /// (`h[..n]`), so a loop that overwrites one is recorded element by element.
    pub arrays: HashSet<String>,
    /// The locals bound with `let mut`: a method called on one may take `&mut self`, so
    /// its tangent is lent mutably (`let mut st = St::zeros(n);` holds a struct whose
    /// member a later statement makes active).
    pub mutable_lets: HashSet<String>,
}

/// The analysis of `body` for a companion in `mode`. Needed and dead values only shape a
/// reverse sweep, so a forward companion (the larger share of the nested variants) does
/// without them.
pub fn analyse(body: &Body, active_params: &[String], frozen: &[String], mode: Mode) -> Analysis {
    let mut active: HashSet<String> = active_params.iter().cloned().collect();
    let frozen: HashSet<String> = frozen.iter().cloned().collect();
    loop {
        let before = active.len();
        activity_block(&body.block, &mut active, &frozen);
        if active.len() == before {
            break;
        }
    }
    let mut needed = HashSet::default();
    let mut live_needed = HashSet::default();
    let mut dead = HashSet::default();
    if mode == Mode::Reverse {
        needed_block(&body.block, &mut needed);
        dead = dead_values(&body.block, &active);
        // A dead local's value is not read: an old value of `s` that only computing
        // `let t = s + u;` again reads need not be recorded when `t` is dead. Unless
        // the value goes into a buffer's element: the reverse sweep may fill the buffer
        // again (a scratch buffer computed again, not saved), computing it from `s`.
        let stored = stored_values(&body.block);
        let unread: HashSet<String> = dead.difference(&stored).cloned().collect();
        let dead = Dead {
            values: &unread,
            active: &active,
        };
        live_reads_block(&body.block, Some(&dead), &mut live_needed);
    }
    let mut structs = HashMap::default();
    struct_locals(&body.block, &mut structs);
    // Copies of a call's struct (`Op::CloneOf` of a struct), and `let mut` locals.
    let mut struct_copies = HashSet::default();
    let is_struct_copy = |_, op: &Op| matches!(op, Op::CloneOf(_, CopyKind::Struct { .. }));
    let_locals(&body.block, &is_struct_copy, &mut struct_copies);
    let mut arrays = HashSet::default();
    array_locals(&body.block, &mut arrays);
    let mut mutable_lets = HashSet::default();
    let_locals(&body.block, &|mutable, _: &Op| mutable, &mut mutable_lets);
    for s in &body.fixed_structs {
        mutable_lets.remove(s);
    }
    Analysis {
        active,
        needed,
        live_needed,
        primal_only: false,
        augmented_values: false,
        structs,
        dead,
        struct_copies,
        arrays,
        mutable_lets,
    }
}

/// The locals of `b`, its branches and loops included, whose `let` (its mutability and
/// operation) satisfies `keep`.
fn let_locals(b: &Block, keep: &impl Fn(bool, &Op) -> bool, out: &mut HashSet<String>) {
    for s in b {
        match s {
            Stmt::Let { var, mutable, op } if keep(*mutable, op) => {
                out.insert(var.to_string());
            }
            Stmt::If { then, els, .. } => {
                let_locals(then, keep, out);
                let_locals(els, keep, out);
            }
            Stmt::For { body, .. } | Stmt::Loop { body, .. } => let_locals(body, keep, out),
            _ => {}
        }
    }
}

/// The `ndarray` arrays a function creates (see `Analysis::arrays`), and in a companion
/// lowered again their tangents and shadows (`__ad::zero_like(&h)` of one), in the order
/// they are bound.
fn array_locals(b: &Block, out: &mut HashSet<String>) {
    for s in b {
        match s {
            Stmt::Let {
                var,
                op: Op::NewVec(t),
                ..
            } if crate::forward::is_array_constructor(t)
                || zero_like_of(t).is_some_and(|a| out.contains(&a)) =>
            {
                out.insert(var.to_string());
            }
            Stmt::If { then, els, .. } => {
                array_locals(then, out);
                array_locals(els, out);
            }
            Stmt::For { body, .. } | Stmt::Loop { body, .. } => array_locals(body, out),
            _ => {}
        }
    }
}

/// `b` of `__ad::zero_like(&b)`.
fn zero_like_of(t: &TokenStream) -> Option<String> {
    let tts: Vec<proc_macro2::TokenTree> = t.clone().into_iter().collect();
    let [
        ..,
        proc_macro2::TokenTree::Ident(f),
        proc_macro2::TokenTree::Group(g),
    ] = &tts[..]
    else {
        return None;
    };
    let arg: Vec<proc_macro2::TokenTree> = g.stream().into_iter().collect();
    match &arg[..] {
        [
            proc_macro2::TokenTree::Punct(p),
            proc_macro2::TokenTree::Ident(a),
        ] if f == "zero_like" && p.as_char() == '&' => Some(a.to_string()),
        _ => None,
    }
}

/// The locals whose values go into a buffer's elements (`buf[j] = t;`), and the locals
/// those are computed from, transitively.
fn stored_values(b: &[Stmt]) -> HashSet<String> {
    fn walk(
        b: &[Stmt],
        stored: &mut HashSet<String>,
        inputs: &mut HashMap<String, HashSet<String>>,
    ) {
        for s in b {
            match s {
                Stmt::Let { var, op, .. } => {
                    op_reads(op, inputs.entry(var.to_string()).or_default());
                }
                Stmt::Assign { place, val, .. } if !place.proj.is_empty() => {
                    operand_reads(val, stored);
                }
                Stmt::If { then, els, .. } => {
                    walk(then, stored, inputs);
                    walk(els, stored, inputs);
                }
                Stmt::For { body, .. } | Stmt::Loop { body, .. } => walk(body, stored, inputs),
                _ => {}
            }
        }
    }
    let mut stored = HashSet::default();
    let mut inputs = HashMap::default();
    walk(b, &mut stored, &mut inputs);
    let mut work: Vec<String> = stored.iter().cloned().collect();
    while let Some(v) = work.pop() {
        for d in inputs.remove(&v).unwrap_or_default() {
            if stored.insert(d.clone()) {
                work.push(d);
            }
        }
    }
    stored
}

/// The locals of `b` that hold a struct built in the body: its literal's local, and the
/// locals it is moved or copied into (`let q = p;`).
fn struct_locals(b: &Block, out: &mut HashMap<String, (syn::Path, Vec<syn::Member>)>) {
    for s in b {
        match s {
            Stmt::Let {
                var,
                op: Op::StructLit(path, fields),
                ..
            } => {
                let members = fields.iter().map(|(m, _)| m.clone()).collect();
                out.insert(var.to_string(), (path.clone(), members));
            }
            Stmt::Let {
                var,
                op: Op::Use(Operand::Var(w)),
                ..
            } => {
                if let Some(shape) = out.get(&w.to_string()).cloned() {
                    out.insert(var.to_string(), shape);
                }
            }
            Stmt::If { then, els, .. } => {
                struct_locals(then, out);
                struct_locals(els, out);
            }
            Stmt::For { body, .. } | Stmt::Loop { body, .. } => struct_locals(body, out),
            _ => {}
        }
    }
}

impl Analysis {
    /// A zero shaped like the local `v`: `__ad::zero_like(&v)`, or for a struct built in
    /// the body the same struct with each member's zero.
    pub fn zero_like(&self, v: &proc_macro2::Ident) -> TokenStream {
        match self.structs.get(&v.to_string()) {
            Some((path, members)) => quote!(#path { #(#members: __ad::zero_like(&#v.#members)),* }),
            None => quote!(__ad::zero_like(&#v)),
        }
    }

    pub fn is_active(&self, v: &proc_macro2::Ident) -> bool {
        self.active.contains(&v.to_string())
    }
    pub fn operand_active(&self, o: &Operand) -> bool {
        o.var().is_some_and(|v| self.is_active(v))
    }
    pub fn place_active(&self, p: &Place) -> bool {
        self.is_active(&p.base)
    }
    pub fn arg_active(&self, a: &Arg) -> bool {
        match a {
            Arg::Val(o) => self.operand_active(o),
            Arg::Ref(p, _) | Arg::Copied(p) => self.place_active(p),
            Arg::Closure(c) => c.captures.iter().any(|v| self.is_active(v)),
            // A closure parameter may carry the derivatives of what it captured.
            Arg::ClosureParam(_) => !self.primal_only,
        }
    }
    pub fn call_active(&self, c: &Call) -> bool {
        c.args.iter().any(|a| self.arg_active(a))
            || matches!(&c.callee, Callee::Method(p, _) if self.place_active(p))
            || (matches!(&c.callee, Callee::ClosureParam(..)) && !self.primal_only)
    }
    /// Whether a call goes through the callee's derivative companions: when an argument is
    /// active, and also when one is passed by reference, when there is none, or when the
    /// call is made for its effect alone (`tick(3);`, `backend.sync();`), so that a custom
    /// rule of the callee runs even when everything is constant. A call with only constant
    /// scalar arguments whose value is used (`scale(n)`, `f64::from(k)`) is plain primal
    /// code.
    pub fn call_uses_protocol(&self, c: &Call) -> bool {
        if self.call_active(c) {
            return true;
        }
        let by_ref = c.args.iter().any(|a| !matches!(a, Arg::Val(_)));
        match &c.callee {
            Callee::Path(_) => by_ref || c.args.is_empty() || c.effect_only,
            Callee::Assoc(..) => by_ref || c.effect_only,
            Callee::Method(..) => by_ref || c.effect_only,
            Callee::ClosureParam(..) => !self.primal_only,
        }
    }

    pub fn op_active(&self, op: &Op) -> bool {
        match op {
            Op::Use(o)
            | Op::Neg(o)
            | Op::Cast(o, _)
            | Op::VecRepeat(o, _)
            | Op::ArrRepeat(o, _) => self.operand_active(o),
            Op::Bin(_, a, b) => self.operand_active(a) || self.operand_active(b),
            Op::Math(_, ops) | Op::ArrLit(ops, _) => ops.iter().any(|o| self.operand_active(o)),
            Op::StructLit(_, fields) => fields.iter().any(|(_, o)| self.operand_active(o)),
            Op::Load(p) | Op::CloneOf(p, _) | Op::Pop(p) => self.place_active(p),
            Op::Call(c) => self.call_active(c),
            Op::Inactive(_) | Op::NewVec(_) => false,
        }
    }
    pub fn needs(&self, v: &proc_macro2::Ident) -> bool {
        self.needed.contains(&v.to_string())
    }
}

fn mark(active: &mut HashSet<String>, frozen: &HashSet<String>, v: &proc_macro2::Ident) {
    let s = v.to_string();
    if !frozen.contains(&s) {
        active.insert(s);
    }
}

/// Runs `f` on an [`Analysis`] over `active` without copying the set (the fixpoint visits
/// every statement of large re-lowered companions, so a copy per statement would be
/// quadratic).
fn viewing<R>(active: &mut HashSet<String>, f: impl FnOnce(&Analysis) -> R) -> R {
    let an = Analysis {
        active: std::mem::take(active),
        needed: HashSet::default(),
        live_needed: HashSet::default(),
        primal_only: false,
        augmented_values: false,
        structs: HashMap::default(),
        dead: HashSet::default(),
        struct_copies: HashSet::default(),
        arrays: HashSet::default(),
        mutable_lets: HashSet::default(),
    };
    let r = f(&an);
    *active = an.active;
    r
}

fn activity_block(b: &Block, active: &mut HashSet<String>, frozen: &HashSet<String>) {
    for s in b {
        match s {
            Stmt::Let { var, op, .. } => {
                let (is, outs) = viewing(active, |an| (an.op_active(op), op_call_outputs(op, an)));
                if is {
                    mark(active, frozen, var);
                }
                outs.iter().for_each(|v| mark(active, frozen, v));
            }
            Stmt::LetTuple { vars, op } => {
                let (is, outs) = viewing(active, |an| (an.op_active(op), op_call_outputs(op, an)));
                if is {
                    vars.iter().for_each(|v| mark(active, frozen, v));
                }
                outs.iter().for_each(|v| mark(active, frozen, v));
            }
            Stmt::Assign { place, val, .. }
            | Stmt::Push { place, val, .. }
            | Stmt::Fill { place, val } => {
                if viewing(active, |an| an.operand_active(val)) {
                    mark(active, frozen, &place.base);
                }
            }
            Stmt::CopyFrom { dst, src, mode } => {
                if viewing(active, |an| an.place_active(src)) {
                    mark(active, frozen, &dst.base);
                }
                // A swap moves values both ways.
                if *mode == CopyMode::Swap && viewing(active, |an| an.place_active(dst)) {
                    mark(active, frozen, &src.base);
                }
            }
            Stmt::Call(c) => {
                let outs = viewing(active, |an| call_outputs(c, an));
                outs.iter().for_each(|v| mark(active, frozen, v));
            }
            Stmt::If {
                then,
                els,
                outs,
                then_vals,
                else_vals,
                ..
            } => {
                activity_block(then, active, frozen);
                activity_block(els, active, frozen);
                let marked: Vec<&proc_macro2::Ident> = viewing(active, |an| {
                    outs.iter()
                        .zip(then_vals)
                        .zip(else_vals)
                        .filter(|((_, a), b)| an.operand_active(a) || an.operand_active(b))
                        .map(|((o, _), _)| o)
                        .collect()
                });
                marked.into_iter().for_each(|o| mark(active, frozen, o));
            }
            Stmt::For { body, .. } | Stmt::Loop { body, .. } => {
                activity_block(body, active, frozen)
            }
            Stmt::Inactive(_) => {}
        }
    }
}

fn op_call_outputs<'a>(op: &'a Op, an: &Analysis) -> Vec<&'a proc_macro2::Ident> {
    match op {
        Op::Call(c) => call_outputs(c, an),
        _ => Vec::new(),
    }
}

/// A call with an active argument makes everything it can write active: those places,
/// and the receiver of a method, which a `&mut self` method may write (`acc.add(x * x)`
/// on a struct built from constants).
fn call_outputs<'a>(c: &'a Call, an: &Analysis) -> Vec<&'a proc_macro2::Ident> {
    if !an.call_active(c) {
        return Vec::new();
    }
    let receiver = match &c.callee {
        Callee::Method(p, _) => Some(&p.base),
        _ => None,
    };
    c.args
        .iter()
        .filter_map(|a| match a {
            Arg::Ref(p, true) => Some(&p.base),
            _ => None,
        })
        .chain(receiver)
        .collect()
}

fn tokens_into(t: &TokenStream, out: &mut HashSet<String>) {
    walk_idents(t, &mut |id| {
        out.insert(id.to_string());
    });
}

fn operand_reads(o: &Operand, out: &mut HashSet<String>) {
    match o {
        Operand::Var(v) => {
            out.insert(v.to_string());
        }
        Operand::Lit(t) => tokens_into(t, out),
    }
}

fn index_reads(p: &Place, out: &mut HashSet<String>) {
    for pr in &p.proj {
        if let Proj::Index(t) = pr {
            tokens_into(t, out);
        }
    }
}

fn place_reads(p: &Place, out: &mut HashSet<String>) {
    out.insert(p.base.to_string());
    index_reads(p, out);
}

/// The locals an operation reads.
pub fn op_reads(op: &Op, out: &mut HashSet<String>) {
    match op {
        Op::Use(o) | Op::Neg(o) | Op::Cast(o, _) => operand_reads(o, out),
        Op::VecRepeat(o, t) | Op::ArrRepeat(o, t) => {
            operand_reads(o, out);
            tokens_into(t, out);
        }
        Op::Bin(_, a, b) => {
            operand_reads(a, out);
            operand_reads(b, out);
        }
        Op::Math(_, ops) | Op::ArrLit(ops, _) => ops.iter().for_each(|o| operand_reads(o, out)),
        Op::StructLit(_, fields) => fields.iter().for_each(|(_, o)| operand_reads(o, out)),
        Op::Load(p) | Op::CloneOf(p, _) | Op::Pop(p) => place_reads(p, out),
        Op::Call(c) => call_reads(c, out),
        Op::Inactive(t) | Op::NewVec(t) => tokens_into(t, out),
    }
}

fn call_reads(c: &Call, out: &mut HashSet<String>) {
    for a in &c.args {
        match a {
            Arg::Val(o) => operand_reads(o, out),
            Arg::Ref(p, _) | Arg::Copied(p) => place_reads(p, out),
            Arg::Closure(cl) => out.extend(cl.captures.iter().map(|v| v.to_string())),
            Arg::ClosureParam(v) => {
                out.insert(v.to_string());
            }
        }
    }
    if let Callee::Method(p, _) = &c.callee {
        place_reads(p, out);
    }
}

/// The locals that the statements of `b` read (nested blocks included).
pub fn block_reads(b: &[Stmt]) -> HashSet<String> {
    let mut out = HashSet::default();
    needed_block(b, &mut out);
    out
}

/// The names that the conditions of `b` mention: those of its branches, the exits of its
/// loops and its statements without derivatives (nested blocks included). [`stmt_reads`]
/// leaves them out, because the reverse sweep does not evaluate them again, but they are
/// evaluated where they are written.
pub fn condition_mentions(b: &[Stmt], out: &mut HashSet<String>) {
    for s in b {
        match s {
            Stmt::If {
                cond, then, els, ..
            } => {
                tokens_into(cond, out);
                condition_mentions(then, out);
                condition_mentions(els, out);
            }
            Stmt::For { exit, body, .. } => {
                if let Some(e) = exit {
                    tokens_into(e, out);
                }
                condition_mentions(body, out);
            }
            Stmt::Loop { exit, body } => {
                tokens_into(exit, out);
                condition_mentions(body, out);
            }
            Stmt::Inactive(t) => tokens_into(t, out),
            _ => {}
        }
    }
}

/// The locals that a statement (and everything nested in it) reads in a way its reverse
/// sweep may depend on.
pub fn stmt_reads(s: &Stmt) -> HashSet<String> {
    let mut out = HashSet::default();
    needed_block(std::slice::from_ref(s), &mut out);
    out
}

fn needed_block(b: &[Stmt], out: &mut HashSet<String>) {
    live_reads_block(b, None, out)
}

/// The locals whose values the reverse sweep never reads (see [`dead_values`]), with the
/// active locals, which tell what their adjoint formulas read.
struct Dead<'a> {
    values: &'a HashSet<String>,
    active: &'a HashSet<String>,
}

/// [`needed_block`], where a dead local's `let` reads only what its adjoint formula
/// reads: computing its value again may see later values of its inputs.
fn live_reads_block(b: &[Stmt], dead: Option<&Dead>, out: &mut HashSet<String>) {
    for s in b {
        match s {
            Stmt::Let { var, op, .. }
                if let Some(d) = dead.filter(|d| d.values.contains(&var.to_string())) =>
            {
                match formula_reads(op, d.active) {
                    Some(r) => out.extend(r),
                    None => op_reads(op, out),
                }
            }
            Stmt::Let { op, .. } | Stmt::LetTuple { op, .. } => op_reads(op, out),
            // `r = s;`, `r += s;` of active floats: the reverse adds adjoints, and reads no
            // value of `s` (`return s;` inside a loop, which records `s` otherwise).
            Stmt::Assign {
                place,
                kind: AssignKind::Set | AssignKind::Add | AssignKind::Sub,
                val: Operand::Var(v),
            } if place.proj.is_empty()
                && dead.is_some_and(|d| {
                    d.active.contains(&v.to_string()) && d.active.contains(&place.base.to_string())
                }) => {}
            Stmt::Assign { place, kind, val } => {
                operand_reads(val, out);
                index_reads(place, out);
                if matches!(kind, AssignKind::Mul | AssignKind::Div) {
                    out.insert(place.base.to_string());
                }
            }
            Stmt::Push { place, val, .. } | Stmt::Fill { place, val } => {
                operand_reads(val, out);
                index_reads(place, out);
            }
            // A swap reads both: each name holds the other's values afterwards, so what
            // is read through one was written through the other.
            Stmt::CopyFrom {
                dst,
                src,
                mode: CopyMode::Swap,
            } => {
                place_reads(dst, out);
                place_reads(src, out);
            }
            Stmt::CopyFrom { dst, src, .. } => {
                index_reads(dst, out);
                place_reads(src, out);
            }
            Stmt::Call(c) => call_reads(c, out),
            Stmt::If {
                then,
                els,
                then_vals,
                else_vals,
                ..
            } => {
                live_reads_block(then, dead, out);
                live_reads_block(els, dead, out);
                then_vals
                    .iter()
                    .chain(else_vals)
                    .for_each(|o| operand_reads(o, out));
            }
            Stmt::For { body, iter, .. } => {
                // A range re-evaluated in the reverse sweep reads its bounds there.
                tokens_into(iter, out);
                live_reads_block(body, dead, out)
            }
            Stmt::Loop { body, .. } => live_reads_block(body, dead, out),
            Stmt::Inactive(_) => {}
        }
    }
}

/// The locals that a statement (and everything nested in it) may overwrite.
pub fn stmt_writes(s: &Stmt, out: &mut HashSet<String>) {
    match s {
        Stmt::Assign { place, .. } | Stmt::Push { place, .. } | Stmt::Fill { place, .. } => {
            out.insert(place.base.to_string());
        }
        Stmt::CopyFrom { dst, src, mode } => {
            out.insert(dst.base.to_string());
            if *mode == CopyMode::Swap {
                out.insert(src.base.to_string());
            }
        }
        Stmt::Call(c) => call_writes(c, out),
        Stmt::Let {
            op: Op::Call(c), ..
        }
        | Stmt::LetTuple {
            op: Op::Call(c), ..
        } => call_writes(c, out),
        Stmt::Let { .. } | Stmt::LetTuple { .. } | Stmt::Inactive(_) => {}
        Stmt::If { then, els, .. } => {
            then.iter().chain(els).for_each(|s| stmt_writes(s, out));
        }
        Stmt::For { body, .. } | Stmt::Loop { body, .. } => {
            body.iter().for_each(|s| stmt_writes(s, out))
        }
    }
}

fn call_writes(c: &Call, out: &mut HashSet<String>) {
    for a in &c.args {
        if let Arg::Ref(p, true) = a {
            out.insert(p.base.to_string());
        }
    }
    if let Callee::Method(p, _) = &c.callee {
        out.insert(p.base.to_string());
    }
}

/// The locals bound by `let` in `b` whose values the reverse sweep never reads.
///
/// The reverse sweep reads a primal value for three reasons: an adjoint formula uses it
/// (`x̄ += ȳ·b` for `y = a·b`), a statement evaluated again in the reverse uses it (an index,
/// a condition, a loop's range, a call's arguments), or a local it reads is computed again
/// from it. Everything but the plainest operations counts as reading all its inputs and
/// its result; only sums, differences, negations, loads and products (whose formula reads
/// the other factor alone) read less. A local outside the closure of these reads is dead
/// in the reverse: a record of it can be left out, and the sweep can name a zero instead,
/// since whatever it computes from it is itself never read.
pub fn dead_values(b: &[Stmt], active: &HashSet<String>) -> HashSet<String> {
    let mut defined = HashSet::default();
    let mut read = HashSet::default();
    let mut from: HashMap<String, HashSet<String>> = HashMap::default();
    reverse_reads_block(b, active, &mut defined, &mut read, &mut from);
    let mut work: Vec<String> = read.iter().cloned().collect();
    while let Some(v) = work.pop() {
        for d in from.remove(&v).unwrap_or_default() {
            if read.insert(d.clone()) {
                work.push(d);
            }
        }
    }
    defined.retain(|v| !read.contains(v));
    defined
}

/// Walks `b` for [`dead_values`]: `read` gets what the reverse reads in any case, `from`
/// what it reads when it needs a local's value (the inputs it is computed from, and for
/// `v = x` the local `v` that holds `x`'s value afterwards).
fn reverse_reads_block(
    b: &[Stmt],
    active: &HashSet<String>,
    defined: &mut HashSet<String>,
    read: &mut HashSet<String>,
    from: &mut HashMap<String, HashSet<String>>,
) {
    for s in b {
        match s {
            Stmt::Let { var, op, .. } => {
                let name = var.to_string();
                let mut inputs = HashSet::default();
                op_reads(op, &mut inputs);
                let formula = formula_reads(op, active);
                match formula {
                    Some(r) => {
                        read.extend(r);
                        from.entry(name.clone()).or_default().extend(inputs);
                        defined.insert(name);
                    }
                    // A call's pullback reads its arguments, not its result.
                    None if matches!(op, Op::Call(_)) => {
                        read.extend(inputs);
                        defined.insert(name);
                    }
                    None => {
                        read.extend(inputs);
                        read.insert(name);
                    }
                }
            }
            Stmt::Assign { place, kind, val } => {
                index_reads(place, read);
                match kind {
                    AssignKind::Mul | AssignKind::Div => {
                        operand_reads(val, read);
                        read.insert(place.base.to_string());
                    }
                    AssignKind::Set | AssignKind::Add | AssignKind::Sub => {
                        if let Operand::Var(v) = val {
                            from.entry(v.to_string())
                                .or_default()
                                .insert(place.base.to_string());
                        } else {
                            operand_reads(val, read);
                        }
                    }
                }
            }
            Stmt::If {
                cond,
                then,
                els,
                outs,
                then_vals,
                else_vals,
            } => {
                tokens_into(cond, read);
                read.extend(outs.iter().map(|v| v.to_string()));
                then_vals
                    .iter()
                    .chain(else_vals)
                    .for_each(|o| operand_reads(o, read));
                reverse_reads_block(then, active, defined, read, from);
                reverse_reads_block(els, active, defined, read, from);
            }
            Stmt::For {
                iter, body, exit, ..
            } => {
                tokens_into(iter, read);
                if let Some(e) = exit {
                    tokens_into(e, read);
                }
                reverse_reads_block(body, active, defined, read, from);
            }
            Stmt::Loop { body, exit } => {
                tokens_into(exit, read);
                reverse_reads_block(body, active, defined, read, from);
            }
            Stmt::LetTuple { vars, .. } => {
                needed_block(std::slice::from_ref(s), read);
                read.extend(vars.iter().map(|v| v.to_string()));
            }
            Stmt::Push { .. }
            | Stmt::Fill { .. }
            | Stmt::CopyFrom { .. }
            | Stmt::Call(_)
            | Stmt::Inactive(_) => needed_block(std::slice::from_ref(s), read),
        }
    }
}

/// What the reverse sweep reads for the adjoint formula of `op` alone, where that is
/// less than all its inputs and its result (`None` otherwise): sums, differences,
/// negations and loads read no value, a product reads the factor beside an active one.
fn formula_reads(op: &Op, active: &HashSet<String>) -> Option<HashSet<String>> {
    let is_active = |o: &Operand| o.var().is_some_and(|v| active.contains(&v.to_string()));
    match op {
        Op::Use(o) | Op::Neg(o) => Some(literal_reads(o)),
        Op::Bin(BinOp::Add | BinOp::Sub, x, y) => {
            let mut r = literal_reads(x);
            r.extend(literal_reads(y));
            Some(r)
        }
        Op::Bin(BinOp::Mul, x, y) => {
            let mut r = literal_reads(x);
            r.extend(literal_reads(y));
            if is_active(x) {
                operand_reads(y, &mut r);
            }
            if is_active(y) {
                operand_reads(x, &mut r);
            }
            Some(r)
        }
        Op::Load(p) => {
            let mut r = HashSet::default();
            index_reads(p, &mut r);
            Some(r)
        }
        // A constant (`let mut s = 0.0;`): no formula at all.
        Op::Inactive(_) => Some(HashSet::default()),
        _ => None,
    }
}

/// The locals named by an operand's tokens when it is a literal expression (`(n as f64)`):
/// evaluated again wherever the operand is.
fn literal_reads(o: &Operand) -> HashSet<String> {
    let mut r = HashSet::default();
    if let Operand::Lit(t) = o {
        tokens_into(t, &mut r);
    }
    r
}
