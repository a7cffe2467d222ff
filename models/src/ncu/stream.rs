//! The streaming side of the ncu reader: one reused `csv::ByteRecord`, column and metric names interned
//! once, and per launch only the cells the maps read kept (numbers, or the text of the launch-shape and
//! device cells); every other metric is only counted (for the import report) and range-checked. A
//! launch's memory is then a few dozen numbers whatever the export's width, and a 100 MB file is read
//! without ever being held whole.

use super::common::{count_scale, number_bytes};
use crate::error::Error;
use std::collections::HashMap;
use std::io::{BufRead, Read};
use std::sync::Arc;

/// Lines before the header row (the profiled program's own output) and ncu's `==PROF==` lines are left
/// out of what the csv reader sees; [`Filtered::file_line`] maps its line numbers back to the file's.
pub(super) struct Filtered<R> {
    inner: R,
    line: Vec<u8>,
    pos: usize,
    first: bool,
    /// Lines passed on so far, and for each skipped line how many had been passed on before it: a
    /// record's line in the file is its line in the filtered text plus the skipped lines before it.
    passed: u64,
    skipped: Vec<u64>,
    /// Whether the header row (the first line with a `"Kernel Name"` cell) was seen.
    pub(super) header_seen: bool,
    /// Whether any line other than `==` log lines was seen (an export without the header row).
    pub(super) had_text: bool,
    /// Whether the last line read ended with a newline (ncu ends every line with one: a file that stops
    /// mid-line was cut short).
    pub(super) ends_with_newline: bool,
}

impl<R: BufRead> Filtered<R> {
    pub(super) fn new(inner: R) -> Filtered<R> {
        Filtered {
            inner,
            line: Vec::new(),
            pos: 0,
            first: true,
            passed: 0,
            skipped: Vec::new(),
            header_seen: false,
            had_text: false,
            ends_with_newline: true,
        }
    }

    /// The line in the file of line `line` (from 1) of the text passed on.
    pub(super) fn file_line(&self, line: u64) -> u64 {
        line + self.skipped.partition_point(|&p| p < line) as u64
    }
}

