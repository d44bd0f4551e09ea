//! `Option` locals of a number (`let mut prev: Option<f64> = None;`) or of a tuple of
//! numbers (`let mut best = None; .. best = Some((i, v));`), written before lowering as a
//! flag and a value (one per element of a tuple), which the lowering reads as any other
//! locals:
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
//! match o { Some(p) if g => a, _ => b } → if has_o && { let p = some_o; g } { let p = some_o; a } else { b }
//! let Some(p) = o else { b };          →  let p = if has_o { some_o } else { b };
//! ```
//!
//! For a tuple, `some_o` is the tuple of the values, `(some_o_0, some_o_1)`, which a
//! pattern `Some((i, p))` or a closure `|(i, p)|` takes apart, and `o = Some((a, b))`
//! assigns them together (`(some_o_0, some_o_1) = (a, b)`, both evaluated first).
//!
//! The value of a `None` is never read, so its zero carries nothing. Where the local
//! starts as `None`, a written type must be a float or an integer type or a tuple of
//! them, and the zero is that type's; without one (`let mut o = None;`), each value
//! starts as `Default::default()` and rustc infers its type from the values assigned, as
//! it would the option's (the number of values is that of the `Some(e)` assigned, which
//! must agree). The local must be bound once in the function (no
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
        let Some(arity) = local.arity.or_else(|| assigned_arity(body, &local.name)) else {
            continue;
        };
        let somes = match arity {
            1 => vec![format_ident!("__ad_some_{}", local.name)],
            k => (0..k)
                .map(|i| format_ident!("__ad_some_{}_{}", local.name, i))
                .collect(),
        };
        let mut written = body.clone();
        let mut splitter = Splitter {
            local: &local,
            has: format_ident!("__ad_has_{}", local.name),
            somes,
        };
        splitter.visit_block_mut(&mut written);
        // A use left as written names the local still: the option stays whole.
        if !crate::member_writes::mentions(written.to_token_stream(), &local.name.to_string()) {
            *body = written;
        }
    }
}

/// A `let mut o` of an `Option` of a number or of a tuple of numbers.
struct OptionLocal {
    name: Ident,
    /// The types (where written) and zeros of its values, where it starts as `None`
    /// (`None` for `Some(e)`). Without a written type each zero is `Default::default()`,
    /// whose type rustc infers from the `Some(e)` assigned later, as it infers the
    /// option's.
    zeros: Option<Vec<(Option<syn::Type>, Expr)>>,
    /// The number of values, where the `let` tells (a written type, `Some(e)`): 1 for a
    /// number, `k` for a tuple of `k`. An untyped `None` takes it from the assignments.
    arity: Option<usize>,
}

/// Collects the `let mut o: Option<T> = None` and `let mut o = Some(e)` of a body (`mut`
/// or not).
struct Candidates<'a>(&'a mut Vec<OptionLocal>);

