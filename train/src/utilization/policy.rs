//! Which clock to recommend for each objective (E, E·D, E·D²): the clock model's pick, or one fixed clock
//! for every job — decided inside the training data by leave-one-program-out: for each program, the model
//! is fitted and the fixed clock chosen on the other programs, and both are scored by the measured regret
//! of their picks on the held-out program's jobs. The lower mean regret over all held-out jobs wins; the
//! fixed clock recommended is then the one chosen on every training job.

use super::fit::{ClockFitParams, fit_clock_model};
use super::score::best_fixed_clock;
use super::{Job, mean};
use crate::Result;
use gpumodel_models::utilization::model::{ClockModel, ObjectivePolicy};

/// The objectives, as E·D^k.
const OBJECTIVES: [(&str, i32); 3] = [("E", 0), ("ED", 1), ("ED2", 2)];

/// Measured (clock, E·D^k) of a job at `clocks`.
fn measured(job: &Job, clocks: &[f64], k: i32) -> Vec<(f64, f64)> {
    clocks
        .iter()
        .filter_map(|&c| {
            let r = job.at(c)?;
            let (t, p) = (r.time_s?, r.power_w?);
            Some((c, t * p * t.powi(k)))
        })
        .collect()
}

/// Regret (%) of running `job` at `pick` for E·D^k, against its measured best; `None` when not measured.
fn regret_at(job: &Job, clocks: &[f64], k: i32, pick: f64) -> Option<f64> {
    let m = measured(job, clocks, k);
    let best = m.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
    m.iter().find(|x| (x.0 - pick).abs() < 0.5).map(|x| 100.0 * (x.1 / best - 1.0))
}

/// The model's pick for `job` and E·D^k, from its profile at the model's reference clock, among the clocks
/// the job was measured at.
fn model_pick(model: &ClockModel, job: &Job, clocks: &[f64], k: i32) -> Option<f64> {
    let sweep = model.sweep(job.at(model.ref_core_mhz)?);
    sweep
        .iter()
        .filter(|q| measured(job, clocks, k).iter().any(|x| (x.0 - q.core_mhz).abs() < 0.5))
        .min_by(|a, b| {
            let f = |q: &gpumodel_models::utilization::model::ClockPoint| q.energy_j * q.time_s.powi(k);
            f(a).total_cmp(&f(b))
        })
        .map(|q| q.core_mhz)
}

/// The recommendation per objective for `jobs`, on the levels of `model` (fitted on all of them).
pub fn choose(jobs: &[Job], params: &ClockFitParams, model: &ClockModel) -> Result<Vec<ObjectivePolicy>> {
    let clocks: Vec<f64> = model.levels.iter().map(|l| l.core_mhz).collect();
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
            let fixed = best_fixed_clock(&rest, &clocks, k);
            for j in &held {
                let m = model_pick(&fit.model, j, &clocks, k).and_then(|c| regret_at(j, &clocks, k, c));
                let f = fixed.and_then(|c| regret_at(j, &clocks, k, c));
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
            let fixed_mhz = if f < m { best_fixed_clock(jobs, &clocks, k) } else { None };
            ObjectivePolicy {
                objective: name.to_string(),
                fixed_mhz,
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
        let clocks = [500.0, 1000.0];
        assert!((regret_at(&j, &clocks, 0, 1000.0).unwrap() - 25.0).abs() < 1e-9);
        assert_eq!(regret_at(&j, &clocks, 0, 500.0), Some(0.0));
        assert_eq!(regret_at(&j, &clocks, 0, 700.0), None);
    }
}
