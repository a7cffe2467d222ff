//! The phases of a run and the consumer that accounts each power sample to the phase it was read in.

use super::merger::Merger;
use crate::error::Error;
use crate::sampler::Event;
use std::sync::mpsc::Receiver;
use std::time::Duration;

/// How long an idle phase waits beyond its length for its first power sample (see
/// [`Consumer::drain_phase`]).
pub(super) const FIRST_SAMPLE_GRACE: Duration = Duration::from_secs(2);

/// Which phase a power sample belongs to (see the parent module's docs).
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Phase {
    Idle,
    Profiler,
    Run,
}

/// The consumer side: receives events, accounts them to the phase, merges and writes rows.
pub(super) struct Consumer {
    rx: Receiver<Event>,
    pub(super) merger: Merger,
    pub(super) phase: Phase,
    /// When the counter profiler started, seconds on the run clock (infinite before): a power sample
    /// read earlier is idle power even when the host delivers it after the phase has changed.
    pub(super) profiler_from: f64,
    /// Power in phase 1.
    pub(super) idle: Acc,
    /// Power in phase 2.
    pub(super) with_profiler: Acc,
    /// (time s, energy counter J) of every energy reading.
    pub(super) energies: Vec<(f64, Option<f64>)>,
    pub(super) warnings: Vec<String>,
    /// The power source failed: the run stops.
    pub(super) power_failed: bool,
    /// A sampler reported a failure (any kind): an idle phase stops waiting for its first sample.
    sampler_failed: bool,
}

impl Consumer {
    /// A consumer in phase 1 whose merger has `n_counters` counter columns (`have_counters`: a counter
    /// source runs) and the model inputs `inputs` (indices of the counter columns summed).
    pub(super) fn new(
        rx: Receiver<Event>,
        have_counters: bool,
        n_counters: usize,
        inputs: Vec<Vec<usize>>,
    ) -> Self {
        Consumer {
            rx,
            merger: Merger {
                pending: vec![],
                intervals: vec![],
                covered_until: f64::NEG_INFINITY,
                have_counters,
                n_counters,
                inputs,
                last_t: None,
                run_start: f64::INFINITY,
                written: vec![],
            },
            phase: Phase::Idle,
            profiler_from: f64::INFINITY,
            idle: Acc::default(),
            with_profiler: Acc::default(),
            energies: vec![],
            warnings: vec![],
            power_failed: false,
            sampler_failed: false,
        }
    }

    /// Keeps each of `warnings` not already kept.
    pub(super) fn warn_once(&mut self, warnings: impl IntoIterator<Item = String>) {
        for w in warnings {
            if !self.warnings.contains(&w) {
                self.warnings.push(w);
            }
        }
    }

    /// An idle phase: handles events for `d`, then, if no power sample of this phase has arrived yet
    /// (a loaded host can starve the sampler thread through a short window), keeps waiting for the first
    /// one for up to [`FIRST_SAMPLE_GRACE`] more, so that an idle power is measured whenever the sampler
    /// works at all. A sampler that reports a failure ends the wait at once.
    pub(super) fn drain_phase(&mut self, d: Duration) {
        self.drain(d);
        let deadline = std::time::Instant::now() + FIRST_SAMPLE_GRACE;
        while self.phase_samples() == 0 && !self.power_failed && !self.sampler_failed {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return;
            }
            match self.rx.recv_timeout(left) {
                Ok(ev) => self.handle(ev),
                Err(_) => return,
            }
        }
    }

    /// Power samples accounted to the current phase so far (the run phase keeps no count).
    fn phase_samples(&self) -> u64 {
        match self.phase {
            Phase::Idle => self.idle.n,
            Phase::Profiler => self.with_profiler.n,
            Phase::Run => 1,
        }
    }

    /// Handles events for up to `d` (at least once, without waiting, when `d` is zero).
    pub(super) fn drain(&mut self, d: Duration) {
        let deadline = std::time::Instant::now() + d;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let ev = if left.is_zero() { self.rx.try_recv().ok() } else { self.rx.recv_timeout(left).ok() };
            match ev {
                Some(ev) => self.handle(ev),
                None if left.is_zero() => return,
                None => {}
            }
        }
    }

    fn handle(&mut self, ev: Event) {
        {
            match ev {
                Event::Power(s) => {
                    // By the time the sample was read, not when it arrived: a loaded host can queue
                    // several samples across a phase change.
                    if s.t_s < self.profiler_from.min(self.merger.run_start) {
                        self.idle.add(s.reading.power.get());
                    } else if s.t_s < self.merger.run_start {
                        self.with_profiler.add(s.reading.power.get());
                    }
                    self.merger.push_power(s);
                }
                Event::Counters(v) => self.merger.push_counters(v),
                Event::Energy { t_s, energy } => self.energies.push((t_s, energy.map(|j| j.get()))),
                Event::Failed(e) => {
                    self.sampler_failed = true;
                    if matches!(e, Error::Nvml { .. }) {
                        self.power_failed = true;
                    }
                    self.warn_once([e.to_string()]);
                }
            }
        }
    }

    /// Drains until the channel is closed (all senders gone).
    pub(super) fn drain_all(&mut self) {
        while let Ok(ev) = self.rx.recv() {
            self.handle(ev);
        }
    }
}

/// A running mean.
#[derive(Default)]
pub(super) struct Acc {
    n: u64,
    sum: f64,
}

impl Acc {
    fn add(&mut self, x: f64) {
        self.n += 1;
        self.sum += x;
    }
    pub(super) fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / self.n as f64)
    }
}
