//! Compile-fail tests of the macros' diagnostics, and programs that must compile. With a
//! passing case present, trybuild builds (rather than only checks) every case, so errors
//! raised when generic code is instantiated show too. Regenerate the snapshots with
//! `TRYBUILD=overwrite cargo test --test ui`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui_pass/*.rs");
    t.compile_fail("tests/ui/*.rs");
}
