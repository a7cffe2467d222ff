//! Which clock to recommend for each objective (E, E·D, E·D²): the clock model's pick, or one fixed clock
//! for every job — decided inside the training data by leave-one-program-out: for each program, the model
//! is fitted and the fixed clock chosen on the other programs, and both are scored by the measured regret
//! of their picks on the held-out program's jobs. The lower mean regret over all held-out jobs wins; the
//! fixed clock recommended is then the one chosen on every training job.

use super::fit::{ClockFitParams, fit_clock_model};
use super::score::best_fixed_pair;
use super::{Job, mean};
use crate::Result;
use gpumodel_models::utilization::model::{ClockModel, ObjectivePolicy};

/// The objectives, as E·D^k.
pub const OBJECTIVES: [(&str, i32); 3] = [("E", 0), ("ED", 1), ("ED2", 2)];

/// A clock pair: core MHz and, for a pair model, memory MHz.
pub type Pair = (f64, Option<f64>);

/// The pairs a model covers: its core levels, times its memory levels for a pair model.
pub fn model_pairs(model: &ClockModel) -> Vec<Pair> {
    match &model.memory {
        None => model.levels.iter().map(|l| (l.core_mhz, None)).collect(),
        Some(mm) => model
            .levels
            .iter()
            .flat_map(|l| mm.levels.iter().map(move |m| (l.core_mhz, Some(m.mem_mhz))))
            .collect(),
    }
}

/// Whether two pairs are the same clocks (a pair without a memory clock matches any memory clock).
fn same(a: Pair, b: Pair) -> bool {
    (a.0 - b.0).abs() < 0.5
        && match (a.1, b.1) {
            (Some(x), Some(y)) => (x - y).abs() < 0.5,
            _ => true,
        }
}

/// Measured (pair, E·D^k) of a job at `pairs`.
pub fn measured(job: &Job, pairs: &[Pair], k: i32) -> Vec<(Pair, f64)> {
    pairs
        .iter()
        .filter_map(|&c| {
            let r = job.at_pair(c.0, c.1)?;
            let (t, p) = (r.time_s?, r.power_w?);
            Some((c, t * p * t.powi(k)))
        })
        .collect()
}

/// Regret (%) of running `job` at `pick` for E·D^k, against its measured best; `None` when not measured.
pub fn regret_at(job: &Job, pairs: &[Pair], k: i32, pick: Pair) -> Option<f64> {
    let m = measured(job, pairs, k);
    let best = m.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
    m.iter().find(|x| same(x.0, pick)).map(|x| 100.0 * (x.1 / best - 1.0))
}

/// The model's pick for `job` and E·D^k, from its profile at the model's reference pair, among the pairs
/// the job was measured at.
pub fn model_pick(model: &ClockModel, job: &Job, pairs: &[Pair], k: i32) -> Option<Pair> {
    let ref_mem = model.memory.as_ref().map(|m| m.ref_mem_mhz);
    let profile = match ref_mem {
        Some(m) => job.at_pair(model.ref_core_mhz, Some(m))?,
        None => job.at(model.ref_core_mhz)?,
    };
    let there = measured(job, pairs, k);
    model
        .sweep(profile)
        .iter()
        .filter(|q| there.iter().any(|x| same(x.0, (q.core_mhz, q.mem_mhz))))
        .min_by(|a, b| {
            let f = |q: &gpumodel_models::utilization::model::ClockPoint| q.energy_j * q.time_s.powi(k);
            f(a).total_cmp(&f(b))
        })
        .map(|q| (q.core_mhz, q.mem_mhz))
}

/// The recommendation per objective for `jobs`, on the levels (pairs) of `model` (fitted on all of them).
pub fn choose(jobs: &[Job], params: &ClockFitParams, model: &ClockModel) -> Result<Vec<ObjectivePolicy>> {
    let pairs = model_pairs(model);
    let mut programs: Vec<&str> = jobs.iter().map(|j| j.program.as_str()).collect();
    programs.sort_unstable();
    programs.dedup();
    // With one program nothing is held out: no decision, the model's picks stand.
    if programs.len() < 2 {
        return Ok(vec![]);
    }
    let mut by_model = vec![Vec::new(); OBJECTIVES.len()];
    let mut by_fixed = vec![Vec::new(); OBJECTIVES.len()];
    for prog in &programs {
        let (held, rest): (Vec<Job>, Vec<Job>) = jobs.iter().cloned().partition(|j| j.program == *prog);
        // A fold the model cannot be fitted on (e.g. the rest measured at one clock) is left out.
        let Ok(fit) = fit_clock_model(&rest, params) else { continue };
        for (o, &(_, k)) in OBJECTIVES.iter().enumerate() {
            let fixed = best_fixed_pair(&rest, &pairs, k);
            for j in &held {
                let m = model_pick(&fit.model, j, &pairs, k).and_then(|c| regret_at(j, &pairs, k, c));
                let f = fixed.and_then(|c| regret_at(j, &pairs, k, c));
                if let (Some(m), Some(f)) = (m, f) {
                    by_model[o].push(m);
                    by_fixed[o].push(f);
                }
            }
        }
    }
    Ok(OBJECTIVES
        .iter()
        .enumerate()
        .map(|(o, &(name, k))| {
            let (m, f) = (mean(&by_model[o]), mean(&by_fixed[o]));
            let fixed = if f < m { best_fixed_pair(jobs, &pairs, k) } else { None };
            ObjectivePolicy {
                objective: name.to_string(),
                fixed_mhz: fixed.map(|p| p.0),
                fixed_mem_mhz: fixed.and_then(|p| p.1),
                model_regret_pct: m,
                fixed_regret_pct: f,
                held_out_jobs: by_model[o].len(),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpumodel_models::utilization::{Field, Source, UtilizationProfile};

    fn job(program: &str, name: &str) -> Job {
        let run = |mhz: f64, t: f64, p: f64| UtilizationProfile {
            name: name.into(),
            program: Some(program.into()),
            source: Source::Document,
            gpu: None,
            device: None,
            fields: [(Field::Smact, 0.9)].into_iter().collect(),
            core_mhz: mhz,
            mem_mhz: None,
            power_w: Some(p),
            time_s: Some(t),
            samples: 1,
        };
        Job {
            name: name.into(),
            program: program.into(),
            runs: vec![run(500.0, 2.0, 60.0), run(1000.0, 1.0, 150.0)],
        }
    }

    #[test]
    fn one_program_decides_nothing() {
        let jobs = [job("a", "a1"), job("a", "a2")];
        let text = include_str!("../../../models/dvfs-trained/v100.json");
        let model = ClockModel::from_json(text, "shipped").unwrap();
        assert!(choose(&jobs, &ClockFitParams::default(), &model).unwrap().is_empty());
    }

    #[test]
    fn the_regret_of_a_pick_is_against_the_measured_best() {
        // E at 500 MHz: 120 J; at 1000 MHz: 150 J. Running at 1000 MHz costs 25% more.
        let j = job("a", "a1");
        let clocks = [(500.0, None), (1000.0, None)];
        assert!((regret_at(&j, &clocks, 0, (1000.0, None)).unwrap() - 25.0).abs() < 1e-9);
        assert_eq!(regret_at(&j, &clocks, 0, (500.0, None)), Some(0.0));
        assert_eq!(regret_at(&j, &clocks, 0, (700.0, None)), None);
    }
}
