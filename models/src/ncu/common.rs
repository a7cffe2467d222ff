//! What every profiler importer shares: the imported kernel, the value and unit parsers, profile file
//! names, the per-kernel table and the injection library's rows.

use super::metrics::Capability;
use crate::error::{Error, Result};
use crate::profile::{CANONICAL_COUNTERS, EXPORT_COUNTERS, KernelProfile, Launch, MODEL_INPUTS, Measured};
use crate::table::{GROUP_COLUMN, Table};
use ndarray::Array2;
use std::collections::{BTreeMap, BTreeSet};

/// Which profiler output a kernel came from (to say what to do when something is missing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Ncu,
    Nvprof,
    NvprofGpuTrace,
    Inject,
}

impl Origin {
    /// What to do for a kernel without a launch shape.
    pub fn missing_launch_hint(self) -> &'static str {
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
    /// Code-table inputs measured by the profiler (`achieved_occupancy`).
    pub code: BTreeMap<String, f64>,
    /// The GPU as the export names it (nvprof's `Device` column, ncu's `device__attribute_display_name`),
    /// when it does.
    pub device: Option<String>,
    /// The GPU's compute capability, when the export gives it (ncu's `CC` column or
    /// `device__attribute_compute_capability_major/minor`) and not its name.
    pub capability: Option<Capability>,
    /// The SM clock during the measurement, MHz, when the export has it (ncu's
    /// `sm__cycles_elapsed.avg.per_second`).
    pub core_mhz: Option<f64>,
}

impl ImportedKernel {
    /// The kernel profile; `launch` is used when the source had none.
    pub fn to_profile(&self, source: &str, launch: Option<Launch>) -> Result<KernelProfile> {
        let launch = self.launch.clone().or(launch).unwrap_or_default();
        let p = KernelProfile {
            name: self.name.clone(),
            source: source.to_string(),
            arch: self.gpu(),
            launch,
            counters: self.counters.clone(),
            code: self.code.clone(),
            measured: Measured { time_s: self.time_s, core_mhz: self.core_mhz, ..Measured::default() },
        };
        p.check(source)?;
        Ok(p)
    }
}

impl ImportedKernel {
    /// The GPU the counters were measured on, as a profile records it: the built-in architecture's name
    /// when there is one (`gtx1080ti`), else the export's name for it (`NVIDIA GeForce RTX 3090`), else its
    /// compute capability (`sm_86`).
    pub fn gpu(&self) -> Option<String> {
        let named = self.device.as_deref().map(device_name).filter(|d| !d.is_empty());
        match named {
            Some(d) => Some(arch_of_device(d).map_or_else(|| d.to_string(), str::to_string)),
            None => self.capability.map(|c| c.to_string()),
        }
    }
}

/// A GPU's name without nvprof's device index (`GeForce GTX 1080 Ti (0)` → `GeForce GTX 1080 Ti`).
fn device_name(d: &str) -> &str {
    let t = d.trim();
    match t.rfind(" (") {
        Some(i) if t.ends_with(')') && t[i + 2..t.len() - 1].chars().all(|c| c.is_ascii_digit()) => &t[..i],
        _ => t,
    }
}

/// Parses a number as the profilers print it ("1,234,567", "12.5", "n/a" → None).
pub(crate) fn number(s: &str) -> Option<f64> {
    let t = s.trim().replace(',', "");
    if t.is_empty() || t.eq_ignore_ascii_case("n/a") {
        return None;
    }
    t.parse::<f64>().ok().filter(|x| x.is_finite())
}

/// [`number`] of a cell's bytes, without allocating for the common case (no thousands separators).
pub(crate) fn number_bytes(b: &[u8]) -> Option<f64> {
    let t = b.trim_ascii();
    if t.is_empty() || t.eq_ignore_ascii_case(b"n/a") {
        return None;
    }
    let x = if t.contains(&b',') {
        let digits: Vec<u8> = t.iter().copied().filter(|c| *c != b',').collect();
        std::str::from_utf8(&digits).ok()?.trim().parse::<f64>().ok()
    } else {
        std::str::from_utf8(t).ok()?.parse::<f64>().ok()
    };
    x.filter(|x| x.is_finite())
}

