//! `Option::map` of an element that a search finds, followed by what reads the option,
//! written before lowering as the binding that the lowering reads:
//!
//! ```text
//! found.map(|p| body).unwrap()         →  { let p = found.unwrap(); body }
//! found.map(|p| body).expect(m)        →  { let p = found.expect(m); body }
//! found.map(|p| body).unwrap_or(d)     →  if let Some(v) = found { let p = v; body } else { d }
//! found.map(|p| body).unwrap_or_else(|| d)   (the same)
//! found.map_or(d, |p| body)                  (the same)
//! ```
//!
//! where `found` is `x.first()`, `x.last()`, `x.get(i)` or a reduction (`reduce`,
//! `max_by`, `min_by`): the argmin idiom `x.iter().enumerate().min_by(cmp).map(|(i, _)|
//! i).unwrap()` among them. The closure's parameter is bound as a `let` binds it, and its
//! body is then the block's value, which is what calling the closure does. A closure whose
//! body may `return` or use `?` (which would leave the closure, not the function) is left
//! as written, and the lowering refuses it as before.

use super::*;

/// Writes the forms above in `body` as bindings (a function's own code; nested blocks
/// and closures included), except searches in `never_differentiated` parameters.
pub(super) fn bind_option_maps(body: &mut syn::Block, never_differentiated: &HashSet<String>) {
    Binder {
        never_differentiated,
    }
    .visit_block_mut(body);
}

struct Binder<'a> {
    /// The parameters that carry no float (`mask: &[usize]`): searches in them are
    /// kept as written, as the lowering reads them as values without derivatives.
    never_differentiated: &'a HashSet<String>,
}

impl VisitMut for Binder<'_> {
    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        visit_macro_items(self, m);
    }

    fn visit_expr_mut(&mut self, e: &mut Expr) {
        syn::visit_mut::visit_expr_mut(self, e);
        if let Some(bound) = bound(e, self.never_differentiated) {
            *e = bound;
        }
    }
}

/// `e` written as a binding, where it is one of the forms above. An integer that an
/// element gives (`x.get(i).map(|_| 1).unwrap_or(0)`) and a search in a parameter
/// without floats (`mask.get(7).map_or(0.5, |&k| k as f64)`) are kept as written: the
/// lowering reads them as values without derivatives.
fn bound(e: &Expr, never_differentiated: &HashSet<String>) -> Option<Expr> {
    let span = e.span();
    let Expr::MethodCall(read) = e else {
        return None;
    };
    let read_name = read.method.to_string();
    // `found.map_or(d, f)` names the closure itself; the others read `found.map(f)`.
    let (found, closure, default) = if read_name == "map_or" && read.args.len() == 2 {
        (
            &*read.receiver,
            &read.args[1],
            Some(Fallback::Eager(read.args[0].clone())),
        )
    } else {
        let Expr::MethodCall(map) = strip(&read.receiver) else {
            return None;
        };
        if map.method != "map" || map.args.len() != 1 {
            return None;
        }
        let default = match (read_name.as_str(), read.args.len()) {
            ("unwrap" | "expect", _) => None,
            ("unwrap_or", 1) => Some(Fallback::Eager(read.args[0].clone())),
            ("unwrap_or_else", 1) => Some(Fallback::Lazy(called_without_arguments(&read.args[0])?)),
            _ => return None,
        };
        (&*map.receiver, &map.args[0], default)
    };
    if !finds_an_element(found) || reads_from(found, never_differentiated) {
        return None;
    }
    let Expr::Closure(f) = strip(closure) else {
        return None;
    };
    if f.inputs.len() != 1 || leaves_the_closure(&f.body) {
        return None;
    }
    // (The lowering refuses `map` after a reduction whatever it gives.)
    let reduction = matches!(strip(found), Expr::MethodCall(r) if is_reduction(r));
    let integer_default = matches!(&default, Some(Fallback::Eager(d) | Fallback::Lazy(d))
        if is_integer_evident(d));
    if !reduction && (is_integer_evident(&f.body) || integer_default) {
        return None;
    }
    let (pat, body) = (&f.inputs[0], &f.body);
    Some(match default {
        None => {
            let method = &read.method;
            let args = &read.args;
            syn::parse_quote_spanned!(span=> {
                let #pat = #found.#method(#args);
                #body
            })
        }
        Some(d) => {
            // (`unwrap_or`'s and `map_or`'s default is evaluated first, found or not;
            // `unwrap_or_else`'s only where nothing is found.)
            let none: Expr = match &d {
                Fallback::Eager(_) => syn::parse_quote_spanned!(span=> __ad_default),
                Fallback::Lazy(d) => d.clone(),
            };
            // (The lowering reads `if let Some(v)` of each of these.)
            let found_or_not: Expr = syn::parse_quote_spanned!(span=>
            if let Some(__ad_found) = #found {
                let #pat = __ad_found;
                #body
            } else {
                #none
            });
            match d {
                Fallback::Eager(d) => syn::parse_quote_spanned!(span=> {
                    let __ad_default = #d;
                    #found_or_not
                }),
                Fallback::Lazy(_) => found_or_not,
            }
        }
    })
}

/// What is read where nothing is found.
enum Fallback {
    /// `unwrap_or(d)`, `map_or(d, ..)`: `d`, evaluated first.
    Eager(Expr),
    /// `unwrap_or_else(|| d)`: `d`, evaluated where nothing is found.
    Lazy(Expr),
}

fn is_reduction(m: &syn::ExprMethodCall) -> bool {
    matches!(
        m.method.to_string().as_str(),
        "reduce" | "max_by" | "min_by"
    )
}

/// Whether `e` is a call that returns an element found in a buffer as an `Option` that
/// the lowering reads (the lowering reads `position`'s `Option` taken apart by closures
/// itself).
fn finds_an_element(e: &Expr) -> bool {
    matches!(strip(e), Expr::MethodCall(m)
        if is_reduction(m) || matches!(m.method.to_string().as_str(), "first" | "last" | "get"))
}

/// The body of `|| d`, a closure without parameters that cannot leave itself.
pub(super) fn called_without_arguments(e: &Expr) -> Option<Expr> {
    match strip(e) {
        Expr::Closure(c) if c.inputs.is_empty() && !leaves_the_closure(&c.body) => {
            Some((*c.body).clone())
        }
        _ => None,
    }
}
