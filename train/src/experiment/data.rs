//! The data side of a run: opening a dataset, naming it without a path of this machine, and which roles
//! the physical model's inputs play on each kind of data.

use crate::physical::PhysicalParams;
use crate::{Error, Result};
use gpumodel_models::Table;
use gpumodel_models::import::{BadRows, Format};
use gpumodel_models::registry::{self, Locator, Opened};
use serde::Serialize;
use std::path::Path;

/// NV-DVFS counters that play Guerreiro's component utilizations in the physical model, fixed a priori
/// by the component each one measures (SP, DP, INT, SFU, CF, L2, shared, texture / global traffic; DRAM
/// for the memory domain) — not by correlation with power, so nothing is chosen on the evaluation data.
/// Each becomes events per cycle of its clock domain (`count / time_ms / clock_mhz`), which is what a
/// utilization measures; the model multiplies it by V²·f again. The non-negative least squares of the
/// fit drops (β = 0) the ones that do not help, inside each training fold.
pub const NVDVFS_ACTIVITIES: &[&str] = &[
    "inst_fp_32",
    "inst_fp_64",
    "inst_integer",
    "flop_count_sp_special",
    "cf_executed",
    "l2_read_transactions",
    "l2_write_transactions",
    "shared_load_transactions",
    "shared_store_transactions",
    "tex_cache_transactions",
    "gld_transactions",
    "gst_transactions",
    "dram_read_transactions",
    "dram_write_transactions",
];

/// The physical model's roles on `table` (imported as `format`), or the reason the data cannot feed it
/// (no clock columns, one core clock level, no activity columns). `dropped` names inputs left out of the
/// run (constant on every row), which no role takes.
pub fn physical_roles(
    table: &Table,
    format: Format,
    feature_set: &str,
    feature_inputs: &[String],
    dropped: &[String],
) -> std::result::Result<PhysicalParams, String> {
    let has = |c: &str| table.column_index(c).is_some();
    if !has("core_mhz") || !has("mem_mhz") {
        return Err("the data has no core_mhz and mem_mhz columns".into());
    }
    let core_levels = table.distinct_values("core_mhz");
    if core_levels.len() < 2 {
        return Err(format!(
            "the data has a single core clock level ({} MHz), so there is no DVFS to model",
            core_levels.first().copied().unwrap_or(f64::NAN)
        ));
    }
    let activities: Vec<String> = match format {
        Format::Guerreiro => table
            .columns
            .iter()
            .filter(|c| *c != "power_w" && !c.ends_with("_mhz") && !dropped.contains(c))
            .cloned()
            .collect(),
        Format::Nvdvfs => {
            if !has("time_ms") {
                return Err("the NV-DVFS data has no time_ms column to turn counters into rates".into());
            }
            NVDVFS_ACTIVITIES
                .iter()
                .filter(|c| has(c))
                .map(|c| {
                    let clock = if c.starts_with("dram") { "mem_mhz" } else { "core_mhz" };
                    format!("{c}/time_ms/{clock}")
                })
                .filter(|c| !dropped.contains(c))
                .collect()
        }
        Format::Table => {
            feature_inputs.iter().filter(|i| *i != "core_mhz" && *i != "mem_mhz").cloned().collect()
        }
    };
    if activities.is_empty() {
        return Err("the data has no activity columns for the physical model".into());
    }
    let mut p = PhysicalParams::from_activities(&activities, feature_set);
    // Guerreiro's files carry the default clocks the utilizations were measured at: the reference.
    let first = |c: &str| table.column(c).and_then(|v| v.first().copied());
    p.ref_core_mhz = first("default_core_mhz");
    p.ref_mem_mhz = first("default_mem_mhz");
    Ok(p)
}

/// A dataset as the report names it: never a path of the machine that read it.
#[derive(Debug, Clone, Serialize)]
pub struct DataInfo {
    /// Registry name, or the file name of a file given by path.
    pub name: String,
    /// File name only.
    pub file: String,
    pub sha256: String,
    pub rows: usize,
    pub kernels: usize,
    /// The GPU the rows were measured on, when the data says (a suite table's `<file>.json` sidecar).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
}

/// The GPU a suite table was measured on, from its sidecar (`<table>.json`, `gpumodel-suite/1`).
fn sidecar_gpu(table: &std::path::Path) -> Option<String> {
    let mut s = table.as_os_str().to_owned();
    s.push(".json");
    let text = std::fs::read_to_string(std::path::PathBuf::from(s)).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    if v.get("format")?.as_str()? != "gpumodel-suite/1" {
        return None;
    }
    Some(v.get("gpu")?.get("name")?.as_str()?.to_string())
}

/// Opens a registered dataset or a file, reporting each skipped bad row on stderr.
pub fn open_dataset(spec: &str, import: Option<Format>, bad: BadRows) -> Result<(Opened, DataInfo)> {
    let opened = registry::open(spec, import, bad, &Locator::from_env())?;
    for e in &opened.imported.skipped {
        eprintln!("warning: skipped a bad row: {e}");
    }
    let bytes = std::fs::read(&opened.path)
        .map_err(|e| Error::Invalid(format!("reading {}: {e}", opened.path.display())))?;
    let t = &opened.imported.table;
    let file_name = opened.path.file_name().map(|f| f.to_string_lossy().into_owned());
    let info = DataInfo {
        name: opened
            .entry
            .as_ref()
            .map_or_else(|| file_name.clone().unwrap_or_else(|| spec.into()), |e| e.name.clone()),
        file: file_name.unwrap_or_default(),
        sha256: registry::sha256_hex(&bytes),
        rows: t.n_rows(),
        kernels: t.distinct_groups().len(),
        gpu: sidecar_gpu(&opened.path),
    };
    Ok((opened, info))
}

/// The artifact prefix of a dataset name (`titanx`, `gtx1080ti`, or the file stem).
pub fn default_prefix(name: &str) -> String {
    if name.starts_with("guerreiro-titanx") {
        return "titanx".into();
    }
    if let Some(rest) = name.strip_prefix("nvdvfs-") {
        return rest.to_string();
    }
    Path::new(name).file_stem().map_or_else(|| "model".into(), |s| s.to_string_lossy().into_owned())
}
