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
//! * **nvprof** `nvprof --csv --metrics …` or `--events …`: `==` log lines, then rows of
//!   `Device, Kernel, Invocations, Metric Name|Event Name, [Metric Description,] Min, Max, Avg`, one per
//!   kernel and metric; with both `--events` and `--metrics`, two tables, each with its own header (the
//!   metric table has an extra `Metric Description` column). Names equal to a canonical counter (they are the paper's Fermi event names) are
//!   taken as they are, except the thread-level instruction counts, divided by 32 to warp instructions
//!   ([`NVPROF_THREAD_LEVEL`]); a few nvprof metrics with the same meaning are mapped ([`NVPROF_ALIASES`]).
//!   nvprof's metric CSV has no launch configuration: it comes from the same program's
//!   `nvprof --print-gpu-trace --csv` ([`read_nvprof_gpu_trace`]; `Grid X/Y/Z`, `Block X/Y/Z`,
//!   `Registers Per Thread`, `Static SMem`, `Dynamic SMem`, `Duration` per launch), joined by kernel name
//!   ([`join_gpu_trace`]), or from the user (`--grid/--block`). A gpu-trace file alone gives per-kernel
//!   times and shapes without counters ([`gpu_trace_kernels`]).

use crate::counters::{CounterMap, MapKind};
use crate::error::{Error, Result};
use crate::profile::{CANONICAL_COUNTERS, KernelProfile, Launch, MODEL_INPUTS, Measured};
use crate::table::{GROUP_COLUMN, Table};
use ndarray::Array2;
use std::collections::BTreeMap;

/// nvprof metric names with the meaning of a canonical counter (nvprof metric reference, CUDA 10
/// profiler guide): transactions of the same unit as the Fermi events.
pub const NVPROF_ALIASES: &[(&str, &str)] = &[
    ("gst_transactions", "global_store_transaction"),
    ("local_load_transactions", "local_load"),
    ("local_store_transactions", "local_store"),
    ("shared_load_transactions", "shared_load"),
    ("shared_store_transactions", "shared_store"),
];

/// nvprof metrics that count *thread* instructions ("executed by non-predicated threads", nvprof metric
/// reference) while their canonical counters are warp instructions: divided by the warp size (32) on
/// import, as the NV-DVFS rows are (exact for full warps).
pub const NVPROF_THREAD_LEVEL: &[&str] = &["inst_fp_32", "inst_fp_64", "inst_integer", "inst_bit_convert"];

/// Which profiler output a kernel came from (to say what to do when something is missing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Ncu,
    Nvprof,
    NvprofGpuTrace,
    Inject,
}

impl Origin {
    fn missing_launch_hint(self) -> &'static str {
        match self {
            Origin::Ncu => {
                "this ncu export has neither Block Size / Grid Size columns nor the launch__grid_size and \
                 launch__block_size metrics: profile again adding `--metrics launch__grid_size,launch__block_size` \
                 (or `--section LaunchStats`), or give --grid and --block"
            }
            Origin::Nvprof | Origin::NvprofGpuTrace => {
                "nvprof's metric tables record no launch shape: pass the same program's \
                 `nvprof --print-gpu-trace --csv` output with --gpu-trace FILE, or give --grid and --block"
            }
            Origin::Inject => "the injection library saw no launch for this range: give --grid and --block",
        }
    }
}

/// One imported kernel launch (ncu) or kernel (nvprof, averaged over invocations).
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedKernel {
    pub origin: Origin,
    pub name: String,
    /// Launch configuration when the source has it (ncu).
    pub launch: Option<Launch>,
    /// Kernel time, seconds, when the source has it.
    pub time_s: Option<f64>,
    /// Canonical counter totals of one launch.
    pub counters: BTreeMap<String, f64>,
}

impl ImportedKernel {
    /// The kernel profile; `launch` is used when the source had none.
    pub fn to_profile(&self, source: &str, launch: Option<Launch>) -> Result<KernelProfile> {
        let launch = self.launch.clone().or(launch).ok_or_else(|| {
            Error::Invalid(format!(
                "{source}: kernel '{}' has no launch configuration: {}",
                self.name,
                self.origin.missing_launch_hint()
            ))
        })?;
        let p = KernelProfile {
            name: self.name.clone(),
            source: source.to_string(),
            arch: None,
            launch,
            counters: self.counters.clone(),
            code: BTreeMap::new(),
            measured: Measured { time_s: self.time_s, ..Measured::default() },
        };
        p.check(source)?;
        Ok(p)
    }
}

/// Parses a number as the profilers print it ("1,234,567", "12.5", "n/a" → None).
fn number(s: &str) -> Option<f64> {
    let t = s.trim().replace(',', "");
    if t.is_empty() || t.eq_ignore_ascii_case("n/a") {
        return None;
    }
    t.parse::<f64>().ok().filter(|x| x.is_finite())
}

/// "(256, 1, 1)" → [256, 1, 1].
fn dim3(s: &str) -> Option<[u32; 3]> {
    let v: Vec<u32> = s
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
        .split(',')
        .map(|x| x.trim().parse().ok())
        .collect::<Option<Vec<_>>>()?;
    match v.as_slice() {
        [x] => Some([*x, 1, 1]),
        [x, y] => Some([*x, *y, 1]),
        [x, y, z] => Some([*x, *y, *z]),
        _ => None,
    }
}

