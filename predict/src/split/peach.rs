//! The two-device analytic model of PEACH (Ge, Feng, Burtscher, Zong, IEEE NAS 2014, §III–IV) and the
//! co-execution range test of Stafford et al. (Euro-Par 2017).
//!
//! Work W is split into a GPU share α and a CPU share 1 − α. With rates R_C, R_G (work per second),
//! dynamic powers Pd_C, Pd_G, the static power P0 of the whole node, the power P_OH a CPU core draws
//! while it hosts (waits on) the GPU, and the offload overhead T_OH:
//!
//! ```text
//! T_C = (1 − α)·W / R_C          T_G = α·W / R_G + T_OH   (0 when α = 0: an unused GPU costs no offload)
//! T   = max{T_C, T_G}
//! E   = T·P0 + T_C·Pd_C + T_G·Pd_G + P_OH·max(T_G − T_C, 0)
//! ```
//!
//! Why the optimum of E^a·T^b lies in {0, α_balance, 1}: on [0, α_balance] T = T_C and on
//! [α_balance, 1] T = T_G, and on each piece both T and E are positive affine functions of α. Then
//! a·ln E + b·ln T is a sum of logarithms of affine functions, hence concave, and a concave function on
//! an interval takes its minimum at an end point. At α = 0 itself the GPU is unused, which is never worse
//! than the limit α → 0⁺ (no offload time or power). `optimum_is_at_a_candidate_*` tests prove it
//! against a fine grid.

use super::{Objective, Result, non_negative, positive, share};
use serde::Serialize;

/// One CPU plus one GPU at fixed clocks, as PEACH models them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TwoDevice {
    /// P0: static power of the node (CPU, memory, GPU idle), W.
    pub static_power_w: f64,
    /// R_C: CPU processing rate, work units per second (e.g. GFLOPS).
    pub cpu_rate: f64,
    /// Pd_C: CPU dynamic power while computing (with memory, if measured that way), W.
    pub cpu_dynamic_w: f64,
    /// R_G: GPU processing rate, work units per second.
    pub gpu_rate: f64,
    /// Pd_G: GPU dynamic power while computing, W.
    pub gpu_dynamic_w: f64,
    /// P_OH: power of the CPU core that hosts the GPU while the CPU's own share is done, W.
    pub hosting_power_w: f64,
    /// T_OH: time to offload (launch, copies) whenever the GPU gets work, s.
    pub offload_overhead_s: f64,
    /// W: the amount of work (same unit as the rates × seconds).
    pub work: f64,
}

/// The model evaluated at one split.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SplitPoint {
    /// α, the GPU's share of the work.
    pub gpu_share: f64,
    /// T, s.
    pub time_s: f64,
    /// E, J.
    pub energy_j: f64,
    /// T_C, s.
    pub cpu_time_s: f64,
    /// T_G, s.
    pub gpu_time_s: f64,
    /// W / T (e.g. GFLOPS).
    pub performance: f64,
    /// W / E (e.g. GFLOPS/W).
    pub efficiency: f64,
}

impl TwoDevice {
    /// Checks every parameter: rates and work > 0, powers and overhead >= 0.
    pub fn check(&self) -> Result<()> {
        positive("cpu rate", self.cpu_rate)?;
        positive("gpu rate", self.gpu_rate)?;
        positive("work", self.work)?;
        non_negative("static power", self.static_power_w)?;
        non_negative("cpu dynamic power", self.cpu_dynamic_w)?;
        non_negative("gpu dynamic power", self.gpu_dynamic_w)?;
        non_negative("hosting power", self.hosting_power_w)?;
        non_negative("offload overhead", self.offload_overhead_s)?;
        Ok(())
    }

    /// T, E and the rest at GPU share `gpu_share` (checked to lie in [0, 1]).
    pub fn evaluate(&self, gpu_share: f64) -> Result<SplitPoint> {
        share("GPU share", gpu_share)?;
        Ok(self.eval(gpu_share))
    }

