//! Importers: public measurement formats → the training table.
//!
//! * **Guerreiro** (gpmTOOL, HPCA'18 / TPDS'19): four header lines — number of clock domains, default
//!   clocks, components per domain, component names — then `[name,]power,F_1..F_d,util_1..util_n`. The
//!   name is optional and one name can label several microbenchmarks, so a row's group is its name plus its
//!   utilization vector (the vector alone when there is no name).
//! * **NV-DVFS** (Wang & Chu, ICPADS'18): an nvprof metrics + power CSV with `appName, coreF, memF, argNo,
//!   kernel, time/ms, blocks "(gx gy gz) (bx by bz)", warps, <metrics…>, power/W`.
//!
//! Every source column is kept. A malformed row is an error naming file, line and column, unless the
//! caller asks to skip bad rows, in which case each skipped row is reported.

use crate::error::{Error, Result};
use crate::table::{GROUP_COLUMN, Table, TextColumn, csv_error, parse_number};
use ndarray::Array2;
use std::collections::BTreeMap;
use std::path::Path;

/// Formats the importers read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Guerreiro et al.'s gpmTOOL CSV.
    Guerreiro,
    /// NV-DVFS-Benchmark's nvprof + power CSV.
    Nvdvfs,
    /// Our own training table.
    Table,
}

impl Format {
    /// Parses the name used on the command line and in the registry.
    pub fn from_name(name: &str) -> Result<Format> {
        match name {
            "guerreiro" => Ok(Format::Guerreiro),
            "nvdvfs" => Ok(Format::Nvdvfs),
            "table" => Ok(Format::Table),
            other => Err(Error::Invalid(format!("unknown format '{other}': use guerreiro, nvdvfs or table"))),
        }
    }

    /// The name used on the command line and in the registry.
    pub fn name(self) -> &'static str {
        match self {
            Format::Guerreiro => "guerreiro",
            Format::Nvdvfs => "nvdvfs",
            Format::Table => "table",
        }
    }

    /// Guesses the format from a file's first line, when that is unambiguous.
    pub fn guess(bytes: &[u8]) -> Option<Format> {
        let first = bytes.split(|&b| b == b'\n').next()?;
        let first = String::from_utf8_lossy(first);
        let first = first.trim();
        if first.parse::<u32>().is_ok() {
            Some(Format::Guerreiro)
        } else if first.contains("appName") && (first.contains("coreF") || first.contains("power/W")) {
            Some(Format::Nvdvfs)
        } else if first.contains(',') {
            Some(Format::Table)
        } else {
            None
        }
    }
}

/// What to do with a malformed data row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BadRows {
    /// Stop at the first one with an error naming file, line and column.
    #[default]
    Fail,
    /// Skip it and report it in [`Imported::skipped`].
    Skip,
}

/// An imported table and the rows that were skipped (only with [`BadRows::Skip`]).
#[derive(Debug)]
pub struct Imported {
    pub table: Table,
    pub skipped: Vec<Error>,
}

/// Imports a file in the given format.
pub fn import_file(path: &Path, format: Format, bad: BadRows) -> Result<Imported> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    import_bytes(&bytes, &path.display().to_string(), format, bad)
}

/// Imports bytes in the given format; `source` names them in errors.
pub fn import_bytes(bytes: &[u8], source: &str, format: Format, bad: BadRows) -> Result<Imported> {
    if std::str::from_utf8(bytes).is_err() {
        return Err(Error::not_text(source));
    }
    match format {
        Format::Guerreiro => guerreiro(bytes, source, bad),
        Format::Nvdvfs => nvdvfs(bytes, source, bad),
        Format::Table => {
            Ok(Imported { table: Table::read_csv_bytes(bytes, source, GROUP_COLUMN)?, skipped: Vec::new() })
        }
    }
}

struct RowSink {
    bad: BadRows,
    skipped: Vec<Error>,
}

