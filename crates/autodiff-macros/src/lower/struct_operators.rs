//! Operators on struct values (`a + b`, `v * 0.5`, `-z`, `acc += v` of a user's struct):
//! written as calls of the methods that `#[differentiable]` on the operator's `impl`
//! block adds (`a.autodiff_op_add(&b)`, see `crate::struct_operators`), before they are
//! lowered, so that they are differentiated as method calls are. An operator's body is
//! not visible here, so this is the only way its derivative can be known; a struct whose
//! operator's block is not marked has no such method, and a check written before the call
//! makes that rustc's error at the operator, saying what to mark.

use super::*;
use crate::struct_operators::{METHOD_PREFIX, Operands, added_name, marker};

impl Lowerer {
    /// `e` with every operator on struct values (see [`Self::struct_operator`]) written
    /// as a call of the method added for it, or `None` where `e` has none. The right
    /// operand is passed by reference where it is a struct value too, and as it is
    /// otherwise (`v * 0.5`, `impl Mul<f64> for V2`, whose method is named `_scalar`); a
    /// float on the left is passed to the method of the struct on the right (`0.5 * v` is
    /// `v.autodiff_op_scalar_mul(0.5)`).
    ///
    /// Before the calls, it emits a check of each operator whose struct operand is a
    /// place (`a`, `zs[i]`, `self.v`): a statement that compiles only where the
    /// operator's block is marked (see `autodiff_core`'s `operators`), so that a missing
    /// derivative is reported at the operator with a message that says what to mark.
    pub(super) fn struct_operators_as_calls(&mut self, e: &Expr) -> Option<Expr> {
        if self.companion || !self.has_struct_operators(e) {
            return None;
        }
        let mut rewritten = e.clone();
        let mut rewriter = Rewriter {
            lowerer: self,
            changed: false,
            checks: Vec::new(),
        };
        rewriter.visit_expr_mut(&mut rewritten);
        let (changed, checks) = (rewriter.changed, rewriter.checks);
        for check in checks {
            self.emit(Stmt::Inactive(check));
        }
        changed.then_some(rewritten)
    }

    /// Refuses `b` (in `e`), an operator that is left with a struct value among its
    /// operands where no call could be written for it: `a ^ b`, `a % b`, `x *= v`.
    pub(super) fn refuse_struct_operands(&self, e: &Expr, b: &syn::ExprBinary) -> Result<()> {
        if self.companion {
            Ok(())
        } else if self.struct_valued(&b.left) {
            unsupported(e, STRUCT_OPERATOR)
        } else if self.struct_valued(&b.right) {
            unsupported(e, STRUCT_ON_THE_RIGHT)
        } else {
            Ok(())
        }
    }

    /// Whether `e` is an operator on struct values written as its call.
    pub(super) fn is_struct_operator_call(&self, e: &Expr) -> bool {
        matches!(strip(e), Expr::MethodCall(m) if m.method.to_string().starts_with(METHOD_PREFIX))
    }

    /// Whether `e` has an operator on struct values (outside closures, blocks and `match`
    /// arms, as [`Rewriter`] rewrites), without copying it.
    fn has_struct_operators(&self, e: &Expr) -> bool {
        struct Finder<'a> {
            lowerer: &'a Lowerer,
            found: bool,
        }
        impl<'ast> syn::visit::Visit<'ast> for Finder<'_> {
            fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
            fn visit_block(&mut self, _: &'ast syn::Block) {}
            fn visit_arm(&mut self, _: &'ast syn::Arm) {}
            fn visit_expr(&mut self, e: &'ast Expr) {
                self.found |= match e {
                    Expr::Binary(b) => self.lowerer.struct_operator(b).is_some(),
                    Expr::Unary(u) => {
                        matches!(u.op, syn::UnOp::Neg(_)) && self.lowerer.struct_valued(&u.expr)
                    }
                    _ => false,
                };
                if !self.found {
                    syn::visit::visit_expr(self, e);
                }
            }
        }
        let mut finder = Finder {
            lowerer: self,
            found: false,
        };
        syn::visit::Visit::visit_expr(&mut finder, e);
        finder.found
    }

