//! Adjoints of a stencil kept in registers across the iterations of a reverse loop.
//!
//! A loop `for i in lo..hi` that reads a buffer only at fixed offsets from `i` (`x[i]`,
//! `x[i + 1]`, Rosenbrock's and every finite-difference stencil's shape) adds, in its
//! reverse sweep, into `x̄[i]` and `x̄[i + 1]` in every iteration. Written naively, the
//! next iteration (`i - 1`) loads the `x̄[i]` the current one has just stored, so the
//! adjoint loop waits on memory and does not vectorize. Here each element of the window
//! `x̄[i + c_min ..= i + c_max]` lives in a local instead: it is loaded when it enters the
//! window (at offset `c_min`), passed from iteration to iteration in a local, and stored
//! once when it leaves (at `c_max`), or after the loop. Each element still receives the
//! same additions in the same order, so the result is bit-for-bit the same.
//!
//! Applies to loops over a plain range (`a..b`, unit step, no early exit) whose body
//! reaches the buffer only through such reads, at two or more offsets at most
//! [`MAX_SPAN`] apart, the first and the last read by every iteration (not only inside a
//! branch, which may guard the bounds): any other use of the buffer (a write, a call, a
//! slice, a read at another index) leaves the loop as it was.
//!
//! The same holds for a buffer read at one index that the loop does not change (`x[i]`
//! in a loop over `j`, the inner loop of a matrix-vector product or of a triangular
//! solve): its reverse sweep adds into the one element `x̄[i]` in every iteration, a chain
//! through memory that the compiler cannot keep in a register, since it cannot rule out
//! that other adjoint stores of the loop reach the same element. That element is loaded
//! once before the loop, kept in a local, and stored once after it.

use crate::analysis::stmt_writes;
use crate::collections::{HashMap, HashSet};
use crate::ir::*;
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};
use std::collections::BTreeMap;

/// The widest window kept in locals.
const MAX_SPAN: i64 = 8;

/// The buffers of one reverse loop whose adjoints are kept in locals.
pub struct CarryPlan {
    pat: Ident,
    bufs: Vec<CarriedBuffer>,
}

struct CarriedBuffer {
    /// The adjoint buffer (`__b_x`).
    adjoint: Ident,
    /// The local holding `x̄[i + c]` during an iteration, for each offset of the window.
    regs: BTreeMap<i64, Ident>,
    /// The local that carries `x̄[i + c]` into the next iteration, for `c > c_min`.
    carried: BTreeMap<i64, Ident>,
    /// Index tokens (as written in the IR) and the offsets they denote.
    offsets: HashMap<String, i64>,
    /// For a buffer read at one index the loop does not change: that index (the only
    /// register then has offset 0 and lives across the whole loop).
    invariant: Option<TokenStream>,
}

