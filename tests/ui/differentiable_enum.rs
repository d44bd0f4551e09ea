// `#[differentiable]` gives structs a zero shadow; an enum has no members to zero.
use autodiff_core::prelude::*;

#[differentiable]
enum Kind {
    A,
}

fn main() {
    let _ = Kind::A;
}
