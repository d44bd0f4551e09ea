//! `Option` locals of a number (`let mut prev: Option<f64> = None;`), written before
//! lowering as a flag and a value, which the lowering reads as any other locals:
//!
//! ```text
//! let mut o: Option<f64> = None;       →  let mut has_o = false; let mut some_o: f64 = 0.0;
//! let mut o = Some(e);                 →  let mut has_o = true; let mut some_o = e;
//! o = Some(e)                          →  { some_o = e; has_o = true; }
//! o = None                             →  has_o = false
//! o.is_some(), o.is_none()             →  has_o, !has_o
//! o.unwrap(), o.expect(m)              →  { assert!(has_o, ..); some_o }
//! o.unwrap_or(d)                       →  { let d0 = d; if has_o { some_o } else { d0 } }
//! o.unwrap_or_else(|| d)               →  if has_o { some_o } else { d }
//! o.map_or(d, |p| b)                   →  { let d0 = d; if has_o { let p = some_o; b } else { d0 } }
//! o.is_some_and(|p| c)                 →  has_o && { let p = some_o; c }
//! o.is_none_or(|p| c)                  →  !has_o || { let p = some_o; c }
//! if let Some(p) = o { a } else { b }  →  if has_o { let p = some_o; a } else { b }
//! match o { Some(p) => a, None => b }  →  the same
//! let Some(p) = o else { b };          →  let p = if has_o { some_o } else { b };
//! ```
//!
//! The value of a `None` is never read, so its zero carries nothing. Where the local
//! starts as `None`, a written type must be a float or an integer type, and the zero is
//! that type's; without one (`let mut o = None;`), the value starts as
//! `Default::default()` and rustc infers its type from the values assigned, as it
//! would the option's. The local must be bound once in the function (no
//! parameter, closure parameter or other `let` of its name), and every use of it must be
//! one of the above: anything else (returning it, passing it to a call, `o.take()`)
//! leaves the local as written, and the lowering names what it cannot read.

use super::*;

/// Writes the `Option` locals of `body` as above, where every use of each is one of the
/// forms; `params` are the function's parameter names.
pub(super) fn split_option_locals(body: &mut syn::Block, params: &HashSet<String>) {
    let mut candidates = Vec::new();
    Candidates(&mut candidates).visit_block_mut(body);
    for local in candidates {
        if params.contains(&local.name.to_string()) || bindings_of(body, &local.name) != 1 {
            continue;
        }
        let mut written = body.clone();
        let mut splitter = Splitter {
            local: &local,
            has: format_ident!("__ad_has_{}", local.name),
            some: format_ident!("__ad_some_{}", local.name),
        };
        splitter.visit_block_mut(&mut written);
        // A use left as written names the local still: the option stays whole.
        if !crate::member_writes::mentions(written.to_token_stream(), &local.name.to_string()) {
            *body = written;
        }
    }
}

/// A `let mut o` of an `Option` of a number.
struct OptionLocal {
    name: Ident,
    /// Its type (where written) and that type's zero, where it starts as `None` (`None`
    /// for `Some(e)`). Without a written type the zero is `Default::default()`, whose
    /// type rustc infers from the `Some(e)` assigned later, as it infers the option's.
    zero: Option<(Option<syn::Type>, Expr)>,
}

/// Collects the `let mut o: Option<T> = None` and `let mut o = Some(e)` of a body.
struct Candidates<'a>(&'a mut Vec<OptionLocal>);

impl VisitMut for Candidates<'_> {
    fn visit_local_mut(&mut self, l: &mut syn::Local) {
        syn::visit_mut::visit_local_mut(self, l);
        let (name, ty) = match &l.pat {
            Pat::Ident(p) if p.mutability.is_some() && p.by_ref.is_none() && p.subpat.is_none() => {
                (p.ident.clone(), None)
            }
            Pat::Type(t) => match &*t.pat {
                Pat::Ident(p)
                    if p.mutability.is_some() && p.by_ref.is_none() && p.subpat.is_none() =>
                {
                    (p.ident.clone(), Some(&*t.ty))
                }
                _ => return,
            },
            _ => return,
        };
        let Some(init) = &l.init else { return };
        if init.diverge.is_some() {
            return;
        }
        let number = ty.map(option_of_number);
        let zero = match (strip(&init.expr), number) {
            (e, Some(Some((ty, zero)))) if is_none(e) => Some((Some(ty), zero)),
            (e, None) if is_none(e) => {
                Some((None, syn::parse_quote!(::core::default::Default::default())))
            }
            (e, None | Some(Some(_))) if some_of(e).is_some_and(|v| !is_aggregate(v)) => None,
            _ => return,
        };
        self.0.push(OptionLocal { name, zero });
    }
}

