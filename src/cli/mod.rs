//! Command-line parsing and dispatch: one module per subcommand, each with its own `Args` and `run`.

use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::process::ExitCode;

pub mod arch;
pub mod calibrate;
pub mod cluster;
pub mod collect;
pub mod counters;
pub mod dataset;
pub mod doctor;
pub mod gpu;
pub mod import;
pub mod merge;
pub mod output;
pub mod predict;
pub mod report;
pub mod serve;
pub mod split;
pub mod suite;
pub mod train;
pub mod utilization;
pub mod validate;

/// Model GPU power and performance from hardware performance counters (Song et al., IPDPS 2013).
#[derive(Debug, Parser)]
#[command(name = "gpumodel", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List, show and fetch the registered public datasets.
    Dataset(dataset::Args),
    /// Turn a public measurement file into a training table.
    Import(import::Args),
    /// Fit the BP-ANN power model and the MLR / MLR+ baselines, and evaluate them.
    Train(Box<train::Args>),
    /// Predict a kernel's time, power, energy and bottleneck; sweep for the E^a·D^b optimum.
    Predict(predict::Args),
    /// Compare predicted and measured kernel time and E·D^n optima on measured data.
    Validate(validate::Args),
    /// Cluster energy and E^a·D^b versus node count (paper eq. 5.15/5.16).
    Cluster(cluster::Args),
    /// Best CPU/GPU work split for time, energy or E^a·D^b.
    Split(split::Args),
    /// Check that this machine's GPU, driver, counters and compiler work for gpumodel, with the fix for each
    /// part that does not.
    Doctor(doctor::Args),
    /// Run a CUDA program and sample NVML power and CUPTI counters.
    Collect(collect::Args),
    /// Which CUPTI metrics feed the ten model inputs on a chip.
    Counters(counters::Args),
    /// Measure the timing model's constants on this GPU and write an architecture profile.
    Calibrate(calibrate::Args),
    /// The built-in architecture profiles, and a profile from documents for a GPU that has none.
    #[command(subcommand)]
    Arch(arch::Action),
    /// Merge per-host / per-GPU collector outputs into one.
    Merge(merge::Args),
    /// Draw command results: one self-contained HTML report, or one figure as SVG.
    Report(report::Args),
    /// Serve live energy per GPU, process and container for Prometheus (read-only on the GPU).
    Serve(serve::Args),
}

/// Parses the command line and runs the subcommand.
pub fn run() -> anyhow::Result<ExitCode> {
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let given = Given::of(&matches);
    match cli.command {
        Command::Dataset(a) => dataset::run(a),
        Command::Import(a) => import::run(a),
        Command::Train(a) => train::run(*a, &given),
        Command::Predict(a) => predict::run(a, &given),
        Command::Validate(a) => validate::run(a),
        Command::Cluster(a) => cluster::run(a),
        Command::Split(a) => split::run(a),
        Command::Doctor(a) => doctor::run(a),
        Command::Collect(a) => collect::run(a),
        Command::Counters(a) => counters::run(a),
        Command::Calibrate(a) => calibrate::run(a),
        Command::Arch(a) => arch::run(a),
        Command::Merge(a) => merge::run(a),
        Command::Report(a) => report::run(a),
        Command::Serve(a) => serve::run(a),
    }
}

/// The flags typed on the command line for the subcommand (not those left at their defaults), so that a
/// command can refuse flags that do not apply to what it was given: (argument id, as typed).
pub struct Given(Vec<(String, String)>);

impl Given {
    fn of(m: &clap::ArgMatches) -> Given {
        let Some((name, sub)) = m.subcommand() else { return Given(Vec::new()) };
        let cmd = Cli::command();
        // Argument ids only (the matches also hold the ids of the groups clap's derive makes per struct),
        // each with the flag a user types.
        let args: Vec<(String, String)> = cmd
            .find_subcommand(name)
            .map(|c| {
                c.get_arguments()
                    .map(|a| {
                        let id = a.get_id().as_str().to_string();
                        let flag = a.get_long().map_or_else(|| id.clone(), |l| format!("--{l}"));
                        (id, flag)
                    })
                    .collect()
            })
            .unwrap_or_default();
        Given(
            args.into_iter()
                .filter(|(id, _)| sub.value_source(id.as_str()) == Some(ValueSource::CommandLine))
                .collect(),
        )
    }

    /// Whether the flag with argument id `id` (the field name, `out_dir`) was typed.
    pub fn has(&self, id: &str) -> bool {
        self.0.iter().any(|(g, _)| g == id)
    }

    /// The typed flags among the argument ids `ids`, as typed (`--out-dir`).
    pub fn among(&self, ids: &[&str]) -> Vec<String> {
        self.0.iter().filter(|(g, _)| ids.contains(&g.as_str())).map(|(_, f)| f.clone()).collect()
    }

    /// The typed flags not among the argument ids `ids`, as typed.
    pub fn outside(&self, ids: &[&str]) -> Vec<String> {
        self.0.iter().filter(|(g, _)| !ids.contains(&g.as_str())).map(|(_, f)| f.clone()).collect()
    }
}
