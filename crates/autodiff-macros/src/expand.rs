//! Expansion: from an annotated function to the function itself, its named companions,
//! and its calling protocol for other differentiated code.
//!
//! Every annotated free function `foo` also gets a braced struct `foo {}` (it lives in the
//! type namespace, so it does not clash with the function, and `use m::foo` imports both)
//! whose associated functions are its derivatives with every differentiable parameter
//! active: `__ad_fwd` (forward mode), `__ad_aug` (the forward sweep of reverse mode: the
//! result and a state) and `__ad_pull` (the reverse sweep, given that state). A
//! differentiated caller reaches them as `m::foo::__ad_fwd(..)`, so imports, re-exports and
//! other crates resolve by themselves. Custom rules implement the same three functions.
//! Methods get inherent companion methods `__ad_fwd_name`, `__ad_aug_name`,
//! `__ad_pull_name` instead, and associated functions without `self` associated functions
//! of those names (an `impl` block cannot hold the struct).

use crate::activity::{Activity, Mode, Spec, parse_spec};
use crate::analysis::{Analysis, analyse};
use crate::calls::Refs;
use crate::collections::HashMap;
use crate::forward::{Forward, tangent_or_zero};
use crate::ir::*;
use crate::lower::Lowerer;
use crate::reverse::Reverse;
use crate::signature::{Param, Ret, Shape, SigInfo, companion_generics};
use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use std::cell::OnceCell;
use syn::ImplItemFn;
use syn::spanned::Spanned;

/// The attribute that triggered the expansion.
pub enum Trigger {
    Companion(Mode, TokenStream),
    Differentiable,
}

const OUR_ATTRS: [&str; 3] = ["autodiff_forward", "autodiff_reverse", "differentiable"];

/// The error for a function with both a custom rule and one of our attributes.
pub(crate) const RULE_AND_ATTRIBUTE: &str = "a function with `#[custom_rule]` takes its derivatives from its rules: it needs no `#[differentiable]`, and a named companion (`#[autodiff_forward]`, `#[autodiff_reverse]`) goes on a function that calls it";

/// Whether `a` is one of `#[autodiff_forward]`, `#[autodiff_reverse]`, `#[differentiable]`.
pub(crate) fn is_our_attr(a: &syn::Attribute) -> bool {
    our_attr(a).is_some()
}

fn our_attr(a: &syn::Attribute) -> Option<String> {
    let last = a.path().segments.last()?.ident.to_string();
    OUR_ATTRS.contains(&last.as_str()).then_some(last)
}

