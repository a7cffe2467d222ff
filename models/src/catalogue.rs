//! What `gpumodel dataset list` and `gpumodel dataset show` print: the registry's datasets with where
//! each is on this machine, and one dataset's summary, on the one output layer ([`crate::export`]).

use crate::export::{Cell, Column, Export, Section};
use crate::registry::{Entry, Found, Locator, Opened, Origin, Registry, sha256_hex};
use crate::utilization::{Field, ProfileSet};
use serde::Serialize;
use std::path::Path;

/// One registered dataset and whether it is on this machine.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ListRow {
    pub name: String,
    pub gpu: String,
    pub importer: String,
    /// Where the file is, when found.
    pub location: Option<String>,
    pub found: Option<Found>,
    pub description: String,
}

/// `gpumodel dataset list`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DatasetList {
    pub datasets: Vec<ListRow>,
}

impl DatasetList {
    /// Every registered dataset, looked up with `loc` (a missing file is a row, not an error).
    pub fn of(reg: &Registry, loc: &Locator) -> DatasetList {
        let datasets = reg
            .datasets
            .iter()
            .map(|e| {
                let found = loc.resolve(e).ok();
                ListRow {
                    name: e.name.clone(),
                    gpu: e.gpu.clone(),
                    importer: e.importer.clone(),
                    location: found.as_ref().map(|(p, _)| p.display().to_string()),
                    found: found.map(|(_, f)| f),
                    description: e.description.clone(),
                }
            })
            .collect();
        DatasetList { datasets }
    }
}

impl Export for DatasetList {
    const COMMAND: &'static str = "dataset-list";

    fn sections(&self) -> Vec<Section> {
        let mut s = Section::new(vec![
            Column::new("name", "name"),
            Column::new("gpu", "gpu"),
            Column::new("importer", "importer"),
            Column::new("location", "location"),
        ]);
        for r in &self.datasets {
            s.push(vec![
                Cell::text(&r.name),
                Cell::text(&r.gpu),
                Cell::text(&r.importer),
                r.location.as_ref().map_or(Cell::text("missing (gpumodel dataset fetch)"), Cell::text),
            ]);
        }
        vec![s]
    }
}

/// `gpumodel dataset show`: one dataset's rows, kernels, clocks, ranges and provenance.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DatasetSummary {
    pub name: String,
    pub path: String,
    pub found: Found,
    pub format: &'static str,
    pub sha256: String,
    pub rows: usize,
    pub kernels: usize,
    pub numeric_columns: Vec<String>,
    pub text_columns: Vec<String>,
    pub core_mhz: Vec<f64>,
    pub mem_mhz: Vec<f64>,
    pub power_w: Option<(f64, f64)>,
    pub time_s: Option<(f64, f64)>,
    pub gpu: Option<String>,
    pub license: Option<String>,
    pub citation: Option<String>,
    pub origin: Option<Origin>,
    pub test_set: Option<String>,
    /// Utilization-profile datasets: programs, rows skipped, and each DCGM field's range.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profiles: Option<ProfileFacts>,
}

/// What a utilization-profile dataset holds beyond the common facts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProfileFacts {
    /// Benchmark programs (the groups of grouped validation).
    pub programs: usize,
    /// Rows left out (no DCGM sample, or a value out of range), each with why.
    pub skipped: Vec<String>,
    /// Each DCGM profiling field the file has, with its range over the rows read.
    pub fields: Vec<FieldRange>,
}

/// One DCGM field's range in a dataset.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldRange {
    pub field: &'static str,
    pub id: u16,
    pub dcgm_name: &'static str,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
}