/// `T` and its zero where `ty` is `Option<T>` of a float or integer type `T`; `None`
/// for another type.
fn option_of_number(ty: &syn::Type) -> Option<(syn::Type, Expr)> {
    let syn::Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if p.qself.is_some() || last.ident != "Option" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(a) = &last.arguments else {
        return None;
    };
    let [syn::GenericArgument::Type(inner)] = &a.args.iter().collect::<Vec<_>>()[..] else {
        return None;
    };
    let syn::Type::Path(ip) = inner else {
        return None;
    };
    let name = ip.path.get_ident()?.to_string();
    match name.as_str() {
        "f64" | "f32" => Some(((*inner).clone(), syn::parse_quote!(0.0))),
        n if crate::signature::is_integer_or_bool_name(n) && n != "bool" => {
            Some(((*inner).clone(), syn::parse_quote!(0)))
        }
        _ => None,
    }
}

fn is_none(e: &Expr) -> bool {
    matches!(strip(e), Expr::Path(p) if p.qself.is_none() && p.path.is_ident("None"))
}

/// `e` of `Some(e)`.
pub(super) fn some_of(e: &Expr) -> Option<&Expr> {
    match strip(e) {
        Expr::Call(c) if c.args.len() == 1 => match strip(&c.func) {
            Expr::Path(p) if p.qself.is_none() && p.path.is_ident("Some") => Some(&c.args[0]),
            _ => None,
        },
        _ => None,
    }
}

/// Whether `e` is written as a tuple, an array or a struct (`Some((i, v))`): a value
/// that is not one number, which the option's value local could not hold either.
fn is_aggregate(e: &Expr) -> bool {
    matches!(
        strip(e),
        Expr::Tuple(_) | Expr::Array(_) | Expr::Repeat(_) | Expr::Struct(_)
    )
}

/// The number of patterns in `body` (`let`s, closure parameters, `for`, `match` and `if
/// let` patterns) that bind `name`.
fn bindings_of(body: &mut syn::Block, name: &Ident) -> usize {
    struct Count<'a>(&'a Ident, usize);
    impl VisitMut for Count<'_> {
        fn visit_pat_ident_mut(&mut self, p: &mut syn::PatIdent) {
            syn::visit_mut::visit_pat_ident_mut(self, p);
            if p.ident == *self.0 {
                self.1 += 1;
            }
        }
    }
    let mut count = Count(name, 0);
    count.visit_block_mut(body);
    count.1
}

struct Splitter<'a> {
    local: &'a OptionLocal,
    /// The flag: whether the option holds a value.
    has: Ident,
    /// The value, read only where the flag is set.
    some: Ident,
}

