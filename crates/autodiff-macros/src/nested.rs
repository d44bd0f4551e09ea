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

use crate::activity::{Activity, Mode, Spec};
use crate::expand::{Gen, Nesting, ret_type};
use crate::ir::{Body, Operand};
use crate::lower::Lowerer;
use crate::signature::{Param, Ret, Shape, SigInfo};
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};
use std::collections::HashMap;
use syn::ImplItemFn;

/// The protocol struct of the companion `companion`, generated in mode `inner`.
pub fn companion_protocol(companion: &TokenStream, inner: Mode) -> TokenStream {
    let companion = &rename_shadows(companion.clone());
    let Ok(func) = syn::parse2::<ImplItemFn>(companion.clone()) else {
        return TokenStream::new();
    };
    let Ok(sig) = crate::signature::analyse(&func.sig) else {
        return TokenStream::new();
    };
    let name = func.sig.ident.to_string();
    let lowered = if !ENABLED {
        Err(syn::Error::new(func.sig.ident.span(), DISABLED))
    } else if sig.float_params.is_empty() && !mentions_f32(companion) {
        Lowerer::for_companion(&sig).lower_body(&func.block, &sig)
    } else {
        // The partials written back into the companion are `f64` expressions.
        Err(syn::Error::new(
            func.sig.ident.span(),
            "nested differentiation supports `f64` functions only (not generic or `f32` ones)",
        ))
    };
    let empty = Body {
        block: vec![],
        ret: vec![Operand::Lit(quote!(()))],
        ret_tuple: false,
    };
    let no_kinds = HashMap::new();
    let (body, kinds, fail) = match &lowered {
        Ok((body, kinds)) => (body, kinds, None),
        Err(e) => (
            &empty,
            &no_kinds,
            Some(format!(
                "`{name}` is a derivative companion that cannot be differentiated again: {e}"
            )),
        ),
    };
    let fail_rev = fail.clone().or_else(|| match inner {
        Mode::Reverse => Some(format!(
            "`{name}` is a reverse-mode companion: reverse mode over reverse mode is not \
             supported; differentiate it in forward mode (forward over reverse)"
        )),
        Mode::Forward if calls_protocol(companion) => Some(format!(
            "`{name}` is a forward-mode companion of a function that calls other functions: \
             reverse mode over forward mode through a call is not supported; nest the other \
             way (forward over reverse)"
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
        nesting: match inner {
            Mode::Reverse => Nesting::Derive,
            Mode::Forward => Nesting::Fail(format!(
                "`{name}` is a forward-mode companion: code that calls it can be \
                 differentiated once more, not twice"
            )),
        },
    };
    g.protocol()
}

/// Whether nested differentiation is built (the `nested` feature, on by default).
pub const ENABLED: bool = cfg!(feature = "nested");

const DISABLED: &str = "nested differentiation is turned off: enable the `nested` feature of \
     `autodiff-core` (on by default)";

/// The helper trait that a named companion of a common shape implements, so that
/// `autodiff_core::{gradient, hvp, hessian, jacobian}` take it in one call:
/// `Objective` (and `ObjectiveHvp`) for the reverse companion `(Duplicated, Active)` of
/// `fn(&[f64]) -> f64`,
/// `ForwardJacobian` / `ReverseJacobian` for the companions `(Dual, Dual)` /
/// `(Duplicated, Duplicated)` of `fn(&[f64], &mut [f64])`.
pub fn helper_impl(sig: &SigInfo, spec: &Spec) -> TokenStream {
    let f64_slice = |p: &Param, mutable: bool| {
        p.shape == Shape::Slice { mutable }
            && p.elem
                .as_ref()
                .is_some_and(|e| quote!(#e).to_string() == "f64")
    };
    let name = &spec.name;
    let acts: Vec<Activity> = spec.inputs.iter().map(|a| a.0).collect();
    let ret = spec.ret.map(|r| r.0);
    let ret_f64 = matches!(&sig.ret, Ret::Ty(t) if quote!(#t).to_string() == "f64");
    let params = &sig.params;
    if !sig.float_params.is_empty() {
        return TokenStream::new();
    }
    if params.len() == 1
        && f64_slice(&params[0], false)
        && ret_f64
        && spec.mode == Mode::Reverse
        && acts == [Activity::Duplicated]
        && ret == Some(Activity::Active)
    {
        let objective = quote! {
            impl ::autodiff_core::Objective for #name {
                fn value_and_gradient(x: &[f64], grad: &mut [f64]) -> f64 {
                    #name(x, grad, 1.0)
                }
            }
        };
        if !ENABLED {
            return objective;
        }
        return quote! {
            #objective
            impl ::autodiff_core::ObjectiveHvp for #name {
                fn value_gradient_hvp(
                    x: &[f64],
                    v: &[f64],
                    grad: &mut [f64],
                    hv: &mut [f64],
                ) -> f64 {
                    #name::__ad_fwd(x, v, grad, hv, 1.0, 0.0, ()).0
                }
            }
        };
    }
    if params.len() == 2
        && f64_slice(&params[0], false)
        && f64_slice(&params[1], true)
        && matches!(sig.ret, Ret::Unit)
    {
        if spec.mode == Mode::Forward && acts == [Activity::Dual, Activity::Dual] {
            return quote! {
                impl ::autodiff_core::ForwardJacobian for #name {
                    fn jvp(x: &[f64], v: &[f64], y: &mut [f64], dy: &mut [f64]) {
                        #name(x, v, y, dy)
                    }
                }
            };
        }
        if spec.mode == Mode::Reverse && acts == [Activity::Duplicated, Activity::Duplicated] {
            return quote! {
                impl ::autodiff_core::ReverseJacobian for #name {
                    fn vjp(x: &[f64], bx: &mut [f64], y: &mut [f64], by: &mut [f64]) {
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
fn rename_shadows(t: TokenStream) -> TokenStream {
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

/// Whether generated code calls a callee's forward protocol function.
fn calls_protocol(t: &TokenStream) -> bool {
    t.clone().into_iter().any(|tt| match tt {
        proc_macro2::TokenTree::Ident(i) => {
            let s = i.to_string();
            s == "__ad_fwd" || (s.starts_with("__ad_fwd_") && !s.starts_with("__ad_fwd_fn"))
        }
        proc_macro2::TokenTree::Group(g) => calls_protocol(&g.stream()),
        _ => false,
    })
}

fn mentions_f32(t: &TokenStream) -> bool {
    t.clone().into_iter().any(|tt| match tt {
        proc_macro2::TokenTree::Ident(i) => i == "f32",
        proc_macro2::TokenTree::Group(g) => mentions_f32(&g.stream()),
        _ => false,
    })
}

/// The body of a protocol function that cannot be built: it compiles, and fails with
/// `msg` once a caller instantiates it (its mode marker is a generic parameter).
pub fn failure(msg: &str) -> TokenStream {
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

// -------------------------------------------------------------------- nesting through calls
//
// A differentiated caller's companion calls its callees' protocol functions (`h::__ad_aug`,
// `h::__ad_pull`, `h::__ad_fwd`). Differentiating that companion again calls their
// derivatives, which each callee provides under mangled names (`__ad_fwd___ad_pull`: the
// forward transform of the pullback):
//
// | caller's nesting  | the companion calls | its derivative calls                         |
// |-------------------|---------------------|----------------------------------------------|
// | forward / reverse | `__ad_aug`          | `__ad_fwd___ad_aug` (the forward protocol)   |
// | forward / reverse | `__ad_pull`         | `__ad_fwd___ad_pull`                         |
// | forward / forward | `__ad_fwd`          | `__ad_fwd___ad_fwd`                          |
// | reverse / forward | `__ad_fwd`          | `__ad_aug___ad_fwd`, `__ad_pull___ad_fwd`    |
//
// The caller's lowering drops the pullback state and the mode marker from these calls, so
// a derivative recomputes what the pullback needs. `__ad_fwd___ad_pull` and
// `__ad_fwd___ad_fwd` differentiate, in forward mode, a reverse (resp. forward) companion
// of the callee with every parameter active, then adapt the caller's generic arguments
// (`Zero`, `Discard`, shadows) to its concrete parameters.

/// The nested protocol functions of `g`'s function.
pub fn variants(g: &Gen) -> TokenStream {
    if !ENABLED {
        // Only nested code calls these, and there is none.
        return TokenStream::new();
    }
    let func = g.func;
    let unsupported = if !g.sig.float_params.is_empty() || mentions_f32(&quote!(#func)) {
        Some("nested differentiation supports `f64` functions only (not generic or `f32` ones)")
    } else if g
        .sig
        .params
        .iter()
        .any(|p| matches!(p.shape, Shape::Closure(_)))
    {
        Some("nested differentiation of a function that takes a closure is not supported")
    } else {
        None
    };
    let name = &g.func.sig.ident;
    let why = |what: &str, reason: &str| {
        format!(
            "`{name}` cannot be differentiated {what} where a differentiated caller calls it: {reason}"
        )
    };
    let (fwd_pull, fwd_fwd) = match (&g.nesting, unsupported, &g.fail_fwd, &g.fail_rev) {
        (Nesting::Fail(m), ..) => (Err(m.clone()), Err(m.clone())),
        (_, Some(r), ..) => (
            Err(why("in forward mode over reverse mode", r)),
            Err(why("twice in forward mode", r)),
        ),
        (_, None, f, r) => (r.clone().map_or(Ok(()), Err), f.clone().map_or(Ok(()), Err)),
    };
    // The derived functions take float buffers (`&Vec<f64>`, `&[f64; 3]`) as slices.
    let sig = SigInfo {
        params: g.sig.params.iter().map(as_slice_param).collect(),
        ..g.sig.clone()
    };
    let gs = Gen {
        func: g.func,
        sig: &sig,
        body: g.body,
        kinds: g.kinds,
        fail_fwd: None,
        fail_rev: None,
        nesting: Nesting::Derive,
    };
    let mut out = TokenStream::new();
    out.extend(forward_over_augmented(g));
    out.extend(match fwd_pull {
        Ok(()) => forward_over_pullback(&gs),
        Err(m) => stub(
            g,
            &variant_name(g, "fwd", "pull"),
            pullback_arity(g),
            quote!(((), ())),
            &m,
        ),
    });
    out.extend(match fwd_fwd {
        Ok(()) => forward_over_forward(&gs),
        Err(m) => {
            let r = ret_type(&g.sig.ret);
            let arity = 4 * g.sig.params.len() + 1 - usize::from(g.receiver().is_some());
            stub(
                g,
                &variant_name(g, "fwd", "fwd"),
                arity,
                quote!(((#r, #r), (#r, #r))),
                &m,
            )
        }
    });
    out.extend(reverse_over_forward(g));
    out
}

/// A float-buffer parameter typed as a slice (`&[f64]`, `&mut [f64]`).
fn as_slice_param(p: &Param) -> Param {
    let mut p = p.clone();
    if let (Shape::Slice { mutable }, Some(e)) = (&p.shape, &p.elem) {
        p.ty = Some(if *mutable {
            syn::parse_quote!(&mut [#e])
        } else {
            syn::parse_quote!(&[#e])
        });
    }
    p
}

/// `__ad_{outer}___ad_{inner}`, with `_NAME` after it for a method.
fn variant_name(g: &Gen, outer: &str, inner: &str) -> Ident {
    match g.receiver() {
        Some(_) => format_ident!("__ad_{}___ad_{}_{}", outer, inner, g.func.sig.ident),
        None => format_ident!("__ad_{}___ad_{}", outer, inner),
    }
}

/// The protocol function `name` of `g`, called as `Self::name(args)` or `self.name(args)`.
fn call_own(g: &Gen, name: &Ident, args: &[TokenStream]) -> TokenStream {
    match g.receiver() {
        Some(_) => quote!(self.#name(#(#args),*)),
        None => quote!(Self::#name(#(#args),*)),
    }
}

fn own_protocol(g: &Gen, mode: &str) -> Ident {
    match g.receiver() {
        Some(_) => format_ident!("__ad_{}_{}", mode, g.func.sig.ident),
        None => format_ident!("__ad_{}", mode),
    }
}

/// A primal parameter of a nested protocol function: the receiver, or a declaration.
fn primal_decl(g: &Gen, p: &Param) -> TokenStream {
    g.protocol_param_decl(p)
}

fn item(
    g: &Gen,
    name: &Ident,
    params: &[TokenStream],
    ret: TokenStream,
    body: TokenStream,
) -> TokenStream {
    let (gens, wh) = g.generics_without(&g.closure_generics());
    quote! {
        #[doc(hidden)]
        #[inline]
        #[allow(unused, unused_mut, unused_parens, non_snake_case, clippy::all)]
        pub fn #name #gens (#(#params),*) -> #ret #wh {
            use ::autodiff_core::__private as __ad;
            #body
        }
    }
}

/// A nested protocol function that cannot be built: `arity` arguments (the receiver aside),
/// the last the caller's mode marker; fails with `msg` where a caller instantiates it.
fn stub(g: &Gen, name: &Ident, arity: usize, ret: TokenStream, msg: &str) -> TokenStream {
    let receiver = g.receiver().map(|_| primal_decl(g, &g.sig.params[0]));
    let first = g
        .sig
        .params
        .iter()
        .find(|p| !p.is_self())
        .map(|p| primal_decl(g, p));
    let (gens, wh) = g.generics_without(&g.closure_generics());
    stub_item(name, receiver, first, arity, ret, msg, (gens, wh))
}

/// Where the first parameter's primal comes among the arguments of the nested protocol
/// function `name` (after a receiver): it is declared with its type, so that the
/// function's type parameters are inferred from it.
fn first_param_position(name: &Ident, method: bool) -> usize {
    let pull_fwd = name.to_string().starts_with("__ad_pull___ad_fwd");
    match (pull_fwd, method) {
        (false, false) => 0,
        (true, false) => 1,
        (false, true) => {
            if name.to_string().starts_with("__ad_fwd___ad_aug") {
                1
            } else {
                3
            }
        }
        (true, true) => 4,
    }
}

/// A function `name` of `arity` generic arguments (after `receiver`), the last the mode
/// marker, that fails to compile with `msg` where a caller instantiates it. `first` is the
/// declaration of the function's first parameter, which keeps its type.
pub fn stub_item(
    name: &Ident,
    receiver: Option<TokenStream>,
    first: Option<TokenStream>,
    arity: usize,
    ret: TokenStream,
    msg: &str,
    (gens, wh): (TokenStream, TokenStream),
) -> TokenStream {
    let at = first_param_position(name, receiver.is_some());
    let mut params: Vec<TokenStream> = receiver.into_iter().collect();
    let mut first = first;
    for i in 0..arity.saturating_sub(1) {
        match first.take_if(|_| i == at) {
            Some(decl) => params.push(decl),
            None => {
                let a = format_ident!("__ad_a{}", i);
                params.push(quote!(#a: impl ::core::marker::Sized));
            }
        }
    }
    params.push(quote!(__ad_mark: impl ::core::marker::Sized));
    let body = failure(msg);
    quote! {
        #[doc(hidden)]
        #[allow(unused, non_snake_case, clippy::all)]
        pub fn #name #gens (#(#params),*) -> #ret #wh {
            #body
        }
    }
}

/// Arguments of `__ad_fwd___ad_pull` (besides a receiver): each parameter, its tangent,
/// its sink and the sink's tangent; the seed and its tangent; the marker.
fn pullback_arity(g: &Gen) -> usize {
    4 * g.sig.params.len() + 3 - usize::from(g.receiver().is_some())
}

/// `__ad_fwd___ad_aug`: the augmented call's forward transform. The primal and tangent
/// come from the forward protocol; the pullback state is empty, since the nested
/// pullback recomputes.
fn forward_over_augmented(g: &Gen) -> TokenStream {
    let mut params = Vec::new();
    let mut args = Vec::new();
    for p in &g.sig.params {
        let n = &p.name;
        let t = format_ident!("__ad_t_{}", n);
        params.push(primal_decl(g, p));
        if !p.is_self() {
            args.push(quote!(#n));
        }
        let (decl, _) = g.tangent_param(p, &t, &t, &t);
        params.push(decl);
        args.push(quote!(#t));
    }
    params.push(quote!(__ad_mark: impl ::core::marker::Copy));
    args.push(quote!(__ad_mark));
    let r = ret_type(&g.sig.ret);
    let call = call_own(g, &own_protocol(g, "fwd"), &args);
    item(
        g,
        &variant_name(g, "fwd", "aug"),
        &params,
        quote!(((#r, ()), (#r, ()))),
        quote! {
            let (__ad_y, __ad_dy) = #call;
            ((__ad_y, ()), (__ad_dy, ()))
        },
    )
}

/// `__ad_aug___ad_fwd`, `__ad_pull___ad_fwd`: reverse mode over a forward protocol call.
/// The augmented call is the forward protocol itself; the pullback (which would
/// differentiate the forward companion in reverse mode) is not built yet.
fn reverse_over_forward(g: &Gen) -> TokenStream {
    let mut params = Vec::new();
    let mut args = Vec::new();
    for p in &g.sig.params {
        let n = &p.name;
        let t = format_ident!("__ad_t_{}", n);
        params.push(primal_decl(g, p));
        if !p.is_self() {
            args.push(quote!(#n));
        }
        let (decl, _) = g.tangent_param(p, &t, &t, &t);
        params.push(decl);
        args.push(quote!(#t));
    }
    args.push(quote!(()));
    let r = ret_type(&g.sig.ret);
    let call = call_own(g, &own_protocol(g, "fwd"), &args);
    let aug = item(
        g,
        &variant_name(g, "aug", "fwd"),
        &params,
        quote!(((#r, #r), ())),
        quote!((#call, ())),
    );
    let name = &g.func.sig.ident;
    let n = g.sig.params.len();
    // The state, each argument of the forward call (parameters and tangents) with its
    // sink, the seed, the marker; a method's receiver tangent and its sink come first.
    let arity = 1 + 4 * n + 2 - usize::from(g.receiver().is_some());
    let pull = stub(
        g,
        &variant_name(g, "pull", "fwd"),
        arity,
        quote!(()),
        &format!(
            "`{name}` is called by a forward-mode companion that is differentiated in reverse mode: reverse mode over forward mode through a call is not supported; nest the other way (forward over reverse)"
        ),
    );
    quote!(#aug #pull)
}

fn span_of(g: &Gen) -> Span {
    g.func.sig.ident.span()
}

/// `__ad_fwd___ad_pull`: the forward transform of the pullback, from a reverse companion
/// with every parameter active, differentiated in forward mode.
fn forward_over_pullback(g: &Gen) -> TokenStream {
    let span = span_of(g);
    let fname = &g.func.sig.ident;
    let inputs = g
        .sig
        .params
        .iter()
        .map(|p| {
            let a = match p.shape {
                Shape::Scalar => Activity::Active,
                Shape::Slice { .. } | Shape::Struct { .. } => Activity::Duplicated,
                Shape::Other | Shape::Closure(_) => Activity::Const,
            };
            (a, span)
        })
        .collect();
    let has_ret = !matches!(g.sig.ret, Ret::Unit);
    let concrete = match g.receiver() {
        Some(_) => format_ident!("__ad_npull_{}", fname),
        None => format_ident!("__ad_npull"),
    };
    let code = g.reverse_companion(&Spec {
        mode: Mode::Reverse,
        name: concrete,
        inputs,
        ret: has_ret.then_some((Activity::Active, span)),
        width: 1,
    });
    let inner = variant_name(g, "fwd", "npull");
    let inner_fn = forward_of(&code, &inner, g.receiver().is_some());

    let mut params = Vec::new();
    let mut convert = TokenStream::new();
    let mut args = Vec::new();
    let mut scalar_sinks = Vec::new();
    for p in &g.sig.params {
        let n = &p.name;
        let t = format_ident!("__ad_t_{}", n);
        let k = format_ident!("__ad_k_{}", n);
        let tk = format_ident!("__ad_tk_{}", n);
        let b = format_ident!("__ad_b_{}", n);
        params.push(primal_decl(g, p));
        if !p.is_self() {
            args.push(quote!(#n));
        }
        params.push(g.tangent_param(p, &t, &t, &t).0);
        args.push(quote!(#t));
        let (sink, conv) = g.sink_param(p, &k, &b, &format_ident!("__ad_s_{}", n));
        params.push(sink);
        params.push(sink_tangent_decl(p, &tk));
        match p.shape {
            Shape::Slice { .. } | Shape::Struct { .. } => {
                convert.extend(conv);
                args.push(quote!(#b));
                args.push(quote!(#tk));
            }
            Shape::Scalar => scalar_sinks.push((k, tk)),
            Shape::Other | Shape::Closure(_) => {}
        }
    }
    let r = ret_type(&g.sig.ret);
    if has_ret {
        params.push(quote!(__ad_dret: impl ::autodiff_core::__private::ScalarTangent<#r>));
        params.push(quote!(__ad_tdret: impl ::autodiff_core::__private::ScalarTangent<#r>));
        convert.extend(quote!(let __ad_dret: #r = __ad::ScalarTangent::tangent(__ad_dret);));
        args.push(quote!(__ad_dret));
        args.push(quote!(__ad_tdret));
    } else {
        params.push(quote!(__ad_dret: impl ::core::marker::Sized));
        params.push(quote!(__ad_tdret: impl ::core::marker::Sized));
    }
    params.push(quote!(__ad_mark: impl ::core::marker::Copy));
    args.push(quote!(__ad_mark));
    // The reverse companion returns the primal (if any), then each scalar's adjoint.
    let outs = usize::from(has_ret) + scalar_sinks.len();
    let mut adds = TokenStream::new();
    for (j, (k, tk)) in scalar_sinks.iter().enumerate() {
        let (o, d) = if outs == 1 {
            (quote!(__ad_o), quote!(__ad_do))
        } else {
            let i = syn::Index::from(usize::from(has_ret) + j);
            (quote!(__ad_o.#i), quote!(__ad_do.#i))
        };
        adds.extend(quote! {
            __ad::ScalarSink::add(#k, #o);
            __ad::ScalarSink::add(#tk, #d);
        });
    }
    let call = call_own(g, &inner, &args);
    let wrapper = item(
        g,
        &variant_name(g, "fwd", "pull"),
        &params,
        quote!(((), ())),
        quote! {
            #convert
            let (__ad_o, __ad_do) = #call;
            #adds
            ((), ())
        },
    );
    quote!(#inner_fn #wrapper)
}

/// The tangent of an adjoint sink: where the forward transform of a pullback adds the
/// tangent of each adjoint.
fn sink_tangent_decl(p: &Param, tk: &Ident) -> TokenStream {
    match &p.shape {
        Shape::Scalar => {
            let ty = p.ty.as_ref().unwrap();
            quote!(#tk: impl ::autodiff_core::__private::ScalarSink<#ty>)
        }
        Shape::Slice { .. } => {
            let e = p.elem.as_ref().unwrap();
            quote!(#tk: impl ::autodiff_core::__private::SliceShadow<#e>)
        }
        Shape::Struct { .. } => {
            let inner = crate::expand::referent(p);
            quote!(#tk: impl ::autodiff_core::__private::StructShadowMut<#inner>)
        }
        Shape::Other | Shape::Closure(_) => quote!(#tk: impl ::core::marker::Sized),
    }
}

/// `__ad_fwd___ad_fwd`: the forward transform of the forward protocol, from a forward
/// companion with every parameter active, differentiated in forward mode again.
fn forward_over_forward(g: &Gen) -> TokenStream {
    let span = span_of(g);
    let fname = &g.func.sig.ident;
    let inputs = g
        .sig
        .params
        .iter()
        .map(|p| {
            let a = match p.shape {
                Shape::Other | Shape::Closure(_) => Activity::Const,
                _ => Activity::Dual,
            };
            (a, span)
        })
        .collect();
    let has_ret = !matches!(g.sig.ret, Ret::Unit);
    let concrete = match g.receiver() {
        Some(_) => format_ident!("__ad_nfwd_{}", fname),
        None => format_ident!("__ad_nfwd"),
    };
    let code = g.forward_companion(&Spec {
        mode: Mode::Forward,
        name: concrete,
        inputs,
        ret: has_ret.then_some((Activity::Dual, span)),
        width: 1,
    });
    let inner = variant_name(g, "fwd", "nfwd");
    let inner_fn = forward_of(&code, &inner, g.receiver().is_some());

    let mut params = Vec::new();
    let mut convert = TokenStream::new();
    let mut args = Vec::new();
    for p in &g.sig.params {
        let n = &p.name;
        let t = format_ident!("__ad_t_{}", n);
        let u = format_ident!("__ad_u_{}", n);
        let v = format_ident!("__ad_v_{}", n);
        let w = format_ident!("__ad_w_{}", n);
        params.push(primal_decl(g, p));
        if !p.is_self() {
            args.push(quote!(#n));
        }
        params.push(g.tangent_param(p, &t, &t, &t).0);
        args.push(quote!(#t));
        let (u_decl, u_conv) = g.tangent_param(p, &u, &v, &format_ident!("__ad_s_{}", n));
        params.push(u_decl);
        params.push(g.tangent_param(p, &w, &w, &w).0);
        if !matches!(p.shape, Shape::Other | Shape::Closure(_)) {
            convert.extend(u_conv);
            args.push(quote!(#v));
            args.push(quote!(#w));
        }
    }
    params.push(quote!(__ad_mark: impl ::core::marker::Copy));
    args.push(quote!(__ad_mark));
    let r = ret_type(&g.sig.ret);
    let call = call_own(g, &inner, &args);
    let body = if has_ret {
        quote!(#convert #call)
    } else {
        quote!(#convert #call; (((), ()), ((), ())))
    };
    let wrapper = item(
        g,
        &variant_name(g, "fwd", "fwd"),
        &params,
        quote!(((#r, #r), (#r, #r))),
        body,
    );
    quote!(#inner_fn #wrapper)
}

/// The forward protocol function, named `name`, of the generated function `code`: its
/// code lowered and differentiated again.
fn forward_of(code: &TokenStream, name: &Ident, method: bool) -> TokenStream {
    let code = rename_shadows(code.clone());
    let Ok(func) = syn::parse2::<ImplItemFn>(code) else {
        return TokenStream::new();
    };
    let Ok(sig) = crate::signature::analyse(&func.sig) else {
        return TokenStream::new();
    };
    let lowered = Lowerer::for_companion(&sig).lower_body(&func.block, &sig);
    let empty = Body {
        block: vec![],
        ret: vec![Operand::Lit(quote!(()))],
        ret_tuple: false,
    };
    let no_kinds = HashMap::new();
    let (body, kinds, fail) = match &lowered {
        Ok((body, kinds)) => (body, kinds, None),
        Err(e) => (
            &empty,
            &no_kinds,
            Some(format!("nested differentiation through a call: {e}")),
        ),
    };
    let g = Gen {
        func: &func,
        sig: &sig,
        body,
        kinds,
        fail_fwd: fail,
        fail_rev: None,
        nesting: Nesting::Fail(String::new()),
    };
    let f = g.protocol_forward();
    let Ok(mut f) = syn::parse2::<ImplItemFn>(f) else {
        return TokenStream::new();
    };
    if !method {
        f.sig.ident = name.clone();
    }
    quote!(#f)
}
