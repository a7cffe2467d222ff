//! The NVML power source (`nvml-wrapper`): instantaneous power where the GPU has it, else the averaged
//! `power_usage`, clocks, and the total-energy counter (Volta and newer).
//!
//! Probed once at open: `nvmlDeviceGetFieldValues(NVML_FI_DEV_POWER_INSTANT)` is tried, and if it fails
//! (older driver or GPU) every later reading uses `nvmlDeviceGetPowerUsage`, which on Ampere and newer is a
//! 1-second average. The choice is in [`PowerInfo::field`] and so in every trace's metadata. NVML's mW and
//! mJ are converted to watts and joules here, once.

use crate::error::{Error, Result};
use crate::power::{PowerField, PowerInfo, PowerReading, PowerSource};
use gpumodel_models::{Joules, Mhz, Watts};
use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::Clock;
use nvml_wrapper::enums::device::SampleValue;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::struct_wrappers::device::FieldValueSample;
use nvml_wrapper::structs::device::FieldId;
use std::sync::Arc;

/// `NVML_FI_DEV_POWER_INSTANT` (nvml.h, driver 535+): instantaneous power in mW.
const FI_DEV_POWER_INSTANT: u32 = 186;

/// Opens NVML, mapping "no library" to a clear no-driver error.
pub fn open_nvml() -> Result<Arc<Nvml>> {
    match Nvml::init() {
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
        Err(e) => Err(Error::Nvml { call: "nvmlInit", message: e.to_string() }),
    }
}

/// NVML power readings of one GPU.
pub struct NvmlPower {
    nvml: Arc<Nvml>,
    index: u32,
    info: PowerInfo,
}

fn nvml_err(call: &'static str) -> impl Fn(NvmlError) -> Error {
    move |e| Error::Nvml { call, message: e.to_string() }
}

fn instant_mw(sample: &FieldValueSample) -> Option<f64> {
    match sample.value.as_ref().ok()? {
        SampleValue::U32(v) => Some(f64::from(*v)),
        SampleValue::U64(v) => Some(*v as f64),
        SampleValue::I64(v) => Some(*v as f64),
        SampleValue::F64(v) => Some(*v),
    }
}

impl NvmlPower {
    /// Opens GPU `index` and probes which power reading and energy counter it offers.
    pub fn open(nvml: Arc<Nvml>, index: u32) -> Result<NvmlPower> {
        let dev = nvml.device_by_index(index).map_err(|e| Error::NoGpu { index, detail: e.to_string() })?;
        let gpu = dev.name().unwrap_or_else(|_| "unknown NVIDIA GPU".into());
        let driver = nvml.sys_driver_version().ok();
        let compute_capability = dev.cuda_compute_capability().ok().map(|c| (c.major as u32, c.minor as u32));
        let instant = dev
            .field_values_for(&[FieldId(FI_DEV_POWER_INSTANT)])
            .ok()
            .and_then(|v| v.into_iter().next())
            .and_then(|r| r.ok())
            .and_then(|s| instant_mw(&s))
            .is_some();
        let field = if instant {
            PowerField::Instant
        } else {
            dev.power_usage().map_err(nvml_err("nvmlDeviceGetPowerUsage"))?;
            PowerField::Average
        };
        let energy_counter = dev.total_energy_consumption().is_ok();
        let info = PowerInfo { gpu, driver, compute_capability, field, energy_counter };
        Ok(NvmlPower { nvml, index, info })
    }
}

impl PowerSource for NvmlPower {
    fn info(&self) -> PowerInfo {
        self.info.clone()
    }

    fn read(&mut self) -> Result<PowerReading> {
        let dev = self.nvml.device_by_index(self.index).map_err(nvml_err("nvmlDeviceGetHandleByIndex"))?;
        let power = match self.info.field {
            PowerField::Instant => {
                let v = dev
                    .field_values_for(&[FieldId(FI_DEV_POWER_INSTANT)])
                    .map_err(nvml_err("nvmlDeviceGetFieldValues"))?;
                let mw = v.into_iter().next().and_then(|r| r.ok()).and_then(|s| instant_mw(&s)).ok_or(
                    Error::Nvml {
                        call: "nvmlDeviceGetFieldValues",
                        message: "no POWER_INSTANT value".into(),
                    },
                )?;
                Watts(mw / 1000.0)
            }
            _ => Watts::from_milliwatts(dev.power_usage().map_err(nvml_err("nvmlDeviceGetPowerUsage"))?),
        };
        let core = dev.clock_info(Clock::SM).ok().map(|c| Mhz(f64::from(c)));
        let mem = dev.clock_info(Clock::Memory).ok().map(|c| Mhz(f64::from(c)));
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
}
