//! Lowering: Rust syntax to the IR of [`crate::ir`].
//!
//! This pass gives every local a unique name, splits float expressions into one operation
//! per `let`, turns iterator chains and `for` loops over slices into counted loops over
//! indices, inlines local closures at their calls, and replaces `break`, `continue` and
//! early `return` by flags, so that every block runs to its end and the reverse sweep can
//! retrace it. Anything that cannot carry a derivative (indices, conditions, integer
//! arithmetic) stays Rust tokens, with its locals renamed.

use crate::builtins::{
    is_inert_macro, is_inert_method, math_arg_is_inert, math_arity, partial_template,
};
use crate::collections::{HashMap, HashSet};
use crate::ir::*;
use crate::signature::{Param, Ret, Shape, SigInfo, is_float_type};
use proc_macro2::{Ident, Span, TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use std::rc::Rc;
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{Expr, Pat};

mod array_conversions;
mod array_exprs;
mod array_maps;
mod array_reductions;
mod array_views;
mod chains;
mod flattened;
mod iterator_items;
mod iterator_variables;
mod option_locals;
mod option_maps;
mod prefix_adapters;
mod scans;
mod slice_cursors;
mod slice_patterns;
mod struct_operators;
mod struct_vectors;
mod vector_edits;
mod while_lets;
use slice_cursors::SliceCursor;

type Result<T> = syn::Result<T>;

/// An error over the whole construct.
fn unsupported<T>(node: impl ToTokens, what: &str) -> Result<T> {
    if std::env::var("AUTODIFF_DEBUG_UNSUPPORTED").is_ok() {
        eprintln!("unsupported: {what}: {}", node.to_token_stream());
    }
    Err(syn::Error::new_spanned(
        node,
        format!("{what} is not supported in differentiated code"),
    ))
}

fn unsupported_at<T>(span: Span, what: &str) -> Result<T> {
    Err(syn::Error::new(
        span,
        format!("{what} is not supported in differentiated code"),
    ))
}

/// A lowered value.
#[derive(Clone, Debug)]
enum Val {
    Op(Operand),
    /// A place not yet read: `x[i]`, `p.w`, a reference parameter, an element alias.
    Place(Place, bool),
    Tuple(Vec<Val>),
}

#[derive(Clone, Debug)]
struct ClosureDef {
    params: Vec<Pat>,
    body: Expr,
    scopes: Vec<HashMap<String, Binding>>,
}

/// A `for` loop written again (see [`Lowerer::by_value_loop`]).
enum LoopRewrite {
    /// Another loop in its place.
    Loop(syn::ExprForLoop),
    /// A block: a copy, then a loop over it.
    Block(syn::Block),
}

#[derive(Clone, Debug)]
enum Binding {
    Var(Ident),
    /// A reference to a place (`let r = &x[a..b];`, an element of `x.iter()`).
    Alias(Place, bool),
    /// A member of a struct that nothing in the body changes (`let n = cfg.n;`, see
    /// [`Lowerer::is_unchanging_member`]): the member itself, read where the name is used.
    Member(Place),
    /// A slice reference that assignments move through one buffer (see
    /// [`slice_cursors`]).
    Cursor(Rc<SliceCursor>),
    Closure(Rc<ClosureDef>),
    Tuple(Vec<Val>),
    /// An iterator bound before it is consumed (`let it = x.iter().map(..);`): the chain
    /// as written, read where it is consumed, with what its names meant where it was
    /// bound (see [`Lowerer::names_meaning`]).
    Iter(Rc<Expr>, Rc<Vec<String>>),
}

struct LoopCtl {
    brk: Ident,
    cont: Ident,
    /// The loop's label (`'outer`), without the quote.
    label: Option<String>,
    /// The locals a `break` with a value assigns (empty when no `break` carries one).
    vals: Vec<Ident>,
    /// A labelled block rather than a loop: only a labelled `break` leaves it.
    block: bool,
}

/// Where a block's tail value goes.
#[derive(Clone)]
enum Tail {
    /// It is the block's value.
    Value,
    /// It is the function's return value (the body of a function that also returns early).
    Return,
    /// It is assigned to these locals (a labelled block's value).
    Into(Vec<Ident>),
    /// The block's value is `()` and unused (a loop's body, a block or a branch that is a
    /// statement, the body of a function returning `()`): its last expression is a
    /// statement, so that a call there (`if k == 0 { tick(1) }`) is made for its effect
    /// alone and a custom rule on it fires.
    Unit,
}

struct RetCtl {
    flag: Ident,
    vals: Vec<Ident>,
}

/// What the statements after a `let .. else` bind: the pattern's variables, read from
/// the scrutinee's local, or the element a `let Some(v) = x.get(i)` reads by index.
enum LetElse {
    Pattern(Ident, Pat),
    Element(Vec<syn::Stmt>),
}

pub struct Lowerer {
    scopes: Vec<HashMap<String, Binding>>,
    out: Vec<Block>,
    counter: usize,
    floats: HashSet<String>,
    /// Kind of every local, by unique name.
    pub kinds: HashMap<String, VarKind>,
    loops: Vec<LoopCtl>,
    ret: Option<RetCtl>,
    /// The function's return type where it is a float type: the type of its last
    /// expression (`c.iter().fold(0.0, |a, &v| a.max(v))` as the body of a `-> f64`).
    ret_float: Option<syn::Type>,
    /// How the function's value is built from its returned scalars (arrays, `-> [f64; 3]`,
    /// are returned element by element).
    ret_shape: RetShape,
    /// Prefix of generated names (closures lowered inside a body get their own).
    prefix: String,
    /// The result type of each closure parameter, by name.
    closure_outputs: HashMap<String, syn::Type>,
    /// Set while binding a reference (an iterator element, a closure argument, `&place`):
    /// the name then aliases the place instead of copying its value.
    binding_ref: bool,
    /// Places already read in the current straight-line run, and the locals holding them:
    /// a second read reuses the first (and the reverse sweep accumulates once).
    loads: HashMap<String, Ident>,
    /// The last temporary created, while no other expression holds it: a user binding of
    /// it may rename it instead of copying it.
    renamable: Option<Ident>,
    /// Set when the body is a generated companion's, differentiated again: its runtime
    /// idioms (`__ad::..` calls, tapes, index iterators) are read back. Never for user code,
    /// where a path such as `::core::clone::Clone::clone` must keep its derivative.
    companion: bool,
    /// Set for a reverse companion's code (see [`Lowerer::keeping_shadow_cuts`]).
    keeps_shadow_cuts: bool,
    /// Parameters that are references to a scalar (`&mut f64`), which `*r` dereferences.
    scalar_refs: HashSet<String>,
    /// Parameters that are references to any other non-float type (`&mut Model`).
    struct_refs: HashSet<String>,
    /// Parameters that are references to what carries no derivative (`ks: &[usize]`,
    /// `name: &str`): a call that passes one on (`weight(ks)`) lends it, as `&ks` would.
    constant_refs: HashSet<String>,
    /// Those of them whose type names a struct (`&mut Model`, `&mut self`), not a slice
    /// or an array.
    named_struct_refs: HashSet<String>,
    /// Parameters that are references to `ndarray` arrays (`&Array2<f64>`), and, under
    /// their lowered names, the arrays the function makes (`Lowerer::local_array`): their
    /// shape methods (`a.dim()`, `a.nrows()`) carry no derivative.
    array_params: HashSet<String>,
    /// Parameters that are references to buffers of rows or of structs (`&[Vec<f64>]`,
    /// `&Vec<Vec<f64>>`, `&[[f64; 3]]`, `&[Particle]`): shaped as structs (a shadow of
    /// the same type), but iterated as buffers (`m.iter().map(|r| r[0]).sum()`,
    /// `ps.iter().map(|p| p.mass).sum()`), with no methods of their own.
    buffer_params: HashSet<String>,
    /// Those of them whose elements are rows of floats (`&[[f64; 2]]`).
    row_params: HashSet<String>,
    /// Those of them whose elements are structs (`ps: &[Particle]`): `let p = ps[i];`
    /// and `for &p in ps` copy an element (see `Lowerer::is_struct_element`).
    struct_elem_params: HashSet<String>,
    /// The parameters of type `&[F; N]` or `&mut [F; N]`, `F` a float and `N` written as
    /// a number (at most [`WRITTEN_OUT_ARRAY`]), with their lengths.
    array_param_lens: HashMap<String, usize>,
    /// Parameters that are `&mut` references to float arrays (`r: &mut [f64; 2]`), which
    /// `*r = [a, b];` assigns whole.
    mut_array_params: HashSet<String>,
    /// The `ndarray` arrays of `array_params` whose type (or constructor) names their
    /// number of dimensions, with that number.
    ranked_arrays: HashMap<String, usize>,
    /// The element type of each `ndarray` array of `array_params` (`F` of `&Array1<F>`)
    /// where its type names one, which types its reductions.
    array_elems: HashMap<String, syn::Type>,
    /// Locals bound to a matrix-vector product (`let z = w.dot(x);`): a `Vec` in
    /// derivative code, an `ndarray` vector in the user's, so an operand of whole-array
    /// expressions and maps (`&z + &b`, `z.mapv(f)`).
    product_vectors: HashSet<String>,
    /// Struct parameters whose values a pattern binds (see [`Body::pattern_params`]).
    pattern_params: Vec<(String, Span)>,
    /// Scrutinee locals of patterns on a struct parameter, with the user's scrutinee
    /// (`kind`, `cfg.mode`): the pattern's bindings are read from it again, so that they
    /// are references or copies exactly as in the user's code.
    struct_scrutinees: HashMap<String, TokenStream>,
    /// Locals holding a struct built in the body (`Op::StructLit`).
    struct_values: HashSet<String>,
    /// Locals bound to what a call returned, with a struct's type written in the `let`.
    struct_results: HashSet<String>,
    /// Locals holding a struct with a buffer member built where it is bound (see
    /// [`Self::lower_struct_with_buffers`]): values as a constant call's struct is.
    structs_with_buffers: HashSet<String>,
    /// Names whose named members the body reads or writes (`c.x`): structs, where a
    /// call's result is bound to one.
    field_owners: HashSet<String>,
    /// Names the body indexes (`h[i]`): vectors or arrays, where a call's result is bound
    /// to one with `let mut`.
    indexed_owners: HashSet<String>,
    /// The members the body indexes, as `s.w` (see [`field_and_index_owners`]).
    indexed_members: HashSet<String>,
    /// Locals holding the value of a `match` scrutinee that its arms bind whole.
    value_scrutinees: HashSet<String>,
    /// Parameters that are never differentiated (enums, `Option`s, integers, buffers of
    /// integers): a `match` on one may bind the values inside. Also the locals that hold
    /// constants: elements of those buffers, and immutable locals bound to a constant
    /// expression (`let n = x.len() as i64;`).
    inert_params: HashSet<String>,
    /// Locals declared with an integer type or `bool` (`let mut k: usize = 0;`): a call
    /// in a value assigned to one carries no derivative.
    integer_locals: HashSet<String>,
    /// Locals holding the element a reduction over a buffer's own elements found
    /// (`Some(v)` of `x.iter().reduce(..)`): a reference in the user's code, the value
    /// here, so that `*v` in code kept as written (a condition) reads `*(&v)`.
    found_references: HashSet<String>,
    /// The parameters holding data without derivatives: integers, `bool`, text, and
    /// slices, arrays and vectors of them (`ks: &[usize]`), whose methods are constants.
    data_params: HashSet<String>,
    /// Parameters whose type is a type parameter that is not a float, or `impl Trait`
    /// (`b: &B` with `B: Backend`): the macro cannot see their methods.
    generic_params: HashSet<String>,
    /// Locals holding a copy of a `const` or `static` item (`let w = W;`): iterated by
    /// position, as the item is.
    const_copies: HashSet<String>,
    /// Source names bound to buffers anywhere so far (a companion re-creates a buffer in
    /// its reverse sweep from the tape that kept it, under the same name).
    buffer_names: HashSet<String>,
    /// Set while lowering a call or a method call that is a statement of its own
    /// (`tick(3);`, `backend.sync();`), until the call reads it: such a call goes through
    /// the protocol even with constant arguments, so that a custom rule on the callee
    /// fires.
    statement_call: bool,
    /// Set while lowering a call that is an operand of arithmetic (`Sq(a) + Sq(b)`,
    /// `s += Qx(a)`), until the call reads it: a call there returns a number, so a
    /// capitalised name is a function's, not a tuple struct's.
    value_call: bool,
    /// The names indexed twice (`hs[i][j]`): an element of one is a row, which a copy
    /// (`let prev = s[i];`, a companion's saved copy) copies as a buffer.
    matrices: HashSet<String>,
    /// The names indexed twice by positions, not ranges (`m[i][j]`, not `x[a..][k]`):
    /// buffers of rows.
    rows_indexed: HashSet<String>,
    /// The locals that hold the elements of a `let mut` tuple (`let mut acc = (0.0,
    /// 1.0);`, bound to a tuple of them): written by `acc.0 += v` and `acc = (a, b)`, and
    /// copied where the tuple is bound again as a whole.
    tuple_slots: HashSet<String>,
    /// The locals built as matrices (`[[a, b], [c, d]]`, `vec![vec![0.0; m]; n]`), whose
    /// elements are rows even where the function indexes them once.
    matrix_vars: HashSet<String>,
    /// Set while a `collect` whose written type is a vector of vectors is lowered (`let
    /// rows: Vec<Vec<f64>> = ..collect();`): each item, a vector a call or a closure
    /// returned, is pushed as a row.
    rows_collected: bool,
    /// The locals that are vectors of vectors by their written type or their `collect`
    /// (`let mut hs: Vec<Vec<f64>> = Vec::new();`): a push onto one is of a row.
    vector_rows: HashSet<String>,
    /// The locals bound to a fixed-size array literal (`let p = [a, b];`, `[c; 2]`): a
    /// value of its own that a push onto a vector of arrays copies, as it copies a literal.
    array_locals: HashSet<String>,
    /// The locals declared `let mut` (by their lowered names). A name for a slice or an
    /// element whose index reads one of them keeps the index it had where it was bound
    /// (see [`Lowerer::with_fixed_indices`]).
    mutable_locals: HashSet<String>,
    /// See `Body::fixed_structs`.
    fixed_structs: HashSet<String>,
}

/// A parsed iterator source.
enum Source {
    /// Elements of a place, by index.
    Slice(Place, bool),
    /// `chunks(k)` / `chunks_exact(k)` of a place (mutable), `k`, and for `chunks` (whose
    /// last chunk may be short) a bound local holding the place's length.
    Chunks(Place, bool, TokenStream, Option<TokenStream>),
    /// `windows(k)` of a place (a bound local holds `k`).
    Windows(Place, TokenStream),
    /// A range (with `rev()`/`step_by()`), iterated as written.
    Range(TokenStream),
    /// A range read by position, on either side of a `zip` or under `enumerate`: a bound
    /// local holding the range (`(0..n).rev()`, `1..`), whose element at position `k` is
    /// its `nth(k)` (constant time for ranges), and whose length is its size hint.
    Counting(TokenStream),
    /// A buffer of integers or other constants (a parameter that is never differentiated,
    /// `ks: &[usize]`), iterated by reference as written: its elements are constants. The
    /// local holding the buffer reads it by position, on the other side of a `zip` or
    /// under `enumerate` (`vals.iter().zip(idx.iter())`).
    Constants(TokenStream, Ident),
    /// An indexed chain whose positions are moved: `skip`, `take`, `step_by`, `rev`.
    Reindexed(Box<Chain>, Reindex),
}

/// How an adapter maps a position of its chain to one of the chain it wraps (each count
/// is a bound local, evaluated once before the loop, as `Iterator` evaluates it).
enum Reindex {
    Skip(TokenStream),
    Take(TokenStream),
    StepBy(TokenStream),
    /// With the bound length of the wrapped chain.
    Rev(TokenStream),
}

enum Adapter {
    Map(Expr),
    Zip(Box<Chain>),
    Enumerate,
    Copied,
    /// `filter(p)`: the adapters after it and the loop's body run when `p` holds.
    Filter(Expr),
}

impl Chain {
    fn has_filter(&self) -> bool {
        self.adapters
            .iter()
            .any(|a| matches!(a, Adapter::Filter(_)))
            || matches!(&self.source, Source::Reindexed(inner, _) if inner.has_filter())
    }

    /// Whether the loop runs over the source as written: a range, or a buffer of
    /// constants unless an adapter reads positions (`zip`, `enumerate`), in which case it
    /// is read by position like a slice.
    fn iterated_as_written(&self) -> bool {
        match self.source {
            Source::Range(_) => true,
            Source::Constants(..) => !self
                .adapters
                .iter()
                .any(|a| matches!(a, Adapter::Zip(_) | Adapter::Enumerate)),
            _ => false,
        }
    }
}

struct Chain {
    source: Source,
    adapters: Vec<Adapter>,
}

impl Lowerer {
    pub fn new(sig: &SigInfo) -> Self {
        let mut scope = HashMap::default();
        let mut kinds = HashMap::default();
        let mut closure_outputs = HashMap::default();
        for p in &sig.params {
            scope.insert(p.name.to_string(), Binding::Var(p.name.clone()));
            kinds.insert(p.name.to_string(), param_kind(p));
            if let Shape::Closure(c) = &p.shape {
                let y: syn::Type = syn::parse_str(&c.output).expect("a type");
                closure_outputs.insert(p.name.to_string(), y);
            }
        }
        Lowerer {
            scopes: vec![scope],
            out: vec![Vec::new()],
            counter: 0,
            floats: sig.float_params.clone(),
            kinds,
            loops: Vec::new(),
            ret: None,
            ret_float: None,
            ret_shape: RetShape::Single,
            prefix: "__ad".to_string(),
            closure_outputs,
            binding_ref: false,
            loads: HashMap::default(),
            renamable: None,
            companion: false,
            keeps_shadow_cuts: false,
            scalar_refs: struct_shaped_params(sig, true),
            struct_refs: struct_shaped_params(sig, false),
            constant_refs: constant_ref_params(sig),
            named_struct_refs: named_struct_params(sig),
            array_params: ndarray_params(sig),
            buffer_params: buffer_params(sig),
            row_params: row_params(sig),
            struct_elem_params: struct_elem_params(sig),
            array_param_lens: array_param_lens(sig),
            mut_array_params: mut_array_params(sig),
            ranked_arrays: ndarray_ranks(sig),
            array_elems: ndarray_elems(sig),
            product_vectors: HashSet::default(),
            pattern_params: Vec::new(),
            struct_values: HashSet::default(),
            struct_results: HashSet::default(),
            structs_with_buffers: HashSet::default(),
            field_owners: HashSet::default(),
            indexed_owners: HashSet::default(),
            indexed_members: HashSet::default(),
            value_scrutinees: HashSet::default(),
            struct_scrutinees: HashMap::default(),
            generic_params: generic_params(sig),
            integer_locals: HashSet::default(),
            found_references: HashSet::default(),
            inert_params: sig
                .params
                .iter()
                .filter(|p| p.shape == Shape::Other)
                .map(|p| p.name.to_string())
                .collect(),
            data_params: sig
                .params
                .iter()
                .filter(|p| {
                    p.ty.as_ref().is_some_and(|t| {
                        let t = match t {
                            syn::Type::Reference(r) => &*r.elem,
                            t => t,
                        };
                        crate::signature::is_inert(t)
                    })
                })
                .map(|p| p.name.to_string())
                .collect(),
            const_copies: HashSet::default(),
            buffer_names: HashSet::default(),
            statement_call: false,
            value_call: false,
            matrices: HashSet::default(),
            rows_indexed: HashSet::default(),
            tuple_slots: HashSet::default(),
            matrix_vars: HashSet::default(),
            rows_collected: false,
            vector_rows: HashSet::default(),
            array_locals: HashSet::default(),
            mutable_locals: HashSet::default(),
            fixed_structs: HashSet::default(),
        }
    }

    /// A lowerer for the code of a generated companion, which reads back its runtime idioms.
    pub fn for_companion(sig: &SigInfo) -> Self {
        Lowerer {
            companion: true,
            ..Lowerer::new(sig)
        }
    }

    /// For a reverse companion's code, which a forward transform differentiates again:
    /// its statements that cut a shadow parameter to its primal's length are kept.
    pub fn keeping_shadow_cuts(mut self) -> Self {
        self.keeps_shadow_cuts = true;
        self
    }

    fn fresh(&mut self, base: &str, span: Span) -> Ident {
        self.counter += 1;
        let base = short_base(base.trim_start_matches("r#"));
        Ident::new(&format!("{}{}_{}", self.prefix, self.counter, base), span)
    }

    /// Lowers a closure passed as argument `index` of a call, as a body of its own.
    fn lower_closure(&mut self, def: &ClosureDef, index: usize, span: Span) -> Result<ClosureIr> {
        let id = self.fresh("fn", span);
        let mut sub = Lowerer {
            scopes: def.scopes.clone(),
            out: vec![Vec::new()],
            counter: 0,
            floats: self.floats.clone(),
            kinds: self.kinds.clone(),
            loops: Vec::new(),
            ret: None,
            ret_float: None,
            ret_shape: RetShape::Single,
            prefix: format!("{id}_"),
            closure_outputs: self.closure_outputs.clone(),
            binding_ref: false,
            loads: HashMap::default(),
            renamable: None,
            companion: self.companion,
            keeps_shadow_cuts: false,
            scalar_refs: self.scalar_refs.clone(),
            constant_refs: self.constant_refs.clone(),
            struct_refs: self.struct_refs.clone(),
            named_struct_refs: self.named_struct_refs.clone(),
            array_params: self.array_params.clone(),
            buffer_params: self.buffer_params.clone(),
            row_params: self.row_params.clone(),
            struct_elem_params: self.struct_elem_params.clone(),
            array_param_lens: self.array_param_lens.clone(),
            mut_array_params: self.mut_array_params.clone(),
            ranked_arrays: self.ranked_arrays.clone(),
            array_elems: self.array_elems.clone(),
            product_vectors: self.product_vectors.clone(),
            pattern_params: Vec::new(),
            struct_values: self.struct_values.clone(),
            struct_results: self.struct_results.clone(),
            structs_with_buffers: self.structs_with_buffers.clone(),
            field_owners: self.field_owners.clone(),
            indexed_owners: self.indexed_owners.clone(),
            indexed_members: self.indexed_members.clone(),
            value_scrutinees: self.value_scrutinees.clone(),
            struct_scrutinees: self.struct_scrutinees.clone(),
            inert_params: self.inert_params.clone(),
            integer_locals: self.integer_locals.clone(),
            found_references: self.found_references.clone(),
            data_params: self.data_params.clone(),
            generic_params: self.generic_params.clone(),
            const_copies: self.const_copies.clone(),
            buffer_names: self.buffer_names.clone(),
            statement_call: false,
            value_call: false,
            matrices: self.matrices.clone(),
            rows_indexed: self.rows_indexed.clone(),
            tuple_slots: self.tuple_slots.clone(),
            matrix_vars: self.matrix_vars.clone(),
            rows_collected: false,
            vector_rows: self.vector_rows.clone(),
            array_locals: self.array_locals.clone(),
            mutable_locals: self.mutable_locals.clone(),
            fixed_structs: HashSet::default(),
        };
        sub.scopes.push(HashMap::default());
        let mut params = Vec::new();
        let mut param_types = Vec::new();
        for p in &def.params {
            param_types.push(match p {
                Pat::Type(pt) => Some((*pt.ty).clone()),
                _ => None,
            });
            let ident = match p {
                Pat::Ident(pi) => &pi.ident,
                Pat::Type(pt) => match &*pt.pat {
                    Pat::Ident(pi) => &pi.ident,
                    other => return unsupported(other, "this closure parameter pattern"),
                },
                other => return unsupported(other, "this closure parameter pattern"),
            };
            let v = sub.new_var_unbound(ident, VarKind::Scalar);
            sub.bind(ident, Binding::Var(v.clone()));
            params.push(v);
        }
        if contains_return_expr(&def.body) {
            return unsupported(&def.body, "`return` inside a closure");
        }
        let tail = sub.lower_expr(&def.body)?;
        let n = val_len(&tail);
        let ret = sub.flatten(tail, n)?;
        let block = sub.out.pop().expect("the closure body");
        self.pattern_params.append(&mut sub.pattern_params);
        let body = Body {
            block,
            ret,
            ret_shape: RetShape::scalars(n),
            pattern_params: vec![],
            fixed_structs: vec![],
            replays_marked: false,
        };
        let mut reads = HashSet::default();
        let mut writes = HashSet::default();
        for s in &body.block {
            reads.extend(crate::analysis::stmt_reads(s));
            crate::analysis::stmt_writes(s, &mut writes);
        }
        crate::analysis::condition_mentions(&body.block, &mut reads);
        for o in &body.ret {
            if let Operand::Var(v) = o {
                reads.insert(v.to_string());
            }
        }
        if let Some(w) = writes.iter().find(|w| self.kinds.contains_key(*w)) {
            return Err(syn::Error::new(
                span,
                format!(
                    "a closure passed to a differentiated call may not assign to `{}`, a variable it captures",
                    user_name(w)
                ),
            ));
        }
        let mut captures: Vec<Ident> = reads
            .into_iter()
            .filter(|r| self.kinds.contains_key(r))
            .map(|r| Ident::new(&r, Span::call_site()))
            .collect();
        captures.sort_by_key(|c| c.to_string());
        if let Some(s) = captures
            .iter()
            .find(|c| self.struct_values.contains(&c.to_string()))
        {
            return Err(syn::Error::new(
                span,
                format!(
                    "a closure passed to a differentiated call that captures `{}`, a struct value built in the function, is not supported in differentiated code (read the members it needs into locals before the call)",
                    user_name(&s.to_string())
                ),
            ));
        }
        Ok(ClosureIr {
            id,
            params,
            param_types,
            body,
            captures,
            kinds: sub.kinds,
            arg_index: index,
            span,
        })
    }

    fn emit(&mut self, s: Stmt) {
        // Anything but a pure `let` may write memory: forget the places read so far.
        let pure = matches!(
            &s,
            Stmt::Let {
                op: Op::Use(_)
                    | Op::Neg(_)
                    | Op::Bin(..)
                    | Op::Math(..)
                    | Op::Cast(..)
                    | Op::Load(_)
                    | Op::Inactive(_),
                ..
            }
        );
        if !pure {
            self.loads.clear();
        }
        if let Stmt::Let {
            var, mutable: true, ..
        } = &s
        {
            self.mutable_locals.insert(var.to_string());
        }
        self.out.last_mut().expect("an open block").push(s);
    }

    fn lookup(&self, name: &str) -> Option<&Binding> {
        lookup_in(&self.scopes, name)
    }

    fn bind(&mut self, name: &Ident, b: Binding) {
        let b = match b {
            Binding::Alias(p, m) => Binding::Alias(self.with_fixed_indices(p), m),
            b => b,
        };
        if let Binding::Var(v) = &b
            && self.kinds.get(&v.to_string()) == Some(&VarKind::Buffer)
        {
            self.buffer_names.insert(name.to_string());
        }
        self.scopes
            .last_mut()
            .expect("a scope")
            .insert(name.to_string(), b);
    }

    /// `p` with each `let mut` local its indices read replaced by a copy of its value now:
    /// `let a = &rest[..2];` (`rest` a slice cursor) or `let a = &w[k..k + 2];` names
    /// that slice even after `rest` or `k` is assigned again, as the reference does.
    fn with_fixed_indices(&mut self, mut p: Place) -> Place {
        let mut copies: HashMap<String, Ident> = HashMap::default();
        for proj in &mut p.proj {
            let Proj::Index(ts) = proj else { continue };
            // (A buffer read there, `&b[b.len() - 1]`, is the same buffer later: moving it
            // into a copy would leave nothing to index.)
            let mut read = Vec::new();
            walk_idents(ts, &mut |id| {
                if self.mutable_locals.contains(&id.to_string())
                    && self.kinds.get(&id.to_string()) != Some(&VarKind::Buffer)
                {
                    read.push(id.clone());
                }
            });
            if read.is_empty() {
                continue;
            }
            for id in read {
                copies.entry(id.to_string()).or_insert_with(|| {
                    let copy = self.temp(id.span());
                    self.emit(Stmt::Let {
                        var: copy.clone(),
                        mutable: false,
                        op: Op::Use(Operand::Var(id.clone())),
                    });
                    copy
                });
            }
            *ts = replace_idents(ts, &copies);
        }
        p
    }

    /// `c` with the places it iterates over passed through
    /// [`Lowerer::with_fixed_indices`].
    fn chain_with_fixed_indices(&mut self, c: Chain) -> Chain {
        let source = match c.source {
            Source::Slice(p, m) => Source::Slice(self.with_fixed_indices(p), m),
            Source::Chunks(p, m, k, end) => Source::Chunks(self.with_fixed_indices(p), m, k, end),
            Source::Windows(p, k) => Source::Windows(self.with_fixed_indices(p), k),
            Source::Reindexed(inner, r) => {
                Source::Reindexed(Box::new(self.chain_with_fixed_indices(*inner)), r)
            }
            source => source,
        };
        let adapters = c
            .adapters
            .into_iter()
            .map(|a| match a {
                Adapter::Zip(o) => Adapter::Zip(Box::new(self.chain_with_fixed_indices(*o))),
                a => a,
            })
            .collect();
        Chain { source, adapters }
    }

    fn temp(&mut self, span: Span) -> Ident {
        let v = self.fresh("t", span);
        self.kinds.insert(v.to_string(), VarKind::Scalar);
        self.renamable = Some(v.clone());
        v
    }

    /// Emits `let tmp = op;` and returns `tmp`.
    fn let_op(&mut self, op: Op, span: Span) -> Operand {
        let var = self.temp(span);
        self.emit(Stmt::Let {
            var: var.clone(),
            mutable: false,
            op,
        });
        Operand::Var(var)
    }

    fn in_block<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<(Block, T)> {
        self.out.push(Vec::new());
        self.scopes.push(HashMap::default());
        self.loads.clear();
        let r = f(self);
        self.loads.clear();
        self.scopes.pop();
        let block = self.out.pop().expect("the block just opened");
        r.map(|t| (block, t))
    }

    // ---------------------------------------------------------------- the function body

    pub fn lower_body(
        mut self,
        body: &syn::Block,
        sig: &SigInfo,
    ) -> Result<(Body, HashMap<String, VarKind>)> {
        if let Some(attr) = conditional_code(body) {
            return Err(syn::Error::new_spanned(
                attr,
                "`#[cfg(..)]` and `#[cfg_attr(..)]` are not supported inside a differentiated function: the derivatives cannot tell which configuration is compiled, and would differentiate the code left out. Move that code into a function of its own, or choose with `cfg!(..)` in an `if`",
            ));
        }
        let rewritten;
        let body = if self.companion {
            rewritten = indexed_again(body);
            &rewritten
        } else {
            rewritten = written_for_lowering(body, sig);
            &rewritten
        };
        let has_return = contains_return(body);
        self.matrices = indexed_twice(&quote!(#body), false);
        // (A part of a slice of structs indexed, `ps[1..][k]`, is no matrix.)
        self.matrices
            .retain(|m| !self.struct_elem_params.contains(m));
        self.rows_indexed = indexed_twice(&quote!(#body), true);
        (self.field_owners, self.indexed_owners, self.indexed_members) =
            field_and_index_owners(sig, body);
        // `use`, `const` and `static` items carry no derivative: each generated function
        // declares them first, wherever the user wrote them (an item is visible in its
        // whole block, and the reverse sweep of a nested block is a block of its own).
        for item in constant_items(body) {
            self.emit(Stmt::Inactive(quote!(#item)));
        }
        // (A buffer of rows as a result would need a tangent and an adjoint of rows.)
        if let Ret::Ty(t) = &sig.ret
            && let Some(rows) = rows_result(t)
        {
            return unsupported(
                rows,
                "a result that is an array or a vector of rows (`-> [[f64; 2]; 2]`: write it into a `&mut [[f64; 2]; 2]` parameter)",
            );
        }
        if let Ret::Ty(t) = &sig.ret
            && let syn::Type::Tuple(tt) = &**t
            && let Some(inner) = tt
                .elems
                .iter()
                .find(|e| matches!(e, syn::Type::Tuple(i) if !i.elems.is_empty()))
        {
            return unsupported(
                inner,
                "a tuple inside the returned tuple (`-> ((f64, f64), f64)`: return one flat tuple, `-> (f64, f64, f64)`)",
            );
        }
        self.ret_shape = match &sig.ret {
            Ret::Unit => RetShape::Single,
            Ret::Ty(t) => match &**t {
                syn::Type::Tuple(tt) => {
                    RetShape::Tuple(tt.elems.iter().map(returned_array_len).collect())
                }
                t if self.is_float_vec(t) => RetShape::Buffer,
                t => returned_array_len(t).map_or(RetShape::Single, RetShape::Array),
            },
        };
        // The type of each returned scalar.
        let tys: Vec<syn::Type> = match &sig.ret {
            Ret::Unit => vec![],
            Ret::Ty(t) => match &**t {
                syn::Type::Tuple(t) => t.elems.iter().flat_map(scalar_types).collect(),
                t => scalar_types(t),
            },
        };
        let ret_len = tys.len();
        if has_return && self.ret_shape == RetShape::Buffer {
            return unsupported_at(
                first_return(body).unwrap_or_else(|| body.span()),
                "`return` in a function that returns a vector (make the vector its last expression)",
            );
        }
        if has_return {
            let flag = self.fresh("returned", Span::call_site());
            self.kinds.insert(flag.to_string(), VarKind::Scalar);
            self.emit(Stmt::Let {
                var: flag.clone(),
                mutable: true,
                op: Op::Inactive(quote!(false)),
            });
            let mut vals = Vec::new();
            for ty in tys {
                let v = self.fresh("retval", Span::call_site());
                self.kinds.insert(v.to_string(), VarKind::Scalar);
                self.emit(Stmt::Let {
                    var: v.clone(),
                    mutable: true,
                    op: Op::Inactive(quote!(<#ty as ::core::default::Default>::default())),
                });
                vals.push(v);
            }
            self.ret = Some(RetCtl { flag, vals });
        }
        let typed_tail;
        let stmts = match (&sig.ret, &self.ret_shape) {
            (Ret::Ty(t), RetShape::Array(_) | RetShape::Buffer) if !self.companion => {
                typed_tail = typed_array_tail(&body.stmts, t);
                typed_tail.as_ref().unwrap_or(&body.stmts)
            }
            _ => &body.stmts,
        };
        let tail = match &sig.ret {
            Ret::Unit => self.lower_stmts(stmts, Tail::Unit)?,
            Ret::Ty(ty) => {
                self.ret_float = is_float_type(ty, &self.floats).then(|| (**ty).clone());
                self.lower_stmts(stmts, Tail::Return)?
            }
        };
        let ret = if let Some(ctl) = &self.ret {
            ctl.vals.iter().cloned().map(Operand::Var).collect()
        } else {
            match tail {
                Some(v) if self.ret_shape == RetShape::Buffer => {
                    vec![self.returned_buffer(v, body)?]
                }
                Some(v) if self.may_return_struct(sig) && self.returned_struct(&v, body) => {
                    self.ret_shape = RetShape::Value;
                    vec![self.returned_value(v)]
                }
                Some(v) if self.ret_shape.has_arrays() => {
                    let v = self.shaped_items(v, body.span())?;
                    self.flatten(v, ret_len)?
                }
                Some(Val::Place(p, _))
                    if p.is_whole()
                        && matches!(
                            self.kinds.get(&p.base.to_string()),
                            Some(VarKind::Buffer | VarKind::Value)
                        ) =>
                {
                    let at = body.stmts.last().map_or(body.span(), |s| s.span());
                    return unsupported_at(
                        at,
                        "returning a struct, or an array or vector of a type that is not `[f64; N]` or `Vec<f64>`, by value (return a tuple of floats, or write into a `&mut` parameter)",
                    );
                }
                Some(v) => self.flatten(v, ret_len)?,
                None if ret_len == 0 => vec![],
                None => {
                    return Err(syn::Error::new(
                        body.span(),
                        "the function's value must be its last expression or a `return`",
                    ));
                }
            }
        };
        let block = self.out.pop().expect("the body block");
        Ok((
            Body {
                block,
                ret,
                ret_shape: self.ret_shape,
                pattern_params: self.pattern_params,
                fixed_structs: self.fixed_structs.into_iter().collect(),
                replays_marked: self.keeps_shadow_cuts,
            },
            self.kinds,
        ))
    }

    /// Whether the function's type may be a struct's: a path that is not a float, a vector
    /// of floats, an integer or another type of the standard library (`-> Self`,
    /// `-> V2`, `-> Point<T>`), in a function without an early `return`.
    fn may_return_struct(&self, sig: &SigInfo) -> bool {
        let Ret::Ty(t) = &sig.ret else {
            return false;
        };
        self.may_be_struct_type(t) && self.ret.is_none()
    }

    /// Whether `e` is an `if` or `match` that chooses a struct value: the `let` that
    /// binds it names a struct type (`let r: V2 = if c { a } else { b };`), or a branch's
    /// value is a struct value (`if c { p + q } else { p - q }`: all branches have one
    /// type).
    fn chooses_struct(&self, e: &Expr, hint: Option<&syn::Type>) -> bool {
        if !matches!(strip(e), Expr::If(_) | Expr::Match(_)) {
            return false;
        }
        hint.is_some_and(|ty| self.may_be_struct_type(ty))
            || branch_values(e)
                .0
                .into_iter()
                .any(|t| self.struct_valued(t))
    }

    /// Whether `t` may name a struct: a path that is not a float, a vector of floats, an
    /// integer or another type of the standard library.
    fn may_be_struct_type(&self, t: &syn::Type) -> bool {
        matches!(t, syn::Type::Path(tp) if tp.qself.is_none())
            && !crate::signature::is_float_type(t, &self.floats)
            && !crate::activity::clearly_not_float(t)
            && !self.is_float_vec(t)
    }

    /// Whether the value a function ends with is a struct: one built in the body, or a
    /// value a call returned (whose type is the function's, a struct's).
    fn returned_struct(&self, v: &Val, body: &syn::Block) -> bool {
        match v {
            // (Or a call's struct copied with `let mut` and assigned again: `let mut p =
            // V3::new(a, b); p = p.scale(a); p`.)
            Val::Place(p, _) => {
                self.is_struct_value(p) || (p.is_whole() && self.is_struct_copy(&p.base))
            }
            Val::Op(Operand::Var(t)) => self.is_call_result(t),
            // A struct literal of constants, kept as written.
            Val::Op(Operand::Lit(_)) => matches!(
                body.stmts.last(),
                Some(syn::Stmt::Expr(Expr::Struct(_), None))
            ),
            _ => false,
        }
    }

    /// Whether the local `t` holds what a call returned (a value of any type: a float, a
    /// vector, a struct), in one of the blocks open here.
    fn is_call_result(&self, t: &Ident) -> bool {
        self.out.iter().any(|b| binds_call_result(b, t))
            // (A struct with buffers built where it is bound holds such a value too.)
            || self.structs_with_buffers.contains(&t.to_string())
            // (`let mut p = V2::new(a, b);` binds a copy of the call's temporary.)
            || self.out.iter().flatten().any(|s| match s {
                Stmt::Let { var, op: Op::Use(Operand::Var(src)), .. } if var == t => {
                    src != t && self.is_call_result(src)
                }
                Stmt::Let { var, op: Op::CloneOf(p, _), .. } if var == t => {
                    p.is_whole() && p.base != *t && self.is_call_result(&p.base)
                }
                _ => false,
            })
    }

    /// Whether `o` holds a value read from a member of a struct (`c.dim`, `c.ids[1]`).
    fn loads_member(&self, o: &Operand) -> bool {
        let Operand::Var(v) = o else {
            return false;
        };
        self.out.iter().flatten().any(|s| {
            matches!(s, Stmt::Let { var, op: Op::Load(p), .. }
                if var == v && p.proj.iter().any(|q| matches!(q, Proj::Field(_))))
        })
    }

    /// Whether the local `t` is the copy of a call's struct that `let mut acc =
    /// V2::new(..);` binds (see `Self::call_result_copy`), which may be assigned whole.
    /// (In a companion lowered again, the copy is bound again: `let mut acc = copy;`.)
    fn is_struct_copy(&self, t: &Ident) -> bool {
        self.out.iter().flatten().any(|s| match s {
            Stmt::Let { var, op, .. } if var == t => match op {
                Op::CloneOf(_, CopyKind::Struct { .. }) => true,
                Op::Load(p) => p.is_whole() && p.base != *t && self.is_struct_copy(&p.base),
                Op::Use(Operand::Var(w)) => w != t && self.is_struct_copy(w),
                _ => false,
            },
            _ => false,
        })
    }

    /// Whether the local `t` holds a call's result, a part of one (`let p =
    /// __ad_result.0;` in a companion lowered again) or such a value kept by the forward
    /// sweep (`let p = __ad::take(__ad_keep_p.pop());`): a value of any type, a struct's
    /// among them.
    fn holds_call_value(&self, t: &Ident) -> bool {
        self.is_call_result(t)
            || self.out.iter().any(|b| {
                b.iter().any(|s| match s {
                    Stmt::Let {
                        var,
                        op: Op::Load(p),
                        ..
                    } if var == t => {
                        self.is_call_result(&p.base)
                            || (p.base != *t && self.holds_call_value(&p.base))
                    }
                    // A companion's copy of one (`let mut acc = (t).clone();`).
                    Stmt::Let {
                        var,
                        op: Op::CloneOf(p, CopyKind::Struct { .. }),
                        ..
                    } if var == t && p.base != *t => self.holds_call_value(&p.base),
                    // The result of an augmented call split at once (`let (r, pullback)
                    // = v.__ad_aug_norm();`), and its copies.
                    Stmt::Let {
                        var,
                        op: Op::Use(Operand::Var(w)),
                        ..
                    } if var == t && w != t => self.holds_call_value(w),
                    Stmt::LetTuple {
                        vars,
                        op: Op::Use(Operand::Var(w)),
                    } if vars.contains(t) && w != t => self.holds_call_value(w),
                    Stmt::Let {
                        var,
                        op: Op::Pop(_),
                        ..
                    } => var == t,
                    _ => false,
                })
            })
    }

    /// The local holding the struct a function returns (a constant one is bound to a
    /// local of its own).
    fn returned_value(&mut self, v: Val) -> Operand {
        match v {
            Val::Place(p, _) => Operand::Var(p.base),
            Val::Op(Operand::Lit(t)) => {
                let var = self.fresh("value", Span::call_site());
                self.kinds.insert(var.to_string(), VarKind::Value);
                self.emit(Stmt::Let {
                    var: var.clone(),
                    mutable: false,
                    op: Op::Inactive(t),
                });
                Operand::Var(var)
            }
            Val::Op(o) => o,
            Val::Tuple(_) => unreachable!("not a struct (`returned_struct`)"),
        }
    }

    /// `-> Vec<f64>` (of a float type: `f32`, `f64` or a float type parameter).
    fn is_float_vec(&self, t: &syn::Type) -> bool {
        crate::activity::is_vec_of_scalars(t)
            && crate::signature::float_elem(t, &self.floats).is_some()
    }

    /// The local vector a function that returns one returns whole.
    fn returned_buffer(&mut self, v: Val, body: &syn::Block) -> Result<Operand> {
        match v {
            Val::Place(p, _)
                if p.is_whole()
                    && matches!(self.kinds.get(&p.base.to_string()), Some(VarKind::Buffer)) =>
            {
                Ok(Operand::Var(p.base))
            }
            // A local vector, a copy, or a vector a call returned.
            Val::Op(Operand::Var(t)) => Ok(Operand::Var(t)),
            _ => {
                let at = body.stmts.last().map_or(body.span(), |s| s.span());
                unsupported_at(
                    at,
                    "returning this value as a vector (return a local vector by name, `out`)",
                )
            }
        }
    }

    /// The scalars of a returned value whose shape holds arrays, as the items of a tuple
    /// (one item: the scalar itself).
    fn shaped_items(&mut self, v: Val, span: Span) -> Result<Val> {
        match self.ret_shape.clone() {
            RetShape::Array(n) => self.array_items(v, n, span),
            RetShape::Tuple(elems) => {
                let Val::Tuple(items) = v else {
                    return unsupported_at(span, "this returned value (write the tuple out)");
                };
                if items.len() != elems.len() {
                    return unsupported_at(span, "this returned value");
                }
                let mut out = Vec::new();
                for (it, e) in items.into_iter().zip(elems) {
                    match e {
                        None => out.push(it),
                        Some(n) => match self.array_items(it, n, span)? {
                            Val::Tuple(xs) => out.extend(xs),
                            x => out.push(x),
                        },
                    }
                }
                Ok(Val::Tuple(out))
            }
            RetShape::Single | RetShape::Buffer | RetShape::Value => Ok(v),
        }
    }

    /// The `n` elements of an array value (`[a, b]`, a local array, the result of a
    /// call), as the items of a tuple (one item: the element itself).
    fn array_items(&mut self, v: Val, n: usize, span: Span) -> Result<Val> {
        let place = match v {
            Val::Place(p, _) => p,
            Val::Op(Operand::Var(t)) => Place::local(t),
            Val::Tuple(items) if items.len() == n => return Ok(Val::Tuple(items)),
            _ => return unsupported_at(span, "this array value returned"),
        };
        let mut items: Vec<Val> = (0..n)
            .map(|i| {
                let mut p = place.clone();
                let i = proc_macro2::Literal::usize_unsuffixed(i);
                p.proj.push(Proj::Index(quote!(#i)));
                Val::Place(p, false)
            })
            .collect();
        Ok(if n == 1 {
            items.remove(0)
        } else {
            Val::Tuple(items)
        })
    }

    /// The scalar operands of a value of `n` elements (a tuple when `n > 1`).
    fn flatten(&mut self, v: Val, n: usize) -> Result<Vec<Operand>> {
        match v {
            Val::Tuple(items) if n != 1 => {
                let mut out = Vec::new();
                for it in items {
                    if let Val::Place(p, _) = &it
                        && p.is_whole()
                        && self.companion
                        && (matches!(
                            self.kinds.get(&p.base.to_string()),
                            Some(VarKind::Buffer | VarKind::Value)
                        ) || self.is_struct_value(p))
                    {
                        // A reverse companion of a function that returns a vector or a
                        // struct, lowered again: the value (a struct a call returned may be
                        // a copy, `__ad::snapshot_struct(&p)`), then the adjoints of its
                        // scalar parameters (a forward companion's: the value and its
                        // tangent).
                        out.push(Operand::Var(p.base.clone()));
                        continue;
                    }
                    if let Val::Place(p, _) = &it
                        && p.is_whole()
                        && matches!(
                            self.kinds.get(&p.base.to_string()),
                            Some(VarKind::Buffer | VarKind::Value)
                        )
                    {
                        // (A companion of a function that returns an array returns it in
                        // a tuple with its tangent or adjoints.)
                        return unsupported_at(
                            p.base.span(),
                            "returning an array, a vector or a struct in a tuple (return it alone, or write it into a `&mut` parameter)",
                        );
                    }
                    out.push(self.operand(it, Span::call_site())?);
                }
                if out.len() != n {
                    // Ill-typed code (`()` where a pair is returned): rustc names the
                    // mismatch at the user's own function.
                    return unsupported_at(
                        Span::call_site(),
                        &format!(
                            "a value of {} scalars where the function returns {n}",
                            out.len()
                        ),
                    );
                }
                Ok(out)
            }
            v if n == 0 => {
                // A unit value: nothing to return, but it may have been computed.
                self.discard_call_result(v);
                Ok(vec![])
            }
            v if n == 1 => Ok(vec![self.operand(v, Span::call_site())?]),
            Val::Op(Operand::Var(t)) => {
                // A call returning a tuple: destructure it.
                let vars: Vec<Ident> = (0..n).map(|_| self.temp(t.span())).collect();
                self.emit(Stmt::LetTuple {
                    vars: vars.clone(),
                    op: Op::Use(Operand::Var(t)),
                });
                Ok(vars.into_iter().map(Operand::Var).collect())
            }
            _ => Err(syn::Error::new(Span::call_site(), "expected a tuple value")),
        }
    }

    /// Lowers statements; returns the value of the tail expression, if any, or sends it
    /// where `tail` says. After a statement that may leave the block (`return`, `break`,
    /// `continue`), the rest is guarded by the exit flags; a value the rest computes is then
    /// assigned to locals declared before the guard.
    fn lower_stmts(&mut self, stmts: &[syn::Stmt], tail: Tail) -> Result<Option<Val>> {
        for (i, s) in stmts.iter().enumerate() {
            let is_last = i + 1 == stmts.len();
            if is_last && let syn::Stmt::Expr(e, None) = s {
                if is_unit_valued(e) || matches!(tail, Tail::Unit) {
                    self.lower_expr_stmt(e)?;
                    return Ok(None);
                }
                let v = match (&tail, self.ret_float.clone()) {
                    (Tail::Return, Some(ty)) => self.lower_expr_hint(e, Some(&ty))?,
                    _ => self.lower_expr(e)?,
                };
                match &tail {
                    // A `return` inside the last expression (`if c { return a } else { b }`)
                    // has set the function's value: the expression's own value, a
                    // placeholder on that path, must not overwrite it.
                    Tail::Return if self.ret.is_some() && stmt_may_exit(s) => {
                        let cond = self.exit_flags();
                        let (then, ()) = self.in_block(|l| l.assign_return(v, e.span()))?;
                        self.emit(guard(cond, then));
                        return Ok(None);
                    }
                    Tail::Return if self.ret.is_some() => {
                        self.assign_return(v, e.span())?;
                        return Ok(None);
                    }
                    Tail::Into(slots) => {
                        self.assign_slots(slots, v)?;
                        return Ok(None);
                    }
                    _ => return Ok(Some(v)),
                }
            }
            // The variables of `let .. else` are bound where the statements after it run.
            let let_else = match s {
                syn::Stmt::Local(l) => match &l.init {
                    Some(syn::LocalInit {
                        expr,
                        diverge: Some((_, els)),
                        ..
                    }) => Some(self.lower_let_else(&l.pat, expr, els)?),
                    _ => None,
                },
                _ => None,
            };
            if let_else.is_none() && !self.lower_integer_local(s, &stmts[i + 1..])? {
                self.lower_stmt(s)?;
            }
            let bind = |l: &mut Self| match &let_else {
                Some(LetElse::Pattern(scrutinee, pat)) => {
                    l.bind_pattern(scrutinee, pat, pat.span())
                }
                Some(LetElse::Element(stmts)) => stmts.iter().try_for_each(|s| l.lower_stmt(s)),
                None => Ok(()),
            };
            if !is_last && stmt_may_exit(s) {
                let cond = self.exit_flags();
                let rest = &stmts[i + 1..];
                let (then, value) = self.in_block(|l| {
                    bind(l)?;
                    l.lower_stmts(rest, tail)
                })?;
                let Some(v) = value else {
                    self.emit(guard(cond, then));
                    return Ok(None);
                };
                let n = val_len(&v);
                let slots = self.value_slots(n, None, stmts[i].span());
                self.out.push(then);
                self.assign_slots(&slots, v)?;
                let then = self.out.pop().expect("the guarded block");
                self.emit(guard(cond, then));
                return Ok(Some(slots_val(slots)));
            }
            bind(self)?;
        }
        Ok(None)
    }

    /// `let mut v = Default::default();` for each of the `n` values of an expression that
    /// is assigned later (typed by `hint` when the user wrote the type, else inferred from
    /// that assignment).
    fn value_slots(&mut self, n: usize, hint: Option<&syn::Type>, span: Span) -> Vec<Ident> {
        let tys: Vec<Option<syn::Type>> = match hint {
            Some(syn::Type::Tuple(t)) if n != 1 && t.elems.len() == n => {
                t.elems.iter().cloned().map(Some).collect()
            }
            Some(t) if n == 1 => vec![Some(t.clone())],
            _ => vec![None; n],
        };
        tys.into_iter()
            .map(|ty| {
                let v = self.fresh("value", span);
                self.kinds.insert(v.to_string(), VarKind::Scalar);
                let init = match ty {
                    Some(ty) => quote!(<#ty as ::core::default::Default>::default()),
                    None => quote!(::core::default::Default::default()),
                };
                self.emit(Stmt::Let {
                    var: v.clone(),
                    mutable: true,
                    op: Op::Inactive(init),
                });
                v
            })
            .collect()
    }

    /// `slot = value;` for each slot and scalar of `v`.
    fn assign_slots(&mut self, slots: &[Ident], v: Val) -> Result<()> {
        let ops = self.flatten(v, slots.len())?;
        for (var, o) in slots.iter().zip(ops) {
            self.emit(Stmt::Assign {
                place: Place::local(var.clone()),
                kind: AssignKind::Set,
                val: o,
            });
        }
        Ok(())
    }

    /// `!(flag || ..)` for the flags that can be set at this point.
    fn exit_flags(&self) -> TokenStream {
        let mut flags = Vec::new();
        if let Some(r) = &self.ret {
            flags.push(r.flag.clone());
        }
        if let Some(l) = self.loops.last() {
            flags.push(l.brk.clone());
            flags.push(l.cont.clone());
        }
        quote!(!(#(#flags)||*))
    }

    fn assign_return(&mut self, v: Val, span: Span) -> Result<()> {
        let v = if self.ret_shape.has_arrays() {
            self.shaped_items(v, span)?
        } else {
            v
        };
        if self.holds_struct_with_buffers(&v)
            || matches!(&v, Val::Place(p, _) if self.is_struct_value(p))
        {
            return unsupported_at(
                span,
                "returning a struct from a function with an early `return` (make the struct the function's last expression, built by `if` or `match` where it depends on a condition)",
            );
        }
        let ctl = self.ret.as_ref().expect("return control");
        let vals = ctl.vals.clone();
        let flag = ctl.flag.clone();
        self.assign_slots(&vals, v)?;
        self.emit(Stmt::Assign {
            place: Place::local(flag),
            kind: AssignKind::Set,
            val: Operand::Lit(quote!(true)),
        });
        Ok(())
    }

    fn lower_stmt(&mut self, s: &syn::Stmt) -> Result<()> {
        match s {
            syn::Stmt::Local(l) => self.lower_local(l),
            syn::Stmt::Expr(e, _) => self.lower_expr_stmt(e),
            syn::Stmt::Macro(m) => self.lower_macro_stmt(&m.mac),
            // Generated companions import the runtime; the derivative code imports it again.
            syn::Stmt::Item(syn::Item::Use(u)) if self.companion && is_runtime_import(u) => Ok(()),
            // Declared at the start of the body (see `lower_body`).
            syn::Stmt::Item(i) if is_constant_item(i) => Ok(()),
            syn::Stmt::Item(i) => unsupported(
                i,
                "an item other than `use`, `const` or `static` inside a function body",
            ),
        }
    }

    fn lower_macro_stmt(&mut self, mac: &syn::Macro) -> Result<()> {
        let name = mac
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        if is_inert_macro(&name) {
            // (`assert!(step(&mut y, a) >= 0.0)`: its changes would not be differentiated.)
            if let Ok(args) = mac.parse_body_with(
                syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated,
            ) {
                for a in &args {
                    // (`name = value`, a named format argument, assigns nothing.)
                    let a = match a {
                        Expr::Assign(n) if matches!(&*n.left, Expr::Path(_)) => &n.right,
                        a => a,
                    };
                    self.refuse_effects(a, &format!("`{name}!`"))?;
                }
            }
            let toks = self.render_macro(mac);
            self.emit(Stmt::Inactive(quote!(#toks;)));
            Ok(())
        } else {
            Err(syn::Error::new_spanned(
                mac,
                format!(
                    "the macro `{name}!` cannot be differentiated through: only `vec!` and printing and assertion macros are understood"
                ),
            ))
        }
    }

    // ---------------------------------------------------------------- let

    fn lower_local(&mut self, l: &syn::Local) -> Result<()> {
        // `let mut hs: Vec<Vec<f64>> = ..`: a vector of vectors, onto which a push is of a
        // row, whatever gives it (a vector a call returned, whose type the call does not
        // show); and a `collect` into one (by that type or a turbofish) collects rows.
        if self.companion {
            return self.lower_local_typed(l);
        }
        let (pat, rows) = match &l.pat {
            Pat::Type(pt) => (&*pt.pat, is_vector_rows_type(&pt.ty)),
            p => (p, false),
        };
        let collects = l
            .init
            .as_ref()
            .is_some_and(|i| collects_rows(&i.expr, rows));
        let outer = std::mem::replace(&mut self.rows_collected, collects);
        let r = self.lower_local_typed(l);
        self.rows_collected = outer;
        r?;
        if (rows || collects)
            && let Pat::Ident(pi) = pat
            && let Some(Binding::Var(v)) = self.lookup(&pi.ident.to_string())
        {
            let v = v.to_string();
            self.vector_rows.insert(v.clone());
            self.matrix_vars.insert(v);
        }
        Ok(())
    }

    fn lower_local_typed(&mut self, l: &syn::Local) -> Result<()> {
        if l.attrs.iter().any(|a| a.path().is_ident(FOUND_REFERENCE)) {
            // (See `option_element`.)
            let mut l = l.clone();
            l.attrs.clear();
            self.lower_local(&l)?;
            if let Pat::Ident(p) = &l.pat
                && let Some(Binding::Var(v)) = self.lookup(&p.ident.to_string())
            {
                self.found_references.insert(v.to_string());
            }
            return Ok(());
        }
        // `let y = &a + &b;`, `let h = (w.dot(x) + b).mapv(f64::tanh);`: arrays made with
        // `zeros`, then written.
        if !self.companion && self.lower_array_let(l)? {
            return Ok(());
        }
        // `let h = z.mapv(f64::tanh);`: an array made with `zeros`, then written.
        if let Some(stmts) = self.mapped_array_let(l)? {
            for s in &stmts {
                self.lower_stmt(s)?;
            }
            return Ok(());
        }
        let array = self.local_array(l);
        let product = match (&l.pat, l.init.as_ref().map(|i| strip(&i.expr))) {
            (Pat::Ident(p), Some(Expr::MethodCall(m))) => {
                self.matrix_vector_product(m).map(|_| p.ident.clone())
            }
            _ => None,
        };
        self.lower_local_value(l)?;
        if let Some(name) = product
            && let Some(Binding::Var(v)) = self.lookup(&name.to_string())
        {
            self.product_vectors.insert(v.to_string());
        }
        // `let mut h = Array1::zeros(n);`: an `ndarray` array of the function's own, whose
        // shape, reductions, rows and copies are those of an array parameter.
        if let Some((name, rank, elem)) = array
            && let Some(Binding::Var(v)) = self.lookup(&name.to_string())
        {
            let v = v.to_string();
            if let Some(rank) = rank {
                self.ranked_arrays.insert(v.clone(), rank);
            }
            if let Some(elem) = elem {
                self.array_elems.insert(v.clone(), elem);
            }
            self.array_params.insert(v);
        }
        // `let w: &Array2<f64> = &self.w;`: a struct's member, an array of the type the
        // `let` writes, read under the name as an array parameter is.
        if let Some((name, rank, elem)) = member_array(l)
            && matches!(self.lookup(&name.to_string()), Some(Binding::Alias(..)))
        {
            let key = name.to_string();
            self.ranked_arrays.insert(key.clone(), rank);
            if let Some(elem) = elem {
                self.array_elems.insert(key.clone(), elem);
            }
            self.array_params.insert(key);
        }
        Ok(())
    }

    /// The name a `let` binds to an `ndarray` array it creates (see
    /// [`Self::is_constant_array_constructor`]), with the array's number of dimensions
    /// and element type where the `let`'s type, the constructor's type (`Array2`,
    /// `Array1::<f32>`) or its shape (`(r, c)`, `[r, c]`) names them.
    fn local_array(&self, l: &syn::Local) -> Option<(Ident, Option<usize>, Option<syn::Type>)> {
        let (pat, hint) = match &l.pat {
            Pat::Type(pt) => (&*pt.pat, Some(&*pt.ty)),
            p => (p, None),
        };
        let Pat::Ident(pi) = pat else {
            return None;
        };
        let Expr::Call(c) = strip(&l.init.as_ref()?.expr) else {
            return None;
        };
        let Expr::Path(f) = &*c.func else {
            return None;
        };
        let segs = &f.path.segments;
        let ctor = segs.last()?.ident.to_string();
        let ty_seg = segs.iter().nth_back(1)?;
        if !crate::builtins::is_ndarray_type_name(&ty_seg.ident.to_string())
            || !self.is_constant_array_constructor(&ctor, c)
        {
            return None;
        }
        let ty: syn::Type = syn::Type::Path(syn::TypePath {
            qself: None,
            path: syn::Path::from(ty_seg.clone()),
        });
        let shape_rank = match strip(&c.args[0]) {
            Expr::Tuple(t) => Some(t.elems.len()),
            Expr::Array(a) => Some(a.elems.len()),
            _ => None,
        };
        let rank = hint
            .and_then(crate::builtins::ndarray_rank)
            .or_else(|| crate::builtins::ndarray_rank(&ty))
            .or(shape_rank);
        let elem = hint
            .and_then(crate::builtins::ndarray_elem)
            .or_else(|| crate::builtins::ndarray_elem(&ty));
        Some((pi.ident.clone(), rank, elem))
    }

    /// A `let` as written (the whole-array forms are made first by [`Self::lower_local`]).
    fn lower_local_value(&mut self, l: &syn::Local) -> Result<()> {
        let Some(init) = &l.init else {
            return self.declare_scalar(l);
        };
        if let Some(calls) = self.struct_operators_as_calls(&init.expr) {
            let whole = match &l.pat {
                Pat::Ident(p) if self.is_struct_operator_call(&calls) => Some(p),
                _ => None,
            };
            // (`let mut acc = a + b;` then `acc = acc + c;`: a struct, kept as a copy of
            // the call's value, which is assigned whole, as a struct whose members the
            // body reads is; see `call_result_copy`.)
            if let Some(p) = whole.filter(|p| p.mutability.is_some()) {
                self.field_owners.insert(p.ident.to_string());
            }
            let mut l = l.clone();
            if let Some(init) = &mut l.init {
                *init.expr = calls;
            }
            self.lower_local(&l)?;
            // `let q = p + v;`: a struct, whose operators and methods are the user's.
            if let Some(p) = whole
                && let Some(Binding::Var(v)) = self.lookup(&p.ident.to_string())
            {
                self.struct_results.insert(v.to_string());
            }
            return Ok(());
        }
        if init.diverge.is_some() {
            // Lowered with the statements after it (see `lower_stmts`).
            return unsupported(l, "`let .. else` here");
        }
        let (pat, hint) = match &l.pat {
            Pat::Type(pt) => (&*pt.pat, Some((*pt.ty).clone())),
            p => (p, None),
        };
        // `let _ = sync(k);` discards the value as a statement does: a call there is made
        // for its effect alone.
        if matches!(pat, Pat::Wild(_)) && hint.is_none() && !self.companion {
            return self.lower_expr_stmt(&init.expr);
        }
        // `let () = sync(k);` and `let u: () = sync(k);` too: a unit value, whose call an
        // all-constant custom rule must see as a statement.
        let is_unit = |t: &syn::Type| matches!(t, syn::Type::Tuple(t) if t.elems.is_empty());
        let unit_pattern = matches!(pat, Pat::Tuple(t) if t.elems.is_empty());
        if (unit_pattern || hint.as_ref().is_some_and(is_unit)) && !self.companion {
            self.lower_expr_stmt(&init.expr)?;
            return match pat {
                Pat::Ident(pi) => {
                    self.bind_pat(&Pat::Ident(pi.clone()), Val::Op(Operand::Lit(quote!(()))))
                }
                _ => Ok(()),
            };
        }
        let e = strip(&init.expr);
        if let Pat::Ident(pi) = pat {
            let name = &pi.ident;
            // (`let mut r = &mut out[1..];` names the slice as `let r = ..` does; pointing
            // `r` elsewhere later is refused by `assign_slice_cursor`.)
            let mutable = pi.mutability.is_some()
                && !matches!(e, Expr::Reference(r) if r.mutability.is_some());
            // `let h = if c { relu(x) } else { x.to_vec() };`: a vector chosen by an `if`,
            // an empty vector assigned in each branch.
            let chosen = match e {
                Expr::If(i) if i.else_branch.is_some() => {
                    hint.as_ref().is_some_and(is_vec_type) || self.has_vector_branch(i)
                }
                Expr::Match(_) => hint.as_ref().is_some_and(is_vec_type),
                _ => false,
            };
            if chosen && !self.companion && pi.by_ref.is_none() && pi.subpat.is_none() {
                let ty = hint.iter();
                let declared: syn::Stmt = syn::parse_quote_spanned!(l.span()=>
                    let mut #name #(: #ty)* = ::std::vec::Vec::new();
                );
                self.lower_stmts(&[declared], Tail::Unit)?;
                let target: Expr = syn::parse_quote!(#name);
                return self.lower_expr_stmt(&assigned_in_branches(&target, e));
            }
            // `let ps = vec![P { x: x[0], .. }, P { x: x[1], .. }];`: a buffer of structs
            // written member by member (see `struct_vectors`).
            if !self.companion
                && pi.by_ref.is_none()
                && pi.subpat.is_none()
                && let Some(stmts) = self.struct_list_by_members(name, e, hint.as_ref())
            {
                return self.lower_stmts(&stmts, Tail::Unit).map(|_| ());
            }
            // `let s = if c { &w[..3] } else { &w[1..] };`: a slice cursor (see
            // `slice_cursors`), empty to start with, then pointed by the branches.
            if !self.companion
                && pi.by_ref.is_none()
                && pi.subpat.is_none()
                && let Some(base) = sliced_in_branches(e)
            {
                let declared: syn::Stmt = syn::parse_quote_spanned!(l.span()=>
                    let mut #name = &#base[..0];
                );
                let pointed: syn::Stmt = syn::parse_quote_spanned!(l.span()=>
                    #name = #e;
                );
                return self
                    .lower_stmts(&[declared, pointed], Tail::Unit)
                    .map(|_| ());
            }
            // `let mut y = *y0;` of an array parameter `y0: &[f64; 2]`: written out as
            // `[y0[0], y0[1]]`, a local array (a copy as a vector would not be what a
            // callee taking `&[f64; 2]` takes).
            if let (true, false, Expr::Unary(u)) = (mutable, self.companion, e)
                && matches!(u.op, syn::UnOp::Deref(_))
                && let Expr::Path(x) = strip(&u.expr)
                && let Some(x) = x.path.get_ident()
                && matches!(self.lookup(&x.to_string()), Some(Binding::Var(v)) if v == x)
                && let Some(&n) = self.array_param_lens.get(&x.to_string())
            {
                let idx = 0..n;
                let written: Expr = syn::parse_quote_spanned!(e.span()=> [#(#x[#idx]),*]);
                let mut local = l.clone();
                if let Some(init) = &mut local.init {
                    *init.expr = written;
                }
                return self.lower_local(&local);
            }
            if self.companion && is_reslice_of(name, e) {
                // `let s = &mut s[..x.len()];`: a companion trims a shadow to its primal's
                // length (for bounds-check elision). Renaming it to a place would keep `x`
                // borrowed. A reverse companion's forward transform keeps the statement
                // as written, a rebinding of the parameter: its replayed accesses of the
                // shadow rest on that length (`forward::Replays`).
                if self.keeps_shadow_cuts
                    && let Expr::Reference(r) = e
                    && r.mutability.is_some()
                {
                    let e = self.render(e);
                    self.emit(Stmt::Inactive(quote!(let #name = #e;)));
                }
                return Ok(());
            }
            if let Expr::Closure(c) = e {
                let mut scopes = self.scopes.clone();
                if c.capture.is_some() {
                    // A `move` closure keeps the values its captures had here.
                    scopes.push(self.snapshot_captures(&c.body));
                }
                let def = ClosureDef {
                    params: c.inputs.iter().cloned().collect(),
                    body: (*c.body).clone(),
                    scopes,
                };
                self.bind(name, Binding::Closure(Rc::new(def)));
                return Ok(());
            }
            if let Expr::Struct(lit) = e
                && self.builds_struct_with_buffers(name, lit)
            {
                return self.lower_struct_with_buffers(name, mutable, lit);
            }
            if !mutable
                && !self.companion
                && self.is_iterator_chain(e)
                && !is_range_expr(e)
                && self.mentions_locals(e)
            {
                let meaning = self.names_meaning(e);
                self.bind(name, Binding::Iter(Rc::new(e.clone()), Rc::new(meaning)));
                return Ok(());
            }
            let table = match e {
                Expr::Reference(r) if r.mutability.is_none() => strip(&r.expr),
                e => e,
            };
            if !mutable && is_constant_tuple_table(table) && !self.mentions_locals(e) {
                // A table of tuples of constants (`[(0.5, 0.2), (1.0, -0.4)]`, or a
                // reference to one, which lives as long as the program): data with no
                // derivative, read as a constant parameter's elements are.
                let var = self.fresh(&name.to_string(), name.span());
                self.kinds.insert(var.to_string(), VarKind::Scalar);
                self.inert_params.insert(var.to_string());
                self.emit(Stmt::Let {
                    var: var.clone(),
                    mutable: false,
                    op: Op::Inactive(self.render(e)),
                });
                self.bind(name, Binding::Var(var));
                return Ok(());
            }
            if let Some(matrix) = self.lower_matrix_literal(e)? {
                self.matrix_vars.insert(matrix.to_string());
                self.bind(name, Binding::Var(matrix));
                return Ok(());
            }
            if let Some(matrix) = self.lower_repeated_row(e)? {
                self.matrix_vars.insert(matrix.to_string());
                self.bind(name, Binding::Var(matrix));
                return Ok(());
            }
            if let Some(matrix) = self.lower_filled_matrix(e)? {
                // The binding names the matrix built (as for `collect`).
                self.matrix_vars.insert(matrix.to_string());
                self.bind(name, Binding::Var(matrix));
                return Ok(());
            }
            if let Some(op) = self.buffer_init(e, mutable)? {
                let op = match &hint {
                    Some(ty) => typed_elements(op, ty),
                    None => op,
                };
                if let Op::Use(Operand::Var(collected)) = op {
                    // `collect` built the buffer already: the binding names it.
                    self.bind(name, Binding::Var(collected));
                    return Ok(());
                }
                let kind = match &op {
                    Op::StructLit(..) if !mutable => VarKind::Value,
                    // `let mut s6 = __ad::copy_of(&acc);`, a companion's copy of a float
                    // (`let mut s6 = acc;` of a call's value): a float, whose methods are
                    // the float methods.
                    Op::CloneOf(p, CopyKind::SameType)
                        if p.is_whole()
                            && self.kinds.get(&p.base.to_string()) == Some(&VarKind::Scalar) =>
                    {
                        VarKind::Scalar
                    }
                    _ => VarKind::Buffer,
                };
                let array = matches!(op, Op::ArrLit(_, false) | Op::ArrRepeat(..));
                let of_struct_values = matches!(&op, Op::ArrLit(items, true)
                    if !items.is_empty() && items.iter().all(|o| matches!(o,
                        Operand::Var(x) if self.struct_values.contains(&x.to_string())
                            || self.structs_with_buffers.contains(&x.to_string()))));
                let v = self.new_var_unbound(name, kind);
                if array {
                    self.array_locals.insert(v.to_string());
                }
                // `let mut ss = vec![State { x: 0.0, v: 0.0 }; n];` (or `vec![a, b]` of
                // struct values bound to locals): a buffer of structs, whose elements are
                // copied out, assigned whole and receive method calls as a slice
                // parameter's of structs do.
                if is_struct_buffer_literal(e) || of_struct_values {
                    self.struct_elem_params.insert(v.to_string());
                }
                // `let mut ps: Vec<[f64; 2]> = Vec::new();` and `let mut t = [[0.0; 2];
                // 2];`: its elements are rows, even where it is never indexed twice (a
                // callee fills it, `s = t;` copies it).
                if hint.as_ref().is_some_and(is_rows_type)
                    || is_rows_literal(e)
                    || self.is_copy_of_rows(e)
                {
                    self.matrix_vars.insert(v.to_string());
                }
                self.emit_owned(&v, mutable, op);
                self.bind(name, Binding::Var(v));
                return Ok(());
            }
            // `let k: usize = bucket(x[0]);`: the written type says that the value is an
            // integer or a truth value, which carries no derivative, so a plain helper's
            // call with values there needs none (as a call with constant values needs
            // none). It is kept as `no_grad(..)` keeps it, so that code differentiating
            // the companion again does not take it for a float call either.
            if hint.as_ref().is_some_and(is_integer_or_bool_type)
                && let Some(kept) = self.integer_valued(e)
            {
                return self.lower_local_initialised(l, kept);
            }
            // (Read before the branches are lowered: a branch's value may name the local
            // that this `let` shadows.)
            let chosen_struct = self.chooses_struct(e, hint.as_ref());
            let val = self.lower_expr_hint(e, hint.as_ref())?;
            let val = match &hint {
                Some(ty) => self.typed_value(val, ty, e),
                None => val,
            };
            // `let mut s = *x;` of an array behind a reference: a copy to write; of a
            // matrix parameter (`a: &[[f64; 2]; 2]`), a local matrix.
            if let (true, Expr::Unary(u), Val::Place(p, _)) = (mutable, e, &val)
                && matches!(u.op, syn::UnOp::Deref(_))
                && p.is_whole()
            {
                let rows = !self.companion && self.row_params.contains(&p.base.to_string());
                if rows || self.is_float_buffer(&p.base) {
                    let q = self.copy_of_place(name, true, p.clone());
                    if rows {
                        self.matrix_vars.insert(q.to_string());
                    }
                    self.bind(name, Binding::Var(q));
                    return Ok(());
                }
            }
            if mutable && self.bind_slice_cursor(name, e, &val) {
                return Ok(());
            }
            if matches!(e, Expr::Reference(_)) {
                let saved = std::mem::replace(&mut self.binding_ref, true);
                let r = self.bind_let(name, mutable, val, e.span());
                self.binding_ref = saved;
                return r;
            }
            self.bind_let(name, mutable, val, e.span())?;
            if hint.as_ref().is_some_and(is_integer_or_bool_type)
                && let Some(Binding::Var(v)) = self.lookup(&name.to_string())
            {
                self.integer_locals.insert(v.to_string());
            }
            // `let e: C = z.exp();`, `let p: V2 = bs[i].pos;`: the written type says that
            // the call returned a struct, or that the member is one, whose operators and
            // methods (`e.abs()`) are then the user's.
            let struct_call = hint.as_ref().is_some_and(|ty| self.may_be_struct_type(ty))
                && matches!(e, Expr::Call(_) | Expr::MethodCall(_) | Expr::Field(_));
            if (struct_call || chosen_struct)
                && let Some(Binding::Var(v)) = self.lookup(&name.to_string())
            {
                self.struct_results.insert(v.to_string());
            }
            if !mutable
                && self.const_item(e).is_some()
                && let Some(Binding::Var(v)) = self.lookup(&name.to_string())
            {
                self.const_copies.insert(v.to_string());
            }
            return Ok(());
        }
        // `let [a, b] = [x, y];` binds each element to its value.
        if let (Pat::Slice(s), Expr::Array(a)) = (pat, e)
            && s.elems.len() == a.elems.len()
            && !s.elems.iter().any(|p| matches!(p, Pat::Rest(_)))
        {
            let items = a
                .elems
                .iter()
                .map(|x| self.lower_expr(x))
                .collect::<Result<Vec<_>>>()?;
            for (p, v) in s.elems.iter().zip(items) {
                self.bind_pat(p, v)?;
            }
            return Ok(());
        }
        // (`let (k, j): (usize, usize) = (bucket(a), bucket(b));` alike.)
        if let (Some(syn::Type::Tuple(tt)), Expr::Tuple(t)) = (&hint, e)
            && tt.elems.len() == t.elems.len()
            && tt.elems.iter().all(is_integer_or_bool_type)
            && t.elems.iter().any(|x| self.integer_valued(x).is_some())
        {
            let mut written = t.clone();
            for x in written.elems.iter_mut() {
                if let Some(kept) = self.integer_valued(x) {
                    *x = kept;
                }
            }
            return self.lower_local_initialised(l, Expr::Tuple(written));
        }
        let val = self.lower_expr_hint(e, hint.as_ref())?;
        if is_split_unwrap(e) {
            // (The parts are references: names for the places, which `*first` reads and
            // `*first = v` writes.)
            return self.bind_pat_ref(pat, val);
        }
        self.bind_pat(pat, val)
    }

    /// `let y;` or `let y: f64;` (a float assigned later, in each branch): a mutable local
    /// that starts as the type's default value, which no read sees.
    fn declare_scalar(&mut self, l: &syn::Local) -> Result<()> {
        let (pat, ty) = match &l.pat {
            Pat::Type(pt) => (&*pt.pat, Some(&*pt.ty)),
            p => (p, None),
        };
        let Pat::Ident(pi) = pat else {
            return unsupported(l, "a `let` without an initial value, except of one float");
        };
        if ty.is_some_and(|t| !is_float_type(t, &self.floats)) {
            return unsupported(l, "a `let` without an initial value, except of one float");
        }
        let init = match ty {
            Some(t) => quote!(<#t as ::core::default::Default>::default()),
            None => quote!(::core::default::Default::default()),
        };
        let v = self.new_var_unbound(&pi.ident, VarKind::Scalar);
        self.emit(Stmt::Let {
            var: v.clone(),
            mutable: true,
            op: Op::Inactive(init),
        });
        self.bind(&pi.ident, Binding::Var(v));
        Ok(())
    }

    /// `let pat = scrutinee else { .. };`: the `else` block runs (and leaves) unless the
    /// pattern matches. Returns the scrutinee's local and the pattern, whose variables the
    /// caller binds as a `match` arm binds them (so the scrutinee must be a by-value
    /// parameter that is never differentiated) where the statements after it run.
    fn lower_let_else(&mut self, pat: &Pat, scrutinee: &Expr, els: &Expr) -> Result<LetElse> {
        let pat = match pat {
            Pat::Type(pt) => &*pt.pat,
            p => p,
        };
        // `let Some(v) = x.get(i) else { .. };`: the element, read by indexing.
        if let Some((holds, bind)) = self.option_element(pat, scrutinee)? {
            let cond = self.render(&holds);
            self.diverge_unless(quote!(#cond), els)?;
            return Ok(LetElse::Element(bind));
        }
        if pat_binds(pat) && !self.binds_constants(scrutinee, pat) {
            return unsupported(
                pat,
                "`let .. else` that binds variables, except slice patterns of bindings and `_` (`[a, b]`, `[first, .., last]`, `[h, rest @ ..]`) on a slice named by a variable or a member or on a range of one, `Some(v)` of `x.get(i)`, `x.first()`, `x.last()` (or `get_mut`, `first_mut`, `last_mut`), `v.pop()` of a local vector of floats or a reduction (`reduce`, `max_by`, `min_by`, `find`), `Some((a, rest))` of `x.split_first()` or `x.split_last()`, `Some(p)` (or `Some((i, p))`) of a `let mut` local of an `Option` of a number or of a tuple of numbers (`let mut prev: Option<f64> = None;`), and patterns on a by-value parameter that is never differentiated (an enum, an `Option`, an integer), a struct parameter or `no_grad(..)` of a value without a derivative",
            );
        }
        let scrut = self.scrutinee_tokens(scrutinee);
        let s = self.inactive_local("scrutinee", scrut, scrutinee.span());
        self.note_struct_scrutinee(&s, scrutinee);
        let test = without_bindings(pat, None);
        self.diverge_unless(quote!(matches!(#s, #test)), els)?;
        Ok(LetElse::Pattern(s, pat.clone()))
    }

    /// The `else` of a `let .. else`: `if !(matches) { els }`.
    fn diverge_unless(&mut self, matches: TokenStream, els: &Expr) -> Result<()> {
        let (otherwise, _) =
            self.in_block(|l| l.lower_branch(&Branch::Expr(els.clone()), false))?;
        self.emit(Stmt::If {
            cond: quote!(!(#matches)),
            then: otherwise,
            els: vec![],
            outs: vec![],
            then_vals: vec![],
            else_vals: vec![],
        });
        Ok(())
    }

    /// The value of `let name: ty = init`, made to keep the written type: an `if`,
    /// `match` or block whose results are literals would otherwise leave it an ambiguous
    /// `{float}`, so its value is cast to `ty`.
    fn typed_value(&mut self, val: Val, ty: &syn::Type, init: &Expr) -> Val {
        let branches = matches!(init, Expr::If(_) | Expr::Match(_) | Expr::Block(_));
        match val {
            Val::Op(Operand::Var(v)) if branches && is_float_type(ty, &self.floats) => {
                Val::Op(self.let_op(Op::Cast(Operand::Var(v), ty.clone()), init.span()))
            }
            v => typed_constant(v, ty),
        }
    }

    fn new_var_unbound(&mut self, name: &Ident, kind: VarKind) -> Ident {
        let v = self.fresh(&name.to_string(), name.span());
        self.kinds.insert(v.to_string(), kind);
        v
    }

    /// How `let mut name = call(..);` copies the call's result: as a struct when the body
    /// reads `name`'s members (`c.x`), as a vector or array when it indexes `name`
    /// (`h[i]`); `None` for a value taken as a scalar.
    fn call_result_copy(&self, name: &Ident) -> Option<CopyKind> {
        let name = name.to_string();
        if self.field_owners.contains(&name) {
            Some(CopyKind::Struct { behind_ref: false })
        } else if !self.companion && self.indexed_owners.contains(&name) {
            Some(CopyKind::SameType)
        } else {
            None
        }
    }

    /// Whether `let name = lit;` builds a struct with a member that holds a buffer
    /// (`St { pos: x.to_vec(), vel: vec![0.0; n], t: 0.0 }`): see
    /// [`Self::lower_struct_with_buffers`]. Not when a member's value names `name` (an
    /// older binding, which the new one would hide) or changes values.
    fn builds_struct_with_buffers(&self, name: &Ident, lit: &syn::ExprStruct) -> bool {
        let mut names_itself = false;
        for f in &lit.fields {
            walk_idents(&f.expr.to_token_stream(), &mut |id| {
                names_itself |= id == name
            });
        }
        // (Each member's value is computed twice: not one that changes values.)
        lit.rest.is_none()
            && !names_itself
            && lit.fields.iter().any(|f| self.is_buffer_value(&f.expr))
            && !lit.fields.iter().any(|f| self.may_change_values(&f.expr))
    }

    /// Whether `e` evidently makes or names an owned buffer: `vec![..]`, an array,
    /// `to_vec()`, `clone()`, `collect()`, `Vec::new()`, or a local buffer (not a
    /// reference, which a struct member may not hold here).
    fn is_buffer_value(&self, e: &Expr) -> bool {
        match strip(e) {
            // (Not a vector of rows, `vec![vec![..], ..]`, `vec![[a, b]; n]`.)
            Expr::Macro(m) => {
                m.mac.path.is_ident("vec")
                    && !matches!(m.mac.tokens.clone().into_iter().next(),
                        Some(proc_macro2::TokenTree::Group(g))
                            if g.delimiter() == proc_macro2::Delimiter::Bracket)
                    && !m
                        .mac
                        .tokens
                        .clone()
                        .into_iter()
                        .any(|t| matches!(&t, proc_macro2::TokenTree::Ident(id) if id == "vec"))
            }
            Expr::Array(_) | Expr::Repeat(_) => true,
            Expr::MethodCall(m) => {
                matches!(
                    m.method.to_string().as_str(),
                    "to_vec" | "clone" | "collect" | "to_owned"
                ) && !self.is_struct_receiver(&m.receiver)
            }
            // (`<[_]>::to_vec(&x[..])` and `Clone::clone(&v)`, as companions write them.)
            Expr::Call(c) => matches!(strip(&c.func), Expr::Path(p)
                if (p.path.segments.len() == 2 && p.path.segments[0].ident == "Vec")
                    || p.path.segments.last().is_some_and(|s| s.ident == "to_vec" || s.ident == "clone")),
            Expr::Path(p) => p.path.get_ident().is_some_and(|id| {
                matches!(self.lookup(&id.to_string()), Some(Binding::Var(v))
                    if self.kinds.get(&v.to_string()) == Some(&VarKind::Buffer)
                        && !self.struct_values.contains(&v.to_string()))
            }),
            _ => false,
        }
    }

    /// `let st = St { pos: x.to_vec(), vel: vec![0.0; n], t: dt };`: a struct with a
    /// buffer member, built where it is bound. The literal is evaluated as written, as a
    /// constant (as a constant call's struct is, `St::zeros(n)`), into a `let mut`
    /// local; then each member whose value names a local is written again from its
    /// expression, so that its derivative reaches the struct: a buffer copied in
    /// (`st.pos.copy_from_slice(&x.to_vec())`, the same length), a float assigned
    /// (`st.t = dt`). The struct's shadow and tangent are its zero (`#[differentiable]`
    /// on its declaration), its methods may change it (see `Analysis::mutable_lets`),
    /// and the reverse sweep saves it whole around them (`Clone`).
    fn lower_struct_with_buffers(
        &mut self,
        name: &Ident,
        mutable: bool,
        lit: &syn::ExprStruct,
    ) -> Result<()> {
        let mut written = lit.clone();
        for f in &mut written.fields {
            // (`St { pos, t }`: the renamed local needs the member's name beside it.)
            f.colon_token.get_or_insert_with(Default::default);
            // A local buffer moved into the struct is copied from again below.
            if matches!(strip(&f.expr), Expr::Path(_)) && self.is_buffer_value(&f.expr) {
                let e = &f.expr;
                f.expr = syn::parse_quote_spanned!(e.span()=> ::core::clone::Clone::clone(&#e));
            }
        }
        let var = self.new_var_unbound(name, VarKind::Scalar);
        self.structs_with_buffers.insert(var.to_string());
        if !mutable {
            self.fixed_structs.insert(var.to_string());
        }
        self.emit(Stmt::Let {
            var: var.clone(),
            mutable: true,
            op: Op::Inactive(self.render(&Expr::Struct(written))),
        });
        self.bind(name, Binding::Var(var));
        // (A companion, lowered again, writes the members again itself.)
        let rewrite = !self.companion;
        for f in lit.fields.iter().filter(|_| rewrite) {
            if !self.mentions_locals(&f.expr) {
                continue;
            }
            let (m, e) = (&f.member, &f.expr);
            let stmt: syn::Stmt = if self.is_buffer_value(e) {
                syn::parse_quote_spanned!(e.span()=> #name.#m.copy_from_slice(&#e);)
            } else {
                syn::parse_quote_spanned!(e.span()=> #name.#m = #e;)
            };
            self.lower_stmt(&stmt)?;
        }
        Ok(())
    }

    /// An error at `e` when it changes values (see [`has_effects`]) in a place (`what`)
    /// whose value carries no derivative and is kept as written, so that the change
    /// would not be differentiated. (Companions lowered again have such changes made
    /// before.)
    fn refuse_effects(&self, e: &Expr, what: &str) -> Result<()> {
        if !self.companion && has_effects(e) {
            return unsupported(
                e,
                &format!(
                    "an assignment or a `&mut` borrow in {what} (its changes would not be differentiated: make them in a statement before it)"
                ),
            );
        }
        Ok(())
    }

    /// Whether `func` names a closure parameter (`f` of `f: impl Fn(f64) -> f64`).
    fn calls_closure_param(&self, func: &Expr) -> bool {
        let Expr::Path(p) = strip(func) else {
            return false;
        };
        p.path.get_ident().is_some_and(|id| {
            matches!(self.lookup(&id.to_string()), Some(Binding::Var(v))
                if matches!(self.kinds.get(&v.to_string()), Some(VarKind::Closure(_))))
        })
    }

    /// Whether `e` may change values where it is evaluated: it does (see [`has_effects`]),
    /// or it calls a method of the user's on a place that can be borrowed mutably (which
    /// may take `&mut self`: `st.advance(dt)`), or passes a `&mut` reference parameter on
    /// to a function (`adv(p, x[0])`). Such an expression, where its value carries no
    /// derivative, is lowered as code rather than kept as written.
    fn may_change_values(&self, e: &Expr) -> bool {
        struct Finder<'a> {
            l: &'a Lowerer,
            found: bool,
        }
        impl<'v> syn::visit::Visit<'v> for Finder<'_> {
            fn visit_expr(&mut self, e: &'v Expr) {
                match e {
                    Expr::Closure(_) => return,
                    Expr::Call(c) if matches!(strip(&c.func), Expr::Path(p) if p.path.is_ident("no_grad")) =>
                    {
                        return;
                    }
                    Expr::MethodCall(m)
                        if !is_std_method_name(&m.method.to_string())
                            && self.l.is_mutable_root(&m.receiver) =>
                    {
                        self.found = true;
                    }
                    Expr::Call(c) if c.args.iter().any(|a| self.l.is_mutable_ref_param(a)) => {
                        self.found = true;
                    }
                    // A closure parameter's call (`if f(a) < f(b)`): in the companions the
                    // closure is a `DiffFn`, which the call as written does not call.
                    Expr::Call(c) if self.l.calls_closure_param(&c.func) => {
                        self.found = true;
                    }
                    _ => {}
                }
                syn::visit::visit_expr(self, e);
            }
        }
        if has_effects(e) {
            return true;
        }
        let mut f = Finder {
            l: self,
            found: false,
        };
        syn::visit::Visit::visit_expr(&mut f, e);
        f.found
    }

    /// Whether the place `e` (`st`, `self.inner`, `p`) can be borrowed mutably here: a
    /// `let mut` local, a `&mut` parameter or `self` of a `&mut self` method.
    fn is_mutable_root(&self, e: &Expr) -> bool {
        let mut root = strip(e);
        while let Expr::Field(f) = root {
            root = strip(&f.base);
        }
        let Expr::Path(p) = root else {
            return false;
        };
        let Some(id) = p.path.get_ident() else {
            return false;
        };
        match self.lookup(&id.to_string()) {
            Some(Binding::Var(v)) => {
                matches!(
                    self.kinds.get(&v.to_string()),
                    Some(VarKind::Ref { mutable: true } | VarKind::Buffer)
                ) || self
                    .out
                    .iter()
                    .flatten()
                    .any(|s| matches!(s, Stmt::Let { var, mutable: true, .. } if var == v))
            }
            Some(Binding::Alias(_, mutable)) => *mutable,
            _ => false,
        }
    }

    /// Whether `e` names a `&mut` reference parameter (`p` of `p: &mut S`), which a call
    /// given it may change.
    fn is_mutable_ref_param(&self, e: &Expr) -> bool {
        matches!(strip(e), Expr::Path(p) if p.path.get_ident().is_some_and(|id| {
            matches!(self.lookup(&id.to_string()), Some(Binding::Var(v))
                if self.kinds.get(&v.to_string()) == Some(&VarKind::Ref { mutable: true }))
        }))
    }

    /// The tokens of a condition (of `if`, `while`, a `match` scrutinee), which carries no
    /// derivative. One that changes values (`while step(&mut y, a) > tol`, `while { s =
    /// s * s; k < 2 } {}`) is lowered as code, so that those changes are differentiated,
    /// and its value is read from the result; any other is kept as written.
    fn lower_condition(&mut self, e: &Expr) -> Result<TokenStream> {
        if self.companion || !self.may_change_values(e) {
            return Ok(self.render(e));
        }
        let v = self.lower_expr(e)?;
        let o = self.operand(v, e.span())?;
        Ok(o.primal())
    }

    /// Refuses struct literals that read locals or parameters as the items of an array or
    /// vector (`vec![Q { b: [c[0], c[1]], z: 0.0 }, ..]`), as a struct value built in the
    /// function is refused in an array; one of constants only
    /// (`vec![P { x: 0.0, y: 0.0 }; n]`) is a buffer of structs, written afterwards.
    fn refuse_struct_items<'e>(&self, mut items: impl Iterator<Item = &'e Expr>) -> Result<()> {
        match items.find(|e| matches!(strip(e), Expr::Struct(_)) && self.mentions_locals(e)) {
            Some(t) => unsupported(
                t,
                "a struct value built in the function used as a value (in arithmetic, an array, a `Vec` or a call by value; read its members, or pass it by reference)",
            ),
            None => Ok(()),
        }
    }

    /// The runtime call that a copy of a struct parameter behind `&mut`, as a companion
    /// differentiated again writes it, stands for (see `forward::nested_copy`):
    /// `__ad::nested_copy_of(r).nested_copy()` is `__ad::snapshot(r)`, and
    /// `__ad::nested_copy_of(r).nested_copy_into(d)` is `__ad::restore_from(d, r)`.
    fn nested_copy_call(&self, m: &syn::ExprMethodCall) -> Option<Expr> {
        let Expr::Call(c) = strip(&m.receiver) else {
            return None;
        };
        let Expr::Path(f) = &*c.func else {
            return None;
        };
        if !self.companion || path_names(&f.path) != ["__ad", "nested_copy_of"] || c.args.len() != 1
        {
            return None;
        }
        let r = &c.args[0];
        match (m.method.to_string().as_str(), m.args.len()) {
            ("nested_copy", 0) => Some(syn::parse_quote!(__ad::snapshot(#r))),
            ("nested_copy_into", 1) => {
                let d = &m.args[0];
                Some(syn::parse_quote!(__ad::restore_from(#d, #r)))
            }
            _ => None,
        }
    }

    /// Whether `e` names a local declared with an integer type or `bool`.
    fn names_integer_local(&self, e: &Expr) -> bool {
        matches!(strip(e), Expr::Path(p) if p.path.get_ident().is_some_and(|id| {
            matches!(self.lookup(&id.to_string()), Some(Binding::Var(v))
                if self.integer_locals.contains(&v.to_string()))
        }))
    }

    /// `no_grad(e)` for a value `e` known to be an integer or a truth value (by a written
    /// type, a cast, its position) that calls a plain helper with values
    /// (`bucket(x[0])`): such a call needs no derivative. Kept as `no_grad(..)` keeps a
    /// value, so that code differentiating the companion again does not take it for a
    /// float call either. `None` where nothing needs it.
    fn integer_valued(&self, e: &Expr) -> Option<Expr> {
        (!self.companion && calls_a_function_with_values(e) && !self.may_change_values(e))
            .then(|| syn::parse_quote_spanned!(e.span()=> ::autodiff_core::no_grad(#e)))
    }

    /// `let i = locate(xs, t);` without a written type, where the statements after it,
    /// `rest`, use `i` as only an integer can be used (see `integer_uses`): lowered as
    /// `let i: usize = ..` is, the plain helper's call needing no derivative. Whether it
    /// was lowered so.
    fn lower_integer_local(&mut self, s: &syn::Stmt, rest: &[syn::Stmt]) -> Result<bool> {
        let syn::Stmt::Local(l) = s else {
            return Ok(false);
        };
        let (Pat::Ident(pi), Some(init)) = (&l.pat, &l.init) else {
            return Ok(false);
        };
        if pi.by_ref.is_some() || pi.subpat.is_some() || init.diverge.is_some() {
            return Ok(false);
        }
        if self.integer_valued(&init.expr).is_none()
            || !crate::integer_uses::used_as_integer(&pi.ident.to_string(), rest)
        {
            return Ok(false);
        }
        // (A `no_grad` that rustc checks is given an integer: the uses were read right.)
        let e = &init.expr;
        let kept = syn::parse_quote_spanned!(e.span()=>
            ::autodiff_core::__private::integer_use::no_grad(#e));
        self.lower_local_initialised(l, kept)?;
        if let Some(Binding::Var(v)) = self.lookup(&pi.ident.to_string()) {
            self.integer_locals.insert(v.to_string());
        }
        Ok(true)
    }

    /// The `let` `l` with its value written as `init` instead, lowered.
    fn lower_local_initialised(&mut self, l: &syn::Local, init: Expr) -> Result<()> {
        let mut local = l.clone();
        if let Some(i) = &mut local.init {
            *i.expr = init;
        }
        self.lower_local(&local)
    }

    /// `e`, an integer operand, lowered as [`Self::integer_valued`] keeps it.
    fn lower_integer_operand(&mut self, e: &Expr) -> Result<Val> {
        match self.integer_valued(e) {
            Some(kept) => self.lower_expr(&kept),
            None => self.lower_expr(e),
        }
    }

    /// `recv.name(args..)` of integers (`min`, `max`, `clamp`), from operands already
    /// lowered, the receiver first: a value with no derivative.
    fn integer_method(&mut self, name: &str, args: Vec<Val>, span: Span) -> Result<Val> {
        let mut primals = Vec::new();
        for a in args {
            primals.push(self.operand(a, span)?.primal());
        }
        let method = Ident::new(name, span);
        // (As `Ord`'s function, which code lowered again reads as this again.)
        let toks = quote!(::core::cmp::Ord::#method(#(#primals),*));
        Ok(Val::Op(self.let_op(Op::Inactive(toks), span)))
    }

    /// A comparison or a logical or bit operation whose operands change values
    /// (`step(&mut y, a) > tol`): the operands lowered as code, in order, the test made
    /// on their values. `&&` and `||` whose right operand changes values are branches.
    fn lower_effectful_test(&mut self, b: &syn::ExprBinary) -> Result<Val> {
        let lazy = matches!(b.op, syn::BinOp::And(_) | syn::BinOp::Or(_));
        if lazy && self.may_change_values(&b.right) {
            // The right operand runs only sometimes: a branch, as `&&` and `||` are.
            let (l, r) = (&b.left, &b.right);
            let branch: Expr = match b.op {
                syn::BinOp::And(_) => {
                    syn::parse_quote_spanned!(b.span()=> if #l { #r } else { false })
                }
                _ => syn::parse_quote_spanned!(b.span()=> if #l { true } else { #r }),
            };
            return self.lower_expr(&branch);
        }
        let l = self.lower_condition(&b.left)?;
        let r = match lazy {
            true => self.render(&b.right),
            false => self.lower_condition(&b.right)?,
        };
        let op = &b.op;
        Ok(Val::Op(
            self.let_op(Op::Inactive(quote!((#l) #op (#r))), b.span()),
        ))
    }

    /// `let name = val;`
    fn bind_let(&mut self, name: &Ident, mutable: bool, val: Val, span: Span) -> Result<()> {
        match val {
            // A copy of a struct with buffers (`let mut s2 = st.clone();`): named as it is.
            Val::Place(p, _)
                if p.is_whole() && self.structs_with_buffers.contains(&p.base.to_string()) =>
            {
                self.bind(name, Binding::Var(p.base));
                Ok(())
            }
            // `let old = s;` of a whole local array copies it (of a local `Vec`, moves it),
            // and `s` may be written after: `old` is a buffer of its own, not a name for
            // `s`. So is `let mut t = s;`.
            Val::Place(p, _)
                if !self.binding_ref
                    && !self.companion
                    && (self.is_written_buffer(&p) || self.is_row(&p)) =>
            {
                self.bind_copy(name, mutable, p);
                Ok(())
            }
            // A closure's `mut` parameter given a row (`|mut p: [f64; 2]| ..` called with
            // `pts[i]`): the closure's own copy, as the call makes.
            Val::Place(p, _)
                if self.binding_ref && mutable && !self.companion && self.is_row(&p) =>
            {
                self.bind_copy(name, mutable, p);
                Ok(())
            }
            // `let p = ps[i];` of a slice of structs, and `let mut r = p;` of such a copy: a
            // copy, as the struct's `Copy` makes.
            Val::Place(p, _)
                if !self.binding_ref
                    && (self.is_struct_element(&p)
                        || (!self.companion && p.is_whole() && self.is_element_copy(&p.base))) =>
            {
                let v = self.new_var_unbound(name, VarKind::Value);
                self.emit(Stmt::Let {
                    var: v.clone(),
                    mutable,
                    op: Op::CloneOf(p, CopyKind::Struct { behind_ref: false }),
                });
                self.bind(name, Binding::Var(v));
                Ok(())
            }
            Val::Place(p, m) if !mutable && (self.binding_ref || !is_scalar_place(&p, self)) => {
                self.bind(name, Binding::Alias(p, m));
                Ok(())
            }
            Val::Place(p, _) if !mutable && self.is_unchanging_member(&p) => {
                self.bind(name, Binding::Member(p));
                Ok(())
            }
            Val::Place(p, _) if self.is_struct_value(&p) => unsupported_at(
                span,
                "a mutable copy of a struct value built in the function (build it where it is bound with `let mut`)",
            ),
            Val::Place(p, _) => {
                let v = self.new_var_unbound(name, VarKind::Scalar);
                self.emit(Stmt::Let {
                    var: v.clone(),
                    mutable,
                    op: Op::Load(p),
                });
                self.bind(name, Binding::Var(v));
                Ok(())
            }
            Val::Tuple(items) if !mutable => {
                // (A `let mut` tuple's elements are copied: it may change after.)
                let mut kept = Vec::new();
                for item in items {
                    kept.push(match item {
                        Val::Op(Operand::Var(v)) if self.tuple_slots.contains(&v.to_string()) => {
                            Val::Op(self.let_op(Op::Use(Operand::Var(v)), span))
                        }
                        item => item,
                    });
                }
                self.bind(name, Binding::Tuple(kept));
                Ok(())
            }
            // `let mut acc = (0.0, 1.0);`: a mutable local per element.
            Val::Tuple(items) => {
                let mut slots = Vec::new();
                for item in items {
                    if matches!(item, Val::Tuple(_)) {
                        return unsupported_at(span, "a mutable tuple of tuples");
                    }
                    let op = match self.operand(item, span)? {
                        Operand::Lit(t) => Op::Inactive(t),
                        o => Op::Use(o),
                    };
                    let v = self.new_var_unbound(name, VarKind::Scalar);
                    self.emit(Stmt::Let {
                        var: v.clone(),
                        mutable: true,
                        op,
                    });
                    self.tuple_slots.insert(v.to_string());
                    slots.push(Val::Op(Operand::Var(v)));
                }
                self.bind(name, Binding::Tuple(slots));
                Ok(())
            }
            Val::Op(Operand::Var(t)) if !mutable && self.rename_last_let(&t, name) => Ok(()),
            // `let mut c = v.scale(2.0);` of a struct, or `let mut h = layer(&w, x);` of a
            // vector that `h = layer(&w2, &h);` may assign again: a copy of what the call
            // returned, whose shadow has its type too, not a float's.
            Val::Op(Operand::Var(t))
                if mutable && self.binds_last_call(&t) && self.call_result_copy(name).is_some() =>
            {
                let kind = self
                    .call_result_copy(name)
                    .unwrap_or(CopyKind::Struct { behind_ref: false });
                let v = self.new_var_unbound(name, VarKind::Buffer);
                self.emit_owned(&v, true, Op::CloneOf(Place::local(t), kind));
                self.bind(name, Binding::Var(v));
                Ok(())
            }
            // `let mut acc = V2::new(0.0, 0.0);` of a struct (its members read, or assigned
            // whole), from a call of constants: a copy of the call's struct, as for a call
            // given values with derivatives, which later assignments may give some.
            Val::Op(Operand::Lit(t))
                if mutable
                    && !self.companion
                    && matches!(self.call_result_copy(name), Some(CopyKind::Struct { .. }))
                    && syn::parse2::<Expr>(t.clone()).is_ok_and(|e| {
                        matches!(strip(&e), Expr::Call(_) | Expr::MethodCall(_))
                    }) =>
            {
                let value = self.inactive_local("value", t, span);
                let v = self.new_var_unbound(name, VarKind::Buffer);
                self.emit_owned(
                    &v,
                    true,
                    Op::CloneOf(Place::local(value), CopyKind::Struct { behind_ref: false }),
                );
                self.bind(name, Binding::Var(v));
                Ok(())
            }
            Val::Op(o) => {
                let kind = o
                    .var()
                    .and_then(|v| self.kinds.get(&v.to_string()).copied())
                    .unwrap_or(VarKind::Scalar);
                let kind = match kind {
                    VarKind::Buffer | VarKind::Value if !mutable => kind,
                    VarKind::Buffer | VarKind::Value => VarKind::Buffer,
                    _ => VarKind::Scalar,
                };
                let v = self.new_var_unbound(name, kind);
                let constant = !mutable && matches!(o, Operand::Lit(_));
                if constant || o.var().is_some_and(|s| self.holds_constant(s)) {
                    // A constant, or a copy of a reference to one.
                    self.inert_params.insert(v.to_string());
                }
                let op = match o {
                    Operand::Lit(t) => Op::Inactive(t),
                    o => Op::Use(o),
                };
                self.emit(Stmt::Let {
                    var: v.clone(),
                    mutable,
                    op,
                });
                self.bind(name, Binding::Var(v));
                Ok(())
            }
        }
    }

    /// What each name in `e` is bound to here, in order (the local it names, or nothing).
    fn names_meaning(&self, e: &Expr) -> Vec<String> {
        let mut out = Vec::new();
        walk_idents(&e.to_token_stream(), &mut |id| {
            out.push(match self.lookup(&id.to_string()) {
                Some(Binding::Var(v)) => v.to_string(),
                Some(Binding::Alias(p, _) | Binding::Member(p)) => p.primal().to_string(),
                Some(Binding::Cursor(c)) => c.place().primal().to_string(),
                Some(Binding::Tuple(items)) => format!("{items:?}"),
                Some(Binding::Closure(c)) => format!("{:p}", Rc::as_ptr(c)),
                Some(Binding::Iter(c, _)) => format!("{:p}", Rc::as_ptr(c)),
                None => String::new(),
            })
        });
        out
    }

    /// The local vector, array or matrix `&mut v` lends whole to `std::mem::swap`: a
    /// buffer the function owns (not a struct with buffers, a parameter or a slice of
    /// another).
    fn swapped_buffer(&self, e: &Expr) -> Option<Ident> {
        let Expr::Reference(r) = strip(e) else {
            return None;
        };
        r.mutability?;
        let Expr::Path(p) = strip(&r.expr) else {
            return None;
        };
        let id = p.path.get_ident()?.to_string();
        let Some(Binding::Var(v)) = self.lookup(&id) else {
            return None;
        };
        let name = v.to_string();
        (self.kinds.get(&name) == Some(&VarKind::Buffer)
            && !self.structs_with_buffers.contains(&name))
        .then(|| v.clone())
    }

    /// `let name = copy of p;` for a whole float buffer `p`.
    fn bind_copy(&mut self, name: &Ident, mutable: bool, p: Place) {
        let v = self.copy_of_place(name, mutable, p);
        self.bind(name, Binding::Var(v));
    }

    /// A local `name` holding a copy of `p`. A row of a parameter of rows (`ctrl[i]` of
    /// `ctrl: &[[f64; 2]]`) is an array of its own, which a push onto a vector of
    /// arrays copies (see `array_locals`).
    fn copy_of_place(&mut self, name: &Ident, mutable: bool, p: Place) -> Ident {
        let v = self.new_var_unbound(name, VarKind::Buffer);
        let kind = self.copy_kind(&p);
        if kind == CopyKind::SameType && self.row_params.contains(&p.base.to_string()) {
            self.array_locals.insert(v.to_string());
        }
        // A copy of a whole local matrix (`let c = m;`) holds rows too.
        if p.is_whole() && self.matrix_vars.contains(&p.base.to_string()) {
            self.matrix_vars.insert(v.to_string());
        }
        self.emit_owned(&v, mutable, Op::CloneOf(p, kind));
        v
    }

    /// A local holding a copy of `src` (`x.clone()`, `x.to_vec()` as a value). The copy of
    /// a struct with buffers (`with_buffers`) is one too, bound `let mut`, and
    /// `let mut s2 = st.clone();` names it (see `bind_let`).
    fn bound_copy(&mut self, src: Place, kind: CopyKind, with_buffers: bool, span: Span) -> Val {
        let var = self.fresh("copy", span);
        self.kinds.insert(var.to_string(), VarKind::Buffer);
        if with_buffers {
            self.structs_with_buffers.insert(var.to_string());
        }
        self.emit(Stmt::Let {
            var: var.clone(),
            mutable: with_buffers,
            op: Op::CloneOf(src, kind),
        });
        Val::Place(Place::local(var), false)
    }

    /// Whether the last statement binds `t` to a call's result.
    fn binds_last_call(&self, t: &Ident) -> bool {
        matches!(self.out.last().and_then(|b| b.last()),
            Some(Stmt::Let { var, op: Op::Call(_), .. }) if var == t)
    }

    /// When the last statement defines the temporary `t`, names it after the user's
    /// binding instead of copying it.
    fn rename_last_let(&mut self, t: &Ident, name: &Ident) -> bool {
        let Some(Stmt::Let {
            var,
            mutable: false,
            ..
        }) = self.out.last().and_then(|b| b.last())
        else {
            return false;
        };
        if var != t || self.renamable.take().as_ref() != Some(t) {
            return false;
        }
        let v = self.fresh(&name.to_string(), name.span());
        let kind = self
            .kinds
            .get(&t.to_string())
            .copied()
            .unwrap_or(VarKind::Scalar);
        self.kinds.insert(v.to_string(), kind);
        if let Some(Stmt::Let { var, .. }) = self.out.last_mut().and_then(|b| b.last_mut()) {
            *var = v.clone();
        }
        for held in self.loads.values_mut() {
            if held == t {
                *held = v.clone();
            }
        }
        self.bind(name, Binding::Var(v));
        true
    }

    /// An iterator written as a chain of adapters (`x.iter().map(..)`), not yet consumed.
    /// (A `move` closure in it would keep copies of what it captures, which reading the
    /// chain again where it is consumed would not see.)
    fn is_iterator_chain(&self, e: &Expr) -> bool {
        let mut moves = false;
        walk_idents(&e.to_token_stream(), &mut |id| moves |= id == "move");
        !moves && matches!(strip(e), Expr::MethodCall(_)) && self.is_iterator(e)
    }

    /// Whether `e` is an iterator: adapters over a collection's `iter()` (or `chunks`,
    /// `windows`, ..), over a range, over `std::iter` or `zip(..)`, or over an iterator
    /// bound before. A method that shares an adapter's name (a struct's `take(&mut self,
    /// ..)`) is a call whose result is kept, not a chain read again where it is used.
    fn is_iterator(&self, e: &Expr) -> bool {
        match strip(e) {
            Expr::MethodCall(m) => match m.method.to_string().as_str() {
                "iter" | "iter_mut" | "into_iter" | "chunks" | "chunks_exact" | "windows" => true,
                name => is_chain_adapter(name) && self.is_iterator(&m.receiver),
            },
            Expr::Range(_) => true,
            Expr::Call(c) => matches!(&*c.func, Expr::Path(p) if {
                let names = path_names(&p.path);
                names.iter().any(|n| n == "iter") || names.last().is_some_and(|n| n == "zip")
            }),
            Expr::Path(p) => p
                .path
                .get_ident()
                .is_some_and(|id| matches!(self.lookup(&id.to_string()), Some(Binding::Iter(..)))),
            _ => false,
        }
    }

    /// Copies of the scalar locals that `body` mentions, bound under their names.
    fn snapshot_captures(&mut self, body: &Expr) -> HashMap<String, Binding> {
        let mut names = Vec::new();
        walk_idents(&body.to_token_stream(), &mut |id| {
            names.push(id.to_string())
        });
        let mut layer = HashMap::default();
        for name in names {
            if layer.contains_key(&name) {
                continue;
            }
            if let Some(Binding::Var(v)) = self.lookup(&name).cloned()
                && matches!(self.kinds.get(&v.to_string()), Some(VarKind::Scalar))
            {
                let copy = self.temp(v.span());
                self.emit(Stmt::Let {
                    var: copy.clone(),
                    mutable: false,
                    op: Op::Use(Operand::Var(v)),
                });
                layer.insert(name, Binding::Var(copy));
                continue;
            }
            if let Some(Binding::Cursor(c)) = self.lookup(&name).cloned() {
                let frozen = self.frozen_cursor(&c);
                layer.insert(name, Binding::Cursor(Rc::new(frozen)));
            }
        }
        layer
    }

    /// Binds a pattern to a value passed by reference (an iterator element, a closure
    /// argument): names alias places instead of copying them.
    fn bind_pat_ref(&mut self, pat: &Pat, val: Val) -> Result<()> {
        let saved = std::mem::replace(&mut self.binding_ref, true);
        let r = self.bind_pat(pat, val);
        self.binding_ref = saved;
        r
    }

    /// The `n` items of a tuple value: written in place, the result of a call (split by a
    /// `let (..) = ..;` into temporaries), or a tuple field of a struct parameter (`m.ab`:
    /// its fields, by position).
    fn tuple_items(&mut self, val: Val, n: usize, span: Span) -> Vec<Val> {
        let split = |l: &mut Self, op: Op| -> Vec<Val> {
            let vars: Vec<Ident> = (0..n).map(|_| l.temp(span)).collect();
            l.emit(Stmt::LetTuple {
                vars: vars.clone(),
                op,
            });
            vars.into_iter().map(|v| Val::Op(Operand::Var(v))).collect()
        };
        match val {
            Val::Tuple(items) => items,
            Val::Op(Operand::Var(v)) => split(self, Op::Use(Operand::Var(v))),
            Val::Op(Operand::Lit(t)) => split(self, Op::Inactive(t)),
            Val::Place(p, m) => (0..n)
                .map(|i| {
                    let mut field = p.clone();
                    field.proj.push(Proj::Field(syn::Member::Unnamed(i.into())));
                    Val::Place(field, m)
                })
                .collect(),
        }
    }

    /// Binds a pattern (of a `let`, a closure parameter or a `for`) to a value.
    fn bind_pat(&mut self, pat: &Pat, val: Val) -> Result<()> {
        match pat {
            Pat::Ident(pi) if pi.subpat.is_none() => {
                let span = pi.ident.span();
                self.bind_let(&pi.ident, pi.mutability.is_some(), val, span)
            }
            Pat::Type(pt) => {
                let val = typed_constant(val, &pt.ty);
                self.bind_pat(&pt.pat, val)?;
                // `|a: V2, b: V2| a - b`: the written type says that the value is a
                // struct, whose operators and methods are the user's.
                if let Pat::Ident(pi) = &*pt.pat
                    && self.may_be_struct_type(&pt.ty)
                    && let Some(Binding::Var(v)) = self.lookup(&pi.ident.to_string())
                {
                    self.struct_results.insert(v.to_string());
                }
                Ok(())
            }
            Pat::Paren(pp) => self.bind_pat(&pp.pat, val),
            Pat::Wild(_) => {
                self.discard_value(val);
                Ok(())
            }
            Pat::Reference(r) => {
                let v = match val {
                    // `for &p in ps` of structs, `for &r in rows` of arrays: a name for the
                    // element itself, which the loop cannot change.
                    Val::Place(p, _) if self.is_struct_element(&p) || self.is_row_element(&p) => {
                        if self.binding_ref
                            && let Pat::Ident(pi) = &*r.pat
                            && pi.subpat.is_none()
                            && pi.mutability.is_none()
                            && pi.by_ref.is_none()
                        {
                            self.bind(&pi.ident, Binding::Member(p));
                            return Ok(());
                        }
                        // (Elements by position of `&[a, b, c]`; a copy of `let &p = ..`.)
                        Val::Place(p, false)
                    }
                    // `let &[a, b, c] = v;` of `v: &[f64; 3]`: its elements by position.
                    Val::Place(p, _) if matches!(&*r.pat, Pat::Slice(_)) => Val::Place(p, false),
                    Val::Place(p, _) => Val::Op(self.let_op(Op::Load(p), r.span())),
                    Val::Op(Operand::Var(v)) if self.holds_constant(&v) => {
                        Val::Op(self.let_op(Op::Inactive(quote!(*#v)), r.span()))
                    }
                    other => other,
                };
                self.bind_pat(&r.pat, v)
            }
            Pat::Tuple(t) => {
                let items = self.tuple_items(val, t.elems.len(), pat.span());
                if items.len() != t.elems.len() {
                    return Err(syn::Error::new(
                        pat.span(),
                        "tuple pattern of the wrong length",
                    ));
                }
                for (p, v) in t.elems.iter().zip(items) {
                    self.bind_pat(p, v)?;
                }
                Ok(())
            }
            // `let [a, b] = arr;`: the elements of a float buffer, by position.
            Pat::Slice(s) if !s.elems.iter().any(|p| matches!(p, Pat::Rest(_))) => {
                let (base, m) = match val {
                    Val::Place(base, m) => (base, m),
                    // The array a call returned (`let [a, b] = rhs(y);`).
                    Val::Op(Operand::Var(v))
                        if self.kinds.get(&v.to_string()) == Some(&VarKind::Scalar) =>
                    {
                        (Place::local(v), false)
                    }
                    _ => return unsupported(pat, "this array pattern"),
                };
                for (i, p) in s.elems.iter().enumerate() {
                    let mut place = base.clone();
                    push_index(&mut place, quote!(#i));
                    self.bind_pat(p, Val::Place(place, m))?;
                }
                Ok(())
            }
            _ => unsupported(pat, "this pattern"),
        }
    }

    /// Whether the buffer `e` (`vec![v; n]`, `[v; n]`, nested) is filled with a value
    /// that reads no local (`T::zero()`, `f64::MAX / 2.0`), or, in a companion read back,
    /// with a zero (`__ad::zero_like(&v)`): a constant.
    fn has_constant_fill(&self, e: &Expr) -> bool {
        match strip(e) {
            Expr::Macro(m) if is_vec_macro(&m.mac) => m
                .mac
                .parse_body_with(parse_repeat)
                .is_ok_and(|r| self.has_constant_fill(&r.0)),
            Expr::Repeat(r) => self.has_constant_fill(&r.expr),
            Expr::Call(c) if self.companion && is_zero_like_call(c) => true,
            e => !self.mentions_locals(e),
        }
    }

    /// `Array1::zeros(n)`, `Array2::ones((r, c))`, `Array1::from_elem(n, 0.5)`,
    /// `Array2::eye(n)`, `Array1::linspace(0.0, 1.0, n)`: an
    /// `ndarray` array of the function's own whose elements start as constants, created
    /// as written (its shadow is zeros of the same shape).
    fn is_constant_array_constructor(&self, name: &str, c: &syn::ExprCall) -> bool {
        match name {
            "zeros" | "ones" | "eye" => c.args.len() == 1,
            "from_elem" => c.args.len() == 2 && self.has_constant_fill(&c.args[1]),
            "linspace" => {
                c.args.len() == 3
                    && self.has_constant_fill(&c.args[0])
                    && self.has_constant_fill(&c.args[1])
            }
            _ => false,
        }
    }

    /// `vec![vec![v; c]; r]` with `v` reading locals (`vec![vec![big; m]; n]`,
    /// `vec![vec![x[0]; 2]; 2]`): a matrix of zeros of `v`'s type, then `v` written into
    /// each element, so that each element gets its own derivative.
    fn lower_filled_matrix(&mut self, e: &Expr) -> Result<Option<Ident>> {
        let Some((row, r)) = vec_repeat(e) else {
            return Ok(None);
        };
        let Some((fill, c)) = vec_repeat(strip(&row)) else {
            return Ok(None);
        };
        if self.has_constant_fill(&fill) || matches!(strip(&fill), Expr::Macro(_) | Expr::Repeat(_))
        {
            return Ok(None);
        }
        let span = e.span();
        let v = self.lower_expr(&fill)?;
        let Operand::Var(v) = self.operand(v, fill.span())? else {
            return Ok(None);
        };
        let (r, c) = (self.render(&r), self.render(&c));
        let init = quote!(::std::vec![::std::vec![__ad::zero_like(&#v); #c]; #r]);
        let fill = Ident::new("__ad_fill", span);
        let block: syn::Block = syn::parse_quote_spanned!(span=> {
            for __ad_i in 0..__ad_matrix.len() {
                for __ad_j in 0..__ad_matrix[__ad_i].len() {
                    __ad_matrix[__ad_i][__ad_j] = #fill;
                }
            }
        });
        self.write_matrix("filled", init, vec![(fill, v)], &block, span)
            .map(Some)
    }

    /// A matrix `init` (of zeros), bound to `__ad_matrix` and each of `fills` to its name
    /// while `block` writes it: the matrix, a new local.
    fn write_matrix(
        &mut self,
        name: &str,
        init: TokenStream,
        fills: Vec<(Ident, Ident)>,
        block: &syn::Block,
        span: Span,
    ) -> Result<Ident> {
        let matrix = self.fresh(name, span);
        self.kinds.insert(matrix.to_string(), VarKind::Buffer);
        self.emit(Stmt::Let {
            var: matrix.clone(),
            mutable: true,
            op: Op::NewVec(init),
        });
        self.scopes.push(HashMap::default());
        self.bind(
            &Ident::new("__ad_matrix", span),
            Binding::Var(matrix.clone()),
        );
        for (name, v) in fills {
            self.bind(&name, Binding::Var(v));
        }
        let done = self.lower_stmts(&block.stmts, Tail::Value);
        self.scopes.pop();
        done?;
        Ok(matrix)
    }

    /// `vec![[a, b]; n]` or `vec![vec![a, b]; n]` with elements that read locals
    /// (`vec![[x[0], 1.0]; n]`): a matrix of zeros of the elements' type, then the row's
    /// values, each computed once, written into every row, so that each element gets
    /// its own derivative.
    fn lower_repeated_row(&mut self, e: &Expr) -> Result<Option<Ident>> {
        let Some((row, r)) = vec_repeat(e) else {
            return Ok(None);
        };
        // (A row that repeats one value, `vec![[x[0]; 2]; 3]`, is that value written out.)
        let written_out = || repeated_row(&row).filter(|(items, _)| items.len() <= 64);
        let Some((items, inner_vec)) = literal_items(&row).or_else(written_out) else {
            return Ok(None);
        };
        if items.is_empty()
            || self.has_constant_fill(&row)
            || (items.iter()).any(|c| matches!(strip(c), Expr::Array(_) | Expr::Macro(_)))
        {
            return Ok(None);
        }
        let span = e.span();
        let mut fills = Vec::new();
        for c in &items {
            let v = self.lower_expr(c)?;
            let fill = match self.operand(v, c.span())? {
                Operand::Var(v) => v,
                lit => match self.let_op(Op::Use(lit), c.span()) {
                    Operand::Var(v) => v,
                    Operand::Lit(_) => return Ok(None),
                },
            };
            fills.push(fill);
        }
        let (first, cols, r) = (&fills[0], fills.len(), self.render(&r));
        let init = if inner_vec {
            quote!(::std::vec![::std::vec![__ad::zero_like(&#first); #cols]; #r])
        } else {
            quote!(::std::vec![[__ad::zero_like(&#first); #cols]; #r])
        };
        let names: Vec<Ident> = (0..fills.len())
            .map(|j| format_ident!("__ad_fill{}", j, span = span))
            .collect();
        let writes = (names.iter().enumerate())
            .map(|(j, name)| quote_spanned!(span=> __ad_matrix[__ad_i][#j] = #name;));
        let block: syn::Block = syn::parse_quote_spanned!(span=> {
            for __ad_i in 0..__ad_matrix.len() {
                #(#writes)*
            }
        });
        let fills = names.into_iter().zip(fills).collect();
        self.write_matrix("rows", init, fills, &block, span)
            .map(Some)
    }

    /// A matrix written out row by row, `[[a, b], [c, d]]` or `vec![vec![a, b], vec![c,
    /// d]]` (rectangular), with elements that read locals: a matrix of zeros of the
    /// elements' type, then each element written in order.
    fn lower_matrix_literal(&mut self, e: &Expr) -> Result<Option<Ident>> {
        let Some((rows, is_vec)) = literal_items(e) else {
            return Ok(None);
        };
        // Rows of the same kind: `vec!`s in a `vec!`, arrays in an array or in a `vec!`. A
        // row of a constant repeated (`[0.0; 2]`) is that constant written out.
        let mut cells: Vec<Vec<Expr>> = Vec::new();
        let mut rows_vec = None;
        for r in &rows {
            let row = literal_items(r).or_else(|| {
                repeated_row(r).filter(|(items, _)| !items.iter().any(|c| self.mentions_locals(c)))
            });
            match row {
                Some((items, v))
                    if (is_vec || !v) && *rows_vec.get_or_insert(v) == v && !items.is_empty() =>
                {
                    cells.push(items)
                }
                _ => return Ok(None),
            }
        }
        let cols = cells.first().map_or(0, Vec::len);
        if cols == 0 || cells.iter().any(|r| r.len() != cols) {
            return Ok(None);
        }
        let span = e.span();
        let matrix = self.fresh("matrix", span);
        self.kinds.insert(matrix.to_string(), VarKind::Buffer);
        if cells.iter().flatten().all(|c| !self.mentions_locals(c)) {
            // Constants: created as written.
            let init = self.render(e);
            self.emit(Stmt::Let {
                var: matrix.clone(),
                mutable: true,
                op: Op::NewVec(init),
            });
            return Ok(Some(matrix));
        }
        let mut ops = Vec::new();
        for c in cells.iter().flatten() {
            let v = self.lower_expr(c)?;
            ops.push(self.operand(v, c.span())?);
        }
        let Some(first) = ops.iter().find_map(Operand::var).cloned() else {
            return Ok(None);
        };
        let n = rows.len();
        let init = match (is_vec, rows_vec == Some(true)) {
            (true, true) => quote!(::std::vec![::std::vec![__ad::zero_like(&#first); #cols]; #n]),
            (true, false) => quote!(::std::vec![[__ad::zero_like(&#first); #cols]; #n]),
            _ => quote!([[__ad::zero_like(&#first); #cols]; #n]),
        };
        self.emit(Stmt::Let {
            var: matrix.clone(),
            mutable: true,
            op: Op::NewVec(init),
        });
        for (k, val) in ops.into_iter().enumerate() {
            let (i, j) = (k / cols, k % cols);
            let mut place = Place::local(matrix.clone());
            push_index(&mut place, quote!(#i));
            push_index(&mut place, quote!(#j));
            self.emit(Stmt::Assign {
                place,
                kind: AssignKind::Set,
                val,
            });
        }
        Ok(Some(matrix))
    }

    /// Initialisers that create an owned buffer, or a struct. A braced struct of constants
    /// is a struct value too (its methods may be given values that carry derivatives, and
    /// a `let mut` one's members may be); a tuple struct of constants is kept as written
    /// unless `mutable` (it may be an enum variant, which a `match` reads).
    fn buffer_init(&mut self, e: &Expr, mutable: bool) -> Result<Option<Op>> {
        // `let r = w.row(i);` of a matrix parameter: a copy of the row; `let y = w.dot(x);`
        // the product, a vector of the rows' products.
        if !self.companion {
            if let Some(line) = self.array_line(e) {
                let copy = self.line_copy(&line, e.span());
                return self.buffer_init(&copy, mutable);
            }
            if let Expr::MethodCall(m) = strip(e)
                && let Some(product) = self.matrix_vector_product(m)
            {
                return self.buffer_init(&product, mutable);
            }
        }
        match e {
            // `vec![..]`, or `::std::vec![..]` as generated companions write it.
            Expr::Macro(m)
                if m.mac.path.is_ident("vec")
                    || (self.companion && path_names(&m.mac.path) == ["std", "vec"]) =>
            {
                if let Ok(r) = m.mac.parse_body_with(parse_repeat) {
                    // `vec![vec![0.0; m]; n]`: a buffer of buffers of a constant, created
                    // as written (its shadow is zeros of the same shape).
                    if is_buffer_literal(&r.0) && self.has_constant_fill(&r.0) {
                        return Ok(Some(Op::NewVec(self.render(e))));
                    }
                    let v = self.lower_expr(&r.0)?;
                    let v = self.operand(v, r.0.span())?;
                    let n = self.render(&r.1);
                    return Ok(Some(Op::VecRepeat(v, n)));
                }
                let items = m.mac.parse_body_with(
                    syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated,
                )?;
                refuse_tuple_items(items.iter())?;
                self.refuse_struct_items(items.iter())?;
                let mut ops = Vec::new();
                for it in &items {
                    let v = self.lower_expr(it)?;
                    ops.push(self.operand(v, it.span())?);
                }
                Ok(Some(Op::ArrLit(ops, true)))
            }
            // `[[0.0; 3]; 3]`: an array of arrays of a constant, created as written.
            Expr::Repeat(r) if is_buffer_literal(&r.expr) && self.has_constant_fill(e) => {
                Ok(Some(Op::NewVec(self.render(e))))
            }
            Expr::Repeat(r) => {
                let v = self.lower_expr(&r.expr)?;
                let v = self.operand(v, r.span())?;
                let n = self.render(&r.len);
                Ok(Some(Op::ArrRepeat(v, n)))
            }
            Expr::Array(a) => {
                refuse_tuple_items(a.elems.iter())?;
                self.refuse_struct_items(a.elems.iter())?;
                let mut ops = Vec::new();
                for it in &a.elems {
                    let v = self.lower_expr(it)?;
                    ops.push(self.operand(v, it.span())?);
                }
                Ok(Some(Op::ArrLit(ops, false)))
            }
            Expr::Struct(s) => self.lower_struct(s, true),
            // `let cpu = CpuBackend;`: a struct without members, whose methods called for
            // their effect go through their derivatives, as a literal's do.
            Expr::Path(p) if self.is_unit_struct(p) => {
                self.struct_members(&p.path, Vec::new(), true)
            }
            Expr::Call(c) if is_tuple_struct_call(c) => self.lower_tuple_struct(c, mutable),
            // `<[_]>::to_vec(&x)`: a copy, as generated code writes it.
            Expr::Call(c)
                if self.companion
                    && c.args.len() == 1
                    && matches!(&*c.func, Expr::Path(p) if p.qself.is_some()
                        && p.path.segments.last().is_some_and(|s| s.ident == "to_vec")) =>
            {
                let place = self.lower_place(strip_full_range(strip_ref(&c.args[0])))?;
                Ok(Some(Op::CloneOf(place, CopyKind::ToVec)))
            }
            // `__ad::copy_of(&y)`, a copy bound as it is (`let mut z = y.clone();` lowered
            // again), not moved out of a temporary whose adjoint is declared later.
            Expr::Call(c)
                if self.companion
                    && c.args.len() == 1
                    && matches!(&*c.func, Expr::Path(p)
                        if path_names(&p.path) == ["__ad", "copy_of"]) =>
            {
                let place = self.lower_place(strip_ref(&c.args[0]))?;
                Ok(Some(Op::CloneOf(place, CopyKind::SameType)))
            }
            Expr::Call(c) => {
                if let Expr::Path(p) = &*c.func {
                    let segs = path_names(&p.path);
                    let tape = self.companion
                        && segs.len() == 3
                        && segs[0] == "__ad"
                        && matches!(
                            segs[1].as_str(),
                            "Slot" | "Stack" | "Tape" | "SavedSlices" | "DeadStore"
                        );
                    let zero_buffer = self.companion
                        && segs.len() == 2
                        && segs[0] == "__ad"
                        && segs[1] == "zero_like"
                        && c.args.len() == 1
                        && self.names_buffer(&c.args[0]);
                    if segs.len() >= 2
                        && crate::builtins::is_ndarray_type_name(&segs[segs.len() - 2])
                    {
                        if self.is_constant_array_constructor(&segs[segs.len() - 1], c) {
                            return Ok(Some(Op::NewVec(self.render(e))));
                        }
                        return unsupported(
                            e,
                            "an `ndarray` array created in the function other than by `zeros`, `ones`, `from_elem`, `array![..]`, `Array1::from_vec(v)` (or `from`) or `Array2::from_shape_vec((r, c), v).unwrap()` bound by `let` (make it with `Array1::zeros(n)` and write its elements by index)",
                        );
                    }
                    if tape
                        || zero_buffer
                        || (segs.len() >= 2
                            && segs[segs.len() - 2] == "Vec"
                            && (segs[segs.len() - 1] == "new"
                                || segs[segs.len() - 1] == "with_capacity"))
                    {
                        let toks = self.render(e);
                        return Ok(Some(Op::NewVec(toks)));
                    }
                }
                Ok(None)
            }
            // `a.row(i).to_owned()`: an `ndarray` array of the function's own.
            Expr::MethodCall(m)
                if m.method == "to_owned" && self.array_line(&m.receiver).is_some() =>
            {
                unsupported(
                    e,
                    "an `ndarray` array created in the function (`.to_owned()` of a row or a column; arrays are supported as parameters, and `.to_vec()` gives a `Vec` that a callee taking `&[f64]` reads)",
                )
            }
            Expr::MethodCall(m)
                if matches!(
                    m.method.to_string().as_str(),
                    "to_vec" | "clone" | "to_owned"
                ) =>
            {
                if self.array_param(&m.receiver).is_some() {
                    return unsupported(
                        m,
                        &if m.method == "to_vec" {
                            "`.to_vec()` of an `ndarray` array (copy its elements by index into a `Vec`, or bind a copy of the array, `let c = h.clone();`)".to_string()
                        } else {
                            format!(
                                "`.{}()` of an `ndarray` array here (bind the copy first, `let c = h.clone();`)",
                                m.method
                            )
                        },
                    );
                }
                let recv = self.lower_expr(&m.receiver)?;
                match recv {
                    // A copy of a whole struct (or matrix of rows) would need a shadow
                    // built field by field.
                    Val::Place(p, _) if self.is_struct_ref(&p) => {
                        let what = m.receiver.to_token_stream().to_string();
                        unsupported(
                            m,
                            &format!(
                                "copying `{what}` (a struct or a matrix of rows) with `.{}()`",
                                m.method
                            ),
                        )
                    }
                    Val::Place(p, _) if m.method == "to_vec" => {
                        Ok(Some(Op::CloneOf(p, CopyKind::ToVec)))
                    }
                    // A copy of a struct a constant call returned, bound by `let`: not a
                    // buffer (see the same in `lower_method_call`).
                    Val::Place(p, _) if p.is_whole() && self.is_struct_copy(&p.base) => Ok(None),
                    // A clone keeps the type; so does any copy of a row of a matrix.
                    Val::Place(p, _) if !is_scalar_place(&p, self) || self.is_row(&p) => {
                        let kind = self.copy_kind(&p);
                        Ok(Some(Op::CloneOf(p, kind)))
                    }
                    // A field of a struct (`m.h.to_vec()`, `m.h.clone()`): the field of a
                    // float is `Copy` and is not cloned in idiomatic code, so a copy is of
                    // a buffer.
                    Val::Place(p, _) if matches!(p.proj.last(), Some(Proj::Field(_))) => {
                        Ok(Some(Op::CloneOf(p, CopyKind::ToVec)))
                    }
                    _ => Ok(None),
                }
            }
            Expr::MethodCall(m) if m.method == "collect" => {
                let Some(chain) = self.parse_chain(&m.receiver)? else {
                    return Ok(None);
                };
                let v = self.lower_collect(chain, e.span())?;
                Ok(Some(Op::Use(v)))
            }
            _ => Ok(None),
        }
    }

    // ---------------------------------------------------------------- statements

    fn lower_expr_stmt(&mut self, e: &Expr) -> Result<()> {
        let e = strip(e);
        if !self.companion
            && let Some(write) = self.mapped_in_place(e)?
        {
            return self.lower_stmt(&write);
        }
        // `h += &b;`, `h = &h * 0.5 + &g;` of a whole array: element by element.
        if !self.companion && self.lower_array_update(e)? {
            return Ok(());
        }
        if let Some(calls) = self.struct_operators_as_calls(e) {
            return self.lower_expr_stmt(&calls);
        }
        // A write through a constant reference parameter (`*count += 1` of a `&mut usize`,
        // `*clipped = true`): no derivative, kept as written.
        let written = match e {
            Expr::Assign(a) => Some(&a.left),
            Expr::Binary(b) if is_compound(&b.op) => Some(&b.left),
            _ => None,
        };
        if written.is_some_and(|left| self.writes_constant_ref(left)) {
            let toks = self.render(e);
            self.emit(Stmt::Inactive(quote!(#toks;)));
            return Ok(());
        }
        if let Some(plain) = self.companion.then(|| plain_store_access(e)).flatten() {
            return self.lower_expr_stmt(&plain);
        }
        match e {
            // `drop(sync(k));`: the call, made for its effect.
            Expr::Call(c)
                if c.args.len() == 1
                    && matches!(strip(&c.args[0]), Expr::Call(_) | Expr::MethodCall(_))
                    && matches!(&*c.func, Expr::Path(p) if matches!(
                        path_names(&p.path).iter().map(String::as_str).collect::<Vec<_>>()[..],
                        ["drop"] | ["std" | "core", "mem", "drop"] | ["mem", "drop"]
                    )) =>
            {
                self.lower_expr_stmt(&c.args[0])
            }
            // `(a, b) = (b, a);` of slice cursors: each value named first, then each
            // cursor pointed at its value.
            Expr::Assign(a) if let Some(block) = self.cursors_assigned_together(a) => {
                self.lower_scoped(&block).map(|_| ())
            }
            Expr::Assign(a) if matches!(strip(&a.left), Expr::Tuple(_) | Expr::Array(_)) => {
                // `[a, b] = [b, a];`: the array written on the right, element by element.
                let v = match strip(&a.right) {
                    Expr::Array(r) if matches!(strip(&a.left), Expr::Array(_)) => Val::Tuple(
                        r.elems
                            .iter()
                            .map(|e| self.lower_expr(e))
                            .collect::<Result<_>>()?,
                    ),
                    _ => self.lower_expr(&a.right)?,
                };
                self.assign_destructured(&a.left, v, a.right.span())
            }
            // `acc = (a, b);` of a `let mut` tuple: its elements' locals written.
            Expr::Assign(a) if self.mutable_tuple_slots(&a.left).is_some() => {
                let v = self.lower_expr(&a.right)?;
                self.assign_destructured(&a.left, v, a.right.span())
            }
            // `k = bucket(x[0]);`, `k += bucket(x[1]);` of a `let mut k: usize`: an integer.
            Expr::Assign(a)
                if self.names_integer_local(&a.left)
                    && let Some(kept) = self.integer_valued(&a.right) =>
            {
                let mut written = a.clone();
                *written.right = kept;
                self.lower_expr_stmt(&Expr::Assign(written))
            }
            Expr::Binary(b)
                if is_compound(&b.op)
                    && self.names_integer_local(&b.left)
                    && let Some(kept) = self.integer_valued(&b.right) =>
            {
                let mut written = b.clone();
                *written.right = kept;
                self.lower_expr_stmt(&Expr::Binary(written))
            }
            Expr::Assign(a) if self.assign_struct(a)? => Ok(()),
            Expr::Assign(a) if self.assign_slice_cursor(a)? => Ok(()),
            Expr::Assign(a) if self.assign_row(a)? => Ok(()),
            // `v = Vec::new();` of a local vector empties it, as `v.clear()` does.
            Expr::Assign(a) if is_empty_vec(&a.right) && self.is_local_buffer_expr(&a.left)? => {
                let left = &a.left;
                self.lower_resize(&syn::parse_quote_spanned!(a.span()=> #left.clear()))
            }
            Expr::Assign(a)
                if self.is_local_matrix(&a.left) || self.derefs_row_param(&a.left).is_some() =>
            {
                // A whole local matrix assigned again (`p = [[..], [..]];`, `p = q;`), or a
                // matrix written whole through a `&mut` parameter (`*out = t;` of `out: &mut
                // [[f64; 2]; 2]`): the new rows, all read first, then copied row by row.
                let left = match self.derefs_row_param(&a.left) {
                    Some(param) => syn::parse_quote!(#param),
                    None => (*a.left).clone(),
                };
                let (left, right) = (&left, &a.right);
                let block: syn::Block = if self.is_local_matrix(right) {
                    // (Another matrix: its rows are copied from where they are.)
                    syn::parse_quote_spanned!(a.span()=> {
                        for __ad_r in 0..__ad::same_row_count(#left.len(), #right.len()) {
                            #left[__ad_r] = #right[__ad_r];
                        }
                    })
                } else {
                    // (A number of rows that differs would leave rows of the old matrix,
                    // or write past its end: checked.)
                    syn::parse_quote_spanned!(a.span()=> {
                        let __ad_rows = #right;
                        for __ad_r in 0..__ad::same_row_count(#left.len(), __ad_rows.len()) {
                            #left[__ad_r] = __ad_rows[__ad_r];
                        }
                    })
                };
                self.lower_scoped(&block).map(|_| ())
            }
            // `*r = [a, b];` or `*r = v;` through a `&mut` array parameter: its elements
            // assigned, every value computed first.
            // `*g = G { x: 0.0, y: a };` through a `&mut` struct parameter: each member
            // assigned, every value computed first (a literal names them all).
            Expr::Assign(a)
                if self.derefs_struct_param(&a.left)
                    && matches!(strip(&a.right), Expr::Struct(l) if l.rest.is_none()) =>
            {
                let (Expr::Unary(u), Expr::Struct(lit)) = (strip(&a.left), strip(&a.right)) else {
                    unreachable!("checked above")
                };
                let target = &u.expr;
                let members: Vec<&syn::Member> = lit.fields.iter().map(|f| &f.member).collect();
                let names: Vec<Ident> = (0..members.len())
                    .map(|i| format_ident!("__ad_member{}", i))
                    .collect();
                let values = lit.fields.iter().map(|f| &f.expr);
                let block: syn::Block = syn::parse_quote_spanned!(a.span()=> {
                    #(let #names = #values;)*
                    #(#target.#members = #names;)*
                });
                self.lower_scoped(&block).map(|_| ())
            }
            // `s.w = s.hist.clone();` of members of struct parameters: a copy of the
            // values, as `to_vec()` makes.
            Expr::Assign(a)
                if matches!(strip(&a.right), Expr::MethodCall(m)
                    if m.method == "clone" && m.args.is_empty() && matches!(strip(&m.receiver), Expr::Field(_)))
                    && self.is_struct_param_member_expr(&a.left)?
                    && self.is_struct_param_member_expr(match strip(&a.right) {
                        Expr::MethodCall(m) => &m.receiver,
                        _ => unreachable!("checked above"),
                    })? =>
            {
                let (left, Expr::MethodCall(m)) = (&a.left, strip(&a.right)) else {
                    unreachable!("checked above")
                };
                let src = &m.receiver;
                let e: Expr = syn::parse_quote_spanned!(a.span()=> #left = #src.to_vec());
                self.lower_expr_stmt(&e)
            }
            // `s.hist = Vec::new();` of a member of a struct parameter: emptied.
            Expr::Assign(a)
                if is_new_empty_vec(&a.right) && self.is_struct_param_member_expr(&a.left)? =>
            {
                let left = &a.left;
                let block: syn::Block = syn::parse_quote_spanned!(a.span()=> { #left.clear(); });
                self.lower_scoped(&block).map(|_| ())
            }
            // `h = if last { z } else { relu(&z) };` of a whole local vector: assigned in
            // each branch, where a copy gives `h` the length of the value.
            Expr::Assign(a)
                if (matches!(strip(&a.right), Expr::If(i) if i.else_branch.is_some())
                    || matches!(strip(&a.right), Expr::Match(_)))
                    && self.is_local_buffer_expr(&a.left)? =>
            {
                self.lower_expr_stmt(&assigned_in_branches(&a.left, strip(&a.right)))
            }
            Expr::Assign(a) if self.derefs_buffer_param(&a.left) => {
                let Expr::Unary(u) = strip(&a.left) else {
                    unreachable!("checked by `derefs_buffer_param`")
                };
                let target = &u.expr;
                let block: syn::Block = match strip(&a.right) {
                    Expr::Array(arr) => {
                        let names: Vec<Ident> = (0..arr.elems.len())
                            .map(|i| format_ident!("__ad_elem{}", i))
                            .collect();
                        let elems = arr.elems.iter();
                        let idx = 0..arr.elems.len();
                        syn::parse_quote_spanned!(a.span()=> {
                            #(let #names = #elems;)*
                            #(#target[#idx] = #names;)*
                        })
                    }
                    right => syn::parse_quote_spanned!(a.span()=> {
                        #target.copy_from_slice(&#right);
                    }),
                };
                self.lower_scoped(&block).map(|_| ())
            }
            Expr::Assign(a) => {
                let place = self.lower_place(&a.left)?;
                let v = self.lower_expr(&a.right)?;
                // `h = out;` between whole local buffers (a network's layers): a copy that
                // gives `h` the length of `out`.
                let whole_buffer = |l: &Self, p: &Place| {
                    p.is_whole()
                        && matches!(l.kinds.get(&p.base.to_string()), Some(VarKind::Buffer))
                };
                // `acc = acc.add(&v);` of a call's struct copied with `let mut`: the
                // struct assigned whole.
                // (Or a copy of an element of a slice of structs, `best = ps[i];`, and an
                // element written whole, `ps[i] = p;`.)
                let element_written = self.is_struct_element(&place)
                    && matches!(&v, Val::Place(p, _)
                        if self.is_struct_element(p)
                            || (p.is_whole() && self.is_struct_copy(&p.base)));
                if !self.companion
                    && (element_written || (place.is_whole() && self.is_struct_copy(&place.base)))
                {
                    let src = match v {
                        // (An element assigned to an element is copied first: both places
                        // borrow the one slice.)
                        Val::Place(p, _) if element_written && !p.is_whole() => {
                            match self.let_op(
                                Op::CloneOf(p, CopyKind::Struct { behind_ref: false }),
                                a.right.span(),
                            ) {
                                Operand::Var(o) => {
                                    self.kinds.insert(o.to_string(), VarKind::Value);
                                    Place::local(o)
                                }
                                Operand::Lit(_) => unreachable!("`let_op` binds a local"),
                            }
                        }
                        Val::Place(p, _) if p.is_whole() || self.is_struct_element(&p) => p,
                        v => match self.operand(v, a.right.span())? {
                            Operand::Var(o) => Place::local(o),
                            _ => return unsupported(a, "assigning this value to a struct"),
                        },
                    };
                    self.emit(Stmt::CopyFrom {
                        dst: place,
                        src,
                        mode: CopyMode::Struct { behind_ref: false },
                    });
                    return Ok(());
                }
                // (Or the vector or array a call returned: `h = layer(&w, &h);`.)
                let returned = matches!(&v, Val::Op(Operand::Var(o))
                    if !self.companion
                        && self.kinds.get(&o.to_string()).is_none_or(|k| *k == VarKind::Scalar));
                if whole_buffer(self, &place) {
                    let src = match &v {
                        Val::Place(p, _) => Some(p.clone()),
                        Val::Op(Operand::Var(o)) => Some(Place::local(o.clone())),
                        _ => None,
                    };
                    if let Some(src) = src.filter(|s| whole_buffer(self, s) || returned) {
                        if [&place, &src].iter().any(|p| self.is_whole_array(p)) {
                            return unsupported(
                                a,
                                "assigning a whole `ndarray` array (write its elements by index)",
                            );
                        }
                        self.emit(Stmt::CopyFrom {
                            dst: place,
                            src,
                            mode: CopyMode::Resized,
                        });
                        return Ok(());
                    }
                }
                // `s.w = v;` of a whole local buffer (`x.to_vec()`, a vector built in the
                // function) to a member of a struct parameter (or of a struct built in the
                // function): a copy that gives the member `v`'s length, as between local
                // buffers.
                if self.is_struct_param_member(&place) || self.is_local_struct_member(&place) {
                    let src = match &v {
                        Val::Place(p, _) => Some(p.clone()),
                        Val::Op(Operand::Var(o)) => Some(Place::local(o.clone())),
                        _ => None,
                    };
                    // (Or the vector a call returned: `s.w = layer(&s.u, a);`, a call that
                    // the function indexes the member after, so not a float's.)
                    let vector_call = returned
                        && matches!(&v, Val::Op(Operand::Var(o)) if self.is_call_result(o))
                        && self.member_indexed_later(&place);
                    if let Some(src) = src.filter(|s| whole_buffer(self, s) || vector_call) {
                        self.emit(Stmt::CopyFrom {
                            dst: place,
                            src,
                            mode: CopyMode::Resized,
                        });
                        return Ok(());
                    }
                }
                let val = self.operand(v, a.right.span())?;
                self.emit(Stmt::Assign {
                    place,
                    kind: AssignKind::Set,
                    val,
                });
                Ok(())
            }
            Expr::Binary(b) if compound_kind(&b.op).is_some() => {
                let kind = compound_kind(&b.op).unwrap();
                // (`acc %= v` of structs: the user's `RemAssign`, see `Expr::Binary`.)
                self.refuse_struct_operands(e, b)?;
                let place = self.lower_place(&b.left)?;
                let v = self.lower_value_operand(&b.right)?;
                let mut val = self.operand(v, b.right.span())?;
                // `y *= y`: the reverse sweep reads the value before the update, which a
                // copy keeps (the local itself then holds the value after).
                if let Operand::Var(v) = &val
                    && place.is_whole()
                    && place.base == *v
                {
                    val = self.let_op(Op::Use(val.clone()), b.right.span());
                }
                self.emit(Stmt::Assign { place, kind, val });
                Ok(())
            }
            // `%=`, `|=`, `<<=`, ..: the assignment of the operation, `a = a % b`.
            Expr::Binary(b) if other_compound_op(&b.op).is_some() => {
                let op = other_compound_op(&b.op).unwrap();
                let (left, right) = (&b.left, &b.right);
                let assign: Expr = syn::parse_quote_spanned!(b.span()=> #left = #left #op (#right));
                self.lower_expr_stmt(&assign)
            }
            Expr::If(i) => self.lower_if(i, false).map(|_| ()),
            Expr::Match(m) => self.lower_match(m, false).map(|_| ()),
            Expr::ForLoop(f) => self.lower_for(f),
            Expr::While(w) => self.lower_while(w),
            Expr::Loop(l) => self.lower_loop_value(l, None).map(|_| ()),
            Expr::Block(b) if b.label.is_some() => {
                self.lower_labelled_block(b, false, None).map(|_| ())
            }
            Expr::Block(b) => {
                self.scopes.push(HashMap::default());
                let r = self.lower_stmts(&b.block.stmts, Tail::Unit);
                self.scopes.pop();
                r.map(|_| ())
            }
            Expr::Return(r) => {
                if self.ret.is_none() {
                    return Err(syn::Error::new(
                        r.span(),
                        "internal: return without control",
                    ));
                }
                let v = match &r.expr {
                    Some(e) => self.lower_expr(e)?,
                    None => Val::Tuple(vec![]),
                };
                self.assign_return(v, r.span())
            }
            Expr::Break(b) => {
                if let Some(value) = &b.expr {
                    let target = self.loop_target(b.label.as_ref(), true, b.span())?;
                    let slots = self.loops[target].vals.clone();
                    if slots.is_empty() {
                        return unsupported(b, "`break` with a value out of this loop");
                    }
                    let v = self.lower_expr(value)?;
                    self.assign_slots(&slots, v)?;
                }
                self.leave_loop(b.label.as_ref(), true, b.span())
            }
            Expr::Continue(c) => self.leave_loop(c.label.as_ref(), false, c.span()),
            Expr::Macro(m) => self.lower_macro_stmt(&m.mac),
            Expr::MethodCall(m) => self.lower_method_stmt(m),
            Expr::Call(_) => {
                self.statement_call = true;
                let v = self.lower_expr(e)?;
                self.discard_value(v);
                Ok(())
            }
            _ => {
                let v = self.lower_expr(e)?;
                let _ = v;
                Ok(())
            }
        }
    }

    fn lower_method_stmt(&mut self, m: &syn::ExprMethodCall) -> Result<()> {
        let name = m.method.to_string();
        match name.as_str() {
            // Capacity only, no value (the tapes of a companion reserve theirs).
            "reserve" if m.args.len() == 1 => {
                let toks = self.render(&Expr::MethodCall(m.clone()));
                self.emit(Stmt::Inactive(quote!(#toks;)));
                Ok(())
            }
            // A companion undoing a `push` in its reverse sweep (`v.pop();`): the value
            // goes, with its tangent.
            "pop" if m.args.is_empty() && self.companion => {
                let place = self.lower_place(&m.receiver)?;
                self.let_op(Op::Pop(place), m.span());
                Ok(())
            }
            // `v.pop();` of a local vector: its last value dropped (see `popped`).
            "pop" if m.args.is_empty() && self.is_local_buffer_expr(&m.receiver)? => {
                let v = &m.receiver;
                let shortened: syn::Stmt = syn::parse_quote_spanned!(m.span()=>
                    #v.truncate(#v.len().saturating_sub(1)););
                self.lower_stmts(&[shortened], Tail::Unit).map(|_| ())
            }
            // A companion saving a buffer in a store of copies (`__ad::SavedSlices`): a
            // copy of it pushed, with its tangent's.
            "save" if m.args.len() == 1 && self.companion => {
                let place = self.lower_place(&m.receiver)?;
                let src = self.lower_place(strip_full_range(strip_ref(&m.args[0])))?;
                let copy = self.let_op(Op::CloneOf(src, CopyKind::ToVec), m.span());
                if let Operand::Var(var) = &copy {
                    self.kinds.insert(var.to_string(), VarKind::Buffer);
                }
                self.emit(Stmt::Push {
                    place,
                    val: copy,
                    copy: false,
                });
                Ok(())
            }
            // (A struct's own `push`, `fill` or `copy_from_slice` is the user's method.)
            "push" if m.args.len() == 1 && !self.is_struct_receiver(&m.receiver) => {
                if !self.companion
                    && let Some(block) = self.push_by_members(&m.receiver, &m.args[0])
                {
                    return self.lower_scoped(&block).map(|_| ());
                }
                if let Expr::Tuple(t) = &m.args[0] {
                    return unsupported(
                        t,
                        "pushing a tuple onto a vector (keep one vector per element of the tuple)",
                    );
                }
                let place = self.lower_place(&m.receiver)?;
                // `qs.push(P2 { .. })` onto `let mut qs = Vec::new();`: a buffer of
                // structs, as `vec![P2 { .. }; n]` is.
                if !self.companion
                    && place.is_whole()
                    && matches!(strip(&m.args[0]), Expr::Struct(_))
                {
                    self.struct_elem_params.insert(place.base.to_string());
                }
                // (Its shadow is the caller's, which the companions reach as a slice.)
                if !self.companion
                    && place.is_whole()
                    && matches!(
                        self.kinds.get(&place.base.to_string()),
                        Some(VarKind::Ref { .. })
                    )
                {
                    return unsupported(
                        m,
                        "`push` onto a `&mut Vec` parameter (return the vector, `-> Vec<f64>`, or give the parameter its final length and write its elements by index)",
                    );
                }
                // `hs.push(::core::clone::Clone::clone(&h))`, as a companion writes the push
                // of a row: differentiated again, the row's tangent is pushed too.
                if self.companion
                    && !is_store(&m.receiver)
                    && let Some(row) = cloned_operand(&m.args[0])
                {
                    let row = match self.lower_expr(row)? {
                        Val::Place(p, _) if p.is_whole() => p.base,
                        Val::Op(Operand::Var(v)) => v,
                        _ => return unsupported(m, "this push of a copy"),
                    };
                    self.push_row(place, row);
                    return Ok(());
                }
                let mut v = self.lower_expr(&m.args[0])?;
                let of_rows =
                    place.is_whole() && self.vector_rows.contains(&place.base.to_string());
                if let Some(row) = self.vector_row(&v, of_rows) {
                    self.push_row(place, row);
                    return Ok(());
                }
                // A row of a parameter of rows (`ps.push(ctrl[i])`): a copy of it.
                if let Val::Place(p, _) = &v
                    && !p.is_whole()
                    && !self.companion
                    && self.row_params.contains(&p.base.to_string())
                    && self.copy_kind(p) == CopyKind::SameType
                {
                    let row = Ident::new("row", m.args[0].span());
                    let copy = self.copy_of_place(&row, false, p.clone());
                    v = Val::Place(Place::local(copy), false);
                }
                // An array literal (`ps.push([a, b])`), or a local bound to one, is a
                // value of fixed size: its adjoint, popped in the reverse sweep, adds into
                // the array's elements.
                let array = matches!(&m.args[0], Expr::Array(_) | Expr::Repeat(_));
                let val = match v {
                    Val::Place(p, _)
                        if p.is_whole()
                            && (array || self.array_locals.contains(&p.base.to_string())) =>
                    {
                        // The vector's elements are rows (swapped or sorted as rows).
                        self.matrix_vars.insert(place.base.to_string());
                        Operand::Var(p.base)
                    }
                    v if array => self.operand(v, m.args[0].span())?,
                    v => self.pushed(v, m.args[0].span())?,
                };
                self.emit(Stmt::Push {
                    place,
                    val,
                    copy: false,
                });
                Ok(())
            }
            "fill" if m.args.len() == 1 && !self.is_struct_receiver(&m.receiver) => {
                let place = self.lower_place(&m.receiver)?;
                if place.is_whole() && self.array_params.contains(&place.base.to_string()) {
                    return unsupported(
                        m,
                        "`fill` of a whole `ndarray` array (write its elements by index)",
                    );
                }
                let v = self.lower_expr(&m.args[0])?;
                let val = self.operand(v, m.args[0].span())?;
                self.emit(Stmt::Fill { place, val });
                Ok(())
            }
            "copy_from_slice" | "clone_from_slice"
                if m.args.len() == 1 && !self.is_struct_receiver(&m.receiver) =>
            {
                let dst = self.lower_place(&m.receiver)?;
                // A companion copies back buffers it saved (`&__ad::take(t.pop())[..]`).
                let arg = if self.companion {
                    strip_full_range(strip_ref(&m.args[0]))
                } else {
                    &m.args[0]
                };
                let src = match self.lower_expr(arg)? {
                    Val::Place(p, _) => p,
                    // A call's array (`*r = rotate(r, p);`, `let q = rotate(..); *r = q;`).
                    Val::Op(Operand::Var(v)) => Place::local(v),
                    _ => return unsupported(&m.args[0], "this source of `copy_from_slice`"),
                };
                self.emit(Stmt::CopyFrom {
                    dst,
                    src,
                    mode: CopyMode::Elements,
                });
                Ok(())
            }
            "swap" | "reverse" | "sort_by" | "sort_unstable_by"
                if m.args.len() == usize::from(name != "reverse") + usize::from(name == "swap")
                    && (self.is_float_buffer_expr(&m.receiver)?
                        || self.is_struct_member_expr(&m.receiver)?) =>
            {
                self.lower_permutation(m)
            }
            // (Of a slice of structs, `swap` and `reverse` move whole elements: copies.)
            "swap" | "reverse"
                if m.args.len() == usize::from(name == "swap") * 2
                    && !self.companion
                    && self.names_element_param(&m.receiver) =>
            {
                self.lower_permutation(m)
            }
            "extend_from_slice" | "extend"
                if m.args.len() == 1
                    && (self.is_float_buffer_expr(&m.receiver)?
                        || self.is_struct_param_member_expr(&m.receiver)?) =>
            {
                self.lower_extend(m)
            }
            "clear" | "truncate" | "resize"
                if m.args.len() == usize::from(name != "clear") + usize::from(name == "resize")
                    && (self.is_local_buffer_expr(&m.receiver)?
                        || self.is_struct_member_expr(&m.receiver)?) =>
            {
                self.lower_resize(m)
            }
            // (Lowered by the guard, which declines other receivers: see `vector_edits`.)
            "retain" | "insert" | "rotate_left" | "rotate_right"
                if self.edited_vector(m)?.is_some() =>
            {
                Ok(())
            }
            "for_each" if m.args.len() == 1 => {
                let Some(chain) = self.parse_chain(&m.receiver)? else {
                    return unsupported(m, "`for_each` on this iterator");
                };
                let f = m.args[0].clone();
                self.lower_chain_loop(chain, m.span(), |l, elem| {
                    l.apply_fn_as(&f, vec![elem], m.span(), true)?;
                    Ok(())
                })
            }
            _ => {
                self.statement_call = true;
                let v = self.lower_expr(&Expr::MethodCall(m.clone()))?;
                self.discard_value(v);
                Ok(())
            }
        }
    }

    /// Whether `e` is a float buffer (a slice, array or `Vec` of floats) or a part of one.
    fn is_float_buffer_expr(&mut self, e: &Expr) -> Result<bool> {
        if self.companion {
            return Ok(false);
        }
        Ok(match self.lower_expr(e)? {
            Val::Place(p, _) => self.is_float_buffer(&p.base),
            _ => false,
        })
    }

    /// `swap`, `reverse` and `sort_by` on a float buffer, as the element assignments that
    /// they amount to. A sort's permutation is computed on the primal values (with the
    /// user's comparison, stably); the elements then move as values do, with their
    /// derivatives.
    fn lower_permutation(&mut self, m: &syn::ExprMethodCall) -> Result<()> {
        let recv = &m.receiver;
        let span = m.span();
        self.scopes.push(HashMap::default());
        let block: syn::Block = match m.method.to_string().as_str() {
            "swap" => {
                let (a, b) = (&m.args[0], &m.args[1]);
                syn::parse_quote_spanned!(span=> {
                    let __ad_swap_i: usize = #a;
                    let __ad_swap_j: usize = #b;
                    let __ad_swap_v = #recv[__ad_swap_i];
                    #recv[__ad_swap_i] = #recv[__ad_swap_j];
                    #recv[__ad_swap_j] = __ad_swap_v;
                })
            }
            "reverse" => syn::parse_quote_spanned!(span=> {
                let __ad_rev_n = #recv.len();
                for __ad_rev_k in 0..__ad_rev_n / 2 {
                    #recv.swap(__ad_rev_k, __ad_rev_n - 1 - __ad_rev_k);
                }
            }),
            _ => {
                let Val::Place(p, _) = self.lower_expr(recv)? else {
                    return unsupported(recv, "sorting this value");
                };
                let (base, cmp) = (p.primal(), self.render(&m.args[0]));
                let perm = self.fresh("perm", span);
                // A buffer (of indices): kept for the reverse sweep as buffers are, by a
                // copy, since the forward sweep goes on reading it.
                self.kinds.insert(perm.to_string(), VarKind::Buffer);
                self.emit(Stmt::Let {
                    var: perm.clone(),
                    mutable: false,
                    op: Op::Inactive(quote!(__ad::sort_permutation(&#base[..], #cmp))),
                });
                // Bound in the scope the statements below are lowered in.
                self.bind(&Ident::new("__ad_perm", span), Binding::Var(perm));
                let copy: syn::Stmt = syn::parse_quote_spanned!(span=>
                    let __ad_sorted = #recv.to_vec();
                );
                self.lower_stmts(&[copy], Tail::Value)?;
                // A buffer of rows (`Vec<[f64; 2]>`) sorts rows: its copy holds rows too,
                // and each is written back whole.
                if self.holds_rows(&p)
                    && let Some(Binding::Var(v)) = self.lookup("__ad_sorted").cloned()
                {
                    self.matrix_vars.insert(v.to_string());
                }
                syn::parse_quote_spanned!(span=> {
                    for __ad_k in 0..__ad_sorted.len() {
                        #recv[__ad_k] = __ad_sorted[__ad_perm[__ad_k]];
                    }
                })
            }
        };
        let r = self.lower_stmts(&block.stmts, Tail::Value);
        self.scopes.pop();
        r.map(|_| ())
    }

    /// Lowers a block written for a construct (its statements, in a scope of their own).
    fn lower_scoped(&mut self, block: &syn::Block) -> Result<Option<Val>> {
        self.scopes.push(HashMap::default());
        let r = self.lower_stmts(&block.stmts, Tail::Value);
        self.scopes.pop();
        r
    }

    /// `v.extend_from_slice(s)` and `v.extend(iter)` on a float buffer, as the `push`es
    /// that they amount to: the elements keep their derivatives.
    fn lower_extend(&mut self, m: &syn::ExprMethodCall) -> Result<()> {
        let (recv, span) = (&m.receiver, m.span());
        let src = match strip(&m.args[0]) {
            // `extend([a, b])`: each value, pushed.
            Expr::Array(a) => {
                let items = a.elems.iter();
                let block: syn::Block = syn::parse_quote_spanned!(span=> {
                    #(#recv.push(#items);)*
                });
                let r = self.lower_scoped(&block);
                return r.map(|_| ());
            }
            // `extend(w.clone())`: the values of `w`, which a copy would hold.
            Expr::MethodCall(c)
                if c.args.is_empty()
                    && matches!(
                        c.method.to_string().as_str(),
                        "clone" | "to_vec" | "to_owned"
                    ) =>
            {
                let w = &c.receiver;
                syn::parse_quote_spanned!(span=> #w.iter())
            }
            e => e.clone(),
        };
        let block: syn::Block = if m.method == "extend" {
            syn::parse_quote_spanned!(span=> {
                for __ad_ext_v in #src {
                    #recv.push(__ad_ext_v);
                }
            })
        } else {
            syn::parse_quote_spanned!(span=> {
                let __ad_ext_src = #src;
                for __ad_ext_k in 0..__ad_ext_src.len() {
                    #recv.push(__ad_ext_src[__ad_ext_k]);
                }
            })
        };
        let r = self.lower_scoped(&block);
        r.map(|_| ())
    }

    /// Whether `e` names a whole local float buffer (a `Vec` built in the function).
    fn is_local_buffer_expr(&mut self, e: &Expr) -> Result<bool> {
        if self.companion {
            return Ok(false);
        }
        Ok(match self.lower_expr(e)? {
            Val::Place(p, _) => self.is_written_buffer(&p),
            _ => false,
        })
    }

    /// Whether a branch of `i` ends in a vector: `x.to_vec()`, `vec![..]`, a collected
    /// iterator, or a local vector (not an array).
    fn has_vector_branch(&self, i: &syn::ExprIf) -> bool {
        let is_local_vector = |e: &Expr| match strip(e) {
            Expr::Path(p) => p.path.get_ident().is_some_and(|id| {
                matches!(self.lookup(&id.to_string()), Some(Binding::Var(v))
                    if self.is_written_buffer(&Place::local(v.clone()))
                        && !self.array_locals.contains(&v.to_string())
                        && !self.matrix_vars.contains(&v.to_string()))
            }),
            _ => false,
        };
        let is_vector = |e: &Expr| match strip(e) {
            Expr::MethodCall(m) => match m.method.to_string().as_str() {
                "to_vec" | "collect" => true,
                "clone" | "to_owned" => is_local_vector(&m.receiver),
                _ => false,
            },
            Expr::Macro(m) => is_vec_macro(&m.mac),
            e => is_local_vector(e),
        };
        let tail = |b: &syn::Block| match b.stmts.last() {
            Some(syn::Stmt::Expr(e, None)) => is_vector(e),
            _ => false,
        };
        tail(&i.then_branch)
            || match i.else_branch.as_ref().map(|(_, e)| &**e) {
                Some(Expr::If(inner)) => self.has_vector_branch(inner),
                Some(Expr::Block(b)) => tail(&b.block),
                _ => false,
            }
    }

    /// `v.clear()`, `v.truncate(n)` and `v.resize(n, value)` on a local vector: the kept
    /// part is copied and assigned back (`h = out;` between vectors, whose reverse sweep
    /// restores the old contents and length), and the added values are pushed.
    fn lower_resize(&mut self, m: &syn::ExprMethodCall) -> Result<()> {
        let (v, span) = (&m.receiver, m.span());
        let shrink = |n: TokenStream| -> TokenStream {
            quote_spanned!(span=> {
                let __ad_kept = #v[..#n].to_vec();
                #v = __ad_kept;
            })
        };
        let block = match m.method.to_string().as_str() {
            "clear" => shrink(quote!(0)),
            "truncate" => {
                let n = &m.args[0];
                let kept = shrink(quote!(__ad_n));
                quote_spanned!(span=> {
                    let __ad_n: usize = #n;
                    if __ad_n < #v.len() #kept
                })
            }
            _ => {
                let (n, value) = (&m.args[0], &m.args[1]);
                let kept = shrink(quote!(__ad_n));
                quote_spanned!(span=> {
                    let __ad_n: usize = #n;
                    let __ad_fill = #value;
                    if __ad_n < #v.len() #kept
                    while #v.len() < __ad_n {
                        #v.push(__ad_fill);
                    }
                })
            }
        };
        let Ok(block) = syn::parse2::<syn::Block>(block) else {
            return unsupported(m, "this resizing of a vector");
        };
        let r = self.lower_scoped(&block);
        r.map(|_| ())
    }

    /// `x.iter().map(..).last()`: a consumer that iterator chains are not read with, named
    /// (rather than the chain it ends).
    fn refuse_unread_consumer(&self, m: &syn::ExprMethodCall) -> Result<()> {
        let name = m.method.to_string();
        if !self.companion
            && matches!(
                name.as_str(),
                "last" | "nth" | "next" | "nth_back" | "next_back"
            )
            && !matches!(strip(&m.receiver), Expr::Range(_))
            && self.is_iterator(&m.receiver)
        {
            return unsupported(
                &m.method,
                &format!(
                    "`.{name}()` of an iterator held in a variable or after an adapter that is not read (iterators are read by `for`, `sum`, `product`, `fold`, `collect`, `for_each` and the searches, and `next`, `nth` and `last` of a chain written in place, `x.iter().map(f).last()`, or of one held in a variable where they take items from it unconditionally before one last statement consumes the rest; index the buffer instead, `x[x.len() - 1]`, or use the buffer's own `x.last()`)"
                ),
            );
        }
        Ok(())
    }

    /// For `x.first()`, `x.last()` or `x.get(i)` of a float buffer: the position it reads,
    /// and the condition that it holds an element.
    fn element_position(&mut self, found: &syn::ExprMethodCall) -> Result<Option<(Expr, Expr)>> {
        let span = found.span();
        let recv = &found.receiver;
        let method = found.method.to_string();
        self.refuse_unread_consumer(found)?;
        let positional = match method.as_str() {
            "first" | "last" => found.args.is_empty(),
            "get" => found.args.len() == 1 && !is_range_expr(&found.args[0]),
            _ => false,
        };
        if !positional {
            return Ok(None);
        }
        // A struct member (`m.w.get(i)`), whose type is not known here: its elements are
        // indexed through `flat_index`, which only buffers implement, so that a member of
        // the user's own type with a `get` of its own is a compile error rather than an
        // element read by index.
        let member = !self.is_float_buffer_expr(recv)? && !self.names_element_param(recv);
        if member && !matches!(strip(recv), Expr::Field(_)) {
            return Ok(None);
        }
        let (index, holds): (Expr, Expr) = match method.as_str() {
            "first" => (
                syn::parse_quote_spanned!(span=> 0),
                syn::parse_quote_spanned!(span=> !#recv.is_empty()),
            ),
            "last" => (
                // (Not `len() - 1`: computed before the check, it would overflow.)
                syn::parse_quote_spanned!(span=> #recv.len().wrapping_sub(1)),
                syn::parse_quote_spanned!(span=> !#recv.is_empty()),
            ),
            _ => {
                let i = &found.args[0];
                (
                    syn::parse_quote_spanned!(span=> (#i)),
                    syn::parse_quote_spanned!(span=> (#i) < #recv.len()),
                )
            }
        };
        let index = if member {
            syn::parse_quote_spanned!(span=>
                ::autodiff_core::__private::flat_index(&#recv, #index))
        } else {
            index
        };
        Ok(Some((index, holds)))
    }

    /// Whether `e` names a local array or an array parameter (`a: &[f64; 3]`).
    fn names_array(&self, e: &Expr) -> bool {
        let Expr::Path(p) = strip(strip_ref(e)) else {
            return false;
        };
        let Some(id) = p.path.get_ident() else {
            return false;
        };
        match self.lookup(&id.to_string()) {
            Some(Binding::Var(v)) => {
                self.array_locals.contains(&v.to_string())
                    || (v == id && self.array_param_lens.contains_key(&v.to_string()))
            }
            _ => false,
        }
    }

    /// A search's `Option` or `Result` (`position`, `rposition`, `binary_search`) taken
    /// apart by closures that read values with derivatives (`x.iter().position(..)
    /// .map(|i| x[i]).unwrap_or(0.0)`, `.map_or(d, |i| x[i])`, `.map_or_else(|| d, f)`), as
    /// the `match` it amounts to, whose arms bind the position as a constant. `None` for
    /// anything else (closures that read only constants are kept as written).
    fn search_taken_apart(&self, m: &syn::ExprMethodCall) -> Option<Expr> {
        let one_param = |e: &Expr| match strip(e) {
            Expr::Closure(c) if c.inputs.len() == 1 => {
                let p = match &c.inputs[0] {
                    Pat::Type(pt) => (*pt.pat).clone(),
                    p => p.clone(),
                };
                Some((p, (*c.body).clone()))
            }
            _ => None,
        };
        // The search, the closure of the found position, and the value otherwise: an
        // expression, or a closure (of the error, for a `Result`).
        let (search, (p, found), otherwise): (&Expr, (Pat, Expr), Option<&Expr>) =
            match (m.method.to_string().as_str(), m.args.len()) {
                ("map_or" | "map_or_else", 2) => {
                    (&*m.receiver, one_param(&m.args[1])?, Some(&m.args[0]))
                }
                (name @ ("unwrap_or" | "unwrap_or_else" | "unwrap" | "expect"), n)
                    if n == usize::from(name != "unwrap") =>
                {
                    let Expr::MethodCall(map) = strip(&m.receiver) else {
                        return None;
                    };
                    if map.method != "map" || map.args.len() != 1 {
                        return None;
                    }
                    (&*map.receiver, one_param(&map.args[0])?, m.args.first())
                }
                _ => return None,
            };
        let Expr::MethodCall(s) = strip(search) else {
            return None;
        };
        let result = match s.method.to_string().as_str() {
            "position" | "rposition" => false,
            "binary_search" | "binary_search_by" | "binary_search_by_key" => true,
            _ => return None,
        };
        if !self.is_search(s) || self.names_only_constants(&found.to_token_stream()) {
            return None;
        }
        let span = m.span();
        let (found_pat, missing_pat) = if result {
            (
                quote!(::core::result::Result::Ok),
                quote!(::core::result::Result::Err),
            )
        } else {
            (
                quote!(::core::option::Option::Some),
                quote!(::core::option::Option::None),
            )
        };
        let lazy = matches!(
            m.method.to_string().as_str(),
            "map_or_else" | "unwrap_or_else"
        );
        let arg = result.then(|| quote!((_)));
        let mut first = TokenStream::new();
        let missing: TokenStream = match (otherwise, lazy) {
            // An eager default (`unwrap_or(d)`, `map_or(d, ..)`) is evaluated first, found
            // or not, as Rust does: it may have effects, or panic.
            (Some(d), false) if m.method != "expect" => {
                first = quote_spanned!(span=> let __ad_default = #d;);
                quote_spanned!(span=> #missing_pat #arg => __ad_default)
            }
            (Some(msg), false) => {
                quote_spanned!(span=> #missing_pat #arg => ::core::panic!("{}", #msg))
            }
            (Some(f), true) if result => {
                let (q, body) = one_param(f)?;
                quote_spanned!(span=> #missing_pat(#q) => #body)
            }
            (Some(f), true) => match strip(f) {
                Expr::Closure(c) if c.inputs.is_empty() => {
                    let body = &c.body;
                    quote_spanned!(span=> #missing_pat => #body)
                }
                _ => return None,
            },
            (None, _) if result => quote_spanned!(span=> #missing_pat(__ad_e) =>
                ::core::panic!("called `Result::unwrap()` on an `Err` value: {:?}", __ad_e)),
            (None, _) => {
                let msg = unwrap_message(m);
                quote_spanned!(span=> #missing_pat => ::core::panic!("{}", #msg))
            }
        };
        syn::parse2(quote_spanned!(span=> {
            #first
            match #s { #found_pat(#p) => #found, #missing }
        }))
        .ok()
    }

    /// Whether `found` splits a float buffer (see [`split_end`]).
    fn splits_buffer(&mut self, found: &syn::ExprMethodCall) -> Result<bool> {
        Ok(found.args.is_empty()
            && (self.is_float_buffer_expr(&found.receiver)?
                || self.names_element_param(&found.receiver)))
    }

    /// `x.split_first().unwrap()` or `x.split_last().expect(..)` (or their `_mut` forms)
    /// of a float buffer: the element and the rest, as the places `x[0]` and `x[1..]` (or
    /// `x[n - 1]` and `x[..n - 1]`), as `split_at` gives its parts. An empty buffer
    /// panics, as the `unwrap` does.
    fn split_parts(&mut self, m: &syn::ExprMethodCall) -> Result<Option<Val>> {
        if !matches!(m.method.to_string().as_str(), "unwrap" | "expect") {
            return Ok(None);
        }
        let Expr::MethodCall(found) = strip(&m.receiver) else {
            return Ok(None);
        };
        let Some((first, mutable)) = split_end(found) else {
            return Ok(None);
        };
        if !self.splits_buffer(found)? {
            return Ok(None);
        }
        let Val::Place(p, _) = self.lower_expr(&found.receiver)? else {
            return Ok(None);
        };
        let span = found.span();
        let recv = p.primal();
        let msg = unwrap_message(m);
        let (at, rest) = if first {
            let at = self.inactive_local(
                "first",
                quote_spanned!(span=> __ad::first_of(#recv.len(), #msg)),
                span,
            );
            (quote!(#at), quote!(#at + 1..))
        } else {
            let at = self.inactive_local(
                "last",
                quote_spanned!(span=> __ad::last_of(#recv.len(), #msg)),
                span,
            );
            (quote!(#at), quote!(..#at))
        };
        let (mut elem, mut others) = (p.clone(), p);
        elem.proj.push(Proj::Index(at));
        others.proj.push(Proj::Index(rest));
        Ok(Some(Val::Tuple(vec![
            Val::Place(elem, mutable),
            Val::Place(others, mutable),
        ])))
    }

    /// `if let Some(v) = x.get(i) { a } else { b }` (or `x.first()`, `x.last()`, through
    /// `copied()`/`cloned()`, with `Some(v)` or `Some(&v)`) as `if i < x.len() { let v =
    /// &x[i]; a } else { b }`: the element, which may carry a derivative, is read by
    /// indexing. `None` for any other `if let`.
    fn option_element_if(
        &mut self,
        l: &syn::ExprLet,
        then: &syn::Block,
        els: Expr,
    ) -> Result<Option<Expr>> {
        let Some((holds, bind)) = self.option_element(&l.pat, &l.expr)? else {
            return Ok(None);
        };
        let stmts = &then.stmts;
        let span = l.span();
        Ok(Some(syn::parse_quote_spanned!(span=>
            if #holds { #(#bind)* #(#stmts)* } else #els)))
    }

    /// For the pattern `Some(v)` or `Some(&v)` of `x.get(i)`, `x.first()` or `x.last()`
    /// of a float buffer (through `copied()`/`cloned()`), or of a reduction (`reduce`,
    /// `max_by`, `min_by`): whether it matches, and the `let` that binds `v` where it does
    /// (`let v = &x[i];`, or `x[i]` for a copy; the reduction's `unwrap()`).
    fn option_element(
        &mut self,
        pat: &Pat,
        scrutinee: &Expr,
    ) -> Result<Option<(Expr, Vec<syn::Stmt>)>> {
        let Pat::TupleStruct(ts) = pat else {
            return Ok(None);
        };
        if !ts.path.is_ident("Some") || ts.elems.len() != 1 || ts.qself.is_some() {
            return Ok(None);
        }
        // `Some((first, rest))` of `x.split_first()`: the two parts (see `split_parts`),
        // bound by patterns that always match (a slice pattern on the rest, `[b, c]`,
        // would also test its length).
        if let (Pat::Tuple(parts), Expr::MethodCall(found)) = (&ts.elems[0], strip(scrutinee))
            && split_end(found).is_some()
            && parts.elems.iter().all(binds_whole)
            && self.splits_buffer(found)?
        {
            let span = scrutinee.span();
            let recv = &found.receiver;
            return Ok(Some((
                syn::parse_quote_spanned!(span=> !#recv.is_empty()),
                vec![syn::parse_quote_spanned!(span=> let #parts = #found.unwrap();)],
            )));
        }
        // `Some(m)` of `chain.reduce(f)`, `chain.max_by(cmp)` or `chain.min_by(cmp)`:
        // found unless the chain is empty, and then the element `unwrap()` finds.
        if let Expr::MethodCall(found) = strip(scrutinee)
            && matches!(
                found.method.to_string().as_str(),
                "reduce" | "max_by" | "min_by"
            )
            && found.args.len() == 1
            && binds_whole(&ts.elems[0])
            && self.parse_chain(&found.receiver)?.is_some()
        {
            let span = scrutinee.span();
            let (recv, v) = (&found.receiver, &ts.elems[0]);
            // Over a buffer's own elements (`x.iter().skip(1)`) the user's `v` is a
            // reference, which a condition may dereference: the local is marked.
            let mark = yields_references(recv).then(|| Ident::new(FOUND_REFERENCE, span));
            let mark = mark.iter();
            return Ok(Some((
                syn::parse_quote_spanned!(span=> #recv.next().is_some()),
                vec![syn::parse_quote_spanned!(span=> #(#[#mark])* let #v = #found.unwrap();)],
            )));
        }
        // `Some(t)` of `v.pop()` of a local vector: its last value, taken off it.
        if let Expr::MethodCall(found) = strip(scrutinee)
            && found.method == "pop"
            && found.args.is_empty()
            && let Pat::Ident(pi) = &ts.elems[0]
            && pi.subpat.is_none()
            && pi.by_ref.is_none()
            && self.is_local_buffer_expr(&found.receiver)?
        {
            let (recv, span) = (&found.receiver, scrutinee.span());
            let (mut bind, value) = popped(recv, span);
            let name = &pi.ident;
            let mutability = &pi.mutability;
            bind.push(syn::parse_quote_spanned!(span=> let #mutability #name = #value;));
            return Ok(Some((
                syn::parse_quote_spanned!(span=> !#recv.is_empty()),
                bind,
            )));
        }
        let (inner, copied) = strip_copied(scrutinee);
        let Expr::MethodCall(found) = inner else {
            return Ok(None);
        };
        // `x.first_mut()`, `x.last_mut()`, `x.get_mut(i)`: the element's position is the
        // one of `first`, `last`, `get`, and `v` a mutable reference to it.
        if let Some(read) = found.method.to_string().strip_suffix("_mut")
            && matches!(read, "first" | "last" | "get")
            && !copied
        {
            let Pat::Ident(pi) = &ts.elems[0] else {
                return Ok(None);
            };
            if pi.subpat.is_some() || pi.by_ref.is_some() {
                return Ok(None);
            }
            let mut shared = found.clone();
            shared.method = Ident::new(read, found.method.span());
            let Some((index, holds)) = self.element_position(&shared)? else {
                return Ok(None);
            };
            let (recv, name, span) = (&found.receiver, &pi.ident, scrutinee.span());
            // The position is computed once, before the element is borrowed: written in
            // each use (`v[v.len() - 1] *= 2.0`), it would read `v` while it is borrowed.
            return Ok(Some((
                holds,
                vec![
                    syn::parse_quote_spanned!(span=> let __ad_at = #index;),
                    syn::parse_quote_spanned!(span=> let #name = &mut #recv[__ad_at];),
                ],
            )));
        }
        // The binding: `v` of the element itself (copied) or of a reference to it, `&v`
        // of the element behind that reference.
        let (ident, by_ref) = match (&ts.elems[0], copied) {
            (Pat::Ident(pi), c) if pi.subpat.is_none() && pi.by_ref.is_none() => (pi, !c),
            (Pat::Reference(r), false) => match &*r.pat {
                Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => (pi, false),
                _ => return Ok(None),
            },
            _ => return Ok(None),
        };
        let Some((index, holds)) = self.element_position(found)? else {
            return Ok(None);
        };
        let recv = &found.receiver;
        let name = &ident.ident;
        let span = scrutinee.span();
        if by_ref && is_flat_index(&index) {
            // An element of a struct's member (`flat_index(&s.w, i)`): `v` refers to a
            // copy of it, which reads the same (a shared reference cannot write).
            return Ok(Some((
                holds,
                vec![
                    syn::parse_quote_spanned!(span=> let __ad_elem = #recv[#index];),
                    syn::parse_quote_spanned!(span=> let #name = &__ad_elem;),
                ],
            )));
        }
        let bind: syn::Stmt = if by_ref {
            syn::parse_quote_spanned!(span=> let #name = &#recv[#index];)
        } else {
            syn::parse_quote_spanned!(span=> let #name = #recv[#index];)
        };
        Ok(Some((holds, vec![bind])))
    }

    /// `chain.reduce(f)`, `chain.max_by(cmp)`, `chain.min_by(cmp)`, `x.first()`,
    /// `x.last()` or `x.get(i)`, then (through `copied()`/`cloned()`) `unwrap()`,
    /// `expect(..)` or `unwrap_or(d)`: the element, as the code that finds it. A reduction
    /// runs as a loop that keeps its current element (the comparisons run on primal
    /// values); `first`, `last` and `get` are indexing (guarded by the length for
    /// `unwrap_or`).
    fn unwrapped_element(&mut self, m: &syn::ExprMethodCall) -> Result<Option<Expr>> {
        let (inner, _) = strip_copied(&m.receiver);
        let Expr::MethodCall(found) = inner else {
            return Ok(None);
        };
        let span = m.span();
        let recv = &found.receiver;
        let method = found.method.to_string();
        if method == "pop" && found.args.is_empty() && self.is_local_buffer_expr(recv)? {
            let (bind, value) = popped(recv, span);
            return Ok(match m.method.to_string().as_str() {
                "unwrap" | "expect" => {
                    let msg = unwrap_message(m);
                    Some(syn::parse_quote_spanned!(span=> {
                        ::core::assert!(!#recv.is_empty(), "{}", #msg);
                        #(#bind)*
                        #value
                    }))
                }
                "unwrap_or" if m.args.len() == 1 => {
                    let d = &m.args[0];
                    Some(syn::parse_quote_spanned!(span=> {
                        let __ad_default = #d;
                        if #recv.is_empty() { __ad_default } else { #(#bind)* #value }
                    }))
                }
                _ => None,
            });
        }
        if let Some((index, holds)) = self.element_position(found)? {
            return Ok(match m.method.to_string().as_str() {
                // (A struct member's position is checked by `flat_index`, its length not
                // known to be there.)
                "unwrap" | "expect" if matches!(strip(recv), Expr::Field(_)) => {
                    Some(syn::parse_quote_spanned!(span=> #recv[#index]))
                }
                "unwrap" | "expect" => {
                    let msg = unwrap_message(m);
                    Some(syn::parse_quote_spanned!(span=>
                        #recv[::autodiff_core::__private::found_at(#holds, #index, #msg)]))
                }
                // (The default is evaluated first, found or not, as `unwrap_or` does.)
                "unwrap_or" if m.args.len() == 1 => {
                    let d = strip_ref(&m.args[0]);
                    Some(syn::parse_quote_spanned!(span=> {
                        let __ad_default = #d;
                        if #holds { #recv[#index] } else { __ad_default }
                    }))
                }
                _ => None,
            });
        }
        if !matches!(method.as_str(), "reduce" | "max_by" | "min_by") || found.args.len() != 1 {
            return Ok(None);
        }
        if self.parse_chain(recv)?.is_none() {
            return Ok(None);
        }
        let f = &found.args[0];
        // A closure is bound to a local (and inlined at its call); a path is called as is.
        let (bind_f, call_f): (syn::Stmt, Expr) = match strip(f) {
            Expr::Closure(_) => (
                syn::parse_quote_spanned!(span=> let __ad_f = #f;),
                syn::parse_quote_spanned!(span=> __ad_f),
            ),
            _ => (syn::parse_quote!({}), f.clone()),
        };
        // The next element replaces the kept one: always for `reduce` (through `f`); for
        // `max_by` unless the kept one is greater (the last maximum wins, as in std), for
        // `min_by` when it is less (the first minimum wins).
        let step: syn::Stmt = match method.as_str() {
            "reduce" => {
                syn::parse_quote_spanned!(span=> __ad_kept = #call_f(__ad_kept, __ad_next);)
            }
            "max_by" => syn::parse_quote_spanned!(span=>
            if __ad::compare(#f, &__ad_kept, &__ad_next) != ::core::cmp::Ordering::Greater {
                __ad_kept = __ad_next;
            }),
            _ => syn::parse_quote_spanned!(span=>
            if __ad::compare(#f, &__ad_next, &__ad_kept) == ::core::cmp::Ordering::Less {
                __ad_kept = __ad_next;
            }),
        };
        let name = m.method.to_string();
        let (init, empty): (Expr, syn::Stmt) = match name.as_str() {
            "unwrap_or" if m.args.len() == 1 => {
                let d = strip_ref(&m.args[0]);
                (syn::parse_quote!(#d), syn::parse_quote!({}))
            }
            "unwrap" if m.args.is_empty() => (
                syn::parse_quote!(::core::default::Default::default()),
                syn::parse_quote_spanned!(span=>
                    ::core::panic!("called `Option::unwrap()` on a `None` value");),
            ),
            "expect" if m.args.len() == 1 => {
                let msg = &m.args[0];
                (
                    syn::parse_quote!(::core::default::Default::default()),
                    syn::parse_quote_spanned!(span=> ::core::panic!("{}", #msg);),
                )
            }
            _ => return Ok(None),
        };
        if method != "reduce"
            && name != "unwrap_or"
            && let Some((buf, adapters)) = self.elements_adapted(recv)
        {
            return Ok(Some(extremum_through_adapters(
                &method, f, &buf, &adapters, m, span,
            )));
        }
        if yields_pairs(recv) {
            // A reduction that keeps the first or the last pair (`next`, `last`, `find`
            // of pairs, see `iterator_items`) is one that never compares.
            let method = match (method.as_str(), kept_item(f)) {
                ("reduce", Some(kept)) => kept,
                ("reduce", None) => return Ok(None),
                (m, _) => m,
            };
            if name == "unwrap_or" {
                return Ok(None);
            }
            return Ok(Some(pair_extremum(method, f, recv, &empty, span)));
        }
        Ok(Some(syn::parse_quote_spanned!(span=> {
            #bind_f
            let mut __ad_kept = #init;
            let mut __ad_some = false;
            for __ad_elem in #recv {
                // A copy of the element, so that the comparison gets two references to
                // values of one type, whatever the chain yields (`x.iter()`, `map`).
                let __ad_next = __ad_elem;
                // The first element comes first in the text too: it gives `__ad_kept` its
                // type before any method call on it.
                if !__ad_some {
                    __ad_kept = __ad_next;
                    __ad_some = true;
                } else {
                    #step
                }
            }
            if !__ad_some {
                #empty
            }
            __ad_kept
        })))
    }

    /// Whether `e` names a parameter that holds structs or rows (not a local that shadows
    /// it).
    fn names_element_param(&self, e: &Expr) -> bool {
        let Expr::Path(p) = strip(e) else {
            return false;
        };
        let Some(id) = p.path.get_ident() else {
            return false;
        };
        let name = id.to_string();
        match self.lookup(&name) {
            Some(Binding::Var(v)) if *v == name => {
                self.struct_elem_params.contains(&name)
                    || (!self.companion && self.row_params.contains(&name))
            }
            // A local buffer of structs.
            Some(Binding::Var(v)) => self.struct_elem_params.contains(&v.to_string()),
            _ => false,
        }
    }

    /// `ps.iter()` of a parameter that holds structs or rows, then any adapters that keep
    /// its elements (`skip`, `take`, `step_by`, `rev`, `filter`, `enumerate`, `copied`,
    /// `cloned`), whose elements an extremum is found among: the parameter and the
    /// adapters, innermost first.
    fn elements_adapted<'e>(
        &self,
        chain: &'e Expr,
    ) -> Option<(Ident, Vec<&'e syn::ExprMethodCall>)> {
        let mut adapters = Vec::new();
        let mut e = strip(chain);
        loop {
            let Expr::MethodCall(c) = e else {
                return None;
            };
            let name = c.method.to_string();
            match name.as_str() {
                "iter" if c.args.is_empty() => {
                    let Expr::Path(p) = strip(&c.receiver) else {
                        return None;
                    };
                    let id = p.path.get_ident()?.clone();
                    adapters.reverse();
                    return self
                        .names_element_param(&c.receiver)
                        .then_some((id, adapters));
                }
                "skip" | "take" | "step_by" | "filter" if c.args.len() == 1 => {}
                "rev" | "enumerate" | "copied" | "cloned" if c.args.is_empty() => {}
                _ => return None,
            }
            adapters.push(c);
            e = strip(&c.receiver);
        }
    }

    /// Drops the value of an expression statement or of `let _ = ..`. An expression kept
    /// as written (`no_grad(log(k))`, `COUNT.fetch_add(1, SeqCst)`, a call with constant
    /// arguments) is still evaluated, for its effect.
    fn discard_value(&mut self, v: Val) {
        match v {
            Val::Op(Operand::Lit(t)) if !is_unit_literal(&t) => {
                self.emit(Stmt::Inactive(quote!(let _ = #t;)));
            }
            v => self.discard_call_result(v),
        }
    }

    /// A call whose result is discarded becomes a call statement.
    fn discard_call_result(&mut self, v: Val) {
        let Val::Op(Operand::Var(t)) = v else { return };
        let block = self.out.last_mut().expect("an open block");
        if let Some(Stmt::Let {
            var,
            op: Op::Call(_),
            ..
        }) = block.last()
            && *var == t
            && let Some(Stmt::Let {
                op: Op::Call(c), ..
            }) = block.pop()
        {
            block.push(Stmt::Call(c));
        }
    }

    /// Whether `e` is `&name` (or `name`) for a local buffer.
    fn names_buffer(&self, e: &Expr) -> bool {
        // `&v`, `&*v`, `&v[a..]`, `&v[a..][b..]` (a companion's scratch shadow of a
        // parameter or a part of it, split more than once).
        let mut e = strip_ref(e);
        while let Expr::Index(ix) = e
            && is_range_expr(&ix.index)
        {
            e = strip_ref(&ix.expr);
        }
        let Expr::Path(p) = e else {
            return false;
        };
        let Some(id) = p.path.get_ident() else {
            return false;
        };
        match self.lookup(&id.to_string()) {
            Some(Binding::Var(v)) => {
                let name = v.to_string();
                match self.kinds.get(&name) {
                    // (A copy of a struct with buffers is a struct.)
                    Some(VarKind::Buffer) => !self.structs_with_buffers.contains(&name),
                    // A float slice parameter (a constant `&mut` scratch buffer's shadow is
                    // `zero_like(ws)`).
                    Some(VarKind::Ref { .. }) => {
                        !self.struct_refs.contains(&name) && !self.scalar_refs.contains(&name)
                    }
                    _ => false,
                }
            }
            _ => false,
        }
    }

    /// A whole struct: a parameter that refers to one, or one built in the function.
    fn is_whole_struct(&self, p: &Place) -> bool {
        self.is_struct_value(p)
            || (p.is_whole()
                && (self.named_struct_refs.contains(&p.base.to_string())
                    || self.structs_with_buffers.contains(&p.base.to_string())
                    || self.is_struct_copy(&p.base)))
    }

    /// Whether `left` is `*p` of a constant reference parameter `p` (see
    /// `Self::constant_refs`), which nothing differentiates.
    fn writes_constant_ref(&self, left: &Expr) -> bool {
        let Expr::Unary(u) = strip(left) else {
            return false;
        };
        matches!(u.op, syn::UnOp::Deref(_))
            && matches!(strip(&u.expr), Expr::Path(p)
                if p.path.get_ident().is_some_and(|id| self.is_constant_ref(id)))
    }

    /// Whether `id` names a constant reference parameter (see `Self::constant_refs`), not
    /// a local that shadows it.
    fn is_constant_ref(&self, id: &Ident) -> bool {
        let name = id.to_string();
        self.constant_refs.contains(&name)
            && matches!(self.lookup(&name), Some(Binding::Var(v)) if *v == name)
    }

    /// A whole parameter that is a reference to a struct (not to floats or a scalar).
    fn is_struct_ref(&self, p: &Place) -> bool {
        p.is_whole() && self.struct_refs.contains(&p.base.to_string())
    }

    /// A member of a struct that nothing in the body can change (`cfg.n`, `self.m`, of a
    /// `&` parameter or of a struct value bound immutably). `let n = cfg.n;` names the
    /// member itself: the macro cannot see the member's type, and an integer must stay
    /// one (`n as f64` is then a constant, as `cfg.n as f64` is), while a float member's
    /// reads are differentiated where they are used.
    fn is_unchanging_member(&self, p: &Place) -> bool {
        !p.proj.is_empty()
            && p.proj.iter().all(|q| matches!(q, Proj::Field(_)))
            && matches!(
                self.kinds.get(&p.base.to_string()),
                Some(VarKind::Ref { mutable: false } | VarKind::Value)
            )
    }

    /// Whether `e` is `*r` of a `&mut` float array parameter (`r: &mut [f64; 2]`), written
    /// whole. (A vector's `*v = w;` may change its length, which its shadow cannot.)
    fn derefs_buffer_param(&self, e: &Expr) -> bool {
        !self.companion
            && self
                .derefed_param(e)
                .is_some_and(|name| self.mut_array_params.contains(&name))
    }

    /// The parameter `p` (not a local that shadows it) when `e` is `*p`.
    fn derefed_param(&self, e: &Expr) -> Option<String> {
        let Expr::Unary(u) = strip(e) else {
            return None;
        };
        if !matches!(u.op, syn::UnOp::Deref(_)) {
            return None;
        }
        let Expr::Path(p) = strip(&u.expr) else {
            return None;
        };
        let name = p.path.get_ident()?.to_string();
        matches!(self.lookup(&name), Some(Binding::Var(v)) if *v == name).then_some(name)
    }

    /// Whether the body indexes the member `p` of a parameter (`s.w[i]`).
    fn member_indexed_later(&self, p: &Place) -> bool {
        match p.proj.as_slice() {
            [Proj::Field(syn::Member::Named(m))] => {
                self.indexed_members.contains(&format!("{}.{}", p.base, m))
            }
            _ => false,
        }
    }

    /// Whether `left` is `*g` of a `&mut` struct parameter `g` (not a local that shadows it).
    fn derefs_struct_param(&self, left: &Expr) -> bool {
        self.derefed_param(left).is_some_and(|name| {
            self.named_struct_refs.contains(&name)
                && matches!(self.kinds.get(&name), Some(VarKind::Ref { mutable: true }))
        })
    }

    /// Whether `p` is reached from its base through members only (`s.w`, `self.hist.w`),
    /// in the function's own code.
    fn is_member_place(&self, p: &Place) -> bool {
        !self.companion && !p.proj.is_empty() && p.proj.iter().all(|q| matches!(q, Proj::Field(_)))
    }

    /// Whether `p` is a member of a struct parameter (`s.w`, `self.hist`), reached through
    /// members only.
    fn is_struct_param_member(&self, p: &Place) -> bool {
        self.is_member_place(p) && self.named_struct_refs.contains(&p.base.to_string())
    }

    /// Whether `p` is a member of a struct built in the body (`st.v` of `let mut st = St
    /// { v: x.to_vec(), .. };`).
    fn is_local_struct_member(&self, p: &Place) -> bool {
        let base = p.base.to_string();
        self.is_member_place(p)
            && (self.struct_values.contains(&base) || self.structs_with_buffers.contains(&base))
    }

    /// The place that the member expression `e` (`s.w`) names, if it names one.
    fn member_expr_place(&mut self, e: &Expr) -> Result<Option<Place>> {
        if self.companion || !matches!(strip(e), Expr::Field(_)) {
            return Ok(None);
        }
        Ok(match self.lower_expr(e)? {
            Val::Place(p, _) => Some(p),
            _ => None,
        })
    }

    /// Whether `e` is a member of a struct parameter (`s.w`, `self.hist`).
    fn is_struct_param_member_expr(&mut self, e: &Expr) -> Result<bool> {
        Ok(self
            .member_expr_place(e)?
            .is_some_and(|p| self.is_struct_param_member(&p)))
    }

    /// Whether `e` is a member of a struct parameter or of a struct built in the body
    /// (`s.w`, `self.hist`, `st.v`).
    fn is_struct_member_expr(&mut self, e: &Expr) -> Result<bool> {
        Ok(self
            .member_expr_place(e)?
            .is_some_and(|p| self.is_struct_param_member(&p) || self.is_local_struct_member(&p)))
    }

    /// Whether `p`, read back from a companion, is an element of a vector of struct
    /// values (`vec![S { .. }, ..]`, or `vec![a, b]` of struct literals bound to locals):
    /// a copy of it is a clone, and a copy into it a `clone_from`, where a float
    /// element's would move.
    fn is_struct_elem_read_back(&self, p: &Place) -> bool {
        self.companion
            && matches!(p.proj.as_slice(), [Proj::Index(_)])
            && self.struct_elem_params.contains(&p.base.to_string())
    }

    /// Whether `p` is an element of a parameter that holds structs (`ps[i]` of
    /// `ps: &[Particle]`), which `let p = ps[i];` copies as a struct.
    fn is_struct_element(&self, p: &Place) -> bool {
        !self.companion
            && is_element_of_part(p)
            && self.struct_elem_params.contains(&p.base.to_string())
    }

    /// Whether the local `t` is a copy of an element of a slice of structs (`let p =
    /// ps[i];`), or of such a copy.
    fn is_element_copy(&self, t: &Ident) -> bool {
        self.out.iter().flatten().any(|s| match s {
            Stmt::Let {
                var,
                op: Op::CloneOf(p, CopyKind::Struct { .. }),
                ..
            } if var == t => {
                self.is_struct_element(p)
                    || (p.is_whole() && p.base != *t && self.is_element_copy(&p.base))
            }
            _ => false,
        })
    }

    /// Whether `e` is, as written, a struct value: a local holding one (a copy, a literal
    /// bound with `let`), a struct parameter (`*p` of `p: &V2` too), or an element of a
    /// slice of structs (`ps[i]`).
    fn is_struct_operand(&self, e: &Expr) -> bool {
        let e = match strip(e) {
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => strip(&u.expr),
            e => e,
        };
        match e {
            Expr::Path(p) => p.path.get_ident().is_some_and(|id| {
                let name = id.to_string();
                match self.lookup(&name) {
                    Some(Binding::Var(v)) => {
                        let v = v.to_string();
                        self.kinds.get(&v) == Some(&VarKind::Value)
                            || (v == name && self.named_struct_refs.contains(&v))
                    }
                    Some(Binding::Member(p) | Binding::Alias(p, _)) => {
                        self.is_struct_element(p)
                            // `let v = *self;`, `let a = *p;` of a struct parameter.
                            || (p.is_whole()
                                && self.named_struct_refs.contains(&p.base.to_string()))
                    }
                    _ => false,
                }
            }),
            Expr::Index(ix) => matches!(strip(&ix.expr), Expr::Path(p)
            if p.path.get_ident().is_some_and(|id| {
                let name = id.to_string();
                matches!(self.lookup(&name), Some(Binding::Var(v))
                    if self.struct_elem_params.contains(&v.to_string()))
            })),
            _ => false,
        }
    }

    /// Whether `p` is a row of a parameter of rows, or of a part of one (`rows[1..][k]`).
    fn is_row_element(&self, p: &Place) -> bool {
        self.is_row(p)
            || (is_element_of_part(p)
                && !self.companion
                && self.row_params.contains(&p.base.to_string()))
    }

    /// Whether `v` is a whole struct with a buffer member, built in the body (see
    /// [`Self::lower_struct_with_buffers`]).
    fn holds_struct_with_buffers(&self, v: &Val) -> bool {
        match v {
            Val::Place(p, _) => {
                p.is_whole() && self.structs_with_buffers.contains(&p.base.to_string())
            }
            Val::Op(Operand::Var(x)) => self.structs_with_buffers.contains(&x.to_string()),
            _ => false,
        }
    }

    fn is_struct_value(&self, p: &Place) -> bool {
        p.is_whole() && self.struct_values.contains(&p.base.to_string())
    }

    /// `p = Point { x: a, y: b };` to a struct built in the body: an assignment to each
    /// member (a literal names them all), the members' values computed first, as the
    /// literal computes them. Returns false when `a` assigns to something else.
    fn assign_struct(&mut self, a: &syn::ExprAssign) -> Result<bool> {
        let place = match strip(&a.left) {
            Expr::Path(p) => match p.path.get_ident().map(|id| self.lookup(&id.to_string())) {
                Some(Some(Binding::Var(v))) => Place::local(v.clone()),
                _ => return Ok(false),
            },
            _ => return Ok(false),
        };
        if !self.is_struct_value(&place) {
            // A struct a call returned (`let mut acc = V2::new(..)`), whose members the
            // function does not see, given another struct. Its copy, made where the name
            // is bound once (`call_result_copy`), is assigned whole by the assignment's
            // general case; under a name bound twice the value is not known for a struct.
            let assigned = match strip(&a.left) {
                Expr::Path(p) => p.path.get_ident().map(|id| id.to_string()),
                _ => None,
            };
            if assigned.is_some_and(|n| is_struct_like_value(&a.right, &n))
                && self.is_call_result(&place.base)
                && !self.is_struct_copy(&place.base)
            {
                return unsupported(
                    a,
                    "assigning a whole struct to one that a call returned, under a name that the function binds more than once (give the struct a name of its own)",
                );
            }
            return Ok(false);
        }
        let op = match strip(&a.right) {
            Expr::Struct(s) => self.lower_struct(s, true)?,
            Expr::Call(c) if is_tuple_struct_call(c) => self.lower_tuple_struct(c, true)?,
            _ => None,
        };
        let fields = match op {
            Some(Op::StructLit(_, fields)) => fields,
            // Another struct of the same shape (`acc = acc.add(&v)`, `p = q`): its
            // members, read first, then assigned one by one.
            _ => match self.struct_shape(&Vec::new(), &Val::Place(place.clone(), false)) {
                Some((_, members)) if !matches!(strip(&a.right), Expr::Struct(_)) => {
                    let v = self.lower_expr(&a.right)?;
                    let v = match v {
                        Val::Op(Operand::Var(t)) => Val::Place(Place::local(t), false),
                        v => v,
                    };
                    let reads = match struct_member_places(&v, &members) {
                        Val::Tuple(items) => items,
                        one => vec![one],
                    };
                    let mut fields = Vec::new();
                    for (m, r) in members.into_iter().zip(reads) {
                        let o = match r {
                            Val::Place(p, _) => self.let_op(Op::Load(p), a.span()),
                            v => self.operand(v, a.span())?,
                        };
                        fields.push((m, o));
                    }
                    fields
                }
                _ => {
                    return unsupported(
                        a,
                        "assigning a whole struct built in the function from anything but a struct literal (assign its members)",
                    );
                }
            },
        };
        for (m, val) in fields {
            let mut p = place.clone();
            p.proj.push(Proj::Field(m));
            self.emit(Stmt::Assign {
                place: p,
                kind: AssignKind::Set,
                val,
            });
        }
        Ok(true)
    }

    /// `k[i] = [a, b];` (or `vec![a, b]`) of a row of a local matrix or a `&mut`
    /// parameter, or of an array member (`m.w = [a, b];`): the elements are assigned one
    /// by one, after every value is read. A row written `vec![..]` must keep its length
    /// (checked). Returns whether `a` was such an assignment.
    fn assign_row(&mut self, a: &syn::ExprAssign) -> Result<bool> {
        let (items, is_vec) = match strip(&a.right) {
            Expr::Array(arr) => (arr.elems.iter().cloned().collect::<Vec<_>>(), false),
            Expr::Macro(m) if m.mac.path.is_ident("vec") => {
                if m.mac.parse_body_with(parse_repeat).is_ok() {
                    return Ok(false);
                }
                let items = m.mac.parse_body_with(
                    syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated,
                )?;
                (items.into_iter().collect(), true)
            }
            _ => return self.copy_row(a),
        };
        // (`*p` of a row that `iter_mut()` gave: `for p in pts.iter_mut() { *p = [..]; }`.)
        let deref = matches!(strip(&a.left), Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)));
        if !matches!(strip(&a.left), Expr::Index(_) | Expr::Field(_)) && !deref {
            return Ok(false);
        }
        // A matrix member assigned a matrix literal (`self.p = [[a, b], [c, d]];`): every
        // element, each value computed first.
        let rows: Vec<&syn::ExprArray> = items
            .iter()
            .filter_map(|it| match strip(it) {
                Expr::Array(row) => Some(row),
                _ => None,
            })
            .collect();
        if !is_vec && !rows.is_empty() && rows.len() == items.len() {
            let left = &a.left;
            let mut lets = Vec::new();
            let mut sets = Vec::new();
            for (i, row) in rows.iter().enumerate() {
                for (j, e) in row.elems.iter().enumerate() {
                    let name = format_ident!("__ad_elem{}_{}", i, j);
                    lets.push(quote_spanned!(a.span()=> let #name = #e;));
                    sets.push(quote_spanned!(a.span()=> #left[#i][#j] = #name;));
                }
            }
            let block: syn::Block = syn::parse_quote_spanned!(a.span()=> { #(#lets)* #(#sets)* });
            return self.lower_scoped(&block).map(|_| true);
        }
        let place = self.lower_place(&a.left)?;
        // A row of a local matrix, of a slice of arrays, or a member of a struct parameter
        // (`out[i]`, `m.w`).
        let buffer_or_ref = matches!(
            self.kinds.get(&place.base.to_string()),
            Some(VarKind::Buffer | VarKind::Ref { .. })
        );
        if place.is_whole() || !buffer_or_ref {
            return Ok(false);
        }
        let mut vals = Vec::with_capacity(items.len());
        for it in &items {
            let v = self.lower_expr(it)?;
            vals.push(self.operand(v, it.span())?);
        }
        if is_vec {
            let (row, n) = (place.primal(), items.len());
            self.emit(Stmt::Inactive(quote_spanned!(a.span()=>
                __ad::same_row_length(#row.len(), #n);)));
        }
        for (i, val) in vals.into_iter().enumerate() {
            let mut p = place.clone();
            push_index(&mut p, quote!(#i));
            self.emit(Stmt::Assign {
                place: p,
                kind: AssignKind::Set,
                val,
            });
        }
        Ok(true)
    }

    /// `k[i] = k[j];`, `m[i] = m[j].clone();` or `m[i] = v;` into a row of a local
    /// matrix: the row on the right is copied first, then written element by element (of
    /// the same length, checked). Returns whether `a` was such an assignment.
    fn copy_row(&mut self, a: &syn::ExprAssign) -> Result<bool> {
        let (left, right) = (&a.left, &a.right);
        if self.companion || !matches!(strip(left), Expr::Index(_)) {
            return Ok(false);
        }
        let Val::Place(place, _) = self.lower_expr(left)? else {
            return Ok(false);
        };
        if !self.is_row(&place) {
            return Ok(false);
        }
        let Ok(block) = syn::parse2::<syn::Block>(quote_spanned!(a.span()=> {
            let __ad_row = #right;
            for __ad_j in 0..__ad::same_row_length(#left.len(), __ad_row.len()) {
                #left[__ad_j] = __ad_row[__ad_j];
            }
        })) else {
            return Ok(false);
        };
        let r = self.lower_scoped(&block);
        r.map(|_| true)
    }

    /// `(a, b) = (b, a + b);`: every value on the right is read into a temporary before
    /// any place on the left is written, as Rust evaluates it.
    fn assign_destructured(&mut self, left: &Expr, v: Val, span: Span) -> Result<()> {
        let mut writes = vec![];
        self.read_destructured(left, v, span, &mut writes)?;
        for (place, val) in writes {
            self.emit(Stmt::Assign {
                place,
                kind: AssignKind::Set,
                val,
            });
        }
        Ok(())
    }

    /// The places of a destructuring assignment's left side, each with a copy of its value.
    fn read_destructured(
        &mut self,
        left: &Expr,
        v: Val,
        span: Span,
        writes: &mut Vec<(Place, Operand)>,
    ) -> Result<()> {
        let (elems, items) = match (strip(left), v) {
            (Expr::Infer(_), _) => return Ok(()),
            (Expr::Array(t), Val::Tuple(items)) => (&t.elems, items),
            (Expr::Array(_), _) => {
                return unsupported_at(
                    span,
                    "an array destructuring assignment from anything but an array written in place",
                );
            }
            (Expr::Tuple(t), v) => (&t.elems, self.tuple_items(v, t.elems.len(), span)),
            (l, v) if let Some(slots) = self.mutable_tuple_slots(l) => {
                let items = self.tuple_items(v, slots.len(), span);
                for (slot, item) in slots.into_iter().zip(items) {
                    if matches!(item, Val::Tuple(_)) {
                        return unsupported_at(
                            span,
                            "a tuple of tuples assigned to a `let mut` tuple",
                        );
                    }
                    let o = self.operand(item, span)?;
                    let copy = self.let_op(Op::Use(o), span);
                    writes.push((Place::local(slot), copy));
                }
                return Ok(());
            }
            (l, v) => {
                let place = self.lower_place(l)?;
                if self.is_struct_value(&place)
                    || matches!(
                        self.kinds.get(&place.base.to_string()),
                        Some(VarKind::Buffer)
                    ) && place.is_whole()
                {
                    return unsupported(
                        l,
                        "a whole buffer or struct in a destructuring assignment",
                    );
                }
                let o = self.operand(v, span)?;
                let copy = self.let_op(Op::Use(o), span);
                writes.push((place, copy));
                return Ok(());
            }
        };
        if items.len() != elems.len() {
            return unsupported_at(
                span,
                "a destructuring assignment whose right side does not have as many values",
            );
        }
        for (l, item) in elems.iter().zip(items) {
            self.read_destructured(l, item, span, writes)?;
        }
        Ok(())
    }

    /// The element locals of the `let mut` tuple that `e` names (see `tuple_slots`).
    fn mutable_tuple_slots(&self, e: &Expr) -> Option<Vec<Ident>> {
        let Expr::Path(p) = strip(e) else { return None };
        let Some(Binding::Tuple(items)) = self.lookup(&p.path.get_ident()?.to_string()) else {
            return None;
        };
        items
            .iter()
            .map(|item| match item {
                Val::Op(Operand::Var(v)) if self.tuple_slots.contains(&v.to_string()) => {
                    Some(v.clone())
                }
                _ => None,
            })
            .collect()
    }

    fn lower_place(&mut self, e: &Expr) -> Result<Place> {
        match self.lower_expr(e)? {
            Val::Place(p, _) => Ok(p),
            Val::Op(Operand::Var(v)) => Ok(Place::local(v)),
            _ => unsupported(e, "assigning to this expression"),
        }
    }

    // ---------------------------------------------------------------- control flow

    /// Lowers an `if`; with `want`, returns its value.
    fn lower_if(&mut self, i: &syn::ExprIf, want: bool) -> Result<Option<Val>> {
        // A let chain, `if let Some(v) = x.get(0) && *v > 0.0 { a } else { b }`: nested
        // tests, `if let Some(v) = x.get(0) { if *v > 0.0 { a } else { b } } else { b }`.
        if let Expr::Binary(b) = strip(&i.cond)
            && matches!(b.op, syn::BinOp::And(_))
            && has_let(&i.cond)
        {
            let (first, rest) = (&b.left, &b.right);
            let then = &i.then_branch;
            let els: Expr = match &i.else_branch {
                Some((_, e)) => (**e).clone(),
                None => syn::parse_quote!({}),
            };
            let nested: syn::ExprIf = syn::parse_quote_spanned!(i.span()=>
                if #first { if #rest #then else { #els } } else { #els }
            );
            return self.lower_if(&nested, want);
        }
        if let Expr::Let(l) = &*i.cond {
            let els: Expr = match &i.else_branch {
                Some((_, e)) => (**e).clone(),
                None => syn::parse_quote!({}),
            };
            if let Some(Expr::If(indexed)) = self.option_element_if(l, &i.then_branch, els)? {
                return self.lower_if(&indexed, want);
            }
            // `if let p = s { a } else { b }` is `match s { p => a, _ => b }`.
            if pat_binds(&l.pat) && !self.binds_constants(&l.expr, &l.pat) {
                return unsupported(
                    l,
                    "`if let` (or `while let`) that binds variables, except slice patterns of bindings and `_` (`[a, b]`, `[first, .., last]`, `[h, rest @ ..]`) on a slice named by a variable or a member or on a range of one, `Some(v)` of `x.get(i)`, `x.first()`, `x.last()` (or `get_mut`, `first_mut`, `last_mut`), `v.pop()` of a local vector of floats or a reduction (`reduce`, `max_by`, `min_by`, `find`), `Some((a, rest))` of `x.split_first()` or `x.split_last()`, `Some(p)` (or `Some((i, p))`) of a `let mut` local of an `Option` of a number or of a tuple of numbers (`let mut prev: Option<f64> = None;`), and patterns on a by-value parameter that is never differentiated (an enum, an `Option`, an integer), a struct parameter or `no_grad(..)` of a value without a derivative",
                );
            }
            let (scrutinee, pat, then) = (&l.expr, &l.pat, &i.then_branch);
            let els: Expr = match &i.else_branch {
                Some((_, e)) => (**e).clone(),
                None => syn::parse_quote!({}),
            };
            let m: syn::ExprMatch =
                syn::parse_quote!(match #scrutinee { #pat => #then, _ => #els });
            return self.lower_match(&m, want);
        }
        let cond = self.lower_condition(&i.cond)?;
        let then_blk = &i.then_branch;
        let else_expr = i.else_branch.as_ref().map(|(_, e)| (**e).clone());
        self.lower_branches(
            cond,
            Branch::Block(then_blk.clone()),
            else_expr.map(Branch::Expr),
            want,
            i.span(),
        )
    }

    fn lower_branches(
        &mut self,
        cond: TokenStream,
        then: Branch,
        els: Option<Branch>,
        want: bool,
        span: Span,
    ) -> Result<Option<Val>> {
        let then_diverges = then.diverges();
        let else_diverges = els.as_ref().is_some_and(Branch::diverges);
        let (then_b, tv) = self.in_block(|l| l.lower_branch(&then, want && !then_diverges))?;
        let (else_b, ev) = match els {
            Some(b) => self.in_block(|l| l.lower_branch(&b, want && !else_diverges))?,
            None => (Vec::new(), None),
        };
        self.emit_branches(
            cond,
            (then_b, tv, then_diverges),
            (else_b, ev, else_diverges),
            want,
            span,
            "an `if` used as a value needs an `else` with a value",
        )
    }

    /// The `if` of two lowered branches, and its value when `want`: each branch's value
    /// lowered to operands inside its block. A branch that diverges (and so has no value)
    /// gets a stand-in of the other's shape: locals set to `Default::default()`, typed by
    /// the other branch's values, never read.
    fn emit_branches(
        &mut self,
        cond: TokenStream,
        (mut then_b, tv, then_diverges): (Block, Option<Val>, bool),
        (mut else_b, ev, else_diverges): (Block, Option<Val>, bool),
        want: bool,
        span: Span,
        missing: &str,
    ) -> Result<Option<Val>> {
        if !want || (then_diverges && else_diverges) {
            self.emit(Stmt::If {
                cond,
                then: then_b,
                els: else_b,
                outs: vec![],
                then_vals: vec![],
                else_vals: vec![],
            });
            return Ok(None);
        }
        let (tv, ev) = match (tv, ev) {
            (Some(t), Some(e)) => (t, e),
            (None, Some(e)) if then_diverges => (self.stand_in(&mut then_b, &e), e),
            (Some(t), None) if else_diverges => {
                let e = self.stand_in(&mut else_b, &t);
                (t, e)
            }
            _ => return Err(syn::Error::new(span, missing)),
        };
        if self.holds_struct_with_buffers(&tv) || self.holds_struct_with_buffers(&ev) {
            return unsupported_at(
                span,
                "a struct with a buffer member chosen by `if` or `match` (build one struct after it: `let q = if c { [a, b] } else { [b, a] }; P { q, s }`)",
            );
        }
        // Two structs of one shape (`if c { V2 { .. } } else { V2 { .. } }`), or one
        // and a struct a call returned (`if c { a.add(&b) } else { V2 { .. } }`): the
        // `if` produces their members, from which the struct is built after it.
        let (then_shape, else_shape) = (
            self.struct_shape(&then_b, &tv),
            self.struct_shape(&else_b, &ev),
        );
        let call_struct = |b: &Block, v: &Val| match v {
            Val::Op(Operand::Var(t)) if binds_call_result(b, t) || self.is_call_result(t) => {
                Some(Val::Place(Place::local(t.clone()), false))
            }
            _ => None,
        };
        let (shape, tv, ev) = match (then_shape, else_shape) {
            (Some(a), Some(b)) if a == b => (Some(a), tv, ev),
            (Some(a), None) => match call_struct(&else_b, &ev) {
                Some(ev) => (Some(a), tv, ev),
                None => (None, tv, ev),
            },
            (None, Some(b)) => match call_struct(&then_b, &tv) {
                Some(tv) => (Some(b), tv, ev),
                None => (None, tv, ev),
            },
            _ => (None, tv, ev),
        };
        let (tv, ev) = match &shape {
            Some((_, members)) => (
                struct_member_places(&tv, members),
                struct_member_places(&ev, members),
            ),
            None => (tv, ev),
        };
        let n = val_len(&tv);
        let (then_b, then_vals) = self.reopen(then_b, tv, n)?;
        let (else_b, else_vals) = self.reopen(else_b, ev, n)?;
        let outs: Vec<Ident> = (0..n).map(|_| self.temp(span)).collect();
        self.emit(Stmt::If {
            cond,
            then: then_b,
            els: else_b,
            outs: outs.clone(),
            then_vals,
            else_vals,
        });
        let Some((path, members)) = shape else {
            return Ok(Some(slots_val(outs)));
        };
        let fields = members.into_iter().zip(outs.into_iter().map(Operand::Var));
        let op = Op::StructLit(path, fields.collect());
        let var = self.fresh("value", span);
        self.kinds.insert(var.to_string(), VarKind::Value);
        self.emit_owned(&var, false, op);
        Ok(Some(Val::Place(Place::local(var), false)))
    }

    /// The path and members of the struct built in `block` (or before it) that `v`
    /// names whole.
    fn struct_shape(&self, block: &Block, v: &Val) -> Option<(syn::Path, Vec<syn::Member>)> {
        let Val::Place(p, _) = v else {
            return None;
        };
        if !self.is_struct_value(p) {
            return None;
        }
        let found = |b: &Block| {
            b.iter().find_map(|s| match s {
                Stmt::Let {
                    var,
                    op: Op::StructLit(path, fields),
                    ..
                } if *var == p.base => Some((
                    path.clone(),
                    fields.iter().map(|(m, _)| m.clone()).collect::<Vec<_>>(),
                )),
                _ => None,
            })
        };
        found(block).or_else(|| self.out.iter().find_map(found))
    }

    fn stand_in(&mut self, block: &mut Block, shape: &Val) -> Val {
        self.out.push(std::mem::take(block));
        let n = val_len(shape);
        let slots = self.value_slots(n, None, Span::call_site());
        *block = self.out.pop().expect("the diverging block");
        slots_val(slots)
    }

    /// Appends to a lowered block the statements that turn its value into operands.
    fn reopen(&mut self, block: Block, v: Val, n: usize) -> Result<(Block, Vec<Operand>)> {
        self.out.push(block);
        self.loads.clear();
        let ops = if n == 1 {
            vec![self.operand(v, Span::call_site())?]
        } else {
            self.flatten(v, n)?
        };
        self.loads.clear();
        let b = self.out.pop().unwrap();
        Ok((b, ops))
    }

    fn lower_branch(&mut self, b: &Branch, want: bool) -> Result<Option<Val>> {
        match b {
            Branch::Block(blk) if !want => {
                self.lower_stmts(&blk.stmts, Tail::Unit)?;
                Ok(None)
            }
            Branch::Block(blk) => self.lower_stmts(&blk.stmts, Tail::Value),
            Branch::Expr(e) => match strip(e) {
                Expr::If(i) => self.lower_if(i, want),
                Expr::Block(b) if !want => {
                    self.lower_stmts(&b.block.stmts, Tail::Unit)?;
                    Ok(None)
                }
                Expr::Block(b) => self.lower_stmts(&b.block.stmts, Tail::Value),
                other => {
                    if want {
                        Ok(Some(self.lower_expr(other)?))
                    } else {
                        self.lower_expr_stmt(other)?;
                        Ok(None)
                    }
                }
            },
        }
    }

    fn lower_match(&mut self, m: &syn::ExprMatch, want: bool) -> Result<Option<Val>> {
        // `match x.get(i) { Some(v) => a, None => b }` is `if let Some(v) = x.get(i)`.
        let is_some = |p: &Pat| matches!(p, Pat::TupleStruct(ts) if ts.path.is_ident("Some"));
        let is_none = |p: &Pat| {
            matches!(p, Pat::Wild(_))
                || matches!(p, Pat::Ident(pi) if pi.ident == "None" && pi.subpat.is_none())
        };
        // Several `Some` arms (`Some(v) if v > 0.0 => a, Some(v) => b, None => c`) test
        // in turn, the `None` arm (one, anywhere, unguarded) is the last `else`.
        let (somes, nones): (Vec<&syn::Arm>, Vec<&syn::Arm>) =
            m.arms.iter().partition(|a| is_some(&a.pat));
        // (A wildcard is the `None` case only as the last arm: first, it takes all.)
        let is_last = |a: &syn::Arm| m.arms.last().is_some_and(|l| std::ptr::eq(l, a));
        let none_arm = match nones.as_slice() {
            [n] if n.guard.is_none()
                && is_none(&n.pat)
                && (!matches!(n.pat, Pat::Wild(_)) || is_last(n)) =>
            {
                Some(*n)
            }
            _ => None,
        };
        if let Some(none) = none_arm
            && !somes.is_empty()
        {
            let mut tests = Vec::new();
            for some in &somes {
                match self.option_element(&some.pat, &m.expr)? {
                    Some(t) => tests.push(t),
                    None => break,
                }
            }
            if tests.len() == somes.len() {
                let mut chain: Expr = (*none.body).clone();
                for (some, (holds, bind)) in somes.iter().zip(tests).rev() {
                    // A guard on `Some(v)` reads the element too.
                    let cond: Expr = match &some.guard {
                        Some((_, g)) => syn::parse_quote!(#holds && { #(#bind)* #g }),
                        None => holds,
                    };
                    let a = &some.body;
                    chain = syn::parse_quote!(if #cond { #(#bind)* #a } else { #chain });
                }
                let Expr::If(indexed) = chain else {
                    unreachable!("built as an `if` above")
                };
                return self.lower_if(&indexed, want);
            }
        }
        if let Some(s) = self.value_scrutinee(m)? {
            return self.lower_arms(&s, &m.arms, want, m.span());
        }
        // (A scrutinee that calls a plain helper, `match bucket(x[0]) { 0 => .. }`, carries
        // no derivative: it is kept as `no_grad(..)` keeps it.)
        let kept = self.integer_valued(&m.expr);
        let scrut = match !self.companion && self.may_change_values(&m.expr) {
            true => self.lower_condition(&m.expr)?,
            false => self.scrutinee_tokens(kept.as_ref().unwrap_or(&m.expr)),
        };
        let s = self.inactive_local("scrutinee", scrut, m.expr.span());
        self.note_struct_scrutinee(&s, &m.expr);
        for arm in &m.arms {
            if pat_binds(&arm.pat) && !self.binds_constants(&m.expr, &arm.pat) {
                return unsupported(
                    &arm.pat,
                    "a `match` pattern that binds variables (other than one naming the whole value, `v if v > 0.0 => ..`), except slice patterns of bindings and `_` in arms without guards on a slice named by a variable or a member or on a range of one, and patterns on a by-value parameter that is never differentiated (an enum, an `Option`, an integer), a struct parameter or `no_grad(..)` of a value without a derivative",
                );
            }
        }
        self.lower_arms(&s, &m.arms, want, m.span())
    }

    fn lower_arms(
        &mut self,
        s: &Ident,
        arms: &[syn::Arm],
        want: bool,
        span: Span,
    ) -> Result<Option<Val>> {
        let Some((first, rest)) = arms.split_first() else {
            return Err(syn::Error::new(span, "a `match` with no arm"));
        };
        let pat = &first.pat;
        let catch_all = matches!(pat, Pat::Wild(_)) && first.guard.is_none();
        let body = Branch::Expr((*first.body).clone());
        if catch_all || rest.is_empty() {
            // The last arm matches: the match is exhaustive.
            self.scopes.push(HashMap::default());
            let want = want && !body.diverges();
            let r = self
                .bind_pattern(s, pat, span)
                .and_then(|()| self.lower_branch_here(&body, want));
            self.scopes.pop();
            return r;
        }
        let test = without_bindings(pat, None);
        let cond = match &first.guard {
            Some((_, g)) if pat_binds(pat) => {
                // The guard reads the pattern's variables: a copy of each value, as the arm's
                // body does (see `bind_pattern`); on a struct parameter, the values as the
                // user's scrutinee binds them.
                let vars = pattern_bindings(pat);
                self.scopes.push(
                    vars.iter()
                        .map(|v| (v.to_string(), Binding::Var(v.clone())))
                        .collect(),
                );
                let user = self.struct_scrutinees.get(&s.to_string()).cloned();
                let g: Expr = match user {
                    Some(_) => (**g).clone(),
                    None => syn::parse_quote!({
                        #(let #vars = ::core::clone::Clone::clone(#vars);)*
                        #g
                    }),
                };
                let g = self.render(&g);
                self.scopes.pop();
                let copy = without_mut(pat);
                match user {
                    Some(user) => quote!(match #user { #pat if #g => true, _ => false }),
                    None => quote!(match &#s { #copy if #g => true, _ => false }),
                }
            }
            Some((_, g)) => {
                self.refuse_effects(g, "a `match` guard")?;
                let g = self.render(g);
                quote!(matches!(#s, #test if #g))
            }
            None => quote!(matches!(#s, #test)),
        };
        let rest = rest.to_vec();
        let s2 = s.clone();
        let then_diverges = body.diverges();
        let else_diverges = rest.iter().all(|a| expr_diverges(&a.body));
        let (then_b, tv) = self.in_block(|l| {
            l.bind_pattern(s, pat, span)?;
            l.lower_branch(&body, want && !then_diverges)
        })?;
        let (else_b, ev) = self.in_block(|l| l.lower_arms(&s2, &rest, want, span))?;
        self.emit_branches(
            cond,
            (then_b, tv, then_diverges),
            (else_b, ev, else_diverges),
            want,
            span,
            "every arm of a `match` used as a value needs a value",
        )
    }

    /// The local that a push onto a vector, or an item of a `collect`, gives whole as a
    /// row of a vector of vectors: a local vector (`hs.push(h)`), one made in place
    /// (`hs.push(x.to_vec())`), or, where `of_rows` says that the receiver holds vectors,
    /// the vector a call returned (whose type the call does not show), marked a buffer.
    /// (A local array is pushed as a value; see the `push` arm.)
    fn vector_row(&mut self, v: &Val, of_rows: bool) -> Option<Ident> {
        if self.companion {
            return None;
        }
        let (row, made) = match v {
            Val::Place(p, _) if p.is_whole() => (&p.base, false),
            Val::Op(Operand::Var(b)) => (b, true),
            _ => return None,
        };
        let name = row.to_string();
        let vector = matches!(self.kinds.get(&name), Some(VarKind::Buffer))
            && !self.array_locals.contains(&name);
        if !(vector || (of_rows && made)) {
            return None;
        }
        self.kinds.insert(name, VarKind::Buffer);
        Some(row.clone())
    }

    /// `place.push(row)` of a vector as a row: a copy of it, so that the function, and
    /// the companions, may read `row` after the push.
    fn push_row(&mut self, place: Place, row: Ident) {
        self.matrix_vars.insert(place.base.to_string());
        self.emit(Stmt::Push {
            place,
            val: Operand::Var(row),
            copy: true,
        });
    }

    /// The operand of a value pushed onto a vector: a float, not a slice or another part of
    /// a buffer. Array literals and whole vectors are pushed as rows (see the `push` arm
    /// of the method calls).
    fn pushed(&mut self, v: Val, span: Span) -> Result<Operand> {
        self.pushed_as(
            v,
            span,
            "pushing a slice onto a vector (push a copy of it as a row, `ps.push(x[..2].to_vec())`, or an array, `ps.push([x[0], x[1]])`)",
        )
    }

    /// [`Self::pushed`], refused with `refusal` where the value is a buffer.
    fn pushed_as(&mut self, v: Val, span: Span, refusal: &str) -> Result<Operand> {
        let buffer = match &v {
            // A struct: `operand` says that a struct value cannot go into a `Vec`.
            Val::Place(p, _) if self.is_struct_value(p) => false,
            Val::Place(p, _) => !is_scalar_place(p, self),
            Val::Op(Operand::Var(b)) => {
                matches!(self.kinds.get(&b.to_string()), Some(VarKind::Buffer))
            }
            _ => false,
        };
        if buffer && !self.companion {
            return unsupported_at(span, refusal);
        }
        self.operand(v, span)
    }

    /// `a.dim()`, `a.nrows()`, .. of an `ndarray` parameter: its shape, an integer; and
    /// the same of a struct member, already checked to be an array
    /// (`__private::array_shape(&l.w).dim()`, see [`Self::member_array_shape`]).
    fn is_array_shape(&self, m: &syn::ExprMethodCall) -> bool {
        crate::builtins::is_ndarray_shape_method(&m.method.to_string())
            && match &*m.receiver {
                Expr::Path(p) => p.path.get_ident().is_some_and(|id| {
                    matches!(self.lookup(&id.to_string()), Some(Binding::Var(v))
                        if self.array_params.contains(&v.to_string()))
                }),
                Expr::Call(c) => matches!(&*c.func, Expr::Path(p)
                    if path_names(&p.path).ends_with(&["__private".into(), "array_shape".into()])),
                _ => false,
            }
    }

    /// `l.w.dim()`, `self.w.nrows()`, .. of a struct member: the member's shape, if it is
    /// an `ndarray` array, which `autodiff_core::__private::array_shape` checks (the type
    /// of a member is not known here, and a method of the user's own of that name would
    /// otherwise lose its derivative without a word).
    fn member_array_shape(&self, m: &syn::ExprMethodCall) -> Option<syn::ExprMethodCall> {
        // Not `shape`, which names a distribution's parameter as often as an array's
        // shape: a member's own `shape()` may carry a derivative.
        let name = m.method.to_string();
        if !crate::builtins::is_ndarray_shape_method(&name) || name == "shape" {
            return None;
        }
        let Expr::Field(f) = &*m.receiver else {
            return None;
        };
        let mut checked = m.clone();
        checked.receiver = Box::new(syn::parse_quote_spanned!(f.span()=>
            ::autodiff_core::__private::array_shape(&#f)
        ));
        Some(checked)
    }

    /// Whether `p` is one index into a matrix (`hs[i]`): a row.
    fn is_row(&self, p: &Place) -> bool {
        matches!(p.proj.as_slice(), [Proj::Index(_)]) && self.holds_rows(p)
    }

    /// Whether the buffer `p` is based on holds rows: a matrix built in the function, or
    /// a buffer indexed twice.
    fn holds_rows(&self, p: &Place) -> bool {
        self.matrix_vars.contains(&p.base.to_string())
            || (!self.companion && self.row_params.contains(&p.base.to_string()))
            || self
                .matrices
                .iter()
                .any(|m| matches!(self.lookup(m), Some(Binding::Var(v)) if *v == p.base))
    }

    /// `Point { x: a, y: b }`: the struct as an operation (`Op::StructLit`), or `None` for
    /// a constant kept as written: one whose members read no local, unless `keep` (a
    /// `let` binding, whose members may be written later), or one written with
    /// `..base`.
    fn lower_struct(&mut self, s: &syn::ExprStruct, keep: bool) -> Result<Option<Op>> {
        let constant = !self.mentions_locals(&Expr::Struct(s.clone()));
        if constant && (!keep || s.rest.is_some() || s.qself.is_some()) {
            return Ok(None);
        }
        if s.qself.is_some() {
            return unsupported(s, "a struct path with a qualified self type");
        }
        if let Some(dots) = &s.dot2_token {
            let s_rest = &s.rest;
            return unsupported(
                quote!(#dots #s_rest),
                "struct update syntax (`..base`; write every member instead)",
            );
        }
        let members = s
            .fields
            .iter()
            .map(|f| (f.member.clone(), &f.expr))
            .collect();
        self.struct_members(&s.path, members, keep)
    }

    /// `Pair(a, b)`: the struct as an operation with members `0`, `1`, .. (see
    /// [`Self::lower_struct`]).
    fn lower_tuple_struct(&mut self, c: &syn::ExprCall, keep: bool) -> Result<Option<Op>> {
        let Expr::Path(p) = strip(&c.func) else {
            return Ok(None);
        };
        if !keep && !c.args.iter().any(|a| self.mentions_locals(a)) {
            return Ok(None);
        }
        let members = c
            .args
            .iter()
            .enumerate()
            .map(|(i, a)| (syn::Member::Unnamed(syn::Index::from(i)), a))
            .collect();
        self.struct_members(&p.path, members, keep)
    }

    /// A struct of the members' values. A member holds a scalar or a constant: a buffer,
    /// a reference or another struct that may carry derivatives is an error at the
    /// member (its shadow would have to be built from theirs; a struct with an owned
    /// buffer bound by `let` is lowered by [`Self::lower_struct_with_buffers`]). `None` when every member
    /// is a constant, unless `keep`.
    ///
    /// Each member's value is a local of its own, defined here (a value already held by
    /// another local, or a constant expression reading locals, is copied into one): no
    /// later statement writes it, so the reverse sweep can build the struct again from
    /// its members wherever it needs it, instead of recording it.
    fn struct_members(
        &mut self,
        path: &syn::Path,
        members: Vec<(syn::Member, &Expr)>,
        keep: bool,
    ) -> Result<Option<Op>> {
        const WHY: &str = "a struct member holding a reference, another struct, or a \
            buffer a call returned, built from values that may carry derivatives (struct \
            values built in differentiated code hold floats and constants, and owned buffers \
            written as `vec![..]`, an array, `to_vec()`, `clone()`, `collect()` or a local \
            buffer where a `let` binds the struct)";
        let mut fields = Vec::new();
        for (m, e) in members {
            let start = self.out.last().map_or(0, Vec::len);
            let o = match self.lower_expr(e)? {
                Val::Place(p, _) if !is_scalar_place(&p, self) => return unsupported(e, WHY),
                Val::Tuple(items) if !items.is_empty() => return unsupported(e, WHY),
                v => self.operand(v, e.span())?,
            };
            if let Operand::Var(x) = &o
                && self.kinds.get(&x.to_string()) != Some(&VarKind::Scalar)
            {
                return unsupported(e, WHY);
            }
            let defined_here = |l: &Self, x: &Ident| {
                l.out.last().is_some_and(|b| {
                    b[start.min(b.len())..]
                        .iter()
                        .any(|s| matches!(s, Stmt::Let { var, mutable: false, .. } if var == x))
                })
            };
            let o = match o {
                Operand::Var(x) if !defined_here(self, &x) => {
                    self.let_op(Op::Use(Operand::Var(x)), e.span())
                }
                Operand::Lit(t) if self.mentions_locals(e) => {
                    self.let_op(Op::Inactive(t), e.span())
                }
                o => o,
            };
            fields.push((m, o));
        }
        if !keep && fields.iter().all(|(_, o)| matches!(o, Operand::Lit(_))) {
            return Ok(None);
        }
        Ok(Some(Op::StructLit(path.clone(), fields)))
    }

    /// An array or a vector written in place, where a value is expected (`norm(&[x, y])`,
    /// `[a, b].iter()`, `dot(&vec![a, b], x)`): a local holding it, as `let` binds one.
    fn buffer_value(&mut self, e: &Expr) -> Result<Val> {
        // A matrix (`det2(&[[a, b], [c, d]])`): rows, as `let` binds one.
        let matrix = match self.lower_matrix_literal(e)? {
            Some(m) => Some(m),
            None => self.lower_repeated_row(e)?,
        };
        if let Some(m) = matrix {
            self.matrix_vars.insert(m.to_string());
            return Ok(Val::Place(Place::local(m), false));
        }
        let Some(op) = self.buffer_init(e, false)? else {
            return unsupported(e, "this array expression");
        };
        let var = self.fresh("array", e.span());
        self.kinds.insert(var.to_string(), VarKind::Buffer);
        // (An array, not a `vec!`: a value of its own, as `let p = [a, b];` binds one.)
        if matches!(op, Op::ArrLit(_, false) | Op::ArrRepeat(..)) {
            self.array_locals.insert(var.to_string());
        }
        self.emit_owned(&var, false, op);
        Ok(Val::Place(Place::local(var), false))
    }

    /// `let var = op;` of an owned value (a buffer or a struct built in the body),
    /// recording a struct as one (`struct_values`).
    fn emit_owned(&mut self, var: &Ident, mutable: bool, op: Op) {
        if matches!(op, Op::StructLit(..)) {
            self.struct_values.insert(var.to_string());
        }
        self.emit(Stmt::Let {
            var: var.clone(),
            mutable,
            op,
        });
    }

    /// A struct built outside a `let` (`P { x, y }.norm()`, `f(&P { x, y })`): a local
    /// holding it, or the expression as written when it is a constant.
    fn struct_value(&mut self, op: Option<Op>, e: &Expr) -> Result<Val> {
        let Some(op) = op else {
            return Ok(Val::Op(Operand::Lit(self.render(e))));
        };
        let var = self.fresh("value", e.span());
        self.kinds.insert(var.to_string(), VarKind::Value);
        self.emit_owned(&var, false, op);
        Ok(Val::Place(Place::local(var), false))
    }

    /// Why a call of `path` with values that may carry derivatives cannot be
    /// differentiated, when `path` is not a function: a parameter holding a function
    /// pointer, an enum variant of the standard library (tuple structs are built by
    /// `lower_tuple_struct`), or a smart pointer's constructor.
    fn not_a_function(&self, path: &syn::Path) -> Option<String> {
        if let Some(id) = path.get_ident()
            && self.is_inert_param(id)
        {
            return Some(format!(
                "calling `{id}`, a function passed as a value (its derivative is unknown; take a closure, `{id}: impl Fn(f64) -> f64`, whose derivatives travel with it, or wrap the call in `no_grad(..)`)"
            ));
        }
        let names = path_names(path);
        let last = names.last()?;
        if last == "Some" {
            return Some(
                "building a value of `Some` (an enum variant; a `let mut` local of an `Option` of a number or of a tuple of numbers, `let mut best = None` or `let mut best: Option<f64> = None`, is read where it is only assigned `Some(e)` (`Some((i, v))` for a tuple) or `None` and read by `if let`, `match`, `let .. else`, `unwrap`, `unwrap_or`, `map_or`, `is_some`, `is_none`, `is_some_and` or `is_none_or`)".to_string(),
            );
        }
        if last.starts_with(|c: char| c.is_ascii_uppercase()) {
            return Some(format!("building a value of `{last}` (an enum variant)"));
        }
        if let [.., owner, new] = names.as_slice()
            && new == "new"
            && matches!(owner.as_str(), "Box" | "Rc" | "Arc" | "Cell" | "RefCell")
        {
            return Some(format!("`{owner}::new` of a value"));
        }
        None
    }

    /// Whether the source name `v` is a parameter that is never differentiated (`n: usize`,
    /// `ks: &[usize]`), still bound to its own name.
    fn is_inert_param(&self, v: &Ident) -> bool {
        let name = v.to_string();
        self.inert_params.contains(&name)
            && matches!(self.lookup(&name), Some(Binding::Var(b)) if *b == name)
    }

    /// Whether the lowered local `v` holds a constant: a parameter that is never
    /// differentiated, an element of one, or an immutable local bound to a constant.
    fn holds_constant(&self, v: &Ident) -> bool {
        self.inert_params.contains(&v.to_string())
    }

    /// Whether `e` names a by-value parameter that is never differentiated: values bound
    /// from it are constants. From anything else they could carry a derivative, which a
    /// binding would drop.
    fn is_inert_scrutinee(&self, e: &Expr) -> bool {
        match strip(e) {
            // (Or a local table of constants, `let pairs = [(0.5, 0.2), ..];`.)
            Expr::Path(p) => p.path.get_ident().is_some_and(|id| {
                self.is_inert_param(id)
                    || matches!(self.lookup(&id.to_string()), Some(Binding::Var(v))
                        if self.holds_constant(v) && self.kinds.get(&v.to_string()) == Some(&VarKind::Scalar))
            }),
            // A search's position (`Ok(j)`, `Some(k)` of `binary_search`, `position`).
            Expr::MethodCall(m) => self.is_search(m),
            // A value with no derivative (`no_grad(bracket(t))`).
            Expr::Call(c) => matches!(&*c.func, Expr::Path(p)
                if p.path.segments.last().is_some_and(|s| s.ident == "no_grad")),
            _ => false,
        }
    }

    /// Whether `e` names a parameter whose type is a type parameter that is not a float,
    /// or `impl Trait` (see `generic_params`).
    fn on_generic_param(&self, e: &Expr) -> bool {
        let Expr::Path(p) = strip(strip_ref(e)) else {
            return false;
        };
        p.path.get_ident().is_some_and(|id| {
            self.generic_params.contains(&id.to_string())
                && matches!(self.lookup(&id.to_string()), Some(Binding::Var(v)) if v == id)
        })
    }

    /// Whether `e` is a search's result (`x.iter().position(..)`, `binary_search(..)`), or
    /// such a result taken apart by `Option`/`Result` methods whose closures read only
    /// constants (`.map(|k| k * 2)`, `.ok()`).
    fn is_search_result(&self, e: &Expr) -> bool {
        self.search_chain(e, true)
    }

    /// Whether `e` is a search's `Option` or `Result` (`position`, `binary_search`), or
    /// one taken on by `Option`/`Result` methods (`.map(..)`), whose closures read only
    /// constants where `constant_closures` says so.
    fn search_chain(&self, e: &Expr, constant_closures: bool) -> bool {
        match strip(e) {
            Expr::MethodCall(m) if self.is_search(m) => !matches!(
                m.method.to_string().as_str(),
                "any" | "all" | "count" | "contains"
            ),
            Expr::MethodCall(m) => {
                is_option_combinator(&m.method.to_string())
                    && self.search_chain(&m.receiver, constant_closures)
                    && (!constant_closures
                        || m.args
                            .iter()
                            .all(|a| self.names_only_constants(&a.to_token_stream())))
            }
            _ => false,
        }
    }

    /// Whether `m` is a slice's or an iterator's search (see [`is_search_method`]), not a
    /// struct's own method of that name.
    fn is_search(&self, m: &syn::ExprMethodCall) -> bool {
        is_search_method(&m.method.to_string()) && !self.receives_on_struct(&m.receiver)
    }

    /// Whether a method called on `receiver` is a struct's own (the user's): the receiver
    /// names a struct, or the methods under it start at one (`z.rev()` of a struct `z`).
    fn receives_on_struct(&self, receiver: &Expr) -> bool {
        self.is_struct_receiver(receiver) || self.rooted_at_struct(receiver)
    }

    /// Whether a pattern may bind the values of `e` as constants: `e` names a by-value
    /// parameter that is never differentiated, or reads a struct parameter (`kind`,
    /// `*kind`, `cfg.mode`), which is then recorded in [`Body::pattern_params`] so that
    /// a companion where it is active is refused.
    fn binds_constants(&mut self, e: &Expr, pat: &Pat) -> bool {
        if self.is_inert_scrutinee(e) {
            return true;
        }
        let Some(name) = self.struct_param_root(e) else {
            return false;
        };
        self.pattern_params.push((name, pat.span()));
        true
    }

    /// The value a `match` tests, as the local that holds it is bound: a reference to a
    /// struct parameter's value (`&(cfg.mode)`, which a pattern's bindings cannot move
    /// out of), else the value itself.
    fn scrutinee_tokens(&self, e: &Expr) -> TokenStream {
        let t = self.render(e);
        if self.struct_param_root(e).is_some() {
            quote!(&(#t))
        } else {
            t
        }
    }

    /// Records `s` as the scrutinee local of `e` when `e` reads a struct parameter (see
    /// `struct_scrutinees`).
    fn note_struct_scrutinee(&mut self, s: &Ident, e: &Expr) {
        if self.struct_param_root(e).is_some() {
            let t = self.render(e);
            self.struct_scrutinees.insert(s.to_string(), t);
        }
    }

    /// The struct parameter that `e` reads (`kind`, `&kind`, `*kind`, `cfg.mode`), still
    /// bound to its own name.
    fn struct_param_root(&self, e: &Expr) -> Option<String> {
        let mut root = strip(e);
        loop {
            root = match root {
                Expr::Reference(r) => strip(&r.expr),
                Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => strip(&u.expr),
                Expr::Field(f) => strip(&f.base),
                _ => break,
            };
        }
        let Expr::Path(p) = root else { return None };
        let name = p.path.get_ident()?.to_string();
        let own = matches!(self.lookup(&name), Some(Binding::Var(b)) if *b == name);
        (own && self.struct_refs.contains(&name)).then_some(name)
    }

    /// `let name = value;` of a new local holding a value with no derivative (a
    /// scrutinee, an index), evaluated once as written.
    fn inactive_local(&mut self, name: &str, value: TokenStream, span: Span) -> Ident {
        let v = self.fresh(name, span);
        self.kinds.insert(v.to_string(), VarKind::Scalar);
        self.emit(Stmt::Let {
            var: v.clone(),
            mutable: false,
            op: Op::Inactive(value),
        });
        v
    }

    /// The scrutinee of a `match` whose arms bind it whole (`v if v > 0.0 => v * v`,
    /// `v => -v`) and nothing else, as a local holding its value, which those arms then
    /// name: the value may carry a derivative. `None` for any other `match`.
    fn value_scrutinee(&mut self, m: &syn::ExprMatch) -> Result<Option<Ident>> {
        let whole =
            |p: &Pat| matches!(p, Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none());
        let binding: Vec<&Pat> = m
            .arms
            .iter()
            .map(|a| &a.pat)
            .filter(|p| pat_binds(p))
            .collect();
        if binding.is_empty()
            || !binding.iter().all(|p| whole(p))
            || self.is_inert_scrutinee(&m.expr)
        {
            return Ok(None);
        }
        // A tuple keeps the error about patterns that bind.
        if matches!(strip(&m.expr), Expr::Tuple(_)) {
            return Ok(None);
        }
        let v = self.lower_expr(&m.expr)?;
        if matches!(&v, Val::Place(p, _) if !is_scalar_place(p, self)) || matches!(v, Val::Tuple(_))
        {
            return Ok(None);
        }
        let s = match self.operand(v, m.expr.span())? {
            Operand::Var(t) => t,
            Operand::Lit(t) => self.inactive_local("scrutinee", t, m.expr.span()),
        };
        self.value_scrutinees.insert(s.to_string());
        Ok(Some(s))
    }

    /// Binds the variables of an arm's pattern, which matches the scrutinee `s`: the whole
    /// value of a scrutinee from `value_scrutinee`, else each variable to a constant,
    /// `match &s { pat => clone(v), _ => unreachable!() }`.
    fn bind_pattern(&mut self, s: &Ident, pat: &Pat, span: Span) -> Result<()> {
        if let Pat::Ident(pi) = pat
            && pi.subpat.is_none()
            && self.value_scrutinees.contains(&s.to_string())
        {
            // The whole scrutinee, with its derivative (`value_scrutinee`).
            self.bind(&pi.ident, Binding::Var(s.clone()));
            return Ok(());
        }
        for v in pattern_bindings(pat) {
            // The pattern binding only `v`, and not `mut`: the local is `mut` instead.
            let only = without_bindings(pat, Some(&v));
            let value = match self.struct_scrutinees.get(&s.to_string()) {
                Some(user) => quote!(match #user {
                    #only => #v,
                    #[allow(unreachable_patterns)]
                    _ => ::core::unreachable!(),
                }),
                None => quote!(match &#s {
                    #only => ::core::clone::Clone::clone(#v),
                    #[allow(unreachable_patterns)]
                    _ => ::core::unreachable!(),
                }),
            };
            let mutable = binds_mutably(pat, &v);
            self.bind_let(&v, mutable, Val::Op(Operand::Lit(value)), span)?;
        }
        Ok(())
    }

    fn lower_branch_here(&mut self, b: &Branch, want: bool) -> Result<Option<Val>> {
        self.lower_branch(b, want)
    }

    /// `break` (or `continue`) of the innermost loop or of the loop `label`: the loops
    /// inside the target are left by their `break` flags, then the target's own flag is
    /// set; the statements after each of them are guarded by these flags.
    fn leave_loop(&mut self, label: Option<&syn::Lifetime>, brk: bool, span: Span) -> Result<()> {
        let target = self.loop_target(label, brk, span)?;
        let mut flags: Vec<Ident> = self.loops[target + 1..]
            .iter()
            .map(|c| c.brk.clone())
            .collect();
        let own = &self.loops[target];
        flags.push(if brk {
            own.brk.clone()
        } else {
            own.cont.clone()
        });
        for f in flags {
            self.emit(Stmt::Assign {
                place: Place::local(f),
                kind: AssignKind::Set,
                val: Operand::Lit(quote!(true)),
            });
        }
        Ok(())
    }

    /// The position in `self.loops` of the loop (or labelled block) that a `break` or
    /// `continue` with this label leaves; without a label, the innermost loop.
    fn loop_target(&self, label: Option<&syn::Lifetime>, brk: bool, span: Span) -> Result<usize> {
        let what = if brk { "`break`" } else { "`continue`" };
        let target = match label {
            None => self.loops.iter().rposition(|c| !c.block),
            Some(l) => {
                let name = l.ident.to_string();
                self.loops
                    .iter()
                    .rposition(|c| c.label.as_deref() == Some(name.as_str()))
            }
        };
        match target {
            Some(t) if brk || !self.loops[t].block => Ok(t),
            _ => Err(syn::Error::new(
                span,
                format!("{what} outside a loop of this function"),
            )),
        }
    }

    fn open_loop(&mut self, span: Span, label: Option<&syn::Label>) -> (Ident, Ident) {
        self.open_exit(span, label, Vec::new(), false)
    }

    /// Declares the `break` and `continue` flags of a loop or labelled block, whose
    /// `break` with a value assigns `vals`.
    fn open_exit(
        &mut self,
        span: Span,
        label: Option<&syn::Label>,
        vals: Vec<Ident>,
        block: bool,
    ) -> (Ident, Ident) {
        let brk = self.fresh("break", span);
        let cont = self.fresh("continue", span);
        for f in [&brk, &cont] {
            self.kinds.insert(f.to_string(), VarKind::Scalar);
            self.emit(Stmt::Let {
                var: f.clone(),
                mutable: true,
                op: Op::Inactive(quote!(false)),
            });
        }
        self.loops.push(LoopCtl {
            brk: brk.clone(),
            cont: cont.clone(),
            label: label.map(|l| l.name.ident.to_string()),
            vals,
            block,
        });
        (brk, cont)
    }

    fn loop_exit(&self, brk: &Ident) -> TokenStream {
        match &self.ret {
            Some(r) => {
                let f = &r.flag;
                quote!(#brk || #f)
            }
            None => quote!(#brk),
        }
    }

    fn lower_for(&mut self, f: &syn::ExprForLoop) -> Result<()> {
        self.refuse_effects(&f.expr, "the range or iterator of a `for` loop")?;
        if !self.companion
            && let Some(each) = self.line_loop(f)
        {
            return self.lower_for(&each);
        }
        if let Some((items, source)) = array_literal_source(&f.expr) {
            // `for c in [a, b]` (and `[a, b].iter()..`): the array bound first, then
            // iterated as a local is: a table of constants (`[2 * k, 2 * k + 1]`), or a
            // buffer whose elements carry derivatives.
            let span = items.span();
            let Some(Op::ArrLit(ops, _)) = self.buffer_init(&items, false)? else {
                return unsupported(&items, "iterating over this array");
            };
            let var = if ops.iter().all(|o| matches!(o, Operand::Lit(_))) {
                let lits = ops.iter().map(Operand::primal);
                let v = self.inactive_local("items", quote!([#(#lits),*]), span);
                self.inert_params.insert(v.to_string());
                v
            } else {
                let v = self.fresh("items", span);
                self.kinds.insert(v.to_string(), VarKind::Buffer);
                self.emit_owned(&v, false, Op::ArrLit(ops, false));
                v
            };
            self.scopes.push(HashMap::default());
            self.bind(&Ident::new("__ad_items", span), Binding::Var(var));
            let mut each = f.clone();
            *each.expr = source;
            let r = self.lower_for(&each);
            self.scopes.pop();
            return r;
        }
        // `for (w, i) in [(0.5, 0usize), (0.25, 2)]` (or `&[..]`, `[..].iter()`): the table
        // of constants bound first, then iterated as a local table is.
        if let Some((items, source)) = tuple_table_source(&f.expr)
            && !self.mentions_locals(&items)
        {
            // (Bound by reference: a constant's, which lives as long as the program, so
            // that references to its elements may be kept for the reverse sweep.)
            let mut each = f.clone();
            *each.expr = source;
            let block: syn::Block = syn::parse_quote_spanned!(f.span()=> {
                let __ad_table = &#items;
                #each
            });
            return self.lower_scoped(&block).map(|_| ());
        }
        // `for c in COV[i].iter()` over a row of a `const` matrix: the row bound first,
        // then iterated as a local table of constants is.
        if let Expr::Index(ix) = strip(chain_root(&f.expr))
            && self.const_item(&ix.expr).is_some()
        {
            let row = Ident::new("__ad_const_row", ix.span());
            let mut each = f.clone();
            *chain_root_mut(&mut each.expr) = syn::parse_quote!(#row);
            let block: syn::Block = syn::parse_quote_spanned!(f.span()=> {
                let #row = #ix;
                #each
            });
            return self.lower_scoped(&block).map(|_| ());
        }
        // Loops whose elements are values (`for z in zs` of a local array): written again
        // as loops the rest of this function reads, over copies where Rust's are.
        let by_value = self.iterated_by_value(&f.expr);
        match self.by_value_loop(f, by_value.as_ref()) {
            Some(LoopRewrite::Loop(each)) => return self.lower_for(&each),
            Some(LoopRewrite::Block(block)) => return self.lower_scoped(&block).map(|_| ()),
            None => {}
        }
        let Some(chain) = self.parse_chain(&f.expr)? else {
            // (An adapter the chains are not read through, `chain` before `enumerate`
            // or in a loop that may leave early, `take_while`, is named.)
            if let Some(a) = adapter_on_iterator(&f.expr) {
                return unsupported(&a.method, &unread_adapter_message(&a.method.to_string()));
            }
            return unsupported(&f.expr, "iterating over this expression");
        };
        // (The body may assign what the source's indices read: `for v in w[k..].iter()`
        // iterates over the slice `k` chose before the loop.)
        let chain = self.chain_with_fixed_indices(chain);
        let pat = (*f.pat).clone();
        let body = f.body.clone();
        let may_exit = block_may_exit_loop(&body) || contains_return(&body);
        let ctl = if may_exit {
            Some(self.open_loop(f.span(), f.label.as_ref()))
        } else {
            None
        };
        let r = self.lower_chain_loop_with(chain, f.span(), ctl.clone(), |l, elem| {
            if let Some((_, cont)) = &ctl {
                l.emit(Stmt::Assign {
                    place: Place::local(cont.clone()),
                    kind: AssignKind::Set,
                    val: Operand::Lit(quote!(false)),
                });
            }
            match elem {
                // An element of a local array or vector iterated by value is a value (a
                // callee takes it as one), read when the iteration starts.
                Val::Place(p, m) if by_value.is_some() && is_scalar_place(&p, l) => {
                    let o = l.operand(Val::Place(p, m), pat.span())?;
                    l.bind_pat(&pat, Val::Op(o))?;
                }
                elem => l.bind_pat_ref(&pat, elem)?,
            }
            l.lower_stmts(&body.stmts, Tail::Unit)?;
            Ok(())
        });
        if may_exit {
            self.loops.pop();
        }
        r
    }

    /// `f` written again where its elements are values (`by_value`: the local array or
    /// vector it iterates by value, see [`Self::iterated_by_value`]): a local matrix's rows,
    /// `*a` of an array parameter, a struct's array member, a call's vector; over a copy
    /// where the body writes what it iterates, as Rust's loop is. `None` where `f` is read
    /// as it is.
    fn by_value_loop(&self, f: &syn::ExprForLoop, by_value: Option<&Ident>) -> Option<LoopRewrite> {
        // `for row in m` of a local matrix: its rows, as `for &row in m.iter()` reads them
        // (over a copy, `m.clone()`, where the body writes `m`).
        if let Some(m) = by_value
            && self.is_local_matrix(&syn::parse_quote!(#m))
        {
            let mut each = f.clone();
            let writes = writes_local(&f.body, m);
            *each.expr = if writes {
                syn::parse_quote_spanned!(f.expr.span()=> #m.clone().iter())
            } else {
                syn::parse_quote_spanned!(f.expr.span()=> #m.iter())
            };
            let pat = &f.pat;
            match &**pat {
                Pat::Reference(_) => {}
                // `for row in m`: each row read in place.
                Pat::Ident(pi) if pi.mutability.is_none() && pi.by_ref.is_none() && !writes => {
                    *each.pat = syn::parse_quote_spanned!(pat.span()=> &#pat);
                }
                // `for mut row in m`, `for [a, b] in m`, or a body that writes `m`: each
                // row copied into the pattern by index (a `mut` row written in the body is
                // the copy, not `m`'s), from a copy of `m` where the body writes it.
                _ => {
                    let (i, copy) = (
                        Ident::new("__ad_row_index", pat.span()),
                        Ident::new("__ad_rows", pat.span()),
                    );
                    let source = if writes { &copy } else { m };
                    *each.pat = syn::parse_quote_spanned!(pat.span()=> #i);
                    *each.expr = syn::parse_quote_spanned!(f.expr.span()=> 0..#source.len());
                    let body = &f.body;
                    each.body = syn::parse_quote_spanned!(body.span()=> {
                        let #pat = #source[#i];
                        #body
                    });
                    if writes {
                        let block: syn::Block = syn::parse_quote_spanned!(f.span()=> {
                            let #copy = #m;
                            #each
                        });
                        return Some(LoopRewrite::Block(block));
                    }
                }
            }
            return Some(LoopRewrite::Loop(each));
        }
        // `for z in *a` of an array parameter (`a: &[f64; 3]`): its elements, by value
        // (from a copy where the body writes `a`).
        if let Expr::Unary(u) = strip(&f.expr)
            && matches!(u.op, syn::UnOp::Deref(_))
            && let Expr::Path(p) = strip(&u.expr)
            && let Some(a) = p.path.get_ident()
            && matches!(self.lookup(&a.to_string()), Some(Binding::Var(v)) if v == a)
            && self.array_param_lens.contains_key(&a.to_string())
        {
            let mut each = f.clone();
            *each.expr = if writes_local(&f.body, a) {
                syn::parse_quote_spanned!(f.expr.span()=> #a.to_vec().into_iter())
            } else {
                syn::parse_quote_spanned!(f.expr.span()=> #a.iter().copied())
            };
            return Some(LoopRewrite::Loop(each));
        }
        // `for z in st.a` of a struct's array member that the body writes: over a copy.
        if let Some(Expr::Path(root)) = field_root(&f.expr)
            && let Some(root) = root.path.get_ident()
            && writes_local(&f.body, root)
        {
            let copy = Ident::new("__ad_iterated_member", f.expr.span());
            let mut each = f.clone();
            *each.expr = syn::parse_quote!(#copy);
            let member = &f.expr;
            let block: syn::Block = syn::parse_quote_spanned!(f.span()=> {
                let #copy = #member.to_vec();
                #each
            });
            return Some(LoopRewrite::Block(block));
        }
        // `for z in zs` of a local array that the body writes: over a copy, so that the
        // writes do not change the elements still to come.
        if let Some(zs) = by_value
            && writes_local(&f.body, zs)
        {
            let copy = format_ident!("__ad_iterated_{}", zs);
            let mut each = f.clone();
            *each.expr = syn::parse_quote!(#copy);
            let block: syn::Block = syn::parse_quote_spanned!(f.span()=> {
                let #copy = #zs;
                #each
            });
            return Some(LoopRewrite::Block(block));
        }
        // `for v in h` of a vector a call returned: iterated by value, as `h.into_iter()`.
        if let Expr::Path(p) = strip(&f.expr)
            && let Some(id) = p.path.get_ident()
            && let Some(Binding::Var(v)) = self.lookup(&id.to_string())
            && self.is_call_result(v)
            && !self.companion
        {
            let mut each = f.clone();
            *each.expr = syn::parse_quote_spanned!(f.expr.span()=> #id.into_iter());
            return Some(LoopRewrite::Loop(each));
        }
        None
    }

    /// The local array or vector that `for .. in e` iterates by value (`for z in zs`, `for
    /// z in zs.into_iter()`): its elements are values, not references.
    fn iterated_by_value(&self, e: &Expr) -> Option<Ident> {
        let mut e = strip(e);
        // (Also of a copy: `zs.clone().into_iter()`, `zs.iter().copied()`.)
        while let Expr::MethodCall(m) = e
            && m.args.is_empty()
        {
            e = match m.method.to_string().as_str() {
                "into_iter" | "clone" | "to_vec" => strip(&m.receiver),
                "copied" | "cloned" => match strip(&m.receiver) {
                    Expr::MethodCall(i) if i.method == "iter" && i.args.is_empty() => {
                        strip(&i.receiver)
                    }
                    _ => return None,
                },
                _ => return None,
            };
        }
        let Expr::Path(p) = e else { return None };
        let id = p.path.get_ident()?;
        match self.lookup(&id.to_string()) {
            Some(Binding::Var(v))
                if matches!(self.kinds.get(&v.to_string()), Some(VarKind::Buffer))
                    && !self.struct_values.contains(&v.to_string()) =>
            {
                Some(id.clone())
            }
            _ => None,
        }
    }

    fn lower_while(&mut self, w: &syn::ExprWhile) -> Result<()> {
        // (A `while let` is a `loop` of an `if let` by now: `lower/while_lets.rs`.)
        let (brk, cont) = self.open_loop(w.span(), w.label.as_ref());
        let exit = self.loop_exit(&brk);
        let cond = (*w.cond).clone();
        let body = w.body.clone();
        let (block, _) = self.in_block(|l| {
            l.emit(Stmt::Assign {
                place: Place::local(cont.clone()),
                kind: AssignKind::Set,
                val: Operand::Lit(quote!(false)),
            });
            let c = l.lower_condition(&cond)?;
            let (set_brk, _) = l.in_block(|l2| {
                l2.emit(Stmt::Assign {
                    place: Place::local(brk.clone()),
                    kind: AssignKind::Set,
                    val: Operand::Lit(quote!(true)),
                });
                Ok(())
            })?;
            l.emit(Stmt::If {
                cond: quote!(!(#c)),
                then: set_brk,
                els: vec![],
                outs: vec![],
                then_vals: vec![],
                else_vals: vec![],
            });
            let guard_cond = l.exit_flags();
            let (inner, _) = l.in_block(|l2| l2.lower_stmts(&body.stmts, Tail::Unit))?;
            l.emit(guard(guard_cond, inner));
            Ok(())
        })?;
        self.loops.pop();
        self.emit(Stmt::Loop { body: block, exit });
        Ok(())
    }

    /// A `loop`, and its value when a `break` carries one (`let v = loop { .. break x; }`):
    /// the `break` assigns locals declared before the loop.
    fn lower_loop_value(&mut self, lp: &syn::ExprLoop, hint: Option<&syn::Type>) -> Result<Val> {
        let n = break_arity(&lp.body, lp.label.as_ref(), true).unwrap_or(0);
        let vals = self.value_slots(n, hint, lp.span());
        self.lower_loop(lp, vals.clone())?;
        Ok(slots_val(vals))
    }

    fn lower_loop(&mut self, lp: &syn::ExprLoop, vals: Vec<Ident>) -> Result<()> {
        let (brk, cont) = self.open_exit(lp.span(), lp.label.as_ref(), vals, false);
        let exit = self.loop_exit(&brk);
        let body = lp.body.clone();
        let (block, _) = self.in_block(|l| {
            l.emit(Stmt::Assign {
                place: Place::local(cont.clone()),
                kind: AssignKind::Set,
                val: Operand::Lit(quote!(false)),
            });
            l.lower_stmts(&body.stmts, Tail::Unit)?;
            Ok(())
        })?;
        self.loops.pop();
        self.emit(Stmt::Loop { body: block, exit });
        Ok(())
    }

    /// A labelled block (`'a: { .. break 'a v; .. }`): its statements run once, a `break`
    /// out of it sets its flag (guarding the statements after), and its value, from a
    /// `break` or from its tail, is assigned to locals declared before it.
    fn lower_labelled_block(
        &mut self,
        b: &syn::ExprBlock,
        want: bool,
        hint: Option<&syn::Type>,
    ) -> Result<Option<Val>> {
        let n = if want {
            let tail = match b.block.stmts.last() {
                Some(syn::Stmt::Expr(e, None)) if !is_unit_valued(e) => Some(expr_arity(e)),
                _ => None,
            };
            break_arity(&b.block, b.label.as_ref(), false)
                .or(tail)
                .unwrap_or(0)
        } else {
            0
        };
        let vals = self.value_slots(n, hint, b.span());
        self.open_exit(b.span(), b.label.as_ref(), vals.clone(), true);
        self.scopes.push(HashMap::default());
        let tail = if want {
            Tail::Into(vals.clone())
        } else {
            Tail::Unit
        };
        let r = self.lower_stmts(&b.block.stmts, tail);
        self.scopes.pop();
        self.loops.pop();
        r?;
        Ok(want.then(|| slots_val(vals)))
    }

    // ---------------------------------------------------------------- iterators

    /// Recognises `x.iter()`, `&x`, `a..b`, `x.chunks(k)` and the adapters `map`, `zip`,
    /// `enumerate`, `copied`, `cloned`.
    fn parse_chain(&mut self, e: &Expr) -> Result<Option<Chain>> {
        let e = strip(e);
        if let Expr::Path(p) = e
            && let Some(id) = p.path.get_ident()
            && let Some(Binding::Iter(chain, meaning)) = self.lookup(&id.to_string()).cloned()
        {
            // Read again here, its names must still mean what they meant where it was
            // bound (its closures captured those).
            if *meaning != self.names_meaning(&chain) {
                return unsupported(
                    e,
                    "an iterator bound with `let` that reads a name bound again before it is consumed",
                );
            }
            return self.parse_chain(&chain);
        }
        // A `const` or `static` array (`W`, `&W`, `W.iter()`): read by position, as a
        // buffer without a derivative.
        let item = match e {
            Expr::Reference(r) => self.const_item(&r.expr),
            Expr::MethodCall(m) if m.method == "iter" && m.args.is_empty() => {
                self.const_item(&m.receiver)
            }
            e => self.const_item(e),
        };
        if let Some(p) = item {
            return Ok(Some(Chain {
                source: Source::Slice(p, false),
                adapters: vec![],
            }));
        }
        match e {
            Expr::Range(_) => Ok(Some(Chain {
                source: Source::Range(self.render(e)),
                adapters: vec![],
            })),
            // The index iterators of generated reverse sweeps, when a companion is itself
            // differentiated: `Clone::clone(&range)`, `Iterator::rev(range)`, `rev_prefix`.
            Expr::Call(c) if self.companion && is_index_iterator_call(c) => Ok(Some(Chain {
                source: Source::Range(self.render(e)),
                adapters: vec![],
            })),
            Expr::Reference(r) => match self.lower_expr(&r.expr)? {
                Val::Place(p, _) => Ok(Some(Chain {
                    source: Source::Slice(p, r.mutability.is_some()),
                    adapters: vec![],
                })),
                Val::Op(Operand::Var(v)) if self.holds_constant(&v) => {
                    Ok(Some(self.constant_chain(e, &v)))
                }
                // A part of a buffer of constants (`&ks[1..]`), bound as a slice.
                Val::Op(Operand::Lit(t))
                    if r.mutability.is_none() && matches!(strip(&r.expr), Expr::Index(_)) =>
                {
                    let part = self.inactive_local("part", quote!(&#t), e.span());
                    self.inert_params.insert(part.to_string());
                    Ok(Some(Chain {
                        source: Source::Constants(
                            quote!(::core::iter::IntoIterator::into_iter(#part)),
                            part,
                        ),
                        adapters: vec![],
                    }))
                }
                // `&h` of a vector or array a call returned.
                Val::Op(Operand::Var(v)) if !self.companion => Ok(Some(Chain {
                    source: Source::Slice(Place::local(v), r.mutability.is_some()),
                    adapters: vec![],
                })),
                _ => Ok(None),
            },
            // The vector or array a call returns, iterated as it is (`for v in f(x)`).
            Expr::Call(c) if !self.companion && !is_tuple_struct_call(c) => {
                match self.lower_expr(e)? {
                    Val::Op(Operand::Var(v)) => Ok(Some(Chain {
                        source: Source::Slice(Place::local(v), false),
                        adapters: vec![],
                    })),
                    // A constant call, kept as written (`std::iter::repeat(2.0)`): not
                    // a chain this lowering reads by position.
                    _ => Ok(None),
                }
            }
            Expr::MethodCall(m) => {
                let name = m.method.to_string();
                match name.as_str() {
                    "iter" | "iter_mut" | "into_iter" if m.args.is_empty() => {
                        if is_range_expr(&m.receiver) {
                            return Ok(Some(Chain {
                                source: Source::Range(self.render(e)),
                                adapters: vec![],
                            }));
                        }
                        match self.lower_expr(&m.receiver)? {
                            Val::Op(Operand::Var(v)) if self.holds_constant(&v) => {
                                Ok(Some(self.constant_chain(e, &v)))
                            }
                            // A vector or array a call returned (`let h = layer(..);
                            // h.iter()`), read by index as a local buffer is; its values
                            // by `into_iter`.
                            Val::Op(Operand::Var(v)) if !self.companion => Ok(Some(Chain {
                                source: Source::Slice(Place::local(v), false),
                                adapters: if name == "into_iter" {
                                    vec![Adapter::Copied]
                                } else {
                                    vec![]
                                },
                            })),
                            Val::Place(p, _)
                                if p.is_whole()
                                    && self.array_params.contains(&p.base.to_string())
                                    && !matches!(
                                        self.ranked_arrays.get(&p.base.to_string()),
                                        Some(1 | 2)
                                    ) =>
                            {
                                unsupported(
                                    e,
                                    "iterating an `ndarray` array of more than two dimensions, or whose type does not name its number (loop over its indexes, `a[[i, j, l]]`)",
                                )
                            }
                            // `zs.into_iter()` of a local array or vector yields values.
                            Val::Place(p, _)
                                if name == "into_iter" && self.iterated_by_value(e).is_some() =>
                            {
                                Ok(Some(Chain {
                                    source: Source::Slice(p, false),
                                    adapters: vec![Adapter::Copied],
                                }))
                            }
                            Val::Place(p, pm) => Ok(Some(Chain {
                                source: Source::Slice(
                                    p,
                                    name == "iter_mut" || (name == "into_iter" && pm),
                                ),
                                adapters: vec![],
                            })),
                            _ => Ok(None),
                        }
                    }
                    "chunks" | "chunks_exact" | "chunks_mut" | "chunks_exact_mut"
                        if m.args.len() == 1 =>
                    {
                        match self.chain_receiver(&m.receiver)? {
                            Val::Place(p, _) => {
                                let k_var = self.bind_count(&m.args[0], "chunk");
                                // The length, read before the loop: in the index of a
                                // written chunk it would borrow the buffer while the chunk
                                // borrows it mutably.
                                let end = (!name.contains("exact")).then(|| {
                                    let base = p.primal();
                                    self.bind_tokens(quote!(#base.len()), "len", m.span())
                                });
                                Ok(Some(Chain {
                                    source: Source::Chunks(p, name.ends_with("_mut"), k_var, end),
                                    adapters: vec![],
                                }))
                            }
                            _ => Ok(None),
                        }
                    }
                    "rev" | "step_by" | "skip" | "take" if is_range_expr(&m.receiver) => {
                        Ok(Some(Chain {
                            source: Source::Range(self.render(e)),
                            adapters: vec![],
                        }))
                    }
                    "windows" if m.args.len() == 1 => match self.chain_receiver(&m.receiver)? {
                        Val::Place(p, _) => {
                            // `windows(0)` panics, with `windows`' own message.
                            let size = &m.args[0];
                            let checked = syn::parse_quote_spanned!(size.span()=>
                                __ad::window_size(#size));
                            let k = match strip(size) {
                                Expr::Lit(_) => self.bind_count(size, "window"),
                                _ => self.bind_count(&checked, "window"),
                            };
                            Ok(Some(Chain {
                                source: Source::Windows(p, k),
                                adapters: vec![],
                            }))
                        }
                        _ => Ok(None),
                    },
                    // Positions moved on an indexed chain (slices, chunks, windows, and
                    // their adapters); a chain over a range iterates it as written.
                    "rev" | "step_by" | "skip" | "take"
                        if m.args.len() == usize::from(name != "rev") =>
                    {
                        let Some(inner) = self.parse_chain(&m.receiver)? else {
                            return Ok(None);
                        };
                        if matches!(inner.source, Source::Range(_)) {
                            return Ok(None);
                        }
                        if inner.has_filter() {
                            return unsupported(
                                &m.method,
                                "an adapter that counts positions (`rev`, `skip`, `take`, `step_by`, `zip`, `enumerate`) after `filter`",
                            );
                        }
                        let r = match name.as_str() {
                            "rev" => {
                                let Some(len) = self.chain_len(&inner) else {
                                    return Ok(None);
                                };
                                Reindex::Rev(self.bind_tokens(len, "len", m.span()))
                            }
                            "skip" => Reindex::Skip(self.bind_count(&m.args[0], "skip")),
                            "take" => Reindex::Take(self.bind_count(&m.args[0], "take")),
                            _ => Reindex::StepBy(self.bind_count(&m.args[0], "step")),
                        };
                        Ok(Some(Chain {
                            source: Source::Reindexed(Box::new(inner), r),
                            adapters: vec![],
                        }))
                    }
                    "map" | "zip" | "enumerate" | "copied" | "cloned" | "filter" => {
                        let Some(mut inner) = self.parse_chain(&m.receiver)? else {
                            return Ok(None);
                        };
                        if matches!(name.as_str(), "zip" | "enumerate") && inner.has_filter() {
                            return unsupported(
                                &m.method,
                                "an adapter that counts positions (`rev`, `skip`, `take`, `step_by`, `zip`, `enumerate`) after `filter`",
                            );
                        }
                        if matches!(name.as_str(), "zip" | "enumerate") {
                            inner = self.read_by_position(inner, m.receiver.span());
                        }
                        let a = match name.as_str() {
                            "map" if m.args.len() == 1 => Adapter::Map(m.args[0].clone()),
                            "filter" if m.args.len() == 1 => Adapter::Filter(m.args[0].clone()),
                            "zip" if m.args.len() == 1 => {
                                let Some(other) = self.parse_chain(&m.args[0])? else {
                                    return unsupported(&m.args[0], "zipping with this iterator");
                                };
                                let other = self.read_by_position(other, m.args[0].span());
                                // Zipped chains are read by position.
                                if self.chain_len(&other).is_none() {
                                    return unsupported(&m.args[0], "zipping with this iterator");
                                }
                                if other.has_filter() {
                                    return unsupported(
                                        &m.args[0],
                                        "zipping with a filtered iterator",
                                    );
                                }
                                Adapter::Zip(Box::new(other))
                            }
                            "enumerate" => Adapter::Enumerate,
                            _ => Adapter::Copied,
                        };
                        inner.adapters.push(a);
                        Ok(Some(inner))
                    }
                    _ => Ok(None),
                }
            }
            Expr::Path(_) | Expr::Field(_) | Expr::Index(_) => match self.lower_expr(e)? {
                Val::Place(p, m) => Ok(Some(Chain {
                    source: Source::Slice(p, m),
                    adapters: vec![],
                })),
                Val::Op(Operand::Var(v)) if self.holds_constant(&v) => {
                    Ok(Some(self.constant_chain(e, &v)))
                }
                _ => Ok(None),
            },
            _ => Ok(None),
        }
    }

    /// `c` read by position: a range source (iterated as written otherwise) is bound to a
    /// local, once, before the loop, as `zip` and `enumerate` evaluate it.
    fn read_by_position(&mut self, c: Chain, span: Span) -> Chain {
        match c.source {
            Source::Range(r) => Chain {
                source: Source::Counting(self.bind_tokens(r, "range", span)),
                adapters: c.adapters,
            },
            source => Chain {
                source,
                adapters: c.adapters,
            },
        }
    }

    /// The buffer that `chunks` or `windows` reads: a place, or a `const` array.
    fn chain_receiver(&mut self, e: &Expr) -> Result<Val> {
        match self.const_item(e) {
            Some(p) => Ok(Val::Place(p, false)),
            None => self.lower_expr(e),
        }
    }

    /// `W` naming a `const` or `static` item (a name that no local or parameter binds, in
    /// upper case), or a local copy of one, as a place.
    fn const_item(&self, e: &Expr) -> Option<Place> {
        let Expr::Path(p) = strip(e) else {
            return None;
        };
        let id = p.path.get_ident().filter(|_| p.qself.is_none())?;
        let name = id.to_string();
        if let Some(Binding::Var(v)) = self.lookup(&name)
            && self.const_copies.contains(&v.to_string())
        {
            return Some(Place::local(v.clone()));
        }
        let upper =
            name.chars().all(|c| !c.is_lowercase()) && name.starts_with(char::is_alphabetic);
        (upper && self.lookup(&name).is_none()).then(|| Place::local(id.clone()))
    }

    /// A chain over a buffer of constants (`ks`, `&idx`, `ks.iter()`), iterated as written.
    fn constant_chain(&self, e: &Expr, buffer: &Ident) -> Chain {
        let r = self.render(e);
        Chain {
            source: Source::Constants(
                quote!(::core::iter::IntoIterator::into_iter(#r)),
                buffer.clone(),
            ),
            adapters: vec![],
        }
    }

    /// Binds an iterator adapter's count (`skip(n)`, `windows(k)`) to a fresh local,
    /// evaluated once before the loop. An integer literal stays as written, so that the
    /// indices it moves (`x[k + 1]`) keep a known offset from the loop's variable (see
    /// [`crate::carry`]).
    fn bind_count(&mut self, e: &Expr, base: &str) -> TokenStream {
        if let Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(n),
            ..
        }) = strip(e)
            && n.base10_parse::<usize>().is_ok_and(|n| n > 0)
        {
            return quote!(#n);
        }
        // `take(count(t))`: a count is an integer, so a plain helper computing it from
        // values needs no derivative (kept as `no_grad(..)` keeps it).
        let kept = self.integer_valued(e);
        let toks = self.render(kept.as_ref().unwrap_or(e));
        self.bind_tokens(toks, base, e.span())
    }

    /// Binds an index computation to a fresh local, evaluated once where it is emitted.
    fn bind_tokens(&mut self, toks: TokenStream, base: &str, span: Span) -> TokenStream {
        let var = self.fresh(base, span);
        self.kinds.insert(var.to_string(), VarKind::Scalar);
        self.emit(Stmt::Let {
            var: var.clone(),
            mutable: false,
            op: Op::Inactive(toks),
        });
        quote!(#var)
    }

    fn chain_len(&self, c: &Chain) -> Option<TokenStream> {
        let own = match &c.source {
            Source::Slice(p, _) => {
                let p = p.primal();
                quote!(#p.len())
            }
            Source::Chunks(p, _, k, end) => {
                let p = p.primal();
                if end.is_none() {
                    quote!(#p.len() / #k)
                } else {
                    quote!((#p.len() + #k - 1) / #k)
                }
            }
            Source::Windows(p, k) => {
                let p = p.primal();
                quote!((#p.len() + 1).saturating_sub(#k))
            }
            Source::Constants(_, b) => quote!(#b.len()),
            Source::Counting(r) => quote!(::core::iter::Iterator::size_hint(&#r).0),
            Source::Range(_) => return None,
            Source::Reindexed(inner, r) => {
                let m = self.chain_len(inner)?;
                match r {
                    // `m` may be a quotient (`(len + k - 1) / k`): parenthesised.
                    Reindex::Skip(n) => quote!((#m).saturating_sub(#n)),
                    Reindex::Take(n) => quote!(__ad::min_len(#m, #n)),
                    // `step_by(0)` panics, as the division by zero here does.
                    Reindex::StepBy(s) => quote!((#m + #s - 1) / #s),
                    Reindex::Rev(len) => len.clone(),
                }
            }
        };
        let mut n = own;
        for a in &c.adapters {
            if let Adapter::Zip(o) = a {
                let m = self.chain_len(o)?;
                n = quote!(__ad::min_len(#n, #m));
            }
        }
        Some(n)
    }

    /// The element of chain `c` at index `k` (for index-driven chains).
    /// The element at position `k` of a chain without `filter` (the other side of a `zip`).
    fn chain_elem(&mut self, c: &Chain, k: &Ident, span: Span) -> Result<Val> {
        let mut elem = None;
        self.each_elem(c, k, span, |_, v| {
            elem = Some(v);
            Ok(())
        })?;
        Ok(elem.expect("a chain without `filter` has an element at every position"))
    }

    /// Runs `body` on the element at position `k` of a chain, inside the `if`s of its
    /// `filter`s.
    fn each_elem(
        &mut self,
        c: &Chain,
        k: &Ident,
        span: Span,
        body: impl FnOnce(&mut Self, Val) -> Result<()>,
    ) -> Result<()> {
        let v = match &c.source {
            Source::Slice(p, m) => {
                let mut p = p.clone();
                if p.is_whole() && self.ranked_arrays.get(&p.base.to_string()) == Some(&2) {
                    // A matrix's elements in its logical order, row after row, as its
                    // `iter()` yields them.
                    // (The width in a local: `a[[k / a.ncols(), ..]] = v` would borrow
                    // `a` while it is borrowed mutably.)
                    let a = &p.base;
                    let cols = self.inactive_local("cols", quote!(#a.ncols()), span);
                    p.proj.push(Proj::Index(quote!([#k / #cols, #k % #cols])));
                } else if matches!(p.proj.last(), Some(Proj::Field(_))) {
                    // A struct member, whose type is not known here: a matrix is indexed
                    // by row and column, anything else by `k` (in a local, as above).
                    let member = p.primal();
                    let at = quote!(__ad::flat_index(&#member, #k));
                    let at = self.inactive_local("at", at, span);
                    p.proj.push(Proj::Index(quote!(#at)));
                } else {
                    p.proj.push(Proj::Index(quote!(#k)));
                }
                Val::Place(p, *m)
            }
            Source::Chunks(p, m, sz, end) => {
                let mut p = p.clone();
                let r = match end {
                    None => quote!(#k * #sz..#k * #sz + #sz),
                    Some(len) => quote!(#k * #sz..(#k * #sz + #sz).min(#len)),
                };
                p.proj.push(Proj::Index(r));
                Val::Place(p, *m)
            }
            Source::Windows(p, w) => {
                let mut p = p.clone();
                p.proj.push(Proj::Index(quote!(#k..#k + #w)));
                Val::Place(p, false)
            }
            Source::Constants(_, b) => {
                // A reference to a constant, which a `&k` pattern dereferences.
                let j = self.inactive_local("c", quote!(&#b[#k]), span);
                self.inert_params.insert(j.to_string());
                Val::Op(Operand::Var(j))
            }
            Source::Counting(r) => {
                let nth = quote! {
                    ::core::option::Option::unwrap(::core::iter::Iterator::nth(
                        &mut ::core::clone::Clone::clone(&#r),
                        #k,
                    ))
                };
                Val::Op(Operand::Var(self.inactive_local("n", nth, span)))
            }
            Source::Range(_) => return unsupported_at(span, "`zip` or `enumerate` on a range"),
            Source::Reindexed(inner, r) => {
                let at = match r {
                    Reindex::Skip(n) => quote!(#k + #n),
                    Reindex::Take(_) => quote!(#k),
                    Reindex::StepBy(s) => quote!(#k * #s),
                    Reindex::Rev(len) => quote!(#len - 1 - #k),
                };
                let j = self.inactive_local("k", at, span);
                self.chain_elem(inner, &j, span)?
            }
        };
        self.adapt(v, &c.adapters, k, span, body)
    }

    /// Applies adapters to an element at position `k`, then runs `body` on it; the rest
    /// after a `filter` runs inside an `if` on its predicate.
    fn adapt(
        &mut self,
        mut v: Val,
        adapters: &[Adapter],
        k: &Ident,
        span: Span,
        body: impl FnOnce(&mut Self, Val) -> Result<()>,
    ) -> Result<()> {
        for (i, a) in adapters.iter().enumerate() {
            v = match a {
                Adapter::Map(f) => self.apply_fn(f, vec![v], span)?,
                Adapter::Zip(o) => {
                    let w = self.chain_elem(o, k, span)?;
                    Val::Tuple(vec![v, w])
                }
                Adapter::Enumerate => Val::Tuple(vec![Val::Op(Operand::Var(k.clone())), v]),
                Adapter::Copied => match v {
                    // A struct or a row: copied where the loop binds it.
                    Val::Place(p, m) if self.is_struct_element(&p) || self.is_row_element(&p) => {
                        Val::Place(p, m)
                    }
                    Val::Place(..) => Val::Op(self.operand(v, span)?),
                    // An element of a buffer of constants is a reference to it.
                    Val::Op(Operand::Var(j)) if self.inert_params.contains(&j.to_string()) => {
                        let c = self.inactive_local("c", quote!(*#j), span);
                        Val::Op(Operand::Var(c))
                    }
                    v => v,
                },
                Adapter::Filter(p) => {
                    // A predicate has no derivative: it runs as written, on a reference to
                    // the element's primal, as `Iterator::filter` calls it.
                    let p = self.render(p);
                    let item = val_tokens(&v);
                    let keep = quote!(__ad::holds(#p, &#item));
                    let rest = &adapters[i + 1..];
                    let (then, ()) = self.in_block(|l| l.adapt(v, rest, k, span, body))?;
                    self.emit(guard(keep, then));
                    return Ok(());
                }
            };
        }
        body(self, v)
    }

    fn lower_chain_loop(
        &mut self,
        chain: Chain,
        span: Span,
        body: impl FnOnce(&mut Self, Val) -> Result<()>,
    ) -> Result<()> {
        self.lower_chain_loop_with(chain, span, None, body)
    }

    /// Emits the loop over a chain, calling `body` with each element.
    fn lower_chain_loop_with(
        &mut self,
        chain: Chain,
        span: Span,
        ctl: Option<(Ident, Ident)>,
        body: impl FnOnce(&mut Self, Val) -> Result<()>,
    ) -> Result<()> {
        let exit = ctl.as_ref().map(|(b, _)| self.loop_exit(b));
        match &chain.source {
            Source::Range(r) | Source::Constants(r, _) if chain.iterated_as_written() => {
                let r = r.clone();
                let var = self.fresh("i", span);
                self.kinds.insert(var.to_string(), VarKind::Scalar);
                if matches!(chain.source, Source::Constants(..)) {
                    // A reference to a constant, which a `&k` pattern dereferences.
                    self.inert_params.insert(var.to_string());
                }
                let v2 = var.clone();
                if chain
                    .adapters
                    .iter()
                    .any(|a| matches!(a, Adapter::Zip(_) | Adapter::Enumerate))
                {
                    return unsupported_at(span, "`zip` or `enumerate` on a range");
                }
                let (block, _) = self.in_block(|l| {
                    let v = Val::Op(Operand::Var(v2.clone()));
                    l.adapt(v, &chain.adapters, &v2, span, body)
                })?;
                self.emit(Stmt::For {
                    pat: var,
                    iter: r,
                    body: block,
                    exit,
                });
            }
            _ => {
                let Some(n) = self.chain_len(&chain) else {
                    return unsupported_at(span, "iterating over this chain");
                };
                let k = self.fresh("k", span);
                self.kinds.insert(k.to_string(), VarKind::Scalar);
                let k2 = k.clone();
                let (block, _) = self.in_block(|l| l.each_elem(&chain, &k2, span, body))?;
                self.emit(Stmt::For {
                    pat: k,
                    iter: quote!(0..#n),
                    body: block,
                    exit,
                });
            }
        }
        Ok(())
    }

    fn lower_collect(&mut self, chain: Chain, span: Span) -> Result<Operand> {
        // (Told for this `collect` alone: one in its closures collects what it collects.)
        let rows = std::mem::replace(&mut self.rows_collected, false);
        let v = self.fresh("collected", span);
        self.kinds.insert(v.to_string(), VarKind::Buffer);
        self.emit(Stmt::Let {
            var: v.clone(),
            mutable: true,
            op: Op::NewVec(quote!(::std::vec::Vec::new())),
        });
        let v2 = v.clone();
        self.lower_chain_loop(chain, span, |l, elem| {
            let val = match elem {
                // An array each (`.map(|i| [x[2 * i], x[2 * i + 1]])`): a vector of rows,
                // as pushing each array makes.
                Val::Place(p, _) if p.is_whole() && l.array_locals.contains(&p.base.to_string()) => {
                    l.matrix_vars.insert(v2.to_string());
                    Operand::Var(p.base)
                }
                // A vector each (`.map(|r| layer(w, r))`, `.map(|c| c.to_vec())`): a vector
                // of rows, as pushing each vector makes.
                elem if let Some(row) = l.vector_row(&elem, rows) => {
                    l.push_row(Place::local(v2), row);
                    return Ok(());
                }
                elem => l.pushed_as(
                    elem,
                    span,
                    "collecting slices into a vector (collect copies of them, `.map(|c| c.to_vec())`, or arrays, `.map(|c| [c[0], c[1]])`)",
                )?,
            };
            l.emit(Stmt::Push {
                place: Place::local(v2),
                val,
                copy: false,
            });
            Ok(())
        })?;
        Ok(Operand::Var(v))
    }

    /// `sum`, `product`, `fold` over a chain.
    fn lower_reduction(
        &mut self,
        m: &syn::ExprMethodCall,
        chain: Chain,
        hint: Option<&syn::Type>,
    ) -> Result<Val> {
        let name = m.method.to_string();
        let span = m.span();
        if name == "fold"
            && m.args.len() == 2
            && let Expr::Tuple(init) = strip(&m.args[0])
        {
            return self.lower_tuple_fold(m, init, chain);
        }
        let ty = m
            .turbofish
            .as_ref()
            .and_then(|t| t.args.first())
            .and_then(|a| match a {
                syn::GenericArgument::Type(t) => Some(t.clone()),
                _ => None,
            })
            .or_else(|| hint.cloned());
        let acc = self.fresh("acc", span);
        self.kinds.insert(acc.to_string(), VarKind::Scalar);
        let init = match name.as_str() {
            // Float sums start at -0.0, as `Sum for f64` does: an empty sum is -0.0.
            "sum" => Operand::Lit(match &ty {
                Some(t) => quote!(<#t as ::core::iter::Sum>::sum(::core::iter::empty::<#t>())),
                None => quote!((-0.0)),
            }),
            "product" => Operand::Lit(match &ty {
                Some(t) => quote!(<#t as __ad::Real>::lit(1.0)),
                None => quote!(1.0),
            }),
            _ => {
                let v = self.lower_expr(&m.args[0])?;
                let buffer = |l: &Self, b: &Ident| {
                    matches!(l.kinds.get(&b.to_string()), Some(VarKind::Buffer))
                };
                let vector = match &v {
                    Val::Place(p, _) => p.is_whole() && buffer(self, &p.base),
                    Val::Op(Operand::Var(o)) => buffer(self, o),
                    _ => false,
                };
                if vector {
                    return unsupported(
                        &m.args[0],
                        "a `fold` whose accumulator is a vector (write a loop that assigns it: `let mut h = x.to_vec(); for _ in 0..3 { h = step(&h); }`)",
                    );
                }
                // `fold(0.0, f64::max)`: the path's type fixes the literal's, which the
                // method form `acc.max(v)` of the lowered loop would leave ambiguous; so
                // does the type the fold's value is expected to have (`let m: f64 = ..`,
                // the body of a `-> f64`).
                let float_hint = ty.clone().filter(|t| is_float_type(t, &self.floats));
                let v = match self.float_type_of_path(&m.args[1]).or(float_hint) {
                    Some(t) => typed_constant(v, &t),
                    None => v,
                };
                self.operand(v, m.args[0].span())?
            }
        };
        let op = match init {
            Operand::Lit(t) => Op::Inactive(t),
            o => Op::Use(o),
        };
        self.emit(Stmt::Let {
            var: acc.clone(),
            mutable: true,
            op,
        });
        let acc2 = acc.clone();
        let f = if name == "fold" {
            Some(m.args[1].clone())
        } else {
            None
        };
        self.lower_chain_loop(chain, span, |l, elem| {
            match name.as_str() {
                "sum" | "product" => {
                    let val = l.operand(elem, span)?;
                    let kind = if name == "sum" {
                        AssignKind::Add
                    } else {
                        AssignKind::Mul
                    };
                    l.emit(Stmt::Assign {
                        place: Place::local(acc2),
                        kind,
                        val,
                    });
                }
                _ => {
                    let r = l.apply_fn(
                        f.as_ref().unwrap(),
                        vec![Val::Op(Operand::Var(acc2.clone())), elem],
                        span,
                    )?;
                    let val = l.operand(r, span)?;
                    l.emit(Stmt::Assign {
                        place: Place::local(acc2),
                        kind: AssignKind::Set,
                        val,
                    });
                }
            }
            Ok(())
        })?;
        Ok(Val::Op(Operand::Var(acc)))
    }

    /// `fold((a, b), |(s, q), v| (.., ..))`: one accumulator per element of the tuple,
    /// each assigned its element of the closure's value.
    fn lower_tuple_fold(
        &mut self,
        m: &syn::ExprMethodCall,
        init: &syn::ExprTuple,
        chain: Chain,
    ) -> Result<Val> {
        let span = m.span();
        let mut accs = Vec::new();
        for e in &init.elems {
            let v = self.lower_expr(e)?;
            let o = self.operand(v, e.span())?;
            let acc = self.fresh("acc", span);
            self.kinds.insert(acc.to_string(), VarKind::Scalar);
            self.emit(Stmt::Let {
                var: acc.clone(),
                mutable: true,
                op: match o {
                    Operand::Lit(t) => Op::Inactive(t),
                    o => Op::Use(o),
                },
            });
            accs.push(acc);
        }
        let f = m.args[1].clone();
        let accs2 = accs.clone();
        self.lower_chain_loop(chain, span, |l, elem| {
            let current = Val::Tuple(
                accs2
                    .iter()
                    .map(|a| Val::Op(Operand::Var(a.clone())))
                    .collect(),
            );
            let Val::Tuple(items) = l.apply_fn(&f, vec![current, elem], span)? else {
                return unsupported(&f, "a `fold` closure that does not return its tuple");
            };
            if items.len() != accs2.len() {
                return unsupported(&f, "a `fold` closure returning a tuple of another length");
            }
            // Every element is read before any accumulator is assigned.
            let mut vals = Vec::new();
            for it in items {
                vals.push(l.operand(it, span)?);
            }
            for (acc, val) in accs2.iter().zip(vals) {
                l.emit(Stmt::Assign {
                    place: Place::local(acc.clone()),
                    kind: AssignKind::Set,
                    val,
                });
            }
            Ok(())
        })?;
        Ok(Val::Tuple(
            accs.into_iter().map(|a| Val::Op(Operand::Var(a))).collect(),
        ))
    }

    // ---------------------------------------------------------------- closures

    /// Applies a closure expression, a local closure, or a function path to values.
    fn apply_fn(&mut self, f: &Expr, args: Vec<Val>, span: Span) -> Result<Val> {
        self.apply_fn_as(f, args, span, false)
    }

    /// [`Self::apply_fn`]; with `discarded`, the value is unused (`for_each`), and a
    /// function's call is made for its effect alone.
    fn apply_fn_as(
        &mut self,
        f: &Expr,
        args: Vec<Val>,
        span: Span,
        discarded: bool,
    ) -> Result<Val> {
        match strip(f) {
            Expr::Closure(c) => {
                let def = ClosureDef {
                    params: c.inputs.iter().cloned().collect(),
                    body: (*c.body).clone(),
                    scopes: self.scopes.clone(),
                };
                self.inline_closure(&def, args, span, discarded)
            }
            Expr::Path(p) => {
                if let Some(id) = p.path.get_ident()
                    && let Some(Binding::Closure(def)) = self.lookup(&id.to_string()).cloned()
                {
                    return self.inline_closure(&def, args, span, discarded);
                }
                if let Some(name) = math_path(&p.path, &self.floats) {
                    return self.lower_math(&name, args, span);
                }
                let mut ops = Vec::new();
                for a in args {
                    ops.push(self.val_arg(a, span)?);
                }
                let effect_only = discarded && !is_std_path(&p.path);
                self.lower_call(Callee::Path(p.path.clone()), ops, effect_only, span)
            }
            // `map(&f)` of a local closure or a function: called as `f` is.
            Expr::Reference(r)
                if r.mutability.is_none() && matches!(strip(&r.expr), Expr::Path(_)) =>
            {
                self.apply_fn_as(&r.expr, args, span, discarded)
            }
            other => unsupported(other, "calling this expression"),
        }
    }

    /// A closure's body, inlined with its parameters bound to `args`. With `discarded`,
    /// the call's value is unused (`t();`, `for_each(|v| ..)`) and the body is a
    /// statement: a call there is made for its effect alone, so that a custom rule on it
    /// fires.
    fn inline_closure(
        &mut self,
        def: &ClosureDef,
        args: Vec<Val>,
        span: Span,
        discarded: bool,
    ) -> Result<Val> {
        if def.params.len() != args.len() {
            return Err(syn::Error::new(
                span,
                "closure called with the wrong number of arguments",
            ));
        }
        let saved = std::mem::replace(&mut self.scopes, def.scopes.clone());
        self.scopes.push(HashMap::default());
        let r = (|| {
            for (p, a) in def.params.iter().zip(args) {
                let a = self.typed_float_arg(p, a, span)?;
                self.bind_pat_ref(p, a)?;
            }
            if contains_return_expr(&def.body) {
                return unsupported(&def.body, "`return` inside a closure");
            }
            if discarded
                || is_unit_valued(&def.body)
                || matches!(strip(&def.body), Expr::Binary(b) if is_compound(&b.op))
            {
                self.lower_expr_stmt(&def.body)?;
                return Ok(Val::Tuple(vec![]));
            }
            self.lower_expr(&def.body)
        })();
        self.scopes = saved;
        r
    }

    /// `F` of a function path `F::name` (`f64::max`) when `F` is a float type.
    fn float_type_of_path(&self, f: &Expr) -> Option<syn::Type> {
        let Expr::Path(p) = strip(f) else { return None };
        if p.qself.is_some()
            || p.path.segments.len() != 2
            || !p.path.segments[0].arguments.is_none()
        {
            return None;
        }
        let first = &p.path.segments[0].ident;
        let ty = syn::Type::Path(syn::TypePath {
            qself: None,
            path: syn::Path::from(first.clone()),
        });
        is_float_type(&ty, &self.floats).then_some(ty)
    }

    /// The argument `a` of a closure parameter `p` written with a float type
    /// (`|t: f64| ..`), cast to that type: the call fixed the type of an untyped argument
    /// (`let t = 0.5; g(t)`), and the inlined closure must too, or `t.sin()` would be a
    /// method of an ambiguous `{float}`.
    fn typed_float_arg(&mut self, p: &Pat, a: Val, span: Span) -> Result<Val> {
        let Pat::Type(pt) = p else { return Ok(a) };
        if !is_float_type(&pt.ty, &self.floats) {
            return Ok(a);
        }
        let o = match a {
            Val::Op(Operand::Var(v)) => Operand::Var(v),
            Val::Place(pl, m) if pl.is_whole() && is_scalar_place(&pl, self) => {
                self.operand(Val::Place(pl, m), span)?
            }
            other => return Ok(other),
        };
        Ok(Val::Op(self.let_op(Op::Cast(o, (*pt.ty).clone()), span)))
    }

    // ---------------------------------------------------------------- expressions

    fn lower_expr(&mut self, e: &Expr) -> Result<Val> {
        self.lower_expr_hint(e, None)
    }

    /// An operand of arithmetic, which is a number (see [`Lowerer::value_call`]).
    fn lower_value_operand(&mut self, e: &Expr) -> Result<Val> {
        self.value_call = matches!(strip(e), Expr::Call(_));
        let v = self.lower_expr(e);
        self.value_call = false;
        match v? {
            // A scalar behind a reference parameter (`a: &f64`) in arithmetic (`a * 2.0`,
            // `s += a`): its value, as the operator's `&f64` implementation reads it.
            Val::Place(mut p, m)
                if p.is_whole() && self.scalar_refs.contains(&p.base.to_string()) =>
            {
                p.proj.push(Proj::Deref);
                Ok(Val::Place(p, m))
            }
            v => Ok(v),
        }
    }

    fn operand(&mut self, v: Val, span: Span) -> Result<Operand> {
        match v {
            Val::Op(o) => Ok(o),
            // (Companions record and save struct values member by member, so their code
            // never uses one as a value either.)
            Val::Place(p, _) if self.is_struct_value(&p) => unsupported_at(
                span,
                "a struct value built in the function used as a value (in arithmetic, an array, a `Vec` or a call by value; read its members, or pass it by reference)",
            ),
            Val::Place(p, _) => {
                let key = p.primal().to_string();
                if let Some(v) = self.loads.get(&key) {
                    // Another operand already holds this local.
                    self.renamable = None;
                    return Ok(Operand::Var(v.clone()));
                }
                let o = self.let_op(Op::Load(p), span);
                if let Operand::Var(v) = &o {
                    self.loads.insert(key, v.clone());
                }
                Ok(o)
            }
            Val::Tuple(items) if items.is_empty() => Ok(Operand::Lit(quote!(()))),
            Val::Tuple(_) => Err(syn::Error::new(
                span,
                "expected a single value, found a tuple",
            )),
        }
    }

    fn lower_expr_hint(&mut self, e: &Expr, hint: Option<&syn::Type>) -> Result<Val> {
        let span = e.span();
        if let Some(plain) = self.companion.then(|| plain_store_access(e)).flatten() {
            return self.lower_expr_hint(&plain, hint);
        }
        match e {
            Expr::Paren(p) => self.lower_expr_hint(&p.expr, hint),
            Expr::Group(g) => self.lower_expr_hint(&g.expr, hint),
            Expr::Lit(_) => Ok(Val::Op(Operand::Lit(e.to_token_stream()))),
            Expr::Path(p) => {
                if let Some(id) = p.path.get_ident()
                    && p.qself.is_none()
                {
                    match self.lookup(&id.to_string()).cloned() {
                        Some(Binding::Var(v)) => {
                            let kind = self
                                .kinds
                                .get(&v.to_string())
                                .copied()
                                .unwrap_or(VarKind::Scalar);
                            return Ok(match kind {
                                VarKind::Scalar => Val::Op(Operand::Var(v)),
                                VarKind::Ref { mutable } => Val::Place(Place::local(v), mutable),
                                VarKind::Buffer => Val::Place(Place::local(v), true),
                                VarKind::Value => Val::Place(Place::local(v), false),
                                VarKind::Closure(_) => Val::Op(Operand::Var(v)),
                            });
                        }
                        Some(Binding::Alias(p, m)) => return Ok(Val::Place(p, m)),
                        Some(Binding::Member(p)) => return Ok(Val::Place(p, false)),
                        Some(Binding::Cursor(c)) => return Ok(Val::Place(c.place(), false)),
                        Some(Binding::Tuple(items)) => return Ok(Val::Tuple(items)),
                        Some(Binding::Closure(_)) => {
                            return unsupported(
                                e,
                                "a closure used as a value (call it, or pass it to `map`/`fold`)",
                            );
                        }
                        Some(Binding::Iter(chain, _)) => return self.lower_expr(&chain),
                        None => {}
                    }
                }
                Ok(Val::Op(Operand::Lit(self.render(e))))
            }
            Expr::Unary(u) => match u.op {
                syn::UnOp::Neg(_) => {
                    // (`-z` of a struct: the user's `Neg`, see `Expr::Binary`.)
                    if let Some(calls) = self.struct_operators_as_calls(e) {
                        return self.lower_expr(&calls);
                    }
                    let v = self.lower_value_operand(&u.expr)?;
                    let o = self.operand(v, span)?;
                    Ok(match o {
                        Operand::Lit(_) => Val::Op(Operand::Lit(self.render(e))),
                        o => Val::Op(self.let_op(Op::Neg(o), span)),
                    })
                }
                syn::UnOp::Deref(_) => match self.lower_expr(&u.expr)? {
                    // A scalar behind a reference parameter: `*r` is the value, `r` the
                    // reference. Other references auto-deref at their use.
                    Val::Place(mut p, m)
                        if p.is_whole() && self.scalar_refs.contains(&p.base.to_string()) =>
                    {
                        p.proj.push(Proj::Deref);
                        Ok(Val::Place(p, m))
                    }
                    // A reference to a constant (an element of `ks: &[usize]`); in a
                    // companion, only such a dereference is written on a local.
                    Val::Op(Operand::Var(v)) if self.companion || self.holds_constant(&v) => {
                        Ok(Val::Op(self.let_op(Op::Inactive(quote!(*#v)), u.span())))
                    }
                    v @ (Val::Place(..) | Val::Op(_)) => Ok(v),
                    _ => unsupported(e, "this dereference"),
                },
                syn::UnOp::Not(_) if !self.companion && self.may_change_values(&u.expr) => {
                    let inner = self.lower_condition(&u.expr)?;
                    Ok(Val::Op(self.let_op(Op::Inactive(quote!(!(#inner))), span)))
                }
                syn::UnOp::Not(_) => Ok(Val::Op(Operand::Lit(self.render(e)))),
                _ => unsupported(e, "this unary operator"),
            },
            Expr::Binary(b) => {
                // An operator the user implemented for a struct (`z * w` of complex
                // numbers, `a ^ b` for a cross product): its body is not visible here,
                // and a float's rule would be wrong.
                let value_op = !matches!(
                    b.op,
                    syn::BinOp::Eq(_)
                        | syn::BinOp::Ne(_)
                        | syn::BinOp::Lt(_)
                        | syn::BinOp::Le(_)
                        | syn::BinOp::Gt(_)
                        | syn::BinOp::Ge(_)
                        | syn::BinOp::And(_)
                        | syn::BinOp::Or(_)
                );
                if value_op
                    && self.struct_operator(b).is_some()
                    && let Some(calls) = self.struct_operators_as_calls(e)
                {
                    return self.lower_expr(&calls);
                }
                if value_op {
                    self.refuse_struct_operands(e, b)?;
                }
                let op = match b.op {
                    syn::BinOp::Add(_) => BinOp::Add,
                    syn::BinOp::Sub(_) => BinOp::Sub,
                    syn::BinOp::Mul(_) => BinOp::Mul,
                    syn::BinOp::Div(_) => BinOp::Div,
                    syn::BinOp::Rem(_) => BinOp::Rem,
                    _ => {
                        if is_compound(&b.op) {
                            return unsupported(e, "a compound assignment used as a value");
                        }
                        // Comparisons, logic, bit operations: no derivative.
                        if self.companion || !self.may_change_values(e) {
                            return Ok(Val::Op(Operand::Lit(self.render(e))));
                        }
                        return self.lower_effectful_test(b);
                    }
                };
                // (An integer expression that reads members, `c.k * 2 - c.dim`, whole: its
                // parts, split into locals, would no longer show that they are integers.)
                if is_integer_evident(e) && reads_a_field(e) {
                    let toks = self.render(e);
                    return Ok(Val::Op(self.let_op(Op::Inactive(toks), span)));
                }
                let l = self.lower_value_operand(&b.left)?;
                let l = self.operand(l, b.left.span())?;
                let r = self.lower_value_operand(&b.right)?;
                let r = self.operand(r, b.right.span())?;
                if let (Operand::Lit(lt), Operand::Lit(rt)) = (&l, &r) {
                    // (From the operands' tokens: an operand lowered to other code than it
                    // is written, `bucket(t) as i64` kept as `no_grad(bucket(t)) as i64`,
                    // stays so.)
                    let o = &b.op;
                    return Ok(Val::Op(Operand::Lit(quote!((#lt) #o (#rt)))));
                }
                // Arithmetic on integers that the macro cannot type by themselves (a
                // struct's count, `c.w.len() / c.dim`): an operand that is evidently an
                // integer (a literal without a float suffix, a length, a cast to an
                // integer type) makes the result one, which carries no derivative. (Only
                // beside a struct's member, which may be taken for an active float;
                // other integer arithmetic is inactive by its operands already.)
                if (is_integer_evident(&b.left) || is_integer_evident(&b.right))
                    && (self.loads_member(&l) || self.loads_member(&r))
                {
                    let (lp, rp, o) = (l.primal(), r.primal(), &b.op);
                    return Ok(Val::Op(
                        self.let_op(Op::Inactive(quote!((#lp) #o (#rp))), span),
                    ));
                }
                Ok(Val::Op(self.let_op(Op::Bin(op, l, r), span)))
            }
            // `(&a + &b)[i]`, `h.mapv(f)[0]`: an element of an array made first.
            Expr::Index(ix) if !self.companion && self.is_compound_array(&ix.expr) => {
                let mut ix = ix.clone();
                *ix.expr = self.hoist_array(&ix.expr)?;
                self.lower_expr_hint(&Expr::Index(ix), hint)
            }
            Expr::Index(ix) => {
                let base = self.lower_expr(&ix.expr)?;
                let idx = self.render_index(&ix.index)?;
                match base {
                    Val::Place(mut p, m) => {
                        push_index(&mut p, idx);
                        Ok(Val::Place(p, m))
                    }
                    Val::Op(Operand::Lit(_)) => Ok(Val::Op(Operand::Lit(self.render(e)))),
                    // An element of a buffer of integers (`ks: &[usize]`, `&Vec<u32>`).
                    Val::Op(Operand::Var(v)) if self.holds_constant(&v) => {
                        Ok(Val::Op(Operand::Lit(self.render(e))))
                    }
                    // An element of an array that a call returned (`rhs(y)[0]`, `d[1]`).
                    Val::Op(Operand::Var(v))
                        if self.kinds.get(&v.to_string()) == Some(&VarKind::Scalar) =>
                    {
                        let mut p = Place::local(v);
                        push_index(&mut p, idx);
                        Ok(Val::Place(p, false))
                    }
                    _ => unsupported(e, "indexing this value"),
                }
            }
            Expr::Field(f) => {
                let base = self.lower_expr(&f.base)?;
                match base {
                    Val::Place(mut p, m) => {
                        p.proj.push(Proj::Field(f.member.clone()));
                        Ok(Val::Place(p, m))
                    }
                    Val::Tuple(items) => match &f.member {
                        syn::Member::Unnamed(i) if (i.index as usize) < items.len() => {
                            Ok(items[i.index as usize].clone())
                        }
                        _ => unsupported(e, "this field of a tuple"),
                    },
                    Val::Op(Operand::Lit(_)) => Ok(Val::Op(Operand::Lit(self.render(e)))),
                    Val::Op(Operand::Var(v)) => {
                        // A field of a value produced by a call: keep it as a place.
                        let mut p = Place::local(v);
                        p.proj.push(Proj::Field(f.member.clone()));
                        Ok(Val::Place(p, false))
                    }
                }
            }
            Expr::Reference(r) => match self.lower_expr(&r.expr)? {
                Val::Place(p, _) => Ok(Val::Place(p, r.mutability.is_some())),
                Val::Op(Operand::Lit(_)) => Ok(Val::Op(Operand::Lit(self.render(e)))),
                // `&mut y` of a local float: the local itself, a place written through.
                Val::Op(Operand::Var(v)) if r.mutability.is_some() => {
                    Ok(Val::Place(Place::local(v), true))
                }
                v => Ok(v),
            },
            Expr::Cast(c) => {
                let to_float = is_float_type(&c.ty, &self.floats);
                // `bucket(x[0]) as usize`: a cast to an integer type says the value is one.
                if is_integer_or_bool_type(&c.ty)
                    && let Some(kept) = self.integer_valued(&c.expr)
                {
                    let mut written = c.clone();
                    *written.expr = kept;
                    return self.lower_expr_hint(&Expr::Cast(written), hint);
                }
                let v = self.lower_expr(&c.expr)?;
                // (A struct member is loaded first: the conversion's tangent and adjoint
                // follow its type, none for an integer member, whatever the shadow's
                // copy of it holds.)
                let o = self.operand(v, span)?;
                match o {
                    Operand::Var(_) if to_float => {
                        Ok(Val::Op(self.let_op(Op::Cast(o, (*c.ty).clone()), span)))
                    }
                    // A type named by an alias (`as Idx`): an integer type, which the
                    // conversion checks at compile time, since a float alias's derivative
                    // would be dropped here.
                    _ if is_alias_name(&c.ty) => {
                        let (ty, inner) = (&c.ty, self.render(&c.expr));
                        Ok(Val::Op(Operand::Lit(quote::quote_spanned!(c.ty.span()=>
                            __ad::integer_as::<#ty, _>(#inner)
                        ))))
                    }
                    // (Lowered already where it changes values: not evaluated again.)
                    o if !self.companion && self.may_change_values(&c.expr) => {
                        let (p, ty) = (o.primal(), &c.ty);
                        Ok(Val::Op(
                            self.let_op(Op::Inactive(quote!((#p) as #ty)), span),
                        ))
                    }
                    _ => Ok(Val::Op(Operand::Lit(self.render(e)))),
                }
            }
            Expr::Tuple(t) => {
                let mut items = Vec::new();
                for it in &t.elems {
                    items.push(self.lower_expr(it)?);
                }
                Ok(Val::Tuple(items))
            }
            Expr::Block(b) if b.label.is_none() => {
                self.scopes.push(HashMap::default());
                let r = self.lower_stmts(&b.block.stmts, Tail::Value);
                self.scopes.pop();
                match r? {
                    Some(v) => Ok(v),
                    None => Ok(Val::Tuple(vec![])),
                }
            }
            Expr::Block(b) => Ok(self
                .lower_labelled_block(b, true, hint)?
                .unwrap_or(Val::Tuple(vec![]))),
            Expr::Loop(l) => self.lower_loop_value(l, hint),
            // An array chosen by `if` or `match` (`if c { [a, b] } else { [d, e] }`): the
            // elements chosen as a tuple, then put in an array.
            Expr::If(_) | Expr::Match(_)
                if !self.companion && array_choice_len(e, hint).is_some() =>
            {
                let n = array_choice_len(e, hint).unwrap_or(0);
                let chosen = array_choice(e, n);
                self.lower_expr_hint(&chosen, None)
            }
            Expr::If(i) => Ok(self.lower_if(i, true)?.unwrap_or(Val::Tuple(vec![]))),
            // A value bound from a constant scrutinee, as a companion writes it.
            Expr::Match(m) if self.companion && (is_constant_extraction(m) || is_guard_test(m)) => {
                Ok(Val::Op(Operand::Lit(self.render(e))))
            }
            Expr::Match(m) => Ok(self.lower_match(m, true)?.unwrap_or(Val::Tuple(vec![]))),
            // A range with its adapters (`(0..n).take(k)`), bound by `let` where a
            // reverse sweep keeps a loop's iterator: integers, as a range is.
            Expr::MethodCall(_) if is_range_expr(e) => Ok(Val::Op(Operand::Lit(self.render(e)))),
            Expr::MethodCall(m) => self.lower_method(m, hint),
            Expr::Call(c) => match self.array_from_fn(c, hint) {
                Some(e) => self.lower_expr_hint(&e, hint),
                None => self.lower_call_expr(c),
            },
            Expr::Macro(m) if is_vec_macro(&m.mac) => self.buffer_value(e),
            Expr::Macro(m) => {
                let name = m
                    .mac
                    .path
                    .segments
                    .last()
                    .map(|s| s.ident.to_string())
                    .unwrap_or_default();
                if is_inert_macro(&name) {
                    Ok(Val::Op(Operand::Lit(self.render_macro(&m.mac))))
                } else {
                    Err(syn::Error::new_spanned(
                        e,
                        format!(
                            "the macro `{name}!` cannot be differentiated through: compute its value outside the function, or wrap it in `no_grad(..)`"
                        ),
                    ))
                }
            }
            Expr::Range(_) => Ok(Val::Op(Operand::Lit(self.render(e)))),
            Expr::Unsafe(_) => unsupported(e, "an `unsafe` block"),
            Expr::Async(_) => unsupported(e, "an `async` block"),
            Expr::Await(_) => unsupported(e, "`.await`"),
            Expr::Closure(_) => unsupported(
                e,
                "a closure in this position (bind it with `let`, or pass it to `map`/`fold`)",
            ),
            // `P { q: [a, b], s }` as a result or an argument: bound first, as `let`
            // binds a struct with a buffer member.
            Expr::Struct(s) if self.builds_struct_with_buffers(&value_name(s.span()), s) => {
                let name = value_name(s.span());
                let bound: Expr = syn::parse_quote_spanned!(s.span()=> {
                    let #name = #s;
                    #name
                });
                self.lower_expr(&bound)
            }
            Expr::Struct(s) => {
                let op = self.lower_struct(s, false)?;
                self.struct_value(op, e)
            }
            Expr::Array(_) | Expr::Repeat(_) => self.buffer_value(e),
            Expr::Assign(_)
            | Expr::ForLoop(_)
            | Expr::While(_)
            | Expr::Return(_)
            | Expr::Break(_)
            | Expr::Continue(_) => {
                self.lower_expr_stmt(e)?;
                Ok(Val::Tuple(vec![]))
            }
            Expr::Try(_) => unsupported(e, "the `?` operator"),
            Expr::Let(_) => unsupported(e, "`let` in this position"),
            _ => unsupported(e, "this expression"),
        }
    }

    fn render_index(&mut self, e: &Expr) -> Result<TokenStream> {
        self.refuse_effects(e, "an index")?;
        let index = self.render(e);
        if !self.reads_mutable_alias_length(e) {
            return Ok(index);
        }
        // `c[c.len() - 1] += v` of a mutable chunk: the index is computed before the
        // element is borrowed for the write, as the chunk's own borrow allowed.
        match self.let_op(Op::Inactive(index), e.span()) {
            Operand::Var(v) => Ok(quote!(#v)),
            Operand::Lit(t) => Ok(t),
        }
    }

    /// Whether `e` reads the length of a mutable alias (`c.len()` of a chunk of
    /// `chunks_mut`), which is rendered as a borrow of the buffer that holds it.
    fn reads_mutable_alias_length(&self, e: &Expr) -> bool {
        struct Finder<'a> {
            lowerer: &'a Lowerer,
            found: bool,
        }
        impl<'ast> syn::visit::Visit<'ast> for Finder<'_> {
            fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
                if let Expr::Path(p) = strip(&m.receiver)
                    && let Some(id) = p.path.get_ident()
                    && matches!(
                        self.lowerer.lookup(&id.to_string()),
                        Some(Binding::Alias(_, true))
                    )
                {
                    self.found = true;
                }
                syn::visit::visit_expr_method_call(self, m);
            }
        }
        let mut f = Finder {
            lowerer: self,
            found: false,
        };
        syn::visit::Visit::visit_expr(&mut f, e);
        f.found
    }

    fn lower_math(&mut self, name: &str, args: Vec<Val>, span: Span) -> Result<Val> {
        let mut ops = Vec::new();
        for (i, a) in args.into_iter().enumerate() {
            let o = self.operand(a, span)?;
            ops.push(if math_arg_is_inert(name, i) {
                match o {
                    Operand::Var(v) => Operand::Lit(quote!(#v)),
                    o => o,
                }
            } else {
                o
            });
        }
        if ops.iter().all(|o| matches!(o, Operand::Lit(_))) {
            let recv = ops[0].primal();
            let rest: Vec<TokenStream> = ops[1..].iter().map(|o| o.primal()).collect();
            let m = Ident::new(name, span);
            return Ok(Val::Op(Operand::Lit(quote!(#recv.#m(#(#rest),*)))));
        }
        if name == "sin_cos" {
            let a = self.temp(span);
            let b = self.temp(span);
            self.emit(Stmt::LetTuple {
                vars: vec![a.clone(), b.clone()],
                op: Op::Math(name.to_string(), ops),
            });
            return Ok(Val::Tuple(vec![
                Val::Op(Operand::Var(a)),
                Val::Op(Operand::Var(b)),
            ]));
        }
        Ok(Val::Op(self.let_op(Op::Math(name.to_string(), ops), span)))
    }

    fn lower_method(&mut self, m: &syn::ExprMethodCall, hint: Option<&syn::Type>) -> Result<Val> {
        let statement = std::mem::take(&mut self.statement_call);
        let name = m.method.to_string();
        if name.starts_with("__ad_") {
            if !self.companion || protocol_kind(&name).is_none() {
                return unsupported(
                    m,
                    "differentiating this part of a derivative companion again",
                );
            }
            // A callee's protocol function, called by a companion that is differentiated
            // again: lowered as a call, without the arguments its derivative does not take,
            // through the callee's derivatives even when everything is constant (the call
            // is there because the callee's protocol is called).
            let mut m = m.clone();
            m.args = protocol_args(&name, &m.args, false);
            return self.lower_method_call(&m, hint, true);
        }
        self.lower_method_call(m, hint, statement)
    }

    /// A method call; `statement` when it is a statement of its own (its value unused) or
    /// a protocol call of a companion lowered again: a struct's method then goes through
    /// its derivatives even when everything is constant.
    fn lower_method_call(
        &mut self,
        m: &syn::ExprMethodCall,
        hint: Option<&syn::Type>,
        statement: bool,
    ) -> Result<Val> {
        // `(&y - t).mapv(f).mean().unwrap()`: the sum over the length.
        if !self.companion
            && let Some(e) = self.array_mean(m)?
        {
            return self.lower_expr_hint(&e, hint);
        }
        // `(&y - t).mapv(f).sum()`: the arrays made first.
        if !self.companion
            && let Some(Expr::MethodCall(call)) = self.call_on_made_arrays(m)?
        {
            return self.lower_method_call(&call, hint, statement);
        }
        let name = m.method.to_string();
        let span = m.span();
        self.refuse_unread_consumer(m)?;
        if let Some(call) = self.nested_copy_call(m) {
            return self.lower_expr(&call);
        }
        // `(d).clone_from(&s);` of a whole struct, as a forward companion writes a struct
        // assigned whole (see `CopyMode::Struct`), lowered again.
        if self.companion && name == "clone_from" && m.args.len() == 1 {
            let place = self.lower_place(strip(&m.receiver))?;
            // (Also the tangent of a copy of a constant call's struct, which starts as
            // the struct's zero: companions copy buffers with `clone_from_slice`.)
            // (And an element of a slice of structs written whole, `ps[i] = p;`.)
            let element = is_element_of_part(&place)
                && self.struct_elem_params.contains(&place.base.to_string());
            if self.is_whole_struct(&place) || place.is_whole() || element {
                let src = match self.lower_expr(strip_borrow(&m.args[0]))? {
                    Val::Place(p, _) if p.is_whole() => p,
                    Val::Op(Operand::Var(v)) => Place::local(v),
                    _ => return unsupported(m, "this copy of a struct"),
                };
                self.emit(Stmt::CopyFrom {
                    dst: place,
                    src,
                    mode: CopyMode::Struct { behind_ref: false },
                });
                return Ok(Val::Op(Operand::Lit(quote!(()))));
            }
        }
        // A search's `Option` or `Result` taken apart (`position(..).map(|k| k * 2)
        // .unwrap_or(0)`) by closures that read only constants: a constant (`map` here is
        // `Option`'s, not an iterator's).
        if is_option_combinator(&name)
            && self.is_search_result(&m.receiver)
            && m.args
                .iter()
                .all(|a| self.names_only_constants(&a.to_token_stream()))
        {
            return Ok(Val::Op(Operand::Lit(
                self.render(&Expr::MethodCall(m.clone())),
            )));
        }
        // A method of a parameter that is never differentiated (`ks.get(1).copied()` of
        // `ks: &[usize]`) reading nothing else that could carry a derivative: a constant,
        // kept as written.
        if !self.companion && self.is_constant_method_chain(m) {
            let var = self.fresh("t", span);
            self.kinds.insert(var.to_string(), VarKind::Scalar);
            self.inert_params.insert(var.to_string());
            let toks = self.render(&Expr::MethodCall(m.clone()));
            self.emit(Stmt::Let {
                var: var.clone(),
                mutable: false,
                op: Op::Inactive(toks),
            });
            return Ok(Val::Op(Operand::Var(var)));
        }
        // Products of a matrix and a vector (`w.dot(&x)`), and rows and columns of a matrix:
        // reduced where they are (`w.row(i).dot(&x)`), else read from a copy
        // (`w.row(i).iter()`); other whole-array methods are refused by name.
        if !self.companion {
            if let Some(e) = self.matrix_vector_product(m) {
                return self.lower_expr_hint(&e, hint);
            }
            if let Some(e) = self.line_reduction(m, hint) {
                return self.lower_expr_hint(&e, hint);
            }
            if let Some(line) = self.array_line(&Expr::MethodCall(m.clone())) {
                let copy = self.line_copy(&line, span);
                return self.lower_expr_hint(&copy, hint);
            }
            self.unsupported_array_method(m)?;
        }
        if !self.companion
            && let Some(e) = self.array_reduction(m, hint)?
        {
            return self.lower_expr_hint(&e, hint);
        }
        // (A struct's own `sum` or `get` is the user's method.)
        let on_struct = self.receives_on_struct(&m.receiver);
        if matches!(name.as_str(), "sum" | "product" | "fold")
            && !on_struct
            && let Some(chain) = self.parse_chain(&m.receiver)?
        {
            if name == "fold" && m.args.len() != 2 {
                return unsupported(m, "this `fold`");
            }
            return self.lower_reduction(m, chain, hint);
        }
        if let Some(e) = self.array_from_slice(m, hint) {
            return self.lower_expr_hint(&e, hint);
        }
        if !on_struct && let Some(e) = self.search_taken_apart(m) {
            return self.lower_expr_hint(&e, hint);
        }
        if !on_struct && let Some(v) = self.split_parts(m)? {
            return Ok(v);
        }
        if matches!(name.as_str(), "unwrap" | "expect" | "unwrap_or")
            && !on_struct
            && let Some(e) = self.unwrapped_element(m)?
        {
            return self.lower_expr_hint(&e, hint);
        }
        if let Some(e) = self.removed_element(m)? {
            return self.lower_expr_hint(&e, hint);
        }
        // A consumer of a chain through an adapter that chains are not read through
        // (`x.iter().scan(..).collect()`): the adapter is named.
        if matches!(
            name.as_str(),
            "collect" | "sum" | "product" | "fold" | "for_each" | "reduce" | "max_by" | "min_by"
        ) && let Some(a) = adapter_on_iterator(&m.receiver)
        {
            let adapter = a.method.to_string();
            return unsupported(&a.method, &unread_adapter_message(&adapter));
        }
        if name == "collect"
            && let Some(chain) = self.parse_chain(&m.receiver)?
        {
            let v = self.lower_collect(chain, span)?;
            return Ok(Val::Place(Place::local(v.var().unwrap().clone()), true));
        }
        // (A struct's own `len` or `count`, `v.len()` of a `V3`, is the user's method.)
        if (is_inert_method(&name) && !self.is_struct_local(&m.receiver)) || self.is_array_shape(m)
        {
            return Ok(Val::Op(Operand::Lit(
                self.render(&Expr::MethodCall(m.clone())),
            )));
        }
        if let Some(checked) = self.member_array_shape(m) {
            return Ok(Val::Op(Operand::Lit(
                self.render(&Expr::MethodCall(checked)),
            )));
        }
        // A struct's own `abs` or `exp` is the user's method.
        if let Some(arity) = math_arity(&name)
            && m.args.len() == arity
            && !self.is_struct_local(&m.receiver)
        {
            // `locate(x, t).min(n - 2)`, `i.max(1)`: an operand that is evidently an
            // integer makes it an integer's `min` (floats take no integer), which carries
            // no derivative; a plain helper's integer among its operands needs none
            // either (`bucket(t).min(2)`), a call through the derivative protocol is
            // still lowered as one.
            if matches!(name.as_str(), "min" | "max" | "clamp")
                && (is_integer_evident(&m.receiver) || m.args.iter().any(is_integer_evident))
            {
                let operands = std::iter::once(&*m.receiver).chain(&m.args);
                let args = operands
                    .map(|a| self.lower_integer_operand(a))
                    .collect::<Result<_>>()?;
                return self.integer_method(&name, args, span);
            }
            let mut args = vec![self.lower_expr(&m.receiver)?];
            for a in &m.args {
                // (`powi`'s exponent is an `i32`: `x.powi(sign_of(x) + 2)`.)
                args.push(match name.as_str() {
                    "powi" => self.lower_integer_operand(a)?,
                    _ => self.lower_expr(a)?,
                });
            }
            // A scalar behind a reference parameter (`a: &f64`, `a.sin()`): auto-deref.
            for a in &mut args {
                if let Val::Place(p, _) = a
                    && p.is_whole()
                    && self.scalar_refs.contains(&p.base.to_string())
                {
                    p.proj.push(Proj::Deref);
                }
            }
            if matches!(args[0], Val::Op(_) | Val::Place(..)) {
                let is_scalar = match &args[0] {
                    Val::Op(_) => true,
                    Val::Place(p, _) => is_scalar_place(p, self),
                    _ => false,
                };
                if is_scalar {
                    return self.lower_math(&name, args, span);
                }
            }
        }
        match name.as_str() {
            "clone" | "to_owned" if m.args.is_empty() => {
                let v = self.lower_expr(&m.receiver)?;
                return Ok(match v {
                    // A copy of a struct a constant call returned (`let mut st =
                    // State::zeros(n);`, then `st.clone()`): a struct with buffers.
                    Val::Place(p, _) if p.is_whole() && self.is_struct_copy(&p.base) => {
                        self.bound_copy(p, CopyKind::Struct { behind_ref: false }, true, span)
                    }
                    // A copy of a buffer, or of a row of a matrix (`h[r].clone()`).
                    Val::Place(p, _) if !is_scalar_place(&p, self) || self.is_row(&p) => {
                        let kind = self.copy_kind(&p);
                        self.bound_copy(p, kind, false, span)
                    }
                    // A companion's mutable copy of a call's struct (`let mut c =
                    // (t).clone();`, also of a constant call's), differentiated again, or a
                    // copy of a struct with buffers built in the body.
                    // (A companion clones only such copies of structs: `copy_of`.)
                    Val::Op(Operand::Var(t))
                        if self.companion || self.structs_with_buffers.contains(&t.to_string()) =>
                    {
                        let with_buffers = self.structs_with_buffers.contains(&t.to_string());
                        self.bound_copy(
                            Place::local(t),
                            CopyKind::Struct { behind_ref: false },
                            with_buffers,
                            span,
                        )
                    }
                    v => v,
                });
            }
            "to_vec" if m.args.is_empty() => {
                let v = self.lower_expr(&m.receiver)?;
                if let Val::Place(p, _) = v {
                    return Ok(self.bound_copy(p, CopyKind::ToVec, false, span));
                }
                return unsupported(m, "`to_vec` on this value");
            }
            "as_slice" | "as_mut_slice" | "as_ref" | "as_mut" | "borrow" | "borrow_mut"
                if m.args.is_empty() =>
            {
                return self.lower_expr(&m.receiver);
            }
            "split_at" | "split_at_mut" if m.args.len() == 1 => {
                if let Val::Place(p, _) = self.lower_expr(&m.receiver)? {
                    let k = self.render(&m.args[0]);
                    let kv = self.inactive_local("split", k, span);
                    let mut a = p.clone();
                    a.proj.push(Proj::Index(quote!(..#kv)));
                    let mut b = p;
                    b.proj.push(Proj::Index(quote!(#kv..)));
                    let mutable = name == "split_at_mut";
                    return Ok(Val::Tuple(vec![
                        Val::Place(a, mutable),
                        Val::Place(b, mutable),
                    ]));
                }
                return unsupported(m, "`split_at` on this value");
            }
            "iter" | "iter_mut" | "into_iter" | "map" | "zip" | "enumerate" | "chunks"
            | "chunks_exact" | "rev" | "step_by" | "copied" | "cloned" | "windows" | "filter"
                if !self.is_struct_local(&m.receiver) =>
            {
                if name == "map" && !self.companion && self.search_chain(&m.receiver, false) {
                    return unsupported(
                        m,
                        "`.map(..)` of a search's `Option` or `Result` with a closure that reads values with derivatives, unless `unwrap_or`, `unwrap_or_else`, `unwrap` or `expect` follows (write a `match`)",
                    );
                }
                if name == "map" && !self.companion && self.names_array(&m.receiver) {
                    return unsupported(
                        m,
                        "`map` of an array (write `std::array::from_fn(|i| f(a[i]))`)",
                    );
                }
                // A range of indices (a companion keeps its loops' ranges in locals).
                let index_range = self.companion && is_index_range(&Expr::MethodCall(m.clone()));
                // An iterator over a buffer of constants (`ks.iter()`, kept by a companion).
                let constants = m.args.is_empty() && self.is_inert_scrutinee(&m.receiver);
                if index_range || constants || !self.mentions_locals(&Expr::MethodCall(m.clone())) {
                    return Ok(Val::Op(Operand::Lit(
                        self.render(&Expr::MethodCall(m.clone())),
                    )));
                }
                // An adapter the chains do not read (`chain`, `take_while`, `scan`) is named.
                if let Some(a) = unread_adapter(&m.receiver) {
                    let adapter = a.method.to_string();
                    return unsupported(&a.method, &unread_adapter_message(&adapter));
                }
                return unsupported(
                    m,
                    &format!(
                        "an iterator (`.{name}()`) that is not consumed by `for`, `sum`, `product`, `fold`, `collect` or `for_each` (one held in a variable is read where `next()` and `nth(k)`, `k` a literal, take items from it unconditionally, outside loops, closures and branches, before one last statement consumes the rest, and the chain's names keep their values until then)"
                    ),
                );
            }
            // Searches, whose results are positions or truth values and carry no
            // derivative (`grid.partition_point(|&g| g < t)`, `x.iter().any(..)`), kept as
            // written (a struct's own method of that name is the user's).
            _ if self.is_search(m) => {
                return Ok(Val::Op(Operand::Lit(
                    self.render(&Expr::MethodCall(m.clone())),
                )));
            }
            // Methods that only integers have: an index computation, no derivative (a
            // method of that name on a struct or an element may be the user's own).
            _ if is_integer_method(&name) && !self.may_be_user_value(&m.receiver) => {
                return Ok(Val::Op(Operand::Lit(
                    self.render(&Expr::MethodCall(m.clone())),
                )));
            }
            _ => {}
        }
        // `T::from(v).unwrap()` (num-traits' `NumCast`) with `T` a float type: a
        // conversion, which carries the derivative of a float `v`.
        if matches!(name.as_str(), "unwrap" | "expect")
            && let Expr::Call(c) = strip(&m.receiver)
            && c.args.len() == 1
            && let Expr::Path(f) = strip(&c.func)
            && f.path.segments.len() == 2
            && f.path.segments[1].ident == "from"
            && let Some(ty) = self.float_type_of_path(&c.func)
        {
            let v = self.lower_expr(&c.args[0])?;
            return match self.operand(v, c.args[0].span())? {
                Operand::Lit(_) => Ok(Val::Op(Operand::Lit(
                    self.render(&Expr::MethodCall(m.clone())),
                ))),
                o => Ok(Val::Op(self.let_op(Op::Cast(o, ty), span))),
            };
        }
        // A user method. A unit struct that receives a call made for its effect
        // (`CpuBackend.synchronize();`), or a call of a method no float has (`Mse.eval(x)`),
        // is bound to a local, as `let` binds one.
        let unit_receiver = match strip(&m.receiver) {
            Expr::Path(p)
                if (statement || !is_std_method_name(&name)) && self.is_unit_struct(p) =>
            {
                Some(p)
            }
            _ => None,
        };
        let recv = match unit_receiver {
            Some(p) => {
                let op = self.struct_members(&p.path, Vec::new(), true)?;
                match self.struct_value(op, &m.receiver)? {
                    // (A constant: bound, so that its method is called as a struct's.)
                    Val::Op(Operand::Lit(t)) if !statement => Val::Place(
                        self.bind_constant(t, VarKind::Value, m.receiver.span()),
                        false,
                    ),
                    v => v,
                }
            }
            None => self.lower_expr(&m.receiver)?,
        };
        // (Generated companions pop their own buffers back: that is read back as before.)
        if let Val::Place(p, _) = &recv
            && !self.companion
            && p.is_whole()
            && self.is_float_buffer(&p.base)
            && !self.struct_values.contains(&p.base.to_string())
            && is_std_buffer_method(&name)
        {
            return unsupported(
                m,
                &format!(
                    "`{name}` on a float buffer (it moves or resizes elements; write the loop by index)"
                ),
            );
        }
        // `binary_search(&k).unwrap_or_else(|j| j)`, `position(..).map_or(0, |k| k + 1)`:
        // a constant `Option` or `Result` taken apart by closures that read only constants.
        let constant_recv = match &recv {
            Val::Op(Operand::Lit(_)) => true,
            Val::Op(Operand::Var(v)) => self.holds_constant(v),
            Val::Place(..) | Val::Tuple(_) => false,
        };
        if constant_recv
            && !statement
            && is_option_combinator(&name)
            && m.args
                .iter()
                .all(|a| self.names_only_constants(&a.to_token_stream()))
        {
            return Ok(Val::Op(Operand::Lit(
                self.render(&Expr::MethodCall(m.clone())),
            )));
        }
        if constant_recv && !statement && is_option_combinator(&name) && !m.args.is_empty() {
            return unsupported(
                m,
                &format!(
                    "`.{name}(..)` of a constant `Option` or `Result` with a closure or value that carries derivatives (write a `match`)"
                ),
            );
        }
        let mut args = Vec::new();
        for (i, a) in m.args.iter().enumerate() {
            args.push(self.lower_arg(a, i + 1)?);
        }
        // A method of a constant (an integer's `rem_euclid`) with constant arguments.
        let constant = |l: &Self, o: &Operand| match o {
            Operand::Lit(_) => true,
            Operand::Var(v) => l.holds_constant(v),
        };
        // A method of a struct called for its effect alone (`backend.synchronize();`) goes
        // through the protocol even when everything is constant, as `tick(3);` does: its
        // only use is a custom rule, which must fire.
        let effect_only =
            statement && (on_struct || unit_receiver.is_some() || self.user_member_method(m));
        // (Its companions are inherent methods of the implementing types, which a type
        // parameter's bounds do not name.)
        if !self.companion && self.on_generic_param(&m.receiver) {
            let receiver = quote!(#m).to_string();
            return unsupported(
                m,
                &format!(
                    "a method of a parameter whose type is a type parameter or `impl Trait` (`{receiver}`, whose implementation the macro cannot see, so that neither its derivative nor a custom rule on it could be used: write `no_grad({receiver})` where it carries no derivative, or call a free generic function that has a `#[custom_rule]` and calls the method)"
                ),
            );
        }
        let no_derivative = || Err(no_float_derivative(&m.method));
        match recv {
            // An element of a float buffer (`x[i]`, a closure's `v` of `x.iter().map(|v|
            // ..)`) is a float: a method that is not a builtin one has no derivative.
            Val::Place(p, _)
                if !self.companion
                    && !p.is_whole()
                    && self.is_float_buffer(&p.base)
                    && !self.struct_values.contains(&p.base.to_string())
                    && !self.struct_elem_params.contains(&p.base.to_string())
                    && is_scalar_place(&p, self) =>
            {
                no_derivative()
            }
            Val::Place(p, _) => {
                self.lower_call(Callee::Method(p, m.method.clone()), args, effect_only, span)
            }
            // A method of a struct a call returned (`make(a, b).norm()`, `let p =
            // V2::new(a, b); p.norm()`) or an `if` chose (`let r = if c { p + q } else
            // { p - q };`); in a companion, a struct's protocol method
            // (`r.__ad_aug_norm()`), which no float has.
            Val::Op(Operand::Var(t))
                if self.holds_call_value(&t)
                    || self.struct_results.contains(&t.to_string())
                    || (self.companion && m.method.to_string().starts_with("__ad_")) =>
            {
                let p = Place::local(t);
                self.lower_call(Callee::Method(p, m.method.clone()), args, false, span)
            }
            // A method of a constant a call returned (`V2::new(1.0, 2.0).add(&v)`), with
            // arguments that may carry derivatives: the receiver is bound to a local.
            Val::Op(Operand::Lit(t))
                if (matches!(strip(&m.receiver), Expr::Call(_) | Expr::MethodCall(_))
                    || is_unit_variant(&m.receiver))
                    && !args
                        .iter()
                        .all(|a| matches!(a, Arg::Val(o) if constant(self, o))) =>
            {
                let p = self.bind_constant(t, VarKind::Scalar, m.receiver.span());
                self.lower_call(Callee::Method(p, m.method.clone()), args, false, span)
            }
            Val::Op(o)
                if constant(self, &o)
                    && args
                        .iter()
                        .all(|a| matches!(a, Arg::Val(o) if constant(self, o))) =>
            {
                Ok(Val::Op(Operand::Lit(
                    self.render(&Expr::MethodCall(m.clone())),
                )))
            }
            _ => no_derivative(),
        }
    }

    /// The parameter `out` of `*out` where `out` is a `&mut` buffer of rows (`out: &mut
    /// [[f64; 2]; 2]`) still bound to its own name.
    fn derefs_row_param(&self, e: &Expr) -> Option<Ident> {
        if self.companion {
            return None;
        }
        let Expr::Unary(u) = strip(e) else {
            return None;
        };
        let Expr::Path(p) = strip(&u.expr) else {
            return None;
        };
        let id = p.path.get_ident()?;
        let own = matches!(self.lookup(&id.to_string()), Some(Binding::Var(v)) if v == id);
        (matches!(u.op, syn::UnOp::Deref(_)) && own && self.row_params.contains(&id.to_string()))
            .then(|| id.clone())
    }

    /// Whether `e` names a matrix (an array or vector of rows) built in the function.
    fn is_local_matrix(&self, e: &Expr) -> bool {
        if self.companion {
            return false;
        }
        let Expr::Path(p) = strip(e) else {
            return false;
        };
        p.path.get_ident().is_some_and(|id| {
            matches!(self.lookup(&id.to_string()), Some(Binding::Var(v))
                if self.matrix_vars.contains(&v.to_string()))
        })
    }

    /// Whether `e` names a struct: `self`, a struct reference parameter or a struct value
    /// built in the function (not an `ndarray` array, whose `sum` is a reduction).
    fn is_struct_receiver(&self, e: &Expr) -> bool {
        let Expr::Path(p) = strip(strip_ref(e)) else {
            return false;
        };
        p.path.is_ident("self") || self.is_struct_local(e)
    }

    /// A local bound to the constant value `t` (a method's receiver), of kind `kind`.
    fn bind_constant(&mut self, t: TokenStream, kind: VarKind, span: Span) -> Place {
        let var = self.fresh("value", span);
        self.kinds.insert(var.to_string(), kind);
        self.emit(Stmt::Let {
            var: var.clone(),
            mutable: false,
            op: Op::Inactive(t),
        });
        Place::local(var)
    }

    /// Whether `p` names a unit struct (`CpuBackend`): one word in upper camel case (a
    /// constant's name has no lower-case letter) that names no local.
    fn is_unit_struct(&self, p: &syn::ExprPath) -> bool {
        if p.qself.is_some() {
            return false;
        }
        p.path.get_ident().is_some_and(|id| {
            let name = id.to_string();
            is_type_like_name(&name) && name != "None" && self.lookup(&name).is_none()
        })
    }

    /// Whether `m` is a method of a member of a struct (`self.backend.synchronize()`,
    /// `s.log.flush()`) that is not one of the standard collections' (`s.ids.clear()`):
    /// the member's type is not written here, and such a method is the user's own.
    fn user_member_method(&self, m: &syn::ExprMethodCall) -> bool {
        let name = m.method.to_string();
        field_root(&m.receiver).is_some_and(|root| self.is_struct_receiver(root))
            && !is_std_buffer_method(&name)
            && !matches!(
                name.as_str(),
                "push"
                    | "push_str"
                    | "fill"
                    | "copy_from_slice"
                    | "clone_from_slice"
                    | "reserve"
                    | "shrink_to_fit"
                    | "set"
                    | "replace"
                    | "take"
                    | "sort_floats"
            )
    }

    /// Whether `e` names a struct parameter (`&self` of a struct's method among them), a
    /// struct built in the function or one a call returned (`let e: C = z.exp();`): a
    /// value that is neither a float nor a buffer.
    fn is_struct_local(&self, e: &Expr) -> bool {
        let Expr::Path(p) = strip(strip_ref(e)) else {
            return false;
        };
        p.path.get_ident().is_some_and(|id| {
            let name = id.to_string();
            (self.struct_refs.contains(&name)
                && !self.array_params.contains(&name)
                && !self.buffer_params.contains(&name))
                || matches!(self.lookup(&name), Some(Binding::Var(v))
                    if self.struct_values.contains(&v.to_string())
                        || self.struct_results.contains(&v.to_string())
                        || self.structs_with_buffers.contains(&v.to_string()))
        })
    }

    /// Whether the receivers under `e`, method after method, start at a struct
    /// (`z.rev()` of a struct `z`): `z.rev().sum()` is then the user's methods, not a
    /// reduction of an iterator.
    fn rooted_at_struct(&self, e: &Expr) -> bool {
        let mut e = strip(e);
        while let Expr::MethodCall(m) = e {
            e = strip(&m.receiver);
        }
        self.is_struct_local(e)
    }

    /// Whether `e` is `self`, a struct parameter, a field or an element: a receiver whose
    /// methods may be the user's own.
    fn may_be_user_value(&self, e: &Expr) -> bool {
        match strip_ref(e) {
            Expr::Field(_) | Expr::Index(_) => true,
            Expr::Path(p) => p
                .path
                .get_ident()
                .is_some_and(|id| id == "self" || self.struct_refs.contains(&id.to_string())),
            _ => false,
        }
    }

    /// Whether `p` is a whole local float buffer, which the function may write after
    /// copying it. (`let r = y;` of a `&mut` parameter moves the reference: `r` writes
    /// into `y`.)
    fn is_written_buffer(&self, p: &Place) -> bool {
        p.is_whole()
            && matches!(self.kinds.get(&p.base.to_string()), Some(VarKind::Buffer))
            && !self.struct_values.contains(&p.base.to_string())
    }

    /// How a copy of the buffer `p` is made: of the same type when `p` is (a row of) a
    /// local buffer, whose shadows have its type; as a `Vec` otherwise (the shadow of a
    /// parameter may be a slice where the parameter is an array).
    fn copy_kind(&self, p: &Place) -> CopyKind {
        let base = p.base.to_string();
        if !self.companion
            && (matches!(self.kinds.get(&base), Some(VarKind::Buffer))
                || (self.row_params.contains(&base) && !p.is_whole()))
            && !self.struct_values.contains(&base)
        {
            CopyKind::SameType
        } else {
            CopyKind::ToVec
        }
    }

    /// Whether `p` is a whole `ndarray` array, a parameter or one the function creates.
    fn is_whole_array(&self, p: &Place) -> bool {
        p.is_whole() && self.array_params.contains(&p.base.to_string())
    }

    /// Whether `v` is a local buffer or a slice parameter (not a struct).
    fn is_float_buffer(&self, v: &Ident) -> bool {
        let name = v.to_string();
        match self.kinds.get(&name) {
            Some(VarKind::Buffer) => true,
            Some(VarKind::Ref { .. }) => !self.struct_refs.contains(&name),
            _ => false,
        }
    }

    /// An argument: a reference when written `&x`/`&mut x` or when the place is itself a
    /// reference or a buffer; the value otherwise (`y[0]`, `p.b`).
    fn val_arg(&mut self, v: Val, span: Span) -> Result<Arg> {
        Ok(match v {
            // A struct built in the body, passed by value (an options struct).
            Val::Place(p, _) if self.is_struct_value(&p) => Arg::Val(Operand::Var(p.base)),
            // (A member of a struct parameter that the body indexes, `b.vel`, is an array.)
            Val::Place(p, m)
                if !is_scalar_place(&p, self)
                    || self.is_row_element(&p)
                    || self.member_indexed_later(&p) =>
            {
                Arg::Ref(p, m)
            }
            v => Arg::Val(self.operand(v, span)?),
        })
    }

    fn lower_arg(&mut self, e: &Expr, index: usize) -> Result<Arg> {
        // `&(&a + &b)`, `&h.mapv(f)`: a reference to an array made first.
        if !self.companion
            && matches!(strip(e), Expr::Reference(r) if r.mutability.is_none())
            && self.is_compound_array(e)
        {
            let a = self.hoist_array(e)?;
            return self.lower_arg(&syn::parse_quote!(&#a), index);
        }
        // A reverse sweep's lent buffer (`__ad::lent_copy(&copies, &u)`,
        // `h::__ad_lend(&copies, &u)`), lowered again: the buffer itself.
        if let Expr::Call(c) = strip(e)
            && let Expr::Path(p) = strip(&c.func)
            && (path_names(&p.path) == ["__ad", "lent_copy"]
                || p.path
                    .segments
                    .last()
                    .is_some_and(|s| s.ident == "__ad_lend"))
            && c.args.len() == 2
        {
            return self.lower_arg(&c.args[1], index);
        }
        // `&f` of a closure parameter passes the closure on, as `f` does; so do `&|t| ..`
        // and `&g` of a local closure (to a callee taking `&dyn Fn(..)` or `&impl Fn(..)`).
        let e = match strip(e) {
            Expr::Reference(r)
                if r.mutability.is_none()
                    && (matches!(strip(&r.expr), Expr::Closure(_))
                        || matches!(strip(&r.expr), Expr::Path(p) if p.path.get_ident().is_some_and(|id| {
                            match self.lookup(&id.to_string()) {
                                Some(Binding::Var(v)) => matches!(self.kinds.get(&v.to_string()), Some(VarKind::Closure(_))),
                                Some(Binding::Closure(_)) => true,
                                _ => false,
                            }
                        }))) =>
            {
                &r.expr
            }
            _ => e,
        };
        match strip(e) {
            Expr::Closure(c) => {
                let def = ClosureDef {
                    params: c.inputs.iter().cloned().collect(),
                    body: (*c.body).clone(),
                    scopes: self.scopes.clone(),
                };
                return Ok(Arg::Closure(Box::new(self.lower_closure(
                    &def,
                    index,
                    e.span(),
                )?)));
            }
            Expr::Path(p) if p.path.get_ident().is_some() => {
                let name = p.path.get_ident().unwrap().to_string();
                match self.lookup(&name).cloned() {
                    Some(Binding::Closure(def)) => {
                        return Ok(Arg::Closure(Box::new(self.lower_closure(
                            &def,
                            index,
                            e.span(),
                        )?)));
                    }
                    Some(Binding::Var(v))
                        if matches!(self.kinds.get(&v.to_string()), Some(VarKind::Closure(_))) =>
                    {
                        return Ok(Arg::ClosureParam(v));
                    }
                    // A reference to an element (`for row in m.iter()`, `|v| h(v)`): the
                    // callee takes a reference, to a row of a matrix or to a float.
                    Some(Binding::Alias(place, m)) if matches!(place.proj.last(), Some(Proj::Index(t)) if !is_range_tokens(t)) =>
                    {
                        return Ok(Arg::Ref(place, m));
                    }
                    _ => {}
                }
            }
            _ => {}
        }
        if let Expr::Reference(r) = strip(e) {
            match self.lower_expr(&r.expr)? {
                Val::Place(p, _) => return Ok(Arg::Ref(p, r.mutability.is_some())),
                // `&mut s` of a local scalar: the callee may write it. `&s` of a local
                // scalar, or of an array a call returned (`norm2(&rhs(y, k))`): read
                // through it.
                Val::Op(Operand::Var(v)) => {
                    return Ok(Arg::Ref(Place::local(v), r.mutability.is_some()));
                }
                _ => {}
            }
        }
        let v = self.lower_expr(e)?;
        Ok(match self.val_arg(v, e.span())? {
            // No `&` written: a reference passed on (`norm(x)` of `x: &[f64]`), or an
            // array passed by value (`rhs(s, k)`, `rhs(pts[i], k)`, `rhs(*p, k)`).
            Arg::Ref(p, _) if !self.passes_reference(e, &p) => Arg::Copied(p),
            // The array a call returned, bound by name and indexed by the body (`let v =
            // rot(s, a);` then `v[0]` and `rot(v, b)`): passed by value as well.
            Arg::Val(Operand::Var(v)) if self.names_indexed_call_result(e, &v) => {
                Arg::Copied(Place::local(v))
            }
            a => a,
        })
    }

    /// Whether `e` is a name bound to `v`, a local the lowering holds as a value, that the
    /// body indexes somewhere (`v[0]`): an array a call returned.
    fn names_indexed_call_result(&self, e: &Expr, v: &Ident) -> bool {
        let Expr::Path(p) = strip(e) else {
            return false;
        };
        let Some(id) = p.path.get_ident() else {
            return false;
        };
        !self.companion
            && self.indexed_owners.contains(&id.to_string())
            && matches!(self.lookup(&id.to_string()), Some(Binding::Var(b)) if b == v)
            && matches!(self.kinds.get(&v.to_string()), Some(VarKind::Scalar))
    }

    /// Whether the argument `e`, written without `&`, lowered to the place `p`, passes a
    /// reference: a name bound to one (a reference parameter, `let (a, b) =
    /// s.split_at_mut(n)`, `let r = &x[1..]`), or a part of a buffer.
    fn passes_reference(&self, e: &Expr, p: &Place) -> bool {
        if matches!(p.proj.last(), Some(Proj::Index(t)) if is_range_tokens(t)) {
            return true;
        }
        let Expr::Path(path) = strip(e) else {
            return false;
        };
        match path
            .path
            .get_ident()
            .and_then(|id| self.lookup(&id.to_string()))
        {
            Some(Binding::Alias(..) | Binding::Cursor(_)) => true,
            Some(Binding::Var(v)) => {
                matches!(self.kinds.get(&v.to_string()), Some(VarKind::Ref { .. }))
            }
            _ => false,
        }
    }

    fn lower_call_expr(&mut self, c: &syn::ExprCall) -> Result<Val> {
        let statement = std::mem::take(&mut self.statement_call);
        let value_call = std::mem::take(&mut self.value_call);
        let span = c.span();
        let Expr::Path(fp) = strip(&c.func) else {
            return unsupported(&c.func, "calling this expression");
        };
        let path = &fp.path;
        // A companion's iterator over a buffer of constants (`for t in [0.5, 2.0]`, kept
        // as `IntoIterator::into_iter(items.iter())`): constant.
        if self.companion && path_names(path) == ["core", "iter", "IntoIterator", "into_iter"] {
            return Ok(Val::Op(Operand::Lit(self.render(&Expr::Call(c.clone())))));
        }
        // Local closures, and closure parameters.
        if let Some(id) = path.get_ident() {
            if let Some(Binding::Var(v)) = self.lookup(&id.to_string()).cloned()
                && let Some(y) = self.closure_outputs.get(&v.to_string()).cloned()
            {
                let mut args = Vec::new();
                for a in &c.args {
                    let v = self.lower_expr(a)?;
                    args.push(Arg::Val(self.operand(v, a.span())?));
                }
                return self.lower_call(Callee::ClosureParam(v, y), args, false, span);
            }
            if let Some(Binding::Closure(def)) = self.lookup(&id.to_string()).cloned() {
                // A call passes values: a place argument is read, not aliased (but for a
                // struct element, which a parameter names as `let a = zs[0];` does).
                let mut args = Vec::new();
                for a in &c.args {
                    let v = match self.lower_expr(a)? {
                        // (A row, `pts[i]` of a vector of arrays, is named as it is: an
                        // array the closure reads.)
                        Val::Place(p, m)
                            if is_scalar_place(&p, self)
                                && !self.is_struct_element(&p)
                                && !self.is_row_element(&p)
                                && !matches!(strip(a), Expr::Reference(_)) =>
                        {
                            let _ = m;
                            Val::Op(self.operand(Val::Place(p, m), a.span())?)
                        }
                        v => v,
                    };
                    args.push(v);
                }
                return self.inline_closure(&def, args, span, statement);
            }
        }
        let last = path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        if last == "no_grad" {
            let toks = self.render(&Expr::Call(c.clone()));
            // A value that calls something (`no_grad(rng.next())`, `no_grad(draw(&mut
            // state))`) is computed once, where it is written, and kept for the reverse
            // sweep: computed again, a call with effects would give another value. (A
            // statement of its own stays as written: no sweep reads it.)
            if !statement && c.args.iter().any(calls_something) {
                return Ok(Val::Op(self.let_op(Op::Inactive(toks), span)));
            }
            return Ok(Val::Op(Operand::Lit(toks)));
        }
        // `T::zero()`, `T::one()`, `f64::epsilon()`: a constant of a float type, written
        // where it is used (never recorded for a reverse sweep); so is `Default::default()`
        // (of any type: it reads nothing).
        let default = matches!(strip(&c.func), Expr::Path(p)
            if path_names(&p.path).ends_with(&["Default".to_string(), "default".to_string()]));
        if c.args.is_empty()
            && !statement
            && (default || self.float_type_of_path(&c.func).is_some())
        {
            return Ok(Val::Op(Operand::Lit(self.render(&Expr::Call(c.clone())))));
        }
        // A capitalised name called as a statement, with references, or in arithmetic is
        // a function's (`Qtimesx(&q, &x, &mut out)`): a tuple struct is built as a value.
        if is_tuple_struct_call(c)
            && !statement
            && !value_call
            && !c
                .args
                .iter()
                .any(|a| matches!(strip(a), Expr::Reference(_)))
        {
            let op = self.lower_tuple_struct(c, false)?;
            return self.struct_value(op, &Expr::Call(c.clone()));
        }
        // `std::mem::swap(&mut a, &mut b)` of two floats (locals or elements): three
        // assignments through a temporary.
        let names = path_names(path);
        // `std::mem::replace(&mut a, v)` of a float: the old value, read before `v` is
        // written.
        if names.len() >= 2
            && names[names.len() - 2..] == ["mem", "replace"]
            && c.args.len() == 2
            && let Expr::Reference(r) = strip(&c.args[0])
            && r.mutability.is_some()
        {
            let (a, v) = (&r.expr, &c.args[1]);
            let Ok(block) = syn::parse2::<syn::Block>(quote_spanned!(span=> {
                let __ad_mem_old = #a;
                #a = #v;
                __ad_mem_old
            })) else {
                return unsupported(c, "`std::mem::replace` of these operands");
            };
            let r = self.lower_scoped(&block);
            return Ok(r?.unwrap_or(Val::Tuple(vec![])));
        }
        // `std::mem::take(&mut v)` of a local vector or a float: `replace` with an empty
        // vector or a zero.
        if names.len() >= 2 && names[names.len() - 2..] == ["mem", "take"] && c.args.len() == 1 {
            let taken = match strip(&c.args[0]) {
                Expr::Reference(r) if r.mutability.is_some() => Some(&r.expr),
                _ => None,
            };
            let place = match taken.map(|a| self.lower_expr(a)).transpose()? {
                Some(Val::Place(p, _)) => Some(p),
                Some(Val::Op(Operand::Var(v))) => Some(Place::local(v)),
                _ => None,
            };
            let empty: Option<Expr> = match place {
                Some(p) if !self.companion && self.is_written_buffer(&p) => {
                    Some(syn::parse_quote_spanned!(span=> ::std::vec::Vec::new()))
                }
                Some(p) if is_scalar_place(&p, self) => Some(syn::parse_quote_spanned!(span=> 0.0)),
                _ => None,
            };
            let (Some(a), Some(empty)) = (taken, empty) else {
                return unsupported(
                    c,
                    "`std::mem::take` of anything but a local vector or a float (write `std::mem::replace(&mut v, empty)`)",
                );
            };
            let replaced: Expr =
                syn::parse_quote_spanned!(span=> ::std::mem::replace(&mut #a, #empty));
            return self.lower_expr(&replaced);
        }
        if names.len() >= 2 && names[names.len() - 2..] == ["mem", "swap"] && c.args.len() == 2 {
            // Two whole local buffers (double buffering, `swap(&mut u, &mut u_new)`): they
            // trade places, with nothing recorded.
            if let (Some(a), Some(b)) = (
                self.swapped_buffer(&c.args[0]),
                self.swapped_buffer(&c.args[1]),
            ) && a != b
            {
                self.emit(Stmt::CopyFrom {
                    dst: Place::local(a),
                    src: Place::local(b),
                    mode: CopyMode::Swap,
                });
                return Ok(Val::Tuple(vec![]));
            }
            // `&mut a`, or a name holding a `&mut` (an element of `iter_mut()`): the place.
            let place = |e: &Expr| -> Option<Expr> {
                match strip(e) {
                    Expr::Reference(r) if r.mutability.is_some() => Some((*r.expr).clone()),
                    Expr::Path(p) => {
                        let id = p.path.get_ident()?.to_string();
                        let element = match self.lookup(&id) {
                            Some(Binding::Alias(place, _)) => is_scalar_place(place, self),
                            _ => self.scalar_refs.contains(&id),
                        };
                        element.then(|| syn::parse_quote!(*#p))
                    }
                    _ => None,
                }
            };
            let (Some(a), Some(b)) = (place(&c.args[0]), place(&c.args[1])) else {
                return unsupported(c, "`std::mem::swap` of these operands");
            };
            let (a, b) = (&a, &b);
            // Parsed, not `parse_quote`d: the operands are the user's (`&mut return` too).
            let Ok(block) = syn::parse2::<syn::Block>(quote_spanned!(span=> {
                let __ad_mem_swap = #a;
                #a = #b;
                #b = __ad_mem_swap;
            })) else {
                return unsupported(c, "`std::mem::swap` of these operands");
            };
            let r = self.lower_scoped(&block);
            r?;
            return Ok(Val::Tuple(vec![]));
        }
        if self.companion
            && let Some(v) = self.lower_runtime_call(c)?
        {
            return Ok(v);
        }
        let trimmed;
        let c = match protocol_kind(&last) {
            Some(_) if self.companion => {
                let mut t = c.clone();
                t.args = protocol_args(&last, &c.args, true);
                trimmed = t;
                &trimmed
            }
            _ => c,
        };
        // `Vec::from(x)` of a slice, an array or a vector: a copy, `x.to_vec()`.
        if let [ty, from] = path_names(path).as_slice()
            && ty == "Vec"
            && from == "from"
            && c.args.len() == 1
        {
            let arg = &c.args[0];
            return self.lower_expr(&syn::parse_quote_spanned!(span=> (#arg).to_vec()));
        }
        // `std::cmp::min(locate(x, t), n - 2)`, `Ord::max(i, 1)`: `Ord` is the integers'
        // (floats have no `Ord`), so the value carries no derivative; its arguments are
        // lowered as values (a call among them still goes through its derivatives).
        if is_ord_min_max(path) && !c.args.is_empty() {
            let args = c
                .args
                .iter()
                .map(|a| self.lower_integer_operand(a))
                .collect::<Result<_>>()?;
            let name = path.segments.last().map(|s| s.ident.to_string());
            return self.integer_method(name.as_deref().unwrap_or("min"), args, span);
        }
        // `f64::from(v)`: the conversion `v as f64` (lossless where `from` exists).
        if let [ty, from] = path_names(path).as_slice()
            && (ty == "f64" || ty == "f32")
            && from == "from"
            && c.args.len() == 1
        {
            let (ty, arg) = (Ident::new(ty, path.segments[0].ident.span()), &c.args[0]);
            return self.lower_expr(&syn::parse_quote_spanned!(span=> (#arg) as #ty));
        }
        if let Some(name) = math_path(path, &self.floats)
            && !c.args.is_empty()
            && math_arity(&name) == Some(c.args.len() - 1)
        {
            // (`f64::max(peak, x)` is written `peak.max(x)`, where an untyped `let mut peak
            // = 1.0;` would be an ambiguous float: the receiver takes the path's type.)
            let ty = match path_names(path).as_slice() {
                [ty, _] if ty == "f64" || ty == "f32" => Some(Ident::new(ty, span)),
                _ => None,
            };
            let mut args = Vec::new();
            for (i, a) in c.args.iter().enumerate() {
                args.push(match &ty {
                    // (`f64::sqrt(2.0)`: the literal takes the path's type as its suffix.)
                    Some(ty) if i == 0 => match strip(a) {
                        Expr::Lit(syn::ExprLit {
                            lit: syn::Lit::Float(f),
                            ..
                        }) if f.suffix().is_empty() => {
                            let typed =
                                syn::LitFloat::new(&format!("{}{ty}", f.base10_digits()), f.span());
                            self.lower_expr(&syn::parse_quote!(#typed))?
                        }
                        Expr::Lit(_) => self.lower_expr(a)?,
                        _ => self.lower_expr(&syn::parse_quote_spanned!(span=> (#a) as #ty))?,
                    },
                    _ => self.lower_expr(a)?,
                });
            }
            return self.lower_math(&name, args, span);
        }
        let mut args = Vec::new();
        for (i, a) in c.args.iter().enumerate() {
            args.push(self.lower_arg(a, i)?);
        }
        // A constant scalar, or an array of constants passed by value (`quadratic([1.0,
        // 2.0, 3.0], 0.5)`, lent to the companions as a local array).
        let constant_args = args.iter().zip(&c.args).all(|(a, e)| {
            matches!(a, Arg::Val(Operand::Lit(_)))
                || (matches!(strip(e), Expr::Array(_) | Expr::Repeat(_))
                    && !self.mentions_locals(e))
        });
        // `f64::rem_euclid(x, 2.0)`: a float method that is not a builtin one, called
        // through its type, has no derivative (as `x.rem_euclid(2.0)` has none).
        if let [ty, _] = path_names(path).as_slice()
            && (ty == "f64" || ty == "f32")
            && !constant_args
            && !self.companion
        {
            return Err(no_float_derivative(&path.segments[1].ident));
        }
        // (A capitalised name that reaches here is taken for a function's, see above.)
        if !constant_args
            && !is_tuple_struct_call(c)
            && let Some(why) = self.not_a_function(path)
        {
            return unsupported(c, &why);
        }
        // A call whose value is used and whose arguments are all constant expressions
        // needs no derivative: its value is a constant (`scale(n)`, `f64::from(k)`). A
        // call made for its effect alone (`tick(3);`) goes through the protocol all the
        // same, unless it is into the standard library: its only use is a custom rule,
        // which must fire.
        // A companion's call of a protocol function lost its state and marker above, so it
        // cannot be made as written: it is differentiated like any other.
        let protocol = self.companion && protocol_kind(&last).is_some();
        // A constant reference parameter passed on (`weight(ks)`) is lent, as `&ks` is:
        // the callee's rule fires.
        let lends = c.args.iter().any(|a| match strip(a) {
            Expr::Path(p) => p
                .path
                .get_ident()
                .is_some_and(|id| self.is_constant_ref(id)),
            _ => false,
        });
        let effect_only = protocol || ((statement || lends) && !is_std_path(path));
        if !args.is_empty() && !effect_only && constant_args {
            return Ok(Val::Op(Operand::Lit(self.render(&Expr::Call(c.clone())))));
        }
        let callee = if is_assoc_path(path) {
            let mut ty = path.clone();
            let seg = ty.segments.pop().unwrap().into_value();
            // Drop the trailing `::` left by pop.
            let ty = syn::Path {
                leading_colon: ty.leading_colon,
                segments: ty.segments.into_iter().collect(),
            };
            Callee::Assoc(ty, seg.ident)
        } else {
            Callee::Path(path.clone())
        };
        self.lower_call(callee, args, effect_only, span)
    }

    /// Calls into the runtime that generated companions make (`__ad::..`), met when a
    /// companion is itself differentiated: zeros, tape reads and builtin partials.
    fn lower_runtime_call(&mut self, c: &syn::ExprCall) -> Result<Option<Val>> {
        let Expr::Path(fp) = strip(&c.func) else {
            return Ok(None);
        };
        // `<[_]>::to_vec(&x)`: a copy of a buffer (a tape store, a saved value).
        if fp.qself.is_some()
            && fp.path.segments.last().is_some_and(|s| s.ident == "to_vec")
            && c.args.len() == 1
        {
            let place = self.lower_place(strip_full_range(strip_ref(&c.args[0])))?;
            let v = self.let_op(Op::CloneOf(place, CopyKind::ToVec), c.span());
            if let Operand::Var(var) = &v {
                self.kinds.insert(var.to_string(), VarKind::Buffer);
            }
            return Ok(Some(Val::Op(v)));
        }
        let segs = path_names(&fp.path);
        let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
        let span = c.span();
        match segs.as_slice() {
            // A copy of a local buffer that keeps its type (see `CopyKind::SameType`).
            ["__ad", "copy_of"] if self.companion && c.args.len() == 1 => {
                let place = self.lower_place(strip_ref(&c.args[0]))?;
                let v = self.let_op(Op::CloneOf(place, CopyKind::SameType), span);
                if let Operand::Var(var) = &v {
                    self.kinds.insert(var.to_string(), VarKind::Buffer);
                }
                Ok(Some(Val::Op(v)))
            }
            // A sort's permutation: a buffer of indices (see `lower_permutation`).
            ["__ad", "sort_permutation"] => {
                let toks = self.render(&Expr::Call(c.clone()));
                let v = self.let_op(Op::Inactive(toks), span);
                if let Operand::Var(var) = &v {
                    self.kinds.insert(var.to_string(), VarKind::Buffer);
                }
                Ok(Some(Val::Op(v)))
            }
            ["__ad", "zero_like"]
            | ["__ad", "accumulator_zero"]
            // The length of a zipped or `take`n chain, in an index computation.
            | ["__ad", "min_len"]
            // The index of a struct member's element, by its position.
            | ["__ad", "flat_index"]
            // The size of `windows(n)`, checked.
            | ["__ad", "window_size"]
            // The length of a row assigned `vec![..]`, checked.
            | ["__ad", "same_row_length"]
            // The number of rows of a matrix assigned whole, checked.
            | ["__ad", "same_row_count"]
            // The position of the element `split_first` or `split_last` splits off, or
            // that `first`, `last` or `get` found, checked.
            | ["__ad", "first_of"]
            | ["__ad", "last_of"]
            | ["autodiff_core", "__private", "found_at"]
            // A `filter`'s predicate on an element, a `max_by`'s comparison.
            | ["__ad", "holds"]
            | ["__ad", "compare"]
            // Whether an adjoint is not zero, before a propagation through infinite partials.
            | ["__ad", "nonzero"]
            | ["core", "iter", "Iterator", "size_hint"]
            | ["core", "iter", "Sum", "sum"]
            // Copies of loop ranges, which generated reverse sweeps record.
            | ["core", "clone", "Clone", "clone"] => Ok(Some(
                Val::Op(Operand::Lit(self.render(&Expr::Call(c.clone())))),
            )),
            // The arena of a reverse sweep's copies of lent buffers, which are lent
            // themselves when lowered again (see `lower_arg`).
            ["__ad", "LentCopies", "new"] => Ok(Some(Val::Op(Operand::Lit(quote!(()))))),
            // What a reverse sweep saves and puts back around a call with `&mut`
            // arguments: a copy of the place, and an assignment or copy into it.
            ["__ad", "snapshot"] if c.args.len() == 1 => {
                let inner = strip_borrow(&c.args[0]);
                let place = self.lower_place(inner)?;
                if self.is_whole_struct(&place) {
                    let behind_ref = is_deref(inner);
                    let kind = CopyKind::Struct { behind_ref };
                    let v = self.let_op(Op::CloneOf(place, kind), c.span());
                    if let Operand::Var(var) = &v {
                        self.kinds.insert(var.to_string(), VarKind::Value);
                    }
                    return Ok(Some(Val::Op(v)));
                }
                if self.is_struct_ref(&place) && !self.is_rows_param(&place) {
                    return unsupported(c, "saving this value behind a reference");
                }
                // A member of a struct parameter, of a type the macro does not see (a
                // float, a vector, an array: a reverse companion keeps the final value of
                // each member its function changes): a copy of its own type, moved back.
                // So is an element of a vector of struct values (`ps[k]` whose method a
                // call changes), which a move out of the vector cannot copy.
                if matches!(place.proj.last(), Some(Proj::Field(_)))
                    || self.is_struct_elem_read_back(&place)
                {
                    let v = self.let_op(Op::CloneOf(place, CopyKind::SameType), c.span());
                    if let Operand::Var(var) = &v {
                        self.kinds.insert(var.to_string(), VarKind::Scalar);
                    }
                    return Ok(Some(Val::Op(v)));
                }
                let copy: Expr = if is_scalar_place(&place, self) && !self.is_row(&place) {
                    inner.clone()
                } else {
                    syn::parse_quote!(#inner.to_vec())
                };
                Ok(Some(self.lower_expr(&copy)?))
            }
            // (`restore_struct`, `restore_struct_from` and `snapshot_struct` are the same
            // of a whole struct, which a name may not show: a copy of a call's struct taken
            // back from a store in a loop.)
            ["__ad", "snapshot_struct"] if c.args.len() == 1 => {
                let place = self.lower_place(strip_borrow(&c.args[0]))?;
                let v = self.let_op(Op::CloneOf(place, CopyKind::Struct { behind_ref: false }), c.span());
                if let Operand::Var(var) = &v {
                    self.kinds.insert(var.to_string(), VarKind::Value);
                }
                Ok(Some(Val::Op(v)))
            }
            ["__ad", name @ ("restore" | "restore_from" | "restore_struct" | "restore_struct_from")]
                if c.args.len() == 2 =>
            {
                let is_struct_helper = name.starts_with("restore_struct");
                let dst = strip_borrow(&c.args[0]);
                let src = strip_clone(strip_borrow(&c.args[1]));
                let place = self.lower_place(dst)?;
                // (A whole local the macro took for a float may hold a struct with a
                // buffer member, which a move would leave empty for the second restore
                // of the same saved value: copied as a struct is, which copies a float
                // too.)
                let taken_for_float = place.is_whole()
                    && self.kinds.get(&place.base.to_string()) == Some(&VarKind::Scalar);
                let mode = if self.is_whole_struct(&place)
                    || is_struct_helper
                    || taken_for_float
                    || self.is_struct_elem_read_back(&place)
                {
                    CopyMode::Struct {
                        behind_ref: !is_struct_helper && is_deref(dst),
                    }
                } else if self.is_struct_ref(&place) && !self.is_rows_param(&place) {
                    return unsupported(c, "restoring this value behind a reference");
                } else if is_scalar_place(&place, self) && !self.is_row(&place) {
                    // (`restore_from` leaves the saved value for the `restore` after the
                    // pullback: a copy, which a member of a struct built in the function,
                    // taken here for a float, may need, `st.v` lent to a callee.)
                    let assign: Expr = if *name == "restore_from" {
                        syn::parse_quote!(#dst = __ad::copy_of(&#src))
                    } else {
                        syn::parse_quote!(#dst = #src)
                    };
                    self.lower_expr(&assign)?;
                    return Ok(Some(Val::Op(Operand::Lit(quote!(())))));
                } else {
                    CopyMode::Elements
                };
                let src = match self.lower_expr(src)? {
                    Val::Place(p, _) => p,
                    Val::Op(Operand::Var(v)) => Place::local(v),
                    _ => return unsupported(src, "this saved value"),
                };
                self.emit(Stmt::CopyFrom {
                    dst: place,
                    src,
                    mode,
                });
                Ok(Some(Val::Op(Operand::Lit(quote!(())))))
            }
            // `h = out;` between whole vectors of different lengths: `h` (or its adjoint)
            // takes `out`'s length before the copy, and a recorded copy of `h` with its
            // length is put back in the reverse sweep. Both are a copy that resizes (the
            // copy that follows a `resize_like` then copies the same values again, and
            // the adjoint that one resizes is zeroed next).
            ["__ad", "resize_like" | "restore_resized"] if c.args.len() == 2 => {
                let dst = self.lower_place(strip_borrow(&c.args[0]))?;
                let src = strip_full_range(strip_ref(&c.args[1]));
                let src = match self.lower_expr(src)? {
                    Val::Place(p, _) => p,
                    Val::Op(Operand::Var(v)) => {
                        // A recorded copy, popped from its store.
                        self.kinds.insert(v.to_string(), VarKind::Buffer);
                        Place::local(v)
                    }
                    _ => return unsupported(src, "this saved value"),
                };
                self.emit(Stmt::CopyFrom {
                    dst,
                    src,
                    mode: CopyMode::Resized,
                });
                Ok(Some(Val::Op(Operand::Lit(quote!(())))))
            }
            // The shadow of a member whose length changes (see `Reverse::member_seeds`),
            // lowered again: the same on the shadow's tangent, whose length follows too.
            ["__ad", "member_fit" | "member_grow"] if c.args.len() == 2 => {
                let f = &fp.path;
                let a = self.lower_place(strip_borrow(&c.args[0]))?;
                let p = self.render(strip_borrow(&c.args[1]));
                let (pa, ta) = (a.primal(), a.tangent());
                self.emit(Stmt::Inactive(quote!(#f(&mut #pa, &#p);)));
                self.emit(Stmt::Inactive(quote!(#f(&mut #ta, &#p);)));
                Ok(Some(Val::Op(Operand::Lit(quote!(())))))
            }
            ["__ad", "member_take_seed"] if c.args.len() == 2 => {
                let a = self.lower_place(strip_borrow(&c.args[0]))?;
                let p = self.render(strip_borrow(&c.args[1]));
                let (pa, ta) = (a.primal(), a.tangent());
                let seed = self.fresh("member_seed", span);
                let tseed = crate::ir::tangent_name(&seed);
                self.emit(Stmt::Inactive(quote!(
                    let #seed = __ad::member_take_seed(&mut #pa, &#p);
                    let #tseed = __ad::member_take_seed(&mut #ta, &#p);
                )));
                Ok(Some(Val::Op(Operand::Lit(quote!((#seed, #tseed))))))
            }
            ["__ad", "member_add_seed"] if c.args.len() == 2 => {
                let a = self.lower_place(strip_borrow(&c.args[0]))?;
                let seeds = self.render(&c.args[1]);
                let (pa, ta) = (a.primal(), a.tangent());
                self.emit(Stmt::Inactive(quote!({
                    let (__ad_s, __ad_ts) = #seeds;
                    __ad::member_add_seed(&mut #pa, __ad_s);
                    __ad::member_add_seed(&mut #ta, __ad_ts);
                })));
                Ok(Some(Val::Op(Operand::Lit(quote!(())))))
            }
            // Zeroing a shadow, and adding a scratch shadow into one.
            ["__ad", "fill_zero"] if c.args.len() == 1 => {
                let dst = strip_full_range(strip_ref(&c.args[0]));
                // (The shadow of a vector of rows holds arrays: `[0.0; 2]`, not `0.0`.)
                let rows = matches!(strip(dst), Expr::Path(p)
                    if p.path.get_ident().is_some_and(|id| self.names_rows(id)));
                if self.floats.is_empty() && !rows && !matches!(strip(dst), Expr::Field(_)) {
                    self.lower_method_stmt(&syn::parse_quote!(#dst.fill(0.0)))?;
                } else {
                    // A type parameter takes no literal, the shadow of a struct's
                    // member may hold integers (`s.ids`), and that of rows arrays.
                    self.lower_expr(&syn::parse_quote!({
                        let __ad_zero = __ad::elem_zero(&#dst[..]);
                        #dst.fill(__ad_zero);
                    }))?;
                }
                Ok(Some(Val::Op(Operand::Lit(quote!(())))))
            }
            // An adjoint added into one that may be a tuple or an array (which have no
            // `+=`): a call, whose forward protocol adds the tangents alike
            // (`add_to::__ad_fwd`).
            ["__ad", "add_to"] if c.args.len() == 2 => Ok(None),
            // The seed of a struct result added into its adjoint: `add_into(&mut b, s)`.
            ["__ad", "StructSeed", "add_to"] if c.args.len() == 2 => {
                let (seed, adjoint) = (&c.args[0], &c.args[1]);
                let added: Expr = syn::parse_quote!(__ad::add_into(#adjoint, #seed));
                self.lower_expr(&added).map(Some)
            }
            ["__ad", "add_into"] if c.args.len() == 2 => {
                let dst = strip_full_range(strip_ref(&c.args[0]));
                let src = strip_full_range(strip_ref(&c.args[1]));
                // The adjoint of a struct built in the body (`let mut p = V2 { .. }`,
                // passed twice to one call): added member by member.
                if let Val::Place(p, _) = self.lower_expr(dst)?
                    && let Some((_, members)) =
                        self.struct_shape(&Vec::new(), &Val::Place(p, false))
                {
                    for m in members {
                        self.lower_expr_stmt(&syn::parse_quote!(#dst.#m += #src.#m))?;
                    }
                    return Ok(Some(Val::Op(Operand::Lit(quote!(())))));
                }
                // Another struct's adjoint (the scratch shadow of a struct a call returned,
                // passed twice to one call, or the seed of a struct result): added whole,
                // as a call whose forward protocol adds the tangents alike
                // (`add_into::__ad_fwd`).
                if !self.names_buffer(&c.args[1]) && !self.names_buffer(&c.args[0]) {
                    return Ok(None);
                }
                // The adjoint of a matrix (`Vec<Vec<f64>>`, indexed twice) row by row.
                let is_matrix = |e: &Expr| {
                    matches!(strip(e), Expr::Path(p)
                        if p.path.get_ident().is_some_and(|id| self.rows_indexed.contains(&id.to_string())
                            || self.names_rows(id)))
                };
                if is_matrix(dst) || is_matrix(src) {
                    self.lower_expr(&syn::parse_quote! {
                        for __ad_k in 0..#src.len() {
                            for __ad_l in 0..#src[__ad_k].len() {
                                #dst[__ad_k][__ad_l] += #src[__ad_k][__ad_l];
                            }
                        }
                    })?;
                    return Ok(Some(Val::Op(Operand::Lit(quote!(())))));
                }
                // (Over the shorter of the two, as `add_into` zips them: the seed of a
                // member that grows is longer than the member's copy.)
                self.lower_expr(&syn::parse_quote! {
                    for __ad_k in 0..__ad::min_len(#dst.len(), #src.len()) {
                        #dst[__ad_k] += #src[__ad_k];
                    }
                })?;
                Ok(Some(Val::Op(Operand::Lit(quote!(())))))
            }
            // A float literal as generated code writes it, and an integer as a float
            // (`powi`'s exponent in its partial).
            ["__ad", "Real", "lit"]
            | ["__ad", "int_like" | "lit_like" | "elem_lit" | "elem_zero" | "rem_partial" | "integer_as"] => Ok(Some(Val::Op(Operand::Lit(
                self.render(&Expr::Call(c.clone())),
            )))),
            // The sum of an adjoint buffer's elements.
            ["__ad", "sum"] if c.args.len() == 1 => {
                let v = strip_full_range(strip_ref(&c.args[0]));
                let sum: Expr = if self.floats.is_empty() {
                    syn::parse_quote!(#v.iter().sum())
                } else {
                    syn::parse_quote!(#v.iter().fold(__ad::elem_lit(-0.0, &#v[..]), |s, e| s + e))
                };
                Ok(Some(self.lower_expr(&sum)?))
            }
            // The adjoint of a conversion: a call, whose forward protocol converts the
            // tangents alike (`add_cast::__ad_fwd`; an integer's adjoint takes nothing).
            ["__ad", "add_cast"] if c.args.len() == 2 => Ok(None),
            // A conversion to a float type parameter (`forward::cast`), or of a tangent.
            ["__ad", "cast_to" | "cast_tangent"] if c.args.len() == 1 => {
                let ty = match &*c.func {
                    Expr::Path(p) => match p.path.segments.last().map(|s| &s.arguments) {
                        Some(syn::PathArguments::AngleBracketed(a)) => match a.args.first() {
                            Some(syn::GenericArgument::Type(t)) => t.clone(),
                            _ => return unsupported(c, "this conversion"),
                        },
                        _ => return unsupported(c, "this conversion"),
                    },
                    _ => return unsupported(c, "this conversion"),
                };
                let v = self.lower_expr(&c.args[0])?;
                let o = self.operand(v, c.args[0].span())?;
                Ok(Some(Val::Op(self.let_op(Op::Cast(o, ty), span))))
            }
            ["__ad", "take"] if c.args.len() == 1 => {
                let Expr::MethodCall(m) = strip(&c.args[0]) else {
                    return unsupported(c, "this tape read");
                };
                if m.method != "pop" || !m.args.is_empty() {
                    return unsupported(c, "this tape read");
                }
                // A tape that keeps the values of a buffer (`__ad_keep_<name>`) pops
                // buffers.
                let kept_buffer = match strip(&m.receiver) {
                    Expr::Path(p) => p.path.get_ident().is_some_and(|id| {
                        id.to_string()
                            .strip_prefix("__ad_keep_")
                            .is_some_and(|kept| self.buffer_names.contains(kept))
                    }),
                    _ => false,
                };
                let place = self.lower_place(&m.receiver)?;
                let v = self.let_op(Op::Pop(place), span);
                if kept_buffer && let Operand::Var(var) = &v {
                    self.kinds.insert(var.to_string(), VarKind::Buffer);
                }
                Ok(Some(Val::Op(v)))
            }
            ["__ad", "d", name] => {
                let Some(template) = partial_template(name) else {
                    return unsupported(c, "differentiating this builtin derivative again");
                };
                let mut text = template.to_string();
                // An untyped float literal argument takes the type of a typed one: the
                // templates call methods on their arguments (`$1.ln()` of a `log` base),
                // which a literal of no known type does not have.
                let like = c.args.iter().find(|a| !is_untyped_float_lit(a));
                // The arguments go in as expressions, not as text, so that their names
                // keep their hygiene (`$x` of a `macro_rules!`). `$10` does not occur:
                // partials have at most four arguments.
                let mut args = Vec::new();
                for (i, a) in c.args.iter().enumerate().rev() {
                    let arg: Expr = match like {
                        Some(like) if is_untyped_float_lit(a) => {
                            syn::parse_quote!(__ad::lit_like(#a, &(#like)))
                        }
                        _ => syn::parse_quote!((#a)),
                    };
                    let slot = format!("__ad_arg{i}");
                    text = text.replace(&format!("${i}"), &slot);
                    args.push((slot, arg));
                }
                let mut e: Expr = syn::parse_str(&text)
                    .map_err(|_| syn::Error::new(span, "a builtin derivative could not be read"))?;
                // In generic code, the templates' constants take the operand's float type
                // (a type parameter takes no literal); the arguments' own literals stay as
                // they are (`T::from(2.5)`), so they go in afterwards.
                if let Some(like) = c.args.first().filter(|_| !self.floats.is_empty()) {
                    FloatLitsLike(like.clone()).visit_expr_mut(&mut e);
                }
                TemplateArgs(&args).visit_expr_mut(&mut e);
                Ok(Some(self.lower_expr(&e)?))
            }
            // The derivative of a callee's protocol function, met in a third derivative.
            [.., callee, last] if last.starts_with("__ad_") && last.contains("___ad_") => {
                unsupported(
                    c,
                    &format!(
                        "a third-order derivative through the call of `{callee}` (forward over forward over reverse of code that calls another function)"
                    ),
                )
            }
            // The cells through which a differentiated closure passed to a call hands
            // back the adjoints of its captures.
            [first, ..]
                if first.starts_with("__ad")
                    && segs.iter().any(|s| s.ends_with("Cell") || s.starts_with("cell_")) =>
            {
                unsupported(c, crate::nested::CLOSURE_ARGUMENT)
            }
            // A protocol function of the matrix product that whole-array expressions
            // call (`array_exprs.rs`): a call, as any callee's.
            ["__ad", "arrays", "matmul_add", last] if protocol_kind(last).is_some() => Ok(None),
            [first, ..] if first.starts_with("__ad") => {
                unsupported(c, "differentiating this part of a derivative companion again")
            }
            [.., last] if last.starts_with("__ad_") && protocol_kind(last).is_none() => {
                unsupported(c, "differentiating this part of a derivative companion again")
            }
            _ => Ok(None),
        }
    }

    /// A call; `effect_only` when its value is not used (see [`Call::effect_only`]).
    fn lower_call(
        &mut self,
        callee: Callee,
        args: Vec<Arg>,
        effect_only: bool,
        span: Span,
    ) -> Result<Val> {
        // Two `&mut` parts of one buffer (the halves of `split_at_mut`) in one call: the
        // derivative code would borrow the buffer and its shadow mutably twice. The parts
        // are disjoint (Rust lends two `&mut` parts of one buffer no other way), so each
        // part after the first goes through a copy, written back after the call.
        let mut args = args;
        let mut copied_back = Vec::new();
        let mut lent: Vec<Ident> = Vec::new();
        for a in &mut args {
            let Arg::Ref(p, true) = a else { continue };
            if !lent.contains(&p.base) {
                lent.push(p.base.clone());
                continue;
            }
            let part = p.clone();
            let copy = self.fresh("part", span);
            self.kinds.insert(copy.to_string(), VarKind::Buffer);
            self.emit_owned(&copy, true, Op::CloneOf(part.clone(), CopyKind::ToVec));
            *p = Place::local(copy.clone());
            copied_back.push((part, copy));
        }
        // `rescale(data, data.len() / 2)`: Rust lends `data` only once the other arguments
        // are computed (a two-phase borrow), which the derivative code's explicit
        // `&mut *data` is not. A constant argument that reads a lent buffer is computed
        // before the call.
        for a in &mut args {
            let Arg::Val(Operand::Lit(toks)) = a else {
                continue;
            };
            let mut reads_lent = false;
            walk_idents(toks, &mut |id| reads_lent |= lent.contains(id));
            if reads_lent {
                let toks = toks.clone();
                *a = Arg::Val(self.let_op(Op::Inactive(toks), span));
            }
        }
        let var = self.temp(span);
        self.emit(Stmt::Let {
            var: var.clone(),
            mutable: false,
            op: Op::Call(Call {
                callee,
                args,
                effect_only,
            }),
        });
        for (part, copy) in copied_back {
            self.emit(Stmt::CopyFrom {
                dst: part,
                src: Place::local(copy),
                mode: CopyMode::Elements,
            });
        }
        Ok(Val::Op(Operand::Var(var)))
    }

    // ---------------------------------------------------------------- rendering

    fn mentions_locals(&self, e: &Expr) -> bool {
        let toks = e.to_token_stream();
        let mut found = false;
        walk_idents(&toks, &mut |id| {
            if self.lookup(&id.to_string()).is_some() {
                found = true;
            }
        });
        found
    }

    /// Whether `p` is a whole parameter of rows (`work: &mut [[f64; 2]]`), which is saved
    /// and put back as a buffer of arrays, not as a struct.
    fn is_rows_param(&self, p: &Place) -> bool {
        p.is_whole() && self.row_params.contains(&p.base.to_string())
    }

    /// Whether the name `id` is bound to a vector or array of rows: one built in the
    /// function, or a parameter of rows.
    fn names_rows(&self, id: &Ident) -> bool {
        matches!(self.lookup(&id.to_string()), Some(Binding::Var(v))
            if self.matrix_vars.contains(&v.to_string())
                || self.row_params.contains(&v.to_string()))
    }

    /// Whether `e` is, in a companion lowered again, a zero shadow or a copy of a vector
    /// of rows (`__ad::zero_like(&m)`, `__ad::copy_of(&m)`): rows as well.
    fn is_copy_of_rows(&self, e: &Expr) -> bool {
        let Expr::Call(c) = strip(e) else {
            return false;
        };
        let Expr::Path(p) = &*c.func else {
            return false;
        };
        self.companion
            && c.args.len() == 1
            && matches!(path_names(&p.path).as_slice(), [a, b] if a == "__ad" && (b == "zero_like" || b == "copy_of"))
            && matches!(strip(strip_ref(&c.args[0])), Expr::Path(a)
                if a.path.get_ident().is_some_and(|id| self.names_rows(id)))
    }

    /// Whether the method call `m` starts from a parameter holding data without
    /// derivatives (`ks.get(1).copied().unwrap()`, `ks.iter().max()` of `ks: &[usize]`; not
    /// a struct or a generic type, whose methods may have rules) and names no other local
    /// that is not a constant.
    fn is_constant_method_chain(&self, m: &syn::ExprMethodCall) -> bool {
        let mut root = &*m.receiver;
        loop {
            root = match strip(root) {
                Expr::MethodCall(r) => &r.receiver,
                Expr::Field(f) => &f.base,
                Expr::Index(i) => &i.expr,
                Expr::Reference(r) => &r.expr,
                _ => break,
            };
        }
        let Expr::Path(p) = strip(root) else {
            return false;
        };
        if !p
            .path
            .get_ident()
            .is_some_and(|id| self.is_inert_param(id) && self.data_params.contains(&id.to_string()))
        {
            return false;
        }
        self.names_only_constants(&m.to_token_stream())
    }

    /// Whether every local that `tokens` names holds a constant (names that are not
    /// locals, a closure's own parameters among them, are not looked at), or is only
    /// asked for its shape (`x.len()`).
    fn names_only_constants(&self, tokens: &TokenStream) -> bool {
        let mut constant = true;
        walk_value_idents(tokens, &mut |id| match self.lookup(&id.to_string()) {
            Some(Binding::Var(v)) => constant &= self.holds_constant(v),
            Some(_) => constant = false,
            None => {}
        });
        constant
    }

    /// An expression with no derivative, as tokens with locals renamed.
    fn render(&self, e: &Expr) -> TokenStream {
        let mut e = e.clone();
        let mut r = Renamer {
            scopes: &self.scopes,
            found_references: Some(&self.found_references),
            shadowed: vec![],
        };
        r.visit_expr_mut(&mut e);
        e.to_token_stream()
    }

    fn render_macro(&self, mac: &syn::Macro) -> TokenStream {
        let mut m = mac.clone();
        let name = mac.path.segments.last().map(|s| s.ident.to_string());
        m.tokens = self.pass_captures(name.as_deref(), self.rename_tokens(&m.tokens));
        m.to_token_stream()
    }

    /// The tokens of a macro call named `name` (and of the macro calls inside them), with
    /// each name that a format string captures (`println!("{s:.3}")`) passed as a named
    /// argument too (`s = __ad4_s`): locals are renamed, and the string keeps the name.
    fn pass_captures(&self, name: Option<&str>, tokens: TokenStream) -> TokenStream {
        let tts: Vec<TokenTree> = tokens.into_iter().collect();
        let mut out = TokenStream::new();
        for (i, tt) in tts.iter().enumerate() {
            match tt {
                TokenTree::Group(g) => {
                    // `format!(..)` inside: its own captures; any other group: searched.
                    let before = i.checked_sub(2).map(|k| (&tts[k], &tts[k + 1]));
                    let inner_name = match before {
                        Some((TokenTree::Ident(id), TokenTree::Punct(p))) if p.as_char() == '!' => {
                            Some(id.to_string())
                        }
                        _ => None,
                    };
                    let stream = self.pass_captures(inner_name.as_deref(), g.stream());
                    let mut ng = proc_macro2::Group::new(g.delimiter(), stream);
                    ng.set_span(g.span());
                    out.extend(std::iter::once(TokenTree::Group(ng)));
                }
                tt => out.extend(std::iter::once(tt.clone())),
            }
        }
        let mut ends_with_comma =
            matches!(tts.last(), Some(TokenTree::Punct(p)) if p.as_char() == ',');
        for id in inline_format_args(name, &tts) {
            if let Some(b) = lookup_in(&self.scopes, &id.to_string()) {
                let v = binding_tokens(b, id.span());
                if !ends_with_comma {
                    out.extend(quote!(,));
                }
                out.extend(quote!(#id = #v));
                ends_with_comma = false;
            }
        }
        out
    }

    fn rename_tokens(&self, ts: &TokenStream) -> TokenStream {
        rename_tokens_in(&self.scopes, ts)
    }
}

/// The names the format string of a formatting macro named `name`, whose tokens are
/// `tokens`, captures implicitly (`{s}`, `{s:.3}`, `{x:>width$}`), leaving out those
/// passed as named arguments (`s = ..`).
fn inline_format_args(name: Option<&str>, tokens: &[TokenTree]) -> Vec<Ident> {
    let formats = matches!(
        name,
        Some(
            "print"
                | "println"
                | "eprint"
                | "eprintln"
                | "format"
                | "format_args"
                | "write"
                | "writeln"
                | "panic"
                | "assert"
                | "assert_eq"
                | "assert_ne"
                | "debug_assert"
                | "debug_assert_eq"
                | "debug_assert_ne"
                | "unreachable"
                | "todo"
                | "unimplemented"
        )
    );
    if !formats {
        return vec![];
    }
    let mut explicit = HashSet::default();
    for w in tokens.windows(3) {
        if let [TokenTree::Ident(id), TokenTree::Punct(eq), next] = w
            && eq.as_char() == '='
            && !matches!(next, TokenTree::Punct(p) if p.as_char() == '=')
        {
            explicit.insert(id.to_string());
        }
    }
    let Some((text, span)) = tokens.iter().find_map(|t| match t {
        TokenTree::Literal(l) => syn::parse2::<syn::LitStr>(quote!(#l))
            .ok()
            .map(|s| (s.value(), l.span())),
        _ => None,
    }) else {
        return vec![];
    };
    let mut names: Vec<String> = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '{' {
            continue;
        }
        if chars.peek() == Some(&'{') {
            chars.next();
            continue;
        }
        let mut inner = String::new();
        for c in chars.by_ref() {
            if c == '}' {
                break;
            }
            inner.push(c);
        }
        let (arg, spec) = inner.split_once(':').unwrap_or((&inner, ""));
        names.push(arg.trim().to_string());
        // `width$` and `.prec$` in the spec name arguments too.
        let mut word = String::new();
        for c in spec.chars() {
            if c.is_alphanumeric() || c == '_' {
                word.push(c);
            } else {
                if c == '$' {
                    names.push(std::mem::take(&mut word));
                }
                word.clear();
            }
        }
    }
    let mut out: Vec<Ident> = Vec::new();
    for n in names {
        let is_ident = n
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && n.chars().all(|c| c.is_alphanumeric() || c == '_');
        if is_ident && !explicit.contains(&n) && !out.iter().any(|o| o == &n) {
            out.push(Ident::new(&n, span));
        }
    }
    out
}

/// `ts` with the locals that `scopes` bind renamed.
fn rename_tokens_in(scopes: &[HashMap<String, Binding>], ts: &TokenStream) -> TokenStream {
    let mut out = TokenStream::new();
    for tt in ts.clone() {
        match tt {
            TokenTree::Ident(id) => match lookup_in(scopes, &id.to_string()) {
                Some(b) => out.extend(binding_tokens(b, id.span())),
                None => out.extend(std::iter::once(TokenTree::Ident(id))),
            },
            TokenTree::Group(g) => {
                let inner = rename_tokens_in(scopes, &g.stream());
                let mut ng = proc_macro2::Group::new(g.delimiter(), inner);
                ng.set_span(g.span());
                out.extend(std::iter::once(TokenTree::Group(ng)));
            }
            other => out.extend(std::iter::once(other)),
        }
    }
    out
}

fn lookup_in<'a>(scopes: &'a [HashMap<String, Binding>], name: &str) -> Option<&'a Binding> {
    scopes.iter().rev().find_map(|s| s.get(name))
}

enum Branch {
    Block(syn::Block),
    Expr(Expr),
}

impl Branch {
    /// Whether the branch never finishes with a value: it ends in `return`, `break`,
    /// `continue` or a panic.
    fn diverges(&self) -> bool {
        match self {
            Branch::Block(b) => block_diverges(b),
            Branch::Expr(e) => expr_diverges(e),
        }
    }
}

fn block_diverges(b: &syn::Block) -> bool {
    match b.stmts.last() {
        Some(syn::Stmt::Expr(e, _)) => expr_diverges(e),
        Some(syn::Stmt::Macro(m)) => is_panic_macro(&m.mac),
        _ => false,
    }
}

fn expr_diverges(e: &Expr) -> bool {
    match strip(e) {
        Expr::Return(_) | Expr::Break(_) | Expr::Continue(_) => true,
        Expr::Macro(m) => is_panic_macro(&m.mac),
        Expr::Block(b) if b.label.is_none() => block_diverges(&b.block),
        Expr::If(i) => {
            block_diverges(&i.then_branch)
                && i.else_branch
                    .as_ref()
                    .is_some_and(|(_, e)| expr_diverges(e))
        }
        _ => false,
    }
}

fn is_panic_macro(m: &syn::Macro) -> bool {
    m.path
        .segments
        .last()
        .is_some_and(|s| matches!(&*s.ident.to_string(), "panic" | "unreachable"))
}

/// The names of a path's segments, without generic arguments.
pub(crate) fn path_names(p: &syn::Path) -> Vec<String> {
    p.segments.iter().map(|s| s.ident.to_string()).collect()
}

/// The identifiers indexed twice in `t` (`hs[i][j]`, `&mut hs[i][..]`).
fn indexed_twice(t: &TokenStream, by_position: bool) -> HashSet<String> {
    let mut out = HashSet::default();
    let tokens: Vec<TokenTree> = t.clone().into_iter().collect();
    for (i, tt) in tokens.iter().enumerate() {
        match tt {
            TokenTree::Group(g) => out.extend(indexed_twice(&g.stream(), by_position)),
            TokenTree::Ident(id) => {
                let bracket = |k: usize| {
                    matches!(tokens.get(k), Some(TokenTree::Group(g))
                        if g.delimiter() == proc_macro2::Delimiter::Bracket)
                };
                // (`x[a..b][k]` is indexed twice, but by a range first.)
                let ranged = || {
                    matches!(tokens.get(i + 1), Some(TokenTree::Group(g))
                        if g.to_string().contains(".."))
                };
                if bracket(i + 1) && bracket(i + 2) && !(by_position && ranged()) {
                    out.insert(id.to_string());
                }
            }
            _ => {}
        }
    }
    out
}

/// A path into the standard library (`std::thread::sleep`, `core::mem::drop`) or to one
/// of its prelude functions (`drop`).
fn is_std_path(p: &syn::Path) -> bool {
    let names = path_names(p);
    matches!(
        names.first().map(String::as_str),
        Some("std" | "core" | "alloc")
    ) || names == ["drop"]
}

/// `::core::clone::Clone::clone(..)`, `::core::iter::Iterator::rev(..)` and
/// `__ad::rev_prefix(..)`: iterators of loop indices in generated reverse sweeps.
fn is_index_iterator_call(c: &syn::ExprCall) -> bool {
    let Expr::Path(p) = strip(&c.func) else {
        return false;
    };
    let names = path_names(&p.path);
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    matches!(
        names.as_slice(),
        ["core", "clone", "Clone", "clone"]
            | ["core", "iter", "Iterator", "rev"]
            | ["__ad", "rev_prefix"]
    )
}

/// `use ::autodiff_core::__private as __ad;`, the import of generated code.
fn is_runtime_import(u: &syn::ItemUse) -> bool {
    let t = &u.tree;
    u.leading_colon.is_some()
        && quote!(#t).to_string() == quote!(autodiff_core::__private as __ad).to_string()
}

/// A constant bound to a typed pattern keeps its type (`let t: f64 = 0.5;`), so that
/// methods called on it are not ambiguous.
fn typed_constant(v: Val, ty: &syn::Type) -> Val {
    match v {
        Val::Op(Operand::Lit(t)) => Val::Op(Operand::Lit(quote!({ let __ad_v: #ty = #t; __ad_v }))),
        v => v,
    }
}

/// The elements of a buffer of `f32` or `f64` bound to a typed pattern keep that type
/// (`let b: Vec<f64> = vec![0.5; 3];`, `let v: Vec<f64> = Vec::new();`,
/// `let m: Vec<Vec<f64>> = vec![vec![0.5; 2]; 2];`), so that methods called on them are
/// not ambiguous.
fn typed_elements(op: Op, ty: &syn::Type) -> Op {
    if let Op::NewVec(t) = op {
        return Op::NewVec(typed_new_vec(t, ty));
    }
    let Some(elem) = crate::signature::float_elem(ty, &HashSet::default()) else {
        return op;
    };
    let typed = |o: Operand| match o {
        Operand::Lit(t) => Operand::Lit(quote!(((#t) as #elem))),
        o => o,
    };
    match op {
        Op::VecRepeat(o, n) => Op::VecRepeat(typed(o), n),
        Op::ArrRepeat(o, n) => Op::ArrRepeat(typed(o), n),
        Op::ArrLit(ops, is_vec) => Op::ArrLit(ops.into_iter().map(typed).collect(), is_vec),
        op => op,
    }
}

/// `Vec::new()` or `Vec::with_capacity(n)` as `Vec::<f64>::new()` (`Vec::<[f64; 2]>::new()`),
/// and a matrix of a constant with its fill cast, for a binding whose type `ty` has `f32`
/// or `f64` inside.
fn typed_new_vec(t: TokenStream, ty: &syn::Type) -> TokenStream {
    let Ok(mut e) = syn::parse2::<Expr>(t.clone()) else {
        return t;
    };
    let typed = match &mut e {
        Expr::Call(c) => match (&mut *c.func, vec_of_floats_elem(ty)) {
            (Expr::Path(p), Some(elem))
                if p.path.segments.len() == 2 && p.path.segments[0].ident == "Vec" =>
            {
                p.path.segments[0].arguments =
                    syn::PathArguments::AngleBracketed(syn::parse_quote!(::<#elem>));
                true
            }
            _ => false,
        },
        e => innermost_float(ty).is_some_and(|elem| type_constant_fill(e, &elem)),
    };
    if typed { quote!(#e) } else { t }
}

/// The element type of `Vec<T>` where `T` holds `f32` or `f64` (`f64`, `[f64; 2]`,
/// `Vec<f32>`).
fn vec_of_floats_elem(ty: &syn::Type) -> Option<syn::Type> {
    match ty {
        syn::Type::Path(tp) => crate::signature::vec_elem(&tp.path)
            .filter(|e| innermost_float(e).is_some())
            .cloned(),
        syn::Type::Paren(p) => vec_of_floats_elem(&p.elem),
        _ => None,
    }
}

/// `f32` or `f64` under any number of `Vec<..>` and `[..; N]`.
fn innermost_float(ty: &syn::Type) -> Option<syn::Type> {
    let floats = HashSet::default();
    match ty {
        t if crate::signature::is_float_type(t, &floats) => Some(t.clone()),
        syn::Type::Array(a) => innermost_float(&a.elem),
        syn::Type::Paren(p) => innermost_float(&p.elem),
        syn::Type::Path(tp) => crate::signature::vec_elem(&tp.path).and_then(innermost_float),
        _ => None,
    }
}

/// Casts the fill of a matrix of a constant (`vec![vec![0.5; m]; n]`, `[[0.25; 2]; 2]`)
/// to `elem`; false when `e` is not such a matrix.
fn type_constant_fill(e: &mut Expr, elem: &syn::Type) -> bool {
    // The fill of one level: another level, or the constant to cast.
    let fill = |f: &mut Expr| match f {
        Expr::Repeat(_) | Expr::Macro(_) | Expr::Array(_) => type_constant_fill(f, elem),
        f => {
            *f = syn::parse_quote!((#f) as #elem);
            true
        }
    };
    match e {
        Expr::Repeat(r) => fill(&mut r.expr),
        Expr::Macro(m) if is_vec_macro(&m.mac) => {
            let Ok((mut inner, n)) = m.mac.parse_body_with(parse_repeat) else {
                return false;
            };
            let typed = fill(&mut inner);
            if typed {
                m.mac.tokens = quote!(#inner; #n);
            }
            typed
        }
        _ => false,
    }
}

/// The names whose named members `body` reads or writes (`c.x`, `c.x *= 2.0`), and those
/// it indexes (`h[i]`, `h[i][j]`), left out those the function also binds otherwise (a
/// parameter, a second `let`, a pattern), which could be a float of the same name; and
/// the members it indexes (`s.w` of `s.w[i]`), as text.
fn field_and_index_owners(
    sig: &SigInfo,
    body: &syn::Block,
) -> (HashSet<String>, HashSet<String>, HashSet<String>) {
    #[derive(Default)]
    struct Owners {
        fields: HashSet<String>,
        indexed: HashSet<String>,
        members: HashSet<String>,
        bound: HashMap<String, usize>,
        /// Names whose methods are the user's (`acc.len2()`), not a float's, a buffer's
        /// or an iterator's.
        user_receivers: HashSet<String>,
        /// Names assigned whole what a call returned (`acc = V2::new(..)`).
        assigned_calls: HashSet<String>,
    }
    fn path_name(e: &Expr) -> Option<String> {
        match strip(e) {
            Expr::Path(p) => p.path.get_ident().map(|id| id.to_string()),
            _ => None,
        }
    }
    impl<'a> syn::visit::Visit<'a> for Owners {
        fn visit_expr_field(&mut self, f: &'a syn::ExprField) {
            if let (syn::Member::Named(_), Some(name)) = (&f.member, path_name(&f.base)) {
                self.fields.insert(name);
            }
            syn::visit::visit_expr_field(self, f);
        }
        fn visit_expr_index(&mut self, e: &'a syn::ExprIndex) {
            if let Some(name) = path_name(&e.expr) {
                self.indexed.insert(name);
            }
            if let Expr::Field(f) = strip(&e.expr)
                && let (Some(base), syn::Member::Named(m)) = (path_name(&f.base), &f.member)
            {
                self.members.insert(format!("{base}.{m}"));
            }
            syn::visit::visit_expr_index(self, e);
        }
        fn visit_pat_ident(&mut self, p: &'a syn::PatIdent) {
            *self.bound.entry(p.ident.to_string()).or_default() += 1;
            syn::visit::visit_pat_ident(self, p);
        }
        // `acc = acc.add(&v);`: `acc` holds a struct, as when its members are read.
        fn visit_expr_assign(&mut self, a: &'a syn::ExprAssign) {
            if let Some(name) = path_name(&a.left) {
                if is_struct_like_value(&a.right, &name) {
                    self.fields.insert(name.clone());
                }
                if matches!(strip(&a.right), Expr::Call(_) | Expr::MethodCall(_)) {
                    self.assigned_calls.insert(name);
                }
            }
            syn::visit::visit_expr_assign(self, a);
        }
        fn visit_expr_method_call(&mut self, m: &'a syn::ExprMethodCall) {
            let method = m.method.to_string();
            if let Some(name) = path_name(&m.receiver) {
                if !is_std_method_name(&method) && !is_buffer_method_name(&method) {
                    self.user_receivers.insert(name);
                } else if matches!(
                    method.as_str(),
                    "iter_mut" | "fill" | "copy_from_slice" | "swap" | "chunks_mut"
                ) {
                    // Written element by element (`for v in h.iter_mut()`), as `h[i] = ..`
                    // writes it.
                    self.indexed.insert(name);
                }
            }
            syn::visit::visit_expr_method_call(self, m);
        }
    }
    let mut v = Owners::default();
    syn::visit::Visit::visit_block(&mut v, body);
    let params: HashSet<String> = sig.params.iter().map(|p| p.name.to_string()).collect();
    let Owners {
        mut fields,
        indexed,
        members,
        bound,
        user_receivers,
        assigned_calls,
    } = v;
    // `acc = V2::new(..)` of a name whose methods are the user's (`acc.len2()`): a
    // struct, as when its members are read.
    fields.extend(user_receivers.intersection(&assigned_calls).cloned());
    let own = |names: HashSet<String>| -> HashSet<String> {
        names
            .into_iter()
            .filter(|n| !params.contains(n) && bound.get(n).copied().unwrap_or(0) <= 1)
            .collect()
    };
    (own(fields), own(indexed), members)
}

/// What a path through an `if` or `match` value ends with.
enum ArrayTail {
    /// An array literal of this length.
    Literal(usize),
    /// Another value (a local array, a call's).
    Other,
    /// Nothing: `return`, `break`, `continue` or a panic.
    Diverges,
}

/// The ends of every path through `e` (an `if` or a `match`, nested in blocks), or
/// `None` where a path ends without a value.
fn array_tails(e: &Expr, out: &mut Vec<ArrayTail>) -> Option<()> {
    match strip(e) {
        Expr::Array(a) if !a.elems.is_empty() => out.push(ArrayTail::Literal(a.elems.len())),
        Expr::Block(b) => block_array_tails(&b.block, out)?,
        Expr::If(i) => {
            let (_, els) = i.else_branch.as_ref()?;
            block_array_tails(&i.then_branch, out)?;
            array_tails(els, out)?;
        }
        Expr::Match(m) => {
            for arm in &m.arms {
                array_tails(&arm.body, out)?;
            }
        }
        Expr::Return(_) | Expr::Break(_) | Expr::Continue(_) => out.push(ArrayTail::Diverges),
        Expr::Macro(m) if is_diverging_macro(&m.mac) => out.push(ArrayTail::Diverges),
        _ => out.push(ArrayTail::Other),
    }
    Some(())
}

fn block_array_tails(b: &syn::Block, out: &mut Vec<ArrayTail>) -> Option<()> {
    match b.stmts.last()? {
        syn::Stmt::Expr(e, None) => array_tails(e, out),
        // (`return x;` as the branch's last statement.)
        syn::Stmt::Expr(e @ (Expr::Return(_) | Expr::Break(_) | Expr::Continue(_)), Some(_)) => {
            array_tails(e, out)
        }
        syn::Stmt::Macro(m) if is_diverging_macro(&m.mac) => {
            out.push(ArrayTail::Diverges);
            Some(())
        }
        _ => None,
    }
}

fn is_diverging_macro(m: &syn::Macro) -> bool {
    m.path
        .get_ident()
        .is_some_and(|id| matches!(id.to_string().as_str(), "panic" | "unreachable" | "todo"))
}

/// The length of the array that the `if` or `match` `e` chooses: every path ends with an
/// array literal of that length, another value of the same type, or nothing; the length
/// comes from a literal, else from the written type `hint` (`let r: [f64; 2] = ..`).
fn array_choice_len(e: &Expr, hint: Option<&syn::Type>) -> Option<usize> {
    let mut tails = Vec::new();
    array_tails(e, &mut tails)?;
    let mut n = None;
    for t in &tails {
        if let ArrayTail::Literal(k) = t {
            if n.is_some_and(|n| n != *k) {
                return None;
            }
            n = Some(*k);
        }
    }
    let from_hint = || match hint? {
        syn::Type::Array(a) => match &a.len {
            Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(i),
                ..
            }) => i.base10_parse().ok(),
            _ => None,
        },
        _ => None,
    };
    let n = n.or_else(from_hint)?;
    let chooses = tails.iter().any(|t| !matches!(t, ArrayTail::Diverges));
    (n > 0 && chooses).then_some(n)
}

/// `e` (see [`array_choice_len`], `n` elements) with each array it ends with written as
/// a tuple, bound and put back into an array: `{ let (a0, a1) = if c { (a, b) } else {
/// (d, e) }; [a0, a1] }`; another value is bound and its elements taken (`{ let a = p;
/// (a[0], a[1]) }`). (A one-element array is chosen element by element: `[if c { a }
/// else { d }]`.)
fn array_choice(e: &Expr, n: usize) -> Expr {
    fn retail(e: &mut Expr, n: usize) {
        match e {
            Expr::Paren(p) => retail(&mut p.expr, n),
            Expr::Group(g) => retail(&mut g.expr, n),
            Expr::Array(a) => {
                let elems = a.elems.iter();
                *e = if n == 1 {
                    a.elems[0].clone()
                } else {
                    syn::parse_quote_spanned!(a.span()=> (#(#elems),*))
                };
            }
            Expr::Block(b) => retail_block(&mut b.block, n),
            Expr::If(i) => {
                retail_block(&mut i.then_branch, n);
                if let Some((_, els)) = &mut i.else_branch {
                    retail(els, n);
                }
            }
            Expr::Match(m) => {
                for arm in &mut m.arms {
                    retail(&mut arm.body, n);
                }
            }
            Expr::Return(_) | Expr::Break(_) | Expr::Continue(_) | Expr::Macro(_) => {}
            other => {
                let span = other.span();
                let idx = 0..n;
                *other = if n == 1 {
                    syn::parse_quote_spanned!(span=> { let __ad_chosen_array = #other; __ad_chosen_array[0] })
                } else {
                    syn::parse_quote_spanned!(span=> {
                        let __ad_chosen_array = #other;
                        (#(__ad_chosen_array[#idx]),*)
                    })
                };
            }
        }
    }
    fn retail_block(b: &mut syn::Block, n: usize) {
        if let Some(syn::Stmt::Expr(e, None)) = b.stmts.last_mut() {
            retail(e, n);
        }
    }
    let mut chosen = e.clone();
    retail(&mut chosen, n);
    if n == 1 {
        return syn::parse_quote_spanned!(e.span()=> [#chosen]);
    }
    let names: Vec<Ident> = (0..n).map(|i| format_ident!("__ad_chosen{}", i)).collect();
    syn::parse_quote_spanned!(e.span()=> {
        let (#(#names),*) = #chosen;
        [#(#names),*]
    })
}

/// Whether `e`, assigned to `name`, is a struct value, as the assignment can tell: a
/// literal, or a user method's result (a float's methods are builtins) on `name` itself,
/// directly or through a chain (`acc = acc.add(&v)`, `p = p.add(&q).scale(c)`; a float
/// has no user methods; not a copy, `h.to_vec()`, nor the end of an iterator chain,
/// `h.iter().map(..).collect()`, which give vectors).
fn is_struct_like_value(e: &Expr, name: &str) -> bool {
    match strip(e) {
        Expr::Struct(_) => true,
        Expr::MethodCall(m) => {
            let method = m.method.to_string();
            let user = crate::builtins::math_arity(&method).is_none()
                && !crate::builtins::is_inert_method(&method)
                && !matches!(method.as_str(), "clone" | "to_vec" | "to_owned" | "collect");
            user && match strip(&m.receiver) {
                Expr::Path(p) => p.path.is_ident(name),
                r @ Expr::MethodCall(_) => is_struct_like_value(r, name),
                _ => false,
            }
        }
        _ => false,
    }
}

/// Whether `e` is a path that names a unit variant of an enum (`Act::Relu`): two words
/// in upper camel case (an associated constant's name has no lower-case letter).
fn is_unit_variant(e: &Expr) -> bool {
    let Expr::Path(p) = strip(e) else {
        return false;
    };
    p.qself.is_none()
        && p.path.leading_colon.is_none()
        && p.path.segments.len() == 2
        && p.path
            .segments
            .iter()
            .all(|s| s.arguments.is_none() && is_type_like_name(&s.ident.to_string()))
}

/// Whether `name` is written in upper camel case, as a type's or a variant's name is (a
/// constant's name has no lower-case letter), and is not `Self`.
fn is_type_like_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_uppercase())
        && name.contains(|c: char| c.is_ascii_lowercase())
        && name != "Self"
}

/// Whether `b` binds `t` to what a call returned.
fn binds_call_result(b: &Block, t: &Ident) -> bool {
    b.iter().any(|s| match s {
        Stmt::Let { var, op, .. } if var == t => match op {
            Op::Call(_) => true,
            // A call with constant arguments, kept as written.
            Op::Inactive(toks) => match syn::parse2::<Expr>(toks.clone()) {
                Ok(Expr::Call(_) | Expr::MethodCall(_)) => true,
                // (A unit variant, `Act::Relu`, is such a value too.)
                Ok(e) => is_unit_variant(&e),
                Err(_) => false,
            },
            _ => false,
        },
        _ => false,
    })
}

/// The members of the struct `v` names, as places (`v.x`, `v.y`), in the order of
/// `members`.
fn struct_member_places(v: &Val, members: &[syn::Member]) -> Val {
    let Val::Place(p, m) = v else {
        return v.clone();
    };
    if let [member] = members {
        let mut q = p.clone();
        q.proj.push(Proj::Field(member.clone()));
        return Val::Place(q, *m);
    }
    Val::Tuple(
        members
            .iter()
            .map(|member| {
                let mut q = p.clone();
                q.proj.push(Proj::Field(member.clone()));
                Val::Place(q, *m)
            })
            .collect(),
    )
}

fn guard(cond: TokenStream, then: Block) -> Stmt {
    Stmt::If {
        cond,
        then,
        els: vec![],
        outs: vec![],
        then_vals: vec![],
        else_vals: vec![],
    }
}

fn val_len(v: &Val) -> usize {
    match v {
        Val::Tuple(items) => items.len(),
        _ => 1,
    }
}

fn binding_tokens(b: &Binding, span: Span) -> TokenStream {
    match b {
        Binding::Var(v) => {
            // (The name itself, re-spanned: a raw identifier, `r#in`, stays one.)
            let mut v = v.clone();
            v.set_span(span);
            quote!(#v)
        }
        Binding::Alias(p, m) => {
            let p = p.primal();
            if *m {
                quote_spanned!(span=> (&mut #p))
            } else {
                quote_spanned!(span=> (&#p))
            }
        }
        Binding::Tuple(items) => {
            let items: Vec<TokenStream> = items.iter().map(val_tokens).collect();
            quote_spanned!(span=> (#(#items,)*))
        }
        Binding::Member(p) => {
            let p = p.primal();
            quote_spanned!(span=> (#p))
        }
        Binding::Cursor(c) => {
            let p = c.place().primal();
            quote_spanned!(span=> (&#p))
        }
        Binding::Closure(def) => closure_tokens(def, span),
        Binding::Iter(..) => {
            quote_spanned!(span=> compile_error!("an iterator bound with `let` cannot be used here"))
        }
    }
}

fn val_tokens(v: &Val) -> TokenStream {
    match v {
        Val::Op(o) => o.primal(),
        Val::Place(p, m) => {
            let p = p.primal();
            if *m { quote!((&mut #p)) } else { quote!((&#p)) }
        }
        Val::Tuple(items) => {
            let items: Vec<TokenStream> = items.iter().map(val_tokens).collect();
            quote!((#(#items,)*))
        }
    }
}

/// A local closure named where an expression is kept as written (a condition, the
/// argument of `no_grad`): the closure itself, its captures renamed as where it was
/// defined. It computes values only, so it needs none of the derivative code that its
/// calls elsewhere are inlined with.
fn closure_tokens(def: &ClosureDef, span: Span) -> TokenStream {
    let mut params = HashSet::default();
    for p in &def.params {
        collect_pat_idents(p, &mut params);
    }
    let mut body = def.body.clone();
    let mut r = Renamer {
        scopes: &def.scopes,
        found_references: None,
        shadowed: vec![params],
    };
    r.visit_expr_mut(&mut body);
    let params = &def.params;
    quote_spanned!(span=> (|#(#params),*| #body))
}

/// Visits the items of `vec![..]` and `ndarray`'s `array![..]` with a syntactic pass:
/// the lowering reads them as expressions, so the pass's forms must be written out
/// there too (other macros are kept as written, with their tokens).
fn visit_macro_items<V: VisitMut + ?Sized>(pass: &mut V, m: &mut syn::Macro) {
    let names = path_names(&m.path);
    if names.last().is_none_or(|n| n != "vec" && n != "array") {
        return;
    }
    let list = syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated;
    if let Ok(mut items) = m.parse_body_with(list) {
        for item in items.iter_mut() {
            pass.visit_expr_mut(item);
        }
        m.tokens = items.to_token_stream();
        return;
    }
    // `vec![v; n]`.
    let repeat = |input: syn::parse::ParseStream| {
        let v: Expr = input.parse()?;
        let semi: syn::Token![;] = input.parse()?;
        let n: Expr = input.parse()?;
        Ok((v, semi, n))
    };
    if let Ok((mut v, semi, n)) = m.parse_body_with(repeat) {
        pass.visit_expr_mut(&mut v);
        m.tokens = quote!(#v #semi #n);
    }
}

/// The parameters that carry no float (`mask: &[usize]`, an enum): code that reads
/// them is kept as written by the syntactic passes, as the lowering reads it as values
/// without derivatives.
fn never_differentiated(sig: &SigInfo) -> HashSet<String> {
    sig.params
        .iter()
        .filter(|p| matches!(p.shape, crate::signature::Shape::Other))
        .map(|p| p.name.to_string())
        .collect()
}

/// Whether `e` (a place, or a method chain on one) starts at one of `params`
/// (`mask.get(7)`, `idx[1..]`, `*cfg`).
fn reads_from(e: &Expr, params: &HashSet<String>) -> bool {
    let mut e = strip(e);
    loop {
        e = match e {
            Expr::MethodCall(m) => strip(&m.receiver),
            Expr::Field(f) => strip(&f.base),
            Expr::Index(i) => strip(&i.expr),
            Expr::Reference(r) => strip(&r.expr),
            Expr::Unary(u) => strip(&u.expr),
            Expr::Path(p) => {
                return p
                    .path
                    .get_ident()
                    .is_some_and(|i| params.contains(&i.to_string()));
            }
            _ => return false,
        };
    }
}

/// A function's own code with some forms of the language written as others that the
/// lowering reads, each by a syntactic pass in `lower/` (a companion's code, lowered
/// again, contains none of those forms).
fn written_for_lowering(body: &syn::Block, sig: &SigInfo) -> syn::Block {
    let mut body = write_out_repeated_rows(body);
    let never_differentiated = never_differentiated(sig);
    iterator_variables::inline_iterator_variables(&mut body);
    while_lets::loop_while_lets(&mut body);
    let params = sig.params.iter().map(|p| p.name.to_string()).collect();
    option_locals::split_option_locals(&mut body, &params);
    iterator_items::reduce_iterator_items(&mut body);
    scans::loop_scans(&mut body);
    prefix_adapters::count_prefixes(&mut body);
    slice_patterns::index_slice_patterns(&mut body, &never_differentiated);
    option_maps::bind_option_maps(&mut body, &never_differentiated);
    flattened::nest_flattened(&mut body, sig);
    chains::split_chains(&mut body);
    body
}

/// `body` with the rows of matrices written as repeats (`[[0.0; 2]; 2]`, `[[x[0]; 2],
/// [x[1]; 2]]`) written out element by element, as matrix literals are read: where the
/// lengths are integer literals (at most 64 elements in all) and the repeated value is a
/// literal or a place (`x[0]`, `p.a`), which reading again gives the same.
fn write_out_repeated_rows(body: &syn::Block) -> syn::Block {
    fn length(r: &syn::ExprRepeat) -> Option<usize> {
        match strip(&r.len) {
            Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(n),
                ..
            }) => n
                .base10_parse()
                .ok()
                .filter(|&n: &usize| (1..=64).contains(&n)),
            _ => None,
        }
    }
    fn plain(e: &Expr) -> bool {
        match strip(e) {
            Expr::Lit(_) | Expr::Path(_) => true,
            Expr::Unary(u) => matches!(u.op, syn::UnOp::Neg(_)) && plain(&u.expr),
            Expr::Index(i) => plain(&i.expr) && plain(&i.index),
            Expr::Field(f) => plain(&f.base),
            _ => false,
        }
    }
    /// `[v; n]` written out, where `v` is plain.
    fn row(e: &Expr) -> Option<Expr> {
        match strip(e) {
            Expr::Repeat(r) if plain(&r.expr) => {
                let n = length(r)?;
                let v = &r.expr;
                let items = (0..n).map(|_| v.clone());
                Some(syn::parse_quote_spanned!(r.span()=> [#(#items),*]))
            }
            _ => None,
        }
    }
    struct Rows;
    impl VisitMut for Rows {
        fn visit_expr_mut(&mut self, e: &mut Expr) {
            syn::visit_mut::visit_expr_mut(self, e);
            let written = match &*e {
                // `[[v; n]; m]`: m rows, each written out.
                Expr::Repeat(outer) => match (row(&outer.expr), length(outer)) {
                    (Some(r), Some(m)) if m * r_len(&r) <= 64 => {
                        let rows = (0..m).map(|_| r.clone());
                        Some(syn::parse_quote_spanned!(outer.span()=> [#(#rows),*]))
                    }
                    _ => None,
                },
                // `[[a; n], [b; n]]`: each row written out.
                Expr::Array(a) if a.elems.iter().any(|r| row(r).is_some()) => {
                    let rows = a.elems.iter().map(|r| row(r).unwrap_or_else(|| r.clone()));
                    Some(syn::parse_quote_spanned!(a.span()=> [#(#rows),*]))
                }
                _ => None,
            };
            if let Some(w) = written {
                *e = w;
            }
        }
    }
    fn r_len(e: &Expr) -> usize {
        match e {
            Expr::Array(a) => a.elems.len(),
            _ => 1,
        }
    }
    let mut out = body.clone();
    Rows.visit_block_mut(&mut out);
    out
}

/// Whether `name` is a method of the standard library's floats, integers, slices,
/// vectors or iterators that a condition may call (`len`, `abs`, `is_nan`, `iter`, `any`,
/// `unwrap`, ..), not a method of the user's.
fn is_std_method_name(name: &str) -> bool {
    math_arity(name).is_some()
        || is_inert_method(name)
        || is_search_method(name)
        || is_integer_method(name)
        || is_chain_adapter(name)
        || matches!(
            name,
            "iter_mut"
                | "into_iter"
                | "sum"
                | "product"
                | "fold"
                | "reduce"
                | "max_by"
                | "min_by"
                | "collect"
                | "unwrap"
                | "unwrap_or"
                | "expect"
                | "get"
                | "first"
                | "last"
                | "clone"
                | "to_vec"
                | "is_some"
                | "is_none"
                | "is_ok"
                | "is_err"
                | "to_string"
                | "as_slice"
        )
}

/// Whether the condition `e` is a let chain: `let` among the operands of its `&&`s.
fn has_let(e: &Expr) -> bool {
    match strip(e) {
        Expr::Let(_) => true,
        Expr::Binary(b) if matches!(b.op, syn::BinOp::And(_)) => {
            has_let(&b.left) || has_let(&b.right)
        }
        _ => false,
    }
}

/// The first `#[cfg(..)]` or `#[cfg_attr(..)]` attribute inside `body` (on a statement, an
/// expression, a match arm, a member of a struct literal, ..).
fn conditional_code(body: &syn::Block) -> Option<&syn::Attribute> {
    struct Finder<'a>(Option<&'a syn::Attribute>);
    impl<'a> syn::visit::Visit<'a> for Finder<'a> {
        fn visit_attribute(&mut self, a: &'a syn::Attribute) {
            if self.0.is_none() && (a.path().is_ident("cfg") || a.path().is_ident("cfg_attr")) {
                self.0 = Some(a);
            }
        }
    }
    let mut f = Finder(None);
    syn::visit::Visit::visit_block(&mut f, body);
    f.0
}

/// Whether `name` is a method of the standard library's vectors and slices (one that
/// moves or resizes elements, see [`is_std_buffer_method`], writes them, or splits the
/// buffer), not a method of the user's.
fn is_buffer_method_name(name: &str) -> bool {
    is_std_buffer_method(name)
        || matches!(
            name,
            "push"
                | "fill"
                | "copy_from_slice"
                | "clone_from_slice"
                | "split_at"
                | "split_at_mut"
                | "chunks_mut"
                | "chunks_exact_mut"
                | "as_mut_slice"
                | "as_ptr"
        )
}

/// Whether `e` changes a value where it is evaluated: an assignment, a compound
/// assignment or a `&mut` borrow (given to a call that may change it), outside closures
/// and `no_grad(..)`, whose effects carry no derivative by the user's choice.
fn has_effects(e: &Expr) -> bool {
    struct Finder(bool);
    impl<'a> syn::visit::Visit<'a> for Finder {
        fn visit_expr(&mut self, e: &'a Expr) {
            match e {
                Expr::Assign(_) => self.0 = true,
                Expr::Binary(b) if is_compound(&b.op) => self.0 = true,
                Expr::Reference(r) if r.mutability.is_some() => self.0 = true,
                Expr::Closure(_) => {}
                Expr::Call(c) if matches!(strip(&c.func), Expr::Path(p) if p.path.is_ident("no_grad")) =>
                    {}
                _ => syn::visit::visit_expr(self, e),
            }
        }
    }
    let mut f = Finder(false);
    syn::visit::Visit::visit_expr(&mut f, e);
    f.0
}

/// Renames locals inside an expression that is kept as written.
struct Renamer<'a> {
    scopes: &'a [HashMap<String, Binding>],
    /// The lowering's `found_references`, where known.
    found_references: Option<&'a HashSet<String>>,
    shadowed: Vec<HashSet<String>>,
}

impl Renamer<'_> {
    /// The local that `e` names where it holds the value of what the user's code holds
    /// a reference to (see `Lowerer::found_references`).
    fn found_reference(&self, e: &Expr) -> Option<Ident> {
        let Expr::Path(p) = strip(e) else { return None };
        let name = p.path.get_ident()?.to_string();
        if p.qself.is_some() || self.shadowed.iter().any(|s| s.contains(&name)) {
            return None;
        }
        match lookup_in(self.scopes, &name)? {
            Binding::Var(v) if self.found_references?.contains(&v.to_string()) => Some(v.clone()),
            _ => None,
        }
    }
}

impl VisitMut for Renamer<'_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        match e {
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => {
                match self.found_reference(&u.expr) {
                    Some(v) => {
                        let span = u.expr.span();
                        *u.expr = syn::parse_quote_spanned!(span=> (&#v));
                    }
                    None => self.visit_expr_mut(&mut u.expr),
                }
            }
            Expr::Path(p) if p.qself.is_none() => {
                if let Some(id) = p.path.get_ident() {
                    let name = id.to_string();
                    if self.shadowed.iter().any(|s| s.contains(&name)) {
                        return;
                    }
                    if let Some(b) = lookup_in(self.scopes, &name) {
                        let toks = binding_tokens(b, id.span());
                        *e = syn::parse2(toks).unwrap_or_else(|_| e.clone());
                    }
                }
            }
            Expr::Closure(c) => {
                let mut names = HashSet::default();
                for p in &c.inputs {
                    collect_pat_idents(p, &mut names);
                }
                self.shadowed.push(names);
                self.visit_expr_mut(&mut c.body);
                self.shadowed.pop();
            }
            // Names bound inside the expression (`{ let b = ..; b > 0.5 }`, `for`, `match`
            // and `if let` patterns) are its own where they are bound, not the function's
            // locals of the same name.
            Expr::ForLoop(l) => {
                self.visit_expr_mut(&mut l.expr);
                self.shadowed.push(names_bound_by(&l.pat));
                self.visit_block_mut(&mut l.body);
                self.shadowed.pop();
            }
            Expr::Match(m) => {
                self.visit_expr_mut(&mut m.expr);
                for arm in &mut m.arms {
                    self.shadowed.push(names_bound_by(&arm.pat));
                    if let Some((_, g)) = &mut arm.guard {
                        self.visit_expr_mut(g);
                    }
                    self.visit_expr_mut(&mut arm.body);
                    self.shadowed.pop();
                }
            }
            Expr::If(i) => {
                self.shadowed.push(HashSet::default());
                self.visit_condition(&mut i.cond);
                self.visit_block_mut(&mut i.then_branch);
                self.shadowed.pop();
                if let Some((_, e)) = &mut i.else_branch {
                    self.visit_expr_mut(e);
                }
            }
            Expr::While(w) => {
                self.shadowed.push(HashSet::default());
                self.visit_condition(&mut w.cond);
                self.visit_block_mut(&mut w.body);
                self.shadowed.pop();
            }
            Expr::Macro(m) => {
                m.mac.tokens = rename_tokens_in(self.scopes, &m.mac.tokens);
            }
            // The length of a mutable chunk (`c.len()` in `c[c.len() - 1]`): read through a
            // shared borrow, which the element's own borrow of the buffer allows.
            Expr::MethodCall(m)
                if matches!(m.method.to_string().as_str(), "len" | "is_empty")
                    && m.args.is_empty() =>
            {
                let alias = match strip(&m.receiver) {
                    Expr::Path(p) if p.qself.is_none() => p.path.get_ident().and_then(|id| {
                        let name = id.to_string();
                        if self.shadowed.iter().any(|s| s.contains(&name)) {
                            return None;
                        }
                        match lookup_in(self.scopes, &name) {
                            Some(Binding::Alias(p, true)) => Some((p.primal(), id.span())),
                            _ => None,
                        }
                    }),
                    _ => None,
                };
                match alias {
                    Some((place, span)) => {
                        *m.receiver = syn::parse_quote_spanned!(span=> (&#place));
                    }
                    None => syn::visit_mut::visit_expr_mut(self, e),
                }
            }
            _ => syn::visit_mut::visit_expr_mut(self, e),
        }
    }

    fn visit_block_mut(&mut self, b: &mut syn::Block) {
        self.shadowed.push(HashSet::default());
        for stmt in &mut b.stmts {
            match stmt {
                syn::Stmt::Local(l) => {
                    if let Some(init) = &mut l.init {
                        self.visit_expr_mut(&mut init.expr);
                        if let Some((_, els)) = &mut init.diverge {
                            self.visit_expr_mut(els);
                        }
                    }
                    // The names are the block's own from here on.
                    let names = names_bound_by(&l.pat);
                    if let Some(top) = self.shadowed.last_mut() {
                        top.extend(names);
                    }
                }
                stmt => self.visit_stmt_mut(stmt),
            }
        }
        self.shadowed.pop();
    }
}

impl Renamer<'_> {
    /// The condition of an `if` or a `while`: the names its `let`s bind are shadowed from
    /// there on (the rest of a `&&` chain, and the body, whose set the caller pushed).
    fn visit_condition(&mut self, cond: &mut Expr) {
        match cond {
            Expr::Let(l) => {
                self.visit_expr_mut(&mut l.expr);
                let names = names_bound_by(&l.pat);
                if let Some(top) = self.shadowed.last_mut() {
                    top.extend(names);
                }
            }
            Expr::Binary(b) if matches!(b.op, syn::BinOp::And(_)) => {
                self.visit_condition(&mut b.left);
                self.visit_condition(&mut b.right);
            }
            e => self.visit_expr_mut(e),
        }
    }
}

/// The names that the pattern `p` binds, at any depth (`Some((a, b))`, `P { x, .. }`,
/// `[first, rest @ ..]`).
fn names_bound_by(p: &Pat) -> HashSet<String> {
    let mut names = BoundNames::default();
    syn::visit::Visit::visit_pat(&mut names, p);
    names.0
}

/// Collects the names that the patterns of the code it visits bind (`let`s, closure
/// parameters, `for`, `match` and `if let` patterns), at any depth.
#[derive(Default)]
struct BoundNames(HashSet<String>);

impl<'v> syn::visit::Visit<'v> for BoundNames {
    fn visit_pat_ident(&mut self, p: &'v syn::PatIdent) {
        self.0.insert(p.ident.to_string());
        syn::visit::visit_pat_ident(self, p);
    }
}

fn collect_pat_idents(p: &Pat, out: &mut HashSet<String>) {
    match p {
        Pat::Ident(i) => {
            out.insert(i.ident.to_string());
        }
        Pat::Tuple(t) => t.elems.iter().for_each(|p| collect_pat_idents(p, out)),
        Pat::Reference(r) => collect_pat_idents(&r.pat, out),
        Pat::Type(t) => collect_pat_idents(&t.pat, out),
        Pat::Paren(p) => collect_pat_idents(&p.pat, out),
        _ => {}
    }
}

fn pat_binds(p: &Pat) -> bool {
    match p {
        Pat::Ident(i) => {
            // A lone capitalised identifier is a constant or unit variant, not a binding.
            let s = i.ident.to_string();
            !s.chars().next().is_some_and(|c| c.is_uppercase())
        }
        Pat::Tuple(t) => t.elems.iter().any(pat_binds),
        Pat::TupleStruct(t) => t.elems.iter().any(pat_binds),
        Pat::Struct(s) => s.fields.iter().any(|f| pat_binds(&f.pat)),
        Pat::Or(o) => o.cases.iter().any(pat_binds),
        Pat::Reference(r) => pat_binds(&r.pat),
        Pat::Paren(p) => pat_binds(&p.pat),
        Pat::Slice(s) => s.elems.iter().any(pat_binds),
        _ => false,
    }
}

/// `match &s { p => ::core::clone::Clone::clone(v), _ => ::core::unreachable!() }`: how
/// [`Lowerer::bind_pattern`] binds a variable of a pattern on a constant scrutinee.
fn is_constant_extraction(m: &syn::ExprMatch) -> bool {
    let [first, rest] = m.arms.as_slice() else {
        return false;
    };
    let clones = matches!(&*first.body, Expr::Call(c)
        if c.args.len() == 1
            && matches!(&*c.func, Expr::Path(p) if path_names(&p.path) == ["core", "clone", "Clone", "clone"]));
    let unreachable = matches!(&*rest.body, Expr::Macro(mac)
        if path_names(&mac.mac.path) == ["core", "unreachable"]);
    matches!(strip(&m.expr), Expr::Reference(_))
        && first.guard.is_none()
        && clones
        && matches!(rest.pat, Pat::Wild(_))
        && unreachable
}

/// `match &s { p if guard => true, _ => false }`: how [`Lowerer::lower_arms`] tests a
/// guarded pattern that binds variables of a constant scrutinee.
fn is_guard_test(m: &syn::ExprMatch) -> bool {
    let is_bool = |e: &Expr, b: bool| matches!(e, Expr::Lit(syn::ExprLit { lit: syn::Lit::Bool(l), .. }) if l.value == b);
    let [first, rest] = m.arms.as_slice() else {
        return false;
    };
    matches!(strip(&m.expr), Expr::Reference(_))
        && first.guard.is_some()
        && is_bool(&first.body, true)
        && matches!(rest.pat, Pat::Wild(_))
        && is_bool(&rest.body, false)
}

/// The variables a pattern binds, in order.
fn pattern_bindings(p: &Pat) -> Vec<Ident> {
    struct Names(Vec<Ident>);
    impl<'a> syn::visit::Visit<'a> for Names {
        fn visit_pat_ident(&mut self, i: &'a syn::PatIdent) {
            if pat_binds(&Pat::Ident(i.clone())) {
                self.0.push(i.ident.clone());
            }
            syn::visit::visit_pat_ident(self, i);
        }
    }
    let mut n = Names(Vec::new());
    syn::visit::Visit::visit_pat(&mut n, p);
    n.0
}

/// Whether `p` binds `v` with `mut`.
fn binds_mutably(p: &Pat, v: &Ident) -> bool {
    struct Find<'v>(&'v Ident, bool);
    impl<'a> syn::visit::Visit<'a> for Find<'_> {
        fn visit_pat_ident(&mut self, i: &'a syn::PatIdent) {
            if i.ident == *self.0 && i.mutability.is_some() {
                self.1 = true;
            }
            syn::visit::visit_pat_ident(self, i);
        }
    }
    let mut f = Find(v, false);
    syn::visit::Visit::visit_pat(&mut f, p);
    f.1
}

/// The pattern with its bindings' `mut` left out (a guard reads them through a reference).
fn without_mut(p: &Pat) -> Pat {
    struct Strip;
    impl syn::visit_mut::VisitMut for Strip {
        fn visit_pat_ident_mut(&mut self, i: &mut syn::PatIdent) {
            i.mutability = None;
            syn::visit_mut::visit_pat_ident_mut(self, i);
        }
    }
    let mut p = p.clone();
    syn::visit_mut::VisitMut::visit_pat_mut(&mut Strip, &mut p);
    p
}

/// The pattern with each binding but `keep` replaced by `_` (`x @ p` by `p`): without
/// `keep`, the arm's test.
fn without_bindings(p: &Pat, keep: Option<&Ident>) -> Pat {
    struct Wild<'k>(Option<&'k Ident>);
    impl syn::visit_mut::VisitMut for Wild<'_> {
        fn visit_pat_mut(&mut self, p: &mut Pat) {
            if let Pat::Ident(i) = p
                && pat_binds(&Pat::Ident(i.clone()))
            {
                if self.0 != Some(&i.ident) {
                    *p = match i.subpat.take() {
                        Some((_, sub)) => *sub,
                        None => syn::parse_quote!(_),
                    };
                } else {
                    // The kept binding is read out; the local it goes to is `mut` instead.
                    i.mutability = None;
                }
            }
            syn::visit_mut::visit_pat_mut(self, p);
        }
        fn visit_field_pat_mut(&mut self, f: &mut syn::FieldPat) {
            // `Soft { beta, .. }` becomes `Soft { beta: _, .. }`.
            let kept = matches!(&*f.pat, Pat::Ident(i) if self.0 == Some(&i.ident));
            if f.colon_token.is_none() && !kept {
                f.colon_token = Some(Default::default());
            }
            syn::visit_mut::visit_field_pat_mut(self, f);
        }
    }
    let mut p = p.clone();
    syn::visit_mut::VisitMut::visit_pat_mut(&mut Wild(keep), &mut p);
    p
}

/// Whether `body` may write the local `name`: assigns to it or into it, lends it mutably,
/// or calls a method on it other than one that only reads.
fn writes_local(body: &syn::Block, name: &Ident) -> bool {
    struct Finder<'a> {
        name: &'a Ident,
        found: bool,
    }
    impl Finder<'_> {
        fn rooted(&self, e: &Expr) -> bool {
            let mut e = strip(e);
            loop {
                e = match e {
                    Expr::Index(i) => strip(&i.expr),
                    Expr::Field(f) => strip(&f.base),
                    Expr::Unary(u) => strip(&u.expr),
                    Expr::Path(p) => return p.path.is_ident(self.name),
                    _ => return false,
                };
            }
        }
    }
    impl<'v> syn::visit::Visit<'v> for Finder<'_> {
        fn visit_expr(&mut self, e: &'v Expr) {
            self.found |= match e {
                Expr::Assign(a) => self.rooted(&a.left),
                Expr::Binary(b) => is_compound(&b.op) && self.rooted(&b.left),
                Expr::Reference(r) => r.mutability.is_some() && self.rooted(&r.expr),
                Expr::MethodCall(m) => {
                    self.rooted(&m.receiver)
                        && !matches!(
                            m.method.to_string().as_str(),
                            "len" | "is_empty" | "iter" | "get" | "first" | "last" | "contains"
                        )
                }
                _ => false,
            };
            syn::visit::visit_expr(self, e);
        }
    }
    let mut f = Finder { name, found: false };
    syn::visit::Visit::visit_block(&mut f, body);
    f.found
}

/// Calls `f` with each identifier of `ts` whose value is read: not one whose shape alone is
/// asked for (`x` of `x.len()`, `x.is_empty()`).
fn walk_value_idents(ts: &TokenStream, f: &mut impl FnMut(&Ident)) {
    let tts: Vec<TokenTree> = ts.clone().into_iter().collect();
    for (i, tt) in tts.iter().enumerate() {
        match tt {
            TokenTree::Ident(id) => {
                let shape_only = matches!(
                    (tts.get(i + 1), tts.get(i + 2), tts.get(i + 3)),
                    (
                        Some(TokenTree::Punct(p)),
                        Some(TokenTree::Ident(m)),
                        Some(TokenTree::Group(g)),
                    ) if p.as_char() == '.'
                        && matches!(m.to_string().as_str(), "len" | "is_empty")
                        && g.stream().is_empty()
                );
                if !shape_only {
                    f(id);
                }
            }
            TokenTree::Group(g) => walk_value_idents(&g.stream(), f),
            _ => {}
        }
    }
}

/// The attribute that marks the `let` of a reduction's element that the user's code holds
/// by reference (see `Lowerer::found_references`); the lowering removes it.
const FOUND_REFERENCE: &str = "__autodiff_found_reference";

/// The name a struct value written in place is bound to (see `Lowerer::lower_expr`).
fn value_name(span: Span) -> Ident {
    Ident::new("__ad_struct_value", span)
}

/// `ts` with each identifier that `to` maps replaced by its image.
fn replace_idents(ts: &TokenStream, to: &HashMap<String, Ident>) -> TokenStream {
    ts.clone()
        .into_iter()
        .map(|tt| match tt {
            TokenTree::Ident(id) => match to.get(&id.to_string()) {
                Some(copy) => TokenTree::Ident(copy.clone()),
                None => TokenTree::Ident(id),
            },
            TokenTree::Group(g) => {
                let mut inner =
                    proc_macro2::Group::new(g.delimiter(), replace_idents(&g.stream(), to));
                inner.set_span(g.span());
                TokenTree::Group(inner)
            }
            tt => tt,
        })
        .collect()
}

/// The name and the parenthesised arguments of a call of a runtime helper,
/// `__ad::NAME(..)`, at the start of `tts` (which may go on after it).
pub fn runtime_call_at(tts: &[TokenTree]) -> Option<(&Ident, &proc_macro2::Group)> {
    let [
        TokenTree::Ident(ad),
        TokenTree::Punct(c1),
        TokenTree::Punct(c2),
        TokenTree::Ident(name),
        TokenTree::Group(args),
        ..,
    ] = tts
    else {
        return None;
    };
    let call = ad == "__ad"
        && c1.as_char() == ':'
        && c2.as_char() == ':'
        && args.delimiter() == proc_macro2::Delimiter::Parenthesis;
    call.then_some((name, args))
}

/// The number of tokens of a call that [`runtime_call_at`] reads.
pub const RUNTIME_CALL_LEN: usize = 5;

pub fn walk_idents(ts: &TokenStream, f: &mut impl FnMut(&Ident)) {
    for tt in ts.clone() {
        match tt {
            TokenTree::Ident(id) => f(&id),
            TokenTree::Group(g) => walk_idents(&g.stream(), f),
            _ => {}
        }
    }
}

/// The parameters whose type is a reference to what carries no derivative (see
/// `Lowerer::constant_refs`).
fn constant_ref_params(sig: &SigInfo) -> HashSet<String> {
    sig.params
        .iter()
        .filter(|p| matches!(p.ty, Some(syn::Type::Reference(_))) && p.shape == Shape::Other)
        .map(|p| p.name.to_string())
        .collect()
}

/// The parameters whose type, behind references, is a type parameter that is not a
/// float (`b: &B`) or `impl Trait` (closures aside).
fn generic_params(sig: &SigInfo) -> HashSet<String> {
    fn generic(sig: &SigInfo, t: &syn::Type) -> bool {
        match t {
            syn::Type::Reference(r) => generic(sig, &r.elem),
            syn::Type::Paren(p) => generic(sig, &p.elem),
            syn::Type::ImplTrait(_) => true,
            t => sig.unbounded_type_param(t).is_some(),
        }
    }
    sig.params
        .iter()
        .filter(|p| !matches!(p.shape, Shape::Closure(_)))
        .filter(|p| p.ty.as_ref().is_some_and(|t| generic(sig, t)))
        .map(|p| p.name.to_string())
        .collect()
}

/// The parameters that are references to a scalar (`&mut f64`, with `scalar`), or to any
/// other non-float type (`&Model`, without).
fn struct_shaped_params(sig: &SigInfo, scalar: bool) -> HashSet<String> {
    sig.params
        .iter()
        .filter(|p| {
            let to_scalar = matches!(&p.ty, Some(syn::Type::Reference(r))
                if crate::signature::is_float_type(&r.elem, &sig.float_params));
            matches!(p.shape, Shape::Struct { .. }) && to_scalar == scalar
        })
        .map(|p| p.name.to_string())
        .collect()
}

/// The parameters that are references to a struct named by a path (`&mut Model`, `&mut
/// self`), not to a slice, an array or an `ndarray` array.
fn named_struct_params(sig: &SigInfo) -> HashSet<String> {
    let arrays = ndarray_params(sig);
    struct_shaped_params(sig, false)
        .into_iter()
        .filter(|name| {
            sig.params.iter().any(|p| {
                p.name == name.as_str()
                    && match &p.ty {
                        Some(syn::Type::Reference(r)) => matches!(&*r.elem, syn::Type::Path(_)),
                        // `&self`, `&mut self`.
                        None => p.name == "self",
                        Some(_) => false,
                    }
            }) && !arrays.contains(name)
        })
        .collect()
}

/// The names of the parameters of a shape that `shape` accepts whose type is a reference
/// `&T` or `&mut T` with `referent` true of it.
fn ref_params(
    sig: &SigInfo,
    shape: impl Fn(&Shape) -> bool,
    referent: impl Fn(&syn::TypeReference) -> bool,
) -> HashSet<String> {
    sig.params
        .iter()
        .filter(|p| shape(&p.shape))
        .filter(|p| matches!(&p.ty, Some(syn::Type::Reference(r)) if referent(r)))
        .map(|p| p.name.to_string())
        .collect()
}

/// The parameters shaped as structs that are references to buffers: slices, `Vec`s or
/// arrays whose elements are `Vec`s, arrays or structs.
fn buffer_params(sig: &SigInfo) -> HashSet<String> {
    ref_params(
        sig,
        |s| matches!(s, Shape::Struct { .. }),
        |r| buffer_elem(&r.elem).is_some(),
    )
}

/// Those of [`buffer_params`] whose elements are rows of floats (`&[[f64; 2]]`,
/// `&[Vec<f64>]`, `&[[f64; 3]; 3]`): a row copied whole (`let p = pts[i];`) is a buffer.
fn row_params(sig: &SigInfo) -> HashSet<String> {
    ref_params(
        sig,
        |s| matches!(s, Shape::Struct { .. }),
        |r| {
            buffer_elem(&r.elem)
                .and_then(buffer_elem)
                .is_some_and(|e| crate::signature::is_float_type(e, &sig.float_params))
        },
    )
}

/// The parameters that are references to buffers of structs (`&[Particle]`,
/// `&Vec<Point<f64>>`): of a named type that is no float, integer, string, vector,
/// tuple or type parameter of another kind.
fn struct_elem_params(sig: &SigInfo) -> HashSet<String> {
    ref_params(
        sig,
        |s| matches!(s, Shape::Struct { .. }),
        |r| {
            buffer_elem(&r.elem).is_some_and(|e| match e {
                syn::Type::Path(tp) => {
                    tp.qself.is_none()
                        && !crate::signature::is_float_type(e, &sig.float_params)
                        && !crate::signature::is_inert(e)
                        && crate::signature::vec_elem(&tp.path).is_none()
                        && !tp
                            .path
                            .get_ident()
                            .is_some_and(|id| sig.other_type_params.contains(&id.to_string()))
                }
                _ => false,
            })
        },
    )
}

/// The longest array parameter whose copy (`let mut y = *y0;`) is written out element by
/// element.
const WRITTEN_OUT_ARRAY: usize = 16;

/// See `Lowerer::array_param_lens`.
fn array_param_lens(sig: &SigInfo) -> HashMap<String, usize> {
    let mut out = HashMap::default();
    for p in &sig.params {
        let Some(syn::Type::Reference(r)) = &p.ty else {
            continue;
        };
        let syn::Type::Array(a) = &*r.elem else {
            continue;
        };
        if !crate::signature::is_float_type(&a.elem, &sig.float_params) {
            continue;
        }
        if let Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(n),
            ..
        }) = &a.len
            && let Ok(n) = n.base10_parse::<usize>()
            && n <= WRITTEN_OUT_ARRAY
        {
            out.insert(p.name.to_string(), n);
        }
    }
    out
}

/// The parameters of type `&mut [F; N]` with `F` a float type (shaped as a mutable slice).
fn mut_array_params(sig: &SigInfo) -> HashSet<String> {
    ref_params(
        sig,
        |s| matches!(s, Shape::Slice { mutable: true }),
        |r| r.mutability.is_some() && matches!(&*r.elem, syn::Type::Array(_)),
    )
}

/// The element type of a slice, an array or a `Vec`.
fn buffer_elem(t: &syn::Type) -> Option<&syn::Type> {
    match t {
        syn::Type::Slice(s) => Some(&s.elem),
        syn::Type::Array(a) => Some(&a.elem),
        syn::Type::Path(p) => crate::signature::vec_elem(&p.path),
        syn::Type::Paren(p) => buffer_elem(&p.elem),
        _ => None,
    }
}

/// The parameters that are references to `ndarray` arrays.
fn ndarray_params(sig: &SigInfo) -> HashSet<String> {
    sig.params
        .iter()
        .filter(|p| matches!(p.shape, Shape::Struct { .. }))
        .filter(|p| {
            matches!(&p.ty, Some(syn::Type::Reference(r))
                if crate::builtins::is_ndarray_type(&r.elem))
        })
        .map(|p| p.name.to_string())
        .collect()
}

/// What `of` reads from the type of each parameter that is a reference to an `ndarray`
/// array, by the parameter's name, where it reads something.
fn ndarray_param_types<T>(sig: &SigInfo, of: fn(&syn::Type) -> Option<T>) -> HashMap<String, T> {
    sig.params
        .iter()
        .filter_map(|p| match &p.ty {
            Some(syn::Type::Reference(r)) if crate::builtins::is_ndarray_type(&r.elem) => {
                Some((p.name.to_string(), of(&r.elem)?))
            }
            _ => None,
        })
        .collect()
}

/// The parameters that are references to `ndarray` arrays whose type names their number
/// of dimensions (`&Array2<f64>`), with that number.
fn ndarray_ranks(sig: &SigInfo) -> HashMap<String, usize> {
    ndarray_param_types(sig, crate::builtins::ndarray_rank)
}

/// The element types of the `ndarray` parameters, where their types name one.
fn ndarray_elems(sig: &SigInfo) -> HashMap<String, syn::Type> {
    ndarray_param_types(sig, crate::builtins::ndarray_elem)
}

fn param_kind(p: &Param) -> VarKind {
    match &p.shape {
        Shape::Slice { mutable } | Shape::Struct { mutable } => VarKind::Ref { mutable: *mutable },
        Shape::Closure(c) => VarKind::Closure(c.arity()),
        _ => VarKind::Scalar,
    }
}

/// A place whose value is a scalar: an indexed element, or a field (of a struct or a
/// scalar-tuple). Whole reference parameters and buffers, and range slices, are not.
/// `e` without its trailing `.copied()`/`.cloned()` calls, and whether it had any.
fn strip_copied(e: &Expr) -> (&Expr, bool) {
    let mut e = strip(e);
    let mut copied = false;
    while let Expr::MethodCall(c) = e
        && matches!(&*c.method.to_string(), "copied" | "cloned")
        && c.args.is_empty()
    {
        copied = true;
        e = strip(&c.receiver);
    }
    (e, copied)
}

/// Whether `p` is an element of a buffer or of a part of one: `b[i]`, `b[1..][i]`.
fn is_element_of_part(p: &Place) -> bool {
    match p.proj.split_last() {
        Some((Proj::Index(t), parts)) => {
            !is_range_tokens(t)
                && parts
                    .iter()
                    .all(|q| matches!(q, Proj::Index(r) if is_range_tokens(r)))
        }
        _ => false,
    }
}

fn is_scalar_place(p: &Place, l: &Lowerer) -> bool {
    match p.proj.last() {
        None => matches!(l.kinds.get(&p.base.to_string()), Some(VarKind::Scalar)),
        Some(Proj::Index(t)) => !is_range_tokens(t),
        Some(Proj::Field(_) | Proj::Deref) => true,
    }
}

/// A generated companion's body with its replayed element accesses
/// (`(*__ad::replayed_at(&x[..], i))`, `(*__ad::replayed_at_mut(&mut x[..], i))`, which
/// skip a bounds check the forward sweep made) read back as the indexing they are, with
/// the index marked, `x[__ad::replayed_index(i)]`: a checked index as written (the
/// marker is the identity), which the forward transform replays again where the element
/// and its tangent keep their lengths (`forward::Replays`).
fn indexed_again(body: &syn::Block) -> syn::Block {
    fn replayed(e: &Expr) -> Option<Expr> {
        let Expr::Unary(u) = strip(e) else {
            return None;
        };
        let (syn::UnOp::Deref(_), Expr::Call(c)) = (&u.op, &*u.expr) else {
            return None;
        };
        let Expr::Path(f) = &*c.func else {
            return None;
        };
        let names = path_names(&f.path);
        if names != ["__ad", "replayed_at"] && names != ["__ad", "replayed_at_mut"] {
            return None;
        }
        if c.args.len() != 2 {
            return None;
        }
        let (slice, index) = (&c.args[0], &c.args[1]);
        let Expr::Index(whole) = strip(strip_ref(slice)) else {
            return None;
        };
        let base = &whole.expr;
        Some(syn::parse_quote_spanned!(e.span()=> #base[__ad::replayed_index(#index)]))
    }
    struct Replays;
    impl VisitMut for Replays {
        fn visit_expr_mut(&mut self, e: &mut Expr) {
            match replayed(e) {
                Some(indexed) => *e = indexed,
                None => syn::visit_mut::visit_expr_mut(self, e),
            }
        }
    }
    let mut body = body.clone();
    Replays.visit_block_mut(&mut body);
    body
}

/// Whether the tokens of an index are a range (`..n`, `a..b`, `..`): two dots outside any
/// group.
pub fn is_range_tokens(t: &TokenStream) -> bool {
    let mut depth_zero_dots = false;
    let mut prev_dot = false;
    for tt in t.clone() {
        if let TokenTree::Punct(p) = &tt
            && p.as_char() == '.'
        {
            if prev_dot {
                depth_zero_dots = true;
            }
            prev_dot = true;
            continue;
        }
        prev_dot = false;
    }
    depth_zero_dots
}

/// `use`, `const` and `static` items: no derivative, and nothing that differentiated code
/// must see change.
fn is_constant_item(i: &syn::Item) -> bool {
    matches!(
        i,
        syn::Item::Use(_) | syn::Item::Const(_) | syn::Item::Static(_)
    )
}

/// The constant items of a body, in nested blocks and closures too, except the runtime
/// import of generated companions.
fn constant_items(body: &syn::Block) -> Vec<syn::Item> {
    struct Items(Vec<syn::Item>);
    impl<'a> syn::visit::Visit<'a> for Items {
        fn visit_item(&mut self, i: &'a syn::Item) {
            let runtime = matches!(i, syn::Item::Use(u) if is_runtime_import(u));
            if is_constant_item(i) && !runtime {
                self.0.push(i.clone());
            }
        }
    }
    let mut v = Items(Vec::new());
    syn::visit::Visit::visit_block(&mut v, body);
    v.0
}

/// Appends `[idx]` to a place. An element `j` of a window `x[k..k + w]` (`j` and `w`
/// integer literals, `j < w`) is written `x[k + j]`, the same element, so that the reverse sweep
/// sees a fixed offset from the loop's variable (see [`crate::carry`]).
fn push_index(p: &mut Place, idx: TokenStream) {
    if let Some(Proj::Index(range)) = p.proj.last()
        && let Some(at) = window_element(range, &idx)
    {
        p.proj.pop();
        p.proj.push(Proj::Index(at));
        return;
    }
    p.proj.push(Proj::Index(idx));
}

/// The value of an integer literal (`3`, `3usize`).
fn int_literal(e: &Expr) -> Option<usize> {
    match strip(e) {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(n),
            ..
        }) => n.base10_parse::<usize>().ok(),
        _ => None,
    }
}

/// `vec![v; n]`: the repeated value and the count.
pub(crate) fn vec_repeat(e: &Expr) -> Option<(Expr, Expr)> {
    match e {
        Expr::Macro(m) if is_vec_macro(&m.mac) => m.mac.parse_body_with(parse_repeat).ok(),
        _ => None,
    }
}

/// The part of a result type that is a buffer of rows (`[[f64; 2]; 2]`, `Vec<[f64; 3]>`,
/// `Vec<Vec<f64>>`), alone or in a tuple.
fn rows_result(t: &syn::Type) -> Option<&syn::Type> {
    match t {
        syn::Type::Tuple(tt) => tt.elems.iter().find_map(rows_result),
        syn::Type::Paren(p) => rows_result(&p.elem),
        t if is_rows_type(t) => Some(t),
        _ => None,
    }
}

/// A buffer of rows written out: `[[0.0; 2]; 3]`, `[[a, b], [c, d]]`, `vec![[0.0; 2];
/// n]`, `vec![vec![0.0; m]; n]`.
fn is_rows_literal(e: &Expr) -> bool {
    let is_row = |r: &Expr| {
        matches!(strip(r), Expr::Repeat(_) | Expr::Array(_)) || vec_repeat(strip(r)).is_some()
    };
    match strip(e) {
        Expr::Repeat(r) => is_row(&r.expr),
        Expr::Array(a) => a.elems.first().is_some_and(is_row),
        e => vec_repeat(e).is_some_and(|(row, _)| is_row(&row)),
    }
}

/// The items of a row `[v; n]` or `vec![v; n]` with `n` an integer literal, written out,
/// and whether it is a `vec!`.
fn repeated_row(e: &Expr) -> Option<(Vec<Expr>, bool)> {
    match strip(e) {
        Expr::Repeat(r) => Some((vec![(*r.expr).clone(); int_literal(&r.len)?], false)),
        Expr::Macro(m) if is_vec_macro(&m.mac) => {
            let (v, n) = m.mac.parse_body_with(parse_repeat).ok()?;
            Some((vec![v; int_literal(&n)?], true))
        }
        _ => None,
    }
}

/// `k + j` for the range `k..k + w` and the index `j`, integer literals with `j < w`.
fn window_element(range: &TokenStream, idx: &TokenStream) -> Option<TokenStream> {
    let j = int_literal(&syn::parse2(idx.clone()).ok()?)?;
    let Expr::Range(r) = syn::parse2::<Expr>(range.clone()).ok()? else {
        return None;
    };
    let (Some(start), Some(end), syn::RangeLimits::HalfOpen(_)) = (&r.start, &r.end, &r.limits)
    else {
        return None;
    };
    let Expr::Binary(b) = strip(end) else {
        return None;
    };
    let same_start = quote!(#start).to_string() == {
        let l = &b.left;
        quote!(#l).to_string()
    };
    let w = int_literal(&b.right)?;
    (matches!(b.op, syn::BinOp::Add(_)) && same_start && j < w).then(|| quote!(#start + #j))
}

/// Methods of `Vec` and slices that move, remove or add elements, or hand out `Option`s of
/// them: none has a derivative rule. (`swap`, `reverse` and `sort_by` as statements are
/// lowered to element assignments: see [`Lowerer::lower_permutation`].)
fn is_std_buffer_method(name: &str) -> bool {
    matches!(
        name,
        "swap"
            | "reverse"
            | "sort"
            | "sort_by"
            | "sort_by_key"
            | "sort_unstable"
            | "sort_unstable_by"
            | "sort_unstable_by_key"
            | "rotate_left"
            | "rotate_right"
            | "truncate"
            | "clear"
            | "extend"
            | "extend_from_slice"
            | "resize"
            | "insert"
            | "remove"
            | "swap_remove"
            | "pop"
            | "retain"
            | "dedup"
            | "drain"
            | "append"
            | "split_off"
            | "fill_with"
            | "first"
            | "last"
            | "first_mut"
            | "last_mut"
            | "get"
            | "get_mut"
    )
}

/// The value that a chain of fields (`self.layer.w`) starts at (`self`); `None` when `e`
/// is no field.
fn field_root(e: &Expr) -> Option<&Expr> {
    let mut e = strip(e);
    if !matches!(e, Expr::Field(_)) {
        return None;
    }
    while let Expr::Field(f) = e {
        e = strip(&f.base);
    }
    Some(e)
}

/// Whether `e` reads a named field somewhere (`c.dim`, `c.ids[1]`), and calls nothing but
/// `len()` (so that computing it again where it is written is the same).
fn reads_a_field(e: &Expr) -> bool {
    struct Fields {
        field: bool,
        call: bool,
    }
    impl<'a> syn::visit::Visit<'a> for Fields {
        fn visit_expr_field(&mut self, f: &'a syn::ExprField) {
            self.field |= matches!(f.member, syn::Member::Named(_));
            syn::visit::visit_expr_field(self, f);
        }
        fn visit_expr_call(&mut self, _: &'a syn::ExprCall) {
            self.call = true;
        }
        fn visit_expr_method_call(&mut self, m: &'a syn::ExprMethodCall) {
            self.call |= m.method != "len";
            syn::visit::visit_expr_method_call(self, m);
        }
    }
    let mut v = Fields {
        field: false,
        call: false,
    };
    syn::visit::Visit::visit_expr(&mut v, e);
    v.field && !v.call
}

/// The receiver a chain of method calls starts at (`COV[i]` of `COV[i].iter().enumerate()`).
fn chain_root(mut e: &Expr) -> &Expr {
    loop {
        match e {
            Expr::MethodCall(m) => e = &m.receiver,
            Expr::Paren(p) => e = &p.expr,
            Expr::Reference(r) => e = &r.expr,
            _ => return e,
        }
    }
}

/// [`chain_root`], to replace.
fn chain_root_mut(e: &mut Expr) -> &mut Expr {
    match e {
        Expr::MethodCall(m) => chain_root_mut(&mut m.receiver),
        Expr::Paren(p) => chain_root_mut(&mut p.expr),
        Expr::Reference(r) => chain_root_mut(&mut r.expr),
        e => e,
    }
}

/// Whether `e` is an empty new vector: `Vec::new()`, `Vec::with_capacity(n)`, `vec![]`.
/// The statements of a function returning the array or vector type `t`, its last
/// expression bound to a local of that type first when it is an `if`, a `match` or
/// `std::array::from_fn(..)`, whose type would otherwise be unknown where their branches
/// end in locals or calls (`let out: [f64; 3] = if c { .. } else { .. }; out`).
fn typed_array_tail(stmts: &[syn::Stmt], t: &syn::Type) -> Option<Vec<syn::Stmt>> {
    let (syn::Stmt::Expr(tail, None), rest) = stmts.split_last()? else {
        return None;
    };
    let from_fn = matches!(strip(tail), Expr::Call(c) if matches!(&*c.func,
        Expr::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "from_fn")));
    if !(matches!(strip(tail), Expr::If(_) | Expr::Match(_)) || from_fn) {
        return None;
    }
    let out = Ident::new("__ad_out", tail.span());
    let mut typed = rest.to_vec();
    typed.push(syn::parse_quote_spanned!(tail.span()=> let #out: #t = #tail;));
    typed.push(syn::Stmt::Expr(syn::parse_quote!(#out), None));
    Some(typed)
}

/// The buffer `b` of `if c { &b[r] } else { .. }` (or of a `match`) whose every branch
/// ends with a shared reference or a name: a slice chosen by the branches.
fn sliced_in_branches(e: &Expr) -> Option<Expr> {
    if !matches!(strip(e), Expr::If(_) | Expr::Match(_)) {
        return None;
    }
    let (found, complete) = branch_values(e);
    if !complete
        || !found
            .iter()
            .all(|t| matches!(t, Expr::Reference(_) | Expr::Path(_)))
    {
        return None;
    }
    found.into_iter().find_map(|t| match t {
        Expr::Reference(r) if r.mutability.is_none() => match strip(&r.expr) {
            Expr::Index(ix) if matches!(strip(&ix.index), Expr::Range(_)) => {
                Some((*ix.expr).clone())
            }
            _ => None,
        },
        _ => None,
    })
}

/// `if c { ..; a } else { ..; b }` as `if c { ..; target = a; } else { ..; target = b; }`,
/// and a `match` likewise, arm by arm (`else if` included; a branch that ends without a
/// value, or in `target` itself, is left without an assignment).
fn assigned_in_branches(target: &Expr, e: &Expr) -> Expr {
    let is_target = |t: &Expr| quote!(#t).to_string() == quote!(#target).to_string();
    let assign_tail = |b: &mut syn::Block| {
        // (`else { h }` of `h = if .. { f(&h) } else { h };` leaves `h` as it is.)
        if let Some(syn::Stmt::Expr(tail, None)) = b.stmts.last()
            && is_target(tail)
        {
            b.stmts.pop();
            return;
        }
        if let Some(syn::Stmt::Expr(tail, None)) = b.stmts.last_mut() {
            *tail = syn::parse_quote_spanned!(tail.span()=> #target = #tail);
            let tail = tail.clone();
            *b.stmts.last_mut().expect("the tail") =
                syn::Stmt::Expr(tail, Some(Default::default()));
        }
    };
    let mut out = e.clone();
    match &mut out {
        Expr::If(i) => {
            assign_tail(&mut i.then_branch);
            if let Some((_, els)) = &mut i.else_branch {
                match &mut **els {
                    Expr::Block(b) => assign_tail(&mut b.block),
                    inner => *inner = assigned_in_branches(target, inner),
                }
            }
        }
        Expr::Match(m) => {
            for arm in &mut m.arms {
                let body = &*arm.body;
                *arm.body = match strip(body) {
                    Expr::Block(b) => {
                        let mut b = b.clone();
                        assign_tail(&mut b.block);
                        Expr::Block(b)
                    }
                    Expr::Return(_) | Expr::Break(_) | Expr::Continue(_) | Expr::Macro(_) => {
                        body.clone()
                    }
                    t if is_target(t) => syn::parse_quote!({}),
                    t => syn::parse_quote_spanned!(t.span()=> { #target = #t; }),
                };
            }
        }
        _ => {}
    }
    out
}

/// Whether `t` is `Vec<..>`.
fn is_vec_type(t: &syn::Type) -> bool {
    matches!(t, syn::Type::Path(p) if crate::signature::vec_elem(&p.path).is_some())
}

/// Whether `e` is the position of an element of a struct's member that
/// `Lowerer::element_position` writes, `flat_index(&s.w, i)`.
fn is_flat_index(e: &Expr) -> bool {
    matches!(strip(e), Expr::Call(c)
        if matches!(strip(&c.func), Expr::Path(f)
            if f.path.segments.last().is_some_and(|s| s.ident == "flat_index")))
}

/// `v.pop()` of a local vector `v` that holds a value, as statements and the value they
/// leave: the last value read into a local, then the vector truncated by one (the
/// truncation is a copy of the rest assigned back, as `truncate` is; see
/// `Lowerer::lower_resize`).
fn popped(v: &Expr, span: Span) -> (Vec<syn::Stmt>, Expr) {
    (
        vec![
            syn::parse_quote_spanned!(span=> let __ad_popped = #v[#v.len() - 1];),
            syn::parse_quote_spanned!(span=> #v.truncate(#v.len() - 1);),
        ],
        syn::parse_quote_spanned!(span=> __ad_popped),
    )
}

/// Whether `e` names one of a reverse companion's stores (`__ad_tape3`, `__ad_keep_h`),
/// into which its forward sweep records values (a loop's range by a copy) for its
/// reverse sweep.
fn is_store(e: &Expr) -> bool {
    matches!(strip(e), Expr::Path(p) if p.path.get_ident().is_some_and(|id| {
        let name = id.to_string();
        name.starts_with("__ad_tape") || name.starts_with("__ad_keep_")
    }))
}

/// `v` of `::core::clone::Clone::clone(&v)`.
fn cloned_operand(e: &Expr) -> Option<&Expr> {
    let Expr::Call(c) = strip(e) else {
        return None;
    };
    let Expr::Path(f) = strip(&c.func) else {
        return None;
    };
    let names = path_names(&f.path);
    if names.len() < 2 || names[names.len() - 2..] != ["Clone".to_string(), "clone".to_string()] {
        return None;
    }
    match &c.args.iter().collect::<Vec<_>>()[..] {
        [Expr::Reference(r)] if r.mutability.is_none() => Some(&r.expr),
        _ => None,
    }
}

/// Whether `t` is a vector of vectors (`Vec<Vec<f64>>`, `Vec<Vec<T>>`).
fn is_vector_rows_type(t: &syn::Type) -> bool {
    matches!(t, syn::Type::Path(p)
        if crate::signature::vec_elem(&p.path).is_some_and(is_vec_type))
}

/// Whether `e` is a `collect` into a vector of vectors, by its turbofish or, where
/// `rows_typed`, by the written type of the `let` it initialises.
fn collects_rows(e: &Expr, rows_typed: bool) -> bool {
    let Expr::MethodCall(m) = strip(e) else {
        return false;
    };
    let turbofish = m.turbofish.as_ref().and_then(|t| match t.args.first() {
        Some(syn::GenericArgument::Type(t)) => Some(t),
        _ => None,
    });
    m.method == "collect" && (rows_typed || turbofish.is_some_and(is_vector_rows_type))
}

/// A callee's state or result kept in a companion through `autodiff_core`'s
/// `callee_states` (`__ad::pick(&v).keep(&mut t, v)`, `__ad::pick_from(&t).take_back(&mut
/// t)`), as the plain access of the store it stands for (`t.push(v)`,
/// `__ad::take(t.pop())`): differentiated again, every value is recorded.
fn plain_store_access(e: &Expr) -> Option<Expr> {
    let Expr::MethodCall(m) = strip(e) else {
        return None;
    };
    let Expr::Call(c) = strip(&m.receiver) else {
        return None;
    };
    let Expr::Path(p) = &*c.func else {
        return None;
    };
    let names = path_names(&p.path);
    let store = strip_ref(m.args.first()?);
    match (
        names.as_slice(),
        m.method.to_string().as_str(),
        m.args.len(),
    ) {
        ([a, b], "keep" | "keep_dead", 2) if a == "__ad" && b == "pick" => {
            let v = &m.args[1];
            Some(syn::parse_quote!(#store.push(#v)))
        }
        ([a, b], "take_back" | "take_back_dead", 1) if a == "__ad" && b == "pick_from" => {
            Some(syn::parse_quote!(__ad::take(#store.pop())))
        }
        _ => None,
    }
}

fn is_new_empty_vec(e: &Expr) -> bool {
    match strip(e) {
        Expr::Call(c) => matches!(&*c.func, Expr::Path(p) if {
            let names = path_names(&p.path);
            names.len() >= 2
                && names[names.len() - 2] == "Vec"
                && matches!(names[names.len() - 1].as_str(), "new" | "with_capacity")
        }),
        Expr::Macro(m) => m.mac.path.is_ident("vec") && m.mac.tokens.is_empty(),
        _ => false,
    }
}

/// Whether `e` calls a function or a method (or a macro) somewhere.
fn calls_something(e: &Expr) -> bool {
    struct Calls(bool);
    impl<'a> syn::visit::Visit<'a> for Calls {
        fn visit_expr_call(&mut self, _: &'a syn::ExprCall) {
            self.0 = true;
        }
        fn visit_expr_method_call(&mut self, _: &'a syn::ExprMethodCall) {
            self.0 = true;
        }
        fn visit_expr_macro(&mut self, _: &'a syn::ExprMacro) {
            self.0 = true;
        }
    }
    let mut v = Calls(false);
    syn::visit::Visit::visit_expr(&mut v, e);
    v.0
}

/// Refuses tuples as the items of an array or vector that carries derivatives
/// (`[(x[0], 0.5), (x[1], 1.5)]`; one of constants only is a table, read as constants).
fn refuse_tuple_items<'e>(mut items: impl Iterator<Item = &'e Expr>) -> Result<()> {
    match items.find(|e| matches!(strip(e), Expr::Tuple(_))) {
        Some(t) => unsupported(
            t,
            "an array or vector of tuples that carry derivatives (keep one array per element of the tuple, `let a = [x[0], x[1]]; let w = [0.5, 1.5];`, or use arrays as items, `[[x[0], 0.5], [x[1], 1.5]]`)",
        ),
        None => Ok(()),
    }
}

/// Whether `e` is a dereference, `*s` (of a reference: `&*self` saved, `&mut *self` put
/// back, where the reverse companion differentiated again keeps a `&mut` struct).
fn is_deref(e: &Expr) -> bool {
    matches!(strip(e), Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)))
}

/// Whether `path` names `Ord`'s `min`, `max` or `clamp` (`std::cmp::min`, `cmp::max`,
/// `Ord::clamp`, `::core::cmp::Ord::min`).
fn is_ord_min_max(path: &syn::Path) -> bool {
    let names = path_names(path);
    matches!(
        names
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice(),
        [.., "cmp", "min" | "max"] | [.., "Ord", "min" | "max" | "clamp"]
    )
}

/// Whether `e` builds a buffer of struct literals: `vec![S { .. }; n]`, `vec![S { .. },
/// ..]`, `[S { .. }; n]` or `[S { .. }, ..]`.
fn is_struct_buffer_literal(e: &Expr) -> bool {
    // (Also `__ad::zero_like(&S { .. })`, the tangent a companion writes beside it.)
    fn is_lit(e: &Expr) -> bool {
        match strip(e) {
            Expr::Struct(_) => true,
            Expr::Call(c) => {
                matches!(strip(&c.func), Expr::Path(p) if path_names(&p.path) == ["__ad", "zero_like"])
                    && c.args.len() == 1
                    && is_lit(strip_borrow(&c.args[0]))
            }
            _ => false,
        }
    }
    match strip(e) {
        // (`::std::vec![..]` as companions write it.)
        Expr::Macro(m)
            if m.mac.path.is_ident("vec") || path_names(&m.mac.path) == ["std", "vec"] =>
        {
            if let Ok(r) = m.mac.parse_body_with(parse_repeat) {
                return is_lit(&r.0);
            }
            m.mac
                .parse_body_with(
                    syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated,
                )
                .is_ok_and(|items| !items.is_empty() && items.iter().all(is_lit))
        }
        Expr::Repeat(r) => is_lit(&r.expr),
        Expr::Array(a) => !a.elems.is_empty() && a.elems.iter().all(is_lit),
        _ => false,
    }
}

/// Whether `ty` is written as an integer type or `bool` (`usize`, `i32`, `bool`).
fn is_integer_or_bool_type(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p) if p.qself.is_none()
        && p.path.get_ident().is_some_and(|i| crate::signature::is_integer_or_bool_name(&i.to_string())))
}

/// Whether `e` calls a function by its path with values (`bucket(x[0])`, `a::b(x) + 1`),
/// outside closures and `no_grad(..)`, and makes no call that goes through the derivative
/// protocol whatever its value: one that passes a reference or nothing (so that a custom
/// rule of such a callee fires, see README "Errors").
fn calls_a_function_with_values(e: &Expr) -> bool {
    #[derive(Default)]
    struct Finder {
        with_values: bool,
        protocol: bool,
    }
    impl<'v> syn::visit::Visit<'v> for Finder {
        fn visit_expr(&mut self, e: &'v Expr) {
            match e {
                Expr::Closure(_) => {}
                Expr::Call(c)
                    if matches!(strip(&c.func), Expr::Path(p)
                    if p.path.segments.last().is_some_and(|s| s.ident == "no_grad")) => {}
                Expr::Call(c) if matches!(strip(&c.func), Expr::Path(_)) => {
                    if c.args.is_empty()
                        || c.args
                            .iter()
                            .any(|a| matches!(strip(a), Expr::Reference(_)))
                    {
                        self.protocol = true;
                    }
                    self.with_values = true;
                    syn::visit::visit_expr_call(self, c);
                }
                e => syn::visit::visit_expr(self, e),
            }
        }
    }
    let mut f = Finder::default();
    syn::visit::Visit::visit_expr(&mut f, e);
    f.with_values && !f.protocol
}

/// Whether `e` is evidently an integer: an integer literal (not a float's, `2.0`, `1e3`
/// or `2f64`), a length or a count (`x.len()`), a cast to an integer type, or arithmetic
/// on one. (Rust does not mix integers and floats in arithmetic, so an operation with such
/// an operand is an integer's.)
fn is_integer_evident(e: &Expr) -> bool {
    match strip(e) {
        Expr::Lit(l) => match &l.lit {
            syn::Lit::Int(i) => !matches!(i.suffix(), "f32" | "f64"),
            _ => false,
        },
        Expr::MethodCall(m) => {
            m.args.is_empty() && matches!(m.method.to_string().as_str(), "len" | "count")
        }
        Expr::Cast(c) => matches!(&*c.ty, syn::Type::Path(p) if p.qself.is_none()
        && p.path.get_ident().is_some_and(|i| {
            let n = i.to_string();
            n != "bool" && crate::signature::is_integer_or_bool_name(&n)
        })),
        Expr::Binary(b) => {
            matches!(
                b.op,
                syn::BinOp::Add(_)
                    | syn::BinOp::Sub(_)
                    | syn::BinOp::Mul(_)
                    | syn::BinOp::Div(_)
                    | syn::BinOp::Rem(_)
            ) && (is_integer_evident(&b.left) || is_integer_evident(&b.right))
        }
        _ => false,
    }
}

/// Methods of the integer types that no float type has (`n.saturating_sub(1)`).
fn is_integer_method(name: &str) -> bool {
    const PREFIXES: [&str; 4] = ["saturating_", "wrapping_", "checked_", "overflowing_"];
    PREFIXES.iter().any(|p| name.starts_with(p))
        || matches!(
            name,
            "div_ceil"
                | "abs_diff"
                | "pow"
                | "ilog2"
                | "ilog10"
                | "is_power_of_two"
                | "next_power_of_two"
                | "count_ones"
                | "leading_zeros"
                | "trailing_zeros"
        )
}

/// The error for a float method `name` that is not a builtin one (`x.rem_euclid(2.0)`,
/// `f64::rem_euclid(x, 2.0)`) called on a value that carries a derivative.
fn no_float_derivative(name: &Ident) -> syn::Error {
    syn::Error::new(
        name.span(),
        format!(
            "`{name}` has no derivative: it is not one of the float methods with a builtin derivative (README, \"Float methods\"). Write it with operations that have one (`a % b` for `rem_euclid` of positive values), wrap the call in `no_grad(..)`, or, where `{name}` is your own, add `#[differentiable]` or `#[custom_rule]` to it"
        ),
    )
}

/// Methods of `Option` and `Result` that take them apart through closures or defaults.
fn is_option_combinator(name: &str) -> bool {
    matches!(
        name,
        "unwrap_or_else"
            | "unwrap_or_default"
            | "map_or"
            | "map_or_else"
            | "map"
            | "and_then"
            | "or_else"
            | "ok"
            | "err"
            | "ok_or"
            | "ok_or_else"
            | "filter"
            | "is_some_and"
            | "is_none_or"
            | "is_ok_and"
            | "is_err_and"
            | "unwrap_or"
            | "expect"
            | "unwrap"
            | "map_err"
            | "or"
            | "and"
    )
}

/// Methods of slices and iterators that search: their results are positions, counts or
/// truth values.
fn is_search_method(name: &str) -> bool {
    matches!(
        name,
        "partition_point"
            | "binary_search"
            | "binary_search_by"
            | "binary_search_by_key"
            | "position"
            | "rposition"
            | "any"
            | "all"
            | "count"
            | "contains"
            | "starts_with"
            | "ends_with"
            | "is_sorted"
            | "is_sorted_by"
    )
}

/// `vec![..]` or `::std::vec![..]`.
fn is_vec_macro(m: &syn::Macro) -> bool {
    path_names(&m.path).last().is_some_and(|n| n == "vec")
}

/// `Pair(a, b)`: a call of a path whose last segment starts with a capital (a tuple struct,
/// `Self(..)`), except the standard library's enum variants, whose values differentiated
/// code cannot read back (it binds no patterns that carry derivatives).
fn is_tuple_struct_call(c: &syn::ExprCall) -> bool {
    let Expr::Path(p) = strip(&c.func) else {
        return false;
    };
    let Some(last) = p.path.segments.last() else {
        return false;
    };
    let name = last.ident.to_string();
    p.qself.is_none()
        && !c.args.is_empty()
        && name.starts_with(|c: char| c.is_ascii_uppercase())
        && !matches!(name.as_str(), "Some" | "Ok" | "Err")
}

/// `__ad::zero_like(..)`.
fn is_zero_like_call(c: &syn::ExprCall) -> bool {
    matches!(&*c.func, Expr::Path(p) if path_names(&p.path) == ["__ad", "zero_like"])
}

/// The part of `name` that a fresh local named after it keeps: the user's names whole;
/// of a name that an earlier lowering made (generated code lowered again: `__ad55_nb___ad10_b`,
/// the adjoint of `__ad10_b`), the words without the counters (`nb_b`). The counter of
/// the fresh name alone makes it unique; without this, names grew with each order of
/// nesting, and so did the time spent on them.
fn short_base(name: &str) -> std::borrow::Cow<'_, str> {
    let trimmed = name.trim_start_matches('_');
    if trimmed.len() == name.len() {
        return trimmed.into();
    }
    let is_counter = |w: &str| {
        w.strip_prefix("ad")
            .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
    };
    let words: Vec<&str> = trimmed
        .split('_')
        .filter(|w| !w.is_empty() && !is_counter(w))
        .collect();
    if words.is_empty() {
        trimmed.into()
    } else {
        words.join("_").into()
    }
}

/// The name the user wrote for the local `ir` (`__ad3_buf` is `buf`).
fn user_name(ir: &str) -> &str {
    match ir.strip_prefix("__ad") {
        Some(rest) => {
            let rest = rest.trim_start_matches(|c: char| c.is_ascii_digit());
            rest.strip_prefix('_').unwrap_or(ir)
        }
        None => ir,
    }
}

/// `vec![v; n]` or `[v; n]`: a buffer written as a literal repetition (the fill of a
/// buffer of buffers).
fn is_buffer_literal(e: &Expr) -> bool {
    match strip(e) {
        Expr::Macro(m) => is_vec_macro(&m.mac) && m.mac.parse_body_with(parse_repeat).is_ok(),
        // `vec![[0.0, 0.0]; n]`: rows written out.
        Expr::Repeat(_) | Expr::Array(_) => true,
        _ => false,
    }
}

/// The first method, going down the receivers of an iterator chain, that is not one of
/// the adapters the chains read (`x.iter().chain(y.iter())`: `chain`).
fn unread_adapter(e: &Expr) -> Option<&syn::ExprMethodCall> {
    let mut e = strip(e);
    let mut found = None;
    while let Expr::MethodCall(m) = e {
        let name = m.method.to_string();
        if !is_chain_adapter(&name) && !matches!(name.as_str(), "iter_mut" | "into_iter") {
            found = Some(m);
        }
        e = strip(&m.receiver);
    }
    found
}

/// The outermost method of the chain `e` that is neither an iterator source nor an
/// adapter that chains are read through, where it is applied to such a chain
/// (`x.iter().scan(..)`, not `w.row(i)` of `w.row(i).iter()`).
fn adapter_on_iterator(e: &Expr) -> Option<&syn::ExprMethodCall> {
    let mut e = strip(e);
    while let Expr::MethodCall(m) = e {
        let name = m.method.to_string();
        if !is_chain_adapter(&name) && !matches!(name.as_str(), "iter_mut" | "into_iter") {
            let mut below = strip(&m.receiver);
            while let Expr::MethodCall(b) = below {
                if is_chain_adapter(&b.method.to_string()) {
                    return Some(m);
                }
                below = strip(&b.receiver);
            }
            return None;
        }
        e = strip(&m.receiver);
    }
    None
}

/// The iterator sources and adapters that chains are read through.
fn is_chain_adapter(name: &str) -> bool {
    matches!(
        name,
        "iter"
            | "map"
            | "zip"
            | "enumerate"
            | "chunks"
            | "chunks_exact"
            | "rev"
            | "step_by"
            | "copied"
            | "cloned"
            | "windows"
            | "filter"
            | "skip"
            | "take"
    )
}

/// The array literal at the source of a loop's iterator (`[a, b]`, `&[a, b]`,
/// `[a, b].iter().enumerate()`), and the iterator with the literal replaced by the local
/// `__ad_items` (iterated by value, `iter().copied()`, where the loop took the literal
/// itself). A table of tuples, which the lowering reads as constants, is left as it is.
fn array_literal_source(e: &Expr) -> Option<(Expr, Expr)> {
    let items = |e: &Expr| matches!(e, Expr::Array(a) if !a.elems.is_empty() && !is_constant_tuple_table(e));
    literal_source(e, &syn::parse_quote!(__ad_items), &items)
}

/// For a loop over an array literal of tuples (`[(0.5, 0usize), (0.25, 2)]`, `&[..]`,
/// `[..].iter().enumerate()`): the literal, and the loop's source with a local named
/// `__ad_table` in its place (a reference to the table: `iter().copied()` where the loop
/// took the literal itself).
fn tuple_table_source(e: &Expr) -> Option<(Expr, Expr)> {
    let table = |e: &Expr| matches!(e, Expr::Array(_)) && is_constant_tuple_table(e);
    literal_source(e, &syn::parse_quote!(__ad_table), &table)
}

/// The array literal that a loop's source iterates (one that `is_literal` accepts, itself,
/// behind `&` or under methods), and the source with `local` in its place.
fn literal_source(
    e: &Expr,
    local: &Expr,
    is_literal: &dyn Fn(&Expr) -> bool,
) -> Option<(Expr, Expr)> {
    match e {
        Expr::Paren(_) | Expr::Group(_) => literal_source(strip(e), local, is_literal),
        Expr::Array(_) if is_literal(e) => {
            Some((e.clone(), syn::parse_quote!(#local.iter().copied())))
        }
        Expr::Reference(r) if r.mutability.is_none() => {
            let (items, _) = literal_source(&r.expr, local, is_literal)?;
            Some((items, syn::parse_quote!(#local.iter())))
        }
        Expr::MethodCall(m) => {
            // The method takes the literal itself (`[a, b].iter()`, `(&[a, b]).iter()`,
            // which borrow the same way), or an adapter over it.
            let (items, inner) = match strip(&m.receiver) {
                r @ (Expr::Array(_) | Expr::Reference(_)) => {
                    (literal_source(r, local, is_literal)?.0, local.clone())
                }
                r => literal_source(r, local, is_literal)?,
            };
            let mut m = m.clone();
            *m.receiver = inner;
            Some((items, Expr::MethodCall(m)))
        }
        _ => None,
    }
}

/// An array or `vec![..]` literal whose elements are tuples (`[(0.5, 0.2), (1.0, -0.4)]`,
/// `vec![([0.5, -0.3], 0.2)]`).
fn is_constant_tuple_table(e: &Expr) -> bool {
    literal_items(e).is_some_and(|(items, _)| {
        !items.is_empty() && items.iter().all(|i| matches!(strip(i), Expr::Tuple(_)))
    })
}

/// The items of an array literal or of a `vec![..]` list, and whether it is a `vec!`.
fn literal_items(e: &Expr) -> Option<(Vec<Expr>, bool)> {
    match strip(e) {
        Expr::Array(a) => Some((a.elems.iter().cloned().collect(), false)),
        Expr::Macro(m) if is_vec_macro(&m.mac) => m
            .mac
            .parse_body_with(syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated)
            .ok()
            .map(|items| (items.into_iter().collect(), true)),
        _ => None,
    }
}

/// `Vec::new()`, `Vec::with_capacity(n)` or `vec![]`.
fn is_empty_vec(e: &Expr) -> bool {
    match strip(e) {
        Expr::Call(c) => {
            matches!(&*c.func, Expr::Path(p) if path_names(&p.path).ends_with(&["Vec".into(), "new".into()])
                || path_names(&p.path).ends_with(&["Vec".into(), "with_capacity".into()]))
        }
        Expr::Macro(m) => is_vec_macro(&m.mac) && m.mac.tokens.is_empty(),
        _ => false,
    }
}

fn is_range_expr(e: &Expr) -> bool {
    match strip(e) {
        Expr::Range(_) => true,
        Expr::MethodCall(m) => {
            matches!(
                m.method.to_string().as_str(),
                "rev" | "step_by" | "skip" | "take"
            ) && is_range_expr(&m.receiver)
        }
        _ => false,
    }
}

pub(crate) fn strip(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => strip(&p.expr),
        Expr::Group(g) => strip(&g.expr),
        e => e,
    }
}

/// Whether an iterator chain yields pairs: its last adapter that changes the items is
/// `enumerate()` or `zip(..)` (`x.iter().copied().enumerate().skip(1)`).
fn yields_pairs(chain: &Expr) -> bool {
    pair_references(chain).is_some()
}

/// For a chain of pairs, whether each half is a reference to a buffer's element
/// (`x.iter().enumerate()` yields `(usize, &f64)`, `x.iter().copied().enumerate()`
/// `(usize, f64)`), as the comparison closure takes them.
fn pair_references(chain: &Expr) -> Option<(bool, bool)> {
    let mut e = strip(chain);
    while let Expr::MethodCall(c) = e {
        match c.method.to_string().as_str() {
            "enumerate" => return Some((false, yields_references(&c.receiver))),
            "zip" if c.args.len() == 1 => {
                return Some((
                    yields_references(&c.receiver),
                    yields_references(&c.args[0]),
                ));
            }
            "skip" | "take" | "step_by" | "rev" | "filter" => e = strip(&c.receiver),
            _ => return None,
        }
    }
    None
}

/// Whether a chain yields references to a buffer's elements (`x.iter().rev()`), not values.
fn yields_references(chain: &Expr) -> bool {
    let mut e = strip(chain);
    while let Expr::MethodCall(c) = e {
        match c.method.to_string().as_str() {
            "iter" => return true,
            "skip" | "take" | "step_by" | "rev" | "filter" => e = strip(&c.receiver),
            _ => return false,
        }
    }
    false
}

/// `"first"` of a reduction's closure `|a, _| a`, `"last"` of `|_, b| b`: the item that
/// such a reduction keeps.
fn kept_item(f: &Expr) -> Option<&'static str> {
    let Expr::Closure(c) = strip(f) else {
        return None;
    };
    let Expr::Path(body) = strip(&c.body) else {
        return None;
    };
    let returned = body.path.get_ident()?;
    let names = |p: &Pat| matches!(p, Pat::Ident(i) if i.ident == *returned && i.subpat.is_none());
    match &c.inputs.iter().collect::<Vec<_>>()[..] {
        [a, Pat::Wild(_)] if names(a) => Some("first"),
        [Pat::Wild(_), b] if names(b) => Some("last"),
        _ => None,
    }
}

/// `chain.max_by(cmp).unwrap()` (or `min_by`, `expect`) of a chain of pairs (the argmax
/// idiom, `x.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1))`): the loop of
/// [`Lowerer::unwrapped_element`] with the kept pair in two locals, compared as pairs.
/// `"first"` and `"last"` keep the first pair or the last one (`cmp` is not called).
fn pair_extremum(method: &str, cmp: &Expr, chain: &Expr, empty: &syn::Stmt, span: Span) -> Expr {
    // The kept pair holds values; the chain's items are references where it yields them
    // (an element bound by the loop is written as a borrow of the buffer's element).
    let (r0, r1) = pair_references(chain).unwrap_or((false, false));
    let kept = |name: &str, by_ref: bool| {
        let id = Ident::new(name, span);
        if by_ref { quote!(&#id) } else { quote!(#id) }
    };
    let (k0, k1) = (kept("__ad_k0", r0), kept("__ad_k1", r1));
    let replace: Expr = match method {
        "max_by" => syn::parse_quote_spanned!(span=>
            __ad::compare(#cmp, &(#k0, #k1), &(__ad_n0, __ad_n1))
                != ::core::cmp::Ordering::Greater),
        "first" => syn::parse_quote!(false),
        "last" => syn::parse_quote!(true),
        _ => syn::parse_quote_spanned!(span=>
            __ad::compare(#cmp, &(__ad_n0, __ad_n1), &(#k0, #k1))
                == ::core::cmp::Ordering::Less),
    };
    syn::parse_quote_spanned!(span=> {
        let mut __ad_k0 = ::core::default::Default::default();
        let mut __ad_k1 = ::core::default::Default::default();
        let mut __ad_some = false;
        for (__ad_n0, __ad_n1) in #chain {
            if !__ad_some {
                (__ad_k0, __ad_k1) = (__ad_n0, __ad_n1);
                __ad_some = true;
            } else if #replace {
                (__ad_k0, __ad_k1) = (__ad_n0, __ad_n1);
            }
        }
        if !__ad_some {
            #empty
        }
        (__ad_k0, __ad_k1)
    })
}

/// `buf.iter()`, then `adapters` (see `Lowerer::elements_adapted`), then `max_by(cmp)` or
/// `min_by(cmp)` and `found` (`unwrap()`, `expect(..)`): the same chain runs on the primal
/// values over pairs of each element's position and the item, the comparison and the
/// filters seeing the items as written; the element is then read at the position found,
/// so that it carries the derivative (with the position `enumerate` gave, where the chain
/// enumerates). `std` picks the element, so ties go as there: the last maximum, the first
/// minimum.
fn extremum_through_adapters(
    method: &str,
    cmp: &Expr,
    buf: &Ident,
    adapters: &[&syn::ExprMethodCall],
    found: &syn::ExprMethodCall,
    span: Span,
) -> Expr {
    let mut chain = quote_spanned!(span=> #buf.iter().enumerate());
    let (mut copied, mut enumerated) = (false, false);
    for a in adapters {
        let name = &a.method;
        let args = &a.args;
        chain = match name.to_string().as_str() {
            // (Through `holds` and `compare`, whose signatures type the user's closures.)
            "filter" => quote_spanned!(span=>
                #chain.filter(|__ad_e| __ad::holds(#args, &__ad_e.1))),
            "enumerate" => {
                enumerated = true;
                quote_spanned!(span=> #chain.enumerate().map(
                    |(__ad_i, (__ad_k, __ad_item))| (__ad_k, (__ad_i, __ad_item))))
            }
            "copied" | "cloned" => {
                copied = true;
                quote_spanned!(span=> #chain.map(
                    |(__ad_k, __ad_item)| (__ad_k, ::core::clone::Clone::clone(__ad_item))))
            }
            _ => quote_spanned!(span=> #chain.#name(#args)),
        };
    }
    let method = Ident::new(method, span);
    let unwrap = &found.method;
    let unwrap_args = &found.args;
    let index = if enumerated {
        quote!(__ad_e.1.0)
    } else {
        quote!(0usize)
    };
    let element = if copied {
        quote_spanned!(span=> #buf[__ad_pos.0])
    } else {
        quote_spanned!(span=> &#buf[__ad_pos.0])
    };
    let value = if enumerated {
        quote_spanned!(span=> (__ad_pos.1, #element))
    } else {
        element
    };
    syn::parse_quote_spanned!(span=> {
        let __ad_pos: (usize, usize) = ::autodiff_core::no_grad(
            #chain
                .#method(|__ad_a, __ad_b| __ad::compare(#cmp, &__ad_a.1, &__ad_b.1))
                .map(|__ad_e| (__ad_e.0, #index))
                .#unwrap(#unwrap_args),
        );
        #value
    })
}

/// A type written as one name that is neither a number type nor `char` nor `bool`: in a
/// conversion with `as`, an alias of a number type (a float type parameter is known as
/// one before this is asked).
fn is_alias_name(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Path(p) if p.qself.is_none()
        && p.path.get_ident().is_some_and(|i| i != "char" && i != "bool"))
        && !crate::signature::is_primitive_number(ty)
}

/// The operation of a compound assignment other than `+= -= *= /=` (`%=` gives `%`):
/// lowered as the assignment of the operation's result.
fn other_compound_op(op: &syn::BinOp) -> Option<syn::BinOp> {
    use syn::BinOp as B;
    Some(match op {
        B::RemAssign(t) => B::Rem(syn::Token![%](t.span())),
        B::BitXorAssign(t) => B::BitXor(syn::Token![^](t.span())),
        B::BitAndAssign(t) => B::BitAnd(syn::Token![&](t.span())),
        B::BitOrAssign(t) => B::BitOr(syn::Token![|](t.span())),
        B::ShlAssign(t) => B::Shl(syn::Token![<<](t.span())),
        B::ShrAssign(t) => B::Shr(syn::Token![>>](t.span())),
        _ => return None,
    })
}

/// Whether `op` is a compound assignment (`+=`, `%=`, `<<=`, ..).
pub(crate) fn is_compound(op: &syn::BinOp) -> bool {
    compound_kind(op).is_some() || other_compound_op(op).is_some()
}

fn compound_kind(op: &syn::BinOp) -> Option<AssignKind> {
    Some(match op {
        syn::BinOp::AddAssign(_) => AssignKind::Add,
        syn::BinOp::SubAssign(_) => AssignKind::Sub,
        syn::BinOp::MulAssign(_) => AssignKind::Mul,
        syn::BinOp::DivAssign(_) => AssignKind::Div,
        _ => return None,
    })
}

/// `f64::sin`, `T::max`, `Float::powi`, `num_traits::Float::sqrt`: a builtin float method
/// called as a function.
fn math_path(path: &syn::Path, floats: &HashSet<String>) -> Option<String> {
    let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    if segs.len() < 2 {
        return None;
    }
    let name = segs.last()?.clone();
    let owner = &segs[segs.len() - 2];
    let is_float_owner = owner == "f64"
        || owner == "f32"
        || owner == "Float"
        || owner == "Real"
        || floats.contains(owner);
    (is_float_owner && math_arity(&name).is_some()).then_some(name)
}

/// `Type::f` or `Self::f`, as opposed to `module::f`.
/// A range, possibly reversed or stepped: `(a..b).rev().step_by(k)`.
fn is_index_range(e: &Expr) -> bool {
    match strip(e) {
        Expr::Range(_) => true,
        Expr::MethodCall(m) if m.method == "rev" || m.method == "step_by" => {
            is_index_range(&m.receiver)
        }
        _ => false,
    }
}

/// `e` without a leading `&`, `&mut` or `*`: the place an argument refers to.
fn strip_ref(e: &Expr) -> &Expr {
    match strip(e) {
        Expr::Reference(r) => strip_ref(&r.expr),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => strip_ref(&u.expr),
        e => e,
    }
}

/// `e` without a leading `&` or `&mut` (a `*` stays: it reads a scalar behind a
/// reference).
fn strip_borrow(e: &Expr) -> &Expr {
    match strip(e) {
        Expr::Reference(r) => strip_borrow(&r.expr),
        e => e,
    }
}

/// Whether `t` is `()`, the value of a statement that has already been lowered.
fn is_unit_literal(t: &TokenStream) -> bool {
    matches!(syn::parse2::<Expr>(t.clone()), Ok(Expr::Tuple(tt)) if tt.elems.is_empty())
}

/// `x` for `x[..]`.
fn strip_full_range(e: &Expr) -> &Expr {
    if let Expr::Index(i) = strip(e)
        && let Expr::Range(r) = strip(&i.index)
        && r.start.is_none()
        && r.end.is_none()
    {
        return strip(&i.expr);
    }
    e
}

/// `x` for `::core::clone::Clone::clone(&x)`, as generated code copies saved values.
fn strip_clone(e: &Expr) -> &Expr {
    if let Expr::Call(c) = strip(e)
        && let Expr::Path(p) = strip(&c.func)
        && path_names(&p.path) == ["core", "clone", "Clone", "clone"]
        && c.args.len() == 1
    {
        return strip_ref(&c.args[0]);
    }
    e
}

/// `&name[..e]` or `&mut name[..e]`.
fn is_reslice_of(name: &Ident, e: &Expr) -> bool {
    let Expr::Reference(r) = e else {
        return false;
    };
    let Expr::Index(i) = strip(&r.expr) else {
        return false;
    };
    matches!(strip(&i.expr), Expr::Path(p) if p.path.is_ident(name))
        && matches!(strip(&i.index), Expr::Range(rg) if rg.start.is_none())
}

/// The protocol function that `name` calls in a companion's code: `__ad_fwd`, `__ad_aug`
/// or `__ad_pull` (of a function), or those followed by `_METHOD` (of a method). Nested
/// protocol functions (`__ad_fwd___ad_pull`) and closure builders (`__ad_fwd_fn0`) are not.
fn protocol_kind(name: &str) -> Option<&'static str> {
    ["__ad_fwd", "__ad_aug", "__ad_pull"]
        .into_iter()
        .find(|k| match name.strip_prefix(k) {
            Some("") => true,
            Some(rest) => {
                let builder = rest
                    .strip_prefix("_fn")
                    .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()));
                rest.starts_with('_') && !rest.starts_with("__") && !builder
            }
            None => false,
        })
}

/// The arguments of a protocol call that its derivative takes: a pullback's state is
/// dropped (the derivative of a pullback recomputes), and so is the mode marker that ends
/// forward and pullback calls (the derivative's caller passes its own). An associated
/// function's pullback (`Type::__ad_pull_name`, called by path) takes its state after
/// its first argument, as a method's takes it after `self`.
fn protocol_args(
    name: &str,
    args: &syn::punctuated::Punctuated<Expr, syn::Token![,]>,
    by_path: bool,
) -> syn::punctuated::Punctuated<Expr, syn::Token![,]> {
    let n = args.len();
    let (state, keep) = match protocol_kind(name) {
        // The state, the arguments with their sinks, the seed, the marker.
        Some("__ad_pull") => {
            let assoc = by_path && name != "__ad_pull" && n > 3;
            (Some(usize::from(assoc)), n.saturating_sub(1))
        }
        Some("__ad_fwd") => (None, n.saturating_sub(1)),
        _ => (None, n),
    };
    args.iter()
        .take(keep)
        .enumerate()
        .filter(|(i, _)| Some(*i) != state)
        .map(|(_, a)| a.clone())
        .collect()
}

/// `Vec<[F; N]>`, `Vec<Vec<F>>` or `[[F; N]; M]`: a buffer of rows.
fn is_rows_type(ty: &syn::Type) -> bool {
    let is_buffer = |t: &syn::Type| match t {
        syn::Type::Array(_) => true,
        syn::Type::Path(p) => p.path.segments.last().is_some_and(|s| s.ident == "Vec"),
        _ => false,
    };
    match ty {
        syn::Type::Array(a) => is_buffer(&a.elem),
        syn::Type::Path(p) => p.path.segments.last().is_some_and(|s| {
            s.ident == "Vec"
                && matches!(&s.arguments, syn::PathArguments::AngleBracketed(g)
                    if matches!(g.args.first(), Some(syn::GenericArgument::Type(t)) if is_buffer(t)))
        }),
        _ => false,
    }
}

fn is_assoc_path(path: &syn::Path) -> bool {
    let n = path.segments.len();
    if n < 2 {
        return false;
    }
    let owner = path.segments[n - 2].ident.to_string();
    owner == "Self" || owner.chars().next().is_some_and(|c| c.is_uppercase())
}

fn parse_repeat(input: syn::parse::ParseStream) -> syn::Result<(Expr, Expr)> {
    let v: Expr = input.parse()?;
    input.parse::<syn::Token![;]>()?;
    let n: Expr = input.parse()?;
    Ok((v, n))
}

fn is_unit_expr(e: &Expr) -> bool {
    match strip(e) {
        Expr::ForLoop(_) | Expr::While(_) | Expr::Assign(_) => true,
        Expr::Loop(l) => break_arity(&l.body, l.label.as_ref(), true).is_none(),
        Expr::Binary(b) => is_compound(&b.op),
        _ => false,
    }
}

/// The number of values of an expression, judged from its syntax: a tuple's width, else 1.
fn expr_arity(e: &Expr) -> usize {
    match strip(e) {
        Expr::Tuple(t) => t.elems.len(),
        _ => 1,
    }
}

/// The number of values that a `break` out of the loop or block labelled `label` carries
/// (with `unlabelled`, a `break` without a label outside inner loops leaves it too): the
/// width of the first such `break`'s value; `None` when none carries one.
fn break_arity(body: &syn::Block, label: Option<&syn::Label>, unlabelled: bool) -> Option<usize> {
    struct Finder {
        label: Option<String>,
        unlabelled: bool,
        depth: usize,
        arity: Option<usize>,
    }
    impl<'a> syn::visit::Visit<'a> for Finder {
        fn visit_expr(&mut self, e: &'a Expr) {
            match e {
                Expr::Break(b) => {
                    let ours = match &b.label {
                        Some(l) => self.label.as_deref() == Some(&*l.ident.to_string()),
                        None => self.unlabelled && self.depth == 0,
                    };
                    if ours && self.arity.is_none() {
                        self.arity = b.expr.as_deref().map(expr_arity).filter(|&n| n > 0);
                    }
                    syn::visit::visit_expr(self, e);
                }
                Expr::ForLoop(_) | Expr::While(_) | Expr::Loop(_) => {
                    self.depth += 1;
                    syn::visit::visit_expr(self, e);
                    self.depth -= 1;
                }
                Expr::Closure(_) => {}
                _ => syn::visit::visit_expr(self, e),
            }
        }
    }
    let mut f = Finder {
        label: label.map(|l| l.name.ident.to_string()),
        unlabelled,
        depth: 0,
        arity: None,
    };
    syn::visit::Visit::visit_block(&mut f, body);
    f.arity
}

/// The value held by these locals: one local, or a tuple of them.
fn slots_val(slots: Vec<Ident>) -> Val {
    let mut vals: Vec<Val> = slots
        .into_iter()
        .map(|o| Val::Op(Operand::Var(o)))
        .collect();
    if vals.len() == 1 {
        vals.pop().unwrap()
    } else {
        Val::Tuple(vals)
    }
}

/// True when an expression in tail position has no value, judged from its syntax.
fn is_unit_valued(e: &Expr) -> bool {
    match strip(e) {
        Expr::Return(_) | Expr::Break(_) | Expr::Continue(_) => true,
        // Buffer updates (`x.swap(i, j)` as a block's last expression).
        Expr::MethodCall(m) => {
            let args = match &*m.method.to_string() {
                "reverse" => 0,
                "sort_by" | "sort_unstable_by" | "fill" | "push" | "copy_from_slice"
                | "clone_from_slice" | "for_each" => 1,
                "swap" => 2,
                _ => return false,
            };
            m.args.len() == args
        }
        Expr::If(i) => {
            block_is_unit(&i.then_branch)
                && i.else_branch
                    .as_ref()
                    .is_none_or(|(_, e)| is_unit_valued(e))
        }
        Expr::Match(m) => m.arms.iter().all(|a| is_unit_valued(&a.body)),
        Expr::Block(b) => block_is_unit(&b.block),
        Expr::Tuple(t) => t.elems.is_empty(),
        Expr::Macro(m) => m.mac.path.segments.last().is_some_and(|s| {
            let n = s.ident.to_string();
            is_inert_macro(&n) && n != "matches" && n != "format"
        }),
        e => is_unit_expr(e),
    }
}

fn block_is_unit(b: &syn::Block) -> bool {
    match b.stmts.last() {
        None => true,
        Some(syn::Stmt::Expr(e, None)) => is_unit_valued(e),
        Some(_) => true,
    }
}

/// True when the statement may leave its block early.
fn stmt_may_exit(s: &syn::Stmt) -> bool {
    let mut v = ExitFinder {
        loop_depth: 0,
        labels: Vec::new(),
        found: false,
    };
    syn::visit::Visit::visit_stmt(&mut v, s);
    v.found
}

/// What the error at an iterator adapter that the chains are not read through says.
fn unread_adapter_message(adapter: &str) -> String {
    format!(
        "the iterator adapter `.{adapter}()` (chains of `iter`, `map`, `zip`, `enumerate`, `filter`, `rev`, `skip`, `take`, `step_by`, `take_while`, `skip_while`, `chunks`, `windows`, `copied` are read, so are `filter_map` and `map_while` whose closure is `if c {{ Some(e) }} else {{ None }}` or `c.then(|| e)`, and `chain`, `flat_map` or `flatten` followed only by `map`, `filter` or `copied` in a `for` loop without `break`, or in `sum`, `product` or `fold`, and `scan` whose closure always goes on, `Some(e)`, read by a `for` loop, `collect` or `sum`; write the loop by index)"
    )
}

fn block_may_exit_loop(b: &syn::Block) -> bool {
    let mut v = ExitFinder {
        loop_depth: 0,
        labels: Vec::new(),
        found: false,
    };
    syn::visit::Visit::visit_block(&mut v, b);
    v.found
}

fn contains_return(b: &syn::Block) -> bool {
    first_return(b).is_some()
}

fn contains_return_expr(e: &Expr) -> bool {
    let mut v = ReturnFinder { at: None };
    syn::visit::Visit::visit_expr(&mut v, e);
    v.at.is_some()
}

/// Whether a loop body has a `break` that leaves the loop itself (not one of its own
/// loops, nor a labelled one, which leaves the nested loops as it left the one loop).
fn breaks_out(body: &syn::Block) -> bool {
    struct Breaks {
        depth: usize,
        found: bool,
    }
    impl<'a> syn::visit::Visit<'a> for Breaks {
        fn visit_expr(&mut self, e: &'a Expr) {
            match e {
                Expr::Break(b) if b.label.is_none() && self.depth == 0 => self.found = true,
                Expr::ForLoop(_) | Expr::While(_) | Expr::Loop(_) => {
                    self.depth += 1;
                    syn::visit::visit_expr(self, e);
                    self.depth -= 1;
                }
                Expr::Closure(_) => {}
                _ => syn::visit::visit_expr(self, e),
            }
        }
    }
    let mut b = Breaks {
        depth: 0,
        found: false,
    };
    syn::visit::Visit::visit_block(&mut b, body);
    b.found
}

/// Whether a closure's body may `return` or use `?`, which written in a block would
/// leave the function instead of the closure.
fn leaves_the_closure(body: &Expr) -> bool {
    struct Exits(bool);
    impl<'a> syn::visit::Visit<'a> for Exits {
        fn visit_expr(&mut self, e: &'a Expr) {
            match e {
                Expr::Return(_) | Expr::Try(_) => self.0 = true,
                Expr::Closure(_) => {}
                _ => syn::visit::visit_expr(self, e),
            }
        }
    }
    let mut exits = Exits(false);
    syn::visit::Visit::visit_expr(&mut exits, body);
    exits.0
}

struct ExitFinder {
    loop_depth: usize,
    /// Labels of the loops being visited.
    labels: Vec<String>,
    found: bool,
}

impl<'a> syn::visit::Visit<'a> for ExitFinder {
    fn visit_expr(&mut self, e: &'a Expr) {
        match e {
            Expr::Return(_) => self.found = true,
            // A labelled exit leaves what is visited unless its loop is inside.
            Expr::Break(syn::ExprBreak { label: Some(l), .. })
            | Expr::Continue(syn::ExprContinue { label: Some(l), .. }) => {
                if !self.labels.contains(&l.ident.to_string()) {
                    self.found = true;
                }
            }
            Expr::Break(_) | Expr::Continue(_) if self.loop_depth == 0 => self.found = true,
            // A labelled block's own `break`s stay inside it.
            Expr::Block(b) if b.label.is_some() => {
                let n = self.labels.len();
                self.labels
                    .extend(b.label.as_ref().map(|l| l.name.ident.to_string()));
                syn::visit::visit_expr(self, e);
                self.labels.truncate(n);
            }
            Expr::ForLoop(_) | Expr::While(_) | Expr::Loop(_) => {
                let label = match e {
                    Expr::ForLoop(f) => f.label.as_ref(),
                    Expr::While(w) => w.label.as_ref(),
                    Expr::Loop(l) => l.label.as_ref(),
                    _ => None,
                };
                let n = self.labels.len();
                self.labels.extend(label.map(|l| l.name.ident.to_string()));
                self.loop_depth += 1;
                syn::visit::visit_expr(self, e);
                self.loop_depth -= 1;
                self.labels.truncate(n);
            }
            Expr::Closure(_) => {}
            _ => syn::visit::visit_expr(self, e),
        }
    }
}

/// The span of the first `return` in `b` (outside closures).
fn first_return(b: &syn::Block) -> Option<Span> {
    let mut v = ReturnFinder { at: None };
    syn::visit::Visit::visit_block(&mut v, b);
    v.at
}

struct ReturnFinder {
    /// The span of the first `return` found.
    at: Option<Span>,
}

impl<'a> syn::visit::Visit<'a> for ReturnFinder {
    fn visit_expr(&mut self, e: &'a Expr) {
        match e {
            Expr::Return(r) => {
                self.at.get_or_insert(r.span());
            }
            Expr::Closure(_) => {}
            _ => syn::visit::visit_expr(self, e),
        }
    }
}

/// `0.5` or `-0.5`: a float literal without a suffix.
fn is_untyped_float_lit(e: &Expr) -> bool {
    match strip(e) {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Float(f),
            ..
        }) => f.suffix().is_empty(),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => is_untyped_float_lit(&u.expr),
        _ => false,
    }
}

/// Puts each argument of a builtin derivative's template in its slot (`__ad_arg0`, ..).
struct TemplateArgs<'a>(&'a [(String, Expr)]);

impl VisitMut for TemplateArgs<'_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        if let Expr::Path(p) = e
            && let Some(id) = p.path.get_ident()
            && let Some((_, arg)) = self.0.iter().find(|(slot, _)| id == slot)
        {
            *e = arg.clone();
            return;
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
}

/// Replaces each float literal `v` of an expression by `__ad::lit_like(v, &(like))`.
struct FloatLitsLike(Expr);

impl VisitMut for FloatLitsLike {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        if let Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Float(v),
            ..
        }) = e
        {
            let like = &self.0;
            *e = syn::parse_quote!(__ad::lit_like(#v, &(#like)));
        } else {
            syn::visit_mut::visit_expr_mut(self, e);
        }
    }
}

/// The types of the scalars of a returned value of type `t`: its own, or its elements'
/// for an array of a literal length.
pub fn scalar_types(t: &syn::Type) -> Vec<syn::Type> {
    match (t, returned_array_len(t)) {
        (syn::Type::Array(a), Some(n)) => vec![(*a.elem).clone(); n],
        _ => vec![t.clone()],
    }
}

/// The length of an array type with a literal length (`[f64; 3]`), which a function
/// returns element by element.
pub fn returned_array_len(t: &syn::Type) -> Option<usize> {
    let syn::Type::Array(a) = t else {
        return None;
    };
    match &a.len {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(n),
            ..
        }) => n.base10_parse().ok().filter(|&n: &usize| n > 0),
        _ => None,
    }
}

/// The message of a panic of `m`, an `unwrap()` of an `Option` or its `expect(msg)`.
fn unwrap_message(m: &syn::ExprMethodCall) -> TokenStream {
    match m.args.first() {
        Some(msg) if m.method == "expect" => quote!(#msg),
        _ => quote!("called `Option::unwrap()` on a `None` value"),
    }
}

/// A pattern that matches any value, binding it whole: `v`, `mut v`, `&v`, `_`.
fn binds_whole(p: &Pat) -> bool {
    match p {
        Pat::Ident(pi) => pi.subpat.is_none(),
        Pat::Wild(_) => true,
        Pat::Reference(r) => binds_whole(&r.pat),
        Pat::Type(t) => binds_whole(&t.pat),
        Pat::Paren(p) => binds_whole(&p.pat),
        _ => false,
    }
}

/// For `split_first`, `split_last` and their `_mut` forms: whether the element split off
/// is the first, and whether the parts are mutable.
fn split_end(found: &syn::ExprMethodCall) -> Option<(bool, bool)> {
    match found.method.to_string().as_str() {
        "split_first" => Some((true, false)),
        "split_first_mut" => Some((true, true)),
        "split_last" => Some((false, false)),
        "split_last_mut" => Some((false, true)),
        _ => None,
    }
}

/// `x.split_first().unwrap()` (or `split_last`, their `_mut` forms, `expect`).
fn is_split_unwrap(e: &Expr) -> bool {
    matches!(strip(e), Expr::MethodCall(m)
        if matches!(m.method.to_string().as_str(), "unwrap" | "expect")
            && matches!(strip(&m.receiver), Expr::MethodCall(f) if split_end(f).is_some()))
}

/// The values that the branches of `e` (an `if`, a `match` or a block) end in, through
/// nested `if`s, `match`es and blocks, with whether every branch ends in one (an `if`
/// without `else`, or a branch ending in a statement, does not).
fn branch_values(e: &Expr) -> (Vec<&Expr>, bool) {
    fn collect<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) -> bool {
        let block_tail = |b: &'e syn::Block| match b.stmts.last() {
            Some(syn::Stmt::Expr(t, None)) => Some(t),
            _ => None,
        };
        let in_block = |b: &'e syn::Block, out: &mut Vec<&'e Expr>| {
            block_tail(b).is_some_and(|t| collect(t, out))
        };
        match strip(e) {
            Expr::If(i) => {
                let then = in_block(&i.then_branch, out);
                let els = i
                    .else_branch
                    .as_ref()
                    .is_some_and(|(_, els)| collect(els, out));
                then && els
            }
            Expr::Block(b) => in_block(&b.block, out),
            Expr::Match(m) => {
                // (Every arm's values, also after one without any.)
                let mut all = true;
                for a in &m.arms {
                    all &= collect(&a.body, out);
                }
                all
            }
            t => {
                out.push(t);
                true
            }
        }
    }
    let mut out = Vec::new();
    let complete = collect(e, &mut out);
    (out, complete)
}

/// `let w: &Array2<F> = &s.w;` (a reference to a member, or to an element's member, of
/// a type that names an `ndarray` array's number of dimensions): the name, the number of
/// dimensions and the element type.
fn member_array(l: &syn::Local) -> Option<(Ident, usize, Option<syn::Type>)> {
    let Pat::Type(pt) = &l.pat else {
        return None;
    };
    let Pat::Ident(pi) = &*pt.pat else {
        return None;
    };
    let syn::Type::Reference(r) = &*pt.ty else {
        return None;
    };
    let Expr::Reference(init) = strip(&l.init.as_ref()?.expr) else {
        return None;
    };
    if !matches!(strip(&init.expr), Expr::Field(_)) {
        return None;
    }
    let syn::Type::Path(tp) = &*r.elem else {
        return None;
    };
    if !crate::builtins::is_ndarray_type_name(&tp.path.segments.last()?.ident.to_string()) {
        return None;
    }
    let rank = crate::builtins::ndarray_rank(&r.elem).filter(|r| matches!(r, 1 | 2))?;
    Some((
        pi.ident.clone(),
        rank,
        crate::builtins::ndarray_elem(&r.elem),
    ))
}

#[cfg(test)]
mod short_base_tests {
    use super::short_base;

    #[test]
    fn user_names_stay_whole() {
        assert_eq!(short_base("xcentered"), "xcentered");
        assert_eq!(short_base("ad1"), "ad1");
    }

    #[test]
    fn generated_names_lose_their_counters() {
        assert_eq!(short_base("__ad55_nb___ad10_b"), "nb_b");
        assert_eq!(short_base("__nd___ad9_t"), "nd_t");
        // Runtime names without a counter keep their words.
        assert_eq!(short_base("__ad_keep___ad16_t"), "ad_keep_t");
        assert_eq!(short_base("__ad_iter1"), "ad_iter1");
        // Nothing but counters: the name as it was, without its underscores.
        assert_eq!(short_base("__ad12"), "ad12");
    }
}