    fn eval(&self, a: f64) -> SplitPoint {
        let tc = (1.0 - a) * self.work / self.cpu_rate;
        let tg = if a > 0.0 { a * self.work / self.gpu_rate + self.offload_overhead_s } else { 0.0 };
        let t = tc.max(tg);
        let e = t * self.static_power_w
            + tc * self.cpu_dynamic_w
            + tg * self.gpu_dynamic_w
            + self.hosting_power_w * (tg - tc).max(0.0);
        SplitPoint {
            gpu_share: a,
            time_s: t,
            energy_j: e,
            cpu_time_s: tc,
            gpu_time_s: tg,
            performance: self.work / t,
            efficiency: self.work / e,
        }
    }

    /// α_balance, where T_C = T_G: α = (W/R_C − T_OH) / (W/R_C + W/R_G), clamped to [0, 1]. Without
    /// overhead this is R_G / (R_C + R_G). It is the best-time split whenever it beats CPU-only, which
    /// [`TwoDevice::optimum`] checks.
    pub fn balance_share(&self) -> f64 {
        let c = self.work / self.cpu_rate;
        let g = self.work / self.gpu_rate;
        ((c - self.offload_overhead_s) / (c + g)).clamp(0.0, 1.0)
    }

    /// The best split for `objective`. With `step = None` α is continuous and the optimum is the best
    /// of {0, α_balance, 1} (see the module docs); with `Some(step)` α runs over the grid
    /// {0, step, 2·step, …, 1} (PEACH searched 2% steps) and the whole grid is evaluated. Ties go to the
    /// smaller GPU share.
    pub fn optimum(&self, objective: Objective, step: Option<f64>) -> SplitPoint {
        let candidates = match step {
            None => vec![0.0, self.balance_share(), 1.0],
            Some(s) => share_grid(s),
        };
        let mut best = self.eval(candidates[0]);
        let mut best_v = objective.log_value(best.energy_j, best.time_s);
        for &a in &candidates[1..] {
            let p = self.eval(a);
            let v = objective.log_value(p.energy_j, p.time_s);
            if v < best_v {
                best = p;
                best_v = v;
            }
        }
        best
    }
}

/// Checks a share step: in (0, 1] and dividing 1 into a whole number of steps.
pub fn check_step(step: f64) -> Result<f64> {
    positive("share step", step)?;
    share("share step", step)?;
    let n = (1.0 / step).round();
    if ((1.0 / step) - n).abs() > 1e-6 {
        return Err(super::Error::BadValue {
            what: "share step".into(),
            must: "1/N for a whole number N (e.g. 0.02 or 0.01)",
            value: step,
        });
    }
    Ok(step)
}

/// {0, 1/N, …, 1} for step = 1/N, computed as k/N so that 0.78 is exactly the 39th of 50 steps.
pub fn share_grid(step: f64) -> Vec<f64> {
    let n = (1.0 / step).round().max(1.0) as usize;
    (0..=n).map(|k| k as f64 / n as f64).collect()
}

/// What Stafford et al.'s range test says about co-execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CoExecution {
    /// S_G/S_C at or below the lower bound: the GPU is too slow for its power; run on the CPU alone.
    CpuOnly,
    /// Inside the range: splitting the work (at the balance point) uses less energy than either device alone.
    Split,
    /// S_G/S_C at or above the upper bound: the CPU is too slow for its power; run on the GPU alone.
    GpuOnly,
}

