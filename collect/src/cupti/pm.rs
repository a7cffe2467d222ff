//! CUPTI PM sampling as a [`CounterSource`]: the whole device sampled at a fixed interval while another
//! process runs the kernel (Turing and newer; CUPTI 12.6+).
//!
//! Call sequence, as in CUPTI's documentation ("PM Sampling") and its `pm_sampling` sample:
//! 1. `cuInit(0)`; `cuptiProfilerInitialize`;
//! 2. `cuptiDeviceGetChipName(deviceIndex)`; `cuptiPmSamplingGetCounterAvailability` (size query, then
//!    the image);
//! 3. host side: `cuptiProfilerHostInitialize(PM_SAMPLING, chip, availability)` →
//!    `cuptiProfilerHostConfigAddMetrics` → `…GetConfigImageSize` → `…GetConfigImage`; the pass count
//!    must be 1;
//! 4. `cuptiPmSamplingEnable(deviceIndex)` → object; `cuptiPmSamplingSetConfig(config image, hardware
//!    buffer size, sampling interval, trigger mode)` — GPU-time interval (ns) on GA10x and newer,
//!    system-clock interval (cycles) on Turing and GA100;
//! 5. `cuptiPmSamplingGetCounterDataSize(metrics, maxSamples)` → `cuptiPmSamplingCounterDataImageInitialize`;
//! 6. `cuptiPmSamplingStart`; then repeatedly `cuptiPmSamplingDecodeData` → `…GetCounterDataInfo` →
//!    for each completed sample `…CounterData_GetSampleInfo` (start/end timestamps) and
//!    `cuptiProfilerHostEvaluateToGpuValues`; when the decode stops with COUNTER_DATA_FULL the image is
//!    re-initialized;
//! 7. `cuptiPmSamplingStop` → a last decode → `cuptiPmSamplingDisable` → `cuptiProfilerHostDeinitialize`
//!    → `cuptiProfilerDeInitialize` ([`TEARDOWN`], run by `Drop`; the profiler is deinitialized last, after
//!    the host object, as in the `pm_sampling` sample's cleanup and the step list of the CUPTI guide's
//!    "PM Sampling" section).
//!
//! **Lost samples.** We configure `KEEP_OLDEST`; the CUPTI reference (`CUpti_PmSampling_SetConfig_Params`
//! ::hwBufferAppendMode, `CUpti_PmSampling_DecodeData_Params`::overflow) documents that a full hardware
//! buffer then sets `overflow` to 1 and newer samples are dropped. Each decode's flag is read; the number
//! of samples lost is estimated from the gaps between consecutive samples' timestamps ([`gap_samples`])
//! and both are reported in the trace's warnings ([`CounterSource::warnings`]).
//!
//! **Timestamps.** `CUpti_PmSampling_CounterData_GetSampleInfo_Params` documents `startTimestamp` /
//! `endTimestamp` only as the sample's start and end; the reference does not say that they are on the
//! `cuptiGetTimestamp` clock. So they are not assumed to be: [`TimestampMap`] reads `cuptiGetTimestamp`
//! at start, and when the first sample's start lies more than [`TimestampMap::TOLERANCE_S`] away from it,
//! re-bases the sample clock on that first sample (it cannot start before `cuptiPmSamplingStart`) and
//! says so in the trace's warnings with the measured offset. NVML power samples are stamped with the run
//! clock when they are read, so both series meet on the run clock.
//!
//! **Trigger.** `CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL` is "not supported on Turing GPU
//! architecture and GA100 GPU" (`cupti_pmsampling.h`, `CUpti_PmSampling_TriggerMode`); there the only trigger
//! is `GPU_SYSCLK_INTERVAL`, whose interval is a count of SYS-clock cycles and whose "SYS frequency by
//! default is variable". NVML has no SYS-clock reading, so the SM clock is no stand-in: the user gives the
//! frequency (`collect --sysclk-mhz`), or the collector assumes [`NOMINAL_SYSCLK_HZ`] and says so loudly.
//! Rates are divided by each sample's measured timestamps, never by the configured interval, so a wrong
//! frequency changes how many samples there are, not their values.
//!
//! **Other processes.** The CUPTI reference describes PM sampling as enabled per device
//! (`cuptiPmSamplingEnable(deviceIndex)`), with no context argument, and samples the device's counters;
//! it does not say in so many words that work of another process is counted, and NVIDIA's `pm_sampling`
//! sample runs its workload in the profiling process after creating a context. We therefore (a) create
//! and hold the device's primary context in the collector before enabling PM sampling, as the sample
//! does, and (b) check after every run that the instruction counter moved while the program ran
//! ([`CounterSource::warnings`] says when it did not, with the fix: `--kernel-totals`, which profiles
//! inside the program's own process). A GPU is needed to settle the question; see collect/README.md.
//! A `.sum` metric evaluates to the events of the sample's interval, so the rate is value / interval length.
//!
//! Application replay (`collect --pm-passes all`) opens one of these per PM-sampling group of the chip's
//! map and then one per group of DCGM profiling fields the chip has ([`crate::cupti::dcgm`]; their trace
//! columns are `SMACT`, `DRAMA`, …) ([`CuptiPmCounters::open_pass`]): the whole sequence above, steps 1–7,
//! once per run of the program, each group checked to be one pass.
//!
//! This path needs a GPU and a driver; on machines without them [`CuptiPmCounters::open`] returns
//! [`Error::NoDriver`], which the tests check.

