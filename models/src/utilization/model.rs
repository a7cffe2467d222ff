//! The clock model: from one utilization profile at one core clock to time, power and energy at every
//! supported core clock (memory clock fixed), and the clock to run at.
//!
//! Physics first, every shape fitted on training data of one GPU, nothing of the GPU in the code:
//! * **Time** relative to the profile's clock, with `x = f_ref / f` (cycle time relative to the reference
//!   clock): `r(x) = 1 + slope · max(0, x − knee)`. Below the knee (`x < knee`, high clocks) the job is held
//!   by the memory clock, which does not move (the memory-bound floor); above it the time grows with the
//!   core cycle time. A compute-bound job has knee 1 and slope 1 (time ∝ 1/f). `knee` and `slope` are
//!   predicted from the profile by linear models fitted on training jobs.
//! * **Power**: `P(f) = P_static + P_dyn · g(f)`, `g = (V(f)/V_ref)² · f/f_ref` with one relative voltage
//!   per clock level (fitted on the training data, as the built-in physical model does), so
//!   `P(f)/P(f_ref) = s + (1 − s) · g(f)` with the static-and-idle share `s` predicted from the profile.
//!   The profile's own power anchors the curve; without it, the own-clock model predicts it:
//!   `P = a_l + g_l · (b₀ + Σ βᵢ·Uᵢ)` (idle and static power `a_l` and the V²f factor `g_l` per level,
//!   activity weights `βᵢ` on the DCGM fields).
//!
//! **Memory clock.** When the training data varied the memory clock (consumer GDDR boards), the model
//! covers (core, memory) pairs; with `y = m_ref / m` (memory cycle time relative to the reference memory
//! clock, the highest of the training data):
//! * time: the memory floor rises with the memory cycle time, with `b` (the job's memory sensitivity)
//!   predicted from the profile like knee and slope; floor and core term combine as [`MemTimeForm`] says
//!   (chosen by leave-one-program-out CV on the training data): `max(1 + b·(y − 1), 1 + slope·(x − knee))`,
//!   `1 + b·(y − 1) + slope·max(0, x − knee)`, or `max(b·y, 1 + slope·max(0, x − knee))`, where `b` is the
//!   memory time's share of the reference pair's time (DRAM traffic overlapping compute, its time
//!   proportional to the memory cycle time). At `y = 1` each is the core-only form.
//! * power: `P/P_ref = s + (1 − s − k)·g(f) + k·h(m)`, with `h` one fitted factor per memory level (1 at
//!   the reference) and the memory share `k` predicted from the profile; `k = 0` is the core-only form.
//!
//! With one memory clock in the training data none of this is present and the model is the core-only
//! one, figure for figure.

use super::{Field, UtilizationProfile};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// Version tag of the artifact.
pub const CLOCK_MODEL_FORMAT: &str = "gpumodel-clock-model/1";

/// A linear model of a profile's fields, with its output clamped to the range it was fitted on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Linear {
    pub inputs: Vec<Field>,
    pub intercept: f64,
    pub weights: Vec<f64>,
    /// Output bounds (the range of the fitted targets).
    pub min: f64,
    pub max: f64,
}

impl Linear {
    /// A constant.
    pub fn constant(v: f64) -> Linear {
        Linear { inputs: vec![], intercept: v, weights: vec![], min: v, max: v }
    }

    pub fn eval(&self, p: &UtilizationProfile) -> f64 {
        let y =
            self.intercept + self.inputs.iter().zip(&self.weights).map(|(f, w)| w * p.get(*f)).sum::<f64>();
        y.clamp(self.min, self.max)
    }
}

/// One supported core-clock level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Level {
    pub core_mhz: f64,
    /// `(V/V_ref)² · f/f_ref`, fitted (1 at the reference level).
    pub v2f: f64,
    /// The relative voltage that implies: `sqrt(v2f · f_ref / f)`.
    pub voltage: f64,
    /// Own-clock power model: idle and static power at this level, W.
    pub static_w: f64,
    /// Own-clock power model: the dynamic factor at this level (1 at the reference level).
    pub dynamic_factor: f64,
}

