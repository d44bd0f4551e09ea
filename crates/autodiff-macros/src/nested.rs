//! Nested differentiation: the calling protocol of a generated companion.
//!
//! A named companion (`f_jvp`, `df`) is an ordinary function, so it gets the same braced
//! struct as any differentiable function (`df {}` with `__ad_fwd`, `__ad_aug`,
//! `__ad_pull`), built by running the whole pipeline again on the companion's own code.
//! Differentiated code that calls `df` then differentiates through it: forward over
//! reverse (Hessian-vector products), forward over forward, reverse over forward.
//!
//! The companion's code uses a few runtime items (tapes, zeros, builtin partials) that
//! `lower.rs` reads back. What cannot be differentiated again (reverse over reverse, or a
//! construct the lowering does not read back yet) still gets its protocol function, whose
//! body fails to compile with a message naming the companion, and only where a caller
//! instantiates it: code that never nests never sees the error.
//!
//! Nesting through calls (the variants every function provides to nested callers) is in
//! [`crate::nested_calls`].

use crate::activity::{Activity, Mode, Spec};
use crate::collections::HashMap;
use crate::expand::{Gen, LoweredBody, Nesting};
use crate::ir::{Body, Operand, RetShape, VarKind};
use crate::lower::Lowerer;
use crate::signature::{Param, Ret, Shape, SigInfo};
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};
use syn::{ImplItemFn, Type};

/// The protocol struct of the companion `companion`, generated in mode `inner`.
///
/// `delegate` names the function when the companion is its all-active companion of this
/// mode (`nested_calls::is_variant_companion`): the function's own nested protocol
/// functions already differentiate that code, so the companion's forward protocol calls
/// them (`__ad_fwd___ad_npull`, `__ad_fwd___ad_nfwd`), and so does a forward
/// companion's pullback (`__ad_pull___ad_fwd`, reverse over the function's forward
/// protocol). A forward companion is then not lowered again at all; a reverse one's
/// third-order variants need its lowered code, which is the function's own all-active
/// reverse companion's, `npull`, when its nested variants lowered that.
pub fn companion_protocol(
    companion: &TokenStream,
    inner: Mode,
    delegate: Option<Ident>,
    npull: Option<&LoweredBody>,
) -> TokenStream {
    let delegated_forward = delegate.is_some() && inner == Mode::Forward;
    let reused = npull.filter(|_| delegate.is_some() && inner == Mode::Reverse);
    let companion = if delegated_forward || reused.is_some() {
        without_body(companion)
    } else {
        companion.clone()
    };
    let companion = &rename_shadows(companion);
    let Ok(func) = syn::parse2::<ImplItemFn>(companion.clone()) else {
        return TokenStream::new();
    };
    let Ok(sig) = crate::signature::analyse_fn(&func) else {
        return TokenStream::new();
    };
    let name = func.sig.ident.to_string();
    let lowered = if !ENABLED {
        Err(syn::Error::new(func.sig.ident.span(), DISABLED))
    } else if let Some(reason) = unsupported_floats(companion) {
        Err(syn::Error::new(func.sig.ident.span(), reason))
    } else if passes_closures(companion) {
        Err(syn::Error::new(
            func.sig.ident.span(),
            format!("{CLOSURE_ARGUMENT} is not supported in differentiated code"),
        ))
    } else if delegated_forward || reused.is_some() {
        // No code of its own to lower: a delegated forward companion needs none, and a
        // reused one is the nested variants' (below).
        Ok((empty_body(), HashMap::default()))
    } else {
        let lowerer = Lowerer::for_companion(&sig);
        match inner {
            Mode::Reverse => lowerer.keeping_shadow_cuts(),
            Mode::Forward => lowerer,
        }
        .lower_body(&func.block, &sig)
    };
    let (own_body, own_kinds, fail) = body_or_failure(lowered, |e| {
        format!("`{name}` is a derivative companion that cannot be differentiated again: {e}")
    });
    let (body, kinds) = match reused {
        Some((body, kinds)) if fail.is_none() => (body, kinds),
        _ => (&own_body, &own_kinds),
    };
    let fail = fail.or_else(|| crate::expand::pattern_failure(body));
    let fail_rev = fail.clone().or_else(|| match inner {
        Mode::Reverse => Some(format!(
            "`{name}` is a reverse-mode companion: reverse mode over reverse mode is not \
             supported; differentiate it in forward mode (forward over reverse)"
        )),
        Mode::Forward => None,
    });
    let g = Gen {
        func: &func,
        sig: &sig,
        body,
        kinds,
        fail_fwd: fail,
        fail_rev,
        // A reverse companion's callers may be differentiated twice more in forward mode
        // (a third order: forward over forward over reverse); its pullback's variant is
        // reverse over reverse, which fails anyway. A forward companion's variants would
        // be third-order forward or reverse-over-forward derivatives, which are not
        // built: they would double the compile time of every forward companion.
        assoc: false,
        nesting: match inner {
            Mode::Reverse => Nesting::Derive,
            Mode::Forward => Nesting::Fail(format!(
                "`{name}` is a forward-mode companion: code that calls it can be \
                 differentiated once more, not twice"
            )),
        },
        delegate: delegate.map(|f| (f, inner)),
        npull: None,
    };
    g.protocol()
}