/// Stafford et al. (Euro-Par 2017): co-execution at the balance point uses less energy than either
/// device alone exactly when  P_G^D / (P^S + P_C^D) < S_G / S_C < (P^S + P_G^D) / P_C^D.
///
/// Derivation (ours, from their energy model): alone, a device needs W/S·(P^S + P^D); together,
/// W/(S_C + S_G)·(P^S + P_C^D + P_G^D). Co-execution beats GPU-only iff S_G·P_C^D < S_C·(P^S + P_G^D)
/// (the upper bound; above it, GPU-only wins) and beats CPU-only iff S_C·P_G^D < S_G·(P^S + P_C^D)
/// (the lower bound; below it, CPU-only wins). Stafford et al. call the CPU's share α; PEACH calls the
/// GPU's share α — [`StaffordRange`] reports both. The model has no hosting power or offload time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StaffordRange {
    /// S_G / S_C.
    pub speed_ratio: f64,
    /// P_G^D / (P^S + P_C^D).
    pub lower: f64,
    /// (P^S + P_G^D) / P_C^D (infinite when P_C^D = 0).
    pub upper: f64,
    /// Which side of the range the ratio falls.
    pub verdict: CoExecution,
    /// Stafford's α, the CPU's share at the balance point: S_C / (S_C + S_G).
    pub cpu_share: f64,
    /// PEACH's α, the GPU's share at the balance point: S_G / (S_C + S_G).
    pub gpu_share: f64,
}

/// Stafford et al.'s range test for the devices of `sys` (its hosting power and offload are ignored).
pub fn stafford_range(sys: &TwoDevice) -> StaffordRange {
    let ratio = sys.gpu_rate / sys.cpu_rate;
    let lower = sys.gpu_dynamic_w / (sys.static_power_w + sys.cpu_dynamic_w);
    let upper = if sys.cpu_dynamic_w > 0.0 {
        (sys.static_power_w + sys.gpu_dynamic_w) / sys.cpu_dynamic_w
    } else {
        f64::INFINITY
    };
    let verdict = if ratio <= lower {
        CoExecution::CpuOnly
    } else if ratio >= upper {
        CoExecution::GpuOnly
    } else {
        CoExecution::Split
    };
    let total = sys.cpu_rate + sys.gpu_rate;
    StaffordRange {
        speed_ratio: ratio,
        lower,
        upper,
        verdict,
        cpu_share: sys.cpu_rate / total,
        gpu_share: sys.gpu_rate / total,
    }
}

/// Which run is best in Stafford et al.'s three-way comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Winner {
    /// α = 0 in Stafford's terms: all work on the GPU.
    GpuOnly,
    /// The balanced split α_opt.
    Split,
    /// α = 1: all work on the CPU.
    CpuOnly,
}

/// GPU-only, the balanced split and CPU-only in Stafford et al.'s notation (α = the CPU's share), with
/// the winners for energy and for EDP. The balanced split is the time optimum; for E·T^n the optimum
/// of the PEACH/Stafford model lies among these three (see the module docs), so the winners are exact.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StaffordCase {
    /// α_opt = S_C / (S_C + S_G) (with an offload overhead: 1 − PEACH's balanced GPU share).
    pub alpha: f64,
    /// T(α_opt), s.
    pub time_s: f64,
    /// E(0): GPU only, J.
    pub e_gpu_only_j: f64,
    /// E(α_opt), J.
    pub e_split_j: f64,
    /// E(1): CPU only, J.
    pub e_cpu_only_j: f64,
    /// T(0) and T(1), s, for the EDP.
    pub t_gpu_only_s: f64,
    /// See `t_gpu_only_s`.
    pub t_cpu_only_s: f64,
    /// Least energy.
    pub energy_best: Winner,
    /// Least energy × time.
    pub edp_best: Winner,
}