impl DatasetSummary {
    /// The summary of `opened` (named `name` by the user), whose file holds `bytes`.
    pub fn of(name: &str, opened: &Opened, bytes: &[u8]) -> DatasetSummary {
        let t = &opened.imported.table;
        let e = opened.entry.as_ref();
        DatasetSummary {
            name: name.to_string(),
            path: opened.path.display().to_string(),
            found: opened.found,
            format: opened.format.name(),
            sha256: sha256_hex(bytes),
            rows: t.n_rows(),
            kernels: t.distinct_groups().len(),
            numeric_columns: t.columns.clone(),
            text_columns: std::iter::once(t.group_column.clone())
                .chain(t.text.iter().map(|c| c.name.clone()))
                .collect(),
            core_mhz: t.distinct_values("core_mhz"),
            mem_mhz: t.distinct_values("mem_mhz"),
            power_w: t.range("power_w"),
            time_s: t.range("time_s"),
            gpu: e.map(|e| e.gpu.clone()),
            license: e.map(|e| e.license.clone()),
            citation: e.map(|e| e.citation.clone()),
            origin: e.map(|e| e.origin.clone()),
            test_set: e.and_then(|e| e.test_set.clone()),
            profiles: None,
        }
    }

    /// The summary of a utilization-profile dataset `set` read from `path` (whose file holds `bytes`):
    /// a row is one job at one clock, the "kernels" are the jobs (application and input).
    pub fn of_profiles(
        name: &str,
        path: &Path,
        found: Found,
        entry: Option<&Entry>,
        set: &ProfileSet,
        bytes: &[u8],
    ) -> DatasetSummary {
        let ps = &set.profiles;
        let distinct = |v: Vec<Option<f64>>| {
            let mut v: Vec<f64> = v.into_iter().flatten().collect();
            v.sort_by(f64::total_cmp);
            v.dedup();
            v
        };
        let range = |v: Vec<Option<f64>>| {
            let v: Vec<f64> = v.into_iter().flatten().collect();
            (!v.is_empty()).then(|| {
                (
                    v.iter().copied().fold(f64::INFINITY, f64::min),
                    v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                )
            })
        };
        let count = |v: Vec<&str>| v.into_iter().collect::<std::collections::BTreeSet<_>>().len();
        let fields = Field::ALL
            .iter()
            .filter_map(|&f| {
                let v: Vec<f64> = ps.iter().filter_map(|p| p.fields.get(&f).copied()).collect();
                let (lo, hi) = range(v.iter().map(|x| Some(*x)).collect())?;
                Some(FieldRange {
                    field: f.name(),
                    id: f.id(),
                    dcgm_name: f.dcgm_name(),
                    min: lo,
                    max: hi,
                    mean: v.iter().sum::<f64>() / v.len() as f64,
                })
            })
            .collect();
        let (numeric_columns, text_columns) = csv_columns(bytes);
        DatasetSummary {
            name: name.to_string(),
            path: path.display().to_string(),
            found,
            format: crate::utilization::read::ProfileFormat::REGISTRY_IMPORTER,
            sha256: sha256_hex(bytes),
            rows: ps.len(),
            kernels: count(ps.iter().map(|p| p.name.as_str()).collect()),
            numeric_columns,
            text_columns,
            core_mhz: distinct(ps.iter().map(|p| Some(p.core_mhz)).collect()),
            mem_mhz: distinct(ps.iter().map(|p| p.mem_mhz).collect()),
            power_w: range(ps.iter().map(|p| p.power_w).collect()),
            time_s: range(ps.iter().map(|p| p.time_s).collect()),
            gpu: entry.map(|e| e.gpu.clone()).or_else(|| ps.iter().find_map(|p| p.gpu.clone())),
            license: entry.map(|e| e.license.clone()),
            citation: entry.map(|e| e.citation.clone()),
            origin: entry.map(|e| e.origin.clone()),
            test_set: entry.and_then(|e| e.test_set.clone()),
            profiles: Some(ProfileFacts {
                programs: count(ps.iter().map(|p| p.program.as_deref().unwrap_or(&p.name)).collect()),
                skipped: set.skipped.clone(),
                fields,
            }),
        }
    }
}

