//! A named reverse companion with the all-active activities takes its lowered body from
//! its function's nested variants (`Gen::npull`) instead of lowering its own code: the
//! protocol it gets must be the one that lowering its own code gives.

use crate::activity::{Mode, parse_spec};
use crate::expand::{Gen, Nesting};
use crate::lower::Lowerer;
use crate::nested::companion_protocol;
use crate::nested_calls::is_variant_companion;
use std::cell::OnceCell;
use syn::ImplItemFn;

fn assert_reuse_changes_nothing(func: ImplItemFn, args: proc_macro2::TokenStream) {
    let sig = crate::signature::analyse(&func.sig).unwrap();
    let (body, kinds) = Lowerer::new(&sig).lower_body(&func.block, &sig).unwrap();
    let npull = OnceCell::new();
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
        npull: Some(&npull),
    };
    let _ = g.protocol();
    let spec = parse_spec(Mode::Reverse, args, &sig).unwrap();
    assert!(is_variant_companion(&g, &spec));
    let companion = g.reverse_companion(&spec);
    let name = func.sig.ident.clone();
    let reused = npull
        .get()
        .expect("the nested variants lowered `__ad_npull`");
    let with = companion_protocol(&companion, Mode::Reverse, Some(name.clone()), Some(reused));
    let without = companion_protocol(&companion, Mode::Reverse, Some(name), None);
    assert!(!with.is_empty());
    assert_eq!(with.to_string(), without.to_string());
}

#[test]
fn a_loop_over_a_slice() {
    assert_reuse_changes_nothing(
        syn::parse_quote! {
            fn rosen(x: &[f64]) -> f64 {
                let mut s = 0.0;
                for i in 0..x.len() - 1 {
                    let a = 1.0 - x[i];
                    let b = x[i + 1] - x[i] * x[i];
                    s += a * a + 100.0 * b * b;
                }
                s
            }
        },
        quote::quote!(d_rosen, Duplicated, Active),
    );
}

#[test]
fn buffers_branches_and_math() {
    assert_reuse_changes_nothing(
        syn::parse_quote! {
            fn smooth_max(x: &[f64], k: usize, t: f64, out: &mut [f64]) -> f64 {
                let mut h = vec![0.0; x.len()];
                for _ in 0..k {
                    for i in 0..x.len() {
                        h[i] = (h[i] * t + x[i]).sin();
                    }
                }
                let mut m = h[0];
                for i in 1..h.len() {
                    m = m.max(h[i]);
                }
                let mut s = 0.0;
                for i in 0..h.len() {
                    let e = (h[i] - m).exp();
                    out[i] = if e > 0.5 { e * t } else { e / t };
                    s += e;
                }
                s.ln() + m
            }
        },
        quote::quote!(d_smooth_max, Duplicated, Const, Active, Duplicated, Active),
    );
}
