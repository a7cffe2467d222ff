//! The suite on a real GPU: the CUDA driver (cudarc, dynamically loaded), NVML power and clocks.
//!
//! Opening checks, in order, what a user may lack — the NVIDIA driver (NVML), the CUDA driver library
//! (`libcuda.so`), NVRTC — and turns each absence into one clear error before any work starts. A run
//! launches the kernel back to back for at least the minimum duration while the collector's samplers
//! read NVML power (and, when given, a [`CounterSource`]) on their own threads; the row is the mean
//! power and the time-weighted mean counter rates over the run.
//!
//! Written against cudarc 0.19.10 and nvml-wrapper 0.13; our machines have no GPU, so this path is
//! compiled and its driver checks are tested, but its launches have not run on hardware here.

use super::{ClockControl, ClockOutcome, GpuInfo, Measurement, NvmlClocks, Peaks, SuiteDevice, SuiteKernel};
use crate::Error;
use crate::clocks::{ClockPair, SupportedClocks};
use crate::counters::CounterSource;
use crate::cuda_gpu::{CudaGpu, check_driver, cuda};
use crate::nvml::NvmlPower;
use crate::sampler::{Clock, Event, spawn_counters, spawn_power};
use cudarc::driver::sys::CUdevice_attribute as A;
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use gpumodel_models::stats::OverlapMean;
use gpumodel_models::timing::Clocks;
use nvml_wrapper::Nvml;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

/// Hardware counters for the suite: a source (CUPTI PM sampling) and the chip's counter map
/// (`models/counters/*.toml`) that turns its metric rates into canonical counter rates.
pub struct SuiteCounters {
    pub source: Box<dyn CounterSource>,
    pub map: gpumodel_models::counters::CounterMap,
    /// Which of the map's two halves the source's metric names come from (PM sampling: `Pm`).
    pub kind: gpumodel_models::counters::MapKind,
}

/// Opens the suite's counters; called by [`CudaSuiteDevice::open`] after the CUDA context is created.
pub type OpenCounters = Box<dyn FnOnce() -> Result<SuiteCounters, Error>>;

/// Threads per block of every suite launch.
const BLOCK: u32 = 256;
/// Warps per block of every suite launch.
pub(crate) const WARPS_PER_BLOCK: u32 = BLOCK / 32;
/// Blocks per SM of a full grid (4 × 256 threads = 32 warps per SM, within every chip's ceiling).
pub(crate) const BLOCKS_PER_SM: u32 = 4;

/// The peaks of a GPU of compute capability `cc` with `sm_count` SMs and a `bus_bits`-wide DRAM bus at
/// `clocks`: DRAM bytes/s = bus bytes × 2 transfers per memory clock (NVML's memory clock of HBM2 and
/// GDDR6X); FP32 and FP64 warp instructions per SM and cycle = the SM's lanes ÷ 32 (CUDA C Programming
/// Guide, "Arithmetic Instructions" throughput table); resident warps per SM ("Technical Specifications"
/// table). `None` for a capability not in those tables.
pub fn peaks_for(cc: (u32, u32), sm_count: u32, bus_bits: u32, clocks: Clocks) -> Option<Peaks> {
    let (fp32_lanes, fp64_lanes, warps) = match cc {
        (6, 0) => (64.0, 32.0, 64.0),
        (6, 1) | (6, 2) => (128.0, 4.0, 64.0),
        (7, 0) | (7, 2) => (64.0, 32.0, 64.0),
        (7, 5) => (64.0, 2.0, 32.0),
        (8, 0) => (64.0, 32.0, 64.0),
        (8, 6) | (8, 7) | (8, 9) => (128.0, 2.0, 48.0),
        (9, 0) => (128.0, 64.0, 64.0),
        _ => return None,
    };
    let per_s = |lanes: f64| f64::from(sm_count) * lanes / 32.0 * clocks.core_mhz * 1e6;
    (bus_bits > 0 && sm_count > 0).then(|| Peaks {
        dram_bytes_per_s: f64::from(bus_bits) / 8.0 * 2.0 * clocks.mem_mhz * 1e6,
        fp32_per_s: per_s(fp32_lanes),
        fp64_per_s: per_s(fp64_lanes),
        max_warps_per_sm: warps,
    })
}

