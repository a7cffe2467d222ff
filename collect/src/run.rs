//! The run loop of `gpumodel collect ./kernel [args…]`: idle power, the profiler's own overhead, then the
//! program (repeated up to a minimum duration), with power and counter samples merged on the shared clock
//! and streamed to a trace as they come.
//!
//! Phases, on one [`Clock`]:
//! 1. power sampler alone for `idle_seconds` → idle power;
//! 2. counters started too, still idle, for `idle_seconds` → the profiler's own power (paper: < 5 W);
//! 3. the program runs, again and again while the total is under `min_seconds` (paper: "for shorter
//!    kernels we run multiple repetitions"), until it fails or the user interrupts;
//! 4. samplers stopped; the sidecar gets the summary.
//!
//! Application replay ([`run_replay`], `collect --pm-passes all`): the chip's counters do not fit one
//! PM-sampling pass, so the whole run above is repeated once per counter group, each pass writing its
//! own trace (`<out>.pass<k>.csv`, power sampled in every pass), and the passes are merged into `<out>`
//! on time since the program started. Pass 1's rows give the time axis, power and clocks; the counter
//! rates of pass k are time-weighted onto them ([`gpumodel_models::trace::align_rates`]). The sidecar's
//! `replay` names each pass's counters, run time, power and status, and the spread of run time and power
//! across passes: the passes are separate executions, so run-to-run variation enters the merged rows.
//! A pass that fails or is interrupted ends the replay; the passes before it stay on disk as they were.
//!
//! Only phase-3 samples become trace rows. A row covers `(t_prev, t]` of the power sampler; its counter
//! rates are the time-weighted mean of the counter intervals overlapping it. Rows are written once the
//! counter intervals reach them (PM sampling delivers with a delay), so each row is final when written.

use crate::counters::{CounterInterval, CounterSource};
use crate::error::{Error, Result};
use crate::power::PowerSource;
use crate::sampler::{Clock, Event, PowerSample, spawn_counters, spawn_power};
use gpumodel_models::profile::MODEL_INPUTS;
use gpumodel_models::trace::{
    PassRecord, Replay, RunStatus, Spread, TRACE_FORMAT, TraceMeta, TraceRow, TraceSummary, TraceWriter,
    align_rates, read_rows, sidecar_path,
};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::time::Duration;

/// What to run and how.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The program and its arguments.
    pub program: Vec<String>,
    /// Trace CSV (the sidecar goes next to it, `.json`). Must not exist.
    pub out: PathBuf,
    /// Power sampling rate, Hz.
    pub rate_hz: f64,
    /// Repeat the program until the run lasts at least this long, seconds.
    pub min_seconds: f64,
    /// Length of each idle phase, seconds (0 skips idle and overhead measurement).
    pub idle_seconds: f64,
    /// GPU index, recorded in the metadata.
    pub device: u32,
    /// Host name, recorded in the metadata.
    pub host: String,
    /// Chip name, when known.
    pub chip: Option<String>,
}

/// How the program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgramExit {
    /// Exit code.
    Code(i32),
    /// Killed by a signal.
    Signal,
    /// The run stopped before the program ended (interrupt or sampler failure killed it).
    Killed,
}

/// The outcome of a run: the final metadata (with the summary) and how the program ended.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    pub meta: TraceMeta,
    pub exit: ProgramExit,
    /// The counter source's own columns (without the model inputs derived from them).
    pub counter_names: Vec<String>,
}

/// Checks that the program exists and is executable; returns its path.
pub fn resolve_program(program: &str) -> Result<PathBuf> {
    let err = |detail: &str| Error::Program { program: program.to_string(), detail: detail.to_string() };
    if program.is_empty() {
        return Err(Error::Invalid("give the program to run: gpumodel collect ./kernel [args…]".into()));
    }
    let candidates: Vec<PathBuf> = if program.contains('/') {
        vec![PathBuf::from(program)]
    } else {
        std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).map(|d| d.join(program)).collect())
            .unwrap_or_default()
    };
    for c in &candidates {
        if let Ok(md) = std::fs::metadata(c) {
            use std::os::unix::fs::PermissionsExt;
            if md.is_file() && md.permissions().mode() & 0o111 != 0 {
                return Ok(c.clone());
            }
            if md.is_file() {
                return Err(err("not executable (chmod +x it)"));
            }
        }
    }
    Err(err(if program.contains('/') { "no such file" } else { "not found in PATH" }))
}

/// Merges power samples with counter intervals into rows, in time order.
struct Merger {
    pending: Vec<(f64, PowerSample)>, // (interval start, sample)
    intervals: Vec<CounterInterval>,
    covered_until: f64,
    have_counters: bool,
    n_counters: usize,
    inputs: Vec<Vec<usize>>, // model-input columns: indices of the counter columns summed
    last_t: Option<f64>,
    run_start: f64,
    /// (power W, dt s) of every row handed out, for the summary.
    written: Vec<(f64, f64)>,
}

impl Merger {
    fn push_power(&mut self, s: PowerSample) {
        let start = self.last_t.unwrap_or(s.t_s);
        self.last_t = Some(s.t_s);
        if s.t_s >= self.run_start && s.t_s > start {
            self.pending.push((start.max(self.run_start), s));
        }
    }

    fn push_counters(&mut self, v: Vec<CounterInterval>) {
        for iv in v {
            self.covered_until = self.covered_until.max(iv.end_s);
            self.intervals.push(iv);
        }
    }

