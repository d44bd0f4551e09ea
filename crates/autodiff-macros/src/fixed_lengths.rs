//! The local buffers whose length never changes during a call.
//!
//! The reverse sweep reaches an element of such a buffer (and of its shadow, created as
//! long as it) only at an index where the forward sweep indexed it, so it can skip the
//! bounds check there (see `Reverse::replayed`). A local qualifies when the function's
//! outermost block binds it once to a buffer of a fixed length (`vec![v; n]`, `[v; N]`,
//! `[a, b]`), and nothing in the body can change that length: no push or pop, no whole
//! assignment, resize or swap, no move, no `&mut` loan of it whole or method called on
//! it, no closure capturing it, and no mention of it in code kept as written other than
//! `v.len()` and `v.is_empty()`. Anything the check does not understand disqualifies.
//!
//! A reverse companion differentiated again also makes shadows of its local buffers,
//! `__ad::zero_like(&v)`, as long as them: [`length_locked_locals`] counts those too,
//! for the forward transform of such a companion (see `forward::Replays`).

use crate::collections::HashSet;
use crate::ir::*;
use proc_macro2::{Delimiter, Ident, TokenStream, TokenTree};

/// The locals of `body` (the function's outermost block) whose lengths are fixed.
pub fn fixed_length_locals(body: &Block) -> HashSet<String> {
    fixed_locals(body, false)
}

/// [`fixed_length_locals`] and the locals bound once to a zero shaped like a buffer
/// (`let mut __b_v = __ad::zero_like(&v);`, in code lowered again from a reverse
/// companion), whose lengths are fixed by the same test. A forward transform makes the
/// tangent of each as long as it (a `vec![t; n]`'s tangent takes the primal's length, a
/// zero's is a zero shaped like the primal, or like the same buffer), and changes one's
/// length only where it changes the other's.
pub fn length_locked_locals(body: &Block) -> HashSet<String> {
    fixed_locals(body, true)
}

fn fixed_locals(body: &Block, zeros: bool) -> HashSet<String> {
    let mut fixed: HashSet<String> = body
        .iter()
        .filter_map(|s| match s {
            Stmt::Let {
                var,
                op: Op::VecRepeat(..) | Op::ArrRepeat(..) | Op::ArrLit(..),
                ..
            } => Some(var.to_string()),
            Stmt::Let {
                var,
                op: Op::Use(Operand::Lit(t)) | Op::Inactive(t) | Op::NewVec(t),
                ..
            } if zeros
                && zero_shaped_like(&t.clone().into_iter().collect::<Vec<_>>()).is_some() =>
            {
                Some(var.to_string())
            }
            _ => None,
        })
        .collect();
    if fixed.is_empty() {
        return fixed;
    }
    // A name bound twice (never, with the lowering's fresh names) is not trusted.
    let mut bound = HashSet::default();
    let mut changed = HashSet::default();
    block(body, &mut changed, &mut bound);
    fixed.retain(|v| !changed.contains(v));
    fixed
}

fn block(b: &Block, changed: &mut HashSet<String>, bound: &mut HashSet<String>) {
    for s in b {
        stmt(s, changed, bound);
    }
}

fn stmt(s: &Stmt, changed: &mut HashSet<String>, bound: &mut HashSet<String>) {
    match s {
        Stmt::Let { var, op, .. } => {
            if !bound.insert(var.to_string()) {
                changed.insert(var.to_string());
            }
            self::op(op, changed, bound);
        }
        Stmt::LetTuple { vars, op } => {
            for v in vars {
                if !bound.insert(v.to_string()) {
                    changed.insert(v.to_string());
                }
            }
            self::op(op, changed, bound);
        }
        Stmt::Assign { place, val, .. } => {
            if place.is_whole() {
                changed.insert(place.base.to_string());
            }
            self::place(place, changed);
            operand(val, changed);
        }
        Stmt::Push { place, val, .. } => {
            changed.insert(place.base.to_string());
            self::place(place, changed);
            operand(val, changed);
        }
        Stmt::Fill { place, val } => {
            self::place(place, changed);
            operand(val, changed);
        }
        Stmt::CopyFrom { dst, src, mode } => {
            if !matches!(mode, CopyMode::Elements) {
                changed.insert(dst.base.to_string());
                changed.insert(src.base.to_string());
            }
            place(dst, changed);
            place(src, changed);
        }
        Stmt::Call(c) => call(c, changed, bound),
        Stmt::If {
            cond,
            then,
            els,
            then_vals,
            else_vals,
            ..
        } => {
            tokens(cond, changed);
            block(then, changed, bound);
            block(els, changed, bound);
            for o in then_vals.iter().chain(else_vals) {
                operand(o, changed);
            }
        }
        Stmt::For {
            iter, body, exit, ..
        } => {
            tokens(iter, changed);
            block(body, changed, bound);
            if let Some(e) = exit {
                tokens(e, changed);
            }
        }
        Stmt::Loop { body, exit } => {
            block(body, changed, bound);
            tokens(exit, changed);
        }
        Stmt::Inactive(t) => tokens(t, changed),
    }
}

