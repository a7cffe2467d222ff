//! Fitting the clock model and the DSO peer form on training jobs, with the choice of each linear model's
//! inputs and ridge penalty by leave-one-program-out cross-validation.

use super::{Job, mean};
use crate::{Error, Result};
use gpumodel_models::utilization::model::{
    CLOCK_MODEL_FORMAT, ClockModel, Level, Linear, MemLevel, MemTimeForm, MemoryModel, OwnClockPower,
    Provenance, pair_time,
};
use gpumodel_models::utilization::{Field, UtilizationProfile};
use std::collections::BTreeSet;

/// What the fit needs beyond the data.
#[derive(Debug, Clone, PartialEq)]
pub struct ClockFitParams {
    pub gpu: String,
    pub dataset: String,
    pub dataset_sha256: Option<String>,
    /// Ridge penalties tried (on standardized inputs).
    pub ridge: Vec<f64>,
    pub command: String,
}

impl Default for ClockFitParams {
    fn default() -> Self {
        ClockFitParams {
            gpu: String::new(),
            dataset: String::new(),
            dataset_sha256: None,
            ridge: vec![1e-3, 1e-2, 0.1, 1.0, 10.0],
            command: String::new(),
        }
    }
}

/// A training job reduced to what the fits use: its profile at the reference clock and, per level it
/// was measured at, time and power relative to the reference run.
#[derive(Debug, Clone)]
pub struct Curve {
    pub name: String,
    pub program: String,
    pub profile: UtilizationProfile,
    /// (level index, x = f_ref/f, time / time at f_ref, power / power at f_ref).
    pub points: Vec<(usize, f64, f64, f64)>,
    /// Measured time and power at each point (absolute), for the DSO normalization and the regrets.
    pub time_s: Vec<f64>,
    pub power_w: Vec<f64>,
    /// Per point: (memory level index, y = m_ref/m); level 0 and y = 1 when the data has one memory clock.
    pub mem: Vec<(usize, f64)>,
}

/// The memory levels of the curves (ascending; empty when no run records a memory clock).
fn curve_mem_levels(jobs: &[Job]) -> Vec<f64> {
    super::mem_clocks(jobs)
}

/// The clock levels of the jobs (ascending) and each job's curve; jobs without a run at the highest level
/// are left out and named.
pub fn curves(jobs: &[Job]) -> Result<(Vec<f64>, Vec<Curve>, Vec<String>)> {
    let mut mhz: Vec<f64> = jobs.iter().flat_map(|j| j.runs.iter().map(|r| r.core_mhz.round())).collect();
    mhz.sort_by(f64::total_cmp);
    mhz.dedup();
    let Some(&f_ref) = mhz.last() else {
        return Err(Error::Invalid("no job has a run with measured time and power".into()));
    };
    let mems = curve_mem_levels(jobs);
    let m_ref = mems.last().copied();
    let mut out = Vec::new();
    let mut left = Vec::new();
    for j in jobs {
        let Some(r) = j.at_pair(f_ref, m_ref) else {
            left.push(j.name.clone());
            continue;
        };
        let (t0, p0) = (r.time_s.unwrap_or(f64::NAN), r.power_w.unwrap_or(f64::NAN));
        let mut c = Curve {
            name: j.name.clone(),
            program: j.program.clone(),
            profile: r.clone(),
            points: vec![],
            time_s: vec![],
            power_w: vec![],
            mem: vec![],
        };
        for run in &j.runs {
            let Some(li) = mhz.iter().position(|m| (m - run.core_mhz.round()).abs() < 0.5) else { continue };
            let (t, p) = (run.time_s.unwrap_or(f64::NAN), run.power_w.unwrap_or(f64::NAN));
            c.points.push((li, f_ref / mhz[li], t / t0, p / p0));
            c.time_s.push(t);
            c.power_w.push(p);
            let mi = run.mem_mhz.and_then(|m| mems.iter().position(|l| (l - m.round()).abs() < 0.5));
            c.mem.push(match (mi, m_ref) {
                (Some(mi), Some(mr)) => (mi, mr / mems[mi]),
                _ => (mems.len().saturating_sub(1), 1.0),
            });
        }
        out.push(c);
    }
    if out.len() < 2 {
        return Err(Error::Invalid(format!(
            "only {} job(s) have a run at the highest clock ({f_ref} MHz): a clock model needs several jobs \
             measured at that clock and at others",
            out.len()
        )));
    }
    Ok((mhz, out, left))
}

// -----------------------------------------------------------------------------------------------------
// Per-job curve fits

/// Time form r(x) = 1 + slope·max(0, x − knee): the knee by a grid, the slope by weighted least squares
/// (weights 1/y², the relative error MAPE scores).
pub fn fit_knee(points: &[(f64, f64)]) -> (f64, f64) {
    let xmax = points.iter().map(|p| p.0).fold(1.0, f64::max);
    let mut best = (f64::INFINITY, 1.0, 1.0);
    let steps = 400;
    for k in 0..=steps {
        let knee = 1.0 + (xmax - 1.0) * k as f64 / steps as f64;
        let (mut num, mut den) = (0.0, 0.0);
        for &(x, y) in points {
            let h = (x - knee).max(0.0);
            let w = 1.0 / (y * y);
            num += w * h * (y - 1.0);
            den += w * h * h;
        }
        let slope = if den > 0.0 { (num / den).max(0.0) } else { 0.0 };
        let err: f64 = points
            .iter()
            .map(|&(x, y)| {
                let r = 1.0 + slope * (x - knee).max(0.0);
                ((r - y) / y).powi(2)
            })
            .sum();
        if err < best.0 - 1e-15 {
            best = (err, knee, slope);
        }
    }
    (best.1, best.2)
}

