//! The loss and gradient of [`super::loss_grad`], vectorized for the many evaluations of a fit: the
//! column passes here, the fused kernel ([`fused`]) and its single-precision form ([`single`]), on the
//! lane arithmetic of [`simd`].

use super::Layout;
#[cfg(test)]
use super::loss_grad;
use ndarray::ArrayView2;

#[macro_use]
mod simd;
mod fused;
mod single;

use fused::{Fused, Net, Pair};
pub use simd::instruction_path;
use simd::{Arith, Block, LANES, Lanes, Portable, sigmoid_block};
#[cfg(target_arch = "x86_64")]
use simd::{avx2, has_avx2_fma};

/// Preallocated buffers for evaluating the BP-ANN's loss and gradient many times on the same rows.
///
/// Why: an L-BFGS or Adam fit evaluates the loss thousands of times on ~5 000 rows and ~70 parameters,
/// where ndarray's per-call costs (allocating every activation, packing tiny matrices) dominate.
///
/// Two kernels. The networks the fits use most (two sigmoid hidden layers of 4×4 or 8×8 units) run a
/// fused kernel: a block of 16 rows goes through the whole network forward and backward before the
/// next, in f64 or (with [`Precision::F32`]) in f32 with f64 sums. Other layouts run column passes:
/// activations stored feature-major (one contiguous column of `n` values per unit), so every loop runs
/// over rows and is a vector loop, the sums over rows keeping eight partial sums per lane block. Both
/// use a polynomial `exp` in the sigmoid instead of libm's scalar one. In f64, results agree with
/// [`super::loss_grad`] to rounding (tested to 1e-12 relative), not bit for bit.
pub struct Workspace {
    sizes: Vec<usize>,
    n: usize,
    /// Feature-major inputs: column `i` is `x[i*n..(i+1)*n]`.
    x: Vec<f64>,
    y: Vec<f64>,
    /// Per layer `k`, its feature-major output (after the sigmoid for hidden layers).
    acts: Vec<Vec<f64>>,
    delta: Vec<f64>,
    next_delta: Vec<f64>,
    /// The fused kernel, for the layouts it covers ([`Fused`]; then the column buffers stay empty).
    fused: Option<Fused>,
    /// Its single-precision variant, when asked for ([`Precision::F32`]) and the layout is covered.
    single: Option<single::Single>,
}

/// The arithmetic of [`Workspace`]'s loss and gradient.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Precision {
    /// f64 throughout (agrees with [`super::loss_grad`] to rounding).
    #[default]
    F64,
    /// For the two-hidden-layer 4×4 and 8×8 networks: activations and products in f32, sums over rows
    /// in f64 (see `lbfgs/kernels/single.rs`; ~1e-6 relative from [`super::loss_grad`]). Other layouts
    /// run in f64.
    F32,
}

impl Workspace {
    /// Buffers for `layout` on rows `x` (standardized) and targets `y`. The output layer has one unit.
    pub fn new(layout: &Layout, x: ArrayView2<'_, f64>, y: &[f64]) -> Workspace {
        Workspace::with_precision(layout, x, y, Precision::F64)
    }

    /// As [`Workspace::new`], in the given arithmetic.
    pub fn with_precision(
        layout: &Layout,
        x: ArrayView2<'_, f64>,
        y: &[f64],
        precision: Precision,
    ) -> Workspace {
        let n = x.nrows();
        let sizes = &layout.sizes;
        let (fused, single) = match sizes[..] {
            [inputs, h1, h2, 1] if layout.fused() => match precision {
                Precision::F64 => (Some(Fused::new(inputs, h1)), None),
                Precision::F32 => (None, Some(single::Single::new(inputs, h1, h2))),
            },
            _ => (None, None),
        };
        let mut w = Workspace {
            sizes: sizes.clone(),
            n,
            x: Vec::new(),
            y: Vec::new(),
            acts: vec![Vec::new(); sizes.len() - 1],
            delta: Vec::new(),
            next_delta: Vec::new(),
            fused,
            single,
        };
        w.deal(x, y, &(0..n).collect::<Vec<_>>());
        w
    }

