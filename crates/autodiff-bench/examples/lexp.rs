#![allow(unused, non_snake_case, clippy::all)]
use autodiff_bench::lstm::{lstm_model, lstm_predict};
#[inline]
pub fn predict_aug(
    l: usize,
    b: usize,
    main: &[f64],
    extra: &[f64],
    hidden: &mut [f64],
    cell: &mut [f64],
    input: &[f64],
    ypred: &mut [f64],
) -> (
    (),
    impl FnOnce(
        usize,
        usize,
        &[f64],
        &[f64],
        &mut [f64],
        &mut [f64],
        &[f64],
        &mut [f64],
        &mut [f64],
        &mut [f64],
        &mut [f64],
        &mut [f64],
        &mut [f64],
        &mut [f64],
    ) + use<>,
) {
    use ::autodiff_core::__private as __ad;
    let __ad_mark = ();
    let mut __ad_tape2 = __ad::Tape::new();
    let mut __ad_tape4 = __ad::Tape::new();
    let mut __ad_tape8 = __ad::Tape::new();
    let mut __ad_tape9 = __ad::SavedSlices::new();
    let mut __ad1_xp = :: std :: vec! [(0.0); b];
    let __ad_iter1 = 0..b;
    for __ad2_i in ::core::clone::Clone::clone(&__ad_iter1) {
        let __ad3_i = __ad2_i;
        let __ad4_t = input[__ad3_i];
        let __ad5_t = extra[__ad3_i];
        let __ad6_t = __ad4_t * __ad5_t;
        __ad1_xp[__ad3_i] = __ad6_t;
    }
    let __ad_iter10 = 0..l;
    {
        let __ad_n = ::core::iter::Iterator::size_hint(&__ad_iter10).0;
        __ad_tape2.reserve(__ad_n);
        __ad_tape4.reserve(__ad_n);
        __ad_tape8.reserve(__ad_n);
        __ad_tape9.reserve(__ad_n);
    }
    for __ad7_i in ::core::clone::Clone::clone(&__ad_iter10) {
        let __ad8_li = __ad7_i;
        __ad_tape2.push(__ad::snapshot(&hidden[__ad8_li * b..(__ad8_li + 1) * b]));
        __ad_tape4.push(__ad::snapshot(&cell[__ad8_li * b..(__ad8_li + 1) * b]));
        let __ad_result7 = lstm_model::__ad_aug(
            b,
            &main[__ad8_li * 8 * b..(__ad8_li + 1) * 8 * b],
            &mut hidden[__ad8_li * b..(__ad8_li + 1) * b],
            &mut cell[__ad8_li * b..(__ad8_li + 1) * b],
            &__ad1_xp,
        );
        let __ad_state6 = __ad_result7.1;
        __ad_tape8.push(__ad_state6);
        let _ = __ad_result7.0;
        __ad_tape9.save(&__ad1_xp[..]);
        __ad1_xp.copy_from_slice(&hidden[__ad8_li * b..(__ad8_li + 1) * b][..]);
    }
    let __ad_iter11 = 0..b;
    for __ad10_i in ::core::clone::Clone::clone(&__ad_iter11) {
        let __ad11_i = __ad10_i;
        let __ad12_t = __ad1_xp[__ad11_i];
        let __ad13_t = extra[b + __ad11_i];
        let __ad14_t = __ad12_t * __ad13_t;
        let __ad15_t = extra[2 * b + __ad11_i];
        let __ad16_t = __ad14_t + __ad15_t;
        ypred[__ad11_i] = __ad16_t;
    }

    (
        (),
        move |l: usize,
              b: usize,
              main: &[f64],
              extra: &[f64],
              hidden: &mut [f64],
              cell: &mut [f64],
              input: &[f64],
              ypred: &mut [f64],
              __b_main: &mut [f64],
              __b_extra: &mut [f64],
              __b_hidden: &mut [f64],
              __b_cell: &mut [f64],
              __b_input: &mut [f64],
              __b_ypred: &mut [f64]| {
            let mut __ad_tape2 = __ad_tape2;
            let mut __ad_tape4 = __ad_tape4;
            let mut __ad_tape8 = __ad_tape8;
            let mut __ad_tape9 = __ad_tape9;
            let mut __ad1_xp = __ad1_xp;
            let __ad_mark = ();

            let mut __b___ad1_xp = __ad::zero_like(&__ad1_xp);
            for __ad10_i in ::core::iter::Iterator::rev(__ad_iter11) {
                {
                    let __ad11_i = __ad10_i;
                    let __ad12_t = __ad1_xp[__ad11_i];
                    let __ad13_t = extra[b + __ad11_i];
                    let __ad14_t = __ad12_t * __ad13_t;
                    let __ad15_t = extra[2 * b + __ad11_i];
                    let __ad16_t = __ad14_t + __ad15_t;
                    let mut __b___ad12_t = __ad::accumulator_zero(&__ad12_t);
                    let mut __b___ad13_t = __ad::accumulator_zero(&__ad13_t);
                    let mut __b___ad14_t = __ad::accumulator_zero(&__ad14_t);
                    let mut __b___ad15_t = __ad::accumulator_zero(&__ad15_t);
                    let mut __b___ad16_t = __ad::accumulator_zero(&__ad16_t);
                    let __ad_g = __b_ypred[__ad11_i];
                    __b_ypred[__ad11_i] = __ad::zero_like(&__ad_g);
                    __b___ad16_t += __ad_g;
                    __b___ad14_t += __b___ad16_t;
                    __b___ad15_t += __b___ad16_t;
                    __b_extra[2 * b + __ad11_i] += __b___ad15_t;
                    __b___ad12_t += __b___ad14_t * __ad13_t;
                    __b___ad13_t += __ad12_t * __b___ad14_t;
                    __b_extra[b + __ad11_i] += __b___ad13_t;
                    __b___ad1_xp[__ad11_i] += __b___ad12_t;
                }
            }
            for __ad7_i in ::core::iter::Iterator::rev(__ad_iter10) {
                {
                    let __ad8_li = __ad7_i;
                    __ad::add_into(
                        &mut __b_hidden[__ad8_li * b..(__ad8_li + 1) * b][..],
                        &__b___ad1_xp[..],
                    );
                    __ad1_xp.copy_from_slice(&__ad::take(__ad_tape9.pop())[..]);
                    __ad::fill_zero(&mut __b___ad1_xp[..]);
                    let __ad_saved3 = __ad::take(__ad_tape2.pop());
                    __ad::restore_from(&mut hidden[__ad8_li * b..(__ad8_li + 1) * b], &__ad_saved3);
                    let __ad_saved5 = __ad::take(__ad_tape4.pop());
                    __ad::restore_from(&mut cell[__ad8_li * b..(__ad8_li + 1) * b], &__ad_saved5);
                    {
                        lstm_model::__ad_pull(
                            __ad::take(__ad_tape8.pop()),
                            b,
                            __ad::Discard,
                            &main[__ad8_li * 8 * b..(__ad8_li + 1) * 8 * b],
                            &mut __b_main[__ad8_li * 8 * b..(__ad8_li + 1) * 8 * b],
                            &mut hidden[__ad8_li * b..(__ad8_li + 1) * b],
                            &mut __b_hidden[__ad8_li * b..(__ad8_li + 1) * b],
                            &mut cell[__ad8_li * b..(__ad8_li + 1) * b],
                            &mut __b_cell[__ad8_li * b..(__ad8_li + 1) * b],
                            &__ad1_xp,
                            &mut __b___ad1_xp,
                            __ad::Zero,
                            __ad_mark,
                        );
                    };
                    __ad::restore(&mut hidden[__ad8_li * b..(__ad8_li + 1) * b], __ad_saved3);
                    __ad::restore(&mut cell[__ad8_li * b..(__ad8_li + 1) * b], __ad_saved5);
                }
            }
            for __ad2_i in ::core::iter::Iterator::rev(__ad_iter1) {
                {
                    let __ad3_i = __ad2_i;
                    let __ad4_t = input[__ad3_i];
                    let __ad5_t = extra[__ad3_i];
                    let __ad6_t = __ad4_t * __ad5_t;
                    let mut __b___ad4_t = __ad::accumulator_zero(&__ad4_t);
                    let mut __b___ad5_t = __ad::accumulator_zero(&__ad5_t);
                    let mut __b___ad6_t = __ad::accumulator_zero(&__ad6_t);
                    let __ad_g = __b___ad1_xp[__ad3_i];
                    __b___ad1_xp[__ad3_i] = __ad::zero_like(&__ad_g);
                    __b___ad6_t += __ad_g;
                    __b___ad4_t += __b___ad6_t * __ad5_t;
                    __b___ad5_t += __ad4_t * __b___ad6_t;
                    __b_extra[__ad3_i] += __b___ad5_t;
                    __b_input[__ad3_i] += __b___ad4_t;
                }
            }
        },
    )
}
#[inline]
pub fn predict_pull(
    st: impl FnOnce(
        usize,
        usize,
        &[f64],
        &[f64],
        &mut [f64],
        &mut [f64],
        &[f64],
        &mut [f64],
        &mut [f64],
        &mut [f64],
        &mut [f64],
        &mut [f64],
        &mut [f64],
        &mut [f64],
    ),
    l: usize,
    _kl: impl Sized,
    b: usize,
    _kb: impl Sized,
    main: &[f64],
    b_main: &mut [f64],
    extra: &[f64],
    b_extra: &mut [f64],
    hidden: &mut [f64],
    b_hidden: &mut [f64],
    cell: &mut [f64],
    b_cell: &mut [f64],
    input: &[f64],
    _ki: impl Sized,
    ypred: &mut [f64],
    b_ypred: &mut [f64],
    _z: impl Sized,
    _m: impl Sized,
) {
    let mut scratch = vec![0.0; input.len()];
    st(
        l,
        b,
        main,
        extra,
        hidden,
        cell,
        input,
        ypred,
        b_main,
        b_extra,
        b_hidden,
        b_cell,
        &mut scratch,
        b_ypred,
    )
}
#[inline(never)]
pub fn exp_grad(
    main: &[f64],
    __b_main: &mut [f64],
    extra: &[f64],
    __b_extra: &mut [f64],
    state: &[f64],
    seq: &[f64],
    l: usize,
    b: usize,
    __ad_seed: f64,
) -> f64 {
    use ::autodiff_core::__private as __ad;
    let __ad_mark = ();
    let __b_main = &mut __b_main[..main.len()];
    let __b_extra = &mut __b_extra[..extra.len()];
    let mut __ad_tape3 = __ad::SavedSlices::new();
    let mut __ad_tape5 = __ad::SavedSlices::new();
    let mut __ad_tape7 = __ad::SavedSlices::new();
    let mut __ad_tape11 = __ad::Tape::new();
    let mut __ad_keep___ad20_t = __ad::Tape::new();
    let mut __ad_keep___ad23_lse = __ad::Tape::new();
    let mut __ad_keep___ad16_se = __ad::Tape::new();
    let __ad2_c = (seq.len()) / b;
    let mut __ad3_hidden = :: std :: vec! [(0.0); l * b];
    let mut __ad4_cell = :: std
    :: vec! [(0.0); l * b];
    let __ad_iter2 = 0..l;
    for __ad5_i in ::core::clone::Clone::clone(&__ad_iter2) {
        let __ad6_li = __ad5_i;
        let __ad_iter1 = 0..b;
        for __ad7_i in ::core::clone::Clone::clone(&__ad_iter1) {
            let __ad8_i = __ad7_i;
            let __ad9_t = state[2 * __ad6_li * b + __ad8_i];
            __ad3_hidden[__ad6_li * b + __ad8_i] = __ad9_t;
            let __ad10_t = state[2 * __ad6_li * b + b + __ad8_i];
            __ad4_cell[__ad6_li * b + __ad8_i] = __ad10_t;
        }
    }
    let mut __ad11_ypred = :: std :: vec! [(0.0); b];
    let mut __ad12_total = 0.0;
    let __ad_iter14 = 0..__ad2_c - 1;
    {
        let __ad_n = ::core::iter::Iterator::size_hint(&__ad_iter14).0;
        __ad_tape3.reserve(__ad_n);
        __ad_tape5.reserve(__ad_n);
        __ad_tape7.reserve(__ad_n);
        __ad_tape11.reserve(__ad_n);
        __ad_keep___ad23_lse.reserve(__ad_n);
        __ad_keep___ad16_se.reserve(__ad_n);
    }
    for __ad13_i in ::core::clone::Clone::clone(&__ad_iter14) {
        let __ad14_t = __ad13_i;
        __ad_tape3.save(&__ad3_hidden[..]);
        __ad_tape5.save(&__ad4_cell[..]);
        __ad_tape7.save(&__ad11_ypred[..]);
        let __ad_result10 = predict_aug(
            l,
            b,
            &*main,
            &*extra,
            &mut __ad3_hidden,
            &mut __ad4_cell,
            &seq[__ad14_t * b..(__ad14_t + 1) * b],
            &mut __ad11_ypred,
        );
        let __ad_state9 = __ad_result10.1;
        __ad_tape11.push(__ad_state9);
        let _ = __ad_result10.0;
        let mut __ad16_se = 0.0;
        let __ad_iter12 = 0..b;
        {
            let __ad_n = ::core::iter::Iterator::size_hint(&__ad_iter12).0;
            __ad_keep___ad20_t.reserve(__ad_n);
        }
        for __ad17_i in ::core::clone::Clone::clone(&__ad_iter12) {
            let __ad18_i = __ad17_i;
            let __ad19_t = __ad11_ypred[__ad18_i];
            let __ad20_t = __ad19_t.exp();
            __ad_keep___ad20_t.push(__ad20_t);
            __ad16_se += __ad20_t;
        }
        let __ad21_t = __ad16_se + (2.0);
        let __ad23_lse = __ad21_t.ln();
        __ad_keep___ad23_lse.push(__ad23_lse);
        let __ad_iter13 = 0..b;
        for __ad24_i in ::core::clone::Clone::clone(&__ad_iter13) {
            let __ad25_i = __ad24_i;
            let __ad26_t = seq[(__ad14_t + 1) * b + __ad25_i];
            let __ad27_t = __ad11_ypred[__ad25_i];
            let __ad28_t = __ad27_t - __ad23_lse;
            let __ad29_t = __ad26_t * __ad28_t;
            __ad12_total += __ad29_t;
        }
        __ad_keep___ad16_se.push(__ad16_se);
    }
    let __ad30_t = -__ad12_total;
    let __ad31_t = __ad2_c - (1);
    let __ad32_t = __ad31_t * b;
    let __ad33_t = __ad32_t as f64;
    let __ad34_t = __ad30_t / __ad33_t;
    let __ad_primal = __ad34_t;
    let mut __b___ad3_hidden = __ad::zero_like(&__ad3_hidden);
    let mut __b___ad4_cell = __ad::zero_like(&__ad4_cell);
    let mut __b___ad11_ypred = __ad::zero_like(&__ad11_ypred);
    let mut __b___ad12_total = __ad::accumulator_zero(&__ad12_total);
    let mut __b___ad30_t = __ad::accumulator_zero(&__ad30_t);
    let mut __b___ad34_t = __ad::accumulator_zero(&__ad34_t);
    __b___ad34_t += __ad_seed;
    __b___ad30_t += __b___ad34_t / __ad33_t;
    __b___ad12_total += -__b___ad30_t;
    for __ad13_i in ::core::iter::Iterator::rev(__ad_iter14) {
        {
            let __ad14_t = __ad13_i;
            let mut __ad16_se = __ad::take(__ad_keep___ad16_se.pop());
            let __ad21_t = __ad16_se + (2.0);
            let __ad23_lse = __ad::take(__ad_keep___ad23_lse.pop());
            let mut __b___ad16_se = __ad::accumulator_zero(&__ad16_se);
            let mut __b___ad21_t = __ad::accumulator_zero(&__ad21_t);
            let mut __b___ad23_lse = __ad::accumulator_zero(&__ad23_lse);
            for __ad24_i in ::core::iter::Iterator::rev(0..b) {
                {
                    let __ad25_i = __ad24_i;
                    let __ad26_t = seq[(__ad14_t + 1) * b + __ad25_i];
                    let __ad27_t = __ad11_ypred[__ad25_i];
                    let __ad28_t = __ad27_t - __ad23_lse;
                    let __ad29_t = __ad26_t * __ad28_t;
                    let mut __b___ad27_t = __ad::accumulator_zero(&__ad27_t);
                    let mut __b___ad28_t = __ad::accumulator_zero(&__ad28_t);
                    let mut __b___ad29_t = __ad::accumulator_zero(&__ad29_t);
                    __b___ad29_t += __b___ad12_total;
                    __b___ad28_t += __ad26_t * __b___ad29_t;
                    __b___ad27_t += __b___ad28_t;
                    __b___ad23_lse += -__b___ad28_t;
                    __b___ad11_ypred[__ad25_i] += __b___ad27_t;
                }
            }
            {
                let __ad_p = __ad::d::ln(__ad21_t, __ad23_lse);
                __b___ad21_t += __b___ad23_lse * __ad_p;
            }
            __b___ad16_se += __b___ad21_t;
            for __ad17_i in ::core::iter::Iterator::rev(0..b) {
                {
                    let __ad18_i = __ad17_i;
                    let __ad19_t = __ad11_ypred[__ad18_i];
                    let __ad20_t = __ad::take(__ad_keep___ad20_t.pop());
                    let mut __b___ad19_t = __ad::accumulator_zero(&__ad19_t);
                    let mut __b___ad20_t = __ad::accumulator_zero(&__ad20_t);
                    __b___ad20_t += __b___ad16_se;
                    {
                        let __ad_p = __ad::d::exp(__ad19_t, __ad20_t);
                        __b___ad19_t += __b___ad20_t * __ad_p;
                    }
                    __b___ad11_ypred[__ad18_i] += __b___ad19_t;
                }
            }
            let __ad_saved4 = __ad::take(__ad_tape3.pop());
            __ad::restore_from(&mut __ad3_hidden, &__ad_saved4);
            let __ad_saved6 = __ad::take(__ad_tape5.pop());
            __ad::restore_from(&mut __ad4_cell, &__ad_saved6);
            let __ad_saved8 = __ad::take(__ad_tape7.pop());
            __ad::restore_from(&mut __ad11_ypred, &__ad_saved8);
            {
                predict_pull(
                    __ad::take(__ad_tape11.pop()),
                    l,
                    __ad::Discard,
                    b,
                    __ad::Discard,
                    &*main,
                    &mut *__b_main,
                    &*extra,
                    &mut *__b_extra,
                    &mut __ad3_hidden,
                    &mut __b___ad3_hidden,
                    &mut __ad4_cell,
                    &mut __b___ad4_cell,
                    &seq[__ad14_t * b..(__ad14_t + 1) * b],
                    __ad::Discard,
                    &mut __ad11_ypred,
                    &mut __b___ad11_ypred,
                    __ad::Zero,
                    __ad_mark,
                );
            };
            __ad::restore(&mut __ad3_hidden, __ad_saved4);
            __ad::restore(&mut __ad4_cell, __ad_saved6);
            __ad::restore(&mut __ad11_ypred, __ad_saved8);
        }
    }
    for __ad5_i in ::core::iter::Iterator::rev(__ad_iter2) {
        {
            let __ad6_li = __ad5_i;
            for __ad7_i in ::core::iter::Iterator::rev(0..b) {
                {
                    let __ad8_i = __ad7_i;
                    let __ad9_t = state[2 * __ad6_li * b + __ad8_i];
                    let __ad10_t = state[2 * __ad6_li * b + b + __ad8_i];
                    let __ad_g = __b___ad4_cell[__ad6_li * b + __ad8_i];
                    __b___ad4_cell[__ad6_li * b + __ad8_i] = __ad::zero_like(&__ad_g);
                    let __ad_g = __b___ad3_hidden[__ad6_li * b + __ad8_i];
                    __b___ad3_hidden[__ad6_li * b + __ad8_i] = __ad::zero_like(&__ad_g);
                }
            }
        }
    }
    __ad_primal
}
