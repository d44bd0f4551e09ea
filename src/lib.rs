//! Examples and integration tests of autodiff-rs live in `examples/` and `tests/`.
//!
//! This library holds what only a library can check: rustc compiles every public function
//! and trait implementation of a library, used or not, where a binary (a test, an example)
//! compiles only what it reaches.

pub mod library_items;
