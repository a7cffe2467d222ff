//! Full-batch L-BFGS for the small sigmoid networks of the BP-ANN (10-4-4-1 has 69 parameters): the loss
//! and its exact gradient by hand-written back-propagation (on ndarray as the reference, [`Workspace`] for
//! fitting), the two-loop recursion (Nocedal & Wright, *Numerical Optimization*, Alg. 7.4) and a
//! backtracking Armijo line search.
//!
//! Why here and not burn: the network is so small that burn's per-step overhead dominates a full-batch
//! step, and a quasi-Newton method reaches a much lower training loss in a few hundred steps where
//! full-batch Adam needs thousands (DESIGN.md: L-BFGS "gave the most consistent results in a
//! prototype"). burn stays the training library of the general path (`bpann::Backend::Burn`); the default
//! Adam path uses [`Workspace`]'s gradient too.
//!
//! Loss (scikit-learn's `MLPRegressor` form, on the standardized target):
//! `½·mean((f(x) − y)²) + α/(2n)·Σ w²` over the weights (not the biases).

use gpumodel_models::artifact::{Activation, Dense};
use ndarray::{Array1, Array2, ArrayView2, Axis};

/// The [`Block`]-style methods every AVX2 block shares, for the f64 [`avx2::Avx2`] and the f32
/// `single::avx2::Avx2x32`: `$name` holds two vectors (`$vec`) of `$half` lanes of `$t`, and the rest
/// are the matching intrinsics and vector type, with the exponent bias and mantissa width for `pow2_of_shifted`. Expanded inside each `impl`, next to the methods that differ by type.
#[cfg(target_arch = "x86_64")]
macro_rules! avx2_block_impl {
    (
        $name:ident, $t:ty, $half:literal;
        $set1:ident, $fmadd:ident, $add:ident, $sub:ident, $mul:ident,
        $div:ident, $min:ident, $max:ident;
        $vec:ty, $set1_int:ident($bias:literal), $add_int:ident, $shl:ident::<$mantissa:literal>, $to_int:ident,
        $from_int:ident
    ) => {
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn load(l: &[$t]) -> Self {
            // Plain array loads reinterpreted as vectors, not `_mm256_loadu_*`: those copy through
            // `copy_nonoverlapping`, whose precondition checks (overlap, alignment) stay compiled in
            // builds with debug assertions (the dev profile the fits are run and benchmarked in) and
            // sent every value through the stack.
            let (lo, hi) = l[..2 * $half].split_at($half);
            let half = |h: &[$t]| -> [$t; $half] { h.try_into().unwrap_or_else(|_| unreachable!()) };
            // SAFETY: `[$t; $half]` and the vector have the same size, and every bit pattern is valid.
            unsafe {
                $name(
                    std::mem::transmute::<[$t; $half], $vec>(half(lo)),
                    std::mem::transmute::<[$t; $half], $vec>(half(hi)),
                )
            }
        }
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn store(self, l: &mut [$t]) {
            let (lo, hi) = l[..2 * $half].split_at_mut($half);
            let lo: &mut [$t; $half] = lo.try_into().unwrap_or_else(|_| unreachable!());
            let hi: &mut [$t; $half] = hi.try_into().unwrap_or_else(|_| unreachable!());
            // SAFETY: as in `load`.
            unsafe {
                *lo = std::mem::transmute::<$vec, [$t; $half]>(self.0);
                *hi = std::mem::transmute::<$vec, [$t; $half]>(self.1);
            }
        }
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn splat(v: $t) -> Self {
            $name($set1(v), $set1(v))
        }
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn mul_add(self, b: Self, c: Self) -> Self {
            $name($fmadd(self.0, b.0, c.0), $fmadd(self.1, b.1, c.1))
        }
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn add(self, b: Self) -> Self {
            $name($add(self.0, b.0), $add(self.1, b.1))
        }
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn sub(self, b: Self) -> Self {
            $name($sub(self.0, b.0), $sub(self.1, b.1))
        }
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn mul(self, b: Self) -> Self {
            $name($mul(self.0, b.0), $mul(self.1, b.1))
        }
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn div(self, b: Self) -> Self {
            $name($div(self.0, b.0), $div(self.1, b.1))
        }
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn clamp(self, lo: $t, hi: $t) -> Self {
            // maxps/maxpd return their second operand when either is NaN.
            let (lo, hi) = ($set1(lo), $set1(hi));
            $name($min($max(self.0, lo), hi), $min($max(self.1, lo), hi))
        }
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn pow2_of_shifted(self) -> Self {
            // k + bias in the exponent field: k sits in the low mantissa bits (two's complement).
            let bias = $set1_int($bias);
            let f = |t: $vec| $from_int($shl::<$mantissa>($add_int($to_int(t), bias)));
            $name(f(self.0), f(self.1))
        }
    };
}