    /// The method of `b` where it is an operator on struct values, with its operands:
    /// its left operand is a struct value; or its right one is, and its left one is a
    /// float (`*` and `/`, whose left operand is then a float or an error, and `+` and
    /// `-` with a float evidently on the left, `1.0 - v`); or, for `+` and `-` (and `+=`,
    /// `-=`), its right operand is a struct value and its left one may be too (`m + c`
    /// with `m` a call's result, which the macro cannot type).
    pub(super) fn struct_operator(&self, b: &syn::ExprBinary) -> Option<(&'static str, Operands)> {
        let method = operator_method(&b.op)?;
        let right = self.struct_valued(&b.right);
        if self.struct_valued(&b.left) {
            let operands = if right {
                Operands::Structs
            } else {
                Operands::FloatRight
            };
            return Some((method, operands));
        }
        if !right {
            return None;
        }
        match method {
            "mul" | "div" => Some((method, Operands::FloatLeft)),
            "add" | "sub" if is_evidently_float(&b.left) => Some((method, Operands::FloatLeft)),
            "add" | "sub" | "add_assign" | "sub_assign" => Some((method, Operands::Structs)),
            _ => None,
        }
    }

    /// Whether `e` is a struct value: one that [`Self::is_struct_operand`] knows, a
    /// struct built in the body and bound with `let mut`, a local bound to a struct a
    /// call returned (`let q = p + v;`, `let e: C = z.exp();`), or an operator on structs
    /// (already written as its call, or to be: its left operand is a struct value).
    pub(super) fn struct_valued(&self, e: &Expr) -> bool {
        match strip(e) {
            Expr::MethodCall(_) => self.is_struct_operator_call(e),
            Expr::Binary(b) => self.struct_operator(b).is_some(),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => self.struct_valued(&u.expr),
            Expr::Path(p) => {
                self.is_struct_operand(e)
                    || p.path.get_ident().is_some_and(|id| {
                        matches!(self.lookup(&id.to_string()), Some(Binding::Var(v))
                            if self.struct_values.contains(&v.to_string())
                                || self.struct_results.contains(&v.to_string())
                                || self.structs_with_buffers.contains(&v.to_string()))
                    })
            }
            _ => self.is_struct_operand(e),
        }
    }
}

/// Rewrites the operators of an expression from the innermost out, so that an operand
/// that is itself an operator on structs (`p + v * dt`) is known for a struct value.
struct Rewriter<'a> {
    lowerer: &'a Lowerer,
    changed: bool,
    /// The checks of the operators rewritten (see [`Lowerer::struct_operators_as_calls`]).
    checks: Vec<TokenStream>,
}

impl Rewriter<'_> {
    /// Records the check of the operator `method` of `operands` whose struct operand (the
    /// left one but for a float on the left) is `operand`, where `operand` is a place,
    /// which the check reads again without effects.
    fn check(&mut self, method: &str, operands: Operands, operand: &Expr, op: proc_macro2::Span) {
        let place = match strip(operand) {
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => strip(&u.expr),
            e => e,
        };
        let simple = |e: &Expr| matches!(strip(e), Expr::Path(p) if p.path.get_ident().is_some());
        let checkable = match place {
            Expr::Path(_) => simple(place),
            Expr::Field(f) => simple(&f.base),
            // (An index that a loop binds is not the user's name in every sweep.)
            Expr::Index(ix) => simple(&ix.expr) && matches!(strip(&ix.index), Expr::Lit(_)),
            _ => false,
        };
        if !checkable {
            return;
        }
        let (_, check) = marker(method, operands);
        // (At the operator, where rustc reports a missing derivative; the operand keeps
        // its own spans, which its names resolve by.)
        let operand = self.lowerer.render(operand);
        self.checks.push(quote_spanned! {op=>
            ::autodiff_core::no_grad(::autodiff_core::__private::operators::#check(&#operand));
        });
    }
}