/// Power at the profile's own clock, from its fields alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OwnClockPower {
    pub inputs: Vec<Field>,
    /// Dynamic power at the reference level with every field 0, W.
    pub bias_w: f64,
    /// Dynamic power per unit of each field at the reference level, W.
    pub weights_w: Vec<f64>,
}

/// Figures of the fit, recorded in the artifact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Provenance {
    pub dataset: String,
    pub dataset_sha256: Option<String>,
    pub training_jobs: usize,
    pub training_programs: usize,
    /// The selection made inside the training data (inputs, ridge penalty) and its grouped-CV figures.
    pub selection: Vec<String>,
    pub command: String,
}

/// A fitted clock model for one GPU model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClockModel {
    pub format: String,
    pub gpu: String,
    /// The reference core clock (the highest level), MHz.
    pub ref_core_mhz: f64,
    /// The memory clock of the training data, MHz, when fixed.
    pub mem_mhz: Option<f64>,
    /// Supported levels, ascending.
    pub levels: Vec<Level>,
    pub knee: Linear,
    pub slope: Linear,
    pub static_share: Linear,
    pub own_clock_power: OwnClockPower,
    pub provenance: Provenance,
    /// Per objective, whether a fixed clock beat the model's pick on held-out training programs.
    #[serde(default)]
    pub policy: Vec<ObjectivePolicy>,
    /// The memory dimension, when the training data varied the memory clock; `None`: core clocks only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryModel>,
}

/// How the memory floor and the core term combine in the time of a pair model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemTimeForm {
    /// `max(1 + b·(y − 1), 1 + slope·(x − knee))`: the job waits on the slower of memory and core.
    Max,
    /// `1 + b·(y − 1) + slope·max(0, x − knee)`: memory and core time add.
    Sum,
    /// `max(b·y, 1 + slope·max(0, x − knee))`: the memory time, `b` of the reference pair's time and
    /// proportional to the memory cycle time, overlaps the core term; a job below the memory limit at the
    /// reference pair (`b < 1`) does not slow down until its memory time exceeds the core term.
    Overlap,
}

/// One supported memory-clock level of a pair model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemLevel {
    pub mem_mhz: f64,
    /// The memory power factor `h` (1 at the reference level).
    pub h: f64,
}

/// The memory dimension of a pair model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryModel {
    /// The reference memory clock (the highest level), MHz.
    pub ref_mem_mhz: f64,
    /// Supported memory levels, ascending.
    pub levels: Vec<MemLevel>,
    pub time_form: MemTimeForm,
    /// The memory sensitivity `b` of the time floor.
    pub sensitivity: Linear,
    /// The memory share `k` of power at the reference pair.
    pub share: Linear,
}

/// What to recommend for one objective, decided by leave-one-program-out regret on the training data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectivePolicy {
    /// `E`, `ED` or `ED2`.
    pub objective: String,
    /// The fixed clock to run every job at, when it beat the model's pick; `None`: the model's pick.
    pub fixed_mhz: Option<f64>,
    /// The memory clock of the fixed pair (pair models only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixed_mem_mhz: Option<f64>,
    /// Mean measured regret (%) over the held-out jobs of the model's pick and of the fixed clock.
    pub model_regret_pct: f64,
    pub fixed_regret_pct: f64,
    pub held_out_jobs: usize,
}

/// One clock of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClockPoint {
    pub core_mhz: f64,
    /// The memory clock of the point (pair models only), MHz.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mem_mhz: Option<f64>,
    pub time_s: f64,
    pub power_w: f64,
    pub energy_j: f64,
    /// Time relative to the fastest clock of the sweep.
    pub slowdown: f64,
}

