//! `#[differentiable]` on a struct or enum: the type gets a zero shadow, so that a
//! constant value of it can be passed where a callee differentiates it (`m.predict(x)`
//! with `m` constant and `x` active), and the same value can be passed twice to one call.
//!
//! A macro on a function never sees the members of the structs it is given, so what a
//! shadow of the type needs is written here, where the members are declared:
//! - `ZeroLike`: the value built member by member (variant by variant for an enum), with
//!   zeros for floats, buffers of floats and other marked types, and a copy of an `Inert`
//!   member (an integer, a name), which no derivative code reads;
//! - `AddInto`: one shadow added into another, member by member, skipping the members
//!   that carry no derivatives;
//! - `StructShadow`/`StructShadowMut` for the markers of a constant argument (`Zero`,
//!   `Discard`), which make a zero shadow of it.
//!
//! Which members have zeros is decided by the trait solver, not by reading their types:
//! `Member`/`MemberSum` (in `autodiff_core`) resolve to the zero or sum when the member's
//! type has one and to the copy or nothing for an `Inert` one. Any other member is a
//! compile error at its type.

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

/// A type parameter with no bound at all (on the parameter or in the `where` clause)
/// that a member's type names (`struct Poly<T> { c: Vec<T> }`).
fn unbounded_member_param(item: &Declaration, generics: &syn::Generics) -> Option<syn::Ident> {
    let fields: Vec<&syn::Field> = match item {
        Declaration::Struct(s) => s.fields.iter().collect(),
        Declaration::Enum(e) => e.variants.iter().flat_map(|v| v.fields.iter()).collect(),
    };
    let in_where = |t: &syn::Ident| {
        generics.where_clause.as_ref().is_some_and(|w| {
            w.predicates.iter().any(|p| {
                matches!(p, syn::WherePredicate::Type(pt)
                    if matches!(&pt.bounded_ty, syn::Type::Path(tp) if tp.path.is_ident(t)))
            })
        })
    };
    generics
        .type_params()
        .filter(|p| p.bounds.is_empty() && !in_where(&p.ident))
        .find(|p| {
            fields.iter().any(|f| {
                let ty = &f.ty;
                let mut named = false;
                crate::lower::walk_idents(&quote!(#ty), &mut |id| named |= *id == p.ident);
                named
            })
        })
        .map(|p| p.ident.clone())
}

/// A struct or enum declaration, unchanged, and the impls of its shadows.
pub fn expand(item: &Declaration) -> TokenStream {
    let (name, generics, tokens) = match item {
        Declaration::Struct(s) => (&s.ident, &s.generics, s.to_token_stream()),
        Declaration::Enum(e) => (&e.ident, &e.generics, e.to_token_stream()),
    };
    // Members of a float type parameter (`T: Real`, `T: Float`) get zeros, not copies.
    let floats = crate::signature::float_type_params(generics);
    if let Some(t) = unbounded_member_param(item, generics) {
        let err = syn::Error::new(
            t.span(),
            format!(
                "`{t}` has no bound on the declaration of this `#[differentiable]` type, so its zero shadow cannot tell whether members of type `{t}` carry derivatives: when `{t}` is the float type, bound it here (`{t}: Float` or `{t}: Real`)"
            ),
        )
        .to_compile_error();
        return quote!(#err #tokens);
    }
    let mut bounded = generics.clone();
    let where_clause = bounded.make_where_clause();
    for param in generics.type_params() {
        if floats.contains(&param.ident.to_string()) {
            let t = &param.ident;
            where_clause.predicates.push(syn::parse_quote!(
                #t: ::autodiff_core::__private::ZeroLike<Out = #t> + ::autodiff_core::__private::AddInto
            ));
        }
    }
    let (impl_generics, ty_generics, where_clause) = bounded.split_for_impl();
    let ty = quote!(#name #ty_generics);
    let (zero, sum) = match item {
        Declaration::Struct(s) => {
            let path = quote!(#name);
            let mine = members(&s.fields, |m| quote!(&self.#m));
            let targets = members(&s.fields, |m| quote!(&mut self.#m));
            let theirs = members(&s.fields, |m| quote!(&rhs.#m));
            (build(&path, &s.fields, &mine), sums(&targets, &theirs))
        }
        Declaration::Enum(e) => {
            let mut zero_arms = TokenStream::new();
            let mut sum_arms = TokenStream::new();
            for v in &e.variants {
                let variant = &v.ident;
                let path = quote!(Self::#variant);
                let mine = members(&v.fields, |m| binding("a", m));
                let theirs = members(&v.fields, |m| binding("b", m));
                let pat_mine = pattern(&path, &v.fields, &mine);
                let pat_theirs = pattern(&path, &v.fields, &theirs);
                let zero = build(&path, &v.fields, &mine);
                let sum = sums(&mine, &theirs);
                zero_arms.extend(quote!(#pat_mine => #zero,));
                sum_arms.extend(quote!((#pat_mine, #pat_theirs) => { #sum }));
            }
            // A reference to an empty enum is not matched empty; its value is.
            let scrutinee = if e.variants.is_empty() {
                quote!(*self)
            } else {
                quote!(self)
            };
            (
                quote!(match #scrutinee { #zero_arms }),
                quote!(match (self, rhs) { #sum_arms _ => {} }),
            )
        }
    };
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
    // An enum of unit variants (an activation kind) holds no float: passed by value to a
    // parameter of its type, no derivative is lost. Its "tangent" and adjoint are the
    // copies the shadow of a struct holding it has, as an integer member's are.
    let no_derivative = match item {
        Declaration::Enum(e) if e.variants.iter().all(|v| v.fields.is_empty()) => quote! {
            #[automatically_derived]
            impl #impl_generics ::autodiff_core::__private::NoDerivative for #ty #where_clause {}
            #[automatically_derived]
            impl #impl_generics ::autodiff_core::__private::NoDerivative for &mut #ty #where_clause {}
        },
        _ => TokenStream::new(),
    };
    // The tangent of a value of the type is a value of the type, passed on as a float's
    // is (such an enum's copy; a struct's tangent, which code differentiated again adds
    // into an adjoint, `add_to(&mut r̄, ḡ)` where an `if` chose the struct).
    let tangent = quote! {
        #[automatically_derived]
        impl #impl_generics ::autodiff_core::__private::ScalarTangent<#ty> for #ty #where_clause {
            #[inline(always)]
            fn tangent(self) -> #ty {
                self
            }
        }
    };
    quote! {
        #tokens
        #no_derivative
        #tangent
        #[automatically_derived]
        impl #impl_generics ::autodiff_core::__private::ZeroLike for #ty #where_clause {
            type Out = Self;
            // (The borrow of each `Member` is the autoref that picks a copy or a zero.)
            #[allow(clippy::needless_borrow)]
            fn zero_like(&self) -> Self {
                #[allow(unused_imports)]
                use ::autodiff_core::__private::{CopyMember as _, ZeroMember as _};
                #zero
            }
        }
        #[automatically_derived]
        impl #impl_generics ::autodiff_core::__private::AddInto for #ty #where_clause {
            // An enum of one variant leaves the catch-all arm unreachable.
            #[allow(unused_variables, unreachable_patterns)]
            fn add_into(&mut self, rhs: &Self) {
                #[allow(unused_imports)]
                use ::autodiff_core::__private::{AddMember as _, SkipMember as _};
                #sum
            }
        }
        #(#shadow_impls)*
    }
}

/// What `#[differentiable]` gives a zero shadow.
pub enum Declaration {
    Struct(syn::ItemStruct),
    Enum(syn::ItemEnum),
}

/// A member as written in a struct literal or pattern (`a` or `0`), how the generated
/// code reaches it, and the span of its type, where an error about it points.
struct MemberRef {
    name: TokenStream,
    access: TokenStream,
    span: proc_macro2::Span,
}

/// The members of a struct or variant, reached through `access` of their names.
fn members(fields: &syn::Fields, access: impl Fn(&TokenStream) -> TokenStream) -> Vec<MemberRef> {
    fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let name = match &f.ident {
                Some(id) => id.to_token_stream(),
                None => syn::Index::from(i).to_token_stream(),
            };
            MemberRef {
                access: access(&name),
                name,
                span: f.ty.span(),
            }
        })
        .collect()
}

/// The local that a variant's pattern binds to member `m`: `__ad_a_x`, `__ad_b_0`.
fn binding(side: &str, m: &TokenStream) -> TokenStream {
    format_ident!("__ad_{}_{}", side, m.to_string()).to_token_stream()
}

/// `Path { a: __ad_a_a, .. }` or `Path(__ad_a_0, ..)`: a variant's members bound.
fn pattern(path: &TokenStream, fields: &syn::Fields, ms: &[MemberRef]) -> TokenStream {
    let names = ms.iter().map(|m| &m.name);
    let binds = ms.iter().map(|m| &m.access);
    match fields {
        syn::Fields::Named(_) => quote!(#path { #(#names: #binds),* }),
        syn::Fields::Unnamed(_) => quote!(#path(#(#binds),*)),
        syn::Fields::Unit => quote!(#path),
    }
}

/// The value at `path` built from each member's zero (or copy).
fn build(path: &TokenStream, fields: &syn::Fields, ms: &[MemberRef]) -> TokenStream {
    let zeros = ms.iter().map(|m| {
        let access = &m.access;
        quote_spanned!(m.span=> (&::autodiff_core::__private::Member(#access)).zero_member())
    });
    let names = ms.iter().map(|m| &m.name);
    match fields {
        syn::Fields::Named(_) => quote!(#path { #(#names: #zeros),* }),
        syn::Fields::Unnamed(_) => quote!(#path(#(#zeros),*)),
        syn::Fields::Unit => quote!(#path),
    }
}

/// Each member of `rhs` added into the same member of `targets` (or left).
fn sums(targets: &[MemberRef], rhs: &[MemberRef]) -> TokenStream {
    targets
        .iter()
        .zip(rhs)
        .map(|(t, r)| {
            let (t_access, r_access) = (&t.access, &r.access);
            quote_spanned!(t.span=>
                ::autodiff_core::__private::MemberSum(#t_access, #r_access).add_member();
            )
        })
        .collect()
}
