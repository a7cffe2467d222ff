//! The NVML power source (`nvml-wrapper`): instantaneous power where the GPU has it, else the averaged
//! `power_usage`, clocks, and the total-energy counter (Volta and newer).
//!
//! Probed once at open: `nvmlDeviceGetFieldValues(NVML_FI_DEV_POWER_INSTANT)` is tried, and if it fails
//! (older driver or GPU) every later reading uses `nvmlDeviceGetPowerUsage`, which on Ampere and newer is a
//! 1-second average. The choice is in [`PowerInfo::field`] and so in every trace's metadata. NVML's mW and
//! mJ are converted to watts and joules here, once.
//!
//! Which GPU: [`NvmlPower::open_cuda_device`] takes the CUDA ordinal that the program and CUPTI use and
//! finds the NVML device with the same PCI bus id ([`crate::pci`]), because CUDA's numbering
//! (`CUDA_VISIBLE_DEVICES`, fastest first) and NVML's (PCI order, all GPUs) can differ. The sequence:
//! `cuInit(0)` → `cuDeviceGet(ordinal)` → `cuDeviceGetPCIBusId` → `nvmlDeviceGetHandleByPciBusId_v2`
//! (checked against the handle's `nvmlDeviceGetPciInfo` busId, and if that lookup fails a scan of
//! `nvmlDeviceGetPciInfo` over every NVML device) → `nvmlDeviceGetIndex`.

use crate::error::{Error, Result};
use crate::pci::{PciBusId, find_by_pci_bus_id};
use crate::power::{PowerField, PowerInfo, PowerReading, PowerSource};
use gpumodel_models::{Joules, Mhz, Watts};
use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::Clock;
use nvml_wrapper::enums::device::SampleValue;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::structs::device::FieldId;
use std::sync::Arc;

/// `NVML_FI_DEV_POWER_INSTANT` (nvml.h, driver 535+): instantaneous power in mW.
const FI_DEV_POWER_INSTANT: u32 = 186;

/// Opens NVML, mapping "no library" to a clear no-driver error. `GPUMODEL_NVML_LIB` names another
/// `libnvidia-ml.so` to load (a test double, or a driver outside the loader's path).
pub fn open_nvml() -> Result<Arc<Nvml>> {
    match std::env::var_os("GPUMODEL_NVML_LIB") {
        Some(path) => open_nvml_at(Some(&path)),
        None => open_nvml_at(None),
    }
}

/// Opens NVML from `lib_path` (nvml-wrapper's `Nvml::builder().lib_path`), or by its usual name.
pub fn open_nvml_at(lib_path: Option<&std::ffi::OsStr>) -> Result<Arc<Nvml>> {
    let mut builder = Nvml::builder();
    if let Some(p) = lib_path {
        builder.lib_path(p);
    }
    match builder.init() {
        Ok(n) => Ok(Arc::new(n)),
        Err(NvmlError::LibloadingError(e)) => {
            Err(Error::NoDriver { detail: format!("libnvidia-ml.so: {e}") })
        }
        Err(NvmlError::DriverNotLoaded) => {
            Err(Error::NoDriver { detail: "the NVIDIA kernel driver is not loaded".into() })
        }
        Err(NvmlError::NoPermission) => Err(Error::Nvml {
            call: "nvmlInit",
            message: "no permission to open the GPU device files; run as a user in the video group".into(),
        }),
        Err(NvmlError::FailedToLoadSymbol(e)) => Err(Error::NoDriver {
            detail: format!(
                "libnvidia-ml.so lacks a function this tool needs ({e}); update the NVIDIA driver"
            ),
        }),
        Err(e) => Err(Error::Nvml { call: "nvmlInit", message: e.to_string() }),
    }
}

