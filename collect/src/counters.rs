//! The counter source: per-interval rates of named hardware counters for the whole device.
//!
//! [`CounterSource`] is driven as start → poll … poll → stop; every poll returns the intervals the
//! hardware finished since the previous poll, with each counter as a rate (events per second of that
//! interval, as the paper normalizes them). Interval times are seconds on the run's one monotonic clock
//! ([`crate::sampler::Clock`]), so power and counter samples merge on a shared time axis.
//! [`crate::cupti::pm::CuptiPmCounters`] reads CUPTI PM sampling; [`crate::fake::FakeCounters`] plays
//! scripted values.

use crate::error::Result;

/// One finished counter interval.
#[derive(Debug, Clone, PartialEq)]
pub struct CounterInterval {
    /// Interval start, seconds on the run clock.
    pub start_s: f64,
    /// Interval end, seconds on the run clock.
    pub end_s: f64,
    /// One rate (events per second) per name of [`CounterSource::names`], in that order.
    pub rates: Vec<f64>,
}

impl CounterInterval {
    /// Interval length in seconds.
    pub fn duration_s(&self) -> f64 {
        self.end_s - self.start_s
    }
}

/// A source of counter samples. Moved onto the sampler thread, hence `Send`.
pub trait CounterSource: Send {
    /// Counter names, in the order of [`CounterInterval::rates`].
    fn names(&self) -> Vec<String>;
    /// Short description for the trace metadata (e.g. "CUPTI PM sampling, GA102, 16.7 ms GPU-time interval").
    fn describe(&self) -> String;
    /// Starts counting. `now_s` is the run clock at the call.
    fn start(&mut self, now_s: f64) -> Result<()>;
    /// Intervals finished since the last call.
    fn poll(&mut self, now_s: f64) -> Result<Vec<CounterInterval>>;
    /// Stops counting and returns the remaining intervals.
    fn stop(&mut self, now_s: f64) -> Result<Vec<CounterInterval>>;
    /// What went wrong without stopping the run, read after [`CounterSource::stop`]: samples lost to a
    /// full hardware buffer, an assumed clock, re-based timestamps. They go into the trace's warnings.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
}

impl<T: CounterSource + ?Sized> CounterSource for Box<T> {
    fn names(&self) -> Vec<String> {
        (**self).names()
    }
    fn describe(&self) -> String {
        (**self).describe()
    }
    fn start(&mut self, now_s: f64) -> Result<()> {
        (**self).start(now_s)
    }
    fn poll(&mut self, now_s: f64) -> Result<Vec<CounterInterval>> {
        (**self).poll(now_s)
    }
    fn stop(&mut self, now_s: f64) -> Result<Vec<CounterInterval>> {
        (**self).stop(now_s)
    }
    fn warnings(&self) -> Vec<String> {
        (**self).warnings()
    }
}