/// A generated function item with an empty body: its last token tree, the body, replaced
/// by `{}` (so that its signature parses without the cost of its body).
fn without_body(item: &TokenStream) -> TokenStream {
    let mut tokens: Vec<proc_macro2::TokenTree> = item.clone().into_iter().collect();
    if let Some(proc_macro2::TokenTree::Group(body)) = tokens.last_mut() {
        let mut empty = proc_macro2::Group::new(body.delimiter(), TokenStream::new());
        empty.set_span(body.span());
        *body = empty;
    }
    tokens.into_iter().collect()
}

/// The body of a function that returns nothing and does nothing.
fn empty_body() -> Body {
    Body {
        block: vec![],
        ret: vec![Operand::Lit(quote!(()))],
        ret_shape: RetShape::Single,
        pattern_params: vec![],
        fixed_structs: vec![],
        replays_marked: false,
    }
}

/// The body of a generated function lowered again, or, where that failed, an empty body
/// and the message (`describe`d) that its protocol functions fail with.
pub fn body_or_failure(
    lowered: syn::Result<(Body, HashMap<String, VarKind>)>,
    describe: impl FnOnce(syn::Error) -> String,
) -> (Body, HashMap<String, VarKind>, Option<String>) {
    match lowered {
        Ok((body, kinds)) => (body, kinds, None),
        Err(e) => (empty_body(), HashMap::default(), Some(describe(e))),
    }
}

/// Whether nested differentiation is built (the `nested` feature, on by default).
pub const ENABLED: bool = cfg!(feature = "nested");

const DISABLED: &str = "nested differentiation is turned off: enable the `nested` feature of \
     `autodiff-core` (on by default)";

