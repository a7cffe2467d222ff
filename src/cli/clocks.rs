//! Utilization profiles on the command line: `gpumodel import dcgm FILE`, `gpumodel predict --profile FILE
//! [--max-slowdown 5%]` (time, power and energy at every supported core clock, and the clock to run at),
//! and `gpumodel train --data <utilization-profile dataset>` (fit and score the clock model).

use crate::cli::output::{ExportFormat, print};
use anyhow::{Context, bail};
use gpumodel_models::export::{Cell, Column, Export, Section};
use gpumodel_models::registry::{Locator, Registry, sha256_hex};
use gpumodel_models::utilization::model::{ClockModel, ClockPoint, Optima, optima};
use gpumodel_models::utilization::read::{ProfileFormat, ReadOptions, read_file};
use gpumodel_models::utilization::{Field, ProfileSet, UtilizationProfile};
use gpumodel_train::utilization::fit::{ClockFitParams, fit_clock_model, fit_dso};
use gpumodel_train::utilization::score::{ClockEvaluation, evaluate, read_published};
use gpumodel_train::utilization::{Job, jobs};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The clock model shipped for the Tesla V100 (made by the command in its `provenance.command`).
const V100_MODEL: &str = include_str!("../../models/dvfs-trained/v100.json");

/// Parses a slowdown bound: `5%`, `5 %` or `0.05`.
pub fn parse_slowdown(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|x| x / 100.0),
        None => t.parse::<f64>(),
    }
    .map_err(|_| format!("'{s}' is not a slowdown: write it as 5% or 0.05"))?;
    if !(v.is_finite() && (0.0..=10.0).contains(&v)) {
        return Err(format!("'{s}': a slowdown bound must be between 0% and 1000%"));
    }
    Ok(v)
}

/// Reading options shared by `predict --profile` and `import dcgm`.
#[derive(Debug, Clone, clap::Args)]
pub struct ReadArgs {
    /// Utilization-profile format: dmon, exporter, ncu, collector, nvdvfs, document (guessed when unambiguous).
    #[arg(long, value_name = "FORMAT")]
    pub profile_format: Option<String>,
    /// The GPU model, for files that do not name it (dcgmi dmon, ncu).
    #[arg(long, value_name = "NAME")]
    pub gpu: Option<String>,
    /// Core clock (MHz) of the profiled run, for files without a clock column.
    #[arg(long, value_name = "MHZ")]
    pub profile_core_mhz: Option<f64>,
    /// dcgmi dmon's sampling interval (its -d option), ms: active samples × interval = run time.
    #[arg(long, value_name = "MS", default_value_t = 1000.0)]
    pub dmon_interval_ms: f64,
}

impl ReadArgs {
    fn options(&self, skip_bad_rows: bool) -> anyhow::Result<(Option<ProfileFormat>, ReadOptions)> {
        let format = self.profile_format.as_deref().map(ProfileFormat::from_name).transpose()?;
        if !(self.dmon_interval_ms.is_finite() && self.dmon_interval_ms > 0.0) {
            bail!(
                "--dmon-interval-ms {}: the interval must be a positive number of milliseconds",
                self.dmon_interval_ms
            );
        }
        if let Some(c) = self.profile_core_mhz
            && !(c.is_finite() && c > 0.0)
        {
            bail!("--profile-core-mhz {c}: a clock must be a positive number of MHz");
        }
        Ok((
            format,
            ReadOptions {
                gpu: self.gpu.clone(),
                core_mhz: self.profile_core_mhz,
                interval_s: Some(self.dmon_interval_ms / 1000.0),
                skip_bad_rows,
            },
        ))
    }
}

/// `predict --profile` options (flattened into `gpumodel predict`).
#[derive(Debug, Clone, clap::Args)]
pub struct ProfileArgs {
    /// A utilization profile (dcgmi dmon log, dcgm-exporter text, ncu CSV, collector trace, NV-DVFS
    /// profile CSV, or a profile TOML/JSON): predict time, power and energy at every supported core clock
    /// and the clock to run at. --model then names a clock model (default: the shipped V100 model).
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// With --profile: the lowest-energy clock whose predicted time is within this bound of the fastest.
    #[arg(long, value_name = "PCT", value_parser = parse_slowdown, requires = "profile")]
    pub max_slowdown: Option<f64>,
    /// With --profile: which profile of a file holding several (a device such as "GPU 1", or a job name).
    #[arg(long, value_name = "NAME", requires = "profile")]
    pub job: Option<String>,
    #[command(flatten)]
    pub read: ReadArgs,
}

