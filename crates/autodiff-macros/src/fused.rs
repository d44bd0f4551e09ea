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
//!     and differences that end in the result (so its adjoint is ± the seed), or
//!   - a **scratch** local: declared before the loop in the outermost block, read by no
//!     other statement of that block nor by the result, and in every iteration
//!     overwritten whole before it is read (see [`killed`]);
//! - the active values it reads from outside are parameters passed by reference (whose
//!   shadows exist from the start) or locals of the outermost block declared before it
//!   that nothing after the loop writes (their adjoints are declared before the loop,
//!   at their final shape); a reference whose shadow the companion makes after the
//!   forward sweep (a `Const` buffer read back) keeps the loop whole.

use crate::analysis::{Analysis, stmt_reads, stmt_writes};
use crate::collections::{HashMap, HashSet};
use crate::ir::*;
use proc_macro2::Ident;

/// What reversing the loop's iterations in place needs.
pub struct Fusion {
    /// The accumulators, each with whether its adjoint is the negated seed.
    pub accumulators: Vec<(Ident, bool)>,
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
    let signs = adjoint_signs(&block[k + 1..], ret, &accumulators)?;
    let accumulators: Vec<(Ident, bool)> = accumulators.into_iter().zip(signs).collect();

    let mut early = Vec::new();
    for name in loop_reads.union(&loop_writes) {
        if inside.contains(name)
            || !an.active.contains(name)
            || accumulators.iter().any(|(a, _)| a == name)
        {
            continue;
        }
        match before.get(name) {
            Some((_, v)) if !after_writes.contains(name) => early.push(v.clone()),
            Some(_) => return None,
            // A parameter: only a reference has its shadow from the start, unless the
            // companion makes one for it after the forward sweep (a `Const` buffer that
            // the function reads back).
            None if matches!(kinds.get(name), Some(VarKind::Ref { .. }))
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

/// Whether the adjoint of each accumulator, given the statements `rest` after the loop
/// and the result `ret`, is the seed (`false`) or its negation (`true`): every value
/// computed from an accumulator is a sum or difference of immutable locals that ends in
/// the result, each accumulator reaching it with a coefficient of ±1.
fn adjoint_signs(rest: &[Stmt], ret: &Operand, accumulators: &[Ident]) -> Option<Vec<bool>> {
    // The locals that depend on an accumulator, and the lets that compute them.
    let mut tainted: HashSet<String> = accumulators.iter().map(|a| a.to_string()).collect();
    let mut chain = Vec::new();
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
        let terms: Vec<(&Operand, i64)> = match op {
            Op::Use(a) => vec![(a, 1)],
            Op::Neg(a) => vec![(a, -1)],
            Op::Bin(BinOp::Add, a, b) => vec![(a, 1), (b, 1)],
            Op::Bin(BinOp::Sub, a, b) => vec![(a, 1), (b, -1)],
            _ => return None,
        };
        // A tainted name inside a literal operand (tokens) is not a sum term.
        let in_terms = terms
            .iter()
            .filter_map(|(o, _)| o.var())
            .filter(|v| tainted.contains(&v.to_string()))
            .count();
        let named = reads.intersection(&tainted).count();
        if in_terms < named {
            return None;
        }
        tainted.insert(var.to_string());
        chain.push((var.to_string(), terms));
    }
    // Coefficients, from the result back.
    let mut coef: HashMap<String, i64> = HashMap::default();
    match ret {
        Operand::Var(r) if tainted.contains(&r.to_string()) => {
            coef.insert(r.to_string(), 1);
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
        let c = coef.get(var).copied().unwrap_or(0);
        for (o, sign) in terms {
            if let Some(v) = o.var() {
                *coef.entry(v.to_string()).or_insert(0) += c * sign;
            }
        }
    }
    accumulators
        .iter()
        .map(|a| match coef.get(&a.to_string()).copied().unwrap_or(0) {
            1 => Some(false),
            -1 => Some(true),
            _ => None,
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
                fusion(&body.block, k, ret, &an, &kinds, &HashSet::default())
                    .map(|p| p.accumulators.iter().map(|(_, neg)| *neg).collect())
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
        // An active scalar parameter has no adjoint before the forward sweep ends.
        let scalar = syn::parse_quote! {
            fn f(x: &[f64], w: f64) -> f64 {
                let mut s = 0.0;
                for i in 0..x.len() {
                    s += x[i] * w;
                }
                s
            }
        };
        assert_eq!(fused_loops(scalar, &["x", "w"]), vec![None]);
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
}
