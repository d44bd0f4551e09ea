//! Loops whose iterations are reversed as soon as they have run.
//!
//! A loss summed over data points (`for i in 0..n { ..; s += term; }`, with `s` added
//! into the result) has iterations that share nothing but the sum: each one fills its
//! scratch buffers before reading them, and the adjoint of `s` is the result's seed, or
//! its negation, whatever the iterations compute. The reverse of such a loop need not
//! wait for the forward sweep to end: each iteration can be reversed right after it has
//! run, while its values are still in registers and cache, and nothing it overwrote has
//! to be recorded for the iterations after it. This is what a hand-written gradient of
//! such a loss does.
//!
//! Only loops with scratch locals are reversed so: a loop without them records nothing
//! for the iterations after it anyway, and reversed whole it keeps the adjoints of a
//! stencil (`x[i]`, `x[i + 1]`) in registers from one iteration to the next
//! ([`crate::carry`]), which an iteration reversed in place cannot.
//!
//! [`fusion`] tells whether a loop of the function's outermost block can be reversed so,
//! and what its iterations need: the adjoints declared before it and the sign of each
//! accumulator's adjoint. It holds when:
//! - the loop leaves only at the end of its range;
//! - every local declared outside the loop that the loop writes is either
//!   - an **accumulator**: an active float local of the outermost block, declared before
//!     the loop, that the loop only adds into or subtracts from (`s += e`, `s -= e`) and
//!     never reads otherwise, and that the rest of the function uses only through sums
//!     and differences that end in the result (so its adjoint is ± the seed), or through
//!     one chain of them that also multiplies or divides by values fixed before the loop
//!     (a mean, `s / n as f64`, or `0.5 * s`: its adjoint is the seed so scaled), and
//!     that no statement before the loop reads (`let t = a * s;` is reversed after the
//!     loop, when `s` holds its final value), or
//!   - a **scratch** local: declared before the loop in the outermost block, read by no
//!     other statement of that block nor by the result, and in every iteration
//!     overwritten whole before it is read (see [`killed`]);
//! - the active values it reads from outside are parameters (the shadows of references
//!   exist from the start, and the adjoints of scalars are declared before the forward
//!   sweep) or locals of the outermost block declared before it that nothing after the
//!   loop writes (their adjoints are declared before the loop, at their final shape); a
//!   parameter whose shadow or adjoint the companion makes after the forward sweep (a
//!   `Const` buffer read back) keeps the loop whole.

use crate::analysis::{Analysis, stmt_reads, stmt_writes};
use crate::collections::{HashMap, HashSet};
use crate::ir::*;
use proc_macro2::{Ident, TokenStream};
use quote::quote;

/// An accumulator of a fused loop and its adjoint: the seed, negated or not, then
/// multiplied or divided in turn by each factor (`BinOp::Mul` or `BinOp::Div`), in the
/// order in which the reverse sweep meets them going back from the result.
pub struct Accumulator {
    pub var: Ident,
    pub negated: bool,
    pub scale: Vec<(BinOp, TokenStream)>,
}

