//! The builtin float methods and the methods that never carry a derivative.

/// Float methods with a builtin derivative rule in `autodiff_core::__private::d`: the name
/// and the number of arguments besides the receiver.
pub fn math_arity(name: &str) -> Option<usize> {
    Some(match name {
        "sin" | "cos" | "tan" | "asin" | "acos" | "atan" | "sinh" | "cosh" | "tanh" | "asinh"
        | "acosh" | "atanh" | "exp" | "exp2" | "exp_m1" | "ln" | "ln_1p" | "log2" | "log10"
        | "sqrt" | "cbrt" | "abs" | "signum" | "recip" | "to_degrees" | "to_radians" | "floor"
        | "ceil" | "round" | "trunc" | "fract" | "sin_cos" => 0,
        "powi" | "powf" | "log" | "atan2" | "hypot" | "max" | "min" => 1,
        "mul_add" | "clamp" => 2,
        _ => return None,
    })
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
