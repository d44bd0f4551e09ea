//! `candle-core` (tensor reverse mode): Rosenbrock on a 1-D `f64` tensor on the CPU.

use candle_core::{Device, Result, Tensor, Var};

/// Builds a `Var` from `x`, evaluates Rosenbrock with tensor operations, runs
/// `backward()`, and adds the gradient into `grad`. Returns the value.
pub fn rosenbrock_grad(x: &[f64], grad: &mut [f64]) -> Result<f64> {
    let n = x.len();
    let v = Var::from_slice(x, n, &Device::Cpu)?;
    let f = rosenbrock(v.as_tensor())?;
    let grads = f.backward()?;
    let g = grads
        .get(v.as_tensor())
        .expect("no gradient")
        .to_vec1::<f64>()?;
    for (a, b) in grad.iter_mut().zip(g) {
        *a += b;
    }
    f.to_scalar::<f64>()
}

/// Rosenbrock as tensor operations: `Σ (1 - x[:-1])² + 100 (x[1:] - x[:-1]²)²`.
pub fn rosenbrock(x: &Tensor) -> Result<Tensor> {
    let n = x.dim(0)?;
    let head = x.narrow(0, 0, n - 1)?;
    let tail = x.narrow(0, 1, n - 1)?;
    let a = head.affine(-1.0, 1.0)?; // 1 - x_i
    let b = (tail - head.sqr()?)?;
    a.sqr()?.sum_all()? + (b.sqr()?.sum_all()? * 100.0)?
}

/// The primal alone, from a slice (tensor creation included).
pub fn rosenbrock_value(x: &[f64]) -> Result<f64> {
    let t = Tensor::from_slice(x, x.len(), &Device::Cpu)?;
    rosenbrock(&t)?.to_scalar::<f64>()
}