/// A sweep's optima (indices into the points).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Optima {
    pub energy: usize,
    pub ed: usize,
    pub ed2: usize,
    pub fastest: usize,
    /// Lowest energy with slowdown ≤ 1 + bound (the bound given).
    pub within_slowdown: Option<(f64, usize)>,
}

impl ClockModel {
    /// Reads an artifact and checks it.
    pub fn from_json(text: &str, origin: &str) -> Result<ClockModel> {
        let m: ClockModel = serde_json::from_str(text).map_err(|e| Error::Document {
            file: origin.to_string(),
            message: format!("not a clock model: {e}"),
        })?;
        if m.format != CLOCK_MODEL_FORMAT {
            return Err(Error::Mismatch(format!(
                "{origin}: format '{}', expected '{CLOCK_MODEL_FORMAT}': retrain with this version",
                m.format
            )));
        }
        if m.levels.is_empty() || m.levels.iter().any(|l| !(l.core_mhz > 0.0 && l.v2f > 0.0)) {
            return Err(Error::Mismatch(format!("{origin}: the clock model has no valid clock levels")));
        }
        Ok(m)
    }

    fn x(&self, mhz: f64) -> f64 {
        self.ref_core_mhz / mhz
    }

    /// Relative time r(x) for this profile's knee and slope.
    fn r(&self, knee: f64, slope: f64, mhz: f64) -> f64 {
        1.0 + slope * (self.x(mhz) - knee).max(0.0)
    }

    /// A per-level quantity at any clock inside the levels' span (linear in MHz between levels).
    fn interp(&self, mhz: f64, get: impl Fn(&Level) -> f64) -> f64 {
        let l = &self.levels;
        if mhz <= l[0].core_mhz {
            return get(&l[0]);
        }
        for w in l.windows(2) {
            if mhz <= w[1].core_mhz {
                let a = (mhz - w[0].core_mhz) / (w[1].core_mhz - w[0].core_mhz);
                return get(&w[0]) * (1.0 - a) + get(&w[1]) * a;
            }
        }
        get(&l[l.len() - 1])
    }

    /// Checks that the profile's clock (pair, for a pair model) is one this model covers.
    pub fn check_profile(&self, p: &UtilizationProfile) -> Result<()> {
        let (lo, hi) = (self.levels[0].core_mhz, self.levels[self.levels.len() - 1].core_mhz);
        if p.core_mhz < lo * 0.98 || p.core_mhz > hi * 1.02 {
            return Err(Error::Mismatch(format!(
                "'{}' was profiled at {:.0} MHz, outside this model's clocks ({lo:.0}–{hi:.0} MHz on {}): profile \
                 the job at a clock in that range or use a model of its GPU",
                p.name, p.core_mhz, self.gpu
            )));
        }
        if let Some(mm) = &self.memory {
            let (lo, hi) = (mm.levels[0].mem_mhz, mm.levels[mm.levels.len() - 1].mem_mhz);
            if let Some(a) = p.mem_mhz
                && (a < lo * 0.98 || a > hi * 1.02)
            {
                return Err(Error::Mismatch(format!(
                    "'{}' ran with memory at {a:.0} MHz, outside this model's memory clocks ({lo:.0}–{hi:.0} MHz): \
                     profile at a memory clock in that range",
                    p.name
                )));
            }
            return Ok(());
        }
        if let (Some(a), Some(b)) = (p.mem_mhz, self.mem_mhz)
            && (a - b).abs() > 0.02 * b
        {
            return Err(Error::Mismatch(format!(
                "'{}' ran with memory at {a:.0} MHz; this model was fitted at {b:.0} MHz: profile at that memory clock",
                p.name
            )));
        }
        Ok(())
    }

