//! Sampler threads: a power sampler on absolute deadlines and a counter poller, both stamping their
//! samples with one monotonic [`Clock`], both sending into one channel so the consumer can merge and
//! stream them to disk as they come.
//!
//! Deadlines are absolute (`start + k·period`), so a late wake-up does not push the following samples
//! later: the schedule does not drift. A wake-up later than a whole period skips the missed deadlines
//! instead of bursting to catch up (a burst would put several samples inside one sensor update).

use crate::counters::{CounterInterval, CounterSource};
use crate::error::{Error, Result};
use crate::power::{PowerReading, PowerSource};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The run's one monotonic clock: seconds since its epoch.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    epoch: Instant,
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

impl Clock {
    /// A clock whose zero is now.
    pub fn new() -> Clock {
        Clock { epoch: Instant::now() }
    }

    /// Seconds since the epoch.
    pub fn now_s(&self) -> f64 {
        self.at(Instant::now())
    }

    /// An instant as seconds since the epoch.
    pub fn at(&self, t: Instant) -> f64 {
        t.saturating_duration_since(self.epoch).as_secs_f64()
    }
}

/// One power sample on the run clock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PowerSample {
    /// Time of the reading, seconds on the run clock.
    pub t_s: f64,
    /// The reading.
    pub reading: PowerReading,
    /// How late the reading was against its deadline, seconds (≥ 0).
    pub late_s: f64,
}

/// What the sampler threads send.
#[derive(Debug)]
pub enum Event {
    /// A power sample.
    Power(PowerSample),
    /// Counter intervals finished since the last poll.
    Counters(Vec<CounterInterval>),
    /// A sampler stopped on an error (the run goes on without it and reports it).
    Failed(Error),
    /// The energy counter, read when asked ([`Running::mark_energy`]) and when the power sampler stops.
    /// `None` when the GPU has no energy counter.
    Energy { t_s: f64, energy: Option<gpumodel_models::Joules> },
}

/// What a sampler thread did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SamplerStats {
    /// Samples (power readings, or counter polls).
    pub samples: u64,
    /// Wall time the thread ran, seconds.
    pub wall_s: f64,
    /// CPU time the thread used, seconds (Linux: /proc/thread-self/schedstat), when known.
    pub cpu_s: Option<f64>,
    /// Lateness of each sample against its deadline, seconds.
    pub late_s: Vec<f64>,
    /// Reads that failed and were skipped (fewer than [`MAX_FAILED_READS_IN_A_ROW`] in a row), with the
    /// first one's error.
    pub skipped_reads: u64,
    pub first_skipped: Option<String>,
}

/// Failed power reads in a row the sampler skips before it stops on the next: one failed NVML answer
/// (a recorded `unknown`, a busy driver) loses one sample, not the rest of the run; a GPU that stopped
/// answering stops the sampler within half a second at 60 Hz.
pub const MAX_FAILED_READS_IN_A_ROW: u32 = 30;

impl SamplerStats {
    /// CPU time per sample, seconds, when known.
    pub fn cpu_per_sample_s(&self) -> Option<f64> {
        self.cpu_s.filter(|_| self.samples > 0).map(|c| c / self.samples as f64)
    }
}

/// A running sampler thread; `stop` returns its source and statistics.
pub struct Running<S> {
    stop: Arc<AtomicBool>,
    mark: Arc<AtomicBool>,
    handle: JoinHandle<(S, SamplerStats)>,
}

impl<S> Running<S> {
    /// Asks the thread to stop and waits for it.
    pub fn stop(self) -> Result<(S, SamplerStats)> {
        self.stop.store(true, Ordering::SeqCst);
        self.handle.join().map_err(|_| Error::Thread("a sampler thread panicked".into()))
    }

    /// Asks the power sampler to read the energy counter at its next tick (sent as [`Event::Energy`]).
    pub fn mark_energy(&self) {
        self.mark.store(true, Ordering::SeqCst);
    }

    /// True when the thread has ended on its own (after an error).
    pub fn is_finished(&self) -> bool {
        self.handle.is_finished()
    }
}

/// CPU time of the calling thread, seconds (Linux only).
pub fn thread_cpu_s() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: f64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns / 1e9)
}

fn check_rate(rate_hz: f64) -> Result<Duration> {
    if !rate_hz.is_finite() || rate_hz <= 0.0 || rate_hz > 10_000.0 {
        return Err(Error::Invalid(format!(
            "--rate {rate_hz}: give a sampling rate in Hz between 0 and 10000"
        )));
    }
    Ok(Duration::from_secs_f64(1.0 / rate_hz))
}

/// Sleeps until `deadline` or until `stop` is set, whichever comes first (checks every ≤ 50 ms).
fn sleep_until(deadline: Instant, stop: &AtomicBool) {
    loop {
        let now = Instant::now();
        if now >= deadline || stop.load(Ordering::Relaxed) {
            return;
        }
        std::thread::sleep((deadline - now).min(Duration::from_millis(50)));
    }
}

