//! [`Telemetry`] from NVML (`nvml-wrapper`): what a real node's GPUs answer once per tick.
//!
//! Read-only: this module only queries. It calls no NVML setter — no clocks, no power limit, no
//! accounting mode, no persistence mode, no MIG mode — and so needs no root.
//!
//! The NVML facts it relies on (nvml.h and the NVML API reference):
//!
//! - `nvmlDeviceGetTotalEnergyConsumption`: total energy in mJ since the driver was last loaded, Volta
//!   and newer; older GPUs answer `NVML_ERROR_NOT_SUPPORTED`. It is the reading energy is attributed
//!   from, converted to joules here.
//! - `nvmlDeviceGetFieldValues(NVML_FI_DEV_POWER_INSTANT)` (field 186): the current board power, mW.
//!   `nvmlDeviceGetPowerUsage` is its fallback; on Ampere (except GA100) and newer it is a 1-second
//!   average, on older GPUs the instantaneous power. Which one a GPU uses is probed once, at open
//!   ([`GpuCapabilities::power`]), through the same reading as the collector's power source
//!   (`crate::nvml::power_instant_mw`).
//! - `nvmlDeviceGetProcessUtilization(device, samples, count, lastSeenTimeStamp)`, Maxwell and newer:
//!   one sample per process that had non-zero utilization in a driver sample period, each with its
//!   CPU timestamp in µs; only samples with a timestamp greater than `lastSeenTimeStamp` come back, and
//!   `lastSeenTimeStamp = 0` returns everything in the driver's rolling buffer, however old.
//!   `NVML_ERROR_NOT_FOUND` means no sample is newer than `lastSeenTimeStamp`. So the reader keeps a
//!   cursor per GPU: at open one call with 0 primes it with the newest timestamp in the buffer (those
//!   old samples are dropped), and each read moves it to the newest sample it got. It stays 0 only
//!   while the driver has never returned a sample since open, when the whole buffer is newer than
//!   open. `smUtil` and `memUtil` are percentages that may exceed 100.
//! - `nvmlDeviceGetComputeRunningProcesses_v3` (and, where it answers at open,
//!   `nvmlDeviceGetMPSComputeRunningProcesses_v3`, which lists MPS clients): the processes with a compute
//!   context. One call can miss a process that the utilization samples show, so a reading's `running`
//!   is the union of both.
//! - MIG: per-process utilization is not supported on a GPU in MIG mode (`nvmlDeviceGetMigMode`). Such a
//!   GPU is read for energy, power and clocks, and for each GPU instance: its MIG devices
//!   (`nvmlDeviceGetMaxMigDeviceCount`, `nvmlDeviceGetMigDeviceHandleByIndex`; an index without a device
//!   answers `NVML_ERROR_NOT_FOUND`), each one's GPU instance id (`nvmlDeviceGetGpuInstanceId`), profile
//!   (the end of its name, `… MIG 3g.40gb`) and processes (`nvmlDeviceGetComputeRunningProcesses_v3` on
//!   the MIG device). Where the GPU supports GPM (`nvmlGpmQueryDeviceSupport`, Hopper and newer), each
//!   instance's activity over the tick: a GPM sample per instance per tick (`nvmlGpmMigSampleGet` on the
//!   parent GPU with the instance id), kept until the next one, and `nvmlGpmMetricsGet` between the two for
//!   `NVML_GPM_METRIC_SM_UTIL` and `NVML_GPM_METRIC_DRAM_BW_UTIL` (percent of the instance's own SMs and
//!   bandwidth). A tick shorter than GPM's 100 ms minimum is not allowed by `serve` (0.2 s at least).
//!
//! Errors: a GPU whose energy counter (where it has one) and power both fail, or any call that answers
//! `NVML_ERROR_GPU_IS_LOST`, `NVML_ERROR_RESET_REQUIRED` or `NVML_ERROR_UNKNOWN`, fails the tick for that
//! GPU. Any other failed call is a soft error ([`Telemetry::take_soft_errors`]), as are failures while
//! probing at open (drained on the first tick). Error codes are [`nvml_code`]'s short names.

use super::InstanceReading;
use super::{GpuInfo, ProcessSample, ReadError, Reading, Telemetry};
use crate::PowerField;
use crate::nvml::power_instant_mw;
use nvml_wrapper::enum_wrappers::device::Clock;
use nvml_wrapper::enums::gpm::GpmMetricId;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::gpm::gpm_metrics_get;
use nvml_wrapper::struct_wrappers::device::ProcessUtilizationSample;
use nvml_wrapper::{Device, GpmSample, Nvml};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::sync::Arc;
use std::time::Instant;