    /// Replaces the rows by rows `rows` of `x` and targets `y` (indices into them, in the order given):
    /// a mini-batch, dealt into the buffers already allocated (grown if the batch is larger), in the
    /// same layout and arithmetic. The loss and gradient are then the batch's: its mean.
    pub fn deal(&mut self, x: ArrayView2<'_, f64>, y: &[f64], rows: &[usize]) {
        debug_assert_eq!(x.ncols(), self.sizes[0], "one column per input");
        debug_assert_eq!(x.nrows(), y.len(), "one target per row");
        let n = rows.len();
        self.n = n;
        if self.fused.is_some() || self.single.is_some() {
            // Rows as plain slices (ndarray's row views cost more than the copy itself here); borrowed,
            // not copied, when `x` is in standard layout, as the fits' rows are.
            let x = x.as_standard_layout();
            let x = x.as_slice().expect("a standard-layout array is one slice");
            match (self.fused.as_mut(), self.single.as_mut()) {
                (Some(f), _) => f.deal(x, y, rows),
                (_, Some(s)) => s.deal(x, y, rows),
                _ => {}
            }
            return;
        }
        self.x.clear();
        for i in 0..x.ncols() {
            self.x.extend(rows.iter().map(|&r| x[[r, i]]));
        }
        self.y.clear();
        self.y.extend(rows.iter().map(|&r| y[r]));
        let widest = self.sizes.iter().copied().max().unwrap_or(0);
        for (a, &o) in self.acts.iter_mut().zip(&self.sizes[1..]) {
            a.resize(n * o, 0.0);
        }
        self.delta.resize(n * widest, 0.0);
        self.next_delta.resize(n * widest, 0.0);
    }

    /// The loss and gradient, as [`super::loss_grad`] (to rounding).
    pub fn loss_grad(&mut self, theta: &[f64], alpha: f64) -> (f64, Vec<f64>) {
        let mut g = vec![0.0; theta.len()];
        let loss = self.loss_grad_into(theta, alpha, &mut g);
        (loss, g)
    }

    /// As [`Workspace::loss_grad`], writing the gradient into `g` (length = the parameter count).
    pub fn loss_grad_into(&mut self, theta: &[f64], alpha: f64, g: &mut [f64]) -> f64 {
        self.dispatch(theta, alpha, Some(g))
    }

    /// Mean squared error of the network's output on these rows (forward pass only): the validation
    /// score, without building artifact layers.
    pub fn mse(&mut self, theta: &[f64]) -> f64 {
        2.0 * self.dispatch(theta, 0.0, None)
    }

