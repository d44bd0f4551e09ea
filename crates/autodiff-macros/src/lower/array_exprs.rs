//! Whole-array expressions of `ndarray` arrays: `&a + &b`, `&z - 1.0`, `2.0 * &h`,
//! `-&a`, `(w.dot(x) + b).mapv(f64::tanh)`, `a.dot(&b)` of two matrices, `a.t()`, the
//! reductions of such an expression (`(&y - t).mapv(|v| v * v).sum()`, `.mean().unwrap()`,
//! `sum_axis(Axis(k))`, `mean_axis(Axis(k)).unwrap()`) and updates of a whole array
//! (`h += &b`). Each array value is made where the expression is evaluated, bound to a
//! fresh name, so that every element is differentiated as the function's own index code
//! is: a tree of elementwise operations is one array made with `zeros` and one index
//! loop that computes each element through the whole tree; a product of matrices is a
//! call of `autodiff_core`'s `matmul_add`, whose derivatives multiply matrices too; a
//! transpose and a sum along an axis are loops into an array of their own (the vector of
//! a matrix-vector product is `array_views.rs`'s, a map of a name `array_maps.rs`'s). An
//! operand that is a float is evaluated once and broadcast; a vector with a matrix is
//! broadcast along the rows, as `ndarray` does. The number of dimensions of each operand
//! is known from its name (an array parameter's type, the constructor of one of the
//! function's own, a matrix-vector product's vector).

use super::*;
use syn::{parse_quote, parse_quote_spanned};

impl Lowerer {
    /// The number of dimensions of the array `e` evaluates to, or `None` where its value
    /// is not an array this module knows (a float, a struct, a slice, ..).
    pub(super) fn array_expr_rank(&self, e: &Expr) -> Option<usize> {
        match strip(e) {
            Expr::Reference(r) => self.array_expr_rank(&r.expr),
            // (An array of more dimensions is left to the errors of what reads it.)
            Expr::Path(_) => match self.array_param(e) {
                Some(a) => self.array_rank(&a).filter(|r| matches!(r, 1 | 2)),
                None => self.is_local_vector(e).then_some(1),
            },
            Expr::MethodCall(m) => match m.method.to_string().as_str() {
                "mapv" | "map" if m.args.len() == 1 => self.array_expr_rank(&m.receiver),
                "clone" | "to_owned" if m.args.is_empty() => self.array_expr_rank(&m.receiver),
                "sum_axis" if m.args.len() == 1 => {
                    (self.array_expr_rank(&m.receiver) == Some(2)).then_some(1)
                }
                "unwrap" | "expect" => match strip(&m.receiver) {
                    Expr::MethodCall(mean)
                        if mean.method == "mean_axis" && mean.args.len() == 1 =>
                    {
                        (self.array_expr_rank(&mean.receiver) == Some(2)).then_some(1)
                    }
                    _ => None,
                },
                "t" | "reversed_axes" if m.args.is_empty() => {
                    (self.array_expr_rank(&m.receiver) == Some(2)).then_some(2)
                }
                "dot" if m.args.len() == 1 => {
                    match (
                        self.array_expr_rank(&m.receiver)?,
                        self.array_expr_rank(&m.args[0])?,
                    ) {
                        (2, 2) => Some(2),
                        (2, 1) | (1, 2) => Some(1),
                        _ => None,
                    }
                }
                _ => None,
            },
            Expr::Binary(b) if is_elementwise(&b.op) => {
                match (
                    self.array_expr_rank(&b.left),
                    self.array_expr_rank(&b.right),
                ) {
                    (Some(l), Some(r)) => Some(l.max(r)),
                    (l, r) => l.or(r),
                }
            }
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => self.array_expr_rank(&u.expr),
            _ => None,
        }
    }

    /// Whether `e` names a matrix-vector product bound by `let` (see
    /// `Lowerer::product_vectors`).
    pub(super) fn is_local_vector(&self, e: &Expr) -> bool {
        match strip(strip_ref(e)) {
            Expr::Path(p) => p.path.get_ident().is_some_and(|id| {
                matches!(self.lookup(&id.to_string()), Some(Binding::Var(v))
                    if self.product_vectors.contains(&v.to_string()))
            }),
            _ => false,
        }
    }

