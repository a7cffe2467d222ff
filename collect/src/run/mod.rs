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
//!
//! One job per file: [`options`] (what a run is given and returns), `merger` (samples → rows), `phases`
//! (the consumer that accounts events to a phase), `repeat` (phase 3), `summary` (the sidecar's metadata and
//! summary), [`replay`] (application replay), [`report`] (what the command prints).

mod merger;
pub mod options;
mod phases;
mod repeat;
pub mod replay;
pub mod report;
mod summary;
#[cfg(test)]
mod tests;

pub use options::{ProgramExit, RunOptions, RunOutcome, resolve_program};
pub(crate) use repeat::program_command;
pub use replay::{pass_path, run_replay};

use crate::counters::CounterSource;
use crate::error::Result;
use crate::power::PowerSource;
use crate::sampler::{Clock, Running, SamplerStats, spawn_counters, spawn_power};
use gpumodel_models::trace::{RunStatus, TraceWriter};
use merger::derived_inputs;
use phases::{Consumer, Phase};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

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
    let program = opts.check()?;
    let info = power.info();
    let counter_names = counters.as_ref().map(|c| c.names()).unwrap_or_default();
    let inputs = derived_inputs(&counter_names);
    let mut columns = counter_names.clone();
    columns.extend(inputs.iter().map(|(n, _)| n.clone()));
    let mut meta = summary::start_meta(opts, &info, counters.as_ref().map(|c| c.describe()), columns);
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
    let mut c = Consumer::new(
        rx,
        counters.is_some(),
        counter_names.len(),
        inputs.into_iter().map(|(_, ix)| ix).collect(),
    );

    // Phase 1: idle, power only.
    let idle_d = Duration::from_secs_f64(opts.idle_seconds);
    c.drain_phase(idle_d);
    // Phase 2: idle with the counter profiler running (its own overhead).
    let mut csampler = None;
    if let Some(mut src) = counters {
        let started = clock.now_s();
        if let Err(e) = src.start(started) {
            let _ = psampler.stop();
            meta.status = RunStatus::Failed(e.to_string());
            writer.finish(&meta)?;
            return Err(e);
        }
        csampler = Some(spawn_counters(src, opts.rate_hz.min(100.0), clock, tx.clone())?);
        c.profiler_from = started;
        c.phase = Phase::Profiler;
        c.drain_phase(idle_d);
    }
    drop(tx);

    // Phase 3: the program, repeated.
    c.phase = Phase::Run;
    psampler.mark_energy();
    c.merger.run_start = clock.now_s();
    let reps = repeat::repeat_program(
        &program,
        &opts.program[1..],
        opts.program_stdout_to_stderr,
        opts.min_seconds,
        clock,
        &mut c,
        &mut writer,
        &interrupted,
    )?;
    let run_end = clock.now_s();

    // Phase 4: stop the samplers (the power sampler sends the final energy reading), write the rest.
    let (power, pstats, cstats) = stop_samplers(psampler, csampler, &mut c)?;
    c.drain_all();
    writer.write(&c.merger.ready(true))?;

    meta.summary =
        Some(summary::summarize(&c, writer.rows(), run_end, &pstats, cstats.as_ref(), reps.count, reps.exit));
    meta.status = reps.status;
    meta.warnings = c.warnings;
    writer.finish(&meta)?;
    Ok((RunOutcome { meta, exit: reps.exit, counter_names }, power))
}

/// Stops the power sampler and the counter sampler (if any), keeping their warnings in `c`; hands back
/// the power source and both samplers' statistics.
fn stop_samplers<P: PowerSource + 'static>(
    psampler: Running<P>,
    csampler: Option<Running<Box<dyn CounterSource>>>,
    c: &mut Consumer,
) -> Result<(P, SamplerStats, Option<SamplerStats>)> {
    let (power, pstats) = psampler.stop()?;
    c.warn_once(power.warnings());
    if let Some(first) = &pstats.first_skipped {
        c.warn_once(vec![format!(
            "{} power read(s) failed and were skipped, fewer than {} in a row (the first: {first})",
            pstats.skipped_reads,
            crate::sampler::MAX_FAILED_READS_IN_A_ROW
        )]);
    }
    let cstats = match csampler {
        Some(s) => {
            let (source, stats) = s.stop()?;
            // Lost samples, assumed clocks, re-based timestamps: said in the trace, never dropped.
            c.warn_once(source.warnings());
            Some(stats)
        }
        None => None,
    };
    Ok((power, pstats, cstats))
}
