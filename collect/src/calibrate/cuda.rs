//! Calibration on a real GPU: the kernels compiled by NVRTC for the GPU's compute capability and launched
//! as one block through cudarc's driver API; the facts the profile needs come from the driver
//! (`cuDeviceGetAttribute`), NVML (clocks, power limit) and the CUDA Programming Guide's throughput table.
//!
//! Clock pairs for the DVFS sweep are set by the collector's one clock setter
//! ([`crate::clock_control::NvmlClocks`], NVML's documented sequence in [`crate::nvml::set_clock_pair`]),
//! where a refusal stops the sweep: the valid pairs come from `nvmlDeviceGetSupportedMemoryClocks` and
//! `nvmlDeviceGetSupportedGraphicsClocks(mem)`; a pair is set with `nvmlDeviceSetApplicationsClocks(mem,
//! graphics)` (Kepler and newer non-GeForce, Maxwell and newer GeForce); where that is
//! `NVML_ERROR_NOT_SUPPORTED`, with locked clocks (`nvmlDeviceSetGpuLockedClocks(g, g)`, Volta and newer,
//! and `nvmlDeviceSetMemoryLockedClocks(m, m)`, Ampere and newer). Restoring puts back the application
//! clocks read before the first change (`nvmlDeviceGetApplicationsClock`), or resets them
//! (`nvmlDeviceResetApplicationsClocks`) when they were the defaults, or resets the locked clocks
//! (`nvmlDeviceResetGpuLockedClocks`, `nvmlDeviceResetMemoryLockedClocks`). It runs after the sweep, on error, and when the device is dropped
//! (a panic unwinding); Ctrl-C is turned into an error by the command, so it restores too. Only a kill -9
//! leaves the clocks set (`sudo nvidia-smi -rac` / `-rgc` / `-rmc` reset them). All of these need root
//! (`NVML_ERROR_NO_PERMISSION` becomes [`Error::ClockPermission`]). On Kepler and Maxwell, auto boost can
//! lift the core clock above the application clock; the clocks read after each pair's launches are reported.
//!
//! Written against cudarc 0.19.10 and nvml-wrapper 0.13; our machines have no GPU, so this path is
//! compiled and its driver checks are tested, but its launches and clock changes have not run on hardware
//! here.

use super::{CalLaunch, CalibrationDevice, Chain, DeviceFacts, SOURCE, measured_only};
use crate::Error;
use crate::clock_control::{ClockControl, ClockOutcome, NvmlClocks};
use crate::clocks::{ClockPair, SupportedClocks};
use crate::cuda_gpu::{CudaGpu, check_driver, cuda};
use cudarc::driver::sys::CUdevice_attribute as A;
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use gpumodel_models::capability::{self, CapabilityFacts};
use nvml_wrapper::enum_wrappers::device::Clock;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The real GPU.
pub struct CudaCalibrationDevice {
    stream: Arc<CudaStream>,
    functions: BTreeMap<&'static str, CudaFunction>,
    chains: BTreeMap<(u32, u32, u64), CudaSlice<u32>>,
    facts: DeviceFacts,
    /// The GPU's clocks, and what a sweep changed (what restoring must undo).
    clocks: NvmlClocks,
    /// NVML and the index of the device that is this CUDA device (for its power).
    nvml: Arc<nvml_wrapper::Nvml>,
    nvml_index: u32,
}