    /// Whether `e` is an array expression that is more than a name (`&a + &b`,
    /// `w.dot(x).mapv(f)`): one that [`Self::hoist_array`] makes first.
    pub(super) fn is_compound_array(&self, e: &Expr) -> bool {
        !matches!(strip(strip_ref(e)), Expr::Path(_)) && self.array_expr_rank(e).is_some()
    }

    /// `let name = e;` of an array expression this module makes (not a name, nor a map or
    /// a matrix-vector product of names, which `array_maps.rs` and `array_views.rs` lower
    /// as they are): the statements that make it under `name`, lowered. `false` for any
    /// other `let`.
    pub(super) fn lower_array_let(&mut self, l: &syn::Local) -> Result<bool> {
        let pat = match &l.pat {
            Pat::Type(pt) => &*pt.pat,
            p => p,
        };
        let Pat::Ident(pi) = pat else {
            return Ok(false);
        };
        let Some(init) = &l.init else {
            return Ok(false);
        };
        let e = strip(&init.expr);
        let name = &pi.ident;
        // `let h2 = h;` of an array of the function: the same array under another name.
        if pi.mutability.is_none()
            && matches!(e, Expr::Path(_))
            && let Some(src) = self.array_param(e)
            && let Some(Binding::Var(v)) = self.lookup(&src.to_string()).cloned()
        {
            self.bind(name, Binding::Var(v));
            return Ok(true);
        }
        // `let h = &h * 2.0;`, `let h = h.mapv(f);`: made under a fresh name, since the
        // array made under `h` would hide the `h` it is computed from.
        if self.array_expr_rank(e).is_some()
            && !matches!(e, Expr::Path(_))
            && crate::member_writes::mentions(e.to_token_stream(), &name.to_string())
        {
            let made = self.hoist_array(e)?;
            if let Some(Binding::Var(v)) = self.lookup(&made.to_token_stream().to_string()).cloned()
            {
                self.bind(name, Binding::Var(v));
                return Ok(true);
            }
            return unsupported(e, "this array expression");
        }
        if let Some(stmts) = filled_array(e, &pi.ident).or_else(|| array_from_vec(e, &pi.ident)) {
            for s in &stmts {
                self.lower_stmt(s)?;
            }
            return Ok(true);
        }
        if !self.is_compound_array(e) || self.made_as_written(e) {
            return Ok(false);
        }
        self.make_array(e, &pi.ident)?;
        Ok(true)
    }

    /// Whether `e` is a map or a matrix-vector product of names, which a `let` lowers as
    /// it is.
    fn made_as_written(&self, e: &Expr) -> bool {
        let Expr::MethodCall(m) = e else {
            return false;
        };
        let named = |e: &Expr| matches!(strip(strip_ref(e)), Expr::Path(_));
        match m.method.to_string().as_str() {
            "mapv" | "map" => named(&m.receiver),
            "dot" => {
                named(&m.receiver)
                    && named(&m.args[0])
                    && self
                        .array_expr_rank(&m.receiver)
                        .max(self.array_expr_rank(&m.args[0]))
                        == Some(2)
                    && self.array_expr_rank(e) == Some(1)
            }
            _ => false,
        }
    }

