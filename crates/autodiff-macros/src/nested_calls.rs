//! Nesting through calls: the nested protocol functions of every differentiable function.
//!
//! A differentiated caller's companion calls its callees' protocol functions (`h::__ad_aug`,
//! `h::__ad_pull`, `h::__ad_fwd`). Differentiating that companion again calls their
//! derivatives, which each callee provides under mangled names (`__ad_fwd___ad_pull`: the
//! forward transform of the pullback):
//!
//! | caller's nesting  | the companion calls | its derivative calls                         |
//! |-------------------|---------------------|----------------------------------------------|
//! | forward / reverse | `__ad_aug`          | `__ad_fwd___ad_aug` (the forward protocol)   |
//! | forward / reverse | `__ad_pull`         | `__ad_fwd___ad_pull`                         |
//! | forward / forward | `__ad_fwd`          | `__ad_fwd___ad_fwd`                          |
//! | reverse / forward | `__ad_fwd`          | `__ad_aug___ad_fwd`, `__ad_pull___ad_fwd`    |
//!
//! The caller's lowering drops the pullback state and the mode marker from these calls, so
//! a derivative recomputes what the pullback needs. `__ad_fwd___ad_pull` and
//! `__ad_fwd___ad_fwd` differentiate, in forward mode, a reverse (resp. forward) companion
//! of the callee with every parameter active, then adapt the caller's generic arguments
//! (`Zero`, `Discard`, shadows) to its concrete parameters. `__ad_pull___ad_fwd` is
//! `__ad_fwd___ad_pull` with its sinks swapped (see [`reverse_over_forward`]).

use crate::activity::{Activity, Mode, Spec};
use crate::collections::HashSet;
use crate::expand::{Gen, LoweredBody, Nesting, all_active, ret_type};
use crate::ir::RetShape;
use crate::lower::Lowerer;
use crate::nested::{ENABLED, body_or_failure, failure, rename_shadows, unsupported_floats};
use crate::signature::{Param, Ret, Shape, SigInfo};
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};
use std::cell::OnceCell;
use syn::ImplItemFn;

