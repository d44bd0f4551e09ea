//! Elementwise maps of `ndarray` arrays: `let h = z.mapv(f);` (or `z.map(f)`, whose `f`
//! takes a reference) and `h.mapv_inplace(f);`
//! of an array of one or two dimensions (a parameter, an array the function makes, or the
//! vector of a matrix-vector product, `let z = w.dot(x);`). Each is rewritten as the
//! index loops it amounts to, writing a new array made with `zeros` (or the array itself),
//! so that every element is differentiated as the function's own code is. `f` is a
//! closure of one parameter, inlined, or a path to a function of one float (`f64::tanh`,
//! `sigmoid`).

use super::array_exprs::{each_element, element_of};
use super::*;
use syn::{parse_quote, parse_quote_spanned};

impl Lowerer {
    /// The statements that `let name = recv.mapv(f);` (or `recv.map(f)`) amounts to, or
    /// `None` for any other `let`.
    pub(super) fn mapped_array_let(&self, l: &syn::Local) -> Result<Option<Vec<syn::Stmt>>> {
        let (pat, hint) = match &l.pat {
            Pat::Type(pt) => (&*pt.pat, Some(&*pt.ty)),
            p => (p, None),
        };
        let Pat::Ident(pi) = pat else {
            return Ok(None);
        };
        let Some(Expr::MethodCall(m)) = l.init.as_ref().map(|i| strip(&i.expr)) else {
            return Ok(None);
        };
        if !matches!(m.method.to_string().as_str(), "mapv" | "map") || m.args.len() != 1 {
            return Ok(None);
        }
        let Some(rank) = self.mapped_rank(m)? else {
            return Ok(None);
        };
        let span = m.span();
        let (name, recv) = (&pi.ident, strip(&m.receiver));
        // (Typed as the `let` writes, else as the array mapped, where either names a type:
        // the sums of the new array and the closures that read it need one.)
        let elem = hint
            .and_then(crate::builtins::ndarray_elem)
            .or_else(|| self.elem_of(recv))
            .map(|t| quote_spanned!(span=> ::<#t>));
        let (array, shape) = match rank {
            1 => (
                quote_spanned!(span=> Array1),
                quote_spanned!(span=> #recv.len()),
            ),
            _ => (
                quote_spanned!(span=> Array2),
                quote_spanned!(span=> #recv.dim()),
            ),
        };
        let made: syn::Stmt = parse_quote_spanned!(span=>
            let mut #name = __ad::arrays::#array #elem::zeros(#shape);
        );
        let write = self.elementwise(m, rank, recv, &parse_quote!(#name))?;
        Ok(Some(vec![made, write]))
    }

    /// The loop that `recv.mapv_inplace(f);` amounts to, or `None` for any other
    /// expression.
    pub(super) fn mapped_in_place(&self, e: &Expr) -> Result<Option<syn::Stmt>> {
        let Expr::MethodCall(m) = strip(e) else {
            return Ok(None);
        };
        if m.method != "mapv_inplace" || m.args.len() != 1 {
            return Ok(None);
        }
        let Some(rank) = self.mapped_rank(m)? else {
            return Ok(None);
        };
        let recv = strip(&m.receiver);
        self.elementwise(m, rank, recv, recv).map(Some)
    }

    /// The number of dimensions of the array `m` maps, `None` where its receiver is no
    /// array (`x.iter().map(f)`, `o.map(f)` of an `Option`), or an error at the call
    /// where it is an array of more dimensions, or of a type that does not name them.
    fn mapped_rank(&self, m: &syn::ExprMethodCall) -> Result<Option<usize>> {
        match self.array_param(&m.receiver) {
            Some(a) => match self.array_rank(&a) {
                Some(r @ (1 | 2)) => Ok(Some(r)),
                _ => unsupported(
                    m,
                    &format!(
                        "`{}` of an `ndarray` array of more than two dimensions, or whose type does not name its number (`Array1` and `Array2` are supported)",
                        m.method
                    ),
                ),
            },
            // The `Vec` of a matrix-vector product (`let z = w.dot(x);`).
            None => Ok(self.is_local_vector(&m.receiver).then_some(1)),
        }
    }

    /// `for i in 0..src.len() { dst[i] = f(src[i]); }` (over rows and columns for a
    /// matrix), with `f` of the call `m`.
    fn elementwise(
        &self,
        m: &syn::ExprMethodCall,
        rank: usize,
        src: &Expr,
        dst: &Expr,
    ) -> Result<syn::Stmt> {
        let span = m.span();
        let (bind, value) = applied(&m.args[0], span)?;
        // (`map` gives `f` a reference to the element, `mapv` its value.)
        let by_ref = (m.method == "map").then(|| quote_spanned!(span=> &));
        let (from, to) = (
            element_of(src, Some(rank), rank),
            element_of(dst, Some(rank), rank),
        );
        Ok(each_element(
            rank,
            src,
            quote!(let #bind = #by_ref #from; #to = #value;),
            span,
        ))
    }
}

/// The pattern an element is bound to and the value `f` gives for it: a closure's
/// parameter and body, or `__ad_v` and `f(__ad_v)` of a path.
pub(super) fn applied(f: &Expr, span: Span) -> Result<(Pat, Expr)> {
    match strip(f) {
        Expr::Closure(c)
            if c.inputs.len() == 1 && matches!(c.inputs[0], Pat::Ident(_) | Pat::Type(_)) =>
        {
            Ok((c.inputs[0].clone(), (*c.body).clone()))
        }
        Expr::Path(p) => {
            let v = Ident::new("__ad_v", span);
            Ok((parse_quote!(#v), parse_quote_spanned!(span=> #p(#v))))
        }
        f => unsupported(
            f,
            "this function of the elements (a closure of one parameter, `|v| ..`, or a path to a function, `f64::tanh`, is supported)",
        ),
    }
}
