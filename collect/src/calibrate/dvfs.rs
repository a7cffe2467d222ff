//! The DVFS memory constants of the timing model, measured at several core/memory clock pairs and fitted
//! in Wang & Chu's form (ICPADS 2018; restated in `timing_baselines.md`):
//!
//! * DRAM latency `L = latency_a · f_core/f_mem + latency_b` (core cycles, clocks in MHz): a pointer chase
//!   through a footprint far larger than any L2 with one step per 4 KiB (a new DRAM page each step), one
//!   thread, L1 bypassed; `L` is cycles per step. Least squares of `L` on `f_core/f_mem`. Random steps
//!   over 256 MiB also miss the first-level TLB: what the timing model calls DRAM latency includes that,
//!   as it does for a kernel with scattered accesses.
//! * DRAM departure delay `D = (delay_a / f_mem + delay_b) · f_core/f_mem`: the core cycles between two
//!   32-byte transactions of one SM when the whole grid streams from DRAM, `D = transaction_bytes /
//!   (bytes per core cycle per SM)` at saturation (the same k / 2k pass difference as the L2 bandwidth, so
//!   launch overhead cancels). Least squares of `D / (f_core/f_mem)` on `1/f_mem`.
//! * L2 hit latency `l2_latency` and delay `l2_delay`: the same chase and stream over a footprint inside
//!   the L2 (after a warm-up pass). The L2 runs on the core clock, so both are constant in core cycles: the
//!   median over the clock pairs is written, the spread across pairs reported.
//! * `l2_dram_bytes_per_core_cycle`: the highest DRAM-stream throughput per core cycle over the pairs. If
//!   at the lowest core clock the throughput per core cycle stays flat (within 3 % plus the repetitions'
//!   interquartile range) across the two highest memory clocks, the core clock limited it there: that is the L2's ceiling, and the pairs at the ceiling are
//!   left out of the delay fit (their bandwidth shows the ceiling, not the DRAM). Otherwise no pair was
//!   limited by the core clock and the value is a lower bound of the ceiling (said in its citation): a cap
//!   that never binds below what was measured.
//!
//! A fit needs [`MIN_DISTINCT`] distinct values of its regressor (a line through two x values cannot show
//! that it is a line); with fewer it is rejected with a message saying what to pass, and its constants are
//! not written. Fitted constants must be positive (the profile format and the model's form need it). Clocks
//! are NVML's (the memory clock as `nvmlDeviceGetClockInfo(NVML_CLOCK_MEM)` reports it), the convention of
//! the built-in profiles' `mem_mhz`.

use super::{CalLaunch, CalParams, CalibrationDevice, Chain, Estimate};
use crate::Error;
use crate::clocks::ClockPair;
use gpumodel_models::stats;
use serde::Serialize;

/// Distinct regressor values a fit needs (values within 1 % count as one).
pub const MIN_DISTINCT: usize = 3;

/// What was measured at one clock pair (medians and spread over the repetitions, core cycles).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairPoint {
    pub core_mhz: f64,
    pub mem_mhz: f64,
    /// Whether calibrate set these clocks (false: the clocks the GPU ran at, `--clocks current`).
    pub set_by_calibrate: bool,
    /// Clocks NVML reported right after the pair's launches, when it could read them.
    pub observed: Option<ClockPair>,
    pub dram_latency: Estimate,
    pub l2_latency: Estimate,
    pub dram_delay: Estimate,
    pub l2_delay: Estimate,
    /// Whole-GPU DRAM-stream bytes per core cycle.
    pub dram_bytes_per_core_cycle: Estimate,
    /// The idle board's power after the pair's launches, where the device reads its power.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle: Option<super::IdlePower>,
}

/// Page-stride DRAM chase: 256 MiB of u32, one step per 4 KiB (a new DRAM page each step), 65 536 slots.
const PAGE: Chain = Chain { elems: 1 << 26, stride: 1024, seed: 0xd7a3 };

/// Launches [`sweep`] makes over `pairs` clock pairs (for a progress bar).
pub fn launches(pairs: usize, p: CalParams) -> usize {
    pairs * p.repeats * 6
}

