// An iterator adapter that the chains are not read through (`chain` followed by an
// adapter that counts positions, a `scan` read by another adapter) is named in the
// error, not the `map` after it nor the `iter` before it.
use autodiff_core::prelude::*;

#[autodiff_reverse(d_f, Duplicated, Active)]
fn f(x: &[f64]) -> f64 {
    x[..2]
        .iter()
        .chain(x[3..].iter())
        .enumerate()
        .map(|(i, v)| v.sin() * i as f64)
        .sum()
}

#[autodiff_reverse(d_running, Duplicated, Active)]
fn running(x: &[f64]) -> f64 {
    let v: Vec<f64> = x
        .iter()
        .scan(0.0, |st, &v| {
            *st += v;
            Some(*st * v)
        })
        .map(|r| r * 2.0)
        .collect();
    v[0]
}

// A loop over a chain that may leave early is not split in two: `chain` is named.
#[autodiff_reverse(d_until, Duplicated, Active)]
fn until(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x[..2].iter().chain(x[3..].iter()) {
        if *v > 1.0 {
            break;
        }
        s += v * v;
    }
    s
}

// A loop over rows flattened that may leave early: `flat_map` is named.
#[autodiff_reverse(d_first_rows, Duplicated, Active)]
fn first_rows(m: &[Vec<f64>]) -> f64 {
    let mut s = 0.0;
    for v in m.iter().flat_map(|r| r.iter()) {
        if *v > 1.0 {
            break;
        }
        s += v * v;
    }
    s
}

// `take_while` evaluates its iterator again to count the prefix, which an iterator held
// in a variable cannot be: the variable is refused as not consumed.
#[autodiff_reverse(d_prefix, Duplicated, Active)]
fn prefix(x: &[f64]) -> f64 {
    let squares = x.iter().map(|v| v * v);
    squares.take_while(|s| *s < 1.0).sum()
}

// A `filter_map` whose closure is not a choice between `Some(e)` and `None` is named.
#[autodiff_reverse(d_logs, Duplicated, Active)]
fn logs(x: &[f64]) -> f64 {
    x.iter().filter_map(|v| if *v > 0.0 { Some(v.ln()) } else { Some(0.0) }).sum()
}

// `map_while` of a closure that does not choose between `Some(e)` and `None`.
#[autodiff_reverse(d_doubled, Duplicated, Active)]
fn doubled(x: &[f64]) -> f64 {
    x.iter().map_while(|v| Some(v * 2.0)).sum()
}

fn main() {}