impl Accumulator {
    /// The adjoint as an expression of `seed`.
    pub fn adjoint(&self, seed: &TokenStream) -> TokenStream {
        let mut e = if self.negated {
            quote!(-(#seed))
        } else {
            quote!(#seed)
        };
        for (op, f) in &self.scale {
            e = match op {
                BinOp::Div => quote!((#e) / #f),
                _ => quote!((#e) * #f),
            };
        }
        e
    }
}

/// What reversing the loop's iterations in place needs.
pub struct Fusion {
    /// The accumulators, with their adjoints.
    pub accumulators: Vec<Accumulator>,
    /// Active locals of the outermost block, declared before the loop and mentioned in
    /// it, whose adjoints are declared before the loop.
    pub early: Vec<Ident>,
}

/// Whether the loop `block[k]` of the function's outermost block, whose result is `ret`,
/// can have each iteration reversed right after it runs (see the module's documentation).
pub fn fusion(
    block: &Block,
    k: usize,
    ret: &Operand,
    an: &Analysis,
    kinds: &HashMap<String, VarKind>,
    late_shadows: &HashSet<String>,
) -> Option<Fusion> {
    let Stmt::For {
        body, exit: None, ..
    } = &block[k]
    else {
        return None;
    };
    let mut inside = HashSet::default();
    declared_in(&block[k], &mut inside);
    // Locals of the outermost block declared before the loop, with their statements.
    let mut before: HashMap<String, (usize, Ident)> = HashMap::default();
    for (i, s) in block[..k].iter().enumerate() {
        for v in top_decls(s) {
            before.insert(v.to_string(), (i, v.clone()));
        }
    }
    let mut after_writes = HashSet::default();
    block[k + 1..]
        .iter()
        .for_each(|s| stmt_writes(s, &mut after_writes));
    let mut all_writes = HashSet::default();
    block.iter().for_each(|s| stmt_writes(s, &mut all_writes));
    let loop_reads = stmt_reads(&block[k]);
    let mut loop_writes = HashSet::default();
    stmt_writes(&block[k], &mut loop_writes);
    let lengths = crate::replay::declared_lengths(block);

    let mut accumulators = Vec::new();
    let mut scratch = 0;
    for w in loop_writes.difference(&inside) {
        let (decl, var) = before.get(w)?;
        let is_acc = an.active.contains(w)
            && kinds.get(w) == Some(&VarKind::Scalar)
            && !loop_reads.contains(w)
            && only_added_into(body, w);
        if is_acc {
            if after_writes.contains(w) {
                return None;
            }
            // A statement before the loop that reads the sum (`let t = a * s;`) is
            // reversed after the loop has run, when the sum holds its final value.
            if block[..k]
                .iter()
                .enumerate()
                .any(|(i, s)| i != *decl && stmt_reads(s).contains(w))
            {
                return None;
            }
            accumulators.push(var.clone());
            continue;
        }
        let read_elsewhere = block
            .iter()
            .enumerate()
            .any(|(i, s)| i != k && i != *decl && stmt_reads(s).contains(w))
            || ret.var().is_some_and(|r| r == w);
        if read_elsewhere || !killed(body, w, &lengths, &all_writes) {
            return None;
        }
        scratch += 1;
    }
    // Without scratch locals nothing would be recorded for the next iterations, and a
    // loop reversed whole keeps a stencil's adjoints in registers (`crate::carry`), which
    // an iteration reversed in place cannot.
    if accumulators.is_empty() || scratch == 0 {
        return None;
    }
    // What the statements after the loop declare (an inactive statement, kept as
    // written, may declare anything it names).
    let mut declared_after: HashSet<String> = HashSet::default();
    for s in &block[k + 1..] {
        declared_in(s, &mut declared_after);
        if let Stmt::Inactive(t) = s {
            crate::lower::walk_idents(t, &mut |id| {
                declared_after.insert(id.to_string());
            });
        }
    }
    let fixed = Fixed {
        before: &before,
        declared_after,
        changed: loop_writes.union(&after_writes).cloned().collect(),
        lets_after: block[k + 1..]
            .iter()
            .filter_map(|s| match s {
                Stmt::Let {
                    var,
                    mutable: false,
                    op,
                } => Some((var.to_string(), op)),
                _ => None,
            })
            .collect(),
        kinds,
    };
    let coefficients = adjoint_coefficients(&block[k + 1..], ret, &accumulators, &fixed)?;
    let accumulators: Vec<Accumulator> = accumulators
        .into_iter()
        .zip(coefficients)
        .map(|(var, (negated, scale))| Accumulator {
            var,
            negated,
            scale,
        })
        .collect();

    let mut early = Vec::new();
    for name in loop_reads.union(&loop_writes) {
        if inside.contains(name)
            || !an.active.contains(name)
            || accumulators.iter().any(|a| a.var == name)
        {
            continue;
        }
        match before.get(name) {
            Some((_, v)) if !after_writes.contains(name) => early.push(v.clone()),
            Some(_) => return None,
            // A parameter: a reference has its shadow from the start, unless the
            // companion makes one for it after the forward sweep (a `Const` buffer that
            // the function reads back); a scalar's adjoint is declared before the
            // forward sweep, except where the companion lists it among the late ones.
            None if matches!(kinds.get(name), Some(VarKind::Ref { .. } | VarKind::Scalar))
                && !late_shadows.contains(name) => {}
            None => return None,
        }
    }
    early.sort_by_key(|v| v.to_string());
    Some(Fusion {
        accumulators,
        early,
    })
}

/// The locals a statement of the outermost block declares there.
fn top_decls(s: &Stmt) -> Vec<&Ident> {
    match s {
        Stmt::Let { var, .. } => vec![var],
        Stmt::LetTuple { vars, .. } => vars.iter().collect(),
        Stmt::If { outs, .. } => outs.iter().collect(),
        _ => Vec::new(),
    }
}

/// The locals declared anywhere in `s` (loop variables included).
fn declared_in(s: &Stmt, out: &mut HashSet<String>) {
    let block = |b: &Block, out: &mut HashSet<String>| b.iter().for_each(|s| declared_in(s, out));
    match s {
        Stmt::Let { var, .. } => {
            out.insert(var.to_string());
        }
        Stmt::LetTuple { vars, .. } => out.extend(vars.iter().map(|v| v.to_string())),
        Stmt::If {
            outs, then, els, ..
        } => {
            out.extend(outs.iter().map(|v| v.to_string()));
            block(then, out);
            block(els, out);
        }
        Stmt::For { pat, body, .. } => {
            out.insert(pat.to_string());
            block(body, out);
        }
        Stmt::Loop { body, .. } => block(body, out),
        _ => {}
    }
}

/// Whether every write to `w` in `b` is `w += e` or `w -= e` of the whole local.
fn only_added_into(b: &Block, w: &str) -> bool {
    b.iter().all(|s| match s {
        Stmt::Assign { place, kind, .. } if place.base == w => {
            place.is_whole() && matches!(kind, AssignKind::Add | AssignKind::Sub)
        }
        Stmt::If { then, els, .. } => only_added_into(then, w) && only_added_into(els, w),
        Stmt::For { body, .. } | Stmt::Loop { body, .. } => only_added_into(body, w),
        s => {
            let mut writes = HashSet::default();
            stmt_writes(s, &mut writes);
            !writes.contains(w)
        }
    })
}

/// Values that the statements after a fused loop read and that are known before the
/// loop runs, as expressions valid there: parameters and locals declared before the loop
/// that neither the loop nor anything after it writes, literals of them, their elements
/// (`p[0]`), and immutable locals computed after the loop from such values
/// (`n as f64`), written out in full.
struct Fixed<'a> {
    before: &'a HashMap<String, (usize, Ident)>,
    /// What the statements after the loop declare.
    declared_after: HashSet<String>,
    /// What the loop and the statements after it write.
    changed: HashSet<String>,
    lets_after: HashMap<String, &'a Op>,
    kinds: &'a HashMap<String, VarKind>,
}

impl Fixed<'_> {
    /// Whether tokens kept as written (a literal operand, an index) name nothing that the
    /// loop or the statements after it write or declare.
    fn names_fixed(&self, t: &TokenStream) -> bool {
        let mut ok = true;
        crate::lower::walk_idents(t, &mut |id| {
            let id = id.to_string();
            ok &= !self.changed.contains(&id) && !self.declared_after.contains(&id);
        });
        ok
    }

    fn expr(&self, o: &Operand, depth: usize) -> Option<TokenStream> {
        if depth > 8 {
            return None;
        }
        match o {
            Operand::Lit(t) => self.names_fixed(t).then(|| o.primal()),
            Operand::Var(v) => {
                let name = v.to_string();
                if let Some(op) = self.lets_after.get(&name) {
                    return self.op_expr(op, depth + 1);
                }
                // A local of the outermost block declared before the loop, or a scalar
                // parameter (declared nowhere in the body).
                let known = self.before.contains_key(&name)
                    || (!self.declared_after.contains(&name)
                        && matches!(self.kinds.get(&name), Some(VarKind::Scalar)));
                (known && !self.changed.contains(&name)).then(|| quote!(#v))
            }
        }
    }

    fn op_expr(&self, op: &Op, depth: usize) -> Option<TokenStream> {
        Some(match op {
            Op::Use(a) => self.expr(a, depth)?,
            Op::Neg(a) => {
                let a = self.expr(a, depth)?;
                quote!((-#a))
            }
            Op::Cast(a, ty) => {
                let a = self.expr(a, depth)?;
                quote!((#a as #ty))
            }
            // An element of a buffer that nothing from the loop on writes (`p[0]`).
            Op::Load(pl) => {
                let base = pl.base.to_string();
                let ok = !self.changed.contains(&base)
                    && !self.declared_after.contains(&base)
                    && (self.before.contains_key(&base) || self.kinds.contains_key(&base))
                    && pl.proj.iter().all(|proj| match proj {
                        Proj::Index(t) => self.names_fixed(t),
                        _ => true,
                    });
                if !ok {
                    return None;
                }
                let e = pl.primal();
                quote!((#e))
            }
            Op::Bin(b, x, y) => {
                let (x, y) = (self.expr(x, depth)?, self.expr(y, depth)?);
                match b {
                    BinOp::Add => quote!((#x + #y)),
                    BinOp::Sub => quote!((#x - #y)),
                    BinOp::Mul => quote!((#x * #y)),
                    BinOp::Div => quote!((#x / #y)),
                    BinOp::Rem => quote!((#x % #y)),
                }
            }
            _ => return None,
        })
    }
}

/// One operand of a statement after the loop through which an accumulator's adjoint
/// flows: the operand, its sign, and the factor it is multiplied or divided by.
type Term<'a> = (&'a Operand, i64, Option<(BinOp, TokenStream)>);

/// An accumulator's adjoint: whether it is the negated seed, and the factors that scale
/// it (see [`Accumulator`]).
type Coefficient = (bool, Vec<(BinOp, TokenStream)>);

/// The adjoint of each accumulator, given the statements `rest` after the loop and the
/// result `ret`. Every value computed from an accumulator is a sum, a difference, or a
/// product with or quotient by a [`Fixed`] value, of immutable locals, ending in the
/// result; an accumulator reaches it either along sums and differences only, with a
/// coefficient of ±1 in all, or along one chain.
fn adjoint_coefficients(
    rest: &[Stmt],
    ret: &Operand,
    accumulators: &[Ident],
    fixed: &Fixed,
) -> Option<Vec<Coefficient>> {
    // The locals that depend on an accumulator, and the lets that compute them.
    let mut tainted: HashSet<String> = accumulators.iter().map(|a| a.to_string()).collect();
    let mut chain: Vec<(String, Vec<Term>)> = Vec::new();
    for s in rest {
        let reads = stmt_reads(s);
        if reads.is_disjoint(&tainted) {
            continue;
        }
        let Stmt::Let {
            var,
            mutable: false,
            op,
        } = s
        else {
            return None;
        };
        let is_tainted = |o: &Operand| o.var().is_some_and(|v| tainted.contains(&v.to_string()));
        let terms: Vec<Term> = match op {
            Op::Use(a) => vec![(a, 1, None)],
            Op::Neg(a) => vec![(a, -1, None)],
            Op::Bin(BinOp::Add, a, b) => vec![(a, 1, None), (b, 1, None)],
            Op::Bin(BinOp::Sub, a, b) => vec![(a, 1, None), (b, -1, None)],
            Op::Bin(BinOp::Mul, a, b) if is_tainted(a) && !is_tainted(b) => {
                vec![(a, 1, Some((BinOp::Mul, fixed.expr(b, 0)?)))]
            }
            Op::Bin(BinOp::Mul, a, b) if is_tainted(b) && !is_tainted(a) => {
                vec![(b, 1, Some((BinOp::Mul, fixed.expr(a, 0)?)))]
            }
            Op::Bin(BinOp::Div, a, b) if is_tainted(a) && !is_tainted(b) => {
                vec![(a, 1, Some((BinOp::Div, fixed.expr(b, 0)?)))]
            }
            _ => return None,
        };
        // A tainted name inside a literal operand (tokens) is not a sum term.
        let in_terms = terms
            .iter()
            .filter_map(|(o, _, _)| o.var())
            .filter(|v| tainted.contains(&v.to_string()))
            .count();
        let named = reads.intersection(&tainted).count();
        if in_terms < named {
            return None;
        }
        tainted.insert(var.to_string());
        chain.push((var.to_string(), terms));
    }
    // The paths from the result back to each local: a sign and the factors met.
    type Path = (i64, Vec<(BinOp, TokenStream)>);
    let mut paths: HashMap<String, Vec<Path>> = HashMap::default();
    match ret {
        Operand::Var(r) if tainted.contains(&r.to_string()) => {
            paths.insert(r.to_string(), vec![(1, vec![])]);
        }
        Operand::Lit(t) => {
            let mut hit = false;
            crate::lower::walk_idents(t, &mut |id| hit |= tainted.contains(&id.to_string()));
            if hit {
                return None;
            }
        }
        Operand::Var(_) => {}
    }
    for (var, terms) in chain.iter().rev() {
        let Some(from) = paths.get(var).cloned() else {
            continue;
        };
        for (o, sign, step) in terms {
            let Some(v) = o.var() else { continue };
            let to = paths.entry(v.to_string()).or_default();
            for (s, steps) in &from {
                let mut steps = steps.clone();
                steps.extend(step.clone());
                to.push((s * sign, steps));
            }
            if to.len() > 64 {
                return None;
            }
        }
    }
    accumulators
        .iter()
        .map(|a| {
            let ps = paths.get(&a.to_string())?;
            if ps.iter().all(|(_, steps)| steps.is_empty()) {
                match ps.iter().map(|(s, _)| s).sum::<i64>() {
                    1 => Some((false, vec![])),
                    -1 => Some((true, vec![])),
                    _ => None,
                }
            } else if let [(s, steps)] = ps.as_slice() {
                Some((*s < 0, steps.clone()))
            } else {
                None
            }
        })
        .collect()
}

/// Whether every iteration of a loop whose body is `b` overwrites all of `w` before it
/// reads any of it: the first statement of `b` that mentions `w` is
/// - `w = e` of the whole local, with `e` not reading `w`;
/// - `for j in 0..len { .. w[j] = e; .. }` over `w`'s declared length `len` (whose
///   names the function never writes), whose body reads nothing of `w`; or
/// - a loop whose range does not read `w` and whose body does one of these in turn,
///   with no statement after it in `b` reading `w` (a loop that runs no iteration leaves
///   the old contents there).
///
/// A `b` that never mentions `w` also qualifies.
fn killed(
    b: &Block,
    w: &str,
    lengths: &HashMap<String, String>,
    all_writes: &HashSet<String>,
) -> bool {
    let reads = |s: &Stmt| stmt_reads(s).contains(w);
    let Some(first) = b.iter().position(|s| {
        let mut writes = HashSet::default();
        stmt_writes(s, &mut writes);
        writes.contains(w) || reads(s)
    }) else {
        return true;
    };
    let s = &b[first];
    match s {
        Stmt::Assign {
            place,
            kind: AssignKind::Set,
            ..
        } => place.base == w && place.is_whole() && !reads(s),
        Stmt::For { body, iter, .. } => {
            let mut in_range = false;
            crate::lower::walk_idents(iter, &mut |id| in_range |= id == w);
            let whole = crate::reverse::overwrite_loop(s).is_some_and(|(buf, end)| {
                buf == w
                    && lengths.get(w) == Some(&end)
                    && names_unwritten(iter, all_writes)
                    && !body.iter().any(reads)
            });
            !in_range
                && (whole
                    || (killed(body, w, lengths, all_writes) && !b[first + 1..].iter().any(reads)))
        }
        _ => false,
    }
}

/// Whether the names in a loop's range are never written by the function.
fn names_unwritten(iter: &proc_macro2::TokenStream, all_writes: &HashSet<String>) -> bool {
    let mut ok = true;
    crate::lower::walk_idents(iter, &mut |id| ok &= !all_writes.contains(&id.to_string()));
    ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::activity::Mode;
    use crate::lower::Lowerer;

    /// For each loop of the outermost block of `f` (the parameters `active` active):
    /// `None` when it is not fused, else whether each accumulator's adjoint is negated.
    fn fused_loops(f: syn::ItemFn, active: &[&str]) -> Vec<Option<Vec<bool>>> {
        fused_adjoints(f, active)
            .into_iter()
            .map(|l| l.map(|accs| accs.iter().map(|(neg, _)| *neg).collect()))
            .collect()
    }

    /// For each loop, `None` when it is not fused, else each accumulator's adjoint:
    /// whether the seed is negated, and the adjoint as an expression of `seed` (spaces
    /// removed).
    fn fused_adjoints(f: syn::ItemFn, active: &[&str]) -> Vec<Option<Vec<(bool, String)>>> {
        fused_adjoints_late(f, active, &[])
    }

    /// [`fused_adjoints`] with the adjoints of the parameters `late` declared after the
    /// forward sweep.
    fn fused_adjoints_late(
        f: syn::ItemFn,
        active: &[&str],
        late: &[&str],
    ) -> Vec<Option<Vec<(bool, String)>>> {
        let late: HashSet<String> = late.iter().map(|l| l.to_string()).collect();
        let sig = crate::signature::analyse(&f.sig).unwrap();
        let (body, kinds) = Lowerer::new(&sig).lower_body(&f.block, &sig).unwrap();
        let active: Vec<String> = active.iter().map(|a| a.to_string()).collect();
        let an = crate::analysis::analyse(&body, &active, &[], Mode::Reverse);
        let [ret] = body.ret.as_slice() else {
            panic!("one result")
        };
        (0..body.block.len())
            .filter(|&k| matches!(body.block[k], Stmt::For { .. }))
            .map(|k| {
                fusion(&body.block, k, ret, &an, &kinds, &late).map(|p| {
                    p.accumulators
                        .iter()
                        .map(|a| {
                            let e = a.adjoint(&quote!(seed)).to_string().replace(' ', "");
                            (a.negated, e)
                        })
                        .collect()
                })
            })
            .collect()
    }

    #[test]
    fn a_sum_over_points_with_scratch_buffers_is_fused() {
        let f = syn::parse_quote! {
            fn f(x: &[f64], mu: &[f64], d: usize) -> f64 {
                let n = x.len() / d;
                let mut xc = vec![0.0; d];
                let mut t = 0.0;
                let mut s = 0.0;
                let mut r = 0.0;
                for i in 0..n {
                    for j in 0..d {
                        xc[j] = x[i * d + j] - mu[j];
                    }
                    t = xc[0].sin();
                    for j in 0..d {
                        s += xc[j] * xc[j] * t;
                    }
                    r -= t;
                }
                let total = s + r;
                mu[0] - total
            }
        };
        assert_eq!(fused_loops(f, &["x", "mu"]), vec![Some(vec![true, true])]);
    }

    #[test]
    fn loops_that_carry_values_between_iterations_are_not_fused() {
        // `prev` is read before it is written: it holds the previous iteration's value.
        let carried = syn::parse_quote! {
            fn f(x: &[f64]) -> f64 {
                let mut prev = vec![0.0; 1];
                let mut s = 0.0;
                for i in 0..x.len() {
                    s += prev[0] * x[i];
                    prev[0] = x[i] * x[i];
                }
                s
            }
        };
        assert_eq!(fused_loops(carried, &["x"]), vec![None]);
        // The sum is squared after the loop: its adjoint depends on its value.
        let squared = syn::parse_quote! {
            fn f(x: &[f64]) -> f64 {
                let mut s = 0.0;
                for i in 0..x.len() {
                    s += x[i].sin();
                }
                s * s
            }
        };
        assert_eq!(fused_loops(squared, &["x"]), vec![None]);
        // Only part of the buffer is overwritten before it is read.
        let partial = syn::parse_quote! {
            fn f(x: &[f64]) -> f64 {
                let mut b = vec![0.0; 2];
                let mut s = 0.0;
                for i in 0..x.len() {
                    b[0] = x[i];
                    s += b[0] * b[1];
                    b[1] = x[i] * 2.0;
                }
                s
            }
        };
        assert_eq!(fused_loops(partial, &["x"]), vec![None]);
        // An active scalar parameter whose adjoint is declared after the forward sweep.
        let scalar: syn::ItemFn = syn::parse_quote! {
            fn f(x: &[f64], w: f64) -> f64 {
                let mut b = vec![0.0; 2];
                let mut s = 0.0;
                for i in 0..x.len() {
                    for j in 0..2 {
                        b[j] = x[i].sin() * j as f64;
                    }
                    s += b[1] * w;
                }
                s
            }
        };
        assert_eq!(
            fused_adjoints_late(scalar.clone(), &["x", "w"], &["w"]),
            vec![None]
        );
        // Declared before it (a reverse companion's `Active` parameter), it is fused.
        assert_eq!(fused_loops(scalar, &["x", "w"]), vec![Some(vec![false])]);
        // The accumulator is read in the loop.
        let read = syn::parse_quote! {
            fn f(x: &[f64]) -> f64 {
                let mut s = 0.0;
                for i in 0..x.len() {
                    s += x[i] * s.cos();
                }
                s
            }
        };
        assert_eq!(fused_loops(read, &["x"]), vec![None]);
        // No scratch local: the loop stays a reverse loop (its stencil's adjoints are
        // carried in registers).
        let stencil = syn::parse_quote! {
            fn f(x: &[f64]) -> f64 {
                let mut s = 0.0;
                for i in 0..x.len() - 1 {
                    s += 100.0 * (x[i + 1] - x[i] * x[i]).powi(2) + (1.0 - x[i]).powi(2);
                }
                s
            }
        };
        assert_eq!(fused_loops(stencil, &["x"]), vec![None]);
    }

    /// A mean loss (`s / n as f64`), scaled and negated: its adjoint is the seed so
    /// scaled, with the divisor written out (it is computed after the loop).
    #[test]
    fn a_scaled_sum_is_fused_with_its_scaled_seed() {
        let f = syn::parse_quote! {
            fn f(x: &[f64], d: usize, w: f64) -> f64 {
                let n = x.len() / d;
                let mut xc = vec![0.0; d];
                let mut s = 0.0;
                for i in 0..n {
                    for j in 0..d {
                        xc[j] = x[i * d + j].sin();
                    }
                    for j in 0..d {
                        s += xc[j] * xc[j];
                    }
                }
                -(s / n as f64) * 0.5 * w
            }
        };
        let got = fused_adjoints(f, &["x", "w"]);
        let [Some(accs)] = got.as_slice() else {
            panic!("fused: {got:?}")
        };
        let [(true, e)] = accs.as_slice() else {
            panic!("one negated accumulator: {accs:?}")
        };
        // From the result back: × w, × 0.5, then ÷ (n as f64).
        assert!(e.starts_with("(((-(seed))*w)*(0.5))/("), "{e}");
        assert!(e.ends_with("_nasf64)"), "{e}");
    }

    #[test]
    fn scaled_sums_that_depend_on_the_loop_are_not_fused() {
        // The loop of each case, fused when what follows it is `s / 3.0`.
        let case = |tail: proc_macro2::TokenStream| -> syn::ItemFn {
            syn::parse_quote! {
                fn f(x: &[f64]) -> f64 {
                    let mut b = vec![0.0; 2];
                    let mut c = 2.0;
                    let mut s = 0.0;
                    let mut t = 0.0;
                    for i in 0..x.len() {
                        for j in 0..2 {
                            b[j] = x[i].sin() + j as f64;
                        }
                        s += b[0] * b[1];
                        t += b[1];
                    }
                    #tail
                }
            }
        };
        let fused = fused_loops(case(quote!(s / 3.0 + t * c)), &["x"]);
        assert_eq!(fused, vec![Some(vec![false, false])]);
        // The factor is written after the loop.
        let changed = case(quote! { c += 1.0; s / c + t });
        assert_eq!(fused_loops(changed, &["x"]), vec![None]);
        // A quotient of two sums of the loop.
        assert_eq!(fused_loops(case(quote!(s / t)), &["x"]), vec![None]);
        // A sum that reaches the result along two paths, one of them scaled.
        let two_paths = case(quote!(s * 2.0 + s + t));
        assert_eq!(fused_loops(two_paths, &["x"]), vec![None]);
        // A divisor computed from the sums.
        let from_sum = case(quote! { let m = s + 1.0; s / m + t });
        assert_eq!(fused_loops(from_sum, &["x"]), vec![None]);
    }
}
