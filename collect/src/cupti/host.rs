//! The CUPTI Profiler Host API (CUPTI 12.6+): which metrics a chip has for a profiler type, config
//! images for a metric set, and how many passes a set needs. It runs on the host alone, without a GPU,
//! so tests check the counter maps against CUPTI's own metric database.
//!
//! Call sequence (CUPTI docs, "Profiler Host API"; samples `pm_sampling`, `range_profiling`):
//! `cuptiProfilerHostInitialize(profilerType, chipName, counterAvailabilityImage)` →
//! `cuptiProfilerHostGetBaseMetrics` / `cuptiProfilerHostConfigAddMetrics` →
//! `cuptiProfilerHostGetConfigImageSize` → `cuptiProfilerHostGetConfigImage` →
//! `cuptiProfilerHostGetNumOfPasses` → `cuptiProfilerHostDeinitialize`.
//! The counter-availability image is optional on the host (null checks against the chip's full metric
//! set); on a real GPU, pass the image from `cuptiPmSamplingGetCounterAvailability` so the check reflects
//! what that device allows.

use super::loader::load_cupti;
use crate::error::{Error, Result};
use cudarc::cupti::sys;
use std::ffi::{CStr, CString, c_char};
use std::ptr;

/// The two profiler types of the host API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfilerKind {
    /// Range Profiler (per-kernel totals, replay allowed: may need several passes).
    Range,
    /// PM sampling (a time series of the whole device; must fit one pass).
    PmSampling,
}

impl ProfilerKind {
    fn raw(self) -> sys::CUpti_ProfilerType {
        match self {
            ProfilerKind::Range => sys::CUpti_ProfilerType::CUPTI_PROFILER_TYPE_RANGE_PROFILER,
            ProfilerKind::PmSampling => sys::CUpti_ProfilerType::CUPTI_PROFILER_TYPE_PM_SAMPLING,
        }
    }

    /// Name as users read it.
    pub fn name(self) -> &'static str {
        match self {
            ProfilerKind::Range => "the range profiler",
            ProfilerKind::PmSampling => "PM sampling",
        }
    }
}

/// CUPTI's message for a result code.
pub(crate) fn result_string(r: sys::CUptiResult) -> String {
    let mut s: *const c_char = ptr::null();
    // SAFETY: cuptiGetResultString writes a pointer to a static string.
    let ok = unsafe { sys::cuptiGetResultString(r, &mut s) };
    if ok == sys::CUptiResult::CUPTI_SUCCESS && !s.is_null() {
        // SAFETY: non-null, NUL-terminated static string owned by CUPTI.
        unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
    } else {
        format!("{r:?}")
    }
}

/// Turns a CUPTI result into our error; restricted counters get their own, actionable variant.
pub(crate) fn check(call: &'static str, r: sys::CUptiResult) -> Result<()> {
    match r {
        sys::CUptiResult::CUPTI_SUCCESS => Ok(()),
        sys::CUptiResult::CUPTI_ERROR_INSUFFICIENT_PRIVILEGES => Err(Error::InsufficientPrivileges),
        _ => Err(Error::Cupti { call, code: r as u32, message: result_string(r) }),
    }
}

/// The chips this libnvperf_host knows (e.g. "TU102", "GA100", "GH100").
pub fn supported_chips() -> Result<Vec<String>> {
    load_cupti()?;
    let mut p = sys::CUpti_Profiler_Host_GetSupportedChips_Params {
        structSize: std::mem::size_of::<sys::CUpti_Profiler_Host_GetSupportedChips_Params>(),
        pPriv: ptr::null_mut(),
        numChips: 0,
        ppChipNames: ptr::null(),
    };
    // SAFETY: params are fully initialized with their struct size, as the API requires.
    check("cuptiProfilerHostGetSupportedChips", unsafe { sys::cuptiProfilerHostGetSupportedChips(&mut p) })?;
    let mut out = Vec::with_capacity(p.numChips);
    for i in 0..p.numChips {
        // SAFETY: CUPTI returns an array of numChips static C strings.
        let s = unsafe { CStr::from_ptr(*p.ppChipNames.add(i)) };
        out.push(s.to_string_lossy().into_owned());
    }
    Ok(out)
}

/// A host object for one chip and profiler type.
pub struct HostProfiler {
    obj: *mut sys::CUpti_Profiler_Host_Object,
    chip: String,
    kind: ProfilerKind,
    added: Vec<String>,
}

// SAFETY: the host object is plain host memory owned by this value; CUPTI does not tie it to a thread.
unsafe impl Send for HostProfiler {}

