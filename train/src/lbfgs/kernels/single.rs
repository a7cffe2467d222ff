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

use super::{Arith, Net};

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
            _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps, _mm256_sub_ps,
            _mm256_mul_ps, _mm256_div_ps, _mm256_min_ps, _mm256_max_ps;
            __m256, _mm256_set1_epi32(127), _mm256_add_epi32, _mm256_slli_epi32::<23>, _mm256_castps_si256,
            _mm256_castsi256_ps
        }
    }

    impl Block32 for Avx2x32 {
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn add_to_f64(self, acc: &mut [f64]) {
            let acc: &mut [f64; 16] = (&mut acc[..16]).try_into().unwrap_or_else(|_| unreachable!());
            // SAFETY: the vectors and the arrays have the same size; every bit pattern is valid. (Plain
            // array loads and stores, not `_mm256_loadu_pd`: see `Arith::load`.)
            unsafe {
                let acc4: &mut [[f64; 4]; 4] = std::mem::transmute(acc);
                for (q, v) in [self.0, self.1].into_iter().enumerate() {
                    let lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
                    let hi = _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(v));
                    for (a, w) in acc4[2 * q..2 * q + 2].iter_mut().zip([lo, hi]) {
                        let sum = _mm256_add_pd(std::mem::transmute::<[f64; 4], __m256d>(*a), w);
                        *a = std::mem::transmute::<__m256d, [f64; 4]>(sum);
                    }
                }
            }
        }
    }
}

/// `exp` of one value by [`super::simd::exp_block`] in f32 (for the tests).
#[cfg(test)]
pub(super) fn exp32(x: f32) -> f32 {
    // SAFETY: `Portable32` needs no CPU features.
    unsafe { super::simd::exp_block(Portable32::<false>::splat(x)).0[0] }
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
    /// What the gradient sums read, per block of the current flush group: its error, both hidden
    /// layers' activations and both layers' δ ([`Stored`]'s layout).
    group: Vec<[f32; ROWS]>,
    /// The f64 sums of every gradient component in θ's order, then of the loss (`[params + 1][ROWS]`).
    sums_64: Vec<[f64; ROWS]>,
}

/// Where a block's values sit in [`Single::group`]: the error `e`, the activations `a1[H1]` and
/// `a2[H2]`, the δ `d2[H2]` and `d1[H1]`.
struct Stored<const H1: usize, const H2: usize>;

impl<const H1: usize, const H2: usize> Stored<H1, H2> {
    const E: usize = 0;
    const A1: usize = 1;
    const A2: usize = 1 + H1;
    const D2: usize = 1 + H1 + H2;
    const D1: usize = 1 + H1 + 2 * H2;
    /// Values per block.
    const LEN: usize = 1 + 2 * H1 + 2 * H2;
}

/// Four sums over a group's blocks at once, each in block order as one f32 chain per lane: for each
/// block's pair of value slices `(u, v)`, `sum_k += v[each + k] · u[shared]` (one FMA). Four independent
/// chains of two vectors keep the FMA units busy, and the shared factor is loaded once for the four.
/// Safety: as [`super::simd::exp_block`].
#[inline(always)]
unsafe fn fma4<'a, B: Block32>(
    blocks: impl Iterator<Item = (&'a [[f32; ROWS]], &'a [[f32; ROWS]])>,
    shared: usize,
    each: usize,
) -> [B; 4] {
    // SAFETY: the caller's contract.
    unsafe {
        let mut acc = [B::splat(0.0); 4];
        for (u, v) in blocks {
            let s = B::load(&u[shared]);
            let v = &v[each..each + 4];
            for (a, v) in acc.iter_mut().zip(v) {
                *a = B::load(v).mul_add(s, *a);
            }
        }
        acc
    }
}

/// As [`fma4`], for sums of the values themselves: `sum_k += v[each + k]`.
#[inline(always)]
unsafe fn add4<'a, B: Block32>(blocks: impl Iterator<Item = &'a [[f32; ROWS]]>, each: usize) -> [B; 4] {
    // SAFETY: the caller's contract.
    unsafe {
        let mut acc = [B::splat(0.0); 4];
        for v in blocks {
            let v = &v[each..each + 4];
            for (a, v) in acc.iter_mut().zip(v) {
                *a = a.add(B::load(v));
            }
        }
        acc
    }
}

