//! An iterator chain held in a variable and advanced by `next` or `nth` before the rest
//! of it is consumed, written before lowering with the chain in place of the variable:
//!
//! ```text
//! let mut it = x.iter();                      (removed)
//! let a = *it.next().unwrap();            →   let a = *x.iter().next().unwrap();
//! let b = it.nth(2);                      →   let b = x.iter().nth(3);
//! for v in it { .. }                      →   for v in x.iter().skip(4) { .. }
//! while let Some(v) = it.next() { .. }    →   for v in x.iter().skip(4) { .. }
//! ```
//!
//! Each `next` and `nth` then becomes the reduction that keeps its item
//! (`iterator_items`), and the last use (a `for` loop, a `while let` over `next`, or an
//! expression that names the variable: `it.sum()`, `y.iter().zip(it)`) reads the chain
//! past the items taken. The chain gives the same items each time it is written again
//! where its names keep their values, so the pass applies only where:
//!
//! - the variable is bound by a `let` of its own (`let mut it = chain;`) to a lazy chain:
//!   a range, or `iter`, `windows`, `chunks` or `chunks_exact` of a buffer followed by
//!   the adapters `iterator_items` reads, writing nothing (not `into_iter`, which may
//!   move a vector: written twice, it would move it twice);
//! - the statements after it advance it only by `next()` and `nth(k)` with `k` an integer
//!   literal, each evaluated once where it stands (not in a loop, a closure, a branch of
//!   an `if` or `match`, or the right of `&&`/`||`), then name it in one last statement;
//! - those statements neither write nor bind again any name of the chain, nor the
//!   variable's own name;
//! - past a `filter` (where the lowering counts no positions) only a first `next` is
//!   taken, and nothing reads the rest; over `windows` and `chunks` themselves (whose
//!   items are slices, which a reduction does not keep) nothing is taken.
//!
//! Anything else leaves the variable as written, and the lowering names the iterator it
//! cannot read.

use super::iterator_items::{filters, is_iterator_chain, yields_slices};
use super::*;

/// Writes the iterator variables of `body` (a function's own code; nested blocks and
/// closures included) as above.
pub(super) fn inline_iterator_variables(body: &mut syn::Block) {
    Inliner.visit_block_mut(body);
}

struct Inliner;

impl VisitMut for Inliner {
    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        visit_macro_items(self, m);
    }

    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        syn::visit_mut::visit_block_mut(self, b);
        let mut s = 0;
        while s < b.stmts.len() {
            match inlined(&b.stmts, s) {
                Some(stmts) => b.stmts.splice(s.., stmts).for_each(drop),
                None => s += 1,
            }
        }
    }
}

/// A `let` of an iterator variable: its name and its chain.
struct IteratorLet<'a> {
    name: &'a Ident,
    chain: &'a Expr,
}

fn iterator_let(s: &syn::Stmt) -> Option<IteratorLet<'_>> {
    let syn::Stmt::Local(l) = s else { return None };
    let Pat::Ident(p) = &l.pat else { return None };
    let init = l.init.as_ref()?;
    (p.by_ref.is_none()
        && p.subpat.is_none()
        && init.diverge.is_none()
        && from_a_source(&init.expr))
    .then_some(IteratorLet {
        name: &p.ident,
        chain: &init.expr,
    })
}

/// Whether `e` is a range, or a chain of the adapters that `iterator_items` reads on a
/// buffer's iterator (`x.iter()`, `x.windows(2)`): lazy, so that writing it later
/// computes nothing earlier. (`a.map(f)` of an `ndarray` array, or `Option::map`, is a
/// value computed where it stands, left to the lowering.)
fn from_a_source(e: &Expr) -> bool {
    match strip(e) {
        Expr::Range(_) => true,
        Expr::MethodCall(m) => match m.method.to_string().as_str() {
            // (Not `into_iter`, which may move a vector: written twice, it would move it
            // twice.)
            "iter" | "chunks" | "chunks_exact" | "windows" => m.args.len() <= 1,
            _ => is_iterator_chain(e) && from_a_source(&m.receiver),
        },
        _ => false,
    }
}