/// The index of the next deadline (`start + k·period`) after sample `k` was taken `elapsed` after the
/// start: `k + 1`, or the last deadline already passed when the wake-up was later than a whole period
/// (missed deadlines are skipped, not made up in a burst).
fn next_deadline(k: u32, elapsed: Duration, period: Duration) -> u32 {
    let due = (elapsed.as_secs_f64() / period.as_secs_f64()) as u32;
    (k + 1).max(due)
}

/// Starts the power sampler: reads `source` every `1/rate_hz` seconds on absolute deadlines.
pub fn spawn_power<P: PowerSource + 'static>(
    mut source: P,
    rate_hz: f64,
    clock: Clock,
    tx: Sender<Event>,
) -> Result<Running<P>> {
    let period = check_rate(rate_hz)?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let mark = Arc::new(AtomicBool::new(false));
    let mark_flag = mark.clone();
    let handle = std::thread::Builder::new()
        .name("gpumodel-power".into())
        .spawn(move || {
            let cpu0 = thread_cpu_s();
            let start = Instant::now();
            let mut stats = SamplerStats::default();
            let mut k: u32 = 0;
            let mut failed_in_a_row = 0;
            while !flag.load(Ordering::Relaxed) {
                let deadline = start + period * k;
                sleep_until(deadline, &flag);
                if flag.load(Ordering::Relaxed) {
                    break;
                }
                if mark_flag.swap(false, Ordering::SeqCst) {
                    send_energy(&mut source, &clock, &tx);
                }
                let reading = match source.read() {
                    Ok(r) => {
                        failed_in_a_row = 0;
                        r
                    }
                    Err(e) if failed_in_a_row + 1 < MAX_FAILED_READS_IN_A_ROW => {
                        failed_in_a_row += 1;
                        stats.skipped_reads += 1;
                        stats.first_skipped.get_or_insert_with(|| e.to_string());
                        k = next_deadline(k, Instant::now().saturating_duration_since(start), period);
                        continue;
                    }
                    Err(e) => {
                        let _ = tx.send(Event::Failed(e));
                        break;
                    }
                };
                let now = Instant::now();
                let late_s = now.saturating_duration_since(deadline).as_secs_f64();
                stats.samples += 1;
                stats.late_s.push(late_s);
                if tx.send(Event::Power(PowerSample { t_s: clock.at(now), reading, late_s })).is_err() {
                    break; // nobody listens any more
                }
                k = next_deadline(k, now.saturating_duration_since(start), period);
            }
            send_energy(&mut source, &clock, &tx);
            stats.wall_s = start.elapsed().as_secs_f64();
            stats.cpu_s = thread_cpu_s().zip(cpu0).map(|(a, b)| a - b);
            (source, stats)
        })
        .map_err(|e| Error::Thread(e.to_string()))?;
    Ok(Running { stop, mark, handle })
}

fn send_energy<P: PowerSource>(source: &mut P, clock: &Clock, tx: &Sender<Event>) {
    let _ = match source.energy() {
        Ok(energy) => tx.send(Event::Energy { t_s: clock.now_s(), energy }),
        Err(e) => tx.send(Event::Failed(e)),
    };
}