    fn rates(&self, a: f64, b: f64) -> Vec<f64> {
        let mut sum = vec![0.0; self.n_counters];
        let mut w = 0.0;
        for iv in &self.intervals {
            let o = iv.end_s.min(b) - iv.start_s.max(a);
            if o > 0.0 {
                for (s, r) in sum.iter_mut().zip(&iv.rates) {
                    *s += r * o;
                }
                w += o;
            }
        }
        let mut out: Vec<f64> =
            if w > 0.0 { sum.iter().map(|s| s / w).collect() } else { vec![f64::NAN; self.n_counters] };
        let derived: Vec<f64> = self.inputs.iter().map(|ix| ix.iter().map(|&i| out[i]).sum()).collect();
        out.extend(derived);
        out
    }

    /// Rows ready to be written (all of them when `all`).
    fn ready(&mut self, all: bool) -> Vec<TraceRow> {
        let cut = if all || !self.have_counters { f64::INFINITY } else { self.covered_until };
        let n = self.pending.iter().take_while(|(_, s)| s.t_s <= cut).count();
        let taken: Vec<(f64, PowerSample)> = self.pending.drain(..n).collect();
        let rows: Vec<TraceRow> = taken
            .into_iter()
            .map(|(a, s)| TraceRow {
                t_s: s.t_s - self.run_start,
                dt_s: s.t_s - a,
                power_w: s.reading.power.get(),
                core_mhz: s.reading.core.map_or(f64::NAN, |m| m.get()),
                mem_mhz: s.reading.mem.map_or(f64::NAN, |m| m.get()),
                counters: self.rates(a, s.t_s),
            })
            .collect();
        self.written.extend(rows.iter().map(|r| (r.power_w, r.dt_s)));
        // Intervals entirely before the oldest pending row can go.
        let keep_from = self.pending.first().map_or(self.covered_until, |(a, _)| *a);
        self.intervals.retain(|iv| iv.end_s > keep_from);
        rows
    }
}

/// Model-input columns computable from the counter names: (input name, indices summed). An input whose
/// name is already a counter column (`branch` = the `branch` counter alone) is left out, so no column
/// name appears twice.
fn derived_inputs(names: &[String]) -> Vec<(String, Vec<usize>)> {
    MODEL_INPUTS
        .iter()
        .filter(|(input, _)| !names.iter().any(|n| n == input))
        .filter_map(|(input, parts)| {
            let ix: Option<Vec<usize>> = parts.iter().map(|p| names.iter().position(|n| n == p)).collect();
            ix.map(|ix| (input.to_string(), ix))
        })
        .collect()
}

#[derive(Clone, Copy, PartialEq)]
enum Phase {
    Idle,
    Profiler,
    Run,
}

/// The consumer side: receives events, accounts them to the phase, merges and writes rows.
struct Consumer {
    rx: Receiver<Event>,
    merger: Merger,
    phase: Phase,
    idle: Acc,
    with_profiler: Acc,
    energies: Vec<(f64, Option<f64>)>,
    warnings: Vec<String>,
    power_failed: bool,
}

impl Consumer {
    /// Handles events for up to `d` (at least once, without waiting, when `d` is zero).
    fn drain(&mut self, d: Duration) {
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
                    match self.phase {
                        Phase::Idle => self.idle.add(s.reading.power.get()),
                        Phase::Profiler => self.with_profiler.add(s.reading.power.get()),
                        Phase::Run => {}
                    }
                    self.merger.push_power(s);
                }
                Event::Counters(v) => self.merger.push_counters(v),
                Event::Energy { t_s, energy } => self.energies.push((t_s, energy.map(|j| j.get()))),
                Event::Failed(e) => {
                    if matches!(e, Error::Nvml { .. }) {
                        self.power_failed = true;
                    }
                    let msg = e.to_string();
                    if !self.warnings.contains(&msg) {
                        self.warnings.push(msg);
                    }
                }
            }
        }
    }

    /// Drains until the channel is closed (all senders gone).
    fn drain_all(&mut self) {
        while let Ok(ev) = self.rx.recv() {
            self.handle(ev);
        }
    }
}

/// Runs `opts.program` under `power` (and `counters`), writing the trace. The trace and its sidecar are
/// complete whenever this returns `Ok`, whatever happened to the program (see [`RunOutcome`]); `Err`
/// means nothing was measured (bad options, output exists, counters refused to start — the sidecar then
/// says why).
pub fn run<P: PowerSource + 'static>(
    opts: &RunOptions,
    power: P,
    counters: Option<Box<dyn CounterSource>>,
    interrupted: Arc<AtomicBool>,
) -> Result<RunOutcome> {
    run_once(opts, power, counters, interrupted).map(|(outcome, _)| outcome)
}

