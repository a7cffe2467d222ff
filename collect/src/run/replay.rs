//! Application replay (`collect --pm-passes all`): one full run per counter group, merged on time since
//! the program started (see the parent module's docs).

use super::merger::derived_inputs;
use super::{ProgramExit, RunOptions, RunOutcome, resolve_program, run_once};
use crate::counters::CounterSource;
use crate::error::{Error, Result};
use crate::power::PowerSource;
use gpumodel_models::trace::{
    PassRecord, Replay, RunStatus, Spread, TraceRow, TraceWriter, align_rates, read_rows, sidecar_path,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The trace of application-replay pass `pass` (1-based) of the merged trace `out`:
/// `app.csv` → `app.pass2.csv` (sidecar `app.pass2.json`).
pub fn pass_path(out: &Path, pass: usize) -> PathBuf {
    out.with_extension(format!("pass{pass}.csv"))
}

/// Application replay: runs the program once per counter group (`passes` of them), pass k with the
/// counter source `counters_for(k)` (k from 0), each pass a full [`run`](super::run) into
/// [`pass_path`]`(out, k+1)`, then merges the passes into `opts.out` (see the module docs). The same
/// power source samples every pass. `Err` means nothing was measured (pass 1 could not start, or an
/// output already exists — all are checked before anything runs); a later pass that cannot start, fails
/// or is interrupted ends the replay and the merged trace holds the passes before it, with the sidecar
/// saying what happened.
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