/// The statements from `s` on, with the variable bound at `s` inlined, where the pass
/// applies (see the module's documentation).
fn inlined(stmts: &[syn::Stmt], s: usize) -> Option<Vec<syn::Stmt>> {
    let var = iterator_let(&stmts[s])?;
    let rest = &stmts[s + 1..];
    let last = rest.iter().rposition(|t| {
        crate::member_writes::mentions(t.to_token_stream(), &var.name.to_string())
    })?;
    if !keeps_chain(&var, &rest[..=last]) {
        return None;
    }
    // Past a `filter` the lowering counts no positions, and it reduces no slices: there,
    // only a first `next` is taken, and nothing after it.
    let (filtered, slices) = (filters(var.chain), yields_slices(var.chain));
    let mut taken = 0;
    let mut out = Vec::with_capacity(rest.len());
    for (i, t) in rest[..=last].iter().enumerate() {
        let uses = uses_in(t, var.name);
        let advances: Option<usize> = uses
            .iter()
            .map(|u| match u {
                Use::Advance(k) => Some(*k),
                _ => None,
            })
            .sum();
        match advances {
            Some(k) if k > 0 && (slices || (filtered && taken + k > 1)) => return None,
            Some(_) => {
                let mut t = t.clone();
                Advancer {
                    var: &var,
                    taken: &mut taken,
                }
                .visit_stmt_mut(&mut t);
                out.push(t);
            }
            None if i == last && !(filtered && taken > 0) => out.push(consumed(t, &var, taken)?),
            None => return None,
        }
    }
    out.extend(rest[last + 1..].iter().cloned());
    Some(out)
}

/// Whether the statements `between` (after the `let`, up to the last use) leave the
/// chain's names and the variable's name as they are: none is written or bound again.
fn keeps_chain(var: &IteratorLet, between: &[syn::Stmt]) -> bool {
    let block = syn::Block {
        brace_token: Default::default(),
        stmts: between.to_vec(),
    };
    let mut bound = BoundNames::default();
    syn::visit::Visit::visit_block(&mut bound, &block);
    let bound = bound.0;
    // The chain's own closure parameters are not names it reads from around it.
    let mut own = BoundNames::default();
    syn::visit::Visit::visit_expr(&mut own, var.chain);
    let own = own.0;
    let mut names = Vec::new();
    walk_idents(&var.chain.to_token_stream(), &mut |i| {
        if !own.contains(&i.to_string()) {
            names.push(i.clone());
        }
    });
    // (The variable itself is written by its `next` and `nth`, which are read here.)
    !bound.contains(&var.name.to_string())
        && !writes(var.chain)
        && names
            .iter()
            .all(|n| !bound.contains(&n.to_string()) && !writes_local(&block, n))
}

/// Whether the chain `e` writes anything (`.map(|v| { count += 1; v })`): written again,
/// it would give other items.
fn writes(e: &Expr) -> bool {
    struct Writes(bool);
    impl<'v> syn::visit::Visit<'v> for Writes {
        fn visit_expr(&mut self, e: &'v Expr) {
            self.0 |= match e {
                Expr::Assign(_) => true,
                Expr::Binary(b) => is_compound(&b.op),
                Expr::Reference(r) => r.mutability.is_some(),
                // (`x.last()`, `x.get(i)`, `x.split_at(k)` only read.)
                Expr::MethodCall(m) => {
                    let name = m.method.to_string();
                    is_buffer_method_name(&name) && !reads_only(&name)
                }
                _ => false,
            };
            syn::visit::visit_expr(self, e);
        }
    }
    let mut w = Writes(false);
    syn::visit::Visit::visit_expr(&mut w, e);
    w.0
}

/// Whether the buffer method `name` reads the buffer and writes nothing of it.
fn reads_only(name: &str) -> bool {
    matches!(
        name,
        "first" | "last" | "get" | "split_at" | "split_first" | "split_last"
    )
}