impl RowSink {
    /// Routes a row error: returns it (fail) or records it (skip).
    fn reject(&mut self, e: Error) -> Result<()> {
        match self.bad {
            BadRows::Fail => Err(e),
            BadRows::Skip => {
                self.skipped.push(e);
                Ok(())
            }
        }
    }
}

fn parse_err(source: &str, line: u64, column: &str, message: String) -> Error {
    // A header cell can hold a line break too (a stray quote): the error stays one line.
    Error::Parse { file: source.to_string(), line, column: crate::table::shown(column), message }
}

fn records(bytes: &[u8], has_headers: bool) -> csv::Reader<&[u8]> {
    csv::ReaderBuilder::new().has_headers(has_headers).flexible(true).from_reader(bytes)
}

fn guerreiro(bytes: &[u8], source: &str, bad: BadRows) -> Result<Imported> {
    let mut reader = records(bytes, false);
    let mut rows = reader.records();
    let mut header = Vec::new();
    for expected in ["number of clock domains", "default clocks", "components per domain", "component names"]
    {
        match rows.next() {
            Some(Ok(r)) => header.push(r),
            Some(Err(e)) => return Err(csv_error(source, e)),
            None => {
                return Err(Error::Format {
                    file: source.to_string(),
                    message: format!(
                        "truncated: the Guerreiro format starts with 4 header lines, line {} ({expected}) is missing",
                        header.len() + 1
                    ),
                });
            }
        }
    }
    let field = |line: usize, j: usize, what: &str| -> Result<f64> {
        header[line].get(j).and_then(parse_number).ok_or_else(|| {
            parse_err(source, line as u64 + 1, &(j + 1).to_string(), format!("{what} must be a number"))
        })
    };
    let n_domains = field(0, 0, "the number of clock domains")? as usize;
    if n_domains == 0 || header[1].len() != n_domains || header[2].len() != n_domains {
        return Err(parse_err(
            source,
            2,
            "*",
            format!(
                "{n_domains} clock domain(s) need as many default clocks (line 2 has {}) and component counts (line 3 has {})",
                header[1].len(),
                header[2].len()
            ),
        ));
    }
    let default_clocks =
        (0..n_domains).map(|j| field(1, j, "a default clock")).collect::<Result<Vec<_>>>()?;
    let n_comp: usize = (0..n_domains)
        .map(|j| field(2, j, "a component count").map(|x| x as usize))
        .sum::<Result<usize>>()?;
    let comp_names: Vec<String> = header[3].iter().map(|s| s.trim().to_string()).collect();
    if comp_names.len() != n_comp {
        return Err(parse_err(
            source,
            4,
            "*",
            format!("line 3 announces {n_comp} components but line 4 names {}", comp_names.len()),
        ));
    }
    let clock_names: Vec<String> = match n_domains {
        1 => vec!["core_mhz".into()],
        2 => vec!["core_mhz".into(), "mem_mhz".into()],
        d => (1..=d).map(|i| format!("clock{i}_mhz")).collect(),
    };
    let numeric_width = 1 + n_domains + n_comp;
    let mut columns: Vec<String> = vec!["power_w".into()];
    columns.extend(clock_names.iter().cloned());
    columns.extend(comp_names.iter().cloned());
    let column_label = |j: usize| columns[j].clone();

    let mut sink = RowSink { bad, skipped: Vec::new() };
    let mut names: Vec<String> = Vec::new();
    let mut values: Vec<f64> = Vec::new();
    let mut has_name: Option<bool> = None;
    for rec in rows {
        let rec = match rec {
            Ok(r) => r,
            Err(e) => {
                sink.reject(csv_error(source, e))?;
                continue;
            }
        };
        let line = rec.position().map_or(0, |p| p.line());
        if rec.len() == 1 && rec[0].trim().is_empty() {
            continue;
        }
        let named = match has_name {
            Some(h) => h,
            None if rec.len() == numeric_width + 1 => *has_name.insert(true),
            None if rec.len() == numeric_width => *has_name.insert(false),
            None => {
                sink.reject(parse_err(
                    source,
                    line,
                    "*",
                    format!(
                        "expected {} fields ([name,]power,{} clock(s),{n_comp} utilizations), found {}",
                        numeric_width + 1,
                        n_domains,
                        rec.len()
                    ),
                ))?;
                continue;
            }
        };
        let width = numeric_width + usize::from(named);
        if rec.len() != width {
            sink.reject(parse_err(
                source,
                line,
                "*",
                format!(
                    "expected {width} fields, found {}: the row is truncated or has extra cells",
                    rec.len()
                ),
            ))?;
            continue;
        }
        let offset = usize::from(named);
        let mut row = Vec::with_capacity(numeric_width);
        let mut failed = None;
        for j in 0..numeric_width {
            let cell = &rec[offset + j];
            match parse_number(cell) {
                Some(x) if x.is_finite() => row.push(x),
                _ => {
                    failed = Some(parse_err(
                        source,
                        line,
                        &column_label(j),
                        format!("'{}' is not a finite number", crate::table::shown(cell)),
                    ));
                    break;
                }
            }
        }
        if let Some(e) = failed {
            sink.reject(e)?;
            continue;
        }
        names.push(if named { rec[0].trim().to_string() } else { String::new() });
        values.extend(row);
    }
    let n = names.len();
    if n == 0 {
        return Err(Error::Format {
            file: source.to_string(),
            message: "no data rows after the 4 header lines".into(),
        });
    }
    let mut data =
        Array2::from_shape_vec((n, numeric_width), values).map_err(|e| Error::Mismatch(e.to_string()))?;
    let util = data.slice(ndarray::s![.., 1 + n_domains..]).to_owned();
    let groups = guerreiro_groups(&names, &util);
    // The default clocks (line 2) are kept as columns: the utilizations were measured at them.
    for (name, clock) in clock_names.iter().zip(&default_clocks) {
        let col = ndarray::Array1::from_elem(n, *clock);
        data.push_column(col.view()).map_err(|e| Error::Mismatch(e.to_string()))?;
        columns.push(format!("default_{name}"));
    }
    Ok(Imported {
        table: Table {
            source: source.to_string(),
            group_column: GROUP_COLUMN.into(),
            groups,
            text: vec![TextColumn { name: "name".into(), values: names }],
            columns,
            data,
        },
        skipped: sink.skipped,
    })
}