/// How an optional NVML reading answered when probed: "not supported" is a value, anything else is a
/// one-line note in the trace.
fn optional<T>(what: &str, r: std::result::Result<T, NvmlError>, notes: &mut Vec<String>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(NvmlError::NotSupported) => None,
        Err(NvmlError::NoPermission) => {
            notes.push(format!("NVML refused to read the {what} (no permission): it is not recorded"));
            None
        }
        Err(e) => {
            notes.push(format!("NVML could not read the {what} ({e}): it is not recorded"));
            None
        }
    }
}

/// NVML power readings of one GPU.
pub struct NvmlPower {
    nvml: Arc<Nvml>,
    index: u32,
    info: PowerInfo,
    /// Whether the SM and memory clocks answered when probed (a GPU that does not support a clock
    /// reading gives no value, once, instead of an error per sample).
    clocks: [bool; 2],
    /// Probing notes and clock reads that failed during the run: (message, count).
    notes: Vec<(String, u64)>,
}

fn nvml_err(call: &'static str) -> impl Fn(NvmlError) -> Error {
    move |e| Error::Nvml { call, message: e.to_string() }
}

/// `NVML_FI_DEV_POWER_INSTANT` of `dev`, mW: the call's error, else the field's own error, else the value
/// when it is a finite, non-negative number (`None` otherwise). The collector's power source and the
/// exporter's reader both probe and read it here.
pub(crate) fn power_instant_mw(
    dev: &nvml_wrapper::Device<'_>,
) -> std::result::Result<Option<f64>, NvmlError> {
    match dev.field_values_for(&[FieldId(FI_DEV_POWER_INSTANT)])?.into_iter().next() {
        Some(sample) => Ok(power_mw(&sample?.value?)),
        None => Ok(None),
    }
}

/// A power field's value in mW, when it is a finite, non-negative number.
pub(crate) fn power_mw(v: &SampleValue) -> Option<f64> {
    let mw = match *v {
        SampleValue::U32(v) => f64::from(v),
        SampleValue::U64(v) => v as f64,
        SampleValue::I64(v) => v as f64,
        SampleValue::F64(v) => v,
    };
    (mw.is_finite() && mw >= 0.0).then_some(mw)
}

impl NvmlPower {
    /// Opens GPU `index` and probes which power reading and energy counter it offers.
    pub fn open(nvml: Arc<Nvml>, index: u32) -> Result<NvmlPower> {
        let dev = nvml.device_by_index(index).map_err(|e| Error::NoGpu { index, detail: e.to_string() })?;
        let mut notes = Vec::new();
        let gpu = optional("GPU name", dev.name(), &mut notes).unwrap_or_else(|| "unknown NVIDIA GPU".into());
        let driver = optional("driver version", nvml.sys_driver_version(), &mut notes);
        let compute_capability = optional("compute capability", dev.cuda_compute_capability(), &mut notes)
            .map(|c| (c.major as u32, c.minor as u32));
        // NVML_FI_DEV_POWER_INSTANT: the call itself and the field's own return code may each refuse.
        let instant = matches!(power_instant_mw(&dev), Ok(Some(_)));
        let field = if instant {
            PowerField::Instant
        } else {
            // The averaged reading is the last resort: without it there is no power to record.
            dev.power_usage().map_err(|e| match e {
                NvmlError::NotSupported => Error::Nvml {
                    call: "nvmlDeviceGetPowerUsage",
                    message: "this GPU reports no power reading (neither POWER_INSTANT nor power usage); \
                              power can only be measured with an external meter"
                        .into(),
                },
                NvmlError::NoPermission => Error::Nvml {
                    call: "nvmlDeviceGetPowerUsage",
                    message: "no permission to read power; run as a user allowed to query the GPU (or root)"
                        .into(),
                },
                e => Error::Nvml { call: "nvmlDeviceGetPowerUsage", message: e.to_string() },
            })?;
            PowerField::Average
        };
        let energy_counter = optional("energy counter", dev.total_energy_consumption(), &mut notes).is_some();
        let pci_bus_id = optional("PCI bus id", dev.pci_info(), &mut notes).map(|p| p.bus_id);
        let clocks = [
            optional("SM clock", dev.clock_info(Clock::SM), &mut notes).is_some(),
            optional("memory clock", dev.clock_info(Clock::Memory), &mut notes).is_some(),
        ];
        let info = PowerInfo { gpu, driver, compute_capability, field, energy_counter, pci_bus_id };
        Ok(NvmlPower { nvml, index, info, clocks, notes: notes.into_iter().map(|n| (n, 1)).collect() })
    }