/// `import dcgm` options (flattened into `gpumodel import`).
#[derive(Debug, Clone, clap::Args)]
pub struct ImportArgs {
    #[command(flatten)]
    pub read: ReadArgs,
}

/// `train` options for utilization-profile data (flattened into `gpumodel train`).
#[derive(Debug, Clone, clap::Args)]
pub struct TrainArgs {
    /// Utilization-profile data: keep only core clocks above this (MHz), in the fit and the scores
    /// (DSO's protocol on the V100 files: 700).
    #[arg(long, value_name = "MHZ")]
    pub min_core_mhz: Option<f64>,
    /// Utilization-profile data: a peer's published per-job parameters (DSO's `Fc,delta,t0,p0,cg,
    /// benchmark_argNo` CSV), scored beside the models.
    #[arg(long, value_name = "FILE")]
    pub peer_params: Option<PathBuf>,
    /// Utilization-profile data: the slowdown bound of the "saving within the bound" score.
    #[arg(long, value_name = "PCT", value_parser = parse_slowdown, default_value = "5%")]
    pub score_max_slowdown: f64,
}

// ---------------------------------------------------------------------------------------------------------
// import dcgm

/// What `import dcgm` wrote.
#[derive(Debug, Serialize)]
struct ImportSummary {
    file: String,
    source: &'static str,
    out: Option<String>,
    profiles: Vec<UtilizationProfile>,
    skipped: Vec<String>,
}

impl Export for ImportSummary {
    const COMMAND: &'static str = "import-dcgm";
    fn sections(&self) -> Vec<Section> {
        profiles_section(&self.profiles)
    }
    fn notes(&self) -> Vec<String> {
        let mut n = vec![format!("{} profile(s) from {} ({})", self.profiles.len(), self.file, self.source)];
        if let Some(o) = &self.out {
            n.push(format!("written to {o}"));
        }
        n.extend(self.skipped.iter().map(|s| format!("skipped: {s}")));
        n
    }
}

fn profiles_section(ps: &[UtilizationProfile]) -> Vec<Section> {
    let mut cols = vec![Column::new("name", "profile"), Column::new("gpu", "gpu")];
    cols.extend(Field::ALL.iter().map(|f| Column::new(f.name(), f.name())));
    cols.extend([
        Column::new("core_mhz", "core MHz"),
        Column::new("power_w", "power W"),
        Column::new("time_s", "time s"),
        Column::new("samples", "samples"),
    ]);
    let mut s = Section::new(cols);
    for p in ps {
        let mut row = vec![Cell::text(&p.name), Cell::text(p.gpu.as_deref().unwrap_or("-"))];
        row.extend(Field::ALL.iter().map(|f| Cell::opt(p.fields.get(f).copied(), 3)));
        row.extend([
            Cell::num(p.core_mhz, 0),
            Cell::opt(p.power_w, 1),
            Cell::opt(p.time_s, 3),
            Cell::int(p.samples as i64),
        ]);
        s.push(row);
    }
    vec![s]
}

