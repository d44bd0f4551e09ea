//! Whole-array reductions of `ndarray` parameters: `a.sum()` of an array of one or two
//! dimensions, and `a.dot(&b)` of two one-dimensional arrays. Each is lowered as the
//! iterator chain or index loops it amounts to (`a.iter().zip(b.iter()).map(..).sum()`),
//! so its derivatives are those of the loop, in every mode. The number of dimensions is
//! read from the parameter's type (`&Array1<f64>`, `&Array2<f64>`, `&Array<f64, Ix2>`):
//! a reduction of an array whose type does not name it, and a product of two matrices,
//! are compile errors at the call. (Products of a matrix and a vector are vectors of
//! the rows' products: `array_views.rs`.)

use super::*;

impl Lowerer {
    /// `a.sum()` or `a.dot(&b)` of `ndarray` parameters, written as the expression that
    /// computes it (`hint`, the type the value is given, if any, types the sum). `None`
    /// for any other method call.
    pub(super) fn array_reduction(
        &self,
        m: &syn::ExprMethodCall,
        hint: Option<&syn::Type>,
    ) -> Result<Option<Expr>> {
        let name = m.method.to_string();
        if !matches!(name.as_str(), "sum" | "dot") {
            return Ok(None);
        }
        let Some(a) = self.array_param(&m.receiver) else {
            return Ok(None);
        };
        let rank = self.array_rank(&a);
        let span = m.span();
        // Typed by the value's written type, else by the array's element type: a sum's
        // starting value is typed by it (`-0.0` alone would be an ambiguous float).
        let sum = match hint.or_else(|| self.array_elem(&a)) {
            Some(t) => quote_spanned!(span=> sum::<#t>),
            None => quote_spanned!(span=> sum),
        };
        let e: Expr = match (name.as_str(), m.args.len(), rank) {
            // (A matrix's `iter()` is lowered too: row after row, by index.)
            ("sum", 0, Some(1 | 2)) => syn::parse_quote_spanned!(span=> #a.iter().#sum()),
            ("sum", 0, _) => {
                return unsupported(
                    m,
                    "`sum` of an `ndarray` array whose type does not name its number of dimensions, or that has more than two (take `&Array1` or `&Array2`)",
                );
            }
            ("dot", 1, Some(1)) => {
                let b = self
                    .array_param(&m.args[0])
                    .filter(|b| self.array_rank(b) == Some(1));
                let Some(b) = b else {
                    return unsupported(
                        &m.args[0],
                        "`dot` with this operand (a one-dimensional `ndarray` array, a parameter or one the function makes, is supported)",
                    );
                };
                syn::parse_quote_spanned!(span=> {
                    assert_eq!(#a.len(), #b.len(), "`dot` of arrays of different lengths");
                    #a.iter().zip(#b.iter()).map(|(__ad_p, __ad_q)| __ad_p * __ad_q).#sum()
                })
            }
            _ => {
                return unsupported(
                    m,
                    "this `dot` (a product of two matrices makes a matrix, which differentiated code cannot build yet: write it as a loop into a `&mut` parameter; `dot` of two vectors, and of a matrix and a vector, are supported)",
                );
            }
        };
        Ok(Some(e))
    }

    /// The name of the `ndarray` parameter, or local array, that `e` is (`a`, `&a`,
    /// `(a)`).
    pub(super) fn array_param(&self, e: &Expr) -> Option<Ident> {
        let Expr::Path(p) = strip(strip_ref(e)) else {
            return None;
        };
        let id = p.path.get_ident()?;
        self.array_params
            .contains(&self.array_key(id))
            .then(|| id.clone())
    }

    /// The name under which the array `a` (as written) is known: a local's own name in
    /// the lowered code, a parameter's name.
    fn array_key(&self, a: &Ident) -> String {
        match self.lookup(&a.to_string()) {
            Some(Binding::Var(v)) => v.to_string(),
            _ => a.to_string(),
        }
    }

    /// The number of dimensions of the array `a` (as written), where its type names it.
    pub(super) fn array_rank(&self, a: &Ident) -> Option<usize> {
        self.ranked_arrays.get(&self.array_key(a)).copied()
    }

    /// The element type of the array `a` (as written), where its type names it.
    pub(super) fn array_elem(&self, a: &Ident) -> Option<&syn::Type> {
        self.array_elems.get(&self.array_key(a))
    }

    /// The element type of the array that `e` names (`a`, `&a`), where its type names it.
    pub(super) fn elem_of(&self, e: &Expr) -> Option<syn::Type> {
        self.array_param(e)
            .and_then(|a| self.array_elem(&a).cloned())
    }
}
