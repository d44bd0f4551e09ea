//! The arguments of `#[autodiff_forward(..)]` and `#[autodiff_reverse(..)]`: the companion's
//! name and one activity per parameter (and for the return value), checked against the
//! signature.

use crate::signature::{Param, Ret, Shape, SigInfo};
use proc_macro2::{Ident, Span, TokenStream};
use syn::parse::{Parse, ParseStream};
use syn::{Token, punctuated::Punctuated};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Forward,
    Reverse,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activity {
    Const,
    Dual,
    DualOnly,
    Active,
    ActiveOnly,
    Duplicated,
    /// `std::autodiff`'s `Duplicated` whose primal need not be kept: an input of the same
    /// signature as `Duplicated`, computed as one (the primal is kept anyway).
    DuplicatedOnly,
}

impl Activity {
    fn parse_name(id: &Ident) -> Option<Activity> {
        Some(match id.to_string().as_str() {
            "Const" => Activity::Const,
            "Dual" => Activity::Dual,
            "DualOnly" => Activity::DualOnly,
            "Active" => Activity::Active,
            "ActiveOnly" => Activity::ActiveOnly,
            "Duplicated" => Activity::Duplicated,
            "DuplicatedOnly" => Activity::DuplicatedOnly,
            _ => return None,
        })
    }

    /// True when the parameter or result gets a derivative.
    pub fn is_active(self) -> bool {
        self != Activity::Const
    }
}

/// One parsed attribute.
#[derive(Clone, Debug)]
pub struct Spec {
    pub mode: Mode,
    pub name: Ident,
    pub inputs: Vec<(Activity, Span)>,
    pub ret: Option<(Activity, Span)>,
    /// Batched forward mode: the number of tangents per `Dual` value (`1` when unbatched).
    pub width: usize,
}

struct RawArgs {
    name: Ident,
    rest: Vec<syn::Expr>,
}

impl Parse for RawArgs {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        if input.is_empty() {
            return Err(input.error(
                "expected the companion's name and the activities, e.g. `#[autodiff_reverse(df, Duplicated, Active)]`",
            ));
        }
        if input.peek(syn::LitInt) {
            return Err(input.error(
                "the companion's name comes first, then the width: `#[autodiff_forward(df, 4, Dual, Dual)]`",
            ));
        }
        let name: Ident = input.parse()?;
        let mut rest = Vec::new();
        if !input.is_empty() {
            input.parse::<Token![,]>()?;
            let list = Punctuated::<syn::Expr, Token![,]>::parse_terminated(input)?;
            rest.extend(list);
        }
        Ok(RawArgs { name, rest })
    }
}

