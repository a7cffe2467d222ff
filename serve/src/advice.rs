//! Clock advice: per GPU with a clock model, the SM clock that model recommends for the activity of the
//! last window (`gpumodel_advice_sm_clock_hertz`, one series per objective), and for a model over (core,
//! memory) clock pairs the memory clock of the same pair (`gpumodel_advice_memory_clock_hertz`).
//!
//! The advice is per GPU: the clocks are set per GPU, so the processes or MIG instances that share one
//! share its clock, and the window's activity is theirs together. A MIG instance with GPM activity also
//! gets its own advice ([`Advisor::for_instance`]): the clock the GPU's model recommends for the instance's
//! activity alone (GPM's SM and DRAM utilization, ratios of the instance's own SMs and bandwidth, taken as
//! the whole-GPU activity of the same work), which says which instances a shared clock serves and which it
//! does not.
//!
//! Each tick adds the GPU's activity over the tick to the window: SM activity = Σ over the tick's
//! processes of their SM utilization, DRAM activity = Σ of their memory utilization, each clamped to
//! [0, 1], with the board power and the SM and memory clocks. NVML's per-process memory utilization is the
//! share of time the device memory was busy: the closest live figure to DCGM's DRAMA (the field the clock
//! models are fitted on) without GPM metrics, and only a proxy of it.
//!
//! From the window's time-weighted means the advisor builds a utilization profile (DRAMA and SMACT, the
//! SM clock clamped into the model's clock span, the memory clock for a model over memory clocks, the mean
//! power, no run time) and sweeps the model over its clocks: the advice is the clock of least energy, of
//! least energy × delay, of least energy × delay², and of least energy within 5 % of the fastest time. For
//! an objective where the model's training found that one fixed clock beat its own pick on held-out
//! programs (the model's policy), the advice is that fixed clock, as `predict --profile` gives it.
//! A window without SM activity gives no advice.

use crate::telemetry::GpuInfo;
use gpumodel_models::utilization::model::{ClockModel, optima};
use gpumodel_models::utilization::{Field, Source, UtilizationProfile};
use std::collections::{BTreeMap, VecDeque};

/// The window's default length, s.
pub const WINDOW_S: f64 = 60.0;
/// The shortest and longest window, s.
pub const WINDOW_MIN_S: f64 = 5.0;
pub const WINDOW_MAX_S: f64 = 3600.0;
/// The slowdown bound of `energy_within_5pct`.
pub const MAX_SLOWDOWN: f64 = 0.05;
/// The `objective` label values, in the order of [`Advice::by_objective`].
pub const OBJECTIVES: [&str; 4] = ["energy", "ed", "ed2", "energy_within_5pct"];

/// One tick of a GPU, as the advisor records it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Tick {
    /// The reading's time (end of the tick), s.
    pub time_s: f64,
    /// The tick's length, s.
    pub dt_s: f64,
    /// Σ of the processes' SM utilization (1.0 = 100 %).
    pub sm: f64,
    /// Σ of the processes' memory utilization (1.0 = 100 %).
    pub dram: f64,
    pub power_w: Option<f64>,
    pub sm_mhz: Option<f64>,
    pub mem_mhz: Option<f64>,
}

/// The recommended SM clocks, MHz, each one of the model's levels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Advice {
    pub energy_mhz: f64,
    pub ed_mhz: f64,
    pub ed2_mhz: f64,
    pub within_5pct_mhz: f64,
    /// The memory clocks of the same points, MHz, in the order of [`OBJECTIVES`], for a model over
    /// (core, memory) clock pairs; `None` for a model over core clocks.
    pub memory_mhz: Option<[f64; 4]>,
}