/// The V²f factor per level and each job's static share, by alternating least squares on
/// q = s + (1 − s)·g (g = 1 at the reference level).
fn fit_v2f(n_levels: usize, curves: &[Curve], mhz: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let f_ref = mhz[n_levels - 1];
    // Start from V ∝ f (g = (f/f_ref)³), a shape only; the fit moves it.
    let mut g: Vec<f64> = mhz.iter().map(|m| (m / f_ref).powi(3)).collect();
    let mut s = vec![0.5; curves.len()];
    for _ in 0..200 {
        for (c, sj) in curves.iter().zip(s.iter_mut()) {
            let (mut num, mut den) = (0.0, 0.0);
            for &(li, _, _, q) in &c.points {
                let w = 1.0 / (q * q);
                num += w * (1.0 - g[li]) * (q - g[li]);
                den += w * (1.0 - g[li]).powi(2);
            }
            *sj = if den > 0.0 { (num / den).clamp(0.0, 1.0) } else { 0.5 };
        }
        for (li, gl) in g.iter_mut().enumerate().take(n_levels - 1) {
            let (mut num, mut den) = (0.0, 0.0);
            for (c, sj) in curves.iter().zip(&s) {
                for &(lj, _, _, q) in &c.points {
                    if lj == li {
                        let w = 1.0 / (q * q);
                        num += w * (1.0 - sj) * (q - sj);
                        den += w * (1.0 - sj).powi(2);
                    }
                }
            }
            if den > 0.0 {
                *gl = (num / den).max(1e-3);
            }
        }
        g[n_levels - 1] = 1.0;
    }
    (g, s)
}

// -----------------------------------------------------------------------------------------------------
// Ridge regression of a per-job parameter on the profile's fields

fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    for i in 0..n {
        let p = (i..n).max_by(|&x, &y| a[x][i].abs().total_cmp(&a[y][i].abs()))?;
        if a[p][i].abs() < 1e-14 {
            return None;
        }
        a.swap(i, p);
        b.swap(i, p);
        for r in i + 1..n {
            let f = a[r][i] / a[i][i];
            let (top, bottom) = a.split_at_mut(r);
            for (x, y) in bottom[0][i..].iter_mut().zip(&top[i][i..]) {
                *x -= f * y;
            }
            b[r] -= f * b[i];
        }
    }
    let mut x = vec![0.0; n];
    for i in (0..n).rev() {
        x[i] = (b[i] - (i + 1..n).map(|c| a[i][c] * x[c]).sum::<f64>()) / a[i][i];
    }
    Some(x)
}

/// Ridge regression on standardized `inputs` (intercept not penalized), returned in raw-field terms and
/// clamped to the targets' range.
pub fn ridge(profiles: &[&UtilizationProfile], y: &[f64], inputs: &[Field], lambda: f64) -> Linear {
    let n = y.len() as f64;
    let (lo, hi) = y.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |a, v| (a.0.min(*v), a.1.max(*v)));
    let ym = y.iter().sum::<f64>() / n;
    if inputs.is_empty() {
        return Linear { inputs: vec![], intercept: ym, weights: vec![], min: lo, max: hi };
    }
    let d = inputs.len();
    let cols: Vec<Vec<f64>> = inputs.iter().map(|f| profiles.iter().map(|p| p.get(*f)).collect()).collect();
    let mu: Vec<f64> = cols.iter().map(|c| c.iter().sum::<f64>() / n).collect();
    let sd: Vec<f64> = cols
        .iter()
        .zip(&mu)
        .map(|(c, m)| (c.iter().map(|v| (v - m).powi(2)).sum::<f64>() / n).sqrt().max(1e-9))
        .collect();
    let z: Vec<Vec<f64>> = (0..d).map(|k| cols[k].iter().map(|v| (v - mu[k]) / sd[k]).collect()).collect();
    let mut a = vec![vec![0.0; d]; d];
    let mut b = vec![0.0; d];
    for i in 0..d {
        for j in 0..d {
            a[i][j] = z[i].iter().zip(&z[j]).map(|(u, v)| u * v).sum::<f64>();
        }
        a[i][i] += lambda * n;
        b[i] = z[i].iter().zip(y).map(|(u, v)| u * (v - ym)).sum::<f64>();
    }
    let beta = solve(a, b).unwrap_or_else(|| vec![0.0; d]);
    let weights: Vec<f64> = beta.iter().zip(&sd).map(|(w, s)| w / s).collect();
    let intercept = ym - weights.iter().zip(&mu).map(|(w, m)| w * m).sum::<f64>();
    Linear { inputs: inputs.to_vec(), intercept, weights, min: lo, max: hi }
}

/// One candidate regressor: its inputs and ridge penalty.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub inputs: Vec<Field>,
    pub lambda: f64,
}

impl Candidate {
    pub fn label(&self) -> String {
        let names: Vec<&str> = self.inputs.iter().map(|f| f.name()).collect();
        if names.is_empty() {
            "constant".into()
        } else {
            format!("{} (ridge {})", names.join("+"), self.lambda)
        }
    }
}

/// The candidate input sets: nested sets in the order DRAM, SM activity, occupancy, the pipes — the
/// physical order of what holds a job's time (memory traffic first) — restricted to fields that vary in
/// the training profiles.
pub fn candidates(curves: &[Curve], ridge: &[f64]) -> Vec<Candidate> {
    let order =
        [Field::Drama, Field::Smact, Field::Smocc, Field::Fp32a, Field::Fp64a, Field::Fp16a, Field::Tenso];
    let varying: Vec<Field> = order
        .into_iter()
        .filter(|f| {
            let v: Vec<f64> = curves.iter().map(|c| c.profile.get(*f)).collect();
            let (lo, hi) =
                v.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |a, x| (a.0.min(*x), a.1.max(*x)));
            hi - lo > 1e-6
        })
        .collect();
    let mut out = vec![Candidate { inputs: vec![], lambda: 0.0 }];
    for k in 1..=varying.len() {
        for &lambda in ridge {
            out.push(Candidate { inputs: varying[..k].to_vec(), lambda });
        }
    }
    out
}