impl Single {
    /// Buffers for the network `inputs`-`h1`-`h2`-1, without rows yet ([`Single::deal`]).
    pub(super) fn new(inputs: usize, h1: usize, h2: usize) -> Single {
        let params = h1 * inputs + h1 + h2 * h1 + h2 + h2 + 1;
        Single {
            inputs,
            blocks: 0,
            x: Vec::new(),
            y: Vec::new(),
            last_mask: [0.0; ROWS],
            w1t: vec![0.0; h1 * inputs],
            group: vec![[0.0; ROWS]; FLUSH * (1 + 2 * h1 + 2 * h2)],
            sums_64: vec![[0.0; ROWS]; params + 1],
        }
    }

    /// Replaces the rows by rows `rows` of `x` (row-major, `inputs` values per row) and `y`, in that
    /// order (a mini-batch), in the buffers already allocated where they are large enough.
    pub(super) fn deal(&mut self, x: &[f64], y: &[f64], rows: &[usize]) {
        let (n, inputs) = (rows.len(), self.inputs);
        let blocks = n.div_ceil(ROWS);
        // Every lane is written below but the last block's padding, zeroed here (as a fresh buffer's).
        self.x.resize(blocks * inputs, [0.0; ROWS]);
        self.y.resize(blocks, [0.0; ROWS]);
        let real = n - blocks.saturating_sub(1) * ROWS;
        if let (Some(xl), Some(yl)) = (self.x.rchunks_exact_mut(inputs).next(), self.y.last_mut()) {
            for v in xl.iter_mut().chain([yl]) {
                v[real..].fill(0.0);
            }
        }
        for ((xb, yb), chunk) in self.x.chunks_exact_mut(inputs).zip(self.y.iter_mut()).zip(rows.chunks(ROWS))
        {
            for (l, &src) in chunk.iter().enumerate() {
                for (xi, v) in xb.iter_mut().zip(&x[src * inputs..(src + 1) * inputs]) {
                    xi[l] = *v as f32;
                }
                yb[l] = y[src] as f32;
            }
        }
        self.last_mask = [0.0; ROWS];
        self.last_mask[..real].fill(1.0);
        self.blocks = blocks;
    }

