//! Model artifacts: a trained power model as a plain, versioned, human-readable JSON document, evaluated
//! here without burn, so that `predict` and `collect` never depend on the training stack.
//!
//! Both model families share one form: standardize the inputs, run a stack of dense layers, un-scale the
//! output. MLR / MLR+ are one linear layer; the BP-ANN is `inputs → 4 σ → 4 σ → 1` by default.

use crate::error::{Error, Result};
use ndarray::{Array1, ArrayView2};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Version of the artifact format this build reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// Which model family an artifact holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelKind {
    /// Back-propagation neural network (paper §5.4).
    Bpann,
    /// Multiple linear regression on the base inputs (Nagasaka et al. 2010).
    Mlr,
    /// Multiple linear regression on all inputs.
    #[serde(rename = "mlr+")]
    MlrPlus,
    /// Guerreiro et al.'s physical DVFS power model (TPDS'19 form, see [`PhysicalTerms`]).
    Physical,
    /// The physical DVFS model plus a BP-ANN fitted to its residual (`physical(x) + network(x)`).
    #[serde(rename = "physical+bpann")]
    PhysicalBpann,
}

impl ModelKind {
    /// The name used in files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ModelKind::Bpann => "bpann",
            ModelKind::Mlr => "mlr",
            ModelKind::MlrPlus => "mlr+",
            ModelKind::Physical => "physical",
            ModelKind::PhysicalBpann => "physical+bpann",
        }
    }
}

/// Activation of a dense layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Activation {
    Identity,
    Sigmoid,
}

/// `y = act(W x + b)`, with `weights[out][in]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dense {
    pub weights: Vec<Vec<f64>>,
    pub bias: Vec<f64>,
    pub activation: Activation,
}

/// `(x − mean) / std`, per input; the output is `y · std + mean`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scaling {
    pub mean: Vec<f64>,
    pub std: Vec<f64>,
}

/// One clock level of a domain and its voltage relative to the reference (default) clocks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct VoltageLevel {
    pub mhz: f64,
    /// Voltage relative to the voltage at the reference clock (1 at the reference level).
    pub relative_v: f64,
}

/// Guerreiro et al.'s physical DVFS power model (TPDS'19):
///
/// `P = β0·V_c + V_c²·f_c·(β_c + Σ_i β_i·U_i) + β1·V_m + V_m²·f_m·(β_m + Σ_j β_j·U_j)`
///
/// with `f` the clock relative to the reference clock of its domain, `V` the relative voltage of the
/// clock level (one per level, 1 at the reference), `U_i` the core-domain activity inputs and `U_j` the
/// memory-domain ones (DRAM). Every β is non-negative and voltage never falls as the clock rises.
/// Between and beyond the fitted levels the voltage is interpolated / extrapolated linearly in MHz.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhysicalTerms {
    /// Input names of the core and memory clocks (MHz).
    pub core_clock: String,
    pub mem_clock: String,
    /// Reference clocks (MHz): f is relative to these, and V = 1 there.
    pub ref_core_mhz: f64,
    pub ref_mem_mhz: f64,
    /// Core-domain activity inputs `U_i` and their β_i (W).
    pub core_inputs: Vec<String>,
    pub core_betas: Vec<f64>,
    /// Memory-domain activity inputs (DRAM) and their β (W).
    pub mem_inputs: Vec<String>,
    pub mem_betas: Vec<f64>,
    /// β0 (static, ∝ V_c), β_c (clock tree, ∝ V_c²·f_c), β1, β_m (same for the memory domain), W.
    pub beta0_w: f64,
    pub beta_core_w: f64,
    pub beta1_w: f64,
    pub beta_mem_w: f64,
    /// Fitted voltage per clock level, ascending in MHz.
    pub core_levels: Vec<VoltageLevel>,
    pub mem_levels: Vec<VoltageLevel>,
    /// When set, the activity inputs are utilizations measured once, at these clocks, and the model
    /// rescales them to each clock pair it predicts at ([`Roofline`]). Absent in artifacts written
    /// before it existed and in models that read their activities as given (they load and predict as
    /// before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roofline: Option<Roofline>,
    /// When set (only in a `physical+bpann` artifact), the residual network is trusted only near the
    /// kernels it was trained on: its output is multiplied by the [`ResidualGate`]'s weight of the row,
    /// computed from the activity inputs above. Kept with the terms because it reads their inputs.
    /// Absent in artifacts written before it existed and in ungated models (they predict as before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub residual_gate: Option<ResidualGate>,
}

/// A residual network trusted only near its training data: the weight `g ∈ [0, 1]` its output is
/// multiplied by, `P·(1 + g·net)` (relative residual) or `P + g·net` (absolute), falls with the distance
/// from a row's activity inputs to the training kernels. The form is fixed a priori, with no fitted
/// parameter:
///
/// - the activity inputs are standardized with the training rows' means and standard deviations (an
///   input constant on the training rows keeps the scale 1);
/// - each training kernel's signature is the mean of its rows' standardized activity vectors;
/// - `d(x)` is the Euclidean distance from the row's standardized activity vector to the nearest
///   signature, and `τ` the largest over the training kernels of the distance from each signature to
///   its nearest other one (the training set's covering spacing: every training kernel lies within τ
///   of another);
/// - `g = min(1, (τ/d)²)`: fully trusted within that spacing, fading beyond it (g = 1 at d = 0).
///
/// τ is the largest, not the median, nearest-neighbour distance (BENCHMARKS.md, issue 15, session 11:
/// chosen on the training microbenchmarks' grouped and leave-cluster-out CV before any nested run). The
/// microbenchmarks come in families of near-duplicates (one kernel at several sizes), so their median
/// spacing is a family's and turned the network off for most unseen kernels, even in grouped CV.
///
/// It is built from the training rows of each fit only ([`ResidualGate::from_training`]), so in
/// cross-validation a held-out kernel never shapes the gate that judges it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResidualGate {
    /// The activity inputs the distance is measured over (among the artifact's inputs).
    pub inputs: Vec<String>,
    /// Their standardization (the training rows' means and standard deviations).
    pub scaling: Scaling,
    /// One standardized signature per training kernel.
    pub signatures: Vec<Vec<f64>>,
    /// The covering spacing τ of the signatures (largest nearest-neighbour distance).
    pub tau: f64,
}