/// NVML call names, as the `call` of a [`ReadError`].
mod call {
    pub const COUNT: &str = "nvmlDeviceGetCount_v2";
    pub const HANDLE: &str = "nvmlDeviceGetHandleByIndex_v2";
    pub const UUID: &str = "nvmlDeviceGetUUID";
    pub const NAME: &str = "nvmlDeviceGetName";
    pub const ENERGY: &str = "nvmlDeviceGetTotalEnergyConsumption";
    pub const FIELD_VALUES: &str = "nvmlDeviceGetFieldValues";
    pub const POWER_USAGE: &str = "nvmlDeviceGetPowerUsage";
    pub const CLOCK: &str = "nvmlDeviceGetClockInfo";
    pub const MIG_MODE: &str = "nvmlDeviceGetMigMode";
    pub const PROCESS_UTILIZATION: &str = "nvmlDeviceGetProcessUtilization";
    pub const RUNNING: &str = "nvmlDeviceGetComputeRunningProcesses_v3";
    pub const RUNNING_MPS: &str = "nvmlDeviceGetMPSComputeRunningProcesses_v3";
    pub const GPM_SUPPORT: &str = "nvmlGpmQueryDeviceSupport";
    pub const MIG_COUNT: &str = "nvmlDeviceGetMaxMigDeviceCount";
    pub const MIG_HANDLE: &str = "nvmlDeviceGetMigDeviceHandleByIndex";
    pub const GPU_INSTANCE_ID: &str = "nvmlDeviceGetGpuInstanceId";
    pub const GPM_SAMPLE: &str = "nvmlGpmMigSampleGet";
    pub const GPM_METRICS: &str = "nvmlGpmMetricsGet";
}

/// `NVML_DEVICE_MIG_ENABLE` (nvml.h): the current MIG mode of a GPU with MIG enabled.
const MIG_ENABLE: u32 = 1;

/// What one GPU offers, probed once at open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuCapabilities {
    /// Where board power comes from: [`PowerField::Instant`] (`NVML_FI_DEV_POWER_INSTANT`) or
    /// [`PowerField::Average`] (`nvmlDeviceGetPowerUsage`); `None` when neither answered.
    pub power: Option<PowerField>,
    /// `nvmlDeviceGetTotalEnergyConsumption` answered (Volta and newer).
    pub energy_counter: bool,
    pub sm_clock: bool,
    pub mem_clock: bool,
    /// The GPU is in MIG mode: no per-process utilization.
    pub mig: bool,
    /// In MIG mode, GPM answers (`nvmlGpmQueryDeviceSupport`): each instance's activity is read.
    pub gpm: bool,
    /// `nvmlDeviceGetProcessUtilization` is read (supported, and the GPU is not in MIG mode).
    pub process_utilization: bool,
    /// `nvmlDeviceGetComputeRunningProcesses_v3` is read.
    pub running_processes: bool,
    /// `nvmlDeviceGetMPSComputeRunningProcesses_v3` is read.
    pub mps_processes: bool,
}

/// One GPU being read.
struct Gpu {
    info: GpuInfo,
    caps: GpuCapabilities,
    /// `lastSeenTimeStamp` for the next `nvmlDeviceGetProcessUtilization`, µs; `None` until a call has
    /// answered (the next one only primes it).
    cursor: Option<u64>,
    /// In MIG mode with GPM, each GPU instance's last GPM sample, by instance id.
    held: BTreeMap<u32, HeldSample>,
}

/// An `nvmlGpmSample_t` kept from one tick to the next ([`GpmSample::into_handle`]), freed when the next
/// one replaces it, when its instance is gone, or when the telemetry is dropped.
struct HeldSample(*mut std::ffi::c_void);

// SAFETY: the handle is a buffer NVML allocated (`nvmlGpmSampleAlloc`), not tied to a thread; it is only
// used through the `&mut` of the telemetry that owns it, so by one thread at a time.
unsafe impl Send for HeldSample {}

/// The node's GPUs through NVML. Read-only.
pub struct NvmlTelemetry {
    nvml: Arc<Nvml>,
    start: Instant,
    gpus: Vec<Gpu>,
    soft: Vec<ReadError>,
}

impl NvmlTelemetry {
    /// Opens NVML (`GPUMODEL_NVML_LIB` names another `libnvidia-ml.so`), lists its GPUs and probes what
    /// each offers. A GPU whose handle or UUID cannot be read is left out, with a soft error. Without a
    /// driver this is [`crate::Error::NoDriver`].
    pub fn open() -> Result<NvmlTelemetry, crate::Error> {
        Self::from_nvml(crate::nvml::open_nvml()?)
    }

    /// As [`NvmlTelemetry::open`], loading NVML from `lib_path` (or by its usual name).
    pub fn open_at(lib_path: Option<&OsStr>) -> Result<NvmlTelemetry, crate::Error> {
        Self::from_nvml(crate::nvml::open_nvml_at(lib_path)?)
    }

