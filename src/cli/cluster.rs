//! `gpumodel cluster` — not built yet (see the open issues).

use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`gpumodel cluster` is not available in this build yet")
}