impl ResidualGate {
    /// The gate of the training rows `ds` over its columns `inputs`; `None` with fewer than two
    /// training kernels (no spacing to measure: the network is then trusted everywhere, as ungated).
    pub fn from_training(ds: &crate::Dataset, inputs: &[String]) -> Result<Option<ResidualGate>> {
        let sub = ds.select_features(inputs)?;
        let x = &sub.records;
        let n = x.nrows().max(1) as f64;
        let mean: Vec<f64> = x.columns().into_iter().map(|c| c.sum() / n).collect();
        let std: Vec<f64> = x
            .columns()
            .into_iter()
            .zip(&mean)
            .map(|(c, m)| {
                let sd = (c.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / n).sqrt();
                if sd > 0.0 && sd.is_finite() { sd } else { 1.0 }
            })
            .collect();
        let signatures: Vec<Vec<f64>> = sub
            .group_rows()
            .into_iter()
            .map(|(_, rows)| {
                (0..inputs.len())
                    .map(|j| {
                        rows.iter().map(|&r| (x[[r, j]] - mean[j]) / std[j]).sum::<f64>() / rows.len() as f64
                    })
                    .collect()
            })
            .collect();
        if signatures.len() < 2 {
            return Ok(None);
        }
        let spacing: Vec<f64> = signatures
            .iter()
            .enumerate()
            .map(|(i, s)| {
                signatures
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| *k != i)
                    .map(|(_, o)| distance(s, o))
                    .fold(f64::INFINITY, f64::min)
            })
            .collect();
        let gate = ResidualGate {
            inputs: inputs.to_vec(),
            scaling: Scaling { mean, std },
            signatures,
            tau: spacing.iter().copied().fold(0.0, f64::max),
        };
        gate.check()?;
        Ok(Some(gate))
    }

    /// Distance from the activity vector `u` (raw, in the order of `inputs`) to the nearest signature.
    pub fn distance(&self, u: &[f64]) -> f64 {
        let z: Vec<f64> = u
            .iter()
            .zip(self.scaling.mean.iter().zip(&self.scaling.std))
            .map(|(v, (m, s))| (v - m) / s)
            .collect();
        self.signatures.iter().map(|s| distance(&z, s)).fold(f64::INFINITY, f64::min)
    }

    /// The weight of the network's output on a row with activity vector `u`: `min(1, (τ/d)²)`.
    pub fn weight(&self, u: &[f64]) -> f64 {
        let d = self.distance(u);
        if d <= self.tau { 1.0 } else { (self.tau / d).powi(2) }
    }

    fn check(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::Mismatch(format!("residual gate: {m}")));
        let k = self.inputs.len();
        if k == 0 || self.scaling.mean.len() != k || self.scaling.std.len() != k {
            return bad("one mean and one standard deviation per input are needed");
        }
        if self.signatures.is_empty() || self.signatures.iter().any(|s| s.len() != k) {
            return bad("every signature needs one value per input");
        }
        let finite = |v: &[f64]| v.iter().all(|x| x.is_finite());
        let valid = finite(&self.scaling.mean)
            && self.scaling.std.iter().all(|s| *s > 0.0 && s.is_finite())
            && self.signatures.iter().all(|s| finite(s))
            && self.tau >= 0.0
            && self.tau.is_finite();
        if !valid {
            return bad(
                "scaling, signatures and τ must be finite (standard deviations and τ positive or τ zero)",
            );
        }
        Ok(())
    }
}

fn distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f64>().sqrt()
}

/// Roofline rescaling of utilizations measured at one clock pair (Guerreiro et al.'s files: every
/// utilization taken at the default clocks, power at every clock pair) to the clock pair of a row.
///
/// A utilization is events per cycle of its domain's clock over the kernel's run time. Moving the
/// clocks changes both the cycles per second and the run time: a compute-bound kernel's run time
/// scales with the core clock (its core utilizations stay; its DRAM utilization falls), a memory-bound
/// kernel's with the memory clock (its core utilizations rise as the core clock falls, since the same
/// events now meet fewer core cycles). The run time relative to the measurement is estimated a priori
/// by a roofline over the two domains, with no fitted parameter:
///
/// `t/t0 = max(a·f_c0/f_c, b·f_m0/f_m) / max(a, b)`
///
/// with `a` the largest core-domain utilization (the busiest core-side unit bounds the core side's
/// time) and `b` the largest memory-domain one, both at the measurement clocks `f_c0`, `f_m0`. Every
/// core-domain utilization is then scaled by `(f_c0/f_c)·(t0/t)` and every memory-domain one by
/// `(f_m0/f_m)·(t0/t)` — the same events over the new run time, per cycle of the new clock. No
/// utilization then exceeds the largest measured one, `max(a, b)` (the bottleneck domain keeps its
/// load), so no cap is needed. At the measurement clocks it is the identity; a kernel with no activity
/// at all is left as it is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Roofline {
    /// Core and memory clocks (MHz) the utilizations were measured at.
    pub core_mhz: f64,
    pub mem_mhz: f64,
}

impl Roofline {
    /// Rescales one row's utilizations in place to the clocks `core_mhz`, `mem_mhz`.
    pub fn rescale(&self, core_u: &mut [f64], mem_u: &mut [f64], core_mhz: f64, mem_mhz: f64) {
        let peak = |u: &[f64]| u.iter().fold(0.0f64, |m, &x| m.max(x));
        let (a, b) = (peak(core_u), peak(mem_u));
        // The peaks start at 0, so the load is ≥ 0 (NaN utilizations do not raise it).
        let load = a.max(b);
        if load <= 0.0 {
            return;
        }
        let (core_slow, mem_slow) = (self.core_mhz / core_mhz, self.mem_mhz / mem_mhz);
        let time = (a * core_slow).max(b * mem_slow) / load;
        for (u, s) in [(core_u, core_slow / time), (mem_u, mem_slow / time)] {
            for x in u.iter_mut() {
                *x *= s;
            }
        }
    }
}

/// Linear interpolation of the relative voltage at `mhz` over ascending `levels` (linear extrapolation
/// beyond the ends from the two outermost levels, never below 0).
pub fn voltage_at(levels: &[VoltageLevel], mhz: f64) -> f64 {
    match levels {
        [] => 1.0,
        [one] => one.relative_v,
        _ => {
            let k = levels
                .iter()
                .position(|l| l.mhz >= mhz)
                .unwrap_or(levels.len() - 1)
                .clamp(1, levels.len() - 1);
            let (a, b) = (levels[k - 1], levels[k]);
            if a.mhz == mhz {
                return a.relative_v;
            }
            if b.mhz == mhz {
                return b.relative_v;
            }
            let t = (mhz - a.mhz) / (b.mhz - a.mhz);
            (a.relative_v + t * (b.relative_v - a.relative_v)).max(0.0)
        }
    }
}

/// Every input a physical DVFS model reads, in the order its artifact and its fit use: core-domain
/// activities, memory-domain activities, then the core and memory clocks. The one definition of that
/// order for the unfitted parameters (`gpumodel_train::PhysicalParams::inputs`) and the fitted terms.
pub fn physical_input_names(
    core_inputs: &[String],
    mem_inputs: &[String],
    core_clock: &str,
    mem_clock: &str,
) -> Vec<String> {
    core_inputs
        .iter()
        .chain(mem_inputs)
        .cloned()
        .chain([core_clock.to_string(), mem_clock.to_string()])
        .collect()
}

impl PhysicalTerms {
    /// Every input the terms read.
    pub fn input_names(&self) -> Vec<String> {
        physical_input_names(&self.core_inputs, &self.mem_inputs, &self.core_clock, &self.mem_clock)
    }

    /// Power (W) of one row from its activities as the data gives them (rescaled here to the row's
    /// clocks when the terms carry a [`Roofline`]; the slices are then overwritten).
    pub fn power_w(&self, core_u: &mut [f64], mem_u: &mut [f64], core_mhz: f64, mem_mhz: f64) -> f64 {
        if let Some(r) = &self.roofline {
            r.rescale(core_u, mem_u, core_mhz, mem_mhz);
        }
        let vc = voltage_at(&self.core_levels, core_mhz);
        let vm = voltage_at(&self.mem_levels, mem_mhz);
        let fc = core_mhz / self.ref_core_mhz;
        let fm = mem_mhz / self.ref_mem_mhz;
        let core: f64 =
            self.beta_core_w + self.core_betas.iter().zip(core_u.iter()).map(|(b, u)| b * u).sum::<f64>();
        let mem: f64 =
            self.beta_mem_w + self.mem_betas.iter().zip(mem_u.iter()).map(|(b, u)| b * u).sum::<f64>();
        self.beta0_w * vc + vc * vc * fc * core + self.beta1_w * vm + vm * vm * fm * mem
    }

