//! Full-batch L-BFGS for the small sigmoid networks of the BP-ANN (10-4-4-1 has 69 parameters), written
//! on ndarray: the loss and its exact gradient by hand-written back-propagation, the two-loop recursion
//! (Nocedal & Wright, *Numerical Optimization*, Alg. 7.4) and a backtracking Armijo line search.
//!
//! Why here and not burn: the network is so small that burn's per-step overhead dominates a full-batch
//! step, and a quasi-Newton method reaches a much lower training loss in a few hundred steps where
//! full-batch Adam needs thousands (DESIGN.md: L-BFGS "gave the most consistent results in a
//! prototype"). burn stays the training library of the general (Adam) path.
//!
//! Loss (scikit-learn's `MLPRegressor` form, on the standardized target):
//! `½·mean((f(x) − y)²) + α/(2n)·Σ w²` over the weights (not the biases).

use gpumodel_models::artifact::{Activation, Dense};
use ndarray::{Array1, Array2, ArrayView2, Axis};

/// Layer widths `[inputs, hidden…, 1]` and the parameter vector's layout: per layer the weights
/// (`[out][in]`, row-major), then the biases.
#[derive(Debug, Clone)]
pub struct Layout {
    pub sizes: Vec<usize>,
}

impl Layout {
    pub fn n_params(&self) -> usize {
        self.sizes.windows(2).map(|w| w[0] * w[1] + w[1]).sum()
    }

    /// Flattens artifact layers into one parameter vector.
    pub fn flatten(&self, layers: &[Dense]) -> Vec<f64> {
        let mut v = Vec::with_capacity(self.n_params());
        for d in layers {
            for row in &d.weights {
                v.extend_from_slice(row);
            }
            v.extend_from_slice(&d.bias);
        }
        v
    }

    /// The artifact layers of a parameter vector (sigmoid hidden layers, identity output).
    pub fn layers(&self, theta: &[f64]) -> Vec<Dense> {
        let last = self.sizes.len() - 2;
        let mut at = 0;
        self.sizes
            .windows(2)
            .enumerate()
            .map(|(k, w)| {
                let (i, o) = (w[0], w[1]);
                let weights = (0..o).map(|r| theta[at + r * i..at + (r + 1) * i].to_vec()).collect();
                at += i * o;
                let bias = theta[at..at + o].to_vec();
                at += o;
                Dense {
                    weights,
                    bias,
                    activation: if k < last { Activation::Sigmoid } else { Activation::Identity },
                }
            })
            .collect()
    }

    fn matrices(&self, theta: &[f64]) -> Vec<(Array2<f64>, Array1<f64>)> {
        let mut at = 0;
        self.sizes
            .windows(2)
            .map(|w| {
                let (i, o) = (w[0], w[1]);
                let m = Array2::from_shape_vec((o, i), theta[at..at + i * o].to_vec()).unwrap_or_default();
                at += i * o;
                let b = Array1::from(theta[at..at + o].to_vec());
                at += o;
                (m, b)
            })
            .collect()
    }
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// The loss and its gradient at `theta` on standardized rows `x` and targets `y`.
pub fn loss_grad(
    layout: &Layout,
    theta: &[f64],
    x: ArrayView2<'_, f64>,
    y: &[f64],
    alpha: f64,
) -> (f64, Vec<f64>) {
    let n = x.nrows().max(1) as f64;
    let mats = layout.matrices(theta);
    let depth = mats.len();
    // Forward, keeping every layer's output (the input first).
    let mut acts: Vec<Array2<f64>> = vec![x.to_owned()];
    for (k, (w, b)) in mats.iter().enumerate() {
        let mut z = acts[k].dot(&w.t());
        z += b;
        if k + 1 < depth {
            z.mapv_inplace(sigmoid);
        }
        acts.push(z);
    }
    let out = acts[depth].column(0);
    let mut delta = Array2::zeros((x.nrows(), 1));
    let mut loss = 0.0;
    for (r, (p, t)) in out.iter().zip(y).enumerate() {
        let e = p - t;
        loss += e * e;
        delta[[r, 0]] = e / n;
    }
    loss *= 0.5 / n;
    let mut grads: Vec<(Array2<f64>, Array1<f64>)> = Vec::with_capacity(depth);
    for k in (0..depth).rev() {
        let (w, _) = &mats[k];
        let mut gw = delta.t().dot(&acts[k]);
        if alpha > 0.0 {
            gw.scaled_add(alpha / n, w);
            loss += 0.5 * alpha / n * w.iter().map(|v| v * v).sum::<f64>();
        }
        let gb = delta.sum_axis(Axis(0));
        if k > 0 {
            let mut d = delta.dot(w);
            d.zip_mut_with(&acts[k], |g, a| *g *= a * (1.0 - a));
            delta = d;
        }
        grads.push((gw, gb));
    }
    grads.reverse();
    let mut g = Vec::with_capacity(theta.len());
    for (gw, gb) in grads {
        g.extend(gw.iter());
        g.extend(gb.iter());
    }
    (loss, g)
}

/// matrixmultiply's depth block (`KC` of its f64 kernels): ndarray's `dot` sums each product in blocks
/// of this many terms and adds the block sums, so [`Workspace`] does the same to stay bit-identical.
const GEMM_KC: usize = 256;

/// `c + a·b`, fused (one rounding) when matrixmultiply's kernel on this CPU fuses it too.
#[inline(always)]
fn madd<const FUSED: bool>(a: f64, b: f64, c: f64) -> f64 {
    if FUSED { a.mul_add(b, c) } else { c + a * b }
}

/// Preallocated buffers for evaluating [`loss_grad`] many times on the same rows.
///
/// Why: an L-BFGS fit evaluates the loss thousands of times on a network of ~70 parameters, where
/// ndarray's per-call costs (allocating every activation, packing tiny matrices for matrixmultiply, the
/// input copy) dominate the arithmetic. Activations are stored feature-major (one contiguous column of
/// `n` values per unit) so the inner loops run over rows and vectorize. Each sum is still taken over the
/// same terms in the same order as [`loss_grad`] (the same fused or unfused multiply-adds as
/// matrixmultiply picks for this CPU, in its depth blocks), so the results are bit-identical (tested)
/// and a fit's weights do not change.
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
    /// One column of depth-block sums.
    blk: Vec<f64>,
}

