//! Sweeps over warps per SM (paper Fig. 5.16) and core clocks, with the E^a·D^b optimum of each objective.

use crate::error::{Error, Result};
use crate::kernel::{Config, predict_kernel};
use gpumodel_models::arch::ArchProfile;
use gpumodel_models::artifact::ModelArtifact;
use gpumodel_models::energy::Objective;
use gpumodel_models::features::base_columns;
use gpumodel_models::profile::KernelProfile;
use gpumodel_models::timing::Clocks;
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

/// Every warps-per-SM setting from one block's warps to the architecture's maximum.
pub fn sweep_warps(
    k: &KernelProfile,
    arch: &ArchProfile,
    model: &ModelArtifact,
    cfg: &Config,
    objectives: &[Objective],
) -> Result<Sweep> {
    let wpb = arch.warps_per_block(k.launch.threads_per_block()).max(1);
    let max = arch.max_warps_per_sm.value as u32;
    let mut points = Vec::with_capacity(max as usize);
    for w in wpb..=max {
        let p = predict_kernel(k, arch, model, &Config { warps: Some(w), ..*cfg })?;
        points.push(SweepPoint {
            x: f64::from(w),
            time_s: p.time_s,
            power_w: p.power_w,
            energy_j: p.energy_j,
            bottleneck: p.detail.bottleneck,
        });
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
/// Needs a power model with a clock input: without one, power would not respond to the clock.
pub fn sweep_core_clock(
    k: &KernelProfile,
    arch: &ArchProfile,
    model: &ModelArtifact,
    cfg: &Config,
    objectives: &[Objective],
) -> Result<Sweep> {
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
    let mut points = Vec::new();
    for &f in &arch.core_clocks_mhz.value {
        let c = Config { clocks: Some(Clocks { core_mhz: f, mem_mhz: mem }), ..*cfg };
        let p = predict_kernel(k, arch, model, &c)?;
        points.push(SweepPoint {
            x: f,
            time_s: p.time_s,
            power_w: p.power_w,
            energy_j: p.energy_j,
            bottleneck: p.detail.bottleneck,
        });
    }
    let optima = optima(&points, objectives);
    Ok(Sweep { kind: SweepKind::CoreClock, points, optima })
}