/// Starts the counter poller on an already started `source` (start it first, so that a refused start,
/// e.g. restricted counters, is reported before the program runs). Polls every `1/poll_hz` seconds and
/// calls `stop` on the source when asked to stop.
pub fn spawn_counters<C: CounterSource + 'static>(
    mut source: C,
    poll_hz: f64,
    clock: Clock,
    tx: Sender<Event>,
) -> Result<Running<C>> {
    let period = check_rate(poll_hz)?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let handle = std::thread::Builder::new()
        .name("gpumodel-counters".into())
        .spawn(move || {
            let cpu0 = thread_cpu_s();
            let start = Instant::now();
            let mut stats = SamplerStats::default();
            let mut k: u32 = 1;
            let mut failed = false;
            while !flag.load(Ordering::Relaxed) {
                let deadline = start + period * k;
                sleep_until(deadline, &flag);
                if flag.load(Ordering::Relaxed) {
                    break;
                }
                stats.samples += 1;
                match source.poll(clock.now_s()) {
                    Ok(v) if v.is_empty() => {}
                    Ok(v) => {
                        let _ = tx.send(Event::Counters(v));
                    }
                    Err(e) => {
                        let _ = tx.send(Event::Failed(e));
                        failed = true;
                        break;
                    }
                }
                k += 1;
            }
            if !failed {
                match source.stop(clock.now_s()) {
                    Ok(v) if v.is_empty() => {}
                    Ok(v) => {
                        let _ = tx.send(Event::Counters(v));
                    }
                    Err(e) => {
                        let _ = tx.send(Event::Failed(e));
                    }
                }
            }
            stats.wall_s = start.elapsed().as_secs_f64();
            stats.cpu_s = thread_cpu_s().zip(cpu0).map(|(a, b)| a - b);
            (source, stats)
        })
        .map_err(|e| Error::Thread(e.to_string()))?;
    Ok(Running { stop, mark: Arc::new(AtomicBool::new(false)), handle })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::{FakeCounters, FakePower};
    use std::sync::mpsc;

    #[test]
    fn power_sampler_keeps_absolute_deadlines() {
        let clock = Clock::new();
        let (tx, rx) = mpsc::channel();
        let r = spawn_power(FakePower::constant(clock, 50.0), 200.0, clock, tx).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let (_, stats) = r.stop().unwrap();
        let times: Vec<f64> = rx
            .try_iter()
            .filter_map(|e| match e {
                Event::Power(p) => Some(p.t_s),
                _ => None,
            })
            .collect();
        assert_eq!(times.len() as u64, stats.samples);
        assert_eq!(stats.late_s.len() as u64, stats.samples);
        // What holds however busy the host: at least the first sample, never more samples than
        // deadlines passed while the thread ran (one per 5 ms, plus the one at the start), each at or
        // after its deadline, in order. The schedule itself is `next_deadline`'s, tested below.
        assert!(!times.is_empty());
        assert!(times.len() as f64 <= stats.wall_s / 0.005 + 1.0, "{} in {} s", times.len(), stats.wall_s);
        assert!(stats.late_s.iter().all(|l| *l >= 0.0));
        for w in times.windows(2) {
            assert!(w[1] > w[0]);
        }
    }

    #[test]
    fn deadlines_do_not_drift_and_missed_ones_are_skipped() {
        let period = Duration::from_millis(5);
        let ms = Duration::from_micros;
        // On time or a little late: the next deadline, whatever the lateness (no drift).
        assert_eq!(next_deadline(0, ms(100), period), 1);
        assert_eq!(next_deadline(7, ms(7 * 5000 + 4900), period), 8);
        // Woken 3.5 periods after deadline 2: deadlines 3, 4 and 5 passed; the next is 5, once.
        assert_eq!(next_deadline(2, ms(2 * 5000 + 17_500), period), 5);
        assert_eq!(next_deadline(5, ms(27_600), period), 6);
    }

    #[test]
    fn bad_rate_is_refused() {
        let clock = Clock::new();
        let (tx, _rx) = mpsc::channel();
        let e = spawn_power(FakePower::constant(clock, 1.0), 0.0, clock, tx).err().unwrap();
        assert!(e.to_string().contains("--rate 0"), "{e}");
    }

    #[test]
    fn failing_source_reports_and_ends() {
        let clock = Clock::new();
        let (tx, rx) = mpsc::channel();
        let r = spawn_power(FakePower::constant(clock, 1.0).failing_after(3), 500.0, clock, tx).unwrap();
        let mut powers = 0;
        let mut failed = false;
        for e in rx.iter() {
            match e {
                Event::Power(_) => powers += 1,
                Event::Failed(_) => {
                    failed = true;
                    break;
                }
                _ => {}
            }
        }
        assert!(failed);
        assert_eq!(powers, 3);
        let (_, stats) = r.stop().unwrap();
        // A source that stays failed is skipped up to the limit, then stops the sampler.
        assert_eq!(stats.skipped_reads, u64::from(MAX_FAILED_READS_IN_A_ROW - 1));
    }

    /// A few failed reads in a row lose those samples only: the sampler goes on and counts them.
    #[test]
    fn a_few_failed_reads_are_skipped_and_counted() {
        struct Flaky(u32);
        impl PowerSource for Flaky {
            fn info(&self) -> crate::power::PowerInfo {
                FakePower::constant(Clock::new(), 1.0).info()
            }
            fn read(&mut self) -> Result<crate::power::PowerReading> {
                self.0 += 1;
                if (3..6).contains(&self.0) {
                    return Err(Error::Invalid(format!("read {} failed", self.0)));
                }
                Ok(crate::power::PowerReading { power: gpumodel_models::Watts(1.0), core: None, mem: None })
            }
            fn energy(&mut self) -> Result<Option<gpumodel_models::Joules>> {
                Ok(None)
            }
        }
        let clock = Clock::new();
        let (tx, rx) = mpsc::channel();
        let r = spawn_power(Flaky(0), 500.0, clock, tx).unwrap();
        let mut powers = 0;
        for e in rx.iter() {
            match e {
                Event::Power(_) => powers += 1,
                Event::Failed(e) => panic!("the sampler stopped: {e}"),
                _ => {}
            }
            if powers == 10 {
                break;
            }
        }
        let (_, stats) = r.stop().unwrap();
        assert_eq!(stats.skipped_reads, 3);
        assert_eq!(stats.first_skipped.as_deref(), Some("read 3 failed"));
    }

    #[test]
    fn counter_poller_delivers_all_intervals_on_stop() {
        let clock = Clock::new();
        let (tx, rx) = mpsc::channel();
        let mut c = FakeCounters::new(&["a"], 0.01, |t| vec![t]);
        c.start(clock.now_s()).unwrap();
        let r = spawn_counters(c, 100.0, clock, tx).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        r.stop().unwrap();
        let iv: Vec<CounterInterval> = rx
            .try_iter()
            .flat_map(|e| match e {
                Event::Counters(v) => v,
                _ => vec![],
            })
            .collect();
        assert!(iv.len() >= 9, "{}", iv.len());
        // Contiguous: each interval starts where the previous ended.
        for w in iv.windows(2) {
            assert_eq!(w[0].end_s, w[1].start_s);
        }
    }
}
