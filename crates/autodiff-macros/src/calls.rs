//! How calls and references are rendered in derivative code: the primal call, the callee's
//! derivative companions, and the tangent or adjoint passed for each argument.

use crate::analysis::Analysis;
use crate::collections::HashMap;
use crate::ir::*;
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

/// Renders places as references, given the kinds of their bases.
pub struct Refs<'a> {
    pub kinds: &'a HashMap<String, VarKind>,
}

impl Refs<'_> {
    /// Whether the place can be borrowed mutably (behind `&mut`, or owned).
    pub fn is_mutable(&self, p: &Place) -> bool {
        matches!(
            self.kinds.get(&p.base.to_string()),
            Some(VarKind::Ref { mutable: true } | VarKind::Buffer)
        )
    }

    fn is_ref_base(&self, p: &Place) -> bool {
        matches!(
            self.kinds.get(&p.base.to_string()),
            Some(VarKind::Ref { .. })
        )
    }

    /// `&place` / `&mut place`, reborrowing whole reference parameters (`&*x`).
    pub fn reference(&self, p: &Place, rendered: TokenStream, mutable: bool) -> TokenStream {
        match (p.is_whole() && self.is_ref_base(p), mutable) {
            (true, false) => quote!(&*#rendered),
            (true, true) => quote!(&mut *#rendered),
            (false, false) => quote!(&#rendered),
            (false, true) => quote!(&mut #rendered),
        }
    }
}

/// Whether `p` is the whole of a struct built in the body (`Op::StructLit`).
fn is_struct_value(an: &Analysis, p: &Place) -> bool {
    p.is_whole() && an.structs.contains_key(&p.base.to_string())
}

/// The shadow of a struct built in the body that carries no derivative, where a callee
/// differentiates it: a zero struct built member by member (`Zero` and `Discard` stand
/// only for floats and buffers, and the struct has no zero of its own). One lent mutably
/// is a local `name` declared in `decls` (so that the code, differentiated again, borrows
/// a `let mut`).
fn struct_zero(
    an: &Analysis,
    p: &Place,
    mutable: bool,
    decls: &mut TokenStream,
    name: Ident,
) -> TokenStream {
    let zero = an.zero_like(&p.base);
    if mutable {
        decls.extend(quote!(let mut #name = #zero;));
        quote!(&mut #name)
    } else {
        quote!(&#zero)
    }
}

/// The path of a companion of `path`: `a::foo::<T>` becomes `a::foo::__ad_fwd::<T>`.
fn companion_path(path: &syn::Path, companion: &str) -> TokenStream {
    let mut p = path.clone();
    let last = p.segments.last_mut().expect("a non-empty path");
    let args = std::mem::replace(&mut last.arguments, syn::PathArguments::None);
    // Errors about the companion point at the user's callee.
    let span = last.ident.span();
    let args = match args {
        syn::PathArguments::AngleBracketed(mut a) => {
            a.colon2_token = Some(Default::default());
            quote!(#a)
        }
        _ => quote!(),
    };
    // A protocol function of the callee (met when a companion is differentiated again)
    // has its derivative beside it: `h::__ad_pull` becomes `h::__ad_fwd___ad_pull`.
    if last.ident.to_string().starts_with("__ad_") {
        last.ident = format_ident!("{}_{}", companion, last.ident, span = span);
        return quote!(#p #args);
    }
    let c = format_ident!("{}", companion, span = span);
    quote!(#p::#c #args)
}

fn method_companion(name: &Ident, mode: &str) -> Ident {
    format_ident!("__ad_{}_{}", mode, name, span = name.span())
}

/// Whether the callee is a protocol function (`h::__ad_fwd`, `Type::__ad_pull_name`),
/// called by a companion that is differentiated again.
pub fn is_protocol_callee(c: &Call) -> bool {
    let name = match &c.callee {
        Callee::Path(p) => p.segments.last().map(|s| &s.ident),
        Callee::Assoc(_, name) | Callee::Method(_, name) => Some(name),
        Callee::ClosureParam(..) => None,
    };
    name.is_some_and(|n| n.to_string().starts_with("__ad_"))
}

/// The primal call.
pub fn primal_call(c: &Call, refs: &Refs) -> TokenStream {
    let args: Vec<TokenStream> = c
        .args
        .iter()
        .map(|a| match a {
            Arg::Copied(p) => {
                let r = refs.reference(p, p.primal(), false);
                quote!(*#r)
            }
            a => primal_arg(a, refs),
        })
        .collect();
    match &c.callee {
        Callee::Path(p) => quote!(#p(#(#args),*)),
        Callee::Assoc(ty, name) => quote!(#ty::#name(#(#args),*)),
        Callee::Method(recv, name) => {
            let r = recv.primal();
            quote!(#r.#name(#(#args),*))
        }
        Callee::ClosureParam(f, _) => {
            let x = closure_call_args(c, refs);
            quote!(__ad::DiffFn::call(&#f, #x))
        }
    }
}

pub fn primal_arg(a: &Arg, refs: &Refs) -> TokenStream {
    match a {
        Arg::Val(o) => o.primal(),
        Arg::Ref(p, m) => refs.reference(p, p.primal(), *m),
        Arg::Copied(p) => refs.reference(p, p.primal(), false),
        Arg::Closure(c) => {
            let id = &c.id;
            quote!(#id)
        }
        Arg::ClosureParam(f) => quote!(#f),
    }
}

/// The arguments of a closure-parameter call, packed as the `DiffFn`'s input.
fn pack(items: Vec<TokenStream>) -> TokenStream {
    match items.len() {
        1 => quote!(#(#items)*),
        _ => quote!((#(#items),*)),
    }
}

fn closure_call_args(c: &Call, refs: &Refs) -> TokenStream {
    pack(c.args.iter().map(|a| primal_arg(a, refs)).collect())
}

/// The function of the callee that builds the `DiffFn` for its closure argument `index`.
pub fn closure_builder(c: &Call, index: usize, mode: &str) -> TokenStream {
    let which = format!("__ad_{mode}_fn{index}");
    match &c.callee {
        Callee::Path(p) => companion_path(p, &which),
        Callee::Assoc(ty, name) => {
            let m = format_ident!("{}_{}", which, name);
            quote!(#ty::#m)
        }
        Callee::Method(recv, name) => {
            let m = format_ident!("{}_{}", which, name);
            let r = recv.primal();
            quote!(#r.#m)
        }
        Callee::ClosureParam(..) => quote!(::core::compile_error!(
            "a closure passed to a closure parameter is not supported in differentiated code"
        )),
    }
}

/// The forward companion call: arguments interleaved with their tangents (or `Zero`),
/// then a unit marker (which lets a callee without a forward rule fail only when used).
pub fn forward_call(c: &Call, an: &Analysis, refs: &Refs) -> TokenStream {
    if an.augmented_values {
        // The value, shaped as a forward call's result with no tangent.
        let aug = augmented_call(c, refs);
        return quote!((#aug.0, ()));
    }
    let mut args = Vec::new();
    let mut zeros = TokenStream::new();
    for (i, a) in c.args.iter().enumerate() {
        args.push(primal_arg(a, refs));
        args.push(match a {
            Arg::Val(o) if an.operand_active(o) => {
                let t = tangent_name(o.var().unwrap());
                quote!(#t)
            }
            Arg::Ref(p, m) if an.place_active(p) => refs.reference(p, p.tangent(), *m),
            Arg::Copied(p) if an.place_active(p) => refs.reference(p, p.tangent(), false),
            Arg::Ref(p, m) if is_struct_value(an, p) => {
                struct_zero(an, p, *m, &mut zeros, format_ident!("__ad_zero{}", i))
            }
            Arg::Closure(_) | Arg::ClosureParam(_) => quote!(()),
            _ => quote!(__ad::Zero),
        });
    }
    // The caller's mode marker: a callee without a rule for this mode fails to compile
    // only when a named companion instantiates the caller.
    args.push(quote!(__ad_mark));
    if let Callee::ClosureParam(f, _) = &c.callee {
        let x = closure_call_args(c, refs);
        let dx = pack(
            c.args
                .iter()
                .map(|a| match a {
                    Arg::Val(o) if an.operand_active(o) => {
                        let t = tangent_name(o.var().unwrap());
                        quote!(#t)
                    }
                    a => {
                        let p = primal_arg(a, refs);
                        quote!(__ad::zero_like(&#p))
                    }
                })
                .collect(),
        );
        return quote!(__ad::DiffFn::jvp(&#f, #x, #dx));
    }
    let call = match &c.callee {
        Callee::ClosureParam(..) => unreachable!("handled above"),
        Callee::Path(p) => {
            let f = companion_path(p, "__ad_fwd");
            quote!(#f(#(#args),*))
        }
        Callee::Assoc(ty, name) => {
            let m = method_companion(name, "fwd");
            quote!(#ty::#m(#(#args),*))
        }
        Callee::Method(recv, name) => {
            let m = method_companion(name, "fwd");
            let r = recv.primal();
            // A receiver also lent as an argument (`p.dot(&p)`) is `&self`: its tangent is
            // lent shared too, though the local is mutable.
            let lent = c
                .args
                .iter()
                .any(|a| matches!(a, Arg::Ref(p, false) | Arg::Copied(p) if p.base == recv.base));
            let mutable = (refs.is_mutable(recv)
                || (recv.is_whole() && an.mutable_lets.contains(&recv.base.to_string())))
                && !lent;
            let t = if an.place_active(recv) {
                refs.reference(recv, recv.tangent(), mutable)
            } else if is_struct_value(an, recv) {
                let z = format_ident!("__ad_zero_self");
                struct_zero(an, recv, mutable, &mut zeros, z)
            } else {
                quote!(__ad::Zero)
            };
            quote!(#r.#m(#t, #(#args),*))
        }
    };
    if zeros.is_empty() {
        call
    } else {
        quote!({ #zeros #call })
    }
}

/// A free function's `__ad_lend`: how a caller lends it a local buffer that the caller
/// overwrites before the call's reverse. A custom rule's pullback may borrow its
/// shared-reference arguments, so a rule (`copies`) gets a copy that lives as long as
/// the caller's derivative function; a generated function's state never borrows its
/// arguments (its pullback is given them again), so it gets the buffer itself.
pub fn lend_fn(copies: bool) -> TokenStream {
    let (life, body) = if copies {
        (
            quote!('__ad_c),
            quote!(::autodiff_core::__private::lent_copy(copies, value)),
        )
    } else {
        (quote!('__ad_v), quote!(value))
    };
    quote! {
        #[doc(hidden)]
        #[inline(always)]
        #[allow(clippy::all)]
        pub fn __ad_lend<'__ad_c, '__ad_v, __AdB: ::std::borrow::ToOwned + ?::core::marker::Sized>(
            copies: &'__ad_c ::autodiff_core::__private::LentCopies<__AdB::Owned>,
            value: &'__ad_v __AdB,
        ) -> &#life __AdB {
            #body
        }
    }
}

/// A lent buffer's argument `arg` of the augmented call `c` (see [`lend_fn`]): through
/// the callee's `__ad_lend` where it is a free function, a copy otherwise.
pub fn lent_arg(c: &Call, copies: &Ident, arg: TokenStream) -> TokenStream {
    match &c.callee {
        Callee::Path(p) if !is_protocol_callee(c) => {
            // The callee's own generic arguments (`quartic::<f64>`) are not `__ad_lend`'s.
            let mut p = p.clone();
            let last = p.segments.last_mut().expect("a non-empty path");
            last.arguments = syn::PathArguments::None;
            let lend = format_ident!("__ad_lend", span = last.ident.span());
            quote!(#p::#lend(&#copies, #arg))
        }
        _ => quote!(__ad::lent_copy(&#copies, #arg)),
    }
}

/// The augmented call of the forward sweep: returns the result and the state that the
/// pullback needs (a custom rule's pullback closure, or nothing).
pub fn augmented_call(c: &Call, refs: &Refs) -> TokenStream {
    let args = c.args.iter().map(|a| primal_arg(a, refs)).collect();
    augmented_call_on(c, refs, args)
}

/// [`augmented_call`] with the arguments given.
pub fn augmented_call_on(c: &Call, refs: &Refs, args: Vec<TokenStream>) -> TokenStream {
    if let Callee::ClosureParam(f, _) = &c.callee {
        let x = closure_call_args(c, refs);
        return quote!((__ad::DiffFn::call(&#f, #x), ()));
    }
    match &c.callee {
        Callee::ClosureParam(..) => unreachable!("handled above"),
        Callee::Path(p) => {
            let f = companion_path(p, "__ad_aug");
            quote!(#f(#(#args),*))
        }
        Callee::Assoc(ty, name) => {
            let m = method_companion(name, "aug");
            quote!(#ty::#m(#(#args),*))
        }
        Callee::Method(recv, name) => {
            let m = method_companion(name, "aug");
            let r = recv.primal();
            quote!(#r.#m(#(#args),*))
        }
    }
}

/// The pullback call of the reverse sweep: the state from the augmented call, the
/// arguments interleaved with adjoint sinks (or `Discard`), then the cotangent of the
/// result.
pub fn pullback_call(
    c: &Call,
    an: &Analysis,
    refs: &Refs,
    state: TokenStream,
    seed: TokenStream,
) -> TokenStream {
    let mut args = vec![state];
    // An adjoint can be lent mutably once per call: a second argument with the same
    // adjoint (`dot(x, x)`, two parts of one slice) gets a scratch shadow, added back after.
    let mut lent: Vec<String> = match &c.callee {
        Callee::Method(recv, _) if an.place_active(recv) => vec![recv.base.to_string()],
        _ => Vec::new(),
    };
    let mut before = TokenStream::new();
    let mut after = TokenStream::new();
    for (i, a) in c.args.iter().enumerate() {
        args.push(primal_arg(a, refs));
        let base = match a {
            Arg::Val(o) if an.operand_active(o) => o.var().map(|v| v.to_string()),
            Arg::Ref(p, _) | Arg::Copied(p) if an.place_active(p) => Some(p.base.to_string()),
            _ => None,
        };
        let shared = base.as_ref().is_some_and(|b| lent.contains(b));
        if let Some(b) = base {
            lent.push(b);
        }
        args.push(match a {
            Arg::Val(o) if an.operand_active(o) => {
                let b = adjoint_name(o.var().unwrap());
                if shared {
                    let scratch = format_ident!("__ad_scratch{}", i);
                    before.extend(quote!(let mut #scratch = __ad::zero_like(&#b);));
                    after.extend(quote!(#b += #scratch;));
                    quote!(&mut #scratch)
                } else {
                    quote!(&mut #b)
                }
            }
            Arg::Ref(p, _) | Arg::Copied(p) if an.place_active(p) => {
                if shared {
                    let scratch = format_ident!("__ad_scratch{}", i);
                    let adj = refs.reference(p, p.adjoint(), false);
                    let adj_mut = refs.reference(p, p.adjoint(), true);
                    before.extend(quote!(let mut #scratch = __ad::zero_like(#adj);));
                    after.extend(quote!(__ad::add_into(#adj_mut, &#scratch);));
                    quote!(&mut #scratch)
                } else {
                    refs.reference(p, p.adjoint(), true)
                }
            }
            Arg::Ref(p, _) if is_struct_value(an, p) => {
                struct_zero(an, p, true, &mut before, format_ident!("__ad_zero{}", i))
            }
            _ => quote!(__ad::Discard),
        });
    }
    if let Callee::ClosureParam(f, y) = &c.callee {
        let x = closure_call_args(c, refs);
        let sinks: Vec<&TokenStream> = args.iter().skip(2).step_by(2).collect();
        let adds: Vec<TokenStream> = if sinks.len() == 1 {
            vec![quote!(__ad::ScalarSink::add(#(#sinks)*, __ad_xb);)]
        } else {
            sinks
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let i = syn::Index::from(i);
                    quote!(__ad::ScalarSink::add(#s, __ad_xb.#i);)
                })
                .collect()
        };
        return quote!({
            #before
            let __ad_xb = __ad::DiffFn::vjp(&#f, #x, <_ as __ad::ScalarTangent<#y>>::tangent(#seed)).1;
            #(#adds)*
            #after
        });
    }
    args.push(seed);
    args.push(quote!(__ad_mark));
    let call = match &c.callee {
        Callee::ClosureParam(..) => unreachable!("handled above"),
        Callee::Path(p) => {
            let f = companion_path(p, "__ad_pull");
            quote!(#f(#(#args),*))
        }
        Callee::Assoc(ty, name) => {
            let m = method_companion(name, "pull");
            // The state after the first argument (see `Gen::state_after_first`): the same
            // call reaches a method called through its type's path (`V2::norm(&v)`).
            if !c.args.is_empty() {
                let state = args.remove(0);
                args.insert(1, state);
            }
            quote!(#ty::#m(#(#args),*))
        }
        Callee::Method(recv, name) => {
            let m = method_companion(name, "pull");
            let r = recv.primal();
            let s = if an.place_active(recv) {
                refs.reference(recv, recv.adjoint(), true)
            } else if is_struct_value(an, recv) {
                struct_zero(an, recv, true, &mut before, format_ident!("__ad_zero_self"))
            } else {
                quote!(__ad::Discard)
            };
            let state = args.remove(0);
            quote!(#r.#m(#state, #s, #(#args),*))
        }
    };
    quote!({ #before #call; #after })
}
