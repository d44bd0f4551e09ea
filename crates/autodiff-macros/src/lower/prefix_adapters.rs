//! `take_while` and `skip_while`, written before lowering as `take` and `skip` of the
//! length of the prefix whose items pass the predicate:
//!
//! ```text
//! it.take_while(p)  →  it.take(no_grad(it.position(|v| !p(&v)).unwrap_or(usize::MAX)))
//! it.skip_while(p)  →  it.skip(no_grad(it.position(|v| !p(&v)).unwrap_or(usize::MAX)))
//! ```
//!
//! The predicate sees the same items as it did, so the prefix is the same, and `take`
//! and `skip` are read by the lowering wherever they may stand. The length is counted on
//! the primal values and carries no derivative, as the predicate's choice carries none.
//! `it` is written twice, so it must be an iterator that can be made again: a chain of
//! method calls (`x.iter().map(f)`) or a range; an iterator held in a variable is left
//! as written, and the lowering names the adapter.

use super::*;

/// Writes `take_while` and `skip_while` in `body` as above (a function's own code;
/// nested blocks and closures included).
pub(super) fn count_prefixes(body: &mut syn::Block) {
    Counter.visit_block_mut(body);
}

struct Counter;

impl VisitMut for Counter {
    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        visit_macro_items(self, m);
    }

    fn visit_expr_mut(&mut self, e: &mut Expr) {
        syn::visit_mut::visit_expr_mut(self, e);
        if let Some(counted) = counted(e) {
            *e = counted;
        }
    }
}

/// `e` written with `take` or `skip`, where it is `it.take_while(p)` or `it.skip_while(p)`.
fn counted(e: &Expr) -> Option<Expr> {
    let Expr::MethodCall(m) = e else {
        return None;
    };
    let by_count = match m.method.to_string().as_str() {
        "take_while" => "take",
        "skip_while" => "skip",
        _ => return None,
    };
    if m.args.len() != 1 || !made_again(&m.receiver) {
        return None;
    }
    let span = m.method.span();
    let (it, p) = (&m.receiver, &m.args[0]);
    let by_count = Ident::new(by_count, span);
    Some(syn::parse_quote_spanned!(span=>
    #it.#by_count(::autodiff_core::no_grad(
        #it.position(|__ad_item| !__ad::holds(#p, &__ad_item))
            .unwrap_or(::core::primitive::usize::MAX),
    ))))
}

/// Whether evaluating `it` again makes the same iterator afresh: a method chain or a
/// range.
fn made_again(it: &Expr) -> bool {
    matches!(strip(it), Expr::MethodCall(_) | Expr::Range(_))
}
