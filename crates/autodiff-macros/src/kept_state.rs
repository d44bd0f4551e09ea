//! Pullbacks that keep what the forward sweep recorded.
//!
//! A differentiable function's augmented call (`__ad_aug`) returns the primal and a state
//! that the caller hands back to its pullback (`__ad_pull`). By default the state is `()`
//! and the pullback runs the forward sweep again, recording, before the reverse sweep:
//! every call is computed twice, and the transcendental functions of a callee called in a
//! loop (a `logsumexp`, a `sigmoid`) dominate the gradient.
//!
//! Here the augmented call runs the recording forward sweep itself and returns the reverse
//! sweep as a closure that owns its tapes and the forward sweep's locals; the pullback
//! only converts the caller's sinks and calls it. The closure receives the arguments again
//! (the caller passes the same ones to the pullback), so that it holds no borrow: the
//! caller may overwrite its buffers between the call and the pullback, as it may now.
//!
//! That is sound only where the forward sweep's locals cannot borrow, and where the
//! arguments at the pullback are those of the call. The closure checks the lengths of
//! the slices it is given against the call's (`__ad::same_length`): its reverse sweep
//! reaches the elements the call checked without checking them again. [`applies`]
//! accepts:
//! - free functions without lifetime parameters, `impl Trait` or `dyn` in their
//!   parameters or result, and without a rule that replaces the reverse mode;
//! - parameters that are floats, references to float buffers, or integers and `bool`s,
//!   none of them bound `mut`;
//! - bodies that loop over ranges only (iterator chains over slices are lowered to
//!   such loops), keep as the user's tokens only `let`s of arithmetic (no `&`, no
//!   closure, no call but of a few integer and float methods and of `from` and `sum`),
//!   and call functions (not methods) without closure arguments.
//!
//! A callee's own state may borrow the arguments (a custom rule's pullback may), so the
//! closure does not keep it: the forward sweep makes the primal call, and the reverse
//! sweep the augmented call right before the call's pullback (a custom rule reached
//! through such a function runs once per call, as through any other). A `&mut` buffer
//! parameter's contents at the end of the forward sweep are kept too, and put back before
//! the reverse sweep: the caller hands the pullback the contents from before the call.
//!
//! Only a body that itself calls into libm (`exp`, `tanh`, ...), or runs a loop nest
//! without calls (a triangular matrix-vector product), gains from this; any other keeps
//! the recomputing pullback, as does everything else. Nested derivatives of
//! a caller do not use the state (they call `__ad_fwd___ad_aug` and
//! `__ad_fwd___ad_pull`).

use crate::expand::{Gen, ret_type};
use crate::ir::*;
use crate::signature::{Ret, Shape, is_integer_or_bool_name};
use proc_macro2::{Delimiter, TokenStream, TokenTree};
use quote::{format_ident, quote};

