//! `gpumodel predict --format json`: the component times of one prediction as a stacked bar, a
//! `--sweep`'s curves of time, power and each E^a·D^b objective with its optimum marked, and a `--profile`
//! clock sweep's time, power and energy over core clocks with the E, ED and ED² optima.

use crate::figure::{self, Figure, Key, Note, Panel, Panels, curve_color, curve_shape};
use crate::{Result, view};
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
struct PredictView {
    kernel: String,
    arch: String,
    prediction: Option<Prediction>,
    sweep: Option<Sweep>,
    /// The roofline fallback's answer (a profile without the pipeline model's counters).
    roofline: Option<Roofline>,
}

#[derive(Deserialize)]
struct Roofline {
    time_s: f64,
    bound: String,
    #[serde(default)]
    fill_s: f64,
    terms: Vec<Component>,
}

#[derive(Deserialize)]
struct Prediction {
    power_w: f64,
    detail: Detail,
}

#[derive(Deserialize)]
struct Detail {
    bottleneck: String,
    time_s: f64,
    components: Vec<Component>,
    #[serde(default)]
    timing: Option<Timing>,
}

/// The timing model's terms beside the components: the predicted time is Σ components + fill − overlapped.
#[derive(Deserialize)]
struct Timing {
    #[serde(default)]
    fill_s: f64,
    #[serde(default)]
    overlapped_s: f64,
}

#[derive(Deserialize)]
struct Component {
    name: String,
    time_s: f64,
}

#[derive(Deserialize)]
struct Sweep {
    kind: String,
    points: Vec<Point>,
    optima: Vec<Optimum>,
}

#[derive(Deserialize)]
struct Point {
    x: f64,
    time_s: f64,
    power_w: f64,
    energy_j: f64,
}

#[derive(Deserialize)]
struct Optimum {
    a: f64,
    b: f64,
    x: f64,
    value: f64,
}

/// A time unit that keeps the numbers of `max_s` readable: (factor, name).
pub(crate) fn time_unit(max_s: f64) -> (f64, &'static str) {
    if max_s < 1e-3 {
        (1e6, "µs")
    } else if max_s < 1.0 {
        (1e3, "ms")
    } else {
        (1.0, "s")
    }
}

/// `E·D²`-style name and its unit for E^a·D^b.
pub(crate) fn objective_label(a: f64, b: f64) -> (String, String) {
    let pow = |base: &str, e: f64| -> String {
        if e == 0.0 {
            String::new()
        } else if e == 1.0 {
            base.to_string()
        } else if e == 2.0 {
            format!("{base}²")
        } else if e == 3.0 {
            format!("{base}³")
        } else {
            format!("{base}^{e}")
        }
    };
    let name = [pow("E", a), pow("D", b)].into_iter().filter(|s| !s.is_empty()).collect::<Vec<_>>().join("·");
    let unit = [pow("J", a), pow("s", b)].into_iter().filter(|s| !s.is_empty()).collect::<Vec<_>>().join("·");
    (name, unit)
}

/// `predict --profile`'s result: a utilization profile swept over core clocks, or over (core, memory)
/// pairs with a pair model.
#[derive(Deserialize)]
struct ClockSweepView {
    profile: ProfileView,
    basis: String,
    points: Vec<ClockPointView>,
    optima: ClockOptima,
    time_in_seconds: bool,
}

#[derive(Deserialize)]
struct ProfileView {
    name: String,
    #[serde(default)]
    gpu: Option<String>,
}

#[derive(Deserialize)]
struct ClockPointView {
    core_mhz: f64,
    /// The memory clock of the point (pair models only).
    #[serde(default)]
    mem_mhz: Option<f64>,
    time_s: f64,
    power_w: f64,
    energy_j: f64,
}

#[derive(Deserialize)]
struct ClockOptima {
    energy: usize,
    ed: usize,
    ed2: usize,
}

/// The sweep's curves over the core clock: one, or one per memory clock (highest first) for a pair sweep,
/// each with its legend label.
fn sweep_curves(points: &[ClockPointView]) -> Vec<(Option<String>, Vec<&ClockPointView>)> {
    let mut mems: Vec<f64> = points.iter().filter_map(|q| q.mem_mhz).collect();
    mems.sort_by(|a, b| b.total_cmp(a));
    mems.dedup();
    if mems.len() < 2 {
        return vec![(None, points.iter().collect())];
    }
    mems.iter()
        .map(|m| {
            let mut curve: Vec<&ClockPointView> = points.iter().filter(|q| q.mem_mhz == Some(*m)).collect();
            curve.sort_by(|a, b| a.core_mhz.total_cmp(&b.core_mhz));
            (Some(format!("memory {} MHz", figure::tick(*m))), curve)
        })
        .collect()
}

