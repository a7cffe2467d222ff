//! The CUPTI Range Profiler in the collector's own process, on one metric: `gpumodel doctor`'s check
//! that per-kernel totals (`collect --kernel-totals`, which runs the same profiler inside the measured
//! program) can work on this GPU.
//!
//! Sequence (CUPTI guide, "Range Profiling", and its `range_profiling` sample), on the current context:
//! `cuptiProfilerInitialize` → `cuptiRangeProfilerEnable(ctx)` → `cuptiProfilerGetCounterAvailability`
//! (size, then image) → host `cuptiProfilerHostInitialize(RANGE_PROFILER, chip, availability)` → config
//! image → `cuptiRangeProfilerGetCounterDataSize` → `cuptiRangeProfilerCounterDataImageInitialize` →
//! `cuptiRangeProfilerSetConfig(AutoRange, KernelReplay)` → `cuptiRangeProfilerStart` → the kernel →
//! `cuptiRangeProfilerStop` → `cuptiRangeProfilerDecodeData` → `cuptiRangeProfilerGetCounterDataInfo` →
//! `cuptiProfilerHostEvaluateToGpuValues` → `cuptiRangeProfilerDisable` → host deinitialize →
//! `cuptiProfilerDeInitialize` (the last two by their guards' `Drop`, in that order).

use super::host::{HostProfiler, ProfilerKind, check};
use super::pm::{chip_name, init_profiler};
use crate::error::{Error, Result};
use cudarc::cupti::sys;
use std::ffi::{CString, c_char};
use std::ptr;

fn size<T>() -> usize {
    std::mem::size_of::<T>()
}

/// The enabled Range Profiler object; dropping it calls `cuptiRangeProfilerDisable`.
struct Enabled(*mut sys::CUpti_RangeProfiler_Object);

impl Drop for Enabled {
    fn drop(&mut self) {
        let mut d = sys::CUpti_RangeProfiler_Disable_Params {
            structSize: size::<sys::CUpti_RangeProfiler_Disable_Params>(),
            pPriv: ptr::null_mut(),
            pRangeProfilerObject: self.0,
        };
        // SAFETY: the object from cuptiRangeProfilerEnable, disabled once; nothing to do on failure.
        let _ = unsafe { sys::cuptiRangeProfilerDisable(&mut d) };
    }
}

