//! Importers of existing profiler output into kernel profiles (input of `predict`) and tables:
//!
//! * **Nsight Compute** `ncu --csv --page raw [--metrics …]`: a header row of column names, a row of
//!   units, then one row per kernel launch with the launch columns (`Kernel Name`, `Block Size`,
//!   `Grid Size`, `launch__registers_per_thread`, `launch__shared_mem_per_block_*`,
//!   `gpu__time_duration.sum`) and one column per metric. Metrics are turned into canonical counters with
//!   the `range` maps of `models/counters/*.toml` (the same Perfworks names on every chip). Values are
//!   brought back to base units with the units row (ncu scales to `Kbyte`, `Msector`, `usecond`, … unless
//!   run with `--print-units base`, which keeps every digit: `8.19 Kbyte/block` is read as 8190 bytes).
//!   Lines before the header row (the profiled program's own output) are skipped. The file is read
//!   streaming ([`read_ncu_each`]): one record at a time, names interned once, per launch only the cells
//!   the maps read (the rest only counted), so a 100 MB export needs memory for its launches' counters,
//!   not for its text. The GPU comes from `device__attribute_display_name` (or `Device Name`), else the
//!   compute capability (`CC` column, `device__attribute_compute_capability_major/minor`).
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
mod stream;
#[cfg(test)]
mod stream_tests;
#[cfg(test)]
mod tests;

pub use common::{
    ImportedKernel, KernelsCsv, MetricUse, Origin, arch_of_device, kernel_columns, kernels_table,
    profile_file_name, read_inject_rows, short_kernel_name,
};
pub use nvprof::{
    TraceLaunch, gpu_trace_kernels, is_gpu_trace, join_gpu_trace, read_nvprof, read_nvprof_gpu_trace,
};

use crate::counters::{CounterMap, MapKind};
use crate::error::{Error, Result};
use crate::profile::Launch;
use common::{count_u32, dim3, number, time_scale};
use metrics::Mapped;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io::BufRead;
use stream::{Filtered, Keep, Kept, Names, Units};

/// Reads `ncu --csv --page raw` output (wide: one row per launch) or the long layout (`--page details`,
/// one row per launch and metric).
pub fn read_ncu(text: &str, source: &str) -> Result<(Vec<ImportedKernel>, MetricUse)> {
    let mut out = Vec::new();
    let use_ = read_ncu_each(text.as_bytes(), source, |k| {
        out.push(k);
        Ok(())
    })?;
    Ok((out, use_))
}

