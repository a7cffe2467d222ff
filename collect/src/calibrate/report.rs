//! What `gpumodel calibrate` reports: the constants it measured on the GPU (at the current clocks, and the
//! DVFS memory constants at which clock pairs, with each fit's R² and residuals), and — so that nobody
//! takes a looked-up number for a measured one — the values the profile takes from the driver or a
//! reference (a measured value of the same field replaces one; one kept because its measurement failed
//! says so), and the constants it could not fit and so does not write (with the reason).

use super::dvfs::{DvfsFit, Fitted, LineFit, PairPoint};
use super::{DeviceFacts, Estimate, LOOKED_UP_UNLESS_MEASURED};
use gpumodel_models::export::{Cell, Column, Export, Section};
use serde::Serialize;

/// Why a looked-up value stands where a measured one was expected.
const KEPT: &str = "kept: its measurement on this GPU gave no usable cycle count";

/// A profile value `calibrate` did not measure: read from the driver or taken from a cited reference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LookedUp {
    pub field: String,
    pub value: f64,
    /// The citation written beside it in the profile's `[sources]`.
    pub source: String,
}

/// The result of one `gpumodel calibrate` run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CalibrateReport {
    /// The GPU measured (its marketing name).
    pub gpu: String,
    /// The profile's short name and the file written.
    pub profile: String,
    pub file: String,
    /// Constants measured on this GPU now, at its current clocks (median and spread over the repetitions).
    pub measured: Vec<Estimate>,
    /// What was measured at each clock pair of the DVFS sweep (one row at the current clocks under
    /// `--clocks current`).
    pub clock_pairs: Vec<PairPoint>,
    /// The DVFS memory constants fitted from them and written to the profile.
    pub dvfs_constants: Vec<Fitted>,
    /// The least-squares lines behind them (R², residuals).
    pub fits: Vec<LineFit>,
    /// Values of the profile read from the driver or looked up in a reference (not measured here).
    pub looked_up: Vec<LookedUp>,
    /// Timing-model constants the profile does not carry (a fit rejected), with the reason; the model
    /// then falls back (DRAM latency and delay fixed in memory-clock time, no L2 ceiling).
    pub not_measured: Vec<(String, String)>,
}

impl CalibrateReport {
    pub fn new(
        gpu: &str,
        profile: &str,
        file: &str,
        facts: &DeviceFacts,
        measured: &[Estimate],
        points: &[PairPoint],
        fit: &DvfsFit,
    ) -> Self {
        // A measured value replaces the looked-up one; a looked-up value of a measured field that is not
        // among the estimates is there because its measurement gave no usable cycle count.
        let looked_up = facts
            .values
            .iter()
            .filter(|(field, _, _)| !measured.iter().any(|e| e.field == field))
            .map(|(field, value, src)| {
                let mut source = facts.sources.get(src).cloned().unwrap_or_else(|| src.clone());
                if LOOKED_UP_UNLESS_MEASURED.contains(&field.as_str()) {
                    source.push_str(&format!(" ({KEPT})"));
                }
                LookedUp { field: field.clone(), value: *value, source }
            })
            .collect();
        CalibrateReport {
            gpu: gpu.to_string(),
            profile: profile.to_string(),
            file: file.to_string(),
            measured: measured.to_vec(),
            clock_pairs: points.to_vec(),
            dvfs_constants: fit.constants.clone(),
            fits: fit.lines.clone(),
            looked_up,
            not_measured: fit.rejected.clone(),
        }
    }
}

impl Export for CalibrateReport {
    const COMMAND: &'static str = "calibrate";
    /// 3: adds `clock_pairs`, `dvfs_constants` and `fits` (the DVFS sweep); 2 was an object with
    /// `measured`, `looked_up` and `not_measured`; 1 the bare list of measured estimates.
    const FORMAT_VERSION: u32 = 3;

