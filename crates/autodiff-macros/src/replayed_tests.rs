//! Which element accesses a reverse companion replays without a bounds check
//! (`__ad::replayed_at`): those of slice parameters that keep their lengths, of their
//! shadows, and of local buffers of fixed length; never those of a buffer that may grow
//! or shrink, whose later length can differ from the one the forward sweep checked.
//! The forward transform of a reverse companion (H·v) replays the same elements where
//! they, and their tangents, keep their lengths in its own code.

use crate::activity::{Mode, parse_spec};
use crate::expand::{Gen, Nesting, Trigger, expand};
use crate::lower::Lowerer;
use syn::ImplItemFn;

/// The names whose elements `args`' reverse companion of `func` reaches unchecked.
fn replayed_bases(func: ImplItemFn, args: proc_macro2::TokenStream) -> Vec<String> {
    let sig = crate::signature::analyse(&func.sig).unwrap();
    let (body, kinds) = Lowerer::new(&sig).lower_body(&func.block, &sig).unwrap();
    let g = Gen {
        func: &func,
        sig: &sig,
        body: &body,
        kinds: &kinds,
        fail_fwd: None,
        fail_rev: None,
        nesting: Nesting::Derive,
        assoc: false,
        delegate: None,
        npull: None,
    };
    let spec = parse_spec(Mode::Reverse, args, &sig).unwrap();
    bases_in(&g.reverse_companion(&spec).to_string())
}

/// The names whose elements `code` reaches through `__ad::replayed_at(_mut)`.
fn bases_in(code: &str) -> Vec<String> {
    let mut bases: Vec<String> = code
        .split("replayed_at")
        .skip(1)
        .filter_map(|rest| {
            let rest = rest.trim_start_matches("_mut").trim_start();
            let rest = rest
                .strip_prefix("(")?
                .trim_start()
                .strip_prefix("&")?
                .trim_start();
            let rest = rest.strip_prefix("mut ").unwrap_or(rest).trim_start();
            Some(rest.split_whitespace().next()?.to_string())
        })
        .collect();
    bases.sort();
    bases.dedup();
    bases
}

#[test]
fn slices_their_shadows_and_fixed_buffers_are_replayed() {
    let bases = replayed_bases(
        syn::parse_quote! {
            fn f(x: &[f64], w: &[f64; 3], n: usize) -> f64 {
                let mut t = vec![0.0; n];
                for i in 0..n {
                    t[i] = x[i] * w[i % 3];
                }
                let mut s = 0.0;
                for i in 0..n {
                    s += t[i] * t[i];
                }
                s
            }
        },
        quote::quote!(df, Duplicated, Duplicated, Const, Active),
    );
    // (The local `t` is renamed `__adN_t`, its shadow `__b___adN_t`.)
    let local = |prefix: &str| {
        bases
            .iter()
            .any(|b| b.starts_with(prefix) && b.ends_with("_t"))
    };
    assert!(local("__ad") && local("__b___ad"), "{bases:?}");
    for name in ["x", "__b_x", "w", "__b_w"] {
        assert!(
            bases.iter().any(|b| b == name),
            "{name} not replayed: {bases:?}"
        );
    }
}

#[test]
fn buffers_that_may_change_length_are_not_replayed() {
    let bases = replayed_bases(
        syn::parse_quote! {
            fn f(x: &[f64], v: &mut Vec<f64>, mut y: &[f64]) -> f64 {
                let mut t = vec![0.0; 2];
                t.push(x[0]);
                let mut s = 0.0;
                for i in 0..3 {
                    s += t[i] * v[i] * y[i] * x[i];
                }
                v[0] = s;
                y = &x[1..];
                s + y[0]
            }
        },
        quote::quote!(df, Duplicated, Duplicated, Duplicated, Active),
    );
    assert_eq!(bases, ["__b_x", "x"], "{bases:?}");
}

/// The names whose elements the forward transform of `item`'s all-active reverse
/// companion (its H·v variant, `__ad_fwd___ad_npull`) reaches unchecked.
fn hvp_replayed_bases(
    item: proc_macro2::TokenStream,
    args: proc_macro2::TokenStream,
) -> Vec<String> {
    let code = expand(Trigger::Companion(Mode::Reverse, args), item).to_string();
    let start = code.find("fn __ad_fwd___ad_npull").expect("an H·v variant");
    let end = code[start + 1..]
        .find("pub fn")
        .map_or(code.len(), |e| start + 1 + e);
    bases_in(&code[start..end])
}

#[test]
fn hessian_vector_products_replay_slices_shadows_buffers_and_their_tangents() {
    let bases = hvp_replayed_bases(
        quote::quote! {
            fn f(x: &[f64], n: usize) -> f64 {
                let mut t = vec![0.0; n];
                for i in 0..n {
                    t[i] = x[i] * x[i].sin();
                }
                let mut s = 0.0;
                for i in 0..n {
                    s += t[i] * x[i];
                }
                s
            }
        },
        quote::quote!(df, Duplicated, Const, Active),
    );
    // `x`, its shadow `__nb_x` (cut to `x`'s length by a statement the H·v code keeps),
    // their tangents, and the local `t` (renamed `__adN_t`), its shadow `__adN_nb_t`
    // and their tangents.
    for name in ["x", "__d_x", "__nb_x", "__d___nb_x"] {
        assert!(
            bases.iter().any(|b| b == name),
            "{name} not replayed: {bases:?}"
        );
    }
    let local = |prefix: &str, suffix: &str| {
        (bases.iter()).any(|b| b.starts_with(prefix) && b.ends_with(suffix))
    };
    assert!(local("__ad", "_t") && local("__d___ad", "_t"), "{bases:?}");
    assert!(
        local("__ad", "_nb_t") && local("__d___ad", "_nb_t"),
        "{bases:?}"
    );
}

#[test]
fn hessian_vector_products_check_a_shadow_lent_whole() {
    // The reverse sweep replays `t`'s shadow, which only `norm`'s pullback receives
    // whole. Its forward transform lends the shadow (and its tangent) whole by `&mut`
    // to `norm`'s H·v variant, which could resize a vector: neither is replayed there.
    let item = quote::quote! {
        fn f(x: &[f64]) -> f64 {
            let mut t = vec![0.0; 2];
            t[0] = x[0] * x[1];
            t[1] = x[1].cos();
            norm(&t) * t[0]
        }
    };
    let args = quote::quote!(df, Duplicated, Active);
    let first = {
        let func: ImplItemFn = syn::parse2(item.clone()).unwrap();
        replayed_bases(func, args.clone())
    };
    assert!(
        first
            .iter()
            .any(|b| b.starts_with("__b___ad") && b.ends_with("_t")),
        "{first:?}"
    );
    let bases = hvp_replayed_bases(item, args);
    assert!(bases.iter().any(|b| b == "__nb_x"), "{bases:?}");
    assert!(!bases.iter().any(|b| b.ends_with("_t")), "{bases:?}");
}
