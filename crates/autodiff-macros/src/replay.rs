//! Buffers computed again instead of recorded.
//!
//! A loop body that starts by filling a scratch buffer from inputs that never change
//! (`for j in 0..d { xc[j] = x[i * d + j] - mu[k * d + j]; }`, then reads of `xc`) makes
//! the forward sweep record each old value it overwrites, so that the reverse sweep can
//! put it back for the iteration before. When nothing else writes the buffer and nothing
//! outside that body reads it, the reverse sweep can instead run the filling loop again
//! at the start of each iteration's reverse: the buffer then holds what the iteration
//! read, and no value is recorded. That is a copy of the inputs per iteration saved on
//! the tape and read back, against the filling loop's arithmetic done twice.
//!
//! [`replayed_buffers`] finds such buffers; [`replay`] is the code that fills one again.

use crate::analysis::{stmt_reads, stmt_writes};
use crate::collections::{HashMap, HashSet};
use crate::forward::primal_op;
use crate::ir::*;
use proc_macro2::{Delimiter, Ident, TokenStream, TokenTree};
use quote::quote;

/// The local buffers of `body` whose filling loop the reverse sweep runs again instead of
/// restoring their old values. Each is filled by a `for` loop `S` that is a statement of
/// a loop body `B`, such that:
/// - the buffer is a local declared outside `B` as `vec![v; e]` or `[v; e]`, and `S` is
///   the only statement of the function that writes it;
/// - `S` is `for j in 0..e { .. buf[j] = .. }` with the same `e`: every element is
///   overwritten in every iteration, so none keeps a value from another iteration
///   (which the reverse sweep, running the iterations the other way round, would not
///   see);
/// - every statement that reads it is in `B`, after `S`;
/// - `S` holds only `let`s of arithmetic and loads and, last, the buffer's assignment,
///   and leaves only at the end of its range;
/// - the statements of `B` before `S` are `let`s of arithmetic and loads, or loops of the
///   same form as `S` (so `S` runs in every iteration of `B` that the reverse sweep
///   reverses);
/// - `S` and the `let`s before it read nothing that the function writes, so that
///   computed again they give the same values.
pub fn replayed_buffers(body: &Block, kinds: &HashMap<String, VarKind>) -> HashSet<String> {
    let mut writes = HashSet::default();
    body.iter().for_each(|s| stmt_writes(s, &mut writes));
    let lengths = declared_lengths(body);
    let mut out = HashSet::default();
    each_loop_body(body, &mut |b| {
        for (k, s) in b.iter().enumerate() {
            let Some(buf) = filled_buffer(s) else {
                continue;
            };
            let name = buf.to_string();
            let declared_in_b = b
                .iter()
                .any(|s| matches!(s, Stmt::Let { var, .. } if *var == name));
            if kinds.get(&name) != Some(&VarKind::Buffer)
                || declared_in_b
                || !overwrites_whole(s, lengths.get(&name))
                || !b[..k]
                    .iter()
                    .all(|s| is_pure_let(s) || filled_buffer(s).is_some())
                || count(body, &name, Count::Writes) != 1
                || count(body, &name, Count::Reads) != count(&b[k + 1..], &name, Count::Reads)
            {
                continue;
            }
            let mut defined = HashSet::default();
            let mut reads = HashSet::default();
            for s in lets_read(b, k).into_iter().chain([s]) {
                defs(s, &mut defined);
                reads.extend(stmt_reads(s));
            }
            if reads.contains(&name)
                || reads
                    .iter()
                    .any(|r| writes.contains(r) && !defined.contains(r))
            {
                continue;
            }
            out.insert(name);
        }
    });
    out
}