/// Measures the DVFS points: at each of `pairs` (set through the device, restored afterwards whatever
/// happens), or once at the current clocks when `pairs` is empty. `stop` is polled before each launch
/// (Ctrl-C): the clocks are restored and the sweep ends with an error.
pub fn sweep(
    dev: &mut dyn CalibrationDevice,
    pairs: &[ClockPair],
    p: CalParams,
    progress: &mut dyn FnMut(&str),
    stop: &dyn Fn() -> bool,
) -> Result<Vec<PairPoint>, Error> {
    if p.repeats == 0 || p.steps <= 0 {
        return Err(Error::Invalid("--repeats and --steps must be at least 1".into()));
    }
    let result = (|| {
        let mut points = Vec::new();
        if pairs.is_empty() {
            points.push(measure_point(dev, None, p, progress, stop)?);
        }
        for &pair in pairs {
            if stop() {
                return Err(interrupted());
            }
            dev.try_set_clocks(pair)?;
            let pt = measure_point(dev, Some(pair), p, progress, stop)?;
            points.push(pt);
        }
        Ok(points)
    })();
    let restored = if pairs.is_empty() { Ok(()) } else { dev.reset_clocks() };
    let points = result?;
    restored?;
    Ok(points)
}

/// The error of a sweep stopped by Ctrl-C / SIGTERM (the sweep restores the clocks before returning it).
fn interrupted() -> Error {
    Error::Interrupted(
        "calibrate stopped by a signal; the GPU's clocks were restored, nothing written".into(),
    )
}

