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
//!    → `cuptiProfilerDeInitialize`.
//!
//! Sample timestamps are CUPTI timestamps (ns, the `cuptiGetTimestamp` clock); they are mapped to the run
//! [`crate::sampler::Clock`] by the offset read at start. A `.sum` metric evaluates to the events of the
//! sample's interval, so the rate is value / interval length.
//!
//! Application replay (`collect --pm-passes all`) opens one of these per PM-sampling group of the chip's
//! map ([`CuptiPmCounters::open_pass`]): the whole sequence above, steps 1–7, once per run of the program,
//! each group checked to be one pass.
//!
//! This path needs a GPU and a driver; on machines without them [`CuptiPmCounters::open`] returns
//! [`Error::NoDriver`], which the tests check.

use super::host::{HostProfiler, ProfilerKind, check};
use super::loader::load_cupti;
use crate::counters::{CounterInterval, CounterSource};
use crate::error::{Error, Result};
use cudarc::cupti::sys;
use gpumodel_models::counters::{CounterMap, canonical_of, group_metrics};
use std::collections::BTreeMap;
use std::ffi::{CStr, CString, c_char};
use std::ptr;

/// How the hardware triggers a sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Trigger {
    /// Fixed GPU-time interval (GA10x and newer).
    GpuTime,
    /// Fixed number of system-clock cycles (Turing, GA100); the clock's frequency converts the period.
    SysClk { hz: f64 },
}

impl Trigger {
    /// The trigger a chip supports (CUPTI docs: GPU-time interval from GA10x on).
    pub fn for_chip(chip: &str, sysclk_hz: f64) -> Trigger {
        if chip.starts_with("TU") || chip == "GA100" {
            Trigger::SysClk { hz: sysclk_hz }
        } else {
            Trigger::GpuTime
        }
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
}

impl Default for PmOptions {
    fn default() -> Self {
        PmOptions { device: 0, interval_s: 1.0 / 60.0, hardware_buffer_bytes: 512 << 20, max_samples: 4096 }
    }
}

/// CUPTI PM sampling of the canonical counters in one PM-sampling group of a chip's map.
pub struct CuptiPmCounters {
    map: CounterMap,
    /// The group sampled: canonical counter → metrics summed.
    group: BTreeMap<String, Vec<String>>,
    /// 0-based index of the group (0 = `[pm]`).
    pass: usize,
    host: HostProfiler,
    obj: *mut sys::CUpti_PmSampling_Object,
    metrics: Vec<CString>,
    counter_data: Vec<u8>,
    next_sample: usize,
    /// Run-clock seconds at CUPTI timestamp `ts0_ns`.
    t0_s: f64,
    ts0_ns: u64,
    trigger: Trigger,
    interval_s: f64,
    running: bool,
}

// SAFETY: the PM-sampling object and host object are used from one thread at a time (the poller owns
// this value); CUPTI does not tie them to the creating thread.
unsafe impl Send for CuptiPmCounters {}

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

/// `cuInit` + `cuptiProfilerInitialize`, with a missing driver as [`Error::NoDriver`].
fn init_target() -> Result<()> {
    load_cupti()?;
    // SAFETY: probes dlopen of libcuda by name.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(Error::NoDriver { detail: "libcuda.so cannot be loaded".into() });
    }
    cudarc::driver::result::init().map_err(|e| Error::NoDriver { detail: format!("cuInit: {e:?}") })?;
    let mut p = sys::CUpti_Profiler_Initialize_Params {
        structSize: size::<sys::CUpti_Profiler_Initialize_Params>(),
        pPriv: ptr::null_mut(),
    };
    // SAFETY: params initialized with their size.
    check("cuptiProfilerInitialize", unsafe { sys::cuptiProfilerInitialize(&mut p) })
}

impl CuptiPmCounters {
    /// Opens PM sampling on `opts.device` for the chip's `pm` map (steps 1–5 of the sequence).
    /// `sysclk_hz` is used on chips that trigger on system-clock cycles.
    pub fn open(opts: &PmOptions, sysclk_hz: f64) -> Result<CuptiPmCounters> {
        Self::open_pass(opts, sysclk_hz, 0)
    }