    /// `recv.method(args)` where the receiver, or the operand of a `dot`, is a compound
    /// array expression: the same call on the arrays made first. `None` for any other
    /// call.
    pub(super) fn call_on_made_arrays(&mut self, m: &syn::ExprMethodCall) -> Result<Option<Expr>> {
        let recv = self.is_compound_array(&m.receiver);
        let arg = m.method == "dot" && m.args.len() == 1 && self.is_compound_array(&m.args[0]);
        if !recv && !arg {
            return Ok(None);
        }
        let mut call = m.clone();
        if recv {
            *call.receiver = self.hoist_array(&m.receiver)?;
        }
        if arg {
            let a = self.hoist_array(&m.args[0])?;
            call.args[0] = parse_quote!(&#a);
        }
        Ok(Some(Expr::MethodCall(call)))
    }

    /// The array `e` evaluates to, made (see the module) and named: its name, or `e`
    /// itself where it is a name.
    pub(super) fn hoist_array(&mut self, e: &Expr) -> Result<Expr> {
        let inner = strip(strip_ref(e));
        if matches!(inner, Expr::Path(_)) {
            return Ok(inner.clone());
        }
        let name = self.fresh("array", e.span());
        self.make_array(inner, &name)?;
        Ok(parse_quote!(#name))
    }

    /// A float operand of an elementwise operation, evaluated once: its name.
    fn hoist_scalar(&mut self, e: &Expr) -> Result<Expr> {
        let span = e.span();
        let name = self.fresh("scalar", span);
        let s: syn::Stmt = parse_quote_spanned!(span=> let #name = #e;);
        self.lower_stmt(&s)?;
        Ok(parse_quote!(#name))
    }

    /// Lowers the statements that make the array `e` under `name`.
    fn make_array(&mut self, e: &Expr, name: &Ident) -> Result<()> {
        let span = e.span();
        let Some(rank) = self.array_expr_rank(e) else {
            return unsupported(e, "this array expression");
        };
        if is_elementwise_node(e) {
            return self.make_fused(e, name, rank);
        }
        let stmts: Vec<syn::Stmt> = match e {
            Expr::Reference(r) => return self.make_array(strip(&r.expr), name),
            Expr::MethodCall(m) if m.method == "dot" => {
                let a = self.hoist_array(&m.receiver)?;
                let mut b = self.hoist_array(&m.args[0])?;
                if rank == 2 && a.to_token_stream().to_string() == b.to_token_stream().to_string() {
                    // `c.dot(&c)`: the call takes its operands' shadows mutably, so one
                    // array may not be both; the second operand is a copy.
                    b = self.hoist_array(&parse_quote_spanned!(span=> #b.clone()))?;
                }
                let elem = self.elem_turbofish(&[&a, &b]);
                if rank == 1 {
                    // A matrix-vector product (`array_views.rs`).
                    vec![parse_quote_spanned!(span=> let #name = #a.dot(&#b);)]
                } else {
                    // A product of matrices: a call whose derivatives multiply matrices
                    // too (`autodiff_core`'s `matrix_products.rs`), which checks the
                    // shapes as `ndarray` does.
                    vec![
                        parse_quote_spanned!(span=>
                            let mut #name = __ad::arrays::Array2 #elem::zeros((#a.nrows(), #b.ncols()));
                        ),
                        parse_quote_spanned!(span=>
                            __ad::arrays::matmul_add(&#a, &#b, &mut #name);
                        ),
                    ]
                }
            }
            Expr::MethodCall(m) if m.method == "sum_axis" => {
                self.axis_reduction(&m.receiver, &m.args[0], name, false)?
            }
            Expr::MethodCall(m) if matches!(m.method.to_string().as_str(), "unwrap" | "expect") => {
                // `mean_axis(Axis(k)).unwrap()` (see `array_expr_rank`).
                let Expr::MethodCall(mean) = strip(&m.receiver) else {
                    return unsupported(e, "this array expression");
                };
                self.axis_reduction(&mean.receiver, &mean.args[0], name, true)?
            }
            Expr::MethodCall(m) => {
                // `t()`: the transposed copy.
                let a = self.hoist_array(&m.receiver)?;
                let elem = self.elem_turbofish(&[&a]);
                vec![
                    parse_quote_spanned!(span=>
                        let mut #name = __ad::arrays::Array2 #elem::zeros((#a.ncols(), #a.nrows()));
                    ),
                    each_element(
                        2,
                        &a,
                        quote!(#name[[__ad_j, __ad_i]] = #a[[__ad_i, __ad_j]];),
                        span,
                    ),
                ]
            }
            _ => return unsupported(e, "this array expression"),
        };
        for s in &stmts {
            self.lower_stmt(s)?;
        }
        Ok(())
    }

    /// The statements that make `name`, the sums (or the means) of the matrix `recv`
    /// along `axis` (`Axis(0)`: one per column, `Axis(1)`: one per row), as
    /// `sum_axis` and `mean_axis` give them.
    fn axis_reduction(
        &mut self,
        recv: &Expr,
        axis: &Expr,
        name: &Ident,
        mean: bool,
    ) -> Result<Vec<syn::Stmt>> {
        let span = axis.span();
        let Some(axis) = literal_axis(axis) else {
            return unsupported(
                axis,
                "this axis (`Axis(0)` or `Axis(1)`, written as a literal, is supported)",
            );
        };
        let a = self.hoist_array(recv)?;
        let elem = self.elem_turbofish(&[&a]);
        let (len, count, at) = match axis {
            0 => (quote!(#a.ncols()), quote!(#a.nrows()), quote!(__ad_j)),
            _ => (quote!(#a.nrows()), quote!(#a.ncols()), quote!(__ad_i)),
        };
        let divisor = self.count_as_float(&count, &[&a]);
        let mut stmts = vec![
            parse_quote_spanned!(span=> let mut #name = __ad::arrays::Array1 #elem::zeros(#len);),
            each_element(2, &a, quote!(#name[#at] += #a[[__ad_i, __ad_j]];), span),
        ];
        if mean {
            // (`mean_axis` of no rows or columns is `None`, which `unwrap` would panic on.)
            stmts.push(parse_quote_spanned!(span=>
                assert!(#count > 0, "`mean_axis` along an axis of length 0");
            ));
            stmts.push(each_element(
                1,
                &parse_quote!(#name),
                quote!(#name[__ad_i] /= #divisor;),
                span,
            ));
        }
        Ok(stmts)
    }

    /// `e.mean().unwrap()` (or `.expect(..)`) of an array expression `e`: its sum divided
    /// by its number of elements, `None` for any other call.
    pub(super) fn array_mean(&mut self, m: &syn::ExprMethodCall) -> Result<Option<Expr>> {
        if !matches!(m.method.to_string().as_str(), "unwrap" | "expect") {
            return Ok(None);
        }
        let Expr::MethodCall(mean) = strip(&m.receiver) else {
            return Ok(None);
        };
        if mean.method != "mean" || !mean.args.is_empty() {
            return Ok(None);
        }
        if self.array_expr_rank(&mean.receiver).is_none() {
            return Ok(None);
        }
        let span = m.span();
        let a = self.hoist_array(&mean.receiver)?;
        let n = self.count_as_float(&quote!(#a.len()), &[&a]);
        Ok(Some(parse_quote_spanned!(span=> {
            assert!(#a.len() > 0, "`mean` of an empty array");
            #a.sum() / #n
        })))
    }

    /// The element type of the first of `arrays` (named arrays) whose type is known.
    fn elem_type(&self, arrays: &[&Expr]) -> Option<syn::Type> {
        arrays.iter().find_map(|a| self.elem_of(a))
    }

    /// `::<T>` of [`Self::elem_type`], written into the arrays made from `arrays`
    /// (`Array2::<f32>::zeros(..)`) so that their sums are typed; nothing where no
    /// element type is known (it is inferred).
    fn elem_turbofish(&self, arrays: &[&Expr]) -> TokenStream {
        match self.elem_type(arrays) {
            Some(t) => quote!(::<#t>),
            None => TokenStream::new(),
        }
    }

    /// The number `count` (a `usize`) as a float of the element type of `arrays`
    /// (`f64` where none is known): `count as f32`, or `T::from(count).unwrap()` for a
    /// float type parameter `T`.
    fn count_as_float(&self, count: &TokenStream, arrays: &[&Expr]) -> TokenStream {
        let float = self.elem_type(arrays).unwrap_or_else(|| parse_quote!(f64));
        let generic = matches!(&float, syn::Type::Path(p)
            if p.path.get_ident().is_some_and(|id| self.floats.contains(&id.to_string())));
        if generic {
            quote!(#float::from(#count).unwrap())
        } else {
            quote!((#count as #float))
        }
    }

    /// `let mut name = zeros(shape); for .. { name[..] = value; }` of an elementwise
    /// expression `e` of `rank` dimensions, its whole tree of elementwise operations
    /// (operators, negation, maps, copies) evaluated in the one loop: the arrays that are
    /// not elementwise (names, products, transposes) and the floats are its operands,
    /// made first, and the result is shaped as its first operand of the result's rank.
    /// (One loop, not one per operation: no array in between, nor its adjoint.)
    fn make_fused(&mut self, e: &Expr, name: &Ident, rank: usize) -> Result<()> {
        let span = e.span();
        let mut tree = FusedTree {
            rank,
            operands: Vec::new(),
            body: TokenStream::new(),
            temps: 0,
        };
        let value = self.fused_element(e, &mut tree)?;
        let FusedTree { operands, body, .. } = tree;
        // (The result's rank is its largest operand's: one has it.)
        let Some((shape, _)) = operands.iter().find(|(_, r)| *r == Some(rank)) else {
            return unsupported(e, "this array expression");
        };
        let mut stmts: Vec<syn::Stmt> = operands
            .iter()
            .filter(|(v, _)| !std::ptr::eq(v, shape))
            .filter_map(|(v, r)| shape_check(v, (*r)?, shape, rank, span))
            .collect();
        // (The shape of a matrix-vector product's vector, a `Vec` in derivative code, is
        // its length.)
        let (array, dims) = if rank == 1 {
            (
                quote_spanned!(span=> Array1),
                quote_spanned!(span=> #shape.len()),
            )
        } else {
            (
                quote_spanned!(span=> Array2),
                quote_spanned!(span=> #shape.dim()),
            )
        };
        let arrays: Vec<&Expr> = operands
            .iter()
            .filter(|(_, r)| r.is_some())
            .map(|(v, _)| v)
            .collect();
        let elem = self.elem_turbofish(&arrays);
        stmts.push(parse_quote_spanned!(span=>
            let mut #name = __ad::arrays::#array #elem::zeros(#dims);
        ));
        let at = element_of(&parse_quote!(#name), Some(rank), rank);
        stmts.push(each_element(rank, shape, quote!(#body #at = #value;), span));
        for s in &stmts {
            self.lower_stmt(s)?;
        }
        Ok(())
    }

    /// The value of an element of `e` in the loop of [`Self::make_fused`]: the element of
    /// an operand, or a local of the loop's body that `tree.body` computes.
    fn fused_element(&mut self, e: &Expr, tree: &mut FusedTree) -> Result<TokenStream> {
        let span = e.span();
        let e = strip(e);
        // (A float computed from floats is an operand, computed once.)
        if !is_elementwise_node(e) || self.array_expr_rank(e).is_none() {
            let r = self.array_expr_rank(e);
            let v = match r {
                Some(_) => self.hoist_array(e)?,
                None => self.hoist_scalar(e)?,
            };
            let elem = element_of(&v, r, tree.rank);
            tree.operands.push((v, r));
            return Ok(elem);
        }
        let value = match e {
            Expr::Reference(r) => return self.fused_element(&r.expr, tree),
            Expr::Binary(b) => {
                let l = self.fused_element(&b.left, tree)?;
                let r = self.fused_element(&b.right, tree)?;
                let op = b.op;
                quote!(#l #op #r)
            }
            Expr::Unary(u) => {
                let v = self.fused_element(&u.expr, tree)?;
                let neg = quote_spanned!(span=> -);
                quote!(#neg #v)
            }
            Expr::MethodCall(m) if matches!(m.method.to_string().as_str(), "mapv" | "map") => {
                let v = self.fused_element(&m.receiver, tree)?;
                let (bind, body) = super::array_maps::applied(&m.args[0], span)?;
                // (`map` gives `f` a reference to the element, `mapv` its value; a block,
                // so that the parameter's name is not seen by the operations after it.)
                let by_ref = (m.method == "map").then(|| quote_spanned!(span=> &));
                quote!({ let #bind = #by_ref #v; #body })
            }
            // `clone()`, `to_owned()`: the same elements.
            Expr::MethodCall(m) => return self.fused_element(&m.receiver, tree),
            _ => return unsupported(e, "this array expression"),
        };
        let t = format_ident!("__ad_e{}", tree.temps, span = span);
        tree.temps += 1;
        tree.body.extend(quote!(let #t = #value;));
        Ok(quote!(#t))
    }
}

/// What [`Lowerer::fused_element`] gathers: the operands of the loop and the statements
/// of its body.
struct FusedTree {
    /// The number of dimensions of the result.
    rank: usize,
    /// Each operand (a named array, or a float) and its number of dimensions.
    operands: Vec<(Expr, Option<usize>)>,
    /// The body's statements, one local per operation.
    body: TokenStream,
    /// How many locals the body has.
    temps: usize,
}

/// The axis `Axis(k)` (or `ndarray::Axis(k)`) names, for `k` 0 or 1.
fn literal_axis(e: &Expr) -> Option<usize> {
    let Expr::Call(c) = strip(e) else {
        return None;
    };
    let Expr::Path(f) = strip(&c.func) else {
        return None;
    };
    if f.path.segments.last()?.ident != "Axis" || c.args.len() != 1 {
        return None;
    }
    match strip(&c.args[0]) {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i.base10_parse().ok().filter(|k| *k < 2),
        _ => None,
    }
}

/// Whether `e` is computed element by element from its operands (`&a + &b`, `-a`,
/// `a.mapv(f)`, `a.clone()`), the arrays' operations that [`Lowerer::make_fused`] puts
/// in one loop.
fn is_elementwise_node(e: &Expr) -> bool {
    match strip(e) {
        Expr::Reference(r) => is_elementwise_node(&r.expr),
        Expr::Binary(b) => is_elementwise(&b.op),
        Expr::Unary(u) => matches!(u.op, syn::UnOp::Neg(_)),
        Expr::MethodCall(m) => match m.method.to_string().as_str() {
            "mapv" | "map" => m.args.len() == 1,
            "clone" | "to_owned" => m.args.is_empty(),
            _ => false,
        },
        _ => false,
    }
}

/// `let name = Array1::from_elem(n, v);` with `v` carrying a derivative (`Array2` with a
/// shape `(r, c)`), or `let name = array![a, b, c];`: an array made with `zeros`, then
/// filled (`name.fill(v)`, an update of this module) or written element by element.
/// `None` for any other value (a `from_elem` of a constant is created as written).
fn filled_array(e: &Expr, name: &Ident) -> Option<Vec<syn::Stmt>> {
    let span = e.span();
    match e {
        Expr::Call(c) if c.args.len() == 2 => {
            let Expr::Path(f) = strip(&c.func) else {
                return None;
            };
            let segs = &f.path.segments;
            let ty = &segs.iter().nth_back(1)?.ident;
            if segs.last()?.ident != "from_elem"
                || !matches!(ty.to_string().as_str(), "Array1" | "Array2")
                || is_float_literal(&c.args[1])
            {
                return None;
            }
            let (shape, v) = (&c.args[0], &c.args[1]);
            Some(vec![
                parse_quote_spanned!(span=> let mut #name = __ad::arrays::#ty::zeros(#shape);),
                parse_quote_spanned!(span=> #name.fill(#v);),
            ])
        }
        Expr::Macro(m)
            if m.mac
                .path
                .segments
                .last()
                .is_some_and(|s| s.ident == "array") =>
        {
            let items = m
                .mac
                .parse_body_with(
                    syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated,
                )
                .ok()?;
            // (A matrix, `array![[a, b], [c, d]]`, is left to the error of the macro.)
            if items.iter().any(|i| matches!(strip(i), Expr::Array(_))) {
                return None;
            }
            let n = items.len();
            let mut stmts: Vec<syn::Stmt> =
                vec![parse_quote_spanned!(span=> let mut #name = __ad::arrays::Array1::zeros(#n);)];
            for (k, item) in items.iter().enumerate() {
                stmts.push(parse_quote_spanned!(span=> #name[#k] = #item;));
            }
            Some(stmts)
        }
        _ => None,
    }
}

/// `let name = Array1::from_vec(v);` (or `Array1::from(v)`) and `let name =
/// Array2::from_shape_vec((r, c), v).unwrap();` (or `.expect(..)`), `v` a vector of
/// floats: an array made with `zeros`, then written element by element from `v` (row by
/// row), so that each element carries its value's derivative. `None` for any other
/// value.
fn array_from_vec(e: &Expr, name: &Ident) -> Option<Vec<syn::Stmt>> {
    let span = e.span();
    let (call, shape) = match e {
        Expr::Call(c) if c.args.len() == 1 => (c, None),
        Expr::MethodCall(m) if matches!(m.method.to_string().as_str(), "unwrap" | "expect") => {
            match strip(&m.receiver) {
                Expr::Call(c) if c.args.len() == 2 => (c, Some(&c.args[0])),
                _ => return None,
            }
        }
        _ => return None,
    };
    let Expr::Path(f) = strip(&call.func) else {
        return None;
    };
    let segs = &f.path.segments;
    let ty = segs.iter().nth_back(1)?;
    let ctor = segs.last()?.ident.to_string();
    let v = call.args.last()?;
    // (The vector is read where it is, or bound once.)
    let src = format_ident!("__ad_src_{}", name, span = span);
    let bind: syn::Stmt = match strip(v) {
        Expr::Path(p) => parse_quote_spanned!(span=> let #src = &#p;),
        v => parse_quote_spanned!(span=> let #src = #v;),
    };
    match (ty.ident.to_string().as_str(), ctor.as_str(), shape) {
        ("Array1", "from_vec" | "from", None) => Some(vec![
            bind,
            parse_quote_spanned!(span=> let mut #name = __ad::arrays::#ty::zeros(#src.len());),
            each_element(
                1,
                &parse_quote!(#src),
                quote!(#name[__ad_i] = #src[__ad_i];),
                span,
            ),
        ]),
        ("Array2", "from_shape_vec", Some(shape)) => {
            let Expr::Tuple(t) = strip(shape) else {
                return None;
            };
            if t.elems.len() != 2 {
                return None;
            }
            let (r, c) = (&t.elems[0], &t.elems[1]);
            let (rows, cols) = (
                format_ident!("__ad_rows_{}", name, span = span),
                format_ident!("__ad_cols_{}", name, span = span),
            );
            Some(vec![
                bind,
                parse_quote_spanned!(span=> let (#rows, #cols): (usize, usize) = (#r, #c);),
                parse_quote_spanned!(span=>
                    assert_eq!(#src.len(), #rows * #cols, "`from_shape_vec` of a vector whose length is not the shape's");
                ),
                parse_quote_spanned!(span=> let mut #name = __ad::arrays::#ty::zeros((#rows, #cols));),
                each_element(
                    2,
                    &parse_quote!(#name),
                    quote!(#name[[__ad_i, __ad_j]] = #src[__ad_i * #cols + __ad_j];),
                    span,
                ),
            ])
        }
        _ => None,
    }
}

/// Whether `e` is a float literal (`0.5`, `-1.0`): a constant fill.
fn is_float_literal(e: &Expr) -> bool {
    match strip(e) {
        Expr::Lit(_) => true,
        Expr::Unary(u) => {
            matches!(u.op, syn::UnOp::Neg(_)) && matches!(strip(&u.expr), Expr::Lit(_))
        }
        _ => false,
    }
}

/// `for __ad_i in 0..a.len() { body }` over a vector `a`, or over the rows `__ad_i` and
/// columns `__ad_j` of a matrix: the loop that visits each element of an array of `rank`
/// dimensions shaped as `over`.
pub(super) fn each_element(rank: usize, over: &Expr, body: TokenStream, span: Span) -> syn::Stmt {
    if rank == 1 {
        parse_quote_spanned!(span=> for __ad_i in 0..#over.len() { #body })
    } else {
        parse_quote_spanned!(span=>
            for __ad_i in 0..#over.nrows() {
                for __ad_j in 0..#over.ncols() {
                    #body
                }
            }
        )
    }
}

/// The element of `v` (an array of `r` dimensions, or a float, `None`) at the indexes of
/// [`each_element`] over an array of `rank`: a vector with a matrix broadcast along the
/// rows, as `ndarray` does.
pub(super) fn element_of(v: &Expr, r: Option<usize>, rank: usize) -> TokenStream {
    match (r, rank) {
        (None, _) => quote!((#v)),
        (Some(1), 1) => quote!(#v[__ad_i]),
        (Some(1), _) => quote!(#v[__ad_j]),
        _ => quote!(#v[[__ad_i, __ad_j]]),
    }
}

/// The check that the array `v` of `r` dimensions fits `shape`, an array of `rank`:
/// `ndarray` panics on shapes that do not broadcast, and so does this, saying which.
fn shape_check(v: &Expr, r: usize, shape: &Expr, rank: usize, span: Span) -> Option<syn::Stmt> {
    Some(match (r, rank) {
        (1, 1) => parse_quote_spanned!(span=>
            assert_eq!(#v.len(), #shape.len(), "arrays of different lengths in an elementwise operation");
        ),
        (1, _) => parse_quote_spanned!(span=>
            assert_eq!(#v.len(), #shape.ncols(), "a vector and a matrix of another width in an elementwise operation");
        ),
        (_, 2) => parse_quote_spanned!(span=>
            assert_eq!(#v.dim(), #shape.dim(), "matrices of different shapes in an elementwise operation");
        ),
        _ => return None,
    })
}

/// `+`, `-`, `*`, `/`: the operators `ndarray` applies element by element.
fn is_elementwise(op: &syn::BinOp) -> bool {
    matches!(
        op,
        syn::BinOp::Add(_) | syn::BinOp::Sub(_) | syn::BinOp::Mul(_) | syn::BinOp::Div(_)
    )
}

impl Lowerer {
    /// `h += &b;`, `h *= 2.0;` (any of `+=`, `-=`, `*=`, `/=`), `h = e;` and `h.fill(v)`
    /// of a whole array `h` named by a parameter or a `let`, `e` an array of its shape (or
    /// of a vector broadcast along a matrix's rows) or, for the operators and `fill`, a
    /// float: the loop that writes each element, lowered. `false` for any other
    /// expression.
    pub(super) fn lower_array_update(&mut self, e: &Expr) -> Result<bool> {
        let (left, op, right) = match strip(e) {
            Expr::Binary(b) if is_elementwise_update(&b.op) => (&*b.left, Some(b.op), &*b.right),
            Expr::Assign(a) => (&*a.left, None, &*a.right),
            // `h.fill(v)`: each element set to `v`.
            Expr::MethodCall(m) if m.method == "fill" && m.args.len() == 1 => {
                (&*m.receiver, None, &m.args[0])
            }
            _ => return Ok(false),
        };
        let filled = matches!(strip(e), Expr::MethodCall(_));
        if !matches!(strip(left), Expr::Path(_)) {
            return Ok(false);
        }
        let Some(rank) = self.array_expr_rank(left) else {
            return Ok(false);
        };
        let right_rank = self.array_expr_rank(right);
        if op.is_none() && right_rank.is_none() && !filled {
            return Ok(false);
        }
        let span = e.span();
        let value = match right_rank {
            Some(_) => self.hoist_array(right)?,
            None => self.hoist_scalar(right)?,
        };
        if rank == 1 && right_rank == Some(2) {
            return unsupported(e, "this whole-array assignment (a matrix into a vector)");
        }
        if let Some(check) = right_rank.and_then(|r| shape_check(&value, r, left, rank, span)) {
            self.lower_stmt(&check)?;
        }
        let (at, elem) = (
            element_of(left, Some(rank), rank),
            element_of(&value, right_rank, rank),
        );
        let op = match op {
            Some(op) => quote!(#op),
            None => quote_spanned!(span=> =),
        };
        let write = each_element(rank, left, quote!(#at #op #elem;), span);
        self.lower_stmt(&write)?;
        Ok(true)
    }
}

/// `+=`, `-=`, `*=`, `/=`.
fn is_elementwise_update(op: &syn::BinOp) -> bool {
    matches!(
        op,
        syn::BinOp::AddAssign(_)
            | syn::BinOp::SubAssign(_)
            | syn::BinOp::MulAssign(_)
            | syn::BinOp::DivAssign(_)
    )
}