/// The nested protocol functions of `g`'s function.
pub fn variants(g: &Gen) -> TokenStream {
    if !ENABLED {
        // Only nested code calls these, and there is none.
        return TokenStream::new();
    }
    let unsupported = unsupported(g);
    let name = &g.func.sig.ident;
    let why = |what: &str, reason: &str| {
        format!(
            "`{name}` cannot be differentiated {what} where a differentiated caller calls it: {reason}"
        )
    };
    let struct_result = (g.body.ret_shape == RetShape::Value).then(|| {
        why(
            "twice in forward mode, or in reverse mode over forward mode,",
            "nested differentiation of a function that returns a struct is supported only as forward over reverse",
        )
    });
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
        assoc: g.assoc,
        delegate: None,
        npull: g.npull,
    };
    let mut out = TokenStream::new();
    out.extend(match unsupported {
        // (Its conversion back to `&[f64; N]` could not read `N` from a slice.)
        Some(r) if const_generics(g).next().is_some() => stub(
            g,
            &variant_name(g, "fwd", "aug"),
            2 * g.sig.params.len() + 1,
            {
                let r = ret_type(&g.sig.ret);
                quote!(((#r, ()), (#r, ())))
            },
            &why("in forward mode over reverse mode", r),
        ),
        _ => forward_over_augmented(g),
    });
    out.extend(match fwd_pull {
        Ok(()) => forward_over_pullback(&gs, &g.sig.params),
        Err(m) => stub(
            g,
            &variant_name(g, "fwd", "pull"),
            pullback_arity(g),
            quote!(((), ())),
            &m,
        ),
    });
    let fwd_fwd = match (fwd_fwd, &struct_result) {
        (Ok(()), Some(m)) => Err(m.clone()),
        (f, _) => f,
    };
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
    // A function that reverse mode cannot differentiate (a reverse companion among them)
    // does not get it over its forward mode either.
    let rev_fwd = match (&g.nesting, unsupported, &g.fail_fwd, &g.fail_rev) {
        (Nesting::Fail(m), ..) => Some(m.clone()),
        (_, Some(r), ..) => Some(why("in reverse mode over forward mode", r)),
        (_, None, f, r) => f.clone().or_else(|| r.clone()),
    };
    out.extend(reverse_over_forward(g, rev_fwd.or(struct_result)));
    out
}

/// Why `g`'s function has no nested protocol functions, if it has none.
fn unsupported(g: &Gen) -> Option<&'static str> {
    let func = g.func;
    if let Some(reason) = unsupported_floats(&quote!(#func)) {
        Some(reason)
    } else if g
        .sig
        .params
        .iter()
        .any(|p| matches!(p.shape, Shape::Closure(_)))
    {
        Some("nested differentiation of a function that takes a closure is not supported")
    } else if g
        .func
        .sig
        .generics
        .params
        .iter()
        .any(|p| matches!(p, syn::GenericParam::Const(_)))
    {
        // Its variants take buffers as slices, from which the parameter cannot be read.
        Some(
            "nested differentiation of a function generic over a constant (`[f64; N]`) is not supported",
        )
    } else {
        None
    }
}

/// Whether the companion `spec` of `g`'s function has the same code as the all-active
/// companion that the function's nested protocol functions differentiate
/// (`__ad_fwd___ad_npull`, `__ad_fwd___ad_nfwd`), and those are built: every parameter
/// active, every float buffer a slice, one tangent, and the function a free one whose
/// nested derivations are supported. The companion's own protocol then calls them
/// instead of differentiating the same code again.
pub fn is_variant_companion(g: &Gen, spec: &Spec) -> bool {
    let ret = match (&g.sig.ret, spec.mode) {
        (Ret::Unit, _) => None,
        (_, Mode::Reverse) => Some(Activity::Active),
        (_, Mode::Forward) => Some(Activity::Dual),
    };
    let ty = |p: &Param| p.ty.as_ref().map(|t| quote!(#t).to_string());
    ENABLED
        && matches!(g.nesting, Nesting::Derive)
        && !g.suffixed()
        && spec.width == 1
        && spec.ret.map(|r| r.0) == ret
        && spec.inputs.len() == g.sig.params.len()
        && g.sig
            .params
            .iter()
            .zip(&spec.inputs)
            .all(|(p, (a, _))| *a == all_active(p, spec.mode) && ty(p) == ty(&as_slice_param(p)))
        && unsupported(g).is_none()
        && flat_tuple(g).is_none()
}

/// The types of the scalars of `g`'s result, where it is a tuple of floats, an array of
/// floats, or a tuple of both: its nested variants differentiate a reverse companion that
/// takes and returns the scalars one by one (see [`Gen::reverse_companion_as`]).
fn flat_tuple(g: &Gen) -> Option<Vec<syn::Type>> {
    let Ret::Ty(t) = &g.sig.ret else {
        return None;
    };
    let mut t = &**t;
    while let syn::Type::Paren(p) = t {
        t = &p.elem;
    }
    let scalars = crate::lower::scalar_types;
    let elems: Vec<syn::Type> = match (t, &g.body.ret_shape) {
        (syn::Type::Tuple(tt), RetShape::Tuple(_)) => tt.elems.iter().flat_map(scalars).collect(),
        (t, RetShape::Array(_)) => scalars(t),
        _ => return None,
    };
    // (An integer among them, `-> (f64, usize)`, has a seed and a tangent of its own
    // type, which carry nothing.)
    let scalars = elems
        .iter()
        .all(|e| crate::signature::is_float_type(e, &g.sig.float_params) || is_integer_type(e));
    (g.body.ret.len() == elems.len() && !elems.is_empty() && scalars).then_some(elems)
}

/// `usize`, `i32`, `bool` and the other integer types.
fn is_integer_type(t: &syn::Type) -> bool {
    matches!(t, syn::Type::Path(p) if p.qself.is_none()
        && p.path.get_ident().is_some_and(|i| crate::signature::is_integer_or_bool_name(&i.to_string())))
}

/// A float-buffer parameter typed as a slice (`&[f64]`, `&mut [f64]`): every nested
/// variant takes buffers so, since a caller differentiated again holds its own buffer
/// parameters as slices (a `&Vec<f64>` passed on whole arrives as a `&[f64]`).
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

/// `__ad_{outer}___ad_{inner}`, with `_NAME` after it for a method or associated function.
fn variant_name(g: &Gen, outer: &str, inner: &str) -> Ident {
    if g.suffixed() {
        format_ident!("__ad_{}___ad_{}_{}", outer, inner, g.func.sig.ident)
    } else {
        format_ident!("__ad_{}___ad_{}", outer, inner)
    }
}

/// The protocol function `name` of `g`, called as `Self::name(args)` or `self.name(args)`.
fn call_own(g: &Gen, name: &Ident, args: &[TokenStream]) -> TokenStream {
    match g.receiver() {
        Some(_) => quote!(self.#name(#(#args),*)),
        None => quote!(Self::#name(#(#args),*)),
    }
}

fn item(
    g: &Gen,
    name: &Ident,
    params: &[TokenStream],
    ret: TokenStream,
    body: TokenStream,
) -> TokenStream {
    let (gens, wh) = g.generics_without(&dropped_generics(g, &quote!(#(#params)* #ret #body)));
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
    let receiver = g
        .receiver()
        .map(|_| g.protocol_param_decl(&g.sig.params[0]));
    let primals: Vec<TokenStream> = g
        .sig
        .params
        .iter()
        .filter(|p| !p.is_self())
        .map(|p| g.protocol_param_decl(&as_slice_param(p)))
        .collect();
    let (gens, wh) = g.generics_without(&dropped_generics(g, &quote!(#(#primals)* #ret)));
    let state_after_first = g.state_after_first();
    stub_item(
        name,
        (receiver, state_after_first),
        primals,
        arity,
        ret,
        msg,
        (gens, wh),
    )
}

/// The generic parameters a nested protocol function of `g` goes without: closure types
/// (replaced by `DiffFn`s), and constants that its code `tokens` does not name (`N` of
/// `&[f64; N]`, taken as a slice, which a caller could not infer).
fn dropped_generics(g: &Gen, tokens: &TokenStream) -> Vec<String> {
    let mut named = HashSet::default();
    crate::lower::walk_idents(tokens, &mut |id| {
        named.insert(id.to_string());
    });
    let mut dropped = g.closure_generics();
    dropped.extend(const_generics(g).filter(|c| !named.contains(c)));
    dropped
}

/// The names of `g`'s function's constant generic parameters.
fn const_generics<'a>(g: &'a Gen) -> impl Iterator<Item = String> + 'a {
    g.func.sig.generics.params.iter().filter_map(|p| match p {
        syn::GenericParam::Const(c) => Some(c.ident.to_string()),
        _ => None,
    })
}

/// Where the first parameter's primal comes among the arguments of the nested protocol
/// function `name` (after a receiver), and how many arguments each parameter takes
/// there (its primal, tangent, ..). The primals are declared with their types, so that
/// the function's type parameters are inferred from them, and so that a caller's
/// untyped float (`let mut t = 0.0;` lent as `&mut t`) gets its type from the call.
fn primal_positions(name: &Ident, method: bool) -> (usize, usize) {
    let stride = if name.to_string().starts_with("__ad_fwd___ad_aug") {
        2
    } else {
        4
    };
    (first_param_position(name, method), stride)
}

/// Where the first parameter's primal comes among the arguments of `name`.
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
/// marker, that fails to compile with `msg` where a caller instantiates it. `primals` are
/// the declarations of the function's parameters (the receiver aside), which keep their
/// types at their primals' positions. `state_after_first`: an associated function's
/// pullback takes its state after its first argument (see `Gen::state_after_first`).
pub fn stub_item(
    name: &Ident,
    (receiver, state_after_first): (Option<TokenStream>, bool),
    primals: Vec<TokenStream>,
    arity: usize,
    ret: TokenStream,
    msg: &str,
    (gens, wh): (TokenStream, TokenStream),
) -> TokenStream {
    let (at, stride) = primal_positions(name, receiver.is_some());
    let moved_state = state_after_first
        && receiver.is_none()
        && name.to_string().starts_with("__ad_pull___ad_fwd");
    let is_primal = |i: usize| match moved_state {
        // The first primal, the state, then the others one place later.
        true => i == 0 || (i > stride && (i - 1).is_multiple_of(stride)),
        false => i >= at && (i - at).is_multiple_of(stride),
    };
    let mut params: Vec<TokenStream> = receiver.into_iter().collect();
    let mut primals = primals.into_iter();
    for i in 0..arity.saturating_sub(1) {
        let decl = is_primal(i).then(|| primals.next()).flatten();
        match decl {
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
    let (mut before, mut after) = (TokenStream::new(), TokenStream::new());
    for p in &g.sig.params {
        let n = &p.name;
        let t = format_ident!("__ad_t_{}", n);
        params.push(g.protocol_param_decl(&as_slice_param(p)));
        if !p.is_self() {
            args.push(from_slice_arg(p, &mut before, &mut after));
        }
        let (decl, _) = g.tangent_param(p, &t, &t, &t);
        params.push(decl);
        args.push(quote!(#t));
    }
    params.push(quote!(__ad_mark: impl ::core::marker::Copy));
    args.push(quote!(__ad_mark));
    let r = ret_type(&g.sig.ret);
    let call = call_own(g, &g.protocol_name("fwd"), &args);
    item(
        g,
        &variant_name(g, "fwd", "aug"),
        &params,
        quote!(((#r, ()), (#r, ()))),
        quote! {
            #before
            let (__ad_y, __ad_dy) = #call;
            #after
            ((__ad_y, ()), (__ad_dy, ()))
        },
    )
}

/// The argument of the function's own protocol (typed as the user wrote it) for the
/// parameter `p` of a variant that takes float buffers as slices, as callers that are
/// differentiated again pass them: an array converted back (its length is the type's),
/// a `Vec` copied, and a `&mut Vec` copied back after the call (`after`).
fn from_slice_arg(p: &Param, before: &mut TokenStream, after: &mut TokenStream) -> TokenStream {
    let n = &p.name;
    let Some(syn::Type::Reference(r)) = &p.ty else {
        return quote!(#n);
    };
    if as_slice_param(p).ty == p.ty {
        return quote!(#n);
    }
    match &*r.elem {
        syn::Type::Array(_) => {
            // Typed as written, so that a constant length (`N`) is the function's own.
            let ty = &p.ty;
            quote!({
                let __ad_array: #ty = ::core::convert::TryInto::try_into(#n)
                    .expect("a buffer of the array's length");
                __ad_array
            })
        }
        _ if r.mutability.is_some() => {
            let v = format_ident!("__ad_vec_{}", n);
            before.extend(quote!(let mut #v = #n.to_vec();));
            after.extend(quote!(#n.copy_from_slice(&#v);));
            quote!(&mut #v)
        }
        _ => quote!(&#n.to_vec()),
    }
}

/// `__ad_aug___ad_fwd`, `__ad_pull___ad_fwd`: reverse mode over a forward protocol call.
/// The augmented call is the forward protocol itself, with an empty state.
///
/// The pullback needs no code of its own. The forward protocol maps `(x, t)` to
/// `(y, ẏ) = (f(x), J t)`; for the cotangents `(ȳ, ẏ̄)` its pullback adds `t̄ = Jᵀ ẏ̄`
/// and `x̄ = Jᵀ ȳ + (∂J[t])ᵀ ẏ̄`. The forward transform of `f`'s own pullback,
/// `__ad_fwd___ad_pull`, called at `(x, t)` with the seed `ẏ̄` and the seed's tangent
/// `ȳ`, computes exactly these two: `Jᵀ ẏ̄` into its sink and `(∂J[t])ᵀ ẏ̄ + Jᵀ ȳ` into
/// the sink's tangent. So the pullback calls it with the sinks swapped.
/// `failed` says why it cannot be built, if it cannot.
fn reverse_over_forward(g: &Gen, failed: Option<String>) -> TokenStream {
    let mut params = Vec::new();
    let mut args = Vec::new();
    let (mut before, mut after) = (TokenStream::new(), TokenStream::new());
    for p in &g.sig.params {
        let n = &p.name;
        let t = format_ident!("__ad_t_{}", n);
        params.push(g.protocol_param_decl(&as_slice_param(p)));
        if !p.is_self() {
            args.push(from_slice_arg(p, &mut before, &mut after));
        }
        let (decl, _) = g.tangent_param(p, &t, &t, &t);
        params.push(decl);
        args.push(quote!(#t));
    }
    args.push(quote!(()));
    let r = ret_type(&g.sig.ret);
    let call = call_own(g, &g.protocol_name("fwd"), &args);
    let body = match (&failed, const_generics(g).next()) {
        // (Its conversion back to `&[f64; N]` could not read `N` from a slice; the first
        // tangent's type stands for the marker that this function does not take.)
        (Some(msg), Some(_)) => {
            let t = format_ident!("__ad_t_{}", g.sig.params[0].name);
            let fail = failure(msg);
            quote!(let __ad_mark = &#t; #fail)
        }
        _ => quote!({ #before let __ad_r = #call; #after (__ad_r, ()) }),
    };
    let aug = item(
        g,
        &variant_name(g, "aug", "fwd"),
        &params,
        quote!(((#r, #r), ())),
        body,
    );
    let name = variant_name(g, "pull", "fwd");
    let pull = match failed {
        Some(msg) => {
            // The state, each argument of the forward call (parameters and tangents) with
            // its sink, the seed, the marker; a method's receiver tangent and its sink
            // come first.
            let arity = 1 + 4 * g.sig.params.len() + 2 - usize::from(g.receiver().is_some());
            stub(g, &name, arity, quote!(()), &msg)
        }
        None => transposed_pullback(g, &name),
    };
    quote!(#aug #pull)
}

/// The pullback `name` of reverse mode over `g`'s forward protocol, through
/// `__ad_fwd___ad_pull` (see [`reverse_over_forward`]). It takes the arguments of the
/// forward call interleaved with their sinks, as any pullback does: a method's receiver
/// sink after the state, then its receiver tangent and that tangent's sink; then each
/// parameter, its sink, its tangent and the tangent's sink. The state comes after the
/// first parameter where [`Gen::state_after_first`] says so (an associated function's
/// first argument stands where a method's receiver does).
fn transposed_pullback(g: &Gen, name: &Ident) -> TokenStream {
    let mut params = Vec::new();
    let mut args = Vec::new();
    let state_after_first = g.state_after_first();
    if !state_after_first {
        params.push(quote!(__ad_state: ()));
    }
    for (i, p) in g.sig.params.iter().enumerate() {
        let n = &p.name;
        let t = format_ident!("__ad_t_{}", n);
        let (k, tk) = (
            format_ident!("__ad_k_{}", n),
            format_ident!("__ad_tk_{}", n),
        );
        params.push(g.protocol_param_decl(&as_slice_param(p)));
        if i == 0 && state_after_first {
            params.push(quote!(__ad_state: ()));
        }
        params.push(sink_tangent_decl(p, &k));
        if !p.is_self() {
            args.push(quote!(#n));
        }
        params.push(g.tangent_param(p, &t, &t, &t).0);
        params.push(sink_tangent_decl(p, &tk));
        // The tangent's cotangent goes where the pullback's own adjoint goes, the
        // argument's where that adjoint's tangent goes.
        args.push(quote!(#t));
        args.push(quote!(#tk));
        args.push(quote!(#k));
    }
    let ret = match &g.sig.ret {
        Ret::Unit => None,
        Ret::Ty(_) => Some(ret_type(&g.sig.ret)),
    };
    let (seed_param, convert, seed_args) = swapped_seed(ret);
    params.push(seed_param);
    args.extend(seed_args);
    params.push(quote!(__ad_mark: impl ::core::marker::Copy));
    args.push(quote!(__ad_mark));
    let call = call_own(g, &variant_name(g, "fwd", "pull"), &args);
    let body = quote! {
        #convert
        let _ = #call;
    };
    item(g, name, &params, quote!(()), body)
}

/// The seed of a reverse-over-forward pullback for a result of type `ret` (none for
/// `()`), passed on to `__ad_fwd___ad_pull`: the parameter, which takes the cotangents
/// `(ȳ, ẏ̄)` of the forward call's `(y, ẏ)`; the statement that splits it; and the
/// pullback's seed and seed tangent, `ẏ̄` and `ȳ` (see [`reverse_over_forward`]).
pub fn swapped_seed(ret: Option<TokenStream>) -> (TokenStream, TokenStream, [TokenStream; 2]) {
    match ret {
        None => (
            quote!(__ad_dret: impl ::core::marker::Sized),
            quote!(),
            [quote!(()), quote!(())],
        ),
        Some(r) => (
            quote!(__ad_dret: impl ::autodiff_core::__private::ScalarTangent<(#r, #r)>),
            quote!(let (__ad_yb, __ad_dyb): (#r, #r) = __ad::ScalarTangent::tangent(__ad_dret);),
            [quote!(__ad_dyb), quote!(__ad_yb)],
        ),
    }
}

/// `__ad_fwd___ad_pull`: the forward transform of the pullback, from a reverse companion
/// with every parameter active, differentiated in forward mode. `g` takes float buffers
/// as slices; `declared` are the parameters as the function declares them.
fn forward_over_pullback(g: &Gen, declared: &[Param]) -> TokenStream {
    let has_ret = !matches!(g.sig.ret, Ret::Unit);
    let (inner, inner_fn) = derived_forward(g, Mode::Reverse, "npull");

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
        params.push(g.protocol_param_decl(p));
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
    // The primal's outputs before the adjoints: one per element of a flattened tuple.
    let mut primal_outs = usize::from(has_ret);
    if has_ret {
        if g.body.ret_shape != RetShape::Value {
            params.push(quote!(__ad_dret: impl ::autodiff_core::__private::ScalarTangent<#r>));
            params.push(quote!(__ad_tdret: impl ::autodiff_core::__private::ScalarTangent<#r>));
            convert.extend(quote!(let __ad_dret: #r = __ad::ScalarTangent::tangent(__ad_dret);));
        }
        match flat_tuple(g) {
            Some(elems) => {
                convert
                    .extend(quote!(let __ad_tdret: #r = __ad::ScalarTangent::tangent(__ad_tdret);));
                let shape = &g.body.ret_shape;
                let tangents = shape.parts(&quote!(__ad_tdret));
                for (d, t) in shape.parts(&quote!(__ad_dret)).into_iter().zip(tangents) {
                    args.push(d);
                    args.push(t);
                }
                primal_outs = elems.len();
            }
            None if g.body.ret_shape == RetShape::Value => {
                // The companion takes a struct's seed by reference, with a struct
                // shadow for its tangent. A zero seed (`Zero`) is the zero of the
                // struct, shaped like the primal result.
                params
                    .push(quote!(__ad_dret: impl ::autodiff_core::__private::StructCotangent<#r>));
                params
                    .push(quote!(__ad_tdret: impl ::autodiff_core::__private::StructCotangent<#r>));
                // (The primal runs for the shape of its result alone: what it writes to
                // a `&mut Vec` goes to a copy, not written back.)
                let (mut copies, mut written_back) = (TokenStream::new(), TokenStream::new());
                let primal_args: Vec<TokenStream> = declared
                    .iter()
                    .filter(|p| !p.is_self())
                    .map(|p| {
                        let a = from_slice_arg(p, &mut copies, &mut written_back);
                        if p.copied { quote!(*#a) } else { a }
                    })
                    .collect();
                let f = &g.func.sig.ident;
                let primal = match (g.receiver(), g.assoc) {
                    (Some(_), _) => quote!(self.#f(#(#primal_args),*)),
                    (None, true) => quote!(Self::#f(#(#primal_args),*)),
                    (None, false) => quote!(#f(#(#primal_args),*)),
                };
                convert.extend(quote! {
                    let __ad_dret: #r = match __ad::StructCotangent::into_option(__ad_dret) {
                        ::core::option::Option::Some(v) => v,
                        ::core::option::Option::None => {
                            #copies
                            __ad::zero_like(&#primal)
                        }
                    };
                    let __ad_tdret: #r = match __ad::StructCotangent::into_option(__ad_tdret) {
                        ::core::option::Option::Some(v) => v,
                        ::core::option::Option::None => __ad::zero_like(&__ad_dret),
                    };
                });
                args.push(quote!(&__ad_dret));
                args.push(quote!(&__ad_tdret));
            }
            None if g.body.ret_shape == RetShape::Buffer => {
                // The companion takes a vector's seed as a slice, with a slice tangent
                // (an empty vector stands for a zero one).
                convert
                    .extend(quote!(let __ad_tdret: #r = __ad::ScalarTangent::tangent(__ad_tdret);));
                args.push(quote!(&__ad_dret[..]));
                args.push(quote!(__ad::vec_tangent(&__ad_tdret)));
            }
            None => {
                // (Converted: an integer result's seed tangent goes to a parameter that
                // takes only what carries no derivative.)
                convert
                    .extend(quote!(let __ad_tdret: #r = __ad::ScalarTangent::tangent(__ad_tdret);));
                args.push(quote!(__ad_dret));
                args.push(quote!(__ad_tdret));
            }
        }
    } else {
        params.push(quote!(__ad_dret: impl ::core::marker::Sized));
        params.push(quote!(__ad_tdret: impl ::core::marker::Sized));
    }
    params.push(quote!(__ad_mark: impl ::core::marker::Copy));
    args.push(quote!(__ad_mark));
    // The reverse companion returns the primal (if any), then each scalar's adjoint.
    let outs = primal_outs + scalar_sinks.len();
    let mut adds = TokenStream::new();
    for (j, (k, tk)) in scalar_sinks.iter().enumerate() {
        let (o, d) = if outs == 1 {
            (quote!(__ad_o), quote!(__ad_do))
        } else {
            let i = syn::Index::from(primal_outs + j);
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
        Shape::Other => quote!(#tk: impl ::autodiff_core::__private::NoDerivative),
        Shape::Closure(_) => quote!(#tk: impl ::core::marker::Sized),
    }
}

/// `__ad_fwd___ad_fwd`: the forward transform of the forward protocol, from a forward
/// companion with every parameter active, differentiated in forward mode again.
fn forward_over_forward(g: &Gen) -> TokenStream {
    let has_ret = !matches!(g.sig.ret, Ret::Unit);
    let (inner, inner_fn) = derived_forward(g, Mode::Forward, "nfwd");

    let mut params = Vec::new();
    let mut convert = TokenStream::new();
    let mut args = Vec::new();
    for p in &g.sig.params {
        let n = &p.name;
        let t = format_ident!("__ad_t_{}", n);
        let u = format_ident!("__ad_u_{}", n);
        let v = format_ident!("__ad_v_{}", n);
        let w = format_ident!("__ad_w_{}", n);
        params.push(g.protocol_param_decl(p));
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
    let body = match flat_tuple(g) {
        // The inner function returns the elements and their tangents in one flat tuple
        // (see `Gen::forward_companion_as`), and its tangents likewise: each half is put
        // back into the result's shape.
        Some(elems) if has_ret => {
            let n = elems.len();
            let shape = &g.body.ret_shape;
            let part = |t: &str, range: std::ops::Range<usize>| {
                let t = format_ident!("{}", t);
                let items: Vec<TokenStream> = range
                    .map(|i| {
                        let i = syn::Index::from(i);
                        quote!(#t.#i)
                    })
                    .collect();
                shape.assemble(&items)
            };
            let (y, t) = (part("__ad_v", 0..n), part("__ad_v", n..2 * n));
            let (dy, dt) = (part("__ad_d", 0..n), part("__ad_d", n..2 * n));
            quote! {
                #convert
                let (__ad_v, __ad_d) = #call;
                ((#y, #t), (#dy, #dt))
            }
        }
        _ if has_ret => quote!(#convert #call),
        _ => quote!(#convert #call; (((), ()), ((), ()))),
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

/// A companion of `g`'s function in `mode` with every parameter active (`__ad_npull` for
/// reverse, `__ad_nfwd` for forward; `what` names it), lowered again and differentiated in
/// forward mode: the name of that forward protocol function, and the function.
fn derived_forward(g: &Gen, mode: Mode, what: &str) -> (Ident, TokenStream) {
    let span = g.func.sig.ident.span();
    let spec = Spec {
        mode,
        name: if g.suffixed() {
            format_ident!("__ad_{}_{}", what, g.func.sig.ident)
        } else {
            format_ident!("__ad_{}", what)
        },
        inputs: g
            .sig
            .params
            .iter()
            .map(|p| (all_active(p, mode), span))
            .collect(),
        ret: (!matches!(g.sig.ret, Ret::Unit)).then_some((
            match mode {
                Mode::Reverse => Activity::Active,
                Mode::Forward => Activity::Dual,
            },
            span,
        )),
        width: 1,
    };
    let code = match mode {
        Mode::Reverse => g.reverse_companion_as(&spec, flat_tuple(g).as_deref()),
        Mode::Forward => g.forward_companion_as(&spec, flat_tuple(g).as_deref()),
    };
    let inner = variant_name(g, "fwd", what);
    let keep = g.npull.filter(|_| mode == Mode::Reverse);
    let inner_fn = forward_of(&code, &inner, g.receiver().is_some(), mode, keep);
    (inner, inner_fn)
}

/// The forward protocol function, named `name`, of the generated function `code`, a
/// companion of mode `mode`: its code lowered and differentiated again. The lowered code
/// is also put in `keep`.
fn forward_of(
    code: &TokenStream,
    name: &Ident,
    method: bool,
    mode: Mode,
    keep: Option<&OnceCell<LoweredBody>>,
) -> TokenStream {
    let code = rename_shadows(code.clone());
    let Ok(func) = syn::parse2::<ImplItemFn>(code) else {
        return TokenStream::new();
    };
    let Ok(sig) = crate::signature::analyse_fn(&func) else {
        return TokenStream::new();
    };
    let lowerer = Lowerer::for_companion(&sig);
    let lowered = match mode {
        Mode::Reverse => lowerer.keeping_shadow_cuts(),
        Mode::Forward => lowerer,
    }
    .lower_body(&func.block, &sig);
    let (body, kinds, fail) = body_or_failure(lowered, |e| {
        format!("nested differentiation through a call: {e}")
    });
    let own;
    let (body, kinds) = match keep {
        Some(keep) if fail.is_none() => {
            let (body, kinds) = keep.get_or_init(|| (body, kinds));
            (body, kinds)
        }
        _ => {
            own = (body, kinds);
            (&own.0, &own.1)
        }
    };
    let g = Gen {
        func: &func,
        sig: &sig,
        body,
        kinds,
        fail_fwd: fail,
        fail_rev: None,
        nesting: Nesting::Fail(String::new()),
        // Renamed below (a method's keeps its own name).
        assoc: false,
        delegate: None,
        npull: None,
    };
    let f = g.protocol_forward();
    if method { f } else { rename_fn(f, name) }
}

/// `f` (one function item) with its name replaced by `name`, at the token level: the
/// identifier after the first top-level `fn`. (Parsing the item to rename it would cost
/// as much as the rest of the derivation.)
fn rename_fn(f: TokenStream, name: &Ident) -> TokenStream {
    let mut after_fn = false;
    let mut done = false;
    f.into_iter()
        .map(|tt| match tt {
            proc_macro2::TokenTree::Ident(id) if !done && after_fn => {
                done = true;
                let mut name = name.clone();
                name.set_span(id.span());
                proc_macro2::TokenTree::Ident(name)
            }
            proc_macro2::TokenTree::Ident(id) => {
                after_fn = !done && id == "fn";
                proc_macro2::TokenTree::Ident(id)
            }
            tt => tt,
        })
        .collect()
}
