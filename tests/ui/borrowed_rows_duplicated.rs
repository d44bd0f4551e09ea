// Rows borrowed from elsewhere (`&[&[f64]]`) are data: no shadow can be written through
// their shared references.
use autodiff_core::prelude::*;

#[autodiff_reverse(d_fit, Duplicated, Duplicated, Active)]
fn fit(w: &[f64], rows: &[&[f64]]) -> f64 {
    w[0] * rows[0][0]
}

fn main() {}
