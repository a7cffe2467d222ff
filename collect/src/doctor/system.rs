//! The checklist's probes on this machine's real libraries: NVML (nvml-wrapper), the CUDA driver, CUPTI
//! (cudarc, loaded dynamically) and NVRTC.
//!
//! Every library is found and checked before it is called (`open_nvml`, `is_culib_present`,
//! `load_cupti`, `nvrtc::ensure_loaded`), so a missing one is the collector's own error with its fix.
//! The CUDA driver calls are the plain driver API (`cuInit`, `cuDriverGetVersion`, `cuDeviceGet`,
//! `cuDevicePrimaryCtxRetain`, `cuModuleLoadData`, `cuLaunchKernel`, events), in the order of the CUDA
//! driver API documentation. The suite's `fp32_fma` kernel is compiled once and serves the kernel
//! timing, the PM-sampling start/stop and the Range Profiler run.

use super::{
    ClockFacts, CudaFacts, CuptiFacts, KernelFacts, MigState, NvmlDevice, NvmlFacts, NvrtcFacts, PmFacts,
    Probes, RangeFacts,
};
use crate::counters::CounterSource;
use crate::cupti::pm::{CuptiPmCounters, PmOptions};
use crate::error::{Error, Result};
use crate::nvml::{NvmlPower, cuda_pci_bus_id, nvml_index_by_pci_bus_id, open_nvml};
use crate::power::PowerSource;
use crate::sampler::Clock;
use cudarc::driver::sys;
use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::{Api, Clock as NvmlClock, GpuVirtualizationMode};
use nvml_wrapper::error::NvmlError;
use std::ffi::{CString, c_void};
use std::sync::Arc;
use std::time::Instant;

/// The metric of the Range Profiler check: instructions executed, present on every chip CUPTI profiles.
pub const RANGE_METRIC: &str = "smsp__inst_executed.sum";
/// The suite kernel the checks launch.
pub const KERNEL: &str = "fp32_fma";
/// Elements of the kernel's buffers (a power of two, as the suite's index masks need).
const ELEMS: u32 = 1 << 16;

/// The probes on the real libraries.
#[derive(Default)]
pub struct SystemProbes {
    nvml: Option<Arc<Nvml>>,
    kernel: Option<TinyKernel>,
}

impl SystemProbes {
    pub fn new() -> SystemProbes {
        SystemProbes::default()
    }

    fn tiny_kernel(&mut self, device: u32) -> Result<&TinyKernel> {
        if self.kernel.is_none() {
            self.kernel = Some(TinyKernel::open(device)?);
        }
        self.kernel.as_ref().ok_or_else(|| Error::Invalid("kernel not compiled".into()))
    }
}

/// An optional NVML reading: "not supported" or a function the library lacks is `None`; any other
/// refusal is `None` with a note.
fn optional<T>(what: &str, r: std::result::Result<T, NvmlError>, notes: &mut Vec<String>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(NvmlError::NotSupported | NvmlError::FailedToLoadSymbol(_)) => None,
        Err(e) => {
            notes.push(format!("NVML could not read the {what} ({e})"));
            None
        }
    }
}

fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

