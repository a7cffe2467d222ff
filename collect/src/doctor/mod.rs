//! `gpumodel doctor`: one checklist that says whether every part the collector needs works on this
//! machine, what was found, and for each failure the exact fix.
//!
//! The hardware sits behind [`Probes`]: [`system::SystemProbes`] asks the real NVML, CUDA driver, CUPTI
//! and NVRTC (each loaded dynamically, so a missing one is an answer, not a crash), and
//! [`fake::FakeProbes`] scripts their answers for tests. [`run`] turns the answers into rows
//! ([`Check`]: ok / degraded / missing, what was found, the fix) and a verdict per `gpumodel` command
//! ([`Verdict`]); both, with every fact gathered ([`Facts`]), make up the [`DoctorReport`] that the
//! command prints as a table or JSON. A probe that panics (a library lacking a function the bindings
//! resolve on first use) becomes a failed row too.
//!
//! What the rows rely on, from NVIDIA's documentation:
//! - CUPTI is not backward compatible with older drivers: a CUPTI needs a driver of its own CUDA version
//!   or newer, else its calls fail with `CUPTI_ERROR_NOT_INITIALIZED` (CUPTI User's Guide, "CUPTI
//!   Compatibility and Requirements"); the CUDA version of a CUPTI API version is in `cupti_version.h`.
//! - Counters restricted to admin users: `CUPTI_ERROR_INSUFFICIENT_PRIVILEGES`, lifted by the driver
//!   option `NVreg_RestrictProfilingToAdminUsers=0` (<https://developer.nvidia.com/ERR_NVGPUCTRPERM>).
//! - MIG: a shared compute instance cannot read units it shares (their metrics are NaN); profiling works
//!   on isolated compute instances (CUPTI guide, "Special Configurations: Multi-Instance GPU").
//! - `nvmlDeviceGetPowerUsage` is a 1-second average on Ampere and newer; `NVML_FI_DEV_POWER_INSTANT`
//!   (nvml.h, driver 535+) is the instantaneous reading.

mod checks;
mod export;
pub mod fake;
pub mod system;
#[cfg(test)]
mod tests;

use crate::error::{Error, Result};
use crate::power::{PowerField, PowerSource};
use serde::Serialize;

pub use checks::run;

/// How a part works here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Works as the collector needs it.
    Ok,
    /// Works with a limitation the row names (averaged power, no clock control, …).
    Degraded,
    /// Does not work here; the row says how to fix it.
    Missing,
}

impl Status {
    /// The word shown in tables.
    pub fn word(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Degraded => "degraded",
            Status::Missing => "missing",
        }
    }
}

/// One row of the checklist.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// The part: driver, power, counters, compiler, clocks.
    pub part: &'static str,
    /// Stable name of the check (`profiling_permission`, …) for scripts.
    pub id: &'static str,
    pub status: Status,
    /// What was found (versions, names, measured figures) or what went wrong.
    pub found: String,
    /// The exact fix, for a row that is not ok.
    pub fix: Option<String>,
}

/// Which `gpumodel` commands work here.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub command: &'static str,
    pub status: Status,
    /// The rows that make it degraded or missing (empty when ok).
    pub because: Vec<&'static str>,
}

/// One NVML device.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NvmlDevice {
    pub index: u32,
    pub name: String,
    pub pci_bus_id: Option<String>,
}

/// MIG mode (`nvmlDeviceGetMigMode`): the current mode and the one pending until the next GPU reset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MigState {
    pub current: bool,
    pub pending: bool,
}

