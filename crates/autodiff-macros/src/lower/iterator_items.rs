//! `next`, `nth`, `last` and `find` of an iterator chain, written before lowering as the
//! reductions that the lowering reads (`Some(v)` of a reduction, and `Option::map` of
//! one, see `option_maps`), and `filter_map` (`map_while`) of a closure that chooses
//! between `Some(e)` and `None`, written as the `filter` (`take_while`) and `map` that it
//! is:
//!
//! ```text
//! it.next()    →  it.take(1).reduce(|first, _| first)   (`it.reduce(..)` after a `filter`)
//! it.nth(k)    →  it.skip(k).take(1).reduce(|first, _| first)
//! it.last()    →  it.reduce(|_, last| last)
//! it.find(p)   →  it.filter(p).reduce(|first, _| first)
//! it.filter_map(|v| if c { Some(e) } else { None })
//!              →  it.filter(|r| { let v = *r; c }).map(|v| e)
//!                 (also of `|v| c.then(|| e)` and `|v| c.then_some(e)`)
//! it.map_while(|v| if c { Some(e) } else { None })
//!              →  it.take_while(|r| { let v = *r; c }).map(|v| e)
//! ```
//!
//! Each gives the item it gave, or `None` where there is none, and the reduction's
//! derivative reaches the item it keeps. The condition of a `filter_map` runs on a copy
//! of the item, as `filter` lends its predicate a reference (the items of a chain over
//! a buffer, references, indices and pairs of them, are `Copy`); it carries no
//! derivative, as a `filter`'s predicate carries none. `it` must be an iterator by its own form: a
//! range, or a chain that ends in a source or an adapter (`x.iter()`, `.map(f)`), and
//! not in one whose items are slices (`x.windows(2)`: map them to values first). A slice's own `x.last()` and a user type's `next()` are other methods,
//! and an iterator held in a variable, which `next` advances, is left as written: the
//! lowering names the method.

use super::option_locals::{is_none, some_of};
use super::*;

/// Writes the forms above in `body` (a function's own code; nested blocks and closures
/// included).
pub(super) fn reduce_iterator_items(body: &mut syn::Block) {
    Reducer.visit_block_mut(body);
}

struct Reducer;

impl VisitMut for Reducer {
    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        visit_macro_items(self, m);
    }

    fn visit_expr_mut(&mut self, e: &mut Expr) {
        syn::visit_mut::visit_expr_mut(self, e);
        if let Some(reduced) = reduced(e) {
            *e = reduced;
        }
    }
}

