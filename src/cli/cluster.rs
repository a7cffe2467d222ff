//! `gpumodel cluster` — energy and E^a·D^b of a GPU cluster versus node count (paper eq. 5.15/5.16,
//! Fig. 5.17), from per-node GPU power, idle power and time measured (or predicted) at a few node counts.

use crate::cli::output::{ExportFormat, print};
use anyhow::Context;
use gpumodel_models::cluster::{ClusterReport, read_node_points};
use gpumodel_models::energy::Objective;
use std::path::PathBuf;
use std::process::ExitCode;

const EXAMPLE: &str = include_str!("../../datasets/examples/cluster/strong-scaling.csv");
const EXAMPLE_NAME: &str = "datasets/examples/cluster/strong-scaling.csv";

#[derive(Debug, clap::Args)]
pub struct Args {
    /// CSV with `nodes,time_s,gpu_power_w,idle_power_w[,gpu_time_s]` at two or more node counts ('#' lines
    /// are comments). Default: the illustrative example in datasets/examples/cluster/.
    #[arg(long)]
    pub input: Option<PathBuf>,
    /// Largest node count to evaluate (every count from 1).
    #[arg(long, default_value_t = 64)]
    pub max_nodes: u32,
    /// Objectives E^a·D^b: e, ed, ed2, ed3 or a,b (repeatable; default e, ed, ed2, ed3).
    #[arg(long = "objective")]
    pub objectives: Vec<String>,
    #[arg(long, value_enum, default_value_t)]
    pub format: ExportFormat,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let objectives = if args.objectives.is_empty() {
        Objective::DEFAULTS.to_vec()
    } else {
        args.objectives.iter().map(|o| Objective::parse(o)).collect::<Result<Vec<_>, _>>()?
    };
    let (text, source) = match &args.input {
        Some(p) => (
            std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?,
            p.display().to_string(),
        ),
        None => (EXAMPLE.to_string(), EXAMPLE_NAME.to_string()),
    };
    let measured = read_node_points(&text, &source)?;
    let report = ClusterReport::evaluate(&source, &measured, args.max_nodes, &objectives)?;
    print(&report, args.format)?;
    Ok(ExitCode::SUCCESS)
}
