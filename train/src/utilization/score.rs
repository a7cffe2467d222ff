//! Held-out scores of clock models, the authors' protocol of DSO (Wang et al., arXiv:2407.13096): clocks
//! above a floor, MAPE per application then the mean over applications; the energy regret of the clock
//! picked by predicted time × power over the measured best; the same for E·D and E·D², and the energy
//! saved within a slowdown bound against the measured optimum under the same bound.

use super::fit::{DsoModel, dso_curve};
use super::policy::{Pair, regret_at};
use super::{Job, mean, median};
use gpumodel_models::utilization::model::ClockModel;
use serde::Serialize;
use std::collections::BTreeMap;

/// Predicted time and power of one job at the evaluated clocks.
pub type Prediction = Vec<(f64, f64)>;

/// Per job and method: (time MAPE, power MAPE, energy regret).
pub type PerJob = BTreeMap<String, BTreeMap<String, (Option<f64>, Option<f64>, f64)>>;

/// One method's scores over the test jobs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MethodScore {
    pub method: String,
    /// Mean over jobs of each job's time MAPE (%), every evaluated clock; `None` for a fixed clock.
    pub time_mape: Option<f64>,
    /// The same without the reference clock (where an anchored model is exact by construction).
    pub time_mape_off_ref: Option<f64>,
    pub power_mape: Option<f64>,
    pub power_mape_off_ref: Option<f64>,
    /// Regret (%) of the picked clock: median and mean over jobs, for E, E·D and E·D².
    pub energy_regret: (f64, f64),
    pub ed_regret: (f64, f64),
    pub ed2_regret: (f64, f64),
    /// Mean measured energy saving (%) against the highest clock of the clock picked within the slowdown
    /// bound, and how many jobs' picks were measured slower than the bound.
    pub saving_within_bound: f64,
    pub bound_violations: usize,
}

/// Held-out evaluation of the clock model beside its peers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClockEvaluation {
    pub test_jobs: usize,
    pub clocks_mhz: Vec<f64>,
    pub max_slowdown: f64,
    pub methods: Vec<MethodScore>,
    /// Measured optimum under the slowdown bound: mean saving (%) against the highest clock.
    pub oracle_saving_within_bound: f64,
    /// Power at each run's own clock from its profile alone: MAPE per job (mean over its clocks), then mean
    /// and median over jobs (%), and the worst job.
    pub own_clock_power_mape: f64,
    pub own_clock_power_median: f64,
    pub own_clock_worst: (String, f64),
    /// Per job and method: (time MAPE, power MAPE, energy regret) — for the JSON output.
    pub per_job: PerJob,
    pub notes: Vec<String>,
}

/// Measured runs of a test job at the evaluated clocks.
struct Measured {
    name: String,
    mhz: Vec<f64>,
    t: Vec<f64>,
    p: Vec<f64>,
    ref_index: usize,
}

fn regret(meas: &Measured, pred: &[(f64, f64)], k: i32) -> f64 {
    let metric = |t: f64, p: f64| t * p * t.powi(k);
    let pick = (0..pred.len())
        .min_by(|&a, &b| metric(pred[a].0, pred[a].1).total_cmp(&metric(pred[b].0, pred[b].1)))
        .unwrap_or(0);
    let best = (0..meas.t.len()).map(|i| metric(meas.t[i], meas.p[i])).fold(f64::INFINITY, f64::min);
    100.0 * (metric(meas.t[pick], meas.p[pick]) / best - 1.0)
}

/// Lowest-energy index among those within `bound` of the fastest, by the given times and powers.
fn pick_within(t: &[f64], p: &[f64], bound: f64) -> usize {
    let fastest = t.iter().copied().fold(f64::INFINITY, f64::min);
    (0..t.len())
        .filter(|&i| t[i] <= fastest * (1.0 + bound) + 1e-15)
        .min_by(|&a, &b| (t[a] * p[a]).total_cmp(&(t[b] * p[b])))
        .unwrap_or(0)
}

fn mape(pred: &[f64], meas: &[f64], skip: Option<usize>) -> f64 {
    let v: Vec<f64> = (0..meas.len())
        .filter(|i| Some(*i) != skip)
        .map(|i| 100.0 * (pred[i] - meas[i]).abs() / meas[i])
        .collect();
    mean(&v)
}

