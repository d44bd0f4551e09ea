//! Custom rules always fire: with constant arguments and a unit return, inlined or not, in
//! other modules and through aliases, at several types, once per call inside loops.
// Index loops are part of the language under test.
#![allow(clippy::needless_range_loop)]

use autodiff_core::prelude::*;
use autodiff_core::testing::close;
use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};

// ------------------------------------------------------------------ all-constant rule

static AUGMENTED: AtomicUsize = AtomicUsize::new(0);
static PULLBACKS: AtomicUsize = AtomicUsize::new(0);
static FORWARDS: AtomicUsize = AtomicUsize::new(0);

trait Marker {
    fn apply(&self);
}

/// A zero-sized type: `bar` is a no-op on it.
struct MyConst;

impl Marker for MyConst {
    fn apply(&self) {}
}

struct MyConst2 {
    v: RefCell<Vec<f64>>,
}

impl Marker for MyConst2 {
    fn apply(&self) {
        for x in self.v.borrow_mut().iter_mut() {
            *x *= 2.0;
        }
    }
}

#[custom_rule(forward = bar_fwd, reverse = bar_rev)]
fn bar<T: Marker>(x: &T) {
    x.apply();
}

/// Returns nothing, as `#[autodiff_forward]` of `bar` would.
fn bar_fwd<T: Marker>(x: &T) {
    FORWARDS.fetch_add(1, Ordering::SeqCst);
    x.apply();
}

#[allow(clippy::unused_unit)]
fn bar_rev<T: Marker>(x: &T) -> ((), impl FnOnce() + '_) {
    AUGMENTED.fetch_add(1, Ordering::SeqCst);
    x.apply();
    ((), || {
        PULLBACKS.fetch_add(1, Ordering::SeqCst);
    })
}

#[autodiff_reverse(dfoo, Const)]
#[autodiff_forward(foo_jvp, Const)]
fn foo<T: Marker>(c: &T) {
    bar(c)
}

fn counts() -> (usize, usize, usize) {
    (
        AUGMENTED.swap(0, Ordering::SeqCst),
        PULLBACKS.swap(0, Ordering::SeqCst),
        FORWARDS.swap(0, Ordering::SeqCst),
    )
}

#[test]
fn all_constant_rule_fires_once_per_call_in_every_mode() {
    counts();
    dfoo(&MyConst);
    assert_eq!(counts(), (1, 1, 0), "reverse, zero-sized type");

    let c2 = MyConst2 {
        v: RefCell::new(vec![1.0, 3.0]),
    };
    dfoo(&c2);
    assert_eq!(counts(), (1, 1, 0), "reverse, MyConst2");
    // The augmented rule ran once, and the primal never ran besides it.
    assert_eq!(*c2.v.borrow(), vec![2.0, 6.0]);

    foo_jvp(&MyConst);
    assert_eq!(counts(), (0, 0, 1), "forward, zero-sized type");
    foo_jvp(&c2);
    assert_eq!(counts(), (0, 0, 1), "forward, MyConst2");
    assert_eq!(*c2.v.borrow(), vec![4.0, 12.0]);
}

// ------------------------------------------------------------------ constant scalar arguments

static TICK_AUGMENTED: AtomicUsize = AtomicUsize::new(0);
static TICK_PULLBACKS: AtomicUsize = AtomicUsize::new(0);
static TICK_FORWARDS: AtomicUsize = AtomicUsize::new(0);
/// The sum of the arguments `tick` was called with, by any of its rules.
static TICK_STEPS: AtomicUsize = AtomicUsize::new(0);

/// A rule whose only argument is an integer, called as a statement: its value cannot
/// carry a derivative, so only the rule can make the call matter.
#[custom_rule(forward = tick_fwd, reverse = tick_rev)]
fn tick(step: usize) {
    let _ = step;
}

/// The value and tangent `((), ())` of a function returning `()` are accepted too.
fn tick_fwd(step: usize) -> ((), ()) {
    TICK_FORWARDS.fetch_add(1, Ordering::SeqCst);
    TICK_STEPS.fetch_add(step, Ordering::SeqCst);
    ((), ())
}

/// `#[differentiable]`, so that it fires under forward over reverse too.
#[allow(clippy::unused_unit)]
#[differentiable]
fn tick_rev(step: usize) -> ((), impl FnOnce()) {
    TICK_AUGMENTED.fetch_add(1, Ordering::SeqCst);
    no_grad(TICK_STEPS.fetch_add(step, Ordering::SeqCst));
    ((), || {
        TICK_PULLBACKS.fetch_add(1, Ordering::SeqCst);
    })
}

#[autodiff_reverse(d_ticked, Duplicated, Active)]
#[autodiff_forward(ticked_jvp, Dual, Dual)]
fn ticked(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        tick(i + 1);
        s += x[i] * x[i];
    }
    tick(100);
    s
}

/// A rule's counts `(augmented, pullbacks, forwards, steps)`, read and reset to zero.
fn take_counts(counters: [&AtomicUsize; 4]) -> (usize, usize, usize, usize) {
    let [a, p, f, s] = counters.map(|c| c.swap(0, Ordering::SeqCst));
    (a, p, f, s)
}

fn tick_counts() -> (usize, usize, usize, usize) {
    take_counts([
        &TICK_AUGMENTED,
        &TICK_PULLBACKS,
        &TICK_FORWARDS,
        &TICK_STEPS,
    ])
}

#[test]
fn rule_with_constant_scalar_arguments_fires_at_every_call() {
    let x = [1.0, -2.0, 0.5];
    tick_counts();
    let mut g = [0.0; 3];
    let y = d_ticked(&x, &mut g, 1.0);
    // Three calls in the loop (steps 1, 2, 3) and one after it (100).
    assert_eq!(tick_counts(), (4, 4, 0, 106), "reverse");
    assert_eq!((y, g), (5.25, [2.0, -4.0, 1.0]));

    let (y, dy) = ticked_jvp(&x, &[1.0, 0.0, 1.0]);
    assert_eq!(tick_counts(), (0, 0, 4, 106), "forward");
    // 2·x·v = 2·1·1 + 2·0.5·1.
    assert_eq!((y, dy), (5.25, 3.0));

    // Under forward over reverse, each call's value is differentiated by the forward
    // rule and its pullback by the reverse rule, differentiated. The first time, the
    // function with the rule asks the reverse rule for its derivatives (running it once
    // more).
    let hv = autodiff_core::hvp::<d_ticked>(&x, &[1.0, 0.0, 0.0]);
    assert_eq!(hv, vec![2.0, 0.0, 0.0]);
    let (augmented, _, forwards, steps) = tick_counts();
    assert!(
        augmented >= 4 && forwards == 4 && steps >= 212,
        "first H·v: {augmented}, {forwards}, {steps}"
    );
    // Then each rule runs once for each call with that call's argument: the forward
    // rule for its value's derivative, the reverse rule, differentiated, for its
    // pullback's (which runs its statements again).
    let hv = autodiff_core::hvp::<d_ticked>(&x, &[0.0, 1.0, 0.0]);
    assert_eq!(hv, vec![0.0, 2.0, 0.0]);
    let (augmented, _, forwards, steps) = tick_counts();
    assert_eq!((augmented, forwards, steps), (4, 4, 212), "H·v");
}

