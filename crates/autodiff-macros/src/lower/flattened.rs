//! `rows.flat_map(|r| items)` and `rows.flatten()` (of a buffer's rows), followed only by
//! adapters that act on each element by itself (`map`, `filter`, `copied`, `cloned`),
//! written before lowering as an iteration over the rows with an iteration over each
//! row's items inside it:
//!
//! ```text
//! for v in rows.flat_map(|r| items).map(f) { body }  →  for r in rows { for v in items.map(f) { body } }
//! rows.flat_map(|r| items).map(f).sum::<T>()         →  rows.fold(-0.0, |s, r| items.map(f).fold(s, |s, v| s + v))
//! rows.flat_map(|r| items).map(f).product::<T>()     →  rows.fold(1.0, |p, r| items.map(f).fold(p, |p, v| p * v))
//! rows.flat_map(|r| items).map(f).fold(init, g)      →  rows.fold(init, |acc, r| items.map(f).fold(acc, g))
//! ```
//!
//! `rows.flatten()` is `rows.flat_map(|r| r.iter())`, read where `rows` yields references
//! to a buffer's rows (`m.iter().flatten()` of `m: &[Vec<f64>]`) or parts of a slice
//! (`x.chunks(k).flatten()`). A sum or product takes its type, `f64` or `f32`, from its
//! turbofish, from the `let` that binds it (`let s: f64 = ..`) or, as the function's
//! last expression, from the function's result type; it adds (multiplies) the items one
//! by one from `std`'s start, in order, so the value is the flattened one to the bit
//! (grouped by rows, sums of large terms that cancel would differ). A `continue` in the
//! loop body goes on to the next item as before; a body that may `break` out of the loop
//! is left as written. The row is bound by a name of its own (`__ad_row0`, ..), so that
//! the code now inside its binding (the loop body, a later adapter's closure, `g`) reads
//! what it read before, a sum of rows nested in another included; a row bound by a
//! pattern keeps it, and code that names one of its names again is left as written,
//! where the pattern would hide another value. What is left is refused by the lowering,
//! which names `flat_map` or `flatten`.

use super::*;

/// Writes the forms above in `body` as nested iterations (a function's own code; nested
/// blocks and closures included).
pub(super) fn nest_flattened(b: &mut syn::Block, sig: &SigInfo) {
    // The function's last expression takes the function's result type.
    if let (Some(syn::Stmt::Expr(tail, None)), crate::signature::Ret::Ty(ty)) =
        (b.stmts.last_mut(), &sig.ret)
    {
        typed_by(tail, ty);
    }
    Nester { rows: 0 }.visit_block_mut(b);
}

