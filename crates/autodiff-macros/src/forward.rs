//! Forward mode: each active value is paired with its tangent, computed right after it.

use crate::analysis::Analysis;
use crate::calls::{Refs, forward_call, primal_call};
use crate::collections::HashSet;
use crate::ir::*;
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

pub struct Forward<'a> {
    pub an: &'a Analysis,
    pub refs: Refs<'a>,
    pub replays: Replays,
}

/// Where the forward transform of a reverse companion (a Hessian-vector product's code)
/// may reach an element without a bounds check, as the companion did.
///
/// The companion's replayed accesses (`__ad::replayed_at`) are read back as indices
/// marked `__ad::replayed_index(i)`: the companion's forward sweep indexed the same slice
/// (or its primal, as long as the shadow) at `i` earlier in the call, which checked it.
/// The forward transform keeps the companion's statements in their order, so that holds
/// again for a base whose length nothing in between changes: a local buffer of fixed
/// length (`fixed_lengths::length_locked_locals`), a slice parameter of the user's, and
/// a shadow parameter after the companion's statement that cuts it to its primal's
/// length (`let __nb_x = &mut __nb_x[..x.len()];`, kept as written by
/// `Lowerer::keeping_shadow_cuts`). Other parameters that generated code names (`__`)
/// keep their checks. The element of the tangent is in bounds too where the tangent is
/// at least as long: a slice parameter's, cut to the parameter's length on entry, and a
/// fixed local's, made as long. Any other marked index is indexing as written, and so is
/// every one in the forward transform of code that is not a reverse companion's (a third
/// order, forward over an H·v companion, whose speed matters less than the cost of type
/// checking replayed accesses in every function's variants).
#[derive(Default)]
pub struct Replays {
    /// Bases whose marked indices are in bounds.
    pub primal: HashSet<String>,
    /// Bases whose tangent is at least as long as they are.
    pub tangent: HashSet<String>,
}

impl Replays {
    /// The replays of a forward transform of `body` with the parameters `params`: their
    /// slice tangents are cut to their primal's length on entry.
    pub fn of(body: &Block, params: &[crate::signature::Param]) -> Self {
        let locals = crate::fixed_lengths::length_locked_locals(body);
        let slices = params
            .iter()
            .filter(|p| matches!(p.shape, crate::signature::Shape::Slice { .. }))
            .map(|p| p.name.to_string());
        let mut r = Replays {
            primal: locals.clone(),
            tangent: locals,
        };
        for name in slices {
            if !name.starts_with("__") {
                r.primal.insert(name.clone());
            }
            r.tangent.insert(name);
        }
        // `let __nb_x = &mut __nb_x[..x.len()];` before any element is reached: the
        // shadow is as long as its primal from there on (`Lowerer::keeping_shadow_cuts`).
        for s in body {
            match s {
                Stmt::Inactive(t) => {
                    if let Some((shadow, primal)) = shadow_cut(t)
                        && r.primal.contains(&primal.to_string())
                        && r.tangent.contains(&shadow.to_string())
                    {
                        r.primal.insert(shadow.to_string());
                    }
                }
                Stmt::Let { op, .. } if !matches!(op, Op::Load(_) | Op::Call(_)) => {}
                _ => break,
            }
        }
        r
    }

