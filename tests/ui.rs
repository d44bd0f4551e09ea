//! Compile-fail tests of the macros' diagnostics. Regenerate the snapshots with
//! `TRYBUILD=overwrite cargo test --test ui`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
