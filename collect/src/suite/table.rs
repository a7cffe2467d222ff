//! The suite's training table on disk: a CSV that `gpumodel train --import table` reads (group column
//! `kernel`, target `power_w`, clocks `core_mhz` / `mem_mhz`, the paper's ten inputs as totals per launch, the
//! power model's inputs ([`gpumodel_models::power_inputs`]) as rates), written
//! one flushed row at a time, and its JSON metadata sidecar (`<out>.json`: GPU name, chip, driver, kernels).

use super::{GpuInfo, Measurement, Plan, SuiteKernel};
use crate::Error;
use crate::clocks::ClockPair;
use gpumodel_models::power_inputs::{self, POWER_INPUTS};
use gpumodel_models::profile::MODEL_INPUTS;
use gpumodel_models::table::format_number;
use serde::Serialize;
use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Canonical counters written as rate columns beside the ten model inputs (instruction mix, DRAM traffic).
pub const EXTRA_RATES: &[&str] =
    &["inst_fp_32", "inst_fp_64", "inst_integer", "inst_special", "dram_read_bytes", "dram_write_bytes"];

/// Leading columns, before the paper's inputs, the power inputs and the extra rates.
const LEADING: &[&str] = &[
    "kernel",
    "pattern",
    "clocks",
    "knob",
    "grid_fraction",
    "core_mhz",
    "mem_mhz",
    "power_w",
    "time_s",
    "run_s",
    "launches",
    "power_samples",
];

/// The table's header.
pub fn suite_header() -> Vec<String> {
    LEADING
        .iter()
        .copied()
        .chain(MODEL_INPUTS.iter().map(|(n, _)| *n))
        .chain(POWER_INPUTS.iter().map(|p| p.name))
        .chain(EXTRA_RATES.iter().copied())
        .map(String::from)
        .collect()
}

/// The (kernel, clocks) pairs a table already holds; an error when the file is not a suite table.
pub fn read_done(path: &Path) -> Result<BTreeSet<(String, String)>, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    // A row cut off by a kill has no line end: it is not finished, and the writer drops it on resume.
    let complete = match text.rfind('\n') {
        Some(i) => &text[..=i],
        None => "",
    };
    let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(complete.as_bytes());
    // A table that does not read as CSV cannot be resumed; say so rather than blame the file system.
    let unreadable = |e: csv::Error| {
        Error::Output(format!(
            "{}: {e}: not a suite table that can be resumed: choose another --out (nothing was changed)",
            path.display()
        ))
    };
    let header: Vec<String> = reader.headers().map_err(unreadable)?.iter().map(String::from).collect();
    if header != suite_header() {
        return Err(Error::Output(format!(
            "{}: not a suite table of this gpumodel version (its header differs): choose another --out \
             (nothing was changed)",
            path.display()
        )));
    }
    let mut done = BTreeSet::new();
    for rec in reader.records() {
        let rec = rec.map_err(unreadable)?;
        done.insert((rec[0].to_string(), rec[2].to_string()));
    }
    Ok(done)
}

/// Appends rows, flushing each to the disk at once.
pub(crate) struct RowWriter {
    file: File,
    path: PathBuf,
}

impl RowWriter {
    /// Creates the table (with its header) or opens it for appending, dropping an unfinished last row.
    pub(crate) fn open(path: &Path, create: bool) -> Result<RowWriter, Error> {
        let io = |e: std::io::Error| Error::io(path, e);
        if create {
            let mut file = File::create(path).map_err(io)?;
            let mut w = csv::Writer::from_writer(Vec::new());
            w.write_record(suite_header()).map_err(|e| Error::io(path, e))?;
            file.write_all(&w.into_inner().map_err(|e| Error::io(path, e.into_error()))?).map_err(io)?;
            file.sync_data().map_err(io)?;
            return Ok(RowWriter { file, path: path.to_path_buf() });
        }
        let mut file = OpenOptions::new().read(true).write(true).open(path).map_err(io)?;
        let mut text = Vec::new();
        file.read_to_end(&mut text).map_err(io)?;
        let keep = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        file.set_len(keep as u64).map_err(io)?;
        file.seek(SeekFrom::End(0)).map_err(io)?;
        Ok(RowWriter { file, path: path.to_path_buf() })
    }

    /// Writes one row and flushes it.
    pub(crate) fn write(&mut self, k: &SuiteKernel, clocks: &str, m: &Measurement) -> Result<(), Error> {
        let pattern = k.entry().map_or("", |e| e.pattern);
        // The paper's input columns are totals per launch (rate × time per launch), like a kernel profile's
        // counter totals (`G_load/time_s` is then a rate both here and in `predict`).
        let per_launch = m.seconds / m.launches.max(1) as f64;
        let rate = |name: &str| m.counter_rates.get(name).copied().unwrap_or(0.0) * per_launch;
        let mut rec: Vec<String> = vec![
            k.name.clone(),
            pattern.to_string(),
            clocks.to_string(),
            k.knob.to_string(),
            format_number(k.grid_fraction),
            format_number(m.clocks.core_mhz),
            format_number(m.clocks.mem_mhz),
            format_number(m.power_w),
            format_number(per_launch),
            format_number(m.seconds),
            m.launches.to_string(),
            m.power_samples.to_string(),
        ];
        rec.extend(MODEL_INPUTS.iter().map(|(_, parts)| format_number(parts.iter().map(|p| rate(p)).sum())));
        // The power inputs are rates already; an input none of whose counters was collected is 0 here (the
        // suite's kernels drive each of them, and a counter the collector has no metric for reads 0).
        let rates = |c: &str| m.counter_rates.get(c).copied();
        rec.extend(power_inputs::values(rates).into_iter().map(|(_, v)| format_number(v.unwrap_or(0.0))));
        rec.extend(EXTRA_RATES.iter().map(|n| format_number(rate(n))));
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(&rec).map_err(|e| Error::io(&self.path, e))?;
        let bytes = w.into_inner().map_err(|e| Error::io(&self.path, e.into_error()))?;
        self.file.write_all(&bytes).map_err(|e| Error::io(&self.path, e))?;
        self.file.sync_data().map_err(|e| Error::io(&self.path, e))
    }
}