impl Splitter<'_> {
    /// Whether `e` is the local itself.
    fn is_local(&self, e: &Expr) -> bool {
        matches!(strip(e), Expr::Path(p) if p.qself.is_none() && p.path.is_ident(&self.local.name))
    }

    /// `let p = some; body` as a block, for a closure `|p| body` or a pattern `Some(p)`.
    fn bound(&self, pat: &Pat, body: &Expr) -> Expr {
        let some = &self.some;
        syn::parse_quote_spanned!(body.span()=> { let #pat = #some; #body })
    }

    /// The pattern `p` of `Some(p)` (`p` a binding or `_`).
    fn some_pattern(pat: &Pat) -> Option<&Pat> {
        let Pat::TupleStruct(t) = pat else {
            return None;
        };
        let [inner] = &t.elems.iter().collect::<Vec<_>>()[..] else {
            return None;
        };
        (t.qself.is_none()
            && t.path.is_ident("Some")
            && matches!(inner, Pat::Ident(_) | Pat::Wild(_)))
        .then_some(*inner)
    }

    fn is_none_pattern(pat: &Pat) -> bool {
        matches!(pat, Pat::Ident(p) if p.ident == "None" && p.subpat.is_none())
            || matches!(pat, Pat::Path(p) if p.path.is_ident("None"))
            || matches!(pat, Pat::Wild(_))
    }

    /// `e` written with the flag and the value, where it is one of the forms.
    fn split(&self, e: &Expr) -> Option<Expr> {
        let (has, some) = (&self.has, &self.some);
        let span = e.span();
        match e {
            Expr::Assign(a) if self.is_local(&a.left) => {
                if is_none(&a.right) {
                    return Some(syn::parse_quote_spanned!(span=> #has = false));
                }
                let v = some_of(&a.right).filter(|v| !is_aggregate(v))?;
                Some(syn::parse_quote_spanned!(span=> { #some = #v; #has = true; }))
            }
            Expr::MethodCall(m) if self.is_local(&m.receiver) => {
                let args: Vec<&Expr> = m.args.iter().collect();
                let closure = |i: usize| match args.get(i).map(|a| strip(a)) {
                    Some(Expr::Closure(c))
                        if c.inputs.len() == 1 && !leaves_the_closure(&c.body) =>
                    {
                        Some((&c.inputs[0], &*c.body))
                    }
                    _ => None,
                };
                Some(match (m.method.to_string().as_str(), args.len()) {
                    ("is_some", 0) => syn::parse_quote_spanned!(span=> #has),
                    ("is_none", 0) => syn::parse_quote_spanned!(span=> !#has),
                    ("unwrap" | "expect", _) => syn::parse_quote_spanned!(span=> {
                        ::core::assert!(#has, "called `Option::unwrap()` on a `None` value");
                        #some
                    }),
                    ("unwrap_or", 1) => {
                        let d = args[0];
                        syn::parse_quote_spanned!(span=> {
                            let __ad_default = #d;
                            if #has { #some } else { __ad_default }
                        })
                    }
                    ("unwrap_or_else", 1) => {
                        let d = super::option_maps::called_without_arguments(args[0])?;
                        syn::parse_quote_spanned!(span=> if #has { #some } else { #d })
                    }
                    ("map_or", 2) => {
                        let (pat, body) = closure(1)?;
                        let (d, then) = (args[0], self.bound(pat, body));
                        syn::parse_quote_spanned!(span=> {
                            let __ad_default = #d;
                            if #has #then else { __ad_default }
                        })
                    }
                    ("is_some_and", 1) => {
                        let (pat, body) = closure(0)?;
                        let then = self.bound(pat, body);
                        syn::parse_quote_spanned!(span=> (#has && #then))
                    }
                    ("is_none_or", 1) => {
                        let (pat, body) = closure(0)?;
                        let then = self.bound(pat, body);
                        syn::parse_quote_spanned!(span=> (!#has || #then))
                    }
                    _ => return None,
                })
            }
            Expr::If(i) => {
                let Expr::Let(l) = &*i.cond else { return None };
                if !self.is_local(&l.expr) {
                    return None;
                }
                let pat = Self::some_pattern(&l.pat)?;
                let then = self.bound(
                    pat,
                    &Expr::Block(syn::ExprBlock {
                        attrs: Vec::new(),
                        label: None,
                        block: i.then_branch.clone(),
                    }),
                );
                let els = match &i.else_branch {
                    Some((_, e)) => (**e).clone(),
                    None => syn::parse_quote!({}),
                };
                Some(syn::parse_quote_spanned!(span=> if #has #then else #els))
            }
            Expr::Match(m) if self.is_local(&m.expr) && m.arms.len() == 2 => {
                let mut some_arm = None;
                let mut none_arm = None;
                for arm in &m.arms {
                    if arm.guard.is_some() {
                        return None;
                    }
                    if let Some(p) = Self::some_pattern(&arm.pat)
                        && some_arm.is_none()
                    {
                        some_arm = Some((p, &*arm.body));
                    } else if Self::is_none_pattern(&arm.pat) && none_arm.is_none() {
                        none_arm = Some(&*arm.body);
                    } else {
                        return None;
                    }
                }
                let ((pat, body), none) = (some_arm?, none_arm?);
                let then = self.bound(pat, body);
                Some(syn::parse_quote_spanned!(span=> if #has #then else { #none }))
            }
            _ => None,
        }
    }
}

impl VisitMut for Splitter<'_> {
    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        visit_macro_items(self, m);
    }

    fn visit_expr_mut(&mut self, e: &mut Expr) {
        syn::visit_mut::visit_expr_mut(self, e);
        if let Some(split) = self.split(e) {
            *e = split;
        }
    }

    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        syn::visit_mut::visit_block_mut(self, b);
        let mut stmts = Vec::with_capacity(b.stmts.len() + 1);
        for s in std::mem::take(&mut b.stmts) {
            stmts.extend(self.split_local(&s).unwrap_or_else(|| vec![s]));
        }
        b.stmts = stmts;
    }
}

impl Splitter<'_> {
    /// The statements for the `let` `s`, where it binds the local (its flag and its
    /// value) or is `let Some(p) = o else { .. };`.
    fn split_local(&self, s: &syn::Stmt) -> Option<Vec<syn::Stmt>> {
        let syn::Stmt::Local(l) = s else { return None };
        let (has, some) = (&self.has, &self.some);
        let init = l.init.as_ref()?;
        let span = l.span();
        let binds_local = match &l.pat {
            Pat::Ident(p) => p.ident == self.local.name,
            Pat::Type(t) => matches!(&*t.pat, Pat::Ident(p) if p.ident == self.local.name),
            _ => false,
        };
        if binds_local {
            return Some(match (&self.local.zero, some_of(&init.expr)) {
                (Some((ty, zero)), _) => vec![
                    syn::parse_quote_spanned!(span=> let mut #has = false;),
                    match ty {
                        Some(ty) => syn::parse_quote_spanned!(span=> let mut #some: #ty = #zero;),
                        None => syn::parse_quote_spanned!(span=> let mut #some = #zero;),
                    },
                ],
                (None, Some(v)) => vec![
                    syn::parse_quote_spanned!(span=> let mut #has = true;),
                    syn::parse_quote_spanned!(span=> let mut #some = #v;),
                ],
                (None, None) => return None,
            });
        }
        let (_, els) = init.diverge.as_ref()?;
        let pat = Self::some_pattern(&l.pat)?;
        self.is_local(&init.expr).then(|| {
            vec![syn::parse_quote_spanned!(span=> let #pat = if #has { #some } else #els;)]
        })
    }
}
