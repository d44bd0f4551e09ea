//! Examples and integration tests of autodiff-rs live in `examples/` and `tests/`.
