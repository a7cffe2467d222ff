//! One kernel at one configuration: time with its breakdown, power, energy.

pub mod fallback;
pub mod gpu;

use crate::calibration::TimeCalibration;
use crate::error::{Error, Result};
use crate::power::base_values;
use gpumodel_models::arch::ArchProfile;
use gpumodel_models::artifact::ModelArtifact;
use gpumodel_models::features::input_vector;
use gpumodel_models::profile::KernelProfile;
use gpumodel_models::timing::{
    COMPONENTS, Clocks, Occupancy, Timing, TimingConfig, TimingInputs, occupancy, predict_time_with,
};
use serde::Serialize;

/// The configuration to predict at.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Config {
    /// Core and memory clocks; the architecture's defaults when `None`.
    pub clocks: Option<Clocks>,
    /// Active warps per SM (`--warps`); when `None`, the kernel's measured `achieved_occupancy` (code
    /// input) if it has one, else the occupancy ceilings.
    pub warps: Option<u32>,
    /// A time calibration (`gpumodel validate --save-calibration`, `predict --calibration`): when given,
    /// the calibrated time is the predicted time everywhere — at the requested clocks and at the default
    /// clocks where the utilizations are taken — so power (counter rates = totals / time) and energy
    /// follow it.
    pub calibration: Option<TimeCalibration>,
    /// The timing model's structural options: the default (additive replays) on a new GPU; a
    /// calibration file sets the structure its factors were fitted to.
    pub timing: TimingConfig,
    /// Answer with the kernel's measured time where the profile holds one made on this GPU at these clocks
    /// (and no `--warps` asks for another configuration): no model beats a measurement of the same run.
    /// `predict` sets it; `validate`, which scores the timing model against those measurements, does not.
    pub use_measured_time: bool,
}

/// One timing-model component: its time, its share of Σ components (paper Fig. 5.7) and its access
/// ratio, transactions per executed instruction (paper Fig. 5.14; the per-SM divisor cancels).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Component {
    pub name: &'static str,
    pub time_s: f64,
    pub share: f64,
    /// `None` for compute and sync, which are not memory transactions.
    pub access_ratio: Option<f64>,
}

/// Time prediction: occupancy, the timing model's breakdown and the bottleneck.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimePrediction {
    pub kernel: String,
    pub arch: String,
    pub clocks: Clocks,
    pub occupancy: Occupancy,
    /// Predicted kernel time, seconds: the timing model's, calibrated when a calibration was given.
    pub time_s: f64,
    /// Whether `time_s` is calibrated (`gpumodel predict --calibration`).
    pub calibrated: bool,
    /// Whether `time_s` is the profile's measured time (made on this GPU at these clocks) rather than a
    /// prediction; the breakdown and bottleneck are still the timing model's.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub measured: bool,
    pub bottleneck: &'static str,
    pub bottleneck_share: f64,
    pub components: Vec<Component>,
    /// The timing model's own result (uncalibrated): its time, bound, overlapped and sync parts, which a
    /// calibration combines.
    pub timing: Timing,
}

/// Time, power and energy of a kernel at one configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prediction {
    /// Predicted kernel time, seconds.
    pub time_s: f64,
    /// Predicted average power, W.
    pub power_w: f64,
    /// E = P·T (paper eq. 5.14), J.
    pub energy_j: f64,
    /// Occupancy, breakdown and bottleneck.
    pub detail: TimePrediction,
    /// The power model's inputs, by name, as fed to it.
    pub model_inputs: Vec<(String, f64)>,
    /// When the profile lacked some of the power model's inputs: the line on the others that gave
    /// `power_w` instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power_fallback: Option<crate::power::PowerFallback>,
}

fn checked_clocks(arch: &ArchProfile, cfg: &Config) -> Result<Clocks> {
    let c = cfg.clocks.unwrap_or_else(|| Clocks::default_for(arch));
    if !(c.core_mhz.is_finite() && c.core_mhz > 0.0 && c.mem_mhz.is_finite() && c.mem_mhz > 0.0) {
        return Err(Error::Invalid(format!(
            "clocks must be positive MHz, got core {} and memory {}",
            c.core_mhz, c.mem_mhz
        )));
    }
    Ok(c)
}

