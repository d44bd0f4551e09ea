//! Storage for values that the reverse sweep of a derivative needs.
//!
//! Each place in the generated code that records a value gets its own store, whose element
//! type rustc infers. Places executed at most once per call use a [`Slot`] (no heap
//! allocation); places inside one loop use a [`Stack`], whose first values live inline;
//! places inside nested loops use a [`Tape`]. The heap memory of stacks and tapes comes
//! from a per-thread cache (see `tape_memory`), so a gradient called again reuses it.

use crate::tape_memory::{BLOCK_ALIGN, acquire, class_bytes, class_for, release};
use std::fmt;
use std::marker::PhantomData;
use std::mem::{MaybeUninit, align_of, needs_drop, size_of};
use std::ptr::NonNull;

/// Bytes of the largest earlier block whose values `Tape::step_back` moves into the
/// current block instead of stepping back into it.
const MOVED_BLOCK_BYTES: usize = 64 << 10;

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

/// A store for a float whose value the reverse sweep never reads (a term only added into
/// a sum, say): it records nothing, and gives back zeros of the same type, which the
/// sweep uses only to shape adjoints and in computations whose results it never reads.
#[derive(Debug)]
pub struct DeadStore<T>(PhantomData<fn(T) -> T>);

impl<T> DeadStore<T> {
    /// An empty store.
    #[inline(always)]
    pub fn new() -> Self {
        DeadStore(PhantomData)
    }

    /// Records nothing.
    #[inline(always)]
    pub fn push(&mut self, v: T) {
        drop(v);
    }

    /// Nothing to make room for.
    #[inline(always)]
    pub fn reserve(&mut self, _n: usize) {}
}

impl<T: num_traits::Zero> DeadStore<T> {
    /// A zero in place of the value that was not recorded.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<T> {
        Some(T::zero())
    }
}

impl<T> Default for DeadStore<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// A store for values recorded inside a loop: a LIFO stack whose first `N` values live
/// in the store itself, the rest in `S`: a [`Tape`], or in a stack that a callee's kept
/// state holds, a [`ThinTape`].
///
/// A short loop in a function called once per iteration of a longer one (a `logsumexp`
/// over a few components, per data point) would otherwise take memory for its values on
/// every call, which costs more than the values it records.
pub struct Stack<T, const N: usize = 16, S: Spill<T> = Tape<T>> {
    inline: [MaybeUninit<T>; N],
    /// How many of `inline` hold a value (all of them whenever the spill is not empty);
    /// for a zero-sized `T`, how many values the stack holds.
    len: usize,
    spill: S,
}

/// Where a [`Stack`] keeps its values beyond the inline ones: a LIFO store.
pub trait Spill<T>: Default {
    /// Records `v`.
    fn push(&mut self, v: T);
    /// Takes the last recorded value back.
    fn pop(&mut self) -> Option<T>;
    /// Makes room for `n` more values.
    fn reserve(&mut self, n: usize);
}

impl<T> Spill<T> for Tape<T> {
    #[inline(always)]
    fn push(&mut self, v: T) {
        Tape::push(self, v)
    }

    #[inline(always)]
    fn pop(&mut self) -> Option<T> {
        Tape::pop(self)
    }

    #[inline(always)]
    fn reserve(&mut self, n: usize) {
        Tape::reserve(self, n)
    }
}

/// The spill of a [`Stack`] that a callee's kept state holds: a LIFO store behind one
/// pointer, whose blocks (from the per-thread cache, like a [`Tape`]'s) each begin with
/// their own length, capacity and link to the block before.
///
/// The state is moved to the caller's store and out again on every call, so each of its
/// bytes is copied on every call; a [`Tape`] in place would add 56 bytes to every stack of
/// it, spilled or not (a `logsumexp` over 5 components never spills).
pub struct ThinTape<T> {
    /// The block being filled, if any.
    top: Option<NonNull<ThinHeader>>,
    _owns: PhantomData<T>,
}

/// The start of a block of a [`ThinTape`]; its values begin `BLOCK_ALIGN` bytes in.
struct ThinHeader {
    /// Values in this block.
    len: usize,
    /// Values this block holds (`usize::MAX` for zero-sized `T`).
    cap: usize,
    /// Its size class.
    class: usize,
    /// The block before, which holds at least one value.
    prev: Option<NonNull<ThinHeader>>,
    /// The block after, emptied by `pop` and kept for the next `push` (and given back
    /// when the tape is dropped, with the blocks after it).
    next: Option<NonNull<ThinHeader>>,
}

