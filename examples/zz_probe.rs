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
#[autodiff_reverse(d_t, Duplicated, Active)]
fn t(x: &[f64]) -> f64 {
    let mut s = 1.0;
    for i in 0..x.len() {
        if x[i] > 0.0 {
            s = s * x[i].sin();
        } else {
            s = s + x[i] * x[i];
        }
    }
    s
}
#[autodiff_forward(hvp_t, Dual, Dual)]
fn grad_t(x: &[f64], dx: &mut [f64]) {
    dx.fill(0.0);
    d_t(x, dx, 1.0);
}
#[autodiff_reverse(d_u, Active, Active)]
fn u(x: f64) -> f64 {
    f_jvp(x, 1.0).1
}
#[test]
fn more() {
    let x = [0.5, -0.3, 1.2];
    let v = [0.2, 1.0, -0.4];
    let mut g = [0.0; 3];
    let mut hv = [0.0; 3];
    hvp_t(&x, &v, &mut g, &mut hv);
    let h = 1e-6;
    let xp: Vec<f64> = x.iter().zip(&v).map(|(a, b)| a + h * b).collect();
    let xm: Vec<f64> = x.iter().zip(&v).map(|(a, b)| a - h * b).collect();
    let (mut gp, mut gm) = ([0.0; 3], [0.0; 3]);
    d_t(&xp, &mut gp, 1.0);
    d_t(&xm, &mut gm, 1.0);
    for i in 0..3 { println!("{} {}", hv[i], (gp[i] - gm[i]) / (2.0 * h)); }
    let x = 0.7f64;
    println!("{:?} want {}", d_u(x, 1.0), 2.0 * x.cos() * x.exp());
}
#[autodiff_forward(f4, 4, Dual, Dual, Dual)]
#[autodiff_forward(f3o, 3, Dual, Const, DualOnly)]
fn fb(x: &[f64], a: f64) -> f64 {
    x[0] * x[1].sin() + a * x[2]
}
#[autodiff_forward(v2, 2, Dual, Dual)]
fn vb(x: &[f64], y: &mut [f64]) {
    for i in 0..x.len() {
        y[i] += x[i] * x[i];
    }
}
#[test]
fn batched() {
    let x = [1.0, 2.0, 3.0];
    let e = |i: usize| { let mut v = [0.0; 3]; v[i] = 1.0; v };
    let r = f4(&x, &e(0), &e(1), &e(2), &[0.0; 3], 0.5, 0.0, 0.0, 0.0, 1.0);
    println!("{r:?}");
    println!("{:?}", f3o(&x, &e(0), &e(1), &e(2), 0.5));
    let mut y = [1.0; 3];
    let (mut d0, mut d1) = ([0.0; 3], [0.0; 3]);
    v2(&x, &e(0), &e(2), &mut y, &mut d0, &mut d1);
    println!("{y:?} {d0:?} {d1:?}");
}