use super::host::{HostProfiler, ProfilerKind, check};
use super::loader::load_cupti;
pub use super::pm_timing::{NOMINAL_SYSCLK_HZ, TimestampMap, Trigger, gap_samples, lost_samples_warning};
use crate::counters::{CounterInterval, CounterSource};
use crate::cupti::dcgm::{DcgmFields, DcgmPlan};
use crate::error::{Error, Result};
use cudarc::cupti::sys;
use gpumodel_models::counters::{CounterMap, canonical_of, group_metrics};
use std::collections::BTreeMap;
use std::ffi::{CStr, CString, c_char};
use std::ptr;

/// The documented teardown of PM sampling (CUPTI guide, "PM Sampling", and the `pm_sampling` sample's
/// cleanup): stop (when started), disable the PM-sampling object, deinitialize the host object, and only
/// then deinitialize the profiler. `Drop` runs exactly these steps in this order.
pub const TEARDOWN: [TeardownStep; 4] = [
    TeardownStep::Stop,
    TeardownStep::Disable,
    TeardownStep::HostDeinitialize,
    TeardownStep::ProfilerDeInitialize,
];

/// One step of [`TEARDOWN`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TeardownStep {
    /// `cuptiPmSamplingStop` (only when started).
    Stop,
    /// `cuptiPmSamplingDisable`.
    Disable,
    /// `cuptiProfilerHostDeinitialize`.
    HostDeinitialize,
    /// `cuptiProfilerDeInitialize`.
    ProfilerDeInitialize,
}

/// `cuptiProfilerInitialize` held: dropping it calls `cuptiProfilerDeInitialize`. Taken before any other
/// step of `open_pass`, so a failure at any later step still deinitializes the profiler (locals drop in
/// reverse order: the host object first).
pub(crate) struct ProfilerInit;

impl Drop for ProfilerInit {
    fn drop(&mut self) {
        let mut de = sys::CUpti_Profiler_DeInitialize_Params {
            structSize: size::<sys::CUpti_Profiler_DeInitialize_Params>(),
            pPriv: ptr::null_mut(),
        };
        // SAFETY: pairs the cuptiProfilerInitialize that created this value. Its result cannot be acted
        // on while tearing down; a failure here leaves nothing of ours behind.
        let _ = unsafe { sys::cuptiProfilerDeInitialize(&mut de) };
    }
}

/// PM-sampling options.
#[derive(Debug, Clone)]
pub struct PmOptions {
    /// CUDA device index.
    pub device: u32,
    /// Sampling interval, seconds.
    pub interval_s: f64,
    /// Hardware buffer, bytes (the sample's default is 512 MiB).
    pub hardware_buffer_bytes: usize,
    /// Samples held by the counter-data image between decodes.
    pub max_samples: u32,
    /// SYS-clock frequency, Hz, for chips that trigger on SYS-clock cycles (`--sysclk-mhz`); `None`
    /// assumes [`NOMINAL_SYSCLK_HZ`] and says so.
    pub sysclk_hz: Option<f64>,
}