/// Profiles what `launch` runs on the current context of CUDA device `device` with the Range Profiler,
/// one auto range per kernel, for `metric`. Returns the ranges profiled and the first range's value.
pub fn profile_one_metric(
    device: u32,
    metric: &str,
    launch: &mut dyn FnMut() -> Result<()>,
) -> Result<(usize, Option<f64>)> {
    super::loader::load_cupti()?;
    let ctx = cudarc::driver::result::ctx::get_current()
        .map_err(|e| Error::Cuda { call: "cuCtxGetCurrent", message: e.to_string() })?
        .ok_or_else(|| Error::Invalid("the Range Profiler needs a current CUDA context".into()))?;
    // Locals drop in reverse order: the object is disabled first, then the buffers it used are freed, the
    // host object deinitialized and the profiler deinitialized last.
    let _init = init_profiler()?;
    let mut host: Option<HostProfiler> = None;
    let mut config: Vec<u8> = Vec::new();
    let mut counter_data: Vec<u8>;
    let mut e = sys::CUpti_RangeProfiler_Enable_Params {
        structSize: size::<sys::CUpti_RangeProfiler_Enable_Params>(),
        pPriv: ptr::null_mut(),
        ctx: ctx.cast(),
        pRangeProfilerObject: ptr::null_mut(),
    };
    // SAFETY: params initialized with their size; ctx is current.
    check("cuptiRangeProfilerEnable", unsafe { sys::cuptiRangeProfilerEnable(&mut e) })?;
    let enabled = Enabled(e.pRangeProfilerObject);
    let mut a = sys::CUpti_Profiler_GetCounterAvailability_Params {
        structSize: size::<sys::CUpti_Profiler_GetCounterAvailability_Params>(),
        pPriv: ptr::null_mut(),
        ctx: ctx.cast(),
        counterAvailabilityImageSize: 0,
        pCounterAvailabilityImage: ptr::null_mut(),
    };
    // SAFETY: size query with a null image, then the image of that size.
    check("cuptiProfilerGetCounterAvailability", unsafe {
        sys::cuptiProfilerGetCounterAvailability(&mut a)
    })?;
    let mut avail = vec![0u8; a.counterAvailabilityImageSize];
    a.pCounterAvailabilityImage = avail.as_mut_ptr();
    // SAFETY: as above.
    check("cuptiProfilerGetCounterAvailability", unsafe {
        sys::cuptiProfilerGetCounterAvailability(&mut a)
    })?;
    let chip = chip_name(device)?;
    let h = host.insert(HostProfiler::new(&chip, ProfilerKind::Range, Some(&avail))?);
    h.add_metrics(&[metric])?;
    config.extend(h.config_image()?);
    let names = [CString::new(metric).map_err(|_| Error::Invalid(format!("bad metric name '{metric}'")))?];
    let mut ptrs: Vec<*const c_char> = names.iter().map(|c| c.as_ptr()).collect();
    let mut d = sys::CUpti_RangeProfiler_GetCounterDataSize_Params {
        structSize: size::<sys::CUpti_RangeProfiler_GetCounterDataSize_Params>(),
        pPriv: ptr::null_mut(),
        pRangeProfilerObject: enabled.0,
        pMetricNames: ptrs.as_mut_ptr(),
        numMetrics: ptrs.len(),
        maxNumOfRanges: 4,
        maxNumRangeTreeNodes: 4,
        counterDataSize: 0,
    };
    // SAFETY: names alive across the call.
    check("cuptiRangeProfilerGetCounterDataSize", unsafe {
        sys::cuptiRangeProfilerGetCounterDataSize(&mut d)
    })?;
    counter_data = vec![0u8; d.counterDataSize];
    let mut i = sys::CUpti_RangeProfiler_CounterDataImage_Initialize_Params {
        structSize: size::<sys::CUpti_RangeProfiler_CounterDataImage_Initialize_Params>(),
        pPriv: ptr::null_mut(),
        pRangeProfilerObject: enabled.0,
        counterDataSize: counter_data.len(),
        pCounterData: counter_data.as_mut_ptr(),
    };
    // SAFETY: a buffer of the size CUPTI asked for.
    check("cuptiRangeProfilerCounterDataImageInitialize", unsafe {
        sys::cuptiRangeProfilerCounterDataImageInitialize(&mut i)
    })?;
    let mut s = sys::CUpti_RangeProfiler_SetConfig_Params {
        structSize: size::<sys::CUpti_RangeProfiler_SetConfig_Params>(),
        pPriv: ptr::null_mut(),
        pRangeProfilerObject: enabled.0,
        configSize: config.len(),
        pConfig: config.as_ptr(),
        counterDataImageSize: counter_data.len(),
        pCounterDataImage: counter_data.as_mut_ptr(),
        range: sys::CUpti_ProfilerRange::CUPTI_AutoRange,
        replayMode: sys::CUpti_ProfilerReplayMode::CUPTI_KernelReplay,
        maxRangesPerPass: 4,
        numNestingLevels: 1,
        minNestingLevel: 1,
        passIndex: 0,
        targetNestingLevel: 1,
    };
    // SAFETY: config and counter data outlive the profiler object (both dropped after `enabled`).
    check("cuptiRangeProfilerSetConfig", unsafe { sys::cuptiRangeProfilerSetConfig(&mut s) })?;
    let mut st = sys::CUpti_RangeProfiler_Start_Params {
        structSize: size::<sys::CUpti_RangeProfiler_Start_Params>(),
        pPriv: ptr::null_mut(),
        pRangeProfilerObject: enabled.0,
    };
    // SAFETY: configured object.
    check("cuptiRangeProfilerStart", unsafe { sys::cuptiRangeProfilerStart(&mut st) })?;
    let ran = launch();
    let mut stop = sys::CUpti_RangeProfiler_Stop_Params {
        structSize: size::<sys::CUpti_RangeProfiler_Stop_Params>(),
        pPriv: ptr::null_mut(),
        pRangeProfilerObject: enabled.0,
        passIndex: 0,
        targetNestingLevel: 0,
        isAllPassSubmitted: 0,
    };
    // SAFETY: started object, stopped once (also when the launch failed).
    check("cuptiRangeProfilerStop", unsafe { sys::cuptiRangeProfilerStop(&mut stop) })?;
    ran?;
    let mut dec = sys::CUpti_RangeProfiler_DecodeData_Params {
        structSize: size::<sys::CUpti_RangeProfiler_DecodeData_Params>(),
        pPriv: ptr::null_mut(),
        pRangeProfilerObject: enabled.0,
        numOfRangeDropped: 0,
    };
    // SAFETY: stopped object; decodes into the counter data given to SetConfig.
    check("cuptiRangeProfilerDecodeData", unsafe { sys::cuptiRangeProfilerDecodeData(&mut dec) })?;
    let mut info = sys::CUpti_RangeProfiler_GetCounterDataInfo_Params {
        structSize: size::<sys::CUpti_RangeProfiler_GetCounterDataInfo_Params>(),
        pPriv: ptr::null_mut(),
        pCounterDataImage: counter_data.as_ptr(),
        counterDataImageSize: counter_data.len(),
        numTotalRanges: 0,
    };
    // SAFETY: decoded image.
    check("cuptiRangeProfilerGetCounterDataInfo", unsafe {
        sys::cuptiRangeProfilerGetCounterDataInfo(&mut info)
    })?;
    let value =
        if info.numTotalRanges > 0 { h.evaluate(&counter_data, 0, &names)?.first().copied() } else { None };
    drop(enabled);
    Ok((info.numTotalRanges, value))
}
