//! The intermediate representation that the transformations work on.
//!
//! A differentiated body is lowered to structured statements in three-address form: every
//! float operation is a `let` of one [`Op`] over [`Operand`]s, every write is an
//! [`Stmt::Assign`] to a [`Place`], and control flow is `if`, counted `for` and `loop`.
//! Everything that cannot carry a derivative (indices, conditions, loop bounds, integer
//! arithmetic) is kept as Rust tokens and evaluated as the user wrote it. Every local has a
//! unique name, so shadowing is gone and a tangent or adjoint can be named after its
//! primal.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

/// An input of an operation: a local variable, or an expression with no derivative.
#[derive(Clone, Debug)]
pub enum Operand {
    Var(Ident),
    Lit(TokenStream),
}

impl Operand {
    pub fn var(&self) -> Option<&Ident> {
        match self {
            Operand::Var(v) => Some(v),
            Operand::Lit(_) => None,
        }
    }
    /// The primal value as an expression.
    pub fn primal(&self) -> TokenStream {
        match self {
            Operand::Var(v) => quote!(#v),
            Operand::Lit(t) => quote!((#t)),
        }
    }
}

/// A step from a value to a part of it.
#[derive(Clone, Debug)]
pub enum Proj {
    Field(syn::Member),
    /// An index or a range, as tokens that carry no derivative.
    Index(TokenStream),
    /// `*r` of a reference to a scalar (`r: &mut f64`): the referenced value.
    Deref,
}

/// A memory location: a local or parameter, then fields and indices.
#[derive(Clone, Debug)]
pub struct Place {
    pub base: Ident,
    pub proj: Vec<Proj>,
}

impl Place {
    pub fn local(base: Ident) -> Self {
        Place {
            base,
            proj: Vec::new(),
        }
    }

    /// This place with its base replaced by `base` (the tangent or adjoint of the base).
    pub fn render_on(&self, base: TokenStream) -> TokenStream {
        let mut out = base;
        for p in &self.proj {
            out = match p {
                Proj::Field(m) => quote!(#out.#m),
                Proj::Index(i) => quote!(#out[#i]),
                Proj::Deref => quote!((*#out)),
            };
        }
        out
    }

    pub fn primal(&self) -> TokenStream {
        let b = &self.base;
        self.render_on(quote!(#b))
    }

    pub fn tangent(&self) -> TokenStream {
        let b = tangent_name(&self.base);
        self.render_on(quote!(#b))
    }

    pub fn adjoint(&self) -> TokenStream {
        let b = adjoint_name(&self.base);
        self.render_on(quote!(#b))
    }

    pub fn is_whole(&self) -> bool {
        self.proj.is_empty()
    }
}

/// The element `base[index]` reached without a bounds check, for reading or (`write`)
/// writing: `(*__ad::replayed_at(&base[..], index))` or `replayed_at_mut`. `None` for a
/// write whose index reads `base` (`y[y.len() - 1] = ..`): `&mut base[..]` would be
/// borrowed before the index is evaluated, so such a write keeps the plain form.
pub fn replayed_element(base: &Ident, index: &TokenStream, write: bool) -> Option<TokenStream> {
    if !write {
        return Some(quote!((*__ad::replayed_at(&#base[..], #index))));
    }
    let names_base = crate::member_writes::mentions(index.clone(), &base.to_string());
    (!names_base).then(|| quote!((*__ad::replayed_at_mut(&mut #base[..], #index))))
}

pub fn tangent_name(v: &Ident) -> Ident {
    format_ident!(
        "__d_{}",
        v.to_string().trim_start_matches("r#"),
        span = v.span()
    )
}

pub fn adjoint_name(v: &Ident) -> Ident {
    format_ident!(
        "__b_{}",
        v.to_string().trim_start_matches("r#"),
        span = v.span()
    )
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    /// `%`: of floats, `a - trunc(a / b) · b`; of integers (counts), no derivative.
    Rem,
}

/// How an assignment combines with the old value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AssignKind {
    Set,
    Add,
    Sub,
    Mul,
    Div,
}

/// An argument of a call.
#[derive(Clone, Debug)]
pub enum Arg {
    Val(Operand),
    /// `&place` or `&mut place`.
    Ref(Place, bool),
    /// A float array passed by value (`rhs(s, k)`, `rhs(pts[i], k)`, `rhs(*p, k)`): the
    /// primal call copies it, and the calls of the callee's companions lend it shared,
    /// as `Ref(place, false)`, since they take such arrays by reference (see
    /// `crate::by_value_arrays`).
    Copied(Place),
    /// A closure written at the call (or bound to a local): the callee receives it as a
    /// `DiffFn` built from its differentiated body.
    Closure(Box<ClosureIr>),
    /// A closure parameter of the function being differentiated, passed on (already a
    /// `DiffFn`).
    ClosureParam(Ident),
}

/// A closure passed to a differentiated call, lowered like a function body.
#[derive(Clone, Debug)]
pub struct ClosureIr {
    /// The local that holds the `DiffFn` built for it.
    pub id: Ident,
    pub params: Vec<Ident>,
    /// The types the user wrote for the parameters (`|t: f64|`), which let rustc infer
    /// the callee's type parameters from the closures built for it.
    pub param_types: Vec<Option<syn::Type>>,
    pub body: Body,
    /// The caller's locals it reads.
    pub captures: Vec<Ident>,
    pub kinds: crate::collections::HashMap<String, VarKind>,
    /// Its position among the call's arguments (the callee builds its `DiffFn`).
    pub arg_index: usize,
    /// Where the user wrote it, for errors about what it captures.
    pub span: proc_macro2::Span,
}

#[derive(Clone, Debug)]
pub enum Callee {
    /// A free function or associated function through its path; the derivative
    /// companions are found on the same-named type (`foo::__ad_fwd`).
    Path(syn::Path),
    /// `Type::name(..)` or `Self::name(..)`: companions are `Type::__ad_fwd_name`.
    Assoc(syn::Path, Ident),
    /// `recv.name(..)`: companions are methods `__ad_fwd_name` found by method resolution.
    Method(Place, Ident),
    /// A call of a closure parameter `f(..)`, which is a `DiffFn<X, Y>`: `Y` is given.
    ClosureParam(Ident, syn::Type),
}

#[derive(Clone, Debug)]
pub struct Call {
    pub callee: Callee,
    pub args: Vec<Arg>,
    /// A statement of its own (`tick(3);`), or a call that passes on a constant reference
    /// parameter (`weight(ks)` of `ks: &[usize]`), outside the standard library: it goes
    /// through the callee's protocol even when every argument is constant, so that a
    /// custom rule on the callee fires.
    pub effect_only: bool,
}

/// What an [`Op::CloneOf`] gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyKind {
    /// A `Vec` of the elements, whatever the place is (`x.to_vec()`, a copy of a slice).
    ToVec,
    /// A value of the place's own type (`let p = s;` of a local array, a row copied
    /// whole): an array stays an array on the stack, where `to_vec` would allocate.
    SameType,
    /// A clone of a whole struct, behind a reference or not: `let mut c = v.scale(2.0);`
    /// of a call's struct, and `__ad::snapshot(&*self)` in a companion differentiated
    /// again. `behind_ref` marks the latter, a struct behind `&mut` (`*self`): a clone
    /// where the struct is `Clone`, and a panic naming the fix otherwise
    /// (`autodiff_core`'s `saved_structs`), so that the variants every function carries
    /// for callers that nest do not ask each struct behind `&mut` for `Clone` whether or
    /// not they run.
    Struct { behind_ref: bool },
}

/// How a [`Stmt::CopyFrom`] copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyMode {
    /// Element by element, between places of one length.
    Elements,
    /// `dst = src;` between whole local buffers: `dst` takes `src`'s length first.
    Resized,
    /// A whole struct put back from its saved clone (`__ad::restore(&mut *self, saved)`
    /// in a companion differentiated again; `behind_ref` as in [`CopyKind::Struct`]).
    Struct { behind_ref: bool },
    /// `std::mem::swap(&mut dst, &mut src)` of two whole local buffers: their contents
    /// (and lengths) trade places, and the reverse trades them back, with their adjoints.
    Swap,
}

/// The right-hand side of a `let`.
#[derive(Clone, Debug)]
pub enum Op {
    Use(Operand),
    Neg(Operand),
    Bin(BinOp, Operand, Operand),
    /// A builtin float method; the receiver is the first operand.
    Math(String, Vec<Operand>),
    /// `x as f32` / `x as f64` of a float.
    Cast(Operand, syn::Type),
    Load(Place),
    Call(Call),
    /// An expression with no derivative, evaluated as written.
    Inactive(TokenStream),
    /// `vec![v; n]`
    VecRepeat(Operand, TokenStream),
    /// `[v; N]`
    ArrRepeat(Operand, TokenStream),
    /// `[a, b, c]` or `vec![a, b, c]`
    ArrLit(Vec<Operand>, bool),
    /// An empty vector (`Vec::new()`, `Vec::with_capacity(n)`): the tokens build it.
    NewVec(TokenStream),
    /// An owned copy of a place (`x.to_vec()`, `x.clone()`, `let p = s;`).
    CloneOf(Place, CopyKind),
    /// A struct built from scalars: `Point { x: a, y: b }`, or `Pair(a, b)` with unnamed
    /// members. Its shadow is the same struct built from the fields' shadows.
    StructLit(syn::Path, Vec<(syn::Member, Operand)>),
    /// `__ad::take(place.pop())`: the last value of a tape of a derivative companion, read
    /// when the companion is itself differentiated.
    Pop(Place),
}

#[derive(Clone, Debug)]
pub enum Stmt {
    Let {
        var: Ident,
        mutable: bool,
        op: Op,
    },
    /// `let (a, b) = op;` for operations with several results (`sin_cos`, calls).
    LetTuple {
        vars: Vec<Ident>,
        op: Op,
    },
    Assign {
        place: Place,
        kind: AssignKind,
        val: Operand,
    },
    /// `place.push(val)`; `copy`: a copy of the buffer `val` (a vector pushed as a row,
    /// which the function may read afterwards), not `val` moved.
    Push {
        place: Place,
        val: Operand,
        copy: bool,
    },
    /// `place.fill(val)`
    Fill {
        place: Place,
        val: Operand,
    },
    /// `dst.copy_from_slice(&src)`
    CopyFrom {
        dst: Place,
        src: Place,
        mode: CopyMode,
    },
    /// A call whose result is discarded.
    Call(Call),
    /// `let (outs..) = if cond { then; then_vals } else { els; else_vals };`
    If {
        cond: TokenStream,
        then: Block,
        els: Block,
        outs: Vec<Ident>,
        then_vals: Vec<Operand>,
        else_vals: Vec<Operand>,
    },
    /// `for pat in iter { body }`, leaving after an iteration where `exit` holds.
    For {
        pat: Ident,
        iter: TokenStream,
        body: Block,
        exit: Option<TokenStream>,
    },
    /// `loop { body }`, leaving after an iteration where `exit` holds.
    Loop {
        body: Block,
        exit: TokenStream,
    },
    /// A statement with no derivative (`assert!`, `println!`), evaluated as written.
    Inactive(TokenStream),
}

pub type Block = Vec<Stmt>;

/// Whether `b` calls a function anywhere, inside its branches and loops too. Any callee
/// may be a custom rule, or reach one: a rule with side effects fires in the reverse sweep
/// even when no argument carries an adjoint.
pub fn calls_functions(b: &Block) -> bool {
    b.iter().any(|s| match s {
        Stmt::Call(_)
        | Stmt::Let {
            op: Op::Call(_), ..
        }
        | Stmt::LetTuple {
            op: Op::Call(_), ..
        } => true,
        Stmt::If { then, els, .. } => calls_functions(then) || calls_functions(els),
        Stmt::For { body, .. } | Stmt::Loop { body, .. } => calls_functions(body),
        _ => false,
    })
}

/// What a local binding holds, as far as the shape of its shadow is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VarKind {
    /// A scalar (float, integer or bool) held by value.
    Scalar,
    /// A reference parameter (`&[f64]`, `&mut Model`, `&self`): its shadow is a reference.
    Ref { mutable: bool },
    /// An owned buffer (`Vec`, array), or a struct built in the body and bound with
    /// `let mut`: its shadow is an owned value of the same shape.
    Buffer,
    /// A struct built in the body and bound immutably (`let p = Point { x, y };`): its
    /// shadow is an owned struct of the same shape, and no call can change it.
    Value,
    /// A closure parameter (a `DiffFn` in derivative code) of this many arguments.
    Closure(usize),
}

/// How a function's value is built from its returned scalars (`Body::ret`, in order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RetShape {
    /// The one value itself (or nothing, for `()`).
    Single,
    /// A tuple, each element a scalar (`None`) or an array of that many (`Some(n)`).
    Tuple(Vec<Option<usize>>),
    /// An array of that many scalars (`-> [f64; 3]`).
    Array(usize),
    /// A vector of floats (`-> Vec<f64>`): one local buffer, returned whole, whose
    /// tangent and adjoint are vectors too.
    Buffer,
    /// A struct (`-> Self`, `-> V2`): one local, returned whole, whose tangent and
    /// adjoint are structs of the same type.
    Value,
}

impl RetShape {
    /// A tuple of `n` scalars, or the one value when `n` is 1.
    pub fn scalars(n: usize) -> Self {
        if n > 1 {
            RetShape::Tuple(vec![None; n])
        } else {
            RetShape::Single
        }
    }

    pub fn is_tuple(&self) -> bool {
        matches!(self, RetShape::Tuple(_))
    }

    /// Whether the value is, or holds, an array.
    pub fn has_arrays(&self) -> bool {
        match self {
            RetShape::Array(_) => true,
            RetShape::Tuple(elems) => elems.iter().any(Option::is_some),
            RetShape::Single | RetShape::Buffer | RetShape::Value => false,
        }
    }

    /// The value built from `items`, one per returned scalar.
    pub fn assemble(&self, items: &[TokenStream]) -> TokenStream {
        match self {
            RetShape::Single | RetShape::Buffer | RetShape::Value => {
                items.first().cloned().unwrap_or(quote!(()))
            }
            RetShape::Array(_) => quote!([#(#items),*]),
            RetShape::Tuple(elems) => {
                let mut rest = items.iter();
                let parts = elems.iter().map(|e| match e {
                    None => rest.next().cloned().unwrap_or_default(),
                    Some(n) => {
                        let xs = rest.by_ref().take(*n);
                        quote!([#(#xs),*])
                    }
                });
                quote!((#(#parts,)*))
            }
        }
    }

    /// The expressions that read each scalar of a value `v` of this shape, in order.
    pub fn parts(&self, v: &TokenStream) -> Vec<TokenStream> {
        let index = |i: usize| proc_macro2::Literal::usize_unsuffixed(i);
        match self {
            RetShape::Single | RetShape::Buffer | RetShape::Value => vec![v.clone()],
            RetShape::Array(n) => (0..*n)
                .map(|i| {
                    let i = index(i);
                    quote!(#v[#i])
                })
                .collect(),
            RetShape::Tuple(elems) => elems
                .iter()
                .enumerate()
                .flat_map(|(k, e)| {
                    let k = syn::Index::from(k);
                    match e {
                        None => vec![quote!(#v.#k)],
                        Some(n) => (0..*n)
                            .map(|i| {
                                let i = index(i);
                                quote!(#v.#k[#i])
                            })
                            .collect(),
                    }
                })
                .collect(),
        }
    }
}

/// A lowered function body.
#[derive(Clone, Debug)]
pub struct Body {
    pub block: Block,
    /// The returned value (`Lit(())` for unit).
    pub ret: Vec<Operand>,
    /// How the returned value is built from `ret`.
    pub ret_shape: RetShape,
    /// Struct parameters whose values a pattern binds (`match kind { Kind::Scale(s) =>
    /// .. }` with `kind: &Kind`), with the pattern's span: the bound values carry no
    /// derivative, so a companion where such a parameter is active is refused.
    pub pattern_params: Vec<(String, proc_macro2::Span)>,
    /// Locals holding a struct with a buffer member that the function binds without
    /// `mut` (`let c = Gain { k: [a, b] };`): lowered as `let mut`, so that its members
    /// are written where it is built, but no call changes it after that.
    pub fixed_structs: Vec<String>,
    /// Lowered from a reverse companion's code (`Lowerer::keeping_shadow_cuts`): its
    /// forward transform may replay the indices marked replayed (`forward::Replays`).
    /// Elsewhere a marked index is indexing as written.
    pub replays_marked: bool,
}

/// The value a [`Stmt::Push`] pushes: `v` itself, or a copy of it where it pushes one.
pub fn pushed_value(v: TokenStream, copy: bool) -> TokenStream {
    if copy {
        quote!(::core::clone::Clone::clone(&#v))
    } else {
        v
    }
}