/// The three-way comparison of Stafford et al. for `sys` (its hosting power and offload included).
pub fn stafford_case(sys: &TwoDevice) -> StaffordCase {
    let bal = sys.balance_share();
    let (gpu, split, cpu) = (sys.eval(1.0), sys.eval(bal), sys.eval(0.0));
    let runs = [(Winner::GpuOnly, gpu), (Winner::Split, split), (Winner::CpuOnly, cpu)];
    // Ties go to the earlier entry: GPU-only, then the split.
    let pick = |key: &dyn Fn(&SplitPoint) -> f64| {
        let mut best = runs[0];
        for r in &runs[1..] {
            if key(&r.1) < key(&best.1) {
                best = *r;
            }
        }
        best.0
    };
    StaffordCase {
        alpha: 1.0 - bal,
        time_s: split.time_s,
        e_gpu_only_j: gpu.energy_j,
        e_split_j: split.energy_j,
        e_cpu_only_j: cpu.energy_j,
        t_gpu_only_s: gpu.time_s,
        t_cpu_only_s: cpu.time_s,
        energy_best: pick(&|p| p.energy_j),
        edp_best: pick(&|p| p.energy_j * p.time_s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PEACH Table V, System I: 2× Xeon E5-2670 and a Tesla K20c (P0 = CPU 42.4 + memory 76.7 + GPU 46.6 W).
    fn system_i() -> TwoDevice {
        TwoDevice {
            static_power_w: 42.4 + 76.7 + 46.6,
            cpu_rate: 293.0,
            cpu_dynamic_w: 239.4,
            gpu_rate: 1052.4,
            gpu_dynamic_w: 128.6,
            hosting_power_w: 30.0,
            offload_overhead_s: 0.0,
            work: 1.0,
        }
    }

    /// PEACH Table V, System II: the same host with a Tesla C2075 (GPU static 82.3 W).
    fn system_ii() -> TwoDevice {
        TwoDevice {
            static_power_w: 42.4 + 76.7 + 82.3,
            gpu_rate: 302.53,
            gpu_dynamic_w: 117.8,
            hosting_power_w: 28.0,
            ..system_i()
        }
    }

    /// Table VI gives the continuous optimum rounded to a whole percent (CPU:GPU).
    fn percent(p: SplitPoint) -> f64 {
        (p.gpu_share * 100.0).round()
    }

    #[test]
    fn peach_system_i_best_time_is_78_percent_gpu_and_best_energy_gpu_only() {
        let s = system_i();
        // Paper: α_perf = 0.782; Table VI: 22:78 (time) and 0:100 (energy) CPU:GPU.
        assert!((s.balance_share() - 0.782).abs() < 5e-4, "{}", s.balance_share());
        assert_eq!(percent(s.optimum(Objective::TIME, None)), 78.0);
        assert_eq!(percent(s.optimum(Objective::ENERGY, None)), 100.0);
        // PEACH's own search in 2% steps lands on the same shares.
        assert!((s.optimum(Objective::TIME, Some(0.02)).gpu_share - 0.78).abs() < 1e-12);
        assert_eq!(s.optimum(Objective::ENERGY, Some(0.02)).gpu_share, 1.0);
    }

    #[test]
    fn peach_system_ii_both_splits_are_49_51() {
        let s = system_ii();
        for o in [Objective::TIME, Objective::ENERGY] {
            assert_eq!(percent(s.optimum(o, None)), 51.0, "{o}");
        }
    }

    #[test]
    fn energy_formula_matches_a_hand_computation() {
        // α = 0.9 on System I: T_C = 0.1/293, T_G = 0.9/1052.4 > T_C, so the host core idles at P_OH.
        let s = system_i();
        let p = s.evaluate(0.9).unwrap();
        let (tc, tg) = (0.1 / 293.0, 0.9 / 1052.4);
        let e = tg * 165.7 + tc * 239.4 + tg * 128.6 + 30.0 * (tg - tc);
        assert!((p.time_s - tg).abs() < 1e-15 && (p.energy_j - e).abs() < 1e-12);
        assert!(s.evaluate(1.2).is_err() && s.evaluate(-0.1).is_err());
    }

    #[test]
    fn overhead_moves_the_balance_and_can_make_cpu_only_best() {
        let mut s = system_i();
        s.offload_overhead_s = 1e-4;
        let a = s.balance_share();
        let p = s.evaluate(a).unwrap();
        assert!((p.cpu_time_s - p.gpu_time_s).abs() < 1e-15, "{p:?}");
        s.offload_overhead_s = 1.0; // far longer than the CPU needs for all the work
        assert_eq!(s.balance_share(), 0.0);
        assert_eq!(s.optimum(Objective::TIME, None).gpu_share, 0.0);
    }

    /// A small deterministic generator so the tests need no extra crate.
    pub(crate) fn lcg(state: &mut u64) -> f64 {
        *state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (*state >> 11) as f64 / (1u64 << 53) as f64
    }

    #[test]
    fn optimum_is_at_a_candidate_for_random_systems_and_objectives() {
        // The claim of the module docs, checked against a grid of 20 001 shares: the best of
        // {0, α_balance, 1} is never beaten.
        let mut st = 7u64;
        let objectives = [
            Objective::TIME,
            Objective::ENERGY,
            Objective::ED,
            Objective::ED2,
            Objective { a: 2.0, b: 3.0 },
            Objective { a: 0.5, b: 1.0 },
        ];
        for _ in 0..200 {
            let s = TwoDevice {
                static_power_w: 300.0 * lcg(&mut st),
                cpu_rate: 1.0 + 1000.0 * lcg(&mut st),
                cpu_dynamic_w: 300.0 * lcg(&mut st),
                gpu_rate: 1.0 + 3000.0 * lcg(&mut st),
                gpu_dynamic_w: 300.0 * lcg(&mut st),
                hosting_power_w: 60.0 * lcg(&mut st),
                offload_overhead_s: if lcg(&mut st) < 0.5 { 0.0 } else { 2e-3 * lcg(&mut st) },
                work: 1.0,
            };
            for o in objectives {
                let best = s.optimum(o, None);
                let best_v = o.log_value(best.energy_j, best.time_s);
                let grid = s.optimum(o, Some(1.0 / 20_000.0));
                let grid_v = o.log_value(grid.energy_j, grid.time_s);
                assert!(best_v <= grid_v + 1e-12, "{s:?} {o}: candidates {best:?} grid {grid:?}");
            }
        }
    }

    #[test]
    fn stafford_range_agrees_with_brute_force_energies() {
        // System I: S_G/S_C = 3.59 is above (P^S + P_G^D)/P_C^D = 1.23: GPU-only.
        let r = stafford_range(&system_i());
        assert_eq!(r.verdict, CoExecution::GpuOnly);
        assert!((r.upper - (165.7 + 128.6) / 239.4).abs() < 1e-12);
        // System II: 1.03 lies inside (0.267, 1.333): co-execute.
        let r = stafford_range(&system_ii());
        assert_eq!(r.verdict, CoExecution::Split);
        assert!((r.cpu_share + r.gpu_share - 1.0).abs() < 1e-12);
        // And on random systems the verdict names the cheapest of CPU-only, GPU-only, balanced
        // (computed straight from the energy model without hosting power or offload).
        let mut st = 11u64;
        for _ in 0..500 {
            let mut s = system_i();
            s.static_power_w = 200.0 * lcg(&mut st);
            s.cpu_rate = 1.0 + 500.0 * lcg(&mut st);
            s.gpu_rate = 1.0 + 500.0 * lcg(&mut st);
            s.cpu_dynamic_w = 1.0 + 200.0 * lcg(&mut st);
            s.gpu_dynamic_w = 1.0 + 200.0 * lcg(&mut st);
            s.hosting_power_w = 0.0;
            let e_cpu = s.evaluate(0.0).unwrap().energy_j;
            let e_gpu = s.evaluate(1.0).unwrap().energy_j;
            let e_bal = s.evaluate(s.balance_share()).unwrap().energy_j;
            let want = if e_bal < e_cpu.min(e_gpu) {
                CoExecution::Split
            } else if e_cpu < e_gpu {
                CoExecution::CpuOnly
            } else {
                CoExecution::GpuOnly
            };
            assert_eq!(stafford_range(&s).verdict, want, "{s:?}");
        }
    }
}
