//! `#[custom_rule(forward = f_fwd, reverse = f_rev)]`: a user's derivative for a function.
//!
//! The rule implements the same calling protocol as a generated function (see
//! [`crate::expand`]): `__ad_fwd` calls the forward rule, `__ad_aug` calls the reverse
//! rule and hands its pullback to the caller, who keeps it until its reverse sweep and
//! passes it back to `__ad_pull`. Differentiated callers cannot tell the difference, so a
//! rule is used at every call, in every mode, whatever the caller's activities: a constant
//! argument gets a zero tangent or a scratch shadow. A mode with no rule still has its
//! protocol function, which fails to compile only where a caller needs it, naming the
//! function and the missing mode.

use crate::signature::{
    ClosureSig, Ret, Shape, closure_sig, companion_generics, float_type_params, shape_of,
};
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{FnArg, ImplItemFn, Pat, Token, Type};

struct RuleArgs {
    forward: Option<syn::Path>,
    reverse: Option<syn::Path>,
}

impl Parse for RuleArgs {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut out = RuleArgs {
            forward: None,
            reverse: None,
        };
        let items =
            syn::punctuated::Punctuated::<syn::MetaNameValue, Token![,]>::parse_terminated(input)?;
        for it in items {
            let key = it
                .path
                .get_ident()
                .map(|i| i.to_string())
                .unwrap_or_default();
            let syn::Expr::Path(p) = &it.value else {
                return Err(syn::Error::new_spanned(
                    &it.value,
                    "expected the path of the rule function",
                ));
            };
            match key.as_str() {
                "forward" if out.forward.is_none() => out.forward = Some(p.path.clone()),
                "reverse" if out.reverse.is_none() => out.reverse = Some(p.path.clone()),
                "forward" | "reverse" => {
                    return Err(syn::Error::new_spanned(
                        &it.path,
                        format!("`{key}` given twice"),
                    ));
                }
                _ => {
                    return Err(syn::Error::new_spanned(
                        &it.path,
                        "unknown key: expected `forward = path` and/or `reverse = path`",
                    ));
                }
            }
        }
        if out.forward.is_none() && out.reverse.is_none() {
            return Err(input.error(
                "expected `forward = path` and/or `reverse = path`, e.g. `#[custom_rule(reverse = f_rev)]`",
            ));
        }
        Ok(out)
    }
}

/// What a parameter of a function with a rule is, decided by its written type.
#[derive(Clone, PartialEq, Eq)]
enum Kind {
    /// A closure: the rule receives a `DiffFn`.
    Closure(ClosureSig),
    Scalar,
    /// A float slice (shadow `&mut [F]`).
    Slice {
        mutable: bool,
    },
    /// `#[duplicated]` reference to a user type (shadow of the same type).
    Struct {
        mutable: bool,
    },
    Constant,
}

struct RuleParam {
    name: Ident,
    /// `None` for `self`.
    ty: Option<Type>,
    /// The element type of a slice, the referent of a struct reference.
    inner: Option<Type>,
    kind: Kind,
    /// A float array taken by value (a constant here): the protocol functions take it by
    /// reference, as a differentiated caller lends it (see `crate::by_value_arrays`), and
    /// hand the rules and the function a copy.
    copied: bool,
}

impl RuleParam {
    /// Whether the parameter is a reference (`f: &dyn Fn(f64) -> f64`). The rule functions
    /// take such a closure by value all the same (`f: impl DiffFn<f64, f64>`): a reverse
    /// rule's pullback may keep it, which it could not do with a reference to the copy
    /// the protocol function holds.
    fn by_reference(&self) -> bool {
        matches!(self.ty, Some(Type::Reference(_)))
    }
}

pub fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    expand_in(args, item, false)
}

/// [`expand`] for an associated function (one without `self` in an `impl` block marked
/// `#[differentiable]`): its protocol functions are associated functions named after it
/// (`Type::__ad_aug_name`), as a generated associated function's are.
pub fn expand_associated(args: TokenStream, item: TokenStream) -> TokenStream {
    expand_in(args, item, true)
}

