//! How PM samples are timed: the trigger a chip supports and its interval units, the mapping of sample
//! timestamps onto the run clock, and the samples lost to a full hardware buffer. Pure logic beside
//! [`super::pm`], which drives CUPTI; the reasons are in that module's documentation.

use crate::error::{Error, Result};
use cudarc::cupti::sys;

/// The SYS-clock frequency assumed on Turing and GA100 when `--sysclk-mhz` is not given: only the
/// number of samples depends on it (see the module docs), and the trace says it was assumed.
pub const NOMINAL_SYSCLK_HZ: f64 = 1.0e9;

/// How the hardware triggers a sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Trigger {
    /// Fixed GPU-time interval (GA10x and newer).
    GpuTime,
    /// Fixed number of SYS-clock cycles (Turing, GA100); `hz` converts the period, `given` says whether
    /// the user gave it (`--sysclk-mhz`) or [`NOMINAL_SYSCLK_HZ`] was assumed.
    SysClk { hz: f64, given: bool },
}

impl Trigger {
    /// The trigger a chip supports (`cupti_pmsampling.h`, `CUpti_PmSampling_TriggerMode`: the GPU-time
    /// interval "is not supported on Turing GPU architecture and GA100 GPU"). `sysclk_hz` is the user's
    /// SYS-clock frequency; a non-finite or non-positive one is refused.
    pub fn for_chip(chip: &str, sysclk_hz: Option<f64>) -> Result<Trigger> {
        if !(chip.starts_with("TU") || chip == "GA100") {
            return Ok(Trigger::GpuTime);
        }
        match sysclk_hz {
            Some(hz) if hz.is_finite() && hz > 0.0 => Ok(Trigger::SysClk { hz, given: true }),
            Some(hz) => Err(Error::Invalid(format!(
                "--sysclk-mhz {} is not a frequency: give the SYS clock in MHz, e.g. --sysclk-mhz 1000",
                hz / 1e6
            ))),
            None => Ok(Trigger::SysClk { hz: NOMINAL_SYSCLK_HZ, given: false }),
        }
    }

    /// `(trigger mode, samplingInterval)` for `CUpti_PmSampling_SetConfig_Params`: nanoseconds for the
    /// GPU-time trigger, SYS-clock cycles for the SYSCLK trigger (its documented units), at least 1.
    pub fn interval(self, interval_s: f64) -> (sys::CUpti_PmSampling_TriggerMode, u64) {
        use sys::CUpti_PmSampling_TriggerMode as M;
        let (mode, units) = match self {
            Trigger::GpuTime => (M::CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL, interval_s * 1e9),
            Trigger::SysClk { hz, .. } => {
                (M::CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_SYSCLK_INTERVAL, interval_s * hz)
            }
        };
        (mode, (units.round() as u64).max(1))
    }

    /// The loud line for an assumed SYS clock (none when the trigger needs no clock or it was given).
    pub fn warning(self) -> Option<String> {
        match self {
            Trigger::SysClk { hz, given: false } => Some(format!(
                "this chip triggers PM samples on SYS-clock cycles, whose frequency NVML cannot read: the interval \
                 assumed {:.0} MHz, so the counter sample rate may differ from --rate (the rates themselves use \
                 each sample's measured timestamps); pass --sysclk-mhz to set it",
                hz / 1e6
            )),
            _ => None,
        }
    }
}

/// Samples missing between two consecutive samples: the gap between the previous sample's end and the
/// next one's start, in whole sampling intervals (rounded; 0 for touching or overlapping samples).
pub fn gap_samples(prev_end_s: f64, next_start_s: f64, interval_s: f64) -> u64 {
    let gap = next_start_s - prev_end_s;
    if !(gap.is_finite() && interval_s.is_finite() && interval_s > 0.0) || gap < 0.5 * interval_s {
        return 0;
    }
    (gap / interval_s).round().min(u64::MAX as f64 / 2.0) as u64
}

/// Maps PM-sampling timestamps (ns) onto the run clock (s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimestampMap {
    /// Run-clock seconds at sample timestamp `ts0_ns`.
    pub t0_s: f64,
    pub ts0_ns: u64,
    /// The offset measured at the first sample when it was off the `cuptiGetTimestamp` clock, ns.
    pub rebased_by_ns: Option<i128>,
    seen_first: bool,
}

impl TimestampMap {
    /// How far the first sample may start from `cuptiGetTimestamp` at `cuptiPmSamplingStart` and still
    /// be taken as the same clock: generous for a delayed first trigger, far below any clock-epoch gap.
    pub const TOLERANCE_S: f64 = 2.0;

    /// `cuptiGetTimestamp` read as `ts0_ns` at run-clock `t0_s`, just before `cuptiPmSamplingStart`.
    pub fn new(t0_s: f64, ts0_ns: u64) -> TimestampMap {
        TimestampMap { t0_s, ts0_ns, rebased_by_ns: None, seen_first: false }
    }