/// Group labels: the name when it labels one utilization vector, `name#k` when it labels several (k in
/// order of first appearance), `ub<k>` for unnamed rows.
fn guerreiro_groups(names: &[String], util: &Array2<f64>) -> Vec<String> {
    let key = |i: usize| -> Vec<u64> { util.row(i).iter().map(|x| x.to_bits()).collect() };
    let mut per_name: BTreeMap<&str, Vec<Vec<u64>>> = BTreeMap::new();
    for (i, name) in names.iter().enumerate() {
        let k = key(i);
        let v = per_name.entry(name.as_str()).or_default();
        if !v.contains(&k) {
            v.push(k);
        }
    }
    names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let vectors = &per_name[name.as_str()];
            let pos = vectors.iter().position(|v| *v == key(i)).unwrap_or(0) + 1;
            if name.is_empty() {
                format!("ub{pos}")
            } else if vectors.len() == 1 {
                name.clone()
            } else {
                format!("{name}#{pos}")
            }
        })
        .collect()
}

/// Parses NV-DVFS's launch shape "(gx gy gz) (bx by bz)".
pub fn parse_launch_shape(s: &str) -> Option<[f64; 6]> {
    let nums: Vec<f64> = s
        .split(|c: char| c == '(' || c == ')' || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .map(|t| t.parse::<f64>().ok())
        .collect::<Option<Vec<_>>>()?;
    (nums.len() == 6 && nums.iter().all(|x| *x >= 1.0))
        .then(|| [nums[0], nums[1], nums[2], nums[3], nums[4], nums[5]])
}

const NVDVFS_TEXT: [&str; 4] = ["appName", "argNo", "kernel", "blocks"];

fn nvdvfs(bytes: &[u8], source: &str, bad: BadRows) -> Result<Imported> {
    let mut reader = records(bytes, true);
    let header: Vec<String> =
        reader.headers().map_err(|e| csv_error(source, e))?.iter().map(|h| h.trim().to_string()).collect();
    // power/W is optional: a file of times alone (no power meter) is still NV-DVFS data for the timing
    // model; training a power model on it then says the target is missing.
    for required in ["appName", "coreF", "memF", "kernel", "time/ms", "blocks"] {
        if !header.iter().any(|h| h == required) {
            return Err(Error::Format {
                file: source.to_string(),
                message: format!(
                    "not an NV-DVFS file: the header has no '{required}' column (expected appName, coreF, memF, argNo, kernel, time/ms, blocks, …[, power/W])"
                ),
            });
        }
    }
    // Output names: canonical names for the quantities every model uses, source names for the rest.
    let rename = |h: &str| -> String {
        match h {
            "" => "source_index".into(),
            "coreF" => "core_mhz".into(),
            "memF" => "mem_mhz".into(),
            "time/ms" => "time_ms".into(),
            "power/W" => "power_w".into(),
            other => other.to_string(),
        }
    };
    let numeric_src: Vec<usize> =
        (0..header.len()).filter(|&j| !NVDVFS_TEXT.contains(&header[j].as_str())).collect();
    let mut columns: Vec<String> = numeric_src.iter().map(|&j| rename(&header[j])).collect();
    let time_ms_at = columns.iter().position(|c| c == "time_ms").expect("required above");
    let blocks_at = header.iter().position(|h| h == "blocks").expect("required above");
    let idx = |name: &str| header.iter().position(|h| h == name).expect("required above");
    let (app_at, argno_at, kernel_at) =
        (idx("appName"), header.iter().position(|h| h == "argNo"), idx("kernel"));
    let launch_names = ["grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z"];
    let mut sink = RowSink { bad, skipped: Vec::new() };
    let (mut apps, mut args, mut kernels, mut shapes) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut values: Vec<f64> = Vec::new();
    let width = numeric_src.len() + 1 + launch_names.len();
    for rec in reader.records() {
        let rec = match rec {
            Ok(r) => r,
            Err(e) => {
                sink.reject(csv_error(source, e))?;
                continue;
            }
        };
        let line = rec.position().map_or(0, |p| p.line());
        if rec.len() != header.len() {
            sink.reject(parse_err(
                source,
                line,
                "*",
                format!(
                    "expected {} fields, found {}: the row is truncated or has extra cells",
                    header.len(),
                    rec.len()
                ),
            ))?;
            continue;
        }
        let mut row = Vec::with_capacity(width);
        let mut failed = None;
        for &j in &numeric_src {
            match parse_number(&rec[j]) {
                Some(x) if x.is_finite() => row.push(x),
                _ => {
                    failed = Some(parse_err(
                        source,
                        line,
                        &header[j],
                        format!("'{}' is not a finite number", crate::table::shown(&rec[j])),
                    ));
                    break;
                }
            }
        }
        let shape = parse_launch_shape(&rec[blocks_at]);
        if failed.is_none() && shape.is_none() {
            failed = Some(parse_err(
                source,
                line,
                "blocks",
                format!("'{}' is not a launch shape \"(gx gy gz) (bx by bz)\"", rec[blocks_at].trim()),
            ));
        }
        let app = rec[app_at].trim();
        if failed.is_none() && app.is_empty() {
            failed = Some(parse_err(source, line, "appName", "empty application name".into()));
        }
        if let Some(e) = failed {
            sink.reject(e)?;
            continue;
        }
        row.push(row[time_ms_at] / 1000.0);
        row.extend(shape.expect("checked above"));
        values.extend(row);
        apps.push(app.to_string());
        args.push(argno_at.map_or(String::new(), |j| rec[j].trim().to_string()));
        kernels.push(rec[kernel_at].trim().to_string());
        shapes.push(rec[blocks_at].trim().to_string());
    }
    let n = apps.len();
    if n == 0 {
        return Err(Error::Format {
            file: source.to_string(),
            message: "no data rows after the header".into(),
        });
    }
    columns.push("time_s".into());
    columns.extend(launch_names.iter().map(|s| s.to_string()));
    let data = Array2::from_shape_vec((n, width), values).map_err(|e| Error::Mismatch(e.to_string()))?;
    Ok(Imported {
        table: Table {
            source: source.to_string(),
            group_column: GROUP_COLUMN.into(),
            groups: apps.clone(),
            text: vec![
                TextColumn { name: "app".into(), values: apps },
                TextColumn { name: "argNo".into(), values: args },
                TextColumn { name: "kernel_function".into(), values: kernels },
                TextColumn { name: "blocks".into(), values: shapes },
            ],
            columns,
            data,
        },
        skipped: sink.skipped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: &str = "2\n975,3505\n2,1\nA,B,C\nk,100,975,3505,0.1,0.2,0.3\nk,90,900,3505,0.1,0.2,0.3\nk,50,975,3505,0.5,0,0\nj,40,975,810,0,0,0\n";

    #[test]
    fn guerreiro_groups_by_name_and_vector() {
        let t = import_bytes(G.as_bytes(), "g.csv", Format::Guerreiro, BadRows::Fail).unwrap().table;
        assert_eq!(t.groups, vec!["k#1", "k#1", "k#2", "j"]);
        assert_eq!(
            t.columns,
            vec!["power_w", "core_mhz", "mem_mhz", "A", "B", "C", "default_core_mhz", "default_mem_mhz"]
        );
        assert_eq!(t.column("mem_mhz").unwrap()[3], 810.0);
        assert_eq!(t.column("default_core_mhz").unwrap()[0], 975.0);
    }

    #[test]
    fn guerreiro_without_names_groups_by_vector() {
        let src = "1\n1000\n2\nA,B\n100,1000,0.1,0.2\n80,900,0.1,0.2\n30,900,0,0\n";
        let t = import_bytes(src.as_bytes(), "g.csv", Format::Guerreiro, BadRows::Fail).unwrap().table;
        assert_eq!(t.groups, vec!["ub1", "ub1", "ub2"]);
        assert_eq!(t.columns[..4], ["power_w", "core_mhz", "A", "B"]);
    }

    #[test]
    fn guerreiro_bad_cell_names_line_and_column() {
        let src = G.replace("k,90,900", "k,90,fast");
        let msg =
            import_bytes(src.as_bytes(), "g.csv", Format::Guerreiro, BadRows::Fail).unwrap_err().to_string();
        assert_eq!(msg, "g.csv:6: column core_mhz: 'fast' is not a finite number");
    }

    #[test]
    fn guerreiro_skip_counts_bad_rows() {
        let src = G.replace("j,40,975,810,0,0,0", "j,40,975");
        let imp = import_bytes(src.as_bytes(), "g.csv", Format::Guerreiro, BadRows::Skip).unwrap();
        assert_eq!(imp.table.n_rows(), 3);
        assert_eq!(imp.skipped.len(), 1);
        assert!(imp.skipped[0].to_string().starts_with("g.csv:8:"));
    }

    #[test]
    fn guerreiro_truncated_header() {
        let msg = import_bytes(b"2\n975,3505\n", "g.csv", Format::Guerreiro, BadRows::Fail)
            .unwrap_err()
            .to_string();
        assert!(msg.contains("line 3 (components per domain) is missing"), "{msg}");
    }

    #[test]
    fn launch_shape() {
        assert_eq!(parse_launch_shape("(224000 1 1) (128 1 1)"), Some([224000.0, 1.0, 1.0, 128.0, 1.0, 1.0]));
        assert_eq!(parse_launch_shape("(1 1) (128 1 1)"), None);
    }

    #[test]
    fn nvdvfs_minimal() {
        let src = ",appName,coreF,memF,argNo,kernel,time/ms,blocks,warps,ipc,power/W\n\
                   0,app,1600,4000,input00,k,2.0,(10 1 1) (128 1 1),40,1.5,150.5\n";
        let t = import_bytes(src.as_bytes(), "n.csv", Format::Nvdvfs, BadRows::Fail).unwrap().table;
        assert_eq!(t.groups, vec!["app"]);
        assert_eq!(t.column("time_s").unwrap()[0], 0.002);
        assert_eq!(t.column("block_x").unwrap()[0], 128.0);
        assert_eq!(t.column("power_w").unwrap()[0], 150.5);
        assert_eq!(t.text_column("kernel_function").unwrap()[0], "k");
    }

    /// A file without power/W is NV-DVFS data all the same: guessed and imported as such (times only),
    /// not called "not an NV-DVFS file" nor guessed to be a plain table.
    #[test]
    fn nvdvfs_without_power_is_still_nvdvfs() {
        let src = ",appName,coreF,memF,argNo,kernel,time/ms,blocks,warps\n\
                   0,app,1600,4000,input00,k,2.0,(10 1 1) (128 1 1),40\n";
        assert_eq!(Format::guess(src.as_bytes()), Some(Format::Nvdvfs));
        let t = import_bytes(src.as_bytes(), "n.csv", Format::Nvdvfs, BadRows::Fail).unwrap().table;
        assert_eq!(t.column("time_s").unwrap()[0], 0.002);
        assert!(t.column("power_w").is_none());
    }

    #[test]
    fn guess_formats() {
        assert_eq!(Format::guess(G.as_bytes()), Some(Format::Guerreiro));
        assert_eq!(Format::guess(b",appName,coreF,power/W\n"), Some(Format::Nvdvfs));
        assert_eq!(Format::guess(b"kernel,power_w\n"), Some(Format::Table));
    }
}

/// What `gpumodel import … --out FILE` did: the training table written and the kernel profiles beside it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ImportSummary {
    /// The imported file as the user named it.
    pub source: String,
    /// The importer: guerreiro, nvdvfs, ncu or nvprof.
    pub format: String,
    /// The training table written.
    pub out: String,
    pub rows: usize,
    /// Columns of the table: kernel, text and numeric.
    pub columns: usize,
    pub kernels: usize,
    /// Malformed rows skipped (`--skip-bad-rows`).
    pub skipped_rows: usize,
    /// Where the kernel profiles went (`--profiles DIR`) and how many.
    pub profiles_dir: Option<String>,
    pub profiles: usize,
}

impl ImportSummary {
    /// The summary of `table` imported from `source` with `format` and written to `out`.
    pub fn of(table: &Table, source: &str, format: &str, out: &str) -> ImportSummary {
        ImportSummary {
            source: source.to_string(),
            format: format.to_string(),
            out: out.to_string(),
            rows: table.n_rows(),
            columns: 1 + table.text.len() + table.columns.len(),
            kernels: table.distinct_groups().len(),
            skipped_rows: 0,
            profiles_dir: None,
            profiles: 0,
        }
    }
}

impl crate::export::Export for ImportSummary {
    const COMMAND: &'static str = "import";

    fn sections(&self) -> Vec<crate::export::Section> {
        use crate::export::{Cell, Column, Section};
        let count = |n: usize| Cell::int(i64::try_from(n).unwrap_or(i64::MAX));
        let mut s = Section::new(vec![
            Column::new("out", "table"),
            Column::new("rows", "rows"),
            Column::new("columns", "columns"),
            Column::new("kernels", "kernels"),
            Column::new("skipped_rows", "skipped rows"),
            Column::new("profiles", "profiles"),
        ]);
        s.push(vec![
            Cell::text(&self.out),
            count(self.rows),
            count(self.columns),
            count(self.kernels),
            count(self.skipped_rows),
            count(self.profiles),
        ]);
        vec![s]
    }

    fn notes(&self) -> Vec<String> {
        let mut out = vec![format!("imported {} ({})", self.source, self.format)];
        if let Some(d) = &self.profiles_dir {
            out.push(format!("kernel profiles (inputs of `gpumodel predict --kernel`) in {d}"));
        }
        out
    }
}