/// The buffer that `s` fills, when `s` is a loop whose body is `let`s of arithmetic and
/// loads followed by one assignment to an element of a local buffer.
pub fn filled_buffer(s: &Stmt) -> Option<&Ident> {
    let Stmt::For {
        body, exit: None, ..
    } = s
    else {
        return None;
    };
    let (last, lets) = body.split_last()?;
    let Stmt::Assign {
        place,
        kind: AssignKind::Set,
        ..
    } = last
    else {
        return None;
    };
    let element = matches!(place.proj.as_slice(), [Proj::Index(_)]);
    (element && lets.iter().all(is_pure_let)).then_some(&place.base)
}

/// Whether the filling loop `s` writes every element of its buffer, whose declared length
/// is `len`: its range is `0..len` (the same expression, which the check that the loop
/// reads nothing the function writes keeps at the same value) and it assigns the element
/// at its variable.
fn overwrites_whole(s: &Stmt, len: Option<&String>) -> bool {
    crate::reverse::overwrite_loop(s).is_some_and(|(_, end)| len == Some(&end))
}

/// The length of each local buffer declared `vec![v; n]` or `[v; n]` in `b`, as the text
/// of `n` written the way a loop's range end is (see [`crate::reverse::overwrite_loop`]).
pub fn declared_lengths(b: &Block) -> HashMap<String, String> {
    let mut out = HashMap::default();
    each_block(b, &mut |b| {
        for s in b {
            if let Stmt::Let {
                var,
                op: Op::VecRepeat(_, n) | Op::ArrRepeat(_, n),
                ..
            } = s
                && let Ok(e) = syn::parse2::<syn::Expr>(n.clone())
            {
                out.insert(var.to_string(), quote!(#e).to_string());
            }
        }
    });
    out
}

/// The code that fills a buffer again: the `let`s of its loop body `b` that its filling
/// loop `b[k]` reads, then the loop, in a block of their own. It reaches the elements the
/// forward sweep reached, each as `at(place, written)` renders it.
pub fn replay(b: &Block, k: usize, at: &dyn Fn(&Place, bool) -> TokenStream) -> TokenStream {
    let Stmt::For {
        pat, iter, body, ..
    } = &b[k]
    else {
        return quote!();
    };
    let lets: TokenStream = (lets_read(b, k).into_iter())
        .map(|s| primal_stmt(s, at))
        .collect();
    let stmts: TokenStream = body.iter().map(|s| primal_stmt(s, at)).collect();
    quote!({ #lets for #pat in #iter { #stmts } })
}

/// The `let`s of `b` before `b[k]` whose values `b[k]` reads, directly or through one
/// another, in order.
fn lets_read(b: &Block, k: usize) -> Vec<&Stmt> {
    let mut wanted = stmt_reads(&b[k]);
    let mut out = Vec::new();
    for s in b[..k].iter().rev() {
        if let Stmt::Let { var, .. } = s
            && is_pure_let(s)
            && wanted.contains(&var.to_string())
        {
            wanted.extend(stmt_reads(s));
            out.push(s);
        }
    }
    out.reverse();
    out
}

/// The primal code of a `let` or an assignment accepted by [`filled_buffer`].
fn primal_stmt(s: &Stmt, at: &dyn Fn(&Place, bool) -> TokenStream) -> TokenStream {
    match s {
        Stmt::Let { var, op, .. } => {
            let v = match op {
                Op::Load(p) => at(p, false),
                _ => primal_op(op),
            };
            quote!(let #var = #v;)
        }
        Stmt::Assign { place, val, .. } => {
            let (p, v) = (at(place, true), val.primal());
            quote!(#p = #v;)
        }
        _ => quote!(),
    }
}

/// A `let` whose value computed again is the same, given the same inputs: arithmetic,
/// math functions, loads, casts and plain integer expressions (no call, no macro).
fn is_pure_let(s: &Stmt) -> bool {
    match s {
        Stmt::Let { op, .. } => match op {
            Op::Use(o) | Op::Neg(o) | Op::Cast(o, _) => plain_operand(o),
            Op::Bin(_, a, b) => plain_operand(a) && plain_operand(b),
            Op::Math(_, ops) => ops.iter().all(plain_operand),
            Op::Load(p) => p.proj.iter().all(|pr| match pr {
                Proj::Index(t) => plain_tokens(t),
                Proj::Field(_) | Proj::Deref => true,
            }),
            Op::Inactive(t) => plain_tokens(t),
            _ => false,
        },
        _ => false,
    }
}

fn plain_operand(o: &Operand) -> bool {
    match o {
        Operand::Var(_) => true,
        Operand::Lit(t) => plain_tokens(t),
    }
}

/// Tokens of names, literals, operators and parentheses: no call (a name followed by
/// `(`), no macro, no method, no block.
fn plain_tokens(t: &TokenStream) -> bool {
    let mut after_name = false;
    for tt in t.clone() {
        let ok = match &tt {
            TokenTree::Ident(_) | TokenTree::Literal(_) => true,
            TokenTree::Punct(p) => !matches!(p.as_char(), '!' | '.' | ';' | '='),
            TokenTree::Group(g) => {
                g.delimiter() == Delimiter::Parenthesis && !after_name && plain_tokens(&g.stream())
            }
        };
        if !ok {
            return false;
        }
        after_name = matches!(tt, TokenTree::Ident(_));
    }
    true
}

/// The locals that a `let` or a filling loop declares (the loop's variable and `let`s).
fn defs(s: &Stmt, out: &mut HashSet<String>) {
    match s {
        Stmt::Let { var, .. } => {
            out.insert(var.to_string());
        }
        Stmt::For { pat, body, .. } => {
            out.insert(pat.to_string());
            body.iter().for_each(|s| defs(s, out));
        }
        _ => {}
    }
}

/// Calls `f` on `b` and on every block nested in it.
fn each_block(b: &Block, f: &mut impl FnMut(&Block)) {
    f(b);
    for s in b {
        match s {
            Stmt::For { body, .. } | Stmt::Loop { body, .. } => each_block(body, f),
            Stmt::If { then, els, .. } => {
                each_block(then, f);
                each_block(els, f);
            }
            _ => {}
        }
    }
}

/// Calls `f` on the body of every loop in `b`, nested ones included.
fn each_loop_body(b: &Block, f: &mut impl FnMut(&Block)) {
    each_block(b, &mut |blk| {
        for s in blk {
            if let Stmt::For { body, .. } | Stmt::Loop { body, .. } = s {
                f(body);
            }
        }
    });
}

#[derive(Clone, Copy, PartialEq)]
enum Count {
    Reads,
    Writes,
}

/// How many statements of `b` (nested ones one by one, and a branch's or loop's own
/// condition, range and values as one more) read or write `name`.
fn count(b: &[Stmt], name: &str, what: Count) -> usize {
    let mentions = |t: &TokenStream| {
        let mut hit = false;
        crate::lower::walk_idents(t, &mut |id| hit |= id == name);
        hit
    };
    let operand_mentions = |o: &Operand| match o {
        Operand::Var(v) => v == name,
        Operand::Lit(t) => mentions(t),
    };
    // What a branch or a loop reads itself; neither writes anything but in its blocks.
    let head = |reads: bool| usize::from(what == Count::Reads && reads);
    b.iter()
        .map(|s| match s {
            Stmt::If {
                cond,
                then,
                els,
                then_vals,
                else_vals,
                ..
            } => {
                let vals = then_vals.iter().chain(else_vals).any(operand_mentions);
                head(mentions(cond) || vals) + count(then, name, what) + count(els, name, what)
            }
            Stmt::For {
                iter, exit, body, ..
            } => {
                head(mentions(iter) || exit.as_ref().is_some_and(mentions))
                    + count(body, name, what)
            }
            Stmt::Loop { exit, body } => head(mentions(exit)) + count(body, name, what),
            s => usize::from(match what {
                Count::Reads => stmt_reads(s).contains(name),
                Count::Writes => {
                    let mut w = HashSet::default();
                    stmt_writes(s, &mut w);
                    w.contains(name)
                }
            }),
        })
        .sum()
}
