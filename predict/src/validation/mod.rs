//! Predicted versus measured kernel time and E·D^n optima on NV-DVFS data (Wang & Chu, ICPADS 2018).
//!
//! For every kernel, one profile is taken from its row nearest the architecture's default clocks (counter
//! totals do not depend on the clocks; the rest of its rows are only used as measurements) and the timing
//! model predicts every clock pair. Two figures are reported:
//!
//! * **model** — the timing model as it is, with the architecture profile's constants (nothing fitted);
//! * **calibrated** — `T = ((a_m·M)^p + (a_c·C)^p + (a_s·S)^p + (a_l·L)^p)^(1/p) + sync` over the model's
//!   memory, compute and shared pipeline times and the L2 time of its DRAM traffic at the core clock (see
//!   [`TimeCalibration`]): four global factors (how far from the
//!   model's peak each pipeline runs) and a soft maximum (how much the pipelines overlap), fitted on
//!   relative error with **leave-one-kernel-out** cross-validation: a kernel's prediction comes from
//!   factors fitted on the other kernels only (out-of-fold). The exponent `p` is chosen inside each
//!   fold by an inner leave-one-kernel-out over that fold's training kernels ([`nested`]), so neither
//!   the factors nor `p` ever see the kernel being predicted. The plain LOKO error of every fixed `p` is
//!   reported too; its minimum is chosen on the figure it reports (optimistic).
//!
//! For the E·D^n optima, power at each clock pair comes from a ridge multiple linear regression fitted by
//! this module (the `gpumodel-train` API is not used here) on counter rates = totals / predicted time and
//! the clocks, also leave-one-kernel-out; its input set is chosen inside each fold like `p`
//! ([`power_fit`]). Per kernel, the clock pair that minimizes the *predicted* E·D^n is compared with the
//! one that minimizes the *measured* E·D^n; the regret is the extra measured E·D^n at the picked pair.
//! Two diagnostic regrets put the measured time, or the measured power, in place of the prediction.
//!
//! **Calibration that cannot hurt**: inside each fold the uncalibrated model is a candidate too; unless
//! the best calibrated candidate beats it on the fold's training kernels by more than one standard
//! error, the fold drops the calibration ([`nested`]). The model's structural alternative
//! ([`TimingConfig::structural`]) competes inside the folds the same way. **Baselines** ([`crate::baseline`]): peer timing models computed from the same rows,
//! reported per kernel and overall beside ours. **Kernel sets** ([`Options::kernels`]): the whole
//! validation — folds, fits and figures — runs on the named kernels only.

use crate::baseline::{Baseline, PeerInputs, WangChuConstants};
use crate::calibration::{CalRow, TimeCalibration, additive_s, pipeline_parts};
use crate::error::{Error, Result};
use crate::nvdvfs::{kernels, profile_from_row_for};
use crate::power::{UTILIZATIONS, base_values};
use gpumodel_models::Table;
use gpumodel_models::arch::ArchProfile;
use gpumodel_models::energy::Objective;
use gpumodel_models::stats::{mape, mean, median};
use gpumodel_models::timing::{
    Clocks, SharedOverlap, TimingConfig, TimingInputs, occupancy, predict_time, predict_time_with,
};
use gpumodel_models::uncertainty::{self, Interval, Paired, SeedPredictions};

pub mod from_gpu;
pub mod nested;
pub mod power_fit;
pub mod report;

use power_fit::{PowerFit, PowerInputs, PowerRow};
pub use report::*;

struct Prepared {
    kernel: usize,
    clocks: Clocks,
    kind: &'static str,
    parts: [f64; 4],
    sync: f64,
    model: f64,
    /// The row under the model's structural alternative (the nested procedure's structural candidates):
    /// its pipeline parts, its own unscaled time (barriers and its fill, at the default core clock) and
    /// its time.
    alt: nested::AltRow,
    components: [f64; 7],
    measured_t: f64,
    measured_p: f64,
    /// Each requested baseline's time, in the order of [`Options::baselines`].
    baselines: Vec<f64>,
    /// What the power model sees.
    power: PowerRow,
}

/// What to validate and how.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Objectives for the optimum check (E^a·D^b).
    pub objectives: Vec<Objective>,
    /// Restrict the validation to these kernels (the data's group names); `None` for all. Unknown names
    /// are an error that lists them.
    pub kernels: Option<Vec<String>>,
    /// Peer timing models to compute from the same rows.
    pub baselines: Vec<Baseline>,
    /// Profiles from another GPU ([`from_gpu`]): each kernel's counters and measured time are that GPU's,
    /// and the rows under test only give clocks and the times to score against.
    pub from: Option<from_gpu::FromGpu>,
}