fn expand_in(args: TokenStream, item: TokenStream, associated: bool) -> TokenStream {
    let mut func: ImplItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            let err = syn::Error::new(
                Span::call_site(),
                "`#[custom_rule]` applies to functions and methods",
            )
            .to_compile_error();
            return quote!(#err #item);
        }
    };
    let markers = strip_markers(&mut func);
    if let Some(ours) = func.attrs.iter().find(|a| crate::expand::is_our_attr(a)) {
        // Ours would define the derivatives a second time: one error, and the function
        // with its rule.
        let err =
            syn::Error::new_spanned(ours, crate::expand::RULE_AND_ATTRIBUTE).to_compile_error();
        func.attrs.retain(|a| !crate::expand::is_our_attr(a));
        return match expand_rule(args, &func, &markers, associated) {
            Ok(extra) => quote!(#err #func #extra),
            Err(e) => {
                let e = e.to_compile_error();
                quote!(#err #e #func)
            }
        };
    }
    match expand_rule(args, &func, &markers, associated) {
        Ok(extra) => quote!(#func #extra),
        Err(e) => {
            let err = e.to_compile_error();
            quote!(#err #func)
        }
    }
}

#[derive(Clone, Copy, Default)]
pub(crate) struct Markers {
    constant: bool,
    duplicated: bool,
}

/// Whether `a` marks a parameter: `#[constant]` or `#[duplicated]`.
pub(crate) fn is_marker(a: &syn::Attribute) -> bool {
    a.path().is_ident("constant") || a.path().is_ident("duplicated")
}

/// Removes `#[constant]` / `#[duplicated]` from the parameters; returns them in order.
pub(crate) fn strip_markers(func: &mut ImplItemFn) -> Vec<Markers> {
    let mut out = Vec::new();
    for input in func.sig.inputs.iter_mut() {
        let attrs = match input {
            FnArg::Receiver(r) => &mut r.attrs,
            FnArg::Typed(t) => &mut t.attrs,
        };
        let mut m = Markers::default();
        attrs.retain(|a| {
            if a.path().is_ident("constant") {
                m.constant = true;
                false
            } else if a.path().is_ident("duplicated") {
                m.duplicated = true;
                false
            } else {
                true
            }
        });
        out.push(m);
    }
    out
}

fn classify(func: &ImplItemFn, markers: &[Markers]) -> syn::Result<Vec<RuleParam>> {
    let floats = float_type_params(&func.sig.generics);
    let mut out = Vec::new();
    for (input, m) in func.sig.inputs.iter().zip(markers) {
        match input {
            FnArg::Receiver(r) => {
                let kind = if m.duplicated {
                    if r.reference.is_none() {
                        return Err(syn::Error::new_spanned(
                            r,
                            "`#[duplicated]` applies to `&self` or `&mut self`",
                        ));
                    }
                    Kind::Struct {
                        mutable: r.mutability.is_some(),
                    }
                } else {
                    Kind::Constant
                };
                out.push(RuleParam {
                    name: Ident::new("self", r.self_token.span),
                    ty: None,
                    inner: None,
                    kind,
                    copied: false,
                });
            }
            FnArg::Typed(t) => {
                let name = match &*t.pat {
                    Pat::Ident(pi) => pi.ident.clone(),
                    other => {
                        return Err(syn::Error::new_spanned(
                            other,
                            "functions with rules take plain named parameters",
                        ));
                    }
                };
                let (shape, elem) = shape_of(&t.ty, &floats);
                let closure = closure_sig(&t.ty, &func.sig.generics);
                let kind = if let (Some(c), false) = (closure, m.constant) {
                    Kind::Closure(c)
                } else if m.constant {
                    Kind::Constant
                } else if m.duplicated {
                    match &*t.ty {
                        Type::Reference(r) => Kind::Struct {
                            mutable: r.mutability.is_some(),
                        },
                        other => {
                            return Err(syn::Error::new_spanned(
                                other,
                                "`#[duplicated]` applies to references",
                            ));
                        }
                    }
                } else {
                    match shape {
                        Shape::Scalar => Kind::Scalar,
                        Shape::Slice { mutable } => Kind::Slice { mutable },
                        Shape::Struct { .. } | Shape::Other | Shape::Closure(_) => Kind::Constant,
                    }
                };
                let inner = match &kind {
                    Kind::Slice { .. } => elem,
                    Kind::Struct { .. } => match &*t.ty {
                        Type::Reference(r) => Some((*r.elem).clone()),
                        _ => None,
                    },
                    _ => None,
                };
                let copied = matches!(kind, Kind::Constant)
                    && crate::by_value_arrays::is_float_array(&t.ty, &floats);
                out.push(RuleParam {
                    name,
                    ty: Some((*t.ty).clone()),
                    inner,
                    kind,
                    copied,
                });
            }
        }
    }
    Ok(out)
}

/// Gives every elided shared-reference lifetime in a type the name `'__ad`, the lifetime
/// that a reverse rule's pullback may borrow for. A `&mut` parameter keeps its own: the
/// caller uses what it points to (an output) right after the call, so a pullback cannot
/// hold it.
struct NameLifetimes;

impl VisitMut for NameLifetimes {
    fn visit_type_reference_mut(&mut self, r: &mut syn::TypeReference) {
        if r.lifetime.is_none() && r.mutability.is_none() {
            r.lifetime = Some(syn::Lifetime::new("'__ad", Span::call_site()));
        }
        syn::visit_mut::visit_type_reference_mut(self, r);
    }
}

fn named(ty: &Type) -> Type {
    let mut t = ty.clone();
    NameLifetimes.visit_type_mut(&mut t);
    t
}

fn expand_rule(
    args: TokenStream,
    func: &ImplItemFn,
    markers: &[Markers],
    associated: bool,
) -> syn::Result<TokenStream> {
    let args: RuleArgs = syn::parse2(args)?;
    let params = classify(func, markers)?;
    let sig_ret = match &func.sig.output {
        syn::ReturnType::Default => Ret::Unit,
        syn::ReturnType::Type(_, t) => match &**t {
            Type::Tuple(tt) if tt.elems.is_empty() => Ret::Unit,
            t => Ret::Ty(Box::new(t.clone())),
        },
    };
    let r = match &sig_ret {
        Ret::Unit => quote!(()),
        Ret::Ty(t) => quote!(#t),
    };
    let has_ret = matches!(sig_ret, Ret::Ty(_));
    let is_method = params.first().is_some_and(|p| p.ty.is_none());
    // An associated function: its protocol functions live in its type's `impl` block,
    // named after it as a method's are, and its pullback takes the state after the first
    // parameter (see `Gen::state_after_first`).
    let assoc = associated && !is_method;
    let in_impl = is_method || assoc;
    let fname = &func.sig.ident;
    let name_of = |mode: &str| {
        if in_impl {
            format_ident!("__ad_{}_{}", mode, fname)
        } else {
            format_ident!("__ad_{}", mode)
        }
    };
    let floats = float_type_params(&func.sig.generics);
    let closure_generics: Vec<String> = params
        .iter()
        .filter_map(|p| match &p.kind {
            Kind::Closure(c) => c.generic.clone(),
            _ => None,
        })
        .collect();
    let has_closure = params.iter().any(|p| matches!(p.kind, Kind::Closure(_)));
    let (gparams, preds) = companion_generics(&func.sig.generics, &floats, &closure_generics);
    let wh = if preds.is_empty() {
        quote!()
    } else {
        quote!(where #(#preds),*)
    };
    let receiver_decl = match func.sig.inputs.first() {
        Some(FnArg::Receiver(rc)) => {
            let m = &rc.mutability;
            Some(quote!(&#m self))
        }
        _ => None,
    };
    let shared_receiver =
        matches!(func.sig.inputs.first(), Some(FnArg::Receiver(rc)) if rc.mutability.is_none());
    let decl = |p: &RuleParam, lifetimes: bool| match (&p.ty, &p.kind) {
        // The augmented call's pullback may borrow a shared `self`, as any shared
        // reference argument.
        (None, _) if lifetimes && shared_receiver => quote!(&'__ad self),
        (None, _) => receiver_decl.clone().unwrap(),
        (Some(_), Kind::Closure(c)) => {
            let n = &p.name;
            let d = c.diff_fn();
            let life = if lifetimes { quote!(+ '__ad) } else { quote!() };
            quote!(#n: impl #d + ::core::marker::Copy #life)
        }
        (Some(t), _) => {
            let n = &p.name;
            let t = if lifetimes { named(t) } else { t.clone() };
            match (p.copied, lifetimes) {
                (true, true) => quote!(#n: &'__ad #t),
                (true, false) => quote!(#n: &#t),
                (false, _) => quote!(#n: #t),
            }
        }
    };
    // How the protocol functions hand a parameter to the rules and to the function.
    let passed = |p: &RuleParam| {
        let n = &p.name;
        if p.copied { quote!(*#n) } else { quote!(#n) }
    };
    // A mode without a rule keeps its protocol function, whose body fails to compile
    // once a named companion instantiates it (the mode marker is a generic parameter
    // that every protocol function passes on): the error names this function and the
    // missing mode, and appears only where that mode is used.
    let missing = |mode: &str| {
        let msg = format!(
            "`{fname}` has a custom rule without a {mode} rule, and differentiated code uses it in {mode} mode: add `{mode} = ..` to its `#[custom_rule]` (its body is not differentiated in place of the rule)"
        );
        let msg = crate::nested::panic_literal(&msg);
        quote! {
            struct __AdMissingRule<M>(::core::marker::PhantomData<M>);
            impl<M> __AdMissingRule<M> {
                const ERROR: () = ::core::panic!(#msg);
            }
            // Generic over the marker, which the protocol function takes as an
            // `impl Trait` (so that a call may name the user's type parameters alone,
            // `sq::<f64>(x)`): evaluated where that function is instantiated.
            fn __ad_missing<M>(_: &M) {
                let () = __AdMissingRule::<M>::ERROR;
            }
            __ad_missing(&__ad_mark);
            ::core::unreachable!()
        }
    };
    let fwd_wh = wh.clone();
    let pull_wh = wh.clone();

    // ---------------------------------------------------------------- forward
    let mut fparams = Vec::new();
    let mut convert = TokenStream::new();
    let mut rule_args = Vec::new();
    let mut rule_tys = Vec::new();
    for p in &params {
        fparams.push(decl(p, false));
        let n = &p.name;
        let t = format_ident!("__ad_t_{}", n);
        let d = format_ident!("__ad_d_{}", n);
        let s = format_ident!("__ad_s_{}", n);
        let pty =
            p.ty.as_ref()
                .map(|t| quote!(#t))
                .unwrap_or_else(|| receiver_decl.clone().unwrap_or_default());
        if p.ty.is_some() {
            rule_args.push(passed(p));
            rule_tys.push(pty.clone());
        }
        match &p.kind {
            Kind::Scalar => {
                let ty = p.ty.as_ref().unwrap();
                fparams.push(quote!(#t: impl ::autodiff_core::__private::ScalarTangent<#ty>));
                convert.extend(quote!(let #d: #ty = __ad::ScalarTangent::tangent(#t);));
                rule_args.push(quote!(#d));
                rule_tys.push(quote!(#ty));
            }
            Kind::Slice { mutable: false } => {
                let e = p.inner.as_ref().unwrap();
                fparams.push(quote!(#t: impl ::autodiff_core::__private::SliceTangent<#e>));
                convert.extend(quote!(
                    let mut #s = __ad::Scratch::new();
                    let #d: &[#e] = __ad::slice_tangent(&#t, &mut #s, #n.len());
                ));
                rule_args.push(quote!(#d));
                rule_tys.push(quote!(&[#e]));
            }
            Kind::Slice { mutable: true } => {
                let e = p.inner.as_ref().unwrap();
                fparams.push(quote!(mut #t: impl ::autodiff_core::__private::SliceShadow<#e>));
                convert.extend(quote!(
                    let mut #s = __ad::Scratch::new();
                    let #d: &mut [#e] = __ad::slice_shadow(&mut #t, &mut #s, #n.len());
                ));
                rule_args.push(quote!(#d));
                rule_tys.push(quote!(&mut [#e]));
            }
            Kind::Struct { mutable: false } => {
                let inner = p.inner.as_ref().map(|t| quote!(#t)).unwrap_or(quote!(Self));
                fparams.push(quote!(#t: impl ::autodiff_core::__private::StructShadow<#inner>));
                convert.extend(quote!(
                    let mut #s = ::core::default::Default::default();
                    let #d: &#inner = __ad::StructShadow::shadow(&#t, &*#n, &mut #s);
                ));
                rule_args.push(quote!(#d));
                rule_tys.push(quote!(&#inner));
            }
            Kind::Struct { mutable: true } => {
                let inner = p.inner.as_ref().map(|t| quote!(#t)).unwrap_or(quote!(Self));
                fparams
                    .push(quote!(mut #t: impl ::autodiff_core::__private::StructShadowMut<#inner>));
                convert.extend(quote!(
                    let mut #s = ::core::default::Default::default();
                    let #d: &mut #inner = __ad::StructShadowMut::shadow_mut(&mut #t, &*#n, &mut #s);
                ));
                rule_args.push(quote!(#d));
                rule_tys.push(quote!(&mut #inner));
            }
            Kind::Constant | Kind::Closure(_) => {
                fparams.push(quote!(#t: impl ::core::marker::Sized))
            }
        }
    }
    let mark = quote!(impl ::core::marker::Copy);
    fparams.push(quote!(__ad_mark: #mark));
    let self_arg = if is_method { quote!(self,) } else { quote!() };
    let fwd_body = match &args.forward {
        Some(rule) => {
            let sp = rule.span();
            // The rule of a function that returns `()` returns `()` too, as the forward
            // companion of such a function does (`((), ())` is taken as well).
            let rule_ret = if has_ret {
                quote_spanned!(sp=> (#r, #r))
            } else {
                quote_spanned!(sp=> _)
            };
            let check =
                quote_spanned!(sp=> let __ad_rule: fn(#(#rule_tys),*) -> #rule_ret = #rule;);
            let call = if is_method || has_closure {
                quote!(#rule(#self_arg #(#rule_args),*))
            } else {
                quote!(__ad_rule(#(#rule_args),*))
            };
            let call = if has_ret {
                call
            } else {
                quote_spanned!(sp=> __ad::unit_forward(#call))
            };
            let check = if is_method || has_closure {
                quote!()
            } else {
                check
            };
            quote!(#convert #check #call)
        }
        None => missing("forward"),
    };
    let fwd_name = name_of("fwd");

    // ---------------------------------------------------------------- reverse
    let aug_name = name_of("aug");
    let pull_name = name_of("pull");
    let mut shadow_tys = Vec::new();
    let mut adj_tys = Vec::new();
    for p in &params {
        match &p.kind {
            Kind::Slice { .. } => {
                let e = p.inner.as_ref().unwrap();
                shadow_tys.push(quote!(&mut [#e]));
            }
            Kind::Struct { .. } => {
                let inner = p.inner.as_ref().map(|t| quote!(#t)).unwrap_or(quote!(Self));
                shadow_tys.push(quote!(&mut #inner));
            }
            Kind::Scalar => {
                let t = p.ty.as_ref().unwrap();
                adj_tys.push(quote!(#t));
            }
            Kind::Constant | Kind::Closure(_) => {}
        }
    }
    let mut pb_inputs = shadow_tys.clone();
    if has_ret {
        pb_inputs.push(r.clone());
    }
    let adj_ty = match adj_tys.len() {
        0 => quote!(()),
        1 => adj_tys[0].clone(),
        _ => quote!((#(#adj_tys),*)),
    };
    let pb_bound = quote!(::core::ops::FnOnce(#(#pb_inputs),*) -> #adj_ty);
    let aug_params: Vec<TokenStream> = params.iter().map(|p| decl(p, true)).collect();
    let call_args: Vec<TokenStream> = params
        .iter()
        .filter(|p| p.ty.is_some())
        .map(passed)
        .collect();
    // The primal takes closures: a `DiffFn` is called through `call`.
    let primal_args: Vec<TokenStream> = params
        .iter()
        .filter(|p| p.ty.is_some())
        .map(|p| match &p.kind {
            Kind::Closure(c) => {
                crate::expand::diff_fn_as_closure(&p.name, c.arity(), p.by_reference())
            }
            _ => passed(p),
        })
        .collect();
    let state_ty = quote!(impl ::core::marker::Sized);
    // The pullback may borrow the shared-reference arguments (`'__ad`) but never a `&mut`
    // one: the caller reads an output right after the call, and may pass it to the next
    // rule (`double(x, &mut y); double(&y, &mut z)`). Precise capturing says so. It names
    // every generic parameter, which a method or an associated function (whose impl's
    // parameters are out of sight) and a closure parameter (an anonymous `impl DiffFn`)
    // cannot: those keep the outlives bound.
    let captures = if in_impl || has_closure {
        quote!('__ad)
    } else {
        let names = crate::signature::capturable_params(&func.sig.generics, true);
        quote!(use<'__ad #(, #names)*>)
    };
    let (aug_ret, aug_body, pull_state, pull_body_core) = match &args.reverse {
        Some(rule) => {
            let sp = rule.span();
            let prim_tys: Vec<Type> = params
                .iter()
                .filter_map(|p| p.ty.as_ref().map(named))
                .collect();
            let check = if is_method || has_closure {
                quote!()
            } else {
                quote_spanned!(sp=> let __ad_rule: fn(#(#prim_tys),*) -> (#r, _) = #rule;)
            };
            let call = if is_method {
                quote!(#rule(self, #(#call_args),*))
            } else if has_closure {
                quote!(#rule(#(#call_args),*))
            } else {
                quote!(__ad_rule(#(#call_args),*))
            };
            let ret = quote!((#r, impl #pb_bound + #captures));
            let body = quote!(#check #call);
            (ret, body, quote!(__ad_state: impl #pb_bound), None)
        }
        None => {
            let call = if is_method {
                quote!(self.#fname(#(#primal_args),*))
            } else if assoc {
                quote!(Self::#fname(#(#primal_args),*))
            } else {
                quote!(#fname(#(#primal_args),*))
            };
            (
                quote!((#r, ())),
                quote!((#call, ())),
                quote!(__ad_state: #state_ty),
                Some(missing("reverse")),
            )
        }
    };
    let mut pparams = Vec::new();
    let state_after_first = is_method || (assoc && !params.is_empty());
    if !state_after_first {
        pparams.push(pull_state.clone());
    }
    let mut pconvert = TokenStream::new();
    let mut pb_args = Vec::new();
    let mut sinks = Vec::new();
    for (i, p) in params.iter().enumerate() {
        pparams.push(decl(p, false));
        if state_after_first && i == 0 {
            pparams.push(pull_state.clone());
        }
        let n = &p.name;
        let k = format_ident!("__ad_k_{}", n);
        let b = format_ident!("__ad_b_{}", n);
        let s = format_ident!("__ad_s_{}", n);
        match &p.kind {
            Kind::Scalar => {
                let ty = p.ty.as_ref().unwrap();
                pparams.push(quote!(#k: impl ::autodiff_core::__private::ScalarSink<#ty>));
                sinks.push(k);
            }
            Kind::Slice { .. } => {
                let e = p.inner.as_ref().unwrap();
                pparams.push(quote!(mut #k: impl ::autodiff_core::__private::SliceShadow<#e>));
                pconvert.extend(quote!(
                    let mut #s = __ad::Scratch::new();
                    let #b: &mut [#e] = __ad::slice_shadow(&mut #k, &mut #s, #n.len());
                ));
                pb_args.push(quote!(#b));
            }
            Kind::Struct { .. } => {
                let inner = p.inner.as_ref().map(|t| quote!(#t)).unwrap_or(quote!(Self));
                pparams
                    .push(quote!(mut #k: impl ::autodiff_core::__private::StructShadowMut<#inner>));
                pconvert.extend(quote!(
                    let mut #s = ::core::default::Default::default();
                    let #b: &mut #inner = __ad::StructShadowMut::shadow_mut(&mut #k, &*#n, &mut #s);
                ));
                pb_args.push(quote!(#b));
            }
            Kind::Constant | Kind::Closure(_) => {
                pparams.push(quote!(#k: impl ::core::marker::Sized))
            }
        }
    }
    if has_ret {
        pparams.push(quote!(__ad_dret: impl ::autodiff_core::__private::ScalarTangent<#r>));
        pconvert.extend(quote!(let __ad_dret: #r = __ad::ScalarTangent::tangent(__ad_dret);));
        pb_args.push(quote!(__ad_dret));
    } else {
        pparams.push(quote!(__ad_dret: impl ::core::marker::Sized));
    }
    pparams.push(quote!(__ad_mark: #mark));
    let adds = match sinks.len() {
        0 => quote!(let () = __ad_adj;),
        1 => {
            let k = &sinks[0];
            quote!(__ad::ScalarSink::add(#k, __ad_adj);)
        }
        _ => {
            let idx = (0..sinks.len()).map(syn::Index::from);
            quote!(#(__ad::ScalarSink::add(#sinks, __ad_adj.#idx);)*)
        }
    };
    let pull_body = match pull_body_core {
        Some(err) => err,
        None => quote!(#pconvert let __ad_adj = __ad_state(#(#pb_args),*); #adds),
    };
    let with = |lifetime: bool| {
        let mut all: Vec<TokenStream> = Vec::new();
        if lifetime {
            all.push(quote!('__ad));
        }
        all.extend(gparams.iter().map(|p| quote!(#p)));
        if all.is_empty() {
            quote!()
        } else {
            quote!(<#(#all),*>)
        }
    };
    let aug_gens = with(true);
    let pull_gens = with(false);
    let fwd_gens = with(false);
    let items = quote! {
        #[doc(hidden)]
        #[inline]
        #[allow(unused, unused_mut, non_snake_case, clippy::all)]
        pub fn #fwd_name #fwd_gens (#(#fparams),*) -> (#r, #r) #fwd_wh {
            use ::autodiff_core::__private as __ad;
            #fwd_body
        }
        #[doc(hidden)]
        #[inline]
        #[allow(unused, unused_mut, non_snake_case, clippy::all)]
        pub fn #aug_name #aug_gens (#(#aug_params),*) -> #aug_ret #wh {
            use ::autodiff_core::__private as __ad;
            #aug_body
        }
        #[doc(hidden)]
        #[inline]
        #[allow(unused, unused_mut, non_snake_case, clippy::all)]
        pub fn #pull_name #pull_gens (#(#pparams),*) #pull_wh {
            use ::autodiff_core::__private as __ad;
            #pull_body
        }
    };
    let gl: Vec<TokenStream> = gparams.clone();
    let mut items = items;
    // Rules are differentiated again for free, non-generic functions of floats, float
    // slices and constants.
    let nestable = crate::nested::ENABLED
        && !in_impl
        && func.sig.generics.type_params().next().is_none()
        && params
            .iter()
            .all(|p| !p.copied && !matches!(p.kind, Kind::Closure(_) | Kind::Struct { .. }));
    let nested_reverse = args.reverse.as_ref().filter(|_| nestable).map(|rule| {
        forward_over_reverse_rule(
            fname,
            (rule, args.forward.is_some()),
            &params,
            &sig_ret,
            &adj_ty,
            &shadow_tys,
            &floats,
        )
    });
    let nested_forward = (args.forward.as_ref().filter(|_| nestable))
        .map(|rule| forward_over_forward_rule(fname, rule, &params, &sig_ret, &floats));
    // Only nested code calls these.
    items.extend(crate::nested::ENABLED.then(|| {
        nested_stubs(
            fname,
            (receiver_decl.clone(), assoc),
            &fparams[..fparams.len() - 1],
            &params,
            &r,
            (with(false), wh.clone()),
            (nested_reverse, nested_forward),
        )
    }));
    for (i, p) in params.iter().enumerate() {
        if let Kind::Closure(c) = &p.kind {
            items.extend(crate::closures::builders(
                i,
                c,
                in_impl.then_some(fname),
                &gl,
                &wh,
            ));
        }
    }
    if in_impl {
        return Ok(items);
    }
    let vis = &func.vis;
    let doc =
        format!(" The custom derivative rule of [`{fname}`], used by differentiated callers.");
    let lend = crate::calls::lend_fn(true);
    Ok(quote! {
        #[doc = #doc]
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #fname {}
        impl #fname {
            #items
            #lend
        }
    })
}

/// The nested protocol functions (see `crate::nested`) of a function with a rule. The
/// reverse-over-forward augmented call runs the forward rule; forward over reverse and
/// reverse over forward use the reverse rule's derivatives when given
/// (`forward_over_reverse`), forward over forward the forward rule's
/// (`forward_over_forward`, or the reason there are none); the others fail where a caller
/// instantiates them.
fn nested_stubs(
    fname: &Ident,
    (receiver, assoc): (Option<TokenStream>, bool),
    fparams: &[TokenStream],
    params: &[RuleParam],
    r: &TokenStream,
    generics: (TokenStream, TokenStream),
    (forward_over_reverse, forward_over_forward): (
        Option<TokenStream>,
        Option<Result<TokenStream, String>>,
    ),
) -> TokenStream {
    let is_method = receiver.is_some();
    let name = |outer: &str, inner: &str| {
        if is_method || assoc {
            format_ident!("__ad_{}___ad_{}_{}", outer, inner, fname)
        } else {
            format_ident!("__ad_{}___ad_{}", outer, inner)
        }
    };
    let n = params.len();
    let m = usize::from(is_method);
    let msg = format!(
        "`{fname}` has a custom rule, and a derivative companion that calls it is differentiated again: rules are not differentiated again (nested differentiation through a custom rule is not supported)"
    );
    // The parameters' declarations, among `fparams` (primal, tangent, ..).
    let primals: Vec<TokenStream> = fparams.iter().skip(2 * m).step_by(2).cloned().collect();
    let stub_with = |nm: Ident, arity: usize, ret: TokenStream, msg: &str| {
        crate::nested_calls::stub_item(
            &nm,
            (receiver.clone(), assoc && !params.is_empty()),
            primals.clone(),
            arity,
            ret,
            msg,
            generics.clone(),
        )
    };
    let stub = |nm: Ident, arity: usize, ret: TokenStream| stub_with(nm, arity, ret, &msg);
    let mut out = TokenStream::new();
    match forward_over_reverse {
        // The reverse rule differentiated, which reverse over forward uses too.
        Some(items) => out.extend(items),
        None => {
            out.extend(stub(
                name("fwd", "aug"),
                2 * n + 1 - m,
                quote!(((#r, ()), (#r, ()))),
            ));
            out.extend(stub(name("fwd", "pull"), 4 * n + 3 - m, quote!(((), ()))));
            out.extend(stub(name("pull", "fwd"), 4 * n + 3 - m, quote!(())));
        }
    }
    let fwd_fwd = |msg: &str| {
        stub_with(
            name("fwd", "fwd"),
            4 * n + 1 - m,
            quote!(((#r, #r), (#r, #r))),
            msg,
        )
    };
    out.extend(match forward_over_forward {
        Some(Ok(items)) => items,
        Some(Err(why)) => fwd_fwd(&why),
        None => fwd_fwd(&msg),
    });
    let mut args = Vec::new();
    for p in params {
        if p.ty.is_some() {
            let n = &p.name;
            args.push(quote!(#n));
        }
        let t = format_ident!("__ad_t_{}", p.name);
        args.push(quote!(#t));
    }
    let own_fwd = format_ident!("__ad_fwd_{}", fname);
    let fwd = if is_method {
        quote!(self.#own_fwd(#(#args,)* ()))
    } else if assoc {
        quote!(Self::#own_fwd(#(#args,)* ()))
    } else {
        quote!(Self::__ad_fwd(#(#args,)* ()))
    };
    let aug = name("aug", "fwd");
    let (gens, wh) = generics;
    out.extend(quote! {
        #[doc(hidden)]
        #[inline]
        #[allow(unused, unused_mut, non_snake_case, clippy::all)]
        pub fn #aug #gens (#(#fparams),*) -> ((#r, #r), ()) #wh {
            (#fwd, ())
        }
    });
    out
}

/// `__ad_fwd___ad_aug` and `__ad_fwd___ad_pull` of a function with a reverse rule: the
/// rule's value and pullback differentiated in forward mode, which a `#[differentiable]`
/// rule hands over (see `crate::rule_nesting`). With a rule that is not
/// `#[differentiable]`, they fail to compile where nested code instantiates them, naming
/// the rule and the attribute to add. A function that also has a forward rule
/// (`forward_rule`) takes its value's tangent from that rule, as the forward companion of
/// a helper that calls it does: the derivative of its value is the one its rules give,
/// whether it is called directly or through helpers.
fn forward_over_reverse_rule(
    fname: &Ident,
    (rule, forward_rule): (&syn::Path, bool),
    params: &[RuleParam],
    sig_ret: &Ret,
    adj_ty: &TokenStream,
    shadow_tys: &[TokenStream],
    floats: &crate::collections::HashSet<String>,
) -> TokenStream {
    use crate::rule_nesting::{derivative_types, tangent_type};
    let tys: Vec<Type> = params.iter().filter_map(|p| p.ty.clone()).collect();
    let shadows: Vec<Type> = shadow_tys
        .iter()
        .map(|t| syn::parse2(t.clone()).expect("a type"))
        .collect();
    let ret: Option<Type> = match sig_ret {
        Ret::Unit => None,
        Ret::Ty(t) => Some((**t).clone()),
    };
    let adj: Type = syn::parse2(adj_ty.clone()).expect("a type");
    let types = derivative_types(&tys, floats, &shadows, ret.as_ref(), &adj);
    let r = ret.as_ref().map_or(quote!(()), |t| quote!(#t));
    let rule_name = last_name(rule);
    // (A rule with a parameter that `#[differentiable]` refuses on a rule, a constant
    // behind a reference, is told so rather than sent to add it.)
    let msg = match refused_parameter(&tys, floats) {
        Some(t) => format!(
            "`{fname}` has a custom reverse rule, `{rule_name}`, and a derivative companion that calls `{fname}` is differentiated again (forward over reverse); {NESTED_RULE_PARAMS}, and `{rule_name}` takes a `{t}`: pass what it needs by value (a float or an integer) and mark `{rule_name}` `#[differentiable]`"
        ),
        None => format!(
            "`{fname}` has a custom reverse rule, `{rule_name}`, and a derivative companion that calls `{fname}` is differentiated again (forward over reverse): add `#[differentiable]` to `{rule_name}` so that the rule is differentiated too"
        ),
    };

    // Parameters: each primal with its tangent (and, for the pullback, its adjoint sink
    // and that sink's tangent), as a differentiated caller passes them.
    let mut fwd_params = Vec::new();
    let mut pull_params = Vec::new();
    let mut convert = TokenStream::new();
    let mut prims = Vec::new();
    let mut derivative_args = Vec::new();
    let mut sinks = TokenStream::new();
    let mut shadow_args = Vec::new();
    let mut scalar_sinks = Vec::new();
    // Reverse over forward (`__ad_pull___ad_fwd`): each primal, its sink, its tangent and
    // that tangent's sink, passed on to `__ad_fwd___ad_pull` with the sinks swapped (see
    // `nested_calls::reverse_over_forward`).
    let mut transposed_params = vec![quote!(__ad_state: ())];
    let mut transposed_args = Vec::new();
    // The forward rule's arguments: each primal and its tangent.
    let mut forward_args = Vec::new();
    // Array references taken as slices, converted back.
    let mut arrays = TokenStream::new();
    for p in params {
        let (n, ty) = (&p.name, p.ty.as_ref().expect("a free function"));
        let t = format_ident!("__ad_t_{}", n);
        let d = format_ident!("__ad_d_{}", n);
        let s = format_ident!("__ad_s_{}", n);
        let k = format_ident!("__ad_k_{}", n);
        let tk = format_ident!("__ad_tk_{}", n);
        let (decl, array) = nested_param(n, ty);
        arrays.extend(array);
        fwd_params.push(decl.clone());
        pull_params.push(decl.clone());
        prims.push(quote!(#n));
        derivative_args.push(quote!(#n));
        let tangent = match tangent_type(ty, floats) {
            Some(tt) => {
                let (param, conv) = match shape_of(ty, floats) {
                    (Shape::Slice { mutable: false }, Some(e)) => (
                        quote!(#t: impl ::autodiff_core::__private::SliceTangent<#e>),
                        quote!(let mut #s = __ad::Scratch::new();
                               let #d: #tt = __ad::slice_tangent(&#t, &mut #s, #n.len());),
                    ),
                    (Shape::Slice { mutable: true }, Some(e)) => (
                        quote!(mut #t: impl ::autodiff_core::__private::SliceShadow<#e>),
                        quote!(let mut #s = __ad::Scratch::new();
                               let #d: #tt = __ad::slice_shadow(&mut #t, &mut #s, #n.len());),
                    ),
                    _ => (
                        quote!(#t: impl ::autodiff_core::__private::ScalarTangent<#ty>),
                        quote!(let #d: #ty = __ad::ScalarTangent::tangent(#t);),
                    ),
                };
                convert.extend(conv);
                derivative_args.push(quote!(#d));
                param
            }
            None => quote!(#t: impl ::core::marker::Sized),
        };
        fwd_params.push(tangent.clone());
        pull_params.push(tangent.clone());
        // The type of the parameter's adjoint sink, and of that sink's tangent.
        let sink = match &p.kind {
            Kind::Scalar => quote!(impl ::autodiff_core::__private::ScalarSink<#ty>),
            Kind::Slice { .. } => {
                let e = p.inner.as_ref().expect("a slice element");
                quote!(impl ::autodiff_core::__private::SliceShadow<#e>)
            }
            _ => quote!(impl ::core::marker::Sized),
        };
        transposed_params.extend([decl, quote!(#k: #sink), tangent, quote!(#tk: #sink)]);
        transposed_args.extend([quote!(#n), quote!(#t), quote!(#tk), quote!(#k)]);
        forward_args.extend([quote!(#n), quote!(#t)]);
        match &p.kind {
            Kind::Scalar => {
                pull_params.push(quote!(#k: #sink));
                pull_params.push(quote!(#tk: #sink));
                scalar_sinks.push((k, tk));
            }
            Kind::Slice { .. } => {
                let e = p.inner.as_ref().expect("a slice element");
                let (b, tb) = (
                    format_ident!("__ad_b_{}", n),
                    format_ident!("__ad_tb_{}", n),
                );
                let (sk, stk) = (
                    format_ident!("__ad_sk_{}", n),
                    format_ident!("__ad_stk_{}", n),
                );
                pull_params.push(quote!(mut #k: #sink));
                pull_params.push(quote!(mut #tk: #sink));
                sinks.extend(quote! {
                    let mut #sk = __ad::Scratch::new();
                    let #b: &mut [#e] = __ad::slice_shadow(&mut #k, &mut #sk, #n.len());
                    let mut #stk = __ad::Scratch::new();
                    let #tb: &mut [#e] = __ad::slice_shadow(&mut #tk, &mut #stk, #n.len());
                });
                shadow_args.push(quote!(#b));
                shadow_args.push(quote!(#tb));
            }
            _ => {
                pull_params.push(quote!(#k: #sink));
                pull_params.push(quote!(#tk: #sink));
            }
        }
    }
    fwd_params.push(quote!(__ad_mark: impl ::core::marker::Copy));
    let mut seeds = Vec::new();
    match &ret {
        Some(t) => {
            pull_params.push(quote!(__ad_dret: impl ::autodiff_core::__private::ScalarTangent<#t>));
            pull_params
                .push(quote!(__ad_tdret: impl ::autodiff_core::__private::ScalarTangent<#t>));
            sinks.extend(quote! {
                let __ad_dret: #t = __ad::ScalarTangent::tangent(__ad_dret);
                let __ad_tdret: #t = __ad::ScalarTangent::tangent(__ad_tdret);
            });
            seeds.push(quote!(__ad_dret));
            seeds.push(quote!(__ad_tdret));
        }
        None => {
            pull_params.push(quote!(__ad_dret: impl ::core::marker::Sized));
            pull_params.push(quote!(__ad_tdret: impl ::core::marker::Sized));
        }
    }
    pull_params.push(quote!(__ad_mark: impl ::core::marker::Copy));
    let (seed_param, transposed_seed, seed_args) =
        crate::nested_calls::swapped_seed(ret.as_ref().map(|t| quote!(#t)));
    transposed_params.push(seed_param);
    transposed_args.extend(seed_args);
    transposed_params.push(quote!(__ad_mark: impl ::core::marker::Copy));
    transposed_args.push(quote!(__ad_mark));
    let adds = match scalar_sinks.len() {
        0 => quote!(),
        1 => {
            let (k, tk) = &scalar_sinks[0];
            quote!(__ad::ScalarSink::add(#k, __ad_adj); __ad::ScalarSink::add(#tk, __ad_dadj);)
        }
        _ => {
            let mut out = TokenStream::new();
            for (i, (k, tk)) in scalar_sinks.iter().enumerate() {
                let i = syn::Index::from(i);
                out.extend(quote! {
                    __ad::ScalarSink::add(#k, __ad_adj.#i);
                    __ad::ScalarSink::add(#tk, __ad_dadj.#i);
                });
            }
            out
        }
    };
    // The rule's derivatives, and the check (by its pullback's type) that it has them.
    // The error points at the rule's path.
    let msg = crate::nested::panic_literal(&msg);
    let error = quote_spanned!(rule.span()=> const ERROR: () = ::core::panic!(#msg););
    // The request runs the rule, which may write its `&mut` outputs (`y[0] += a * a`):
    // they are put back before the rule's derivatives run its statements again.
    let outputs: Vec<&Ident> = params
        .iter()
        .filter(|p| p.kind == Kind::Slice { mutable: true })
        .map(|p| &p.name)
        .collect();
    let kept: Vec<Ident> = outputs
        .iter()
        .map(|n| format_ident!("__ad_kept_{}", n))
        .collect();
    // (Asked once: the derivatives are kept.)
    let request = quote! {
        struct __AdNotDifferentiable<M>(::core::marker::PhantomData<M>);
        impl<M> __AdNotDifferentiable<M> {
            #error
        }
        struct __AdMissing;
        impl __ad::MissingNestedRule for __AdMissing {
            fn error<M>() {
                let () = __AdNotDifferentiable::<M>::ERROR;
            }
        }
        static __AD_DERIVATIVES: __ad::NestedRuleCache<#types> = __ad::NestedRuleCache::new();
        let (__ad_value, __ad_pullback) = __ad::cached_nested_rule(&__AD_DERIVATIVES, || {
            #(let #kept = <[_]>::to_vec(&#outputs[..]);)*
            let (__ad_ruled, __ad_derivatives) =
                __ad::request_nested_rule::<#types, _>(|| #rule(#(#prims),*), #msg);
            (&__ad::RuleProbe(&__ad_ruled.1, ::core::marker::PhantomData::<__AdMissing>))
                .check(__ad_mark);
            #(#outputs.copy_from_slice(&#kept);)*
            __ad_derivatives
        });
    };
    let value = if forward_rule {
        quote!(Self::__ad_fwd(#(#forward_args,)* __ad_mark))
    } else {
        quote!({
            #convert
            #request
            __ad_value(#(#derivative_args),*)
        })
    };
    quote! {
        #[doc(hidden)]
        #[allow(unused, unused_mut, non_snake_case, clippy::all)]
        pub fn __ad_fwd___ad_aug(#(#fwd_params),*) -> ((#r, ()), (#r, ())) {
            use ::autodiff_core::__private as __ad;
            use __ad::{NestedRuleFound as _, NestedRuleMissing as _};
            #arrays
            let (__ad_y, __ad_dy) = #value;
            ((__ad_y, ()), (__ad_dy, ()))
        }
        #[doc(hidden)]
        #[allow(unused, unused_mut, non_snake_case, clippy::all)]
        pub fn __ad_fwd___ad_pull(#(#pull_params),*) -> ((), ()) {
            use ::autodiff_core::__private as __ad;
            use __ad::{NestedRuleFound as _, NestedRuleMissing as _};
            #arrays
            #convert
            #sinks
            #request
            let (__ad_adj, __ad_dadj) =
                __ad_pullback(#(#derivative_args,)* #(#shadow_args,)* #(#seeds),*);
            #adds
            ((), ())
        }
        #[doc(hidden)]
        #[allow(unused, unused_mut, non_snake_case, clippy::all)]
        pub fn __ad_pull___ad_fwd(#(#transposed_params),*) {
            use ::autodiff_core::__private as __ad;
            #transposed_seed
            let _ = Self::__ad_fwd___ad_pull(#(#transposed_args),*);
        }
    }
}

/// `__ad_fwd___ad_fwd` of a function with a forward rule: the rule differentiated in
/// forward mode, which a `#[differentiable]` rule hands over on request (see
/// `crate::rule_nesting::forward_rule_offer`), or why it cannot be. Whether the rule is
/// `#[differentiable]` cannot be told here (its values say nothing, unlike a reverse
/// rule's pullback): without the attribute, the request panics, naming the rule and the
/// attribute to add.
fn forward_over_forward_rule(
    fname: &Ident,
    rule: &syn::Path,
    params: &[RuleParam],
    sig_ret: &Ret,
    floats: &crate::collections::HashSet<String>,
) -> Result<TokenStream, String> {
    use crate::rule_nesting::{forward_derivative_type, tangent_type};
    let rule_name = last_name(rule);
    let tys: Vec<Type> = params.iter().filter_map(|p| p.ty.clone()).collect();
    if let Some(t) = refused_parameter(&tys, floats) {
        return Err(format!(
            "`{fname}` has a custom forward rule, `{rule_name}`, and a forward companion that calls `{fname}` is differentiated again (forward over forward); {NESTED_RULE_PARAMS}, and `{rule_name}` takes a `{t}`"
        ));
    }
    // The rule's parameters: each of the function's, with a tangent for each that has one.
    let mut rule_tys: Vec<Type> = Vec::new();
    for (p, ty) in params.iter().zip(tys) {
        rule_tys.push(ty.clone());
        match (&p.kind, shape_of(&ty, floats)) {
            (Kind::Scalar, _) => rule_tys.push(ty),
            (Kind::Slice { mutable }, (_, Some(e))) => rule_tys.push(if *mutable {
                syn::parse_quote!(&mut [#e])
            } else {
                syn::parse_quote!(&[#e])
            }),
            _ => {}
        }
    }
    let ret: Option<Type> = match sig_ret {
        Ret::Unit => None,
        Ret::Ty(t) => Some(syn::parse_quote!((#t, #t))),
    };
    let types = forward_derivative_type(&rule_tys, floats, ret.as_ref());
    let missing = format!(
        "`{fname}` has a custom forward rule, `{rule_name}`, and a forward companion that calls `{fname}` is differentiated again (forward over forward): add `#[differentiable]` to `{rule_name}` so that the rule is differentiated too"
    );

    let mut decls = Vec::new();
    let mut convert = TokenStream::new();
    let mut arrays = TokenStream::new();
    let mut rule_args = Vec::new();
    // The rule's arguments with the primal's tangent `t` in place of `u`.
    let mut outer_args = Vec::new();
    let mut derivative_args = Vec::new();
    let mut outputs = Vec::new();
    for p in params {
        let (n, ty) = (&p.name, p.ty.as_ref().expect("a free function"));
        let [t, u, w] = ["t", "u", "w"].map(|k| format_ident!("__ad_{}_{}", k, n));
        let [dt, du, dw] = ["dt", "du", "dw"].map(|k| format_ident!("__ad_{}_{}", k, n));
        let (decl, array) = nested_param(n, ty);
        arrays.extend(array);
        decls.push(decl);
        rule_args.push(quote!(#n));
        derivative_args.push(quote!(#n));
        // The tangent `t` of the primal, the rule's tangent `u` and the tangent `w` of `u`
        // (the order of `nested_calls::forward_over_forward`), as the caller passes them
        // and as the rule's derivative takes them.
        let each = [(&t, &dt), (&u, &du), (&w, &dw)];
        match &p.kind {
            Kind::Scalar => {
                for (k, d) in each {
                    decls.push(quote!(#k: impl ::autodiff_core::__private::ScalarTangent<#ty>));
                    convert.extend(quote!(let #d: #ty = __ad::ScalarTangent::tangent(#k);));
                }
                rule_args.push(quote!(#du));
                outer_args.extend([quote!(#n), quote!(#dt)]);
                derivative_args.extend([quote!(#dt), quote!(#du), quote!(#dw)]);
            }
            Kind::Slice { mutable } => {
                let e = p.inner.as_ref().expect("a slice element");
                for (k, d) in each {
                    let s = format_ident!("__ad_s{}", k);
                    if *mutable {
                        decls
                            .push(quote!(mut #k: impl ::autodiff_core::__private::SliceShadow<#e>));
                        convert.extend(quote!(
                            let mut #s = __ad::Scratch::new();
                            let #d: &mut [#e] = __ad::slice_shadow(&mut #k, &mut #s, #n.len());
                        ));
                    } else {
                        decls.push(quote!(#k: impl ::autodiff_core::__private::SliceTangent<#e>));
                        convert.extend(quote!(
                            let mut #s = __ad::Scratch::new();
                            let #d: &[#e] = __ad::slice_tangent(&#k, &mut #s, #n.len());
                        ));
                    }
                }
                if *mutable {
                    // (Lent to the request, used after it.)
                    *rule_args.last_mut().expect("the primal") = quote!(&mut *#n);
                    rule_args.push(quote!(&mut *#du));
                    outputs.push((n.clone(), du.clone()));
                } else {
                    rule_args.push(quote!(#du));
                    outer_args.extend([quote!(#n), quote!(#dt)]);
                }
                derivative_args.extend([quote!(#dt), quote!(#du), quote!(#dw)]);
            }
            _ => {
                for k in [&t, &u, &w] {
                    decls.push(quote!(#k: impl ::core::marker::Sized));
                }
                rule_args.push(quote!(__ad::Zero));
                outer_args.extend([quote!(#n), quote!(__ad::Zero)]);
                // A constant of a float type has a tangent in the rule's derivative:
                // zero.
                match (tangent_type(ty, floats), shape_of(ty, floats)) {
                    (None, _) => {}
                    (Some(_), (Shape::Slice { mutable }, Some(e))) => {
                        let m = mutable.then(|| quote!(mut));
                        let z = format_ident!("__ad_zero_{}", n);
                        convert.extend(quote!(
                            let mut #z = ::std::vec![<#e as ::core::default::Default>::default(); #n.len()];
                        ));
                        derivative_args.push(quote!(&#m #z[..]));
                    }
                    (Some(tt), _) => {
                        derivative_args.push(quote!(<#tt as ::core::default::Default>::default()))
                    }
                }
            }
        }
    }
    decls.push(quote!(__ad_mark: impl ::core::marker::Copy));
    // (The function's value and tangent, and their tangents.)
    let r = ret.as_ref().map_or(quote!(((), ())), |t| quote!(#t));
    // The request runs the rule (through the forward protocol, which checks its
    // signature), which writes its `&mut` outputs and their tangents: they are put back
    // before its derivative runs it again.
    let (kept, restored): (Vec<TokenStream>, Vec<TokenStream>) = outputs
        .iter()
        .map(|(n, d)| {
            let [kn, kd] = [n, d].map(|v| format_ident!("__ad_kept_{}", v));
            (
                quote!(let #kn = <[_]>::to_vec(&#n[..]); let #kd = <[_]>::to_vec(&#d[..]);),
                quote!(#n.copy_from_slice(&#kn); #d.copy_from_slice(&#kd);),
            )
        })
        .unzip();
    let result = if ret.is_some() && outputs.is_empty() {
        // The value's derivative along `t` is the rule's tangent along `t`, as at first
        // order (and under forward over reverse), not the derivative of the value the
        // rule's code computes: they differ for a rule whose derivative is not its code's
        // (a straight-through estimator). The tangent's derivative is the rule's own.
        quote!({
            let ((__ad_y, __ad_yu), (_, __ad_yut)) = __ad_derivative(#(#derivative_args),*);
            let (_, __ad_yt) = Self::__ad_fwd(#(#outer_args,)* __ad_mark);
            ((__ad_y, __ad_yu), (__ad_yt, __ad_yut))
        })
    } else if ret.is_some() {
        quote!(__ad_derivative(#(#derivative_args),*))
    } else {
        quote!({ let ((), ()) = __ad_derivative(#(#derivative_args),*); (((), ()), ((), ())) })
    };
    Ok(quote! {
        #[doc(hidden)]
        #[allow(unused, unused_mut, non_snake_case, clippy::all)]
        pub fn __ad_fwd___ad_fwd(#(#decls),*) -> (#r, #r) {
            use ::autodiff_core::__private as __ad;
            #arrays
            #convert
            // (Asked once: the derivative is kept.)
            static __AD_DERIVATIVE: __ad::NestedRuleCache<#types> = __ad::NestedRuleCache::new();
            let __ad_derivative = __ad::cached_nested_rule(&__AD_DERIVATIVE, || {
                #(#kept)*
                let (_, __ad_derivative) = __ad::request_nested_rule::<#types, _>(
                    || Self::__ad_fwd(#(#rule_args,)* __ad_mark),
                    #missing,
                );
                #(#restored)*
                __ad_derivative
            });
            #result
        }
    })
}

/// What a rule's parameters must be for the rule to be differentiated again.
const NESTED_RULE_PARAMS: &str = "a rule is differentiated again only when its parameters are floats, float slices or constants that are not references";

/// The first of a rule's parameter types that keeps it from being differentiated again (a
/// reference to a constant, a struct), written without spaces.
fn refused_parameter(tys: &[Type], floats: &crate::collections::HashSet<String>) -> Option<String> {
    tys.iter()
        .find(|t| {
            !matches!(
                shape_of(t, floats).0,
                Shape::Scalar | Shape::Slice { .. } | Shape::Other
            )
        })
        .map(|t| quote!(#t).to_string().replace(' ', ""))
}

/// The declaration of the parameter `n: ty` in a nested protocol function, which callers
/// differentiated again pass float buffers as slices: an array reference (`&[f64; 3]`) is
/// declared as a slice, and converted back at the start of the body (the statement).
fn nested_param(n: &Ident, ty: &Type) -> (TokenStream, TokenStream) {
    if let Type::Reference(r) = ty
        && let Type::Array(a) = &*r.elem
    {
        let (e, m) = (&a.elem, &r.mutability);
        return (
            quote!(#n: &#m [#e]),
            quote!(let #n: #ty = ::core::convert::TryInto::try_into(#n)
                .expect("a buffer of the array's length");),
        );
    }
    (quote!(#n: #ty), TokenStream::new())
}

/// The last segment of a rule's path (`f_rev` of `rules::f_rev`), for messages.
fn last_name(rule: &syn::Path) -> String {
    rule.segments
        .last()
        .map(|s| s.ident.to_string())
        .unwrap_or_default()
}