/// As [`read_ncu`], streaming: reads `input` record by record and hands each launch to `each` as soon as
/// it is complete (a wide row at once; the long layout's launches at the end, since their rows may
/// interleave), so neither the file nor its cells are ever held whole.
pub fn read_ncu_each(
    input: impl BufRead,
    source: &str,
    mut each: impl FnMut(ImportedKernel) -> Result<()>,
) -> Result<MetricUse> {
    let fmt = |m: &str| Error::Format { file: source.into(), message: m.into() };
    let mut rdr =
        csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(Filtered::new(input));
    let mut rec = csv::ByteRecord::new();
    let csv_err = |e| crate::table::csv_error(source, e);
    if !rdr.read_byte_record(&mut rec).map_err(csv_err)? {
        return Err(if rdr.get_ref().had_text {
            fmt("no 'Kernel Name' column: expected the output of `ncu --csv` (--page raw or --page details)")
        } else {
            fmt("empty file: expected the output of `ncu --csv --page raw`")
        });
    }
    // Canonical counters from the range map (the same metric names on every chip).
    let map = CounterMap::builtin("GA102")?;
    let range: BTreeSet<String> = map.map(MapKind::Range).values().flatten().cloned().collect();
    let mut names = Names::new(move |n| {
        if n == "CC" {
            Keep::IdentityText
        } else if NCU_IDENTITY_COLUMNS.contains(&n) {
            Keep::Identity
        } else if TEXT_CELLS.contains(&n) {
            Keep::Text
        } else if range.contains(n) || LAUNCH_AND_TIME.contains(&n) || metrics::ncu_reads(n) {
            Keep::Number
        } else {
            Keep::Count
        }
    });
    let header: Vec<u32> = rec.iter().map(|h| names.id(h)).collect();
    let col = |name: &str| header.iter().position(|&h| names.names[h as usize] == name);
    let kname = col("Kernel Name").ok_or_else(|| {
        fmt("no 'Kernel Name' column: expected the output of `ncu --csv` (--page raw or --page details)")
    })?;
    let mut tail = Tail::default();
    let mut units = Units::default();
    let none = units.id(b"");
    let mut sets = stream::Sets::default();
    let mut finish = Finish {
        map: &map,
        source,
        n: 0,
        launch_names: Vec::new(),
        used_ever: Vec::new(),
        present_ever: Vec::new(),
        sets_seen: HashSet::new(),
        layout: Vec::new(),
        slots: Vec::new(),
        values: BTreeMap::new(),
        scratch: Vec::new(),
    };
    let mut kernel_ids: HashMap<String, u32> = HashMap::new();
    let mut intern_kernel = |name: &str, finish: &mut Finish| -> u32 {
        if let Some(&i) = kernel_ids.get(name) {
            return i;
        }
        let next = finish.launch_names.len() as u32;
        finish.launch_names.push(name.to_string());
        kernel_ids.insert(name.to_string(), next);
        next
    };
    if let (Some(mname), Some(mvalue)) = (col("Metric Name"), col("Metric Value")) {
        // Long layout: gather each launch's rows by ID (or, lacking one, by consecutive kernel name: a
        // metric seen again starts the next launch).
        let munit = col("Metric Unit");
        let id = col("ID");
        let mut launches: Vec<stream::Launch> = Vec::new();
        let mut by_id: HashMap<Vec<u8>, usize> = HashMap::new();
        let mut seen_metrics: BTreeSet<u32> = BTreeSet::new();
        while rdr.read_byte_record(&mut rec).map_err(csv_err)? {
            let line = rdr.get_ref().file_line(rec.position().map_or(0, |p| p.line()));
            tail.record(rec.len(), line);
            let Some(name) = kernel_name(&rec, kname, line, source)? else { continue };
            let metric = names.id(rec.get(mname).unwrap_or_default());
            let k = match id {
                Some(i) => by_id.get(stream::trim(rec.get(i).unwrap_or_default())).copied(),
                None => launches
                    .last()
                    .filter(|l| {
                        finish.launch_names[l.name as usize] == name && !seen_metrics.contains(&metric)
                    })
                    .map(|_| launches.len() - 1),
            };
            let k = match k {
                Some(k) => k,
                None => {
                    let mut l = stream::Launch::new(line, intern_kernel(name, &mut finish));
                    // The per-launch columns (Block Size, Grid Size, …) ride along on every row.
                    for (i, (raw, &h)) in rec.iter().zip(&header).enumerate() {
                        if i != mname && i != mvalue && Some(i) != munit && i != kname {
                            l.cell(h, raw, none, &names, &units, source);
                        }
                    }
                    if let Some(i) = id {
                        by_id.insert(stream::trim(rec.get(i).unwrap_or_default()).to_vec(), launches.len());
                    }
                    seen_metrics.clear();
                    launches.push(l);
                    launches.len() - 1
                }
            };
            if names.names[metric as usize].is_empty() {
                continue;
            }
            seen_metrics.insert(metric);
            let unit = munit.map_or(none, |u| units.id(rec.get(u).unwrap_or_default()));
            launches[k].cell(metric, rec.get(mvalue).unwrap_or_default(), unit, &names, &units, source);
        }
        tail.check(rdr.get_ref().ends_with_newline, source)?;
        for mut l in launches {
            l.close(&mut sets);
            finish.launch(l, &names, &units, &mut each)?;
        }
    } else {
        // Wide layout: the units row (no kernel name) first, then one launch per row.
        let mut col_units: Vec<u32> = vec![none; header.len()];
        let mut first = true;
        while rdr.read_byte_record(&mut rec).map_err(csv_err)? {
            let line = rdr.get_ref().file_line(rec.position().map_or(0, |p| p.line()));
            tail.record(rec.len(), line);
            let Some(name) = kernel_name(&rec, kname, line, source)? else {
                if std::mem::take(&mut first) {
                    col_units = (0..header.len()).map(|i| units.id(rec.get(i).unwrap_or_default())).collect();
                }
                continue;
            };
            first = false;
            let mut l = stream::Launch::new(line, intern_kernel(name, &mut finish));
            // At most a cell per column: room for them at once.
            l.open.reserve(header.len());
            for (i, (raw, (&h, &u))) in rec.iter().zip(header.iter().zip(&col_units)).enumerate() {
                if i != kname {
                    l.cell(h, raw, u, &names, &units, source);
                }
            }
            l.close(&mut sets);
            finish.launch(l, &names, &units, &mut each)?;
        }
        tail.check(rdr.get_ref().ends_with_newline, source)?;
    }
    if finish.n == 0 {
        return Err(fmt(
            "no kernel rows: was the program's kernel profiled (check ncu's --kernel-name filter)?",
        ));
    }
    Ok(finish.metric_use(&names))
}