impl Options {
    /// Every kernel, no baseline, these objectives.
    pub fn new(objectives: &[Objective]) -> Options {
        Options { objectives: objectives.to_vec(), kernels: None, baselines: Vec::new(), from: None }
    }
}

/// The kernels (groups) of `t` to validate, with their rows: all, or the named ones in the data's order.
fn selected_kernels(t: &Table, names: Option<&[String]>) -> Result<Vec<(String, Vec<usize>)>> {
    let groups = kernels(t);
    let Some(names) = names else { return Ok(groups) };
    known_names(names, &groups, &format!("{}: unknown kernel(s)", t.source), "the data has")?;
    Ok(groups.into_iter().filter(|(g, _)| names.contains(g)).collect())
}

/// Fails with `what` and the names not among `groups` (and the names there are), if any.
fn known_names(names: &[String], groups: &[(String, Vec<usize>)], what: &str, there: &str) -> Result<()> {
    let unknown: Vec<&str> =
        names.iter().map(String::as_str).filter(|n| !groups.iter().any(|(g, _)| g == n)).collect();
    if unknown.is_empty() {
        return Ok(());
    }
    Err(Error::Invalid(format!(
        "{what} {} ({there} {})",
        unknown.join(", "),
        groups.iter().map(|(g, _)| g.as_str()).collect::<Vec<_>>().join(", ")
    )))
}

/// Where a long validation reports how far it is (a progress bar in the CLI; `()` reports nothing).
/// Called from several threads.
pub trait Progress: Sync {
    /// The work is `total` steps (calibration fits).
    fn start(&self, total: u64);
    /// `n` more steps are done.
    fn inc(&self, n: u64);
}

impl Progress for () {
    fn start(&self, _: u64) {}
    fn inc(&self, _: u64) {}
}

/// The row of `rows` (of table `t`) whose clocks are nearest `to`, by relative distance: a kernel's
/// profile (its counter totals do not depend on the clocks).
pub(crate) fn nearest_row(t: &Table, rows: &[usize], to: Clocks) -> usize {
    let col = |c: &str, r: usize| t.column_index(c).map_or(f64::NAN, |j| t.data[[r, j]]);
    let d = |r: usize| {
        ((col("core_mhz", r) - to.core_mhz) / to.core_mhz).powi(2)
            + ((col("mem_mhz", r) - to.mem_mhz) / to.mem_mhz).powi(2)
    };
    *rows.iter().min_by(|&&a, &&b| d(a).total_cmp(&d(b))).expect("a group has rows")
}

/// Validates the timing model (and an MLR power model for the optima) on an NV-DVFS table.
pub fn validate(t: &Table, arch: &ArchProfile, opts: &Options) -> Result<Report> {
    validate_with_progress(t, arch, opts, &())
}