fn time_scale(unit: &str) -> Option<f64> {
    match unit.trim() {
        "nsecond" | "ns" => Some(1e-9),
        "usecond" | "us" => Some(1e-6),
        "msecond" | "ms" => Some(1e-3),
        "second" | "s" => Some(1.0),
        _ => None,
    }
}

/// Factor from a count unit as ncu prints it to the base unit. ncu scales values to a fitting magnitude
/// with decimal prefixes unless run with `--print-units base` (e.g. `Kbyte` = 1000 byte, `Msector`,
/// `Kbyte/block`); base units (`byte`, `inst`, `sector`, `register/thread`), ratios and empty units are 1.
fn count_scale(unit: &str) -> f64 {
    let head = unit.trim().split('/').next().unwrap_or("");
    let mut chars = head.chars();
    let prefix = chars.next();
    let rest = chars.as_str();
    if !rest.starts_with(|c: char| c.is_ascii_lowercase()) {
        return 1.0;
    }
    match prefix {
        Some('K') => 1e3,
        Some('M') => 1e6,
        Some('G') => 1e9,
        Some('T') => 1e12,
        _ => 1.0,
    }
}

fn read_records(text: &str, source: &str) -> Result<Vec<Vec<String>>> {
    let mut r = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(text.as_bytes());
    let mut out = Vec::new();
    for rec in r.records() {
        let rec = rec.map_err(|e| crate::table::csv_error(source, e))?;
        out.push(rec.iter().map(|s| s.trim().to_string()).collect());
    }
    Ok(out)
}

/// One launch as an ncu export gives it: its cells by column or metric name, each value with its unit.
struct NcuLaunch {
    line: u64,
    name: String,
    cells: BTreeMap<String, (String, String)>,
}

/// Reads `ncu --csv --page raw` output (wide: one row per launch) or the long layout (`--page details`,
/// one row per launch and metric).
pub fn read_ncu(text: &str, source: &str) -> Result<Vec<ImportedKernel>> {
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
    for l in &launches {
        out.push(ncu_launch(l, &map, source)?);
    }
    if out.is_empty() {
        return Err(fmt(
            "no kernel rows: was the program's kernel profiled (check ncu's --kernel-name filter)?",
        ));
    }
    Ok(out)
}

/// One ncu launch → an imported kernel: counters through the range map, the launch shape from the
/// Block Size / Grid Size columns or the Launch Statistics metrics, the time from `gpu__time_duration`.
fn ncu_launch(l: &NcuLaunch, map: &CounterMap, source: &str) -> Result<ImportedKernel> {
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
            values.insert(k.clone(), x * count_scale(u));
        }
    }
    let counters = map.canonical(MapKind::Range, &values);
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
                let raw: f64 =
                    ["launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic"]
                        .iter()
                        .filter_map(|m| scaled(m))
                        .sum();
                count_u32(raw.round())
            },
        }),
        _ => None,
    };
    let time_s = ["gpu__time_duration.sum", "gpu__time_duration", "Duration"].iter().find_map(|m| {
        let (v, u) = get(m)?;
        let t = number(v)?;
        // Without a unit, ncu's raw page is in nanoseconds.
        let k = if u.is_empty() { Some(1e-9) } else { time_scale(u) }?;
        Some(t * k).filter(|t| *t >= 0.0)
    });
    Ok(ImportedKernel { origin: Origin::Ncu, name: l.name.clone(), launch, time_s, counters })
}

/// A count as u32: negative and NaN → 0 (the profile check then refuses it), huge → u32::MAX.
fn count_u32(x: f64) -> u32 {
    if x.is_nan() || x <= 0.0 { 0 } else { x.min(f64::from(u32::MAX)) as u32 }
}