pub fn expand(trigger: Trigger, item: TokenStream) -> TokenStream {
    let func: ImplItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            let message = match trigger {
                Trigger::Differentiable => {
                    "`#[differentiable]` applies to functions, methods, `impl` blocks, structs and enums"
                }
                _ => "autodiff attributes apply to functions and methods",
            };
            let err = syn::Error::new(Span::call_site(), message).to_compile_error();
            return quote!(#err #item);
        }
    };
    // The original item, without our attributes, is always emitted: on an error too, so
    // that the rest of the crate and the IDE keep working.
    let mut original = func.clone();
    original.attrs.retain(|a| our_attr(a).is_none());
    // A function used only through its companions is not dead code.
    original.attrs.push(syn::parse_quote!(#[allow(dead_code)]));
    // A function with a custom rule takes its derivatives from the rule, whose own
    // expansion provides them; ours would define them a second time.
    if let Some(rule) = func.attrs.iter().find(|a| {
        a.path()
            .segments
            .last()
            .is_some_and(|s| s.ident == "custom_rule")
    }) {
        let err = syn::Error::new_spanned(rule, RULE_AND_ATTRIBUTE).to_compile_error();
        return quote!(#err #original);
    }
    // `#[constant]` / `#[duplicated]` mark a custom rule's parameters; here the activities
    // say it. Removed from the original, which rustc would otherwise reject too.
    let marker = original
        .sig
        .inputs
        .iter()
        .flat_map(|input| match input {
            syn::FnArg::Receiver(r) => &r.attrs,
            syn::FnArg::Typed(pt) => &pt.attrs,
        })
        .find(|a| crate::rules::is_marker(a))
        .cloned();
    if let Some(a) = marker {
        crate::rules::strip_markers(&mut original);
        let err = syn::Error::new_spanned(
            &a,
            "`#[constant]` and `#[duplicated]` mark the parameters of a function with `#[custom_rule]`; for a companion, give the activity in the attribute (`Const`, `Duplicated`, ..)",
        )
        .to_compile_error();
        return quote!(#err #original);
    }
    match expand_fn(trigger, &func) {
        Ok((extra, offer)) => {
            if let Some(offer) = offer {
                original.block.stmts.insert(0, offer);
            }
            if std::env::var("AUTODIFF_DEBUG_EXPAND").is_ok_and(|v| func.sig.ident == v) {
                let _ = std::fs::write(
                    format!("/tmp/autodiff_{}.rs", func.sig.ident),
                    extra.to_string(),
                );
            }
            quote!(#original #extra)
        }
        Err(e) => {
            let err = e.to_compile_error();
            quote!(#err #original)
        }
    }
}

/// A result whose type is a type parameter without a `Real`/`Float` bound: not a float to
/// the macro, so no derivative could reach it.
fn unbounded_result(sig: &SigInfo) -> syn::Result<()> {
    if let Ret::Ty(ty) = &sig.ret
        && let Some(t) = sig.unbounded_type_param(ty)
    {
        return Err(syn::Error::new_spanned(
            ty,
            format!(
                "the result has type `{t}`, a type parameter without a `Real` or `Float` bound, so it is not a float and carries no derivative: add `{t}: Real`"
            ),
        ));
    }
    Ok(())
}

/// The items generated for `func`, and the statement that a function that may be a
/// forward rule runs first (see [`crate::rule_nesting::forward_rule_offer`]).
fn expand_fn(trigger: Trigger, func: &ImplItemFn) -> syn::Result<(TokenStream, Option<syn::Stmt>)> {
    let floats = crate::signature::analyse_fn(func)?.float_params;
    match crate::by_value_arrays::read_by_reference(func, &floats) {
        // Derived from the function reading its arrays through references. It offers no
        // forward derivative to a rule: the offer's type is written from the parameters
        // as the function itself takes them.
        Some((by_reference, copied)) => {
            expand_derived(trigger, &by_reference, &copied).map(|(items, _)| (items, None))
        }
        None => expand_derived(trigger, func, &[]),
    }
}

/// [`expand_fn`] of a function whose float arrays are all taken by reference; those
/// named in `copied` are taken by value by the function itself.
fn expand_derived(
    trigger: Trigger,
    func: &ImplItemFn,
    copied: &[Ident],
) -> syn::Result<(TokenStream, Option<syn::Stmt>)> {
    let mut sig_info = crate::signature::analyse_fn(func)?;
    for p in &mut sig_info.params {
        p.copied = copied.contains(&p.name);
    }
    unbounded_result(&sig_info)?;
    let mut raw_specs: Vec<(Mode, TokenStream)> = Vec::new();
    if let Trigger::Companion(mode, args) = trigger {
        raw_specs.push((mode, args));
    }
    for a in &func.attrs {
        match our_attr(a).as_deref() {
            Some("autodiff_forward") => raw_specs.push((Mode::Forward, attr_args(a)?)),
            Some("autodiff_reverse") => raw_specs.push((Mode::Reverse, attr_args(a)?)),
            _ => {}
        }
    }
    let mut errors = Vec::new();
    let mut specs = Vec::new();
    for (mode, args) in raw_specs {
        match parse_spec(mode, args, &sig_info) {
            Ok(s) => specs.push(s),
            Err(e) => errors.push(e),
        }
    }
    for (i, spec) in specs.iter().enumerate() {
        let name = &spec.name;
        if *name == func.sig.ident {
            errors.push(syn::Error::new(
                name.span(),
                format!(
                    "the companion `{name}` has the name of the function itself: give it a name of its own (`d_{name}`)"
                ),
            ));
        } else if specs[..i].iter().any(|s| s.name == *name) {
            errors.push(syn::Error::new(
                name.span(),
                format!(
                    "two companions of this function are named `{name}`: give each a name of its own"
                ),
            ));
        }
    }
    if let Some(all) = errors.into_iter().reduce(|mut all, e| {
        all.combine(e);
        all
    }) {
        return Err(all);
    }
    if let Some(a) = &func.sig.asyncness {
        return Err(syn::Error::new(
            a.span,
            "`async fn` is not supported in differentiated code",
        ));
    }
    if let Some(u) = &func.sig.unsafety {
        return Err(syn::Error::new(
            u.span,
            "`unsafe fn` is not supported in differentiated code",
        ));
    }
    let (body, kinds) = Lowerer::new(&sig_info).lower_body(&func.block, &sig_info)?;
    // The lowered code of one function, for debugging the macro.
    if std::env::var("AUTODIFF_DEBUG_IR").is_ok_and(|v| func.sig.ident == v) {
        let _ = std::fs::write(
            format!("/tmp/autodiff_ir_{}.txt", func.sig.ident),
            format!("{body:#?}"),
        );
    }
    let pattern_fail = pattern_failure(&body);
    let npull = OnceCell::new();
    let g = Gen {
        func,
        sig: &sig_info,
        body: &body,
        kinds: &kinds,
        fail_fwd: pattern_fail.clone(),
        fail_rev: pattern_fail,
        nesting: Nesting::Derive,
        assoc: is_associated(func),
        delegate: None,
        npull: Some(&npull),
    };
    // First, so that a named companion can reuse what the nested variants lowered.
    let protocol = g.protocol();
    let mut out = TokenStream::new();
    for spec in &specs {
        if spec.width > 1 {
            out.extend(g.batched_companion(spec));
            let helper = crate::nested::helper_impl(&sig_info, &func.sig.generics, spec);
            if !g.suffixed() && !helper.is_empty() {
                // The type that names the companion in `jacobian_in_chunks::<f_jvp, W>`.
                let (vis, name) = (&func.vis, &spec.name);
                out.extend(quote! {
                    #[doc(hidden)]
                    #[allow(non_camel_case_types, dead_code)]
                    #vis struct #name {}
                    #helper
                });
            }
            continue;
        }
        if let Some(e) = active_pattern_param(&body, &sig_info, spec) {
            out.extend(e.to_compile_error());
            continue;
        }
        let companion = match spec.mode {
            Mode::Forward => g.forward_companion(spec),
            Mode::Reverse => g.reverse_companion(spec),
        };
        // (A named companion of a function that returns a struct returns the struct in a
        // tuple, which its code lowered again cannot: it has no protocol of its own.)
        if !g.suffixed() && g.body.ret_shape != crate::ir::RetShape::Value {
            // The companion's own protocol and helpers live on a type named after it,
            // which only a module can hold.
            let delegate =
                crate::nested_calls::is_variant_companion(&g, spec).then(|| func.sig.ident.clone());
            out.extend(crate::nested::companion_protocol(
                &companion,
                spec.mode,
                delegate,
                npull.get(),
            ));
            out.extend(crate::nested::helper_impl(
                &sig_info,
                &func.sig.generics,
                spec,
            ));
        }
        out.extend(companion);
    }
    out.extend(protocol);
    // (Its forward derivative is `__ad_fwd`, which must then be built.)
    let offer = (crate::nested::ENABLED && g.fail_fwd.is_none() && !g.suffixed())
        .then(|| crate::rule_nesting::forward_rule_offer(func))
        .flatten()
        .map(|(offer, items)| {
            out.extend(items);
            offer
        });
    Ok((out, offer))
}

fn attr_args(a: &syn::Attribute) -> syn::Result<TokenStream> {
    match &a.meta {
        syn::Meta::List(l) => Ok(l.tokens.clone()),
        _ => Err(syn::Error::new_spanned(
            a,
            "expected arguments: the companion's name and the activities",
        )),
    }
}

pub(crate) struct Gen<'a> {
    pub func: &'a ImplItemFn,
    pub sig: &'a SigInfo,
    pub body: &'a Body,
    pub kinds: &'a HashMap<String, VarKind>,
    /// Set when this mode of the protocol cannot be built: its functions then fail to
    /// compile with this message where a caller instantiates them.
    pub fail_fwd: Option<String>,
    pub fail_rev: Option<String>,
    /// What the protocol offers to callers that are themselves differentiated again.
    pub nesting: Nesting,
    /// An associated function without `self`: its protocol functions are associated
    /// functions named after it (`Self::__ad_fwd_name`), as a method's are.
    pub assoc: bool,
    /// A named companion that is its function's all-active companion of this mode: its
    /// forward protocol (and, for a forward companion, its pullback) calls the function's
    /// nested protocol functions, which differentiate the same code (see
    /// [`crate::nested::companion_protocol`]).
    pub delegate: Option<(Ident, Mode)>,
    /// Where the nested variants keep the lowered code of the function's all-active
    /// reverse companion (`__ad_npull`), which they differentiate: a named companion with
    /// the same code (`delegate`) takes its body from there instead of lowering it again.
    pub npull: Option<&'a OnceCell<LoweredBody>>,
}

/// A lowered function body and the kinds of its locals.
pub(crate) type LoweredBody = (Body, HashMap<String, VarKind>);

/// Whether `func`, which has no `self`, is an associated function: it mentions `Self`, or
/// says so with `#[differentiable(associated)]`.
fn is_associated(func: &ImplItemFn) -> bool {
    if matches!(func.sig.inputs.first(), Some(syn::FnArg::Receiver(_))) {
        return false;
    }
    let marked = func.attrs.iter().any(|a| {
        our_attr(a).as_deref() == Some("differentiable")
            && matches!(&a.meta, syn::Meta::List(l) if l.tokens.to_string() == "associated")
    });
    let sig = &func.sig;
    let block = &func.block;
    let mut mentions_self = false;
    crate::lower::walk_idents(&quote!(#sig #block), &mut |id| {
        mentions_self |= id == "Self";
    });
    marked || mentions_self
}

/// A reverse companion's code in its parts (see [`Gen::reverse_core_parts`]).
pub(crate) struct ReverseCore {
    pub tapes: TokenStream,
    pub forward: TokenStream,
    pub primal: TokenStream,
    pub reverse: TokenStream,
}

/// The nested protocol functions of a differentiable function (see [`crate::nested`]).
pub(crate) enum Nesting {
    /// Derived from the function's own companions.
    Derive,
    /// Present, failing with this message where a caller instantiates them.
    Fail(String),
}

/// The activity of each parameter when every differentiable one is active.
pub(crate) fn all_active(p: &Param, mode: Mode) -> Activity {
    match (&p.shape, mode) {
        (Shape::Other, _) => Activity::Const,
        (_, Mode::Forward) => Activity::Dual,
        (Shape::Scalar, Mode::Reverse) => Activity::Active,
        (_, Mode::Reverse) => Activity::Duplicated,
    }
}

/// A parameter as an argument of the primal: a `DiffFn` closure is called through `call`
/// (lent by reference where the parameter is one).
pub fn closure_as_fn(p: &Param) -> TokenStream {
    let n = &p.name;
    match &p.shape {
        Shape::Closure(c) => {
            let by_reference = matches!(&p.ty, Some(syn::Type::Reference(_)));
            diff_fn_as_closure(n, c.arity(), by_reference)
        }
        _ => quote!(#n),
    }
}

/// The closure of `arity` arguments that calls the `DiffFn` named `n` through `call`, or a
/// reference to it (for a parameter such as `f: &dyn Fn(f64) -> f64`).
pub fn diff_fn_as_closure(n: &Ident, arity: usize, by_reference: bool) -> TokenStream {
    let xs: Vec<Ident> = (0..arity).map(|i| format_ident!("__ad_x{}", i)).collect();
    let packed = match xs.len() {
        1 => quote!(#(#xs)*),
        _ => quote!((#(#xs),*)),
    };
    let f = quote!(move |#(#xs),*| ::autodiff_core::DiffFn::call(&#n, #packed));
    if by_reference { quote!(&#f) } else { f }
}

pub(crate) fn ret_type(r: &Ret) -> TokenStream {
    match r {
        Ret::Unit => quote!(()),
        Ret::Ty(t) => quote!(#t),
    }
}

/// `T` for `&T` and `&mut T`; `Self` for `self`.
pub(crate) fn referent(p: &Param) -> TokenStream {
    match &p.ty {
        None => quote!(Self),
        Some(syn::Type::Reference(r)) => {
            let e = &r.elem;
            quote!(#e)
        }
        Some(t) => quote!(#t),
    }
}

/// Whether `p` is a `&mut` reference (`&mut self` included).
fn is_mut_ref(p: &Param) -> bool {
    matches!(
        p.shape,
        Shape::Slice { mutable: true } | Shape::Struct { mutable: true }
    )
}

impl Gen<'_> {
    fn analysis(&self, acts: &[Activity], mode: Mode) -> Analysis {
        let mut active = Vec::new();
        let mut frozen = Vec::new();
        let mut reads = None;
        for (p, a) in self.sig.params.iter().zip(acts) {
            if a.is_active() {
                active.push(p.name.to_string());
            } else if p.is_ref() || p.is_self() {
                // A constant shared reference cannot receive active values, nor does a
                // constant `&mut` one that the function only writes (an output whose
                // derivative the caller does not want). One that it reads back (a scratch
                // buffer) carries derivatives: it gets a scratch shadow, see
                // `inactive_param_shadows`.
                let read_back = is_mut_ref(p)
                    && reads
                        .get_or_insert_with(|| crate::analysis::block_reads(&self.body.block))
                        .contains(&p.name.to_string());
                if !read_back {
                    frozen.push(p.name.to_string());
                }
            }
        }
        analyse(self.body, &active, &frozen, mode)
    }

    /// Type parameters that name closure types: protocol functions take a `DiffFn` instead.
    pub fn closure_generics(&self) -> Vec<String> {
        self.sig
            .params
            .iter()
            .filter_map(|p| match &p.shape {
                Shape::Closure(c) => c.generic.clone(),
                _ => None,
            })
            .collect()
    }

    /// Generics with `T: Real` added for each float type parameter, without the type
    /// parameters named in `drop`.
    pub fn generics_without(&self, drop: &[String]) -> (TokenStream, TokenStream) {
        let (params, preds) =
            companion_generics(&self.func.sig.generics, &self.sig.float_params, drop);
        let gens = if params.is_empty() {
            quote!()
        } else {
            quote!(<#(#params),*>)
        };
        let wh = if preds.is_empty() {
            quote!()
        } else {
            quote!(where #(#preds),*)
        };
        (gens, wh)
    }

    /// A parameter of a protocol function: closures become `DiffFn`s.
    pub fn protocol_param_decl(&self, p: &Param) -> TokenStream {
        match &p.shape {
            Shape::Closure(c) => {
                let n = &p.name;
                let d = c.diff_fn();
                quote!(#n: impl #d + ::core::marker::Copy)
            }
            _ => self.param_decl(p),
        }
    }

    /// Whether the protocol functions are named after the function (`__ad_fwd_name`), beside
    /// it in its `impl` block: for a method or an associated function.
    pub fn suffixed(&self) -> bool {
        self.receiver().is_some() || self.assoc
    }

    /// Whether the pullback takes its state after the first parameter: a method's after
    /// `self`, and an associated function's after its first parameter too, so that a
    /// method called through its type's path (`V2::norm(&v)`) and an associated function
    /// (`V2::dist(&a, &b)`) are called alike. A free function's comes first.
    pub fn state_after_first(&self) -> bool {
        self.receiver().is_some() || (self.assoc && !self.sig.params.is_empty())
    }

    /// A call of the function's sibling `name`: `self.name(..)`, `Self::name(..)` or
    /// `name(..)`.
    fn call_sibling(&self, name: &Ident, args: &[TokenStream]) -> TokenStream {
        match (self.receiver(), self.assoc) {
            (Some(_), _) => quote!(self.#name(#(#args),*)),
            (None, true) => quote!(Self::#name(#(#args),*)),
            (None, false) => quote!(#name(#(#args),*)),
        }
    }

    pub fn receiver(&self) -> Option<&syn::Receiver> {
        match self.func.sig.inputs.first() {
            Some(syn::FnArg::Receiver(r)) => Some(r),
            _ => None,
        }
    }

    pub fn param_decl(&self, p: &Param) -> TokenStream {
        match &p.ty {
            None => {
                let r = self.receiver().expect("a receiver");
                let m = &r.mutability;
                quote!(&#m self)
            }
            Some(t) => {
                let n = &p.name;
                let m = if p.by_value_mut {
                    quote!(mut)
                } else {
                    quote!()
                };
                quote!(#m #n: #t)
            }
        }
    }

    /// Zero tangents or adjoints for constant parameters that become active: by-value
    /// ones, and `&mut` ones that the function stores active values in (a scratch buffer
    /// it reads back, a generator lent to a helper: their derivatives must flow through
    /// them, into a scratch shadow that the caller never sees). Any other constant
    /// reference that becomes active is a compile error, never a silent zero.
    fn inactive_param_shadows(&self, acts: &[Activity], an: &Analysis, mode: Mode) -> TokenStream {
        let mut out = TokenStream::new();
        for (p, a) in self.sig.params.iter().zip(acts) {
            if a.is_active() || !an.is_active(&p.name) {
                continue;
            }
            let n = &p.name;
            let d = match mode {
                Mode::Forward => tangent_name(n),
                Mode::Reverse => adjoint_name(n),
            };
            if !p.is_ref() && !p.is_self() {
                out.extend(quote!(let mut #d = __ad::zero_like(&#n);));
                continue;
            }
            match &p.shape {
                // An array's scratch shadow is held by reference, as the caller's shadow
                // of a `Duplicated` one is: the code lends it on as `&mut *shadow`.
                Shape::Slice { mutable: true }
                    if matches!(&p.ty, Some(syn::Type::Reference(r))
                        if matches!(&*r.elem, syn::Type::Array(_))) =>
                {
                    let store = format_ident!("__ad_zero_{}", n);
                    out.extend(quote! {
                        let mut #store = __ad::zero_like(#n);
                        let #d = &mut #store;
                    });
                }
                Shape::Slice { mutable: true } => out.extend(quote! {
                    let mut #d = __ad::zero_like(#n);
                }),
                // A struct (or a float) behind `&mut`, lent to a callee that may store
                // values with derivatives in it (a generator passed on to a helper): a
                // scratch shadow, a zero of its type (a struct's needs
                // `#[differentiable]` on its declaration, which the error says).
                Shape::Struct { mutable: true } | Shape::Scalar if matches!(&p.ty, Some(syn::Type::Reference(r)) if r.mutability.is_some()) =>
                {
                    let store = format_ident!("__ad_zero_{}", n);
                    let span = p.ty.as_ref().map_or(n.span(), |t| t.span());
                    out.extend(quote_spanned! {span=>
                        let mut #store = __ad::zero_like(&*#n);
                        let #d = &mut #store;
                    });
                }
                _ => {
                    let other = match mode {
                        Mode::Forward => "Dual",
                        Mode::Reverse => "Duplicated",
                    };
                    let msg = format!(
                        "`{n}` is `Const`, but the function stores values that depend on its active inputs in it and reads them back: make it `{other}` (with a scratch shadow the caller ignores)"
                    );
                    let span = p.ty.as_ref().map_or(n.span(), |t| t.span());
                    out.extend(quote_spanned!(span=> ::core::compile_error!(#msg);));
                    // The rest of the body still names the shadow: no errors about it.
                    out.extend(quote!(let #d: &mut _ = ::core::unreachable!();));
                }
            }
        }
        out
    }

    fn forward_body(&self, an: &Analysis) -> TokenStream {
        let f = Forward {
            an,
            refs: Refs { kinds: self.kinds },
            replays: if self.body.replays_marked {
                crate::forward::Replays::of(&self.body.block, &self.sig.params)
            } else {
                crate::forward::Replays::default()
            },
        };
        f.block(&self.body.block)
    }

    /// The returned value and its tangent, as expressions.
    fn forward_ret(&self, an: &Analysis) -> (TokenStream, TokenStream) {
        let ret = &self.body.ret;
        let mut prim: Vec<TokenStream> = ret.iter().map(Operand::primal).collect();
        let tans: Vec<TokenStream> = ret.iter().map(|o| tangent_or_zero(an, o)).collect();
        let shape = &self.body.ret_shape;
        if let (crate::ir::RetShape::Buffer, [o]) = (shape, ret.as_slice())
            && !o.var().is_some_and(|v| an.is_active(v))
        {
            // The zero tangent is shaped like the vector, which the value moves out.
            let p = o.primal();
            prim = vec![quote!(<[_]>::to_vec(&#p))];
        }
        (shape.assemble(&prim), shape.assemble(&tans))
    }

    /// The value and its tangent as a pair. A struct's zero tangent is built from the
    /// struct (`zero_like(&p)`), so it is computed before the struct moves into the pair.
    fn value_and_tangent(&self, prim: &TokenStream, tan: &TokenStream) -> TokenStream {
        if self.body.ret_shape == crate::ir::RetShape::Value {
            quote!({ let (__ad_t, __ad_v) = (#tan, #prim); (__ad_v, __ad_t) })
        } else {
            quote!((#prim, #tan))
        }
    }

    fn doc(&self, what: &str) -> TokenStream {
        let name = &self.func.sig.ident;
        let text = format!(" {what} of [`{name}`], generated by autodiff.");
        quote!(#[doc = #text])
    }

    // ---------------------------------------------------------------- named companions

    /// Batched forward mode, `#[autodiff_forward(df, W, ..)]`: `W` tangents per `Dual`
    /// value (`dx_0 .. dx_{W-1}`), and `[y, dy_0, ..]` for a `Dual` return. Each lane runs
    /// the single-lane companion; `&mut` arguments are restored between lanes so that
    /// every lane starts from the caller's values.
    fn batched_companion(&self, spec: &Spec) -> TokenStream {
        let w = spec.width;
        let lane_name = format_ident!("__ad_lane_{}", spec.name);
        let lane_ret = spec.ret.map(|(a, s)| match a {
            Activity::DualOnly => (Activity::Dual, s),
            a => (a, s),
        });
        let lane = self.forward_companion(&Spec {
            name: lane_name.clone(),
            width: 1,
            ret: lane_ret,
            ..spec.clone()
        });
        let mut params = Vec::new();
        let mut snaps = TokenStream::new();
        let mut restores = TokenStream::new();
        let mut lane_args: Vec<Vec<TokenStream>> = vec![Vec::new(); w];
        for (p, (a, _)) in self.sig.params.iter().zip(&spec.inputs) {
            params.push(self.protocol_param_decl(p));
            let n = &p.name;
            let mutable_ref = matches!(
                p.shape,
                Shape::Slice { mutable: true } | Shape::Struct { mutable: true }
            );
            if mutable_ref {
                let s = format_ident!("__ad_snap_{}", n);
                snaps.extend(quote!(let #s = __ad::snapshot(&*#n);));
                restores.extend(quote!(__ad::restore(&mut *#n, ::core::clone::Clone::clone(&#s));));
            }
            for (k, args) in lane_args.iter_mut().enumerate() {
                if !p.is_self() {
                    args.push(if mutable_ref {
                        quote!(&mut *#n)
                    } else {
                        quote!(::core::clone::Clone::clone(&#n))
                    });
                }
                if a.is_active() {
                    let d = format_ident!("{}_{}", tangent_name(n), k);
                    params.push(self.tangent_param_decl(p, &d));
                    args.push(quote!(#d));
                }
            }
        }
        let r = ret_type(&self.sig.ret);
        let call = |args: &[TokenStream]| self.call_sibling(&lane_name, args);
        let mut body = snaps;
        let tans: Vec<Ident> = (0..w).map(|k| format_ident!("__ad_t{}", k)).collect();
        for (k, args) in lane_args.iter().enumerate() {
            let c = call(args);
            let t = &tans[k];
            if k > 0 {
                body.extend(restores.clone());
            }
            body.extend(match (lane_ret.map(|r| r.0), k) {
                (Some(Activity::Dual), 0) => quote!(let (__ad_y, #t) = #c;),
                (Some(Activity::Dual), _) => quote!(let (_, #t) = #c;),
                (_, 0) => quote!(let __ad_y = #c;),
                _ => quote!(let _ = #c;),
            });
        }
        let (ret_ty, ret_val) = match spec.ret.map(|r| r.0) {
            Some(Activity::Dual) => {
                let n = w + 1;
                (quote!([#r; #n]), quote!([__ad_y, #(#tans),*]))
            }
            Some(Activity::DualOnly) => (quote!([#r; #w]), quote!([#(#tans),*])),
            _ => (quote!(#r), quote!(__ad_y)),
        };
        let name = &spec.name;
        let vis = &self.func.vis;
        // (A closure parameter takes a `DiffFn`, as in the protocol.)
        let (gens, wh) = self.generics_without(&self.closure_generics());
        let doc = self.doc(&format!("Batched forward-mode companion ({w} tangents)"));
        quote! {
            #[doc(hidden)]
            #lane
            #doc
            #[allow(unused, unused_mut, unused_parens, non_snake_case, clippy::all)]
            #vis fn #name #gens (#(#params),*) -> #ret_ty #wh {
                use ::autodiff_core::__private as __ad;
                #body
                #ret_val
            }
        }
    }

    /// The tangent parameter `d` of `p` in a forward companion: the type of `p`
    /// (`&Self`/`&mut Self` for a receiver).
    fn tangent_param_decl(&self, p: &Param, d: &Ident) -> TokenStream {
        let ty = match &p.ty {
            None => {
                let m = &self.receiver().unwrap().mutability;
                quote!(&#m Self)
            }
            Some(t) => quote!(#t),
        };
        let m = if p.by_value_mut {
            quote!(mut)
        } else {
            quote!()
        };
        quote!(#m #d: #ty)
    }

    pub fn forward_companion(&self, spec: &Spec) -> TokenStream {
        self.forward_companion_as(spec, None)
    }

    /// The forward companion `spec`; with `flat`, the element types of a tuple or array
    /// result, a `Dual` result is returned as one flat tuple, the elements then their
    /// tangents, so that its code, lowered again, has only scalars at its boundary.
    pub fn forward_companion_as(&self, spec: &Spec, flat: Option<&[syn::Type]>) -> TokenStream {
        let acts: Vec<Activity> = spec.inputs.iter().map(|a| a.0).collect();
        let an = self.analysis(&acts, Mode::Forward);
        let mut params = Vec::new();
        let mut reslice = TokenStream::new();
        for (p, a) in self.sig.params.iter().zip(&acts) {
            params.push(self.protocol_param_decl(p));
            if a.is_active() {
                let d = tangent_name(&p.name);
                params.push(self.tangent_param_decl(p, &d));
                let n = &p.name;
                match p.shape {
                    Shape::Slice { mutable: false } => {
                        reslice.extend(quote!(let #d = &#d[..#n.len()];));
                    }
                    Shape::Slice { mutable: true } => {
                        reslice.extend(quote!(let #d = &mut #d[..#n.len()];));
                    }
                    _ => {}
                }
            }
        }
        let body = self.forward_body(&an);
        let zeros = self.inactive_param_shadows(&acts, &an, Mode::Forward);
        let (prim, tan) = self.forward_ret(&an);
        let r = ret_type(&self.sig.ret);
        let (ret_ty, ret_val) = match (spec.ret.map(|r| r.0), flat) {
            (Some(Activity::Dual), Some(elems)) => {
                let ret = &self.body.ret;
                let prims = ret.iter().map(Operand::primal);
                let tans = ret.iter().map(|o| tangent_or_zero(&an, o));
                (
                    quote!((#(#elems,)* #(#elems,)*)),
                    quote!((#(#prims,)* #(#tans,)*)),
                )
            }
            (Some(Activity::Dual), None) => (quote!((#r, #r)), self.value_and_tangent(&prim, &tan)),
            (Some(Activity::DualOnly), _) => (quote!(#r), quote!(#tan)),
            _ => (quote!(#r), quote!(#prim)),
        };
        let name = &spec.name;
        let vis = &self.func.vis;
        // (A closure parameter takes a `DiffFn`, as in the protocol.)
        let (gens, wh) = self.generics_without(&self.closure_generics());
        let doc = self.doc("Forward-mode (tangent) companion");
        quote! {
            #doc
            #[allow(unused, unused_mut, unused_parens, non_snake_case, clippy::all)]
            #vis fn #name #gens (#(#params),*) -> #ret_ty #wh {
                use ::autodiff_core::__private as __ad;
                let __ad_mark = ();
                #reslice
                #zeros
                #body
                #ret_val
            }
        }
    }

    /// Keeps the final value of the `&mut` parameter `p` after the forward sweep
    /// (`finals`) and writes it back after the reverse sweep (`restores`), which puts
    /// back what the forward sweep overwrote. Of a struct whose body changes only members
    /// (`member_writes`), those members, so that the struct need not be `Clone`.
    fn keep_final_value(&self, p: &Param, finals: &mut TokenStream, restores: &mut TokenStream) {
        let n = &p.name;
        let members = match p.shape {
            Shape::Struct { .. } => {
                crate::member_writes::members_written(&self.func.block, &n.to_string())
            }
            _ => None,
        };
        let Some(members) = members else {
            let f = format_ident!("__ad_final_{}", n);
            finals.extend(quote!(let #f = __ad::snapshot(&*#n);));
            restores.extend(quote!(__ad::restore(&mut *#n, #f);));
            return;
        };
        for (k, m) in members.iter().enumerate() {
            let f = format_ident!("__ad_final_{}_{}", n, k);
            finals.extend(quote!(let #f = __ad::snapshot(&#n.#m);));
            restores.extend(quote!(__ad::restore(&mut #n.#m, #f);));
        }
    }

    pub fn reverse_companion(&self, spec: &Spec) -> TokenStream {
        self.reverse_companion_as(spec, None)
    }

    /// The reverse companion `spec`; with `flat`, the element types of a tuple result,
    /// it takes one seed per element (`__ad_seed_0`, ..) and returns the elements one by
    /// one before the adjoints, so that its code, lowered again, has only scalars at its
    /// boundary.
    pub fn reverse_companion_as(&self, spec: &Spec, flat: Option<&[syn::Type]>) -> TokenStream {
        let acts: Vec<Activity> = spec.inputs.iter().map(|a| a.0).collect();
        let an = self.analysis(&acts, Mode::Reverse);
        let mut params = Vec::new();
        let mut outs_ty = Vec::new();
        let mut outs_val = Vec::new();
        let mut adj_decls = TokenStream::new();
        let mut early_decls = TokenStream::new();
        let mut finals = TokenStream::new();
        let mut restores = TokenStream::new();
        let mut reslice = TokenStream::new();
        let ret_act = spec.ret.map(|r| r.0);
        let r = ret_type(&self.sig.ret);
        if !matches!(self.sig.ret, Ret::Unit) && ret_act != Some(Activity::ActiveOnly) {
            match flat {
                Some(elems) => {
                    let parts = self.body.ret_shape.parts(&quote!(__ad_primal));
                    for (t, part) in elems.iter().zip(parts) {
                        outs_ty.push(quote!(#t));
                        outs_val.push(part);
                    }
                }
                None => {
                    outs_ty.push(r.clone());
                    outs_val.push(quote!(__ad_primal));
                }
            }
        }
        for (p, a) in self.sig.params.iter().zip(&acts) {
            params.push(self.protocol_param_decl(p));
            let n = &p.name;
            let b = adjoint_name(n);
            match a {
                Activity::Duplicated => {
                    let inner = referent(p);
                    params.push(quote!(#b: &mut #inner));
                    if let Shape::Slice { .. } = p.shape {
                        // A shadow as long as its primal: the reverse loops then index
                        // both without separate bounds checks.
                        reslice.extend(quote!(let #b = &mut #b[..#n.len()];));
                    }
                    if matches!(
                        p.shape,
                        Shape::Slice { mutable: true } | Shape::Struct { mutable: true }
                    ) && an.needs(n)
                    {
                        self.keep_final_value(p, &mut finals, &mut restores);
                    }
                }
                Activity::Active => {
                    early_decls.extend(quote!(let mut #b = __ad::zero_like(&#n);));
                    let ty = p.ty.as_ref().unwrap();
                    outs_ty.push(quote!(#ty));
                    outs_val.push(quote!(#b));
                }
                // A `Const` buffer that the function writes and reads back (a scratch
                // buffer), or a `Const` struct behind `&mut` lent to a callee (a
                // generator): the reverse sweep puts back what it held before, so its
                // final contents are kept as a `Duplicated` one's.
                Activity::Const
                    if matches!(
                        p.shape,
                        Shape::Slice { mutable: true } | Shape::Struct { mutable: true }
                    ) && an.needs(n) =>
                {
                    self.keep_final_value(p, &mut finals, &mut restores);
                }
                _ => {}
            }
        }
        adj_decls.extend(self.inactive_param_shadows(&acts, &an, Mode::Reverse));
        let seed_param = matches!(ret_act, Some(Activity::Active | Activity::ActiveOnly));
        let mut seed_tuple = TokenStream::new();
        match flat {
            Some(elems) if seed_param => {
                let seeds: Vec<Ident> = (0..elems.len())
                    .map(|i| format_ident!("__ad_seed_{}", i))
                    .collect();
                params.extend(seeds.iter().zip(elems).map(|(s, t)| quote!(#s: #t)));
                let seeds: Vec<TokenStream> = seeds.iter().map(|s| quote!(#s)).collect();
                let seed = self.body.ret_shape.assemble(&seeds);
                seed_tuple = quote!(let __ad_seed = #seed;);
            }
            _ if seed_param => {
                let seed_ty = self.seed_type();
                params.push(quote!(__ad_seed: #seed_ty));
            }
            _ => {}
        }
        let core = self.reverse_core(
            Reverse::new(&an, self.kinds),
            if seed_param {
                Some(quote!(__ad_seed))
            } else {
                None
            },
            (early_decls, adj_decls),
            finals,
        );
        let (ret_ty, ret_val) = match outs_ty.len() {
            0 => (quote!(()), quote!(())),
            1 => (outs_ty[0].clone(), outs_val[0].clone()),
            _ => (quote!((#(#outs_ty),*)), quote!((#(#outs_val),*))),
        };
        let name = &spec.name;
        let vis = &self.func.vis;
        // (A closure parameter takes a `DiffFn`, as in the protocol.)
        let (gens, wh) = self.generics_without(&self.closure_generics());
        let doc = self.doc("Reverse-mode (gradient) companion");
        quote! {
            #doc
            #[allow(unused, unused_mut, unused_parens, non_snake_case, clippy::all)]
            #vis fn #name #gens (#(#params),*) -> #ret_ty #wh {
                use ::autodiff_core::__private as __ad;
                let __ad_mark = ();
                #reslice
                #seed_tuple
                #core
                #restores
                #ret_val
            }
        }
    }

    /// The type of a reverse companion's seed: the result's type, or a slice of its
    /// elements for a vector (`-> Vec<f64>` takes `dret: &[f64]`), so that the companion,
    /// differentiated again, takes the seed as it takes any buffer.
    pub(crate) fn seed_type(&self) -> TokenStream {
        match (&self.sig.ret, &self.body.ret_shape) {
            (Ret::Ty(t), crate::ir::RetShape::Buffer) => {
                match crate::signature::float_elem(t, &self.sig.float_params) {
                    Some(e) => quote!(&[#e]),
                    None => quote!(#t),
                }
            }
            // A struct's seed is taken by reference, as a struct parameter is.
            (Ret::Ty(t), crate::ir::RetShape::Value) => quote!(&#t),
            (r, _) => ret_type(r),
        }
    }

    /// Forward sweep, seed, reverse sweep. Leaves the primal result in `__ad_primal`.
    /// The adjoints of scalar parameters (`early_decls`) are declared before the forward
    /// sweep, so that a loop reversed per iteration in it can add into them (see
    /// [`crate::fused`]); the others (`adj_decls`) after it.
    fn reverse_core(
        &self,
        rev: Reverse,
        seed: Option<TokenStream>,
        (early_decls, adj_decls): (TokenStream, TokenStream),
        finals: TokenStream,
    ) -> TokenStream {
        let an = rev.an;
        let ReverseCore {
            tapes,
            forward,
            primal,
            reverse,
        } = self.reverse_core_parts(rev, seed, adj_decls);
        if let (crate::ir::RetShape::Value, [o]) = (&self.body.ret_shape, self.body.ret.as_slice())
        {
            // A returned struct moves out after the reverse sweep, which may read it. Where
            // the reverse sweep puts back older values of it, its value is copied first:
            // member by member for a struct built in the body (which need not be
            // `Clone`: floats and constants), whole for one a call returned (saved whole,
            // so `Clone`). (Both as a companion lowered again reads them.)
            let p = o.primal();
            let copied = o.var().filter(|v| writes_to(&reverse, v)).map(|v| {
                match an.structs.get(&v.to_string()) {
                    Some((path, members)) => quote!(#path { #(#members: #p.#members),* }),
                    None => quote!(__ad::snapshot_struct(&#p)),
                }
            });
            let (before, after) = match copied {
                Some(copy) => (quote!(let __ad_primal = #copy;), quote!()),
                None => (quote!(), quote!(let __ad_primal = #p;)),
            };
            return quote! {
                #early_decls
                #tapes
                #forward
                #before
                #finals
                #reverse
                #after
            };
        }
        quote! {
            #early_decls
            #tapes
            #forward
            let __ad_primal = #primal;
            #finals
            #reverse
        }
    }

    /// The parts of [`Self::reverse_core`]: the stores, the forward sweep, the primal
    /// result, and the reverse sweep from the adjoints' declarations and the seed on.
    pub fn reverse_core_parts(
        &self,
        rev: Reverse,
        seed: Option<TokenStream>,
        adj_decls: TokenStream,
    ) -> ReverseCore {
        let an = rev.an;
        let buffers = (self.sig.params.iter())
            .filter(|p| matches!(p.shape, Shape::Slice { mutable: true }))
            .map(|p| p.name.to_string());
        let rev = rev.with_mutable_buffer_params(buffers.collect());
        let fixed = (self.sig.params.iter())
            .filter(|p| keeps_its_length(p))
            .map(|p| p.name.to_string());
        let rev = rev.with_replayable(fixed.collect());
        let rev = match (&seed, self.body.ret.as_slice()) {
            (Some(s), [r]) if matches!(self.body.ret_shape, crate::ir::RetShape::Single) => {
                // Parameters whose adjoints are declared after the forward sweep.
                let mut late = crate::collections::HashSet::default();
                crate::lower::walk_idents(&adj_decls, &mut |id| {
                    if let Some(p) = id.to_string().strip_prefix("__b_") {
                        late.insert(p.to_string());
                    }
                });
                rev.with_known_seed(s.clone(), r.clone(), late)
            }
            _ => rev,
        };
        let sw = rev.sweeps(&self.body.block);
        let (tapes, fwd, back, adjoints) = (sw.tapes, sw.forward, sw.reverse, sw.adjoints);
        let ret = &self.body.ret;
        // A vector among the elements of a returned tuple (a forward companion's
        // `(value, tangent)` of a vector, differentiated again) is copied and seeded as a
        // vector, as a returned vector is.
        let tuple_vector = |o: &Operand| {
            matches!(self.body.ret_shape, crate::ir::RetShape::Tuple(_))
                && o.var()
                    .is_some_and(|v| self.kinds.get(&v.to_string()) == Some(&VarKind::Buffer))
        };
        let prim: Vec<TokenStream> = ret
            .iter()
            .map(|o| {
                let p = o.primal();
                if tuple_vector(o) {
                    quote!(<[_]>::to_vec(&#p))
                } else {
                    p
                }
            })
            .collect();
        let buffer = self.body.ret_shape == crate::ir::RetShape::Buffer;
        let value = self.body.ret_shape == crate::ir::RetShape::Value;
        let primal = match prim.as_slice() {
            // A returned vector is copied: the reverse sweep may read it.
            [p] if buffer => quote!(<[_]>::to_vec(&#p)),
            // A struct built in the body is built again from its members (floats and
            // constants: see `Lowerer::struct_members`), which the reverse sweep may read
            // (where the caller of `reverse_core_parts` keeps it in a closure); one a call
            // returned moves.
            [p] if value => match ret
                .first()
                .and_then(Operand::var)
                .map(|v| an.structs.get(&v.to_string()))
            {
                Some(Some((path, members))) => quote!(#path { #(#members: #p.#members),* }),
                _ => p.clone(),
            },
            _ => self.body.ret_shape.assemble(&prim),
        };
        let mut seeds = TokenStream::new();
        if let Some(s) = seed {
            for (o, g) in ret.iter().zip(self.body.ret_shape.parts(&s)) {
                if let Operand::Var(v) = o
                    && an.is_active(v)
                {
                    let b = adjoint_name(v);
                    seeds.extend(if buffer || tuple_vector(o) {
                        quote!(__ad::add_into(&mut #b[..], &#g[..]);)
                    } else if value {
                        quote!(__ad::StructSeed::add_to(#g, &mut #b);)
                    } else {
                        quote!(#b += #g;)
                    });
                }
            }
        }
        ReverseCore {
            tapes,
            forward: fwd,
            primal,
            reverse: quote! {
                #adj_decls
                #adjoints
                #seeds
                #back
            },
        }
    }

    // ---------------------------------------------------------------- protocol

    /// The generic parameters (as a list) and where clause of protocol functions.
    fn protocol_generic_list(&self) -> (Vec<TokenStream>, TokenStream) {
        let drop = self.closure_generics();
        let (params, _) =
            companion_generics(&self.func.sig.generics, &self.sig.float_params, &drop);
        let (_, wh) = self.generics_without(&drop);
        (params, wh)
    }

    pub fn protocol(&self) -> TokenStream {
        let mut fwd = self.protocol_forward();
        let rev = self.protocol_reverse();
        let (gl, wh) = self.protocol_generic_list();
        let method = self.receiver().map(|_| &self.func.sig.ident);
        for (i, p) in self.sig.params.iter().enumerate() {
            if let Shape::Closure(c) = &p.shape {
                fwd.extend(crate::closures::builders(i, c, method, &gl, &wh));
            }
        }
        fwd.extend(crate::nested_calls::variants(self));
        let name = &self.func.sig.ident;
        if self.suffixed() {
            return quote!(#fwd #rev);
        }
        let vis = &self.func.vis;
        let doc = format!(
            " Derivative companions of the function [`{name}`], used by differentiated callers."
        );
        let lend = crate::calls::lend_fn(false);
        quote! {
            #[doc = #doc]
            #[allow(non_camel_case_types, dead_code)]
            #vis struct #name {}
            impl #name {
                #fwd
                #rev
                #lend
            }
        }
    }

    pub fn protocol_name(&self, mode: &str) -> Ident {
        let name = &self.func.sig.ident;
        if self.suffixed() {
            format_ident!("__ad_{}_{}", mode, name)
        } else {
            format_ident!("__ad_{}", mode)
        }
    }

    /// The augmented call: the primal, and no state (the pullback recomputes).
    fn protocol_augmented(&self) -> TokenStream {
        let params: Vec<TokenStream> = self
            .sig
            .params
            .iter()
            .map(|p| self.protocol_param_decl(p))
            .collect();
        let args: Vec<TokenStream> = self
            .sig
            .params
            .iter()
            .filter(|p| !p.is_self())
            .map(|p| {
                let a = closure_as_fn(p);
                if p.copied { quote!(*#a) } else { a }
            })
            .collect();
        let call = self.call_sibling(&self.func.sig.ident, &args);
        let r = ret_type(&self.sig.ret);
        let name = self.protocol_name("aug");
        let (gens, wh) = self.generics_without(&self.closure_generics());
        quote! {
            #[doc(hidden)]
            #[inline(always)]
            #[allow(unused, non_snake_case, clippy::all)]
            pub fn #name #gens (#(#params),*) -> (#r, ()) #wh {
                (#call, ())
            }
        }
    }

    /// The generic tangent parameter `t` of `p` in a protocol function (a tangent, or
    /// `Zero`), and the statements that bind it as the concrete tangent `d` (a zeroed
    /// scratch buffer `s` stands in for a missing slice tangent).
    pub fn tangent_param(
        &self,
        p: &Param,
        t: &Ident,
        d: &Ident,
        s: &Ident,
    ) -> (TokenStream, TokenStream) {
        let n = &p.name;
        match &p.shape {
            Shape::Scalar => {
                let ty = p.ty.as_ref().unwrap();
                let m = if p.by_value_mut {
                    quote!(mut)
                } else {
                    quote!()
                };
                (
                    quote!(#t: impl ::autodiff_core::__private::ScalarTangent<#ty>),
                    quote!(let #m #d: #ty = __ad::ScalarTangent::tangent(#t);),
                )
            }
            Shape::Slice { mutable: false } => {
                let e = p.elem.as_ref().unwrap();
                (
                    quote!(#t: impl ::autodiff_core::__private::SliceTangent<#e>),
                    quote!(
                        let mut #s = __ad::Scratch::new();
                        let #d: &[#e] = &__ad::slice_tangent(&#t, &mut #s, #n.len())[..#n.len()];
                    ),
                )
            }
            Shape::Slice { mutable: true } => {
                let e = p.elem.as_ref().unwrap();
                (
                    quote!(mut #t: impl ::autodiff_core::__private::SliceShadow<#e>),
                    quote!(
                        let mut #s = __ad::Scratch::new();
                        let #d: &mut [#e] = &mut __ad::slice_shadow(&mut #t, &mut #s, #n.len())[..#n.len()];
                    ),
                )
            }
            Shape::Struct { mutable: false } => {
                let inner = referent(p);
                (
                    quote!(#t: impl ::autodiff_core::__private::StructShadow<#inner>),
                    quote!(
                        let mut #s = ::core::default::Default::default();
                        let #d: &#inner = __ad::StructShadow::shadow(&#t, &*#n, &mut #s);
                    ),
                )
            }
            Shape::Struct { mutable: true } => {
                let inner = referent(p);
                (
                    quote!(mut #t: impl ::autodiff_core::__private::StructShadowMut<#inner>),
                    quote!(
                        let mut #s = ::core::default::Default::default();
                        let #d: &mut #inner = __ad::StructShadowMut::shadow_mut(&mut #t, &*#n, &mut #s);
                    ),
                )
            }
            Shape::Other => (
                quote!(#t: impl ::autodiff_core::__private::NoDerivative),
                quote!(),
            ),
            Shape::Closure(_) => (quote!(#t: impl ::core::marker::Sized), quote!()),
        }
    }

    pub fn protocol_forward(&self) -> TokenStream {
        let acts: Vec<Activity> = self
            .sig
            .params
            .iter()
            .map(|p| all_active(p, Mode::Forward))
            .collect();
        let mut params = Vec::new();
        let mut convert = TokenStream::new();
        for p in &self.sig.params {
            params.push(self.protocol_param_decl(p));
            let n = &p.name;
            let (decl, conv) = self.tangent_param(
                p,
                &format_ident!("__ad_t_{}", n),
                &tangent_name(n),
                &format_ident!("__ad_s_{}", n),
            );
            params.push(decl);
            convert.extend(conv);
        }
        params.push(quote!(__ad_mark: impl ::core::marker::Copy));
        let r = ret_type(&self.sig.ret);
        let name = self.protocol_name("fwd");
        let (gens, wh) = self.generics_without(&self.closure_generics());
        let body = match (&self.fail_fwd, &self.delegate) {
            (Some(msg), _) => crate::nested::failure(msg),
            (None, Some((f, mode))) => {
                let variant = match mode {
                    Mode::Forward => quote!(__ad_fwd___ad_nfwd),
                    Mode::Reverse => quote!(__ad_fwd___ad_npull),
                };
                let args = self.sig.params.iter().flat_map(|p| {
                    let (n, t) = (&p.name, format_ident!("__ad_t_{}", p.name));
                    [quote!(#n), quote!(#t)]
                });
                quote!(#f::#variant(#(#args,)* __ad_mark))
            }
            (None, None) => {
                // Analysed only here: a failing or delegating protocol has no body.
                let an = self.analysis(&acts, Mode::Forward);
                let body = self.forward_body(&an);
                let (prim, tan) = self.forward_ret(&an);
                let pair = self.value_and_tangent(&prim, &tan);
                quote!(#convert #body #pair)
            }
        };
        quote! {
            #[doc(hidden)]
            #[inline]
            #[allow(unused, unused_mut, unused_parens, non_snake_case, clippy::all)]
            pub fn #name #gens (#(#params),*) -> (#r, #r) #wh {
                use ::autodiff_core::__private as __ad;
                #body
            }
        }
    }

    /// The generic adjoint sink parameter `k` of `p` in a protocol function (a shadow, or
    /// `Discard`), and the statements that bind a slice or struct sink as the concrete
    /// shadow `b` (scratch `s` when the caller has none). A scalar sink stays generic:
    /// the callee adds its adjoint into it at the end.
    pub fn sink_param(
        &self,
        p: &Param,
        k: &Ident,
        b: &Ident,
        s: &Ident,
    ) -> (TokenStream, TokenStream) {
        let n = &p.name;
        match &p.shape {
            Shape::Scalar => {
                let ty = p.ty.as_ref().unwrap();
                (
                    quote!(#k: impl ::autodiff_core::__private::ScalarSink<#ty>),
                    quote!(),
                )
            }
            Shape::Slice { .. } => {
                let e = p.elem.as_ref().unwrap();
                (
                    quote!(mut #k: impl ::autodiff_core::__private::SliceShadow<#e>),
                    quote!(
                        let mut #s = __ad::Scratch::new();
                        let #b: &mut [#e] = &mut __ad::slice_shadow(&mut #k, &mut #s, #n.len())[..#n.len()];
                    ),
                )
            }
            Shape::Struct { .. } => {
                let inner = referent(p);
                (
                    quote!(mut #k: impl ::autodiff_core::__private::StructShadowMut<#inner>),
                    quote!(
                        let mut #s = ::core::default::Default::default();
                        let #b: &mut #inner = __ad::StructShadowMut::shadow_mut(&mut #k, &*#n, &mut #s);
                    ),
                )
            }
            Shape::Other => (
                quote!(#k: impl ::autodiff_core::__private::NoDerivative),
                quote!(),
            ),
            Shape::Closure(_) => (quote!(#k: impl ::core::marker::Sized), quote!()),
        }
    }

    /// The reverse protocol of a forward companion that is `f`'s all-active one: reverse
    /// mode over `f`'s forward protocol, which `f` provides (`__ad_pull___ad_fwd`, with
    /// the same parameters: each argument of the companion and its sink, the seed, the
    /// marker; `()` for a non-differentiable parameter's tangent). `params` are the
    /// pullback's parameters without the state.
    fn protocol_reverse_delegated(&self, f: &Ident, params: &[TokenStream]) -> TokenStream {
        let name = self.protocol_name("pull");
        let (gens, wh) = self.generics_without(&self.closure_generics());
        let aug = self.protocol_augmented();
        // The companion's parameters are the function's, each followed by its tangent
        // unless it is not differentiable (`Other`): there `f`'s variant takes `()` for
        // the missing tangent and its sink.
        let args = self.sig.params.iter().flat_map(|p| {
            let (n, k) = (&p.name, format_ident!("__ad_k_{}", p.name));
            let missing = matches!(p.shape, Shape::Other).then(|| quote!((), ()));
            [quote!(#n), quote!(#k)].into_iter().chain(missing)
        });
        quote! {
            #aug
            #[doc(hidden)]
            #[inline]
            #[allow(unused, unused_mut, unused_parens, non_snake_case, clippy::all)]
            pub fn #name #gens (__ad_state: (), #(#params),*) #wh {
                #f::__ad_pull___ad_fwd(__ad_state, #(#args,)* __ad_dret, __ad_mark)
            }
        }
    }

    fn protocol_reverse(&self) -> TokenStream {
        let acts: Vec<Activity> = self
            .sig
            .params
            .iter()
            .map(|p| all_active(p, Mode::Reverse))
            .collect();
        // Analysed only where a body is built: a failing or delegating protocol has none.
        let analysis = || self.analysis(&acts, Mode::Reverse);
        let mut params = Vec::new();
        let mut convert = TokenStream::new();
        let mut scalar_decls = TokenStream::new();
        let mut sinks = TokenStream::new();
        let mut any_sink = Vec::new();
        let state_after_first = self.state_after_first();
        for (i, p) in self.sig.params.iter().enumerate() {
            params.push(self.protocol_param_decl(p));
            if i == 0 && state_after_first {
                params.push(quote!(__ad_state: ()));
            }
            let n = &p.name;
            let k = format_ident!("__ad_k_{}", n);
            let b = adjoint_name(n);
            let (decl, conv) = self.sink_param(p, &k, &b, &format_ident!("__ad_s_{}", n));
            params.push(decl);
            convert.extend(conv);
            match &p.shape {
                Shape::Scalar => {
                    any_sink.push(quote!(__ad::ScalarSink::is_active(&#k)));
                    scalar_decls.extend(quote!(let mut #b = __ad::zero_like(&#n);));
                    sinks.extend(quote!(__ad::ScalarSink::add(#k, #b);));
                }
                Shape::Slice { .. } => {
                    any_sink.push(quote!(__ad::SliceShadow::is_active(&#k)));
                }
                // A closure carries the adjoints of what it captured, whatever the
                // sinks of the other arguments.
                Shape::Struct { .. } | Shape::Closure(_) => any_sink.push(quote!(true)),
                Shape::Other => {}
            }
        }
        let r = ret_type(&self.sig.ret);
        let has_ret = !matches!(self.sig.ret, Ret::Unit);
        let seed = if has_ret && self.body.ret_shape == crate::ir::RetShape::Value {
            params.push(quote!(__ad_dret: impl ::autodiff_core::__private::StructCotangent<#r>));
            Some(quote!(__ad_dret))
        } else if has_ret {
            params.push(quote!(__ad_dret: impl ::autodiff_core::__private::ScalarTangent<#r>));
            convert.extend(quote!(let __ad_dret: #r = __ad::ScalarTangent::tangent(__ad_dret);));
            Some(quote!(__ad_dret))
        } else {
            params.push(quote!(__ad_dret: impl ::core::marker::Sized));
            None
        };
        params.push(quote!(__ad_mark: impl ::core::marker::Copy));
        if let Some((f, Mode::Forward)) = &self.delegate {
            return self.protocol_reverse_delegated(f, &params);
        }
        if crate::kept_state::applies(self) {
            return self.protocol_reverse_kept(&analysis(), &params, &convert, &any_sink);
        }
        if !state_after_first {
            params.insert(0, quote!(__ad_state: ()));
        }
        let name = self.protocol_name("pull");
        let (gens, wh) = self.generics_without(&self.closure_generics());
        let aug = self.protocol_augmented();
        let body = match &self.fail_rev {
            Some(msg) => crate::nested::failure(msg),
            None => {
                // The augmented call ran the function: this sweep runs it again.
                let an = analysis();
                let rev = Reverse::new(&an, self.kinds).recomputing();
                let core = self.reverse_core(rev, seed, (scalar_decls, quote!()), quote!());
                let skip = skip_without_adjoints(&self.body.block, &any_sink);
                quote! {
                    #skip
                    #convert
                    #core
                    #sinks
                }
            }
        };
        quote! {
            #aug
            #[doc(hidden)]
            #[inline]
            #[allow(unused, unused_mut, unused_parens, non_snake_case, clippy::all)]
            pub fn #name #gens (#(#params),*) #wh {
                use ::autodiff_core::__private as __ad;
                #body
            }
        }
    }
}

/// Whether a float-slice parameter keeps its length through the call (`&[F]`, `&mut [F]`,
/// `&Vec<F>`, `&[F; N]`, `&mut [F; N]`), as does its shadow, which every reverse entry
/// point cuts to the parameter's length (`&mut b[..x.len()]`) or creates as long as it
/// (`zero_like`): not a `&mut Vec<F>`, which may grow or shrink, nor a `mut x: &[F]`,
/// which may be rebound to another slice.
fn keeps_its_length(p: &Param) -> bool {
    let Some(syn::Type::Reference(r)) = &p.ty else {
        return false;
    };
    let growable =
        r.mutability.is_some() && !matches!(&*r.elem, syn::Type::Slice(_) | syn::Type::Array(_));
    matches!(p.shape, Shape::Slice { .. }) && !p.by_value_mut && !growable
}

/// The start of a pullback: nothing to propagate when the caller has no adjoint for any
/// argument (`any_sink`), unless `body` calls functions, whose custom rules must still
/// fire.
pub fn skip_without_adjoints(body: &Block, any_sink: &[TokenStream]) -> TokenStream {
    if calls_functions(body) {
        return quote!();
    }
    quote! {
        if !(false #(|| #any_sink)*) {
            return;
        }
    }
}

/// Why a function whose patterns bind the values of a struct parameter cannot be
/// differentiated with that parameter active (its protocol, which the function's callers
/// use, has every parameter active): the bound values carry no derivative.
pub fn pattern_failure(body: &Body) -> Option<String> {
    body.pattern_params.first().map(|(name, _)| {
        format!(
            "a pattern binds the values inside `{name}`, which then carry no derivative: \
             this function can be differentiated only with `{name}` constant (`Const` in \
             its own companions; not through calls from other differentiated code)"
        )
    })
}

/// The error of a companion in which a struct parameter whose values a pattern binds is
/// active, at the pattern.
fn active_pattern_param(body: &Body, sig: &SigInfo, spec: &Spec) -> Option<syn::Error> {
    body.pattern_params.iter().find_map(|(name, span)| {
        let k = sig.params.iter().position(|p| p.name == name)?;
        let (act, _) = spec.inputs.get(k)?;
        (*act != Activity::Const).then(|| {
            syn::Error::new(
                *span,
                format!(
                    "this pattern binds values inside `{name}`, which would carry no \
                     derivative: `{name}` must be `Const` in `{}` (its values are then \
                     constants)",
                    spec.name
                ),
            )
        })
    })
}

/// Whether the code `ts` may write the local `var`: `var.. = ..` (an assignment, not a
/// comparison) or `&mut var..`. Used on a reverse sweep, whose only writes of primal values
/// put back older ones.
fn writes_to(ts: &TokenStream, var: &Ident) -> bool {
    use proc_macro2::TokenTree;
    let tokens: Vec<TokenTree> = ts.clone().into_iter().collect();
    for (i, t) in tokens.iter().enumerate() {
        match t {
            TokenTree::Group(g) if writes_to(&g.stream(), var) => return true,
            TokenTree::Ident(id) if id == var => {
                if i > 0 && matches!(&tokens[i - 1], TokenTree::Ident(m) if m == "mut") {
                    return true;
                }
                // The place goes on through `.member` and `[index]`, up to an `=` alone.
                let mut k = i + 1;
                while k < tokens.len() {
                    match &tokens[k] {
                        TokenTree::Punct(p) if p.as_char() == '.' => k += 1,
                        TokenTree::Ident(_) | TokenTree::Literal(_) if k > i + 1 => k += 1,
                        TokenTree::Group(g) if g.delimiter() == proc_macro2::Delimiter::Bracket => {
                            k += 1
                        }
                        TokenTree::Punct(p) => {
                            let next_is_eq = matches!(
                                tokens.get(k + 1),
                                Some(TokenTree::Punct(q)) if q.as_char() == '='
                            );
                            if p.as_char() == '=' && p.spacing() == proc_macro2::Spacing::Alone {
                                return true;
                            }
                            // `+=`, `*=`, ..: compound assignments.
                            if "+-*/".contains(p.as_char()) && next_is_eq {
                                return true;
                            }
                            break;
                        }
                        _ => break,
                    }
                }
            }
            _ => {}
        }
    }
    false
}
