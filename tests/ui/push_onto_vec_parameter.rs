// A `&mut Vec` parameter's shadow is the caller's, reached as a slice: `push` onto the
// parameter is an error at the call, which says what to write instead.
use autodiff_core::prelude::*;

#[autodiff_reverse(d_record, Duplicated, Duplicated)]
fn record(x: &[f64], out: &mut Vec<f64>) {
    for v in x {
        out.push(v * v);
    }
}

fn main() {
    let mut out = Vec::new();
    record(&[1.0], &mut out);
}
