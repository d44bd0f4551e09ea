//! Whether a `let` binding without a written type is an integer, from how the statements
//! after it use it.
//!
//! `let i = locate(xs, t);` calls a plain helper with a value that may carry a
//! derivative. The macro cannot see `locate`'s return type, and a float there would need
//! a derivative; but where the statements after the `let` index with `i` (`ys[i + 1]`),
//! count with it (`0..i`, `x.iter().take(i)`, `vec![0.0; i]`) or compare it with an
//! integer literal (`i == 0`), the code compiles only if `i` is an integer, so the call
//! needs no derivative, as `let i: usize = locate(xs, t);` needs none. Uses that other
//! types allow too prove nothing: a cast (`i as usize`), an argument of a call, a method
//! of unknown type, arithmetic outside an index (`v * 2` may be a user type's operator).
//! The search stops at the first statement that binds the name again, where another
//! value may take it.
//!
//! The reading is confirmed by rustc: the value is kept through
//! `autodiff_core::__private::integer_use::no_grad`, which takes integers only, so a
//! reading that is wrong is a compile error naming the value's type, never a derivative
//! dropped.

use crate::lower::{strip, vec_repeat};
use syn::visit::Visit;
use syn::{BinOp, Expr, Lit, Pat, Stmt};

/// Whether `stmts` use the binding `name` where only an integer fits, before any of them
/// binds `name` again.
pub fn used_as_integer(name: &str, stmts: &[Stmt]) -> bool {
    for s in stmts {
        let mut rebinds = Rebinds { name, found: false };
        rebinds.visit_stmt(s);
        if rebinds.found {
            return false;
        }
        let mut uses = Uses { name, found: false };
        uses.visit_stmt(s);
        if uses.found {
            return true;
        }
    }
    false
}

/// Iterator adapters whose argument is a count or a position, on a receiver that is
/// evidently an iterator (see [`is_iterator`]): a user type's method of the same name
/// may take a float.
const COUNT_ARGUMENTS: &[&str] = &["take", "skip", "step_by", "nth"];

/// Methods that make an iterator of a buffer.
const ITERATOR_SOURCES: &[&str] = &[
    "iter",
    "iter_mut",
    "into_iter",
    "chunks",
    "chunks_exact",
    "windows",
];

/// Adapters that keep an iterator one.
const ITERATOR_ADAPTERS: &[&str] = &[
    "map",
    "zip",
    "enumerate",
    "rev",
    "skip",
    "take",
    "step_by",
    "copied",
    "cloned",
    "filter",
];

/// Methods of an iterator of a range whose use says that the range is one of integers
/// (a range of floats is no iterator).
const RANGE_ITERATION: &[&str] = &[
    "map",
    "rev",
    "step_by",
    "skip",
    "take",
    "filter",
    "zip",
    "enumerate",
    "sum",
    "product",
    "fold",
    "for_each",
    "collect",
    "count",
    "any",
    "all",
    "find",
    "position",
];

/// Methods of the integers that a float receiver does not have or that give a float,
/// which an index or a count cannot be: in such a position, their receiver is an integer.
const INTEGER_METHODS: &[&str] = &[
    "min",
    "max",
    "clamp",
    "pow",
    "abs_diff",
    "saturating_sub",
    "saturating_add",
    "wrapping_sub",
    "wrapping_add",
    "checked_sub",
    "rem_euclid",
    "div_euclid",
];

struct Uses<'n> {
    name: &'n str,
    found: bool,
}

