//! `gpumodel report` — figures of command results: one self-contained HTML page (inline SVG and CSS, no
//! script, no network fetch), or one figure as SVG. The drawing lives in `gpumodel-report`.

use anyhow::bail;
use gpumodel_report::{read_source, section, write_output};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Result files: the JSON that `gpumodel predict | validate | split | train --format json` prints, or a
    /// collector trace (its .json sidecar or its .csv).
    #[arg(required = true, value_name = "RESULT")]
    pub results: Vec<PathBuf>,
    /// The HTML report to write (its directory is created).
    #[arg(long, short, default_value = "report.html")]
    pub out: PathBuf,
    /// Write one figure as an SVG file instead of the HTML report: the first figure, or --figure's.
    #[arg(long, value_name = "FILE.svg", conflicts_with = "out")]
    pub svg: Option<PathBuf>,
    /// With --svg: the figure's id (validate-time, validate-kernel-error, validate-regret,
    /// predict-components, predict-sweep, split-pareto, split-share-<objective>, train-model-error,
    /// train-application-error, collect-trace, collect-energy).
    #[arg(long, requires = "svg")]
    pub figure: Option<String>,
    /// Overwrite the output if it exists.
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let out = args.svg.clone().unwrap_or_else(|| args.out.clone());
    // Refuse before the work, not after it.
    super::output::refuse_existing(&out, args.force)?;
    let sources = args.results.iter().map(|p| read_source(p)).collect::<Result<Vec<_>, _>>()?;
    let sections = sources.iter().map(section).collect::<Result<Vec<_>, _>>()?;
    if args.svg.is_some() {
        let figures = sections.iter().flat_map(|s| &s.figures);
        let found = match &args.figure {
            Some(id) => figures.clone().find(|f| &f.id == id),
            None => figures.clone().next(),
        };
        let Some(fig) = found else {
            let ids: Vec<&str> = figures.map(|f| f.id.as_str()).collect();
            bail!(
                "no figure {} in these results; they have: {}",
                args.figure.as_deref().unwrap_or(""),
                ids.join(", ")
            );
        };
        write_output(&out, &fig.svg, args.force)?;
        println!("{}: figure {} ({} marks)", out.display(), fig.id, fig.marks);
    } else {
        let html = gpumodel_report::render_html(&sections);
        write_output(&out, &html, args.force)?;
        let n: usize = sections.iter().map(|s| s.figures.len()).sum();
        let t: usize = sections.iter().map(|s| s.tables.len()).sum();
        let tables = if t > 0 { format!(" and {t} tables") } else { String::new() };
        println!(
            "{}: {n} figures{tables} from {} result file(s), {} KB",
            out.display(),
            sections.len(),
            html.len().div_ceil(1024)
        );
    }
    for note in sections.iter().flat_map(|s| &s.notes) {
        eprintln!("note: {}: not drawn: {}", note.source, note.text);
    }
    Ok(ExitCode::SUCCESS)
}
