//! Rows and columns of `ndarray` matrices (parameters, and members of structs):
//! `w.row(i)` and `w.column(j)`, read as the elements they view (`w[[i, k]]`,
//! `w[[k, j]]`). `w.row(i).dot(&x)` and `w.row(i).sum()` are the reductions over those
//! elements, lowered as the iterator chains they amount to, with nothing copied. Any other
//! use of a line (`let r = w.row(i);`, `w.row(i).iter()`) reads a copy of it, a `Vec` the
//! function differentiates as a buffer of its own, whose `dot` and `sum` are reductions
//! too; `for r in w.rows()` (or `outer_iter()`, `columns()`, with `enumerate()`) is a loop
//! over the lines' indexes that binds each line so; and the product of a matrix parameter
//! and a vector (`w.dot(&x)`, `x.dot(&w)`) is the `Vec` of its lines' `dot`s.

use super::*;
use syn::{parse_quote, parse_quote_spanned};

/// A row or a column of a matrix parameter or member.
pub(super) struct Line<'e> {
    /// The matrix (`w`, `self.w`).
    array: Expr,
    /// The parameter it is, when it is one (whose element type is known).
    param: Option<Ident>,
    /// The line's index, as written.
    index: &'e Expr,
    /// A column (`w.column(j)`), not a row.
    column: bool,
}