/// Parses the attribute arguments and checks them against the signature.
pub fn parse_spec(mode: Mode, args: TokenStream, sig: &SigInfo) -> syn::Result<Spec> {
    let raw: RawArgs = syn::parse2(args)?;
    if Activity::parse_name(&raw.name).is_some() {
        let name = &raw.name;
        return Err(syn::Error::new(
            name.span(),
            format!(
                "the first argument names the companion, and `{name}` is an activity: write the name first (`{}(d_f, {name}, ..)`)",
                match mode {
                    Mode::Forward => "autodiff_forward",
                    Mode::Reverse => "autodiff_reverse",
                }
            ),
        ));
    }
    let mut acts = Vec::new();
    let mut width = 1;
    for (i, e) in raw.rest.iter().enumerate() {
        match e {
            syn::Expr::Path(p) if p.path.get_ident().is_some() => {
                let id = p.path.get_ident().unwrap();
                match Activity::parse_name(id) {
                    Some(a) => acts.push((a, id.span())),
                    None => {
                        // Activities of `std::autodiff` that have no counterpart here.
                        let instead = match id.to_string().as_str() {
                            "Dualv" | "DualvOnly" => Some(
                                "for several tangents in one call, give a width after the name, `#[autodiff_forward(df, 4, Dual, ..)]`: each `Dual` parameter then takes that many tangents",
                            ),
                            _ => None,
                        };
                        let msg = match instead {
                            Some(instead) => {
                                format!("the activity `{id}` is not supported: {instead}")
                            }
                            None => format!(
                                "unknown activity `{id}`: expected one of {}",
                                allowed_all(mode)
                            ),
                        };
                        return Err(syn::Error::new(id.span(), msg));
                    }
                }
            }
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(w),
                ..
            }) if mode == Mode::Forward => {
                let n = w
                    .base10_parse::<usize>()
                    .ok()
                    .filter(|n| (1..=64).contains(n));
                match n {
                    Some(n) if i == 0 => width = n,
                    Some(_) => {
                        return Err(syn::Error::new_spanned(
                            w,
                            "the width of batched forward mode comes right after the name: `#[autodiff_forward(df, 4, Dual, Dual)]`",
                        ));
                    }
                    None => {
                        return Err(syn::Error::new_spanned(
                            w,
                            "the width of batched forward mode must be between 1 and 64",
                        ));
                    }
                }
            }
            syn::Expr::Lit(l) if matches!(l.lit, syn::Lit::Int(_)) => {
                return Err(syn::Error::new_spanned(
                    l,
                    "a width (batched mode) is only for `#[autodiff_forward]`",
                ));
            }
            other => {
                return Err(syn::Error::new_spanned(
                    other,
                    format!("expected an activity: one of {}", allowed_all(mode)),
                ));
            }
        }
    }
    let n_params = sig.params.len();
    let has_ret = matches!(sig.ret, Ret::Ty(_));
    let expected = n_params + has_ret as usize;
    if acts.len() != expected {
        let what = if has_ret {
            format!("{n_params} for the parameters and 1 for the return value")
        } else {
            format!(
                "{n_params} for the parameters (the function returns `()`, so no return activity)"
            )
        };
        let span = acts.last().map(|a| a.1).unwrap_or(raw.name.span());
        return Err(syn::Error::new(
            span,
            format!(
                "expected {expected} activities ({what}), found {}",
                acts.len()
            ),
        ));
    }
    let ret = if has_ret { acts.pop() } else { None };
    for ((act, span), p) in acts.iter_mut().zip(&sig.params) {
        check_input(mode, *act, *span, p).map_err(|e| with_bound_hint(e, p, sig))?;
        // An input whose primal need not be kept (`std::autodiff`'s `..Only` inputs) has
        // the signature of the plain activity and is computed as one.
        *act = match *act {
            Activity::DuplicatedOnly => Activity::Duplicated,
            Activity::DualOnly => Activity::Dual,
            a => a,
        };
    }
    if let Some((act, span)) = ret {
        check_return(mode, act, span)?;
        if let Ret::Ty(ty) = &sig.ret
            && act != Activity::Const
            && clearly_not_float(ty)
            && !is_vec_of_scalars(ty)
        {
            let ty = quote::quote!(#ty)
                .to_string()
                .replace(" <", "<")
                .replace("< ", "<")
                .replace(" >", ">")
                .replace(" ,", ",");
            return Err(syn::Error::new(
                span,
                format!(
                    "`{act:?}` on a return value of type `{ty}`: only a float, a vector of floats, or a tuple or an array of floats, can be an active return; use `Const`, or write a buffer into a `&mut [f64]` parameter"
                ),
            ));
        }
    }
    Ok(Spec {
        mode,
        name: raw.name,
        inputs: acts,
        ret,
        width,
    })
}

fn allowed_all(mode: Mode) -> &'static str {
    match mode {
        Mode::Forward => {
            "`Dual`, `DualOnly`, `Const` (inputs) and `Dual`, `DualOnly`, `Const` (return)"
        }
        Mode::Reverse => {
            "`Active`, `Duplicated`, `DuplicatedOnly`, `Const` (inputs) and `Active`, `ActiveOnly`, `Const` (return)"
        }
    }
}

