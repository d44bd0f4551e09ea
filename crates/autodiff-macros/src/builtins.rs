//! The builtin float methods and the methods that never carry a derivative.

/// Float methods with a builtin derivative rule in `autodiff_core::__private::d`: the name
/// and the number of arguments besides the receiver.
pub fn math_arity(name: &str) -> Option<usize> {
    Some(match name {
        "sin" | "cos" | "tan" | "asin" | "acos" | "atan" | "sinh" | "cosh" | "tanh" | "asinh"
        | "acosh" | "atanh" | "exp" | "exp2" | "exp_m1" | "ln" | "ln_1p" | "log2" | "log10"
        | "sqrt" | "cbrt" | "abs" | "signum" | "recip" | "to_degrees" | "to_radians" | "floor"
        | "ceil" | "round" | "trunc" | "fract" | "sin_cos" => 0,
        "powi" | "powf" | "log" | "atan2" | "hypot" | "max" | "min" | "copysign" => 1,
        "mul_add" | "clamp" => 2,
        _ => return None,
    })
}

/// Builtin float methods that cost about as much as a multiplication or a division, so
/// that a reverse sweep computes them again rather than recording their value. The others
/// (`exp`, `ln`, `tanh`, `sin`, `powf`, ...) call into libm, which takes longer than a
/// push and a pop of a recorded value.
pub fn is_cheap_math(name: &str) -> bool {
    matches!(
        name,
        "sqrt"
            | "abs"
            | "signum"
            | "recip"
            | "to_degrees"
            | "to_radians"
            | "floor"
            | "ceil"
            | "round"
            | "trunc"
            | "fract"
            | "powi"
            | "max"
            | "min"
            | "copysign"
            | "mul_add"
            | "clamp"
    )
}

/// Builtin float methods whose partials can be infinite where the method's value is finite
/// (`sqrt` at 0, `ln` at 0, `asin` at 1): their reverse propagates only a nonzero adjoint
/// (see `autodiff_core::__private::nonzero`).
pub fn has_singular_partials(name: &str) -> bool {
    matches!(
        name,
        "sqrt"
            | "cbrt"
            | "ln"
            | "log2"
            | "log10"
            | "ln_1p"
            | "log"
            | "recip"
            | "asin"
            | "acos"
            | "atanh"
            | "acosh"
            | "powf"
            | "powi"
            | "atan2"
    )
}

/// Arguments of a builtin method that carry no derivative (the integer power of `powi`).
pub fn math_arg_is_inert(name: &str, arg_index: usize) -> bool {
    name == "powi" && arg_index == 1
}

/// Methods whose result never carries a derivative, whatever their receiver.
pub fn is_inert_method(name: &str) -> bool {
    matches!(
        name,
        "len"
            | "is_empty"
            | "is_nan"
            | "is_finite"
            | "is_infinite"
            | "is_normal"
            | "is_sign_positive"
            | "is_sign_negative"
            | "partial_cmp"
            | "total_cmp"
            | "eq"
            | "ne"
            | "lt"
            | "le"
            | "gt"
            | "ge"
            | "to_bits"
            | "count"
            | "capacity"
            | "contains"
            | "position"
            | "any"
            | "all"
    )
}

/// Methods of an `ndarray` array that give its shape (integers, no derivative).
pub fn is_ndarray_shape_method(name: &str) -> bool {
    matches!(
        name,
        "dim" | "nrows" | "ncols" | "shape" | "ndim" | "raw_dim" | "len_of" | "is_square"
    )
}

/// `Array`, `Array1`..`Array6`, `ArrayD`, `ArcArray`, `CowArray`, `ArrayBase`, and the
/// views `ArrayView*`, `ArrayViewMut*`: the `ndarray` array types.
pub fn is_ndarray_type_name(name: &str) -> bool {
    let rest = ["ArrayViewMut", "ArrayView", "ArcArray", "CowArray", "Array"]
        .iter()
        .find_map(|p| name.strip_prefix(p));
    match rest {
        Some("" | "D" | "Base") => true,
        Some(n) => n.len() == 1 && n.as_bytes()[0].is_ascii_digit(),
        None => false,
    }
}

/// A path type naming an `ndarray` array (`Array2<f64>`, `ndarray::ArrayView1<'a, F>`).
pub fn is_ndarray_type(ty: &syn::Type) -> bool {
    match ty {
        syn::Type::Path(p) => p
            .path
            .segments
            .last()
            .is_some_and(|s| is_ndarray_type_name(&s.ident.to_string())),
        syn::Type::Paren(p) => is_ndarray_type(&p.elem),
        syn::Type::Group(g) => is_ndarray_type(&g.elem),
        _ => false,
    }
}

/// The element type of an `ndarray` type: its first type argument (`F` of `Array1<F>`,
/// `Array<F, Ix2>`, `ArrayView1<'a, F>`).
pub fn ndarray_elem(ty: &syn::Type) -> Option<syn::Type> {
    let syn::Type::Path(p) = ty else {
        return None;
    };
    let syn::PathArguments::AngleBracketed(a) = &p.path.segments.last()?.arguments else {
        return None;
    };
    a.args.iter().find_map(|g| match g {
        syn::GenericArgument::Type(t) => Some(t.clone()),
        _ => None,
    })
}