    fn dispatch(&mut self, theta: &[f64], alpha: f64, g: Option<&mut [f64]>) -> f64 {
        #[cfg(target_arch = "x86_64")]
        {
            if has_avx2_fma() {
                // SAFETY: the CPU has the features `eval_avx2` is compiled for (checked just above).
                return unsafe { self.eval_avx2(theta, alpha, g) };
            }
            // SAFETY: `Portable` needs no CPU features.
            unsafe { self.eval::<false, Portable<false>>(theta, alpha, g) }
        }
        #[cfg(target_arch = "aarch64")]
        {
            // SAFETY: `Portable` needs no CPU features.
            unsafe { self.eval::<true, Portable<true>>(theta, alpha, g) }
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            // SAFETY: `Portable` needs no CPU features.
            unsafe { self.eval::<false, Portable<false>>(theta, alpha, g) }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn eval_avx2(&mut self, theta: &[f64], alpha: f64, g: Option<&mut [f64]>) -> f64 {
        // SAFETY: this function's features are `Avx2`'s.
        unsafe { self.eval::<true, avx2::Avx2>(theta, alpha, g) }
    }

    /// The loss, and the gradient into `g` when given (without it, the forward pass only).
    ///
    /// # Safety
    /// The CPU has `B`'s features (see [`Block`]).
    #[inline(always)]
    unsafe fn eval<const FUSED: bool, B: Block>(
        &mut self,
        theta: &[f64],
        alpha: f64,
        mut g: Option<&mut [f64]>,
    ) -> f64 {
        let n = self.n;
        let nf = n.max(1) as f64;
        let depth = self.sizes.len() - 1;
        let mut offsets = Vec::with_capacity(depth);
        let mut at = 0;
        for w in self.sizes.windows(2) {
            offsets.push(at);
            at += w[0] * w[1] + w[1];
        }
        let mut loss;
        if self.fused.is_some() || self.single.is_some() {
            let widths = (self.sizes[1], self.sizes[2]);
            // SAFETY: `eval`'s contract.
            let sq = unsafe {
                match (self.fused.as_mut(), self.single.as_mut(), widths) {
                    (Some(f), _, (4, 4)) => f.sums::<Pair<B>, 4, 4>(theta, g.as_deref_mut()),
                    (Some(f), _, (8, 8)) => f.sums::<Pair<B>, 8, 8>(theta, g.as_deref_mut()),
                    (_, Some(s), (4, 4)) => s.sums::<B::Single, 4, 4>(theta, g.as_deref_mut()),
                    (_, Some(s), (8, 8)) => s.sums::<B::Single, 8, 8>(theta, g.as_deref_mut()),
                    _ => unreachable!(
                        "Workspace::with_precision builds the fused kernels only for these widths"
                    ),
                }
            };
            if let Some(g) = g.as_deref_mut() {
                for v in g.iter_mut() {
                    *v /= nf;
                }
            }
            loss = 0.5 / nf * sq;
        } else {
            // Forward: column o of z = b_o + Σ_i w_oi·(column i of the input), then the sigmoid on hidden
            // layers.
            for k in 0..depth {
                let (i_n, o_n) = (self.sizes[k], self.sizes[k + 1]);
                let w = &theta[offsets[k]..offsets[k] + i_n * o_n];
                let b = &theta[offsets[k] + i_n * o_n..offsets[k] + i_n * o_n + o_n];
                let (before, rest) = self.acts.split_at_mut(k);
                let input: &[f64] = if k == 0 { &self.x } else { &before[k - 1] };
                for ((z, w_o), b_o) in rest[0].chunks_exact_mut(n.max(1)).zip(w.chunks_exact(i_n)).zip(b) {
                    z.fill(*b_o);
                    for (col, s) in input.chunks_exact(n.max(1)).zip(w_o) {
                        for (c, a) in z.iter_mut().zip(col) {
                            *c = madd::<FUSED>(*a, *s, *c);
                        }
                    }
                    if k + 1 < depth {
                        // SAFETY: `eval`'s contract.
                        unsafe { sigmoid_column::<B>(z) };
                    }
                }
            }
            // Output error: δ = (f − y)/n and the data term of the loss.
            let loss_sum = {
                let out = &self.acts[depth - 1];
                for ((d, p), t) in self.delta[..n].iter_mut().zip(&out[..n]).zip(&self.y) {
                    *d = p - t;
                }
                let e = &self.delta[..n];
                // SAFETY: `eval`'s contract.
                let sq = unsafe { sums::<B, 1>(e, [e])[0] };
                for d in self.delta[..n].iter_mut() {
                    *d /= nf;
                }
                sq
            };
            loss = 0.5 / nf * loss_sum;
            if let Some(g) = g.as_deref_mut() {
                // Backward, last layer first.
                for k in (0..depth).rev() {
                    let (i_n, o_n) = (self.sizes[k], self.sizes[k + 1]);
                    let wo = offsets[k];
                    let w = &theta[wo..wo + i_n * o_n];
                    let input: &[f64] = if k == 0 { &self.x } else { &self.acts[k - 1] };
                    let delta = &self.delta[..n * o_n];
                    let (gw, gb) = g[wo..wo + i_n * o_n + o_n].split_at_mut(i_n * o_n);
                    // Weight gradient Σ_r δ_ro·a_ri, four inputs at a time (δ loaded once for four).
                    for ((row, d), gb_o) in gw.chunks_exact_mut(i_n).zip(delta.chunks_exact(n.max(1))).zip(gb)
                    {
                        let mut cols = input.chunks_exact(n.max(1));
                        let mut quads = row.chunks_exact_mut(4);
                        for q in quads.by_ref() {
                            let c: [&[f64]; 4] = std::array::from_fn(|_| cols.next().unwrap_or(&[]));
                            // SAFETY: `eval`'s contract.
                            q.copy_from_slice(&unsafe { sums::<B, 4>(d, c) });
                        }
                        for (r, c) in quads.into_remainder().iter_mut().zip(cols) {
                            // SAFETY: `eval`'s contract.
                            *r = unsafe { sums::<B, 1>(d, [c])[0] };
                        }
                        // SAFETY: `eval`'s contract.
                        *gb_o = unsafe { column_sum::<B>(d) };
                    }
                    if k > 0 {
                        // δ of the layer below: (δ·W) ⊙ a(1 − a).
                        let next = &mut self.next_delta[..n * i_n];
                        for (i, (col, a)) in
                            next.chunks_exact_mut(n.max(1)).zip(input.chunks_exact(n.max(1))).enumerate()
                        {
                            col.fill(0.0);
                            for (o, d) in delta.chunks_exact(n.max(1)).enumerate() {
                                let s = w[o * i_n + i];
                                for (c, dv) in col.iter_mut().zip(d) {
                                    *c = madd::<FUSED>(*dv, s, *c);
                                }
                            }
                            for (v, a) in col.iter_mut().zip(a) {
                                *v *= a * (1.0 - a);
                            }
                        }
                        std::mem::swap(&mut self.delta, &mut self.next_delta);
                    }
                }
            }
        }
        if alpha > 0.0 {
            for (k, &wo) in offsets.iter().enumerate() {
                let w = &theta[wo..wo + self.sizes[k] * self.sizes[k + 1]];
                if let Some(g) = g.as_deref_mut() {
                    for (gv, wv) in g[wo..wo + w.len()].iter_mut().zip(w) {
                        *gv += (alpha / nf) * *wv;
                    }
                }
                loss += 0.5 * alpha / nf * w.iter().map(|v| v * v).sum::<f64>();
            }
        }
        loss
    }
}

/// The sigmoid of every value of `v`, a block of [`LANES`] at a time (the tail padded with zeros).
/// Safety: as [`simd::exp_block`].
#[inline(always)]
unsafe fn sigmoid_column<B: Block>(v: &mut [f64]) {
    // SAFETY: the caller's contract.
    unsafe {
        let mut chunks = v.chunks_exact_mut(LANES);
        for c in chunks.by_ref() {
            let c: &mut Lanes = c.try_into().unwrap_or_else(|_| unreachable!());
            sigmoid_block(B::load(c)).store(c);
        }
        let tail = chunks.into_remainder();
        if !tail.is_empty() {
            let mut t = [0.0; LANES];
            t[..tail.len()].copy_from_slice(tail);
            sigmoid_block(B::load(&t)).store(&mut t);
            let len = tail.len();
            tail.copy_from_slice(&t[..len]);
        }
    }
}

/// `G` dot products `d·col_j` (each column as long as `d`), with [`LANES`] partial sums per product
/// added at the end: vector loops, and independent chains that overlap. Safety: as [`simd::exp_block`].
#[inline(always)]
unsafe fn sums<B: Block, const G: usize>(d: &[f64], cols: [&[f64]; G]) -> [f64; G] {
    // SAFETY: the caller's contract.
    unsafe {
        let mut acc = [B::splat(0.0); G];
        let blocks = d.len() / LANES;
        for (b, dc) in d.chunks_exact(LANES).enumerate() {
            let dv = B::load(dc);
            for (a, c) in acc.iter_mut().zip(&cols) {
                *a = dv.mul_add(B::load(&c[b * LANES..]), *a);
            }
        }
        let mut out = [0.0; G];
        for ((o, a), c) in out.iter_mut().zip(acc).zip(&cols) {
            let mut l = [0.0; LANES];
            a.store(&mut l);
            *o = l.iter().sum::<f64>()
                + d[blocks * LANES..].iter().zip(&c[blocks * LANES..]).map(|(x, y)| x * y).sum::<f64>();
        }
        out
    }
}

/// The plain sum of `d`, with [`LANES`] partial sums. Safety: as [`simd::exp_block`].
#[inline(always)]
unsafe fn column_sum<B: Block>(d: &[f64]) -> f64 {
    // SAFETY: the caller's contract.
    unsafe {
        let mut acc = B::splat(0.0);
        let mut chunks = d.chunks_exact(LANES);
        for c in chunks.by_ref() {
            acc = acc.add(B::load(c));
        }
        let mut l = [0.0; LANES];
        acc.store(&mut l);
        l.iter().sum::<f64>() + chunks.remainder().iter().sum::<f64>()
    }
}

/// `c + a·b`, fused (one rounding) where the CPU has FMA, so that the fallback never calls libm's `fma`.
#[inline(always)]
fn madd<const FUSED: bool>(a: f64, b: f64, c: f64) -> f64 {
    if FUSED { a.mul_add(b, c) } else { c + a * b }
}
#[cfg(test)]
mod tests {
    use super::super::sigmoid;
    use super::simd::exp_poly;
    use super::*;
    use ndarray::Array2;

    /// Rows dealt into a workspace (a mini-batch, in any order, smaller or larger than the rows it held)
    /// give the loss and gradient of a workspace built on those rows, bit for bit: fused f32 and f64
    /// kernels and the column passes.
    #[test]
    fn dealt_rows_give_the_loss_and_gradient_of_a_workspace_on_those_rows() {
        let x = Array2::from_shape_fn((53, 3), |(i, j)| ((i * (5 + 2 * j)) % 13) as f64 / 6.0 - 1.0);
        let y: Vec<f64> = (0..53).map(|i| ((i * 7) % 11) as f64 / 5.0 - 1.0).collect();
        let batches: [Vec<usize>; 4] = [
            (0..20).map(|i| (i * 17) % 53).collect(),
            vec![52, 0, 7],
            (0..53).rev().collect(),
            (10..47).collect(),
        ];
        for sizes in [vec![3, 4, 4, 1], vec![3, 8, 8, 1], vec![3, 5, 2, 1]] {
            let layout = Layout { sizes: sizes.clone() };
            let theta: Vec<f64> =
                (0..layout.n_params()).map(|k| ((k * 37) % 19) as f64 / 10.0 - 0.9).collect();
            for precision in [Precision::F32, Precision::F64] {
                let mut dealt = Workspace::with_precision(&layout, x.view(), &y, precision);
                for rows in &batches {
                    dealt.deal(x.view(), &y, rows);
                    let sel = x.select(ndarray::Axis(0), rows);
                    let ys: Vec<f64> = rows.iter().map(|&r| y[r]).collect();
                    let mut fresh = Workspace::with_precision(&layout, sel.view(), &ys, precision);
                    let (la, ga) = dealt.loss_grad(&theta, 0.1);
                    let (lb, gb) = fresh.loss_grad(&theta, 0.1);
                    let what = format!("{sizes:?} {precision:?} {} rows", rows.len());
                    assert_eq!(la.to_bits(), lb.to_bits(), "{what}");
                    assert!(ga.iter().zip(&gb).all(|(a, b)| a.to_bits() == b.to_bits()), "{what}");
                    assert_eq!(dealt.mse(&theta).to_bits(), fresh.mse(&theta).to_bits(), "{what}");
                }
            }
        }
    }

    /// The vectorized evaluation must compute the same loss and gradient as the plain ndarray one; only
    /// the order of the sums differs, so they agree to rounding (a wrong index or a missed padding mask
    /// would be off by far more).
    #[test]
    fn workspace_loss_and_gradient_match_the_ndarray_ones() {
        // 9 rows: one partial block; 701 and 203: many blocks and a partial last one. 10-4-4-1, 12-8-8-1
        // and 4-4-4-1 run the fused kernel, the others the column passes.
        for (sizes, rows, alpha) in [
            (vec![3, 4, 2, 1], 9, 0.3),
            (vec![10, 4, 4, 1], 701, 1e-4),
            (vec![5, 7, 1], 300, 0.0),
            (vec![12, 8, 8, 1], 203, 1e-3),
            (vec![4, 4, 4, 1], 9, 0.3),
        ] {
            let layout = Layout { sizes };
            let cols = layout.sizes[0];
            let x = Array2::from_shape_fn((rows, cols), |(i, j)| ((i * 7 + j * 13) % 17) as f64 * 0.21 - 1.6);
            let y: Vec<f64> = (0..rows).map(|i| (i as f64 * 0.37).cos()).collect();
            let mut ws = Workspace::new(&layout, x.view(), &y);
            for step in 0..3 {
                let theta: Vec<f64> = (0..layout.n_params())
                    .map(|i| (((i + step) * 37 % 11) as f64 - 5.0) * 0.13 + step as f64 * 0.01)
                    .collect();
                let (f0, g0) = loss_grad(&layout, &theta, x.view(), &y, alpha);
                let (f1, g1) = ws.loss_grad(&theta, alpha);
                // The fallback for CPUs without FMA (unfused multiply-adds), checked the same way.
                let mut g2 = vec![0.0; theta.len()];
                // SAFETY: `Portable` needs no CPU features.
                let f2 = unsafe { ws.eval::<false, Portable<false>>(&theta, alpha, Some(&mut g2)) };
                let scale = g0.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
                for (f, g) in [(f1, &g1), (f2, &g2)] {
                    assert!((f0 - f).abs() <= 1e-13 * f0.abs(), "{:?}: loss {f0} vs {f}", layout.sizes);
                    for (j, (a, b)) in g0.iter().zip(g).enumerate() {
                        assert!((a - b).abs() <= 1e-12 * scale, "{:?}: d/dθ{j} {a} vs {b}", layout.sizes);
                    }
                }
                let mse = ws.mse(&theta);
                let p = forward(&layout, &theta, x.view());
                let want = p.iter().zip(&y).map(|(a, b)| (a - b) * (a - b)).sum::<f64>() / rows as f64;
                assert!((mse - want).abs() <= 1e-13 * want, "{:?}: mse {mse} vs {want}", layout.sizes);
            }
        }
    }

    /// The explicit AVX2 kernel is the portable one with vector instructions: same operations, same
    /// order, so bit-identical results (this CPU permitting).
    #[test]
    fn avx2_kernel_is_bit_identical_to_the_portable_one() {
        // The fused kernel (10-4-4-1) and the column passes (10-5-3-1).
        for sizes in [vec![10, 4, 4, 1], vec![10, 5, 3, 1]] {
            let layout = Layout { sizes };
            let x = Array2::from_shape_fn((203, 10), |(i, j)| ((i * 7 + j * 13) % 17) as f64 * 0.21 - 1.6);
            let y: Vec<f64> = (0..203).map(|i| (i as f64 * 0.37).cos()).collect();
            let mut ws = Workspace::new(&layout, x.view(), &y);
            let theta: Vec<f64> =
                (0..layout.n_params()).map(|i| ((i * 37 % 11) as f64 - 5.0) * 0.3).collect();
            assert_avx2_matches_portable_bit_for_bit(&mut ws, &theta, 1e-3, &layout.sizes);
        }
    }

    /// On a CPU with AVX2 and FMA, `ws`'s AVX2 kernel gives the portable one's loss and gradient bit for
    /// bit (elsewhere there is nothing to compare).
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
    fn assert_avx2_matches_portable_bit_for_bit(
        ws: &mut Workspace,
        theta: &[f64],
        alpha: f64,
        sizes: &[usize],
    ) {
        #[cfg(target_arch = "x86_64")]
        if has_avx2_fma() {
            let mut ga = vec![0.0; theta.len()];
            let mut gp = vec![0.0; theta.len()];
            // SAFETY: the CPU has AVX2 and FMA (checked above).
            let fa = unsafe { ws.eval_avx2(theta, alpha, Some(&mut ga)) };
            // SAFETY: `Portable` needs no CPU features.
            let fp = unsafe { ws.eval::<true, Portable<true>>(theta, alpha, Some(&mut gp)) };
            assert_eq!(fa.to_bits(), fp.to_bits(), "{sizes:?}");
            assert_eq!(
                ga.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                gp.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                "{sizes:?}"
            );
        }
    }

    /// The single-precision kernel computes the same loss and gradient as the f64 reference up to f32
    /// rounding of the activations: within 1e-6 relative for the loss and 5e-6 of the largest gradient
    /// component (measured ≤ 6e-8 and ≤ 3e-7; an indexing or masking slip would be off by far more), on
    /// the fused layouts, with partial and many blocks; its AVX2 and portable forms are bit-identical.
    #[test]
    fn single_precision_kernel_matches_the_f64_reference() {
        for (sizes, rows, alpha) in
            [(vec![10, 4, 4, 1], 701, 1e-4), (vec![12, 8, 8, 1], 203, 1e-3), (vec![4, 4, 4, 1], 9, 0.3)]
        {
            let layout = Layout { sizes };
            let cols = layout.sizes[0];
            let x = Array2::from_shape_fn((rows, cols), |(i, j)| ((i * 7 + j * 13) % 17) as f64 * 0.21 - 1.6);
            let y: Vec<f64> = (0..rows).map(|i| (i as f64 * 0.37).cos()).collect();
            let mut ws = Workspace::with_precision(&layout, x.view(), &y, Precision::F32);
            let theta: Vec<f64> =
                (0..layout.n_params()).map(|i| ((i * 37 % 11) as f64 - 5.0) * 0.13).collect();
            let (f0, g0) = loss_grad(&layout, &theta, x.view(), &y, alpha);
            let (f1, g1) = ws.loss_grad(&theta, alpha);
            let scale = g0.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
            assert!((f0 - f1).abs() <= 1e-6 * f0.abs(), "{:?}: loss {f0} vs {f1}", layout.sizes);
            for (j, (a, b)) in g0.iter().zip(&g1).enumerate() {
                assert!((a - b).abs() <= 5e-6 * scale, "{:?}: d/dθ{j} {a} vs {b}", layout.sizes);
            }
            let mse = ws.mse(&theta);
            let p = forward(&layout, &theta, x.view());
            let want = p.iter().zip(&y).map(|(a, b)| (a - b) * (a - b)).sum::<f64>() / rows as f64;
            assert!((mse - want).abs() <= 1e-6 * want, "{:?}: mse {mse} vs {want}", layout.sizes);
            assert_avx2_matches_portable_bit_for_bit(&mut ws, &theta, alpha, &layout.sizes);
        }
    }

    /// The two-phase f32 kernel gives the one-phase kernel's loss and gradient bit for bit
    /// (the same operations in the same order per sum, only scheduled differently), so fits on it are
    /// the one-phase kernel's fits: in both portable forms and, this CPU permitting, AVX2; on the fused layouts,
    /// with one partial group, several groups of [`single::ROWS`]-row blocks and a partial last block.
    #[test]
    fn two_phase_single_kernel_is_bit_identical_to_the_one_phase_one() {
        fn both<B: single::Block32, const H: usize>(s: &mut single::Single, theta: &[f64], what: &str) {
            let (mut g1, mut g2) = (vec![0.0; theta.len()], vec![0.0; theta.len()]);
            // SAFETY: only called with `Portable32` (no CPU features) or, after the check, `Avx2x32`.
            let (f1, f2, f3) = unsafe {
                (
                    s.sums::<B, H, H>(theta, Some(&mut g1)),
                    single::one_phase_sums::<B, H, H>(s, theta, &mut g2),
                    s.sums::<B, H, H>(theta, None),
                )
            };
            assert_eq!(f1.to_bits(), f2.to_bits(), "{what}: loss");
            assert_eq!(f3.to_bits(), f2.to_bits(), "{what}: loss without the gradient");
            let bits = |g: &[f64]| g.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&g1), bits(&g2), "{what}: gradient");
            assert!(g1.iter().any(|v| *v != 0.0), "{what}: a gradient at all");
        }
        for (sizes, rows) in [
            (vec![10, 4, 4, 1], 701),
            (vec![10, 4, 4, 1], 200),
            (vec![12, 8, 8, 1], 597),
            (vec![4, 4, 4, 1], 9),
        ] {
            let layout = Layout { sizes };
            let cols = layout.sizes[0];
            let x = Array2::from_shape_fn((rows, cols), |(i, j)| ((i * 7 + j * 13) % 17) as f64 * 0.21 - 1.6);
            let y: Vec<f64> = (0..rows).map(|i| (i as f64 * 0.37).cos()).collect();
            let mut ws = Workspace::with_precision(&layout, x.view(), &y, Precision::F32);
            let s = ws.single.as_mut().expect("a fused layout");
            let theta: Vec<f64> =
                (0..layout.n_params()).map(|i| ((i * 37 % 11) as f64 - 5.0) * 0.13).collect();
            let what = format!("{:?} on {rows} rows", layout.sizes);
            if layout.sizes[1] == 4 {
                both::<single::Portable32<false>, 4>(s, &theta, &what);
                both::<single::Portable32<true>, 4>(s, &theta, &what);
            } else {
                both::<single::Portable32<false>, 8>(s, &theta, &what);
                both::<single::Portable32<true>, 8>(s, &theta, &what);
            }
            #[cfg(target_arch = "x86_64")]
            if has_avx2_fma() {
                if layout.sizes[1] == 4 {
                    both::<single::avx2::Avx2x32, 4>(s, &theta, &what);
                } else {
                    both::<single::avx2::Avx2x32, 8>(s, &theta, &what);
                }
            }
        }
    }

