//! Scripted power and counter sources, always built: they drive the tests of everything above the
//! hardware layer (sampler schedule, merging, repetition, overhead accounting, streaming, interruption)
//! and the sampler benchmark, on machines without a GPU.

use crate::counters::{CounterInterval, CounterSource};
use crate::error::{Error, Result};
use crate::power::{PowerField, PowerInfo, PowerReading, PowerSource};
use crate::sampler::Clock;
use gpumodel_models::{Joules, Mhz, Watts};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

type PowerFn = Box<dyn FnMut(f64) -> f64 + Send>;

/// A power source whose power is a function of the run clock's time.
pub struct FakePower {
    clock: Clock,
    power_w: PowerFn,
    core_mhz: Option<f64>,
    mem_mhz: Option<f64>,
    energy: bool,
    energy_j: f64,
    last_t: Option<f64>,
    reads: Arc<AtomicUsize>,
    fail_after: Option<usize>,
    gpu: String,
}

impl FakePower {
    /// Constant power.
    pub fn constant(clock: Clock, watts: f64) -> FakePower {
        FakePower::from_fn(clock, move |_| watts)
    }

    /// Power as a function of the run clock (seconds).
    pub fn from_fn(clock: Clock, f: impl FnMut(f64) -> f64 + Send + 'static) -> FakePower {
        FakePower {
            clock,
            power_w: Box::new(f),
            core_mhz: Some(1410.0),
            mem_mhz: Some(1215.0),
            energy: true,
            energy_j: 0.0,
            last_t: None,
            reads: Arc::new(AtomicUsize::new(0)),
            fail_after: None,
            gpu: "Fake GPU".into(),
        }
    }

    /// The GPU's name, as NVML would report it.
    pub fn named(mut self, gpu: &str) -> FakePower {
        self.gpu = gpu.to_string();
        self
    }

    /// Pretends the GPU has no energy counter (pre-Volta).
    pub fn without_energy_counter(mut self) -> FakePower {
        self.energy = false;
        self
    }

    /// Makes `read` fail after `n` successful reads (a GPU that falls off the bus).
    pub fn failing_after(mut self, n: usize) -> FakePower {
        self.fail_after = Some(n);
        self
    }

    /// A shared count of `read` calls, to watch the sampler from a test.
    pub fn read_count(&self) -> Arc<AtomicUsize> {
        self.reads.clone()
    }
}

impl PowerSource for FakePower {
    fn info(&self) -> PowerInfo {
        PowerInfo {
            gpu: self.gpu.clone(),
            driver: None,
            compute_capability: None,
            field: PowerField::Scripted,
            energy_counter: self.energy,
            pci_bus_id: None,
        }
    }

    fn read(&mut self) -> Result<PowerReading> {
        let n = self.reads.fetch_add(1, Ordering::SeqCst);
        if self.fail_after.is_some_and(|k| n >= k) {
            return Err(Error::Nvml { call: "fake read", message: "GPU is lost (scripted)".into() });
        }
        let t = self.clock.now_s();
        let p = (self.power_w)(t);
        // The fake energy counter integrates the scripted power with the rectangle rule.
        if let Some(t0) = self.last_t {
            self.energy_j += p * (t - t0);
        }
        self.last_t = Some(t);
        Ok(PowerReading { power: Watts(p), core: self.core_mhz.map(Mhz), mem: self.mem_mhz.map(Mhz) })
    }

    fn energy(&mut self) -> Result<Option<Joules>> {
        Ok(self.energy.then_some(Joules(self.energy_j)))
    }
}

type RatesFn = Box<dyn FnMut(f64) -> Vec<f64> + Send>;

/// A counter source producing fixed-length intervals with rates from a function of the interval start.
pub struct FakeCounters {
    names: Vec<String>,
    interval_s: f64,
    rates: RatesFn,
    next_start: f64,
    running: Arc<AtomicBool>,
    fail_start: bool,
    /// Drop every n-th interval, as a full hardware buffer does (the count of drops is the overflows).
    drop_every: Option<usize>,
    made: usize,
    overflows: u64,
    gap_lost: u64,
    last_end: Option<f64>,
}

impl FakeCounters {
    /// Counters `names`, intervals of `interval_s`, rates `f(start_s)` (one per name).
    pub fn new(
        names: &[&str],
        interval_s: f64,
        f: impl FnMut(f64) -> Vec<f64> + Send + 'static,
    ) -> FakeCounters {
        FakeCounters {
            names: names.iter().map(|s| s.to_string()).collect(),
            interval_s,
            rates: Box::new(f),
            next_start: 0.0,
            running: Arc::new(AtomicBool::new(false)),
            fail_start: false,
            drop_every: None,
            made: 0,
            overflows: 0,
            gap_lost: 0,
            last_end: None,
        }
    }

