//! Importers of existing profiler output into kernel profiles (input of `predict`) and tables:
//!
//! * **Nsight Compute** `ncu --csv --page raw [--metrics …]`: a header row of column names, a row of
//!   units, then one row per kernel launch with the launch columns (`Kernel Name`, `Block Size`,
//!   `Grid Size`, `launch__registers_per_thread`, `launch__shared_mem_per_block_*`,
//!   `gpu__time_duration.sum`) and one column per metric. Metrics are turned into canonical counters with
//!   the `range` maps of `models/counters/*.toml` (the same Perfworks names on every chip). Values are
//!   brought back to base units with the units row (ncu scales to `Kbyte`, `Msector`, `usecond`, … unless
//!   run with `--print-units base`, which keeps every digit: `8.19 Kbyte/block` is read as 8190 bytes).
//!   Lines before the header row (the profiled program's own output) are skipped.
//!   Nsight Compute's *long* layout (`ncu --csv` with `--page details`, the default of older versions:
//!   one row per launch and metric, `ID, …, Kernel Name, [Block Size, Grid Size,] …, Metric Name,
//!   Metric Unit, Metric Value`) is read too, each launch gathered by its `ID`. Where an export has no
//!   Block Size / Grid Size columns (older ncu), the launch shape comes from the Launch Statistics
//!   metrics `launch__grid_size` / `launch__block_size` (or their display names `Grid Size` /
//!   `Block Size`): totals of blocks and threads, kept as `[n, 1, 1]`, which is all the model uses.
//!   Metrics beyond the chip's range map (DRAM and L2 bytes, shared wavefronts, per-opcode FP counts,
//!   tensor instructions, occupancy) go through [`metrics::from_ncu`]; without `gpu__time_duration`, the
//!   time is `sm__cycles_elapsed.avg` at `sm__cycles_elapsed.avg.per_second`.
//! * **nvprof** `nvprof --csv --metrics …` or `--events …`: `==` log lines, then rows of
//!   `Device, Kernel, Invocations, Metric Name|Event Name, [Metric Description,] Min, Max, Avg`, one per
//!   kernel and metric; with both `--events` and `--metrics`, two tables, each with its own header (the
//!   metric table has an extra `Metric Description` column). Names equal to a canonical counter (they are the paper's Fermi event names) are
//!   mapped per compute capability by [`metrics::from_nvprof`].
//!   nvprof's metric CSV has no launch configuration: it comes from the same program's
//!   `nvprof --print-gpu-trace --csv` ([`read_nvprof_gpu_trace`]; `Grid X/Y/Z`, `Block X/Y/Z`,
//!   `Registers Per Thread`, `Static SMem`, `Dynamic SMem`, `Duration` per launch), joined by kernel name
//!   ([`join_gpu_trace`]), or from the user (`--grid/--block`). A gpu-trace file alone gives per-kernel
//!   times and shapes without counters ([`gpu_trace_kernels`]).

mod common;
pub mod metrics;
mod nvprof;
#[cfg(test)]
mod tests;

pub use common::{
    ImportedKernel, MetricUse, Origin, arch_of_device, kernels_table, profile_file_name, read_inject_rows,
    short_kernel_name,
};
pub use nvprof::{
    TraceLaunch, gpu_trace_kernels, is_gpu_trace, join_gpu_trace, read_nvprof, read_nvprof_gpu_trace,
};

use crate::counters::{CounterMap, MapKind};
use crate::error::{Error, Result};
use crate::profile::Launch;
use common::{count_scale, count_u32, dim3, number, read_records, time_scale};
use metrics::Mapped;
use std::collections::BTreeMap;

/// One launch as an ncu export gives it: its cells by column or metric name, each value with its unit.
struct NcuLaunch {
    line: u64,
    name: String,
    cells: BTreeMap<String, (String, String)>,
}

