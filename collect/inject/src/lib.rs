//! # gpumodel-inject — per-kernel counter totals inside the profiled program
//!
//! The CUPTI Range Profiler must run in the process that launches the kernels. The CUDA driver loads
//! this library into a program started with `CUDA_INJECTION64_PATH=/path/libgpumodel_inject.so` and calls
//! its `InitializeInjection` (the mechanism of Nsight Compute and CUPTI's injection samples). It then:
//!
//! 1. subscribes to CUPTI callbacks: context creation (resource domain) and the kernel launches of the
//!    driver API — `cuLaunchKernel`, `cuLaunchKernelEx` (its grid, block and dynamic shared memory are in
//!    the `CUlaunchConfig` it points to) and `cuLaunchCooperativeKernel`, each also in its per-thread
//!    default stream `_ptsz` form ([`LAUNCH_CALLBACKS`]) — on entry, to record each launch's name, grid,
//!    block, registers (`cuFuncGetAttribute(NUM_REGS)`) and shared memory (static + dynamic); calls
//!    `cuptiProfilerInitialize`;
//! 2. on the first context: `cuptiRangeProfilerEnable(ctx)` → `cuptiProfilerGetCounterAvailability(ctx)`
//!    → `cuptiDeviceGetChipName` → host `cuptiProfilerHostInitialize(RANGE_PROFILER, chip, availability)`
//!    with the chip's `range` map plus `gpu__time_duration.sum` → config image →
//!    `cuptiRangeProfilerGetCounterDataSize` → `cuptiRangeProfilerCounterDataImageInitialize` →
//!    `cuptiRangeProfilerSetConfig(AutoRange, KernelReplay)` → `cuptiRangeProfilerStart`;
//! 3. when the profiled context is about to be destroyed (`CONTEXT_DESTROY_STARTING`: `cuCtxDestroy`,
//!    `cudaDeviceReset`, the runtime's teardown) or, if it never is, at process exit — the CUPTI
//!    `range_profiling` sample likewise stops, decodes and disables before it destroys the context, since
//!    the range profiler object belongs to that context: `cuptiRangeProfilerStop` → `cuptiRangeProfilerDecodeData` →
//!    `cuptiRangeProfilerGetCounterDataInfo` → per range `cuptiProfilerHostGetRangeName` and
//!    `cuptiProfilerHostEvaluateToGpuValues` → one CSV row per kernel launch in `GPUMODEL_INJECT_OUT`
//!    (default `gpumodel-kernels.csv`) → `cuptiRangeProfilerDisable` → `cuptiProfilerDeInitialize`.
//!
//! Launches are recorded with their context; only launches of the profiled context become rows (the
//! Range Profiler's auto ranges are that context's launches, in order), launches of other contexts are
//! counted and reported as skipped. A context created after the profiled one was finished is profiled
//! in turn, its rows appended. A callback that panicked poisons the state's mutex: later callbacks carry
//! on with the state and the exit report says so. Everything skipped is said on stderr at the end.
//!
//! Rows: `index, name, grid_x, grid_y, grid_z, block_x, block_y, block_z, registers_per_thread,
//! shared_mem_bytes, duration_s, core_mhz, device, <canonical counters…>` (`core_mhz`: the SM clock
//! during the kernel, `sm__cycles_elapsed.avg.per_second`; `device`: the GPU's name). Kernel replay
//! serializes and replays every kernel, so its timings are not the program's: power is measured in a
//! separate, unprofiled run.
//!
//! Needs a GPU: on our machines only its building and its row format are tested.

use cudarc::cupti::sys;
use gpumodel_collect::cupti::host::{HostProfiler, ProfilerKind};
use gpumodel_collect::cupti::pm::chip_name;
use gpumodel_collect::kernels::ROW_COLUMNS;
use gpumodel_models::counters::{CounterMap, MapKind};
use std::ffi::{CStr, CString, c_void};
use std::io::Write;
use std::ptr;
use std::sync::Mutex;

mod launch;
pub use launch::{LAUNCH_CALLBACKS, LaunchGeometry, LaunchInfo, Launches, launch_geometry};

/// Metric for the kernel's duration (ns), added to the range map.
const DURATION_METRIC: &str = "gpu__time_duration.sum";
/// Metric for the SM clock during the kernel (cycles per second), added to the range map.
const CLOCK_METRIC: &str = "sm__cycles_elapsed.avg.per_second";
/// Ranges (kernel launches) held before the counter data is full.
const MAX_RANGES: usize = 2048;

