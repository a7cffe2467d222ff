//! Guerreiro et al.'s physical DVFS power model as artifact terms, and what shapes its inputs: the
//! residual gate and the roofline rescaling.

use super::Scaling;
use crate::error::{Error, Result};
use ndarray::{Array1, ArrayView2};
use serde::{Deserialize, Serialize};

/// One clock level of a domain and its voltage relative to the reference (default) clocks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VoltageLevel {
    pub mhz: f64,
    /// Voltage relative to the voltage at the reference clock (1 at the reference level).
    pub relative_v: f64,
}

/// Guerreiro et al.'s physical DVFS power model (TPDS'19):
///
/// `P = β0·V_c + V_c²·f_c·(β_c + Σ_i β_i·U_i) + β1·V_m + V_m²·f_m·(β_m + Σ_j β_j·U_j)`
///
/// with `f` the clock relative to the reference clock of its domain, `V` the relative voltage of the
/// clock level (one per level, 1 at the reference), `U_i` the core-domain activity inputs and `U_j` the
/// memory-domain ones (DRAM). Every β is non-negative and voltage never falls as the clock rises.
/// Between and beyond the fitted levels the voltage is interpolated / extrapolated linearly in MHz.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhysicalTerms {
    /// Input names of the core and memory clocks (MHz).
    pub core_clock: String,
    pub mem_clock: String,
    /// Reference clocks (MHz): f is relative to these, and V = 1 there.
    pub ref_core_mhz: f64,
    pub ref_mem_mhz: f64,
    /// Core-domain activity inputs `U_i` and their β_i (W).
    pub core_inputs: Vec<String>,
    pub core_betas: Vec<f64>,
    /// Memory-domain activity inputs (DRAM) and their β (W).
    pub mem_inputs: Vec<String>,
    pub mem_betas: Vec<f64>,
    /// β0 (static, ∝ V_c), β_c (clock tree, ∝ V_c²·f_c), β1, β_m (same for the memory domain), W.
    pub beta0_w: f64,
    pub beta_core_w: f64,
    pub beta1_w: f64,
    pub beta_mem_w: f64,
    /// Fitted voltage per clock level, ascending in MHz.
    pub core_levels: Vec<VoltageLevel>,
    pub mem_levels: Vec<VoltageLevel>,
    /// When set, the activity inputs are utilizations measured once, at these clocks, and the model
    /// rescales them to each clock pair it predicts at ([`Roofline`]). Absent in artifacts written
    /// before it existed and in models that read their activities as given (they load and predict as
    /// before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roofline: Option<Roofline>,
    /// When set (only in a `physical+bpann` artifact), the residual network is trusted only near the
    /// kernels it was trained on: its output is multiplied by the [`ResidualGate`]'s weight of the row,
    /// computed from the activity inputs above. Kept with the terms because it reads their inputs.
    /// Absent in artifacts written before it existed and in ungated models (they predict as before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub residual_gate: Option<ResidualGate>,
}

/// A residual network trusted only near its training data: the weight `g ∈ [0, 1]` its output is
/// multiplied by, `P·(1 + g·net)` (relative residual) or `P + g·net` (absolute), falls with the distance
/// from a row's activity inputs to the training kernels. The form is fixed a priori, with no fitted
/// parameter:
///
/// - the activity inputs are standardized with the training rows' means and standard deviations (an
///   input constant on the training rows keeps the scale 1);
/// - each training kernel's signature is the mean of its rows' standardized activity vectors;
/// - `d(x)` is the Euclidean distance from the row's standardized activity vector to the nearest
///   signature, and `τ` the largest over the training kernels of the distance from each signature to
///   its nearest other one (the training set's covering spacing: every training kernel lies within τ
///   of another);
/// - `g = min(1, (τ/d)²)`: fully trusted within that spacing, fading beyond it (g = 1 at d = 0).
///
/// τ is the largest, not the median, nearest-neighbour distance (chosen on the training
/// microbenchmarks' grouped and leave-cluster-out CV). The microbenchmarks come in families of
/// near-duplicates (one kernel at several sizes), so their median spacing is a family's and turned the
/// network off for most unseen kernels, even in grouped CV.
///
/// It is built from the training rows of each fit only ([`ResidualGate::from_training`]), so in
/// cross-validation a held-out kernel never shapes the gate that judges it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResidualGate {
    /// The activity inputs the distance is measured over (among the artifact's inputs).
    pub inputs: Vec<String>,
    /// Their standardization (the training rows' means and standard deviations).
    pub scaling: Scaling,
    /// One standardized signature per training kernel.
    pub signatures: Vec<Vec<f64>>,
    /// The covering spacing τ of the signatures (largest nearest-neighbour distance).
    pub tau: f64,
}