fn score(
    method: &str,
    ms: &[Measured],
    preds: &[Prediction],
    has_curve: bool,
    bound: f64,
    per_job: &mut PerJob,
) -> MethodScore {
    let (mut tm, mut tmo, mut pm, mut pmo) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut e, mut ed, mut ed2, mut sv) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut violations = 0;
    for (m, pr) in ms.iter().zip(preds) {
        let pt: Vec<f64> = pr.iter().map(|x| x.0).collect();
        let pp: Vec<f64> = pr.iter().map(|x| x.1).collect();
        let (jt, jp) = if has_curve {
            let (a, b) = (mape(&pt, &m.t, None), mape(&pp, &m.p, None));
            tm.push(a);
            pm.push(b);
            tmo.push(mape(&pt, &m.t, Some(m.ref_index)));
            pmo.push(mape(&pp, &m.p, Some(m.ref_index)));
            (Some(a), Some(b))
        } else {
            (None, None)
        };
        let r = regret(m, pr, 0);
        e.push(r);
        ed.push(regret(m, pr, 1));
        ed2.push(regret(m, pr, 2));
        let pick = pick_within(&pt, &pp, bound);
        sv.push(100.0 * (1.0 - m.t[pick] * m.p[pick] / (m.t[m.ref_index] * m.p[m.ref_index])));
        let fastest = m.t.iter().copied().fold(f64::INFINITY, f64::min);
        if m.t[pick] > fastest * (1.0 + bound) + 1e-12 {
            violations += 1;
        }
        per_job.entry(m.name.clone()).or_default().insert(method.to_string(), (jt, jp, r));
    }
    let opt = |v: &[f64]| has_curve.then(|| mean(v));
    MethodScore {
        method: method.to_string(),
        time_mape: opt(&tm),
        time_mape_off_ref: opt(&tmo),
        power_mape: opt(&pm),
        power_mape_off_ref: opt(&pmo),
        energy_regret: (median(&e), mean(&e)),
        ed_regret: (median(&ed), mean(&ed)),
        ed2_regret: (median(&ed2), mean(&ed2)),
        saving_within_bound: mean(&sv),
        bound_violations: violations,
    }
}

/// Published per-application DSO parameters (Fc, delta, t0, p0, cg) by job name.
pub type Published = BTreeMap<String, [f64; 5]>;

/// Reads a DSO parameter file (`Fc,delta,t0,p0,cg,benchmark_argNo`).
pub fn read_published(text: &str) -> Result<Published, String> {
    let mut out = Published::new();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').map(str::trim).collect();
    let col = |n: &str| header.iter().position(|h| *h == n).ok_or(format!("no '{n}' column"));
    let idx = [col("Fc")?, col("delta")?, col("t0")?, col("p0")?, col("cg")?];
    let name = col("benchmark_argNo")?;
    for (i, l) in lines.enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        let cells: Vec<&str> = l.split(',').map(str::trim).collect();
        let mut th = [0.0; 5];
        for (k, &j) in idx.iter().enumerate() {
            th[k] = cells.get(j).and_then(|s| s.parse::<f64>().ok()).ok_or(format!(
                "line {}: column {} is not a number",
                i + 2,
                header[j]
            ))?;
        }
        out.insert(cells.get(name).unwrap_or(&"").to_string(), th);
    }
    Ok(out)
}

/// Which clock a fixed-clock policy runs every job at: the one with the lowest mean regret (for E·D^k)
/// over `jobs` at `clocks`.
pub fn best_fixed_clock(jobs: &[Job], clocks: &[f64], k: i32) -> Option<f64> {
    let pairs: Vec<Pair> = clocks.iter().map(|c| (*c, None)).collect();
    best_fixed_pair(jobs, &pairs, k).map(|p| p.0)
}