impl Probes for SystemProbes {
    fn nvml(&mut self, cuda_device: u32) -> Result<NvmlFacts> {
        let nvml = open_nvml()?;
        self.nvml = Some(nvml.clone());
        // CUDA's ordinal → PCI bus id → NVML's index; without libcuda the index is taken as is.
        let (index, matched) = match cuda_pci_bus_id(cuda_device) {
            Ok(bus) => match nvml_index_by_pci_bus_id(&nvml, &bus) {
                Some(i) => (i, true),
                None => {
                    return Err(Error::NoNvmlMatch { cuda_device, pci_bus_id: bus.cuda_form() });
                }
            },
            Err(_) => (cuda_device, false),
        };
        let mut notes = Vec::new();
        let count = nvml
            .device_count()
            .map_err(|e| Error::Nvml { call: "nvmlDeviceGetCount", message: e.to_string() })?;
        let devices = (0..count)
            .filter_map(|i| {
                let d = nvml.device_by_index(i).ok()?;
                Some(NvmlDevice {
                    index: i,
                    name: d.name().unwrap_or_else(|_| "?".into()),
                    pci_bus_id: d.pci_info().ok().map(|p| p.bus_id),
                })
            })
            .collect();
        let dev = nvml.device_by_index(index).map_err(|e| Error::NoGpu { index, detail: e.to_string() })?;
        let name =
            optional("GPU name", dev.name(), &mut notes).unwrap_or_else(|| "unknown NVIDIA GPU".into());
        let pci_bus_id = optional("PCI bus id", dev.pci_info(), &mut notes).map(|p| p.bus_id);
        let compute_capability = optional("compute capability", dev.cuda_compute_capability(), &mut notes)
            .map(|c| (c.major as u32, c.minor as u32));
        let mig = optional("MIG mode", dev.mig_mode(), &mut notes)
            .map(|m| MigState { current: m.current == 1, pending: m.pending == 1 });
        let virtualization =
            optional("virtualization mode", dev.virtualization_mode(), &mut notes).map(|v| {
                match v {
                    GpuVirtualizationMode::Bare => "none",
                    GpuVirtualizationMode::PassThrough => "passthrough",
                    GpuVirtualizationMode::Vgpu => "vgpu",
                    GpuVirtualizationMode::HostVgpu => "host_vgpu",
                    GpuVirtualizationMode::HostVsga => "host_vsga",
                }
                .to_string()
            });
        let persistence = optional("persistence mode", dev.is_in_persistent_mode(), &mut notes);
        let power_limit_w = optional("power limit", dev.power_management_limit(), &mut notes)
            .map(|mw| f64::from(mw) / 1000.0);
        let mut clocks = ClockFacts {
            sm_mhz: optional("SM clock", dev.clock_info(NvmlClock::SM), &mut notes),
            mem_mhz: optional("memory clock", dev.clock_info(NvmlClock::Memory), &mut notes),
            max_sm_mhz: optional("maximum SM clock", dev.max_clock_info(NvmlClock::SM), &mut notes),
            max_mem_mhz: optional("maximum memory clock", dev.max_clock_info(NvmlClock::Memory), &mut notes),
            supported_mem_mhz: optional("supported memory clocks", dev.supported_memory_clocks(), &mut notes)
                .unwrap_or_default(),
            supported_sm_mhz: Vec::new(),
            applications_mhz: None,
            applications_restricted: optional(
                "application-clock permission",
                dev.is_api_restricted(Api::ApplicationClocks),
                &mut notes,
            ),
            root: is_root(),
        };
        if let Some(top) = clocks.supported_mem_mhz.iter().max() {
            clocks.supported_sm_mhz =
                optional("supported SM clocks", dev.supported_graphics_clocks(*top), &mut notes)
                    .unwrap_or_default();
        }
        clocks.applications_mhz =
            optional("application memory clock", dev.applications_clock(NvmlClock::Memory), &mut notes).zip(
                optional("application SM clock", dev.applications_clock(NvmlClock::Graphics), &mut notes),
            );
        let driver_version = optional("driver version", nvml.sys_driver_version(), &mut notes);
        let cuda_version = optional("CUDA version", nvml.sys_cuda_driver_version(), &mut notes)
            .and_then(|v| u32::try_from(v).ok());
        // The reading the collector would use, probed by the collector's own code.
        let (power_field, power_error, energy_counter) = match NvmlPower::open(nvml.clone(), index) {
            Ok(p) => {
                let info = p.info();
                notes.extend(p.warnings());
                (Some(info.field), None, info.energy_counter)
            }
            Err(e) => (None, Some(e.to_string()), false),
        };
        Ok(NvmlFacts {
            driver_version,
            cuda_version,
            devices,
            index,
            matched_by_pci_bus_id: matched,
            name,
            pci_bus_id,
            compute_capability,
            mig,
            virtualization,
            persistence,
            power_limit_w,
            power_field,
            power_error,
            energy_counter,
            clocks,
            notes,
        })
    }

