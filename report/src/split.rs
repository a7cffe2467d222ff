//! `gpumodel split --format json`: the time–energy plane of the candidate splits with the Pareto front and
//! the chosen points, and, for the coupled-DVFS model (PEACH), the best GPU share over the clock grid.
//! `gpumodel split fit --format json`: each fitted clock law over the measured points it was fitted to.

use crate::figure::{self, Figure, Heat, Highlight, Note, Scatter, Series};
use crate::predict::time_unit;
use crate::{Result, view};
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
struct Head {
    model: String,
    title: String,
    #[serde(default)]
    chosen: Option<String>,
}

#[derive(Deserialize, Clone, Copy)]
struct Point {
    #[serde(default)]
    gpu_share: Option<f64>,
    time_s: f64,
    energy_j: f64,
}

#[derive(Deserialize)]
struct TwoDevice {
    candidates: Vec<Point>,
    best: Vec<Best>,
}

#[derive(Deserialize)]
struct Best {
    objective: String,
    point: Point,
}

#[derive(Deserialize)]
struct Dvfs {
    objectives: Vec<String>,
    cells: Vec<Cell>,
    global: Vec<Global>,
}

#[derive(Deserialize)]
struct Cell {
    cpu_clock: f64,
    gpu_clock: f64,
    best: Vec<Point>,
}

#[derive(Deserialize)]
struct Global {
    objective: String,
    cpu_clock: f64,
    gpu_clock: f64,
    point: Point,
}

#[derive(Deserialize)]
struct Pareto {
    dynamic: Front,
    total: Front,
}

#[derive(Deserialize)]
struct Front {
    points: Vec<Point>,
    best: Vec<(String, Point)>,
}

#[derive(Deserialize)]
struct Cg {
    report: CgReport,
}

#[derive(Deserialize)]
struct CgReport {
    runs: Vec<CgRun>,
    choice: CgRun,
}

#[derive(Deserialize)]
struct CgRun {
    choice: String,
    time_s: f64,
    energy_j: f64,
}

/// The non-dominated points (no other point is both faster and cheaper), by increasing time.
pub(crate) fn pareto_front(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut p: Vec<(f64, f64)> =
        points.iter().copied().filter(|q| q.0.is_finite() && q.1.is_finite()).collect();
    gpumodel_models::energy::pareto_retain(&mut p, |q| *q);
    p
}

/// One label per distinct point: objectives that share an optimum are named together.
/// Items are (objective, what it chose, where); the choice is said once per point.
fn merge_highlights(items: Vec<(String, String, (f64, f64))>) -> Vec<Highlight> {
    let mut out: Vec<(Highlight, String)> = Vec::new();
    for (name, suffix, at) in items {
        let close = |h: &Highlight| {
            (h.at.0 - at.0).abs() <= 1e-9 * at.0.abs().max(1e-30)
                && (h.at.1 - at.1).abs() <= 1e-9 * at.1.abs().max(1e-30)
        };
        if let Some((h, _)) = out.iter_mut().find(|(h, _)| close(h)) {
            h.label = format!("{}, {name}", h.label);
        } else {
            out.push((Highlight { label: name, at }, suffix));
        }
    }
    out.into_iter().map(|(h, suffix)| Highlight { label: format!("{}{suffix}", h.label), at: h.at }).collect()
}

fn share(p: &Point) -> String {
    p.gpu_share.map_or(String::new(), |s| format!(" (GPU {:.0}%)", s * 100.0))
}

#[derive(Deserialize)]
struct FitReport {
    file: String,
    rows: Vec<FitRow>,
}

#[derive(Deserialize)]
struct FitRow {
    device: String,
    quantity: String,
    fit: Option<LineFit>,
    #[serde(default)]
    clocks: Vec<f64>,
    #[serde(default)]
    measured: Option<Vec<f64>>,
}

#[derive(Deserialize)]
struct LineFit {
    slope: f64,
    intercept: f64,
    r2: f64,
}

/// `split fit`: one figure per fitted table — the measured values against clock, and the least-squares
/// line over the clock range, with R² in the title. Laws the file gives were not fitted: a note says so.
fn fit_figures(file: &str, v: &Value) -> Result<(String, Vec<Figure>, Vec<Note>)> {
    let r: FitReport = view(file, "split-fit", v)?;
    let (mut figs, mut notes) = (Vec::new(), Vec::new());
    for row in &r.rows {
        let quantity = match row.quantity.as_str() {
            "dynamic_power_w" => "dynamic power (W)",
            q => q,
        };
        let what = format!("{} {quantity}", row.device);
        let (Some(fit), Some(measured)) = (&row.fit, &row.measured) else {
            notes.push(Note {
                source: file.into(),
                text: format!("{what}: the file gives the law, nothing was fitted"),
            });
            continue;
        };
        if row.clocks.len() != measured.len() || row.clocks.is_empty() {
            notes.push(Note {
                source: file.into(),
                text: format!(
                    "{what}: no measured points in this result (re-run `gpumodel split fit --format json`)"
                ),
            });
            continue;
        }
        let points: Vec<(f64, f64)> = row.clocks.iter().copied().zip(measured.iter().copied()).collect();
        let lo = row.clocks.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = row.clocks.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let line = vec![(lo, fit.slope * lo + fit.intercept), (hi, fit.slope * hi + fit.intercept)];
        figs.push(figure::scatter_line_named(
            &format!("split-fit-{}-{}", row.device, row.quantity),
            &format!("{what} against clock: R² = {:.4}", fit.r2),
            "Points are the clock table of the case file; the line is the least-squares law the split models use.",
            &Scatter {
                x_label: "clock".into(),
                y_label: what.clone(),
                log: false,
                identity: false,
                series: vec![Series { label: format!("{} measured points", points.len()), points }],
                line,
                highlights: vec![],
            },
            &format!("fit: {:.4}·clock {} {:.4}", fit.slope, if fit.intercept < 0.0 { "−" } else { "+" }, fit.intercept.abs()),
        )?);
    }
    Ok((shorten_title(&r.file), figs, notes))
}

