//! The ADBench Gaussian mixture model objective (see `data/adbench/README.md`).
//!
//! Parameters: `alphas` (K), `means` (K·D), `icf` (K·D(D+1)/2: per component the log
//! diagonal `q` then the strictly lower triangle `l`, column by column).

use crate::adbench::GmmInput;
use autodiff_core::prelude::*;

/// π as the reference takes it (rounded to 12 digits, not `std::f64::consts::PI`).
#[allow(clippy::approx_constant)]
pub const PI: f64 = 3.14159265359;

/// Max-shifted `log Σ exp(x_i)`.
#[differentiable]
pub fn logsumexp(x: &[f64]) -> f64 {
    let mut mx = x[0];
    for i in 1..x.len() {
        mx = mx.max(x[i]);
    }
    let mut s = 0.0;
    for i in 0..x.len() {
        s += (x[i] - mx).exp();
    }
    s.ln() + mx
}

/// The GMM objective without its constant part (`constant` is added as it is: pass
/// [`constant`]`(d, k, n, gamma, m)`), with the generated gradient
/// `gmm_objective_grad(alphas, d_alphas, means, d_means, icf, d_icf, x, d, k, gamma, m,
/// constant, dret) -> f`.
#[allow(clippy::too_many_arguments)]
#[autodiff_reverse(
    gmm_objective_grad,
    Duplicated,
    Duplicated,
    Duplicated,
    Const,
    Const,
    Const,
    Const,
    Const,
    Const,
    Active
)]
pub fn gmm_objective(
    alphas: &[f64],
    means: &[f64],
    icf: &[f64],
    x: &[f64],
    d: usize,
    k: usize,
    gamma: f64,
    m: f64,
    constant: f64,
) -> f64 {
    let n = x.len() / d;
    let icf_sz = d * (d + 1) / 2;

    // Q's diagonal exp(q_k) and Σ q_k per component.
    let mut qdiags = vec![0.0; k * d];
    let mut sum_qs = vec![0.0; k];
    for ik in 0..k {
        let mut sq = 0.0;
        for j in 0..d {
            let q = icf[ik * icf_sz + j];
            sq += q;
            qdiags[ik * d + j] = q.exp();
        }
        sum_qs[ik] = sq;
    }

    let mut xcentered = vec![0.0; d];
    let mut qxcentered = vec![0.0; d];
    let mut main_term = vec![0.0; k];
    let mut slse = 0.0;
    for ix in 0..n {
        for ik in 0..k {
            for j in 0..d {
                xcentered[j] = x[ix * d + j] - means[ik * d + j];
            }
            // Q_k (x_i - μ_k): the diagonal, then the lower triangle column by column.
            for j in 0..d {
                qxcentered[j] = qdiags[ik * d + j] * xcentered[j];
            }
            let mut li = ik * icf_sz + d;
            for i in 0..d {
                for j in i + 1..d {
                    qxcentered[j] += icf[li] * xcentered[i];
                    li += 1;
                }
            }
            let mut sqnorm = 0.0;
            for j in 0..d {
                sqnorm += qxcentered[j] * qxcentered[j];
            }
            main_term[ik] = alphas[ik] + sum_qs[ik] - 0.5 * sqnorm;
        }
        slse += logsumexp(&main_term);
    }

    let lse_alphas = logsumexp(alphas);

    // Wishart prior, without its constant.
    let mut prior = 0.0;
    for ik in 0..k {
        let mut frobenius = 0.0;
        for j in 0..d {
            frobenius += qdiags[ik * d + j] * qdiags[ik * d + j];
        }
        for j in d..icf_sz {
            frobenius += icf[ik * icf_sz + j] * icf[ik * icf_sz + j];
        }
        prior += 0.5 * gamma * gamma * frobenius - m * sum_qs[ik];
    }

    constant + slse - n as f64 * lse_alphas + prior
}

/// The gradient into `ga`, `gm`, `gi` (overwritten), whose generated forward companion
/// is the Hessian-vector product `gmm_hvp(alphas, v_alphas, means, v_means, icf, v_icf,
/// ga, hv_alphas, gm, hv_means, gi, hv_icf, x, d, k, gamma, m, constant)` (forward over
/// reverse).
#[allow(clippy::too_many_arguments)]
#[autodiff_forward(
    gmm_hvp, Dual, Dual, Dual, Dual, Dual, Dual, Const, Const, Const, Const, Const, Const
)]
pub fn gmm_gradient(
    alphas: &[f64],
    means: &[f64],
    icf: &[f64],
    ga: &mut [f64],
    gm: &mut [f64],
    gi: &mut [f64],
    x: &[f64],
    d: usize,
    k: usize,
    gamma: f64,
    m: f64,
    constant: f64,
) {
    ga.fill(0.0);
    gm.fill(0.0);
    gi.fill(0.0);
    gmm_objective_grad(
        alphas, ga, means, gm, icf, gi, x, d, k, gamma, m, constant, 1.0,
    );
}

