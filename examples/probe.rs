use autodiff_core::prelude::*;
pub struct Pt {
    pub a: f64,
    pub b: f64,
}
impl Pt {
    #[differentiable]
    pub fn dot(&self, o: &Pt) -> f64 {
        self.a * o.a + self.b * o.b
    }
}
#[differentiable]
pub fn pt_cross(p: &Pt, q: &Pt) -> f64 {
    p.a * q.b - p.b * q.a
}

#[autodiff_forward(f_fwd, Const, Dual, Dual)]
#[autodiff_reverse(f_rev, Const, Active, Active)]
pub fn f(x: f64, y: f64) -> f64 {
    let p = Pt { a: x, b: x * 2.0 };
    let q = Pt { a: y, b: x };
    p.dot(&Pt { a: 1.0, b: x }) + pt_cross(&p, &q) * y + Pt { a: x, b: 0.5 }.dot(&p)
}
fn main() {
    let (x, y) = (0.3, 0.7);
    println!("{:?} {:?}", f_fwd(x, y, 1.0), f_rev(x, y, 1.0));
    let h = 1e-6;
    println!("fd {}", (f(x, y + h) - f(x, y - h)) / (2.0 * h));
}