    fn check(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::Mismatch(format!("physical model: {m}")));
        if self.core_betas.len() != self.core_inputs.len() || self.mem_betas.len() != self.mem_inputs.len() {
            return bad("one β per activity input is needed");
        }
        if self.core_levels.is_empty() || self.mem_levels.is_empty() {
            return bad("each clock domain needs at least one voltage level");
        }
        let ascending = |l: &[VoltageLevel]| l.windows(2).all(|w| w[0].mhz < w[1].mhz);
        if !ascending(&self.core_levels) || !ascending(&self.mem_levels) {
            return bad("voltage levels must be in ascending clock order");
        }
        if !(self.ref_core_mhz > 0.0 && self.ref_mem_mhz > 0.0) {
            return bad("reference clocks must be positive");
        }
        if let Some(r) = &self.roofline
            && !(r.core_mhz > 0.0 && r.mem_mhz > 0.0 && r.core_mhz.is_finite() && r.mem_mhz.is_finite())
        {
            return bad("the roofline's measurement clocks must be positive");
        }
        Ok(())
    }

    /// Indices of (core inputs, memory inputs, core clock, memory clock) in `inputs`.
    fn indices(&self, inputs: &[String]) -> Result<(Vec<usize>, Vec<usize>, usize, usize)> {
        let find = |n: &String| {
            inputs.iter().position(|i| i == n).ok_or_else(|| {
                Error::Mismatch(format!("physical model: input '{n}' is not among the artifact's inputs"))
            })
        };
        Ok((
            self.core_inputs.iter().map(find).collect::<Result<_>>()?,
            self.mem_inputs.iter().map(find).collect::<Result<_>>()?,
            find(&self.core_clock)?,
            find(&self.mem_clock)?,
        ))
    }

    /// Power (W) of every row of `records` whose columns are `inputs`.
    pub fn predict(&self, inputs: &[String], records: ArrayView2<'_, f64>) -> Result<Array1<f64>> {
        let (ci, mi, fc, fm) = self.indices(inputs)?;
        let mut cu = vec![0.0; ci.len()];
        let mut mu = vec![0.0; mi.len()];
        Ok(records
            .rows()
            .into_iter()
            .map(|r| {
                for (u, &j) in cu.iter_mut().zip(&ci) {
                    *u = r[j];
                }
                for (u, &j) in mu.iter_mut().zip(&mi) {
                    *u = r[j];
                }
                self.power_w(&mut cu, &mut mu, r[fc], r[fm])
            })
            .collect())
    }
}

/// A trained model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelArtifact {
    pub format_version: u32,
    pub kind: ModelKind,
    /// Input column names, in order.
    pub inputs: Vec<String>,
    /// Target column name (`power_w`).
    pub target: String,
    /// Name of the feature set the model was trained with.
    pub feature_set: String,
    pub input_scaling: Scaling,
    /// Output scaling: one mean and one std.
    pub target_scaling: Scaling,
    pub layers: Vec<Dense>,
    /// Base columns the inputs are computed from (see [`crate::features`]): what a kernel must provide.
    /// Empty in artifacts written before derived inputs existed; then the inputs are the base columns.
    #[serde(default)]
    pub base_columns: Vec<String>,
    /// How the model was made: dataset name and sha256, seed, epochs, metrics… (free-form JSON).
    #[serde(default)]
    pub training: serde_json::Value,
    /// The physical DVFS model: the whole model (`physical`) or the base the network's output is added
    /// to (`physical+bpann`, the network then models the residual).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physical: Option<PhysicalTerms>,
    /// The arithmetic the network's training gradient ran in (instructions and precision): fits from
    /// the same seed on CPUs with different paths can differ in the last bits, and L-BFGS turns that
    /// into a different network. Absent in artifacts written before it was recorded (they load as
    /// before) and in models without a network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arithmetic: Option<Arithmetic>,
    /// How a `physical+bpann` network's output combines with the physical model: added in watts
    /// (`absolute`, the default, and every artifact written before the field existed) or as a relative
    /// correction, `P·(1 + network)` (`relative`: the network was fitted to `y/P − 1`). Written only when
    /// relative.
    #[serde(default, skip_serializing_if = "Residual::is_absolute")]
    pub residual: Residual,
    /// What a standalone network was fitted to: power in watts (`identity`, the default, and every
    /// artifact written before the field existed) or ln(power) (`log`, `train --target log`: the
    /// prediction is exp of the un-standardized network output). Written only when `log`.
    #[serde(default, skip_serializing_if = "TargetTransform::is_identity")]
    pub target_transform: TargetTransform,
}

/// What a network's standardized output is, before un-standardizing ([`ModelArtifact::target_transform`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TargetTransform {
    /// Power (W).
    #[default]
    Identity,
    /// ln(power / W).
    Log,
}

impl TargetTransform {
    pub fn is_identity(&self) -> bool {
        *self == TargetTransform::Identity
    }

    /// The power (W) of an un-standardized network output `y`.
    #[inline(always)]
    pub fn invert(self, y: f64) -> f64 {
        match self {
            TargetTransform::Identity => y,
            TargetTransform::Log => y.exp(),
        }
    }
}

/// How a residual network's output combines with its physical model ([`ModelArtifact::residual`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Residual {
    /// `P + network` (W).
    #[default]
    Absolute,
    /// `P·(1 + network)`.
    Relative,
}

impl Residual {
    pub fn name(self) -> &'static str {
        match self {
            Residual::Absolute => "absolute",
            Residual::Relative => "relative",
        }
    }

    pub fn is_absolute(&self) -> bool {
        *self == Residual::Absolute
    }

    /// The physical model's power `base` with the network's output `net` applied.
    pub fn apply(self, base: f64, net: f64) -> f64 {
        match self {
            Residual::Absolute => base + net,
            Residual::Relative => base * (1.0 + net),
        }
    }
}

/// How a network's training arithmetic ran ([`ModelArtifact::arithmetic`]). Plain strings, so that an
/// artifact naming a path this version does not know still loads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Arithmetic {
    /// The instruction path of the training gradient: `avx2+fma`, `portable` (unfused multiply-adds),
    /// `portable+fma`, or the library that computed it (`burn …`).
    pub instructions: String,
    /// Its precision: `f32` (activations and products in f32, sums over rows in f64) or `f64`. The
    /// validation error that stops training and picks the restart is computed in f64 either way.
    pub precision: String,
}

impl ModelArtifact {
    /// Tells a roofline model ([`Roofline`]) at which clocks the utilizations it will be given were
    /// taken. A trained artifact records its training file's measurement clocks; `predict` computes a
    /// kernel's utilizations at the target architecture's default clocks, which differ on another GPU,
    /// and the rescaling must start from those. Models without a roofline are left as they are.
    pub fn with_activities_measured_at(mut self, core_mhz: f64, mem_mhz: f64) -> ModelArtifact {
        if let Some(r) = self.physical.as_mut().and_then(|p| p.roofline.as_mut()) {
            *r = Roofline { core_mhz, mem_mhz };
        }
        self
    }