struct Profiler {
    ctx: cudarc::driver::sys::CUcontext,
    obj: *mut sys::CUpti_RangeProfiler_Object,
    host: HostProfiler,
    map: CounterMap,
    /// The GPU's name (`cuDeviceGetName`).
    device: String,
    metrics: Vec<CString>,
    counter_data: Vec<u8>,
    _config: Vec<u8>,
}

// SAFETY: used under the STATE mutex only.
unsafe impl Send for Profiler {}

struct State {
    launches: Launches,
    profiler: Option<Profiler>,
    errors: Vec<String>,
    /// Rows written so far (a later context's rows are appended after them).
    rows_written: usize,
}

static STATE: Mutex<State> =
    Mutex::new(State { launches: Launches::new(), profiler: None, errors: Vec::new(), rows_written: 0 });

/// Locks `m`, recovering the data when a panicking callback poisoned it; says so once in `note`.
pub fn lock_recovering<'a, T>(m: &'a Mutex<T>, note: &mut Option<String>) -> std::sync::MutexGuard<'a, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => {
            note.get_or_insert_with(|| {
                "a callback panicked earlier; the launches recorded before it are kept, later rows may be \
                 mislabelled"
                    .into()
            });
            poisoned.into_inner()
        }
    }
}

/// Set when a poisoned lock was recovered (reported at exit).
static POISONED: Mutex<Option<String>> = Mutex::new(None);

fn state() -> std::sync::MutexGuard<'static, State> {
    let mut note = None;
    let g = lock_recovering(&STATE, &mut note);
    if let Some(n) = note
        && let Ok(mut p) = POISONED.lock()
    {
        p.get_or_insert(n);
    }
    g
}
fn ok(call: &str, r: sys::CUptiResult) -> Result<(), String> {
    if r == sys::CUptiResult::CUPTI_SUCCESS { Ok(()) } else { Err(format!("{call}: {r:?}")) }
}

fn size<T>() -> usize {
    std::mem::size_of::<T>()
}