/// Clocks as NVML reports them, MHz.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ClockFacts {
    pub sm_mhz: Option<u32>,
    pub mem_mhz: Option<u32>,
    pub max_sm_mhz: Option<u32>,
    pub max_mem_mhz: Option<u32>,
    /// `nvmlDeviceGetSupportedMemoryClocks`.
    pub supported_mem_mhz: Vec<u32>,
    /// `nvmlDeviceGetSupportedGraphicsClocks` at the highest supported memory clock.
    pub supported_sm_mhz: Vec<u32>,
    /// Application clocks (memory, graphics), when the GPU has them.
    pub applications_mhz: Option<(u32, u32)>,
    /// `nvmlDeviceGetAPIRestriction(SET_APPLICATION_CLOCKS)`: whether setting application clocks is
    /// reserved to root (`None`: the GPU does not say).
    pub applications_restricted: Option<bool>,
    /// Whether this process runs as root (locked clocks always need root).
    pub root: bool,
}

/// What NVML says about the driver and the GPU checked.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct NvmlFacts {
    pub driver_version: Option<String>,
    /// `nvmlSystemGetCudaDriverVersion_v2`, e.g. 12040 for CUDA 12.4.
    pub cuda_version: Option<u32>,
    pub devices: Vec<NvmlDevice>,
    /// NVML index of the GPU checked.
    pub index: u32,
    /// Whether the CUDA device was matched to it by PCI bus id (else the index was taken as is).
    pub matched_by_pci_bus_id: bool,
    pub name: String,
    pub pci_bus_id: Option<String>,
    pub compute_capability: Option<(u32, u32)>,
    /// `None`: the GPU has no MIG mode.
    pub mig: Option<MigState>,
    /// `nvmlDeviceGetVirtualizationMode`: none, passthrough, vgpu, host_vgpu, host_vsga.
    pub virtualization: Option<String>,
    /// `nvmlDeviceGetPersistenceMode`.
    pub persistence: Option<bool>,
    /// `nvmlDeviceGetPowerManagementLimit`, W.
    pub power_limit_w: Option<f64>,
    /// The power reading the collector would use; `None` with [`NvmlFacts::power_error`] when none works.
    pub power_field: Option<PowerField>,
    pub power_error: Option<String>,
    pub energy_counter: bool,
    pub clocks: ClockFacts,
    /// NVML calls that failed for another reason than "not supported", one line each.
    pub notes: Vec<String>,
}

/// What the CUDA driver says.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CudaFacts {
    /// `cuDriverGetVersion`, e.g. 12040.
    pub driver_version: u32,
    pub device_count: u32,
    pub pci_bus_id: Option<String>,
}

/// The CUPTI library found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CuptiFacts {
    pub path: String,
    /// `cuptiGetVersion`.
    pub api_version: u32,
}

/// NVRTC.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NvrtcFacts {
    pub version: (i32, i32),
}

/// One suite kernel compiled, launched and timed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelFacts {
    pub kernel: String,
    pub arch: String,
    pub compile_ms: f64,
    /// Launch to completion, CUDA events.
    pub kernel_ms: f64,
}

/// A PM-sampling start/stop around a tiny kernel.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PmFacts {
    pub chip: String,
    pub samples: usize,
    pub kernel_launched: bool,
}

/// The Range Profiler on one metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RangeFacts {
    pub metric: String,
    pub ranges: usize,
    pub value: Option<f64>,
}

/// The 2-second sampling run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SamplingFacts {
    pub requested_hz: f64,
    pub achieved_hz: f64,
    pub samples: usize,
    /// 99th percentile of |interval − 1/rate| between consecutive samples, ms.
    pub p99_jitter_ms: f64,
    pub mean_power_w: f64,
}

/// Which model inputs this chip's counter maps provide.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InputFacts {
    pub chip: String,
    /// Inputs the 60 Hz PM-sampling series carries in one run (`[pm]`).
    pub pm: Vec<String>,
    /// Inputs the per-kernel totals carry (Range Profiler).
    pub range: Vec<String>,
    /// Inputs neither provides.
    pub none: Vec<String>,
}