    /// This model carried to another GPU's core clocks `core_mhz` (the highest becomes the reference), for
    /// a GPU without a clock model of its own. The time form and the static share are in relative units
    /// and are kept; each new level takes the V²f factor this model has at the same fraction of its highest
    /// clock, and below this model's lowest level the voltage stays at that level's (dynamic power ∝ f).
    /// The own-clock power model is in watts of this model's GPU and is zeroed: the profile must carry its
    /// power. A pair model's memory dimension is dropped (another GPU's memory clocks and memory power are
    /// not this one's): the result is a core-clock model at the reference memory clock.
    /// `None` when fewer than two distinct positive clocks are given.
    pub fn rebased(&self, core_mhz: &[f64], gpu: &str) -> Option<ClockModel> {
        let mut mhz: Vec<f64> = core_mhz.iter().copied().filter(|f| f.is_finite() && *f > 0.0).collect();
        mhz.sort_by(f64::total_cmp);
        mhz.dedup();
        let (&top, lowest) = (mhz.last()?, self.levels[0].core_mhz);
        if mhz.len() < 2 {
            return None;
        }
        let levels = mhz
            .iter()
            .map(|&f| {
                let here = f / top * self.ref_core_mhz;
                let v2f = if here < lowest {
                    self.levels[0].v2f * here / lowest
                } else {
                    self.interp(here, |l| l.v2f)
                };
                Level {
                    core_mhz: f,
                    v2f,
                    voltage: (v2f * top / f).sqrt(),
                    static_w: 0.0,
                    dynamic_factor: v2f,
                }
            })
            .collect();
        Some(ClockModel {
            gpu: gpu.to_string(),
            ref_core_mhz: top,
            mem_mhz: None,
            levels,
            own_clock_power: OwnClockPower { inputs: vec![], bias_w: 0.0, weights_w: vec![] },
            // Fixed clocks are clocks of this model's GPU.
            policy: vec![],
            memory: None,
            ..self.clone()
        })
    }

    /// Power at the profile's own clock from its fields alone (model (a)), W.
    pub fn own_clock_power_w(&self, p: &UtilizationProfile) -> f64 {
        let o = &self.own_clock_power;
        let dynamic = o.bias_w + o.inputs.iter().zip(&o.weights_w).map(|(f, w)| w * p.get(*f)).sum::<f64>();
        self.interp(p.core_mhz, |l| l.static_w)
            + self.interp(p.core_mhz, |l| l.dynamic_factor) * dynamic.max(0.0)
    }

    /// The memory power factor `h` at any memory clock inside the levels' span (linear between levels).
    fn interp_h(mm: &MemoryModel, mhz: f64) -> f64 {
        let l = &mm.levels;
        if mhz <= l[0].mem_mhz {
            return l[0].h;
        }
        for w in l.windows(2) {
            if mhz <= w[1].mem_mhz {
                let a = (mhz - w[0].mem_mhz) / (w[1].mem_mhz - w[0].mem_mhz);
                return w[0].h * (1.0 - a) + w[1].h * a;
            }
        }
        l[l.len() - 1].h
    }