/// The number of dimensions an `ndarray` type names, where it names one: the digit of
/// `Array2<F>` or `ArrayView1<'_, F>`, or the `IxN` of `Array<F, Ix2>`.
pub fn ndarray_rank(ty: &syn::Type) -> Option<usize> {
    let syn::Type::Path(p) = ty else {
        return None;
    };
    let last = p.path.segments.last()?;
    let digit = |s: &str| {
        s.chars()
            .last()
            .and_then(|c| c.to_digit(10))
            .map(|d| d as usize)
    };
    if let Some(d) = digit(&last.ident.to_string()) {
        return Some(d);
    }
    let syn::PathArguments::AngleBracketed(a) = &last.arguments else {
        return None;
    };
    a.args.iter().find_map(|g| match g {
        syn::GenericArgument::Type(syn::Type::Path(t)) => {
            let id = t.path.get_ident()?.to_string();
            id.strip_prefix("Ix").and_then(|n| n.parse().ok())
        }
        _ => None,
    })
}

/// Statement macros that have no effect on values and are kept as written.
pub fn is_inert_macro(name: &str) -> bool {
    matches!(
        name,
        "assert"
            | "assert_eq"
            | "assert_ne"
            | "debug_assert"
            | "debug_assert_eq"
            | "debug_assert_ne"
            | "println"
            | "eprintln"
            | "print"
            | "eprint"
            | "panic"
            | "unreachable"
            | "matches"
            | "format"
    )
}

/// The partial derivatives of `autodiff_core::__private::d::NAME`, written as expressions
/// of its arguments `$0, $1, ..` (the method's inputs, then its output): what a derivative
/// companion computes, so that the companion can be differentiated again. Partials of
/// several inputs are tuples. `None` for partials that have no template yet.
pub fn partial_template(name: &str) -> Option<&'static str> {
    Some(match name {
        "sin" => "$0.cos()",
        "cos" => "-$0.sin()",
        "tan" => "1.0 + $1 * $1",
        "asin" => "(1.0 - $0 * $0).sqrt().recip()",
        "acos" => "-(1.0 - $0 * $0).sqrt().recip()",
        "atan" => "(1.0 + $0 * $0).recip()",
        "sinh" => "$0.cosh()",
        "cosh" => "$0.sinh()",
        "tanh" => "1.0 - $1 * $1",
        "asinh" => "($0 * $0 + 1.0).sqrt().recip()",
        "acosh" => "($0 * $0 - 1.0).sqrt().recip()",
        "atanh" => "(1.0 - $0 * $0).recip()",
        "exp" => "$1",
        "exp2" => "$1 * 0.6931471805599453",
        "exp_m1" => "$1 + 1.0",
        "ln" => "$0.recip()",
        "ln_1p" => "(1.0 + $0).recip()",
        "log2" => "($0 * 0.6931471805599453).recip()",
        "log10" => "($0 * 2.302585092994046).recip()",
        "sqrt" => "0.5 / $1",
        "cbrt" => "(3.0 * $1 * $1).recip()",
        "abs" => "if $0 > 0.0 { 1.0 } else if $0 < 0.0 { -1.0 } else { 0.0 }",
        "signum" | "floor" | "ceil" | "round" | "trunc" => "0.0 * $0",
        "recip" => "-($1 * $1)",
        "to_degrees" => "57.29577951308232 + 0.0 * $0",
        "to_radians" => "0.017453292519943295 + 0.0 * $0",
        "fract" => "1.0 + 0.0 * $0",
        "powi" => "if $1 == 0 { 0.0 * $0 } else { $0.powi($1 - 1) * __ad::int_like($1, &$0) }",
        "powf" => {
            "(if $1 == 0.0 && $0 == 0.0 { 0.0 * $0 } else { $1 * $0.powf($1 - 1.0) }, \
              if $0 > 0.0 { $2 * $0.ln() } else { 0.0 * $0 })"
        }
        "log" => "(($0 * $1.ln()).recip(), -$0.ln() / ($1 * $1.ln() * $1.ln()))",
        "atan2" => "($1 / ($1 * $1 + $0 * $0), -$0 / ($1 * $1 + $0 * $0))",
        "hypot" => {
            "(if $2 == 0.0 { 0.0 * $0 } else { $0 / $2 }, \
              if $2 == 0.0 { 0.0 * $0 } else { $1 / $2 })"
        }
        "max" => {
            "(if $0 >= $1 || $1.is_nan() { 1.0 } else { 0.0 }, \
              if $0 >= $1 || $1.is_nan() { 0.0 } else { 1.0 })"
        }
        "min" => {
            "(if $0 <= $1 || $1.is_nan() { 1.0 } else { 0.0 }, \
              if $0 <= $1 || $1.is_nan() { 0.0 } else { 1.0 })"
        }
        "copysign" => {
            "(if $0 > 0.0 { $1.signum() } else if $0 < 0.0 { -$1.signum() } else { 0.0 * $1.signum() }, \
              0.0 * $1.signum())"
        }
        "mul_add" => "($1, $0, 1.0 + 0.0 * $0)",
        "clamp" => {
            "(if $0 < $1 || $0 > $2 { 0.0 } else { 1.0 }, \
              if $0 < $1 { 1.0 } else { 0.0 }, \
              if $0 > $2 && $0 >= $1 { 1.0 } else { 0.0 })"
        }
        _ => return None,
    })
}