impl ResidualGate {
    /// The gate of the training rows `ds` over its columns `inputs`; `None` with fewer than two
    /// training kernels (no spacing to measure: the network is then trusted everywhere, as ungated).
    pub fn from_training(ds: &crate::Dataset, inputs: &[String]) -> Result<Option<ResidualGate>> {
        let sub = ds.select_features(inputs)?;
        let x = &sub.records;
        let n = x.nrows().max(1) as f64;
        let mean: Vec<f64> = x.columns().into_iter().map(|c| c.sum() / n).collect();
        let std: Vec<f64> = x
            .columns()
            .into_iter()
            .zip(&mean)
            .map(|(c, m)| {
                let sd = (c.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / n).sqrt();
                if sd > 0.0 && sd.is_finite() { sd } else { 1.0 }
            })
            .collect();
        let signatures: Vec<Vec<f64>> = sub
            .group_rows()
            .into_iter()
            .map(|(_, rows)| {
                (0..inputs.len())
                    .map(|j| {
                        rows.iter().map(|&r| (x[[r, j]] - mean[j]) / std[j]).sum::<f64>() / rows.len() as f64
                    })
                    .collect()
            })
            .collect();
        if signatures.len() < 2 {
            return Ok(None);
        }
        let spacing: Vec<f64> = signatures
            .iter()
            .enumerate()
            .map(|(i, s)| {
                signatures
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| *k != i)
                    .map(|(_, o)| distance(s, o))
                    .fold(f64::INFINITY, f64::min)
            })
            .collect();
        let gate = ResidualGate {
            inputs: inputs.to_vec(),
            scaling: Scaling { mean, std },
            signatures,
            tau: spacing.iter().copied().fold(0.0, f64::max),
        };
        gate.check()?;
        Ok(Some(gate))
    }

    /// Distance from the activity vector `u` (raw, in the order of `inputs`) to the nearest signature.
    pub fn distance(&self, u: &[f64]) -> f64 {
        let z: Vec<f64> = u
            .iter()
            .zip(self.scaling.mean.iter().zip(&self.scaling.std))
            .map(|(v, (m, s))| (v - m) / s)
            .collect();
        self.signatures.iter().map(|s| distance(&z, s)).fold(f64::INFINITY, f64::min)
    }

    /// The weight of the network's output on a row with activity vector `u`: `min(1, (τ/d)²)`.
    pub fn weight(&self, u: &[f64]) -> f64 {
        let d = self.distance(u);
        if d <= self.tau { 1.0 } else { (self.tau / d).powi(2) }
    }

    pub(super) fn check(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::Mismatch(format!("residual gate: {m}")));
        let k = self.inputs.len();
        if k == 0 || self.scaling.mean.len() != k || self.scaling.std.len() != k {
            return bad("one mean and one standard deviation per input are needed");
        }
        if self.signatures.is_empty() || self.signatures.iter().any(|s| s.len() != k) {
            return bad("every signature needs one value per input");
        }
        let finite = |v: &[f64]| v.iter().all(|x| x.is_finite());
        let valid = finite(&self.scaling.mean)
            && self.scaling.std.iter().all(|s| *s > 0.0 && s.is_finite())
            && self.signatures.iter().all(|s| finite(s))
            && self.tau >= 0.0
            && self.tau.is_finite();
        if !valid {
            return bad(
                "scaling, signatures and τ must be finite (standard deviations and τ positive or τ zero)",
            );
        }
        Ok(())
    }
}

fn distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f64>().sqrt()
}