/// Which pair a fixed policy runs every job at: the one with the lowest mean regret (for E·D^k) over
/// `jobs` at `pairs`.
pub fn best_fixed_pair(jobs: &[Job], pairs: &[Pair], k: i32) -> Option<Pair> {
    let mut best: Option<(f64, Pair)> = None;
    for &c in pairs {
        let r: Vec<f64> = jobs.iter().filter_map(|j| regret_at(j, pairs, k, c)).map(|x| x / 100.0).collect();
        let m = mean(&r);
        if !r.is_empty() && best.is_none_or(|(bm, _)| m < bm) {
            best = Some((m, c));
        }
    }
    best.map(|b| b.1)
}

/// Scores the clock model, the DSO form fitted here, the published DSO parameters (when given), the best
/// fixed clock chosen on `train` (and, as a bound, in hindsight on the test jobs) and the highest clock.
pub fn evaluate(
    model: &ClockModel,
    dso: &DsoModel,
    train: &[Job],
    test: &[Job],
    published: Option<&Published>,
    max_slowdown: f64,
) -> ClockEvaluation {
    let clocks: Vec<f64> = model.levels.iter().map(|l| l.core_mhz).collect();
    let f_ref = model.ref_core_mhz;
    let mut notes = Vec::new();
    let mut ms = Vec::new();
    let mut refs = Vec::new();
    for j in test {
        let runs: Vec<(f64, f64, f64)> =
            clocks.iter().filter_map(|m| j.at(*m).and_then(|x| Some((*m, x.time_s?, x.power_w?)))).collect();
        let (Some(rp), Some(ri)) = (j.at(f_ref), runs.iter().position(|x| (x.0 - f_ref).abs() < 0.5)) else {
            notes.push(format!("{}: no run at {f_ref} MHz, left out", j.name));
            continue;
        };
        ms.push(Measured {
            name: j.name.clone(),
            mhz: runs.iter().map(|x| x.0).collect(),
            t: runs.iter().map(|x| x.1).collect(),
            p: runs.iter().map(|x| x.2).collect(),
            ref_index: ri,
        });
        refs.push(rp.clone());
    }
    let mut per_job = BTreeMap::new();
    let mut methods = Vec::new();

    // The clock model, from the profile at the reference clock.
    let ours: Vec<Prediction> = ms
        .iter()
        .zip(&refs)
        .map(|(m, p)| {
            // A pair model is scored here at the reference memory clock (the test jobs' curves are over
            // core clocks).
            let ref_mem = model.memory.as_ref().map(|mm| mm.ref_mem_mhz);
            let sw: Vec<_> = model
                .sweep(p)
                .into_iter()
                .filter(|q| match (q.mem_mhz, ref_mem) {
                    (Some(a), Some(b)) => (a - b).abs() < 0.5,
                    _ => true,
                })
                .collect();
            m.mhz
                .iter()
                .map(|c| {
                    sw.iter()
                        .find(|q| (q.core_mhz - c).abs() < 0.5)
                        .map_or((f64::NAN, f64::NAN), |q| (q.time_s, q.power_w))
                })
                .collect()
        })
        .collect();
    methods.push(score("gpumodel clock model", &ms, &ours, true, max_slowdown, &mut per_job));

    // DSO's form, fitted here, anchored at the same reference run.
    let dso_pred = |m: &Measured, th: &[f64], t_anchor: f64, p_anchor: f64, anchor_f: f64| -> Prediction {
        let (r1, q1) = dso_curve(th, anchor_f);
        m.mhz
            .iter()
            .map(|c| {
                let (r, q) = dso_curve(th, c / dso.f_max);
                (t_anchor * r / r1, p_anchor * q / q1)
            })
            .collect()
    };
    let fitted: Vec<Prediction> = ms
        .iter()
        .zip(&refs)
        .map(|(m, p)| dso_pred(m, &dso.predict(p), m.t[m.ref_index], m.p[m.ref_index], f_ref / dso.f_max))
        .collect();
    methods.push(score(
        "DSO form, fitted here (same profile and regressor)",
        &ms,
        &fitted,
        true,
        max_slowdown,
        &mut per_job,
    ));

    if let Some(pubd) = published {
        // The authors' normalization: predicted ratio × the job's measured fastest time and highest power.
        let mut preds = Vec::new();
        let mut kept = Vec::new();
        for m in &ms {
            let Some(th) = pubd.get(&m.name) else {
                notes.push(format!("{}: no published DSO parameters, left out of every row", m.name));
                continue;
            };
            let tmin = m.t.iter().copied().fold(f64::INFINITY, f64::min);
            let pmax = m.p.iter().copied().fold(0.0, f64::max);
            preds.push(
                m.mhz
                    .iter()
                    .map(|c| {
                        let (r, q) = dso_curve(th, c / dso.f_max);
                        (tmin * r, pmax * q)
                    })
                    .collect::<Prediction>(),
            );
            kept.push(m.name.clone());
        }
        if kept.len() == ms.len() {
            methods.push(score(
                "DSO published (authors' predictions)",
                &ms,
                &preds,
                true,
                max_slowdown,
                &mut per_job,
            ));
        } else {
            notes.push("published DSO parameters do not cover every test job: their row is left out".into());
        }
    }

    for (label, jobs) in
        [("chosen on the training jobs", train), ("chosen in hindsight on the test jobs (a bound)", test)]
    {
        if let Some(c) = best_fixed_clock(jobs, &clocks, 0) {
            let preds: Vec<Prediction> = ms
                .iter()
                .map(|m| {
                    m.mhz.iter().map(|x| if (x - c).abs() < 0.5 { (1.0, 1.0) } else { (2.0, 2.0) }).collect()
                })
                .collect();
            methods.push(score(
                &format!("fixed clock {c:.0} MHz, {label}"),
                &ms,
                &preds,
                false,
                max_slowdown,
                &mut per_job,
            ));
        }
    }
    // The recommendation per objective chosen on the training data: each regret is the model's or the
    // fixed clock's, as the policy says (the objectives are scored apart, so the rows combine).
    if model.policy.len() == 3
        && let (Some(m), Some(f)) =
            (methods.first(), methods.iter().find(|m| m.method.contains("training jobs")))
    {
        let take =
            |o: usize, a: (f64, f64), b: (f64, f64)| if model.policy[o].fixed_mhz.is_some() { b } else { a };
        let row = MethodScore {
            method: "gpumodel, each objective's pick as chosen on the training data".into(),
            energy_regret: take(0, m.energy_regret, f.energy_regret),
            ed_regret: take(1, m.ed_regret, f.ed_regret),
            ed2_regret: take(2, m.ed2_regret, f.ed2_regret),
            ..m.clone()
        };
        methods.insert(1, row);
    }
    let highest: Vec<Prediction> = ms
        .iter()
        .map(|m| {
            m.mhz.iter().map(|x| if (x - f_ref).abs() < 0.5 { (1.0, 1.0) } else { (2.0, 2.0) }).collect()
        })
        .collect();
    methods.push(score(
        &format!("highest clock {f_ref:.0} MHz (no DVFS)"),
        &ms,
        &highest,
        false,
        max_slowdown,
        &mut per_job,
    ));

    let oracle = mean(
        &ms.iter()
            .map(|m| {
                let i = pick_within(&m.t, &m.p, max_slowdown);
                100.0 * (1.0 - m.t[i] * m.p[i] / (m.t[m.ref_index] * m.p[m.ref_index]))
            })
            .collect::<Vec<_>>(),
    );

    // Power at each run's own clock from its own profile alone.
    let mut own: Vec<(String, f64)> = Vec::new();
    for j in test {
        let e: Vec<f64> = j
            .runs
            .iter()
            .filter(|r| clocks.iter().any(|c| (c - r.core_mhz).abs() < 0.5))
            .filter_map(|r| r.power_w.map(|y| 100.0 * (model.own_clock_power_w(r) - y).abs() / y))
            .collect();
        if !e.is_empty() {
            own.push((j.name.clone(), mean(&e)));
        }
    }
    let own_v: Vec<f64> = own.iter().map(|x| x.1).collect();
    let worst = own.iter().max_by(|a, b| a.1.total_cmp(&b.1)).cloned().unwrap_or_default();
    ClockEvaluation {
        test_jobs: ms.len(),
        clocks_mhz: clocks,
        max_slowdown,
        methods,
        oracle_saving_within_bound: oracle,
        own_clock_power_mape: mean(&own_v),
        own_clock_power_median: median(&own_v),
        own_clock_worst: worst,
        per_job,
        notes,
    }
}