/// The suite's real GPU.
pub struct CudaSuiteDevice {
    stream: Arc<CudaStream>,
    functions: BTreeMap<&'static str, CudaFunction>,
    input: CudaSlice<f32>,
    output: CudaSlice<f32>,
    tex: u64,
    nvml: Arc<Nvml>,
    /// NVML index of the GPU (matched to the CUDA device by PCI bus id), for clocks and power.
    index: u32,
    rate_hz: f64,
    info: GpuInfo,
    sm_count: u32,
    /// DRAM bus width, bits (for the peak bandwidth at a memory clock).
    bus_bits: u32,
    counters: Option<SuiteCounters>,
    /// The GPU's clocks and what setting them changed (put back by `reset_clocks`, or on drop).
    clocks: NvmlClocks,
}

impl CudaSuiteDevice {
    /// Opens GPU `device`; `rate_hz` is the power sampling rate. `open_counters` is called once the
    /// device's CUDA context exists (NVIDIA's `pm_sampling` sample creates the context before enabling PM
    /// sampling). Without it the suite cannot write the model's inputs, so opening fails with that reason
    /// after the driver checks.
    pub fn open(
        device: u32,
        rate_hz: f64,
        open_counters: Option<OpenCounters>,
    ) -> Result<CudaSuiteDevice, Error> {
        if !(rate_hz.is_finite() && rate_hz > 0.0) {
            return Err(Error::Invalid(format!("--rate {rate_hz} must be a number of Hz > 0")));
        }
        let nvml = check_driver(device)?;
        let Some(open_counters) = open_counters else {
            return Err(Error::Invalid(
                "the suite needs hardware counters (CUPTI PM sampling) and this build cannot open them yet; \
                 a table with power but no counters would not train a model, so nothing was run"
                    .into(),
            ));
        };
        let gpu = CudaGpu::open(nvml, device, "suite", super::SOURCE, super::ENTRIES.iter().map(|e| e.name))?;
        // After the context (CudaGpu::open creates it), as NVIDIA's sample orders it.
        let counters = open_counters()?;
        let sm_count = gpu.attribute(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
        let bus_bits = gpu.attribute(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)? as u32;
        let CudaGpu { nvml, nvml_index, power: pinfo, ctx, capability, functions, clocks } = gpu;
        let stream = ctx.default_stream();
        let host: Vec<f32> = (0..super::BUFFER_ELEMS).map(|i| (i % 1024) as f32 * 1e-3).collect();
        let input = stream.clone_htod(&host).map_err(cuda("cuMemcpyHtoD"))?;
        let output = stream.alloc_zeros::<f32>(super::BUFFER_ELEMS as usize).map_err(cuda("cuMemAlloc"))?;
        let tex = texture_over(&input, super::BUFFER_ELEMS)?;
        let chip = nvml
            .device_by_index(nvml_index)
            .ok()
            .and_then(|d| d.architecture().ok())
            .map(|a| format!("{a:?}"));
        let info = GpuInfo {
            name: pinfo.gpu,
            chip,
            driver: pinfo.driver,
            compute_capability: Some(capability),
            sm_count: Some(sm_count),
        };
        Ok(CudaSuiteDevice {
            stream,
            functions,
            input,
            output,
            tex,
            nvml,
            index: nvml_index,
            rate_hz,
            info,
            sm_count,
            bus_bits,
            counters: Some(counters),
            clocks,
        })
    }

    fn launch(&mut self, k: &SuiteKernel, f: &CudaFunction) -> Result<(), Error> {
        let blocks = ((f64::from(self.sm_count * BLOCKS_PER_SM) * k.grid_fraction).round() as u32).max(1);
        let cfg = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
        let n = super::BUFFER_ELEMS as i32;
        let mut b = self.stream.launch_builder(f);
        b.arg(&self.input).arg(&mut self.output).arg(&self.tex).arg(&n).arg(&k.iters).arg(&k.knob);
        // SAFETY: the arguments match SUITE_ARGS in suite.cu (two device pointers of BUFFER_ELEMS floats,
        // a texture object over the input, three ints); every index is masked to the buffer size.
        unsafe { b.launch(cfg) }.map_err(cuda("cuLaunchKernel"))?;
        self.stream.synchronize().map_err(cuda("cuStreamSynchronize"))
    }
}

impl Drop for CudaSuiteDevice {
    fn drop(&mut self) {
        // SAFETY: created by cuTexObjectCreate in `open`, used by no launch after this point.
        unsafe { cudarc::driver::sys::cuTexObjectDestroy(self.tex) };
    }
}

/// Through [`NvmlClocks`]: application clocks first (data-center GPUs); where those are not supported
/// (GeForce), locked clocks (Volta and newer), the core and the memory clock each locked to the pair's
/// value.
impl ClockControl for CudaSuiteDevice {
    fn supported_clocks(&self) -> Result<SupportedClocks, Error> {
        self.clocks.supported()
    }

