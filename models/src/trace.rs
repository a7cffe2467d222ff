//! The collector's trace: one CSV row per power sample (~60 Hz) — `t_s, dt_s, power_w, core_mhz,
//! mem_mhz, <counter rates…>, kernel` — and a JSON sidecar (same path, `.json`) with the GPU, the
//! sampling period, the counter names, the command, the kernel launches seen and, at the end, the run's
//! summary.
//!
//! Rows are streamed and flushed as they come, and the sidecar is written at the start (status
//! `running`) and replaced atomically at the end, so a crash or Ctrl-C leaves a readable trace: complete
//! rows and a sidecar saying the run did not finish. Counter values are rates (events per second of the
//! sample interval), as the paper normalizes them; an unknown value is written `nan`.
//!
//! [`merge_traces`] joins traces written by many hosts and GPUs (`srun gpumodel collect …`) into one
//! table with `host` and `device` columns.
//!
//! Application replay (`gpumodel collect --pm-passes all`) runs the program once per PM-sampling group
//! and writes one trace per pass; [`read_rows`] reads them back and [`align_rates`] puts a pass's
//! counter rates on the time axis of another (time since the program started), so the collector can
//! merge the passes into one trace whose sidecar's [`Replay`] says which counter came from which run.

use crate::error::{Error, Result};
use crate::table::format_number;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Version tag of the trace format.
pub const TRACE_FORMAT: &str = "gpumodel-trace/1";

/// Fixed columns before the counter rates.
pub const FIXED_COLUMNS: &[&str] = &["t_s", "dt_s", "power_w", "core_mhz", "mem_mhz"];

/// How the run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Still running (or crashed before it could say otherwise).
    Running,
    /// The program ran to the end.
    Complete,
    /// Stopped by Ctrl-C / SIGTERM.
    Interrupted,
    /// The program or a sampler failed; the message says how.
    Failed(String),
}

/// One kernel launch seen during the run (from the range profiler, when it ran).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchRecord {
    pub name: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub t_start_s: f64,
    pub t_end_s: f64,
}

/// End-of-run figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TraceSummary {
    /// Rows written.
    pub samples: u64,
    /// From the first program start to the last program exit, seconds.
    pub duration_s: f64,
    /// Mean power over the rows, watts.
    pub mean_power_w: f64,
    /// Energy of the run, joules.
    pub energy_j: f64,
    /// `"energy_counter"` (NVML total-energy counter, end − start) or `"power_integral"` (Σ P·dt).
    pub energy_source: String,
    /// Σ P·dt over the rows, to check the energy counter against.
    pub power_integral_j: f64,
    /// Idle power before the run with only the power sampler running, watts.
    pub idle_power_w: Option<f64>,
    /// Idle power with the counter profiler also running minus `idle_power_w`: the profiler's own power.
    pub profiler_overhead_w: Option<f64>,
    /// CPU time of the sampler threads, seconds.
    pub sampler_cpu_s: Option<f64>,
    /// How many times the program ran (short programs are repeated up to `--min-seconds`).
    pub repetitions: u32,
    /// Exit code of the last run of the program (None when killed by a signal).
    pub exit_code: Option<i32>,
    /// Achieved sample rate, Hz.
    pub achieved_rate_hz: f64,
}

/// The JSON sidecar.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceMeta {
    pub format: String,
    /// Host name (for merging traces from many nodes).
    pub host: String,
    /// GPU index on that host (the CUDA ordinal the collector was given).
    pub device: u32,
    /// PCI bus id of that GPU (NVML's spelling, `00000000:65:00.0`): the physical board whose power and
    /// counters were read, whatever the CUDA and NVML numberings; absent for scripted sources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_bus_id: Option<String>,
    /// GPU name as the driver reports it.
    pub gpu: String,
    /// Chip (e.g. "GA102"), when known.
    pub chip: Option<String>,
    pub compute_capability: Option<(u32, u32)>,
    pub driver: Option<String>,
    /// Which power reading was used (`instant`, `average`, `scripted`).
    pub power_field: String,
    /// Whether the energy counter was read.
    pub energy_counter: bool,
    /// Requested sampling period, seconds.
    pub sample_period_s: f64,
    /// The counter source, when counters were sampled.
    pub counter_source: Option<String>,
    /// Counter-rate columns (after the fixed ones), in order; unit: events per second.
    pub counters: Vec<String>,
    /// The program and its arguments.
    pub command: Vec<String>,
    /// The value of the `kernel` column (the program's file name).
    pub kernel: String,
    #[serde(default)]
    pub launches: Vec<LaunchRecord>,
    pub status: RunStatus,
    #[serde(default)]
    pub summary: Option<TraceSummary>,
    /// Warnings met during the run (a sampler that stopped, …).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Present on a trace merged from application-replay passes (`collect --pm-passes all`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<Replay>,
}

