//! Reverse mode: a forward sweep that runs the primal and records what cannot be
//! recomputed, then a reverse sweep that visits the statements last to first and
//! propagates adjoints.
//!
//! The reverse sweep keeps one invariant: when it reaches a statement, every local it reads
//! holds the value it had when the forward sweep reached that statement. Overwrites of such
//! values are undone by popping their recorded old values. A nested block (a branch, a loop
//! body) starts its reverse by re-creating its own `let`s: the cheap ones whose inputs the
//! rest of the block does not overwrite are recomputed, the others popped. Locals of the
//! function's outermost block are still in scope and need nothing. Each recording site has
//! its own store: a `Slot` (on the stack) when it runs at most once per call, a `Vec` when
//! it is inside a loop.

use crate::analysis::{Analysis, op_reads, stmt_reads, stmt_writes};
use crate::builtins::{has_singular_partials, is_cheap_math};
use crate::calls::{
    Refs, augmented_call, augmented_call_on, primal_arg, primal_call, pullback_call,
};
use crate::carry::{CarryPlan, plain_range};
use crate::collections::{HashMap, HashSet};
use crate::forward::{diff_operands, partial_at, partials, primal_op};
use crate::ir::*;
use crate::lower::is_range_tokens;
use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};
use std::cell::RefCell;

pub struct Reverse<'a> {
    pub an: &'a Analysis,
    pub refs: Refs<'a>,
    kinds: &'a HashMap<String, VarKind>,
    /// Declarations of the recording stores, emitted before the forward sweep.
    tapes: RefCell<Vec<TokenStream>>,
    /// The store of each local of a nested block that is recorded rather than recomputed.
    kept: RefCell<HashMap<String, Ident>>,
    /// Locals of a nested block that the reverse reads back from the variable they were
    /// last assigned to (see [`Self::final_copy`]).
    copied: RefCell<HashMap<String, Ident>>,
    counter: RefCell<usize>,
    /// The blocks being emitted, outermost first (see [`Self::must_record`]).
    frames: RefCell<Vec<Frame>>,
    /// Set by a loop just before it emits its body.
    next_is_loop_body: RefCell<bool>,
    /// Stores declared inside the loop being emitted, to reserve before it.
    loop_stores: RefCell<Vec<Vec<Ident>>>,
    /// The enclosing loops' adjoints kept in locals (see [`CarryPlan`]), innermost last.
    carried: RefCell<Vec<CarryPlan>>,
    /// Locals computed again in the middle of their block's reverse (see
    /// [`Self::late_point`]).
    late_vars: RefCell<HashSet<String>>,
    /// The `for` loops being emitted, outermost first.
    loops: RefCell<Vec<LoopInfo>>,
    /// Locals that may hold a tuple: results of calls, and what is bound from them. Their
    /// adjoints are added with `__ad::add_to`, since tuples have no `+=`.
    maybe_tuples: RefCell<HashSet<String>>,
    /// Locals read as places somewhere (indexed, lent, iterated): of the call results,
    /// those that are buffers.
    placed: RefCell<HashSet<String>>,
    /// Local buffers that the reverse sweep fills again instead of restoring (see
    /// [`crate::replay`]).
    replayed: RefCell<HashSet<String>>,
    /// The sweeps become a closure that owns what the forward sweep recorded (see
    /// [`crate::kept_state`]). Calls then drop the augmented call's state and augment
    /// again in the reverse sweep, right before their pullback, so that the closure holds
    /// nothing a callee's state could borrow; and stores of loops keep fewer values
    /// inline, so that the closure stays small to move.
    kept_state: bool,
    /// See [`Self::recomputing`].
    recomputing: bool,
    /// The `&mut` float-buffer parameters (`&mut [f64]`, `&mut Vec<f64>`): lent to a call
    /// and overwritten after it, they are lent as locals are (see [`Self::augmented_arg`]).
    mutable_buffer_params: HashSet<String>,
    /// The seed of the result and the result, when the forward sweep runs with the seed
    /// known (a companion or a pullback that runs both sweeps): loops of the outermost
    /// block may then be reversed an iteration at a time (see [`crate::fused`]).
    known_seed: Option<(TokenStream, Operand)>,
    /// Parameters whose adjoints the companion declares only after the forward sweep.
    late_shadows: HashSet<String>,
    /// Set by a fused loop just before it emits its body.
    next_is_fused: RefCell<bool>,
    /// Locals whose adjoints a fused loop declared before it.
    declared_early: RefCell<HashSet<String>>,
    /// The loops being emitted that overwrite a buffer element by element and save its
    /// old contents whole instead (see [`Self::whole_overwrite`]), innermost last.
    whole_saves: RefCell<Vec<WholeSave>>,
    /// The members of `&mut` struct parameters whose shadows follow their lengths through
    /// the forward sweep (see [`Self::member_seeds`]).
    fitted: RefCell<Vec<Place>>,
    /// Slice parameters, and local buffers of the outermost block (added by
    /// [`Self::sweeps`]), whose elements the reverse sweep reads and writes without a
    /// second bounds check (see [`Self::replayed`]). `None` where nothing is (a closure's
    /// body).
    replayable: RefCell<Option<HashSet<String>>>,
}

/// A loop `for j in 0..e { .. buf[j] = v; .. }` whose body reads nothing of `buf`: when its
/// writes need records, the loop saves `buf[..e]` in one copy before it runs and puts it
/// back after its reverse, instead of recording and restoring each element.
struct WholeSave {
    buf: String,
    /// The loop variable and its copies.
    vars: HashSet<String>,
    /// Whether a write of the body needed its record (and left it to the save).
    used: bool,
}

/// Where a block sits.
#[derive(Clone, Copy)]
struct Level {
    /// The function's outermost block: its locals stay in scope for the reverse sweep.
    top: bool,
    /// Inside a loop: stores are stacks.
    in_loop: bool,
}

pub struct Sweeps {
    pub tapes: TokenStream,
    pub forward: TokenStream,
    pub reverse: TokenStream,
    /// Adjoint declarations of the outermost block's active locals.
    pub adjoints: TokenStream,
}

impl<'a> Reverse<'a> {
    pub fn new(an: &'a Analysis, kinds: &'a HashMap<String, VarKind>) -> Self {
        Reverse {
            an,
            refs: Refs { kinds },
            kinds,
            tapes: RefCell::new(Vec::new()),
            kept: RefCell::new(HashMap::default()),
            copied: RefCell::new(HashMap::default()),
            counter: RefCell::new(0),
            frames: RefCell::new(Vec::new()),
            next_is_loop_body: RefCell::new(false),
            loop_stores: RefCell::new(Vec::new()),
            carried: RefCell::new(Vec::new()),
            late_vars: RefCell::new(HashSet::default()),
            loops: RefCell::new(Vec::new()),
            maybe_tuples: RefCell::new(HashSet::default()),
            placed: RefCell::new(HashSet::default()),
            replayed: RefCell::new(HashSet::default()),
            kept_state: false,
            recomputing: false,
            mutable_buffer_params: HashSet::default(),
            known_seed: None,
            late_shadows: HashSet::default(),
            next_is_fused: RefCell::new(false),
            declared_early: RefCell::new(HashSet::default()),
            whole_saves: RefCell::new(Vec::new()),
            fitted: RefCell::new(Vec::new()),
            replayable: RefCell::new(None),
        }
    }

    /// This sweep generator for a function whose forward sweep knows the seed `seed` of
    /// its one scalar result `ret`, and the adjoints of its parameters but those in
    /// `late_shadows`. Not for kept state, whose seed comes later.
    pub fn with_known_seed(
        mut self,
        seed: TokenStream,
        ret: Operand,
        late_shadows: HashSet<String>,
    ) -> Self {
        if !self.kept_state {
            self.known_seed = Some((seed, ret));
            self.late_shadows = late_shadows;
        }
        self
    }

    /// This sweep generator for a closure that owns the recorded values.
    pub fn for_kept_state(mut self) -> Self {
        self.kept_state = true;
        self
    }

    /// This sweep generator for a function whose `&mut` float-buffer parameters are
    /// `params`.
    pub fn with_mutable_buffer_params(mut self, params: HashSet<String>) -> Self {
        self.mutable_buffer_params = params;
        self
    }

    /// This sweep generator for a function whose slice parameters `params` keep their
    /// lengths through the call, and whose shadows of them (where they have any) are cut
    /// to those lengths on entry; its local buffers of fixed length are found in
    /// [`Self::sweeps`].
    pub fn with_replayable(self, params: HashSet<String>) -> Self {
        *self.replayable.borrow_mut() = Some(params);
        self
    }

    /// `place` as the reverse sweep reads it (`write`: writes it), or its shadow's element
    /// (`adjoint`). An element at one index of a parameter or local buffer in
    /// [`Self::replayable`] is reached without a bounds check (`__ad::replayed_at`): the
    /// reverse sweep reaches an element only where the forward sweep indexed the same
    /// slice at the same index, which checked it, and neither the slice nor its shadow
    /// has changed length since. The compiler cannot see that, and a check in a reverse
    /// loop keeps it from vectorising the loop.
    fn replayed(&self, place: &Place, adjoint: bool, write: bool) -> TokenStream {
        let plain = || match adjoint {
            true => place.adjoint(),
            false => place.primal(),
        };
        let [Proj::Index(i)] = place.proj.as_slice() else {
            return plain();
        };
        let listed = (self.replayable.borrow().as_ref())
            .is_some_and(|r| r.contains(&place.base.to_string()));
        if !listed || is_range_tokens(i) {
            return plain();
        }
        let b = match adjoint {
            true => adjoint_name(&place.base),
            false => place.base.clone(),
        };
        crate::ir::replayed_element(&b, i, write).unwrap_or_else(plain)
    }

    /// `primal_op(op)` as the reverse sweep computes it again: a load replayed (see
    /// [`Self::replayed`]).
    fn recomputed_op(&self, op: &Op) -> TokenStream {
        match op {
            Op::Load(p) => self.replayed(p, false, false),
            _ => primal_op(op),
        }
    }

    /// This sweep generator for a pullback that runs the function's forward sweep again
    /// (its augmented call ran the function itself): statements kept only for their
    /// effect (`println!`, `no_grad(log(k));`) ran there, and do not run twice.
    pub fn recomputing(mut self) -> Self {
        self.recomputing = true;
        self
    }

    /// Whether an overwrite of `v` at the current point must record the old value: when
    /// some read of `v` is reversed after it. Those are the reads before it (or in the
    /// same statement) in each enclosing block, and, for a `v` that outlives an iteration,
    /// every read in an enclosing loop body (the next iteration reads it again). The
    /// search stops at the block that declares `v`. A read later in program order is
    /// reversed first and sees the newer value, so `s += ..` accumulators need nothing.
    fn must_record(&self, v: &Ident) -> bool {
        self.record_need(v) != Need::No
    }

    /// Whether a method called on `recv` may change it (`&mut self`): a reference
    /// parameter or an owned buffer that can be borrowed mutably, or a local bound with
    /// `let mut` (a struct a constant call returned, `let mut st = St::zeros(n);`).
    fn may_change_receiver(&self, recv: &Place) -> bool {
        self.refs.is_mutable(recv)
            || (recv.is_whole() && self.an.mutable_lets.contains(&recv.base.to_string()))
    }

    /// Whether a shared borrow of the local `v`, taken by the statement being emitted and
    /// kept until that statement's reverse, would meet an overwrite of `v` or outlive it:
    /// a later statement writes it, a loop around writes it again in its next iteration,
    /// or it is declared in a nested block, whose locals the reverse sweep re-creates.
    fn overwritten_while_borrowed(&self, v: &Ident) -> bool {
        let name = v.to_string();
        let frames = self.frames.borrow();
        for (i, f) in frames.iter().enumerate().rev() {
            if f.stmt_writes
                .iter()
                .skip(f.k + 1)
                .any(|w| w.contains(&name))
            {
                return true;
            }
            if f.decls.contains(&name) {
                return i > 0;
            }
            if f.fused {
                // Each iteration is reversed before the next one runs.
                return false;
            }
            if f.is_loop_body && f.writes.contains(&name) {
                return true;
            }
        }
        false
    }