/// Chooses the candidate whose per-job parameter predictions give the lowest mean held-out loss over
/// leave-one-program-out folds, and refits it on every job. `targets[k][j]` is parameter k of job j;
/// `loss(j, params)` is job j's error with those parameters. Returns the fitted models, the candidate
/// and its cross-validated loss.
pub fn select(
    curves: &[Curve],
    targets: &[Vec<f64>],
    cands: &[Candidate],
    loss: &dyn Fn(usize, &[f64]) -> f64,
) -> (Vec<Linear>, Candidate, f64) {
    let programs: BTreeSet<&str> = curves.iter().map(|c| c.program.as_str()).collect();
    let mut best: Option<(f64, usize)> = None;
    for (ci, cand) in cands.iter().enumerate() {
        let mut losses = Vec::with_capacity(curves.len());
        for prog in &programs {
            let train: Vec<usize> = (0..curves.len()).filter(|&j| curves[j].program != *prog).collect();
            if train.is_empty() {
                continue;
            }
            let ps: Vec<&UtilizationProfile> = train.iter().map(|&j| &curves[j].profile).collect();
            let models: Vec<Linear> = targets
                .iter()
                .map(|t| {
                    let y: Vec<f64> = train.iter().map(|&j| t[j]).collect();
                    ridge(&ps, &y, &cand.inputs, cand.lambda)
                })
                .collect();
            for j in (0..curves.len()).filter(|&j| curves[j].program == *prog) {
                let params: Vec<f64> = models.iter().map(|m| m.eval(&curves[j].profile)).collect();
                losses.push(loss(j, &params));
            }
        }
        let l = mean(&losses);
        if best.is_none_or(|(b, _)| l < b - 1e-12) {
            best = Some((l, ci));
        }
    }
    let (l, ci) = best.unwrap_or((f64::NAN, 0));
    let cand = cands[ci].clone();
    let ps: Vec<&UtilizationProfile> = curves.iter().map(|c| &c.profile).collect();
    let models = targets.iter().map(|t| ridge(&ps, t, &cand.inputs, cand.lambda)).collect();
    (models, cand, l)
}

// -----------------------------------------------------------------------------------------------------
// Own-clock power (model (a))

/// P = a_l + g_l·(β·U) on every training run (alternating least squares, relative weights; g = 1 at the
/// reference level). Physics constraints: no dynamic power without activity (no free dynamic constant),
/// every activity weight ≥ 0 (a field whose weight goes negative is dropped and the rest refitted, an
/// active-set non-negative least squares), idle-and-static power a_l ≥ 0. Returns per-level (a_l, g_l), the
/// bias (0) and the weights.
pub fn fit_own_clock(
    rows: &[(usize, &UtilizationProfile, f64)],
    n_levels: usize,
    inputs: &[Field],
    g_init: &[f64],
) -> (Vec<(f64, f64)>, f64, Vec<f64>) {
    let d = inputs.len();
    let mut g = g_init.to_vec();
    let mut a = vec![0.0; n_levels];
    let mut beta = vec![0.0; d];
    for _ in 0..60 {
        // β given g: unknowns a_l (per level) and the non-negative activity weights, linear.
        let mut active: Vec<bool> = vec![true; d];
        loop {
            let idx: Vec<usize> = (0..d).filter(|&k| active[k]).collect();
            let m = n_levels + idx.len();
            let mut ata = vec![vec![0.0; m]; m];
            let mut atb = vec![0.0; m];
            let mut x = vec![0.0; m];
            for &(li, p, y) in rows {
                x.iter_mut().for_each(|v| *v = 0.0);
                x[li] = 1.0;
                for (c, &k) in idx.iter().enumerate() {
                    x[n_levels + c] = g[li] * p.get(inputs[k]);
                }
                let w = 1.0 / (y * y);
                for i in 0..m {
                    if x[i] == 0.0 {
                        continue;
                    }
                    for j in 0..m {
                        ata[i][j] += w * x[i] * x[j];
                    }
                    atb[i] += w * x[i] * y;
                }
            }
            for (i, row) in ata.iter_mut().enumerate() {
                row[i] += 1e-9;
            }
            let Some(sol) = solve(ata, atb) else { break };
            let worst = idx
                .iter()
                .enumerate()
                .filter(|(c, _)| sol[n_levels + c] < 0.0)
                .min_by(|x, y| sol[n_levels + x.0].total_cmp(&sol[n_levels + y.0]))
                .map(|(_, &k)| k);
            match worst {
                Some(k) => active[k] = false,
                None => {
                    a.copy_from_slice(&sol[..n_levels]);
                    beta.iter_mut().for_each(|b| *b = 0.0);
                    for (c, &k) in idx.iter().enumerate() {
                        beta[k] = sol[n_levels + c];
                    }
                    break;
                }
            }
        }
        // g given β: per level, (a_l, g_l) by 2-parameter least squares on the dynamic term.
        for li in 0..n_levels {
            let (mut s11, mut s12, mut s22, mut b1, mut b2) = (0.0, 0.0, 0.0, 0.0, 0.0);
            for &(lj, p, y) in rows {
                if lj != li {
                    continue;
                }
                let dyn_ = inputs.iter().zip(&beta).map(|(f, b)| b * p.get(*f)).sum::<f64>();
                let w = 1.0 / (y * y);
                s11 += w;
                s12 += w * dyn_;
                s22 += w * dyn_ * dyn_;
                b1 += w * y;
                b2 += w * dyn_ * y;
            }
            let det = s11 * s22 - s12 * s12;
            if det.abs() > 1e-12 {
                a[li] = ((b1 * s22 - b2 * s12) / det).max(0.0);
                g[li] = ((b2 - a[li] * s12) / s22).max(1e-3);
            }
        }
        // Scale so that g = 1 at the reference level.
        let gr = g[n_levels - 1];
        for v in g.iter_mut() {
            *v /= gr;
        }
        for v in beta.iter_mut() {
            *v *= gr;
        }
    }
    let levels = a.into_iter().zip(g).collect();
    (levels, 0.0, beta)
}

