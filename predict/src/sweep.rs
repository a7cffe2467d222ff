//! Sweeps over warps per SM (paper Fig. 5.16) and core clocks, with the E^a·D^b optimum of each objective.

use crate::calibration::TimeCalibration;
use crate::error::{Error, Result};
use crate::kernel::{Config, predict_kernel, time_at};
use gpumodel_models::arch::ArchProfile;
use gpumodel_models::artifact::ModelArtifact;
use gpumodel_models::energy::Objective;
use gpumodel_models::features::{Input, base_columns};
use gpumodel_models::profile::KernelProfile;
use gpumodel_models::timing::{Clocks, TimingInputs, occupancy};
use serde::Serialize;

/// What a sweep varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SweepKind {
    /// Active warps per SM.
    Warps,
    /// Core clock, MHz (memory clock fixed).
    CoreClock,
}

/// One configuration of a sweep.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SweepPoint {
    /// Warps per SM or core MHz.
    pub x: f64,
    pub time_s: f64,
    pub power_w: f64,
    pub energy_j: f64,
    /// The bottleneck component at this point.
    pub bottleneck: &'static str,
}

/// The best point of one objective.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Optimum {
    pub objective: String,
    pub a: f64,
    pub b: f64,
    pub x: f64,
    pub value: f64,
}

/// A sweep's curve and optima.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sweep {
    pub kind: SweepKind,
    pub points: Vec<SweepPoint>,
    pub optima: Vec<Optimum>,
}

/// The per-point work of a sweep without the allocations of a full [`crate::Prediction`]: the model's
/// input names are parsed once. The first point goes through [`predict_kernel`], so its errors (missing
/// profile fields, inputs the profile cannot provide) are the same.
struct Lean<'a> {
    k: &'a KernelProfile,
    x: TimingInputs,
    arch: &'a ArchProfile,
    model: &'a ModelArtifact,
    inputs: Vec<Input>,
    cal: Option<&'a TimeCalibration>,
}

impl<'a> Lean<'a> {
    fn new(
        k: &'a KernelProfile,
        arch: &'a ArchProfile,
        model: &'a ModelArtifact,
        cal: Option<&'a TimeCalibration>,
    ) -> Result<Lean<'a>> {
        let inputs = model.inputs.iter().map(|n| Input::parse(n)).collect::<Result<Vec<_>, _>>()?;
        Ok(Lean { k, x: TimingInputs::from_profile(k)?, arch, model, inputs, cal })
    }

    fn point(&self, x_value: f64, cfg: &Config, buf: &mut Vec<f64>) -> Result<SweepPoint> {
        let default = Clocks::default_for(self.arch);
        let clocks = cfg.clocks.unwrap_or(default);
        let occ = occupancy(&self.k.launch, self.arch, crate::kernel::warps_cap(self.k, self.arch, cfg))?;
        let t = time_at(&self.x, self.arch, &occ, clocks, self.cal, cfg.timing);
        let t0 = if clocks == default {
            t.time_s
        } else {
            time_at(&self.x, self.arch, &occ, default, self.cal, cfg.timing).time_s
        };
        let base = crate::power::base_values(self.k, &self.x, self.arch, t0, t.time_s, clocks);
        buf.clear();
        for i in &self.inputs {
            let v =
                i.eval(&|c| base.get(c)).map_err(|c| Error::Mismatch(format!("missing base value {c}")))?;
            buf.push(v);
        }
        let power_w = self.model.predict_one(buf);
        Ok(SweepPoint {
            x: x_value,
            time_s: t.time_s,
            power_w,
            energy_j: power_w * t.time_s,
            bottleneck: t.bottleneck().0,
        })
    }
}

fn optima(points: &[SweepPoint], objectives: &[Objective]) -> Vec<Optimum> {
    let ed: Vec<(f64, f64)> = points.iter().map(|p| (p.energy_j, p.time_s)).collect();
    objectives
        .iter()
        .filter_map(|o| {
            o.argmin(&ed).map(|i| Optimum {
                objective: o.label(),
                a: o.a,
                b: o.b,
                x: points[i].x,
                value: o.value(ed[i].0, ed[i].1),
            })
        })
        .collect()
}

/// Every warps-per-SM setting from one block's warps to the architecture's maximum (the calibration of
/// `cfg`, if any, applied at every point).
pub fn sweep_warps(
    k: &KernelProfile,
    arch: &ArchProfile,
    model: &ModelArtifact,
    cfg: &Config,
    objectives: &[Objective],
) -> Result<Sweep> {
    let cal = cfg.calibration.as_ref();
    let wpb = arch.warps_per_block(k.launch.threads_per_block()).max(1);
    let max = arch.max_warps_per_sm.value as u32;
    let mut points = Vec::with_capacity(max as usize);
    if wpb <= max {
        // The first point through the full path: its errors are the ones users should see.
        predict_kernel(k, arch, model, &Config { warps: Some(wpb), ..*cfg })?;
    }
    let lean = Lean::new(k, arch, model, cal)?;
    let mut buf = Vec::with_capacity(model.inputs.len());
    for w in wpb..=max {
        points.push(lean.point(f64::from(w), &Config { warps: Some(w), ..*cfg }, &mut buf)?);
    }
    if points.is_empty() {
        return Err(Error::Invalid(format!(
            "no warps setting fits: one block has {wpb} warps, the SM holds {max}"
        )));
    }
    let optima = optima(&points, objectives);
    Ok(Sweep { kind: SweepKind::Warps, points, optima })
}