fn setup(ctx: cudarc::driver::sys::CUcontext) -> Result<Profiler, String> {
    let mut e = sys::CUpti_RangeProfiler_Enable_Params {
        structSize: size::<sys::CUpti_RangeProfiler_Enable_Params>(),
        pPriv: ptr::null_mut(),
        ctx,
        pRangeProfilerObject: ptr::null_mut(),
    };
    // SAFETY: params initialized with their size; ctx from the context-created callback.
    ok("cuptiRangeProfilerEnable", unsafe { sys::cuptiRangeProfilerEnable(&mut e) })?;
    let obj = e.pRangeProfilerObject;
    let mut a = sys::CUpti_Profiler_GetCounterAvailability_Params {
        structSize: size::<sys::CUpti_Profiler_GetCounterAvailability_Params>(),
        pPriv: ptr::null_mut(),
        ctx,
        counterAvailabilityImageSize: 0,
        pCounterAvailabilityImage: ptr::null_mut(),
    };
    // SAFETY: size query, then the image of that size.
    ok("cuptiProfilerGetCounterAvailability", unsafe { sys::cuptiProfilerGetCounterAvailability(&mut a) })?;
    let mut avail = vec![0u8; a.counterAvailabilityImageSize];
    a.pCounterAvailabilityImage = avail.as_mut_ptr();
    // SAFETY: as above.
    ok("cuptiProfilerGetCounterAvailability", unsafe { sys::cuptiProfilerGetCounterAvailability(&mut a) })?;
    let mut dev: u32 = 0;
    // SAFETY: ctx is a valid context; writes one u32.
    ok("cuptiGetDeviceId", unsafe { sys::cuptiGetDeviceId(ctx, &mut dev) })?;
    let chip = chip_name(dev).map_err(|e| e.to_string())?;
    let device = device_name(dev);
    let map = CounterMap::builtin(&chip).map_err(|e| e.to_string())?;
    let mut names = map.metrics(MapKind::Range);
    names.push(DURATION_METRIC.into());
    names.push(CLOCK_METRIC.into());
    let mut host = HostProfiler::new(&chip, ProfilerKind::Range, Some(&avail)).map_err(|e| e.to_string())?;
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    host.add_metrics(&refs).map_err(|e| e.to_string())?;
    let config = host.config_image().map_err(|e| e.to_string())?;
    let metrics: Vec<CString> = names.iter().filter_map(|n| CString::new(n.as_str()).ok()).collect();
    let mut ptrs: Vec<*const std::ffi::c_char> = metrics.iter().map(|c| c.as_ptr()).collect();
    let mut d = sys::CUpti_RangeProfiler_GetCounterDataSize_Params {
        structSize: size::<sys::CUpti_RangeProfiler_GetCounterDataSize_Params>(),
        pPriv: ptr::null_mut(),
        pRangeProfilerObject: obj,
        pMetricNames: ptrs.as_mut_ptr(),
        numMetrics: ptrs.len(),
        maxNumOfRanges: MAX_RANGES,
        maxNumRangeTreeNodes: MAX_RANGES as u32,
        counterDataSize: 0,
    };
    // SAFETY: metric names alive across the call.
    ok("cuptiRangeProfilerGetCounterDataSize", unsafe { sys::cuptiRangeProfilerGetCounterDataSize(&mut d) })?;
    let mut counter_data = vec![0u8; d.counterDataSize];
    let mut i = sys::CUpti_RangeProfiler_CounterDataImage_Initialize_Params {
        structSize: size::<sys::CUpti_RangeProfiler_CounterDataImage_Initialize_Params>(),
        pPriv: ptr::null_mut(),
        pRangeProfilerObject: obj,
        counterDataSize: counter_data.len(),
        pCounterData: counter_data.as_mut_ptr(),
    };
    // SAFETY: buffer of the size CUPTI asked for.
    ok("cuptiRangeProfilerCounterDataImageInitialize", unsafe {
        sys::cuptiRangeProfilerCounterDataImageInitialize(&mut i)
    })?;
    let mut s = sys::CUpti_RangeProfiler_SetConfig_Params {
        structSize: size::<sys::CUpti_RangeProfiler_SetConfig_Params>(),
        pPriv: ptr::null_mut(),
        pRangeProfilerObject: obj,
        configSize: config.len(),
        pConfig: config.as_ptr(),
        counterDataImageSize: counter_data.len(),
        pCounterDataImage: counter_data.as_mut_ptr(),
        range: sys::CUpti_ProfilerRange::CUPTI_AutoRange,
        replayMode: sys::CUpti_ProfilerReplayMode::CUPTI_KernelReplay,
        maxRangesPerPass: MAX_RANGES,
        numNestingLevels: 1,
        minNestingLevel: 1,
        passIndex: 0,
        targetNestingLevel: 1,
    };
    // SAFETY: config and counter data stay alive in the Profiler (moved, heap buffers do not move).
    ok("cuptiRangeProfilerSetConfig", unsafe { sys::cuptiRangeProfilerSetConfig(&mut s) })?;
    let mut st = sys::CUpti_RangeProfiler_Start_Params {
        structSize: size::<sys::CUpti_RangeProfiler_Start_Params>(),
        pPriv: ptr::null_mut(),
        pRangeProfilerObject: obj,
    };
    // SAFETY: configured object.
    ok("cuptiRangeProfilerStart", unsafe { sys::cuptiRangeProfilerStart(&mut st) })?;
    Ok(Profiler { ctx, obj, host, map, device, metrics, counter_data, _config: config })
}

/// The name of CUDA device `ordinal` (`NVIDIA A100-SXM4-40GB`), empty when the driver does not say.
fn device_name(ordinal: u32) -> String {
    let mut dev: cudarc::driver::sys::CUdevice = 0;
    let mut buf = [0 as std::ffi::c_char; 256];
    // SAFETY: writes one CUdevice; then at most `buf.len()` bytes, NUL-terminated, into `buf`.
    let ok = unsafe {
        cudarc::driver::sys::cuDeviceGet(&mut dev, ordinal as i32)
            == cudarc::driver::sys::CUresult::CUDA_SUCCESS
            && cudarc::driver::sys::cuDeviceGetName(buf.as_mut_ptr(), buf.len() as i32, dev)
                == cudarc::driver::sys::CUresult::CUDA_SUCCESS
    };
    if !ok {
        return String::new();
    }
    // SAFETY: the driver wrote a NUL-terminated string into `buf`.
    unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned()
}