/// [`validate`], reporting its calibration fits (most of its time) to `progress`.
pub fn validate_with_progress(
    t: &Table,
    arch: &ArchProfile,
    opts: &Options,
    progress: &dyn Progress,
) -> Result<Report> {
    let objectives = &opts.objectives;
    for c in ["time_s", "power_w", "core_mhz", "mem_mhz"] {
        if t.column_index(c).is_none() {
            return Err(Error::Mismatch(format!(
                "{}: no '{c}' column: validation needs NV-DVFS data with measured time and power",
                t.source
            )));
        }
    }
    let groups = selected_kernels(t, opts.kernels.as_deref())?;
    if groups.len() < 3 {
        return Err(Error::Invalid(format!(
            "{}: {} kernel(s): leave-one-kernel-out validation needs at least 3",
            t.source,
            groups.len()
        )));
    }
    let col = |name: &str, r: usize| t.data[[r, t.column_index(name).expect("checked")]];
    // Measurements and clocks must be positive: name the first bad row before any work.
    for &r in groups.iter().flat_map(|(_, rows)| rows) {
        for (c, what) in [
            ("time_s", "measured time"),
            ("power_w", "measured power"),
            ("core_mhz", "core clock"),
            ("mem_mhz", "memory clock"),
        ] {
            let v = col(c, r);
            if !(v.is_finite() && v > 0.0) {
                return Err(Error::Invalid(format!(
                    "{} line {}: {what} ({c}) is {v}: it must be > 0 (fix or remove the row)",
                    t.source,
                    r + 2
                )));
            }
        }
    }
    if opts.from.is_none()
        && let Some(b) = opts.baselines.iter().find(|b| b.needs_a_measured_time())
    {
        return Err(Error::Invalid(format!(
            "baseline {} starts from a time measured on another GPU: give --from DATA --from-arch ARCH (its NV-DVFS rows and profile)",
            b.label()
        )));
    }
    let peer_constants = if opts.baselines.iter().all(|b| b.needs_a_measured_time()) {
        None
    } else {
        Some(WangChuConstants::for_arch(&arch.name).ok_or_else(|| {
            Error::Invalid(format!(
                "no published Wang & Chu constants for '{}': the baselines {} run on gtx980, gtx1080ti, p100 and v100",
                arch.name,
                opts.baselines.iter().map(|b| b.label()).collect::<Vec<_>>().join(", ")
            ))
        })?)
    };
    let default = Clocks::default_for(arch);
    // The rows' metrics read with the semantics of the profile's compute capability.
    let cc = gpumodel_models::ncu::metrics::Capability::parse(&arch.compute_capability);
    let mut prep: Vec<Prepared> = Vec::with_capacity(t.n_rows());
    let mut bottlenecks = Vec::new();
    let anchors = opts.from.as_ref().map(|f| from_gpu::anchors(f, t, &groups)).transpose()?;
    for (ki, (_, rows)) in groups.iter().enumerate() {
        // The profile: the row nearest the default clocks (relative distance).
        let anchor = anchors.as_ref().map(|a| &a[ki]);
        let k = match &anchor {
            Some(a) => a.profile.clone(),
            None => profile_from_row_for(t, nearest_row(t, rows, default), cc)?,
        };
        let x = TimingInputs::from_profile(&k)?;
        let cfg = crate::kernel::Config::default();
        let tp = crate::kernel::predict_time_only(&k, arch, &cfg)?;
        bottlenecks.push(tp.bottleneck);
        let occ = occupancy(&k.launch, arch, Some(tp.occupancy.active_warps_per_sm))?;
        let t0 = predict_time(&x, arch, &occ, default);
        let base = base_values(&k, &x, arch, t0.time_s, t0.time_s, default);
        let mut util_t0 = [0.0; 8];
        for (u, name) in util_t0.iter_mut().zip(UTILIZATIONS) {
            *u = base.get(name).unwrap_or(0.0) * t0.time_s;
        }
        for &r in rows {
            let clocks = Clocks { core_mhz: col("core_mhz", r), mem_mhz: col("mem_mhz", r) };
            let tm = predict_time(&x, arch, &occ, clocks);
            let overlap = TimingConfig::structural(SharedOverlap::ReplaysOverlapIssue);
            let to = predict_time_with(&x, arch, &occ, clocks, overlap);
            // The structures differ in the SM side and the fill, never in the barrier time.
            debug_assert_eq!(to.sync_s, tm.sync_s);
            let own_peer = match (&peer_constants, anchor) {
                (Some(_), None) => Some(PeerInputs::from_row(t, r)?),
                _ => None,
            };
            let mut baselines = Vec::with_capacity(opts.baselines.len());
            for b in &opts.baselines {
                let v = match (b, anchor, &opts.from) {
                    (Baseline::Scaled, Some(a), Some(f)) => a.scaled_s(&f.arch, arch, clocks),
                    (Baseline::ModelScaled, Some(a), _) => a.model_scaled_s(tm.time_s),
                    _ => {
                        let px = anchor.map(|a| &a.peer).or(own_peer.as_ref());
                        match (peer_constants.as_ref(), px) {
                            (Some(c), Some(px)) => {
                                b.time_s(c, px, clocks.core_mhz, clocks.mem_mhz).unwrap_or(f64::NAN)
                            }
                            _ => f64::NAN,
                        }
                    }
                };
                baselines.push(v);
            }
            prep.push(Prepared {
                kernel: ki,
                clocks,
                kind: tm.bound_kind,
                parts: pipeline_parts(&tm),
                sync: additive_s(&tm),
                model: tm.time_s,
                alt: (pipeline_parts(&to), additive_s(&to), to.time_s),
                components: tm.components_s,
                measured_t: col("time_s", r),
                measured_p: col("power_w", r),
                baselines,
                power: PowerRow {
                    core_mhz: clocks.core_mhz,
                    mem_mhz: clocks.mem_mhz,
                    util_t0,
                    measured_w: col("power_w", r),
                },
            });
        }
    }
    // Leave-one-kernel-out: time coefficients, then power MLR on rates at the out-of-fold time.
    let n = prep.len();
    let mut pred_t = vec![0.0; n];
    let mut pred_p = vec![0.0; n];
    let all: Vec<CalRow> = prep.iter().map(|p| (p.parts, p.sync, p.measured_t)).collect();
    let model_t: Vec<f64> = prep.iter().map(|p| p.model).collect();
    let kernel_of: Vec<usize> = prep.iter().map(|p| p.kernel).collect();
    let alt: Vec<nested::AltRow> = prep.iter().map(|p| p.alt).collect();
    progress.start(nested::fit_count(groups.len(), true));
    let nest = nested::nested_with_progress(
        &all,
        &model_t,
        Some(alt.as_slice()),
        &kernel_of,
        groups.len(),
        progress,
    );
    let mut fold_power = vec![PowerInputs::Clocks; groups.len()];
    for (fold, fold_power) in fold_power.iter_mut().enumerate() {
        let train: Vec<&Prepared> = prep.iter().filter(|p| p.kernel != fold).collect();
        let fit = &nest.folds[fold];
        let time = |p: &Prepared| fit.time(p.parts, p.sync, p.model, Some(p.alt));
        // The power inputs, chosen like p: by an inner leave-one-kernel-out over this fold's training
        // kernels (power MAPE), never looking at the held-out kernel. The rates use this fold's
        // calibrated times, whose factors saw the inner held-out kernel's times too: that only touches
        // the ranking of the candidates, and the outer kernel's measurements stay out of it.
        let inner: Vec<(&PowerRow, f64, usize)> = train
            .iter()
            .map(|p| (&p.power, time(p), if p.kernel > fold { p.kernel - 1 } else { p.kernel }))
            .collect();
        let scores: Vec<f64> = PowerInputs::ALL
            .iter()
            .map(|&k| power_fit::loko_mape_pct(k, &inner).unwrap_or(f64::INFINITY))
            .collect();
        let kind = PowerInputs::ALL[nested::argmin(&scores)];
        *fold_power = kind;
        let rows: Vec<(&PowerRow, f64)> = train.iter().map(|p| (&p.power, time(p))).collect();
        let fit = PowerFit::fit(kind, &rows)
            .ok_or_else(|| Error::Invalid("the power regression is singular on this data".into()))?;
        for (i, p) in prep.iter().enumerate().filter(|(_, p)| p.kernel == fold) {
            pred_t[i] = time(p);
            pred_p[i] = fit.predict(&p.power, pred_t[i]);
        }
    }
    // The saved calibration's structure: the replay-overlap model where it beats the additive one over
    // all kernels by more than one standard error of the per-kernel differences (neither is fitted, so
    // their errors are out-of-sample already); the factors are then fitted on that structure's parts.
    let shared_overlap = nested::structure_over_all(&all, &model_t, &alt, &kernel_of, groups.len());
    // p by plain leave-one-kernel-out on the rows of the structure the factors are fitted to, and that
    // structure's own uncalibrated error: what the saved file says about itself holds for its rows.
    let (saved_rows, saved_model): (Vec<CalRow>, Vec<f64>) = match shared_overlap {
        SharedOverlap::Additive => (all.clone(), model_t.clone()),
        SharedOverlap::ReplaysOverlapIssue => {
            (nested::alternative_rows(&all, &alt), alt.iter().map(|a| a.2).collect())
        }
    };
    let saved_model_mape_pct = mape(saved_model.iter().zip(&saved_rows).map(|(m, r)| (*m, r.2)));
    let loko = nested::loko_exponent_predictions(&saved_rows, &kernel_of, groups.len());
    let exponent_mape_pct = nested::exponent_mape_pct(&loko, &saved_rows);
    let selected = nested::argmin(&exponent_mape_pct);
    // The folds' keep rule, for the file too: the factors only where their leave-one-kernel-out errors
    // beat the structure alone by more than one standard error; otherwise the file is the structure.
    // The candidate sets differ: the file tests only the four-factor form at the fixed-p table's `p`
    // against its structure, while each fold chooses among every calibration form, the compute floor,
    // both structures and the model as is (a file applies one form); so a fold may keep a candidate the
    // file cannot record, and the file's figure is its own (see `Report::calibration_file`).
    let calibration =
        nested::factors_beat_structure(&loko[selected], &saved_rows, &saved_model, &kernel_of, groups.len())
            .then(|| TimeCalibration::fit(&saved_rows, nested::EXPONENTS[selected]));
    let in_sample = calibration.map_or(saved_model_mape_pct, |c| {
        mape(saved_rows.iter().map(|&(parts, sync, y)| (c.time(parts, sync), y)))
    });
    let labels: Vec<&'static str> = opts.baselines.iter().map(|b| b.label()).collect();
    let per_row: Vec<RowResult> = prep
        .iter()
        .enumerate()
        .map(|(i, p)| RowResult {
            kernel: groups[p.kernel].0.clone(),
            core_mhz: p.clocks.core_mhz,
            mem_mhz: p.clocks.mem_mhz,
            measured_time_s: p.measured_t,
            model_time_s: p.model,
            bound_kind: p.kind,
            model_components_s: p.components,
            predicted_time_s: pred_t[i],
            measured_power_w: p.measured_p,
            predicted_power_w: pred_p[i],
            baseline_time_s: labels.iter().map(|l| l.to_string()).zip(p.baselines.iter().copied()).collect(),
        })
        .collect();
    let mut per_kernel = Vec::new();
    let mut regrets: Vec<Vec<f64>> = vec![Vec::new(); objectives.len()];
    let mut regrets_mt: Vec<Vec<f64>> = vec![Vec::new(); objectives.len()];
    let mut regrets_mp: Vec<Vec<f64>> = vec![Vec::new(); objectives.len()];
    let mut hits = vec![0usize; objectives.len()];
    for (ki, (name, _)) in groups.iter().enumerate() {
        let rows: Vec<&RowResult> =
            per_row.iter().zip(&prep).filter(|(_, p)| p.kernel == ki).map(|(r, _)| r).collect();
        let measured: Vec<(f64, f64)> =
            rows.iter().map(|r| (r.measured_power_w * r.measured_time_s, r.measured_time_s)).collect();
        let predicted: Vec<(f64, f64)> = rows
            .iter()
            .map(|r| (r.predicted_power_w.max(0.0) * r.predicted_time_s, r.predicted_time_s))
            .collect();
        // Diagnostics: one side measured, the other predicted.
        let measured_time: Vec<(f64, f64)> = rows
            .iter()
            .map(|r| (r.predicted_power_w.max(0.0) * r.measured_time_s, r.measured_time_s))
            .collect();
        let measured_power: Vec<(f64, f64)> =
            rows.iter().map(|r| (r.measured_power_w * r.predicted_time_s, r.predicted_time_s)).collect();
        let mut choices = Vec::new();
        for (oi, o) in objectives.iter().enumerate() {
            let (Some(b), Some(p), Some(p_mt), Some(p_mp)) = (
                o.argmin(&measured),
                o.argmin(&predicted),
                o.argmin(&measured_time),
                o.argmin(&measured_power),
            ) else {
                continue;
            };
            let best = o.value(measured[b].0, measured[b].1);
            let regret_at = |i: usize| 100.0 * (o.value(measured[i].0, measured[i].1) / best - 1.0);
            let regret = regret_at(p);
            regrets[oi].push(regret);
            regrets_mt[oi].push(regret_at(p_mt));
            regrets_mp[oi].push(regret_at(p_mp));
            hits[oi] += usize::from(b == p);
            choices.push(Choice {
                objective: o.label(),
                best: (rows[b].core_mhz, rows[b].mem_mhz),
                picked: (rows[p].core_mhz, rows[p].mem_mhz),
                regret_pct: regret,
                regret_measured_time_pct: regret_at(p_mt),
                regret_measured_power_pct: regret_at(p_mp),
            });
        }
        let fold = &nest.folds[ki];
        per_kernel.push(KernelResult {
            kernel: name.clone(),
            rows: rows.len(),
            bottleneck: bottlenecks[ki],
            model_mape_pct: mape(rows.iter().map(|r| (r.model_time_s, r.measured_time_s))),
            mape_pct: mape(rows.iter().map(|r| (r.predicted_time_s, r.measured_time_s))),
            power_mape_pct: mape(rows.iter().map(|r| (r.predicted_power_w, r.measured_power_w))),
            fold_exponent: fold.exponent,
            fold_form: fold.form,
            fold_calibrated: fold.calibration.is_some(),
            fold_power_inputs: fold_power[ki].label(),
            baseline_mape_pct: labels
                .iter()
                .map(|l| {
                    (l.to_string(), mape(rows.iter().map(|r| (r.baseline_time_s[*l], r.measured_time_s))))
                })
                .collect(),
            choices,
        });
    }
    let worst =
        per_kernel.iter().max_by(|a, b| a.mape_pct.total_cmp(&b.mape_pct)).expect("at least 1 kernel");
    let objectives_summary = objectives
        .iter()
        .enumerate()
        .map(|(oi, o)| ObjectiveSummary {
            objective: o.label(),
            median_regret_pct: median(regrets[oi].clone()),
            mean_regret_pct: mean(&regrets[oi]),
            median_regret_ci95_pct: regret_interval(&regrets[oi], &median),
            mean_regret_ci95_pct: regret_interval(&regrets[oi], &|v| mean(&v)),
            max_regret_pct: regrets[oi].iter().copied().fold(0.0, f64::max),
            hit_rate: hits[oi] as f64 / groups.len() as f64,
            median_regret_measured_time_pct: median(regrets_mt[oi].clone()),
            median_regret_measured_power_pct: median(regrets_mp[oi].clone()),
        })
        .collect();
    let baselines: Vec<BaselineSummary> = labels
        .iter()
        .map(|l| {
            let worst = per_kernel
                .iter()
                .max_by(|a, b| a.baseline_mape_pct[*l].total_cmp(&b.baseline_mape_pct[*l]))
                .expect("at least 1 kernel");
            let (model_vs, calibrated_vs) = if groups.len() < MIN_KERNELS_FOR_INTERVAL {
                (None, None)
            } else {
                let (m, c) = paired_with_baseline(&per_row, l)?;
                (Some(m), Some(c))
            };
            Ok(BaselineSummary {
                name: l.to_string(),
                mape_pct: mape(per_row.iter().map(|r| (r.baseline_time_s[*l], r.measured_time_s))),
                median_kernel_mape_pct: median(per_kernel.iter().map(|k| k.baseline_mape_pct[*l]).collect()),
                worst_kernel: worst.kernel.clone(),
                worst_kernel_mape_pct: worst.baseline_mape_pct[*l],
                model_vs,
                calibrated_vs,
            })
        })
        .collect::<Result<_>>()?;
    let per_class = per_class(&per_kernel, &per_row, &labels);
    let mut method = vec![
        "one kernel profile per kernel, from its row nearest the architecture's default clocks; every clock pair predicted from it".to_string(),
        "model: the timing model with the architecture profile's constants, nothing fitted".into(),
        "calibrated: T = ((a_memory·M)^p + (a_compute·C)^p + (a_shared·S)^p + (a_l2·L)^p)^(1/p) + sync over the model's memory (global + texture), compute and shared times and L, its DRAM traffic's time through L2 at a bandwidth scaled with the core clock; factors fitted leave-one-kernel-out on mean absolute relative error (grouped CV over kernels, out-of-fold predictions)".into(),
        format!("nested selection: in each outer fold, p is chosen among {} by an inner leave-one-kernel-out over that fold's training kernels only; the headline MAPE is the outer out-of-fold error of that whole procedure", nested::EXPONENTS.map(|p| p.to_string()).join(", ")),
        format!("structural candidates: in each fold the model with bank-conflict replays overlapping the non-FP64 issue ((C^{0} + R^{0})^(1/{0}), p fixed at {0}, a development choice) and each wave's pipeline fill at the DRAM latency's time at the default core clock (not shortened by a higher core clock; a development choice), as is and with a compute floor over it that keeps the memory side (max(model, ((a·C + S)^{1} + M^{1})^(1/{1}) + sync), q = {1}, a development choice), compete with the calibration forms by the same inner leave-one-kernel-out error and keep rule; the per-kernel fold_form names the choice", gpumodel_models::timing::REPLAY_OVERLAP_EXPONENT, crate::calibration::FLOOR_MEMORY_EXPONENT),
        "calibration that cannot hurt: in each fold the uncalibrated model is a candidate too; the fold keeps its calibration only where the best calibrated candidate's inner leave-one-kernel-out error on the fold's training kernels beats the model's by more than one standard error of the per-kernel differences, else it predicts with the model as is".into(),
        "power for E·D^n: ridge MLR (least squares of gpumodel_models::stats, not gpumodel-train) on counter rates at the predicted time and the clocks, leave-one-kernel-out; the input set (clocks: clock polynomials; rates-times-v2: plus rates × core clock²; clock-levels: a free power and a free cost per operation per core-clock level) chosen in each fold by an inner leave-one-kernel-out power MAPE over its training kernels".into(),
        format!("intervals: 95% percentile bootstrap over the kernels ({RESAMPLES} resamples of whole kernels, seed {BOOTSTRAP_SEED}; from {MIN_KERNELS_FOR_INTERVAL} kernels on) for the gap between our time MAPE and each baseline's (paired: the same resamples for both) and for the median and mean regret of each objective; an interval that spans 0 means these kernels cannot tell the two models apart"),
        "regret diagnostics: the same picks with the measured time (predicted power as computed) or the measured power (predicted time) in place of the prediction, to tell which side misleads the pick".into(),
        "calibration (the saved one): the model's structure (additive, or the structural alternative) chosen by the keep rule over all kernels, then p by plain leave-one-kernel-out over all kernels on that structure's rows (the fixed-p table), factors fitted on all kernels with both — kept only where their leave-one-kernel-out errors beat the structure alone by more than one standard error of the per-kernel differences (the folds' keep rule), else the file records the structure alone; with factors, its expected error on unseen kernels is the nested out-of-fold MAPE of the whole procedure (whose folds choose among more candidates than the file's four-factor form, e.g. the compute floor, or none); the structure alone records its own error (nothing is fitted)".into(),
    ];
    if let Some(names) = &opts.kernels {
        method.push(format!(
            "kernel set: the validation (folds, fits, figures) ran on {} named kernel(s) only",
            names.len()
        ));
    }
    if !labels.is_empty() {
        method.push("baselines: computed from each row's own nvprof metrics with the authors' published per-GPU constants, without name-based special cases (see gpumodel_predict::baseline); nothing fitted on these rows".into());
    }
    if let Some(f) = &opts.from {
        method.push(format!("profiles from {}: each kernel's counters and measured time are its row nearest the {} default clocks; the rows under test give only their clocks and the times scored; the peer models read the same {} counters with this GPU's constants; scaled = that measured time x the two GPUs' throughput ratio in the kernel's bottleneck on {}; model-scaled = that measured time x the timing model's time ratio between the GPUs", f.table.source, f.arch.name, f.arch.name, f.arch.name));
    }
    Ok(Report {
        data: t.source.clone(),
        arch: arch.name.clone(),
        rows: per_row.len(),
        kernels: groups.len(),
        model_mape_pct: mape(per_row.iter().map(|r| (r.model_time_s, r.measured_time_s))),
        mape_pct: mape(per_row.iter().map(|r| (r.predicted_time_s, r.measured_time_s))),
        folds_calibrated: nest.folds.iter().filter(|f| f.calibration.is_some()).count(),
        folds_replays_overlap: nest
            .folds
            .iter()
            .filter(|f| {
                f.calibration.is_some_and(|c| c.shared_overlap() == SharedOverlap::ReplaysOverlapIssue)
            })
            .count(),
        exponents: nested::EXPONENTS
            .iter()
            .zip(&exponent_mape_pct)
            .map(|(&p, &m)| ExponentScore { p, loko_mape_pct: m })
            .collect(),
        selected_on_reported_mape_pct: exponent_mape_pct.iter().copied().fold(f64::INFINITY, f64::min),
        worst_kernel: worst.kernel.clone(),
        worst_kernel_mape_pct: worst.mape_pct,
        power_mape_pct: mape(per_row.iter().map(|r| (r.predicted_power_w, r.measured_power_w))),
        objectives: objectives_summary,
        baselines,
        per_class,
        per_kernel,
        per_row,
        method,
        calibration,
        calibration_shared_overlap: shared_overlap,
        calibration_in_sample_mape_pct: in_sample,
        calibration_model_mape_pct: saved_model_mape_pct,
    })
}

