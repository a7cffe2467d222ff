//! One output layer for every command.
//!
//! A command computes one serializable result struct and implements [`Export`] on it: the tables it
//! shows ([`Section`]s of typed [`Cell`]s) and the lines of prose around them. [`render`] turns the same
//! value into an aligned text table for people, CSV (through `csv::Writer`, so kernel names such as
//! `void f<int, 2>(float*, int)` survive), JSON (the struct itself, tagged with the command and its format
//! version so that `gpumodel report` can read any command's output) or Markdown.
//!
//! ```
//! use gpumodel_models::export::{render, Cell, Column, Export, Format, Section};
//! #[derive(serde::Serialize)]
//! struct Speeds { kernels: Vec<(String, f64)> }
//! impl Export for Speeds {
//!     const COMMAND: &'static str = "example";
//!     fn sections(&self) -> Vec<Section> {
//!         let mut s = Section::new(vec![Column::new("kernel", "kernel"), Column::new("time_s", "time s")]);
//!         for (k, t) in &self.kernels {
//!             s.push(vec![Cell::text(k), Cell::num(*t, 3)]);
//!         }
//!         vec![s]
//!     }
//! }
//! let v = Speeds { kernels: vec![("void f<int, 2>(float*, int)".into(), 0.5)] };
//! let csv = render(&v, Format::Csv).unwrap();
//! assert_eq!(csv, "kernel,time_s\n\"void f<int, 2>(float*, int)\",0.5\n");
//! ```

use crate::Error;
use serde::Serialize;

/// How a command prints its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// An aligned text table for people, with the command's notes.
    #[default]
    Table,
    /// CSV of the main table (full-precision numbers, RFC 4180 quoting).
    Csv,
    /// The whole result as one JSON document.
    Json,
    /// GitHub-flavoured Markdown tables, with the notes as paragraphs.
    Markdown,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Format, String> {
        match s.to_ascii_lowercase().as_str() {
            "table" | "text" => Ok(Format::Table),
            "csv" => Ok(Format::Csv),
            "json" => Ok(Format::Json),
            "markdown" | "md" => Ok(Format::Markdown),
            _ => Err(format!("format '{s}' is not one of table, csv, json, markdown")),
        }
    }
}

/// One column: the machine name (CSV header, snake_case with its unit) and the label people read.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub name: String,
    pub label: String,
}

impl Column {
    pub fn new(name: impl Into<String>, label: impl Into<String>) -> Column {
        Column { name: name.into(), label: label.into() }
    }
}

/// One cell: text, or a number that the table shows rounded and CSV writes in full.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Text(String),
    /// A value and the number of decimals people see.
    Num {
        value: f64,
        decimals: usize,
    },
    /// A value people see in scientific notation with this many decimals.
    Sci {
        value: f64,
        decimals: usize,
    },
    Int(i64),
    /// A value shown the way a command formats it (a percentage, µJ, a unit-aware precision); CSV writes
    /// the value itself.
    Shown {
        value: f64,
        text: String,
    },
    /// No value (shown as `-`, empty in CSV).
    Empty,
}

impl Cell {
    pub fn text(s: impl Into<String>) -> Cell {
        Cell::Text(s.into())
    }
    pub fn num(value: f64, decimals: usize) -> Cell {
        Cell::Num { value, decimals }
    }
    pub fn sci(value: f64, decimals: usize) -> Cell {
        Cell::Sci { value, decimals }
    }
    pub fn int(value: impl Into<i64>) -> Cell {
        Cell::Int(value.into())
    }
    /// A value people see as `text`.
    pub fn shown(value: f64, text: impl Into<String>) -> Cell {
        Cell::Shown { value, text: text.into() }
    }
    /// A number when there is one, `-` otherwise.
    pub fn opt(value: Option<f64>, decimals: usize) -> Cell {
        value.map_or(Cell::Empty, |v| Cell::num(v, decimals))
    }