/// The lane-by-lane methods the portable blocks share, for the f64 [`Portable`] and the f32
/// `single::Portable32`: `$name<FUSED>` holds `$n` values of `$t`; `FUSED` rounds `a·b + c` once (as
/// FMA) or twice.
macro_rules! portable_block_impl {
    ($name:ident, $t:ty, $n:expr) => {
        #[inline(always)]
        unsafe fn load(l: &[$t]) -> Self {
            $name(l[..$n].try_into().unwrap_or_else(|_| unreachable!()))
        }
        #[inline(always)]
        unsafe fn store(self, l: &mut [$t]) {
            l[..$n].copy_from_slice(&self.0);
        }
        #[inline(always)]
        unsafe fn splat(v: $t) -> Self {
            $name([v; $n])
        }
        #[inline(always)]
        unsafe fn mul_add(self, b: Self, c: Self) -> Self {
            $name(std::array::from_fn(|l| {
                if FUSED { self.0[l].mul_add(b.0[l], c.0[l]) } else { c.0[l] + self.0[l] * b.0[l] }
            }))
        }
        #[inline(always)]
        unsafe fn add(self, b: Self) -> Self {
            $name(std::array::from_fn(|l| self.0[l] + b.0[l]))
        }
        #[inline(always)]
        unsafe fn sub(self, b: Self) -> Self {
            $name(std::array::from_fn(|l| self.0[l] - b.0[l]))
        }
        #[inline(always)]
        unsafe fn mul(self, b: Self) -> Self {
            $name(std::array::from_fn(|l| self.0[l] * b.0[l]))
        }
        #[inline(always)]
        unsafe fn div(self, b: Self) -> Self {
            $name(std::array::from_fn(|l| self.0[l] / b.0[l]))
        }
        #[inline(always)]
        unsafe fn clamp(self, lo: $t, hi: $t) -> Self {
            // As maxps/maxpd then minps/minpd: a NaN lane takes the bound.
            $name(self.0.map(|v| {
                let x = if v > lo { v } else { lo };
                if x < hi { x } else { hi }
            }))
        }
    };
}

mod single;

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

/// Rows evaluated together: every per-unit value of a block of rows is one `[f64; LANES]` (two AVX2
/// vectors).
const LANES: usize = 8;
type Lanes = [f64; LANES];

/// The arithmetic on one block of lanes of `Elem` (f64 in a [`Block`], f32 in a [`single::Block32`]).
///
/// # Safety
/// The methods are `unsafe` because an implementation may need CPU features (the AVX2 ones require AVX2
/// and FMA; `target_feature` is only allowed on unsafe trait methods): call them only on a CPU that has
/// the implementation's features.
trait Arith: Copy {
    type Elem: Real;
    /// The block's first values of `l` (panics if shorter).
    unsafe fn load(l: &[Self::Elem]) -> Self;
    /// Into the block's first values of `l` (panics if shorter).
    unsafe fn store(self, l: &mut [Self::Elem]);
    unsafe fn splat(v: Self::Elem) -> Self;
    /// `self·b + c`, fused where the CPU has FMA.
    unsafe fn mul_add(self, b: Self, c: Self) -> Self;
    unsafe fn add(self, b: Self) -> Self;
    unsafe fn mul(self, b: Self) -> Self;
    unsafe fn sub(self, b: Self) -> Self;
    unsafe fn div(self, b: Self) -> Self;
    /// Clamped to `[lo, hi]`; a NaN lane becomes `lo` (callers put NaN back).
    unsafe fn clamp(self, lo: Self::Elem, hi: Self::Elem) -> Self;
    /// `2^k` from `self = k + 1.5·2^52` in f64 (|k| ≤ 1022), `k + 1.5·2^23` in f32 (|k| ≤ 126): k an
    /// integer in the low mantissa bits.
    unsafe fn pow2_of_shifted(self) -> Self;
}

