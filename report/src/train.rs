//! `gpumodel train --format json`: each model's power error under every evaluation, the peer (Guerreiro
//! et al.'s physical DVFS model) beside ours, and each model's mean and worst per-application error.
//!
//! Train's JSON carries metrics per model, not per row: the predicted-vs-measured scatter, the sorted
//! per-application errors and the (core, memory) clock heat map need the held-out predictions, which it
//! does not print yet; the report says so in a note.

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
            series.push((label, vals));
        }
    }
    if !series.is_empty() {
        figs.push(figure::hbars(
            "train-model-error",
            &format!("Power MAPE per model: {}", t.data.name),
            "Shorter is better; compare ours with the peer's physical model on the same evaluation (same colour).",
            &Bars { x_label: "power MAPE (%)".into(), categories: categories.clone(), series, values: true },
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
            },
        )?);
    }
    let notes = vec![Note {
        source: file.into(),
        text: "train's JSON has per-model metrics only: predicted vs measured power, the sorted per-application \
               errors and the error over (core, memory) clocks need its held-out predictions per row"
            .into(),
    }];
    Ok((subtitle, figs, notes))
}
