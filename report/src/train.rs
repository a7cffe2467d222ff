//! `gpumodel train --format json`: each model's power error under every evaluation, the peer (Guerreiro
//! et al.'s physical DVFS model) beside ours, and each model's mean and worst per-application error.
//!
//! With the per-row predictions of the headline protocol (`rows`, `applications`, format 1 of the output
//! layer) it also draws predicted vs measured power with y = x, the per-application error sorted (one bar
//! per model), and the chosen model's error over the (core, memory) clock grid. Older results without them
//! get a note instead.

use crate::figure::{self, Bars, Figure, Note};
use crate::{Result, view};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Deserialize)]
struct TrainView {
    data: Data,
    #[serde(default)]
    test: Option<Data>,
    models: BTreeMap<String, Model>,
    /// The model the selection chose (the default), when train chose one.
    #[serde(default)]
    selection: Option<Selection>,
    /// The peer's model (Guerreiro et al.'s physical DVFS form), when it was fitted.
    #[serde(default)]
    peer: Option<String>,
    /// Which protocol the rows come from ("held-out", "group-kfold" …).
    #[serde(default)]
    rows_protocol: Option<String>,
    #[serde(default)]
    rows: Vec<Row>,
    #[serde(default)]
    applications: Vec<Application>,
    /// The held-out figures' bootstrap intervals (absent in older results and with `--bootstrap 0`).
    #[serde(default)]
    held_out_uncertainty: Option<Uncertainty>,
}

#[derive(Deserialize)]
struct Uncertainty {
    applications: usize,
    models: Vec<ModelInterval>,
}

#[derive(Deserialize)]
struct ModelInterval {
    model: String,
    ci95_pct: Interval,
}

#[derive(Deserialize)]
struct Interval {
    lo: f64,
    hi: f64,
}

#[derive(Deserialize)]
struct Selection {
    chosen: String,
}

#[derive(Deserialize)]
struct Row {
    core_mhz: Option<f64>,
    mem_mhz: Option<f64>,
    measured_w: f64,
    predicted_w: BTreeMap<String, f64>,
}

#[derive(Deserialize)]
struct Application {
    kernel: String,
    models: BTreeMap<String, AppError>,
}

#[derive(Deserialize)]
struct AppError {
    error_pct: f64,
}

#[derive(Deserialize)]
struct Data {
    name: String,
    rows: usize,
    kernels: usize,
}

#[derive(Deserialize)]
struct Model {
    #[serde(rename = "random-kfold")]
    random_kfold: Option<Metrics>,
    #[serde(rename = "group-kfold")]
    group_kfold: Option<Metrics>,
    #[serde(rename = "held-out")]
    held_out: Option<Metrics>,
    held_out_median: Option<Median>,
}

/// Reads one evaluation's MAPE from a model's metrics.
type Getter = fn(&Model) -> Option<f64>;

#[derive(Deserialize, Clone)]
struct Metrics {
    mape_pct: f64,
    kernel_error_pct: f64,
    worst_kernel_error_pct: f64,
}

#[derive(Deserialize)]
struct Median {
    seeds: usize,
    mape_pct: f64,
}

/// How people know each model; the physical model is the peer's.
fn model_label(name: &str) -> String {
    match name {
        "physical" => "physical (peer: Guerreiro et al.)".into(),
        "physical+bpann" => "physical+bpann (ours)".into(),
        "bpann" => "bpann (ours, paper's ANN)".into(),
        other => other.to_string(),
    }
}

/// Ours first, then the peer, then the linear baselines.
fn order(name: &str) -> usize {
    ["physical+bpann", "bpann", "physical", "mlr+", "mlr"].iter().position(|n| *n == name).unwrap_or(9)
}