/// [`run`], handing the power source back for the next pass.
fn run_once<P: PowerSource + 'static>(
    opts: &RunOptions,
    power: P,
    counters: Option<Box<dyn CounterSource>>,
    interrupted: Arc<AtomicBool>,
) -> Result<(RunOutcome, P)> {
    let program = resolve_program(opts.program.first().map_or("", String::as_str))?;
    if !(opts.min_seconds.is_finite() && opts.min_seconds >= 0.0) {
        return Err(Error::Invalid(format!("--min-seconds {}: give a duration ≥ 0", opts.min_seconds)));
    }
    if !(opts.idle_seconds.is_finite() && opts.idle_seconds >= 0.0) {
        return Err(Error::Invalid(format!("--idle-seconds {}: give a duration ≥ 0", opts.idle_seconds)));
    }
    let info = power.info();
    let counter_names = counters.as_ref().map(|c| c.names()).unwrap_or_default();
    let inputs = derived_inputs(&counter_names);
    let mut columns = counter_names.clone();
    columns.extend(inputs.iter().map(|(n, _)| n.clone()));
    let kernel = Path::new(&opts.program[0])
        .file_name()
        .map_or("program".into(), |s| s.to_string_lossy().into_owned());
    let mut meta = TraceMeta {
        format: TRACE_FORMAT.into(),
        host: opts.host.clone(),
        device: opts.device,
        pci_bus_id: info.pci_bus_id.clone(),
        gpu: info.gpu.clone(),
        chip: opts.chip.clone(),
        compute_capability: info.compute_capability,
        driver: info.driver.clone(),
        power_field: serde_json::to_value(info.field)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default(),
        energy_counter: info.energy_counter,
        sample_period_s: 1.0 / opts.rate_hz,
        counter_source: counters.as_ref().map(|c| c.describe()),
        counters: columns,
        command: opts.program.clone(),
        kernel,
        launches: vec![],
        status: RunStatus::Running,
        summary: None,
        warnings: vec![],
        replay: None,
    };
    let clock = Clock::new();
    let (tx, rx) = std::sync::mpsc::channel();
    // Validates the rate before anything is written.
    let psampler = spawn_power(power, opts.rate_hz, clock, tx.clone())?;
    let mut writer = match TraceWriter::create(&opts.out, &meta) {
        Ok(w) => w,
        Err(e) => {
            let _ = psampler.stop();
            return Err(e.into());
        }
    };
    let mut c = Consumer {
        rx,
        merger: Merger {
            pending: vec![],
            intervals: vec![],
            covered_until: f64::NEG_INFINITY,
            have_counters: counters.is_some(),
            n_counters: counter_names.len(),
            inputs: inputs.into_iter().map(|(_, ix)| ix).collect(),
            last_t: None,
            run_start: f64::INFINITY,
            written: vec![],
        },
        phase: Phase::Idle,
        idle: Acc::default(),
        with_profiler: Acc::default(),
        energies: vec![],
        warnings: vec![],
        power_failed: false,
    };

    // Phase 1: idle, power only.
    let idle_d = Duration::from_secs_f64(opts.idle_seconds);
    c.drain(idle_d);
    // Phase 2: idle with the counter profiler running (its own overhead).
    let mut csampler = None;
    if let Some(mut src) = counters {
        if let Err(e) = src.start(clock.now_s()) {
            let _ = psampler.stop();
            meta.status = RunStatus::Failed(e.to_string());
            writer.finish(&meta)?;
            return Err(e);
        }
        csampler = Some(spawn_counters(src, opts.rate_hz.min(100.0), clock, tx.clone())?);
        c.phase = Phase::Profiler;
        c.drain(idle_d);
    }
    drop(tx);

    // Phase 3: the program, repeated.
    c.phase = Phase::Run;
    psampler.mark_energy();
    c.merger.run_start = clock.now_s();
    let mut reps = 0u32;
    let mut exit;
    let mut status = RunStatus::Complete;
    'runs: loop {
        if interrupted.load(Ordering::SeqCst) {
            // Interrupted during the idle phases: the program is not started at all.
            status = RunStatus::Interrupted;
            exit = ProgramExit::Killed;
            break;
        }
        let mut child: Child = match Command::new(&program).args(&opts.program[1..]).spawn() {
            Ok(ch) => ch,
            Err(e) => {
                status = RunStatus::Failed(format!("cannot start {}: {e}", program.display()));
                exit = ProgramExit::Killed;
                break;
            }
        };
        reps += 1;
        let mut stop_seen: Option<std::time::Instant> = None;
        let st = loop {
            c.drain(Duration::from_millis(20));
            writer.write(&c.merger.ready(false))?;
            match child.try_wait() {
                Ok(Some(st)) => break Some(st),
                Ok(None) => {}
                Err(e) => {
                    c.warnings.push(format!("waiting for the program: {e}"));
                    break None;
                }
            }
            if interrupted.load(Ordering::SeqCst) || c.power_failed {
                // A terminal's Ctrl-C reaches the program too: give it a second to exit on its own.
                let since = *stop_seen.get_or_insert_with(std::time::Instant::now);
                if since.elapsed() > Duration::from_secs(1) {
                    let _ = child.kill();
                    let _ = child.wait();
                    exit = ProgramExit::Killed;
                    status = if c.power_failed {
                        RunStatus::Failed(c.warnings.join("; "))
                    } else {
                        RunStatus::Interrupted
                    };
                    break 'runs;
                }
            }
        };
        match st.map(|s| (s.code(), s.success())) {
            Some((Some(code), true)) => exit = ProgramExit::Code(code),
            Some((Some(code), false)) => {
                exit = ProgramExit::Code(code);
                status = RunStatus::Failed(format!("the program exited with code {code}"));
                break;
            }
            Some((None, _)) => {
                exit = ProgramExit::Signal;
                status = if interrupted.load(Ordering::SeqCst) {
                    RunStatus::Interrupted
                } else {
                    RunStatus::Failed("the program was killed by a signal".into())
                };
                break;
            }
            None => {
                exit = ProgramExit::Killed;
                status = RunStatus::Failed(c.warnings.join("; "));
                break;
            }
        }
        if interrupted.load(Ordering::SeqCst) {
            status = RunStatus::Interrupted;
            break;
        }
        if c.power_failed {
            status = RunStatus::Failed(c.warnings.join("; "));
            break;
        }
        if clock.now_s() - c.merger.run_start >= opts.min_seconds {
            break;
        }
    }
    let run_end = clock.now_s();

    // Phase 4: stop the samplers (the power sampler sends the final energy reading), write the rest.
    let (power, pstats) = psampler.stop()?;
    for w in power.warnings() {
        if !c.warnings.contains(&w) {
            c.warnings.push(w);
        }
    }
    let cstats = match csampler {
        Some(s) => {
            let (source, stats) = s.stop()?;
            // Lost samples, assumed clocks, re-based timestamps: said in the trace, never dropped.
            for w in source.warnings() {
                if !c.warnings.contains(&w) {
                    c.warnings.push(w);
                }
            }
            Some(stats)
        }
        None => None,
    };
    c.drain_all();
    writer.write(&c.merger.ready(true))?;

    let rows = writer.rows();
    let written = c.merger.written.clone();
    let duration_s = run_end - c.merger.run_start;
    let power_integral_j: f64 = written.iter().map(|(p, dt)| p * dt).sum();
    let mean_power_w = if written.is_empty() {
        f64::NAN
    } else {
        written.iter().map(|(p, _)| p).sum::<f64>() / written.len() as f64
    };
    // Energy counter: the reading at the run's start (first after the mark) and at the stop (last).
    let after_start: Vec<&(f64, Option<f64>)> =
        c.energies.iter().filter(|(t, _)| *t >= c.merger.run_start - 1.0).collect();
    let counter_energy = match (after_start.first(), after_start.last()) {
        (Some((t0, Some(e0))), Some((t1, Some(e1)))) if t1 > t0 && e1 >= e0 => Some(e1 - e0),
        _ => None,
    };
    let (energy_j, energy_source) = match counter_energy {
        Some(e) => (e, "energy_counter"),
        None => (power_integral_j, "power_integral"),
    };
    let idle_power_w = c.idle.mean();
    let profiler_overhead_w = c.with_profiler.mean().zip(idle_power_w).map(|(a, b)| a - b);
    let sampler_cpu_s = match (pstats.cpu_s, cstats.as_ref().map(|s| s.cpu_s)) {
        (Some(a), Some(Some(b))) => Some(a + b),
        (Some(a), None) => Some(a),
        _ => None,
    };
    meta.summary = Some(TraceSummary {
        samples: rows,
        duration_s,
        mean_power_w,
        energy_j,
        energy_source: energy_source.into(),
        power_integral_j,
        idle_power_w,
        profiler_overhead_w,
        sampler_cpu_s,
        repetitions: reps,
        exit_code: match exit {
            ProgramExit::Code(c) => Some(c),
            _ => None,
        },
        achieved_rate_hz: if duration_s > 0.0 { rows as f64 / duration_s } else { 0.0 },
    });
    meta.status = status;
    meta.warnings = c.warnings;
    writer.finish(&meta)?;
    Ok((RunOutcome { meta, exit, counter_names }, power))
}

