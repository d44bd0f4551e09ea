//! The memory that tapes grow into, cached per thread.
//!
//! A gradient records values into tapes that it frees when it returns, and a program
//! calls the same gradient again and again. Taking each tape's memory from the global
//! allocator on every call costs more than the values it records once a tape is large:
//! glibc serves large blocks by `mmap` (or grows and trims its heap) per call, so every
//! call faults its pages in again. Tapes instead take blocks from a per-thread cache,
//! in power-of-two size classes, and give them back when they are dropped; the next call
//! finds them warm.

use std::alloc::{Layout, alloc, dealloc, handle_alloc_error};
use std::cell::RefCell;
use std::ptr::NonNull;

/// Bytes of the smallest block: class `c` holds blocks of `MIN_BLOCK << c` bytes.
const MIN_BLOCK: usize = 256;
/// Number of size classes (the last one far beyond any real allocation).
const CLASSES: usize = 48;
/// Alignment of every block: a cache line, enough for any value a tape records.
pub(crate) const BLOCK_ALIGN: usize = 64;
/// Bytes a thread keeps cached at most; a block given back beyond that is freed.
const MAX_CACHED: usize = 512 << 20;

/// Free blocks of one thread, by size class.
struct Cache {
    free: [Vec<NonNull<u8>>; CLASSES],
    bytes: usize,
}

impl Cache {
    fn free_all(&mut self) {
        for (class, blocks) in self.free.iter_mut().enumerate() {
            for block in blocks.drain(..) {
                // SAFETY: every cached block was allocated by `acquire` with this layout.
                unsafe { dealloc(block.as_ptr(), layout(class)) };
            }
        }
        self.bytes = 0;
    }
}

impl Drop for Cache {
    fn drop(&mut self) {
        self.free_all();
    }
}

thread_local! {
    static CACHE: RefCell<Cache> = const {
        RefCell::new(Cache { free: [const { Vec::new() }; CLASSES], bytes: 0 })
    };
}

/// Bytes of a block of `class`.
#[inline]
pub(crate) fn class_bytes(class: usize) -> usize {
    MIN_BLOCK << class
}

/// The smallest class whose blocks hold `bytes`.
pub(crate) fn class_for(bytes: usize) -> usize {
    let blocks = bytes.div_ceil(MIN_BLOCK).max(1);
    let class = blocks.next_power_of_two().trailing_zeros() as usize;
    if class >= CLASSES {
        capacity_overflow()
    }
    class
}

fn layout(class: usize) -> Layout {
    match Layout::from_size_align(class_bytes(class), BLOCK_ALIGN) {
        Ok(l) => l,
        Err(_) => capacity_overflow(),
    }
}

#[cold]
fn capacity_overflow() -> ! {
    panic!("autodiff: a tape outgrew the address space")
}

/// A block of `class`: a cached one of this thread if there is one, else a new one.
pub(crate) fn acquire(class: usize) -> NonNull<u8> {
    let cached = CACHE
        .try_with(|c| {
            let mut c = c.borrow_mut();
            let block = c.free[class].pop();
            if block.is_some() {
                c.bytes -= class_bytes(class);
            }
            block
        })
        .ok()
        .flatten();
    cached.unwrap_or_else(|| {
        let layout = layout(class);
        // SAFETY: the layout has a non-zero size.
        NonNull::new(unsafe { alloc(layout) }).unwrap_or_else(|| handle_alloc_error(layout))
    })
}

/// Gives back a block that [`acquire`] returned for `class`; no value in it is live.
pub(crate) fn release(block: NonNull<u8>, class: usize) {
    let kept = CACHE
        .try_with(|c| {
            let mut c = c.borrow_mut();
            if c.bytes + class_bytes(class) > MAX_CACHED {
                return false;
            }
            c.bytes += class_bytes(class);
            c.free[class].push(block);
            true
        })
        .unwrap_or(false);
    if !kept {
        // SAFETY: `block` was allocated by `acquire` with this layout.
        unsafe { dealloc(block.as_ptr(), layout(class)) };
    }
}

/// Frees the memory this thread keeps for the tapes of later calls; returns its size in
/// bytes.
///
/// Derivatives take the memory of their tapes from a per-thread cache and give it back
/// when they return, so that calling a gradient again does not allocate again. The cache
/// holds at most the largest tapes a thread has needed at once (and never more than
/// 512 MiB); call this after a burst of large gradients to give that memory back.
///
/// ```
/// use autodiff_core::prelude::*;
///
/// #[autodiff_reverse(d_f, Duplicated, Active)]
/// fn f(x: &[f64]) -> f64 {
///     let mut s = 0.0;
///     for i in 0..x.len() {
///         s += x[i].sin() * x[i].exp();
///     }
///     s
/// }
///
/// let x = vec![0.5; 100_000];
/// let mut dx = vec![0.0; x.len()];
/// d_f(&x, &mut dx, 1.0);
/// assert!(autodiff_core::cached_tape_bytes() > 0);
/// autodiff_core::release_tape_memory();
/// assert_eq!(autodiff_core::cached_tape_bytes(), 0);
/// ```
pub fn release_tape_memory() -> usize {
    CACHE
        .try_with(|c| {
            let mut c = c.borrow_mut();
            let bytes = c.bytes;
            c.free_all();
            bytes
        })
        .unwrap_or(0)
}

/// Bytes this thread keeps cached for the tapes of later calls (see
/// [`release_tape_memory`]).
pub fn cached_tape_bytes() -> usize {
    CACHE.try_with(|c| c.borrow().bytes).unwrap_or(0)
}
