//! From a kernel profile and a predicted time to the base values a trained power model reads.
//!
//! The paper feeds its ANN counter *rates*; at an unmeasured configuration the rates are the counter
//! totals over the predicted time, so that power and time stay consistent. Two families of base values:
//!
//! * **Guerreiro's eight utilizations** (`SP INT DP SFU CF L2 Shared DRAM`), each the fraction of the unit's
//!   peak throughput, taken — as in their dataset — at the architecture's *default* clocks: totals / the
//!   time predicted at the default clocks / the peak rate from the architecture profile (warp
//!   instructions per cycle = SMs / cost per warp instruction; bytes/s for L2 and DRAM). Clamped to [0, 1].
//! * **counter totals** under canonical and nvprof names plus `time_ms` at the requested clocks, so that
//!   derived inputs such as `inst_executed/time_ms` (NV-DVFS models) evaluate to rates.
//!
//! * **the power inputs** (`inst_per_s`, `fp32_per_s`, …, [`gpumodel_models::power_inputs`]): counter
//!   totals over the time at the requested clocks, the one vocabulary that every source gives.
//!
//! Plus `core_mhz` and `mem_mhz` (the requested clocks) and `default_core_mhz` / `default_mem_mhz`.

use gpumodel_models::arch::ArchProfile;
use gpumodel_models::profile::KernelProfile;
use gpumodel_models::timing::{Clocks, TimingInputs};

/// Names of Guerreiro's utilizations, in their dataset's order.
pub const UTILIZATIONS: [&str; 8] = ["SP", "INT", "DP", "SFU", "CF", "L2", "Shared", "DRAM"];

/// A kernel's base values at one configuration, looked up by name without allocating (sweeps call this
/// for every point).
#[derive(Debug, Clone, Copy)]
pub struct BaseValues<'a> {
    k: &'a KernelProfile,
    x: &'a TimingInputs,
    /// Guerreiro's utilizations, in the order of [`UTILIZATIONS`].
    pub utilizations: [f64; 8],
    pub clocks: Clocks,
    pub default_clocks: Clocks,
    pub time_s: f64,
    tx_bytes: f64,
}

impl BaseValues<'_> {
    /// The value of a base column: a utilization, a clock, `time_ms` / `time_s`, an nvprof-named total
    /// (where a name is both canonical and nvprof, the nvprof meaning wins: thread-level FP/INT counts),
    /// a canonical counter total, or one of the paper's ten inputs as a total.
    pub fn get(&self, name: &str) -> Option<f64> {
        if let Some(i) = UTILIZATIONS.iter().position(|u| *u == name) {
            return Some(self.utilizations[i]);
        }
        let x = self.x;
        let shared_ld_frac = if x.shared_base > 0.0 {
            self.k.counter("shared_load").unwrap_or(0.0) / x.shared_base
        } else {
            0.0
        };
        let v = match name {
            "core_mhz" => self.clocks.core_mhz,
            "mem_mhz" => self.clocks.mem_mhz,
            "default_core_mhz" => self.default_clocks.core_mhz,
            "default_mem_mhz" => self.default_clocks.mem_mhz,
            "time_ms" => self.time_s * 1e3,
            "time_s" => self.time_s,
            "inst_fp_32" => x.inst_fp32 * 32.0,
            "inst_fp_64" => x.inst_fp64 * 32.0,
            "inst_integer" => x.inst_int * 32.0,
            "flop_count_sp_special" => x.inst_sfu * 32.0,
            "gld_transactions" => x.load_tx,
            "gst_transactions" => x.store_tx,
            "dram_read_transactions" => x.dram_read_bytes.unwrap_or(x.load_tx * self.tx_bytes) / 32.0,
            "dram_write_transactions" => x.dram_write_bytes.unwrap_or(x.store_tx * self.tx_bytes) / 32.0,
            "shared_load_transactions" => (x.shared_base + x.shared_conflicts) * shared_ld_frac,
            "cf_executed" => self.k.counter("branch").unwrap_or(0.0),
            other if gpumodel_models::power_inputs::is_power_input(other) => {
                let input = gpumodel_models::power_inputs::POWER_INPUTS.iter().find(|p| p.name == other)?;
                let total = gpumodel_models::power_inputs::sum_of(input, &|c| self.k.counter(c))?;
                total / self.time_s
            }
            other => {
                return self.k.counter(other).or_else(|| {
                    self.k.model_input_totals().into_iter().find(|(n, _)| *n == other).and_then(|(_, t)| t)
                });
            }
        };
        Some(v)
    }
}

