//! The ADBench LSTM objective (see `data/adbench/README.md`).
//!
//! Parameters: `main` (per layer a weight block and a bias block of `4b` values each,
//! gates in the order forget, input, output, change) and `extra` (input weight, output
//! weight, output bias, `b` values each). The state (per layer hidden then cell) and the
//! sequence are constant.

use crate::adbench::LstmInput;
use autodiff_core::prelude::*;

/// `1 / (1 + e^-x)`.
#[differentiable]
pub fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// One LSTM cell over `b` units: updates `hidden` and `cell` in place. `params` is the
/// layer's block of `8b` values: the weights of the four gates, then their biases.
#[differentiable]
pub fn lstm_model(b: usize, params: &[f64], hidden: &mut [f64], cell: &mut [f64], input: &[f64]) {
    for i in 0..b {
        let forget = sigmoid(input[i] * params[i] + params[4 * b + i]);
        let ingate = sigmoid(hidden[i] * params[b + i] + params[5 * b + i]);
        let outgate = sigmoid(input[i] * params[2 * b + i] + params[6 * b + i]);
        let change = (hidden[i] * params[3 * b + i] + params[7 * b + i]).tanh();
        cell[i] = cell[i] * forget + ingate * change;
        hidden[i] = outgate * cell[i].tanh();
    }
}

/// One time step through all `l` layers: writes the prediction into `ypred`.
#[allow(clippy::too_many_arguments)]
#[differentiable]
pub fn lstm_predict(
    l: usize,
    b: usize,
    main: &[f64],
    extra: &[f64],
    hidden: &mut [f64],
    cell: &mut [f64],
    input: &[f64],
    ypred: &mut [f64],
) {
    let mut xp = vec![0.0; b];
    for i in 0..b {
        xp[i] = input[i] * extra[i];
    }
    for li in 0..l {
        lstm_model(
            b,
            &main[li * 8 * b..(li + 1) * 8 * b],
            &mut hidden[li * b..(li + 1) * b],
            &mut cell[li * b..(li + 1) * b],
            &xp,
        );
        xp.copy_from_slice(&hidden[li * b..(li + 1) * b]);
    }
    for i in 0..b {
        ypred[i] = xp[i] * extra[b + i] + extra[2 * b + i];
    }
}

/// The LSTM loss over the whole sequence, with the generated gradient
/// `lstm_objective_grad(main, d_main, extra, d_extra, state, seq, l, b, dret) -> f`.
#[autodiff_reverse(
    lstm_objective_grad,
    Duplicated,
    Duplicated,
    Const,
    Const,
    Const,
    Const,
    Active
)]
pub fn lstm_objective(
    main: &[f64],
    extra: &[f64],
    state: &[f64],
    seq: &[f64],
    l: usize,
    b: usize,
) -> f64 {
    let c = seq.len() / b;
    let mut hidden = vec![0.0; l * b];
    let mut cell = vec![0.0; l * b];
    for li in 0..l {
        for i in 0..b {
            hidden[li * b + i] = state[2 * li * b + i];
            cell[li * b + i] = state[2 * li * b + b + i];
        }
    }
    let mut ypred = vec![0.0; b];
    let mut total = 0.0;
    for t in 0..c - 1 {
        lstm_predict(
            l,
            b,
            main,
            extra,
            &mut hidden,
            &mut cell,
            &seq[t * b..(t + 1) * b],
            &mut ypred,
        );
        // log(Σ exp(ŷ) + 2), not max-shifted, as in the reference.
        let mut se = 0.0;
        for i in 0..b {
            se += ypred[i].exp();
        }
        let lse = (se + 2.0).ln();
        for i in 0..b {
            total += seq[(t + 1) * b + i] * (ypred[i] - lse);
        }
    }
    -total / ((c - 1) * b) as f64
}

