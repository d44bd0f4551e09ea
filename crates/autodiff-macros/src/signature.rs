//! The differentiated function's signature: its parameters, what shape each has (which
//! decides its tangent and shadow), and its return type.

use proc_macro2::Ident;
use std::collections::HashSet;
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
    /// Anything else (integers, `bool`, `&str`, by-value non-floats): never differentiated.
    Other,
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
    Ty(Type),
}

#[derive(Clone, Debug)]
pub struct SigInfo {
    pub params: Vec<Param>,
    pub ret: Ret,
    /// Names of the type parameters that are floats.
    pub float_params: HashSet<String>,
}

fn bound_is_float(b: &TypeParamBound) -> bool {
    if let TypeParamBound::Trait(t) = b {
        if let Some(last) = t.path.segments.last() {
            return last.ident == "Float" || last.ident == "Real";
        }
    }
    false
}

/// The type parameters bounded by `Float` (from `num_traits`) or `Real`.
pub fn float_type_params(generics: &syn::Generics) -> HashSet<String> {
    let mut out = HashSet::new();
    for p in &generics.params {
        if let GenericParam::Type(t) = p {
            if t.bounds.iter().any(bound_is_float) {
                out.insert(t.ident.to_string());
            }
        }
    }
    if let Some(w) = &generics.where_clause {
        for pred in &w.predicates {
            if let WherePredicate::Type(pt) = pred {
                if let Type::Path(tp) = &pt.bounded_ty {
                    if let Some(id) = tp.path.get_ident() {
                        if pt.bounds.iter().any(bound_is_float) {
                            out.insert(id.to_string());
                        }
                    }
                }
            }
        }
    }
    out
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
        Type::Path(tp) => {
            let last = tp.path.segments.last()?;
            if last.ident != "Vec" {
                return None;
            }
            if let syn::PathArguments::AngleBracketed(args) = &last.arguments {
                if let Some(syn::GenericArgument::Type(t)) = args.args.first() {
                    if is_float_type(t, floats) {
                        return Some(t.clone());
                    }
                }
            }
            None
        }
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

/// Types behind a reference that never carry a derivative.
fn is_inert(ty: &Type) -> bool {
    match ty {
        Type::Path(tp) => match tp.path.get_ident() {
            Some(id) => matches!(
                id.to_string().as_str(),
                "str"
                    | "usize"
                    | "isize"
                    | "u8"
                    | "u16"
                    | "u32"
                    | "u64"
                    | "i8"
                    | "i16"
                    | "i32"
                    | "i64"
                    | "bool"
                    | "char"
                    | "String"
            ),
            None => false,
        },
        Type::Slice(s) => is_inert(&s.elem),
        Type::Array(a) => is_inert(&a.elem),
        _ => false,
    }
}

pub fn analyse(sig: &Signature) -> syn::Result<SigInfo> {
    let floats = float_type_params(&sig.generics);
    let mut params = Vec::new();
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(r) => {
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
                let (shape, elem) = shape_of(&pt.ty, &floats);
                params.push(Param {
                    name,
                    ty: Some((*pt.ty).clone()),
                    shape,
                    elem,
                    by_value_mut,
                });
            }
        }
    }
    let ret = match &sig.output {
        ReturnType::Default => Ret::Unit,
        ReturnType::Type(_, t) => match &**t {
            Type::Tuple(tt) if tt.elems.is_empty() => Ret::Unit,
            t => Ret::Ty(t.clone()),
        },
    };
    Ok(SigInfo {
        params,
        ret,
        float_params: floats,
    })
}
