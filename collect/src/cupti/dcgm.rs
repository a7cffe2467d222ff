//! DCGM's profiling fields from CUPTI PM sampling: which metrics give each field on a chip, and a counter
//! source that turns their samples into the fields, so a `gpumodel collect` trace carries `SMACT`,
//! `DRAMA`, … columns that the utilization reader (`predict --profile`, `import dcgm`) reads as it reads
//! `dcgmi dmon`.
//!
//! Each field is the fraction of its peak that a counter reached over the elapsed cycles of its unit —
//! Nsight Compute's `<counter>.avg.pct_of_peak_sustained_elapsed` / 100, defined in its "Metrics
//! Structure" documentation as the counter's value over `peak_sustained × cycles_elapsed`. The counters are
//! the ones behind each DCGM field (DCGM User Guide, profiling metrics; the same pairs as
//! [`Field::ncu_metric`]): SM active = `sm__cycles_active` over `sm__cycles_elapsed`, DRAM active =
//! `dram__cycles_active` over `dram__cycles_elapsed`, and so on. PM sampling evaluates three metrics per
//! field — `<counter>.avg`, `<elapsed>.avg` and `<counter>.avg.peak_sustained` — and the field of a sample
//! is `counter / (elapsed · peak)`.
//!
//! Which of them a chip has for PM sampling, and in one pass, only CUPTI's metric database can say:
//! [`DcgmPlan::for_chip`] asks the Profiler Host API (no GPU needed) and keeps each field whose metrics
//! exist and still fit one pass with the fields kept before it; a field left out carries the reason.

use crate::counters::{CounterInterval, CounterSource};
use crate::cupti::host::{HostProfiler, ProfilerKind};
use crate::error::Result;
use gpumodel_models::utilization::Field;
use std::collections::BTreeMap;

/// The counter behind each field and the elapsed-cycles counter of its unit (base names, no rollup).
pub const FIELD_COUNTERS: [(Field, &str, &str); 8] = [
    (Field::Gract, "gr__cycles_active", "gr__cycles_elapsed"),
    (Field::Smact, "sm__cycles_active", "sm__cycles_elapsed"),
    (Field::Smocc, "sm__warps_active", "sm__cycles_elapsed"),
    (Field::Tenso, "sm__pipe_tensor_cycles_active", "sm__cycles_elapsed"),
    (Field::Drama, "dram__cycles_active", "dram__cycles_elapsed"),
    (Field::Fp64a, "sm__pipe_fp64_cycles_active", "sm__cycles_elapsed"),
    (Field::Fp32a, "sm__pipe_fma_cycles_active", "sm__cycles_elapsed"),
    (Field::Fp16a, "sm__pipe_fp16_cycles_active", "sm__cycles_elapsed"),
];

/// The three PM-sampling metrics of one field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldMetrics {
    pub field: Field,
    pub counter: String,
    pub elapsed: String,
    pub peak: String,
}

impl FieldMetrics {
    /// The metrics of `field` from its counter and elapsed-cycles bases (e.g. `sm__cycles_active`).
    pub fn of(field: Field, counter: &str, elapsed: &str) -> FieldMetrics {
        FieldMetrics {
            field,
            counter: format!("{counter}.avg"),
            elapsed: format!("{elapsed}.avg"),
            peak: format!("{counter}.avg.peak_sustained"),
        }
    }

    fn metrics(&self) -> [&str; 3] {
        [&self.counter, &self.elapsed, &self.peak]
    }
}

/// The fields a chip gives through PM sampling, in groups of one hardware pass each (one run of the
/// program each under application replay), and why each other field is missing.
#[derive(Debug, Clone, PartialEq)]
pub struct DcgmPlan {
    pub chip: String,
    pub groups: Vec<Vec<FieldMetrics>>,
    pub missing: Vec<(Field, String)>,
}

/// Passes `fields` need together on `chip` for PM sampling.
fn passes(chip: &str, fields: &[&FieldMetrics]) -> Result<usize> {
    let mut names: Vec<&str> = fields.iter().flat_map(|f| f.metrics()).collect();
    names.sort_unstable();
    names.dedup();
    let mut host = HostProfiler::new(chip, ProfilerKind::PmSampling, None)?;
    host.add_metrics(&names)?;
    host.num_passes()
}

impl DcgmPlan {
    /// Asks CUPTI's metric database (Profiler Host API, no GPU) which fields `chip` has for PM sampling,
    /// and packs them, in DCGM id order, into the first group they still fit in one pass with.
    pub fn for_chip(chip: &str) -> Result<DcgmPlan> {
        let base = HostProfiler::new(chip, ProfilerKind::PmSampling, None)?.all_base_metrics()?;
        let has = |name: &str| base.iter().any(|b| b == name);
        let mut groups: Vec<Vec<FieldMetrics>> = Vec::new();
        let mut missing = Vec::new();
        for (field, counter, elapsed) in FIELD_COUNTERS {
            let absent: Vec<&str> = [counter, elapsed].into_iter().filter(|b| !has(b)).collect();
            if !absent.is_empty() {
                missing
                    .push((field, format!("{} not in {chip}'s PM-sampling metrics", absent.join(" and "))));
                continue;
            }
            let f = FieldMetrics::of(field, counter, elapsed);
            let alone = match passes(chip, &[&f]) {
                Ok(n) => n,
                Err(e) => {
                    missing.push((field, e.to_string()));
                    continue;
                }
            };
            if alone != 1 {
                missing.push((field, format!("needs {alone} hardware passes on its own; PM sampling has 1")));
                continue;
            }
            let mut slot = None;
            for (k, g) in groups.iter().enumerate() {
                let with: Vec<&FieldMetrics> = g.iter().chain([&f]).collect();
                if passes(chip, &with)? == 1 {
                    slot = Some(k);
                    break;
                }
            }
            match slot {
                Some(k) => groups[k].push(f),
                None => groups.push(vec![f]),
            }
        }
        Ok(DcgmPlan { chip: chip.to_string(), groups, missing })
    }

