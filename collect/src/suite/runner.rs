//! The run loop: every kernel at every clock pair, one table row per run flushed at once, `--resume`
//! skipping the rows the table has.

use super::profiles::ProfilesOutcome;
use super::table::{self, SuiteMetadata, feature_set_path, feature_set_toml, read_done};
use super::{ClockOutcome, SuiteDevice, SuiteKernel};
use crate::Error;
use crate::clocks::{ClockPair, ClockPlan, resolve_pairs};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// What to run and where to write it.
#[derive(Debug, Clone)]
pub struct Plan {
    pub kernels: Vec<SuiteKernel>,
    /// Clock pairs to sweep (`--clocks`): the current clocks, a list, or `auto` (spread over what the GPU
    /// supports).
    pub clocks: ClockPlan,
    /// Minimum measured duration per kernel × clock pair, seconds.
    pub min_seconds: f64,
    /// The training table (CSV); the metadata goes beside it as `<out>.json`.
    pub out: PathBuf,
    /// Continue an existing table, skipping the kernel × clock rows it already holds.
    pub resume: bool,
}

/// Progress of a run, for the progress bar.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    /// The run starts: total kernel × clock runs, and how many a resumed table already holds.
    Start { total: usize, already_done: usize },
    /// One kernel × clock run finished (or was skipped because the table has it).
    Step { kernel: String, clocks: String },
    /// A warning to show once (e.g. clocks cannot be set).
    Warning(String),
}

/// What a run did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Rows written by this run.
    pub rows_written: usize,
    /// Rows the resumed table already had.
    pub rows_kept: usize,
    /// Whether the run stopped early (Ctrl-C); every finished row is in the table.
    pub interrupted: bool,
    /// Warnings issued (clock control refused, …).
    pub warnings: Vec<String>,
    /// The utilization profiles written beside the table (`<out>.profiles.csv`), when its rows span two
    /// or more clock pairs and the run finished.
    pub profiles: Option<PathBuf>,
}

/// The clock pairs a plan runs at on `dev` (`None`: the current clocks, nothing set). A list is checked
/// against the clocks the GPU supports where it can list them (else a pair it refuses runs at the current
/// clocks, with a warning); `auto` needs that list.
fn requests(plan: &ClockPlan, dev: &dyn SuiteDevice) -> Result<Vec<Option<ClockPair>>, Error> {
    let pairs = match plan {
        ClockPlan::Current => return Ok(vec![None]),
        ClockPlan::List(pairs) => match dev.supported_clocks() {
            Ok(supported) => resolve_pairs(plan, &supported)?,
            Err(_) => pairs.clone(),
        },
        ClockPlan::Auto => resolve_pairs(plan, &dev.supported_clocks()?)?,
    };
    Ok(pairs.into_iter().map(Some).collect())
}

