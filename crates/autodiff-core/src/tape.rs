//! Storage for values that the reverse sweep of a derivative needs.
//!
//! Each place in the generated code that records a value gets its own store, whose element
//! type rustc infers. Places executed at most once per call use a [`Slot`] (no heap
//! allocation); places inside loops use a `Vec` as a LIFO stack.

/// A store for a value recorded at most once: a stack of capacity one, on the stack.
#[derive(Debug)]
pub struct Slot<T>(Option<T>);

impl<T> Slot<T> {
    /// An empty slot.
    #[inline(always)]
    pub fn new() -> Self {
        Slot(None)
    }

    /// Records `v`.
    #[inline(always)]
    pub fn push(&mut self, v: T) {
        self.0 = Some(v);
    }

    /// Takes the recorded value back.
    ///
    /// # Panics
    /// Only on a bug of the generated code: a value taken that was never recorded.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<T> {
        self.0.take()
    }
}

impl<T> Default for Slot<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Takes the last value of a tape; the reverse sweep pops exactly what the forward sweep
/// pushed, so an empty tape is a bug of the generated code.
#[inline(always)]
pub fn take<T>(v: Option<T>) -> T {
    match v {
        Some(v) => v,
        None => unreachable!("autodiff: a reverse sweep read a value that was never recorded"),
    }
}

/// The first `n` items of `iter`, last first: the iterations of a loop that ran `n` times
/// (it may have stopped early at a `break`), in the order its reverse sweep visits them.
pub fn rev_prefix<I: Iterator>(iter: I, n: usize) -> impl Iterator<Item = I::Item> {
    let mut items: Vec<I::Item> = iter.take(n).collect();
    items.reverse();
    items.into_iter()
}