/// The same objective written without reused buffers: each `Q_k (x_i - μ_k)` entry is
/// formed in a scalar accumulator (row by row, with the triangle's index in closed form)
/// and reduced at once, so the only buffer written in the point loop is `main_term`.
/// Generated gradient: `gmm_objective_nobuf_grad` (same signature as
/// [`gmm_objective_grad`]).
#[allow(clippy::too_many_arguments)]
#[autodiff_reverse(
    gmm_objective_nobuf_grad,
    Duplicated,
    Duplicated,
    Duplicated,
    Const,
    Const,
    Const,
    Const,
    Const,
    Const,
    Active
)]
pub fn gmm_objective_nobuf(
    alphas: &[f64],
    means: &[f64],
    icf: &[f64],
    x: &[f64],
    d: usize,
    k: usize,
    gamma: f64,
    m: f64,
    constant: f64,
) -> f64 {
    let n = x.len() / d;
    let icf_sz = d * (d + 1) / 2;
    let mut qdiags = vec![0.0; k * d];
    let mut sum_qs = vec![0.0; k];
    for ik in 0..k {
        let mut sq = 0.0;
        for j in 0..d {
            let q = icf[ik * icf_sz + j];
            sq += q;
            qdiags[ik * d + j] = q.exp();
        }
        sum_qs[ik] = sq;
    }
    let mut main_term = vec![0.0; k];
    let mut slse = 0.0;
    for ix in 0..n {
        for ik in 0..k {
            let mut sqnorm = 0.0;
            for j in 0..d {
                let mut acc = qdiags[ik * d + j] * (x[ix * d + j] - means[ik * d + j]);
                for i in 0..j {
                    // Row j, column i of the lower triangle, stored column by column.
                    let li = ik * icf_sz + d + i * (d - 1) - i * (i + 1) / 2 + j - 1;
                    acc += icf[li] * (x[ix * d + i] - means[ik * d + i]);
                }
                sqnorm += acc * acc;
            }
            main_term[ik] = alphas[ik] + sum_qs[ik] - 0.5 * sqnorm;
        }
        slse += logsumexp(&main_term);
    }
    let lse_alphas = logsumexp(alphas);
    let mut prior = 0.0;
    for ik in 0..k {
        let mut frobenius = 0.0;
        for j in 0..d {
            frobenius += qdiags[ik * d + j] * qdiags[ik * d + j];
        }
        for j in d..icf_sz {
            frobenius += icf[ik * icf_sz + j] * icf[ik * icf_sz + j];
        }
        prior += 0.5 * gamma * gamma * frobenius - m * sum_qs[ik];
    }
    constant + slse - n as f64 * lse_alphas + prior
}

/// `out = x − y`.
#[differentiable]
pub fn subtract(x: &[f64], y: &[f64], out: &mut [f64]) {
    for i in 0..out.len() {
        out[i] = x[i] - y[i];
    }
}

/// `out = Q x` for the lower-triangular `Q` with diagonal `qdiag` and strict lower
/// triangle `ltri` (column by column).
#[differentiable]
pub fn qtimesx(qdiag: &[f64], ltri: &[f64], x: &[f64], out: &mut [f64]) {
    let d = x.len();
    for i in 0..d {
        out[i] = qdiag[i] * x[i];
    }
    let mut li = 0;
    for i in 0..d {
        for j in i + 1..d {
            out[j] += ltri[li] * x[i];
            li += 1;
        }
    }
}

/// `Σ x_i²`.
#[differentiable]
pub fn sqnorm(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i] * x[i];
    }
    s
}

