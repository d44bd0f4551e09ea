//! `#[differentiable]` on an `impl` block: every method of it is made differentiable as
//! the attribute on the method would make it, and on a trait implementation
//! (`impl Model for Affine`) the generated protocol methods and companions go into an
//! inherent `impl Affine` beside it, since a trait implementation may define only the
//! trait's items. Calls of such a method on a value of the concrete type
//! (`m.predict(x)` with `m: &Affine`) then find them as they find an inherent method's.
//!
//! Which methods: those that carry one of the attributes (`#[differentiable]`,
//! `#[autodiff_forward]`, `#[autodiff_reverse]`, `#[custom_rule]`), expanded here because
//! their expansion could not stay in a trait implementation; when none does, every method
//! whose result may carry a derivative, as if each carried `#[differentiable]`
//! (`#[differentiable(associated)]` for a function without `self`), and the vector
//! arithmetic of the block's own struct (see [`builds_own_struct`]).

use crate::activity::Mode;
use crate::expand::{Trigger, expand};
use proc_macro2::TokenStream;
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::{ImplItem, ImplItemFn, ItemImpl};

/// The attributes whose expansion this module runs for a method.
const METHOD_ATTRS: [&str; 4] = [
    "differentiable",
    "autodiff_forward",
    "autodiff_reverse",
    "custom_rule",
];

fn method_attr(a: &syn::Attribute) -> Option<String> {
    let last = a.path().segments.last()?.ident.to_string();
    METHOD_ATTRS.contains(&last.as_str()).then_some(last)
}