    /// What people see.
    fn display(&self) -> String {
        match self {
            Cell::Text(s) => s.clone(),
            // Beyond 1e15 a fixed-point number is a wall of digits: shown as 1.234e300 instead.
            Cell::Num { value, decimals } if value.is_finite() && value.abs() >= 1e15 => {
                format!("{value:.prec$e}", prec = (*decimals).max(3))
            }
            Cell::Num { value, decimals } if value.is_finite() => format!("{value:.decimals$}"),
            Cell::Sci { value, decimals } if value.is_finite() => format!("{value:.decimals$e}"),
            Cell::Num { value, .. } | Cell::Sci { value, .. } => format!("{value}"),
            Cell::Int(i) => i.to_string(),
            Cell::Shown { text, .. } => text.clone(),
            Cell::Empty => "-".to_string(),
        }
    }

    /// What a program reads: every digit of a number (Rust's shortest round-trip form).
    fn raw(&self) -> String {
        match self {
            Cell::Text(s) => s.clone(),
            // Every digit, but 1e300 as `1e300`, not as 301 digits.
            Cell::Num { value, .. } | Cell::Sci { value, .. } | Cell::Shown { value, .. }
                if value.abs() >= 1e16 =>
            {
                format!("{value:e}")
            }
            Cell::Num { value, .. } | Cell::Sci { value, .. } | Cell::Shown { value, .. } => {
                format!("{value}")
            }
            Cell::Int(i) => i.to_string(),
            Cell::Empty => String::new(),
        }
    }

    fn is_numeric(&self) -> bool {
        matches!(self, Cell::Num { .. } | Cell::Sci { .. } | Cell::Int(_) | Cell::Shown { .. })
    }
}

/// One table of a result, with the prose people read around it (table and Markdown only).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Section {
    /// A heading printed above the table (not in CSV).
    pub title: Option<String>,
    /// Lines printed after the title, before the table: what the table shows, the inputs it came from.
    pub text: Vec<String>,
    /// No columns: a section of prose only.
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<Cell>>,
    /// Lines printed after the table: its optima, verdicts, caveats.
    pub after: Vec<String>,
}

impl Section {
    pub fn new(columns: Vec<Column>) -> Section {
        Section { columns, ..Section::default() }
    }
    pub fn titled(title: impl Into<String>, columns: Vec<Column>) -> Section {
        Section { title: Some(title.into()), columns, ..Section::default() }
    }
    /// A section of prose only (no table).
    pub fn prose(lines: Vec<String>) -> Section {
        Section { text: lines, ..Section::default() }
    }
    pub fn push(&mut self, row: Vec<Cell>) {
        self.rows.push(row);
    }
    /// Adds a line of prose before the table.
    pub fn say(&mut self, line: impl Into<String>) {
        self.text.push(line.into());
    }
    /// Adds a line of prose after the table.
    pub fn then(&mut self, line: impl Into<String>) {
        self.after.push(line.into());
    }
}

/// Sections built in reading order from prose and tables, for results that interleave them.
#[derive(Debug, Clone, Default)]
pub struct Doc {
    sections: Vec<Section>,
}

impl Doc {
    pub fn new() -> Doc {
        Doc::default()
    }

    fn current(&mut self) -> &mut Section {
        if self.sections.is_empty() {
            self.sections.push(Section::default());
        }
        let last = self.sections.len() - 1;
        &mut self.sections[last]
    }

    fn is_empty(s: &Section) -> bool {
        s.title.is_none() && s.text.is_empty() && s.columns.is_empty() && s.after.is_empty()
    }

    /// Prose: every `\n` starts a line; an empty line starts a new section (a blank line in the table
    /// output). Lines after a table belong to it.
    pub fn say(&mut self, text: impl AsRef<str>) {
        for line in text.as_ref().split('\n') {
            if line.is_empty() {
                if !self.sections.last().is_none_or(Doc::is_empty) {
                    self.sections.push(Section::default());
                }
                continue;
            }
            let s = self.current();
            if s.columns.is_empty() { s.text.push(line.to_string()) } else { s.after.push(line.to_string()) }
        }
    }