impl HostProfiler {
    /// `cuptiProfilerHostInitialize` for `chip` (e.g. "GA102"); `availability` is the device's counter
    /// availability image when profiling a real GPU.
    pub fn new(chip: &str, kind: ProfilerKind, availability: Option<&[u8]>) -> Result<HostProfiler> {
        load_cupti()?;
        let c_chip = CString::new(chip).map_err(|_| Error::Invalid(format!("bad chip name '{chip}'")))?;
        let mut p = sys::CUpti_Profiler_Host_Initialize_Params {
            structSize: std::mem::size_of::<sys::CUpti_Profiler_Host_Initialize_Params>(),
            pPriv: ptr::null_mut(),
            profilerType: kind.raw(),
            pChipName: c_chip.as_ptr(),
            pCounterAvailabilityImage: availability.map_or(ptr::null(), |a| a.as_ptr()),
            pHostObject: ptr::null_mut(),
        };
        // SAFETY: params initialized with struct size; strings outlive the call.
        let r = unsafe { sys::cuptiProfilerHostInitialize(&mut p) };
        if r != sys::CUptiResult::CUPTI_SUCCESS {
            let known = supported_chips().map(|c| c.join(", ")).unwrap_or_default();
            return Err(Error::Invalid(format!(
                "CUPTI cannot profile chip '{chip}' ({}); known chips: {known}",
                result_string(r)
            )));
        }
        Ok(HostProfiler { obj: p.pHostObject, chip: chip.to_string(), kind, added: Vec::new() })
    }

    /// Chip name.
    pub fn chip(&self) -> &str {
        &self.chip
    }

    /// Base metrics of one type (counter, ratio, throughput) on this chip for this profiler type.
    /// Collectable names are a base metric plus a rollup/submetric suffix (`.sum`, `.avg.per_second`, …).
    pub fn base_metrics(&self, metric_type: sys::CUpti_MetricType) -> Result<Vec<String>> {
        let mut p = sys::CUpti_Profiler_Host_GetBaseMetrics_Params {
            structSize: std::mem::size_of::<sys::CUpti_Profiler_Host_GetBaseMetrics_Params>(),
            pPriv: ptr::null_mut(),
            pHostObject: self.obj,
            metricType: metric_type,
            ppMetricNames: ptr::null_mut(),
            numMetrics: 0,
        };
        // SAFETY: valid host object; CUPTI fills a pointer to numMetrics C strings it owns.
        check("cuptiProfilerHostGetBaseMetrics", unsafe { sys::cuptiProfilerHostGetBaseMetrics(&mut p) })?;
        let mut out = Vec::with_capacity(p.numMetrics);
        for i in 0..p.numMetrics {
            // SAFETY: see above.
            let s = unsafe { CStr::from_ptr(*p.ppMetricNames.add(i)) };
            out.push(s.to_string_lossy().into_owned());
        }
        Ok(out)
    }

    /// All base metrics (counters, ratios, throughputs).
    pub fn all_base_metrics(&self) -> Result<Vec<String>> {
        let mut v = Vec::new();
        for t in [
            sys::CUpti_MetricType::CUPTI_METRIC_TYPE_COUNTER,
            sys::CUpti_MetricType::CUPTI_METRIC_TYPE_RATIO,
            sys::CUpti_MetricType::CUPTI_METRIC_TYPE_THROUGHPUT,
        ] {
            v.extend(self.base_metrics(t)?);
        }
        Ok(v)
    }

    /// `cuptiProfilerHostConfigAddMetrics`: adds full metric names (with rollup) to the configuration,
    /// in one call (each call is its own request: metrics added call by call are scheduled apart and
    /// count as separate passes). A name the chip does not have for this profiler type is
    /// [`Error::MissingMetric`], found by trying the names one by one on a scratch host object.
    pub fn add_metrics(&mut self, metrics: &[&str]) -> Result<()> {
        let c: Vec<CString> = metrics
            .iter()
            .map(|m| CString::new(*m).map_err(|_| Error::Invalid(format!("bad metric name '{m}'"))))
            .collect::<Result<_>>()?;
        let mut names: Vec<*const c_char> = c.iter().map(|s| s.as_ptr()).collect();
        let mut p = sys::CUpti_Profiler_Host_ConfigAddMetrics_Params {
            structSize: std::mem::size_of::<sys::CUpti_Profiler_Host_ConfigAddMetrics_Params>(),
            pPriv: ptr::null_mut(),
            pHostObject: self.obj,
            ppMetricNames: names.as_mut_ptr(),
            numMetrics: names.len(),
        };
        // SAFETY: valid host object; the name array lives across the call.
        let r = unsafe { sys::cuptiProfilerHostConfigAddMetrics(&mut p) };
        if r == sys::CUptiResult::CUPTI_SUCCESS {
            self.added.extend(metrics.iter().map(|m| m.to_string()));
            return Ok(());
        }
        if metrics.len() > 1 {
            for m in metrics {
                HostProfiler::new(&self.chip, self.kind, None)?.add_metrics(&[m])?;
            }
        }
        Err(Error::MissingMetric {
            metric: metrics.join(", "),
            chip: self.chip.clone(),
            profiler: self.kind.name().into(),
            file: self.chip.to_lowercase(),
        })
    }