fn clock_sweep_figures(file: &str, v: &Value) -> Result<(String, Vec<Figure>, Vec<Note>)> {
    let c: ClockSweepView = view(file, "predict", v)?;
    let gpu = c.profile.gpu.as_deref().unwrap_or("an unnamed GPU");
    let subtitle = format!("profile {} on {gpu}", c.profile.name);
    if c.points.len() < 2 {
        let note = Note {
            source: file.into(),
            text: format!("no clock sweep: the profile's measured clock only ({})", c.basis),
        };
        return Ok((subtitle, vec![], vec![note]));
    }
    let (t_label, e_label) = if c.time_in_seconds {
        ("time (s)".to_string(), "energy (J)".to_string())
    } else {
        ("time (relative to the profiled run)".to_string(), "energy (W × relative time)".to_string())
    };
    let curves = sweep_curves(&c.points);
    let pairs = curves.len() > 1;
    let mark = |name: &str, i: usize, y: &dyn Fn(&ClockPointView) -> f64| {
        c.points.get(i).map(|q| {
            let at = match q.mem_mhz {
                Some(m) if pairs => format!("{} / {} MHz", figure::tick(q.core_mhz), figure::tick(m)),
                _ => figure::tick(q.core_mhz),
            };
            (format!("{name}: {at}"), q.core_mhz, y(q))
        })
    };
    let ed = |q: &ClockPointView| q.energy_j * q.time_s;
    let ed2 = |q: &ClockPointView| q.energy_j * q.time_s * q.time_s;
    let of = |y: &dyn Fn(&ClockPointView) -> f64| -> Vec<Vec<(f64, f64)>> {
        curves.iter().map(|(_, pts)| pts.iter().map(|q| (q.core_mhz, y(q))).collect()).collect()
    };
    let panels = vec![
        Panel { y_label: t_label, curves: of(&|q| q.time_s), optimum: None },
        Panel { y_label: "power (W)".into(), curves: of(&|q| q.power_w), optimum: None },
        Panel {
            y_label: e_label,
            curves: of(&|q| q.energy_j),
            optimum: mark("least energy", c.optima.energy, &|q| q.energy_j),
        },
        Panel { y_label: "E·D".into(), curves: of(&ed), optimum: mark("least E·D", c.optima.ed, &ed) },
        Panel {
            y_label: "E·D²".into(), curves: of(&ed2), optimum: mark("least E·D²", c.optima.ed2, &ed2)
        },
    ];
    let legend: Vec<Key> = curves
        .iter()
        .enumerate()
        .filter_map(|(i, (label, _))| {
            label.as_ref().map(|l| Key { label: l.clone(), color: curve_color(i), shape: curve_shape(i) })
        })
        .collect();
    let caption = if pairs {
        format!(
            "{}. One curve per memory clock; diamonds mark each objective's optimum pair (core / memory).",
            c.basis
        )
    } else {
        format!("{}. Diamonds mark each objective's optimum clock.", c.basis)
    };
    let fig = figure::panels(
        "predict-profile",
        &format!("Clock sweep of {} ({gpu})", c.profile.name),
        &caption,
        &Panels { x_label: "core clock (MHz)".into(), cols: 3, panels, point_marks: true, spans: vec![] },
        legend,
    )?;
    Ok((subtitle, vec![fig], vec![]))
}

