//! The training table: named numeric columns as an `ndarray` matrix, a group label per row (the kernel or
//! application, for grouped cross-validation), and any text columns the source had.
//!
//! On disk it is a CSV with a header: the group column first, then the text columns, then the numeric ones.
//! Canonical column names: `power_w` (target), `time_s`, `core_mhz`, `mem_mhz`, group `kernel`.

use crate::error::{Error, Result};
use ndarray::{Array1, Array2, ArrayView1, Axis};
use std::collections::BTreeSet;
use std::path::Path;

/// Name of the group column in tables the project writes.
pub const GROUP_COLUMN: &str = "kernel";

/// A text column kept from the source (names, launch shapes, …).
#[derive(Debug, Clone, PartialEq)]
pub struct TextColumn {
    pub name: String,
    pub values: Vec<String>,
}

/// Rows of measurements: numeric columns, one group label per row, and text columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// Where the table came from, for error messages.
    pub source: String,
    /// Name of the group column.
    pub group_column: String,
    /// Group label of each row.
    pub groups: Vec<String>,
    /// Other text columns.
    pub text: Vec<TextColumn>,
    /// Names of the numeric columns, in order.
    pub columns: Vec<String>,
    /// Numeric data, rows × columns.
    pub data: Array2<f64>,
}

impl Table {
    /// Number of rows.
    pub fn n_rows(&self) -> usize {
        self.data.nrows()
    }

    /// Position of a numeric column.
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == name)
    }

    /// A numeric column by name.
    pub fn column(&self, name: &str) -> Option<ArrayView1<'_, f64>> {
        self.column_index(name).map(|j| self.data.column(j))
    }

    /// A text column by name (the group column included).
    pub fn text_column(&self, name: &str) -> Option<&[String]> {
        if name == self.group_column {
            return Some(&self.groups);
        }
        self.text.iter().find(|c| c.name == name).map(|c| c.values.as_slice())
    }

    /// Distinct group labels, sorted.
    pub fn distinct_groups(&self) -> BTreeSet<&str> {
        self.groups.iter().map(String::as_str).collect()
    }

    /// Distinct values of a numeric column, sorted (e.g. the clocks present).
    pub fn distinct_values(&self, name: &str) -> Vec<f64> {
        let Some(col) = self.column(name) else {
            return Vec::new();
        };
        let mut v: Vec<f64> = col.iter().copied().filter(|x| x.is_finite()).collect();
        v.sort_by(f64::total_cmp);
        v.dedup();
        v
    }

    /// Minimum and maximum of a numeric column.
    pub fn range(&self, name: &str) -> Option<(f64, f64)> {
        let col = self.column(name)?;
        let lo = col.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = col.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lo <= hi).then_some((lo, hi))
    }

    /// Adds (or replaces) a numeric column.
    pub fn set_column(&mut self, name: &str, values: Array1<f64>) -> Result<()> {
        if values.len() != self.n_rows() {
            return Err(Error::Mismatch(format!(
                "column {name} has {} values for {} rows",
                values.len(),
                self.n_rows()
            )));
        }
        match self.column_index(name) {
            Some(j) => self.data.column_mut(j).assign(&values),
            None => {
                self.data.push_column(values.view()).map_err(|e| Error::Mismatch(e.to_string()))?;
                self.columns.push(name.to_string());
            }
        }
        Ok(())
    }

    /// Keeps only the rows whose index is in `rows`, in that order.
    pub fn select_rows(&self, rows: &[usize]) -> Table {
        Table {
            source: self.source.clone(),
            group_column: self.group_column.clone(),
            groups: rows.iter().map(|&i| self.groups[i].clone()).collect(),
            text: self
                .text
                .iter()
                .map(|c| TextColumn {
                    name: c.name.clone(),
                    values: rows.iter().map(|&i| c.values[i].clone()).collect(),
                })
                .collect(),
            columns: self.columns.clone(),
            data: self.data.select(Axis(0), rows),
        }
    }

    /// Writes the table as CSV: group column, text columns, numeric columns.
    pub fn write_csv(&self, path: &Path) -> Result<()> {
        let file = std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
        self.write_csv_to(file).map_err(|e| Error::io(path, std::io::Error::other(e)))
    }

    /// Writes the table as CSV to any writer.
    pub fn write_csv_to<W: std::io::Write>(&self, w: W) -> std::result::Result<(), csv::Error> {
        let mut out = csv::Writer::from_writer(w);
        let mut header: Vec<&str> = vec![self.group_column.as_str()];
        header.extend(self.text.iter().map(|c| c.name.as_str()));
        header.extend(self.columns.iter().map(String::as_str));
        out.write_record(&header)?;
        let mut record: Vec<String> = Vec::with_capacity(header.len());
        for (i, row) in self.data.rows().into_iter().enumerate() {
            record.clear();
            record.push(self.groups[i].clone());
            record.extend(self.text.iter().map(|c| c.values[i].clone()));
            record.extend(row.iter().map(|x| format_number(*x)));
            out.write_record(&record)?;
        }
        out.flush()?;
        Ok(())
    }

    /// Reads a training table written by [`Table::write_csv`] or any CSV with a header. A column is
    /// numeric when every cell parses as a number; the others are text. `group_column` names the group
    /// column (the project writes `kernel`); when absent, every row is its own group.
    pub fn read_csv(path: &Path, group_column: &str) -> Result<Table> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        Table::read_csv_bytes(&bytes, &path.display().to_string(), group_column)
    }

    /// As [`Table::read_csv`], from bytes; `source` names them in errors.
    pub fn read_csv_bytes(bytes: &[u8], source: &str, group_column: &str) -> Result<Table> {
        let mut reader = csv::ReaderBuilder::new().has_headers(true).flexible(false).from_reader(bytes);
        let header: Vec<String> = reader
            .headers()
            .map_err(|e| csv_error(source, e))?
            .iter()
            .map(|h| h.trim().to_string())
            .collect();
        if header.is_empty() || header.iter().all(String::is_empty) {
            return Err(Error::Format {
                file: source.to_string(),
                message: "no header line: a training table starts with a header of column names".into(),
            });
        }
        let mut cells: Vec<Vec<String>> = vec![Vec::new(); header.len()];
        for rec in reader.records() {
            let rec = rec.map_err(|e| csv_error(source, e))?;
            for (j, v) in rec.iter().enumerate() {
                cells[j].push(v.trim().to_string());
            }
        }
        let n = cells.first().map_or(0, Vec::len);
        if n == 0 {
            return Err(Error::Format {
                file: source.to_string(),
                message: "the table has a header but no rows".into(),
            });
        }
        let mut groups = None;
        let mut text = Vec::new();
        let mut columns = Vec::new();
        let mut numeric: Vec<Vec<f64>> = Vec::new();
        for (name, values) in header.into_iter().zip(cells) {
            if name == group_column {
                groups = Some(values);
                continue;
            }
            let parsed: Option<Vec<f64>> = values.iter().map(|v| parse_number(v)).collect();
            match parsed {
                Some(p) => {
                    columns.push(name);
                    numeric.push(p);
                }
                None => text.push(TextColumn { name, values }),
            }
        }
        let groups = groups.unwrap_or_else(|| (0..n).map(|i| format!("row{}", i + 1)).collect());
        let mut data = Array2::<f64>::zeros((n, columns.len()));
        for (j, col) in numeric.iter().enumerate() {
            data.column_mut(j).assign(&ArrayView1::from(col.as_slice()));
        }
        Ok(Table {
            source: source.to_string(),
            group_column: group_column.to_string(),
            groups,
            text,
            columns,
            data,
        })
    }

    /// Where a text column has a non-numeric cell: the line (1-based, header = line 1) and the value.
    /// Used to explain why a column a feature set asks for is not numeric.
    pub fn first_non_numeric(&self, name: &str) -> Option<(u64, String)> {
        let values = self.text_column(name)?;
        values
            .iter()
            .enumerate()
            .find(|(_, v)| parse_number(v).is_none())
            .map(|(i, v)| (i as u64 + 2, v.clone()))
    }
}

