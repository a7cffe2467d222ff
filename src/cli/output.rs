//! Shared output helpers: the output format flag, plain-text tables, and the one progress-bar factory.

use gpumodel_models::export::{self, Export, Format};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::path::Path;

/// `--format` of the commands on the one output layer (`gpumodel_models::export`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ExportFormat {
    /// An aligned text table for people.
    #[default]
    Table,
    /// CSV of the main table on stdout (quoted where needed, full-precision numbers).
    Csv,
    /// The whole result as one JSON document on stdout.
    Json,
    /// Markdown tables.
    Markdown,
}

impl From<ExportFormat> for Format {
    fn from(f: ExportFormat) -> Format {
        match f {
            ExportFormat::Table => Format::Table,
            ExportFormat::Csv => Format::Csv,
            ExportFormat::Json => Format::Json,
            ExportFormat::Markdown => Format::Markdown,
        }
    }
}

/// Renders a command's result and writes it to stdout.
pub fn print<E: Export>(result: &E, format: ExportFormat) -> anyhow::Result<()> {
    emit(&export::render(result, format.into())?)
}

/// The one output sink: writes to stdout; a reader that went away (`| head`) is not an error.
pub fn emit(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => Ok(r?),
    }
}

/// A progress bar on stderr when stderr is a terminal; hidden otherwise (pipes, CI, files).
pub fn progress_bar(len: u64, message: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template("{msg:>12} [{bar:30}] {pos}/{len} {elapsed_precise} eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    pb.set_message(message.to_string());
    pb
}

/// The one overwrite rule of every file a command writes: an existing file is kept unless `force`
/// (`--force`). Commands call it before their work, so that a refusal costs nothing.
pub fn refuse_existing(path: &Path, force: bool) -> anyhow::Result<()> {
    if path.exists() && !force {
        return Err(gpumodel_report::Error::Exists(path.display().to_string()).into());
    }
    Ok(())
}

/// `--plot FILE.svg`: the command's headline figure (the first one `gpumodel report` draws for this
/// result) as one SVG file; the directory is created, and an existing file is kept unless `force`
/// (nothing is written then). The other figures: `gpumodel report RESULT.json --svg FILE --figure ID`.
pub fn plot_svg<E: Export>(result: &E, path: &Path, force: bool) -> anyhow::Result<()> {
    refuse_existing(path, force)?;
    let json = export::render_json(result)?;
    let svg = gpumodel_report::figure_for(&json)?;
    gpumodel_report::write_output(path, &svg, force)?;
    eprintln!("wrote {} (figure)", path.display());
    Ok(())
}

/// The command as typed, with the program reduced to its name and no absolute path of this machine.
pub fn command_line() -> String {
    let words: Vec<String> = std::env::args()
        .enumerate()
        .map(|(i, a)| match std::path::Path::new(&a) {
            _ if i == 0 => "gpumodel".to_string(),
            p if p.is_absolute() => p.file_name().map_or(a.clone(), |f| f.to_string_lossy().into_owned()),
            _ => a,
        })
        .collect();
    words.join(" ")
}
