//! `a.chain(b)` followed only by adapters that act on each element by itself (`map`,
//! `filter`, `copied`, `cloned`), written before lowering as one iteration over each
//! part, in order:
//!
//! ```text
//! for v in a.chain(b).map(f) { body }   →  for v in a.map(f) { body } for v in b.map(f) { body }
//! a.chain(b).map(f).sum::<T>()          →  b.map(f).fold(a.map(f).sum::<T>(), |s, v| s + v)
//! a.chain(b).map(f).product::<T>()      →  b.map(f).fold(a.map(f).product::<T>(), |p, v| p * v)
//! a.chain(b).map(f).fold(init, g)       →  b.map(f).fold(a.map(f).fold(init, g), g)
//! ```
//!
//! The sums and products add (multiply) the second part's elements into the first
//! part's result one by one, as the chained iterator does, so the value is the same to
//! the bit. In the loops, `continue` goes on to the next element and `return` leaves the
//! function, as they did; a body that may `break` out of the loop (which would leave
//! the first part only) is left as written, and so are adapters that count positions
//! after `chain` (`enumerate`, `zip`, `skip`, `rev`, ..): the lowering then refuses
//! `chain` by name.

use super::*;

/// Writes the chains above in `body` as iterations over their parts (a function's own
/// code; nested blocks and closures included).
pub(super) fn split_chains(body: &mut syn::Block) {
    Splitter.visit_block_mut(body);
}

struct Splitter;

impl VisitMut for Splitter {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        syn::visit_mut::visit_expr_mut(self, e);
        if let Some(split) = split(e) {
            *e = split;
        }
    }

    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        visit_macro_items(self, m);
    }
}

/// `e` written over the two parts of its chain, where it is one of the forms above.
fn split(e: &Expr) -> Option<Expr> {
    let span = e.span();
    match e {
        Expr::ForLoop(f) if f.label.is_none() => {
            if breaks_out(&f.body) {
                return None;
            }
            let (a, b) = parts(&f.expr)?;
            let (pat, body) = (&f.pat, &f.body);
            Some(syn::parse_quote_spanned!(span=> {
                for #pat in #a #body
                for #pat in #b #body
            }))
        }
        Expr::MethodCall(m) => {
            let (a, b) = parts(&m.receiver)?;
            let method = &m.method;
            let turbofish = &m.turbofish;
            match (method.to_string().as_str(), m.args.len()) {
                ("sum", 0) => Some(syn::parse_quote_spanned!(span=>
                    #b.fold(#a.#method #turbofish (), |__ad_s, __ad_v| __ad_s + __ad_v))),
                ("product", 0) => Some(syn::parse_quote_spanned!(span=>
                    #b.fold(#a.#method #turbofish (), |__ad_p, __ad_v| __ad_p * __ad_v))),
                ("fold", 2) => {
                    let (init, g) = (&m.args[0], &m.args[1]);
                    Some(syn::parse_quote_spanned!(span=> #b.fold(#a.fold(#init, #g), #g)))
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// For an iterator written `a.chain(b)` followed by element-wise adapters: the two
/// parts, each followed by those adapters. `b` must be an iterator written as a method
/// chain (`y.iter()`), or `&y`, read as `(y).iter()`.
fn parts(e: &Expr) -> Option<(Expr, Expr)> {
    let Expr::MethodCall(m) = strip(e) else {
        return None;
    };
    match m.method.to_string().as_str() {
        "chain" if m.args.len() == 1 => {
            let b: Expr = match strip(&m.args[0]) {
                b @ Expr::MethodCall(_) => b.clone(),
                Expr::Reference(r) if r.mutability.is_none() => {
                    let y = &r.expr;
                    syn::parse_quote_spanned!(r.span()=> (#y).iter())
                }
                _ => return None,
            };
            Some(((*m.receiver).clone(), b))
        }
        "map" | "filter" | "copied" | "cloned" => {
            let (a, b) = parts(&m.receiver)?;
            let again = |recv: Expr| {
                let mut m = m.clone();
                *m.receiver = recv;
                Expr::MethodCall(m)
            };
            Some((again(a), again(b)))
        }
        _ => None,
    }
}