    fn power_source(&mut self, nvml_index: u32) -> Result<Box<dyn PowerSource>> {
        let nvml = match &self.nvml {
            Some(n) => n.clone(),
            None => open_nvml()?,
        };
        Ok(Box::new(NvmlPower::open(nvml, nvml_index)?))
    }

    fn cuda(&mut self, cuda_device: u32) -> Result<CudaFacts> {
        init_cuda()?;
        let mut v = 0;
        // SAFETY: writes one int.
        let r = unsafe { sys::cuDriverGetVersion(&mut v) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(Error::Cuda { call: "cuDriverGetVersion", message: format!("{r:?}") });
        }
        let device_count = cudarc::driver::result::device::get_count()
            .map_err(|e| Error::Cuda { call: "cuDeviceGetCount", message: e.to_string() })?;
        let bus = cuda_pci_bus_id(cuda_device)?;
        Ok(CudaFacts {
            driver_version: u32::try_from(v).unwrap_or(0),
            device_count: u32::try_from(device_count).unwrap_or(0),
            pci_bus_id: Some(bus.cuda_form()),
        })
    }

    fn cupti(&mut self) -> Result<CuptiFacts> {
        let libs = crate::cupti::loader::load_cupti()?;
        let mut api = 0u32;
        // SAFETY: writes one u32; the library was checked to export it.
        let r = unsafe { cudarc::cupti::sys::cuptiGetVersion(&mut api) };
        if r != cudarc::cupti::sys::CUptiResult::CUPTI_SUCCESS {
            return Err(Error::Cupti { call: "cuptiGetVersion", code: r as u32, message: format!("{r:?}") });
        }
        Ok(CuptiFacts { path: libs.cupti.display().to_string(), api_version: api })
    }

    fn nvrtc(&mut self) -> Result<NvrtcFacts> {
        Ok(NvrtcFacts { version: crate::nvrtc::version()? })
    }

    fn kernel(&mut self, cuda_device: u32) -> Result<KernelFacts> {
        let k = self.tiny_kernel(cuda_device)?;
        let kernel_ms = k.timed_ms()?;
        Ok(KernelFacts {
            kernel: KERNEL.into(),
            arch: k.arch.to_string(),
            compile_ms: k.compile_ms,
            kernel_ms,
        })
    }