/// The measurements at one pair: `set` is the pair calibrate set, `None` the clocks the GPU runs at — read
/// after the launches (before them an idle GPU may sit at its idle clocks), else the profile's clocks.
fn measure_point(
    dev: &mut dyn CalibrationDevice,
    set: Option<ClockPair>,
    p: CalParams,
    progress: &mut dyn FnMut(&str),
    stop: &dyn Fn() -> bool,
) -> Result<PairPoint, Error> {
    let facts = dev.facts();
    let sm = facts.value("sm_count").unwrap_or(1.0).max(1.0);
    let tx = facts.value("transaction_bytes").unwrap_or(32.0);
    let steps = f64::from(p.steps);
    let mut go = |dev: &mut dyn CalibrationDevice, l: &CalLaunch| -> Result<Vec<u64>, Error> {
        if stop() {
            return Err(interrupted());
        }
        let out = dev.run(l)?;
        progress(l.entry);
        Ok(out)
    };
    // L2 chase: a quarter of the L2 (128 KiB–4 MiB), one step per 128-byte line; one untimed pass first.
    let l2_elems = ((facts.l2_cache_bytes / 4).clamp(128 << 10, 4 << 20) / 4) as u32;
    let l2_chain = Chain { elems: l2_elems, stride: 32, seed: 0x12c4 };
    let (mut dram, mut l2) = (Vec::new(), Vec::new());
    for _ in 0..p.repeats {
        let l = CalLaunch { entry: "chase_global", threads: 32, chain: PAGE, steps: p.steps, knob: 0 };
        dram.push(super::first(&go(dev, &l)?, l.entry)? / steps);
        let l = CalLaunch {
            entry: "chase_l2",
            threads: 32,
            chain: l2_chain,
            steps: p.steps,
            knob: (l2_elems / 32) as i32,
        };
        l2.push(super::first(&go(dev, &l)?, l.entry)? / steps);
    }
    // Streams: the DRAM one over the 256 MiB chase buffer (far beyond any L2), the L2 one over half the L2.
    let mut stream = |chain: Chain, bytes: f64| -> Result<Vec<f64>, Error> {
        let k = (super::L2_STREAM_BYTES / 4.0 / bytes).ceil().max(1.0) as i32;
        let blocks = (8.0 * sm) as u32;
        let mut v = Vec::with_capacity(p.repeats);
        for _ in 0..p.repeats {
            let launch = |steps| CalLaunch { entry: "l2_stream", threads: 256, chain, steps, knob: -1 };
            let mut t = [0.0; 2];
            for (i, steps) in [k, 2 * k].into_iter().enumerate() {
                if stop() {
                    return Err(interrupted());
                }
                t[i] = dev.run_timed(&launch(steps), blocks)?;
                progress("l2_stream");
            }
            let dt = t[1] - t[0];
            // Bytes per second, whole GPU.
            v.push(if dt > 0.0 { bytes * f64::from(k) / dt } else { f64::NAN });
        }
        Ok(v)
    };
    let dram_bps = stream(super::BIG, 4.0 * f64::from(super::BIG.elems))?;
    let l2_footprint = (facts.l2_cache_bytes / 2).clamp(256 << 10, 32 << 20) / 16 * 16;
    let l2_stream_chain = Chain { elems: (l2_footprint / 4) as u32, stride: 1, seed: 0x12b4 };
    let l2_bps = stream(l2_stream_chain, l2_footprint as f64)?;
    let observed = dev.clocks_now();
    let idle = dev.idle_power()?;
    let (core_mhz, mem_mhz) = match (set, observed) {
        (Some(c), _) | (None, Some(c)) => (f64::from(c.core_mhz), f64::from(c.mem_mhz)),
        (None, None) => {
            (facts.value("core_mhz").unwrap_or(f64::NAN), facts.value("mem_mhz").unwrap_or(f64::NAN))
        }
    };
    if !(core_mhz > 0.0 && mem_mhz > 0.0) {
        return Err(Error::Invalid(format!(
            "the current clocks are unknown (core {core_mhz} MHz, memory {mem_mhz} MHz): cannot place the measurement"
        )));
    }
    let set_by_calibrate = set.is_some();
    // Bytes per core cycle, whole GPU, and the delay per SM.
    let per_cycle = |v: &[f64]| v.iter().map(|b| b / (core_mhz * 1e6)).collect::<Vec<f64>>();
    let (dram_bpc, l2_bpc) = (per_cycle(&dram_bps), per_cycle(&l2_bps));
    let delay = |v: &[f64]| v.iter().map(|b| tx * sm / b).collect::<Vec<f64>>();
    let mut bpc = Estimate::from_samples(
        "dram_bytes_per_core_cycle",
        "whole grid streaming 256 MiB from DRAM; bytes per core cycle",
        dram_bpc.clone(),
    )?;
    bpc.unit = "bytes/core cycle";
    Ok(PairPoint {
        core_mhz,
        mem_mhz,
        set_by_calibrate,
        observed,
        idle,
        dram_latency: Estimate::from_samples(
            "dram_latency",
            "pointer chase, one step per 4 KiB page over 256 MiB, L1 bypassed, 1 thread",
            dram,
        )?,
        l2_latency: Estimate::from_samples(
            "l2_latency",
            "pointer chase over a quarter of the L2 after a warm-up pass, L1 bypassed, 1 thread",
            l2,
        )?,
        dram_delay: Estimate::from_samples(
            "dram_delay",
            "transaction_bytes / (DRAM-stream bytes per core cycle per SM)",
            delay(&dram_bpc),
        )?,
        l2_delay: Estimate::from_samples(
            "l2_delay",
            "transaction_bytes / (L2-stream bytes per core cycle per SM)",
            delay(&l2_bpc),
        )?,
        dram_bytes_per_core_cycle: bpc,
    })
}

/// One least-squares line `y = intercept + slope · x` over the clock pairs, with its residuals.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LineFit {
    /// `dram_latency` or `dram_delay`.
    pub name: &'static str,
    /// The model in words (`L = latency_a · f_core/f_mem + latency_b`).
    pub form: &'static str,
    pub intercept: f64,
    pub slope: f64,
    /// R² ([`gpumodel_models::stats::LineFit::r2`]).
    pub r2: f64,
    /// (core MHz, mem MHz, x, y measured, y fitted) per pair used.
    pub points: Vec<(f64, f64, f64, f64, f64)>,
}

impl LineFit {
    /// Largest |residual| / measured, percent.
    pub fn max_residual_pct(&self) -> f64 {
        self.points.iter().map(|p| 100.0 * ((p.4 - p.3) / p.3).abs()).fold(0.0, f64::max)
    }
}

/// A constant the sweep produced, for the profile.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fitted {
    /// Profile field (`dvfs_memory.latency_a`, `l2_dram_bytes_per_core_cycle`).
    pub field: &'static str,
    pub value: f64,
    pub unit: &'static str,
    /// How it was obtained (goes into the citation).
    pub method: String,
}

