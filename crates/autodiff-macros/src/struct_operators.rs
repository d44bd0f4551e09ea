//! Operators implemented for a user's struct (`impl Add for V2`, `impl Mul<f64> for V2`,
//! `impl Neg for V2`, `impl AddAssign for V2`), made differentiable by `#[differentiable]`
//! on the `impl` block.
//!
//! An operator's method takes its operands by value, and a macro on a differentiated
//! function sees `a + b` without knowing which implementation runs. So the operator's
//! block adds a method of the struct with a name of its own, the operator's code taking
//! its operands by reference (`fn autodiff_op_add(&self, o: &V2) -> V2`), made
//! differentiable as a `#[differentiable]` method is; and the lowering of a
//! differentiated function writes `a + b` of struct values as a call of it
//! (`a.autodiff_op_add(&b)`, see `lower/struct_operators.rs`), which is then
//! differentiated as any method call is. The name says which operator and which kind of
//! right-hand side: `autodiff_op_mul` for a struct, `autodiff_op_mul_scalar` for a float
//! (`impl Mul<f64> for V2`), so that both implementations can live on one struct. The
//! block also implements a marker trait of `autodiff_core` for the struct
//! (`DifferentiableMul`), which differentiated code asks for where it meets the
//! operator, so that an operator whose block is not marked is an error that says so.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::{FnArg, ImplItem, ImplItemFn, ItemImpl};

/// The prefix of the methods that operators' blocks add.
pub const METHOD_PREFIX: &str = "autodiff_op_";

/// The operator traits, with their methods.
const OPERATORS: [(&str, &str); 9] = [
    ("Add", "add"),
    ("Sub", "sub"),
    ("Mul", "mul"),
    ("Div", "div"),
    ("Neg", "neg"),
    ("AddAssign", "add_assign"),
    ("SubAssign", "sub_assign"),
    ("MulAssign", "mul_assign"),
    ("DivAssign", "div_assign"),
];

/// The method that the trait `imp` implements, when it is one of the operators:
/// `add` of `impl Add for V2`.
pub fn operator_method(imp: &ItemImpl) -> Option<&'static str> {
    let (_, path, _) = imp.trait_.as_ref()?;
    let name = path.segments.last()?.ident.to_string();
    OPERATORS
        .iter()
        .find(|(t, _)| *t == name)
        .map(|(_, method)| *method)
}

/// The name of the method added for the operator `method` (`add`, `add_assign`, `neg`)
/// with a right-hand side that is a struct value or not.
pub fn added_name(method: &str, struct_rhs: bool, span: Span) -> syn::Ident {
    let suffix = if struct_rhs { "" } else { "_scalar" };
    format_ident!("{METHOD_PREFIX}{method}{suffix}", span = span)
}

/// The marker trait of `autodiff_core`'s `operators` that the block implements for the
/// method added under [`added_name`]`(method, struct_rhs)`, and the function there that
/// checks for it (`DifferentiableMulScalar`, `mul_scalar`).
pub fn marker(method: &str, struct_rhs: bool) -> (syn::Ident, syn::Ident) {
    let operator = OPERATORS
        .iter()
        .find(|(_, m)| *m == method)
        .map_or("", |(t, _)| *t);
    let (trait_suffix, fn_suffix) = if struct_rhs {
        ("", "")
    } else {
        ("Scalar", "_scalar")
    };
    (
        format_ident!("Differentiable{operator}{trait_suffix}"),
        format_ident!("{method}{fn_suffix}"),
    )
}

/// The method added for `f`, the operator method of `imp` (see the module's
/// documentation): the same code, with `self` and a right-hand side of the struct's type
/// taken by reference, and `Self::Output` written as the block's `Output`.
pub fn added_method(f: &ImplItemFn, imp: &ItemImpl) -> syn::Result<(ImplItemFn, TokenStream)> {
    let self_ty = &imp.self_ty;
    let shape_error = |span: Span| {
        syn::Error::new(
            span,
            "`#[differentiable]` on an operator's `impl` takes `impl Add for S` (`Sub`, `Mul`, `Div`), with a right-hand side of type `S` or a float, `impl Neg for S`, or `impl AddAssign for S` (`SubAssign`, `MulAssign`, `DivAssign`) likewise, for a struct `S`, with `self` taken by value (`&mut self` for the assignments), not `mut self`",
        )
    };
    if !matches!(&**self_ty, syn::Type::Path(p) if p.qself.is_none()) {
        return Err(shape_error(self_ty.span()));
    }
    let own = |t: &syn::Type| crate::impl_blocks::is_block_type(t, self_ty);
    let float =
        |t: &syn::Type| crate::impl_blocks::is_float_type_of(t, [&imp.generics, &f.sig.generics]);
    let mut added = f.clone();
    added.attrs.retain(|a| a.path().is_ident("inline"));
    added.attrs.push(syn::parse_quote!(#[doc(hidden)]));
    added.vis = syn::parse_quote!(pub);
    let mut struct_rhs = true;
    for (k, input) in added.sig.inputs.iter_mut().enumerate() {
        match input {
            FnArg::Receiver(r) if k == 0 => {
                let assign = f.sig.ident.to_string().ends_with("_assign");
                match (&r.reference, &r.mutability) {
                    // `self`, taken as `&self`.
                    (None, None) if !assign => {
                        *r = syn::parse_quote_spanned!(r.span()=> &self);
                    }
                    (Some(_), Some(_)) if assign => {}
                    _ => return Err(shape_error(r.span())),
                }
            }
            FnArg::Typed(pt) if k == 1 => {
                if own(&pt.ty) {
                    let ty = &pt.ty;
                    pt.ty = syn::parse_quote_spanned!(ty.span()=> &#ty);
                } else if matches!(&*pt.ty, syn::Type::Reference(r) if r.mutability.is_none() && own(&r.elem))
                {
                    // Already by reference (`impl Add<&V2> for V2`).
                } else if float(&pt.ty) {
                    struct_rhs = false;
                } else {
                    return Err(shape_error(pt.ty.span()));
                }
                if !matches!(&*pt.pat, syn::Pat::Ident(p) if p.by_ref.is_none() && p.mutability.is_none())
                {
                    return Err(shape_error(pt.pat.span()));
                }
            }
            other => return Err(shape_error(other.span())),
        }
    }
    if let syn::ReturnType::Type(_, ret) = &mut added.sig.output {
        let names_output = matches!(&**ret, syn::Type::Path(p) if p.qself.is_none()
            && p.path.segments.len() == 2
            && p.path.segments[0].ident == "Self"
            && p.path.segments[1].ident == "Output");
        if names_output {
            let output = imp.items.iter().find_map(|i| match i {
                ImplItem::Type(t) if t.ident == "Output" => Some(t.ty.clone()),
                _ => None,
            });
            match output {
                Some(t) => **ret = t,
                None => return Err(shape_error(ret.span())),
            }
        }
    }
    let method = f.sig.ident.to_string();
    added.sig.ident = added_name(&method, struct_rhs, f.sig.ident.span());
    let (marker, _) = marker(&method, struct_rhs);
    let (impl_generics, _, where_clause) = imp.generics.split_for_impl();
    let marker_impl = quote! {
        #[automatically_derived]
        impl #impl_generics ::autodiff_core::__private::operators::#marker for #self_ty #where_clause {}
    };
    Ok((added, marker_impl))
}