/// The 95% interval of a statistic of the per-kernel regrets, from [`MIN_KERNELS_FOR_INTERVAL`] kernels.
fn regret_interval(regrets: &[f64], statistic: &dyn Fn(Vec<f64>) -> f64) -> Option<Interval> {
    (regrets.len() >= MIN_KERNELS_FOR_INTERVAL)
        .then(|| uncertainty::interval_of(regrets, statistic, RESAMPLES, BOOTSTRAP_SEED))
        .flatten()
}

/// Our model's and our calibrated time MAPE, each minus baseline `label`'s, with 95% intervals from one
/// paired bootstrap over the kernels (whole kernels resampled, the three errors on the same draws).
fn paired_with_baseline(per_row: &[RowResult], label: &str) -> Result<(Paired, Paired)> {
    let column = |f: &dyn Fn(&RowResult) -> f64| vec![per_row.iter().map(f).collect::<Vec<f64>>()];
    let models = [
        SeedPredictions { model: "model".into(), per_seed: column(&|r| r.model_time_s) },
        SeedPredictions { model: "calibrated".into(), per_seed: column(&|r| r.predicted_time_s) },
        SeedPredictions { model: label.into(), per_seed: column(&|r| r.baseline_time_s[label]) },
    ];
    let measured: Vec<f64> = per_row.iter().map(|r| r.measured_time_s).collect();
    let kernels: Vec<String> = per_row.iter().map(|r| r.kernel.clone()).collect();
    let u = uncertainty::bootstrap(&models, &measured, &kernels, Some(label), RESAMPLES, BOOTSTRAP_SEED)
        .map_err(|e| Error::Invalid(format!("the comparison with {label}: {e}")))?;
    let vs = |i: usize| u.models[i].vs_reference.clone().expect("the reference is among the models");
    Ok((vs(0), vs(1)))
}

