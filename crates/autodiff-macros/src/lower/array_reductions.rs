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
        let rank = self.ranked_arrays.get(&a.to_string()).copied();
        let span = m.span();
        // Typed by the value's written type, else by the array's element type: a sum's
        // starting value is typed by it (`-0.0` alone would be an ambiguous float).
        let sum = match hint.or_else(|| self.array_elems.get(&a.to_string())) {
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
                    .filter(|b| self.ranked_arrays.get(&b.to_string()) == Some(&1));
                let Some(b) = b else {
                    return unsupported(
                        &m.args[0],
                        "`dot` with this operand (a one-dimensional `ndarray` parameter, `&Array1`, is supported)",
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

    /// The name of the `ndarray` parameter that `e` is (`a`, `&a`, `(a)`).
    pub(super) fn array_param(&self, e: &Expr) -> Option<Ident> {
        let Expr::Path(p) = strip(strip_ref(e)) else {
            return None;
        };
        let id = p.path.get_ident()?;
        self.array_params
            .contains(&id.to_string())
            .then(|| id.clone())
    }
}