/// The helper trait that a named companion of a common shape implements, so that
/// `autodiff_core::{gradient, hvp, hessian, jacobian}` take it in one call:
/// `Objective` (and `ObjectiveHvp`) for the reverse companion `(Duplicated, Active)` of
/// `fn(&[T]) -> T`,
/// `ForwardJacobian` / `ReverseJacobian` for the companions `(Dual, Dual)` /
/// `(Duplicated, Duplicated)` of `fn(&[T], &mut [T])`, where `T` is `f64`, `f32`, or the
/// function's only type parameter (then the helpers take `f64`).
pub fn helper_impl(sig: &SigInfo, generics: &syn::Generics, spec: &Spec) -> TokenStream {
    // A function generic over its float type alone gets the helpers at `f64` (the
    // companion is called with `f64` arguments and infers its type parameter); any other
    // generic function gets none.
    let generic = match (generics.params.len(), generics.params.first()) {
        (0, _) => None,
        (1, Some(syn::GenericParam::Type(tp)))
            if sig.float_params.contains(&tp.ident.to_string()) =>
        {
            Some(tp.ident.to_string())
        }
        _ => return TokenStream::new(),
    };
    if generic.is_none() && !sig.float_params.is_empty() {
        return TokenStream::new();
    }
    let params = &sig.params;
    // The float type: that of the first parameter's elements, which the others share.
    let Some(t) = params
        .first()
        .and_then(|p| p.elem.as_ref())
        .map(|e| quote!(#e).to_string())
        .filter(|e| e == "f64" || e == "f32" || Some(e) == generic.as_ref())
    else {
        return TokenStream::new();
    };
    // A slice itself: `&Vec<T>` and `&[T; N]` parameters have the `Slice` shape too, but
    // the helper traits hand over `&[T]`.
    let slice_of_t = |p: &Param, mutable: bool| {
        p.shape == Shape::Slice { mutable }
            && p.elem.as_ref().is_some_and(|e| quote!(#e).to_string() == t)
            && matches!(&p.ty, Some(Type::Reference(r)) if matches!(*r.elem, Type::Slice(_)))
    };
    let ret_t = matches!(&sig.ret, Ret::Ty(r) if quote!(#r).to_string() == t);
    let t = if generic.is_some() {
        format_ident!("f64")
    } else {
        format_ident!("{}", t)
    };
    let name = &spec.name;
    let acts: Vec<Activity> = spec.inputs.iter().map(|a| a.0).collect();
    let ret = spec.ret.map(|r| r.0);
    if params.len() == 1
        && slice_of_t(&params[0], false)
        && ret_t
        && spec.mode == Mode::Reverse
        && acts == [Activity::Duplicated]
        && ret == Some(Activity::Active)
    {
        let objective = quote! {
            impl ::autodiff_core::Objective for #name {
                type Float = #t;
                fn value_and_gradient(x: &[#t], grad: &mut [#t]) -> #t {
                    #name(x, grad, 1.0)
                }
            }
        };
        if !ENABLED {
            return objective;
        }
        return quote! {
            #objective
            // Generic over the mode marker, so that only a caller asking for H·v
            // instantiates the nested code (and meets its error, if it has one).
            impl ::autodiff_core::__private::HvpCompanion for #name {
                fn value_gradient_hvp_marked<M: ::core::marker::Copy>(
                    x: &[#t],
                    v: &[#t],
                    grad: &mut [#t],
                    hv: &mut [#t],
                    mark: M,
                ) -> #t {
                    #name::__ad_fwd(x, v, grad, hv, 1.0, 0.0, mark).0
                }
            }
        };
    }
    if params.len() == 2
        && slice_of_t(&params[0], false)
        && slice_of_t(&params[1], true)
        && matches!(sig.ret, Ret::Unit)
    {
        if spec.mode == Mode::Forward && acts == [Activity::Dual, Activity::Dual] && spec.width > 1
        {
            let w = spec.width;
            let vs: Vec<Ident> = (0..w).map(|k| format_ident!("__ad_v{}", k)).collect();
            let ds: Vec<Ident> = (0..w).map(|k| format_ident!("__ad_d{}", k)).collect();
            return quote! {
                impl ::autodiff_core::ForwardJacobianBatch<#w> for #name {
                    type Float = #t;
                    fn jvp_batch(
                        x: &[#t],
                        v: [&[#t]; #w],
                        y: &mut [#t],
                        dy: [&mut [#t]; #w],
                    ) {
                        let [#(#vs),*] = v;
                        let [#(#ds),*] = dy;
                        #name(x, #(#vs,)* y, #(#ds),*)
                    }
                }
            };
        }
        if spec.mode == Mode::Forward && acts == [Activity::Dual, Activity::Dual] {
            return quote! {
                impl ::autodiff_core::ForwardJacobian for #name {
                    type Float = #t;
                    fn jvp(x: &[#t], v: &[#t], y: &mut [#t], dy: &mut [#t]) {
                        #name(x, v, y, dy)
                    }
                }
            };
        }
        if spec.mode == Mode::Reverse && acts == [Activity::Duplicated, Activity::Duplicated] {
            return quote! {
                impl ::autodiff_core::ReverseJacobian for #name {
                    type Float = #t;
                    fn vjp(x: &[#t], bx: &mut [#t], y: &mut [#t], by: &mut [#t]) {
                        #name(x, bx, y, by)
                    }
                }
            };
        }
    }
    TokenStream::new()
}

/// Renames the companion's tangent and adjoint names (`__d_x`, `__b_x`) to `__nd_x`,
/// `__nb_x` (and those of deeper levels, `__nd_x`, to `__nnd_x`): differentiating the
/// companion again names the new tangent of `x` `__d_x`.
pub fn rename_shadows(t: TokenStream) -> TokenStream {
    t.into_iter()
        .map(|tt| match tt {
            proc_macro2::TokenTree::Ident(i) => {
                let s = i.to_string();
                // `__d_x` -> `__nd_x`, `__nd_x` -> `__nnd_x`, ...: one more `n` for each
                // level, so names from different levels never meet.
                let renamed = s.strip_prefix("__").and_then(|r| {
                    let ns = r.len() - r.trim_start_matches('n').len();
                    let rest = &r[ns..];
                    (rest.starts_with("d_") || rest.starts_with("b_"))
                        .then(|| format!("__n{}{rest}", "n".repeat(ns)))
                });
                match renamed {
                    Some(r) => proc_macro2::TokenTree::Ident(proc_macro2::Ident::new(&r, i.span())),
                    None => proc_macro2::TokenTree::Ident(i),
                }
            }
            proc_macro2::TokenTree::Group(g) => {
                let mut ng = proc_macro2::Group::new(g.delimiter(), rename_shadows(g.stream()));
                ng.set_span(g.span());
                proc_macro2::TokenTree::Group(ng)
            }
            other => other,
        })
        .collect()
}

/// Why code with the tokens `code` cannot be differentiated again, as far as its float
/// types go: it uses both `f32` and `f64` (a cast's adjoint is read back as the identity).
pub fn unsupported_floats(code: &TokenStream) -> Option<&'static str> {
    mixes_floats(code).then_some(
        "nested differentiation of a function that mixes `f32` and `f64` is not supported",
    )
}

/// What nested differentiation does not support about closures.
pub const CLOSURE_ARGUMENT: &str = "nested differentiation of a closure passed to a function \
     (forward over reverse of a companion whose function passes a closure to a call)";

/// Whether the companion `code` passes a closure to a call: it builds the closure's
/// derivatives through the callee's `__ad_fwd_fnI`/`__ad_rev_fnI`, whose `DiffFn`s
/// carry no nested derivatives.
fn passes_closures(code: &TokenStream) -> bool {
    code.clone().into_iter().any(|tt| match tt {
        proc_macro2::TokenTree::Ident(i) => {
            // `__ad_rev_fn0`, `__ad_fwd_fn1_apply` (not a method's `__ad_fwd_fnorm`).
            let name = i.to_string();
            let rest = (name.strip_prefix("__ad_rev_fn"))
                .or_else(|| name.strip_prefix("__ad_fwd_fn"))
                .unwrap_or_default();
            let index = rest.trim_start_matches(|c: char| c.is_ascii_digit());
            index.len() < rest.len() && (index.is_empty() || index.starts_with('_'))
        }
        proc_macro2::TokenTree::Group(g) => passes_closures(&g.stream()),
        _ => false,
    })
}

/// Whether `t` names both `f32` and `f64`.
fn mixes_floats(t: &TokenStream) -> bool {
    let (mut f32, mut f64) = (false, false);
    fn walk(t: &TokenStream, f32: &mut bool, f64: &mut bool) {
        for tt in t.clone() {
            match tt {
                proc_macro2::TokenTree::Ident(i) if i == "f32" => *f32 = true,
                proc_macro2::TokenTree::Ident(i) if i == "f64" => *f64 = true,
                proc_macro2::TokenTree::Group(g) => walk(&g.stream(), f32, f64),
                _ => {}
            }
        }
    }
    walk(t, &mut f32, &mut f64);
    f32 && f64
}

/// The body of a protocol function that cannot be built: it compiles, and fails with
/// `msg` once a caller instantiates it (its mode marker is a generic parameter).
pub fn failure(msg: &str) -> TokenStream {
    let msg = panic_literal(msg);
    quote! {
        struct __AdUnsupported<M>(::core::marker::PhantomData<M>);
        impl<M> __AdUnsupported<M> {
            const ERROR: () = ::core::panic!(#msg);
        }
        fn __ad_fail<M>(_: M) {
            let () = __AdUnsupported::<M>::ERROR;
        }
        __ad_fail(__ad_mark);
        ::core::unreachable!()
    }
}

/// `msg` as the literal of a `panic!` in a constant, which reads it as a format string:
/// its braces (`if c { Some(e) }` in a message) doubled.
pub fn panic_literal(msg: &str) -> String {
    msg.replace('{', "{{").replace('}', "}}")
}

#[cfg(test)]
mod tests {
    use super::passes_closures;
    use quote::quote;

    #[test]
    fn closure_builders_are_told_from_methods_whose_names_start_with_fn() {
        assert!(passes_closures(&quote!(
            fn d(x: &[f64]) {
                let c = sum_at::__ad_rev_fn0(p, m);
            }
        )));
        assert!(passes_closures(&quote!({ m.__ad_fwd_fn1_apply(p, t) })));
        assert!(!passes_closures(&quote!({ v.__ad_fwd_fnorm(x) })));
        assert!(!passes_closures(&quote!({ v.__ad_rev_fn_eval(x) })));
    }
}