impl CudaCalibrationDevice {
    /// Opens GPU `device`: driver checks, NVRTC compilation for its architecture, module load, facts.
    pub fn open(device: u32) -> Result<CudaCalibrationDevice, Error> {
        let nvml = check_driver(device)?;
        let gpu = CudaGpu::open(nvml, device, "calibrate", SOURCE, super::ENTRIES.iter().map(|e| e.name))?;
        let attr = |a: A| gpu.attribute(a);
        let (ctx, nvml, nvml_index) = (gpu.ctx.clone(), gpu.nvml.clone(), gpu.nvml_index);
        let (major, minor) = gpu.capability;
        let dev = nvml
            .device_by_index(nvml_index)
            .map_err(|e| crate::Error::NoGpu { index: nvml_index, detail: e.to_string() })?;
        let name = dev.name().or_else(|_| ctx.name()).unwrap_or_else(|_| "NVIDIA GPU".into());
        let mut sources = BTreeMap::new();
        sources.insert("driver".to_string(), format!("CUDA driver cuDeviceGetAttribute on {name}"));
        sources.insert(
            "nvml".to_string(),
            format!("NVML on {name} (max clocks, supported clocks, default power limit)"),
        );
        sources.insert("guide".to_string(), capability::SOURCE.to_string());
        sources.insert(
            "guide_tx".to_string(),
            "CUDA C++ Programming Guide, global memory accesses: 32-byte sectors on compute capability 5.x and newer".into(),
        );
        let mem_mhz = dev
            .max_clock_info(Clock::Memory)
            .map(f64::from)
            .unwrap_or(attr(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)? / 1000.0);
        let core_mhz = dev
            .max_clock_info(Clock::SM)
            .map(f64::from)
            .unwrap_or(attr(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)? / 1000.0);
        // DDR: two transfers per memory clock, bus width in bits.
        let bw = 2.0
            * attr(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)?
            * 1e3
            * attr(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)?
            / 8.0
            / 1e9;
        let mem_clocks: Vec<f64> =
            dev.supported_memory_clocks().map(|v| v.into_iter().map(f64::from).collect()).unwrap_or_default();
        let core_clocks: Vec<f64> = dev
            .supported_graphics_clocks(mem_mhz as u32)
            .map(|v| v.into_iter().map(f64::from).collect())
            .unwrap_or_default();
        let tdp = dev.power_management_limit_default().map(|mw| f64::from(mw) / 1000.0).unwrap_or(f64::NAN);
        // The documented per-SM facts of this compute capability (a newer one than the table takes its
        // newest row).
        let doc = capability::facts(&format!("{major}.{minor}"))
            .unwrap_or(capability::CAPABILITIES[capability::CAPABILITIES.len() - 1]);
        let mut values: Vec<(String, f64, String)> = vec![
            ("sm_count", attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?, "driver"),
            ("warp_size", attr(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?, "driver"),
            ("schedulers_per_sm", doc.schedulers_per_sm, "guide"),
            ("core_mhz", core_mhz, "nvml"),
            ("mem_mhz", mem_mhz, "nvml"),
            ("mem_bandwidth_gbs", bw, "driver"),
            ("transaction_bytes", 32.0, "guide_tx"),
            ("tdp_w", tdp, "nvml"),
            (
                "max_warps_per_sm",
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)? / 32.0,
                "driver",
            ),
            ("max_blocks_per_sm", attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)?, "driver"),
            ("max_threads_per_block", attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?, "driver"),
            ("registers_per_sm", attr(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)?, "driver"),
            ("register_alloc_unit", 256.0, "guide"),
            ("max_registers_per_thread", 255.0, "guide"),
            (
                "shared_mem_per_sm",
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?,
                "driver",
            ),
            (
                "max_shared_mem_per_block",
                attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
                "driver",
            ),
            // The Guide's "Arithmetic Instructions" table for this compute capability (32-bit integer
            // adds and SFU results per clock per SM): what the profile keeps when their measurement gives
            // no usable cycle count (LOOKED_UP_UNLESS_MEASURED). The FP32, FP64 and FP16 rates and the
            // 64-bit conversions are only measured (MEASURED).
            ("cost_int", CapabilityFacts::cost(doc.int32), "guide"),
            ("cost_sfu", CapabilityFacts::cost(doc.sfu), "guide"),
            ("cost_ldst", CapabilityFacts::cost(doc.ldst_units), "guide"),
        ]
        .into_iter()
        .filter(|(f, _, _)| !measured_only(f))
        .map(|(f, v, s)| (f.to_string(), v, s.to_string()))
        .collect();
        if let Some((f, v, _)) = values.iter().find(|(_, v, _)| !(v.is_finite() && *v > 0.0)) {
            return Err(Error::Invalid(format!(
                "the driver reported {f} = {v} for {name}: cannot write a profile"
            )));
        }
        values.sort_by(|a, b| a.0.cmp(&b.0));
        let chip = format!("{:?}", dev.architecture().ok()).replace("Some(", "").replace(')', "");
        let facts = DeviceFacts {
            display_name: name,
            chip,
            compute_capability: format!("{major}.{minor}"),
            values,
            core_clocks_mhz: (
                if core_clocks.is_empty() { vec![core_mhz] } else { core_clocks },
                "nvml".into(),
            ),
            mem_clocks_mhz: (if mem_clocks.is_empty() { vec![mem_mhz] } else { mem_clocks }, "nvml".into()),
            sources,
            l2_cache_bytes: attr(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as u64,
        };
        let CudaGpu { functions, clocks, .. } = gpu;
        Ok(CudaCalibrationDevice {
            stream: ctx.default_stream(),
            functions,
            chains: BTreeMap::new(),
            facts,
            clocks,
            nvml,
            nvml_index,
        })
    }
}