impl VisitMut for Candidates<'_> {
    fn visit_local_mut(&mut self, l: &mut syn::Local) {
        syn::visit_mut::visit_local_mut(self, l);
        let (name, ty) = match &l.pat {
            Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => (p.ident.clone(), None),
            Pat::Type(t) => match &*t.pat {
                Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
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
        let numbers = ty.map(option_of_numbers);
        let (zeros, arity) = match (strip(&init.expr), numbers) {
            (e, Some(Some(numbers))) if is_none(e) => {
                let arity = numbers.len();
                let zeros = numbers.into_iter().map(|(t, z)| (Some(t), z)).collect();
                (Some(zeros), Some(arity))
            }
            (e, None) if is_none(e) => (None, None),
            (e, None | Some(Some(_))) => match some_of(e).and_then(value_arity) {
                Some(k) => (None, Some(k)),
                None => return,
            },
            _ => return,
        };
        self.0.push(OptionLocal { name, zeros, arity });
    }
}

/// The types and zeros of the values where `ty` is `Option<T>` of a float or integer
/// type `T` (one value) or of a tuple of them (one per element); `None` for another type.
fn option_of_numbers(ty: &syn::Type) -> Option<Vec<(syn::Type, Expr)>> {
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
    match inner {
        syn::Type::Tuple(t) if t.elems.len() >= 2 => t.elems.iter().map(number_zero).collect(),
        t => Some(vec![number_zero(t)?]),
    }
}

/// `ty` and its zero where it is a float or integer type.
fn number_zero(ty: &syn::Type) -> Option<(syn::Type, Expr)> {
    let syn::Type::Path(ip) = ty else {
        return None;
    };
    let name = ip.path.get_ident()?.to_string();
    match name.as_str() {
        "f64" | "f32" => Some((ty.clone(), syn::parse_quote!(0.0))),
        n if crate::signature::is_integer_or_bool_name(n) && n != "bool" => {
            Some((ty.clone(), syn::parse_quote!(0)))
        }
        _ => None,
    }
}

/// The number of values of `v` in `Some(v)`: the elements of a tuple written as one
/// (`Some((i, v))`), 1 for any other expression but an array or a struct, which are not
/// numbers.
fn value_arity(v: &Expr) -> Option<usize> {
    match strip(v) {
        Expr::Tuple(t) if t.elems.len() >= 2 => Some(t.elems.len()),
        e if is_aggregate(e) => None,
        _ => Some(1),
    }
}

/// The number of values of the `Some(v)` assigned to `name` in `body`, where every such
/// assignment has the same (and there is one).
fn assigned_arity(body: &syn::Block, name: &Ident) -> Option<usize> {
    struct Arities<'a>(&'a Ident, Vec<Option<usize>>);
    impl<'v> syn::visit::Visit<'v> for Arities<'_> {
        fn visit_expr_assign(&mut self, a: &'v syn::ExprAssign) {
            syn::visit::visit_expr_assign(self, a);
            if matches!(strip(&a.left), Expr::Path(p) if p.path.is_ident(self.0))
                && let Some(v) = some_of(&a.right)
            {
                self.1.push(value_arity(v));
            }
        }
    }
    let mut arities = Arities(name, Vec::new());
    syn::visit::Visit::visit_block(&mut arities, body);
    let first = *arities.1.first()?;
    arities.1.iter().all(|a| *a == first).then_some(first)?
}

