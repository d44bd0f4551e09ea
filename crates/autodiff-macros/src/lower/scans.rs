//! `scan` whose closure always goes on (its value `Some(e)`, and `None` nowhere),
//! consumed by a `for` loop, `collect` into a `Vec` or a `sum` of `f64`/`f32`, written
//! before lowering as a loop that keeps the state in a local:
//!
//! ```text
//! for y in it.scan(s0, |st, p| { ..; Some(e) }) { body }
//!     →  { let mut state = s0; for p in it { let y = { ..; e }; body } }
//! it.scan(s0, |st, p| { ..; Some(e) }).collect::<Vec<_>>()
//!     →  { let mut state = s0; let mut items = Vec::new(); for p in it { items.push({ ..; e }); } items }
//! it.scan(s0, |st, p| { ..; Some(e) }).sum::<f64>()
//!     →  { let mut state = s0; let mut total: f64 = -0.0; for p in it { total += { ..; e }; } total }
//! ```
//!
//! where the closure reads and writes its state only as `*st` or through its methods
//! (`st.max(v)`), which become `state`'s.
//! The closure's statements run in the same order on the same values, so the items are
//! the same, and the sum adds them one by one from `std`'s start. A `collect` or `sum`
//! is typed by its turbofish or by its `let` (`let c: Vec<f64> = ..`). Any other scan is
//! left as written, and the lowering names it.

use super::*;

/// Writes the scans above in `body` as loops (a function's own code; nested blocks and
/// closures included).
pub(super) fn loop_scans(body: &mut syn::Block) {
    Looper { scans: 0 }.visit_block_mut(body);
}

struct Looper {
    /// Scans written so far: each one's state gets its own name, so that a scan inside
    /// another's closure does not hide the outer state, which the outer closure may read
    /// there.
    scans: usize,
}

impl VisitMut for Looper {
    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        visit_macro_items(self, m);
    }

    fn visit_local_mut(&mut self, l: &mut syn::Local) {
        syn::visit_mut::visit_local_mut(self, l);
        // `let c: Vec<f64> = it.scan(..).collect();`, `let s: f64 = it.scan(..).sum();`
        let (syn::Pat::Type(t), Some(init)) = (&l.pat, &mut l.init) else {
            return;
        };
        if let Some(looped) = consumed(&init.expr, Some(&t.ty), self.scans + 1) {
            *init.expr = looped;
            self.scans += 1;
        }
    }

    fn visit_expr_mut(&mut self, e: &mut Expr) {
        syn::visit_mut::visit_expr_mut(self, e);
        if let Some(looped) = consumed(e, None, self.scans + 1) {
            *e = looped;
            self.scans += 1;
        }
    }
}

/// A scan's parts: the iterator, the state's start, the closure's state and item
/// patterns, its statements and its value.
struct Scan<'a> {
    /// The local that holds the state.
    state: Ident,
    it: &'a Expr,
    start: &'a Expr,
    item: &'a Pat,
    stmts: Vec<syn::Stmt>,
    value: Expr,
}

