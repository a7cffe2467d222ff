//! Lane arithmetic for the gradient kernels: a block of rows as one value ([`Block`], f64; the f32
//! blocks are in `single`), portable or AVX2 + FMA, and a polynomial `exp` and sigmoid on it.

use super::single;

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

/// Rows evaluated together: every per-unit value of a block of rows is one `[f64; LANES]` (two AVX2
/// vectors).
pub(super) const LANES: usize = 8;
pub(super) type Lanes = [f64; LANES];

/// The arithmetic on one block of lanes of `Elem` (f64 in a [`Block`], f32 in a [`single::Block32`]).
///
/// # Safety
/// The methods are `unsafe` because an implementation may need CPU features (the AVX2 ones require AVX2
/// and FMA; `target_feature` is only allowed on unsafe trait methods): call them only on a CPU that has
/// the implementation's features.
pub(super) trait Arith: Copy {
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
pub(super) trait Real: Copy + From<f32> + 'static {
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
pub(super) trait Block: Arith<Elem = f64> {
    /// The f32 block of the same CPU features ([`single::Block32`]).
    type Single: single::Block32;
}

/// Lane-by-lane arithmetic, for CPUs without AVX2/FMA and other architectures (no CPU features needed).
#[derive(Clone, Copy)]
pub(super) struct Portable<const FUSED: bool>(Lanes);

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
pub(super) mod avx2 {
    use super::{Arith, Block};
    use std::arch::x86_64::*;

    /// A block of eight rows as two AVX2 vectors (methods need AVX2 and FMA, see [`Block`]).
    #[derive(Clone, Copy)]
    pub(in crate::lbfgs::kernels) struct Avx2(__m256d, __m256d);

    impl Block for Avx2 {
        type Single = crate::lbfgs::kernels::single::avx2::Avx2x32;
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
pub(super) unsafe fn exp_block<B: Arith>(x: B) -> B {
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
pub(super) fn exp_poly<const FUSED: bool>(x: f64) -> f64 {
    // SAFETY: `Portable` needs no CPU features.
    unsafe { exp_block(Portable::<FUSED>::splat(x)).0[0] }
}

/// `1/(1 + e^−z)` lane by lane. Safety: as [`exp_block`].
#[inline(always)]
pub(super) unsafe fn sigmoid_block<B: Arith>(z: B) -> B {
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
pub(super) fn has_avx2_fma() -> bool {
    is_x86_feature_detected!("fma") && is_x86_feature_detected!("avx2")
}
