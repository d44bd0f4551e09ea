//! The engine never panics: property tests that feed the attribute entry points
//! ([`expand::expand`] for `#[autodiff_forward]`, `#[autodiff_reverse]` and
//! `#[differentiable]`, [`rules::expand`] for `#[custom_rule]`) with
//!
//! - arbitrary token streams, as the item and as the attribute arguments;
//! - syntactically valid but random function items: random signatures, statements and
//!   expressions over most of Rust's syntax, supported or not;
//! - functions of the differential-test generator (`autodiff-fuzzgen`), as they are and with
//!   random token-level mutations;
//!
//! and check that none panics, that each returns tokens that parse as items when given a
//! function (a `compile_error!` among them is fine), and that the generator's functions
//! expand without an error. 256 cases per
//! property by default, from a fixed seed; `PROPTEST_CASES=100000 PROPTEST_RNG_SEED=$RANDOM
//! cargo test -p autodiff-macros fuzz` for a long run. See TESTING.md.

use crate::activity::Mode;
use crate::expand::{Trigger, expand};
use crate::rules;
use proc_macro2::{Delimiter, Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};
use proptest::prelude::*;
use proptest::test_runner::Config;
use std::str::FromStr;

/// A fixed seed unless `PROPTEST_RNG_SEED` names one: the suite explores the same cases
/// on every run, so that a build passes or fails on its code alone. Exploring more is a
/// long run with other seeds; what one finds goes into [`known_failures`].
fn config() -> Config {
    let mut config = Config {
        failure_persistence: None,
        ..Config::default()
    };
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = proptest::test_runner::RngSeed::Fixed(0x5eed_ad15);
    }
    config
}

/// An entry point, by name, applied to fixed arguments.
type Run<'a> = (&'static str, Box<dyn Fn() -> TokenStream + 'a>);

/// Runs every entry point on `item` with `args`; panics (failing the property) if one
/// panics or, when `item` is a function, returns tokens that do not parse as items (a
/// non-function comes back as it is, after a `compile_error!`).
fn expand_all(args: &TokenStream, item: &TokenStream) {
    let is_fn = syn::parse2::<syn::ImplItemFn>(item.clone()).is_ok();
    let runs: [Run; 4] = [
        (
            "autodiff_forward",
            Box::new(|| {
                expand(
                    Trigger::Companion(Mode::Forward, args.clone()),
                    item.clone(),
                )
            }),
        ),
        (
            "autodiff_reverse",
            Box::new(|| {
                expand(
                    Trigger::Companion(Mode::Reverse, args.clone()),
                    item.clone(),
                )
            }),
        ),
        (
            "differentiable",
            Box::new(|| expand(Trigger::Differentiable, item.clone())),
        ),
        (
            "custom_rule",
            Box::new(|| rules::expand(args.clone(), item.clone())),
        ),
    ];
    for (name, run) in runs {
        let out = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
            Ok(out) => out,
            Err(p) => panic!(
                "#[{name}({args})] panicked ({}) on:\n{item}",
                p.downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| p.downcast_ref::<&str>().copied())
                    .unwrap_or("?")
            ),
        };
        assert!(
            !is_fn || parses_as_items(&out),
            "#[{name}({args})] returned tokens that are not items:\n{out}\n\non:\n{item}"
        );
    }
}

