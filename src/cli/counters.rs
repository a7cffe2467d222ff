//! `gpumodel counters --chip NAME` — which CUPTI metric feeds each of the ten model inputs on a chip
//! (for the Range Profiler's per-kernel totals and for the PM-sampling time series), whether CUPTI's
//! metric database has each of them, and how many passes each set needs.

use super::output::{OutputFormat, render_table};
use gpumodel_collect::cupti::host::{HostProfiler, ProfilerKind};
use gpumodel_collect::cupti::loader::load_cupti;
use gpumodel_models::counters::{CounterMap, MapKind, group_metrics};
use serde::Serialize;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Chip, as CUPTI names it (TU102, GA100, GA102, AD102, GH100).
    #[arg(long)]
    pub chip: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: OutputFormat,
}

#[derive(Debug, Serialize)]
struct InputRow {
    input: String,
    profiler: &'static str,
    metrics: Vec<String>,
    /// Whether CUPTI accepts every metric for this profiler type on this chip (None: CUPTI not loaded).
    exists: Option<bool>,
    note: Option<String>,
}

/// One PM-sampling counter group: one run of the program under `collect --pm-passes all`.
#[derive(Debug, Serialize)]
struct PmGroupRow {
    /// 1-based run number (1 is the `[pm]` group, which `--pm-passes 1` uses alone).
    run: usize,
    counters: Vec<String>,
    metrics: Vec<String>,
    /// Hardware passes CUPTI needs for this group (must be 1; None: CUPTI not loaded).
    hardware_passes: Option<usize>,
}

#[derive(Debug, Serialize)]
struct Report {
    chip: String,
    cupti: Option<String>,
    range_passes: Option<usize>,
    /// Hardware passes of the first PM-sampling group (`[pm]`).
    pm_passes: Option<usize>,
    /// Every PM-sampling group, in run order.
    pm_groups: Vec<PmGroupRow>,
    inputs: Vec<InputRow>,
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

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let map = CounterMap::builtin(&args.chip)?;
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
    let report = Report {
        chip: chip.clone(),
        cupti: cupti.as_ref().map(|l| l.cupti.display().to_string()).ok(),
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
    };
    let yn = |b: Option<bool>| match b {
        Some(true) => "yes",
        Some(false) => "NO",
        None => "?",
    };
    match args.format {
        OutputFormat::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        OutputFormat::Csv => {
            println!("input,profiler,metrics,exists,note");
            for r in &report.inputs {
                println!(
                    "{},{},\"{}\",{},\"{}\"",
                    r.input,
                    r.profiler,
                    r.metrics.join("+"),
                    yn(r.exists),
                    r.note.clone().unwrap_or_default().replace('"', "'")
                );
            }
        }
        OutputFormat::Table => {
            let rows: Vec<Vec<String>> = report
                .inputs
                .iter()
                .map(|r| {
                    vec![
                        r.input.clone(),
                        r.profiler.into(),
                        if r.metrics.is_empty() { "-".into() } else { r.metrics.join(" + ") },
                        yn(r.exists).into(),
                        r.note.clone().unwrap_or_default(),
                    ]
                })
                .collect();
            print!("{}", render_table(&["input", "profiler", "metrics", "in CUPTI", "note"], &rows));
            let p = |x: Option<usize>| x.map_or("?".to_string(), |n| n.to_string());
            let groups: Vec<Vec<String>> = report
                .pm_groups
                .iter()
                .map(|g| {
                    vec![
                        g.run.to_string(),
                        g.counters.join(", "),
                        g.metrics.len().to_string(),
                        p(g.hardware_passes),
                    ]
                })
                .collect();
            println!();
            print!(
                "{}",
                render_table(&["PM run", "canonical counters", "metrics", "hardware passes"], &groups)
            );
            println!(
                "\n{chip}: range map needs {} pass(es) (kernel replay); PM sampling: {} counter group(s), each \
                 must be 1 hardware pass; `collect --pm-passes all` runs the program once per group, \
                 `--pm-passes 1` (default) samples run 1's group only",
                p(report.range_passes),
                report.pm_groups.len()
            );
            if let Err(e) = &cupti {
                println!("CUPTI not loaded, existence and passes unknown: {e}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
