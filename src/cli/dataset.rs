//! `gpumodel dataset list|show|fetch` — the registry of public datasets.

use super::output::{ExportFormat, emit, print};
use anyhow::Context;
use gpumodel_models::catalogue::{DatasetList, DatasetSummary};
use gpumodel_models::import::BadRows;
use gpumodel_models::registry::{self, Found, Locator, Registry};
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub action: Action,
}

#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// List the registered datasets and whether each is on this machine.
    List {
        #[arg(long, value_enum, default_value_t)]
        format: ExportFormat,
    },
    /// Rows, columns, kernels, clocks, power range, license and citation of a dataset (name or path).
    Show {
        /// A registered name (see `gpumodel dataset list`) or the path of a file.
        name: String,
        /// Format of a file given by path: guerreiro, nvdvfs or table (guessed when omitted).
        #[arg(long = "import", value_name = "FORMAT")]
        import: Option<String>,
        #[arg(long, value_enum, default_value_t)]
        format: ExportFormat,
    },
    /// Download a dataset from its origin into the cache and verify its sha256.
    Fetch {
        /// Registered names; `all` fetches every one.
        #[arg(required = true)]
        names: Vec<String>,
    },
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let loc = Locator::from_env();
    let reg = Registry::builtin();
    match args.action {
        Action::List { format } => {
            print(&DatasetList::of(&reg, &loc), format)?;
            Ok(ExitCode::SUCCESS)
        }
        Action::Show { name, import, format } => {
            let fmt = import.as_deref().map(gpumodel_models::import::Format::from_name).transpose()?;
            let opened = registry::open(&name, fmt, BadRows::Fail, &loc)?;
            let bytes = std::fs::read(&opened.path).with_context(|| opened.path.display().to_string())?;
            print(&DatasetSummary::of(&name, &opened, &bytes), format)?;
            Ok(ExitCode::SUCCESS)
        }
        Action::Fetch { names } => {
            let names: Vec<String> = if names.iter().any(|n| n == "all") {
                reg.names().into_iter().map(String::from).collect()
            } else {
                names
            };
            for n in &names {
                let entry = reg.get(n)?;
                let (path, found) = loc.fetch(entry)?;
                let how = match found {
                    Found::Downloaded => "downloaded, sha256 verified",
                    _ => "already present, sha256 verified",
                };
                emit(&format!("{n}: {} ({how})\n", path.display()))?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