/// Whether `t` is written as a float type (`f64`, `f32`) or a type parameter (`T`), not
/// as another type's name.
fn is_float_type_name(t: &syn::Type) -> bool {
    matches!(t, syn::Type::Path(tp) if tp.qself.is_none() && tp.path.get_ident().is_some_and(|id| {
        let n = id.to_string();
        n == "f64" || n == "f32" || n.len() == 1
    }))
}

/// A type as written in Rust (`&[&[f64]]`, `[f64; 3]`), not as tokens are printed.
fn type_text(t: &syn::Type) -> String {
    let text = quote::quote!(#t).to_string();
    let mut out = String::new();
    for (i, c) in text.char_indices() {
        let next = text[i + 1..].chars().next();
        let prev = out.chars().last();
        // Drop the spaces the printer puts after `&`, `[`, `(`, `<` and before `]`, `)`,
        // `;`, `,`, `<`, `>`.
        if c == ' '
            && (matches!(prev, Some('&' | '[' | '(' | '<'))
                || matches!(next, Some(']' | ')' | ';' | ',' | '<' | '>')))
        {
            continue;
        }
        out.push(c);
    }
    out
}

/// Whether `t` names `f64` or `f32` anywhere (`Vec<f64>`, `Box<[f32]>`).
fn mentions_float_type(t: &syn::Type) -> bool {
    quote::quote!(#t)
        .to_string()
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| w == "f64" || w == "f32")
}

/// Why the activity `act` does not fit `p`, which carries no derivative; `plain` is what
/// is said of a type without floats.
fn no_derivative(act: &str, p: &Param, plain: &str) -> String {
    let name = &p.name;
    match &p.ty {
        Some(t @ (syn::Type::Array(_) | syn::Type::Tuple(_))) if mentions_float_type(t) => format!(
            "`{act}` on `{name}`, an array or tuple taken by value, which carries no derivative: take it by reference (`&{}`) to differentiate with respect to it, or mark it `Const`",
            type_text(t)
        ),
        Some(t @ syn::Type::Path(tp))
            if crate::signature::vec_elem(&tp.path).is_some() && mentions_float_type(t) =>
        {
            format!(
                "`{act}` on `{name}`, a vector taken by value, which carries no derivative: take a slice (`&[f64]`, or `&mut [f64]` for an output) to differentiate with respect to it, or mark it `Const`"
            )
        }
        Some(t @ syn::Type::Reference(_)) if mentions_float_type(t) => format!(
            "`{act}` on `{name}`, whose floats lie behind shared references inside it (`{}`), which no shadow can be written through: use `Const`, or take rows the function owns (`&[Vec<f64>]`)",
            type_text(t)
        ),
        _ => {
            let what = if plain == "is not a float" {
                "which"
            } else {
                "whose type"
            };
            format!("`{act}` on `{name}`, {what} {plain}: use `Const`")
        }
    }
}

/// The standard wrapper (`Box`, `Rc`, `RefCell`, `Option`, ..) that a parameter's type
/// holds its floats in, behind any references: its floats cannot be differentiated there.
fn float_wrapper(ty: &syn::Type) -> Option<String> {
    let mut t = ty;
    while let syn::Type::Reference(r) = t {
        t = &r.elem;
    }
    let syn::Type::Path(tp) = t else { return None };
    let last = tp.path.segments.last()?.ident.to_string();
    let floats = mentions_float_type(t);
    let wrapper = matches!(
        last.as_str(),
        "Box" | "Rc" | "Arc" | "RefCell" | "Cell" | "Option" | "Mutex" | "RwLock"
    );
    (floats && wrapper).then_some(last)
}

/// Whether `ty` is an `ndarray` array or view taken by value, or a view behind a
/// reference (`&ArrayView1<f64>`): the arrays differentiated code takes are owned ones
/// behind references.
fn ndarray_not_owned(ty: &syn::Type) -> bool {
    let name = |t: &syn::Type| match t {
        syn::Type::Path(tp) => tp.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    };
    match ty {
        syn::Type::Reference(r) => {
            name(&r.elem).is_some_and(|n| n.starts_with("ArrayView") || n.starts_with("CowArray"))
        }
        t => name(t).is_some_and(|n| crate::builtins::is_ndarray_type_name(&n)),
    }
}

fn check_input(mode: Mode, act: Activity, span: Span, p: &Param) -> syn::Result<()> {
    let name = &p.name;
    let err = |msg: String| Err(syn::Error::new(span, msg));
    if act != Activity::Const
        && let Some(ty) = &p.ty
    {
        if let Some(w) = float_wrapper(ty) {
            return err(format!(
                "`{act:?}` on `{name}`, whose floats are inside a `{w}` (`{}`): differentiated code takes floats by value, float buffers as `&[f64]`/`&mut [f64]` and structs by reference; pass what the `{w}` holds (`&**{name}`, `&{name}.borrow()`), or mark it `Const`",
                type_text(ty)
            ));
        }
        if ndarray_not_owned(ty) {
            return err(format!(
                "`{act:?}` on `{name}`, an `ndarray` array or view taken by value or a view behind a reference (`{}`), which carries no derivative here: take an owned array by reference (`&Array1<f64>`, `&mut Array2<f64>`; `&view.to_owned()` at the call) to differentiate with respect to it, or mark it `Const`",
                type_text(ty)
            ));
        }
    }
    if matches!(p.shape, Shape::Closure(_)) && act != Activity::Const {
        return err(format!(
            "`{name}` is a closure: it takes `Const` here (its derivatives reach custom rules and `#[differentiable]` functions inside it, as a `DiffFn`)"
        ));
    }
    match (mode, act) {
        (_, Activity::Const) => Ok(()),
        (Mode::Forward, Activity::Dual | Activity::DualOnly) => match p.shape {
            Shape::Other | Shape::Closure(_) => {
                err(no_derivative(&format!("{act:?}"), p, "carries no floats"))
            }
            _ => Ok(()),
        },
        (Mode::Reverse, Activity::Active) => match p.shape {
            Shape::Scalar => Ok(()),
            Shape::Slice { .. } if p.copied => {
                let ty = p.ty.as_ref().map(type_text).unwrap_or_default();
                err(format!(
                    "`Active` on `{name}`, an array taken by value: the companions read it through a reference, so it is `Duplicated` (the companion takes `{name}: {ty}` and a shadow of the same type, `&mut`, that receives the gradient) or `Const`"
                ))
            }
            Shape::Slice { .. } | Shape::Struct { .. } => err(format!(
                "`Active` on `{name}`, a reference: references are `Duplicated` (a shadow receives the gradient)"
            )),
            Shape::Other | Shape::Closure(_) => err(no_derivative("Active", p, "is not a float")),
        },
        (Mode::Reverse, Activity::Duplicated | Activity::DuplicatedOnly) => match p.shape {
            Shape::Slice { .. } | Shape::Struct { .. } => Ok(()),
            Shape::Scalar if p.ty.as_ref().is_some_and(is_float_type_name) => err(format!(
                "`{act:?}` on `{name}`, a float passed by value: use `Active` (its adjoint is returned)"
            )),
            // (A type the macro cannot see may be a float's alias or a struct.)
            Shape::Scalar => err(format!(
                "`{act:?}` on `{name}`, taken by value: a float by value is `Active` (its adjoint is returned); a struct is taken by reference (`{name}: &{}`) to be `Duplicated`",
                p.ty.as_ref().map(type_text).unwrap_or_default()
            )),
            Shape::Other | Shape::Closure(_) => {
                err(no_derivative(&format!("{act:?}"), p, "carries no floats"))
            }
        },
        (Mode::Forward, a) => err(format!(
            "`{a:?}` is not a forward-mode input activity: use `Dual` or `Const`"
        )),
        (Mode::Reverse, a) => err(format!(
            "`{a:?}` is not a reverse-mode input activity: use `Active`, `Duplicated` or `Const`"
        )),
    }
}

/// `e`, with a hint where `p`'s type is a type parameter that is not a float for want of
/// a `Real`/`Float` bound.
fn with_bound_hint(e: syn::Error, p: &Param, sig: &SigInfo) -> syn::Error {
    let param = match &p.ty {
        Some(ty) if matches!(p.shape, Shape::Other) => sig.unbounded_type_param(ty),
        _ => None,
    };
    match param {
        Some(t) => syn::Error::new(
            e.span(),
            format!(
                "{e} (`{t}` is a type parameter without a `Real` or `Float` bound: add `{t}: Real` to make it a float type)"
            ),
        ),
        None => match &p.ty {
            Some(ty) if matches!(p.shape, Shape::Other) && is_opaque_name(ty) => {
                let t = quote::ToTokens::to_token_stream(ty);
                syn::Error::new(
                    e.span(),
                    format!(
                        "{e} (`{t}` is not a float type that the macro can see: write `f64` or `f32` rather than an alias of one; a struct is taken by reference, `&{t}`, with `Duplicated` or `Dual`)"
                    ),
                )
            }
            _ => e,
        },
    }
}

/// A type written as one name that is not one of Rust's own (`Real`, `Point`): an alias
/// or a struct, which the macro cannot look into.
fn is_opaque_name(ty: &syn::Type) -> bool {
    const OWN: &[&str] = &["bool", "char", "str", "String"];
    matches!(ty, syn::Type::Path(p) if p.qself.is_none()
        && p.path.get_ident().is_some_and(|i| !OWN.contains(&i.to_string().as_str())))
        && !crate::signature::is_primitive_number(ty)
}

fn check_return(mode: Mode, act: Activity, span: Span) -> syn::Result<()> {
    let ok = match mode {
        Mode::Forward => matches!(act, Activity::Dual | Activity::DualOnly | Activity::Const),
        Mode::Reverse => matches!(
            act,
            Activity::Active | Activity::ActiveOnly | Activity::Const
        ),
    };
    if ok {
        Ok(())
    } else {
        let allowed = match mode {
            Mode::Forward => "`Dual`, `DualOnly` or `Const`",
            Mode::Reverse => "`Active`, `ActiveOnly` or `Const`",
        };
        Err(syn::Error::new(
            span,
            format!(
                "`{act:?}` is not a {} return activity: use {allowed}",
                mode_word(mode)
            ),
        ))
    }
}

/// `Vec<F>` of a type that may be a float (`Vec<f64>`, `Vec<T>`): a returned vector,
/// whose tangent and adjoint are vectors too.
pub(crate) fn is_vec_of_scalars(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(tp)
        if matches!(crate::signature::vec_elem(&tp.path), Some(e @ syn::Type::Path(_))
            if !clearly_not_float(e)))
}