fn own_clock_rows<'a>(
    curves: &'a [Curve],
    jobs: &'a [Job],
    mhz: &[f64],
) -> Vec<(usize, &'a UtilizationProfile, f64)> {
    let names: BTreeSet<&str> = curves.iter().map(|c| c.name.as_str()).collect();
    let mut rows = Vec::new();
    for j in jobs.iter().filter(|j| names.contains(j.name.as_str())) {
        for r in &j.runs {
            if let (Some(li), Some(p)) =
                (mhz.iter().position(|m| (m - r.core_mhz.round()).abs() < 0.5), r.power_w)
            {
                rows.push((li, r, p));
            }
        }
    }
    rows
}

fn own_clock_eval(
    levels: &[(f64, f64)],
    bias: f64,
    w: &[f64],
    inputs: &[Field],
    li: usize,
    p: &UtilizationProfile,
) -> f64 {
    let d = bias + inputs.iter().zip(w).map(|(f, w)| w * p.get(*f)).sum::<f64>();
    levels[li].0 + levels[li].1 * d.max(0.0)
}

// -----------------------------------------------------------------------------------------------------
// The clock model

/// What fitting found, beside the artifact.
#[derive(Debug, Clone)]
pub struct ClockFit {
    pub model: ClockModel,
    /// Leave-one-program-out MAPE (%) of the chosen time, power-shape and own-clock-power models.
    pub cv_time_mape: f64,
    pub cv_power_mape: f64,
    pub cv_own_clock_mape: f64,
    pub curves: Vec<Curve>,
    pub left_out: Vec<String>,
}

/// Fits the clock model on training jobs.
pub fn fit_clock_model(jobs: &[Job], params: &ClockFitParams) -> Result<ClockFit> {
    if params.ridge.iter().any(|l| !(l.is_finite() && *l >= 0.0)) {
        return Err(Error::Invalid("ridge penalties must be finite and ≥ 0".into()));
    }
    let mems = super::mem_clocks(jobs);
    if mems.len() >= 2 {
        return fit_pair_model(jobs, params, &mems);
    }
    let (mhz, curves, left_out) = curves(jobs)?;
    let n = mhz.len();
    if n < 2 {
        return Err(Error::Invalid(
            "the training jobs were measured at one clock only: a clock model needs several".into(),
        ));
    }
    let f_ref = mhz[n - 1];
    let (g, s) = fit_v2f(n, &curves, &mhz);
    let knees: Vec<(f64, f64)> =
        curves.iter().map(|c| fit_knee(&c.points.iter().map(|p| (p.1, p.2)).collect::<Vec<_>>())).collect();
    let cands = candidates(&curves, &params.ridge);

    let time_loss = |j: usize, th: &[f64]| {
        let c = &curves[j];
        100.0
            * mean(
                &c.points
                    .iter()
                    .map(|&(_, x, y, _)| ((1.0 + th[1] * (x - th[0]).max(0.0)) - y).abs() / y)
                    .collect::<Vec<_>>(),
            )
    };
    let tk: Vec<f64> = knees.iter().map(|k| k.0).collect();
    let ts: Vec<f64> = knees.iter().map(|k| k.1).collect();
    let (tm, tcand, tcv) = select(&curves, &[tk, ts], &cands, &time_loss);

    let power_loss = |j: usize, th: &[f64]| {
        let c = &curves[j];
        100.0
            * mean(
                &c.points
                    .iter()
                    .map(|&(li, _, _, q)| ((th[0] + (1.0 - th[0]) * g[li]) - q).abs() / q)
                    .collect::<Vec<_>>(),
            )
    };
    let (pm, pcand, pcv) = select(&curves, std::slice::from_ref(&s), &cands, &power_loss);

    // Own-clock power on every field that varies; its grouped-CV figure is reported, not used to choose.
    let own_inputs = cands.last().map(|c| c.inputs.clone()).unwrap_or_default();
    let rows = own_clock_rows(&curves, jobs, &mhz);
    let (own_levels, bias, w) = fit_own_clock(&rows, n, &own_inputs, &g);
    let programs: BTreeSet<&str> = curves.iter().map(|c| c.program.as_str()).collect();
    let mut own_err = Vec::new();
    for prog in &programs {
        let tr: Vec<_> = rows.iter().filter(|r| r.1.program.as_deref() != Some(prog)).copied().collect();
        let te: Vec<_> = rows.iter().filter(|r| r.1.program.as_deref() == Some(prog)).copied().collect();
        if tr.is_empty() || te.is_empty() {
            continue;
        }
        let (lv, b, ww) = fit_own_clock(&tr, n, &own_inputs, &g);
        own_err.extend(
            te.iter()
                .map(|&(li, p, y)| 100.0 * (own_clock_eval(&lv, b, &ww, &own_inputs, li, p) - y).abs() / y),
        );
    }

    let levels = mhz
        .iter()
        .enumerate()
        .map(|(i, m)| Level {
            core_mhz: *m,
            v2f: g[i],
            voltage: (g[i] * f_ref / m).sqrt(),
            static_w: own_levels[i].0,
            dynamic_factor: own_levels[i].1,
        })
        .collect();
    let mem: Vec<f64> = curves.iter().filter_map(|c| c.profile.mem_mhz).collect();
    let model = ClockModel {
        format: CLOCK_MODEL_FORMAT.into(),
        gpu: params.gpu.clone(),
        ref_core_mhz: f_ref,
        mem_mhz: (!mem.is_empty()).then(|| mean(&mem)),
        levels,
        knee: tm[0].clone(),
        slope: tm[1].clone(),
        static_share: pm[0].clone(),
        own_clock_power: OwnClockPower { inputs: own_inputs.clone(), bias_w: bias, weights_w: w },
        provenance: Provenance {
            dataset: params.dataset.clone(),
            dataset_sha256: params.dataset_sha256.clone(),
            training_jobs: curves.len(),
            training_programs: programs.len(),
            selection: vec![
                format!("time knee and slope: {} — leave-one-program-out time MAPE {tcv:.2}%", tcand.label()),
                format!("power static share: {} — leave-one-program-out power MAPE {pcv:.2}%", pcand.label()),
                format!(
                    "own-clock power: {} — leave-one-program-out MAPE {:.2}%",
                    own_inputs.iter().map(|f| f.name()).collect::<Vec<_>>().join("+"),
                    mean(&own_err)
                ),
            ],
            command: params.command.clone(),
        },
        policy: vec![],
        memory: None,
    };
    Ok(ClockFit {
        model,
        cv_time_mape: tcv,
        cv_power_mape: pcv,
        cv_own_clock_mape: mean(&own_err),
        curves,
        left_out,
    })
}