impl CarryPlan {
    /// The plan for a loop `for pat in iter { body }` of the function being
    /// differentiated, or `None` when no buffer qualifies. `is_active` tells which locals
    /// carry adjoints.
    pub fn new(
        pat: &Ident,
        iter: &TokenStream,
        body: &Block,
        exit: bool,
        is_active: impl Fn(&Ident) -> bool,
    ) -> Option<Self> {
        if exit || plain_range(iter).is_none() {
            return None;
        }
        let mut uses = Uses::default();
        walk_block(body, &mut uses);
        let offsets = index_offsets(pat, body, &uses);
        let mut changed = HashSet::from_iter([pat.to_string()]);
        changed_in_block(body, &mut changed);
        let mut bufs = Vec::new();
        let mut bases: Vec<&String> = uses.reads.keys().collect();
        bases.sort();
        for base in bases {
            // A buffer bound in the body has a new adjoint every iteration.
            if uses.other.contains(base) || changed.contains(base) {
                continue;
            }
            let ident = format_ident!("{}", base);
            let keys = &uses.reads[base];
            // Loaded before the first iteration, stored after the last: in bounds because
            // every iteration reads it.
            if keys.iter().all(|k| *k == keys[0])
                && uses
                    .every_iteration
                    .contains(&(base.clone(), keys[0].clone()))
                && let Some(idx) = uses.index_tokens.get(&keys[0])
                && is_invariant(idx, &changed)
                && !offsets.contains_key(&keys[0])
                && is_active(&ident)
            {
                let k = bufs.len();
                bufs.push(CarriedBuffer {
                    adjoint: adjoint_name(&ident),
                    regs: BTreeMap::from([(0, reg_name("r", k, 0))]),
                    carried: BTreeMap::new(),
                    offsets: HashMap::from_iter([(keys[0].clone(), 0)]),
                    invariant: Some(idx.clone()),
                });
                continue;
            }
            let mut found: HashMap<String, i64> = HashMap::default();
            for idx in &uses.reads[base] {
                match offsets.get(idx) {
                    Some(c) => {
                        found.insert(idx.clone(), *c);
                    }
                    None => {
                        found.clear();
                        break;
                    }
                }
            }
            let (Some(lo), Some(hi)) = (found.values().min(), found.values().max()) else {
                continue;
            };
            let (lo, hi) = (*lo, *hi);
            if hi == lo || hi - lo > MAX_SPAN || !is_active(&ident) {
                continue;
            }
            // The window's elements are loaded and stored outside the iterations that read
            // them: in bounds when every iteration reads both of its ends.
            let every = |c: i64| {
                found.iter().any(|(key, at)| {
                    *at == c && uses.every_iteration.contains(&(base.clone(), key.clone()))
                })
            };
            if !every(lo) || !every(hi) {
                continue;
            }
            let k = bufs.len();
            let regs = (lo..=hi).map(|c| (c, reg_name("r", k, c))).collect();
            let carried = (lo + 1..=hi).map(|c| (c, reg_name("c", k, c))).collect();
            bufs.push(CarriedBuffer {
                adjoint: adjoint_name(&ident),
                regs,
                carried,
                offsets: found,
                invariant: None,
            });
        }
        if bufs.is_empty() {
            return None;
        }
        Some(CarryPlan {
            pat: pat.clone(),
            bufs,
        })
    }

    /// This plan without the buffers whose adjoints `taken` holds (an enclosing loop's
    /// plan keeps them in its own locals already); `None` if none is left.
    pub fn without(mut self, taken: impl Fn(&Ident) -> bool) -> Option<Self> {
        self.bufs.retain(|b| !taken(&b.adjoint));
        (!self.bufs.is_empty()).then_some(self)
    }

    /// Whether this plan keeps the adjoint buffer `adjoint` in locals.
    pub fn carries(&self, adjoint: &Ident) -> bool {
        self.bufs.iter().any(|b| b.adjoint == *adjoint)
    }

    /// The local that stands for the adjoint of `place` in the loop body, if the place is
    /// one of the planned reads.
    pub fn register(&self, place: &Place) -> Option<&Ident> {
        let key = index_key(&place.proj)?;
        let adjoint = adjoint_name(&place.base);
        let b = self.bufs.iter().find(|b| b.adjoint == adjoint)?;
        let c = b.offsets.get(&key)?;
        b.regs.get(c)
    }

