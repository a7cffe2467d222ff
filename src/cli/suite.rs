//! `gpumodel collect --suite` — the built-in microbenchmark suite.

use std::process::ExitCode;

/// Options of `collect --suite` (the shared ones — out, rate, min-seconds, device — are in collect::Args).
#[derive(Debug, clap::Args)]
pub struct SuiteArgs {}

pub fn run(_args: &super::collect::Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`gpumodel collect --suite` is not available in this build yet")
}
