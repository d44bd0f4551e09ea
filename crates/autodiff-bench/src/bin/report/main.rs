//! `cargo run --release -p autodiff-bench --bin report`: times every benchmark row itself
//! (median of repeated runs, all ratios from the same run), measures the heap each call
//! allocates, measures the build cost of the attributes, prints the tables and writes
//! `BENCHMARKS.md` at the workspace root.
//!
//! Each problem is timed in several rounds, one after another, and each row keeps its
//! fastest round: noise from other work on the machine only ever slows a row down, and a
//! burst of it then spoils one round of one row instead of a ratio.
//!
//! Options: `--no-build-cost` skips the build-cost measurement; `--no-write` prints
//! without writing `BENCHMARKS.md`; `--budget-ms N` sets the time spent on each row, all
//! rounds together (default 1200); `--rounds N` sets the rounds (default 5).

use autodiff_bench::adbench::{load_gmm, load_lstm};
use autodiff_bench::gmm::Gmm;
use autodiff_bench::lstm::Lstm;
use autodiff_bench::mlp::Mlp;
use autodiff_bench::peers::{adtrait, candle, numdual};
use autodiff_bench::rosenbrock as rb;
use std::alloc::{GlobalAlloc, Layout, System};
use std::fmt::Write as _;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

mod buildcost;

