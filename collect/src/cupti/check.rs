//! The counter map of a chip checked against CUPTI's metric database (`gpumodel counters`): which CUPTI
//! metric feeds each of the ten model inputs for the Range Profiler and for PM sampling, whether CUPTI has
//! it, and how many hardware passes each set needs. Uses the Profiler Host API only, so it runs without a
//! GPU; without CUPTI the map is still reported, existence and passes unknown.

use crate::cupti::dcgm::DcgmPlan;
use crate::cupti::host::{HostProfiler, ProfilerKind};
use crate::cupti::loader::load_cupti;
use crate::error::Result;
use gpumodel_models::counters::{CounterMap, MapKind, group_metrics};
use gpumodel_models::export::{Cell, Column, Export, Section};
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InputRow {
    pub input: String,
    pub profiler: &'static str,
    pub metrics: Vec<String>,
    /// Whether CUPTI accepts every metric for this profiler type on this chip (None: CUPTI not loaded).
    pub exists: Option<bool>,
    pub note: Option<String>,
}

/// One PM-sampling counter group: one run of the program under `collect --pm-passes all`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PmGroupRow {
    /// 1-based run number (1 is the `[pm]` group, which `--pm-passes 1` uses alone).
    pub run: usize,
    pub counters: Vec<String>,
    pub metrics: Vec<String>,
    /// Hardware passes CUPTI needs for this group (must be 1; None: CUPTI not loaded).
    pub hardware_passes: Option<usize>,
}

/// `gpumodel counters`: the chip's counter map checked against CUPTI's metric database.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricCheck {
    pub chip: String,
    /// The CUPTI library used, when one was loaded.
    pub cupti: Option<String>,
    /// Why CUPTI could not be loaded (existence and passes are then unknown).
    pub cupti_error: Option<String>,
    pub range_passes: Option<usize>,
    /// Hardware passes of the first PM-sampling group (`[pm]`).
    pub pm_passes: Option<usize>,
    /// Every PM-sampling group, in run order.
    pub pm_groups: Vec<PmGroupRow>,
    pub inputs: Vec<InputRow>,
    /// The DCGM profiling fields through PM sampling (empty without CUPTI).
    pub dcgm: Vec<DcgmRow>,
}

/// One DCGM profiling field: the replay run that samples it, or why the chip cannot.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DcgmRow {
    pub field: &'static str,
    pub id: u16,
    /// Run of `collect --pm-passes all` (1-based, after the map's groups); `None`: not available.
    pub run: Option<usize>,
    pub metrics: Vec<String>,
    pub note: Option<String>,
}

/// The DCGM rows of `chip`, whose map has `map_groups` PM-sampling groups.
fn dcgm_rows(chip: &str, map_groups: usize) -> Vec<DcgmRow> {
    let Ok(plan) = DcgmPlan::for_chip(chip) else { return vec![] };
    let mut rows: Vec<DcgmRow> = plan
        .groups
        .iter()
        .enumerate()
        .flat_map(|(k, g)| {
            g.iter().map(move |f| DcgmRow {
                field: f.field.name(),
                id: f.field.id(),
                run: Some(map_groups + k + 1),
                metrics: vec![f.counter.clone(), f.elapsed.clone(), f.peak.clone()],
                note: None,
            })
        })
        .collect();
    rows.extend(plan.missing.iter().map(|(f, why)| DcgmRow {
        field: f.name(),
        id: f.id(),
        run: None,
        metrics: vec![],
        note: Some(why.clone()),
    }));
    rows.sort_by_key(|r| r.id);
    rows
}

fn check(chip: &str, kind: ProfilerKind, metrics: &[String]) -> Option<bool> {
    let names: Vec<&str> = metrics.iter().map(String::as_str).collect();
    Some(HostProfiler::new(chip, kind, None).ok()?.add_metrics(&names).is_ok())
}

fn passes(chip: &str, kind: ProfilerKind, metrics: &[String]) -> Option<usize> {
    let names: Vec<&str> = metrics.iter().map(String::as_str).collect();
    let mut h = HostProfiler::new(chip, kind, None).ok()?;
    h.add_metrics(&names).ok()?;
    h.num_passes().ok()
}