    /// Checks the first sample's start against the clock read at start; re-bases when it is off.
    pub fn observe_first(&mut self, start_ns: u64) {
        if self.seen_first {
            return;
        }
        self.seen_first = true;
        let off_ns = i128::from(start_ns) - i128::from(self.ts0_ns);
        if (off_ns as f64).abs() / 1e9 > Self::TOLERANCE_S {
            self.rebased_by_ns = Some(off_ns);
            self.ts0_ns = start_ns;
        }
    }

    /// Run-clock seconds of sample timestamp `ns`.
    pub fn to_run_s(&self, ns: u64) -> f64 {
        self.t0_s + (i128::from(ns) - i128::from(self.ts0_ns)) as f64 / 1e9
    }

    /// The warning when the sample clock had to be re-based.
    pub fn warning(&self) -> Option<String> {
        self.rebased_by_ns.map(|off| {
            format!(
                "PM-sampling timestamps are {:.3} s away from cuptiGetTimestamp: aligned on the first sample \
                 instead (counter times are accurate to about one sampling interval)",
                off as f64 / 1e9
            )
        })
    }
}

/// The report of lost PM samples, or `None` when none were lost.
pub fn lost_samples_warning(overflows: u64, gap_samples: u64, interval_s: f64) -> Option<String> {
    if overflows == 0 && gap_samples == 0 {
        return None;
    }
    Some(format!(
        "about {gap_samples} PM samples lost ({overflows} hardware-buffer overflow(s) reported by \
         cuptiPmSamplingDecodeData; gaps between samples of {:.2} ms): their intervals have no counters; \
         lower --rate or shorten the run",
        interval_s * 1e3
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trigger_follows_the_chip() {
        assert_eq!(Trigger::for_chip("GA102", Some(1.4e9)).unwrap(), Trigger::GpuTime);
        assert_eq!(Trigger::for_chip("GH100", None).unwrap(), Trigger::GpuTime);
        assert_eq!(
            Trigger::for_chip("TU102", Some(1.2e9)).unwrap(),
            Trigger::SysClk { hz: 1.2e9, given: true }
        );
        assert_eq!(
            Trigger::for_chip("GA100", None).unwrap(),
            Trigger::SysClk { hz: NOMINAL_SYSCLK_HZ, given: false }
        );
    }

    /// The SYSCLK interval is in cycles of the given clock, an assumed clock is said out
    /// loud (never a silent fallback), and a nonsense clock is refused.
    #[test]
    fn sysclk_interval_is_in_cycles_and_an_assumed_clock_is_reported() {
        use sys::CUpti_PmSampling_TriggerMode as M;
        let given = Trigger::for_chip("TU102", Some(1.5e9)).unwrap();
        assert_eq!(given.interval(0.01), (M::CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_SYSCLK_INTERVAL, 15_000_000));
        assert_eq!(given.warning(), None);
        let assumed = Trigger::for_chip("TU102", None).unwrap();
        let w = assumed.warning().unwrap();
        assert!(w.contains("--sysclk-mhz") && w.contains("1000 MHz"), "{w}");
        assert_eq!(
            Trigger::GpuTime.interval(0.01),
            (M::CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL, 10_000_000)
        );
        assert_eq!(Trigger::GpuTime.interval(1e-12).1, 1);
        for bad in [0.0, -1e9, f64::NAN, f64::INFINITY] {
            let e = Trigger::for_chip("GA100", Some(bad)).unwrap_err().to_string();
            assert!(e.contains("--sysclk-mhz"), "{e}");
        }
    }

    /// Gaps between samples count as lost samples, and the report says how many.
    #[test]
    fn gaps_between_samples_are_counted_as_lost() {
        let dt = 0.01;
        assert_eq!(gap_samples(1.0, 1.0, dt), 0);
        assert_eq!(gap_samples(1.0, 1.002, dt), 0);
        assert_eq!(gap_samples(1.0, 1.03, dt), 3);
        assert_eq!(gap_samples(1.0, 0.99, dt), 0);
        assert_eq!(gap_samples(1.0, f64::NAN, dt), 0);
        assert_eq!(lost_samples_warning(0, 0, dt), None);
        let w = lost_samples_warning(1, 3, dt).unwrap();
        assert!(w.starts_with("about 3 PM samples lost (1 hardware-buffer overflow"), "{w}");
    }

    /// Timestamps near cuptiGetTimestamp are used as they are; ones on another epoch
    /// are re-based on the first sample, and the offset is reported.
    #[test]
    fn sample_timestamps_on_another_clock_are_rebased_and_reported() {
        let mut same = TimestampMap::new(10.0, 5_000_000_000);
        same.observe_first(5_010_000_000);
        assert!((same.to_run_s(5_010_000_000) - 10.01).abs() < 1e-9);
        assert_eq!(same.warning(), None);
        let mut other = TimestampMap::new(10.0, 5_000_000_000);
        other.observe_first(900_000_000_000);
        assert!((other.to_run_s(900_000_000_000) - 10.0).abs() < 1e-9);
        assert!((other.to_run_s(900_016_000_000) - 10.016).abs() < 1e-9);
        let w = other.warning().unwrap();
        assert!(w.contains("895.000 s away"), "{w}");
        // Only the first sample decides.
        other.observe_first(1);
        assert!((other.to_run_s(900_000_000_000) - 10.0).abs() < 1e-9);
    }
}