    fn set_clocks(&mut self, pair: ClockPair) -> Result<ClockOutcome, Error> {
        self.clocks.set(pair)
    }

    fn reset_clocks(&mut self) -> Result<(), Error> {
        self.clocks.reset()
    }

    fn clocks_now(&self) -> Option<ClockPair> {
        self.clocks.now()
    }
}

impl SuiteDevice for CudaSuiteDevice {
    fn info(&self) -> GpuInfo {
        self.info.clone()
    }

    fn peaks(&self, clocks: Clocks) -> Option<Peaks> {
        peaks_for(self.info.compute_capability?, self.sm_count, self.bus_bits, clocks)
    }

    fn run(&mut self, kernel: &SuiteKernel, min_seconds: f64) -> Result<Measurement, Error> {
        let f = self
            .functions
            .get(kernel.entry.as_str())
            .ok_or_else(|| Error::Invalid(format!("no suite kernel function {}", kernel.entry)))?
            .clone();
        // Warm-up launch: module load, caches, clocks ramping; not measured.
        self.launch(kernel, &f)?;
        let clock = Clock::new();
        let (tx, rx) = std::sync::mpsc::channel();
        let power =
            spawn_power(NvmlPower::open(self.nvml.clone(), self.index)?, self.rate_hz, clock, tx.clone())?;
        let mut counters = self.counters.take();
        let running_counters = match counters.as_mut() {
            Some(c) => {
                let mut source = std::mem::replace(&mut c.source, Box::new(NoCounters));
                source.start(clock.now_s())?;
                Some(spawn_counters(source, self.rate_hz, clock, tx.clone())?)
            }
            None => None,
        };
        drop(tx);
        let t0 = clock.now_s();
        let start = Instant::now();
        let mut launches = 0u64;
        let mut failure = None;
        while start.elapsed().as_secs_f64() < min_seconds {
            if let Err(e) = self.launch(kernel, &f) {
                failure = Some(e);
                break;
            }
            launches += 1;
        }
        let t1 = clock.now_s();
        let _ = power.stop()?;
        if let (Some(running), Some(c)) = (running_counters, counters.as_mut()) {
            let (source, _) = running.stop()?;
            c.source = source;
        }
        self.counters = counters;
        if let Some(e) = failure {
            return Err(e);
        }
        let names = self.counters.as_ref().map(|c| c.source.names()).unwrap_or_default();
        let w = window(rx.try_iter(), t0, t1, &names)?;
        if w.watts.is_empty() {
            return Err(Error::Invalid(format!(
                "{}: no power sample in {:.2} s: raise --min-seconds or --rate",
                kernel.name,
                t1 - t0
            )));
        }
        let (watts, core, mem, metric_rates) = (w.watts, w.core, w.mem, w.metric_rates);
        let counter_rates =
            self.counters.as_ref().map(|c| c.map.canonical(c.kind, &metric_rates)).unwrap_or_default();
        let mean = |v: &[f64]| if v.is_empty() { f64::NAN } else { v.iter().sum::<f64>() / v.len() as f64 };
        Ok(Measurement {
            seconds: t1 - t0,
            launches,
            power_w: mean(&watts),
            power_samples: watts.len(),
            clocks: Clocks { core_mhz: mean(&core), mem_mhz: mean(&mem) },
            counter_rates,
        })
    }
}

/// What the samplers saw during one run window.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Window {
    /// Power samples inside the window, W.
    pub watts: Vec<f64>,
    /// Core / memory clocks of those samples, MHz.
    pub core: Vec<f64>,
    pub mem: Vec<f64>,
    /// Per metric: the rate averaged over the window, each interval weighted by its overlap with it.
    pub metric_rates: BTreeMap<String, f64>,
}

