//! A two-layer perceptron on `ndarray` arrays: the mean squared error of
//! `w2 · tanh(W1 x + b1)` over a batch, with the weights as `Array2`/`Array1` parameters
//! read by index, as a user of `ndarray` writes it.

use autodiff_core::prelude::*;
use ndarray::{Array1, Array2};

/// `(1/n) Σ_s (w2 · tanh(W1 x_s + b1) − y_s)²` over the rows `x_s` of `xs`, with the
/// generated gradient `mlp_loss_grad(w1, d_w1, b1, d_b1, w2, d_w2, xs, ys, dret) -> f`.
#[autodiff_reverse(
    mlp_loss_grad,
    Duplicated,
    Duplicated,
    Duplicated,
    Const,
    Const,
    Active
)]
pub fn mlp_loss(
    w1: &Array2<f64>,
    b1: &Array1<f64>,
    w2: &Array1<f64>,
    xs: &Array2<f64>,
    ys: &Array1<f64>,
) -> f64 {
    let (hidden, inputs) = w1.dim();
    let n = xs.nrows();
    let mut h = vec![0.0; hidden];
    let mut loss = 0.0;
    for s in 0..n {
        for i in 0..hidden {
            let mut acc = b1[i];
            for j in 0..inputs {
                acc += w1[[i, j]] * xs[[s, j]];
            }
            h[i] = acc.tanh();
        }
        let mut pred = 0.0;
        for i in 0..hidden {
            pred += w2[i] * h[i];
        }
        let r = pred - ys[s];
        loss += r * r;
    }
    loss / n as f64
}

/// The gradient added into `g1`, `gb`, `g2`, whose generated forward companion is the
/// Hessian-vector product `mlp_hvp(w1, v1, b1, vb, w2, v2, g1, h1, gb, hb, g2, h2, xs,
/// ys)` (forward over reverse).
#[allow(clippy::too_many_arguments)]
#[autodiff_forward(mlp_hvp, Dual, Dual, Dual, Dual, Dual, Dual, Const, Const)]
pub fn mlp_gradient(
    w1: &Array2<f64>,
    b1: &Array1<f64>,
    w2: &Array1<f64>,
    g1: &mut Array2<f64>,
    gb: &mut Array1<f64>,
    g2: &mut Array1<f64>,
    xs: &Array2<f64>,
    ys: &Array1<f64>,
) {
    mlp_loss_grad(w1, g1, b1, gb, w2, g2, xs, ys, 1.0);
}

/// The same loss written with whole-array operations, as an `ndarray` user often writes
/// it: `tanh(X W1ᵀ + b1)` by a product of matrices, a broadcast bias and a map, then the
/// residuals `H w2 − y`. Generated gradient: `mlp_loss_arrays_grad` (the signature of
/// [`mlp_loss_grad`]).
#[autodiff_reverse(
    mlp_loss_arrays_grad,
    Duplicated,
    Duplicated,
    Duplicated,
    Const,
    Const,
    Active
)]
pub fn mlp_loss_arrays(
    w1: &Array2<f64>,
    b1: &Array1<f64>,
    w2: &Array1<f64>,
    xs: &Array2<f64>,
    ys: &Array1<f64>,
) -> f64 {
    let h = (xs.dot(&w1.t()) + b1).mapv(f64::tanh);
    let r = h.dot(w2) - ys;
    r.dot(&r) / xs.nrows() as f64
}

/// The gradient of [`mlp_loss_arrays`] added into `g1`, `gb`, `g2`, whose generated
/// forward companion is its Hessian-vector product `mlp_hvp_arrays` (the signature of
/// `mlp_hvp`).
#[allow(clippy::too_many_arguments)]
#[autodiff_forward(mlp_hvp_arrays, Dual, Dual, Dual, Dual, Dual, Dual, Const, Const)]
pub fn mlp_gradient_arrays(
    w1: &Array2<f64>,
    b1: &Array1<f64>,
    w2: &Array1<f64>,
    g1: &mut Array2<f64>,
    gb: &mut Array1<f64>,
    g2: &mut Array1<f64>,
    xs: &Array2<f64>,
    ys: &Array1<f64>,
) {
    mlp_loss_arrays_grad(w1, g1, b1, gb, w2, g2, xs, ys, 1.0);
}

/// Hand-written gradient: adds `∇f` into `g1`, `gb`, `g2` and returns `f`.
#[allow(clippy::too_many_arguments)]
pub fn mlp_loss_grad_hand(
    w1: &Array2<f64>,
    b1: &Array1<f64>,
    w2: &Array1<f64>,
    xs: &Array2<f64>,
    ys: &Array1<f64>,
    g1: &mut Array2<f64>,
    gb: &mut Array1<f64>,
    g2: &mut Array1<f64>,
) -> f64 {
    let (hidden, inputs) = w1.dim();
    let n = xs.nrows();
    let scale = 2.0 / n as f64;
    let mut h = vec![0.0; hidden];
    let mut loss = 0.0;
    for s in 0..n {
        let x = xs.row(s);
        for i in 0..hidden {
            let mut acc = b1[i];
            for j in 0..inputs {
                acc += w1[[i, j]] * x[j];
            }
            h[i] = acc.tanh();
        }
        let pred: f64 = (0..hidden).map(|i| w2[i] * h[i]).sum();
        let r = pred - ys[s];
        loss += r * r;
        let dr = scale * r;
        for i in 0..hidden {
            g2[i] += dr * h[i];
            let da = dr * w2[i] * (1.0 - h[i] * h[i]);
            gb[i] += da;
            for j in 0..inputs {
                g1[[i, j]] += da * x[j];
            }
        }
    }
    loss / n as f64
}

