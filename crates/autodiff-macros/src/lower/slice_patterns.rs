//! Slice patterns (`[a, b, c]`, `[first, .., last]`, `[head, rest @ ..]`) on a slice or
//! an array, written before lowering as a test of the length and a `let` for each element
//! bound, by index:
//!
//! ```text
//! if let [a, b] = w { body } else { e }   →  if w.len() == 2 { let a = &w[0]; let b = &w[1]; body } else { e }
//! let [a, .., z] = w else { diverge };    →  if !(w.len() >= 2) { diverge } let a = &w[0]; let z = &w[w.len() - 1];
//! match w { [a] => x, [a, b, ..] => y, _ => z }
//!                                          →  if w.len() == 1 { let a = &w[0]; x } else if w.len() >= 2 { .. y } else { z }
//! ```
//!
//! The bindings are what the pattern binds: a reference to the element where the pattern
//! matches through a reference (`w: &[f64]`, the default binding mode), the element
//! itself for `&a`, `mut a`, a pattern `&[a, b]` and a scrutinee `*w`; `rest @ ..` binds
//! the part between. The slice must be named by a variable or a member (`w`, `*w`,
//! `self.w`), or be a range of one (`x[..2]`, `&x[1..]`), which is read again for each
//! element. A `match` becomes a chain of `if`s
//! in the order of its arms, its last arm taken without a test (the match is exhaustive,
//! as rustc checks on the function as written). Patterns whose elements are not bindings
//! or `_` (a literal, a nested pattern), arms with guards, and other scrutinees are left
//! as written, and the lowering refuses them as before.

use super::*;

/// Writes the slice patterns above in `body` as tests and bindings (a function's own
/// code; nested blocks and closures included), except on `never_differentiated`
/// parameters.
pub(super) fn index_slice_patterns(body: &mut syn::Block, never_differentiated: &HashSet<String>) {
    Indexer {
        never_differentiated,
    }
    .visit_block_mut(body);
}

struct Indexer<'a> {
    /// The parameters that carry no float (`idx: &[usize]`): their patterns are kept as
    /// written, as the lowering reads them as values without derivatives.
    never_differentiated: &'a HashSet<String>,
}