/// The gradient into `gm`, `ge` (overwritten), whose generated forward companion is the
/// Hessian-vector product `lstm_hvp(main, v_main, extra, v_extra, gm, hv_main, ge,
/// hv_extra, state, seq, l, b)` (forward over reverse, through the cell's calls).
#[allow(clippy::too_many_arguments)]
#[autodiff_forward(lstm_hvp, Dual, Dual, Dual, Dual, Const, Const, Const, Const)]
pub fn lstm_gradient(
    main: &[f64],
    extra: &[f64],
    gm: &mut [f64],
    ge: &mut [f64],
    state: &[f64],
    seq: &[f64],
    l: usize,
    b: usize,
) {
    gm.fill(0.0);
    ge.fill(0.0);
    lstm_objective_grad(main, gm, extra, ge, state, seq, l, b, 1.0);
}

/// The same loss in one function, without calls: the cell and the prediction inlined.
/// Generated gradient: `lstm_objective_inline_grad` (same signature as
/// [`lstm_objective_grad`]).
#[autodiff_reverse(
    lstm_objective_inline_grad,
    Duplicated,
    Duplicated,
    Const,
    Const,
    Const,
    Const,
    Active
)]
pub fn lstm_objective_inline(
    main: &[f64],
    extra: &[f64],
    state: &[f64],
    seq: &[f64],
    l: usize,
    b: usize,
) -> f64 {
    let c = seq.len() / b;
    let mut hidden = vec![0.0; l * b];
    let mut cell = vec![0.0; l * b];
    for li in 0..l {
        for i in 0..b {
            hidden[li * b + i] = state[2 * li * b + i];
            cell[li * b + i] = state[2 * li * b + b + i];
        }
    }
    let mut xp = vec![0.0; b];
    let mut total = 0.0;
    for t in 0..c - 1 {
        for i in 0..b {
            xp[i] = seq[t * b + i] * extra[i];
        }
        for li in 0..l {
            let o = li * 8 * b;
            for i in 0..b {
                let h = hidden[li * b + i];
                let forget = 1.0 / (1.0 + (-(xp[i] * main[o + i] + main[o + 4 * b + i])).exp());
                let ingate = 1.0 / (1.0 + (-(h * main[o + b + i] + main[o + 5 * b + i])).exp());
                let outgate =
                    1.0 / (1.0 + (-(xp[i] * main[o + 2 * b + i] + main[o + 6 * b + i])).exp());
                let change = (h * main[o + 3 * b + i] + main[o + 7 * b + i]).tanh();
                let cn = cell[li * b + i] * forget + ingate * change;
                cell[li * b + i] = cn;
                hidden[li * b + i] = outgate * cn.tanh();
                xp[i] = hidden[li * b + i];
            }
        }
        let mut se = 0.0;
        for i in 0..b {
            se += (xp[i] * extra[b + i] + extra[2 * b + i]).exp();
        }
        let lse = (se + 2.0).ln();
        for i in 0..b {
            total += seq[(t + 1) * b + i] * (xp[i] * extra[b + i] + extra[2 * b + i] - lse);
        }
    }
    -total / ((c - 1) * b) as f64
}

/// A loaded instance, ready to call.
#[derive(Clone, Debug)]
pub struct Lstm {
    /// The inputs.
    pub input: LstmInput,
}

impl Lstm {
    /// Wraps an instance.
    pub fn new(input: LstmInput) -> Self {
        Lstm { input }
    }

    /// Number of parameters (`8lb + 3b`).
    pub fn num_params(&self) -> usize {
        self.input.main.len() + self.input.extra.len()
    }

    /// The objective.
    pub fn objective(&self) -> f64 {
        let p = &self.input;
        lstm_objective(&p.main, &p.extra, &p.state, &p.seq, p.l, p.b)
    }

    /// The generated gradient: adds `∇f` into `grad` (`[main, extra]`), returns `f`.
    pub fn gradient(&self, grad: &mut [f64]) -> f64 {
        let p = &self.input;
        let (gm, ge) = grad.split_at_mut(p.main.len());
        lstm_objective_grad(&p.main, gm, &p.extra, ge, &p.state, &p.seq, p.l, p.b, 1.0)
    }