fn op(o: &Op, changed: &mut HashSet<String>, bound: &mut HashSet<String>) {
    match o {
        Op::Use(a) | Op::Neg(a) | Op::Cast(a, _) => operand(a, changed),
        Op::Bin(_, a, b) => {
            operand(a, changed);
            operand(b, changed);
        }
        Op::Math(_, ops) | Op::ArrLit(ops, _) => ops.iter().for_each(|a| operand(a, changed)),
        Op::Load(p) | Op::CloneOf(p, _) => place(p, changed),
        Op::Call(c) => call(c, changed, bound),
        Op::Inactive(t) | Op::NewVec(t) => tokens(t, changed),
        Op::VecRepeat(a, n) | Op::ArrRepeat(a, n) => {
            operand(a, changed);
            tokens(n, changed);
        }
        Op::StructLit(_, fields) => fields.iter().for_each(|(_, a)| operand(a, changed)),
        Op::Pop(p) => {
            changed.insert(p.base.to_string());
            place(p, changed);
        }
    }
}

fn call(c: &Call, changed: &mut HashSet<String>, bound: &mut HashSet<String>) {
    if let Callee::Method(recv, _) = &c.callee {
        // A method may take `&mut self` (`v.clear()` of a user's trait).
        changed.insert(recv.base.to_string());
        place(recv, changed);
    }
    for a in &c.args {
        match a {
            Arg::Val(o) => operand(o, changed),
            Arg::Copied(p) => place(p, changed),
            Arg::Ref(p, mutable) => {
                // `&mut v` may be a `&mut Vec` that the callee resizes.
                if *mutable && p.is_whole() {
                    changed.insert(p.base.to_string());
                }
                place(p, changed);
            }
            Arg::Closure(cl) => {
                changed.extend(cl.captures.iter().map(|v| v.to_string()));
                block(&cl.body.block, changed, bound);
            }
            Arg::ClosureParam(_) => {}
        }
    }
}

/// A buffer as an operand is a use of it whole: moved into another local (`let w = v;`),
/// whose shadow the reverse sweep may shape like it.
fn operand(o: &Operand, changed: &mut HashSet<String>) {
    match o {
        Operand::Lit(t) => tokens(t, changed),
        Operand::Var(v) => {
            changed.insert(v.to_string());
        }
    }
}

fn place(p: &Place, changed: &mut HashSet<String>) {
    for proj in &p.proj {
        if let Proj::Index(t) = proj {
            tokens(t, changed);
        }
    }
}

/// `v` of the tokens `__ad::zero_like(&v)` or `__ad::accumulator_zero(&v)` (in
/// parentheses or not): a new buffer shaped like `v`, which reads `v` and changes
/// nothing.
fn zero_shaped_like(tts: &[TokenTree]) -> Option<Ident> {
    if let [TokenTree::Group(g)] = tts
        && g.delimiter() == Delimiter::Parenthesis
    {
        return zero_shaped_like(&g.stream().into_iter().collect::<Vec<_>>());
    }
    let (f, args) = crate::lower::runtime_call_at(tts)?;
    if (f != "zero_like" && f != "accumulator_zero") || tts.len() != crate::lower::RUNTIME_CALL_LEN
    {
        return None;
    }
    match args.stream().into_iter().collect::<Vec<_>>().as_slice() {
        [TokenTree::Punct(amp), TokenTree::Ident(v)] if amp.as_char() == '&' => Some(v.clone()),
        _ => None,
    }
}

