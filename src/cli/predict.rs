//! `gpumodel predict --warps 32` — a kernel's time, power, energy and bottleneck at one configuration, or
//! a sweep over warps per SM or core clocks with the E^a·D^b optimum of each objective.
//!
//! With no other argument it uses the embedded example kernel (the reduction, counters measured on a
//! GTX 980), the Titan X architecture profile and the Titan X BP-ANN power model.

use crate::cli::output::{ExportFormat, plot_svg, print, refuse_existing};
use anyhow::Context;
use gpumodel_models::arch::ArchProfile;
use gpumodel_models::artifact::ModelArtifact;
use gpumodel_models::energy::Objective;
use gpumodel_models::profile::KernelProfile;
use gpumodel_models::timing::Clocks;
use gpumodel_predict::Config;
use gpumodel_predict::calibration::file::CalibrationFile;
use gpumodel_predict::examples;
use gpumodel_predict::kernel::fallback;
use gpumodel_predict::kernel::gpu::{beyond_the_hardware, choose_arch};
use gpumodel_predict::kernel::{input_extrapolation, inputs_extrapolation, predict_kernel};
use gpumodel_predict::power::RooflinePower;
use gpumodel_predict::report::{CalibrationUse, KernelReport, Provenance, RooflineReport, SweepReport};
use gpumodel_predict::sweep::{sweep_core_clock, sweep_warps};
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
    /// Kernel profile (TOML or JSON), an Nsight Compute or nvprof CSV export, or an embedded example:
    /// reduction, transpose, matrixmul.
    #[arg(long, default_value = examples::DEFAULT_KERNEL)]
    pub kernel: String,
    /// Which kernel launch of an export --kernel predicts (1-based, the export's order), when it holds several.
    #[arg(long, value_name = "N")]
    pub launch: Option<usize>,
    /// Architecture profile: a built-in name (c2075, m2090, gtx980, titanx, gtx1080ti, p100, v100, a100,
    /// h100) or a TOML file. Default: the GPU the kernel file names (an export's device or compute
    /// capability), else titanx; the built-in examples are predicted on titanx.
    #[arg(long)]
    pub arch: Option<String>,
    /// Power model artifact (JSON, e.g. models/trained/*.json), or the embedded titanx-bpann.
    #[arg(long, default_value = examples::DEFAULT_MODEL)]
    pub model: String,
    /// Core clock, MHz (default: the architecture's; outside its table the prediction is flagged as
    /// extrapolated).
    #[arg(long, allow_negative_numbers = true)]
    pub core_mhz: Option<f64>,
    /// Memory clock, MHz (default: the architecture's).
    #[arg(long, allow_negative_numbers = true)]
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
    /// Also write the headline figure of the result as SVG (`gpumodel report` draws all of them).
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<std::path::PathBuf>,
    /// Overwrite an existing --plot file (without it an existing file is kept and nothing is written).
    #[arg(long)]
    pub force: bool,
    #[arg(long, value_enum, default_value_t)]
    pub format: ExportFormat,
    #[command(flatten)]
    pub clocks: crate::cli::utilization::ProfileArgs,
}