// -----------------------------------------------------------------------------------------------------
// The pair model (data over several memory clocks)

/// The V²f factor per core level, the memory factor per memory level and each job's static share and
/// memory share, by alternating least squares on q = s + (1 − s − k)·g + k·h (g, h = 1 at the reference
/// levels), relative weights. The start is h ∝ the memory clock and a small share k: from k = 0 and h = 1
/// the memory terms are collinear with the static one and the iteration cannot leave them.
fn fit_v2f_pair(mhz: &[f64], mems: &[f64], curves: &[Curve]) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let n = mhz.len();
    let n_mem = mems.len();
    let f_ref = mhz[n - 1];
    let m_ref = mems[n_mem - 1];
    let mut g: Vec<f64> = mhz.iter().map(|m| (m / f_ref).powi(3)).collect();
    let mut h: Vec<f64> = mems.iter().map(|m| m / m_ref).collect();
    let mut s = vec![0.5; curves.len()];
    let mut k = vec![0.1; curves.len()];
    let pts = |c: &Curve| {
        c.points.iter().zip(&c.mem).map(|(p, m)| (p.0, m.0, p.3)).collect::<Vec<(usize, usize, f64)>>()
    };
    let all: Vec<Vec<(usize, usize, f64)>> = curves.iter().map(pts).collect();
    for _ in 0..300 {
        for (j, c) in all.iter().enumerate() {
            // (q − g) = s·(1 − g) + k·(h − g)
            let (mut a11, mut a12, mut a22, mut b1, mut b2) = (0.0, 0.0, 0.0, 0.0, 0.0);
            for &(li, mi, q) in c {
                let (u, v, w) = (1.0 - g[li], h[mi] - g[li], 1.0 / (q * q));
                a11 += w * u * u;
                a12 += w * u * v;
                a22 += w * v * v;
                b1 += w * u * (q - g[li]);
                b2 += w * v * (q - g[li]);
            }
            let det = a11 * a22 - a12 * a12;
            let (sj, kj) = if det.abs() > 1e-12 {
                ((b1 * a22 - b2 * a12) / det, (a11 * b2 - a12 * b1) / det)
            } else if a11 > 0.0 {
                (b1 / a11, 0.0)
            } else {
                (0.5, 0.0)
            };
            s[j] = sj.clamp(0.0, 1.0);
            k[j] = kj.clamp(0.0, 1.0 - s[j]);
        }
        for (li, gl) in g.iter_mut().enumerate().take(n - 1) {
            let (mut num, mut den) = (0.0, 0.0);
            for (j, c) in all.iter().enumerate() {
                for &(_, mi, q) in c.iter().filter(|p| p.0 == li) {
                    let (a, w) = (1.0 - s[j] - k[j], 1.0 / (q * q));
                    num += w * a * (q - s[j] - k[j] * h[mi]);
                    den += w * a * a;
                }
            }
            if den > 0.0 {
                *gl = (num / den).max(1e-3);
            }
        }
        for (mi, hm) in h.iter_mut().enumerate().take(n_mem - 1) {
            let (mut num, mut den) = (0.0, 0.0);
            for (j, c) in all.iter().enumerate() {
                for &(li, _, q) in c.iter().filter(|p| p.1 == mi) {
                    let w = 1.0 / (q * q);
                    num += w * k[j] * (q - s[j] - (1.0 - s[j] - k[j]) * g[li]);
                    den += w * k[j] * k[j];
                }
            }
            if den > 1e-12 {
                *hm = (num / den).max(0.0);
            }
        }
        g[n - 1] = 1.0;
        h[n_mem - 1] = 1.0;
    }
    (g, h, s, k)
}

/// A job's memory sensitivity `b` for its knee and slope under `form`: a grid over [0, 3] minimizing the
/// relative squared time error over all its pairs. Under [`MemTimeForm::Overlap`] a job whose memory time
/// never exceeds its core term has no single best `b` (every `b` below the one that would bind fits
/// alike); among the values that fit alike, the one nearest the job's DRAM utilization at the reference
/// pair (DRAMA, the memory time's share of the time when the DRAM is the only memory cost) is taken.
fn fit_sensitivity(c: &Curve, form: MemTimeForm, knee: f64, slope: f64) -> f64 {
    let err = |b: f64| {
        c.points
            .iter()
            .zip(&c.mem)
            .map(|(p, m)| ((pair_time(form, knee, slope, b, p.1, m.1) - p.2) / p.2).powi(2))
            .sum::<f64>()
    };
    let grid: Vec<(f64, f64)> = (0..=600).map(|i| i as f64 * 0.005).map(|b| (b, err(b))).collect();
    let least = grid.iter().map(|g| g.1).fold(f64::INFINITY, f64::min);
    if form != MemTimeForm::Overlap {
        return grid.iter().find(|g| g.1 == least).map_or(0.0, |g| g.0);
    }
    let drama = c.profile.get(Field::Drama);
    grid.iter()
        .filter(|g| g.1 <= least * (1.0 + 1e-9) + 1e-15)
        .min_by(|a, b| (a.0 - drama).abs().total_cmp(&(b.0 - drama).abs()))
        .map_or(0.0, |g| g.0)
}

