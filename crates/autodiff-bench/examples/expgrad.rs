#![allow(unused, non_snake_case, clippy::all)]
use autodiff_bench::gmm::logsumexp;
#[inline(never)]
pub fn exp_grad(
    alphas: &[f64],
    __b_alphas: &mut [f64],
    means: &[f64],
    __b_means: &mut [f64],
    icf: &[f64],
    __b_icf: &mut [f64],
    x: &[f64],
    d: usize,
    k: usize,
    gamma: f64,
    m: f64,
    constant: f64,
    __ad_seed: f64,
) -> f64 {
    use ::autodiff_core::__private as __ad;
    let __ad_mark = ();
    let __b_alphas = &mut __b_alphas[..alphas.len()];
    let __b_means = &mut __b_means[..means.len()];
    let __b_icf = &mut __b_icf[..icf.len()];
    let mut __ad_keep___ad15_t = __ad::Tape::new();
    let mut __ad_keep___ad11_sq = __ad::Stack::new();
    let mut __ad_tape4 = __ad::Tape::new();
    let mut __ad_keep___ad36_li = __ad::Tape::new();
    let mut __ad_keep___ad44_sqnorm = __ad::DeadStore::new();
    let mut __ad_keep___ad60_frobenius = __ad::DeadStore::new();
    let __ad2_n = (x.len()) / d;
    let __ad3_t = d + (1);
    let __ad4_t = d * __ad3_t;
    let __ad6_icf_sz = __ad4_t / (2);
    let mut __ad7_qdiags = :: std :: vec!
    [(0.0); k * d];
    let mut __ad8_sum_qs = :: std :: vec! [(0.0); k];
    let __ad_iter2 = 0..k;
    {
        let __ad_n = ::core::iter::Iterator::size_hint(&__ad_iter2).0;
        __ad_keep___ad11_sq.reserve(__ad_n);
    }
    for __ad9_i in ::core::clone::Clone::clone(&__ad_iter2) {
        let __ad10_ik = __ad9_i;
        let mut __ad11_sq = 0.0;
        let __ad_iter1 = 0..d;
        {
            let __ad_n = ::core::iter::Iterator::size_hint(&__ad_iter1).0;
            __ad_keep___ad15_t.reserve(__ad_n);
        }
        for __ad12_i in ::core::clone::Clone::clone(&__ad_iter1) {
            let __ad13_j = __ad12_i;
            let __ad14_q = icf[__ad10_ik * __ad6_icf_sz + __ad13_j];
            __ad11_sq += __ad14_q;
            let __ad15_t = __ad14_q.exp();
            __ad_keep___ad15_t.push(__ad15_t);
            __ad7_qdiags[__ad10_ik * d + __ad13_j] = __ad15_t;
        }
        __ad8_sum_qs[__ad10_ik] = __ad11_sq;
        __ad_keep___ad11_sq.push(__ad11_sq);
    }
    let mut __ad16_xcentered = :: std :: vec! [(0.0); d];
    let mut __ad17_qxcentered = :: std :: vec! [(0.0); d];
    let mut __ad18_main_term = :: std :: vec! [(0.0); k];
    let mut __ad19_slse = 0.0;
    let mut __b___ad16_xcentered = __ad::zero_like(&__ad16_xcentered);
    let mut __b___ad17_qxcentered = __ad::zero_like(&__ad17_qxcentered);
    let mut __b___ad18_main_term = __ad::zero_like(&__ad18_main_term);
    let mut __b___ad7_qdiags = __ad::zero_like(&__ad7_qdiags);
    let mut __b___ad8_sum_qs = __ad::zero_like(&__ad8_sum_qs);
    {
        let mut __b___ad19_slse = __ad_seed;
        for __ad20_i in 0..__ad2_n {
            let __ad21_ix = __ad20_i;
            let __ad_iter9 = 0..k;
            {
                let __ad_n = ::core::iter::Iterator::size_hint(&__ad_iter9).0;
                __ad_keep___ad36_li.reserve(__ad_n);
            }
            for __ad22_i in ::core::clone::Clone::clone(&__ad_iter9) {
                let __ad23_ik = __ad22_i;
                let __ad_iter3 = 0..d;
                for __ad24_i in ::core::clone::Clone::clone(&__ad_iter3) {
                    let __ad25_j = __ad24_i;
                    let __ad26_t = x[__ad21_ix * d + __ad25_j];
                    let __ad27_t = means[__ad23_ik * d + __ad25_j];
                    let __ad28_t = __ad26_t - __ad27_t;
                    __ad16_xcentered[__ad25_j] = __ad28_t;
                }
                let __ad_iter5 = 0..d;
                {
                    let __ad_n = ::core::iter::Iterator::size_hint(&__ad_iter5).0;
                    __ad_tape4.reserve(__ad_n);
                }
                for __ad29_i in ::core::clone::Clone::clone(&__ad_iter5) {
                    let __ad30_j = __ad29_i;
                    let __ad31_t = __ad7_qdiags[__ad23_ik * d + __ad30_j];
                    let __ad32_t = __ad16_xcentered[__ad30_j];
                    let __ad33_t = __ad31_t * __ad32_t;
                    __ad_tape4.push(__ad17_qxcentered[__ad30_j]);
                    __ad17_qxcentered[__ad30_j] = __ad33_t;
                }
                let __ad34_t = __ad23_ik * __ad6_icf_sz;
                let __ad35_t = __ad34_t + d;
                let mut __ad36_li = __ad35_t;
                let __ad_iter7 = 0..d;
                for __ad37_i in ::core::clone::Clone::clone(&__ad_iter7) {
                    let __ad38_i = __ad37_i;
                    let __ad_iter6 = __ad38_i + 1..d;
                    if __ad_iter6.start < __ad_iter6.end {
                        let __ad_h = __ad16_xcentered[__ad38_i];
                        for __ad39_i in ::core::clone::Clone::clone(&__ad_iter6) {
                            let __ad40_j = __ad39_i;
                            let __ad41_t = unsafe { *icf.get_unchecked(__ad36_li) };
                            let __ad42_t = __ad_h;
                            let __ad43_t = __ad41_t * __ad42_t;
                            unsafe {
                                *__ad17_qxcentered.get_unchecked_mut(__ad40_j) += __ad43_t;
                            }
                            __ad36_li += (1);
                        }
                    }
                }
                let mut __ad44_sqnorm = 0.0;
                let __ad_iter8 = 0..d;
                for __ad45_i in ::core::clone::Clone::clone(&__ad_iter8) {
                    let __ad46_j = __ad45_i;
                    let __ad47_t = __ad17_qxcentered[__ad46_j];
                    let __ad48_t = __ad47_t * __ad47_t;
                    __ad44_sqnorm += __ad48_t;
                }
                let __ad49_t = alphas[__ad23_ik];
                let __ad50_t = __ad8_sum_qs[__ad23_ik];
                let __ad51_t = __ad49_t + __ad50_t;
                let __ad52_t = (0.5) * __ad44_sqnorm;
                let __ad53_t = __ad51_t - __ad52_t;
                __ad18_main_term[__ad23_ik] = __ad53_t;
                __ad_keep___ad36_li.push(__ad36_li);
                __ad_keep___ad44_sqnorm.push(__ad44_sqnorm);
            }
            let __ad_result11 = logsumexp::__ad_aug(&__ad18_main_term);
            let __ad_state10 = __ad_result11.1;
            let __ad54_t = __ad_result11.0;
            __ad19_slse += __ad54_t;
            let mut __b___ad54_t = __ad::accumulator_zero(&__ad54_t);
            {
                let __ad_g = __b___ad19_slse;
                __ad::add_to(&mut __b___ad54_t, __ad_g);
            }
            {
                logsumexp::__ad_pull(
                    __ad_state10,
                    &__ad18_main_term,
                    &mut __b___ad18_main_term,
                    __b___ad54_t,
                    __ad_mark,
                );
            };
            for __ad22_i in ::core::iter::Iterator::rev(__ad_iter9) {
                {
                    {
                        let __ad23_ik = __ad22_i;
                        for __ad24_i in 0..d {
                            let __ad25_j = __ad24_i;
                            let __ad26_t = x[__ad21_ix * d + __ad25_j];
                            let __ad27_t = means[__ad23_ik * d + __ad25_j];
                            let __ad28_t = __ad26_t - __ad27_t;
                            __ad16_xcentered[__ad25_j] = __ad28_t;
                        }
                    }
                    let __ad23_ik = __ad22_i;
                    let __ad34_t = __ad23_ik * __ad6_icf_sz;
                    let __ad35_t = __ad34_t + d;
                    let mut __ad36_li = __ad::take(__ad_keep___ad36_li.pop());
                    let mut __ad44_sqnorm = __ad::take(__ad_keep___ad44_sqnorm.pop());
                    let __ad49_t = alphas[__ad23_ik];
                    let __ad50_t = __ad8_sum_qs[__ad23_ik];
                    let __ad51_t = __ad49_t + __ad50_t;
                    let __ad52_t = (0.5) * __ad44_sqnorm;
                    let __ad53_t = __ad51_t - __ad52_t;
                    let mut __b___ad44_sqnorm = __ad::accumulator_zero(&__ad44_sqnorm);
                    let mut __b___ad49_t = __ad::accumulator_zero(&__ad49_t);
                    let mut __b___ad50_t = __ad::accumulator_zero(&__ad50_t);
                    let mut __b___ad51_t = __ad::accumulator_zero(&__ad51_t);
                    let mut __b___ad52_t = __ad::accumulator_zero(&__ad52_t);
                    let mut __b___ad53_t = __ad::accumulator_zero(&__ad53_t);
                    let __ad_g = __b___ad18_main_term[__ad23_ik];
                    __b___ad18_main_term[__ad23_ik] = __ad::zero_like(&__ad_g);
                    __b___ad53_t += __ad_g;
                    __b___ad51_t += __b___ad53_t;
                    __b___ad52_t += -__b___ad53_t;
                    __b___ad44_sqnorm += (0.5) * __b___ad52_t;
                    __b___ad49_t += __b___ad51_t;
                    __b___ad50_t += __b___ad51_t;
                    __b___ad8_sum_qs[__ad23_ik] += __b___ad50_t;
                    __b_alphas[__ad23_ik] += __b___ad49_t;
                    for __ad45_i in ::core::iter::Iterator::rev(0..d) {
                        {
                            let __ad46_j = __ad45_i;
                            let __ad47_t = __ad17_qxcentered[__ad46_j];
                            let __ad48_t = __ad47_t * __ad47_t;
                            let mut __b___ad47_t = __ad::accumulator_zero(&__ad47_t);
                            let mut __b___ad48_t = __ad::accumulator_zero(&__ad48_t);
                            __b___ad48_t += __b___ad44_sqnorm;
                            __b___ad47_t += __b___ad48_t * __ad47_t;
                            __b___ad47_t += __ad47_t * __b___ad48_t;
                            __b___ad17_qxcentered[__ad46_j] += __b___ad47_t;
                        }
                    }
                    for __ad37_i in ::core::iter::Iterator::rev(0..d) {
                        {
                            let __ad38_i = __ad37_i;
                            {
                                let __ad_range = __ad38_i + 1..d;
                                if __ad_range.start < __ad_range.end {
                                    let __ad_hi = __ad_range.end - 1;
                                    let __ad_lo = __ad_range.start;
                                    let mut __ad_r0_0 = __b___ad16_xcentered[__ad38_i];
                                    for __ad39_i in ::core::iter::Iterator::rev(__ad_range) {
                                        {
                                            let __ad40_j = __ad39_i;
                                            let __ad42_t = __ad16_xcentered[__ad38_i];
                                            let mut __b___ad42_t =
                                                __ad::accumulator_zero(&__ad42_t);
                                            __ad36_li -= (1);
                                            let __ad41_t = unsafe { *icf.get_unchecked(__ad36_li) };
                                            let mut __b___ad41_t =
                                                __ad::accumulator_zero(&__ad41_t);
                                            let __ad43_t = __ad41_t * __ad42_t;
                                            let mut __b___ad43_t =
                                                __ad::accumulator_zero(&__ad43_t);
                                            __b___ad43_t += unsafe {
                                                *__b___ad17_qxcentered.get_unchecked(__ad40_j)
                                            };
                                            __b___ad41_t += __b___ad43_t * __ad42_t;
                                            __b___ad42_t += __ad41_t * __b___ad43_t;
                                            __ad_r0_0 += __b___ad42_t;
                                            unsafe {
                                                *__b_icf.get_unchecked_mut(__ad36_li) +=
                                                    __b___ad41_t;
                                            }
                                        }
                                    }
                                    __b___ad16_xcentered[__ad38_i] = __ad_r0_0;
                                }
                            }
                        }
                    }
                    for __ad29_i in ::core::iter::Iterator::rev(0..d) {
                        {
                            let __ad30_j = __ad29_i;
                            let __ad31_t = __ad7_qdiags[__ad23_ik * d + __ad30_j];
                            let __ad32_t = __ad16_xcentered[__ad30_j];
                            let __ad33_t = __ad31_t * __ad32_t;
                            let mut __b___ad31_t = __ad::accumulator_zero(&__ad31_t);
                            let mut __b___ad32_t = __ad::accumulator_zero(&__ad32_t);
                            let mut __b___ad33_t = __ad::accumulator_zero(&__ad33_t);
                            let __ad_g = __b___ad17_qxcentered[__ad30_j];
                            __b___ad17_qxcentered[__ad30_j] = __ad::zero_like(&__ad_g);
                            __ad17_qxcentered[__ad30_j] = __ad::take(__ad_tape4.pop());
                            __b___ad33_t += __ad_g;
                            __b___ad31_t += __b___ad33_t * __ad32_t;
                            __b___ad32_t += __ad31_t * __b___ad33_t;
                            __b___ad16_xcentered[__ad30_j] += __b___ad32_t;
                            __b___ad7_qdiags[__ad23_ik * d + __ad30_j] += __b___ad31_t;
                        }
                    }
                    for __ad24_i in ::core::iter::Iterator::rev(0..d) {
                        {
                            let __ad25_j = __ad24_i;
                            let __ad26_t = x[__ad21_ix * d + __ad25_j];
                            let __ad27_t = means[__ad23_ik * d + __ad25_j];
                            let __ad28_t = __ad26_t - __ad27_t;
                            let mut __b___ad27_t = __ad::accumulator_zero(&__ad27_t);
                            let mut __b___ad28_t = __ad::accumulator_zero(&__ad28_t);
                            let __ad_g = __b___ad16_xcentered[__ad25_j];
                            __b___ad16_xcentered[__ad25_j] = __ad::zero_like(&__ad_g);
                            __b___ad28_t += __ad_g;
                            __b___ad27_t += -__b___ad28_t;
                            __b_means[__ad23_ik * d + __ad25_j] += __b___ad27_t;
                        }
                    }
                }
            }
        }
    }
    let __ad_result13 = logsumexp::__ad_aug(&*alphas);
    let __ad_state12 = __ad_result13.1;
    let __ad56_lse_alphas = __ad_result13.0;
    let mut __ad57_prior = 0.0;
    let __ad_iter16 = 0..k;
    for __ad58_i in ::core::clone::Clone::clone(&__ad_iter16) {
        let __ad59_ik = __ad58_i;
        let mut __ad60_frobenius = 0.0;
        let __ad_iter14 = 0..d;
        for __ad61_i in ::core::clone::Clone::clone(&__ad_iter14) {
            let __ad62_j = __ad61_i;
            let __ad63_t = __ad7_qdiags[__ad59_ik * d + __ad62_j];
            let __ad64_t = __ad63_t * __ad63_t;
            __ad60_frobenius += __ad64_t;
        }
        let __ad_iter15 = d..__ad6_icf_sz;
        for __ad65_i in ::core::clone::Clone::clone(&__ad_iter15) {
            let __ad66_j = __ad65_i;
            let __ad67_t = icf[__ad59_ik * __ad6_icf_sz + __ad66_j];
            let __ad68_t = __ad67_t * __ad67_t;
            __ad60_frobenius += __ad68_t;
        }
        let __ad69_t = (0.5) * gamma;
        let __ad70_t = __ad69_t * gamma;
        let __ad71_t = __ad70_t * __ad60_frobenius;
        let __ad72_t = __ad8_sum_qs[__ad59_ik];
        let __ad73_t = m * __ad72_t;
        let __ad74_t = __ad71_t - __ad73_t;
        __ad57_prior += __ad74_t;
        __ad_keep___ad60_frobenius.push(__ad60_frobenius);
    }
    let __ad75_t = constant + __ad19_slse;
    let __ad76_t = __ad2_n as f64;
    let __ad77_t = __ad76_t * __ad56_lse_alphas;
    let __ad78_t = __ad75_t - __ad77_t;
    let __ad79_t = __ad78_t + __ad57_prior;
    let __ad_primal = __ad79_t;
    let mut __b___ad19_slse = __ad::accumulator_zero(&__ad19_slse);
    let mut __b___ad56_lse_alphas = __ad::accumulator_zero(&__ad56_lse_alphas);
    let mut __b___ad57_prior = __ad::accumulator_zero(&__ad57_prior);
    let mut __b___ad75_t = __ad::accumulator_zero(&__ad75_t);
    let mut __b___ad77_t = __ad::accumulator_zero(&__ad77_t);
    let mut __b___ad78_t = __ad::accumulator_zero(&__ad78_t);
    let mut __b___ad79_t = __ad::accumulator_zero(&__ad79_t);
    __b___ad79_t += __ad_seed;
    __b___ad78_t += __b___ad79_t;
    __b___ad57_prior += __b___ad79_t;
    __b___ad75_t += __b___ad78_t;
    __b___ad77_t += -__b___ad78_t;
    {
        let __ad_g = __ad76_t * __b___ad77_t;
        __ad::add_to(&mut __b___ad56_lse_alphas, __ad_g);
    }
    __b___ad19_slse += __b___ad75_t;
    for __ad58_i in ::core::iter::Iterator::rev(__ad_iter16) {
        {
            let __ad59_ik = __ad58_i;
            let mut __ad60_frobenius = __ad::take(__ad_keep___ad60_frobenius.pop());
            let __ad69_t = (0.5) * gamma;
            let __ad70_t = __ad69_t * gamma;
            let __ad71_t = __ad70_t * __ad60_frobenius;
            let __ad72_t = __ad8_sum_qs[__ad59_ik];
            let __ad73_t = m * __ad72_t;
            let __ad74_t = __ad71_t - __ad73_t;
            let mut __b___ad60_frobenius = __ad::accumulator_zero(&__ad60_frobenius);
            let mut __b___ad71_t = __ad::accumulator_zero(&__ad71_t);
            let mut __b___ad72_t = __ad::accumulator_zero(&__ad72_t);
            let mut __b___ad73_t = __ad::accumulator_zero(&__ad73_t);
            let mut __b___ad74_t = __ad::accumulator_zero(&__ad74_t);
            __b___ad74_t += __b___ad57_prior;
            __b___ad71_t += __b___ad74_t;
            __b___ad73_t += -__b___ad74_t;
            __b___ad72_t += m * __b___ad73_t;
            __b___ad8_sum_qs[__ad59_ik] += __b___ad72_t;
            __b___ad60_frobenius += __ad70_t * __b___ad71_t;
            for __ad65_i in ::core::iter::Iterator::rev(d..__ad6_icf_sz) {
                {
                    let __ad66_j = __ad65_i;
                    let __ad67_t = icf[__ad59_ik * __ad6_icf_sz + __ad66_j];
                    let __ad68_t = __ad67_t * __ad67_t;
                    let mut __b___ad67_t = __ad::accumulator_zero(&__ad67_t);
                    let mut __b___ad68_t = __ad::accumulator_zero(&__ad68_t);
                    __b___ad68_t += __b___ad60_frobenius;
                    __b___ad67_t += __b___ad68_t * __ad67_t;
                    __b___ad67_t += __ad67_t * __b___ad68_t;
                    __b_icf[__ad59_ik * __ad6_icf_sz + __ad66_j] += __b___ad67_t;
                }
            }
            for __ad61_i in ::core::iter::Iterator::rev(0..d) {
                {
                    let __ad62_j = __ad61_i;
                    let __ad63_t = __ad7_qdiags[__ad59_ik * d + __ad62_j];
                    let __ad64_t = __ad63_t * __ad63_t;
                    let mut __b___ad63_t = __ad::accumulator_zero(&__ad63_t);
                    let mut __b___ad64_t = __ad::accumulator_zero(&__ad64_t);
                    __b___ad64_t += __b___ad60_frobenius;
                    __b___ad63_t += __b___ad64_t * __ad63_t;
                    __b___ad63_t += __ad63_t * __b___ad64_t;
                    __b___ad7_qdiags[__ad59_ik * d + __ad62_j] += __b___ad63_t;
                }
            }
        }
    }
    {
        logsumexp::__ad_pull(
            __ad_state12,
            &*alphas,
            &mut *__b_alphas,
            __b___ad56_lse_alphas,
            __ad_mark,
        );
    };
    for __ad9_i in ::core::iter::Iterator::rev(__ad_iter2) {
        {
            let __ad10_ik = __ad9_i;
            let mut __ad11_sq = __ad::take(__ad_keep___ad11_sq.pop());
            let mut __b___ad11_sq = __ad::accumulator_zero(&__ad11_sq);
            let __ad_g = __b___ad8_sum_qs[__ad10_ik];
            __b___ad8_sum_qs[__ad10_ik] = __ad::zero_like(&__ad_g);
            __b___ad11_sq += __ad_g;
            for __ad12_i in ::core::iter::Iterator::rev(0..d) {
                {
                    let __ad13_j = __ad12_i;
                    let __ad14_q = icf[__ad10_ik * __ad6_icf_sz + __ad13_j];
                    let __ad15_t = __ad::take(__ad_keep___ad15_t.pop());
                    let mut __b___ad14_q = __ad::accumulator_zero(&__ad14_q);
                    let mut __b___ad15_t = __ad::accumulator_zero(&__ad15_t);
                    let __ad_g = __b___ad7_qdiags[__ad10_ik * d + __ad13_j];
                    __b___ad7_qdiags[__ad10_ik * d + __ad13_j] = __ad::zero_like(&__ad_g);
                    __b___ad15_t += __ad_g;
                    {
                        let __ad_p = __ad::d::exp(__ad14_q, __ad15_t);
                        __b___ad14_q += __b___ad15_t * __ad_p;
                    }
                    __b___ad14_q += __b___ad11_sq;
                    __b_icf[__ad10_ik * __ad6_icf_sz + __ad13_j] += __b___ad14_q;
                }
            }
        }
    }
    __ad_primal
}