/// A lane type, with [`exp_block`]'s constants in its precision.
trait Real: Copy + From<f32> + 'static {
    /// log2(e).
    const LOG2E: Self;
    /// −ln 2 in two parts, so that k·LN2_HI is exact for the k that occur.
    const NEG_LN2_HI: Self;
    const NEG_LN2_LO: Self;
    /// 1.5·2^52 (f64), 1.5·2^23 (f32): adding it rounds to an integer, kept in the low mantissa bits.
    const SHIFT: Self;
    /// `exp`'s argument is clamped to `[−EXP_MAX, EXP_MAX]` (and `2^k` stays a normal number).
    const EXP_MAX: Self;
    const NEG_EXP_MAX: Self;
    /// The Taylor series' coefficients 1/j!, highest degree first, down to j = 2.
    const TAYLOR: &'static [Self];
}

impl Real for f64 {
    const LOG2E: f64 = std::f64::consts::LOG2_E;
    // k·LN2_HI exact for |k| < 2^11.
    const NEG_LN2_HI: f64 = -6.931_471_803_691_238e-1;
    const NEG_LN2_LO: f64 = -1.908_214_929_270_587_7e-10;
    const SHIFT: f64 = 6_755_399_441_055_744.0;
    const EXP_MAX: f64 = 708.0;
    const NEG_EXP_MAX: f64 = -708.0;
    // 1/j! for j = 13 down to 2: truncation < 5e-18 relative.
    const TAYLOR: &'static [f64] = &[
        1.0 / 6_227_020_800.0,
        1.0 / 479_001_600.0,
        1.0 / 39_916_800.0,
        1.0 / 3_628_800.0,
        1.0 / 362_880.0,
        1.0 / 40_320.0,
        1.0 / 5_040.0,
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
    ];
}

impl Real for f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    // k·LN2_HI exact for |k| < 2^8.
    const NEG_LN2_HI: f32 = -0.693_145_75;
    const NEG_LN2_LO: f32 = -1.428_606_8e-6;
    const SHIFT: f32 = 12_582_912.0;
    const EXP_MAX: f32 = 87.0;
    const NEG_EXP_MAX: f32 = -87.0;
    // 1/j! for j = 7 down to 2: truncation < 6e-9 relative, below f32's ulp.
    const TAYLOR: &'static [f32] = &[1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5];
}

/// A block of [`LANES`] f64 rows: [`Portable`] loops over the lanes; on x86-64 with AVX2 and FMA,
/// [`avx2::Avx2`] uses the vector instructions explicitly (left to itself, the compiler vectorized some
/// of these loops across the wrong dimension, with a shuffle per update).
trait Block: Arith<Elem = f64> {
    /// The f32 block of the same CPU features ([`single::Block32`]).
    type Single: single::Block32;
}

/// Lane-by-lane arithmetic, for CPUs without AVX2/FMA and other architectures (no CPU features needed).
#[derive(Clone, Copy)]
struct Portable<const FUSED: bool>(Lanes);

impl<const FUSED: bool> Block for Portable<FUSED> {
    type Single = single::Portable32<FUSED>;
}