/// Roofline rescaling of utilizations measured at one clock pair (Guerreiro et al.'s files: every
/// utilization taken at the default clocks, power at every clock pair) to the clock pair of a row.
///
/// A utilization is events per cycle of its domain's clock over the kernel's run time. Moving the
/// clocks changes both the cycles per second and the run time: a compute-bound kernel's run time
/// scales with the core clock (its core utilizations stay; its DRAM utilization falls), a memory-bound
/// kernel's with the memory clock (its core utilizations rise as the core clock falls, since the same
/// events now meet fewer core cycles). The run time relative to the measurement is estimated a priori
/// by a roofline over the two domains, with no fitted parameter:
///
/// `t/t0 = max(a·f_c0/f_c, b·f_m0/f_m) / max(a, b)`
///
/// with `a` the largest core-domain utilization (the busiest core-side unit bounds the core side's
/// time) and `b` the largest memory-domain one, both at the measurement clocks `f_c0`, `f_m0`. Every
/// core-domain utilization is then scaled by `(f_c0/f_c)·(t0/t)` and every memory-domain one by
/// `(f_m0/f_m)·(t0/t)` — the same events over the new run time, per cycle of the new clock. No
/// utilization then exceeds the largest measured one, `max(a, b)` (the bottleneck domain keeps its
/// load), so no cap is needed. At the measurement clocks it is the identity; a kernel with no activity
/// at all is left as it is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Roofline {
    /// Core and memory clocks (MHz) the utilizations were measured at.
    pub core_mhz: f64,
    pub mem_mhz: f64,
}

impl Roofline {
    /// Rescales one row's utilizations in place to the clocks `core_mhz`, `mem_mhz`.
    pub fn rescale(&self, core_u: &mut [f64], mem_u: &mut [f64], core_mhz: f64, mem_mhz: f64) {
        let peak = |u: &[f64]| u.iter().fold(0.0f64, |m, &x| m.max(x));
        let (a, b) = (peak(core_u), peak(mem_u));
        // The peaks start at 0, so the load is ≥ 0 (NaN utilizations do not raise it).
        let load = a.max(b);
        if load <= 0.0 {
            return;
        }
        let (core_slow, mem_slow) = (self.core_mhz / core_mhz, self.mem_mhz / mem_mhz);
        let time = (a * core_slow).max(b * mem_slow) / load;
        for (u, s) in [(core_u, core_slow / time), (mem_u, mem_slow / time)] {
            for x in u.iter_mut() {
                *x *= s;
            }
        }
    }
}

/// Linear interpolation of the relative voltage at `mhz` over ascending `levels` (linear extrapolation
/// beyond the ends from the two outermost levels, never below 0).
pub fn voltage_at(levels: &[VoltageLevel], mhz: f64) -> f64 {
    match levels {
        [] => 1.0,
        [one] => one.relative_v,
        _ => {
            let k = levels
                .iter()
                .position(|l| l.mhz >= mhz)
                .unwrap_or(levels.len() - 1)
                .clamp(1, levels.len() - 1);
            let (a, b) = (levels[k - 1], levels[k]);
            if a.mhz == mhz {
                return a.relative_v;
            }
            if b.mhz == mhz {
                return b.relative_v;
            }
            let t = (mhz - a.mhz) / (b.mhz - a.mhz);
            (a.relative_v + t * (b.relative_v - a.relative_v)).max(0.0)
        }
    }
}

/// Every input a physical DVFS model reads, in the order its artifact and its fit use: core-domain
/// activities, memory-domain activities, then the core and memory clocks. The one definition of that
/// order for the unfitted parameters (`gpumodel_train::PhysicalParams::inputs`) and the fitted terms.
pub fn physical_input_names(
    core_inputs: &[String],
    mem_inputs: &[String],
    core_clock: &str,
    mem_clock: &str,
) -> Vec<String> {
    core_inputs
        .iter()
        .chain(mem_inputs)
        .cloned()
        .chain([core_clock.to_string(), mem_clock.to_string()])
        .collect()
}

impl PhysicalTerms {
    /// Every input the terms read.
    pub fn input_names(&self) -> Vec<String> {
        physical_input_names(&self.core_inputs, &self.mem_inputs, &self.core_clock, &self.mem_clock)
    }