/// The warps cap: `--warps`, else the measured achieved occupancy rounded up to whole blocks.
pub(crate) fn warps_cap(k: &KernelProfile, arch: &ArchProfile, cfg: &Config) -> Option<u32> {
    cfg.warps.or_else(|| {
        let occ = k.code.get("achieved_occupancy").copied().filter(|o| *o > 0.0 && *o <= 1.0)?;
        let wpb = arch.warps_per_block(k.launch.threads_per_block()).max(1);
        let max = arch.max_warps_per_sm.value as u32;
        let w = (occ * f64::from(max)).ceil() as u32;
        Some(w.div_ceil(wpb).saturating_mul(wpb).clamp(wpb, max.max(wpb)))
    })
}

/// The predicted time at `clocks`: the timing model's, with `cal` applied when given.
pub(crate) fn time_at(
    x: &TimingInputs,
    arch: &ArchProfile,
    occ: &Occupancy,
    clocks: Clocks,
    cal: Option<&TimeCalibration>,
    timing: TimingConfig,
) -> Timing {
    let t = predict_time_with(x, arch, occ, clocks, timing);
    match cal {
        Some(c) => c.apply(&t),
        None => t,
    }
}

fn time_with(
    k: &KernelProfile,
    x: &TimingInputs,
    arch: &ArchProfile,
    occ: Occupancy,
    clocks: Clocks,
    cal: Option<&TimeCalibration>,
    cfg: TimingConfig,
) -> TimePrediction {
    let timing = predict_time_with(x, arch, &occ, clocks, cfg);
    let time_s = cal.map_or(timing.time_s, |c| c.apply(&timing).time_s);
    let shares = timing.shares();
    let ratio = |tx: f64| if x.inst > 0.0 { Some(tx / x.inst) } else { None };
    let access = [
        ratio(x.load_tx),
        ratio(x.store_tx),
        ratio(x.shared_base),
        ratio(x.shared_conflicts),
        ratio(x.tex_queries),
        None,
        None,
    ];
    let components = (0..COMPONENTS.len())
        .map(|i| Component {
            name: COMPONENTS[i],
            time_s: timing.components_s[i],
            share: shares[i],
            access_ratio: access[i],
        })
        .collect();
    let (bottleneck, bottleneck_share) = timing.bottleneck();
    TimePrediction {
        kernel: k.name.clone(),
        arch: arch.name.clone(),
        clocks,
        occupancy: occ,
        time_s,
        calibrated: cal.is_some(),
        measured: false,
        bottleneck,
        bottleneck_share,
        components,
        timing,
    }
}

/// Predicts a kernel's time and breakdown (no power model needed), calibrated when `cfg` has a
/// calibration.
pub fn predict_time_only(k: &KernelProfile, arch: &ArchProfile, cfg: &Config) -> Result<TimePrediction> {
    let clocks = checked_clocks(arch, cfg)?;
    let x = TimingInputs::from_profile(k)?;
    let occ = occupancy(&k.launch, arch, warps_cap(k, arch, cfg))?;
    Ok(time_with(k, &x, arch, occ, clocks, cfg.calibration.as_ref(), cfg.timing))
}

/// Predicts time (the timing model at `cfg`, calibrated when `cfg` has a calibration), power (`model`
/// fed with the kernel's counter rates at the predicted time, see [`crate::power`]) and energy E = P·T.
/// The error names what the kernel profile lacks or what the model needs that a kernel profile cannot
/// provide.
pub fn predict_kernel(
    k: &KernelProfile,
    arch: &ArchProfile,
    model: &ModelArtifact,
    cfg: &Config,
) -> Result<Prediction> {
    let cal = cfg.calibration.as_ref();
    let clocks = checked_clocks(arch, cfg)?;
    let x = TimingInputs::from_profile(k)?;
    let occ = occupancy(&k.launch, arch, warps_cap(k, arch, cfg))?;
    let default = Clocks::default_for(arch);
    let t0 =
        if clocks == default { None } else { Some(time_at(&x, arch, &occ, default, cal, cfg.timing).time_s) };
    let mut detail = time_with(k, &x, arch, occ, clocks, cal, cfg.timing);
    if let Some(t) = measured_time_here(k, arch, cfg, clocks) {
        detail.time_s = t;
        detail.measured = true;
    }
    let base = base_values(k, &x, arch, t0.unwrap_or(detail.time_s), detail.time_s, clocks);
    let inputs = input_vector(model, |c| base.get(c));
    if inputs.is_err()
        && let Some((power_w, fallback, fed)) = crate::power::subset_power(model, |c| base.get(c))
    {
        return Ok(Prediction {
            time_s: detail.time_s,
            power_w,
            energy_j: power_w * detail.time_s,
            model_inputs: fed,
            power_fallback: Some(fallback),
            detail,
        });
    }
    let inputs = inputs.map_err(|e| {
        // Power inputs the profile lacks: name the counters that give each, so the export can be redone.
        let lacking: Vec<String> = gpumodel_models::power_inputs::POWER_INPUTS
            .iter()
            .filter(|p| model.inputs.iter().any(|i| i == p.name) && base.get(p.name).is_none())
            .map(|p| format!("{} ({})", p.name, gpumodel_models::power_inputs::needs(p)))
            .collect();
        if lacking.is_empty() {
            Error::Mismatch(format!(
                "{e}; a kernel profile provides {} (and counter totals by name)",
                crate::power::UTILIZATIONS.join(", ") + ", core_mhz, mem_mhz, time_ms"
            ))
        } else {
            Error::Mismatch(format!(
                "kernel '{}' lacks the counters of the power model's input(s) {}: profile them (ncu: `gpumodel \
                 import --help` lists the metrics) or use a power model trained without them",
                k.name,
                lacking.join(", ")
            ))
        }
    })?;
    let power_w = model.predict_one(&inputs);
    if !power_w.is_finite() {
        return Err(Error::Invalid(format!("the power model returned {power_w} W for kernel '{}'", k.name)));
    }
    Ok(Prediction {
        time_s: detail.time_s,
        power_w,
        energy_j: power_w * detail.time_s,
        model_inputs: model.inputs.iter().cloned().zip(inputs).collect(),
        power_fallback: None,
        detail,
    })
}

