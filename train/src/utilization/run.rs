//! `gpumodel train --data <utilization profiles>`: the clock model beside its baselines, scored on the
//! held-out set, and its artifact.

use super::fit::{ClockFitParams, curves, fit_clock_model, fit_dso};
use super::pairs::{PairLopo, lopo};
use super::score::{ClockEvaluation, evaluate, read_published};
use super::{Job, at_memory, jobs};
use crate::{Error, Result};
use gpumodel_models::export::{Cell, Column, Export, Section};
use gpumodel_models::registry::{Locator, Registry, sha256_hex};
use gpumodel_models::utilization::ProfileSet;
use gpumodel_models::utilization::read::{ProfileFormat, ReadOptions, read_file};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// What `train` was asked for utilization-profile data.
#[derive(Debug, Clone, Default)]
pub struct ClockTrainParams {
    /// `--data`: a registered dataset or a file.
    pub data: String,
    /// `--test`: the held-out set (default: the registry's test set of `data`).
    pub test: Option<String>,
    pub no_test: bool,
    /// Where to write `<prefix>.json` (default prefix: the data's file stem + `-clock`).
    pub out_dir: Option<PathBuf>,
    pub prefix: Option<String>,
    /// Keep only core clocks above this, MHz.
    pub min_core_mhz: Option<f64>,
    /// A peer's published per-job parameters (DSO's CSV), scored beside the models.
    pub peer_params: Option<PathBuf>,
    /// The slowdown bound of the "saving within the bound" score.
    pub score_max_slowdown: f64,
    /// How to read the data (default: the NV-DVFS DCGM profile CSV).
    pub profile_format: Option<ProfileFormat>,
}

/// `train`'s result on utilization-profile data.
#[derive(Debug, Serialize)]
pub struct ClockTraining {
    pub data: String,
    pub test: Option<String>,
    pub gpu: String,
    pub training_jobs: usize,
    pub training_programs: usize,
    pub selection: Vec<String>,
    pub cv_time_mape: f64,
    pub cv_power_mape: f64,
    pub cv_own_clock_mape: f64,
    pub evaluation: Option<ClockEvaluation>,
    /// Leave-one-program-out scores over (core, memory) pairs, for data over several memory clocks.
    pub pairs: Option<PairLopo>,
    pub artifact: Option<String>,
    pub notes: Vec<String>,
}

impl Export for ClockTraining {
    const COMMAND: &'static str = "train-clock-model";
    fn sections(&self) -> Vec<Section> {
        let mut out: Vec<Section> = self.pairs.as_ref().map(pair_section).into_iter().collect();
        let Some(ev) = &self.evaluation else {
            if out.is_empty() {
                out.push(Section::prose(vec!["no held-out test set: see the selection figures".into()]));
            }
            return out;
        };
        let mut s = Section::titled(
            format!(
                "{} held-out jobs, clocks {} MHz; regrets median / mean over jobs (%)",
                ev.test_jobs,
                ev.clocks_mhz.iter().map(|c| format!("{c:.0}")).collect::<Vec<_>>().join(", ")
            ),
            vec![
                Column::new("method", "method"),
                Column::new("time_mape", "time MAPE %"),
                Column::new("time_mape_off_ref", "(off ref)"),
                Column::new("power_mape", "power MAPE %"),
                Column::new("power_mape_off_ref", "(off ref)"),
                Column::new("energy_regret", "E regret"),
                Column::new("ed_regret", "ED regret"),
                Column::new("ed2_regret", "ED² regret"),
                Column::new("saving", format!("E saved ≤{:.0}% slower", ev.max_slowdown * 100.0)),
                Column::new("violations", "slower than bound"),
            ],
        );
        let pair = |p: (f64, f64)| Cell::shown(p.1, format!("{:.2} / {:.2}", p.0, p.1));
        for m in &ev.methods {
            s.push(vec![
                Cell::text(&m.method),
                Cell::opt(m.time_mape, 2),
                Cell::opt(m.time_mape_off_ref, 2),
                Cell::opt(m.power_mape, 2),
                Cell::opt(m.power_mape_off_ref, 2),
                pair(m.energy_regret),
                pair(m.ed_regret),
                pair(m.ed2_regret),
                Cell::num(m.saving_within_bound, 2),
                Cell::int(m.bound_violations as i64),
            ]);
        }
        s.then(format!(
            "measured optimum within {:.0}% slowdown: {:.2}% energy saved on average against the highest clock",
            ev.max_slowdown * 100.0,
            ev.oracle_saving_within_bound
        ));
        s.then(format!(
            "power at each run's own clock from its profile alone: MAPE {:.2}% (mean over jobs), median {:.2}%, worst {} {:.1}%",
            ev.own_clock_power_mape, ev.own_clock_power_median, ev.own_clock_worst.0, ev.own_clock_worst.1
        ));
        for n in &ev.notes {
            s.then(n.clone());
        }
        out.push(s);
        out
    }
    fn preamble(&self) -> Vec<String> {
        let mut v = vec![format!(
            "clock model for {}: {} training jobs of {} programs ({}); choices by leave-one-program-out CV:",
            self.gpu, self.training_jobs, self.training_programs, self.data
        )];
        v.extend(self.selection.iter().map(|s| format!("  {s}")));
        v
    }
    fn notes(&self) -> Vec<String> {
        let mut n = self.notes.clone();
        if let Some(a) = &self.artifact {
            n.push(format!("wrote {a}"));
        }
        n
    }
}