impl Workspace {
    pub fn new(layout: &Layout, x: ArrayView2<'_, f64>, y: &[f64]) -> Workspace {
        let n = x.nrows();
        let widest = layout.sizes.iter().copied().max().unwrap_or(0);
        Workspace {
            sizes: layout.sizes.clone(),
            n,
            x: x.t().iter().copied().collect(),
            y: y.to_vec(),
            acts: layout.sizes[1..].iter().map(|&o| vec![0.0; n * o]).collect(),
            delta: vec![0.0; n * widest],
            next_delta: vec![0.0; n * widest],
            blk: vec![0.0; n],
        }
    }

    /// The same (loss, gradient) as [`loss_grad`] on this workspace's rows, bit for bit.
    pub fn loss_grad(&mut self, theta: &[f64], alpha: f64) -> (f64, Vec<f64>) {
        let mut g = vec![0.0; theta.len()];
        let loss = self.loss_grad_into(theta, alpha, &mut g);
        (loss, g)
    }

    /// As [`Workspace::loss_grad`], writing the gradient into `g` (length = the parameter count).
    pub fn loss_grad_into(&mut self, theta: &[f64], alpha: f64, g: &mut [f64]) -> f64 {
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("fma") && is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has the features `eval_fma` is compiled for (checked just above).
                return unsafe { self.eval_fma(theta, alpha, g) };
            }
            self.eval::<false>(theta, alpha, g)
        }
        #[cfg(target_arch = "aarch64")]
        {
            self.eval::<true>(theta, alpha, g)
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            self.eval::<false>(theta, alpha, g)
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn eval_fma(&mut self, theta: &[f64], alpha: f64, g: &mut [f64]) -> f64 {
        self.eval::<true>(theta, alpha, g)
    }

    #[inline(always)]
    fn eval<const FUSED: bool>(&mut self, theta: &[f64], alpha: f64, g: &mut [f64]) -> f64 {
        let n = self.n;
        let nf = n.max(1) as f64;
        let depth = self.sizes.len() - 1;
        let mut offsets = Vec::with_capacity(depth);
        let mut at = 0;
        for w in self.sizes.windows(2) {
            offsets.push(at);
            at += w[0] * w[1] + w[1];
        }
        // Forward: column o of z = Σ_i w_oi·(column i of the input) (in depth blocks), + b_o, then the
        // sigmoid on hidden layers.
        for k in 0..depth {
            let (i_n, o_n) = (self.sizes[k], self.sizes[k + 1]);
            let w = &theta[offsets[k]..offsets[k] + i_n * o_n];
            let b = &theta[offsets[k] + i_n * o_n..offsets[k] + i_n * o_n + o_n];
            let (before, rest) = self.acts.split_at_mut(k);
            let input: &[f64] = if k == 0 { &self.x } else { &before[k - 1] };
            let out = &mut rest[0];
            for o in 0..o_n {
                let z = &mut out[o * n..(o + 1) * n];
                blocked_axpys::<FUSED>(z, &mut self.blk, i_n, |i| {
                    (&input[i * n..(i + 1) * n], w[o * i_n + i])
                });
                let bo = b[o];
                if k + 1 < depth {
                    for v in z.iter_mut() {
                        *v = sigmoid(*v + bo);
                    }
                } else {
                    for v in z.iter_mut() {
                        *v += bo;
                    }
                }
            }
        }
        // Output error: δ = (f − y)/n and the data term of the loss.
        let mut loss = 0.0;
        {
            let out = &self.acts[depth - 1];
            for ((d, p), t) in self.delta[..n].iter_mut().zip(&out[..n]).zip(&self.y) {
                let e = p - t;
                loss += e * e;
                *d = e / nf;
            }
        }
        loss *= 0.5 / nf;
        // Backward, last layer first.
        for k in (0..depth).rev() {
            let (i_n, o_n) = (self.sizes[k], self.sizes[k + 1]);
            let wo = offsets[k];
            let w = &theta[wo..wo + i_n * o_n];
            let input: &[f64] = if k == 0 { &self.x } else { &self.acts[k - 1] };
            let delta = &self.delta[..n * o_n];
            let (gw, gb) = g[wo..wo + i_n * o_n + o_n].split_at_mut(i_n * o_n);
            // Weight gradient Σ_r δ_ro·a_ri, summed over rows in blocks of GEMM_KC.
            for o in 0..o_n {
                let d = &delta[o * n..(o + 1) * n];
                let row = &mut gw[o * i_n..(o + 1) * i_n];
                let mut i = 0;
                while i + 8 <= i_n {
                    let cols = [0, 1, 2, 3, 4, 5, 6, 7].map(|j| &input[(i + j) * n..(i + j + 1) * n]);
                    row[i..i + 8].copy_from_slice(&blocked_dots::<FUSED, 8>(d, cols));
                    i += 8;
                }
                while i + 4 <= i_n {
                    let cols = [0, 1, 2, 3].map(|j| &input[(i + j) * n..(i + j + 1) * n]);
                    row[i..i + 4].copy_from_slice(&blocked_dots::<FUSED, 4>(d, cols));
                    i += 4;
                }
                while i < i_n {
                    row[i] = blocked_dots::<FUSED, 1>(d, [&input[i * n..(i + 1) * n]])[0];
                    i += 1;
                }
            }
            if alpha > 0.0 {
                for (gv, wv) in gw.iter_mut().zip(w) {
                    *gv += (alpha / nf) * *wv;
                }
                loss += 0.5 * alpha / nf * w.iter().map(|v| v * v).sum::<f64>();
            }
            // Bias gradient: each column's plain sum in row order (ndarray's `sum_axis` here), four
            // columns at once so that the independent chains overlap.
            let mut o = 0;
            while o + 4 <= o_n {
                let cols = [0, 1, 2, 3].map(|j| &delta[(o + j) * n..(o + j + 1) * n]);
                gb[o..o + 4].copy_from_slice(&column_sums::<4>(cols));
                o += 4;
            }
            while o < o_n {
                gb[o] = column_sums::<1>([&delta[o * n..(o + 1) * n]])[0];
                o += 1;
            }
            if k > 0 {
                // δ of the layer below: (δ·W) ⊙ a(1 − a).
                let next = &mut self.next_delta[..n * i_n];
                for i in 0..i_n {
                    let col = &mut next[i * n..(i + 1) * n];
                    blocked_axpys::<FUSED>(col, &mut self.blk, o_n, |o| {
                        (&delta[o * n..(o + 1) * n], w[o * i_n + i])
                    });
                    for (v, a) in col.iter_mut().zip(&input[i * n..(i + 1) * n]) {
                        *v *= a * (1.0 - a);
                    }
                }
                std::mem::swap(&mut self.delta, &mut self.next_delta);
            }
        }
        loss
    }
}

