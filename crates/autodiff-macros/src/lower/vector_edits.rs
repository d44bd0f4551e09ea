//! `Vec` methods that move elements, written as the element moves they amount to, each
//! made of what the lowering already reads (indexing, `push`, `truncate`, `collect`):
//!
//! ```text
//! v.retain(f)         →  v = v.iter().copied().filter(f).collect();
//! v.insert(i, e)      →  v.push(e); v[k] = v[k - 1] for k from the end down to i + 1; v[i] = e
//! v.remove(i)         →  r = v[i]; v[k] = v[k + 1] for k in i..n - 1; v.truncate(n - 1); r
//! v.swap_remove(i)    →  r = v[i]; v[i] = v[n - 1]; v.truncate(n - 1); r
//! v.rotate_left(k)    →  old = v.to_vec(); v[j] = old[(j + k) % n] for every j
//! v.rotate_right(k)   →  old = v.to_vec(); v[(j + k) % n] = old[j] for every j
//! ```
//!
//! The derivatives move with the values. `retain`'s predicate sees a reference to each
//! element, as `filter` lends one to a copied element. The methods that change the length
//! apply to a local vector of floats or a `Vec` member of a struct (a parameter's or one
//! built in the function); the rotations also to a `&mut [f64]` parameter and sub-slices.
//! They panic where `std`'s do (an index past the end, a rotation by more than the
//! length). A removal moves every later element once, so it costs O(n), as `std`'s does.

use super::*;

impl Lowerer {
    /// `v.retain(f)`, `v.insert(i, e)` and `v.rotate_left(k)` / `v.rotate_right(k)` as
    /// statements; `None` where `m` is another method or its receiver no such buffer.
    pub(super) fn edited_vector(&mut self, m: &syn::ExprMethodCall) -> Result<Option<()>> {
        let (v, span) = (&m.receiver, m.span());
        let name = m.method.to_string();
        let block: syn::Block = match (name.as_str(), m.args.len()) {
            ("retain", 1) if self.is_resizable_floats(v)? => {
                let f = &m.args[0];
                syn::parse_quote_spanned!(span=> {
                    #v = #v.iter().copied().filter(#f).collect();
                })
            }
            ("insert", 2) if self.is_resizable_floats(v)? => {
                let (i, e) = (&m.args[0], &m.args[1]);
                syn::parse_quote_spanned!(span=> {
                    let __ad_at: usize = #i;
                    let __ad_new = #e;
                    ::core::assert!(__ad_at <= #v.len(), "insertion index (is {}) should be <= len (is {})", __ad_at, #v.len());
                    #v.push(__ad_new);
                    let __ad_n = #v.len();
                    for __ad_k in (__ad_at + 1..__ad_n).rev() {
                        #v[__ad_k] = #v[__ad_k - 1];
                    }
                    #v[__ad_at] = __ad_new;
                })
            }
            ("rotate_left" | "rotate_right", 1)
                if self.is_float_buffer_expr(v)? || self.is_resizable_floats(v)? =>
            {
                let k = &m.args[0];
                let (to, from): (Expr, Expr) = if name == "rotate_left" {
                    (
                        syn::parse_quote_spanned!(span=> __ad_j),
                        syn::parse_quote_spanned!(span=> (__ad_j + __ad_k) % __ad_n),
                    )
                } else {
                    (
                        syn::parse_quote_spanned!(span=> (__ad_j + __ad_k) % __ad_n),
                        syn::parse_quote_spanned!(span=> __ad_j),
                    )
                };
                syn::parse_quote_spanned!(span=> {
                    let __ad_k: usize = #k;
                    let __ad_old = #v.to_vec();
                    let __ad_n = __ad_old.len();
                    ::core::assert!(__ad_k <= __ad_n, "rotation by {} of a slice of {}", __ad_k, __ad_n);
                    for __ad_j in 0..__ad_n {
                        #v[#to] = __ad_old[#from];
                    }
                })
            }
            _ => return Ok(None),
        };
        self.lower_scoped(&block).map(|_| Some(()))
    }

    /// `v.remove(i)` and `v.swap_remove(i)`: the element taken out, as a block whose value
    /// it is; `None` where `m` is another method or its receiver no such buffer.
    pub(super) fn removed_element(&mut self, m: &syn::ExprMethodCall) -> Result<Option<Expr>> {
        let (v, span) = (&m.receiver, m.span());
        let name = m.method.to_string();
        if !matches!(name.as_str(), "remove" | "swap_remove")
            || m.args.len() != 1
            || !self.is_resizable_floats(v)?
        {
            return Ok(None);
        }
        let i = &m.args[0];
        let closed: syn::Stmt = if name == "remove" {
            syn::parse_quote_spanned!(span=>
            for __ad_k in __ad_at..__ad_n - 1 {
                #v[__ad_k] = #v[__ad_k + 1];
            })
        } else {
            syn::parse_quote_spanned!(span=> #v[__ad_at] = #v[__ad_n - 1];)
        };
        Ok(Some(syn::parse_quote_spanned!(span=> {
            let __ad_at: usize = #i;
            let __ad_removed = #v[__ad_at];
            let __ad_n = #v.len();
            #closed
            #v.truncate(__ad_n - 1);
            __ad_removed
        })))
    }

    /// Whether `v` is a vector of floats whose length may change: a local one, or a `Vec`
    /// member of a struct (not a vector of rows).
    fn is_resizable_floats(&mut self, v: &Expr) -> Result<bool> {
        if self.companion {
            return Ok(false);
        }
        let Val::Place(p, _) = self.lower_expr(v)? else {
            return Ok(false);
        };
        let base = p.base.to_string();
        Ok(if self.is_written_buffer(&p) {
            !self.matrix_vars.contains(&base) && !self.array_locals.contains(&base)
        } else {
            matches!(strip(v), Expr::Field(_))
                && (self.is_struct_param_member(&p) || self.is_local_struct_member(&p))
        })
    }
}
