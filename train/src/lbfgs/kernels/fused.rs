//! The fused f64 kernel for the two-hidden-layer networks the fits use most.

use super::simd::{Arith, Block, LANES, Real, sigmoid_block};

/// Rows per block of the fused kernel: two [`Block`]s' worth ([`Pair`]), so that two independent
/// chains of the forward and backward pass are in flight at once. With one block of [`LANES`] rows the
/// kernel was latency-bound (a block's forward pass alone is a chain of two polynomial sigmoids) and
/// barely faster than the column passes.
pub(super) const FUSED_LANES: usize = 2 * LANES;

/// Two [`Block`]s side by side, [`FUSED_LANES`] rows: every operation on both halves.
#[derive(Clone, Copy)]
pub(super) struct Pair<B>(B, B);

impl<B: Block> Block for Pair<B> {
    type Single = B::Single;
}

impl<B: Block> Arith for Pair<B> {
    type Elem = f64;
    #[inline(always)]
    unsafe fn load(l: &[f64]) -> Self {
        // SAFETY: the caller's contract (`B`'s features).
        unsafe { Pair(B::load(l), B::load(&l[LANES..])) }
    }
    #[inline(always)]
    unsafe fn store(self, l: &mut [f64]) {
        // SAFETY: as in `load`.
        unsafe {
            self.0.store(l);
            self.1.store(&mut l[LANES..]);
        }
    }
    #[inline(always)]
    unsafe fn splat(v: f64) -> Self {
        // SAFETY: as in `load`.
        unsafe { Pair(B::splat(v), B::splat(v)) }
    }
    #[inline(always)]
    unsafe fn mul_add(self, b: Self, c: Self) -> Self {
        // SAFETY: as in `load`.
        unsafe { Pair(self.0.mul_add(b.0, c.0), self.1.mul_add(b.1, c.1)) }
    }
    #[inline(always)]
    unsafe fn add(self, b: Self) -> Self {
        // SAFETY: as in `load`.
        unsafe { Pair(self.0.add(b.0), self.1.add(b.1)) }
    }
    #[inline(always)]
    unsafe fn mul(self, b: Self) -> Self {
        // SAFETY: as in `load`.
        unsafe { Pair(self.0.mul(b.0), self.1.mul(b.1)) }
    }
    #[inline(always)]
    unsafe fn sub(self, b: Self) -> Self {
        // SAFETY: as in `load`.
        unsafe { Pair(self.0.sub(b.0), self.1.sub(b.1)) }
    }
    #[inline(always)]
    unsafe fn div(self, b: Self) -> Self {
        // SAFETY: as in `load`.
        unsafe { Pair(self.0.div(b.0), self.1.div(b.1)) }
    }
    #[inline(always)]
    unsafe fn clamp(self, lo: f64, hi: f64) -> Self {
        // SAFETY: as in `load`.
        unsafe { Pair(self.0.clamp(lo, hi), self.1.clamp(lo, hi)) }
    }
    #[inline(always)]
    unsafe fn pow2_of_shifted(self) -> Self {
        // SAFETY: as in `load`.
        unsafe { Pair(self.0.pow2_of_shifted(), self.1.pow2_of_shifted()) }
    }
}

/// The fused kernel for the networks the fits use most: two sigmoid hidden layers of `H1` and `H2`
/// units and one linear output (10-4-4-1, the paper's; 8×8 variants), widths known at compile time.
///
/// Why: [`Workspace`]'s column passes run each layer over all rows in turn (short work per pass, every
/// value loaded and stored once per weight) and stream ~0.8 MB of columns through the caches several
/// times per evaluation on the Titan X data; here one block of [`FUSED_LANES`] rows goes through the whole
/// network forward and backward before the next block, with the block's units in registers: the
/// inputs are read once per evaluation and nothing of all rows is stored. The first layer's weight
/// gradients (the only ones that depend on the input width) keep their [`FUSED_LANES`] partial sums in a small
/// buffer; the others are locals. The sums run in the same order over rows as the column passes
/// (partial sums per lane, added at the end), so the two agree to rounding (tested).
pub(super) struct Fused {
    inputs: usize,
    blocks: usize,
    /// Block-major inputs: input `i` of rows `b·FUSED_LANES..` is `x[(b·inputs + i)·FUSED_LANES..][..FUSED_LANES]`.
    x: Vec<f64>,
    /// Targets, padded with zeros to whole blocks.
    y: Vec<f64>,
    /// 1 on the real rows of the last block, 0 on its padding (the padding's error is masked out).
    last_mask: [f64; FUSED_LANES],
    /// [`FUSED_LANES`] partial sums per first-layer weight, input-major (`[inputs][H1]`).
    gacc1: Vec<f64>,
    /// The first layer's weights input-major (`[inputs][H1]`; θ holds them `[H1][inputs]`).
    w1t: Vec<f64>,
}