/// The objective laid out as ADBench's C++ reference: per point and component, calls of
/// the helpers [`subtract`] and [`qtimesx`] that write into reused buffers, [`sqnorm`]
/// and [`logsumexp`]. Generated gradient: `gmm_objective_helpers_grad` (same signature
/// as [`gmm_objective_grad`]).
#[allow(clippy::too_many_arguments)]
#[autodiff_reverse(
    gmm_objective_helpers_grad,
    Duplicated,
    Duplicated,
    Duplicated,
    Const,
    Const,
    Const,
    Const,
    Const,
    Const,
    Active
)]
pub fn gmm_objective_helpers(
    alphas: &[f64],
    means: &[f64],
    icf: &[f64],
    x: &[f64],
    d: usize,
    k: usize,
    gamma: f64,
    m: f64,
    constant: f64,
) -> f64 {
    let n = x.len() / d;
    let icf_sz = d * (d + 1) / 2;
    let mut qdiags = vec![0.0; k * d];
    let mut sum_qs = vec![0.0; k];
    for ik in 0..k {
        let mut sq = 0.0;
        for j in 0..d {
            sq += icf[ik * icf_sz + j];
            qdiags[ik * d + j] = icf[ik * icf_sz + j].exp();
        }
        sum_qs[ik] = sq;
    }
    let mut xcentered = vec![0.0; d];
    let mut qxcentered = vec![0.0; d];
    let mut main_term = vec![0.0; k];
    let mut slse = 0.0;
    for ix in 0..n {
        for ik in 0..k {
            subtract(
                &x[ix * d..(ix + 1) * d],
                &means[ik * d..(ik + 1) * d],
                &mut xcentered,
            );
            qtimesx(
                &qdiags[ik * d..(ik + 1) * d],
                &icf[ik * icf_sz + d..(ik + 1) * icf_sz],
                &xcentered,
                &mut qxcentered,
            );
            main_term[ik] = alphas[ik] + sum_qs[ik] - 0.5 * sqnorm(&qxcentered);
        }
        slse += logsumexp(&main_term);
    }
    let lse_alphas = logsumexp(alphas);
    let mut prior = 0.0;
    for ik in 0..k {
        let frobenius = sqnorm(&qdiags[ik * d..(ik + 1) * d])
            + sqnorm(&icf[ik * icf_sz + d..(ik + 1) * icf_sz]);
        prior += 0.5 * gamma * gamma * frobenius - m * sum_qs[ik];
    }
    constant + slse - n as f64 * lse_alphas + prior
}

/// `ln Γ(x)` for `x > 0` (Lanczos, g = 7, 9 terms; relative error below 1e-15).
pub fn lgamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1 - x) = π / sin(πx).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - lgamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The constant part of the objective: `-N·D/2·log(2π) - K·C` with the Wishart
/// normaliser `C` (see the data README).
pub fn constant(d: usize, k: usize, n: usize, gamma: f64, m: f64) -> f64 {
    let df = d as f64;
    let nn = df + m + 1.0;
    let mut log_gamma_d = 0.25 * df * (df - 1.0) * PI.ln();
    for j in 1..=d {
        log_gamma_d += lgamma(0.5 * nn + 0.5 * (1.0 - j as f64));
    }
    let c = nn * df * (gamma.ln() - 0.5 * 2f64.ln()) - log_gamma_d;
    -(n as f64) * df * 0.5 * (2.0 * PI).ln() - k as f64 * c
}

/// The signature of the objective's variants (`gmm_objective`, ..).
type ObjectiveFn = fn(&[f64], &[f64], &[f64], &[f64], usize, usize, f64, f64, f64) -> f64;

/// The signature of their generated gradients (`gmm_objective_grad`, ..).
type GradientFn = fn(
    &[f64],
    &mut [f64],
    &[f64],
    &mut [f64],
    &[f64],
    &mut [f64],
    &[f64],
    usize,
    usize,
    f64,
    f64,
    f64,
    f64,
) -> f64;

/// A loaded instance, ready to call.
#[derive(Clone, Debug)]
pub struct Gmm {
    /// The inputs.
    pub input: GmmInput,
    /// [`constant`] of the inputs.
    pub constant: f64,
}

impl Gmm {
    /// Wraps an instance and computes its constant.
    pub fn new(input: GmmInput) -> Self {
        let constant = constant(input.d, input.k, input.n, input.gamma, input.m);
        Gmm { input, constant }
    }

    /// Number of parameters (`K + K·D + K·D(D+1)/2`).
    pub fn num_params(&self) -> usize {
        let GmmInput { d, k, .. } = self.input;
        k + k * d + k * d * (d + 1) / 2
    }

    /// `f` (one of the objective's variants) at this instance.
    fn objective_with(&self, f: ObjectiveFn) -> f64 {
        let p = &self.input;
        f(
            &p.alphas,
            &p.means,
            &p.icf,
            &p.x,
            p.d,
            p.k,
            p.gamma,
            p.m,
            self.constant,
        )
    }

