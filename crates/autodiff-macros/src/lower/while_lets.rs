//! `while let`, written before lowering as the loop it stands for:
//!
//! ```text
//! 'l: while let p = s { body }  →  'l: loop { if let p = s { body } else { break; } }
//! ```
//!
//! The two are the same loop: `s` is evaluated before every trip, a `continue` in `body`
//! goes on to the next evaluation, and a `break` (labelled or not) leaves the loop. The
//! `if let` is then read as any other, and refused, naming it, where its pattern binds
//! what the lowering cannot read.

use super::*;

/// Writes every `while let` in `body` (a function's own code; nested blocks and closures
/// included) as a `loop` of an `if let`.
pub(super) fn loop_while_lets(body: &mut syn::Block) {
    Looper.visit_block_mut(body);
}

struct Looper;

impl VisitMut for Looper {
    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        visit_macro_items(self, m);
    }

    fn visit_expr_mut(&mut self, e: &mut Expr) {
        syn::visit_mut::visit_expr_mut(self, e);
        if let Expr::While(w) = e
            && let Expr::Let(l) = &*w.cond
        {
            let (attrs, label, body) = (&w.attrs, &w.label, &w.body);
            let test: syn::ExprIf =
                syn::parse_quote_spanned!(l.span()=> if #l #body else { break; });
            *e = syn::parse_quote_spanned!(w.while_token.span=> #(#attrs)* #label loop { #test });
        }
    }
}
