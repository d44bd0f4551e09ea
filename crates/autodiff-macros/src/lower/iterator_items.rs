//! `next`, `nth` and `last` of an iterator chain, written before lowering as the
//! reductions that the lowering reads (`Some(v)` of a reduction, and `Option::map` of
//! one, see `option_maps`):
//!
//! ```text
//! it.next()    →  it.take(1).reduce(|first, _| first)   (`it.reduce(..)` after a `filter`)
//! it.nth(k)    →  it.skip(k).take(1).reduce(|first, _| first)
//! it.last()    →  it.reduce(|_, last| last)
//! ```
//!
//! Each gives the item it gave, or `None` where there is none, and the reduction's
//! derivative reaches the item it keeps. `it` must be an iterator by its own form: a
//! range, or a chain that ends in a source or an adapter (`x.iter()`, `.map(f)`), and
//! not in one whose items are slices (`x.windows(2)`: map them to values first). A slice's own `x.last()` and a user type's `next()` are other methods,
//! and an iterator held in a variable, which `next` advances, is left as written: the
//! lowering names the method.

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

/// `e` written as a reduction, where it is `it.next()`, `it.nth(k)` or `it.last()`.
fn reduced(e: &Expr) -> Option<Expr> {
    let Expr::MethodCall(m) = e else {
        return None;
    };
    if !is_iterator_chain(&m.receiver) || yields_slices(&m.receiver) {
        return None;
    }
    let span = m.method.span();
    let it = &m.receiver;
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
        _ => return None,
    })
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