/// Code kept as written: a name followed by anything but `.len()` or `.is_empty()`
/// counts as a change (a zero shaped like it, `__ad::zero_like(&v)`, does not).
fn tokens(t: &TokenStream, changed: &mut HashSet<String>) {
    let tts: Vec<TokenTree> = t.clone().into_iter().collect();
    if zero_shaped_like(&tts).is_some() {
        return;
    }
    for (k, tt) in tts.iter().enumerate() {
        match tt {
            TokenTree::Ident(id) => {
                let reads_length = matches!(
                    (tts.get(k + 1), tts.get(k + 2), tts.get(k + 3)),
                    (Some(TokenTree::Punct(dot)), Some(TokenTree::Ident(m)), Some(TokenTree::Group(args)))
                        if dot.as_char() == '.'
                            && (m == "len" || m == "is_empty")
                            && args.stream().is_empty()
                );
                if !reads_length {
                    changed.insert(id.to_string());
                }
            }
            TokenTree::Group(g) => tokens(&g.stream(), changed),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::{format_ident, quote};

    fn buffer(name: &str) -> Stmt {
        Stmt::Let {
            var: format_ident!("{}", name),
            mutable: true,
            op: Op::VecRepeat(Operand::Lit(quote!(0.0)), quote!(n)),
        }
    }

    fn write(name: &str, index: TokenStream) -> Stmt {
        Stmt::Assign {
            place: Place {
                base: format_ident!("{}", name),
                proj: vec![Proj::Index(index)],
            },
            kind: AssignKind::Set,
            val: Operand::Lit(quote!(1.0)),
        }
    }

    #[test]
    fn a_buffer_only_indexed_and_measured_keeps_its_length() {
        let body = vec![
            buffer("v"),
            Stmt::For {
                pat: format_ident!("i"),
                iter: quote!(0..v.len()),
                body: vec![write("v", quote!(i))],
                exit: None,
            },
        ];
        assert!(fixed_length_locals(&body).contains("v"));
    }

    #[test]
    fn a_push_a_whole_assignment_or_other_code_naming_it_disqualifies() {
        let pushed = Stmt::Push {
            place: Place::local(format_ident!("a")),
            val: Operand::Lit(quote!(1.0)),
            copy: false,
        };
        let replaced = Stmt::Assign {
            place: Place::local(format_ident!("b")),
            kind: AssignKind::Set,
            val: Operand::Var(format_ident!("other")),
        };
        let truncated = Stmt::Inactive(quote!(c.truncate(1);));
        let body = vec![
            buffer("a"),
            buffer("b"),
            buffer("c"),
            buffer("d"),
            pushed,
            replaced,
            truncated,
            write("d", quote!(d.len() - 1)),
        ];
        let fixed = fixed_length_locals(&body);
        assert!(!fixed.contains("a") && !fixed.contains("b") && !fixed.contains("c"));
        assert!(fixed.contains("d"));
    }

    #[test]
    fn zeros_shaped_like_a_buffer_are_locked_in_code_lowered_again() {
        let zero = |name: &str, of: &str| {
            let of = format_ident!("{}", of);
            Stmt::Let {
                var: format_ident!("{}", name),
                mutable: true,
                op: Op::NewVec(quote!(__ad::zero_like(&#of))),
            }
        };
        let lent = Stmt::Inactive(quote!(grow(&mut c);));
        let body = vec![
            buffer("v"),
            zero("b", "v"),
            zero("c", "v"),
            lent,
            write("b", quote!(0)),
        ];
        let locked = length_locked_locals(&body);
        // Reading `v` to shape a zero changes nothing.
        assert!(locked.contains("v") && locked.contains("b"), "{locked:?}");
        assert!(!locked.contains("c"), "{locked:?}");
        // A user's function has no such zeros: only `v` is of fixed length there.
        let fixed = fixed_length_locals(&body);
        assert!(fixed.contains("v") && !fixed.contains("b"), "{fixed:?}");
    }
}
