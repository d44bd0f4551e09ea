//! `#[differentiable]` on a struct: the struct gets a zero shadow, so that a constant
//! value of it can be passed where a callee differentiates it (`m.predict(x)` with `m`
//! constant and `x` active), and the same value can be passed twice to one call.
//!
//! A macro on a function never sees the members of the structs it is given, so what a
//! shadow of the struct needs is written here, where the members are declared:
//! - `ZeroLike`: the struct built member by member, with zeros for floats, buffers of
//!   floats and other marked structs, and a copy of any other member (a name, a tag),
//!   which no derivative code reads;
//! - `AddInto`: one shadow added into another, member by member, skipping the members
//!   that carry no derivatives;
//! - `StructShadow`/`StructShadowMut` for the markers of a constant argument (`Zero`,
//!   `Discard`), which make a zero shadow of it.
//!
//! Which members have zeros is decided by the trait solver, not by reading their types:
//! `Member`/`MemberSum` (in `autodiff_core`) resolve to the zero or sum when the member's
//! type has one and to the copy or nothing otherwise.

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

/// The struct, unchanged, and the impls of its shadows.
pub fn expand(item: &syn::ItemStruct) -> TokenStream {
    let name = &item.ident;
    let mut generics = item.generics.clone();
    let where_clause = generics.make_where_clause();
    for param in item.generics.type_params() {
        if float_bounded(param, item.generics.where_clause.as_ref()) {
            let t = &param.ident;
            where_clause.predicates.push(syn::parse_quote!(
                #t: ::autodiff_core::__private::ZeroLike<Out = #t> + ::autodiff_core::__private::AddInto
            ));
        }
    }
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let ty = quote!(#name #ty_generics);
    let members = members(&item.fields);
    let zeros = members.iter().map(|(m, span)| {
        quote_spanned!(*span=> (&::autodiff_core::__private::Member(&self.#m)).zero_member())
    });
    let zero = match &item.fields {
        syn::Fields::Named(_) => {
            let names = members.iter().map(|(m, _)| m);
            quote!(#name { #(#names: #zeros),* })
        }
        syn::Fields::Unnamed(_) => quote!(#name(#(#zeros),*)),
        syn::Fields::Unit => quote!(#name),
    };
    let sums = members.iter().map(|(m, span)| {
        quote_spanned!(*span=>
            (&::autodiff_core::__private::MemberSum::new(&mut self.#m, &rhs.#m)).add_member();
        )
    });
    let shadow_impls = [
        ("StructShadow", "Zero"),
        ("StructShadowMut", "Zero"),
        ("StructShadowMut", "Discard"),
    ]
    .map(|(trait_name, marker)| {
        let (method, receiver, out) = if trait_name == "StructShadow" {
            (quote!(shadow), quote!(&'a self), quote!(&'a #ty))
        } else {
            (
                quote!(shadow_mut),
                quote!(&'a mut self),
                quote!(&'a mut #ty),
            )
        };
        let trait_name = format_ident!("{}", trait_name);
        let marker = format_ident!("{}", marker);
        quote! {
            impl #impl_generics ::autodiff_core::__private::#trait_name<#ty>
                for ::autodiff_core::__private::#marker #where_clause
            {
                type Scratch = ::core::option::Option<#ty>;
                #[inline]
                fn #method<'a>(#receiver, primal: &#ty, scratch: &'a mut Self::Scratch) -> #out {
                    scratch.insert(::autodiff_core::__private::ZeroLike::zero_like(primal))
                }
            }
        }
    });
    quote! {
        #item
        #[automatically_derived]
        impl #impl_generics ::autodiff_core::__private::ZeroLike for #ty #where_clause {
            type Out = Self;
            fn zero_like(&self) -> Self {
                #[allow(unused_imports)]
                use ::autodiff_core::__private::{CopyMember as _, ZeroMember as _};
                #zero
            }
        }
        #[automatically_derived]
        impl #impl_generics ::autodiff_core::__private::AddInto for #ty #where_clause {
            #[allow(unused_variables)]
            fn add_into(&mut self, rhs: &Self) {
                #[allow(unused_imports)]
                use ::autodiff_core::__private::{AddMember as _, SkipMember as _};
                #(#sums)*
            }
        }
        #(#shadow_impls)*
    }
}

/// Each member (`a` or `0`) with the span of its type, where an error about it points.
fn members(fields: &syn::Fields) -> Vec<(TokenStream, proc_macro2::Span)> {
    fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let m = match &f.ident {
                Some(id) => id.to_token_stream(),
                None => syn::Index::from(i).to_token_stream(),
            };
            (m, f.ty.span())
        })
        .collect()
}

/// Whether a type parameter is bounded by a float trait (`T: Float`, `T: Real`, in its
/// declaration or in the `where` clause): members of its type get zeros, not copies.
fn float_bounded(param: &syn::TypeParam, where_clause: Option<&syn::WhereClause>) -> bool {
    let is_float = |b: &syn::TypeParamBound| match b {
        syn::TypeParamBound::Trait(t) => t.path.segments.last().is_some_and(|s| {
            matches!(s.ident.to_string().as_str(), "Float" | "Real" | "FloatCore")
        }),
        _ => false,
    };
    let in_where = where_clause
        .into_iter()
        .flat_map(|w| &w.predicates)
        .any(|p| match p {
            syn::WherePredicate::Type(t) => {
                matches!(&t.bounded_ty, syn::Type::Path(tp) if tp.path.is_ident(&param.ident))
                    && t.bounds.iter().any(is_float)
            }
            _ => false,
        });
    param.bounds.iter().any(is_float) || in_where
}
