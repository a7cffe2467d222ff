//! The GPU as the suite sees it: the [`SuiteDevice`] trait, what it reports and measures, and the clock
//! clocks it runs at.

use super::SuiteKernel;
use crate::Error;
use crate::clock_control::ClockControl;
use gpumodel_models::timing::Clocks;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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
    pub clocks: Clocks,
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

/// A GPU as the suite uses it. The real one is [`CudaSuiteDevice`](super::cuda::CudaSuiteDevice); tests use
/// [`FakeSuiteDevice`](super::FakeSuiteDevice). Its clocks are set through [`ClockControl`]; a refusal
/// ([`ClockOutcome::Refused`](crate::clock_control::ClockOutcome::Refused)) leaves the run at the current
/// clocks.
pub trait SuiteDevice: ClockControl {
    /// The GPU, for the metadata.
    fn info(&self) -> GpuInfo;
    /// The board's peaks at `clocks`; `None` when they are not known (then no utilization profiles are
    /// written).
    fn peaks(&self, _clocks: Clocks) -> Option<Peaks> {
        None
    }
    /// Runs `kernel` repeatedly for at least `min_seconds` while sampling power and counters.
    fn run(&mut self, kernel: &SuiteKernel, min_seconds: f64) -> Result<Measurement, Error>;
}