impl Default for PmOptions {
    fn default() -> Self {
        PmOptions {
            device: 0,
            interval_s: 1.0 / 60.0,
            hardware_buffer_bytes: 512 << 20,
            max_samples: 4096,
            sysclk_hz: None,
        }
    }
}

/// The device's primary context, retained for the life of the sampler (NVIDIA's `pm_sampling` sample
/// makes a context current before enabling PM sampling) and released on drop.
struct PrimaryContext {
    dev: cudarc::driver::sys::CUdevice,
}

impl PrimaryContext {
    fn retain(device: u32) -> Result<PrimaryContext> {
        let ordinal = i32::try_from(device)
            .map_err(|_| Error::NoGpu { index: device, detail: "not a CUDA device ordinal".into() })?;
        let dev = cudarc::driver::result::device::get(ordinal)
            .map_err(|e| Error::NoGpu { index: device, detail: format!("cuDeviceGet: {e:?}") })?;
        // SAFETY: dev is a valid device from cuDeviceGet; the context is released in Drop.
        let ctx = unsafe { cudarc::driver::result::primary_ctx::retain(dev) }.map_err(|e| Error::NoGpu {
            index: device,
            detail: format!("cuDevicePrimaryCtxRetain: {e:?}"),
        })?;
        let held = PrimaryContext { dev };
        // SAFETY: ctx is the retained primary context of dev.
        unsafe { cudarc::driver::result::ctx::set_current(ctx) }
            .map_err(|e| Error::NoGpu { index: device, detail: format!("cuCtxSetCurrent: {e:?}") })?;
        Ok(held)
    }
}

impl Drop for PrimaryContext {
    fn drop(&mut self) {
        // SAFETY: pairs the retain above. A failure to release at teardown has no remedy here.
        let _ = unsafe { cudarc::driver::result::primary_ctx::release(self.dev) };
    }
}

/// CUPTI PM sampling of the canonical counters in one PM-sampling group of a chip's map.
pub struct CuptiPmCounters {
    map: CounterMap,
    /// The group sampled: canonical counter → metrics summed.
    group: BTreeMap<String, Vec<String>>,
    /// 0-based index of the group (0 = `[pm]`).
    pass: usize,
    /// Groups of DCGM profiling fields the chip has (the runs after the map's groups).
    dcgm_groups: usize,
    /// `Some` until [`TeardownStep::HostDeinitialize`].
    host: Option<HostProfiler>,
    obj: *mut sys::CUpti_PmSampling_Object,
    metrics: Vec<CString>,
    counter_data: Vec<u8>,
    next_sample: usize,
    clock: TimestampMap,
    trigger: Trigger,
    interval_s: f64,
    running: bool,
    /// Decodes that reported a hardware-buffer overflow.
    overflows: u64,
    /// Samples missing between consecutive samples (estimated from their timestamps).
    gap_lost: u64,
    /// End of the last sample decoded, run-clock seconds.
    last_end_s: Option<f64>,
    /// Samples with a non-positive length, skipped.
    empty_samples: u64,
    /// Largest instruction rate seen (the cross-process check), when the group has `inst_executed`.
    max_inst_rate: Option<f64>,
    /// `Some` until [`TeardownStep::ProfilerDeInitialize`].
    init: Option<ProfilerInit>,
    /// The primary context held while sampling; released after the profiler is deinitialized.
    _context: Option<PrimaryContext>,
}

// SAFETY: the PM-sampling object and host object are used from one thread at a time (the poller owns
// this value); CUPTI does not tie them to the creating thread.
unsafe impl Send for CuptiPmCounters {}

/// Group `pass` of the chip's map, and the fix when it needs more than one hardware pass.
fn map_group(map: &CounterMap, pass: usize) -> Result<(BTreeMap<String, Vec<String>>, String)> {
    let fix = format!("split that group in models/counters/{}.toml", map.chip.to_lowercase());
    Ok((map.pm_group(pass)?.clone(), fix))
}