// Counters of their own: tests run in parallel, and `tick`'s belong to the test above.
static TOCK_AUGMENTED: AtomicUsize = AtomicUsize::new(0);
static TOCK_PULLBACKS: AtomicUsize = AtomicUsize::new(0);
static TOCK_FORWARDS: AtomicUsize = AtomicUsize::new(0);
static TOCK_STEPS: AtomicUsize = AtomicUsize::new(0);

/// `tick` again, for the test below.
#[custom_rule(forward = tock_fwd, reverse = tock_rev)]
fn tock(step: usize) {
    let _ = step;
}

fn tock_fwd(step: usize) {
    TOCK_FORWARDS.fetch_add(1, Ordering::SeqCst);
    TOCK_STEPS.fetch_add(step, Ordering::SeqCst);
}

#[allow(clippy::unused_unit)]
fn tock_rev(step: usize) -> ((), impl FnOnce()) {
    TOCK_AUGMENTED.fetch_add(1, Ordering::SeqCst);
    TOCK_STEPS.fetch_add(step, Ordering::SeqCst);
    ((), || {
        TOCK_PULLBACKS.fetch_add(1, Ordering::SeqCst);
    })
}

fn tock_counts() -> (usize, usize, usize, usize) {
    take_counts([
        &TOCK_AUGMENTED,
        &TOCK_PULLBACKS,
        &TOCK_FORWARDS,
        &TOCK_STEPS,
    ])
}

/// `tock` inside a `#[differentiable]` helper that calls into libm (so that its pullback
/// keeps what its forward sweep computed) and one that does not.
#[differentiable]
fn tocked_sin(a: f64, step: usize) -> f64 {
    tock(step);
    a.sin()
}

#[differentiable]
fn tocked_square(a: f64, step: usize) -> f64 {
    tock(step);
    a * a
}

#[autodiff_reverse(d_through_helpers, Duplicated, Active)]
#[autodiff_forward(through_helpers_jvp, Dual, Dual)]
fn through_helpers(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += tocked_sin(x[i], 1) * tocked_square(x[i], 10);
    }
    s
}

#[test]
fn rule_fires_once_per_call_through_helpers() {
    let x = [0.3, -1.1, 0.7];
    tock_counts();
    let mut g = [0.0; 3];
    let y = d_through_helpers(&x, &mut g, 1.0);
    // Each helper is called once per iteration, and each call runs the rule's augmented
    // part once and its pullback once.
    assert_eq!(tock_counts(), (6, 6, 0, 33), "reverse");
    for i in 0..3 {
        let want = x[i].cos() * x[i] * x[i] + x[i].sin() * 2.0 * x[i];
        close(&format!("∂{i}"), g[i], want, 1e-12).unwrap();
    }
    let want: f64 = x.iter().map(|v| v.sin() * v * v).sum();
    close("value", y, want, 1e-12).unwrap();
    through_helpers_jvp(&x, &[1.0, 0.0, 0.0]);
    assert_eq!(tock_counts(), (0, 0, 6, 33), "forward");
}

// ------------------------------------------------------------------ through constant helpers

static SYNC_AUGMENTED: AtomicUsize = AtomicUsize::new(0);
static SYNC_PULLBACKS: AtomicUsize = AtomicUsize::new(0);
static SYNC_FORWARDS: AtomicUsize = AtomicUsize::new(0);
static SYNC_STEPS: AtomicUsize = AtomicUsize::new(0);

/// A rule with no derivative to give, only effects (a device barrier, say).
#[custom_rule(forward = sync_fwd, reverse = sync_rev)]
fn sync(step: usize) {
    let _ = step;
}

fn sync_fwd(step: usize) {
    SYNC_FORWARDS.fetch_add(1, Ordering::SeqCst);
    SYNC_STEPS.fetch_add(step, Ordering::SeqCst);
}

#[allow(clippy::unused_unit)]
fn sync_rev(step: usize) -> ((), impl FnOnce()) {
    SYNC_AUGMENTED.fetch_add(1, Ordering::SeqCst);
    SYNC_STEPS.fetch_add(step, Ordering::SeqCst);
    ((), || {
        SYNC_PULLBACKS.fetch_add(1, Ordering::SeqCst);
    })
}

/// Held by each test that counts `sync`'s runs: tests run in parallel, and these share
/// its counters.
static SYNC_COUNTED: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Takes [`SYNC_COUNTED`] (whether or not a test that held it failed).
fn count_sync_alone() -> std::sync::MutexGuard<'static, ()> {
    SYNC_COUNTED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `sync`'s counts `(augmented, pullbacks, forwards, steps)`, read and reset to zero.
fn sync_counts() -> (usize, usize, usize, usize) {
    take_counts([
        &SYNC_AUGMENTED,
        &SYNC_PULLBACKS,
        &SYNC_FORWARDS,
        &SYNC_STEPS,
    ])
}

/// No argument at all: nothing the caller passes carries an adjoint.
#[differentiable]
fn synced() {
    sync(1);
}

/// A buffer argument, which the caller passes a constant one.
#[differentiable]
fn synced_sum(v: &[f64]) -> f64 {
    sync(10);
    v[0] + v[1]
}

/// The same around a libm call, whose pullback keeps its forward sweep's values.
#[differentiable]
fn synced_exp(v: &[f64]) -> f64 {
    sync(100);
    v[0].exp()
}

#[autodiff_reverse(d_through_constant_helpers, Duplicated, Const, Active)]
#[autodiff_forward(through_constant_helpers_jvp, Dual, Const, Dual)]
fn through_constant_helpers(x: &[f64], c: &[f64]) -> f64 {
    synced();
    x[0] * synced_sum(c) + synced_exp(c)
}

#[test]
fn rule_fires_through_helpers_that_receive_no_adjoint() {
    let _alone = count_sync_alone();
    let (x, c) = ([1.5], [0.25, -0.5]);
    sync_counts();
    let mut g = [0.0];
    let y = d_through_constant_helpers(&x, &mut g, &c, 1.0);
    // Each helper's pullback runs the rule once, although no argument of the helper
    // has an adjoint to receive.
    assert_eq!(sync_counts(), (3, 3, 0, 111), "reverse");
    close("value", y, x[0] * (c[0] + c[1]) + c[0].exp(), 1e-12).unwrap();
    close("∂x", g[0], c[0] + c[1], 1e-12).unwrap();
    through_constant_helpers_jvp(&x, &[1.0], &c);
    assert_eq!(sync_counts(), (0, 0, 3, 111), "forward");
}

/// The unit the rule returns, bound or dropped rather than discarded by a statement.
#[allow(clippy::let_unit_value, clippy::unit_arg, dropping_copy_types)]
#[autodiff_reverse(d_unit_bound, Duplicated, Active)]
#[autodiff_forward(unit_bound_jvp, Dual, Dual)]
fn unit_bound(x: &[f64]) -> f64 {
    let done: () = sync(1);
    let () = sync(10);
    drop(sync(100));
    std::mem::drop(sync(1000));
    let _ = done;
    x[0] * x[0]
}