    fn from_nvml(nvml: Arc<Nvml>) -> Result<NvmlTelemetry, crate::Error> {
        let start = Instant::now();
        let count = nvml
            .device_count()
            .map_err(|e| crate::Error::Nvml { call: call::COUNT, message: e.to_string() })?;
        let mut soft = Vec::new();
        let mut gpus = Vec::new();
        for index in 0..count {
            if let Some(gpu) = probe(&nvml, index, &mut soft) {
                gpus.push(gpu);
            }
        }
        Ok(NvmlTelemetry { nvml, start, gpus, soft })
    }

    /// What GPU `gpu` (a position in [`Telemetry::gpus`]) offers.
    pub fn capabilities(&self, gpu: usize) -> Option<&GpuCapabilities> {
        self.gpus.get(gpu).map(|g| &g.caps)
    }
}

impl Drop for NvmlTelemetry {
    /// Frees the GPM samples still held.
    fn drop(&mut self) {
        for g in &mut self.gpus {
            for (_, h) in std::mem::take(&mut g.held) {
                // SAFETY: `h` came from `into_handle` of a sample allocated with this NVML and not freed since.
                drop(unsafe { GpmSample::from_handle(&self.nvml, h.0.cast()) });
            }
        }
    }
}

impl Telemetry for NvmlTelemetry {
    fn gpus(&self) -> Vec<GpuInfo> {
        self.gpus.iter().map(|g| g.info.clone()).collect()
    }

    fn read(&mut self, gpu: usize) -> Result<Reading, ReadError> {
        let Some(g) = self.gpus.get_mut(gpu) else {
            return Err(ReadError { call: call::HANDLE.into(), code: "invalid_argument".into() });
        };
        let dev = self.nvml.device_by_index(g.info.index).map_err(|e| read_error(call::HANDLE, &e))?;
        read_gpu(&dev, g, self.start, &mut self.soft)
    }

    fn take_soft_errors(&mut self) -> Vec<ReadError> {
        std::mem::take(&mut self.soft)
    }
}

/// The short, lower-snake-case name of an NVML error (the `code` of a [`ReadError`]): NVML's own return
/// codes by their `NVML_ERROR_*` names, the wrapper's own failures by what went wrong.
pub fn nvml_code(e: &NvmlError) -> String {
    let code = match e {
        NvmlError::Uninitialized => "uninitialized",
        NvmlError::InvalidArg => "invalid_argument",
        NvmlError::NotSupported => "not_supported",
        NvmlError::NoPermission => "no_permission",
        #[allow(deprecated, reason = "the match names every variant the wrapper can return")]
        NvmlError::AlreadyInitialized => "already_initialized",
        NvmlError::NotFound => "not_found",
        NvmlError::InsufficientSize(_) => "insufficient_size",
        NvmlError::InsufficientPower => "insufficient_power",
        NvmlError::DriverNotLoaded => "driver_not_loaded",
        NvmlError::Timeout => "timeout",
        NvmlError::IrqIssue => "irq_issue",
        NvmlError::LibraryNotFound => "library_not_found",
        NvmlError::FunctionNotFound => "function_not_found",
        NvmlError::CorruptedInfoROM => "corrupted_inforom",
        NvmlError::GpuLost => "gpu_lost",
        NvmlError::ResetRequired => "reset_required",
        NvmlError::OperatingSystem => "operating_system",
        NvmlError::LibRmVersionMismatch => "lib_rm_version_mismatch",
        NvmlError::InUse => "in_use",
        NvmlError::InsufficientMemory => "memory",
        NvmlError::NoData => "no_data",
        NvmlError::VgpuEccNotSupported => "vgpu_ecc_not_supported",
        NvmlError::Unknown => "unknown",
        NvmlError::UnexpectedVariant(code) => return format!("nvml_return_{code}"),
        NvmlError::FailedToLoadSymbol(_) => "missing_symbol",
        NvmlError::LibloadingError(_) => "library_load",
        NvmlError::Utf8Error(_) | NvmlError::NulError(_) | NvmlError::StringTooLong { .. } => {
            "invalid_string"
        }
        NvmlError::IncorrectBits(_) => "incorrect_bits",
        NvmlError::SetReleaseFailed | NvmlError::GetPciInfoFailed | NvmlError::PciInfoToCFailed => "wrapper",
    };
    code.to_owned()
}

/// Whether an error means the GPU cannot be read at all now, whichever call answered it.
fn is_fatal(e: &NvmlError) -> bool {
    matches!(e, NvmlError::GpuLost | NvmlError::ResetRequired | NvmlError::Unknown)
}

/// Whether an error means the call will never answer on this GPU with this driver and these rights
/// (so it is not made again after probing).
fn is_permanent(e: &NvmlError) -> bool {
    matches!(
        e,
        NvmlError::NotSupported
            | NvmlError::NoPermission
            | NvmlError::FunctionNotFound
            | NvmlError::FailedToLoadSymbol(_)
    )
}

