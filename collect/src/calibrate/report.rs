//! What `gpumodel calibrate` reports: the constants it measured on the GPU, and — so that nobody takes a
//! looked-up number for a measured one — the values the profile takes from the driver or a reference,
//! and the timing model's constants it does not write at all.

use super::{DeviceFacts, Estimate};
use gpumodel_models::export::{Cell, Column, Export, Section};
use serde::Serialize;

/// A profile value `calibrate` did not measure: read from the driver or taken from a cited reference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LookedUp {
    pub field: String,
    pub value: f64,
    /// The citation written beside it in the profile's `[sources]`.
    pub source: String,
}

/// The timing model's constants a `calibrate` profile leaves out (the model then falls back, as said).
pub const NOT_MEASURED: &[(&str, &str)] = &[
    (
        "dvfs_memory.latency_a, latency_b, delay_a, delay_b",
        "DRAM latency and departure delay as functions of f_core/f_mem (Wang & Chu's form) need pointer \
         chasing and streaming at several clock pairs, which calibrate does not run yet: without them the \
         model keeps cyc_load and in_warp_delay fixed in memory-clock time",
    ),
    (
        "dvfs_memory.l2_latency, l2_delay",
        "L2 hit latency and delay: not measured; without them an L2 hit costs its LD/ST issue and the DRAM \
         latency",
    ),
    (
        "l2_dram_bytes_per_core_cycle",
        "the L2's DRAM-traffic ceiling per core cycle: not measured (the built-in profiles assume one 32-byte \
         sector per L2 slice per core clock); without it DRAM traffic is not capped by the core clock",
    ),
];

/// The result of one `gpumodel calibrate` run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CalibrateReport {
    /// The GPU measured (its marketing name).
    pub gpu: String,
    /// The profile's short name and the file written.
    pub profile: String,
    pub file: String,
    /// Constants measured on this GPU now (median and spread over the repetitions).
    pub measured: Vec<Estimate>,
    /// Values of the profile read from the driver or looked up in a reference (not measured here).
    pub looked_up: Vec<LookedUp>,
    /// Timing-model constants the profile does not carry, with what the model does without them.
    pub not_measured: Vec<(String, String)>,
}

impl CalibrateReport {
    pub fn new(gpu: &str, profile: &str, file: &str, facts: &DeviceFacts, measured: &[Estimate]) -> Self {
        let looked_up = facts
            .values
            .iter()
            .map(|(field, value, src)| LookedUp {
                field: field.clone(),
                value: *value,
                source: facts.sources.get(src).cloned().unwrap_or_else(|| src.clone()),
            })
            .collect();
        CalibrateReport {
            gpu: gpu.to_string(),
            profile: profile.to_string(),
            file: file.to_string(),
            measured: measured.to_vec(),
            looked_up,
            not_measured: NOT_MEASURED.iter().map(|(f, w)| (f.to_string(), w.to_string())).collect(),
        }
    }
}

impl Export for CalibrateReport {
    const COMMAND: &'static str = "calibrate";
    /// 2: an object with `measured`, `looked_up` and `not_measured` (version 1 was the bare list of
    /// measured estimates).
    const FORMAT_VERSION: u32 = 2;

    fn sections(&self) -> Vec<Section> {
        let mut m = Section::titled(
            "measured on this GPU",
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
        vec![m, l]
    }

    fn preamble(&self) -> Vec<String> {
        vec![format!("{}: profile '{}' written to {}", self.gpu, self.profile, self.file)]
    }

    fn notes(&self) -> Vec<String> {
        self.not_measured.iter().map(|(f, w)| format!("not in the profile: {f} — {w}")).collect()
    }
}