    fn pm_sampling(&mut self, cuda_device: u32, rate_hz: f64) -> Result<PmFacts> {
        // The kernel is optional here: without NVRTC the start/stop still tests the permission.
        let kernel = self.tiny_kernel(cuda_device).ok();
        let opts = PmOptions {
            device: cuda_device,
            interval_s: 1.0 / rate_hz,
            hardware_buffer_bytes: 64 << 20,
            max_samples: 1024,
            sysclk_hz: None,
        };
        let mut pm = CuptiPmCounters::open(&opts)?;
        let clock = Clock::new();
        pm.start(clock.now_s())?;
        let t0 = Instant::now();
        let mut launched = false;
        let mut samples = 0;
        while t0.elapsed().as_secs_f64() < (4.0 / rate_hz).max(0.1) {
            match kernel {
                Some(k) => {
                    k.launch()?;
                    launched = true;
                }
                None => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
            samples += pm.poll(clock.now_s())?.len();
        }
        samples += pm.stop(clock.now_s())?.len();
        Ok(PmFacts { chip: pm.chip().to_string(), samples, kernel_launched: launched })
    }

    fn range_profiler(&mut self, cuda_device: u32) -> Result<RangeFacts> {
        let k = self.tiny_kernel(cuda_device)?;
        let (ranges, value) =
            crate::cupti::range::profile_one_metric(cuda_device, RANGE_METRIC, &mut || k.launch())?;
        Ok(RangeFacts { metric: RANGE_METRIC.into(), ranges, value })
    }
}

/// `libcuda.so` present and `cuInit(0)`.
fn init_cuda() -> Result<()> {
    // SAFETY: only probes dlopen of libcuda by name.
    if !unsafe { sys::is_culib_present() } {
        return Err(Error::NoCudaDriver("libcuda.so (the CUDA driver library) cannot be loaded".into()));
    }
    cudarc::driver::result::init().map_err(|e| Error::NoDriver { detail: format!("cuInit: {e:?}") })
}

fn cuda(call: &'static str) -> impl Fn(cudarc::driver::DriverError) -> Error {
    move |e| Error::Cuda { call, message: e.to_string() }
}

/// The suite's `fp32_fma`, compiled for the device and loaded in its primary context, with two small
/// buffers.
struct TinyKernel {
    dev: sys::CUdevice,
    module: sys::CUmodule,
    func: sys::CUfunction,
    input: sys::CUdeviceptr,
    output: sys::CUdeviceptr,
    arch: &'static str,
    compile_ms: f64,
}

impl TinyKernel {
    fn open(device: u32) -> Result<TinyKernel> {
        crate::nvrtc::ensure_loaded()?;
        init_cuda()?;
        let ordinal = i32::try_from(device)
            .map_err(|_| Error::NoGpu { index: device, detail: "not a CUDA ordinal".into() })?;
        let dev = cudarc::driver::result::device::get(ordinal)
            .map_err(|e| Error::NoGpu { index: device, detail: format!("cuDeviceGet: {e:?}") })?;
        // SAFETY: dev from cuDeviceGet; released in Drop (also on the error paths below, through `this`).
        let ctx = unsafe { cudarc::driver::result::primary_ctx::retain(dev) }
            .map_err(cuda("cuDevicePrimaryCtxRetain"))?;
        let mut this = TinyKernel {
            dev,
            module: std::ptr::null_mut(),
            func: std::ptr::null_mut(),
            input: 0,
            output: 0,
            arch: "",
            compile_ms: 0.0,
        };
        // SAFETY: ctx is the retained primary context.
        unsafe { cudarc::driver::result::ctx::set_current(ctx) }.map_err(cuda("cuCtxSetCurrent"))?;
        use sys::CUdevice_attribute as A;
        // SAFETY: valid device and attributes.
        let (major, minor) = unsafe {
            (
                cudarc::driver::result::device::get_attribute(
                    dev,
                    A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                )
                .map_err(cuda("cuDeviceGetAttribute"))?,
                cudarc::driver::result::device::get_attribute(
                    dev,
                    A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                )
                .map_err(cuda("cuDeviceGetAttribute"))?,
            )
        };
        this.arch = crate::nvrtc::arch_for_capability(major as u32, minor as u32)?;
        let t0 = Instant::now();
        let ptx = crate::nvrtc::compile_ptx("suite", crate::suite::SOURCE, this.arch)?;
        this.compile_ms = t0.elapsed().as_secs_f64() * 1e3;
        let ptx =
            CString::new(ptx).map_err(|_| Error::Invalid("NVRTC returned PTX with a NUL byte".into()))?;
        // SAFETY: a NUL-terminated PTX image; the module is unloaded in Drop.
        this.module = unsafe { cudarc::driver::result::module::load_data(ptx.as_ptr().cast()) }
            .map_err(cuda("cuModuleLoadData"))?;
        let name = CString::new(KERNEL).unwrap_or_default();
        // SAFETY: loaded module, NUL-terminated name.
        this.func = unsafe { cudarc::driver::result::module::get_function(this.module, name) }
            .map_err(cuda("cuModuleGetFunction"))?;
        let bytes = ELEMS as usize * 4;
        // SAFETY: plain allocations, freed in Drop.
        this.input = unsafe { cudarc::driver::result::malloc_sync(bytes) }.map_err(cuda("cuMemAlloc"))?;
        // SAFETY: as above.
        this.output = unsafe { cudarc::driver::result::malloc_sync(bytes) }.map_err(cuda("cuMemAlloc"))?;
        Ok(this)
    }