    /// The generated Hessian-vector product ([`lstm_hvp`]): sets `grad = ∇f` and
    /// `hv = H·v`, laid out as `[main, extra]`.
    pub fn hvp(&self, v: &[f64], grad: &mut [f64], hv: &mut [f64]) {
        let p = &self.input;
        let nm = p.main.len();
        let (vm, ve) = v.split_at(nm);
        let (gm, ge) = grad.split_at_mut(nm);
        let (hm, he) = hv.split_at_mut(nm);
        lstm_hvp(
            &p.main, vm, &p.extra, ve, gm, hm, ge, he, &p.state, &p.seq, p.l, p.b,
        );
    }

    /// The objective without calls ([`lstm_objective_inline`]).
    pub fn objective_inline(&self) -> f64 {
        let p = &self.input;
        lstm_objective_inline(&p.main, &p.extra, &p.state, &p.seq, p.l, p.b)
    }

    /// The generated gradient of [`lstm_objective_inline`].
    pub fn gradient_inline(&self, grad: &mut [f64]) -> f64 {
        let p = &self.input;
        let (gm, ge) = grad.split_at_mut(p.main.len());
        lstm_objective_inline_grad(&p.main, gm, &p.extra, ge, &p.state, &p.seq, p.l, p.b, 1.0)
    }

    /// The hand-written gradient: adds `∇f` into `grad`, returns `f`.
    pub fn gradient_hand(&self, grad: &mut [f64]) -> f64 {
        let p = &self.input;
        let (gm, ge) = grad.split_at_mut(p.main.len());
        lstm_grad_hand(&p.main, &p.extra, &p.state, &p.seq, p.l, p.b, gm, ge)
    }
}

