//! Full-batch L-BFGS for the small sigmoid networks of the BP-ANN (10-4-4-1 has 69 parameters): the loss
//! and its exact gradient by hand-written back-propagation (on ndarray as the reference, [`Workspace`] for
//! fitting), the two-loop recursion (Nocedal & Wright, *Numerical Optimization*, Alg. 7.4) and a
//! backtracking Armijo line search.
//!
//! Why here and not burn: the network is so small that burn's per-step overhead dominates a full-batch
//! step, and a quasi-Newton method reaches a much lower training loss in a few hundred steps where
//! full-batch Adam needs thousands. burn stays the training library of the general path (`bpann::Backend::Burn`); the default
//! Adam path uses [`Workspace`]'s gradient too.
//!
//! Loss (scikit-learn's `MLPRegressor` form, on the standardized target):
//! `½·mean((f(x) − y)²) + α/(2n)·Σ w²` over the weights (not the biases).

use gpumodel_models::artifact::{Activation, Dense};
use ndarray::{Array1, Array2, ArrayView2, Axis};

mod kernels;

pub use kernels::{Precision, Workspace, instruction_path};

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

    /// Whether [`Workspace`] runs its fused kernel on this layout (two sigmoid hidden layers of 4×4 or
    /// 8×8 units, one output): the only layouts it evaluates in f32 when asked to.
    fn fused(&self) -> bool {
        matches!(self.sizes[..], [_, h1 @ (4 | 8), h2, 1] if h2 == h1)
    }

    /// The arithmetic a [`Workspace`] on this layout asked for `precision` evaluates in: f32 only on
    /// the fused layouts, f64 otherwise.
    pub fn runs_in(&self, precision: Precision) -> Precision {
        if self.fused() { precision } else { Precision::F64 }
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

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The objective: parameters → loss, with the gradient written into the second argument (same length).
pub type LossFn<'a> = dyn FnMut(&[f64], &mut [f64]) -> f64 + 'a;

/// L-BFGS state: the last `m` curvature pairs, and the buffers one iteration works in (allocated once:
/// a fit runs hundreds of iterations, each with one or more line-search trials).
pub struct Lbfgs {
    m: usize,
    s: Vec<Vec<f64>>,
    y: Vec<Vec<f64>>,
    /// The search direction, the trial point and its gradient, the next pair, the two-loop's α.
    d: Vec<f64>,
    cand: Vec<f64>,
    gc: Vec<f64>,
    s_new: Vec<f64>,
    y_new: Vec<f64>,
    a: Vec<f64>,
}

impl Lbfgs {
    pub fn new(m: usize) -> Lbfgs {
        Lbfgs {
            m,
            s: Vec::new(),
            y: Vec::new(),
            d: Vec::new(),
            cand: Vec::new(),
            gc: Vec::new(),
            s_new: Vec::new(),
            y_new: Vec::new(),
            a: Vec::new(),
        }
    }

    /// The search direction −H·g by the two-loop recursion, into `self.d`.
    fn direction(&mut self, g: &[f64]) {
        let q = &mut self.d;
        q.clear();
        q.extend_from_slice(g);
        let k = self.s.len();
        self.a.clear();
        self.a.resize(k, 0.0);
        for i in (0..k).rev() {
            let rho = 1.0 / dot(&self.y[i], &self.s[i]);
            self.a[i] = rho * dot(&self.s[i], q);
            for (qj, yj) in q.iter_mut().zip(&self.y[i]) {
                *qj -= self.a[i] * yj;
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
        for ((si, yi), ai) in self.s.iter().zip(&self.y).zip(&self.a) {
            let rho = 1.0 / dot(yi, si);
            let b = rho * dot(yi, q);
            for (qj, sj) in q.iter_mut().zip(si) {
                *qj += (ai - b) * sj;
            }
        }
        for v in q.iter_mut() {
            *v = -*v;
        }
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
        let np = theta.len();
        self.direction(g);
        let mut slope = dot(g, &self.d);
        if slope.is_nan() || slope >= 0.0 {
            // Not a descent direction (stale curvature): restart from steepest descent.
            self.s.clear();
            self.y.clear();
            for (dj, gj) in self.d.iter_mut().zip(g.iter()) {
                *dj = -gj;
            }
            slope = dot(g, &self.d);
        }
        let gnorm = dot(g, g).sqrt();
        if gnorm < 1e-12 {
            return false;
        }
        self.cand.resize(np, 0.0);
        self.gc.resize(np, 0.0);
        // The first step of a fresh memory has no curvature scale: start at a unit move in θ.
        let mut t = if self.s.is_empty() { (1.0 / gnorm).min(1.0) } else { 1.0 };
        for _ in 0..40 {
            for ((c, a), b) in self.cand.iter_mut().zip(theta.iter()).zip(&self.d) {
                *c = a + t * b;
            }
            let fc = eval(&self.cand, &mut self.gc);
            if fc.is_finite() && fc <= *f + 1e-4 * t * slope {
                self.s_new.clear();
                self.s_new.extend(self.cand.iter().zip(theta.iter()).map(|(a, b)| a - b));
                self.y_new.clear();
                self.y_new.extend(self.gc.iter().zip(g.iter()).map(|(a, b)| a - b));
                let (s, yv) = (&self.s_new, &self.y_new);
                // Keep only pairs with positive curvature, so that H stays positive definite.
                if dot(s, yv) > 1e-12 * dot(yv, yv).sqrt() * dot(s, s).sqrt() {
                    // The oldest pair's buffers become the next iteration's scratch.
                    let (old_s, old_y) = if self.s.len() == self.m {
                        (self.s.remove(0), self.y.remove(0))
                    } else {
                        (Vec::with_capacity(np), Vec::with_capacity(np))
                    };
                    self.s.push(std::mem::replace(&mut self.s_new, old_s));
                    self.y.push(std::mem::replace(&mut self.y_new, old_y));
                }
                let improved = *f - fc;
                std::mem::swap(theta, &mut self.cand);
                std::mem::swap(g, &mut self.gc);
                *f = fc;
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

    #[test]
    fn flatten_and_layers_round_trip() {
        let layout = Layout { sizes: vec![2, 3, 1] };
        let theta: Vec<f64> = (0..layout.n_params()).map(|i| i as f64).collect();
        assert_eq!(layout.flatten(&layout.layers(&theta)), theta);
    }

    #[test]
    fn minimizes_a_quadratic_bowl() {
        // f(θ) = Σ (i+1)(θ_i − i)²: L-BFGS reaches the minimum θ_i = i.
        let mut eval = |t: &[f64], g: &mut [f64]| {
            for (i, (gi, v)) in g.iter_mut().zip(t).enumerate() {
                *gi = 2.0 * (i + 1) as f64 * (v - i as f64);
            }
            t.iter().enumerate().map(|(i, v)| (i + 1) as f64 * (v - i as f64).powi(2)).sum()
        };
        let mut theta = vec![0.0; 6];
        let mut g = vec![0.0; 6];
        let mut f = eval(&theta, &mut g);
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
