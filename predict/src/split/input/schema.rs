//! The case file's schema (what `gpumodel split` reads) and reading it.

use crate::split::cg::CgCase;
use crate::split::dvfs::DeviceDvfs;
use crate::split::from_model::FromModel;
use crate::split::pareto::DeviceProfile;
use crate::split::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseFile {
    /// What the case is.
    #[serde(default)]
    pub title: Option<String>,
    /// Where its numbers come from.
    #[serde(default)]
    pub source: Option<String>,
    /// Static power of the whole node (P0 in PEACH, P^S in Stafford, P_static in HEPOPTA), W.
    #[serde(default)]
    pub static_power_w: Option<f64>,
    /// The work to split.
    #[serde(default)]
    pub workload: Workload,
    /// The host CPU (two-device models).
    #[serde(default)]
    pub cpu: Option<Cpu>,
    /// The GPU (two-device models).
    #[serde(default)]
    pub gpu: Option<Gpu>,
    /// Measured per-device profiles (Pareto front).
    #[serde(default)]
    pub device: Option<Vec<DeviceProfile>>,
    /// A CG-solver case.
    #[serde(default)]
    pub cg: Option<CgCase>,
    /// The DVFS configuration to compare the best one against (default: highest clocks, best-time split).
    #[serde(default)]
    pub compare: Option<Compare>,
    /// Folder that relative paths in the file are taken from (the file's own folder).
    #[serde(skip)]
    pub base_dir: PathBuf,
}

/// The workload.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// W, in the unit of the rates × seconds (default 1, so results are per unit of work).
    #[serde(default = "one")]
    pub work: f64,
    /// Name of the unit of work (e.g. "GFLOP"), for labels.
    #[serde(default = "default_unit")]
    pub unit: String,
    /// Search the GPU share on a grid of this step (PEACH used 0.02) instead of continuously.
    #[serde(default)]
    pub share_step: Option<f64>,
    /// n, units to distribute over `[[device]]` profiles.
    #[serde(default)]
    pub units: Option<u64>,
}

impl Default for Workload {
    fn default() -> Self {
        Workload { work: 1.0, unit: default_unit(), share_step: None, units: None }
    }
}

fn one() -> f64 {
    1.0
}

fn default_unit() -> String {
    "unit".into()
}

/// The CPU of a two-device case.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cpu {
    /// R_C, work per second.
    #[serde(default)]
    pub rate: Option<f64>,
    /// The CPU's own static power, W (Stafford's P^S_C); added to the top-level `static_power_w`.
    #[serde(default)]
    pub static_power_w: Option<f64>,
    /// Pd_C, W.
    #[serde(default)]
    pub dynamic_power_w: Option<f64>,
    /// Clock table, instead of rate and power.
    #[serde(default)]
    pub dvfs: Option<DeviceDvfs>,
}

/// The GPU of a two-device case.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gpu {
    /// R_G, work per second.
    #[serde(default)]
    pub rate: Option<f64>,
    /// The GPU's own static power, W (Stafford's P^S_G); added to the top-level `static_power_w`.
    #[serde(default)]
    pub static_power_w: Option<f64>,
    /// Pd_G, W.
    #[serde(default)]
    pub dynamic_power_w: Option<f64>,
    /// P_OH: power of the CPU core hosting the GPU, W.
    #[serde(default)]
    pub hosting_power_w: f64,
    /// T_OH: offload overhead, s.
    #[serde(default)]
    pub offload_overhead_s: f64,
    /// Clock table, instead of rate and power.
    #[serde(default)]
    pub dvfs: Option<DeviceDvfs>,
    /// Rate and dynamic power predicted from a kernel profile by the timing and power models.
    #[serde(default)]
    pub from_model: Option<FromModel>,
}

/// The baseline of a DVFS comparison.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Compare {
    /// CPU clock of the baseline.
    pub cpu_clock: f64,
    /// GPU clock of the baseline.
    pub gpu_clock: f64,
    /// The objective the baseline's split was chosen for (default "time").
    #[serde(default)]
    pub objective: Option<String>,
}

/// Reads and parses a case file.
pub fn load(path: &Path) -> Result<CaseFile> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| Error::Io { path: path.display().to_string(), source })?;
    let mut case = parse(&text, &path.display().to_string())?;
    case.base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    Ok(case)
}

/// Parses case-file text; `origin` names it in errors.
pub fn parse(text: &str, origin: &str) -> Result<CaseFile> {
    toml::from_str(text).map_err(|e| Error::Parse {
        path: origin.to_string(),
        message: e.message().to_string()
            + &e.span().map(|s| format!(" (at byte {})", s.start)).unwrap_or_default(),
    })
}