impl Fused {
    /// Buffers for `inputs` inputs and `h1` first-layer units, without rows yet ([`Fused::deal`]).
    pub(super) fn new(inputs: usize, h1: usize) -> Fused {
        Fused {
            inputs,
            blocks: 0,
            x: Vec::new(),
            y: Vec::new(),
            last_mask: [0.0; FUSED_LANES],
            gacc1: vec![0.0; h1 * inputs * FUSED_LANES],
            w1t: vec![0.0; h1 * inputs],
        }
    }

    /// As [`single::Single::deal`]: rows `rows` of `x` (row-major) and `y`, in that order, in these
    /// buffers.
    pub(super) fn deal(&mut self, x: &[f64], y: &[f64], rows: &[usize]) {
        let (n, inputs) = (rows.len(), self.inputs);
        let blocks = n.div_ceil(FUSED_LANES);
        self.x.clear();
        self.x.resize(blocks * inputs * FUSED_LANES, 0.0);
        self.y.clear();
        self.y.resize(blocks * FUSED_LANES, 0.0);
        for (r, &src) in rows.iter().enumerate() {
            let (b, l) = (r / FUSED_LANES, r % FUSED_LANES);
            for (i, v) in x[src * inputs..][..inputs].iter().enumerate() {
                self.x[(b * inputs + i) * FUSED_LANES + l] = *v;
            }
            self.y[r] = y[src];
        }
        self.last_mask = [0.0; FUSED_LANES];
        self.last_mask[..n - blocks.saturating_sub(1) * FUSED_LANES].fill(1.0);
        self.blocks = blocks;
    }

    /// The sums over rows of the loss's data term `Σ e²` and, with `g`, of its gradient `Σ e·∂f/∂θ`
    /// (written into `g`, θ's layout). Safety: as [`super::simd::exp_block`].
    #[inline(always)]
    pub(super) unsafe fn sums<B: Block, const H1: usize, const H2: usize>(
        &mut self,
        theta: &[f64],
        g: Option<&mut [f64]>,
    ) -> f64 {
        const FL: usize = FUSED_LANES;
        // SAFETY (every block below): the caller's contract.
        unsafe {
            let ni = self.inputs;
            let (w1, rest) = theta.split_at(H1 * ni);
            // The first layer's weights input-major, as the loop over inputs reads them.
            for (i, t) in self.w1t.chunks_exact_mut(H1).enumerate() {
                for (o, v) in t.iter_mut().enumerate() {
                    *v = w1[o * ni + i];
                }
            }
            let net = Net::<f64, H1, H2>::new(rest, |v| v);
            let zero = B::splat(0.0);
            let grad = g.is_some();
            if grad {
                self.gacc1.fill(0.0);
            }
            let mut grads = Grads::<B, H1, H2>::splat(zero);
            let mut loss = zero;
            let last = self.blocks.saturating_sub(1);
            for (b, (x, y)) in self.x.chunks_exact(ni * FL).zip(self.y.chunks_exact(FL)).enumerate() {
                let inputs = x.chunks_exact(FL).map(|xi| B::load(xi));
                let (h1, h2, out) = net.forward(inputs, &self.w1t);
                let mut e = out.sub(B::load(y));
                if b == last {
                    e = e.mul(B::load(&self.last_mask));
                }
                loss = e.mul_add(e, loss);
                if !grad {
                    continue;
                }
                // Backward: δ of each layer, the gradients' partial sums.
                let d1 = net.backward(e, (&h1, &h2), &mut grads, |w, e| w.mul_add(e, zero));
                for (xi, accs) in x.chunks_exact(FL).zip(self.gacc1.chunks_exact_mut(H1 * FL)) {
                    let xi = B::load(xi);
                    for (d, acc) in d1.iter().zip(accs.chunks_exact_mut(FL)) {
                        d.mul_add(xi, B::load(acc)).store(acc);
                    }
                }
            }
            let lanes_sum = |v: B| {
                let mut l = [0.0; FL];
                v.store(&mut l);
                l.iter().sum::<f64>()
            };
            if let Some(g) = g {
                let (gw1, rest) = g.split_at_mut(H1 * ni);
                // `gacc1` is input-major ([inputs][H1]), θ's first layer unit-major ([H1][inputs]).
                for (i, accs) in self.gacc1.chunks_exact(H1 * FL).enumerate() {
                    for (o, acc) in accs.chunks_exact(FL).enumerate() {
                        gw1[o * ni + i] = acc.iter().sum::<f64>();
                    }
                }
                for (gv, v) in rest.iter_mut().zip(grads.iter_mut()) {
                    *gv = lanes_sum(*v);
                }
            }
            lanes_sum(loss)
        }
    }
}