/// How a merged multi-pass trace was made: the program ran once per PM-sampling group (application
/// replay, as Nsight Compute's `--replay-mode application`). The passes are separate runs, so their
/// counters describe different executions of the same program: run-to-run variation enters the merged
/// rows, and the spreads below show how large it was for run time and power.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Replay {
    /// Always `"application"`.
    pub mode: String,
    /// One line for readers of the sidecar.
    pub note: String,
    /// The passes in order; pass 1 gives the rows' time axis, power and clocks.
    pub passes: Vec<PassRecord>,
    /// Program run time across the passes that ran to the end.
    pub duration_spread: Option<Spread>,
    /// Mean power across the passes that ran to the end.
    pub mean_power_spread: Option<Spread>,
}

/// One application-replay pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassRecord {
    /// 1-based pass number (1 = the `[pm]` group).
    pub pass: usize,
    /// The pass's own trace (file name, next to the merged one), with its power series.
    pub trace: String,
    /// Counter columns of the merged trace that come from this pass.
    pub counters: Vec<String>,
    /// The counter source of this pass.
    pub counter_source: Option<String>,
    /// How this pass ended.
    pub status: RunStatus,
    /// The pass's program run time (first start to last exit), seconds.
    pub duration_s: Option<f64>,
    /// The pass's mean power, watts.
    pub mean_power_w: Option<f64>,
    /// The pass's energy, joules.
    pub energy_j: Option<f64>,
    /// Program runs in this pass.
    pub repetitions: u32,
    /// The pass's idle power and its counter group's own overhead, watts.
    pub idle_power_w: Option<f64>,
    pub profiler_overhead_w: Option<f64>,
}

/// Spread of one figure across passes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    /// (max − min) / mean, percent.
    pub range_pct: f64,
}

impl Spread {
    /// The spread of finite `values`; `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Spread> {
        let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        let min = v.iter().copied().fold(f64::INFINITY, f64::min);
        let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let range_pct = if mean != 0.0 { (max - min) / mean.abs() * 100.0 } else { 0.0 };
        Some(Spread { min, max, mean, range_pct })
    }
}

/// One CSV row.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceRow {
    pub t_s: f64,
    pub dt_s: f64,
    pub power_w: f64,
    /// NaN when unknown.
    pub core_mhz: f64,
    /// NaN when unknown.
    pub mem_mhz: f64,
    /// One rate per [`TraceMeta::counters`] entry; NaN when unknown.
    pub counters: Vec<f64>,
}

/// The sidecar's path: the trace path with extension `.json`.
pub fn sidecar_path(csv: &Path) -> PathBuf {
    csv.with_extension("json")
}

fn cell(x: f64) -> String {
    if x.is_finite() { format_number(x) } else { "nan".into() }
}

/// Writes a trace as it is measured.
pub struct TraceWriter {
    path: PathBuf,
    out: std::io::BufWriter<std::fs::File>,
    n_counters: usize,
    kernel: String,
    rows: u64,
}

fn write_meta(path: &Path, meta: &TraceMeta) -> Result<()> {
    let text =
        serde_json::to_string_pretty(meta).map_err(|e| Error::Invalid(format!("trace metadata: {e}")))?;
    crate::atomic::write_atomic(&sidecar_path(path), (text + "\n").as_bytes())
}