/// Reduces sampler events to the window [t0, t1]: power samples outside it are dropped (warm-up,
/// shutdown), counter intervals count in proportion to their overlap with it. A failed sampler fails
/// the run.
pub(crate) fn window(
    events: impl Iterator<Item = Event>,
    t0: f64,
    t1: f64,
    names: &[String],
) -> Result<Window, Error> {
    let mut w = Window::default();
    let mut weighted: BTreeMap<String, OverlapMean> = BTreeMap::new();
    for ev in events {
        match ev {
            Event::Power(p) if p.t_s >= t0 && p.t_s <= t1 => {
                w.watts.push(p.reading.power.get());
                w.core.extend(p.reading.core.map(|m| m.get()));
                w.mem.extend(p.reading.mem.map(|m| m.get()));
            }
            Event::Counters(intervals) => {
                for iv in intervals {
                    for (name, rate) in names.iter().zip(&iv.rates) {
                        weighted.entry(name.clone()).or_default().add(
                            *rate,
                            (iv.start_s, iv.end_s),
                            (t0, t1),
                        );
                    }
                }
            }
            Event::Failed(e) => return Err(e),
            _ => {}
        }
    }
    w.metric_rates = weighted.into_iter().filter_map(|(name, m)| Some((name, m.mean()?))).collect();
    Ok(w)
}

/// Placeholder while the real counter source is on the sampler thread.
struct NoCounters;

impl CounterSource for NoCounters {
    fn names(&self) -> Vec<String> {
        Vec::new()
    }
    fn describe(&self) -> String {
        "none".into()
    }
    fn start(&mut self, _: f64) -> crate::Result<()> {
        Ok(())
    }
    fn poll(&mut self, _: f64) -> crate::Result<Vec<crate::counters::CounterInterval>> {
        Ok(Vec::new())
    }
    fn stop(&mut self, _: f64) -> crate::Result<Vec<crate::counters::CounterInterval>> {
        Ok(Vec::new())
    }
}

/// A texture object over a linear buffer of `elems` 32-bit values of `format`.
pub(crate) fn texture_over<T>(buf: &CudaSlice<T>, elems: u32) -> Result<u64, Error> {
    texture_with_format(buf, elems, cudarc::driver::sys::CUarray_format::CU_AD_FORMAT_FLOAT)
}