/// Reads `ncu --csv --page raw` output (wide: one row per launch) or the long layout (`--page details`,
/// one row per launch and metric).
pub fn read_ncu(text: &str, source: &str) -> Result<(Vec<ImportedKernel>, MetricUse)> {
    // A UTF-8 byte-order mark (Windows editors, Excel) is not part of the first column's name.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // ncu prints "==PROF==" log lines, and the profiled program's own output lands in the same stream
    // when stdout is redirected: the table starts at the header row, the first with a "Kernel Name" cell.
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with("==")).collect();
    let start = lines.iter().position(|l| l.contains("\"Kernel Name\"")).unwrap_or(0);
    let body = lines[start..].join("\n");
    let recs = read_records(&body, source)?;
    // Line numbers in the file: records are one per line here (ncu quotes but never breaks cells).
    let file_line = |n: usize| -> u64 {
        let kept = start + n;
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.starts_with("=="))
            .nth(kept)
            .map_or(kept as u64 + 1, |(i, _)| i as u64 + 1)
    };
    let fmt = |m: &str| Error::Format { file: source.into(), message: m.into() };
    let header =
        recs.first().ok_or_else(|| fmt("empty file: expected the output of `ncu --csv --page raw`"))?;
    let col = |name: &str| header.iter().position(|h| h == name);
    let kname = col("Kernel Name").ok_or_else(|| {
        fmt("no 'Kernel Name' column: expected the output of `ncu --csv` (--page raw or --page details)")
    })?;
    let mut launches: Vec<NcuLaunch> = Vec::new();
    if let (Some(mname), Some(mvalue)) = (col("Metric Name"), col("Metric Value")) {
        // Long layout: gather each launch's rows by ID (or, lacking one, by consecutive kernel name).
        let munit = col("Metric Unit");
        let id = col("ID");
        let mut by_id: BTreeMap<String, usize> = BTreeMap::new();
        for (n, rec) in recs.iter().enumerate().skip(1) {
            let cell = |i: Option<usize>| i.and_then(|i| rec.get(i)).map(String::as_str).unwrap_or("");
            let name = cell(Some(kname));
            if name.is_empty() {
                continue;
            }
            let key = match id {
                Some(_) => cell(id).to_string(),
                None => format!("{name}\u{0}{}", launches.len()),
            };
            let k = *by_id.entry(key).or_insert_with(|| {
                let mut cells = BTreeMap::new();
                // The per-launch columns (Block Size, Grid Size, …) ride along on every row.
                for (i, h) in header.iter().enumerate() {
                    if i != mname && i != mvalue && Some(i) != munit {
                        cells.insert(h.clone(), (rec.get(i).cloned().unwrap_or_default(), String::new()));
                    }
                }
                launches.push(NcuLaunch { line: file_line(n), name: name.to_string(), cells });
                launches.len() - 1
            });
            let metric = cell(Some(mname));
            if !metric.is_empty() {
                launches[k]
                    .cells
                    .insert(metric.to_string(), (cell(Some(mvalue)).to_string(), cell(munit).to_string()));
            }
        }
    } else {
        let units: Vec<String> = recs.get(1).cloned().unwrap_or_default();
        // The units row has no kernel name; data rows do.
        let has_units = units.get(kname).is_some_and(|s| s.is_empty());
        for (n, rec) in recs.iter().enumerate().skip(if has_units { 2 } else { 1 }) {
            let name = rec.get(kname).cloned().unwrap_or_default();
            if name.is_empty() {
                continue;
            }
            let cells = header
                .iter()
                .enumerate()
                .map(|(i, h)| {
                    let unit =
                        if has_units { units.get(i).cloned().unwrap_or_default() } else { String::new() };
                    (h.clone(), (rec.get(i).cloned().unwrap_or_default(), unit))
                })
                .collect();
            launches.push(NcuLaunch { line: file_line(n), name, cells });
        }
    }
    // Canonical counters from the range map (the same metric names on every chip).
    let map = CounterMap::builtin("GA102")?;
    let mut out = Vec::new();
    let mut use_ = MetricUse::default();
    for l in &launches {
        out.push(ncu_launch(l, &map, source, &mut use_)?);
    }
    if out.is_empty() {
        return Err(fmt(
            "no kernel rows: was the program's kernel profiled (check ncu's --kernel-name filter)?",
        ));
    }
    Ok((out, use_))
}

