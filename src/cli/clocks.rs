//! Utilization profiles on the command line: `gpumodel import dcgm FILE`, `gpumodel predict --profile FILE
//! [--max-slowdown 5%]` (time, power and energy at every supported core clock, and the clock to run at),
//! and `gpumodel train --data <utilization-profile dataset>` (fit and score the clock model).

use crate::cli::output::{ExportFormat, print};
use anyhow::{Context, bail};
use gpumodel_models::export::{Cell, Column, Export, Section};
use gpumodel_models::registry::{Locator, Registry, sha256_hex};
use gpumodel_models::utilization::model::{ClockModel, ClockPoint, ObjectivePolicy, Optima, optima};
use gpumodel_models::utilization::read::{ProfileFormat, ReadOptions, read_file};
use gpumodel_models::utilization::{Field, ProfileSet, UtilizationProfile};
use gpumodel_train::utilization::fit::{ClockFitParams, fit_clock_model, fit_dso};
use gpumodel_train::utilization::score::{ClockEvaluation, evaluate, read_published};
use gpumodel_train::utilization::{Job, jobs};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

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
    /// dcgmi dmon's sampling interval (its -d option), ms, checked against the one a log with an energy
    /// counter (TOTEC) gives; a log without one assumes 1000 and says so.
    #[arg(long, value_name = "MS")]
    pub dmon_interval_ms: Option<f64>,
}

impl ReadArgs {
    fn options(&self, skip_bad_rows: bool) -> anyhow::Result<(Option<ProfileFormat>, ReadOptions)> {
        let format = self.profile_format.as_deref().map(ProfileFormat::from_name).transpose()?;
        if let Some(ms) = self.dmon_interval_ms
            && !(ms.is_finite() && ms > 0.0)
        {
            bail!("--dmon-interval-ms {ms}: the interval must be a positive number of milliseconds");
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
                interval_s: self.dmon_interval_ms.map(|ms| ms / 1000.0),
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
    /// With --profile, for a GPU without a shipped clock model: its supported core clocks, MHz
    /// (`nvidia-smi -q -d SUPPORTED_CLOCKS`), when its architecture profile does not list them.
    #[arg(long, value_name = "MHZ,…", value_delimiter = ',', requires = "profile")]
    pub core_clocks: Vec<f64>,
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

mod choose;
mod import;
mod predict;
#[cfg(test)]
mod tests;
mod train;

pub use import::import;
pub use predict::predict;
pub use train::train;

/// A GPU name's model number: the first word of letters and digits ("Tesla V100-SXM2-16GB" → "V100").
fn gpu_key(s: &str) -> Option<String> {
    s.to_ascii_uppercase()
        .split(|c: char| !c.is_ascii_alphanumeric())
        .find(|w| {
            w.len() >= 3
                && w.chars().any(|c| c.is_ascii_digit())
                && w.chars().any(|c| c.is_ascii_alphabetic())
        })
        .map(String::from)
}

/// Whether two GPU names can be the same model: they are unless both name a model number and the numbers
/// differ (a name without one, e.g. "Fake GPU", is not held against a clock model the user gives).
fn gpu_matches(a: &str, b: &str) -> bool {
    // "Tesla V100-SXM2-16GB" and "NVIDIA Tesla V100 (GV100)" are the same model; "H100" is not.
    match (gpu_key(a), gpu_key(b)) {
        (Some(x), Some(y)) => x == y,
        _ => true,
    }
}

/// Whether two GPU names are known to be the same model: both name a model number and it is the same
/// (choosing a shipped clock model needs this much).
fn same_gpu_model(a: &str, b: &str) -> bool {
    matches!((gpu_key(a), gpu_key(b)), (Some(x), Some(y)) if x == y)
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