fn load_kernel(spec: &str, launch: Option<usize>) -> anyhow::Result<KernelProfile> {
    if let Some(k) = examples::kernel(spec) {
        if launch.is_some() {
            anyhow::bail!(
                "--launch picks a kernel launch of an ncu or nvprof export: {spec} is a built-in example"
            );
        }
        return k.context("embedded example kernel");
    }
    let p = Path::new(spec);
    if !p.exists() {
        anyhow::bail!(
            "kernel profile '{spec}' not found: give a TOML/JSON file or one of the examples {}",
            examples::ALL.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
        );
    }
    crate::cli::import::export::kernel_file(p, launch)
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

/// The flags of a kernel prediction, which `--profile` (a clock sweep of a utilization profile) does not read.
const KERNEL_FLAGS: &[&str] = &[
    "warps",
    "kernel",
    "arch",
    "model",
    "core_mhz",
    "mem_mhz",
    "sweep",
    "objectives",
    "calibration",
    "plot",
    "force",
];

pub fn run(args: Args, given: &crate::cli::Given) -> anyhow::Result<ExitCode> {
    if args.clocks.profile.is_some() {
        let wrong = given.among(KERNEL_FLAGS);
        if !wrong.is_empty() {
            let model = if given.has("model") {
                " (--model names a power model; give a clock model with --clock-model)"
            } else {
                ""
            };
            anyhow::bail!(
                "--profile predicts a utilization profile over clocks and does not read {}{model}: drop {}, or \
                 drop --profile to predict a kernel",
                wrong.join(", "),
                if wrong.len() == 1 { "it" } else { "them" }
            );
        }
        return crate::cli::utilization::predict(&args.clocks, args.format);
    }
    if let Some(p) = &args.plot {
        refuse_existing(p, args.force)?;
    }
    // Flags first: objectives and clocks are checked before any file is read.
    let objectives = if args.objectives.is_empty() {
        Objective::DEFAULTS.to_vec()
    } else {
        args.objectives.iter().map(|o| Objective::parse(o)).collect::<Result<Vec<_>, _>>()?
    };
    // A physical range (no GPU clocks its SMs above 5 GHz or its memory above 30 GHz); within it, clocks
    // outside the architecture's table are predicted and flagged.
    for (flag, v, max) in [("--core-mhz", args.core_mhz, 5_000.0), ("--mem-mhz", args.mem_mhz, 30_000.0)] {
        if let Some(v) = v
            && !(v.is_finite() && (50.0..=max).contains(&v))
        {
            anyhow::bail!("{flag} {v}: a clock must be within 50–{max} MHz");
        }
    }
    let kernel = load_kernel(&args.kernel, args.launch)?;
    let choice = choose_arch(args.arch.as_deref(), &kernel, examples::kernel(&args.kernel).is_some())?;
    let arch = choice.arch;
    let calibration = match &args.calibration {
        Some(p) => {
            let c = CalibrationFile::read(p)?;
            c.check_arch(&arch, &p.display().to_string())?;
            Some(c)
        }
        None => None,
    };
    let cal = calibration.as_ref().and_then(CalibrationFile::calibration);
    let model = load_model(&args.model)?;
    let clocks = match (args.core_mhz, args.mem_mhz) {
        (None, None) => None,
        (c, m) => Some(Clocks {
            core_mhz: c.unwrap_or(arch.core_mhz.value),
            mem_mhz: m.unwrap_or(arch.mem_mhz.value),
        }),
    };
    // A calibration predicts with the structure it was fitted to (and recorded); without one, the model.
    let timing = calibration.as_ref().map(CalibrationFile::timing).unwrap_or_default();
    let cfg =
        Config { clocks, warps: args.warps, calibration: cal, timing, use_measured_time: cal.is_none() };
    let context = Provenance { arch_note: choice.note, ..Provenance::new(&kernel, &arch, &model) };
    let extrapolation = extrapolation(&arch, clocks);
    let at = clocks.unwrap_or_else(|| Clocks::default_for(&arch));
    let lacks = fallback::lacked(&kernel);
    if !lacks.is_empty() {
        if args.sweep.is_some() {
            anyhow::bail!(
                "kernel profile '{}' lacks {}: --sweep needs the pipeline timing model (without --sweep, predict \
                 uses the roofline fallback)",
                kernel.name,
                lacks.join(", ")
            );
        }
        let roofline = fallback::predict_roofline(&kernel, &arch, at)?;
        let power = RooflinePower::of(&model, &kernel, roofline.time_s, roofline.clocks);
        let mut extrapolation = extrapolation;
        extrapolation.extend(inputs_extrapolation(&model, &power.inputs));
        let out_of_bounds =
            power.power_w.map_or_else(Vec::new, |w| beyond_the_hardware(&arch, at, roofline.time_s, w));
        let report = RooflineReport {
            kernel: kernel.name.clone(),
            arch: arch.name.clone(),
            model: "roofline",
            roofline,
            out_of_bounds,
            power,
            power_model: args.model.clone(),
            context,
            extrapolation,
        };
        print(&report, args.format)?;
        return Ok(ExitCode::SUCCESS);
    }
    let calibration =
        CalibrationUse::new(args.calibration.as_ref().map(|p| p.display().to_string()).zip(calibration));
    match args.sweep {
        None => {
            let prediction = predict_kernel(&kernel, &arch, &model, &cfg)?;
            let mut extrapolation = extrapolation;
            extrapolation.extend(input_extrapolation(&model, &prediction));
            let out_of_bounds = beyond_the_hardware(&arch, at, prediction.time_s, prediction.power_w);
            let report = KernelReport {
                out_of_bounds,
                kernel: kernel.name,
                arch: arch.name,
                model: args.model,
                calibration,
                context,
                prediction,
                extrapolation,
            };
            if let Some(p) = &args.plot {
                plot_svg(&report, p, args.force)?;
            }
            print(&report, args.format)?;
        }
        Some(s) => {
            let sweep = match s {
                SweepArg::Warps => sweep_warps(&kernel, &arch, &model, &cfg, &objectives)?,
                SweepArg::CoreClock => sweep_core_clock(&kernel, &arch, &model, &cfg, &objectives)?,
            };
            let out_of_bounds = sweep
                .points
                .iter()
                .flat_map(|p| {
                    // A core-clock sweep's x is the core clock; a warps sweep runs at the run's clocks.
                    let c = if s == SweepArg::CoreClock { Clocks { core_mhz: p.x, ..at } } else { at };
                    beyond_the_hardware(&arch, c, p.time_s, p.power_w)
                        .into_iter()
                        .map(move |e| format!("at {}: {e}", p.x))
                })
                .collect();
            let report = SweepReport {
                out_of_bounds,
                kernel: kernel.name,
                arch: arch.name,
                model: args.model,
                calibration,
                context,
                sweep,
            };
            if let Some(p) = &args.plot {
                plot_svg(&report, p, args.force)?;
            }
            print(&report, args.format)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One line per requested clock outside the architecture's table (predicted, but extrapolated).
fn extrapolation(arch: &ArchProfile, clocks: Option<Clocks>) -> Vec<String> {
    let Some(c) = clocks else { return Vec::new() };
    let mut out = Vec::new();
    for (what, v, table) in
        [("core", c.core_mhz, &arch.core_clocks_mhz.value), ("memory", c.mem_mhz, &arch.mem_clocks_mhz.value)]
    {
        let lo = table.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = table.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if v < lo || v > hi {
            out.push(format!(
                "{what} clock {v} MHz is outside the {what} clocks of {} ({lo}–{hi} MHz): extrapolated",
                arch.name
            ));
        }
    }
    out
}