/// Whether `ty` is certainly not a float, a tuple of floats nor an array of floats of a
/// literal length (a type alias or a type parameter may be one).
pub(crate) fn clearly_not_float(ty: &syn::Type) -> bool {
    use syn::Type;
    match ty {
        Type::Path(tp) => tp.path.segments.last().is_some_and(|s| {
            let name = s.ident.to_string();
            crate::signature::is_integer_or_bool_name(&name)
                || matches!(
                    name.as_str(),
                    "String" | "str" | "char" | "Vec" | "Option" | "Result" | "Box" | "HashMap"
                )
        }),
        Type::Tuple(t) => t.elems.iter().any(clearly_not_float),
        Type::Paren(p) => clearly_not_float(&p.elem),
        // An array of a literal length is returned element by element.
        Type::Array(a) => {
            clearly_not_float(&a.elem) || crate::lower::returned_array_len(ty).is_none()
        }
        Type::Slice(_)
        | Type::Reference(_)
        | Type::Ptr(_)
        | Type::ImplTrait(_)
        | Type::TraitObject(_)
        | Type::Never(_)
        | Type::BareFn(_) => true,
        _ => false,
    }
}

fn mode_word(mode: Mode) -> &'static str {
    match mode {
        Mode::Forward => "forward-mode",
        Mode::Reverse => "reverse-mode",
    }
}