/// Reads `nvprof --csv --metrics …` or `--events …` output (per-kernel averages over invocations).
pub fn read_nvprof(text: &str, source: &str) -> Result<(Vec<ImportedKernel>, Vec<String>)> {
    // nvprof's "==PID==" log lines and the program's own output (same stream with `2>&1`) come before
    // and between the tables: the table starts at the first header row.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if is_gpu_trace(text) {
        return Err(Error::Format {
            file: source.into(),
            message: "this is `nvprof --print-gpu-trace` output, not a metric table: import it alone for \
                      per-kernel times, or pass it with --gpu-trace beside the metric table"
                .into(),
        });
    }
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with("==") && !l.trim().is_empty()).collect();
    let start = lines
        .iter()
        .position(|l| {
            l.contains("\"Kernel\"") && (l.contains("\"Metric Name\"") || l.contains("\"Event Name\""))
        })
        .unwrap_or(0);
    let recs = read_records(&lines[start..].join("\n"), source)?;
    let fmt = |m: &str| Error::Format { file: source.into(), message: m.into() };
    let header =
        recs.first().ok_or_else(|| fmt("empty file: expected the output of `nvprof --csv --metrics …`"))?;
    // (Kernel, Metric/Event Name, Avg) column indices of a header row. nvprof run with both --events and
    // --metrics prints two tables, each with its own header: the metric table has an extra
    // "Metric Description" column, so the indices are taken again at every header row.
    let columns = |h: &[String]| {
        let col = |name: &str| h.iter().position(|x| x == name);
        match (col("Kernel"), col("Metric Name").or(col("Event Name")), col("Avg")) {
            (Some(k), Some(m), Some(a)) => Some((k, m, a)),
            _ => None,
        }
    };
    let Some(mut cols) = columns(header) else {
        return Err(fmt(
            "expected columns Kernel, Metric Name (or Event Name) and Avg: the output of `nvprof --csv --metrics …` or `--events …`",
        ));
    };
    let mut kernels: Vec<ImportedKernel> = Vec::new();
    let mut ignored: Vec<String> = Vec::new();
    for (n, rec) in recs.iter().enumerate().skip(1) {
        if let Some(next) = columns(rec) {
            cols = next;
            continue;
        }
        let (kernel, metric, avg) = cols;
        let (Some(k), Some(m), Some(a)) = (rec.get(kernel), rec.get(metric), rec.get(avg)) else { continue };
        let canonical = if CANONICAL_COUNTERS.iter().any(|(c, _)| c == m) {
            Some(m.as_str())
        } else {
            NVPROF_ALIASES.iter().find(|(a, _)| a == m).map(|(_, c)| *c)
        };
        let Some(c) = canonical else {
            if !ignored.contains(m) {
                ignored.push(m.clone());
            }
            continue;
        };
        let v = number(a).ok_or_else(|| Error::Parse {
            file: source.into(),
            line: n as u64 + 1,
            column: "Avg".into(),
            message: format!("'{}' is not a number", crate::table::shown(a)),
        })?;
        let i = match kernels.iter().position(|x| &x.name == k) {
            Some(i) => i,
            None => {
                kernels.push(ImportedKernel {
                    origin: Origin::Nvprof,
                    name: k.clone(),
                    launch: None,
                    time_s: None,
                    counters: BTreeMap::new(),
                });
                kernels.len() - 1
            }
        };
        let v = if NVPROF_THREAD_LEVEL.contains(&m.as_str()) { v / 32.0 } else { v };
        kernels[i].counters.insert(c.to_string(), v);
    }
    if kernels.is_empty() {
        return Err(fmt("no rows with a known counter: see `gpumodel counters` for the names used"));
    }
    Ok((kernels, ignored))
}

/// One kernel launch of `nvprof --print-gpu-trace --csv`.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceLaunch {
    pub name: String,
    pub launch: Launch,
    pub duration_s: Option<f64>,
}

/// Whether `text` is `nvprof --print-gpu-trace --csv` output (a header with Grid X and Block X).
pub fn is_gpu_trace(text: &str) -> bool {
    text.lines().any(|l| l.contains("\"Grid X\"") && l.contains("\"Block X\"") && l.contains("\"Name\""))
}

/// nvprof's memory-size units (binary prefixes, as its summary prints them).
fn bytes_scale(unit: &str) -> Option<f64> {
    match unit.trim() {
        "" | "B" => Some(1.0),
        "KB" => Some(1024.0),
        "MB" => Some(1024.0 * 1024.0),
        "GB" => Some(1024.0 * 1024.0 * 1024.0),
        _ => None,
    }
}

/// The kernel name as the metric tables spell it: nvprof's gpu trace may append the correlation id
/// (`vecAdd(float*) [116]`).
fn trace_kernel_name(name: &str) -> &str {
    let t = name.trim();
    if let Some(open) = t.rfind(" [")
        && t.ends_with(']')
        && t[open + 2..t.len() - 1].chars().all(|c| c.is_ascii_digit())
    {
        return &t[..open];
    }
    t
}