// SAFETY: a thin tape owns its values and its blocks, like a `Vec<T>`.
unsafe impl<T: Send> Send for ThinTape<T> {}
// SAFETY: a shared thin tape gives no access to its values.
unsafe impl<T: Sync> Sync for ThinTape<T> {}

impl<T> ThinTape<T> {
    /// Bytes before a block's first value: its header, padded to the block alignment so
    /// that the values stay aligned.
    const VALUES_AT: usize = BLOCK_ALIGN;
    const FITS: () = assert!(
        size_of::<ThinHeader>() <= BLOCK_ALIGN && align_of::<T>() <= BLOCK_ALIGN,
        "autodiff: a recorded value needs more than 64-byte alignment"
    );

    /// The first value slot of the block `h`.
    #[inline(always)]
    fn values(h: NonNull<ThinHeader>) -> *mut T {
        // SAFETY: every block is larger than `VALUES_AT` bytes.
        unsafe { h.as_ptr().cast::<u8>().add(Self::VALUES_AT).cast() }
    }

    /// Makes current a block with room for `n` values: the block kept after the current
    /// one (emptied by `pop`) if it has that room, else a new one, larger than the current
    /// one, which is given back if it holds nothing.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, n: usize) -> NonNull<ThinHeader> {
        #[allow(clippy::let_unit_value)]
        let () = Self::FITS;
        let mut class = class_for(Self::VALUES_AT + n.saturating_mul(size_of::<T>()));
        let mut prev = self.top;
        if let Some(top) = self.top {
            // SAFETY: `top` is a live block of this tape.
            let (len, top_class, before, spare) = unsafe {
                let h = top.as_ref();
                (h.len, h.class, h.prev, h.next)
            };
            // A kept block after the top one that holds `n` values becomes the top (where
            // the top holds a value: earlier blocks are never empty).
            if let Some(spare) = spare {
                // SAFETY: a kept block is live, empty and owned by this tape.
                if len > 0 && unsafe { spare.as_ref().cap } >= n {
                    self.top = Some(spare);
                    return spare;
                }
                Self::release_from(Some(spare));
                // SAFETY: as above.
                unsafe { (*top.as_ptr()).next = None };
            }
            class = class.max(top_class + 1);
            // Every earlier block holds a value, so that `pop` steps back at most once.
            if len == 0 {
                release(top.cast(), top_class);
                prev = before;
            }
        }
        let block = acquire(class).cast::<ThinHeader>();
        let cap = match size_of::<T>() {
            0 => usize::MAX,
            size => (class_bytes(class) - Self::VALUES_AT) / size,
        };
        // SAFETY: a fresh block of at least `MIN_BLOCK` bytes, aligned to `BLOCK_ALIGN`.
        unsafe {
            block.as_ptr().write(ThinHeader {
                len: 0,
                cap,
                class,
                prev,
                next: None,
            })
        };
        self.top = Some(block);
        block
    }

    /// Writes `v` into the free slot after the values of the block `h`.
    #[inline(always)]
    fn write(h: NonNull<ThinHeader>, v: T) {
        // SAFETY: callers pass a live block with `len < cap`: the slot lies inside it and
        // is free.
        unsafe {
            let len = (*h.as_ptr()).len;
            Self::values(h).add(len).write(v);
            (*h.as_ptr()).len = len + 1;
        }
    }

    /// `push` when the block is full (see `Tape::push_into_new_block`).
    #[cold]
    #[inline(never)]
    fn push_into_new_block(&mut self, v: T) {
        let h = self.grow(1);
        Self::write(h, v);
    }

    /// Makes the block before the current (empty) one current; `None` if there is none.
    /// The emptied block is kept after it for the next `push`, not given back: `pop`
    /// then calls nothing, and a loop that pops keeps its running values (an adjoint
    /// summed over the loop) in registers, which a call on any path of its body, however
    /// rarely taken, would make it keep in memory.
    #[inline(always)]
    fn step_back(&mut self, top: NonNull<ThinHeader>) -> Option<NonNull<ThinHeader>> {
        // SAFETY: `top` is this tape's live, empty current block; `prev` is live too.
        unsafe {
            let prev = top.as_ref().prev?;
            (*prev.as_ptr()).next = Some(top);
            self.top = Some(prev);
            Some(prev)
        }
    }

    /// Gives back `first` and the blocks kept after it (each empty).
    fn release_from(mut first: Option<NonNull<ThinHeader>>) {
        while let Some(b) = first {
            // SAFETY: a kept block is live and empty; each is given back once.
            unsafe {
                first = b.as_ref().next;
                release(b.cast(), b.as_ref().class);
            }
        }
    }
}

