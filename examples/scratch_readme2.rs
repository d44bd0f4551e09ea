use autodiff_core::prelude::*;
use autodiff_core::testing::check_gradient;

mod inner {
    use autodiff_core::prelude::*;
    #[differentiable]
    pub fn even(x: f64, n: u32) -> f64 {
        if n == 0 { 1.0 } else { x * odd(x, n - 1) }
    }
    #[differentiable]
    pub fn odd(x: f64, n: u32) -> f64 {
        if n == 0 { 1.0 } else { x * even(x, n - 1) }
    }
}

#[autodiff_reverse(d_a, Duplicated, Active)]
#[autodiff_forward(f_a, Dual, Dual)]
fn a(x: &[f64]) -> f64 {
    let k = 2.0;
    let scale = |v: f64| k * v;
    let mut buf = Vec::new();
    for c in x.chunks(2) {
        buf.push(c.iter().sum::<f64>());
    }
    let mut w = x.to_vec();
    w.fill(0.0);
    w.copy_from_slice(x);
    let (l, r) = x.split_at(1);
    let mut s = 0.0;
    x.iter().for_each(|v| {
        s += scale(*v) * v;
    });
    let g = match x.len() {
        0 if x.is_empty() => 1.0,
        1..=2 => 2.0 * f64::sin(x[0]),
        _ => 3.0 * x[0].cos(),
    };
    let mut t = 0.0;
    for i in (0..x.len()).rev().step_by(2) {
        t += x[i];
    }
    s + buf[0] * buf[1] + w[2] * l[0] + r[1] + g + t + inner::even(x[1], 3)
}

#[autodiff_reverse(d_rows, Duplicated, Active)]
fn rows(m: &Vec<Vec<f64>>) -> f64 {
    let mut s = 0.0;
    for i in 0..m.len() {
        s += m[i][0] * m[i][0];
    }
    s
}

fn main() {
    let x = [0.3, -0.7, 1.2];
    check_gradient(
        a,
        |x| {
            let mut g = vec![0.0; 3];
            d_a(x, &mut g, 1.0);
            g
        },
        &x,
        1e-6,
    )
    .unwrap();
    let _ = f_a;
    let m = vec![vec![1.0, 2.0], vec![3.0]];
    let mut dm = vec![vec![0.0, 0.0], vec![0.0]];
    println!("{:?} {:?}", d_rows(&m, &mut dm, 1.0), dm);
    println!("ok");
}
