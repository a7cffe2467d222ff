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
//! * **nvprof** `nvprof --csv --metrics …` or `--events …`: `==` log lines, then rows of
//!   `Device, Kernel, Invocations, Metric Name|Event Name, [Metric Description,] Min, Max, Avg`, one per
//!   kernel and metric; with both `--events` and `--metrics`, two tables, each with its own header (the
//!   metric table has an extra `Metric Description` column). Names equal to a canonical counter (they are the paper's Fermi event names) are
//!   taken as they are; a few nvprof metrics with the same meaning are mapped ([`NVPROF_ALIASES`]).
//!   nvprof's metric CSV has no launch configuration: those profiles need one from the user.

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

/// One imported kernel launch (ncu) or kernel (nvprof, averaged over invocations).
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedKernel {
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
                "{source}: kernel '{}' has no launch configuration (nvprof's metric CSV lacks it): give grid and block",
                self.name
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

/// Reads `ncu --csv --page raw` output.
pub fn read_ncu(text: &str, source: &str) -> Result<Vec<ImportedKernel>> {
    // ncu prints "==PROF==" log lines, and the profiled program's own output lands in the same stream
    // when stdout is redirected: the table starts at the header row, the first with a "Kernel Name" cell.
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with("==")).collect();
    let start = lines.iter().position(|l| l.contains("\"Kernel Name\"")).unwrap_or(0);
    let body = lines[start..].join("\n");
    let recs = read_records(&body, source)?;
    let fmt = |m: &str| Error::Format { file: source.into(), message: m.into() };
    let header =
        recs.first().ok_or_else(|| fmt("empty file: expected the output of `ncu --csv --page raw`"))?;
    let col = |name: &str| header.iter().position(|h| h == name);
    let kname = col("Kernel Name").ok_or_else(|| {
        fmt("no 'Kernel Name' column: expected the output of `ncu --csv --page raw` (not --page details)")
    })?;
    let units: Vec<String> = recs.get(1).cloned().unwrap_or_default();
    // The units row has no kernel name; data rows do.
    let data_start = if units.get(kname).is_some_and(|s| s.is_empty()) { 2 } else { 1 };
    let (block, grid) = (col("Block Size"), col("Grid Size"));
    let regs = col("launch__registers_per_thread");
    let smem: Vec<usize> = header
        .iter()
        .enumerate()
        .filter(|(_, h)| {
            *h == "launch__shared_mem_per_block_static" || *h == "launch__shared_mem_per_block_dynamic"
        })
        .map(|(i, _)| i)
        .collect();
    // Per column: the factor to the base unit (1 without a units row).
    let scale: Vec<f64> = (0..header.len())
        .map(|i| if data_start == 2 { units.get(i).map_or(1.0, |u| count_scale(u)) } else { 1.0 })
        .collect();
    let dur = col("gpu__time_duration.sum");
    let dur_scale = dur
        .and_then(|i| units.get(i))
        .map_or(Some(1e-9), |u| if u.is_empty() { Some(1e-9) } else { time_scale(u) });
    // Canonical counters from the range map (the same metric names on every chip).
    let map = CounterMap::builtin("GA102")?;
    let mut out = Vec::new();
    for (n, rec) in recs.iter().enumerate().skip(data_start) {
        let line = n + 1;
        let cell = |i: Option<usize>| i.and_then(|i| rec.get(i)).map(String::as_str).unwrap_or("");
        let name = cell(Some(kname)).to_string();
        if name.is_empty() {
            continue;
        }
        let mut values = BTreeMap::new();
        for (i, h) in header.iter().enumerate() {
            if let Some(v) = rec.get(i).and_then(|s| number(s)) {
                values.insert(h.clone(), v * scale[i]);
            }
        }
        let counters = map.canonical(MapKind::Range, &values);
        let launch = match (dim3(cell(grid)), dim3(cell(block))) {
            (Some(g), Some(b)) => Some(Launch {
                grid: g,
                block: b,
                registers_per_thread: number(cell(regs)).map_or(0, |r| r as u32),
                shared_mem_per_block: smem
                    .iter()
                    .filter_map(|&i| rec.get(i).and_then(|s| number(s)).map(|v| v * scale[i]))
                    .sum::<f64>()
                    .round() as u32,
            }),
            _ if grid.is_some() => {
                return Err(Error::Parse {
                    file: source.into(),
                    line: line as u64,
                    column: "Grid Size".into(),
                    message: format!("'{}' is not a launch size like (256, 1, 1)", cell(grid)),
                });
            }
            _ => None,
        };
        let time_s = match (number(cell(dur)), dur_scale) {
            (Some(t), Some(k)) => Some(t * k),
            _ => None,
        };
        out.push(ImportedKernel { name, launch, time_s, counters });
    }
    if out.is_empty() {
        return Err(fmt(
            "no kernel rows: was the program's kernel profiled (check ncu's --kernel-name filter)?",
        ));
    }
    Ok(out)
}

/// Reads `nvprof --csv --metrics …` or `--events …` output (per-kernel averages over invocations).
pub fn read_nvprof(text: &str, source: &str) -> Result<(Vec<ImportedKernel>, Vec<String>)> {
    // nvprof's "==PID==" log lines and the program's own output (same stream with `2>&1`) come before
    // and between the tables: the table starts at the first header row.
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
            message: format!("'{a}' is not a number"),
        })?;
        let i = match kernels.iter().position(|x| &x.name == k) {
            Some(i) => i,
            None => {
                kernels.push(ImportedKernel {
                    name: k.clone(),
                    launch: None,
                    time_s: None,
                    counters: BTreeMap::new(),
                });
                kernels.len() - 1
            }
        };
        kernels[i].counters.insert(c.to_string(), v);
    }
    if kernels.is_empty() {
        return Err(fmt("no rows with a known counter: see `gpumodel counters` for the names used"));
    }
    Ok((kernels, ignored))
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
        out.push(ImportedKernel { name, launch, time_s: num(rec, "duration_s"), counters });
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