impl TraceWriter {
    /// Creates the CSV (header written and flushed) and the sidecar with status `running`.
    /// Refuses to overwrite an existing trace, so earlier measurements are never lost.
    pub fn create(path: &Path, meta: &TraceMeta) -> Result<TraceWriter> {
        let file = std::fs::OpenOptions::new().write(true).create_new(true).open(path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                Error::Invalid(format!(
                    "{}: already exists; choose another --out or remove it (nothing was overwritten)",
                    path.display()
                ))
            } else {
                Error::io(path, e)
            }
        })?;
        let mut out = std::io::BufWriter::new(file);
        let mut header: Vec<&str> = FIXED_COLUMNS.to_vec();
        header.extend(meta.counters.iter().map(String::as_str));
        header.push(crate::table::GROUP_COLUMN);
        writeln!(out, "{}", header.join(",")).and_then(|_| out.flush()).map_err(|e| Error::io(path, e))?;
        write_meta(path, meta)?;
        Ok(TraceWriter {
            path: path.to_path_buf(),
            out,
            n_counters: meta.counters.len(),
            kernel: meta.kernel.replace([',', '"', '\n'], "_"),
            rows: 0,
        })
    }

    /// Appends rows and flushes them to disk.
    pub fn write(&mut self, rows: &[TraceRow]) -> Result<()> {
        for r in rows {
            let mut cells =
                vec![cell(r.t_s), cell(r.dt_s), cell(r.power_w), cell(r.core_mhz), cell(r.mem_mhz)];
            for j in 0..self.n_counters {
                cells.push(cell(r.counters.get(j).copied().unwrap_or(f64::NAN)));
            }
            cells.push(self.kernel.clone());
            writeln!(self.out, "{}", cells.join(",")).map_err(|e| Error::io(&self.path, e))?;
            self.rows += 1;
        }
        self.out.flush().map_err(|e| Error::io(&self.path, e))
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Flushes the rows and replaces the sidecar with the final metadata.
    pub fn finish(mut self, meta: &TraceMeta) -> Result<()> {
        self.out.flush().map_err(|e| Error::io(&self.path, e))?;
        write_meta(&self.path, meta)
    }

    /// Rewrites the sidecar without closing the trace (e.g. to record a launch).
    pub fn update_meta(&self, meta: &TraceMeta) -> Result<()> {
        write_meta(&self.path, meta)
    }
}

/// Reads a trace's sidecar.
pub fn read_meta(csv: &Path) -> Result<TraceMeta> {
    let p = sidecar_path(csv);
    let text = std::fs::read_to_string(&p).map_err(|e| Error::io(&p, e))?;
    serde_json::from_str(&text).map_err(|e| Error::Document {
        file: p.display().to_string(),
        message: format!("not a gpumodel trace sidecar: {e}"),
    })
}

/// Reads a trace's rows back (counter columns in the order of `meta.counters`; `nan` cells and columns
/// the file lacks are NaN). A trace cut by a crash may end in a partial line: the complete rows before
/// it are returned.
pub fn read_rows(csv_path: &Path, meta: &TraceMeta) -> Result<Vec<TraceRow>> {
    let file = csv_path.display().to_string();
    let mut r = csv::ReaderBuilder::new()
        .flexible(false)
        .from_path(csv_path)
        .map_err(|e| Error::Format { file: file.clone(), message: e.to_string() })?;
    let header: Vec<String> =
        r.headers().map_err(|e| crate::table::csv_error(&file, e))?.iter().map(String::from).collect();
    let pos = |c: &str| header.iter().position(|h| h == c);
    let fixed: Vec<Option<usize>> = FIXED_COLUMNS.iter().map(|c| pos(c)).collect();
    if fixed[0].is_none() {
        return Err(Error::Format { file, message: "not a gpumodel trace: no t_s column".into() });
    }
    let counters: Vec<Option<usize>> = meta.counters.iter().map(|c| pos(c)).collect();
    let num = |rec: &csv::StringRecord, i: Option<usize>| -> f64 {
        i.and_then(|i| rec.get(i)).and_then(|s| s.trim().parse::<f64>().ok()).unwrap_or(f64::NAN)
    };
    let mut rows = Vec::new();
    for rec in r.records() {
        let Ok(rec) = rec else { break };
        rows.push(TraceRow {
            t_s: num(&rec, fixed[0]),
            dt_s: num(&rec, fixed[1]),
            power_w: num(&rec, fixed[2]),
            core_mhz: num(&rec, fixed[3]),
            mem_mhz: num(&rec, fixed[4]),
            counters: counters.iter().map(|&i| num(&rec, i)).collect(),
        });
    }
    Ok(rows)
}

