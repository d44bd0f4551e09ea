//! Which members of a struct parameter behind `&mut` a function body may change.
//!
//! A reverse companion keeps the final value of such a parameter while its reverse sweep
//! puts back what the forward sweep overwrote, and writes that value back at the end.
//! Where the body changes the struct only through its members (`self.p += dt * self.v`,
//! `self.buf[i] = x`, `self.hist.push(y)`, `&mut self.m` lent to a call), keeping those
//! members is enough, and the struct itself need not be `Clone`. Anything else that may
//! change it (a method of the struct itself, `self` lent or moved whole, `*self = ..`,
//! a macro naming it) answers `None`, and the whole struct is kept.

use crate::lower::{is_compound, strip};
use syn::visit::Visit;
use syn::{Block, Expr, Member};

/// The members of the parameter `param` that `body` may change, in order of first
/// appearance, or `None` where the body may change the struct otherwise.
pub fn members_written(body: &Block, param: &str) -> Option<Vec<Member>> {
    let mut finder = Finder {
        param,
        written: Vec::new(),
        whole: false,
    };
    finder.visit_block(body);
    (!finder.whole).then_some(finder.written)
}

struct Finder<'p> {
    param: &'p str,
    /// Each member written, once, in the order first seen.
    written: Vec<Member>,
    /// Whether the body may change the struct other than through a member.
    whole: bool,
}

impl Finder<'_> {
    /// `param`, or `*param`.
    fn is_param(&self, e: &Expr) -> bool {
        match strip(e) {
            Expr::Path(p) => p.qself.is_none() && p.path.is_ident(self.param),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => self.is_param(&u.expr),
            _ => false,
        }
    }

    /// Records that the place `e` may change: a member of `param` (`param.m`) or one of
    /// its elements (`param.m[i]`), the member; `param` itself, or a place deeper in a
    /// member (`param.m.x`, `param.m[i][j]`, whose member is a struct or a matrix: kept
    /// whole, as the code that differentiates the function again reads it), the whole
    /// struct. Other places are not `param`'s.
    fn changes(&mut self, e: &Expr) {
        match self.place_in_param(e) {
            Some(Some(m)) if !self.written.contains(&m) => self.written.push(m),
            Some(Some(_)) => {}
            Some(None) => self.whole = true,
            None => {}
        }
    }

    /// Where the place `e` lies in `param`: `Some(Some(m))` for `param.m` and
    /// `param.m[i]`, `Some(None)` for `param` or a place deeper in a member, `None` for
    /// a place elsewhere.
    fn place_in_param(&self, e: &Expr) -> Option<Option<Member>> {
        if self.is_param(e) {
            return Some(None);
        }
        let (base, indexed) = match strip(e) {
            Expr::Index(i) => (strip(&i.expr), true),
            e => (e, false),
        };
        match base {
            Expr::Field(f) if self.is_param(&f.base) => Some(Some(f.member.clone())),
            _ if indexed => self.place_in_param(base).map(|_| None),
            Expr::Field(f) => self.place_in_param(&f.base).map(|_| None),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => {
                self.place_in_param(&u.expr).map(|_| None)
            }
            _ => None,
        }
    }
}

impl<'ast> Visit<'ast> for Finder<'_> {
    fn visit_expr(&mut self, e: &'ast Expr) {
        match e {
            Expr::Assign(a) => self.changes(&a.left),
            Expr::Binary(b) if is_compound(&b.op) => self.changes(&b.left),
            Expr::Reference(r) if r.mutability.is_some() => self.changes(&r.expr),
            // A buffer method of a member that writes it changes the member; one that
            // only reads it, nothing; any other method, of a member or of the struct
            // itself, may change anything.
            Expr::MethodCall(m) if self.place_in_param(&m.receiver).is_some() => {
                let name = m.method.to_string();
                if BUFFER_WRITES.contains(&name.as_str()) {
                    self.changes(&m.receiver);
                } else if !BUFFER_READS.contains(&name.as_str()) {
                    self.whole = true;
                }
            }
            // `param` named alone, not as the base of a member: lent, moved or bound whole.
            Expr::Path(_) if self.is_param(e) => self.whole = true,
            Expr::Field(f) if self.is_param(&f.base) => return,
            Expr::Macro(m) if mentions(m.mac.tokens.clone(), self.param) => self.whole = true,
            _ => {}
        }
        syn::visit::visit_expr(self, e);
    }

    fn visit_stmt_macro(&mut self, m: &'ast syn::StmtMacro) {
        if mentions(m.mac.tokens.clone(), self.param) {
            self.whole = true;
        }
    }

    // Items declared inside the body have their own `self`.
    fn visit_item(&mut self, _: &'ast syn::Item) {}
}

/// Methods of a vector or slice that change its contents or length.
const BUFFER_WRITES: &[&str] = &[
    "push",
    "fill",
    "iter_mut",
    "copy_from_slice",
    "clone_from_slice",
    "swap",
    "clear",
    "truncate",
    "resize",
    "extend_from_slice",
    "reverse",
];

/// Methods of a vector, slice or float that only read it.
const BUFFER_READS: &[&str] = &[
    "len", "is_empty", "iter", "get", "first", "last", "to_vec", "clone", "sum", "abs", "sqrt",
    "sin", "cos", "exp", "ln", "powi", "powf", "tanh", "max", "min",
];

/// Whether the tokens name `ident` anywhere, nested groups included.
pub(crate) fn mentions(tokens: proc_macro2::TokenStream, ident: &str) -> bool {
    tokens.into_iter().any(|t| match t {
        proc_macro2::TokenTree::Ident(i) => i == ident,
        proc_macro2::TokenTree::Group(g) => mentions(g.stream(), ident),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(body: &str) -> Option<Vec<String>> {
        let block: Block = syn::parse_str(body).unwrap();
        members_written(&block, "self")
            .map(|ms| ms.iter().map(|m| quote::quote!(#m).to_string()).collect())
    }

    #[test]
    fn members_assigned_indexed_lent_or_called_on() {
        assert_eq!(
            written(
                "{ self.p += dt * self.v; self.buf[self.i] = 1.0; g(&mut self.w); self.h.push(self.p); }"
            ),
            Some(vec!["p".into(), "buf".into(), "w".into(), "h".into()])
        );
        assert_eq!(written("{ let s = self.a * self.b; s }"), Some(vec![]));
        assert_eq!(
            written("{ for v in self.xs.iter_mut() { *v *= 2.0; } }"),
            Some(vec!["xs".into()])
        );
        assert_eq!(written("{ self.0 = self.1; }"), Some(vec!["0".into()]));
    }

    #[test]
    fn the_struct_changed_whole_is_not_a_list_of_members() {
        assert_eq!(written("{ self.kick(1.0); }"), None);
        assert_eq!(written("{ helper(self, 2.0); }"), None);
        assert_eq!(written("{ *self = Self::new(); }"), None);
        assert_eq!(written("{ let me = &mut *self; me.p = 0.0; }"), None);
        assert_eq!(written("{ println!(\"{}\", self.p); }"), None);
        assert_eq!(written("{ self.inner.x = 1.0; }"), None);
        assert_eq!(written("{ self.m[0][1] = 1.0; }"), None);
        assert_eq!(written("{ self.inner.bump(); }"), None);
        assert_eq!(
            written("{ let n = self.v.len(); self.p = self.v.iter().sum(); }"),
            Some(vec!["p".into()])
        );
    }
}
