//! A collector trace (`gpumodel collect`: CSV + JSON sidecar): power, clocks and each counter over time
//! with the kernel launches shaded, and the run's energy from the integral of power beside the energy
//! counter's.

use crate::Result;
use crate::error::Error;
use crate::figure::{self, Bars, Figure, Note, Panel, Panels};
use gpumodel_models::trace;
use serde_json::Value;
use std::path::Path;

/// At most this many points per curve: a long trace is thinned evenly (every sample stays in the CSV).
const MAX_POINTS: usize = 2000;

/// One curve's (x, y) points.
type Curve = Vec<(f64, f64)>;

pub(crate) fn figures(file: &str, v: &Value, csv: Option<&Path>) -> Result<(String, Vec<Figure>, Vec<Note>)> {
    let meta: trace::TraceMeta = crate::view(file, "collect", v)?;
    let csv = csv.ok_or_else(|| Error::input(file, "a trace's figures need its CSV beside the sidecar"))?;
    let rows = trace::read_rows(csv, &meta)
        .map_err(|e| Error::input(file, format!("reading the trace's CSV: {e}")))?;
    let subtitle = format!("{} on {} ({} samples)", meta.kernel, meta.gpu, rows.len());
    let step = rows.len().div_ceil(MAX_POINTS).max(1);
    let thin: Vec<&trace::TraceRow> = rows.iter().step_by(step).collect();
    let series = |f: &dyn Fn(&trace::TraceRow) -> f64| -> Vec<(f64, f64)> {
        thin.iter().map(|r| (r.t_s, f(r))).filter(|p| p.1.is_finite()).collect()
    };
    let mut panels =
        vec![Panel { y_label: "power (W)".into(), curves: vec![series(&|r| r.power_w)], optimum: None }];
    let core = series(&|r| r.core_mhz);
    if !core.is_empty() {
        panels.push(Panel { y_label: "core clock (MHz)".into(), curves: vec![core], optimum: None });
    }
    // A counter whose samples equal an earlier one's (two names of one hardware count) joins its panel.
    let mut counter_panels: Vec<(Vec<String>, Curve)> = Vec::new();
    for (j, name) in meta.counters.iter().enumerate() {
        let pts = series(&|r| r.counters.get(j).copied().unwrap_or(f64::NAN));
        if pts.is_empty() {
            continue;
        }
        match counter_panels.iter_mut().find(|(_, p)| *p == pts) {
            Some((names, _)) => names.push(name.clone()),
            None => counter_panels.push((vec![name.clone()], pts)),
        }
    }
    for (names, pts) in counter_panels {
        panels.push(Panel {
            y_label: format!("{} (/s)", figure::shorten(&names.join(" = "), 22)),
            curves: vec![pts],
            optimum: None,
        });
    }
    let spans: Vec<(f64, f64)> = meta.launches.iter().map(|l| (l.t_start_s, l.t_end_s)).collect();
    let caption = match spans.len() {
        0 => "The trace records no kernel launch times; a counter that moves with power explains it."
            .to_string(),
        n => format!(
            "Grey bands are the {n} kernel launches the profiler saw; a counter that moves with power explains it."
        ),
    };
    let mut figs = vec![figure::panels(
        "collect-trace",
        &format!("Power and counters over time: {}", meta.kernel),
        &caption,
        &Panels { x_label: "time (s)".into(), cols: 2, panels, point_marks: false, spans },
        vec![],
    )?];
    let mut notes = Vec::new();
    match &meta.summary {
        Some(s) => {
            let mut series = vec![("∫ power dt".to_string(), vec![Some(s.power_integral_j)])];
            if s.energy_source == "energy_counter" || meta.energy_counter {
                series.push(("energy counter".to_string(), vec![Some(s.energy_j)]));
            }
            figs.push(figure::hbars(
                "collect-energy",
                "Run energy: integral of sampled power vs the GPU's energy counter",
                "The bars should agree within a few percent; a gap means the power sampling missed peaks.",
                &Bars {
                    x_label: "energy (J)".into(),
                    categories: vec![meta.kernel.clone()],
                    series,
                    values: true,
                    intervals: Vec::new(),
                },
            )?);
        }
        None => {
            notes.push(Note { source: file.into(), text: "the run did not finish: no energy summary".into() })
        }
    }
    Ok((subtitle, figs, notes))
}