pub(crate) fn figures(file: &str, v: &Value) -> Result<(String, Vec<Figure>, Vec<Note>)> {
    if v.get("points").is_some() && v.get("optima").is_some() && v.get("profile").is_some() {
        return clock_sweep_figures(file, v);
    }
    let p: PredictView = view(file, "predict", v)?;
    let mut figs = Vec::new();
    let subtitle = format!("kernel {} on {}", p.kernel, p.arch);
    if let Some(pr) = &p.prediction {
        let d = &pr.detail;
        let (fill, overlapped) = d.timing.as_ref().map_or((0.0, 0.0), |t| (t.fill_s, t.overlapped_s));
        // The pipeline fill is time the model charges beside the components: stacked with them, the bar is
        // everything the model adds up, and the predicted time is that less the overlapped work.
        let parts: Vec<(&str, f64)> = d
            .components
            .iter()
            .map(|c| (c.name.as_str(), c.time_s))
            .chain((fill > 0.0).then_some(("pipeline fill", fill)))
            .collect();
        let max = parts.iter().map(|c| c.1).sum::<f64>().max(d.time_s);
        let (k, unit) = time_unit(max);
        // Components with no time would be invisible slivers; the caption says they are left out.
        let comps: Vec<(String, f64)> =
            parts.iter().filter(|c| c.1 > 0.0).map(|c| (c.0.to_string(), c.1 * k)).collect();
        let zero: Vec<&str> = parts.iter().filter(|c| c.1 <= 0.0).map(|c| c.0).collect();
        let mut caption = format!(
            "Bottleneck: {}. The black line is the predicted time: the whole bar less the {:.3} {unit} of work \
             the model overlaps with the bottleneck; {:.1} W.",
            d.bottleneck,
            overlapped * k,
            pr.power_w
        );
        if !zero.is_empty() {
            caption = format!("{caption} Zero: {}.", zero.join(", "));
        }
        figs.push(figure::stacked_bar(
            "predict-components",
            &format!("Where the time goes: {} on {}", p.kernel, p.arch),
            &caption,
            &format!("time per component ({unit})"),
            &comps,
            Some(("predicted time".to_string(), d.time_s * k)),
        )?);
    }
    if let Some(s) = &p.sweep {
        figs.push(sweep_figure(&p, s)?);
    }
    if let Some(r) = &p.roofline {
        figs.push(roofline_figure(&p, r)?);
    }
    let notes = if figs.is_empty() {
        vec![Note {
            source: file.into(),
            text: "neither a prediction, a sweep nor a roofline in this predict result".into(),
        }]
    } else {
        vec![]
    };
    Ok((subtitle, figs, notes))
}

/// The roofline fallback: each memory level's and pipe's time bound as a bar (the largest is the bound),
/// and the fill added to it.
fn roofline_figure(p: &PredictView, r: &Roofline) -> Result<Figure> {
    let terms: Vec<(&str, f64)> = r
        .terms
        .iter()
        .map(|c| (c.name.as_str(), c.time_s))
        .chain((r.fill_s > 0.0).then_some(("fill (DRAM latency)", r.fill_s)))
        .collect();
    let max = terms.iter().map(|t| t.1).fold(r.time_s, f64::max);
    let (k, unit) = time_unit(max);
    let caption = format!(
        "Roofline fallback (the profile lacks the pipeline model's counters): each memory level's and pipe's bar is \
         the time that level alone would take; the largest, {}, plus the fill is the predicted time, {:.3} {unit}.",
        r.bound,
        r.time_s * k
    );
    figure::hbars(
        "predict-roofline",
        &format!("Roofline terms: {} on {}", p.kernel, p.arch),
        &caption,
        &figure::Bars {
            x_label: format!("time ({unit})"),
            categories: terms.iter().map(|t| t.0.to_string()).collect(),
            series: vec![("time bound".into(), terms.iter().map(|t| Some(t.1 * k)).collect())],
            values: true,
            intervals: vec![],
        },
    )
}

fn sweep_figure(p: &PredictView, s: &Sweep) -> Result<Figure> {
    let x_label = match s.kind.as_str() {
        "warps" => "active warps per SM".to_string(),
        "core-clock" => "core clock (MHz)".to_string(),
        other => other.to_string(),
    };
    let max_t = s.points.iter().map(|q| q.time_s).fold(0.0, f64::max);
    let (k, unit) = time_unit(max_t);
    let time: Vec<(f64, f64)> = s.points.iter().map(|q| (q.x, q.time_s * k)).collect();
    let fastest = time.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1));
    let mut panels = vec![
        Panel {
            y_label: format!("time ({unit})"),
            curves: vec![time],
            optimum: fastest.map(|(x, y)| (format!("fastest: {}", figure::tick(x)), x, y)),
        },
        Panel {
            y_label: "power (W)".into(),
            curves: vec![s.points.iter().map(|q| (q.x, q.power_w)).collect()],
            optimum: None,
        },
    ];
    for o in &s.optima {
        let (name, unit) = objective_label(o.a, o.b);
        let points = s.points.iter().map(|q| (q.x, q.energy_j.powf(o.a) * q.time_s.powf(o.b))).collect();
        panels.push(Panel {
            y_label: format!("{name} ({unit})"),
            curves: vec![points],
            optimum: Some((format!("{name} optimum: {}", figure::tick(o.x)), o.x, o.value)),
        });
    }
    let caption = "Diamonds mark each objective's optimum (from the JSON); where they sit apart, the objective decides the setting.";
    figure::panels(
        "predict-sweep",
        &format!("Sweep over {}: {} on {}", x_label, p.kernel, p.arch),
        caption,
        &Panels { x_label, cols: 3, panels, point_marks: true, spans: vec![] },
        vec![],
    )
}