    /// `grad_fn` (the generated gradient of one of the objective's variants) at this
    /// instance: adds `∇f` into `grad` (`[alphas, means, icf]`), returns `f`.
    fn gradient_with(&self, grad_fn: GradientFn, grad: &mut [f64]) -> f64 {
        let p = &self.input;
        let (ga, rest) = grad.split_at_mut(p.k);
        let (gm, gi) = rest.split_at_mut(p.k * p.d);
        grad_fn(
            &p.alphas,
            ga,
            &p.means,
            gm,
            &p.icf,
            gi,
            &p.x,
            p.d,
            p.k,
            p.gamma,
            p.m,
            self.constant,
            1.0,
        )
    }

    /// The objective.
    pub fn objective(&self) -> f64 {
        self.objective_with(gmm_objective)
    }

    /// The generated gradient: adds `∇f` into `grad` (`[alphas, means, icf]`), returns `f`.
    pub fn gradient(&self, grad: &mut [f64]) -> f64 {
        self.gradient_with(gmm_objective_grad, grad)
    }

    /// The generated Hessian-vector product ([`gmm_hvp`]): sets `grad = ∇f` and
    /// `hv = H·v`, with `v`, `grad` and `hv` laid out as `[alphas, means, icf]`.
    pub fn hvp(&self, v: &[f64], grad: &mut [f64], hv: &mut [f64]) {
        let p = &self.input;
        let (k, kd) = (p.k, p.k * p.d);
        let (va, rest) = v.split_at(k);
        let (vm, vi) = rest.split_at(kd);
        let (ga, rest) = grad.split_at_mut(k);
        let (gm, gi) = rest.split_at_mut(kd);
        let (ha, rest) = hv.split_at_mut(k);
        let (hm, hi) = rest.split_at_mut(kd);
        gmm_hvp(
            &p.alphas,
            va,
            &p.means,
            vm,
            &p.icf,
            vi,
            ga,
            ha,
            gm,
            hm,
            gi,
            hi,
            &p.x,
            p.d,
            p.k,
            p.gamma,
            p.m,
            self.constant,
        );
    }

    /// The objective without reused buffers ([`gmm_objective_nobuf`]).
    pub fn objective_nobuf(&self) -> f64 {
        self.objective_with(gmm_objective_nobuf)
    }

    /// The generated gradient of [`gmm_objective_nobuf`].
    pub fn gradient_nobuf(&self, grad: &mut [f64]) -> f64 {
        self.gradient_with(gmm_objective_nobuf_grad, grad)
    }

    /// The objective laid out with helper functions ([`gmm_objective_helpers`]).
    pub fn objective_helpers(&self) -> f64 {
        self.objective_with(gmm_objective_helpers)
    }

    /// The generated gradient of [`gmm_objective_helpers`].
    pub fn gradient_helpers(&self, grad: &mut [f64]) -> f64 {
        self.gradient_with(gmm_objective_helpers_grad, grad)
    }

    /// The hand-written gradient: adds `∇f` into `grad`, returns `f`.
    pub fn gradient_hand(&self, grad: &mut [f64]) -> f64 {
        let p = &self.input;
        let (ga, rest) = grad.split_at_mut(p.k);
        let (gm, gi) = rest.split_at_mut(p.k * p.d);
        gmm_grad_hand(
            &p.alphas,
            &p.means,
            &p.icf,
            &p.x,
            p.d,
            p.k,
            p.gamma,
            p.m,
            self.constant,
            ga,
            gm,
            gi,
        )
    }
}