/// The last two records' lengths and the last one's line: an export cut short (a copy or a run that
/// stopped) ends mid-line with a last row of fewer cells than the row before it. (Rows of one layout
/// may differ from the header in length: ncu leaves out empty trailing rule columns.)
#[derive(Default)]
struct Tail {
    before: usize,
    last: usize,
    line: u64,
}

impl Tail {
    fn record(&mut self, len: usize, line: u64) {
        (self.before, self.last, self.line) = (self.last, len, line);
    }

    fn check(&self, ends_with_newline: bool, source: &str) -> Result<()> {
        if ends_with_newline || self.before == 0 || self.last >= self.before {
            return Ok(());
        }
        Err(Error::Parse {
            file: source.to_string(),
            line: self.line,
            column: "*".into(),
            message: format!(
                "the file ends inside this row ({} cells where the row before has {}): the export is cut short; \
                 export it again",
                self.last, self.before
            ),
        })
    }
}

/// The kernel name of a record (`None` when the cell is empty: ncu's units row).
fn kernel_name<'r>(
    rec: &'r csv::ByteRecord,
    kname: usize,
    line: u64,
    source: &str,
) -> Result<Option<&'r str>> {
    let raw = stream::trim(rec.get(kname).unwrap_or_default());
    if raw.is_empty() {
        return Ok(None);
    }
    std::str::from_utf8(raw).map(Some).map_err(|_| Error::Parse {
        file: source.into(),
        line,
        column: "Kernel Name".into(),
        message: "not UTF-8 text: expected a profiler's CSV export".into(),
    })
}

/// Turns read launches into imported kernels, in launch order, and tallies which metrics fed a model.
struct Finish<'a> {
    map: &'a CounterMap,
    source: &'a str,
    n: usize,
    launch_names: Vec<String>,
    /// By metric id: whether it fed a counter in some launch / was a number in some launch.
    used_ever: Vec<bool>,
    present_ever: Vec<bool>,
    /// The metric sets already tallied (launches share them).
    sets_seen: HashSet<*const u32>,
    /// The last launch's kept cells (metric id, whether a number), each number's rank among the
    /// launch's numbers in name order (`None` when a later cell has its name), and the numbers by name.
    layout: Vec<(u32, bool)>,
    slots: Vec<Option<usize>>,
    values: BTreeMap<String, f64>,
    scratch: Vec<f64>,
}

/// One launch's kept cells, for the maps: text and numbers as read (by name, the last cell of a name),
/// and the numbers in base units.
struct Cells<'a> {
    kept: &'a [(u32, Kept)],
    names: &'a Names,
    values: &'a BTreeMap<String, f64>,
}

impl Cells<'_> {
    fn get(&self, name: &str) -> Option<&Kept> {
        let id = self.names.find(name)?;
        self.kept.iter().rev().find(|(i, _)| *i == id).map(|(_, k)| k)
    }
}