    /// Reads an artifact and checks its shapes.
    pub fn from_json_file(path: &Path) -> Result<ModelArtifact> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        ModelArtifact::from_json_str(&text, &path.display().to_string())
    }

    /// Parses an artifact; `source` names it in errors.
    pub fn from_json_str(text: &str, source: &str) -> Result<ModelArtifact> {
        let a: ModelArtifact = serde_json::from_str(text).map_err(|e| Error::Document {
            file: source.to_string(),
            message: format!("not a gpumodel model artifact: {e}"),
        })?;
        a.check().map_err(|e| Error::Document { file: source.to_string(), message: e.to_string() })?;
        Ok(a)
    }

    /// Writes the artifact as pretty JSON.
    pub fn write_json_file(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(|e| Error::Invalid(e.to_string()))?;
        std::fs::write(path, text + "\n").map_err(|e| Error::io(path, e))
    }

    /// Checks the version and that every layer's shape chains from the inputs to one output.
    pub fn check(&self) -> Result<()> {
        if self.format_version != FORMAT_VERSION {
            return Err(Error::Mismatch(format!(
                "artifact format version {} is not {FORMAT_VERSION}: retrain it with this gpumodel",
                self.format_version
            )));
        }
        let n = self.inputs.len();
        if self.input_scaling.mean.len() != n || self.input_scaling.std.len() != n {
            return Err(Error::Mismatch("input scaling does not match the number of inputs".into()));
        }
        if self.target_scaling.mean.len() != 1 || self.target_scaling.std.len() != 1 {
            return Err(Error::Mismatch("target scaling must have one mean and one std".into()));
        }
        match (self.kind, &self.physical) {
            (ModelKind::Physical | ModelKind::PhysicalBpann, None) => {
                return Err(Error::Mismatch(format!(
                    "a {} artifact needs its `physical` terms",
                    self.kind.name()
                )));
            }
            (ModelKind::Physical | ModelKind::PhysicalBpann, Some(p)) => {
                p.check()?;
                p.indices(&self.inputs)?;
                if let Some(g) = &p.residual_gate {
                    if self.kind != ModelKind::PhysicalBpann {
                        return Err(Error::Mismatch(format!(
                            "a {} artifact has no residual network to gate",
                            self.kind.name()
                        )));
                    }
                    g.check()?;
                    self.gate_indices(g)?;
                }
            }
            (_, Some(_)) => {
                return Err(Error::Mismatch(format!(
                    "a {} artifact has no `physical` terms",
                    self.kind.name()
                )));
            }
            _ => {}
        }
        if self.residual == Residual::Relative && self.kind != ModelKind::PhysicalBpann {
            return Err(Error::Mismatch(format!(
                "a {} artifact has no residual network to apply relatively",
                self.kind.name()
            )));
        }
        if self.target_transform != TargetTransform::Identity && self.kind != ModelKind::Bpann {
            return Err(Error::Mismatch(format!(
                "a {} artifact cannot have a log target: only a standalone bpann network is fitted to ln(power)",
                self.kind.name()
            )));
        }
        if self.kind == ModelKind::Physical {
            if !self.layers.is_empty() {
                return Err(Error::Mismatch("a physical artifact has no network layers".into()));
            }
            return Ok(());
        }
        let mut width = n;
        for (k, l) in self.layers.iter().enumerate() {
            if l.weights.len() != l.bias.len() || l.weights.iter().any(|r| r.len() != width) {
                return Err(Error::Mismatch(format!("layer {k} does not take {width} inputs")));
            }
            width = l.bias.len();
        }
        if width != 1 || self.layers.is_empty() {
            return Err(Error::Mismatch("the last layer must have exactly one output".into()));
        }
        Ok(())
    }

    /// Checks that `available` columns provide every input, naming the missing ones.
    pub fn check_inputs(&self, available: &[String]) -> Result<Vec<usize>> {
        let mut idx = Vec::with_capacity(self.inputs.len());
        let mut missing = Vec::new();
        for name in &self.inputs {
            match available.iter().position(|a| a == name) {
                Some(i) => idx.push(i),
                None => missing.push(name.as_str()),
            }
        }
        if missing.is_empty() {
            Ok(idx)
        } else {
            Err(Error::Mismatch(format!(
                "the {} model (feature set '{}') needs input(s) {} that the data does not provide",
                self.kind.name(),
                self.feature_set,
                missing.join(", ")
            )))
        }
    }

    /// Positions of a gate's inputs among the artifact's inputs.
    fn gate_indices(&self, g: &ResidualGate) -> Result<Vec<usize>> {
        g.inputs
            .iter()
            .map(|n| {
                self.inputs.iter().position(|i| i == n).ok_or_else(|| {
                    Error::Mismatch(format!("residual gate: input '{n}' is not among the artifact's inputs"))
                })
            })
            .collect()
    }

    /// The residual gate's weight of every row of `records` (columns in the order of `inputs`), or
    /// `None` when the model has no gate. `check` proved the gate's inputs are among `inputs`; a
    /// caller passing too few columns gets NaN weights rather than a panic.
    pub fn gate_weights(&self, records: ArrayView2<'_, f64>) -> Option<Array1<f64>> {
        let g = self.physical.as_ref()?.residual_gate.as_ref()?;
        let idx = self.gate_indices(g).ok().filter(|i| i.iter().all(|&j| j < records.ncols()));
        let mut u = vec![0.0; g.inputs.len()];
        Some(
            records
                .rows()
                .into_iter()
                .map(|r| match &idx {
                    Some(idx) => {
                        for (v, &j) in u.iter_mut().zip(idx) {
                            *v = r[j];
                        }
                        g.weight(&u)
                    }
                    None => f64::NAN,
                })
                .collect(),
        )
    }

    /// Predicts one row; `x` is in the order of `inputs`.
    pub fn predict_one(&self, x: &[f64]) -> f64 {
        match &self.physical {
            None => self.network_one(x),
            Some(p) => {
                let row = ndarray::ArrayView2::from_shape((1, x.len()), x);
                let base = row
                    .as_ref()
                    .map_or(f64::NAN, |r| p.predict(&self.inputs, r.view()).map_or(f64::NAN, |v| v[0]));
                if self.layers.is_empty() {
                    return base;
                }
                let gate = match row.map(|r| self.gate_weights(r)) {
                    Ok(Some(g)) => g[0],
                    Ok(None) => 1.0,
                    Err(_) => f64::NAN,
                };
                self.residual.apply(base, gate * self.network_one(x))
            }
        }
    }

    fn network_one(&self, x: &[f64]) -> f64 {
        let mut buf_a = [0.0f64; MAX_WIDTH];
        let mut buf_b = [0.0f64; MAX_WIDTH];
        let n = x.len();
        if n > MAX_WIDTH || self.layers.iter().any(|l| l.bias.len() > MAX_WIDTH) {
            return self.predict_one_alloc(x);
        }
        for i in 0..n {
            buf_a[i] = (x[i] - self.input_scaling.mean[i]) / self.input_scaling.std[i];
        }
        // Ping-pong between two stack buffers by reference: swapping the arrays themselves would copy
        // 1 KiB per layer per row, which dominated the forward pass.
        let (mut cur, mut next) = (&mut buf_a, &mut buf_b);
        let mut width = n;
        for layer in &self.layers {
            for (o, (w, b)) in layer.weights.iter().zip(&layer.bias).enumerate() {
                let s = b + w[..width].iter().zip(&cur[..width]).map(|(a, c)| a * c).sum::<f64>();
                next[o] = activate(layer.activation, s);
            }
            width = layer.bias.len();
            std::mem::swap(&mut cur, &mut next);
        }
        self.target_transform.invert(cur[0] * self.target_scaling.std[0] + self.target_scaling.mean[0])
    }

    fn predict_one_alloc(&self, x: &[f64]) -> f64 {
        let mut h: Vec<f64> = x
            .iter()
            .enumerate()
            .map(|(i, v)| (v - self.input_scaling.mean[i]) / self.input_scaling.std[i])
            .collect();
        for layer in &self.layers {
            h = layer
                .weights
                .iter()
                .zip(&layer.bias)
                .map(|(w, b)| {
                    activate(layer.activation, b + w.iter().zip(&h).map(|(a, c)| a * c).sum::<f64>())
                })
                .collect();
        }
        self.target_transform.invert(h[0] * self.target_scaling.std[0] + self.target_scaling.mean[0])
    }

    /// Predicts every row of `records` (columns in the order of `inputs`).
    ///
    /// Rows go through the network in chunks of `CHUNK` (8) rows, unit-major: the inner loops run over the rows of
    /// a chunk, so the multiply-adds vectorize and the chunk's `exp` calls are independent and pipeline,
    /// instead of one row's dependent chain of layers at a time. A physical model's terms are added.
    pub fn predict(&self, records: ArrayView2<'_, f64>) -> Array1<f64> {
        match &self.physical {
            None => self.network(records),
            Some(p) => {
                // `check` proved that the terms' inputs are among `inputs`; a caller passing the wrong
                // number of columns gets NaN rather than a panic.
                let base = p
                    .predict(&self.inputs, records)
                    .unwrap_or_else(|_| Array1::from_elem(records.nrows(), f64::NAN));
                if self.layers.is_empty() {
                    base
                } else {
                    let mut out = self.network(records);
                    if let Some(g) = self.gate_weights(records) {
                        out *= &g;
                    }
                    out.zip_mut_with(&base, |n, b| *n = self.residual.apply(*b, *n));
                    out
                }
            }
        }
    }

    // The loops index several buffers by the same row or unit, which iterators would only obscure.
    #[allow(clippy::needless_range_loop)]
    fn network(&self, records: ArrayView2<'_, f64>) -> Array1<f64> {
        let n = records.nrows();
        let width_in = records.ncols();
        let mut out = Array1::zeros(n);
        if width_in > MAX_WIDTH || self.layers.iter().any(|l| l.bias.len() > MAX_WIDTH) {
            for (i, r) in records.rows().into_iter().enumerate() {
                out[i] = self.network_one(&r.to_vec());
            }
            return out;
        }
        let mut buf_a = [[0.0f64; CHUNK]; MAX_WIDTH];
        let mut buf_b = [[0.0f64; CHUNK]; MAX_WIDTH];
        let mean = &self.input_scaling.mean;
        // One division per input, not per input and row: standardizing by multiplication.
        let inv_std: Vec<f64> = self.input_scaling.std.iter().map(|s| 1.0 / s).collect();
        // Row-major contiguous input (the usual case) is read as one slice, without per-row views.
        let contiguous = records.as_slice();
        let (t_mean, t_std) = (self.target_scaling.mean[0], self.target_scaling.std[0]);
        let mut start = 0;
        while start < n {
            let m = CHUNK.min(n - start);
            let (mut cur, mut next) = (&mut buf_a, &mut buf_b);
            match contiguous {
                Some(all) => {
                    let rows = &all[start * width_in..(start + m) * width_in];
                    for (r, row) in rows.chunks_exact(width_in.max(1)).enumerate() {
                        for i in 0..width_in {
                            cur[i][r] = (row[i] - mean[i]) * inv_std[i];
                        }
                    }
                }
                None => {
                    for r in 0..m {
                        let row = records.row(start + r);
                        for i in 0..width_in {
                            cur[i][r] = (row[i] - mean[i]) * inv_std[i];
                        }
                    }
                }
            }
            let mut width = width_in;
            for layer in &self.layers {
                for (o, (w, b)) in layer.weights.iter().zip(&layer.bias).enumerate() {
                    let mut acc = [*b; CHUNK];
                    for (wi, xi) in w[..width].iter().zip(cur[..width].iter()) {
                        for r in 0..CHUNK {
                            acc[r] += wi * xi[r];
                        }
                    }
                    // The activation is chosen once per unit, so the row loop has no branch in it.
                    match layer.activation {
                        Activation::Identity => next[o] = acc,
                        Activation::Sigmoid => {
                            for r in 0..CHUNK {
                                next[o][r] = sigmoid(acc[r]);
                            }
                        }
                    }
                }
                width = layer.bias.len();
                std::mem::swap(&mut cur, &mut next);
            }
            match self.target_transform {
                TargetTransform::Identity => {
                    for r in 0..m {
                        out[start + r] = cur[0][r] * t_std + t_mean;
                    }
                }
                TargetTransform::Log => {
                    for r in 0..m {
                        out[start + r] = (cur[0][r] * t_std + t_mean).exp();
                    }
                }
            }
            start += m;
        }
        out
    }
}