/// The pair model: the core-only model at the reference (highest) memory clock, extended by the memory
/// dimension fitted on every pair. The time form (max or sum of the memory floor and the core term) and
/// each regressor's inputs are chosen by leave-one-program-out CV on the training jobs.
fn fit_pair_model(jobs: &[Job], params: &ClockFitParams, mems: &[f64]) -> Result<ClockFit> {
    let m_ref = mems[mems.len() - 1];
    let base = fit_clock_model(&super::at_memory(jobs, m_ref), params)?;
    let (mhz, curves, left_out) = curves(jobs)?;
    let (g, h, s, k) = fit_v2f_pair(&mhz, mems, &curves);
    let cands = candidates(&curves, &params.ridge);
    let knees: Vec<(f64, f64)> = curves
        .iter()
        .map(|c| {
            let axis: Vec<(f64, f64)> =
                c.points.iter().zip(&c.mem).filter(|(_, m)| m.1 == 1.0).map(|(p, _)| (p.1, p.2)).collect();
            fit_knee(&axis)
        })
        .collect();
    let tk: Vec<f64> = knees.iter().map(|k| k.0).collect();
    let ts: Vec<f64> = knees.iter().map(|k| k.1).collect();
    let mut best: Option<(f64, MemTimeForm, Vec<Linear>, Candidate)> = None;
    let mut form_notes = Vec::new();
    for form in [MemTimeForm::Max, MemTimeForm::Sum, MemTimeForm::Overlap] {
        let tb: Vec<f64> =
            curves.iter().zip(&knees).map(|(c, kn)| fit_sensitivity(c, form, kn.0, kn.1)).collect();
        let loss = |j: usize, th: &[f64]| {
            let c = &curves[j];
            100.0
                * mean(
                    &c.points
                        .iter()
                        .zip(&c.mem)
                        .map(|(p, m)| (pair_time(form, th[0], th[1], th[2], p.1, m.1) - p.2).abs() / p.2)
                        .collect::<Vec<_>>(),
                )
        };
        let (tm, cand, cv) = select(&curves, &[tk.clone(), ts.clone(), tb], &cands, &loss);
        form_notes.push(format!("{form:?}: {cv:.2}%"));
        if best.as_ref().is_none_or(|b| cv < b.0 - 1e-12) {
            best = Some((cv, form, tm, cand));
        }
    }
    let Some((tcv, form, tm, tcand)) = best else {
        return Err(Error::Invalid("no time form could be fitted".into()));
    };
    let power_loss = |j: usize, th: &[f64]| {
        let c = &curves[j];
        let kk = th[1].clamp(0.0, (1.0 - th[0]).max(0.0));
        100.0
            * mean(
                &c.points
                    .iter()
                    .zip(&c.mem)
                    .map(|(p, m)| {
                        let q = th[0] + (1.0 - th[0] - kk) * g[p.0] + kk * h[m.0];
                        (q - p.3).abs() / p.3
                    })
                    .collect::<Vec<_>>(),
            )
    };
    let (pm, pcand, pcv) = select(&curves, &[s, k], &cands, &power_loss);
    let f_ref = mhz[mhz.len() - 1];
    let mut model = base.model;
    for (l, gl) in model.levels.iter_mut().zip(&g) {
        l.v2f = *gl;
        l.voltage = (gl * f_ref / l.core_mhz).sqrt();
    }
    model.mem_mhz = None;
    model.knee = tm[0].clone();
    model.slope = tm[1].clone();
    model.static_share = pm[0].clone();
    model.memory = Some(MemoryModel {
        ref_mem_mhz: m_ref,
        levels: mems.iter().zip(&h).map(|(m, h)| MemLevel { mem_mhz: *m, h: *h }).collect(),
        time_form: form,
        sensitivity: tm[2].clone(),
        share: pm[1].clone(),
    });
    let programs: BTreeSet<&str> = curves.iter().map(|c| c.program.as_str()).collect();
    let own = model.provenance.selection.pop().unwrap_or_default();
    model.provenance.training_jobs = curves.len();
    model.provenance.training_programs = programs.len();
    model.provenance.selection = vec![
        format!(
            "memory clocks {} MHz, reference {m_ref:.0} MHz; time form by leave-one-program-out time MAPE over \
             pairs: {} — chose {form:?}",
            mems.iter().map(|m| format!("{m:.0}")).collect::<Vec<_>>().join(", "),
            form_notes.join(", ")
        ),
        format!(
            "time knee, slope and memory sensitivity: {} — leave-one-program-out time MAPE over pairs {tcv:.2}%",
            tcand.label()
        ),
        format!(
            "power static and memory shares: {} — leave-one-program-out power MAPE over pairs {pcv:.2}%",
            pcand.label()
        ),
        format!("{own} (at the reference memory clock)"),
    ];
    Ok(ClockFit {
        model,
        cv_time_mape: tcv,
        cv_power_mape: pcv,
        cv_own_clock_mape: base.cv_own_clock_mape,
        curves,
        left_out,
    })
}

// -----------------------------------------------------------------------------------------------------
// The DSO form (peer baseline)