pub(crate) fn figures(file: &str, v: &Value) -> Result<(String, Vec<Figure>, Vec<Note>)> {
    if v.get("command").and_then(Value::as_str) == Some("split-fit") {
        return fit_figures(file, v);
    }
    let head: Head = view(file, "split", v)?;
    let chosen = head.chosen.clone().unwrap_or_else(|| "energy".into());
    let mut figs = Vec::new();
    let mut notes = Vec::new();
    let caption = "The line joins the splits no other split beats on both time and energy; diamonds are each objective's choice.";
    match head.model.as_str() {
        "two-device" => {
            let t: TwoDevice = view(file, "split", v)?;
            let (k, unit) = time_unit(t.candidates.iter().map(|p| p.time_s).fold(0.0, f64::max));
            let pts: Vec<(f64, f64)> = t.candidates.iter().map(|p| (p.time_s * k, p.energy_j)).collect();
            let hl = merge_highlights(
                t.best
                    .iter()
                    .map(|b| (b.objective.clone(), share(&b.point), (b.point.time_s * k, b.point.energy_j)))
                    .collect(),
            );
            figs.push(figure::scatter(
                "split-pareto",
                &format!("Time vs energy of the CPU/GPU splits: {}", shorten_title(&head.title)),
                caption,
                &Scatter {
                    x_label: format!("time ({unit})"),
                    y_label: "energy (J)".into(),
                    log: false,
                    identity: false,
                    series: vec![Series {
                        label: format!("{} candidate splits", pts.len()),
                        points: pts.clone(),
                    }],
                    line: pareto_front(&pts),
                    highlights: hl,
                },
            )?);
        }
        "dvfs" => {
            let d: Dvfs = view(file, "split", v)?;
            let ci = d.objectives.iter().position(|o| *o == chosen).unwrap_or(0);
            figs.push(dvfs_pareto(&d, &head.title)?);
            let mut shown = vec![0];
            if ci != 0 {
                shown.push(ci);
            }
            for oi in shown {
                let Some(obj) = d.objectives.get(oi) else { continue };
                figs.push(share_grid(&d, oi, obj, &head.title)?);
            }
        }
        "pareto" => {
            let p: Pareto = view(file, "split", v)?;
            let all = p.total.points.iter().chain(&p.dynamic.points);
            let (k, unit) = time_unit(all.map(|q| q.time_s).fold(0.0, f64::max));
            let tp: Vec<(f64, f64)> = p.total.points.iter().map(|q| (q.time_s * k, q.energy_j)).collect();
            let dp: Vec<(f64, f64)> = p.dynamic.points.iter().map(|q| (q.time_s * k, q.energy_j)).collect();
            let hl = merge_highlights(
                p.total
                    .best
                    .iter()
                    .map(|(o, q)| (o.clone(), String::new(), (q.time_s * k, q.energy_j)))
                    .collect(),
            );
            figs.push(figure::scatter(
                "split-pareto",
                &format!("Exact time–energy Pareto front: {}", shorten_title(&head.title)),
                "Each point is a work distribution no other beats on both time and energy; diamonds mark each objective's pick (total energy).",
                &Scatter {
                    x_label: format!("time ({unit})"),
                    y_label: "energy (J)".into(),
                    log: false,
                    identity: false,
                    series: vec![
                        Series { label: "total energy (with static power)".into(), points: tp.clone() },
                        Series { label: "dynamic energy".into(), points: dp },
                    ],
                    line: tp,
                    highlights: hl,
                },
            )?);
        }
        "cg" => {
            let c: Cg = view(file, "split", v)?;
            let (k, unit) = time_unit(c.report.runs.iter().map(|r| r.time_s).fold(0.0, f64::max));
            let pts: Vec<(f64, f64)> = c.report.runs.iter().map(|r| (r.time_s * k, r.energy_j)).collect();
            let ch = &c.report.choice;
            figs.push(figure::scatter(
                "split-pareto",
                &format!("Time vs energy of the CG splits: {}", shorten_title(&head.title)),
                "CPU only, GPU only and the collaborative split; the diamond is the decision.",
                &Scatter {
                    x_label: format!("time per element ({unit})"),
                    y_label: "energy per element (J)".into(),
                    log: false,
                    identity: false,
                    series: vec![Series {
                        label: "cpu-only, gpu-only, collaborate".into(),
                        points: pts.clone(),
                    }],
                    line: pareto_front(&pts),
                    highlights: vec![Highlight {
                        label: ch.choice.clone(),
                        at: (ch.time_s * k, ch.energy_j),
                    }],
                },
            )?);
        }
        other => {
            notes.push(Note { source: file.into(), text: format!("split model '{other}' has no figure yet") })
        }
    }
    Ok((shorten_title(&head.title), figs, notes))
}