    /// A clock probed as readable: its value, or `None` with the failure counted for the trace.
    fn clock(&mut self, which: usize) -> Option<Mhz> {
        if !self.clocks[which] {
            return None;
        }
        let (clock, name) = if which == 0 { (Clock::SM, "SM") } else { (Clock::Memory, "memory") };
        let r = self.nvml.device_by_index(self.index).and_then(|d| d.clock_info(clock));
        match r {
            Ok(c) => Some(Mhz(f64::from(c))),
            Err(e) => {
                let msg = format!("NVML {name} clock reads failed ({e}); those samples have no {name} clock");
                match self.notes.iter_mut().find(|(m, _)| *m == msg) {
                    Some((_, n)) => *n += 1,
                    None => self.notes.push((msg, 1)),
                }
                None
            }
        }
    }

    /// Opens the NVML device that is CUDA device `cuda_ordinal` of this process (the same physical GPU,
    /// matched by PCI bus id), whatever the two numberings.
    pub fn open_cuda_device(nvml: Arc<Nvml>, cuda_ordinal: u32) -> Result<NvmlPower> {
        let bus_id = cuda_pci_bus_id(cuda_ordinal)?;
        let index = nvml_index_by_pci_bus_id(&nvml, &bus_id).ok_or_else(|| Error::NoNvmlMatch {
            cuda_device: cuda_ordinal,
            pci_bus_id: bus_id.cuda_form(),
        })?;
        let mut power = NvmlPower::open(nvml, index)?;
        power.info.pci_bus_id = Some(bus_id.to_string());
        Ok(power)
    }

    /// The NVML index of the GPU read.
    pub fn nvml_index(&self) -> u32 {
        self.index
    }
}

/// The PCI bus id of CUDA device `ordinal` as this process numbers devices (after `CUDA_VISIBLE_DEVICES`
/// and `CUDA_DEVICE_ORDER`, which the measured program inherits): `cuInit(0)` → `cuDeviceGet` →
/// `cuDeviceGetPCIBusId`.
pub fn cuda_pci_bus_id(ordinal: u32) -> Result<PciBusId> {
    use cudarc::driver::sys;
    // SAFETY: only probes dlopen of libcuda by name.
    if !unsafe { sys::is_culib_present() } {
        return Err(Error::NoDriver { detail: "libcuda.so cannot be loaded".into() });
    }
    cudarc::driver::result::init().map_err(|e| Error::NoDriver { detail: format!("cuInit: {e:?}") })?;
    let Ok(c_ordinal) = i32::try_from(ordinal) else {
        return Err(Error::NoGpu { index: ordinal, detail: "not a CUDA device ordinal".into() });
    };
    let dev = cudarc::driver::result::device::get(c_ordinal).map_err(|e| {
        let count = cudarc::driver::result::device::get_count().map_or("?".into(), |n| n.to_string());
        let visible = std::env::var("CUDA_VISIBLE_DEVICES").unwrap_or_else(|_| "unset".into());
        Error::NoGpu {
            index: ordinal,
            detail: format!(
                "cuDeviceGet: {e:?}; CUDA sees {count} device(s), CUDA_VISIBLE_DEVICES={visible}"
            ),
        }
    })?;
    // cuDeviceGetPCIBusId: "13 characters will be sufficient"; a wider buffer covers 8-digit domains.
    let mut buf = [0 as std::ffi::c_char; 32];
    // SAFETY: buf holds buf.len() bytes; the driver writes a NUL-terminated string into it.
    let r = unsafe { sys::cuDeviceGetPCIBusId(buf.as_mut_ptr(), buf.len() as i32, dev) };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(Error::NoGpu { index: ordinal, detail: format!("cuDeviceGetPCIBusId: {r:?}") });
    }
    // SAFETY: NUL-terminated within buf (zero-initialised, and the driver terminates what it writes).
    let text = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned();
    text.parse().map_err(|e: crate::pci::ParsePciBusIdError| Error::NoGpu {
        index: ordinal,
        detail: format!("cuDeviceGetPCIBusId: {e}"),
    })
}