fn dedup(v: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in v {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

impl MetricCheck {
    /// Checks `chip`'s counter map against CUPTI's metric database (the Profiler Host API: no GPU needed).
    /// Without CUPTI the map is still reported, with existence and passes unknown.
    pub fn run(chip: &str) -> Result<MetricCheck> {
        let map = CounterMap::builtin(chip)?;
        let chip = map.chip.clone();
        let cupti = load_cupti();
        let have = cupti.is_ok();
        let mut inputs = Vec::new();
        for (kind, pk, label) in
            [(MapKind::Range, ProfilerKind::Range, "range"), (MapKind::Pm, ProfilerKind::PmSampling, "pm")]
        {
            for (input, metrics) in map.input_metrics(kind) {
                // The map's notes on the counters behind this input (why a PM entry is a stand-in or absent).
                let notes: Vec<String> = gpumodel_models::profile::MODEL_INPUTS
                    .iter()
                    .find(|(n, _)| *n == input)
                    .map(|(_, p)| p.iter().filter_map(|c| map.pm_notes.get(*c).cloned()).collect())
                    .unwrap_or_default();
                let notes = dedup(notes).join("; ");
                let note = if metrics.is_empty() {
                    Some(if notes.is_empty() { "not in this map".into() } else { notes })
                } else {
                    (kind == MapKind::Pm && !notes.is_empty()).then_some(notes)
                };
                let exists = if metrics.is_empty() || !have { None } else { check(&chip, pk, &metrics) };
                inputs.push(InputRow { input: input.into(), profiler: label, metrics, exists, note });
            }
        }
        Ok(MetricCheck {
            chip: chip.clone(),
            cupti: cupti.as_ref().map(|l| l.cupti.display().to_string()).ok(),
            cupti_error: cupti.as_ref().err().map(|e| e.to_string()),
            range_passes: if have {
                passes(&chip, ProfilerKind::Range, &map.metrics(MapKind::Range))
            } else {
                None
            },
            pm_passes: if have {
                passes(&chip, ProfilerKind::PmSampling, &map.metrics(MapKind::Pm))
            } else {
                None
            },
            pm_groups: map
                .pm_groups()
                .into_iter()
                .enumerate()
                .map(|(k, g)| {
                    let metrics = group_metrics(g);
                    let hardware_passes =
                        if have { passes(&chip, ProfilerKind::PmSampling, &metrics) } else { None };
                    PmGroupRow { run: k + 1, counters: g.keys().cloned().collect(), metrics, hardware_passes }
                })
                .collect(),
            inputs,
            dcgm: if have { dcgm_rows(&chip, map.pm_groups().len()) } else { vec![] },
        })
    }
}

fn yes_no(b: Option<bool>) -> &'static str {
    match b {
        Some(true) => "yes",
        Some(false) => "NO",
        None => "?",
    }
}

impl Export for MetricCheck {
    const COMMAND: &'static str = "counters";

    fn sections(&self) -> Vec<Section> {
        let mut inputs = Section::new(vec![
            Column::new("input", "input"),
            Column::new("profiler", "profiler"),
            Column::new("metrics", "metrics"),
            Column::new("exists", "in CUPTI"),
            Column::new("note", "note"),
        ]);
        for r in &self.inputs {
            inputs.push(vec![
                Cell::text(&r.input),
                Cell::text(r.profiler),
                if r.metrics.is_empty() { Cell::Empty } else { Cell::Text(r.metrics.join(" + ")) },
                Cell::text(yes_no(r.exists)),
                r.note.as_ref().map_or(Cell::text(""), Cell::text),
            ]);
        }
        let mut groups = Section::new(vec![
            Column::new("run", "PM run"),
            Column::new("counters", "canonical counters"),
            Column::new("metrics", "metrics"),
            Column::new("hardware_passes", "hardware passes"),
        ]);
        for g in &self.pm_groups {
            groups.push(vec![
                Cell::int(i64::try_from(g.run).unwrap_or(i64::MAX)),
                Cell::Text(g.counters.join(", ")),
                Cell::int(i64::try_from(g.metrics.len()).unwrap_or(i64::MAX)),
                g.hardware_passes
                    .map_or(Cell::text("?"), |n| Cell::int(i64::try_from(n).unwrap_or(i64::MAX))),
            ]);
        }
        let mut dcgm = Section::new(vec![
            Column::new("field", "DCGM field"),
            Column::new("run", "PM run"),
            Column::new("metrics", "metrics (counter / (elapsed × peak))"),
            Column::new("note", "note"),
        ]);
        for r in &self.dcgm {
            dcgm.push(vec![
                Cell::Text(format!("{} ({})", r.field, r.id)),
                r.run.map_or(Cell::text("-"), |n| Cell::int(i64::try_from(n).unwrap_or(i64::MAX))),
                if r.metrics.is_empty() { Cell::Empty } else { Cell::Text(r.metrics.join(", ")) },
                r.note.as_ref().map_or(Cell::text(""), Cell::text),
            ]);
        }
        if self.dcgm.is_empty() { vec![inputs, groups] } else { vec![inputs, groups, dcgm] }
    }

    fn notes(&self) -> Vec<String> {
        let mut out = vec![format!(
            "{}: range map needs {} pass(es) (kernel replay); PM sampling: {} counter group(s), each must be 1 \
             hardware pass; `collect --pm-passes all` runs the program once per group, `--pm-passes 1` \
             (default) samples run 1's group only",
            self.chip,
            self.range_passes.map_or("?".to_string(), |n| n.to_string()),
            self.pm_groups.len()
        )];
        let runs: Vec<usize> = self.dcgm.iter().filter_map(|r| r.run).collect();
        if let (Some(a), Some(b)) = (runs.iter().min(), runs.iter().max()) {
            out.push(format!(
                "DCGM fields: runs {a}–{b} of `collect --pm-passes all` add them to the trace (columns SMACT, DRAMA, …), \
                 which `predict --profile` and `import dcgm` read"
            ));
        }
        if let Some(e) = &self.cupti_error {
            out.push(format!("CUPTI not loaded, existence and passes unknown: {e}"));
        }
        out
    }
}