fn read_error(call: &str, e: &NvmlError) -> ReadError {
    ReadError { call: call.into(), code: nvml_code(e) }
}

/// An optional call's answer: its value; or, when it failed, `Err` if the failure means the GPU is
/// gone, else `None` with the failure kept as a soft error.
fn optional<T>(
    r: Result<T, NvmlError>,
    call: &'static str,
    soft: &mut Vec<ReadError>,
) -> Result<Option<T>, ReadError> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if is_fatal(&e) => Err(read_error(call, &e)),
        Err(e) => {
            soft.push(read_error(call, &e));
            Ok(None)
        }
    }
}

/// A probe's answer: whether to make the call on later ticks. A permanent failure says no; any
/// failure but "not supported" is kept as a soft error.
fn probed<T>(r: &Result<T, NvmlError>, call: &'static str, soft: &mut Vec<ReadError>) -> bool {
    match r {
        Ok(_) => true,
        Err(e) => {
            if !matches!(e, NvmlError::NotSupported) {
                soft.push(read_error(call, e));
            }
            !is_permanent(e)
        }
    }
}

/// Opens GPU `index` and probes what it offers; `None` (with a soft error) when it cannot be named.
fn probe(nvml: &Nvml, index: u32, soft: &mut Vec<ReadError>) -> Option<Gpu> {
    let dev = match nvml.device_by_index(index) {
        Ok(d) => d,
        Err(e) => {
            soft.push(read_error(call::HANDLE, &e));
            return None;
        }
    };
    let uuid = match dev.uuid() {
        Ok(u) => u,
        Err(e) => {
            soft.push(read_error(call::UUID, &e));
            return None;
        }
    };
    let name = dev.name().unwrap_or_else(|e| {
        soft.push(read_error(call::NAME, &e));
        "unknown NVIDIA GPU".into()
    });

    let instant = matches!(power_instant_mw(&dev), Ok(Some(_)));
    let power = if instant {
        Some(PowerField::Instant)
    } else {
        probed(&dev.power_usage(), call::POWER_USAGE, soft).then_some(PowerField::Average)
    };
    let energy_counter = probed(&dev.total_energy_consumption(), call::ENERGY, soft);
    let sm_clock = probed(&dev.clock_info(Clock::SM), call::CLOCK, soft);
    let mem_clock = probed(&dev.clock_info(Clock::Memory), call::CLOCK, soft);
    let mig = match dev.mig_mode() {
        Ok(m) => m.current == MIG_ENABLE,
        Err(NvmlError::NotSupported) => false,
        Err(e) => {
            soft.push(read_error(call::MIG_MODE, &e));
            false
        }
    };

    // Prime the cursor: whatever the driver's buffer holds now is older than this exporter.
    let (process_utilization, cursor) = if mig {
        (false, None)
    } else {
        match utilization_samples(&dev, 0) {
            Ok(samples) => (true, Some(take_new(None, samples).1)),
            Err(NvmlError::NotFound) => (true, Some(0)),
            r @ Err(_) => (probed(&r, call::PROCESS_UTILIZATION, soft), None),
        }
    };
    let running_processes = probed(&dev.running_compute_processes(), call::RUNNING, soft);
    // An extra source of PIDs: used only where it answers at open, without a soft error otherwise.
    let mps_processes = dev.mps_running_compute_processes().is_ok();

    // GPM gives each GPU instance's activity (Hopper and newer); without it the instances are read for
    // their processes only.
    let gpm = mig && {
        let r = dev.gpm_support();
        probed(&r, call::GPM_SUPPORT, soft) && r.is_ok_and(|on| on)
    };
    let caps = GpuCapabilities {
        power,
        energy_counter,
        sm_clock,
        mem_clock,
        mig,
        gpm,
        process_utilization,
        running_processes,
        mps_processes,
    };
    Some(Gpu { info: GpuInfo { index, uuid, name }, caps, cursor, held: BTreeMap::new() })
}

/// `nvmlDeviceGetProcessUtilization` since `cursor`, asked again once if more samples arrived between
/// the count and the read.
fn utilization_samples(dev: &Device<'_>, cursor: u64) -> Result<Vec<ProcessUtilizationSample>, NvmlError> {
    match dev.process_utilization_stats(cursor) {
        Err(NvmlError::InsufficientSize(_)) => dev.process_utilization_stats(cursor),
        r => r,
    }
}