/// The leave-one-program-out table over clock pairs.
fn pair_section(l: &PairLopo) -> Section {
    let mut s = Section::titled(
        format!(
            "leave-one-program-out over {} held-out jobs, {} (core, memory) pairs; each job asked from its profile \
             at {:.0}/{:.0} MHz; regrets median / mean over jobs (%)",
            l.held_out_jobs, l.pairs, l.ref_core_mhz, l.ref_mem_mhz
        ),
        vec![
            Column::new("method", "method"),
            Column::new("energy_regret", "E regret"),
            Column::new("ed_regret", "ED regret"),
            Column::new("ed2_regret", "ED² regret"),
        ],
    );
    let pair = |p: (f64, f64)| Cell::shown(p.1, format!("{:.2} / {:.2}", p.0, p.1));
    for m in &l.methods {
        let mut row = vec![Cell::text(&m.method)];
        row.extend(m.regret.iter().map(|r| pair(*r)));
        s.push(row);
    }
    s.then(format!(
        "pair model over every pair: time MAPE {:.2}% ({:.2}% off the reference pair), power MAPE {:.2}% ({:.2}%)",
        l.time_mape, l.time_mape_off_ref, l.power_mape, l.power_mape_off_ref
    ));
    s.then(format!(
        "core-only model over the core clocks at {:.0} MHz memory: time MAPE {:.2}%, power MAPE {:.2}%",
        l.ref_mem_mhz, l.core_only_time_mape, l.core_only_power_mape
    ));
    if l.folds_left_out > 0 {
        s.then(format!("{} fold(s) could not be fitted and were left out", l.folds_left_out));
    }
    s
}

/// Whether a `--data` value is utilization-profile data (a registered dataset with that importer, or a
/// file that reads as the NV-DVFS profile CSV).
pub fn is_profile_data(spec: &str) -> bool {
    if let Ok(e) = Registry::builtin().get(spec) {
        return e.importer == ProfileFormat::REGISTRY_IMPORTER;
    }
    std::fs::read(spec)
        .map(|b| {
            let head = String::from_utf8_lossy(&b[..b.len().min(4096)]).to_string();
            ProfileFormat::guess(&head) == Some(ProfileFormat::NvdvfsCsv)
        })
        .unwrap_or(false)
}

/// A dataset opened as utilization profiles: the set, its name (registry name, or the file name), its
/// sha256, and the registry's test set.
fn open(
    spec: &str,
    format: Option<ProfileFormat>,
) -> Result<(ProfileSet, String, Option<String>, Option<String>)> {
    let reg = Registry::builtin();
    let opts = ReadOptions { skip_bad_rows: true, ..ReadOptions::default() };
    let format = format.unwrap_or(ProfileFormat::NvdvfsCsv);
    if let Ok(e) = reg.get(spec) {
        let (path, _) = Locator::from_env().resolve(e)?;
        let o = ReadOptions { gpu: Some(e.gpu.clone()), ..opts };
        let set = read_file(&path, Some(format), &o)?;
        return Ok((set, e.name.clone(), Some(e.sha256.clone()), e.test_set.clone()));
    }
    let p = Path::new(spec);
    let bytes =
        std::fs::read(p).map_err(|e| Error::Invalid(format!("reading {spec}: {e}; check the path")))?;
    let set = read_file(p, Some(format), &opts)?;
    let name = p.file_name().map_or_else(|| spec.to_string(), |f| f.to_string_lossy().into_owned());
    Ok((set, name, Some(sha256_hex(&bytes)), None))
}

/// The artifact's file name: `<prefix>.json`, the prefix by default the data's name without its extension
/// and `-clock` (`v100-dcgm-micro.csv` → `v100-dcgm-micro-clock.json`). Never a path: `--out-dir` decides
/// where it goes, whether the data was named by a relative or an absolute path.
pub fn artifact_name(data_name: &str, prefix: Option<&str>) -> String {
    match prefix {
        Some(p) => format!("{p}.json"),
        None => {
            let stem =
                Path::new(data_name).file_stem().map_or_else(|| data_name.into(), |s| s.to_string_lossy());
            format!("{stem}-clock.json")
        }
    }
}