/// Hand-written LSTM gradient: a forward pass that stores every gate and state, then
/// the reverse pass (backpropagation through time). Adds into `gm` and `ge`, returns `f`.
#[allow(clippy::too_many_arguments)]
pub fn lstm_grad_hand(
    main: &[f64],
    extra: &[f64],
    state: &[f64],
    seq: &[f64],
    l: usize,
    b: usize,
    gm: &mut [f64],
    ge: &mut [f64],
) -> f64 {
    let c = seq.len() / b;
    let steps = c - 1;
    let sig = |x: f64| 1.0 / (1.0 + (-x).exp());
    // Per step and layer: the layer's input, hidden and cell before, the four gates,
    // tanh(cell after). Per step: the prediction's softmax weights.
    let lb = l * b;
    let mut xin = vec![0.0; steps * lb];
    let mut h_prev = vec![0.0; steps * lb];
    let mut c_prev = vec![0.0; steps * lb];
    let mut gates = vec![0.0; steps * lb * 4];
    let mut tanh_c = vec![0.0; steps * lb];
    let mut xp_last = vec![0.0; steps * b];
    let mut soft = vec![0.0; steps * b];

    let mut hidden = vec![0.0; lb];
    let mut cell = vec![0.0; lb];
    for li in 0..l {
        hidden[li * b..(li + 1) * b].copy_from_slice(&state[2 * li * b..2 * li * b + b]);
        cell[li * b..(li + 1) * b].copy_from_slice(&state[2 * li * b + b..2 * (li + 1) * b]);
    }
    let (w_in, rest) = extra.split_at(b);
    let (w_out, b_out) = rest.split_at(b);
    let mut total = 0.0;
    let mut xp = vec![0.0; b];
    let mut ypred = vec![0.0; b];
    for t in 0..steps {
        let input = &seq[t * b..(t + 1) * b];
        for i in 0..b {
            xp[i] = input[i] * w_in[i];
        }
        for li in 0..l {
            let w = &main[li * 8 * b..li * 8 * b + 4 * b];
            let bs = &main[li * 8 * b + 4 * b..(li + 1) * 8 * b];
            let o = t * lb + li * b;
            xin[o..o + b].copy_from_slice(&xp);
            h_prev[o..o + b].copy_from_slice(&hidden[li * b..(li + 1) * b]);
            c_prev[o..o + b].copy_from_slice(&cell[li * b..(li + 1) * b]);
            let g = &mut gates[4 * o..4 * o + 4 * b];
            for i in 0..b {
                let h = hidden[li * b + i];
                let f = sig(xp[i] * w[i] + bs[i]);
                let ig = sig(h * w[b + i] + bs[b + i]);
                let og = sig(xp[i] * w[2 * b + i] + bs[2 * b + i]);
                let ch = (h * w[3 * b + i] + bs[3 * b + i]).tanh();
                let cn = cell[li * b + i] * f + ig * ch;
                let tc = cn.tanh();
                g[i] = f;
                g[b + i] = ig;
                g[2 * b + i] = og;
                g[3 * b + i] = ch;
                tanh_c[o + i] = tc;
                cell[li * b + i] = cn;
                hidden[li * b + i] = og * tc;
            }
            xp.copy_from_slice(&hidden[li * b..(li + 1) * b]);
        }
        xp_last[t * b..(t + 1) * b].copy_from_slice(&xp);
        let mut se = 0.0;
        for i in 0..b {
            ypred[i] = xp[i] * w_out[i] + b_out[i];
            se += ypred[i].exp();
        }
        let s2 = se + 2.0;
        let lse = s2.ln();
        let ygold = &seq[(t + 1) * b..(t + 2) * b];
        let ysum: f64 = ygold.iter().sum();
        for i in 0..b {
            total += ygold[i] * (ypred[i] - lse);
            // ∂/∂ŷ_i of Σ_j y_j (ŷ_j - lse) = y_i - (Σ_j y_j) e^{ŷ_i} / s2.
            soft[t * b + i] = ygold[i] - ysum * ypred[i].exp() / s2;
        }
    }
    let count = (steps * b) as f64;
    let loss = -total / count;

    // Reverse pass.
    let scale = -1.0 / count;
    let (gw_in, grest) = ge.split_at_mut(b);
    let (gw_out, gb_out) = grest.split_at_mut(b);
    let mut dh = vec![0.0; lb]; // adjoint of each layer's hidden, carried across steps
    let mut dc = vec![0.0; lb];
    let mut dx = vec![0.0; b];
    for t in (0..steps).rev() {
        // Output layer.
        for i in 0..b {
            let dy = scale * soft[t * b + i];
            gb_out[i] += dy;
            gw_out[i] += dy * xp_last[t * b + i];
            dx[i] = dy * w_out[i];
        }
        for li in (0..l).rev() {
            let w = &main[li * 8 * b..li * 8 * b + 4 * b];
            let (gw, gb) = gm[li * 8 * b..(li + 1) * 8 * b].split_at_mut(4 * b);
            let o = t * lb + li * b;
            let g = &gates[4 * o..4 * o + 4 * b];
            for i in 0..b {
                let (f, ig, og, ch) = (g[i], g[b + i], g[2 * b + i], g[3 * b + i]);
                let tc = tanh_c[o + i];
                // hidden = og * tanh(cell): the layer's output feeds the next layer's
                // input (dx) and this layer at the next step (dh).
                let dhi = dh[li * b + i] + dx[i];
                let dog = dhi * tc;
                let dcn = dc[li * b + i] + dhi * og * (1.0 - tc * tc);
                let df = dcn * c_prev[o + i];
                let dig = dcn * ch;
                let dch = dcn * ig;
                dc[li * b + i] = dcn * f;
                // Pre-activations.
                let zf = df * f * (1.0 - f);
                let zi = dig * ig * (1.0 - ig);
                let zo = dog * og * (1.0 - og);
                let zc = dch * (1.0 - ch * ch);
                let xi = xin[o + i];
                let hp = h_prev[o + i];
                gw[i] += zf * xi;
                gw[b + i] += zi * hp;
                gw[2 * b + i] += zo * xi;
                gw[3 * b + i] += zc * hp;
                gb[i] += zf;
                gb[b + i] += zi;
                gb[2 * b + i] += zo;
                gb[3 * b + i] += zc;
                dh[li * b + i] = zi * w[b + i] + zc * w[3 * b + i];
                dx[i] = zf * w[i] + zo * w[2 * b + i];
            }
        }
        // The first layer's input is the scaled sequence element.
        let input = &seq[t * b..(t + 1) * b];
        for i in 0..b {
            gw_in[i] += dx[i] * input[i];
        }
    }
    loss
}