#[test]
fn rule_fires_when_its_unit_is_bound_or_dropped() {
    let _alone = count_sync_alone();
    sync_counts();
    let mut g = [0.0];
    d_unit_bound(&[1.5], &mut g, 1.0);
    assert_eq!(sync_counts(), (4, 4, 0, 1111), "reverse");
    close("∂x", g[0], 3.0, 1e-12).unwrap();
    unit_bound_jvp(&[1.5], &[1.0]);
    assert_eq!(sync_counts(), (0, 0, 4, 1111), "forward");
}

static BARRIER_AUGMENTED: AtomicUsize = AtomicUsize::new(0);
static BARRIER_PULLBACKS: AtomicUsize = AtomicUsize::new(0);
static BARRIER_FORWARDS: AtomicUsize = AtomicUsize::new(0);
static BARRIER_STEPS: AtomicUsize = AtomicUsize::new(0);

/// A compute backend whose barrier is a no-op on the CPU: its methods' rules are the only
/// thing that makes a call to them visible. (`#[differentiable]` gives it a zero, for
/// the struct below that holds one.)
#[differentiable]
pub struct CpuBackend;

#[differentiable]
impl CpuBackend {
    #[custom_rule(forward = Self::synchronize_fwd, reverse = Self::synchronize_rev)]
    fn synchronize(&self) {}

    fn synchronize_fwd(&self) {
        BARRIER_FORWARDS.fetch_add(1, Ordering::SeqCst);
    }

    #[allow(clippy::unused_unit)]
    fn synchronize_rev(&self) -> ((), impl FnOnce()) {
        BARRIER_AUGMENTED.fetch_add(1, Ordering::SeqCst);
        ((), || {
            BARRIER_PULLBACKS.fetch_add(1, Ordering::SeqCst);
        })
    }

    /// The same with a constant integer argument.
    #[custom_rule(forward = Self::wait_fwd, reverse = Self::wait_rev)]
    fn wait(&self, step: usize) {
        let _ = step;
    }

    fn wait_fwd(&self, step: usize) {
        BARRIER_FORWARDS.fetch_add(1, Ordering::SeqCst);
        BARRIER_STEPS.fetch_add(step, Ordering::SeqCst);
    }

    #[allow(clippy::unused_unit)]
    fn wait_rev(&self, step: usize) -> ((), impl FnOnce()) {
        BARRIER_AUGMENTED.fetch_add(1, Ordering::SeqCst);
        BARRIER_STEPS.fetch_add(step, Ordering::SeqCst);
        ((), || {
            BARRIER_PULLBACKS.fetch_add(1, Ordering::SeqCst);
        })
    }
}

/// The backend is a constant parameter; two more are made in the body.
#[autodiff_reverse(d_on_backend, Duplicated, Const, Active)]
#[autodiff_forward(on_backend_jvp, Dual, Const, Dual)]
fn on_backend(x: &[f64], backend: &CpuBackend) -> f64 {
    backend.synchronize();
    let mut s = 0.0;
    for i in 0..x.len() {
        s += x[i].sin();
        backend.wait(i + 1);
    }
    let local = CpuBackend;
    local.synchronize();
    CpuBackend.synchronize();
    s
}

/// A struct holding a backend, and indices that carry no derivative.
#[differentiable]
pub struct Pipeline {
    backend: CpuBackend,
    order: Vec<usize>,
    scale: f64,
}

#[differentiable]
impl Pipeline {
    /// The barrier through `self`'s member.
    fn weighted(&self, x: &[f64]) -> f64 {
        self.backend.synchronize();
        let mut s = 0.0;
        for &k in self.order.iter() {
            s += self.scale * x[k];
        }
        s
    }
}

/// The barrier through a constant parameter's member, then through a method.
#[autodiff_reverse(d_through_member, Duplicated, Const, Active)]
#[autodiff_forward(through_member_jvp, Dual, Const, Dual)]
fn through_member(x: &[f64], p: &Pipeline) -> f64 {
    p.backend.synchronize();
    p.weighted(x)
}

/// The whole function is constant: no argument, no result.
#[autodiff_reverse(d_barrier_only, Const)]
#[autodiff_forward(barrier_only_jvp, Const)]
fn barrier_only(backend: &CpuBackend) {
    backend.synchronize();
}

#[test]
fn method_rule_on_a_constant_receiver_fires() {
    let counts = || {
        take_counts([
            &BARRIER_AUGMENTED,
            &BARRIER_PULLBACKS,
            &BARRIER_FORWARDS,
            &BARRIER_STEPS,
        ])
    };
    let x = [0.5, -1.0, 2.0];
    counts();
    let mut g = [0.0; 3];
    let y = d_on_backend(&x, &mut g, &CpuBackend, 1.0);
    // Three `synchronize` calls and three `wait` calls (steps 1, 2, 3).
    assert_eq!(counts(), (6, 6, 0, 6), "reverse");
    close("value", y, x.iter().map(|v| v.sin()).sum(), 1e-12).unwrap();
    for i in 0..3 {
        close("gradient", g[i], x[i].cos(), 1e-12).unwrap();
    }
    let (_, dy) = on_backend_jvp(&x, &[1.0, 0.0, -1.0], &CpuBackend);
    assert_eq!(counts(), (0, 0, 6, 6), "forward");
    close("tangent", dy, x[0].cos() - x[2].cos(), 1e-12).unwrap();

    d_barrier_only(&CpuBackend);
    assert_eq!(counts(), (1, 1, 0, 0), "reverse, all constant");
    barrier_only_jvp(&CpuBackend);
    assert_eq!(counts(), (0, 0, 1, 0), "forward, all constant");

    let p = Pipeline {
        backend: CpuBackend,
        order: vec![2, 0, 2],
        scale: 0.5,
    };
    let mut g = [0.0; 3];
    let y = d_through_member(&x, &mut g, &p, 1.0);
    assert_eq!(counts(), (2, 2, 0, 0), "reverse, members");
    assert_eq!((y, g), (2.25, [0.5, 0.0, 1.0]));
    let (_, dy) = through_member_jvp(&x, &[1.0, 2.0, 4.0], &p);
    assert_eq!(counts(), (0, 0, 2, 0), "forward, members");
    assert_eq!(dy, 4.5);
}

static BEAT_AUGMENTED: AtomicUsize = AtomicUsize::new(0);
static BEAT_PULLBACKS: AtomicUsize = AtomicUsize::new(0);
static BEAT_FORWARDS: AtomicUsize = AtomicUsize::new(0);
static BEAT_STEPS: AtomicUsize = AtomicUsize::new(0);
/// Runs of `beat`'s reverse rule by the power of two of its step.
static BEAT_SITES: [AtomicUsize; 8] = [const { AtomicUsize::new(0) }; 8];

