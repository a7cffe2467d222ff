//! `gpumodel predict --warps 32` — a kernel's time, power, energy and bottleneck at one configuration, or
//! a sweep over warps per SM or core clocks with the E^a·D^b optimum of each objective.
//!
//! With no other argument it uses the embedded example kernel (the reduction, counters measured on a
//! GTX 980), the Titan X architecture profile and the Titan X BP-ANN power model.

use crate::cli::output::{OutputFormat, render_table};
use anyhow::Context;
use gpumodel_models::arch::ArchProfile;
use gpumodel_models::artifact::ModelArtifact;
use gpumodel_models::energy::Objective;
use gpumodel_models::profile::KernelProfile;
use gpumodel_models::timing::Clocks;
use gpumodel_predict::calibration::file::CalibrationFile;
use gpumodel_predict::examples;
use gpumodel_predict::kernel::predict_kernel;
use gpumodel_predict::sweep::{Sweep, sweep_core_clock, sweep_warps};
use gpumodel_predict::{Config, Prediction};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// What to sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SweepArg {
    /// Active warps per SM, from one block to the SM's maximum (paper Fig. 5.16).
    Warps,
    /// The architecture's supported core clocks (needs a model with a core_mhz input).
    CoreClock,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Active warps per SM (at most the architecture's maximum; at least one block's warps).
    #[arg(long)]
    pub warps: Option<u32>,
    /// Kernel profile (TOML or JSON), or an embedded example: reduction, transpose, matrixmul.
    #[arg(long, default_value = examples::DEFAULT_KERNEL)]
    pub kernel: String,
    /// Architecture profile: a built-in name (see the error for the list) or a TOML file.
    #[arg(long, default_value = examples::DEFAULT_ARCH)]
    pub arch: String,
    /// Power model artifact (JSON, e.g. models/trained/*.json), or the embedded titanx-bpann.
    #[arg(long, default_value = examples::DEFAULT_MODEL)]
    pub model: String,
    /// Core clock, MHz (default: the architecture's).
    #[arg(long)]
    pub core_mhz: Option<f64>,
    /// Memory clock, MHz (default: the architecture's).
    #[arg(long)]
    pub mem_mhz: Option<f64>,
    /// Sweep warps per SM or core clocks and print the curve with each objective's optimum.
    #[arg(long, value_enum)]
    pub sweep: Option<SweepArg>,
    /// Objectives E^a·D^b: e, ed, ed2, ed3 or a,b (repeatable; default e, ed, ed2, ed3).
    #[arg(long = "objective")]
    pub objectives: Vec<String>,
    /// Time calibration written by `gpumodel validate --save-calibration` for the same --arch: applied to
    /// the predicted time, hence to power, energy, sweeps and optima.
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t)]
    pub format: OutputFormat,
}

fn load_kernel(spec: &str) -> anyhow::Result<KernelProfile> {
    if let Some(k) = examples::kernel(spec) {
        return k.context("embedded example kernel");
    }
    let p = Path::new(spec);
    if !p.exists() {
        anyhow::bail!(
            "kernel profile '{spec}' not found: give a TOML/JSON file or one of the examples {}",
            examples::ALL.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
        );
    }
    Ok(KernelProfile::from_file(p)?)
}

