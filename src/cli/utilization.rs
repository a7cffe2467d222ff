//! Utilization profiles on the command line: the flags of `gpumodel import dcgm FILE`, `gpumodel predict
//! --profile FILE [--max-slowdown 5%]` (time, power and energy at every supported core clock, and the clock
//! to run at; `gpumodel_predict::clock`) and `gpumodel train --data <utilization-profile dataset>` (the clock
//! model, `gpumodel_train::utilization::run`), and their dispatch.

use crate::cli::output::{ExportFormat, print};
use anyhow::bail;
use gpumodel_models::export::{Cell, Column, Export, Section};
use gpumodel_models::utilization::read::{ProfileFormat, ReadOptions, read_file};
use gpumodel_models::utilization::{Field, UtilizationProfile};
use gpumodel_predict::clock::{SweepRequest, known_gpus, sweep_profile};
use gpumodel_train::utilization::run::{ClockTrainParams, train_clock_model};
use serde::Serialize;
use std::path::PathBuf;
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
    /// The GPU model, for files that do not name it (dcgmi dmon, ncu): a GPU `gpumodel arch list` shows
    /// (by name or model number, e.g. a100, "Tesla V100-SXM2-16GB"), or one a clock model names; another
    /// GPU with --gpu-cc.
    #[arg(long, value_name = "NAME")]
    pub gpu: Option<String>,
    /// The compute capability of a --gpu that gpumodel has no profile of (e.g. 8.9), recorded with its name.
    #[arg(long, value_name = "X.Y", requires = "gpu")]
    pub gpu_cc: Option<String>,
    /// Core clock (MHz) of the profiled run, for files without a clock column.
    #[arg(long, value_name = "MHZ")]
    pub profile_core_mhz: Option<f64>,
    /// dcgmi dmon's sampling interval (its -d option), ms, checked against the one a log with an energy
    /// counter (TOTEC) gives; a log without one assumes 1000 and says so.
    #[arg(long, value_name = "MS")]
    pub dmon_interval_ms: Option<f64>,
}

impl ReadArgs {
    /// The reading options; `--gpu` checked against the known GPUs and those `clock_model_gpus` name.
    pub fn options(
        &self,
        skip_bad_rows: bool,
        clock_model_gpus: &[String],
    ) -> anyhow::Result<(Option<ProfileFormat>, ReadOptions)> {
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
                gpu: self.checked_gpu(clock_model_gpus)?,
                core_mhz: self.profile_core_mhz,
                interval_s: self.dmon_interval_ms.map(|ms| ms / 1000.0),
                skip_bad_rows,
            },
        ))
    }
}

/// The GPUs of the shipped clock models (a `--gpu` that names one is known).
pub fn shipped_gpus() -> Vec<String> {
    known_gpus(&SweepRequest::default())
}

impl ReadArgs {
    /// `--gpu` as it is recorded: a known GPU's name, or another's with its `--gpu-cc`.
    pub fn checked_gpu(&self, clock_model_gpus: &[String]) -> anyhow::Result<Option<String>> {
        match &self.gpu {
            Some(g) => {
                Ok(Some(gpumodel_models::gpu_name::check(g, self.gpu_cc.as_deref(), clock_model_gpus)?))
            }
            None => Ok(None),
        }
    }
}

/// `predict --profile` options (flattened into `gpumodel predict`).
#[derive(Debug, Clone, clap::Args)]
pub struct ProfileArgs {
    /// A utilization profile (dcgmi dmon log, dcgm-exporter text, ncu CSV, collector trace, NV-DVFS
    /// profile CSV, or a profile TOML/JSON): predict time, power and energy at every supported core clock
    /// and the clock to run at, with the clock model of the profile's GPU (--clock-model, --models-dir, or
    /// a shipped one).
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// With --profile: the clock model to use (a JSON file written by `gpumodel train` on profiles over clocks).
    #[arg(long, value_name = "FILE", requires = "profile")]
    pub clock_model: Option<PathBuf>,
    /// With --profile: folders of your clock models, searched by the profile's GPU before the shipped ones
    /// (also GPUMODEL_MODELS, folders separated by ':').
    #[arg(long, value_name = "DIR", requires = "profile")]
    pub models_dir: Vec<PathBuf>,
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
    /// Train the clock model from utilization profiles in this format (e.g. nvdvfs-nvprof: the NV-DVFS
    /// nvprof-metric files, over core and memory clocks) instead of the power model.
    #[arg(long, value_name = "FORMAT")]
    pub profile_format: Option<String>,
}

mod import;

pub use import::import;

/// `gpumodel predict --profile FILE`.
pub fn predict(args: &ProfileArgs, format: ExportFormat) -> anyhow::Result<ExitCode> {
    let Some(path) = &args.profile else { bail!("--profile FILE is needed") };
    let mut model_dirs = args.models_dir.clone();
    if let Some(env) = std::env::var_os("GPUMODEL_MODELS") {
        model_dirs.extend(std::env::split_paths(&env));
    }
    let req = SweepRequest {
        model: args.clock_model.clone(),
        model_dirs,
        core_clocks: args.core_clocks.clone(),
        max_slowdown: args.max_slowdown,
    };
    let (fmt, opts) = args.read.options(false, &known_gpus(&req))?;
    let export = if fmt.is_none() { crate::cli::import::export::export_of(path) } else { None };
    let kernel = || format!("`gpumodel predict --kernel {}` predicts it from its counters", path.display());
    use crate::cli::import::export::Export;
    match export {
        Some(Export::Nvprof) => bail!(
            "{} is an nvprof metric export (per-kernel counters), not a utilization profile: {}",
            path.display(),
            kernel()
        ),
        Some(Export::NvprofGpuTrace) => bail!(
            "{} is an nvprof gpu trace (times and launch shapes, no counters), not a utilization profile: give the \
             metric export (`nvprof --csv --metrics all --log-file metrics.csv ./app`) to `gpumodel predict --kernel`",
            path.display()
        ),
        _ => {}
    }
    let set = match read_file(path, fmt, &opts) {
        // An ncu export without the metrics behind the DCGM fields still has a kernel's counters.
        Err(e) if export == Some(Export::Ncu) => bail!("{e}; or {}", kernel()),
        r => r?,
    };
    print(&sweep_profile(&set, args.job.as_deref(), &req)?, format)?;
    Ok(ExitCode::SUCCESS)
}

/// `gpumodel train --data <utilization profiles>`: the clock model.
pub fn train(all: &crate::cli::train::Args) -> anyhow::Result<ExitCode> {
    let params = ClockTrainParams {
        data: all.data.clone(),
        test: all.test.clone(),
        no_test: all.no_test,
        out_dir: all.out_dir.clone(),
        prefix: all.prefix.clone(),
        min_core_mhz: all.clocks.min_core_mhz,
        peer_params: all.clocks.peer_params.clone(),
        score_max_slowdown: all.clocks.score_max_slowdown,
        profile_format: all.clocks.profile_format.as_deref().map(ProfileFormat::from_name).transpose()?,
    };
    print(&train_clock_model(&params)?, all.format)?;
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
}