/// `tick` once more, for calls whose value is discarded without a `;` of their own.
#[custom_rule(forward = beat_fwd, reverse = beat_rev)]
fn beat(step: usize) {
    let _ = step;
}

fn beat_fwd(step: usize) {
    BEAT_FORWARDS.fetch_add(1, Ordering::SeqCst);
    BEAT_STEPS.fetch_add(step, Ordering::SeqCst);
}

#[allow(clippy::unused_unit)]
#[differentiable]
fn beat_rev(step: usize) -> ((), impl FnOnce()) {
    BEAT_AUGMENTED.fetch_add(1, Ordering::SeqCst);
    no_grad(BEAT_STEPS.fetch_add(step, Ordering::SeqCst));
    no_grad(BEAT_SITES[step.trailing_zeros() as usize % 8].fetch_add(1, Ordering::SeqCst));
    ((), || {
        BEAT_PULLBACKS.fetch_add(1, Ordering::SeqCst);
    })
}

/// The call is the body's last expression.
#[differentiable]
fn beat_twice(step: usize) {
    beat(step);
    beat(step)
}

/// Each call's value is `()` and unused, in a position that is not a statement of its
/// own: a branch's, an arm's, a block's or a closure's last expression, `let _ =`, the
/// last expression of a loop's body and of a function returning `()`.
#[allow(
    clippy::let_unit_value,
    clippy::unit_arg,
    clippy::redundant_closure_call
)]
#[autodiff_reverse(d_beaten, Duplicated, Active)]
#[autodiff_forward(beaten_jvp, Dual, Dual)]
fn beaten(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        if i == 0 {
            beat(1)
        }
        s += x[i] * x[i];
        // A branch ending in `;` and one without.
        if x[i] > 1e9 {
            beat(1000);
        } else {
            beat(2)
        }
    }
    match x.len() {
        0 => beat(1000),
        _ => beat(4),
    }
    x.iter().for_each(|_| beat(8));
    let _ = beat(16);
    let local = |k: usize| beat(k);
    local(32);
    {
        beat(64)
    }
    beat_twice(128);
    s
}

#[test]
fn rule_fires_where_a_call_value_is_discarded() {
    let counts = || {
        take_counts([
            &BEAT_AUGMENTED,
            &BEAT_PULLBACKS,
            &BEAT_FORWARDS,
            &BEAT_STEPS,
        ])
    };
    let x = [0.5, -1.5, 2.0];
    counts();
    let mut g = [0.0; 3];
    let y = d_beaten(&x, &mut g, 1.0);
    // Calls: 1 + 3 (`beat(2)`) + 1 + 3 (`for_each`) + 1 + 1 + 1 + 2, each once.
    let steps = 1 + 3 * 2 + 4 + 3 * 8 + 16 + 32 + 64 + 2 * 128;
    assert_eq!(counts(), (13, 13, 0, steps), "reverse");
    close("value", y, 6.5, 1e-12).unwrap();
    assert_eq!(g, [1.0, -3.0, 4.0]);
    let (_, dy) = beaten_jvp(&x, &[1.0, 1.0, 1.0]);
    assert_eq!(counts(), (0, 0, 13, steps), "forward");
    close("tangent", dy, 2.0, 1e-12).unwrap();

    // Under forward over reverse the reverse rule runs, differentiated, at every call
    // site (each step a power of two of its own), at least once (a nested pullback runs
    // it again, and the helper's runs the helper again).
    for site in &BEAT_SITES {
        site.store(0, Ordering::SeqCst);
    }
    let hv = autodiff_core::hvp::<d_beaten>(&x, &[1.0, -1.0, 0.5]);
    assert_eq!(hv, vec![2.0, -2.0, 1.0]);
    let (augmented, _, _, _) = counts();
    assert!(augmented >= 13, "H·v: {augmented} runs of the rule");
    for (k, site) in BEAT_SITES.iter().enumerate() {
        assert!(
            site.load(Ordering::SeqCst) > 0,
            "H·v: no run of beat({})",
            1 << k
        );
    }
}

// ------------------------------------------------------------------ a deliberately wrong rule

/// The rule's gradient of `Σ x_i²` is deliberately wrong: `dx_i += (2·dret·x_i)²`, so that
/// its use is visible in the result.
fn wrong_pullback(x: &[f64]) -> impl FnOnce(&mut [f64], f64) + '_ {
    move |dx: &mut [f64], dret: f64| {
        for i in 0..x.len() {
            dx[i] += (2.0 * dret * x[i]).powi(2);
        }
    }
}

#[custom_rule(reverse = f_custom_rev)]
#[inline(always)]
fn f_custom(x: &[f64]) -> f64 {
    x.iter().map(|v| v * v).sum()
}

fn f_custom_rev(x: &[f64]) -> (f64, impl FnOnce(&mut [f64], f64) + '_) {
    (f_custom(x), wrong_pullback(x))
}

mod elsewhere {
    use autodiff_core::prelude::*;

    #[custom_rule(reverse = f_custom_rev)]
    #[inline(never)]
    pub fn f_custom(x: &[f64]) -> f64 {
        x.iter().map(|v| v * v).sum()
    }

    pub fn f_custom_rev(x: &[f64]) -> (f64, impl FnOnce(&mut [f64], f64) + '_) {
        (f_custom(x), super::wrong_pullback(x))
    }
}

#[autodiff_reverse(d_g_custom, Duplicated, Active)]
fn g_custom(x: &[f64]) -> f64 {
    f_custom(x).cos()
}

#[autodiff_reverse(d_g_elsewhere, Duplicated, Active)]
fn g_elsewhere(x: &[f64]) -> f64 {
    elsewhere::f_custom(x).cos()
}

use elsewhere::f_custom as aliased;

#[autodiff_reverse(d_g_alias, Duplicated, Active)]
fn g_alias(x: &[f64]) -> f64 {
    aliased(x).cos()
}

#[autodiff_reverse(d_g_true, Duplicated, Active)]
fn g_true(x: &[f64]) -> f64 {
    let s: f64 = x.iter().map(|v| v * v).sum();
    s.cos()
}

/// What the wrong rule implies for `cos(f(x))`: `dx_i = (2·(-sin f)·x_i)²`.
fn implied_by_wrong_rule(x: &[f64]) -> Vec<f64> {
    let f: f64 = x.iter().map(|v| v * v).sum();
    let dret = -f.sin();
    x.iter().map(|xi| (2.0 * dret * xi).powi(2)).collect()
}

#[test]
fn wrong_rule_is_used_inlined_or_not_here_or_elsewhere() {
    for x in [vec![2.0], vec![0.5, -1.25, 0.75]] {
        let want = implied_by_wrong_rule(&x);
        type Grad = fn(&[f64], &mut [f64], f64) -> f64;
        for (name, d) in [
            ("inline(always)", d_g_custom as Grad),
            ("inline(never), other module", d_g_elsewhere as Grad),
            ("use alias", d_g_alias as Grad),
        ] {
            let mut g = vec![0.0; x.len()];
            let f = d(&x, &mut g, 1.0);
            close(name, f, g_custom(&x), 0.0).unwrap();
            for i in 0..x.len() {
                close(&format!("{name}, component {i}"), g[i], want[i], 1e-12).unwrap();
            }
        }
        // The true gradient differs: the rule, not the body, was differentiated.
        let mut t = vec![0.0; x.len()];
        d_g_true(&x, &mut t, 1.0);
        let f: f64 = x.iter().map(|v| v * v).sum();
        for i in 0..x.len() {
            close("true gradient", t[i], -f.sin() * 2.0 * x[i], 1e-12).unwrap();
            assert!((t[i] - want[i]).abs() > 1e-3);
        }
    }
}