/// Parses a number as written by the sources we read ("nan" and "inf" included; the dataset checks
/// reject them later with the row and column).
pub fn parse_number(s: &str) -> Option<f64> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    s.parse::<f64>().ok()
}

/// Shortest text that reads back as the same f64.
pub fn format_number(x: f64) -> String {
    let mut s = String::new();
    write_number(&mut s, x);
    s
}

/// [`format_number`] appended to `out` (one reused buffer for many cells).
pub fn write_number(out: &mut String, x: f64) {
    use std::fmt::Write as _;
    // Writing to a String cannot fail.
    let _ = if x.fract() == 0.0 && x.abs() < 1e15 { write!(out, "{}", x as i64) } else { write!(out, "{x}") };
}

/// A cell as an error message quotes it: control characters escaped (a stray quote can make a CSV cell
/// span many lines) and at most 40 characters, so the message stays one readable line.
pub fn shown(cell: &str) -> String {
    let t = cell.trim();
    let mut out: String = t.chars().take(40).flat_map(|c| c.escape_debug()).collect();
    // escape_debug also escapes quotes; the message puts the cell in single quotes, so keep `"` as is.
    out = out.replace("\\\"", "\"").replace("\\'", "'");
    if t.chars().count() > 40 {
        out.push('…');
    }
    out
}

pub(crate) fn csv_error(source: &str, e: csv::Error) -> Error {
    let line = e.position().map_or(0, |p| p.line());
    let message = match e.kind() {
        csv::ErrorKind::UnequalLengths { expected_len, len, .. } => {
            format!("expected {expected_len} fields, found {len}: fix the row or remove it")
        }
        _ => e.to_string(),
    };
    if line > 0 {
        Error::Parse { file: source.to_string(), line, column: "*".into(), message }
    } else {
        Error::Format { file: source.to_string(), message }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_round_trip_keeps_every_column() {
        let src = "kernel,app,power_w,core_mhz\nk1,a,100.5,975\nk2,b,80,1164\n";
        let t = Table::read_csv_bytes(src.as_bytes(), "mem", "kernel").unwrap();
        assert_eq!(t.columns, vec!["power_w", "core_mhz"]);
        assert_eq!(t.text_column("app").unwrap(), &["a".to_string(), "b".to_string()]);
        let mut out = Vec::new();
        t.write_csv_to(&mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), src);
    }

    #[test]
    fn a_short_row_names_its_line() {
        let src = "kernel,power_w,core_mhz\nk1,100,975\nk2,80\n";
        let err = Table::read_csv_bytes(src.as_bytes(), "t.csv", "kernel").unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("t.csv:3:"), "{msg}");
        assert!(msg.contains("expected 3 fields, found 2"), "{msg}");
    }

    #[test]
    fn text_in_a_numeric_column_is_found_with_its_line() {
        let src = "kernel,power_w\nk1,100\nk2,abc\n";
        let t = Table::read_csv_bytes(src.as_bytes(), "t.csv", "kernel").unwrap();
        assert!(t.column("power_w").is_none());
        assert_eq!(t.first_non_numeric("power_w"), Some((3, "abc".into())));
    }

    #[test]
    fn header_only_is_an_error() {
        let err = Table::read_csv_bytes(b"kernel,power_w\n", "t.csv", "kernel").unwrap_err();
        assert!(err.to_string().contains("no rows"));
    }
}