    /// An argument of the augmented call `c` whose state is kept: a local buffer lent by
    /// shared reference and overwritten before the call's reverse (see
    /// [`Self::overwritten_while_borrowed`]) is lent through the callee's `__ad_lend`,
    /// which makes a copy that lives to the end of the function where the callee is a
    /// custom rule, whose pullback may borrow it (see [`crate::calls::lend_fn`]).
    fn augmented_arg(&self, c: &Call, a: &Arg) -> TokenStream {
        let arg = primal_arg(a, &self.refs);
        match a {
            // (A local the lowering took for a float may hold a vector a call returned.)
            Arg::Ref(p, false) | Arg::Copied(p)
                if (self.is_lendable_buffer(&p.base)
                    || (p.is_whole()
                        && matches!(
                            self.kinds.get(&p.base.to_string()),
                            Some(VarKind::Scalar)
                        )))
                    && !self.an.structs.contains_key(&p.base.to_string())
                    && self.overwritten_while_borrowed(&p.base) =>
            {
                let copies = self.fresh("copies");
                // First among the stores, so that it is dropped after every state.
                self.tapes
                    .borrow_mut()
                    .insert(0, quote!(let #copies = __ad::LentCopies::new();));
                crate::calls::lent_arg(c, &copies, arg)
            }
            _ => arg,
        }
    }

    /// [`Self::must_record`], telling which rule asks for the record.
    fn record_need(&self, v: &Ident) -> Need {
        if !self.an.live_needed.contains(&v.to_string()) {
            return Need::No;
        }
        let name = v.to_string();
        let frames = self.frames.borrow();
        for (i, f) in frames.iter().enumerate().rev() {
            // A read up to and including the statement being emitted.
            if f.k >= f.len || f.first_read.get(&name).is_some_and(|&i| i <= f.k) {
                return Need::Yes;
            }
            if f.decls.contains(&name) {
                return Need::No;
            }
            if f.is_loop_body && f.first_read.contains_key(&name) {
                return Need::NextIteration(i);
            }
            if f.fused {
                return Need::No;
            }
        }
        Need::No
    }

    /// Whether a write to `place` needs no record although a later iteration of the loop
    /// body `frame` reads the buffer: an earlier statement of that body, run in every
    /// iteration, is `for j in 0..e { buf[j] = .. }`, and `place` is `buf[i]` for the
    /// variable of a loop `a..e` (the same `e`, not written in the body). The reverse of
    /// that earlier loop puts back every element the write can touch, so what the
    /// write's own record would restore is overwritten before anything reads it.
    fn covered_by_earlier_overwrite(&self, place: &Place, frame: usize) -> bool {
        let [Proj::Index(idx)] = place.proj.as_slice() else {
            return false;
        };
        let idx = idx.to_string();
        let loops = self.loops.borrow();
        let Some(end) = loops
            .iter()
            .rev()
            .find(|l| l.vars.contains(&idx))
            .and_then(|l| l.end.clone())
        else {
            return false;
        };
        let frames = self.frames.borrow();
        let f = &frames[frame];
        let base = place.base.to_string();
        let mut end_reads = HashSet::default();
        crate::lower::walk_idents(&end.parse().unwrap_or_default(), &mut |id| {
            end_reads.insert(id.to_string());
        });
        end_reads.is_disjoint(&f.writes)
            && f.overwrites
                .iter()
                .any(|(i, b, e)| *i < f.k && *b == base && *e == end)
    }

    pub fn sweeps(&self, body: &Block) -> Sweeps {
        collect_maybe_tuples(body, &mut self.maybe_tuples.borrow_mut());
        member_loads_in_struct_values(body, &mut self.maybe_tuples.borrow_mut());
        collect_placed(body, &mut self.placed.borrow_mut());
        if let Some(r) = self.replayable.borrow_mut().as_mut() {
            r.extend(crate::fixed_lengths::fixed_length_locals(body));
        }
        // A buffer that the reverse sweep never reads needs neither records nor a refill.
        *self.replayed.borrow_mut() = crate::replay::replayed_buffers(body, self.kinds)
            .into_iter()
            .filter(|b| self.an.needed.contains(b))
            .collect();
        let level = Level {
            top: true,
            in_loop: false,
        };
        let (entry, seeded) = self.member_seeds(body);
        let (forward, reverse) = self.block(body, level, quote!());
        let forward = quote!(#entry #forward #seeded);
        let early = self.declared_early.borrow().clone();
        let adjoints = self.adjoint_decls_except(body, &early, None);
        let tapes: TokenStream = self.tapes.borrow().iter().cloned().collect();
        Sweeps {
            tapes,
            forward,
            reverse,
            adjoints,
        }
    }

    /// The members of `&mut` struct parameters whose lengths may change in the forward
    /// sweep, here (`s.w.push(v)`, `s.w = v`, `s.w.clear()`) or in a call given the struct
    /// mutably that the function indexes after (`s.redo(); s.w[0]`), and whose shadows are
    /// active (not members of rows, indexed twice, which keep their seeds in place). The
    /// caller's shadow of such a member holds the seed of its final values: it is taken
    /// aside when the forward sweep starts, the shadow follows the member's length with
    /// zeros, and the seed is added into it when the forward sweep ends, over the elements
    /// that both have (the rest of the member has no seed; a callee's pullback, which runs
    /// its own forward sweep first, receives the caller's adjoints as such a seed). The
    /// shadows of the other members the function indexes are made at least as long as the
    /// members. Returns the code for the start of the forward sweep and for its end.
    fn member_seeds(&self, body: &Block) -> (TokenStream, TokenStream) {
        if self.kept_state {
            return (quote!(), quote!());
        }
        let mut uses = MemberUses::default();
        uses.block(body, self);
        // A member of a struct parameter (`&mut` where `mutable`), with an active shadow
        // that is declared before the forward sweep, not holding rows.
        let shadowed = |m: &Place, mutable: bool| {
            let base = m.base.to_string();
            matches!(self.kinds.get(&base), Some(VarKind::Ref { mutable: mu }) if *mu || !mutable)
                && !self.late_shadows.contains(&base)
                && self.an.place_active(m)
                && !uses.rows.contains(&m.primal().to_string())
        };
        let mut seen = HashSet::default();
        let indexed_and_lent =
            (uses.indexed.iter()).filter(|m| uses.lent.contains(&m.base.to_string()));
        let fitted: Vec<Place> = (uses.resized.iter().chain(indexed_and_lent))
            .filter(|m| shadowed(m, true) && seen.insert(m.primal().to_string()))
            .cloned()
            .collect();
        let (mut entry, mut seeded) = (TokenStream::new(), TokenStream::new());
        // Other members the function indexes: made at least as long as the member (a
        // callee may have grown the member where the caller, which does not index it,
        // left its shadow as it was).
        for m in &uses.indexed {
            if shadowed(m, false) && seen.insert(m.primal().to_string()) {
                let (p, a) = (m.primal(), m.adjoint());
                entry.extend(quote!(__ad::member_grow(&mut #a, &#p);));
            }
        }
        for m in &fitted {
            let (p, a) = (m.primal(), m.adjoint());
            let seed = self.fresh("member_seed");
            entry.extend(quote!(let #seed = __ad::member_take_seed(&mut #a, &#p);));
            seeded.extend(quote!(__ad::member_add_seed(&mut #a, #seed);));
        }
        *self.fitted.borrow_mut() = fitted;
        (entry, seeded)
    }

    /// After a call given `&mut` struct parameters: the shadows of their fitted members
    /// (see [`Self::member_seeds`]) take the members' new lengths, with zeros.
    fn fit_member_shadows(&self, c: &Call) -> TokenStream {
        let mut lent = mutable_args(c);
        if let Callee::Method(recv, _) = &c.callee {
            lent.push(recv);
        }
        let mut out = TokenStream::new();
        for m in self.fitted.borrow().iter() {
            if lent.iter().any(|p| p.is_whole() && p.base == m.base) {
                let (p, a) = (m.primal(), m.adjoint());
                out.extend(quote!(__ad::member_fit(&mut #a, &#p);));
            }
        }
        out
    }

    fn fresh(&self, base: &str) -> Ident {
        let mut c = self.counter.borrow_mut();
        *c += 1;
        format_ident!("__ad_{}{}", base, *c)
    }

    fn new_store(&self, name: &Ident, level: Level) {
        if let Some(stores) = self.loop_stores.borrow_mut().last_mut() {
            stores.push(name.clone());
        }
        self.declare_store(name, level);
    }

    /// Declares the store `name` for values recorded at `level`, without setting room
    /// aside for a loop's values (see [`Self::new_store`]).
    fn declare_store(&self, name: &Ident, level: Level) {
        // A store of a loop that is not inside another receives one value per trip of
        // one call: often few (the function is a callee called in someone's loop), so its
        // first values live inline. Stores of inner loops grow over all the iterations of
        // the outer ones, straight into blocks of the thread's cached tape memory.
        let depth = self.loop_stores.borrow().len();
        let decl = if !level.in_loop {
            quote!(let mut #name = __ad::Slot::new();)
        } else if depth <= 1 && !self.kept_state {
            quote!(let mut #name = __ad::Stack::new();)
        } else if depth <= 1 {
            // Fewer values inline, and the spill behind a pointer: the closure that owns
            // the store is moved to its caller.
            quote!(let mut #name = __ad::Stack::<_, 8, __ad::ThinTape<_>>::with_inline();)
        } else {
            quote!(let mut #name = __ad::Tape::new();)
        };
        self.tapes.borrow_mut().push(decl);
    }

    /// Records `value`; returns the push and the expression that takes it back.
    fn record(&self, value: TokenStream, level: Level) -> (TokenStream, TokenStream) {
        let t = self.fresh("tape");
        self.new_store(&t, level);
        (quote!(#t.push(#value);), quote!(__ad::take(#t.pop())))
    }

    /// Records a copy of the slice `slice` in a loop, in a store that keeps the copies'
    /// values flat (`SavedSlices`); returns the save and the expression that reads it back.
    fn save_slice(&self, slice: TokenStream, level: Level) -> (TokenStream, TokenStream) {
        debug_assert!(level.in_loop);
        let t = self.fresh("tape");
        if let Some(stores) = self.loop_stores.borrow_mut().last_mut() {
            stores.push(t.clone());
        }
        self.tapes
            .borrow_mut()
            .push(quote!(let mut #t = __ad::SavedSlices::new();));
        (quote!(#t.save(#slice);), quote!(__ad::take(#t.pop())))
    }

    /// A value of the forward sweep that the reverse sweep reads at the same statement:
    /// a local at the top level, recorded elsewhere.
    fn keep(&self, name: &Ident, value: TokenStream, level: Level) -> (TokenStream, TokenStream) {
        if level.top {
            (quote!(let #name = #value;), quote!(#name))
        } else {
            let (push, load) = self.record(quote!(#name), level);
            (quote!(let #name = #value; #push), load)
        }
    }

    /// [`Self::keep`] for a callee's state, which is recorded only when it is not `()`
    /// (see `autodiff_core`'s `callee_states`).
    fn keep_callee_state(
        &self,
        name: &Ident,
        value: TokenStream,
        level: Level,
    ) -> (TokenStream, TokenStream) {
        if level.top {
            return self.keep(name, value, level);
        }
        let t = self.fresh("tape");
        self.new_store(&t, level);
        let any = quote!(
            use __ad::PickAny as _;
        );
        (
            quote!(let #name = #value; { #any __ad::pick(&#name).keep(&mut #t, #name); }),
            quote!({ #any __ad::pick_from(&#t).take_back(&mut #t) }),
        )
    }

    /// Like [`Self::keep`], for a value the forward sweep goes on using (a loop's range).
    fn keep_clone(
        &self,
        name: &Ident,
        value: TokenStream,
        level: Level,
    ) -> (TokenStream, TokenStream) {
        if level.top {
            (quote!(let #name = #value;), quote!(#name))
        } else {
            let (push, load) = self.record(quote!(::core::clone::Clone::clone(&#name)), level);
            (quote!(let #name = #value; #push), load)
        }
    }

    /// The push of a nested block's local into its own store. A struct built in the body
    /// is kept member by member (its members are scalars and constants), so the struct
    /// need not be `Copy` and the code, differentiated again, records only scalars.
    fn keep_local(&self, var: &Ident, level: Level) -> TokenStream {
        match self.an.structs.get(&var.to_string()) {
            Some((_, members)) => members
                .iter()
                .map(|m| self.keep_as(&member_key(var, m), quote!(#var.#m), level))
                .collect(),
            None => self.keep_as(&var.to_string(), self.kept_value(var), level),
        }
    }

    /// The value of `var` to record: `var` itself, or a copy where `var` is a call's
    /// result that the forward sweep goes on reading as a buffer (`let h = layer(x);
    /// h[0]`, a vector the store would otherwise take away).
    fn kept_value(&self, var: &Ident) -> TokenStream {
        let name = var.to_string();
        if self.maybe_tuples.borrow().contains(&name) && self.placed.borrow().contains(&name) {
            quote!(__ad::copy_of(&#var))
        } else {
            quote!(#var)
        }
    }

    /// Records `value` in the store kept for `key` (a local, or a struct's member).
    fn keep_as(&self, key: &str, value: TokenStream, level: Level) -> TokenStream {
        let t = format_ident!("__ad_keep_{}", key.replace('.', "_"));
        let fresh = self
            .kept
            .borrow_mut()
            .insert(key.to_string(), t.clone())
            .is_none();
        if fresh {
            if self.is_dead_scalar(key) {
                self.tapes
                    .borrow_mut()
                    .push(quote!(let mut #t = __ad::DeadStore::new();));
            } else if self.is_dead_result(key) {
                // (No room set aside: a float's values are not recorded.)
                self.declare_store(&t, level);
            } else {
                self.new_store(&t, level);
            }
        }
        if self.is_dead_result(key) {
            let any = quote!(
                use __ad::PickAny as _;
            );
            return quote!({ #any let __ad_v = #value; __ad::pick(&__ad_v).keep_dead(&mut #t, __ad_v); });
        }
        quote!(#t.push(#value);)
    }

    /// Whether `key` names a call's result (or a copy of one) whose value the reverse
    /// sweep never reads: it is recorded only where its type has a shape, not for a float
    /// (see `autodiff_core`'s `callee_states`).
    fn is_dead_result(&self, key: &str) -> bool {
        self.an.dead.contains(key)
            && self.maybe_tuples.borrow().contains(key)
            && !self.an.structs.contains_key(key)
            && self.an.active.contains(key)
    }

    /// Whether `key` names a float local whose value the reverse sweep never reads (see
    /// [`crate::analysis::dead_values`]): its store records nothing and gives back zeros.
    fn is_dead_scalar(&self, key: &str) -> bool {
        self.an.dead.contains(key)
            && self.kinds.get(key) == Some(&VarKind::Scalar)
            && !self.an.structs.contains_key(key)
            && !self.maybe_tuples.borrow().contains(key)
            && self.an.active.contains(key)
    }

    /// Whether `var` was kept by [`Self::keep_local`].
    fn is_kept(&self, var: &Ident) -> bool {
        let kept = self.kept.borrow();
        match self.an.structs.get(&var.to_string()) {
            Some((_, members)) => members
                .first()
                .is_some_and(|m| kept.contains_key(&member_key(var, m))),
            None => kept.contains_key(&var.to_string()),
        }
    }

    fn load_local(&self, var: &Ident) -> TokenStream {
        let kept = self.kept.borrow();
        let load = |key: &str| {
            let t = kept.get(key).expect("a kept local");
            if self.is_dead_result(key) {
                quote!({ use __ad::PickAny as _; __ad::pick_from(&#t).take_back_dead(&mut #t) })
            } else {
                quote!(__ad::take(#t.pop()))
            }
        };
        match self.an.structs.get(&var.to_string()) {
            Some((path, members)) => {
                let values = members.iter().map(|m| load(&member_key(var, m)));
                quote!(#path { #(#members: #values),* })
            }
            None => load(&var.to_string()),
        }
    }

    fn is_buffer(&self, v: &Ident) -> bool {
        matches!(self.kinds.get(&v.to_string()), Some(VarKind::Buffer))
    }

    /// Whether `v` is a buffer whose contents the function may overwrite after lending
    /// it: a local buffer, or a `&mut` float-buffer parameter.
    fn is_lendable_buffer(&self, v: &Ident) -> bool {
        self.is_buffer(v) || self.mutable_buffer_params.contains(&v.to_string())
    }

    fn relevant(&self, v: &Ident) -> bool {
        self.an.is_active(v) || self.an.needs(v)
    }

    // ---------------------------------------------------------------- blocks

    /// The forward and reverse code of a block. The reverse of a nested block is wrapped in
    /// its own scope with its locals re-created and `seeds` run first.
    fn block(&self, b: &Block, level: Level, seeds: TokenStream) -> (TokenStream, TokenStream) {
        let is_loop_body = self.next_is_loop_body.replace(false);
        let mut frame = Frame::new(b, is_loop_body);
        frame.fused = self.next_is_fused.replace(false);
        crate::lower::walk_idents(&seeds, &mut |id| {
            frame.seeded.insert(id.to_string());
        });
        self.frames.borrow_mut().push(frame);
        let mut fwds = Vec::new();
        let mut revs = Vec::new();
        for (k, s) in b.iter().enumerate() {
            if let Some(f) = self.frames.borrow_mut().last_mut() {
                f.k = k;
            }
            let (f, r) = self.stmt(s, level, b, k);
            fwds.push(f);
            revs.push(r);
        }
        let late = self
            .frames
            .borrow_mut()
            .last_mut()
            .map(|f| std::mem::take(&mut f.late))
            .unwrap_or_default();
        for (k1, recompute) in late {
            revs[k1].extend(recompute);
        }
        revs.reverse();
        let rev: TokenStream = revs.into_iter().collect();
        if level.top {
            self.frames.borrow_mut().pop();
            let fwd: TokenStream = fwds.into_iter().collect();
            return (fwd, quote!(#seeds #rev));
        }
        // Mutable locals and buffers are recorded with their final value: a buffer at the
        // end of the block, a float right after the statement that last writes it. A float
        // recorded after a call (`s.tanh()` of a sum formed in a loop) would be live
        // across it, and no vector register survives a call: the code would keep the sum
        // in memory, loading and storing it on every step of its loop.
        for (k, s) in b.iter().enumerate() {
            if let Stmt::Let { var, mutable, op } = s
                && self.kept_at_end(var, *mutable, op)
            {
                // (A value that may not be `Copy`, a call's vector, is recorded at the end:
                // recording moves it.)
                let name = var.to_string();
                let at = if self.kinds.get(&name) == Some(&VarKind::Scalar)
                    && !self.an.structs.contains_key(&name)
                    && !self.maybe_tuples.borrow().contains(&name)
                    && !self.placed.borrow().contains(&name)
                {
                    last_write(b, k, var)
                } else {
                    b.len() - 1
                };
                fwds[at].extend(self.keep_local(var, level));
            }
        }
        let fwd: TokenStream = fwds.into_iter().collect();
        // The block's frame is still there: the prologue asks which locals are late.
        // Buffers filled again come first: the prologue may compute locals from them.
        let mut prologue = TokenStream::new();
        for (k, s) in b.iter().enumerate() {
            if let Some(buf) = crate::replay::filled_buffer(s)
                && self.replayed.borrow().contains(&buf.to_string())
            {
                let at = |p: &Place, write: bool| self.replayed(p, false, write);
                prologue.extend(crate::replay::replay(b, k, &at));
            }
        }
        let (locals, defined) = self.prologue(b);
        prologue.extend(locals);
        let adjoints = self.adjoint_decls_except(b, &HashSet::default(), Some(&defined));
        self.frames.borrow_mut().pop();
        (fwd, quote!({ #prologue #adjoints #seeds #rev }))
    }

    /// Whether a mutable local or a buffer is recorded with its final value in a loop
    /// body (rather than when it is bound).
    fn kept_at_end(&self, var: &Ident, mutable: bool, op: &Op) -> bool {
        self.relevant(var) && (mutable || self.is_buffer(var)) && !matches!(op, Op::Call(_))
    }

    /// Re-creates, at the start of a nested block's reverse, the block's locals that the
    /// reverse sweep reads. Returns the code and the names of the `let` locals it binds.
    fn prologue(&self, b: &Block) -> (TokenStream, HashSet<String>) {
        let mut out = TokenStream::new();
        let mut defined = HashSet::default();
        for (k, s) in b.iter().enumerate() {
            match s {
                Stmt::Let { var, mutable, op } => {
                    if !self.relevant(var) {
                        continue;
                    }
                    let m = if *mutable || self.is_buffer(var) {
                        quote!(mut)
                    } else {
                        quote!()
                    };
                    if self.is_kept(var) {
                        let load = self.load_local(var);
                        out.extend(quote!(let #m #var = #load;));
                    } else if let Some(v) = self.copied.borrow().get(&var.to_string()) {
                        out.extend(quote!(let #var = #v;));
                    } else if self.late_vars.borrow().contains(&var.to_string()) {
                        // Computed again further down the reverse (`recompute_late`).
                        continue;
                    } else if self.recomputable(op, b, k) {
                        let v = self.recomputed_op(op);
                        out.extend(quote!(let #var = #v;));
                    } else {
                        continue;
                    }
                    defined.insert(var.to_string());
                }
                Stmt::LetTuple { vars, op } => {
                    if self.destructured_again(op, b, k) {
                        let p = primal_op(op);
                        out.extend(quote!(let (#(#vars),*) = #p;));
                        continue;
                    }
                    for v in vars {
                        if self.kept.borrow().contains_key(&v.to_string()) {
                            let load = self.load_local(v);
                            out.extend(quote!(let #v = #load;));
                        }
                    }
                }
                Stmt::If { outs, .. } => {
                    for v in outs {
                        if self.kept.borrow().contains_key(&v.to_string()) {
                            let load = self.load_local(v);
                            out.extend(quote!(let #v = #load;));
                        }
                    }
                }
                _ => {}
            }
        }
        (out, defined)
    }

    /// `let mut __b_v = zero;` for the active locals a block declares.
    fn adjoint_decls(&self, b: &Block) -> TokenStream {
        self.adjoint_decls_except(b, &HashSet::default(), None)
    }

    /// [`Self::adjoint_decls`] but for the locals in `except`. `in_scope` names the block's
    /// `let` locals bound where the declarations go (all of them where it is `None`): only
    /// those can lend an adjoint their shape.
    fn adjoint_decls_except(
        &self,
        b: &Block,
        except: &HashSet<String>,
        in_scope: Option<&HashSet<String>>,
    ) -> TokenStream {
        let mut out = TokenStream::new();
        let late = self.late_vars.borrow();
        // `let p = t;` moved `t` where it is not `Copy` (a call's vector): `p` has its
        // shape.
        let mut moved: HashMap<String, Ident> = HashMap::default();
        for s in b {
            if let Stmt::Let {
                var,
                mutable: false,
                op: Op::Use(Operand::Var(t)),
            } = s
                && var != t
                && !self.an.structs.contains_key(&t.to_string())
            {
                moved.insert(t.to_string(), var.clone());
            }
        }
        let mut decl = |v: &Ident| {
            let name = v.to_string();
            if self.an.is_active(v) && !late.contains(&name) && !except.contains(&name) {
                let mut like = v;
                while let Some(next) = moved.get(&like.to_string())
                    && in_scope.is_none_or(|s| s.contains(&next.to_string()))
                {
                    like = next;
                }
                out.extend(self.adjoint_decl_like(v, like));
            }
        };
        for s in b {
            match s {
                Stmt::Let { var, .. } => decl(var),
                Stmt::LetTuple { vars, .. } => vars.iter().for_each(&mut decl),
                Stmt::If { outs, .. } => outs.iter().for_each(&mut decl),
                _ => {}
            }
        }
        out
    }

    /// `let mut v̄ = ..;`: a zero shaped like `v`, `-0.0` for a scalar (which only receives
    /// `+=`).
    fn adjoint_decl(&self, v: &Ident) -> TokenStream {
        self.adjoint_decl_like(v, v)
    }

    /// [`Self::adjoint_decl`] shaped like `like`, a local holding the value of `v`.
    fn adjoint_decl_like(&self, v: &Ident, like: &Ident) -> TokenStream {
        let a = adjoint_name(v);
        if self.kinds.get(&v.to_string()) == Some(&VarKind::Scalar) {
            quote!(let mut #a = __ad::accumulator_zero(&#like);)
        } else {
            let zero = self.an.zero_like(like);
            quote!(let mut #a = #zero;)
        }
    }

    /// Before `let p = t;` (`let mut p = t;` too, `p` then assigned again), `p = t;`, `let
    /// (a, b) = t;` or `let p = t.0;` in the outermost block, the adjoint of `t`, shaped like `t`
    /// while it still holds its value: a call's result, whose type the macro does not see,
    /// may be a vector, which moves.
    fn declare_before_move(&self, s: &Stmt, level: Level, block: &Block, k: usize) -> TokenStream {
        let t = match s {
            Stmt::Let {
                var,
                op: Op::Use(Operand::Var(t)),
                ..
            } if var != t => t,
            // `h = t;` of a whole local.
            Stmt::Assign {
                place,
                kind: AssignKind::Set,
                val: Operand::Var(t),
            } if place.is_whole() && place.base != *t => t,
            Stmt::LetTuple {
                op: Op::Use(Operand::Var(t)),
                ..
            } => t,
            // `let z = t.0;` of a call's tuple (a companion's result and tangent) moves
            // that part.
            Stmt::Let {
                var,
                mutable: false,
                op: Op::Load(p),
            } if p.base != *var
                && matches!(p.proj.as_slice(), [Proj::Field(syn::Member::Unnamed(_))]) =>
            {
                &p.base
            }
            _ => return TokenStream::new(),
        };
        let bound_here = block[..k].iter().any(|b| match b {
            Stmt::Let { var, .. } => var == t,
            Stmt::LetTuple { vars, .. } => vars.contains(t),
            _ => false,
        });
        if !level.top
            || self.frames.borrow().len() != 1
            || !bound_here
            || !self.an.is_active(t)
            || self.late_vars.borrow().contains(&t.to_string())
            || !self.declared_early.borrow_mut().insert(t.to_string())
        {
            return TokenStream::new();
        }
        self.adjoint_decl(t)
    }

    /// For `let var = op` at `block[k]` followed in the block by `v = var` (the shape of
    /// `mx = mx.max(x[i])`): `v`, when the reverse can read `var` from it instead of
    /// recording it. That holds when `v` is a scalar declared outside the block, not
    /// written after that assignment (so it ends the block holding `var`), and read by
    /// `op` itself (so the assignment records and restores it, and at the start of the
    /// block's reverse `v` holds its value from the end of the block).
    fn final_copy(&self, var: &Ident, op: &Op, block: &Block, k: usize) -> Option<Ident> {
        let name = var.to_string();
        let (k2, v) = block
            .iter()
            .enumerate()
            .skip(k + 1)
            .find_map(|(k2, s)| match s {
                Stmt::Assign {
                    place,
                    kind: AssignKind::Set,
                    val: Operand::Var(x),
                } if place.proj.is_empty() && *x == name => Some((k2, place.base.clone())),
                _ => None,
            })?;
        let vname = v.to_string();
        let mut reads = HashSet::default();
        op_reads(op, &mut reads);
        let mut later = HashSet::default();
        for s in &block[k2 + 1..] {
            stmt_writes(s, &mut later);
        }
        let declared_here = block
            .iter()
            .any(|s| matches!(s, Stmt::Let { var, .. } if *var == vname));
        (self.kinds.get(&vname) == Some(&VarKind::Scalar)
            && self.an.needs(&v)
            && reads.contains(&vname)
            && !later.contains(&vname)
            && !declared_here)
            .then_some(v)
    }

    /// Whether the `let` at `block[k]` can be recomputed at the start of the block's
    /// reverse: a cheap operation whose inputs the rest of the block does not overwrite.
    fn recomputable(&self, op: &Op, block: &Block, k: usize) -> bool {
        if !(is_cheap(op) || matches!(op, Op::Inactive(_))) || has_effects(op) {
            return false;
        }
        let mut reads = HashSet::default();
        op_reads(op, &mut reads);
        if let Some(f) = self.frames.borrow().last()
            && reads.iter().any(|r| f.late_points.contains_key(r))
        {
            return false;
        }
        let mut writes = HashSet::default();
        for s in &block[k..] {
            stmt_writes(s, &mut writes);
        }
        reads.is_disjoint(&writes)
    }

    /// For a cheap `let var = op` at `block[k]` whose inputs a later statement of the block
    /// overwrites: the first such statement `k1`, when every read of `var` comes before
    /// it. The reverse sweep restores those inputs exactly (they are read before `k1`, so
    /// [`Self::must_record`] keeps them, or steps them back), so once it has reversed
    /// `k1` the value can be computed again instead of recorded.
    fn late_point(&self, var: &Ident, op: &Op, block: &Block, k: usize) -> Option<usize> {
        if !is_cheap(op) {
            return None;
        }
        let mut reads = HashSet::default();
        op_reads(op, &mut reads);
        let first_write = (k + 1..block.len()).find(|&j| {
            let mut w = HashSet::default();
            stmt_writes(&block[j], &mut w);
            !w.is_disjoint(&reads)
        });
        // Inputs that are themselves computed late are there after their own point.
        let after_inputs = self.frames.borrow().last().and_then(|f| {
            reads
                .iter()
                .filter_map(|r| f.late_points.get(r).copied())
                .min()
        });
        let k1 = match (first_write, after_inputs) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b)?,
        };
        let mut later = HashSet::default();
        for s in &block[k1..] {
            stmt_writes(s, &mut later);
        }
        let restored = reads
            .iter()
            .filter(|r| later.contains(*r))
            .all(|r| self.an.needs(&format_ident!("{}", r)));
        let name = var.to_string();
        let adjoint = adjoint_name(var).to_string();
        let used_later = block[k1..].iter().any(|s| stmt_reads(s).contains(&name));
        let frames = self.frames.borrow();
        let seeded = frames
            .last()
            .is_some_and(|f| f.seeded.contains(&name) || f.seeded.contains(&adjoint));
        (restored && !used_later && !seeded).then_some(k1)
    }

    /// Emits `let var = op;` (and its adjoint) right after the reverse of `block[k1]`.
    fn recompute_late(&self, var: &Ident, op: &Op, k1: usize) {
        let v = self.recomputed_op(op);
        let mut t = quote!(let #var = #v;);
        if self.an.is_active(var) {
            t.extend(self.adjoint_decl(var));
        }
        self.late_vars.borrow_mut().insert(var.to_string());
        if let Some(f) = self.frames.borrow_mut().last_mut() {
            f.late.push((k1, t));
            f.late_points.insert(var.to_string(), k1);
        }
    }

    // ---------------------------------------------------------------- statements

    fn stmt(&self, s: &Stmt, level: Level, block: &Block, k: usize) -> (TokenStream, TokenStream) {
        let early = self.declare_before_move(s, level, block, k);
        let (fwd, rev) = self.stmt_sweeps(s, level, block, k);
        (quote!(#early #fwd), rev)
    }

    fn stmt_sweeps(
        &self,
        s: &Stmt,
        level: Level,
        block: &Block,
        k: usize,
    ) -> (TokenStream, TokenStream) {
        match s {
            Stmt::Let { var, mutable, op } => {
                let m = if *mutable { quote!(mut) } else { quote!() };
                if let Op::Call(c) = op {
                    let seed = if self.an.is_active(var) {
                        let a = adjoint_name(var);
                        quote!(#a)
                    } else {
                        quote!(__ad::Zero)
                    };
                    let (mut fwd, rev) = self.call(c, level, Some(quote!(#m #var)), seed);
                    if !level.top && self.relevant(var) {
                        fwd.extend(self.keep_local(var, level));
                    }
                    return (fwd, rev);
                }
                let mut value = primal_op(op);
                // `let mut r = p;` in a branch or a loop, of a call's result bound outside
                // it (a vector, perhaps): a copy, since the outer block's reverse sweep
                // shapes `p`'s adjoint like `p` after this block has run.
                if let Op::Use(Operand::Var(t)) = op
                    && *mutable
                    && !level.top
                    && self.maybe_tuples.borrow().contains(&t.to_string())
                    && !block
                        .iter()
                        .any(|s| matches!(s, Stmt::Let { var, .. } if var == t))
                {
                    value = quote!(__ad::copy_of(&#t));
                }
                let mut fwd = quote!(let #m #var = #value;);
                if !level.top
                    && !*mutable
                    && !self.is_buffer(var)
                    && self.relevant(var)
                    && !self.recomputable(op, block, k)
                {
                    if let Some(v) = self.final_copy(var, op, block, k) {
                        self.copied.borrow_mut().insert(var.to_string(), v);
                    } else {
                        match self.late_point(var, op, block, k) {
                            Some(k1) => self.recompute_late(var, op, k1),
                            None => fwd.extend(self.keep_local(var, level)),
                        }
                    }
                }
                let rev = if self.an.is_active(var) {
                    self.propagate(var, op)
                } else {
                    quote!()
                };
                (fwd, rev)
            }
            Stmt::LetTuple { vars, op } => {
                let again = self.destructured_again(op, block, k);
                self.let_tuple(vars, op, level, again)
            }
            Stmt::Assign { place, kind, val } => {
                let old = self.old_value_local(place, block, k);
                self.assign(place, *kind, val, level, old)
            }
            Stmt::Push { place, val, copy } => {
                let (p, v) = (place.primal(), pushed_value(val.primal(), *copy));
                let mut fwd = quote!(#p.push(#v););
                let mut rev = TokenStream::new();
                if self.an.place_active(place) {
                    let a = place.adjoint();
                    // The caller's shadow of a member grows with it (see `CopyFrom`).
                    if self.is_param_member(place) {
                        fwd.extend(quote!(#a.push(__ad::zero_like(&#v));));
                    }
                    rev.extend(quote!(let __ad_g = __ad::take(#a.pop());));
                    rev.extend(self.accumulate(val, quote!(__ad_g)));
                }
                if self.must_record(&place.base) {
                    rev.extend(quote!(#p.pop();));
                }
                (fwd, rev)
            }
            Stmt::Fill { place, val } => {
                let (p, v) = (place.primal(), val.primal());
                let (record, restore) = self.record_slice(place, level);
                let fwd = quote!(#record #p.fill(#v););
                let mut rev = TokenStream::new();
                if self.an.place_active(place) {
                    let a = place.adjoint();
                    if self.an.operand_active(val) {
                        rev.extend(self.accumulate(val, quote!(__ad::sum(&#a[..]))));
                    }
                    rev.extend(quote!(__ad::fill_zero(&mut #a[..]);));
                }
                rev.extend(restore);
                (fwd, rev)
            }
            // `acc = acc.add(&v);` of a call's struct copied with `let mut`: the old value
            // saved whole and put back, its adjoint passed to the value assigned and
            // zeroed. (Written with the calls a companion lowered again reads as this
            // statement: a snapshot, a restore, an addition and a zero of a struct.)
            Stmt::CopyFrom {
                dst,
                src,
                mode: CopyMode::Struct { .. },
            } => {
                let (d, s) = (dst.primal(), src.primal());
                let (record, load) = self.record(quote!(__ad::snapshot_struct(&#d)), level);
                let fwd = quote!(#record __ad::restore_struct_from(&mut #d, &#s););
                let mut rev = TokenStream::new();
                if self.an.place_active(dst) {
                    let ad = dst.adjoint();
                    if self.an.place_active(src) {
                        let asrc = src.adjoint();
                        rev.extend(quote!(__ad::add_into(&mut #asrc, &#ad);));
                    }
                    rev.extend(quote!(
                        __ad::restore_struct(&mut #d, #load);
                        let __ad_zero = __ad::zero_like(&#d);
                        __ad::restore_struct(&mut #ad, __ad_zero);
                    ));
                } else {
                    rev.extend(quote!(__ad::restore_struct(&mut #d, #load);));
                }
                (fwd, rev)
            }
            // A swap is its own inverse: no record, and the adjoints trade places as the
            // values trade back.
            Stmt::CopyFrom {
                dst,
                src,
                mode: CopyMode::Swap,
            } => {
                let (d, s) = (dst.primal(), src.primal());
                let swap = quote!(::core::mem::swap(&mut #d, &mut #s););
                let mut rev = swap.clone();
                if self.an.place_active(dst) && self.an.place_active(src) {
                    let (ad, asrc) = (dst.adjoint(), src.adjoint());
                    rev.extend(quote!(::core::mem::swap(&mut #ad, &mut #asrc);));
                }
                (swap, rev)
            }
            Stmt::CopyFrom { dst, src, mode } => {
                let resize = &(*mode == CopyMode::Resized);
                let (d, s) = (dst.primal(), src.primal());
                let (record, restore) = if *resize {
                    // `dst = src;` of whole buffers: the old value is always recorded, since
                    // its length shapes the adjoint that the statements before read.
                    let (push, load) = self.record(quote!(<[_]>::to_vec(&#d[..])), level);
                    (push, quote!(__ad::restore_resized(&mut #d, &#load[..]);))
                } else {
                    self.record_slice(dst, level)
                };
                let fit = if *resize {
                    quote!(__ad::resize_like(&mut #d, &#s[..]);)
                } else {
                    quote!()
                };
                let mut fwd = quote!(#record #fit #d.copy_from_slice(&#s[..]););
                let mut rev = TokenStream::new();
                let ad = dst.adjoint();
                // A member of a struct parameter (`s.w = v;`) has the caller's shadow, of
                // the member's length on entry: it takes the new length here, as the
                // shadow of a local buffer (or of a member of a struct built in the
                // function) is made with its final length after the sweep,
                // so that the code after reads its adjoint at every new index: the seed
                // the caller gave, zero where the member grows. (Built as a copy, which a
                // companion differentiated again reads back as one.)
                if *resize && self.is_param_member(dst) && self.an.place_active(dst) {
                    let grown = self.fresh("grown");
                    fwd.extend(quote!(
                        let mut #grown = __ad::zero_like(&#s[..]);
                        __ad::add_into(&mut #grown[..], &#ad[..]);
                        __ad::resize_like(&mut #ad, &#grown[..]);
                    ));
                }
                if self.an.place_active(dst) && self.an.place_active(src) {
                    let asrc = src.adjoint();
                    if dst.base == src.base {
                        // Two parts of one buffer (rows of a matrix): the adjoint read is
                        // copied first, since both cannot be borrowed at once.
                        rev.extend(quote!(
                            let __ad_g = <[_]>::to_vec(&#ad[..]);
                            __ad::add_into(&mut #asrc[..], &__ad_g[..]);
                        ));
                    } else {
                        rev.extend(quote!(__ad::add_into(&mut #asrc[..], &#ad[..]);));
                    }
                }
                rev.extend(restore);
                if self.an.place_active(dst) {
                    if *resize {
                        rev.extend(quote!(__ad::resize_like(&mut #ad, &#d[..]);));
                    }
                    rev.extend(quote!(__ad::fill_zero(&mut #ad[..]);));
                }
                (fwd, rev)
            }
            Stmt::Call(c) => self.call(c, level, None, quote!(__ad::Zero)),
            Stmt::If {
                cond,
                then,
                els,
                outs,
                then_vals,
                else_vals,
            } => {
                let nested = Level {
                    top: false,
                    in_loop: level.in_loop,
                };
                let mut then_seeds = TokenStream::new();
                let mut else_seeds = TokenStream::new();
                for ((o, a), b) in outs.iter().zip(then_vals).zip(else_vals) {
                    if self.an.is_active(o) {
                        let ao = adjoint_name(o);
                        then_seeds.extend(self.accumulate(a, quote!(#ao)));
                        else_seeds.extend(self.accumulate(b, quote!(#ao)));
                    }
                }
                let (tf, tr) = self.block(then, nested, then_seeds);
                let (ef, er) = self.block(els, nested, else_seeds);
                let c = self.fresh("cond");
                // (Marked as carrying no derivative for the code that differentiates this
                // companion again, which would take a call in it for a float's.)
                let (def, load) = self.keep(&c, quote!(::autodiff_core::no_grad(#cond)), level);
                let mut fwd = quote!(#def);
                if outs.is_empty() {
                    fwd.extend(quote!(if #c { #tf } else { #ef }));
                } else {
                    let tv: Vec<TokenStream> = then_vals.iter().map(Operand::primal).collect();
                    let ev: Vec<TokenStream> = else_vals.iter().map(Operand::primal).collect();
                    fwd.extend(quote!(let (#(#outs),*) = if #c { #tf (#(#tv),*) } else { #ef (#(#ev),*) };));
                    if !level.top {
                        for o in outs {
                            if self.relevant(o) {
                                fwd.extend(self.keep_local(o, level));
                            }
                        }
                    }
                }
                let rev = quote!(if #load { #tr } else { #er });
                (fwd, rev)
            }
            Stmt::For {
                pat,
                iter,
                body,
                exit,
            } => {
                let inner = Level {
                    top: false,
                    in_loop: true,
                };
                // Adapters such as `step_by` on an inclusive range cannot be reversed in
                // place: such loops count their trips and replay them from a buffer.
                let replay = calls_adapter(iter, &["step_by", "skip", "take"]);
                if let Some(fused) = self.fused_loop(pat, iter, body, block, k) {
                    return fused;
                }
                self.loop_stores.borrow_mut().push(Vec::new());
                *self.next_is_loop_body.borrow_mut() = true;
                let plan = CarryPlan::new(pat, iter, body, exit.is_some() || replay, |v| {
                    self.an.is_active(v)
                })
                .and_then(|p| {
                    let outer = self.carried.borrow();
                    p.without(|a| outer.iter().any(|o| o.carries(a)))
                });
                let planned = plan.is_some();
                self.carried.borrow_mut().extend(plan);
                self.loops.borrow_mut().push(LoopInfo::new(pat, iter, body));
                let whole = if exit.is_none() && !replay {
                    self.whole_overwrite(s, level)
                } else {
                    None
                };
                let has_whole = whole.is_some();
                self.whole_saves.borrow_mut().extend(whole);
                let (bf, br) = self.block(body, inner, quote!());
                let whole = if has_whole {
                    self.whole_saves.borrow_mut().pop()
                } else {
                    None
                };
                self.loops.borrow_mut().pop();
                let plan = if planned {
                    self.carried.borrow_mut().pop()
                } else {
                    None
                };
                let stores = self.loop_stores.borrow_mut().pop().unwrap_or_default();
                let it = self.fresh("iter");
                // A range whose bounds the rest of the block does not overwrite is
                // evaluated again in the reverse sweep instead of being recorded.
                let recompute = !level.top && exit.is_none() && {
                    let mut reads = HashSet::default();
                    crate::lower::walk_idents(iter, &mut |id| {
                        reads.insert(id.to_string());
                    });
                    let mut writes = HashSet::default();
                    for s in &block[k..] {
                        stmt_writes(s, &mut writes);
                    }
                    reads.is_disjoint(&writes)
                };
                let (def, it_load) = if recompute {
                    (quote!(let #it = #iter;), iter.clone())
                } else {
                    self.keep_clone(&it, iter.clone(), level)
                };
                // Stores written once per iteration get the trip count reserved up front,
                // unless the loop may leave early: its range is then a bound, often far
                // above the trips that run (`for _ in 0..max_iter { .. break; }`).
                let reserve = if stores.is_empty() || exit.is_some() {
                    quote!()
                } else {
                    quote!({
                        let __ad_n = ::core::iter::Iterator::size_hint(&#it).0;
                        #(#stores.reserve(__ad_n);)*
                    })
                };
                // The buffer's old contents saved whole before the loop, put back after
                // its reverse.
                let (save, restore) = match whole.filter(|w| w.used) {
                    Some(w) => {
                        let buf = format_ident!("{}", w.buf);
                        let (save, load) = self.save_slice(quote!(&#buf[..#it.end]), level);
                        let restore = quote!({
                            let __ad_old = #load;
                            #buf[..__ad_old.len()].copy_from_slice(&__ad_old[..]);
                        });
                        (save, restore)
                    }
                    None => (quote!(), quote!()),
                };
                let def = quote!(#def #reserve #save);
                let exit = match exit {
                    Some(e) => Some(e.clone()),
                    None if replay => Some(quote!(false)),
                    None => None,
                };
                match &exit {
                    None => {
                        let fwd =
                            quote!(#def for #pat in ::core::clone::Clone::clone(&#it) { #bf });
                        let rev = match &plan {
                            Some(plan) => plan.wrap(it_load, br),
                            None => {
                                quote!(for #pat in ::core::iter::Iterator::rev(#it_load) { #br })
                            }
                        };
                        (fwd, quote!(#rev #restore))
                    }
                    Some(e) => {
                        let n = self.fresh("trips");
                        let n_final = self.fresh("trips");
                        let (ndef, n_load) = self.keep(&n_final, quote!(#n), level);
                        let fwd = quote!(
                            #def
                            let mut #n = 0usize;
                            for #pat in ::core::clone::Clone::clone(&#it) { #n += 1; #bf if #e { break; } }
                            #ndef
                        );
                        let rev = quote!(
                            let __ad_it = #it_load;
                            for #pat in __ad::rev_prefix(__ad_it, #n_load) { #br }
                        );
                        (fwd, quote!({ #rev }))
                    }
                }
            }
            Stmt::Loop { body, exit } => {
                let inner = Level {
                    top: false,
                    in_loop: true,
                };
                self.loop_stores.borrow_mut().push(Vec::new());
                *self.next_is_loop_body.borrow_mut() = true;
                let (bf, br) = self.block(body, inner, quote!());
                self.loop_stores.borrow_mut().pop();
                let n = self.fresh("trips");
                let n_final = self.fresh("trips");
                let (ndef, n_load) = self.keep(&n_final, quote!(#n), level);
                let fwd =
                    quote!(let mut #n = 0usize; loop { #n += 1; #bf if #exit { break; } } #ndef);
                let rev = quote!(for _ in 0..#n_load { #br });
                (fwd, rev)
            }
            Stmt::Inactive(t) if self.recomputing && is_effect_only(t) => (quote!(), quote!()),
            Stmt::Inactive(t) => (t.clone(), quote!()),
        }
    }

    /// A loop of the outermost block whose iterations are reversed as they run (see
    /// [`crate::fused`]), when it is one: the forward code, which runs both sweeps of each
    /// iteration, and no reverse code.
    fn fused_loop(
        &self,
        pat: &Ident,
        iter: &TokenStream,
        body: &Block,
        block: &Block,
        k: usize,
    ) -> Option<(TokenStream, TokenStream)> {
        let (seed, ret) = self.known_seed.as_ref()?;
        if self.frames.borrow().len() != 1 {
            return None;
        }
        let plan = crate::fused::fusion(block, k, ret, self.an, self.kinds, &self.late_shadows)?;
        let mut early = TokenStream::new();
        for v in &plan.early {
            // An adjoint that an earlier fused loop declared holds what it added up.
            if self.declared_early.borrow_mut().insert(v.to_string()) {
                early.extend(self.adjoint_decl(v));
            }
        }
        let accs = plan.accumulators.iter().map(|a| {
            let b = adjoint_name(&a.var);
            let adjoint = a.adjoint(seed);
            quote!(let mut #b = #adjoint;)
        });
        // The body is emitted as an outermost block: its locals are still in scope when
        // its reverse runs, right after it.
        let level = Level {
            top: true,
            in_loop: true,
        };
        // Stores in the body are stores of a loop (stacks), though their values last one
        // iteration and need no reserve.
        self.loop_stores.borrow_mut().push(Vec::new());
        *self.next_is_fused.borrow_mut() = true;
        self.loops.borrow_mut().push(LoopInfo::new(pat, iter, body));
        let (bf, br) = self.block(body, level, quote!());
        self.loops.borrow_mut().pop();
        self.loop_stores.borrow_mut().pop();
        let adjoints = self.adjoint_decls(body);
        let fwd = quote!(
            #early
            {
                #(#accs)*
                for #pat in #iter { #bf #adjoints #br }
            }
        );
        Some((fwd, quote!()))
    }

    /// `__b_o += g` for an active operand.
    fn accumulate(&self, o: &Operand, g: TokenStream) -> TokenStream {
        match o {
            Operand::Var(v) if self.an.is_active(v) => {
                let a = adjoint_name(v);
                if let Some((_, members)) = self.an.structs.get(&v.to_string()) {
                    // A struct built in the body: its members are scalars and constants.
                    quote!({ let __ad_g = #g; #(#a.#members += __ad_g.#members;)* })
                } else if self.is_buffer(v) {
                    quote!(__ad::add_into(&mut #a, &#g);)
                } else if self.maybe_tuples.borrow().contains(&v.to_string()) {
                    // `g` is evaluated first: it may read the adjoint itself (`s += s`).
                    quote!({ let __ad_g = #g; __ad::add_to(&mut #a, __ad_g); })
                } else {
                    quote!(#a += #g;)
                }
            }
            _ => quote!(),
        }
    }

    /// Subtracts `g` from the adjoint of `o` (the subtrahend of `x - y`): `ȳ -= g` for a
    /// scalar, which is `ȳ += -g` for a float and also holds for an unsigned count (an
    /// integer member of a struct, whose adjoint stays zero), which has no negation.
    fn accumulate_negated(&self, o: &Operand, g: TokenStream) -> TokenStream {
        match o {
            Operand::Var(v)
                if self.an.is_active(v)
                    && !self.an.structs.contains_key(&v.to_string())
                    && !self.is_buffer(v)
                    && !self.maybe_tuples.borrow().contains(&v.to_string()) =>
            {
                let a = adjoint_name(v);
                quote!(#a -= #g;)
            }
            _ => self.accumulate(o, quote!(-#g)),
        }
    }

    /// The reverse of `var = op`: adds `∂op/∂input · adjoint(var)` into each active input.
    fn propagate(&self, var: &Ident, op: &Op) -> TokenStream {
        let g = adjoint_name(var);
        let g = quote!(#g);
        match op {
            Op::Use(o) => self.accumulate(o, g),
            Op::Neg(o) => self.accumulate(o, quote!(-#g)),
            Op::Bin(b, x, y) => {
                let (px, py) = (x.primal(), y.primal());
                match b {
                    BinOp::Add => {
                        let mut t = self.accumulate(x, g.clone());
                        t.extend(self.accumulate(y, g));
                        t
                    }
                    BinOp::Sub => {
                        let mut t = self.accumulate(x, g.clone());
                        t.extend(self.accumulate_negated(y, g));
                        t
                    }
                    BinOp::Mul => {
                        let mut t = self.accumulate(x, quote!(#g * #py));
                        t.extend(self.accumulate(y, quote!(#px * #g)));
                        t
                    }
                    BinOp::Div => {
                        let mut t = self.accumulate(x, quote!(#g / #py));
                        t.extend(self.accumulate(y, quote!(-(#g * #var) / #py)));
                        only_nonzero(&g, t)
                    }
                    BinOp::Rem => {
                        let mut t = self.accumulate(x, g.clone());
                        t.extend(self.accumulate(y, quote!(#g * __ad::rem_partial(#px, #py))));
                        t
                    }
                }
            }
            Op::Math(name, ops) => {
                let idx = diff_operands(name, ops);
                let active: Vec<(usize, usize)> = idx
                    .iter()
                    .enumerate()
                    .filter(|(_, i)| self.an.operand_active(&ops[**i]))
                    .map(|(k, i)| (k, *i))
                    .collect();
                if active.is_empty() {
                    return quote!();
                }
                let p = format_ident!("__ad_p");
                let ps = partials(name, ops, quote!(#var));
                let mut out = quote!(let #p = #ps;);
                for (k, i) in active {
                    let pk = partial_at(&p, k, idx.len());
                    out.extend(self.accumulate(&ops[i], quote!(#g * #pk)));
                }
                if has_singular_partials(name) {
                    only_nonzero(&g, out)
                } else {
                    quote!({ #out })
                }
            }
            Op::Cast(o, _) => match o {
                Operand::Var(v) if self.an.is_active(v) => {
                    let a = adjoint_name(v);
                    // Nothing for an integer (see `__ad::add_cast`).
                    quote!(__ad::add_cast(&mut #a, #g);)
                }
                _ => quote!(),
            },
            Op::Load(p) if self.an.place_active(p) => {
                let carried = self.carried.borrow();
                match carried.iter().rev().find_map(|plan| plan.register(p)) {
                    Some(reg) => quote!(#reg += #g;),
                    // A struct's member may be an array (`let a = ps[i].pos;`), which
                    // has no `+=`.
                    None if matches!(p.proj.last(), Some(Proj::Field(_))) => {
                        let a = p.adjoint();
                        quote!(__ad::add_to(&mut #a, #g);)
                    }
                    None => {
                        let a = self.replayed(p, true, true);
                        quote!(#a += #g;)
                    }
                }
            }
            Op::VecRepeat(o, _) | Op::ArrRepeat(o, _) => {
                self.accumulate(o, quote!(__ad::sum(&#g[..])))
            }
            Op::ArrLit(ops, _) => {
                let mut out = TokenStream::new();
                for (i, o) in ops.iter().enumerate() {
                    out.extend(self.accumulate(o, quote!(#g[#i])));
                }
                out
            }
            Op::CloneOf(p, CopyKind::Struct { .. }) if self.an.place_active(p) => {
                let a = p.adjoint();
                quote!(__ad::add_into(&mut #a, &#g);)
            }
            Op::CloneOf(p, _) if self.an.place_active(p) => {
                let a = p.adjoint();
                quote!(__ad::add_into(&mut #a[..], &#g[..]);)
            }
            Op::StructLit(_, fields) => fields
                .iter()
                .map(|(m, o)| self.accumulate(o, quote!(#g.#m)))
                .collect(),
            _ => quote!(),
        }
    }

    /// Whether the reverse sweep destructures `let (a, b) = t;` at `block[k]` again
    /// rather than recording its parts: `t` is a local (a loop's element, a tuple of
    /// constants from a table) that no later statement of the block writes and that is
    /// no call's result, which may move. Parts that are references (`for (w, c) in
    /// t.iter()` over a local table) could not be recorded past the table anyway.
    fn destructured_again(&self, op: &Op, block: &Block, k: usize) -> bool {
        matches!(op, Op::Use(Operand::Var(t)) if !self.maybe_tuples.borrow().contains(&t.to_string()))
            && self.recomputable(op, block, k)
    }

    /// `let (a, b) = op;`. `again`: the reverse sweep destructures it again
    /// ([`Self::destructured_again`]), so nothing is recorded.
    fn let_tuple(
        &self,
        vars: &[Ident],
        op: &Op,
        level: Level,
        again: bool,
    ) -> (TokenStream, TokenStream) {
        let keep: TokenStream = if level.top || again {
            quote!()
        } else {
            vars.iter()
                .filter(|v| self.relevant(v))
                .map(|v| self.keep_local(v, level))
                .collect()
        };
        let any_active = vars.iter().any(|v| self.an.is_active(v));
        let seeds: Vec<TokenStream> = vars
            .iter()
            .map(|v| {
                if self.an.is_active(v) {
                    let a = adjoint_name(v);
                    quote!(#a)
                } else {
                    quote!(__ad::zero_like(&#v))
                }
            })
            .collect();
        match op {
            Op::Call(c) => {
                let seed = if any_active {
                    quote!((#(#seeds),*))
                } else {
                    quote!(__ad::Zero)
                };
                let (mut fwd, rev) = self.call(c, level, Some(quote!((#(#vars),*))), seed);
                fwd.extend(keep);
                (fwd, rev)
            }
            Op::Use(o) => {
                let p = o.primal();
                let fwd = quote!(let (#(#vars),*) = #p; #keep);
                let rev = match o {
                    Operand::Var(t) if any_active && self.an.is_active(t) => {
                        let at = adjoint_name(t);
                        let mut r = TokenStream::new();
                        for (i, v) in vars.iter().enumerate() {
                            if self.an.is_active(v) {
                                let i = syn::Index::from(i);
                                let av = adjoint_name(v);
                                // The parts may be tuples themselves.
                                r.extend(quote!(__ad::add_to(&mut #at.#i, #av);));
                            }
                        }
                        r
                    }
                    _ => quote!(),
                };
                (fwd, rev)
            }
            Op::Math(name, ops) if name == "sin_cos" => {
                let p = primal_op(op);
                let fwd = quote!(let (#(#vars),*) = #p; #keep);
                let (s, c) = (&vars[0], &vars[1]);
                let (as_, ac) = (adjoint_name(s), adjoint_name(c));
                let rev = if any_active && self.an.operand_active(&ops[0]) {
                    let g = match (self.an.is_active(s), self.an.is_active(c)) {
                        (true, true) => quote!(#as_ * #c - #ac * #s),
                        (true, false) => quote!(#as_ * #c),
                        _ => quote!(-(#ac * #s)),
                    };
                    self.accumulate(&ops[0], g)
                } else {
                    quote!()
                };
                (fwd, rev)
            }
            op => {
                let p = primal_op(op);
                (quote!(let (#(#vars),*) = #p; #keep), quote!())
            }
        }
    }

    /// `place op= val`, with `old` a recorded local that holds the value it overwrites
    /// (see [`Self::old_value_local`]), if any.
    fn assign(
        &self,
        place: &Place,
        kind: AssignKind,
        val: &Operand,
        level: Level,
        old: Option<Ident>,
    ) -> (TokenStream, TokenStream) {
        let p = place.primal();
        let v = val.primal();
        let need = match self.record_need(&place.base) {
            _ if self.replayed.borrow().contains(&place.base.to_string()) => Need::No,
            Need::NextIteration(f) if self.covered_by_earlier_overwrite(place, f) => Need::No,
            Need::No => Need::No,
            // A record needed, and taken by the loop's whole save (which this marks used).
            _ if self.saved_whole(place, kind) => Need::No,
            need => need,
        };
        let (record, restore) = if need == Need::No {
            (quote!(), quote!())
        } else if let Some(undo) = integer_step_undo(kind, val) {
            // `i += 1` on an integer: stepping back is exact and needs no record.
            (quote!(), quote!(#p #undo #v;))
        } else if let Some(old) = old {
            // `let cur = u[i]; u[i] = f(cur);`: the old value is `cur`, recorded already.
            let pw = self.replayed(place, false, true);
            (quote!(), quote!(#pw = #old;))
        } else {
            let (push, load) = self.record(quote!(__ad_old), level);
            let pw = self.replayed(place, false, true);
            (push, quote!(#pw = #load;))
        };
        let op = match kind {
            AssignKind::Set => quote!(=),
            AssignKind::Add => quote!(+=),
            AssignKind::Sub => quote!(-=),
            AssignKind::Mul => quote!(*=),
            AssignKind::Div => quote!(/=),
        };
        // The old value is recorded after the write: a record may call (to grow its
        // store), and the value written, live across that call, would be kept in memory
        // by the loop that forms it (no vector register survives a call).
        let fwd = if record.is_empty() {
            quote!(#p #op #v;)
        } else {
            quote!({ let __ad_old = #p; #p #op #v; #record })
        };
        if !self.an.place_active(place) {
            return (fwd, restore);
        }
        let a = self.replayed(place, true, false);
        let aw = self.replayed(place, true, true);
        let pr = self.replayed(place, false, false);
        let rev = match kind {
            // A whole local put back (a vector that a call's may have replaced with one of
            // another length, `h = shrink(&h);`): its adjoint restarts shaped like the old
            // value, which the reverse sweep goes on with.
            AssignKind::Set if place.is_whole() && !restore.is_empty() => {
                let acc = self.accumulate(val, quote!(__ad_g));
                quote!(let __ad_g = #a; #restore #a = __ad::zero_like(&#p); #acc)
            }
            AssignKind::Set => {
                let acc = self.accumulate(val, quote!(__ad_g));
                quote!(let __ad_g = #a; #aw = __ad::zero_like(&__ad_g); #restore #acc)
            }
            AssignKind::Add => {
                let acc = self.accumulate(val, quote!(#a));
                quote!(#restore #acc)
            }
            AssignKind::Sub => {
                let acc = self.accumulate(val, quote!(-#a));
                quote!(#restore #acc)
            }
            AssignKind::Mul => {
                let acc = self.accumulate(val, quote!(#a * #pr));
                quote!(#restore #acc #aw *= #v;)
            }
            AssignKind::Div => {
                let acc = self.accumulate(val, quote!(-(#a * #pr) / (#v * #v)));
                quote!(#restore #acc #aw /= #v;)
            }
        };
        (fwd, rev)
    }

    /// A local of the block `b` that holds the value the write `b[k]` to `place`
    /// overwrites, and that the reverse sweep has from its record: an immutable local
    /// loaded from the same place (`let cur = u[i];`) earlier in the block, with nothing
    /// between that writes the place's buffer or the names its indices read. Its record
    /// then serves to put the place back, and the write needs none of its own.
    fn old_value_local(&self, place: &Place, b: &Block, k: usize) -> Option<Ident> {
        let target = place.primal().to_string();
        let mut names = HashSet::default();
        names.insert(place.base.to_string());
        for proj in &place.proj {
            if let Proj::Index(t) = proj {
                crate::lower::walk_idents(t, &mut |id| {
                    names.insert(id.to_string());
                });
            }
        }
        for s in b[..k].iter().rev() {
            if let Stmt::Let {
                var,
                mutable: false,
                op: Op::Load(from),
            } = s
                && from.primal().to_string() == target
            {
                let key = var.to_string();
                let recorded = self.kept.borrow().contains_key(&key)
                    && self.kinds.get(&key) == Some(&VarKind::Scalar)
                    && !self.is_dead_scalar(&key)
                    && !self.is_dead_result(&key);
                return recorded.then(|| var.clone());
            }
            let mut w = HashSet::default();
            stmt_writes(s, &mut w);
            if w.iter().any(|n| names.contains(n)) || names.iter().any(|n| names_in_inactive(s, n))
            {
                return None;
            }
        }
        None
    }

    /// Whether the write `place = ..` is an element write of the innermost loop whose
    /// buffer is saved whole (see [`WholeSave`]): then it needs no record of its own, and
    /// the loop learns that its save is needed.
    fn saved_whole(&self, place: &Place, kind: AssignKind) -> bool {
        let mut saves = self.whole_saves.borrow_mut();
        let Some(save) = saves.last_mut() else {
            return false;
        };
        let element =
            matches!(place.proj.as_slice(), [Proj::Index(i)] if save.vars.contains(&i.to_string()));
        if kind == AssignKind::Set && element && place.base == save.buf.as_str() {
            save.used = true;
            return true;
        }
        false
    }

    /// The buffer of the loop `s` when the loop can save it whole (see [`WholeSave`]): a
    /// loop inside another (where records go to stacks), `for j in 0..e` over a local
    /// buffer, whose body writes the buffer only by `buf[j] = v` statements of its own
    /// and reads nothing of it.
    fn whole_overwrite(&self, s: &Stmt, level: Level) -> Option<WholeSave> {
        if !level.in_loop {
            return None;
        }
        let (buf, _) = overwrite_loop(s)?;
        let Stmt::For {
            pat, iter, body, ..
        } = s
        else {
            return None;
        };
        if self.kinds.get(&buf) != Some(&VarKind::Buffer) || self.an.arrays.contains(&buf) {
            return None;
        }
        let vars = LoopInfo::new(pat, iter, body).vars;
        let only_element_writes = body.iter().all(|st| {
            let mut writes = HashSet::default();
            stmt_writes(st, &mut writes);
            let element_write = matches!(st, Stmt::Assign { place, kind: AssignKind::Set, .. }
                if matches!(place.proj.as_slice(), [Proj::Index(i)] if vars.contains(&i.to_string())));
            !stmt_reads(st).contains(&buf) && (!writes.contains(&buf) || element_write)
        });
        only_element_writes.then_some(WholeSave {
            buf,
            vars,
            used: false,
        })
    }

    /// Records the old contents of a buffer before `fill` or `copy_from_slice` overwrites
    /// it; returns the push and the restore.
    fn record_slice(&self, place: &Place, level: Level) -> (TokenStream, TokenStream) {
        if !self.must_record(&place.base) {
            return (quote!(), quote!());
        }
        let p = place.primal();
        let (push, load) = if level.in_loop {
            self.save_slice(quote!(&#p[..]), level)
        } else {
            self.record(quote!(<[_]>::to_vec(&#p[..])), level)
        };
        (push, quote!(#p.copy_from_slice(&#load[..]);))
    }

    /// The code of a call whose result is bound to `pat` (or dropped).
    ///
    /// A call through the callee's companions runs its augmented form in the forward sweep,
    /// keeping the state it returns (a custom rule's pullback, or nothing), and its pullback
    /// in the reverse sweep. What the call overwrites through `&mut` arguments is recorded
    /// when the reverse sweep reads it: restored before the pullback (which may recompute
    /// the call from its arguments) and again after it.
    fn call(
        &self,
        c: &Call,
        level: Level,
        pat: Option<TokenStream>,
        seed: TokenStream,
    ) -> (TokenStream, TokenStream) {
        let (mut fwd, rev) = self.call_sweeps(c, level, pat, seed);
        fwd.extend(self.fit_member_shadows(c));
        (fwd, rev)
    }

    fn call_sweeps(
        &self,
        c: &Call,
        level: Level,
        pat: Option<TokenStream>,
        seed: TokenStream,
    ) -> (TokenStream, TokenStream) {
        let mut record = TokenStream::new();
        let mut before = TokenStream::new();
        let mut again = TokenStream::new();
        let mut after = TokenStream::new();
        // What the call may overwrite: `&mut` arguments, and a receiver that can be
        // borrowed mutably (the method may take `&mut self`).
        let mut outputs = mutable_args(c);
        if let Callee::Method(recv, _) = &c.callee
            && self.may_change_receiver(recv)
        {
            outputs.push(recv);
        }
        if is_matrix_product(c) {
            // The product's output is an array the lowering has just made with `zeros`,
            // under a fresh name: nothing before the call reads it, and the product's
            // derivatives read only its operands, so its contents need no record.
            outputs.clear();
        }
        for p in outputs {
            let members = match self.an.structs.get(&p.base.to_string()) {
                Some((_, members)) if p.is_whole() => Some(members),
                _ => None,
            };
            if let Some(members) = members
                && self.must_record(&p.base)
            {
                // A struct built in the body is saved member by member (scalars and
                // constants): it need not be `Clone`, and differentiated again the code
                // records only scalars.
                let base = p.primal();
                for m in members {
                    let (push, load) = self.record(quote!(#base.#m), level);
                    record.extend(push);
                    let snap = self.fresh("saved");
                    before.extend(quote!(let #snap = #load; #base.#m = #snap;));
                    again.extend(quote!(#base.#m = #snap;));
                    after.extend(quote!(#base.#m = #snap;));
                }
            } else if self.must_record(&p.base) {
                // A whole local vector or array is saved as a slice (see `SavedSlice`);
                // a copy of a call's struct, whole.
                // (An `ndarray` array of the function's own, of which no slice can be
                // taken, is saved whole too.)
                let base = p.base.to_string();
                let whole_value =
                    self.an.struct_copies.contains(&base) || self.an.arrays.contains(&base);
                let sliced = p.is_whole() && self.is_buffer(&p.base) && !whole_value;
                let r = if sliced {
                    let prim = p.primal();
                    quote!(&#prim[..])
                } else {
                    self.refs.reference(p, p.primal(), false)
                };
                // (A copy of a call's struct, a member whose method is called,
                // `s.inner.bump(x)`, or a `let mut` local a constant call returned, whose
                // method is called: a struct, saved whole.)
                let receiver = matches!(&c.callee, Callee::Method(r, _) if std::ptr::eq(r, p));
                let copy = (p.is_whole() && whole_value)
                    || (receiver && is_member(p))
                    || (receiver && !sliced && !self.refs.is_mutable(p));
                let (push, load) = if sliced && level.in_loop {
                    self.save_slice(r, level)
                } else if copy {
                    self.record(quote!(__ad::snapshot_struct(#r)), level)
                } else {
                    self.record(quote!(__ad::snapshot(#r)), level)
                };
                record.extend(push);
                let rm = self.refs.reference(p, p.primal(), true);
                let snap = self.fresh("saved");
                let (restore, restore_from) = if copy {
                    (
                        quote!(__ad::restore_struct),
                        quote!(__ad::restore_struct_from),
                    )
                } else {
                    (quote!(__ad::restore), quote!(__ad::restore_from))
                };
                before.extend(quote!(let #snap = #load; #restore_from(#rm, &#snap);));
                again.extend(quote!(#restore_from(#rm, &#snap);));
                after.extend(quote!(#restore(#rm, #snap);));
            }
        }
        let bind = |value: TokenStream| match &pat {
            Some(p) => quote!(let #p = #value;),
            None => quote!(let _ = #value;),
        };
        if !self.an.call_uses_protocol(c) {
            let fwd = bind(primal_call(c, &self.refs));
            return (quote!(#record #fwd), quote!(#before #after));
        }
        // Closures passed to the call become `DiffFn`s, kept for the pullback.
        let mut build = TokenStream::new();
        let mut reload = TokenStream::new();
        let mut drains = TokenStream::new();
        for a in &c.args {
            if let Arg::Closure(cl) = a {
                let mut declare = |t: TokenStream| self.tapes.borrow_mut().push(t);
                let (construct, drain) =
                    crate::closures::reverse_build(cl, c, self.an, &mut declare);
                let id = &cl.id;
                if crate::closures::borrows_locals(cl) && !level.top {
                    // It borrows locals of this block, which a store may not outlive: built
                    // again in the reverse sweep, from the locals as restored there.
                    build.extend(construct.clone());
                    reload.extend(construct);
                } else {
                    let (keep, load) = self.keep(id, quote!(#id), level);
                    build.extend(quote!(#construct #keep));
                    if !level.top {
                        reload.extend(quote!(let #id = #load;));
                    }
                }
                drains.extend(drain);
            }
        }
        let state = self.fresh("state");
        let result = self.fresh("result");
        if self.kept_state {
            let aug = augmented_call(c, &self.refs);
            // No state is kept (a rule's pullback may borrow an argument that the closure
            // returned by `__ad_aug` then takes over), so the forward sweep makes the
            // primal call, and the reverse sweep the one augmented call, right before its
            // pullback: a custom rule reached through this function runs once per call.
            // The arguments are restored again after the augmented call, which overwrites
            // them as the primal call did.
            let value = bind(quote!(#result));
            // (A protocol function called by a companion differentiated again has no
            // primal of that name: its value is the augmented call's.)
            let primal = if crate::calls::is_protocol_callee(c) {
                quote!((#aug).0)
            } else {
                primal_call(c, &self.refs)
            };
            let fwd = quote!(#record #build let #result = #primal; #value);
            let pull = pullback_call(c, self.an, &self.refs, quote!(#state), seed);
            let rev = quote!(#before let #state = (#aug).1; #again #reload #pull; #drains #after);
            return (fwd, rev);
        }
        let args = c.args.iter().map(|a| self.augmented_arg(c, a)).collect();
        let aug = augmented_call_on(c, &self.refs, args);
        // Split at once: a tuple left partly moved would keep the argument borrows of the
        // pullback alive to the end of the function.
        let pullback = self.fresh("pullback");
        let value = bind(quote!(#result));
        let (keep_state, load_state) = self.keep_callee_state(&state, quote!(#pullback), level);
        let fwd = quote!(#record #build let (#result, #pullback) = #aug; #keep_state #value);
        let pull = pullback_call(c, self.an, &self.refs, load_state, seed);
        (fwd, quote!(#before #reload #pull; #drains #after))
    }
}

/// Whether the statement `t`, kept as written, runs only for its effect: a macro
/// (`println!`, `assert!`) or an expression whose value is dropped (`let _ = ..;`), not a
/// `let` that binds a name or an item.
fn is_effect_only(t: &TokenStream) -> bool {
    match syn::parse2::<syn::Stmt>(t.clone()) {
        Ok(syn::Stmt::Macro(_)) => true,
        Ok(syn::Stmt::Expr(_, _)) => true,
        Ok(syn::Stmt::Local(l)) => matches!(l.pat, syn::Pat::Wild(_)),
        _ => false,
    }
}

/// Whether `iter` calls one of the methods `names` (`.step_by(2)`), not merely names a
/// variable that contains one.
fn calls_adapter(iter: &TokenStream, names: &[&str]) -> bool {
    // `.name` is a call; `..name` is the end of a range.
    let (mut after_dot, mut after_dots) = (false, false);
    for tt in iter.clone() {
        match &tt {
            proc_macro2::TokenTree::Ident(id) if after_dot && names.iter().any(|n| id == n) => {
                return true;
            }
            proc_macro2::TokenTree::Group(g) if calls_adapter(&g.stream(), names) => return true,
            _ => {}
        }
        let dot = matches!(&tt, proc_macro2::TokenTree::Punct(p) if p.as_char() == '.');
        (after_dot, after_dots) = (dot && !after_dot && !after_dots, dot && after_dot);
    }
    false
}

/// Why an overwrite must record the old value ([`Reverse::record_need`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Need {
    No,
    /// A read reversed later in the same iteration, or outside the loops.
    Yes,
    /// Only reads of later iterations of the loop whose body is this frame.
    NextIteration(usize),
}

/// A `for` loop being emitted: its variable and the locals that copy it, and the end of
/// its range when the range is `a..end` (as text).
struct LoopInfo {
    vars: HashSet<String>,
    end: Option<String>,
}

impl LoopInfo {
    fn new(pat: &Ident, iter: &TokenStream, body: &Block) -> Self {
        let vars = crate::carry::loop_var_offsets(pat, body)
            .into_iter()
            .filter(|(_, c)| *c == 0)
            .map(|(v, _)| v)
            .collect();
        LoopInfo {
            vars,
            end: plain_range(iter).map(|(_, e)| quote!(#e).to_string()),
        }
    }
}

/// `for j in 0..e { .. buf[j] = .. }` (the assignment directly in the body, to the loop
/// variable or a copy of it): `buf` and `e`.
pub fn overwrite_loop(s: &Stmt) -> Option<(String, String)> {
    let Stmt::For {
        pat,
        iter,
        body,
        exit: None,
    } = s
    else {
        return None;
    };
    let (start, _) = plain_range(iter)?;
    let zero = matches!(&start, syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) if i.base10_digits() == "0");
    if !zero {
        return None;
    }
    let info = LoopInfo::new(pat, iter, body);
    let end = info.end?;
    body.iter().find_map(|st| match st {
        Stmt::Assign {
            place,
            kind: AssignKind::Set,
            ..
        } => match place.proj.as_slice() {
            [Proj::Index(i)] if info.vars.contains(&i.to_string()) => {
                Some((place.base.to_string(), end.clone()))
            }
            _ => None,
        },
        _ => None,
    })
}

/// The key of a kept struct's member `m` (`p.x`).
fn member_key(var: &Ident, m: &syn::Member) -> String {
    format!("{var}.{}", quote!(#m))
}

/// A float operation cheap enough to compute again in the reverse sweep instead of
/// recording its value.
/// The places a call is given by `&mut` (its receiver aside).
fn mutable_args(c: &Call) -> Vec<&Place> {
    c.args
        .iter()
        .filter_map(|a| match a {
            Arg::Ref(p, true) => Some(p),
            _ => None,
        })
        .collect()
}

/// Whether `op` is a `no_grad(..)` that calls something (see `Lowerer`): its value is
/// recorded, never computed again, since the call may have effects (a random number
/// generator's draw).
fn has_effects(op: &Op) -> bool {
    let Op::Inactive(t) = op else {
        return false;
    };
    let mut found = false;
    crate::lower::walk_idents(t, &mut |id| found |= id == "no_grad");
    found
}

fn is_cheap(op: &Op) -> bool {
    match op {
        Op::Use(_) | Op::Neg(_) | Op::Bin(..) | Op::Cast(..) | Op::Load(_) => true,
        Op::Math(name, _) => is_cheap_math(name),
        // Its members are scalars: building it again copies them.
        Op::StructLit(..) => true,
        _ => false,
    }
}

/// The operator that undoes `place += val` / `place -= val` when `val` is an integer
/// literal (so `place` is an integer, and the inverse step is exact).
fn integer_step_undo(kind: AssignKind, val: &Operand) -> Option<TokenStream> {
    let Operand::Lit(t) = val else {
        return None;
    };
    let lit: syn::LitInt = syn::parse2(t.clone()).ok()?;
    if matches!(lit.suffix(), "f32" | "f64") {
        return None;
    }
    match kind {
        AssignKind::Add => Some(quote!(-=)),
        AssignKind::Sub => Some(quote!(+=)),
        _ => None,
    }
}

/// A block being emitted, for deciding which overwrites to record.
struct Frame {
    /// The locals read in the block, each with the index of the first statement that
    /// reads it.
    first_read: HashMap<String, usize>,
    /// The number of statements.
    len: usize,
    /// The locals the block declares.
    decls: HashSet<String>,
    is_loop_body: bool,
    /// The body of a loop whose iterations are reversed as they run (see
    /// [`crate::fused`]): what it overwrites outside needs no record for anything after it.
    fused: bool,
    /// The statement being emitted.
    k: usize,
    /// Names that the block's reverse seeds mention (the adjoints of its result values).
    seeded: HashSet<String>,
    /// Recomputations to emit after the reverse of a statement (by its index).
    late: Vec<(usize, TokenStream)>,
    /// The locals the block may overwrite.
    writes: HashSet<String>,
    /// The locals each statement may overwrite.
    stmt_writes: Vec<HashSet<String>>,
    /// The block's loops that overwrite a buffer from 0 (see [`overwrite_loop`]): the
    /// statement's index, the buffer, the end of the range.
    overwrites: Vec<(usize, String, String)>,
    /// The block's locals computed late, and after the reverse of which statement.
    late_points: HashMap<String, usize>,
}

impl Frame {
    fn new(b: &Block, is_loop_body: bool) -> Self {
        let mut first_read = HashMap::default();
        let mut decls = HashSet::default();
        let mut writes = HashSet::default();
        let mut overwrites = Vec::new();
        let mut each = Vec::new();
        for (i, s) in b.iter().enumerate() {
            let mut w = HashSet::default();
            stmt_writes(s, &mut w);
            writes.extend(w.iter().cloned());
            each.push(w);
            if let Some((buf, end)) = overwrite_loop(s) {
                overwrites.push((i, buf, end));
            }
            for r in stmt_reads(s) {
                first_read.entry(r).or_insert(i);
            }
            match s {
                Stmt::Let { var, .. } => {
                    decls.insert(var.to_string());
                }
                Stmt::LetTuple { vars, .. } => decls.extend(vars.iter().map(|v| v.to_string())),
                Stmt::If { outs, .. } => decls.extend(outs.iter().map(|v| v.to_string())),
                _ => {}
            }
        }
        Frame {
            first_read,
            len: b.len(),
            decls,
            is_loop_body,
            fused: false,
            k: 0,
            seeded: HashSet::default(),
            late: Vec::new(),
            writes,
            stmt_writes: each,
            overwrites,
            late_points: HashMap::default(),
        }
    }
}

/// Adds to `out` the locals of `b` that some statement reads or writes as a place: loaded
/// from by index, copied, lent to a call, a method's receiver, written into, taken apart or
/// bound again.
fn collect_placed(b: &Block, out: &mut HashSet<String>) {
    fn call(c: &Call, out: &mut HashSet<String>) {
        for a in &c.args {
            if let Arg::Ref(p, _) | Arg::Copied(p) = a {
                out.insert(p.base.to_string());
            }
        }
        if let Callee::Method(p, _) = &c.callee {
            out.insert(p.base.to_string());
        }
    }
    for s in b {
        match s {
            Stmt::Let { op, .. } | Stmt::LetTuple { op, .. } => match op {
                Op::Load(p) | Op::CloneOf(p, _) | Op::Pop(p) => {
                    out.insert(p.base.to_string());
                }
                Op::Call(c) => call(c, out),
                // A call's tuple taken apart (`let (v, t) = r;`, a vector and its tangent),
                // or a part of it bound again (`let h = v;`), is moved there.
                Op::Use(Operand::Var(v)) => {
                    out.insert(v.to_string());
                }
                _ => {}
            },
            // `h = t;` of a whole local moves `t` there (`let h; if c { h = relu(x); }`).
            Stmt::Assign {
                place,
                kind: AssignKind::Set,
                val: Operand::Var(v),
            } if place.is_whole() => {
                out.insert(place.base.to_string());
                out.insert(v.to_string());
            }
            // A vector pushed as a row is read (copied) there.
            Stmt::Push {
                place,
                val: Operand::Var(v),
                copy: true,
            } => {
                out.insert(place.base.to_string());
                out.insert(v.to_string());
            }
            Stmt::Assign { place, .. } | Stmt::Push { place, .. } | Stmt::Fill { place, .. } => {
                out.insert(place.base.to_string());
            }
            Stmt::CopyFrom { dst, src, .. } => {
                out.insert(dst.base.to_string());
                out.insert(src.base.to_string());
            }
            Stmt::Call(c) => call(c, out),
            Stmt::If {
                then,
                els,
                then_vals,
                else_vals,
                ..
            } => {
                collect_placed(then, out);
                collect_placed(els, out);
                // A branch's value is moved into the `if`'s result.
                for v in then_vals.iter().chain(else_vals) {
                    if let Operand::Var(v) = v {
                        out.insert(v.to_string());
                    }
                }
            }
            Stmt::For { body, .. } | Stmt::Loop { body, .. } => collect_placed(body, out),
            Stmt::Inactive(_) => {}
        }
    }
}

/// What [`Reverse::member_seeds`] looks for: members (`s.w`, reached through fields only)
/// that change length, members that are indexed, and the structs lent mutably to calls.
#[derive(Default)]
struct MemberUses {
    resized: Vec<Place>,
    indexed: Vec<Place>,
    lent: HashSet<String>,
    /// Members that hold rows (a matrix `[[f64; 2]; 2]`, `Vec<Vec<f64>>`): indexed twice,
    /// or whose elements are used as buffers, as text.
    rows: HashSet<String>,
}

impl MemberUses {
    fn block(&mut self, b: &Block, rev: &Reverse) {
        for s in b {
            match s {
                Stmt::Let { op, .. } | Stmt::LetTuple { op, .. } => match op {
                    Op::Load(p) | Op::Pop(p) => self.place(p),
                    Op::CloneOf(p, _) => self.whole(p),
                    Op::Call(c) => self.call(c, rev),
                    _ => {}
                },
                Stmt::Assign { place, .. } => self.place(place),
                Stmt::Fill { place, .. } => self.whole(place),
                Stmt::Push { place, .. } => {
                    self.place(place);
                    if is_member(place) {
                        self.resized.push(place.clone());
                    }
                }
                Stmt::CopyFrom { dst, src, mode } => {
                    self.whole(dst);
                    self.whole(src);
                    if *mode == CopyMode::Resized && is_member(dst) {
                        self.resized.push(dst.clone());
                    }
                }
                Stmt::Call(c) => self.call(c, rev),
                Stmt::If { then, els, .. } => {
                    self.block(then, rev);
                    self.block(els, rev);
                }
                Stmt::For { body, .. } | Stmt::Loop { body, .. } => self.block(body, rev),
                Stmt::Inactive(_) => {}
            }
        }
    }

    /// The member that `p` indexes (`s.w` of `s.w[i]`), and whether it indexes it again
    /// (`s.p[i][j]`).
    fn indexed_member(p: &Place) -> Option<(Place, bool)> {
        let fields = p
            .proj
            .iter()
            .take_while(|q| matches!(q, Proj::Field(_)))
            .count();
        if fields > 0 && matches!(p.proj.get(fields), Some(Proj::Index(_))) {
            let member = Place {
                base: p.base.clone(),
                proj: p.proj[..fields].to_vec(),
            };
            Some((member, p.proj.len() > fields + 1))
        } else {
            None
        }
    }

    /// A member's element read or written (`s.w[i]`), or an element of its rows
    /// (`s.p[i][j]`).
    fn place(&mut self, p: &Place) {
        if let Some((member, again)) = Self::indexed_member(p) {
            if again {
                self.rows.insert(member.primal().to_string());
            }
            self.indexed.push(member);
        }
    }

    /// A place used as a buffer (filled, copied, lent): where it is a member's element
    /// (`s.w[i].fill(0.0)`), not a part of it (`s.w[..n]`), the member holds rows.
    fn whole(&mut self, p: &Place) {
        if let Some((member, _)) = Self::indexed_member(p) {
            let fields = member.proj.len();
            let part =
                matches!(&p.proj[fields], Proj::Index(i) if crate::lower::is_range_tokens(i));
            if !part {
                self.rows.insert(member.primal().to_string());
            }
        }
    }

    fn call(&mut self, c: &Call, rev: &Reverse) {
        for a in &c.args {
            let (p, mutable) = match a {
                Arg::Ref(p, mutable) => (p, *mutable),
                Arg::Copied(p) => (p, false),
                _ => continue,
            };
            self.whole(p);
            if mutable && p.is_whole() {
                self.lent.insert(p.base.to_string());
            }
        }
        if let Callee::Method(p, _) = &c.callee {
            self.whole(p);
            if p.is_whole() && rev.may_change_receiver(p) {
                self.lent.insert(p.base.to_string());
            }
        }
    }
}

/// Adds to `out` the locals of `b` that may hold a tuple: results of calls, the parts of
/// such results, and copies of either.
fn collect_maybe_tuples(b: &Block, out: &mut HashSet<String>) {
    for s in b {
        match s {
            Stmt::Let { var, op, .. } => {
                let from_tuple = match op {
                    Op::Call(_) => true,
                    Op::Use(Operand::Var(w)) => out.contains(&w.to_string()),
                    _ => false,
                };
                if from_tuple {
                    out.insert(var.to_string());
                }
            }
            Stmt::LetTuple { vars, op } => {
                if matches!(op, Op::Call(_) | Op::Use(Operand::Var(_))) {
                    out.extend(vars.iter().map(|v| v.to_string()));
                }
            }
            Stmt::If {
                then,
                els,
                outs,
                then_vals,
                else_vals,
                ..
            } => {
                collect_maybe_tuples(then, out);
                collect_maybe_tuples(els, out);
                // `let h = if c { relu(x) } else { sq(x) };`: the value chosen is a call's.
                let from_call =
                    |o: &Operand| matches!(o, Operand::Var(w) if out.contains(&w.to_string()));
                let chosen: Vec<String> = (outs.iter().zip(then_vals.iter().zip(else_vals)))
                    .filter(|(_, (t, e))| from_call(t) || from_call(e))
                    .map(|(o, _)| o.to_string())
                    .collect();
                out.extend(chosen);
            }
            Stmt::For { body, .. } | Stmt::Loop { body, .. } => collect_maybe_tuples(body, out),
            _ => {}
        }
    }
}

/// The locals loaded from a struct's member (`let t = f.b;`) that a struct value built in
/// the body takes as a member (`Filt { b: t, .. }`): the member may be an array, whose
/// adjoint has no `+=` (the macro cannot see the struct's declaration), so their adjoints
/// are added as a call's result's are.
fn member_loads_in_struct_values(b: &Block, out: &mut HashSet<String>) {
    fn each(b: &Block, f: &mut dyn FnMut(&Stmt)) {
        for s in b {
            f(s);
            match s {
                Stmt::If { then, els, .. } => {
                    each(then, f);
                    each(els, f);
                }
                Stmt::For { body, .. } | Stmt::Loop { body, .. } => each(body, f),
                _ => {}
            }
        }
    }
    let (mut taken, mut loads) = (HashSet::default(), Vec::new());
    each(b, &mut |s| match s {
        Stmt::Let {
            op: Op::StructLit(_, members),
            ..
        } => taken.extend(
            members
                .iter()
                .filter_map(|(_, o)| o.var())
                .map(|v| v.to_string()),
        ),
        Stmt::Let {
            var,
            op: Op::Load(p),
            ..
        } if matches!(p.proj.last(), Some(Proj::Field(_))) => loads.push(var.to_string()),
        _ => {}
    });
    out.extend(loads.into_iter().filter(|v| taken.contains(v)));
}

/// `propagate` run only where the adjoint `g` is not zero: for an operation whose partials
/// can be infinite where its value is finite, a value that the path taken does not use
/// (adjoint zero) gives its inputs nothing, not `0 · ∞`.
fn only_nonzero(g: &TokenStream, propagate: TokenStream) -> TokenStream {
    quote!(if __ad::nonzero(#g) { #propagate })
}

impl Reverse<'_> {
    /// Whether `p` is a member of a struct parameter (`s.w`, `self.hist`). Its shadow is
    /// the caller's, of the member's length on entry, where the shadow of a local buffer,
    /// or of a member of a struct built in the function (`st.v`), is made after the
    /// forward sweep with its final length.
    fn is_param_member(&self, p: &Place) -> bool {
        is_member(p)
            && matches!(
                self.kinds.get(&p.base.to_string()),
                Some(VarKind::Ref { .. })
            )
    }
}

/// Whether `p` is a member of a struct (`s.w`, `self.hist`, `st.v`).
fn is_member(p: &Place) -> bool {
    !p.is_whole() && p.proj.iter().all(|q| matches!(q, Proj::Field(_)))
}

/// The position of the last statement of `b` that may write `var`, which `b[declared]`
/// binds: the binding itself when nothing after it does. A statement kept as written that
/// names `var` counts as a write.
fn last_write(b: &Block, declared: usize, var: &Ident) -> usize {
    let name = var.to_string();
    let writes = |s: &Stmt| {
        let mut w = HashSet::default();
        stmt_writes(s, &mut w);
        w.contains(&name) || names_in_inactive(s, &name)
    };
    (declared + 1..b.len())
        .rev()
        .find(|&k| writes(&b[k]))
        .unwrap_or(declared)
}

/// Whether a statement kept as written, in `s` or nested in it, names `name`.
fn names_in_inactive(s: &Stmt, name: &str) -> bool {
    match s {
        Stmt::Inactive(t) => {
            let mut found = false;
            crate::lower::walk_idents(t, &mut |id| found |= id == name);
            found
        }
        Stmt::If { then, els, .. } => then.iter().chain(els).any(|s| names_in_inactive(s, name)),
        Stmt::For { body, .. } | Stmt::Loop { body, .. } => {
            body.iter().any(|s| names_in_inactive(s, name))
        }
        _ => false,
    }
}

/// Whether `c` is the matrix product that whole-array expressions call
/// (`__ad::arrays::matmul_add`, see `lower/array_exprs.rs`).
fn is_matrix_product(c: &Call) -> bool {
    let Callee::Path(p) = &c.callee else {
        return false;
    };
    let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
    segs == ["__ad", "arrays", "matmul_add"]
}
