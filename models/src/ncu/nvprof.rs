//! nvprof's CSV exports: the metric and event tables (`nvprof --csv --metrics …` / `--events …`: `==`
//! log lines, then rows of `Device, Kernel, Invocations, Metric Name|Event Name, [Metric Description,]
//! Min, Max, Avg`, one per kernel and metric; with both `--events` and `--metrics`, two tables, each with
//! its own header) and the gpu trace (`nvprof --print-gpu-trace --csv`: launch shapes and durations per
//! launch), joined by kernel name. Metric values go through [`super::metrics::from_nvprof`] with the
//! compute capability of the `Device` column.

use super::common::{ImportedKernel, MetricUse, Origin, count_u32, number, read_records, time_scale, value};
use super::metrics::{Capability, from_nvprof};
use crate::error::{Error, Result};
use crate::profile::Launch;
use std::collections::BTreeMap;

/// Reads `nvprof --csv --metrics …` or `--events …` output (per-kernel averages over invocations): the
/// kernels with their canonical counters, and which metrics were mapped or dropped.
pub fn read_nvprof(text: &str, source: &str) -> Result<(Vec<ImportedKernel>, MetricUse)> {
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
    // Line numbers in the file of the kept lines, for errors.
    let kept: Vec<(usize, &str)> =
        text.lines().enumerate().filter(|(_, l)| !l.starts_with("==") && !l.trim().is_empty()).collect();
    let start = kept
        .iter()
        .position(|(_, l)| {
            l.contains("\"Kernel\"") && (l.contains("\"Metric Name\"") || l.contains("\"Event Name\""))
        })
        .unwrap_or(0);
    let body: Vec<&str> = kept[start..].iter().map(|(_, l)| *l).collect();
    let recs = read_records(&body.join("\n"), source)?;
    let fmt = |m: &str| Error::Format { file: source.into(), message: m.into() };
    let header =
        recs.first().ok_or_else(|| fmt("empty file: expected the output of `nvprof --csv --metrics …`"))?;
    // (Device, Kernel, Metric/Event Name, Avg) column indices of a header row. nvprof run with both
    // --events and --metrics prints two tables, each with its own header: the metric table has an extra
    // "Metric Description" column, so the indices are taken again at every header row.
    let columns = |h: &[String]| {
        let col = |name: &str| h.iter().position(|x| x == name);
        match (col("Kernel"), col("Metric Name").or(col("Event Name")), col("Avg")) {
            (Some(k), Some(m), Some(a)) => Some((col("Device"), k, m, a)),
            _ => None,
        }
    };
    let Some(mut cols) = columns(header) else {
        return Err(fmt(
            "expected columns Kernel, Metric Name (or Event Name) and Avg: the output of `nvprof --csv --metrics …` or `--events …`",
        ));
    };
    // Per kernel (in order of appearance): its device and metric values.
    let mut order: Vec<(String, Option<String>, BTreeMap<String, f64>)> = Vec::new();
    for (n, rec) in recs.iter().enumerate().skip(1) {
        if let Some(next) = columns(rec) {
            cols = next;
            continue;
        }
        let (device, kernel, metric, avg) = cols;
        let (Some(k), Some(m), Some(a)) = (rec.get(kernel), rec.get(metric), rec.get(avg)) else { continue };
        let line = kept.get(start + n).map_or(n as u64 + 1, |(i, _)| *i as u64 + 1);
        let v = value(a).ok_or_else(|| Error::Parse {
            file: source.into(),
            line,
            column: format!("Avg of {m}"),
            message: format!("'{}' is not a number", crate::table::shown(a)),
        })?;
        if !(0.0..=crate::profile::MAX_COUNTER_TOTAL).contains(&v) {
            return Err(Error::Parse {
                file: source.into(),
                line,
                column: format!("Avg of {m}"),
                message: format!(
                    "{} is outside 0–1e18, the range of a launch's counter",
                    super::stream::shown(v)
                ),
            });
        }
        let i = match order.iter().position(|x| &x.0 == k) {
            Some(i) => i,
            None => {
                let dev = device.and_then(|d| rec.get(d)).cloned();
                order.push((k.clone(), dev, BTreeMap::new()));
                order.len() - 1
            }
        };
        order[i].2.insert(m.clone(), v);
    }
    let mut use_ = MetricUse::default();
    let mut kernels = Vec::new();
    for (name, device, metrics) in order {
        let cc = device.as_deref().and_then(Capability::of_device);
        let mapped = from_nvprof(&metrics, cc)
            .map_err(|e| Error::Invalid(format!("{source}: kernel '{name}': {}", e.0)))?;
        use_.record(metrics.keys(), &mapped.used);
        kernels.push(ImportedKernel {
            origin: Origin::Nvprof,
            name,
            launch: None,
            time_s: None,
            counters: mapped.counters,
            code: mapped.code,
            device,
            capability: None,
            core_mhz: None,
        });
    }
    if kernels.iter().all(|k| k.counters.is_empty()) {
        return Err(fmt(
            "no metric the models read: profile with `nvprof --csv --metrics all` (see `gpumodel import --help`)",
        ));
    }
    Ok((kernels, use_))
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
                code: BTreeMap::new(),
                device: None,
                capability: None,
                core_mhz: None,
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