pub(crate) fn figures(file: &str, v: &Value) -> Result<(String, Vec<Figure>, Vec<Note>)> {
    let t: TrainView = view(file, "train", v)?;
    let mut names: Vec<&String> = t.models.keys().collect();
    names.sort_by_key(|n| (order(n), n.to_string()));
    let subtitle = match &t.test {
        Some(test) => format!(
            "train on {} ({} rows, {} kernels), test on {} ({} rows, {} kernels)",
            t.data.name, t.data.rows, t.data.kernels, test.name, test.rows, test.kernels
        ),
        None => format!("{} ({} rows, {} kernels)", t.data.name, t.data.rows, t.data.kernels),
    };
    let mut figs = Vec::new();
    let categories: Vec<String> = names.iter().map(|n| model_label(n)).collect();
    let m = |n: &String| &t.models[n.as_str()];
    let mut series: Vec<(String, Vec<Option<f64>>)> = Vec::new();
    let mut intervals: Vec<Vec<Option<(f64, f64)>>> = Vec::new();
    let evals: [(&str, Getter); 3] = [
        ("grouped CV (kernels held out)", |x| x.group_kfold.as_ref().map(|g| g.mape_pct)),
        ("random 10-fold (paper's protocol)", |x| x.random_kfold.as_ref().map(|g| g.mape_pct)),
        ("held-out test set", |x| {
            x.held_out_median.as_ref().map(|h| h.mape_pct).or(x.held_out.as_ref().map(|h| h.mape_pct))
        }),
    ];
    for (label, get) in evals {
        let vals: Vec<Option<f64>> = names.iter().map(|n| get(m(n))).collect();
        if vals.iter().any(Option::is_some) {
            let seeds = names.iter().filter_map(|n| m(n).held_out_median.as_ref().map(|h| h.seeds)).max();
            let label = match (label.starts_with("held-out"), seeds) {
                (true, Some(s)) if s > 1 => format!("{label} (BP-ANN: median of {s} seeds)"),
                _ => label.to_string(),
            };
            // The held-out bars carry their bootstrap intervals when the result has them.
            let whiskers = match (&t.held_out_uncertainty, label.starts_with("held-out")) {
                (Some(u), true) => names
                    .iter()
                    .map(|n| u.models.iter().find(|m| &m.model == *n).map(|m| (m.ci95_pct.lo, m.ci95_pct.hi)))
                    .collect(),
                _ => Vec::new(),
            };
            series.push((label, vals));
            intervals.push(whiskers);
        }
    }
    if !series.is_empty() {
        let caption = match &t.held_out_uncertainty {
            Some(u) => format!(
                "Shorter is better; ours beside the peer's physical model. Whiskers: held-out 95% interval ({} apps).",
                u.applications
            ),
            None => "Shorter is better; compare ours with the peer's physical model on the same evaluation (same colour).".into(),
        };
        figs.push(figure::hbars(
            "train-model-error",
            &format!("Power MAPE per model: {}", t.data.name),
            &caption,
            &Bars {
                x_label: "power MAPE (%)".into(),
                categories: categories.clone(),
                series,
                values: true,
                intervals,
            },
        )?);
    }
    // Per-application error: mean and worst, on the held-out set when there is one, else grouped CV.
    let (which, pick): (&str, fn(&Model) -> Option<&Metrics>) =
        if names.iter().any(|n| m(n).held_out.is_some()) {
            ("held-out applications", |x| x.held_out.as_ref())
        } else {
            ("grouped CV", |x| x.group_kfold.as_ref())
        };
    let mean: Vec<Option<f64>> = names.iter().map(|n| pick(m(n)).map(|x| x.kernel_error_pct)).collect();
    let worst: Vec<Option<f64>> =
        names.iter().map(|n| pick(m(n)).map(|x| x.worst_kernel_error_pct)).collect();
    if mean.iter().any(Option::is_some) {
        figs.push(figure::hbars(
            "train-application-error",
            &format!("Average-power error per application, {which}"),
            "The mean bar is the typical application, the worst bar the one a user should not trust blindly.",
            &Bars {
                x_label: "per-application average-power error (%)".into(),
                categories,
                series: vec![("mean over applications".into(), mean), ("worst application".into(), worst)],
                values: true,
                intervals: Vec::new(),
            },
        )?);
    }
    let mut notes = Vec::new();
    let shown = shown_models(&t);
    if t.rows.is_empty() || shown.is_empty() {
        notes.push(Note {
            source: file.into(),
            text: "this train result has no per-row predictions (an older format): predicted vs measured power, \
                   the sorted per-application errors and the error over (core, memory) clocks need them; re-run \
                   `gpumodel train --format json`"
                .into(),
        });
    } else {
        let protocol = t.rows_protocol.clone().unwrap_or_else(|| "held-out".into());
        figs.push(scatter(&t, &shown, &protocol)?);
        if !t.applications.is_empty() {
            figs.push(sorted_applications(&t, &shown, &protocol)?);
        }
        if let Some(h) = clock_grid(&t, &shown[0], &protocol)? {
            figs.push(h);
        }
    }
    Ok((subtitle, figs, notes))
}

/// The models drawn per row: the chosen default first, then the peer, then the paper's BP-ANN — at most
/// three, so that points stay readable and the page small.
fn shown_models(t: &TrainView) -> Vec<String> {
    let have = |n: &str| t.rows.first().is_some_and(|r| r.predicted_w.contains_key(n));
    let mut out: Vec<String> = Vec::new();
    let wanted = [t.selection.as_ref().map(|s| s.chosen.clone()), t.peer.clone(), Some("bpann".to_string())];
    for n in wanted.into_iter().flatten() {
        if have(&n) && !out.contains(&n) {
            out.push(n);
        }
    }
    if out.is_empty()
        && let Some(r) = t.rows.first()
    {
        out.extend(r.predicted_w.keys().take(3).cloned());
    }
    out
}

