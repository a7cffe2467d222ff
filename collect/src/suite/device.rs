//! The GPU as the suite sees it: the [`SuiteDevice`] trait, what it reports and measures, and the clock
//! pairs it is asked to run at (`--clocks`).

use super::SuiteKernel;
use crate::Error;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A core/memory clock pair, MHz.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClockPair {
    pub core_mhz: f64,
    pub mem_mhz: f64,
}

impl ClockPair {
    /// The label written in the table's `clocks` column (`1410/1215`).
    pub fn label(&self) -> String {
        format!("{}/{}", self.core_mhz, self.mem_mhz)
    }
}

/// Parses `--clocks`: `current`, or a comma-separated list of `CORE:MEM` pairs in MHz.
pub fn parse_clocks(spec: &str) -> Result<Vec<Option<ClockPair>>, Error> {
    let bad = |what: &str| {
        Error::Invalid(format!(
            "--clocks '{spec}': {what}; use `current` or pairs like 1410:1215,1095:1215 (core:memory MHz)"
        ))
    };
    let mut out = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if part.eq_ignore_ascii_case("current") {
            out.push(None);
            continue;
        }
        let (c, m) = part.split_once(':').ok_or_else(|| bad(&format!("'{part}' is not CORE:MEM")))?;
        let parse = |s: &str| s.trim().parse::<f64>().ok().filter(|x| x.is_finite() && *x > 0.0);
        match (parse(c), parse(m)) {
            (Some(core_mhz), Some(mem_mhz)) => out.push(Some(ClockPair { core_mhz, mem_mhz })),
            _ => return Err(bad(&format!("'{part}' does not hold two clocks > 0"))),
        }
    }
    if out.is_empty() {
        return Err(bad("no clocks given"));
    }
    Ok(out)
}

/// What the GPU is, for the table's metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuInfo {
    /// Name as the driver reports it.
    pub name: String,
    /// Chip (`GA102`) or, from NVML on a real GPU, the architecture family (`Ampere`): NVML does not name chips.
    pub chip: Option<String>,
    /// Driver version.
    pub driver: Option<String>,
    /// Compute capability (major, minor).
    pub compute_capability: Option<(u32, u32)>,
    /// Streaming multiprocessors.
    pub sm_count: Option<u32>,
}

/// What one kernel run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    /// Wall time of the measured launches, seconds.
    pub seconds: f64,
    /// Launches in that time.
    pub launches: u64,
    /// Mean board power over the power samples, W.
    pub power_w: f64,
    /// Power samples averaged.
    pub power_samples: usize,
    /// Mean core and memory clock seen during the run, MHz.
    pub clocks: ClockPair,
    /// Canonical counter rates (events per second of the run).
    pub counter_rates: BTreeMap<String, f64>,
}

/// What the board can do at a clock pair: the denominators of the utilization fields the suite writes
/// beside its table (`<out>.profiles.csv`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Peaks {
    /// Peak DRAM bandwidth at the pair's memory clock, bytes/s.
    pub dram_bytes_per_s: f64,
    /// Peak FP32 and FP64 warp instructions per second of the whole GPU at the pair's core clock.
    pub fp32_per_s: f64,
    pub fp64_per_s: f64,
    /// Resident warps one SM can hold.
    pub max_warps_per_sm: f64,
}

/// Whether a clock request took effect.
#[derive(Debug, Clone, PartialEq)]
pub enum ClockOutcome {
    /// The clocks are set.
    Applied,
    /// The GPU refuses (no permission, or the pair is unsupported): the reason, in one line.
    Refused(String),
}

/// A GPU as the suite uses it. The real one is [`CudaSuiteDevice`](super::cuda::CudaSuiteDevice); tests use
/// [`FakeSuiteDevice`](super::FakeSuiteDevice).
pub trait SuiteDevice {
    /// The GPU, for the metadata.
    fn info(&self) -> GpuInfo;
    /// Sets application / locked clocks.
    fn set_clocks(&mut self, pair: ClockPair) -> Result<ClockOutcome, Error>;
    /// Returns the clocks to the driver's defaults.
    fn reset_clocks(&mut self) -> Result<(), Error>;
    /// The board's peaks at `clocks`; `None` when they are not known (then no utilization profiles are
    /// written).
    fn peaks(&self, _clocks: ClockPair) -> Option<Peaks> {
        None
    }
    /// Runs `kernel` repeatedly for at least `min_seconds` while sampling power and counters.
    fn run(&mut self, kernel: &SuiteKernel, min_seconds: f64) -> Result<Measurement, Error>;
}