/// The expansion of `#[differentiable]` on the block `imp`.
pub fn expand_impl(imp: ItemImpl) -> TokenStream {
    let marked = imp
        .items
        .iter()
        .any(|i| matches!(i, ImplItem::Fn(f) if f.attrs.iter().any(|a| method_attr(a).is_some())));
    let mut block = imp.clone();
    block.items.clear();
    let mut generated = Vec::new();
    // A method's macro sees the method alone: the block's float type parameters
    // (`impl<T: Float> V2<T>`) are repeated in each method's `where` clause, so that a
    // method naming `T` only inside another type (`fn add(&self, o: &V2<T>) -> Self`)
    // knows it for a float too. (A bound the block has already holds: nothing changes.)
    let floats = crate::signature::float_bounds(&imp.generics);
    let operator = crate::struct_operators::operator_method(&imp);
    let mut markers = TokenStream::new();
    // The type whose inherent block takes the generated functions of a trait's block: its
    // own, or the struct on the right of a float's operator (`impl Mul<V2> for f64`).
    let mut owner = (*imp.self_ty).clone();
    for item in imp.items.clone() {
        let ImplItem::Fn(mut f) = item else {
            block.items.push(item);
            continue;
        };
        if imp.trait_.is_none() {
            own_type_returned_as_self(&mut f.sig, &imp.self_ty);
        }
        if !floats.is_empty() {
            f.sig
                .generics
                .make_where_clause()
                .predicates
                .extend(floats.iter().cloned());
        }
        if operator.is_some_and(|m| f.sig.ident == m) {
            // The operator's method stays as it is; the method added for it goes beside.
            match crate::struct_operators::added_method(&f, &imp) {
                Ok(added) => {
                    markers.extend(added.marker_impl);
                    owner = added.owner;
                    let (method, extra) = expand_with_zero_bound(added.method, false, &owner, true);
                    generated.push(ImplItem::Fn(method));
                    generated.extend(extra);
                }
                // (Beside the blocks: a float's block has no inherent block to hold it.)
                Err(e) => markers.extend(e.to_compile_error()),
            }
            block.items.push(ImplItem::Fn(f));
            continue;
        }
        // A function without `self` in the block is an associated function, which a
        // function's own attribute cannot tell (see `expand::is_associated`): marked so.
        let associated = !matches!(f.sig.inputs.first(), Some(syn::FnArg::Receiver(_)));
        if !marked && returns_floats(&f, &imp.generics, &imp.self_ty) {
            f.attrs.insert(
                0,
                if associated {
                    syn::parse_quote!(#[differentiable(associated)])
                } else {
                    syn::parse_quote!(#[differentiable])
                },
            );
        } else if associated {
            for a in &mut f.attrs {
                if method_attr(a).as_deref() == Some("differentiable")
                    && matches!(a.meta, syn::Meta::Path(_))
                {
                    *a = syn::parse_quote!(#[differentiable(associated)]);
                }
            }
        }
        if !marked && builds_own_struct(&f, &imp.self_ty) && is_arithmetic(&f, &imp) {
            let (method, extra) = expand_with_zero_bound(f, associated, &imp.self_ty, false);
            block.items.push(ImplItem::Fn(method));
            generated.extend(extra);
            continue;
        }
        let (method, extra) = expand_method(f);
        block.items.push(ImplItem::Fn(method));
        generated.extend(extra);
    }
    if imp.trait_.is_none() {
        block.items.extend(generated);
        return quote!(#block);
    }
    let (outer, moved) = split_unconstrained(&imp.generics, &owner);
    for item in &mut generated {
        if let ImplItem::Fn(f) = item {
            let g = &mut f.sig.generics;
            let at = g.lifetimes().count();
            for (k, param) in moved.params.iter().enumerate() {
                g.params.insert(at + k, param.clone());
            }
            if let Some(w) = &moved.where_clause {
                g.make_where_clause()
                    .predicates
                    .extend(w.predicates.iter().cloned());
            }
        }
    }
    let (impl_generics, _, where_clause) = outer.split_for_impl();
    // (A float's operator block whose method is refused adds nothing, and a float can
    // have no inherent block.)
    let inherent = (!generated.is_empty()).then(|| {
        quote! {
            impl #impl_generics #owner #where_clause {
                #(#generated)*
            }
        }
    });
    quote! {
        #block
        #inherent
        #markers
    }
}

/// The generics of a trait implementation split in two: those of the inherent block
/// beside it, and the type parameters that only the trait names (`impl<T: Real> Act<T>
/// for Soft`), which an inherent block could not constrain: each generated method takes
/// those as its own, with the predicates that name them.
fn split_unconstrained(g: &syn::Generics, self_ty: &syn::Type) -> (syn::Generics, syn::Generics) {
    let mut in_self = Vec::new();
    crate::lower::walk_idents(&quote!(#self_ty), &mut |id| in_self.push(id.to_string()));
    let unconstrained: Vec<String> = g
        .type_params()
        .map(|p| p.ident.to_string())
        .filter(|n| !in_self.contains(n))
        .collect();
    let names = |t: &TokenStream| {
        let mut found = false;
        crate::lower::walk_idents(t, &mut |id| {
            found |= unconstrained.contains(&id.to_string())
        });
        found
    };
    let mut outer = g.clone();
    let mut moved = syn::Generics::default();
    outer.params = syn::punctuated::Punctuated::new();
    for p in &g.params {
        match p {
            syn::GenericParam::Type(t) if unconstrained.contains(&t.ident.to_string()) => {
                moved.params.push(p.clone())
            }
            _ => outer.params.push(p.clone()),
        }
    }
    if let Some(w) = &g.where_clause {
        let (stay, go): (Vec<_>, Vec<_>) = w
            .predicates
            .iter()
            .cloned()
            .partition(|pr| !names(&quote!(#pr)));
        outer.where_clause = Some(syn::WhereClause {
            where_token: w.where_token,
            predicates: stay.into_iter().collect(),
        });
        if !go.is_empty() {
            moved.make_where_clause().predicates.extend(go);
        }
    }
    (outer, moved)
}

/// Whether a method's result may carry a derivative: nothing (a method that writes
/// through `&mut`), or a value whose type names `f32`, `f64` or a type parameter (of the
/// method or of the block), not behind a reference; `Self` counts as the block's type
/// (`-> Self` of `impl<T: Float> V2<T>`). Of the other methods of a block that marks
/// none, those that build the block's struct from floats are included by
/// [`builds_own_struct`]; the rest (`fn name(&self) -> &str`, `fn len(&self) -> usize`,
/// `fn zeros(n: usize) -> Self`) are left as written.
fn returns_floats(f: &ImplItemFn, block: &syn::Generics, self_ty: &syn::Type) -> bool {
    let ty = match &f.sig.output {
        syn::ReturnType::Default => return true,
        syn::ReturnType::Type(_, t) => t,
    };
    if matches!(**ty, syn::Type::Reference(_)) {
        return false;
    }
    let params: Vec<String> = block
        .type_params()
        .chain(f.sig.generics.type_params())
        .map(|p| p.ident.to_string())
        .collect();
    let mut floats = false;
    let mut names_self = false;
    crate::lower::walk_idents(&quote!(#ty), &mut |id| {
        let id = id.to_string();
        floats |= id == "f32" || id == "f64" || params.contains(&id);
        names_self |= id == "Self";
    });
    if names_self {
        crate::lower::walk_idents(&quote!(#self_ty), &mut |id| {
            floats |= params.contains(&id.to_string());
        });
    }
    floats || matches!(&**ty, syn::Type::Tuple(t) if t.elems.is_empty())
}

/// Whether `f` computes a value of the block's own struct from floats and values of that
/// struct (`fn new(x: f64, y: f64) -> V2`, `fn sub(&self, o: &V2) -> V2`, `fn
/// scale(&self, s: f64) -> Self`): vector arithmetic that a differentiated function calls,
/// and whose result carries derivatives when the struct holds floats, which the block
/// cannot see. Every parameter but `self` is a float (`f32`, `f64`, a type parameter) or
/// the struct itself, by value or by reference, and there is at least one input; any
/// other parameter (`n: usize`, a seed, a slice) makes a constructor whose code need not
/// be differentiable, and is left as written, as is code other than float arithmetic
/// (see [`is_arithmetic`]).
fn builds_own_struct(f: &ImplItemFn, self_ty: &syn::Type) -> bool {
    let syn::ReturnType::Type(_, ret) = &f.sig.output else {
        return false;
    };
    let own = |t: &syn::Type| match t {
        syn::Type::Reference(r) if r.mutability.is_none() => is_block_type(&r.elem, self_ty),
        t => is_block_type(t, self_ty),
    };
    let float = |t: &syn::Type| is_float_type_of(t, [&f.sig.generics]);
    !matches!(&**ret, syn::Type::Reference(_))
        && own(ret)
        && !f.sig.inputs.is_empty()
        && f.sig.inputs.iter().all(|a| match a {
            syn::FnArg::Receiver(r) => r.reference.is_some() && r.mutability.is_none(),
            syn::FnArg::Typed(t) => own(&t.ty) || float(&t.ty),
        })
}

/// Whether the code of `f`, a method of `imp`, is float arithmetic on the struct's
/// members: operators, float methods, literals, `if`, `for` over ranges, struct
/// literals, and calls of the block's own functions. Anything else (a `clone` of a
/// `String` member, a call of a free function, a macro, a closure) may be code that the
/// derivative code would not compile where the struct holds no floats, so such a method
/// is left as written (see [`builds_own_struct`]).
fn is_arithmetic(f: &ImplItemFn, imp: &ItemImpl) -> bool {
    struct Check<'a> {
        own: Vec<String>,
        /// The name of the block's type (`V2` of `V2<T>`).
        self_name: Option<&'a syn::Ident>,
        ok: bool,
    }
    impl<'ast> syn::visit::Visit<'ast> for Check<'_> {
        fn visit_expr(&mut self, e: &'ast syn::Expr) {
            self.ok &= match e {
                syn::Expr::MethodCall(m) => {
                    let name = m.method.to_string();
                    crate::builtins::math_arity(&name).is_some() || self.own.contains(&name)
                }
                syn::Expr::Call(c) => match &*c.func {
                    syn::Expr::Path(p) if p.qself.is_none() && p.path.segments.len() == 2 => {
                        let ty = &p.path.segments[0].ident;
                        let name = p.path.segments[1].ident.to_string();
                        (ty == "f64" || ty == "f32")
                            || ((ty == "Self" || Some(ty) == self.self_name)
                                && self.own.contains(&name))
                    }
                    _ => false,
                },
                // The block's own struct only: another's may need a zero of its own.
                syn::Expr::Struct(st) => {
                    let ty = st.path.segments.last().map(|s| &s.ident);
                    st.rest.is_none()
                        && st.qself.is_none()
                        && (st.path.is_ident("Self") || (ty.is_some() && ty == self.self_name))
                }
                // A local, a parameter, or a float constant (`std::f64::consts::PI`); not
                // another type's value (`Kind::Fast`), whose zero the struct's may need.
                syn::Expr::Path(p) => {
                    p.qself.is_none()
                        && (p.path.get_ident().is_some()
                            || p.path.segments.iter().any(|s| s.ident == "consts"))
                }
                syn::Expr::Lit(l) => matches!(
                    l.lit,
                    syn::Lit::Float(_) | syn::Lit::Int(_) | syn::Lit::Bool(_)
                ),
                syn::Expr::Binary(_)
                | syn::Expr::Unary(_)
                | syn::Expr::Paren(_)
                | syn::Expr::Field(_)
                | syn::Expr::Index(_)
                | syn::Expr::Array(_)
                | syn::Expr::Reference(_)
                | syn::Expr::Cast(_)
                | syn::Expr::If(_)
                | syn::Expr::Block(_)
                | syn::Expr::ForLoop(_)
                | syn::Expr::Range(_)
                | syn::Expr::Assign(_)
                | syn::Expr::Tuple(_)
                | syn::Expr::Return(_) => true,
                _ => false,
            };
            match e {
                // (Its path was read above.)
                syn::Expr::Call(c) if self.ok => {
                    for a in &c.args {
                        self.visit_expr(a);
                    }
                }
                _ if self.ok => syn::visit::visit_expr(self, e),
                _ => {}
            }
        }
        fn visit_item(&mut self, _: &'ast syn::Item) {
            self.ok = false;
        }
        fn visit_macro(&mut self, _: &'ast syn::Macro) {
            self.ok = false;
        }
    }
    let own = imp
        .items
        .iter()
        .filter_map(|i| match i {
            ImplItem::Fn(g) => Some(g.sig.ident.to_string()),
            _ => None,
        })
        .collect();
    let self_name = match &*imp.self_ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| &s.ident),
        _ => None,
    };
    let mut check = Check {
        own,
        self_name,
        ok: true,
    };
    syn::visit::Visit::visit_block(&mut check, &f.block);
    check.ok
}

/// Whether `t` is the block's own type: `Self`, or written as the block writes it.
pub fn is_block_type(t: &syn::Type, self_ty: &syn::Type) -> bool {
    matches!(t, syn::Type::Path(p) if p.qself.is_none() && p.path.is_ident("Self"))
        || quote!(#t).to_string() == quote!(#self_ty).to_string()
}

/// Writes a method's result of the block's own type (`-> V2` in `impl V2`) as `Self`, the
/// same type: a method's macro sees the method alone, and takes a name it does not know
/// for a float type (an alias, `type Scalar = f64`) where nothing else says it is a
/// struct.
pub fn own_type_returned_as_self(sig: &mut syn::Signature, self_ty: &syn::Type) {
    if let syn::ReturnType::Type(_, ret) = &mut sig.output
        && is_block_type(ret, self_ty)
    {
        let span = syn::spanned::Spanned::span(&**ret);
        **ret = syn::parse_quote_spanned!(span=> Self);
    }
}

/// Whether `t` is `f32`, `f64` or one of the type parameters of `generics`.
pub fn is_float_type_of<'a>(
    t: &syn::Type,
    generics: impl IntoIterator<Item = &'a syn::Generics>,
) -> bool {
    let params: Vec<String> = generics
        .into_iter()
        .flat_map(|g| g.type_params().map(|p| p.ident.to_string()))
        .collect();
    matches!(t, syn::Type::Path(p) if p.qself.is_none()
        && p.path.get_ident().is_some_and(|i| i == "f32" || i == "f64" || params.contains(&i.to_string())))
}

/// `f`, a method that returns the block's struct (see [`builds_own_struct`], and the
/// methods added for operators), made differentiable where the struct may or may not
/// hold floats: its derivative code is generated as for `#[differentiable]`, with the
/// struct's zero shadow (`#[differentiable]` on the struct's declaration) asked for by
/// each generated function's `where` clause, under a binder (`for<'__ad>`) so that rustc
/// checks it where a differentiated caller calls the method, with the zero shadow's own
/// message, and not where the block is declared. Where the method's code is outside the
/// differentiable language, the macro's error is kept when `report` (an operator, which
/// the block's attribute asks for by name); otherwise the method is left as written, as
/// any other method of such a block is, and a differentiated caller's call of it is
/// rustc's error.
fn expand_with_zero_bound(
    f: ImplItemFn,
    associated: bool,
    self_ty: &syn::Type,
    report: bool,
) -> (ImplItemFn, Vec<ImplItem>) {
    let mut marked = f.clone();
    marked.attrs.insert(
        0,
        if associated {
            syn::parse_quote!(#[differentiable(associated)])
        } else {
            syn::parse_quote!(#[differentiable])
        },
    );
    let (method, mut extra) = expand_method(marked);
    let mut failed = false;
    crate::lower::walk_idents(&quote!(#(#extra)*), &mut |id| {
        failed |= id == "compile_error";
    });
    if failed && !report {
        return (f, Vec::new());
    }
    for item in &mut extra {
        if let ImplItem::Fn(g) = item {
            g.sig
                .generics
                .make_where_clause()
                .predicates
                .push(syn::parse_quote!(
                    for<'__ad> #self_ty: ::autodiff_core::__private::ZeroLike<Out = #self_ty>
                        + ::autodiff_core::__private::AddInto
                ));
        }
    }
    (method, extra)
}

/// The method `f` with its attributes expanded one after the other (as rustc would, the
/// outermost first), and the items their expansions generated beside it.
fn expand_method(mut f: ImplItemFn) -> (ImplItemFn, Vec<ImplItem>) {
    let mut generated = Vec::new();
    while let Some(k) = f.attrs.iter().position(|a| method_attr(a).is_some()) {
        let attr = f.attrs.remove(k);
        let name = method_attr(&attr).unwrap_or_default();
        let args = match &attr.meta {
            syn::Meta::List(l) => l.tokens.clone(),
            _ => TokenStream::new(),
        };
        let out = match name.as_str() {
            "autodiff_forward" => expand(Trigger::Companion(Mode::Forward, args), quote!(#f)),
            "autodiff_reverse" => expand(Trigger::Companion(Mode::Reverse, args), quote!(#f)),
            "custom_rule" if !matches!(f.sig.inputs.first(), Some(syn::FnArg::Receiver(_))) => {
                crate::rules::expand_associated(args, quote!(#f))
            }
            "custom_rule" => crate::rules::expand(args, quote!(#f)),
            _ => crate::differentiable_item(args, quote!(#f)),
        };
        let items = match syn::parse2::<Items>(out.clone()) {
            Ok(Items(items)) => items,
            Err(e) => {
                // Not expected: every expansion is a list of impl items. Kept as an error
                // beside the method as written.
                let err = e.to_compile_error();
                generated.push(ImplItem::Verbatim(quote!(#err)));
                return (f, generated);
            }
        };
        let mut method = None;
        for item in items {
            match item {
                ImplItem::Fn(g) if g.sig.ident == f.sig.ident && method.is_none() => {
                    method = Some(g);
                }
                other => generated.push(other),
            }
        }
        match method {
            Some(m) => f = m,
            None => return (f, generated),
        }
    }
    (f, generated)
}

/// A sequence of impl items, as the expansion of an attribute on a method is.
struct Items(Vec<ImplItem>);

impl Parse for Items {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut items = Vec::new();
        while !input.is_empty() {
            items.push(input.parse()?);
        }
        Ok(Items(items))
    }
}