fn shorten_title(t: &str) -> String {
    figure::shorten(t, 70)
}

/// PEACH's time–energy plane: every clock pair once per objective, at the GPU share that objective picks
/// there, and the Pareto front over all of them. Each objective's optimum is the lowest E^a·D^b among these
/// points (the lowest over the shares at its clock pair, then over the pairs), and a point that another
/// point beats on both time and energy cannot be the lowest E^a·D^b: so every optimum lies on the front
/// drawn. (Over the points of one objective's shares alone, another objective's optimum, chosen at a
/// different share, can sit off that front.)
fn dvfs_pareto(d: &Dvfs, title: &str) -> Result<Figure> {
    let all = d.cells.iter().flat_map(|c| &c.best);
    let (k, unit) = time_unit(all.map(|p| p.time_s).fold(0.0, f64::max));
    let series: Vec<Series> = d
        .objectives
        .iter()
        .enumerate()
        .map(|(oi, o)| Series {
            label: format!("best share for {o}"),
            points: d
                .cells
                .iter()
                .filter_map(|c| c.best.get(oi))
                .map(|p| (p.time_s * k, p.energy_j))
                .collect(),
        })
        .collect();
    let every: Vec<(f64, f64)> = series.iter().flat_map(|s| s.points.iter().copied()).collect();
    let hl = merge_highlights(
        d.global
            .iter()
            .map(|g| {
                let l = format!(": {} GHz / {} MHz{}", g.cpu_clock, g.gpu_clock, share(&g.point));
                (g.objective.clone(), l, (g.point.time_s * k, g.point.energy_j))
            })
            .collect(),
    );
    figure::scatter(
        "split-pareto",
        &format!("Time vs energy over the clock pairs: {}", shorten_title(title)),
        &format!(
            "Each (CPU, GPU) clock pair {} times, at the share each objective picks there; the line is the Pareto \
             front of all {} points, and each objective's optimum (diamond) lies on it.",
            d.objectives.len(),
            every.len()
        ),
        &Scatter {
            x_label: format!("time ({unit})"),
            y_label: "energy (J)".into(),
            log: false,
            identity: false,
            line: pareto_front(&every),
            series,
            highlights: hl,
        },
    )
}

/// PEACH's table: the best GPU share for one objective at every (CPU clock, GPU clock) cell.
fn share_grid(d: &Dvfs, oi: usize, obj: &str, title: &str) -> Result<Figure> {
    let mut gpu: Vec<f64> = d.cells.iter().map(|c| c.gpu_clock).collect();
    let mut cpu: Vec<f64> = d.cells.iter().map(|c| c.cpu_clock).collect();
    for v in [&mut gpu, &mut cpu] {
        v.sort_by(f64::total_cmp);
        v.dedup();
    }
    let cells = d
        .cells
        .iter()
        .filter_map(|c| {
            let i = gpu.iter().position(|g| *g == c.gpu_clock)?;
            let j = cpu.iter().position(|g| *g == c.cpu_clock)?;
            Some((i, j, c.best.get(oi)?.gpu_share? * 100.0))
        })
        .collect();
    let heat = Heat {
        x_label: "GPU clock (MHz)".into(),
        y_label: "CPU clock (GHz)".into(),
        x_cats: gpu.iter().map(|g| figure::tick(*g)).collect(),
        y_cats: cpu.iter().map(|c| figure::tick(*c)).collect(),
        cells,
        value_label: "GPU share %".into(),
        decimals: 0,
        // A share is 0–100% whatever the objective: every share map uses that one colour scale.
        range: Some((0.0, 100.0)),
    };
    figure::heatmap(
        &format!("split-share-{obj}"),
        &format!("Best GPU share (%) for {obj} over the clock grid"),
        &format!("{}: read across a row to see how the share moves as the GPU slows.", shorten_title(title)),
        &heat,
        720,
    )
}

#[cfg(test)]
mod tests {
    use super::pareto_front;

    #[test]
    fn front_keeps_only_undominated_points() {
        let f = pareto_front(&[(1.0, 5.0), (2.0, 3.0), (2.5, 4.0), (3.0, 1.0), (1.5, 6.0)]);
        assert_eq!(f, vec![(1.0, 5.0), (2.0, 3.0), (3.0, 1.0)]);
    }
}
