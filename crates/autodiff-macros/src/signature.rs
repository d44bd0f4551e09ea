//! The differentiated function's signature: its parameters, what shape each has (which
//! decides its tangent and shadow), and its return type.

use crate::collections::HashSet;
use proc_macro2::Ident;
use syn::{FnArg, GenericParam, Pat, ReturnType, Signature, Type, TypeParamBound, WherePredicate};

/// The shape of a parameter as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    /// `f32`, `f64`, or a type parameter bounded by `Float`/`Real`.
    Scalar,
    /// A reference to floats: `&[F]`, `&Vec<F>`, `&[F; N]` (and their `&mut`).
    Slice { mutable: bool },
    /// A reference to any other type, `self` included: its shadow has the same type.
    Struct { mutable: bool },
    /// A closure (`impl Fn(X) -> Y`, `F: Fn(X) -> Y`, `&dyn Fn(X) -> Y`): its derivatives
    /// travel inside it, as a `DiffFn<X, Y>`.
    Closure(ClosureSig),
    /// Anything else (integers, `bool`, `&str`, by-value non-floats): never differentiated.
    Other,
}

/// The argument and result types of a closure parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClosureSig {
    pub inputs: Vec<String>,
    pub output: String,
    /// The type parameter that names the closure type, if any.
    pub generic: Option<String>,
}

