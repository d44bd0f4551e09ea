//! Procedural macros of autodiff-rs. Use them through `autodiff_core`, which re-exports
//! them together with the runtime the generated code needs.
//!
//! The pipeline is `signature` and `activity` (parse) → `lower` (syntax to IR) →
//! `analysis` (activity, needed values) → `forward` / `reverse` (derivative code) →
//! `expand` (companions and calling protocol). See `ARCHITECTURE.md` in the repository.

mod activity;
mod analysis;
mod builtins;
mod by_value_arrays;
mod calls;
mod carry;
mod closures;
mod collections;
mod expand;
mod fixed_lengths;
mod forward;
mod fused;
mod hygiene;
mod impl_blocks;
mod integer_uses;
mod ir;
mod kept_state;
mod lower;
mod member_writes;
mod nested;
mod nested_calls;
mod replay;
mod reverse;
mod rule_nesting;
mod rules;
mod signature;
mod struct_operators;
mod zero_struct;

#[cfg(test)]
mod expand_timing;
#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod nested_reuse_tests;
#[cfg(test)]
mod replayed_tests;

use activity::Mode;
use expand::{Trigger, expand};
use proc_macro::TokenStream;

/// Generates a forward-mode companion: `#[autodiff_forward(NAME, ACTIVITIES..)]`.
///
/// One activity per parameter (`Dual` or `Const`), then one for the return value
/// (`Dual`, `DualOnly` or `Const`), left out when the function returns `()`. After each
/// `Dual` parameter the companion takes its tangent, of the same type. See the
/// `autodiff_core` documentation for examples.
#[proc_macro_attribute]
pub fn autodiff_forward(args: TokenStream, item: TokenStream) -> TokenStream {
    let (args, item) = (hygiene::uniform(args.into()), hygiene::uniform(item.into()));
    guarded(&item, || {
        expand(Trigger::Companion(Mode::Forward, args), item.clone())
    })
    .into()
}

/// Generates a reverse-mode companion: `#[autodiff_reverse(NAME, ACTIVITIES..)]`.
///
/// One activity per parameter (`Active` for floats by value, `Duplicated` for references,
/// or `Const`), then one for the return value (`Active`, `ActiveOnly` or `Const`), left
/// out when the function returns `()`. After each `Duplicated` parameter the companion
/// takes a `&mut` shadow into which the gradient is added; an `Active` return adds a last
/// parameter, the seed. It returns the primal value (unless `ActiveOnly`) and the adjoints
/// of the `Active` parameters.
#[proc_macro_attribute]
pub fn autodiff_reverse(args: TokenStream, item: TokenStream) -> TokenStream {
    let (args, item) = (hygiene::uniform(args.into()), hygiene::uniform(item.into()));
    guarded(&item, || {
        expand(Trigger::Companion(Mode::Reverse, args), item.clone())
    })
    .into()
}

/// Makes a function or method callable from other differentiated code, in every mode,
/// without generating a named companion.
///
/// On an `impl` block, makes its methods differentiable: those that carry one of the
/// attributes, or every method when none does. On a trait implementation (`impl Model for
/// Affine`), which may define only the trait's items, the generated methods and companions
/// go into an inherent `impl Affine` beside it.
///
/// On a struct or enum declaration, gives the type a zero shadow (zeros for its float
/// members, buffers and marked types, copies of its integers and strings), so that a
/// constant value of it can be passed where a callee differentiates it (`m.predict(x)`
/// with `m` `Const`).
///
/// An associated function without `self` (called as `Self::f(..)` or `Type::f(..)`) that
/// does not mention `Self` takes `#[differentiable(associated)]`: a macro cannot tell it
/// from a free function otherwise.
///
/// On a reverse rule (`fn f_rev(..) -> (value, impl FnOnce(..))`, ending in
/// `(value, |shadows.., dret| pullback)`), it lets the rule be differentiated again:
/// forward over reverse (Hessian-vector products) then differentiates the rule's value
/// and its pullback instead of failing to compile.
#[proc_macro_attribute]
pub fn differentiable(args: TokenStream, item: TokenStream) -> TokenStream {
    let (args, item) = (hygiene::uniform(args.into()), hygiene::uniform(item.into()));
    guarded(&item, || differentiable_item(args, item.clone())).into()
}

/// The expansion of `#[differentiable(args)]` on `item`.
fn differentiable_item(
    args: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
) -> proc_macro2::TokenStream {
    if args.to_string() == "associated" {
        // Kept on the item, where the expansion reads it (and removes it).
        let item = quote::quote!(#[differentiable(associated)] #item);
        return expand(Trigger::Differentiable, item);
    }
    if !args.is_empty() {
        let err = syn::Error::new_spanned(
            &args,
            "`#[differentiable]` takes no arguments but `associated`",
        )
        .to_compile_error();
        return quote::quote!(#err #item);
    }
    if let Ok(s) = syn::parse2::<syn::ItemStruct>(item.clone()) {
        return zero_struct::expand(&zero_struct::Declaration::Struct(s));
    }
    if let Ok(e) = syn::parse2::<syn::ItemEnum>(item.clone()) {
        return zero_struct::expand(&zero_struct::Declaration::Enum(e));
    }
    if let Ok(imp) = syn::parse2::<syn::ItemImpl>(item.clone()) {
        return impl_blocks::expand_impl(imp);
    }
    if let Ok(func) = syn::parse2::<syn::ImplItemFn>(item.clone())
        && rule_nesting::is_reverse_rule(&func)
    {
        if !nested::ENABLED {
            // Nothing to derive: the rule is used as it is, in first-order code.
            return item;
        }
        return match rule_nesting::expand(&func) {
            Ok(out) => out,
            Err(e) => {
                let err = e.to_compile_error();
                quote::quote!(#err #item)
            }
        };
    }
    expand(Trigger::Differentiable, item)
}

/// Gives a function its own derivative: `#[custom_rule(forward = f_fwd, reverse = f_rev)]`
/// (either or both). Differentiated code then uses the rule at every call of the function,
/// in every mode. See the `autodiff_core` documentation for the signatures of the rules.
#[proc_macro_attribute]
pub fn custom_rule(args: TokenStream, item: TokenStream) -> TokenStream {
    let (args, item) = (hygiene::uniform(args.into()), hygiene::uniform(item.into()));
    guarded(&item, || rules::expand(args, item.clone())).into()
}

/// Runs an expansion; should it panic (a bug of the macro), the user's item is emitted
/// as written beside an error that says so, so that the rest of the crate still compiles.
fn guarded(
    item: &proc_macro2::TokenStream,
    expansion: impl FnOnce() -> proc_macro2::TokenStream,
) -> proc_macro2::TokenStream {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(expansion)) {
        Ok(out) => out,
        Err(payload) => {
            let why = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied())
                .unwrap_or("an internal error");
            let msg = format!(
                "autodiff: the macro failed on this item ({why}); the item is kept as written, without derivatives"
            );
            quote::quote!(::core::compile_error!(#msg); #item)
        }
    }
}

#[cfg(test)]
mod guard_tests {
    #[test]
    fn a_panicking_expansion_keeps_the_item_beside_an_error() {
        let item = quote::quote!(
            fn f(x: f64) -> f64 {
                x
            }
        );
        let out = super::guarded(&item, || panic!("an example failure")).to_string();
        assert!(out.starts_with(":: core :: compile_error !"), "{out}");
        assert!(out.contains("an example failure"), "{out}");
        assert!(out.ends_with(&item.to_string()), "{out}");
    }
}