    /// Every field the chip gives, in group order.
    pub fn fields(&self) -> Vec<Field> {
        self.groups.iter().flatten().map(|f| f.field).collect()
    }

    /// Group `k` as a PM-sampling counter group: each metric its own counter, named by the metric.
    pub fn group(&self, k: usize) -> BTreeMap<String, Vec<String>> {
        self.groups
            .get(k)
            .into_iter()
            .flatten()
            .flat_map(|f| f.metrics().map(|m| (m.to_string(), vec![m.to_string()])))
            .collect()
    }
}

/// A counter source of DCGM fields: wraps a source that samples the plan's metrics (each a rate, events
/// per second of its interval) and gives each field of the plan per interval, a ratio in [0, 1].
pub struct DcgmFields<S: CounterSource> {
    inner: S,
    fields: Vec<FieldMetrics>,
    /// Per field: indices of counter, elapsed and peak in the inner source's names.
    index: Vec<[usize; 3]>,
}

impl<S: CounterSource> DcgmFields<S> {
    /// `inner` must sample every metric of `fields` (by name); a field whose metrics it lacks is dropped.
    pub fn new(inner: S, fields: Vec<FieldMetrics>) -> DcgmFields<S> {
        let names = inner.names();
        let pos = |m: &str| names.iter().position(|n| n == m);
        let (fields, index): (Vec<_>, Vec<_>) = fields
            .into_iter()
            .filter_map(|f| Some(([pos(&f.counter)?, pos(&f.elapsed)?, pos(&f.peak)?], f)))
            .map(|(ix, f)| (f, ix))
            .unzip();
        DcgmFields { inner, fields, index }
    }

    fn convert(&self, iv: CounterInterval) -> CounterInterval {
        // Rates back to the interval's values; the peak is a per-cycle constant, evaluated per sample.
        let d = iv.duration_s();
        let v = |i: usize| iv.rates.get(i).map_or(f64::NAN, |r| r * d);
        let rates = self
            .index
            .iter()
            .map(|&[c, e, p]| {
                let x = v(c) / (v(e) * v(p));
                if x.is_finite() { x.clamp(0.0, 1.0) } else { f64::NAN }
            })
            .collect();
        CounterInterval { start_s: iv.start_s, end_s: iv.end_s, rates }
    }
}

impl<S: CounterSource> CounterSource for DcgmFields<S> {
    fn names(&self) -> Vec<String> {
        self.fields.iter().map(|f| f.field.name().to_string()).collect()
    }
    fn describe(&self) -> String {
        format!("{} (DCGM fields)", self.inner.describe())
    }
    fn start(&mut self, now_s: f64) -> Result<()> {
        self.inner.start(now_s)
    }
    fn poll(&mut self, now_s: f64) -> Result<Vec<CounterInterval>> {
        Ok(self.inner.poll(now_s)?.into_iter().map(|iv| self.convert(iv)).collect())
    }
    fn stop(&mut self, now_s: f64) -> Result<Vec<CounterInterval>> {
        Ok(self.inner.stop(now_s)?.into_iter().map(|iv| self.convert(iv)).collect())
    }
    fn warnings(&self) -> Vec<String> {
        self.inner.warnings()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeCounters;

    #[test]
    fn fields_are_counter_over_elapsed_times_peak() {
        let fields = vec![
            FieldMetrics::of(Field::Smact, "sm__cycles_active", "sm__cycles_elapsed"),
            FieldMetrics::of(Field::Smocc, "sm__warps_active", "sm__cycles_elapsed"),
            FieldMetrics::of(Field::Drama, "dram__cycles_active", "dram__cycles_elapsed"),
        ];
        let mut names_dedup: Vec<String> =
            fields.iter().flat_map(|f| f.metrics().map(String::from)).collect();
        names_dedup.sort();
        names_dedup.dedup();
        // Rates per second over 10 ms intervals: 1.4e9 SM cycles/s elapsed, 0.7e9 active (0.5); 28e9
        // warp-cycles/s with a peak of 64 warps per cycle (28e9 / (1.4e9 · 64) = 0.3125); DRAM 0.2.
        let rates = |m: &str| match m {
            "sm__cycles_active.avg" => 0.7e9,
            "sm__cycles_elapsed.avg" => 1.4e9,
            "sm__cycles_active.avg.peak_sustained" => 1.0 / 0.01,
            "sm__warps_active.avg" => 28e9,
            "sm__warps_active.avg.peak_sustained" => 64.0 / 0.01,
            "dram__cycles_active.avg" => 0.2e9,
            "dram__cycles_elapsed.avg" => 1e9,
            "dram__cycles_active.avg.peak_sustained" => 1.0 / 0.01,
            _ => f64::NAN,
        };
        let refs: Vec<&str> = names_dedup.iter().map(String::as_str).collect();
        let values: Vec<f64> = names_dedup.iter().map(|m| rates(m)).collect();
        let mut src = DcgmFields::new(FakeCounters::new(&refs, 0.01, move |_| values.clone()), fields);
        assert_eq!(src.names(), ["SMACT", "SMOCC", "DRAMA"]);
        // The fake's intervals follow the clock it is given: five of 10 ms each.
        src.start(0.0).unwrap();
        let ivs = src.stop(0.05).unwrap();
        assert_eq!(ivs.len(), 5);
        for iv in ivs {
            for (got, want) in iv.rates.iter().zip([0.5, 0.3125, 0.2]) {
                assert!((got - want).abs() < 1e-9, "{iv:?}");
            }
        }
    }
}
