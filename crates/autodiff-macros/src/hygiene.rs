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
    let mut contexts = Vec::new();
    contexts_of(&ts, &mut contexts);
    if contexts.len() < 2 {
        return ts;
    }
    resolved_at_call_site(ts)
}

/// The distinct hygiene contexts of the names in `ts`, as the compiler's span prints
/// them (`#3 bytes(10..12)`: the context is the part before the bytes). Outside the
/// compiler (unit tests) spans print no context, and everything counts as one.
fn contexts_of(ts: &TokenStream, out: &mut Vec<String>) {
    for tt in ts.clone() {
        match tt {
            TokenTree::Ident(id) => {
                let printed = format!("{:?}", id.span());
                let context = printed.split(" bytes(").next().unwrap_or("").to_string();
                if !out.contains(&context) {
                    out.push(context);
                }
            }
            TokenTree::Group(g) => contexts_of(&g.stream(), out),
            _ => {}
        }
    }
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
