//! Shared output helpers: the output format flag, plain-text tables, and the one progress-bar factory.

use gpumodel_models::export::{self, Export, Format};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::{IsTerminal, Write};

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

/// `--plot FILE.svg`: the command's headline figure (the first one `gpumodel report` draws for this
/// result) as one SVG file; the directory is created and an existing file is replaced, like an output.
/// The other figures: `gpumodel report RESULT.json --svg FILE --figure ID`.
pub fn plot<E: Export>(result: &E, path: &std::path::Path) -> anyhow::Result<()> {
    let json = export::render_json(result)?;
    let svg = gpumodel_report::figure_for(&json)?;
    gpumodel_report::write_output(path, &svg, true)?;
    eprintln!("wrote {} (figure)", path.display());
    Ok(())
}