// ------------------------------------------------------------------ loops, scalars, generics

/// `x²` with a forward rule and a reverse rule that both claim `d/dx = 3x` (wrong on
/// purpose) and count their pullbacks.
static SQ_PULLBACKS: AtomicUsize = AtomicUsize::new(0);

#[custom_rule(forward = sq_fwd, reverse = sq_rev)]
fn sq<T: num_traits::Float>(x: T) -> T {
    x * x
}

fn sq_fwd<T: num_traits::Float>(x: T, dx: T) -> (T, T) {
    (x * x, T::from(3.0).unwrap() * x * dx)
}

fn sq_rev<T: num_traits::Float>(x: T) -> (T, impl FnOnce(T) -> T) {
    (x * x, move |dret: T| {
        SQ_PULLBACKS.fetch_add(1, Ordering::SeqCst);
        T::from(3.0).unwrap() * x * dret
    })
}

#[autodiff_reverse(d_sum_sq, Duplicated, Active)]
#[autodiff_forward(sum_sq_jvp, Dual, Dual)]
fn sum_sq(x: &[f64]) -> f64 {
    let mut s = 0.0;
    for i in 0..x.len() {
        s += sq(x[i]);
    }
    s
}

#[autodiff_reverse(d_sq32, Active, Active)]
fn sq32(x: f32) -> f32 {
    sq(x) + x
}

#[test]
fn rules_fire_per_iteration_with_their_own_state() {
    let x = [0.5, -2.0, 3.0, 1.5];
    SQ_PULLBACKS.store(0, Ordering::SeqCst);
    let mut g = [0.0; 4];
    d_sum_sq(&x, &mut g, 1.0);
    assert_eq!(SQ_PULLBACKS.swap(0, Ordering::SeqCst), 4);
    for i in 0..4 {
        // Each pullback saw its own x[i].
        close("reverse", g[i], 3.0 * x[i], 1e-12).unwrap();
    }
    let v = [1.0, 0.5, -1.0, 2.0];
    let (_, t) = sum_sq_jvp(&x, &v);
    let want: f64 = (0..4).map(|i| 3.0 * x[i] * v[i]).sum();
    close("forward", t, want, 1e-12).unwrap();
    // The same generic rule at f32.
    let (_, g32) = d_sq32(2.0f32, 1.0);
    assert_eq!(g32, 7.0);
}

#[test]
fn constant_arguments_get_scratch_shadows() {
    // `x` is constant in `h`, but the rule of `f_custom` still has a shadow for it.
    #[autodiff_reverse(d_h, Const, Active, Active)]
    fn h(x: &[f64], a: f64) -> f64 {
        a * f_custom(x)
    }
    let x = [1.0, 2.0];
    let (v, ga) = d_h(&x, 3.0, 1.0);
    close("primal", v, 15.0, 0.0).unwrap();
    close("d/da", ga, 5.0, 1e-12).unwrap();
}

// ------------------------------------------------------------------ rules and local buffers

/// `‖y‖` with a pullback that borrows `y`.
#[custom_rule(reverse = norm_rev)]
fn norm(y: &[f64]) -> f64 {
    y.iter().map(|v| v * v).sum::<f64>().sqrt()
}

fn norm_rev(y: &[f64]) -> (f64, impl FnOnce(&mut [f64], f64) + '_) {
    let n = norm(y);
    (n, move |dy: &mut [f64], b: f64| {
        for i in 0..y.len() {
            dy[i] += b * y[i] / n;
        }
    })
}

/// The rule applied to a local buffer that the reverse sweep needs (its elements are
/// `exp`s): the pullback's borrow of it ends before the function's kept state takes it.
#[autodiff_reverse(d_norm_of_exps, Duplicated, Active)]
fn norm_of_exps(x: &[f64]) -> f64 {
    let y: Vec<f64> = x.iter().map(|v| v.exp()).collect();
    norm(&y) * x[0]
}

/// `out[i] = 2 a[i]` into an output buffer, with both rules; the pullback borrows `a`
/// only (`use<'a>`), so the caller reads `out` right after the call.
#[custom_rule(forward = double_fwd, reverse = double_rev)]
fn double(a: &[f64], out: &mut [f64]) {
    for i in 0..a.len() {
        out[i] = 2.0 * a[i];
    }
}

fn double_fwd(a: &[f64], da: &[f64], out: &mut [f64], dout: &mut [f64]) {
    for i in 0..a.len() {
        out[i] = 2.0 * a[i];
        dout[i] = 2.0 * da[i];
    }
}

#[allow(clippy::unused_unit)]
fn double_rev<'a>(
    a: &'a [f64],
    out: &mut [f64],
) -> ((), impl FnOnce(&mut [f64], &mut [f64]) + use<'a>) {
    double(a, out);
    ((), move |da: &mut [f64], dout: &mut [f64]| {
        for i in 0..a.len() {
            da[i] += 2.0 * dout[i];
            dout[i] = 0.0;
        }
    })
}

#[autodiff_forward(doubled_sq_fwd, Dual, Dual)]
#[autodiff_reverse(d_doubled_sq, Duplicated, Active)]
fn doubled_sq(x: &[f64]) -> f64 {
    let mut y = vec![0.0; x.len()];
    double(x, &mut y);
    y.iter().map(|v| v * v).sum()
}

#[test]
fn rules_on_local_buffers_and_outputs() {
    let x: [f64; 3] = [0.3, -0.7, 1.1];
    // d/dx_i (‖e^x‖ x_0) = x_0 e^{2 x_i} / ‖e^x‖ + [i = 0] ‖e^x‖.
    let n = x.iter().map(|v: &f64| (2.0 * v).exp()).sum::<f64>().sqrt();
    let mut g = [0.0; 3];
    let y = d_norm_of_exps(&x, &mut g, 1.0);
    close("value", y, n * x[0], 1e-14).unwrap();
    for i in 0..3 {
        let want = x[0] * (2.0 * x[i]).exp() / n + if i == 0 { n } else { 0.0 };
        close(&format!("grad[{i}]"), g[i], want, 1e-13).unwrap();
    }
    // Σ (2 x_i)² = 4 Σ x_i²: gradient 8 x, tangent 8 ⟨x, v⟩.
    let v = [1.0, 0.5, -2.0];
    let mut g = [0.0; 3];
    d_doubled_sq(&x, &mut g, 1.0);
    for i in 0..3 {
        close(&format!("doubled grad[{i}]"), g[i], 8.0 * x[i], 1e-14).unwrap();
    }
    let (_, t) = doubled_sq_fwd(&x, &v);
    let want: f64 = x.iter().zip(&v).map(|(a, b)| 8.0 * a * b).sum();
    close("doubled tangent", t, want, 1e-14).unwrap();
}

