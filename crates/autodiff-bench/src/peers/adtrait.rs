//! `ad_trait` (reverse mode, `adr`): the problems written generically over `T: AD`, as
//! its documentation shows, and gradients read off the global computation graph.

use ad_trait::AD;
use ad_trait::reverse_ad::adr::{GlobalComputationGraph, adr};

/// Size in bytes of one node of `ad_trait`'s computation graph.
pub const NODE_BYTES: usize =
    std::mem::size_of::<ad_trait::reverse_ad::adr::ComputationGraphNode>();

/// Number of nodes in this thread's computation graph (the tape of the last gradient).
pub fn tape_nodes() -> usize {
    GlobalComputationGraph::get().num_nodes()
}

/// Records `f` on fresh variables `x`, runs the backward pass, and adds the gradient into
/// `grad`. Returns the value.
pub fn gradient<F>(x: &[f64], grad: &mut [f64], f: F) -> f64
where
    F: FnOnce(&[adr]) -> adr,
{
    GlobalComputationGraph::get().reset();
    let vars: Vec<adr> = x.iter().map(|&v| adr::new_variable(v, false)).collect();
    let y = f(&vars);
    let adj = y.get_backwards_mode_grad();
    for (g, v) in grad.iter_mut().zip(&vars) {
        *g += adj.wrt(v);
    }
    y.value()
}

/// `H·v` by central differences of two ad_trait gradients (it has no nested mode), with
/// the step `1e-6·(1 + ‖x‖∞)`: an approximation, timed as a lower bound of its cost.
pub fn hvp_by_differences<F>(x: &[f64], v: &[f64], hv: &mut [f64], f: F)
where
    F: Fn(&[adr]) -> adr,
{
    let h = 1e-6 * (1.0 + x.iter().fold(0.0f64, |a, b| a.max(b.abs())));
    let xp: Vec<f64> = x.iter().zip(v).map(|(a, b)| a + h * b).collect();
    let xm: Vec<f64> = x.iter().zip(v).map(|(a, b)| a - h * b).collect();
    let mut gm = vec![0.0; x.len()];
    hv.fill(0.0);
    gradient(&xp, hv, &f);
    gradient(&xm, &mut gm, &f);
    for (a, b) in hv.iter_mut().zip(&gm) {
        *a = (*a - b) / (2.0 * h);
    }
}

/// Rosenbrock.
pub fn rosenbrock<T: AD>(x: &[T]) -> T {
    let one = T::constant(1.0);
    let hundred = T::constant(100.0);
    let mut s = T::constant(0.0);
    for i in 0..x.len() - 1 {
        let a = one - x[i];
        let b = x[i + 1] - x[i] * x[i];
        s += a * a + hundred * b * b;
    }
    s
}

fn logsumexp<T: AD>(x: &[T]) -> T {
    let mut mx = x[0];
    for &v in &x[1..] {
        if v > mx {
            mx = v;
        }
    }
    let mut s = T::constant(0.0);
    for &v in x {
        s += (v - mx).exp();
    }
    s.ln() + mx
}

