//! Writes the batch of random functions that `tests/differential.rs` includes (and its
//! `f32` twin), from
//! `AUTODIFF_FUZZ_SEED`, `AUTODIFF_FUZZ_COUNT`, `AUTODIFF_FUZZ_FEATURES` and
//! `AUTODIFF_FUZZ_SKIP` (CI defaults when unset).

#[path = "src/gen.rs"]
mod generator;

use std::path::PathBuf;

fn main() {
    for var in [
        "AUTODIFF_FUZZ_SEED",
        "AUTODIFF_FUZZ_COUNT",
        "AUTODIFF_FUZZ_FEATURES",
        "AUTODIFF_FUZZ_SKIP",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=src/gen.rs");
    println!("cargo:rerun-if-changed=build.rs");
    let cfg = match generator::config_from(|k| std::env::var(k).ok()) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    let batch = generator::generate(&cfg);
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("batch.rs");
    std::fs::write(&out, &batch.text).unwrap();
    std::fs::write(out.with_file_name("batch_f32.rs"), &batch.text_f32).unwrap();
}