/// The profile's measured time when it answers this question exactly: made on `arch`'s GPU (the profile's
/// `arch` names it), at `clocks` (within 0.5 %; a profile without a memory clock counts as measured at the
/// board's default one), with no `--warps` asking for another configuration.
pub fn measured_time_here(
    k: &KernelProfile,
    arch: &ArchProfile,
    cfg: &Config,
    clocks: Clocks,
) -> Option<f64> {
    if !cfg.use_measured_time || cfg.warps.is_some() {
        return None;
    }
    let on = k.arch.as_deref()?;
    if !arch.names_gpu(on) {
        return None;
    }
    let m = &k.measured;
    let close = |a: f64, b: f64| (a - b).abs() <= 0.005 * b;
    // A profiler export without the memory clock was measured at the board's memory clock, unless the
    // user set another: only the default memory clock is taken as the measured one.
    let mem = m.mem_mhz.unwrap_or(arch.mem_mhz.value);
    (m.core_mhz.is_some_and(|c| close(c, clocks.core_mhz)) && close(mem, clocks.mem_mhz))
        .then_some(m.time_s)
        .flatten()
}

/// How far from its training mean, in training standard deviations, a power-model input may be before
/// the prediction is flagged as extrapolated. An artifact records each input's mean and standard
/// deviation, not its range; no training row of the shipped Titan X models is beyond 3.6.
pub const INPUT_EXTRAPOLATION_SIGMAS: f64 = 4.0;

/// One line per power-model input of `p` more than [`INPUT_EXTRAPOLATION_SIGMAS`] standard deviations
/// from the model's training mean: predicted, but outside what the model was trained on.
pub fn input_extrapolation(model: &ModelArtifact, p: &Prediction) -> Vec<String> {
    inputs_extrapolation(model, &p.model_inputs)
}

/// The same for power-model inputs given by name (all of the model's, or the part a fallback line used).
pub fn inputs_extrapolation(model: &ModelArtifact, inputs: &[(String, f64)]) -> Vec<String> {
    let s = &model.input_scaling;
    inputs
        .iter()
        .filter_map(|(name, x)| {
            let i = model.inputs.iter().position(|n| n == name)?;
            let (mean, std) = (s.mean.get(i)?, s.std.get(i)?);
            let z = (x - mean) / std;
            (std.is_finite() && *std > 0.0 && z.abs() > INPUT_EXTRAPOLATION_SIGMAS).then(|| {
                format!(
                    "power-model input {name} = {} is {z:+.1} standard deviations from its training mean {} \
                     (beyond ±{INPUT_EXTRAPOLATION_SIGMAS}): extrapolated",
                    round3(*x),
                    round3(*mean)
                )
            })
        })
        .collect()
}

/// A value with three significant decimals for a message (`0.154`, `879.75`, `2000`).
fn round3(x: f64) -> f64 {
    if x.abs() >= 100.0 { (x * 100.0).round() / 100.0 } else { (x * 1000.0).round() / 1000.0 }
}