    /// Time (s, or relative to the profiled run when it has no time) and power (W) at each level (each
    /// (core, memory) pair of a pair model, by core clock then memory clock).
    pub fn sweep(&self, p: &UtilizationProfile) -> Vec<ClockPoint> {
        let (knee, slope, s) = (self.knee.eval(p), self.slope.eval(p), self.static_share.eval(p));
        let t_p = p.time_s.unwrap_or(1.0);
        let p_p = p.power_w.unwrap_or_else(|| self.own_clock_power_w(p));
        let mut pts: Vec<ClockPoint> = match &self.memory {
            None => {
                let r_p = self.r(knee, slope, p.core_mhz);
                let q_p = s + (1.0 - s) * self.interp(p.core_mhz, |l| l.v2f);
                self.levels
                    .iter()
                    .map(|l| {
                        let time_s = t_p * self.r(knee, slope, l.core_mhz) / r_p;
                        let power_w = p_p * (s + (1.0 - s) * l.v2f) / q_p;
                        ClockPoint {
                            core_mhz: l.core_mhz,
                            mem_mhz: None,
                            time_s,
                            power_w,
                            energy_j: time_s * power_w,
                            slowdown: 1.0,
                        }
                    })
                    .collect()
            }
            Some(mm) => {
                let b = mm.sensitivity.eval(p);
                let k = mm.share.eval(p).clamp(0.0, (1.0 - s).max(0.0));
                let m_p = p.mem_mhz.unwrap_or(mm.ref_mem_mhz);
                let r =
                    |f: f64, m: f64| pair_time(mm.time_form, knee, slope, b, self.x(f), mm.ref_mem_mhz / m);
                let q = |g: f64, h: f64| s + (1.0 - s - k) * g + k * h;
                let r_p = r(p.core_mhz, m_p);
                let q_p = q(self.interp(p.core_mhz, |l| l.v2f), Self::interp_h(mm, m_p));
                self.levels
                    .iter()
                    .flat_map(|l| mm.levels.iter().map(move |ml| (l, ml)))
                    .map(|(l, ml)| {
                        let time_s = t_p * r(l.core_mhz, ml.mem_mhz) / r_p;
                        let power_w = p_p * q(l.v2f, ml.h) / q_p;
                        ClockPoint {
                            core_mhz: l.core_mhz,
                            mem_mhz: Some(ml.mem_mhz),
                            time_s,
                            power_w,
                            energy_j: time_s * power_w,
                            slowdown: 1.0,
                        }
                    })
                    .collect()
            }
        };
        let fastest = pts.iter().map(|q| q.time_s).fold(f64::INFINITY, f64::min);
        for q in &mut pts {
            q.slowdown = q.time_s / fastest;
        }
        pts
    }
}

/// Relative time of a pair model at `x = f_ref/f`, `y = m_ref/m` for a job's knee, slope and memory
/// sensitivity `b`. At `y = 1` both forms are the core-only `1 + slope·max(0, x − knee)`.
pub fn pair_time(form: MemTimeForm, knee: f64, slope: f64, b: f64, x: f64, y: f64) -> f64 {
    let floor = 1.0 + b * (y - 1.0);
    match form {
        MemTimeForm::Max => floor.max(1.0 + slope * (x - knee)),
        MemTimeForm::Sum => floor + slope * (x - knee).max(0.0),
        MemTimeForm::Overlap => (b * y).max(1.0 + slope * (x - knee).max(0.0)),
    }
}