/// The GMM objective over `params = [alphas, means, icf]` (constant part included).
#[allow(clippy::too_many_arguments)]
pub fn gmm<T: AD>(
    params: &[T],
    x: &[f64],
    d: usize,
    k: usize,
    gamma: f64,
    m: f64,
    constant: f64,
) -> T {
    let n = x.len() / d;
    let icf_sz = d * (d + 1) / 2;
    let (alphas, rest) = params.split_at(k);
    let (means, icf) = rest.split_at(k * d);
    let zero = T::constant(0.0);
    let mut qdiags = vec![zero; k * d];
    let mut sum_qs = vec![zero; k];
    for ik in 0..k {
        let mut s = zero;
        for j in 0..d {
            let q = icf[ik * icf_sz + j];
            s += q;
            qdiags[ik * d + j] = q.exp();
        }
        sum_qs[ik] = s;
    }
    let mut xc = vec![zero; d];
    let mut qxc = vec![zero; d];
    let mut main_term = vec![zero; k];
    let mut slse = zero;
    for ix in 0..n {
        for ik in 0..k {
            for j in 0..d {
                xc[j] = T::constant(x[ix * d + j]) - means[ik * d + j];
            }
            for j in 0..d {
                qxc[j] = qdiags[ik * d + j] * xc[j];
            }
            let mut li = ik * icf_sz + d;
            for i in 0..d {
                for j in i + 1..d {
                    qxc[j] += icf[li] * xc[i];
                    li += 1;
                }
            }
            let mut sq = zero;
            for j in 0..d {
                sq += qxc[j] * qxc[j];
            }
            main_term[ik] = alphas[ik] + sum_qs[ik] - T::constant(0.5) * sq;
        }
        slse += logsumexp(&main_term);
    }
    let lse_alphas = logsumexp(alphas);
    let mut prior = zero;
    let half_g2 = T::constant(0.5 * gamma * gamma);
    for ik in 0..k {
        let mut frob = zero;
        for j in 0..d {
            frob += qdiags[ik * d + j] * qdiags[ik * d + j];
        }
        for j in d..icf_sz {
            frob += icf[ik * icf_sz + j] * icf[ik * icf_sz + j];
        }
        prior += half_g2 * frob - T::constant(m) * sum_qs[ik];
    }
    T::constant(constant) + slse - T::constant(n as f64) * lse_alphas + prior
}

fn sigmoid<T: AD>(x: T) -> T {
    T::constant(1.0) / (T::constant(1.0) + (-x).exp())
}

/// The LSTM objective over `params = [main, extra]`.
pub fn lstm<T: AD>(params: &[T], state: &[f64], seq: &[f64], l: usize, b: usize) -> T {
    let c = seq.len() / b;
    let (main, extra) = params.split_at(8 * l * b);
    let mut hidden: Vec<T> = Vec::with_capacity(l * b);
    let mut cell: Vec<T> = Vec::with_capacity(l * b);
    for li in 0..l {
        hidden.extend(
            state[2 * li * b..2 * li * b + b]
                .iter()
                .map(|&v| T::constant(v)),
        );
        cell.extend(
            state[2 * li * b + b..2 * (li + 1) * b]
                .iter()
                .map(|&v| T::constant(v)),
        );
    }
    let zero = T::constant(0.0);
    let mut xp = vec![zero; b];
    let mut total = zero;
    for t in 0..c - 1 {
        for i in 0..b {
            xp[i] = T::constant(seq[t * b + i]) * extra[i];
        }
        for li in 0..l {
            let w = &main[li * 8 * b..li * 8 * b + 4 * b];
            let bs = &main[li * 8 * b + 4 * b..(li + 1) * 8 * b];
            for i in 0..b {
                let h = hidden[li * b + i];
                let forget = sigmoid(xp[i] * w[i] + bs[i]);
                let ingate = sigmoid(h * w[b + i] + bs[b + i]);
                let outgate = sigmoid(xp[i] * w[2 * b + i] + bs[2 * b + i]);
                let change = (h * w[3 * b + i] + bs[3 * b + i]).tanh();
                let cn = cell[li * b + i] * forget + ingate * change;
                cell[li * b + i] = cn;
                hidden[li * b + i] = outgate * cn.tanh();
            }
            xp.copy_from_slice(&hidden[li * b..(li + 1) * b]);
        }
        let mut ypred = vec![zero; b];
        let mut se = zero;
        for i in 0..b {
            ypred[i] = xp[i] * extra[b + i] + extra[2 * b + i];
            se += ypred[i].exp();
        }
        let lse = (se + T::constant(2.0)).ln();
        for i in 0..b {
            total += T::constant(seq[(t + 1) * b + i]) * (ypred[i] - lse);
        }
    }
    -total / T::constant(((c - 1) * b) as f64)
}