/// The NVML index of the GPU with PCI bus id `bus_id`, or `None` when NVML has no such device. NVML's
/// own lookup is tried first (its answer is checked against the device's bus id), then every device.
pub fn nvml_index_by_pci_bus_id(nvml: &Nvml, bus_id: &PciBusId) -> Option<u32> {
    let direct = nvml.device_by_pci_bus_id(bus_id.to_string()).ok().and_then(|dev| {
        let same = dev.pci_info().ok()?.bus_id.parse::<PciBusId>().ok()? == *bus_id;
        if same { dev.index().ok() } else { None }
    });
    direct.or_else(|| {
        let count = nvml.device_count().ok()?;
        let ids: Vec<(u32, String)> = (0..count)
            .filter_map(|i| Some((i, nvml.device_by_index(i).ok()?.pci_info().ok()?.bus_id)))
            .collect();
        find_by_pci_bus_id(bus_id, ids.iter().map(|(i, s)| (*i, s.as_str())))
    })
}

impl PowerSource for NvmlPower {
    fn info(&self) -> PowerInfo {
        self.info.clone()
    }

    fn read(&mut self) -> Result<PowerReading> {
        let dev = self.nvml.device_by_index(self.index).map_err(nvml_err("nvmlDeviceGetHandleByIndex"))?;
        let power = match self.info.field {
            PowerField::Instant => {
                let mw = power_instant_mw(&dev).map_err(nvml_err("nvmlDeviceGetFieldValues"))?.ok_or(
                    Error::Nvml {
                        call: "nvmlDeviceGetFieldValues",
                        message: "no usable POWER_INSTANT value".into(),
                    },
                )?;
                Watts(mw / 1000.0)
            }
            _ => Watts::from_milliwatts(dev.power_usage().map_err(nvml_err("nvmlDeviceGetPowerUsage"))?),
        };
        let core = self.clock(0);
        let mem = self.clock(1);
        Ok(PowerReading { power, core, mem })
    }

    fn energy(&mut self) -> Result<Option<Joules>> {
        if !self.info.energy_counter {
            return Ok(None);
        }
        let dev = self.nvml.device_by_index(self.index).map_err(nvml_err("nvmlDeviceGetHandleByIndex"))?;
        let mj = dev.total_energy_consumption().map_err(nvml_err("nvmlDeviceGetTotalEnergyConsumption"))?;
        Ok(Some(Joules::from_millijoules(mj)))
    }