/// `rows.flatten()..sum()` (or `product()`) without a turbofish, given `ty` as one: the
/// type that its `let` or the function's result gives it.
fn typed_by(e: &mut Expr, ty: &syn::Type) {
    if let Expr::MethodCall(m) = e
        && matches!(m.method.to_string().as_str(), "sum" | "product")
        && m.turbofish.is_none()
        && m.args.is_empty()
        && flattened(&m.receiver, 0).is_some()
    {
        m.turbofish = Some(syn::parse_quote!(::<#ty>));
    }
}

/// `rows` counts the rows bound so far, which each get a name of their own (see
/// [`own_row_name`]).
struct Nester {
    rows: usize,
}

impl VisitMut for Nester {
    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        visit_macro_items(self, m);
    }

    fn visit_expr_mut(&mut self, e: &mut Expr) {
        syn::visit_mut::visit_expr_mut(self, e);
        if let Some(nested) = nested(e, self.rows) {
            *e = nested;
            self.rows += 1;
        }
    }

    /// `let s: T = rows.flatten()..sum();`: the sum takes `T` as its turbofish.
    fn visit_local_mut(&mut self, l: &mut syn::Local) {
        if let (Pat::Type(pt), Some(init)) = (&l.pat, &mut l.init) {
            typed_by(&mut init.expr, &pt.ty);
        }
        syn::visit_mut::visit_local_mut(self, l);
    }
}

/// An iterator over the items of each row: `rows`, the pattern that binds a row, and the
/// iterator over its items (with the adapters that followed).
struct Flattened {
    rows: Expr,
    row: Pat,
    items: Expr,
    /// The adapters after `flat_map`, which now see the row's binding.
    adapters: TokenStream,
}

/// `e` written as nested iterations, where it is one of the forms above; `k` numbers its
/// row's name.
fn nested(e: &Expr, k: usize) -> Option<Expr> {
    let span = e.span();
    match e {
        Expr::ForLoop(f) if f.label.is_none() => {
            let fl = flattened(&f.expr, k)?;
            let body = &f.body;
            if breaks_out(body) || hides(&fl.row, &[quote!(#body), fl.adapters.clone()]) {
                return None;
            }
            let Flattened {
                rows, row, items, ..
            } = fl;
            let row = without_type(row);
            let pat = &f.pat;
            Some(syn::parse_quote_spanned!(span=>
            for #row in #rows {
                for #pat in #items #body
            }))
        }
        Expr::MethodCall(m) => {
            let fl = flattened(&m.receiver, k)?;
            let method = &m.method;
            match (method.to_string().as_str(), m.args.len()) {
                ("sum" | "product", 0) => {
                    // `std`'s sum starts at -0.0 and its product at 1.0, of the type the
                    // turbofish names (`f64` or `f32`).
                    let suffix = float_suffix(m.turbofish.as_ref()?)?;
                    let (start, op) = if method == "sum" {
                        (format!("-0.0{suffix}"), quote!(+))
                    } else {
                        (format!("1.0{suffix}"), quote!(*))
                    };
                    let start: syn::LitFloat = syn::LitFloat::new(&start, span);
                    if hides(&fl.row, std::slice::from_ref(&fl.adapters)) {
                        return None;
                    }
                    let Flattened {
                        rows, row, items, ..
                    } = fl;
                    Some(syn::parse_quote_spanned!(span=>
                    #rows.fold(#start, |__ad_acc, #row| {
                        #items.fold(__ad_acc, |__ad_a, __ad_v| __ad_a #op __ad_v)
                    })))
                }
                ("fold", 2) => {
                    let (init, g) = (&m.args[0], &m.args[1]);
                    if hides(&fl.row, &[fl.adapters.clone(), quote!(#g)]) {
                        return None;
                    }
                    let Flattened {
                        rows, row, items, ..
                    } = fl;
                    Some(syn::parse_quote_spanned!(span=>
                        #rows.fold(#init, |__ad_acc, #row| #items.fold(__ad_acc, #g))))
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// `f64` or `f32`, of the turbofish `::<f64>` or `::<f32>`.
fn float_suffix(t: &syn::AngleBracketedGenericArguments) -> Option<&'static str> {
    match t.args.iter().collect::<Vec<_>>()[..] {
        [syn::GenericArgument::Type(syn::Type::Path(p))] if p.qself.is_none() => {
            match p.path.get_ident()?.to_string().as_str() {
                "f64" => Some("f64"),
                "f32" => Some("f32"),
                _ => None,
            }
        }
        _ => None,
    }
}

/// `rows.flat_map(|r| items)` or `rows.flatten()`, followed by element-wise adapters; the
/// row bound by a name of its own, numbered `k`.
fn flattened(e: &Expr, k: usize) -> Option<Flattened> {
    let Expr::MethodCall(m) = strip(e) else {
        return None;
    };
    let rows = (*m.receiver).clone();
    match (m.method.to_string().as_str(), m.args.len()) {
        ("flat_map", 1) => {
            let Expr::Closure(c) = strip(&m.args[0]) else {
                return None;
            };
            if c.inputs.len() != 1 || leaves_the_closure(&c.body) {
                return None;
            }
            let items = match &*c.body {
                Expr::Block(b) if b.label.is_none() => match &b.block.stmts[..] {
                    [syn::Stmt::Expr(e, None)] => e.clone(),
                    _ => return None,
                },
                e => e.clone(),
            };
            let items = match items {
                e @ (Expr::MethodCall(_) | Expr::Path(_) | Expr::Field(_)) => e,
                e => syn::parse_quote_spanned!(e.span()=> (#e)),
            };
            let (row, items) = own_row_name(&c.inputs[0], items, k);
            Some(Flattened {
                rows,
                row,
                items,
                adapters: TokenStream::new(),
            })
        }
        ("flatten", 0) if yields_references(&m.receiver) || yields_slices(&m.receiver) => {
            let span = m.method.span();
            let row = format_ident!("__ad_row{}", k, span = span);
            Some(Flattened {
                rows,
                row: syn::parse_quote_spanned!(span=> #row),
                items: syn::parse_quote_spanned!(span=> #row.iter()),
                adapters: TokenStream::new(),
            })
        }
        ("map" | "filter" | "copied" | "cloned", _) => {
            let mut fl = flattened(&m.receiver, k)?;
            let mut again = m.clone();
            *again.receiver = fl.items;
            let (method, args) = (&m.method, &m.args);
            fl.adapters.extend(quote!(#method(#args)));
            fl.items = Expr::MethodCall(again);
            Some(fl)
        }
        _ => None,
    }
}

/// The row's pattern and its items, the row named `__ad_row{k}` where the closure binds it
/// by one name (`|r| r.iter()`, `|r: &Vec<f64>| ..`) that `items` does not bind again:
/// the code that the row's iteration then encloses (the adapters after it, a `for` body,
/// a fold's closure) may name the user's `r` itself, as a nested sum of rows does
/// (`.flat_map(|r| r.iter()).map(|v| v * m.iter().flat_map(|r| r.iter()).sum::<f64>())`),
/// and would otherwise be left as written (see [`hides`]).
fn own_row_name(row: &Pat, mut items: Expr, k: usize) -> (Pat, Expr) {
    let Pat::Ident(pi) = without_type(row.clone()) else {
        return (row.clone(), items);
    };
    if pi.by_ref.is_some() || pi.subpat.is_some() || binds(&items, &pi.ident) {
        return (row.clone(), items);
    }
    let own = format_ident!("__ad_row{}", k, span = pi.ident.span());
    struct Rename<'a>(&'a Ident, &'a Ident);
    impl VisitMut for Rename<'_> {
        fn visit_expr_path_mut(&mut self, p: &mut syn::ExprPath) {
            if p.qself.is_none() && p.path.is_ident(self.0) {
                p.path = self.1.clone().into();
            }
        }
        fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
            visit_macro_items(self, m);
        }
    }
    Rename(&pi.ident, &own).visit_expr_mut(&mut items);
    (syn::parse_quote_spanned!(pi.ident.span()=> #own), items)
}

/// Whether `e` binds the name `n` (a closure's parameter, a `let`, a pattern).
fn binds(e: &Expr, n: &Ident) -> bool {
    let mut names = BoundNames::default();
    syn::visit::Visit::visit_expr(&mut names, e);
    names.0.contains(&n.to_string())
}

/// Whether an iterator yields parts of a slice: `x.chunks(k)`, `x.chunks_exact(k)`,
/// `x.windows(k)`.
fn yields_slices(it: &Expr) -> bool {
    matches!(strip(it), Expr::MethodCall(m)
        if matches!(m.method.to_string().as_str(), "chunks" | "chunks_exact" | "windows"))
}

/// `p` without the type a closure's parameter may carry (`r: &Vec<f64>`), for a `for`
/// loop's pattern.
fn without_type(p: Pat) -> Pat {
    match p {
        Pat::Type(pt) => *pt.pat,
        p => p,
    }
}

/// Whether `code` names one of the variables `row` binds, which nested inside that
/// binding would now read the row instead of what they named.
fn hides(row: &Pat, code: &[TokenStream]) -> bool {
    let names = pattern_bindings(row);
    code.iter().any(|c| {
        names
            .iter()
            .any(|n| crate::member_writes::mentions(c.clone(), &n.to_string()))
    })
}
