//! Which element accesses a reverse companion replays without a bounds check
//! (`__ad::replayed_at`): those of slice parameters that keep their lengths, of their
//! shadows, and of local buffers of fixed length; never those of a buffer that may grow
//! or shrink, whose later length can differ from the one the forward sweep checked.

use crate::activity::{Mode, parse_spec};
use crate::expand::{Gen, Nesting};
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
    let code = g.reverse_companion(&spec).to_string();
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