impl VisitMut for Rewriter<'_> {
    // A closure's parameters are other values, which the lowering of the closure reads;
    // the statements of a block (a loop's body, a branch) and a `match` arm are rewritten
    // where they are lowered, once the names bound before them are known.
    fn visit_expr_closure_mut(&mut self, _: &mut syn::ExprClosure) {}
    fn visit_block_mut(&mut self, _: &mut syn::Block) {}
    fn visit_arm_mut(&mut self, _: &mut syn::Arm) {}

    fn visit_expr_mut(&mut self, e: &mut Expr) {
        syn::visit_mut::visit_expr_mut(self, e);
        let call: Expr = match e {
            Expr::Binary(b) => {
                let Some((method, operands)) = self.lowerer.struct_operator(b) else {
                    return;
                };
                // The struct operand receives the call; the other is its argument, by
                // reference where it is a struct too.
                let (receiver, arg) = match operands {
                    Operands::FloatLeft => (&b.right, &b.left),
                    _ => (&b.left, &b.right),
                };
                self.check(method, operands, receiver, b.op.span());
                let arg: Expr = match operands {
                    Operands::Structs => syn::parse_quote_spanned!(arg.span()=> &#arg),
                    _ => (**arg).clone(),
                };
                let (receiver, name) = (
                    as_receiver(receiver),
                    added_name(method, operands, b.op.span()),
                );
                syn::parse_quote_spanned!(b.op.span()=> #receiver.#name(#arg))
            }
            Expr::Unary(u)
                if matches!(u.op, syn::UnOp::Neg(_)) && self.lowerer.struct_valued(&u.expr) =>
            {
                self.check("neg", Operands::Structs, &u.expr, u.op.span());
                let name = added_name("neg", Operands::Structs, u.op.span());
                let receiver = as_receiver(&u.expr);
                syn::parse_quote_spanned!(u.op.span()=> #receiver.#name())
            }
            _ => return,
        };
        *e = call;
        self.changed = true;
    }
}

/// The method of the operator `op` (`add` of `+`, `add_assign` of `+=`), where it is
/// one that a struct's block can make differentiable.
fn operator_method(op: &syn::BinOp) -> Option<&'static str> {
    Some(match op {
        syn::BinOp::Add(_) => "add",
        syn::BinOp::Sub(_) => "sub",
        syn::BinOp::Mul(_) => "mul",
        syn::BinOp::Div(_) => "div",
        syn::BinOp::AddAssign(_) => "add_assign",
        syn::BinOp::SubAssign(_) => "sub_assign",
        syn::BinOp::MulAssign(_) => "mul_assign",
        syn::BinOp::DivAssign(_) => "div_assign",
        _ => return None,
    })
}

/// Whether `e` is a float whatever the types of the names it reads: a float literal, a
/// cast to a float type, or arithmetic with one among its operands (`2.0 * t`).
fn is_evidently_float(e: &Expr) -> bool {
    match strip(e) {
        Expr::Lit(l) => matches!(&l.lit, syn::Lit::Float(_)),
        Expr::Cast(c) => matches!(&*c.ty, syn::Type::Path(p)
            if p.path.is_ident("f64") || p.path.is_ident("f32")),
        Expr::Unary(u) => matches!(u.op, syn::UnOp::Neg(_)) && is_evidently_float(&u.expr),
        Expr::Binary(b) => {
            matches!(
                b.op,
                syn::BinOp::Add(_) | syn::BinOp::Sub(_) | syn::BinOp::Mul(_) | syn::BinOp::Div(_)
            ) && (is_evidently_float(&b.left) || is_evidently_float(&b.right))
        }
        _ => false,
    }
}

/// `e` as the receiver of a method call: in parentheses unless it is a place or a call.
fn as_receiver(e: &Expr) -> Expr {
    match e {
        Expr::Path(_)
        | Expr::MethodCall(_)
        | Expr::Call(_)
        | Expr::Field(_)
        | Expr::Index(_)
        | Expr::Paren(_) => e.clone(),
        e => syn::parse_quote!((#e)),
    }
}

/// Why an operator on struct values that no `#[differentiable]` block can make
/// differentiable is refused (`a ^ b` for a cross product, `a % b`): its body is not
/// visible to the macro, so a float's rule would be wrong (those a block can are written
/// as calls, see [`Lowerer::struct_operators_as_calls`]).
const STRUCT_OPERATOR: &str = "an operator on struct values other than `+`, `-`, `*`, `/`, unary `-`, `+=`, `-=`, `*=` and `/=` (its implementation is not visible to the macro: call a `#[differentiable]` function or method, or compute on the members)";

/// Why an operator with a struct value on its right only is refused (those a block can
/// make differentiable are written as calls).
const STRUCT_ON_THE_RIGHT: &str = "an operator with a struct value on its right, and a float or a value of unknown type on its left, other than `*`, `/`, `+` and `-` (`x *= v`, `x % v`: its implementation is not visible to the macro; `2.0 * v` takes `#[differentiable]` on `impl Mul<V2> for f64`)";