/// Items of a file, or of an `impl` block (the expansion of a method).
fn parses_as_items(out: &TokenStream) -> bool {
    syn::parse2::<syn::File>(out.clone()).is_ok()
        || syn::parse2::<syn::ItemImpl>(quote::quote!(impl S { #out })).is_ok()
}

// ------------------------------------------------------------------ arbitrary tokens

const WORDS: &[&str] = &[
    "fn",
    "let",
    "mut",
    "for",
    "in",
    "while",
    "loop",
    "if",
    "else",
    "match",
    "return",
    "break",
    "continue",
    "self",
    "Self",
    "pub",
    "impl",
    "struct",
    "async",
    "unsafe",
    "move",
    "ref",
    "as",
    "where",
    "dyn",
    "const",
    "static",
    "f64",
    "f32",
    "usize",
    "Vec",
    "x",
    "y",
    "a",
    "b",
    "n",
    "i",
    "s",
    "acc",
    "sin",
    "exp",
    "powi",
    "iter",
    "zip",
    "map",
    "sum",
    "fold",
    "len",
    "push",
    "vec",
    "no_grad",
    "Dual",
    "DualOnly",
    "Const",
    "Active",
    "ActiveOnly",
    "Duplicated",
    "forward",
    "reverse",
    "differentiable",
    "autodiff_forward",
    "autodiff_reverse",
    "Real",
    "T",
    "_",
];

const PUNCTS: &[char] = &[
    '+', '-', '*', '/', '%', '^', '!', '&', '|', '=', '<', '>', '@', '.', ',', ';', ':', '#', '$',
    '?', '~',
];

#[derive(Clone, Debug)]
enum Tok {
    Word(usize),
    Punct(usize, bool),
    Int(u32),
    Float(u16),
    Str,
    Group(u8, Vec<Tok>),
}

fn tok() -> impl Strategy<Value = Tok> {
    let leaf = prop_oneof![
        4 => (0..WORDS.len()).prop_map(Tok::Word),
        3 => (0..PUNCTS.len(), any::<bool>()).prop_map(|(p, j)| Tok::Punct(p, j)),
        1 => any::<u32>().prop_map(Tok::Int),
        1 => any::<u16>().prop_map(Tok::Float),
        1 => Just(Tok::Str),
    ];
    leaf.prop_recursive(4, 96, 8, |inner| {
        (0..4u8, prop::collection::vec(inner, 0..8)).prop_map(|(d, ts)| Tok::Group(d, ts))
    })
}

fn stream(toks: &[Tok]) -> TokenStream {
    toks.iter()
        .map(|t| -> TokenTree {
            match t {
                Tok::Word(i) => Ident::new(WORDS[*i], Span::call_site()).into(),
                Tok::Punct(i, joint) => {
                    let sp = if *joint {
                        Spacing::Joint
                    } else {
                        Spacing::Alone
                    };
                    Punct::new(PUNCTS[*i], sp).into()
                }
                Tok::Int(v) => Literal::u32_unsuffixed(*v).into(),
                Tok::Float(v) => Literal::f64_unsuffixed(*v as f64 / 8.0).into(),
                Tok::Str => Literal::string("s").into(),
                Tok::Group(d, ts) => {
                    let d = match d {
                        0 => Delimiter::Parenthesis,
                        1 => Delimiter::Brace,
                        2 => Delimiter::Bracket,
                        _ => Delimiter::None,
                    };
                    Group::new(d, stream(ts)).into()
                }
            }
        })
        .collect()
}

proptest! {
    #![proptest_config(config())]

    /// Arbitrary tokens as the item and as the arguments.
    #[test]
    fn fuzz_arbitrary_tokens(
        item in prop::collection::vec(tok(), 0..24),
        args in prop::collection::vec(tok(), 0..8),
    ) {
        expand_all(&stream(&args), &stream(&item));
    }

    /// Arbitrary tokens as the body, the parameters or the return type of a function.
    #[test]
    fn fuzz_tokens_in_a_function(
        body in prop::collection::vec(tok(), 0..24),
        params in prop::collection::vec(tok(), 0..6),
        ret in prop::collection::vec(tok(), 0..3),
        args in activity_args(),
    ) {
        let (body, params, ret) = (stream(&body), stream(&params), stream(&ret));
        let args = TokenStream::from_str(&args).unwrap();
        expand_all(&args, &quote::quote!(fn f(x: &[f64], #params) -> f64 { #body }));
        expand_all(&args, &quote::quote!(fn f(#params) -> #ret { let y = x[0]; #body }));
    }
}

// ------------------------------------------------------------------ random syntax

fn pick(items: &'static [&'static str]) -> impl Strategy<Value = String> + Clone {
    (0..items.len()).prop_map(move |i| items[i].to_string())
}

fn name() -> impl Strategy<Value = String> + Clone {
    pick(&[
        "x", "y", "a", "b", "n", "i", "s", "t", "v", "acc", "self", "m", "p",
    ])
}

fn ty() -> impl Strategy<Value = String> + Clone {
    pick(&[
        "f64",
        "f32",
        "usize",
        "i32",
        "bool",
        "&[f64]",
        "&mut [f64]",
        "&Vec<f64>",
        "&mut Vec<f64>",
        "Vec<f64>",
        "[f64; 3]",
        "&[f64; 3]",
        "(f64, f64)",
        "&f64",
        "&mut f64",
        "T",
        "&T",
        "&[T]",
        "Option<f64>",
        "Box<dyn Fn(f64) -> f64>",
        "impl Fn(f64) -> f64",
        "&str",
        "Self",
        "&Self",
        "&mut Self",
        "&Model",
        "&mut Model",
        "&[Vec<f64>]",
        "fn(f64) -> f64",
        "_",
    ])
}

fn lit() -> impl Strategy<Value = String> + Clone {
    pick(&[
        "0.5",
        "1.0",
        "2",
        "0",
        "3usize",
        "1e3",
        "2.0f32",
        "-1.5",
        "true",
        "false",
        "\"s\"",
        "'c'",
        "f64::MAX",
        "f64::NAN",
        "std::f64::consts::PI",
        "i32::MAX",
    ])
}

fn pat() -> impl Strategy<Value = String> + Clone {
    pick(&[
        "x",
        "mut x",
        "_",
        "(a, b)",
        "(mut a, _)",
        "[a, b]",
        "[first, ..]",
        "&v",
        "ref r",
        "Some(q)",
        "P { x, .. }",
        "(a, (b, c))",
        "s",
        "t",
        "acc",
    ])
}

fn arm_pat() -> impl Strategy<Value = String> + Clone {
    pick(&[
        "0",
        "1 | 2",
        "3..=5",
        "..=0",
        "_",
        "x",
        "x @ 1..=3",
        "Some(v)",
        "None",
        "(a, _)",
        "_ if a > 0.5",
        "k if k % 2 == 0",
        "0.5",
        "\"s\"",
        "true",
        "[a, .., b]",
        "&x",
    ])
}

fn binop() -> impl Strategy<Value = String> + Clone {
    pick(&[
        "+", "-", "*", "/", "%", "<", ">", "<=", ">=", "==", "!=", "&&", "||", "&", "|", "^", "<<",
        ">>",
    ])
}

fn assign_op() -> impl Strategy<Value = String> + Clone {
    pick(&[
        "=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=",
    ])
}

fn method() -> impl Strategy<Value = String> + Clone {
    pick(&[
        "sin",
        "cos",
        "exp",
        "ln",
        "sqrt",
        "powi",
        "powf",
        "max",
        "min",
        "abs",
        "atan2",
        "hypot",
        "mul_add",
        "clamp",
        "sin_cos",
        "floor",
        "signum",
        "iter",
        "iter_mut",
        "map",
        "zip",
        "enumerate",
        "sum",
        "product",
        "fold",
        "for_each",
        "collect",
        "len",
        "push",
        "fill",
        "copy_from_slice",
        "to_vec",
        "clone",
        "rev",
        "step_by",
        "chunks",
        "copied",
        "cloned",
        "windows",
        "unwrap",
        "into_iter",
        "partial_cmp",
        "is_nan",
        "split_at",
        "filter",
        "any",
        "last",
        "first",
        "get",
        "as_slice",
        "reduce",
        "max_by",
        "min_by",
        "expect",
        "unwrap_or",
        "swap",
        "reverse",
        "sort_by",
        "sort_unstable_by",
        "frobnicate",
    ])
}

/// Random expressions, with blocks of random statements inside them.
fn expr() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        3 => name(),
        3 => lit(),
        1 => pick(&["x[0]", "self.w", "self.w[i]", "m.b", "Self::K", "x.len()", "()", "no_grad(a)"]),
    ];
    leaf.prop_recursive(5, 64, 6, |e| {
        let e2 = || (e.clone(), e.clone());
        let args = prop::collection::vec(e.clone(), 0..3).prop_map(|v| v.join(", "));
        let stmt = prop_oneof![
            (pat(), e.clone()).prop_map(|(p, a)| format!("let {p} = {a};")),
            (pat(), ty(), e.clone()).prop_map(|(p, t, a)| format!("let {p}: {t} = {a};")),
            pat().prop_map(|p| format!("let {p};")),
            (name(), e.clone()).prop_map(|(p, a)| format!("let Some({p}) = {a} else {{ return 0.0; }};")),
            (e.clone(), assign_op(), e.clone()).prop_map(|(a, o, b)| format!("{a} {o} {b};")),
            e.clone().prop_map(|a| format!("{a};")),
            (pat(), e.clone(), e.clone()).prop_map(|(p, a, b)| format!("for {p} in {a} {{ {b}; }}")),
            e2().prop_map(|(a, b)| format!("while {a} {{ {b}; }}")),
            (pat(), e.clone(), e.clone()).prop_map(|(p, a, b)| format!("while let {p} = {a} {{ {b}; }}")),
            e.clone().prop_map(|a| format!("'outer: loop {{ {a}; break 'outer; }}")),
            e.clone().prop_map(|a| format!("return {a};")),
            pick(&["break;", "continue;", "return;", "fn inner(x: f64) -> f64 { x }", "struct S;",
                   "use std::f64::consts::PI;", "#[allow(unused)] let z = 1;", ";", "const K: f64 = 1.0;",
                   "macro_rules! m { () => {} }", "impl S {}"]),
        ];
        let block = (prop::collection::vec(stmt, 0..4), prop::option::of(e.clone()))
            .prop_map(|(ss, tail)| format!("{{ {} {} }}", ss.join(" "), tail.unwrap_or_default()));
        prop_oneof![
            6 => (e.clone(), binop(), e.clone()).prop_map(|(a, o, b)| format!("({a} {o} {b})")),
            2 => (pick(&["-", "!", "*", "&", "&mut "]), e.clone()).prop_map(|(u, a)| format!("({u}{a})")),
            5 => (e.clone(), method(), args.clone()).prop_map(|(a, m, x)| format!("{a}.{m}({x})")),
            3 => (pick(&["f", "g", "h", "f64::sin", "f64::max", "Vec::new", "Vec::with_capacity",
                         "helper::<f64>", "Self::new", "Model::f", "no_grad", "std::mem::swap"]), args.clone())
                .prop_map(|(f, x)| format!("{f}({x})")),
            2 => e2().prop_map(|(a, b)| format!("{a}[{b}]")),
            1 => (e.clone(), pick(&["0", "w", "b", "len"])).prop_map(|(a, f)| format!("{a}.{f}")),
            1 => prop::collection::vec(e.clone(), 0..4).prop_map(|v| format!("({},)", v.join(", "))),
            1 => prop::collection::vec(e.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(", "))),
            1 => e.clone().prop_map(|a| format!("[{a}; 3]")),
            1 => e2().prop_map(|(a, b)| format!("({a}..{b})")),
            1 => e2().prop_map(|(a, b)| format!("({a}..={b})")),
            1 => (e.clone(), ty()).prop_map(|(a, t)| format!("({a} as {t})")),
            1 => e.clone().prop_map(|a| format!("{a}?")),
            2 => (pick(&["|q|", "|q: f64|", "|q, r|", "move |q|", "|&q|", "|(q, r)|", "||"]), e.clone())
                .prop_map(|(p, a)| format!("({p} {a})")),
            3 => block.clone(),
            3 => (e.clone(), block.clone(), block.clone()).prop_map(|(c, a, b)| format!("if {c} {a} else {b}")),
            1 => (e.clone(), block.clone()).prop_map(|(c, a)| format!("if {c} {a}")),
            1 => (pat(), e.clone(), block.clone(), block.clone())
                .prop_map(|(p, c, a, b)| format!("if let {p} = {c} {a} else {b}")),
            2 => (e.clone(), prop::collection::vec((arm_pat(), e.clone()), 1..4))
                .prop_map(|(s, arms)| format!("match {s} {{ {} }}",
                    arms.iter().map(|(p, a)| format!("{p} => {a},")).collect::<String>())),
            1 => block.clone().prop_map(|b| format!("loop {b}")),
            1 => e.clone().prop_map(|a| format!("loop {{ break {a}; }}")),
            1 => e.clone().prop_map(|a| format!("'l: loop {{ break 'l {a}; }}")),
            1 => (block.clone(), e.clone()).prop_map(|(b, a)| format!("'b: {{ if {a} {{ break 'b {a}; }} {b} }}")),
            1 => (e.clone(), pick(&["reduce", "max_by", "min_by"]), e.clone(), pick(&["unwrap()", "expect(\"x\")", "unwrap_or(0.0)"]))
                .prop_map(|(a, m, f, u)| format!("{a}.iter().{m}({f}).{u}")),
            2 => (pick(&["vec!", "println!", "assert!", "debug_assert!", "format!", "unknown!", "assert_eq!"]), args.clone())
                .prop_map(|(m, x)| format!("{m}({x})")),
            1 => e2().prop_map(|(a, b)| format!("vec![{a}; {b}]")),
            1 => (e.clone(), e2()).prop_map(|(a, (b, c))| format!("vec![vec![{a}; {b}]; {c}]")),
            1 => (e2(), e2()).prop_map(|((a, b), (c, d))| format!("[[{a}, {b}], [{c}, {d}]]")),
            1 => (e2(), e.clone()).prop_map(|((a, b), c)| format!("vec![vec![{a}, {b}], vec![{c}]]")),
            1 => (e.clone(), pick(&["get(1)", "first()", "last()", "get(x)"]), pick(&["unwrap()", "copied().unwrap_or(0.0)", "expect(\"e\")"]))
                .prop_map(|(a, m, u)| format!("{a}.{m}.{u}")),
            1 => (pick(&["T", "f64", "F"]), e.clone()).prop_map(|(t, a)| format!("{t}::from({a}).unwrap()")),
            1 => (e.clone(), pick(&["f64::max", "f64::min", "T::max"])).prop_map(|(a, f)| format!("{a}.iter().fold(0.0, {f})")),
            1 => e2().prop_map(|(a, b)| format!("std::mem::swap(&mut {a}, &mut {b})")),
            1 => e2().prop_map(|(a, b)| format!("P {{ x: {a}, y: {b} }}")),
            1 => block.clone().prop_map(|b| format!("unsafe {b}")),
            1 => block.clone().prop_map(|b| format!("async {b}")),
            1 => e.clone().prop_map(|a| format!("{a}.await")),
        ]
    })
}

fn param() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => (pick(&["x", "y", "a", "b", "n", "mut x", "_", "m", "out"]), ty())
            .prop_map(|(p, t)| format!("{p}: {t}")),
        1 => Just("(p, q): (f64, f64)".to_string()),
        1 => Just("#[constant] c: f64".to_string()),
        1 => Just("#[duplicated] d: &Model".to_string()),
    ]
}

/// A signature, its number of parameters (the receiver included) and whether it returns
/// a value.
fn signature() -> impl Strategy<Value = (String, usize, bool)> {
    (
        pick(&["", "pub ", "pub(crate) "]),
        pick(&["", "", "", "const ", "unsafe ", "async ", "extern \"C\" "]),
        pick(&["f", "g", "energy", "r#try"]),
        pick(&[
            "",
            "",
            "<T: Real>",
            "<T: num_traits::Float>",
            "<T>",
            "<'a>",
            "<const N: usize>",
            "<T: Real, U>",
        ]),
        pick(&[
            "",
            "",
            "",
            "self, ",
            "&self, ",
            "&mut self, ",
            "mut self, ",
            "self: Box<Self>, ",
        ]),
        prop::collection::vec(param(), 0..4),
        pick(&[
            "",
            "-> f64",
            "-> f64",
            "-> (f64, f64)",
            "-> T",
            "-> Vec<f64>",
            "-> !",
            "-> impl Fn(f64) -> f64",
            "-> &f64",
            "-> Self",
            "-> ()",
        ]),
        pick(&["", "", "where T: Real"]),
    )
        .prop_map(|(vis, q, name, generics, recv, params, ret, wh)| {
            let n = params.len() + usize::from(!recv.is_empty());
            let returns = !ret.is_empty() && ret != "-> ()";
            (
                format!(
                    "{vis}{q}fn {name}{generics}({recv}{}) {ret} {wh}",
                    params.join(", ")
                ),
                n,
                returns,
            )
        })
}

/// The arguments of an attribute: a name and activities, or rule names, or junk.
fn activity_args() -> impl Strategy<Value = String> {
    let act = pick(&[
        "Dual",
        "Dual",
        "DualOnly",
        "Const",
        "Const",
        "Active",
        "Active",
        "ActiveOnly",
        "Duplicated",
        "Duplicated",
        "Foo",
        "dual",
        "Dual = 1",
        "width = 2",
        "1",
        "\"s\"",
        "Dual::Foo",
        "(Dual)",
    ]);
    prop_oneof![
        6 => (pick(&["df", "d_f", "f", "self", "r#df"]), prop::collection::vec(act, 0..5))
            .prop_map(|(n, a)| std::iter::once(n).chain(a).collect::<Vec<_>>().join(", ")),
        2 => pick(&["forward = ff, reverse = fr", "forward = ff", "reverse = fr", "forward", "forward = ff, forward = ff", "reverse = 1"]),
        1 => pick(&["", ",", "df,", ", Dual", "df Dual", "df, Dual,,"]),
    ]
}

/// A function item, its number of parameters and whether it returns a value.
fn item() -> impl Strategy<Value = (String, usize, bool)> {
    (
        pick(&[
            "",
            "",
            "#[inline] ",
            "#[autodiff_reverse(dr, Active, Active)] ",
            "#[differentiable] ",
            "#[doc = \"x\"] ",
            "#[custom_rule(forward = g)] ",
            "#[autodiff_forward(d2, Dual, Dual)] ",
        ]),
        signature(),
        prop::collection::vec(expr(), 0..4),
        prop::option::of(expr()),
    )
        .prop_map(|(attr, (sig, n, ret), stmts, tail)| {
            let body: String = stmts.iter().map(|s| format!("{s};\n")).collect();
            (
                format!("{attr}{sig} {{\n{body}{}\n}}", tail.unwrap_or_default()),
                n,
                ret,
            )
        })
}

proptest! {
    #![proptest_config(config())]

    /// Syntactically valid random functions (supported constructs or not) and attributes,
    /// half of them with as many activities as the function has parameters.
    #[test]
    fn fuzz_random_functions((src, args) in item().prop_flat_map(|(src, n, ret)| {
        let acts = pick(&["Dual", "Const", "Active", "Duplicated", "DualOnly", "ActiveOnly"]);
        let counted = prop::collection::vec(acts, n + usize::from(ret)).prop_map(|a| {
            std::iter::once("df".to_string()).chain(a).collect::<Vec<_>>().join(", ")
        });
        (Just(src), prop_oneof![counted, activity_args()])
    })) {
        let parsed = syn::parse_str::<syn::ImplItemFn>(&src);
        prop_assume!(parsed.is_ok(), "not a function: {}", src);
        let item = TokenStream::from_str(&src).unwrap();
        let args = TokenStream::from_str(&args).unwrap();
        expand_all(&args, &item);
    }
}

// ------------------------------------------------------------------ generated functions

/// One function of the differential-test generator (all constructs, excluded ones too),
/// split into its first attribute's arguments and the item with the other attributes.
fn generated(seed: u64, k: usize, helper: bool) -> (TokenStream, TokenStream, String) {
    let f = autodiff_fuzzgen::Features::all();
    let src = if helper {
        autodiff_fuzzgen::helper(seed, k, &f).plain
    } else {
        autodiff_fuzzgen::function(seed, k, &f).plain
    };
    let mut func = generated_fn(&src);
    let first = func.attrs.remove(0);
    let args = match first.meta {
        syn::Meta::List(l) => l.tokens,
        _ => TokenStream::new(),
    };
    (args, quote::quote!(#func), src)
}

/// The function the generator wrote in `src`: a free function, or the method of a helper
/// that comes in its `impl` block.
fn generated_fn(src: &str) -> syn::ImplItemFn {
    match syn::parse_str::<syn::ItemImpl>(src) {
        Ok(block) => block
            .items
            .into_iter()
            .find_map(|item| match item {
                syn::ImplItem::Fn(f) => Some(f),
                _ => None,
            })
            .expect("the generator's `impl` blocks hold a method"),
        Err(_) => syn::parse_str(src).expect("the generator writes functions"),
    }
}

/// A token-level edit of a stream: deletes, duplicates or replaces the token at `at`
/// (counted depth-first), or swaps it with the next one.
fn mutate(ts: TokenStream, at: &mut usize, edit: u8, with: &TokenTree) -> TokenStream {
    let mut out = Vec::new();
    let trees: Vec<TokenTree> = ts.into_iter().collect();
    let mut i = 0;
    while i < trees.len() {
        let t = trees[i].clone();
        if *at == 0 {
            *at = usize::MAX;
            match edit % 4 {
                0 => {}
                1 => {
                    out.push(t.clone());
                    out.push(t);
                }
                2 => out.push(with.clone()),
                _ => {
                    if let Some(next) = trees.get(i + 1) {
                        out.push(next.clone());
                        out.push(t);
                        i += 1;
                    } else {
                        out.push(t);
                    }
                }
            }
            i += 1;
            continue;
        }
        *at = at.wrapping_sub(1);
        match t {
            TokenTree::Group(g) => {
                let inner = mutate(g.stream(), at, edit, with);
                let mut ng = Group::new(g.delimiter(), inner);
                ng.set_span(g.span());
                out.push(ng.into());
            }
            t => out.push(t),
        }
        i += 1;
    }
    out.into_iter().collect()
}

proptest! {
    #![proptest_config(config())]

    /// The generator's functions (supported constructs, as the differential test compiles
    /// them) expand without a `compile_error!`.
    #[test]
    fn fuzz_generated_functions_expand(seed in any::<u64>(), k in 0usize..1000, helper in any::<bool>()) {
        let k = if helper { k % autodiff_fuzzgen::HELPERS } else { k };
        let f = autodiff_fuzzgen::Features::default_set();
        let src = if helper {
            autodiff_fuzzgen::helper(seed, k, &f).plain
        } else {
            autodiff_fuzzgen::function(seed, k, &f).plain
        };
        let mut func = generated_fn(&src);
        let first = func.attrs.remove(0);
        let which = first.path().segments.last().unwrap().ident.to_string();
        let args = match first.meta {
            syn::Meta::List(l) => l.tokens,
            _ => TokenStream::new(),
        };
        let trigger = match which.as_str() {
            "autodiff_forward" => Trigger::Companion(Mode::Forward, args),
            "autodiff_reverse" => Trigger::Companion(Mode::Reverse, args),
            _ => Trigger::Differentiable,
        };
        let out = expand(trigger, quote::quote!(#func)).to_string();
        prop_assert!(!out.contains("compile_error"), "seed {seed}, function {k}:\n{src}\n\n{out}");
    }

    /// The generator's functions (all constructs) with a random token edit.
    #[test]
    fn fuzz_mutated_generated_functions(
        seed in any::<u64>(),
        k in 0usize..1000,
        helper in any::<bool>(),
        at in 0usize..400,
        edit in any::<u8>(),
        with in tok(),
    ) {
        let k = if helper { k % autodiff_fuzzgen::HELPERS } else { k };
        let (args, item, _) = generated(seed, k, helper);
        let with = stream(&[with]).into_iter().next().unwrap();
        let mut at = at;
        let item = mutate(item, &mut at, edit, &with);
        expand_all(&args, &item);
    }
}

/// Inputs the properties above once failed on, kept so that they run every time.
#[test]
fn known_failures() {
    let cases: &[(&str, &str)] = &[(
        "fn f() -> (f64, f64) { if let _ = x.await { } else { while 1.0 { 3usize; } x.len() } }",
        "df, Dual",
    )];
    for (src, args) in cases {
        let item = TokenStream::from_str(src).unwrap();
        let args = TokenStream::from_str(args).unwrap();
        expand_all(&args, &item);
    }
}
