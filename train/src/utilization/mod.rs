//! Clock models on utilization profiles: fitting [`ClockModel`] on training jobs measured at several core
//! clocks, the DSO form (Wang et al., arXiv:2407.13096) fitted the same way as the peer baseline, the best
//! fixed clock chosen on the training jobs, and the held-out scores of all of them.
//!
//! Every choice (the inputs and ridge penalty of each parameter's linear model) is made by leave-one-
//! program-out cross-validation inside the training data; the test jobs are scored once. The fits are
//! deterministic (closed-form least squares and grids): there is no seed to take a median over.
//!
//! Runs are keyed by (core, memory) clock pair: data over several memory clocks trains a pair model
//! ([`gpumodel_models::utilization::model::MemoryModel`]), and [`Job::at`] reads a core clock at the
//! reference (highest) memory clock, so runs at other memory clocks are never mixed into a core-only curve.

pub mod fit;
pub mod pairs;
pub mod policy;
pub mod run;
pub mod score;

pub use fit::{ClockFitParams, fit_clock_model};
pub use score::{ClockEvaluation, evaluate};

use gpumodel_models::utilization::{ProfileSet, UtilizationProfile};
use std::collections::BTreeMap;

/// One job (application and input) measured at several clocks.
#[derive(Debug, Clone)]
pub struct Job {
    pub name: String,
    /// The benchmark program (the group of grouped validation).
    pub program: String,
    /// One profile per clock pair, ascending by core then memory clock; each has its measured time and
    /// power.
    pub runs: Vec<UtilizationProfile>,
}

impl Job {
    /// The run at core clock `mhz` (within 0.5 MHz) and the job's highest memory clock.
    pub fn at(&self, mhz: f64) -> Option<&UtilizationProfile> {
        self.at_pair(mhz, self.ref_mem_mhz())
    }

    /// The run at core clock `core` and memory clock `mem` (each within 0.5 MHz; `None`: a run without a
    /// memory clock, or any).
    pub fn at_pair(&self, core: f64, mem: Option<f64>) -> Option<&UtilizationProfile> {
        self.runs.iter().find(|r| {
            (r.core_mhz - core).abs() < 0.5
                && match (mem, r.mem_mhz) {
                    (Some(a), Some(b)) => (a - b).abs() < 0.5,
                    _ => true,
                }
        })
    }

    /// The highest memory clock of the job's runs (`None` when none records one).
    pub fn ref_mem_mhz(&self) -> Option<f64> {
        self.runs.iter().filter_map(|r| r.mem_mhz).reduce(f64::max)
    }
}

/// The distinct memory clocks of the jobs' runs (rounded to MHz), ascending.
pub fn mem_clocks(jobs: &[Job]) -> Vec<f64> {
    let mut m: Vec<f64> =
        jobs.iter().flat_map(|j| j.runs.iter().filter_map(|r| r.mem_mhz.map(f64::round))).collect();
    m.sort_by(f64::total_cmp);
    m.dedup();
    m
}

/// The jobs restricted to their runs at memory clock `mem` (within 0.5 MHz): a core-only view.
pub fn at_memory(jobs: &[Job], mem: f64) -> Vec<Job> {
    jobs.iter()
        .map(|j| Job {
            runs: j
                .runs
                .iter()
                .filter(|r| r.mem_mhz.is_some_and(|m| (m - mem).abs() < 0.5))
                .cloned()
                .collect(),
            ..j.clone()
        })
        .filter(|j| !j.runs.is_empty())
        .collect()
}

/// Groups profiles into jobs by name, keeping the runs with measured time and power at clocks ≥ `min_mhz`
/// (strictly above when `strict`).
pub fn jobs(set: &ProfileSet, min_mhz: Option<f64>) -> Vec<Job> {
    let mut by: BTreeMap<String, Job> = BTreeMap::new();
    for p in &set.profiles {
        if p.time_s.is_none() || p.power_w.is_none() {
            continue;
        }
        if let Some(m) = min_mhz
            && p.core_mhz <= m
        {
            continue;
        }
        let j = by.entry(p.name.clone()).or_insert_with(|| Job {
            name: p.name.clone(),
            program: p.program.clone().unwrap_or_else(|| p.name.clone()),
            runs: vec![],
        });
        j.runs.push(p.clone());
    }
    let mut out: Vec<Job> = by.into_values().collect();
    for j in &mut out {
        j.runs.sort_by(|a, b| {
            a.core_mhz
                .total_cmp(&b.core_mhz)
                .then(a.mem_mhz.unwrap_or(0.0).total_cmp(&b.mem_mhz.unwrap_or(0.0)))
        });
    }
    out
}

pub(crate) use gpumodel_models::stats::mean;

/// Median of a slice (NaN when empty).
pub(crate) fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 { s[n / 2] } else { (s[n / 2 - 1] + s[n / 2]) / 2.0 }
}