/// Turns one range's metric values into a CSV row, on the GPU named `device`.
pub fn row(
    index: usize,
    launch: &LaunchInfo,
    device: &str,
    map: &CounterMap,
    values: &[(String, f64)],
) -> String {
    let by_name: std::collections::BTreeMap<String, f64> = values.iter().cloned().collect();
    let canonical = map.canonical(MapKind::Range, &by_name);
    let duration_s = by_name.get(DURATION_METRIC).map_or(f64::NAN, |ns| ns * 1e-9);
    let core_mhz = by_name.get(CLOCK_METRIC).map_or(f64::NAN, |hz| hz * 1e-6);
    let mut cells = vec![
        index.to_string(),
        format!("\"{}\"", launch.name.replace('"', "'")),
        launch.grid[0].to_string(),
        launch.grid[1].to_string(),
        launch.grid[2].to_string(),
        launch.block[0].to_string(),
        launch.block[1].to_string(),
        launch.block[2].to_string(),
        launch.registers_per_thread.to_string(),
        launch.shared_mem_bytes.to_string(),
        format!("{duration_s}"),
        format!("{core_mhz}"),
        format!("\"{}\"", device.replace('"', "'")),
    ];
    for k in map.range.keys() {
        cells.push(canonical.get(k).map_or("nan".into(), |v| format!("{v}")));
    }
    cells.join(",")
}

/// The CSV header matching [`row`].
pub fn header(map: &CounterMap) -> String {
    let mut h: Vec<String> = ROW_COLUMNS.iter().map(|s| s.to_string()).collect();
    h.extend(map.range.keys().cloned());
    h.join(",")
}

/// Stop → decode → write rows → disable, for the profiled context (before it is destroyed). Rows are
/// appended after `first_row` rows already written by an earlier context. Returns the rows written.
fn finish_profiler(p: &mut Profiler, launches: &[LaunchInfo], first_row: usize) -> Result<usize, String> {
    let mut stop = sys::CUpti_RangeProfiler_Stop_Params {
        structSize: size::<sys::CUpti_RangeProfiler_Stop_Params>(),
        pPriv: ptr::null_mut(),
        pRangeProfilerObject: p.obj,
        passIndex: 0,
        targetNestingLevel: 0,
        isAllPassSubmitted: 0,
    };
    // SAFETY: started object.
    ok("cuptiRangeProfilerStop", unsafe { sys::cuptiRangeProfilerStop(&mut stop) })?;
    let mut dec = sys::CUpti_RangeProfiler_DecodeData_Params {
        structSize: size::<sys::CUpti_RangeProfiler_DecodeData_Params>(),
        pPriv: ptr::null_mut(),
        pRangeProfilerObject: p.obj,
        numOfRangeDropped: 0,
    };
    // SAFETY: stopped object; decodes into the counter data given to SetConfig.
    ok("cuptiRangeProfilerDecodeData", unsafe { sys::cuptiRangeProfilerDecodeData(&mut dec) })?;
    let mut info = sys::CUpti_RangeProfiler_GetCounterDataInfo_Params {
        structSize: size::<sys::CUpti_RangeProfiler_GetCounterDataInfo_Params>(),
        pPriv: ptr::null_mut(),
        pCounterDataImage: p.counter_data.as_ptr(),
        counterDataImageSize: p.counter_data.len(),
        numTotalRanges: 0,
    };
    // SAFETY: decoded image.
    ok("cuptiRangeProfilerGetCounterDataInfo", unsafe {
        sys::cuptiRangeProfilerGetCounterDataInfo(&mut info)
    })?;
    let out = std::env::var("GPUMODEL_INJECT_OUT").unwrap_or_else(|_| "gpumodel-kernels.csv".into());
    let mut f = if first_row == 0 {
        std::fs::File::create(&out)
    } else {
        std::fs::OpenOptions::new().append(true).open(&out)
    }
    .map_err(|e| format!("{out}: {e}"))?;
    if first_row == 0 {
        writeln!(f, "{}", header(&p.map)).map_err(|e| format!("{out}: {e}"))?;
    }
    let delim = CString::new("/").unwrap_or_default();
    for r in 0..info.numTotalRanges {
        let mut n = sys::CUpti_Profiler_Host_GetRangeName_Params {
            structSize: size::<sys::CUpti_Profiler_Host_GetRangeName_Params>(),
            pPriv: ptr::null_mut(),
            pCounterDataImage: p.counter_data.as_ptr(),
            counterDataImageSize: p.counter_data.len(),
            rangeIndex: r,
            delimiter: delim.as_ptr(),
            pRangeName: ptr::null(),
        };
        // SAFETY: r < numTotalRanges.
        ok("cuptiProfilerHostGetRangeName", unsafe { sys::cuptiProfilerHostGetRangeName(&mut n) })?;
        let range_name = if n.pRangeName.is_null() {
            String::new()
        } else {
            // SAFETY: CUPTI returns a NUL-terminated string.
            unsafe { CStr::from_ptr(n.pRangeName) }.to_string_lossy().into_owned()
        };
        let values = p.host.evaluate(&p.counter_data, r, &p.metrics).map_err(|e| e.to_string())?;
        let named: Vec<(String, f64)> =
            p.metrics.iter().map(|c| c.to_string_lossy().into_owned()).zip(values).collect();
        // Auto ranges follow the launches in order; the range name is the kernel's when no launch was seen.
        let launch =
            launches.get(r).cloned().unwrap_or(LaunchInfo { name: range_name, ..LaunchInfo::default() });
        writeln!(f, "{}", row(first_row + r, &launch, &p.device, &p.map, &named))
            .map_err(|e| format!("{out}: {e}"))?;
    }
    if dec.numOfRangeDropped > 0 {
        eprintln!(
            "gpumodel-inject: {} kernel launches dropped (more than {MAX_RANGES} in one context): they have no row",
            dec.numOfRangeDropped
        );
    }
    if launches.len() != info.numTotalRanges {
        eprintln!(
            "gpumodel-inject: {} launches recorded but {} ranges profiled in this context: rows past the shorter \
             list carry the range name only",
            launches.len(),
            info.numTotalRanges
        );
    }
    let mut dis = sys::CUpti_RangeProfiler_Disable_Params {
        structSize: size::<sys::CUpti_RangeProfiler_Disable_Params>(),
        pPriv: ptr::null_mut(),
        pRangeProfilerObject: p.obj,
    };
    // SAFETY: enabled object, disabled once.
    ok("cuptiRangeProfilerDisable", unsafe { sys::cuptiRangeProfilerDisable(&mut dis) })?;
    Ok(info.numTotalRanges)
}

