//! Turning power samples and counter intervals into trace rows: each row covers `(t_prev, t]` of the power
//! sampler, with the time-weighted mean of the counter rates overlapping it.

use crate::counters::CounterInterval;
use crate::sampler::PowerSample;
use gpumodel_models::profile::MODEL_INPUTS;
use gpumodel_models::trace::TraceRow;

/// Merges power samples with counter intervals into rows, in time order.
pub(super) struct Merger {
    pub(super) pending: Vec<(f64, PowerSample)>, // (interval start, sample)
    pub(super) intervals: Vec<CounterInterval>,
    pub(super) covered_until: f64,
    pub(super) have_counters: bool,
    pub(super) n_counters: usize,
    pub(super) inputs: Vec<Vec<usize>>, // model-input columns: indices of the counter columns summed
    pub(super) last_t: Option<f64>,
    pub(super) run_start: f64,
    /// (power W, dt s) of every row handed out, for the summary.
    pub(super) written: Vec<(f64, f64)>,
}

impl Merger {
    pub(super) fn push_power(&mut self, s: PowerSample) {
        let start = self.last_t.unwrap_or(s.t_s);
        self.last_t = Some(s.t_s);
        if s.t_s >= self.run_start && s.t_s > start {
            self.pending.push((start.max(self.run_start), s));
        }
    }

    pub(super) fn push_counters(&mut self, v: Vec<CounterInterval>) {
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
    pub(super) fn ready(&mut self, all: bool) -> Vec<TraceRow> {
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
pub(super) fn derived_inputs(names: &[String]) -> Vec<(String, Vec<usize>)> {
    MODEL_INPUTS
        .iter()
        .filter(|(input, _)| !names.iter().any(|n| n == input))
        .filter_map(|(input, parts)| {
            let ix: Option<Vec<usize>> = parts.iter().map(|p| names.iter().position(|n| n == p)).collect();
            ix.map(|ix| (input.to_string(), ix))
        })
        .collect()
}