/// One ncu launch → an imported kernel: counters through the range map, the launch shape from the
/// Block Size / Grid Size columns or the Launch Statistics metrics, the time from `gpu__time_duration`.
fn ncu_launch(l: &NcuLaunch, map: &CounterMap, source: &str, use_: &mut MetricUse) -> Result<ImportedKernel> {
    let get = |k: &str| l.cells.get(k).map(|(v, u)| (v.as_str(), u.as_str()));
    let scaled = |k: &str| get(k).and_then(|(v, u)| number(v).map(|x| x * count_scale(u)));
    let bad = |column: &str, message: String| Error::Parse {
        file: source.into(),
        line: l.line,
        column: column.into(),
        message,
    };
    let mut values = BTreeMap::new();
    for (k, (v, u)) in &l.cells {
        if let Some(x) = number(v) {
            // Percentages become fractions; counts go back to base units.
            let x = if u.trim() == "%" { x / 100.0 } else { x * count_scale(u) };
            if !x.is_finite() || x.abs() > crate::profile::MAX_COUNTER_TOTAL {
                return Err(bad(k, format!("{x} is outside ±1e18, the range of a launch's counter")));
            }
            values.insert(k.clone(), x);
        }
    }
    let range = map.map(MapKind::Range);
    let counters = map.canonical(MapKind::Range, &values);
    let mut used: std::collections::BTreeSet<String> = range
        .iter()
        .filter(|(c, _)| counters.contains_key(*c))
        .flat_map(|(_, ms)| ms.iter().cloned())
        .collect();
    let mut mapped = Mapped { counters, ..Mapped::default() };
    metrics::from_ncu(&values, &mut mapped).map_err(|e| bad("Metric Value", e.0))?;
    used.extend(mapped.used.iter().cloned());
    // Launch and time columns are read below: count them as mapped too.
    for k in LAUNCH_AND_TIME {
        if values.contains_key(*k) {
            used.insert(k.to_string());
        }
    }
    let metric_names: Vec<&String> =
        values.keys().filter(|k| !NCU_IDENTITY_COLUMNS.contains(&k.as_str())).collect();
    use_.record(metric_names.into_iter(), &used);
    // The shape: 3-D columns first, then the metrics (a total count of blocks / threads).
    let dims = |col: &str, metric: &str| -> Result<Option<[u32; 3]>> {
        if let Some((v, _)) = get(col).filter(|(v, _)| !v.is_empty()) {
            if let Some(d) = dim3(v) {
                return Ok(Some(d));
            }
            // The details page's Launch Statistics gives "Grid Size" as a plain number.
            if let Some(n) = number(v) {
                return Ok(Some([count_u32(n), 1, 1]));
            }
            return Err(bad(
                col,
                format!("'{}' is not a launch size like (256, 1, 1)", crate::table::shown(v)),
            ));
        }
        Ok(scaled(metric).map(|n| [count_u32(n), 1, 1]))
    };
    let grid = dims("Grid Size", "launch__grid_size")?;
    let block = dims("Block Size", "launch__block_size")?;
    let launch = match (grid, block) {
        (Some(grid), Some(block)) => Some(Launch {
            grid,
            block,
            registers_per_thread: scaled("launch__registers_per_thread")
                .or_else(|| scaled("Registers Per Thread"))
                .map_or(0, count_u32),
            shared_mem_per_block: {
                // Static + dynamic + the driver's reserve per block (sm_80+), by metric or display name.
                let raw: f64 = [
                    ["launch__shared_mem_per_block_static", "Static Shared Memory Per Block"],
                    ["launch__shared_mem_per_block_dynamic", "Dynamic Shared Memory Per Block"],
                    ["launch__shared_mem_per_block_driver", "Driver Shared Memory Per Block"],
                ]
                .iter()
                .filter_map(|[m, d]| scaled(m).or_else(|| scaled(d)))
                .sum();
                count_u32(raw.round())
            },
        }),
        _ => None,
    };
    let hz = values.get("sm__cycles_elapsed.avg.per_second").copied().filter(|f| *f > 0.0);
    let time_s = ["gpu__time_duration.sum", "gpu__time_duration", "Duration"]
        .iter()
        .find_map(|m| {
            let (v, u) = get(m)?;
            let t = number(v)?;
            // Without a unit, ncu's raw page is in nanoseconds.
            let k = if u.is_empty() { Some(1e-9) } else { time_scale(u) }?;
            Some(t * k).filter(|t| *t >= 0.0)
        })
        // Elapsed SM cycles at the measured SM clock.
        .or_else(|| Some(values.get("sm__cycles_elapsed.avg")? / hz?));
    let device = ["Device Name", "device__attribute_display_name"]
        .iter()
        .find_map(|c| get(c).map(|(v, _)| v.to_string()).filter(|v| !v.is_empty()));
    Ok(ImportedKernel {
        origin: Origin::Ncu,
        name: l.name.clone(),
        launch,
        time_s,
        counters: mapped.counters,
        code: mapped.code,
        device,
        core_mhz: hz.map(|f| f / 1e6),
    })
}

/// Columns and metrics read for the launch shape and the time (counted as mapped in the import report).
const LAUNCH_AND_TIME: &[&str] = &[
    "Block Size",
    "Grid Size",
    "launch__grid_size",
    "launch__block_size",
    "launch__registers_per_thread",
    "Registers Per Thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "Static Shared Memory Per Block",
    "Dynamic Shared Memory Per Block",
    "launch__shared_mem_per_block_driver",
    "Driver Shared Memory Per Block",
    "gpu__time_duration.sum",
    "gpu__time_duration",
    "Duration",
    "sm__cycles_elapsed.avg",
    "sm__cycles_elapsed.avg.per_second",
];

/// ncu's identification columns (not metrics: neither mapped nor dropped).
const NCU_IDENTITY_COLUMNS: &[&str] = &[
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Kernel Time",
    "Context",
    "Stream",
    "Device",
    "CC",
    "Section Name",
    "Rule Name",
    "Rule Type",
    "Rule Description",
];