/// The weights after the first layer of the fused kernels' networks (two sigmoid hidden layers of `H1`,
/// `H2` units, one linear output) by unit, as fixed-size arrays in the kernel's precision (no bounds
/// checks in the unrolled loops).
pub(super) struct Net<E, const H1: usize, const H2: usize> {
    pub(super) b1: [E; H1],
    pub(super) w2: [[E; H1]; H2],
    pub(super) b2: [E; H2],
    pub(super) w3: [E; H2],
    pub(super) b3: E,
}

impl<E: Real, const H1: usize, const H2: usize> Net<E, H1, H2> {
    /// From θ after the first layer's weights, each value converted by `to`.
    #[inline(always)]
    pub(super) fn new(rest: &[f64], to: impl Fn(f64) -> E) -> Self {
        let at = H1 + H2 * H1;
        Net {
            b1: std::array::from_fn(|o| to(rest[o])),
            w2: std::array::from_fn(|j| std::array::from_fn(|o| to(rest[H1 + j * H1 + o]))),
            b2: std::array::from_fn(|j| to(rest[at + j])),
            w3: std::array::from_fn(|j| to(rest[at + H2 + j])),
            b3: to(rest[at + 2 * H2]),
        }
    }

    /// A block of rows forward: both hidden layers' activations and the output. Unit o = b_o + Σ_i
    /// w_oi·(input i), inputs in order (as the column passes); `inputs` yields the block's input
    /// vectors, `w1t` holds the first layer's weights input-major (`[inputs][H1]`).
    /// Safety: as [`super::simd::exp_block`].
    #[inline(always)]
    pub(super) unsafe fn forward<B: Arith<Elem = E>>(
        &self,
        inputs: impl Iterator<Item = B>,
        w1t: &[E],
    ) -> ([B; H1], [B; H2], B) {
        // SAFETY: the caller's contract.
        unsafe {
            let mut h1: [B; H1] = std::array::from_fn(|o| B::splat(self.b1[o]));
            for (xi, w1i) in inputs.zip(w1t.chunks_exact(H1)) {
                for (h, w) in h1.iter_mut().zip(w1i) {
                    *h = B::splat(*w).mul_add(xi, *h);
                }
            }
            for h in h1.iter_mut() {
                *h = sigmoid_block(*h);
            }
            let mut h2: [B; H2] = std::array::from_fn(|j| B::splat(self.b2[j]));
            for (h, w2j) in h2.iter_mut().zip(&self.w2) {
                for (a, w) in h1.iter().zip(w2j) {
                    *h = B::splat(*w).mul_add(*a, *h);
                }
                *h = sigmoid_block(*h);
            }
            let mut out = B::splat(self.b3);
            for (a, w) in h2.iter().zip(&self.w3) {
                out = B::splat(*w).mul_add(*a, out);
            }
            (h1, h2, out)
        }
    }

