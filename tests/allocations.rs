//! What derivative code allocates: copies of local arrays and of rows stay on the stack
//! as in the primal, so a loop that copies its state every step allocates nothing per
//! step. Counted by a global allocator, per thread (the tests of this file run on
//! threads of their own).

use autodiff_core::prelude::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every call is passed on to `System`; the count is a thread-local `Cell`.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// How many allocations `f` makes on this thread.
fn allocations(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

/// Explicit Euler steps of a small system, the state copied whole every step.
#[autodiff_forward(euler_fwd, Dual, Const, Dual)]
#[autodiff_reverse(euler_rev, Active, Const, Active)]
fn euler(k: f64, n: usize) -> f64 {
    let mut s = [k, 0.5, 1.0];
    for _ in 0..n {
        let p = s;
        s[0] = p[0] + 0.01 * (p[1] * p[2]).sin();
        s[1] = p[1] - 0.01 * p[0] * k;
        s[2] = p[2] + 0.01 * (p[0] - p[1]);
    }
    s[0] * s[1] + s[2]
}

/// A stage table whose rows are read back by copies of the previous row.
#[allow(clippy::clone_on_copy)] // `.clone()` of a row is one of the copies under test
#[autodiff_forward(stages_fwd, Dual, Const, Dual)]
#[autodiff_reverse(stages_rev, Active, Const, Active)]
fn stages(k: f64, n: usize) -> f64 {
    let mut rows = [[0.0; 2]; 4];
    rows[0] = [k, 1.0 - k];
    let mut acc = 0.0;
    for _ in 0..n {
        for i in 1..4 {
            let prev = rows[i - 1];
            rows[i][0] = prev[0] * 0.9 + prev[1] * 0.1;
            rows[i][1] = (prev[0] * 0.5).cos();
        }
        let last = rows[3].clone();
        acc += last[0] - last[1];
        rows[0] = [rows[3][1], rows[3][0]];
    }
    acc
}

/// Allocations of `run(n)` for a long run beyond those of a short one, after a warm-up
/// (the tape's blocks are then cached by the thread).
fn per_step_growth(run: impl Fn(usize)) -> usize {
    run(400);
    let short = allocations(|| run(40));
    let long = allocations(|| run(400));
    long.saturating_sub(short)
}

/// Checks the companions of `f(k, n)` against a central difference at `k` (the
/// derivatives are checked against num-dual elsewhere, `lang_buffers`; this only guards
/// against a companion that does nothing), then that neither allocates per step.
fn check_no_allocation_per_step(
    k: f64,
    f: impl Fn(f64, usize) -> f64,
    fwd: impl Fn(f64, f64, usize) -> (f64, f64),
    rev: impl Fn(f64, usize, f64) -> (f64, f64),
) {
    let (h, n) = (1e-6, 20);
    let fd = (f(k + h, n) - f(k - h, n)) / (2.0 * h);
    let (_, dk) = fwd(k, 1.0, n);
    let (_, gk) = rev(k, n, 1.0);
    assert!((dk - fd).abs() < 1e-6 * fd.abs().max(1.0), "{dk} vs {fd}");
    assert!((gk - fd).abs() < 1e-6 * fd.abs().max(1.0), "{gk} vs {fd}");

    let forward = per_step_growth(|n| {
        std::hint::black_box(fwd(k, 1.0, n));
    });
    let reverse = per_step_growth(|n| {
        std::hint::black_box(rev(k, n, 1.0));
    });
    // A copy made with `to_vec` allocates once per step for the value and once for its
    // shadow: at least 720 more allocations for the 360 more steps.
    assert!(
        forward < 10,
        "forward: {forward} more allocations for 360 more steps"
    );
    assert!(
        reverse < 10,
        "reverse: {reverse} more allocations for 360 more steps"
    );
}

/// A heat equation stepped by double buffering, `std::mem::swap(&mut u, &mut next)`.
#[autodiff_forward(heat_fwd, Dual, Const, Dual)]
#[autodiff_reverse(heat_rev, Active, Const, Active)]
fn heat(k: f64, n: usize) -> f64 {
    let mut u = vec![0.0, 1.0, 0.5, -0.5, 0.0];
    let mut next = vec![0.0; 5];
    for _ in 0..n {
        next[0] = u[0];
        next[4] = u[4];
        for i in 1..4 {
            next[i] = u[i] + k * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
        }
        std::mem::swap(&mut u, &mut next);
    }
    u[1] + u[2] * u[3]
}

#[test]
fn copies_of_local_arrays_do_not_allocate_per_step() {
    check_no_allocation_per_step(0.7, euler, euler_fwd, euler_rev);
}

#[test]
fn buffers_swapped_whole_do_not_allocate_per_step() {
    check_no_allocation_per_step(0.2, heat, heat_fwd, heat_rev);
}

#[test]
fn copies_of_rows_do_not_allocate_per_step() {
    check_no_allocation_per_step(0.3, stages, stages_fwd, stages_rev);
}

/// One explicit Euler step of a small system, `out = u + h f(u)`.
#[differentiable]
fn euler_step(u: &[f64], k: f64, out: &mut [f64]) {
    out[0] = u[0] + 0.01 * (u[1] * u[2]).sin();
    out[1] = u[1] - 0.01 * u[0] * k;
    out[2] = u[2] + 0.01 * (u[0] - u[1]);
}

/// Euler steps through a helper lent the state, which the loop then overwrites: the
/// helper's pullback is given the state again (restored by the reverse sweep), so the
/// state is not copied for it.
#[autodiff_forward(helper_steps_fwd, Dual, Const, Dual)]
#[autodiff_reverse(helper_steps_rev, Active, Const, Active)]
fn helper_steps(k: f64, n: usize) -> f64 {
    let mut u = vec![k, 0.5, 1.0];
    let mut v = vec![0.0; 3];
    for _ in 0..n {
        euler_step(&u, k, &mut v);
        u.copy_from_slice(&v);
    }
    u[0] * u[1] + u[2]
}

#[test]
fn a_state_lent_to_a_helper_is_not_copied_per_step() {
    check_no_allocation_per_step(0.4, helper_steps, helper_steps_fwd, helper_steps_rev);
}

/// Newton's iteration for `√a`, capped at `max_iter` steps, leaving when it has converged.
#[autodiff_reverse(capped_newton_rev, Active, Const, Active)]
fn capped_newton(a: f64, max_iter: usize) -> f64 {
    let mut x = a;
    for _ in 0..max_iter {
        let next = 0.5 * (x + a / x);
        if (next - x).abs() < 1e-15 {
            break;
        }
        x = next;
    }
    x
}

/// A loop that may leave early records the steps that ran: its range is only a bound, and
/// no memory is set aside for it (ten million steps would be 80 MB per store).
#[test]
fn a_loop_that_leaves_early_takes_tape_for_the_steps_run() {
    autodiff_core::release_tape_memory();
    let (x, dx) = capped_newton_rev(2.0, 10_000_000, 1.0);
    assert!((x - 2f64.sqrt()).abs() < 1e-15);
    assert!((dx - 0.5 / 2f64.sqrt()).abs() < 1e-12, "d√a/da = {dx}");
    let kept = autodiff_core::cached_tape_bytes();
    assert!(
        kept < 1 << 16,
        "{kept} bytes of tape kept for about 6 steps"
    );
}

/// Rosenbrock with its running sum written out, `s = s + ..`: the old `s` is read only to
/// compute a value the reverse sweep never reads, so nothing is recorded.
#[autodiff_reverse(rosenbrock_written_out_rev, Duplicated, Active)]
fn rosenbrock_written_out(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() - 1 {
        let a = 1.0 - x[i];
        let b = x[i + 1] - x[i] * x[i];
        s = s + a * a + 100.0 * b * b;
    }
    s
}

#[test]
fn a_running_sum_written_out_takes_no_tape() {
    let x: Vec<f64> = (0..100_000).map(|i| (i as f64 * 0.37).sin()).collect();
    let mut g = vec![0.0; x.len()];
    autodiff_core::release_tape_memory();
    let f = rosenbrock_written_out_rev(&x, &mut g, 1.0);
    let kept = autodiff_core::cached_tape_bytes();
    assert_eq!(f, rosenbrock_written_out(&x));
    // ∂/∂x_i = -2(1 - x_i) - 400 x_i (x_{i+1} - x_i²) + 200 (x_i - x_{i-1}²).
    for i in [0, 1, 500, x.len() - 2, x.len() - 1] {
        let mut e = 0.0;
        if i + 1 < x.len() {
            e += -2.0 * (1.0 - x[i]) - 400.0 * x[i] * (x[i + 1] - x[i] * x[i]);
        }
        if i > 0 {
            e += 200.0 * (x[i] - x[i - 1] * x[i - 1]);
        }
        assert!(
            (g[i] - e).abs() < 1e-9 * e.abs().max(1.0),
            "g[{i}] = {}, expected {e}",
            g[i]
        );
    }
    assert_eq!(kept, 0, "{kept} bytes of tape for a sum");
}

/// A square, as a helper.
#[differentiable]
fn square(z: f64) -> f64 {
    z * z
}

/// A sum of a scalar helper's values over a slice.
#[autodiff_reverse(helper_sum_rev, Duplicated, Active)]
fn helper_sum(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x {
        s += square(v - 0.5);
    }
    s
}

/// The helper keeps no state for its pullback (it computes its input's square again) and
/// its value is only added: neither is recorded, so the loop records nothing.
#[test]
fn a_scalar_helper_in_a_loop_takes_no_tape() {
    let x: Vec<f64> = (0..100_000).map(|i| (i as f64 * 0.37).sin()).collect();
    let mut g = vec![0.0; x.len()];
    autodiff_core::release_tape_memory();
    let f = helper_sum_rev(&x, &mut g, 1.0);
    let kept = autodiff_core::cached_tape_bytes();
    assert_eq!(f, helper_sum(&x));
    for (i, (gi, xi)) in g.iter().zip(&x).enumerate() {
        assert_eq!(*gi, 2.0 * (xi - 0.5), "g[{i}]");
    }
    assert_eq!(kept, 0, "{kept} bytes of tape for a helper's values");
}

/// A sum of squares that leaves early when it overflows, returning from the loop.
#[autodiff_reverse(guarded_sum_rev, Duplicated, Active)]
fn guarded_sum(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for v in x {
        s += v * v;
        if s > 1.0e300 {
            return s;
        }
    }
    s
}

/// The early `return s;` adds `s`'s adjoint and reads no value of it, so the running sum
/// is not recorded: only the conditions' flags are, a byte per step.
#[test]
fn a_guarded_loop_records_only_its_conditions() {
    let x: Vec<f64> = (0..100_000).map(|i| (i as f64 * 0.37).sin()).collect();
    let mut g = vec![0.0; x.len()];
    autodiff_core::release_tape_memory();
    let f = guarded_sum_rev(&x, &mut g, 1.0);
    let kept = autodiff_core::cached_tape_bytes();
    assert_eq!(f, guarded_sum(&x));
    for (i, (gi, xi)) in g.iter().zip(&x).enumerate() {
        assert_eq!(*gi, 2.0 * xi, "g[{i}]");
    }
    // (Before: the sum's old value too, 8 more bytes per step.)
    assert!(kept < 2 * x.len(), "{kept} bytes of tape for 100,000 steps");
}

/// Explicit Euler steps of `u' = -u³`, each element overwritten in place.
#[allow(clippy::needless_range_loop)] // `u[i] = .. u[i] ..` is the form under test
#[autodiff_reverse(cubic_decay_rev, Duplicated, Const, Active)]
fn cubic_decay(u0: &[f64], steps: usize) -> f64 {
    let mut u = u0.to_vec();
    for _ in 0..steps {
        for i in 0..u.len() {
            u[i] = u[i] - 0.01 * u[i] * u[i] * u[i];
        }
    }
    u.iter().map(|v| v * v).sum()
}

/// Each step records the element it overwrites, which its derivative reads, and not also
/// the new value, which only goes into the buffer.
#[test]
fn an_element_overwritten_in_place_is_recorded_once() {
    let (n, steps) = (1000, 100);
    let u0: Vec<f64> = (0..n).map(|i| 0.5 * (i as f64 * 0.37).sin()).collect();
    let mut g = vec![0.0; n];
    autodiff_core::release_tape_memory();
    cubic_decay_rev(&u0, &mut g, steps, 1.0);
    let kept = autodiff_core::cached_tape_bytes();
    let h = 1e-6;
    for i in [0, 1, n / 2, n - 1] {
        let (mut up, mut dn) = (u0.clone(), u0.clone());
        up[i] += h;
        dn[i] -= h;
        let fd = (cubic_decay(&up, steps) - cubic_decay(&dn, steps)) / (2.0 * h);
        assert!(
            (g[i] - fd).abs() < 1e-6 * fd.abs().max(1.0),
            "g[{i}] = {}, fd {fd}",
            g[i]
        );
    }
    let values = 8 * n * steps;
    // (Blocks double in size, so up to about twice what they hold is kept.)
    assert!(
        kept < 2 * values + (1 << 16),
        "{kept} bytes of tape for {values} bytes of values"
    );
    assert!(kept >= values);
}