    /// Loses every `n`-th interval as CUPTI's KEEP_OLDEST buffer does when it overflows; the loss is
    /// counted from the gaps and reported by [`CounterSource::warnings`] like the real source's.
    pub fn dropping_every(mut self, n: usize) -> FakeCounters {
        self.drop_every = Some(n.max(2));
        self
    }

    fn emit(&mut self, out: &mut Vec<CounterInterval>, iv: CounterInterval) {
        self.made += 1;
        if self.drop_every.is_some_and(|n| self.made.is_multiple_of(n)) {
            self.overflows += 1;
            return;
        }
        if let Some(prev) = self.last_end {
            self.gap_lost += crate::cupti::pm::gap_samples(prev, iv.start_s, self.interval_s);
        }
        self.last_end = Some(iv.end_s);
        out.push(iv);
    }

    /// Makes `start` fail as CUPTI does when counters are restricted to admin users.
    pub fn restricted(mut self) -> FakeCounters {
        self.fail_start = true;
        self
    }

    /// True while counting (between start and stop): lets a fake power source model the profiler's
    /// own power overhead.
    pub fn running_flag(&self) -> Arc<AtomicBool> {
        self.running.clone()
    }

    fn finished_until(&mut self, now_s: f64) -> Vec<CounterInterval> {
        let mut out = Vec::new();
        while self.next_start + self.interval_s <= now_s {
            let start_s = self.next_start;
            let end_s = start_s + self.interval_s;
            let rates = (self.rates)(start_s);
            self.emit(&mut out, CounterInterval { start_s, end_s, rates });
            self.next_start = end_s;
        }
        out
    }
}

impl CounterSource for FakeCounters {
    fn names(&self) -> Vec<String> {
        self.names.clone()
    }

    fn describe(&self) -> String {
        format!("fake counters, {:.1} ms interval", self.interval_s * 1e3)
    }

    fn start(&mut self, now_s: f64) -> Result<()> {
        if self.fail_start {
            return Err(Error::InsufficientPrivileges);
        }
        self.next_start = now_s;
        self.running.store(true, Ordering::SeqCst);
        Ok(())
    }

    fn poll(&mut self, now_s: f64) -> Result<Vec<CounterInterval>> {
        Ok(self.finished_until(now_s))
    }

    fn stop(&mut self, now_s: f64) -> Result<Vec<CounterInterval>> {
        let mut out = self.finished_until(now_s);
        // The hardware closes the last, partial interval at stop.
        if now_s > self.next_start {
            let start_s = self.next_start;
            let rates = (self.rates)(start_s);
            self.emit(&mut out, CounterInterval { start_s, end_s: now_s, rates });
            self.next_start = now_s;
        }
        self.running.store(false, Ordering::SeqCst);
        Ok(out)
    }

    fn warnings(&self) -> Vec<String> {
        crate::cupti::pm::lost_samples_warning(self.overflows, self.gap_lost, self.interval_s)
            .into_iter()
            .collect()
    }
}

/// Fixed values per sample, as CUPTI PM sampling gives them (a sample's cycle counts and peaks do not grow
/// with its length): each rate is the sample's value over the sample's length, as the real source reports
/// `cuptiProfilerHostEvaluateToGpuValues` per sample divided by its timestamps.
pub struct PerSample {
    inner: FakeCounters,
    values: Vec<f64>,
}

impl PerSample {
    /// `values[i]` per sample for `inner`'s `i`-th name (`inner` gives the names and the sample times).
    pub fn new(inner: FakeCounters, values: Vec<f64>) -> PerSample {
        PerSample { inner, values }
    }

    fn rates(&self, v: Vec<CounterInterval>) -> Vec<CounterInterval> {
        v.into_iter()
            .map(|iv| {
                let d = iv.duration_s();
                CounterInterval { rates: self.values.iter().map(|x| x / d).collect(), ..iv }
            })
            .collect()
    }
}

impl CounterSource for PerSample {
    fn names(&self) -> Vec<String> {
        self.inner.names()
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn start(&mut self, now_s: f64) -> Result<()> {
        self.inner.start(now_s)
    }
    fn poll(&mut self, now_s: f64) -> Result<Vec<CounterInterval>> {
        let v = self.inner.poll(now_s)?;
        Ok(self.rates(v))
    }
    fn stop(&mut self, now_s: f64) -> Result<Vec<CounterInterval>> {
        let v = self.inner.stop(now_s)?;
        Ok(self.rates(v))
    }
}
