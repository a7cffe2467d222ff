//! `gpumodel import guerreiro|nvdvfs FILE --out table.csv` — public formats → training table.

use anyhow::Context;
use gpumodel_models::import::{BadRows, Format, import_file};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Source format.
    #[arg(value_parser = ["guerreiro", "nvdvfs"])]
    pub format: String,
    /// The file to import.
    pub file: PathBuf,
    /// Where to write the training table (CSV); stdout when omitted.
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Skip malformed rows (counted on stderr) instead of stopping at the first one.
    #[arg(long)]
    pub skip_bad_rows: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let format = Format::from_name(&args.format)?;
    let bad = if args.skip_bad_rows { BadRows::Skip } else { BadRows::Fail };
    let imported = import_file(&args.file, format, bad)?;
    if !imported.skipped.is_empty() {
        eprintln!(
            "gpumodel: skipped {} malformed row(s) of {}; first: {}",
            imported.skipped.len(),
            args.file.display(),
            imported.skipped[0]
        );
    }
    let t = &imported.table;
    match &args.out {
        Some(out) => {
            // Write beside the target and rename: a failure never leaves a half-written table behind.
            let tmp = out.with_extension("csv.part");
            t.write_csv(&tmp)?;
            std::fs::rename(&tmp, out)
                .with_context(|| format!("moving {} to {}", tmp.display(), out.display()))?;
            eprintln!(
                "gpumodel: wrote {} rows x {} columns ({} kernels) to {}",
                t.n_rows(),
                1 + t.text.len() + t.columns.len(),
                t.distinct_groups().len(),
                out.display()
            );
        }
        None => t.write_csv_to(std::io::stdout().lock())?,
    }
    Ok(ExitCode::SUCCESS)
}