    /// Enqueues one launch on the default stream: 64 blocks of 256 threads, 8192 FMA steps each.
    fn enqueue(&self) -> Result<()> {
        let (mut input, mut output, mut tex) = (self.input, self.output, 0u64);
        let (mut n, mut iters, mut knob) = (ELEMS as i32, 8192i32, 1i32);
        let mut params: [*mut c_void; 6] = [
            (&raw mut input).cast(),
            (&raw mut output).cast(),
            (&raw mut tex).cast(),
            (&raw mut n).cast(),
            (&raw mut iters).cast(),
            (&raw mut knob).cast(),
        ];
        // SAFETY: the arguments match SUITE_ARGS of suite.cu (two device pointers of ELEMS floats, an unused
        // texture handle, three ints); fp32_fma masks its indices to n.
        unsafe {
            cudarc::driver::result::launch_kernel(
                self.func,
                (64, 1, 1),
                (256, 1, 1),
                0,
                std::ptr::null_mut(),
                &mut params,
            )
        }
        .map_err(cuda("cuLaunchKernel"))
    }

    /// One launch, waited for.
    fn launch(&self) -> Result<()> {
        self.enqueue()?;
        cudarc::driver::result::ctx::synchronize().map_err(cuda("cuCtxSynchronize"))
    }

    /// One launch timed with CUDA events (`cuEventRecord` around it, `cuEventElapsedTime`), ms.
    fn timed_ms(&self) -> Result<f64> {
        use cudarc::driver::result::event;
        let flags = sys::CUevent_flags::CU_EVENT_DEFAULT;
        let start = event::create(flags).map_err(cuda("cuEventCreate"))?;
        let end = match event::create(flags) {
            Ok(e) => e,
            Err(e) => {
                // SAFETY: created above, destroyed once.
                let _ = unsafe { event::destroy(start) };
                return Err(cuda("cuEventCreate")(e));
            }
        };
        let timed = || -> Result<f64> {
            // SAFETY: events of the current context, recorded on the default stream.
            unsafe { event::record(start, std::ptr::null_mut()) }.map_err(cuda("cuEventRecord"))?;
            self.enqueue()?;
            // SAFETY: as above.
            unsafe { event::record(end, std::ptr::null_mut()) }.map_err(cuda("cuEventRecord"))?;
            // SAFETY: a recorded event.
            unsafe { event::synchronize(end) }.map_err(cuda("cuEventSynchronize"))?;
            // SAFETY: both events recorded and complete.
            let ms = unsafe { event::elapsed(start, end) }.map_err(cuda("cuEventElapsedTime"))?;
            Ok(f64::from(ms))
        };
        let r = timed();
        // SAFETY: created above, destroyed once, whatever happened in between.
        unsafe {
            let _ = event::destroy(start);
            let _ = event::destroy(end);
        }
        r
    }
}

impl Drop for TinyKernel {
    fn drop(&mut self) {
        // SAFETY: each handle was created in `open` (zero/null when that step was not reached) and is
        // released once; failures at teardown have no remedy.
        unsafe {
            for p in [self.input, self.output] {
                if p != 0 {
                    let _ = cudarc::driver::result::free_sync(p);
                }
            }
            if !self.module.is_null() {
                let _ = cudarc::driver::result::module::unload(self.module);
            }
            let _ = cudarc::driver::result::primary_ctx::release(self.dev);
        }
    }
}