/// An instance: weights, a batch and its targets, drawn from a seed.
pub struct Mlp {
    /// First layer, `hidden × inputs`.
    pub w1: Array2<f64>,
    /// First layer's bias.
    pub b1: Array1<f64>,
    /// Output weights.
    pub w2: Array1<f64>,
    /// The batch, one sample per row.
    pub xs: Array2<f64>,
    /// The targets.
    pub ys: Array1<f64>,
}

impl Mlp {
    /// `inputs` features, `hidden` units, `n` samples.
    pub fn new(inputs: usize, hidden: usize, n: usize) -> Self {
        let r = |len, seed, scale: f64| crate::pseudo_random(len, seed, -scale, scale);
        let w_scale = 1.0 / (inputs as f64).sqrt();
        Mlp {
            w1: Array2::from_shape_vec((hidden, inputs), r(hidden * inputs, 21, w_scale))
                .expect("shape"),
            b1: Array1::from_vec(r(hidden, 22, 0.1)),
            w2: Array1::from_vec(r(hidden, 23, 1.0 / (hidden as f64).sqrt())),
            xs: Array2::from_shape_vec((n, inputs), r(n * inputs, 24, 1.0)).expect("shape"),
            ys: Array1::from_vec(r(n, 25, 1.0)),
        }
    }

    /// Number of parameters.
    pub fn num_params(&self) -> usize {
        self.w1.len() + self.b1.len() + self.w2.len()
    }

    /// Zeroed gradient arrays shaped like the parameters.
    pub fn zero_grads(&self) -> (Array2<f64>, Array1<f64>, Array1<f64>) {
        (
            Array2::zeros(self.w1.dim()),
            Array1::zeros(self.b1.len()),
            Array1::zeros(self.w2.len()),
        )
    }

    /// The loss.
    pub fn objective(&self) -> f64 {
        mlp_loss(&self.w1, &self.b1, &self.w2, &self.xs, &self.ys)
    }

    /// The generated gradient, added into `g`.
    pub fn gradient(&self, g: &mut (Array2<f64>, Array1<f64>, Array1<f64>)) -> f64 {
        let (g1, gb, g2) = g;
        mlp_loss_grad(
            &self.w1, g1, &self.b1, gb, &self.w2, g2, &self.xs, &self.ys, 1.0,
        )
    }

    /// The loss written with whole-array operations ([`mlp_loss_arrays`]).
    pub fn objective_arrays(&self) -> f64 {
        mlp_loss_arrays(&self.w1, &self.b1, &self.w2, &self.xs, &self.ys)
    }

    /// Its generated gradient, added into `g`.
    pub fn gradient_arrays(&self, g: &mut (Array2<f64>, Array1<f64>, Array1<f64>)) -> f64 {
        let (g1, gb, g2) = g;
        mlp_loss_arrays_grad(
            &self.w1, g1, &self.b1, gb, &self.w2, g2, &self.xs, &self.ys, 1.0,
        )
    }

    /// The hand-written gradient, added into `g`.
    pub fn gradient_hand(&self, g: &mut (Array2<f64>, Array1<f64>, Array1<f64>)) -> f64 {
        let (g1, gb, g2) = g;
        mlp_loss_grad_hand(&self.w1, &self.b1, &self.w2, &self.xs, &self.ys, g1, gb, g2)
    }

    /// H·v (`hv`, shaped like the parameters) along `v`, with the gradient in `g`; both
    /// are added into, so pass zeros.
    pub fn hvp(
        &self,
        v: &(Array2<f64>, Array1<f64>, Array1<f64>),
        g: &mut (Array2<f64>, Array1<f64>, Array1<f64>),
        hv: &mut (Array2<f64>, Array1<f64>, Array1<f64>),
    ) {
        mlp_hvp(
            &self.w1, &v.0, &self.b1, &v.1, &self.w2, &v.2, &mut g.0, &mut hv.0, &mut g.1,
            &mut hv.1, &mut g.2, &mut hv.2, &self.xs, &self.ys,
        );
    }

    /// H·v of the whole-array version ([`mlp_gradient_arrays`]), as [`Self::hvp`].
    pub fn hvp_arrays(
        &self,
        v: &(Array2<f64>, Array1<f64>, Array1<f64>),
        g: &mut (Array2<f64>, Array1<f64>, Array1<f64>),
        hv: &mut (Array2<f64>, Array1<f64>, Array1<f64>),
    ) {
        mlp_hvp_arrays(
            &self.w1, &v.0, &self.b1, &v.1, &self.w2, &v.2, &mut g.0, &mut hv.0, &mut g.1,
            &mut hv.1, &mut g.2, &mut hv.2, &self.xs, &self.ys,
        );
    }
}

/// Flattens a gradient `(W1, b1, w2)` in that order.
pub fn flatten(g: &(Array2<f64>, Array1<f64>, Array1<f64>)) -> Vec<f64> {
    g.0.iter()
        .chain(g.1.iter())
        .chain(g.2.iter())
        .copied()
        .collect()
}
