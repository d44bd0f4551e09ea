use autodiff_core::prelude::*;

// An iterator held in a variable is read where `next` and `nth` take items from it
// unconditionally, before the rest is consumed; a `next` in a branch may or may not have
// taken an item, so the rest cannot be written as the chain past a known count: the
// error names the iterator.
#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    let mut it = x.iter().map(|v| v * 2.0);
    if x[0] > 1.0 {
        it.next();
    }
    it.sum()
}

fn main() {}