impl<T> Default for ThinTape<T> {
    #[inline(always)]
    fn default() -> Self {
        ThinTape {
            top: None,
            _owns: PhantomData,
        }
    }
}

impl<T> Spill<T> for ThinTape<T> {
    #[inline(always)]
    fn push(&mut self, v: T) {
        match self.top {
            // SAFETY: `top` is a live block of this tape.
            Some(h) if unsafe { h.as_ref().len < h.as_ref().cap } => Self::write(h, v),
            // (Out of line with the value, as `Tape::push_into_new_block`.)
            _ => self.push_into_new_block(v),
        }
    }

    #[inline(always)]
    fn pop(&mut self) -> Option<T> {
        let mut h = self.top?;
        // SAFETY: `top` is a live block of this tape.
        if unsafe { h.as_ref().len } == 0 {
            h = self.step_back(h)?;
        }
        // SAFETY: the block holds `len > 0` values written by `push` and not read since.
        unsafe {
            let len = (*h.as_ptr()).len - 1;
            (*h.as_ptr()).len = len;
            Some(Self::values(h).add(len).read())
        }
    }

    #[inline]
    fn reserve(&mut self, n: usize) {
        let room = match self.top {
            // SAFETY: `top` is a live block of this tape.
            Some(h) => unsafe { h.as_ref().cap - h.as_ref().len },
            None => 0,
        };
        if room < n {
            self.grow(n);
        }
    }
}

impl<T> Drop for ThinTape<T> {
    fn drop(&mut self) {
        if let Some(top) = self.top {
            // SAFETY: `top` is a live block of this tape.
            Self::release_from(unsafe { top.as_ref().next });
        }
        let mut next = self.top;
        while let Some(h) = next {
            // SAFETY: each block of the chain is live and holds `len` values not read
            // since; each is dropped and given back once.
            unsafe {
                let ThinHeader {
                    len, class, prev, ..
                } = h.as_ptr().read();
                if needs_drop::<T>() {
                    std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(
                        Self::values(h),
                        len,
                    ));
                }
                release(h.cast(), class);
                next = prev;
            }
        }
    }
}

impl<T> fmt::Debug for ThinTape<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut len = 0;
        let mut next = self.top;
        while let Some(h) = next {
            // SAFETY: each block of the chain is live.
            let h = unsafe { h.as_ref() };
            len += h.len;
            next = h.prev;
        }
        f.debug_struct("ThinTape").field("len", &len).finish()
    }
}

impl<T> Stack<T> {
    /// An empty stack that holds 16 values before it allocates.
    #[inline(always)]
    pub fn new() -> Self {
        Self::with_inline()
    }
}

impl<T, const N: usize, S: Spill<T>> Stack<T, N, S> {
    /// An empty stack that holds `N` values before it allocates.
    #[inline(always)]
    pub fn with_inline() -> Self {
        Stack {
            inline: [const { MaybeUninit::uninit() }; N],
            len: 0,
            spill: S::default(),
        }
    }

    /// Whether `T` takes no memory (the state `()` of a callee that keeps nothing): then
    /// the stack only counts its values, as a `Vec` of them does.
    const ZERO_SIZED: bool = size_of::<T>() == 0;

    /// Records `v`.
    #[inline(always)]
    pub fn push(&mut self, v: T) {
        if Self::ZERO_SIZED {
            std::mem::forget(v);
            self.len += 1;
        } else if self.len < N {
            self.inline[self.len].write(v);
            self.len += 1;
        } else {
            self.spill.push(v);
        }
    }

    /// Takes the last recorded value back.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<T> {
        if Self::ZERO_SIZED {
            if self.len == 0 {
                return None;
            }
            self.len -= 1;
            // SAFETY: `T` is zero-sized, so a dangling aligned pointer reads it (as `Vec`
            // reads its zero-sized values); one was pushed and forgotten for this read.
            return Some(unsafe { NonNull::<T>::dangling().as_ptr().read() });
        }
        if self.len == N
            && let Some(v) = self.spill.pop()
        {
            return Some(v);
        }
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        // SAFETY: the first `len + 1` slots hold values written by `push`, not read since.
        Some(unsafe { self.inline[self.len].assume_init_read() })
    }

    /// Makes room for `n` more values without allocating again.
    #[inline]
    pub fn reserve(&mut self, n: usize) {
        if Self::ZERO_SIZED {
            return;
        }
        let room = N - self.len;
        if n > room {
            self.spill.reserve(n - room);
        }
    }
}