/// One use of the variable in a statement.
enum Use {
    /// `it.next()` (1) or `it.nth(k)` (`k + 1`), evaluated once where it stands.
    Advance(usize),
    /// The same, where it may be evaluated more or fewer times than once.
    ConditionalAdvance,
    /// Any other use (`for v in it`, `it.sum()`, `&mut it`).
    Other,
}

/// The number of items that `e` takes where it is `it.next()` or `it.nth(k)` of the
/// variable `name`, `k` an integer literal.
fn advance_of(e: &Expr, name: &Ident) -> Option<usize> {
    let Expr::MethodCall(m) = e else { return None };
    if !matches!(strip(&m.receiver), Expr::Path(p) if p.qself.is_none() && p.path.is_ident(name)) {
        return None;
    }
    match (m.method.to_string().as_str(), m.args.first()) {
        ("next", None) => Some(1),
        ("nth", Some(k)) if m.args.len() == 1 => match strip(k) {
            Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(k),
                ..
            }) => k.base10_parse::<usize>().ok()?.checked_add(1),
            _ => None,
        },
        _ => None,
    }
}

/// The uses of the variable `name` in `s`, in the order they are evaluated.
fn uses_in(s: &syn::Stmt, name: &Ident) -> Vec<Use> {
    struct Finder<'a> {
        name: &'a Ident,
        /// Whether the code visited may run other than once.
        conditional: bool,
        uses: Vec<Use>,
    }
    impl Finder<'_> {
        fn conditionally(&mut self, f: impl FnOnce(&mut Self)) {
            let was = std::mem::replace(&mut self.conditional, true);
            f(self);
            self.conditional = was;
        }
    }
    impl<'v> syn::visit::Visit<'v> for Finder<'_> {
        fn visit_expr(&mut self, e: &'v Expr) {
            use syn::visit::*;
            if let Some(k) = advance_of(e, self.name) {
                self.uses.push(match self.conditional {
                    false => Use::Advance(k),
                    true => Use::ConditionalAdvance,
                });
                if let Expr::MethodCall(m) = e {
                    m.args.iter().for_each(|a| self.visit_expr(a));
                }
                return;
            }
            match e {
                Expr::Path(p) if p.qself.is_none() && p.path.is_ident(self.name) => {
                    self.uses.push(Use::Other)
                }
                Expr::Closure(c) => self.conditionally(|f| f.visit_expr(&c.body)),
                Expr::If(i) => {
                    self.visit_expr(&i.cond);
                    self.conditionally(|f| {
                        f.visit_block(&i.then_branch);
                        if let Some((_, e)) = &i.else_branch {
                            f.visit_expr(e);
                        }
                    });
                }
                Expr::Match(m) => {
                    self.visit_expr(&m.expr);
                    self.conditionally(|f| m.arms.iter().for_each(|a| f.visit_arm(a)));
                }
                Expr::ForLoop(l) => {
                    self.visit_expr(&l.expr);
                    self.conditionally(|f| f.visit_block(&l.body));
                }
                Expr::While(_) | Expr::Loop(_) => self.conditionally(|f| visit_expr(f, e)),
                Expr::Binary(b) if matches!(b.op, syn::BinOp::And(_) | syn::BinOp::Or(_)) => {
                    self.visit_expr(&b.left);
                    self.conditionally(|f| f.visit_expr(&b.right));
                }
                _ => visit_expr(self, e),
            }
        }

        fn visit_local(&mut self, l: &'v syn::Local) {
            if let Some(init) = &l.init {
                self.visit_expr(&init.expr);
                if let Some((_, els)) = &init.diverge {
                    self.conditionally(|f| f.visit_expr(els));
                }
            }
        }

        fn visit_macro(&mut self, m: &'v syn::Macro) {
            // Code inside a macro is not read here: a use there is not one of the forms.
            if crate::member_writes::mentions(m.tokens.clone(), &self.name.to_string()) {
                self.uses.push(Use::Other);
            }
        }
    }
    let mut f = Finder {
        name,
        conditional: false,
        uses: Vec::new(),
    };
    syn::visit::Visit::visit_stmt(&mut f, s);
    f.uses
}