/// The base values of a kernel at `clocks`, given its predicted time there (`time_s`) and at the default
/// clocks (`time_default_s`).
pub fn base_values<'a>(
    k: &'a KernelProfile,
    x: &'a TimingInputs,
    arch: &ArchProfile,
    time_default_s: f64,
    time_s: f64,
    clocks: Clocks,
) -> BaseValues<'a> {
    let n = arch.sm_count.value;
    let fc0 = arch.core_mhz.value * 1e6;
    let t0 = time_default_s.max(f64::MIN_POSITIVE);
    let pipe = |count: f64, cost: f64| count / (t0 * n * fc0 / cost);
    let tx = arch.transaction_bytes.value;
    let l2_bytes = match (k.counter("l2_read_transactions"), k.counter("l2_write_transactions")) {
        (None, None) => (x.load_tx + x.store_tx) * tx,
        (r, w) => (r.unwrap_or(0.0) + w.unwrap_or(0.0)) * 32.0,
    };
    let dram_bytes = match (x.dram_read_bytes, x.dram_write_bytes) {
        (None, None) => (x.load_tx + x.store_tx) * tx,
        (r, w) => r.unwrap_or(0.0) + w.unwrap_or(0.0),
    };
    let utils = [
        pipe(x.inst_fp32, arch.cost_fp32.value),
        pipe(x.inst_int, arch.cost_int.value),
        pipe(x.inst_fp64, arch.cost_fp64.value),
        pipe(x.inst_sfu, arch.cost_sfu.value),
        pipe(k.counter("branch").unwrap_or(0.0), 1.0 / arch.schedulers_per_sm.value),
        l2_bytes / (t0 * arch.l2_bandwidth_gbs.value * 1e9),
        pipe(x.shared_base + x.shared_conflicts, arch.shared_cycles_per_wavefront()),
        dram_bytes / (t0 * arch.bandwidth_bytes_per_s(arch.mem_mhz.value)),
    ];
    BaseValues {
        k,
        x,
        utilizations: utils.map(|u| u.clamp(0.0, 1.0)),
        clocks,
        default_clocks: Clocks::default_for(arch),
        time_s,
        tx_bytes: tx,
    }
}

/// The power answer for a profile that lacks some of a power-input model's inputs: a line on the inputs it
/// does give, fitted on the model's training rows ([`gpumodel_models::artifact::SubsetFits`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PowerFallback {
    /// The model inputs the profile lacks, each with the counters that would give it.
    pub lacked: Vec<String>,
    /// The line: its inputs, coefficients and held-out error over the training rows.
    pub fit: gpumodel_models::artifact::SubsetFit,
    /// How its held-out error was made.
    pub folds_from: String,
}

impl PowerFallback {
    /// One line for a report: what was missing, what was used, and the line's held-out error.
    pub fn describe(&self) -> String {
        let used = if self.fit.inputs.is_empty() {
            "none (the training mean)".into()
        } else {
            self.fit.inputs.join(", ")
        };
        format!(
            "a line on the inputs this profile gives ({used}), fitted on the model's {} training rows: ±{:.1} W \
             RMSE on held-out kernels ({}; their mean {:.1} W)",
            self.fit.rows, self.fit.cv_rmse_w, self.folds_from, self.fit.mean_w,
        )
    }

    /// The report's line naming what the profile lacked and the counters that give each.
    pub fn lacks_line(&self) -> String {
        format!("lacks       {}", self.lacked.join(", "))
    }
}

/// A fallback's power (W), its record, and the inputs as fed, by name.
pub type SubsetAnswer = (f64, PowerFallback, Vec<(String, f64)>);