/// The keep rule of a saved calibration: out of fold it must not be worse than the model as is.
fn calibration_would_hurt(out_of_fold_mape_pct: f64, model_mape_pct: f64) -> bool {
    out_of_fold_mape_pct.is_nan() || out_of_fold_mape_pct > model_mape_pct
}

/// The figures per bottleneck class of the model, in the order the classes first appear.
fn per_class(
    per_kernel: &[KernelResult],
    per_row: &[RowResult],
    labels: &[&'static str],
) -> Vec<ClassResult> {
    let mut classes: Vec<&'static str> = Vec::new();
    for k in per_kernel {
        if !classes.contains(&k.bottleneck) {
            classes.push(k.bottleneck);
        }
    }
    classes
        .into_iter()
        .map(|class| {
            let names: Vec<&str> =
                per_kernel.iter().filter(|k| k.bottleneck == class).map(|k| k.kernel.as_str()).collect();
            let rows: Vec<&RowResult> =
                per_row.iter().filter(|r| names.contains(&r.kernel.as_str())).collect();
            ClassResult {
                class,
                kernels: names.len(),
                model_mape_pct: mape(rows.iter().map(|r| (r.model_time_s, r.measured_time_s))),
                mape_pct: mape(rows.iter().map(|r| (r.predicted_time_s, r.measured_time_s))),
                baseline_mape_pct: labels
                    .iter()
                    .map(|l| {
                        (l.to_string(), mape(rows.iter().map(|r| (r.baseline_time_s[*l], r.measured_time_s))))
                    })
                    .collect(),
            }
        })
        .collect()
}

impl Report {
    /// Whether the saved calibration would predict this GPU's kernels worse than the timing model as
    /// `predict` uses it without one: its leave-one-kernel-out error
    /// ([`Report::calibration_out_of_fold_mape_pct`]) above the model's own. `validate --save-calibration`
    /// then writes nothing.
    pub fn calibration_would_hurt(&self) -> bool {
        calibration_would_hurt(self.calibration_out_of_fold_mape_pct(), self.model_mape_pct)
    }

    /// What the saved calibration file records as its out-of-fold MAPE (see [`Report::calibration_file`]).
    pub fn calibration_out_of_fold_mape_pct(&self) -> f64 {
        match self.calibration {
            Some(_) => self.mape_pct,
            None => self.calibration_model_mape_pct,
        }
    }

    /// The calibration fitted on all kernels as a file, with how it does on this dataset: for factors,
    /// the nested out-of-fold MAPE of the whole procedure (whose folds choose among more candidates than
    /// the file's one form); for the structure alone, that structure's own error on these kernels —
    /// nothing is fitted, so that is the figure of what the file applies, not the procedure's.
    pub fn calibration_file(
        &self,
        dataset: crate::calibration::file::DatasetInfo,
    ) -> crate::calibration::file::CalibrationFile {
        crate::calibration::file::CalibrationFile::new(
            &self.arch,
            dataset,
            self.calibration,
            TimingConfig::structural(self.calibration_shared_overlap),
            crate::calibration::file::FitInfo {
                out_of_fold_mape_pct: self.calibration_out_of_fold_mape_pct(),
                in_sample_mape_pct: self.calibration_in_sample_mape_pct,
                uncalibrated_mape_pct: self.calibration_model_mape_pct,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_calibration_is_saved_only_where_it_does_not_raise_the_error() {
        use super::calibration_would_hurt as hurts;
        assert!(!hurts(10.0, 12.0));
        assert!(!hurts(12.0, 12.0));
        assert!(hurts(12.1, 12.0));
        // A figure that is not a number is never taken for a win.
        assert!(hurts(f64::NAN, 12.0));
    }
}