/// The trace of application-replay pass `pass` (1-based) of the merged trace `out`:
/// `app.csv` → `app.pass2.csv` (sidecar `app.pass2.json`).
pub fn pass_path(out: &Path, pass: usize) -> PathBuf {
    out.with_extension(format!("pass{pass}.csv"))
}

/// Application replay: runs the program once per counter group (`passes` of them), pass k with the
/// counter source `counters_for(k)` (k from 0), each pass a full [`run`] into [`pass_path`]`(out, k+1)`,
/// then merges the passes into `opts.out` (see the module docs). The same power source samples every
/// pass. `Err` means nothing was measured (pass 1 could not start, or an output already exists — all are
/// checked before anything runs); a later pass that cannot start, fails or is interrupted ends the replay
/// and the merged trace holds the passes before it, with the sidecar saying what happened.
pub fn run_replay<P, F>(
    opts: &RunOptions,
    power: P,
    passes: usize,
    mut counters_for: F,
    interrupted: Arc<AtomicBool>,
) -> Result<RunOutcome>
where
    P: PowerSource + 'static,
    F: FnMut(usize) -> Result<Box<dyn CounterSource>>,
{
    if passes == 0 {
        return Err(Error::Invalid("application replay needs at least one counter group".into()));
    }
    resolve_program(opts.program.first().map_or("", String::as_str))?;
    // Nothing is overwritten, and a name clash is found before the first pass, not after the third.
    let outputs = std::iter::once(opts.out.clone()).chain((1..=passes).map(|k| pass_path(&opts.out, k)));
    for p in outputs {
        for f in [sidecar_path(&p), p] {
            if f.exists() {
                return Err(Error::Invalid(format!(
                    "{}: already exists; choose another --out or remove it (nothing was overwritten)",
                    f.display()
                )));
            }
        }
    }
    let mut power = Some(power);
    let mut done: Vec<(PathBuf, RunOutcome)> = Vec::new();
    let mut failure: Option<String> = None;
    for k in 0..passes {
        if k > 0 && interrupted.load(Ordering::SeqCst) {
            break;
        }
        let Some(p) = power.take() else { break };
        let counters = match counters_for(k) {
            Ok(c) => c,
            Err(e) if k == 0 => return Err(e),
            Err(e) => {
                failure = Some(format!("pass {} of {passes} could not start: {e}", k + 1));
                break;
            }
        };
        let mut o = opts.clone();
        o.out = pass_path(&opts.out, k + 1);
        match run_once(&o, p, Some(counters), interrupted.clone()) {
            Ok((outcome, p)) => {
                power = Some(p);
                let go_on = matches!(outcome.meta.status, RunStatus::Complete)
                    && outcome.exit == ProgramExit::Code(0);
                done.push((o.out, outcome));
                if !go_on {
                    break;
                }
            }
            Err(e) if k == 0 => return Err(e),
            Err(e) => {
                failure = Some(format!("pass {} of {passes} could not start: {e}", k + 1));
                break;
            }
        }
    }
    merge_passes(&opts.out, &done, passes, failure)
}