impl Drop for CudaCalibrationDevice {
    fn drop(&mut self) {
        // Last resort (an error path that skipped restoring, a panic unwinding): the error has nowhere to go.
        let _ = self.clocks.reset();
    }
}

impl CudaCalibrationDevice {
    /// The launch's kernel; its chain is on the device afterwards, under [`chain_key`] (uploaded on first
    /// use, then reused).
    fn prepare(&mut self, l: &CalLaunch) -> Result<CudaFunction, Error> {
        let f = self
            .functions
            .get(l.entry)
            .ok_or_else(|| Error::Invalid(format!("no calibration kernel {}", l.entry)))?
            .clone();
        if !self.chains.contains_key(&chain_key(l.chain)) {
            let host = l.chain.build();
            let dev = self.stream.clone_htod(&host).map_err(cuda("cuMemcpyHtoD"))?;
            self.chains.insert(chain_key(l.chain), dev);
        }
        Ok(f)
    }
}

fn chain_key(c: Chain) -> (u32, u32, u64) {
    (c.elems, c.stride, c.seed)
}

/// Through [`NvmlClocks`]: a refusal stops calibrate with NVML's error.
impl ClockControl for CudaCalibrationDevice {
    fn supported_clocks(&self) -> Result<SupportedClocks, Error> {
        self.clocks.supported()
    }
    fn set_clocks(&mut self, pair: ClockPair) -> Result<ClockOutcome, Error> {
        self.clocks.set(pair)
    }
    fn try_set_clocks(&mut self, pair: ClockPair) -> Result<(), Error> {
        self.clocks.try_set(pair)
    }
    fn reset_clocks(&mut self) -> Result<(), Error> {
        self.clocks.reset()
    }
    fn clocks_now(&self) -> Option<ClockPair> {
        self.clocks.now()
    }
}

impl CalibrationDevice for CudaCalibrationDevice {
    fn facts(&self) -> DeviceFacts {
        self.facts.clone()
    }

