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
//! (`impl Mul<f64> for V2`), so that both implementations can live on one struct. An
//! operator with a float on the left (`impl Mul<V2> for f64`, `2.0 * v`) adds its method to
//! the struct on the right, `autodiff_op_scalar_mul(&self, lhs: f64)`, the float's `self`
//! renamed in its code (a float has no methods of the user's). The block also implements
//! a marker trait of `autodiff_core` for the struct (`DifferentiableMul`), which
//! differentiated code asks for where it meets the operator, so that an operator whose
//! block is not marked is an error that says so.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote};
use syn::spanned::Spanned;
use syn::{Expr, FnArg, ImplItem, ImplItemFn, ItemImpl};

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

/// The operands of an operator on struct values: both structs, or a struct and a float
/// on its right (`v * 0.5`) or on its left (`0.5 * v`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Operands {
    Structs,
    FloatRight,
    FloatLeft,
}

/// The name of the method added for the operator `method` (`add`, `add_assign`, `neg`)
/// with the operands `operands`: `autodiff_op_mul`, `autodiff_op_mul_scalar`,
/// `autodiff_op_scalar_mul`.
pub fn added_name(method: &str, operands: Operands, span: Span) -> syn::Ident {
    match operands {
        Operands::Structs => format_ident!("{METHOD_PREFIX}{method}", span = span),
        Operands::FloatRight => format_ident!("{METHOD_PREFIX}{method}_scalar", span = span),
        Operands::FloatLeft => format_ident!("{METHOD_PREFIX}scalar_{method}", span = span),
    }
}

/// The marker trait of `autodiff_core`'s `operators` that the block implements for the
/// method added under [`added_name`]`(method, operands)`, and the function there that
/// checks for it (`DifferentiableMulScalar`, `mul_scalar`; `DifferentiableScalarMul`,
/// `scalar_mul`).
pub fn marker(method: &str, operands: Operands) -> (syn::Ident, syn::Ident) {
    let operator = OPERATORS
        .iter()
        .find(|(_, m)| *m == method)
        .map_or("", |(t, _)| *t);
    match operands {
        Operands::Structs => (
            format_ident!("Differentiable{operator}"),
            format_ident!("{method}"),
        ),
        Operands::FloatRight => (
            format_ident!("Differentiable{operator}Scalar"),
            format_ident!("{method}_scalar"),
        ),
        Operands::FloatLeft => (
            format_ident!("DifferentiableScalar{operator}"),
            format_ident!("scalar_{method}"),
        ),
    }
}

/// What an operator's block adds: the method, the implementation of its marker trait,
/// and the struct whose method it is (the block's own type, or the right-hand side's
/// where the block is a float's).
pub struct AddedOperator {
    pub method: ImplItemFn,
    pub marker_impl: TokenStream,
    pub owner: syn::Type,
}