/// `z = Σ_t s_t·col_t` over `terms` (term `t` gives `(col_t, s_t)`), each element summed in term order as
/// matrixmultiply does: a multiply-add chain from zero per block of [`GEMM_KC`] terms, block sums added.
#[inline(always)]
fn blocked_axpys<'a, const FUSED: bool>(
    z: &mut [f64],
    blk: &mut [f64],
    terms: usize,
    term: impl Fn(usize) -> (&'a [f64], f64),
) {
    let n = z.len();
    let blk = &mut blk[..n];
    let mut start = 0;
    if terms == 0 {
        z.fill(0.0);
    }
    while start < terms {
        let end = (start + GEMM_KC).min(terms);
        let target: &mut [f64] = if start == 0 { &mut *z } else { &mut *blk };
        target.fill(0.0);
        for t in start..end {
            let (col, s) = term(t);
            for (c, a) in target.iter_mut().zip(&col[..n]) {
                *c = madd::<FUSED>(*a, s, *c);
            }
        }
        if start > 0 {
            for (c, v) in z.iter_mut().zip(blk.iter()) {
                *c += *v;
            }
        }
        start = end;
    }
}

/// `G` column sums, each a plain sum in row order from zero.
// Row-indexed on purpose: one row feeds G independent chains.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn column_sums<const G: usize>(cols: [&[f64]; G]) -> [f64; G] {
    let n = cols.first().map_or(0, |c| c.len());
    let mut acc = [0.0; G];
    for r in 0..n {
        for j in 0..G {
            acc[j] += cols[j][r];
        }
    }
    acc
}