/// One tick of one GPU: energy and power first (without either the tick fails, and the utilization
/// cursor stays where it was so that no sample is lost), then clocks and processes.
fn read_gpu(
    dev: &Device<'_>,
    g: &mut Gpu,
    start: Instant,
    soft: &mut Vec<ReadError>,
) -> Result<Reading, ReadError> {
    let time_s = start.elapsed().as_secs_f64();
    let mut mandatory = Vec::new();
    let energy_j = if g.caps.energy_counter {
        optional(dev.total_energy_consumption(), call::ENERGY, &mut mandatory)?.map(|mj| mj as f64 / 1000.0)
    } else {
        None
    };
    let power_w = read_power(dev, g.caps.power, &mut mandatory)?;
    if energy_j.is_none() && power_w.is_none() {
        return Err(mandatory
            .into_iter()
            .next()
            .unwrap_or_else(|| ReadError { call: call::ENERGY.into(), code: "not_supported".into() }));
    }
    soft.extend(mandatory);

    let clock = |on: bool, which: Clock, soft: &mut Vec<ReadError>| -> Result<Option<f64>, ReadError> {
        if !on {
            return Ok(None);
        }
        Ok(optional(dev.clock_info(which), call::CLOCK, soft)?.map(f64::from))
    };
    let sm_mhz = clock(g.caps.sm_clock, Clock::SM, soft)?;
    let mem_mhz = clock(g.caps.mem_clock, Clock::Memory, soft)?;

    let mut processes = Vec::new();
    if g.caps.process_utilization {
        let samples = match utilization_samples(dev, g.cursor.unwrap_or(0)) {
            Ok(s) => Some(s),
            Err(NvmlError::NotFound) => Some(Vec::new()),
            r @ Err(_) => optional(r, call::PROCESS_UTILIZATION, soft)?,
        };
        if let Some(samples) = samples {
            let (fresh, cursor) = take_new(g.cursor, samples);
            g.cursor = Some(cursor);
            processes = average_per_pid(&fresh);
        }
    }

    let mut listed = Vec::new();
    if g.caps.running_processes
        && let Some(p) = optional(dev.running_compute_processes(), call::RUNNING, soft)?
    {
        listed.extend(p.iter().map(|p| p.pid));
    }
    if g.caps.mps_processes
        && let Some(p) = optional(dev.mps_running_compute_processes(), call::RUNNING_MPS, soft)?
    {
        listed.extend(p.iter().map(|p| p.pid));
    }
    let running = union_pids(listed, processes.iter().map(|p| p.pid));

    let (instances, mig_slices) = if g.caps.mig {
        (read_instances(dev, g, soft)?, Some(mig_slices(&g.info.name)))
    } else {
        (Vec::new(), None)
    };
    Ok(Reading { time_s, energy_j, power_w, sm_mhz, mem_mhz, processes, running, instances, mig_slices })
}

/// Compute slices of a MIG GPU by its name: 4 on the A30, 7 on the others (A100, H100, H200, B200).
fn mig_slices(name: &str) -> u32 {
    if name.contains("A30") { 4 } else { 7 }
}

/// The MIG profile at the end of a MIG device's name (`NVIDIA H100 80GB HBM3 MIG 3g.40gb` → `3g.40gb`).
fn mig_profile(name: &str) -> String {
    name.rsplit_once(" MIG ").map_or(name, |(_, p)| p).trim().to_string()
}

/// `nvmlDeviceGetGpuInstanceId` of a MIG device (the wrapper has no method for it).
fn gpu_instance_id(m: &Device<'_>) -> Result<u32, NvmlError> {
    let f = nvml_wrapper::error::nvml_sym(m.nvml().lib().nvmlDeviceGetGpuInstanceId.as_ref())?;
    let mut id: std::ffi::c_uint = 0;
    // SAFETY: `nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id)` (nvml.h), with
    // a handle of this NVML and a pointer to a live integer.
    let r = unsafe { f(m.handle(), &mut id) };
    nvml_wrapper::error::nvml_try(r).map(|()| id)
}