impl<T, const N: usize, S: Spill<T>> Drop for Stack<T, N, S> {
    fn drop(&mut self) {
        if Self::ZERO_SIZED {
            for _ in 0..self.len {
                // SAFETY: as in `pop`: each count stands for a value pushed and forgotten.
                drop(unsafe { NonNull::<T>::dangling().as_ptr().read() });
            }
        } else if needs_drop::<T>() {
            for slot in &mut self.inline[..self.len] {
                // SAFETY: the first `len` slots hold values not read since.
                unsafe { slot.assume_init_drop() };
            }
        }
    }
}

impl<T, const N: usize, S: Spill<T>> Default for Stack<T, N, S> {
    fn default() -> Self {
        Self::with_inline()
    }
}

impl<T, const N: usize, S: Spill<T> + fmt::Debug> fmt::Debug for Stack<T, N, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stack")
            .field("inline", &self.len)
            .field("spill", &self.spill)
            .finish()
    }
}

/// A LIFO store of many values: a chain of blocks, each twice the size of the one before,
/// taken from the per-thread cache of tape memory and given back when the tape is dropped.
///
/// Unlike a `Vec`, it never moves the values it holds when it grows, and its memory
/// outlives it in the cache: a gradient called in a loop records into the same warm
/// blocks on every call.
pub struct Tape<T> {
    /// The block being filled (dangling while there is none).
    ptr: NonNull<T>,
    /// Values in that block.
    len: usize,
    /// Values that block holds: 0 while there is none (`usize::MAX` for zero-sized `T`).
    cap: usize,
    /// Its size class.
    class: usize,
    /// The blocks before it, oldest first.
    earlier: Vec<Block>,
    _owns: PhantomData<T>,
}

/// A block of a [`Tape`] other than the one being filled.
struct Block {
    ptr: NonNull<u8>,
    len: usize,
    class: usize,
}

// SAFETY: a tape owns its values and its blocks, like a `Vec<T>`.
unsafe impl<T: Send> Send for Tape<T> {}
// SAFETY: a shared tape gives no access to its values.
unsafe impl<T: Sync> Sync for Tape<T> {}

impl<T> Tape<T> {
    /// Whether `T` fits the blocks' alignment; larger alignments are not cached.
    const ALIGNED: () = assert!(
        align_of::<T>() <= BLOCK_ALIGN,
        "autodiff: a recorded value needs more than 64-byte alignment"
    );