/// Whether `g`'s augmented call can return its reverse sweep as an owning closure.
pub fn applies(g: &Gen) -> bool {
    let f = &g.func.sig;
    !g.suffixed()
        && g.fail_rev.is_none()
        && f.generics.lifetimes().next().is_none()
        && match &g.sig.ret {
            Ret::Unit => true,
            Ret::Ty(t) => !mentions_borrowed_types(&quote!(#t)),
        }
        && g.sig.params.iter().all(|p| {
            let Some(ty) = &p.ty else { return false };
            let tokens = quote!(#ty);
            let plain = !p.by_value_mut && !mentions_borrowed_types(&tokens);
            plain
                && match &p.shape {
                    Shape::Scalar | Shape::Slice { .. } => true,
                    Shape::Other => is_integer_or_bool(ty),
                    _ => false,
                }
        })
        && block_keeps_no_borrow(&g.body.block)
        && (computes_slow_math(&g.body.block) || runs_call_free_loop_nest(&g.body.block))
}

/// Whether the body itself (not its callees) calls into libm (`exp`, `tanh`, ...): what
/// the recomputing pullback would compute twice. A body that only moves values between
/// its callees gains nothing from keeping its own recorded values, since its callees
/// are augmented again anyway, and would pay for recording them in the forward sweep.
fn computes_slow_math(b: &Block) -> bool {
    b.iter().any(|s| match s {
        Stmt::Let {
            op: Op::Math(name, _),
            ..
        }
        | Stmt::LetTuple {
            op: Op::Math(name, _),
            ..
        } => !crate::builtins::is_cheap_math(name),
        Stmt::If { then, els, .. } => computes_slow_math(then) || computes_slow_math(els),
        Stmt::For { body, .. } | Stmt::Loop { body, .. } => computes_slow_math(body),
        _ => false,
    })
}

/// Whether the body runs a loop inside a loop and calls nothing: work that grows faster
/// than what its forward sweep records (`qtimesx`'s triangle `out[j] += l[k] * x[i]`
/// records nothing; only the `out[i] = ..` that starts each element does), so that the
/// recomputing pullback would pay the nest again for little saved. A body with calls is
/// left to recompute, as its callees are augmented again anyway.
fn runs_call_free_loop_nest(b: &Block) -> bool {
    fn nest(b: &Block, inside_loop: bool) -> bool {
        b.iter().any(|s| match s {
            Stmt::For { body, .. } | Stmt::Loop { body, .. } => inside_loop || nest(body, true),
            Stmt::If { then, els, .. } => nest(then, inside_loop) || nest(els, inside_loop),
            _ => false,
        })
    }
    nest(b, false) && !calls_functions(b)
}

/// Integer and `bool` types by value.
fn is_integer_or_bool(ty: &syn::Type) -> bool {
    let syn::Type::Path(p) = ty else { return false };
    p.qself.is_none()
        && p.path
            .get_ident()
            .is_some_and(|i| is_integer_or_bool_name(&i.to_string()))
}

/// `impl Trait`, `dyn Trait` or a named lifetime: a type the closure cannot name, or one
/// that would tie it to the caller's borrows.
fn mentions_borrowed_types(ts: &TokenStream) -> bool {
    ts.clone().into_iter().any(|t| match t {
        TokenTree::Ident(i) => i == "impl" || i == "dyn",
        TokenTree::Punct(p) => p.as_char() == '\'',
        TokenTree::Group(g) => mentions_borrowed_types(&g.stream()),
        TokenTree::Literal(_) => false,
    })
}

fn block_keeps_no_borrow(b: &Block) -> bool {
    b.iter().all(|s| match s {
        Stmt::Let { op, .. } | Stmt::LetTuple { op, .. } => op_keeps_no_borrow(op),
        Stmt::Assign { .. } | Stmt::Push { .. } | Stmt::Fill { .. } | Stmt::CopyFrom { .. } => true,
        Stmt::Call(c) => call_keeps_no_borrow(c),
        Stmt::If { then, els, .. } => block_keeps_no_borrow(then) && block_keeps_no_borrow(els),
        Stmt::For { iter, body, .. } => {
            crate::carry::plain_range(iter).is_some() && block_keeps_no_borrow(body)
        }
        Stmt::Loop { body, .. } => block_keeps_no_borrow(body),
        // Only a `let` binds something the closure could capture.
        Stmt::Inactive(t) => !starts_with_let(t) || is_plain_arithmetic(t),
    })
}

/// A call of a function (not of a method, whose receiver the sweeps would hold) with no
/// closure argument. Its state is not kept (see [`Reverse::for_kept_state`]).
///
/// [`Reverse::for_kept_state`]: crate::reverse::Reverse::for_kept_state
fn call_keeps_no_borrow(c: &Call) -> bool {
    matches!(c.callee, Callee::Path(_) | Callee::Assoc(..))
        && c.args
            .iter()
            .all(|a| matches!(a, Arg::Val(_) | Arg::Ref(..) | Arg::Copied(_)))
}

fn op_keeps_no_borrow(op: &Op) -> bool {
    match op {
        Op::Call(c) => call_keeps_no_borrow(c),
        Op::Inactive(t) => is_plain_arithmetic(t),
        _ => true,
    }
}

fn starts_with_let(t: &TokenStream) -> bool {
    matches!(t.clone().into_iter().next(), Some(TokenTree::Ident(i)) if i == "let")
}

/// Methods whose result owns its value, for the types a `let` of plain arithmetic holds.
const OWNING_METHODS: &[&str] = &[
    "len",
    "is_empty",
    "min",
    "max",
    "abs",
    "abs_diff",
    "pow",
    "powi",
    "powf",
    "clamp",
    "saturating_sub",
    "saturating_add",
    "wrapping_sub",
    "wrapping_add",
    "rem_euclid",
    "div_euclid",
    "is_nan",
    "is_finite",
    "signum",
    "floor",
    "ceil",
    "round",
    "trunc",
    "sqrt",
    "exp",
    "ln",
    "count_ones",
    "trailing_zeros",
    "leading_zeros",
];

/// Functions called by path (`f64::from(k)`, and `<f64 as Sum>::sum(empty())`, which
/// starts the lowered sums) whose result owns its value.
const OWNING_FUNCTIONS: &[&str] = &["from", "sum", "product", "empty"];

/// Tokens of arithmetic on owned values: no `&`, no closure (`|`), no macro, and no call
/// but of [`OWNING_METHODS`] and [`OWNING_FUNCTIONS`].
fn is_plain_arithmetic(t: &TokenStream) -> bool {
    let tokens: Vec<TokenTree> = t.clone().into_iter().collect();
    let before = |k: usize, back: usize| k.checked_sub(back).map(|j| &tokens[j]);
    tokens.iter().enumerate().all(|(k, tok)| match tok {
        TokenTree::Punct(p) => !matches!(p.as_char(), '&' | '|' | '!' | '\'' | '#'),
        TokenTree::Group(g) => {
            let callee = match before(k, 1) {
                Some(TokenTree::Ident(i)) if g.delimiter() == Delimiter::Parenthesis => {
                    Some(i.to_string())
                }
                _ => None,
            };
            let owning = callee.as_ref().is_none_or(|name| match before(k, 2) {
                Some(TokenTree::Punct(p)) if p.as_char() == '.' => {
                    OWNING_METHODS.contains(&name.as_str())
                }
                Some(TokenTree::Punct(p)) if p.as_char() == ':' => {
                    OWNING_FUNCTIONS.contains(&name.as_str())
                }
                _ => false,
            });
            owning && is_plain_arithmetic(&g.stream())
        }
        TokenTree::Ident(_) | TokenTree::Literal(_) => true,
    })
}

impl Gen<'_> {
    /// `__ad_aug`, running the recording forward sweep and returning the reverse sweep as
    /// a closure, and `__ad_pull`, calling it (see the module documentation).
    pub fn protocol_reverse_kept(
        &self,
        an: &crate::analysis::Analysis,
        pull_params: &[TokenStream],
        convert: &TokenStream,
        any_sink: &[TokenStream],
    ) -> TokenStream {
        let has_ret = !matches!(self.sig.ret, Ret::Unit);
        let r = ret_type(&self.sig.ret);
        let mut closure_params = Vec::new();
        let mut closure_tys = Vec::new();
        let mut call_args = Vec::new();
        let mut adjoint_tys = Vec::new();
        let mut adjoint_vals = Vec::new();
        let mut adj_decls = TokenStream::new();
        let mut finals = TokenStream::new();
        let mut put_back = TokenStream::new();
        let mut lengths = TokenStream::new();
        let mut sinks = TokenStream::new();
        for p in &self.sig.params {
            let (n, ty) = (&p.name, p.ty.as_ref().expect("not a receiver"));
            closure_params.push(quote!(#n: #ty));
            closure_tys.push(quote!(#ty));
            call_args.push(quote!(#n));
        }
        // The augmented call takes the parameters; the closure takes them again, then
        // the shadows and the cotangent.
        let aug_params = closure_params.clone();
        for p in &self.sig.params {
            let n = &p.name;
            let b = adjoint_name(n);
            match &p.shape {
                Shape::Slice { mutable } => {
                    // The reverse sweep reaches the elements the forward sweep checked
                    // without checking them again: the pullback must be given a slice as
                    // long as the call's.
                    let len = format_ident!("__ad_len_{}", n);
                    lengths.extend(quote!(let #len = #n.len();));
                    put_back.extend(quote!(__ad::same_length(#n.len(), #len);));
                    if *mutable && an.needs(n) {
                        let f = format_ident!("__ad_final_{}", n);
                        finals.extend(quote!(let #f = __ad::snapshot(&*#n);));
                        put_back.extend(quote!(__ad::restore(&mut *#n, #f);));
                    }
                    let e = p.elem.as_ref().expect("a slice's element type");
                    closure_params.push(quote!(#b: &mut [#e]));
                    closure_tys.push(quote!(&mut [#e]));
                    call_args.push(quote!(#b));
                }
                Shape::Scalar => {
                    let ty = p.ty.as_ref().expect("not a receiver");
                    adj_decls.extend(quote!(let mut #b = __ad::zero_like(&#n);));
                    let i = syn::Index::from(adjoint_tys.len());
                    let k = format_ident!("__ad_k_{}", n);
                    sinks.extend(quote!(__ad::ScalarSink::add(#k, __ad_adjoints.#i);));
                    adjoint_tys.push(quote!(#ty));
                    adjoint_vals.push(quote!(#b));
                }
                _ => {}
            }
        }
        let seed = if has_ret && self.body.ret_shape == crate::ir::RetShape::Value {
            // A struct's cotangent, held as a value (`None` for a zero one).
            closure_params.push(quote!(__ad_dret: ::core::option::Option<#r>));
            closure_tys.push(quote!(::core::option::Option<#r>));
            call_args.push(quote!(__ad::StructCotangent::into_option(__ad_dret)));
            Some(quote!(__ad_dret))
        } else if has_ret {
            closure_params.push(quote!(__ad_dret: #r));
            closure_tys.push(quote!(#r));
            call_args.push(quote!(__ad_dret));
            Some(quote!(__ad_dret))
        } else {
            None
        };
        let rev = crate::reverse::Reverse::new(an, self.kinds).for_kept_state();
        let core = self.reverse_core_parts(rev, seed, adj_decls);
        let (tapes, fwd, primal, back) = (core.tapes, core.forward, core.primal, core.reverse);
        let adj_ty = quote!((#(#adjoint_tys,)*));
        let closure_ty = quote!(impl ::core::ops::FnOnce(#(#closure_tys),*) -> #adj_ty);
        let captured = crate::signature::capturable_params(&self.func.sig.generics, false);
        let (gens, wh) = self.generics_without(&[]);
        let aug = self.protocol_name("aug");
        let pull = self.protocol_name("pull");
        let skip = crate::expand::skip_without_adjoints(&self.body.block, any_sink);
        quote! {
            #[doc(hidden)]
            #[inline]
            #[allow(unused, unused_mut, unused_parens, non_snake_case, clippy::all)]
            pub fn #aug #gens (#(#aug_params),*) -> (#r, #closure_ty + use<#(#captured),*>) #wh {
                use ::autodiff_core::__private as __ad;
                #tapes
                #fwd
                let __ad_primal = #primal;
                #finals
                #lengths
                (__ad_primal, move |#(#closure_params),*| -> #adj_ty {
                    let __ad_mark = ();
                    #put_back
                    #back
                    (#(#adjoint_vals,)*)
                })
            }
            #[doc(hidden)]
            #[inline]
            #[allow(unused, unused_mut, unused_parens, non_snake_case, clippy::all)]
            pub fn #pull #gens (__ad_state: #closure_ty, #(#pull_params),*) #wh {
                use ::autodiff_core::__private as __ad;
                #skip
                #convert
                let __ad_adjoints = __ad_state(#(#call_args),*);
                #sinks
            }
        }
    }
}