    /// A table, after the prose said so far.
    pub fn table(&mut self, columns: Vec<Column>, rows: Vec<Vec<Cell>>) {
        if !self.current().columns.is_empty() {
            self.sections.push(Section::default());
        }
        let s = self.current();
        s.columns = columns;
        s.rows = rows;
    }

    pub fn into_sections(self) -> Vec<Section> {
        self.sections.into_iter().filter(|s| !Doc::is_empty(s)).collect()
    }
}

/// A command's result, renderable in every [`Format`].
pub trait Export: Serialize {
    /// The command that produced it, recorded in its JSON (`"command"`).
    const COMMAND: &'static str;
    /// Version of the JSON layout (`"format_version"`); bumped when a field changes meaning.
    const FORMAT_VERSION: u32 = 1;
    /// The tables, the main one first: CSV carries the first section only (JSON carries everything).
    fn sections(&self) -> Vec<Section>;
    /// Lines printed before the tables (table and Markdown only).
    fn preamble(&self) -> Vec<String> {
        Vec::new()
    }
    /// Lines printed after the tables (table and Markdown only): optima, caveats, what was assumed.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }
    /// The table CSV carries: by default the first section that has columns. A command overrides it when
    /// its machine-readable rows differ from what people read first (one row per point, not a matrix).
    fn csv_section(&self) -> Option<Section> {
        self.sections().into_iter().find(|s| !s.columns.is_empty())
    }
}

/// Renders a result in the asked format.
pub fn render<E: Export>(value: &E, format: Format) -> Result<String, Error> {
    match format {
        Format::Json => render_json(value),
        Format::Csv => render_csv(value.csv_section().as_ref()).map_err(|e| Error::Render {
            command: E::COMMAND,
            format: "CSV",
            message: e.to_string(),
        }),
        Format::Table => Ok(render_text(value)),
        Format::Markdown => Ok(render_markdown(value)),
    }
}

/// The result as pretty JSON, with `"command"` and `"format_version"` first.
pub fn render_json<E: Export>(value: &E) -> Result<String, Error> {
    let json =
        |e: serde_json::Error| Error::Render { command: E::COMMAND, format: "JSON", message: e.to_string() };
    let serde_json::Value::Object(body) = serde_json::to_value(value).map_err(json)? else {
        return Err(Error::Render {
            command: E::COMMAND,
            format: "JSON",
            message: "not a JSON object".into(),
        });
    };
    let mut out = serde_json::Map::new();
    out.insert("command".into(), E::COMMAND.into());
    out.insert("format_version".into(), E::FORMAT_VERSION.into());
    for (k, v) in body {
        if k != "command" && k != "format_version" {
            out.insert(k, v);
        }
    }
    let mut s = serde_json::to_string_pretty(&serde_json::Value::Object(out)).map_err(json)?;
    s.push('\n');
    Ok(s)
}

