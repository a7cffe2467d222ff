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

/// A command's output collected in memory and written at once through [`emit`], for the commands that
/// still format their own text (`validate`). Allowed dead so that the branches migrating the last commands
/// merge cleanly; remove with them.
#[allow(dead_code)]
pub(crate) struct Out(pub String);

#[allow(dead_code)]
impl Out {
    pub(crate) fn new() -> Out {
        Out(String::new())
    }

    /// What `write!` / `writeln!` call.
    pub(crate) fn write_fmt(&mut self, args: std::fmt::Arguments<'_>) {
        // Writing into a String cannot fail.
        let _ = std::fmt::Write::write_fmt(&mut self.0, args);
    }

    /// Writes everything to stdout; a reader that went away is not an error.
    pub(crate) fn emit(self) -> anyhow::Result<()> {
        emit(&self.0)
    }
}

/// How a command prints its result (train, validate, calibrate until they are on [`ExportFormat`]).
#[allow(dead_code)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum OutputFormat {
    /// An aligned text table for people.
    #[default]
    Table,
    /// One JSON document on stdout.
    Json,
    /// CSV on stdout.
    Csv,
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

/// Renders rows as an aligned text table; numbers right-aligned, text left-aligned (the layout of
/// `gpumodel_models::export`, for the commands not yet on it).
#[allow(dead_code)]
pub fn render_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let numeric = |s: &str| s.trim_end_matches('%').parse::<f64>().is_ok();
    // A column is right-aligned, header included, when every non-empty body cell in it is a number.
    let right: Vec<bool> = (0..header.len())
        .map(|j| {
            let mut cells =
                rows.iter().filter_map(|r| r.get(j)).filter(|c| !c.is_empty() && c.as_str() != "-");
            let mut any = false;
            let all = cells.all(|c| {
                any = true;
                numeric(c)
            });
            any && all
        })
        .collect();
    export::aligned(header, rows, &right)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_aligns_number_columns_right_with_their_header() {
        let t = render_table(
            &["name", "W"],
            &[vec!["a".into(), "1.5".into()], vec!["bcd".into(), "10.25".into()]],
        );
        assert_eq!(t, "name      W\n----  -----\na       1.5\nbcd   10.25\n");
    }
}