/// Merges the passes run so far (at least pass 1) into `out`: pass 1's rows, with the counters of every
/// pass aligned onto them, and the model inputs derived over all of them.
fn merge_passes(
    out: &Path,
    done: &[(PathBuf, RunOutcome)],
    planned: usize,
    failure: Option<String>,
) -> Result<RunOutcome> {
    let (base_path, base) = done.first().ok_or_else(|| Error::Invalid("no pass ran".into()))?;
    let base_rows = read_rows(base_path, &base.meta)?;
    // Columns of the merged trace, pass by pass (a name met twice keeps its first pass).
    let mut names: Vec<String> = Vec::new();
    let mut columns: Vec<Vec<f64>> = Vec::new(); // one Vec per column, one value per base row
    let mut records = Vec::new();
    for (k, (path, o)) in done.iter().enumerate() {
        let rows = if k == 0 { base_rows.clone() } else { read_rows(path, &o.meta)? };
        let mut idx = Vec::new();
        let mut mine = Vec::new();
        for n in &o.counter_names {
            if names.contains(n) {
                continue;
            }
            if let Some(i) = o.meta.counters.iter().position(|c| c == n) {
                idx.push(i);
                mine.push(n.clone());
            }
        }
        let aligned = align_rates(&base_rows, &rows, &idx);
        for j in 0..idx.len() {
            columns.push(aligned.iter().map(|r| r[j]).collect());
        }
        names.extend(mine.iter().cloned());
        let s = o.meta.summary.clone();
        records.push(PassRecord {
            pass: k + 1,
            trace: path.file_name().map_or_else(String::new, |f| f.to_string_lossy().into_owned()),
            counters: mine,
            counter_source: o.meta.counter_source.clone(),
            status: o.meta.status.clone(),
            duration_s: s.as_ref().map(|s| s.duration_s),
            mean_power_w: s.as_ref().map(|s| s.mean_power_w),
            energy_j: s.as_ref().map(|s| s.energy_j),
            repetitions: s.as_ref().map_or(0, |s| s.repetitions),
            idle_power_w: s.as_ref().and_then(|s| s.idle_power_w),
            profiler_overhead_w: s.as_ref().and_then(|s| s.profiler_overhead_w),
        });
    }
    let derived = derived_inputs(&names);
    let mut meta = base.meta.clone();
    meta.counters = names.clone();
    meta.counters.extend(derived.iter().map(|(n, _)| n.clone()));
    meta.counter_source = Some(format!(
        "application replay: {} of {planned} PM-sampling passes, one run of the program each (see replay.passes)",
        done.len()
    ));
    let complete: Vec<&PassRecord> =
        records.iter().filter(|r| matches!(r.status, RunStatus::Complete)).collect();
    meta.replay = Some(Replay {
        mode: "application".into(),
        note:
            "one run of the program per PM-sampling group; pass 1 gives time, power, clocks and the summary, \
               the counters of pass k are time-weighted onto its rows by time since the program started; the \
               passes are separate runs, so run-to-run variation enters (see the spreads)"
                .into(),
        duration_spread: Spread::of(&complete.iter().filter_map(|r| r.duration_s).collect::<Vec<_>>()),
        mean_power_spread: Spread::of(&complete.iter().filter_map(|r| r.mean_power_w).collect::<Vec<_>>()),
        passes: records,
    });
    meta.warnings = done
        .iter()
        .enumerate()
        .flat_map(|(k, (_, o))| o.meta.warnings.iter().map(move |w| format!("pass {}: {w}", k + 1)))
        .collect();
    let last = &done[done.len() - 1].1;
    meta.status = match (&failure, done.iter().find(|(_, o)| !matches!(o.meta.status, RunStatus::Complete))) {
        (Some(f), _) => RunStatus::Failed(f.clone()),
        (None, Some((_, o))) => match &o.meta.status {
            RunStatus::Failed(why) => RunStatus::Failed(format!("pass {}: {why}", done.len())),
            other => other.clone(),
        },
        (None, None) if last.exit != ProgramExit::Code(0) => {
            RunStatus::Failed(format!("pass {}: the program did not exit with 0", done.len()))
        }
        (None, None) if done.len() < planned => RunStatus::Interrupted,
        (None, None) => RunStatus::Complete,
    };
    let rows: Vec<TraceRow> = base_rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut c: Vec<f64> = columns.iter().map(|col| col[i]).collect();
            let d: Vec<f64> = derived.iter().map(|(_, ix)| ix.iter().map(|&j| c[j]).sum()).collect();
            c.extend(d);
            TraceRow { counters: c, ..r.clone() }
        })
        .collect();
    if let Some(s) = meta.summary.as_mut() {
        s.samples = rows.len() as u64;
    }
    let mut w = TraceWriter::create(out, &meta)?;
    w.write(&rows)?;
    w.finish(&meta)?;
    Ok(RunOutcome { meta, exit: last.exit, counter_names: names })
}