/// A CSV file's header split into numeric columns (every non-empty cell a number) and text columns; empty
/// when the bytes are not CSV.
fn csv_columns(bytes: &[u8]) -> (Vec<String>, Vec<String>) {
    let mut r = csv::ReaderBuilder::new().flexible(true).from_reader(bytes);
    let Ok(header) = r.headers().cloned() else { return (vec![], vec![]) };
    let mut numeric = vec![true; header.len()];
    for rec in r.records().flatten() {
        for (j, c) in rec.iter().enumerate() {
            let c = c.trim();
            if j < numeric.len() && !c.is_empty() && c.parse::<f64>().is_err() {
                numeric[j] = false;
            }
        }
    }
    let (mut num, mut text) = (Vec::new(), Vec::new());
    for (h, n) in header.iter().zip(numeric) {
        if n { num.push(h.trim().to_string()) } else { text.push(h.trim().to_string()) }
    }
    (num, text)
}

fn list(values: &[f64]) -> String {
    if values.is_empty() {
        return "-".into();
    }
    values.iter().map(|v| format!("{v}")).collect::<Vec<_>>().join(", ")
}

impl Export for DatasetSummary {
    const COMMAND: &'static str = "dataset-show";

    /// `field  value` lines for people (the column list is too long for a table cell).
    fn sections(&self) -> Vec<Section> {
        let lines = self.facts().into_iter().map(|(k, v)| format!("{k:<16}{v}")).collect();
        vec![Section::prose(lines)]
    }

    /// One `field,value` row per fact.
    fn csv_section(&self) -> Option<Section> {
        let mut s = Section::new(vec![Column::new("field", "field"), Column::new("value", "value")]);
        for (k, v) in self.facts() {
            s.push(vec![Cell::text(k), Cell::Text(v)]);
        }
        Some(s)
    }
}

impl DatasetSummary {
    /// What people read about the dataset, in order.
    fn facts(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        let mut kv = |k: &'static str, v: String| out.push((k, v));
        kv("dataset", self.name.clone());
        kv("file", format!("{} ({:?})", self.path, self.found));
        kv("format", self.format.to_string());
        kv("sha256", self.sha256.clone());
        if let Some(g) = &self.gpu {
            kv("gpu", g.clone());
        }
        kv("rows", self.rows.to_string());
        match &self.profiles {
            Some(p) => {
                kv("jobs", format!("{} (applications and inputs) of {} programs", self.kernels, p.programs));
                if let Some(first) = p.skipped.first() {
                    kv("skipped rows", format!("{} (first: {first})", p.skipped.len()));
                }
            }
            None => kv("kernels", self.kernels.to_string()),
        }
        kv("columns", format!("{} numeric: {}", self.numeric_columns.len(), self.numeric_columns.join(", ")));
        kv("text columns", self.text_columns.join(", "));
        kv("core clocks", format!("{} MHz ({} values)", list(&self.core_mhz), self.core_mhz.len()));
        kv("memory clocks", format!("{} MHz ({} values)", list(&self.mem_mhz), self.mem_mhz.len()));
        if let Some((lo, hi)) = self.power_w {
            kv("power", format!("{lo:.2} – {hi:.2} W"));
        }
        if let Some((lo, hi)) = self.time_s {
            let what = if self.profiles.is_some() { "run time" } else { "kernel time" };
            kv(what, format!("{:.4} – {:.4} ms", lo * 1e3, hi * 1e3));
        }
        for f in self.profiles.iter().flat_map(|p| &p.fields) {
            let what = format!("{:.3} – {:.3}, mean {:.3} ({}, {})", f.min, f.max, f.mean, f.id, f.dcgm_name);
            kv(f.field, what);
        }
        if let Some(t) = &self.test_set {
            kv("test set", t.clone());
        }
        if let Some(l) = &self.license {
            kv("license", l.clone());
        }
        if let Some(c) = &self.citation {
            kv("cite", c.clone());
        }
        if let Some(og) = &self.origin {
            kv("origin", format!("{} @ {} {}", og.repository, og.commit, og.path));
        }
        out
    }
}