/// Reads `nvprof --print-gpu-trace --csv`: one row per launch or copy (copies, with no grid, are
/// skipped), a units row after the header (`s`, `us`, `KB`, …).
pub fn read_nvprof_gpu_trace(text: &str, source: &str) -> Result<Vec<TraceLaunch>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let fmt = |m: &str| Error::Format { file: source.into(), message: m.into() };
    let all: Vec<&str> = text.lines().collect();
    let Some(start) = all.iter().position(|l| l.contains("\"Grid X\"") && l.contains("\"Name\"")) else {
        return Err(fmt(
            "no gpu-trace header (Grid X, Block X, Name): expected the output of `nvprof --print-gpu-trace --csv`",
        ));
    };
    let kept: Vec<(usize, &str)> = all
        .iter()
        .enumerate()
        .skip(start)
        .filter(|(_, l)| !l.starts_with("==") && !l.trim().is_empty())
        .map(|(i, l)| (i, *l))
        .collect();
    let body: Vec<&str> = kept.iter().map(|(_, l)| *l).collect();
    let recs = read_records(&body.join("\n"), source)?;
    let header = recs.first().ok_or_else(|| fmt("empty gpu trace"))?;
    let col = |n: &str| header.iter().position(|h| h == n);
    let need = ["Grid X", "Grid Y", "Grid Z", "Block X", "Block Y", "Block Z", "Name"];
    let cols: Vec<usize> = need
        .iter()
        .map(|n| {
            col(n).ok_or_else(|| {
                fmt(&format!("no '{n}' column: expected `nvprof --print-gpu-trace --csv` output"))
            })
        })
        .collect::<Result<_>>()?;
    let name_col = cols[6];
    // The units row: no name, units under Duration / SMem.
    let units: Vec<String> = recs.get(1).cloned().unwrap_or_default();
    let has_units = units.get(name_col).is_some_and(|s| s.is_empty());
    let unit = |n: &str| -> &str {
        if has_units { col(n).and_then(|i| units.get(i)).map_or("", String::as_str) } else { "" }
    };
    let dur_col = col("Duration");
    let dur_k = match unit("Duration") {
        "" => Some(1e-9),
        u => time_scale(u),
    };
    let regs = col("Registers Per Thread");
    let smem: Vec<(usize, Option<f64>)> = ["Static SMem", "Dynamic SMem"]
        .iter()
        .filter_map(|n| col(n).map(|i| (i, bytes_scale(unit(n)))))
        .collect();
    let mut out = Vec::new();
    for (n, rec) in recs.iter().enumerate().skip(if has_units { 2 } else { 1 }) {
        let line = kept.get(n).map_or(n as u64 + 1, |(i, _)| *i as u64 + 1);
        let cell = |i: usize| rec.get(i).map(String::as_str).unwrap_or("");
        let name = cell(name_col);
        if name.is_empty() || cell(cols[0]).is_empty() {
            continue; // memory copies and sets have no grid
        }
        let mut d = [0u32; 6];
        for (j, &c) in cols[..6].iter().enumerate() {
            let v = cell(c);
            d[j] = match number(v) {
                Some(x) if x >= 1.0 && x.fract() == 0.0 && x <= f64::from(u32::MAX) => x as u32,
                _ => {
                    return Err(Error::Parse {
                        file: source.into(),
                        line,
                        column: need[j].into(),
                        message: format!(
                            "'{}' is not a launch size (a whole number ≥ 1)",
                            crate::table::shown(v)
                        ),
                    });
                }
            };
        }
        let shared: f64 = smem.iter().filter_map(|(i, k)| Some(number(cell(*i))? * (*k)?)).sum();
        out.push(TraceLaunch {
            name: trace_kernel_name(name).to_string(),
            launch: Launch {
                grid: [d[0], d[1], d[2]],
                block: [d[3], d[4], d[5]],
                registers_per_thread: regs.and_then(|i| number(cell(i))).map_or(0, count_u32),
                shared_mem_per_block: count_u32(shared.round()),
            },
            duration_s: dur_col
                .and_then(|i| number(cell(i)))
                .zip(dur_k)
                .map(|(t, k)| t * k)
                .filter(|t| *t >= 0.0),
        });
    }
    if out.is_empty() {
        return Err(fmt("no kernel launches in this gpu trace (only memory copies?)"));
    }
    Ok(out)
}

/// Per-kernel summary of a gpu trace: the first launch's shape (and how many shapes there were).
struct TraceSummary<'a> {
    launch: &'a Launch,
    shapes: usize,
    mean_time_s: Option<f64>,
}

fn summarize<'a>(trace: &'a [TraceLaunch], name: &str) -> Option<TraceSummary<'a>> {
    let mine: Vec<&TraceLaunch> = trace.iter().filter(|t| t.name == name).collect();
    let first = mine.first()?;
    let mut shapes: Vec<(&[u32; 3], &[u32; 3])> = Vec::new();
    for t in &mine {
        if !shapes.contains(&(&t.launch.grid, &t.launch.block)) {
            shapes.push((&t.launch.grid, &t.launch.block));
        }
    }
    let times: Vec<f64> = mine.iter().filter_map(|t| t.duration_s).collect();
    let mean_time_s = (!times.is_empty()).then(|| times.iter().sum::<f64>() / times.len() as f64);
    Some(TraceSummary { launch: &first.launch, shapes: shapes.len(), mean_time_s })
}

/// Kernels of a gpu trace alone: one per kernel name, with its first launch's shape and the mean time
/// over its launches, no counters.
pub fn gpu_trace_kernels(trace: &[TraceLaunch]) -> Vec<ImportedKernel> {
    let mut names: Vec<&str> = Vec::new();
    for t in trace {
        if !names.contains(&t.name.as_str()) {
            names.push(&t.name);
        }
    }
    names
        .into_iter()
        .filter_map(|n| {
            let s = summarize(trace, n)?;
            Some(ImportedKernel {
                origin: Origin::NvprofGpuTrace,
                name: n.to_string(),
                launch: Some(s.launch.clone()),
                time_s: s.mean_time_s,
                counters: BTreeMap::new(),
            })
        })
        .collect()
}

