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

/// How people know each model: the default the selection chose, the peer's physical model, the paper's
/// network; the others by name.
fn model_label(t: &TrainView, name: &str) -> String {
    let chosen = t.selection.as_ref().is_some_and(|s| s.chosen == name);
    let peer = t.peer.as_deref().unwrap_or("physical") == name;
    if chosen {
        format!("{name} (default, chosen by grouped CV)")
    } else if peer {
        format!("{name} (peer: Guerreiro et al.)")
    } else if name == "bpann" {
        "bpann (the paper's ANN)".into()
    } else {
        name.to_string()
    }
}

/// The chosen default first, then the peer, the networks and the linear baselines.
fn order(t: &TrainView, name: &str) -> usize {
    if t.selection.as_ref().is_some_and(|s| s.chosen == name) {
        return 0;
    }
    ["physical-bpann", "bpann", "physical", "mlrplus", "mlr"]
        .iter()
        .position(|n| *n == name)
        .map_or(9, |i| i + 1)
}

/// The dataset the per-row figures show: the test set for held-out rows, else the training set.
fn rows_data<'t>(t: &'t TrainView, protocol: &str) -> &'t str {
    match (&t.test, protocol) {
        (Some(test), "held-out") => &test.name,
        _ => &t.data.name,
    }
}

pub(crate) fn figures(file: &str, v: &Value) -> Result<(String, Vec<Figure>, Vec<Note>)> {
    let t: TrainView = view(file, "train", v)?;
    let mut names: Vec<&String> = t.models.keys().collect();
    names.sort_by_key(|n| (order(&t, n), n.to_string()));
    let subtitle = match &t.test {
        Some(test) => format!(
            "train on {} ({} rows, {} kernels), test on {} ({} rows, {} kernels)",
            t.data.name, t.data.rows, t.data.kernels, test.name, test.rows, test.kernels
        ),
        None => format!("{} ({} rows, {} kernels)", t.data.name, t.data.rows, t.data.kernels),
    };
    let mut figs = Vec::new();
    let categories: Vec<String> = names.iter().map(|n| model_label(&t, n)).collect();
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
            &match &t.test {
                Some(test) => {
                    format!("Power MAPE per model: trained on {}, held out {}", t.data.name, test.name)
                }
                None => format!("Power MAPE per model: {}", t.data.name),
            },
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
    let (which, pick): (String, fn(&Model) -> Option<&Metrics>) =
        if names.iter().any(|n| m(n).held_out.is_some()) {
            (format!("held-out applications ({})", rows_data(&t, "held-out")), |x| x.held_out.as_ref())
        } else {
            (format!("grouped CV ({})", t.data.name), |x| x.group_kfold.as_ref())
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

fn scatter(t: &TrainView, shown: &[String], protocol: &str) -> Result<Figure> {
    let series = shown
        .iter()
        .map(|m| figure::Series {
            label: model_label(t, m),
            points: t.rows.iter().filter_map(|r| Some((r.measured_w, *r.predicted_w.get(m)?))).collect(),
        })
        .collect();
    figure::scatter(
        "train-predicted-vs-measured",
        &format!("Predicted vs measured power, {protocol} rows ({})", rows_data(t, protocol)),
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
        shown.iter().map(|m| (model_label(t, m), apps.iter().map(|a| err(a, m)).collect())).collect();
    figure::hbars(
        "train-application-error-sorted",
        &format!("Average-power error per application, {protocol} ({}), worst first", rows_data(t, protocol)),
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
        range: None,
    };
    Ok(Some(figure::heatmap(
        "train-clock-error",
        &format!(
            "{} power MAPE over the clock grid, {protocol} ({})",
            model_label(t, model),
            rows_data(t, protocol)
        ),
        "Bright cells are the clock pairs the model gets wrong; a bright edge means it extrapolates poorly there.",
        &heat,
        860,
    )?))
}

#[cfg(test)]
mod tests {
    use super::figures;
    use serde_json::json;

    /// A held-out train result: trained on one dataset, rows from another; the selection chose `chosen`.
    fn result(chosen: &str) -> serde_json::Value {
        let metrics =
            |m: f64| json!({"mape_pct": m, "kernel_error_pct": m, "worst_kernel_error_pct": 2.0 * m});
        let mut models = serde_json::Map::new();
        for (i, name) in ["physical-bpann", "bpann", "physical", "mlrplus"].iter().enumerate() {
            let m = 5.0 + i as f64;
            models.insert(name.to_string(), json!({"group-kfold": metrics(m), "held-out": metrics(m + 1.0)}));
        }
        let predicted = json!({"physical-bpann": 101.0, "bpann": 99.0, "physical": 98.0, "mlrplus": 97.0});
        let rows: Vec<serde_json::Value> = [(1000.0, 3000.0), (1000.0, 4000.0), (1200.0, 3000.0)]
            .iter()
            .map(|(c, m)| json!({"core_mhz": c, "mem_mhz": m, "measured_w": 100.0, "predicted_w": predicted}))
            .collect();
        json!({
            "command": "train", "format_version": 1,
            "data": {"name": "micro-benchmarks", "rows": 300, "kernels": 10},
            "test": {"name": "real-applications", "rows": 3, "kernels": 1},
            "models": models, "selection": {"chosen": chosen}, "peer": "physical",
            "rows_protocol": "held-out", "rows": rows,
            "applications": [{"kernel": "app", "models": {"mlrplus": {"error_pct": 3.0}, "physical": {"error_pct": 2.0}}}],
        })
    }

    /// The per-row figures of a held-out run show the test set's rows: their titles name the test set.
    #[test]
    fn held_out_figures_are_titled_with_the_test_set() {
        let (_, figs, _) = figures("train.json", &result("mlrplus")).unwrap();
        for id in ["train-predicted-vs-measured", "train-application-error-sorted", "train-clock-error"] {
            let f = figs.iter().find(|f| f.id == id).unwrap_or_else(|| panic!("no {id}"));
            assert!(f.title.contains("real-applications"), "{id}: {}", f.title);
            assert!(!f.title.contains("micro-benchmarks"), "{id}: {}", f.title);
        }
        let err = figs.iter().find(|f| f.id == "train-model-error").unwrap();
        assert!(err.title.contains("trained on micro-benchmarks") && err.title.contains("real-applications"));
    }

    /// The model the selection chose is the one marked as the default, whichever it is; no other model is
    /// singled out as ours.
    #[test]
    fn the_chosen_model_is_marked_as_the_default_and_no_other() {
        for chosen in ["mlrplus", "physical-bpann"] {
            let (_, figs, _) = figures("train.json", &result(chosen)).unwrap();
            let mark = format!("{chosen} (default");
            for f in &figs {
                assert!(!f.svg.contains("(ours"), "{}: a model marked as ours", f.id);
                assert_eq!(f.svg.matches("(default").count(), f.svg.matches(&mark).count(), "{}", f.id);
            }
            let bars = figs.iter().find(|f| f.id == "train-model-error").unwrap();
            assert!(bars.svg.contains(&mark), "{chosen} not marked");
            let scatter = figs.iter().find(|f| f.id == "train-predicted-vs-measured").unwrap();
            assert!(scatter.svg.contains(&mark), "{chosen} not marked in the scatter's legend");
        }
    }
}