/// `gpumodel import dcgm FILE [--out FILE.csv|.json|.toml]`: reads the profile(s), checks them, and
/// writes them only when all is well.
pub fn import(args: &crate::cli::import::Args) -> anyhow::Result<ExitCode> {
    let (file, out, format) = (args.file.as_path(), args.out.as_deref(), args.format);
    let (fmt, opts) = args.dcgm.read.options(args.skip_bad_rows)?;
    let set = read_file(file, fmt, &opts)?;
    let summary = ImportSummary {
        file: file.display().to_string(),
        source: set.source.name(),
        out: out.map(|o| o.display().to_string()),
        profiles: set.profiles.clone(),
        skipped: set.skipped.clone(),
    };
    match out {
        None => crate::cli::output::emit(&set.to_csv())?,
        Some(o) => {
            let ext = o.extension().and_then(|e| e.to_str()).unwrap_or("");
            let text = match ext {
                "json" if set.profiles.len() == 1 => serde_json::to_string_pretty(&set.profiles[0])?,
                "json" => serde_json::to_string_pretty(&set.profiles)?,
                "toml" if set.profiles.len() == 1 => toml_of(&set.profiles[0])?,
                "toml" => bail!(
                    "{}: {} profiles do not fit one TOML profile: write .csv or .json, or pick one with --job",
                    o.display(),
                    set.profiles.len()
                ),
                _ => set.to_csv(),
            };
            gpumodel_models::atomic::write_atomic(o, text.as_bytes())?;
            print(&summary, format)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn toml_of(p: &UtilizationProfile) -> anyhow::Result<String> {
    Ok(p.to_toml()?)
}

// ---------------------------------------------------------------------------------------------------------
// predict --profile

/// `predict --profile`'s result.
#[derive(Debug, Serialize)]
pub struct ClockSweep {
    pub profile: UtilizationProfile,
    pub model_gpu: String,
    pub model_dataset: String,
    /// Whether the profile carried its own power (else the own-clock model predicted it).
    pub power_from_profile: bool,
    /// Whether times are seconds (the profile had a run time) or relative to the profiled run.
    pub time_in_seconds: bool,
    pub points: Vec<ClockPoint>,
    pub optima: Optima,
}

impl Export for ClockSweep {
    const COMMAND: &'static str = "predict-profile";
    fn sections(&self) -> Vec<Section> {
        let t = if self.time_in_seconds { "time s" } else { "time (rel.)" };
        let e = if self.time_in_seconds { "energy J" } else { "energy (W·rel.)" };
        let mut s = Section::new(vec![
            Column::new("core_mhz", "core MHz"),
            Column::new("time", t),
            Column::new("power_w", "power W"),
            Column::new("energy", e),
            Column::new("slowdown", "slowdown"),
            Column::new("optimum", "optimum of"),
        ]);
        for (i, p) in self.points.iter().enumerate() {
            let mut marks = Vec::new();
            for (name, j) in [("E", self.optima.energy), ("ED", self.optima.ed), ("ED2", self.optima.ed2)] {
                if i == j {
                    marks.push(name.to_string());
                }
            }
            if let Some((b, j)) = self.optima.within_slowdown
                && i == j
            {
                marks.push(format!("E within {:.0}%", b * 100.0));
            }
            s.push(vec![
                Cell::num(p.core_mhz, 0),
                Cell::num(p.time_s, 4),
                Cell::num(p.power_w, 1),
                Cell::num(p.energy_j, 2),
                Cell::num(p.slowdown, 3),
                Cell::text(marks.join(", ")),
            ]);
        }
        vec![s]
    }
    fn preamble(&self) -> Vec<String> {
        let p = &self.profile;
        let fields: Vec<String> = Field::ALL
            .iter()
            .filter_map(|f| p.fields.get(f).map(|v| format!("{} {v:.2}", f.name())))
            .collect();
        vec![
            format!(
                "profile '{}' ({}{}) at {:.0} MHz: {}",
                p.name,
                p.source.name(),
                p.gpu.as_deref().map(|g| format!(", {g}")).unwrap_or_default(),
                p.core_mhz,
                fields.join(", ")
            ),
            format!("clock model: {} (trained on {})", self.model_gpu, self.model_dataset),
        ]
    }
    fn notes(&self) -> Vec<String> {
        let mut n = Vec::new();
        let at = |i: usize| self.points[i].core_mhz;
        n.push(format!(
            "optima: energy {:.0} MHz, E·D {:.0} MHz, E·D² {:.0} MHz; fastest {:.0} MHz",
            at(self.optima.energy),
            at(self.optima.ed),
            at(self.optima.ed2),
            at(self.optima.fastest)
        ));
        if let Some((b, i)) = self.optima.within_slowdown {
            // Against the highest clock, where a job runs without DVFS.
            let top = &self.points[self.points.len() - 1];
            let q = &self.points[i];
            n.push(format!(
                "within {:.1}% slowdown: {:.0} MHz uses {:.1}% less energy than {:.0} MHz and is {:.1}% slower",
                b * 100.0,
                q.core_mhz,
                100.0 * (1.0 - q.energy_j / top.energy_j),
                top.core_mhz,
                100.0 * (q.time_s / top.time_s - 1.0)
            ));
        }
        if !self.power_from_profile {
            n.push(
                "the profile has no power: its power at its own clock is predicted from its fields".into(),
            );
        }
        if !self.time_in_seconds {
            n.push("the profile has no run time: times are relative to the profiled run".into());
        }
        n
    }
}

fn load_model(spec: Option<&str>) -> anyhow::Result<ClockModel> {
    match spec {
        None => Ok(ClockModel::from_json(V100_MODEL, "the shipped V100 clock model")?),
        Some(path) => {
            let text =
                std::fs::read_to_string(path).with_context(|| format!("reading the clock model {path}"))?;
            Ok(ClockModel::from_json(&text, path)?)
        }
    }
}

/// `gpumodel predict --profile FILE`: `model` is `--model` when the user gave one.
pub fn predict(args: &ProfileArgs, model: Option<&str>, format: ExportFormat) -> anyhow::Result<ExitCode> {
    let Some(path) = &args.profile else { bail!("--profile FILE is needed") };
    let (fmt, opts) = args.read.options(false)?;
    let model = load_model(model)?;
    let set = read_file(path, fmt, &opts)?;
    let profile = pick(&set, args.job.as_deref())?;
    if let Some(g) = &profile.gpu
        && !gpu_matches(g, &model.gpu)
    {
        bail!(
            "the profile is of a {g} and the clock model of a {}: give a model of that GPU with --model \
             (train one with `gpumodel train --data <its profiles>`)",
            model.gpu
        );
    }
    model.check_profile(&profile)?;
    let points = model.sweep(&profile);
    let optima = optima(&points, args.max_slowdown);
    let result = ClockSweep {
        power_from_profile: profile.power_w.is_some(),
        time_in_seconds: profile.time_s.is_some(),
        model_gpu: model.gpu.clone(),
        model_dataset: model.provenance.dataset.clone(),
        profile,
        points,
        optima,
    };
    print(&result, format)?;
    Ok(ExitCode::SUCCESS)
}

fn gpu_matches(a: &str, b: &str) -> bool {
    // "Tesla V100-SXM2-16GB" and "NVIDIA Tesla V100 (GV100)" are the same model; "H100" is not.
    let key = |s: &str| {
        s.to_ascii_uppercase()
            .split(|c: char| !c.is_ascii_alphanumeric())
            .find(|w| {
                w.len() >= 3
                    && w.chars().any(|c| c.is_ascii_digit())
                    && w.chars().any(|c| c.is_ascii_alphabetic())
            })
            .map(String::from)
    };
    match (key(a), key(b)) {
        (Some(x), Some(y)) => x == y,
        _ => true,
    }
}

fn pick(set: &ProfileSet, job: Option<&str>) -> anyhow::Result<UtilizationProfile> {
    match job {
        Some(j) => set
            .profiles
            .iter()
            .find(|p| p.name == j || p.device.as_deref() == Some(j))
            .cloned()
            .with_context(|| format!("--job {j}: not in {}; it holds {}", set.origin, names(set))),
        None if set.profiles.len() == 1 => Ok(set.profiles[0].clone()),
        None => bail!(
            "{} holds {} profiles ({}): choose one with --job",
            set.origin,
            set.profiles.len(),
            names(set)
        ),
    }
}

fn names(set: &ProfileSet) -> String {
    let mut v: Vec<&str> = set.profiles.iter().map(|p| p.name.as_str()).take(8).collect();
    if set.profiles.len() > 8 {
        v.push("…");
    }
    v.join(", ")
}

// ---------------------------------------------------------------------------------------------------------
// train --data <utilization profiles>

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

/// A dataset opened as utilization profiles: the set, and its registry name and sha256 when registered.
fn open(spec: &str) -> anyhow::Result<(ProfileSet, String, Option<String>, Option<String>)> {
    let reg = Registry::builtin();
    let opts = ReadOptions { skip_bad_rows: true, ..ReadOptions::default() };
    if let Ok(e) = reg.get(spec) {
        let (path, _) = Locator::from_env().resolve(e)?;
        let o = ReadOptions { gpu: Some(e.gpu.clone()), ..opts };
        let set = read_file(&path, Some(ProfileFormat::NvdvfsCsv), &o)?;
        return Ok((set, e.name.clone(), Some(e.sha256.clone()), e.test_set.clone()));
    }
    let p = Path::new(spec);
    let bytes = std::fs::read(p).with_context(|| format!("reading {spec}"))?;
    let set = read_file(p, Some(ProfileFormat::NvdvfsCsv), &opts)?;
    Ok((set, spec.to_string(), Some(sha256_hex(&bytes)), None))
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
    pub artifact: Option<String>,
    pub notes: Vec<String>,
}

impl Export for ClockTraining {
    const COMMAND: &'static str = "train-clock-model";
    fn sections(&self) -> Vec<Section> {
        let Some(ev) = &self.evaluation else {
            return vec![Section::prose(vec!["no held-out test set: see the selection figures".into()])];
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
        vec![s]
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

/// `gpumodel train --data <profiles>`: fits the clock model, scores it beside DSO's form, the published
/// DSO parameters (with --peer-params) and fixed clocks on the test set, and writes the artifact.
pub fn train(all: &crate::cli::train::Args) -> anyhow::Result<ExitCode> {
    let (data, test, no_test, out_dir) =
        (all.data.as_str(), all.test.as_deref(), all.no_test, all.out_dir.as_deref());
    let (prefix, args, format) = (all.prefix.as_deref(), &all.clocks, all.format);
    if let Some(m) = args.min_core_mhz
        && !(m.is_finite() && m >= 0.0)
    {
        bail!("--min-core-mhz {m}: give a clock in MHz");
    }
    let published = match &args.peer_params {
        Some(p) => {
            let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            Some(read_published(&text).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?)
        }
        None => None,
    };
    let (set, name, sha, registry_test) = open(data)?;
    let mut notes: Vec<String> = Vec::new();
    if !set.skipped.is_empty() {
        notes.push(format!("{} training row(s) skipped; first: {}", set.skipped.len(), set.skipped[0]));
    }
    let gpu = set.profiles.iter().find_map(|p| p.gpu.clone()).unwrap_or_else(|| name.clone());
    let train_jobs: Vec<Job> = jobs(&set, args.min_core_mhz);
    let command = format!(
        "gpumodel train --data {name}{}{}",
        args.min_core_mhz.map(|m| format!(" --min-core-mhz {m}")).unwrap_or_default(),
        prefix.map(|p| format!(" --prefix {p}")).unwrap_or_default()
    );
    let params = ClockFitParams {
        gpu: gpu.clone(),
        dataset: name.clone(),
        dataset_sha256: sha,
        command,
        ..Default::default()
    };
    let fit = fit_clock_model(&train_jobs, &params)?;
    for l in &fit.left_out {
        notes.push(format!("training job {l} has no run at the highest clock: left out"));
    }
    let mhz: Vec<f64> = fit.model.levels.iter().map(|l| l.core_mhz).collect();
    let dso = fit_dso(&fit.curves, &mhz, &params.ridge);
    let test_spec = if no_test { None } else { test.map(String::from).or(registry_test) };
    let evaluation = match &test_spec {
        Some(t) => {
            let (tset, _, _, _) = open(t)?;
            if !tset.skipped.is_empty() {
                notes.push(format!("{} test row(s) skipped; first: {}", tset.skipped.len(), tset.skipped[0]));
            }
            let test_jobs = jobs(&tset, args.min_core_mhz);
            Some(evaluate(
                &fit.model,
                &dso,
                &train_jobs,
                &test_jobs,
                published.as_ref(),
                args.score_max_slowdown,
            ))
        }
        None => None,
    };
    let mut selection = fit.model.provenance.selection.clone();
    selection.extend(dso.selection.iter().cloned());
    let artifact = if let Some(out_dir) = out_dir {
        let stem = prefix.map(String::from).unwrap_or_else(|| format!("{name}-clock"));
        std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
        let path = out_dir.join(format!("{stem}.json"));
        let text = serde_json::to_string_pretty(&fit.model)? + "\n";
        gpumodel_models::atomic::write_atomic(&path, text.as_bytes())?;
        Some(path.display().to_string())
    } else {
        None
    };
    let result = ClockTraining {
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
        artifact,
        notes,
    };
    print(&result, format)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slowdowns_read_as_percent_or_fraction() {
        assert_eq!(parse_slowdown("5%"), Ok(0.05));
        assert_eq!(parse_slowdown("0.05"), Ok(0.05));
        assert!(parse_slowdown("fast").unwrap_err().contains("5%"));
        assert!(parse_slowdown("-3%").is_err());
    }

    #[test]
    fn gpu_names_match_by_their_model_number() {
        assert!(gpu_matches("Tesla V100-SXM2-16GB", "NVIDIA Tesla V100 (GV100)"));
        assert!(!gpu_matches("NVIDIA H100 80GB HBM3", "NVIDIA Tesla V100 (GV100)"));
    }

    #[test]
    fn the_shipped_model_reads() {
        let m = ClockModel::from_json(V100_MODEL, "shipped").unwrap();
        assert!(m.levels.len() >= 2);
    }
}