/// One kernel in the metadata: its parameters, pattern and the counters it is meant to drive.
#[derive(Debug, Clone, Serialize)]
pub struct KernelMeta {
    #[serde(flatten)]
    pub kernel: SuiteKernel,
    pub pattern: String,
    pub drives: Vec<String>,
}

/// The JSON sidecar of a suite table.
#[derive(Debug, Clone, Serialize)]
pub struct SuiteMetadata {
    pub format: &'static str,
    pub gpu: GpuInfo,
    pub min_seconds: f64,
    /// Requested clock pairs (`None` = current clocks).
    pub clocks_requested: Vec<Option<ClockPair>>,
    pub kernels: Vec<KernelMeta>,
    pub columns: Vec<String>,
    /// Counter columns are totals per launch; rates are totals / `time_s` (the feature set's inputs).
    pub counter_units: &'static str,
    pub warnings: Vec<String>,
    pub interrupted: bool,
}

impl SuiteMetadata {
    pub(crate) fn new(gpu: &GpuInfo, plan: &Plan, clocks: &[Option<ClockPair>]) -> SuiteMetadata {
        SuiteMetadata {
            format: "gpumodel-suite/1",
            gpu: gpu.clone(),
            min_seconds: plan.min_seconds,
            clocks_requested: clocks.to_vec(),
            kernels: plan
                .kernels
                .iter()
                .map(|k| KernelMeta {
                    kernel: k.clone(),
                    pattern: k.entry().map_or_else(String::new, |e| e.pattern.to_string()),
                    drives: k
                        .entry()
                        .map_or_else(Vec::new, |e| e.drives.iter().map(|d| d.to_string()).collect()),
                })
                .collect(),
            columns: suite_header(),
            counter_units: "events per launch (rate = total / time_s)",
            warnings: Vec::new(),
            interrupted: false,
        }
    }

    /// The sidecar path of a table: `<out>.json`.
    pub fn path_for(out: &Path) -> PathBuf {
        let mut s = out.as_os_str().to_owned();
        s.push(".json");
        PathBuf::from(s)
    }

    /// Writes the sidecar (whole-file replace through a temporary file, so it is never half-written).
    pub(crate) fn write(&self, out: &Path) -> Result<(), Error> {
        let path = Self::path_for(out);
        let text = serde_json::to_string_pretty(self).map_err(|e| Error::io(&path, e))?;
        Ok(gpumodel_models::atomic::write_atomic(&path, text.as_bytes())?)
    }
}

/// The feature set of a suite table (`<out>.features.toml`): the power model's inputs
/// ([`gpumodel_models::power_inputs`], rates that every source of kernel counters gives, so that a model
/// trained here predicts a kernel profiled by the collector, ncu or nvprof) plus the two clocks; target
/// `power_w`, group `kernel`. The MLR base is the instruction count and the memory traffic without the
/// instruction mix (MLR+ adds the FP32, FP64, integer and SFU rates). Inputs that are constant in the table
/// (a clock that was not swept, a counter no selected kernel drives) are left out: they carry no
/// information and make the regressions singular. The file says which.
pub fn feature_set_toml(table: &gpumodel_models::Table) -> String {
    let varies = |name: &str| -> bool {
        let Some(col) = table.column(name) else { return false };
        let lo = col.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = col.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        lo.is_finite() && hi.is_finite() && hi > lo
    };
    const MIX: [&str; 4] = ["fp32_per_s", "fp64_per_s", "int_per_s", "sfu_per_s"];
    let (mut inputs, mut base, mut dropped) = (Vec::new(), Vec::new(), Vec::new());
    for name in POWER_INPUTS.iter().map(|p| p.name).chain(["core_mhz", "mem_mhz"]) {
        if varies(name) {
            inputs.push(format!("\"{name}\""));
            if !MIX.contains(&name) {
                base.push(format!("\"{name}\""));
            }
        } else {
            dropped.push(name);
        }
    }
    let mut text = String::from(
        "# Written by `gpumodel collect --suite`: the power model's counter inputs (rates) and the clocks.\n",
    );
    if !dropped.is_empty() {
        text.push_str(&format!("# Left out, constant in this table: {}\n", dropped.join(", ")));
    }
    text.push_str(&format!(
        "name = \"suite-power\"\ninputs = [{}]\ntarget = \"power_w\"\ngroup = \"kernel\"\nmlr_base = [{}]\n",
        inputs.join(", "),
        base.join(", ")
    ));
    text
}

/// Path of the feature set beside a table: `<out>.features.toml`.
pub fn feature_set_path(out: &Path) -> PathBuf {
    let mut s = out.as_os_str().to_owned();
    s.push(".features.toml");
    PathBuf::from(s)
}