// ---------------------------------------------------------------------------------------
// Heap accounting: the bytes live now, the peak since the last reset, the bytes allocated.

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
            ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                let grow = new_size - layout.size();
                let live = LIVE.fetch_add(grow, Ordering::Relaxed) + grow;
                PEAK.fetch_max(live, Ordering::Relaxed);
                ALLOCATED.fetch_add(grow, Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Heap use of one call: the peak of live bytes above those live before the call, with
/// no tape memory cached from earlier calls.
fn heap_peak<R>(f: &mut impl FnMut() -> R) -> usize {
    autodiff_core::release_tape_memory();
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    black_box(f());
    PEAK.load(Ordering::Relaxed) - base
}

// ---------------------------------------------------------------------------------------
// Timing.

/// Median time of one call of `f`, over samples of batched calls taking about `budget` in
/// all (at least 5 samples of at least one call each).
fn time<R>(budget: Duration, f: &mut impl FnMut() -> R) -> Duration {
    // Warm up and estimate.
    let t0 = Instant::now();
    black_box(f());
    let mut one = t0.elapsed();
    if one < Duration::from_micros(50) {
        let t = Instant::now();
        for _ in 0..100 {
            black_box(f());
        }
        one = t.elapsed() / 100;
    }
    let one = one.max(Duration::from_nanos(1));
    // Batches of ~budget/50 (at least one call), as many as fit in the budget.
    let batch = ((budget.as_secs_f64() / 50.0) / one.as_secs_f64()).clamp(1.0, 1e9) as u32;
    let mut samples = Vec::new();
    let start = Instant::now();
    while samples.len() < 5 || (start.elapsed() < budget && samples.len() < 200) {
        let t = Instant::now();
        for _ in 0..batch {
            black_box(f());
        }
        samples.push(t.elapsed() / batch);
    }
    samples.sort();
    samples[samples.len() / 2]
}

/// One measured row.
struct Row {
    method: String,
    time: Option<Duration>,
    heap: String,
    note: String,
}

/// The rows of one problem, the first being the primal.
struct Problem {
    name: String,
    params: usize,
    rows: Vec<Row>,
}

impl Problem {
    fn new(name: impl Into<String>, params: usize) -> Self {
        Problem {
            name: name.into(),
            params,
            rows: Vec::new(),
        }
    }

    fn measure<R>(
        &mut self,
        budget: Duration,
        method: &str,
        note: &str,
        mut f: impl FnMut() -> R,
    ) -> Duration {
        let heap = heap_peak(&mut f);
        let t = time(budget, &mut f);
        eprintln!(
            "  {:<40} {:>12}  heap {}",
            method,
            fmt_time(t),
            fmt_bytes(heap)
        );
        self.rows.push(Row {
            method: method.into(),
            time: Some(t),
            heap: fmt_bytes(heap),
            note: note.into(),
        });
        t
    }

    /// Each row's fastest time over `rounds`, timings of the same problem with the same
    /// rows in the same order.
    fn fastest_of(rounds: Vec<Problem>) -> Problem {
        let mut rounds = rounds.into_iter();
        let mut best = rounds.next().expect("at least one round");
        for round in rounds {
            for (b, r) in best.rows.iter_mut().zip(round.rows) {
                debug_assert_eq!(b.method, r.method);
                b.time = match (b.time, r.time) {
                    (Some(x), Some(y)) => Some(x.min(y)),
                    (x, y) => x.or(y),
                };
            }
        }
        best
    }

    fn time_of(&self, method: &str) -> Option<Duration> {
        self.rows
            .iter()
            .find(|r| r.method == method)
            .and_then(|r| r.time)
    }
}

fn fmt_time(t: Duration) -> String {
    let s = t.as_secs_f64();
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else if s >= 1e-6 {
        format!("{:.2} µs", s * 1e6)
    } else {
        format!("{:.1} ns", s * 1e9)
    }
}

fn fmt_bytes(b: usize) -> String {
    if b >= 1 << 20 {
        format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
    } else if b >= 1 << 10 {
        format!("{:.1} KiB", b as f64 / 1024.0)
    } else {
        format!("{b} B")
    }
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

const OURS: &str = "ours (`#[autodiff_reverse]`)";
const HAND: &str = "hand-written gradient";
const ADTRAIT: &str = "ad_trait (`adr`, reverse)";
const OURS_HVP: &str = "ours H·v (`#[autodiff_forward]` of the gradient)";
const HAND_HVP: &str = "hand-written H·v";
const ADTRAIT_HVP: &str = "ad_trait H·v (central difference of 2 gradients)";
const CANDLE: &str = "candle-core (`Var`, `backward`)";

// ---------------------------------------------------------------------------------------
// The problems.

fn rosenbrock(n: usize, budget: Duration) -> Problem {
    let mut p = Problem::new(format!("Rosenbrock n={n}"), n);
    eprintln!("{}", p.name);
    let x = rb::input(n);
    let mut g = vec![0.0; n];
    p.measure(budget, "primal", "", || rb::rosenbrock(black_box(&x)));
    p.measure(budget, OURS, "", || {
        rb::rosenbrock_grad(black_box(&x), &mut g, 1.0)
    });
    p.measure(budget, HAND, "value, then a gathering loop", || {
        rb::rosenbrock_grad_hand(black_box(&x), &mut g)
    });
    p.measure(
        budget,
        "hand-written, in the primal's loop",
        "scatters into g[i], g[i+1]",
        || rb::rosenbrock_grad_hand_loop(black_box(&x), &mut g),
    );
    p.measure(budget, "primal, iterators (`zip`/`map`/`sum`)", "", || {
        rb::rosenbrock_iter(black_box(&x))
    });
    p.measure(budget, "ours, iterators", "", || {
        rb::rosenbrock_iter_grad(black_box(&x), &mut g, 1.0)
    });
    p.measure(budget, "primal, generic (`T: Real`)", "", || {
        rb::rosenbrock_generic(black_box(&x))
    });
    p.measure(budget, "ours, generic", "", || {
        rb::rosenbrock_generic_grad(black_box(&x), &mut g, 1.0)
    });
    let ad = || adtrait::gradient(black_box(&x), &mut g, adtrait::rosenbrock);
    measure_adtrait(&mut p, budget, ad);
    p.measure(budget, CANDLE, "uses both cores", || {
        candle::rosenbrock_grad(black_box(&x), &mut g).unwrap()
    });
    if n <= 1000 {
        p.measure(
            budget,
            "num-dual `gradient` (`DualDVec64`)",
            "forward, n-vector",
            || numdual::rosenbrock_grad_vec(black_box(&x), &mut g),
        );
        p.measure(
            budget,
            "num-dual n × `Dual64`",
            "forward, n passes",
            || numdual::rosenbrock_grad_dirs(black_box(&x), &mut g),
        );
    }
    let v = rb::input(n).iter().rev().copied().collect::<Vec<f64>>();
    let mut hv = vec![0.0; n];
    p.measure(budget, OURS_HVP, "forward over reverse", || {
        rb::rosenbrock_hvp(black_box(&x), black_box(&v), &mut g, &mut hv)
    });
    p.measure(budget, HAND_HVP, "tridiagonal H, one loop", || {
        rb::rosenbrock_hvp_hand(black_box(&x), black_box(&v), &mut g, &mut hv)
    });
    p.measure(budget, ADTRAIT_HVP, "no nested mode; a lower bound", || {
        adtrait::hvp_by_differences(black_box(&x), &v, &mut hv, adtrait::rosenbrock)
    });
    p
}

/// Times an ad_trait gradient, noting the size of the tape that a first run records.
fn measure_adtrait<R>(p: &mut Problem, budget: Duration, mut ad: impl FnMut() -> R) {
    ad();
    let tape = format!(
        "tape {} nodes × {} B = {}",
        adtrait::tape_nodes(),
        adtrait::NODE_BYTES,
        fmt_bytes(adtrait::tape_nodes() * adtrait::NODE_BYTES)
    );
    p.measure(budget, ADTRAIT, &tape, ad);
}

fn gmm(name: &str, budget: Duration) -> Problem {
    let gmm = Gmm::new(load_gmm(name));
    let i = &gmm.input;
    let mut p = Problem::new(
        format!("GMM {} (D={}, K={}, N={})", &name[4..], i.d, i.k, i.n),
        gmm.num_params(),
    );
    eprintln!("{}", p.name);
    let mut g = vec![0.0; gmm.num_params()];
    p.measure(budget, "primal", "", || black_box(&gmm).objective());
    p.measure(budget, OURS, "", || black_box(&gmm).gradient(&mut g));
    p.measure(budget, HAND, "", || black_box(&gmm).gradient_hand(&mut g));
    p.measure(budget, "primal, no reused buffers", "", || {
        black_box(&gmm).objective_nobuf()
    });
    p.measure(budget, "ours, no reused buffers", "", || {
        black_box(&gmm).gradient_nobuf(&mut g)
    });
    p.measure(budget, "primal, helper functions", "", || {
        black_box(&gmm).objective_helpers()
    });
    p.measure(budget, "ours, helper functions", "", || {
        black_box(&gmm).gradient_helpers(&mut g)
    });
    let params = i.params();
    let ad = || {
        adtrait::gradient(black_box(&params), &mut g, |v| {
            adtrait::gmm(v, &i.x, i.d, i.k, i.gamma, i.m, gmm.constant)
        })
    };
    measure_adtrait(&mut p, budget, ad);
    let v = autodiff_bench::pseudo_random(params.len(), 7, -1.0, 1.0);
    let mut hv = vec![0.0; params.len()];
    p.measure(budget, OURS_HVP, "forward over reverse", || {
        black_box(&gmm).hvp(&v, &mut g, &mut hv)
    });
    p.measure(budget, ADTRAIT_HVP, "no nested mode; a lower bound", || {
        adtrait::hvp_by_differences(black_box(&params), &v, &mut hv, |v| {
            adtrait::gmm(v, &i.x, i.d, i.k, i.gamma, i.m, gmm.constant)
        })
    });
    p
}

fn lstm(name: &str, budget: Duration) -> Problem {
    let lstm = Lstm::new(load_lstm(name));
    let i = &lstm.input;
    let mut p = Problem::new(
        format!("LSTM {} (l={}, c={}, b={})", &name[5..], i.l, i.c, i.b),
        lstm.num_params(),
    );
    eprintln!("{}", p.name);
    let mut g = vec![0.0; lstm.num_params()];
    p.measure(budget, "primal", "", || black_box(&lstm).objective());
    p.measure(budget, OURS, "", || black_box(&lstm).gradient(&mut g));
    p.measure(budget, HAND, "", || black_box(&lstm).gradient_hand(&mut g));
    p.measure(budget, "primal, without calls", "", || {
        black_box(&lstm).objective_inline()
    });
    p.measure(budget, "ours, without calls", "", || {
        black_box(&lstm).gradient_inline(&mut g)
    });
    let params = i.params();
    let ad = || {
        adtrait::gradient(black_box(&params), &mut g, |v| {
            adtrait::lstm(v, &i.state, &i.seq, i.l, i.b)
        })
    };
    measure_adtrait(&mut p, budget, ad);
    let v = autodiff_bench::pseudo_random(params.len(), 11, -1.0, 1.0);
    let mut hv = vec![0.0; params.len()];
    p.measure(budget, OURS_HVP, "forward over reverse", || {
        black_box(&lstm).hvp(&v, &mut g, &mut hv)
    });
    p.measure(budget, ADTRAIT_HVP, "no nested mode; a lower bound", || {
        adtrait::hvp_by_differences(black_box(&params), &v, &mut hv, |v| {
            adtrait::lstm(v, &i.state, &i.seq, i.l, i.b)
        })
    });
    p
}

fn mlp(inputs: usize, hidden: usize, n: usize, budget: Duration) -> Problem {
    let m = Mlp::new(inputs, hidden, n);
    let mut p = Problem::new(
        format!("MLP on ndarray (inputs={inputs}, hidden={hidden}, batch={n})"),
        m.num_params(),
    );
    eprintln!("{}", p.name);
    let mut g = m.zero_grads();
    p.measure(budget, "primal", "", || black_box(&m).objective());
    p.measure(budget, OURS, "", || black_box(&m).gradient(&mut g));
    p.measure(budget, HAND, "", || black_box(&m).gradient_hand(&mut g));
    p.measure(
        budget,
        "primal, whole-array operations",
        "`(xs.dot(&w1.t()) + b1).mapv(f64::tanh)`",
        || black_box(&m).objective_arrays(),
    );
    p.measure(budget, "ours, whole-array operations", "", || {
        black_box(&m).gradient_arrays(&mut g)
    });
    let mut v = m.zero_grads();
    let dir = autodiff_bench::pseudo_random(m.num_params(), 13, -1.0, 1.0);
    for (t, d) in
        v.0.iter_mut()
            .chain(v.1.iter_mut())
            .chain(v.2.iter_mut())
            .zip(dir)
    {
        *t = d;
    }
    let mut hv = m.zero_grads();
    p.measure(budget, OURS_HVP, "forward over reverse", || {
        black_box(&m).hvp(&v, &mut g, &mut hv)
    });
    p.measure(
        budget,
        "ours H·v, whole-array operations",
        "forward over reverse",
        || black_box(&m).hvp_arrays(&v, &mut g, &mut hv),
    );
    p
}

// ---------------------------------------------------------------------------------------
// Report.

fn table(problems: &[Problem]) -> String {
    let mut s = String::new();
    s.push_str(
        "| problem | method | time (median) | × primal | ours ÷ this | heap peak per call | note |\n",
    );
    s.push_str("|---|---|---:|---:|---:|---:|---|\n");
    for p in problems {
        let primal = p.time_of("primal").unwrap();
        let ours = p.time_of(OURS).unwrap();
        for (k, r) in p.rows.iter().enumerate() {
            let name = if k == 0 {
                format!("{} ({} params)", p.name, p.params)
            } else {
                String::new()
            };
            // A variant of the gradient ("ours, helper functions") is divided by the same
            // variant of the objective ("primal, helper functions") where there is one.
            let own_primal = r
                .method
                .strip_prefix("ours, ")
                .or_else(|| r.method.strip_prefix("ours H·v, "))
                .and_then(|variant| p.time_of(&format!("primal, {variant}")));
            let (t, xp, vs) = match r.time {
                Some(t) => (
                    fmt_time(t),
                    format!("{:.2}", ratio(t, own_primal.unwrap_or(primal))),
                    if r.method == "primal" || r.method.starts_with("primal,") {
                        String::new()
                    } else {
                        format!("{:.3}", ratio(ours, t))
                    },
                ),
                None => ("—".into(), String::new(), String::new()),
            };
            let _ = writeln!(
                s,
                "| {name} | {} | {t} | {xp} | {vs} | {} | {} |",
                r.method, r.heap, r.note
            );
        }
    }
    s
}

/// The short table of the README's Performance section.
fn summary(problems: &[Problem]) -> String {
    let mut s = String::from(
        "| problem | primal | gradient (ours) | gradient ÷ primal | ours ÷ hand-written | ad_trait ÷ ours | candle-core ÷ ours |\n|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for p in problems {
        let primal = p.time_of("primal").unwrap();
        let ours = p.time_of(OURS).unwrap();
        let opt = |m: &str, inv: bool| {
            p.time_of(m)
                .map(|t| {
                    if inv {
                        format!("{:.0}×", ratio(t, ours))
                    } else {
                        format!("{:.2}", ratio(ours, t))
                    }
                })
                .unwrap_or_else(|| "—".into())
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.2} | {} | {} | {} |",
            p.name,
            fmt_time(primal),
            fmt_time(ours),
            ratio(ours, primal),
            opt(HAND, false),
            opt(ADTRAIT, true),
            opt(CANDLE, true),
        );
    }
    s
}

struct Target {
    what: String,
    goal: String,
    measured: String,
    met: Option<bool>,
}

fn targets(problems: &[Problem]) -> Vec<Target> {
    let mut out = Vec::new();
    fn find<'a>(problems: &'a [Problem], prefix: &'a str) -> impl Iterator<Item = &'a Problem> {
        problems.iter().filter(move |p| p.name.starts_with(prefix))
    }
    let mut push_ratio = |what: String, goal: &str, r: f64, limit: f64, below: bool| {
        out.push(Target {
            what,
            goal: goal.into(),
            measured: format!("{r:.2}×"),
            met: Some(if below { r <= limit } else { r >= limit }),
        });
    };
    for p in find(problems, "Rosenbrock") {
        let r = ratio(p.time_of(OURS).unwrap(), p.time_of("primal").unwrap());
        push_ratio(
            format!("{}: gradient ÷ primal", p.name),
            "≤ 3.0×",
            r,
            3.0,
            true,
        );
    }
    for p in find(problems, "Rosenbrock") {
        if let Some(h) = p.time_of(OURS_HVP) {
            let r = ratio(h, p.time_of("primal").unwrap());
            push_ratio(format!("{}: H·v ÷ primal", p.name), "≤ 4.5×", r, 4.5, true);
        }
    }
    for p in problems {
        if let (Some(h), Some(a)) = (p.time_of(OURS_HVP), p.time_of(ADTRAIT_HVP)) {
            let r = ratio(a, h);
            push_ratio(
                format!("{}: ad_trait H·v ÷ ours", p.name),
                "≥ 50×",
                r,
                50.0,
                false,
            );
        }
    }
    for p in find(problems, "GMM") {
        let r = ratio(p.time_of(OURS).unwrap(), p.time_of("primal").unwrap());
        push_ratio(
            format!("{}: gradient ÷ objective", p.name),
            "≤ 2.5×",
            r,
            2.5,
            true,
        );
    }
    for p in find(problems, "LSTM") {
        let r = ratio(p.time_of(OURS).unwrap(), p.time_of("primal").unwrap());
        push_ratio(
            format!("{}: gradient ÷ objective", p.name),
            "≤ 4×",
            r,
            4.0,
            true,
        );
    }
    for p in problems {
        if let Some(a) = p.time_of(ADTRAIT) {
            let r = ratio(a, p.time_of(OURS).unwrap());
            push_ratio(
                format!("{}: ad_trait ÷ ours", p.name),
                "≥ 20×",
                r,
                20.0,
                false,
            );
        }
    }
    for p in find(problems, "Rosenbrock") {
        if let Some(c) = p.time_of(CANDLE) {
            let o = p.time_of(OURS).unwrap();
            out.push(Target {
                what: format!("{}: faster than candle-core", p.name),
                goal: "ours < candle".into(),
                measured: format!(
                    "{} vs {} ({:.0}× faster)",
                    fmt_time(o),
                    fmt_time(c),
                    ratio(c, o)
                ),
                met: Some(o < c),
            });
        }
    }
    for p in find(problems, "GMM") {
        let o = p.time_of(OURS).unwrap();
        let h = p.time_of(HAND).unwrap();
        out.push(Target {
            what: format!("{}: ours vs hand-written Rust", p.name),
            goal: "compare".into(),
            measured: format!(
                "{} vs {} (ours ÷ hand {:.2})",
                fmt_time(o),
                fmt_time(h),
                ratio(o, h)
            ),
            met: None,
        });
    }
    out
}

fn targets_table(ts: &[Target]) -> String {
    let mut s = String::from("| target | goal | measured | met |\n|---|---|---|---|\n");
    for t in ts {
        let met = match t.met {
            Some(true) => "yes",
            Some(false) => "**no**",
            None => "—",
        };
        let _ = writeln!(s, "| {} | {} | {} | {met} |", t.what, t.goal, t.measured);
    }
    s
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let rustc = Command::new("rustc")
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().next().unwrap_or("").to_string())
        .unwrap_or_default();
    format!("{cpu}, {cores} cores, {rustc}, load average at the start {load}")
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let has = |f: &str| args.iter().any(|a| a == f);
    let budget_ms = args
        .iter()
        .position(|a| a == "--budget-ms")
        .and_then(|i| args.get(i + 1))
        .map(|v| v.parse::<u64>().expect("--budget-ms N"))
        .unwrap_or(1200);
    let rounds = args
        .iter()
        .position(|a| a == "--rounds")
        .and_then(|i| args.get(i + 1))
        .map(|v| v.parse::<u32>().expect("--rounds N"))
        .unwrap_or(5)
        .max(1);
    let budget = Duration::from_millis(budget_ms) / rounds;
    if cfg!(debug_assertions) {
        eprintln!("warning: a debug build; run with --release for meaningful numbers");
    }
    let started = Instant::now();
    let machine = machine();

    // `--only NAME` times only the problems whose name contains NAME (and writes
    // nothing), for a quick look at one problem.
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1));
    type Run = Box<dyn Fn() -> Problem>;
    let all: Vec<(&str, Run)> = vec![
        (
            "rosenbrock_1000",
            Box::new(move || rosenbrock(1_000, budget)),
        ),
        (
            "rosenbrock_100000",
            Box::new(move || rosenbrock(100_000, budget)),
        ),
        ("gmm_d2_K5", Box::new(move || gmm("gmm_d2_K5", budget))),
        ("gmm_d10_K25", Box::new(move || gmm("gmm_d10_K25", budget))),
        (
            "lstm_l2_c1024",
            Box::new(move || lstm("lstm_l2_c1024", budget)),
        ),
        (
            "lstm_l4_c1024",
            Box::new(move || lstm("lstm_l4_c1024", budget)),
        ),
        ("mlp_ndarray", Box::new(move || mlp(32, 64, 256, budget))),
    ];
    let problems: Vec<Problem> = all
        .iter()
        .filter(|(name, _)| only.is_none_or(|o| name.contains(o.as_str())))
        .map(|(_, run)| Problem::fastest_of((0..rounds).map(|_| run()).collect()))
        .collect();
    let timing_s = started.elapsed().as_secs_f64();

    let build = if has("--no-build-cost") || only.is_some() {
        None
    } else {
        eprintln!("build cost (50 functions)");
        Some(buildcost::measure(&workspace_root()))
    };

    let results = table(&problems);
    let ts = targets_table(&targets(&problems));
    println!("{results}\n{ts}");
    if let Some(b) = &build {
        println!("{}", b.markdown());
    }
    eprintln!(
        "total {:.0} s (timing {timing_s:.0} s)",
        started.elapsed().as_secs_f64()
    );

    if !has("--no-write") && only.is_none() {
        let md = benchmarks_md(
            &summary(&problems),
            &machine,
            &results,
            &ts,
            build.as_ref(),
            budget_ms,
            rounds,
        )
        .replace(
            "{{ELAPSED_S}}",
            &format!("{:.0}", started.elapsed().as_secs_f64()),
        );
        let path = workspace_root().join("BENCHMARKS.md");
        std::fs::write(&path, md).expect("cannot write BENCHMARKS.md");
        eprintln!("wrote {}", path.display());
    }
}