impl<R: BufRead> Read for Filtered<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.pos >= self.line.len() {
            self.line.clear();
            self.pos = 0;
            if self.inner.read_until(b'\n', &mut self.line)? == 0 {
                return Ok(0);
            }
            self.ends_with_newline = self.line.ends_with(b"\n");
            if std::mem::take(&mut self.first) && self.line.starts_with("\u{feff}".as_bytes()) {
                // A UTF-8 byte-order mark (Windows editors, Excel) is not part of the first column's name.
                self.line.drain(..3);
            }
            let log = self.line.starts_with(b"==");
            if !log && !self.line.trim_ascii().is_empty() {
                self.had_text = true;
            }
            if !self.header_seen && !log && contains(&self.line, b"\"Kernel Name\"") {
                self.header_seen = true;
            }
            if log || !self.header_seen {
                self.skipped.push(self.passed);
                self.line.clear();
            } else {
                self.passed += 1;
            }
        }
        let n = buf.len().min(self.line.len() - self.pos);
        buf[..n].copy_from_slice(&self.line[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// What the reader does with a column's or metric's cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Keep {
    /// ncu's identification columns: neither mapped nor dropped, not kept.
    Identity,
    /// An identification column kept as text (`CC`, the compute capability).
    IdentityText,
    /// Read by a map, the launch shape or the time: the number (and its unit) is kept.
    Number,
    /// The launch-shape and device cells, kept as text (`(256, 1, 1)`, `NVIDIA A100-SXM4-40GB`).
    Text,
    /// No model reads it: only counted.
    Count,
}

/// Names (columns, metrics, units) interned once, with what to keep of each.
pub(super) struct Names {
    ids: HashMap<Vec<u8>, u32>,
    pub(super) names: Vec<String>,
    pub(super) keep: Vec<Keep>,
    classify: Box<dyn Fn(&str) -> Keep>,
}

impl Names {
    pub(super) fn new(classify: impl Fn(&str) -> Keep + 'static) -> Names {
        Names { ids: HashMap::new(), names: Vec::new(), keep: Vec::new(), classify: Box::new(classify) }
    }

    /// The id of a name already seen.
    pub(super) fn find(&self, name: &str) -> Option<u32> {
        self.ids.get(name.as_bytes()).copied()
    }

    /// The id of a (trimmed) name.
    pub(super) fn id(&mut self, raw: &[u8]) -> u32 {
        let (keep, classify) = (&mut self.keep, &self.classify);
        intern(&mut self.ids, &mut self.names, raw, |name| keep.push(classify(name)))
    }
}

/// Units interned once, with the factor that brings a value to base units (a fraction for `%`).
#[derive(Default)]
pub(super) struct Units {
    ids: HashMap<Vec<u8>, u32>,
    pub(super) names: Vec<String>,
    factor: Vec<f64>,
}

impl Units {
    pub(super) fn id(&mut self, raw: &[u8]) -> u32 {
        let factor = &mut self.factor;
        // Percentages become fractions; counts go back to base units.
        intern(&mut self.ids, &mut self.names, raw, |name| {
            factor.push(if name == "%" { 0.01 } else { count_scale(name) })
        })
    }

    pub(super) fn factor(&self, unit: u32) -> f64 {
        self.factor[unit as usize]
    }
}

/// A number for a message: in scientific notation when large (`1e300`, not three hundred digits).
pub(crate) fn shown(v: f64) -> String {
    if v.abs() >= 1e15 { format!("{v:e}") } else { format!("{v}") }
}

/// The id of the trimmed `raw` in `ids` / `names`, interning it when new; `first_seen` runs once per name,
/// with the name, before it gets its id.
fn intern(
    ids: &mut HashMap<Vec<u8>, u32>,
    names: &mut Vec<String>,
    raw: &[u8],
    first_seen: impl FnOnce(&str),
) -> u32 {
    let raw = trim(raw);
    if let Some(&i) = ids.get(raw) {
        return i;
    }
    let name = String::from_utf8_lossy(raw).into_owned();
    let i = names.len() as u32;
    first_seen(&name);
    names.push(name);
    ids.insert(raw.to_vec(), i);
    i
}

pub(super) fn trim(b: &[u8]) -> &[u8] {
    b.trim_ascii()
}

/// A kept cell of one launch.
#[derive(Debug, Clone)]
pub(super) enum Kept {
    Number { value: f64, unit: u32 },
    Text(Box<str>),
}

/// One launch while it is read: where it starts, its kernel name, the metrics it has (a shared,
/// deduplicated set), the cells the maps read, and the first out-of-range value (reported in launch order).
pub(super) struct Launch {
    pub(super) line: u64,
    pub(super) name: u32,
    pub(super) present: Arc<[u32]>,
    pub(super) open: Vec<u32>,
    pub(super) kept: Vec<(u32, Kept)>,
    pub(super) error: Option<Error>,
}

impl Launch {
    pub(super) fn new(line: u64, name: u32) -> Launch {
        Launch { line, name, present: Arc::from([]), open: Vec::new(), kept: Vec::new(), error: None }
    }

    /// Takes one cell: counted when it is a number and a metric, range-checked, kept when a map reads it.
    pub(super) fn cell(
        &mut self,
        id: u32,
        raw: &[u8],
        unit: u32,
        names: &Names,
        units: &Units,
        source: &str,
    ) {
        let keep = names.keep[id as usize];
        let x = number_bytes(raw);
        if let Some(x) = x {
            if !matches!(keep, Keep::Identity | Keep::IdentityText) {
                self.open.push(id);
            }
            let v = x * units.factor(unit);
            if self.error.is_none() && !(v.is_finite() && v.abs() <= crate::profile::MAX_COUNTER_TOTAL) {
                self.error = Some(Error::Parse {
                    file: source.into(),
                    line: self.line,
                    column: names.names[id as usize].clone(),
                    message: format!("{} is outside ±1e18, the range of a launch's counter", shown(v)),
                });
            }
        }
        match (keep, x) {
            (Keep::Number, Some(value)) => self.kept.push((id, Kept::Number { value, unit })),
            (Keep::Text | Keep::IdentityText, _) => {
                self.kept.push((id, Kept::Text(String::from_utf8_lossy(trim(raw)).into())));
            }
            _ => {}
        }
    }

    /// Closes the set of metrics the launch has, sharing it with the launches that had the same set.
    pub(super) fn close(&mut self, sets: &mut Sets) {
        let mut open = std::mem::take(&mut self.open);
        // Most launches have the cells of the one before, in the same order: its set, without sorting.
        if let Some((last_open, last)) = &sets.last
            && *last_open == open
        {
            self.present = last.clone();
            return;
        }
        let in_order = open.clone();
        open.sort_unstable();
        open.dedup();
        self.present = match sets.seen.get(&open) {
            Some(s) => s.clone(),
            None => {
                let s: Arc<[u32]> = Arc::from(open.as_slice());
                sets.seen.insert(open, s.clone());
                s
            }
        };
        sets.last = Some((in_order, self.present.clone()));
    }
}

/// The metric sets launches have (shared), and the last launch's metrics in the order read with its set.
#[derive(Default)]
pub(super) struct Sets {
    seen: HashMap<Vec<u32>, Arc<[u32]>>,
    last: Option<(Vec<u32>, Arc<[u32]>)>,
}