/// Puts counter columns `cols` of `source` rows on the intervals of `target` rows: each target row
/// covers `(t_s − dt_s, t_s]` and gets, per column, the mean of the source rows' values weighted by how
/// much of each source interval overlaps it (NaN source values are left out; NaN where nothing
/// overlaps). Both row lists are in time order, on the same axis (time since the program started).
pub fn align_rates(target: &[TraceRow], source: &[TraceRow], cols: &[usize]) -> Vec<Vec<f64>> {
    let mut out = Vec::with_capacity(target.len());
    let mut first = 0;
    for tr in target {
        let (a, b) = (tr.t_s - tr.dt_s, tr.t_s);
        // Source rows ending at or before `a` cannot overlap this or any later target row.
        while first < source.len() && source[first].t_s <= a {
            first += 1;
        }
        let mut means = vec![crate::stats::OverlapMean::default(); cols.len()];
        for sr in &source[first..] {
            let (sa, sb) = (sr.t_s - sr.dt_s, sr.t_s);
            if sa >= b {
                break;
            }
            for (m, &c) in means.iter_mut().zip(cols) {
                m.add(sr.counters.get(c).copied().unwrap_or(f64::NAN), (sa, sb), (a, b));
            }
        }
        out.push(means.iter().map(|m| m.mean().unwrap_or(f64::NAN)).collect());
    }
    out
}

/// What [`merge_traces`] did (what `gpumodel merge` prints).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MergeReport {
    /// The merged file as the caller named it.
    pub out: String,
    pub inputs: usize,
    pub rows: u64,
    pub columns: Vec<String>,
}

impl crate::export::Export for MergeReport {
    const COMMAND: &'static str = "merge";

    /// One row: the merged file, its rows, traces and columns.
    fn sections(&self) -> Vec<crate::export::Section> {
        use crate::export::{Cell, Column, Section};
        let mut s = Section::new(vec![
            Column::new("out", "merged file"),
            Column::new("rows", "rows"),
            Column::new("inputs", "traces"),
            Column::new("columns", "columns"),
        ]);
        s.push(vec![
            Cell::text(&self.out),
            Cell::int(i64::try_from(self.rows).unwrap_or(i64::MAX)),
            Cell::int(i64::try_from(self.inputs).unwrap_or(i64::MAX)),
            Cell::Text(self.columns.join(" ")),
        ]);
        vec![s]
    }
}