    /// As [`super::Fused`]'s `sums`: `Σ e²` over the rows and, with `g`, `Σ e·∂f/∂θ` into `g`.
    ///
    /// In two phases per flush group of [`FLUSH`] blocks: the group forward and its δ backward, one
    /// layer step over all its blocks at a time, with the values the sums need stored ([`Stored`]);
    /// then every sum over the group's blocks, a few sums at a time with their accumulators in
    /// registers. Why: the ~70 per-lane gradient sums of
    /// 10-4-4-1 (two vectors each) do not fit in the 16 vector registers, so the one-phase kernel
    /// (every block's sums added as the block is done) spilled and reloaded them on every
    /// block and spent more of its time on those stores than on arithmetic. Every sum sees the same
    /// operations in the same order as in that kernel (an FMA or add per block, from zero at the start
    /// of each group), and every stored value is the one the block's own pass computed (the same
    /// operations on the same lanes), so the two agree bit for bit (tested).
    /// Safety: as [`super::simd::exp_block`].
    #[inline(always)]
    pub(super) unsafe fn sums<B: Block32, const H1: usize, const H2: usize>(
        &mut self,
        theta: &[f64],
        g: Option<&mut [f64]>,
    ) -> f64 {
        const { assert!(H1.is_multiple_of(4) && H2.is_multiple_of(4), "the sums run four units at a time") };
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
            let last = self.blocks.saturating_sub(1);
            let Some(g) = g else {
                // The loss alone: forward only.
                let mut loss = zero;
                let mut loss_64 = [0.0_f64; ROWS];
                for (b, (x, y)) in self.x.chunks_exact(ni).zip(&self.y).enumerate() {
                    let (_, _, out) = net.forward(x.iter().map(|xi| B::load(xi)), &self.w1t);
                    let mut e = out.sub(B::load(y));
                    if b == last {
                        e = e.mul(B::load(&self.last_mask));
                    }
                    loss = e.mul_add(e, loss);
                    if (b + 1) % FLUSH == 0 || b == last {
                        loss.add_to_f64(&mut loss_64);
                        loss = zero;
                    }
                }
                return loss_64.iter().sum::<f64>();
            };
            type S<const A: usize, const C: usize> = Stored<A, C>;
            let len = S::<H1, H2>::LEN;
            self.sums_64.fill([0.0; ROWS]);
            let (w1_64, rest_64) = self.sums_64.split_at_mut(H1 * ni);
            // θ's order after the first layer's weights: b1, w2 ([H2][H1]), b2, w3, b3; then the loss.
            let (b1_64, rest_64) = rest_64.split_at_mut(H1);
            let (w2_64, rest_64) = rest_64.split_at_mut(H2 * H1);
            let (b2_64, rest_64) = rest_64.split_at_mut(H2);
            let (w3_64, rest_64) = rest_64.split_at_mut(H2);
            let (b3_64, loss_64) = rest_64.split_at_mut(1);
            for (first, (xg, yg)) in
                self.x.chunks(FLUSH * ni).zip(self.y.chunks(FLUSH)).enumerate().map(|(k, v)| (k * FLUSH, v))
            {
                let nb = yg.len();
                // Phase 1: the group forward and its δ backward, one layer step at a time over all its
                // blocks (short loops with few live values and independent blocks, instead of one
                // block's whole pass, whose ~40 live vectors spilled), each value stored.
                let (a1, a2) = (S::<H1, H2>::A1, S::<H1, H2>::A2);
                let grp = &mut self.group[..nb * len];
                for (x, v) in xg.chunks_exact(ni).zip(grp.chunks_exact_mut(len)) {
                    let mut h: [B; H1] = std::array::from_fn(|o| B::splat(net.b1[o]));
                    for (xi, w1i) in x.iter().zip(self.w1t.chunks_exact(H1)) {
                        let xi = B::load(xi);
                        for (h, w) in h.iter_mut().zip(w1i) {
                            *h = B::splat(*w).mul_add(xi, *h);
                        }
                    }
                    for (h, v) in h.iter().zip(&mut v[a1..a1 + H1]) {
                        h.store(v);
                    }
                }
                for v in grp.chunks_exact_mut(len) {
                    for v in &mut v[a1..a1 + H1] {
                        super::sigmoid_block(B::load(v)).store(v);
                    }
                }
                for v in grp.chunks_exact_mut(len) {
                    let h1: [B; H1] = std::array::from_fn(|o| B::load(&v[a1 + o]));
                    for (j, w2j) in net.w2.iter().enumerate() {
                        let mut h = B::splat(net.b2[j]);
                        for (a, w) in h1.iter().zip(w2j) {
                            h = B::splat(*w).mul_add(*a, h);
                        }
                        h.store(&mut v[a2 + j]);
                    }
                }
                for v in grp.chunks_exact_mut(len) {
                    for v in &mut v[a2..a2 + H2] {
                        super::sigmoid_block(B::load(v)).store(v);
                    }
                }
                for (b, (v, y)) in grp.chunks_exact_mut(len).zip(yg).enumerate() {
                    let h1: [B; H1] = std::array::from_fn(|o| B::load(&v[a1 + o]));
                    let h2: [B; H2] = std::array::from_fn(|j| B::load(&v[a2 + j]));
                    let mut out = B::splat(net.b3);
                    for (a, w) in h2.iter().zip(&net.w3) {
                        out = B::splat(*w).mul_add(*a, out);
                    }
                    let mut e = out.sub(B::load(y));
                    if first + b == last {
                        e = e.mul(B::load(&self.last_mask));
                    }
                    let (d2, d1) = net.deltas(e, (&h1, &h2), |w, e| w.mul(e));
                    e.store(&mut v[S::<H1, H2>::E]);
                    for (k, d) in d2.iter().enumerate() {
                        d.store(&mut v[S::<H1, H2>::D2 + k]);
                    }
                    for (k, d) in d1.iter().enumerate() {
                        d.store(&mut v[S::<H1, H2>::D1 + k]);
                    }
                }
                // Phase 2: the sums over the group, widened into the f64 sums.
                let grp = || self.group[..nb * len].chunks_exact(len);
                let widen = |acc: [B; 4], out: &mut [[f64; ROWS]]| {
                    for (a, o) in acc.iter().zip(out) {
                        a.add_to_f64(o);
                    }
                };
                for i in 0..ni {
                    for o in (0..H1).step_by(4) {
                        let acc = fma4::<B>(xg.chunks_exact(ni).zip(grp()), i, S::<H1, H2>::D1 + o);
                        for (k, a) in acc.iter().enumerate() {
                            a.add_to_f64(&mut w1_64[(o + k) * ni + i]);
                        }
                    }
                }
                for o in (0..H1).step_by(4) {
                    widen(add4(grp(), S::<H1, H2>::D1 + o), &mut b1_64[o..]);
                }
                for j in 0..H2 {
                    for o in (0..H1).step_by(4) {
                        let acc = fma4::<B>(grp().zip(grp()), S::<H1, H2>::D2 + j, S::<H1, H2>::A1 + o);
                        widen(acc, &mut w2_64[j * H1 + o..]);
                    }
                }
                for j in (0..H2).step_by(4) {
                    widen(add4(grp(), S::<H1, H2>::D2 + j), &mut b2_64[j..]);
                    widen(fma4(grp().zip(grp()), S::<H1, H2>::E, S::<H1, H2>::A2 + j), &mut w3_64[j..]);
                }
                let (mut b3, mut loss) = (zero, zero);
                for v in grp() {
                    let e = B::load(&v[S::<H1, H2>::E]);
                    b3 = b3.add(e);
                    loss = e.mul_add(e, loss);
                }
                b3.add_to_f64(&mut b3_64[0]);
                loss.add_to_f64(&mut loss_64[0]);
            }
            let (sums, loss) = self.sums_64.split_at(self.sums_64.len() - 1);
            for (gv, acc) in g.iter_mut().zip(sums) {
                *gv = acc.iter().sum::<f64>();
            }
            loss[0].iter().sum::<f64>()
        }
    }
}