    /// Power (W) of one row from its activities as the data gives them (rescaled here to the row's
    /// clocks when the terms carry a [`Roofline`]; the slices are then overwritten).
    pub fn power_w(&self, core_u: &mut [f64], mem_u: &mut [f64], core_mhz: f64, mem_mhz: f64) -> f64 {
        if let Some(r) = &self.roofline {
            r.rescale(core_u, mem_u, core_mhz, mem_mhz);
        }
        let vc = voltage_at(&self.core_levels, core_mhz);
        let vm = voltage_at(&self.mem_levels, mem_mhz);
        let fc = core_mhz / self.ref_core_mhz;
        let fm = mem_mhz / self.ref_mem_mhz;
        let core: f64 =
            self.beta_core_w + self.core_betas.iter().zip(core_u.iter()).map(|(b, u)| b * u).sum::<f64>();
        let mem: f64 =
            self.beta_mem_w + self.mem_betas.iter().zip(mem_u.iter()).map(|(b, u)| b * u).sum::<f64>();
        self.beta0_w * vc + vc * vc * fc * core + self.beta1_w * vm + vm * vm * fm * mem
    }

    pub(super) fn check(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::Mismatch(format!("physical model: {m}")));
        if self.core_betas.len() != self.core_inputs.len() || self.mem_betas.len() != self.mem_inputs.len() {
            return bad("one β per activity input is needed");
        }
        if self.core_levels.is_empty() || self.mem_levels.is_empty() {
            return bad("each clock domain needs at least one voltage level");
        }
        let ascending = |l: &[VoltageLevel]| l.windows(2).all(|w| w[0].mhz < w[1].mhz);
        if !ascending(&self.core_levels) || !ascending(&self.mem_levels) {
            return bad("voltage levels must be in ascending clock order");
        }
        if !(self.ref_core_mhz > 0.0 && self.ref_mem_mhz > 0.0) {
            return bad("reference clocks must be positive");
        }
        if let Some(r) = &self.roofline
            && !(r.core_mhz > 0.0 && r.mem_mhz > 0.0 && r.core_mhz.is_finite() && r.mem_mhz.is_finite())
        {
            return bad("the roofline's measurement clocks must be positive");
        }
        Ok(())
    }

    /// Indices of (core inputs, memory inputs, core clock, memory clock) in `inputs`.
    pub(super) fn indices(&self, inputs: &[String]) -> Result<(Vec<usize>, Vec<usize>, usize, usize)> {
        let find = |n: &String| {
            inputs.iter().position(|i| i == n).ok_or_else(|| {
                Error::Mismatch(format!("physical model: input '{n}' is not among the artifact's inputs"))
            })
        };
        Ok((
            self.core_inputs.iter().map(find).collect::<Result<_>>()?,
            self.mem_inputs.iter().map(find).collect::<Result<_>>()?,
            find(&self.core_clock)?,
            find(&self.mem_clock)?,
        ))
    }

    /// Power (W) of every row of `records` whose columns are `inputs`.
    pub fn predict(&self, inputs: &[String], records: ArrayView2<'_, f64>) -> Result<Array1<f64>> {
        let (ci, mi, fc, fm) = self.indices(inputs)?;
        let mut cu = vec![0.0; ci.len()];
        let mut mu = vec![0.0; mi.len()];
        Ok(records
            .rows()
            .into_iter()
            .map(|r| {
                for (u, &j) in cu.iter_mut().zip(&ci) {
                    *u = r[j];
                }
                for (u, &j) in mu.iter_mut().zip(&mi) {
                    *u = r[j];
                }
                self.power_w(&mut cu, &mut mu, r[fc], r[fm])
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{physical, three_kernels, ud};
    use super::super::*;

    #[test]
    fn roofline_rescaling_by_hand() {
        let r = Roofline { core_mhz: 1000.0, mem_mhz: 3000.0 };
        let at = |cu: [f64; 2], mu: f64, fc: f64, fm: f64| {
            let (mut c, mut m) = (cu, [mu]);
            r.rescale(&mut c, &mut m, fc, fm);
            (c, m[0])
        };
        // At the measurement clocks: the identity.
        assert_eq!(at([0.6, 0.2], 0.3, 1000.0, 3000.0), ([0.6, 0.2], 0.3));
        // Compute-bound (a = 0.6 > b = 0.3) at half the core clock: t/t0 = max(0.6·2, 0.3)/0.6 = 2, so
        // the core utilizations stay and DRAM halves (the same bytes over twice the time).
        assert_eq!(at([0.6, 0.2], 0.3, 500.0, 3000.0), ([0.6, 0.2], 0.15));
        // Memory-bound (b = 0.8 > a = 0.3) at half the core clock: t/t0 = max(0.6, 0.8)/0.8 = 1, so the
        // run time stays and every core utilization doubles; DRAM stays.
        let (c, m) = at([0.3, 0.1], 0.8, 500.0, 3000.0);
        assert!((c[0] - 0.6).abs() < 1e-12 && (c[1] - 0.2).abs() < 1e-12 && (m - 0.8).abs() < 1e-12);
        // The same kernel at a quarter of the memory clock: t/t0 = max(0.3, 3.2)/0.8 = 4, core
        // utilizations fall to a quarter, DRAM stays (events per memory cycle unchanged).
        let (c, m) = at([0.3, 0.1], 0.8, 1000.0, 750.0);
        assert!((c[0] - 0.075).abs() < 1e-12 && (c[1] - 0.025).abs() < 1e-12 && (m - 0.8).abs() < 1e-12);
        // Memory-bound at a third of the core clock: t/t0 = max(0.75, 0.9)/0.9 = 1, core ×3.
        let (c, m) = at([0.25, 0.1], 0.9, 1000.0 / 3.0, 3000.0);
        assert!((c[0] - 0.75).abs() < 1e-12 && (c[1] - 0.3).abs() < 1e-12 && (m - 0.9).abs() < 1e-12);
        // At a fifth the core side becomes the bound: t/t0 = 1.25/0.9, core × 5·0.9/1.25 = 3.6, DRAM
        // × 0.72: the busiest unit reaches the measured peak 0.9 and no further.
        let (c, m) = at([0.25, 0.1], 0.9, 200.0, 3000.0);
        assert!((c[0] - 0.9).abs() < 1e-12 && (c[1] - 0.36).abs() < 1e-12, "{c:?}");
        assert!((m - 0.648).abs() < 1e-12, "{m}");
        // No activity at all: nothing to rescale.
        assert_eq!(at([0.0, 0.0], 0.0, 500.0, 750.0), ([0.0, 0.0], 0.0));
    }

    #[test]
    fn roofline_terms_predict_with_rescaled_utilizations_and_round_trip() {
        let plain = physical();
        let mut a = plain.clone();
        a.physical.as_mut().unwrap().roofline = Some(Roofline { core_mhz: 1000.0, mem_mhz: 3000.0 });
        a.check().unwrap();
        // At the measurement clocks both predict the same.
        let x = [0.5, 0.25, 1000.0, 3000.0];
        assert_eq!(a.predict_one(&x), plain.predict_one(&x));
        // Memory-bound (U = 0.2 < D = 0.8) at 500 MHz core: U becomes 0.4, D stays (run time unchanged).
        // V = 0.8 at 500 MHz, f = 0.5: 30·0.8 + 0.64·0.5·(10 + 50·0.4) + 5 + (4 + 20·0.8) = 58.6.
        let x = [0.2, 0.8, 500.0, 3000.0];
        assert!((a.predict_one(&x) - 58.6).abs() < 1e-9, "{}", a.predict_one(&x));
        assert!((plain.predict_one(&x) - 55.4).abs() < 1e-9, "{}", plain.predict_one(&x));
        let batch = a.predict(ndarray::array![[0.2, 0.8, 500.0, 3000.0]].view());
        assert!((batch[0] - 58.6).abs() < 1e-9);
        let text = serde_json::to_string(&a).unwrap();
        assert!(text.contains(r#""roofline":{"core_mhz":1000.0,"mem_mhz":3000.0}"#), "{text}");
        assert_eq!(ModelArtifact::from_json_str(&text, "m").unwrap(), a);
        // An artifact written before the field existed has no such key and loads without it.
        let old = serde_json::to_string(&plain).unwrap();
        assert!(!old.contains("roofline"), "{old}");
        assert_eq!(ModelArtifact::from_json_str(&old, "old.json").unwrap().physical.unwrap().roofline, None);
        // Measurement clocks must be positive.
        let bad = text.replace(r#""core_mhz":1000.0"#, r#""core_mhz":0.0"#);
        let msg = ModelArtifact::from_json_str(&bad, "bad.json").unwrap_err().to_string();
        assert!(msg.contains("measurement clocks"), "{msg}");
    }

    #[test]
    fn physical_model_by_hand() {
        let a = physical();
        a.check().unwrap();
        // At the reference clocks: 30 + (10 + 50·0.5) + 5 + (4 + 20·0.25) = 79.
        assert!((a.predict_one(&[0.5, 0.25, 1000.0, 3000.0]) - 79.0).abs() < 1e-12);
        // Core 750 MHz: V = 0.9 (halfway between 0.8 and 1.0), f = 0.75:
        // 30·0.9 + 0.81·0.75·(10 + 50) + 5 + 4 = 72.45.
        assert!((a.predict_one(&[1.0, 0.0, 750.0, 3000.0]) - 72.45).abs() < 1e-9);
        // Beyond the last level the voltage extrapolates linearly: 1750 MHz → 1.3.
        assert!((voltage_at(&a.physical.as_ref().unwrap().core_levels, 1750.0) - 1.3).abs() < 1e-12);
        let x = ndarray::array![[0.5, 0.25, 1000.0, 3000.0], [1.0, 0.0, 750.0, 3000.0]];
        let batch = a.predict(x.view());
        assert!((batch[0] - 79.0).abs() < 1e-12 && (batch[1] - 72.45).abs() < 1e-9);
        let text = serde_json::to_string(&a).unwrap();
        assert_eq!(ModelArtifact::from_json_str(&text, "m").unwrap(), a);
    }

    #[test]
    fn the_gate_is_one_on_the_training_kernels_and_falls_with_the_distance() {
        let g = ResidualGate::from_training(&three_kernels(), &ud()).unwrap().unwrap();
        let r2 = std::f64::consts::SQRT_2;
        assert!((g.tau - 3.0 / r2).abs() < 1e-12, "{}", g.tau);
        assert!(
            (g.scaling.mean[0] - 1.0 / 3.0).abs() < 1e-12
                && (g.scaling.std[1] - 2.0 * r2 / 3.0).abs() < 1e-12
        );
        let want = [[-1.0 / r2, -1.0 / r2], [r2, -1.0 / r2], [-1.0 / r2, r2]];
        for (s, w) in g.signatures.iter().zip(want) {
            assert!((s[0] - w[0]).abs() < 1e-12 && (s[1] - w[1]).abs() < 1e-12, "{s:?} vs {w:?}");
        }
        // On every training kernel, and between k1 and k2 (within τ of both): fully trusted.
        for u in [[0.0, 0.0], [1.0, 0.0], [0.0, 2.0], [0.5, 0.0]] {
            assert_eq!(g.weight(&u), 1.0, "{u:?}");
        }
        // Beyond k2 along U: d = (U − 1)/(√2/3) standardized units from k2, g = (τ/d)².
        let at = |u: f64| g.weight(&[u, 0.0]);
        let sd = r2 / 3.0;
        assert!((at(1.0 + 2.0 * g.tau * sd) - 0.25).abs() < 1e-12, "{}", at(1.0 + 2.0 * g.tau * sd));
        assert!((at(1.0 + 4.0 * g.tau * sd) - 1.0 / 16.0).abs() < 1e-12);
        // It never rises as the row moves away, and stays within [0, 1].
        let mut last = 1.0;
        for i in 0..200 {
            let w = at(1.0 + 0.1 * i as f64);
            assert!((0.0..=1.0).contains(&w) && w <= last, "step {i}: {w} after {last}");
            last = w;
        }
        assert!(last < 0.01, "{last}");
        // An input constant on the training rows keeps the scale 1 (no division by zero).
        let mut ds = three_kernels();
        ds.records.column_mut(3).fill(3000.0);
        let c = ResidualGate::from_training(&ds, &["U".into(), "mem_mhz".into()]).unwrap().unwrap();
        assert_eq!(c.scaling.std[1], 1.0);
        // One training kernel has no spacing: no gate (the network is trusted as ungated).
        let one = ds.select_rows(&[0, 1]);
        assert_eq!(ResidualGate::from_training(&one, &ud()).unwrap(), None);
    }

    #[test]
    fn physical_artifact_naming_a_missing_input_is_rejected() {
        let mut a = physical();
        a.physical.as_mut().unwrap().core_inputs[0] = "nope".into();
        assert!(a.check().unwrap_err().to_string().contains("'nope'"));
        let mut b = physical();
        b.physical = None;
        assert!(b.check().is_err());
    }
}