/// The fits of a sweep: the constants to write, the lines, and what was rejected and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DvfsFit {
    pub constants: Vec<Fitted>,
    pub lines: Vec<LineFit>,
    /// (fields, reason) of what could not be fitted.
    pub rejected: Vec<(String, String)>,
    /// Whether some pair hit the L2's DRAM ceiling (then `l2_dram_bytes_per_core_cycle` is the ceiling,
    /// else a lower bound).
    pub ceiling_reached: bool,
    /// The clock pairs measured (`CORE:MEM`).
    pub pairs: Vec<String>,
}

/// Count of values of `x` that differ from each other by more than 1 %.
fn distinct(x: &[f64]) -> usize {
    let mut v = x.to_vec();
    v.sort_by(f64::total_cmp);
    let mut n = 0;
    let mut last = f64::NAN;
    for x in v {
        // The first value (last is NaN) always counts.
        if last.is_nan() || ((x - last) / last).abs() > 0.01 {
            n += 1;
            last = x;
        }
    }
    n
}

/// The least-squares line of `y` on `x` over the points (the workspace's one line fit,
/// [`gpumodel_models::stats::fit_line`]), with its residuals.
fn line(
    name: &'static str,
    form: &'static str,
    pts: &[(f64, f64, f64, f64)],
) -> Result<LineFit, stats::LineFitError> {
    let x: Vec<f64> = pts.iter().map(|p| p.2).collect();
    let y: Vec<f64> = pts.iter().map(|p| p.3).collect();
    let l = stats::fit_line(&x, &y)?;
    Ok(LineFit {
        name,
        form,
        intercept: l.intercept,
        slope: l.slope,
        r2: l.r2,
        points: pts.iter().map(|p| (p.0, p.1, p.2, p.3, l.intercept + l.slope * p.2)).collect(),
    })
}

/// Median of a non-empty list.
fn median(v: &[f64]) -> f64 {
    stats::median(v.to_vec())
}