/// The GPU instances of a GPU in MIG mode, each with its processes and, with GPM, its activity since the
/// last tick (none at an instance's first tick).
fn read_instances(
    dev: &Device<'_>,
    g: &mut Gpu,
    soft: &mut Vec<ReadError>,
) -> Result<Vec<InstanceReading>, ReadError> {
    let count = optional(dev.mig_device_count(), call::MIG_COUNT, soft)?.unwrap_or(0);
    let mut by_gi: BTreeMap<u32, InstanceReading> = BTreeMap::new();
    for i in 0..count {
        let m = match dev.mig_device_by_index(i) {
            Ok(m) => m,
            Err(NvmlError::NotFound) => continue,
            Err(e) => {
                optional::<()>(Err(e), call::MIG_HANDLE, soft)?;
                continue;
            }
        };
        let Some(gi) = optional(gpu_instance_id(&m), call::GPU_INSTANCE_ID, soft)? else { continue };
        let profile = optional(m.name(), call::NAME, soft)?.map(|n| mig_profile(&n)).unwrap_or_default();
        let running = optional(m.running_compute_processes(), call::RUNNING, soft)?.unwrap_or_default();
        // Several compute instances of one GPU instance are one instance here.
        let e =
            by_gi.entry(gi).or_insert_with(|| InstanceReading { gi, profile, ..InstanceReading::default() });
        e.running.extend(running.iter().map(|p| p.pid));
    }
    for inst in by_gi.values_mut() {
        inst.running.sort_unstable();
        inst.running.dedup();
    }
    if g.caps.gpm {
        let nvml = dev.nvml();
        for inst in by_gi.values_mut() {
            let Some(now) = optional(dev.gpm_mig_sample(inst.gi), call::GPM_SAMPLE, soft)? else { continue };
            if let Some(prev) = g.held.remove(&inst.gi) {
                // SAFETY: `prev` came from `into_handle` of a sample allocated with this NVML and not freed since.
                let prev = unsafe { GpmSample::from_handle(nvml, prev.0.cast()) };
                let ids = [GpmMetricId::SmUtil, GpmMetricId::DramBwUtil];
                if let Some(got) =
                    optional(gpm_metrics_get(nvml, &prev, &now, &ids), call::GPM_METRICS, soft)?
                {
                    let mut ratios = got.into_iter().map(|m| m.ok().map(|m| m.value / 100.0));
                    inst.sm = ratios.next().flatten();
                    inst.dram = ratios.next().flatten();
                }
            }
            g.held.insert(inst.gi, HeldSample(now.into_handle().cast()));
        }
        // The samples of instances destroyed since the last tick.
        let gone: Vec<u32> = g.held.keys().filter(|gi| !by_gi.contains_key(gi)).copied().collect();
        for gi in gone {
            if let Some(h) = g.held.remove(&gi) {
                // SAFETY: as above.
                drop(unsafe { GpmSample::from_handle(nvml, h.0.cast()) });
            }
        }
    }
    Ok(by_gi.into_values().collect())
}

/// Board power, W, from the probed source; a failed instantaneous field falls back to
/// `nvmlDeviceGetPowerUsage` for this tick (the field's failure is kept).
fn read_power(
    dev: &Device<'_>,
    field: Option<PowerField>,
    failed: &mut Vec<ReadError>,
) -> Result<Option<f64>, ReadError> {
    if field == Some(PowerField::Instant) {
        if let Some(mw) = optional(power_instant_mw(dev), call::FIELD_VALUES, failed)?.flatten() {
            return Ok(Some(mw / 1000.0));
        }
    } else if field.is_none() {
        return Ok(None);
    }
    Ok(optional(dev.power_usage(), call::POWER_USAGE, failed)?.map(|mw| f64::from(mw) / 1000.0))
}

/// The samples newer than `cursor` and the cursor after them (the newest timestamp seen, never moving
/// back). With no cursor yet the call only primes it: every sample is dropped as older than the reader.
fn take_new(
    cursor: Option<u64>,
    samples: Vec<ProcessUtilizationSample>,
) -> (Vec<ProcessUtilizationSample>, u64) {
    let newest = samples.iter().map(|s| s.timestamp).max();
    match cursor {
        None => (Vec::new(), newest.unwrap_or(0)),
        Some(c) => {
            let fresh = samples.into_iter().filter(|s| s.timestamp > c).collect();
            (fresh, newest.map_or(c, |n| n.max(c)))
        }
    }
}

/// NVML's per-process percentage as a ratio (100 % = 1.0; above 100 is kept). An unsigned value of
/// 2³¹ or more is a negative number written into the unsigned field: it reads as 0.
fn percent_to_ratio(percent: u32) -> f64 {
    i32::try_from(percent).map_or(0.0, |p| f64::from(p.max(0)) / 100.0)
}

/// One [`ProcessSample`] per PID, averaging a PID's samples, by PID.
fn average_per_pid(samples: &[ProcessUtilizationSample]) -> Vec<ProcessSample> {
    let mut sums: BTreeMap<u32, (f64, f64, u32)> = BTreeMap::new();
    for s in samples {
        let e = sums.entry(s.pid).or_insert((0.0, 0.0, 0));
        e.0 += percent_to_ratio(s.sm_util);
        e.1 += percent_to_ratio(s.mem_util);
        e.2 += 1;
    }
    sums.into_iter()
        .map(|(pid, (sm, mem, n))| {
            let n = f64::from(n);
            ProcessSample { pid, sm: sm / n, mem: mem / n }
        })
        .collect()
}