/// Fits the clock model, scores it beside DSO's form, the published DSO parameters (with `peer_params`)
/// and fixed clocks on the test set, and writes the artifact into `out_dir` (only after everything else
/// succeeded).
pub fn train_clock_model(params: &ClockTrainParams) -> Result<ClockTraining> {
    if let Some(m) = params.min_core_mhz
        && !(m.is_finite() && m >= 0.0)
    {
        return Err(Error::Params(format!("--min-core-mhz {m}: give a clock in MHz")));
    }
    let published = match &params.peer_params {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .map_err(|e| Error::Invalid(format!("reading {}: {e}; check the path", p.display())))?;
            Some(read_published(&text).map_err(|e| Error::Invalid(format!("{}: {e}", p.display())))?)
        }
        None => None,
    };
    let (set, name, sha, registry_test) = open(&params.data, params.profile_format)?;
    let mut notes: Vec<String> = Vec::new();
    if !set.skipped.is_empty() {
        notes.push(format!("{} training row(s) skipped; first: {}", set.skipped.len(), set.skipped[0]));
    }
    let gpu = set.profiles.iter().find_map(|p| p.gpu.clone()).unwrap_or_else(|| name.clone());
    let train_jobs: Vec<Job> = jobs(&set, params.min_core_mhz);
    let command = format!(
        "gpumodel train --data {name}{}{}{}",
        params.profile_format.map(|f| format!(" --profile-format {}", f.name())).unwrap_or_default(),
        params.min_core_mhz.map(|m| format!(" --min-core-mhz {m}")).unwrap_or_default(),
        params.prefix.as_deref().map(|p| format!(" --prefix {p}")).unwrap_or_default()
    );
    let fit_params = ClockFitParams {
        gpu: gpu.clone(),
        dataset: name.clone(),
        dataset_sha256: sha,
        command,
        ..Default::default()
    };
    let mut fit = fit_clock_model(&train_jobs, &fit_params)?;
    fit.model.policy = super::policy::choose(&train_jobs, &fit_params, &fit.model)?;
    for o in &fit.model.policy {
        let pick = match (o.fixed_mhz, o.fixed_mem_mhz) {
            (Some(c), Some(m)) => format!("a fixed {c:.0} MHz core / {m:.0} MHz memory"),
            (Some(c), None) => format!("a fixed {c:.0} MHz"),
            _ => "the model's pick".to_string(),
        };
        fit.model.provenance.selection.push(format!(
            "clock for least {}: {pick} — leave-one-program-out regret: model {:.2}%, fixed clock {:.2}% ({} held-out jobs)",
            o.objective, o.model_regret_pct, o.fixed_regret_pct, o.held_out_jobs
        ));
    }
    for l in &fit.left_out {
        notes.push(format!("training job {l} has no run at the highest clock: left out"));
    }
    let mhz: Vec<f64> = fit.model.levels.iter().map(|l| l.core_mhz).collect();
    // DSO's form is over core clocks: a pair model's peer is fitted at the reference memory clock.
    let (dso, pairs) = match &fit.model.memory {
        None => (fit_dso(&fit.curves, &mhz, &fit_params.ridge), None),
        Some(mm) => {
            let (_, at_ref, _) = curves(&at_memory(&train_jobs, mm.ref_mem_mhz))?;
            (fit_dso(&at_ref, &mhz, &fit_params.ridge), Some(lopo(&train_jobs, &fit_params)?))
        }
    };
    let test_spec = if params.no_test { None } else { params.test.clone().or(registry_test) };
    let evaluation = match &test_spec {
        Some(t) => {
            let (tset, _, _, _) = open(t, params.profile_format)?;
            if !tset.skipped.is_empty() {
                notes.push(format!("{} test row(s) skipped; first: {}", tset.skipped.len(), tset.skipped[0]));
            }
            let test_jobs = jobs(&tset, params.min_core_mhz);
            Some(evaluate(
                &fit.model,
                &dso,
                &train_jobs,
                &test_jobs,
                published.as_ref(),
                params.score_max_slowdown,
            ))
        }
        None => None,
    };
    let mut selection = fit.model.provenance.selection.clone();
    selection.extend(dso.selection.iter().cloned());
    let artifact = match &params.out_dir {
        Some(out_dir) => {
            std::fs::create_dir_all(out_dir)
                .map_err(|e| Error::Invalid(format!("creating {}: {e}", out_dir.display())))?;
            let path = out_dir.join(artifact_name(&name, params.prefix.as_deref()));
            let text =
                serde_json::to_string_pretty(&fit.model).map_err(|e| Error::Invalid(e.to_string()))? + "\n";
            gpumodel_models::atomic::write_atomic(&path, text.as_bytes())?;
            Some(path.display().to_string())
        }
        None => None,
    };
    Ok(ClockTraining {
        data: name,
        test: test_spec,
        gpu,
        training_jobs: fit.model.provenance.training_jobs,
        training_programs: fit.model.provenance.training_programs,
        selection,
        cv_time_mape: fit.cv_time_mape,
        cv_power_mape: fit.cv_power_mape,
        cv_own_clock_mape: fit.cv_own_clock_mape,
        evaluation,
        pairs,
        artifact,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The artifact goes into --out-dir under the data's file name, however the data was named.
    #[test]
    fn artifact_names_never_carry_the_data_path() {
        assert_eq!(artifact_name("v100-dcgm-micro.csv", None), "v100-dcgm-micro-clock.json");
        assert_eq!(artifact_name("nvdvfs-v100-dcgm-micro", None), "nvdvfs-v100-dcgm-micro-clock.json");
        assert_eq!(artifact_name("my.csv", Some("h100")), "h100.json");
    }
}
