//! Closures passed to differentiated calls: each becomes a `DiffFn` built at the call,
//! from its body differentiated like a function body of its own.
//!
//! In forward mode the `DiffFn` carries the closure and its tangent map, which reads the
//! tangents of the captured variables. In reverse mode it carries the closure and its
//! cotangent map, which adds the cotangents of the captured variables into accumulators
//! owned by the caller (`Cell`s declared before the forward sweep, so that they outlive
//! every pullback that holds the closure); the caller drains them into its adjoints right
//! after the pullback of the call.

use crate::activity::Mode;
use crate::analysis::{Analysis, analyse};
use crate::calls::{Refs, closure_builder};
use crate::collections::HashMap;
use crate::forward::{Forward, tangent_or_zero};
use crate::ir::*;
use crate::reverse::Reverse;
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote, quote_spanned};

fn pack(items: Vec<TokenStream>) -> TokenStream {
    match items.len() {
        0 => quote!(()),
        1 => quote!(#(#items)*),
        _ => quote!((#(#items),*)),
    }
}

/// The closure's parameters as the pattern of a closure built from it, with the types the
/// user wrote when every parameter has one (`t: f64`, `(a, b): (f64, f64)`).
fn params_pattern(c: &ClosureIr, name: impl Fn(&Ident) -> Ident) -> TokenStream {
    let pat = pack(
        c.params
            .iter()
            .map(|p| {
                let n = name(p);
                quote!(#n)
            })
            .collect(),
    );
    let types: Option<Vec<&syn::Type>> = c.param_types.iter().map(Option::as_ref).collect();
    match types {
        Some(t) if !t.is_empty() => {
            let ty = if t.len() == 1 {
                let t0 = t[0];
                quote!(#t0)
            } else {
                quote!((#(#t),*))
            };
            quote!(#pat: #ty)
        }
        _ => pat,
    }
}

fn returned(c: &ClosureIr, f: impl Fn(&Operand) -> TokenStream) -> TokenStream {
    let items: Vec<TokenStream> = c.body.ret.iter().map(f).collect();
    if c.body.ret_shape.is_tuple() {
        c.body.ret_shape.assemble(&items)
    } else {
        pack(items)
    }
}

/// The closure's own analysis: its parameters and the captures active in the caller.
fn closure_analysis(c: &ClosureIr, caller: &Analysis) -> Analysis {
    let mut active: Vec<String> = c.params.iter().map(|p| p.to_string()).collect();
    let mut frozen = Vec::new();
    for v in &c.captures {
        if caller.is_active(v) {
            active.push(v.to_string());
        } else {
            frozen.push(v.to_string());
        }
    }
    analyse(&c.body, &active, &frozen, Mode::Reverse)
}

/// The primal closure `move |x| body`, whose calls go through their callees' protocol
/// for `mode` where they must (a custom rule's all-constant `sync()`).
fn primal_closure(c: &ClosureIr, mode: Mode) -> TokenStream {
    let none = Analysis {
        primal_only: true,
        augmented_values: mode == Mode::Reverse,
        ..analyse(&c.body, &[], &[], Mode::Forward)
    };
    let code = Forward {
        an: &none,
        refs: Refs {
            kinds: &body_kinds(c),
        },
        replays: Default::default(),
    }
    .block(&c.body.block);
    let x = params_pattern(c, |p| p.clone());
    let ret = returned(c, Operand::primal);
    quote!(move |#x| { #code #ret })
}

/// `let id = callee::__ad_fwd_fnI(primal, tangent map);`
pub fn forward_build(c: &ClosureIr, call: &Call, caller: &Analysis) -> TokenStream {
    let an = closure_analysis(c, caller);
    let code = Forward {
        an: &an,
        refs: Refs {
            kinds: &body_kinds(c),
        },
        replays: Default::default(),
    }
    .block(&c.body.block);
    let x = params_pattern(c, |p| p.clone());
    let dx = params_pattern(c, tangent_name);
    let ret = returned(c, Operand::primal);
    let tan = returned(c, |o| tangent_or_zero(&an, o));
    let primal = primal_closure(c, Mode::Forward);
    let builder = closure_builder(call, c.arg_index, "fwd");
    let id = &c.id;
    let rebind = borrow_buffers(c, caller, true);
    quote! {
        let #id = { #rebind #builder(#primal, move |#x, #dx| { #code (#ret, #tan) }) };
    }
}

/// Whether the caller's variable `v`, captured by `c`, is an owned buffer (a `Vec` or an
/// array), which the `move` closures must capture by reference.
fn is_owned_buffer(c: &ClosureIr, v: &Ident) -> bool {
    matches!(c.kinds.get(&v.to_string()), Some(VarKind::Buffer))
}

/// Whether the `DiffFn` built for `c` borrows locals of the caller (it captures an owned
/// buffer): inside a loop, the reverse sweep builds it again rather than keeping it.
pub fn borrows_locals(c: &ClosureIr) -> bool {
    c.captures.iter().any(|v| is_owned_buffer(c, v))
}

/// `let v = &v;` for each owned buffer that `c` captures (and for its tangent, in forward
/// mode, when it is active), so that the `move` closures built from `c`, which must be
/// `Copy`, borrow it as the user's closure did.
fn borrow_buffers(c: &ClosureIr, caller: &Analysis, tangents: bool) -> TokenStream {
    let mut out = TokenStream::new();
    for v in c.captures.iter().filter(|v| is_owned_buffer(c, v)) {
        out.extend(quote!(let #v = &#v;));
        if tangents && caller.is_active(v) {
            let t = tangent_name(v);
            out.extend(quote!(let #t = &#t;));
        }
    }
    out
}

/// The kinds of the variables as the closure's body sees them: a captured owned buffer is
/// a reference there (see [`borrow_buffers`]), lent on as it is (`h(&w)` passes `&*w`).
fn body_kinds(c: &ClosureIr) -> HashMap<String, VarKind> {
    let mut kinds = c.kinds.clone();
    for v in c.captures.iter().filter(|v| is_owned_buffer(c, v)) {
        kinds.insert(v.to_string(), VarKind::Ref { mutable: false });
    }
    kinds
}

/// The accumulator of a captured variable's cotangent.
fn cell_name(c: &ClosureIr, v: &Ident) -> Ident {
    format_ident!("{}_cell_{}", c.id, v)
}

/// `let id = callee::__ad_rev_fnI(primal, cotangent map);` with the accumulators it needs
/// declared through `declare`; returns the construction and the drains that follow the
/// call's pullback.
pub fn reverse_build(
    c: &ClosureIr,
    call: &Call,
    caller: &Analysis,
    declare: &mut dyn FnMut(TokenStream),
) -> (TokenStream, TokenStream) {
    let an = closure_analysis(c, caller);
    let kinds = body_kinds(c);
    let rev = Reverse::new(&an, &kinds);
    let sw = rev.sweeps(&c.body.block);
    let (tapes, fwd, back, adjoints) = (sw.tapes, sw.forward, sw.reverse, sw.adjoints);
    let x = params_pattern(c, |p| p.clone());
    let primal = returned(c, Operand::primal);
    let mut decls = TokenStream::new();
    for p in &c.params {
        let b = adjoint_name(p);
        decls.extend(quote!(let mut #b = __ad::zero_like(&#p);));
    }
    let mut refs = TokenStream::new();
    let mut adds = TokenStream::new();
    let mut drains = TokenStream::new();
    for v in c.captures.iter().filter(|v| caller.is_active(v)) {
        let b = adjoint_name(v);
        let cell = cell_name(c, v);
        let cell_ref = format_ident!("{}_ref", cell);
        refs.extend(quote!(let #cell_ref = &#cell;));
        if matches!(c.kinds.get(&v.to_string()), Some(VarKind::Scalar)) {
            declare(
                quote!(let #cell = ::core::cell::Cell::new(::core::default::Default::default());),
            );
            decls.extend(quote!(let mut #b = __ad::zero_like(&#v);));
            adds.extend(quote!(__ad::cell_add(#cell_ref, #b);));
            drains.extend(quote!(#b += __ad::cell_take(&#cell);));
        } else {
            // A float buffer (a slice parameter, or an owned buffer borrowed by
            // `borrow_buffers`): the cotangent map adds into the elements of a buffer of
            // zeros shared with the caller (`__ad::CapturedBuffer` names anything else
            // in its error).
            let guard = format_ident!("{}_guard", cell);
            declare(quote!(let #cell = __ad::BufferCell::default();));
            // At the closure: where an error about what it captures belongs.
            let mut at = v.clone();
            at.set_span(c.span);
            let borrow = quote_spanned!(c.span=> #cell_ref.borrow(#at));
            decls.extend(quote! {
                let mut #guard = #borrow;
                let #b = &mut #guard[..];
            });
            drains.extend(quote!(#cell.drain_into(&mut #b[..]);));
        }
    }
    let mut seeds = TokenStream::new();
    for (i, o) in c.body.ret.iter().enumerate() {
        if let Operand::Var(v) = o
            && an.is_active(v)
        {
            let b = adjoint_name(v);
            let g = if c.body.ret_shape.is_tuple() {
                let i = syn::Index::from(i);
                quote!(__ad_ybar.#i)
            } else {
                quote!(__ad_ybar)
            };
            seeds.extend(quote!(#b += #g;));
        }
    }
    let xbar = pack(
        c.params
            .iter()
            .map(|p| {
                let b = adjoint_name(p);
                quote!(#b)
            })
            .collect(),
    );
    let primal_fn = primal_closure(c, Mode::Reverse);
    let builder = closure_builder(call, c.arg_index, "rev");
    let id = &c.id;
    let rebind = borrow_buffers(c, caller, false);
    let construct = quote! {
        #refs
        let #id = {
            #rebind
            #builder(#primal_fn, move |#x, __ad_ybar| {
                #tapes
                #fwd
                let __ad_primal = #primal;
                #decls
                #adjoints
                #seeds
                #back
                #adds
                (__ad_primal, #xbar)
            })
        };
    };
    (construct, drains)
}

/// The callee's functions that build the `DiffFn` for its closure parameter `index`:
/// giving the closures' types `Fn(X) -> Y` here lets rustc infer the parameter types of
/// the closures the caller writes.
pub fn builders(
    index: usize,
    sig: &crate::signature::ClosureSig,
    method: Option<&Ident>,
    generics: &[TokenStream],
    where_clause: &TokenStream,
) -> TokenStream {
    let inputs: Vec<syn::Type> = sig
        .inputs
        .iter()
        .map(|t| syn::parse_str(t).expect("a type"))
        .collect();
    let x = match inputs.len() {
        1 => quote!(#(#inputs)*),
        _ => quote!((#(#inputs),*)),
    };
    let y: syn::Type = syn::parse_str(&sig.output).expect("a type");
    let (fwd, rev, recv) = match method {
        Some(m) => (
            format_ident!("__ad_fwd_fn{}_{}", index, m),
            format_ident!("__ad_rev_fn{}_{}", index, m),
            quote!(&self,),
        ),
        None => (
            format_ident!("__ad_fwd_fn{}", index),
            format_ident!("__ad_rev_fn{}", index),
            quote!(),
        ),
    };
    let fg = quote!(<#(#generics,)* __AdC: ::core::ops::Fn(#x) -> #y + ::core::marker::Copy, __AdJ: ::core::ops::Fn(#x, #x) -> (#y, #y) + ::core::marker::Copy>);
    let rg = quote!(<#(#generics,)* __AdC: ::core::ops::Fn(#x) -> #y + ::core::marker::Copy, __AdV: ::core::ops::Fn(#x, #y) -> (#y, #x) + ::core::marker::Copy>);
    quote! {
        #[doc(hidden)]
        #[inline(always)]
        #[allow(clippy::all)]
        pub fn #fwd #fg (#recv call: __AdC, jvp: __AdJ) -> ::autodiff_core::__private::ForwardFn<__AdC, __AdJ> #where_clause {
            ::autodiff_core::__private::ForwardFn::new(call, jvp)
        }
        #[doc(hidden)]
        #[inline(always)]
        #[allow(clippy::all)]
        pub fn #rev #rg (#recv call: __AdC, vjp: __AdV) -> ::autodiff_core::__private::ReverseFn<__AdC, __AdV> #where_clause {
            ::autodiff_core::__private::ReverseFn::new(call, vjp)
        }
    }
}
