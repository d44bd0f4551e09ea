//! Float arrays taken by value (`fn rhs(s: [f64; 2], k: f64) -> [f64; 2]`).
//!
//! An array is `Copy`, so a callee that takes one by value cannot hand its derivative
//! back through it. The derivative code therefore reads such a parameter through a
//! reference, as it reads `&[f64; 2]`: the companions and the calling protocol are
//! derived from the function with `s: &[f64; 2]` and a first statement `let s = *s;`,
//! which copies it as the call did (so the body may write its copy, `mut s`, and the
//! caller's array is never changed). The shadow that comes with the reference carries
//! the array's tangent or receives its adjoint. The function itself keeps its signature;
//! a differentiated caller passes such an argument by value to it and by reference to its
//! companions (see `Arg::Copied`).

use crate::collections::HashSet;
use crate::signature::is_float_type;
use syn::{FnArg, ImplItemFn, Pat, Type};

/// Whether `ty` is an array of floats, `[f64; 2]`, `[T; N]` (of a float type parameter).
pub fn is_float_array(ty: &Type, floats: &HashSet<String>) -> bool {
    matches!(ty, Type::Array(a) if is_float_type(&a.elem, floats))
}

/// `func` with its float arrays taken by value read through references instead (see the
/// module's documentation), and their names; `None` when it takes none.
pub fn read_by_reference(
    func: &ImplItemFn,
    floats: &HashSet<String>,
) -> Option<(ImplItemFn, Vec<syn::Ident>)> {
    let mut out = func.clone();
    let (mut names, mut copies) = (Vec::new(), Vec::<syn::Stmt>::new());
    for input in out.sig.inputs.iter_mut() {
        let FnArg::Typed(pt) = input else { continue };
        let Pat::Ident(pi) = &mut *pt.pat else {
            continue;
        };
        if pi.subpat.is_some() || pi.by_ref.is_some() || !is_float_array(&pt.ty, floats) {
            continue;
        }
        let name = pi.ident.clone();
        names.push(name.clone());
        let copy: syn::Stmt = match pi.mutability.take() {
            Some(m) => syn::parse_quote_spanned!(name.span()=> let #m #name = *#name;),
            None => syn::parse_quote_spanned!(name.span()=> let #name = *#name;),
        };
        copies.push(copy);
        let ty = &pt.ty;
        *pt.ty = syn::parse_quote_spanned!(name.span()=> &#ty);
    }
    if names.is_empty() {
        return None;
    }
    out.block.stmts.splice(0..0, copies);
    Some((out, names))
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::ToTokens;

    #[test]
    fn arrays_of_floats_are_read_through_references() {
        let f: ImplItemFn = syn::parse_quote! {
            fn rhs<T: Real>(s: [f64; 2], mut u: [T; 3], n: [usize; 2], k: f64) -> f64 {
                s[0] + u[1] * k
            }
        };
        let floats: HashSet<String> = ["T".to_string()].into_iter().collect();
        let (g, names) = read_by_reference(&f, &floats).expect("two arrays of floats");
        assert_eq!(names, ["s", "u"]);
        let text = g.to_token_stream().to_string();
        assert!(text.contains("s : & [f64 ; 2]"), "{text}");
        assert!(text.contains("u : & [T ; 3]"), "{text}");
        assert!(text.contains("n : [usize ; 2]"), "{text}");
        assert!(
            text.contains("{ let s = * s ; let mut u = * u ; s [0]"),
            "{text}"
        );
    }

    #[test]
    fn functions_without_arrays_by_value_are_left_alone() {
        let f: ImplItemFn = syn::parse_quote! {
            fn g(s: &[f64; 2], n: [usize; 2], k: f64) -> f64 { s[0] * k }
        };
        assert!(read_by_reference(&f, &HashSet::default()).is_none());
    }
}