/// Runs the suite: for each clock pair (outer loop, since clock changes are slow), each kernel; one row
/// per run, flushed at once. `stop` is checked before every run (set it from a Ctrl-C handler).
pub fn run_suite(
    dev: &mut dyn SuiteDevice,
    plan: &Plan,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(Progress),
) -> Result<Summary, Error> {
    if !(plan.min_seconds.is_finite() && plan.min_seconds > 0.0) {
        return Err(Error::Invalid(format!(
            "--min-seconds {} must be a number > 0 (the sampler needs time to see each kernel)",
            plan.min_seconds
        )));
    }
    let requests = requests(&plan.clocks, dev)?;
    if plan.kernels.is_empty() || requests.is_empty() {
        return Err(Error::Invalid("nothing to run: no kernels or no clocks selected".into()));
    }
    let done = if plan.out.exists() {
        if !plan.resume {
            return Err(Error::Output(format!(
                "{} exists: pass --resume to continue it, or choose another --out (nothing was changed)",
                plan.out.display()
            )));
        }
        read_done(&plan.out)?
    } else {
        Default::default()
    };
    let info = dev.info();
    // Profiles of an earlier run describe another table: they go now, and come back whole when this run
    // finishes (an interrupted or failed run leaves none).
    let profiles = super::profiles::profiles_path(&plan.out);
    if let Err(e) = std::fs::remove_file(&profiles)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        return Err(Error::io(&profiles, e));
    }
    let mut writer = table::RowWriter::open(&plan.out, done.is_empty() && !plan.out.exists())?;
    let mut meta = SuiteMetadata::new(&info, plan, &requests);
    meta.write(&plan.out)?;

    let total = plan.kernels.len() * requests.len();
    let mut summary = Summary {
        rows_written: 0,
        rows_kept: done.len(),
        interrupted: false,
        warnings: Vec::new(),
        profiles: None,
    };
    progress(Progress::Start { total, already_done: done.len() });
    let mut touched_clocks = false;
    // The sweep, clock pairs (outer loop) × kernels; an error leaves it at once, with `touched_clocks`
    // telling whether the clocks are set to a pair.
    let swept = (|| -> Result<(), Error> {
        let mut clock_control = true;
        let mut seen_labels: Vec<String> = Vec::new();
        'clocks: for req in &requests {
            let mut req = if clock_control { *req } else { None };
            if let Some(pair) = req {
                let pending = plan.kernels.iter().any(|k| !done.contains(&(k.name.clone(), pair.label())));
                if pending && !stop.load(Ordering::SeqCst) {
                    match dev.set_clocks(pair)? {
                        ClockOutcome::Applied => touched_clocks = true,
                        ClockOutcome::Refused(why) => {
                            clock_control = false;
                            let w =
                                format!("cannot set clocks ({why}); running at the current clocks instead");
                            progress(Progress::Warning(w.clone()));
                            summary.warnings.push(w);
                            req = None;
                        }
                    }
                }
            }
            if req.is_none() && touched_clocks {
                // "current" means the driver's own clocks, not the last pair this run set.
                dev.reset_clocks()?;
                touched_clocks = false;
            }
            let label = req.map_or_else(|| "current".to_string(), |p| p.label());
            let repeat = seen_labels.contains(&label);
            seen_labels.push(label.clone());
            for kernel in &plan.kernels {
                if stop.load(Ordering::SeqCst) {
                    summary.interrupted = true;
                    break 'clocks;
                }
                if repeat || done.contains(&(kernel.name.clone(), label.clone())) {
                    progress(Progress::Step { kernel: kernel.name.clone(), clocks: label.clone() });
                    continue;
                }
                let m = dev.run(kernel, plan.min_seconds)?;
                writer.write(kernel, &label, &m)?;
                summary.rows_written += 1;
                progress(Progress::Step { kernel: kernel.name.clone(), clocks: label.clone() });
            }
        }
        Ok(())
    })();
    // The driver's clocks come back whatever happened: after the sweep, and after an error in it (a
    // failing kernel must not leave the GPU at the last pair). The sweep's error is the one returned; a
    // reset that fails after it is reported as a warning beside it.
    if touched_clocks {
        match (&swept, dev.reset_clocks()) {
            (_, Ok(())) => {}
            (Ok(()), Err(e)) => return Err(e),
            (Err(_), Err(e)) => progress(Progress::Warning(format!("putting the clocks back failed: {e}"))),
        }
    }
    swept?;
    if !summary.interrupted && (summary.rows_written + summary.rows_kept) > 0 {
        match super::profiles::write_profiles(&plan.out, &dev.info().name, &|pair| dev.peaks(pair))? {
            ProfilesOutcome::Written(p) => summary.profiles = Some(p),
            ProfilesOutcome::OnePair => {}
            ProfilesOutcome::NoPeaks => {
                let w = "this GPU's peak rates are not known: no utilization profiles were written beside \
                         the table (the power-model table is complete)"
                    .to_string();
                progress(Progress::Warning(w.clone()));
                summary.warnings.push(w);
            }
        }
    }
    meta.warnings = summary.warnings.clone();
    meta.interrupted = summary.interrupted;
    meta.write(&plan.out)?;
    write_feature_set(&plan.out)?;
    Ok(summary)
}

/// Writes `<out>.features.toml` from the table as it is on disk (resumed rows included).
fn write_feature_set(out: &Path) -> Result<(), Error> {
    let table = match gpumodel_models::Table::read_csv(out, gpumodel_models::table::GROUP_COLUMN) {
        Ok(t) => t,
        Err(_) => return Ok(()), // no rows yet (interrupted before the first): nothing to describe
    };
    let path = feature_set_path(out);
    std::fs::write(&path, feature_set_toml(&table)).map_err(|e| Error::io(&path, e))
}