impl Lowerer {
    /// `w.row(e)` or `w.column(e)` (or a reference to it) of a two-dimensional `ndarray`
    /// parameter `w`, or of a struct's member (`self.w.row(i)`: only matrices have rows).
    pub(super) fn array_line<'e>(&self, e: &'e Expr) -> Option<Line<'e>> {
        let Expr::MethodCall(m) = strip(strip_ref(e)) else {
            return None;
        };
        let column = match m.method.to_string().as_str() {
            "row" => false,
            "column" => true,
            _ => return None,
        };
        if m.args.len() != 1 {
            return None;
        }
        let (array, param) = self.matrix_or_member(&m.receiver)?;
        Some(Line {
            array,
            param,
            index: &m.args[0],
            column,
        })
    }

    /// A two-dimensional array parameter (`w`, `&w`), with its name, or a member of a
    /// struct (`self.w`, `l.w`), checked to be an array by `__private::array_shape` where
    /// its shape is read.
    fn matrix_or_member(&self, e: &Expr) -> Option<(Expr, Option<Ident>)> {
        if let Some(w) = self.matrix_param(e) {
            return Some((parse_quote!(#w), Some(w)));
        }
        let member = strip(strip_ref(e));
        field_root(member)
            .is_some_and(|root| self.is_struct_receiver(root))
            .then(|| (member.clone(), None))
    }

    /// The length of a line and its element at the index `k`.
    fn line_parts(line: &Line, k: &Ident) -> (Expr, Expr) {
        let (a, i) = (&line.array, line.index);
        let shape = shape_of_matrix(a, line.param.is_some());
        if line.column {
            (parse_quote!(#shape.nrows()), parse_quote!(#a[[#k, (#i)]]))
        } else {
            (parse_quote!(#shape.ncols()), parse_quote!(#a[[(#i), #k]]))
        }
    }

    /// The element type of a line's matrix, for the turbofish of a sum or a copy.
    fn line_elem(&self, line: &Line) -> Option<syn::Type> {
        self.array_elem(line.param.as_ref()?).cloned()
    }

    /// A copy of a line, as a `Vec`: `(0..w.ncols()).map(|k| w[[i, k]]).collect()`.
    pub(super) fn line_copy(&self, line: &Line, span: Span) -> Expr {
        let k = Ident::new("__ad_line_k", span);
        let (len, elem) = Self::line_parts(line, &k);
        let vec = vec_of(self.line_elem(line), span);
        parse_quote_spanned!(span=> (0..#len).map(|#k| #elem).collect::<#vec>())
    }

    /// The matrix parameter that `e` is (`w`, `&w`).
    fn matrix_param(&self, e: &Expr) -> Option<Ident> {
        self.array_param_of_rank(e, 2)
    }

    /// The `ndarray` parameter that `e` is, where its type names `rank` dimensions.
    fn array_param_of_rank(&self, e: &Expr, rank: usize) -> Option<Ident> {
        self.array_param(e)
            .filter(|a| self.array_rank(a) == Some(rank))
    }

    /// `w.dot(&x)` of a matrix parameter and a vector (a vector parameter, a line or a
    /// local buffer), or `x.dot(&w)`: the product, a `Vec` of the rows' (or columns')
    /// `dot`s with the vector.
    pub(super) fn matrix_vector_product(&self, m: &syn::ExprMethodCall) -> Option<Expr> {
        if m.method != "dot" || m.args.len() != 1 {
            return None;
        }
        let span = m.span();
        let (w, x, line, count) = if let Some(w) = self.matrix_param(&m.receiver) {
            (
                w,
                &m.args[0],
                quote_spanned!(span=> row),
                quote_spanned!(span=> nrows),
            )
        } else if let Some(w) = self.matrix_param(&m.args[0]) {
            (
                w,
                &*m.receiver,
                quote_spanned!(span=> column),
                quote_spanned!(span=> ncols),
            )
        } else {
            return None;
        };
        if self.matrix_param(x).is_some() {
            return None;
        }
        let i = Ident::new("__ad_line_i", span);
        let vec = vec_of(self.array_elem(&w).cloned(), span);
        let x = strip(strip_ref(x));
        Some(parse_quote_spanned!(span=>
            (0..#w.#count()).map(|#i| #w.#line(#i).dot(&#x)).collect::<#vec>()
        ))
    }

    /// `a.dot(b)` or `a.sum()` where `a` is a line of a matrix parameter, or a local buffer
    /// (a line's copy: `dot` and `sum` are no methods of a `Vec`), and `b` a line, a
    /// one-dimensional array or any buffer of the same length: the expression that computes
    /// it. `None` for any other call.
    pub(super) fn line_reduction(
        &self,
        m: &syn::ExprMethodCall,
        hint: Option<&syn::Type>,
    ) -> Option<Expr> {
        let name = m.method.to_string();
        let span = m.span();
        let k = Ident::new("__ad_line_k", span);
        // The length, the element at `k` and (for a line or an array) the element type of
        // an operand.
        let operand = |l: &Self, e: &Expr| -> (Expr, Expr, Option<syn::Type>) {
            if let Some(line) = l.array_line(e) {
                let (len, elem) = Self::line_parts(&line, &k);
                return (len, elem, l.line_elem(&line));
            }
            let base = strip(strip_ref(e));
            // (An array the function makes has the element type its constructor names,
            // if it names one: `Array1::<T>::zeros(n)`.)
            let elem = l.elem_of(e);
            (parse_quote!(#base.len()), parse_quote!(#base[#k]), elem)
        };
        // A vector parameter dotted with a line (`x.dot(&w.row(i))`) or a local vector
        // (`v.dot(&z)` of `let z = w.dot(x);`).
        let arg_line = m.args.first().and_then(|b| self.array_line(b));
        let arg_local = m
            .args
            .first()
            .is_some_and(|b| self.is_local_float_buffer(b) && self.array_param(b).is_none());
        let vector_param = self.array_param_of_rank(&m.receiver, 1).is_some();
        let reduced = self.array_line(&m.receiver).is_some()
            || (self.is_local_float_buffer(&m.receiver)
                && (self.array_param(&m.receiver).is_none() || vector_param))
            || (vector_param && (arg_line.is_some() || arg_local));
        if !reduced {
            return None;
        }
        let (len, a, ty) = operand(self, &m.receiver);
        let ty = ty.or_else(|| arg_line.and_then(|l| self.line_elem(&l)));
        let sum = match hint.cloned().or(ty) {
            Some(t) => quote_spanned!(span=> sum::<#t>),
            None => quote_spanned!(span=> sum),
        };
        match (name.as_str(), m.args.len()) {
            ("sum", 0) => Some(parse_quote_spanned!(span=> (0..#len).map(|#k| #a).#sum())),
            ("dot", 1) => {
                let (len_b, b, _) = operand(self, &m.args[0]);
                Some(parse_quote_spanned!(span=> {
                    assert_eq!(#len, #len_b, "`dot` of vectors of different lengths");
                    (0..#len).map(|#k| #a * #b).#sum()
                }))
            }
            _ => None,
        }
    }

    /// A whole-array method of an `ndarray` parameter that differentiated code does not
    /// read (`w.mapv(f)`, `w.t()`): an error naming it, rather than a missing derivative
    /// companion of `ndarray`'s method.
    pub(super) fn unsupported_array_method(&self, m: &syn::ExprMethodCall) -> Result<()> {
        let name = m.method.to_string();
        let whole_array = matches!(
            name.as_str(),
            "map"
                | "mapv"
                | "mapv_into"
                | "map_inplace"
                | "mapv_inplace"
                | "zip_mut_with"
                | "t"
                | "reversed_axes"
                | "slice"
                | "slice_mut"
                | "axis_iter"
                | "axis_iter_mut"
                | "outer_iter_mut"
                | "rows_mut"
                | "columns_mut"
                | "row_mut"
                | "column_mut"
                | "lanes"
                | "to_owned"
                | "into_owned"
                | "view"
                | "view_mut"
                | "assign"
                | "scaled_add"
                | "mean"
                | "sum_axis"
                | "mean_axis"
                | "product"
                | "fold"
                | "std"
                | "var"
                | "diag"
                | "into_shape_with_order"
                | "to_shape"
        );
        if !whole_array || self.array_param(&m.receiver).is_none() {
            return Ok(());
        }
        if matches!(name.as_str(), "mapv" | "mapv_inplace") {
            return unsupported(
                m,
                &format!(
                    "`{name}` here (bind its value first, `let h = a.mapv(f);`, or reduce it, `a.mapv(f).sum()`; `a.mapv_inplace(f);` is a statement of its own)"
                ),
            );
        }
        unsupported(
            m,
            &format!(
                "`{name}` of an `ndarray` array (arrays are read by index, with `sum`, `mean().unwrap()`, `sum_axis(Axis(k))`, `mean_axis(Axis(k)).unwrap()`, `dot`, `row(i)`, `column(j)`, `rows()`, `columns()`, iteration, `mapv`, `t()` and elementwise arithmetic, `&a + &b`; write the loop by index)"
            ),
        )
    }

    /// Whether `e` names a local float buffer of the function (a line's copy, say).
    fn is_local_float_buffer(&self, e: &Expr) -> bool {
        let Expr::Path(p) = strip(strip_ref(e)) else {
            return false;
        };
        p.path.get_ident().is_some_and(|id| {
            matches!(self.lookup(&id.to_string()), Some(Binding::Var(v))
                if self.kinds.get(&v.to_string()) == Some(&VarKind::Buffer)
                    && !self.struct_values.contains(&v.to_string())
                    && !self.is_struct_copy(v))
        })
    }

    /// `for r in w.rows()` (`outer_iter()`, `columns()`, each perhaps followed by
    /// `into_iter()` and `enumerate()`) over a matrix parameter `w`: the same loop over
    /// the lines' indexes, binding each line with `let r = w.row(i);`.
    pub(super) fn line_loop(&self, f: &syn::ExprForLoop) -> Option<syn::ExprForLoop> {
        let mut e = strip(&f.expr);
        let mut enumerated = false;
        loop {
            let Expr::MethodCall(m) = e else { return None };
            match m.method.to_string().as_str() {
                "into_iter" if m.args.is_empty() => e = strip(&m.receiver),
                "enumerate" if m.args.is_empty() && !enumerated => {
                    enumerated = true;
                    e = strip(&m.receiver);
                }
                "rows" | "outer_iter" | "columns" if m.args.is_empty() => break,
                _ => return None,
            }
        }
        let Expr::MethodCall(m) = e else { return None };
        let (array, param) = self.matrix_or_member(&m.receiver)?;
        let shape = shape_of_matrix(&array, param.is_some());
        let span = f.expr.span();
        let (count, line) = if m.method == "columns" {
            (
                quote_spanned!(span=> #shape.ncols()),
                quote_spanned!(span=> column),
            )
        } else {
            (
                quote_spanned!(span=> #shape.nrows()),
                quote_spanned!(span=> row),
            )
        };
        let (index, pat): (Pat, Pat) = if enumerated {
            let Pat::Tuple(t) = &*f.pat else { return None };
            if t.elems.len() != 2 {
                return None;
            }
            let index = match &t.elems[0] {
                Pat::Wild(_) => parse_quote_spanned!(span=> __ad_line_i),
                p => p.clone(),
            };
            (index, t.elems[1].clone())
        } else {
            (parse_quote_spanned!(span=> __ad_line_i), (*f.pat).clone())
        };
        let Pat::Ident(ix) = &index else { return None };
        let ix = &ix.ident;
        let mut each = f.clone();
        *each.pat = index.clone();
        *each.expr = parse_quote_spanned!(span=> 0..#count);
        let bind: syn::Stmt = parse_quote_spanned!(span=> let #pat = #array.#line(#ix););
        each.body.stmts.insert(0, bind);
        Some(each)
    }
}

/// The shape of a matrix: a parameter's own, a member's through the check that it is an
/// array (`__private::array_shape`).
fn shape_of_matrix(array: &Expr, is_param: bool) -> Expr {
    if is_param {
        array.clone()
    } else {
        parse_quote!(::autodiff_core::__private::array_shape(&#array))
    }
}

/// `Vec<elem>`, or `Vec<_>` where the element type is not known.
fn vec_of(elem: Option<syn::Type>, span: Span) -> TokenStream {
    match elem {
        Some(t) => quote_spanned!(span=> ::std::vec::Vec<#t>),
        None => quote_spanned!(span=> ::std::vec::Vec<_>),
    }
}