    fn sections(&self) -> Vec<Section> {
        let mut m = Section::titled(
            "measured on this GPU at its current clocks",
            vec![
                Column::new("constant", "constant"),
                Column::new("median", "median"),
                Column::new("unit", "unit"),
                Column::new("q1", "q1"),
                Column::new("q3", "q3"),
                Column::new("min", "min"),
                Column::new("max", "max"),
                Column::new("n", "n"),
                Column::new("method", "method"),
            ],
        );
        for e in &self.measured {
            m.push(vec![
                Cell::text(e.field),
                Cell::num(e.median, 2),
                Cell::text(e.unit),
                Cell::num(e.q1, 2),
                Cell::num(e.q3, 2),
                Cell::num(e.min, 2),
                Cell::num(e.max, 2),
                Cell::int(e.n as i64),
                Cell::text(e.method),
            ]);
        }
        let mut l = Section::titled(
            "looked up (driver or reference), not measured",
            vec![
                Column::new("field", "field"),
                Column::new("value", "value"),
                Column::new("source", "source"),
            ],
        );
        for v in &self.looked_up {
            l.push(vec![Cell::text(&v.field), Cell::num(v.value, 2), Cell::text(&v.source)]);
        }
        let mut p = Section::titled(
            "measured at each clock pair (medians over the repetitions, core cycles)",
            vec![
                Column::new("core_mhz", "core MHz"),
                Column::new("mem_mhz", "mem MHz"),
                Column::new("set", "set"),
                Column::new("dram_latency", "DRAM latency"),
                Column::new("dram_latency_iqr", "IQR"),
                Column::new("dram_delay", "DRAM delay"),
                Column::new("l2_latency", "L2 latency"),
                Column::new("l2_delay", "L2 delay"),
                Column::new("dram_bytes_per_core_cycle", "DRAM B/cycle"),
                Column::new("observed", "observed core:mem"),
                Column::new("idle_w", "idle W at core:mem"),
            ],
        );
        for q in &self.clock_pairs {
            p.push(vec![
                Cell::num(q.core_mhz, 0),
                Cell::num(q.mem_mhz, 0),
                Cell::text(if q.set_by_calibrate { "set" } else { "current" }),
                Cell::num(q.dram_latency.median, 1),
                Cell::num(q.dram_latency.q3 - q.dram_latency.q1, 1),
                Cell::num(q.dram_delay.median, 3),
                Cell::num(q.l2_latency.median, 1),
                Cell::num(q.l2_delay.median, 3),
                Cell::num(q.dram_bytes_per_core_cycle.median, 1),
                Cell::text(q.observed.map_or("-".to_string(), |c| c.to_string())),
                Cell::text(q.idle.map_or("-".to_string(), |i| format!("{:.1} at {}", i.watts, i.clocks))),
            ]);
        }
        let mut d = Section::titled(
            "DVFS memory constants written to the profile (measured at the clock pairs above)",
            vec![
                Column::new("constant", "constant"),
                Column::new("value", "value"),
                Column::new("unit", "unit"),
                Column::new("method", "method"),
            ],
        );
        for c in &self.dvfs_constants {
            d.push(vec![
                Cell::text(c.field),
                Cell::num(c.value, 4),
                Cell::text(c.unit),
                Cell::text(&c.method),
            ]);
        }
        let mut f = Section::titled(
            "fits (least squares over the clock pairs)",
            vec![
                Column::new("fit", "fit"),
                Column::new("form", "form"),
                Column::new("slope", "slope"),
                Column::new("intercept", "intercept"),
                Column::new("r2", "R²"),
                Column::new("max_residual_pct", "max |residual| %"),
                Column::new("pairs", "pairs"),
            ],
        );
        for l in &self.fits {
            f.push(vec![
                Cell::text(l.name),
                Cell::text(l.form),
                Cell::num(l.slope, 4),
                Cell::num(l.intercept, 4),
                Cell::num(l.r2, 4),
                Cell::num(l.max_residual_pct(), 2),
                Cell::int(l.points.len() as i64),
            ]);
        }
        vec![m, p, d, f, l]
    }

    fn preamble(&self) -> Vec<String> {
        let mut lines = vec![format!("{}: profile '{}' written to {}", self.gpu, self.profile, self.file)];
        let pairs: Vec<String> =
            self.clock_pairs.iter().map(|p| format!("{}:{}", p.core_mhz, p.mem_mhz)).collect();
        let written: Vec<&str> = self.dvfs_constants.iter().map(|c| c.field).collect();
        match self.clock_pairs.first() {
            Some(p) if !p.set_by_calibrate => lines.push(format!(
                "DVFS memory constants: measured at the current clocks only ({}, core:memory MHz); written: {}",
                pairs.join(", "),
                if written.is_empty() { "none".to_string() } else { written.join(", ") }
            )),
            Some(_) => lines.push(format!(
                "DVFS memory constants: measured at {} clock pairs set by calibrate ({}, core:memory MHz, restored \
                 afterwards); written: {}",
                pairs.len(),
                pairs.join(", "),
                if written.is_empty() { "none".to_string() } else { written.join(", ") }
            )),
            None => {}
        }
        lines.push(
            "every other value of the profile is looked up (last table), not measured; the other measured \
             constants were measured at the GPU's own clocks"
                .to_string(),
        );
        lines
    }

    fn notes(&self) -> Vec<String> {
        let mut notes: Vec<String> =
            self.not_measured.iter().map(|(f, w)| format!("not in the profile: {f} — {w}")).collect();
        for v in self.looked_up.iter().filter(|v| LOOKED_UP_UNLESS_MEASURED.contains(&v.field.as_str())) {
            notes.push(format!(
                "{} was not measured (its kernel gave no usable cycle count in some repetition): the profile keeps \
                 the looked-up value {}; run calibrate again to measure it",
                v.field, v.value
            ));
        }
        if self.not_measured.iter().any(|(f, _)| f.starts_with("dvfs_memory.")) {
            notes.push(
                "without [dvfs_memory] the timing model keeps the DRAM latency (cyc_load) and departure delay \
                 (in_warp_delay) fixed in memory-clock time"
                    .to_string(),
            );
        }
        for p in &self.clock_pairs {
            if let Some(o) = p.observed {
                let off = |set: f64, seen: u32| ((f64::from(seen) - set) / set).abs() > 0.05;
                if p.set_by_calibrate && (off(p.core_mhz, o.core_mhz) || off(p.mem_mhz, o.mem_mhz)) {
                    notes.push(format!(
                        "at {}:{} NVML read {o} after the launches (more than 5% off): the GPU may have throttled or \
                         boosted; check `nvidia-smi -q -d PERFORMANCE` and repeat",
                        p.core_mhz, p.mem_mhz
                    ));
                }
            }
        }
        notes
    }
}