fn render_csv(section: Option<&Section>) -> Result<String, csv::Error> {
    let mut w = csv::WriterBuilder::new().terminator(csv::Terminator::Any(b'\n')).from_writer(Vec::new());
    if let Some(s) = section {
        w.write_record(s.columns.iter().map(|c| c.name.as_str()))?;
        for row in &s.rows {
            w.write_record(row.iter().map(Cell::raw))?;
        }
    }
    let bytes = w.into_inner().map_err(|e| csv::Error::from(e.into_error()))?;
    // Every cell came from a `String`, so the bytes are UTF-8.
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Right-aligned when every non-empty cell of the column is a number.
fn numeric_columns(s: &Section) -> Vec<bool> {
    (0..s.columns.len())
        .map(|j| {
            let mut cells = s.rows.iter().filter_map(|r| r.get(j)).filter(|c| !matches!(c, Cell::Empty));
            let mut any = false;
            let all = cells.all(|c| {
                any = true;
                c.is_numeric()
            });
            any && all
        })
        .collect()
}

/// A line of text cut to [`TABLE_WIDTH`] at spaces: the continuation lines hang under the value of a
/// `key     value` line (a key, then two or more spaces, within the first 24 columns), else two columns in
/// from the line's own indentation. A word longer than a line stays whole.
fn fit_line(line: &str) -> String {
    if line.chars().count() <= TABLE_WIDTH {
        return line.to_string();
    }
    let chars: Vec<char> = line.chars().collect();
    let margin = chars.iter().take_while(|c| **c == ' ').count();
    let gap =
        (margin..chars.len().min(24).saturating_sub(1)).find(|&i| chars[i] == ' ' && chars[i + 1] == ' ');
    let value = gap.and_then(|g| (g..chars.len()).find(|&i| chars[i] != ' ')).filter(|&i| i <= 24);
    let (first, hang) = match value {
        Some(v) => (chars[..v].iter().collect::<String>(), v),
        None => (chars[..margin].iter().collect::<String>(), margin + 2),
    };
    let rest: String = chars[first.chars().count()..].iter().collect();
    wrap(&first, &rest, hang).join("\n")
}

fn render_text<E: Export>(value: &E) -> String {
    let mut out = String::new();
    for line in value.preamble() {
        out.push_str(&fit_line(&line));
        out.push('\n');
    }
    for (i, s) in value.sections().iter().enumerate() {
        if i > 0 || !out.is_empty() {
            out.push('\n');
        }
        for line in s.title.iter().chain(&s.text) {
            out.push_str(&fit_line(line));
            out.push('\n');
        }
        if !s.columns.is_empty() {
            let header: Vec<&str> = s.columns.iter().map(|c| c.label.as_str()).collect();
            let rows: Vec<Vec<String>> =
                s.rows.iter().map(|r| r.iter().map(Cell::display).collect()).collect();
            out.push_str(&aligned(&header, &rows, &numeric_columns(s)));
        }
        for line in &s.after {
            out.push_str(&fit_line(line));
            out.push('\n');
        }
    }
    let notes = value.notes();
    if !notes.is_empty() {
        out.push('\n');
        for line in notes {
            out.push_str(&fit_line(&line));
            out.push('\n');
        }
    }
    out
}

/// The widest a table may be, in columns (like `nvidia-smi` and `cargo`, a table fits a terminal).
pub const TABLE_WIDTH: usize = 120;

/// A table too wide for [`TABLE_WIDTH`] is set with one space between columns instead of two, and, where
/// that is not enough, its longest text cells (over 16 characters) are moved below it: each keeps its
/// start and a note number, `[k]`, and the whole text follows the table as note `k`. (Long headers of
/// number columns are kept: such a table may stay wider.) Returns the rows, the notes and the spacing.
fn fit_to_width(
    header: &[&str],
    rows: &[Vec<String>],
    right: &[bool],
) -> (Vec<Vec<String>>, Vec<String>, usize) {
    let n = header.len();
    let len = |c: &str| c.chars().count();
    let widths = |rows: &[Vec<String>]| -> Vec<usize> {
        (0..n)
            .map(|j| rows.iter().filter_map(|r| r.get(j)).map(|c| len(c)).fold(len(header[j]), usize::max))
            .collect()
    };
    let mut rows = rows.to_vec();
    let mut notes: Vec<String> = Vec::new();
    if widths(&rows).iter().sum::<usize>() + 2 * n.saturating_sub(1) <= TABLE_WIDTH {
        return (rows, notes, 2);
    }
    let mut capped = vec![false; n];
    loop {
        let w = widths(&rows);
        let total = w.iter().sum::<usize>() + n.saturating_sub(1);
        if total <= TABLE_WIDTH {
            break;
        }
        // The widest text column not capped yet gives up what the table is over, down to 16 columns.
        let Some(j) =
            (0..n).filter(|&j| !right.get(j).copied().unwrap_or(false) && !capped[j]).max_by_key(|&j| w[j])
        else {
            break;
        };
        capped[j] = true;
        let cap = w[j].saturating_sub(total - TABLE_WIDTH).max(16).max(len(header[j]));
        for r in rows.iter_mut() {
            let Some(c) = r.get_mut(j) else { continue };
            if len(c) <= cap {
                continue;
            }
            // One note per text: cells that say the same thing share its number.
            let k = match notes.iter().position(|n| n == c) {
                Some(k) => k + 1,
                None => {
                    notes.push(c.clone());
                    notes.len()
                }
            };
            let mark = format!("… [{k}]");
            let keep: String = c.chars().take(cap.saturating_sub(len(&mark))).collect();
            *c = format!("{}{mark}", keep.trim_end());
        }
    }
    // A table that cannot fit (long headers of number columns) keeps its spacing.
    let fits = widths(&rows).iter().sum::<usize>() + n.saturating_sub(1) <= TABLE_WIDTH;
    let sep = if fits || !notes.is_empty() { 1 } else { 2 };
    (rows, notes, sep)
}

/// `first` then the words of `rest`, wrapped at [`TABLE_WIDTH`] on spaces, the lines after the first
/// indented by `hang` spaces; a word longer than a line stays whole.
fn wrap(first: &str, rest: &str, hang: usize) -> Vec<String> {
    let mut lines = vec![first.to_string()];
    let mut fresh = true;
    for word in rest.split_whitespace() {
        let line = lines.last_mut().expect("one line at least");
        if !fresh && line.chars().count() + 1 + word.chars().count() > TABLE_WIDTH {
            lines.push(format!("{}{word}", " ".repeat(hang)));
        } else {
            if !fresh {
                line.push(' ');
            }
            line.push_str(word);
        }
        fresh = false;
    }
    lines
}

/// An aligned text table: `right[j]` right-aligns column j, header included. A table wider than
/// [`TABLE_WIDTH`] moves the ends of its longest text cells below it as numbered notes.
pub fn aligned(header: &[&str], rows: &[Vec<String>], right: &[bool]) -> String {
    let n = header.len();
    let (rows, notes, sep) = fit_to_width(header, rows, right);
    let sep = " ".repeat(sep);
    let rows = &rows;
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (j, c) in r.iter().enumerate().take(n) {
            width[j] = width[j].max(c.chars().count());
        }
    }
    let mut out = String::new();
    let line = |cells: &[&str], out: &mut String| {
        let parts: Vec<String> = cells
            .iter()
            .enumerate()
            .take(n)
            .map(|(j, c)| {
                if right.get(j).copied().unwrap_or(false) {
                    format!("{c:>w$}", w = width[j])
                } else {
                    format!("{c:<w$}", w = width[j])
                }
            })
            .collect();
        out.push_str(parts.join(&sep).trim_end());
        out.push('\n');
    };
    line(header, &mut out);
    let rule: Vec<String> = width.iter().map(|w| "-".repeat(*w)).collect();
    out.push_str(&rule.join(&sep));
    out.push('\n');
    for r in rows {
        let cells: Vec<&str> = r.iter().map(String::as_str).collect();
        line(&cells, &mut out);
    }
    for (k, note) in notes.iter().enumerate() {
        let mark = format!("[{}] ", k + 1);
        for l in wrap(&mark, note, mark.len()) {
            out.push_str(&l);
            out.push('\n');
        }
    }
    out
}