    /// Opens PM sampling for PM-sampling group `pass` of the chip's map (0 = `[pm]`, k = the k-th
    /// `[[pm_pass]]`), steps 1–5 of the sequence. Application replay opens one per run of the program,
    /// after the previous one is dropped (stop, disable, deinitialize).
    pub fn open_pass(opts: &PmOptions, sysclk_hz: f64, pass: usize) -> Result<CuptiPmCounters> {
        if !(opts.interval_s.is_finite() && opts.interval_s > 0.0) {
            return Err(Error::Invalid(format!(
                "PM sampling interval {} s: give a positive interval",
                opts.interval_s
            )));
        }
        init_target()?;
        let chip = chip_name(opts.device)?;
        let map = CounterMap::builtin(&chip)?;
        let group = map.pm_group(pass)?.clone();
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
                 split that group in models/counters/{}.toml",
                pass + 1,
                chip.to_lowercase()
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
        let trigger = Trigger::for_chip(&chip, sysclk_hz);
        let (mode, interval) = match trigger {
            Trigger::GpuTime => (
                sys::CUpti_PmSampling_TriggerMode::CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL,
                (opts.interval_s * 1e9) as u64,
            ),
            Trigger::SysClk { hz } => (
                sys::CUpti_PmSampling_TriggerMode::CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_SYSCLK_INTERVAL,
                (opts.interval_s * hz) as u64,
            ),
        };
        let mut this = CuptiPmCounters {
            map,
            group,
            pass,
            host,
            obj,
            metrics: names.iter().map(|n| CString::new(n.as_str()).unwrap_or_default()).collect(),
            counter_data: Vec::new(),
            next_sample: 0,
            t0_s: 0.0,
            ts0_ns: 0,
            trigger,
            interval_s: opts.interval_s,
            running: false,
        };
        let mut s = sys::CUpti_PmSampling_SetConfig_Params {
            structSize: size::<sys::CUpti_PmSampling_SetConfig_Params>(),
            pPriv: ptr::null_mut(),
            pPmSamplingObject: obj,
            configSize: config.len(),
            pConfig: config.as_ptr(),
            hardwareBufferSize: opts.hardware_buffer_bytes,
            samplingInterval: interval.max(1),
            triggerMode: mode,
            // The default: when the buffer is full, new samples are dropped (we decode at ~60 Hz, so it
            // does not fill unless polling stalls).
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
                let values = self.host.evaluate(&self.counter_data, i, &self.metrics)?;
                let start_s = self.t0_s + (si.startTimestamp as f64 - self.ts0_ns as f64) / 1e9;
                let end_s = self.t0_s + (si.endTimestamp as f64 - self.ts0_ns as f64) / 1e9;
                let dur = end_s - start_s;
                if dur <= 0.0 {
                    continue;
                }
                let by_name: std::collections::BTreeMap<String, f64> =
                    self.metrics.iter().map(|c| c.to_string_lossy().into_owned()).zip(values).collect();
                let canonical = canonical_of(&self.group, &by_name);
                let rates =
                    self.group.keys().map(|k| canonical.get(k).map_or(f64::NAN, |v| v / dur)).collect();
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

    /// How many PM-sampling groups (application-replay passes) the chip's map has.
    pub fn pass_count(&self) -> usize {
        self.map.pm_groups().len()
    }
}

impl CounterSource for CuptiPmCounters {
    fn names(&self) -> Vec<String> {
        self.group.keys().cloned().collect()
    }

    fn describe(&self) -> String {
        let t = match self.trigger {
            Trigger::GpuTime => "GPU-time interval".to_string(),
            Trigger::SysClk { hz } => format!("system-clock interval at {:.0} MHz", hz / 1e6),
        };
        let pass = match self.map.pm_groups().len() {
            1 => String::new(),
            n => format!(", pass {} of {n}", self.pass + 1),
        };
        format!("CUPTI PM sampling, {}{pass}, {:.2} ms {t}", self.map.chip, self.interval_s * 1e3)
    }

    fn start(&mut self, now_s: f64) -> Result<()> {
        let mut ts = 0u64;
        // SAFETY: writes one u64.
        check("cuptiGetTimestamp", unsafe { sys::cuptiGetTimestamp(&mut ts) })?;
        self.ts0_ns = ts;
        self.t0_s = now_s;
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
}

impl Drop for CuptiPmCounters {
    fn drop(&mut self) {
        if self.running {
            let mut p = sys::CUpti_PmSampling_Stop_Params {
                structSize: size::<sys::CUpti_PmSampling_Stop_Params>(),
                pPriv: ptr::null_mut(),
                pPmSamplingObject: self.obj,
            };
            // SAFETY: started object, stopped once.
            let _ = unsafe { sys::cuptiPmSamplingStop(&mut p) };
        }
        let mut d = sys::CUpti_PmSampling_Disable_Params {
            structSize: size::<sys::CUpti_PmSampling_Disable_Params>(),
            pPriv: ptr::null_mut(),
            pPmSamplingObject: self.obj,
        };
        // SAFETY: object from cuptiPmSamplingEnable, disabled once.
        let _ = unsafe { sys::cuptiPmSamplingDisable(&mut d) };
        // The host object deinitializes in HostProfiler's Drop; then the profiler itself.
        let mut de = sys::CUpti_Profiler_DeInitialize_Params {
            structSize: size::<sys::CUpti_Profiler_DeInitialize_Params>(),
            pPriv: ptr::null_mut(),
        };
        // SAFETY: pairs the cuptiProfilerInitialize of open().
        let _ = unsafe { sys::cuptiProfilerDeInitialize(&mut de) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trigger_follows_the_chip() {
        assert_eq!(Trigger::for_chip("GA102", 1e9), Trigger::GpuTime);
        assert_eq!(Trigger::for_chip("GH100", 1e9), Trigger::GpuTime);
        assert_eq!(Trigger::for_chip("TU102", 1e9), Trigger::SysClk { hz: 1e9 });
        assert_eq!(Trigger::for_chip("GA100", 1e9), Trigger::SysClk { hz: 1e9 });
    }

    /// Without libcuda (our machines) opening PM sampling is a clear no-driver error, not a panic.
    /// Skipped where CUPTI itself is missing (then the loader error is the answer) or a driver exists.
    #[test]
    fn no_driver_is_a_clear_error() {
        if std::path::Path::new("/proc/driver/nvidia").exists() || load_cupti().is_err() {
            return;
        }
        let Err(e) = CuptiPmCounters::open(&PmOptions::default(), 1e9) else { panic!("no GPU here") };
        let e = e.to_string();
        assert!(e.starts_with("no NVIDIA driver"), "{e}");
    }
}
