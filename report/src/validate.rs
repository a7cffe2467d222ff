//! `gpumodel validate --format json`: predicted vs measured kernel time (log–log, needs `--rows`), the
//! per-kernel error of our model beside each baseline, and the E·D^n regret of the predicted optimum.

use crate::figure::{self, Bars, Figure, Note, Scatter, Series};
use crate::{Result, view};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Deserialize)]
struct ValidateView {
    arch: String,
    kernels: usize,
    mape_pct: f64,
    #[serde(default)]
    baselines: Vec<Baseline>,
    per_kernel: Vec<Kernel>,
    #[serde(default)]
    per_row: Vec<Row>,
}

#[derive(Deserialize)]
struct Baseline {
    name: String,
}

#[derive(Deserialize)]
struct Kernel {
    kernel: String,
    mape_pct: f64,
    model_mape_pct: f64,
    #[serde(default)]
    baseline_mape_pct: BTreeMap<String, f64>,
    #[serde(default)]
    choices: Vec<Choice>,
}

#[derive(Deserialize)]
struct Choice {
    objective: String,
    regret_pct: f64,
}

#[derive(Deserialize)]
struct Row {
    measured_time_s: f64,
    predicted_time_s: f64,
}

pub(crate) fn figures(file: &str, v: &Value) -> Result<(String, Vec<Figure>, Vec<Note>)> {
    let r: ValidateView = view(file, "validate", v)?;
    let data =
        v.get("data").and_then(Value::as_str).map_or("", |d| d.rsplit(['/', '\\']).next().unwrap_or(d));
    let subtitle =
        format!("{} kernels on {} ({data}); kernel time MAPE {:.1}%", r.kernels, r.arch, r.mape_pct);
    let mut figs = Vec::new();
    let mut notes = Vec::new();
    if r.per_row.is_empty() {
        notes.push(Note {
            source: file.into(),
            text:
                "predicted vs measured time needs every row: run `gpumodel validate … --rows --format json`"
                    .into(),
        });
    } else {
        let (k, unit) =
            crate::predict::time_unit(r.per_row.iter().map(|x| x.measured_time_s).fold(0.0, f64::max));
        let points = r.per_row.iter().map(|x| (x.measured_time_s * k, x.predicted_time_s * k)).collect();
        figs.push(figure::scatter(
            "validate-time",
            &format!("Predicted vs measured kernel time, {}", r.arch),
            "Points on the grey y = x line are exact; a point ten times above it is a tenfold over-estimate.",
            &Scatter {
                x_label: format!("measured time ({unit})"),
                y_label: format!("predicted time ({unit})"),
                log: true,
                identity: true,
                series: vec![Series { label: format!("ours, {} rows", r.per_row.len()), points }],
                line: vec![],
                highlights: vec![],
            },
        )?);
    }
    // Worst kernel (ours) first, so the eye lands on what needs work.
    let mut ks: Vec<&Kernel> = r.per_kernel.iter().collect();
    ks.sort_by(|a, b| b.mape_pct.total_cmp(&a.mape_pct));
    let categories: Vec<String> = ks.iter().map(|k| k.kernel.clone()).collect();
    let mut series = vec![
        ("ours, calibrated out-of-fold".to_string(), ks.iter().map(|k| Some(k.mape_pct)).collect()),
        ("ours, timing model as is".to_string(), ks.iter().map(|k| Some(k.model_mape_pct)).collect()),
    ];
    for b in &r.baselines {
        series.push((b.name.clone(), ks.iter().map(|k| k.baseline_mape_pct.get(&b.name).copied()).collect()));
    }
    figs.push(figure::hbars(
        "validate-kernel-error",
        &format!("Kernel time error per kernel, ours beside each baseline ({})", r.arch),
        "Shorter is better; where a baseline's bar is shorter than ours, the peer wins on that kernel.",
        &Bars {
            x_label: "kernel time MAPE (%)".into(),
            categories: categories.clone(),
            series,
            values: false,
            intervals: Vec::new(),
        },
    )?);
    let objectives: Vec<String> =
        ks.first().map(|k| k.choices.iter().map(|c| c.objective.clone()).collect()).unwrap_or_default();
    if !objectives.is_empty() {
        let series = objectives
            .iter()
            .map(|o| {
                let vals = ks
                    .iter()
                    .map(|k| k.choices.iter().find(|c| &c.objective == o).map(|c| c.regret_pct))
                    .collect();
                (format!("{o} regret"), vals)
            })
            .collect();
        figs.push(figure::hbars(
            "validate-regret",
            &format!("E·D^n regret of the predicted optimum per kernel ({})", r.arch),
            "How much more E·D^n the clocks we pick cost than the measured best; no bar means we picked the best.",
            &Bars {
                x_label: "regret (% above the measured optimum)".into(),
                categories,
                series,
                values: false,
                intervals: Vec::new(),
            },
        )?);
    }
    Ok((subtitle, figs, notes))
}
