//! The shadows of struct members whose lengths change in a forward sweep.
//!
//! A caller's shadow of a `Vec` member of a `&mut` struct holds the seed of the member's
//! final values. Where the member's length changes (here, or in a callee given the
//! struct), the reverse companion takes that seed aside when its forward sweep starts,
//! lets the shadow follow the member's length with zeros, and adds the seed back when the
//! forward sweep ends (see the macros' `member_seeds`). The macros cannot see a member's
//! type, so these functions do their work on a `Vec<f64>` or `Vec<f32>` and nothing on any
//! other type (an array, an `ndarray` array, a container of the user's, a vector of
//! integers), whose length cannot change or which carries no derivative.

use core::any::Any;

/// The seed a member's shadow held when a forward sweep started.
pub enum MemberSeed {
    /// Not a vector of floats: nothing was taken.
    None,
    F64(Vec<f64>),
    F32(Vec<f32>),
}

fn vec_mut<T: 'static, A: Any>(a: &mut A) -> Option<&mut Vec<T>> {
    (a as &mut dyn Any).downcast_mut::<Vec<T>>()
}

fn len_of<P: Any>(p: &P) -> Option<usize> {
    let p = p as &dyn Any;
    p.downcast_ref::<Vec<f64>>()
        .map(Vec::len)
        .or_else(|| p.downcast_ref::<Vec<f32>>().map(Vec::len))
}

/// Takes the seed out of the shadow `a` of the member `p`, leaving zeros of `p`'s length.
#[inline]
pub fn member_take_seed<A: Any, P: Any>(a: &mut A, p: &P) -> MemberSeed {
    let Some(n) = len_of(p) else {
        return MemberSeed::None;
    };
    if let Some(v) = vec_mut::<f64, A>(a) {
        return MemberSeed::F64(core::mem::replace(v, vec![0.0; n]));
    }
    if let Some(v) = vec_mut::<f32, A>(a) {
        return MemberSeed::F32(core::mem::replace(v, vec![0.0; n]));
    }
    MemberSeed::None
}

/// Adds the seed taken by [`member_take_seed`] back into the shadow `a`, over the
/// elements both have.
#[inline]
pub fn member_add_seed<A: Any>(a: &mut A, seed: MemberSeed) {
    fn add<T: Copy + core::ops::AddAssign>(v: &mut [T], s: &[T]) {
        for (x, y) in v.iter_mut().zip(s) {
            *x += *y;
        }
    }
    match seed {
        MemberSeed::F64(s) => {
            if let Some(v) = vec_mut::<f64, A>(a) {
                add(v, &s);
            }
        }
        MemberSeed::F32(s) => {
            if let Some(v) = vec_mut::<f32, A>(a) {
                add(v, &s);
            }
        }
        MemberSeed::None => {}
    }
}

/// Gives the shadow `a` the length of the member `p` (after a call that may have changed
/// it), keeping its values and adding zeros.
#[inline]
pub fn member_fit<A: Any, P: Any>(a: &mut A, p: &P) {
    let Some(n) = len_of(p) else {
        return;
    };
    if let Some(v) = vec_mut::<f64, A>(a) {
        v.resize(n, 0.0);
    } else if let Some(v) = vec_mut::<f32, A>(a) {
        v.resize(n, 0.0);
    }
}

/// Makes the shadow `a` at least as long as the member `p`, with zeros (a pullback that
/// reads a member a callee grew, whose caller did not grow the shadow with it).
#[inline]
pub fn member_grow<A: Any, P: Any>(a: &mut A, p: &P) {
    let Some(n) = len_of(p) else {
        return;
    };
    if let Some(v) = vec_mut::<f64, A>(a) {
        if v.len() < n {
            v.resize(n, 0.0);
        }
    } else if let Some(v) = vec_mut::<f32, A>(a)
        && v.len() < n
    {
        v.resize(n, 0.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_follows_the_members_length() {
        let member = vec![1.0, 2.0, 3.0];
        let mut shadow = vec![5.0, 6.0];
        let seed = member_take_seed(&mut shadow, &member);
        assert_eq!(shadow, vec![0.0; 3]);
        member_fit(&mut shadow, &vec![0.0; 1]);
        assert_eq!(shadow, vec![0.0]);
        member_grow(&mut shadow, &vec![0.0; 4]);
        assert_eq!(shadow, vec![0.0; 4]);
        member_add_seed(&mut shadow, seed);
        assert_eq!(shadow, vec![5.0, 6.0, 0.0, 0.0]);
    }

    #[test]
    fn other_types_are_left_alone() {
        let mut array = [1.0, 2.0];
        assert!(matches!(
            member_take_seed(&mut array, &[3.0, 4.0]),
            MemberSeed::None
        ));
        member_fit(&mut array, &[0.0; 2]);
        assert_eq!(array, [1.0, 2.0]);
        let mut ids: Vec<usize> = vec![1];
        member_grow(&mut ids, &vec![1usize, 2, 3]);
        assert_eq!(ids, vec![1]);
    }
}