/// `e` as a loop, where it is a scan consumed as above, its state in the local numbered
/// `number`; `ty` is the type of the `let` it initialises, if any.
fn consumed(e: &Expr, ty: Option<&syn::Type>, number: usize) -> Option<Expr> {
    let span = e.span();
    match e {
        Expr::ForLoop(f) => {
            let s = scan(&f.expr, number)?;
            let (start, it, item, stmts, value) = (s.start, s.it, s.item, &s.stmts, &s.value);
            let state = &s.state;
            let (label, pat, body) = (&f.label, &f.pat, &f.body);
            Some(syn::parse_quote_spanned!(span=> {
                let mut #state = #start;
                #label for #item in #it {
                    let #pat = { #(#stmts)* #value };
                    #body
                }
            }))
        }
        Expr::MethodCall(m) if m.args.is_empty() => {
            let named = m
                .turbofish
                .as_ref()
                .and_then(|t| match (t.args.len(), t.args.first()) {
                    (1, Some(syn::GenericArgument::Type(t))) => Some(t),
                    _ => None,
                });
            let ty = named.or(ty)?;
            let s = scan(&m.receiver, number)?;
            let (start, it, item, stmts, value) = (s.start, s.it, s.item, &s.stmts, &s.value);
            let state = &s.state;
            match m.method.to_string().as_str() {
                "collect" if names_vec(ty) => Some(syn::parse_quote_spanned!(span=> {
                    let mut #state = #start;
                    let mut __ad_scan_items: #ty = ::std::vec::Vec::new();
                    for #item in #it {
                        __ad_scan_items.push({ #(#stmts)* #value });
                    }
                    __ad_scan_items
                })),
                "sum" if is_float_type(ty, &HashSet::default()) => {
                    Some(syn::parse_quote_spanned!(span=> {
                        let mut #state = #start;
                        let mut __ad_scan_total: #ty = -0.0;
                        for #item in #it {
                            __ad_scan_total += { #(#stmts)* #value };
                        }
                        __ad_scan_total
                    }))
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// Whether `ty` is `Vec<..>`.
fn names_vec(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p) if p.qself.is_none()
        && p.path.segments.last().is_some_and(|s| s.ident == "Vec"))
}

/// The parts of `it.scan(s0, |st, p| { ..; Some(e) })`, with `*st` written as the local
/// numbered `number`.
fn scan(e: &Expr, number: usize) -> Option<Scan<'_>> {
    let Expr::MethodCall(m) = strip(e) else {
        return None;
    };
    if m.method != "scan" || m.args.len() != 2 {
        return None;
    }
    let state = Ident::new(&format!("__ad_scan_state{number}"), m.method.span());
    let Expr::Closure(c) = strip(&m.args[1]) else {
        return None;
    };
    if c.inputs.len() != 2 || leaves_the_closure(&c.body) {
        return None;
    }
    let st = match &c.inputs[0] {
        Pat::Ident(p) if p.subpat.is_none() => &p.ident,
        Pat::Type(t) => match &*t.pat {
            Pat::Ident(p) if p.subpat.is_none() => &p.ident,
            _ => return None,
        },
        _ => return None,
    };
    let mut body = match strip(&c.body) {
        Expr::Block(b) if b.label.is_none() => b.block.clone(),
        other => syn::parse_quote!({ #other }),
    };
    // The value: `Some(e)` as the block's last expression.
    let Some(syn::Stmt::Expr(last, None)) = body.stmts.pop() else {
        return None;
    };
    let value = super::option_locals::some_of(&last)?.clone();
    let mut stmts = syn::Block {
        brace_token: body.brace_token,
        stmts: body.stmts,
    };
    let mut value_block: syn::Block = syn::parse_quote!({ #value });
    let mut named = StateNamed {
        st,
        state: &state,
        other_use: false,
    };
    named.visit_block_mut(&mut stmts);
    named.visit_block_mut(&mut value_block);
    let tokens = quote!(#stmts #value_block);
    // (`Some` or `None` elsewhere: a scan that may stop early.)
    let mentions = |name| crate::member_writes::mentions(tokens.clone(), name);
    if named.other_use || mentions("Some") || mentions("None") {
        return None;
    }
    let Some(syn::Stmt::Expr(value, None)) = value_block.stmts.pop() else {
        return None;
    };
    Some(Scan {
        state,
        it: &m.receiver,
        start: &m.args[0],
        // (A type written on the item, `|st, v: &f64|`, is the iterator's item type: a
        // `for` pattern takes none.)
        item: match &c.inputs[1] {
            Pat::Type(t) => &t.pat,
            p => p,
        },
        stmts: stmts.stmts,
        value,
    })
}

/// Writes `*st` as `state`; notes any other use of `st`.
struct StateNamed<'a> {
    st: &'a Ident,
    state: &'a Ident,
    other_use: bool,
}

impl VisitMut for StateNamed<'_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        if let Expr::Unary(u) = e
            && matches!(u.op, syn::UnOp::Deref(_))
            && matches!(strip(&u.expr), Expr::Path(p) if p.qself.is_none() && p.path.is_ident(self.st))
        {
            let state = self.state;
            *e = syn::parse_quote_spanned!(u.span()=> #state);
            return;
        }
        // A method called on the state reaches the value through auto-deref
        // (`st.max(v)` of `st: &mut f64`).
        if let Expr::MethodCall(m) = e
            && matches!(strip(&m.receiver), Expr::Path(p) if p.qself.is_none() && p.path.is_ident(self.st))
        {
            let state = self.state;
            *m.receiver = syn::parse_quote_spanned!(m.receiver.span()=> #state);
        }
        if let Expr::Path(p) = e
            && p.qself.is_none()
            && p.path.is_ident(self.st)
        {
            self.other_use = true;
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }

    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        // (A macro's tokens are not parsed here: one that names the state keeps the scan.)
        if crate::member_writes::mentions(m.tokens.clone(), &self.st.to_string()) {
            self.other_use = true;
        }
    }
}
