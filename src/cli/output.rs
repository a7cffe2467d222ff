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

/// Progress of a long command on stderr: a bar on a terminal; elsewhere (logs, CI, pipes) a line when the
/// work starts, one per quarter of it with the elapsed time, and one at the end, so a log shows that the
/// command is alive and how far it is.
pub struct Progress {
    bar: ProgressBar,
    plain: Option<Plain>,
}

struct Plain {
    what: String,
    start: std::time::Instant,
    /// Work done, work in all, and the next quarter (1–4) to report.
    state: std::sync::Mutex<(u64, u64, u64)>,
}

impl Progress {
    /// `what` names the work in the plain lines (`train: 50% …`); `quiet` shows nothing.
    pub fn new(len: u64, what: &str, quiet: bool) -> Progress {
        if quiet {
            return Progress { bar: ProgressBar::hidden(), plain: None };
        }
        if std::io::stderr().is_terminal() {
            return Progress { bar: progress_bar(len, what), plain: None };
        }
        let state = std::sync::Mutex::new((0, len, 1));
        Progress {
            bar: ProgressBar::hidden(),
            plain: Some(Plain { what: what.to_string(), start: std::time::Instant::now(), state }),
        }
    }

    /// How much work there is in all (when it is known only after the start).
    pub fn set_length(&self, len: u64) {
        self.bar.set_length(len);
        if let Some(p) = &self.plain {
            let mut s = p.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            s.1 = len;
        }
    }

    /// `n` more units done.
    pub fn inc(&self, n: u64) {
        self.bar.inc(n);
        if let Some(p) = &self.plain {
            let mut s = p.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if s.0 == 0 && n > 0 {
                eprintln!("{}: started", p.what);
            }
            s.0 += n;
            let (done, len) = (s.0, s.1.max(1));
            while s.2 <= 4 && done * 4 >= s.2 * len {
                eprintln!(
                    "{}: {}% ({done} of {len}), {:.1} s",
                    p.what,
                    25 * s.2,
                    p.start.elapsed().as_secs_f64()
                );
                s.2 += 1;
            }
        }
    }

    /// The work is over: the bar is cleared; a log that showed progress gets the total time. (Work that
    /// stopped before any progress, on a refusal, leaves stderr to the error's one line.)
    pub fn finish(&self) {
        self.bar.finish_and_clear();
        if let Some(p) = &self.plain {
            let s = p.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if s.0 > 0 {
                eprintln!("{}: done in {:.1} s", p.what, p.start.elapsed().as_secs_f64());
            }
        }
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