/// The fits over the measured points.
pub fn fit(points: &[PairPoint]) -> DvfsFit {
    let mut out = DvfsFit {
        constants: Vec::new(),
        lines: Vec::new(),
        rejected: Vec::new(),
        ceiling_reached: false,
        pairs: points.iter().map(|p| format!("{}:{}", p.core_mhz, p.mem_mhz)).collect(),
    };
    if points.is_empty() {
        return out;
    }
    let pairs_text = out.pairs.join(", ");
    let n = points.len();
    // The L2's DRAM ceiling: the highest DRAM-stream bytes per core cycle; reached if, at the lowest core
    // clock, the two highest memory clocks gave the same bytes per core cycle (within 3 %).
    let bpc: Vec<f64> = points.iter().map(|p| p.dram_bytes_per_core_cycle.median).collect();
    let ceiling = bpc.iter().copied().fold(0.0, f64::max);
    let low_core = points.iter().map(|p| p.core_mhz).fold(f64::INFINITY, f64::min);
    let mut at_low: Vec<&PairPoint> = points.iter().filter(|p| p.core_mhz == low_core).collect();
    at_low.sort_by(|a, b| b.mem_mhz.total_cmp(&a.mem_mhz));
    // "The same" within 3 % plus the pairs' own spread (relative interquartile range of the repetitions).
    let tol = |p: &PairPoint| {
        let e = &p.dram_bytes_per_core_cycle;
        0.03 + (e.q3 - e.q1) / e.median
    };
    out.ceiling_reached = at_low.len() >= 2 && {
        let (a, b) = (&at_low[0], &at_low[1]);
        let (ma, mb) = (a.dram_bytes_per_core_cycle.median, b.dram_bytes_per_core_cycle.median);
        ((ma - mb) / ma).abs() <= tol(a).max(tol(b)) && (ma - ceiling).abs() / ceiling <= tol(a)
    };
    let reached = out.ceiling_reached;
    let at_ceiling =
        |p: &PairPoint| reached && (p.dram_bytes_per_core_cycle.median - ceiling).abs() / ceiling <= tol(p);
    if ceiling > 0.0 {
        out.constants.push(Fitted {
            field: "l2_dram_bytes_per_core_cycle",
            value: ceiling,
            unit: "bytes/core cycle",
            method: if out.ceiling_reached {
                format!(
                    "highest whole-GPU DRAM-stream throughput per core cycle over {n} clock pairs ({pairs_text}); \
                     flat across memory clocks at the lowest core clock, so the core clock limited it: the ceiling"
                )
            } else {
                format!(
                    "highest whole-GPU DRAM-stream throughput per core cycle over {n} clock pairs ({pairs_text}); \
                     no pair was limited by the core clock, so this is a lower bound of the ceiling"
                )
            },
        });
    }
    // L2 latency and delay: medians over the pairs of the per-pair medians (constant in core cycles).
    for (field, vals, what) in [
        (
            "dvfs_memory.l2_latency",
            points.iter().map(|p| p.l2_latency.median).collect::<Vec<_>>(),
            "L2-hit pointer chase",
        ),
        (
            "dvfs_memory.l2_delay",
            points.iter().map(|p| p.l2_delay.median).collect(),
            "L2 stream: transaction_bytes / bytes per core cycle per SM",
        ),
    ] {
        let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = vals.iter().copied().fold(0.0, f64::max);
        out.constants.push(Fitted {
            field,
            value: median(&vals),
            unit: "core cycles",
            method: format!(
                "{what}; median over {n} clock pairs ({pairs_text}) of the per-pair medians, range {lo:.3}-{hi:.3}"
            ),
        });
    }
    // DRAM latency: L on r = f_core/f_mem.
    let lat: Vec<(f64, f64, f64, f64)> = points
        .iter()
        .map(|p| (p.core_mhz, p.mem_mhz, p.core_mhz / p.mem_mhz, p.dram_latency.median))
        .collect();
    fit_pair(
        &mut out,
        &lat,
        ("dram_latency", "L = latency_a · f_core/f_mem + latency_b"),
        ("dvfs_memory.latency_a", "dvfs_memory.latency_b"),
        ("core cycles per unit ratio", "core cycles"),
        "f_core/f_mem ratios",
        "DRAM pointer chase (one step per 4 KiB page), least squares of L on f_core/f_mem",
    );
    // Departure delay: D / r on 1/f_mem, without the pairs at the L2 ceiling.
    let del: Vec<(f64, f64, f64, f64)> = points
        .iter()
        .filter(|p| !at_ceiling(p))
        .map(|p| (p.core_mhz, p.mem_mhz, 1.0 / p.mem_mhz, p.dram_delay.median / (p.core_mhz / p.mem_mhz)))
        .collect();
    fit_pair(
        &mut out,
        &del,
        ("dram_delay", "D / (f_core/f_mem) = delay_a / f_mem + delay_b"),
        ("dvfs_memory.delay_a", "dvfs_memory.delay_b"),
        ("core cycles · MHz", "core cycles"),
        "memory clocks (below the L2 ceiling)",
        "DRAM stream, D = transaction_bytes / bytes per core cycle per SM, least squares of D/(f_core/f_mem) on 1/f_mem",
    );
    // dvfs_memory is one table: written only whole.
    let dvfs_fields = ["latency_a", "latency_b", "delay_a", "delay_b", "l2_latency", "l2_delay"]
        .map(|f| format!("dvfs_memory.{f}"));
    if !dvfs_fields.iter().all(|f| out.constants.iter().any(|c| c.field == f)) {
        let had: Vec<&'static str> =
            out.constants.iter().filter(|c| c.field.starts_with("dvfs_memory.")).map(|c| c.field).collect();
        if had.iter().any(|f| f.ends_with("l2_latency")) {
            out.rejected.push((
                "dvfs_memory.l2_latency, l2_delay".into(),
                "measured (see the clock-pair table) but not written: the profile's [dvfs_memory] table needs all \
                 six constants"
                    .into(),
            ));
        }
        out.constants.retain(|c| !c.field.starts_with("dvfs_memory."));
    }
    out
}