/// DSO's per-job form (Wang et al., arXiv:2407.13096): with f = clock / highest clock,
/// time / fastest time = t0 for 1/f < Fc, else t0 + (1/f − Fc)·delta; power / highest power =
/// p0 + cg·V²·f with V = 2(f − 0.5)² + 0.5. Its five parameters are predicted from the profile.
#[derive(Debug, Clone)]
pub struct DsoModel {
    pub f_max: f64,
    /// Fc, delta, t0, p0, cg.
    pub params: Vec<Linear>,
    pub selection: Vec<String>,
}

/// DSO's voltage law.
pub fn dso_v2f(f: f64) -> f64 {
    let v = 2.0 * (f - 0.5).powi(2) + 0.5;
    v * v * f
}

/// DSO relative time and power at relative clock `f` for parameters `th` = [Fc, delta, t0, p0, cg].
pub fn dso_curve(th: &[f64], f: f64) -> (f64, f64) {
    let u = 1.0 / f;
    let t = if u < th[0] { th[2] } else { th[2] + (u - th[0]) * th[1] };
    (t, th[3] + th[4] * dso_v2f(f))
}

/// DSO's five parameters fitted to one job's measured curve (normalized by its fastest time and highest
/// power): Fc by a grid, (t0, delta) and (p0, cg) by weighted least squares.
pub fn fit_dso_job(f: &[f64], t_norm: &[f64], p_norm: &[f64]) -> [f64; 5] {
    let umax = f.iter().map(|x| 1.0 / x).fold(1.0, f64::max);
    let mut best = (f64::INFINITY, [1.0, 0.0, 1.0]);
    for k in 0..=400 {
        let fc = 1.0 + (umax - 1.0) * k as f64 / 400.0;
        let (mut s11, mut s12, mut s22, mut b1, mut b2) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for (x, y) in f.iter().zip(t_norm) {
            let h = (1.0 / x - fc).max(0.0);
            let w = 1.0 / (y * y);
            s11 += w;
            s12 += w * h;
            s22 += w * h * h;
            b1 += w * y;
            b2 += w * h * y;
        }
        let det = s11 * s22 - s12 * s12;
        let (t0, delta) = if det.abs() > 1e-12 {
            ((b1 * s22 - b2 * s12) / det, (s11 * b2 - s12 * b1) / det)
        } else {
            (b1 / s11, 0.0)
        };
        let err: f64 =
            f.iter().zip(t_norm).map(|(x, y)| ((t0 + delta * (1.0 / x - fc).max(0.0) - y) / y).powi(2)).sum();
        if err < best.0 - 1e-15 {
            best = (err, [fc, delta, t0]);
        }
    }
    let (mut s11, mut s12, mut s22, mut b1, mut b2) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for (x, y) in f.iter().zip(p_norm) {
        let z = dso_v2f(*x);
        let w = 1.0 / (y * y);
        s11 += w;
        s12 += w * z;
        s22 += w * z * z;
        b1 += w * y;
        b2 += w * z * y;
    }
    let det = s11 * s22 - s12 * s12;
    let (p0, cg) = if det.abs() > 1e-12 {
        ((b1 * s22 - b2 * s12) / det, (s11 * b2 - s12 * b1) / det)
    } else {
        (b1 / s11, 0.0)
    };
    [best.1[0], best.1[1], best.1[2], p0, cg]
}

/// Fits DSO's form per training job and its parameter predictors (same candidates and folds as ours).
pub fn fit_dso(curves: &[Curve], mhz: &[f64], ridge: &[f64]) -> DsoModel {
    let f_max = mhz[mhz.len() - 1];
    let norm = |c: &Curve| {
        let f: Vec<f64> = c.points.iter().map(|p| mhz[p.0] / f_max).collect();
        let tmin = c.time_s.iter().copied().fold(f64::INFINITY, f64::min);
        let pmax = c.power_w.iter().copied().fold(0.0, f64::max);
        let t: Vec<f64> = c.time_s.iter().map(|t| t / tmin).collect();
        let p: Vec<f64> = c.power_w.iter().map(|p| p / pmax).collect();
        (f, t, p)
    };
    let fitted: Vec<[f64; 5]> = curves
        .iter()
        .map(|c| {
            let (f, t, p) = norm(c);
            fit_dso_job(&f, &t, &p)
        })
        .collect();
    let cands = candidates(curves, ridge);
    // Scored as the clock model is: anchored at the reference run, relative error over the job's clocks.
    let time_loss = |j: usize, th: &[f64]| {
        let c = &curves[j];
        let full = [th[0], th[1], th[2], 0.0, 0.0];
        let r1 = dso_curve(&full, 1.0).0;
        100.0
            * mean(
                &c.points
                    .iter()
                    .map(|&(li, _, y, _)| (dso_curve(&full, mhz[li] / f_max).0 / r1 - y).abs() / y)
                    .collect::<Vec<_>>(),
            )
    };
    let power_loss = |j: usize, th: &[f64]| {
        let c = &curves[j];
        let full = [1.0, 0.0, 1.0, th[0], th[1]];
        let q1 = dso_curve(&full, 1.0).1;
        100.0
            * mean(
                &c.points
                    .iter()
                    .map(|&(li, _, _, q)| (dso_curve(&full, mhz[li] / f_max).1 / q1 - q).abs() / q)
                    .collect::<Vec<_>>(),
            )
    };
    let col = |k: usize| fitted.iter().map(|x| x[k]).collect::<Vec<f64>>();
    let (tm, tc, tcv) = select(curves, &[col(0), col(1), col(2)], &cands, &time_loss);
    let (pm, pc, pcv) = select(curves, &[col(3), col(4)], &cands, &power_loss);
    DsoModel {
        f_max,
        params: tm.into_iter().chain(pm).collect(),
        selection: vec![
            format!("DSO Fc, delta, t0: {} — leave-one-program-out time MAPE {tcv:.2}%", tc.label()),
            format!("DSO p0, cg: {} — leave-one-program-out power MAPE {pcv:.2}%", pc.label()),
        ],
    }
}