// ---------------------------------------------------------------- a rule's vector result

/// `x_i²`, a vector, with rules: the forward rule returns the vector and its tangent, the
/// pullback takes the vector's cotangent.
#[custom_rule(forward = squares_fwd, reverse = squares_rev)]
fn squares(x: &[f64]) -> Vec<f64> {
    x.iter().map(|v| v * v).collect()
}

fn squares_fwd(x: &[f64], dx: &[f64]) -> (Vec<f64>, Vec<f64>) {
    (
        squares(x),
        x.iter().zip(dx).map(|(a, d)| 2.0 * a * d).collect(),
    )
}

fn squares_rev(x: &[f64]) -> (Vec<f64>, impl FnOnce(&mut [f64], Vec<f64>) + '_) {
    (squares(x), move |dx: &mut [f64], g: Vec<f64>| {
        for i in 0..x.len() {
            dx[i] += 2.0 * x[i] * g[i];
        }
    })
}

#[autodiff_reverse(d_squares_used, Duplicated, Active)]
#[autodiff_forward(j_squares_used, Dual, Dual)]
fn squares_used(x: &[f64]) -> f64 {
    let s = squares(x);
    s[0] * s[1] + s.iter().sum::<f64>()
}

#[test]
fn a_rule_that_returns_a_vector() {
    let x = [0.5, -1.5];
    // f = x0² x1² + x0² + x1²: ∂f/∂x0 = 2 x0 x1² + 2 x0, ∂f/∂x1 = 2 x1 x0² + 2 x1.
    let want = [2.0 * 0.5 * 2.25 + 1.0, 2.0 * -1.5 * 0.25 - 3.0];
    let mut dx = [0.0; 2];
    let v = d_squares_used(&x, &mut dx, 1.0);
    assert_eq!(v, 0.25 * 2.25 + 0.25 + 2.25);
    assert!(
        (dx[0] - want[0]).abs() < 1e-12 && (dx[1] - want[1]).abs() < 1e-12,
        "{dx:?}"
    );
    let (_, t) = j_squares_used(&x, &[0.25, 1.0]);
    assert!((t - (0.25 * want[0] + want[1])).abs() < 1e-12);
}

// ---------------------------------------------------------------- a rule on a method

/// A gain, applied by a method with rules whose pullback borrows `self`.
pub struct Gain {
    pub k: f64,
}

#[differentiable]
impl Gain {
    #[custom_rule(forward = Gain::apply_fwd, reverse = Gain::apply_rev)]
    pub fn apply(&self, x: f64) -> f64 {
        self.k * x
    }

    pub fn apply_fwd(&self, x: f64, dx: f64) -> (f64, f64) {
        (self.k * x, self.k * dx)
    }

    /// The pullback reads `self.k` through the borrow of `self` (`+ '_`).
    pub fn apply_rev(&self, x: f64) -> (f64, impl FnOnce(f64) -> f64 + '_) {
        (self.k * x, move |g: f64| self.k * g)
    }
}

#[autodiff_reverse(d_gained, Const, Active, Active)]
#[autodiff_forward(gained_jvp, Const, Dual, Dual)]
fn gained(gain: &Gain, x: f64) -> f64 {
    gain.apply(x) * x.sin()
}

#[test]
fn a_method_rule_whose_pullback_borrows_self() {
    let gain = Gain { k: -1.75 };
    for x in [0.3_f64, 1.9, -2.4] {
        // f = k x sin x: f' = k (sin x + x cos x).
        let want = gain.k * (x.sin() + x * x.cos());
        let (y, g) = d_gained(&gain, x, 1.0);
        close("value", y, gain.k * x * x.sin(), 1e-15).unwrap();
        close("gradient", g, want, 1e-14).unwrap();
        let (_, t) = gained_jvp(&gain, x, 1.0);
        close("tangent", t, want, 1e-14).unwrap();
    }
}

// ---------------------------------------------------------------- rules on associated functions

static DOT_PULLBACKS: AtomicUsize = AtomicUsize::new(0);

/// Associated functions with rules, in a block marked `#[differentiable]`.
pub struct Linear;

#[differentiable]
impl Linear {
    #[custom_rule(forward = cube_fwd, reverse = Linear::cube_rev)]
    pub fn cube(x: f64) -> f64 {
        x * x * x
    }

    #[custom_rule(forward = Self::dot_fwd, reverse = Self::dot_rev)]
    pub fn dot(a: &[f64], b: &[f64]) -> f64 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    pub fn cube_rev(x: f64) -> (f64, impl FnOnce(f64) -> f64) {
        (x * x * x, move |g: f64| 3.0 * x * x * g)
    }

    pub fn dot_fwd(a: &[f64], da: &[f64], b: &[f64], db: &[f64]) -> (f64, f64) {
        (Self::dot(a, b), Self::dot(da, b) + Self::dot(a, db))
    }

    #[allow(clippy::type_complexity)]
    pub fn dot_rev<'a>(
        a: &'a [f64],
        b: &'a [f64],
    ) -> (f64, impl FnOnce(&mut [f64], &mut [f64], f64) + 'a) {
        (
            Self::dot(a, b),
            move |da: &mut [f64], db: &mut [f64], g: f64| {
                DOT_PULLBACKS.fetch_add(1, Ordering::SeqCst);
                for i in 0..a.len() {
                    da[i] += g * b[i];
                    db[i] += g * a[i];
                }
            },
        )
    }
}

fn cube_fwd(x: f64, dx: f64) -> (f64, f64) {
    (x * x * x, 3.0 * x * x * dx)
}

#[autodiff_reverse(d_linear_terms, Duplicated, Active)]
#[autodiff_forward(linear_terms_jvp, Dual, Dual)]
fn linear_terms(x: &[f64]) -> f64 {
    Linear::cube(x[0]) * x[1] + Linear::dot(x, x)
}

#[test]
fn rules_on_associated_functions() {
    let x = [0.7, -1.3];
    // f = x0³ x1 + x0² + x1²: ∇f = (3 x0² x1 + 2 x0, x0³ + 2 x1).
    let want = [
        3.0 * x[0] * x[0] * x[1] + 2.0 * x[0],
        x[0] * x[0] * x[0] + 2.0 * x[1],
    ];
    DOT_PULLBACKS.store(0, Ordering::SeqCst);
    let mut g = [0.0; 2];
    let y = d_linear_terms(&x, &mut g, 1.0);
    assert_eq!(
        DOT_PULLBACKS.swap(0, Ordering::SeqCst),
        1,
        "the rule's pullback ran"
    );
    close("value", y, linear_terms(&x), 0.0).unwrap();
    for i in 0..2 {
        close(&format!("∂{i}"), g[i], want[i], 1e-14).unwrap();
    }
    let v = [0.5, 2.0];
    let (_, t) = linear_terms_jvp(&x, &v);
    close("tangent", t, want[0] * v[0] + want[1] * v[1], 1e-14).unwrap();
}

