//! Custom reverse rules under forward-over-reverse differentiation.
//!
//! `#[differentiable]` on a reverse rule `fn f_rev(x) -> (y, impl FnOnce(..))` whose body
//! ends in `(value, |shadows.., dret| pullback)` differentiates, in forward mode, two
//! functions made from it: the rule's value (its statements, then `value`) and its
//! pullback (its statements, then the closure's body, the closure's parameters as
//! parameters). The function with the rule (`#[custom_rule(reverse = f_rev)]`) reaches
//! them through the rule itself (see `autodiff_core::__private::request_nested_rule`):
//! the rule hands over plain function pointers, whose types both macros derive from the
//! signatures with [`derivative_types`].

use crate::collections::{HashMap, HashSet};
use crate::expand::{Gen, Nesting};
use crate::ir::Body;
use crate::lower::Lowerer;
use crate::signature::{Shape, float_type_params, shape_of};
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::{Expr, FnArg, ImplItemFn, Pat, ReturnType, Stmt, Type, TypeParamBound};

/// The tangent type of a parameter of type `ty` in a rule's derivatives: the type itself
/// for a float, a slice for a float buffer; `None` for a constant.
pub fn tangent_type(ty: &Type, floats: &HashSet<String>) -> Option<Type> {
    match shape_of(ty, floats) {
        (Shape::Scalar, _) => Some(ty.clone()),
        (Shape::Slice { mutable: false }, Some(e)) => Some(syn::parse_quote!(&[#e])),
        (Shape::Slice { mutable: true }, Some(e)) => Some(syn::parse_quote!(&mut [#e])),
        _ => None,
    }
}

/// The function-pointer types of a rule's derivatives, given the rule's parameter types,
/// its pullback's shadow inputs, its value type (`None` for `()`) and its pullback's
/// output (the scalar adjoints):
/// `value(x, dx, ..) -> (y, dy)` and
/// `pullback(x, dx, .., shadow, d_shadow, .., dret, d_dret) -> (adjoints, d_adjoints)`.
pub fn derivative_types(
    params: &[Type],
    floats: &HashSet<String>,
    shadows: &[Type],
    ret: Option<&Type>,
    adjoints: &Type,
) -> TokenStream {
    let mut inputs = with_tangents(params, floats);
    let value = forward_derivative_type(params, floats, ret);
    for s in shadows {
        inputs.push(quote!(#s));
        inputs.push(quote!(#s));
    }
    if let Some(t) = ret {
        inputs.push(quote!(#t));
        inputs.push(quote!(#t));
    }
    let pull = quote!(fn(#(#inputs),*) -> (#adjoints, #adjoints));
    quote!((#value, #pull))
}

/// The types of a forward derivative's parameters: each of `params`, followed by its
/// tangent's type (none for a constant).
fn with_tangents(params: &[Type], floats: &HashSet<String>) -> Vec<TokenStream> {
    let mut out = Vec::new();
    for ty in params {
        let ty = &elided(ty);
        out.push(quote!(#ty));
        if let Some(t) = tangent_type(ty, floats) {
            out.push(quote!(#t));
        }
    }
    out
}

/// `ty` with the lifetimes of its references elided: both macros then write the same
/// higher-ranked function-pointer type, which is `'static`.
fn elided(ty: &Type) -> Type {
    struct Elide;
    impl syn::visit_mut::VisitMut for Elide {
        fn visit_type_reference_mut(&mut self, r: &mut syn::TypeReference) {
            r.lifetime = None;
            syn::visit_mut::visit_type_reference_mut(self, r);
        }
    }
    let mut t = ty.clone();
    syn::visit_mut::VisitMut::visit_type_mut(&mut Elide, &mut t);
    t
}

/// Whether `func` is a reverse rule: it returns `(value, impl Fn..(..))`.
pub fn is_reverse_rule(func: &ImplItemFn) -> bool {
    pullback_bound(func).is_some()
}

/// The `Fn*(..) -> ..` bound of a rule's returned pullback, and the value type.
fn pullback_bound(func: &ImplItemFn) -> Option<(Type, syn::ParenthesizedGenericArguments)> {
    let ReturnType::Type(_, t) = &func.sig.output else {
        return None;
    };
    let Type::Tuple(tt) = &**t else {
        return None;
    };
    if tt.elems.len() != 2 {
        return None;
    }
    let Type::ImplTrait(it) = &tt.elems[1] else {
        return None;
    };
    it.bounds.iter().find_map(|b| {
        let TypeParamBound::Trait(tb) = b else {
            return None;
        };
        let last = tb.path.segments.last()?;
        if !matches!(last.ident.to_string().as_str(), "Fn" | "FnMut" | "FnOnce") {
            return None;
        }
        match &last.arguments {
            syn::PathArguments::Parenthesized(p) => Some((tt.elems[0].clone(), p.clone())),
            _ => None,
        }
    })
}

/// `#[differentiable]` on a reverse rule: the rule, marked as differentiable and handing
/// over its derivatives on request, and a braced struct of the same name holding them.
pub fn expand(func: &ImplItemFn) -> syn::Result<TokenStream> {
    let name = &func.sig.ident;
    let unsupported = |span: Span, what: &str| {
        syn::Error::new(
            span,
            format!("`#[differentiable]` on a reverse rule: {what}"),
        )
    };
    if func.sig.receiver().is_some() {
        return Err(unsupported(
            name.span(),
            "methods are not supported; make the rule a free function",
        ));
    }
    let floats = float_type_params(&func.sig.generics);
    if func.sig.generics.type_params().next().is_some() {
        return Err(unsupported(
            func.sig.generics.span(),
            "generic rules are not differentiated again; write the rule for `f32` or `f64`",
        ));
    }
    let (value_ty, pb) = pullback_bound(func).expect("a reverse rule");
    let value_ty = match &value_ty {
        Type::Tuple(t) if t.elems.is_empty() => None,
        t => Some(t.clone()),
    };
    let adjoints: Type = match &pb.output {
        ReturnType::Default => syn::parse_quote!(()),
        ReturnType::Type(_, t) => (**t).clone(),
    };
    let mut params: Vec<(Ident, Type)> = Vec::new();
    for input in &func.sig.inputs {
        let FnArg::Typed(pt) = input else {
            continue;
        };
        let Pat::Ident(pi) = &*pt.pat else {
            return Err(unsupported(pt.pat.span(), "parameters must be plain names"));
        };
        match shape_of(&pt.ty, &floats).0 {
            Shape::Scalar | Shape::Slice { .. } | Shape::Other => {}
            _ => {
                return Err(unsupported(
                    pt.ty.span(),
                    "parameters must be floats, float slices or constants that are not references",
                ));
            }
        }
        params.push((pi.ident.clone(), (*pt.ty).clone()));
    }
    // The body: statements, then `(value, |..| pullback)`.
    let stmts = &func.block.stmts;
    let tail = match stmts.last() {
        Some(Stmt::Expr(e, None)) => e,
        _ => {
            return Err(unsupported(
                func.block.span(),
                "the rule must end in `(value, |shadows.., dret| pullback)`",
            ));
        }
    };
    let (value, closure) = match strip(tail) {
        Expr::Tuple(t) if t.elems.len() == 2 => match strip(&t.elems[1]) {
            Expr::Closure(c) => (&t.elems[0], c),
            other => {
                return Err(unsupported(
                    other.span(),
                    "the pullback must be a closure written here, `|shadows.., dret| ..`",
                ));
            }
        },
        other => {
            return Err(unsupported(
                other.span(),
                "the rule must end in `(value, |shadows.., dret| pullback)`",
            ));
        }
    };
    let body_stmts = &stmts[..stmts.len() - 1];
    if closure.inputs.len() != pb.inputs.len() {
        return Err(unsupported(
            closure.span(),
            "the pullback closure's parameters do not match its `FnOnce(..)` type",
        ));
    }
    let mut cparams = Vec::new();
    // Bindings of tuple parameters, whose elements are parameters of their own.
    let mut rebuilt = Vec::new();
    let mut shadows = Vec::new();
    for (i, (p, ty)) in closure.inputs.iter().zip(&pb.inputs).enumerate() {
        let pat = match p {
            Pat::Type(pt) => &*pt.pat,
            p => p,
        };
        match float_tuple(ty, &floats) {
            // A tuple of floats (the cotangent of a tuple value): a parameter per element,
            // so that each carries its tangent.
            Some(elems) => {
                let fresh = |k: usize| format_ident!("__ad_cp{}_{}", i, k);
                let names: Vec<Ident> = match pat {
                    Pat::Tuple(pt) if pt.elems.len() == elems.len() => {
                        let names: Option<Vec<Ident>> = (pt.elems.iter().enumerate())
                            .map(|(k, e)| match e {
                                Pat::Ident(pi) => Some(pi.ident.clone()),
                                Pat::Wild(_) => Some(fresh(k)),
                                _ => None,
                            })
                            .collect();
                        match names {
                            Some(n) => n,
                            None => {
                                return Err(unsupported(
                                    pt.span(),
                                    "a tuple parameter's pattern must bind plain names or `_`",
                                ));
                            }
                        }
                    }
                    Pat::Ident(pi) => {
                        let names: Vec<Ident> = (0..elems.len()).map(fresh).collect();
                        let id = &pi.ident;
                        rebuilt.push(quote!(let #id = (#(#names,)*);));
                        names
                    }
                    Pat::Wild(_) => (0..elems.len()).map(fresh).collect(),
                    other => {
                        return Err(unsupported(
                            other.span(),
                            "a tuple parameter must be a name, `_` or a tuple of as many names",
                        ));
                    }
                };
                cparams.extend(names.iter().zip(&elems).map(|(n, t)| quote!(#n: #t)));
            }
            None => {
                let id = match pat {
                    Pat::Ident(pi) => pi.ident.clone(),
                    _ => format_ident!("__ad_cp{}", i),
                };
                match crate::signature::vec_elem_type(ty) {
                    // The cotangent of a vector, taken by value: a slice parameter (a
                    // differentiated function takes no vector by value), copied back
                    // into the vector the body reads.
                    Some(e) => {
                        let slice = format_ident!("__ad_cs{}", i);
                        cparams.push(quote!(#slice: &[#e]));
                        rebuilt.push(quote!(let #id: #ty = #slice.to_vec();));
                    }
                    None => cparams.push(quote!(#id: #ty)),
                }
            }
        }
        if i + 1 < pb.inputs.len() || value_ty.is_none() {
            shadows.push(ty.clone());
        }
    }
    let decls: Vec<TokenStream> = params
        .iter()
        .map(|(n, t)| {
            let t = elided(t);
            quote!(#n: #t)
        })
        .collect();
    let r = value_ty.as_ref().map_or(quote!(()), |t| quote!(#t));
    let cbody = &closure.body;
    let value_fn = quote! {
        fn __ad_rule_value(#(#decls),*) -> #r {
            #(#body_stmts)*
            #value
        }
    };
    let pull_fn = quote! {
        fn __ad_rule_pull(#(#decls,)* #(#cparams),*) -> #adjoints {
            #(#rebuilt)*
            #(#body_stmts)*
            #cbody
        }
    };
    let fwd_value = forward_protocol(&value_fn, &format_ident!("__ad_fwd_rule_value"))?;
    let fwd_pull = forward_protocol(&pull_fn, &format_ident!("__ad_fwd_rule_pull"))?;

    // Concrete entry points (function pointers), in the order of `derivative_types`.
    let (mut inputs, mut args) = concrete_parameters(&params, &floats);
    let value_inputs = inputs.clone();
    let value_args = args.clone();
    // A tuple is passed on element by element, each with its tangent.
    let pass_on = |args: &mut Vec<TokenStream>, ty: &Type, b: &Ident, tb: &Ident| match float_tuple(
        ty, &floats,
    ) {
        Some(elems) => {
            for k in (0..elems.len()).map(syn::Index::from) {
                args.push(quote!(#b.#k));
                args.push(quote!(#tb.#k));
            }
        }
        // (A vector as the slices the pullback's function takes, see `cparams`.)
        None if crate::signature::vec_elem_type(ty).is_some() => {
            args.push(quote!(&#b[..]));
            args.push(quote!(&#tb[..]));
        }
        None => {
            args.push(quote!(#b));
            args.push(quote!(#tb));
        }
    };
    for (i, s) in shadows.iter().enumerate() {
        let (b, tb) = (format_ident!("__ad_b{}", i), format_ident!("__ad_tb{}", i));
        inputs.push(quote!(#b: #s));
        inputs.push(quote!(#tb: #s));
        pass_on(&mut args, s, &b, &tb);
    }
    if let Some(t) = &value_ty {
        inputs.push(quote!(__ad_dret: #t));
        inputs.push(quote!(__ad_tdret: #t));
        pass_on(
            &mut args,
            t,
            &format_ident!("__ad_dret"),
            &format_ident!("__ad_tdret"),
        );
    }
    let types = derivative_types(
        &params.iter().map(|(_, t)| t.clone()).collect::<Vec<_>>(),
        &floats,
        &shadows,
        value_ty.as_ref(),
        &adjoints,
    );

    // The rule itself: handing over its derivatives first, and returning its pullback
    // with a marker captured (see `autodiff_core::__private::PullbackMarker`).
    let mut rule = func.clone();
    let (xs, xtys): (Vec<Ident>, Vec<&Type>) = pb
        .inputs
        .iter()
        .enumerate()
        .map(|(i, t)| (format_ident!("__ad_x{}", i), t))
        .unzip();
    let marked: Expr = syn::parse_quote! {{
        let __ad_pullback = #closure;
        let __ad_marker = ::autodiff_core::__private::PullbackMarker::new();
        move |#(#xs: #xtys),*| -> #adjoints {
            let _ = &__ad_marker;
            __ad_pullback(#(#xs),*)
        }
    }};
    if let Some(Stmt::Expr(Expr::Tuple(t), None)) = rule.block.stmts.last_mut() {
        t.elems[1] = marked;
    } else if let Some(Stmt::Expr(e, None)) = rule.block.stmts.last_mut() {
        *e = syn::parse_quote!((#value, #marked));
    }
    let offer: Stmt = syn::parse_quote! {
        ::autodiff_core::__private::offer_nested_rule::<#types>(
            (#name::__ad_nested_value, #name::__ad_nested_pull),
        );
    };
    rule.block.stmts.insert(0, offer);
    let vis = &func.vis;
    let doc = format!(
        " Forward derivatives of the reverse rule [`{name}`], used by nested differentiation."
    );
    Ok(quote! {
        #rule
        #[doc = #doc]
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #name {}
        impl #name {
            #fwd_value
            #fwd_pull
            #[doc(hidden)]
            #[allow(unused, non_snake_case, clippy::all)]
            pub fn __ad_nested_value(#(#value_inputs),*) -> (#r, #r) {
                Self::__ad_fwd_rule_value(#(#value_args,)* ())
            }
            #[doc(hidden)]
            #[allow(unused, non_snake_case, clippy::all)]
            pub fn __ad_nested_pull(#(#inputs),*) -> (#adjoints, #adjoints) {
                Self::__ad_fwd_rule_pull(#(#args,)* ())
            }
        }
    })
}

/// The parameters of a concrete entry point to a forward protocol function (each
/// parameter, then its tangent: none for a constant), and the arguments it passes on to
/// that function (a constant's tangent is `Zero`).
fn concrete_parameters(
    params: &[(Ident, Type)],
    floats: &HashSet<String>,
) -> (Vec<TokenStream>, Vec<TokenStream>) {
    let mut inputs = Vec::new();
    let mut args = Vec::new();
    for (n, ty) in params {
        let ty = &elided(ty);
        inputs.push(quote!(#n: #ty));
        args.push(quote!(#n));
        let t = format_ident!("__ad_t_{}", n);
        match tangent_type(ty, floats) {
            Some(tt) => {
                inputs.push(quote!(#t: #tt));
                args.push(quote!(#t));
            }
            None => args.push(quote!(::autodiff_core::__private::Zero)),
        }
    }
    (inputs, args)
}

/// The element types of `ty` when it is a tuple of two or more floats.
fn float_tuple(ty: &Type, floats: &HashSet<String>) -> Option<Vec<Type>> {
    match ty {
        Type::Tuple(t)
            if t.elems.len() > 1
                && (t.elems.iter()).all(|e| matches!(shape_of(e, floats).0, Shape::Scalar)) =>
        {
            Some(t.elems.iter().cloned().collect())
        }
        Type::Paren(p) => float_tuple(&p.elem, floats),
        _ => None,
    }
}

fn strip(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => strip(&p.expr),
        Expr::Group(g) => strip(&g.expr),
        e => e,
    }
}

/// The forward protocol function, named `name`, of the function `code` (user code).
fn forward_protocol(code: &TokenStream, name: &Ident) -> syn::Result<TokenStream> {
    let func: ImplItemFn = syn::parse2(code.clone())?;
    let sig = crate::signature::analyse_fn(&func)?;
    let (body, kinds): (Body, HashMap<_, _>) = Lowerer::new(&sig).lower_body(&func.block, &sig)?;
    let g = Gen {
        func: &func,
        sig: &sig,
        body: &body,
        kinds: &kinds,
        fail_fwd: None,
        fail_rev: None,
        nesting: Nesting::Fail(String::new()),
        assoc: false,
        delegate: None,
        npull: None,
    };
    let mut f: ImplItemFn = syn::parse2(g.protocol_forward())?;
    f.sig.ident = name.clone();
    Ok(quote!(#f))
}

/// Whether `func` may be a forward rule (`fn f_fwd(x: f64, dx: f64, ..) -> (f64, f64)`)
/// that forward over forward differentiates again: a free function with float, float
/// slice and constant parameters, returning a value and its tangent, or `()` with a
/// float parameter followed by its tangent. The function with the rule cannot tell
/// whether its rule is `#[differentiable]` (it only knows the rule's path): such a
/// function hands over its forward derivative on request (see [`forward_rule_offer`]),
/// which costs its other callers one thread-local read.
fn may_be_forward_rule(func: &ImplItemFn, floats: &HashSet<String>) -> Option<Vec<(Ident, Type)>> {
    if func.sig.receiver().is_some()
        || func.sig.generics.type_params().next().is_some()
        || func.sig.generics.const_params().next().is_some()
    {
        return None;
    }
    let mut params = Vec::new();
    for input in &func.sig.inputs {
        let FnArg::Typed(pt) = input else {
            return None;
        };
        let Pat::Ident(pi) = &*pt.pat else {
            return None;
        };
        if !matches!(
            shape_of(&pt.ty, floats).0,
            Shape::Scalar | Shape::Slice { .. } | Shape::Other
        ) {
            return None;
        }
        params.push((pi.ident.clone(), (*pt.ty).clone()));
    }
    let same = |a: &Type, b: &Type| quote!(#a).to_string() == quote!(#b).to_string();
    let shaped = match &func.sig.output {
        ReturnType::Default => params.windows(2).any(|w| {
            !matches!(shape_of(&w[0].1, floats).0, Shape::Other) && same(&w[0].1, &w[1].1)
        }),
        ReturnType::Type(_, t) => match &**t {
            Type::Tuple(t) if t.elems.len() == 2 => {
                matches!(shape_of(&t.elems[0], floats).0, Shape::Scalar)
                    && same(&t.elems[0], &t.elems[1])
            }
            _ => false,
        },
    };
    shaped.then_some(params)
}

/// For a `#[differentiable]` function that may be a forward rule (see
/// [`may_be_forward_rule`]): the statement that hands over its forward derivative on
/// request, first in its body, and the concrete function it hands over. That function's
/// type, `fn(x, tx, dx, tdx, ..) -> ((y, dy), (ty, tdy))`, is what the function with the
/// rule derives from its own signature ([`forward_derivative_type`]).
pub fn forward_rule_offer(func: &ImplItemFn) -> Option<(Stmt, TokenStream)> {
    let floats = float_type_params(&func.sig.generics);
    let params = may_be_forward_rule(func, &floats)?;
    let name = &func.sig.ident;
    let ret = match &func.sig.output {
        ReturnType::Default => None,
        ReturnType::Type(_, t) => Some((**t).clone()),
    };
    let (inputs, args) = concrete_parameters(&params, &floats);
    let types = forward_derivative_type(
        &params.iter().map(|(_, t)| t.clone()).collect::<Vec<_>>(),
        &floats,
        ret.as_ref(),
    );
    let r = ret.map_or(quote!(()), |t| quote!(#t));
    let offer: Stmt = syn::parse_quote! {
        ::autodiff_core::__private::offer_nested_rule::<#types>(#name::__ad_nested_fwd);
    };
    let items = quote! {
        impl #name {
            #[doc(hidden)]
            #[allow(unused, non_snake_case, clippy::all)]
            pub fn __ad_nested_fwd(#(#inputs),*) -> (#r, #r) {
                Self::__ad_fwd(#(#args,)* ())
            }
        }
    };
    Some((offer, items))
}

/// The function-pointer type of the forward derivative of a function (a forward rule, a
/// reverse rule's value), given its parameter types and its return type (`None` for
/// `()`): each parameter followed by its tangent (none for a constant), returning the
/// value and its tangent.
pub fn forward_derivative_type(
    params: &[Type],
    floats: &HashSet<String>,
    ret: Option<&Type>,
) -> TokenStream {
    let inputs = with_tangents(params, floats);
    let r = ret.map_or(quote!(()), |t| quote!(#t));
    quote!(fn(#(#inputs),*) -> (#r, #r))
}
