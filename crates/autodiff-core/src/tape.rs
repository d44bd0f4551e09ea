//! Storage for values that the reverse sweep of a derivative needs.
//!
//! Each place in the generated code that records a value gets its own store, whose element
//! type rustc infers. Places executed at most once per call use a [`Slot`] (no heap
//! allocation); places inside loops use a [`Stack`], whose first values live inline.

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

/// How many values a [`Stack`] holds before it allocates.
const INLINE: usize = 16;

/// A store for values recorded inside a loop: a LIFO stack whose first [`INLINE`] values
/// live in the store itself, the rest in a `Vec`.
///
/// A short loop in a function called once per iteration of a longer one (a `logsumexp`
/// over a few components, per data point) would otherwise allocate and free a `Vec` per
/// call, which costs more than the values it records.
#[derive(Debug)]
pub struct Stack<T> {
    inline: [Option<T>; INLINE],
    /// How many of `inline` hold a value (all of them whenever `spill` is not empty).
    len: usize,
    spill: Vec<T>,
}

impl<T> Stack<T> {
    /// An empty stack.
    #[inline(always)]
    pub fn new() -> Self {
        Stack {
            inline: [const { None }; INLINE],
            len: 0,
            spill: Vec::new(),
        }
    }

    /// Records `v`.
    #[inline(always)]
    pub fn push(&mut self, v: T) {
        if self.len < INLINE {
            self.inline[self.len] = Some(v);
            self.len += 1;
        } else {
            self.spill.push(v);
        }
    }

    /// Takes the last recorded value back.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<T> {
        if let Some(v) = self.spill.pop() {
            return Some(v);
        }
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        self.inline[self.len].take()
    }

    /// Makes room for `n` more values without allocating again.
    #[inline]
    pub fn reserve(&mut self, n: usize) {
        let room = INLINE - self.len;
        if n > room {
            self.spill.reserve(n - room);
        }
    }
}

impl<T> Default for Stack<T> {
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

#[cfg(test)]
mod tests {
    use super::Stack;

    /// Values come back last in, first out, across the inline part and the spill, through
    /// pushes and pops interleaved as nested loops do.
    #[test]
    fn stack_is_lifo_across_its_inline_part() {
        let mut s = Stack::new();
        let mut model = Vec::new();
        s.reserve(3);
        for round in 0..4 {
            for k in 0..(5 + 7 * round) {
                s.push(k * 10 + round);
                model.push(k * 10 + round);
            }
            for _ in 0..(3 + round) {
                assert_eq!(s.pop(), model.pop());
            }
            s.reserve(20);
        }
        while let Some(v) = model.pop() {
            assert_eq!(s.pop(), Some(v));
        }
        assert_eq!(s.pop(), None);
    }
}
