// A `#[differentiable]` struct whose type parameter has no bound on its declaration: the
// zero shadow cannot tell whether its members carry derivatives. The error says to bound
// the parameter there.
use autodiff_core::prelude::*;

#[differentiable]
pub struct Poly<T> {
    pub c: Vec<T>,
}

fn main() {}