impl VisitMut for Indexer<'_> {
    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        visit_macro_items(self, m);
    }

    fn visit_expr_mut(&mut self, e: &mut Expr) {
        syn::visit_mut::visit_expr_mut(self, e);
        if let Some(indexed) = indexed(e, self.never_differentiated) {
            *e = indexed;
        }
    }

    /// `let [..] = w else { .. };`: the test, then the bindings, in the block.
    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        syn::visit_mut::visit_block_mut(self, b);
        let mut stmts = Vec::with_capacity(b.stmts.len());
        for s in b.stmts.drain(..) {
            if let syn::Stmt::Local(l) = &s
                && let Some(init) = &l.init
                && let Some((_, diverge)) = &init.diverge
                && !reads_from(&init.expr, self.never_differentiated)
                && let Some(m) = slice_match(&l.pat, &init.expr)
            {
                let span = l.span();
                let cond = &m.cond;
                stmts.push(syn::parse_quote_spanned!(span=> if !(#cond) #diverge));
                stmts.extend(m.binds);
            } else {
                stmts.push(s);
            }
        }
        b.stmts = stmts;
    }
}

/// What a slice pattern tests and binds.
struct SliceMatch {
    /// Whether the slice's length fits the pattern.
    cond: Expr,
    /// A `let` for each binding of the pattern.
    binds: Vec<syn::Stmt>,
}

/// `e` written as tests and bindings, where it is an `if let` or a `match` above.
fn indexed(e: &Expr, never_differentiated: &HashSet<String>) -> Option<Expr> {
    let span = e.span();
    match e {
        Expr::If(i) => {
            let Expr::Let(l) = &*i.cond else {
                return None;
            };
            if reads_from(&l.expr, never_differentiated) {
                return None;
            }
            let m = slice_match(&l.pat, &l.expr)?;
            let (cond, binds, stmts) = (&m.cond, &m.binds, &i.then_branch.stmts);
            let els = i.else_branch.as_ref().map(|(_, e)| quote!(else #e));
            Some(syn::parse_quote_spanned!(span=> if #cond { #(#binds)* #(#stmts)* } #els))
        }
        Expr::Match(m) => {
            let arms = &m.arms;
            if reads_from(&m.expr, never_differentiated)
                || arms.iter().any(|a| a.guard.is_some())
                || !arms
                    .iter()
                    .any(|a| matches!(strip_reference(&a.pat), Pat::Slice(_)))
            {
                return None;
            }
            // From the last arm up: each `if` keeps the chain after it as its `else`.
            let (last, before) = arms.split_last()?;
            let last = arm_value(&last.pat, &m.expr, &last.body)?.1;
            let mut chain: Expr = syn::parse_quote_spanned!(span=> #last);
            for a in before.iter().rev() {
                let (cond, value) = arm_value(&a.pat, &m.expr, &a.body)?;
                chain = syn::parse_quote_spanned!(span=> if #cond #value else #chain);
            }
            Some(chain)
        }
        _ => None,
    }
}

/// A `match` arm: the test where it is taken, and its value, as a block that binds what
/// its pattern binds (`_` tests nothing and binds nothing).
fn arm_value(pat: &Pat, scrutinee: &Expr, body: &Expr) -> Option<(Expr, syn::Block)> {
    let span = body.span();
    if let Pat::Wild(_) = pat {
        return Some((
            syn::parse_quote_spanned!(span=> true),
            syn::parse_quote_spanned!(span=> { #body }),
        ));
    }
    let m = slice_match(pat, scrutinee)?;
    let binds = &m.binds;
    Some((
        m.cond,
        syn::parse_quote_spanned!(span=> { #(#binds)* #body }),
    ))
}

fn strip_reference(p: &Pat) -> &Pat {
    match p {
        Pat::Reference(r) => &r.pat,
        p => p,
    }
}

/// The test and bindings of a slice pattern `pat` (or `&pat`) on `scrutinee`.
fn slice_match(pat: &Pat, scrutinee: &Expr) -> Option<SliceMatch> {
    // (The elements are bound by value where the pattern or the scrutinee takes the
    // reference off, by reference otherwise.)
    let (elems, by_value) = match pat {
        Pat::Slice(s) => (&s.elems, false),
        Pat::Reference(r) if r.mutability.is_none() => match &*r.pat {
            Pat::Slice(s) => (&s.elems, true),
            _ => return None,
        },
        _ => return None,
    };
    // A place of slice type (`*w`, `x[1..]`) gives its elements by value; `&x[1..]` is
    // read as `x[1..]` by reference.
    let (slice, place) = match strip(scrutinee) {
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => (strip(&u.expr), true),
        Expr::Reference(r) if r.mutability.is_none() && is_range_of_slice(&r.expr) => {
            (strip(&r.expr), false)
        }
        e if is_range_of_slice(e) => (e, true),
        e => (e, false),
    };
    if !(is_named_slice(slice) || is_range_of_slice(slice)) || (place && by_value) {
        return None;
    }
    let by_value = by_value || place;
    let span = pat.span();
    let rest = elems.iter().position(is_rest);
    if elems.iter().filter(|p| is_rest(p)).count() > 1 {
        return None;
    }
    let fixed = elems.len() - usize::from(rest.is_some());
    let after = rest.map_or(0, |r| elems.len() - r - 1);
    let mut binds = Vec::new();
    for (k, p) in elems.iter().enumerate() {
        // The element's index: from the front before `..`, from the back after it.
        let index: Expr = match rest {
            Some(r) if k > r => {
                let back = elems.len() - k;
                syn::parse_quote_spanned!(span=> #slice.len() - #back)
            }
            _ => syn::parse_quote_spanned!(span=> #k),
        };
        match p {
            Pat::Wild(_) | Pat::Rest(_) => {}
            Pat::Ident(pi) if pi.subpat.is_some() => {
                // `rest @ ..`: the part between, by reference.
                if by_value || pi.by_ref.is_some() || pi.mutability.is_some() {
                    return None;
                }
                let (name, from) = (&pi.ident, k);
                binds.push(syn::parse_quote_spanned!(span=>
                    let #name = &#slice[#from..#slice.len() - #after];));
            }
            Pat::Ident(pi) => {
                let (name, mutability) = (&pi.ident, &pi.mutability);
                let by_ref = match (&pi.by_ref, mutability) {
                    (Some(_), None) => true,
                    (Some(_), Some(_)) => return None,
                    (None, Some(_)) => false,
                    (None, None) => !by_value,
                };
                binds.push(if by_ref {
                    syn::parse_quote_spanned!(span=> let #name = &#slice[#index];)
                } else {
                    syn::parse_quote_spanned!(span=> let #mutability #name = #slice[#index];)
                });
            }
            // `&a` of an element matched through a reference.
            Pat::Reference(r) if !by_value && r.mutability.is_none() => match &*r.pat {
                Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => {
                    let (name, mutability) = (&pi.ident, &pi.mutability);
                    binds.push(syn::parse_quote_spanned!(span=>
                        let #mutability #name = #slice[#index];));
                }
                _ => return None,
            },
            _ => return None,
        }
    }
    let cond = match rest {
        None => syn::parse_quote_spanned!(span=> #slice.len() == #fixed),
        Some(_) if fixed == 0 => syn::parse_quote_spanned!(span=> true),
        Some(_) => syn::parse_quote_spanned!(span=> #slice.len() >= #fixed),
    };
    Some(SliceMatch { cond, binds })
}

/// A slice named by a variable or a member (`w`, `self.w`).
fn is_named_slice(e: &Expr) -> bool {
    matches!(strip(e), Expr::Path(_) | Expr::Field(_))
}

/// A range of a named slice (`x[..2]`, `self.w[i..]`).
fn is_range_of_slice(e: &Expr) -> bool {
    matches!(strip(e), Expr::Index(i)
        if is_named_slice(&i.expr) && matches!(strip(&i.index), Expr::Range(_)))
}

/// `..` or `name @ ..` in a slice pattern.
fn is_rest(p: &Pat) -> bool {
    match p {
        Pat::Rest(_) => true,
        Pat::Ident(pi) => pi
            .subpat
            .as_ref()
            .is_some_and(|(_, s)| matches!(&**s, Pat::Rest(_))),
        _ => false,
    }
}