/// The E, ED, ED² optima of a sweep and the lowest-energy clock within `max_slowdown` (0.05 = 5%).
pub fn optima(points: &[ClockPoint], max_slowdown: Option<f64>) -> Optima {
    let argmin = |key: &dyn Fn(&ClockPoint) -> f64| {
        (0..points.len()).min_by(|&a, &b| key(&points[a]).total_cmp(&key(&points[b]))).unwrap_or(0)
    };
    let within = max_slowdown.and_then(|b| {
        (0..points.len())
            .filter(|&i| points[i].slowdown <= 1.0 + b + 1e-12)
            .min_by(|&a, &c| points[a].energy_j.total_cmp(&points[c].energy_j))
            .map(|i| (b, i))
    });
    Optima {
        energy: argmin(&|q| q.energy_j),
        ed: argmin(&|q| q.energy_j * q.time_s),
        ed2: argmin(&|q| q.energy_j * q.time_s * q.time_s),
        fastest: argmin(&|q| q.time_s),
        within_slowdown: within,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::utilization::Source;

    fn model() -> ClockModel {
        let lv = |mhz: f64, v2f: f64| Level {
            core_mhz: mhz,
            v2f,
            voltage: 1.0,
            static_w: 40.0,
            dynamic_factor: v2f,
        };
        ClockModel {
            format: CLOCK_MODEL_FORMAT.into(),
            gpu: "test".into(),
            ref_core_mhz: 1000.0,
            mem_mhz: None,
            levels: vec![lv(500.0, 0.3), lv(800.0, 0.65), lv(1000.0, 1.0)],
            knee: Linear {
                inputs: vec![Field::Drama],
                intercept: 1.0,
                weights: vec![1.0],
                min: 1.0,
                max: 3.0,
            },
            slope: Linear::constant(1.0),
            static_share: Linear::constant(0.4),
            own_clock_power: OwnClockPower {
                inputs: vec![Field::Smact],
                bias_w: 10.0,
                weights_w: vec![100.0],
            },
            provenance: Provenance::default(),
            policy: vec![],
            memory: None,
        }
    }

    fn job(drama: f64) -> UtilizationProfile {
        UtilizationProfile {
            name: "j".into(),
            program: None,
            source: Source::Document,
            gpu: None,
            device: None,
            fields: [(Field::Drama, drama), (Field::Smact, 0.5)].into_iter().collect(),
            core_mhz: 1000.0,
            mem_mhz: None,
            power_w: Some(200.0),
            time_s: Some(10.0),
            samples: 1,
        }
    }

    #[test]
    fn compute_bound_time_scales_with_cycle_time_and_power_with_v2f() {
        let pts = model().sweep(&job(0.0));
        // knee 1, slope 1: t = 10 · 1000/f.
        assert!((pts[0].time_s - 20.0).abs() < 1e-12 && (pts[1].time_s - 12.5).abs() < 1e-12);
        // P = 200 · (0.4 + 0.6 · v2f).
        assert!((pts[0].power_w - 200.0 * (0.4 + 0.6 * 0.3)).abs() < 1e-9);
        assert_eq!(pts[2].power_w, 200.0);
    }

    #[test]
    fn a_memory_bound_job_keeps_its_time_above_the_knee() {
        // knee 1 + 0.5 = 1.5: flat down to 667 MHz, then linear in 1000/f.
        let pts = model().sweep(&job(0.5));
        assert!((pts[1].time_s - 10.0).abs() < 1e-12, "{pts:?}");
        assert!((pts[0].time_s - 15.0).abs() < 1e-12);
        let o = optima(&pts, Some(0.05));
        assert_eq!(o.fastest, 1, "ties go to the first (slowest clock) of the equally fast ones");
        assert_eq!(o.within_slowdown.map(|x| x.1), Some(1), "800 MHz costs no time and saves energy");
    }

    #[test]
    fn own_clock_power_is_static_plus_scaled_activity() {
        let m = model();
        let p = job(0.0);
        assert!((m.own_clock_power_w(&p) - (40.0 + 60.0)).abs() < 1e-12);
        let mut q = job(0.0);
        q.core_mhz = 650.0; // halfway between 500 and 800
        assert!((m.own_clock_power_w(&q) - (40.0 + 0.475 * 60.0)).abs() < 1e-9);
    }

    #[test]
    fn a_rebased_model_scales_by_relative_clock() {
        // Another GPU at twice the clocks: the same relative curve, the voltage floor below the old range.
        let m = model().rebased(&[2000.0, 1600.0, 1000.0, 500.0], "other").unwrap();
        let mhz: Vec<f64> = m.levels.iter().map(|l| l.core_mhz).collect();
        assert_eq!(
            (mhz, m.ref_core_mhz, m.gpu.as_str()),
            (vec![500.0, 1000.0, 1600.0, 2000.0], 2000.0, "other")
        );
        let v2f: Vec<f64> = m.levels.iter().map(|l| l.v2f).collect();
        // 500 MHz is a quarter of the top, below the old lowest level (half): 0.3 · 250/500.
        assert!((v2f[0] - 0.15).abs() < 1e-12 && (v2f[1] - 0.3).abs() < 1e-12, "{v2f:?}");
        assert!((v2f[2] - 0.65).abs() < 1e-12 && v2f[3] == 1.0, "{v2f:?}");
        // Time relative to the reference is unchanged: a compute-bound job doubles at half the top clock.
        let mut j = job(0.0);
        j.core_mhz = 2000.0;
        let pts = m.sweep(&j);
        assert!((pts[1].time_s - 20.0).abs() < 1e-12, "{pts:?}");
        assert!(model().rebased(&[1500.0], "one").is_none(), "one clock is no sweep");
    }

    #[test]
    fn a_profile_outside_the_clock_range_is_refused() {
        let mut p = job(0.0);
        p.core_mhz = 1500.0;
        let msg = model().check_profile(&p).unwrap_err().to_string();
        assert!(msg.contains("500–1000 MHz"), "{msg}");
    }
    #[test]
    fn a_pair_model_at_the_reference_memory_clock_is_the_core_only_model() {
        let core_only = model();
        let mut pair = model();
        pair.memory = Some(MemoryModel {
            ref_mem_mhz: 1000.0,
            levels: vec![MemLevel { mem_mhz: 800.0, h: 0.7 }, MemLevel { mem_mhz: 1000.0, h: 1.0 }],
            time_form: MemTimeForm::Max,
            sensitivity: Linear::constant(0.5),
            share: Linear::constant(0.0),
        });
        let mut j = job(0.5);
        j.mem_mhz = Some(1000.0);
        let (a, b) = (core_only.sweep(&j), pair.sweep(&j));
        assert_eq!(b.len(), 2 * a.len());
        let at_ref: Vec<&ClockPoint> = b.iter().filter(|q| q.mem_mhz == Some(1000.0)).collect();
        for (x, y) in a.iter().zip(at_ref) {
            assert!(
                (x.time_s - y.time_s).abs() < 1e-12 && (x.power_w - y.power_w).abs() < 1e-9,
                "{x:?} {y:?}"
            );
        }
        // At 800 MHz memory (y = 1.25) the floor is 1 + 0.5·0.25: the memory-bound job slows by 12.5% at
        // the top core clock; with k = 0 its power does not move with the memory clock.
        let top_low = b.iter().find(|q| q.core_mhz == 1000.0 && q.mem_mhz == Some(800.0)).unwrap();
        assert!((top_low.time_s - 11.25).abs() < 1e-12 && (top_low.power_w - 200.0).abs() < 1e-9);
        // The sum form adds the core term to the floor instead.
        assert!((pair_time(MemTimeForm::Sum, 1.0, 1.0, 0.5, 2.0, 1.25) - 2.125).abs() < 1e-12);
        assert!((pair_time(MemTimeForm::Max, 1.0, 1.0, 0.5, 2.0, 1.25) - 2.0).abs() < 1e-12);
        // The overlap form: a job with memory time 0.6 of its reference time is not slowed by a memory
        // clock 1.25× slower (0.75 < 1), and one 1.5× slower at 0.9 (1.35) waits on memory.
        assert!((pair_time(MemTimeForm::Overlap, 1.0, 1.0, 0.6, 1.0, 1.25) - 1.0).abs() < 1e-12);
        assert!((pair_time(MemTimeForm::Overlap, 1.0, 1.0, 0.9, 1.0, 1.5) - 1.35).abs() < 1e-12);
        assert!((pair_time(MemTimeForm::Overlap, 1.0, 1.0, 0.9, 2.0, 1.5) - 2.0).abs() < 1e-12);
        // Any covered pair is accepted; a memory clock outside the levels is refused; a rebased model drops
        // the memory dimension.
        j.mem_mhz = Some(800.0);
        assert!(pair.check_profile(&j).is_ok());
        j.mem_mhz = Some(1500.0);
        assert!(pair.check_profile(&j).unwrap_err().to_string().contains("800–1000 MHz"));
        assert!(pair.rebased(&[500.0, 1000.0], "other").unwrap().memory.is_none());
    }
}