/// `e` written as a reduction, where it is `it.next()`, `it.nth(k)`, `it.last()` or
/// `it.find(p)`, or as a `filter` and a `map`, where it is such a `filter_map`.
fn reduced(e: &Expr) -> Option<Expr> {
    let Expr::MethodCall(m) = e else {
        return None;
    };
    if !is_iterator_chain(&m.receiver) {
        return None;
    }
    let span = m.method.span();
    let it = &m.receiver;
    // (A slice may be an item of `filter` and `map`, not of a reduction.)
    if m.method == "filter_map" && m.args.len() == 1 {
        return filtered_and_mapped(it, &m.args[0], span, "filter");
    }
    // (`map_while` ends at the first `None`: the prefix that `take_while` keeps.)
    if m.method == "map_while" && m.args.len() == 1 {
        return filtered_and_mapped(it, &m.args[0], span, "take_while");
    }
    if yields_slices(it) {
        return None;
    }
    Some(match (m.method.to_string().as_str(), m.args.len()) {
        // (`take` does not follow a `filter`, whose positions the lowering does not count:
        // the reduction then goes on past the first item, keeping it.)
        ("next", 0) if filters(it) => {
            syn::parse_quote_spanned!(span=> #it.reduce(|__ad_first, _| __ad_first))
        }
        ("next", 0) => {
            syn::parse_quote_spanned!(span=> #it.take(1).reduce(|__ad_first, _| __ad_first))
        }
        ("nth", 1) => {
            let k = &m.args[0];
            syn::parse_quote_spanned!(span=>
                #it.skip(#k).take(1).reduce(|__ad_first, _| __ad_first))
        }
        ("last", 0) => syn::parse_quote_spanned!(span=> #it.reduce(|_, __ad_last| __ad_last)),
        ("find", 1) => {
            let p = &m.args[0];
            syn::parse_quote_spanned!(span=>
                #it.filter(#p).reduce(|__ad_first, _| __ad_first))
        }
        _ => return None,
    })
}

/// `it.filter(..).map(..)` of `it.filter_map(f)` (`it.take_while(..).map(..)` of
/// `it.map_while(f)`, with `adapter` `take_while`), where `f` is a closure of one
/// parameter whose body is `if c { Some(e) } else { None }` (or the arms the other way
/// round), `c.then(|| e)` or `c.then_some(e)`.
fn filtered_and_mapped(it: &Expr, f: &Expr, span: Span, adapter: &str) -> Option<Expr> {
    let Expr::Closure(c) = strip(f) else {
        return None;
    };
    let [param] = c.inputs.iter().collect::<Vec<_>>()[..] else {
        return None;
    };
    let (cond, value): (Expr, Expr) = match strip(&c.body) {
        Expr::If(choice) => {
            let (_, other) = choice.else_branch.as_ref()?;
            let (kept, dropped) = (block_value(&choice.then_branch)?, block_value_of(other)?);
            let cond = &choice.cond;
            match (some_of(kept), some_of(dropped)) {
                (Some(e), None) if is_none(dropped) => (syn::parse_quote!(#cond), e.clone()),
                (None, Some(e)) if is_none(kept) => (syn::parse_quote!(!(#cond)), e.clone()),
                _ => return None,
            }
        }
        // `c.then(|| e)` and `c.then_some(e)`.
        Expr::MethodCall(t) if t.args.len() == 1 => {
            let value = match (t.method.to_string().as_str(), strip(&t.args[0])) {
                ("then", Expr::Closure(e)) if e.inputs.is_empty() => (*e.body).clone(),
                ("then_some", e) => e.clone(),
                _ => return None,
            };
            (t.receiver.as_ref().clone(), value)
        }
        _ => return None,
    };
    // The item's pattern without its type: the reference `filter` lends is to the item.
    let pat = match param {
        Pat::Type(t) => (*t.pat).clone(),
        p => p.clone(),
    };
    let adapter = Ident::new(adapter, span);
    Some(syn::parse_quote_spanned!(span=>
        #it.#adapter(|__ad_item| { let #pat = *__ad_item; #cond }).map(|#param| #value)))
}

/// The value of a block that is one expression.
fn block_value(b: &syn::Block) -> Option<&Expr> {
    match &b.stmts[..] {
        [syn::Stmt::Expr(e, None)] => Some(e),
        _ => None,
    }
}

/// The value of an `else` branch that is a block of one expression.
fn block_value_of(e: &Expr) -> Option<&Expr> {
    match strip(e) {
        Expr::Block(b) if b.label.is_none() => block_value(&b.block),
        _ => None,
    }
}

/// Whether the items of the chain `it` are slices (`x.windows(2)`, `x.chunks(3)`), which
/// a reduction does not keep: a `map` to values must come first.
pub(super) fn yields_slices(it: &Expr) -> bool {
    matches!(strip(it), Expr::MethodCall(m)
        if matches!(m.method.to_string().as_str(), "windows" | "chunks" | "chunks_exact"))
}

/// Whether the chain `it` has a `filter`.
pub(super) fn filters(it: &Expr) -> bool {
    match strip(it) {
        Expr::MethodCall(m) => m.method == "filter" || filters(&m.receiver),
        _ => false,
    }
}

/// Whether `it` is an iterator by its form: a range, or a method chain ending in one of
/// the sources and adapters the lowering reads.
pub(super) fn is_iterator_chain(it: &Expr) -> bool {
    match strip(it) {
        Expr::Range(_) => true,
        Expr::MethodCall(m) => matches!(
            m.method.to_string().as_str(),
            "iter"
                | "into_iter"
                | "map"
                | "zip"
                | "enumerate"
                | "chunks"
                | "chunks_exact"
                | "windows"
                | "rev"
                | "step_by"
                | "skip"
                | "take"
                | "copied"
                | "cloned"
                | "filter"
                | "chain"
                | "flat_map"
                | "flatten"
                | "take_while"
                | "skip_while"
        ),
        _ => false,
    }
}