/// The method added for `f`, the operator method of `imp` (see the module's
/// documentation): the same code, with `self` and a right-hand side of the struct's type
/// taken by reference, and `Self::Output` written as the block's `Output`; for a float's
/// block (`impl Mul<V2> for f64`), a method of the right-hand side's struct that takes the
/// float as its argument ([`float_on_the_left`]).
pub fn added_method(f: &ImplItemFn, imp: &ItemImpl) -> syn::Result<AddedOperator> {
    let self_ty = &imp.self_ty;
    if !matches!(&**self_ty, syn::Type::Path(p) if p.qself.is_none()) {
        return Err(shape_error(self_ty.span()));
    }
    let own = |t: &syn::Type| crate::impl_blocks::is_block_type(t, self_ty);
    let float =
        |t: &syn::Type| crate::impl_blocks::is_float_type_of(t, [&imp.generics, &f.sig.generics]);
    let method = f.sig.ident.to_string();
    let mut added = f.clone();
    added.attrs.retain(|a| a.path().is_ident("inline"));
    added.attrs.push(syn::parse_quote!(#[doc(hidden)]));
    added.vis = syn::parse_quote!(pub);
    let mut operands = Operands::Structs;
    let mut owner = (**self_ty).clone();
    if float(self_ty) {
        owner = float_on_the_left(&mut added, &method, self_ty)?;
        operands = Operands::FloatLeft;
    } else {
        for (k, input) in added.sig.inputs.iter_mut().enumerate() {
            match input {
                FnArg::Receiver(r) if k == 0 => {
                    let assign = method.ends_with("_assign");
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
                        operands = Operands::FloatRight;
                    } else {
                        return Err(shape_error(pt.ty.span()));
                    }
                    if !is_plain_binding(&pt.pat) {
                        return Err(shape_error(pt.pat.span()));
                    }
                }
                other => return Err(shape_error(other.span())),
            }
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
    crate::impl_blocks::own_type_returned_as_self(&mut added.sig, &owner);
    added.sig.ident = added_name(&method, operands, f.sig.ident.span());
    let (marker, _) = marker(&method, operands);
    let (impl_generics, _, where_clause) = imp.generics.split_for_impl();
    let marker_impl = quote! {
        #[automatically_derived]
        impl #impl_generics ::autodiff_core::__private::operators::#marker for #owner #where_clause {}
    };
    Ok(AddedOperator {
        method: added,
        marker_impl,
        owner,
    })
}

/// Makes `added`, a copy of the method `method` of a float's operator block (`fn mul(self,
/// v: V2) -> V2` of `impl Mul<V2> for f64`), a method of the struct on the right:
/// `fn mul(&self, lhs: f64) -> V2 { let v = self; .. }`, its code reading `lhs` where it
/// read `self` (and the float's type where it named `Self`). Returns the struct's type.
fn float_on_the_left(
    added: &mut ImplItemFn,
    method: &str,
    float_ty: &syn::Type,
) -> syn::Result<syn::Type> {
    let arithmetic = matches!(method, "add" | "sub" | "mul" | "div");
    let inputs: Vec<FnArg> = added.sig.inputs.iter().cloned().collect();
    let (receiver, rhs) = match inputs.as_slice() {
        [FnArg::Receiver(r), FnArg::Typed(rhs)] if arithmetic => (r, rhs),
        _ => return Err(shape_error(added.sig.span())),
    };
    if receiver.reference.is_some() || receiver.mutability.is_some() {
        return Err(shape_error(receiver.span()));
    }
    let name = match &*rhs.pat {
        syn::Pat::Ident(p) if is_plain_binding(&rhs.pat) => &p.ident,
        p => return Err(shape_error(p.span())),
    };
    let owner = match &*rhs.ty {
        syn::Type::Reference(r) if r.mutability.is_none() => (*r.elem).clone(),
        t => t.clone(),
    };
    if !matches!(&owner, syn::Type::Path(p) if p.qself.is_none())
        || crate::impl_blocks::is_float_type_of(&owner, [])
    {
        return Err(shape_error(rhs.ty.span()));
    }
    let lhs = syn::Ident::new(LEFT_OPERAND, receiver.span());
    added.sig.inputs = syn::parse_quote_spanned!(receiver.span()=> &self, #lhs: #float_ty);
    let body = rename_self(added.block.to_token_stream(), &lhs, float_ty);
    // The struct by value where the code uses it as a value (`v * self`, the operator
    // the other way round), which asks for `Copy`; by reference where it only reads its
    // members and methods (`v.x`), as the struct's own blocks do.
    let value: Expr =
        if only_before_dots(&body, name) || matches!(&*rhs.ty, syn::Type::Reference(_)) {
            syn::parse_quote!(self)
        } else {
            syn::parse_quote_spanned!(name.span()=> *self)
        };
    added.block = syn::parse2(quote!({ let #name = #value; #body }))?;
    Ok(owner)
}

/// Whether each use of `name` in `tokens` is followed by a `.` (`v.x`, `v.norm()`).
fn only_before_dots(tokens: &TokenStream, name: &syn::Ident) -> bool {
    let tokens: Vec<TokenTree> = tokens.clone().into_iter().collect();
    tokens.iter().enumerate().all(|(k, tt)| match tt {
        TokenTree::Ident(id) if id == name => {
            matches!(tokens.get(k + 1), Some(TokenTree::Punct(p)) if p.as_char() == '.')
        }
        TokenTree::Group(g) => only_before_dots(&g.stream(), name),
        _ => true,
    })
}

/// The name that the float on the left of an operator takes in the method added for it.
const LEFT_OPERAND: &str = "autodiff_lhs";

/// `tokens` with `self` written `lhs` and `Self` written `float_ty`.
fn rename_self(tokens: TokenStream, lhs: &syn::Ident, float_ty: &syn::Type) -> TokenStream {
    tokens
        .into_iter()
        .map(|tt| match tt {
            TokenTree::Ident(id) if id == "self" => {
                syn::Ident::new(&lhs.to_string(), id.span()).into_token_stream()
            }
            TokenTree::Ident(id) if id == "Self" => float_ty.to_token_stream(),
            TokenTree::Group(g) => {
                let mut inner =
                    proc_macro2::Group::new(g.delimiter(), rename_self(g.stream(), lhs, float_ty));
                inner.set_span(g.span());
                TokenTree::Group(inner).into_token_stream()
            }
            tt => tt.into_token_stream(),
        })
        .collect()
}

/// Whether a parameter's pattern is a plain name (`o`, not `mut o` or a pattern).
fn is_plain_binding(p: &syn::Pat) -> bool {
    matches!(p, syn::Pat::Ident(p) if p.by_ref.is_none() && p.mutability.is_none() && p.subpat.is_none())
}

/// The error for an operator's block of another shape.
fn shape_error(span: Span) -> syn::Error {
    syn::Error::new(
        span,
        "`#[differentiable]` on an operator's `impl` takes `impl Add for S` (`Sub`, `Mul`, `Div`), with a right-hand side of type `S` or a float, `impl Mul<S> for f64` (`Add`, `Sub`, `Div`; a float on the left), `impl Neg for S`, or `impl AddAssign for S` (`SubAssign`, `MulAssign`, `DivAssign`) likewise, for a struct `S`, with `self` taken by value (`&mut self` for the assignments), not `mut self`",
    )
}