fn size<T>() -> usize {
    std::mem::size_of::<T>()
}

/// The chip name CUPTI gives device `index`.
pub fn chip_name(index: u32) -> Result<String> {
    let mut p = sys::CUpti_Device_GetChipName_Params {
        structSize: size::<sys::CUpti_Device_GetChipName_Params>(),
        pPriv: ptr::null_mut(),
        deviceIndex: index as usize,
        pChipName: ptr::null(),
    };
    // SAFETY: params initialized with their size; CUPTI returns a static string.
    check("cuptiDeviceGetChipName", unsafe { sys::cuptiDeviceGetChipName(&mut p) })?;
    // SAFETY: non-null on success.
    Ok(unsafe { CStr::from_ptr(p.pChipName) }.to_string_lossy().into_owned())
}

/// `cuInit` + the device's primary context made current, with a missing driver as [`Error::NoDriver`].
fn init_driver(device: u32) -> Result<PrimaryContext> {
    load_cupti()?;
    // SAFETY: probes dlopen of libcuda by name.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(Error::NoDriver { detail: "libcuda.so cannot be loaded".into() });
    }
    cudarc::driver::result::init().map_err(|e| Error::NoDriver { detail: format!("cuInit: {e:?}") })?;
    PrimaryContext::retain(device)
}

/// `cuptiProfilerInitialize` (after [`init_driver`]). The returned guard deinitializes the profiler when
/// dropped.
pub(crate) fn init_profiler() -> Result<ProfilerInit> {
    let mut p = sys::CUpti_Profiler_Initialize_Params {
        structSize: size::<sys::CUpti_Profiler_Initialize_Params>(),
        pPriv: ptr::null_mut(),
    };
    // SAFETY: params initialized with their size.
    check("cuptiProfilerInitialize", unsafe { sys::cuptiProfilerInitialize(&mut p) })?;
    Ok(ProfilerInit)
}

impl CuptiPmCounters {
    /// Opens PM sampling on `opts.device` for the chip's `pm` map (steps 1–5 of the sequence).
    pub fn open(opts: &PmOptions) -> Result<CuptiPmCounters> {
        Self::open_group(opts, 0, |map| map_group(map, 0))
    }

    /// Opens PM sampling for run `pass` of application replay, steps 1–5 of the sequence: the PM-sampling
    /// groups of the chip's map (0 = `[pm]`, k = the k-th `[[pm_pass]]`), then the groups of DCGM
    /// profiling fields the chip has ([`DcgmPlan`]), as a source of those fields. Application replay
    /// opens one per run of the program, after the previous one is dropped (stop, disable, deinitialize).
    pub fn open_pass(opts: &PmOptions, pass: usize) -> Result<Box<dyn CounterSource>> {
        let mut fields = None;
        let source = Self::open_group(opts, pass, |map| {
            let n = map.pm_groups().len();
            if pass < n {
                return map_group(map, pass);
            }
            let plan = DcgmPlan::for_chip(&map.chip)?;
            let Some(g) = plan.groups.get(pass - n) else {
                return Err(Error::Invalid(format!(
                    "{} has {n} PM-sampling group(s) and {} of DCGM profiling fields, not {} in all",
                    map.chip,
                    plan.groups.len(),
                    pass + 1
                )));
            };
            fields = Some(g.clone());
            Ok((plan.group(pass - n), "collect without the DCGM fields (--pm-passes 1)".into()))
        })?;
        Ok(match fields {
            Some(f) => Box::new(DcgmFields::new(source, f)),
            None => Box::new(source),
        })
    }

