//! The suite on a real GPU: the CUDA driver (cudarc, dynamically loaded), NVML power and clocks.
//!
//! Opening checks, in order, what a user may lack — the NVIDIA driver (NVML), the CUDA driver library
//! (`libcuda.so`), NVRTC — and turns each absence into one clear error before any work starts.

use super::SuiteError;

/// Checks that a GPU can be driven: NVML opens (the collector's no-driver error otherwise), `libcuda.so`
/// loads, and NVRTC loads. Returns the NVML handle for power and clocks.
pub fn check_driver(device: u32) -> Result<std::sync::Arc<nvml_wrapper::Nvml>, SuiteError> {
    let nvml = crate::nvml::open_nvml()?;
    nvml.device_by_index(device).map_err(|e| crate::Error::NoGpu { index: device, detail: e.to_string() })?;
    // SAFETY: cudarc only tries `dlopen` on its candidate names here; it calls nothing in the library.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(SuiteError::NoCudaDriver("libcuda.so (the CUDA driver library) cannot be loaded".into()));
    }
    crate::nvrtc::ensure_loaded()?;
    Ok(nvml)
}

/// The suite's real GPU. Opening checks the driver stack (see [`check_driver`]); launching the kernels
/// through cudarc's driver API is not wired yet, so on a machine *with* a GPU opening says so plainly
/// instead of writing a table without measurements.
pub struct CudaSuiteDevice {
    _private: (),
}

impl CudaSuiteDevice {
    /// Opens GPU `device`; `rate_hz` is the power sampling rate.
    pub fn open(device: u32, rate_hz: f64) -> Result<CudaSuiteDevice, SuiteError> {
        if !(rate_hz.is_finite() && rate_hz > 0.0) {
            return Err(SuiteError::Invalid(format!("--rate {rate_hz} must be a number of Hz > 0")));
        }
        check_driver(device)?;
        Err(SuiteError::Invalid(
            "launching the suite on a real GPU is not implemented in this build yet; the kernels compile \
             (NVRTC) but are not launched"
                .into(),
        ))
    }
}

impl super::SuiteDevice for CudaSuiteDevice {
    fn info(&self) -> super::GpuInfo {
        unreachable!("CudaSuiteDevice cannot be opened yet")
    }
    fn set_clocks(&mut self, _: super::ClockPair) -> Result<super::ClockOutcome, SuiteError> {
        unreachable!("CudaSuiteDevice cannot be opened yet")
    }
    fn reset_clocks(&mut self) -> Result<(), SuiteError> {
        unreachable!("CudaSuiteDevice cannot be opened yet")
    }
    fn run(&mut self, _: &super::SuiteKernel, _: f64) -> Result<super::Measurement, SuiteError> {
        unreachable!("CudaSuiteDevice cannot be opened yet")
    }
}