impl Uses<'_> {
    fn is_name(&self, e: &Expr) -> bool {
        matches!(strip(e), Expr::Path(p) if p.qself.is_none() && p.path.is_ident(self.name))
    }

    /// Whether `e`, in a position where only an integer fits (an index, a range's
    /// bound, a count), has the binding as an operand of its integer arithmetic.
    fn in_integer_position(&self, e: &Expr) -> bool {
        match strip(e) {
            Expr::Path(_) => self.is_name(e),
            Expr::Binary(b) if is_arithmetic(&b.op) => {
                self.in_integer_position(&b.left) || self.in_integer_position(&b.right)
            }
            Expr::Range(r) => [&r.start, &r.end]
                .into_iter()
                .flatten()
                .any(|b| self.in_integer_position(b)),
            // `a[[i, j]]` of an `ndarray` array.
            Expr::Array(a) => a.elems.iter().any(|x| self.in_integer_position(x)),
            Expr::MethodCall(m) if INTEGER_METHODS.contains(&m.method.to_string().as_str()) => {
                self.in_integer_position(&m.receiver)
                    || m.args.iter().any(|a| self.in_integer_position(a))
            }
            _ => false,
        }
    }
}

impl<'v> Visit<'v> for Uses<'_> {
    fn visit_expr(&mut self, e: &'v Expr) {
        if self.found {
            return;
        }
        match e {
            Expr::Index(ix) if self.in_integer_position(&ix.index) => self.found = true,
            // `for j in 0..i`: a range iterated is one of integers.
            Expr::ForLoop(f)
                if matches!(strip(&f.expr), Expr::Range(_))
                    && self.in_integer_position(&f.expr) =>
            {
                self.found = true
            }
            // `vec![0.0; n]`.
            Expr::Macro(_) if let Some((value, count)) = vec_repeat(e) => {
                self.found = self.in_integer_position(&count);
                self.visit_expr(&value);
                self.visit_expr(&count);
            }
            Expr::MethodCall(m) => {
                let name = m.method.to_string();
                let counts = COUNT_ARGUMENTS.contains(&name.as_str())
                    && is_iterator(&m.receiver)
                    && m.args.iter().any(|a| self.in_integer_position(a));
                // `(0..i).map(..)`: a range iterated.
                let range = RANGE_ITERATION.contains(&name.as_str())
                    && matches!(strip(&m.receiver), Expr::Range(_))
                    && self.in_integer_position(&m.receiver);
                if counts || range {
                    self.found = true;
                } else {
                    syn::visit::visit_expr_method_call(self, m);
                }
            }
            // `i == 0`, `i < 3`: a float is not compared with an integer literal (an
            // operator might be a user type's, `v * 2`, so only comparisons count).
            Expr::Binary(b)
                if is_comparison(&b.op)
                    && ((self.is_name(&b.left) && is_integer_literal(&b.right))
                        || (self.is_name(&b.right) && is_integer_literal(&b.left))) =>
            {
                self.found = true
            }
            e => syn::visit::visit_expr(self, e),
        }
    }
}

/// Whether `e` is evidently an iterator: a range, or a buffer's `iter()` (`chunks`,
/// `windows`, ..) with adapters.
fn is_iterator(e: &Expr) -> bool {
    match strip(e) {
        Expr::Range(_) => true,
        Expr::MethodCall(m) => {
            let name = m.method.to_string();
            ITERATOR_SOURCES.contains(&name.as_str())
                || (ITERATOR_ADAPTERS.contains(&name.as_str()) && is_iterator(&m.receiver))
        }
        _ => false,
    }
}

fn is_comparison(op: &BinOp) -> bool {
    matches!(
        op,
        BinOp::Eq(_) | BinOp::Ne(_) | BinOp::Lt(_) | BinOp::Le(_) | BinOp::Gt(_) | BinOp::Ge(_)
    )
}

fn is_arithmetic(op: &BinOp) -> bool {
    matches!(
        op,
        BinOp::Add(_) | BinOp::Sub(_) | BinOp::Mul(_) | BinOp::Div(_) | BinOp::Rem(_)
    )
}