/// Hand-written GMM gradient, one pass over the points: adds `∂f/∂alphas`,
/// `∂f/∂means`, `∂f/∂icf` into `ga`, `gm`, `gi` and returns `f`.
#[allow(clippy::too_many_arguments)]
pub fn gmm_grad_hand(
    alphas: &[f64],
    means: &[f64],
    icf: &[f64],
    x: &[f64],
    d: usize,
    k: usize,
    gamma: f64,
    m: f64,
    constant: f64,
    ga: &mut [f64],
    gm: &mut [f64],
    gi: &mut [f64],
) -> f64 {
    let n = x.len() / d;
    let icf_sz = d * (d + 1) / 2;
    let mut qdiags = vec![0.0; k * d];
    let mut sum_qs = vec![0.0; k];
    for ik in 0..k {
        let q = &icf[ik * icf_sz..ik * icf_sz + d];
        sum_qs[ik] = q.iter().sum();
        for (qd, &qj) in qdiags[ik * d..(ik + 1) * d].iter_mut().zip(q) {
            *qd = qj.exp();
        }
    }

    // Per point: all centred points and Q (x - μ) for every component, then the
    // softmax weights of the main terms, then the pullback of each main term.
    let mut xc = vec![0.0; k * d];
    let mut qxc = vec![0.0; k * d];
    let mut main_term = vec![0.0; k];
    let mut dqdiag = vec![0.0; k * d]; // ∂f/∂exp(q), multiplied by exp(q) at the end
    let mut dsum_q = vec![0.0; k];
    let mut dxc = vec![0.0; d];
    let mut slse = 0.0;
    for ix in 0..n {
        let xi = &x[ix * d..(ix + 1) * d];
        for ik in 0..k {
            let xck = &mut xc[ik * d..(ik + 1) * d];
            let mk = &means[ik * d..(ik + 1) * d];
            for j in 0..d {
                xck[j] = xi[j] - mk[j];
            }
            let qk = &mut qxc[ik * d..(ik + 1) * d];
            let qd = &qdiags[ik * d..(ik + 1) * d];
            for j in 0..d {
                qk[j] = qd[j] * xck[j];
            }
            let l = &icf[ik * icf_sz + d..(ik + 1) * icf_sz];
            let mut li = 0;
            for i in 0..d {
                let xci = xck[i];
                for j in i + 1..d {
                    qk[j] += l[li] * xci;
                    li += 1;
                }
            }
            let sq: f64 = qk.iter().map(|v| v * v).sum();
            main_term[ik] = alphas[ik] + sum_qs[ik] - 0.5 * sq;
        }
        let mx = main_term.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
        let mut se = 0.0;
        for t in main_term.iter_mut() {
            *t = (*t - mx).exp();
            se += *t;
        }
        slse += se.ln() + mx;
        let inv = 1.0 / se;
        for ik in 0..k {
            let w = main_term[ik] * inv; // ∂lse/∂main_term_k
            ga[ik] += w;
            dsum_q[ik] += w;
            // main_term = .. - ½‖qxc‖²: ∂/∂qxc = -w qxc.
            let xck = &xc[ik * d..(ik + 1) * d];
            let qk = &qxc[ik * d..(ik + 1) * d];
            let qd = &qdiags[ik * d..(ik + 1) * d];
            let dqd = &mut dqdiag[ik * d..(ik + 1) * d];
            for j in 0..d {
                let dq = -w * qk[j];
                dqd[j] += dq * xck[j];
                dxc[j] = dq * qd[j];
            }
            let l = &icf[ik * icf_sz + d..(ik + 1) * icf_sz];
            let gl = &mut gi[ik * icf_sz + d..(ik + 1) * icf_sz];
            let mut li = 0;
            for i in 0..d {
                let xci = xck[i];
                let mut acc = 0.0;
                for j in i + 1..d {
                    let dq = -w * qk[j];
                    gl[li] += dq * xci;
                    acc += dq * l[li];
                    li += 1;
                }
                dxc[i] += acc;
            }
            let gmk = &mut gm[ik * d..(ik + 1) * d];
            for j in 0..d {
                gmk[j] -= dxc[j];
            }
        }
    }

    // -N logsumexp(alphas).
    let amax = alphas.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    let ase: f64 = alphas.iter().map(|a| (a - amax).exp()).sum();
    let lse_alphas = ase.ln() + amax;
    for ik in 0..k {
        ga[ik] -= n as f64 * (alphas[ik] - amax).exp() / ase;
    }

    // Prior: ½γ²(‖exp q‖² + ‖l‖²) - m Σq.
    let g2 = gamma * gamma;
    let mut prior = 0.0;
    for ik in 0..k {
        let qd = &qdiags[ik * d..(ik + 1) * d];
        let l = &icf[ik * icf_sz + d..(ik + 1) * icf_sz];
        let frob: f64 =
            qd.iter().map(|v| v * v).sum::<f64>() + l.iter().map(|v| v * v).sum::<f64>();
        prior += 0.5 * g2 * frob - m * sum_qs[ik];
        let gq = &mut gi[ik * icf_sz..ik * icf_sz + d];
        let dqd = &dqdiag[ik * d..(ik + 1) * d];
        for j in 0..d {
            // exp(q_j) multiplies both the main terms and the prior's ½γ²exp(q_j)².
            gq[j] += (dqd[j] + g2 * qd[j]) * qd[j] + dsum_q[ik] - m;
        }
        let gl = &mut gi[ik * icf_sz + d..(ik + 1) * icf_sz];
        for (g, &lv) in gl.iter_mut().zip(l) {
            *g += g2 * lv;
        }
    }

    constant + slse - n as f64 * lse_alphas + prior
}
