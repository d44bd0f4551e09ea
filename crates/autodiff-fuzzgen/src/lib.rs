//! A generator of random functions in the language autodiff-rs differentiates, for
//! differential testing (see `TESTING.md` at the repository root).
//!
//! Each function is emitted twice: as plain `f64` code carrying `#[autodiff_forward]` and
//! `#[autodiff_reverse]` with random activities, and as an oracle generic over a num-dual
//! number. The build script writes a batch of them (`AUTODIFF_FUZZ_SEED`,
//! `AUTODIFF_FUZZ_COUNT`, `AUTODIFF_FUZZ_FEATURES`, `AUTODIFF_FUZZ_SKIP`) that
//! `tests/differential.rs` compiles and checks; the `autodiff-fuzzgen` binary prints one
//! function or a whole batch, and maps a line of a batch back to its function.

#[path = "gen.rs"]
mod generator;

pub use generator::*;