/// The one-phase kernel (every block's gradient terms added into the per-lane sums as the
/// block is done), kept as the reference the two-phase [`Single::sums`] must match bit for bit.
/// Safety: as [`super::simd::exp_block`].
#[cfg(test)]
pub(super) unsafe fn one_phase_sums<B: Block32, const H1: usize, const H2: usize>(
    s: &Single,
    theta: &[f64],
    g: &mut [f64],
) -> f64 {
    use super::fused::Grads;
    // SAFETY (every block below): the caller's contract.
    unsafe {
        let ni = s.inputs;
        let (w1, rest) = theta.split_at(H1 * ni);
        let mut w1t = vec![0.0_f32; H1 * ni];
        for (i, t) in w1t.chunks_exact_mut(H1).enumerate() {
            for (o, v) in t.iter_mut().enumerate() {
                *v = w1[o * ni + i] as f32;
            }
        }
        let net = Net::<f32, H1, H2>::new(rest, |v| v as f32);
        let zero = B::splat(0.0);
        let mut gacc1 = vec![[0.0_f32; ROWS]; H1 * ni];
        let mut gacc1_64 = vec![[0.0_f64; ROWS]; H1 * ni];
        let mut grest_64 = vec![[0.0_f64; ROWS]; H1 + H2 * H1 + 2 * H2 + 1];
        let mut grads = Grads::<B, H1, H2>::splat(zero);
        let mut loss = zero;
        let mut loss_64 = [0.0_f64; ROWS];
        let last = s.blocks.saturating_sub(1);
        for (b, (x, y)) in s.x.chunks_exact(ni).zip(&s.y).enumerate() {
            let flush = (b + 1) % FLUSH == 0 || b == last;
            let (h1, h2, out) = net.forward(x.iter().map(|xi| B::load(xi)), &w1t);
            let mut e = out.sub(B::load(y));
            if b == last {
                e = e.mul(B::load(&s.last_mask));
            }
            loss = e.mul_add(e, loss);
            if flush {
                loss.add_to_f64(&mut loss_64);
                loss = zero;
            }
            let d1 = net.backward(e, (&h1, &h2), &mut grads, |w, e| w.mul(e));
            for (xi, accs) in x.iter().zip(gacc1.chunks_exact_mut(H1)) {
                let xi = B::load(xi);
                for (d, acc) in d1.iter().zip(accs.iter_mut()) {
                    d.mul_add(xi, B::load(acc)).store(acc);
                }
            }
            if flush {
                for (v, acc) in grads.iter_mut().zip(grest_64.iter_mut()) {
                    v.add_to_f64(acc);
                    *v = zero;
                }
                for (a32, a64) in gacc1.iter_mut().zip(gacc1_64.iter_mut()) {
                    B::load(a32).add_to_f64(a64);
                    *a32 = [0.0; ROWS];
                }
            }
        }
        let (gw1, rest) = g.split_at_mut(H1 * ni);
        for (i, accs) in gacc1_64.chunks_exact(H1).enumerate() {
            for (o, acc) in accs.iter().enumerate() {
                gw1[o * ni + i] = acc.iter().sum::<f64>();
            }
        }
        for (gv, acc) in rest.iter_mut().zip(&grest_64) {
            *gv = acc.iter().sum::<f64>();
        }
        loss_64.iter().sum::<f64>()
    }
}