/// "(256, 1, 1)" → [256, 1, 1].
pub(crate) fn dim3(s: &str) -> Option<[u32; 3]> {
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

pub(crate) fn time_scale(unit: &str) -> Option<f64> {
    match unit.trim() {
        "nsecond" | "ns" => Some(1e-9),
        "usecond" | "us" => Some(1e-6),
        "msecond" | "ms" => Some(1e-3),
        "second" | "s" => Some(1.0),
        _ => None,
    }
}

/// A rate as ncu prints it, per second: `cycle/nsecond` → × 1e9, `Kcycle/usecond` → × 1e9, `Ghz` → × 1e9,
/// `Mhz` → × 1e6, no unit → as is; `None` for a unit that is not a rate.
pub(crate) fn per_second(v: f64, unit: &str) -> Option<f64> {
    let u = unit.trim();
    if u.is_empty() {
        return Some(v);
    }
    if let Some((count, time)) = u.split_once('/') {
        return time_scale(time).map(|t| v * count_scale(count) / t);
    }
    match u.to_ascii_lowercase().as_str() {
        "hz" => Some(v),
        "khz" => Some(v * 1e3),
        "mhz" => Some(v * 1e6),
        "ghz" => Some(v * 1e9),
        _ => None,
    }
}

/// Factor from a count unit as ncu prints it to the base unit. ncu scales values to a fitting magnitude
/// with decimal prefixes unless run with `--print-units base` (e.g. `Kbyte` = 1000 byte, `Msector`,
/// `Kbyte/block`); base units (`byte`, `inst`, `sector`, `register/thread`), ratios and empty units are 1.
pub(crate) fn count_scale(unit: &str) -> f64 {
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

pub(crate) fn read_records(text: &str, source: &str) -> Result<Vec<Vec<String>>> {
    let mut r = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(text.as_bytes());
    let mut out = Vec::new();
    for rec in r.records() {
        let rec = rec.map_err(|e| crate::table::csv_error(source, e))?;
        out.push(rec.iter().map(|s| s.trim().to_string()).collect());
    }
    Ok(out)
}

/// A count as u32: negative and NaN → 0 (the profile check then refuses it), huge → u32::MAX.
pub(crate) fn count_u32(x: f64) -> u32 {
    if x.is_nan() || x <= 0.0 { 0 } else { x.min(f64::from(u32::MAX)) as u32 }
}

/// A kernel's short name: without return type, namespaces, template arguments and parameters
/// (`void matrixMulCUDA<int=32>(float*, …)` → `matrixMulCUDA`); the full name when that leaves nothing.
pub fn short_kernel_name(name: &str) -> &str {
    let mut head = name.trim();
    // The parameter list and template arguments start at the first '(' or '<' after the name itself.
    if let Some(cut) = head.find(['(', '<']) {
        head = &head[..cut];
    }
    let head = head.trim_end();
    let last = head.rsplit([' ', ':']).next().unwrap_or(head);
    if last.is_empty() { name.trim() } else { last }
}

/// The file name of the `index`-th (from 0) kernel's profile: `<short name>-001.json`, the short name
/// ([`short_kernel_name`]) reduced to ASCII letters, digits and `_` (at most 60), so templated C++ names
/// make portable, readable file names; the number keeps kernels whose names reduce alike apart.
pub fn profile_file_name(index: usize, kernel_name: &str) -> String {
    let safe: String = short_kernel_name(kernel_name)
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' })
        .take(60)
        .collect();
    format!("{safe}-{:03}.json", index + 1)
}

/// The columns of the imported-kernel table after `kernel`: `time_s` (nan when unknown), the canonical
/// counters, the ten model inputs as totals, and — when the time is known — as rates (`<input>_per_s`).
/// An input that is one canonical counter of its own name (`branch`, `divergent_branch`) has that
/// counter's column as its total, so no column name appears twice.
pub fn kernel_columns() -> Vec<String> {
    let mut columns: Vec<String> = vec!["time_s".into()];
    columns.extend(CANONICAL_COUNTERS.iter().chain(EXPORT_COUNTERS).map(|(c, _)| c.to_string()));
    columns.extend(MODEL_INPUTS.iter().filter(|i| !is_own_counter(i)).map(|(i, _)| i.to_string()));
    columns.extend(MODEL_INPUTS.iter().map(|(i, _)| format!("{i}_per_s")));
    columns
}

/// A model input that is just the canonical counter of the same name.
fn is_own_counter((name, parts): &(&str, &[&str])) -> bool {
    parts == &[*name] && CANONICAL_COUNTERS.iter().chain(EXPORT_COUNTERS).any(|(c, _)| c == name)
}

/// One kernel's row of [`kernel_columns`].
fn kernel_row(k: &ImportedKernel) -> impl Iterator<Item = f64> + '_ {
    let counters = CANONICAL_COUNTERS.iter().chain(EXPORT_COUNTERS).map(|(c, _)| *c);
    let totals: Vec<f64> = MODEL_INPUTS
        .iter()
        .map(|(_, parts)| parts.iter().map(|p| k.counters.get(*p).copied().unwrap_or(f64::NAN)).sum())
        .collect();
    let rates: Vec<f64> = totals.iter().map(|t| k.time_s.map_or(f64::NAN, |s| t / s)).collect();
    let own_totals: Vec<f64> =
        MODEL_INPUTS.iter().zip(&totals).filter(|(i, _)| !is_own_counter(i)).map(|(_, t)| *t).collect();
    std::iter::once(k.time_s.unwrap_or(f64::NAN))
        .chain(counters.map(|c| k.counters.get(c).copied().unwrap_or(f64::NAN)))
        .chain(own_totals)
        .chain(rates)
}

/// The table of imported kernels (`kernel` then [`kernel_columns`]) written as CSV one kernel at a time,
/// as [`Table::write_csv_to`] writes it, so a long export is never held whole.
pub struct KernelsCsv<W: std::io::Write> {
    out: csv::Writer<W>,
    rows: usize,
    names: BTreeSet<String>,
    cell: String,
}

impl<W: std::io::Write> KernelsCsv<W> {
    pub fn new(w: W) -> std::result::Result<KernelsCsv<W>, csv::Error> {
        let mut out = csv::Writer::from_writer(w);
        let columns = kernel_columns();
        out.write_record(std::iter::once(GROUP_COLUMN).chain(columns.iter().map(String::as_str)))?;
        Ok(KernelsCsv { out, rows: 0, names: BTreeSet::new(), cell: String::new() })
    }

    pub fn push(&mut self, k: &ImportedKernel) -> std::result::Result<(), csv::Error> {
        self.out.write_field(&k.name)?;
        for x in kernel_row(k) {
            // Most cells of a partial export are empty: `format_number(NaN)` without the formatting.
            if x.is_nan() {
                self.out.write_field("NaN")?;
            } else {
                self.cell.clear();
                crate::table::write_number(&mut self.cell, x);
                self.out.write_field(&self.cell)?;
            }
        }
        self.out.write_record(None::<&[u8]>)?;
        self.rows += 1;
        if !self.names.contains(&k.name) {
            self.names.insert(k.name.clone());
        }
        Ok(())
    }

    /// Flushes the table; returns the writer, the rows written, the distinct kernels and the columns.
    pub fn finish(self) -> std::result::Result<(W, usize, usize, usize), csv::Error> {
        let (rows, kernels) = (self.rows, self.names.len());
        let w = self.out.into_inner().map_err(|e| csv::Error::from(e.into_error()))?;
        Ok((w, rows, kernels, 1 + kernel_columns().len()))
    }
}

/// The same table as a [`Table`] (for tests and callers that want it in memory).
pub fn kernels_table(kernels: &[ImportedKernel], source: &str) -> Table {
    let columns = kernel_columns();
    let mut data = Array2::from_elem((kernels.len(), columns.len()), f64::NAN);
    for (r, k) in kernels.iter().enumerate() {
        for (j, x) in kernel_row(k).enumerate() {
            data[[r, j]] = x;
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

/// Reads the rows written by gpumodel's injection library (`collect --kernel-totals`): `index, name,
/// grid_x…z, block_x…z, registers_per_thread, shared_mem_bytes, duration_s, core_mhz, device, <canonical
/// counters…>` (`core_mhz` and `device` may be absent: rows of an earlier library).
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
        let text = |n: &str| col(n).and_then(|i| rec.get(i)).cloned();
        out.push(ImportedKernel {
            origin: Origin::Inject,
            name: text("name").unwrap_or_default(),
            launch,
            time_s: num(rec, "duration_s"),
            counters,
            code: BTreeMap::new(),
            device: text("device").filter(|d| !d.is_empty()),
            capability: None,
            core_mhz: num(rec, "core_mhz").filter(|f| *f > 0.0),
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

    #[test]
    fn inject_rows_name_the_gpu_and_the_sm_clock() {
        let csv = "index,name,grid_x,grid_y,grid_z,block_x,block_y,block_z,registers_per_thread,shared_mem_bytes,duration_s,core_mhz,device,inst_executed\n\
                   0,\"k\",8,1,1,128,1,1,24,512,0.000002,1410,\"NVIDIA A100-SXM4-40GB\",1000\n\
                   1,\"k\",8,1,1,128,1,1,24,512,0.000002,NaN,\"\",1000\n";
        let k = read_inject_rows(csv, "x.csv").unwrap();
        let p = k[0].to_profile("x.csv", None).unwrap();
        assert_eq!(p.arch.as_deref(), Some("a100"));
        assert_eq!(p.measured.core_mhz, Some(1410.0));
        let q = k[1].to_profile("x.csv", None).unwrap();
        assert_eq!((q.arch, q.measured.core_mhz), (None, None));
    }
}

/// The built-in architecture profile of a GPU named as nvprof's `Device` column names it
/// ("GeForce GTX 1080 Ti (0)"), when there is one.
pub fn arch_of_device(device: &str) -> Option<&'static str> {
    let d = device.to_ascii_lowercase();
    const TABLE: &[(&str, &str)] = &[
        ("1080 ti", "gtx1080ti"),
        ("gtx 980", "gtx980"),
        ("titan x (pascal)", ""),
        ("titan xp", ""),
        ("titan x", "titanx"),
        ("p100", "p100"),
        ("v100", "v100"),
        ("a100", "a100"),
        ("h100", "h100"),
        ("c2075", "c2075"),
        ("m2090", "m2090"),
    ];
    TABLE.iter().find(|(k, _)| d.contains(k)).map(|(_, a)| *a).filter(|a| !a.is_empty())
}

/// A value as nvprof prints it in its metric tables: thousands separators, a `%` suffix (→ a fraction),
/// throughputs in `B/s`, `KB/s`, `MB/s`, `GB/s`, `TB/s` (→ bytes per second; binary prefixes: nvprof
/// prints 10^6 B/s as `976.562500KB/s`), utilization levels `Low (1)` … `Max (10)` (→ the level). `None`
/// for `n/a` and empty cells.
pub(crate) fn value(s: &str) -> Option<f64> {
    let t = s.trim();
    if let Some(p) = t.strip_suffix('%') {
        return number(p).map(|x| x / 100.0);
    }
    if let Some(open) = t.rfind('(')
        && t.ends_with(')')
        && t[..open].trim().chars().all(|c| c.is_ascii_alphabetic())
    {
        return number(&t[open + 1..t.len() - 1]);
    }
    if let Some(rate) = t.strip_suffix("B/s") {
        let (digits, k) = match rate.chars().last() {
            Some('K') => (&rate[..rate.len() - 1], 1024.0),
            Some('M') => (&rate[..rate.len() - 1], 1024.0 * 1024.0),
            Some('G') => (&rate[..rate.len() - 1], 1024.0 * 1024.0 * 1024.0),
            Some('T') => (&rate[..rate.len() - 1], 1024.0_f64.powi(4)),
            _ => (rate, 1.0),
        };
        return number(digits).map(|x| x * k);
    }
    number(t)
}

/// Which source metrics fed a canonical counter and which were dropped, over a whole file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricUse {
    pub mapped: BTreeSet<String>,
    pub dropped: BTreeSet<String>,
}

impl MetricUse {
    /// Records one kernel's metrics: `used` fed a counter, the rest of `all` were dropped.
    pub(crate) fn record<'a>(&mut self, all: impl Iterator<Item = &'a String>, used: &BTreeSet<String>) {
        for m in all {
            if used.contains(m) {
                self.dropped.remove(m);
                self.mapped.insert(m.clone());
            } else if !self.mapped.contains(m) {
                self.dropped.insert(m.clone());
            }
        }
    }
}

#[cfg(test)]
mod rate_tests {
    use super::per_second;

    /// ncu's raw page prints the SM clock in cycles per nanosecond: 1.41 of them is 1410 MHz.
    #[test]
    fn clock_rates_read_in_every_unit_ncu_prints() {
        let mhz = |v: f64, u: &str| per_second(v, u).map(|hz| (hz / 1e6 * 1e6).round() / 1e6);
        assert_eq!(mhz(1.41, "cycle/nsecond"), Some(1410.0));
        assert_eq!(mhz(1410.0, "cycle/usecond"), Some(1410.0));
        assert_eq!(mhz(1.41, "Ghz"), Some(1410.0));
        assert_eq!(mhz(1410.0, "Mhz"), Some(1410.0));
        assert_eq!(mhz(1.41e9, ""), Some(1410.0));
        assert_eq!(per_second(3.0, "byte"), None);
    }
}
