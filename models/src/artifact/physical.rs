//! Guerreiro et al.'s physical DVFS power model as artifact terms.

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

    /// Power (W) of one row from its activities as the data gives them.
    pub fn power_w(&self, core_u: &[f64], mem_u: &[f64], core_mhz: f64, mem_mhz: f64) -> f64 {
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
                self.power_w(&cu, &mu, r[fc], r[fm])
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::physical;
    use super::super::*;

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
    fn physical_artifact_naming_a_missing_input_is_rejected() {
        let mut a = physical();
        a.physical.as_mut().unwrap().core_inputs[0] = "nope".into();
        assert!(a.check().unwrap_err().to_string().contains("'nope'"));
        let mut b = physical();
        b.physical = None;
        assert!(b.check().is_err());
    }
}