impl Finish<'_> {
    fn launch(
        &mut self,
        l: stream::Launch,
        names: &Names,
        units: &Units,
        each: &mut impl FnMut(ImportedKernel) -> Result<()>,
    ) -> Result<()> {
        if let Some(e) = l.error {
            return Err(e);
        }
        self.values(&l.kept, names, units);
        let name = &self.launch_names[l.name as usize];
        // Which metrics feed a counter depends only on which the launch has: tallied once per set.
        let new_set = self.sets_seen.insert(l.present.as_ptr());
        let has = |m: &str| names.find(m).is_some_and(|id| l.present.contains(&id));
        let tally: Option<&dyn Fn(&str) -> bool> = if new_set { Some(&has) } else { None };
        let cells = Cells { kept: &l.kept, names, values: &self.values };
        let (k, used) = ncu_launch(name, l.line, &cells, tally, units, self.map, self.source)?;
        self.used_ever.resize(names.names.len(), false);
        self.present_ever.resize(names.names.len(), false);
        if new_set {
            for id in l.present.iter() {
                self.present_ever[*id as usize] = true;
            }
        }
        // What fed a counter is among the launch's numbers (the maps read nothing else).
        for m in used.iter().flatten() {
            if let Some(id) = names.find(m) {
                self.used_ever[id as usize] = true;
            }
        }
        self.n += 1;
        each(k)
    }

    /// The launch's numbers in base units (`%` as fractions) by metric name, into `self.values`. Later
    /// cells of the same name replace earlier ones, as in the export's own reading. When the launch has
    /// the same cells as the one before (the usual case), the map's keys are kept and only its values
    /// are written, by position.
    fn values(&mut self, kept: &[(u32, Kept)], names: &Names, units: &Units) {
        let same =
            self.layout.len() == kept.len()
                && self.layout.iter().zip(kept).all(|(&(id, number), (k, cell))| {
                    id == *k && number == matches!(cell, Kept::Number { .. })
                });
        if !same {
            self.layout.clear();
            self.layout.extend(kept.iter().map(|(id, cell)| (*id, matches!(cell, Kept::Number { .. }))));
            let mut cells: BTreeMap<&str, usize> = BTreeMap::new();
            for (i, (id, _)) in kept.iter().enumerate() {
                cells.insert(&names.names[*id as usize], i);
            }
            self.values.clear();
            self.slots.clear();
            self.slots.resize(kept.len(), None);
            for (name, &i) in &cells {
                if let Kept::Number { .. } = kept[i].1 {
                    self.slots[i] = Some(self.values.len());
                    self.values.insert(name.to_string(), 0.0);
                }
            }
        }
        self.scratch.clear();
        self.scratch.resize(self.values.len(), 0.0);
        for (slot, (_, cell)) in self.slots.iter().zip(kept) {
            if let (Some(slot), Kept::Number { value, unit }) = (slot, cell) {
                self.scratch[*slot] = value * units.factor(*unit);
            }
        }
        for (v, x) in self.values.values_mut().zip(&self.scratch) {
            *v = *x;
        }
    }

    /// Over the whole file: the metrics that fed a counter, and those that never did.
    fn metric_use(&self, names: &Names) -> MetricUse {
        let mut use_ = MetricUse::default();
        for (id, name) in names.names.iter().enumerate() {
            match (self.used_ever.get(id), self.present_ever.get(id)) {
                (Some(true), _) => use_.mapped.insert(name.clone()),
                (_, Some(true)) => use_.dropped.insert(name.clone()),
                _ => false,
            };
        }
        use_
    }
}

