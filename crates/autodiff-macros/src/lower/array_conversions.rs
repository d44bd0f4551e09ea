//! Arrays of a literal length made from a slice or by a function of the index:
//! `x[..2].try_into().unwrap()` (or `.expect(..)`, or `<[f64; 2]>::try_from(&x[..2])`)
//! and `std::array::from_fn(|i| ..)`. The length comes from the type the value is
//! given (`let a: [f64; 2] = ..`, `<[f64; 2]>::try_from`); each is rewritten as the array
//! literal it amounts to (`[x[0], x[1]]`, `[f(0), f(1)]`), whose elements carry their
//! derivatives as any literal's do. A slice of another length panics, as `unwrap` of the
//! failed conversion does.

use super::*;

impl Lowerer {
    /// `src.try_into().unwrap()` (`expect`) or `<[T; N]>::try_from(src).unwrap()` with an
    /// array type of a literal length: `{ assert!(..); [src[0], .., src[N - 1]] }`.
    /// `None` for any other call.
    pub(super) fn array_from_slice(
        &self,
        m: &syn::ExprMethodCall,
        hint: Option<&syn::Type>,
    ) -> Option<Expr> {
        if !matches!(m.method.to_string().as_str(), "unwrap" | "expect") {
            return None;
        }
        let (src, ty) = match strip(&m.receiver) {
            Expr::MethodCall(c) if c.method == "try_into" && c.args.is_empty() => {
                (&*c.receiver, hint?)
            }
            Expr::Call(c) if c.args.len() == 1 => {
                let Expr::Path(p) = strip(&c.func) else {
                    return None;
                };
                let qself = p.qself.as_ref()?;
                if p.path.segments.last()?.ident != "try_from" {
                    return None;
                }
                (&c.args[0], &*qself.ty)
            }
            _ => return None,
        };
        let n = array_len(ty)?;
        let src = strip_ref(src);
        let span = m.span();
        let elems = (0..n).map(|i| {
            let i = proc_macro2::Literal::usize_unsuffixed(i);
            quote_spanned!(span=> (#src)[#i])
        });
        Some(syn::parse_quote_spanned!(span=> {
            assert_eq!((#src).len(), #n, "a slice converted to an array of another length");
            [#(#elems),*]
        }))
    }

    /// `std::array::from_fn(f)` (or `core::array::from_fn`, `array::from_fn`) with an array
    /// type of a literal length: `{ let g = f; [g(0), .., g(N - 1)] }`. `None` for any
    /// other call.
    pub(super) fn array_from_fn(
        &self,
        c: &syn::ExprCall,
        hint: Option<&syn::Type>,
    ) -> Option<Expr> {
        let Expr::Path(p) = strip(&c.func) else {
            return None;
        };
        let segs = path_names(&p.path);
        let is_from_fn =
            segs.len() >= 2 && segs[segs.len() - 1] == "from_fn" && segs[segs.len() - 2] == "array";
        if !is_from_fn || c.args.len() != 1 {
            return None;
        }
        // The length: from the turbofish (`from_fn::<f64, 3, _>`) or the type given.
        let turbofish = match &p.path.segments.last()?.arguments {
            syn::PathArguments::AngleBracketed(a) => a.args.iter().find_map(|g| match g {
                syn::GenericArgument::Const(Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Int(n),
                    ..
                })) => n.base10_parse::<usize>().ok(),
                _ => None,
            }),
            _ => None,
        };
        let n = turbofish.or_else(|| array_len(hint?))?;
        let f = &c.args[0];
        let span = c.span();
        let calls = (0..n).map(|i| {
            let i = proc_macro2::Literal::usize_unsuffixed(i);
            quote_spanned!(span=> __ad_elem(#i))
        });
        Some(syn::parse_quote_spanned!(span=> {
            let __ad_elem = #f;
            [#(#calls),*]
        }))
    }
}

/// The literal length of an array type (`[f64; 3]`).
fn array_len(ty: &syn::Type) -> Option<usize> {
    match ty {
        syn::Type::Array(a) => match &a.len {
            Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(n),
                ..
            }) => n.base10_parse().ok(),
            _ => None,
        },
        syn::Type::Paren(p) => array_len(&p.elem),
        syn::Type::Group(g) => array_len(&g.elem),
        _ => None,
    }
}