/// The chain as written in place of the variable: a range in parentheses, so that a
/// method applies to the whole of it.
fn in_place(chain: &Expr) -> Expr {
    match strip(chain) {
        Expr::Range(_) => syn::parse_quote_spanned!(chain.span()=> (#chain)),
        _ => chain.clone(),
    }
}

/// The chain past its first `taken` items (the chain itself where none is taken).
fn skipped(chain: &Expr, taken: usize) -> Expr {
    let chain = in_place(chain);
    match taken {
        0 => chain,
        k => {
            let k = proc_macro2::Literal::usize_unsuffixed(k);
            syn::parse_quote_spanned!(chain.span()=> #chain.skip(#k))
        }
    }
}

/// Writes each `it.next()` and `it.nth(k)` as the item of the chain it takes, counting
/// the items taken in `taken`.
struct Advancer<'a, 'v> {
    var: &'a IteratorLet<'v>,
    taken: &'a mut usize,
}

impl VisitMut for Advancer<'_, '_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        let Some(k) = advance_of(e, self.var.name) else {
            return syn::visit_mut::visit_expr_mut(self, e);
        };
        let span = e.span();
        let chain = in_place(self.var.chain);
        // The item at the position reached: `next()` of the chain where it is the first.
        *e = match *self.taken + k - 1 {
            0 => syn::parse_quote_spanned!(span=> #chain.next()),
            n => {
                let n = proc_macro2::Literal::usize_unsuffixed(n);
                syn::parse_quote_spanned!(span=> #chain.nth(#n))
            }
        };
        *self.taken += k;
    }
}

/// The last statement that names the variable, with the chain past the `taken` items in
/// its place: `while let Some(p) = it.next() { .. }` becomes a `for` loop over it.
fn consumed(s: &syn::Stmt, var: &IteratorLet, taken: usize) -> Option<syn::Stmt> {
    let rest = skipped(var.chain, taken);
    if let syn::Stmt::Expr(Expr::While(w), semi) = s
        && let Expr::Let(l) = &*w.cond
        && advance_of(&l.expr, var.name) == Some(1)
        && let Pat::TupleStruct(t) = &*l.pat
        && t.qself.is_none()
        && t.path.is_ident("Some")
        && t.elems.len() == 1
        && !crate::member_writes::mentions(w.body.to_token_stream(), &var.name.to_string())
    {
        let (attrs, label, body, pat) = (&w.attrs, &w.label, &w.body, &t.elems[0]);
        let l: Expr = syn::parse_quote_spanned!(w.while_token.span=>
            #(#attrs)* #label for #pat in #rest #body);
        return Some(syn::Stmt::Expr(l, *semi));
    }
    let uses = uses_in(s, var.name);
    if uses.iter().any(|u| !matches!(u, Use::Other)) {
        return None;
    }
    struct Replacer<'a> {
        name: &'a Ident,
        rest: &'a Expr,
    }
    impl VisitMut for Replacer<'_> {
        fn visit_expr_mut(&mut self, e: &mut Expr) {
            match e {
                Expr::Path(p) if p.qself.is_none() && p.path.is_ident(self.name) => {
                    *e = self.rest.clone();
                }
                _ => syn::visit_mut::visit_expr_mut(self, e),
            }
        }
    }
    let mut s = s.clone();
    Replacer {
        name: var.name,
        rest: &rest,
    }
    .visit_stmt_mut(&mut s);
    // A use left in a macro's tokens is not replaced: the variable stays.
    (!crate::member_writes::mentions(s.to_token_stream(), &var.name.to_string())).then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(body: &str) -> String {
        let mut b: syn::Block = syn::parse_str(body).unwrap();
        inline_iterator_variables(&mut b);
        b.to_token_stream().to_string()
    }

    fn same(body: &str) {
        let parsed: syn::Block = syn::parse_str(body).unwrap();
        assert_eq!(
            written(body),
            parsed.to_token_stream().to_string(),
            "{body}"
        );
    }

    #[test]
    fn items_taken_then_the_rest_consumed() {
        assert_eq!(
            written(
                "{ let mut it = x.iter().map(|v| v * v); let a = it.next().unwrap(); \
                 let b = it.nth(2); for v in it { s += v; } }"
            ),
            written(
                "{ let a = x.iter().map(|v| v * v).next().unwrap(); \
                 let b = x.iter().map(|v| v * v).nth(3); \
                 for v in x.iter().map(|v| v * v).skip(4) { s += v; } }"
            )
        );
        assert_eq!(
            written(
                "{ let mut r = 0..n; let i = r.next().unwrap(); \
                 'l: while let Some(j) = r.next() { break 'l; } }"
            ),
            written(
                "{ let i = (0..n).next().unwrap(); 'l: for j in (0..n).skip(1) { break 'l; } }"
            )
        );
        assert_eq!(
            written("{ let it = x.iter().rev(); let t: f64 = it.sum(); t }"),
            written("{ let t: f64 = x.iter().rev().sum(); t }")
        );
        // A mapped chain of windows.
        assert_eq!(
            written(
                "{ let mut d = x.windows(2).map(|w| w[1] - w[0]); let a = d.next(); d.sum::<f64>() }"
            ),
            written(
                "{ let a = x.windows(2).map(|w| w[1] - w[0]).next(); x.windows(2).map(|w| w[1] - w[0]).skip(1).sum::<f64>() }"
            )
        );
        // The last use, whatever it is, reads the rest.
        assert_eq!(
            written("{ let mut it = x.iter(); let a = it.next(); g(&mut it, a) }"),
            written("{ let a = x.iter().next(); g(&mut x.iter().skip(1), a) }")
        );
        // Two items taken by one statement, in the order they are evaluated.
        assert_eq!(
            written(
                "{ let mut it = x.iter(); let d = it.next().unwrap() - it.next().unwrap(); d }"
            ),
            written("{ let d = x.iter().next().unwrap() - x.iter().nth(1).unwrap(); d }")
        );
        // The first item of a filter.
        assert_eq!(
            written("{ let mut f = x.iter().filter(|v| **v > 0.0); let p = f.next(); p }"),
            written("{ let p = x.iter().filter(|v| **v > 0.0).next(); p }")
        );
    }

    #[test]
    fn left_as_written_where_the_chain_would_change() {
        // A `next` that may run other than once.
        same("{ let mut it = x.iter(); if c { it.next(); } for v in it { s += v; } }");
        same("{ let mut it = x.iter(); for _ in 0..2 { it.next(); } it.sum::<f64>() }");
        same("{ let mut it = x.iter(); let a = c && it.next().is_some(); it.count() }");
        // The chain's names written or bound again before the last use.
        same("{ let mut it = x.iter(); let a = it.next(); x = y; it.sum::<f64>() }");
        same(
            "{ let mut it = x.iter().map(|v| v * k); let a = it.next(); let k = 2.0; it.sum::<f64>() }",
        );
        // Positions past a filter, and slices.
        same("{ let mut f = x.iter().filter(|v| **v > 0.0); f.next(); f.sum::<f64>() }");
        same("{ let mut w = x.windows(2); let a = w.next(); a }");
        // A chain that writes what it reads; a vector moved by `into_iter`.
        same("{ let mut it = x.iter().map(|v| { k += 1.0; v * k }); it.next(); it.sum::<f64>() }");
        same("{ let mut it = v.into_iter(); it.next(); it.sum::<f64>() }");
        // Values computed where they stand: an array's `map`, an `Option`'s.
        same("{ let m = a.map(|v| v * 2.0); m.sum() }");
        same("{ let f = x.iter().position(|&v| v > 1.0).map(|i| x[i]); f.unwrap_or(0.0) }");
        // `nth` of a variable before another item; a use inside a macro.
        same("{ let mut it = x.iter(); let a = it.nth(k); let b = it.next(); a }");
        same("{ let mut it = x.iter(); let a = it.next(); println!(\"{:?}\", it); }");
    }
}
