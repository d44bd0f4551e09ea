//! Copies of buffers lent to a call whose pullback may borrow them.
//!
//! A custom rule's pullback may borrow its shared-reference arguments until the caller's
//! reverse sweep. Where the caller overwrites such a buffer before then (a time step
//! `step(&u, &mut v)` in a loop that then copies `v` into `u`), the call is given a copy
//! instead, made in an arena that lives as long as the whole derivative function and is
//! never lent mutably. The pullback then borrows the copy, which nothing overwrites.

use std::borrow::Borrow;

/// The arena of one call site's copies. Each call allocates its own copy; all of them are
/// freed together when the derivative function returns. The arena is made on the first
/// copy: a call site whose callee is lent the buffer itself (a generated function)
/// allocates nothing.
pub struct LentCopies<T> {
    arena: std::cell::OnceCell<typed_arena::Arena<T>>,
}

impl<T> LentCopies<T> {
    pub fn new() -> Self {
        LentCopies {
            arena: std::cell::OnceCell::new(),
        }
    }
}

impl<T> Default for LentCopies<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// A copy of `value` that lives as long as `copies`: a `&[f64]` gives a `&[f64]`, a
/// `&Vec<f64>` a `&Vec<f64>`, a `&[f64; 3]` a `&[f64; 3]`.
pub fn lent_copy<'c, B: ToOwned + ?Sized>(copies: &'c LentCopies<B::Owned>, value: &B) -> &'c B {
    let arena = copies.arena.get_or_init(typed_arena::Arena::new);
    let copy: &'c B::Owned = arena.alloc(value.to_owned());
    copy.borrow()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_outlive_overwrites_of_the_original() {
        let copies = LentCopies::new();
        let mut u = [1.0, 2.0];
        let first = lent_copy(&copies, &u[..]);
        u[0] = 5.0;
        let second = lent_copy(&copies, &u[..]);
        assert_eq!(first, &[1.0, 2.0]);
        assert_eq!(second, &[5.0, 2.0]);
        let whole: Vec<f32> = vec![3.0; 2];
        let vectors = LentCopies::new();
        let copy: &Vec<f32> = lent_copy(&vectors, &whole);
        assert_eq!(copy, &whole);
    }
}
