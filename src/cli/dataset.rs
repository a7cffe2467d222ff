//! `gpumodel dataset list|show|fetch` — the registry of public datasets.

use super::output::{ExportFormat, emit, print};
use anyhow::Context;
use gpumodel_models::catalogue::{DatasetList, DatasetSummary};
use gpumodel_models::import::BadRows;
use gpumodel_models::registry::{self, Found, Locator, Registry};
use gpumodel_models::utilization::read::{ProfileFormat, ReadOptions, read_file};
use std::path::Path;
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
        /// Format of a file given by path: guerreiro, nvdvfs, table or dcgm-profile (guessed when omitted).
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
            if let Some(summary) = profile_summary(&name, import.as_deref(), &reg, &loc)? {
                print(&summary, format)?;
                return Ok(ExitCode::SUCCESS);
            }
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

/// The summary of a utilization-profile dataset (registered with that importer, named so by `--import`, or
/// a file that reads as one); `None` for every other dataset.
fn profile_summary(
    name: &str,
    import: Option<&str>,
    reg: &Registry,
    loc: &Locator,
) -> anyhow::Result<Option<DatasetSummary>> {
    let wanted = import == Some(ProfileFormat::REGISTRY_IMPORTER);
    let (path, found, entry) = match reg.get(name) {
        Ok(e) if e.importer == ProfileFormat::REGISTRY_IMPORTER || wanted => {
            let (path, found) = loc.resolve(e)?;
            (path, found, Some(e))
        }
        Ok(_) => return Ok(None),
        Err(_) => {
            let path = Path::new(name);
            let guessed = || {
                std::fs::read(path).is_ok_and(|b| {
                    let head = String::from_utf8_lossy(&b[..b.len().min(4096)]).to_string();
                    ProfileFormat::guess(&head) == Some(ProfileFormat::NvdvfsCsv)
                })
            };
            if !(wanted || (import.is_none() && guessed())) {
                return Ok(None);
            }
            (path.to_path_buf(), Found::UserPath, None)
        }
    };
    let opts =
        ReadOptions { gpu: entry.map(|e| e.gpu.clone()), skip_bad_rows: true, ..ReadOptions::default() };
    let set = read_file(&path, Some(ProfileFormat::NvdvfsCsv), &opts)?;
    let bytes = std::fs::read(&path).with_context(|| path.display().to_string())?;
    Ok(Some(DatasetSummary::of_profiles(name, &path, found, entry, &set, &bytes)))
}