    /// The δ of both hidden layers for a block of rows with error `e`, as [`Net::backward`] forms them
    /// (same operations, same order), without the gradient sums.
    /// Safety: as [`super::simd::exp_block`].
    #[inline(always)]
    pub(super) unsafe fn deltas<B: Arith<Elem = E>>(
        &self,
        e: B,
        (h1, h2): (&[B; H1], &[B; H2]),
        w3_times_e: impl Fn(B, B) -> B,
    ) -> ([B; H2], [B; H1]) {
        // SAFETY: the caller's contract.
        unsafe {
            let zero = B::splat(E::from(0.0));
            let one = B::splat(E::from(1.0));
            let mut d2 = [zero; H2];
            for ((d, a), w) in d2.iter_mut().zip(h2).zip(&self.w3) {
                *d = w3_times_e(B::splat(*w), e).mul(a.mul(one.sub(*a)));
            }
            let mut d1 = [zero; H1];
            for (d, w2j) in d2.iter().zip(&self.w2) {
                for (d1o, w) in d1.iter_mut().zip(w2j) {
                    *d1o = B::splat(*w).mul_add(*d, *d1o);
                }
            }
            for (d, a) in d1.iter_mut().zip(h1) {
                *d = d.mul(a.mul(one.sub(*a)));
            }
            (d2, d1)
        }
    }

    /// A block of rows backward from its error `e`: adds the partial sums of the gradients after the
    /// first layer into `g` and returns the first hidden layer's δ. `w3_times_e` forms `w3_j·e` (the
    /// f64 kernel rounds it as a fused `w3_j·e + 0`, as its column passes do).
    /// Safety: as [`super::simd::exp_block`].
    #[inline(always)]
    pub(super) unsafe fn backward<B: Arith<Elem = E>>(
        &self,
        e: B,
        (h1, h2): (&[B; H1], &[B; H2]),
        g: &mut Grads<B, H1, H2>,
        w3_times_e: impl Fn(B, B) -> B,
    ) -> [B; H1] {
        // SAFETY: the caller's contract.
        unsafe {
            let zero = B::splat(E::from(0.0));
            let one = B::splat(E::from(1.0));
            g.b3 = g.b3.add(e);
            let mut d2 = [zero; H2];
            for (((d, gw), a), w) in d2.iter_mut().zip(&mut g.w3).zip(h2).zip(&self.w3) {
                *gw = e.mul_add(*a, *gw);
                *d = w3_times_e(B::splat(*w), e).mul(a.mul(one.sub(*a)));
            }
            let mut d1 = [zero; H1];
            for (((d, gb), gw), w2j) in d2.iter().zip(&mut g.b2).zip(&mut g.w2).zip(&self.w2) {
                *gb = gb.add(*d);
                for (((a, gv), d1o), w) in h1.iter().zip(gw.iter_mut()).zip(d1.iter_mut()).zip(w2j) {
                    *gv = d.mul_add(*a, *gv);
                    *d1o = B::splat(*w).mul_add(*d, *d1o);
                }
            }
            for ((d, gb), a) in d1.iter_mut().zip(&mut g.b1).zip(h1) {
                *d = d.mul(a.mul(one.sub(*a)));
                *gb = gb.add(*d);
            }
            d1
        }
    }
}

/// The per-lane partial sums of the gradients after the first layer, in [`Net`]'s shapes.
pub(super) struct Grads<B, const H1: usize, const H2: usize> {
    pub(super) b1: [B; H1],
    pub(super) w2: [[B; H1]; H2],
    pub(super) b2: [B; H2],
    pub(super) w3: [B; H2],
    pub(super) b3: B,
}

impl<B: Copy, const H1: usize, const H2: usize> Grads<B, H1, H2> {
    pub(super) fn splat(zero: B) -> Self {
        Grads { b1: [zero; H1], w2: [[zero; H1]; H2], b2: [zero; H2], w3: [zero; H2], b3: zero }
    }

    /// Every sum, in θ's order.
    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut B> {
        self.b1
            .iter_mut()
            .chain(self.w2.iter_mut().flatten())
            .chain(&mut self.b2)
            .chain(&mut self.w3)
            .chain(std::iter::once(&mut self.b3))
    }
}