fn load_model(spec: &str) -> anyhow::Result<ModelArtifact> {
    if let Some((name, text)) = examples::MODELS.iter().find(|(n, _)| *n == spec) {
        return Ok(ModelArtifact::from_json_str(text, name)?);
    }
    let p = Path::new(spec);
    if !p.exists() {
        anyhow::bail!(
            "model '{spec}' not found: give an artifact JSON written by `gpumodel train` or one of {}",
            examples::MODELS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
        );
    }
    Ok(ModelArtifact::from_json_file(p)?)
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // Flags first: objectives and clocks are checked before any file is read.
    let objectives = if args.objectives.is_empty() {
        Objective::DEFAULTS.to_vec()
    } else {
        args.objectives.iter().map(|o| Objective::parse(o)).collect::<Result<Vec<_>, _>>()?
    };
    for (flag, v) in [("--core-mhz", args.core_mhz), ("--mem-mhz", args.mem_mhz)] {
        if let Some(v) = v
            && !(v.is_finite() && v > 0.0)
        {
            anyhow::bail!("{flag} {v}: a clock must be a positive number of MHz");
        }
    }
    let arch = ArchProfile::resolve(&args.arch)?;
    let calibration = match &args.calibration {
        Some(p) => {
            let c = CalibrationFile::read(p)?;
            c.check_arch(&arch, &p.display().to_string())?;
            Some(c)
        }
        None => None,
    };
    let cal = calibration.as_ref().map(CalibrationFile::calibration);
    let kernel = load_kernel(&args.kernel)?;
    let model = load_model(&args.model)?;
    let clocks = match (args.core_mhz, args.mem_mhz) {
        (None, None) => None,
        (c, m) => Some(Clocks {
            core_mhz: c.unwrap_or(arch.core_mhz.value),
            mem_mhz: m.unwrap_or(arch.mem_mhz.value),
        }),
    };
    let cfg = Config { clocks, warps: args.warps, calibration: cal };
    match args.sweep {
        None => {
            let p = predict_kernel(&kernel, &arch, &model, &cfg)?;
            print_prediction(&p, &kernel, &arch, &args, calibration.as_ref(), args.format)?;
        }
        Some(s) => {
            let sweep = match s {
                SweepArg::Warps => sweep_warps(&kernel, &arch, &model, &cfg, &objectives)?,
                SweepArg::CoreClock => sweep_core_clock(&kernel, &arch, &model, &cfg, &objectives)?,
            };
            print_sweep(&sweep, &kernel, &arch, &args, calibration.as_ref(), args.format)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A command's output, collected and written at once: a closed pipe (`gpumodel predict | head`) ends the
/// command quietly instead of panicking in `println!`.
pub(crate) struct Out(pub String);

impl Out {
    pub(crate) fn new() -> Out {
        Out(String::new())
    }

    /// What `write!` / `writeln!` call.
    pub(crate) fn write_fmt(&mut self, args: std::fmt::Arguments<'_>) {
        // Writing into a String cannot fail.
        let _ = std::fmt::Write::write_fmt(&mut self.0, args);
    }

    /// Writes everything to stdout; a reader that went away is not an error.
    pub(crate) fn emit(self) -> anyhow::Result<()> {
        use std::io::Write;
        let mut stdout = std::io::stdout().lock();
        match stdout.write_all(self.0.as_bytes()).and_then(|()| stdout.flush()) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            r => Ok(r?),
        }
    }
}

/// The dataset name in the model artifact's training metadata, when it has one.
fn args_model_dataset(args: &Args) -> Option<String> {
    let m = load_model(&args.model).ok()?;
    m.training.get("dataset")?.get("name")?.as_str().map(str::to_string)
}

fn print_prediction(
    p: &Prediction,
    k: &KernelProfile,
    arch: &ArchProfile,
    args: &Args,
    calibration: Option<&CalibrationFile>,
    format: OutputFormat,
) -> anyhow::Result<()> {
    let d = &p.detail;
    let mut sink = Out::new();
    match format {
        OutputFormat::Json => {
            let v = serde_json::json!({
                "kernel": k.name,
                "arch": arch.name,
                "model": args.model,
                "calibration": calibration_json(args, calibration),
                "prediction": p,
            });
            writeln!(sink, "{}", serde_json::to_string_pretty(&v)?);
        }
        OutputFormat::Csv => {
            writeln!(
                sink,
                "kernel,arch,core_mhz,mem_mhz,warps_per_sm,time_s,power_w,energy_j,bottleneck,bottleneck_share,calibration"
            );
            writeln!(
                sink,
                "{},{},{},{},{},{},{},{},{},{},{}",
                k.name,
                arch.name,
                d.clocks.core_mhz,
                d.clocks.mem_mhz,
                d.occupancy.active_warps_per_sm,
                p.time_s,
                p.power_w,
                p.energy_j,
                d.bottleneck,
                d.bottleneck_share,
                args.calibration.as_ref().map(|p| p.display().to_string()).unwrap_or_default()
            );
        }
        OutputFormat::Table => {
            writeln!(
                sink,
                "kernel      {} ({})",
                k.name,
                if k.source.is_empty() { "no source given" } else { &k.source }
            );
            if let Some(measured_on) = k.arch.as_deref().filter(|a| *a != arch.name) {
                writeln!(sink, "note        counters measured on {measured_on}, predicted on {}", arch.name);
            }
            // A power model describes the GPU it was trained on: say so when the architecture differs.
            let trained_on = args_model_dataset(args);
            if let Some(ds) = trained_on.as_deref().filter(|d| !d.replace('-', "").contains(&arch.name)) {
                writeln!(
                    sink,
                    "note        the power model was trained on {ds}; its watts describe that GPU, not {}",
                    arch.name
                );
            }
            writeln!(
                sink,
                "gpu         {} at {} / {} MHz (core / memory)",
                arch.display_name, d.clocks.core_mhz, d.clocks.mem_mhz
            );
            let o = &d.occupancy;
            writeln!(
                sink,
                "occupancy   {} warps/SM ({} blocks of {} warps, limited by {}), {} rounds on {} SMs",
                o.active_warps_per_sm,
                o.active_blocks_per_sm,
                o.warps_per_block,
                o.limiter,
                o.rounds,
                o.active_sms
            );
            match (&args.calibration, calibration) {
                (Some(file), Some(c)) => writeln!(
                    sink,
                    "time        {:.4} ms, calibrated by {} ({:.4} ms from the timing model alone; fitted on {}, \
                     {:.1}% out-of-fold MAPE there)",
                    p.time_s * 1e3,
                    file.display(),
                    d.timing.time_s * 1e3,
                    c.dataset.name,
                    c.fit.out_of_fold_mape_pct
                ),
                _ => writeln!(sink, "time        {:.4} ms", p.time_s * 1e3),
            }
            writeln!(
                sink,
                "power       {:.1} W ({} model; inputs = counter rates at the predicted time)",
                p.power_w, args.model
            );
            writeln!(sink, "energy      {:.4} J", p.energy_j);
            writeln!(
                sink,
                "bottleneck  {} ({:.0}% of the component total)",
                d.bottleneck,
                100.0 * d.bottleneck_share
            );
            writeln!(sink);
            let rows: Vec<Vec<String>> = d
                .components
                .iter()
                .map(|c| {
                    vec![
                        c.name.to_string(),
                        format!("{:.4}", c.time_s * 1e3),
                        format!("{:.1}", 100.0 * c.share),
                        c.access_ratio.map_or("-".into(), |r| format!("{r:.4}")),
                    ]
                })
                .collect();
            write!(sink, "{}", render_table(&["component", "time ms", "share %", "access ratio"], &rows));
            if let Some(c) = calibration {
                writeln!(
                    sink,
                    "L2 time {:.4} ms (the DRAM traffic through L2 at this core clock; not a component: the \
                     calibration weighs it by a_l2 = {:.4})",
                    d.timing.l2_s * 1e3,
                    c.coefficients.a_l2
                );
            }
        }
    }
    sink.emit()
}

/// What the JSON says about the calibration: the file and what it holds, or null.
fn calibration_json(args: &Args, calibration: Option<&CalibrationFile>) -> serde_json::Value {
    match (&args.calibration, calibration) {
        (Some(p), Some(c)) => {
            serde_json::json!({ "applied": true, "file": p.display().to_string(), "content": c })
        }
        _ => serde_json::json!({ "applied": false }),
    }
}

fn print_sweep(
    s: &Sweep,
    k: &KernelProfile,
    arch: &ArchProfile,
    args: &Args,
    calibration: Option<&CalibrationFile>,
    format: OutputFormat,
) -> anyhow::Result<()> {
    let xname = match s.kind {
        gpumodel_predict::sweep::SweepKind::Warps => "warps/SM",
        gpumodel_predict::sweep::SweepKind::CoreClock => "core MHz",
    };
    let mut sink = Out::new();
    match format {
        OutputFormat::Json => {
            let v = serde_json::json!({
                "kernel": k.name,
                "arch": arch.name,
                "calibration": calibration_json(args, calibration),
                "sweep": s,
            });
            writeln!(sink, "{}", serde_json::to_string_pretty(&v)?);
        }
        OutputFormat::Csv => {
            writeln!(sink, "x,time_s,power_w,energy_j,bottleneck");
            for p in &s.points {
                writeln!(sink, "{},{},{},{},{}", p.x, p.time_s, p.power_w, p.energy_j, p.bottleneck);
            }
        }
        OutputFormat::Table => {
            writeln!(sink, "kernel {} on {}", k.name, arch.display_name);
            if let Some(file) = &args.calibration {
                writeln!(sink, "times calibrated by {}", file.display());
            }
            let rows: Vec<Vec<String>> = s
                .points
                .iter()
                .map(|p| {
                    vec![
                        format!("{}", p.x),
                        format!("{:.4}", p.time_s * 1e3),
                        format!("{:.1}", p.power_w),
                        format!("{:.4}", p.energy_j),
                        p.bottleneck.to_string(),
                    ]
                })
                .collect();
            write!(sink, "{}", render_table(&[xname, "time ms", "power W", "energy J", "bottleneck"], &rows));
            writeln!(sink);
            for o in &s.optima {
                writeln!(
                    sink,
                    "optimum {:>8}: {xname} = {} ({} = {:.6e})",
                    o.objective, o.x, o.objective, o.value
                );
            }
        }
    }
    sink.emit()
}
