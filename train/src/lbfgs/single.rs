//! The fused kernel of [`super::Workspace`] in single precision: the same network pass (two sigmoid
//! hidden layers of `H1`, `H2` units, one linear output), with activations, errors and products in f32
//! (eight lanes per AVX2 vector instead of four, and a shorter polynomial `exp`), and every sum over
//! rows carried in f64.
//!
//! Why f32 is enough where it is used: the inputs and targets are standardized (values of order 1),
//! each row's error and gradient terms carry a relative error of a few f32 ulp (~1e-7), far below
//! what separates one L-BFGS or Adam step from the next in the early-stopped fits; what f32 cannot do
//! is sum thousands of terms of both signs (the gradient is a small difference of large sums), so the
//! per-lane partial sums run in f32 over [`FLUSH`] blocks only (at most that many terms per lane) and
//! are then added, widened, into f64 sums. Results agree with the f64 kernel to ~1e-6 relative
//! (tested), not to rounding: a fit on it follows a different trajectory from the same seed.

use super::{Arith, Grads, Net};

/// Rows per block: two vectors of eight f32 lanes (two independent chains in flight, as
/// [`super::Pair`] does for f64).
pub(super) const ROWS: usize = 16;

/// Blocks whose f32 partial sums are added before they are widened into the f64 sums: each f32 lane
/// sums at most this many terms.
const FLUSH: usize = 16;

/// A block of [`ROWS`] f32 lanes, as [`super::Block`] is for f64.
///
/// # Safety
/// As [`Arith`]: call the methods only on a CPU with the implementation's features.
pub(super) trait Block32: Arith<Elem = f32> {
    /// Adds the lanes, widened to f64 (exactly), into the first [`ROWS`] values of `acc`.
    unsafe fn add_to_f64(self, acc: &mut [f64]);
}

/// Lane-by-lane f32 arithmetic (no CPU features needed); `FUSED` as in [`super::Portable`].
#[derive(Clone, Copy)]
pub(super) struct Portable32<const FUSED: bool>([f32; ROWS]);

impl<const FUSED: bool> Arith for Portable32<FUSED> {
    type Elem = f32;
    portable_block_impl!(Portable32, f32, ROWS);
    #[inline(always)]
    unsafe fn pow2_of_shifted(self) -> Self {
        Portable32(self.0.map(|v| f32::from_bits(v.to_bits().wrapping_add(127) << 23)))
    }
}

impl<const FUSED: bool> Block32 for Portable32<FUSED> {
    #[inline(always)]
    unsafe fn add_to_f64(self, acc: &mut [f64]) {
        for (a, v) in acc[..ROWS].iter_mut().zip(self.0) {
            *a += f64::from(v);
        }
    }
}

#[cfg(target_arch = "x86_64")]
pub(super) mod avx2 {
    use super::{Arith, Block32};
    use std::arch::x86_64::*;

    /// [`super::ROWS`] f32 lanes as two AVX2 vectors (methods need AVX2 and FMA).
    #[derive(Clone, Copy)]
    pub(in crate::lbfgs) struct Avx2x32(__m256, __m256);

    impl Arith for Avx2x32 {
        type Elem = f32;
        avx2_block_impl! {
            Avx2x32, f32, 8;
            _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps, _mm256_sub_ps,
            _mm256_mul_ps, _mm256_div_ps, _mm256_min_ps, _mm256_max_ps;
            __m256, _mm256_set1_epi32(127), _mm256_add_epi32, _mm256_slli_epi32::<23>, _mm256_castps_si256,
            _mm256_castsi256_ps
        }
    }

    impl Block32 for Avx2x32 {
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn add_to_f64(self, acc: &mut [f64]) {
            let acc = &mut acc[..16];
            let p = acc.as_mut_ptr();
            // SAFETY: `acc` holds 16 f64; each 4-lane quarter is widened exactly and added in place.
            unsafe {
                for (q, v) in [self.0, self.1].into_iter().enumerate() {
                    let lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
                    let hi = _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(v));
                    let (a, b) = (p.wrapping_add(8 * q), p.wrapping_add(8 * q + 4));
                    _mm256_storeu_pd(a, _mm256_add_pd(_mm256_loadu_pd(a), lo));
                    _mm256_storeu_pd(b, _mm256_add_pd(_mm256_loadu_pd(b), hi));
                }
            }
        }
    }
}

/// `exp` of one value by [`super::exp_block`] in f32 (for the tests).
#[cfg(test)]
pub(super) fn exp32(x: f32) -> f32 {
    // SAFETY: `Portable32` needs no CPU features.
    unsafe { super::exp_block(Portable32::<false>::splat(x)).0[0] }
}

/// The rows in f32, block-major, and the sums' buffers.
pub(super) struct Single {
    inputs: usize,
    blocks: usize,
    /// Block-major inputs: input `i` of rows `b·ROWS..` is `x[b·inputs + i]`.
    x: Vec<[f32; ROWS]>,
    /// Targets, padded with zeros to whole blocks.
    y: Vec<[f32; ROWS]>,
    /// 1 on the real rows of the last block, 0 on its padding.
    last_mask: [f32; ROWS],
    /// The first layer's weights input-major (`[inputs][H1]`).
    w1t: Vec<f32>,
    /// f32 partial sums per first-layer weight, input-major (`[inputs][H1][ROWS]`), and their f64 sums.
    gacc1: Vec<[f32; ROWS]>,
    gacc1_64: Vec<[f64; ROWS]>,
    /// f64 sums of the other parameters' gradients, in θ's order (`[params after W1][ROWS]`).
    grest_64: Vec<[f64; ROWS]>,
}

