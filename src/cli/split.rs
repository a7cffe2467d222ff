//! `gpumodel split FILE` — the best CPU/GPU work split for time, energy or E^a·D^b, from one TOML case
//! file (PEACH two-device and coupled DVFS, Stafford's range test, the exact Pareto front over measured
//! profiles, Lang & Rünger's CG split); `gpumodel split fit FILE` fits linear clock laws with R².

use super::output::{ExportFormat, plot_svg, print, refuse_existing};
use gpumodel_predict::split::Objective;
use gpumodel_predict::split::export::FitReport;
use gpumodel_predict::split::input;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    pub action: Option<Action>,
    #[command(flatten)]
    pub run: RunArgs,
}

/// Options of `gpumodel split FILE`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The case file (TOML); see datasets/examples/split/ for one per paper.
    pub file: Option<PathBuf>,
    /// What to minimize: time, energy, ed, ed2, or `a,b` for E^a·D^b.
    #[arg(long, default_value = "energy")]
    pub objective: String,
    /// Also evaluate the model at this GPU share (0 to 1; two-device cases at fixed clocks).
    #[arg(long, value_name = "ALPHA", allow_negative_numbers = true)]
    pub gpu_share: Option<f64>,
    /// Also write the headline figure of the result as SVG (`gpumodel report` draws all of them).
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<std::path::PathBuf>,
    /// Overwrite an existing --plot file (without it an existing file is kept and nothing is written).
    #[arg(long)]
    pub force: bool,
    #[arg(long, value_enum, default_value_t)]
    pub format: ExportFormat,
}

#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Fit rate and dynamic power against clock (least squares) for the clock tables of a case file.
    Fit {
        /// The case file with [cpu.dvfs] / [gpu.dvfs] tables.
        file: PathBuf,
        /// Also write the first fitted law over its measured points as SVG (`gpumodel report` draws all).
        #[arg(long, value_name = "FILE.svg")]
        plot: Option<PathBuf>,
        /// Overwrite an existing --plot file.
        #[arg(long)]
        force: bool,
        #[arg(long, value_enum, default_value_t)]
        format: ExportFormat,
    },
}

/// The library's error as one line (its message already names the cause).
fn one_line(e: gpumodel_predict::Error) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.action {
        Some(Action::Fit { file, plot: svg, force, format }) => fit(file, svg, force, format),
        None => {
            let Some(file) = args.run.file else {
                anyhow::bail!(
                    "give a case file: `gpumodel split FILE` (examples in datasets/examples/split/)"
                );
            };
            // Flags first, then the file.
            let objective = Objective::parse(&args.run.objective)?;
            if let Some(p) = &args.run.plot {
                refuse_existing(p, args.run.force)?;
            }
            let case = input::load(&file).map_err(one_line)?;
            let report = case.run_at(objective, args.run.gpu_share).map_err(one_line)?;
            if let Some(p) = &args.run.plot {
                plot_svg(&report, p, args.run.force)?;
            }
            print(&report, args.run.format)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn fit(file: PathBuf, svg: Option<PathBuf>, force: bool, format: ExportFormat) -> anyhow::Result<ExitCode> {
    if let Some(p) = &svg {
        refuse_existing(p, force)?;
    }
    let case = input::load(&file).map_err(one_line)?;
    let rows = input::fit_laws(&case).map_err(one_line)?;
    let report = FitReport { file: file.display().to_string(), rows };
    if let Some(p) = &svg {
        plot_svg(&report, p, force)?;
    }
    print(&report, format)?;
    Ok(ExitCode::SUCCESS)
}