/// Merges traces from many hosts / GPUs into one CSV with `host` and `device` columns (first), the union
/// of the counter columns (`nan` where a trace lacks one), and each trace's own rows in order.
/// The output must not exist yet.
pub fn merge_traces(inputs: &[PathBuf], out: &Path) -> Result<MergeReport> {
    if inputs.is_empty() {
        return Err(Error::Invalid("give at least one trace to merge".into()));
    }
    let mut metas = Vec::new();
    let mut seen = BTreeSet::new();
    for p in inputs {
        let m = read_meta(p)?;
        if m.format != TRACE_FORMAT {
            return Err(Error::Invalid(format!(
                "{}: format '{}', expected '{TRACE_FORMAT}'",
                p.display(),
                m.format
            )));
        }
        if !seen.insert((m.host.clone(), m.device, m.kernel.clone(), p.clone())) {
            return Err(Error::Invalid(format!("{} is given twice", p.display())));
        }
        metas.push(m);
    }
    let mut counters: Vec<String> = Vec::new();
    for m in &metas {
        for c in &m.counters {
            if !counters.contains(c) {
                counters.push(c.clone());
            }
        }
    }
    let mut columns: Vec<String> = vec!["host".into(), "device".into()];
    columns.extend(FIXED_COLUMNS.iter().map(|s| s.to_string()));
    columns.extend(counters.iter().cloned());
    columns.push(crate::table::GROUP_COLUMN.into());
    let file = std::fs::OpenOptions::new().write(true).create_new(true).open(out).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            Error::Invalid(format!(
                "{}: already exists; choose another --out (nothing was overwritten)",
                out.display()
            ))
        } else {
            Error::io(out, e)
        }
    })?;
    let mut w = csv::Writer::from_writer(std::io::BufWriter::new(file));
    let csv_err = |e: csv::Error| Error::Invalid(format!("{}: {e}", out.display()));
    w.write_record(&columns).map_err(csv_err)?;
    let mut rows = 0;
    for (p, m) in inputs.iter().zip(&metas) {
        let mut r = csv::ReaderBuilder::new()
            .flexible(false)
            .from_path(p)
            .map_err(|e| Error::Format { file: p.display().to_string(), message: e.to_string() })?;
        let header: Vec<String> = r
            .headers()
            .map_err(|e| crate::table::csv_error(&p.display().to_string(), e))?
            .iter()
            .map(String::from)
            .collect();
        let idx: Vec<Option<usize>> =
            columns[2..].iter().map(|c| header.iter().position(|h| h == c)).collect();
        for rec in r.records() {
            // A trace cut by a crash may end in a partial line: keep the complete rows before it.
            let Ok(rec) = rec else { break };
            let mut row = vec![m.host.clone(), m.device.to_string()];
            for i in &idx {
                row.push(i.and_then(|i| rec.get(i)).unwrap_or("nan").to_string());
            }
            w.write_record(&row).map_err(csv_err)?;
            rows += 1;
        }
    }
    w.flush().map_err(|e| Error::io(out, e))?;
    Ok(MergeReport { out: out.display().to_string(), inputs: inputs.len(), rows, columns })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(host: &str, counters: &[&str]) -> TraceMeta {
        TraceMeta {
            format: TRACE_FORMAT.into(),
            host: host.into(),
            device: 0,
            pci_bus_id: None,
            gpu: "Fake".into(),
            chip: None,
            compute_capability: None,
            driver: None,
            power_field: "scripted".into(),
            energy_counter: false,
            sample_period_s: 1.0 / 60.0,
            counter_source: None,
            counters: counters.iter().map(|s| s.to_string()).collect(),
            command: vec!["./k".into()],
            kernel: "k".into(),
            launches: vec![],
            status: RunStatus::Running,
            summary: None,
            warnings: vec![],
            replay: None,
        }
    }

    fn row(t: f64, c: &[f64]) -> TraceRow {
        TraceRow {
            t_s: t,
            dt_s: 0.5,
            power_w: 100.5,
            core_mhz: 1000.0,
            mem_mhz: f64::NAN,
            counters: c.to_vec(),
        }
    }

    #[test]
    fn rows_are_on_disk_before_finish_and_read_back_as_a_table() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.csv");
        let mut w = TraceWriter::create(&p, &meta("a", &["inst_executed"])).unwrap();
        w.write(&[row(0.5, &[2e9]), row(1.0, &[f64::NAN])]).unwrap();
        // Not finished (as after a crash): the file is a valid table and the sidecar says "running".
        let t = crate::Table::read_csv(&p, "kernel").unwrap();
        assert_eq!(t.n_rows(), 2);
        assert_eq!(t.column("inst_executed").unwrap()[0], 2e9);
        assert!(t.column("mem_mhz").unwrap()[0].is_nan());
        assert_eq!(read_meta(&p).unwrap().status, RunStatus::Running);
        let mut m = meta("a", &["inst_executed"]);
        m.status = RunStatus::Complete;
        w.finish(&m).unwrap();
        assert_eq!(read_meta(&p).unwrap().status, RunStatus::Complete);
    }

    #[test]
    fn existing_trace_is_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.csv");
        std::fs::write(&p, "precious").unwrap();
        let e = TraceWriter::create(&p, &meta("a", &[])).err().unwrap().to_string();
        assert!(e.contains("already exists"), "{e}");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "precious");
    }

    #[test]
    fn merge_unions_counter_columns_and_tags_hosts() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.csv");
        let b = dir.path().join("b.csv");
        let mut w = TraceWriter::create(&a, &meta("node1", &["x"])).unwrap();
        w.write(&[row(0.5, &[1.0])]).unwrap();
        let mut w = TraceWriter::create(&b, &meta("node2", &["y"])).unwrap();
        w.write(&[row(0.5, &[2.0]), row(1.0, &[3.0])]).unwrap();
        // A crash mid-line: the partial row is dropped, the complete ones kept.
        drop(w);
        std::fs::OpenOptions::new().append(true).open(&b).unwrap().write_all(b"1.5,0.5").unwrap();
        let out = dir.path().join("all.csv");
        let r = merge_traces(&[a, b], &out).unwrap();
        assert_eq!(r.rows, 3);
        let t = crate::Table::read_csv(&out, "kernel").unwrap();
        assert_eq!(t.text_column("host").unwrap(), ["node1", "node2", "node2"]);
        assert_eq!(t.column("x").unwrap()[0], 1.0);
        assert!(t.column("x").unwrap()[1].is_nan());
        assert_eq!(t.column("y").unwrap()[2], 3.0);
    }

    fn timed(t: f64, dt: f64, c: &[f64]) -> TraceRow {
        TraceRow { dt_s: dt, ..row(t, c) }
    }

    /// Hand-worked overlaps: target row (0, 1] overlaps source (0, 0.5] fully and (0.5, 1.5] by half
    /// → (10·0.5 + 30·0.5) / 1 = 20; target (1, 2] overlaps (0.5, 1.5] by 0.5 and (1.5, 2.5] by 0.5,
    /// whose NaN is left out → 30; target (3, 4] overlaps nothing → NaN.
    #[test]
    fn align_rates_weights_by_overlap_and_skips_unknowns() {
        let source = [timed(0.5, 0.5, &[10.0]), timed(1.5, 1.0, &[30.0]), timed(2.5, 1.0, &[f64::NAN])];
        let target = [timed(1.0, 1.0, &[]), timed(2.0, 1.0, &[]), timed(4.0, 1.0, &[])];
        let got = align_rates(&target, &source, &[0]);
        assert!((got[0][0] - 20.0).abs() < 1e-12, "{got:?}");
        assert!((got[1][0] - 30.0).abs() < 1e-12, "{got:?}");
        assert!(got[2][0].is_nan());
    }

    #[test]
    fn rows_read_back_as_written_and_a_cut_line_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.csv");
        let m = meta("a", &["x", "y"]);
        let mut w = TraceWriter::create(&p, &m).unwrap();
        w.write(&[row(0.5, &[1.5, f64::NAN]), row(1.0, &[2.5, 4.0])]).unwrap();
        drop(w);
        std::fs::OpenOptions::new().append(true).open(&p).unwrap().write_all(b"1.5,0.5,3").unwrap();
        let rows = read_rows(&p, &m).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].counters, [2.5, 4.0]);
        assert!(rows[0].counters[1].is_nan() && rows[0].mem_mhz.is_nan());
        assert_eq!((rows[0].t_s, rows[0].dt_s, rows[0].power_w), (0.5, 0.5, 100.5));
    }

    #[test]
    fn spread_is_the_range_over_the_mean() {
        let s = Spread::of(&[9.0, 11.0, f64::NAN]).unwrap();
        assert_eq!((s.min, s.max, s.mean), (9.0, 11.0, 10.0));
        assert!((s.range_pct - 20.0).abs() < 1e-12);
        assert!(Spread::of(&[]).is_none());
    }

    /// The sidecar names the physical GPU by PCI bus id; sidecars written before that field read back
    /// without it.
    #[test]
    fn sidecar_keeps_the_pci_bus_id_and_reads_old_sidecars() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.csv");
        let mut m = meta("a", &[]);
        m.pci_bus_id = Some("00000000:65:00.0".into());
        TraceWriter::create(&p, &m).unwrap();
        assert_eq!(read_meta(&p).unwrap().pci_bus_id.as_deref(), Some("00000000:65:00.0"));
        let mut json: serde_json::Value = serde_json::to_value(&m).unwrap();
        json.as_object_mut().unwrap().remove("pci_bus_id");
        let old: TraceMeta = serde_json::from_value(json).unwrap();
        assert_eq!(old.pci_bus_id, None);
        assert!(!serde_json::to_string(&meta("a", &[])).unwrap().contains("pci_bus_id"));
    }
}