impl Single {
    pub(super) fn new(
        inputs: usize,
        h1: usize,
        h2: usize,
        x: ndarray::ArrayView2<'_, f64>,
        y: &[f64],
    ) -> Single {
        let n = x.nrows();
        let blocks = n.div_ceil(ROWS);
        let mut xb = vec![[0.0; ROWS]; blocks * inputs];
        for (r, row) in x.rows().into_iter().enumerate() {
            let (b, l) = (r / ROWS, r % ROWS);
            for (i, v) in row.iter().enumerate() {
                xb[b * inputs + i][l] = *v as f32;
            }
        }
        let mut yb = vec![[0.0; ROWS]; blocks];
        for (r, v) in y[..n].iter().enumerate() {
            yb[r / ROWS][r % ROWS] = *v as f32;
        }
        let mut last_mask = [0.0; ROWS];
        last_mask[..n - blocks.saturating_sub(1) * ROWS].fill(1.0);
        let rest = h1 + h2 * h1 + h2 + h2 + 1;
        Single {
            inputs,
            blocks,
            x: xb,
            y: yb,
            last_mask,
            w1t: vec![0.0; h1 * inputs],
            gacc1: vec![[0.0; ROWS]; h1 * inputs],
            gacc1_64: vec![[0.0; ROWS]; h1 * inputs],
            grest_64: vec![[0.0; ROWS]; rest],
        }
    }

    /// As [`super::Fused`]'s `sums`: `Σ e²` over the rows and, with `g`, `Σ e·∂f/∂θ` into `g`.
    /// Safety: as [`exp_block`].
    #[inline(always)]
    pub(super) unsafe fn sums<B: Block32, const H1: usize, const H2: usize>(
        &mut self,
        theta: &[f64],
        g: Option<&mut [f64]>,
    ) -> f64 {
        // SAFETY (every block below): the caller's contract.
        unsafe {
            let ni = self.inputs;
            let (w1, rest) = theta.split_at(H1 * ni);
            for (i, t) in self.w1t.chunks_exact_mut(H1).enumerate() {
                for (o, v) in t.iter_mut().enumerate() {
                    *v = w1[o * ni + i] as f32;
                }
            }
            let net = Net::<f32, H1, H2>::new(rest, |v| v as f32);
            let zero = B::splat(0.0);
            let grad = g.is_some();
            if grad {
                self.gacc1.fill([0.0; ROWS]);
                self.gacc1_64.fill([0.0; ROWS]);
                self.grest_64.fill([0.0; ROWS]);
            }
            let mut grads = Grads::<B, H1, H2>::splat(zero);
            let mut loss = zero;
            let mut loss_64 = [0.0_f64; ROWS];
            let last = self.blocks.saturating_sub(1);
            for (b, (x, y)) in self.x.chunks_exact(ni).zip(&self.y).enumerate() {
                let flush = (b + 1) % FLUSH == 0 || b == last;
                let inputs = x.iter().map(|xi| B::load(xi));
                let (h1, h2, out) = net.forward(inputs, &self.w1t);
                let mut e = out.sub(B::load(y));
                if b == last {
                    e = e.mul(B::load(&self.last_mask));
                }
                loss = e.mul_add(e, loss);
                if flush {
                    loss.add_to_f64(&mut loss_64);
                    loss = zero;
                }
                if !grad {
                    continue;
                }
                let d1 = net.backward(e, (&h1, &h2), &mut grads, |w, e| w.mul(e));
                for (xi, accs) in x.iter().zip(self.gacc1.chunks_exact_mut(H1)) {
                    let xi = B::load(xi);
                    for (d, acc) in d1.iter().zip(accs.iter_mut()) {
                        d.mul_add(xi, B::load(acc)).store(acc);
                    }
                }
                if flush {
                    // The f32 partial sums (≤ FLUSH terms per lane) into the f64 sums, then restart.
                    for (v, acc) in grads.iter_mut().zip(self.grest_64.iter_mut()) {
                        v.add_to_f64(acc);
                        *v = zero;
                    }
                    for (a32, a64) in self.gacc1.iter_mut().zip(self.gacc1_64.iter_mut()) {
                        B::load(a32).add_to_f64(a64);
                        *a32 = [0.0; ROWS];
                    }
                }
            }
            if let Some(g) = g {
                let (gw1, rest) = g.split_at_mut(H1 * ni);
                for (i, accs) in self.gacc1_64.chunks_exact(H1).enumerate() {
                    for (o, acc) in accs.iter().enumerate() {
                        gw1[o * ni + i] = acc.iter().sum::<f64>();
                    }
                }
                for (gv, acc) in rest.iter_mut().zip(&self.grest_64) {
                    *gv = acc.iter().sum::<f64>();
                }
            }
            loss_64.iter().sum::<f64>()
        }
    }
}