// ---------------------------------------------------------------- a constant reference passed on

static WEIGHT_RULES: AtomicUsize = AtomicUsize::new(0);

/// A rule on a function of integers, whose rules return ten times the primal: which of
/// them ran shows in the value.
#[custom_rule(forward = weight_fwd, reverse = weight_rev)]
fn weight(ks: &[usize]) -> f64 {
    ks.len() as f64
}

fn weight_fwd(ks: &[usize]) -> (f64, f64) {
    WEIGHT_RULES.fetch_add(1, Ordering::SeqCst);
    (10.0 * ks.len() as f64, 0.0)
}

#[allow(clippy::unused_unit)]
fn weight_rev(ks: &[usize]) -> (f64, impl FnOnce(f64)) {
    WEIGHT_RULES.fetch_add(1, Ordering::SeqCst);
    (10.0 * ks.len() as f64, |_: f64| ())
}

/// `ks` passed on as it is, not as `&ks`.
#[autodiff_reverse(d_weighted, Active, Const, Active)]
#[autodiff_forward(weighted_jvp, Dual, Const, Dual)]
fn weighted(x: f64, ks: &[usize]) -> f64 {
    x * weight(ks)
}

#[test]
fn a_constant_reference_parameter_passed_on_reaches_the_rule() {
    let ks = [1, 2, 3];
    WEIGHT_RULES.store(0, Ordering::SeqCst);
    assert_eq!(d_weighted(2.0, &ks, 1.0), (60.0, 30.0));
    assert_eq!(WEIGHT_RULES.swap(0, Ordering::SeqCst), 1, "reverse");
    assert_eq!(weighted_jvp(2.0, 1.0, &ks), (60.0, 30.0));
    assert_eq!(WEIGHT_RULES.swap(0, Ordering::SeqCst), 1, "forward");
}

// ---------------------------------------------------------------- an options struct built by the caller

#[derive(Clone, Copy)]
struct Tolerances {
    scale: f64,
    steps: usize,
}

/// A rule with an options struct by value, marked constant: the caller builds it from
/// its own values.
#[custom_rule(forward = scaled_fwd, reverse = scaled_rev)]
fn scaled(x: f64, #[constant] o: Tolerances) -> f64 {
    x * o.scale
}

fn scaled_fwd(x: f64, dx: f64, o: Tolerances) -> (f64, f64) {
    (x * o.scale, dx * o.scale)
}

fn scaled_rev(x: f64, o: Tolerances) -> (f64, impl FnOnce(f64) -> f64) {
    (x * o.scale, move |g: f64| g * o.scale)
}

#[autodiff_reverse(d_with_options, Active, Active, Active)]
#[autodiff_forward(with_options_jvp, Dual, Dual, Dual)]
fn with_options(x: f64, t: f64) -> f64 {
    let o = Tolerances { scale: t, steps: 2 };
    scaled(x, o) * o.steps as f64
        + scaled(
            x,
            Tolerances {
                scale: 0.5,
                steps: 1,
            },
        )
        + t
}

#[test]
fn an_options_struct_built_by_the_caller() {
    let (x, t) = (2.0, 3.0);
    // The rule marks the options constant: through it, t carries no derivative, and the
    // function's value is 2 x t + x / 2 + t.
    let (y, gx, gt) = d_with_options(x, t, 1.0);
    close("value", y, 2.0 * x * t + 0.5 * x + t, 1e-15).unwrap();
    close("∂x", gx, 2.0 * t + 0.5, 1e-15).unwrap();
    close("∂t", gt, 1.0, 1e-15).unwrap();
    let (_, dy) = with_options_jvp(x, 1.0, t, 0.0);
    close("tangent", dy, 2.0 * t + 0.5, 1e-15).unwrap();
}

// ---------------------------------------------------------------- a generic rule named with its type

/// A generic rule, called with its type parameter written out.
#[custom_rule(forward = quartic_fwd)]
fn quartic<T: num_traits::Float>(x: T) -> T {
    x * x * x * x
}

fn quartic_fwd<T: num_traits::Float>(x: T, dx: T) -> (T, T) {
    let four = T::from(4.0).unwrap();
    (x * x * x * x, four * x * x * x * dx)
}

#[autodiff_forward(turbofish_jvp, Dual, Dual)]
fn turbofish(x: f64) -> f64 {
    quartic::<f64>(x) + quartic::<f64>(2.0 * x)
}

#[test]
fn a_generic_rule_called_with_a_turbofish() {
    let x = 0.6_f64;
    // f = 17 x⁴: f' = 68 x³.
    let (y, t) = turbofish_jvp(x, 1.0);
    close("value", y, 17.0 * x.powi(4), 1e-14).unwrap();
    close("tangent", t, 68.0 * x.powi(3), 1e-13).unwrap();
}

// ---------------------------------------------------------------- a rule with a scalar output

/// `*total += x²`, the output a `&mut f64` that `#[duplicated]` gives a shadow (a
/// reference to a lone float is constant by default, as every reference that is not to
/// a float buffer is).
#[custom_rule(forward = accumulate_fwd, reverse = accumulate_rev)]
fn accumulate(x: f64, #[duplicated] total: &mut f64) {
    *total += x * x;
}

fn accumulate_fwd(x: f64, dx: f64, total: &mut f64, dtotal: &mut f64) {
    *total += x * x;
    *dtotal += 2.0 * x * dx;
}

#[allow(clippy::unused_unit)]
fn accumulate_rev(x: f64, total: &mut f64) -> ((), impl FnOnce(&mut f64) -> f64 + use<>) {
    *total += x * x;
    // `total`'s adjoint flows on unchanged (`+=`); `x`'s is 2x times it.
    ((), move |dtotal: &mut f64| 2.0 * x * *dtotal)
}

/// The sum starts as an untyped `0.0`: the calls give it its type, in every companion.
#[autodiff_reverse(d_norm_by_rule, Duplicated, Active)]
#[autodiff_forward(norm_by_rule_jvp, Dual, Dual)]
fn norm_by_rule(x: &[f64]) -> f64 {
    let mut total = 0.0;
    for v in x {
        accumulate(*v, &mut total);
    }
    total.sqrt()
}

#[test]
fn a_rule_with_a_scalar_output() {
    let x = [0.3, -1.2, 0.7];
    let n = x.iter().map(|v| v * v).sum::<f64>().sqrt();
    let mut g = [0.0; 3];
    let y = d_norm_by_rule(&x, &mut g, 1.0);
    close("value", y, n, 1e-14).unwrap();
    for i in 0..3 {
        close("gradient", g[i], x[i] / n, 1e-14).unwrap();
    }
    let (_, t) = norm_by_rule_jvp(&x, &[1.0, 0.5, -2.0]);
    close("tangent", t, (x[0] + 0.5 * x[1] - 2.0 * x[2]) / n, 1e-14).unwrap();
}

// ---------------------------------------------------------------- associated functions with rules