impl<const FUSED: bool> Arith for Portable<FUSED> {
    type Elem = f64;
    portable_block_impl!(Portable, f64, LANES);
    #[inline(always)]
    unsafe fn pow2_of_shifted(self) -> Self {
        let mut out = self.0;
        for v in out.iter_mut() {
            // The low 12 bits of the representation hold k (two's complement); k + 1023 is the biased
            // exponent.
            *v = f64::from_bits(v.to_bits().wrapping_add(1023) << 52);
        }
        Portable(out)
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{Arith, Block};
    use std::arch::x86_64::*;

    /// A block of eight rows as two AVX2 vectors (methods need AVX2 and FMA, see [`Block`]).
    #[derive(Clone, Copy)]
    pub(super) struct Avx2(__m256d, __m256d);

    impl Block for Avx2 {
        type Single = crate::lbfgs::single::avx2::Avx2x32;
    }

    impl Arith for Avx2 {
        type Elem = f64;
        avx2_block_impl! {
            Avx2, f64, 4;
            _mm256_set1_pd, _mm256_fmadd_pd, _mm256_add_pd, _mm256_sub_pd,
            _mm256_mul_pd, _mm256_div_pd, _mm256_min_pd, _mm256_max_pd;
            __m256d, _mm256_set1_epi64x(1023), _mm256_add_epi64, _mm256_slli_epi64::<52>, _mm256_castpd_si256,
            _mm256_castsi256_pd
        }
    }
}

/// `exp(x)` lane by lane for `|x| ≤ 708` in f64, `≤ 87` in f32 (clamped outside; NaN and ±∞ give NaN)
/// without libm, so that a block of rows vectorizes: `x = k·ln2 + r` with `|r| ≤ ln2/2` (Cody–Waite,
/// two-part ln2), `e^r` by its Taylor series (degree 13 in f64, 7 in f32, see [`Real::TAYLOR`]), scaled
/// by `2^k` built in the exponent bits. Within a few ulp of libm's `exp` (tested); only used inside the
/// sigmoid, far below the noise.
///
/// # Safety
/// As [`Arith`]'s methods: the CPU has `B`'s features.
#[inline(always)]
unsafe fn exp_block<B: Arith>(x: B) -> B {
    // SAFETY: the caller's contract.
    unsafe {
        let one = B::Elem::from(1.0);
        let shift = B::splat(B::Elem::SHIFT);
        let c = B::Elem::TAYLOR;
        // A diverged step (NaN or ±∞ in a unit) must not look finite: `nan_or_zero` puts NaN back.
        let nan_or_zero = x.sub(x);
        let x = x.clamp(B::Elem::NEG_EXP_MAX, B::Elem::EXP_MAX);
        let t = x.mul_add(B::splat(B::Elem::LOG2E), shift);
        let k = t.sub(shift);
        let r = k.mul_add(B::splat(B::Elem::NEG_LN2_LO), k.mul_add(B::splat(B::Elem::NEG_LN2_HI), x));
        let mut p = B::splat(c[0]);
        for c in &c[1..] {
            p = p.mul_add(r, B::splat(*c));
        }
        p = p.mul_add(r, B::splat(one));
        p = p.mul_add(r, B::splat(one));
        p.mul_add(t.pow2_of_shifted(), nan_or_zero)
    }
}

/// `exp` of one value by [`exp_block`] (for the tests).
#[cfg(test)]
fn exp_poly<const FUSED: bool>(x: f64) -> f64 {
    // SAFETY: `Portable` needs no CPU features.
    unsafe { exp_block(Portable::<FUSED>::splat(x)).0[0] }
}

/// `1/(1 + e^−z)` lane by lane. Safety: as [`exp_block`].
#[inline(always)]
unsafe fn sigmoid_block<B: Arith>(z: B) -> B {
    // SAFETY: the caller's contract.
    unsafe {
        let one = B::splat(B::Elem::from(1.0));
        one.div(one.add(exp_block(B::splat(B::Elem::from(0.0)).sub(z))))
    }
}

/// The instruction path [`Workspace`]'s kernels take on this CPU: `avx2+fma` (x86-64 with both),
/// `portable+fma` (aarch64: fused multiply-adds lane by lane), else `portable` (unfused).
pub fn instruction_path() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx2_fma() { "avx2+fma" } else { "portable" }
    }
    #[cfg(target_arch = "aarch64")]
    {
        "portable+fma"
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        "portable"
    }
}