    /// The f32 polynomial exp behind the single-precision sigmoid stays within a few f32 ulp of libm's
    /// over the range the sigmoid meets, and turns NaN and ±∞ into NaN.
    #[test]
    fn single_precision_exp_is_within_a_few_ulp_of_libm() {
        let mut worst = 0.0_f64;
        for i in 0..=200_000 {
            let x = -86.0 + 172.0 * i as f64 / 200_000.0;
            for v in [x, x * 1e-3] {
                let (a, b) = (f64::from(single::exp32(v as f32)), f64::from(v as f32).exp());
                worst = worst.max((a - b).abs() / b);
            }
        }
        assert!(worst < 4.0 * f64::from(f32::EPSILON), "worst relative error {worst:e}");
        assert!(single::exp32(f32::NAN).is_nan());
        assert!(single::exp32(f32::INFINITY).is_nan());
    }

    /// The ndarray forward pass (the output column of `loss_grad`'s network), for the MSE check.
    fn forward(layout: &Layout, theta: &[f64], x: ndarray::ArrayView2<'_, f64>) -> Vec<f64> {
        let mut h = x.to_owned();
        let mats = layout.matrices(theta);
        for (k, (w, b)) in mats.iter().enumerate() {
            h = h.dot(&w.t()) + b;
            if k + 1 < mats.len() {
                h.mapv_inplace(sigmoid);
            }
        }
        h.column(0).to_vec()
    }