impl Advice {
    /// Each objective's label value (as [`OBJECTIVES`]) and clock, MHz.
    pub fn by_objective(&self) -> [(&'static str, f64); 4] {
        let [e, ed, ed2, w] = OBJECTIVES;
        [(e, self.energy_mhz), (ed, self.ed_mhz), (ed2, self.ed2_mhz), (w, self.within_5pct_mhz)]
    }

    /// Each objective's label value and memory clock, MHz, for a model over clock pairs.
    pub fn memory_by_objective(&self) -> Option<[(&'static str, f64); 4]> {
        let m = self.memory_mhz?;
        Some([0, 1, 2, 3].map(|i| (OBJECTIVES[i], m[i])))
    }
}

/// The fields `model`'s time and power terms read besides DRAMA and SMACT, the two the live window has:
/// the advice takes them as 0, and the start-up line names them.
pub fn unread_fields(model: &ClockModel) -> Vec<Field> {
    let mut linears = vec![&model.knee, &model.slope, &model.static_share];
    if let Some(mm) = &model.memory {
        linears.extend([&mm.sensitivity, &mm.share]);
    }
    let mut out: Vec<Field> = Vec::new();
    for f in linears.into_iter().flat_map(|l| l.inputs.iter().copied()) {
        if f != Field::Drama && f != Field::Smact && !out.contains(&f) {
            out.push(f);
        }
    }
    out
}

/// One GPU's clock model and activity window, and the advice of the last tick.
#[derive(Debug, Clone)]
pub struct Advisor {
    model: ClockModel,
    gpu: GpuInfo,
    /// What the window is of, the profile's name.
    scope: String,
    window_s: f64,
    ticks: VecDeque<Tick>,
    advice: Option<Advice>,
}

impl Advisor {
    /// An advisor for `gpu` with `model` over a window of `window_s` seconds.
    pub fn new(model: ClockModel, gpu: GpuInfo, window_s: f64) -> Advisor {
        let scope = format!("GPU {} activity window", gpu.index);
        Advisor { model, gpu, scope, window_s, ticks: VecDeque::new(), advice: None }
    }

    /// An advisor for MIG GPU instance `gi` (`profile`) of `gpu`, with the GPU's model and window.
    pub fn for_instance(gpu_advisor: &Advisor, gi: u32, profile: &str) -> Advisor {
        let scope = format!("GPU {} MIG instance {gi} ({profile}) activity window", gpu_advisor.gpu.index);
        Advisor {
            model: gpu_advisor.model.clone(),
            gpu: gpu_advisor.gpu.clone(),
            scope,
            window_s: gpu_advisor.window_s,
            ticks: VecDeque::new(),
            advice: None,
        }
    }

    pub fn model(&self) -> &ClockModel {
        &self.model
    }

    pub fn window_s(&self) -> f64 {
        self.window_s
    }

    /// The advice for the window as of the last tick (`None` while the window holds no SM activity).
    pub fn advice(&self) -> Option<Advice> {
        self.advice
    }

    /// Adds a tick, forgets the ticks that ended a window's length or more before it, and advises anew.
    pub fn record(&mut self, t: Tick) {
        if !(t.time_s.is_finite() && t.dt_s.is_finite() && t.dt_s > 0.0) {
            return;
        }
        let clamp = |v: f64| if v.is_finite() { v.clamp(0.0, 1.0) } else { 0.0 };
        self.ticks.push_back(Tick { sm: clamp(t.sm), dram: clamp(t.dram), ..t });
        let oldest = t.time_s - self.window_s;
        while self.ticks.front().is_some_and(|f| f.time_s <= oldest) {
            self.ticks.pop_front();
        }
        self.advice = self.profile().and_then(|p| self.advise(&p));
    }

    /// The window's activity as a utilization profile; `None` when it holds no SM activity.
    pub fn profile(&self) -> Option<UtilizationProfile> {
        // Each tick weighs its length (at most the window's).
        let w = |t: &Tick| t.dt_s.min(self.window_s);
        let mean = |get: &dyn Fn(&Tick) -> Option<f64>| -> Option<f64> {
            let (sum, weight) = self
                .ticks
                .iter()
                .filter_map(|t| get(t).filter(|v| v.is_finite()).map(|v| (v * w(t), w(t))))
                .fold((0.0, 0.0), |(s, n), (v, k)| (s + v, n + k));
            (weight > 0.0).then(|| sum / weight)
        };
        let sm = mean(&|t| Some(t.sm))?;
        if sm <= 0.0 {
            return None;
        }
        let dram = mean(&|t| Some(t.dram))?;
        let m = &self.model;
        let (lo, hi) = (m.levels[0].core_mhz, m.levels[m.levels.len() - 1].core_mhz);
        // Without a reported SM clock the profile is at the model's reference (highest) clock.
        let core_mhz = mean(&|t| t.sm_mhz.filter(|f| *f > 0.0)).unwrap_or(m.ref_core_mhz).clamp(lo, hi);
        let mem_mhz = m.memory.as_ref().map(|mm| {
            let (lo, hi) = (mm.levels[0].mem_mhz, mm.levels[mm.levels.len() - 1].mem_mhz);
            mean(&|t| t.mem_mhz.filter(|f| *f > 0.0)).unwrap_or(mm.ref_mem_mhz).clamp(lo, hi)
        });
        Some(UtilizationProfile {
            name: self.scope.clone(),
            program: None,
            source: Source::Collector,
            gpu: Some(self.gpu.name.clone()),
            device: Some(format!("GPU {}", self.gpu.index)),
            fields: BTreeMap::from([(Field::Drama, dram), (Field::Smact, sm)]),
            core_mhz,
            mem_mhz,
            power_w: mean(&|t| t.power_w.filter(|p| *p > 0.0)),
            time_s: None,
            samples: self.ticks.len(),
        })
    }

    /// The model's optima for `p`, as the clocks of the chosen points.
    fn advise(&self, p: &UtilizationProfile) -> Option<Advice> {
        let points = self.model.sweep(p);
        if points.is_empty() || points.iter().any(|q| !(q.energy_j.is_finite() && q.time_s.is_finite())) {
            return None;
        }
        let o = optima(&points, Some(MAX_SLOWDOWN));
        // The fastest point is always within the bound; `within_slowdown` is `None` only without points.
        let within = o.within_slowdown.map_or(o.fastest, |(_, i)| i);
        // Where the model's training found that one fixed clock beat its own pick on held-out programs
        // (its policy), that clock is the advice, as `predict --profile` gives it.
        let fixed = |objective: &str| {
            let o = self.model.policy.iter().find(|o| o.objective == objective)?;
            Some((o.fixed_mhz?, o.fixed_mem_mhz))
        };
        let chosen = [("E", o.energy), ("ED", o.ed), ("ED2", o.ed2), ("", within)].map(|(objective, i)| {
            match fixed(objective) {
                Some((core, mem)) => (core, mem.or(points[i].mem_mhz)),
                None => (points[i].core_mhz, points[i].mem_mhz),
            }
        });
        let memory = chosen.map(|c| c.1);
        Some(Advice {
            energy_mhz: chosen[0].0,
            ed_mhz: chosen[1].0,
            ed2_mhz: chosen[2].0,
            within_5pct_mhz: chosen[3].0,
            memory_mhz: memory.iter().all(Option::is_some).then(|| memory.map(|m| m.unwrap_or_default())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shipped V100 clock model (`models/dvfs-trained/v100.json`): its knee, slope and static share
    /// are linear in DRAMA alone.
    fn v100() -> ClockModel {
        ClockModel::from_json(include_str!("../../models/dvfs-trained/v100.json"), "v100.json").unwrap()
    }

    fn gpu() -> GpuInfo {
        GpuInfo { index: 0, uuid: "GPU-v100".into(), name: "Tesla V100-SXM2-16GB".into() }
    }

    /// `n` one-second ticks ending at `start + 1 … start + n`, at the model's highest clock.
    fn feed(a: &mut Advisor, start: f64, n: usize, sm: f64, dram: f64, power_w: f64) {
        for k in 1..=n {
            a.record(Tick {
                time_s: start + k as f64,
                dt_s: 1.0,
                sm,
                dram,
                power_w: Some(power_w),
                sm_mhz: Some(1380.0),
                mem_mhz: Some(877.0),
            });
        }
    }

    /// A memory-bound job (DRAM busy 90 % of the time) waits on the memory, whose clock does not move: in
    /// the V100 model its knee grows with DRAMA (0.98 + 0.41·DRAMA: 1.35 at 0.9, 1 at 0.05), so its time
    /// stays flat down to `1380 MHz / knee` ≈ 1022 MHz, while a compute-bound job's time grows as soon as
    /// the clock drops. Hence the objectives that weigh time (ED, ED², least energy within 5 %) pick a lower
    /// or equal clock for the memory-bound window, and within 5 % strictly below the highest clock.
    ///
    /// For least energy the shipped model's policy holds: on its held-out training programs one fixed
    /// clock, 945 MHz, beat its own pick (mean regret 0.09 % against 3.04 %), so both windows are advised
    /// that clock, whatever their activity.
    #[test]
    fn a_memory_bound_window_is_advised_clocks_no_higher_than_the_knee_allows() {
        let m = v100();
        let drama = |d: f64| UtilizationProfile {
            name: "x".into(),
            program: None,
            source: Source::Collector,
            gpu: None,
            device: None,
            fields: BTreeMap::from([(Field::Drama, d)]),
            core_mhz: 1380.0,
            mem_mhz: None,
            power_w: Some(200.0),
            time_s: None,
            samples: 1,
        };
        let knee = m.knee.eval(&drama(0.9));
        assert!(knee > m.knee.eval(&drama(0.05)) + 0.2, "the premise: the knee grows with DRAMA");

        let mut memory = Advisor::new(m.clone(), gpu(), WINDOW_S);
        feed(&mut memory, 0.0, 30, 0.6, 0.9, 200.0);
        let mut compute = Advisor::new(m.clone(), gpu(), WINDOW_S);
        feed(&mut compute, 0.0, 30, 0.95, 0.05, 200.0);
        let (am, ac) = (memory.advice().unwrap(), compute.advice().unwrap());
        let both = format!("memory-bound {am:?}, compute-bound {ac:?}");
        assert!(am.ed_mhz <= ac.ed_mhz, "{both}");
        assert!(am.ed2_mhz <= ac.ed2_mhz, "{both}");
        assert!(am.within_5pct_mhz <= ac.within_5pct_mhz, "{both}");
        assert!(am.within_5pct_mhz < m.ref_core_mhz, "{both}");
        let fixed = m.policy.iter().find(|o| o.objective == "E").and_then(|o| o.fixed_mhz);
        assert_eq!(fixed, Some(945.0), "the premise: the model's policy for least energy");
        assert_eq!((am.energy_mhz, ac.energy_mhz), (945.0, 945.0), "{both}");

        let levels: Vec<f64> = m.levels.iter().map(|l| l.core_mhz).collect();
        for a in [am, ac] {
            for (objective, mhz) in a.by_objective() {
                assert!(levels.contains(&mhz), "{objective}: {mhz} MHz is not a level of {levels:?}");
            }
        }
    }

    #[test]
    fn an_idle_window_gives_no_advice() {
        let mut a = Advisor::new(v100(), gpu(), WINDOW_S);
        assert_eq!(a.advice(), None);
        feed(&mut a, 0.0, 10, 0.0, 0.0, 40.0);
        assert_eq!(a.advice(), None);
        assert!(a.profile().is_none());
    }

    /// A 5 s window after 10 s of memory-bound work and 10 s of compute-bound work holds only the latter:
    /// its profile's DRAMA is the compute-bound job's, and so is its advice. Then 5 s of idle clear it.
    #[test]
    fn the_window_forgets_ticks_older_than_its_length() {
        let mut a = Advisor::new(v100(), gpu(), 5.0);
        feed(&mut a, 0.0, 10, 0.6, 0.9, 200.0);
        feed(&mut a, 10.0, 10, 0.95, 0.05, 250.0);
        let p = a.profile().unwrap();
        assert!((p.get(Field::Drama) - 0.05).abs() < 1e-12, "{p:?}");
        assert!((p.get(Field::Smact) - 0.95).abs() < 1e-12, "{p:?}");
        assert_eq!(p.power_w, Some(250.0));
        assert_eq!(p.samples, 5);
        let mut fresh = Advisor::new(v100(), gpu(), 5.0);
        feed(&mut fresh, 0.0, 5, 0.95, 0.05, 250.0);
        assert_eq!(a.advice(), fresh.advice());

        feed(&mut a, 20.0, 5, 0.0, 0.0, 40.0);
        assert_eq!(a.advice(), None);
    }

    /// Time-weighted: a 3 s tick at DRAM 0.8 and a 1 s tick at 0.0 mean 0.6; sums over processes above 1
    /// count as 1; an SM clock outside the model's span is clamped into it.
    #[test]
    fn the_profile_is_the_time_weighted_mean_of_the_clamped_activity() {
        let mut a = Advisor::new(v100(), gpu(), WINDOW_S);
        let t = |time_s: f64, dt_s: f64, dram: f64| Tick {
            time_s,
            dt_s,
            sm: 1.7,
            dram,
            power_w: Some(100.0),
            sm_mhz: Some(2000.0),
            mem_mhz: None,
        };
        a.record(t(3.0, 3.0, 0.8));
        a.record(t(4.0, 1.0, 0.0));
        let p = a.profile().unwrap();
        assert!((p.get(Field::Drama) - 0.6).abs() < 1e-12, "{p:?}");
        assert_eq!(p.get(Field::Smact), 1.0);
        assert_eq!(p.core_mhz, 1380.0);
        assert_eq!(p.mem_mhz, None);
    }
}