fn benchmarks_md(
    summary: &str,
    machine: &str,
    results: &str,
    targets: &str,
    build: Option<&buildcost::BuildCost>,
    budget_ms: u64,
    rounds: u32,
) -> String {
    let (build_md, dev_ms, rel_ms) = match build {
        Some(b) => {
            let per = |profile: &str| {
                b.per_function_ms(profile)
                    .map(|ms| format!("{ms:.0}"))
                    .unwrap_or_else(|| "?".into())
            };
            (b.markdown(), per("dev"), per("release"))
        }
        None => (
            "(not measured in this run: `--no-build-cost`)\n".to_string(),
            "?".into(),
            "?".into(),
        ),
    };
    let quoted: String = summary
        .lines()
        .map(|l| format!("> {l}\n"))
        .collect::<String>()
        .trim_end()
        .to_string();
    let template = include_str!("BENCHMARKS.template.md");
    template
        .replace("{{SUMMARY_QUOTED}}", &quoted)
        .replace("{{MACHINE}}", machine)
        .replace("{{BUDGET_MS}}", &budget_ms.to_string())
        .replace("{{ROUNDS}}", &rounds.to_string())
        .replace("{{RESULTS}}", results)
        .replace("{{TARGETS}}", targets)
        .replace("{{BUILD_DEV_MS}}", &dev_ms)
        .replace("{{BUILD_REL_MS}}", &rel_ms)
        .replace("{{BUILD}}", &build_md)
}