/// Associated functions with rules whose slopes are deliberately scaled (3a instead of
/// 2a; 2·(b, a) instead of (b, a)), so that the tests see the rules fire.
pub struct Scaled;

#[differentiable]
impl Scaled {
    #[custom_rule(forward = Self::square_fwd)]
    fn square(a: f64) -> f64 {
        a * a
    }

    fn square_fwd(a: f64, da: f64) -> (f64, f64) {
        (a * a, 3.0 * a * da)
    }

    #[custom_rule(forward = Self::dot_fwd)]
    fn dot(a: &[f64], b: &[f64]) -> f64 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    fn dot_fwd(a: &[f64], da: &[f64], b: &[f64], db: &[f64]) -> (f64, f64) {
        let d: f64 = (0..a.len()).map(|i| da[i] * b[i] + a[i] * db[i]).sum();
        (Self::dot(a, b), 2.0 * d)
    }
}

/// A forward companion with constant float parameters beside the calls.
#[autodiff_forward(scaled_calls_jvp, Dual, Const, Const, Dual, Dual)]
fn scaled_calls(x: f64, c: f64, w: &[f64], y: &[f64]) -> f64 {
    Scaled::square(x) * c + Scaled::dot(y, w)
}

#[test]
fn associated_rules_beside_constant_float_parameters() {
    let (x, c, w, y) = (0.7, 1.5, [0.5, -2.0], [1.25, 0.4]);
    let (v, t) = scaled_calls_jvp(x, 1.0, c, &w, &y, &[1.0, -1.0]);
    close("value", v, x * x * c + (y[0] * w[0] + y[1] * w[1]), 1e-14).unwrap();
    close("tangent", t, 3.0 * x * c + 2.0 * (w[0] - w[1]), 1e-14).unwrap();
}

// ------------------------------------------------------------------ array references

/// `b₀²·b₁` of a `&[f64; 2]`, with both rules (differentiable, so that nested code
/// differentiates them), called from functions of slices.
#[custom_rule(forward = cube_of_pair_fwd, reverse = cube_of_pair_rev)]
fn cube_of_pair(b: &[f64; 2]) -> f64 {
    b[0] * b[0] * b[1]
}

#[differentiable]
fn cube_of_pair_fwd(b: &[f64; 2], db: &[f64]) -> (f64, f64) {
    let y = b[0] * b[0] * b[1];
    (y, 2.0 * b[0] * b[1] * db[0] + b[0] * b[0] * db[1])
}

#[differentiable]
fn cube_of_pair_rev(b: &[f64; 2]) -> (f64, impl FnOnce(&mut [f64], f64) + '_) {
    let y = b[0] * b[0] * b[1];
    (y, move |db: &mut [f64], g: f64| {
        db[0] += 2.0 * b[0] * b[1] * g;
        db[1] += b[0] * b[0] * g;
    })
}

/// `b₀³·b₁`, its array passed on (nested code takes it as a slice).
#[differentiable]
fn pair_times_first(b: &[f64; 2]) -> f64 {
    cube_of_pair(b) * b[0]
}

/// `x₀³·x₁`.
#[autodiff_reverse(d_pair_objective, Duplicated, Active)]
#[autodiff_forward(pair_objective_jvp, Dual, Dual)]
fn pair_objective(x: &[f64]) -> f64 {
    let b = [x[0], x[1]];
    pair_times_first(&b)
}

/// `∂/∂x₀` of [`pair_objective`], differentiated again in forward mode.
#[autodiff_forward(pair_second_jvp, Dual, Dual)]
fn pair_first(x: &[f64]) -> f64 {
    pair_objective_jvp(x, &[1.0, 0.0]).1
}

/// `k·|w|²` of weights `w` taken by value: for a rule, a float array taken by value is a
/// constant, which a differentiated caller lends to the protocol functions as it lends
/// any array passed by value; they hand the rules a copy.
#[custom_rule(forward = scaled_norm_fwd, reverse = scaled_norm_rev)]
fn scaled_norm(w: [f64; 3], k: f64) -> f64 {
    k * (w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
}

fn scaled_norm_fwd(w: [f64; 3], k: f64, dk: f64) -> (f64, f64) {
    let n = w[0] * w[0] + w[1] * w[1] + w[2] * w[2];
    (k * n, dk * n)
}

fn scaled_norm_rev(w: [f64; 3], k: f64) -> (f64, impl FnOnce(f64) -> f64) {
    let n = w[0] * w[0] + w[1] * w[1] + w[2] * w[2];
    (k * n, move |g: f64| g * n)
}

/// The rule given a local array of constants and an array literal.
#[autodiff_reverse(d_constant_weights, Duplicated, Active)]
#[autodiff_forward(constant_weights_jvp, Dual, Dual)]
fn constant_weights(x: &[f64]) -> f64 {
    let w = [0.5, -1.0, 2.0];
    scaled_norm(w, x[0]) + x[1] * scaled_norm([1.0, 2.0, 3.0], x[0] * x[1])
}

#[test]
fn a_rule_of_an_array_taken_by_value() {
    let x = [1.5, -2.0];
    let (a, b) = (x[0], x[1]);
    // 5.25·a + 14·a·b².
    let want = 5.25 * a + 14.0 * a * b * b;
    let want_g = [5.25 + 14.0 * b * b, 28.0 * a * b];
    let mut g = [0.0; 2];
    let v = d_constant_weights(&x, &mut g, 1.0);
    assert!((v - want).abs() <= 1e-12, "{v}");
    assert!(
        (g[0] - want_g[0]).abs() <= 1e-12 && (g[1] - want_g[1]).abs() <= 1e-12,
        "{g:?}"
    );
    let (v, t) = constant_weights_jvp(&x, &[0.5, 1.0]);
    assert!((v - want).abs() <= 1e-12);
    assert!((t - (0.5 * want_g[0] + want_g[1])).abs() <= 1e-12, "{t}");
}

#[test]
fn a_rule_of_an_array_reference_in_every_mode_and_nested() {
    let x = [1.5, -2.0];
    let (a, b) = (x[0], x[1]);
    let want_g = [3.0 * a * a * b, a * a * a];
    let g = autodiff_core::gradient::<d_pair_objective>(&x);
    assert!((g[0] - want_g[0]).abs() <= 1e-12 && (g[1] - want_g[1]).abs() <= 1e-12);
    let (_, t) = pair_objective_jvp(&x, &[0.5, 1.0]);
    assert!((t - (0.5 * want_g[0] + want_g[1])).abs() <= 1e-12);
    // H = [[6ab, 3a²], [3a², 0]].
    let hv = autodiff_core::hvp::<d_pair_objective>(&x, &[1.0, 0.5]);
    let want_hv = [6.0 * a * b + 1.5 * a * a, 3.0 * a * a];
    assert!((hv[0] - want_hv[0]).abs() <= 1e-12 && (hv[1] - want_hv[1]).abs() <= 1e-12);
    let (_, d2) = pair_second_jvp(&x, &[1.0, 0.0]);
    assert!((d2 - 6.0 * a * b).abs() <= 1e-12, "{d2}");
}