impl ClosureSig {
    pub fn arity(&self) -> usize {
        self.inputs.len()
    }
    /// Whether an argument or the result is a reference (`Fn(&[f64]) -> f64`), which a
    /// `DiffFn` cannot carry.
    pub fn takes_references(&self) -> bool {
        self.inputs
            .iter()
            .chain([&self.output])
            .any(|t| t.contains('&'))
    }
    /// `DiffFn<X, Y>` for this closure.
    pub fn diff_fn(&self) -> proc_macro2::TokenStream {
        let inputs: Vec<syn::Type> = self
            .inputs
            .iter()
            .map(|t| syn::parse_str(t).expect("a type"))
            .collect();
        let x = match inputs.len() {
            1 => quote::quote!(#(#inputs)*),
            _ => quote::quote!((#(#inputs),*)),
        };
        let y: syn::Type = syn::parse_str(&self.output).expect("a type");
        quote::quote!(::autodiff_core::DiffFn<#x, #y>)
    }
}

fn fn_bound(b: &TypeParamBound) -> Option<ClosureSig> {
    let TypeParamBound::Trait(t) = b else {
        return None;
    };
    let last = t.path.segments.last()?;
    if !matches!(last.ident.to_string().as_str(), "Fn" | "FnMut" | "FnOnce") {
        return None;
    }
    let syn::PathArguments::Parenthesized(args) = &last.arguments else {
        return None;
    };
    let inputs = args
        .inputs
        .iter()
        .map(|t| quote::ToTokens::to_token_stream(t).to_string())
        .collect();
    let output = match &args.output {
        ReturnType::Default => "()".to_string(),
        ReturnType::Type(_, t) => quote::ToTokens::to_token_stream(t).to_string(),
    };
    Some(ClosureSig {
        inputs,
        output,
        generic: None,
    })
}

/// The closure signature of a parameter type, if it is a closure.
pub fn closure_sig(ty: &Type, generics: &syn::Generics) -> Option<ClosureSig> {
    match ty {
        Type::ImplTrait(i) => i.bounds.iter().find_map(fn_bound),
        Type::Reference(r) => closure_sig(&r.elem, generics),
        Type::TraitObject(o) => o.bounds.iter().find_map(fn_bound),
        Type::Paren(p) => closure_sig(&p.elem, generics),
        Type::Path(p) => {
            let id = p.path.get_ident()?;
            let from_params = generics
                .type_params()
                .filter(|tp| tp.ident == *id)
                .flat_map(|tp| tp.bounds.iter())
                .find_map(fn_bound);
            let from_where = || {
                generics.where_clause.as_ref().and_then(|w| {
                    w.predicates.iter().find_map(|pr| match pr {
                        WherePredicate::Type(pt) if matches!(&pt.bounded_ty, Type::Path(bp) if bp.path.is_ident(id)) => {
                            pt.bounds.iter().find_map(fn_bound)
                        }
                        _ => None,
                    })
                })
            };
            let mut sig = from_params.or_else(from_where)?;
            sig.generic = Some(id.to_string());
            Some(sig)
        }
        _ => None,
    }
}

#[derive(Clone, Debug)]
pub struct Param {
    pub name: Ident,
    /// `None` for `self`.
    pub ty: Option<Type>,
    pub shape: Shape,
    /// The element type of a `Slice`.
    pub elem: Option<Type>,
    /// `mut x: f64`
    pub by_value_mut: bool,
    /// A float array that the function takes by value and its derivative code reads
    /// through a reference (see `crate::by_value_arrays`): the function itself is called
    /// with `*name`.
    pub copied: bool,
}

impl Param {
    pub fn is_self(&self) -> bool {
        self.ty.is_none()
    }
    pub fn is_ref(&self) -> bool {
        matches!(self.shape, Shape::Slice { .. } | Shape::Struct { .. })
    }
}

#[derive(Clone, Debug)]
pub enum Ret {
    Unit,
    Ty(Box<Type>),
}

#[derive(Clone, Debug)]
pub struct SigInfo {
    pub params: Vec<Param>,
    pub ret: Ret,
    /// Names of the type parameters that are floats.
    pub float_params: HashSet<String>,
    /// Names of the other type parameters (for the hint of an activity error).
    pub other_type_params: HashSet<String>,
}

impl SigInfo {
    /// The type parameter that `ty` is, where it is one without a `Real`/`Float` bound
    /// (not a float to the macro, though the user may have meant one).
    pub fn unbounded_type_param<'t>(&self, ty: &'t Type) -> Option<&'t Ident> {
        match ty {
            Type::Path(tp) if tp.qself.is_none() => tp
                .path
                .get_ident()
                .filter(|t| self.other_type_params.contains(&t.to_string())),
            _ => None,
        }
    }
}

fn bound_is_float(b: &TypeParamBound) -> bool {
    if let TypeParamBound::Trait(t) = b
        && let Some(last) = t.path.segments.last()
    {
        return last.ident == "Float" || last.ident == "Real";
    }
    false
}

/// `T: Float` (or `T: Real`, as written) for each type parameter of `generics` bounded
/// so, in its list or its `where` clause.
pub fn float_bounds(generics: &syn::Generics) -> Vec<WherePredicate> {
    let mut out = Vec::new();
    for p in &generics.params {
        if let GenericParam::Type(t) = p
            && let Some(b) = t.bounds.iter().find(|b| bound_is_float(b))
        {
            let id = &t.ident;
            out.push(syn::parse_quote!(#id: #b));
        }
    }
    if let Some(w) = &generics.where_clause {
        for pred in &w.predicates {
            if let WherePredicate::Type(pt) = pred
                && pt.bounds.iter().any(bound_is_float)
            {
                out.push(pred.clone());
            }
        }
    }
    out
}

/// The type parameters bounded by `Float` (from `num_traits`) or `Real`.
pub fn float_type_params(generics: &syn::Generics) -> HashSet<String> {
    let mut out = HashSet::default();
    for p in &generics.params {
        if let GenericParam::Type(t) = p
            && t.bounds.iter().any(bound_is_float)
        {
            out.insert(t.ident.to_string());
        }
    }
    if let Some(w) = &generics.where_clause {
        for pred in &w.predicates {
            if let WherePredicate::Type(pt) = pred
                && let Type::Path(tp) = &pt.bounded_ty
                && let Some(id) = tp.path.get_ident()
                && pt.bounds.iter().any(bound_is_float)
            {
                out.insert(id.to_string());
            }
        }
    }
    out
}

/// The names of the generic parameters that an `impl Trait + use<..>` result must list:
/// the type and constant parameters, and the lifetimes too with `lifetimes`.
pub fn capturable_params(
    generics: &syn::Generics,
    lifetimes: bool,
) -> Vec<proc_macro2::TokenStream> {
    use quote::ToTokens;
    generics
        .params
        .iter()
        .filter_map(|p| match p {
            GenericParam::Type(t) => Some(t.ident.to_token_stream()),
            GenericParam::Const(c) => Some(c.ident.to_token_stream()),
            GenericParam::Lifetime(l) => lifetimes.then(|| l.lifetime.to_token_stream()),
        })
        .collect()
}

/// The names of the function's own type and constant parameters.
fn declared_params(sig: &Signature) -> HashSet<String> {
    sig.generics
        .params
        .iter()
        .filter_map(|p| match p {
            GenericParam::Type(t) => Some(t.ident.to_string()),
            GenericParam::Const(c) => Some(c.ident.to_string()),
            GenericParam::Lifetime(_) => None,
        })
        .collect()
}

/// Float types that the function does not declare, named by its return type (alone or
/// in a tuple): the type parameter of a generic `impl<T: Float> Model<T>` that a method
/// returns, or an alias such as `type Scalar = f64`. A differentiated function returns
/// floats, so such a name is one; its companions then bound it by `Real` themselves.
fn floats_named_by_return(sig: &Signature) -> Vec<String> {
    let ReturnType::Type(_, ty) = &sig.output else {
        return Vec::new();
    };
    let declared = declared_params(sig);
    let named = |t: &Type| match t {
        Type::Path(tp) if tp.qself.is_none() => tp.path.get_ident().map(|i| i.to_string()),
        _ => None,
    };
    let elems: Vec<&Type> = match &**ty {
        Type::Tuple(t) => t.elems.iter().collect(),
        t => vec![t],
    };
    elems
        .into_iter()
        .filter_map(named)
        .filter(|n| !declared.contains(n) && !is_builtin_type_name(n))
        .collect()
}

/// Type parameters of the enclosing `impl` that a method takes by value, named by one
/// capital letter (`fn new(a: T, b: T) -> Self` in `impl<T: Real> P<T>`): a method's
/// macro does not see the `impl`'s bounds, and a value of a type parameter that a
/// differentiated function takes is a float (a struct is taken by reference).
fn impl_params_taken_by_value(sig: &Signature) -> Vec<String> {
    let declared = declared_params(sig);
    sig.inputs
        .iter()
        .filter_map(|a| match a {
            FnArg::Typed(pt) => match &*pt.ty {
                Type::Path(tp) if tp.qself.is_none() => tp.path.get_ident().map(Ident::to_string),
                _ => None,
            },
            FnArg::Receiver(_) => None,
        })
        .filter(|n| n.len() == 1 && n.starts_with(char::is_uppercase) && !declared.contains(n))
        .collect()
}

fn is_builtin_type_name(n: &str) -> bool {
    matches!(n, "f32" | "f64" | "char" | "str" | "String" | "Self") || is_integer_or_bool_name(n)
}

/// The integer types and `bool`.
pub fn is_integer_or_bool_name(n: &str) -> bool {
    matches!(
        n,
        "usize"
            | "isize"
            | "u8"
            | "u16"
            | "u32"
            | "u64"
            | "u128"
            | "i8"
            | "i16"
            | "i32"
            | "i64"
            | "i128"
            | "bool"
    )
}

/// Whether `ty` is one of Rust's number types, written as itself (`f64`, `usize`).
pub fn is_primitive_number(ty: &Type) -> bool {
    const PRIMITIVES: &[&str] = &[
        "f32", "f64", "usize", "isize", "u8", "u16", "u32", "u64", "u128", "i8", "i16", "i32",
        "i64", "i128",
    ];
    matches!(ty, Type::Path(p) if p.qself.is_none()
        && p.path.get_ident().is_some_and(|i| PRIMITIVES.contains(&i.to_string().as_str())))
}

/// True for `f32`, `f64` and float type parameters.
pub fn is_float_type(ty: &Type, floats: &HashSet<String>) -> bool {
    match ty {
        Type::Path(tp) if tp.qself.is_none() => match tp.path.get_ident() {
            Some(id) => id == "f32" || id == "f64" || floats.contains(&id.to_string()),
            None => false,
        },
        Type::Paren(p) => is_float_type(&p.elem, floats),
        Type::Group(g) => is_float_type(&g.elem, floats),
        _ => false,
    }
}

/// The float element type of `[F]`, `Vec<F>` or `[F; N]`.
pub fn float_elem(ty: &Type, floats: &HashSet<String>) -> Option<Type> {
    match ty {
        Type::Slice(s) if is_float_type(&s.elem, floats) => Some((*s.elem).clone()),
        Type::Array(a) if is_float_type(&a.elem, floats) => Some((*a.elem).clone()),
        Type::Path(tp) => vec_elem(&tp.path)
            .filter(|t| is_float_type(t, floats))
            .cloned(),
        Type::Paren(p) => float_elem(&p.elem, floats),
        _ => None,
    }
}

/// Classifies a parameter type.
pub fn shape_of(ty: &Type, floats: &HashSet<String>) -> (Shape, Option<Type>) {
    match ty {
        Type::Reference(r) => {
            let mutable = r.mutability.is_some();
            match float_elem(&r.elem, floats) {
                Some(e) => (Shape::Slice { mutable }, Some(e)),
                None if is_float_type(&r.elem, floats) => (Shape::Struct { mutable }, None),
                None if is_inert(&r.elem) => (Shape::Other, None),
                None => (Shape::Struct { mutable }, None),
            }
        }
        t if is_float_type(t, floats) => (Shape::Scalar, None),
        _ => (Shape::Other, None),
    }
}

/// A reference to a value of a type the function is generic over and that is not a
/// float (`b: &impl Backend`, `rng: &mut R` with `R: Rng`): the macro cannot see inside
/// it, so it carries no derivative, as a custom rule's parameter of that type does not.
/// `other_type_params` are the function's type parameters that are not floats.
fn refers_to_a_generic_type(ty: &Type, other_type_params: &HashSet<String>) -> bool {
    let Type::Reference(r) = ty else { return false };
    match &*r.elem {
        Type::ImplTrait(it) => !it.bounds.iter().any(bound_is_float),
        Type::Path(tp) if tp.qself.is_none() => tp
            .path
            .get_ident()
            .is_some_and(|id| other_type_params.contains(&id.to_string())),
        _ => false,
    }
}

/// Types behind a reference that never carry a derivative: text, integers, `bool`, and
/// slices, arrays and `Vec`s of them, of tuples, or of references (`&[&[f64]]`, rows of
/// data borrowed from elsewhere, which no shadow of the same type could be written
/// through).
pub fn is_inert(ty: &Type) -> bool {
    let inert_elem = |e: &Type| is_inert(e) || is_tuple(e) || matches!(e, Type::Reference(_));
    match ty {
        Type::Path(tp) if tp.qself.is_none() => match tp.path.get_ident() {
            Some(id) => {
                let id = id.to_string();
                matches!(id.as_str(), "str" | "char" | "String") || is_integer_or_bool_name(&id)
            }
            None => vec_elem(&tp.path).is_some_and(inert_elem),
        },
        Type::Slice(s) => inert_elem(&s.elem),
        Type::Array(a) => inert_elem(&a.elem),
        _ => false,
    }
}

/// A tuple type: the rows of a table of data (`&[(f64, f64)]`), which are read, not
/// differentiated.
fn is_tuple(ty: &Type) -> bool {
    matches!(ty, Type::Tuple(t) if !t.elems.is_empty())
}

/// The element type of `Vec<T>` (`std::vec::Vec<T>` and the like).
pub fn vec_elem(path: &syn::Path) -> Option<&Type> {
    let last = path.segments.last()?;
    match &last.arguments {
        syn::PathArguments::AngleBracketed(a) if last.ident == "Vec" && a.args.len() == 1 => {
            match a.args.first()? {
                syn::GenericArgument::Type(t) => Some(t),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The element type of `ty` when it is `Vec<E>` with `E` a path (a float, or what may be
/// one).
pub fn vec_elem_type(ty: &Type) -> Option<&Type> {
    match ty {
        Type::Path(tp) if tp.qself.is_none() => {
            vec_elem(&tp.path).filter(|e| matches!(e, Type::Path(_)))
        }
        _ => None,
    }
}

/// [`analyse`] of a function with its body: a name its result type gives that the body
/// uses as a struct's is not a float (see [`struct_names`]).
pub fn analyse_fn(func: &syn::ImplItemFn) -> syn::Result<SigInfo> {
    let mut info = analyse(&func.sig)?;
    let declared = float_type_params(&func.sig.generics);
    let structs = struct_names(&func.sig, &func.block);
    info.float_params
        .retain(|n| declared.contains(n) || !structs.contains(n));
    Ok(info)
}

/// The type names a function uses as structs': in a struct literal (`V2 { .. }`, a
/// tuple struct's `Pair(a, b)`), as
/// the type behind a reference parameter (`o: &V2`), or as the type of an associated
/// function it calls (`V2::new(..)`; a name of one letter is left out, as a float type
/// parameter's, `T::from(..)`). A struct returned by value (`-> V2`) is then not taken
/// for a float.
fn struct_names(sig: &Signature, body: &syn::Block) -> HashSet<String> {
    struct Names(HashSet<String>);
    impl<'a> syn::visit::Visit<'a> for Names {
        fn visit_expr_struct(&mut self, e: &'a syn::ExprStruct) {
            if let Some(last) = e.path.segments.last() {
                self.0.insert(last.ident.to_string());
            }
            syn::visit::visit_expr_struct(self, e);
        }
        fn visit_expr_call(&mut self, c: &'a syn::ExprCall) {
            if let syn::Expr::Path(p) = &*c.func
                && p.qself.is_none()
            {
                match crate::lower::path_names(&p.path).as_slice() {
                    [ty, _] if ty.len() > 1 => {
                        self.0.insert(ty.clone());
                    }
                    // A tuple struct built (`Pair(a, b)`).
                    [ty] if ty.starts_with(char::is_uppercase) => {
                        self.0.insert(ty.clone());
                    }
                    _ => {}
                }
            }
            syn::visit::visit_expr_call(self, c);
        }
    }
    let mut names = Names(HashSet::default());
    syn::visit::Visit::visit_block(&mut names, body);
    if let Some(name) = delegated_struct_name(sig, body) {
        names.0.insert(name);
    }
    for input in &sig.inputs {
        if let FnArg::Typed(pt) = input
            && let Type::Reference(r) = &*pt.ty
            && let Type::Path(tp) = &*r.elem
            && let Some(last) = tp.path.segments.last()
        {
            names.0.insert(last.ident.to_string());
        }
    }
    names.0
}

/// The result type's name of a function that ends by returning what a user function or
/// method returns (`fn half(&self) -> V2 { self.scale(0.5) }`): a struct's, unless it is
/// a name that float aliases commonly have (`type Scalar = f64;`), or of one letter (a
/// float type parameter's).
fn delegated_struct_name(sig: &Signature, body: &syn::Block) -> Option<String> {
    let ReturnType::Type(_, ty) = &sig.output else {
        return None;
    };
    let Type::Path(tp) = &**ty else {
        return None;
    };
    let name = tp.path.get_ident()?.to_string();
    let float_alias = matches!(
        name.as_str(),
        "Real" | "Scalar" | "Float" | "Fp" | "Flt" | "Num" | "Number" | "Precision" | "Double"
    );
    if name.len() == 1 || float_alias || is_builtin_type_name(&name) {
        return None;
    }
    let delegates = match body.stmts.last() {
        Some(syn::Stmt::Expr(syn::Expr::Call(c), None)) => {
            matches!(&*c.func, syn::Expr::Path(p) if p.qself.is_none())
        }
        Some(syn::Stmt::Expr(syn::Expr::MethodCall(m), None)) => {
            let method = m.method.to_string();
            crate::builtins::math_arity(&method).is_none()
                && !crate::builtins::is_inert_method(&method)
                && !matches!(
                    method.as_str(),
                    "sum" | "product" | "fold" | "powi" | "powf"
                )
        }
        _ => false,
    };
    delegates.then_some(name)
}

pub fn analyse(sig: &Signature) -> syn::Result<SigInfo> {
    let mut floats = float_type_params(&sig.generics);
    floats.extend(floats_named_by_return(sig));
    floats.extend(impl_params_taken_by_value(sig));
    let other_type_params: HashSet<String> = sig
        .generics
        .type_params()
        .map(|t| t.ident.to_string())
        .filter(|t| !floats.contains(t))
        .collect();
    let mut params = Vec::new();
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(r) => {
                if r.colon_token.is_some() {
                    return Err(syn::Error::new_spanned(
                        r,
                        "differentiated methods take `&self` or `&mut self`, written so (not `self: Type`)",
                    ));
                }
                if r.reference.is_none() {
                    return Err(syn::Error::new_spanned(
                        r,
                        "differentiated methods take `&self` or `&mut self`, not `self` by value",
                    ));
                }
                params.push(Param {
                    name: Ident::new("self", r.self_token.span),
                    ty: None,
                    shape: Shape::Struct {
                        mutable: r.mutability.is_some(),
                    },
                    elem: None,
                    by_value_mut: false,
                    copied: false,
                });
            }
            FnArg::Typed(pt) => {
                let (name, by_value_mut) = match &*pt.pat {
                    Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => {
                        (pi.ident.clone(), pi.mutability.is_some())
                    }
                    other => {
                        return Err(syn::Error::new_spanned(
                            other,
                            "differentiated functions take plain named parameters (`x: f64`), not patterns",
                        ));
                    }
                };
                let (shape, elem) = match closure_sig(&pt.ty, &sig.generics) {
                    Some(c) if c.takes_references() => {
                        return Err(syn::Error::new_spanned(
                            &pt.ty,
                            "a closure parameter that takes or returns a reference (`Fn(&[f64]) -> f64`) is not supported in differentiated code: its derivatives travel in a `DiffFn`, whose arguments and result are floats, integers or tuples of them (pass the buffer to the function and let the closure take an element or an index, `Fn(f64) -> f64`, `Fn(usize) -> f64`)",
                        ));
                    }
                    Some(c) => (Shape::Closure(c), None),
                    None if refers_to_a_generic_type(&pt.ty, &other_type_params) => {
                        (Shape::Other, None)
                    }
                    None => shape_of(&pt.ty, &floats),
                };
                params.push(Param {
                    name,
                    ty: Some((*pt.ty).clone()),
                    shape,
                    elem,
                    by_value_mut,
                    copied: false,
                });
            }
        }
    }
    let ret = match &sig.output {
        ReturnType::Default => Ret::Unit,
        ReturnType::Type(_, t) => match &**t {
            Type::Tuple(tt) if tt.elems.is_empty() => Ret::Unit,
            Type::Reference(r)
                if float_elem(&r.elem, &floats).is_some() || is_float_type(&r.elem, &floats) =>
            {
                return Err(syn::Error::new_spanned(
                    t,
                    "a result that borrows floats (`-> &[f64]`, `-> &f64`) is not supported in differentiated code: return an owned value (`Vec<f64>`, `f64`), or write into a `&mut` parameter",
                ));
            }
            t => Ret::Ty(Box::new(t.clone())),
        },
    };
    Ok(SigInfo {
        params,
        ret,
        float_params: floats,
        other_type_params,
    })
}

/// The generic parameters and where-clause predicates of a companion: the function's own,
/// without the type and constant parameters in `drop` (closure types, replaced by
/// `DiffFn`s; constants a stub's types do not name), with `T: Real` added for each float
/// type parameter.
pub fn companion_generics(
    generics: &syn::Generics,
    floats: &HashSet<String>,
    drop: &[String],
) -> (Vec<proc_macro2::TokenStream>, Vec<proc_macro2::TokenStream>) {
    let dropped = |id: &Ident| drop.contains(&id.to_string());
    let params = generics
        .params
        .iter()
        .filter(|p| match p {
            GenericParam::Type(t) => !dropped(&t.ident),
            GenericParam::Const(c) => !dropped(&c.ident),
            GenericParam::Lifetime(_) => true,
        })
        .map(|p| quote::quote!(#p))
        .collect();
    let mut preds: Vec<proc_macro2::TokenStream> = generics
        .where_clause
        .iter()
        .flat_map(|w| w.predicates.iter())
        .filter(|p| {
            !matches!(p, WherePredicate::Type(pt)
                if matches!(&pt.bounded_ty, Type::Path(tp) if tp.path.get_ident().is_some_and(dropped)))
        })
        .map(|p| quote::quote!(#p))
        .collect();
    let mut fl: Vec<&String> = floats.iter().collect();
    fl.sort();
    for f in fl {
        let id = quote::format_ident!("{}", f);
        preds.push(quote::quote!(#id: ::autodiff_core::Real));
    }
    (params, preds)
}