    /// An empty tape; it allocates at its first value.
    #[inline(always)]
    pub fn new() -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::ALIGNED;
        Tape {
            ptr: NonNull::dangling(),
            len: 0,
            cap: if size_of::<T>() == 0 { usize::MAX } else { 0 },
            class: 0,
            earlier: Vec::new(),
            _owns: PhantomData,
        }
    }

    /// Records `v`.
    #[inline(always)]
    pub fn push(&mut self, v: T) {
        if self.len == self.cap {
            return self.push_into_new_block(v);
        }
        // SAFETY: `len < cap`, so the slot lies inside the current block and is free.
        unsafe { self.ptr.as_ptr().add(self.len).write(v) };
        self.len += 1;
    }

    /// `push` when the block is full, out of line and taking the value along: a value
    /// that had to live across the call to `grow` would be kept in memory by the code
    /// that computes it (no vector register survives a call), a running sum spilled and
    /// reloaded on every step of the loop that forms it.
    #[cold]
    #[inline(never)]
    fn push_into_new_block(&mut self, v: T) {
        self.grow(1);
        // SAFETY: `grow` left `len < cap`.
        unsafe { self.ptr.as_ptr().add(self.len).write(v) };
        self.len += 1;
    }

    /// Takes the last recorded value back.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<T> {
        if self.len == 0 && !self.step_back() {
            return None;
        }
        self.len -= 1;
        // SAFETY: the slot holds a value written by `push` and not read since.
        Some(unsafe { self.ptr.as_ptr().add(self.len).read() })
    }

    /// Makes room for `n` more values without growing again.
    #[inline]
    pub fn reserve(&mut self, n: usize) {
        if self.cap - self.len < n {
            self.grow(n);
        }
    }

    /// Starts a new block with room for `n` values, at least twice the current one.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, n: usize) {
        // The smallest class (256 bytes) already holds a few values of any usual size.
        let mut class = class_for(n.saturating_mul(size_of::<T>()));
        if self.cap > 0 {
            class = class.max(self.class + 1);
            let current = Block {
                ptr: self.ptr.cast(),
                len: self.len,
                class: self.class,
            };
            // Every earlier block holds a value, so that `pop` steps back at most once.
            if current.len > 0 {
                self.earlier.push(current);
            } else {
                release(current.ptr, current.class);
            }
        }
        self.ptr = acquire(class).cast();
        self.len = 0;
        self.cap = class_bytes(class) / size_of::<T>();
        self.class = class;
    }

    /// Records copies of the values of `v` in one block, so that they can be read back as
    /// one slice (see `saved_runs`).
    #[inline]
    pub(crate) fn push_run(&mut self, v: &[T])
    where
        T: Clone,
    {
        if self.cap - self.len < v.len() {
            self.grow(v.len());
        }
        let start = self.len;
        for (i, x) in v.iter().enumerate() {
            // SAFETY: `start + i < cap`: the room for all of `v` was made above.
            unsafe { self.ptr.as_ptr().add(start + i).write(x.clone()) };
        }
        // Counted once all are written (a `memcpy` for floats): a panicking `clone`
        // leaves the values written before it uncounted, leaked but never read.
        self.len = start + v.len();
    }

    /// Makes the last `n` values, recorded by one [`Tape::push_run`], readable by
    /// [`Tape::top`] (the block before an emptied one becomes current).
    ///
    /// # Panics
    /// Only on a bug of the generated code: fewer values recorded than read back.
    #[inline]
    pub(crate) fn prepare_run(&mut self, n: usize) {
        if n > 0 && self.len == 0 {
            self.step_back();
        }
        assert!(
            self.len >= n,
            "autodiff: a reverse sweep read saved values that were never recorded"
        );
    }

    /// The last `n` values, in the current block (after [`Tape::prepare_run`]).
    #[inline]
    pub(crate) fn top(&self, n: usize) -> &[T] {
        debug_assert!(n <= self.len);
        // SAFETY: the last `n` of the current block's `len` values are initialised
        // (`prepare_run` checked `n <= len`), and `ptr` is aligned even when dangling.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(self.len - n), n) }
    }

    /// Drops the last `n` values of the current block (after [`Tape::prepare_run`]).
    #[inline]
    pub(crate) fn drop_top(&mut self, n: usize) {
        debug_assert!(n <= self.len);
        self.len -= n;
        if needs_drop::<T>() {
            // SAFETY: the `n` values after the new `len` are initialised and no longer
            // counted, so they are dropped exactly once.
            unsafe {
                std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(
                    self.ptr.as_ptr().add(self.len),
                    n,
                ))
            };
        }
    }

    /// Makes the values of the block before the current (empty) one current; false if
    /// there is none.
    ///
    /// A small earlier block is moved into the current one, which is larger, and given
    /// back: the tape keeps its largest block, so that a tape filled and emptied again and
    /// again (one per data point of a loop) stops growing after the first round instead of
    /// growing through every size class and giving the blocks back each time. Each value
    /// moves at most once per block it passes, and larger blocks are stepped back into as
    /// before, their values never moved.
    #[cold]
    #[inline(never)]
    fn step_back(&mut self) -> bool {
        let Some(prev) = self.earlier.pop() else {
            return false;
        };
        if class_bytes(prev.class) <= MOVED_BLOCK_BYTES && prev.len <= self.cap {
            // SAFETY: the current block is empty and holds `cap >= prev.len` values; the
            // earlier block holds `prev.len` initialised values, moved out here and never
            // read there again before it is given back.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    prev.ptr.cast::<T>().as_ptr(),
                    self.ptr.as_ptr(),
                    prev.len,
                )
            };
            release(prev.ptr, prev.class);
            self.len = prev.len;
            return true;
        }
        release(self.ptr.cast(), self.class);
        self.ptr = prev.ptr.cast();
        self.len = prev.len;
        self.cap = class_bytes(prev.class) / size_of::<T>();
        self.class = prev.class;
        true
    }
}