fn markdown_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('|', "\\|").replace('\n', " ")
}

fn render_markdown<E: Export>(value: &E) -> String {
    let mut out = String::new();
    for line in value.preamble() {
        out.push_str(&markdown_escape(&line));
        out.push_str("\n\n");
    }
    for s in value.sections() {
        if let Some(t) = &s.title {
            out.push_str(&format!("### {}\n\n", markdown_escape(t)));
        }
        markdown_paragraph(&mut out, &s.text);
        if !s.columns.is_empty() {
            markdown_table(&mut out, &s);
        }
        markdown_paragraph(&mut out, &s.after);
    }
    for line in value.notes() {
        out.push_str(&markdown_escape(&line));
        out.push_str("  \n");
    }
    out
}

/// Lines kept as lines (a Markdown hard break ends each), then a blank line.
fn markdown_paragraph(out: &mut String, lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    for line in lines {
        out.push_str(&markdown_escape(line.trim_end()));
        out.push_str("  \n");
    }
    out.push('\n');
}

fn markdown_table(out: &mut String, s: &Section) {
    let right = numeric_columns(s);
    let head: Vec<String> = s.columns.iter().map(|c| markdown_escape(&c.label)).collect();
    out.push_str(&format!("| {} |\n", head.join(" | ")));
    let rule: Vec<&str> = (0..s.columns.len()).map(|j| if right[j] { "---:" } else { "---" }).collect();
    out.push_str(&format!("|{}|\n", rule.join("|")));
    for r in &s.rows {
        let cells: Vec<String> = r.iter().map(|c| markdown_escape(&c.display())).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Example {
        rows: Vec<(String, f64, Option<f64>)>,
    }

    impl Export for Example {
        const COMMAND: &'static str = "example";
        fn sections(&self) -> Vec<Section> {
            let mut s = Section::titled(
                "per kernel",
                vec![
                    Column::new("kernel", "kernel"),
                    Column::new("time_s", "time s"),
                    Column::new("power_w", "W"),
                ],
            );
            for (k, t, p) in &self.rows {
                s.push(vec![Cell::text(k), Cell::num(*t, 2), Cell::opt(*p, 1)]);
            }
            vec![s]
        }
        fn notes(&self) -> Vec<String> {
            vec!["a | note".into()]
        }
    }

    fn example() -> Example {
        Example {
            rows: vec![
                ("void f<int, 2>(float*, int)".into(), 1.0 / 3.0, Some(150.26)),
                ("say \"hi\"".into(), 12.5, None),
            ],
        }
    }

    /// Templated C++ kernel names carry commas and quotes: CSV must quote them so that a CSV reader gets
    /// the name back whole, and numbers keep every digit.
    #[test]
    fn csv_round_trips_kernel_names_with_commas_and_quotes() {
        let csv = render(&example(), Format::Csv).unwrap();
        let mut r = csv::Reader::from_reader(csv.as_bytes());
        assert_eq!(r.headers().unwrap().iter().collect::<Vec<_>>(), ["kernel", "time_s", "power_w"]);
        let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
        assert_eq!(&rows[0][0], "void f<int, 2>(float*, int)");
        assert_eq!(rows[0][1].parse::<f64>().unwrap(), 1.0 / 3.0);
        assert_eq!(&rows[1][0], "say \"hi\"");
        assert_eq!(&rows[1][2], "");
    }

    #[test]
    fn json_is_tagged_with_command_and_version() {
        let v: serde_json::Value = serde_json::from_str(&render(&example(), Format::Json).unwrap()).unwrap();
        assert_eq!(v["command"], "example");
        assert_eq!(v["format_version"], 1);
        assert_eq!(v["rows"][1][0], "say \"hi\"");
    }

    /// A long `key     value` line wraps at the table width with its continuation under the value; every
    /// word is kept, in order.
    #[test]
    fn long_text_lines_wrap_under_their_value() {
        let value = (0..40).map(|i| format!("word{i}")).collect::<Vec<_>>().join(" ");
        let line = format!("gpu from    {value}");
        let out = fit_line(&line);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines.len() > 1 && lines.iter().all(|l| l.chars().count() <= TABLE_WIDTH), "{out}");
        assert!(lines[1..].iter().all(|l| l.starts_with(&" ".repeat(12)) && !l.starts_with(&" ".repeat(13))));
        let words: Vec<&str> = out.split_whitespace().collect();
        assert_eq!(words, line.split_whitespace().collect::<Vec<_>>());
        assert_eq!(fit_line("short  line"), "short  line");
        // Without a key the continuation hangs two columns in.
        let plain = format!("rule 2: {value}");
        let out = fit_line(&plain);
        assert!(out.lines().skip(1).all(|l| l.starts_with("  ") && !l.starts_with("   ")), "{out}");
        assert_eq!(out.split_whitespace().collect::<Vec<_>>(), plain.split_whitespace().collect::<Vec<_>>());
    }

    #[test]
    fn table_rounds_numbers_and_right_aligns_them() {
        let t = render(&example(), Format::Table).unwrap();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "per kernel");
        assert_eq!(lines[1], "kernel                       time s      W");
        assert_eq!(lines[3], "void f<int, 2>(float*, int)    0.33  150.3");
        assert_eq!(lines[4], "say \"hi\"                      12.50      -");
        assert_eq!(lines.last(), Some(&"a | note"));
    }

    #[test]
    fn markdown_escapes_pipes_and_aligns_numbers() {
        let m = render(&example(), Format::Markdown).unwrap();
        assert!(m.contains("| kernel | time s | W |\n|---|---:|---:|\n"), "{m}");
        assert!(m.contains("a \\| note"), "{m}");
    }

    #[test]
    fn format_names_parse() {
        assert_eq!("md".parse::<Format>(), Ok(Format::Markdown));
        assert!("yaml".parse::<Format>().unwrap_err().contains("table, csv, json, markdown"));
    }
}

