//! Vectors and arrays of struct values written as a list of literals (`vec![P { x: x[0],
//! v: 0.0 }, P { x: x[1], v: 0.1 }]`) or of struct values bound before (`vec![p0, p1]`).
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

/// One element of the list: its struct's path, and each member with its value.
struct Element {
    path: syn::Path,
    members: Vec<(syn::Member, Expr)>,
}

impl Lowerer {
    /// The statements that build `name` from `e` member by member (see the module's
    /// documentation), where `e` is `vec![..]` or `[..]` of two or more elements of one
    /// struct with named members, each a literal without `..base` (`P { x: a, v: 0.0 }`)
    /// or a struct value the function built (`p0` of `let p0 = P { .. };`, read member by
    /// member where the list is built).
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
        let elements: Vec<Element> = items
            .iter()
            .map(|i| self.list_element(i))
            .collect::<Option<_>>()?;
        let (first, n) = (elements.first()?, elements.len());
        let same = |a: &syn::Path, b: &syn::Path| quote!(#a).to_string() == quote!(#b).to_string();
        let same_shape = elements.iter().all(|el| {
            same(&el.path, &first.path)
                && el.members.len() == first.members.len()
                && el
                    .members
                    .iter()
                    .zip(&first.members)
                    .all(|(a, b)| a.0 == b.0)
        });
        if n < 2
            || !same_shape
            || first
                .members
                .iter()
                .any(|(m, _)| matches!(m, syn::Member::Unnamed(_)))
        {
            return None;
        }
        // A member every element gives as the same constant stays in the repeated element.
        let fixed: Vec<bool> = (0..first.members.len())
            .map(|k| {
                let v = &first.members[k].1;
                !self.mentions_locals(v)
                    && elements.iter().all(|el| {
                        let w = &el.members[k].1;
                        quote!(#w).to_string() == quote!(#v).to_string()
                    })
            })
            .collect();
        let template_fields = first.members.iter().zip(&fixed).map(|((m, v), &keep)| {
            if keep {
                quote!(#m: #v)
            } else {
                quote_spanned!(v.span()=> #m: ::core::default::Default::default())
            }
        });
        let path = &first.path;
        let template = quote_spanned!(e.span()=> #path { #(#template_fields),* });
        let buffer = if in_vec {
            quote_spanned!(e.span()=> vec![#template; #n])
        } else {
            quote_spanned!(e.span()=> [#template; #n])
        };
        let ty = hint.map(|t| quote!(: #t));
        let mut stmts: Vec<syn::Stmt> =
            vec![syn::parse_quote_spanned!(e.span()=> let mut #name #ty = #buffer;)];
        for (i, el) in elements.iter().enumerate() {
            for ((m, v), &keep) in el.members.iter().zip(&fixed) {
                if !keep {
                    stmts.push(syn::parse_quote_spanned!(v.span()=> #name[#i].#m = #v;));
                }
            }
        }
        Some(stmts)
    }

    /// `v.push(P { x: a, v: 0.0 })` of a struct literal that reads locals, or `v.push(p0)`
    /// of a struct value the function built, onto a local vector: the element pushed with
    /// its members' constants (the others `Default::default()`), then those other
    /// members assigned in the order written, as a list of literals is built. A value
    /// that reads the vector itself is read before the push, as Rust evaluates the
    /// argument before pushing:
    ///
    /// ```text
    /// // v.push(P { x: a, y: v[0].y, z: 0.0 })
    /// { let __ad_pushed1 = v[0].y; v.push(P { x: Default::default(),
    ///   y: Default::default(), z: 0.0 }); let __ad_last = v.len() - 1;
    ///   v[__ad_last].x = a; v[__ad_last].y = __ad_pushed1; }
    /// ```
    ///
    /// `None` where the element is no such struct, reads no local (it is pushed as it
    /// is), or the vector is not a local named by itself.
    pub(super) fn push_by_members(&self, receiver: &Expr, arg: &Expr) -> Option<syn::Block> {
        let Expr::Path(r) = strip(receiver) else {
            return None;
        };
        let v = r.path.get_ident()?;
        let el = self.list_element(arg)?;
        if el
            .members
            .iter()
            .any(|(m, _)| matches!(m, syn::Member::Unnamed(_)))
        {
            return None;
        }
        let span = arg.span();
        let mut reads = Vec::new();
        let mut writes = Vec::new();
        // (`Default::default()` is a constant even where a local is named `default`: the
        // element pushed is one of constants, pushed as it is.)
        let reads_values = |e: &Expr| !is_default_call(e) && self.mentions_locals(e);
        if !el.members.iter().any(|(_, e)| reads_values(e)) {
            return None;
        }
        let fields = el.members.iter().enumerate().map(|(k, (m, e))| {
            if !reads_values(e) {
                return quote!(#m: #e);
            }
            // (Any mention, a field's name too, errs towards reading first.)
            if crate::member_writes::mentions(e.to_token_stream(), &v.to_string()) {
                // Read before the push, which changes what it reads.
                let t = format_ident!("__ad_pushed{}", k, span = e.span());
                reads.push(quote_spanned!(e.span()=> let #t = #e;));
                writes.push(quote_spanned!(e.span()=> #v[__ad_last].#m = #t;));
            } else {
                // Written as it is (an array literal is written element by element).
                writes.push(quote_spanned!(e.span()=> #v[__ad_last].#m = #e;));
            }
            quote_spanned!(e.span()=> #m: ::core::default::Default::default())
        });
        let fields: Vec<TokenStream> = fields.collect();
        let path = &el.path;
        Some(syn::parse_quote_spanned!(span=> {
            #(#reads)*
            #v.push(#path { #(#fields),* });
            let __ad_last = #v.len() - 1;
            #(#writes)*
        }))
    }

    /// `e` as an element of a list of structs: a literal, or a local bound to a struct
    /// value the function built, whose members are read where the list is built.
    fn list_element(&self, e: &Expr) -> Option<Element> {
        match strip(e) {
            Expr::Struct(s) if s.rest.is_none() && s.qself.is_none() => Some(Element {
                path: s.path.clone(),
                members: s
                    .fields
                    .iter()
                    .map(|f| (f.member.clone(), f.expr.clone()))
                    .collect(),
            }),
            Expr::Path(p) => {
                let local = p.path.get_ident()?;
                let Some(Binding::Var(v)) = self.lookup(&local.to_string()) else {
                    return None;
                };
                let (path, members) = self.struct_value_members(v)?;
                let members = members
                    .into_iter()
                    .map(|m| {
                        let read: Expr = syn::parse_quote_spanned!(local.span()=> #local.#m);
                        (m, read)
                    })
                    .collect();
                Some(Element { path, members })
            }
            _ => None,
        }
    }

    /// The struct and members of `v`, a struct value the function built
    /// (`let p0 = P { x: a, v: 0.0 };`), as its `let` in the lowered code says.
    fn struct_value_members(&self, v: &Ident) -> Option<(syn::Path, Vec<syn::Member>)> {
        if !self.struct_values.contains(&v.to_string()) {
            return None;
        }
        self.out.iter().flatten().find_map(|s| match s {
            Stmt::Let {
                var,
                op: Op::StructLit(path, fields),
                ..
            } if var == v => Some((
                path.clone(),
                fields.iter().map(|(m, _)| m.clone()).collect(),
            )),
            _ => None,
        })
    }
}

/// Whether `e` is `Default::default()` (through any path), the value a pushed element's
/// members wait in.
fn is_default_call(e: &Expr) -> bool {
    let Expr::Call(c) = strip(e) else {
        return false;
    };
    let Expr::Path(p) = strip(&c.func) else {
        return false;
    };
    let names = path_names(&p.path);
    c.args.is_empty() && names.len() >= 2 && names[names.len() - 2..] == ["Default", "default"]
}