/// Everything gathered, so that a bug report's JSON tells why a command failed.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Facts {
    pub nvml: Option<NvmlFacts>,
    pub cuda: Option<CudaFacts>,
    pub cupti: Option<CuptiFacts>,
    pub nvrtc: Option<NvrtcFacts>,
    pub kernel: Option<KernelFacts>,
    pub sampling: Option<SamplingFacts>,
    pub pm_sampling: Option<PmFacts>,
    pub range_profiler: Option<RangeFacts>,
    pub inputs: Option<InputFacts>,
    /// The errors of the probes that failed, as the collector would print them.
    pub errors: Vec<String>,
}

/// `gpumodel doctor`'s result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DoctorReport {
    /// The CUDA device checked.
    pub device: u32,
    /// The sampling rate asked for, Hz.
    pub rate_hz: f64,
    pub checks: Vec<Check>,
    pub verdict: Vec<Verdict>,
    /// Whether `collect` and `collect --suite`, the next commands of building a model, work here.
    pub ready: bool,
    pub facts: Facts,
}

/// Options of the checklist.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DoctorOptions {
    /// CUDA device ordinal.
    pub device: u32,
    /// Power sampling rate to try, Hz.
    pub rate_hz: f64,
    /// Length of the sampling run, seconds.
    pub sample_seconds: f64,
}

impl DoctorOptions {
    /// Checks the options before any hardware is touched.
    pub fn check(&self) -> Result<()> {
        if !(self.rate_hz.is_finite() && self.rate_hz > 0.0 && self.rate_hz <= 10_000.0) {
            return Err(Error::Invalid(format!(
                "--rate {} is not a sampling rate: give Hz between 0 and 10000, e.g. --rate 60",
                self.rate_hz
            )));
        }
        if !(self.sample_seconds.is_finite() && self.sample_seconds > 0.0) {
            return Err(Error::Invalid(format!(
                "sampling run of {} s: give seconds > 0",
                self.sample_seconds
            )));
        }
        Ok(())
    }
}

/// The hardware as the checklist asks it. Each answer is facts or the collector's own error, whose
/// variant decides the fix shown.
pub trait Probes {
    /// NVML: the driver, every device, and the one that is CUDA device `cuda_device` (by PCI bus id).
    fn nvml(&mut self, cuda_device: u32) -> Result<NvmlFacts>;
    /// A power source on NVML device `nvml_index`, for the sampling run.
    fn power_source(&mut self, nvml_index: u32) -> Result<Box<dyn PowerSource>>;
    /// The CUDA driver: its version and CUDA device `cuda_device`.
    fn cuda(&mut self, cuda_device: u32) -> Result<CudaFacts>;
    /// Finds and checks libcupti and libnvperf_host.
    fn cupti(&mut self) -> Result<CuptiFacts>;
    /// Finds NVRTC.
    fn nvrtc(&mut self) -> Result<NvrtcFacts>;
    /// Compiles one suite kernel for the device, launches it once and times it.
    fn kernel(&mut self, cuda_device: u32) -> Result<KernelFacts>;
    /// Starts and stops PM sampling around a tiny kernel (the profiling-permission test).
    fn pm_sampling(&mut self, cuda_device: u32, rate_hz: f64) -> Result<PmFacts>;
    /// Profiles a tiny kernel with the Range Profiler on one metric.
    fn range_profiler(&mut self, cuda_device: u32) -> Result<RangeFacts>;
    /// Samples [`Probes::power_source`] at `rate_hz` for `seconds`: the rate and jitter this host keeps.
    fn sampling(&mut self, nvml_index: u32, rate_hz: f64, seconds: f64) -> Result<SamplingFacts> {
        checks::sampling_run(self.power_source(nvml_index)?, rate_hz, seconds)
    }
}

/// Runs `f`, turning a panic (a library lacking a function its bindings look up on first use) into an
/// error naming the step.
pub(crate) fn guarded<T>(step: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    std::panic::set_hook(previous);
    r.unwrap_or_else(|payload| {
        let what = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic".into());
        Err(Error::Invalid(format!(
            "{step} stopped: {what}; the library found is not one gpumodel can use (update the NVIDIA driver \
             or the CUDA libraries)"
        )))
    })
}