    /// Steps 1–5 for the group `pick` chooses from the chip's map; `pick` also says what to do when the
    /// group needs more than one hardware pass on this device.
    fn open_group(
        opts: &PmOptions,
        pass: usize,
        pick: impl FnOnce(&CounterMap) -> Result<(BTreeMap<String, Vec<String>>, String)>,
    ) -> Result<CuptiPmCounters> {
        if !(opts.interval_s.is_finite() && opts.interval_s > 0.0) {
            return Err(Error::Invalid(format!(
                "PM sampling interval {} s: give a positive interval",
                opts.interval_s
            )));
        }
        // From here on every early return drops `init` (and `host`, declared later, before it; the context
        // after it): the profiler is never left initialized by a failed open.
        let context = init_driver(opts.device)?;
        let init = init_profiler()?;
        let chip = chip_name(opts.device)?;
        let trigger = Trigger::for_chip(&chip, opts.sysclk_hz)?;
        let map = CounterMap::builtin(&chip)?;
        let (group, fix) = pick(&map)?;
        // CUPTI's metric database decides: none on a library without one (the groups are then the map's).
        let dcgm_groups = DcgmPlan::for_chip(&chip).map_or(0, |p| p.groups.len());
        // Counter availability: size query, then the image.
        let mut a = sys::CUpti_PmSampling_GetCounterAvailability_Params {
            structSize: size::<sys::CUpti_PmSampling_GetCounterAvailability_Params>(),
            pPriv: ptr::null_mut(),
            deviceIndex: opts.device as usize,
            counterAvailabilityImageSize: 0,
            pCounterAvailabilityImage: ptr::null_mut(),
        };
        // SAFETY: size query with a null image.
        check("cuptiPmSamplingGetCounterAvailability", unsafe {
            sys::cuptiPmSamplingGetCounterAvailability(&mut a)
        })?;
        let mut availability = vec![0u8; a.counterAvailabilityImageSize];
        a.pCounterAvailabilityImage = availability.as_mut_ptr();
        // SAFETY: buffer of the size CUPTI asked for.
        check("cuptiPmSamplingGetCounterAvailability", unsafe {
            sys::cuptiPmSamplingGetCounterAvailability(&mut a)
        })?;

        let mut host = HostProfiler::new(&chip, ProfilerKind::PmSampling, Some(&availability))?;
        let names = group_metrics(&group);
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        host.add_metrics(&refs)?;
        let passes = host.num_passes()?;
        if passes != 1 {
            return Err(Error::Invalid(format!(
                "PM-sampling pass {} of {chip} needs {passes} hardware passes on this device; PM sampling needs 1: \
                 {fix}",
                pass + 1,
            )));
        }
        let config = host.config_image()?;

        let mut e = sys::CUpti_PmSampling_Enable_Params {
            structSize: size::<sys::CUpti_PmSampling_Enable_Params>(),
            pPriv: ptr::null_mut(),
            deviceIndex: opts.device as usize,
            pPmSamplingObject: ptr::null_mut(),
        };
        // SAFETY: params initialized with their size.
        check("cuptiPmSamplingEnable", unsafe { sys::cuptiPmSamplingEnable(&mut e) })?;
        let obj = e.pPmSamplingObject;
        let (mode, interval) = trigger.interval(opts.interval_s);
        // From here `this` owns the object, the host object and the profiler: on error its Drop runs the
        // documented teardown (disable → host deinitialize → profiler deinitialize).
        let mut this = CuptiPmCounters {
            map,
            group,
            pass,
            dcgm_groups,
            host: Some(host),
            obj,
            metrics: names.iter().map(|n| CString::new(n.as_str()).unwrap_or_default()).collect(),
            counter_data: Vec::new(),
            next_sample: 0,
            clock: TimestampMap::new(0.0, 0),
            trigger,
            interval_s: opts.interval_s,
            running: false,
            overflows: 0,
            gap_lost: 0,
            last_end_s: None,
            empty_samples: 0,
            max_inst_rate: None,
            init: Some(init),
            _context: Some(context),
        };
        let mut s = sys::CUpti_PmSampling_SetConfig_Params {
            structSize: size::<sys::CUpti_PmSampling_SetConfig_Params>(),
            pPriv: ptr::null_mut(),
            pPmSamplingObject: obj,
            configSize: config.len(),
            pConfig: config.as_ptr(),
            hardwareBufferSize: opts.hardware_buffer_bytes,
            samplingInterval: interval,
            triggerMode: mode,
            // The default: when the buffer is full, new samples are dropped and the next decode sets
            // `overflow` (read in `decode`, counted and reported).
            hwBufferAppendMode:
                sys::CUpti_PmSampling_HardwareBuffer_AppendMode::CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST,
        };
        // SAFETY: config image alive across the call. On error `this` drops and disables the object.
        check("cuptiPmSamplingSetConfig", unsafe { sys::cuptiPmSamplingSetConfig(&mut s) })?;

        let mut ptrs: Vec<*const c_char> = this.metrics.iter().map(|c| c.as_ptr()).collect();
        let mut d = sys::CUpti_PmSampling_GetCounterDataSize_Params {
            structSize: size::<sys::CUpti_PmSampling_GetCounterDataSize_Params>(),
            pPriv: ptr::null_mut(),
            pPmSamplingObject: obj,
            pMetricNames: ptrs.as_mut_ptr(),
            numMetrics: ptrs.len(),
            maxSamples: opts.max_samples,
            counterDataSize: 0,
        };
        // SAFETY: metric-name array alive across the call.
        check("cuptiPmSamplingGetCounterDataSize", unsafe {
            sys::cuptiPmSamplingGetCounterDataSize(&mut d)
        })?;
        this.counter_data = vec![0u8; d.counterDataSize];
        this.init_counter_data()?;
        Ok(this)
    }