#[derive(Default)]
struct Acc {
    n: u64,
    sum: f64,
}

impl Acc {
    fn add(&mut self, x: f64) {
        self.n += 1;
        self.sum += x;
    }
    fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / self.n as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::{FakeCounters, FakePower};
    use gpumodel_models::Table;

    fn opts(dir: &Path, program: &[&str]) -> RunOptions {
        RunOptions {
            program: program.iter().map(|s| s.to_string()).collect(),
            out: dir.join("t.csv"),
            rate_hz: 100.0,
            min_seconds: 0.0,
            idle_seconds: 0.15,
            device: 0,
            host: "h".into(),
            chip: None,
        }
    }

    /// Issue 16 item 2: samples the counter source lost (a full KEEP_OLDEST buffer) are counted and end
    /// up in the sidecar's warnings, read back from disk.
    #[test]
    fn lost_counter_samples_are_counted_and_reported_in_the_sidecar() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Clock::new();
        let counters = FakeCounters::new(&["inst_executed"], 0.01, |_| vec![4e9]).dropping_every(5);
        let power = FakePower::constant(clock, 100.0);
        let o = opts(dir.path(), &["/bin/sleep", "0.2"]);
        run(&o, power, Some(Box::new(counters)), Arc::new(AtomicBool::new(false))).unwrap();
        let meta = gpumodel_models::trace::read_meta(&o.out).unwrap();
        let w = meta.warnings.iter().find(|w| w.contains("PM samples lost")).expect("a lost-samples warning");
        let n: u64 = w.trim_start_matches("about ").split(' ').next().unwrap().parse().unwrap();
        // ~0.5 s of 10 ms intervals, one in five dropped.
        assert!((5..=25).contains(&n), "{w}");
        assert!(w.contains("hardware-buffer overflow"), "{w}");
    }

    /// The fake power source reads 30 W more while the fake counters run: the idle phases must
    /// report 100 W idle and a 30 W profiler overhead.
    #[test]
    fn idle_power_and_profiler_overhead_are_accounted() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Clock::new();
        let counters = FakeCounters::new(&["inst_executed"], 0.01, |_| vec![4e9]);
        let running = counters.running_flag();
        let power =
            FakePower::from_fn(clock, move |_| if running.load(Ordering::SeqCst) { 130.0 } else { 100.0 });
        let o = opts(dir.path(), &["/bin/sleep", "0.1"]);
        let r = run(&o, power, Some(Box::new(counters)), Arc::new(AtomicBool::new(false))).unwrap();
        let s = r.meta.summary.unwrap();
        assert_eq!(s.idle_power_w, Some(100.0));
        // The flag flips between two power reads: allow one sample of the transition.
        let oh = s.profiler_overhead_w.unwrap();
        assert!((oh - 30.0).abs() < 3.1, "{oh}");
        assert_eq!(s.exit_code, Some(0));
        // Every row is in the program phase: power 130 W (counters running), rate 4e9/s.
        let t = Table::read_csv(&o.out, "kernel").unwrap();
        assert!(t.column("power_w").unwrap().iter().all(|&p| p == 130.0));
        assert!(t.column("inst_executed").unwrap().iter().all(|&c| (c - 4e9).abs() < 1.0));
        assert!(t.column("exec_inst").unwrap().iter().all(|&c| (c - 4e9).abs() < 1.0));
    }

    #[test]
    fn counter_rates_are_time_weighted_over_each_row() {
        let mut m = Merger {
            pending: vec![],
            intervals: vec![],
            covered_until: f64::NEG_INFINITY,
            have_counters: true,
            n_counters: 1,
            inputs: vec![],
            last_t: None,
            run_start: 0.0,
            written: vec![],
        };
        let reading =
            crate::power::PowerReading { power: gpumodel_models::Watts(1.0), core: None, mem: None };
        m.push_power(PowerSample { t_s: 0.0, reading, late_s: 0.0 });
        m.push_power(PowerSample { t_s: 1.0, reading, late_s: 0.0 });
        // Not covered yet: nothing is ready.
        assert!(m.ready(false).is_empty());
        m.push_counters(vec![
            CounterInterval { start_s: 0.0, end_s: 0.25, rates: vec![100.0] },
            CounterInterval { start_s: 0.25, end_s: 1.0, rates: vec![20.0] },
        ]);
        let rows = m.ready(false);
        assert_eq!(rows.len(), 1);
        // (100·0.25 + 20·0.75) / 1 = 40 events/s.
        assert!((rows[0].counters[0] - 40.0).abs() < 1e-9);
        assert_eq!(rows[0].dt_s, 1.0);
    }

    #[test]
    fn energy_counter_matches_the_power_integral_with_the_fake() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Clock::new();
        let mut o = opts(dir.path(), &["/bin/sleep", "0.3"]);
        o.idle_seconds = 0.0;
        let r = run(&o, FakePower::constant(clock, 50.0), None, Arc::new(AtomicBool::new(false))).unwrap();
        let s = r.meta.summary.unwrap();
        assert_eq!(s.energy_source, "energy_counter");
        // 50 W over ~0.3 s; counter read within one period of each end.
        assert!((s.energy_j - 50.0 * s.duration_s).abs() < 50.0 * 0.03, "{} vs {}", s.energy_j, s.duration_s);
        assert!((s.power_integral_j - s.energy_j).abs() < 50.0 * 0.03);
    }

    #[test]
    fn restricted_counters_fail_before_the_program_runs_and_say_why() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Clock::new();
        let marker = dir.path().join("ran");
        let o = opts(dir.path(), &["/bin/touch", marker.to_str().unwrap()]);
        let e = run(
            &o,
            FakePower::constant(clock, 1.0),
            Some(Box::new(FakeCounters::new(&["a"], 0.01, |_| vec![0.0]).restricted())),
            Arc::new(AtomicBool::new(false)),
        )
        .unwrap_err();
        assert!(e.to_string().contains("NVreg_RestrictProfilingToAdminUsers=0"), "{e}");
        assert!(!marker.exists());
        let meta = gpumodel_models::trace::read_meta(&o.out).unwrap();
        assert!(matches!(meta.status, RunStatus::Failed(ref m) if m.contains("admin")));
    }

    #[test]
    fn a_power_source_that_dies_stops_the_run_but_keeps_the_rows() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Clock::new();
        let mut o = opts(dir.path(), &["/bin/sleep", "20"]);
        o.idle_seconds = 0.0;
        let r = run(
            &o,
            FakePower::constant(clock, 1.0).failing_after(10),
            None,
            Arc::new(AtomicBool::new(false)),
        )
        .unwrap();
        assert!(
            matches!(r.meta.status, RunStatus::Failed(ref m) if m.contains("GPU is lost")),
            "{:?}",
            r.meta.status
        );
        assert_eq!(r.exit, ProgramExit::Killed);
        let rows = std::fs::read_to_string(&o.out).unwrap().lines().count() - 1;
        assert!((8..=10).contains(&rows), "{rows}");
    }

    fn replay_opts(dir: &Path, program: &[&str]) -> RunOptions {
        RunOptions { idle_seconds: 0.0, ..opts(dir, program) }
    }

    /// Pass 1 samples `gld_request` = 100 + 1000·t, pass 2 the L1 hits and misses = 200 + 1000·t and
    /// 300 + 1000·t, t in seconds since the pass's run clock started (≈ since its program started). On
    /// the merged rows, aligned by time since the program started, hit − gld_request stays ≈ 100 (the
    /// tolerance of 150 allows 150 ms of start-up jitter between passes on a loaded machine); had pass 2
    /// been placed after pass 1 on one clock, the difference would be ≈ 100 − 1000 × 0.5 s. G_load is
    /// derived across the passes.
    #[test]
    fn replay_merges_every_group_on_time_since_the_program_started() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Clock::new();
        let o = replay_opts(dir.path(), &["/bin/sleep", "0.5"]);
        let groups: Vec<Vec<&'static str>> =
            vec![vec!["gld_request"], vec!["l1_global_load_hit", "l1_global_load_miss"]];
        let r = run_replay(
            &o,
            FakePower::constant(clock, 70.0),
            2,
            |k| {
                let g = groups[k].clone();
                let base = 100.0 * (k as f64 + 1.0);
                let n = g.len();
                Ok(Box::new(FakeCounters::new(&g, 0.01, move |t| {
                    (0..n).map(|j| base + 100.0 * j as f64 + 1000.0 * t).collect()
                })) as Box<dyn CounterSource>)
            },
            Arc::new(AtomicBool::new(false)),
        )
        .unwrap();
        assert_eq!(r.meta.status, RunStatus::Complete);
        assert_eq!(r.exit, ProgramExit::Code(0));
        let t = Table::read_csv(&o.out, "kernel").unwrap();
        let gld = t.column("gld_request").unwrap();
        let hit = t.column("l1_global_load_hit").unwrap();
        let miss = t.column("l1_global_load_miss").unwrap();
        let g_load = t.column("G_load").unwrap();
        assert!(t.n_rows() >= 10, "{}", t.n_rows());
        // Interior rows: both passes cover them (the last rows may outlast the shorter pass).
        for i in 1..t.n_rows() - 3 {
            assert!((hit[i] - gld[i] - 100.0).abs() < 150.0, "row {i}: {} vs {}", hit[i], gld[i]);
            assert!((miss[i] - hit[i] - 100.0).abs() < 1e-6, "row {i}");
            assert!((g_load[i] - (gld[i] + hit[i] + miss[i])).abs() < 1e-6, "row {i}");
        }
        let rp = r.meta.replay.unwrap();
        assert_eq!(rp.passes.len(), 2);
        assert_eq!(rp.passes[0].counters, ["gld_request"]);
        assert_eq!(rp.passes[1].counters, ["l1_global_load_hit", "l1_global_load_miss"]);
        assert_eq!(rp.passes[1].trace, "t.pass2.csv");
        for p in &rp.passes {
            let d = p.duration_s.unwrap();
            assert!((0.5..2.0).contains(&d), "{d}");
            assert_eq!(p.mean_power_w, Some(70.0));
        }
        let spread = rp.duration_spread.unwrap();
        assert!(spread.min >= 0.5 && spread.max >= spread.min);
        // Each pass keeps its own trace, with its power series.
        for k in 1..=2 {
            let m = gpumodel_models::trace::read_meta(&pass_path(&o.out, k)).unwrap();
            assert_eq!(m.status, RunStatus::Complete);
        }
    }

    /// Ctrl-C during pass 2 of 3: pass 1's trace is left exactly as it was written, the merged trace
    /// holds pass 1's rows with what pass 2 measured, the sidecar says "interrupted", and pass 3 never
    /// runs.
    #[test]
    fn interrupting_pass_2_keeps_pass_1() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Clock::new();
        let dur = dir.path().join("dur");
        std::fs::write(&dur, "0.2").unwrap();
        let script = format!("sleep $(cat {})", dur.display());
        let o = replay_opts(dir.path(), &["/bin/sh", "-c", &script]);
        let interrupted = Arc::new(AtomicBool::new(false));
        let flag = interrupted.clone();
        let pass1 = pass_path(&o.out, 1);
        let mut pass1_text = String::new();
        let r = run_replay(
            &o,
            FakePower::constant(clock, 50.0),
            3,
            |k| {
                if k == 1 {
                    pass1_text = std::fs::read_to_string(&pass1).unwrap();
                    // Pass 2's program would run for 30 s: interrupt it after 0.3 s.
                    std::fs::write(&dur, "30").unwrap();
                    let flag = flag.clone();
                    std::thread::spawn(move || {
                        std::thread::sleep(Duration::from_millis(300));
                        flag.store(true, Ordering::SeqCst);
                    });
                }
                Ok(Box::new(FakeCounters::new(&[["a", "b", "c"][k]], 0.01, |_| vec![1.0]))
                    as Box<dyn CounterSource>)
            },
            interrupted,
        )
        .unwrap();
        assert_eq!(r.meta.status, RunStatus::Interrupted);
        assert_eq!(std::fs::read_to_string(&pass1).unwrap(), pass1_text);
        assert!(!pass1_text.is_empty());
        assert!(!pass_path(&o.out, 3).exists());
        let rp = r.meta.replay.unwrap();
        assert_eq!(rp.passes.len(), 2);
        assert_eq!(rp.passes[0].status, RunStatus::Complete);
        assert_eq!(rp.passes[1].status, RunStatus::Interrupted);
        let t = Table::read_csv(&o.out, "kernel").unwrap();
        assert_eq!(t.n_rows(), pass1_text.lines().count() - 1);
        assert!(t.column("b").unwrap().iter().any(|v| *v == 1.0));
        assert!(t.column("c").is_none());
    }

    /// Counters that refuse to start in pass 2 end the replay with the reason; pass 1 is merged.
    #[test]
    fn a_pass_that_cannot_start_ends_the_replay_and_says_which() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Clock::new();
        let o = replay_opts(dir.path(), &["/bin/sleep", "0.1"]);
        let r = run_replay(
            &o,
            FakePower::constant(clock, 50.0),
            2,
            |k| {
                let c = FakeCounters::new(&["a"], 0.01, |_| vec![1.0]);
                Ok(Box::new(if k == 1 { c.restricted() } else { c }) as Box<dyn CounterSource>)
            },
            Arc::new(AtomicBool::new(false)),
        )
        .unwrap();
        assert!(
            matches!(r.meta.status, RunStatus::Failed(ref m) if m.starts_with("pass 2 of 2 could not start") && m.contains("admin")),
            "{:?}",
            r.meta.status
        );
        assert_eq!(r.meta.replay.unwrap().passes.len(), 1);
        assert!(Table::read_csv(&o.out, "kernel").unwrap().n_rows() > 0);
    }

    /// A pass trace left from an earlier run stops the replay before the program runs at all.
    #[test]
    fn an_existing_pass_trace_stops_the_replay_before_anything_runs() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Clock::new();
        let marker = dir.path().join("ran");
        let o = replay_opts(dir.path(), &["/bin/touch", marker.to_str().unwrap()]);
        std::fs::write(pass_path(&o.out, 2), "precious").unwrap();
        let e = run_replay(
            &o,
            FakePower::constant(clock, 1.0),
            2,
            |_| Ok(Box::new(FakeCounters::new(&["a"], 0.01, |_| vec![0.0])) as Box<dyn CounterSource>),
            Arc::new(AtomicBool::new(false)),
        )
        .unwrap_err();
        assert!(e.to_string().contains("t.pass2.csv: already exists"), "{e}");
        assert!(!marker.exists() && !o.out.exists() && !pass_path(&o.out, 1).exists());
        assert_eq!(std::fs::read_to_string(pass_path(&o.out, 2)).unwrap(), "precious");
    }

    /// `branch` is both a counter and a model input: the trace must not name the column twice.
    #[test]
    fn an_input_named_like_its_counter_is_not_repeated() {
        let names: Vec<String> = ["branch", "inst_executed"].iter().map(|s| s.to_string()).collect();
        let d: Vec<String> = derived_inputs(&names).into_iter().map(|(n, _)| n).collect();
        assert_eq!(d, ["exec_inst"]);
    }
}