fn fit_pair(
    out: &mut DvfsFit,
    pts: &[(f64, f64, f64, f64)],
    (name, form): (&'static str, &'static str),
    (slope_field, intercept_field): (&'static str, &'static str),
    (slope_unit, intercept_unit): (&'static str, &'static str),
    what: &str,
    method: &str,
) {
    let fields = format!("{slope_field}, {}", intercept_field.trim_start_matches("dvfs_memory."));
    let xs: Vec<f64> = pts.iter().map(|p| p.2).collect();
    let d = distinct(&xs);
    if d < MIN_DISTINCT {
        out.rejected.push((
            fields,
            format!(
                "{form}: the fit needs {MIN_DISTINCT} distinct {what}, the clock pairs gave {d}; pass \
                 --clocks auto or a list spanning more of them"
            ),
        ));
        return;
    }
    let l = match line(name, form, pts) {
        Ok(l) => l,
        Err(e) => {
            let why = match e {
                stats::LineFitError::NotFinite => {
                    "a measured value is NaN or infinite; re-run the sweep (the clock-pair table shows which pair)"
                        .to_string()
                }
                stats::LineFitError::TooFewDistinctX => format!(
                    "the least-squares system is singular (one {what} value); pass --clocks auto or a list \
                     spanning more of them"
                ),
                e => e.to_string(),
            };
            out.rejected.push((fields, format!("{form}: {why}")));
            return;
        }
    };
    if !(l.slope > 0.0 && l.intercept > 0.0) {
        out.rejected.push((
            fields,
            format!(
                "{form}: the fit gave slope {:.4} and intercept {:.4}, but both must be positive; the measurements \
                 do not follow this form at these clock pairs (R² {:.3})",
                l.slope, l.intercept, l.r2
            ),
        ));
        out.lines.push(l);
        return;
    }
    let pairs = l.points.len();
    let cite = |part: &str| {
        format!(
            "{method} over {pairs} clock pairs; {part}; R² {:.4}, largest residual {:.2}%",
            l.r2,
            l.max_residual_pct()
        )
    };
    out.constants.push(Fitted {
        field: slope_field,
        value: l.slope,
        unit: slope_unit,
        method: cite("slope"),
    });
    out.constants.push(Fitted {
        field: intercept_field,
        value: l.intercept,
        unit: intercept_unit,
        method: cite("intercept"),
    });
    out.lines.push(l);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(core_mhz: f64, mem_mhz: f64, dram_latency: f64) -> PairPoint {
        let est = |field, v: f64| Estimate::from_samples(field, "test", vec![v]).unwrap();
        PairPoint {
            core_mhz,
            mem_mhz,
            set_by_calibrate: true,
            observed: None,
            dram_latency: est("dram_latency", dram_latency),
            l2_latency: est("l2_latency", 200.0),
            dram_delay: est("dram_delay", 2.0),
            l2_delay: est("l2_delay", 1.0),
            dram_bytes_per_core_cycle: est("dram_bytes_per_core_cycle", 1000.0),
            idle: None,
        }
    }

    /// The DRAM latency line through the shared fit: an exact law L = 300·r + 400 comes back with R² 1 and
    /// fitted values on the points.
    #[test]
    fn the_latency_line_recovers_an_exact_law() {
        let pts: Vec<PairPoint> = [(1400.0, 1200.0), (1000.0, 1200.0), (600.0, 1200.0)]
            .into_iter()
            .map(|(c, m)| point(c, m, 300.0 * c / m + 400.0))
            .collect();
        let fit = fit(&pts);
        let l = fit.lines.iter().find(|l| l.name == "dram_latency").unwrap();
        assert!((l.slope - 300.0).abs() < 1e-9 && (l.intercept - 400.0).abs() < 1e-9, "{l:?}");
        assert!((l.r2 - 1.0).abs() < 1e-12 && l.max_residual_pct() < 1e-9, "{l:?}");
    }

    /// A NaN measurement is not fitted into NaN constants: the fit is rejected in one line that says to
    /// re-run the sweep.
    #[test]
    fn a_nan_measurement_rejects_the_fit_with_what_to_do() {
        let mut pts: Vec<PairPoint> = [(1400.0, 1200.0), (1000.0, 1200.0), (600.0, 1200.0)]
            .into_iter()
            .map(|(c, m)| point(c, m, 300.0 * c / m + 400.0))
            .collect();
        pts[1].dram_latency.median = f64::NAN;
        let fit = fit(&pts);
        let lat = fit.rejected.iter().find(|r| r.0.starts_with("dvfs_memory.latency_a")).unwrap();
        assert!(lat.1.contains("NaN or infinite") && lat.1.contains("re-run the sweep"), "{lat:?}");
        assert!(!lat.1.contains('\n'), "{lat:?}");
        assert!(fit.constants.iter().all(|c| c.value.is_finite()), "{:?}", fit.constants);
    }
}
