use autodiff_core::prelude::*;

pub enum Kind {
    Scale(f64),
    Id,
}

pub struct Cfg {
    pub kind: Kind,
}

// `cfg` is `Duplicated`: the scale bound from it would carry no derivative.
#[autodiff_reverse(df, Active, Duplicated, Active)]
fn f(x: f64, cfg: &Cfg) -> f64 {
    match cfg.kind {
        Kind::Scale(s) => x * s,
        Kind::Id => x,
    }
}

fn main() {
    assert_eq!(f(2.0, &Cfg { kind: Kind::Scale(3.0) }), 6.0);
}
