//! One CUDA device as the commands that run kernels open it (`collect --suite`, `calibrate`): the driver
//! checked ([`check_driver`]), the NVML device that is this CUDA device (matched by PCI bus id; the two
//! numberings may differ), a context, the command's kernels compiled by NVRTC for the device's compute
//! capability and loaded, and the device's clocks ([`NvmlClocks`]). Each command's device wraps one
//! [`CudaGpu`] and adds what its own launches need.

use crate::Error;
use crate::clock_control::NvmlClocks;
use crate::power::{PowerInfo, PowerSource};
use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{CudaContext, CudaFunction};
use nvml_wrapper::Nvml;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Checks that a GPU can be driven: NVML opens (the collector's no-driver error otherwise), `libcuda.so`
/// loads, and NVRTC loads. Returns the NVML handle for power and clocks.
pub fn check_driver(device: u32) -> Result<Arc<Nvml>, Error> {
    let nvml = crate::nvml::open_nvml()?;
    nvml.device_by_index(device).map_err(|e| Error::NoGpu { index: device, detail: e.to_string() })?;
    // SAFETY: cudarc only tries `dlopen` on its candidate names here; it calls nothing in the library.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(Error::NoCudaDriver("libcuda.so (the CUDA driver library) cannot be loaded".into()));
    }
    crate::nvrtc::ensure_loaded()?;
    Ok(nvml)
}

/// A CUDA driver error as the collector's error, naming the call.
pub(crate) fn cuda(call: &'static str) -> impl Fn(cudarc::driver::DriverError) -> Error {
    move |e| Error::Cuda { call, message: e.to_string() }
}

/// An opened CUDA device with its kernels.
pub struct CudaGpu {
    pub nvml: Arc<Nvml>,
    /// NVML index of this CUDA device.
    pub nvml_index: u32,
    /// What NVML says of the device's power reading (its name, driver, power field).
    pub power: PowerInfo,
    pub ctx: Arc<CudaContext>,
    /// Compute capability (major, minor).
    pub capability: (u32, u32),
    /// The loaded kernels, by entry name.
    pub functions: BTreeMap<&'static str, CudaFunction>,
    pub clocks: NvmlClocks,
}

impl CudaGpu {
    /// Opens CUDA device `device` (its driver checked by [`check_driver`], which gave `nvml`), compiles
    /// `source` for it (`program` names it in NVRTC's messages) and loads `entries`.
    pub fn open(
        nvml: Arc<Nvml>,
        device: u32,
        program: &str,
        source: &str,
        entries: impl IntoIterator<Item = &'static str>,
    ) -> Result<CudaGpu, Error> {
        let power = crate::nvml::NvmlPower::open_cuda_device(nvml.clone(), device)?;
        let nvml_index = power.nvml_index();
        let power = power.info();
        let ctx = CudaContext::new(device as usize).map_err(cuda("cuCtxCreate"))?;
        let (major, minor) = ctx.compute_capability().map_err(cuda("cuDeviceGetAttribute"))?;
        let capability = (major as u32, minor as u32);
        let arch = crate::nvrtc::arch_for_capability(capability.0, capability.1)?;
        let ptx = crate::nvrtc::compile_ptx(program, source, arch)?;
        let module = ctx.load_module(cudarc::nvrtc::Ptx::from_src(ptx)).map_err(cuda("cuModuleLoadData"))?;
        let mut functions = BTreeMap::new();
        for name in entries {
            functions.insert(name, module.load_function(name).map_err(cuda("cuModuleGetFunction"))?);
        }
        let clocks = NvmlClocks::new(nvml.clone(), nvml_index);
        Ok(CudaGpu { nvml, nvml_index, power, ctx, capability, functions, clocks })
    }

    /// A device attribute (`cuDeviceGetAttribute`).
    pub fn attribute(&self, a: CUdevice_attribute) -> Result<f64, Error> {
        self.ctx.attribute(a).map(f64::from).map_err(cuda("cuDeviceGetAttribute"))
    }
}