    /// Metrics added so far.
    pub fn metrics(&self) -> &[String] {
        &self.added
    }

    /// The config image of the metrics added so far.
    pub fn config_image(&self) -> Result<Vec<u8>> {
        let mut s = sys::CUpti_Profiler_Host_GetConfigImageSize_Params {
            structSize: std::mem::size_of::<sys::CUpti_Profiler_Host_GetConfigImageSize_Params>(),
            pPriv: ptr::null_mut(),
            pHostObject: self.obj,
            configImageSize: 0,
        };
        // SAFETY: valid host object.
        check("cuptiProfilerHostGetConfigImageSize", unsafe {
            sys::cuptiProfilerHostGetConfigImageSize(&mut s)
        })?;
        let mut image = vec![0u8; s.configImageSize];
        let mut p = sys::CUpti_Profiler_Host_GetConfigImage_Params {
            structSize: std::mem::size_of::<sys::CUpti_Profiler_Host_GetConfigImage_Params>(),
            pPriv: ptr::null_mut(),
            pHostObject: self.obj,
            configImageSize: image.len(),
            pConfigImage: image.as_mut_ptr(),
        };
        // SAFETY: buffer of the size CUPTI asked for.
        check("cuptiProfilerHostGetConfigImage", unsafe { sys::cuptiProfilerHostGetConfigImage(&mut p) })?;
        Ok(image)
    }

    /// Passes the metrics added so far need (`cuptiProfilerHostGetNumOfPasses` on their config image).
    pub fn num_passes(&self) -> Result<usize> {
        let mut image = self.config_image()?;
        num_passes(&mut image)
    }

    /// Evaluates `metrics` for range/sample `index` of a decoded counter-data image.
    pub fn evaluate(&self, counter_data: &[u8], index: usize, metrics: &[CString]) -> Result<Vec<f64>> {
        let mut names: Vec<*const c_char> = metrics.iter().map(|c| c.as_ptr()).collect();
        let mut values = vec![0f64; metrics.len()];
        let mut p = sys::CUpti_Profiler_Host_EvaluateToGpuValues_Params {
            structSize: std::mem::size_of::<sys::CUpti_Profiler_Host_EvaluateToGpuValues_Params>(),
            pPriv: ptr::null_mut(),
            pHostObject: self.obj,
            pCounterDataImage: counter_data.as_ptr(),
            counterDataImageSize: counter_data.len(),
            rangeIndex: index,
            ppMetricNames: names.as_mut_ptr(),
            numMetrics: names.len(),
            pMetricValues: values.as_mut_ptr(),
        };
        // SAFETY: arrays sized numMetrics, image alive across the call.
        check("cuptiProfilerHostEvaluateToGpuValues", unsafe {
            sys::cuptiProfilerHostEvaluateToGpuValues(&mut p)
        })?;
        Ok(values)
    }
}

/// Passes a config image needs.
pub fn num_passes(image: &mut [u8]) -> Result<usize> {
    let mut p = sys::CUpti_Profiler_Host_GetNumOfPasses_Params {
        structSize: std::mem::size_of::<sys::CUpti_Profiler_Host_GetNumOfPasses_Params>(),
        pPriv: ptr::null_mut(),
        configImageSize: image.len(),
        pConfigImage: image.as_mut_ptr(),
        numOfPasses: 0,
    };
    // SAFETY: image buffer alive across the call.
    check("cuptiProfilerHostGetNumOfPasses", unsafe { sys::cuptiProfilerHostGetNumOfPasses(&mut p) })?;
    Ok(p.numOfPasses)
}

impl Drop for HostProfiler {
    fn drop(&mut self) {
        let mut p = sys::CUpti_Profiler_Host_Deinitialize_Params {
            structSize: std::mem::size_of::<sys::CUpti_Profiler_Host_Deinitialize_Params>(),
            pPriv: ptr::null_mut(),
            pHostObject: self.obj,
        };
        // SAFETY: the object came from cuptiProfilerHostInitialize and is freed once.
        let _ = unsafe { sys::cuptiProfilerHostDeinitialize(&mut p) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn struct_sizes_match_the_headers() {
        // The CUPTI headers' *_STRUCT_SIZE macros, as cudarc exports them.
        assert_eq!(
            std::mem::size_of::<sys::CUpti_Profiler_Host_Initialize_Params>(),
            sys::Profiler_Host_Initialize_Params_STRUCT_SIZE as usize
        );
    }
}