/// `G` dot products `d·col_j` at once (independent chains, so they overlap), each summed in row order in
/// blocks of [`GEMM_KC`] rows as matrixmultiply does.
#[inline(always)]
fn blocked_dots<const FUSED: bool, const G: usize>(d: &[f64], cols: [&[f64]; G]) -> [f64; G] {
    let n = d.len();
    let mut total = [0.0; G];
    let mut start = 0;
    while start < n {
        let end = (start + GEMM_KC).min(n);
        let mut acc = [0.0; G];
        for r in start..end {
            let dv = d[r];
            for j in 0..G {
                acc[j] = madd::<FUSED>(dv, cols[j][r], acc[j]);
            }
        }
        if start == 0 {
            total = acc;
        } else {
            for j in 0..G {
                total[j] += acc[j];
            }
        }
        start = end;
    }
    total
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The objective: parameters → (loss, gradient).
pub type LossFn<'a> = dyn FnMut(&[f64]) -> (f64, Vec<f64>) + 'a;

/// L-BFGS state: the last `m` curvature pairs.
pub struct Lbfgs {
    m: usize,
    s: Vec<Vec<f64>>,
    y: Vec<Vec<f64>>,
}

impl Lbfgs {
    pub fn new(m: usize) -> Lbfgs {
        Lbfgs { m, s: Vec::new(), y: Vec::new() }
    }

    /// The search direction −H·g by the two-loop recursion.
    fn direction(&self, g: &[f64]) -> Vec<f64> {
        let mut q = g.to_vec();
        let k = self.s.len();
        let mut a = vec![0.0; k];
        for i in (0..k).rev() {
            let rho = 1.0 / dot(&self.y[i], &self.s[i]);
            a[i] = rho * dot(&self.s[i], &q);
            for (qj, yj) in q.iter_mut().zip(&self.y[i]) {
                *qj -= a[i] * yj;
            }
        }
        let gamma = if k > 0 {
            dot(&self.s[k - 1], &self.y[k - 1]) / dot(&self.y[k - 1], &self.y[k - 1])
        } else {
            1.0
        };
        for v in q.iter_mut() {
            *v *= gamma;
        }
        for ((si, yi), ai) in self.s.iter().zip(&self.y).zip(&a) {
            let rho = 1.0 / dot(yi, si);
            let b = rho * dot(yi, &q);
            for (qj, sj) in q.iter_mut().zip(si) {
                *qj += (ai - b) * sj;
            }
        }
        q.iter().map(|v| -v).collect()
    }

    /// One iteration from `theta` (loss `f`, gradient `g`, updated in place). Returns `false` when no step
    /// lowers the loss any more (converged or stuck).
    pub fn step(
        &mut self,
        theta: &mut Vec<f64>,
        f: &mut f64,
        g: &mut Vec<f64>,
        eval: &mut LossFn<'_>,
    ) -> bool {
        let mut d = self.direction(g);
        let mut slope = dot(g, &d);
        if slope.is_nan() || slope >= 0.0 {
            // Not a descent direction (stale curvature): restart from steepest descent.
            self.s.clear();
            self.y.clear();
            d = g.iter().map(|v| -v).collect();
            slope = dot(g, &d);
        }
        let gnorm = dot(g, g).sqrt();
        if gnorm < 1e-12 {
            return false;
        }
        // The first step of a fresh memory has no curvature scale: start at a unit move in θ.
        let mut t = if self.s.is_empty() { (1.0 / gnorm).min(1.0) } else { 1.0 };
        for _ in 0..40 {
            let cand: Vec<f64> = theta.iter().zip(&d).map(|(a, b)| a + t * b).collect();
            let (fc, gc) = eval(&cand);
            if fc.is_finite() && fc <= *f + 1e-4 * t * slope {
                let s: Vec<f64> = cand.iter().zip(theta.iter()).map(|(a, b)| a - b).collect();
                let yv: Vec<f64> = gc.iter().zip(g.iter()).map(|(a, b)| a - b).collect();
                // Keep only pairs with positive curvature, so that H stays positive definite.
                if dot(&s, &yv) > 1e-12 * dot(&yv, &yv).sqrt() * dot(&s, &s).sqrt() {
                    if self.s.len() == self.m {
                        self.s.remove(0);
                        self.y.remove(0);
                    }
                    self.s.push(s);
                    self.y.push(yv);
                }
                let improved = *f - fc;
                *theta = cand;
                *f = fc;
                *g = gc;
                return improved > 1e-15 * f.abs().max(1e-300);
            }
            t *= 0.5;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    #[test]
    fn gradient_matches_finite_differences() {
        let layout = Layout { sizes: vec![3, 4, 2, 1] };
        let theta: Vec<f64> = (0..layout.n_params()).map(|i| ((i * 37 % 11) as f64 - 5.0) * 0.13).collect();
        let x = Array2::from_shape_fn((9, 3), |(i, j)| ((i * 3 + j * 5) % 7) as f64 * 0.3 - 0.9);
        let y: Vec<f64> = (0..9).map(|i| (i as f64 * 0.7).sin()).collect();
        let (_, g) = loss_grad(&layout, &theta, x.view(), &y, 0.3);
        for j in 0..theta.len() {
            let h = 1e-6;
            let (mut a, mut b) = (theta.clone(), theta.clone());
            a[j] += h;
            b[j] -= h;
            let num = (loss_grad(&layout, &a, x.view(), &y, 0.3).0
                - loss_grad(&layout, &b, x.view(), &y, 0.3).0)
                / (2.0 * h);
            assert!((num - g[j]).abs() < 1e-7 * num.abs().max(1.0), "param {j}: {num} vs {}", g[j]);
        }
    }

    /// The preallocated evaluation must be the same arithmetic as the ndarray one, bit for bit: L-BFGS
    /// amplifies any rounding difference, and a fit's weights must not depend on which one ran.
    #[test]
    fn workspace_loss_and_gradient_are_bit_identical_to_the_ndarray_ones() {
        // 700 rows: more than two of matrixmultiply's 256-term depth blocks in the gradient sums.
        for (sizes, rows, alpha) in
            [(vec![3, 4, 2, 1], 9, 0.3), (vec![10, 4, 4, 1], 700, 1e-4), (vec![5, 7, 1], 300, 0.0)]
        {
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
                assert_eq!(f0.to_bits(), f1.to_bits(), "{:?}: loss {f0} vs {f1}", layout.sizes);
                let bits = |g: &[f64]| g.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&g0), bits(&g1), "{:?}: gradient {g0:?} vs {g1:?}", layout.sizes);
            }
        }
    }

    #[test]
    fn workspace_gradient_matches_finite_differences() {
        let layout = Layout { sizes: vec![4, 3, 3, 1] };
        let x = Array2::from_shape_fn((40, 4), |(i, j)| ((i * 5 + j * 3) % 11) as f64 * 0.25 - 1.2);
        let y: Vec<f64> = (0..40).map(|i| (i as f64 * 0.3).sin()).collect();
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

    #[test]
    fn flatten_and_layers_round_trip() {
        let layout = Layout { sizes: vec![2, 3, 1] };
        let theta: Vec<f64> = (0..layout.n_params()).map(|i| i as f64).collect();
        assert_eq!(layout.flatten(&layout.layers(&theta)), theta);
    }

    #[test]
    fn minimizes_a_quadratic_bowl() {
        // f(θ) = Σ (i+1)(θ_i − i)²: L-BFGS reaches the minimum θ_i = i.
        let mut eval = |t: &[f64]| {
            let f = t.iter().enumerate().map(|(i, v)| (i + 1) as f64 * (v - i as f64).powi(2)).sum();
            let g = t.iter().enumerate().map(|(i, v)| 2.0 * (i + 1) as f64 * (v - i as f64)).collect();
            (f, g)
        };
        let mut theta = vec![0.0; 6];
        let (mut f, mut g) = eval(&theta);
        let mut opt = Lbfgs::new(5);
        for _ in 0..100 {
            if !opt.step(&mut theta, &mut f, &mut g, &mut eval) {
                break;
            }
        }
        for (i, v) in theta.iter().enumerate() {
            assert!((v - i as f64).abs() < 1e-6, "{theta:?}");
        }
    }
}