/// Power from the inputs `get` gives when `model` has subset statistics and the profile lacks some of its
/// inputs: the prediction, the fallback's record and the inputs as fed. `None` when the model has no such
/// statistics, when nothing is lacking, or when no line can be fitted.
pub fn subset_power(
    model: &gpumodel_models::artifact::ModelArtifact,
    get: impl Fn(&str) -> Option<f64>,
) -> Option<SubsetAnswer> {
    use gpumodel_models::power_inputs::{POWER_INPUTS, needs};
    let s = model.subset.as_ref()?;
    let values: Vec<Option<f64>> = s.inputs.iter().map(|n| get(n).filter(|v| v.is_finite())).collect();
    if values.iter().all(Option::is_some) {
        return None;
    }
    let lacked = s
        .inputs
        .iter()
        .zip(&values)
        .filter(|(_, v)| v.is_none())
        .map(|(n, _)| match POWER_INPUTS.iter().find(|p| p.name == n) {
            Some(p) => format!("{n} ({})", needs(p)),
            None => n.clone(),
        })
        .collect();
    let fit = s.fit(|n| s.inputs.iter().zip(&values).any(|(m, v)| m == n && v.is_some()))?;
    let fed: Vec<(String, f64)> =
        s.inputs.iter().zip(&values).filter_map(|(n, v)| Some((n.clone(), (*v)?))).collect();
    let power = fit.predict(&fed.iter().map(|(_, v)| *v).collect::<Vec<_>>());
    power.is_finite().then(|| (power, PowerFallback { lacked, fit, folds_from: s.folds_from.clone() }, fed))
}

/// Power beside a roofline time (a profile the pipeline timing model cannot read): the power model's
/// inputs are counter rates at that time. Answered when every input is a power input
/// ([`gpumodel_models::power_inputs`]): in full when the profile gives them all, by the subset line
/// ([`PowerFallback`]) when it gives some; otherwise not, with the reason.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RooflinePower {
    pub power_w: Option<f64>,
    pub energy_j: Option<f64>,
    /// The inputs as fed, by name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<(String, f64)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<PowerFallback>,
    /// Why there is no power, when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_predicted: Option<String>,
}

impl RooflinePower {
    /// The power of `k` over `time_s` seconds at `clocks` with `model`.
    pub fn of(
        model: &gpumodel_models::artifact::ModelArtifact,
        k: &KernelProfile,
        time_s: f64,
        clocks: gpumodel_models::timing::Clocks,
    ) -> RooflinePower {
        use gpumodel_models::power_inputs::{POWER_INPUTS, is_power_input, sum_of};
        let none = |why: String| RooflinePower {
            power_w: None,
            energy_j: None,
            inputs: Vec::new(),
            fallback: None,
            not_predicted: Some(why),
        };
        let clock = |name: &str| match name {
            "core_mhz" => Some(clocks.core_mhz),
            "mem_mhz" => Some(clocks.mem_mhz),
            _ => None,
        };
        if !model.inputs.iter().all(|i| is_power_input(i) || clock(i).is_some()) {
            return none(format!(
                "the power model reads {}, which need the counters the roofline lacks; a model trained on power \
                 inputs (`gpumodel collect --suite`, `gpumodel train`) answers from what the profile gives",
                model.inputs.join(", ")
            ));
        }
        if !(time_s.is_finite() && time_s > 0.0) {
            return none(format!("the time {time_s} s gives no counter rates"));
        }
        let get = |name: &str| {
            if let Some(f) = clock(name) {
                return Some(f);
            }
            let p = POWER_INPUTS.iter().find(|p| p.name == name)?;
            sum_of(p, &|c| k.counter(c)).map(|total| total / time_s)
        };
        let answer = |w: f64, fallback, inputs| RooflinePower {
            power_w: Some(w),
            energy_j: Some(w * time_s),
            inputs,
            fallback,
            not_predicted: None,
        };
        let values: Option<Vec<f64>> = model.inputs.iter().map(|i| get(i)).collect();
        if let Some(v) = values {
            let w = model.predict_one(&v);
            let fed = model.inputs.iter().cloned().zip(v).collect();
            return if w.is_finite() {
                answer(w, None, fed)
            } else {
                none(format!("the power model returned {w} W"))
            };
        }
        match subset_power(model, get) {
            Some((w, f, fed)) => answer(w, Some(f), fed),
            None => none(
                "the profile lacks some of the power model's inputs and the model carries no training statistics to \
                 fit a line on the others (train it again with this gpumodel)"
                    .into(),
            ),
        }
    }

    /// The report's power line.
    pub fn line(&self, model: &str) -> String {
        match (self.power_w, &self.fallback, &self.not_predicted) {
            (Some(w), None, _) => {
                format!("power       {w:.1} W ({model} model; inputs = counter rates at this time)")
            }
            (Some(w), Some(f), _) => {
                format!("power       {w:.1} W ({model} model's data: {})\n{}", f.describe(), f.lacks_line())
            }
            (None, _, why) => {
                format!("power       not predicted: {}", why.as_deref().unwrap_or("no power model"))
            }
        }
    }
}