/// Finishes the profiled context's ranges (context destruction or exit); errors are kept for the report.
fn finish(st: &mut State) {
    if let Some(mut p) = st.profiler.take() {
        let launches = st.launches.take_for(p.ctx as usize);
        match finish_profiler(&mut p, &launches, st.rows_written) {
            Ok(n) => st.rows_written += n,
            Err(e) => st.errors.push(e),
        }
    }
}

extern "C" fn at_exit() {
    let mut st = state();
    finish(&mut st);
    let skipped = st.launches.skipped();
    if skipped > 0 {
        eprintln!(
            "gpumodel-inject: {skipped} kernel launches in contexts that were not profiled (only one context is \
             profiled at a time): they have no row"
        );
    }
    if let Ok(p) = POISONED.lock()
        && let Some(n) = p.as_ref()
    {
        eprintln!("gpumodel-inject: {n}");
    }
    for e in &st.errors {
        eprintln!("gpumodel-inject: {e}");
    }
    let mut de = sys::CUpti_Profiler_DeInitialize_Params {
        structSize: size::<sys::CUpti_Profiler_DeInitialize_Params>(),
        pPriv: ptr::null_mut(),
    };
    // SAFETY: pairs cuptiProfilerInitialize.
    let _ = unsafe { sys::cuptiProfilerDeInitialize(&mut de) };
}

unsafe extern "C" {
    fn atexit(cb: extern "C" fn()) -> i32;
}