#[cfg(test)]
mod width_tests {
    use super::*;

    /// A table with a 300-character text column fits 120 columns: the long cells keep their start and a
    /// note number, and the whole texts follow as numbered notes, wrapped, each word kept.
    #[test]
    fn a_wide_table_fits_the_terminal_with_numbered_notes() {
        let long = (0..60).map(|i| format!("word{i}")).collect::<Vec<_>>().join(" ");
        let rows = vec![
            vec!["gpu".to_string(), "ok".into(), long.clone(), "1.5".into()],
            vec!["cupti".to_string(), "missing".into(), "short".into(), "2".into()],
        ];
        let out = aligned(&["id", "status", "found", "n"], &rows, &[false, false, false, true]);
        assert!(out.lines().all(|l| l.chars().count() <= TABLE_WIDTH), "{out}");
        let lines: Vec<&str> = out.lines().collect();
        assert!(
            lines[2].starts_with("gpu") && lines[2].contains("word0 word1") && lines[2].contains("… [1]"),
            "{out}"
        );
        assert!(lines[3].contains("short") && !lines[3].contains('['), "{out}");
        let notes = lines[4..].join(" ");
        assert!(notes.starts_with("[1] word0 "), "{out}");
        let words: Vec<&str> = notes.trim_start_matches("[1] ").split_whitespace().collect();
        assert_eq!(words.join(" "), long);
        // Cells that say the same thing share one note.
        let same = vec![vec![long.clone()], vec![long.clone()]];
        let out = aligned(&["text"], &same, &[false]);
        assert_eq!(out.matches("… [1]").count(), 2, "{out}");
        assert!(!out.contains("[2]"), "{out}");
        // A few columns over: one space between columns instead of two, no notes.
        let cells: Vec<String> = (0..11).map(|i| format!("{i:>10}")).collect();
        let header: Vec<String> = (0..11).map(|i| format!("col{i}")).collect();
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        let out = aligned(&header, &[cells], &[false; 11]);
        assert!(out.lines().all(|l| l.chars().count() <= TABLE_WIDTH) && !out.contains('['), "{out}");
        assert_eq!(out.lines().nth(1).unwrap().matches(' ').count(), 10, "{out}");
        // Huge numbers in exponent form, in tables and in what programs read.
        assert_eq!(Cell::num(1e300, 1).display(), "1.000e300");
        assert_eq!(Cell::num(1e300, 1).raw(), "1e300");
        assert_eq!(Cell::num(1234.5, 1).display(), "1234.5");
        assert_eq!(Cell::num(1234.5, 1).raw(), "1234.5");
        // A table that fits is left as it is.
        let narrow = aligned(&["a", "b"], &[vec!["x".into(), "y".into()]], &[false, false]);
        assert_eq!(narrow, "a  b\n-  -\nx  y\n");
    }
}