/// One ncu launch → an imported kernel: counters through the range map, the launch shape from the
/// Block Size / Grid Size columns or the Launch Statistics metrics, the time from `gpu__time_duration`.
/// `tally`, when the launch's set of metrics is new, says which it has: the metrics that fed a counter are
/// then returned.
#[allow(clippy::too_many_arguments)]
fn ncu_launch(
    name: &str,
    line: u64,
    cells: &Cells,
    tally: Option<&dyn Fn(&str) -> bool>,
    units: &Units,
    map: &CounterMap,
    source: &str,
) -> Result<(ImportedKernel, Option<BTreeSet<String>>)> {
    let text = |k: &str| match cells.get(k) {
        Some(Kept::Text(t)) => Some(&**t),
        _ => None,
    };
    let raw = |k: &str| match cells.get(k) {
        Some(Kept::Number { value, unit }) => Some((*value, *unit)),
        _ => None,
    };
    let bad = |column: &str, message: String| Error::Parse {
        file: source.into(),
        line,
        column: column.into(),
        message,
    };
    // Values in base units, `%` as fractions.
    let values = cells.values;
    let scaled = |k: &str| values.get(k).copied();
    let range = map.map(MapKind::Range);
    let counters = map.canonical(MapKind::Range, values);
    let mut used: Option<BTreeSet<String>> = tally.map(|_| {
        range
            .iter()
            .filter(|(c, _)| counters.contains_key(*c))
            .flat_map(|(_, ms)| ms.iter().cloned())
            .collect()
    });
    let mut mapped = Mapped { counters, ..Mapped::default() };
    metrics::from_ncu_noting(values, &mut mapped, tally.is_some()).map_err(|e| bad("Metric Value", e.0))?;
    if let (Some(used), Some(has)) = (&mut used, tally) {
        used.append(&mut mapped.used);
        // Launch and time columns are read below: count them as mapped too.
        used.extend(LAUNCH_AND_TIME.iter().filter(|k| has(k)).map(|k| k.to_string()));
    }
    // The shape: 3-D columns first, then the metrics (a total count of blocks / threads).
    let dims = |col: &str, metric: &str| -> Result<Option<[u32; 3]>> {
        if let Some(v) = text(col).filter(|v| !v.is_empty()) {
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
    // A rate in ncu's units: `cycle/nsecond` (GHz, the raw page's), `cycle/usecond`, `cycle/second`, or
    // the details page's `Ghz` / `Mhz`; without a unit, cycles per second.
    let hz = raw("sm__cycles_elapsed.avg.per_second")
        .and_then(|(v, u)| common::per_second(v, &units.names[u as usize]))
        .filter(|f| *f > 0.0);
    let time_s = ["gpu__time_duration.sum", "gpu__time_duration", "Duration"]
        .iter()
        .find_map(|m| {
            let (t, u) = raw(m)?;
            let u = &units.names[u as usize];
            // Without a unit, ncu's raw page is in nanoseconds.
            let k = if u.is_empty() { Some(1e-9) } else { time_scale(u) }?;
            Some(t * k).filter(|t| *t >= 0.0)
        })
        // Elapsed SM cycles at the measured SM clock.
        .or_else(|| Some(values.get("sm__cycles_elapsed.avg")? / hz?));
    let device = ["device__attribute_display_name", "Device Name"]
        .iter()
        .find_map(|c| text(c).map(str::to_string).filter(|v| !v.is_empty()));
    // The compute capability: the raw page's `CC` column ("8.6") or the device attribute metrics.
    let capability = text("CC").and_then(metrics::Capability::parse).or_else(|| {
        let part = |m: &str| scaled(m).filter(|x| x.fract() == 0.0 && (0.0..100.0).contains(x));
        let major = part("device__attribute_compute_capability_major")?;
        let minor = part("device__attribute_compute_capability_minor")?;
        Some(metrics::Capability { major: major as u32, minor: minor as u32 })
    });
    let k = ImportedKernel {
        origin: Origin::Ncu,
        name: name.to_string(),
        launch,
        time_s,
        counters: mapped.counters,
        code: mapped.code,
        device,
        capability,
        core_mhz: hz.map(|f| f / 1e6),
    };
    Ok((k, used))
}

/// Cells kept as text: the launch shape as `(x, y, z)` and the GPU's name.
const TEXT_CELLS: &[&str] = &["Block Size", "Grid Size", "Device Name", "device__attribute_display_name"];

/// Columns and metrics read for the launch shape, the time and the GPU (counted as mapped in the import
/// report).
const LAUNCH_AND_TIME: &[&str] = &[
    "device__attribute_compute_capability_major",
    "device__attribute_compute_capability_minor",
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
