//! A slice reference held in a `let mut` and pointed elsewhere later, as a recurrence
//! steps through a sequence (`let mut input = &seq[0..b]; .. input = &seq[t * b..];`).
//! The name is lowered as the range `base[start..end]` of one buffer, where `start` and
//! `end` are integer locals that each assignment sets. The reverse sweep restores those
//! integers as it restores any index, so each step's derivatives reach the elements
//! that step read.

use super::*;

/// A name bound to a moving slice of one buffer (see the module documentation).
#[derive(Clone, Debug)]
pub(super) struct SliceCursor {
    /// The buffer the slice lies in.
    base: Place,
    /// The integer locals holding the slice's bounds.
    start: Ident,
    end: Ident,
}

impl SliceCursor {
    /// The slice it names now: `base[start..end]`.
    pub(super) fn place(&self) -> Place {
        let (start, end) = (&self.start, &self.end);
        let mut p = self.base.clone();
        p.proj.push(Proj::Index(quote!(#start..#end)));
        p
    }
}

impl Lowerer {
    /// `let mut name = &base[a..b];` (or a name for such a slice, or a whole slice
    /// parameter): binds `name` as a cursor over `base`. Returns false, binding nothing,
    /// when `init` is not a shared slice of a buffer.
    pub(super) fn bind_slice_cursor(&mut self, name: &Ident, init: &Expr, val: &Val) -> bool {
        let by_reference = matches!(strip(init), Expr::Reference(r) if r.mutability.is_none());
        if !by_reference && !matches!(strip(init), Expr::Path(_)) {
            return false;
        }
        let Some((base, start, end)) = self.slice_bounds(val, by_reference) else {
            return false;
        };
        let bound = |l: &mut Self, what: &str, value: TokenStream| {
            let v = l.fresh(&format!("{name}_{what}"), name.span());
            l.kinds.insert(v.to_string(), VarKind::Scalar);
            l.emit(Stmt::Let {
                var: v.clone(),
                mutable: true,
                op: Op::Inactive(value),
            });
            v
        };
        let start = bound(self, "start", start);
        let end = bound(self, "end", end);
        let cursor = SliceCursor { base, start, end };
        self.bind(name, Binding::Cursor(Rc::new(cursor)));
        true
    }

    /// A copy of `cursor` that keeps where it points now (for a `move` closure).
    pub(super) fn frozen_cursor(&mut self, cursor: &SliceCursor) -> SliceCursor {
        let copy = |l: &mut Self, bound: &Ident| {
            let v = l.temp(bound.span());
            l.emit(Stmt::Let {
                var: v.clone(),
                mutable: false,
                op: Op::Use(Operand::Var(bound.clone())),
            });
            v
        };
        SliceCursor {
            base: cursor.base.clone(),
            start: copy(self, &cursor.start),
            end: copy(self, &cursor.end),
        }
    }

    /// `name = &base[a..b];` of a name bound by [`Lowerer::bind_slice_cursor`]: sets its
    /// bounds. Returns false when `name` is not such a name.
    pub(super) fn assign_slice_cursor(&mut self, a: &syn::ExprAssign) -> Result<bool> {
        let Expr::Path(p) = strip(&a.left) else {
            return Ok(false);
        };
        let binding = p
            .path
            .get_ident()
            .and_then(|id| self.lookup(&id.to_string()))
            .cloned();
        if let Some(Binding::Alias(_, true)) = binding
            && matches!(strip(&a.right), Expr::Reference(_))
        {
            let name = p.path.to_token_stream();
            return unsupported(
                &a.right,
                &format!(
                    "pointing the `&mut` slice `{name}` somewhere else (keep one `&mut` slice and index it with an offset: `{name}[k + i]`)"
                ),
            );
        }
        let Some(Binding::Cursor(cursor)) = binding else {
            return Ok(false);
        };
        // `input = if c { &x[..k] } else { &x[k..] };`: the assignment in each branch.
        if let Some(branched) = assignment_in_branches(&a.left, &a.right) {
            self.lower_expr_stmt(&branched)?;
            return Ok(true);
        }
        let by_reference = matches!(strip(&a.right), Expr::Reference(r) if r.mutability.is_none());
        let val = self.lower_expr(&a.right)?;
        let same_buffer =
            |base: &Place| base.primal().to_string() == cursor.base.primal().to_string();
        let Some((_, start, end)) = self
            .slice_bounds(&val, by_reference)
            .filter(|(base, ..)| same_buffer(base))
        else {
            let name = p.path.to_token_stream();
            return unsupported(
                &a.right,
                &format!(
                    "pointing the slice `{name}` at anything but a slice of the buffer it started in (`{name} = &buffer[a..b];`)"
                ),
            );
        };
        // Both bounds are computed before either is set: they may read the slice.
        let span = a.span();
        let new_start = self.inactive_local("start", start, span);
        let new_end = self.inactive_local("end", end, span);
        for (bound, value) in [(&cursor.start, new_start), (&cursor.end, new_end)] {
            self.emit(Stmt::Assign {
                place: Place::local(bound.clone()),
                kind: AssignKind::Set,
                val: Operand::Lit(quote!(#value)),
            });
        }
        Ok(true)
    }

    /// `(a, b) = (b, a);` where every name on the left is a slice cursor: as `{ let t0 =
    /// b; let t1 = a; a = t0; b = t1; }`, a block of assignments that
    /// [`Lowerer::assign_slice_cursor`] lowers. `None` for any other assignment.
    pub(super) fn cursors_assigned_together(&self, a: &syn::ExprAssign) -> Option<syn::Block> {
        let (Expr::Tuple(left), Expr::Tuple(right)) = (strip(&a.left), strip(&a.right)) else {
            return None;
        };
        let is_cursor = |e: &Expr| {
            matches!(strip(e), Expr::Path(p) if p.path.get_ident().is_some_and(|id| {
                matches!(self.lookup(&id.to_string()), Some(Binding::Cursor(_)))
            }))
        };
        if left.elems.len() != right.elems.len() || !left.elems.iter().all(is_cursor) {
            return None;
        }
        let temps: Vec<Ident> = (0..left.elems.len())
            .map(|i| format_ident!("__ad_pointed_{}", i, span = a.span()))
            .collect();
        let (names, values) = (left.elems.iter(), right.elems.iter());
        syn::parse2(quote_spanned! {a.span()=> {
            #(let #temps = #values;)*
            #(#names = #temps;)*
        }})
        .ok()
    }

    /// The buffer a shared slice lies in, and the slice's bounds: `x[a..b]` (of any
    /// range), or a whole slice parameter or (by reference) a whole local buffer.
    fn slice_bounds(
        &self,
        val: &Val,
        by_reference: bool,
    ) -> Option<(Place, TokenStream, TokenStream)> {
        let Val::Place(p, false) = val else {
            return None;
        };
        if p.is_whole() {
            let whole = match self.kinds.get(&p.base.to_string()) {
                Some(VarKind::Ref { mutable: false }) => {
                    let name = p.base.to_string();
                    !self.struct_refs.contains(&name) && !self.scalar_refs.contains(&name)
                }
                Some(VarKind::Buffer) => by_reference,
                _ => false,
            };
            let base = p.primal();
            return whole.then(|| (p.clone(), quote!(0usize), quote!(#base.len())));
        }
        // The trailing ranges, composed: `x[a..][..b]` is `x[a..a + b]`.
        let mut base = p.clone();
        let mut ranges = Vec::new();
        while let Some(Proj::Index(t)) = base.proj.last() {
            let Ok(range) = syn::parse2::<syn::ExprRange>(t.clone()) else {
                break;
            };
            ranges.push(range);
            base.proj.pop();
        }
        if ranges.is_empty() {
            return None;
        }
        let b = base.primal();
        // `offset` is `None` while the start is zero.
        let (mut offset, mut end): (Option<TokenStream>, TokenStream) = (None, quote!(#b.len()));
        for range in ranges.iter().rev() {
            let past = |e: TokenStream| match &offset {
                Some(o) => quote!(#o + #e),
                None => e,
            };
            end = match (&range.end, &range.limits) {
                (Some(e), syn::RangeLimits::HalfOpen(_)) => past(quote!((#e))),
                (Some(e), syn::RangeLimits::Closed(_)) => past(quote!((#e) + 1)),
                (None, _) => end,
            };
            if let Some(s) = &range.start {
                offset = Some(past(quote!((#s))));
            }
        }
        let start = offset.unwrap_or_else(|| quote!(0usize));
        Some((base, start, end))
    }
}

/// `name = if c { a } else { b };` as `if c { name = a; } else { name = b; }` (and so for
/// each arm of a `match`), or `None` when `value` does not branch.
fn assignment_in_branches(name: &Expr, value: &Expr) -> Option<Expr> {
    fn assign_tail(name: &Expr, block: &syn::Block) -> Option<syn::Block> {
        let mut block = block.clone();
        match block.stmts.pop()? {
            syn::Stmt::Expr(tail, None) => {
                let tail = assigned(name, &tail);
                block.stmts.push(syn::parse_quote!(#tail;));
                Some(block)
            }
            _ => None,
        }
    }
    fn assigned(name: &Expr, value: &Expr) -> Expr {
        assignment_in_branches(name, value).unwrap_or_else(|| syn::parse_quote!(#name = #value))
    }
    match strip(value) {
        Expr::If(i) => {
            let (_, els) = i.else_branch.as_ref()?;
            let mut out = i.clone();
            out.then_branch = assign_tail(name, &i.then_branch)?;
            let els = match strip(els) {
                Expr::Block(b) => Expr::Block(syn::ExprBlock {
                    block: assign_tail(name, &b.block)?,
                    ..b.clone()
                }),
                e => assignment_in_branches(name, e)?,
            };
            out.else_branch = Some((Default::default(), Box::new(els)));
            Some(Expr::If(out))
        }
        Expr::Match(m) => {
            let mut out = m.clone();
            for arm in &mut out.arms {
                let body = assigned(name, &arm.body);
                *arm.body = syn::parse_quote!({ #body; });
                arm.comma = Some(Default::default());
            }
            Some(Expr::Match(out))
        }
        Expr::Block(b) if b.label.is_none() => {
            let block = assign_tail(name, &b.block)?;
            Some(Expr::Block(syn::ExprBlock { block, ..b.clone() }))
        }
        _ => None,
    }
}