    #[test]
    fn workspace_gradient_matches_finite_differences() {
        let layout = Layout { sizes: vec![4, 3, 3, 1] };
        let x = Array2::from_shape_fn((41, 4), |(i, j)| ((i * 5 + j * 3) % 11) as f64 * 0.25 - 1.2);
        let y: Vec<f64> = (0..41).map(|i| (i as f64 * 0.3).sin()).collect();
        let mut ws = Workspace::new(&layout, x.view(), &y);
        let theta: Vec<f64> = (0..layout.n_params()).map(|i| ((i * 29 % 13) as f64 - 6.0) * 0.11).collect();
        let (_, g) = ws.loss_grad(&theta, 0.2);
        for j in 0..theta.len() {
            let h = 1e-6;
            let (mut a, mut b) = (theta.clone(), theta.clone());
            a[j] += h;
            b[j] -= h;
            let num = (ws.loss_grad(&a, 0.2).0 - ws.loss_grad(&b, 0.2).0) / (2.0 * h);
            assert!((num - g[j]).abs() < 1e-7 * num.abs().max(1.0), "param {j}: {num} vs {}", g[j]);
        }
    }

    /// The polynomial exp behind the vectorized sigmoid stays within a few ulp of libm's over the range
    /// the sigmoid meets, clamps outside it, and turns NaN and ±∞ into NaN (a diverged step stays visible).
    #[test]
    fn polynomial_exp_is_within_a_few_ulp_of_libm() {
        let mut worst = 0.0_f64;
        for i in 0..=200_000 {
            let x = -707.0 + 1414.0 * i as f64 / 200_000.0;
            for v in [x, x * 1e-3, x * 1e-6] {
                let (a, b) = (exp_poly::<false>(v), v.exp());
                worst = worst.max((a - b).abs() / b);
            }
        }
        assert!(worst < 4.0 * f64::EPSILON, "worst relative error {worst:e}");
        let floor = (-708.0_f64).exp();
        assert!((exp_poly::<false>(-1e4) - floor).abs() <= 4.0 * f64::EPSILON * floor);
        assert!(exp_poly::<false>(1e4).is_finite());
        assert!(exp_poly::<false>(f64::NAN).is_nan());
        assert!(exp_poly::<true>(f64::INFINITY).is_nan());
        assert!(
            (exp_poly::<true>(1.0) - std::f64::consts::E).abs() <= 2.0 * f64::EPSILON * std::f64::consts::E
        );
    }
}