/// Every supported core clock of the architecture profile, at the configured (or default) memory clock.
/// Needs a power model with a clock input: without one, power would not respond to the clock. The
/// calibration of `cfg`, if any, is applied at every point.
pub fn sweep_core_clock(
    k: &KernelProfile,
    arch: &ArchProfile,
    model: &ModelArtifact,
    cfg: &Config,
    objectives: &[Objective],
) -> Result<Sweep> {
    let cal = cfg.calibration.as_ref();
    let cols = base_columns(&model.inputs)?;
    if !cols.iter().any(|c| c == "core_mhz") {
        return Err(Error::Mismatch(format!(
            "the {} model (feature set '{}') has no core_mhz input, so its power does not respond to the \
             clock: use a model trained with clock inputs (e.g. titanx-bpann) for --sweep core-clock",
            model.kind.name(),
            model.feature_set
        )));
    }
    let mem = cfg.clocks.map_or(arch.mem_mhz.value, |c| c.mem_mhz);
    let lean = Lean::new(k, arch, model, cal)?;
    let mut buf = Vec::with_capacity(model.inputs.len());
    let mut points = Vec::with_capacity(arch.core_clocks_mhz.value.len());
    for (i, &f) in arch.core_clocks_mhz.value.iter().enumerate() {
        let c = Config { clocks: Some(Clocks { core_mhz: f, mem_mhz: mem }), ..*cfg };
        if i == 0 {
            predict_kernel(k, arch, model, &c)?;
        }
        points.push(lean.point(f, &c, &mut buf)?);
    }
    let optima = optima(&points, objectives);
    Ok(Sweep { kind: SweepKind::CoreClock, points, optima })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::predict_kernel;

    /// The sweeps' allocation-free path must give exactly what `predict_kernel` gives at every point.
    #[test]
    fn sweep_points_equal_full_predictions() {
        let k = crate::examples::kernel("transpose").unwrap().unwrap();
        let arch = ArchProfile::builtin("titanx").unwrap();
        let model = ModelArtifact::from_json_str(crate::examples::MODELS[0].1, "m").unwrap();
        let objs = Objective::DEFAULTS.to_vec();
        let s = sweep_warps(&k, &arch, &model, &Config::default(), &objs).unwrap();
        for p in &s.points {
            let full =
                predict_kernel(&k, &arch, &model, &Config { warps: Some(p.x as u32), ..Config::default() })
                    .unwrap();
            assert_eq!((p.time_s, p.power_w, p.energy_j), (full.time_s, full.power_w, full.energy_j));
        }
        let s = sweep_core_clock(&k, &arch, &model, &Config::default(), &objs).unwrap();
        for p in &s.points {
            let c = Clocks { core_mhz: p.x, mem_mhz: arch.mem_mhz.value };
            let full =
                predict_kernel(&k, &arch, &model, &Config { clocks: Some(c), ..Config::default() }).unwrap();
            assert_eq!((p.time_s, p.power_w), (full.time_s, full.power_w));
        }
        // The E optimum is the point of least energy.
        let best = s.points.iter().map(|p| p.energy_j).fold(f64::INFINITY, f64::min);
        let e = s.optima.iter().find(|o| o.objective == "E").unwrap();
        assert_eq!(e.value, best);
    }

    /// With a calibration, every sweep point is the calibrated full prediction, and the time differs from
    /// the uncalibrated one (so the calibration reached the sweep).
    #[test]
    fn calibrated_sweep_points_equal_calibrated_predictions() {
        let k = crate::examples::kernel("reduction").unwrap().unwrap();
        let arch = ArchProfile::builtin("titanx").unwrap();
        let model = ModelArtifact::from_json_str(crate::examples::MODELS[0].1, "m").unwrap();
        let cal = TimeCalibration { a: [1.3, 1.6, 1.1, 1.2], p: 6.0 };
        let calibrated = Config { calibration: Some(cal), ..Config::default() };
        let objs = Objective::DEFAULTS.to_vec();
        let plain = sweep_core_clock(&k, &arch, &model, &Config::default(), &objs).unwrap();
        let s = sweep_core_clock(&k, &arch, &model, &calibrated, &objs).unwrap();
        for (p, q) in s.points.iter().zip(&plain.points) {
            let c =
                Config { clocks: Some(Clocks { core_mhz: p.x, mem_mhz: arch.mem_mhz.value }), ..calibrated };
            let full = predict_kernel(&k, &arch, &model, &c).unwrap();
            assert_eq!((p.time_s, p.power_w), (full.time_s, full.power_w));
            assert!(p.time_s > q.time_s * 1.05, "{} vs {}", p.time_s, q.time_s);
        }
        let s = sweep_warps(&k, &arch, &model, &calibrated, &objs).unwrap();
        for p in &s.points {
            let c = Config { warps: Some(p.x as u32), ..calibrated };
            let full = predict_kernel(&k, &arch, &model, &c).unwrap();
            assert_eq!((p.time_s, p.energy_j), (full.time_s, full.energy_j));
        }
    }
}