/// Gives nvprof metric-table kernels the launch shape (and, when they have none, the mean time) of the
/// same kernel in a gpu trace, joined by name. Returns one note per kernel the trace lacks or launched
/// with several shapes (the first shape is used: nvprof's metrics are averages over all launches).
pub fn join_gpu_trace(kernels: &mut [ImportedKernel], trace: &[TraceLaunch]) -> Vec<String> {
    let mut notes = Vec::new();
    for k in kernels.iter_mut() {
        match summarize(trace, &k.name) {
            Some(s) => {
                k.launch = Some(s.launch.clone());
                k.time_s = k.time_s.or(s.mean_time_s);
                if s.shapes > 1 {
                    notes.push(format!(
                        "kernel '{}' was launched with {} different shapes; the first ({:?} × {:?}) is used",
                        k.name, s.shapes, s.launch.grid, s.launch.block
                    ));
                }
            }
            None => {
                notes.push(format!("kernel '{}' is not in the gpu trace: it has no launch shape", k.name))
            }
        }
    }
    notes
}

/// The file name of the `index`-th (from 0) kernel's profile: `001-<name>.json`, the name reduced to ASCII
/// letters, digits and `_` (at most 60), so templated C++ names make portable file names; the number keeps
/// kernels whose names reduce alike apart.
pub fn profile_file_name(index: usize, kernel_name: &str) -> String {
    let safe: String = kernel_name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' })
        .take(60)
        .collect();
    format!("{:03}-{safe}.json", index + 1)
}