/// The PIDs of both lists, each once, in order.
fn union_pids(listed: impl IntoIterator<Item = u32>, sampled: impl IntoIterator<Item = u32>) -> Vec<u32> {
    listed.into_iter().chain(sampled).collect::<BTreeSet<_>>().into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nvml::power_mw;
    use nvml_wrapper::enums::device::SampleValue;

    fn sample(pid: u32, timestamp: u64, sm_util: u32, mem_util: u32) -> ProcessUtilizationSample {
        ProcessUtilizationSample { pid, timestamp, sm_util, mem_util, enc_util: 0, dec_util: 0 }
    }

    #[test]
    fn priming_drops_the_buffer_and_starts_at_its_newest_sample() {
        let (fresh, cursor) = take_new(None, vec![sample(1, 500, 10, 1), sample(2, 900, 20, 2)]);
        assert!(fresh.is_empty());
        assert_eq!(cursor, 900);
        // An empty buffer: everything the driver returns later is newer than open.
        assert_eq!(take_new(None, Vec::new()), (Vec::new(), 0));
    }

    #[test]
    fn the_cursor_moves_to_the_newest_sample_and_never_back() {
        let (fresh, cursor) = take_new(Some(1000), vec![sample(1, 1500, 10, 1), sample(1, 1200, 30, 3)]);
        assert_eq!(fresh.len(), 2);
        assert_eq!(cursor, 1500);
        // No new samples (NVML_ERROR_NOT_FOUND is read as an empty list): the cursor stays.
        assert_eq!(take_new(Some(1500), Vec::new()), (Vec::new(), 1500));
        // Samples not newer than the cursor are not counted twice, and the cursor does not go back.
        let (fresh, cursor) = take_new(Some(1500), vec![sample(1, 1400, 10, 1), sample(2, 1500, 5, 0)]);
        assert!(fresh.is_empty());
        assert_eq!(cursor, 1500);
        let (fresh, cursor) = take_new(Some(1500), vec![sample(1, 1400, 10, 1), sample(2, 1600, 5, 0)]);
        assert_eq!(fresh, vec![sample(2, 1600, 5, 0)]);
        assert_eq!(cursor, 1600);
    }

    #[test]
    fn percentages_become_ratios_keeping_values_above_100() {
        assert_eq!(percent_to_ratio(0), 0.0);
        assert_eq!(percent_to_ratio(50), 0.5);
        assert_eq!(percent_to_ratio(100), 1.0);
        assert_eq!(percent_to_ratio(130), 1.3);
        // -1 in the unsigned field.
        assert_eq!(percent_to_ratio(u32::MAX), 0.0);
        assert_eq!(percent_to_ratio(1 << 31), 0.0);
    }

    #[test]
    fn samples_of_one_pid_are_averaged_into_one() {
        let got = average_per_pid(&[
            sample(42, 1, 20, 10),
            sample(7, 2, 100, 0),
            sample(42, 3, 40, 30),
            sample(42, 4, 120, u32::MAX),
        ]);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0], ProcessSample { pid: 7, sm: 1.0, mem: 0.0 });
        assert_eq!(got[1].pid, 42);
        assert!((got[1].sm - 0.6).abs() < 1e-12, "{}", got[1].sm);
        assert!((got[1].mem - (0.1 + 0.3) / 3.0).abs() < 1e-12, "{}", got[1].mem);
        assert!(average_per_pid(&[]).is_empty());
    }

    #[test]
    fn running_is_the_sorted_union_of_listed_and_sampled_pids() {
        assert_eq!(union_pids([30, 10, 30], [20, 10]), vec![10, 20, 30]);
        assert_eq!(union_pids([], [5, 5]), vec![5]);
        assert_eq!(union_pids([9], []), vec![9]);
        assert!(union_pids([], []).is_empty());
    }

    #[test]
    fn power_fields_in_mw_must_be_finite_and_not_negative() {
        assert_eq!(power_mw(&SampleValue::U32(250_000)), Some(250_000.0));
        assert_eq!(power_mw(&SampleValue::U64(70_500)), Some(70_500.0));
        assert_eq!(power_mw(&SampleValue::I64(1_000)), Some(1_000.0));
        assert_eq!(power_mw(&SampleValue::F64(12.5)), Some(12.5));
        assert_eq!(power_mw(&SampleValue::I64(-1)), None);
        assert_eq!(power_mw(&SampleValue::F64(f64::NAN)), None);
        assert_eq!(power_mw(&SampleValue::F64(f64::INFINITY)), None);
    }

    #[test]
    fn error_codes_are_short_lower_snake_names() {
        let cases = [
            (NvmlError::GpuLost, "gpu_lost"),
            (NvmlError::NotSupported, "not_supported"),
            (NvmlError::NoPermission, "no_permission"),
            (NvmlError::Unknown, "unknown"),
            (NvmlError::NotFound, "not_found"),
            (NvmlError::InsufficientSize(Some(4)), "insufficient_size"),
            (NvmlError::ResetRequired, "reset_required"),
            (NvmlError::CorruptedInfoROM, "corrupted_inforom"),
            (NvmlError::LibRmVersionMismatch, "lib_rm_version_mismatch"),
            (NvmlError::FailedToLoadSymbol("nvmlDeviceGetMigMode".into()), "missing_symbol"),
            (NvmlError::UnexpectedVariant(999), "nvml_return_999"),
        ];
        for (e, want) in cases {
            assert_eq!(nvml_code(&e), want, "{e:?}");
        }
        let all = [
            NvmlError::Uninitialized,
            NvmlError::InvalidArg,
            NvmlError::InsufficientPower,
            NvmlError::DriverNotLoaded,
            NvmlError::Timeout,
            NvmlError::IrqIssue,
            NvmlError::LibraryNotFound,
            NvmlError::FunctionNotFound,
            NvmlError::OperatingSystem,
            NvmlError::InUse,
            NvmlError::InsufficientMemory,
            NvmlError::NoData,
            NvmlError::VgpuEccNotSupported,
            NvmlError::StringTooLong { max_len: 1, actual_len: 2 },
            NvmlError::SetReleaseFailed,
        ];
        for e in all {
            let code = nvml_code(&e);
            assert!(
                !code.is_empty() && code.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{e:?} -> {code}"
            );
        }
    }

    #[test]
    fn only_a_lost_gpu_fails_a_tick_and_only_lasting_refusals_stop_a_call() {
        for e in [NvmlError::GpuLost, NvmlError::ResetRequired, NvmlError::Unknown] {
            assert!(is_fatal(&e), "{e:?}");
        }
        for e in [NvmlError::NotSupported, NvmlError::NoPermission, NvmlError::NotFound, NvmlError::Timeout] {
            assert!(!is_fatal(&e), "{e:?}");
        }
        assert!(is_permanent(&NvmlError::NotSupported));
        assert!(is_permanent(&NvmlError::FailedToLoadSymbol("x".into())));
        assert!(!is_permanent(&NvmlError::Timeout));
        assert!(!is_permanent(&NvmlError::GpuLost));
    }

    #[test]
    fn an_optional_call_fails_soft_unless_the_gpu_is_gone() {
        let mut soft = Vec::new();
        assert_eq!(optional(Ok(3), call::CLOCK, &mut soft), Ok(Some(3)));
        assert_eq!(optional::<u32>(Err(NvmlError::NoPermission), call::CLOCK, &mut soft), Ok(None));
        assert_eq!(
            soft,
            vec![ReadError { call: "nvmlDeviceGetClockInfo".into(), code: "no_permission".into() }]
        );
        assert_eq!(
            optional::<u32>(Err(NvmlError::GpuLost), call::RUNNING, &mut soft),
            Err(ReadError {
                call: "nvmlDeviceGetComputeRunningProcesses_v3".into(),
                code: "gpu_lost".into()
            })
        );
        assert_eq!(soft.len(), 1);
    }

    #[test]
    fn probing_keeps_a_call_unless_it_can_never_answer() {
        let mut soft = Vec::new();
        assert!(probed(&Ok(()), call::ENERGY, &mut soft));
        assert!(!probed::<()>(&Err(NvmlError::NotSupported), call::ENERGY, &mut soft));
        assert!(soft.is_empty(), "not supported is an answer, not an error");
        assert!(!probed::<()>(&Err(NvmlError::NoPermission), call::ENERGY, &mut soft));
        assert!(probed::<()>(&Err(NvmlError::Timeout), call::ENERGY, &mut soft));
        let codes: Vec<_> = soft.iter().map(|e| e.code.as_str()).collect();
        assert_eq!(codes, ["no_permission", "timeout"]);
    }

    #[test]
    fn the_reader_can_move_to_the_sampling_thread() {
        fn send<T: Send>() {}
        send::<NvmlTelemetry>();
    }

    /// No NVML library: opening is an error, not a panic.
    #[test]
    fn no_library_is_an_error() {
        let missing = OsStr::new("/nonexistent/libnvidia-ml.so");
        let Err(e) = NvmlTelemetry::open_at(Some(missing)) else {
            panic!("NVML must not open from a missing library")
        };
        assert!(e.to_string().starts_with("no NVIDIA driver"), "{e}");
    }

    /// `open` honours `GPUMODEL_NVML_LIB`. Changing the environment would race with tests that open the
    /// real NVML, so this runs only where there is no driver.
    #[test]
    fn open_without_a_driver_is_an_error() {
        if std::path::Path::new("/proc/driver/nvidia").exists() {
            return;
        }
        let before = std::env::var_os("GPUMODEL_NVML_LIB");
        // SAFETY: on a machine without a driver no other test depends on this variable, and no thread
        // outside Rust's environment lock reads the environment here.
        unsafe { std::env::set_var("GPUMODEL_NVML_LIB", "/nonexistent/libnvidia-ml.so") };
        let r = NvmlTelemetry::open();
        // SAFETY: as above.
        unsafe {
            match before {
                Some(v) => std::env::set_var("GPUMODEL_NVML_LIB", v),
                None => std::env::remove_var("GPUMODEL_NVML_LIB"),
            }
        }
        let Err(e) = r else { panic!("NVML must not open without a driver") };
        assert!(e.to_string().starts_with("no NVIDIA driver"), "{e}");
    }
}
