// The generator of random differentiable functions. This file is shared, by `#[path]`,
// between the library (`src/lib.rs`), which the command-line tool and the differential test
// use, and the build script (`build.rs`), which writes the batch the test compiles; so it
// uses nothing outside `std` and no `crate::` paths.
//
// Every function is written twice from the same random choices: the *plain* rendering is
// ordinary `f64` code carrying `#[autodiff_forward]` and `#[autodiff_reverse]` (or
// `#[differentiable]` for the helpers), and the *oracle* rendering is the same body written
// generically over a num-dual number `D: Num`, which the test evaluates with `Dual64`. The
// two renderings differ only where the types force it: literals (`0.5` / `D::from(0.5)`),
// comparisons (`a < b` / `a.re() < b.re()`), and the methods num-dual lacks, spells or
// rounds differently, which go through oracle helpers defined by the test (`a.max(b)` /
// `omax(a, b)`, `a / b` / `odiv(a, b)`, `powf` with a variable exponent / `opowd`, ..).
//
// Values are kept in the domain of every method: `ln` and `sqrt` of `e² + 1`, `asin` of
// `0.9 tanh(e)`, `exp` of `sin(e)`, divisions by `e² + 1`, and so on; inputs are drawn from
// [-1.5, 1.5] and slices have at least two elements.

#![allow(dead_code)]

use std::collections::BTreeSet;
use std::fmt::Write as _;

/// SplitMix64: a tiny, good-enough, seeded PRNG.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The generator of stream `stream` under `seed` (function `k`, helper `j`, ..).
    pub fn stream(seed: u64, stream: u64) -> Self {
        let mut r = Rng(seed ^ stream.wrapping_mul(0xA076_1D64_78BD_642F));
        r.next_u64();
        Rng(r.next_u64() ^ stream)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// An index drawn with the given weights (not all zero).
    pub fn weighted(&mut self, weights: &[u32]) -> usize {
        let total: u32 = weights.iter().sum();
        let mut r = self.below(total as usize) as u32;
        for (i, w) in weights.iter().enumerate() {
            if r < *w {
                return i;
            }
            r -= w;
        }
        unreachable!()
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }
}

/// The constructs the generator can emit; each can be switched off.
pub const FEATURES: &[(&str, &str)] = &[
    (
        "methods",
        "smooth float methods (sin, exp of sin, ln of 1 + e², powi, powf, ..)",
    ),
    (
        "binary_methods",
        "atan2, hypot, powf with a variable exponent, log, mul_add",
    ),
    (
        "kinks",
        "abs, signum, floor, ceil, round, trunc, fract, max, min, clamp",
    ),
    ("path_call", "methods called as `f64::sin(e)`"),
    ("cast", "`e as f64` on floats"),
    ("div", "division by a positive expression"),
    ("compound", "`+=`, `-=`, `*=`, `/=` on float locals"),
    ("shadow", "`let t = t * ..` shadowing"),
    ("if", "`if`/`else` statements, `else if` chains"),
    ("if_value", "`if`/`else` as a value"),
    (
        "match",
        "`match` statements on integers (literals, `|`, ranges, guards)",
    ),
    ("match_value", "`match` as a value"),
    (
        "for_range",
        "`for` over ranges (`0..n`, `1..n`, `rev`, `step_by`, nested `0..i`)",
    ),
    ("for_iter", "`for v in x.iter()`"),
    ("copied", "`for v in x.iter().copied()`"),
    ("enumerate", "`for (i, v) in x.iter().enumerate()`"),
    ("zip", "`for (u, v) in x.iter().zip(y.iter())`"),
    ("while", "`while` with a bounded counter"),
    ("loop", "`loop` with a bounded counter and `break`"),
    ("break", "`break` under a condition"),
    ("continue", "`continue` under a condition"),
    ("return", "early `return` under a condition"),
    (
        "vec",
        "local `vec![0.0; n]`, `to_vec()`, `vec![a, b, c]` written by index",
    ),
    ("push", "`Vec::new()` filled by `push`"),
    ("iter_mut", "`for v in b.iter_mut()`"),
    ("fill", "`fill` and `copy_from_slice` on local vectors"),
    (
        "sum",
        "`.iter().map(..).sum::<f64>()` and `.iter().sum::<f64>()`",
    ),
    ("product", "`.iter().map(..).product::<f64>()`"),
    ("fold", "`.iter().fold(init, |acc, v| ..)`"),
    (
        "adapters",
        "slice iterators moved by `rev`, `skip`, `take`, `step_by` in sums and folds, and `windows(2)`",
    ),
    (
        "ref_arith",
        "arithmetic on `&f64` iterator elements without `*`",
    ),
    ("closure", "closures bound to locals and called"),
    ("call", "calls to `#[differentiable]` helper functions"),
    ("sin_cos", "`let (s, c) = e.sin_cos();`"),
    ("block", "nested `{ .. }` blocks"),
    ("int_param", "a `usize` parameter (always `Const`)"),
    ("no_grad", "`no_grad(e)`"),
    (
        "sin_cos_const",
        "`let (s, c) = e.sin_cos();` with `e` a constant expression (`no_grad(..)`, `(0.5 as f64)`)",
    ),
    (
        "same_arg",
        "a helper called with the same local for two parameters: `h(t, t)`",
    ),
    (
        "alias_in_cond",
        "elements of `for v in x.iter().copied()` and closure parameters inside conditions",
    ),
    (
        "closure_in_cond",
        "calls of local closures inside conditions and `no_grad(..)`",
    ),
    (
        "block_shadow",
        "shadowing `let t = t * ..` inside a bare `{ .. }` block",
    ),
    ("ascribe", "type ascriptions of scalars: `let t: f64 = ..`"),
    (
        "ascribe_vec",
        "type ascriptions of vectors: `let b: Vec<f64> = vec![0.0; n]`, `Vec::new()`",
    ),
    (
        "closure_lit_arg",
        "a closure `|q: f64| ..` called with a literal: `g(2.0)`",
    ),
    (
        "sum_neg_zero",
        "`f64` sums whose value is -0.0 (of negative zeros, or empty) where the sign matters",
    ),
    (
        "closure_arg_reread",
        "a closure called with a bare local or element: `t + g(t)` (else `g(t * 1.0)`)",
    ),
    (
        "loop_value",
        "`let t = loop { .. if c { break e; } }` with a bounded counter",
    ),
    (
        "labelled_block",
        "`let t = 'b: { .. if c { break 'b e; } .. e };`",
    ),
    (
        "filter",
        "`.iter().filter(|v| **v < k).map(..).sum::<f64>()`",
    ),
    (
        "chain",
        "`.iter().chain(y.iter()).map(..).sum::<f64>()` of two slices",
    ),
    (
        "prefix",
        "`.iter().take_while(|w| **w < k).map(..).sum::<f64>()` and `skip_while`",
    ),
    (
        "flatten",
        "`.chunks(2).flat_map(|r| r.iter()).map(..).sum::<f64>()` and `.chunks(3).flatten()`",
    ),
    (
        "items",
        "`next()`, `nth(k)` and `last()` of `x.iter()` (after `rev`, `skip` or `step_by`, before or after `map`), read by `unwrap_or` and `match`",
    ),
    (
        "extreme",
        "the element found by `reduce`, `max_by`, `min_by` (then `unwrap`), `*x.last().unwrap()`, and `x.get(i)`/`x.last()` matched by `match`/`if let Some(v)`",
    ),
    (
        "reorder",
        "`swap`, `reverse` and `sort_by(partial_cmp)` on local vectors",
    ),
    (
        "hof",
        "`hof_sum(|q: f64| .., a, n)`: a `#[differentiable]` higher-order function called with a closure over scalars and slices",
    ),
    (
        "struct_value",
        "struct values built from scalars: `Pt { a, b }` read by member, method and reference; `let mut` ones updated and assigned again from a literal",
    ),
    (
        "swap_assign",
        "destructuring assignment of mutable scalars: `(s1, s2) = (e, s1);`",
    ),
    (
        "reshape",
        "`truncate`, `clear` and `resize` of a local vector (back to its length, with a float fill)",
    ),
    (
        "option_local",
        "a `let mut o: Option<f64> = None` (or `Option<(usize, f64)>` with the index) local over a slice's elements: the previous one read by `if let Some(p)`, the largest kept through `is_none_or`, then `map_or` or `match`",
    ),
    (
        "iter_var",
        "an iterator held in a variable, `let mut it = x.iter()<adapter>.map(|v| ..);`: items taken by `next()`/`nth(k)`, then the rest read by `for`, `while let Some(w) = it.next()` or `sum`",
    ),
    (
        "array_arg",
        "helpers taking a float array by value, `h(v: [f64; 2], a: f64)` (some writing their copy, `mut v`), called with array literals",
    ),
    (
        "rows",
        "a vector of vectors, `let rs: Vec<Vec<f64>>`, collected from a slice's chunks mapped to vectors or built by pushing a vector made in a loop; one element and a row's sum read",
    ),
    (
        "search",
        "`find` of `x.iter()` and of `x.iter().enumerate()`, read by `map_or`, `match` and `map(..).unwrap_or`, and `filter_map` and `map_while` sums of closures that choose between `Some(e)` and `None` (`if`/`else` or `bool::then`)",
    ),
    (
        "scratch",
        "a local vector filled at the top of a `for` body by `for j in 0..e { b[j] = .. }`, `e` its length or a smaller loop variable",
    ),
    (
        "edit",
        "`remove`, `insert`, `swap_remove` then `push`, `rotate_left`/`rotate_right`, and `retain` then `resize` of a local vector (back to its length)",
    ),
    (
        "labelled_loop",
        "labelled `for`, `while` and `loop` loops left by `break 'l;` and `continue 'l;` from loops, labelled blocks and `let t = loop { .. }` nested in them",
    ),
    (
        "method",
        "`&mut self` helper methods of a struct with a vector and a scalar member, `Acc { v, s }`, built in the function (`let mut st = Acc { v: x.to_vec(), s: e };`), called, then its members read and written",
    ),
    (
        "subslice",
        "helpers given windows of two elements, `h(&x[..2], a)`, `&x[(n - 2)..]`, `&b[i % (n - 1)..i % (n - 1) + 2]`, for their input and for their output (`&mut b[..2]`)",
    ),
    (
        "out_param",
        "helpers writing a `&mut [f64]` output, `h(x: &[f64], a: f64, out: &mut [f64])` returning `f64` or nothing, that read it too; called with a local vector (`h(x, e, &mut b);`) or passing their own on",
    ),
];

/// Constructs left out of the default (CI) batch because they currently trip the engine;
/// each is described in TESTING.md. `AUTODIFF_FUZZ_FEATURES=all` puts them back.
pub const EXCLUDED: &[&str] = &[];

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Features {
    on: BTreeSet<&'static str>,
}

impl Features {
    pub fn all() -> Self {
        Features {
            on: FEATURES.iter().map(|f| f.0).collect(),
        }
    }

    /// Everything but [`EXCLUDED`].
    pub fn default_set() -> Self {
        let mut f = Self::all();
        for x in EXCLUDED {
            f.on.remove(x);
        }
        f
    }

    /// `default`, `all`, `none`, or a comma-separated list of changes to the default set:
    /// `+name` (or `name`) adds, `-name` removes; a leading `all,` or `none,` starts from
    /// that set instead.
    pub fn parse(spec: &str) -> Result<Self, String> {
        let mut f = Self::default_set();
        for (i, part) in spec.split(',').map(str::trim).enumerate() {
            match part {
                "" | "default" => {}
                "all" if i == 0 => f = Self::all(),
                "none" if i == 0 => f.on.clear(),
                _ => {
                    let (add, name) = match part.strip_prefix('-') {
                        Some(n) => (false, n),
                        None => (true, part.strip_prefix('+').unwrap_or(part)),
                    };
                    let Some((known, _)) = FEATURES.iter().find(|f| f.0 == name) else {
                        return Err(format!("unknown generator feature `{name}`"));
                    };
                    if add {
                        f.on.insert(known);
                    } else {
                        f.on.remove(known);
                    }
                }
            }
        }
        Ok(f)
    }

    /// The same set without `name`.
    pub fn without(&self, name: &str) -> Self {
        let mut f = self.clone();
        f.on.remove(name);
        f
    }

    pub fn has(&self, name: &str) -> bool {
        debug_assert!(FEATURES.iter().any(|f| f.0 == name), "{name}");
        self.on.contains(name)
    }

    pub fn list(&self) -> String {
        if self == &Self::all() {
            return "all".into();
        }
        let off: Vec<&str> = FEATURES
            .iter()
            .map(|f| f.0)
            .filter(|f| !self.on.contains(f))
            .collect();
        format!("all but {}", off.join(", "))
    }
}

/// What to generate.
#[derive(Clone, Debug)]
pub struct Config {
    pub seed: u64,
    pub count: usize,
    pub features: Features,
    /// Functions left out by name (`f12`), to get past one that does not compile.
    pub skip: BTreeSet<String>,
}

/// Helpers (`#[differentiable]` functions called by the others) in every batch.
pub const HELPERS: usize = 12;

/// The shadow value the test writes into every `Duplicated` shadow before a reverse call,
/// to check that gradients are added, not assigned. Mirrored in the test harness.
pub const SHADOW_INIT: f64 = 0.5;

/// A generated batch: the Rust source the differential test includes, and where each
/// function lies in it.
pub struct Batch {
    pub text: String,
    /// The same functions, helpers and wrappers in `f32`, without the oracles (see
    /// [`in_f32`]): the test checks them against the `f64` batch.
    pub text_f32: String,
    /// `(name, first line, last line)`, 1-based, of every function (plain and oracle).
    pub spans: Vec<(String, usize, usize)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PKind {
    Slice,
    Scalar,
    Int,
    /// `[f64; 2]` by value.
    Array,
    /// `&mut [f64]`, of length `n`: an output that is read too.
    Out,
    /// `&mut self` of the struct `Acc { v: Vec<f64>, s: f64 }`, `v` of length `n`.
    SelfAcc,
}

#[derive(Clone, Debug)]
struct P {
    name: String,
    kind: PKind,
}

/// A helper's signature.
#[derive(Clone, Copy, Debug)]
enum HSig {
    /// `(x: &[f64], a: f64)`
    SliceScalar,
    /// `(a: f64, b: f64)`
    TwoScalars,
    /// `(x: &[f64])`
    Slice,
    /// `(v: [f64; 2], a: f64)`
    ArrayScalar,
    /// `(x: &[f64], a: f64, out: &mut [f64])`, returning `f64` or, if `unit`, nothing.
    SliceOut { unit: bool },
    /// A method of `Acc`, `(&mut self, a: f64)`, returning `f64` or, if `unit`, nothing.
    Method { unit: bool },
}

impl HSig {
    fn params(self) -> Vec<P> {
        let p = |n: &str, k| P {
            name: n.into(),
            kind: k,
        };
        match self {
            HSig::SliceScalar => vec![p("x", PKind::Slice), p("a", PKind::Scalar)],
            HSig::TwoScalars => vec![p("a", PKind::Scalar), p("b", PKind::Scalar)],
            HSig::Slice => vec![p("x", PKind::Slice)],
            HSig::ArrayScalar => vec![p("v", PKind::Array), p("a", PKind::Scalar)],
            HSig::SliceOut { .. } => vec![
                p("x", PKind::Slice),
                p("a", PKind::Scalar),
                p("out", PKind::Out),
            ],
            HSig::Method { .. } => vec![p("self", PKind::SelfAcc), p("a", PKind::Scalar)],
        }
    }

    /// Whether the helper returns nothing.
    fn unit(self) -> bool {
        matches!(
            self,
            HSig::SliceOut { unit: true } | HSig::Method { unit: true }
        )
    }

    fn of(j: usize, seed: u64, f: &Features) -> HSig {
        let mut r = Rng::stream(seed, 0x4E4C_5000 + j as u64);
        let sig = *r.pick(&[HSig::SliceScalar, HSig::TwoScalars, HSig::Slice]);
        // (A stream of its own, so that the other helpers keep their signatures.)
        let mut arrays = Rng::stream(seed, 0x4152_5241_0000 + j as u64);
        let mut outs = Rng::stream(seed, 0x4F55_5450_0000 + j as u64);
        let mut methods = Rng::stream(seed, 0x4D45_5448_0000 + j as u64);
        if f.has("array_arg") && arrays.chance(0.3) {
            HSig::ArrayScalar
        } else if f.has("out_param") && outs.chance(0.3) {
            HSig::SliceOut {
                unit: outs.chance(0.5),
            }
        } else if f.has("method") && methods.chance(0.25) {
            HSig::Method {
                unit: methods.chance(0.5),
            }
        } else {
            sig
        }
    }