/// A table of imported kernels: `kernel`, `time_s` (nan when unknown), the canonical counters, the ten
/// model inputs as totals, and — when the time is known — as rates (`<input>_per_s`).
pub fn kernels_table(kernels: &[ImportedKernel], source: &str) -> Table {
    let mut columns: Vec<String> = vec!["time_s".into()];
    columns.extend(CANONICAL_COUNTERS.iter().map(|(c, _)| c.to_string()));
    columns.extend(MODEL_INPUTS.iter().map(|(i, _)| i.to_string()));
    columns.extend(MODEL_INPUTS.iter().map(|(i, _)| format!("{i}_per_s")));
    let mut data = Array2::from_elem((kernels.len(), columns.len()), f64::NAN);
    for (r, k) in kernels.iter().enumerate() {
        data[[r, 0]] = k.time_s.unwrap_or(f64::NAN);
        for (j, (c, _)) in CANONICAL_COUNTERS.iter().enumerate() {
            data[[r, 1 + j]] = k.counters.get(*c).copied().unwrap_or(f64::NAN);
        }
        let base = 1 + CANONICAL_COUNTERS.len();
        for (j, (_, parts)) in MODEL_INPUTS.iter().enumerate() {
            let total: f64 = parts.iter().map(|p| k.counters.get(*p).copied().unwrap_or(f64::NAN)).sum();
            data[[r, base + j]] = total;
            data[[r, base + MODEL_INPUTS.len() + j]] = k.time_s.map_or(f64::NAN, |t| total / t);
        }
    }
    Table {
        source: source.to_string(),
        group_column: GROUP_COLUMN.into(),
        groups: kernels.iter().map(|k| k.name.clone()).collect(),
        text: vec![],
        columns,
        data,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_file_names_are_portable_and_numbered() {
        assert_eq!(
            profile_file_name(0, "void f<int, 2>(float*, int)"),
            "001-void_f_int__2__float___int_.json"
        );
        assert_eq!(profile_file_name(41, &"k".repeat(100)), format!("042-{}.json", "k".repeat(60)));
    }

    // Shape of `ncu --csv --page raw` (Nsight Compute 2023+): header, units row, one row per launch.
    const NCU: &str = r#"==PROF== Connected to process 1234
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","gpu__time_duration.sum","launch__registers_per_thread","launch__shared_mem_per_block_static","launch__shared_mem_per_block_dynamic","smsp__inst_executed.sum","smsp__inst_executed_op_global_ld.sum","l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum","l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum","l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum","l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"
"","","","","","","","","","","","usecond","register/thread","byte/block","byte/block","inst","inst","sector","sector","",""
"0","1234","vecadd","node1","vecAdd(float*, float*, float*, int)","1","7","(256, 1, 1)","(4096, 1, 1)","0","8.6","12.5","16","1,024","0","1,310,720","65,536","1,000","131,072","3","4"
"#;

    #[test]
    fn ncu_raw_csv_becomes_a_profile() {
        let k = read_ncu(NCU, "t.csv").unwrap();
        assert_eq!(k.len(), 1);
        let p = k[0].to_profile("t.csv", None).unwrap();
        assert_eq!(p.launch.grid, [4096, 1, 1]);
        assert_eq!(p.launch.block, [256, 1, 1]);
        assert_eq!(p.launch.registers_per_thread, 16);
        assert_eq!(p.launch.shared_mem_per_block, 1024);
        assert!((p.measured.time_s.unwrap() - 12.5e-6).abs() < 1e-15);
        assert_eq!(p.counter("inst_executed"), Some(1_310_720.0));
        assert_eq!(p.counter("l1_shared_bank_conflict"), Some(7.0));
        // G_load = gld_request + hits + misses = 65536 + 1000 + 131072.
        assert_eq!(p.model_input_totals()[0], ("G_load", Some(197_608.0)));
    }

    #[test]
    fn ncu_details_page_is_refused_with_the_fix() {
        let e = read_ncu("\"ID\",\"Section Name\",\"Metric Name\"\n", "d.csv").unwrap_err().to_string();
        assert!(e.contains("--page raw"), "{e}");
    }

    const NVPROF: &str = r#"==1234== NVPROF is profiling process 1234, command: ./k
==1234== Profiling result:
==1234== Event result:
"Device","Kernel","Invocations","Event Name","Min","Max","Avg","Total"
"GeForce GTX 580 (0)","kern(float*)",2,"gld_request",100,120,110,220
"GeForce GTX 580 (0)","kern(float*)",2,"divergent_branch",4,4,4,8
"GeForce GTX 580 (0)","kern(float*)",2,"warps_launched",64,64,64,128
"#;

    #[test]
    fn nvprof_events_map_to_canonical_counters() {
        let (k, ignored) = read_nvprof(NVPROF, "n.csv").unwrap();
        assert_eq!(k.len(), 1);
        assert_eq!(k[0].counters.get("gld_request"), Some(&110.0));
        assert_eq!(k[0].counters.get("divergent_branch"), Some(&4.0));
        assert_eq!(ignored, ["warps_launched"]);
        let e = k[0].to_profile("n.csv", None).unwrap_err().to_string();
        assert!(e.contains("no launch configuration"), "{e}");
        let launch =
            Launch { grid: [10, 1, 1], block: [128, 1, 1], registers_per_thread: 0, shared_mem_per_block: 0 };
        assert_eq!(k[0].to_profile("n.csv", Some(launch)).unwrap().launch.blocks(), 10);
    }

    // HAND-WRITTEN (not a capture): nvprof's metric-table layout, with the thread-level instruction
    // metrics (values chosen to divide by 32 exactly).
    const NVPROF_THREAD_METRICS: &str = r#"==9== Metric result:
"Device","Kernel","Invocations","Metric Name","Metric Description","Min","Max","Avg"
"GeForce GTX 1080 Ti (0)","k(float*)",1,"inst_bit_convert","Bit-Convert Instructions",3200,3200,3200
"GeForce GTX 1080 Ti (0)","k(float*)",1,"inst_fp_64","FP Instructions(Double)",6400,6400,6400
"GeForce GTX 1080 Ti (0)","k(float*)",1,"inst_executed","Instructions Executed",500,500,500
"#;

    /// nvprof counts conversions and FP64 per thread; the canonical counters are warp instructions.
    #[test]
    fn nvprof_thread_level_metrics_become_warp_instructions() {
        let (k, ignored) = read_nvprof(NVPROF_THREAD_METRICS, "n.csv").unwrap();
        assert!(ignored.is_empty(), "{ignored:?}");
        assert_eq!(k[0].counters.get("inst_bit_convert"), Some(&100.0));
        assert_eq!(k[0].counters.get("inst_fp_64"), Some(&200.0));
        assert_eq!(k[0].counters.get("inst_executed"), Some(&500.0));
    }

    #[test]
    fn ncu_units_are_scaled_back_to_base_units() {
        assert_eq!(count_scale("Kbyte"), 1e3);
        assert_eq!(count_scale("Mbyte"), 1e6);
        assert_eq!(count_scale("Gbyte"), 1e9);
        assert_eq!(count_scale("Ksector"), 1e3);
        assert_eq!(count_scale("Minst"), 1e6);
        assert_eq!(count_scale("Kbyte/block"), 1e3);
        for base in ["", "byte", "inst", "sector", "byte/block", "register/thread", "%", "cycle", "K"] {
            assert_eq!(count_scale(base), 1.0, "{base}");
        }
    }

    /// With --events and --metrics, nvprof prints two tables whose Avg columns differ by one.
    #[test]
    fn nvprof_reads_each_table_with_its_own_header() {
        let text = "==1== Event result:\n\
\"Device\",\"Kernel\",\"Invocations\",\"Event Name\",\"Min\",\"Max\",\"Avg\",\"Total\"\n\
\"D (0)\",\"k\",2,\"gld_request\",10,30,20,40\n\
==1== Metric result:\n\
\"Device\",\"Kernel\",\"Invocations\",\"Metric Name\",\"Metric Description\",\"Min\",\"Max\",\"Avg\"\n\
\"D (0)\",\"k\",2,\"gst_transactions\",\"Global Store Transactions\",5,9,7\n";
        let (k, ignored) = read_nvprof(text, "n.csv").unwrap();
        assert_eq!(k[0].counters.get("gld_request"), Some(&20.0));
        assert_eq!(k[0].counters.get("global_store_transaction"), Some(&7.0));
        assert!(ignored.is_empty(), "{ignored:?}");
    }

    // HAND-WRITTEN (not a capture): the long layout of an older `ncu --csv` export (the details page, one
    // row per launch and metric) without Block Size / Grid Size columns; the shape is in the Launch
    // Statistics metrics.
    const NCU_LONG_OLD: &str = "==PROF== Disconnected from process 99\n\
\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Kernel Time\",\"Context\",\"Stream\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n\
\"0\",\"99\",\"app\",\"n\",\"k1(float*)\",\"2020-Mar-02 10:00:00\",\"1\",\"7\",\"Command line profiler metrics\",\"gpu__time_duration.sum\",\"usecond\",\"3.50\"\n\
\"0\",\"99\",\"app\",\"n\",\"k1(float*)\",\"2020-Mar-02 10:00:00\",\"1\",\"7\",\"Command line profiler metrics\",\"launch__block_size\",\"\",\"256\"\n\
\"0\",\"99\",\"app\",\"n\",\"k1(float*)\",\"2020-Mar-02 10:00:00\",\"1\",\"7\",\"Command line profiler metrics\",\"launch__grid_size\",\"\",\"1,024\"\n\
\"0\",\"99\",\"app\",\"n\",\"k1(float*)\",\"2020-Mar-02 10:00:00\",\"1\",\"7\",\"Command line profiler metrics\",\"launch__registers_per_thread\",\"register/thread\",\"32\"\n\
\"0\",\"99\",\"app\",\"n\",\"k1(float*)\",\"2020-Mar-02 10:00:00\",\"1\",\"7\",\"Command line profiler metrics\",\"smsp__inst_executed.sum\",\"Minst\",\"1.50\"\n\
\"1\",\"99\",\"app\",\"n\",\"k2(int)\",\"2020-Mar-02 10:00:01\",\"1\",\"7\",\"Command line profiler metrics\",\"launch__block_size\",\"\",\"128\"\n\
\"1\",\"99\",\"app\",\"n\",\"k2(int)\",\"2020-Mar-02 10:00:01\",\"1\",\"7\",\"Command line profiler metrics\",\"launch__grid_size\",\"\",\"10\"\n\
\"1\",\"99\",\"app\",\"n\",\"k2(int)\",\"2020-Mar-02 10:00:01\",\"1\",\"7\",\"Command line profiler metrics\",\"smsp__inst_executed.sum\",\"inst\",\"640\"\n";

    #[test]
    fn old_ncu_long_layout_takes_the_shape_from_launch_metrics() {
        let k = read_ncu(NCU_LONG_OLD, "old.csv").unwrap();
        assert_eq!(k.len(), 2);
        let p = k[0].to_profile("old.csv", None).unwrap();
        assert_eq!(p.name, "k1(float*)");
        assert_eq!((p.launch.blocks(), p.launch.threads_per_block()), (1024, 256));
        assert_eq!(p.launch.registers_per_thread, 32);
        assert_eq!(p.counter("inst_executed"), Some(1_500_000.0));
        assert!((p.measured.time_s.unwrap() - 3.5e-6).abs() < 1e-15);
        let q = k[1].to_profile("old.csv", None).unwrap();
        assert_eq!((q.launch.blocks(), q.launch.threads_per_block()), (10, 128));
        assert_eq!(q.counter("inst_executed"), Some(640.0));
    }

    /// Without any shape the error names ncu's own remedy, not nvprof's.
    #[test]
    fn ncu_without_a_shape_says_what_to_profile_again() {
        let no_shape: String =
            NCU_LONG_OLD.lines().filter(|l| !l.contains("launch__")).collect::<Vec<_>>().join("\n");
        let k = read_ncu(&no_shape, "old.csv").unwrap();
        let e = k[0].to_profile("old.csv", None).unwrap_err().to_string();
        assert!(e.contains("launch__grid_size") && e.contains("--grid"), "{e}");
        assert!(!e.contains("nvprof"), "{e}");
    }

    // HAND-WRITTEN (not a capture): the layout of `nvprof --print-gpu-trace --csv` — log lines, header,
    // units row, copies without a grid, kernels with the correlation id after the name.
    const GPU_TRACE: &str = "==7== NVPROF is profiling process 7, command: ./k\n\
==7== Profiling result:\n\
\"Start\",\"Duration\",\"Grid X\",\"Grid Y\",\"Grid Z\",\"Block X\",\"Block Y\",\"Block Z\",\"Registers Per Thread\",\"Static SMem\",\"Dynamic SMem\",\"Size\",\"Throughput\",\"SrcMemType\",\"DstMemType\",\"Device\",\"Context\",\"Stream\",\"Name\",\"Correlation_ID\"\n\
s,us,,,,,,,,KB,KB,MB,GB/s,,,,,,,\n\
0.10,1.5,,,,,,,,,,3.81,2.47,Pageable,Device,\"GeForce GTX 1080 (0)\",1,7,\"[CUDA memcpy HtoD]\",2\n\
0.20,3.0,80,2,1,256,1,1,16,1,0.5,,,,,\"GeForce GTX 1080 (0)\",1,7,\"kern(float*) [116]\",116\n\
0.30,5.0,80,2,1,256,1,1,16,1,0.5,,,,,\"GeForce GTX 1080 (0)\",1,7,\"kern(float*) [120]\",120\n\
0.40,2.0,4,1,1,32,1,1,8,0,0,,,,,\"GeForce GTX 1080 (0)\",1,7,\"other(int)\",124\n";

    #[test]
    fn gpu_trace_gives_shapes_and_times_joined_by_kernel_name() {
        let trace = read_nvprof_gpu_trace(GPU_TRACE, "trace.csv").unwrap();
        assert_eq!(trace.len(), 3, "the copy is skipped");
        assert_eq!(trace[0].name, "kern(float*)");
        assert_eq!(trace[0].launch.shared_mem_per_block, 1536);
        let (mut k, _) = read_nvprof(NVPROF, "n.csv").unwrap();
        let notes = join_gpu_trace(&mut k, &trace);
        assert!(notes.is_empty(), "{notes:?}");
        let p = k[0].to_profile("n.csv", None).unwrap();
        assert_eq!(p.launch.grid, [80, 2, 1]);
        assert_eq!(p.launch.registers_per_thread, 16);
        assert!((p.measured.time_s.unwrap() - 4e-6).abs() < 1e-15, "mean of 3 us and 5 us");
        // Alone, the trace gives per-kernel times and shapes.
        let alone = gpu_trace_kernels(&trace);
        assert_eq!(alone.len(), 2);
        assert_eq!(alone[1].name, "other(int)");
        assert!((alone[1].time_s.unwrap() - 2e-6).abs() < 1e-15);
        // A metric table refuses to be read as a gpu trace, and the other way round, with the fix.
        let e = read_nvprof(GPU_TRACE, "trace.csv").unwrap_err().to_string();
        assert!(e.contains("--gpu-trace"), "{e}");
        let e = read_nvprof_gpu_trace(NVPROF, "n.csv").unwrap_err().to_string();
        assert!(e.contains("--print-gpu-trace"), "{e}");
    }

    #[test]
    fn a_kernel_missing_from_the_gpu_trace_is_noted() {
        let trace = read_nvprof_gpu_trace(GPU_TRACE, "trace.csv").unwrap();
        let mut k = vec![ImportedKernel {
            origin: Origin::Nvprof,
            name: "absent".into(),
            launch: None,
            time_s: None,
            counters: BTreeMap::new(),
        }];
        let notes = join_gpu_trace(&mut k, &trace);
        assert!(notes[0].contains("not in the gpu trace"), "{notes:?}");
        let e = k[0].to_profile("n.csv", None).unwrap_err().to_string();
        assert!(e.contains("--gpu-trace"), "{e}");
    }

    #[test]
    fn table_has_inputs_and_rates() {
        let k = read_ncu(NCU, "t.csv").unwrap();
        let t = kernels_table(&k, "t.csv");
        assert_eq!(t.column("G_load").unwrap()[0], 197_608.0);
        assert!((t.column("exec_inst_per_s").unwrap()[0] - 1_310_720.0 / 12.5e-6).abs() < 1.0);
        assert!(t.column("T_hits").unwrap()[0].is_nan());
    }
}

/// Reads the rows written by gpumodel's injection library (`collect --kernel-totals`): `index, name,
/// grid_x…z, block_x…z, registers_per_thread, shared_mem_bytes, duration_s, <canonical counters…>`.
pub fn read_inject_rows(text: &str, source: &str) -> Result<Vec<ImportedKernel>> {
    let recs = read_records(text, source)?;
    let fmt = |m: &str| Error::Format { file: source.into(), message: m.into() };
    let header = recs
        .first()
        .ok_or_else(|| fmt("empty: the program launched no kernel, or CUPTI failed (see its stderr)"))?;
    let col = |n: &str| header.iter().position(|h| h == n);
    let need = ["name", "grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "duration_s"];
    if need.iter().any(|n| col(n).is_none()) {
        return Err(fmt("not a gpumodel-inject kernel table (missing launch columns)"));
    }
    let num = |rec: &Vec<String>, n: &str| col(n).and_then(|i| rec.get(i)).and_then(|s| number(s));
    let mut out = Vec::new();
    for rec in recs.iter().skip(1) {
        let u = |n: &str| num(rec, n).map_or(0, |v| v as u32);
        let counters: BTreeMap<String, f64> =
            CANONICAL_COUNTERS.iter().filter_map(|(c, _)| num(rec, c).map(|v| (c.to_string(), v))).collect();
        let grid = [u("grid_x"), u("grid_y"), u("grid_z")];
        let block = [u("block_x"), u("block_y"), u("block_z")];
        let launch = (grid.iter().all(|&g| g > 0) && block.iter().all(|&b| b > 0)).then_some(Launch {
            grid,
            block,
            registers_per_thread: u("registers_per_thread"),
            shared_mem_per_block: u("shared_mem_bytes"),
        });
        let name = col("name").and_then(|i| rec.get(i)).cloned().unwrap_or_default();
        out.push(ImportedKernel {
            origin: Origin::Inject,
            name,
            launch,
            time_s: num(rec, "duration_s"),
            counters,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod inject_tests {
    use super::*;

    #[test]
    fn inject_rows_become_profiles() {
        let csv = "index,name,grid_x,grid_y,grid_z,block_x,block_y,block_z,registers_per_thread,shared_mem_bytes,duration_s,inst_executed,branch\n\
                   0,\"k(int)\",8,1,1,128,1,1,24,512,0.000002,1000,nan\n";
        let k = read_inject_rows(csv, "x.csv").unwrap();
        let p = k[0].to_profile("x.csv", None).unwrap();
        assert_eq!(p.name, "k(int)");
        assert_eq!(p.launch.blocks(), 8);
        assert_eq!(p.launch.registers_per_thread, 24);
        assert_eq!(p.counter("inst_executed"), Some(1000.0));
        assert_eq!(p.counter("branch"), None);
        assert_eq!(p.measured.time_s, Some(0.000002));
    }
}
