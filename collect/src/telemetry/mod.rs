//! What the exporter reads from each GPU once per tick, behind one trait: NVML on a real node
//! ([`nvml::NvmlTelemetry`]), a recorded trace in replay ([`crate::replay`]), the scripted node of
//! `GPUMODEL_FAKE_GPU=1` and the tests' scripted GPUs ([`scripted`]). Which one a command gets is chosen by
//! [`crate::device::Gpu::node`].
//!
//! Units are converted at this boundary: NVML's mJ and mW become joules and watts, its per-process
//! percentages become ratios (1.0 = 100 %; NVML reports values above 100, kept as they are).

use serde::{Deserialize, Serialize};

pub mod nvml;
pub mod scripted;

/// One GPU as the exporter labels it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuInfo {
    /// NVML index.
    pub index: u32,
    pub uuid: String,
    pub name: String,
}

/// One per-process utilization sample (`nvmlDeviceGetProcessUtilization`), as ratios.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProcessSample {
    pub pid: u32,
    /// SM (compute) utilization over the driver's sample period, 1.0 = 100 %.
    pub sm: f64,
    /// Device-memory utilization over the same period, 1.0 = 100 %.
    pub mem: f64,
}

/// What one GPU answered at one tick. Every field the GPU could not give is `None` or empty.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Reading {
    /// Seconds on the reader's monotonic clock (a replay's own time).
    pub time_s: f64,
    /// The total-energy counter since the driver loaded, J (Volta and newer).
    #[serde(default)]
    pub energy_j: Option<f64>,
    /// Board power, W (instantaneous where the GPU has it).
    #[serde(default)]
    pub power_w: Option<f64>,
    #[serde(default)]
    pub sm_mhz: Option<f64>,
    #[serde(default)]
    pub mem_mhz: Option<f64>,
    /// Per-process samples newer than the previous tick's (the driver keeps a cursor per GPU).
    #[serde(default)]
    pub processes: Vec<ProcessSample>,
    /// PIDs with a compute context on the GPU now (`nvmlDeviceGetComputeRunningProcesses`).
    #[serde(default)]
    pub running: Vec<u32>,
    /// A GPU in MIG mode: its GPU instances over the tick (empty otherwise). NVML gives no per-process
    /// utilization in MIG mode; each instance's activity comes from its GPM metrics.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instances: Vec<InstanceReading>,
    /// Compute slices of the whole GPU in MIG mode (7 on A100, H100 and H200; 4 on A30): an instance's share
    /// of the SMs is its slices over these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig_slices: Option<u32>,
}

/// One MIG GPU instance over a tick: its GPM metrics between two samples (`nvmlGpmMigSampleGet`,
/// `nvmlGpmMetricsGet`), as ratios of the instance's own SMs and memory bandwidth (1.0 = 100 %).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct InstanceReading {
    /// GPU instance id (`nvmlDeviceGetGpuInstanceId`).
    pub gi: u32,
    /// The instance's profile, e.g. `3g.40gb`.
    pub profile: String,
    /// Compute slices of the instance (the `3` of `3g.40gb`); 0: taken from the profile's name.
    #[serde(default)]
    pub slices: u32,
    /// `NVML_GPM_METRIC_SM_UTIL` as a ratio; `None` when GPM gave none this tick.
    #[serde(default)]
    pub sm: Option<f64>,
    /// `NVML_GPM_METRIC_DRAM_BW_UTIL` as a ratio.
    #[serde(default)]
    pub dram: Option<f64>,
    /// PIDs with a compute context in the instance (`nvmlDeviceGetComputeRunningProcesses` on its MIG
    /// device).
    #[serde(default)]
    pub running: Vec<u32>,
}

impl InstanceReading {
    /// Compute slices: as given, else from the profile's name, else 1.
    pub fn slices(&self) -> u32 {
        if self.slices > 0 { self.slices } else { profile_slices(&self.profile).unwrap_or(1) }
    }
}

/// The compute slices of a MIG profile name (`3g.40gb` → 3; `1g.10gb+me` → 1); `None` for another name.
pub fn profile_slices(profile: &str) -> Option<u32> {
    let (n, _) = profile.split_once('g')?;
    n.parse().ok().filter(|n| *n > 0)
}

/// A failed NVML call, by call name and NVML's error text (the `call` and `code` labels of
/// `gpumodel_nvml_errors_total`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError {
    pub call: String,
    pub code: String,
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} failed: {}", self.call, self.code)
    }
}

/// The exporter's view of a node's GPUs. Read-only: no implementation changes a GPU setting.
pub trait Telemetry: Send {
    /// The GPUs, in a fixed order; `read` takes a position in this list.
    fn gpus(&self) -> Vec<GpuInfo>;
    /// Reads GPU `gpu` now. An error marks that GPU down for this tick; the others go on.
    fn read(&mut self, gpu: usize) -> Result<Reading, ReadError>;
    /// Errors that did not stop a reading (an optional call that failed), drained each tick.
    fn take_soft_errors(&mut self) -> Vec<ReadError> {
        Vec::new()
    }
    /// A recorded trace with no answer left for GPU `gpu` (its state then holds); a live GPU never is.
    fn ended(&self, _gpu: usize) -> bool {
        false
    }
    /// Every GPU's part of a recorded trace has ended.
    fn exhausted(&self) -> bool {
        (0..self.gpus().len()).all(|g| self.ended(g))
    }
}

/// No GPU at all: a node without a driver, served under `serve --allow-no-gpu` (no GPU series).
pub struct NoGpu;

impl Telemetry for NoGpu {
    fn gpus(&self) -> Vec<GpuInfo> {
        Vec::new()
    }
    fn read(&mut self, _: usize) -> Result<Reading, ReadError> {
        Err(ReadError { call: "nvmlInit".into(), code: "no_driver".into() })
    }
}