    /// The place `p` (its tangent with `tangent`), reached for a write with `write`.
    fn access(&self, p: &Place, tangent: bool, write: bool) -> TokenStream {
        let [Proj::Index(i)] = p.proj.as_slice() else {
            return match tangent {
                true => p.tangent(),
                false => p.primal(),
            };
        };
        let b = match tangent {
            true => tangent_name(&p.base),
            false => p.base.clone(),
        };
        let Some(index) = replayed_index(i) else {
            return quote!(#b[#i]);
        };
        // A marked index not replayed is indexing as written, without the marker's call.
        let plain = || quote!(#b[#index]);
        let base = p.base.to_string();
        if !self.primal.contains(&base) || (tangent && !self.tangent.contains(&base)) {
            return plain();
        }
        replayed_element(&b, &index, write).unwrap_or_else(plain)
    }
}

/// `(s, x)` of the statement `let s = &mut s[..x.len()];`.
fn shadow_cut(t: &TokenStream) -> Option<(Ident, Ident)> {
    let syn::Stmt::Local(l) = syn::parse2::<syn::Stmt>(t.clone()).ok()? else {
        return None;
    };
    let syn::Pat::Ident(s) = &l.pat else {
        return None;
    };
    let syn::Expr::Reference(r) = &*l.init.as_ref()?.expr else {
        return None;
    };
    let syn::Expr::Index(ix) = &*r.expr else {
        return None;
    };
    let (syn::Expr::Path(base), syn::Expr::Range(range)) = (&*ix.expr, &*ix.index) else {
        return None;
    };
    let Some(syn::Expr::MethodCall(len)) = range.end.as_deref() else {
        return None;
    };
    let syn::Expr::Path(x) = &*len.receiver else {
        return None;
    };
    let cut = r.mutability.is_some()
        && s.by_ref.is_none()
        && s.mutability.is_none()
        && base.path.is_ident(&s.ident)
        && range.start.is_none()
        && matches!(range.limits, syn::RangeLimits::HalfOpen(_))
        && len.method == "len"
        && len.args.is_empty();
    Some((s.ident.clone(), x.path.get_ident()?.clone())).filter(|_| cut)
}

/// `i` of the index tokens `__ad::replayed_index(i)` (read token by token: every
/// element access of a forward transform asks).
fn replayed_index(t: &TokenStream) -> Option<TokenStream> {
    let tts: Vec<proc_macro2::TokenTree> = t.clone().into_iter().collect();
    match crate::lower::runtime_call_at(&tts) {
        Some((f, args)) if f == "replayed_index" && tts.len() == crate::lower::RUNTIME_CALL_LEN => {
            Some(args.stream())
        }
        _ => None,
    }
}

/// The primal value of an operation (calls excepted).
pub fn primal_op(op: &Op) -> TokenStream {
    match op {
        Op::Use(o) => o.primal(),
        Op::Neg(o) => {
            let o = o.primal();
            quote!(-#o)
        }
        Op::Bin(b, x, y) => {
            let (x, y) = (x.primal(), y.primal());
            match b {
                BinOp::Add => quote!(#x + #y),
                BinOp::Sub => quote!(#x - #y),
                BinOp::Mul => quote!(#x * #y),
                BinOp::Div => quote!(#x / #y),
                BinOp::Rem => quote!(#x % #y),
            }
        }
        Op::Math(name, ops) => {
            let m = format_ident!("{}", name);
            let recv = ops[0].primal();
            let rest: Vec<TokenStream> = ops[1..].iter().map(Operand::primal).collect();
            quote!(#recv.#m(#(#rest),*))
        }
        Op::Cast(o, ty) => cast(o.primal(), ty),
        Op::Load(p) => p.primal(),
        Op::Pop(p) => {
            let p = p.primal();
            quote!(__ad::take(#p.pop()))
        }
        Op::Inactive(t) | Op::NewVec(t) => t.clone(),
        Op::VecRepeat(o, n) => {
            let o = o.primal();
            quote!(::std::vec![#o; #n])
        }
        Op::ArrRepeat(o, n) => {
            let o = o.primal();
            quote!([#o; #n])
        }
        Op::ArrLit(ops, is_vec) => {
            let ops: Vec<TokenStream> = ops.iter().map(Operand::primal).collect();
            if *is_vec {
                quote!(::std::vec![#(#ops),*])
            } else {
                quote!([#(#ops),*])
            }
        }
        Op::CloneOf(p, kind) => copy_of(p.primal(), *kind),
        Op::StructLit(path, fields) => struct_lit(path, fields, |_, o| o.primal()),
        Op::Call(_) => unreachable!("calls are rendered with their arguments"),
    }
}

/// A copy of the place `p` (rendered): a `Vec` of its elements, or a value of its own
/// type through `__ad::copy_of`, which a companion differentiated again reads back as
/// the same copy.
fn copy_of(p: TokenStream, kind: CopyKind) -> TokenStream {
    match kind {
        CopyKind::ToVec => quote!(<[_]>::to_vec(&#p[..])),
        CopyKind::SameType => quote!(__ad::copy_of(&#p)),
        // Method syntax: `self` (a `&mut S`) and a local `S` both give an `S`.
        CopyKind::Struct { behind_ref: false } => quote!((#p).clone()),
        CopyKind::Struct { behind_ref: true } => nested_copy(quote!(&*(#p)), quote!(nested_copy())),
    }
}

/// A copy of the struct `r` refers to (`call` is `nested_copy()`), or a write of it
/// (`nested_copy_into(&mut *dst)`), chosen by the struct's type: a clone where it is
/// `Clone`, a panic naming the fix where it is not (see [`CopyKind::Struct`]). Lowered
/// again, these are `__ad::snapshot(r)` and `__ad::restore_from(&mut *dst, r)`.
fn nested_copy(r: TokenStream, call: TokenStream) -> TokenStream {
    quote!(__ad::nested_copy_of(#r).#call)
}

/// `Path { member: value, .. }`, each member's value rendered from its operand by
/// `value` (the braced form builds tuple structs too: `Pair { 0: a, 1: b }`).
pub fn struct_lit(
    path: &syn::Path,
    fields: &[(syn::Member, Operand)],
    mut value: impl FnMut(&syn::Member, &Operand) -> TokenStream,
) -> TokenStream {
    let members = fields.iter().map(|(m, _)| m);
    let values: Vec<TokenStream> = fields.iter().map(|(m, o)| value(m, o)).collect();
    quote!(#path { #(#members: #values),* })
}

/// The tangent of an operand: its tangent local if it is active, a zero shaped like it
/// otherwise.
pub fn tangent_or_zero(an: &Analysis, o: &Operand) -> TokenStream {
    match o {
        Operand::Var(v) if an.is_active(v) => {
            let t = tangent_name(v);
            quote!(#t)
        }
        // An integer literal of no written type (`(y, 1)` returned as `(f64, usize)`): a
        // zero literal, typed by where it goes as the literal is.
        Operand::Lit(t) if is_unsuffixed_integer(t) => quote!(0),
        o => {
            let p = o.primal();
            quote!(__ad::zero_like(&#p))
        }
    }
}

fn is_unsuffixed_integer(t: &TokenStream) -> bool {
    let mut e: syn::Expr = match syn::parse2(t.clone()) {
        Ok(e) => e,
        Err(_) => return false,
    };
    while let syn::Expr::Paren(p) = e {
        e = *p.expr;
    }
    matches!(e, syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) if i.suffix().is_empty())
}

/// The partial derivatives of a builtin method as an expression (`__ad::d::sin(x, v)`).
pub fn partials(name: &str, ops: &[Operand], out: TokenStream) -> TokenStream {
    let f = format_ident!("{}", name);
    let args: Vec<TokenStream> = ops.iter().map(Operand::primal).collect();
    quote!(__ad::d::#f(#(#args,)* #out))
}

/// Indices of the operands of a builtin method that carry a derivative.
pub fn diff_operands(name: &str, ops: &[Operand]) -> Vec<usize> {
    (0..ops.len())
        .filter(|&i| !crate::builtins::math_arg_is_inert(name, i))
        .collect()
}

/// Whether `t` writes a buffer out as a literal: `vec![..]` or `[..; n]`.
fn is_literal_buffer(t: &TokenStream) -> bool {
    let tts: Vec<proc_macro2::TokenTree> = t.clone().into_iter().collect();
    match tts.first() {
        Some(proc_macro2::TokenTree::Group(g)) => g.delimiter() == proc_macro2::Delimiter::Bracket,
        _ => {
            tts.windows(2).any(|w| {
                matches!(&w[0], proc_macro2::TokenTree::Ident(i) if i == "vec")
                    && matches!(&w[1], proc_macro2::TokenTree::Punct(p) if p.as_char() == '!')
            }) || is_array_constructor(t)
        }
    }
}

/// `Array1::zeros(n)`, `ndarray::Array2::from_elem((r, c), 1.0)`: an `ndarray` array
/// whose elements start as constants (see `Lowerer::is_constant_array_constructor`).
pub fn is_array_constructor(t: &TokenStream) -> bool {
    let tts: Vec<proc_macro2::TokenTree> = t.clone().into_iter().collect();
    tts.windows(2).any(|w| {
        matches!(&w[0], proc_macro2::TokenTree::Ident(i)
            if crate::builtins::is_ndarray_type_name(&i.to_string()))
            && matches!(&w[1], proc_macro2::TokenTree::Punct(p) if p.as_char() == ':')
    })
}

/// `v as ty`, or, for a type that is not a primitive (a float type parameter `T`, where
/// `as` is not Rust), the conversion `__ad::cast_to::<T, _>(v)`.
pub fn cast(v: TokenStream, ty: &syn::Type) -> TokenStream {
    if crate::signature::is_primitive_number(ty) {
        quote!(#v as #ty)
    } else {
        quote!(__ad::cast_to::<#ty, _>(#v))
    }
}

/// `p.i` for a tuple of partials, or `p` when there is one.
pub fn partial_at(p: &Ident, i: usize, n: usize) -> TokenStream {
    if n == 1 {
        quote!(#p)
    } else {
        let i = syn::Index::from(i);
        quote!(#p.#i)
    }
}

impl Forward<'_> {
    /// A reverse companion's `if __ad::nonzero(ḡ) { .. }` (an adjoint propagated only when
    /// it is not zero, see `reverse.rs`), differentiated again: the branch runs also where
    /// the adjoint is zero but its tangent is not, since the tangents the branch computes
    /// then carry `ḡ̇ · ∂`. Each `__ad::nonzero(v)` of an active `v` becomes
    /// `(__ad::nonzero(v) || __ad::nonzero(v̇))`.
    fn nonzero_with_tangents(&self, cond: TokenStream) -> TokenStream {
        use proc_macro2::TokenTree;
        let toks: Vec<TokenTree> = cond.into_iter().collect();
        let mut out = TokenStream::new();
        let mut i = 0;
        while i < toks.len() {
            if let Some(v) = nonzero_test_at(&toks[i..])
                && self.an.is_active(&v)
            {
                let d = tangent_name(&v);
                out.extend(quote!((__ad::nonzero(#v) || __ad::nonzero(#d))));
                i += NONZERO_TEST_LEN;
                continue;
            }
            out.extend([match &toks[i] {
                TokenTree::Group(g) => {
                    let mut inner = proc_macro2::Group::new(
                        g.delimiter(),
                        self.nonzero_with_tangents(g.stream()),
                    );
                    inner.set_span(g.span());
                    TokenTree::Group(inner)
                }
                t => t.clone(),
            }]);
            i += 1;
        }
        out
    }

    /// The `DiffFn`s of the closures passed to a call, built before it.
    fn closures(&self, c: &Call) -> TokenStream {
        c.args
            .iter()
            .filter_map(|a| match a {
                Arg::Closure(cl) => Some(crate::closures::forward_build(cl, c, self.an)),
                _ => None,
            })
            .collect()
    }

    fn tan(&self, o: &Operand) -> Option<TokenStream> {
        if self.an.operand_active(o) {
            let t = tangent_name(o.var().unwrap());
            Some(quote!(#t))
        } else {
            None
        }
    }

    fn tan_or_zero(&self, o: &Operand) -> TokenStream {
        tangent_or_zero(self.an, o)
    }

    /// The tangent of `var = op`, or `None` when it is zero.
    fn tangent_op(&self, op: &Op, var: &TokenStream) -> Option<TokenStream> {
        match op {
            Op::Use(o) => self.tan(o),
            Op::Neg(o) => self.tan(o).map(|t| quote!(-#t)),
            Op::Bin(b, x, y) => {
                let (tx, ty) = (self.tan(x), self.tan(y));
                let (px, py) = (x.primal(), y.primal());
                match (b, tx, ty) {
                    (_, None, None) => None,
                    (BinOp::Add, Some(a), Some(b)) => Some(quote!(#a + #b)),
                    (BinOp::Add, Some(a), None) | (BinOp::Add, None, Some(a)) => Some(a),
                    (BinOp::Sub, Some(a), Some(b)) => Some(quote!(#a - #b)),
                    (BinOp::Sub, Some(a), None) => Some(a),
                    (BinOp::Sub, None, Some(b)) => Some(quote!(-#b)),
                    (BinOp::Mul, Some(a), Some(b)) => Some(quote!(#a * #py + #px * #b)),
                    (BinOp::Mul, Some(a), None) => Some(quote!(#a * #py)),
                    (BinOp::Mul, None, Some(b)) => Some(quote!(#px * #b)),
                    (BinOp::Div, Some(a), Some(b)) => Some(quote!((#a - #var * #b) / #py)),
                    (BinOp::Div, Some(a), None) => Some(quote!(#a / #py)),
                    (BinOp::Div, None, Some(b)) => Some(quote!(-(#var * #b) / #py)),
                    // `x % y = x - trunc(x / y) · y`, the quotient piecewise constant.
                    (BinOp::Rem, Some(a), Some(b)) => {
                        Some(quote!(#a + __ad::rem_partial(#px, #py) * #b))
                    }
                    (BinOp::Rem, Some(a), None) => Some(a),
                    (BinOp::Rem, None, Some(b)) => Some(quote!(__ad::rem_partial(#px, #py) * #b)),
                }
            }
            Op::Math(name, ops) => {
                let idx = diff_operands(name, ops);
                let terms: Vec<(usize, TokenStream)> = idx
                    .iter()
                    .enumerate()
                    .filter_map(|(k, &i)| self.tan(&ops[i]).map(|t| (k, t)))
                    .collect();
                if terms.is_empty() {
                    return None;
                }
                let p = format_ident!("__ad_p");
                let ps = partials(name, ops, var.clone());
                let n = idx.len();
                // Where a partial can be infinite at a finite value (`sqrt` at 0), a zero
                // tangent contributes zero, as a zero adjoint does in the reverse sweep,
                // rather than `0 · ∞`.
                let singular = crate::builtins::has_singular_partials(name);
                let sum: Vec<TokenStream> = terms
                    .iter()
                    .map(|(k, t)| {
                        let pk = partial_at(&p, *k, n);
                        if singular {
                            quote!((if __ad::nonzero(#t) { #pk * #t } else { #t }))
                        } else {
                            quote!(#pk * #t)
                        }
                    })
                    .collect();
                Some(quote!({ let #p = #ps; #(#sum)+* }))
            }
            // Dispatched on the type: an integer's tangent (a shadow's copy of a count)
            // converts to zero.
            Op::Cast(o, ty) => self
                .tan(o)
                .map(|t| quote!(__ad::cast_tangent::<#ty, _>(#t))),
            Op::Load(p) => self
                .an
                .place_active(p)
                .then(|| self.replays.access(p, true, false)),
            // As long as the primal (the length evaluated once): see `Replays`.
            Op::VecRepeat(o, _) => {
                let t = self.tan_or_zero(o);
                Some(quote!(::std::vec![#t; #var.len()]))
            }
            Op::ArrRepeat(o, n) => {
                let t = self.tan_or_zero(o);
                Some(quote!([#t; #n]))
            }
            // An element without a tangent gets a zero read from the literal built, whose
            // elements it has moved (a struct value is not `Copy`).
            Op::ArrLit(ops, is_vec) => {
                let ts: Vec<TokenStream> = ops
                    .iter()
                    .enumerate()
                    .map(|(k, o)| {
                        self.tan(o)
                            .unwrap_or_else(|| quote!(__ad::zero_like(&#var[#k])))
                    })
                    .collect();
                Some(if *is_vec {
                    quote!(::std::vec![#(#ts),*])
                } else {
                    quote!([#(#ts),*])
                })
            }
            // A buffer written as a literal (`vec![vec![f64::INFINITY; m]; n]`,
            // `[[1.0; 3]; 3]`) starts with zero tangents; an empty one (`Vec::new()`, a
            // tape of a companion differentiated again) starts empty, as its primal.
            Op::NewVec(t) if is_literal_buffer(t) => Some(quote!(__ad::zero_like(&#var))),
            Op::NewVec(t) => Some(t.clone()),
            Op::CloneOf(p, kind) => self.an.place_active(p).then(|| copy_of(p.tangent(), *kind)),
            Op::Pop(p) => self.an.place_active(p).then(|| {
                let t = p.tangent();
                quote!(__ad::take(#t.pop()))
            }),
            // A member without a tangent gets a zero of the member's type, read from the
            // struct built (a literal `3` alone would be an `i32`).
            Op::StructLit(path, fields) => Some(struct_lit(path, fields, |m, o| {
                self.tan(o)
                    .unwrap_or_else(|| quote!(__ad::zero_like(&#var.#m)))
            })),
            Op::Inactive(_) => None,
            Op::Call(_) => unreachable!("calls are handled by the caller"),
        }
    }

    pub fn block(&self, b: &Block) -> TokenStream {
        b.iter().map(|s| self.stmt(s)).collect()
    }

    fn stmt(&self, s: &Stmt) -> TokenStream {
        match s {
            Stmt::Let { var, mutable, op } => {
                let m = if *mutable { quote!(mut) } else { quote!() };
                let active = self.an.is_active(var);
                let dv = tangent_name(var);
                if let Op::Call(c) = op {
                    return if self.an.call_uses_protocol(c) {
                        let call = forward_call(c, self.an, &self.refs);
                        let build = self.closures(c);
                        let call = quote!({ #build #call });
                        if active {
                            quote!(let (#m #var, #m #dv) = #call;)
                        } else {
                            quote!(let #m #var = #call.0;)
                        }
                    } else {
                        let call = primal_call(c, &self.refs);
                        if active {
                            // A constant call's value made active later, as the receiver
                            // of a method given an active argument (`w.mul(&z)`).
                            quote!(let #m #var = #call; let #m #dv = __ad::zero_like(&#var);)
                        } else {
                            quote!(let #m #var = #call;)
                        }
                    };
                }
                let p = match op {
                    Op::Load(pl) => self.replays.access(pl, false, false),
                    _ => primal_op(op),
                };
                if !active {
                    return quote!(let #m #var = #p;);
                }
                let t = self.tangent_op(op, &quote!(#var)).unwrap_or_else(|| {
                    if is_accumulator_start(op) {
                        // An adjoint of a companion differentiated again: its tangent only
                        // receives `+=` too.
                        quote!(__ad::accumulator_zero(&#var))
                    } else {
                        quote!(__ad::zero_like(&#var))
                    }
                });
                quote!(let #m #var = #p; let #m #dv = #t;)
            }
            Stmt::LetTuple { vars, op } => self.let_tuple(vars, op),
            Stmt::Assign { place, kind, val } => self.assign(place, *kind, val),
            Stmt::Push { place, val, copy } => {
                let (p, v) = (place.primal(), pushed_value(val.primal(), *copy));
                let mut out = quote!(#p.push(#v););
                if self.an.place_active(place) {
                    let t = place.tangent();
                    let tv = pushed_value(self.tan_or_zero(val), *copy);
                    out.extend(quote!(#t.push(#tv);));
                }
                out
            }
            Stmt::Fill { place, val } => {
                let (p, v) = (place.primal(), val.primal());
                let mut out = quote!(#p.fill(#v););
                if self.an.place_active(place) {
                    let t = place.tangent();
                    let tv = self.tan_or_zero(val);
                    out = quote!(#t.fill(#tv); #out);
                }
                out
            }
            Stmt::CopyFrom {
                dst,
                src,
                mode: CopyMode::Struct { behind_ref },
            } => {
                // Method syntax, as for the clone that saved it.
                let copy = |d: TokenStream, s: TokenStream| {
                    if *behind_ref {
                        let c = nested_copy(quote!(&#s), quote!(nested_copy_into(&mut *(#d))));
                        quote!(#c;)
                    } else {
                        quote!((#d).clone_from(&#s);)
                    }
                };
                let (d, s) = (dst.primal(), src.primal());
                let mut out = copy(d, s.clone());
                if self.an.place_active(dst) {
                    let td = dst.tangent();
                    let ts = if self.an.place_active(src) {
                        src.tangent()
                    } else {
                        quote!(__ad::zero_like(&#s))
                    };
                    out.extend(copy(td, ts));
                }
                out
            }
            Stmt::CopyFrom {
                dst,
                src,
                mode: CopyMode::Swap,
            } => {
                let (d, s) = (dst.primal(), src.primal());
                let mut out = quote!(::core::mem::swap(&mut #d, &mut #s););
                // (The analysis makes both active, or neither.)
                if self.an.place_active(dst) && self.an.place_active(src) {
                    let (td, ts) = (dst.tangent(), src.tangent());
                    out.extend(quote!(::core::mem::swap(&mut #td, &mut #ts);));
                }
                out
            }
            Stmt::CopyFrom { dst, src, mode } => {
                let resize = &(*mode == CopyMode::Resized);
                let (d, s) = (dst.primal(), src.primal());
                // `dst = src;` of whole buffers: `dst` (and its tangent) take `src`'s length.
                let fit = |d: &TokenStream, s: &TokenStream| {
                    if *resize {
                        quote!(__ad::resize_like(&mut #d, &#s[..]);)
                    } else {
                        quote!()
                    }
                };
                let mut out = fit(&d, &s);
                out.extend(quote!(#d.clone_from_slice(&#s[..]);));
                if self.an.place_active(dst) {
                    let td = dst.tangent();
                    if self.an.place_active(src) {
                        let ts = src.tangent();
                        out.extend(fit(&td, &ts));
                        out.extend(quote!(#td.clone_from_slice(&#ts[..]);));
                    } else {
                        out.extend(fit(&td, &s));
                        out.extend(quote!(__ad::fill_zero(&mut #td[..]);));
                    }
                }
                out
            }
            Stmt::Call(c) => {
                if self.an.call_uses_protocol(c) {
                    let call = forward_call(c, self.an, &self.refs);
                    let build = self.closures(c);
                    quote!(let _ = { #build #call };)
                } else {
                    let call = primal_call(c, &self.refs);
                    quote!(#call;)
                }
            }
            Stmt::If {
                cond,
                then,
                els,
                outs,
                then_vals,
                else_vals,
            } => {
                let tb = self.block(then);
                let eb = self.block(els);
                let cond = &self.nonzero_with_tangents(cond.clone());
                if outs.is_empty() {
                    return quote!(if #cond { #tb } else { #eb });
                }
                let (pat, tv, ev) = self.branch_values(outs, then_vals, else_vals);
                quote!(let (#(#pat),*) = if #cond { #tb (#(#tv),*) } else { #eb (#(#ev),*) };)
            }
            Stmt::For {
                pat,
                iter,
                body,
                exit,
            } => {
                let b = self.block(body);
                let ex = exit.as_ref().map(|e| quote!(if #e { break; }));
                quote!(for #pat in #iter { #b #ex })
            }
            Stmt::Loop { body, exit } => {
                let b = self.block(body);
                quote!(loop { #b if #exit { break; } })
            }
            Stmt::Inactive(t) => t.clone(),
        }
    }

    fn branch_values(
        &self,
        outs: &[Ident],
        then_vals: &[Operand],
        else_vals: &[Operand],
    ) -> (Vec<TokenStream>, Vec<TokenStream>, Vec<TokenStream>) {
        let mut pat = Vec::new();
        let mut tv = Vec::new();
        let mut ev = Vec::new();
        for ((o, a), b) in outs.iter().zip(then_vals).zip(else_vals) {
            pat.push(quote!(#o));
            tv.push(a.primal());
            ev.push(b.primal());
            if self.an.is_active(o) {
                let d = tangent_name(o);
                pat.push(quote!(#d));
                tv.push(self.tan_or_zero(a));
                ev.push(self.tan_or_zero(b));
            }
        }
        (pat, tv, ev)
    }

    fn let_tuple(&self, vars: &[Ident], op: &Op) -> TokenStream {
        let active = vars.iter().any(|v| self.an.is_active(v));
        let dvars: Vec<Ident> = vars.iter().map(tangent_name).collect();
        match op {
            Op::Call(c) if self.an.call_uses_protocol(c) => {
                let call = forward_call(c, self.an, &self.refs);
                let build = self.closures(c);
                let call = quote!({ #build #call });
                if active {
                    quote!(let ((#(#vars),*), (#(#dvars),*)) = #call;)
                } else {
                    quote!(let ((#(#vars),*), _) = #call;)
                }
            }
            Op::Call(c) => {
                let call = primal_call(c, &self.refs);
                quote!(let (#(#vars),*) = #call;)
            }
            Op::Use(o) => {
                let p = o.primal();
                match self.tan(o) {
                    Some(t) if active => quote!(let (#(#vars),*) = #p; let (#(#dvars),*) = #t;),
                    _ if active => {
                        quote!(let (#(#vars),*) = #p; #(let #dvars = __ad::zero_like(&#vars);)*)
                    }
                    _ => quote!(let (#(#vars),*) = #p;),
                }
            }
            Op::Math(name, ops) if name == "sin_cos" => {
                let p = primal_op(op);
                let (s, c) = (&vars[0], &vars[1]);
                let (ds, dc) = (&dvars[0], &dvars[1]);
                match self.tan(&ops[0]) {
                    Some(t) if active => {
                        quote!(let (#s, #c) = #p; let #ds = #t * #c; let #dc = -(#t * #s);)
                    }
                    _ if active => {
                        quote!(let (#s, #c) = #p; let #ds = __ad::zero_like(&#s); let #dc = __ad::zero_like(&#c);)
                    }
                    _ => quote!(let (#s, #c) = #p;),
                }
            }
            _ => {
                let p = primal_op(op);
                quote!(let (#(#vars),*) = #p;)
            }
        }
    }

    fn assign(&self, place: &Place, kind: AssignKind, val: &Operand) -> TokenStream {
        let pw = self.replays.access(place, false, true);
        let p = self.replays.access(place, false, false);
        let v = val.primal();
        let primal = match kind {
            AssignKind::Set => quote!(#pw = #v;),
            AssignKind::Add => quote!(#pw += #v;),
            AssignKind::Sub => quote!(#pw -= #v;),
            AssignKind::Mul => quote!(#pw *= #v;),
            AssignKind::Div => quote!(#pw /= #v;),
        };
        if !self.an.place_active(place) {
            return primal;
        }
        let tw = self.replays.access(place, true, true);
        let t = self.replays.access(place, true, false);
        let tv = self.tan(val);
        let tangent = match (kind, tv) {
            (AssignKind::Set, Some(tv)) => quote!(#tw = #tv;),
            // Shaped as the new value, after it: the old tangent may have been moved away
            // (`let g = b; b = zero_like(&g);`, a reverse sweep differentiated again).
            (AssignKind::Set, None) => return quote!(#primal #tw = __ad::zero_like(&#p);),
            (AssignKind::Add, Some(tv)) => quote!(#tw += #tv;),
            (AssignKind::Sub, Some(tv)) => quote!(#tw -= #tv;),
            (AssignKind::Add | AssignKind::Sub, None) => quote!(),
            (AssignKind::Mul, Some(tv)) => quote!(#tw = #t * #v + #p * #tv;),
            (AssignKind::Mul, None) => quote!(#tw = #t * #v;),
            (AssignKind::Div, Some(tv)) => quote!(#tw = (#t - #p / #v * #tv) / #v;),
            (AssignKind::Div, None) => quote!(#tw = #t / #v;),
        };
        // The tangent update reads the old primal value, so it comes first.
        quote!(#tangent #primal)
    }
}

/// `__ad::accumulator_zero(..)`: the start of an adjoint in a companion being
/// differentiated again.
fn is_accumulator_start(op: &Op) -> bool {
    match op {
        Op::Use(Operand::Lit(t)) | Op::Inactive(t) => t
            .to_string()
            .trim_start_matches('(')
            .trim_start()
            .starts_with("__ad :: accumulator_zero"),
        _ => false,
    }
}

/// The tokens of `__ad::nonzero(v)`: `__ad`, `:`, `:`, `nonzero` and the parenthesis.
const NONZERO_TEST_LEN: usize = crate::lower::RUNTIME_CALL_LEN;

/// The local `v` of tokens that begin with `__ad::nonzero(v)`.
fn nonzero_test_at(toks: &[proc_macro2::TokenTree]) -> Option<Ident> {
    use proc_macro2::TokenTree;
    let (f, args) = crate::lower::runtime_call_at(toks)?;
    if f != "nonzero" {
        return None;
    }
    match args.stream().into_iter().collect::<Vec<_>>().as_slice() {
        [TokenTree::Ident(v)] => Some(v.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replayed_indices_and_shadow_cuts_are_read_from_their_tokens() {
        let i = replayed_index(&quote!(__ad::replayed_index(j + 1)));
        assert_eq!(i.map(|t| t.to_string()), Some(quote!(j + 1).to_string()));
        assert!(replayed_index(&quote!(j + 1)).is_none());
        assert!(replayed_index(&quote!(other::replayed_index(j))).is_none());
        let cut = shadow_cut(&quote!(let __nb_x = &mut __nb_x[..x.len()];));
        assert_eq!(
            cut.map(|(s, x)| (s.to_string(), x.to_string())),
            Some(("__nb_x".to_string(), "x".to_string()))
        );
        for not_a_cut in [
            quote!(let __nb_x = &__nb_x[..x.len()];),
            quote!(let __nb_x = &mut __nb_y[..x.len()];),
            quote!(let __nb_x = &mut __nb_x[1..x.len()];),
            quote!(let __nb_x = &mut __nb_x[..=x.len()];),
            quote!(let mut __nb_x = &mut __nb_x[..x.len()];),
            quote!(let __nb_x = &mut __nb_x[..n];),
        ] {
            assert!(shadow_cut(&not_a_cut).is_none(), "{not_a_cut}");
        }
    }
}