/// Rows per chunk of the batched forward pass.
const CHUNK: usize = 8;
/// Widest layer the stack-buffer forward passes take (wider networks use the allocating path).
const MAX_WIDTH: usize = 64;

fn activate(a: Activation, x: f64) -> f64 {
    match a {
        Activation::Identity => x,
        Activation::Sigmoid => sigmoid(x),
    }
}

#[inline(always)]
fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn physical() -> ModelArtifact {
        let lv = |mhz: f64, v: f64| VoltageLevel { mhz, relative_v: v };
        ModelArtifact {
            format_version: FORMAT_VERSION,
            kind: ModelKind::Physical,
            inputs: vec!["U".into(), "D".into(), "core_mhz".into(), "mem_mhz".into()],
            target: "power_w".into(),
            feature_set: "t".into(),
            input_scaling: Scaling { mean: vec![0.0; 4], std: vec![1.0; 4] },
            target_scaling: Scaling { mean: vec![0.0], std: vec![1.0] },
            layers: Vec::new(),
            base_columns: Vec::new(),
            training: serde_json::Value::Null,
            arithmetic: None,
            residual: Residual::Absolute,
            target_transform: Default::default(),
            physical: Some(PhysicalTerms {
                core_clock: "core_mhz".into(),
                mem_clock: "mem_mhz".into(),
                ref_core_mhz: 1000.0,
                ref_mem_mhz: 3000.0,
                core_inputs: vec!["U".into()],
                core_betas: vec![50.0],
                mem_inputs: vec!["D".into()],
                mem_betas: vec![20.0],
                beta0_w: 30.0,
                beta_core_w: 10.0,
                beta1_w: 5.0,
                beta_mem_w: 4.0,
                core_levels: vec![lv(500.0, 0.8), lv(1000.0, 1.0), lv(1500.0, 1.2)],
                mem_levels: vec![lv(3000.0, 1.0)],
                roofline: None,
                residual_gate: None,
            }),
        }
    }

    #[test]
    fn roofline_rescaling_by_hand() {
        let r = Roofline { core_mhz: 1000.0, mem_mhz: 3000.0 };
        let at = |cu: [f64; 2], mu: f64, fc: f64, fm: f64| {
            let (mut c, mut m) = (cu, [mu]);
            r.rescale(&mut c, &mut m, fc, fm);
            (c, m[0])
        };
        // At the measurement clocks: the identity.
        assert_eq!(at([0.6, 0.2], 0.3, 1000.0, 3000.0), ([0.6, 0.2], 0.3));
        // Compute-bound (a = 0.6 > b = 0.3) at half the core clock: t/t0 = max(0.6·2, 0.3)/0.6 = 2, so
        // the core utilizations stay and DRAM halves (the same bytes over twice the time).
        assert_eq!(at([0.6, 0.2], 0.3, 500.0, 3000.0), ([0.6, 0.2], 0.15));
        // Memory-bound (b = 0.8 > a = 0.3) at half the core clock: t/t0 = max(0.6, 0.8)/0.8 = 1, so the
        // run time stays and every core utilization doubles; DRAM stays.
        let (c, m) = at([0.3, 0.1], 0.8, 500.0, 3000.0);
        assert!((c[0] - 0.6).abs() < 1e-12 && (c[1] - 0.2).abs() < 1e-12 && (m - 0.8).abs() < 1e-12);
        // The same kernel at a quarter of the memory clock: t/t0 = max(0.3, 3.2)/0.8 = 4, core
        // utilizations fall to a quarter, DRAM stays (events per memory cycle unchanged).
        let (c, m) = at([0.3, 0.1], 0.8, 1000.0, 750.0);
        assert!((c[0] - 0.075).abs() < 1e-12 && (c[1] - 0.025).abs() < 1e-12 && (m - 0.8).abs() < 1e-12);
        // Memory-bound at a third of the core clock: t/t0 = max(0.75, 0.9)/0.9 = 1, core ×3.
        let (c, m) = at([0.25, 0.1], 0.9, 1000.0 / 3.0, 3000.0);
        assert!((c[0] - 0.75).abs() < 1e-12 && (c[1] - 0.3).abs() < 1e-12 && (m - 0.9).abs() < 1e-12);
        // At a fifth the core side becomes the bound: t/t0 = 1.25/0.9, core × 5·0.9/1.25 = 3.6, DRAM
        // × 0.72: the busiest unit reaches the measured peak 0.9 and no further.
        let (c, m) = at([0.25, 0.1], 0.9, 200.0, 3000.0);
        assert!((c[0] - 0.9).abs() < 1e-12 && (c[1] - 0.36).abs() < 1e-12, "{c:?}");
        assert!((m - 0.648).abs() < 1e-12, "{m}");
        // No activity at all: nothing to rescale.
        assert_eq!(at([0.0, 0.0], 0.0, 500.0, 750.0), ([0.0, 0.0], 0.0));
    }

    #[test]
    fn roofline_terms_predict_with_rescaled_utilizations_and_round_trip() {
        let plain = physical();
        let mut a = plain.clone();
        a.physical.as_mut().unwrap().roofline = Some(Roofline { core_mhz: 1000.0, mem_mhz: 3000.0 });
        a.check().unwrap();
        // At the measurement clocks both predict the same.
        let x = [0.5, 0.25, 1000.0, 3000.0];
        assert_eq!(a.predict_one(&x), plain.predict_one(&x));
        // Memory-bound (U = 0.2 < D = 0.8) at 500 MHz core: U becomes 0.4, D stays (run time unchanged).
        // V = 0.8 at 500 MHz, f = 0.5: 30·0.8 + 0.64·0.5·(10 + 50·0.4) + 5 + (4 + 20·0.8) = 58.6.
        let x = [0.2, 0.8, 500.0, 3000.0];
        assert!((a.predict_one(&x) - 58.6).abs() < 1e-9, "{}", a.predict_one(&x));
        assert!((plain.predict_one(&x) - 55.4).abs() < 1e-9, "{}", plain.predict_one(&x));
        let batch = a.predict(ndarray::array![[0.2, 0.8, 500.0, 3000.0]].view());
        assert!((batch[0] - 58.6).abs() < 1e-9);
        let text = serde_json::to_string(&a).unwrap();
        assert!(text.contains(r#""roofline":{"core_mhz":1000.0,"mem_mhz":3000.0}"#), "{text}");
        assert_eq!(ModelArtifact::from_json_str(&text, "m").unwrap(), a);
        // An artifact written before the field existed has no such key and loads without it.
        let old = serde_json::to_string(&plain).unwrap();
        assert!(!old.contains("roofline"), "{old}");
        assert_eq!(ModelArtifact::from_json_str(&old, "old.json").unwrap().physical.unwrap().roofline, None);
        // Measurement clocks must be positive.
        let bad = text.replace(r#""core_mhz":1000.0"#, r#""core_mhz":0.0"#);
        let msg = ModelArtifact::from_json_str(&bad, "bad.json").unwrap_err().to_string();
        assert!(msg.contains("measurement clocks"), "{msg}");
    }

    #[test]
    fn physical_model_by_hand() {
        let a = physical();
        a.check().unwrap();
        // At the reference clocks: 30 + (10 + 50·0.5) + 5 + (4 + 20·0.25) = 79.
        assert!((a.predict_one(&[0.5, 0.25, 1000.0, 3000.0]) - 79.0).abs() < 1e-12);
        // Core 750 MHz: V = 0.9 (halfway between 0.8 and 1.0), f = 0.75:
        // 30·0.9 + 0.81·0.75·(10 + 50) + 5 + 4 = 72.45.
        assert!((a.predict_one(&[1.0, 0.0, 750.0, 3000.0]) - 72.45).abs() < 1e-9);
        // Beyond the last level the voltage extrapolates linearly: 1750 MHz → 1.3.
        assert!((voltage_at(&a.physical.as_ref().unwrap().core_levels, 1750.0) - 1.3).abs() < 1e-12);
        let x = ndarray::array![[0.5, 0.25, 1000.0, 3000.0], [1.0, 0.0, 750.0, 3000.0]];
        let batch = a.predict(x.view());
        assert!((batch[0] - 79.0).abs() < 1e-12 && (batch[1] - 72.45).abs() < 1e-9);
        let text = serde_json::to_string(&a).unwrap();
        assert_eq!(ModelArtifact::from_json_str(&text, "m").unwrap(), a);
    }

    /// The physical terms above plus a linear "network" 0.01·U (identity layer, unit scalings), added.
    fn physical_with_linear_net() -> ModelArtifact {
        ModelArtifact {
            kind: ModelKind::PhysicalBpann,
            layers: vec![Dense {
                weights: vec![vec![0.01, 0.0, 0.0, 0.0]],
                bias: vec![0.0],
                activation: Activation::Identity,
            }],
            ..physical()
        }
    }

    #[test]
    fn a_relative_residual_multiplies_and_an_absolute_one_adds() {
        let abs = physical_with_linear_net();
        let rel = ModelArtifact { residual: Residual::Relative, ..abs.clone() };
        let x = [0.5, 0.25, 1000.0, 3000.0];
        // Physical 79 W (physical_model_by_hand), network 0.005.
        assert!((abs.predict_one(&x) - 79.005).abs() < 1e-9);
        assert!((rel.predict_one(&x) - 79.0 * 1.005).abs() < 1e-9);
        let batch = rel.predict(ndarray::array![[0.5, 0.25, 1000.0, 3000.0]].view());
        assert!((batch[0] - 79.0 * 1.005).abs() < 1e-9);
        // Written only when relative; an artifact without the key (every older one) is absolute.
        let text = serde_json::to_string(&abs).unwrap();
        assert!(!text.contains("residual"), "{text}");
        assert_eq!(ModelArtifact::from_json_str(&text, "old.json").unwrap().residual, Residual::Absolute);
        let text = serde_json::to_string(&rel).unwrap();
        assert!(text.contains(r#""residual":"relative""#), "{text}");
        assert_eq!(ModelArtifact::from_json_str(&text, "m").unwrap(), rel);
        // A model without a residual network cannot carry one.
        let bad = ModelArtifact { residual: Residual::Relative, ..physical() };
        assert!(bad.check().unwrap_err().to_string().contains("no residual network"));
    }

    /// Three kernels of two rows each over the activity inputs U and D (and the clocks): k1 at (0, 0),
    /// k2 at (1, 0), k3 at (0, 2). U has mean 1/3 and SD √2/3, D mean 2/3 and SD 2√2/3, so the
    /// standardized signatures are k1 (−1/√2, −1/√2), k2 (√2, −1/√2), k3 (−1/√2, √2): k1 lies 3/√2 from
    /// both others, k2 and k3 lie 3 apart, so every nearest-neighbour distance is 3/√2 = τ.
    fn three_kernels() -> crate::Dataset {
        let kernels = [("k1", 0.0, 0.0), ("k2", 1.0, 0.0), ("k3", 0.0, 2.0)];
        let mut rows = Vec::new();
        let mut groups = Vec::new();
        for (k, u, d) in kernels {
            for core in [500.0, 1000.0] {
                rows.extend([u, d, core, 3000.0]);
                groups.push(k.to_string());
            }
        }
        crate::Dataset {
            records: ndarray::Array2::from_shape_vec((6, 4), rows).unwrap(),
            targets: ndarray::Array1::from_elem(6, 100.0),
            feature_names: ["U", "D", "core_mhz", "mem_mhz"].map(String::from).to_vec(),
            target_name: "power_w".into(),
            groups,
        }
    }

    fn ud() -> Vec<String> {
        vec!["U".into(), "D".into()]
    }

    #[test]
    fn the_gate_is_one_on_the_training_kernels_and_falls_with_the_distance() {
        let g = ResidualGate::from_training(&three_kernels(), &ud()).unwrap().unwrap();
        let r2 = std::f64::consts::SQRT_2;
        assert!((g.tau - 3.0 / r2).abs() < 1e-12, "{}", g.tau);
        assert!(
            (g.scaling.mean[0] - 1.0 / 3.0).abs() < 1e-12
                && (g.scaling.std[1] - 2.0 * r2 / 3.0).abs() < 1e-12
        );
        let want = [[-1.0 / r2, -1.0 / r2], [r2, -1.0 / r2], [-1.0 / r2, r2]];
        for (s, w) in g.signatures.iter().zip(want) {
            assert!((s[0] - w[0]).abs() < 1e-12 && (s[1] - w[1]).abs() < 1e-12, "{s:?} vs {w:?}");
        }
        // On every training kernel, and between k1 and k2 (within τ of both): fully trusted.
        for u in [[0.0, 0.0], [1.0, 0.0], [0.0, 2.0], [0.5, 0.0]] {
            assert_eq!(g.weight(&u), 1.0, "{u:?}");
        }
        // Beyond k2 along U: d = (U − 1)/(√2/3) standardized units from k2, g = (τ/d)².
        let at = |u: f64| g.weight(&[u, 0.0]);
        let sd = r2 / 3.0;
        assert!((at(1.0 + 2.0 * g.tau * sd) - 0.25).abs() < 1e-12, "{}", at(1.0 + 2.0 * g.tau * sd));
        assert!((at(1.0 + 4.0 * g.tau * sd) - 1.0 / 16.0).abs() < 1e-12);
        // It never rises as the row moves away, and stays within [0, 1].
        let mut last = 1.0;
        for i in 0..200 {
            let w = at(1.0 + 0.1 * i as f64);
            assert!((0.0..=1.0).contains(&w) && w <= last, "step {i}: {w} after {last}");
            last = w;
        }
        assert!(last < 0.01, "{last}");
        // An input constant on the training rows keeps the scale 1 (no division by zero).
        let mut ds = three_kernels();
        ds.records.column_mut(3).fill(3000.0);
        let c = ResidualGate::from_training(&ds, &["U".into(), "mem_mhz".into()]).unwrap().unwrap();
        assert_eq!(c.scaling.std[1], 1.0);
        // One training kernel has no spacing: no gate (the network is trusted as ungated).
        let one = ds.select_rows(&[0, 1]);
        assert_eq!(ResidualGate::from_training(&one, &ud()).unwrap(), None);
    }

    #[test]
    fn a_gated_residual_is_applied_by_predict_and_predict_one_and_old_artifacts_predict_as_before() {
        let plain = ModelArtifact { residual: Residual::Relative, ..physical_with_linear_net() };
        let gate = ResidualGate::from_training(&three_kernels(), &ud()).unwrap().unwrap();
        let mut gated = plain.clone();
        gated.physical.as_mut().unwrap().residual_gate = Some(gate.clone());
        gated.check().unwrap();
        // On a training kernel (k2: U = 1, D = 0) g = 1: the gated model is the plain one.
        let near = [1.0, 0.0, 1000.0, 3000.0];
        assert_eq!(gated.predict_one(&near), plain.predict_one(&near));
        // Far along U: g = ¼; physical 30 + (10 + 50·U) + 5 + 4, network 0.01·U.
        let u = 1.0 + 2.0 * gate.tau * std::f64::consts::SQRT_2 / 3.0;
        let far = [u, 0.0, 1000.0, 3000.0];
        let p = 49.0 + 50.0 * u;
        assert!((gated.predict_one(&far) - p * (1.0 + 0.25 * 0.01 * u)).abs() < 1e-9);
        assert!((plain.predict_one(&far) - p * (1.0 + 0.01 * u)).abs() < 1e-9);
        let x = ndarray::array![[1.0, 0.0, 1000.0, 3000.0], [u, 0.0, 1000.0, 3000.0]];
        let batch = gated.predict(x.view());
        assert_eq!(gated.gate_weights(x.view()).unwrap().to_vec(), vec![1.0, gate.weight(&[u, 0.0])]);
        assert!((batch[0] - gated.predict_one(&near)).abs() < 1e-12);
        assert!((batch[1] - gated.predict_one(&far)).abs() < 1e-12);
        // The absolute residual is gated the same way: P + g·network.
        let abs = ModelArtifact { residual: Residual::Absolute, ..gated.clone() };
        assert!((abs.predict_one(&far) - (p + 0.25 * 0.01 * u)).abs() < 1e-9);
        // Round trip; an artifact written before the gate existed has no such key and predicts ungated.
        let text = serde_json::to_string(&gated).unwrap();
        assert!(text.contains(r#""residual_gate":{"inputs":["U","D"]"#), "{text}");
        assert_eq!(ModelArtifact::from_json_str(&text, "m").unwrap(), gated);
        let old = serde_json::to_string(&plain).unwrap();
        assert!(!old.contains("residual_gate"), "{old}");
        let old = ModelArtifact::from_json_str(&old, "old.json").unwrap();
        assert!(old.gate_weights(x.view()).is_none());
        assert_eq!(old.predict(x.view()), plain.predict(x.view()));
        assert_eq!(old.predict_one(&far), plain.predict_one(&far));
        // Refused: a gate on a model without a network, on an input the model lacks, or with a bad τ.
        let mut phys = physical();
        phys.physical.as_mut().unwrap().residual_gate = Some(gate.clone());
        assert!(phys.check().unwrap_err().to_string().contains("no residual network to gate"));
        let bad = text.replace(r#""inputs":["U","D"]"#, r#""inputs":["U","X"]"#);
        let msg = ModelArtifact::from_json_str(&bad, "bad.json").unwrap_err().to_string();
        assert!(msg.contains("input 'X'"), "{msg}");
        let mut neg = gated.clone();
        neg.physical.as_mut().unwrap().residual_gate.as_mut().unwrap().tau = -1.0;
        assert!(neg.check().unwrap_err().to_string().contains("residual gate"));
    }

    #[test]
    fn physical_artifact_naming_a_missing_input_is_rejected() {
        let mut a = physical();
        a.physical.as_mut().unwrap().core_inputs[0] = "nope".into();
        assert!(a.check().unwrap_err().to_string().contains("'nope'"));
        let mut b = physical();
        b.physical = None;
        assert!(b.check().is_err());
    }

    fn tiny() -> ModelArtifact {
        ModelArtifact {
            format_version: FORMAT_VERSION,
            kind: ModelKind::Bpann,
            inputs: vec!["a".into(), "b".into()],
            target: "power_w".into(),
            feature_set: "t".into(),
            input_scaling: Scaling { mean: vec![1.0, 0.0], std: vec![2.0, 1.0] },
            target_scaling: Scaling { mean: vec![100.0], std: vec![10.0] },
            layers: vec![
                Dense { weights: vec![vec![1.0, -1.0]], bias: vec![0.0], activation: Activation::Sigmoid },
                Dense { weights: vec![vec![2.0]], bias: vec![-1.0], activation: Activation::Identity },
            ],
            base_columns: vec!["a".into(), "b".into()],
            training: serde_json::Value::Null,
            arithmetic: None,
            residual: Residual::Absolute,
            target_transform: Default::default(),
            physical: None,
        }
    }

    /// A log-target network predicts exp of its un-standardized output, on every path; the field is
    /// written only when `log`, an artifact without it (every older one) is the identity, and only a
    /// standalone network may carry it.
    #[test]
    fn a_log_target_predicts_exp_of_the_network_and_is_optional() {
        let watts = tiny();
        let log = ModelArtifact {
            target_scaling: Scaling { mean: vec![4.5], std: vec![0.3] },
            target_transform: TargetTransform::Log,
            ..watts.clone()
        };
        let x = ndarray::Array2::from_shape_fn((19, 2), |(i, j)| {
            (i as f64 * 0.41 - 4.0) * (1.0 - 1.7 * j as f64)
        });
        let batch = log.predict(x.view());
        for (r, row) in x.rows().into_iter().enumerate() {
            // By hand: z = ((a − 1)/2, b), h = σ(z0 − z1), output 2h − 1, then 4.5 + 0.3·output.
            let (z0, z1) = ((row[0] - 1.0) / 2.0, row[1]);
            let h = 1.0 / (1.0 + (-(z0 - z1)).exp());
            let want = (4.5 + 0.3 * (2.0 * h - 1.0)).exp();
            for got in [batch[r], log.predict_one(&row.to_vec()), log.predict_one_alloc(&row.to_vec())] {
                assert!((got - want).abs() < 1e-9 * want, "row {r}: {got} vs {want}");
            }
        }
        let text = serde_json::to_string(&watts).unwrap();
        assert!(!text.contains("target_transform"), "{text}");
        assert_eq!(
            ModelArtifact::from_json_str(&text, "old.json").unwrap().target_transform,
            TargetTransform::Identity
        );
        let text = serde_json::to_string(&log).unwrap();
        assert!(text.contains(r#""target_transform":"log""#), "{text}");
        assert_eq!(ModelArtifact::from_json_str(&text, "m").unwrap(), log);
        let bad = ModelArtifact { target_transform: TargetTransform::Log, ..physical_with_linear_net() };
        let e = bad.check().unwrap_err().to_string();
        assert!(e.contains("cannot have a log target"), "{e}");
    }

    #[test]
    fn forward_pass_by_hand() {
        // x = (3, 1) → z = (1, 1) → σ(1 − 1) = 0.5 → 2·0.5 − 1 = 0 → 0·10 + 100 = 100.
        assert!((tiny().predict_one(&[3.0, 1.0]) - 100.0).abs() < 1e-12);
        // x = (1, 0) → z = (0, 0) → σ(0) = 0.5 → same 100; x = (1, -2) → σ(2) = 0.8808 → 2σ−1 = 0.7616.
        let y = tiny().predict_one(&[1.0, -2.0]);
        let s = 1.0 / (1.0 + (-2.0f64).exp());
        assert!((y - (100.0 + 10.0 * (2.0 * s - 1.0))).abs() < 1e-12);
    }

    #[test]
    fn json_round_trip_and_shape_check() {
        let a = tiny();
        let text = serde_json::to_string(&a).unwrap();
        assert_eq!(ModelArtifact::from_json_str(&text, "m").unwrap(), a);
        let mut bad = a.clone();
        bad.layers[1].weights[0].push(1.0);
        let text = serde_json::to_string(&bad).unwrap();
        assert!(ModelArtifact::from_json_str(&text, "m.json").unwrap_err().to_string().contains("layer 1"));
    }

    /// The arithmetic record is optional both ways: an artifact written before it existed (no such key)
    /// loads with none, one without it is written without the key (files of models without a network
    /// are unchanged), and one with it round-trips.
    #[test]
    fn the_arithmetic_record_is_optional_and_round_trips() {
        let a = tiny();
        let text = serde_json::to_string(&a).unwrap();
        assert!(!text.contains("arithmetic"), "{text}");
        let mut old: serde_json::Value = serde_json::from_str(&text).unwrap();
        old.as_object_mut().unwrap().remove("arithmetic");
        assert_eq!(ModelArtifact::from_json_str(&old.to_string(), "old.json").unwrap().arithmetic, None);
        let b = ModelArtifact {
            arithmetic: Some(Arithmetic { instructions: "avx2+fma".into(), precision: "f32".into() }),
            ..a
        };
        let text = serde_json::to_string(&b).unwrap();
        assert!(text.contains(r#""arithmetic":{"instructions":"avx2+fma","precision":"f32"}"#), "{text}");
        assert_eq!(ModelArtifact::from_json_str(&text, "m").unwrap(), b);
    }

    #[test]
    fn batched_predict_matches_row_by_row() {
        let a = tiny();
        // 19 rows: two full chunks of 8 and a partial one, so every path of the chunked loop runs.
        let x = ndarray::Array2::from_shape_fn((19, 2), |(i, j)| {
            (i as f64 * 0.37 - 3.0) * if j == 0 { 1.0 } else { -0.6 }
        });
        let batch = a.predict(x.view());
        // The same rows in column-major order take the strided (non-slice) input path.
        let mut fortran = ndarray::Array2::zeros(ndarray::ShapeBuilder::f((19, 2)));
        fortran.assign(&x);
        assert!(fortran.as_slice().is_none());
        let strided = a.predict(fortran.view());
        for (i, r) in x.rows().into_iter().enumerate() {
            let one = a.predict_one(&r.to_vec());
            assert!((batch[i] - one).abs() < 1e-12 && (strided[i] - one).abs() < 1e-12);
        }
    }

    #[test]
    fn missing_inputs_are_named() {
        let msg = tiny().check_inputs(&["a".into()]).unwrap_err().to_string();
        assert!(msg.contains("input(s) b"), "{msg}");
    }
}