    fn init_counter_data(&mut self) -> Result<()> {
        let mut p = sys::CUpti_PmSampling_CounterDataImage_Initialize_Params {
            structSize: size::<sys::CUpti_PmSampling_CounterDataImage_Initialize_Params>(),
            pPriv: ptr::null_mut(),
            pPmSamplingObject: self.obj,
            counterDataSize: self.counter_data.len(),
            pCounterData: self.counter_data.as_mut_ptr(),
        };
        // SAFETY: buffer of the size CUPTI asked for.
        check("cuptiPmSamplingCounterDataImageInitialize", unsafe {
            sys::cuptiPmSamplingCounterDataImageInitialize(&mut p)
        })?;
        self.next_sample = 0;
        Ok(())
    }

    /// Decodes what the hardware buffer holds and turns completed samples into intervals.
    fn decode(&mut self) -> Result<Vec<CounterInterval>> {
        let mut out = Vec::new();
        loop {
            let mut d = sys::CUpti_PmSampling_DecodeData_Params {
                structSize: size::<sys::CUpti_PmSampling_DecodeData_Params>(),
                pPriv: ptr::null_mut(),
                pPmSamplingObject: self.obj,
                pCounterDataImage: self.counter_data.as_mut_ptr(),
                counterDataImageSize: self.counter_data.len(),
                decodeStopReason:
                    sys::CUpti_PmSampling_DecodeStopReason::CUPTI_PM_SAMPLING_DECODE_STOP_REASON_OTHER,
                overflow: 0,
            };
            // SAFETY: counter-data image alive and initialized.
            check("cuptiPmSamplingDecodeData", unsafe { sys::cuptiPmSamplingDecodeData(&mut d) })?;
            if d.overflow != 0 {
                self.overflows += 1;
            }
            let mut info = sys::CUpti_PmSampling_GetCounterDataInfo_Params {
                structSize: size::<sys::CUpti_PmSampling_GetCounterDataInfo_Params>(),
                pPriv: ptr::null_mut(),
                pCounterDataImage: self.counter_data.as_ptr(),
                counterDataImageSize: self.counter_data.len(),
                numTotalSamples: 0,
                numPopulatedSamples: 0,
                numCompletedSamples: 0,
            };
            // SAFETY: as above.
            check("cuptiPmSamplingGetCounterDataInfo", unsafe {
                sys::cuptiPmSamplingGetCounterDataInfo(&mut info)
            })?;
            for i in self.next_sample..info.numCompletedSamples {
                let mut si = sys::CUpti_PmSampling_CounterData_GetSampleInfo_Params {
                    structSize: size::<sys::CUpti_PmSampling_CounterData_GetSampleInfo_Params>(),
                    pPriv: ptr::null_mut(),
                    pPmSamplingObject: self.obj,
                    pCounterDataImage: self.counter_data.as_ptr(),
                    counterDataImageSize: self.counter_data.len(),
                    sampleIndex: i,
                    startTimestamp: 0,
                    endTimestamp: 0,
                };
                // SAFETY: as above; i < numCompletedSamples.
                check("cuptiPmSamplingCounterDataGetSampleInfo", unsafe {
                    sys::cuptiPmSamplingCounterDataGetSampleInfo(&mut si)
                })?;
                let Some(host) = self.host.as_ref() else {
                    return Err(Error::Invalid("PM sampling decoded after teardown".into()));
                };
                let values = host.evaluate(&self.counter_data, i, &self.metrics)?;
                self.clock.observe_first(si.startTimestamp);
                let start_s = self.clock.to_run_s(si.startTimestamp);
                let end_s = self.clock.to_run_s(si.endTimestamp);
                let dur = end_s - start_s;
                if dur <= 0.0 {
                    self.empty_samples += 1;
                    continue;
                }
                if let Some(prev) = self.last_end_s {
                    self.gap_lost += gap_samples(prev, start_s, self.interval_s);
                }
                self.last_end_s = Some(end_s);
                let by_name: std::collections::BTreeMap<String, f64> =
                    self.metrics.iter().map(|c| c.to_string_lossy().into_owned()).zip(values).collect();
                let canonical = canonical_of(&self.group, &by_name);
                let rates: Vec<f64> =
                    self.group.keys().map(|k| canonical.get(k).map_or(f64::NAN, |v| v / dur)).collect();
                if let Some(j) = self.group.keys().position(|k| k == "inst_executed")
                    && rates[j].is_finite()
                {
                    self.max_inst_rate = Some(self.max_inst_rate.map_or(rates[j], |m: f64| m.max(rates[j])));
                }
                out.push(CounterInterval { start_s, end_s, rates });
            }
            self.next_sample = info.numCompletedSamples;
            if d.decodeStopReason
                == sys::CUpti_PmSampling_DecodeStopReason::CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL
            {
                self.init_counter_data()?;
                continue;
            }
            return Ok(out);
        }
    }
}