    fn warnings(&self) -> Vec<String> {
        self.notes.iter().map(|(m, n)| if *n > 1 { format!("{m} ({n} times)") } else { m.clone() }).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Our machines have no driver: opening NVML must be a clear error, never a panic. Skipped where a
    /// driver exists.
    #[test]
    fn no_driver_is_a_clear_error() {
        if std::path::Path::new("/proc/driver/nvidia").exists() {
            return;
        }
        let Err(e) = open_nvml() else { panic!("NVML must not open without a driver") };
        let msg = e.to_string();
        assert!(msg.starts_with("no NVIDIA driver"), "{msg}");
        assert!(msg.contains("run on a machine with an NVIDIA GPU"), "{msg}");
    }

    /// Matching NVML to CUDA needs libcuda: without it, the CUDA side is the same clear no-driver error
    /// (not a panic in the dynamic loader). Skipped where a driver exists.
    #[test]
    fn cuda_bus_id_without_a_driver_is_a_clear_error() {
        if std::path::Path::new("/proc/driver/nvidia").exists() {
            return;
        }
        let Err(e) = cuda_pci_bus_id(0) else { panic!("no CUDA device without a driver") };
        let msg = e.to_string();
        assert!(msg.starts_with("no NVIDIA driver"), "{msg}");
        assert!(!msg.contains('\n'), "{msg}");
    }

    #[test]
    fn no_matching_nvml_device_is_one_line_that_says_what_to_check() {
        let e = Error::NoNvmlMatch { cuda_device: 1, pci_bus_id: "0000:b3:00.0".into() }.to_string();
        assert!(e.starts_with("CUDA device 1 (PCI bus id 0000:b3:00.0) has no NVML device"), "{e}");
        assert!(e.contains("CUDA_VISIBLE_DEVICES") && e.contains("nvidia-smi"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }
}

/// How a clock pair was set through NVML, so that it can be put back ([`set_clock_pair`],
/// [`restore_clock_pair`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockLock {
    /// Application clocks; `before` holds the (memory, graphics) application clocks to put back, `None`
    /// when they were the defaults (then they are reset).
    Applications { before: Option<(u32, u32)> },
    /// Locked GPU and memory clocks (reset afterwards).
    Locked,
}

/// An NVML clock call that failed, with its name (for the caller's error).
#[derive(Debug)]
pub struct ClockCallError {
    pub call: &'static str,
    pub error: NvmlError,
    /// When the memory lock failed after the GPU lock succeeded, and undoing the GPU lock
    /// (`nvmlDeviceResetGpuLockedClocks`) failed too: the GPU may be left locked, and the caller should
    /// say so (`nvidia-smi -rgc` resets it).
    pub undo_failed: Option<NvmlError>,
}

impl ClockCallError {
    /// What to append to the error's message: that the GPU may be left locked and how to undo it, when
    /// [`ClockCallError::undo_failed`]; else nothing.
    pub fn undo_note(&self) -> String {
        self.undo_failed
            .as_ref()
            .map(|u| {
                format!("; resetting the locked SM clock also failed ({u}): run `nvidia-smi -rgc` as root")
            })
            .unwrap_or_default()
    }
}

/// Sets the core (graphics) and memory clocks, MHz, in NVML's documented sequence: application clocks
/// (`nvmlDeviceSetApplicationsClocks(mem, graphics)`, Kepler and newer non-GeForce, Maxwell and newer
/// GeForce), and where those are `NOT_SUPPORTED` locked clocks (`nvmlDeviceSetGpuLockedClocks(g, g)`,
/// Volta and newer; `nvmlDeviceSetMemoryLockedClocks(m, m)`, Ampere and newer). `previous` is what an
/// earlier call returned (the mechanism stays the same, and what to put back is the state before the
/// first change). If the memory lock fails after the GPU lock succeeded, the GPU lock is reset before the
/// error returns (and a failure of that reset is in [`ClockCallError::undo_failed`]). All of these need root
/// (`NVML_ERROR_NO_PERMISSION`). Used by calibrate's sweep and the suite through [`crate::clock_control::NvmlClocks`].
pub fn set_clock_pair(
    dev: &mut nvml_wrapper::Device<'_>,
    core_mhz: u32,
    mem_mhz: u32,
    previous: Option<ClockLock>,
) -> std::result::Result<ClockLock, ClockCallError> {
    let fail = |call| move |error| ClockCallError { call, error, undo_failed: None };
    if matches!(previous, None | Some(ClockLock::Applications { .. })) {
        let before = match previous {
            Some(ClockLock::Applications { before }) => before,
            _ => {
                let now = (dev.applications_clock(Clock::Memory), dev.applications_clock(Clock::Graphics));
                let default = (
                    dev.default_applications_clock(Clock::Memory),
                    dev.default_applications_clock(Clock::Graphics),
                );
                match (now, default) {
                    ((Ok(nm), Ok(ng)), (Ok(dm), Ok(dg))) if (nm, ng) != (dm, dg) => Some((nm, ng)),
                    _ => None,
                }
            }
        };
        match dev.set_applications_clocks(mem_mhz, core_mhz) {
            Ok(()) => return Ok(ClockLock::Applications { before }),
            Err(NvmlError::NotSupported) if previous.is_none() => {}
            Err(e) => return Err(fail("nvmlDeviceSetApplicationsClocks")(e)),
        }
    }
    dev.set_gpu_locked_clocks(nvml_wrapper::enums::device::GpuLockedClocksSetting::Numeric {
        min_clock_mhz: core_mhz,
        max_clock_mhz: core_mhz,
    })
    .map_err(fail("nvmlDeviceSetGpuLockedClocks"))?;
    if let Err(e) = dev.set_mem_locked_clocks(mem_mhz, mem_mhz) {
        // Leave nothing half-set: the GPU lock goes back before the error is reported, and if that fails
        // too the caller learns it rather than leave the GPU locked silently.
        let undo_failed = match dev.reset_gpu_locked_clocks() {
            Ok(()) | Err(NvmlError::NotSupported) => None,
            Err(u) => Some(u),
        };
        return Err(ClockCallError { call: "nvmlDeviceSetMemoryLockedClocks", error: e, undo_failed });
    }
    Ok(ClockLock::Locked)
}

/// An NVML error of a clock call as the collector's error, `note` appended: permission and support get
/// their own.
pub(crate) fn clock_error(call: &'static str, e: NvmlError, note: &str) -> Error {
    match e {
        NvmlError::NoPermission => Error::ClockPermission { detail: format!("{call}: {e}{note}") },
        NvmlError::NotSupported => Error::ClocksUnsupported { detail: format!("{call}: {e}{note}") },
        e => Error::Nvml { call, message: format!("{e}{note}") },
    }
}

/// The clocks NVML says the GPU supports: each memory clock with the graphics clocks allowed with it
/// (`nvmlDeviceGetSupportedMemoryClocks`, `nvmlDeviceGetSupportedGraphicsClocks`); read-only.
pub fn supported_clocks(dev: &nvml_wrapper::Device<'_>) -> Result<crate::clocks::SupportedClocks> {
    let err = |call: &'static str| move |e| clock_error(call, e, "");
    let mems = dev.supported_memory_clocks().map_err(err("nvmlDeviceGetSupportedMemoryClocks"))?;
    mems.into_iter()
        .map(|m| {
            Ok((m, dev.supported_graphics_clocks(m).map_err(err("nvmlDeviceGetSupportedGraphicsClocks"))?))
        })
        .collect()
}

/// Puts the clocks back after [`set_clock_pair`]: the application clocks from before (or their reset,
/// `nvmlDeviceResetApplicationsClocks`), or the locked clocks' reset (`nvmlDeviceResetGpuLockedClocks`,
/// `nvmlDeviceResetMemoryLockedClocks`; both are tried, the first failure is returned).
pub fn restore_clock_pair(
    dev: &mut nvml_wrapper::Device<'_>,
    lock: ClockLock,
) -> std::result::Result<(), ClockCallError> {
    let fail = |call| move |error| ClockCallError { call, error, undo_failed: None };
    match lock {
        ClockLock::Applications { before: Some((m, g)) } => {
            dev.set_applications_clocks(m, g).map_err(fail("nvmlDeviceSetApplicationsClocks"))
        }
        ClockLock::Applications { before: None } => {
            dev.reset_applications_clocks().map_err(fail("nvmlDeviceResetApplicationsClocks"))
        }
        ClockLock::Locked => {
            let gpu = dev.reset_gpu_locked_clocks().map_err(fail("nvmlDeviceResetGpuLockedClocks"));
            let mem = dev.reset_mem_locked_clocks().map_err(fail("nvmlDeviceResetMemoryLockedClocks"));
            gpu.and(mem)
        }
    }
}
