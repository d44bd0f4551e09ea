use autodiff_core::prelude::*;

#[autodiff_reverse(d_rosen, Duplicated, Active)]
#[autodiff_forward(rosen_jvp, Dual, Dual)]
fn rosen(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let a = 1.0 - x[i];
        let b = x[i + 1] - x[i] * x[i];
        s += a * a + 100.0 * b * b;
    }
    s
}

#[autodiff_forward(hvp_rosen, Dual, Dual)]
fn grad_rosen(x: &[f64], dx: &mut [f64]) {
    dx.fill(0.0);
    d_rosen(x, dx, 1.0);
}

#[autodiff_reverse(d_g, Duplicated, Active)]
fn g(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x.iter() {
        s += v * v;
    }
    s.cos()
}

#[autodiff_forward(hvp_g, Dual, Dual)]
fn grad_g(x: &[f64], dx: &mut [f64]) {
    dx.fill(0.0);
    d_g(x, dx, 1.0);
}

#[autodiff_forward(d2f, Dual, Dual)]
fn df(x: f64) -> f64 {
    f_jvp(x, 1.0).1
}
#[autodiff_forward(f_jvp, Dual, Dual)]
fn f(x: f64) -> f64 {
    x.sin() * x.exp()
}

fn main() {
    let x = [-1.2, 1.0, 0.5];
    let v = [1.0, 0.0, 0.0];
    let mut g = [0.0; 3];
    let mut hv = [0.0; 3];
    hvp_rosen(&x, &v, &mut g, &mut hv);
    println!("{g:?} {hv:?}");
    let x = [2.0];
    let mut g = [0.0; 1];
    let mut hv = [0.0; 1];
    hvp_g(&x, &[1.0], &mut g, &mut hv);
    println!("{g:?} {hv:?} want {} {}", -(4.0f64).sin() * 4.0, -2.0 * (4.0f64).sin() - 16.0 * (4.0f64).cos());
    let x = 0.7f64;
    println!("{:?} want {}", d2f(x, 1.0), 2.0 * x.cos() * x.exp());
}