    /// The reverse loop over the range `range` with the body's reverse `body`.
    pub fn wrap(&self, range: TokenStream, body: TokenStream) -> TokenStream {
        let pat = &self.pat;
        let (mut before, mut enter, mut leave, mut after) =
            (quote!(), quote!(), quote!(), quote!());
        for b in &self.bufs {
            let a = &b.adjoint;
            if let Some(idx) = &b.invariant {
                let reg = &b.regs[&0];
                before.extend(quote!(let mut #reg = #a[#idx];));
                after.extend(quote!(#a[#idx] = #reg;));
                continue;
            }
            let lo = *b.regs.keys().next().expect("a window");
            let hi = *b.regs.keys().next_back().expect("a window");
            for (c, carried) in &b.carried {
                let at = offset(quote!(__ad_hi), *c);
                before.extend(quote!(let mut #carried = #a[#at];));
            }
            for (c, reg) in &b.regs {
                if *c == lo {
                    let at = offset(quote!(#pat), *c);
                    enter.extend(quote!(let mut #reg = #a[#at];));
                } else {
                    let carried = &b.carried[c];
                    enter.extend(quote!(let mut #reg = #carried;));
                }
            }
            let top = &b.regs[&hi];
            let at = offset(quote!(#pat), hi);
            leave.extend(quote!(#a[#at] = #top;));
            for c in lo..hi {
                let (carried, reg) = (&b.carried[&(c + 1)], &b.regs[&c]);
                leave.extend(quote!(#carried = #reg;));
                let at = offset(quote!(__ad_lo), c);
                after.extend(quote!(#a[#at] = #carried;));
            }
        }
        quote!({
            let __ad_range = #range;
            if __ad_range.start < __ad_range.end {
                let __ad_hi = __ad_range.end - 1;
                let __ad_lo = __ad_range.start;
                #before
                for #pat in ::core::iter::Iterator::rev(__ad_range) {
                    #enter
                    #body
                    #leave
                }
                #after
            }
        })
    }
}

fn reg_name(kind: &str, k: usize, c: i64) -> Ident {
    if c < 0 {
        format_ident!("__ad_{}{}_m{}", kind, k, c.unsigned_abs())
    } else {
        format_ident!("__ad_{}{}_{}", kind, k, c as u64)
    }
}

fn offset(base: TokenStream, c: i64) -> TokenStream {
    let m = c.unsigned_abs() as usize;
    match c {
        0 => base,
        c if c > 0 => quote!(#base + #m),
        _ => quote!(#base - #m),
    }
}

/// `a..b` with both bounds (parenthesised or not), a `Range` stepping by one: its start
/// and its end.
pub fn plain_range(iter: &TokenStream) -> Option<(syn::Expr, syn::Expr)> {
    let e = syn::parse2::<syn::Expr>(iter.clone()).ok()?;
    match strip_parens(&e) {
        syn::Expr::Range(syn::ExprRange {
            start: Some(a),
            limits: syn::RangeLimits::HalfOpen(_),
            end: Some(b),
            ..
        }) => Some(((**a).clone(), (**b).clone())),
        _ => None,
    }
}

/// The loop variable `pat` and the immutable integer locals of `body` bound to `v`,
/// `v + k` or `v - k` of such a local, each with its offset from `pat`.
pub fn loop_var_offsets(pat: &Ident, body: &Block) -> HashMap<String, i64> {
    let mut vars: HashMap<String, i64> = HashMap::default();
    vars.insert(pat.to_string(), 0);
    collect_aliases(body, &mut vars);
    vars
}

/// The index expressions read in the body that are the loop variable plus a constant,
/// by their token text.
fn index_offsets(pat: &Ident, body: &Block, uses: &Uses) -> HashMap<String, i64> {
    let vars = loop_var_offsets(pat, body);
    let mut texts = HashMap::default();
    for idx in uses.reads.values().flatten() {
        if let Some(c) = offset_of(idx, &vars) {
            texts.insert(idx.clone(), c);
        }
    }
    texts
}

fn collect_aliases(b: &Block, vars: &mut HashMap<String, i64>) {
    for s in b {
        match s {
            Stmt::Let {
                var,
                mutable: false,
                op,
            } => {
                let text = match op {
                    Op::Use(o) => o.primal().to_string(),
                    Op::Inactive(t) => t.to_string(),
                    Op::Bin(BinOp::Add, a, b) => format!("{} + {}", a.primal(), b.primal()),
                    Op::Bin(BinOp::Sub, a, b) => format!("{} - {}", a.primal(), b.primal()),
                    _ => continue,
                };
                if let Some(c) = offset_of(&text, vars) {
                    vars.insert(var.to_string(), c);
                }
            }
            // Integer `let`s are kept as the user's tokens.
            Stmt::Inactive(t) => {
                if let Ok(syn::Stmt::Local(l)) = syn::parse2::<syn::Stmt>(t.clone())
                    && let syn::Pat::Ident(p) = &l.pat
                    && p.mutability.is_none()
                    && let Some(init) = &l.init
                    && init.diverge.is_none()
                    && let Some(c) = expr_offset(&init.expr, vars)
                {
                    vars.insert(p.ident.to_string(), c);
                }
            }
            Stmt::If { then, els, .. } => {
                collect_aliases(then, vars);
                collect_aliases(els, vars);
            }
            Stmt::For { body, .. } | Stmt::Loop { body, .. } => collect_aliases(body, vars),
            _ => {}
        }
    }
}

/// The offset that `text` (`v`, `v + k`, `v - k`, `k + v`, parenthesised or not)
/// denotes, for a `v` of known offset.
fn offset_of(text: &str, vars: &HashMap<String, i64>) -> Option<i64> {
    match text.split_once(KEY_SEP) {
        // `x[a..][i]` is `x[a + i]`.
        Some((from, idx)) => {
            let from = from.trim().strip_suffix("..")?.trim().parse::<i64>().ok()?;
            Some(from + offset_of(idx, vars)?).filter(|c| *c <= MAX_SPAN)
        }
        None => expr_offset(&syn::parse_str(text).ok()?, vars),
    }
}

const KEY_SEP: &str = "][";

/// The text of a read's index, for `x[i]` and `x[a..][i]`, that [`offset_of`] reads.
fn index_key(proj: &[Proj]) -> Option<String> {
    match proj {
        [Proj::Index(i)] => Some(i.to_string()),
        [Proj::Index(from), Proj::Index(i)] => Some(format!("{from}{KEY_SEP}{i}")),
        _ => None,
    }
}

fn strip_parens(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Paren(p) => strip_parens(&p.expr),
        syn::Expr::Group(g) => strip_parens(&g.expr),
        e => e,
    }
}

fn expr_offset(e: &syn::Expr, vars: &HashMap<String, i64>) -> Option<i64> {
    match strip_parens(e) {
        syn::Expr::Path(p) => vars.get(&p.path.get_ident()?.to_string()).copied(),
        syn::Expr::Binary(b) => {
            let lit = |e: &syn::Expr| match strip_parens(e) {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Int(i),
                    ..
                }) => i.base10_parse::<i64>().ok().filter(|k| *k <= MAX_SPAN),
                _ => None,
            };
            match b.op {
                syn::BinOp::Add(_) => match (lit(&b.left), lit(&b.right)) {
                    (None, Some(k)) => Some(expr_offset(&b.left, vars)? + k),
                    (Some(k), None) => Some(expr_offset(&b.right, vars)? + k),
                    _ => None,
                },
                syn::BinOp::Sub(_) => Some(expr_offset(&b.left, vars)? - lit(&b.right)?),
                _ => None,
            }
        }
        _ => None,
    }
}

/// How a loop body reaches buffers: element reads (by base, their index keys), and
/// the bases it reaches in any other way.
#[derive(Default)]
struct Uses {
    reads: HashMap<String, Vec<String>>,
    /// The tokens of each single index key read (`x[k]`, not `x[a..][k]`).
    index_tokens: HashMap<String, TokenStream>,
    /// Reads (base, key) that every iteration makes: outside branches and inner loops.
    every_iteration: HashSet<(String, String)>,
    other: HashSet<String>,
    /// How deep in branches and inner loops the walk is.
    depth: usize,
}

/// Whether `idx` is an arithmetic expression of locals and literals none of which is in
/// `changed`: a value the same in every iteration, cheap to evaluate before the loop.
fn is_invariant(idx: &TokenStream, changed: &HashSet<String>) -> bool {
    idx.clone().into_iter().all(|t| match t {
        proc_macro2::TokenTree::Ident(i) => !changed.contains(&i.to_string()),
        proc_macro2::TokenTree::Literal(_) => true,
        proc_macro2::TokenTree::Punct(p) => matches!(p.as_char(), '+' | '-' | '*' | '/' | '%'),
        proc_macro2::TokenTree::Group(g) => {
            g.delimiter() == proc_macro2::Delimiter::Parenthesis
                && is_invariant(&g.stream(), changed)
        }
    })
}

/// Adds to `out` every local that `b` binds or may change: what it writes
/// ([`stmt_writes`]), its `let`s, loop variables and branch results, and
/// (conservatively) every identifier of a statement kept as the user's tokens, or of an
/// expression kept so that could assign.
fn changed_in_block(b: &Block, out: &mut HashSet<String>) {
    let assigning = |t: &TokenStream, out: &mut HashSet<String>| {
        if t.to_string().contains('=') {
            crate::lower::walk_idents(t, &mut |id| {
                out.insert(id.to_string());
            });
        }
    };
    for s in b {
        match s {
            Stmt::Let { var, op, .. } => {
                out.insert(var.to_string());
                if let Op::Inactive(t) | Op::NewVec(t) | Op::VecRepeat(_, t) | Op::ArrRepeat(_, t) =
                    op
                {
                    assigning(t, out);
                }
                stmt_writes(s, out);
            }
            Stmt::LetTuple { vars, .. } => {
                out.extend(vars.iter().map(|v| v.to_string()));
                stmt_writes(s, out);
            }
            Stmt::If {
                cond,
                then,
                els,
                outs,
                ..
            } => {
                assigning(cond, out);
                out.extend(outs.iter().map(|v| v.to_string()));
                changed_in_block(then, out);
                changed_in_block(els, out);
            }
            Stmt::For {
                pat,
                iter,
                body,
                exit,
            } => {
                out.insert(pat.to_string());
                assigning(iter, out);
                if let Some(e) = exit {
                    assigning(e, out);
                }
                changed_in_block(body, out);
            }
            Stmt::Loop { body, exit } => {
                assigning(exit, out);
                changed_in_block(body, out);
            }
            Stmt::Inactive(t) => crate::lower::walk_idents(t, &mut |id| {
                out.insert(id.to_string());
            }),
            Stmt::Assign { .. }
            | Stmt::Push { .. }
            | Stmt::Fill { .. }
            | Stmt::CopyFrom { .. }
            | Stmt::Call(_) => stmt_writes(s, out),
        }
    }
}

impl Uses {
    fn place(&mut self, p: &Place) {
        self.other.insert(p.base.to_string());
    }
    fn operand(&mut self, o: &Operand) {
        if let Operand::Var(v) = o {
            self.other.insert(v.to_string());
        }
    }
}

fn walk_block(b: &Block, u: &mut Uses) {
    for s in b {
        walk_stmt(s, u);
    }
}

fn walk_stmt(s: &Stmt, u: &mut Uses) {
    match s {
        Stmt::Let { op, .. } | Stmt::LetTuple { op, .. } => walk_op(op, u),
        Stmt::Assign { place, val, .. }
        | Stmt::Push { place, val, .. }
        | Stmt::Fill { place, val } => {
            u.place(place);
            u.operand(val);
        }
        Stmt::CopyFrom { dst, src, .. } => {
            u.place(dst);
            u.place(src);
        }
        Stmt::Call(c) => walk_call(c, u),
        Stmt::If {
            then,
            els,
            then_vals,
            else_vals,
            ..
        } => {
            u.depth += 1;
            walk_block(then, u);
            walk_block(els, u);
            u.depth -= 1;
            then_vals.iter().chain(else_vals).for_each(|o| u.operand(o));
        }
        Stmt::For { body, .. } | Stmt::Loop { body, .. } => {
            u.depth += 1;
            walk_block(body, u);
            u.depth -= 1;
        }
        Stmt::Inactive(_) => {}
    }
}

fn walk_op(op: &Op, u: &mut Uses) {
    match op {
        Op::Load(p) => match index_key(&p.proj) {
            Some(key) => {
                if let [Proj::Index(i)] = p.proj.as_slice() {
                    u.index_tokens
                        .entry(key.clone())
                        .or_insert_with(|| i.clone());
                }
                if u.depth == 0 {
                    u.every_iteration.insert((p.base.to_string(), key.clone()));
                }
                u.reads.entry(p.base.to_string()).or_default().push(key)
            }
            None => u.place(p),
        },
        Op::Use(o) | Op::Neg(o) | Op::Cast(o, _) | Op::VecRepeat(o, _) | Op::ArrRepeat(o, _) => {
            u.operand(o)
        }
        Op::Bin(_, a, b) => {
            u.operand(a);
            u.operand(b);
        }
        Op::Math(_, os) | Op::ArrLit(os, _) => os.iter().for_each(|o| u.operand(o)),
        Op::StructLit(_, fields) => fields.iter().for_each(|(_, o)| u.operand(o)),
        Op::Call(c) => walk_call(c, u),
        Op::CloneOf(p, _) | Op::Pop(p) => u.place(p),
        Op::Inactive(_) | Op::NewVec(_) => {}
    }
}

fn walk_call(c: &Call, u: &mut Uses) {
    if let Callee::Method(p, _) = &c.callee {
        u.place(p);
    }
    for a in &c.args {
        match a {
            Arg::Val(o) => u.operand(o),
            Arg::Ref(p, _) | Arg::Copied(p) => u.place(p),
            Arg::Closure(cl) => {
                for v in &cl.captures {
                    u.other.insert(v.to_string());
                }
            }
            Arg::ClosureParam(_) => {}
        }
    }
}