fn chosen_label(t: &TrainView, name: &str) -> String {
    let chosen = t.selection.as_ref().is_some_and(|s| s.chosen == name);
    let peer = t.peer.as_deref() == Some(name);
    match (chosen, peer) {
        (true, _) => format!("{name} (default, chosen by grouped CV)"),
        (false, true) => format!("{name} (peer: Guerreiro et al.)"),
        _ => model_label(name),
    }
}

fn scatter(t: &TrainView, shown: &[String], protocol: &str) -> Result<Figure> {
    let series = shown
        .iter()
        .map(|m| figure::Series {
            label: chosen_label(t, m),
            points: t.rows.iter().filter_map(|r| Some((r.measured_w, *r.predicted_w.get(m)?))).collect(),
        })
        .collect();
    figure::scatter(
        "train-predicted-vs-measured",
        &format!("Predicted vs measured power, {protocol} rows ({})", t.data.name),
        "Points on the grey y = x line are exact; a cloud above it over-predicts. Compare how tightly each model hugs it.",
        &figure::Scatter {
            x_label: "measured power (W)".into(),
            y_label: "predicted power (W)".into(),
            log: false,
            identity: true,
            series,
            line: vec![],
            highlights: vec![],
        },
    )
}

fn sorted_applications(t: &TrainView, shown: &[String], protocol: &str) -> Result<Figure> {
    let key = &shown[0];
    let mut apps: Vec<&Application> = t.applications.iter().collect();
    let err = |a: &Application, m: &str| a.models.get(m).map(|e| e.error_pct);
    apps.sort_by(|a, b| {
        err(b, key).unwrap_or(f64::NEG_INFINITY).total_cmp(&err(a, key).unwrap_or(f64::NEG_INFINITY))
    });
    let series =
        shown.iter().map(|m| (chosen_label(t, m), apps.iter().map(|a| err(a, m)).collect())).collect();
    figure::hbars(
        "train-application-error-sorted",
        &format!("Average-power error per application, {protocol}, worst first"),
        "The top rows are the applications to distrust; where the peer's bar is shorter, it predicts that application better.",
        &Bars {
            x_label: "|mean predicted − mean measured| / mean measured (%)".into(),
            categories: apps.iter().map(|a| figure::shorten(&a.kernel, 28)).collect(),
            series,
            values: false,
            intervals: Vec::new(),
        },
    )
}

/// The chosen model's MAPE in each (core, memory) clock cell; None when the rows carry no clocks.
fn clock_grid(t: &TrainView, model: &str, protocol: &str) -> Result<Option<Figure>> {
    let mut cores: Vec<f64> = t.rows.iter().filter_map(|r| r.core_mhz).collect();
    let mut mems: Vec<f64> = t.rows.iter().filter_map(|r| r.mem_mhz).collect();
    for v in [&mut cores, &mut mems] {
        v.sort_by(f64::total_cmp);
        v.dedup();
    }
    if cores.len() < 2 && mems.len() < 2 {
        return Ok(None);
    }
    let mut sum = vec![vec![(0.0, 0usize); mems.len()]; cores.len()];
    for r in &t.rows {
        let (Some(c), Some(m), Some(p)) = (r.core_mhz, r.mem_mhz, r.predicted_w.get(model)) else { continue };
        let (Some(i), Some(j)) = (cores.iter().position(|x| *x == c), mems.iter().position(|x| *x == m))
        else {
            continue;
        };
        if r.measured_w > 0.0 {
            sum[i][j].0 += (p - r.measured_w).abs() / r.measured_w * 100.0;
            sum[i][j].1 += 1;
        }
    }
    let cells = sum
        .iter()
        .enumerate()
        .flat_map(|(i, col)| {
            col.iter().enumerate().filter(|c| c.1.1 > 0).map(move |(j, c)| (i, j, c.0 / c.1 as f64))
        })
        .collect();
    let heat = figure::Heat {
        x_label: "core clock (MHz)".into(),
        y_label: "memory clock (MHz)".into(),
        x_cats: cores.iter().map(|c| figure::tick(*c)).collect(),
        y_cats: mems.iter().map(|m| figure::tick(*m)).collect(),
        cells,
        value_label: "MAPE %".into(),
        decimals: 1,
    };
    Ok(Some(figure::heatmap(
        "train-clock-error",
        &format!("{} power MAPE over the clock grid, {protocol}", chosen_label(t, model)),
        "Bright cells are the clock pairs the model gets wrong; a bright edge means it extrapolates poorly there.",
        &heat,
        860,
    )?))
}
