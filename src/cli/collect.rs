//! `gpumodel collect ./kernel [args…]` and `gpumodel collect --suite`.

use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Run the built-in microbenchmark suite instead of a program (writes a training table).
    #[arg(long)]
    pub suite: bool,
    #[command(flatten)]
    pub suite_args: super::suite::SuiteArgs,
    /// Output file (trace CSV, with a JSON sidecar; or the suite's training table).
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Sampling rate, Hz.
    #[arg(long, default_value_t = 60.0)]
    pub rate: f64,
    /// Repeat short programs (or suite kernels) until at least this long.
    #[arg(long, default_value_t = 1.0)]
    pub min_seconds: f64,
    /// GPU index (NVML / CUDA ordinal).
    #[arg(long, default_value_t = 0)]
    pub device: u32,
    /// The program to run and its arguments.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub program: Vec<String>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.suite {
        return super::suite::run(&args);
    }
    anyhow::bail!("`gpumodel collect` is not available in this build yet")
}