impl CuptiPmCounters {
    /// The chip CUPTI reported for the device.
    pub fn chip(&self) -> &str {
        &self.map.chip
    }

    /// How many application-replay runs `collect --pm-passes all` makes: the PM-sampling groups of the
    /// chip's map, then the groups of DCGM profiling fields.
    pub fn pass_count(&self) -> usize {
        self.map.pm_groups().len() + self.dcgm_groups
    }
}

impl CounterSource for CuptiPmCounters {
    fn names(&self) -> Vec<String> {
        self.group.keys().cloned().collect()
    }

    fn describe(&self) -> String {
        let t = match self.trigger {
            Trigger::GpuTime => "GPU-time interval".to_string(),
            Trigger::SysClk { hz, given: true } => format!("SYS-clock interval at {:.0} MHz", hz / 1e6),
            Trigger::SysClk { hz, given: false } => {
                format!("SYS-clock interval at an assumed {:.0} MHz", hz / 1e6)
            }
        };
        let pass = match self.pass_count() {
            1 => String::new(),
            n => format!(", pass {} of {n}", self.pass + 1),
        };
        format!("CUPTI PM sampling, {}{pass}, {:.2} ms {t}", self.map.chip, self.interval_s * 1e3)
    }

    fn start(&mut self, now_s: f64) -> Result<()> {
        let mut ts = 0u64;
        // SAFETY: writes one u64.
        check("cuptiGetTimestamp", unsafe { sys::cuptiGetTimestamp(&mut ts) })?;
        self.clock = TimestampMap::new(now_s, ts);
        let mut p = sys::CUpti_PmSampling_Start_Params {
            structSize: size::<sys::CUpti_PmSampling_Start_Params>(),
            pPriv: ptr::null_mut(),
            pPmSamplingObject: self.obj,
        };
        // SAFETY: enabled and configured object.
        check("cuptiPmSamplingStart", unsafe { sys::cuptiPmSamplingStart(&mut p) })?;
        self.running = true;
        Ok(())
    }