/// An integer literal without a float suffix (`0`, `-1`, `2usize`; not `2.0`, `2f64`).
fn is_integer_literal(e: &Expr) -> bool {
    match strip(e) {
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => is_integer_literal(&u.expr),
        Expr::Lit(l) => matches!(&l.lit, Lit::Int(i) if !matches!(i.suffix(), "f32" | "f64")),
        _ => false,
    }
}

/// Whether a statement binds the name again anywhere (`let`, a `for` or closure
/// parameter, a `match` arm), or names it in a macro, whose tokens are not read here.
struct Rebinds<'n> {
    name: &'n str,
    found: bool,
}

impl<'v> Visit<'v> for Rebinds<'_> {
    fn visit_expr(&mut self, e: &'v Expr) {
        match vec_repeat(e) {
            // `vec![v; n]`, whose parts are read.
            Some((value, count)) => {
                self.visit_expr(&value);
                self.visit_expr(&count);
            }
            None => syn::visit::visit_expr(self, e),
        }
    }

    fn visit_pat(&mut self, p: &'v Pat) {
        if let Pat::Ident(pi) = p
            && pi.ident == self.name
        {
            self.found = true;
        }
        syn::visit::visit_pat(self, p);
    }

    fn visit_macro(&mut self, m: &'v syn::Macro) {
        let named = m
            .tokens
            .clone()
            .into_iter()
            .any(|t| matches!(&t, proc_macro2::TokenTree::Ident(id) if id == self.name));
        self.found |= named;
    }
}

#[cfg(test)]
mod tests {
    use super::used_as_integer;

    fn uses(body: &str) -> bool {
        let block: syn::Block = syn::parse_str(&format!("{{ {body} }}")).unwrap();
        used_as_integer("i", &block.stmts)
    }

    #[test]
    fn positions_where_only_an_integer_fits() {
        assert!(uses("let w = ys[i + 1] - ys[i];"));
        assert!(uses("let s = a[[i, 0]];"));
        assert!(uses("for j in 0..i { s += x[j]; }"));
        assert!(uses("let s: f64 = x.iter().take(i).sum();"));
        assert!(uses("let s: f64 = (0..i).map(|j| x[j]).sum();"));
        assert!(uses("let mut w = vec![0.0; i + 1];"));
        assert!(uses("if i == 0 { return 0.0; }"));
        assert!(uses("while 2 > i { s += 1.0; }"));
        assert!(uses("if i != -1 { s += 1.0; }"));
        assert!(uses("let m = x[i.min(n - 1)];"));
        assert!(uses("let q = y * 2.0; let v = x[2 * i];"));
    }

    #[test]
    fn uses_that_prove_nothing() {
        assert!(!uses("let y = i * 2.0;"));
        assert!(!uses("let w = i * 2;"));
        assert!(!uses("let w = 2 * i;"));
        assert!(!uses("if i > 2.0 { s += 1.0; }"));
        assert!(!uses("for a in i { s += a; }"));
        assert!(!uses("let s: f64 = i.iter().sum();"));
        assert!(!uses("let q = p.rotate_left(i);"));
        assert!(!uses("let q = account.take(i);"));
        assert!(!uses("let e = (0.0..i).is_empty();"));
        assert!(!uses("let k = x[i as usize];"));
        assert!(!uses("let y = g(i); let v = x[y];"));
        assert!(!uses("let r = (0.0..i).contains(&t);"));
        assert!(!uses("let y = i.max(0.5); let v = x[k];"));
        assert!(!uses("let m = x[i.floor() as usize];"));
    }

    #[test]
    fn a_binding_again_ends_the_search() {
        assert!(!uses("let i = 3; let v = x[i];"));
        assert!(!uses("for i in 0..n { s += x[i]; }"));
        assert!(!uses("let f = |i: usize| x[i];"));
        assert!(!uses("println!(\"{}\", i); let v = x[i];"));
        assert!(!uses("let w = vec![|i: usize| i; 2]; let v = x[i];"));
        assert!(uses("let v = x[i]; let i = 2.0;"));
    }
}