unsafe extern "C" fn callback(
    _: *mut c_void,
    domain: sys::CUpti_CallbackDomain,
    cbid: sys::CUpti_CallbackId,
    data: *const c_void,
) {
    let mut st = state();
    if domain == sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_RESOURCE
        && cbid == sys::CUpti_CallbackIdResource::CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING as u32
    {
        // SAFETY: the resource domain passes CUpti_ResourceData.
        let ctx = unsafe { (*(data as *const sys::CUpti_ResourceData)).context };
        if st.profiler.as_ref().is_some_and(|p| p.ctx == ctx) {
            finish(&mut st);
        }
        return;
    }
    if domain == sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_RESOURCE
        && cbid == sys::CUpti_CallbackIdResource::CUPTI_CBID_RESOURCE_CONTEXT_CREATED as u32
    {
        if st.profiler.is_none() {
            // SAFETY: the resource domain passes CUpti_ResourceData.
            let ctx = unsafe { (*(data as *const sys::CUpti_ResourceData)).context };
            match setup(ctx) {
                Ok(p) => st.profiler = Some(p),
                Err(e) => st.errors.push(e),
            }
        }
        return;
    }
    if domain != sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_DRIVER_API {
        return;
    }
    // SAFETY: the driver-API domain passes CUpti_CallbackData.
    let cb = unsafe { &*(data as *const sys::CUpti_CallbackData) };
    if cb.callbackSite != sys::CUpti_ApiCallbackSite::CUPTI_API_ENTER {
        return;
    }
    // SAFETY: at API entry CUPTI passes the parameter struct of the call named by `cbid`.
    let Some(geometry) = (unsafe { launch_geometry(cbid, cb.functionParams) }) else { return };
    let name = if cb.symbolName.is_null() {
        String::new()
    } else {
        // SAFETY: NUL-terminated symbol name owned by the driver.
        unsafe { CStr::from_ptr(cb.symbolName) }.to_string_lossy().into_owned()
    };
    let attr = |a: cudarc::driver::sys::CUfunction_attribute| {
        let mut v: i32 = 0;
        // SAFETY: f is the launched function; v receives one int.
        let r = unsafe { cudarc::driver::sys::cuFuncGetAttribute(&mut v, a, geometry.function) };
        if r == cudarc::driver::sys::CUresult::CUDA_SUCCESS { v.max(0) as u32 } else { 0 }
    };
    let regs = attr(cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS);
    let smem = attr(cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
    st.launches.record(cb.context as usize, geometry.launch(name, regs, smem));
}

/// Called by the CUDA driver when `CUDA_INJECTION64_PATH` names this library. Returns 1 on success.
#[unsafe(no_mangle)]
pub extern "C" fn InitializeInjection() -> i32 {
    if let Err(e) = gpumodel_collect::cupti::loader::load_cupti() {
        eprintln!("gpumodel-inject: {e}");
        return 0;
    }
    let mut sub: sys::CUpti_SubscriberHandle = ptr::null_mut();
    // SAFETY: registers a callback with static lifetime.
    let r = unsafe { sys::cuptiSubscribe(&mut sub, Some(callback), ptr::null_mut()) };
    let steps = ok("cuptiSubscribe", r)
        .and_then(|_| {
            // SAFETY: valid subscriber.
            ok("cuptiEnableCallback", unsafe {
                sys::cuptiEnableCallback(
                    1,
                    sub,
                    sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_RESOURCE,
                    sys::CUpti_CallbackIdResource::CUPTI_CBID_RESOURCE_CONTEXT_CREATED as u32,
                )
            })
        })
        .and_then(|_| {
            // SAFETY: valid subscriber.
            ok("cuptiEnableCallback", unsafe {
                sys::cuptiEnableCallback(
                    1,
                    sub,
                    sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_RESOURCE,
                    sys::CUpti_CallbackIdResource::CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING as u32,
                )
            })
        })
        .and_then(|_| {
            for cbid in LAUNCH_CALLBACKS {
                // SAFETY: valid subscriber.
                ok("cuptiEnableCallback", unsafe {
                    sys::cuptiEnableCallback(
                        1,
                        sub,
                        sys::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_DRIVER_API,
                        cbid as u32,
                    )
                })?;
            }
            Ok(())
        })
        .and_then(|_| {
            let mut p = sys::CUpti_Profiler_Initialize_Params {
                structSize: size::<sys::CUpti_Profiler_Initialize_Params>(),
                pPriv: ptr::null_mut(),
            };
            // SAFETY: params initialized with their size.
            ok("cuptiProfilerInitialize", unsafe { sys::cuptiProfilerInitialize(&mut p) })
        });
    if let Err(e) = steps {
        eprintln!("gpumodel-inject: {e}");
        return 0;
    }
    // SAFETY: registers a plain extern "C" function.
    unsafe { atexit(at_exit) };
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panicked callback poisons the mutex; later callbacks still get the state,
    /// and the poisoning is noted for the exit report instead of every later launch being lost silently.
    #[test]
    fn a_poisoned_state_is_recovered_and_reported() {
        let m = std::sync::Arc::new(Mutex::new(vec![1]));
        let m2 = m.clone();
        let _ = std::thread::spawn(move || {
            let _g = m2.lock().unwrap();
            panic!("callback panicked");
        })
        .join();
        assert!(m.is_poisoned());
        let mut note = None;
        lock_recovering(&m, &mut note).push(2);
        assert_eq!(*lock_recovering(&m, &mut note), vec![1, 2]);
        assert!(note.unwrap().contains("callback panicked earlier"));
    }

    #[test]
    fn rows_match_the_header() {
        let map = CounterMap::builtin("GA102").unwrap();
        let launch = LaunchInfo {
            name: "k".into(),
            grid: [2, 1, 1],
            block: [64, 1, 1],
            registers_per_thread: 32,
            shared_mem_bytes: 0,
        };
        let values = vec![
            ("smsp__inst_executed.sum".to_string(), 100.0),
            (DURATION_METRIC.to_string(), 2500.0),
            (CLOCK_METRIC.to_string(), 1.41e9),
        ];
        let r = row(0, &launch, "NVIDIA A100-SXM4-40GB", &map, &values);
        assert_eq!(r.split(',').count(), header(&map).split(',').count());
        assert!(r.starts_with("0,\"k\",2,1,1,64,1,1,32,0,0.0000025,1410,\"NVIDIA A100-SXM4-40GB\","), "{r}");
        let h = header(&map);
        let col = h.split(',').position(|c| c == "inst_executed").unwrap();
        assert_eq!(r.split(',').nth(col), Some("100"));
    }

    /// The scripted GPU's rows (`collect --kernel-totals` under `GPUMODEL_FAKE_GPU=1`) are this library's
    /// rows on a GA100: the same header, and a row of the same cells.
    #[test]
    fn scripted_rows_are_rows_of_this_library() {
        use std::collections::BTreeMap;
        let map = CounterMap::builtin("GA100").unwrap();
        let text = gpumodel_collect::kernels::scripted_rows().unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(lines[0], header(&map));
        let dev = gpumodel_collect::suite::FakeSuiteDevice::new();
        let work = dev.app_work();
        let l = gpumodel_collect::suite::FakeSuiteDevice::APP_LAUNCH;
        let launch = LaunchInfo {
            name: gpumodel_collect::suite::FakeSuiteDevice::APP_KERNEL.into(),
            grid: l.grid,
            block: l.block,
            registers_per_thread: l.registers_per_thread,
            shared_mem_bytes: l.shared_mem_per_block,
        };
        // Each canonical counter as the metrics the profiler reports: the first metric holds its total
        // (in thread instructions for a thread-level metric), the others zero.
        let mut values: Vec<(String, f64)> = Vec::new();
        for (c, ms) in &map.range {
            let unit: BTreeMap<String, f64> =
                ms.iter().enumerate().map(|(i, m)| (m.clone(), if i == 0 { 1.0 } else { 0.0 })).collect();
            let per_unit = map.canonical(MapKind::Range, &unit)[c];
            for (i, m) in ms.iter().enumerate() {
                values.push((m.clone(), if i == 0 { work.counters[c] / per_unit } else { 0.0 }));
            }
        }
        values.push((DURATION_METRIC.into(), dev.true_time(&work, dev.default_clocks) * 1e9));
        values.push((CLOCK_METRIC.into(), dev.default_clocks.core_mhz * 1e6));
        let expected = row(0, &launch, &dev.info.name, &map, &values);
        let cells = |r: &str| -> Vec<String> { r.split(',').map(str::to_string).collect() };
        let (got, want) = (cells(lines[1]), cells(&expected));
        assert_eq!(got.len(), want.len(), "{}\n{expected}", lines[1]);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            match (g.parse::<f64>(), w.parse::<f64>()) {
                (Ok(a), Ok(b)) => assert!((a - b).abs() <= 1e-9 * b.abs(), "column {i}: {g} vs {w}"),
                _ => assert_eq!(g, w, "column {i}"),
            }
        }
    }
}