    /// Ten readings of `nvmlDeviceGetPowerUsage` 50 ms apart, after 1.2 s without launches (on recent
    /// boards that reading is an average over the last second), and the clocks NVML reports meanwhile.
    fn idle_power(&mut self) -> Result<Option<super::IdlePower>, Error> {
        std::thread::sleep(std::time::Duration::from_millis(1200));
        let Ok(dev) = self.nvml.device_by_index(self.nvml_index) else { return Ok(None) };
        let mut watts = Vec::new();
        let mut clocks = None;
        for i in 0..10 {
            if let Ok(mw) = dev.power_usage() {
                watts.push(f64::from(mw) / 1000.0);
            }
            if i == 5 {
                clocks = self.clocks.now();
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let Some(clocks) = clocks else { return Ok(None) };
        if watts.is_empty() {
            return Ok(None);
        }
        watts.sort_by(f64::total_cmp);
        Ok(Some(super::IdlePower { clocks, watts: watts[watts.len() / 2], readings: watts.len() }))
    }

    fn run(&mut self, l: &CalLaunch) -> Result<Vec<u64>, Error> {
        let f = self.prepare(l)?;
        let chain = &self.chains[&chain_key(l.chain)];
        let elems = l.chain.elems;
        let warps = l.threads.div_ceil(32).max(1) as usize;
        let mut out = self.stream.alloc_zeros::<u64>(2 * warps).map_err(cuda("cuMemAlloc"))?;
        let tex = if l.entry == "chase_texture" { texture_over(chain, elems)? } else { 0 };
        let n = elems as i32;
        let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (l.threads, 1, 1), shared_mem_bytes: 0 };
        let mut b = self.stream.launch_builder(&f);
        b.arg(chain).arg(&mut out).arg(&tex).arg(&n).arg(&l.steps).arg(&l.knob);
        // SAFETY: the argument list matches CAL_ARGS in calibrate.cu (two device pointers, one u64, three
        // ints); `out` holds 2 values per warp, as every kernel writes at most that many.
        let launched = unsafe { b.launch(cfg) }.map_err(cuda("cuLaunchKernel"));
        let synced = self.stream.synchronize().map_err(cuda("cuStreamSynchronize"));
        if tex != 0 {
            // SAFETY: `tex` was created by cuTexObjectCreate above and is no longer used.
            unsafe { cudarc::driver::sys::cuTexObjectDestroy(tex) };
        }
        launched?;
        synced?;
        self.stream.clone_dtoh(&out).map_err(cuda("cuMemcpyDtoH"))
    }

    fn run_timed(&mut self, l: &CalLaunch, blocks: u32) -> Result<f64, Error> {
        let f = self.prepare(l)?;
        let chain = &self.chains[&chain_key(l.chain)];
        let elems = l.chain.elems;
        let mut out = self.stream.alloc_zeros::<u64>(2).map_err(cuda("cuMemAlloc"))?;
        let (tex, n) = (0u64, elems as i32);
        let cfg =
            LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (l.threads, 1, 1), shared_mem_bytes: 0 };
        // Events that keep timing (CU_EVENT_DEFAULT; cudarc's `None` would disable it), recorded on the
        // launch's stream around the launch only.
        let ctx = self.stream.context();
        let timing = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = ctx.new_event(timing).map_err(cuda("cuEventCreate"))?;
        let end = ctx.new_event(timing).map_err(cuda("cuEventCreate"))?;
        start.record(&self.stream).map_err(cuda("cuEventRecord"))?;
        let mut b = self.stream.launch_builder(&f);
        b.arg(chain).arg(&mut out).arg(&tex).arg(&n).arg(&l.steps).arg(&l.knob);
        // SAFETY: the argument list matches CAL_ARGS in calibrate.cu; the timed kernels write at most out[1].
        unsafe { b.launch(cfg) }.map_err(cuda("cuLaunchKernel"))?;
        end.record(&self.stream).map_err(cuda("cuEventRecord"))?;
        end.synchronize().map_err(cuda("cuEventSynchronize"))?;
        let ms = start.elapsed_ms(&end).map_err(cuda("cuEventElapsedTime"))?;
        Ok(f64::from(ms) / 1e3)
    }
}

/// A texture object over a linear buffer of `elems` 32-bit signed integers (what `tex1Dfetch<int>` reads).
fn texture_over(chain: &CudaSlice<u32>, elems: u32) -> Result<u64, Error> {
    crate::suite::cuda::texture_with_format(
        chain,
        elems,
        cudarc::driver::sys::CUarray_format::CU_AD_FORMAT_SIGNED_INT32,
    )
}