/// Whether `e` is `None`.
pub(super) fn is_none(e: &Expr) -> bool {
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

/// Whether `e` is written as an array or a struct: a value that is not one number.
fn is_aggregate(e: &Expr) -> bool {
    matches!(strip(e), Expr::Array(_) | Expr::Repeat(_) | Expr::Struct(_))
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
    /// The value (one per element of a tuple), read only where the flag is set.
    somes: Vec<Ident>,
}

impl Splitter<'_> {
    /// Whether `e` is the local itself.
    fn is_local(&self, e: &Expr) -> bool {
        matches!(strip(e), Expr::Path(p) if p.qself.is_none() && p.path.is_ident(&self.local.name))
    }

    /// The value as an expression: its local, or the tuple of its locals.
    fn value(&self) -> Expr {
        match &self.somes[..] {
            [one] => syn::parse_quote!(#one),
            somes => syn::parse_quote!((#(#somes),*)),
        }
    }

    /// `let p = some; body` as a block, for a closure `|p| body` or a pattern `Some(p)`.
    fn bound(&self, pat: &Pat, body: &Expr) -> Expr {
        let some = self.value();
        syn::parse_quote_spanned!(body.span()=> { let #pat = #some; #body })
    }

    /// The pattern `p` of `Some(p)` (`p` a binding, `_`, or a tuple of those).
    fn some_pattern(pat: &Pat) -> Option<&Pat> {
        let Pat::TupleStruct(t) = pat else {
            return None;
        };
        let [inner] = &t.elems.iter().collect::<Vec<_>>()[..] else {
            return None;
        };
        let plain =
            |p: &Pat| matches!(p, Pat::Ident(i) if i.subpat.is_none()) || matches!(p, Pat::Wild(_));
        let binds = match inner {
            Pat::Tuple(t) => t.elems.iter().all(plain),
            p => plain(p),
        };
        (t.qself.is_none() && t.path.is_ident("Some") && binds).then_some(*inner)
    }

    fn is_none_pattern(pat: &Pat) -> bool {
        matches!(pat, Pat::Ident(p) if p.ident == "None" && p.subpat.is_none())
            || matches!(pat, Pat::Path(p) if p.path.is_ident("None"))
            || matches!(pat, Pat::Wild(_))
    }

    /// `e` written with the flag and the value, where it is one of the forms.
    fn split(&self, e: &Expr) -> Option<Expr> {
        let (has, some) = (&self.has, self.value());
        let span = e.span();
        match e {
            Expr::Assign(a) if self.is_local(&a.left) => {
                if is_none(&a.right) {
                    return Some(syn::parse_quote_spanned!(span=> #has = false));
                }
                // A tuple is assigned whole (`(s0, s1) = (i, v)`: its elements are all
                // evaluated before any value changes).
                let v = some_of(&a.right).filter(|v| value_arity(v) == Some(self.somes.len()))?;
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
                    if let Some(p) = Self::some_pattern(&arm.pat)
                        && some_arm.is_none()
                        && none_arm.is_none()
                    {
                        some_arm = Some((p, &arm.guard, &*arm.body));
                    } else if Self::is_none_pattern(&arm.pat)
                        && none_arm.is_none()
                        && arm.guard.is_none()
                    {
                        none_arm = Some((&arm.pat, &*arm.body));
                    } else {
                        return None;
                    }
                }
                let ((pat, guard, body), (none_pat, none)) = (some_arm?, none_arm?);
                let then = self.bound(pat, body);
                match guard {
                    None => Some(syn::parse_quote_spanned!(span=> if #has #then else { #none })),
                    // `Some(p) if g => a, _ => b`: a value that fails the guard takes the
                    // second arm, which must then be `_`.
                    Some((_, g)) if matches!(none_pat, Pat::Wild(_)) => {
                        let test = self.bound(pat, g);
                        Some(
                            syn::parse_quote_spanned!(span=> if #has && #test #then else { #none }),
                        )
                    }
                    Some(_) => None,
                }
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
        let (has, some) = (&self.has, self.value());
        let init = l.init.as_ref()?;
        let span = l.span();
        let binds_local = match &l.pat {
            Pat::Ident(p) => p.ident == self.local.name,
            Pat::Type(t) => matches!(&*t.pat, Pat::Ident(p) if p.ident == self.local.name),
            _ => false,
        };
        if binds_local {
            let values: Vec<(Option<syn::Type>, Expr)> =
                match (&self.local.zeros, some_of(&init.expr)) {
                    (Some(zeros), _) => zeros.clone(),
                    (None, Some(v)) => match (strip(v), &self.somes[..]) {
                        (_, [_]) => vec![(None, v.clone())],
                        (Expr::Tuple(t), somes) if t.elems.len() == somes.len() => {
                            t.elems.iter().map(|e| (None, e.clone())).collect()
                        }
                        _ => return None,
                    },
                    (None, None) if is_none(&init.expr) => {
                        let zero: Expr = syn::parse_quote!(::core::default::Default::default());
                        vec![(None, zero); self.somes.len()]
                    }
                    (None, None) => return None,
                };
            let starts = some_of(&init.expr).is_some();
            let mut stmts = vec![syn::parse_quote_spanned!(span=> let mut #has = #starts;)];
            for (v, (ty, init)) in self.somes.iter().zip(values) {
                stmts.push(match ty {
                    Some(ty) => syn::parse_quote_spanned!(span=> let mut #v: #ty = #init;),
                    None => syn::parse_quote_spanned!(span=> let mut #v = #init;),
                });
            }
            return Some(stmts);
        }
        let (_, els) = init.diverge.as_ref()?;
        let pat = Self::some_pattern(&l.pat)?;
        self.is_local(&init.expr).then(|| {
            vec![syn::parse_quote_spanned!(span=> let #pat = if #has { #some } else #els;)]
        })
    }
}
