//! Vectors and arrays of struct values written as a list of literals (`vec![P { x: x[0],
//! v: 0.0 }, P { x: x[1], v: 0.1 }]`).
//!
//! A buffer of structs is lowered as a slice of structs is: its elements copied out,
//! written member by member, given to methods. What it cannot take is a struct value
//! as an operand of the literal, since struct values built in the function live member by
//! member. So such a literal is written as a buffer of one constant element repeated
//! (each member that the literals do not all give the same constant becomes its type's
//! `Default::default()`), then each element's other members assigned in order:
//!
//! ```text
//! let mut ps = vec![P { x: Default::default(), v: Default::default() }; 2];
//! ps[0].x = x[0]; ps[0].v = 0.0; ps[1].x = x[1]; ps[1].v = 0.1;
//! ```
//!
//! The primal is the same vector; the derivative of each member then follows the
//! assignments, as for any buffer of structs written in place.

use super::*;

impl Lowerer {
    /// The statements that build `name` from `e` member by member (see the module's
    /// documentation), where `e` is `vec![..]` or `[..]` of two or more struct literals of
    /// one type, with named members, each literal giving the same members and no `..base`.
    pub(super) fn struct_list_by_members(
        &self,
        name: &Ident,
        e: &Expr,
        hint: Option<&syn::Type>,
    ) -> Option<Vec<syn::Stmt>> {
        let (items, in_vec) = match strip(e) {
            Expr::Macro(m)
                if m.mac.path.is_ident("vec") || path_names(&m.mac.path) == ["std", "vec"] =>
            {
                let items = m
                    .mac
                    .parse_body_with(
                        syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated,
                    )
                    .ok()?;
                (items.into_iter().collect::<Vec<_>>(), true)
            }
            Expr::Array(a) => (a.elems.iter().cloned().collect(), false),
            _ => return None,
        };
        let lits: Vec<&syn::ExprStruct> = items
            .iter()
            .map(|i| match strip(i) {
                Expr::Struct(s) if s.rest.is_none() && s.qself.is_none() => Some(s),
                _ => None,
            })
            .collect::<Option<_>>()?;
        let first = lits.first()?;
        let path = &first.path;
        let members: Vec<&syn::Member> = first.fields.iter().map(|f| &f.member).collect();
        let same_shape = lits.iter().all(|l| {
            l.path == *path
                && l.fields.len() == members.len()
                && l.fields.iter().zip(&members).all(|(f, m)| f.member == **m)
        });
        if lits.len() < 2
            || !same_shape
            || members.iter().any(|m| matches!(m, syn::Member::Unnamed(_)))
        {
            return None;
        }
        // A member every literal gives as the same constant stays in the repeated element.
        let fixed: Vec<bool> = (0..members.len())
            .map(|k| {
                let v = &first.fields[k].expr;
                !self.mentions_locals(v)
                    && lits.iter().all(|l| {
                        let w = &l.fields[k].expr;
                        quote!(#w).to_string() == quote!(#v).to_string()
                    })
            })
            .collect();
        let template_fields = first.fields.iter().zip(&fixed).map(|(f, &keep)| {
            let m = &f.member;
            if keep {
                let v = &f.expr;
                quote!(#m: #v)
            } else {
                quote_spanned!(f.expr.span()=> #m: ::core::default::Default::default())
            }
        });
        let n = lits.len();
        let template = quote_spanned!(first.span()=> #path { #(#template_fields),* });
        let buffer = if in_vec {
            quote_spanned!(e.span()=> vec![#template; #n])
        } else {
            quote_spanned!(e.span()=> [#template; #n])
        };
        let ty = hint.map(|t| quote!(: #t));
        let mut stmts: Vec<syn::Stmt> =
            vec![syn::parse_quote_spanned!(e.span()=> let mut #name #ty = #buffer;)];
        for (i, lit) in lits.iter().enumerate() {
            for (f, &keep) in lit.fields.iter().zip(&fixed) {
                if keep {
                    continue;
                }
                let (m, v) = (&f.member, &f.expr);
                stmts.push(syn::parse_quote_spanned!(v.span()=> #name[#i].#m = #v;));
            }
        }
        Some(stmts)
    }
}