    /// Whether the helper's array parameter is `mut` (it writes its own copy first).
    fn writes_array(j: usize, seed: u64) -> bool {
        Rng::stream(seed, 0x4152_4D55_0000 + j as u64).chance(0.5)
    }
}

/// A float expression in both renderings. Every expression is *atomic* (an identifier, a
/// call, an index or a parenthesised expression) so that it can take a method call.
#[derive(Clone, Debug)]
struct E {
    p: String,
    o: String,
    /// Only literals (`0.5 + 1.0` would be an ambiguous `{float}` receiver).
    lit: bool,
}

impl E {
    fn same(s: String) -> E {
        E {
            o: s.clone(),
            p: s,
            lit: false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Len {
    /// The length `n` of the slice parameters (at least 2).
    N,
    Fixed(usize),
    Unknown,
}

#[derive(Clone, Debug)]
struct Scalar {
    /// As written in expressions (`s1`, `(*v2)`).
    p: String,
    o: String,
    /// Assignable (a `let mut` local).
    mutable: bool,
    /// A `&f64` element, which plain arithmetic takes without `*`.
    by_ref: Option<String>,
    /// May be captured by a closure bound to a local (not assigned later).
    capturable: bool,
    /// Read somewhere (else its block adds it into an outer accumulator at its end).
    used: bool,
    /// An element of a `for` over an iterator or a closure parameter: kept out of
    /// conditions unless `alias_in_cond`.
    alias: bool,
}

#[derive(Clone, Debug)]
struct Buf {
    name: String,
    len: Len,
    /// A local `Vec` (writable).
    local: bool,
    /// Borrowed by an enclosing loop: 1 shared (no writes), 2 exclusive (no access).
    borrowed: u8,
    /// Pushed to by an enclosing loop: no reads through iterators, no writes by index.
    growing: bool,
    /// A `&mut [f64]` parameter (with `local`): written in place but never resized, and
    /// passed to calls as it is.
    out: bool,
    /// Read somewhere (see `Scalar::used`).
    used: bool,
}

#[derive(Clone, Debug)]
struct Int {
    name: String,
    /// Known to be below `n`.
    lt_n: bool,
}

#[derive(Clone, Debug)]
struct Clo {
    name: String,
    arity: usize,
}

#[derive(Default, Clone)]
struct Scope {
    scalars: Vec<Scalar>,
    bufs: Vec<Buf>,
    ints: Vec<Int>,
    clos: Vec<Clo>,
}

type Mark = (usize, usize, usize, usize);

/// Where statements are being generated.
#[derive(Clone, Copy, Default)]
struct Ctx {
    /// Inside a loop body (break/continue allowed).
    in_loop: bool,
}

const LITS: [f64; 10] = [0.5, 1.5, 2.0, 0.25, 3.0, 0.1, 1.0, -0.75, -2.0, 0.3];
/// Factors of recurrences (`s = s * k + e`, accumulators): at most 1 in size, so that values
/// stay moderate through loops.
const DAMP: [f64; 7] = [0.5, 0.25, -0.75, 0.3, 0.1, -0.5, 0.9];

fn fmt_lit(v: f64) -> String {
    let s = format!("{v:?}");
    if v < 0.0 { format!("({s})") } else { s }
}

/// Generates one function body (both renderings).
struct FnGen<'a> {
    rng: Rng,
    f: &'a Features,
    p: String,
    o: String,
    indent: usize,
    scope: Scope,
    fresh: usize,
    budget: i32,
    /// Helpers this function may call (index, signature).
    callable: Vec<(usize, HSig)>,
    /// Helpers it did call.
    called: BTreeSet<usize>,
    has_n: bool,
    has_m: bool,
    depth: usize,
    /// Generating a condition (kept as tokens by the engine).
    in_cond: bool,
    /// Inside a bare `{ .. }` block.
    bare: usize,
    /// Loops around the current statement (at most two nest, to bound magnitudes).
    loops: usize,
    /// Generating a closure's body.
    in_closure: bool,
    /// Labels of the enclosing labelled loops that a `break 'l` or `continue 'l` here may
    /// leave.
    labels: Vec<String>,
    /// The label of a loop whose head was just written, for its body.
    pending_label: Option<String>,
}

impl<'a> FnGen<'a> {
    fn new(rng: Rng, f: &'a Features, callable: Vec<(usize, HSig)>) -> Self {
        FnGen {
            rng,
            f,
            p: String::new(),
            o: String::new(),
            indent: 1,
            scope: Scope::default(),
            fresh: 0,
            budget: 0,
            callable,
            called: BTreeSet::new(),
            labels: Vec::new(),
            pending_label: None,
            has_n: false,
            has_m: false,
            depth: 0,
            in_cond: false,
            bare: 0,
            loops: 0,
            in_closure: false,
        }
    }

    fn on(&self, name: &str) -> bool {
        self.f.has(name)
    }

    fn name(&mut self, prefix: &str) -> String {
        self.fresh += 1;
        format!("{prefix}{}", self.fresh)
    }

    fn line(&mut self, p: &str, o: &str) {
        let pad = "    ".repeat(self.indent);
        let _ = writeln!(self.p, "{pad}{p}");
        let _ = writeln!(self.o, "{pad}{o}");
    }

    fn same_line(&mut self, s: &str) {
        self.line(s, s);
    }

    /// `let pat = e;`, with a type ascription when `e` is only literals (a later method
    /// call on it would not know its type) and sometimes otherwise.
    fn let_line(&mut self, pat: &str, e: &E) {
        if self.on("ascribe") && (e.lit || self.rng.chance(0.1)) {
            self.line(
                &format!("let {pat}: f64 = {};", e.p),
                &format!("let {pat}: D = tr({});", e.o),
            );
        } else {
            let e = typed(e.clone());
            self.line(
                &format!("let {pat} = {};", e.p),
                &format!("let {pat} = tr({});", e.o),
            );
        }
    }

    fn mark(&self) -> Mark {
        (
            self.scope.scalars.len(),
            self.scope.bufs.len(),
            self.scope.ints.len(),
            self.scope.clos.len(),
        )
    }

    fn reset(&mut self, m: Mark) {
        self.scope.scalars.truncate(m.0);
        self.scope.bufs.truncate(m.1);
        self.scope.ints.truncate(m.2);
        self.scope.clos.truncate(m.3);
    }

    fn add_scalar(&mut self, name: &str, mutable: bool) {
        self.scope.scalars.push(Scalar {
            p: name.into(),
            o: name.into(),
            mutable,
            by_ref: None,
            capturable: !mutable,
            used: false,
            alias: false,
        });
    }

    /// A `&f64` element `v`: `(*v)` in expressions.
    fn add_elem(&mut self, name: &str) {
        let d = format!("(*{name})");
        self.scope.scalars.push(Scalar {
            p: d.clone(),
            o: d,
            mutable: false,
            by_ref: Some(name.into()),
            capturable: true,
            used: false,
            alias: false,
        });
    }

    fn use_buf(&mut self, name: &str) {
        if let Some(b) = self.scope.bufs.iter_mut().rev().find(|b| b.name == name) {
            b.used = true;
        }
    }

    /// Ends a block: its unused locals are added into an outer mutable local, so that
    /// every value reaches the result; then they go out of scope.
    fn end_block(&mut self, m: Mark) {
        let mut terms: Vec<(String, String)> = Vec::new();
        for s in &self.scope.scalars[m.0..] {
            if !s.used || s.mutable {
                terms.push((s.p.clone(), s.o.clone()));
            }
        }
        for b in &self.scope.bufs[m.1..] {
            if b.used || b.borrowed != 0 {
                continue;
            }
            let name = &b.name;
            match b.len {
                Len::N => terms.push((format!("{name}[n - 1]"), format!("{name}[n - 1]"))),
                Len::Fixed(_) => terms.push((format!("{name}[0]"), format!("{name}[0]"))),
                Len::Unknown => {
                    let e = self.zero_sign(E {
                        p: format!("{name}.iter().sum::<f64>()"),
                        o: format!("osum({name}.iter().copied())"),
                        lit: false,
                    });
                    terms.push((e.p, e.o))
                }
            }
        }
        let targets: Vec<String> = self.scope.scalars[..m.0]
            .iter()
            .filter(|s| s.mutable)
            .map(|s| s.p.clone())
            .collect();
        if !terms.is_empty() && !targets.is_empty() {
            let t = self.rng.pick(&targets).clone();
            let k = *self.rng.pick(&DAMP);
            let p: Vec<&str> = terms.iter().map(|t| t.0.as_str()).collect();
            let o: Vec<&str> = terms.iter().map(|t| t.1.as_str()).collect();
            self.line(
                &format!("{t} += ({}) * {};", p.join(" + "), fmt_lit(k)),
                &format!("{t} = tr({t} + ({}) * D::from({k:?}));", o.join(" + ")),
            );
        }
        self.reset(m);
    }

    /// Marks the last scalar added as an alias (see `Scalar::alias`).
    fn alias_last(&mut self) {
        self.scope.scalars.last_mut().unwrap().alias = true;
    }

    fn add_int(&mut self, name: &str, lt_n: bool) {
        self.scope.ints.push(Int {
            name: name.into(),
            lt_n,
        });
    }

    // ------------------------------------------------------------------ expressions

    fn lit(&mut self) -> E {
        let v = *self.rng.pick(&LITS);
        E {
            p: fmt_lit(v),
            o: format!("D::from({v:?})"),
            lit: true,
        }
    }

    /// A factor of a recurrence, from [`DAMP`].
    fn damp(&mut self) -> E {
        let v = *self.rng.pick(&DAMP);
        E {
            p: fmt_lit(v),
            o: format!("D::from({v:?})"),
            lit: true,
        }
    }

    /// Readable slices: `(name, len)`.
    fn readable(&self) -> Vec<(String, Len)> {
        self.scope
            .bufs
            .iter()
            .filter(|b| b.borrowed < 2 && !b.growing)
            .map(|b| (b.name.clone(), b.len))
            .collect()
    }

    /// An index into a slice of length `len`.
    fn index(&mut self, len: Len) -> String {
        match len {
            Len::N => {
                let safe: Vec<String> = self
                    .scope
                    .ints
                    .iter()
                    .filter(|i| i.lt_n)
                    .map(|i| i.name.clone())
                    .collect();
                let other: Vec<String> = self
                    .scope
                    .ints
                    .iter()
                    .filter(|i| !i.lt_n)
                    .map(|i| i.name.clone())
                    .collect();
                let w = [
                    if safe.is_empty() { 0 } else { 6 },
                    if other.is_empty() { 0 } else { 1 },
                    2,
                ];
                match self.rng.weighted(&w) {
                    0 => {
                        let i = self.rng.pick(&safe).clone();
                        match self.rng.below(5) {
                            0 | 1 => i,
                            2 => format!("(({i} + 1) % n)"),
                            3 => format!("(n - 1 - {i})"),
                            _ => format!("(({i} * 2 + 1) % n)"),
                        }
                    }
                    1 => format!("({} % n)", self.rng.pick(&other)),
                    _ => self.rng.pick(&["0", "1", "(n - 1)"]).to_string(),
                }
            }
            Len::Fixed(k) => {
                let ints: Vec<String> = self.scope.ints.iter().map(|i| i.name.clone()).collect();
                if !ints.is_empty() && self.rng.chance(0.4) {
                    format!("({} % {k})", self.rng.pick(&ints))
                } else {
                    self.rng.below(k).to_string()
                }
            }
            Len::Unknown => unreachable!(),
        }
    }

    /// A leaf: a float local, an element of a slice, an integer as `f64`, or (when `lit`)
    /// a literal. `by_ref` allows a `&f64` element as is (an operand of `+ - *`).
    fn leaf(&mut self, lit: bool, by_ref: bool) -> E {
        let slices: Vec<(String, Len)> = self
            .readable()
            .into_iter()
            .filter(|(_, l)| *l != Len::Unknown)
            .collect();
        let hide = self.in_cond && !self.on("alias_in_cond");
        let scalars: Vec<usize> = (0..self.scope.scalars.len())
            .filter(|i| !(hide && self.scope.scalars[*i].alias))
            .collect();
        let w = [
            if scalars.is_empty() { 0 } else { 6 },
            if slices.is_empty() { 0 } else { 5 },
            if self.scope.ints.is_empty() { 0 } else { 1 },
            if lit { 2 } else { 0 },
        ];
        if w.iter().all(|w| *w == 0) {
            return self.lit();
        }
        match self.rng.weighted(&w) {
            0 => {
                let len = scalars.len();
                let i = scalars[if len > 3 && self.rng.chance(0.5) {
                    len - 1 - self.rng.below(3)
                } else {
                    self.rng.below(len)
                }];
                self.scope.scalars[i].used = true;
                let s = self.scope.scalars[i].clone();
                match s.by_ref {
                    Some(r) if by_ref && self.on("ref_arith") && self.rng.chance(0.5) => E {
                        p: r,
                        o: s.o,
                        lit: false,
                    },
                    _ => E {
                        p: s.p,
                        o: s.o,
                        lit: false,
                    },
                }
            }
            1 => {
                let (name, len) = self.rng.pick(&slices).clone();
                self.use_buf(&name);
                let i = self.index(len);
                E::same(format!("{name}[{i}]"))
            }
            2 => {
                let i = self.rng.pick(&self.scope.ints).name.clone();
                E {
                    p: format!("({i} as f64)"),
                    o: format!("D::from({i} as f64)"),
                    lit: false,
                }
            }
            _ => self.lit(),
        }
    }

    /// A float expression of at most `depth` levels of operations.
    fn fexpr(&mut self, depth: usize) -> E {
        self.fexpr_with(depth, true)
    }

    fn fexpr_with(&mut self, depth: usize, lit: bool) -> E {
        if depth == 0 || self.rng.chance(0.25) {
            return self.leaf(lit, false);
        }
        let clos: Vec<Clo> = if self.in_cond && !self.on("closure_in_cond") {
            Vec::new()
        } else {
            self.scope.clos.clone()
        };
        let w = [
            8,                                             // + - *
            2,                                             // neg, scale
            if self.on("div") { 2 } else { 0 },            // division
            if self.on("methods") { 7 } else { 0 },        // unary method
            if self.on("binary_methods") { 2 } else { 0 }, // binary method
            if self.on("kinks") { 2 } else { 0 },          // non-smooth
            if clos.is_empty() { 0 } else { 3 },           // closure call
            if self.callable.is_empty() || !self.on("call") {
                0
            } else {
                2
            }, // helper call
            if self.on("if_value") { 1 } else { 0 },       // if value
            if self.on("cast") { 1 } else { 0 },           // cast
            if self.reductions_possible() { 1 } else { 0 }, // inline reduction
            // A closure whose value is constant is refused in constant expressions (bug 6).
            if self.on("no_grad") && (!self.in_closure || self.on("closure_in_cond")) {
                1
            } else {
                0
            }, // no_grad
            if self.on("hof") && !self.in_closure && !self.in_cond {
                1
            } else {
                0
            }, // closure passed to a higher-order function
        ];
        match self.rng.weighted(&w) {
            0 => {
                let op = *self.rng.pick(&["+", "-", "*"]);
                let a = self.operand(depth - 1, lit);
                let b = self.operand(depth - 1, !a.lit);
                E {
                    p: format!("({} {op} {})", a.p, b.p),
                    o: format!("({} {op} {})", a.o, b.o),
                    lit: a.lit && b.lit,
                }
            }
            1 => {
                let a = self.fexpr_with(depth - 1, false);
                if self.rng.chance(0.5) {
                    E {
                        p: format!("(-{})", a.p),
                        o: format!("(-{})", a.o),
                        lit: a.lit,
                    }
                } else {
                    let k = self.lit();
                    E {
                        p: format!("({} * {})", a.p, k.p),
                        o: format!("({} * {})", a.o, k.o),
                        lit: a.lit,
                    }
                }
            }
            2 => {
                let a = self.fexpr_with(depth - 1, true);
                let b = self.fexpr_with(depth - 1, false);
                if self.rng.chance(0.5) {
                    E {
                        p: format!("({} / ({}.powi(2) + 1.0))", a.p, b.p),
                        o: format!("odiv({}, {}.powi(2) + D::from(1.0))", a.o, b.o),
                        lit: false,
                    }
                } else {
                    E {
                        p: format!("({} / (2.0 + {}.sin()))", a.p, b.p),
                        o: format!("odiv({}, D::from(2.0) + {}.sin())", a.o, b.o),
                        lit: false,
                    }
                }
            }
            3 => self.unary_method(depth),
            4 => self.binary_method(depth),
            5 => self.kink(depth),
            6 => {
                let c = self.rng.pick(&clos).clone();
                let typed_args = !self.on("closure_lit_arg");
                let reread = self.on("closure_arg_reread");
                let args: Vec<E> = (0..c.arity)
                    .map(|_| self.fexpr_with(depth - 1, true))
                    .map(|e| if typed_args { typed(e) } else { e })
                    .map(|e| {
                        if reread || !is_place(&e.p) {
                            e
                        } else {
                            E {
                                p: format!("({} * 1.0)", e.p),
                                o: format!("({} * D::from(1.0))", e.o),
                                lit: false,
                            }
                        }
                    })
                    .collect();
                E {
                    p: format!(
                        "{}({})",
                        c.name,
                        args.iter()
                            .map(|a| a.p.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    o: format!(
                        "{}({})",
                        c.name,
                        args.iter()
                            .map(|a| a.o.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    lit: false,
                }
            }
            7 => self.call(depth),
            8 => {
                let c = self.cond(depth.min(2));
                let a = self.fexpr_with(depth - 1, true);
                let b = self.fexpr_with(depth - 1, true);
                let e = E {
                    p: format!("(if {} {{ {} }} else {{ {} }})", c.0, a.p, b.p),
                    o: format!("(if {} {{ {} }} else {{ {} }})", c.1, a.o, b.o),
                    lit: a.lit && b.lit,
                };
                // Literals in both branches have no type of their own, which a method
                // called on the value needs (E0689).
                if lit { e } else { typed(e) }
            }
            9 => {
                let a = self.fexpr_with(depth - 1, false);
                E {
                    p: format!("({} as f64)", a.p),
                    o: a.o,
                    lit: false,
                }
            }
            10 => self.reduction(depth),
            12 => self.hof_call(depth),
            _ => {
                // The argument of `no_grad` is kept as tokens, like a condition.
                let saved = self.in_cond;
                self.in_cond = true;
                let a = self.fexpr_with(depth - 1, false);
                self.in_cond = saved;
                E {
                    p: format!("no_grad({})", a.p),
                    o: format!("ong({})", a.o),
                    lit: false,
                }
            }
        }
    }

    /// An operand of `+ - *`: an expression, or a `&f64` element as is.
    fn operand(&mut self, depth: usize, lit: bool) -> E {
        if depth == 0 || self.rng.chance(0.3) {
            self.leaf(lit, true)
        } else {
            self.fexpr_with(depth, lit)
        }
    }

    /// A struct value built from scalars and read in a new scalar `t`: either
    /// `let p = Pt { a, b };` read by member, by the method `p.dot(&Pt { .. })` and by
    /// reference (`pt_cross(&p, &q)`), or a `let mut` one whose member is updated and which
    /// is assigned again from a literal of its old members (no method is called on it:
    /// under nesting that is refused).
    fn struct_value(&mut self) {
        let p = self.name("p");
        let t = self.name("t");
        let (e1, e2, e3) = (self.fexpr(2), self.fexpr(2), self.fexpr(2));
        if self.rng.chance(0.5) {
            self.line(
                &format!("let {p} = Pt {{ a: {}, b: {} }};", e1.p, e2.p),
                &format!("let {p} = OPt {{ a: tr({}), b: tr({}) }};", e1.o, e2.o),
            );
            self.line(
                &format!(
                    "let {t} = {p}.a * {p}.b + {p}.dot(&Pt {{ a: {p}.b, b: {} }}) - pt_cross(&{p}, &Pt {{ a: 0.5, b: {p}.a }});",
                    e3.p
                ),
                &format!(
                    "let {t} = tr({p}.a * {p}.b + {p}.dot(&OPt {{ a: {p}.b, b: tr({}) }}) - opt_cross(&{p}, &OPt {{ a: D::from(0.5), b: {p}.a }}));",
                    e3.o
                ),
            );
        } else {
            self.line(
                &format!("let mut {p} = Pt {{ a: {}, b: {} }};", e1.p, e2.p),
                &format!("let mut {p} = OPt {{ a: tr({}), b: tr({}) }};", e1.o, e2.o),
            );
            self.line(
                &format!("{p}.a += {};", e3.p),
                &format!("{p}.a = tr({p}.a + {});", e3.o),
            );
            self.line(
                &format!("{p} = Pt {{ a: {p}.b * {p}.a, b: {p}.a - 0.25 }};"),
                &format!("{p} = OPt {{ a: tr({p}.b * {p}.a), b: tr({p}.a - D::from(0.25)) }};"),
            );
            self.line(
                &format!("let {t} = pt_cross(&{p}, &Pt {{ a: {p}.b, b: 1.5 }}) + {p}.b;"),
                &format!(
                    "let {t} = tr(opt_cross(&{p}, &OPt {{ a: {p}.b, b: D::from(1.5) }}) + {p}.b);"
                ),
            );
        }
        self.add_scalar(&t, false);
    }

    /// A method receiver: never only literals (`(0.5 + 1.0).sin()` is ambiguous).
    fn recv(&mut self, depth: usize) -> E {
        let mut e = self.fexpr_with(depth.saturating_sub(1), false);
        if e.lit {
            e.p = format!("({} as f64)", e.p);
            e.lit = false;
        }
        e
    }

    fn unary_method(&mut self, depth: usize) -> E {
        let a = self.recv(depth);
        // (plain, oracle) templates; `{}` is the argument.
        const M: &[(&str, &str)] = &[
            ("{}.sin()", "{}.sin()"),
            ("{}.cos()", "{}.cos()"),
            ("{}.atan()", "{}.atan()"),
            ("{}.tanh()", "otanh({})"),
            ("{}.asinh()", "{}.asinh()"),
            ("{}.sin().sinh()", "{}.sin().sinh()"),
            ("{}.tanh().cosh()", "otanh({}).cosh()"),
            ("{}.sin().exp()", "{}.sin().exp()"),
            ("{}.tanh().exp2()", "otanh({}).exp2()"),
            ("{}.atan().exp_m1()", "{}.atan().exp_m1()"),
            ("({}.tanh() * 0.5).tan()", "otan(otanh({}) * D::from(0.5))"),
            (
                "({}.tanh() * 0.9).asin()",
                "(otanh({}) * D::from(0.9)).asin()",
            ),
            (
                "({}.tanh() * 0.9).acos()",
                "(otanh({}) * D::from(0.9)).acos()",
            ),
            (
                "({}.tanh() * 0.5).atanh()",
                "(otanh({}) * D::from(0.5)).atanh()",
            ),
            (
                "({}.powi(2) + 1.5).acosh()",
                "({}.powi(2) + D::from(1.5)).acosh()",
            ),
            (
                "({}.powi(2) + 1.0).ln()",
                "({}.powi(2) + D::from(1.0)).ln()",
            ),
            (
                "({}.powi(2) + 1.0).log2()",
                "({}.powi(2) + D::from(1.0)).log2()",
            ),
            (
                "({}.powi(2) + 1.0).log10()",
                "({}.powi(2) + D::from(1.0)).log10()",
            ),
            ("{}.powi(2).ln_1p()", "{}.powi(2).ln_1p()"),
            (
                "({}.powi(2) + 1.0).sqrt()",
                "({}.powi(2) + D::from(1.0)).sqrt()",
            ),
            (
                "({}.powi(2) + 0.5).cbrt()",
                "({}.powi(2) + D::from(0.5)).cbrt()",
            ),
            (
                "({}.powi(2) + 1.0).recip()",
                "({}.powi(2) + D::from(1.0)).recip()",
            ),
            (
                "({}.powi(2) + 1.0).powi(-2)",
                "opowi({}.powi(2) + D::from(1.0), -2)",
            ),
            (
                "({}.powi(2) + 1.0).powf(0.75)",
                "opowf({}.powi(2) + D::from(1.0), 0.75)",
            ),
            (
                "({}.powi(2) + 1.0).log(3.0)",
                "({}.powi(2) + D::from(1.0)).log(3.0)",
            ),
            ("{}.sin().powi(3)", "opowi({}.sin(), 3)"),
            ("{}.atan().powi(2)", "{}.atan().powi(2)"),
            ("{}.to_degrees()", "odeg({})"),
            ("{}.to_radians()", "orad({})"),
        ];
        const PATH: &[(&str, &str)] = &[
            ("f64::sin({})", "{}.sin()"),
            ("f64::cos({})", "{}.cos()"),
            ("f64::tanh({})", "otanh({})"),
            ("f64::atan({})", "{}.atan()"),
        ];
        let (tp, to) = if self.on("path_call") && self.rng.chance(0.15) {
            *self.rng.pick(PATH)
        } else {
            *self.rng.pick(M)
        };
        E {
            p: wrap(tp, &[&a.p]),
            o: wrap(to, &[&a.o]),
            lit: false,
        }
    }

    fn binary_method(&mut self, depth: usize) -> E {
        let a = self.recv(depth);
        let b = self.recv(depth);
        const M: &[(&str, &str)] = &[
            (
                "{}.atan2({}.powi(2) + 0.5)",
                "{}.atan2({}.powi(2) + D::from(0.5))",
            ),
            (
                "{}.hypot({}.sin() + 1.5)",
                "ohypot({}, {}.sin() + D::from(1.5))",
            ),
            (
                "({}.powi(2) + 1.0).powf({}.sin())",
                "opowd({}.powi(2) + D::from(1.0), {}.sin())",
            ),
            (
                "({}.powi(2) + 1.0).log({}.powi(2) + 2.0)",
                "olog({}.powi(2) + D::from(1.0), {}.powi(2) + D::from(2.0))",
            ),
            (
                "{}.sin().mul_add({}, 0.5)",
                "omul_add({}.sin(), {}, D::from(0.5))",
            ),
        ];
        let (tp, to) = *self.rng.pick(M);
        E {
            p: wrap(tp, &[&a.p, &b.p]),
            o: wrap(to, &[&a.o, &b.o]),
            lit: false,
        }
    }

    fn kink(&mut self, depth: usize) -> E {
        let a = self.recv(depth);
        const U: &[(&str, &str)] = &[
            ("{}.abs()", "oabs({})"),
            // Against an untyped literal, as `relu` is written.
            ("{}.max(0.0)", "omax({}, D::from(0.0))"),
            ("{}.min(-0.5)", "omin({}, D::from(-0.5))"),
            // The steps take a bounded argument: on a large, fast-moving one their jumps
            // would be too dense for finite differences to see them.
            ("{}.signum()", "osignum({})"),
            (
                "({}.tanh() * 2.5).floor()",
                "ofloor(otanh({}) * D::from(2.5))",
            ),
            (
                "({}.tanh() * 2.5).ceil()",
                "oceil(otanh({}) * D::from(2.5))",
            ),
            (
                "({}.tanh() * 2.5).round()",
                "oround(otanh({}) * D::from(2.5))",
            ),
            (
                "({}.tanh() * 2.5).trunc()",
                "otrunc(otanh({}) * D::from(2.5))",
            ),
            (
                "({}.tanh() * 2.5).fract()",
                "ofract(otanh({}) * D::from(2.5))",
            ),
            ("{}.clamp(-1.0, 1.0)", "oclamp({}, -1.0, 1.0)"),
        ];
        const B: &[(&str, &str)] = &[
            ("{}.max({})", "omax({}, {})"),
            ("{}.min({})", "omin({}, {})"),
        ];
        if self.rng.chance(0.35) {
            let b = self.recv(depth);
            let (tp, to) = *self.rng.pick(B);
            E {
                p: wrap(tp, &[&a.p, &b.p]),
                o: wrap(to, &[&a.o, &b.o]),
                lit: false,
            }
        } else {
            let (tp, to) = *self.rng.pick(U);
            E {
                p: wrap(tp, &[&a.p]),
                o: wrap(to, &[&a.o]),
                lit: false,
            }
        }
    }

    /// Buffer `s` as a call's `&[f64]` argument: a parameter as it is (a `&mut [f64]`
    /// one is lent as shared), a local vector by reference.
    fn slice_arg(&self, s: &str) -> String {
        let is_param = self
            .scope
            .bufs
            .iter()
            .any(|b| b.name == s && (!b.local || b.out));
        if is_param {
            s.to_string()
        } else {
            format!("&{s}")
        }
    }

    /// A range of two elements of a buffer of length `n` (at least 2), as an index:
    /// `[..2]`, `[(n - 2)..]`, or from an integer local.
    fn window(&mut self) -> String {
        let ints: Vec<String> = self.scope.ints.iter().map(|i| i.name.clone()).collect();
        match self.rng.below(4) {
            0 => "[..2]".into(),
            1 => "[(n - 2)..]".into(),
            2 if !ints.is_empty() => {
                let i = self.rng.pick(&ints).clone();
                format!("[({i} % (n - 1))..({i} % (n - 1)) + 2]")
            }
            _ => "[(n - 2)..n]".into(),
        }
    }

    /// Slices of length `n` that a helper or a reduction may read.
    fn n_slices(&self) -> Vec<String> {
        self.readable()
            .into_iter()
            .filter(|(_, l)| *l == Len::N)
            .map(|(n, _)| n)
            .collect()
    }

    fn call(&mut self, depth: usize) -> E {
        let slices = self.n_slices();
        let options: Vec<(usize, HSig)> = self
            .callable
            .iter()
            .copied()
            .filter(|(_, s)| match s {
                // Called by statements of their own (`out_call`, `method_call`).
                HSig::SliceOut { .. } | HSig::Method { .. } => false,
                HSig::TwoScalars | HSig::ArrayScalar => true,
                HSig::SliceScalar | HSig::Slice => !slices.is_empty(),
            })
            .collect();
        if options.is_empty() {
            return self.leaf(false, false);
        }
        let (j, sig) = *self.rng.pick(&options);
        self.called.insert(j);
        let mut ap = Vec::new();
        let mut ao = Vec::new();
        for prm in sig.params() {
            match prm.kind {
                PKind::Slice => {
                    let s = self.rng.pick(&slices).clone();
                    let r = if self.on("subslice") && self.rng.chance(0.25) {
                        let w = self.window();
                        format!("&{s}{w}")
                    } else {
                        self.slice_arg(&s)
                    };
                    ap.push(r.clone());
                    ao.push(r);
                }
                PKind::Array => {
                    // Shallow elements: a helper reads each several times, and deep ones
                    // make values too large to check.
                    let d = depth.saturating_sub(1).min(1);
                    let (e0, e1) = (self.fexpr_with(0, true), self.fexpr_with(d, false));
                    ap.push(format!("[{}, {}]", e0.p, e1.p));
                    ao.push(format!("[{}, {}]", e0.o, e1.o));
                }
                _ => {
                    let e = self.fexpr_with(depth.saturating_sub(1).min(2), true);
                    ap.push(e.p);
                    ao.push(e.o);
                }
            }
        }
        if !self.on("same_arg") && ap.len() == 2 && ap[0] == ap[1] {
            ap[1] = format!("({} * 1.0)", ap[1]);
            ao[1] = format!("({} * D::from(1.0))", ao[1]);
        }
        E {
            p: format!("h{j}({})", ap.join(", ")),
            o: format!("h{j}_o({})", ao.join(", ")),
            lit: false,
        }
    }

    /// A sum or fold over `s` with its positions moved (`rev`, `skip`, `take`, `step_by`),
    /// or a sum over its `windows(2)`; the oracle runs the same iterator over duals.
    fn adapted_reduction(&mut self, s: &str, d: usize) -> E {
        const MOVES: [&str; 7] = [
            ".rev()",
            ".skip(1)",
            ".take(2)",
            ".step_by(2)",
            ".rev().skip(1)",
            ".skip(1).step_by(2).rev()",
            ".take(3).rev().step_by(2)",
        ];
        let mv = *self.rng.pick(&MOVES);
        match self.rng.below(3) {
            0 if self.on("fold") => self.damped_fold(&format!("{s}.iter(){mv}"), d),
            1 => {
                let w = self.name("w");
                let u = self.name("u");
                let v = self.name("v");
                self.add_scalar(&u, false);
                self.add_scalar(&v, false);
                let e = self.fexpr_with(d, true);
                let e = involve(&mut self.rng, e, &u, &u, &u);
                let e = involve(&mut self.rng, e, &v, &v, &v);
                let body = |e: &str| format!("{{ let {u} = {w}[0]; let {v} = {w}[1]; {e} }}");
                E {
                    p: format!("{s}.windows(2).map(|{w}| {}).sum::<f64>()", body(&e.p)),
                    o: format!("osum({s}.windows(2).map(|{w}| {}))", body(&e.o)),
                    lit: false,
                }
            }
            _ => self.map_sum(&format!("{s}.iter(){mv}"), d),
        }
    }

    /// `iter.map(|v| e).sum::<f64>()` over an iterator of `&f64`.
    fn map_sum(&mut self, iter: &str, d: usize) -> E {
        self.map_sum_over(iter, iter, d)
    }

    /// An element found by a reduction over the non-empty slice `s`.
    fn extreme(&mut self, s: &str, d: usize) -> E {
        match self.rng.below(6) {
            0 => E {
                p: format!("{s}.iter().copied().reduce(f64::max).unwrap()"),
                o: format!("{s}.iter().copied().reduce(omax).unwrap()"),
                lit: false,
            },
            1 => {
                let k = self.damp();
                let (a, b) = (self.name("a"), self.name("b"));
                E {
                    p: format!(
                        "{s}.iter().map(|v| v.sin()).reduce(|{a}, {b}| {a} * {} + {b}).unwrap()",
                        k.p
                    ),
                    o: format!(
                        "{s}.iter().map(|v| v.sin()).reduce(|{a}, {b}| {a} * {} + {b}).unwrap()",
                        k.o
                    ),
                    lit: false,
                }
            }
            2 => E {
                p: format!("{s}.iter().max_by(|a, b| a.total_cmp(b)).copied().unwrap()"),
                o: format!("{s}.iter().max_by(|a, b| a.re().total_cmp(&b.re())).copied().unwrap()"),
                lit: false,
            },
            3 => {
                let (v, e) = self.element_expr(d);
                E {
                    p: format!(
                        "{s}.iter().map(|{v}| {}).min_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal)).unwrap()",
                        e.p
                    ),
                    o: format!(
                        "{s}.iter().map(|{v}| {}).min_by(|a, b| a.re().partial_cmp(&b.re()).unwrap_or(std::cmp::Ordering::Equal)).unwrap()",
                        e.o
                    ),
                    lit: false,
                }
            }
            4 => {
                // An element by position that may be missing, bound by `match` or
                // `if let` (the oracle runs the same code on num-dual numbers).
                let (v, e) = self.element_expr(d);
                let at = match self.rng.below(4) {
                    0 => format!("{s}.get(1)"),
                    1 => format!("{s}.get({s}.len() / 2)"),
                    2 => format!("{s}.get({s}.len() + 1)"),
                    _ => format!("{s}.last()"),
                };
                let form = self.rng.below(2);
                let write = |body: &str| {
                    if form == 0 {
                        format!("(match {at} {{ Some({v}) => {body}, None => {s}[0] * 0.5 }})")
                    } else {
                        format!("(if let Some({v}) = {at} {{ {body} }} else {{ {s}[0] * 0.5 }})")
                    }
                };
                E {
                    p: write(&e.p),
                    o: write(&e.o),
                    lit: false,
                }
            }
            _ => E {
                p: format!("(*{s}.last().unwrap() * {s}[0])"),
                o: format!("(*{s}.last().unwrap() * {s}[0])"),
                lit: false,
            },
        }
    }

    /// `next()`, `nth(k)` or `last()` of an iterator over `s`, which may have no such
    /// item: the value mapped from it, or a default (the oracle runs the same code on
    /// num-dual numbers, through `std`'s own `next`, `nth` and `last`).
    fn chain_item(&mut self, s: &str, d: usize) -> E {
        let (v, e) = self.element_expr(d);
        let adapter = *self
            .rng
            .pick(&["", ".rev()", ".skip(1)", ".skip(2)", ".step_by(2)"]);
        let item = *self
            .rng
            .pick(&["next()", "nth(0)", "nth(1)", "nth(2)", "last()"]);
        let it = format!("{s}.iter(){adapter}");
        let mapped = self.rng.chance(0.5);
        let write = |body: &str| {
            if mapped {
                format!("{it}.map(|{v}| {body}).{item}.unwrap_or({s}[0] * 0.5)")
            } else {
                format!("(match {it}.{item} {{ Some({v}) => {body}, None => {s}[0] * 0.5 }})")
            }
        };
        E {
            p: write(&e.p),
            o: write(&e.o),
            lit: false,
        }
    }

    /// An element of `s` that `find` finds (or a default where none passes), or a
    /// `filter_map` sum over `s` (the oracle runs the same code on num-dual numbers,
    /// comparing primal values).
    fn search(&mut self, s: &str, d: usize) -> E {
        let k = fmt_lit(*self.rng.pick(&LITS));
        let op = *self.rng.pick(&["<", ">"]);
        // The test of an element reached through `refs` references, on the primal value
        // (`find` lends its predicate a `&&f64`, `filter_map` its closure a `&f64`).
        let test_p = |w: &str, refs: usize| format!("{}{w} {op} {k}", "*".repeat(refs));
        let test_o = |w: &str| format!("{w}.re() {op} {k}");
        let form = self.rng.below(5);
        if form == 4 {
            // The position of the first element that passes, by `enumerate().find`.
            let j = self.name("j");
            let at = |test: String| {
                format!(
                    "{s}[{s}.iter().enumerate().find(|(_, w)| {test}).map(|({j}, _)| {j}).unwrap_or(0)]"
                )
            };
            return E {
                p: at(test_p("w", 2)),
                o: at(test_o("w")),
                lit: false,
            };
        }
        let (v, e) = self.element_expr(d);
        let default = format!("{s}[0] * 0.5");
        // (`map_while` keeps the prefix that `filter_map` would filter.)
        let adapter = if self.rng.chance(0.3) {
            "map_while"
        } else {
            "filter_map"
        };
        let write = |test: String, body: &str| match form {
            0 => format!("{s}.iter().find(|w| {test}).map_or({default}, |{v}| {body})"),
            1 => format!(
                "(match {s}.iter().find(|w| {test}) {{ Some({v}) => {body}, None => {default} }})"
            ),
            2 => {
                format!("{s}.iter().{adapter}(|{v}| if {test} {{ Some({body}) }} else {{ None }})")
            }
            _ => format!("{s}.iter().{adapter}(|{v}| ({test}).then(|| {body}))"),
        };
        if form < 2 {
            E {
                p: write(test_p("w", 2), &e.p),
                o: write(test_o("w"), &e.o),
                lit: false,
            }
        } else {
            E {
                p: format!("{}.sum::<f64>()", write(test_p(&v, 1), &e.p)),
                o: format!("osum({})", write(test_o(&v), &e.o)),
                lit: false,
            }
        }
    }

    /// A fresh element `v` of a slice (a `&f64`) and an expression of depth `d` that
    /// reads it as `(*v)`.
    fn element_expr(&mut self, d: usize) -> (String, E) {
        let v = self.name("v");
        self.add_elem(&v);
        let e = self.fexpr_with(d, true);
        let e = involve(&mut self.rng, e, &v, &format!("(*{v})"), &format!("(*{v})"));
        (v, e)
    }

    /// [`Self::map_sum`] over an iterator written differently in the oracle.
    fn map_sum_over(&mut self, iter_p: &str, iter_o: &str, d: usize) -> E {
        let (v, e) = self.element_expr(d);
        E {
            p: format!("{iter_p}.map(|{v}| {}).sum::<f64>()", e.p),
            o: format!("osum({iter_o}.map(|{v}| {}))", e.o),
            lit: false,
        }
    }

    /// `iter.fold(init, |acc, v| acc * k + e)` over an iterator of `&f64`, damped by `k`.
    fn damped_fold(&mut self, iter: &str, d: usize) -> E {
        let acc = self.name("acc");
        let v = self.name("v");
        // A literal initial value would leave the accumulator's type open.
        let init = typed(self.lit());
        self.add_elem(&v);
        self.add_scalar(&acc, false);
        let e = self.fexpr_with(d, true);
        let e = involve(&mut self.rng, e, &v, &format!("(*{v})"), &format!("(*{v})"));
        let k = self.damp();
        E {
            p: format!(
                "{iter}.fold({}, |{acc}, {v}| {acc} * {} + {})",
                init.p, k.p, e.p
            ),
            o: format!(
                "{iter}.fold({}, |{acc}, {v}| {acc} * {} + {})",
                init.o, k.o, e.o
            ),
            lit: false,
        }
    }

    fn reductions_possible(&self) -> bool {
        (self.on("sum") || self.on("fold") || self.on("product"))
            && self.readable().iter().any(|(_, l)| *l != Len::Unknown)
    }

    /// A reduction over a slice: `sum` of a `map`, `fold`, `product`.
    fn reduction(&mut self, depth: usize) -> E {
        let slices: Vec<String> = self
            .readable()
            .into_iter()
            .filter(|(_, l)| *l != Len::Unknown)
            .map(|(n, _)| n)
            .collect();
        let nsl = self.n_slices();
        let s = self.rng.pick(&slices).clone();
        let kinds = [
            if self.on("sum") { 5 } else { 0 },
            if self.on("sum") { 1 } else { 0 },
            if self.on("sum") && self.on("zip") && nsl.len() >= 2 && nsl.contains(&s) {
                2
            } else {
                0
            },
            if self.on("sum") && self.has_n { 1 } else { 0 },
            if self.on("fold") { 3 } else { 0 },
            if self.on("product") { 1 } else { 0 },
            if self.on("adapters") && (self.on("sum") || self.on("fold")) {
                3
            } else {
                0
            },
            if self.on("filter") && self.on("sum") {
                2
            } else {
                0
            },
            if self.on("extreme") { 2 } else { 0 },
            if self.on("chain") && self.on("sum") {
                1
            } else {
                0
            },
            if self.on("prefix") && self.on("sum") {
                1
            } else {
                0
            },
            if self.on("flatten") && self.on("sum") {
                1
            } else {
                0
            },
            if self.on("items") { 1 } else { 0 },
            if self.on("search") { 1 } else { 0 },
        ];
        if kinds.iter().all(|k| *k == 0) {
            return self.leaf(false, false);
        }
        let m = self.mark();
        let d = depth.saturating_sub(1).min(2);
        let r = match self.rng.weighted(&kinds) {
            0 => self.map_sum(&format!("{s}.iter()"), d),
            1 => E {
                p: format!("{s}.iter().sum::<f64>()"),
                o: format!("osum({s}.iter().copied())"),
                lit: false,
            },
            2 => {
                let other: Vec<String> = nsl.iter().filter(|t| **t != s).cloned().collect();
                let t = self.rng.pick(&other).clone();
                let u = self.name("u");
                let v = self.name("v");
                self.add_elem(&u);
                self.add_elem(&v);
                let e = self.fexpr_with(d, true);
                let e = involve(&mut self.rng, e, &u, &format!("(*{u})"), &format!("(*{u})"));
                let e = involve(&mut self.rng, e, &v, &format!("(*{v})"), &format!("(*{v})"));
                E {
                    p: format!(
                        "{s}.iter().zip({t}.iter()).map(|({u}, {v})| {}).sum::<f64>()",
                        e.p
                    ),
                    o: format!("osum({s}.iter().zip({t}.iter()).map(|({u}, {v})| {}))", e.o),
                    lit: false,
                }
            }
            3 => {
                let i = self.name("i");
                self.add_int(&i, true);
                let e = self.fexpr_with(d, true);
                let e = involve(
                    &mut self.rng,
                    e,
                    &i,
                    &format!("({i} as f64)"),
                    &format!("D::from({i} as f64)"),
                );
                E {
                    p: format!("(0..n).map(|{i}| {}).sum::<f64>()", e.p),
                    o: format!("osum((0..n).map(|{i}| {}))", e.o),
                    lit: false,
                }
            }
            4 => self.damped_fold(&format!("{s}.iter()"), d),
            6 => self.adapted_reduction(&s, d),
            8 => self.extreme(&s, d),
            9 => {
                let t = self.rng.pick(&slices).clone();
                let iter = format!("{s}.iter().chain({t}.iter())");
                self.map_sum_over(&iter, &iter, d)
            }
            10 => {
                let k = fmt_lit(*self.rng.pick(&LITS));
                let op = *self.rng.pick(&["<", ">"]);
                let adapter = *self.rng.pick(&["take_while", "skip_while"]);
                self.map_sum_over(
                    &format!("{s}.iter().{adapter}(|w| **w {op} {k})"),
                    &format!("{s}.iter().{adapter}(|w| w.re() {op} {k})"),
                    d,
                )
            }
            11 => {
                let iter = if self.rng.chance(0.5) {
                    format!("{s}.chunks(2).flat_map(|r| r.iter())")
                } else {
                    format!("{s}.chunks(3).flatten()")
                };
                self.map_sum_over(&iter, &iter, d)
            }
            12 => self.chain_item(&s, d),
            13 => self.search(&s, d),
            7 => {
                let k = fmt_lit(*self.rng.pick(&LITS));
                let op = *self.rng.pick(&["<", ">"]);
                self.map_sum_over(
                    &format!("{s}.iter().filter(|w| **w {op} {k})"),
                    &format!("{s}.iter().filter(|w| w.re() {op} {k})"),
                    d,
                )
            }
            _ => {
                let v = self.name("v");
                self.add_elem(&v);
                let e = self.recv(d + 1);
                let e = involve(&mut self.rng, e, &v, &format!("(*{v})"), &format!("(*{v})"));
                E {
                    p: format!(
                        "{s}.iter().map(|{v}| {}.sin() * 0.5 + 1.0).product::<f64>()",
                        e.p
                    ),
                    o: format!(
                        "{s}.iter().map(|{v}| {}.sin() * D::from(0.5) + D::from(1.0)).product::<D>()",
                        e.o
                    ),
                    lit: false,
                }
            }
        };
        self.reset(m);
        self.zero_sign(r)
    }

    /// `f64` sums start from -0.0 (a sum of negative zeros, or an empty one, is -0.0) and
    /// the companions' from 0.0; unless `sum_neg_zero`, `+ 0.0` makes both 0.0.
    fn zero_sign(&self, e: E) -> E {
        if self.on("sum_neg_zero") || !e.p.ends_with(".sum::<f64>()") {
            return e;
        }
        E {
            p: format!("({} + 0.0)", e.p),
            o: format!("({} + D::from(0.0))", e.o),
            lit: false,
        }
    }

    /// A condition: `(plain, oracle)`.
    fn cond(&mut self, depth: usize) -> (String, String) {
        let saved = self.in_cond;
        self.in_cond = true;
        let c = self.cond_inner(depth);
        self.in_cond = saved;
        c
    }

    fn cond_inner(&mut self, depth: usize) -> (String, String) {
        let w = [
            5,
            if self.scope.ints.is_empty() && !self.has_m {
                0
            } else {
                3
            },
            1,
        ];
        match self.rng.weighted(&w) {
            0 => {
                let a = self.fexpr_with(depth.min(2), false);
                let op = *self.rng.pick(&["<", ">", "<=", ">="]);
                if self.rng.chance(0.5) {
                    let b = self.fexpr_with(depth.min(1), false);
                    (
                        format!("{} {op} {}", a.p, b.p),
                        format!("{}.re() {op} {}.re()", a.o, b.o),
                    )
                } else {
                    let k = fmt_lit(*self.rng.pick(&LITS));
                    (
                        format!("{} {op} {k}", a.p),
                        format!("{}.re() {op} {k}", a.o),
                    )
                }
            }
            1 => {
                let mut ints: Vec<String> =
                    self.scope.ints.iter().map(|i| i.name.clone()).collect();
                if self.has_m {
                    ints.push("m".into());
                }
                let i = self.rng.pick(&ints).clone();
                let c = match self.rng.below(4) {
                    0 => format!("{i} % 2 == 0"),
                    1 => format!("{i} > {}", self.rng.below(3)),
                    2 => format!("{i} + 1 < n"),
                    _ => format!("{i} % 3 != 1"),
                };
                let c = if c.contains(" n") && !self.has_n {
                    format!("{i} > 1")
                } else {
                    c
                };
                (c.clone(), c)
            }
            _ => {
                let a = self.cond(0);
                let b = self.cond(0);
                let op = *self.rng.pick(&["&&", "||"]);
                if self.rng.chance(0.3) {
                    (
                        format!("!({} {op} {})", a.0, b.0),
                        format!("!({} {op} {})", a.1, b.1),
                    )
                } else {
                    (
                        format!("({}) {op} ({})", a.0, b.0),
                        format!("({}) {op} ({})", a.1, b.1),
                    )
                }
            }
        }
    }

    /// An integer to `match` on: `(expression, known non-negative bound or 0)`.
    fn scrutinee(&mut self) -> Option<String> {
        let mut ints: Vec<String> = self.scope.ints.iter().map(|i| i.name.clone()).collect();
        if self.has_m {
            ints.push("m".into());
        }
        if self.has_n {
            ints.push("n".into());
        }
        if ints.is_empty() {
            return None;
        }
        let i = self.rng.pick(&ints).clone();
        Some(if self.rng.chance(0.5) {
            format!("{i} % {}", self.rng.range(2, 4))
        } else {
            i
        })
    }

    fn patterns(&mut self) -> Vec<String> {
        let mut pats = Vec::new();
        let k = self.rng.range(1, 3);
        let mut next = 0;
        for _ in 0..k {
            let p = match self.rng.below(3) {
                0 => format!("{next}"),
                1 => {
                    let p = format!("{next} | {}", next + 1);
                    next += 1;
                    p
                }
                _ => {
                    let p = format!("{next}..={}", next + 1);
                    next += 1;
                    p
                }
            };
            next += 1;
            pats.push(p);
        }
        pats
    }

    // ------------------------------------------------------------------ statements

    /// At least one statement (simple ones once the budget is spent).
    fn block(&mut self, ctx: Ctx, max: usize) {
        let k = self.rng.range(1, max.max(1));
        for i in 0..k {
            if self.budget <= 0 && i > 0 {
                break;
            }
            self.stmt(ctx);
        }
    }

    fn open(&mut self, p: &str, o: &str) {
        self.line(p, o);
        self.indent += 1;
    }

    fn close(&mut self, s: &str) {
        self.indent -= 1;
        self.same_line(s);
    }

    fn mut_scalars(&self) -> Vec<String> {
        self.scope
            .scalars
            .iter()
            .filter(|s| s.mutable)
            .map(|s| s.p.clone())
            .collect()
    }

    fn stmt(&mut self, ctx: Ctx) {
        let nested = self.depth < 3 && self.budget > 0;
        let looping = nested && self.loops < 2;
        self.budget -= 1;
        let muts = self.mut_scalars();
        let has_local_n = self
            .scope
            .bufs
            .iter()
            .any(|b| b.local && b.borrowed == 0 && !b.growing && b.len != Len::Unknown);
        let has_resizable = self.writable().iter().any(|(b, _)| !self.is_out(b));
        let out_call = self.on("out_param") && self.has_n && self.out_call_possible();
        let method_call = self.on("method")
            && self.has_n
            && !self.n_slices().is_empty()
            && self
                .callable
                .iter()
                .any(|(_, s)| matches!(s, HSig::Method { .. }));
        let w: [u32; 35] = [
            4,                                   // 0 let
            2,                                   // 1 let mut
            if muts.is_empty() { 0 } else { 3 }, // 2 assign
            if muts.is_empty() || !self.on("compound") {
                0
            } else {
                5
            }, // 3 compound
            if nested && self.on("if") { 3 } else { 0 }, // 4 if
            if self.on("if_value") { 1 } else { 0 }, // 5 let = if
            if nested && self.on("match") && self.scrutinee_possible() {
                2
            } else {
                0
            }, // 6 match
            if self.on("match_value") && self.scrutinee_possible() {
                1
            } else {
                0
            }, // 7 let = match
            if looping && self.on("for_range") && self.has_n {
                3
            } else {
                0
            }, // 8 for range
            if looping && self.iter_possible() {
                3
            } else {
                0
            }, // 9 for over iterator
            if looping && self.on("while") && self.has_n {
                1
            } else {
                0
            }, // 10 while
            if looping && self.on("loop") && self.has_n {
                1
            } else {
                0
            }, // 11 loop
            if (ctx.in_loop || !self.labels.is_empty()) && self.on("break") {
                2
            } else {
                0
            }, // 12 break
            if (ctx.in_loop || !self.labels.is_empty()) && self.on("continue") {
                2
            } else {
                0
            }, // 13 continue
            if self.on("return") { 1 } else { 0 }, // 14 return
            if self.on("vec") && self.has_n { 2 } else { 0 }, // 15 new vec
            if has_local_n && self.on("vec") { 4 } else { 0 }, // 16 write vec
            if looping && self.on("push") && self.has_n {
                1
            } else {
                0
            }, // 17 push
            if self.reductions_possible() { 2 } else { 0 }, // 18 reduction
            if self.on("closure") { 1 } else { 0 }, // 19 closure
            if self.on("sin_cos") { 1 } else { 0 }, // 20 sin_cos
            if nested && self.on("block") { 1 } else { 0 }, // 21 block
            if has_local_n && (self.on("iter_mut") || self.on("fill")) {
                1
            } else {
                0
            }, // 22
            if self.on("shadow")
                && (self.bare == 0 || self.on("block_shadow"))
                && self
                    .scope
                    .scalars
                    .iter()
                    .any(|s| !s.mutable && s.by_ref.is_none())
            {
                1
            } else {
                0
            }, // 23
            if looping && self.on("loop_value") && self.has_n {
                1
            } else {
                0
            }, // 24 loop value
            if nested && self.on("labelled_block") {
                1
            } else {
                0
            }, // 25 labelled block
            if has_local_n && self.on("reorder") {
                1
            } else {
                0
            }, // 26 reorder
            if self.on("struct_value") { 1 } else { 0 }, // 27 struct value
            if muts.len() >= 2 && self.on("swap_assign") {
                1
            } else {
                0
            }, // 28 destructuring assignment
            if has_resizable && (self.on("reshape") || self.on("edit")) {
                1
            } else {
                0
            }, // 29 reshape
            if self.on("option_local") && self.readable().iter().any(|(_, l)| *l != Len::Unknown) {
                1
            } else {
                0
            }, // 30 option local
            if self.on("iter_var") && self.readable().iter().any(|(_, l)| *l != Len::Unknown) {
                1
            } else {
                0
            }, // 31 iterator variable
            if self.on("rows") && self.readable().iter().any(|(_, l)| *l != Len::Unknown) {
                1
            } else {
                0
            }, // 32 vector of vectors
            if out_call { 5 } else { 0 },        // 33 call writing a vector
            if method_call { 1 } else { 0 },     // 34 struct with methods
        ];
        let d = 3;
        match self.rng.weighted(&w) {
            0 => {
                let t = self.name("t");
                let e = self.fexpr(d);
                self.let_line(&t, &e);
                self.add_scalar(&t, false);
            }
            1 => {
                let s = self.name("s");
                let e = self.fexpr(d);
                self.let_line(&format!("mut {s}"), &e);
                self.add_scalar(&s, true);
            }
            2 => {
                let s = self.rng.pick(&muts).clone();
                let e = self.fexpr(d);
                let e = self.bounded_in_loops(e, &s);
                let k = self.damp();
                if self.rng.chance(0.6) {
                    self.line(
                        &format!("{s} = {s} * {} + {};", k.p, e.p),
                        &format!("{s} = tr({s} * {} + {});", k.o, e.o),
                    );
                } else {
                    self.line(&format!("{s} = {};", e.p), &format!("{s} = tr({});", e.o));
                }
            }
            3 => {
                let s = self.rng.pick(&muts).clone();
                self.compound(&s, d);
            }
            4 => self.if_stmt(ctx),
            5 => {
                let t = self.name("t");
                let c = self.cond(2);
                let mut a = self.value_block();
                let b = self.value_block();
                let (tp, to) = self.value_let(&mut a);
                self.line(
                    &format!("let {t}{tp} = if {} {{ {} }} else {{ {} }};", c.0, a.p, b.p),
                    &format!("let {t}{to} = if {} {{ {} }} else {{ {} }};", c.1, a.o, b.o),
                );
                self.add_scalar(&t, false);
            }
            6 => self.match_stmt(ctx),
            7 => {
                let t = self.name("t");
                let s = self.scrutinee().unwrap();
                let pats = self.patterns();
                let mut arms: Vec<E> = (0..=pats.len()).map(|_| self.fexpr(2)).collect();
                let (tp, to) = self.value_let(&mut arms[0]);
                let mut ap = Vec::new();
                let mut ao = Vec::new();
                for (p, e) in pats.iter().map(String::as_str).chain(["_"]).zip(&arms) {
                    ap.push(format!("{p} => {},", e.p));
                    ao.push(format!("{p} => {},", e.o));
                }
                self.line(
                    &format!("let {t}{tp} = match {s} {{ {} }};", ap.join(" ")),
                    &format!("let {t}{to} = match {s} {{ {} }};", ao.join(" ")),
                );
                self.add_scalar(&t, false);
            }
            8 => self.for_range(),
            9 => self.for_iter(),
            30 => self.option_local(),
            31 => self.iterator_variable(),
            32 => self.vector_rows(),
            33 => self.out_call(),
            34 => self.method_call(),
            10 | 11 => {
                let as_loop = self.on("loop") && (!self.on("while") || self.rng.chance(0.5));
                self.while_loop(as_loop)
            }
            12 | 13 => {
                let c = self.cond(2);
                let kw = if self.rng.weighted(&[w[12], w[13]]) == 0 {
                    "break"
                } else {
                    "continue"
                };
                // A label where the innermost construct refuses a bare one, else sometimes.
                let kw = if !self.labels.is_empty() && (!ctx.in_loop || self.rng.chance(0.4)) {
                    let l = self.rng.pick(&self.labels).clone();
                    format!("{kw} {l}")
                } else {
                    kw.to_string()
                };
                self.line(
                    &format!("if {} {{ {kw}; }}", c.0),
                    &format!("if {} {{ {kw}; }}", c.1),
                );
            }
            14 => {
                let c = self.cond(2);
                let e = self.fexpr(2);
                self.line(
                    &format!("if {} {{ return {}; }}", c.0, e.p),
                    &format!("if {} {{ return {}; }}", c.1, e.o),
                );
            }
            15 => self.new_vec(),
            16 => self.write_vec(),
            17 => self.push_loop(),
            18 => {
                let t = self.name("t");
                let e = self.reduction(3);
                self.line(
                    &format!("let {t} = {};", e.p),
                    &format!("let {t} = {};", e.o),
                );
                self.add_scalar(&t, false);
            }
            19 => self.closure(),
            20 => {
                let a = self.name("sn");
                let b = self.name("cs");
                let mut e = self.recv(3);
                if !self.on("sin_cos_const") {
                    // Through a local: `sin_cos` of a constant expression is refused.
                    let u = self.name("t");
                    self.line(
                        &format!("let {u} = {};", e.p),
                        &format!("let {u} = {};", e.o),
                    );
                    e = E::same(u);
                }
                self.line(
                    &format!("let ({a}, {b}) = {}.sin_cos();", e.p),
                    &format!("let ({a}, {b}) = {}.sin_cos();", e.o),
                );
                self.add_scalar(&a, false);
                self.add_scalar(&b, false);
            }
            21 => {
                self.open("{", "{");
                let m = self.mark();
                self.depth += 1;
                self.bare += 1;
                self.block(ctx, 3);
                self.bare -= 1;
                self.depth -= 1;
                self.end_block(m);
                self.close("}");
            }
            22 => self.iter_mut_or_fill(),
            24 => self.loop_value(),
            25 => self.labelled_block(),
            26 => self.reorder(),
            27 => self.struct_value(),
            28 => {
                let a = self.rng.pick(&muts).clone();
                let others: Vec<String> = muts.iter().filter(|m| **m != a).cloned().collect();
                let b = self.rng.pick(&others).clone();
                let e = self.fexpr(2);
                let k = self.damp();
                self.line(
                    &format!("({a}, {b}) = ({b} * {} + {}, {a});", k.p, e.p),
                    &format!("({a}, {b}) = (tr({b} * {} + {}), {a});", k.o, e.o),
                );
            }
            29 => self.reshape(),
            _ => {
                let cands: Vec<String> = self
                    .scope
                    .scalars
                    .iter()
                    .filter(|s| !s.mutable && s.by_ref.is_none())
                    .map(|s| s.p.clone())
                    .collect();
                let t = self.rng.pick(&cands).clone();
                let e = self.fexpr(2);
                let k = self.damp();
                self.line(
                    &format!("let {t} = {t} * {} + {};", k.p, e.p),
                    &format!("let {t} = {t} * {} + {};", k.o, e.o),
                );
                // Shadowing makes a new binding: closures that captured the old one still see it.
            }
        }
    }

    fn scrutinee_possible(&self) -> bool {
        !self.scope.ints.is_empty() || self.has_m || self.has_n
    }

    fn iter_possible(&self) -> bool {
        (self.on("for_iter") || self.on("enumerate") || self.on("zip") || self.on("copied"))
            && self.readable().iter().any(|(_, l)| *l != Len::Unknown)
    }

    fn compound(&mut self, s: &str, d: usize) {
        let ops = [1, 1, 1, if self.on("div") { 1 } else { 0 }];
        match self.rng.weighted(&ops) {
            0 => {
                let e = self.fexpr(d);
                let e = self.bounded_in_loops(e, s);
                self.line(
                    &format!("{s} += {};", e.p),
                    &format!("{s} = tr({s} + {});", e.o),
                );
            }
            1 => {
                let e = self.fexpr(d);
                let e = self.bounded_in_loops(e, s);
                self.line(
                    &format!("{s} -= {};", e.p),
                    &format!("{s} = tr({s} - {});", e.o),
                );
            }
            2 => {
                let e = self.recv(d);
                self.line(
                    &format!("{s} *= {}.sin() * 0.25 + 1.0;", e.p),
                    &format!("{s} *= {}.sin() * D::from(0.25) + D::from(1.0);", e.o),
                );
            }
            _ => {
                let e = self.recv(d);
                self.line(
                    &format!("{s} /= {}.powi(2) + 1.0;", e.p),
                    &format!("{s} = odiv({s}, {}.powi(2) + D::from(1.0));", e.o),
                );
            }
        }
    }

    /// `e`, assigned to (or added into) `s`, bounded as `tanh(e) * 2.5` where it reads `s`
    /// inside a loop: `s = (s * 3.0).to_degrees()` grows by 170 times per iteration, and
    /// in a helper that many functions call (a struct's method), such a recurrence put a
    /// tenth of a batch's points beyond what the checks read (seed 7080).
    fn bounded_in_loops(&self, e: E, s: &str) -> E {
        if self.loops == 0 || !mentions(&e.p, s) {
            return e;
        }
        E {
            p: format!("({}.tanh() * 2.5)", e.p),
            o: format!("(otanh({}) * D::from(2.5))", e.o),
            lit: false,
        }
    }

    /// A block that produces a value: `e` or `let u = e; e'`.
    fn value_block(&mut self) -> E {
        if self.rng.chance(0.3) {
            let m = self.mark();
            let u = self.name("t");
            let a = typed(self.fexpr(2));
            self.add_scalar(&u, false);
            let b = typed(self.fexpr(2));
            self.reset(m);
            E {
                p: format!("let {u} = {}; {}", a.p, b.p),
                o: format!("let {u} = {}; {}", a.o, b.o),
                lit: false,
            }
        } else {
            self.fexpr(2)
        }
    }

    /// The type of a `let` of an `if` or `match` value: an ascription, or the first
    /// branch typed.
    fn value_let(&mut self, first: &mut E) -> (&'static str, &'static str) {
        if self.on("ascribe") && self.rng.chance(0.5) {
            (": f64", ": D")
        } else {
            *first = typed(first.clone());
            ("", "")
        }
    }

    fn sub_block(&mut self, ctx: Ctx, max: usize) {
        let m = self.mark();
        self.depth += 1;
        self.block(ctx, max);
        self.depth -= 1;
        self.end_block(m);
    }

    fn if_stmt(&mut self, ctx: Ctx) {
        let c = self.cond(2);
        self.open(&format!("if {} {{", c.0), &format!("if {} {{", c.1));
        self.sub_block(ctx, 3);
        let mut r = self.rng.below(3);
        while r == 2 && self.rng.chance(0.7) {
            let c = self.cond(2);
            self.indent -= 1;
            self.line(
                &format!("}} else if {} {{", c.0),
                &format!("}} else if {} {{", c.1),
            );
            self.indent += 1;
            self.sub_block(ctx, 2);
            r = self.rng.below(3);
        }
        if r != 0 {
            self.indent -= 1;
            self.same_line("} else {");
            self.indent += 1;
            self.sub_block(ctx, 3);
        }
        self.close("}");
    }

    fn match_stmt(&mut self, ctx: Ctx) {
        let s = self.scrutinee().unwrap();
        let mut pats = self.patterns();
        if self.rng.chance(0.3) {
            let c = self.cond(1);
            pats.push(format!("_ if {}", c.0));
            // The oracle's guard differs in spelling only.
            let last = pats.len() - 1;
            self.open(&format!("match {s} {{"), &format!("match {s} {{"));
            for (i, p) in pats.iter().enumerate() {
                let o = if i == last {
                    format!("_ if {}", c.1)
                } else {
                    p.clone()
                };
                self.arm(ctx, p, &o);
            }
        } else {
            self.open(&format!("match {s} {{"), &format!("match {s} {{"));
            for p in pats.clone() {
                self.arm(ctx, &p, &p);
            }
        }
        self.arm(ctx, "_", "_");
        self.close("}");
    }

    fn arm(&mut self, ctx: Ctx, p: &str, o: &str) {
        self.open(&format!("{p} => {{"), &format!("{o} => {{"));
        self.sub_block(ctx, 2);
        self.close("}");
    }

    fn lt_n_ints(&self) -> Vec<String> {
        self.scope
            .ints
            .iter()
            .filter(|i| i.lt_n)
            .map(|i| i.name.clone())
            .collect()
    }

    fn loop_body(&mut self, max: usize) {
        let label = self.pending_label.take();
        if let Some(l) = &label {
            self.labels.push(l.clone());
        }
        self.depth += 1;
        self.loops += 1;
        self.block(Ctx { in_loop: true }, max);
        self.loops -= 1;
        self.depth -= 1;
        if label.is_some() {
            self.labels.pop();
        }
    }

    /// The head of a loop (`for .. {`, `while .. {`, `loop {`), sometimes with a label
    /// that statements in its body may leave by (see [`Self::loop_body`]).
    fn labelled(&mut self, head: String) -> String {
        if !self.on("labelled_loop") || !self.rng.chance(0.3) {
            return head;
        }
        let l = format!("'{}", self.name("l"));
        self.pending_label = Some(l.clone());
        format!("{l}: {head}")
    }

    fn for_range(&mut self) {
        let i = self.name("i");
        let outer = self.lt_n_ints();
        let mut ranges: Vec<(String, bool)> = vec![
            ("0..n".into(), true),
            ("1..n".into(), true),
            ("(0..n).rev()".into(), true),
            ("(0..n).step_by(2)".into(), true),
            ("0..=(n - 1)".into(), true),
        ];
        if self.has_m {
            ranges.push(("0..m".into(), false));
        }
        ranges.push(("0..3".into(), false));
        if !outer.is_empty() {
            let j = self.rng.pick(&outer).clone();
            ranges.push((format!("0..{j}"), true));
            ranges.push((format!("{j}..n"), true));
        }
        let (r, lt) = self.rng.pick(&ranges).clone();
        let scratch = (self.on("scratch") && self.rng.chance(0.4)).then(|| self.name("b"));
        if let Some(b) = &scratch {
            self.line(
                &format!("let mut {b} = vec![0.0_f64; n];"),
                &format!("let mut {b} = vec![D::from(0.0); n];"),
            );
        }
        let head = self.labelled(format!("for {i} in {r} {{"));
        self.open(&head, &head);
        let m = self.mark();
        self.add_int(&i, lt);
        if let Some(b) = scratch {
            self.scratch_fill(b, &i);
        }
        self.loop_body(4);
        self.end_block(m);
        self.close("}");
    }

    /// `for j in 0..e { b[j] = .. }` at the top of a loop body, on a local vector `b` of
    /// length `n` declared just before the loop: `e` is `n` (every element, in every
    /// iteration) or a loop variable below `n` (a part that may change from one iteration
    /// to the next). The body reads `b` and does not write it, so that it is a scratch
    /// buffer of the loop. The value is often one of the parameters alone (`i` is the
    /// loop's variable), so that the reverse sweep can compute it again.
    fn scratch_fill(&mut self, b: String, i: &str) {
        let mut ends = vec!["n".to_string(), "n".to_string()];
        ends.extend(self.lt_n_ints());
        let end = self.rng.pick(&ends).clone();
        let j = self.name("j");
        let head = format!("for {j} in 0..{end} {{");
        self.open(&head, &head);
        let m = self.mark();
        self.add_int(&j, true);
        let params: Vec<String> = self
            .scope
            .bufs
            .iter()
            .filter(|b| !b.local && b.len == Len::N)
            .map(|b| b.name.clone())
            .collect();
        let e = if !params.is_empty() && self.rng.chance(0.6) {
            let (s, t) = (
                self.rng.pick(&params).clone(),
                self.rng.pick(&params).clone(),
            );
            let e = format!("({s}[{j}] - {t}[{i} % n] * 0.5).sin()");
            E {
                p: e.clone(),
                o: e,
                lit: false,
            }
        } else {
            self.fexpr(2)
        };
        self.line(
            &format!("{b}[{j}] = {};", e.p),
            &format!("{b}[{j}] = tr({});", e.o),
        );
        self.end_block(m);
        self.close("}");
        self.scope.bufs.push(Buf {
            name: b,
            len: Len::N,
            local: true,
            borrowed: 1,
            growing: false,
            out: false,
            used: false,
        });
    }

    /// A readable slice of known length, drawn at random (the caller checks that there
    /// is one).
    fn known_length_slice(&mut self) -> String {
        let slices: Vec<String> = self
            .readable()
            .into_iter()
            .filter(|(_, l)| *l != Len::Unknown)
            .map(|(n, _)| n)
            .collect();
        self.rng.pick(&slices).clone()
    }

    /// A vector of vectors built from a slice of known length, by `collect`ing its chunks
    /// mapped to vectors or by pushing a vector collected in each turn of a loop; then
    /// its first element and the sum of its last row read into a new scalar. The oracle
    /// runs the same code on num-dual numbers.
    fn vector_rows(&mut self) {
        let s = self.known_length_slice();
        let (rs, r, j, t) = (
            self.name("rs"),
            self.name("r"),
            self.name("j"),
            self.name("t"),
        );
        let m = self.mark();
        let (v, e) = self.element_expr(1);
        self.reset(m);
        if self.rng.chance(0.5) {
            let rows = |ty: &str, e: &str| {
                format!(
                    "let {rs}: Vec<Vec<{ty}>> = {s}.chunks(2).map(|{r}| {r}.iter().map(|{v}| {e}).collect()).collect();"
                )
            };
            self.line(&rows("f64", &e.p), &rows("D", &e.o));
        } else {
            self.line(
                &format!(
                    "let mut {rs}: Vec<Vec<f64>> = Vec::new(); for {j} in 0..2 {{ let {r}: Vec<f64> = {s}.iter().map(|{v}| {} * ({j} as f64 + 1.0)).collect(); {rs}.push({r}); }}",
                    e.p
                ),
                &format!(
                    "let mut {rs}: Vec<Vec<D>> = Vec::new(); for {j} in 0..2 {{ let {r}: Vec<D> = {s}.iter().map(|{v}| {} * D::from({j} as f64 + 1.0)).collect(); {rs}.push({r}); }}",
                    e.o
                ),
            );
        }
        self.line(
            &format!("let {t} = {rs}[0][0] * 0.5 + {rs}[{rs}.len() - 1].iter().sum::<f64>();"),
            &format!(
                "let {t} = {rs}[0][0] * D::from(0.5) + osum({rs}[{rs}.len() - 1].iter().copied());"
            ),
        );
        self.add_scalar(&t, false);
    }

    /// An iterator over a slice held in a variable: one or two items taken by `next()`
    /// or `nth(k)` (each read by `unwrap_or`), then the rest read by a `for` loop, a
    /// `while let Some(w) = it.next()` loop or `sum`, into a new scalar. The oracle runs
    /// the same code on num-dual numbers, through `std`'s iterators.
    fn iterator_variable(&mut self) {
        let s = self.known_length_slice();
        let (it, acc, w, t) = (
            self.name("it"),
            self.name("acc"),
            self.name("w"),
            self.name("t"),
        );
        let m = self.mark();
        let (v, e) = self.element_expr(1);
        self.reset(m);
        let k = self.damp();
        let adapter = *self.rng.pick(&["", ".rev()", ".skip(1)", ".step_by(2)"]);
        self.line(
            &format!("let mut {it} = {s}.iter(){adapter}.map(|{v}| {});", e.p),
            &format!("let mut {it} = {s}.iter(){adapter}.map(|{v}| {});", e.o),
        );
        let lit = fmt_lit(*self.rng.pick(&LITS));
        let mut taken = vec![];
        for _ in 0..self.rng.below(2) + 1 {
            let item = *self.rng.pick(&["next()", "nth(0)", "nth(1)"]);
            taken.push(format!("{it}.{item}.unwrap_or({lit})"));
        }
        let first = taken.join(" + ");
        let first_o = first.replace(
            &format!("unwrap_or({lit})"),
            &format!("unwrap_or(D::from({lit}))"),
        );
        self.line(
            &format!("let mut {acc} = {first};"),
            &format!("let mut {acc} = {first_o};"),
        );
        let (rest_p, rest_o) = match self.rng.below(3) {
            0 => (
                format!("for {w} in {it} {{ {acc} = {acc} * {} + {w}; }}", k.p),
                format!("for {w} in {it} {{ {acc} = tr({acc} * {} + {w}); }}", k.o),
            ),
            1 => (
                format!(
                    "while let Some({w}) = {it}.next() {{ {acc} = {acc} * {} + {w}.sin(); }}",
                    k.p
                ),
                format!(
                    "while let Some({w}) = {it}.next() {{ {acc} = tr({acc} * {} + {w}.sin()); }}",
                    k.o
                ),
            ),
            _ => (
                format!("{acc} += {it}.sum::<f64>();"),
                format!("{acc} += {it}.fold(D::from(0.0), |x, y| x + y);"),
            ),
        };
        self.line(&rest_p, &rest_o);
        self.let_line(
            &t,
            &E {
                p: acc.clone(),
                o: acc,
                lit: false,
            },
        );
        self.add_scalar(&t, false);
    }

    /// An `Option<f64>` (or `Option<(usize, f64)>`, with the element's index) local over
    /// the elements of a slice: the previous element, read by `if let Some(p)` into an
    /// accumulator, or the largest element so far (`is_none_or`); then read by `map_or`
    /// or `match` into a new scalar. The oracle runs the same
    /// code on num-dual numbers.
    fn option_local(&mut self) {
        let s = self.known_length_slice();
        let (o, a, v, p, t) = (
            self.name("o"),
            self.name("a"),
            self.name("v"),
            self.name("p"),
            self.name("t"),
        );
        let k = self.damp();
        let e = self.fexpr(1);
        let lit = fmt_lit(*self.rng.pick(&LITS));
        // Half the time the option holds the element's index too (`Option<(usize, f64)>`).
        let i = self.name("i");
        let (j, ty_p, ty_o, item, some, pat, gap) = if self.rng.chance(0.5) {
            let j = self.name("j");
            (
                j.clone(),
                "(usize, f64)",
                "(usize, D)",
                format!("({i}, {v})"),
                format!("({i}, *{v})"),
                format!("(_, {p})"),
                format!(" * (({i} - {j}) as f64 * 0.5)"),
            )
        } else {
            (
                String::new(),
                "f64",
                "D",
                v.clone(),
                format!("*{v}"),
                p.clone(),
                String::new(),
            )
        };
        let bound = if j.is_empty() {
            p.clone()
        } else {
            format!("({j}, {p})")
        };
        let iter = if j.is_empty() {
            format!("{s}.iter()")
        } else {
            format!("{s}.iter().enumerate()")
        };
        self.line(
            &format!("let mut {o}: Option<{ty_p}> = None; let mut {a} = 0.0;"),
            &format!("let mut {o}: Option<{ty_o}> = None; let mut {a} = D::from(0.0);"),
        );
        let (update_p, update_o) = if self.rng.chance(0.5) {
            (
                format!("{o} = Some({some});"),
                format!("{o} = Some({some});"),
            )
        } else {
            let b = if j.is_empty() {
                "b".to_string()
            } else {
                "(_, b)".to_string()
            };
            (
                format!("if {o}.is_none_or(|{b}| *{v} > b) {{ {o} = Some({some}); }}"),
                format!("if {o}.is_none_or(|{b}| {v}.re() > b.re()) {{ {o} = Some({some}); }}"),
            )
        };
        // (`* ((i - j) as f64 * 0.5)` in the oracle's numbers.)
        let gap_o = gap.replacen(" * (", " * D::from(", 1);
        self.line(
            &format!(
                "for {item} in {iter} {{ if let Some({bound}) = {o} {{ {a} = {a} * {} + ((*{v}) - {p}) * {}{gap}; }} {update_p} }}",
                k.p, e.p
            ),
            &format!(
                "for {item} in {iter} {{ if let Some({bound}) = {o} {{ {a} = tr({a} * {} + ((*{v}) - {p}) * {}{gap_o}); }} {update_o} }}",
                k.o, e.o
            ),
        );
        let (read_p, read_o) = if self.rng.chance(0.5) {
            (
                format!("{o}.map_or({lit}, |{pat}| {p} * {p})"),
                format!("{o}.map_or(D::from({lit}), |{pat}| {p} * {p})"),
            )
        } else {
            (
                format!("(match {o} {{ Some({pat}) => {p} * 0.5, None => {lit} }})"),
                format!(
                    "(match {o} {{ Some({pat}) => {p} * D::from(0.5), None => D::from({lit}) }})"
                ),
            )
        };
        self.let_line(
            &t,
            &E {
                p: format!("{a} + {read_p}"),
                o: format!("{a} + {read_o}"),
                lit: false,
            },
        );
        self.add_scalar(&t, false);
    }

    fn for_iter(&mut self) {
        let slices: Vec<(String, Len)> = self
            .readable()
            .into_iter()
            .filter(|(_, l)| *l != Len::Unknown)
            .collect();
        let (s, len) = self.rng.pick(&slices).clone();
        let n_sl = self.n_slices();
        let kinds = [
            if self.on("for_iter") { 3 } else { 0 },
            if self.on("copied") { 1 } else { 0 },
            if self.on("enumerate") { 2 } else { 0 },
            if self.on("zip") && len == Len::N && n_sl.len() >= 2 {
                2
            } else {
                0
            },
        ];
        if kinds.iter().all(|k| *k == 0) {
            return self.for_range();
        }
        let m = self.mark();
        // The slice is borrowed by the loop: no writes to it in the body.
        let bi = self.scope.bufs.iter().position(|b| b.name == s).unwrap();
        let saved = self.scope.bufs[bi].borrowed;
        self.scope.bufs[bi].borrowed = 1;
        let head = match self.rng.weighted(&kinds) {
            0 => {
                let v = self.name("v");
                self.add_elem(&v);
                format!("for {v} in {s}.iter() {{")
            }
            1 => {
                let v = self.name("v");
                self.add_scalar(&v, false);
                self.alias_last();
                format!("for {v} in {s}.iter().copied() {{")
            }
            2 => {
                let i = self.name("i");
                let v = self.name("v");
                self.add_int(&i, len == Len::N);
                self.add_elem(&v);
                format!("for ({i}, {v}) in {s}.iter().enumerate() {{")
            }
            _ => {
                let other: Vec<String> = n_sl.into_iter().filter(|t| *t != s).collect();
                let t = self.rng.pick(&other).clone();
                let ti = self.scope.bufs.iter().position(|b| b.name == t).unwrap();
                let tsaved = self.scope.bufs[ti].borrowed;
                self.scope.bufs[ti].borrowed = 1;
                let u = self.name("u");
                let v = self.name("v");
                self.add_elem(&u);
                self.add_elem(&v);
                let h = self.labelled(format!("for ({u}, {v}) in {s}.iter().zip({t}.iter()) {{"));
                self.open(&h, &h);
                self.loop_body(4);
                self.end_block(m);
                self.scope.bufs[ti].borrowed = tsaved;
                self.scope.bufs[bi].borrowed = saved;
                self.close("}");
                return;
            }
        };
        let head = self.labelled(head);
        self.open(&head, &head);
        self.loop_body(4);
        self.end_block(m);
        self.scope.bufs[bi].borrowed = saved;
        self.close("}");
    }

    fn while_loop(&mut self, as_loop: bool) {
        let k = self.name("k");
        let i = self.name("i");
        self.same_line(&format!("let mut {k} = 0;"));
        if as_loop {
            let head = self.labelled("loop {".into());
            self.open(&head, &head);
            self.same_line(&format!("if {k} >= n {{ break; }}"));
        } else if self.rng.chance(0.3) && !self.mut_scalars().is_empty() {
            let s = self.rng.pick(&self.mut_scalars()).clone();
            let (hp, ho) = (
                self.labelled(format!("while {k} < n && {s} < 5.0 {{")),
                format!("while {k} < n && {s}.re() < 5.0 {{"),
            );
            // The same label in the oracle.
            let ho = match hp.split_once(": while") {
                Some((l, _)) => format!("{l}: {ho}"),
                None => ho,
            };
            self.open(&hp, &ho);
        } else {
            let head = self.labelled(format!("while {k} < n {{"));
            self.open(&head, &head);
        }
        // The counter moves first, so that `continue` cannot skip it.
        self.same_line(&format!("let {i} = {k};"));
        self.same_line(&format!("{k} += 1;"));
        let m = self.mark();
        self.add_int(&i, true);
        self.loop_body(4);
        self.end_block(m);
        self.close("}");
    }

    /// `let t = loop { .. if k >= n || c { break e; } };`: inside, no `break` without a
    /// value and no `continue` (which could skip the counter's test).
    fn loop_value(&mut self) {
        let k = self.name("k");
        let i = self.name("i");
        let t = self.name("t");
        self.same_line(&format!("let mut {k} = 0;"));
        self.open(&format!("let {t} = loop {{"), &format!("let {t} = loop {{"));
        self.same_line(&format!("let {i} = {k};"));
        self.same_line(&format!("{k} += 1;"));
        let m = self.mark();
        self.add_int(&i, true);
        self.depth += 1;
        self.loops += 1;
        self.block(Ctx { in_loop: false }, 3);
        self.loops -= 1;
        self.depth -= 1;
        let c = self.cond(1);
        let e = typed(self.fexpr(2));
        self.line(
            &format!("if {k} >= n || {} {{ break {}; }}", c.0, e.p),
            &format!("if {k} >= n || {} {{ break tr({}); }}", c.1, e.o),
        );
        self.end_block(m);
        self.indent -= 1;
        self.same_line("};");
        self.add_scalar(&t, false);
    }

    /// `let t = 'b: { .. if c { break 'b e; } .. e };`: inside, no unlabelled `break` or
    /// `continue` (a labelled block refuses them).
    fn labelled_block(&mut self) {
        let t = self.name("t");
        let b = self.name("b");
        self.open(
            &format!("let {t} = '{b}: {{"),
            &format!("let {t} = '{b}: {{"),
        );
        let m = self.mark();
        self.depth += 1;
        self.block(Ctx { in_loop: false }, 2);
        let c = self.cond(1);
        let e = typed(self.fexpr(2));
        self.line(
            &format!("if {} {{ break '{b} {}; }}", c.0, e.p),
            &format!("if {} {{ break '{b} tr({}); }}", c.1, e.o),
        );
        self.block(Ctx { in_loop: false }, 2);
        self.depth -= 1;
        self.end_block(m);
        let e = typed(self.fexpr(2));
        self.line(&e.p, &format!("tr({})", e.o));
        self.indent -= 1;
        self.same_line("};");
        self.add_scalar(&t, false);
    }

    /// `b.swap(i, j)`, `b.reverse()` or `b.sort_by(..)` on a local vector.
    fn reorder(&mut self) {
        let w = self.writable();
        let (b, len) = self.rng.pick(&w).clone();
        match self.rng.below(3) {
            0 => {
                let i = self.index(len);
                let j = self.index(len);
                self.same_line(&format!("{b}.swap({i}, {j});"));
            }
            1 => self.same_line(&format!("{b}.reverse();")),
            _ => self.line(
                &format!("{b}.sort_by(|a, c| a.partial_cmp(c).unwrap_or(std::cmp::Ordering::Equal));"),
                &format!("{b}.sort_by(|a, c| a.re().partial_cmp(&c.re()).unwrap_or(std::cmp::Ordering::Equal));"),
            ),
        }
    }

    /// Shrinks a local vector and grows it back to its length with a float fill.
    fn reshape(&mut self) {
        let w: Vec<(String, Len)> = self
            .writable()
            .into_iter()
            .filter(|(b, _)| !self.is_out(b))
            .collect();
        let (b, len) = self.rng.pick(&w).clone();
        if self.on("edit") && (!self.on("reshape") || self.rng.chance(0.5)) {
            return self.edit(&b, len);
        }
        let full = match len {
            Len::Fixed(k) => k.to_string(),
            _ => "n".to_string(),
        };
        // The fill is read before the vector shrinks (it may read the vector).
        let fill = self.name("t");
        let e = self.fexpr(2);
        self.let_line(&fill, &e);
        if self.rng.chance(0.3) {
            self.same_line(&format!("{b}.clear();"));
        } else {
            let i = self.index(len);
            self.same_line(&format!("{b}.truncate({i});"));
        }
        self.same_line(&format!("{b}.resize({full}, {fill});"));
        self.add_scalar(&fill, false);
    }

    /// Elements of the local vector `b` moved, taken out and put in, its length the same
    /// after: `remove` then `insert`, `swap_remove` then `push`, a rotation, or `retain`
    /// then `resize`.
    fn edit(&mut self, b: &str, len: Len) {
        let full = match len {
            Len::Fixed(k) => k.to_string(),
            _ => "n".to_string(),
        };
        let t = self.name("t");
        match self.rng.below(4) {
            0 => {
                let (i, j) = (self.index(len), self.index(len));
                // (Computed first: it may read the vector's last element.)
                let u = self.name("t");
                let e = self.fexpr(2);
                self.let_line(&u, &e);
                self.same_line(&format!("let {t} = {b}.remove({i});"));
                self.line(
                    &format!("{b}.insert({j}, {t} * 0.5 + {u});"),
                    &format!("{b}.insert({j}, tr({t} * D::from(0.5) + {u}));"),
                );
                self.add_scalar(&u, false);
            }
            1 => {
                let i = self.index(len);
                let u = self.name("t");
                let e = self.fexpr(2);
                self.let_line(&u, &e);
                self.same_line(&format!("let {t} = {b}.swap_remove({i});"));
                self.line(
                    &format!("{b}.push({t} - {u});"),
                    &format!("{b}.push(tr({t} - {u}));"),
                );
                self.add_scalar(&u, false);
            }
            2 => {
                let k = self.index(len);
                let dir = *self.rng.pick(&["rotate_left", "rotate_right"]);
                self.same_line(&format!("{b}.{dir}({k});"));
                self.same_line(&format!("let {t} = {b}[0];"));
            }
            _ => {
                // The fill is read before the vector shrinks (it may read the vector).
                let e = self.fexpr(2);
                self.let_line(&t, &e);
                let c = *self.rng.pick(&LITS);
                self.line(
                    &format!("{b}.retain(|v| *v < {});", fmt_lit(c)),
                    &format!("{b}.retain(|v| v.re() < {c:?});"),
                );
                self.same_line(&format!("{b}.resize({full}, {t});"));
            }
        }
        self.add_scalar(&t, false);
    }

    fn new_vec(&mut self) {
        let b = self.name("b");
        let params: Vec<String> = self
            .scope
            .bufs
            .iter()
            .filter(|b| b.len == Len::N && b.borrowed < 2 && !b.growing)
            .map(|b| b.name.clone())
            .collect();
        let len = match self.rng.below(3) {
            0 => {
                if self.on("ascribe_vec") && self.rng.chance(0.5) {
                    self.line(
                        &format!("let mut {b}: Vec<f64> = vec![0.0; n];"),
                        &format!("let mut {b}: Vec<D> = vec![D::from(0.0); n];"),
                    );
                } else {
                    self.line(
                        &format!("let mut {b} = vec![0.0_f64; n];"),
                        &format!("let mut {b} = vec![D::from(0.0); n];"),
                    );
                }
                Len::N
            }
            1 if !params.is_empty() => {
                let s = self.rng.pick(&params).clone();
                self.same_line(&format!("let mut {b} = {s}.to_vec();"));
                Len::N
            }
            _ => {
                let mut es: Vec<E> = (0..3).map(|_| self.fexpr(2)).collect();
                if es.iter().all(|e| e.lit) {
                    es[0].p = format!("({} as f64)", es[0].p);
                }
                self.line(
                    &format!("let mut {b} = vec![{}, {}, {}];", es[0].p, es[1].p, es[2].p),
                    &format!("let mut {b} = vec![{}, {}, {}];", es[0].o, es[1].o, es[2].o),
                );
                Len::Fixed(3)
            }
        };
        self.scope.bufs.push(Buf {
            name: b,
            len,
            local: true,
            borrowed: 0,
            growing: false,
            out: false,
            used: false,
        });
    }

    /// The members of the `Acc` named `st` (`self` in its methods): `st.v` as a local
    /// vector of length `n`, `st.s` as a mutable scalar (neither captured by closures).
    fn add_acc_members(&mut self, st: &str) {
        self.scope.bufs.push(Buf {
            name: format!("{st}.v"),
            len: Len::N,
            local: true,
            borrowed: 0,
            growing: false,
            out: false,
            used: false,
        });
        self.add_scalar(&format!("{st}.s"), true);
    }

    /// `let mut st = Acc { v: x.to_vec(), s: e };`, then one or two calls of its helper
    /// methods (`st.h3(e);`, `let t = st.h5(e);`); its members are then read and written
    /// as locals are.
    fn method_call(&mut self) {
        let options: Vec<(usize, bool)> = self
            .callable
            .iter()
            .filter_map(|(j, s)| match s {
                HSig::Method { unit } => Some((*j, *unit)),
                _ => None,
            })
            .collect();
        let st = self.name("st");
        let src = self.rng.pick(&self.n_slices()).clone();
        let e = self.fexpr(2);
        self.line(
            &format!("let mut {st} = Acc {{ v: {src}.to_vec(), s: {} }};", e.p),
            &format!(
                "let mut {st} = OAcc {{ v: {src}.to_vec(), s: tr({}) }};",
                e.o
            ),
        );
        for _ in 0..self.rng.range(1, 2) {
            let (j, unit) = *self.rng.pick(&options);
            self.called.insert(j);
            let e = self.fexpr(2);
            if unit {
                self.line(
                    &format!("{st}.h{j}({});", e.p),
                    &format!("{st}.h{j}_o({});", e.o),
                );
            } else {
                let t = self.name("t");
                self.line(
                    &format!("let {t} = {st}.h{j}({});", e.p),
                    &format!("let {t} = {st}.h{j}_o({});", e.o),
                );
                self.add_scalar(&t, false);
            }
        }
        self.add_acc_members(&st);
    }

    /// Whether buffer `b` is a `&mut [f64]` parameter.
    fn is_out(&self, b: &str) -> bool {
        self.scope.bufs.iter().any(|x| x.name == b && x.out)
    }

    /// Local vectors of length `n` that a helper may write through its output, each with
    /// the helpers that may be called with it (their `x` another slice of length `n`).
    fn out_targets(&self) -> Vec<String> {
        self.writable()
            .into_iter()
            .filter(|(b, l)| *l == Len::N && self.n_slices().iter().any(|s| s != b))
            .map(|(b, _)| b)
            .collect()
    }

    fn out_call_possible(&self) -> bool {
        self.callable
            .iter()
            .any(|(_, s)| matches!(s, HSig::SliceOut { .. }))
            && !self.out_targets().is_empty()
    }

    /// A call of a helper that writes its `out` parameter, given a local vector (or the
    /// function's own output) to write: `h(x, e, &mut b);` or `let t = h(x, e, &mut b);`.
    fn out_call(&mut self) {
        let options: Vec<(usize, bool)> = self
            .callable
            .iter()
            .filter_map(|(j, s)| match s {
                HSig::SliceOut { unit } => Some((*j, *unit)),
                _ => None,
            })
            .collect();
        let (j, unit) = *self.rng.pick(&options);
        let b = self.rng.pick(&self.out_targets()).clone();
        let srcs: Vec<String> = self.n_slices().into_iter().filter(|s| *s != b).collect();
        let s = self.rng.pick(&srcs).clone();
        // Both whole, or both windows of two (the helper reads `out` as long as `x`).
        let windows = self.on("subslice") && self.rng.chance(0.3);
        let x = if windows {
            let w = self.window();
            format!("&{s}{w}")
        } else {
            self.slice_arg(&s)
        };
        let e = self.fexpr(2);
        // The function's own output is lent as it is, a local vector by `&mut`.
        let out = if windows {
            let w = self.window();
            format!("&mut {b}{w}")
        } else if self.is_out(&b) {
            b.clone()
        } else {
            format!("&mut {b}")
        };
        self.called.insert(j);
        let (cp, co) = (
            format!("h{j}({x}, {}, {out})", e.p),
            format!("h{j}_o({x}, {}, {out})", e.o),
        );
        if unit {
            self.line(&format!("{cp};"), &format!("{co};"));
        } else {
            let t = self.name("t");
            self.line(&format!("let {t} = {cp};"), &format!("let {t} = {co};"));
            self.add_scalar(&t, false);
        }
    }

    fn writable(&self) -> Vec<(String, Len)> {
        self.scope
            .bufs
            .iter()
            .filter(|b| b.local && b.borrowed == 0 && !b.growing && b.len != Len::Unknown)
            .map(|b| (b.name.clone(), b.len))
            .collect()
    }

    fn write_vec(&mut self) {
        let w = self.writable();
        let (b, len) = self.rng.pick(&w).clone();
        let i = self.index(len);
        let e = self.fexpr(3);
        match self.rng.below(3) {
            0 | 1 => self.line(
                &format!("{b}[{i}] = {};", e.p),
                &format!("{b}[{i}] = tr({});", e.o),
            ),
            // `+=` on a num-dual element would borrow the vector twice.
            _ => self.line(
                &format!("{b}[{i}] += {};", e.p),
                &format!("{b}[{i}] = tr({b}[{i}] + {});", e.o),
            ),
        }
    }

    fn push_loop(&mut self) {
        let b = self.name("p");
        if self.on("ascribe_vec") && self.rng.chance(0.5) {
            self.line(
                &format!("let mut {b}: Vec<f64> = Vec::new();"),
                &format!("let mut {b}: Vec<D> = Vec::new();"),
            );
        } else {
            self.same_line(&format!("let mut {b} = Vec::new();"));
        }
        let i = self.name("i");
        self.open(
            &format!("for {i} in 0..n {{"),
            &format!("for {i} in 0..n {{"),
        );
        let m = self.mark();
        self.add_int(&i, true);
        // Statements before the push (no break/continue: they would change the length).
        self.depth += 1;
        self.loops += 1;
        let k = self.rng.below(3);
        for _ in 0..k {
            if self.budget > 0 {
                self.stmt(Ctx { in_loop: false });
            }
        }
        self.loops -= 1;
        self.depth -= 1;
        let conditional = self.rng.chance(0.3);
        let mut e = self.fexpr(3);
        if e.lit {
            e.p = format!("({} as f64)", e.p);
        }
        if conditional {
            let c = self.cond(1);
            self.line(
                &format!("if {} {{ {b}.push({}); }}", c.0, e.p),
                &format!("if {} {{ {b}.push({}); }}", c.1, e.o),
            );
        } else {
            self.line(
                &format!("{b}.push({});", e.p),
                &format!("{b}.push({});", e.o),
            );
        }
        self.end_block(m);
        self.close("}");
        self.scope.bufs.push(Buf {
            name: b,
            len: if conditional { Len::Unknown } else { Len::N },
            local: true,
            borrowed: 0,
            growing: false,
            out: false,
            used: false,
        });
        if conditional {
            // Read through an iterator only.
            let t = self.name("t");
            let b = self.scope.bufs.last().unwrap().name.clone();
            let e = self.zero_sign(E {
                p: format!("{b}.iter().map(|v| v.sin()).sum::<f64>()"),
                o: format!("osum({b}.iter().map(|v| v.sin()))"),
                lit: false,
            });
            self.line(
                &format!("let {t} = {};", e.p),
                &format!("let {t} = {};", e.o),
            );
            self.add_scalar(&t, false);
        }
    }

    fn iter_mut_or_fill(&mut self) {
        let w = self.writable();
        let (b, len) = self.rng.pick(&w).clone();
        let kinds = [
            if self.on("iter_mut") { 3 } else { 0 },
            if self.on("fill") { 1 } else { 0 },
            if self.on("fill") && len == Len::N {
                1
            } else {
                0
            },
        ];
        match self.rng.weighted(&kinds) {
            0 => {
                let bi = self.scope.bufs.iter().position(|x| x.name == b).unwrap();
                self.scope.bufs[bi].borrowed = 2;
                let v = self.name("v");
                let e = self.fexpr(2);
                let k = self.damp();
                self.open(
                    &format!("for {v} in {b}.iter_mut() {{"),
                    &format!("for {v} in {b}.iter_mut() {{"),
                );
                self.line(
                    &format!("*{v} = *{v} * {} + {};", k.p, e.p),
                    &format!("*{v} = *{v} * {} + {};", k.o, e.o),
                );
                self.close("}");
                self.scope.bufs[bi].borrowed = 0;
            }
            1 => {
                let bi = self.scope.bufs.iter().position(|x| x.name == b).unwrap();
                self.scope.bufs[bi].borrowed = 2;
                let e = self.fexpr(2);
                self.scope.bufs[bi].borrowed = 0;
                self.line(
                    &format!("{b}.fill({});", e.p),
                    &format!("{b}.fill({});", e.o),
                );
            }
            _ => {
                let srcs: Vec<String> = self.n_slices().into_iter().filter(|s| *s != b).collect();
                if srcs.is_empty() {
                    return;
                }
                let s = self.rng.pick(&srcs).clone();
                let r = self.slice_arg(&s);
                self.same_line(&format!("{b}.copy_from_slice({r});"));
            }
        }
    }

    /// `hof_sum(|q: f64| body, a, n)`: a closure over what may be captured (as for
    /// [`Self::closure`]: scalars and slice elements) passed to the higher-order function
    /// that the differential test defines, `Σ_{i<n} f(a + i/4)`.
    fn hof_call(&mut self, depth: usize) -> E {
        let q = self.name("q");
        let saved = self.scope.clone();
        // An element of a struct's member (`for v in st.v.iter()`) is read through the
        // struct, which such a closure cannot capture (a documented limitation): with a
        // member in scope, elements are left out.
        let members = self.scope.bufs.iter().any(|b| b.name.contains('.'));
        self.scope
            .scalars
            .retain(|s| s.capturable && !(members && (s.by_ref.is_some() || s.alias)));
        self.scope.bufs.retain(|b| !b.local);
        self.scope.ints.clear();
        self.scope.clos.clear();
        self.add_scalar(&q, false);
        self.alias_last();
        let callable = std::mem::take(&mut self.callable);
        self.in_closure = true;
        let body = self.fexpr(2);
        self.in_closure = false;
        let body = involve(&mut self.rng, body, &q, &q, &q);
        self.callable = callable;
        self.scope = saved;
        let a = typed(self.fexpr_with(depth - 1, true));
        let n = self.rng.range(1, 3);
        E {
            p: format!("hof_sum(|{q}: f64| {}, {}, {n})", body.p, a.p),
            o: format!("hof_sum_o(|{q}: D| {}, {}, {n})", body.o, a.o),
            lit: false,
        }
    }

    fn closure(&mut self) {
        let g = self.name("g");
        let arity = self.rng.range(1, 2);
        let params: Vec<String> = (0..arity).map(|_| self.name("q")).collect();
        // The body sees its parameters and what may be captured: no locals assigned later,
        // no local vectors (they may be written later), no loop counters.
        let saved = self.scope.clone();
        self.scope.scalars.retain(|s| s.capturable);
        self.scope.bufs.retain(|b| !b.local);
        self.scope.ints.clear();
        self.scope.clos.clear();
        for q in &params {
            self.add_scalar(q, false);
            self.alias_last();
        }
        let callable = std::mem::take(&mut self.callable);
        self.in_closure = true;
        let mut e = self.fexpr(3);
        self.in_closure = false;
        for q in &params {
            e = involve(&mut self.rng, e, q, q, q);
        }
        self.callable = callable;
        self.scope = saved;
        let pp: Vec<String> = params.iter().map(|q| format!("{q}: f64")).collect();
        let po: Vec<String> = params.iter().map(|q| format!("{q}: D")).collect();
        self.line(
            &format!("let {g} = |{}| {};", pp.join(", "), e.p),
            &format!("let {g} = |{}| {};", po.join(", "), e.o),
        );
        self.scope.clos.push(Clo { name: g, arity });
    }
}

/// `e`, typed `f64` when it is only literals: `(0.5 as f64)`.
fn typed(mut e: E) -> E {
    if e.lit {
        e.p = format!("({} as f64)", e.p);
        e.lit = false;
    }
    e
}

/// Whether `p` is a bare local, element `(*v)` or indexed place `x[..]`.
fn is_place(p: &str) -> bool {
    if p.starts_with("(*") && p.ends_with(')') {
        return !p[2..p.len() - 1].contains(|c: char| !c.is_ascii_alphanumeric() && c != '_');
    }
    let rest = p.trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '_');
    if rest.len() == p.len() {
        return false;
    }
    rest.is_empty()
        || (rest.starts_with('[') && rest.ends_with(']') && {
            // One bracket group, closing at the end.
            let mut depth = 0;
            rest.char_indices().all(|(i, c)| {
                match c {
                    '[' => depth += 1,
                    ']' => depth -= 1,
                    _ => {}
                }
                depth > 0 || i == rest.len() - 1
            })
        })
}

/// Whether `text` mentions the identifier `name`.
fn mentions(text: &str, name: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(name).any(|(i, _)| {
        let before = text[..i].chars().next_back().is_none_or(|c| !ident(c));
        let after = text[i + name.len()..]
            .chars()
            .next()
            .is_none_or(|c| !ident(c));
        before && after
    })
}

/// `e`, made to depend on `v` (an expression of a float, `(*v)` for an element) when it
/// does not mention `name`.
fn involve(rng: &mut Rng, e: E, name: &str, vp: &str, vo: &str) -> E {
    if mentions(&e.p, name) {
        return e;
    }
    let op = *rng.pick(&["+", "-", "*"]);
    E {
        p: format!("({vp} {op} {})", e.p),
        o: format!("({vo} {op} {})", e.o),
        lit: false,
    }
}

/// Substitutes the `{}` of a template in order.
fn wrap(t: &str, args: &[&str]) -> String {
    let mut out = String::new();
    let mut parts = t.split("{}");
    out.push_str(parts.next().unwrap());
    for (part, a) in parts.zip(args) {
        out.push_str(a);
        out.push_str(part);
    }
    out
}

/// One generated function: its plain and oracle source, and for a main function its test
/// wrappers and `Case` entry.
pub struct FnOut {
    pub name: String,
    pub plain: String,
    /// Differentiated functions the checks need besides `plain` (the H·v wrapper).
    pub checks: String,
    /// The oracle, and for a generated function its wrapper over flattened inputs.
    pub oracle: String,
    /// The test's wrappers over flattened inputs, in `f64` (`in_f32` writes them in `f32`).
    pub harness: String,
    /// The function's entry of the test's table, with its oracle, and without (the `f32`
    /// twin has none).
    pub case: String,
    pub case_f32: String,
    pub helpers: BTreeSet<usize>,
}

/// Generates the body of a function with parameters `params`; returns the generator (its
/// buffers hold the body) after the final expression.
/// With `unit`, the function returns nothing: the final value is added into the last
/// element of its output (`out` or `self.v`).
fn body<'a>(
    rng: Rng,
    f: &'a Features,
    params: &[P],
    callable: Vec<(usize, HSig)>,
    budget: i32,
    unit: bool,
) -> FnGen<'a> {
    let mut g = FnGen::new(rng, f, callable);
    g.budget = budget;
    let mut first_slice = None;
    for p in params {
        match p.kind {
            PKind::Slice => {
                first_slice.get_or_insert(p.name.clone());
                g.scope.bufs.push(Buf {
                    name: p.name.clone(),
                    len: Len::N,
                    local: false,
                    borrowed: 0,
                    growing: false,
                    out: false,
                    used: true,
                });
            }
            PKind::Scalar => {
                g.scope.scalars.push(Scalar {
                    p: p.name.clone(),
                    o: p.name.clone(),
                    mutable: false,
                    by_ref: None,
                    capturable: true,
                    used: true,
                    alias: false,
                });
            }
            PKind::Int => g.has_m = true,
            // Read as a buffer of two: indexed and iterated as a slice parameter is.
            PKind::Array => g.scope.bufs.push(Buf {
                name: p.name.clone(),
                len: Len::Fixed(2),
                local: false,
                borrowed: 0,
                growing: false,
                out: false,
                used: true,
            }),
            // Written as a local vector is (but never resized); its values come from the
            // caller, so reading it before writing it is part of the test.
            PKind::Out => g.scope.bufs.push(Buf {
                name: p.name.clone(),
                len: Len::N,
                local: true,
                borrowed: 0,
                growing: false,
                out: true,
                used: false,
            }),
            // The members, as a local vector and a mutable scalar are.
            PKind::SelfAcc => {
                first_slice.get_or_insert("self.v".to_string());
                g.add_acc_members("self");
            }
        }
    }
    if let Some(x) = first_slice {
        g.same_line(&format!("let n = {x}.len();"));
        g.has_n = true;
    }
    let e = g.fexpr(2);
    g.let_line("mut acc", &e);
    g.add_scalar("acc", true);
    let top = g.mark();
    while g.budget > 0 {
        g.stmt(Ctx::default());
    }
    g.end_block(top);
    let written = params.iter().find_map(|p| match p.kind {
        PKind::Out => Some("out"),
        PKind::SelfAcc => Some("self.v"),
        _ => None,
    });
    if let Some(w) = written {
        // Every output is written, from another of its elements.
        let e = g.fexpr(1);
        g.line(
            &format!("{w}[0] = {w}[n - 1] * 0.5 + {};", e.p),
            &format!("{w}[0] = tr({w}[n - 1] * D::from(0.5) + {});", e.o),
        );
    }
    let e = g.fexpr(2);
    let k = g.damp();
    let (p, o) = (
        format!("acc * {} + {}", k.p, e.p),
        format!("acc * {} + {}", k.o, e.o),
    );
    if unit {
        let w = written.expect("a helper returning nothing writes an output");
        g.line(
            &format!("{w}[n - 1] += {p};"),
            &format!("{w}[n - 1] = tr({w}[n - 1] + ({o}));"),
        );
    } else if g.on("return") && g.rng.chance(0.25) {
        // A `return` inside the final expression: a branch of an `if`, or a block's
        // statement before its value.
        let c = g.cond(2);
        let r = g.fexpr(2);
        if g.rng.chance(0.5) {
            g.line(
                &format!("if {} {{ return {}; }} else {{ {p} }}", c.0, r.p),
                &format!("if {} {{ return {}; }} else {{ {o} }}", c.1, r.o),
            );
        } else {
            g.line(
                &format!("{{ if {} {{ return {}; }} {p} }}", c.0, r.p),
                &format!("{{ if {} {{ return {}; }} {o} }}", c.1, r.o),
            );
        }
    } else {
        g.line(&p, &o);
    }
    g
}

fn signature(params: &[P], oracle: bool) -> String {
    params
        .iter()
        .map(|p| param_decl(p, oracle))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `name: type` of a parameter, in the plain rendering or the oracle's.
fn param_decl(p: &P, oracle: bool) -> String {
    match (p.kind, oracle) {
        (PKind::Slice, false) => format!("{}: &[f64]", p.name),
        (PKind::Slice, true) => format!("{}: &[D]", p.name),
        (PKind::Scalar, false) => format!("{}: f64", p.name),
        (PKind::Scalar, true) => format!("{}: D", p.name),
        (PKind::Int, _) => format!("{}: usize", p.name),
        (PKind::Array, false) => format!("{}: [f64; 2]", p.name),
        (PKind::Array, true) => format!("{}: [D; 2]", p.name),
        (PKind::Out, false) => format!("{}: &mut [f64]", p.name),
        (PKind::Out, true) => format!("{}: &mut [D]", p.name),
        (PKind::SelfAcc, _) => "&mut self".to_string(),
    }
}

/// Helper `j` (`#[differentiable]`), which may call helpers `0..j`.
pub fn helper(seed: u64, j: usize, f: &Features) -> FnOut {
    let sig = HSig::of(j, seed, f);
    let params = sig.params();
    let rng = Rng::stream(seed, 0x4845_4C50_0000 + j as u64);
    let callable: Vec<(usize, HSig)> = (0..j).map(|i| (i, HSig::of(i, seed, f))).collect();
    let unit = sig.unit();
    // (A function returning nothing has no `return` with a value.)
    let without_return = f.without("return");
    let body_features = if unit { &without_return } else { f };
    // A method is called by many functions of a batch (from the few helpers that are
    // methods): a shorter body makes a recurrence that blows up, and every caller's
    // points with it, rarer.
    let budget = if matches!(sig, HSig::Method { .. }) {
        3
    } else {
        5
    };
    let mut g = body(rng, body_features, &params, callable, budget, unit);
    let name = format!("h{j}");
    let mut sig_p = signature(&params, false);
    let mut sig_o = signature(&params, true);
    if matches!(sig, HSig::ArrayScalar) && HSig::writes_array(j, seed) {
        // The helper writes its own copy of the array, which the caller's keeps apart from.
        sig_p = format!("mut {sig_p}");
        sig_o = format!("mut {sig_o}");
        g.p = format!("    v[0] = v[0] * 0.5 + v[1];\n{}", g.p);
        g.o = format!("    v[0] = v[0] * 0.5 + v[1];\n{}", g.o);
    }
    let (ret_p, ret_o) = if unit { ("", "") } else { (" -> f64", " -> D") };
    let (plain, oracle) = if matches!(sig, HSig::Method { .. }) {
        (
            format!(
                "impl Acc {{\n#[differentiable]\npub fn {name}({sig_p}){ret_p} {{\n{}}}\n}}\n",
                g.p
            ),
            format!(
                "impl<D: Num> OAcc<D> {{\npub fn {name}_o({sig_o}){ret_o} {{\n{}}}\n}}\n",
                g.o
            ),
        )
    } else {
        (
            format!(
                "#[differentiable]\npub fn {name}({sig_p}){ret_p} {{\n{}}}\n",
                g.p
            ),
            format!("pub fn {name}_o<D: Num>({sig_o}){ret_o} {{\n{}}}\n", g.o),
        )
    };
    let helpers = std::mem::take(&mut g.called);
    FnOut {
        name,
        plain,
        checks: String::new(),
        oracle,
        harness: String::new(),
        case: String::new(),
        case_f32: String::new(),
        helpers,
    }
}

/// Main function `k`.
pub fn function(seed: u64, k: usize, f: &Features) -> FnOut {
    let mut rng = Rng::stream(seed, k as u64);
    let mut params = vec![P {
        name: "x".into(),
        kind: PKind::Slice,
    }];
    if rng.chance(0.4) {
        params.push(P {
            name: "y".into(),
            kind: PKind::Slice,
        });
    }
    for name in ["a", "b"].iter().take(rng.range(0, 2)) {
        params.push(P {
            name: name.to_string(),
            kind: PKind::Scalar,
        });
    }
    if f.has("int_param") && rng.chance(0.3) {
        params.push(P {
            name: "m".into(),
            kind: PKind::Int,
        });
    }
    rng.shuffle(&mut params);

    // Activities: forward and reverse drawn independently, at least one active input each.
    let mut fwd: Vec<bool> = params
        .iter()
        .map(|p| p.kind != PKind::Int && rng.chance(0.7))
        .collect();
    let mut rev: Vec<bool> = params
        .iter()
        .map(|p| p.kind != PKind::Int && rng.chance(0.7))
        .collect();
    let floats: Vec<usize> = (0..params.len())
        .filter(|i| params[*i].kind != PKind::Int)
        .collect();
    if !fwd.iter().any(|a| *a) {
        fwd[*rng.pick(&floats)] = true;
    }
    if !rev.iter().any(|a| *a) {
        rev[*rng.pick(&floats)] = true;
    }
    let fwd_only = rng.chance(0.25);
    let rev_only = rng.chance(0.25);
    let fwd_first = rng.chance(0.5);
    // Mostly both companions (the first attribute to expand sees the other one); sometimes
    // only one.
    let modes = rng.weighted(&[6, 1, 1]);
    let (has_fwd, has_rev) = (modes != 2, modes != 1);

    let helpers: Vec<(usize, HSig)> = (0..HELPERS).map(|j| (j, HSig::of(j, seed, f))).collect();
    let budget = rng.range(4, 14) as i32;
    let body_rng = Rng::stream(seed, 0x424F_4459_0000 + k as u64);
    let mut g = body(body_rng, f, &params, helpers, budget, false);

    let name = format!("fz{k}");
    let fa: Vec<&str> = params
        .iter()
        .zip(&fwd)
        .map(|(_, a)| if *a { "Dual" } else { "Const" })
        .collect();
    let ra: Vec<&str> = params
        .iter()
        .zip(&rev)
        .map(|(p, a)| match (p.kind, a) {
            (PKind::Slice, true) => "Duplicated",
            (PKind::Scalar, true) => "Active",
            _ => "Const",
        })
        .collect();
    let fattr = format!(
        "#[autodiff_forward({name}_fwd, {}, {})]",
        fa.join(", "),
        if fwd_only { "DualOnly" } else { "Dual" }
    );
    let rattr = format!(
        "#[autodiff_reverse({name}_rev, {}, {})]",
        ra.join(", "),
        if rev_only { "ActiveOnly" } else { "Active" }
    );
    let attrs = match (has_fwd, has_rev) {
        (true, false) => fattr,
        (false, true) => rattr,
        _ if fwd_first => format!("{fattr}\n{rattr}"),
        _ => format!("{rattr}\n{fattr}"),
    };
    let plain = format!(
        "{attrs}\npub fn {name}({}) -> f64 {{\n{}}}\n",
        signature(&params, false),
        g.p
    );
    let oracle = format!(
        "pub fn {name}_o<D: Num>({}) -> D {{\n{}}}\n",
        signature(&params, true),
        g.o
    );

    // Test wrappers over the flattened inputs `z` (slices first, then scalars).
    let nslices = params.iter().filter(|p| p.kind == PKind::Slice).count();
    let nscalars = params.iter().filter(|p| p.kind == PKind::Scalar).count();
    let mut h = String::new();
    let split = |h: &mut String, z: &str, pre: &str| {
        let mut rest = z.to_string();
        for s in 0..nslices {
            let _ = writeln!(h, "    let ({pre}s{s}, r) = {rest}.split_at(n);");
            rest = "r".into();
        }
        let _ = writeln!(h, "    let {pre}c = {rest};");
    };
    // Argument lists: (primal args, forward args, reverse args).
    let (mut ap, mut af, mut ar) = (Vec::new(), Vec::new(), Vec::new());
    let (mut si, mut ci) = (0, 0);
    let mut active_scalars = Vec::new();
    for (i, p) in params.iter().enumerate() {
        match p.kind {
            PKind::Slice => {
                ap.push(format!("s{si}"));
                af.push(format!("s{si}"));
                if fwd[i] {
                    af.push(format!("ds{si}"));
                }
                ar.push(format!("s{si}"));
                if rev[i] {
                    ar.push(format!("g{si}"));
                }
                si += 1;
            }
            PKind::Scalar => {
                ap.push(format!("c[{ci}]"));
                af.push(format!("c[{ci}]"));
                if fwd[i] {
                    af.push(format!("dc[{ci}]"));
                }
                ar.push(format!("c[{ci}]"));
                if rev[i] {
                    active_scalars.push(ci);
                }
                ci += 1;
            }
            PKind::Int => {
                ap.push("m".into());
                af.push("m".into());
                ar.push("m".into());
            }
            PKind::Array | PKind::Out | PKind::SelfAcc => {
                unreachable!("only helpers take arrays by value, outputs and `self`")
            }
        }
    }
    let uses_m = params.iter().any(|p| p.kind == PKind::Int);
    let m_arg = if uses_m { "m" } else { "_m" };
    // primal
    let _ = writeln!(
        h,
        "fn {name}_primal(z: &[f64], n: usize, {m_arg}: usize) -> f64 {{"
    );
    split(&mut h, "z", "");
    let _ = writeln!(h, "    {name}({})\n}}", ap.join(", "));
    // oracle, with the oracle function
    let mut oracle = oracle;
    let _ = writeln!(
        oracle,
        "fn {name}_oracle(z: &[Dual64], n: usize, {m_arg}: usize) -> Dual64 {{"
    );
    split(&mut oracle, "z", "");
    let _ = writeln!(oracle, "    {name}_o({})\n}}", ap.join(", "));
    // forward
    if has_fwd {
        let _ = writeln!(
            h,
            "fn {name}_fwd_w(z: &[f64], dz: &[f64], n: usize, {m_arg}: usize) -> (Option<f64>, f64) {{"
        );
        split(&mut h, "z", "");
        split(&mut h, "dz", "d");
        if fwd_only {
            let _ = writeln!(h, "    (None, {name}_fwd({}))\n}}", af.join(", "));
        } else {
            let _ = writeln!(
                h,
                "    let (p, t) = {name}_fwd({});\n    (Some(p), t)\n}}",
                af.join(", ")
            );
        }
    }
    // reverse: shadows are the slice parts of `g`, scalar adjoints go to its tail
    let mut hr = String::new();
    let _ = writeln!(
        hr,
        "fn {name}_rev_w(z: &[f64], g: &mut [f64], seed: f64, n: usize, {m_arg}: usize) -> Option<f64> {{"
    );
    split(&mut hr, "z", "");
    let mut rest = "g".to_string();
    for s in 0..nslices {
        let _ = writeln!(hr, "    let (g{s}, r) = {rest}.split_at_mut(n);");
        rest = "r".into();
    }
    let _ = writeln!(hr, "    let gc = {rest};");
    let mut outs: Vec<String> = Vec::new();
    if !rev_only {
        outs.push("p".into());
    }
    for c in &active_scalars {
        outs.push(format!("d{c}"));
    }
    let call = format!("{name}_rev({}, seed)", ar.join(", "));
    let pat = match outs.len() {
        0 => "()".to_string(),
        1 => outs[0].clone(),
        _ => format!("({})", outs.join(", ")),
    };
    let _ = writeln!(hr, "    let {pat} = {call};");
    for c in &active_scalars {
        let _ = writeln!(hr, "    gc[{c}] += d{c};");
    }
    let _ = writeln!(hr, "    let _ = &gc;");
    let _ = writeln!(hr, "    {}\n}}", if rev_only { "None" } else { "Some(p)" });
    if has_rev {
        h.push_str(&hr);
    }

    // Hessian-vector product: the forward companion (all float parameters `Dual`) of a
    // wrapper that writes the reverse companion's gradient into outputs (a slice per
    // `Duplicated` slice, a `&mut f64` per `Active` scalar).
    let (mut gw_params, mut gw_acts, mut gw_body) = (Vec::new(), Vec::new(), String::new());
    let (mut gw_args, mut hvp_args) = (Vec::new(), Vec::new());
    for p in &params {
        gw_params.push(param_decl(p, false));
        gw_acts.push(if p.kind == PKind::Int {
            "Const"
        } else {
            "Dual"
        });
    }
    let (mut si, mut ci) = (0, 0);
    let mut out_pat = Vec::new();
    if !rev_only {
        out_pat.push("_".to_string());
    }
    let mut scalar_outs = Vec::new();
    for (i, p) in params.iter().enumerate() {
        match p.kind {
            PKind::Slice => {
                gw_args.push(p.name.clone());
                hvp_args.push(format!("s{si}"));
                hvp_args.push(format!("vs{si}"));
                if rev[i] {
                    gw_params.push(format!("gw_{}: &mut [f64]", p.name));
                    gw_acts.push("Dual");
                    gw_args.push(format!("gw_{}", p.name));
                    let _ = writeln!(gw_body, "    gw_{}.fill(0.0);", p.name);
                }
                si += 1;
            }
            PKind::Scalar => {
                gw_args.push(p.name.clone());
                hvp_args.push(format!("c[{ci}]"));
                hvp_args.push(format!("vc[{ci}]"));
                if rev[i] {
                    gw_params.push(format!("gw_{}: &mut f64", p.name));
                    gw_acts.push("Dual");
                    out_pat.push(format!("gd_{}", p.name));
                    scalar_outs.push((p.name.clone(), ci));
                }
                ci += 1;
            }
            PKind::Int => {
                gw_args.push(p.name.clone());
                hvp_args.push("m".into());
            }
            PKind::Array | PKind::Out | PKind::SelfAcc => {
                unreachable!("only helpers take arrays by value, outputs and `self`")
            }
        }
    }
    let gw_pat = match out_pat.len() {
        0 => "()".to_string(),
        1 => out_pat[0].clone(),
        _ => format!("({})", out_pat.join(", ")),
    };
    let _ = writeln!(
        gw_body,
        "    let {gw_pat} = {name}_rev({}, 1.0);",
        gw_args.join(", ")
    );
    for (pn, _) in &scalar_outs {
        let _ = writeln!(gw_body, "    *gw_{pn} = gd_{pn};");
    }
    let gradient_wrapper = format!(
        "#[autodiff_forward({name}_hvp, {})]
pub fn {name}_gw({}) {{
{gw_body}}}
",
        gw_acts.join(", "),
        gw_params.join(", ")
    );
    // Its harness: H·v into `hv`, laid out as the reverse gradient (zeros for `Const`).
    let mut hh = String::new();
    let _ = writeln!(
        hh,
        "fn {name}_hvp_w(z: &[f64], v: &[f64], hv: &mut [f64], n: usize, {m_arg}: usize) {{"
    );
    split(&mut hh, "z", "");
    split(&mut hh, "v", "v");
    let mut rest = "hv".to_string();
    for s in 0..nslices {
        let _ = writeln!(hh, "    let (hv{s}, r) = {rest}.split_at_mut(n);");
        rest = "r".into();
    }
    let _ = writeln!(hh, "    let hvc = {rest};");
    // The wrapper's parameters with their tangents, then its outputs with theirs, in the
    // order of the parameters they belong to.
    let mut call_args = hvp_args.clone();
    let mut si = 0;
    for (i, p) in params.iter().enumerate() {
        match p.kind {
            PKind::Slice => {
                if rev[i] {
                    let _ = writeln!(hh, "    let mut gs{si} = vec![0.0; n];");
                    call_args.push(format!("&mut gs{si}"));
                    call_args.push(format!("hv{si}"));
                }
                si += 1;
            }
            PKind::Scalar if rev[i] => {
                let pn = &p.name;
                let _ = writeln!(hh, "    let (mut g_{pn}, mut h_{pn}) = (0.0, 0.0);");
                call_args.push(format!("&mut g_{pn}"));
                call_args.push(format!("&mut h_{pn}"));
            }
            _ => {}
        }
    }
    let _ = writeln!(hh, "    {name}_hvp({});", call_args.join(", "));
    for (pn, c) in &scalar_outs {
        let _ = writeln!(hh, "    hvc[{c}] = h_{pn};");
    }
    let _ = writeln!(
        hh,
        "    let _ = &hvc;
}}"
    );
    // `no_grad(e)` stops derivatives of every order: the H·v of forward over reverse does
    // not see `e` change, where differences of the gradient do. Such functions (or their
    // helpers) get no H·v check.
    // Closures passed to calls are not differentiated twice (a compile error), so
    // functions that pass them get none either.
    let unnested = |p: &str| p.contains("no_grad(") || p.contains("hof_sum(");
    let stops = unnested(&g.p)
        || helper_closure(seed, f, &g.called)
            .iter()
            .any(|j| unnested(&helper(seed, *j, f).plain));
    let check_hvp = has_rev && !stops;
    if check_hvp {
        h.push_str(&hh);
    }

    let mask = |act: &[bool]| {
        // Per parameter in flattened order: slices, then scalars.
        let mut m: Vec<&str> = Vec::new();
        for (p, a) in params.iter().zip(act) {
            if p.kind == PKind::Slice {
                m.push(if *a { "true" } else { "false" });
            }
        }
        for (p, a) in params.iter().zip(act) {
            if p.kind == PKind::Scalar {
                m.push(if *a { "true" } else { "false" });
            }
        }
        m.join(", ")
    };
    let case = |oracle: &str| {
        format!(
            "    Case {{ name: \"{name}\", index: {k}, slices: {nslices}, scalars: {nscalars}, \
             fwd_mask: &[{}], rev_mask: &[{}], primal: {name}_primal, oracle: {oracle}, \
             fwd: {}, rev: {}, hvp: {} }},\n",
            mask(&fwd),
            mask(&rev),
            if has_fwd {
                format!("Some({name}_fwd_w)")
            } else {
                "None".into()
            },
            if has_rev {
                format!("Some({name}_rev_w)")
            } else {
                "None".into()
            },
            if check_hvp {
                format!("Some({name}_hvp_w)")
            } else {
                "None".into()
            },
        )
    };
    let helpers = std::mem::take(&mut g.called);
    let (case, case_f32) = (case(&format!("Some({name}_oracle)")), case("None"));
    FnOut {
        name,
        plain,
        checks: if check_hvp {
            gradient_wrapper
        } else {
            String::new()
        },
        oracle,
        harness: h,
        case,
        case_f32,
        helpers,
    }
}

/// The helpers `called` needs, transitively.
pub fn helper_closure(seed: u64, f: &Features, called: &BTreeSet<usize>) -> BTreeSet<usize> {
    let mut all = BTreeSet::new();
    let mut todo: Vec<usize> = called.iter().copied().collect();
    while let Some(j) = todo.pop() {
        if all.insert(j) {
            todo.extend(helper(seed, j, f).helpers);
        }
    }
    all
}

/// The whole batch: helpers, functions, oracles, wrappers and the `CASES` table.
pub fn generate(cfg: &Config) -> Batch {
    let mut text = String::new();
    let mut spans = Vec::new();
    let _ = writeln!(
        text,
        "// Generated by autodiff-fuzzgen: seed {}, {} functions, features: {}.\n\
         // Regenerate one function with `cargo run -p autodiff-fuzzgen -- show --seed {} --index K`.\n",
        cfg.seed,
        cfg.count,
        cfg.features.list(),
        cfg.seed
    );
    let _ = writeln!(text, "pub const SEED: u64 = {};", cfg.seed);
    let mut push = |text: &mut String, name: &str, src: &str| {
        let start = text.lines().count() + 1;
        text.push_str(src);
        let end = text.lines().count();
        spans.push((name.to_string(), start, end));
    };
    let mut text_f32 = String::new();
    for j in 0..HELPERS {
        let h = helper(cfg.seed, j, &cfg.features);
        push(&mut text, &h.name, &format!("{}\n{}\n", h.plain, h.oracle));
        let _ = writeln!(text_f32, "{}", in_f32(&h.plain));
    }
    let (mut cases, mut entries, mut entries_f32) = (String::new(), String::new(), String::new());
    for k in 0..cfg.count {
        let name = format!("fz{k}");
        if cfg.skip.contains(&name) {
            continue;
        }
        let f = function(cfg.seed, k, &cfg.features);
        push(
            &mut text,
            &f.name,
            &format!("{}\n{}{}\n", f.plain, f.checks, f.oracle),
        );
        let _ = writeln!(text_f32, "{}\n{}", in_f32(&f.plain), in_f32(&f.checks));
        cases.push_str(&f.harness);
        entries.push_str(&f.case);
        entries_f32.push_str(&f.case_f32);
    }
    // The wrappers, then the table.
    let _ = writeln!(text, "{cases}\npub static CASES: &[Case] = &[\n{entries}];");
    let _ = writeln!(
        text_f32,
        "{}\npub static CASES: &[Case] = &[\n{entries_f32}];",
        in_f32(&cases)
    );
    Batch {
        text,
        text_f32,
        spans,
    }
}

/// Generated code in `f32`: every `f64` written as `f32` (types, `as` casts,
/// `f64::sin(e)`, `sum::<f64>()`, `std::f64::consts`). Literals take the type of their
/// context, so the code means the same in the narrower type.
pub fn in_f32(code: &str) -> String {
    code.replace("f64", "f32")
}

/// Reads `AUTODIFF_FUZZ_SEED`, `AUTODIFF_FUZZ_COUNT`, `AUTODIFF_FUZZ_FEATURES` and
/// `AUTODIFF_FUZZ_SKIP` through `get`, with the CI defaults.
pub fn config_from(get: impl Fn(&str) -> Option<String>) -> Result<Config, String> {
    let seed = match get("AUTODIFF_FUZZ_SEED") {
        Some(s) => parse_u64(&s).ok_or(format!("AUTODIFF_FUZZ_SEED: bad number `{s}`"))?,
        None => DEFAULT_SEED,
    };
    let count = match get("AUTODIFF_FUZZ_COUNT") {
        Some(s) => s
            .trim()
            .parse()
            .map_err(|_| format!("AUTODIFF_FUZZ_COUNT: bad number `{s}`"))?,
        None => DEFAULT_COUNT,
    };
    let features = match get("AUTODIFF_FUZZ_FEATURES") {
        Some(s) => Features::parse(&s)?,
        None => Features::default_set(),
    };
    let skip = get("AUTODIFF_FUZZ_SKIP")
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    Ok(Config {
        seed,
        count,
        features,
        skip,
    })
}

pub fn parse_u64(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// The CI batch.
pub const DEFAULT_SEED: u64 = 20_240_601;
pub const DEFAULT_COUNT: usize = 300;