/// Whether this CPU runs the AVX2 + FMA kernels: the one check both the kernels' dispatch and the
/// artifact's record of the path ([`instruction_path`]) use, so the record cannot drift from the run.
#[cfg(target_arch = "x86_64")]
fn has_avx2_fma() -> bool {
    is_x86_feature_detected!("fma") && is_x86_feature_detected!("avx2")
}

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
/// [`loss_grad`] to rounding (tested to 1e-12 relative), not bit for bit.
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
    /// f64 throughout (agrees with [`loss_grad`] to rounding).
    #[default]
    F64,
    /// For the two-hidden-layer 4×4 and 8×8 networks: activations and products in f32, sums over rows
    /// in f64 (see `lbfgs/single.rs`; ~1e-6 relative from [`loss_grad`]). Other layouts run in f64.
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

    /// The loss and gradient, as [`loss_grad`] (to rounding).
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

/// Rows per block of the fused kernel: two [`Block`]s' worth ([`Pair`]), so that two independent
/// chains of the forward and backward pass are in flight at once. With one block of [`LANES`] rows the
/// kernel was latency-bound (a block's forward pass alone is a chain of two polynomial sigmoids) and
/// barely faster than the column passes.
const FUSED_LANES: usize = 2 * LANES;

/// Two [`Block`]s side by side, [`FUSED_LANES`] rows: every operation on both halves.
#[derive(Clone, Copy)]
struct Pair<B>(B, B);

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
struct Fused {
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
    fn new(inputs: usize, h1: usize) -> Fused {
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
    fn deal(&mut self, x: &[f64], y: &[f64], rows: &[usize]) {
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
    /// (written into `g`, θ's layout). Safety: as [`exp_block`].
    #[inline(always)]
    unsafe fn sums<B: Block, const H1: usize, const H2: usize>(
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
struct Net<E, const H1: usize, const H2: usize> {
    b1: [E; H1],
    w2: [[E; H1]; H2],
    b2: [E; H2],
    w3: [E; H2],
    b3: E,
}

impl<E: Real, const H1: usize, const H2: usize> Net<E, H1, H2> {
    /// From θ after the first layer's weights, each value converted by `to`.
    #[inline(always)]
    fn new(rest: &[f64], to: impl Fn(f64) -> E) -> Self {
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
    /// Safety: as [`exp_block`].
    #[inline(always)]
    unsafe fn forward<B: Arith<Elem = E>>(
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
    /// Safety: as [`exp_block`].
    #[inline(always)]
    unsafe fn deltas<B: Arith<Elem = E>>(
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
    /// Safety: as [`exp_block`].
    #[inline(always)]
    unsafe fn backward<B: Arith<Elem = E>>(
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
struct Grads<B, const H1: usize, const H2: usize> {
    b1: [B; H1],
    w2: [[B; H1]; H2],
    b2: [B; H2],
    w3: [B; H2],
    b3: B,
}

impl<B: Copy, const H1: usize, const H2: usize> Grads<B, H1, H2> {
    fn splat(zero: B) -> Self {
        Grads { b1: [zero; H1], w2: [[zero; H1]; H2], b2: [zero; H2], w3: [zero; H2], b3: zero }
    }

    /// Every sum, in θ's order.
    fn iter_mut(&mut self) -> impl Iterator<Item = &mut B> {
        self.b1
            .iter_mut()
            .chain(self.w2.iter_mut().flatten())
            .chain(&mut self.b2)
            .chain(&mut self.w3)
            .chain(std::iter::once(&mut self.b3))
    }
}

/// The sigmoid of every value of `v`, a block of [`LANES`] at a time (the tail padded with zeros).
/// Safety: as [`exp_block`].
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
/// added at the end: vector loops, and independent chains that overlap. Safety: as [`exp_block`].
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

/// The plain sum of `d`, with [`LANES`] partial sums. Safety: as [`exp_block`].
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

    /// The two-phase f32 kernel (session 8) gives the one-phase kernel's loss and gradient bit for bit
    /// (the same operations in the same order per sum, only scheduled differently), so fits on it are
    /// the session-7 fits: in both portable forms and, this CPU permitting, AVX2; on the fused layouts,
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