    fn poll(&mut self, _now_s: f64) -> Result<Vec<CounterInterval>> {
        self.decode()
    }

    fn stop(&mut self, _now_s: f64) -> Result<Vec<CounterInterval>> {
        let mut p = sys::CUpti_PmSampling_Stop_Params {
            structSize: size::<sys::CUpti_PmSampling_Stop_Params>(),
            pPriv: ptr::null_mut(),
            pPmSamplingObject: self.obj,
        };
        // SAFETY: started object.
        check("cuptiPmSamplingStop", unsafe { sys::cuptiPmSamplingStop(&mut p) })?;
        self.running = false;
        self.decode()
    }

    fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        w.extend(self.trigger.warning());
        w.extend(self.clock.warning());
        w.extend(lost_samples_warning(self.overflows, self.gap_lost, self.interval_s));
        if self.empty_samples > 0 {
            w.push(format!("{} PM samples had no length (end ≤ start) and were skipped", self.empty_samples));
        }
        if self.max_inst_rate == Some(0.0) {
            w.push(
                "PM sampling counted no instructions while the program ran: this driver may not sample other \
                 processes' work; use --kernel-totals (profiles inside the program) to check"
                    .into(),
            );
        }
        w
    }
}

impl Drop for CuptiPmCounters {
    fn drop(&mut self) {
        for step in TEARDOWN {
            match step {
                TeardownStep::Stop if self.running => {
                    let mut p = sys::CUpti_PmSampling_Stop_Params {
                        structSize: size::<sys::CUpti_PmSampling_Stop_Params>(),
                        pPriv: ptr::null_mut(),
                        pPmSamplingObject: self.obj,
                    };
                    // SAFETY: started object, stopped once. Errors cannot be reported from Drop; the
                    // remaining steps still run.
                    let _ = unsafe { sys::cuptiPmSamplingStop(&mut p) };
                    self.running = false;
                }
                TeardownStep::Stop => {}
                TeardownStep::Disable => {
                    let mut d = sys::CUpti_PmSampling_Disable_Params {
                        structSize: size::<sys::CUpti_PmSampling_Disable_Params>(),
                        pPriv: ptr::null_mut(),
                        pPmSamplingObject: self.obj,
                    };
                    // SAFETY: object from cuptiPmSamplingEnable, disabled once.
                    let _ = unsafe { sys::cuptiPmSamplingDisable(&mut d) };
                }
                // HostProfiler's Drop calls cuptiProfilerHostDeinitialize.
                TeardownStep::HostDeinitialize => drop(self.host.take()),
                // ProfilerInit's Drop calls cuptiProfilerDeInitialize.
                TeardownStep::ProfilerDeInitialize => drop(self.init.take()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The profiler is deinitialized last, after the host object (CUPTI guide "PM
    /// Sampling"; the `pm_sampling` sample's cleanup).
    #[test]
    fn teardown_deinitializes_the_profiler_after_the_host_object() {
        let pos = |s| TEARDOWN.iter().position(|x| *x == s).unwrap();
        assert!(pos(TeardownStep::Stop) < pos(TeardownStep::Disable));
        assert!(pos(TeardownStep::Disable) < pos(TeardownStep::HostDeinitialize));
        assert!(pos(TeardownStep::HostDeinitialize) < pos(TeardownStep::ProfilerDeInitialize));
        assert_eq!(TEARDOWN.last(), Some(&TeardownStep::ProfilerDeInitialize));
    }

    /// Without libcuda (our machines) opening PM sampling is a clear no-driver error, not a panic.
    /// Skipped where CUPTI itself is missing (then the loader error is the answer) or a driver exists.
    #[test]
    fn no_driver_is_a_clear_error() {
        if std::path::Path::new("/proc/driver/nvidia").exists() || load_cupti().is_err() {
            return;
        }
        let Err(e) = CuptiPmCounters::open(&PmOptions::default()) else { panic!("no GPU here") };
        let e = e.to_string();
        assert!(e.starts_with("no NVIDIA driver"), "{e}");
    }
}