impl<T> Drop for Tape<T> {
    fn drop(&mut self) {
        if needs_drop::<T>() {
            while self.pop().is_some() {}
        }
        if size_of::<T>() == 0 {
            return;
        }
        if self.cap > 0 {
            release(self.ptr.cast(), self.class);
        }
        for b in self.earlier.drain(..) {
            release(b.ptr, b.class);
        }
    }
}

impl<T> Default for Tape<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for Tape<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let len = self.len + self.earlier.iter().map(|b| b.len).sum::<usize>();
        f.debug_struct("Tape").field("len", &len).finish()
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
    use super::{Spill, Stack, Tape, ThinTape};
    use crate::tape_memory::{cached_tape_bytes, class_bytes, release_tape_memory};
    use std::mem::size_of;
    use std::rc::Rc;

    /// Pushes and pops interleaved as nested loops do, with reservations that start new
    /// blocks early, against a `Vec` as the model: a tape, and a thin tape.
    #[test]
    fn tape_is_lifo_across_its_blocks() {
        is_lifo_across_blocks::<Tape<(usize, usize)>>();
        is_lifo_across_blocks::<ThinTape<(usize, usize)>>();
    }

    fn is_lifo_across_blocks<S: Spill<(usize, usize)>>() {
        let mut t = S::default();
        let mut model = Vec::new();
        for round in 0..6usize {
            t.reserve(round * 37);
            for k in 0..(50 + 300 * round) {
                t.push((k, round));
                model.push((k, round));
            }
            for _ in 0..(40 + 100 * round) {
                assert_eq!(t.pop(), model.pop());
            }
        }
        while let Some(v) = model.pop() {
            assert_eq!(t.pop(), Some(v));
        }
        assert_eq!(t.pop(), None);
        t.reserve(1000);
        assert_eq!(t.pop(), None);
        t.push((1, 1));
        assert_eq!(t.pop(), Some((1, 1)));
        assert_eq!(t.pop(), None);
    }

    /// Values still on a dropped stack, inline or spilled, are dropped once, whether its
    /// spill is a tape in place or one behind a pointer.
    #[test]
    fn stack_drops_what_it_holds() {
        fn check<S: Spill<Rc<()>>>() {
            let rc = Rc::new(());
            {
                let mut s = Stack::<_, 4, S>::with_inline();
                for _ in 0..10 {
                    s.push(rc.clone());
                }
                for _ in 0..5 {
                    drop(s.pop());
                }
                assert_eq!(Rc::strong_count(&rc), 6);
            }
            assert_eq!(Rc::strong_count(&rc), 1);
        }
        check::<Tape<Rc<()>>>();
        check::<ThinTape<Rc<()>>>();
    }

    /// Zero-sized values (a callee's state `()`) are only counted: as many come back as
    /// went in, past the inline ones, without memory, and those left are dropped once.
    #[test]
    fn stack_counts_zero_sized_values() {
        thread_local! {
            static DROPS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
        }
        struct Token;
        impl Drop for Token {
            fn drop(&mut self) {
                DROPS.with(|d| d.set(d.get() + 1));
            }
        }
        release_tape_memory();
        let mut units = Stack::<()>::new();
        units.reserve(1000);
        for _ in 0..1000 {
            units.push(());
        }
        assert_eq!(cached_tape_bytes(), 0, "zero-sized values take no memory");
        assert_eq!((0..1000).filter_map(|_| units.pop()).count(), 1000);
        assert_eq!(units.pop(), None);
        {
            let mut tokens = Stack::<Token>::new();
            for _ in 0..40 {
                tokens.push(Token);
            }
            for _ in 0..15 {
                drop(tokens.pop());
            }
            assert_eq!(DROPS.with(|d| d.get()), 15);
        }
        assert_eq!(
            DROPS.with(|d| d.get()),
            40,
            "the 25 left are dropped with the stack"
        );
    }

    /// Values still on a dropped tape or thin tape are dropped once, over several blocks;
    /// values popped are not dropped twice; the blocks go back to the cache; zero-sized
    /// values are held too.
    #[test]
    fn tapes_drop_what_they_hold() {
        drops_what_it_holds::<Tape<Rc<()>>, Tape<()>>("Tape");
        drops_what_it_holds::<ThinTape<Rc<()>>, ThinTape<()>>("ThinTape");
    }

    fn drops_what_it_holds<S, Z>(name: &str)
    where
        S: Spill<Rc<()>> + std::fmt::Debug,
        Z: Spill<()> + std::fmt::Debug,
    {
        release_tape_memory();
        let rc = Rc::new(());
        {
            let mut t = S::default();
            for _ in 0..1000 {
                t.push(rc.clone());
            }
            for _ in 0..300 {
                drop(t.pop());
            }
            assert_eq!(Rc::strong_count(&rc), 701);
            assert_eq!(format!("{t:?}"), format!("{name} {{ len: 700 }}"));
        }
        assert_eq!(Rc::strong_count(&rc), 1);
        assert!(cached_tape_bytes() >= 1000 * size_of::<Rc<()>>());
        let mut z = Z::default();
        for _ in 0..5 {
            z.push(());
        }
        assert_eq!(z.pop(), Some(()));
        assert_eq!(format!("{z:?}"), format!("{name} {{ len: 4 }}"));
    }

    /// A tape filled and emptied again and again, as one recording per data point of a
    /// loop, keeps its largest block once emptied: later rounds fill it without growing,
    /// and read back what they recorded.
    #[test]
    fn an_emptied_tape_keeps_its_largest_block() {
        let mut t = Tape::new();
        for round in 0..4u64 {
            for k in 0..250 {
                t.push(k * 10 + round);
            }
            if round > 0 {
                assert!(t.earlier.is_empty(), "round {round} grew the tape again");
            }
            for k in (0..250).rev() {
                assert_eq!(t.pop(), Some(k * 10 + round));
            }
            assert_eq!(t.pop(), None);
            assert!(t.earlier.is_empty());
            assert!(
                t.cap >= 250,
                "the emptied tape kept a block of {} values",
                t.cap
            );
        }
    }

    /// A dropped tape's blocks go to the thread's cache, and the next tape takes them
    /// from there rather than from the allocator.
    #[test]
    fn tapes_reuse_the_memory_of_earlier_tapes() {
        release_tape_memory();
        let fill = || {
            let mut t = Tape::new();
            for k in 0..100_000u64 {
                t.push(k as f64);
            }
            t
        };
        drop(fill());
        let cached = cached_tape_bytes();
        assert!(cached >= 800_000, "{cached}");
        let t = fill();
        assert!(cached_tape_bytes() < cached / 10, "{}", cached_tape_bytes());
        drop(t);
        assert_eq!(cached_tape_bytes(), cached);
        assert_eq!(release_tape_memory(), cached);
        assert_eq!(cached_tape_bytes(), 0);
    }

    /// Values come back last in, first out, across the inline part and the spill, through
    /// pushes and pops interleaved as nested loops do.
    #[test]
    fn stack_is_lifo_across_its_inline_part() {
        stack_is_lifo::<Tape<i32>>();
        stack_is_lifo::<ThinTape<i32>>();
    }

    fn stack_is_lifo<S: Spill<i32>>() {
        let mut s = Stack::<i32, 16, S>::with_inline();
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

    /// A thin tape filled over several blocks and emptied back into its first, three
    /// times, reads its values back last in, first out, gives no block back while it
    /// lives (its `pop` calls nothing), and gives them all back to the thread's cache
    /// when dropped, those it emptied included.
    #[test]
    fn a_thin_tape_keeps_its_emptied_blocks_until_dropped() {
        release_tape_memory();
        let mut bytes = 0;
        {
            let mut t = ThinTape::<u64>::default();
            for round in 0..3u64 {
                for k in 0..5_000 {
                    t.push(k * 10 + round);
                }
                if round == 0 {
                    let mut b = t.top;
                    while let Some(h) = b {
                        // SAFETY: each block of the chain is live.
                        let h = unsafe { h.as_ref() };
                        bytes += class_bytes(h.class);
                        b = h.prev;
                    }
                    assert!(bytes >= 5_000 * size_of::<u64>(), "{bytes}");
                }
                for k in (1..5_000).rev() {
                    assert_eq!(t.pop(), Some(k * 10 + round));
                }
                assert_eq!(
                    cached_tape_bytes(),
                    0,
                    "round {round} gave blocks back early"
                );
                assert_eq!(t.pop(), Some(round));
                assert_eq!(t.pop(), None);
            }
        }
        assert_eq!(cached_tape_bytes(), bytes, "blocks lost");
        release_tape_memory();
    }
}