/// As [`texture_over`], with the element format (`CU_AD_FORMAT_SIGNED_INT32` for `tex1Dfetch<int>`).
pub(crate) fn texture_with_format<T>(
    buf: &CudaSlice<T>,
    elems: u32,
    format: cudarc::driver::sys::CUarray_format,
) -> Result<u64, Error> {
    use cudarc::driver::DevicePtr;
    use cudarc::driver::sys;
    let stream = buf.stream().clone();
    let (ptr, _sync) = buf.device_ptr(&stream);
    // SAFETY: plain-old-data descriptors, zero-initialized as the driver API expects, then filled in; the
    // buffer outlives the texture object (both are owned by the same device struct).
    unsafe {
        let mut res: sys::CUDA_RESOURCE_DESC = std::mem::zeroed();
        res.resType = sys::CUresourcetype::CU_RESOURCE_TYPE_LINEAR;
        res.res.linear.devPtr = ptr;
        res.res.linear.format = format;
        res.res.linear.numChannels = 1;
        res.res.linear.sizeInBytes = elems as usize * 4;
        let tex_desc: sys::CUDA_TEXTURE_DESC = std::mem::zeroed();
        let mut tex: sys::CUtexObject = 0;
        let r = sys::cuTexObjectCreate(&mut tex, &res, &tex_desc, std::ptr::null());
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(Error::Cuda { call: "cuTexObjectCreate", message: format!("{r:?}") });
        }
        Ok(tex)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::counters::CounterInterval;
    use crate::power::PowerReading;
    use crate::sampler::PowerSample;
    use gpumodel_models::{Mhz, Watts};

    /// The A100-SXM4-40GB's published figures: 1555 GB/s of HBM2 (5120-bit bus, 1215 MHz) and 19.5 TFLOP/s
    /// FP32 (108 SMs × 64 lanes × 2 flops per FMA × 1410 MHz), i.e. 9.75 T FP32 thread results per second.
    #[test]
    fn peaks_match_the_a100s_data_sheet() {
        let p = peaks_for((8, 0), 108, 5120, Clocks { core_mhz: 1410.0, mem_mhz: 1215.0 }).unwrap();
        assert!((p.dram_bytes_per_s / 1e9 - 1555.2).abs() < 0.1, "{p:?}");
        assert!((p.fp32_per_s * 32.0 * 2.0 / 1e12 - 19.49).abs() < 0.01, "{p:?}");
        assert!((p.fp64_per_s * 32.0 * 2.0 / 1e12 - 9.75).abs() < 0.01, "{p:?}");
        assert_eq!(p.max_warps_per_sm, 64.0);
        assert!(peaks_for((5, 2), 108, 5120, Clocks { core_mhz: 1410.0, mem_mhz: 1215.0 }).is_none());
    }

    fn power(t_s: f64, w: f64) -> Event {
        Event::Power(PowerSample {
            t_s,
            reading: PowerReading { power: Watts(w), core: Some(Mhz(1410.0)), mem: None },
            late_s: 0.0,
        })
    }

    #[test]
    fn the_window_keeps_its_own_samples_and_weights_intervals_by_overlap() {
        let names = vec!["a".to_string(), "b".to_string()];
        let events = vec![
            power(0.5, 999.0), // warm-up, before the window
            power(1.0, 100.0),
            power(1.5, 200.0),
            power(2.5, 999.0), // after the window
            // Half of this interval is inside [1, 2]: it counts for 0.5 s.
            Event::Counters(vec![CounterInterval { start_s: 0.5, end_s: 1.5, rates: vec![10.0, 1.0] }]),
            Event::Counters(vec![CounterInterval { start_s: 1.5, end_s: 2.0, rates: vec![40.0, 1.0] }]),
        ];
        let w = window(events.into_iter(), 1.0, 2.0, &names).unwrap();
        assert_eq!(w.watts, [100.0, 200.0]);
        assert_eq!(w.core, [1410.0, 1410.0]);
        assert!(w.mem.is_empty());
        assert_eq!(w.metric_rates["a"], (10.0 * 0.5 + 40.0 * 0.5) / 1.0);
        assert_eq!(w.metric_rates["b"], 1.0);
    }

    #[test]
    fn a_failed_sampler_fails_the_run() {
        let events = vec![power(1.0, 100.0), Event::Failed(crate::Error::Thread("gone".into()))];
        let err = window(events.into_iter(), 0.0, 2.0, &[]).unwrap_err();
        assert!(err.to_string().contains("gone"), "{err}");
    }
}
