//! One hygiene context for an item that mixes several.
//!
//! A function written by a `macro_rules!` macro mixes names of two contexts: those the
//! macro's own text wrote (the attribute, `fn`, types) and those its caller passed in
//! (`$x`, `$body`). A local variable resolves only to a binding of its own context, so the
//! locals the expansion derives from a user's name (`__b_x`, the adjoint of `x`) and those
//! it writes itself at its call site (`__ad_mark`, in the macro's context) could miss
//! each other. Such an item has every name resolved at the attribute's call site, keeping
//! its source location. An item written by hand has one context, and is left as it is:
//! re-resolved, its spans would carry the attribute's expansion, which rustc then
//! mentions under every error.

use proc_macro2::{Group, Span, TokenStream, TokenTree};

/// `ts` with every name resolved at the call site when its names come from more than one
/// hygiene context (`$crate` left as it is: it names the crate that defined a macro).
pub fn uniform(ts: TokenStream) -> TokenStream {
    let mut first = None;
    if !mixes_contexts(&ts, &mut first) {
        return ts;
    }
    resolved_at_call_site(ts)
}

/// Whether the names in `ts` come from another hygiene context than `first` (the first
/// name's, once seen), as the compiler's span prints them (`#3 bytes(10..12)`: the
/// context is the part before the bytes). Outside the compiler (unit tests) spans print
/// no context, and everything counts as one.
fn mixes_contexts(ts: &TokenStream, first: &mut Option<String>) -> bool {
    ts.clone().into_iter().any(|tt| match tt {
        TokenTree::Ident(id) => {
            let printed = format!("{:?}", id.span());
            let context = printed.split(" bytes(").next().unwrap_or("");
            match first {
                Some(f) => f != context,
                None => {
                    *first = Some(context.to_string());
                    false
                }
            }
        }
        TokenTree::Group(g) => mixes_contexts(&g.stream(), first),
        _ => false,
    })
}

fn resolved_at_call_site(ts: TokenStream) -> TokenStream {
    ts.into_iter()
        .map(|tt| match tt {
            TokenTree::Ident(mut id) if id != "$crate" => {
                id.set_span(id.span().resolved_at(Span::call_site()));
                TokenTree::Ident(id)
            }
            TokenTree::Group(g) => {
                let mut out = Group::new(g.delimiter(), resolved_at_call_site(g.stream()));
                out.set_span(g.span());
                TokenTree::Group(out)
            }
            other => other,
        })
        .collect()
}