impl DsoModel {
    /// The five parameters for a profile.
    pub fn predict(&self, p: &UtilizationProfile) -> Vec<f64> {
        self.params.iter().map(|m| m.eval(p)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_knee_fit_recovers_a_memory_floor_and_a_compute_bound_line() {
        let xs = [1.0, 1.1, 1.25, 1.46, 1.72, 1.96];
        let floor: Vec<(f64, f64)> = xs.iter().map(|&x| (x, 1.0 + 0.9 * (x - 1.4f64).max(0.0))).collect();
        let (k, s) = fit_knee(&floor);
        assert!((k - 1.4).abs() < 0.01 && (s - 0.9).abs() < 0.02, "{k} {s}");
        let line: Vec<(f64, f64)> = xs.iter().map(|&x| (x, x)).collect();
        let (k, s) = fit_knee(&line);
        assert!((k - 1.0).abs() < 1e-9 && (s - 1.0).abs() < 1e-9, "{k} {s}");
    }

    #[test]
    fn ridge_without_penalty_is_least_squares() {
        use gpumodel_models::utilization::Source;
        let mk = |d: f64| UtilizationProfile {
            name: "j".into(),
            program: None,
            source: Source::Document,
            gpu: None,
            device: None,
            fields: [(Field::Drama, d)].into_iter().collect(),
            core_mhz: 1.0,
            mem_mhz: None,
            power_w: None,
            time_s: None,
            samples: 1,
        };
        let ps: Vec<UtilizationProfile> = [0.0, 0.5, 1.0].iter().map(|&d| mk(d)).collect();
        let refs: Vec<&UtilizationProfile> = ps.iter().collect();
        let m = ridge(&refs, &[1.0, 2.0, 3.0], &[Field::Drama], 0.0);
        assert!((m.intercept - 1.0).abs() < 1e-9 && (m.weights[0] - 2.0).abs() < 1e-9, "{m:?}");
    }

    #[test]
    fn the_dso_fit_recovers_its_own_parameters() {
        let th = [1.3, 1.1, 1.02, 0.45, 0.57];
        let f: Vec<f64> = [705.0, 802.0, 945.0, 1087.0, 1237.0, 1380.0].iter().map(|m| m / 1380.0).collect();
        let t: Vec<f64> = f.iter().map(|x| dso_curve(&th, *x).0).collect();
        let p: Vec<f64> = f.iter().map(|x| dso_curve(&th, *x).1).collect();
        let got = fit_dso_job(&f, &t, &p);
        for (a, b) in got.iter().zip(th) {
            assert!((a - b).abs() < 0.01, "{got:?}");
        }
    }
    /// A synthetic law over (core, memory) pairs with known memory sensitivity b and memory share k, both
    /// linear in DRAMA: the pair fit recovers b and the sum form it was made with; its held-out power error
    /// is below 0.5 % and its time error below 1 % (the knee is found on a grid).
    #[test]
    fn the_pair_fit_recovers_a_known_memory_sensitivity_and_share() {
        use gpumodel_models::utilization::Source;
        let (cores, mems) = ([1000.0, 1250.0, 1500.0, 1750.0, 2000.0], [4000.0, 4500.0, 5000.0, 5500.0]);
        let law = |d: f64| (1.0 + 0.5 * d, 1.0 - 0.5 * d, 0.2 + 0.8 * d, 0.3, 0.05 + 0.2 * d);
        let jobs: Vec<Job> = (0..8)
            .map(|i| {
                let d = 0.1 * (i + 1) as f64;
                let (knee, slope, b, s, k) = law(d);
                let name = format!("p{i}");
                let runs = cores
                    .iter()
                    .flat_map(|&f| mems.iter().map(move |&m| (f, m)))
                    .map(|(f, m)| {
                        let (x, y) = (2000.0 / f, 5500.0 / m);
                        let t = pair_time(MemTimeForm::Sum, knee, slope, b, x, y);
                        let p = s + (1.0 - s - k) * (f / 2000.0f64).powf(2.5) + k * (m / 5500.0f64).powf(1.5);
                        UtilizationProfile {
                            name: name.clone(),
                            program: Some(name.clone()),
                            source: Source::Document,
                            gpu: None,
                            device: None,
                            fields: [(Field::Drama, d)].into_iter().collect(),
                            core_mhz: f,
                            mem_mhz: Some(m),
                            power_w: Some(200.0 * p),
                            time_s: Some(t),
                            samples: 1,
                        }
                    })
                    .collect();
                Job { name: name.clone(), program: name, runs }
            })
            .collect();
        let fit = fit_clock_model(&jobs, &ClockFitParams::default()).unwrap();
        let mm = fit.model.memory.as_ref().expect("a pair model");
        assert_eq!((mm.time_form, mm.ref_mem_mhz, mm.levels.len()), (MemTimeForm::Sum, 5500.0, 4));
        for c in &fit.curves {
            let d = c.profile.get(Field::Drama);
            let (_, _, b, _, k) = law(d);
            let (gb, gk) = (mm.sensitivity.eval(&c.profile), mm.share.eval(&c.profile));
            assert!((gb - b).abs() < 0.02, "b at DRAMA {d}: {gb} vs {b}");
            // The share k and the per-level factor h enter power as k·(h(m) − 1) away from the reference
            // memory clock: only that product is identified, so power is checked, not k itself.
            let _ = (gk, k);
        }
        assert!(
            fit.cv_time_mape < 1.0 && fit.cv_power_mape < 0.5,
            "{} {}",
            fit.cv_time_mape,
            fit.cv_power_mape
        );
    }
}
